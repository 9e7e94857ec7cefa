//! A port's rate, the PFC priorities and the headroom, each changed by a
//! commit through `swcli configure`/`commit` on a running switch (the
//! traffic manager made again, `Node::replace_traffic_manager`).
//!
//! ```text
//!  [h1] 10.1.0.2 -- eth1 [switch] eth3 -- 10.3.0.2 [h3] (fabric-host recv)
//!  [h2] 10.2.0.2 -- eth2          ports at 10 Mb/s (100 Mb/s for the rate test)
//! ```
//!
//! - eth3's speed lowered to 2 Mb/s: its shaper holds a flow to it;
//! - PFC priority 3 removed: an incast on DSCP 26 (priority 3) that paused
//!   its senders no longer does;
//! - a headroom too small for the cable is refused naming the field, and
//!   running stays as it was;
//! - eth3 removed and eth4 added by one commit with the same speed and
//!   cable (no `qos:` change; the shim gives eth3's index to eth4): the
//!   frames eth3's paused queue held are dropped and counted, never sent
//!   out of eth4, and eth4 inherits neither eth3's pause nor its counters.

use std::time::Duration;

use fabric_tests::fabric_host::{FabricHost, Star, pfc_row, queue_row, send_args, show, start_at, u64_of};
use fabric_tests::netns::{Netns, veth};
use fabric_tests::require_root_and_tools;
use fabric_tests::wait::poll_until;

const QOS: &str = "qos:\n  preset: roce\n  pool: {size-bytes: 700000, cell-bytes: 256}\n  \
                   pfc: {priorities: [3, 4], response-ns: 20000000}\n";

/// One commit through the shell: its exit status and its text.
fn commit(lab: &Star, lines: &str) -> (i32, String) {
    lab.switchd.swcli_script(&format!("configure\n{lines}\ncommit\nabort\n"))
}

#[track_caller]
fn committed(lab: &Star, lines: &str) {
    let generation = lab.switchd.generation();
    let (code, text) = commit(lab, lines);
    assert_eq!(code, 0, "applied live:\n{text}");
    assert_eq!(lab.switchd.generation(), generation + 1, "{text}");
}

/// `senders` each send `bytes` to h3 at 100 Mb/s on DSCP 26 together; the
/// senders' reports and the receiver's.
fn incast(lab: &Star, senders: &[usize], bytes: u64) -> (Vec<serde_json::Value>, serde_json::Value) {
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
    let reports = running.into_iter().map(|sender| sender.report(Duration::from_secs(60))).collect();
    (reports, receiver.report(Duration::from_secs(60)))
}

#[test]
fn a_port_rate_lowered_by_a_commit_holds_its_flow_to_it() {
    if !require_root_and_tools("qos_live_commit", &["ip", "ping"]) {
        return;
    }
    // The default pool: 100 Mb/s ports' headroom takes more than 700 KB.
    let lab =
        Star::start("qcr", 3, "100M", "qos:\n  preset: roce\n  pfc: {priorities: [3, 4], response-ns: 20000000}\n");
    committed(&lab, "set ports eth3 speed 2M");
    let speed = show(&lab.switchd, &["interfaces", "counters"]);
    let eth3 = speed.as_array().unwrap().iter().find(|r| r["iface"] == "eth3").cloned().unwrap();
    assert_eq!(eth3["speed_bps"], 2_000_000u64, "{eth3}");
    let (_, received) = incast(&lab, &[1], 1 << 18);
    assert_eq!(u64_of(&received, "delivered_bytes"), 1 << 18, "lossless: {received}");
    let goodput = u64_of(&received, "goodput_bps");
    assert!(goodput <= 2_200_000, "eth3 sends at the committed 2 Mb/s: {goodput} b/s\n{received}");
    assert!(goodput >= 1_000_000, "and at about that rate: {goodput} b/s\n{received}");
}

#[test]
fn a_pfc_priority_removed_by_a_commit_no_longer_pauses() {
    if !require_root_and_tools("qos_live_commit", &["ip", "ping"]) {
        return;
    }
    let lab = Star::start("qcp", 3, "10M", QOS);
    let pauses = |lab: &Star| {
        let (senders, _) = incast(lab, &[1, 2], 1 << 19);
        senders.iter().map(|s| u64_of(s, "pfc_frames_received")).sum::<u64>()
    };
    let before = pauses(&lab);
    assert!(before > 0, "PFC on priority 3: the incast pauses its senders");
    committed(&lab, "set qos pfc priorities [4]");
    let profile = show(&lab.switchd, &["lossless", "profile"]);
    assert_eq!(profile["tm"]["pfc"]["priorities"], serde_json::json!([4]), "{profile}");
    assert_eq!(pauses(&lab), 0, "priority 3 no longer pauses ({before} PFC frames before the commit)");
}

#[test]
fn a_headroom_too_small_for_the_cable_is_refused_and_running_stays() {
    if !require_root_and_tools("qos_live_commit", &["ip", "ping"]) {
        return;
    }
    let lab = Star::start("qch", 1, "10M", QOS);
    let running = lab.switchd.swcli(&["show", "running-config"]);
    let generation = lab.switchd.generation();
    let (code, text) = commit(
        &lab,
        "set qos priority-groups {3: {lossless: true, reserved-bytes: 18432, dynamic-th: -1, headroom-bytes: 2000}}",
    );
    assert_eq!(code, 3, "refused:\n{text}");
    assert!(text.contains("qos.priority-groups.3.headroom-bytes"), "the field is named:\n{text}");
    assert_eq!(lab.switchd.generation(), generation, "nothing committed");
    assert_eq!(lab.switchd.swcli(&["show", "running-config"]), running, "running untouched");
    let pg = show(&lab.switchd, &["lossless", "profile"]);
    assert!(!pg.to_string().contains("\"headroom-bytes\":2000"), "the running traffic manager is the old one: {pg}");
}

/// The switch-wide `show drops` count of `reason` (0 when not shown).
fn switch_drops(lab: &Star, reason: &str) -> u64 {
    let rows = show(&lab.switchd, &["drops"]);
    (rows.as_array().into_iter().flatten())
        .filter(|r| r["interface"].is_null() && r["reason"] == reason)
        .map(|r| u64_of(r, "packets"))
        .sum()
}

#[test]
fn a_port_removed_and_another_added_in_one_commit_keeps_nothing_of_the_old_one() {
    if !require_root_and_tools("qos_live_commit", &["ip", "ping"]) {
        return;
    }
    // No watchdog: eth3's paused queue keeps its frames until the commit.
    let qos = format!("{QOS}  watchdog: {{enabled: false}}\n");
    let lab = Star::start("qcn", 3, "10M", &qos);
    // h3 pauses priority 3 on eth3 while h1 sends to it on DSCP 26: eth3's
    // queue 3 fills and stays full.
    let storm = FabricHost::start(lab.host(3), &["pfc-storm", "--priority", "3", "--for-ms", "3000"]);
    std::thread::sleep(Duration::from_millis(200));
    let sender = FabricHost::start_owned(lab.host(1), &send_args("10.3.0.2", "10M", 1 << 18, 26, 1, &[]));
    let held = poll_until(Duration::from_secs(10), Duration::from_millis(50), || {
        let row = queue_row(&lab.switchd, "eth3", 3);
        (u64_of(&row, "depth_pkts") >= 20).then_some(row)
    })
    .unwrap_or_else(|| panic!("eth3's queue 3 never filled: {}", queue_row(&lab.switchd, "eth3", 3)));
    let eth3_pfc = pfc_row(&lab.switchd, "eth3");
    assert!(eth3_pfc["rx"][3].as_u64().unwrap() > 0, "{eth3_pfc}");

    // h4 on a new port eth4, cabled before the commit that adds it.
    let h4 = Netns::new("qcnh4");
    veth(&h4, "eth1", lab.switch_ns(), "eth4");
    h4.ip(&["link", "set", "eth1", "mtu", "9100"]);
    lab.switch_ns().ip(&["link", "set", "eth4", "mtu", "9100"]);
    h4.host_setup("eth1", "10.4.0.2/24", Some("10.4.0.1"));
    let reconfigure_drops = switch_drops(&lab, "traffic-manager-reconfigure");
    committed(
        &lab,
        "delete ports eth3\n\
         set ports eth4 { mode: routed, addresses: [10.4.0.1/24], mtu: 9100, speed: 10M, cable-length: 5 }",
    );
    assert!(h4.ping_until("10.4.0.1", Duration::from_secs(10)), "h4 -> gateway through eth4");
    // Counted (the thread publishes its counters every 200 ms).
    let depth = u64_of(&held, "depth_pkts");
    let dropped = poll_until(Duration::from_secs(3), Duration::from_millis(50), || {
        let dropped = switch_drops(&lab, "traffic-manager-reconfigure") - reconfigure_drops;
        (dropped >= depth).then_some(dropped)
    });
    assert!(
        dropped.is_some(),
        "the {depth}+ frames eth3's queue held are dropped and counted: {}",
        lab.switchd.swcli(&["show", "drops"])
    );
    // eth3's pause (up to 3.4 s of quanta at 10 Mb/s) would have ended by
    // now: nothing of h1's ever leaves through eth4, and eth4 starts with
    // no pause received and empty counters.
    std::thread::sleep(Duration::from_millis(3500));
    let queue = queue_row(&lab.switchd, "eth4", 3);
    assert_eq!((u64_of(&queue, "counter_pkts"), u64_of(&queue, "depth_pkts")), (0, 0), "eth4 UC3: {queue}");
    let pfc = pfc_row(&lab.switchd, "eth4");
    assert_eq!(pfc["rx"][3], 0, "eth4 inherited eth3's received pauses: {pfc}");
    // eth4 carries priority 3 at once (not paused by eth3's peer).
    let receiver = FabricHost::start(&h4, &["recv", "--expect-bytes", "65536", "--idle-ms", "1500"]);
    std::thread::sleep(Duration::from_millis(300));
    let _ = FabricHost::start_owned(lab.host(1), &send_args("10.4.0.2", "10M", 1 << 16, 26, 2, &[]))
        .report(Duration::from_secs(30));
    let received = receiver.report(Duration::from_secs(30));
    assert_eq!(u64_of(&received, "delivered_bytes"), 1 << 16, "{received}");
    let _ = (storm.report(Duration::from_secs(30)), sender);
}
