//! Virtual output queues: congestion on one egress never holds up a flow
//! from the same ingress to another egress.
//!
//! ```text
//!  [h1] 10.1.0.2 -- eth1 [switch] eth4 -- 10.4.0.2 [h4] (incast receiver)
//!  [h2] 10.2.0.2 -- eth2          eth5 -- 10.5.0.2 [h5] (victim receiver)
//!  [h3] 10.3.0.2 -- eth3          all ports 20 Mb/s
//! ```
//!
//! h1, h2 and h3 send an incast into h4 on the lossless priority 3 (DSCP
//! 26): eth4's queue 3 fills and the switch pauses priority 3 on eth1..3.
//! h1 also sends a victim flow to the idle h5 on priority 4 (DSCP 32, the
//! other lossless class): it waits in eth5's own queue, never behind
//! eth4's, and its priority is not paused, so it keeps its rate. (A victim
//! on priority 3 itself would be paused with the incast on h1's link: PFC
//! stops a priority of a link, whatever the frames' destination.)
//!
//! 20 Mb/s ports keep a debug `switchd` on a loaded machine far faster than
//! eth4 drains, so the incast's queue is in its traffic manager.

use std::time::Duration;

use fabric_tests::fabric_host::{FabricHost, Star, pfc_row, send_args_on_link, start_at, tm_drops, u64_of};
use fabric_tests::require_root_and_tools;

/// Every port's line rate, and each incast sender's paced rate.
const SPEED: &str = "20M";
/// Each incast sender's: 6 MiB through eth4 take about 2.5 s.
const INCAST_BYTES: u64 = 2 << 20;
const VICTIM_RATE: u64 = 10_000_000;
/// About 0.85 s at the victim's rate: over before the incast is.
const VICTIM_BYTES: u64 = 1 << 20;
/// With the switch's forwarding thread at SCHED_FIFO (docs/benchmarks.md).
const QOS: &str = "qos:\n  preset: roce\n  pfc: {priorities: [3, 4], response-ns: 20000000, rx-lag-ns: 40000000}\n  pool: {size-bytes: 3145728, cell-bytes: 256}\n\
                   forwarding: {realtime_priority: 10}\n";

#[test]
fn a_victim_to_an_idle_egress_keeps_its_rate_during_an_incast() {
    if !require_root_and_tools("qos_voq", &["ip", "ping"]) {
        return;
    }
    let lab = Star::start("qv", 5, SPEED, QOS);
    let switchd = &lab.switchd;
    let expect = (3 * INCAST_BYTES).to_string();
    let incast_receiver = FabricHost::start(lab.host(4), &["recv", "--expect-bytes", &expect, "--idle-ms", "1500"]);
    let victim_expect = VICTIM_BYTES.to_string();
    let victim_receiver =
        FabricHost::start(lab.host(5), &["recv", "--expect-bytes", &victim_expect, "--idle-ms", "1500"]);
    // Together, once every sender has resolved its next hop (a frame sent
    // before a receiver listens is sent again by go-back-N).
    let start = start_at(Duration::from_millis(2000));
    let together = ["--start-at-unix-ms", start.as_str()];
    let incast: Vec<FabricHost> = (1..=3)
        .map(|n| {
            FabricHost::start_owned(
                lab.host(n),
                &send_args_on_link(SPEED, "10.4.0.2", SPEED, INCAST_BYTES, 26, n as u32, &together),
            )
        })
        .collect();
    let victim = FabricHost::start_owned(
        lab.host(1),
        &send_args_on_link(SPEED, "10.5.0.2", &VICTIM_RATE.to_string(), VICTIM_BYTES, 32, 9, &together),
    );
    let victim_sent = victim.report(Duration::from_secs(60));
    let incast: Vec<serde_json::Value> = incast.into_iter().map(|s| s.report(Duration::from_secs(60))).collect();
    let victim_received = victim_receiver.report(Duration::from_secs(60));
    let incast_received = incast_receiver.report(Duration::from_secs(60));
    let context = || {
        format!(
            "victim sent: {victim_sent}\nvictim received: {victim_received}\nincast: {incast:?}\n\
             incast received: {incast_received}\n{}",
            switchd.swcli(&["show", "pfc", "counters"])
        )
    };

    // The incast congested eth4 and paused priority 3 on h1's link, while
    // the victim was running: h1's incast flow was still sending when the
    // victim had finished.
    assert_eq!(u64_of(&incast_received, "delivered_bytes"), 3 * INCAST_BYTES, "{}", context());
    assert!(pfc_row(switchd, "eth1")["tx"][3].as_u64().unwrap() > 0, "h1's link not paused\n{}", context());
    assert!(u64_of(&incast[0], "pauses_obeyed") > 0, "{}", context());
    assert!(
        u64_of(&incast[0], "duration_ns") > u64_of(&victim_sent, "duration_ns"),
        "the incast ended before the victim\n{}",
        context()
    );
    // The victim: never paused, nothing lost, at least 90% of its rate.
    assert_eq!(pfc_row(switchd, "eth1")["tx"][4].as_u64().unwrap(), 0, "priority 4 paused\n{}", context());
    assert_eq!(u64_of(&victim_sent, "pauses_obeyed"), 0, "{}", context());
    assert_eq!(u64_of(&victim_received, "delivered_bytes"), VICTIM_BYTES, "{}", context());
    // Its offered rate is what its sender put on the wire (an emulated
    // host's pacing falls short of the rate asked on a loaded machine);
    // the switch forwarded it at that rate, delaying none of it.
    let offered = u64_of(&victim_sent, "rate_bps");
    let rate = u64_of(&victim_received, "wire_bps");
    assert!(offered >= VICTIM_RATE / 2, "the victim's sender ran at {offered} b/s\n{}", context());
    assert!(rate >= offered * 9 / 10, "victim at {rate} b/s, below 90% of its offered {offered}\n{}", context());
    eprintln!(
        "victim: offered {offered} b/s, received {rate} b/s; incast: {} PFC frames to h1",
        pfc_row(switchd, "eth1")["tx"][3]
    );
    let drops = tm_drops(switchd);
    assert!(drops.iter().all(|(_, n)| *n == 0), "traffic manager drops: {drops:?}\n{}", context());
}
