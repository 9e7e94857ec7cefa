//! The reference peers' drivers checked against each other, independent of
//! our speaker: FRR's bgpd and GoBGP in two namespaces peer over IPv4 and
//! IPv6, exchange routes with attributes, withdraw them, and FRR's
//! administrative shutdown takes the session down on GoBGP's side. If this
//! fails, the interop tests' harness is broken, not the speaker.

use std::time::Duration;

use fabric_tests::frr::{Afi, Frr, FrrConfig, FrrNeighbor, frr_available};
use fabric_tests::gobgp::{Gobgp, GobgpConfig, GobgpNeighbor, gobgp_available, path_attr};
use fabric_tests::{Netns, veth};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn bgp_reference_peers_talk() {
    if !frr_available("bgp_reference_peers_talk") || !gobgp_available("bgp_reference_peers_talk") {
        return;
    }
    let frr_ns = Netns::new("brf");
    let gobgp_ns = Netns::new("brg");
    veth(&frr_ns, "eth1", &gobgp_ns, "eth1");
    frr_ns.ip(&["addr", "add", "10.9.0.1/30", "dev", "eth1"]);
    frr_ns.ip(&["addr", "add", "fd00:9::1/64", "dev", "eth1", "nodad"]);
    gobgp_ns.ip(&["addr", "add", "10.9.0.2/30", "dev", "eth1"]);
    gobgp_ns.ip(&["addr", "add", "fd00:9::2/64", "dev", "eth1", "nodad"]);

    let mut v4 = FrrNeighbor::new("10.9.0.2", 65002);
    v4.families = vec![Afi::Ipv4];
    let mut v6 = FrrNeighbor::new("fd00:9::2", 65002);
    v6.families = vec![Afi::Ipv6];
    let config = FrrConfig::new(65001, "10.0.0.1")
        .neighbor(v4)
        .neighbor(v6)
        .network_with_route_map("10.1.0.0/24", "TAG")
        .network_with_route_map("fd00:1::/48", "TAG")
        .trailer("route-map TAG permit 10")
        .trailer(" set metric 10")
        .trailer(" set community 65001:100");
    let frr = Frr::start(&frr_ns, &config.render());

    let mut g4 = GobgpNeighbor::new("10.9.0.1", 65001);
    g4.families = vec![Afi::Ipv4];
    let mut g6 = GobgpNeighbor::new("fd00:9::1", 65001);
    g6.families = vec![Afi::Ipv6];
    let gobgp = Gobgp::start(&gobgp_ns, &GobgpConfig::new(65002, "10.0.0.2").neighbor(g4).neighbor(g6));

    frr.wait_established("10.9.0.2", WAIT);
    frr.wait_established("fd00:9::2", WAIT);
    gobgp.wait_established("10.9.0.1", WAIT);
    gobgp.wait_established("fd00:9::1", WAIT);

    // FRR -> GoBGP, with FRR's attributes as GoBGP decodes them.
    let paths = gobgp.wait_route("10.1.0.0/24", WAIT, |_| true);
    let path = &paths[0];
    assert_eq!(path_attr(path, 3).unwrap()["nexthop"], "10.9.0.1", "{path}");
    assert_eq!(path_attr(path, 4).unwrap()["metric"], 10, "{path}");
    assert_eq!(path_attr(path, 2).unwrap()["as_paths"][0]["asns"], serde_json::json!([65001]), "{path}");
    // 65001:100 as GoBGP's u32.
    assert_eq!(path_attr(path, 8).unwrap()["communities"], serde_json::json!([65001u64 << 16 | 100]), "{path}");
    let paths = gobgp.wait_route("fd00:1::/48", WAIT, |_| true);
    let mp_reach = path_attr(&paths[0], 14).expect("MP_REACH_NLRI");
    assert_eq!(mp_reach["nexthop"], "fd00:9::1", "{mp_reach}");

    // GoBGP -> FRR.
    gobgp.add_route("10.2.0.0/24", &["med", "20", "community", "65002:7"]);
    gobgp.add_route("fd00:2::/48", &[]);
    let route = frr.wait_route("10.2.0.0/24", WAIT, |_| true);
    let path = &route["paths"][0];
    assert_eq!(path["aspath"]["string"], "65002", "{path}");
    assert_eq!(path["metric"], 20, "{path}");
    assert_eq!(path["community"]["string"], "65002:7", "{path}");
    assert_eq!(path["nexthops"][0]["ip"], "10.9.0.2", "{path}");
    let route = frr.wait_route("fd00:2::/48", WAIT, |_| true);
    let path = &route["paths"][0];
    assert_eq!(path["nexthops"][0]["ip"], "fd00:9::2", "{path}");
    assert_eq!(frr.rib_count(Afi::Ipv4), 2);

    // Withdraw.
    gobgp.del_route("10.2.0.0/24");
    frr.wait_no_route("10.2.0.0/24", WAIT);
    assert!(frr.route("fd00:2::/48").is_some(), "the IPv6 route stays");

    // A NOTIFICATION (Cease, administrative shutdown) from FRR ends the
    // session on GoBGP's side and the routes learned over it go.
    frr.configure(&["router bgp 65001", "neighbor 10.9.0.2 shutdown"]);
    let deadline = std::time::Instant::now() + WAIT;
    while gobgp.neighbor_state("10.9.0.1").as_deref() == Some("established") {
        assert!(std::time::Instant::now() < deadline, "GoBGP still established");
        std::thread::sleep(Duration::from_millis(200));
    }
    gobgp.wait_no_route("10.1.0.0/24", WAIT);
    assert!(
        gobgp.log().contains("Administrative Shutdown") || gobgp.log().to_lowercase().contains("notification"),
        "GoBGP logged the NOTIFICATION"
    );
    // And back.
    frr.configure(&["router bgp 65001", "no neighbor 10.9.0.2 shutdown"]);
    gobgp.wait_established("10.9.0.1", WAIT);
    gobgp.wait_route("10.1.0.0/24", WAIT, |_| true);
}
