//! Interop with GoBGP: routes injected with the `gobgp` CLI reach our
//! speaker (`bgp-speaker`) and are installed; ours appear in `gobgp global
//! rib` with the attributes we sent; withdraws go both ways. Two
//! namespaces, a veth pair, real TCP on port 179.

use std::time::Duration;

use fabric_tests::bgp_speaker::Speaker;
use fabric_tests::frr::Afi;
use fabric_tests::gobgp::{Gobgp, GobgpConfig, GobgpNeighbor, gobgp_available, path_attr};
use fabric_tests::{Netns, veth};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn bgp_gobgp_routes_both_ways() {
    if !gobgp_available("bgp_gobgp_routes_both_ways") {
        return;
    }
    let gobgp_ns = Netns::new("bgg");
    let ours_ns = Netns::new("bgo");
    veth(&gobgp_ns, "eth1", &ours_ns, "eth1");
    gobgp_ns.ip(&["addr", "add", "10.12.0.1/30", "dev", "eth1"]);
    gobgp_ns.ip(&["addr", "add", "fd00:12::1/64", "dev", "eth1", "nodad"]);
    ours_ns.ip(&["addr", "add", "10.12.0.2/30", "dev", "eth1"]);
    ours_ns.ip(&["addr", "add", "fd00:12::2/64", "dev", "eth1", "nodad"]);

    let mut g4 = GobgpNeighbor::new("10.12.0.2", 65002);
    g4.families = vec![Afi::Ipv4];
    let mut g6 = GobgpNeighbor::new("fd00:12::2", 65002);
    g6.families = vec![Afi::Ipv6];
    let gobgp = Gobgp::start(&gobgp_ns, &GobgpConfig::new(65003, "10.12.0.1").neighbor(g4).neighbor(g6));
    let ours = Speaker::start(
        &ours_ns,
        r#"
asn: 65002
router_id: 10.12.0.2
timers: { hold_time: 9, connect_retry: 1 }
networks: [10.22.0.0/24, "fd00:22::/48"]
neighbors:
  - { address: 10.12.0.1, remote_as: 65003, families: [ipv4-unicast] }
  - { address: "fd00:12::1", remote_as: 65003, families: [ipv6-unicast] }
"#,
    );
    gobgp.wait_established("10.12.0.2", WAIT);
    gobgp.wait_established("fd00:12::2", WAIT);
    ours.wait_established("10.12.0.1", WAIT);
    ours.wait_established("fd00:12::1", WAIT);

    // Injected with the CLI, received and installed by us.
    gobgp.add_route("10.3.0.0/24", &["med", "20", "community", "65003:7"]);
    gobgp.add_route("10.3.1.0/24", &["aspath", "65010,65011"]);
    gobgp.add_route("fd00:3::/48", &[]);
    ours.wait("GoBGP's routes installed", WAIT, |_| {
        ["10.3.0.0/24", "10.3.1.0/24", "fd00:3::/48"].iter().all(|p| ours.fib(p).is_some())
    });
    let p = ours.route("10.3.0.0/24").unwrap()["paths"][0].clone();
    assert_eq!((p["as_path"].as_str(), p["med"].as_u64()), (Some("65003"), Some(20)), "{p}");
    assert_eq!(p["communities"], serde_json::json!(["65003:7"]), "{p}");
    assert_eq!(ours.fib("10.3.0.0/24"), Some(vec!["10.12.0.1".to_string()]));
    assert_eq!(ours.route("10.3.1.0/24").unwrap()["paths"][0]["as_path"], "65003 65010 65011");
    assert_eq!(ours.fib("fd00:3::/48"), Some(vec!["fd00:12::1".to_string()]));

    // Ours in `gobgp global rib`.
    let paths = gobgp.wait_route("10.22.0.0/24", WAIT, |_| true);
    let path = &paths[0];
    assert_eq!(path_attr(path, 3).unwrap()["nexthop"], "10.12.0.2", "{path}");
    assert_eq!(path_attr(path, 2).unwrap()["as_paths"][0]["asns"], serde_json::json!([65002]), "{path}");
    assert_eq!(path_attr(path, 1).unwrap()["value"], 0, "ORIGIN IGP: {path}");
    let paths = gobgp.wait_route("fd00:22::/48", WAIT, |_| true);
    assert_eq!(path_attr(&paths[0], 14).expect("MP_REACH_NLRI")["nexthop"], "fd00:12::2", "{}", paths[0]);
    // GoBGP's own routes are not sent back to it.
    let rib = gobgp.rib(Afi::Ipv4);
    assert_eq!(rib["10.3.0.0/24"].as_array().map(Vec::len), Some(1), "{rib:?}");

    // Withdraws both ways.
    gobgp.del_route("10.3.0.0/24");
    ours.wait("withdraw of 10.3.0.0/24", WAIT, |_| {
        ours.fib("10.3.0.0/24").is_none() && ours.route("10.3.0.0/24").is_none()
    });
    assert!(ours.fib("10.3.1.0/24").is_some());
    ours.control(&["del fd00:22::/48"]);
    gobgp.wait_no_route("fd00:22::/48", WAIT);
    assert!(gobgp.route("10.22.0.0/24").is_some());
}
