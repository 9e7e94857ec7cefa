//! iBGP between our speaker (`bgp-speaker`, passive: GoBGP opens the
//! session) and GoBGP: LOCAL_PREF travels both ways, AS_PATH stays empty,
//! NEXT_HOP is kept from GoBGP's routes (RFC 4271 §5.1.3: not changed over
//! iBGP) and installed, and ours reach GoBGP's global RIB.

use std::time::Duration;

use fabric_tests::bgp_speaker::Speaker;
use fabric_tests::frr::Afi;
use fabric_tests::gobgp::{Gobgp, GobgpConfig, GobgpNeighbor, gobgp_available, path_attr};
use fabric_tests::{Netns, veth};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn bgp_gobgp_ibgp_gobgp_connects() {
    if !gobgp_available("bgp_gobgp_ibgp_gobgp_connects") {
        return;
    }
    let gobgp_ns = Netns::new("big");
    let ours_ns = Netns::new("bio");
    veth(&gobgp_ns, "eth1", &ours_ns, "eth1");
    gobgp_ns.ip(&["addr", "add", "10.0.18.1/30", "dev", "eth1"]);
    ours_ns.ip(&["addr", "add", "10.0.18.2/30", "dev", "eth1"]);

    let mut g = GobgpNeighbor::new("10.0.18.2", 65000);
    g.families = vec![Afi::Ipv4];
    let gobgp = Gobgp::start(&gobgp_ns, &GobgpConfig::new(65000, "10.0.0.3").neighbor(g));
    let ours = Speaker::start(
        &ours_ns,
        r#"
asn: 65000
router_id: 10.0.0.1
timers: { hold_time: 9, connect_retry: 1 }
networks: [10.1.0.0/24]
neighbors:
  - { address: 10.0.18.1, remote_as: 65000, families: [ipv4-unicast], passive: true, export_policy: lp }
policies:
  lp:
    - action: permit
      set: { local_pref: 150 }
"#,
    );
    ours.wait_established("10.0.18.1", WAIT);
    gobgp.wait_established("10.0.18.2", WAIT);
    let n = ours.neighbor("10.0.18.1").unwrap();
    assert_eq!(n["negotiated"]["ebgp"], false, "{n:#}");

    // A third-party next hop on the link: kept over iBGP.
    gobgp.add_route("10.3.0.0/24", &["local-pref", "300", "nexthop", "10.0.18.1", "community", "65000:3"]);
    gobgp.add_route("10.3.1.0/24", &["nexthop", "10.0.18.1"]);
    ours.wait("GoBGP's routes", WAIT, |_| ours.fib("10.3.0.0/24").is_some() && ours.fib("10.3.1.0/24").is_some());
    let p = ours.route("10.3.0.0/24").unwrap()["paths"][0].clone();
    assert_eq!(p["local_pref"], 300, "{p:#}");
    assert_eq!(p["as_path"], "", "{p:#}");
    assert_eq!(p["next_hop"], "10.0.18.1", "{p:#}");
    assert_eq!(p["communities"], serde_json::json!(["65000:3"]), "{p:#}");
    assert_eq!(ours.fib("10.3.0.0/24"), Some(vec!["10.0.18.1".to_string()]));
    let p = ours.route("10.3.1.0/24").unwrap()["paths"][0].clone();
    assert_eq!(p["local_pref"], 100, "GoBGP's default LOCAL_PREF: {p:#}");

    let paths = gobgp.wait_route("10.1.0.0/24", WAIT, |_| true);
    let path = &paths[0];
    assert_eq!(path_attr(path, 5).expect("LOCAL_PREF over iBGP")["value"], 150, "{path}");
    let as_path = path_attr(path, 2).expect("AS_PATH");
    assert!(
        as_path["as_paths"].as_array().is_none_or(|segments| segments.is_empty()),
        "empty AS_PATH over iBGP: {path}"
    );
    assert_eq!(path_attr(path, 3).unwrap()["nexthop"], "10.0.18.2", "{path}");

    // Withdraw from GoBGP.
    gobgp.del_route("10.3.0.0/24");
    ours.wait("withdraw", WAIT, |_| ours.route("10.3.0.0/24").is_none() && ours.fib("10.3.0.0/24").is_none());
    // iBGP routes are not reflected back to the iBGP peer they came from.
    assert_eq!(gobgp.rib(Afi::Ipv4)["10.3.1.0/24"].as_array().map(Vec::len), Some(1));
}
