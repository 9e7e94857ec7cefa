//! `qos:` and port speeds follow commits: the traffic manager is made
//! again from the new section while `switchd` runs (`Node::replace_traffic_manager`).
//!
//! ```text
//!  [h1] 10.1.0.2 -- eth1 [switch] eth3 -- 10.3.0.2 [h3] (fabric-host recv)
//!  [h2] 10.2.0.2 -- eth2          all ports 100 Mb/s, PFC on 3 and 4
//! ```
//!
//! A reload (SIGHUP, a commit as the daemon) drops eth3's speed to
//! 2 Mb/s: `show interfaces counters` says so, and a flow from h1 into h3
//! on queue 3 is held to 2 Mb/s by eth3's shaper (flows here run at
//! 10 Mb/s and more at 100 Mb/s), losslessly, its queue unmarked with ECN
//! off. A second reload turns ECN on with Kmin 10 KB: `show lossless
//! profile` shows it, and the same flow is now marked CE at the switch and
//! at h3.

use std::time::Duration;

use fabric_tests::fabric_host::{FabricHost, Star, send_args, show, start_at, u64_of};
use fabric_tests::require_root_and_tools;

const BYTES: u64 = 1 << 20;

fn qos(ecn: &str) -> String {
    format!(
        "qos:\n  preset: roce\n  pfc: {{priorities: [3, 4], response-ns: 20000000}}\n  \
         queues: {{3: {{scheduler: {{type: dwrr, weight: 4}}, ecn: {ecn}}}}}\n"
    )
}

const ECN_ON: &str = "{mode: profile, kmin-bytes: 10000, kmax-bytes: 400000, pmax-percent: 50}";

/// `senders` hosts each send BYTES to h3 at 100 Mb/s on DSCP 26 (queue 3);
/// the receiver's report.
fn incast(lab: &Star, senders: &[usize], bytes: u64) -> serde_json::Value {
    let expect = (bytes * senders.len() as u64).to_string();
    let receiver = FabricHost::start(lab.host(3), &["recv", "--expect-bytes", &expect, "--idle-ms", "1500"]);
    std::thread::sleep(Duration::from_millis(300));
    let start = start_at(Duration::from_millis(1000));
    let running: Vec<FabricHost> = senders
        .iter()
        .map(|&n| {
            let args = send_args("10.3.0.2", "100M", bytes, 26, n as u32, &["--start-at-unix-ms", &start]);
            FabricHost::start_owned(lab.host(n), &args)
        })
        .collect();
    for sender in running {
        sender.report(Duration::from_secs(60));
    }
    receiver.report(Duration::from_secs(60))
}

fn marked_on_eth3(lab: &Star) -> u64 {
    let wred = show(&lab.switchd, &["queue", "wredcounters"]);
    wred.as_array().unwrap().iter().find(|r| r["port"] == "eth3" && r["txq"] == "UC3").unwrap()["ecn_marked_pkts"]
        .as_u64()
        .unwrap()
}

fn pfc_sent_to(lab: &Star, port: &str) -> u64 {
    let pfc = show(&lab.switchd, &["pfc", "counters"]);
    pfc.as_array().unwrap().iter().find(|r| r["port"] == port).unwrap()["tx"][3].as_u64().unwrap()
}

#[test]
fn ecn_and_port_speed_changes_apply_to_the_running_traffic_manager() {
    if !require_root_and_tools("qos_live", &["ip", "ping"]) {
        return;
    }
    let lab = Star::start("qlv", 3, "100M", &qos("{mode: off}"));
    let pid = lab.switchd.process.id();

    // eth3 at 2 Mb/s, live: its shaper holds h1 to it, losslessly (flows
    // here run at 10 Mb/s and more at 100 Mb/s).
    let slow = |ports: &str| {
        ports.replace(
            "addresses: [10.3.0.1/24], mtu: 9100, speed: 100M",
            "addresses: [10.3.0.1/24], mtu: 9100, speed: 2M",
        )
    };
    lab.reload_with(slow, &qos("{mode: off}"));
    // Read from the running traffic manager's counters (published every
    // few tens of milliseconds).
    let eth3_speed = || {
        let counters = show(&lab.switchd, &["interfaces", "counters"]);
        counters.as_array().unwrap().iter().find(|r| r["iface"] == "eth3").unwrap()["speed_bps"].clone()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while eth3_speed() != 2_000_000u64 {
        assert!(std::time::Instant::now() < deadline, "eth3's speed shown: {}", eth3_speed());
        std::thread::sleep(Duration::from_millis(100));
    }
    let received = incast(&lab, &[1], BYTES / 4);
    assert_eq!(u64_of(&received, "delivered_bytes"), BYTES / 4, "{received}");
    let goodput = u64_of(&received, "goodput_bps");
    assert!(goodput <= 2_200_000, "eth3's shaper runs at the committed 2 Mb/s: {goodput} b/s\n{received}");
    // The queue behind the slow port marks nothing with ECN off.
    assert_eq!(marked_on_eth3(&lab), 0, "ECN is off");
    assert_eq!(u64_of(&received, "ce_marked"), 0, "{received}");
    let pfc = pfc_sent_to(&lab, "eth1");

    // ECN on, live: the same flow is marked.
    lab.reload_with(slow, &qos(ECN_ON));
    let profile = show(&lab.switchd, &["lossless", "profile"]);
    let ecn = &profile["tm"]["queues"][3]["ecn"];
    assert_eq!(ecn["kmin-bytes"], 10_000, "the new Kmin is shown: {ecn}");
    let received = incast(&lab, &[1], BYTES / 4);
    let marked = marked_on_eth3(&lab);
    let context = format!("{received}\n{}", lab.switchd.swcli(&["show", "queue", "wredcounters"]));
    assert_eq!(u64_of(&received, "delivered_bytes"), BYTES / 4, "lossless after the commit: {context}");
    assert!(marked > 0, "the running traffic manager marks with the committed Kmin: {context}");
    assert!(u64_of(&received, "ce_marked") > 0, "h3 received CE marks: {context}");
    eprintln!(
        "h1 -> h3 at {goodput} b/s after the speed commit ({pfc} PFC frames to h1); {marked} CE marks after the \
         ECN commit"
    );

    assert_eq!(lab.switchd.process.id(), pid, "the same daemon throughout");
}
