//! The IB-like plane in the simulator: `qos::ib`'s switch engine and
//! credit layer at every switch and HCA, LFTs from `subnet-manager`'s
//! routing engines; against arithmetic and beside the Ethernet lossless
//! class on the same fabric.

use labs::sim::fabric::{self, Fabric};
use labs::sim::ib::{FRAME_OVERHEAD, IbCongestionControl, IbExperiment, IbReport, IbSimulation, PACKET_OVERHEAD};
use labs::sim::ib_sm::SmTiming;
use labs::sim::{self, Experiment, Kind, WorkloadSpec, workload};
use subnet_manager::routing::Engine;

fn spec(kind: Kind, bytes: u64) -> WorkloadSpec {
    WorkloadSpec { kind, bytes, jitter_ns: 0, compute_ns: 0, iterations: 1, ..Default::default() }
}

fn run(fabric: Fabric, experiment: IbExperiment, spec: WorkloadSpec) -> IbReport {
    let workload = workload::build(&spec, fabric.hosts.len(), 1).unwrap();
    let mut sim = IbSimulation::new(fabric, experiment, workload).unwrap();
    sim.run();
    sim.report("test")
}

fn fat_tree() -> Fabric {
    Fabric::from_topology(&labs::generate::fattree("ft4", 4).unwrap().topology).unwrap()
}

/// Payload bits per second of an IB-like link: each 4096-byte payload
/// travels with LRH, BTH, ICRC and VCRC (26 bytes), the Ethernet header
/// and shim (16) and 24 bytes of preamble, FCS and gap: 333 ns a packet.
fn ib_payload_bps(experiment: &IbExperiment) -> f64 {
    let wire = 4096 + PACKET_OVERHEAD + FRAME_OVERHEAD + 24;
    experiment.link_bps as f64 * 4096.0 / f64::from(wire)
}

#[test]
fn an_incast_under_credits_drops_nothing_and_shares_the_bottleneck() {
    // Three HCAs send 4 MiB each to a fourth through one switch; the
    // receiver's port is the bottleneck. 64 KiB of buffer per VL: more
    // than a round trip's worth, so credits never idle the bottleneck, and
    // the senders wait for them once the switch's input buffers are full.
    let experiment = IbExperiment { buffer_blocks: 1024, ..IbExperiment::default() };
    let bytes = 4u64 << 20;
    let fabric = Fabric::from_topology(&fabric::star("star", 4)).unwrap();
    let report = run(fabric, experiment.clone(), spec(Kind::Incast, bytes));
    assert!(report.finished);
    assert_eq!(report.drops, 0, "credits: nothing dropped");
    assert!(report.xmit_wait > 0, "the senders waited for credit");
    // The bottleneck at its payload rate: 3 x 4 MiB, plus the last
    // packet's way through the switch and two cables.
    let jct = report.collectives[0].jct_ns.unwrap() as f64;
    let expected = (3 * bytes * 8) as f64 / ib_payload_bps(&experiment) * 1e9;
    assert!((jct - expected) / expected < 0.01 && jct >= expected, "JCT {jct} ns, the bottleneck says {expected} ns");
    // Shared fairly: VL arbitration round robins the three inputs' VOQ.
    let fcts: Vec<f64> = report.fcts_ns.iter().map(|(_, _, fct)| fct.unwrap() as f64).collect();
    let (min, max) = (fcts.iter().cloned().fold(f64::MAX, f64::min), fcts.iter().cloned().fold(0.0, f64::max));
    assert!((max - min) / max < 0.05, "FCTs {fcts:?}");
    // The receiver's port carried the whole 12 MiB; no other port was
    // busier than one sender.
    let receiver = report.ports.iter().find(|p| p.port == "eth4").unwrap();
    assert!(receiver.xmit_bytes >= 3 * bytes, "{receiver:?}");
}

#[test]
fn credits_below_a_round_trip_cap_the_link_at_buffer_over_round_trip() {
    // 256 blocks (16 KiB) per VL hold three 4096-byte packets (65 blocks
    // each). The switch sends three to the receiving HCA (333 ns each on
    // the wire), and the credit for the first comes back when that packet
    // is whole at the HCA (333 + 500 ns) and the HCA's flow-control packet
    // has crossed back (a 60-byte frame, 7 ns, + 500 ns): 1,340 ns after
    // it started. So three packets per 1,340 ns, whatever the link could do.
    let experiment = IbExperiment { buffer_blocks: 256, ..IbExperiment::default() };
    let bytes = 4u64 << 20;
    let fabric = Fabric::from_topology(&fabric::star("star", 4)).unwrap();
    let report = run(fabric, experiment.clone(), spec(Kind::Incast, bytes));
    assert!(report.finished);
    assert_eq!(report.drops, 0);
    let packets = 3 * bytes / 4096;
    let expected = packets as f64 / 3.0 * 1340.0;
    let jct = report.collectives[0].jct_ns.unwrap() as f64;
    assert!((jct - expected).abs() / expected < 0.01, "JCT {jct} ns, credit-limited arithmetic {expected} ns");
    let line_rate = (3 * bytes * 8) as f64 / ib_payload_bps(&experiment) * 1e9;
    assert!(jct > 1.3 * line_rate, "credit-limited, well below the line rate ({line_rate} ns)");
}

#[test]
fn every_routing_engine_carries_an_incast_across_the_fat_tree_without_drops() {
    for engine in [Engine::Ftree, Engine::Updn, Engine::Minhop, Engine::Sssp] {
        let experiment = IbExperiment { engines: vec![engine], buffer_blocks: 256, ..IbExperiment::default() };
        let report = run(fat_tree(), experiment, spec(Kind::Incast, 256 << 10));
        assert!(report.finished, "{engine:?}");
        assert_eq!(report.routing_engine, engine.name());
        assert_eq!(report.drops, 0, "{engine:?}");
        assert!(report.xmit_wait > 0, "{engine:?}: 15 senders into one: credit back-pressure");
    }
}

/// `count` switches in a ring, a host on each: not a fat-tree, and from
/// five on with cyclic channel dependencies under shortest paths.
fn ring_of_switches(count: usize) -> Fabric {
    let mut nodes = std::collections::BTreeMap::new();
    let mut links = Vec::new();
    let node = |role: &str| labs::topology::Node {
        kind: "linux".into(),
        labels: [(labs::topology::ROLE_LABEL.to_owned(), role.to_owned())].into(),
        ..labs::topology::Node::default()
    };
    for s in 1..=count {
        nodes.insert(format!("sw{s}"), node("switchd"));
        nodes.insert(format!("h{s}"), node("host"));
        links.push(labs::topology::Link { endpoints: [format!("sw{s}:eth1"), format!("h{s}:eth1")], mtu: None });
        let next = s % count + 1;
        links.push(labs::topology::Link { endpoints: [format!("sw{s}:eth2"), format!("sw{next}:eth3")], mtu: None });
    }
    let topology = labs::topology::Topology {
        name: "ring".into(),
        topology: labs::topology::Body { nodes, links, ..Default::default() },
    };
    Fabric::from_topology(&topology).unwrap()
}

#[test]
fn ftree_declines_what_is_not_a_fat_tree_and_the_next_engine_routes_it() {
    let experiment = IbExperiment { engines: vec![Engine::Ftree, Engine::Updn], ..IbExperiment::default() };
    let report = run(ring_of_switches(3), experiment, spec(Kind::AllToAll, 64 << 10));
    assert_eq!(report.routing_engine, "updn");
    assert!(report.routing_refused[0].starts_with("ftree"), "{:?}", report.routing_refused);
    assert!(report.finished);
    assert_eq!(report.drops, 0);
}

#[test]
fn an_allreduce_on_ib_credits_beside_the_ethernet_lossless_class() {
    // Ring all-reduce of 4 MiB per host over the hosts of a two-tier
    // fat-tree of radix 4, 100 Gb/s, 500 ns cables: the IB-like plane
    // (ftree LFTs, credits) and the Ethernet lossless class (ECMP, PFC).
    let size = 4u64 << 20;
    let ib_experiment = IbExperiment::default();
    let ib = run(fat_tree(), ib_experiment, spec(Kind::Allreduce, size));
    let ethernet_experiment = Experiment { sample_ns: 0, ..Experiment::default() };
    let ethernet = sim::run("ft4", fat_tree(), ethernet_experiment, spec(Kind::Allreduce, size), None, None).unwrap();
    assert!(ib.finished && ethernet.report.finished);
    let n = ib.hosts as u64;
    assert_eq!(ib.drops, 0);
    assert_eq!(ethernet.report.drops_total, 0);
    let ib_jct = ib.collectives[0].jct_ns.unwrap() as f64;
    let ethernet_jct = ethernet.report.collectives[0].jct_ns.unwrap() as f64;
    println!(
        "ring all-reduce, {n} hosts x 4 MiB, two-tier fat-tree k=4, 100 Gb/s: IB-like credits ({} LFTs) {:.1} us, \
         Ethernet lossless class (ECMP, PFC) {:.1} us, ratio {:.3}",
        ib.routing_engine,
        ib_jct / 1e3,
        ethernet_jct / 1e3,
        ib_jct / ethernet_jct
    );
    // Against arithmetic: the bandwidth term 2(N-1)/N S/B at each plane's
    // payload rate, plus per step the last packet's way to the ring
    // neighbour. Step s of host h waits for step s-1 of h-1, so the chain
    // alternates leaf-local steps (two cables) and cross-leaf ones (four),
    // each cable the frame's serialisation and 500 ns. On the IB-like
    // plane each host's sending direction also carries a flow-control
    // frame (60 bytes: 7 ns) per packet it receives, 128 a step.
    let steps = 2.0 * (n - 1) as f64;
    let chunk_packets = (size / n / 4096) as f64;
    let mean_path = |serialisation: f64| (2.0 + 4.0) / 2.0 * (serialisation + 500.0);
    let ib_expected = steps * (chunk_packets * 333.0 + mean_path(333.0) + chunk_packets * 7.0);
    let ethernet_expected = steps * (chunk_packets * 335.0 + mean_path(335.0));
    assert!((ib_jct - ib_expected).abs() / ib_expected < 0.01, "IB JCT {ib_jct} ns, arithmetic {ib_expected} ns");
    assert!(
        (ethernet_jct - ethernet_expected).abs() / ethernet_expected < 0.01,
        "Ethernet JCT {ethernet_jct} ns, arithmetic {ethernet_expected} ns"
    );
    // Both lossless at line rate: within a few percent of each other.
    assert!((ib_jct - ethernet_jct).abs() / ethernet_jct < 0.03, "IB {ib_jct} ns, Ethernet {ethernet_jct} ns");
}

#[test]
fn dfsssp_layers_travel_on_their_own_vls_with_credits_per_vl() {
    // dfsssp breaks the ring's dependency cycle by putting destinations on
    // two SLs, mapped to two VLs with their own buffers and credits and
    // arbitrated at every port.
    let experiment = IbExperiment { engines: vec![Engine::Dfsssp], buffer_blocks: 256, ..IbExperiment::default() };
    let report = run(ring_of_switches(5), experiment, spec(Kind::AllToAll, 1 << 20));
    assert_eq!(report.routing_engine, "dfsssp");
    assert_eq!(report.vls, 2);
    assert!(report.finished);
    assert_eq!(report.drops, 0);
}

#[test]
fn the_same_ib_run_twice_gives_the_same_report() {
    let experiment = IbExperiment { buffer_blocks: 256, ..IbExperiment::default() };
    let workload = WorkloadSpec {
        kind: Kind::AllToAll,
        bytes: 1 << 20,
        jitter_ns: 5_000,
        compute_ns: 0,
        iterations: 1,
        ..Default::default()
    };
    let once = serde_json::to_string(&run(fat_tree(), experiment.clone(), workload.clone())).unwrap();
    let twice = serde_json::to_string(&run(fat_tree(), experiment, workload)).unwrap();
    assert_eq!(once, twice);
}

#[test]
fn minhop_deadlocks_a_ring_on_credits_and_updn_and_dfsssp_do_not() {
    // One packet of buffer per VL (65 blocks) on a ring of five switches,
    // an all-to-all of 4 MiB: minhop's shortest paths chain each switch's
    // buffer to the next around the ring, the buffers fill and every
    // sender waits for a credit that a full buffer downstream holds back
    // (a credit loop: nothing is dropped, nothing moves). updn forbids the
    // cycle's last turn; dfsssp puts it on another VL.
    let deadline = 5_000_000;
    let ring = |engine: Engine| {
        let experiment = IbExperiment {
            engines: vec![engine],
            buffer_blocks: 65,
            time_limit_ns: deadline,
            ..IbExperiment::default()
        };
        run(ring_of_switches(5), experiment, spec(Kind::AllToAll, 4 << 20))
    };
    let minhop = ring(Engine::Minhop);
    assert!(!minhop.finished, "minhop's credit loop");
    assert_eq!(minhop.drops, 0, "a deadlock, not a loss");
    let stuck = minhop.fcts_ns.iter().filter(|(_, _, fct)| fct.is_none()).count();
    assert!(stuck > 0);
    for engine in [Engine::Updn, Engine::Dfsssp] {
        let report = ring(engine);
        assert!(report.finished, "{engine:?}");
        assert_eq!(report.drops, 0, "{engine:?}");
        assert!(report.simulated_ns < deadline / 2, "{engine:?}: {} ns", report.simulated_ns);
    }
}

/// The `ib-fattree` lab copied into `dir`, each switch config edited.
fn ib_lab(dir: &std::path::Path, edit: impl Fn(&str) -> String) -> IbExperiment {
    try_ib_lab(dir, edit).unwrap()
}

fn try_ib_lab(dir: &std::path::Path, edit: impl Fn(&str) -> String) -> Result<IbExperiment, String> {
    let lab = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies");
    std::fs::create_dir_all(dir.join("ib-fattree")).unwrap();
    std::fs::copy(lab.join("ib-fattree.clab.yml"), dir.join("ib-fattree.clab.yml")).unwrap();
    for entry in std::fs::read_dir(lab.join("ib-fattree")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(dir.join("ib-fattree").join(path.file_name().unwrap()), edit(&text)).unwrap();
    }
    let topology = labs::topology::Topology::load(&dir.join("ib-fattree.clab.yml")).unwrap();
    let fabric = Fabric::from_topology(&topology).unwrap();
    let (ports, engines) = labs::sim::ib::settings_from_configs(&fabric, &topology, dir)?;
    Ok(IbExperiment { ports, engines: engines.unwrap(), ..IbExperiment::default() })
}

fn ib_lab_fabric(dir: &std::path::Path) -> Fabric {
    Fabric::from_topology(&labs::topology::Topology::load(&dir.join("ib-fattree.clab.yml")).unwrap()).unwrap()
}

#[test]
fn the_ib_fattree_lab_runs_with_its_own_switch_configs() {
    let dir = tempfile::tempdir().unwrap();
    let experiment = ib_lab(dir.path(), str::to_owned);
    // spine1's SM: `engine: [ftree, minhop]`; every port `data_vls: 2`.
    assert_eq!(experiment.engines, vec![Engine::Ftree, Engine::Minhop]);
    let report = run(ib_lab_fabric(dir.path()), experiment, spec(Kind::AllToAll, 256 << 10));
    assert!(report.finished);
    assert_eq!(report.drops, 0);
    assert_eq!(report.vls, 2);
    assert_eq!(report.routing_engine, "ftree");
}

#[test]
fn ib_rate_and_buffers_in_the_yaml_set_the_bottleneck() {
    // Every port at `ib_rate: 10G`, 64 KiB of buffer per VL, the lab's IB
    // MTU of 1024: a packet is 1024 + 26 + 16 + 24 bytes on the wire,
    // 872 ns at 10 Gb/s; seven HCAs send 256 KiB each into the eighth.
    let dir = tempfile::tempdir().unwrap();
    let experiment = ib_lab(dir.path(), |text| {
        text.replace("data_vls: 2 }", "data_vls: 2, ib_rate: 10G }").replace("ib:\n", "ib:\n  buffer_blocks: 1024\n")
    });
    assert!(experiment.ports.iter().flatten().flatten().all(|p| p.rate_bps == Some(10_000_000_000)));
    let bytes = 256u64 << 10;
    let report = run(ib_lab_fabric(dir.path()), experiment, spec(Kind::Incast, bytes));
    assert!(report.finished);
    assert_eq!(report.drops, 0);
    let jct = report.collectives[0].jct_ns.unwrap() as f64;
    let expected = (7 * bytes / 1024) as f64 * 872.0;
    assert!(
        (jct - expected) / expected < 0.01 && jct >= expected,
        "JCT {jct} ns, the 10 Gb/s bottleneck says {expected} ns"
    );
}

#[test]
fn a_bad_ib_port_in_the_yaml_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let error = try_ib_lab(dir.path(), |text| text.replacen("data_vls: 2", "data_vls: 3", 1)).unwrap_err();
    assert!(error.contains("ports[0].data_vls"), "{error}");
}

#[test]
fn a_slow_reader_throttles_its_sender_through_the_switch_by_credits() {
    // One HCA sends 4 MiB to another on 100 Gb/s links; the receiver reads
    // its buffer at 25 Gb/s (of packet: 4,122 bytes, 1,319 ns each). Its
    // buffer fills, the switch's port to it runs out of credit, the
    // switch's input buffer fills, the sender runs out of credit: the
    // flow goes at the reader's pace, nothing dropped.
    let experiment = IbExperiment { read_bps: Some(25_000_000_000), buffer_blocks: 256, ..IbExperiment::default() };
    let bytes = 4u64 << 20;
    let report = run(Fabric::from_topology(&fabric::star("star", 2)).unwrap(), experiment, spec(Kind::Incast, bytes));
    assert!(report.finished);
    assert_eq!(report.drops, 0);
    let jct = report.collectives[0].jct_ns.unwrap() as f64;
    let expected = (bytes / 4096) as f64 * (4096.0 + 26.0) * 8.0 / 25e9 * 1e9;
    assert!((jct - expected).abs() / expected < 0.01, "JCT {jct} ns, the reader's pace says {expected} ns");
    let to_reader = report.ports.iter().find(|p| p.port == "eth2").unwrap();
    assert!(to_reader.xmit_wait > 0, "the switch waited for the reader's credits: {to_reader:?}");
    // Timed: per packet the port sends for 333 ns (4,162 bytes at 100 Gb/s)
    // and waits for the reader's credit the rest of its 1,319 ns.
    let waiting = to_reader.xmit_wait_ns as f64 / jct;
    let expected = 1.0 - 4162.0 * 8.0 / 100e9 / ((4096.0 + 26.0) * 8.0 / 25e9);
    println!("the port to the reader waited {waiting:.4} of the run for credit, arithmetic {expected:.4}");
    assert!((waiting - expected).abs() < 0.02, "waited {waiting:.4} of the run, arithmetic {expected:.4}");
    let from_sender = report.ports.iter().find(|p| p.port == "eth1").unwrap();
    assert_eq!(from_sender.discards, 0);
}

/// Two switches, one cable between: `sw1` holds a remote incast sender
/// `r1` and the victim's sender `v`; `sw2` holds the incast's target `d`,
/// two local incast senders `l1`, `l2`, and the victim's receiver `f`.
fn victim_fabric() -> Fabric {
    let mut nodes = std::collections::BTreeMap::new();
    let node = |role: &str| labs::topology::Node {
        kind: "linux".into(),
        labels: [(labs::topology::ROLE_LABEL.to_owned(), role.to_owned())].into(),
        ..labs::topology::Node::default()
    };
    let link = |a: &str, b: &str| labs::topology::Link { endpoints: [a.to_owned(), b.to_owned()], mtu: None };
    for switch in ["sw1", "sw2"] {
        nodes.insert(switch.to_owned(), node("switchd"));
    }
    for host in ["r1", "v", "d", "l1", "l2", "f"] {
        nodes.insert(host.to_owned(), node("host"));
    }
    let links = vec![
        link("sw1:eth1", "sw2:eth1"),
        link("sw1:eth2", "r1:eth1"),
        link("sw1:eth3", "v:eth1"),
        link("sw2:eth2", "d:eth1"),
        link("sw2:eth3", "l1:eth1"),
        link("sw2:eth4", "l2:eth1"),
        link("sw2:eth5", "f:eth1"),
    ];
    let topology = labs::topology::Topology {
        name: "victim".into(),
        topology: labs::topology::Body { nodes, links, ..Default::default() },
    };
    Fabric::from_topology(&topology).unwrap()
}

/// `r1`, `l1` and `l2` send 4 MiB each to `d` (collective 0); `v` sends
/// 2 MiB to `f` (collective 1), all at once.
fn incast_beside_a_victim(fabric: &Fabric) -> workload::Workload {
    let host = |name: &str| fabric.hosts.iter().position(|h| h.name.starts_with(&format!("{name}:"))).unwrap() as u32;
    let mut workload = workload::Workload::default();
    let incast = workload.collective("incast".into());
    for sender in ["r1", "l1", "l2"] {
        workload.message(host(sender), host("d"), 4 << 20, incast, 0);
    }
    let victim = workload.collective("victim".into());
    workload.message(host("v"), host("f"), 2 << 20, victim, 0);
    workload.finish()
}

#[test]
fn with_fecn_becn_the_victim_of_an_incast_gets_its_rate_back() {
    // `d`'s port is the root of the congestion: three senders into one
    // 100 Gb/s port, a third each. Without congestion control `r1`'s
    // packets for `d` fill `sw2`'s input buffer from the shared cable, its
    // credits come back at `d`'s third, and `sw1` sends `v`'s packets in
    // turn with `r1`'s: the victim, bound for the idle `f`, is held to
    // about `r1`'s rate. With FECN/BECN `d`'s port marks, `d` returns
    // BECNs, the three senders slow to their share and stop filling the
    // buffers: the cable carries `v` at more of what `r1` leaves of it
    // (two thirds ideally; the default CCT settles at about half: 51 Gb/s,
    // with the incast 7.5% slower than the line while the CCTs settle).
    let run = |cc: Option<IbCongestionControl>| {
        let experiment = IbExperiment { cc, sample_ns: 1_000, ..IbExperiment::default() };
        let fabric = victim_fabric();
        let workload = incast_beside_a_victim(&fabric);
        let mut sim = IbSimulation::new(fabric, experiment, workload).unwrap();
        sim.watch(vec![(1, 1), (0, 0)]); // sw2:eth2 (to d), sw1:eth1 (the cable)
        sim.run();
        sim.report("victim")
    };
    let without = run(None);
    let with = run(Some(IbCongestionControl::default()));
    for report in [&without, &with] {
        assert!(report.finished);
        assert_eq!(report.drops, 0);
    }
    let gbps = |report: &IbReport| {
        let (_, _, fct) = report.fcts_ns[3];
        (2u64 << 20) as f64 * 8.0 / fct.unwrap() as f64
    };
    let (before, after) = (gbps(&without), gbps(&with));
    let incast = |report: &IbReport| report.collectives[0].jct_ns.unwrap() as f64 / 1e3;
    println!(
        "victim v -> f: {before:.1} Gb/s without CC, {after:.1} Gb/s with FECN/BECN ({} marked, {} BECNs); \
         incast JCT {:.1} us -> {:.1} us; depth p99 {} -> {} bytes",
        with.fecn_marked,
        with.becns_received,
        incast(&without),
        incast(&with),
        without.queue_depth_bytes.p99,
        with.queue_depth_bytes.p99
    );
    assert_eq!(without.fecn_marked, 0);
    assert!(with.fecn_marked > 0 && with.becns_received > 0, "{} marked", with.fecn_marked);
    assert!(before < 40.0, "without CC the victim is held near r1's third: {before:.1} Gb/s");
    assert!(after > 1.5 * before, "with CC it gets its rate back: {before:.1} -> {after:.1} Gb/s");
    // The incast still gets d's whole port: 12 MiB at the line within 10%.
    let line_us = (12u64 << 20) as f64 * 8.0 / ib_payload_bps(&IbExperiment::default()) * 1e6;
    assert!(incast(&with) < 1.15 * line_us, "incast {:.1} us, the line {line_us:.1} us", incast(&with));
    // The watched ports' depths were recorded over time.
    assert_eq!(with.series_names, ["sw2:eth2", "sw1:eth1"]);
    assert!(without.series.iter().any(|(_, row)| row[1] > 0), "without CC the cable's queue at sw1 builds");
}

/// A ring all-reduce of 1 MiB per host on the k=4 leaf-spine fat-tree with
/// the SM in virtual time, cable 2 (leaf-g3-r1 to spine1, which the ring
/// crosses) cut 20 us in or not at all.
fn allreduce_with_sm(rto_ns: u64, fail: bool) -> IbReport {
    let experiment = IbExperiment {
        sm: Some(SmTiming::default()),
        link_failure: fail.then_some((2, 20_000)),
        rto_ns,
        ..IbExperiment::default()
    };
    run(fat_tree(), experiment, spec(Kind::Allreduce, 1 << 20))
}

#[test]
fn a_cut_leaf_spine_cable_is_rerouted_by_the_sm_and_the_allreduce_finishes() {
    let healthy = allreduce_with_sm(100_000, false);
    assert!(healthy.finished);
    assert_eq!(healthy.drops, 0);
    assert_eq!(healthy.timeouts, 0, "nothing lost: the transport timer never goes back");
    let base = healthy.collectives[0].jct_ns.unwrap() as f64;
    for rto_ns in [200_000u64, 20_000] {
        let report = allreduce_with_sm(rto_ns, true);
        assert!(report.finished, "rto {rto_ns}");
        let failure = report.link_failure.as_ref().expect("the failure is reported");
        assert_eq!(failure.cable, "leaf-g3-r1:eth1 - spine1:eth3");
        let rerouted = failure.rerouted_ns.expect("the SM rerouted");
        let trap = failure.trap_at_sm_ns.expect("the trap reached the SM");
        // The leaf's trap crosses two cables to the SM's switch (switch 0,
        // leaf-g1-r1, over spine2), 1 us each; then a heavy sweep of SMPs,
        // each a round trip.
        assert_eq!(fat_tree().switches[0].name, "leaf-g1-r1");
        assert_eq!(trap, failure.failed_ns + 2_000, "{failure:?}");
        assert!(rerouted > trap, "{failure:?}");
        assert!(report.subnet_manager.as_ref().unwrap().lft_blocks_written > 0);
        // What was sent into the dead port before the LFTs moved is lost,
        // nothing after; no LFT points at it any more.
        assert!(failure.dropped_at_dead_port + failure.lost_on_cable > 0, "{failure:?}");
        assert!(failure.last_dead_port_drop_ns.unwrap() <= rerouted, "{failure:?}");
        assert_eq!(failure.lft_entries_on_dead_ports, 0);
        assert_eq!(report.drops, failure.lost_on_cable + failure.discarded_queued + failure.dropped_at_dead_port);
        assert!(report.timeouts > 0 && report.retransmitted_packets > 0, "go-back-N after the timeout");
        // The JCT grows by what recovery took: the later of the reroute and
        // the transport timeout (from the last acknowledgement, about the
        // failure), plus at most a tenth of the run.
        let jct = report.collectives[0].jct_ns.unwrap() as f64;
        let reroute = (rerouted - failure.failed_ns) as f64;
        let recovery = reroute.max(rto_ns as f64);
        let delta = jct - base;
        assert!(
            delta >= 0.8 * recovery && delta <= recovery + 0.1 * base,
            "rto {rto_ns}: JCT {jct} ns, healthy {base} ns, reroute {reroute} ns"
        );
    }
}

#[test]
fn the_same_failed_run_twice_gives_the_same_report() {
    let once = serde_json::to_string(&allreduce_with_sm(20_000, true)).unwrap();
    let twice = serde_json::to_string(&allreduce_with_sm(20_000, true)).unwrap();
    assert_eq!(once, twice);
}

#[test]
fn a_failed_host_cable_or_one_without_the_sm_is_refused() {
    let workload = || workload::build(&spec(Kind::Allreduce, 1 << 20), 8, 1).unwrap();
    let host_cable =
        fat_tree().links.iter().position(|(a, b)| matches!((a, b), (_, fabric::End::Host { .. }))).unwrap();
    let experiment = IbExperiment {
        sm: Some(SmTiming::default()),
        link_failure: Some((host_cable as u32, 1_000)),
        ..IbExperiment::default()
    };
    let refused = IbSimulation::new(fat_tree(), experiment, workload()).err().unwrap();
    assert!(refused.contains("ends at a host"), "{refused}");
    let experiment = IbExperiment { link_failure: Some((2, 1_000)), ..IbExperiment::default() };
    let refused = IbSimulation::new(fat_tree(), experiment, workload()).err().unwrap();
    assert!(refused.contains("subnet manager"), "{refused}");
}

#[test]
fn a_single_flows_fct_slowdown_is_one_and_an_incasts_is_its_fan_in() {
    // One 4 MiB flow through one switch: its FCT is its packets at line
    // rate plus two cables and one store-and-forward, and the flow
    // control's first exchange (one cable).
    let fabric = Fabric::from_topology(&fabric::star("star", 2)).unwrap();
    let report = run(fabric, IbExperiment::default(), spec(Kind::Incast, 4 << 20));
    assert!(report.finished);
    let slowdown = report.fct_slowdown.max;
    assert!((1.0..1.01).contains(&slowdown), "slowdown {slowdown}");
    // 7:1 across the two-tier fat-tree: each flow shares the receiver's
    // cable with six others.
    let report = run(fat_tree(), IbExperiment::default(), spec(Kind::Incast, 1 << 20));
    assert!(report.finished);
    let p50 = report.fct_slowdown.p50;
    println!("single flow slowdown {slowdown:.4}; 7:1 incast p50 {p50:.3}");
    assert!((p50 - 7.0).abs() / 7.0 < 0.1, "slowdown p50 {p50}");
    // The heat map: the senders' leaves' uplinks and the spines' ports down
    // to the receiver's leaf wait for credit; the receiver's own port is
    // the bottleneck and always has credit (its HCA reads at once).
    let plot = report.plot_data();
    let share = |switch: &str, port: usize| {
        let s = plot.switch_names.iter().position(|n| n == switch).unwrap();
        plot.paused_share[s][port - 1]
    };
    assert!(plot.paused_share.iter().flatten().any(|&w| w > 0.3), "{:?}", plot.paused_share);
    let receiver_leaf = &report.ports.iter().max_by_key(|p| p.xmit_bytes).unwrap();
    assert_eq!(receiver_leaf.xmit_wait_ns, 0, "{receiver_leaf:?}");
    assert_eq!(share(&receiver_leaf.switch, receiver_leaf.port[3..].parse().unwrap()), 0.0);
    assert!(report.waiting_ports > 0 && report.xmit_wait_ns > 0);
    assert_eq!(plot.slowdowns.len(), 7);
}

#[test]
fn sim_compare_on_the_ib_fabric_runs_it_without_and_with_congestion_control() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_labs"))
        .args(["sim", "compare", "--fattree", "4", "--tiers", "2", "--fabric", "ib", "--workload", "incast"])
        .args(["--ecn-both", "--size", "1MiB", "--no-plots", "--quiet", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(dir.path().join("compare.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.iter().map(|r| r[0]).collect::<Vec<_>>(), ["ib", "ib-cc"], "{csv}");
    // Columns: JCT, slowdown p50, p99, goodput, drops, FECN marks, PFC, waiting ports, wait ns.
    assert_eq!(rows[0][6], "0", "no congestion control, no FECN: {csv}");
    assert!(rows[1][6].parse::<u64>().unwrap() > 0, "FECN marked with --ib-cc: {csv}");
    for row in &rows {
        assert_eq!(row[5], "0", "credits: no drops");
        assert!(row[9].parse::<u64>().unwrap() > 0, "the incast waits for credit: {csv}");
        let slowdown: f64 = row[2].parse().unwrap();
        assert!(slowdown > 5.0, "7:1 incast: {csv}");
    }
    for run in ["ib", "ib-cc"] {
        assert!(dir.path().join(run).join("summary.json").exists());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("JCT incast: ib "), "{stdout}");
}

#[test]
fn sim_compare_runs_each_fabric_once_without_ecn_both() {
    // `--fabric ethernet,ib`: one Ethernet run (ECMP) and one IB-like run,
    // not the IB-like plane twice.
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_labs"))
        .args(["sim", "compare", "--star", "3", "--fabric", "ethernet,ib", "--workload", "incast"])
        .args(["--size", "64KiB", "--no-plots", "--quiet", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(dir.path().join("compare.csv")).unwrap();
    let names: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(names, ["ecmp", "ib"], "{csv}");
    assert!(!dir.path().join("ib-cc").exists());
    // --ib-cc names the one IB-like run by what it is.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_labs"))
        .args(["sim", "compare", "--star", "3", "--fabric", "ib", "--ib-cc", "--workload", "incast"])
        .args(["--size", "64KiB", "--no-plots", "--quiet", "--out"])
        .arg(dir.path().join("cc"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(dir.path().join("cc").join("compare.csv")).unwrap();
    let names: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(names, ["ib-cc"], "{csv}");
}

#[test]
fn the_report_names_the_engine_in_effect_after_the_sm_rerouted() {
    // The k=4 fat-tree plus a cable between two leaves: ftree declines it
    // (a link within a level) and updn routes it. With that cable cut 20 us
    // in, the SM's sweep finds a fat-tree again and ftree routes it: the
    // report names ftree, the engine whose LFTs are in effect at the end
    // (it named the first sweep's, updn).
    let mut fabric = fat_tree();
    let (a, b) = (0usize, 1usize);
    let ends = [a, b].map(|s| {
        let port = fabric.switches[s].ports;
        fabric.switches[s].ports += 1;
        fabric::End::Switch { switch: s as u32, port }
    });
    fabric.links.push((ends[0], ends[1]));
    let cut = fabric.links.len() as u32 - 1;
    let experiment = IbExperiment {
        sm: Some(SmTiming::default()),
        link_failure: Some((cut, 20_000)),
        rto_ns: 20_000,
        ..IbExperiment::default()
    };
    let report = run(fabric, experiment, spec(Kind::Allreduce, 1 << 20));
    assert!(report.finished);
    let sm = report.subnet_manager.as_ref().unwrap();
    let engines: Vec<&str> = sm.routings.iter().map(|r| r.engine.as_str()).collect();
    assert_eq!(engines, ["updn", "ftree"], "{:?}", sm.routings);
    assert_eq!(sm.routings[0].at_ns, 0);
    assert!(sm.routings[1].at_ns > 20_000, "{:?}", sm.routings);
    assert_eq!(report.routing_engine, "ftree");
    assert!(report.routing_refused.is_empty(), "ftree took it first: {:?}", report.routing_refused);
}

#[test]
fn the_sm_sweeps_lightly_only_while_something_may_have_changed() {
    // A ring all-reduce of 16 MiB per host (about 2.4 ms) with the SM in
    // virtual time and nothing failing: no light sweep (its SMPs would
    // read PortStateChange clear on every switch), no SMP at all after the
    // first sweep. Light sweeps every 1 ms used to run regardless.
    let experiment = IbExperiment { sm: Some(SmTiming::default()), sample_ns: 0, ..IbExperiment::default() };
    let report = run(fat_tree(), experiment, spec(Kind::Allreduce, 16 << 20));
    assert!(report.finished);
    assert!(report.simulated_ns > 2_000_000, "{}", report.simulated_ns);
    let sm = report.subnet_manager.as_ref().unwrap();
    assert_eq!((sm.light_sweeps, sm.smps_sent), (0, 0), "{sm:?}");
    // With a cable cut, the trap starts a light sweep, which finds
    // PortStateChange and sweeps heavily; settled again after the reroute.
    let failed = allreduce_with_sm(20_000, true);
    let sm = failed.subnet_manager.as_ref().unwrap();
    assert!(sm.light_sweeps >= 1 && sm.smps_sent > 0, "{sm:?}");
    assert!(failed.link_failure.as_ref().unwrap().rerouted_ns.is_some());
}
