//! The PFC watchdog against a peer that pauses forever.
//!
//! ```text
//!  [h1] 10.1.0.2 -- eth1 [switch] eth2 -- 10.2.0.2 [h2] (fabric-host pfc-storm: XOFF priority 3 every ms)
//!                          all ports 100 Mb/s
//! ```
//!
//! h2 keeps priority 3 of eth2 paused while h1 sends to it on that
//! priority: eth2's queue 3 stays backlogged and silent, the watchdog calls
//! it a storm, and its action (drop) empties the queue and drops what
//! arrives, counted. The switch records, in its own clock, when the storm
//! began and when its check saw it: within the detection time plus one
//! poll interval. Once h2 stops pausing, the queue is restored after the
//! restoration time and h1's traffic flows again, recorded the same way
//! (the peer's last pause, the check that restored it: within the
//! restoration time plus one poll interval). The Prometheus scrape gives
//! the same counts, instants and delays as `show pfcwd stats`. Both events
//! also come out of the shim as notifications, which switchd logs.

use std::time::Duration;

use fabric_tests::fabric_host::{FabricHost, Star, pfc_row, queue_row, send_args, show, u64_of};
use fabric_tests::metrics::{Scrape, parser_present};
use fabric_tests::require_root_and_tools;
use fabric_tests::wait::poll_until;

const MS: u64 = 1_000_000;

const QOS: &str = "qos:\n  preset: roce\n  pfc: {priorities: [3, 4], response-ns: 20000000}\n  \
                   watchdog: {action: drop, detection-ms: 200, restoration-ms: 200, poll-interval-ms: 50}\n\
                   metrics: {listen: 127.0.0.1:9417}\n";

/// eth2's queue 3 in `show pfcwd stats`.
fn watchdog_row(lab: &Star) -> serde_json::Value {
    let rows = show(&lab.switchd, &["pfcwd", "stats"]);
    rows.as_array()
        .and_then(|rows| rows.iter().find(|r| r["port"] == "eth2" && r["queue"] == 3).cloned())
        .unwrap_or_else(|| panic!("no eth2 queue 3 in show pfcwd stats: {rows}"))
}

#[test]
fn a_pfc_storm_is_detected_dropped_and_restored() {
    if !require_root_and_tools("qos_pfc_watchdog", &["ip", "ping", "python3"]) || !parser_present("qos_pfc_watchdog") {
        return;
    }
    let mut lab = Star::start("qw", 2, "100M", QOS);
    assert_eq!(watchdog_row(&lab)["status"], "operational");

    let receiver = FabricHost::start(lab.host(2), &["recv", "--idle-ms", "1500", "--timeout-secs", "20"]);
    let storm = FabricHost::start(lab.host(2), &["pfc-storm", "--priority", "3", "--for-ms", "2000"]);
    std::thread::sleep(Duration::from_millis(200));
    // 2.5 s of traffic: before, during and after the storm.
    let sender = FabricHost::start_owned(lab.host(1), &send_args("10.2.0.2", "10M", 3 << 20, 26, 1, &[]));

    let stormed = poll_until(Duration::from_secs(10), Duration::from_millis(20), || {
        let row = watchdog_row(&lab);
        (row["status"] == "stormed").then_some(row)
    });
    let stormed = stormed.unwrap_or_else(|| {
        panic!("no storm detected: {}\n{}", watchdog_row(&lab), lab.switchd.swcli(&["show", "pfc", "counters"]))
    });
    assert_eq!(u64_of(&stormed, "storm_detected"), 1, "{stormed}");
    // The switch's own record, in its own clock: from the pause that kept
    // the backlogged queue stopped to the check that saw it, within the
    // detection time plus one poll interval (200 + 50 ms).
    let (detection_ms, poll_ms) = (u64_of(&stormed, "detection_ms"), u64_of(&stormed, "poll_interval_ms"));
    assert_eq!((detection_ms, poll_ms), (200, 50), "{stormed}");
    let delay_ns = u64_of(&stormed, "last_detection_ns");
    assert_eq!(delay_ns, u64_of(&stormed, "last_storm_detected_ns") - u64_of(&stormed, "last_storm_began_ns"));
    assert!(
        (detection_ms * MS..=(detection_ms + poll_ms) * MS).contains(&delay_ns),
        "storm detected {delay_ns} ns after it began, not within {detection_ms} + {poll_ms} ms: {stormed}"
    );
    // Nothing left eth2's queue 3 while it was paused.
    let sent_in_storm = u64_of(&queue_row(&lab.switchd, "eth2", 3), "counter_pkts");

    let storm = storm.report(Duration::from_secs(20));
    assert!(u64_of(&storm, "pfc_frames_sent") > 100, "{storm}");
    let restored = poll_until(Duration::from_secs(10), Duration::from_millis(20), || {
        let row = watchdog_row(&lab);
        (row["status"] == "operational").then_some(row)
    })
    .unwrap_or_else(|| panic!("never restored: {}", watchdog_row(&lab)));
    assert_eq!(u64_of(&restored, "storm_restored"), 1, "{restored}");
    // The restoration, in the switch's clock: from the peer's last pause to
    // the check that found it quiet for the restoration time, within that
    // time plus one poll interval (200 + 50 ms).
    let restoration_ms = u64_of(&restored, "restoration_ms");
    assert_eq!(restoration_ms, 200, "{restored}");
    let restore_ns = u64_of(&restored, "last_restoration_ns");
    assert_eq!(restore_ns, u64_of(&restored, "last_storm_restored_ns") - u64_of(&restored, "last_storm_last_pause_ns"));
    assert!(
        (restoration_ms * MS..=(restoration_ms + poll_ms) * MS).contains(&restore_ns),
        "restored {restore_ns} ns after the last pause, not within {restoration_ms} + {poll_ms} ms: {restored}"
    );
    assert!(u64_of(&restored, "last_storm_last_pause_ns") > u64_of(&restored, "last_storm_detected_ns"));

    // The scrape says what show says (the storm is over: nothing moves).
    let scrape = Scrape::get(lab.switch_ns(), "127.0.0.1:9417");
    let row = watchdog_row(&lab);
    let queue = [("port", "eth2"), ("queue", "3")];
    for (metric, field) in [
        ("switch_pfcwd_storms_detected_total", "storm_detected"),
        ("switch_pfcwd_storms_restored_total", "storm_restored"),
        ("switch_pfcwd_dropped_packets_total", "tx_drop"),
    ] {
        assert_eq!(scrape.value(metric, &queue), u64_of(&row, field) as f64, "{metric}: {row}");
    }
    assert_eq!(scrape.value("switch_pfcwd_stormed", &queue), 0.0);
    for (metric, field) in [
        ("switch_pfcwd_last_storm_detected_seconds", "last_storm_detected_ns"),
        ("switch_pfcwd_last_storm_restored_seconds", "last_storm_restored_ns"),
        ("switch_pfcwd_last_detection_delay_seconds", "last_detection_ns"),
        ("switch_pfcwd_last_restoration_delay_seconds", "last_restoration_ns"),
    ] {
        let (scraped, shown) = (scrape.value(metric, &queue), u64_of(&row, field) as f64 / 1e9);
        assert!((scraped - shown).abs() < 1e-9 * shown.max(1.0), "{metric}: {scraped} s, show said {shown} s");
    }
    // Queue 4 (PFC too) had no storm: counted 0, no instants.
    let quiet = [("port", "eth2"), ("queue", "4")];
    assert_eq!(scrape.value("switch_pfcwd_storms_detected_total", &quiet), 0.0);
    assert_eq!(scrape.find("switch_pfcwd_last_storm_detected_seconds", &quiet), None);
    // The drop action discarded h1's frames, counted by the watchdog and the queue.
    let dropped = u64_of(&restored, "tx_drop");
    assert!(dropped > 0, "{restored}");
    assert!(u64_of(&queue_row(&lab.switchd, "eth2", 3), "drop_pkts") >= dropped);
    assert!(pfc_row(&lab.switchd, "eth2")["rx"][3].as_u64().unwrap() > 100);

    // Restored, the queue sends again: the rest of h1's message reaches h2.
    let sent = sender.report(Duration::from_secs(30));
    let received = receiver.report(Duration::from_secs(30));
    let sent_after = u64_of(&queue_row(&lab.switchd, "eth2", 3), "counter_pkts");
    assert!(sent_after > sent_in_storm, "nothing sent after the restoration: {sent_after}\n{sent}\n{received}");
    assert!(u64_of(&received, "packets") > 0, "{received}");

    eprintln!(
        "storm of {} XOFF frames: detected {:.1} ms after it began (bound {} ms), restored {:.1} ms after the \
         last pause (bound {} ms), {dropped} frames dropped by the watchdog; eth2 UC3 sent {sent_in_storm} \
         frames before the restoration, {sent_after} by the end",
        storm["pfc_frames_sent"],
        delay_ns as f64 / 1e6,
        detection_ms + poll_ms,
        restore_ns as f64 / 1e6,
        restoration_ms + poll_ms
    );

    // The shim's notifications, as switchd logged them.
    let out = lab.switchd.stop().expect("switchd ran");
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(log.contains("PFC watchdog: storm detected"), "{log}");
    assert!(log.contains("PFC watchdog: storm restored"), "{log}");
}
