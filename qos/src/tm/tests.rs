use super::*;
use crate::buffer::cells;
use crate::buffer::{PgProfile, QueueLimit};
use crate::ecn::{NonEct, WredProfile};
use crate::scheduler::Discipline;
use crate::shaper::ShaperConfig;
use proptest::prelude::*;

const GIG: u64 = 1_000_000_000;

fn ports(n: usize, speed: u64) -> Vec<PortConfig> {
    (0..n).map(|_| PortConfig { mtu: 1500, ..PortConfig::new(speed) }).collect()
}

fn frame(ingress: u16, egress: u16, tc: u8, len: u32) -> FrameInfo {
    FrameInfo { ingress: Some(ingress), egress, class: ClassKey::Tc(tc), len, ecn_capable: false, flow_hash: 0 }
}

/// Sends everything port `port` releases in `[from, to)`, stepping through
/// the wait times the traffic manager gives; returns (handle, time) pairs.
fn drain(tm: &mut TrafficManager<u32>, port: u16, from: u64, to: u64) -> Vec<(u32, u64)> {
    let mut sent = Vec::new();
    let mut now = from;
    while now < to {
        match tm.dequeue(now, port) {
            Dequeue::Send { handle, .. } => sent.push((handle, now)),
            Dequeue::Discard { .. } => {}
            Dequeue::Wait(at) => now = at,
            Dequeue::Idle => break,
        }
    }
    sent
}

#[test]
fn a_port_sends_at_its_line_rate() {
    let mut tm = TrafficManager::new(&TmConfig { ports: ports(2, GIG), ..TmConfig::default() }, 0u32).unwrap();
    for handle in 0..10 {
        tm.enqueue(0, handle, &frame(0, 1, 0, 1500)).unwrap();
    }
    let sent = drain(&mut tm, 1, 0, u64::MAX);
    // 1500 + 24 bytes of overhead at 1 Gb/s: one frame every 12.192 us.
    let times: Vec<u64> = sent.iter().map(|&(_, t)| t).collect();
    assert_eq!(times, (0..10).map(|i| i * 12_192).collect::<Vec<_>>());
    assert_eq!(sent.iter().map(|&(h, _)| h).collect::<Vec<_>>(), (0..10).collect::<Vec<_>>());
    assert_eq!(tm.dequeue(200_000, 1), Dequeue::Idle);
    assert_eq!(tm.queue_counters(1, 0).tx_bytes, 15_000);
    assert_eq!(tm.buffer().used_cells(), 0);
}

#[test]
fn classification_follows_the_maps() {
    let mut config = TmConfig { ports: ports(2, GIG), ..TmConfig::default() };
    config.maps.dscp_to_tc[26] = 3;
    config.maps.tc_to_queue[3] = 5;
    config.maps.tc_to_pg[3] = 2;
    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    let info = FrameInfo { class: ClassKey::Headers { dscp: Some(26), pcp: 0 }, ..frame(0, 1, 0, 100) };
    let admitted = tm.enqueue(0, 7, &info).unwrap();
    assert_eq!(admitted.class, Classified { tc: 3, queue: 5, pg: 2 });
    assert_eq!(tm.queue_depth(1, 5), (1, 100));
    assert_eq!(tm.priority_group(Some(0), 2).used(), 1);
}

#[test]
fn congestion_on_one_egress_does_not_block_another() {
    // One ingress feeds a slow, congested egress (port 1, 10 Mb/s) and an
    // idle one (port 2, 1 Gb/s). Lossy class, dynamic limits.
    let mut config = TmConfig { ports: ports(3, GIG), ..TmConfig::default() };
    config.ports[1].speed_bps = 10_000_000;
    config.pool.size_bytes = 1 << 20;
    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    let mut dropped_congested = 0;
    for i in 0..2_000u32 {
        if tm.enqueue(0, i, &frame(0, 1, 0, 1500)).is_err() {
            dropped_congested += 1;
        }
    }
    assert!(dropped_congested > 0, "the congested queue reached its limit");
    // The same ingress, same class, to the idle egress: every frame admitted
    // and sent at once, at port 2's own line rate.
    for i in 0..100u32 {
        tm.enqueue(0, 10_000 + i, &frame(0, 2, 0, 1500)).unwrap();
    }
    let sent = drain(&mut tm, 2, 0, u64::MAX);
    assert_eq!(sent.len(), 100);
    assert_eq!(sent.last().unwrap().1, 99 * 12_192);
    assert!(tm.port_depth(1).0 > 300, "port 1 still congested");
}

fn lossless_config(n: usize) -> TmConfig {
    let mut config = TmConfig::roce(ports(n, GIG));
    config.pool.size_bytes = 1 << 20;
    config.pfc.response_ns = 20_000;
    // The tests step time by 1 us: the port clock may catch up that much.
    config.catch_up_ns = 2_000;
    config
}

#[test]
fn xoff_pfc_refresh_and_xon() {
    let config = lossless_config(2);
    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    let headroom = tm.priority_group(Some(0), 3).headroom_cells;
    // 2 x 1500 + 64 + 0.125 B/ns x (50 + 20000) ns = 5571 bytes = 22 cells.
    assert_eq!(headroom, 22);
    let mut handle = 0;
    let mut xoff_at = None;
    while xoff_at.is_none() {
        tm.enqueue(0, handle, &frame(0, 1, 3, 1500)).unwrap();
        handle += 1;
        if tm.pfc_asserted(0) != 0 {
            xoff_at = Some(handle);
        }
    }
    let (port, pfc) = tm.take_pfc(0).unwrap();
    assert_eq!(port, 0);
    assert_eq!(pfc.class_enable, 0b0000_1000, "priority 3 only");
    assert_eq!(pfc.quanta[3], 0xffff);
    assert_eq!(tm.take_pfc(0), None);
    // The XOFF threshold: reserve (18432 B = 72 cells) plus alpha/(1+alpha) = 1/3 of the shared pool.
    let pg = *tm.priority_group(Some(0), 3);
    assert_eq!(pg.used_reserved, 72);
    let shared_limit = tm.buffer().shared_cells() / 3;
    assert!(pg.used_shared.abs_diff(shared_limit) <= 6, "{} vs {shared_limit}", pg.used_shared);
    // The frame that crossed the threshold and those in flight after it go
    // to the headroom (22 cells: this one and two more 6-cell frames).
    for _ in 0..2 {
        tm.enqueue(0, handle, &frame(0, 1, 3, 1500)).unwrap();
        handle += 1;
    }
    assert_eq!(tm.priority_group(Some(0), 3).used_headroom, 18);
    // Refresh at half of 0xffff quanta at 1 Gb/s (16.78 ms).
    tm.poll(16_000_000);
    assert_eq!(tm.take_pfc(16_000_000), None);
    tm.poll(16_776_960);
    assert_eq!(tm.take_pfc(16_776_960).unwrap().1.quanta[3], 0xffff);
    // Drain: XON (quanta 0) once the PG is empty enough.
    drain(&mut tm, 1, 20_000_000, u64::MAX);
    let (_, xon) = tm.take_pfc(u64::MAX / 2).unwrap();
    assert_eq!(xon, PfcFrame { class_enable: 0b1000, quanta: [0; 8] });
    assert_eq!(tm.pfc_counters(0).tx_frames[3], 3);
    assert_eq!(tm.drops(DropReason::HeadroomOverflow), 0);
}

#[test]
fn received_pfc_stops_only_the_matching_queue() {
    let mut tm = TrafficManager::new(&lossless_config(2), 0u32).unwrap();
    let mut pfc = PfcFrame { class_enable: 0b1000, quanta: [0; 8] };
    pfc.quanta[3] = 100; // 51.2 us at 1 Gb/s
    tm.receive_pfc(0, 1, &pfc);
    tm.enqueue(0, 1, &frame(0, 1, 3, 1000)).unwrap();
    tm.enqueue(0, 2, &frame(0, 1, 0, 1000)).unwrap();
    assert!(matches!(tm.dequeue(0, 1), Dequeue::Send { handle: 2, .. }), "queue 0 is not paused");
    assert_eq!(tm.dequeue(9_000, 1), Dequeue::Wait(51_200));
    assert!(matches!(tm.dequeue(51_200, 1), Dequeue::Send { handle: 1, .. }));
    assert_eq!(tm.pfc_counters(1).rx_frames[3], 1);
    assert_eq!(tm.pfc_paused_ns(100_000, 1, 3), 51_200);
    // A PFC frame for a priority without PFC is counted but stops nothing.
    tm.receive_pfc(100_000, 1, &PfcFrame { class_enable: 1, quanta: [0xffff, 0, 0, 0, 0, 0, 0, 0] });
    tm.enqueue(100_000, 3, &frame(0, 1, 0, 1000)).unwrap();
    assert!(matches!(tm.dequeue(100_000, 1), Dequeue::Send { handle: 3, .. }));
}

#[test]
fn ecn_marks_on_the_depth_left_behind_and_wred_drops_lossy_non_ect_at_enqueue() {
    let mut config = TmConfig { ports: ports(2, GIG), ..TmConfig::default() };
    let profile =
        WredProfile { kmin_bytes: 3000, kmax_bytes: 6000, pmax_percent: 100, ecn: true, non_ect: NonEct::Drop };
    config.queues[1].ecn = EcnSetting::Profile(profile);
    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    let ect = |len| FrameInfo { ecn_capable: true, ..frame(0, 1, 1, len) };
    // 10 x 1000 bytes queued: the queue is far above Kmax, yet nothing is
    // decided on arrival.
    for h in 0..10 {
        tm.enqueue(0, h, &ect(1000)).unwrap();
    }
    assert_eq!(tm.queue_counters(1, 1).ecn_marked, 0);
    // A non-ECT frame above Kmax is dropped at once (WRED at enqueue).
    assert_eq!(tm.enqueue(0, 10, &frame(0, 1, 1, 100)), Err(DropReason::Wred));
    // Leaving: the first four (which arrived to an empty queue: a mark
    // decided on arrival would never have chosen them) leave 9000..6000
    // bytes behind (at or above Kmax: marked), the next three 5000..3000 (between Kmin and Kmax:
    // p = (q - 3000) / 3000, so 3000 is never marked), the last three at
    // or below Kmin: never.
    let mut marks = Vec::new();
    let mut now = 0;
    loop {
        match tm.dequeue(now, 1) {
            Dequeue::Send { mark_ce, .. } => marks.push(mark_ce),
            Dequeue::Wait(at) => now = at,
            Dequeue::Discard { .. } | Dequeue::Idle => break,
        }
    }
    assert_eq!(marks.len(), 10);
    assert_eq!(&marks[..4], &[true; 4], "{marks:?}");
    assert_eq!(&marks[6..], &[false; 4], "{marks:?}");
    let counters = tm.queue_counters(1, 1);
    assert_eq!(counters.ecn_marked, marks.iter().filter(|&&m| m).count() as u64);
    assert_eq!((counters.wred_dropped, counters.dropped_frames), (1, 1));
}

#[test]
fn dwrr_shares_on_the_wire() {
    let mut config = TmConfig { ports: ports(2, GIG), ..TmConfig::default() };
    config.queues[0].scheduler = Discipline::Dwrr { weight: 1 };
    config.queues[1].scheduler = Discipline::Dwrr { weight: 3 };
    config.pool.size_bytes = 16 << 20;
    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    for h in 0..4000 {
        tm.enqueue(0, h, &frame(0, 1, (h % 2) as u8, 1500)).unwrap();
    }
    // 20 ms of a 1 Gb/s port: 1640 frames.
    drain(&mut tm, 1, 0, 20_000_000);
    let (q0, q1) = (tm.queue_counters(1, 0).tx_bytes, tm.queue_counters(1, 1).tx_bytes);
    let share = q1 as f64 / (q0 + q1) as f64;
    assert!((share - 0.75).abs() < 0.01, "{q0} {q1}");
}

#[test]
fn queue_shaper_holds_its_rate() {
    let mut config = TmConfig { ports: ports(2, GIG), ..TmConfig::default() };
    config.queues[2].shaper = Some(ShaperConfig { rate_bps: 100_000_000, burst_bytes: 1500 });
    config.pool.size_bytes = 16 << 20;
    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    for h in 0..2000 {
        tm.enqueue(0, h, &frame(0, 1, 2, 1500)).unwrap();
    }
    // 100 ms at 100 Mb/s = 1.25 MB: 833 frames plus the one the burst allows.
    let sent = drain(&mut tm, 1, 0, 100_000_000);
    assert!((833..=835).contains(&sent.len()), "{}", sent.len());
    // The queue's frames are spaced 120 us apart (1500 bytes at 12.5 MB/s).
    assert_eq!(sent[2].1 - sent[1].1, 120_000);
}

#[test]
fn strict_queue_preempts_dwrr() {
    let mut config = TmConfig { ports: ports(2, GIG), ..TmConfig::default() };
    config.queues[6].scheduler = Discipline::Strict;
    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    for h in 0..5 {
        tm.enqueue(0, h, &frame(0, 1, 0, 1500)).unwrap();
    }
    tm.enqueue(0, 99, &frame(0, 1, 6, 64)).unwrap();
    assert!(matches!(tm.dequeue(0, 1), Dequeue::Send { handle: 99, .. }));
}

#[test]
fn watchdog_detects_a_storm_drops_and_restores() {
    let mut config = lossless_config(2);
    config.watchdog.detection_ms = 200;
    config.watchdog.restoration_ms = 200;
    config.watchdog.poll_interval_ms = 100;
    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    const MS: u64 = 1_000_000;
    let mut pause = PfcFrame { class_enable: 0b1000, quanta: [0; 8] };
    pause.quanta[3] = 0xffff; // 33.5 ms at 1 Gb/s: the peer refreshes every 10 ms
    tm.enqueue(0, 1, &frame(0, 1, 3, 1500)).unwrap();
    let mut now = 0;
    let mut detected_at = None;
    while now <= 500 * MS {
        if now % (10 * MS) == 0 {
            tm.receive_pfc(now, 1, &pause);
        }
        tm.poll(now);
        if let Some(event) = tm.drain_events().next() {
            assert_eq!((event.port, event.queue, event.kind), (1, 3, WatchdogEventKind::StormDetected));
            detected_at = Some(event.at);
            break;
        }
        now += MS;
    }
    // Paused since 0 with a frame waiting: detected at the first check at or after 200 ms.
    assert_eq!(detected_at, Some(200 * MS));
    // Drop action: the queued frame is discarded, new ones dropped.
    assert_eq!(tm.dequeue(now, 1), Dequeue::Discard { handle: 1 });
    assert_eq!(tm.enqueue(now, 2, &frame(0, 1, 3, 1500)), Err(DropReason::WatchdogStorm));
    assert_eq!(tm.watchdog(1, 3).storms_detected, 1);
    // Pauses stop at 300 ms; restored at the first check 200 ms after the last one.
    let mut restored_at = None;
    while now <= 1000 * MS {
        if now < 300 * MS && now % (10 * MS) == 0 {
            tm.receive_pfc(now, 1, &pause);
        }
        tm.poll(now);
        if let Some(event) = tm.drain_events().next() {
            assert_eq!(event.kind, WatchdogEventKind::StormRestored);
            restored_at = Some(event.at);
            break;
        }
        now += MS;
    }
    assert_eq!(restored_at, Some(500 * MS));
    tm.enqueue(now, 3, &frame(0, 1, 3, 1500)).unwrap();
    assert_eq!(tm.watchdog(1, 3).storms_restored, 1);
}

/// The watchdog's own record of a storm: when it began (the pause that
/// stopped a backlogged queue) and when a check saw it, in the TM's clock;
/// checks on a 50 ms grid that a late poll does not shift.
#[test]
fn watchdog_records_the_storm_and_detects_within_detection_plus_one_poll() {
    const MS: u64 = 1_000_000;
    let mut config = lossless_config(2);
    config.watchdog.detection_ms = 200;
    config.watchdog.poll_interval_ms = 50;
    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    let mut pause = PfcFrame { class_enable: 0b1000, quanta: [0; 8] };
    pause.quanta[3] = 0xffff; // 33.5 ms at 1 Gb/s, refreshed every 10 ms
    // Checks at 0 and (late) 80 ms: the next is still due at 100 ms.
    tm.poll(0);
    tm.poll(80 * MS);
    tm.enqueue(80 * MS, 1, &frame(0, 1, 3, 1500)).unwrap();
    assert_eq!(tm.next_wakeup(80 * MS), Some(80 * MS), "the frame may go now");
    assert!(matches!(tm.dequeue(80 * MS, 1), Dequeue::Send { handle: 1, .. }));
    tm.enqueue(81 * MS, 2, &frame(0, 1, 3, 1500)).unwrap();
    // The storm: pauses from 87 ms on, the queue backlogged since 81 ms.
    let mut now = 87 * MS;
    let mut detected = None;
    while now <= 600 * MS && detected.is_none() {
        if (now - 87 * MS).is_multiple_of(10 * MS) {
            tm.receive_pfc(now, 1, &pause);
        }
        // The caller polls only when the TM asks to (and the refreshes above).
        if tm.next_wakeup(now).is_some_and(|at| at <= now) {
            assert!(!matches!(tm.dequeue(now, 1), Dequeue::Send { .. }), "paused at {now}");
            tm.poll(now);
        }
        detected = tm.drain_events().next().map(|e| e.at);
        now += MS;
    }
    let watch = tm.watchdog(1, 3);
    // Began at 87 ms; 287 ms is off the grid (0, 50, 100, ...): seen at 300 ms.
    assert_eq!((watch.storm_began_at, watch.storm_detected_at), (87 * MS, 300 * MS));
    assert_eq!(detected, Some(300 * MS));
    let delay = watch.detection_delay_ns().unwrap();
    assert!((200 * MS..=250 * MS).contains(&delay), "{delay}");
}

#[test]
fn watchdog_forward_action_ignores_the_pause() {
    let mut config = lossless_config(2);
    config.watchdog.action = crate::watchdog::WatchdogAction::Forward;
    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    let mut pause = PfcFrame { class_enable: 0b1000, quanta: [0; 8] };
    pause.quanta[3] = 0xffff;
    tm.enqueue(0, 1, &frame(0, 1, 3, 1500)).unwrap();
    let mut now = 0;
    while tm.watchdog(1, 3).storms_detected == 0 {
        tm.receive_pfc(now, 1, &pause);
        assert!(!matches!(tm.dequeue(now, 1), Dequeue::Send { .. }), "paused");
        tm.poll(now);
        now += 10_000_000;
    }
    assert!(matches!(tm.dequeue(now, 1), Dequeue::Send { handle: 1, .. }));
}

/// Three senders at line rate into one egress of the same speed, in virtual
/// time. Senders obey PFC after the response time the headroom was sized
/// for. The lossless class loses nothing and the bottleneck runs at line
/// rate; the same load on a lossy class drops.
fn incast(tc: u8) -> (TrafficManager<u32>, u64) {
    let mut config = lossless_config(4);
    config.watchdog.enabled = false;
    let response = config.pfc.response_ns;
    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    let frame_ns = 12_192;
    let mut next_send = [0u64, 3_000, 7_000];
    let mut paused_until = [0u64; 3];
    // PFC frames in flight to each sender: (arrival, quanta).
    let mut in_flight: Vec<(usize, u64, u16)> = Vec::with_capacity(64);
    let mut handle = 0;
    let mut sent = 0u64;
    let end = 50_000_000;
    let mut now = 0;
    while now < end {
        // Deliver PFC frames whose time has come.
        in_flight.retain(|&(sender, at, quanta)| {
            if at <= now {
                paused_until[sender] = if quanta == 0 { now } else { now + quanta_ns(quanta, GIG) };
                false
            } else {
                true
            }
        });
        for sender in 0..3 {
            if next_send[sender] <= now && paused_until[sender] <= now {
                let _ = tm.enqueue(now, handle, &frame(sender as u16, 3, tc, 1500));
                handle += 1;
                next_send[sender] = now + frame_ns;
            }
        }
        while let Some((port, pfc)) = tm.take_pfc(now) {
            in_flight.push((usize::from(port), now + response, pfc.quanta[usize::from(tc)]));
        }
        tm.poll(now);
        while let Dequeue::Send { .. } = tm.dequeue(now, 3) {
            sent += 1;
        }
        now += 1_000;
    }
    (tm, sent)
}

#[test]
fn lossless_incast_never_drops_and_runs_at_line_rate() {
    let (tm, sent) = incast(3);
    assert_eq!(DropReason::ALL.iter().map(|&r| tm.drops(r)).sum::<u64>(), 0);
    // 50 ms at 1 Gb/s: 4101 frames of 12.192 us; at least 99% of it.
    assert!(sent >= 4060, "{sent}");
    assert!((0..3).all(|p| tm.pfc_counters(p).tx_frames[3] > 0), "every sender was paused");
    assert!(tm.priority_group(Some(0), 3).watermark_headroom > 0);
}

#[test]
fn lossy_incast_drops_and_counts() {
    let (tm, sent) = incast(1);
    assert!(tm.queue_counters(3, 1).dropped_frames > 1000);
    assert!(tm.drops(DropReason::IngressLimit) + tm.drops(DropReason::EgressLimit) > 1000);
    assert!(sent >= 4060, "{sent}");
    assert!((0..3).all(|p| tm.pfc_counters(p).tx_frames.iter().sum::<u64>() == 0));
}

/// The incast of [`incast`] through a software switch's receive path: the
/// frames land in each port's rx ring at line rate, and the switch's
/// thread reads the rings (and so charges the frames and decides XOFF)
/// only every `lag_ns`. Returns the traffic manager after 50 ms.
fn incast_through_rx_rings(rx_lag_ns_configured: u64, lag_ns: u64) -> TrafficManager<u32> {
    let mut config = lossless_config(4);
    config.watchdog.enabled = false;
    config.pfc.rx_lag_ns = rx_lag_ns_configured;
    let response = config.pfc.response_ns;
    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    let frame_ns = 12_192;
    let mut next_send = [0u64, 3_000, 7_000];
    let mut paused_until = [0u64; 3];
    let mut rings: [Vec<u32>; 3] = Default::default();
    let mut in_flight: Vec<(usize, u64, u16)> = Vec::with_capacity(64);
    let (mut handle, mut now, mut next_read) = (0, 0, 0);
    while now < 50_000_000 {
        in_flight.retain(|&(sender, at, quanta)| {
            if at <= now {
                paused_until[sender] = if quanta == 0 { now } else { now + quanta_ns(quanta, GIG) };
            }
            at > now
        });
        for sender in 0..3 {
            if next_send[sender] <= now && paused_until[sender] <= now {
                rings[sender].push(handle);
                handle += 1;
                next_send[sender] = now + frame_ns;
            }
        }
        if now >= next_read {
            // The thread runs: what waited in the rings is charged now.
            for (sender, ring) in rings.iter_mut().enumerate() {
                for handle in ring.drain(..) {
                    let _ = tm.enqueue(now, handle, &frame(sender as u16, 3, 3, 1500));
                    while let Some((port, pfc)) = tm.take_pfc(now) {
                        in_flight.push((usize::from(port), now + response, pfc.quanta[3]));
                    }
                }
            }
            next_read = now + lag_ns;
        }
        tm.poll(now);
        while let Dequeue::Send { .. } = tm.dequeue(now, 3) {}
        now += 1_000;
    }
    tm
}

#[test]
fn frames_waiting_in_the_rx_ring_at_xoff_need_the_rx_lag_headroom_term() {
    // The thread reads the rings every 200 us: up to 200 us x 125 B/us =
    // 25 KB of a sender's frames arrive after the one that crosses the XOFF
    // point and before the thread sees it. A headroom for the cable and
    // the peer's response alone (5571 bytes) overflows; with the
    // `rx-lag-ns` term (+ 25000 bytes) nothing is lost.
    let lag = 200_000;
    let without = incast_through_rx_rings(0, lag);
    assert!(without.drops(DropReason::HeadroomOverflow) > 0, "the ring's burst overflows a headroom without the term");
    let with = incast_through_rx_rings(lag, lag);
    assert_eq!(with.priority_group(Some(0), 3).headroom_cells, 22 + 98);
    assert_eq!(DropReason::ALL.iter().map(|&r| with.drops(r)).sum::<u64>(), 0);
    assert!((0..3).all(|p| with.pfc_counters(p).tx_frames[3] > 0), "every sender was paused");
    let used = (0..3).map(|p| with.priority_group(Some(p), 3).watermark_headroom).max().unwrap();
    assert!(used > 22, "the ring's burst went beyond the old headroom: {used} cells");
}

#[test]
fn validation_counts_the_rx_lag_in_the_headroom_needed() {
    // 1 Gb/s, 5 m, MTU 1500, 20 us response: 5571 bytes; with 200 us of
    // rx lag 5571 + 25000 = 30571. A configured headroom between the two
    // is refused once the lag is declared.
    let mut config = lossless_config(2);
    config.priority_groups[3].headroom_bytes = Some(20_000);
    assert_eq!(config.validate(), Ok(()));
    config.pfc.rx_lag_ns = 200_000;
    let error = config.validate().unwrap_err();
    assert_eq!(error.field, "priority-groups[3].headroom-bytes");
    assert!(error.reason.contains("200000 ns rx lag): it needs 30571"), "{}", error.reason);
}

#[test]
fn validation_names_field_and_reason() {
    let mut config = TmConfig::roce(ports(2, 100 * GIG));
    config.ports[1].cable_length_m = 300;
    config.priority_groups[3].headroom_bytes = Some(20_000);
    let error = config.validate().unwrap_err();
    assert_eq!(error.field, "priority-groups[3].headroom-bytes");
    assert!(error.reason.contains("too small for port 1") && error.reason.contains("needs"), "{error}");

    let mut config = TmConfig::roce(ports(2, GIG));
    config.pfc.priorities = vec![3, 5];
    let error = config.validate().unwrap_err();
    assert_eq!(error.field, "pfc.priorities");
    assert!(error.reason.contains("priority 5") && error.reason.contains("not lossless"), "{error}");

    let mut config = TmConfig::roce(ports(2, GIG));
    config.pool.size_bytes = 1 << 20;
    config.queues[3].ecn = EcnSetting::Profile(WredProfile {
        kmin_bytes: 600_000,
        kmax_bytes: 900_000,
        pmax_percent: 1,
        ecn: true,
        non_ect: NonEct::Pass,
    });
    let error = config.validate().unwrap_err();
    assert_eq!(error.field, "queues[3].ecn.kmin-bytes");
    assert!(error.reason.contains("above the XOFF threshold"), "{error}");

    let mut config = TmConfig::roce(ports(2, GIG));
    config.queues[0].limit = QueueLimit::Dynamic { th: 9 };
    assert_eq!(config.validate().unwrap_err().field, "queues[0].limit.dynamic");
    assert!(TmConfig::roce(ports(32, 100 * GIG)).validate().is_ok());
    assert!(TrafficManager::new(&TmConfig { ports: ports(1, 0), ..TmConfig::default() }, 0u8).is_err());
}

#[test]
fn config_parses_from_yaml() {
    let yaml = "
ports:
  - {speed-bps: 100000000000, cable-length-m: 40}
  - {speed-bps: 100000000000}
maps:
  dscp-to-tc: {26: 3, 48: 6}
priority-groups:
  - {}
  - {}
  - {}
  - {lossless: true, reserved-bytes: 18432, dynamic-th: -1}
  - {}
  - {}
  - {}
  - {}
queues:
  - {}
  - {}
  - {}
  - {scheduler: {type: dwrr, weight: 4}, ecn: {mode: dcqcn}}
  - {}
  - {}
  - {scheduler: {type: strict}}
  - {limit: {type: static, bytes: 100000}}
pfc: {priorities: [3]}
watchdog: {action: forward}
dlb: {mode: flowlet, inactivity-us: 300}
";
    let config: TmConfig = serde_yaml::from_str(yaml).unwrap();
    config.validate().unwrap();
    assert_eq!(config.ports[0].cable_length_m, 40);
    assert!(config.priority_groups[3].lossless);
    assert_eq!(config.queues[7].limit, QueueLimit::Static { bytes: 100_000 });
    assert_eq!(config.watchdog.detection_ms, 200);
    assert!(serde_yaml::from_str::<TmConfig>("pfc: {priorites: [3]}").is_err(), "unknown fields are refused");
}

#[test]
fn lossless_pg_without_pfc_priority_keeps_its_headroom_quiet() {
    // A lossless PG whose priorities have PFC off: XOFF is internal only, no frame is due.
    let mut config = lossless_config(2);
    config.priority_groups[5] = PgProfile { lossless: true, ..PgProfile::default() };
    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    for h in 0..1000 {
        let _ = tm.enqueue(0, h, &frame(0, 1, 5, 1500));
    }
    assert!(tm.priority_group(Some(0), 5).xoff);
    assert_eq!(tm.take_pfc(0), None);
}

proptest! {
    /// Any mix of frames, classes, ports, pauses and dequeues: the buffer's
    /// cells always equal the cells of the frames queued, queue bytes equal
    /// the frames' bytes, and draining everything returns every cell.
    #[test]
    fn accounting_is_conserved(ops in proptest::collection::vec((0u8..4, 0u16..3, 0u16..3, 0u8..8, 64u32..3000), 1..300)) {
        let mut config = lossless_config(3);
        config.pool.size_bytes = 256 * 1024;
        config.watchdog.enabled = false;
        let mut tm = TrafficManager::new(&config, 0u32).unwrap();
        let mut queued: std::collections::HashMap<u32, u32> = Default::default();
        let mut now = 0;
        for (handle, (op, a, b, tc, len)) in ops.into_iter().enumerate() {
            now += 5_000;
            match op {
                0 | 1 => {
                    if tm.enqueue(now, handle as u32, &frame(a, b, tc, len)).is_ok() {
                        queued.insert(handle as u32, len);
                    }
                }
                2 => {
                    match tm.dequeue(now, b) {
                        Dequeue::Send { handle, bytes, .. } => prop_assert_eq!(queued.remove(&handle), Some(bytes)),
                        Dequeue::Discard { handle } => prop_assert!(queued.remove(&handle).is_some()),
                        _ => {}
                    }
                }
                _ => {
                    let mut pfc = PfcFrame { class_enable: 1 << tc, quanta: [0; 8] };
                    pfc.quanta[usize::from(tc)] = len as u16;
                    tm.receive_pfc(now, a, &pfc);
                }
            }
            let cell = tm.buffer().cell_bytes();
            let expected: u32 = queued.values().map(|&l| cells(l, cell)).sum();
            prop_assert_eq!(tm.buffer().used_cells(), expected);
            let bytes: u32 = (0..3).map(|p| tm.port_depth(p).1).sum();
            prop_assert_eq!(bytes, queued.values().sum::<u32>());
            let _ = tm.take_pfc(now);
        }
        now += 1_000_000_000;
        for port in 0..3 {
            loop {
                match tm.dequeue(now, port) {
                    Dequeue::Send { handle, .. } | Dequeue::Discard { handle } => { queued.remove(&handle); }
                    Dequeue::Wait(at) => now = at,
                    Dequeue::Idle => break,
                }
            }
        }
        prop_assert!(queued.is_empty());
        prop_assert_eq!(tm.buffer().used_cells(), 0);
        prop_assert_eq!(tm.buffer().shared_used(), 0);
        prop_assert!((0..3).all(|p| (0..8).all(|pg| !tm.priority_group(Some(p), pg).xoff)));
    }
}
