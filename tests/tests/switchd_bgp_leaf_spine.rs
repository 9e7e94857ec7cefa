//! A three-stage leaf-spine of `switchd`s, one per namespace, with BGP in
//! the daemons: two spines sharing AS 65000, two leaves with their own ASes
//! (65101, 65102), eBGP over the /31 links, neighbours given by interface
//! (the spines with `remote_as: external`).
//! Each leaf originates its loopback and its host subnet. The sessions run
//! over kernel TCP through the switches' host interfaces, so the dataplane
//! carries them.
//!
//! ```text
//!            [s1 AS65000]          [s2 AS65000]
//!            eth1     eth2         eth1     eth2
//!   10.1.1.0/31 \       \ 10.2.1.0/31   /      / 10.2.2.0/31
//!                \   10.1.2.0/31 ------/      /
//!            eth1 eth2                   eth1 eth2
//!            [l1 AS65101]               [l2 AS65102]
//!              eth3 192.168.1.1/24        eth3 192.168.2.1/24
//!              [h1 .10]                   [h2 .10]
//! ```
//!
//! Dual stack: IPv6 sessions on the links' /127s carry the IPv6 loopbacks
//! and host subnets.
//!
//! A second run numbers the other common way: both leaves in AS 65100
//! (accepting their own AS once), each spine in its own AS.
//!
//! Checked: every session reaches Established (`show bgp summary --json`);
//! each leaf installs the other leaf's loopback and host subnet as an ECMP
//! route through both spines (`show ip route --json`, protocol bgp, two
//! active next hops); `show bgp ipv4 unicast` has the best path and its
//! multipath; hosts ping across; many UDP flows from h1 to h2 leave l1 over
//! both uplinks (`show interfaces --json` tx counters).
//!
//! One test body for both backends (`backend:` in every switch's config):
//! on the kernel backend the sessions run over the kernel's own ports and
//! the routes are the kernel FIB's.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use fabric_tests::{Netns, Switchd, require_root_and_tools, swcli_json, veth};
use serde_json::Value;

const CONVERGE: Duration = Duration::from_secs(60);

/// Who has which AS: leaves with their own ASes under spines sharing one,
/// or leaves sharing one under spines with their own (then the leaves
/// accept their own AS once, and ECMP needs as-path multipath relax).
#[derive(Clone, Copy)]
struct Asns {
    spine: [u32; 2],
    leaf: [u32; 2],
    allow_own_as: u8,
}

const SPINES_SHARE: Asns = Asns { spine: [65000, 65000], leaf: [65101, 65102], allow_own_as: 0 };
const LEAVES_SHARE: Asns = Asns { spine: [65001, 65002], leaf: [65100, 65100], allow_own_as: 1 };

fn spine(name: &str, asns: Asns) -> String {
    let j: u8 = name[1..].parse().unwrap();
    let (asn, [l1, l2]) = (asns.spine[usize::from(j) - 1], asns.leaf);
    format!(
        "name: {name}
lldp: {{ enabled: false }}
loopback: [10.255.1.{j}/32]
ports:
  - {{ name: eth1, mode: routed, addresses: [10.1.{j}.1/31, \"fd00:1{j}::3/127\"] }}
  - {{ name: eth2, mode: routed, addresses: [10.2.{j}.1/31, \"fd00:2{j}::3/127\"] }}
bgp:
  asn: {asn}
  timers: {{ hold_time: 9, connect_retry: 2 }}
  redistribute: [loopback]
  neighbors:
    - {{ interface: eth1, remote_as: external, description: l1 }}
    - {{ interface: eth2, remote_as: external, description: l2 }}
    - {{ address: \"fd00:1{j}::2\", remote_as: {l1}, description: l1 }}
    - {{ address: \"fd00:2{j}::2\", remote_as: {l2}, description: l2 }}
"
    )
}

fn leaf(name: &str, asns: Asns) -> String {
    let i: u8 = name[1..].parse().unwrap();
    let (asn, [s1, s2], allow) = (asns.leaf[usize::from(i) - 1], asns.spine, asns.allow_own_as);
    format!(
        "name: {name}
lldp: {{ enabled: false }}
loopback: [10.255.0.{i}/32, \"fd00:ff::{i}/128\"]
ports:
  - {{ name: eth1, mode: routed, addresses: [10.{i}.1.0/31, \"fd00:{i}1::2/127\"] }}
  - {{ name: eth2, mode: routed, addresses: [10.{i}.2.0/31, \"fd00:{i}2::2/127\"] }}
  - {{ name: eth3, mode: routed, addresses: [192.168.{i}.1/24, \"fd00:{i}::1/64\"] }}
bgp:
  asn: {asn}
  timers: {{ hold_time: 9, connect_retry: 2 }}
  multipath: {{ max_paths: 4 }}
  redistribute: [loopback, connected]
  neighbors:
    - {{ interface: eth1, remote_as: {s1}, description: s1, allow_own_as: {allow} }}
    - {{ interface: eth2, remote_as: {s2}, description: s2, allow_own_as: {allow} }}
    - {{ address: \"fd00:{i}1::3\", remote_as: {s1}, description: s1, allow_own_as: {allow} }}
    - {{ address: \"fd00:{i}2::3\", remote_as: {s2}, description: s2, allow_own_as: {allow} }}
"
    )
}

/// Whether every neighbour in `show bgp summary --json` is Established.
fn all_established(sw: &Switchd, want: usize) -> bool {
    let (ok, out, _) = sw.swcli_status(&["show", "bgp", "summary", "--json"]);
    if !ok {
        return false;
    }
    let summary: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    let peers = summary["peers"].as_array().cloned().unwrap_or_default();
    peers.len() == want && peers.iter().all(|p| p["state"] == "Established")
}

/// The `show ip route --json` (or `ipv6 route`) entry for `prefix`.
fn ip_route(sw: &Switchd, prefix: &str) -> Option<Value> {
    let family = if prefix.contains(':') { "ipv6" } else { "ip" };
    let out = sw.swcli(&["show", family, "route", "--json"]);
    let routes: Value = serde_json::from_str(&out).expect("json");
    routes.as_array()?.iter().find(|r| r["prefix"] == prefix).cloned()
}

/// The active next hops (`ip@interface`) of a BGP route, sorted.
fn bgp_hops(route: &Value) -> Vec<String> {
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

/// Waits until `prefix` is a BGP route through exactly `want`.
#[track_caller]
fn wait_hops(sw: &Switchd, prefix: &str, want: &[String]) {
    wait_hops_within(sw, prefix, want, CONVERGE);
}

#[track_caller]
fn wait_hops_within(sw: &Switchd, prefix: &str, want: &[String], timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let route = ip_route(sw, prefix);
        if route.as_ref().map(bgp_hops).as_deref() == Some(want) {
            return;
        }
        assert!(Instant::now() < deadline, "{prefix} not through {want:?} after {timeout:?}; last seen {route:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// 64 UDP flows of 20 datagrams from h1 to h2 (source ports vary).
fn send_flows(h1: &Netns) -> u64 {
    const FLOWS: u64 = 64;
    const PER_FLOW: u64 = 20;
    h1.enter(|| {
        for flow in 0..FLOWS {
            let socket = UdpSocket::bind(("192.168.1.10", 30_000 + flow as u16)).expect("bind");
            for _ in 0..PER_FLOW {
                socket.send_to(b"leaf-spine flow", "192.168.2.10:9").expect("send");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    std::thread::sleep(Duration::from_millis(800));
    FLOWS * PER_FLOW
}

fn tx(sw: &Switchd, port: &str) -> u64 {
    sw.counter(port, "tx_packets")
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn switchd_leaf_spine_converges_and_spreads_flows_over_both_spines() {
    if !require_root_and_tools("switchd_bgp_leaf_spine", &["ip", "ping"]) {
        return;
    }
    leaf_spine("ls", SPINES_SHARE, true, "soft");
}

#[test]
fn switchd_leaf_spine_on_the_kernel_backend_converges_and_spreads_flows_over_both_spines() {
    if !require_root_and_tools("switchd_bgp_leaf_spine", &["ip", "ping"]) {
        return;
    }
    leaf_spine("ks", SPINES_SHARE, true, "kernel");
}

/// The other common numbering: both leaves in AS 65100 (`allow_own_as: 1`),
/// each spine in its own AS; ECMP through AS paths `65001 65100` and
/// `65002 65100` needs as-path multipath relax.
#[test]
fn switchd_leaf_spine_with_shared_leaf_asn_uses_as_path_relax() {
    if !require_root_and_tools("switchd_bgp_leaf_spine", &["ip", "ping"]) {
        return;
    }
    leaf_spine("lt", LEAVES_SHARE, false, "soft");
}

#[test]
fn switchd_leaf_spine_on_the_kernel_backend_with_shared_leaf_asn_uses_as_path_relax() {
    if !require_root_and_tools("switchd_bgp_leaf_spine", &["ip", "ping"]) {
        return;
    }
    leaf_spine("kt", LEAVES_SHARE, false, "kernel");
}

/// Builds the fabric with namespaces tagged `tag` (2 letters) and checks it;
/// with `spine_loss`, also stops spine 1 and checks the fallback. Every
/// switch runs on `backend`.
fn leaf_spine(tag: &str, asns: Asns, spine_loss: bool, backend: &str) {
    let ns = |name: &str| Netns::new(&format!("{tag}{name}"));
    let (s1, s2, l1, l2, h1, h2) = (ns("s1"), ns("s2"), ns("l1"), ns("l2"), ns("h1"), ns("h2"));
    // Leaf i's eth j goes to spine j's eth i.
    for (i, leaf_ns) in [(1, &l1), (2, &l2)] {
        for (j, spine_ns) in [(1, &s1), (2, &s2)] {
            veth(leaf_ns, &format!("eth{j}"), spine_ns, &format!("eth{i}"));
            leaf_ns.disable_offloads(&format!("eth{j}"));
            spine_ns.disable_offloads(&format!("eth{i}"));
        }
    }
    veth(&h1, "eth0", &l1, "eth3");
    veth(&h2, "eth0", &l2, "eth3");
    l1.disable_offloads("eth3");
    l2.disable_offloads("eth3");
    h1.host_setup("eth0", "192.168.1.10/24", Some("192.168.1.1"));
    h2.host_setup("eth0", "192.168.2.10/24", Some("192.168.2.1"));
    for (i, h) in [(1, &h1), (2, &h2)] {
        h.ip(&["-6", "addr", "add", &format!("fd00:{i}::10/64"), "dev", "eth0", "nodad"]);
        h.ip(&["-6", "route", "add", "default", "via", &format!("fd00:{i}::1")]);
    }

    // Declared after the namespaces: dropped (SIGTERM) before them.
    let start = |ns: &Netns, config: String| Switchd::start(ns, &format!("backend: {backend}\n{config}"));
    let spines = [start(&s1, spine("s1", asns)), start(&s2, spine("s2", asns))];
    let leaves = [start(&l1, leaf("l1", asns)), start(&l2, leaf("l2", asns))];

    for sw in spines.iter().chain(&leaves) {
        wait_for("every BGP session Established", CONVERGE, || all_established(sw, 4));
    }

    // Each leaf: the other leaf's loopback and host subnet through both spines.
    for (i, sw) in leaves.iter().enumerate() {
        let (me, other) = (i + 1, 2 - i);
        let want = vec![format!("10.{me}.1.1@eth1"), format!("10.{me}.2.1@eth2")];
        for prefix in [format!("10.255.0.{other}/32"), format!("192.168.{other}.0/24")] {
            wait_hops(sw, &prefix, &want);
        }
        // IPv6 over the IPv6 sessions, next hops the spines' /127 addresses.
        let want6 = vec![format!("fd00:{me}1::3@eth1"), format!("fd00:{me}2::3@eth2")];
        for prefix in [format!("fd00:ff::{other}/128"), format!("fd00:{other}::/64")] {
            wait_hops(sw, &prefix, &want6);
        }
        let table = swcli_json(&sw.swcli(&["show", "bgp", "ipv6", "unicast", "--json"]));
        let remote =
            table["routes"].as_array().unwrap().iter().find(|r| r["prefix"] == format!("fd00:ff::{other}/128"));
        assert_eq!(remote.map(|r| r["paths"].as_array().unwrap().len()), Some(2), "{table}");
        // The BGP table agrees: a best path and a second multipath, one through each spine.
        let table =
            swcli_json(&sw.swcli(&["show", "bgp", "ipv4", "unicast", &format!("10.255.0.{other}/32"), "--json"]));
        let paths = table["routes"][0]["paths"].as_array().cloned().unwrap_or_default();
        assert_eq!(paths.len(), 2, "{table}");
        assert_eq!(paths.iter().filter(|p| p["best"] == true).count(), 1, "{table}");
        assert!(paths.iter().all(|p| p["multipath"] == true), "{table}");
        let via = |j: usize| format!("{} {}", asns.spine[j], asns.leaf[other - 1]);
        assert!(paths.iter().all(|p| p["as_path"] == via(0) || p["as_path"] == via(1)), "{table}");
        // The text renderings work on a live daemon.
        if me == 1 {
            // For the log: what an operator sees.
            for args in [
                &["show", "bgp", "summary"][..],
                &["show", "bgp", "neighbors", "10.1.1.1"],
                &["show", "bgp", "ipv4", "unicast"],
                &["show", "ip", "route"],
            ] {
                eprintln!("l1# swcli {}\n{}", args.join(" "), sw.swcli(args));
            }
        }
        let text = sw.swcli(&["show", "ip", "route"]);
        assert!(text.contains(&format!("B>* 10.255.0.{other}/32 [20/0] via ")), "{text}");
        let text = sw.swcli(&["show", "bgp", "summary"]);
        assert!(text.contains(&format!("local AS number {}", asns.leaf[me - 1])), "{text}");
        let text = sw.swcli(&["show", "bgp", "neighbors", &format!("10.{me}.1.1")]);
        assert!(text.contains("BGP state = Established"), "{text}");
    }
    // The spines took the leaves' ASes from their OPENs (`remote_as: external`).
    let summary = swcli_json(&spines[0].swcli(&["show", "bgp", "summary", "--json"]));
    let peer_as = |address: &str| {
        summary["peers"].as_array().unwrap().iter().find(|p| p["address"] == address).map(|p| p["remote_as"].clone())
    };
    let want = (Some(asns.leaf[0].into()), Some(asns.leaf[1].into()));
    assert_eq!((peer_as("10.1.1.0"), peer_as("10.2.1.0")), want, "{summary}");
    // The spines learn each leaf's loopback through the one session to it.
    let loopbacks = ip_route(&spines[0], "10.255.0.1/32").expect("s1 has l1's loopback");
    assert_eq!(bgp_hops(&loopbacks), ["10.1.1.0@eth1"], "{loopbacks}");

    // Hosts reach each other across the fabric (the first packets wait on ARP).
    assert!(h1.ping_until("192.168.2.10", Duration::from_secs(15)), "h1 -> h2 across the fabric");
    assert!(h1.ping_until("fd00:2::10", Duration::from_secs(15)), "h1 -> h2 over IPv6 across the fabric");

    // Many UDP flows: both uplinks of l1 carry some, and each spine passes
    // its share on to l2.
    let (l1, spine_to_l2) = (&leaves[0], |j: usize| tx(&spines[j], "eth2"));
    let before = [tx(l1, "eth1"), tx(l1, "eth2"), spine_to_l2(0), spine_to_l2(1)];
    let total = send_flows(&h1);
    let after = [tx(l1, "eth1"), tx(l1, "eth2"), spine_to_l2(0), spine_to_l2(1)];
    let delta: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    // Keepalives add a few packets; the flows must be nearly all there.
    assert!(delta[0] + delta[1] >= total * 95 / 100, "l1 uplinks carried {delta:?} of {total}");
    for (what, n) in ["l1 eth1", "l1 eth2", "s1 -> l2", "s2 -> l2"].iter().zip(&delta) {
        assert!(*n >= total / 10, "{what} carried {n} of {total} ({delta:?})");
    }

    if !spine_loss {
        return;
    }
    // Spine 1 stops (Cease): l1's routes to l2 shrink to spine 2, and all
    // the traffic takes it.
    let mut spines = spines;
    spines[0].stop();
    // Both leaves, the replies' way included, within 5 s: s1's Cease reached
    // each of them before its addresses went. A missed Cease shows as the
    // hold timer (9 s) doing the work instead.
    for (i, leaf) in leaves.iter().enumerate() {
        let (me, other) = (i + 1, 2 - i);
        for prefix in [format!("10.255.0.{other}/32"), format!("192.168.{other}.0/24")] {
            wait_hops_within(leaf, &prefix, &[format!("10.{me}.2.1@eth2")], Duration::from_secs(5));
        }
    }
    let l1 = &leaves[0];
    let before = [tx(l1, "eth1"), tx(l1, "eth2")];
    let total = send_flows(&h1);
    let after = [tx(l1, "eth1"), tx(l1, "eth2")];
    let delta = [after[0] - before[0], after[1] - before[1]];
    assert!(delta[1] >= total * 95 / 100, "after s1 stopped, eth2 carried {delta:?} of {total}");
    // Only session attempts toward the dead spine use eth1 now.
    assert!(delta[0] < total / 20, "after s1 stopped, eth1 still carried {delta:?} of {total}");
    let summary = swcli_json(&l1.swcli(&["show", "bgp", "summary", "--json"]));
    let s1_peer = summary["peers"].as_array().unwrap().iter().find(|p| p["address"] == "10.1.1.1").unwrap().clone();
    assert_ne!(s1_peer["state"], "Established", "{summary}");
    assert!(h1.ping_until("192.168.2.10", Duration::from_secs(5)), "h1 -> h2 through s2 alone");
}
