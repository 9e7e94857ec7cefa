//! ECN and DCQCN end to end: the incast of `qos_incast` with senders that
//! run DCQCN's reaction point.
//!
//! ```text
//!  [h1] 10.1.0.2 -- eth1 [switch] eth4 -- 10.4.0.2 [h4] (fabric-host recv: CNPs for CE marks)
//!  [h2] 10.2.0.2 -- eth2          all ports 100 Mb/s
//!  [h3] 10.3.0.2 -- eth3
//! ```
//!
//! With ECN on eth4's queue 3 (Kmin 40 KB, Kmax 800 KB, Pmax 50%) the
//! switch marks CE as the queue builds, h4 answers with CNPs, the senders
//! cut their rates, and the queue stays around Kmin..Kmax, far below the
//! XOFF point: PFC is hardly needed, and the bottleneck stays busy: the
//! payload goodput at least half the same incast's with ECN off (PFC
//! alone keeps eth4 busy), measured on the same machine in the same run,
//! so that the load on it scales both alike. The same run with ECN off
//! pauses the senders at least ten times as often.

use std::time::Duration;

use fabric_tests::fabric_host::{FabricHost, Star, queue_row, send_args, show, start_at, tm_drops, u64_of};
use fabric_tests::require_root_and_tools;

/// Each sender's message, with ECN and without: long enough that DCQCN's
/// steady state, not the first cuts of three senders starting at line
/// rate, sets the goodput.
const ECN_BYTES: u64 = 8 << 20;
/// The share of the ECN-off goodput DCQCN must keep, percent. Marks
/// decided at enqueue (before 2026-11-26) kept about a quarter (24 of 95
/// Mb/s): the senders cut to the 1 Mb/s floor after the queue had gone.
/// Healthy runs keep 62-87% (DCQCN's own dynamics: one sender cut to the
/// floor takes a second to come back; the virtual-time loop gives 66-74%),
/// less when the emulated hosts' feedback is late on a loaded machine: the
/// bound sits twice above the bug and well below the healthy range.
const MIN_SHARE_OF_BASELINE: u64 = 50;
const KMIN: u64 = 40_000;
const KMAX: u64 = 800_000;
const LINE_BPS: u64 = 100_000_000;

fn qos(ecn: &str) -> String {
    format!(
        "qos:\n  preset: roce\n  pfc: {{priorities: [3, 4], response-ns: 20000000}}\n  \
         queues: {{3: {{scheduler: {{type: dwrr, weight: 4}}, ecn: {ecn}}}}}\n\
         forwarding: {{realtime_priority: 10}}\n"
    )
}

/// One DCQCN incast: the receiver's and the senders' reports, and the PFC
/// frames the switch sent the senders.
fn incast(lab: &Star, bytes: u64) -> (serde_json::Value, Vec<serde_json::Value>, u64) {
    let expect = (3 * bytes).to_string();
    // At most one CNP per QP per millisecond: about the time an emulated
    // host takes to act on one.
    let receiver = FabricHost::start(
        lab.host(4),
        &["recv", "--expect-bytes", &expect, "--idle-ms", "1500", "--cnp-interval-us", "1000"],
    );
    std::thread::sleep(Duration::from_millis(300));
    let start = start_at(Duration::from_millis(1500));
    let senders: Vec<FabricHost> = (1..=3)
        .map(|n| {
            let args = send_args("10.4.0.2", "100M", bytes, 26, n as u32, &["--dcqcn", "--start-at-unix-ms", &start]);
            FabricHost::start_owned(lab.host(n), &args)
        })
        .collect();
    let senders: Vec<serde_json::Value> = senders.into_iter().map(|s| s.report(Duration::from_secs(60))).collect();
    let received = receiver.report(Duration::from_secs(60));
    let pfc = show(&lab.switchd, &["pfc", "counters"]);
    let pfc_sent = pfc
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["port"] != "eth4")
        .map(|row| row["tx"][3].as_u64().unwrap())
        .sum();
    (received, senders, pfc_sent)
}

#[test]
fn dcqcn_keeps_the_queue_between_kmin_and_kmax_and_pfc_quiet() {
    if !require_root_and_tools("qos_ecn", &["ip", "ping"]) {
        return;
    }
    let mut lab = Star::start(
        "qe",
        4,
        "100M",
        &qos(&format!("{{mode: profile, kmin-bytes: {KMIN}, kmax-bytes: {KMAX}, pmax-percent: 50}}")),
    );
    let (received, senders, pfc_with_ecn) = incast(&lab, ECN_BYTES);
    let switchd = &lab.switchd;
    let watermark = show(switchd, &["queue", "watermark"]);
    let eth4 = watermark["rows"].as_array().unwrap().iter().find(|r| r["port"] == "eth4").unwrap()["bytes"][3]
        .as_u64()
        .unwrap();
    let wred = show(switchd, &["queue", "wredcounters"]);
    let marked =
        wred.as_array().unwrap().iter().find(|r| r["port"] == "eth4" && r["txq"] == "UC3").unwrap()["ecn_marked_pkts"]
            .as_u64()
            .unwrap();
    let context = format!(
        "receiver: {received}\nsenders: {senders:?}\nPFC to the senders: {pfc_with_ecn}\neth4 UC3 watermark {eth4}, \
         marked {marked}\n{}",
        switchd.swcli(&["show", "pfc", "counters"])
    );

    // Nothing lost; the switch marked, h4 answered, the senders heard and slowed down.
    assert_eq!(u64_of(&received, "delivered_bytes"), 3 * ECN_BYTES, "{context}");
    assert!(tm_drops(switchd).iter().all(|(_, n)| *n == 0), "{context}");
    assert_eq!(u64_of(&queue_row(switchd, "eth4", 3), "drop_pkts"), 0, "{context}");
    assert!(marked > 0, "no CE mark counted at the switch\n{context}");
    assert!(u64_of(&received, "ce_marked") > 0 && u64_of(&received, "cnps_sent") > 0, "{context}");
    for sender in &senders {
        assert!(u64_of(sender, "cnps_received") > 0, "a sender heard no CNP\n{context}");
        assert!(u64_of(sender, "min_rate_bps") < 100_000_000 / 2, "a sender never slowed to half\n{context}");
    }
    // The queue peaked past Kmin (where marking starts) and within Kmax.
    assert!((KMIN..=KMAX).contains(&eth4), "eth4 UC3 watermark {eth4} outside {KMIN}..={KMAX}\n{context}");

    let ecn_goodput = u64_of(&received, "goodput_bps");
    let min_rates: Vec<u64> = senders.iter().map(|s| u64_of(s, "min_rate_bps")).collect();

    // The same incast without ECN: the queue grows to the XOFF point and
    // only PFC holds the senders back, which keeps eth4 busy.
    lab.restart(&qos("{mode: off}"));
    let (received, senders, pfc_without_ecn) = incast(&lab, ECN_BYTES);
    assert_eq!(u64_of(&received, "delivered_bytes"), 3 * ECN_BYTES, "{received}");
    assert_eq!(u64_of(&received, "ce_marked"), 0, "{received}");
    assert!(senders.iter().all(|s| u64_of(s, "cnps_received") == 0), "{senders:?}");
    let baseline = u64_of(&received, "goodput_bps");
    // The comparisons need a real incast without ECN: senders that offered
    // more than eth4 carries (so PFC paused them) and kept it busy.
    assert!(
        pfc_without_ecn > 0 && baseline >= LINE_BPS / 2,
        "without ECN: {pfc_without_ecn} PFC frames, goodput {baseline} b/s: the emulated senders did not congest \
         eth4 (a machine too loaded for them to offer 3x its rate), nothing to compare with\n{received}"
    );
    assert!(
        pfc_with_ecn * 10 <= pfc_without_ecn,
        "PFC frames to the senders: {pfc_with_ecn} with ECN, {pfc_without_ecn} without\n{context}"
    );
    eprintln!(
        "with ECN: eth4 UC3 watermark {eth4} B, {marked} marked, senders' lowest rates {min_rates:?} b/s, \
         goodput {ecn_goodput} b/s, {pfc_with_ecn} PFC frames; without: {pfc_without_ecn} PFC frames, goodput \
         {baseline} b/s; ratio {:.2}",
        ecn_goodput as f64 / baseline as f64
    );
    // DCQCN keeps the bottleneck busy: the payload delivered between the
    // first and the last arrival (bytes the receiver counted, over its own
    // clock) at least MIN_SHARE_OF_BASELINE% of what PFC alone delivers
    // through the same port in the same run. Against the line rate this
    // bound was thin on a loaded machine (the emulated hosts are late as
    // much with ECN as without); against the same run's baseline the load
    // cancels out, and a DCQCN that over-cuts (the enqueue-marking bug kept
    // a quarter) still fails. The baseline itself must be the line's
    // (checked above): a switch or host so starved that PFC alone cannot
    // fill half of it proves nothing either way.
    assert!(
        ecn_goodput * 100 >= baseline * MIN_SHARE_OF_BASELINE,
        "goodput {ecn_goodput} b/s with ECN, {baseline} b/s without (below {MIN_SHARE_OF_BASELINE}%)\n{context}"
    );
}
