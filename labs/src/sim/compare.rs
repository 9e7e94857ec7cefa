//! `labs sim compare`: several runs of one workload side by side, as
//! `compare.csv` (one row per run) and `compare.json`.

use std::fmt::Write as _;
use std::path::Path;

use super::Run;
use super::ib::IbReport;
use super::output::{BackgroundResult, CollectiveResult};

/// One row per run: the Ethernet runs, then the IB-like ones (whose
/// `ecn_marked` is the FECN marks, `paused_*` the ports that waited for
/// credit and the time they waited; no PFC, no goodput column). With
/// background traffic, its offered load, messages received whole and FCT
/// slowdown p50/p99 in the last four columns (empty without).
pub fn write(runs: &[(String, Run)], ib_runs: &[(String, IbReport)], dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut csv = String::from(
        "run,jct_ns,fct_slowdown_p50,fct_slowdown_p99,goodput_gbps_per_host,drops,ecn_marked,pfc_frames,paused_ports,paused_ns,queue_p99_bytes,background_offered_load,background_completed,background_slowdown_p50,background_slowdown_p99\n",
    );
    let jct = |collectives: &[CollectiveResult]| {
        collectives.iter().filter_map(|c| c.jct_ns).max().map_or(String::new(), |j| j.to_string())
    };
    let background = |b: &Option<BackgroundResult>| match b {
        Some(b) => format!("{:.4},{},{:.4},{:.4}", b.offered_load, b.completed, b.fct_slowdown.p50, b.fct_slowdown.p99),
        None => ",,,".into(),
    };
    for (name, run) in runs {
        let r = &run.report;
        let _ = writeln!(
            csv,
            "{name},{},{:.4},{:.4},{:.3},{},{},{},{},{},{},{}",
            jct(&r.collectives),
            r.fct_slowdown.p50,
            r.fct_slowdown.p99,
            r.goodput_gbps_per_host,
            r.drops_total,
            r.ecn_marked,
            r.pfc_frames_sent,
            r.paused_ports,
            r.paused_ns_total,
            r.queue_depth_bytes.p99,
            background(&r.background)
        );
    }
    for (name, r) in ib_runs {
        let _ = writeln!(
            csv,
            "{name},{},{:.4},{:.4},,{},{},,{},{},{},{}",
            jct(&r.collectives),
            r.fct_slowdown.p50,
            r.fct_slowdown.p99,
            r.drops,
            r.fecn_marked,
            r.waiting_ports,
            r.xmit_wait_ns,
            r.queue_depth_bytes.p99,
            background(&r.background)
        );
    }
    std::fs::write(dir.join("compare.csv"), csv).map_err(|e| format!("compare.csv: {e}"))?;
    let mut reports: Vec<(String, serde_json::Value)> = Vec::new();
    for (name, run) in runs {
        reports.push((name.clone(), serde_json::to_value(&run.report).expect("serialises")));
    }
    for (name, report) in ib_runs {
        reports.push((name.clone(), serde_json::to_value(report).expect("serialises")));
    }
    let json = serde_json::to_string_pretty(&reports).expect("serialises");
    std::fs::write(dir.join("compare.json"), json + "\n").map_err(|e| format!("compare.json: {e}"))?;
    Ok(())
}
