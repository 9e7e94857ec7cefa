//! Our speaker as a transit between the two reference implementations:
//! GoBGP (AS 65003) -- ours (AS 65001) -- FRR (AS 65002), eBGP both sides,
//! in three namespaces. A 10,000-prefix table injected into GoBGP from an
//! MRT file, plus a few CLI routes with MED, LOCAL_PREF and communities,
//! reach FRR through us with the attributes RFC 4271 says an eBGP speaker
//! passes on: our AS prepended, NEXT_HOP set to ourselves, communities
//! kept (transitive), MED not propagated to a third AS (§5.1.4), no
//! LOCAL_PREF (§5.1.5), optional transitive attributes (large and extended
//! communities, AGGREGATOR) and AS_SETs intact. Withdraws travel the same
//! way, and FRR's routes reach GoBGP.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use fabric_tests::bgp_speaker::Speaker;
use fabric_tests::frr::{Afi, Frr, FrrConfig, FrrNeighbor, frr_available};
use fabric_tests::gobgp::{Gobgp, GobgpConfig, GobgpNeighbor, MrtTable, gobgp_available, path_attr};
use fabric_tests::{Netns, TempDir, veth};

const WAIT: Duration = Duration::from_secs(60);
const TABLE: u32 = 10_000;

#[test]
fn gobgp_to_frr_through_ours() {
    if !frr_available("bgp_transit") || !gobgp_available("bgp_transit") {
        return;
    }
    let gobgp_ns = Netns::new("btg");
    let ours_ns = Netns::new("bto");
    let frr_ns = Netns::new("btf");
    veth(&gobgp_ns, "eth1", &ours_ns, "eth1");
    veth(&ours_ns, "eth2", &frr_ns, "eth1");
    gobgp_ns.ip(&["addr", "add", "10.0.16.1/30", "dev", "eth1"]);
    ours_ns.ip(&["addr", "add", "10.0.16.2/30", "dev", "eth1"]);
    ours_ns.ip(&["addr", "add", "10.0.17.1/30", "dev", "eth2"]);
    frr_ns.ip(&["addr", "add", "10.0.17.2/30", "dev", "eth1"]);

    let mut g = GobgpNeighbor::new("10.0.16.2", 65001);
    g.families = vec![Afi::Ipv4];
    let mut gobgp_config = GobgpConfig::new(65003, "10.0.0.3").neighbor(g);
    gobgp_config.log_level = "info";
    let gobgp = Gobgp::start(&gobgp_ns, &gobgp_config);
    let mut f = FrrNeighbor::new("10.0.17.1", 65001);
    f.families = vec![Afi::Ipv4];
    let frr = Frr::start(&frr_ns, &FrrConfig::new(65002, "10.0.0.2").neighbor(f).network("10.2.0.0/24").render());
    let ours = Speaker::start(
        &ours_ns,
        r#"
asn: 65001
router_id: 10.0.0.1
timers: { hold_time: 9, connect_retry: 1 }
neighbors:
  - { address: 10.0.16.1, remote_as: 65003, families: [ipv4-unicast] }
  - { address: 10.0.17.2, remote_as: 65002, families: [ipv4-unicast] }
"#,
    );
    ours.wait_established("10.0.16.1", WAIT);
    ours.wait_established("10.0.17.2", WAIT);
    frr.wait_established("10.0.17.1", WAIT);

    // A few routes with attributes, from the CLI.
    gobgp.add_route("10.3.0.0/24", &["med", "20", "local-pref", "300", "community", "65003:7"]);
    gobgp.add_route("10.3.1.0/24", &["aspath", "65010,65011"]);
    let route = frr.wait_route("10.3.0.0/24", WAIT, |_| true);
    let path = &route["paths"][0];
    assert_eq!(path["aspath"]["string"], "65001 65003", "our AS prepended: {path:#}");
    assert_eq!(path["nexthops"][0]["ip"], "10.0.17.1", "next hop self over eBGP: {path:#}");
    assert_eq!(path["community"]["string"], "65003:7", "communities are transitive: {path:#}");
    assert!(path.get("metric").is_none() || path["metric"] == 0, "MED not passed to a third AS: {path:#}");
    assert!(path.get("locPrf").is_none(), "no LOCAL_PREF over eBGP: {path:#}");
    let route = frr.wait_route("10.3.1.0/24", WAIT, |_| true);
    assert_eq!(route["paths"][0]["aspath"]["string"], "65001 65003 65010 65011", "{route:#}");

    // Optional transitive attributes pass through: LARGE_COMMUNITIES,
    // EXTENDED_COMMUNITIES (route target), AGGREGATOR, and an AS_SET.
    gobgp.add_route(
        "10.3.2.0/24",
        &[
            "aspath",
            "65010 {65020,65021}",
            "large-community",
            "65003:1:2",
            "rt",
            "65003:100",
            "aggregator",
            "65010:10.0.0.10",
        ],
    );
    let route = frr.wait_route("10.3.2.0/24", WAIT, |_| true);
    let path = &route["paths"][0];
    assert_eq!(path["aspath"]["string"], "65001 65003 65010 {65020,65021}", "{path:#}");
    assert_eq!(path["largeCommunity"]["string"], "65003:1:2", "{path:#}");
    assert_eq!(path["extendedCommunity"]["string"], "RT:65003:100", "{path:#}");
    assert_eq!(path["aggregatorAs"], 65010, "{path:#}");
    assert_eq!(path["aggregatorId"], "10.0.0.10", "{path:#}");

    // The table.
    let dir = TempDir::new("transit");
    let mrt = dir.path().join("table.mrt");
    let table = MrtTable { count: TABLE, attribute_sets: 100, origin_as: 65003, nexthop: Ipv4Addr::new(10, 0, 16, 1) };
    table.write(&mrt, 2_000).expect("write MRT");
    gobgp.mrt_inject(&mrt, None);
    let deadline = Instant::now() + WAIT;
    let expected = TABLE as u64 + 3;
    loop {
        let at_frr = frr.prefixes_received(Afi::Ipv4, "10.0.17.1");
        if at_frr >= expected {
            assert_eq!(at_frr, expected, "nothing extra");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "FRR has {at_frr} of {expected} prefixes through us (GoBGP holds {})",
            gobgp.rib_count(Afi::Ipv4)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    for i in [0, 4_321, TABLE - 1] {
        let prefix = MrtTable::prefix_str(i);
        let route = frr.route(&prefix).unwrap_or_else(|| panic!("{prefix} at FRR"));
        assert_eq!(
            route["paths"][0]["aspath"]["string"],
            format!("65001 65003 65200 {}", table.path_as(i)),
            "{route:#}"
        );
    }
    // Everything installed, FRR's 10.2.0.0/24 too (the status lists routes
    // only for small tables, so count).
    ours.wait("every route installed", WAIT, |s| s["fib_routes"].as_u64() == Some(expected + 1));

    // Withdraws through us.
    gobgp.del_route("10.3.0.0/24");
    frr.wait_no_route("10.3.0.0/24", WAIT);
    assert!(frr.route("10.3.1.0/24").is_some());

    // FRR's route reaches GoBGP through us, with both ASes.
    let paths = gobgp.wait_route("10.2.0.0/24", WAIT, |_| true);
    assert_eq!(
        path_attr(&paths[0], 2).unwrap()["as_paths"][0]["asns"],
        serde_json::json!([65001, 65002]),
        "{}",
        paths[0]
    );
    assert_eq!(path_attr(&paths[0], 3).unwrap()["nexthop"], "10.0.16.2", "{}", paths[0]);
    // GoBGP's own routes are not reflected back to it.
    assert_eq!(gobgp.rib(Afi::Ipv4)["10.3.1.0/24"].as_array().map(Vec::len), Some(1));
}
