//! Interop with FRR's bgpd: our speaker (`bgp-speaker`) and bgpd in two
//! namespaces over a veth pair, real TCP on port 179. eBGP and iBGP, we
//! connect and FRR connects, IPv4 and IPv6 routes both ways with their
//! attributes (checked on FRR's side with `vtysh ... json`), withdraws, a
//! NOTIFICATION from FRR and a hold-timer expiry.

use std::time::Duration;

use fabric_tests::bgp_speaker::Speaker;
use fabric_tests::frr::Afi;
use fabric_tests::frr::{Frr, FrrConfig, FrrNeighbor, frr_available};
use fabric_tests::{Netns, veth};

const WAIT: Duration = Duration::from_secs(30);

/// Two namespaces joined by eth1: FRR at .1, ours at .2.
fn pair(tag: &str) -> (Netns, Netns) {
    let frr_ns = Netns::new(&format!("{tag}f"));
    let ours_ns = Netns::new(&format!("{tag}o"));
    veth(&frr_ns, "eth1", &ours_ns, "eth1");
    frr_ns.ip(&["addr", "add", "10.11.0.1/30", "dev", "eth1"]);
    frr_ns.ip(&["addr", "add", "fd00:11::1/64", "dev", "eth1", "nodad"]);
    ours_ns.ip(&["addr", "add", "10.11.0.2/30", "dev", "eth1"]);
    ours_ns.ip(&["addr", "add", "fd00:11::2/64", "dev", "eth1", "nodad"]);
    (frr_ns, ours_ns)
}

fn frr_neighbors(remote_as: u32, passive: bool) -> (FrrNeighbor, FrrNeighbor) {
    let mut v4 = FrrNeighbor::new("10.11.0.2", remote_as);
    v4.families = vec![Afi::Ipv4];
    v4.passive = passive;
    let mut v6 = FrrNeighbor::new("fd00:11::2", remote_as);
    v6.families = vec![Afi::Ipv6];
    v6.passive = passive;
    (v4, v6)
}

fn ours_yaml(asn: u32, remote_as: u32, passive: bool) -> String {
    format!(
        r#"
asn: {asn}
router_id: 10.11.0.2
timers: {{ hold_time: 9, connect_retry: 1 }}
networks: [10.22.0.0/24, "fd00:22::/48"]
neighbors:
  - {{ address: 10.11.0.1, remote_as: {remote_as}, families: [ipv4-unicast], passive: {passive} }}
  - {{ address: "fd00:11::1", remote_as: {remote_as}, families: [ipv6-unicast], passive: {passive} }}
"#
    )
}

fn path(route: &serde_json::Value) -> &serde_json::Value {
    &route["paths"][0]
}

#[test]
fn bgp_frr_ebgp_we_connect_routes_both_ways_and_withdraws() {
    if !frr_available("bgp_frr_ebgp_we_connect_routes_both_ways_and_withdraws") {
        return;
    }
    let (frr_ns, ours_ns) = pair("bfe");
    // FRR passive: the sessions are ours to open.
    let (v4, v6) = frr_neighbors(65002, true);
    let config = FrrConfig::new(65001, "10.11.0.1")
        .neighbor(v4)
        .neighbor(v6)
        .network_with_route_map("10.1.0.0/24", "TAG")
        .network("fd00:1::/48")
        .trailer("route-map TAG permit 10")
        .trailer(" set metric 10")
        .trailer(" set community 65001:100");
    let frr = Frr::start(&frr_ns, &config.render());
    let ours = Speaker::start(&ours_ns, &ours_yaml(65002, 65001, false));

    frr.wait_established("10.11.0.2", WAIT);
    frr.wait_established("fd00:11::2", WAIT);
    ours.wait_established("10.11.0.1", WAIT);
    ours.wait_established("fd00:11::1", WAIT);
    // Hold time negotiated down to FRR's 3 s, keepalive a third of it.
    let n = ours.neighbor("10.11.0.1").unwrap();
    assert_eq!(
        (n["negotiated"]["hold_time"].as_u64(), n["negotiated"]["keepalive_time"].as_u64()),
        (Some(3), Some(1)),
        "{n}"
    );

    // Ours -> FRR, as FRR decodes it.
    let route = frr.wait_route("10.22.0.0/24", WAIT, |_| true);
    assert_eq!(path(&route)["aspath"]["string"], "65002", "{route}");
    assert_eq!(path(&route)["origin"], "IGP", "{route}");
    assert_eq!(path(&route)["nexthops"][0]["ip"], "10.11.0.2", "{route}");
    let route = frr.wait_route("fd00:22::/48", WAIT, |_| true);
    assert_eq!(path(&route)["nexthops"][0]["ip"], "fd00:11::2", "{route}");
    assert_eq!(path(&route)["aspath"]["string"], "65002", "{route}");

    // FRR -> ours, with MED and community, installed for forwarding.
    let s = ours.wait("FRR's routes", WAIT, |_| {
        ["10.1.0.0/24", "fd00:1::/48"].iter().all(|p| ours.route(p).is_some() && ours.fib(p).is_some())
    });
    let r = ours.route("10.1.0.0/24").unwrap();
    let p = &r["paths"][0];
    assert_eq!(
        (p["as_path"].as_str(), p["med"].as_u64(), p["next_hop"].as_str()),
        (Some("65001"), Some(10), Some("10.11.0.1")),
        "{r}"
    );
    assert_eq!(p["communities"], serde_json::json!(["65001:100"]), "{r}");
    assert_eq!(ours.fib("10.1.0.0/24"), Some(vec!["10.11.0.1".to_string()]), "{s}");
    assert_eq!(ours.route("fd00:1::/48").unwrap()["paths"][0]["next_hop"], "fd00:11::1");
    // Nothing of ours comes back to us as a looped path.
    assert!(ours.route("10.22.0.0/24").unwrap()["paths"].as_array().unwrap().len() == 1);

    // Withdraws both ways.
    ours.control(&["del 10.22.0.0/24"]);
    frr.wait_no_route("10.22.0.0/24", WAIT);
    assert!(frr.route("fd00:22::/48").is_some(), "the IPv6 route stays");
    frr.configure(&["router bgp 65001", "address-family ipv4 unicast", "no network 10.1.0.0/24"]);
    ours.wait("withdraw of 10.1.0.0/24", WAIT, |_| {
        ours.route("10.1.0.0/24").is_none() && ours.fib("10.1.0.0/24").is_none()
    });
    assert_eq!(frr.rib_count(Afi::Ipv4), 0);
}

#[test]
fn bgp_frr_ibgp_frr_connects() {
    if !frr_available("bgp_frr_ibgp_frr_connects") {
        return;
    }
    let (frr_ns, ours_ns) = pair("bfi");
    let (v4, v6) = frr_neighbors(65001, false);
    let config = FrrConfig::new(65001, "10.11.0.1")
        .neighbor(v4)
        .neighbor(v6)
        .network_with_route_map("10.1.0.0/24", "LP")
        .network("fd00:1::/48")
        .trailer("route-map LP permit 10")
        .trailer(" set local-preference 250");
    let frr = Frr::start(&frr_ns, &config.render());
    // Ours passive: FRR opens the sessions.
    let ours = Speaker::start(&ours_ns, &ours_yaml(65001, 65001, true));
    frr.wait_established("10.11.0.2", WAIT);
    frr.wait_established("fd00:11::2", WAIT);
    ours.wait_established("10.11.0.1", WAIT);
    let n = ours.neighbor("10.11.0.1").unwrap();
    assert_eq!(n["negotiated"]["ebgp"], false);
    assert!(n["counters"]["received"]["open"].as_u64() >= Some(1));

    // iBGP: LOCAL_PREF travels, the AS path stays empty.
    let route = frr.wait_route("10.22.0.0/24", WAIT, |_| true);
    assert_eq!(path(&route)["locPrf"], 100, "{route}");
    assert_eq!(path(&route)["aspath"]["length"], 0, "{route}");
    assert_eq!(path(&route)["nexthops"][0]["ip"], "10.11.0.2", "{route}");
    frr.wait_route("fd00:22::/48", WAIT, |_| true);
    ours.wait("FRR's routes", WAIT, |_| ours.route("10.1.0.0/24").is_some() && ours.route("fd00:1::/48").is_some());
    let p = ours.route("10.1.0.0/24").unwrap()["paths"][0].clone();
    assert_eq!((p["local_pref"].as_u64(), p["as_path"].as_str()), (Some(250), Some("")), "{p}");
}

#[test]
fn bgp_frr_notification_and_hold_timer_expiry() {
    if !frr_available("bgp_frr_notification_and_hold_timer_expiry") {
        return;
    }
    let (frr_ns, ours_ns) = pair("bfn");
    let (v4, _) = frr_neighbors(65002, false);
    let frr = Frr::start(&frr_ns, &FrrConfig::new(65001, "10.11.0.1").neighbor(v4).network("10.1.0.0/24").render());
    let yaml = r#"
asn: 65002
router_id: 10.11.0.2
timers: { hold_time: 3, connect_retry: 1 }
neighbors:
  - { address: 10.11.0.1, remote_as: 65001, families: [ipv4-unicast] }
"#;
    let ours = Speaker::start(&ours_ns, yaml);
    ours.wait_established("10.11.0.1", WAIT);
    ours.wait("FRR's route", WAIT, |_| ours.route("10.1.0.0/24").is_some());

    // A NOTIFICATION (Cease / Administrative Shutdown) from FRR.
    frr.configure(&["router bgp 65001", "neighbor 10.11.0.2 shutdown"]);
    ours.wait("session down on Cease", WAIT, |_| {
        ours.neighbor("10.11.0.1").is_some_and(|n| {
            n["state"] != "Established" && n["last_error"].as_str().is_some_and(|e| e.contains("Cease (6/2)"))
        })
    });
    assert!(ours.route("10.1.0.0/24").is_none(), "routes of the session are gone");
    frr.configure(&["router bgp 65001", "no neighbor 10.11.0.2 shutdown"]);
    ours.wait_established("10.11.0.1", WAIT);
    ours.wait("FRR's route again", WAIT, |_| ours.route("10.1.0.0/24").is_some());

    // FRR frozen: no keepalives, our 3 s hold timer expires and we send
    // NOTIFICATION Hold Timer Expired.
    let pid = frr.pid().to_string();
    fabric_tests::netns::run("kill", &["-STOP", &pid]);
    ours.wait("hold timer expiry", Duration::from_secs(10), |_| {
        ours.neighbor("10.11.0.1")
            .is_some_and(|n| n["last_error"].as_str().is_some_and(|e| e.contains("hold timer expired")))
    });
    let n = ours.neighbor("10.11.0.1").unwrap();
    assert!(n["counters"]["sent"]["notification"].as_u64() >= Some(1), "{n}");
    assert!(ours.route("10.1.0.0/24").is_none());
    fabric_tests::netns::run("kill", &["-CONT", &pid]);
    ours.wait_established("10.11.0.1", WAIT);
}
