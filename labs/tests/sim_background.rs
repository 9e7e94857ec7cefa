//! Background traffic beside a collective, and the ring's order: the
//! background's offered load, its results apart from the collective's,
//! the collective slowed by background on its own class and not behind
//! strict priority, determinism, and a shuffled ring crossing the spines.

use std::path::Path;

use labs::sim::fabric::Fabric;
use labs::sim::workload::{BackgroundPattern, BackgroundSpec, RingOrder};
use labs::sim::{self, Experiment, Kind, WorkloadSpec};

fn fat_tree(k: usize) -> Fabric {
    Fabric::from_topology(&labs::generate::fattree("ft", k).unwrap().topology).unwrap()
}

fn allreduce(bytes: u64, background: Option<(BackgroundPattern, u64, f64)>) -> WorkloadSpec {
    WorkloadSpec {
        kind: Kind::Allreduce,
        bytes,
        iterations: 1,
        background: background.map(|(pattern, bytes, load)| BackgroundSpec {
            pattern,
            bytes,
            load,
            line_bps: Experiment::default().link_bps,
            until_ns: None,
        }),
        ..Default::default()
    }
}

fn experiment() -> Experiment {
    Experiment { sample_ns: 0, ..Experiment::default() }
}

fn run(fabric: Fabric, experiment: Experiment, spec: WorkloadSpec) -> sim::Run {
    sim::run("ft", fabric, experiment, spec, None, None).unwrap()
}

fn jct(run: &sim::Run) -> f64 {
    assert!(run.report.finished);
    assert_eq!(run.report.collectives.len(), 1, "the background is not a collective");
    run.report.collectives[0].jct_ns.unwrap() as f64
}

/// messages.csv as rows of fields.
fn messages(dir: &Path) -> Vec<Vec<String>> {
    let csv = std::fs::read_to_string(dir.join("messages.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("message,collective,src,dst,bytes,released_ns,completed_ns,fct_ns,ideal_ns,slowdown,traffic")
    );
    lines.map(|l| l.split(',').map(str::to_owned).collect()).collect()
}

#[test]
fn the_background_offers_its_load_and_is_reported_apart_from_the_collective() {
    // A 4 MiB ring all-reduce over the 8 hosts of the k=4 fat-tree beside an
    // all-to-all background of 16 KiB messages at 0.3 of each host's line:
    // about 2,000 messages over the run.
    let load = 0.3;
    let spec = allreduce(4 << 20, Some((BackgroundPattern::AllToAll, 16 << 10, load)));
    let run = run(fat_tree(4), experiment(), spec);
    let report = &run.report;
    assert!(report.finished);
    assert_eq!(report.collectives[0].name, "allreduce");
    let background = report.background.as_ref().expect("the background's results");
    println!(
        "allreduce {:.3} ms; background offered {:.4}, delivered {:.4}, {} of {} released received, FCT p50 {:.1} us",
        report.collectives[0].jct_ns.unwrap() as f64 / 1e6,
        background.offered_load,
        background.delivered_load,
        background.completed,
        background.released,
        background.fct_ns.p50 / 1e3
    );
    assert_eq!((background.senders, background.class, background.dscp), (8, Some(3), Some(26)));
    assert!(background.released > 1_500, "{background:?}");
    assert!(background.completed > 0 && background.completed <= background.released);
    assert!((background.offered_load - load).abs() / load < 0.05, "offered {}", background.offered_load);
    assert!(!background.ended_before_collectives);
    // messages.csv: a traffic column; the offered load again from its rows
    // (released bytes over 8 senders x 100 Gb/s x the run).
    let dir = tempfile::tempdir().unwrap();
    run.write(dir.path()).unwrap();
    let rows = messages(dir.path());
    let collective = rows.iter().filter(|r| r[10] == "collective").count();
    assert_eq!(collective, report.collectives[0].messages);
    assert!(rows.iter().filter(|r| r[10] == "collective").all(|r| r[1] == "allreduce" && !r[6].is_empty()));
    let released: u64 =
        rows.iter().filter(|r| r[10] == "background" && !r[5].is_empty()).map(|r| r[4].parse::<u64>().unwrap()).sum();
    let offered = released as f64 * 8.0 / (8.0 * 100e9 * report.simulated_ns as f64 / 1e9);
    assert!((offered - background.offered_load).abs() < 1e-9, "{offered}");
    // The FCT slowdown percentiles are the collective's alone.
    let mut slowdowns: Vec<f64> =
        rows.iter().filter(|r| r[10] == "collective").map(|r| r[9].parse::<f64>().unwrap()).collect();
    slowdowns.sort_by(f64::total_cmp);
    assert!((report.fct_slowdown.max - slowdowns.last().unwrap()).abs() < 1e-3);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["background"]["spec"]["pattern"], "all-to-all");
    assert_eq!(summary["collectives"].as_array().unwrap().len(), 1);
}

#[test]
fn the_collective_slows_with_background_on_its_class_and_not_behind_strict_priority() {
    // A 2 MiB ring all-reduce on the k=4 fat-tree, a permutation background
    // of 64 KiB messages. On the collective's own class (lossless, round
    // robin with it at the NICs and in queue 3) the JCT grows with the
    // background's load; on class 0 (lossy) with the collective's class
    // strict at the switches and the NICs it stays within 2% of the
    // collective alone (a background packet already on a line delays it by
    // at most that packet).
    let base = jct(&run(fat_tree(4), experiment(), allreduce(2 << 20, None)));
    let background = |load| Some((BackgroundPattern::Permutation, 64 << 10, load));
    let shared: Vec<f64> = [0.2, 0.5]
        .iter()
        .map(|&load| jct(&run(fat_tree(4), experiment(), allreduce(2 << 20, background(load)))))
        .collect();
    let strict_experiment = Experiment { background_class: Some(0), strict_collective: true, ..experiment() };
    let strict_run = run(fat_tree(4), strict_experiment, allreduce(2 << 20, background(0.5)));
    let strict = jct(&strict_run);
    let dwrr_experiment = Experiment { background_class: Some(0), ..experiment() };
    let dwrr = jct(&run(fat_tree(4), dwrr_experiment, allreduce(2 << 20, background(0.5))));
    println!(
        "alone {:.1} us; shared class at 0.2 {:.1} us, at 0.5 {:.1} us; class 0 strict {:.1} us, class 0 DWRR {:.1} us",
        base / 1e3,
        shared[0] / 1e3,
        shared[1] / 1e3,
        strict / 1e3,
        dwrr / 1e3
    );
    assert!(shared[0] > 1.1 * base, "{shared:?} against {base}");
    assert!(shared[1] > 1.2 * shared[0], "{shared:?}");
    assert!((strict - base).abs() / base < 0.02, "strict {strict} against {base}");
    assert!(dwrr > 1.1 * base, "without strict priority the background still slows it: {dwrr}");
    // The background did run beside it, on class 0 (DSCP 0).
    let b = strict_run.report.background.as_ref().unwrap();
    assert_eq!((b.class, b.dscp, b.strict_collective), (Some(0), Some(0), true));
    assert!(b.released > 0);
}

#[test]
fn a_run_with_background_twice_gives_identical_files() {
    let spec = allreduce(1 << 20, Some((BackgroundPattern::Incast { senders: Some(3) }, 32 << 10, 0.4)));
    let experiment = Experiment { sample_ns: 5_000, ..Experiment::default() };
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    for dir in &dirs {
        run(fat_tree(4), experiment.clone(), spec.clone()).write(dir.path()).unwrap();
    }
    for file in ["summary.json", "messages.csv", "ports.csv", "queues.csv"] {
        let read = |d: &tempfile::TempDir| std::fs::read(d.path().join(file)).unwrap();
        assert_eq!(read(&dirs[0]), read(&dirs[1]), "{file}");
    }
}

/// Bytes the spine switches sent.
fn spine_bytes(run: &sim::Run) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    run.write(dir.path()).unwrap();
    let csv = std::fs::read_to_string(dir.path().join("ports.csv")).unwrap();
    csv.lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| r[0].starts_with("spine"))
        .map(|r| r[4].parse::<u64>().unwrap())
        .sum()
}

#[test]
fn a_random_ring_order_crosses_the_spine_layer() {
    // The k=8 two-tier fat-tree: 32 hosts, four per leaf. In host order a
    // ring step crosses to another leaf only at each leaf's last host (8 of
    // 32); in a seeded random order most do, so the spines carry several
    // times the bytes, and their ECMP collisions slow the all-reduce.
    let spec = |ring_order| WorkloadSpec { ring_order, ..allreduce(1 << 20, None) };
    let host = run(fat_tree(8), experiment(), spec(RingOrder::Host));
    let random = run(fat_tree(8), experiment(), spec(RingOrder::Random));
    let (host_spine, random_spine) = (spine_bytes(&host), spine_bytes(&random));
    println!(
        "spine bytes: host order {host_spine}, random {random_spine}; JCT {:.1} us and {:.1} us",
        jct(&host) / 1e3,
        jct(&random) / 1e3
    );
    assert!(host_spine > 0);
    assert!(random_spine > 3 * host_spine, "{host_spine} {random_spine}");
    assert!(jct(&random) > jct(&host));
    // Rail order on one NIC per server is the host order.
    let rail = run(fat_tree(8), experiment(), spec(RingOrder::Rail));
    assert_eq!(jct(&rail), jct(&host));
}

#[test]
fn the_cli_runs_and_compares_with_background_and_refuses_bad_flags() {
    let dir = tempfile::tempdir().unwrap();
    let labs = || std::process::Command::new(env!("CARGO_BIN_EXE_labs"));
    let out = labs()
        .args(["sim", "compare", "--fattree", "4", "--tiers", "2", "--workload", "allreduce", "--size", "1MiB"])
        .args(["--lb", "ecmp,spray", "--background", "incast:3", "--background-size", "64KiB"])
        .args(["--background-load", "0.2", "--ring-order", "random", "--no-plots", "--quiet", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("background on class 3: offered"), "{stdout}");
    let csv = std::fs::read_to_string(dir.path().join("compare.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = header.iter().position(|&c| c == "background_offered_load").unwrap();
    for row in csv.lines().skip(1) {
        let offered: f64 = row.split(',').nth(column).unwrap().parse().unwrap();
        assert!(offered > 0.0, "{csv}");
    }
    let summary = std::fs::read_to_string(dir.path().join("spray").join("summary.json")).unwrap();
    assert!(summary.contains("\"ring_order\": \"random\""), "{summary}");
    let refused = |args: &[&str]| {
        let out = labs()
            .args(["sim", "--star", "4", "--no-plots", "--quiet", "--out"])
            .arg(dir.path().join("bad"))
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(refused(&["--background", "all-to-all", "--background-class", "6"]).contains("the CNPs' strict class"));
    assert!(
        refused(&["--background", "all-to-all", "--background-class", "3", "--strict-collective"])
            .contains("other than 3")
    );
    assert!(refused(&["--background", "incast:9"]).contains("at most 3 senders"));
    assert!(refused(&["--background", "shuffle"]).contains("permutation, all-to-all, incast or incast:N"));
    assert!(refused(&["--background-load", "0.5"]).contains("--background"));
    assert!(refused(&["--background", "permutation", "--background-load", "2"]).contains("--background-load"));
    assert!(
        refused(&["--fabric", "ib", "--background", "permutation", "--background-class", "0"])
            .contains("--background-class")
    );
}

#[test]
fn flowlets_and_spraying_cut_a_random_rings_allreduce_against_static_ecmp() {
    // The classic all-reduce result, which the host order hides (its ring
    // steps mostly stay on a leaf): on the k=8 fat-tree, a 1 MiB all-reduce
    // in a random ring order collides on ECMP's spine uplinks; flowlet DLB
    // and spraying spread it (measured 0.513 ms, 0.410 ms, 0.405 ms).
    let jct_with = |lb| {
        let experiment = Experiment { lb, ..experiment() };
        jct(&run(fat_tree(8), experiment, WorkloadSpec { ring_order: RingOrder::Random, ..allreduce(1 << 20, None) }))
    };
    use labs::sim::LoadBalancing::{Ecmp, Flowlet, Spray};
    let (ecmp, flowlet, spray) = (jct_with(Ecmp), jct_with(Flowlet), jct_with(Spray));
    println!("random ring: ECMP {ecmp} ns, flowlet {flowlet} ns, spray {spray} ns");
    assert!(flowlet < 0.9 * ecmp && spray < 0.9 * ecmp, "{ecmp} {flowlet} {spray}");
}
