//! `labs sim compare`: several runs of one workload side by side, as
//! `compare.csv` (one row per run) and `compare.json`.

use std::fmt::Write as _;
use std::path::Path;

use super::Run;

pub fn write(runs: &[(String, Run)], dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut csv = String::from(
        "run,jct_ns,fct_slowdown_p50,fct_slowdown_p99,goodput_gbps_per_host,drops,ecn_marked,pfc_frames,paused_ports,paused_ns,queue_p99_bytes\n",
    );
    for (name, run) in runs {
        let r = &run.report;
        let jct = r.collectives.iter().filter_map(|c| c.jct_ns).max().map_or(String::new(), |j| j.to_string());
        let _ = writeln!(
            csv,
            "{name},{jct},{:.4},{:.4},{:.3},{},{},{},{},{},{}",
            r.fct_slowdown.p50,
            r.fct_slowdown.p99,
            r.goodput_gbps_per_host,
            r.drops_total,
            r.ecn_marked,
            r.pfc_frames_sent,
            r.paused_ports,
            r.paused_ns_total,
            r.queue_depth_bytes.p99
        );
    }
    std::fs::write(dir.join("compare.csv"), csv).map_err(|e| format!("compare.csv: {e}"))?;
    let reports: Vec<_> = runs.iter().map(|(name, run)| (name.clone(), run.report.clone())).collect();
    let json = serde_json::to_string_pretty(&reports).expect("serialises");
    std::fs::write(dir.join("compare.json"), json + "\n").map_err(|e| format!("compare.json: {e}"))?;
    Ok(())
}
