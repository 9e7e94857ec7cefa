//! Hosts as containerlab leaves them: their veths keep the kernel's default
//! offloads (TSO/GSO, tx checksum offload), so their TCP stacks hand 64 KiB
//! super-frames to the switch's port. The port adapter cuts them into
//! MTU-sized segments; `iperf3` TCP runs through one switch and through a
//! leaf-spine path with nothing dropped for length.
//!
//! ```text
//!  one switch:  [h1] eth0 -- eth1 [sw] eth2 -- eth0 [h2]
//!  leaf-spine:  [h1] -- eth1 [leaf1] eth2 -- eth1 [spine] eth2 -- eth2 [leaf2] eth1 -- [h2]
//! ```

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dataplane::io::{AfPacket, AfPacketConfig};
use dataplane::pipeline::{PortConfig, Switch, SwitchConfig};
use fabric_tests::{Netns, Switchd, require_root_and_tools, veth};
use switchd::forwarding::{Attachment, Forwarding, HostIfTarget};

const BYTES: &str = "32M";
const BYTES_N: u64 = 32 << 20;

/// A host with an address and gateway, offloads as the kernel set them.
fn host(ns: &Netns, address: &str, gateway: Option<&str>) {
    ns.ip(&["addr", "add", address, "dev", "eth0"]);
    if let Some(gateway) = gateway {
        ns.ip(&["route", "add", "default", "via", gateway]);
    }
}

/// Runs an iperf3 TCP transfer of `BYTES` from `client` to `server_addr`:
/// the client sent all of it (TCP delivered it, or the client would still be
/// waiting), and the server had read most of it when iperf3 stopped counting
/// (it stops at the client's end-of-test message, with the tail in flight).
fn iperf3(server: &Netns, client: &Netns, server_addr: &str) {
    let mut daemon = server.spawn(&["iperf3", "-s", "-1", "-B", server_addr]);
    std::thread::sleep(Duration::from_millis(500));
    let out =
        client.exec(&["timeout", "60", "iperf3", "-c", server_addr, "-n", BYTES, "-J", "--connect-timeout", "5000"]);
    let _ = daemon.wait_timeout(Duration::from_secs(5));
    let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("iperf3 -J: {e}: {out}"));
    assert!(report.get("error").is_none(), "iperf3: {}", report["error"]);
    let sent = report["end"]["sum_sent"]["bytes"].as_u64().expect("bytes sent");
    let received = report["end"]["sum_received"]["bytes"].as_u64().expect("bytes received");
    let retransmits = report["end"]["sum_sent"]["retransmits"].as_u64().unwrap_or(0);
    eprintln!("iperf3 {server_addr}: sent {sent}, received {received}, retransmits {retransmits}");
    assert!(sent >= BYTES_N, "the whole transfer was sent: {sent}");
    assert!(received >= BYTES_N * 3 / 4, "received {received} of {BYTES_N}");
}

#[test]
fn tcp_with_default_offloads_crosses_the_forwarding_loop_cut_to_the_mtu() {
    if !require_root_and_tools("host_offloads", &["ip", "iperf3", "timeout"]) {
        return;
    }
    let sw = Netns::new("gsw");
    let h1 = Netns::new("gh1");
    let h2 = Netns::new("gh2");
    veth(&h1, "eth0", &sw, "eth1");
    veth(&h2, "eth0", &sw, "eth2");
    host(&h1, "192.0.2.1/24", None);
    host(&h2, "192.0.2.2/24", None);

    let mut switch = Switch::new(SwitchConfig::default());
    switch.create_vlan(10).unwrap();
    for port in [0, 1] {
        switch.set_port(port, PortConfig { admin_up: true, mtu: 1500, pvid: 10, learning: true }).unwrap();
        switch.set_vlan_member(10, port, false).unwrap();
        switch.set_port_oper_status(port, true);
    }
    let dataplane = Arc::new(Mutex::new(switch));
    let forwarding = sw.enter(|| {
        let ports: Vec<Attachment<HostIfTarget>> = vec![
            Attachment::Port { port: 0, io: Box::new(AfPacket::open("eth1").unwrap()) },
            Attachment::Port { port: 1, io: Box::new(AfPacket::open("eth2").unwrap()) },
        ];
        Forwarding::start(dataplane.clone(), ports).unwrap()
    });
    assert!(h1.ping_until("192.0.2.2", Duration::from_secs(5)), "h1 cannot reach h2");

    iperf3(&h2, &h1, "192.0.2.2");
    std::thread::sleep(Duration::from_millis(500));
    let stats = forwarding.device_stats();
    let eth1 = stats.iter().find(|d| d.name == "eth1").expect("eth1 stats").io;
    assert!(eth1.rx_super_frames > 0, "the sender's super-frames reached the port and were cut: {eth1:?}");
    assert_eq!(eth1.rx_truncated, 0, "nothing dropped for length: {eth1:?}");
    // What the far port sent is wire-sized frames, most of them full ones.
    let eth2 = stats.iter().find(|d| d.name == "eth2").expect("eth2 stats").io;
    assert!(eth2.tx_bytes >= BYTES_N / 2, "{eth2:?}");
    assert!(eth2.tx_bytes <= eth2.tx_frames * 1514, "a frame over the MTU left the switch: {eth2:?}");
}

#[test]
fn tcp_with_default_offloads_crosses_a_routed_leaf_spine_of_switchd() {
    if !require_root_and_tools("host_offloads", &["ip", "iperf3", "timeout"]) {
        return;
    }
    let h1 = Netns::new("gl1h");
    let h2 = Netns::new("gl2h");
    let leaf1 = Netns::new("gl1");
    let spine = Netns::new("gsp");
    let leaf2 = Netns::new("gl2");
    veth(&h1, "eth0", &leaf1, "eth1");
    veth(&leaf1, "eth2", &spine, "eth1");
    veth(&spine, "eth2", &leaf2, "eth2");
    veth(&h2, "eth0", &leaf2, "eth1");
    host(&h1, "10.1.0.2/24", Some("10.1.0.1"));
    host(&h2, "10.2.0.2/24", Some("10.2.0.1"));

    let leaf = |name: &str, host_net: &str, uplink: &str, next_hop: &str, far: &str| {
        format!(
            "name: {name}\nports:\n  - name: eth1\n    mode: routed\n    addresses: [{host_net}]\n  - name: eth2\n    mode: routed\n    addresses: [{uplink}]\nroutes:\n  - prefix: {far}\n    next_hops: [{next_hop}]\n"
        )
    };
    let _leaf1 = Switchd::start(&leaf1, &leaf("leaf1", "10.1.0.1/24", "10.0.1.0/31", "10.0.1.1", "10.2.0.0/24"));
    let _leaf2 = Switchd::start(&leaf2, &leaf("leaf2", "10.2.0.1/24", "10.0.2.0/31", "10.0.2.1", "10.1.0.0/24"));
    let spine_config = "name: spine\nports:\n  - name: eth1\n    mode: routed\n    addresses: [10.0.1.1/31]\n  - name: eth2\n    mode: routed\n    addresses: [10.0.2.1/31]\nroutes:\n  - prefix: 10.1.0.0/24\n    next_hops: [10.0.1.0]\n  - prefix: 10.2.0.0/24\n    next_hops: [10.0.2.0]\n";
    let _spine = Switchd::start(&spine, spine_config);

    assert!(h1.ping_until("10.2.0.2", Duration::from_secs(15)), "h1 cannot reach h2 over the fabric");
    iperf3(&h2, &h1, "10.2.0.2");
    // And the other way, where h2's super-frames enter leaf2.
    iperf3(&h1, &h2, "10.1.0.2");
}

/// Ring slots smaller than the MTU (what a lab of many jumbo switches uses to
/// save ring memory, `port_rings.slot_bytes`): every jumbo frame goes through
/// the socket's queue, whole (ICMP, which cannot be cut) or cut (TCP
/// super-frames), and out with `send`; nothing is dropped for length.
#[test]
fn jumbo_frames_cross_ring_slots_smaller_than_the_mtu() {
    if !require_root_and_tools("host_offloads", &["ip", "iperf3", "timeout", "ping"]) {
        return;
    }
    const MTU: u16 = 9000;
    let sw = Netns::new("jsw");
    let h1 = Netns::new("jh1");
    let h2 = Netns::new("jh2");
    veth(&h1, "eth0", &sw, "eth1");
    veth(&h2, "eth0", &sw, "eth2");
    for (ns, ifname) in [(&h1, "eth0"), (&sw, "eth1"), (&sw, "eth2"), (&h2, "eth0")] {
        ns.ip(&["link", "set", ifname, "mtu", &MTU.to_string()]);
    }
    host(&h1, "192.0.2.1/24", None);
    host(&h2, "192.0.2.2/24", None);

    let mut switch = Switch::new(SwitchConfig::default());
    switch.create_vlan(10).unwrap();
    for port in [0, 1] {
        switch.set_port(port, PortConfig { admin_up: true, mtu: MTU, pvid: 10, learning: true }).unwrap();
        switch.set_vlan_member(10, port, false).unwrap();
        switch.set_port_oper_status(port, true);
    }
    let small_slots =
        AfPacketConfig { frame_size: 1024, rx_frames: 256, tx_frames: 32, ..AfPacketConfig::for_mtu(9000) };
    let dataplane = Arc::new(Mutex::new(switch));
    let forwarding = sw.enter(|| {
        let ports: Vec<Attachment<HostIfTarget>> = vec![
            Attachment::Port { port: 0, io: Box::new(AfPacket::with_config("eth1", small_slots).unwrap()) },
            Attachment::Port { port: 1, io: Box::new(AfPacket::with_config("eth2", small_slots).unwrap()) },
        ];
        Forwarding::start(dataplane.clone(), ports).unwrap()
    });
    assert!(h1.ping_until("192.0.2.2", Duration::from_secs(5)), "h1 cannot reach h2");
    // 8,972 bytes of ICMP: an IP packet of exactly the MTU, not to be fragmented.
    let out = h1.exec(&["ping", "-M", "do", "-s", "8972", "-c", "20", "-i", "0.05", "-W", "2", "192.0.2.2"]);
    assert!(out.contains("20 received"), "jumbo echoes lost: {out}");

    iperf3(&h2, &h1, "192.0.2.2");
    std::thread::sleep(Duration::from_millis(500));
    let stats = forwarding.device_stats();
    let eth1 = stats.iter().find(|d| d.name == "eth1").expect("eth1 stats").io;
    let eth2 = stats.iter().find(|d| d.name == "eth2").expect("eth2 stats").io;
    assert_eq!((eth1.rx_truncated, eth2.rx_truncated), (0, 0), "nothing dropped for length: {eth1:?} {eth2:?}");
    assert_eq!((eth1.tx_errors, eth2.tx_errors), (0, 0), "frames longer than a slot sent: {eth1:?} {eth2:?}");
    assert!(eth2.tx_bytes >= BYTES_N / 2, "{eth2:?}");
    // Most of what left were jumbo frames, so most took the socket path.
    assert!(eth2.tx_bytes > eth2.tx_frames * 4096, "frames were not jumbo: {eth2:?}");
    assert!(eth2.tx_bytes <= eth2.tx_frames * (u64::from(MTU) + 14), "a frame over the MTU: {eth2:?}");
}
