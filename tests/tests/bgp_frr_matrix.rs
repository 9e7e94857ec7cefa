//! Our speaker (`bgp-speaker`) against FRR's bgpd, the full matrix beyond
//! `bgp_frr.rs`: eBGP and iBGP with each side opening the session (checked
//! with FRR's local port), IPv4 and IPv6 routes each way with the
//! attributes our export policy sets (MED, communities, LOCAL_PREF over
//! iBGP) as FRR decodes them and FRR's as we decode them, installed next
//! hops, IPv6 withdraws both ways, hold-timer expiry on either side, our
//! keepalives, and `clear bgp *`.
//!
//! Addresses: ours 10.0.12.1/30 and fd00:12::1/64, FRR .2 and ::2; one
//! session per address family (IPv4 routes over the IPv4 session, IPv6
//! over the IPv6 one), as fabrics without extended next hops run them.

use std::time::{Duration, Instant};

use fabric_tests::bgp_speaker::Speaker;
use fabric_tests::frr::{Afi, Frr, FrrConfig, FrrNeighbor, frr_available};
use fabric_tests::{Netns, veth};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
const OURS_V4: &str = "10.0.12.1";
const OURS_V6: &str = "fd00:12::1";
const FRR_V4: &str = "10.0.12.2";
const FRR_V6: &str = "fd00:12::2";

trait SpeakerExt {
    fn wait_route(&self, prefix: &str, timeout: Duration) -> Value;
    fn wait_no_route(&self, prefix: &str, timeout: Duration);
    fn state(&self, peer: &str) -> Option<String>;
    fn wait_not_established(&self, peer: &str, timeout: Duration);
}

impl SpeakerExt for Speaker {
    #[track_caller]
    fn wait_route(&self, prefix: &str, timeout: Duration) -> Value {
        self.wait(&format!("{prefix} in the Loc-RIB"), timeout, |_| self.route(prefix).is_some());
        self.route(prefix).expect("route")
    }

    #[track_caller]
    fn wait_no_route(&self, prefix: &str, timeout: Duration) {
        self.wait(&format!("{prefix} gone from the Loc-RIB"), timeout, |_| self.route(prefix).is_none());
    }

    fn state(&self, peer: &str) -> Option<String> {
        self.neighbor(peer)?["state"].as_str().map(str::to_string)
    }

    #[track_caller]
    fn wait_not_established(&self, peer: &str, timeout: Duration) {
        self.wait(&format!("{peer} not Established"), timeout, |_| {
            self.state(peer).is_some_and(|s| s != "Established")
        });
    }
}

struct Pair {
    ours: Netns,
    frr: Netns,
}

fn pair() -> Pair {
    let ours = Netns::new("bfo");
    let frr = Netns::new("bff");
    veth(&ours, "eth1", &frr, "eth1");
    ours.ip(&["addr", "add", "10.0.12.1/30", "dev", "eth1"]);
    ours.ip(&["addr", "add", "fd00:12::1/64", "dev", "eth1", "nodad"]);
    frr.ip(&["addr", "add", "10.0.12.2/30", "dev", "eth1"]);
    frr.ip(&["addr", "add", "fd00:12::2/64", "dev", "eth1", "nodad"]);
    Pair { ours, frr }
}

/// FRR with one session per family towards us, originating 10.2.0.0/24
/// (MED 20, community 65002:20, local-pref 200 for iBGP) and fd00:2::/48.
fn frr_config(asn: u32, our_as: u32, passive: bool) -> FrrConfig {
    let mut v4 = FrrNeighbor::new(OURS_V4, our_as);
    v4.families = vec![Afi::Ipv4];
    v4.passive = passive;
    let mut v6 = FrrNeighbor::new(OURS_V6, our_as);
    v6.families = vec![Afi::Ipv6];
    v6.passive = passive;
    FrrConfig::new(asn, "10.0.0.2")
        .neighbor(v4)
        .neighbor(v6)
        .network_with_route_map("10.2.0.0/24", "TAG")
        .network("10.2.1.0/24")
        .network_with_route_map("fd00:2::/48", "TAG")
        .trailer("route-map TAG permit 10")
        .trailer(" set metric 20")
        .trailer(" set community 65002:20")
        .trailer(" set local-preference 200")
}

/// Our speaker: originates 10.1.0.0/24, 10.1.1.0/24 and fd00:1::/48, and
/// exports with MED 5, community 65001:5 (and, over iBGP, local-pref 150).
fn ours_config(asn: u32, frr_as: u32, passive: bool) -> String {
    format!(
        r#"
asn: {asn}
router_id: 10.0.0.1
networks: [10.1.0.0/24, 10.1.1.0/24, "fd00:1::/48"]
neighbors:
  - {{ address: {FRR_V4}, remote_as: {frr_as}, families: [ipv4-unicast], hold_time: 9, connect_retry: 1, passive: {passive}, export_policy: out }}
  - {{ address: "{FRR_V6}", remote_as: {frr_as}, families: [ipv6-unicast], hold_time: 9, connect_retry: 1, passive: {passive}, export_policy: out }}
policies:
  out:
    - action: permit
      set: {{ med: 5, local_pref: 150, communities: ["65001:5"] }}
"#
    )
}

fn established_both(frr: &Frr, ours: &Speaker) {
    frr.wait_established(OURS_V4, WAIT);
    frr.wait_established(OURS_V6, WAIT);
    ours.wait_established(FRR_V4, WAIT);
    ours.wait_established(FRR_V6, WAIT);
}

/// FRR's AS_PATH string, "" when empty (FRR shows "Local").
fn as_path_at_frr(path: &Value) -> String {
    if path["aspath"]["length"] == 0 {
        String::new()
    } else {
        path["aspath"]["string"].as_str().unwrap_or("?").to_string()
    }
}

/// Checks what FRR shows for our routes and what we show for FRR's.
fn routes_both_ways(frr: &Frr, ours: &Speaker, ibgp: bool) {
    // Ours at FRR.
    let route = frr.wait_route("10.1.0.0/24", WAIT, |_| true);
    let path = &route["paths"][0];
    assert_eq!(as_path_at_frr(path), if ibgp { "" } else { "65001" }, "AS_PATH at FRR: {path:#}");
    assert_eq!(path["origin"], "IGP", "{path:#}");
    assert_eq!(path["metric"], 5, "MED at FRR: {path:#}");
    assert_eq!(path["community"]["string"], "65001:5", "{path:#}");
    assert_eq!(path["nexthops"][0]["ip"], OURS_V4, "{path:#}");
    assert_eq!(path["valid"], true, "{path:#}");
    if ibgp {
        assert_eq!(path["locPrf"], 150, "LOCAL_PREF at FRR: {path:#}");
    }
    frr.wait_route("10.1.1.0/24", WAIT, |_| true);
    let route = frr.wait_route("fd00:1::/48", WAIT, |_| true);
    let path = &route["paths"][0];
    assert_eq!(path["nexthops"][0]["ip"], OURS_V6, "IPv6 next hop at FRR: {path:#}");
    assert_eq!(path["metric"], 5, "{path:#}");
    assert_eq!(as_path_at_frr(path), if ibgp { "" } else { "65001" }, "{path:#}");
    assert_eq!(path["valid"], true, "{path:#}");

    // FRR's at ours, and installed.
    let route = ours.wait_route("10.2.0.0/24", WAIT);
    let path = &route["paths"][0];
    assert_eq!(path["as_path"], if ibgp { "" } else { "65002" }, "{path:#}");
    assert_eq!(path["origin"], "IGP", "{path:#}");
    assert_eq!(path["med"], 20, "{path:#}");
    assert_eq!(path["communities"], json!(["65002:20"]), "{path:#}");
    assert_eq!(path["next_hop"], FRR_V4, "{path:#}");
    assert_eq!(path["best"], true, "{path:#}");
    if ibgp {
        assert_eq!(path["local_pref"], 200, "{path:#}");
    }
    let route = ours.wait_route("10.2.1.0/24", WAIT);
    // FRR attaches MED 0 to `network` routes without a route map.
    assert_eq!(route["paths"][0]["med"], 0, "{route:#}");
    assert_eq!(route["paths"][0]["communities"], json!([]), "{route:#}");
    let route = ours.wait_route("fd00:2::/48", WAIT);
    let path = &route["paths"][0];
    assert_eq!(path["next_hop"], FRR_V6, "{path:#}");
    assert_eq!(path["med"], 20, "{path:#}");
    wait_fib(ours, "10.2.0.0/24", &[FRR_V4]);
    wait_fib(ours, "fd00:2::/48", &[FRR_V6]);
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

/// Withdraws each way: ours with the control file, FRR's with `no network`.
fn withdraws_both_ways(frr: &Frr, ours: &Speaker, frr_as: u32) {
    ours.control(&["del 10.1.1.0/24", "del fd00:1::/48"]);
    frr.wait_no_route("10.1.1.0/24", WAIT);
    frr.wait_no_route("fd00:1::/48", WAIT);
    assert!(frr.route("10.1.0.0/24").is_some(), "the other route stays");

    frr.configure(&[
        &format!("router bgp {frr_as}"),
        "address-family ipv4 unicast",
        "no network 10.2.0.0/24 route-map TAG",
        "exit-address-family",
        "address-family ipv6 unicast",
        "no network fd00:2::/48 route-map TAG",
    ]);
    ours.wait_no_route("10.2.0.0/24", WAIT);
    ours.wait_no_route("fd00:2::/48", WAIT);
    wait_no_fib(ours, "10.2.0.0/24");
    wait_no_fib(ours, "fd00:2::/48");
    assert!(ours.route("10.2.1.0/24").is_some(), "the other route stays");

    // And announced again.
    // (after the previous control file was read: the routes went)
    ours.control(&["add 10.1.1.0/24"]);
    frr.wait_route("10.1.1.0/24", WAIT, |_| true);
}

fn run(test: &str, our_as: u32, frr_as: u32, ours_passive: bool) {
    if !frr_available(test) {
        return;
    }
    let p = pair();
    let frr = Frr::start(&p.frr, &frr_config(frr_as, our_as, !ours_passive).render());
    let ours = Speaker::start(&p.ours, &ours_config(our_as, frr_as, ours_passive));
    established_both(&frr, &ours);
    // Who opened the session: the side whose local port is not 179.
    let n = frr.neighbor(OURS_V4);
    let frr_port = n["portLocal"].as_u64();
    if ours_passive {
        assert_ne!(frr_port, Some(179), "FRR connected: {n:#}");
    } else {
        assert_eq!(frr_port, Some(179), "we connected: {n:#}");
    }
    routes_both_ways(&frr, &ours, our_as == frr_as);
    withdraws_both_ways(&frr, &ours, frr_as);
}

#[test]
fn ebgp_we_connect() {
    run("bgp_frr ebgp_we_connect", 65001, 65002, false);
}

#[test]
fn ebgp_frr_connects() {
    run("bgp_frr ebgp_frr_connects", 65001, 65002, true);
}

#[test]
fn ibgp_we_connect() {
    run("bgp_frr ibgp_we_connect", 65000, 65000, false);
}

#[test]
fn ibgp_frr_connects() {
    run("bgp_frr ibgp_frr_connects", 65000, 65000, true);
}

/// FRR frozen (SIGSTOP) sends nothing: our hold timer (3 s, negotiated with
/// FRR's `timers 1 3`) expires, we send NOTIFICATION Hold Timer Expired and
/// drop FRR's routes; once FRR runs again the session comes back.
#[test]
fn hold_timer_expiry() {
    if !frr_available("bgp_frr hold_timer_expiry") {
        return;
    }
    let p = pair();
    let frr = Frr::start(&p.frr, &frr_config(65002, 65001, false).render());
    let ours = Speaker::start(&p.ours, &ours_config(65001, 65002, false));
    established_both(&frr, &ours);
    ours.wait_route("10.2.0.0/24", WAIT);
    let negotiated = ours.neighbor(FRR_V4).unwrap()["negotiated"].clone();
    assert_eq!(negotiated["hold_time"], 3, "{negotiated:#}");

    let frozen = FrozenProcess::stop(frr.pid());
    let frozen_at = Instant::now();
    ours.wait_not_established(FRR_V4, Duration::from_secs(10));
    let state = ours.state(FRR_V4).unwrap_or_default();
    let detected = frozen_at.elapsed();
    assert!(
        detected >= Duration::from_secs(2) && detected <= Duration::from_secs(6),
        "hold timer of 3 s fired after {detected:?} (state {state})"
    );
    let neighbor = ours.neighbor(FRR_V4).unwrap();
    let error = neighbor["last_error"].as_str().unwrap_or_default().to_lowercase();
    assert!(error.contains("hold"), "last_error names the hold timer: {neighbor:#}");
    ours.wait_no_route("10.2.0.0/24", WAIT);
    wait_no_fib(&ours, "10.2.0.0/24");
    drop(frozen);

    // FRR reads our NOTIFICATION (4/0) when it runs again.
    let deadline = Instant::now() + WAIT;
    loop {
        let n = frr.neighbor(OURS_V4);
        let reason = n["lastResetDueTo"].as_str().unwrap_or_default().to_string();
        let notification = n["lastNotificationReason"].as_str().unwrap_or_default().to_string();
        if reason.contains("Notification received") || notification.contains("Hold Timer Expired") {
            break;
        }
        assert!(Instant::now() < deadline, "FRR did not see our NOTIFICATION: {n:#}");
        std::thread::sleep(Duration::from_millis(200));
    }
    established_both(&frr, &ours);
    ours.wait_route("10.2.0.0/24", WAIT);
}

/// Our keepalives keep FRR's hold timer from expiring, and when we are
/// frozen FRR's does expire.
#[test]
fn keepalives_and_frr_hold_timer() {
    if !frr_available("bgp_frr keepalives_and_frr_hold_timer") {
        return;
    }
    let p = pair();
    let frr = Frr::start(&p.frr, &frr_config(65002, 65001, false).render());
    let ours = Speaker::start(&p.ours, &ours_config(65001, 65002, false));
    established_both(&frr, &ours);
    // Several hold times pass without a reset.
    std::thread::sleep(Duration::from_secs(8));
    let n = frr.neighbor(OURS_V4);
    assert_eq!(n["bgpState"], "Established", "{n:#}");
    assert_eq!(n["connectionsDropped"], 0, "{n:#}");

    let frozen = FrozenProcess::stop(ours.pid());
    let deadline = Instant::now() + Duration::from_secs(10);
    while frr.neighbor_state(OURS_V4).as_deref() == Some("Established") {
        assert!(Instant::now() < deadline, "FRR's hold timer did not expire");
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(frozen);
    assert!(ours.status().is_some());
    established_both(&frr, &ours);
}

/// NOTIFICATIONs from FRR: `neighbor shutdown` (Cease, Administrative
/// Shutdown) takes the session down and its routes out until `no neighbor
/// shutdown`; `clear bgp *` (Cease, Administrative Reset) resets every
/// session, which comes back with its routes.
#[test]
fn notification_from_frr() {
    if !frr_available("bgp_frr notification_from_frr") {
        return;
    }
    let p = pair();
    let frr = Frr::start(&p.frr, &frr_config(65002, 65001, false).render());
    let ours = Speaker::start(&p.ours, &ours_config(65001, 65002, false));
    established_both(&frr, &ours);
    ours.wait_route("10.2.0.0/24", WAIT);
    ours.wait_route("fd00:2::/48", WAIT);
    let received_before = ours.neighbor(FRR_V4).unwrap()["counters"].clone();

    frr.configure(&["router bgp 65002", &format!("neighbor {OURS_V4} shutdown")]);
    ours.wait_not_established(FRR_V4, WAIT);
    let neighbor = ours.neighbor(FRR_V4).unwrap();
    let error = neighbor["last_error"].as_str().unwrap_or_default().to_lowercase();
    assert!(error.contains("cease") || error.contains("shutdown"), "last_error: {neighbor:#}");
    ours.wait_no_route("10.2.0.0/24", WAIT);
    wait_no_fib(&ours, "10.2.0.0/24");
    assert!(ours.route("fd00:2::/48").is_some(), "the IPv6 session is not affected");
    // While shut down FRR refuses us; we keep trying without crashing.
    std::thread::sleep(Duration::from_secs(3));
    assert_ne!(ours.state(FRR_V4).as_deref(), Some("Established"));

    frr.configure(&["router bgp 65002", &format!("no neighbor {OURS_V4} shutdown")]);
    ours.wait_established(FRR_V4, WAIT);
    ours.wait_route("10.2.0.0/24", WAIT);
    eprintln!("counters before: {received_before}");

    frr.vtysh(&["clear bgp *"]);
    // Both sessions reset (Cease/Administrative Reset) and come back.
    let deadline = Instant::now() + WAIT;
    loop {
        let v4 = ours.neighbor(FRR_V4).unwrap();
        let v6 = ours.neighbor(FRR_V6).unwrap();
        let reset = |n: &Value| {
            n["last_error"].as_str().unwrap_or_default().to_lowercase().contains("reset")
                || n["counters"]["established_transitions"].as_u64() >= Some(2)
        };
        if reset(&v4) && reset(&v6) && v4["state"] == "Established" && v6["state"] == "Established" {
            break;
        }
        assert!(Instant::now() < deadline, "after clear bgp *: {v4:#}\n{v6:#}");
        std::thread::sleep(Duration::from_millis(200));
    }
    ours.wait_route("10.2.0.0/24", WAIT);
    ours.wait_route("fd00:2::/48", WAIT);
    frr.wait_route("10.1.0.0/24", WAIT, |_| true);
}

/// A process stopped with SIGSTOP until this guard drops (SIGCONT), so a
/// failing test never leaves it frozen.
struct FrozenProcess(u32);

impl FrozenProcess {
    fn stop(pid: u32) -> FrozenProcess {
        // SAFETY: kill has no memory preconditions.
        assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGSTOP) }, 0);
        FrozenProcess(pid)
    }
}

impl Drop for FrozenProcess {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::kill(self.0 as i32, libc::SIGCONT) };
    }
}
