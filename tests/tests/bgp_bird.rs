//! Our speaker (`bgp-speaker`) against BIRD 2, the interop matrix the FRR
//! one (`bgp_frr_matrix.rs`) runs: eBGP with each side opening the session
//! (checked with the TCP ports `ss` shows), IPv4 and IPv6 routes each way
//! with the attributes our export policy sets (MED, community) as BIRD
//! decodes them and BIRD's as we decode them, installed next hops, and
//! withdraws each way (ours from the control file, BIRD's by `birdc
//! configure` with the static routes gone), then announced again.
//!
//! Addresses: ours 10.0.13.1/30 and fd00:13::1/64, BIRD .2 and ::2; one
//! session per address family, as fabrics without extended next hops run
//! them.

use std::time::{Duration, Instant};

use fabric_tests::bgp_speaker::Speaker;
use fabric_tests::bird::{Bird, BirdConfig, BirdNeighbor, BirdRoute, bird_available};
use fabric_tests::{Netns, veth};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
const OURS_V4: &str = "10.0.13.1";
const OURS_V6: &str = "fd00:13::1";
const BIRD_V4: &str = "10.0.13.2";
const BIRD_V6: &str = "fd00:13::2";
const OUR_AS: u32 = 65001;
const BIRD_AS: u32 = 65002;

struct Pair {
    ours: Netns,
    bird: Netns,
}

fn pair() -> Pair {
    let ours = Netns::new("bbo");
    let bird = Netns::new("bbb");
    veth(&ours, "eth1", &bird, "eth1");
    ours.ip(&["addr", "add", "10.0.13.1/30", "dev", "eth1"]);
    ours.ip(&["addr", "add", "fd00:13::1/64", "dev", "eth1", "nodad"]);
    bird.ip(&["addr", "add", "10.0.13.2/30", "dev", "eth1"]);
    bird.ip(&["addr", "add", "fd00:13::2/64", "dev", "eth1", "nodad"]);
    Pair { ours, bird }
}

/// BIRD with one session per family towards us, originating 10.2.0.0/24,
/// 10.2.1.0/24 and fd00:2::/48 (unless `withdrawn`) with MED 20 and
/// community 65002:20.
fn bird_config(passive: bool, withdrawn: bool) -> String {
    let mut v4 = BirdNeighbor::new("ours4", BIRD_V4, OURS_V4, OUR_AS);
    v4.passive = passive;
    let mut v6 = BirdNeighbor::new("ours6", BIRD_V6, OURS_V6, OUR_AS);
    v6.passive = passive;
    let mut config = BirdConfig::new(BIRD_AS, "10.0.0.2").neighbor(v4).neighbor(v6).network("10.2.1.0/24");
    if !withdrawn {
        config = config.network("10.2.0.0/24").network("fd00:2::/48");
    }
    config.med = Some(20);
    config.community = Some((65002, 20));
    config.render()
}

/// Our speaker: originates 10.1.0.0/24, 10.1.1.0/24 and fd00:1::/48, and
/// exports with MED 5 and community 65001:5.
fn ours_config(passive: bool) -> String {
    format!(
        r#"
asn: {OUR_AS}
router_id: 10.0.0.1
networks: [10.1.0.0/24, 10.1.1.0/24, "fd00:1::/48"]
neighbors:
  - {{ address: {BIRD_V4}, remote_as: {BIRD_AS}, families: [ipv4-unicast], hold_time: 9, connect_retry: 1, passive: {passive}, export_policy: out }}
  - {{ address: "{BIRD_V6}", remote_as: {BIRD_AS}, families: [ipv6-unicast], hold_time: 9, connect_retry: 1, passive: {passive}, export_policy: out }}
policies:
  out:
    - action: permit
      set: {{ med: 5, communities: ["65001:5"] }}
"#
    )
}

fn established_both(bird: &Bird, ours: &Speaker) {
    bird.wait_established("ours4", WAIT);
    bird.wait_established("ours6", WAIT);
    ours.wait_established(BIRD_V4, WAIT);
    ours.wait_established(BIRD_V6, WAIT);
}

/// The local port of BIRD's established BGP connection to `peer`, from `ss`
/// in BIRD's namespace.
fn birds_local_port(ns: &Netns, peer: &str) -> Option<u16> {
    let text = ns.exec(&["ss", "-Htn", "state", "established"]);
    text.lines().find_map(|line| {
        // `0  0  10.0.13.2:179  10.0.13.1:40000` (IPv6 in brackets)
        let words: Vec<&str> = line.split_whitespace().collect();
        let (local, remote) = (words.get(words.len().checked_sub(2)?)?, words.last()?);
        let (remote_host, remote_port) = remote.rsplit_once(':')?;
        let remote_host = remote_host.trim_matches(|c| c == '[' || c == ']');
        (remote_host == peer && (remote_port == "179" || local.ends_with(":179")))
            .then(|| local.rsplit_once(':')?.1.parse().ok())?
    })
}

#[track_caller]
fn wait_fib(ours: &Speaker, prefix: &str, hops: &[&str]) {
    let deadline = Instant::now() + WAIT;
    loop {
        let fib = ours.fib(prefix);
        if fib.as_deref().is_some_and(|f| f.iter().map(String::as_str).eq(hops.iter().copied())) {
            return;
        }
        assert!(Instant::now() < deadline, "fib {prefix}: {fib:?}, expected {hops:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[track_caller]
fn wait_no_fib(ours: &Speaker, prefix: &str) {
    let deadline = Instant::now() + WAIT;
    while let Some(fib) = ours.fib(prefix) {
        assert!(Instant::now() < deadline, "fib {prefix} still installed: {fib:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[track_caller]
fn wait_route(ours: &Speaker, prefix: &str) -> Value {
    ours.wait(&format!("{prefix} in the Loc-RIB"), WAIT, |_| ours.route(prefix).is_some());
    ours.route(prefix).expect("route")
}

#[track_caller]
fn wait_no_route(ours: &Speaker, prefix: &str) {
    ours.wait(&format!("{prefix} gone from the Loc-RIB"), WAIT, |_| ours.route(prefix).is_none());
}

/// Ours as BIRD shows them, BIRD's as we show (and install) them.
fn routes_both_ways(bird: &Bird, ours: &Speaker) {
    let from_us = |route: &BirdRoute| route.protocol == "ours4" || route.protocol == "ours6";
    let route = bird.wait_route("10.1.0.0/24", WAIT, from_us);
    assert_eq!(route.attribute("BGP.as_path"), Some("65001"), "{route:#?}");
    assert_eq!(route.attribute("BGP.origin"), Some("IGP"), "{route:#?}");
    assert_eq!(route.attribute("BGP.med"), Some("5"), "{route:#?}");
    assert_eq!(route.attribute("BGP.community"), Some("(65001,5)"), "{route:#?}");
    assert_eq!(route.attribute("BGP.next_hop"), Some(OURS_V4), "{route:#?}");
    assert!(route.via.as_deref().is_some_and(|via| via.starts_with(OURS_V4)), "{route:#?}");
    bird.wait_route("10.1.1.0/24", WAIT, from_us);
    let route = bird.wait_route("fd00:1::/48", WAIT, from_us);
    assert_eq!(route.protocol, "ours6", "{route:#?}");
    assert_eq!(route.attribute("BGP.as_path"), Some("65001"), "{route:#?}");
    assert_eq!(route.attribute("BGP.med"), Some("5"), "{route:#?}");
    // The global next hop first (a link-local one may follow).
    let next_hop = route.attribute("BGP.next_hop").unwrap_or_default();
    assert_eq!(next_hop.split_whitespace().next(), Some(OURS_V6), "IPv6 next hop at BIRD: {route:#?}");

    let route = wait_route(ours, "10.2.0.0/24");
    let path = &route["paths"][0];
    assert_eq!(path["as_path"], "65002", "{path:#}");
    assert_eq!(path["origin"], "IGP", "{path:#}");
    assert_eq!(path["med"], 20, "{path:#}");
    assert_eq!(path["communities"], json!(["65002:20"]), "{path:#}");
    assert_eq!(path["next_hop"], BIRD_V4, "{path:#}");
    assert_eq!(path["best"], true, "{path:#}");
    wait_route(ours, "10.2.1.0/24");
    let route = wait_route(ours, "fd00:2::/48");
    let path = &route["paths"][0];
    assert_eq!(path["next_hop"], BIRD_V6, "{path:#}");
    assert_eq!(path["med"], 20, "{path:#}");
    assert_eq!(path["as_path"], "65002", "{path:#}");
    wait_fib(ours, "10.2.0.0/24", &[BIRD_V4]);
    wait_fib(ours, "fd00:2::/48", &[BIRD_V6]);
}

/// Withdraws each way: ours with the control file, BIRD's by reconfiguring
/// without the static routes; then ours announced again.
fn withdraws_both_ways(bird: &Bird, ours: &Speaker, bird_passive: bool) {
    ours.control(&["del 10.1.1.0/24", "del fd00:1::/48"]);
    bird.wait_no_route("10.1.1.0/24", WAIT);
    bird.wait_no_route("fd00:1::/48", WAIT);
    assert!(bird.route("10.1.0.0/24").is_some(), "the other route stays");

    bird.reconfigure(&bird_config(bird_passive, true));
    wait_no_route(ours, "10.2.0.0/24");
    wait_no_route(ours, "fd00:2::/48");
    wait_no_fib(ours, "10.2.0.0/24");
    wait_no_fib(ours, "fd00:2::/48");
    assert!(ours.route("10.2.1.0/24").is_some(), "the other route stays");
    // A reconfiguration that only changes static routes keeps the sessions.
    assert!(bird.established("ours4") && bird.established("ours6"), "{:#?}", bird.protocol("ours4"));

    ours.control(&["add 10.1.1.0/24", "add fd00:1::/48"]);
    bird.wait_route("10.1.1.0/24", WAIT, |r| r.protocol == "ours4");
    bird.wait_route("fd00:1::/48", WAIT, |r| r.protocol == "ours6");
    bird.reconfigure(&bird_config(bird_passive, false));
    wait_route(ours, "10.2.0.0/24");
    wait_fib(ours, "fd00:2::/48", &[BIRD_V6]);
}

fn run(test: &str, ours_passive: bool) {
    if !bird_available(test) {
        return;
    }
    let p = pair();
    let bird_passive = !ours_passive;
    let bird = Bird::start(&p.bird, &bird_config(bird_passive, false));
    let ours = Speaker::start(&p.ours, &ours_config(ours_passive));
    established_both(&bird, &ours);
    // Who opened the session: the side whose local port is not 179.
    for peer in [OURS_V4, OURS_V6] {
        let port = birds_local_port(&p.bird, peer);
        if ours_passive {
            assert!(port.is_some_and(|port| port != 179), "BIRD connected to {peer}: local port {port:?}");
        } else {
            assert_eq!(port, Some(179), "we connected from {peer}");
        }
    }
    routes_both_ways(&bird, &ours);
    withdraws_both_ways(&bird, &ours, bird_passive);
}

#[test]
fn ebgp_we_connect() {
    run("bgp_bird ebgp_we_connect", false);
}

#[test]
fn ebgp_bird_connects() {
    run("bgp_bird ebgp_bird_connects", true);
}

/// BIRD shuts the session down (`birdc disable`: Cease, Administrative
/// Shutdown): its routes leave our table and FIB, ours leave BIRD's; `birdc
/// enable` brings session and routes back.
#[test]
fn bird_disables_and_enables_the_session() {
    if !bird_available("bgp_bird bird_disables_and_enables_the_session") {
        return;
    }
    let p = pair();
    let bird = Bird::start(&p.bird, &bird_config(false, false));
    let ours = Speaker::start(&p.ours, &ours_config(false));
    established_both(&bird, &ours);
    wait_fib(&ours, "10.2.0.0/24", &[BIRD_V4]);
    bird.wait_route("10.1.0.0/24", WAIT, |r| r.protocol == "ours4");

    bird.birdc(&["disable", "ours4"]);
    ours.wait(&format!("{BIRD_V4} not Established"), WAIT, |_| {
        ours.neighbor(BIRD_V4).is_some_and(|n| n["state"] != "Established")
    });
    let neighbor = ours.neighbor(BIRD_V4).expect("neighbour");
    let error = neighbor["last_error"].as_str().unwrap_or_default().to_lowercase();
    assert!(error.contains("cease") || error.contains("shutdown"), "last_error: {neighbor:#}");
    wait_no_route(&ours, "10.2.0.0/24");
    wait_no_fib(&ours, "10.2.0.0/24");
    bird.wait_no_route("10.1.0.0/24", WAIT);
    assert!(ours.route("fd00:2::/48").is_some(), "the IPv6 session is not affected");

    bird.birdc(&["enable", "ours4"]);
    established_both(&bird, &ours);
    wait_fib(&ours, "10.2.0.0/24", &[BIRD_V4]);
    bird.wait_route("10.1.0.0/24", WAIT, |r| r.protocol == "ours4");
}
