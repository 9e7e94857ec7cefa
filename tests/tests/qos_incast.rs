//! Incast 3:1 into one `switchd` egress with emulated line rates, senders
//! `fabric-host` (RoCE-like, obeying PFC):
//!
//! ```text
//!  [h1] 10.1.0.2 -- eth1 [switch] eth4 -- 10.4.0.2 [h4] (fabric-host recv)
//!  [h2] 10.2.0.2 -- eth2          all ports 20 Mb/s
//!  [h3] 10.3.0.2 -- eth3
//! ```
//!
//! On the lossless priority (DSCP 26 -> TC 3, PFC on) nothing is lost: the
//! receiver gets every byte, the traffic manager drops nothing, the switch
//! sends PFC frames to the senders (tshark decodes them on h1's link:
//! priority 3, quanta 65535 or 0) and the senders count the pauses they
//! obeyed; the bottleneck runs near its line rate. The same load on a lossy
//! priority (DSCP 8 -> TC 1) is dropped and counted by the queue.
//!
//! The PFC response time in the config is 20 ms: the emulated hosts react
//! to a PFC frame when their process next runs, not within 1 us as a NIC
//! does, and the headroom must cover what they send meanwhile.
//!
//! The ports run at 20 Mb/s (4 KiB frames: about 600 a second out of eth4,
//! 1,800 offered) so that a debug `switchd` on a loaded two-core machine
//! forwards many times faster than its egress drains: the queue then builds
//! in its traffic manager, not in the kernel's socket rings, and PFC, the
//! drops and the goodput are the traffic manager's.

use std::time::Duration;

use fabric_tests::fabric_host::{
    FabricHost, pfc_row, queue_row, show, start_at, tm_drops, u64_of, wait_capture_started,
};
use fabric_tests::{Netns, Switchd, require_root_and_tools, veth};

/// Every port's line rate, and each sender's paced rate (3:1 into eth4).
const SPEED: u64 = 20_000_000;
const SPEED_YAML: &str = "20M";
/// Each sender's message: the three take about 2.5 s through eth4.
const BYTES: u64 = 2 << 20;

fn config() -> String {
    let mut yaml = String::from("name: incast\nports:\n");
    for n in 1..=4 {
        yaml.push_str(&format!(
            "  - {{name: eth{n}, mode: routed, addresses: [10.{n}.0.1/24], mtu: 9100, speed: {SPEED_YAML}, cable-length: 5}}\n"
        ));
    }
    yaml.push_str("qos:\n  preset: roce\n  pfc: {priorities: [3, 4], response-ns: 20000000, rx-lag-ns: 40000000}\n  pool: {size-bytes: 3145728, cell-bytes: 256}\n");
    // The switch under test at SCHED_FIFO: its forwarding thread is not
    // kept off the CPU by the machine's other work (docs/benchmarks.md).
    yaml.push_str("forwarding: {realtime_priority: 10}\n");
    yaml
}

struct Lab {
    _hosts: Vec<Netns>,
    hosts: Vec<Netns>,
    switchd: Switchd,
    _sw: Netns,
}

fn lab() -> Lab {
    let sw = Netns::new("qis");
    let hosts: Vec<Netns> = (1..=4).map(|n| Netns::new(&format!("qih{n}"))).collect();
    for (i, host) in hosts.iter().enumerate() {
        let n = i + 1;
        veth(host, "eth1", &sw, &format!("eth{n}"));
        host.ip(&["link", "set", "eth1", "mtu", "9100"]);
        sw.ip(&["link", "set", &format!("eth{n}"), "mtu", "9100"]);
        host.host_setup("eth1", &format!("10.{n}.0.2/24"), Some(&format!("10.{n}.0.1")));
    }
    let switchd = Switchd::start(&sw, &config());
    for (i, host) in hosts.iter().enumerate() {
        assert!(host.ping_until(&format!("10.{}.0.1", i + 1), Duration::from_secs(10)), "h{} -> gateway", i + 1);
    }
    Lab { _hosts: Vec::new(), hosts, switchd, _sw: sw }
}

/// Three senders at line rate on `dscp` into h4; the receiver's and the
/// senders' reports.
fn incast(lab: &Lab, dscp: u8) -> (serde_json::Value, Vec<serde_json::Value>) {
    let expect = (3 * BYTES).to_string();
    let receiver = FabricHost::start(&lab.hosts[3], &["recv", "--expect-bytes", &expect, "--idle-ms", "1500"]);
    // All three start together, once resolved: the incast, not a ramp. (A
    // frame sent before the receiver listens is sent again by go-back-N.)
    let start_at = start_at(Duration::from_millis(2000));
    let senders: Vec<FabricHost> = (0..3)
        .map(|i| {
            FabricHost::start(
                &lab.hosts[i],
                &[
                    "send",
                    "--to",
                    "10.4.0.2",
                    "--rate",
                    SPEED_YAML,
                    "--link-speed",
                    SPEED_YAML,
                    "--bytes",
                    &BYTES.to_string(),
                    "--dscp",
                    &dscp.to_string(),
                    "--qp",
                    &(i + 1).to_string(),
                    "--start-at-unix-ms",
                    &start_at,
                ],
            )
        })
        .collect();
    let senders: Vec<serde_json::Value> = senders.into_iter().map(|s| s.report(Duration::from_secs(60))).collect();
    (receiver.report(Duration::from_secs(60)), senders)
}

#[test]
fn incast_on_the_lossless_priority_pauses_and_loses_nothing() {
    if !require_root_and_tools("qos_incast", &["ip", "ping", "tshark"]) {
        return;
    }
    let lab = lab();
    let capture_file = std::env::temp_dir().join(format!("{}.pcap", fabric_tests::unique_name("pfc")));
    let capture = lab.hosts[0].spawn(&[
        "tshark",
        "-q",
        "-i",
        "eth1",
        "-f",
        "ether proto 0x8808",
        "-w",
        capture_file.to_str().expect("utf-8"),
    ]);
    wait_capture_started(&capture_file, Duration::from_secs(20));

    let (received, senders) = incast(&lab, 26);
    // The last XON reaches the capture well before the receiver's idle time
    // has passed.
    let mut capture = capture;
    capture.stop(Duration::from_secs(5));

    // Nothing lost: every byte in order at the receiver, no drop in the switch.
    assert_eq!(u64_of(&received, "delivered_bytes"), 3 * BYTES, "receiver: {received}");
    let drops = tm_drops(&lab.switchd);
    assert!(drops.iter().all(|(_, n)| *n == 0), "traffic manager drops: {drops:?}");
    assert_eq!(u64_of(&queue_row(&lab.switchd, "eth4", 3), "drop_pkts"), 0);
    // PFC: sent to every sender on priority 3, obeyed by them.
    for (i, sender) in senders.iter().enumerate() {
        let port = format!("eth{}", i + 1);
        let row = pfc_row(&lab.switchd, &port);
        assert!(row["tx"][3].as_u64().unwrap() > 0, "no PFC sent on {port}: {row}");
        assert!(u64_of(sender, "pauses_obeyed") > 0, "h{} obeyed no pause: {sender}", i + 1);
        assert!(sender["completed"].as_bool().unwrap(), "h{}: {sender}", i + 1);
    }
    // The bottleneck ran near its line rate while the senders took turns.
    let goodput = u64_of(&received, "goodput_bps");
    assert!(
        goodput >= SPEED * 9 / 10,
        "goodput {goodput} b/s below 90% of {SPEED}: {received}\nsenders: {senders:?}\n{}\n{}",
        lab.switchd.swcli(&["show", "pfc", "counters"]),
        lab.switchd.swcli(&["show", "queue", "watermark"])
    );
    // The lossless PG used its headroom or shared share, and the watermark shows it.
    let watermarks = show(&lab.switchd, &["priority-group", "watermark", "shared"]);
    assert!(watermarks["rows"][0]["bytes"][3].as_u64().unwrap() > 0, "{watermarks}");

    // tshark reads the switch's frames on h1's link as PFC for priority 3.
    let decoded = fabric_tests::netns::run(
        "tshark",
        &[
            "-r",
            capture_file.to_str().expect("utf-8"),
            "-T",
            "fields",
            "-e",
            "macc.opcode",
            "-e",
            "macc.cbfc.enbv.c3",
            "-e",
            "macc.cbfc.pause_time.c3",
        ],
    );
    let _ = std::fs::remove_file(&capture_file);
    let frames: Vec<Vec<&str>> = decoded.lines().map(|l| l.split('\t').collect()).collect();
    assert!(!frames.is_empty(), "no MAC control frame captured on h1's link");
    for fields in &frames {
        assert_eq!(fields[0], "0x0101", "not PFC: {fields:?}");
        assert_eq!(fields[1], "1", "priority 3 not enabled: {fields:?}");
        assert!(fields[2] == "65535" || fields[2] == "0", "quanta: {fields:?}");
    }
    assert!(frames.iter().any(|f| f[2] == "65535"), "no XOFF decoded: {frames:?}");
}

#[test]
fn incast_on_a_lossy_priority_drops_and_counts() {
    if !require_root_and_tools("qos_incast", &["ip", "ping"]) {
        return;
    }
    let lab = lab();
    let (received, senders) = incast(&lab, 8);
    let queue = queue_row(&lab.switchd, "eth4", 1);
    let dropped = u64_of(&queue, "drop_pkts");
    assert!(dropped > 0, "no drop counted on eth4 UC1: {queue}");
    // The senders' RC transport (go-back-N) sends again what the queue
    // dropped: every byte arrives, at the cost of frames sent twice.
    assert_eq!(u64_of(&received, "delivered_bytes"), 3 * BYTES, "{received}");
    let again: u64 = senders.iter().map(|s| s["transport"]["retransmitted"].as_u64().unwrap()).sum();
    assert!(again >= dropped, "{dropped} dropped, {again} sent again: {senders:?}");
    let drops: u64 = tm_drops(&lab.switchd).iter().map(|(_, n)| n).sum();
    assert_eq!(drops, dropped, "queue and pool drop counts differ");
    // `show drops` names them too (the forwarding thread publishes its
    // counters every few hundred milliseconds).
    let shown = fabric_tests::wait::poll_until(Duration::from_secs(5), Duration::from_millis(100), || {
        let rows = show(&lab.switchd, &["drops"]);
        let row =
            rows.as_array()?.iter().find(|r| r["reason"] == "traffic-manager" && r["interface"].is_null())?.clone();
        (row["packets"].as_u64() == Some(dropped)).then_some(row)
    });
    assert!(shown.is_some(), "show drops: {}", show(&lab.switchd, &["drops"]));
    for (i, sender) in senders.iter().enumerate() {
        assert_eq!(u64_of(sender, "pauses_obeyed"), 0, "h{} paused on a lossy priority: {sender}", i + 1);
        let row = pfc_row(&lab.switchd, &format!("eth{}", i + 1));
        assert!(row["tx"].as_array().unwrap().iter().all(|n| n == 0), "PFC sent for lossy traffic: {row}");
    }
}
