//! BFD (RFC 5880, single hop RFC 5881) between `switchd` and FRR's `bfdd`,
//! protecting eBGP sessions to FRR's `bgpd`: a leaf with two FRR spines
//! that both announce one anycast address, so the leaf has an ECMP pair.
//!
//! ```text
//!   [fr1 AS65001: bgpd + bfdd]      [fr2 AS65002: bgpd + bfdd]
//!    eth1 10.1.1.1/31                eth1 10.1.2.1/31
//!    lo 10.99.0.1/32                 lo 10.99.0.1/32
//!          |                               |
//!    eth1 10.1.1.0/31                eth2 10.1.2.0/31
//!                [l1 switchd AS65100, bfd 3 x 100 ms]
//!                 eth3 192.168.1.1/24 --- [h1 .10]
//! ```
//!
//! Checked: both BFD sessions come up at 3 x 100 ms on both sides
//! (`swcli show bfd peers --json`, `vtysh show bfd peers json`), with TTL
//! 255 on the wire (no packet refused by the GTSM check); the leaf routes
//! 10.99.0.1 over both spines and flows use both. Then the link to the
//! spine carrying h1's ping goes down on FRR's side: the leaf's BFD
//! session goes Down for "control detection time expired" after at most
//! the detection time (plus the task's wake-up) of silence, the BGP session
//! to that spine drops for BFD Down (not its 9 s hold timer), the route
//! shrinks to the other spine and the flows follow; the ping's loss is
//! printed. With the link back, BFD and BGP come back and ECMP returns.

use std::net::UdpSocket;
use std::process::Stdio;
use std::time::{Duration, Instant};

use fabric_tests::frr::{Bfdd, Frr, FrrConfig, FrrNeighbor, frr_available};
use fabric_tests::{Netns, Switchd, swcli_json, veth};
use serde_json::Value;

const CONVERGE: Duration = Duration::from_secs(60);
const ANYCAST: &str = "10.99.0.1";
/// 3 x 100 ms: what fabrics run.
const INTERVAL_MS: u64 = 100;
const MULTIPLIER: u64 = 3;
/// How much later than the detection time the session may go Down: the
/// task's timer wake-up on a loaded two-core machine. The issue's bound
/// is 500 ms from the cut.
const WAKE_MARGIN_MS: u64 = 200;

fn leaf_config() -> String {
    format!(
        "name: l1
lldp: {{ enabled: false }}
loopback: [10.255.0.1/32]
ports:
  - {{ name: eth1, mode: routed, addresses: [10.1.1.0/31] }}
  - {{ name: eth2, mode: routed, addresses: [10.1.2.0/31] }}
  - {{ name: eth3, mode: routed, addresses: [192.168.1.1/24] }}
bgp:
  asn: 65100
  timers: {{ hold_time: 9, connect_retry: 1 }}
  multipath: {{ max_paths: 4 }}
  bfd: {{ transmit_interval_ms: {INTERVAL_MS}, receive_interval_ms: {INTERVAL_MS}, detect_multiplier: {MULTIPLIER} }}
  fast_external_fallover: false
  redistribute: [loopback, connected]
  neighbors:
    - {{ interface: eth1, remote_as: 65001, bfd: true }}
    - {{ interface: eth2, remote_as: 65002, bfd: true }}
"
    )
}

fn spine_bgp(j: u32) -> String {
    let mut n = FrrNeighbor::new(&format!("10.1.{j}.0"), 65100);
    // Hold time 9 s: only BFD can drop the session within a second.
    n.timers = Some((3, 9));
    n.families = vec![fabric_tests::frr::Afi::Ipv4];
    FrrConfig::new(65000 + j, &format!("10.0.0.{j}")).neighbor(n).network(&format!("{ANYCAST}/32")).render()
}

fn bfd_peers(sw: &Switchd) -> Vec<Value> {
    let v = swcli_json(&sw.swcli(&["show", "bfd", "peers", "--json"]));
    v["peers"].as_array().cloned().unwrap_or_default()
}

fn bfd_peer(sw: &Switchd, peer: &str) -> Value {
    bfd_peers(sw).into_iter().find(|p| p["peer"] == peer).unwrap_or(Value::Null)
}

fn bgp_neighbor(sw: &Switchd, peer: &str) -> Value {
    let v = swcli_json(&sw.swcli(&["show", "bgp", "neighbors", peer, "--json"]));
    v.as_array().and_then(|a| a.first().cloned()).unwrap_or(Value::Null)
}

/// The active next hops (`ip@interface`) of the BGP route to `prefix`.
fn bgp_hops(sw: &Switchd, prefix: &str) -> Vec<String> {
    let routes = swcli_json(&sw.swcli(&["show", "ip", "route", "--json"]));
    let Some(route) = routes.as_array().and_then(|r| r.iter().find(|r| r["prefix"] == prefix)).cloned() else {
        return Vec::new();
    };
    if route["protocol"] != "bgp" || route["installed"] != true {
        return Vec::new();
    }
    let mut hops: Vec<String> = route["next_hops"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|h| h["active"] == true)
        .map(|h| format!("{}@{}", h["ip"].as_str().unwrap_or("-"), h["interface"].as_str().unwrap_or("-")))
        .collect();
    hops.sort();
    hops
}

#[track_caller]
fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn rx_packets(ns: &Netns, ifname: &str) -> u64 {
    ns.exec(&["cat", &format!("/sys/class/net/{ifname}/statistics/rx_packets")]).trim().parse().unwrap_or(0)
}

/// 64 UDP flows of 10 datagrams from h1 to the anycast address.
fn send_flows(h1: &Netns) -> u64 {
    const FLOWS: u64 = 64;
    const PER_FLOW: u64 = 10;
    h1.enter(|| {
        for flow in 0..FLOWS {
            let socket = UdpSocket::bind(("192.168.1.10", 31_000 + flow as u16)).expect("bind");
            for _ in 0..PER_FLOW {
                socket.send_to(b"bfd flow", (ANYCAST, 9)).expect("send");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    FLOWS * PER_FLOW
}

#[test]
fn bfd_with_frr_drops_bgp_on_a_link_cut_and_traffic_moves_to_the_other_spine() {
    if !frr_available("bfd_frr") || !fabric_tests::require_root_and_tools("bfd_frr", &["ip", "ping"]) {
        return;
    }
    let (fr1, fr2, l1, h1) = (Netns::new("bfr1"), Netns::new("bfr2"), Netns::new("bfl1"), Netns::new("bfh1"));
    for (j, fr) in [(1u32, &fr1), (2, &fr2)] {
        veth(&l1, &format!("eth{j}"), fr, "eth1");
        l1.disable_offloads(&format!("eth{j}"));
        fr.disable_offloads("eth1");
        fr.ip(&["addr", "add", &format!("10.1.{j}.1/31"), "dev", "eth1"]);
        fr.ip(&["addr", "add", &format!("{ANYCAST}/32"), "dev", "lo"]);
        // bgpd runs without zebra: the way back to h1 is static.
        fr.ip(&["route", "add", "192.168.1.0/24", "via", &format!("10.1.{j}.0")]);
    }
    veth(&h1, "eth0", &l1, "eth3");
    l1.disable_offloads("eth3");
    h1.host_setup("eth0", "192.168.1.10/24", Some("192.168.1.1"));

    let bfdd = [
        Bfdd::start(&fr1, &[("10.1.1.0", "10.1.1.1")], INTERVAL_MS as u32, MULTIPLIER as u8),
        Bfdd::start(&fr2, &[("10.1.2.0", "10.1.2.1")], INTERVAL_MS as u32, MULTIPLIER as u8),
    ];
    let _bgpd = [Frr::start(&fr1, &spine_bgp(1)), Frr::start(&fr2, &spine_bgp(2))];
    let leaf = Switchd::start(&l1, &leaf_config());

    // Both sessions Up at 3 x 100 ms, seen from both ends.
    wait_for("both BFD sessions up on the leaf", CONVERGE, || {
        let peers = bfd_peers(&leaf);
        peers.len() == 2 && peers.iter().all(|p| p["state"] == "up")
    });
    for (j, fr) in [(1, &bfdd[0]), (2, &bfdd[1])] {
        let peer = format!("10.1.{j}.0");
        wait_for("FRR's bfdd sees the session up", CONVERGE, || {
            fr.peer(&peer).is_some_and(|p| p["status"] == "up" && p["remote-receive-interval"] == INTERVAL_MS)
        });
        let ours = bfd_peer(&leaf, &format!("10.1.{j}.1"));
        assert_eq!(ours["remote_state"], "up", "{ours}");
        assert_eq!(ours["negotiated_transmit_ms"], INTERVAL_MS, "{ours}");
        assert_eq!(ours["detection_time_ms"], INTERVAL_MS * MULTIPLIER, "{ours}");
        assert_eq!(ours["remote_detect_multiplier"], MULTIPLIER, "{ours}");
        assert_ne!(ours["remote_discriminator"], 0, "{ours}");
    }
    eprintln!("l1# swcli show bfd peers\n{}", leaf.swcli(&["show", "bfd", "peers"]));

    // ECMP over both spines, and flows on both.
    let both = vec!["10.1.1.1@eth1".to_owned(), "10.1.2.1@eth2".to_owned()];
    wait_for("ECMP to the anycast address over both spines", CONVERGE, || bgp_hops(&leaf, "10.99.0.1/32") == both);
    assert!(h1.ping_until(ANYCAST, Duration::from_secs(15)), "h1 reaches the anycast address");
    let before = [rx_packets(&fr1, "eth1"), rx_packets(&fr2, "eth1")];
    let total = send_flows(&h1);
    let delta = [rx_packets(&fr1, "eth1") - before[0], rx_packets(&fr2, "eth1") - before[1]];
    for (j, n) in delta.iter().enumerate() {
        assert!(*n >= total / 10, "spine {} got {n} of {total} flows' datagrams ({delta:?})", j + 1);
    }

    // Which spine carries h1's pings (one flow, one path)?
    let before = [rx_packets(&fr1, "eth1"), rx_packets(&fr2, "eth1")];
    assert!(h1.ping(ANYCAST, 20), "h1 pings the anycast address");
    let gained = [rx_packets(&fr1, "eth1") - before[0], rx_packets(&fr2, "eth1") - before[1]];
    let cut = if gained[0] >= gained[1] { 1 } else { 2 };
    let (cut_ns, other) = if cut == 1 { (&fr1, 2) } else { (&fr2, 1) };
    let cut_peer = format!("10.1.{cut}.1");
    let up_before = bfd_peer(&leaf, &cut_peer)["up_transitions"].as_u64().unwrap_or(0);

    // Ping every 10 ms across the cut; cut FRR's end of the link.
    let ping = h1
        .command("ping")
        .args(["-n", "-q", "-i", "0.01", "-c", "300", "-W", "1", ANYCAST])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ping");
    std::thread::sleep(Duration::from_millis(500));
    // The leaf's end loses its carrier too; `fast_external_fallover: false`
    // in its config leaves the session to BFD, which is what this checks.
    cut_ns.ip(&["link", "set", "eth1", "down"]);

    wait_for("the cut spine's BFD session down", Duration::from_secs(10), || {
        bfd_peer(&leaf, &cut_peer)["state"] == "down"
    });
    let session = bfd_peer(&leaf, &cut_peer);
    assert_eq!(session["down_transitions"], 1, "{session}");
    assert_eq!(session["last_down_diagnostic"], "control detection time expired", "{session}");
    let silence = session["last_down_silence_ms"].as_u64().expect("silence measured");
    let detection = session["detection_time_ms"].as_u64().unwrap();
    eprintln!("BFD down after {silence} ms of silence (detection time {detection} ms)");
    assert!(silence >= detection.saturating_sub(INTERVAL_MS), "went down too early: {session}");
    assert!(silence <= detection + WAKE_MARGIN_MS, "detection took {silence} ms: {session}");
    // BGP to that spine dropped because BFD went down, not by its hold timer.
    let neighbor = bgp_neighbor(&leaf, &cut_peer);
    assert_ne!(neighbor["state"], "Established", "{neighbor}");
    let why = neighbor["last_error"].as_str().unwrap_or_default();
    assert!(why.starts_with("BFD down"), "BGP session dropped for {why:?}: {neighbor}");
    assert!(why.contains("control detection time expired"), "{why}");
    // The other session is untouched.
    assert_eq!(bfd_peer(&leaf, &format!("10.1.{other}.1"))["state"], "up");
    assert_eq!(bgp_neighbor(&leaf, &format!("10.1.{other}.1"))["state"], "Established");

    // Traffic moves to the other spine.
    let remaining = vec![format!("10.1.{other}.1@eth{other}")];
    wait_for("the route shrinks to the other spine", CONVERGE, || bgp_hops(&leaf, "10.99.0.1/32") == remaining);
    let output = ping.wait_with_output().expect("ping output");
    let summary = String::from_utf8_lossy(&output.stdout);
    let line = summary.lines().find(|l| l.contains("packets transmitted")).unwrap_or("no summary").to_owned();
    eprintln!("ping every 10 ms across the cut of spine {cut}: {line}");
    let received: u64 =
        line.split(", ").find_map(|part| part.strip_suffix(" received")?.parse().ok()).unwrap_or_default();
    assert!(received > 150, "the pings resumed through the other spine: {line}");
    let other_ns = if other == 1 { &fr1 } else { &fr2 };
    let before = rx_packets(other_ns, "eth1");
    let total = send_flows(&h1);
    let moved = rx_packets(other_ns, "eth1") - before;
    assert!(moved >= total * 95 / 100, "spine {other} got {moved} of {total} after the cut");

    // The link back: BFD and BGP return, and ECMP with them.
    cut_ns.ip(&["link", "set", "eth1", "up"]);
    wait_for("the BFD session back up", CONVERGE, || {
        let p = bfd_peer(&leaf, &cut_peer);
        p["state"] == "up" && p["up_transitions"].as_u64() == Some(up_before + 1)
    });
    wait_for("ECMP over both spines again", CONVERGE, || bgp_hops(&leaf, "10.99.0.1/32") == both);
    let all = swcli_json(&leaf.swcli(&["show", "bfd", "peers", "--json"]));
    assert_eq!(all["discarded_bad_ttl"], 0, "every packet arrived with TTL 255: {all}");
    assert_eq!(all["discarded_malformed"], 0, "{all}");
}
