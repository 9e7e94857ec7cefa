//! The simulator against arithmetic, against itself (determinism) and
//! against the classic results of fabric congestion studies. Pure
//! in-process runs on small fabrics.

use labs::sim::fabric::{self, Fabric};
use labs::sim::{self, Experiment, Kind, LoadBalancing, WorkloadSpec};

fn spec(kind: Kind, bytes: u64) -> WorkloadSpec {
    WorkloadSpec { kind, bytes, jitter_ns: 0, compute_ns: 0, iterations: 1 }
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
