//! Scheduler weights and the whole `qos:` section follow commits, and the
//! frames queued at the swap move into the new traffic manager
//! (`Node::replace_traffic_manager`).
//!
//! ```text
//!  [h1] 10.1.0.2 -- eth1 [switch] eth3 -- 10.3.0.2 [h3] (fabric-host recv)
//!  [h2] 10.2.0.2 -- eth2          all ports 10 Mb/s
//! ```
//!
//! h1 (DSCP 26, queue 3) and h2 (DSCP 34, queue 4) each send the same
//! bytes at 100 Mb/s into eth3: both queues stay backlogged, PFC (on 3 and
//! 4) holds the senders (a 700 KB buffer), and DWRR splits eth3 by the queues' weights, so
//! the heavier queue's sender finishes first. A reload swaps the weights
//! and the other sender finishes first; a reload in the middle of a run
//! keeps the queued frames (`migrated_frames` in `show buffer pool`) and
//! loses none. Without `qos:` the same incast is not paused; a reload that
//! adds it pauses the senders, one that removes it stops the pausing.

use std::time::Duration;

use fabric_tests::fabric_host::{FabricHost, Star, send_args, show, start_at, tm_drops, u64_of};
use fabric_tests::require_root_and_tools;

const BYTES: u64 = 1 << 19;

fn qos(weight3: u32, weight4: u32) -> String {
    format!(
        "qos:\n  preset: roce\n  pool: {{size-bytes: 700000, cell-bytes: 256}}\n  pfc: {{priorities: [3, 4], response-ns: 20000000}}\n  queues:\n    \
         3: {{scheduler: {{type: dwrr, weight: {weight3}}}, ecn: {{mode: off}}}}\n    \
         4: {{scheduler: {{type: dwrr, weight: {weight4}}}, ecn: {{mode: off}}}}\n"
    )
}

/// The two senders' reports and the receiver's, for h1 on DSCP 26 and h2
/// on DSCP 34 sending BYTES each to h3 together; `during` runs once they
/// have started.
fn two_flows(lab: &Star, during: impl FnOnce()) -> (serde_json::Value, serde_json::Value, serde_json::Value) {
    let receiver =
        FabricHost::start(lab.host(3), &["recv", "--expect-bytes", &(2 * BYTES).to_string(), "--idle-ms", "3000"]);
    std::thread::sleep(Duration::from_millis(300));
    let start = start_at(Duration::from_millis(1000));
    let h1 = FabricHost::start_owned(
        lab.host(1),
        &send_args("10.3.0.2", "100M", BYTES, 26, 1, &["--start-at-unix-ms", &start]),
    );
    let h2 = FabricHost::start_owned(
        lab.host(2),
        &send_args("10.3.0.2", "100M", BYTES, 34, 2, &["--start-at-unix-ms", &start]),
    );
    std::thread::sleep(Duration::from_millis(1200));
    during();
    let h1 = h1.report(Duration::from_secs(60));
    let h2 = h2.report(Duration::from_secs(60));
    (h1, h2, receiver.report(Duration::from_secs(60)))
}

/// How long each sender took, and the context for a failure.
fn durations(lab: &Star, during: impl FnOnce()) -> (u64, u64, String) {
    let (h1, h2, received) = two_flows(lab, during);
    assert_eq!(u64_of(&received, "delivered_bytes"), 2 * BYTES, "lossless: {received}\n{h1}\n{h2}");
    let context = format!("h1 {h1}\nh2 {h2}\nreceived {received}\ndrops {:?}", tm_drops(&lab.switchd));
    (u64_of(&h1, "duration_ns"), u64_of(&h2, "duration_ns"), context)
}

#[test]
fn a_committed_dwrr_weight_changes_the_split_and_queued_frames_survive_the_swap() {
    if !require_root_and_tools("qos_live_sched", &["ip", "ping"]) {
        return;
    }
    let lab = Star::start("qls", 3, "10M", &qos(4, 1));
    let pid = lab.switchd.process.id();

    // Queue 3 weighs 4, queue 4 weighs 1: h1 gets four fifths of eth3.
    let (h1, h2, context) = durations(&lab, || {});
    assert!(h1 * 5 < h2 * 4, "h1's queue has the larger weight: h1 {h1} ns, h2 {h2} ns\n{context}");

    // Swapped by a commit: h2 first.
    lab.reload(&qos(1, 4));
    let profile = show(&lab.switchd, &["lossless", "profile"]);
    assert_eq!(profile["tm"]["queues"][4]["scheduler"]["weight"], 4, "{profile}");
    let (h1, h2, context) = durations(&lab, || {});
    assert!(h2 * 5 < h1 * 4, "h2's queue has the larger weight now: h1 {h1} ns, h2 {h2} ns\n{context}");

    // A commit while eth3's queues are full: the frames move, none is lost.
    let (_, _, context) = durations(&lab, || lab.reload(&qos(4, 1)));
    let pool = show(&lab.switchd, &["buffer", "pool"]);
    assert!(u64_of(&pool[0], "migrated_frames") > 0, "frames queued at the swap were kept: {pool}\n{context}");
    assert!(tm_drops(&lab.switchd).iter().all(|(_, n)| *n == 0), "nothing dropped: {context}");

    assert_eq!(lab.switchd.process.id(), pid, "the same daemon throughout");
}

/// PFC frames the senders received (and obeyed) in one incast.
fn pauses_received(lab: &Star) -> u64 {
    let (h1, h2, _) = two_flows(lab, || {});
    u64_of(&h1, "pfc_frames_received") + u64_of(&h2, "pfc_frames_received")
}

#[test]
fn adding_qos_to_a_running_switch_starts_pausing_and_removing_it_stops() {
    if !require_root_and_tools("qos_live_sched", &["ip", "ping"]) {
        return;
    }
    let lab = Star::start("qla", 3, "10M", "");
    let pid = lab.switchd.process.id();
    assert_eq!(pauses_received(&lab), 0, "no qos: no PFC");

    lab.reload(&qos(4, 4));
    let pfc = show(&lab.switchd, &["pfc", "counters"]);
    assert!(pfc.as_array().is_some_and(|rows| rows.len() == 3), "PFC counters per port once qos: runs: {pfc}");
    let paused = pauses_received(&lab);
    assert!(paused > 0, "qos: added, the incast pauses its senders");
    let sent = show(&lab.switchd, &["pfc", "counters"]);
    let sent_to_h1 = sent.as_array().unwrap().iter().find(|r| r["port"] == "eth1").unwrap()["tx"][3].as_u64().unwrap();
    assert!(sent_to_h1 > 0, "show pfc counters counts them: {sent}");

    lab.reload("");
    assert_eq!(pauses_received(&lab), 0, "qos: removed, no more pausing");
    eprintln!("{paused} PFC frames received by the senders while qos: ran");

    assert_eq!(lab.switchd.process.id(), pid, "the same daemon throughout");
}
