//! The simulator against arithmetic, against itself (determinism) and
//! against the classic results of fabric congestion studies. Pure
//! in-process runs on small fabrics.

use labs::sim::fabric::{self, Fabric};
use labs::sim::{self, Experiment, Kind, LoadBalancing, WorkloadSpec};

fn spec(kind: Kind, bytes: u64) -> WorkloadSpec {
    WorkloadSpec { kind, bytes, jitter_ns: 0, compute_ns: 0, iterations: 1, ..Default::default() }
}

fn star(hosts: usize) -> Fabric {
    Fabric::from_topology(&fabric::star("star", hosts)).unwrap()
}

#[test]
fn a_single_flow_takes_serialisation_plus_propagation_exactly() {
    // Two hosts on one switch; 1 MiB in 4096-byte packets, 100 Gb/s, 500 ns cables.
    let experiment = Experiment { sample_ns: 0, ..Experiment::default() };
    let run = sim::run("single", star(2), experiment.clone(), spec(Kind::Incast, 1 << 20), None, None).unwrap();
    let report = &run.report;
    assert!(report.finished);
    assert_eq!(report.drops_total, 0);
    // 256 packets of 4096 bytes: frames of 4096 + 54 headers + 4 ICRC =
    // 4154 bytes, + 24 on the wire = 33,424 bits = 334.24 ns, rounded up.
    let wire = labs::sim::link::Wire::new(experiment.link_bps, experiment.link_delay_ns);
    let per_packet = wire.serialisation_ns(4154);
    assert_eq!(per_packet, 335);
    // Back to back on the host's link, then the last packet crosses the
    // switch (store and forward) and the second link.
    let expected = 256 * per_packet + 2 * 500 + per_packet;
    assert_eq!(report.collectives[0].jct_ns, Some(expected));
    assert!((report.fct_slowdown.max - 1.0).abs() < 1e-9, "{:?}", report.fct_slowdown);
}

/// The payload bandwidth of a 100 Gb/s link with 4096-byte payloads:
/// each packet is 4154 bytes of frame plus 24 on the wire.
fn payload_bps(experiment: &Experiment) -> f64 {
    experiment.link_bps as f64 * 4096.0 / (4154.0 + 24.0)
}

#[test]
fn ring_allreduce_without_contention_takes_2_n_minus_1_over_n_s_over_b_plus_latency() {
    let experiment = Experiment { sample_ns: 0, ..Experiment::default() };
    let (n, size) = (8u64, 8u64 << 20);
    let run = sim::run("ring", star(n as usize), experiment.clone(), spec(Kind::Allreduce, size), None, None).unwrap();
    let report = &run.report;
    assert!(report.finished);
    assert_eq!(report.drops_total, 0);
    assert_eq!(report.pfc_frames_sent, 0, "one flow per port: nothing to pause");
    let jct = report.collectives[0].jct_ns.unwrap() as f64;
    // Bandwidth term, and per step the last packet's store and forward
    // through the switch plus two cables.
    let bandwidth = 2.0 * (n - 1) as f64 / n as f64 * size as f64 * 8.0 / payload_bps(&experiment) * 1e9;
    let latency = 2.0 * (n - 1) as f64 * (2.0 * experiment.link_delay_ns as f64 + 335.0);
    let expected = bandwidth + latency;
    assert!((jct - expected).abs() / expected < 0.02, "JCT {jct} ns, expected {expected} ns");
}

#[test]
fn a_3_to_1_incast_shares_the_bottleneck_fairly() {
    let experiment = Experiment { sample_ns: 0, ..Experiment::default() };
    let size = 4u64 << 20;
    let run = sim::run("incast", star(4), experiment.clone(), spec(Kind::Incast, size), None, None).unwrap();
    let report = &run.report;
    assert!(report.finished);
    assert_eq!(report.drops_total, 0, "lossless: PFC, never drops");
    assert!(report.pfc_frames_sent > 0, "the receiver's port is oversubscribed 3:1: the switch pauses the senders");
    assert_eq!(report.paused_hosts, 3);
    // All three finish together, at three times one flow's time.
    let jct = report.collectives[0].jct_ns.unwrap() as f64;
    let alone = size as f64 * 8.0 / payload_bps(&experiment) * 1e9;
    assert!((jct / (3.0 * alone) - 1.0).abs() < 0.03, "JCT {jct} ns vs 3 x {alone} ns");
    let dir = tempfile::tempdir().unwrap();
    run.write(dir.path()).unwrap();
    let fcts: Vec<f64> = std::fs::read_to_string(dir.path().join("messages.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| line.split(',').nth(7).unwrap().parse().unwrap())
        .collect();
    let (min, max) = fcts.iter().fold((f64::MAX, 0f64), |(lo, hi), &f| (lo.min(f), hi.max(f)));
    assert!(max / min < 1.05, "FCTs {fcts:?}");
}

#[test]
fn the_same_run_twice_writes_identical_files() {
    let experiment = Experiment { lb: LoadBalancing::Spray, ecn: true, ..Experiment::default() };
    let fabric = || Fabric::from_topology(&labs::generate::fattree("ft", 4).unwrap().topology).unwrap();
    let spec = WorkloadSpec { jitter_ns: 20_000, ..spec(Kind::AllToAll, 1 << 20) };
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    for dir in &dirs {
        let run = sim::run("det", fabric(), experiment.clone(), spec.clone(), None, None).unwrap();
        assert!(run.report.finished);
        run.write(dir.path()).unwrap();
    }
    for file in ["summary.json", "messages.csv", "ports.csv", "queues.csv"] {
        let a = std::fs::read(dirs[0].path().join(file)).unwrap();
        let b = std::fs::read(dirs[1].path().join(file)).unwrap();
        assert!(a.len() > 100, "{file} is nearly empty");
        assert!(a == b, "{file} differs between two runs");
    }
}

#[test]
fn flowlets_and_spraying_beat_static_ecmp_on_an_all_to_all() {
    // Two-tier fat-tree of radix 8: 8 leaves of 4 hosts, 4 spines.
    let fabric = || Fabric::from_topology(&labs::generate::fattree("ft8", 8).unwrap().topology).unwrap();
    let jct = |lb| {
        let experiment = Experiment { lb, flowlet_us: 2, sample_ns: 0, ..Experiment::default() };
        let run = sim::run("a2a", fabric(), experiment, spec(Kind::AllToAll, 2 << 20), None, None).unwrap();
        assert!(run.report.finished);
        assert_eq!(run.report.drops_total, 0);
        run.report.collectives[0].jct_ns.unwrap() as f64
    };
    let (ecmp, flowlet, spray) = (jct(LoadBalancing::Ecmp), jct(LoadBalancing::Flowlet), jct(LoadBalancing::Spray));
    assert!(flowlet < 0.9 * ecmp, "flowlet {flowlet} ns vs ECMP {ecmp} ns");
    assert!(spray < 0.9 * ecmp, "spray {spray} ns vs ECMP {ecmp} ns");
}

/// Incast from three hosts on two leaves into one host, and a victim flow
/// between two other hosts whose path shares a leaf with the incast.
fn incast_with_victim(ecn: bool) -> (sim::Report, u64, u64) {
    use labs::sim::queue::HeapQueue;
    use labs::sim::workload::Workload;
    let fabric = Fabric::from_topology(&labs::generate::fattree("ft4", 4).unwrap().topology).unwrap();
    let host = |name: &str| fabric.hosts.iter().position(|h| h.name == format!("{name}:eth1")).unwrap() as u32;
    let mut workload = Workload::default();
    let incast = [host("server1"), host("server2"), host("server3")];
    let (receiver, victim, victim_to) = (host("server8"), host("server4"), host("server6"));
    let (collective, background) = (workload.collective("incast".into()), workload.collective("victim".into()));
    for &sender in &incast {
        workload.message(sender, receiver, 4 << 20, collective, 0);
    }
    workload.message(victim, victim_to, 8 << 20, background, 0);
    let workload = workload.finish();
    let experiment = Experiment { ecn, sample_ns: 0, ..Experiment::default() };
    let mut simulation = sim::Simulation::new(fabric, experiment, workload, HeapQueue::default()).unwrap();
    simulation.run();
    assert!(simulation.finished());
    let victim_paused = simulation.hosts[victim as usize].paused_ns();
    let victim_fct = simulation.records[3].fct_ns().unwrap();
    let report = sim::Report::new(&simulation, "victim", spec(Kind::Incast, 0));
    (report, victim_paused, victim_fct)
}

#[test]
fn pfc_alone_spreads_congestion_to_a_victim_and_dcqcn_removes_it() {
    let (pfc, pfc_victim_paused, pfc_victim_fct) = incast_with_victim(false);
    let (dcqcn, dcqcn_victim_paused, dcqcn_victim_fct) = incast_with_victim(true);
    eprintln!(
        "PFC: victim paused {pfc_victim_paused} ns, FCT {pfc_victim_fct} ns, {} ports paused {} ns; DCQCN: victim paused {dcqcn_victim_paused} ns, FCT {dcqcn_victim_fct} ns, {} ports paused {} ns, {} marks {} cnps",
        pfc.paused_ports, pfc.paused_ns_total, dcqcn.paused_ports, dcqcn.paused_ns_total, dcqcn.ecn_marked, dcqcn.cnps
    );
    assert_eq!(pfc.drops_total + dcqcn.drops_total, 0);
    // PFC alone: the incast's pauses travel back through the spines and the
    // leaves to the NIC of a host that sends no incast traffic.
    assert!(pfc_victim_paused > 0);
    assert!(pfc.paused_ports > 0);
    // DCQCN: the senders slow down on CE marks before any queue reaches XOFF.
    assert!(dcqcn.ecn_marked > 0 && dcqcn.cnps > 0);
    assert!(dcqcn_victim_paused * 10 <= pfc_victim_paused);
    assert!(dcqcn.paused_ns_total * 10 <= pfc.paused_ns_total);
}

#[test]
fn plots_are_written_as_png_and_svg() {
    if !labs::sim::plot::FONT_PATHS.iter().any(|p| std::path::Path::new(p).exists()) {
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "fonts-dejavu-core is missing");
        eprintln!("skipped: no DejaVu Sans (fonts-dejavu-core)");
        return;
    }
    let experiment = Experiment { sample_ns: 5_000, ..Experiment::default() };
    let run = sim::run("plots", star(4), experiment, spec(Kind::Incast, 1 << 20), None, None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    run.write_plots(dir.path()).unwrap();
    let compare = [&run.plot_data, &run.plot_data];
    labs::sim::plot::write_compare(&compare, dir.path()).unwrap();
    for stem in ["queues", "pauses", "fct-cdf", "compare-fct-cdf", "compare-jct-cdf"] {
        let png = std::fs::read(dir.path().join(format!("{stem}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{stem}.png");
        let svg = std::fs::read_to_string(dir.path().join(format!("{stem}.svg"))).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("<text"), "{stem}.svg");
    }
    // The queue plot has the incast receiver's port, the deepest.
    let svg = std::fs::read_to_string(dir.path().join("queues.svg")).unwrap();
    assert!(svg.contains("sw1:eth4"));
}

#[test]
fn a_lossy_incast_drops_and_recovers_by_retransmission() {
    let experiment = Experiment { pfc: false, sample_ns: 0, ..Experiment::default() };
    let run = sim::run("lossy", star(8), experiment, spec(Kind::Incast, 2 << 20), None, None).unwrap();
    let report = &run.report;
    assert!(report.finished, "every message arrives in the end");
    assert!(report.drops["egress-limit"] > 0, "7:1 into a lossy queue: tail drops");
    assert_eq!(report.pfc_frames_sent, 0);
    assert!(report.timeouts > 0, "lost tails come back after the retransmission timeout");
}

#[test]
fn a_link_failure_mid_collective_reroutes_and_the_collective_finishes() {
    let fabric = || Fabric::from_topology(&labs::generate::fattree("ft4", 4).unwrap().topology).unwrap();
    let base = Experiment { sample_ns: 0, ..Experiment::default() };
    let healthy = sim::run("ok", fabric(), base.clone(), spec(Kind::AllToAll, 4 << 20), None, None).unwrap();
    // Cable 0 is a leaf's uplink to a spine; it fails 20 us in.
    let failing = Experiment { link_failure: Some((0, 20_000)), ..base };
    let failed = sim::run("failed", fabric(), failing, spec(Kind::AllToAll, 4 << 20), None, None).unwrap();
    let (ok, bad) = (&healthy.report, &failed.report);
    assert!(ok.finished && bad.finished);
    assert_eq!(ok.drops_total, 0);
    assert!(bad.drops["pipeline-egressportdown"] > 0, "{:?}", bad.drops);
    assert!(bad.routes_rewritten > 0, "the routes move off the dead cable");
    assert!(bad.timeouts > 0, "what was lost is sent again");
    assert!(bad.collectives[0].jct_ns > ok.collectives[0].jct_ns);
}

#[test]
fn the_eta_follows_an_all_to_alls_bytes_not_its_messages() {
    // Four hosts on a switch, 1 MiB each to the other three (3 MiB per
    // host at 100 Gb/s: about 260 us), stopped at 100 us: no message has
    // arrived whole yet (all go at once and share the links), but about
    // 100/260 of the bytes have, and the ETA extrapolates from those.
    let experiment = Experiment { sample_ns: 0, time_limit_ns: 100_000, ..Experiment::default() };
    let run = sim::run("eta", star(4), experiment, spec(Kind::AllToAll, 4 << 20), None, None).unwrap();
    assert!(!run.report.finished);
    assert_eq!(run.speed.done_fraction, 0.0, "no message whole yet");
    let bytes = run.speed.bytes_done_fraction;
    assert!((0.3..0.45).contains(&bytes), "bytes delivered: {bytes}");
    let eta = run.speed.eta_s().expect("bytes have moved");
    let expected = run.speed.wall_s * (1.0 - bytes) / bytes;
    assert!((eta - expected).abs() <= 1e-9 * expected.max(1.0));
    let finished = sim::run(
        "eta",
        star(4),
        Experiment { sample_ns: 0, ..Experiment::default() },
        spec(Kind::AllToAll, 4 << 20),
        None,
        None,
    )
    .unwrap();
    assert!(finished.report.finished);
    assert_eq!(finished.speed.bytes_done_fraction, 1.0);
    assert_eq!(finished.speed.eta_s(), Some(0.0));
}
