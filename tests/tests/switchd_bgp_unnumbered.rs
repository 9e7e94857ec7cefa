//! BGP unnumbered through `switchd`: a leaf-spine of four switches with no
//! IPv4 (nor global IPv6) address on any fabric link, loopbacks only. Each
//! fabric port is `mode: routed` without addresses and its neighbour is
//! `{ interface: ethN, remote_as: external }`: the switches find each
//! other by their router advertisements on the ports' host interfaces,
//! peer between link-local addresses, and carry IPv4 with IPv6 link-local
//! next hops (RFC 8950), which the pipeline forwards through the port the
//! neighbour was found on, its MAC from neighbour discovery.
//!
//! ```text
//!         [s1 AS65001]      [s2 AS65002]
//!          eth1  eth2        eth1  eth2
//!            |      \_______/___    |
//!            |     ________/    \   |
//!          eth1  eth2        eth1  eth2
//!         [l1 AS65101]      [l2 AS65102]
//!          eth3 192.168.1.1/24   eth3 192.168.2.1/24
//!          [h1 .10]              [h2 .10]
//! ```
//!
//! Checked: every session Established, each leaf installs the other leaf's
//! loopback and host subnet as ECMP through both spines' link-local
//! addresses (one on eth1, one on eth2), hosts ping across, and UDP flows
//! from h1 to h2 use both uplinks. The same with FRR spines (zebra and
//! bgpd, `neighbor ethN interface remote-as external`), which forward in
//! their kernels through the leaves' link-local addresses. Between
//! `switchd`s, BFD (3 x 100 ms) runs over the link-local addresses too.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use fabric_tests::frr::{Frr, frr_available};
use fabric_tests::{Netns, Switchd, require_root_and_tools, swcli_json, veth};
use serde_json::Value;

const CONVERGE: Duration = Duration::from_secs(60);

fn spine(j: u8) -> String {
    format!(
        "name: s{j}
lldp: {{ enabled: false }}
loopback: [10.255.1.{j}/32]
ports:
  - {{ name: eth1, mode: routed }}
  - {{ name: eth2, mode: routed }}
bgp:
  asn: {}
  timers: {{ hold_time: 9, connect_retry: 1 }}
  redistribute: [loopback]
  bfd: {{ transmit_interval_ms: 100, receive_interval_ms: 100 }}
  neighbors:
    - {{ interface: eth1, remote_as: external, bfd: true }}
    - {{ interface: eth2, remote_as: external, bfd: true }}
",
        65000 + u32::from(j)
    )
}

/// Leaf `i`; with `bfd`, a BFD session (3 x 100 ms) with each spine.
fn leaf(i: u8, bfd: bool) -> String {
    format!(
        "name: l{i}
lldp: {{ enabled: false }}
loopback: [10.255.0.{i}/32]
ports:
  - {{ name: eth1, mode: routed }}
  - {{ name: eth2, mode: routed }}
  - {{ name: eth3, mode: routed, addresses: [192.168.{i}.1/24] }}
bgp:
  asn: {}
  timers: {{ hold_time: 9, connect_retry: 1 }}
  multipath: {{ max_paths: 4 }}
  redistribute: [loopback, connected]
  bfd: {{ transmit_interval_ms: 100, receive_interval_ms: 100 }}
  neighbors:
    - {{ interface: eth1, remote_as: external, bfd: {bfd} }}
    - {{ interface: eth2, remote_as: external, bfd: {bfd} }}
",
        65100 + u32::from(i)
    )
}

fn established(sw: &Switchd) -> usize {
    let (ok, out, _) = sw.swcli_status(&["show", "bgp", "summary", "--json"]);
    if !ok {
        return 0;
    }
    let summary: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    summary["peers"].as_array().map_or(0, |p| p.iter().filter(|p| p["state"] == "Established").count())
}

/// The active next hops of the BGP route to `prefix`, as (ip, interface).
fn bgp_hops(sw: &Switchd, prefix: &str) -> Vec<(String, String)> {
    let routes = swcli_json(&sw.swcli(&["show", "ip", "route", "--json"]));
    let Some(route) = routes.as_array().and_then(|r| r.iter().find(|r| r["prefix"] == prefix)).cloned() else {
        return Vec::new();
    };
    if route["protocol"] != "bgp" || route["installed"] != true {
        return Vec::new();
    }
    let mut hops: Vec<(String, String)> = route["next_hops"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|h| h["active"] == true)
        .map(|h| (h["ip"].as_str().unwrap_or("-").to_owned(), h["interface"].as_str().unwrap_or("-").to_owned()))
        .collect();
    hops.sort_by(|a, b| a.1.cmp(&b.1));
    hops
}

#[track_caller]
fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn tx(sw: &Switchd, port: &str) -> u64 {
    sw.counter(port, "tx_packets")
}

/// bgpd.conf of FRR spine `j`: both leaves by interface.
fn frr_spine(j: u8) -> String {
    let mut c = format!(
        "frr defaults datacenter\nhostname s{j}\nlog stdout informational\nrouter bgp {}\n bgp router-id 10.255.1.{j}\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n",
        65000 + u32::from(j)
    );
    for port in ["eth1", "eth2"] {
        c.push_str(&format!(
            " neighbor {port} interface remote-as external\n neighbor {port} timers 3 9\n neighbor {port} timers connect 1\n"
        ));
    }
    for afi in ["ipv4", "ipv6"] {
        c.push_str(&format!(
            " address-family {afi} unicast\n  neighbor eth1 activate\n  neighbor eth2 activate\n exit-address-family\n"
        ));
    }
    c.push_str("exit\n");
    c
}

#[test]
fn switchd_unnumbered_leaf_spine_converges_and_forwards_ipv4_over_link_local_next_hops() {
    if !require_root_and_tools("switchd_bgp_unnumbered", &["ip", "ping"]) {
        return;
    }
    unnumbered_leaf_spine("un", false);
}

#[test]
fn switchd_unnumbered_leaves_under_frr_spines_configured_by_interface() {
    if !frr_available("switchd_unnumbered_leaves_under_frr_spines") {
        return;
    }
    unnumbered_leaf_spine("uf", true);
}

/// Spines of `switchd`, or of FRR (`frr_spines`), over leaves of `switchd`.
fn unnumbered_leaf_spine(tag: &str, frr_spines: bool) {
    let ns = |name: &str| Netns::new(&format!("{tag}{name}"));
    let (s1, s2, l1, l2, h1, h2) = (ns("s1"), ns("s2"), ns("l1"), ns("l2"), ns("h1"), ns("h2"));
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

    let (mut switch_spines, mut frrs) = (Vec::new(), Vec::new());
    for (j, spine_ns) in [(1, &s1), (2, &s2)] {
        if frr_spines {
            spine_ns.sysctl("net.ipv4.ip_forward", "1");
            spine_ns.sysctl("net.ipv6.conf.all.forwarding", "1");
            frrs.push(Frr::start_with_zebra(spine_ns, &frr_spine(j)));
        } else {
            switch_spines.push(Switchd::start(spine_ns, &spine(j)));
        }
    }
    let leaves = [Switchd::start(&l1, &leaf(1, !frr_spines)), Switchd::start(&l2, &leaf(2, !frr_spines))];
    for sw in switch_spines.iter().chain(&leaves) {
        wait_for("both sessions Established", CONVERGE, || established(sw) == 2);
    }
    for frr in &frrs {
        wait_for("FRR's sessions Established", CONVERGE, || {
            ["eth1", "eth2"].iter().all(|p| frr.neighbor_state(p).as_deref() == Some("Established"))
        });
    }
    let summary = swcli_json(&leaves[0].swcli(&["show", "bgp", "summary", "--json"]));
    for peer in summary["peers"].as_array().unwrap() {
        let address = peer["address"].as_str().unwrap();
        assert!(address.starts_with("fe80:"), "the session runs between link-local addresses: {summary}");
    }
    eprintln!("l1# swcli show bgp summary\n{}", leaves[0].swcli(&["show", "bgp", "summary"]));
    if !frr_spines {
        // BFD runs between the link-local addresses too, one session per port.
        wait_for("BFD up with both spines", CONVERGE, || {
            let peers = swcli_json(&leaves[0].swcli(&["show", "bfd", "peers", "--json"]))["peers"].clone();
            peers.as_array().is_some_and(|p| {
                p.len() == 2
                    && p.iter()
                        .all(|p| p["state"] == "up" && p["peer"].as_str().is_some_and(|a| a.starts_with("fe80:")))
            })
        });
        eprintln!("l1# swcli show bfd peers\n{}", leaves[0].swcli(&["show", "bfd", "peers"]));
    }

    for (i, sw) in leaves.iter().enumerate() {
        let other = 2 - i;
        for prefix in [format!("10.255.0.{other}/32"), format!("192.168.{other}.0/24")] {
            wait_for(&format!("{prefix} through both spines"), CONVERGE, || {
                let hops = bgp_hops(sw, &prefix);
                hops.len() == 2
                    && hops.iter().all(|(ip, _)| ip.starts_with("fe80:"))
                    && hops.iter().map(|(_, port)| port.as_str()).eq(["eth1", "eth2"])
            });
        }
    }
    eprintln!("l1# swcli show ip route\n{}", leaves[0].swcli(&["show", "ip", "route"]));

    assert!(h1.ping_until("192.168.2.10", Duration::from_secs(20)), "h1 -> h2 across the unnumbered fabric");
    assert!(h1.ping("192.168.2.10", 5), "h1 -> h2, every ping");

    // 64 UDP flows: both of l1's uplinks carry some.
    let l1 = &leaves[0];
    let before = [tx(l1, "eth1"), tx(l1, "eth2")];
    h1.enter(|| {
        for flow in 0..64u16 {
            let socket = UdpSocket::bind(("192.168.1.10", 32_000 + flow)).expect("bind");
            for _ in 0..10 {
                socket.send_to(b"unnumbered flow", "192.168.2.10:9").expect("send");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    let delta = [tx(l1, "eth1") - before[0], tx(l1, "eth2") - before[1]];
    assert!(delta[0] + delta[1] >= 608, "l1's uplinks carried {delta:?} of 640");
    assert!(delta.iter().all(|&n| n >= 64), "both uplinks carry flows: {delta:?}");
}
