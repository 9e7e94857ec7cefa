//! The traffic manager's families, from the same handlers as `swcli show
//! pfc counters`, `queue counters`, `queue wredcounters`, `buffer pool`,
//! `pfcwd stats` and `dlb` (the shim's `QosReport`); none when the qos
//! traffic manager does not run.

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Unit;
use sai_shim::Backend;

use super::{Labels, counter, family, gauge};
use crate::mgmt::SwitchView;

const PRIORITIES: [&str; 8] = ["0", "1", "2", "3", "4", "5", "6", "7"];

pub(super) fn encode<B: Backend>(view: &SwitchView<B>, e: &mut DescriptorEncoder) -> fmt::Result {
    let pfc = view.pfc_counters();
    let per_priority = |f: &dyn Fn(&mgmt_cli::qos::PfcCounters, usize) -> u64| {
        let mut out: Vec<(Labels, _)> = Vec::new();
        for row in &pfc {
            for (p, priority) in PRIORITIES.iter().enumerate() {
                out.push((vec![("port", row.port.as_str()), ("priority", *priority)], counter(f(row, p))));
            }
        }
        out
    };
    family(e, "switch_pfc_received_frames", "PFC frames received, by priority", None, per_priority(&|r, p| r.rx[p]))?;
    family(e, "switch_pfc_transmitted_frames", "PFC frames sent, by priority", None, per_priority(&|r, p| r.tx[p]))?;
    let paused: Vec<(Labels, _)> = pfc
        .iter()
        .flat_map(|row| {
            PRIORITIES.iter().enumerate().map(|(p, priority)| {
                let seconds = row.paused_us[p] as f64 / 1e6;
                (vec![("port", row.port.as_str()), ("priority", *priority)], counter_f64(seconds))
            })
        })
        .collect();
    family(e, "switch_pfc_paused", "Time the peer held the priority paused", Some(&Unit::Seconds), paused)?;

    let queues = view.queue_counters();
    let per_queue = |f: fn(&mgmt_cli::qos::QueueCounters) -> u64| -> Vec<(Labels, _)> {
        queues.iter().map(|q| (vec![("port", q.port.as_str()), ("queue", queue(&q.txq))], counter(f(q)))).collect()
    };
    family(e, "switch_queue_transmitted_packets", "Frames sent from the queue", None, per_queue(|q| q.counter_pkts))?;
    family(
        e,
        "switch_queue_transmitted",
        "Bytes sent from the queue",
        Some(&Unit::Bytes),
        per_queue(|q| q.counter_bytes),
    )?;
    family(e, "switch_queue_dropped_packets", "Frames the queue dropped", None, per_queue(|q| q.drop_pkts))?;
    family(e, "switch_queue_dropped", "Bytes the queue dropped", Some(&Unit::Bytes), per_queue(|q| q.drop_bytes))?;
    let depth: Vec<(Labels, _)> = queues
        .iter()
        .map(|q| (vec![("port", q.port.as_str()), ("queue", queue(&q.txq))], gauge(q.depth_bytes as usize)))
        .collect();
    family(e, "switch_queue_depth", "Bytes waiting in the queue", Some(&Unit::Bytes), depth)?;

    let wred = view.wred_counters();
    let per_wred = |f: fn(&mgmt_cli::qos::WredCounters) -> u64| -> Vec<(Labels, _)> {
        wred.iter().map(|q| (vec![("port", q.port.as_str()), ("queue", queue(&q.txq))], counter(f(q)))).collect()
    };
    family(e, "switch_queue_wred_dropped_packets", "Frames WRED dropped", None, per_wred(|q| q.wred_drp_pkts))?;
    family(e, "switch_queue_ecn_marked_packets", "Frames marked CE", None, per_wred(|q| q.ecn_marked_pkts))?;

    let pools = view.buffer_pools();
    let per_pool = |f: fn(&mgmt_cli::qos::BufferPool) -> u64| -> Vec<(Labels, _)> {
        pools.iter().map(|p| (vec![("pool", p.pool.as_str())], gauge(f(p) as usize))).collect()
    };
    family(e, "switch_buffer_pool_size", "The shared buffer's size", Some(&Unit::Bytes), per_pool(|p| p.size_bytes))?;
    family(e, "switch_buffer_pool_used", "Bytes of the buffer in use", Some(&Unit::Bytes), per_pool(|p| p.used_bytes))?;
    family(
        e,
        "switch_buffer_pool_watermark",
        "The most of the buffer in use",
        Some(&Unit::Bytes),
        per_pool(|p| p.watermark_bytes),
    )?;
    let drops: Vec<(Labels, _)> = pools
        .iter()
        .flat_map(|p| {
            p.drops
                .iter()
                .map(|(reason, n)| (vec![("pool", p.pool.as_str()), ("reason", reason.as_str())], counter(*n)))
        })
        .collect();
    family(e, "switch_buffer_dropped_packets", "Frames the traffic manager refused, by reason", None, drops)?;

    let watchdog = view.pfcwd_stats();
    let queue_names: Vec<String> = watchdog.iter().map(|w| w.queue.to_string()).collect();
    let per_watched = |f: fn(&mgmt_cli::qos::PfcwdStats) -> u64| -> Vec<(Labels, _)> {
        watchdog
            .iter()
            .zip(&queue_names)
            .map(|(w, q)| (vec![("port", w.port.as_str()), ("queue", q.as_str())], counter(f(w))))
            .collect()
    };
    family(
        e,
        "switch_pfcwd_storms_detected",
        "PFC storms the watchdog detected",
        None,
        per_watched(|w| w.storm_detected),
    )?;
    family(e, "switch_pfcwd_storms_restored", "PFC storms that ended", None, per_watched(|w| w.storm_restored))?;
    family(
        e,
        "switch_pfcwd_dropped_packets",
        "Frames the watchdog's drop action discarded",
        None,
        per_watched(|w| w.tx_drop),
    )?;
    let stormed: Vec<(Labels, _)> = watchdog
        .iter()
        .zip(&queue_names)
        .map(|(w, q)| {
            (vec![("port", w.port.as_str()), ("queue", q.as_str())], gauge(usize::from(w.status == "stormed")))
        })
        .collect();
    family(e, "switch_pfcwd_stormed", "1 while the queue is in a storm", None, stormed)?;
    // The latest storm's instants and delays, in the switch's own clock
    // (seconds since its forwarding thread started), as `show pfcwd stats`
    // gives them in ns; only queues that had one.
    let seconds = |f: NsOf| -> Vec<(Labels, _)> {
        watchdog
            .iter()
            .zip(&queue_names)
            .filter_map(|(w, q)| {
                let ns = f(w)?;
                Some((vec![("port", w.port.as_str()), ("queue", q.as_str())], gauge_f64(ns as f64 / 1e9)))
            })
            .collect()
    };
    let watchdog_times: [(&str, &str, NsOf); 4] = [
        ("switch_pfcwd_last_storm_detected", "When the watchdog detected the latest storm", |w| {
            w.last_storm_detected_ns
        }),
        ("switch_pfcwd_last_storm_restored", "When the watchdog restored the queue after its latest storm", |w| {
            w.last_storm_restored_ns
        }),
        (
            "switch_pfcwd_last_detection_delay",
            "From the latest storm's beginning to its detection (at most detection time + poll interval)",
            |w| w.last_detection_ns,
        ),
        (
            "switch_pfcwd_last_restoration_delay",
            "From the peer's last pause of the latest storm to the restoration (at most restoration time + poll \
             interval)",
            |w| w.last_restoration_ns,
        ),
    ];
    for (name, help, f) in watchdog_times {
        family(e, name, help, Some(&Unit::Seconds), seconds(f))?;
    }

    let dlb = view.dlb();
    let groups: Vec<String> = (0..dlb.groups.len()).map(|i| i.to_string()).collect();
    let per_group = |f: fn(&mgmt_cli::qos::DlbGroup) -> u64| -> Vec<(Labels, _)> {
        dlb.groups
            .iter()
            .zip(&groups)
            .map(|(g, i)| (vec![("group", i.as_str()), ("mode", g.mode.as_str())], counter(f(g))))
            .collect()
    };
    family(e, "switch_dlb_packets", "Frames DLB placed on a member", None, per_group(|g| g.packets))?;
    family(e, "switch_dlb_flowlets", "Flowlets DLB started", None, per_group(|g| g.flowlets))?;
    family(e, "switch_dlb_moves", "Flowlets DLB moved to another member", None, per_group(|g| g.moves))?;
    Ok(())
}

/// One instant or delay of a `show pfcwd stats` row, in ns.
type NsOf = fn(&mgmt_cli::qos::PfcwdStats) -> Option<u64>;

/// `UC3` -> `3`.
fn queue(txq: &str) -> &str {
    txq.strip_prefix("UC").unwrap_or(txq)
}

fn gauge_f64(value: f64) -> prometheus_client::metrics::gauge::ConstGauge<f64> {
    prometheus_client::metrics::gauge::ConstGauge::new(value)
}

fn counter_f64(value: f64) -> prometheus_client::metrics::counter::ConstCounter<f64> {
    prometheus_client::metrics::counter::ConstCounter::new(value)
}
