//! Session features of our speaker (`bgp-speaker`) against FRR's bgpd:
//! ROUTE-REFRESH (RFC 2918) asked by FRR, both sides connecting at once
//! (collision, RFC 4271 §6.8), the max-prefix limit (Cease 6/1, RFC 4486),
//! 4-octet AS numbers (RFC 6793) and graceful restart as a helper (RFC
//! 4724: FRR's routes kept while it restarts, stale ones dropped after its
//! End-of-RIB).

use std::time::{Duration, Instant};

use fabric_tests::bgp_speaker::Speaker;
use fabric_tests::frr::{Afi, Frr, FrrConfig, FrrNeighbor, frr_available};
use fabric_tests::{Netns, veth};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(30);
const OURS: &str = "10.0.15.1";
const FRR: &str = "10.0.15.2";

fn pair() -> (Netns, Netns) {
    let ours = Netns::new("bxo");
    let frr = Netns::new("bxf");
    veth(&ours, "eth1", &frr, "eth1");
    ours.ip(&["addr", "add", "10.0.15.1/30", "dev", "eth1"]);
    frr.ip(&["addr", "add", "10.0.15.2/30", "dev", "eth1"]);
    (ours, frr)
}

fn frr_config(asn: u32, our_as: u32, passive: bool, networks: &[&str]) -> FrrConfig {
    let mut n = FrrNeighbor::new(OURS, our_as);
    n.families = vec![Afi::Ipv4];
    n.passive = passive;
    let mut c = FrrConfig::new(asn, "10.0.0.2").neighbor(n);
    for p in networks {
        c = c.network(p);
    }
    c
}

fn ours_yaml(asn: u32, frr_as: u32, extra: &str) -> String {
    format!(
        r#"
asn: {asn}
router_id: 10.0.0.1
timers: {{ hold_time: 9, connect_retry: 1 }}
networks: [10.1.0.0/24]
neighbors:
  - {{ address: {FRR}, remote_as: {frr_as}, families: [ipv4-unicast]{extra} }}
"#
    )
}

fn neighbor(ours: &Speaker) -> Value {
    ours.neighbor(FRR).expect("neighbour in status")
}

#[track_caller]
fn wait_route(ours: &Speaker, prefix: &str) -> Value {
    ours.wait(&format!("{prefix} in the Loc-RIB"), WAIT, |_| ours.route(prefix).is_some());
    ours.route(prefix).unwrap()
}

/// `clear bgp ... soft in` makes FRR send ROUTE-REFRESH; we answer by
/// re-sending our routes, and the session is not reset.
#[test]
fn route_refresh_from_frr() {
    if !frr_available("bgp_frr_features route_refresh_from_frr") {
        return;
    }
    let (ours_ns, frr_ns) = pair();
    let frr = Frr::start(&frr_ns, &frr_config(65002, 65001, true, &["10.2.0.0/24"]).render());
    let ours = Speaker::start(&ours_ns, &ours_yaml(65001, 65002, ""));
    frr.wait_established(OURS, WAIT);
    frr.wait_route("10.1.0.0/24", WAIT, |_| true);
    let before = neighbor(&ours)["counters"].clone();

    frr.vtysh(&[&format!("clear bgp ipv4 unicast {OURS} soft in")]);
    ours.wait("ROUTE-REFRESH received and answered", WAIT, |_| {
        let c = &neighbor(&ours)["counters"];
        c["received"]["route_refresh"].as_u64() > before["received"]["route_refresh"].as_u64()
            && c["sent"]["update"].as_u64() > before["sent"]["update"].as_u64()
    });
    std::thread::sleep(Duration::from_secs(1));
    let n = frr.neighbor(OURS);
    assert_eq!(n["bgpState"], "Established", "{n:#}");
    assert_eq!(n["connectionsDropped"], 0, "no reset: {n:#}");
    assert!(frr.route("10.1.0.0/24").is_some());
    assert_eq!(neighbor(&ours)["counters"]["established_transitions"], 1);
}

/// Both sides connect actively at the same time: one connection wins
/// (RFC 4271 §6.8), and the session then stays up.
#[test]
fn collision_both_sides_connect() {
    if !frr_available("bgp_frr_features collision_both_sides_connect") {
        return;
    }
    let (ours_ns, frr_ns) = pair();
    let ours = Speaker::start(&ours_ns, &ours_yaml(65001, 65002, ""));
    let frr = Frr::start(&frr_ns, &frr_config(65002, 65001, false, &["10.2.0.0/24"]).render());
    frr.wait_established(OURS, WAIT);
    ours.wait_established(FRR, WAIT);
    wait_route(&ours, "10.2.0.0/24");
    frr.wait_route("10.1.0.0/24", WAIT, |_| true);
    // Several hold times with no flap.
    std::thread::sleep(Duration::from_secs(6));
    let n = frr.neighbor(OURS);
    assert_eq!(n["bgpState"], "Established", "{n:#}");
    assert_eq!(n["connectionsEstablished"], 1, "{n:#}");
    assert_eq!(n["connectionsDropped"], 0, "{n:#}");
    let ours_n = neighbor(&ours);
    assert_eq!(ours_n["state"], "Established", "{ours_n:#}");
    assert_eq!(ours_n["counters"]["established_transitions"], 1, "{ours_n:#}");
}

/// FRR sends more prefixes than our limit: we close with Cease / Maximum
/// Number of Prefixes Reached (6/1) and FRR says so.
#[test]
fn max_prefix_limit() {
    if !frr_available("bgp_frr_features max_prefix_limit") {
        return;
    }
    let (ours_ns, frr_ns) = pair();
    let frr =
        Frr::start(&frr_ns, &frr_config(65002, 65001, true, &["10.2.0.0/24", "10.2.1.0/24", "10.2.2.0/24"]).render());
    let ours = Speaker::start(&ours_ns, &ours_yaml(65001, 65002, ", max_prefix: { limit: 2 }"));
    let deadline = Instant::now() + WAIT;
    loop {
        let n = frr.neighbor(OURS);
        let text = n.to_string();
        if text.contains("Maximum Number of Prefixes Reached") || text.contains("Max Prefix") {
            break;
        }
        assert!(Instant::now() < deadline, "FRR saw no Cease 6/1: {n:#}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let n = neighbor(&ours);
    let error = n["last_error"].as_str().unwrap_or_default().to_lowercase();
    assert!(error.contains("prefix") || error.contains("6/1"), "last_error: {n:#}");
    assert!(n["counters"]["sent"]["notification"].as_u64() >= Some(1), "{n:#}");
    assert!(ours.route("10.2.2.0/24").is_none() || n["state"] == "Established");
}

/// Both ASNs above 65535: AS_TRANS in the OPEN's My AS, the real ones in
/// the capability and in 4-octet AS_PATHs.
#[test]
fn four_octet_as_numbers() {
    if !frr_available("bgp_frr_features four_octet_as_numbers") {
        return;
    }
    let (ours_ns, frr_ns) = pair();
    let frr = Frr::start(&frr_ns, &frr_config(4_200_000_002, 4_200_000_001, true, &["10.2.0.0/24"]).render());
    let ours = Speaker::start(&ours_ns, &ours_yaml(4_200_000_001, 4_200_000_002, ""));
    frr.wait_established(OURS, WAIT);
    let route = frr.wait_route("10.1.0.0/24", WAIT, |_| true);
    assert_eq!(route["paths"][0]["aspath"]["string"], "4200000001", "{route:#}");
    let route = wait_route(&ours, "10.2.0.0/24");
    assert_eq!(route["paths"][0]["as_path"], "4200000002", "{route:#}");
    let n = neighbor(&ours);
    assert_eq!(n["negotiated"]["four_octet_as"], true, "{n:#}");
    assert_eq!(n["negotiated"]["peer_as"], 4_200_000_002u64, "{n:#}");
}

/// FRR with graceful restart dies (SIGKILL: no NOTIFICATION) and comes
/// back: as a helper we keep its routes (and their forwarding) meanwhile,
/// and after its End-of-RIB drop the one it no longer announces.
#[test]
fn graceful_restart_helper() {
    if !frr_available("bgp_frr_features graceful_restart_helper") {
        return;
    }
    let (ours_ns, frr_ns) = pair();
    // preserve-fw-state: the F bit (RFC 4724 §3), without which a helper
    // must drop the stale routes as soon as the new session is up.
    let config = |networks: &[&str]| {
        let mut c = frr_config(65002, 65001, false, networks);
        c.neighbors[0].extra = vec![
            "bgp graceful-restart".into(),
            "bgp graceful-restart preserve-fw-state".into(),
            "bgp graceful-restart restart-time 60".into(),
        ];
        c.render()
    };
    let frr = Frr::start(&frr_ns, &config(&["10.2.0.0/24", "10.2.1.0/24"]));
    let ours = Speaker::start(&ours_ns, &ours_yaml(65001, 65002, ""));
    ours.wait_established(FRR, WAIT);
    wait_route(&ours, "10.2.0.0/24");
    wait_route(&ours, "10.2.1.0/24");
    let n = neighbor(&ours);
    assert_eq!(n["negotiated"]["graceful_restart"], true, "FRR's GR capability seen: {n:#}");

    // SIGKILL: the kernel closes the connection; no NOTIFICATION.
    let pid = frr.pid();
    // SAFETY: kill has no memory preconditions.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    drop(frr);
    ours.wait(&format!("{FRR} down"), WAIT, |_| neighbor(&ours)["state"] != "Established");
    // Restarting: the routes and their next hops stay.
    std::thread::sleep(Duration::from_secs(2));
    assert!(ours.route("10.2.0.0/24").is_some(), "route kept during the restart: {:#}", ours.status().unwrap());
    assert!(ours.fib("10.2.0.0/24").is_some(), "forwarding kept during the restart");

    // Back without 10.2.1.0/24.
    let frr = Frr::start(&frr_ns, &config(&["10.2.0.0/24"]));
    frr.wait_established(OURS, WAIT);
    // The re-sent route never leaves the forwarding state (that is the
    // point of graceful restart); the stale one goes after End-of-RIB.
    let mut timeline = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let state = neighbor(&ours)["state"].as_str().unwrap_or("?").to_string();
        let kept = ours.route("10.2.0.0/24").is_some() && ours.fib("10.2.0.0/24").is_some();
        let stale = ours.route("10.2.1.0/24").is_some();
        if timeline.last().map(|(s, k, st, _): &(String, bool, bool, u128)| (s.clone(), *k, *st))
            != Some((state.clone(), kept, stale))
        {
            timeline.push((state, kept, stale, deadline.elapsed().as_millis()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("timeline (state, 10.2.0.0/24 kept, 10.2.1.0/24 present, ms): {timeline:?}");
    assert!(timeline.iter().all(|(_, kept, _, _)| *kept), "10.2.0.0/24 left the Loc-RIB or FIB: {timeline:?}");
    assert!(ours.route("10.2.1.0/24").is_none(), "stale 10.2.1.0/24 dropped after End-of-RIB: {timeline:?}");
    assert!(ours.fib("10.2.1.0/24").is_none());
}

/// IPv6 unicast over an IPv4 session (one session, both families): our
/// IPv6 routes carry the configured `ipv6_next_hop`, FRR's carry the global
/// IPv6 address its outbound route map sets, and both sides install them.
#[test]
fn ipv6_routes_over_an_ipv4_session() {
    ipv6_over_ipv4(true);
}

/// As above without FRR's route map: bgpd without zebra knows no interface
/// address and sends the IPv4-mapped `::ffff:10.0.15.2`. That address is
/// no neighbour on the link (nothing answers neighbour discovery for it),
/// so the route must be installed through the IPv4 next hop it maps
/// (RFC 5549-style) or not at all, never through the mapped address.
#[test]
fn ipv6_route_with_ipv4_mapped_next_hop() {
    ipv6_over_ipv4(false);
}

fn ipv6_over_ipv4(frr_sets_global_next_hop: bool) {
    if !frr_available("bgp_frr_features ipv6_routes_over_an_ipv4_session") {
        return;
    }
    let (ours_ns, frr_ns) = pair();
    ours_ns.ip(&["addr", "add", "fd00:15::1/64", "dev", "eth1", "nodad"]);
    frr_ns.ip(&["addr", "add", "fd00:15::2/64", "dev", "eth1", "nodad"]);
    let mut n = FrrNeighbor::new(OURS, 65001);
    n.families = vec![Afi::Ipv4, Afi::Ipv6];
    let mut config = FrrConfig::new(65002, "10.0.0.2").network("10.2.0.0/24").network("fd00:2::/48");
    if frr_sets_global_next_hop {
        n.extra = vec![
            "address-family ipv6 unicast".into(),
            format!("neighbor {OURS} route-map V6NH out"),
            "exit-address-family".into(),
        ];
        config = config.trailer("route-map V6NH permit 10").trailer(" set ipv6 next-hop global fd00:15::2");
    }
    let frr = Frr::start(&frr_ns, &config.neighbor(n).render());
    let ours = Speaker::start(
        &ours_ns,
        &format!(
            r#"
asn: 65001
router_id: 10.0.0.1
timers: {{ hold_time: 9, connect_retry: 1 }}
networks: [10.1.0.0/24, "fd00:1::/48"]
ipv6_next_hop: "fd00:15::1"
neighbors:
  - {{ address: {FRR}, remote_as: 65002, families: [ipv4-unicast, ipv6-unicast] }}
"#
        ),
    );
    frr.wait_established(OURS, WAIT);
    let route = frr.wait_route("fd00:1::/48", WAIT, |_| true);
    let path = &route["paths"][0];
    assert_eq!(path["nexthops"][0]["ip"], "fd00:15::1", "{path:#}");
    assert_eq!(path["valid"], true, "{path:#}");
    frr.wait_route("10.1.0.0/24", WAIT, |_| true);
    let route = wait_route(&ours, "fd00:2::/48");
    if frr_sets_global_next_hop {
        assert_eq!(route["paths"][0]["next_hop"], "fd00:15::2", "{route:#}");
        let installed = Some(vec!["fd00:15::2".to_string()]);
        ours.wait("fd00:2::/48 installed via fd00:15::2", WAIT, |_| ours.fib("fd00:2::/48") == installed);
    } else {
        assert_eq!(route["paths"][0]["next_hop"], "::ffff:10.0.15.2", "what FRR -Z sends: {route:#}");
        let fib = ours.fib("fd00:2::/48");
        assert!(
            fib.is_none() || fib == Some(vec![FRR.to_string()]),
            "installed through the IPv4-mapped address, which never resolves: {fib:?}"
        );
    }
    // The IPv4 route may come in a later UPDATE than the IPv6 one waited for above.
    let installed = Some(vec![FRR.to_string()]);
    ours.wait("10.2.0.0/24 installed via FRR", WAIT, |_| ours.fib("10.2.0.0/24") == installed);
    let n = neighbor(&ours);
    assert_eq!(n["negotiated"]["families"].as_array().map(Vec::len), Some(2), "{n:#}");
}

/// `stop PEER` sends FRR a Cease and withdraws nothing it should keep;
/// `start PEER` brings the session back; stopping the daemon (SIGTERM)
/// sends a Cease too, so FRR drops our routes at once instead of waiting
/// for its hold timer.
#[test]
fn stop_start_and_shutdown_send_cease() {
    if !frr_available("bgp_frr_features stop_start_and_shutdown_send_cease") {
        return;
    }
    let (ours_ns, frr_ns) = pair();
    let frr = Frr::start(&frr_ns, &frr_config(65002, 65001, true, &["10.2.0.0/24"]).render());
    let mut ours = Speaker::start(&ours_ns, &ours_yaml(65001, 65002, ""));
    frr.wait_established(OURS, WAIT);
    frr.wait_route("10.1.0.0/24", WAIT, |_| true);

    let notification_seen = |frr: &Frr| {
        let n = frr.neighbor(OURS);
        n["bgpState"] != "Established"
            && n["lastNotificationReason"].as_str().is_some_and(|r| r.starts_with("Cease"))
            && n["lastResetDueTo"].as_str().is_some_and(|r| r.contains("Notification received"))
    };
    ours.control(&[&format!("stop {FRR}")]);
    let deadline = Instant::now() + WAIT;
    while !notification_seen(&frr) {
        assert!(Instant::now() < deadline, "FRR saw no Cease after stop: {:#}", frr.neighbor(OURS));
        std::thread::sleep(Duration::from_millis(100));
    }
    frr.wait_no_route("10.1.0.0/24", WAIT);
    // Stopped means stopped: no reconnection while FRR is willing.
    std::thread::sleep(Duration::from_secs(3));
    assert_ne!(frr.neighbor_state(OURS).as_deref(), Some("Established"));

    ours.control(&[&format!("start {FRR}")]);
    frr.wait_established(OURS, WAIT);
    frr.wait_route("10.1.0.0/24", WAIT, |_| true);
    let dropped_before = frr.neighbor(OURS)["connectionsDropped"].as_u64().unwrap_or(0);

    // SIGTERM: Cease on the way out; FRR's hold timer (3 s) never fires.
    let stopped_at = Instant::now();
    ours.stop();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(notification_seen(&frr) && frr.neighbor(OURS)["connectionsDropped"].as_u64() > Some(dropped_before)) {
        assert!(Instant::now() < deadline, "FRR saw no Cease on shutdown: {:#}", frr.neighbor(OURS));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(stopped_at.elapsed() < Duration::from_secs(2), "down by NOTIFICATION, not by hold timer");
    assert!(frr.route("10.1.0.0/24").is_none());
}

/// FRR proposes hold time 0 (`timers 0 0`): the negotiated hold time is 0,
/// so neither side sends periodic KEEPALIVEs and the session never expires
/// (RFC 4271 §4.2, §4.4).
#[test]
fn hold_time_zero() {
    if !frr_available("bgp_frr_features hold_time_zero") {
        return;
    }
    let (ours_ns, frr_ns) = pair();
    let mut config = frr_config(65002, 65001, true, &["10.2.0.0/24"]);
    config.neighbors[0].timers = Some((0, 0));
    let frr = Frr::start(&frr_ns, &config.render());
    let ours = Speaker::start(&ours_ns, &ours_yaml(65001, 65002, ""));
    ours.wait_established(FRR, WAIT);
    wait_route(&ours, "10.2.0.0/24");
    let n = neighbor(&ours);
    assert_eq!(n["negotiated"]["hold_time"], 0, "{n:#}");
    let keepalives = |n: &Value| n["counters"]["sent"]["keepalive"].as_u64().unwrap_or(0);
    let before = keepalives(&n);
    // Longer than our configured 9 s hold time would allow.
    std::thread::sleep(Duration::from_secs(11));
    let n = neighbor(&ours);
    assert_eq!(n["state"], "Established", "{n:#}");
    assert_eq!(n["counters"]["established_transitions"], 1, "{n:#}");
    assert_eq!(keepalives(&n), before, "no periodic KEEPALIVE with hold time 0: {n:#}");
    let f = frr.neighbor(OURS);
    assert_eq!(f["bgpState"], "Established", "{f:#}");
    assert_eq!(f["connectionsDropped"], 0, "{f:#}");
}
