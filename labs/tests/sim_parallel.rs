//! A run split across threads (`--threads`, `labs/src/sim/parallel.rs`)
//! against the same run on one thread: every result file byte for byte.

use labs::sim::fabric::{self, Fabric};
use labs::sim::workload::{BackgroundPattern, BackgroundSpec, RingOrder};
use labs::sim::{self, Experiment, Kind, LoadBalancing, WorkloadSpec};

fn spec(kind: Kind, bytes: u64) -> WorkloadSpec {
    WorkloadSpec { kind, bytes, iterations: 1, ..Default::default() }
}

/// The three-tier fat-tree of radix 4: 4 pods, 4 cores, 16 hosts.
fn fattree3() -> Fabric {
    Fabric::from_topology(&fabric::fattree3("ft3", 4, 1).unwrap()).unwrap()
}

const FILES: [&str; 4] = ["summary.json", "messages.csv", "ports.csv", "queues.csv"];

/// Runs on one thread and on `threads`; asserts the files are identical
/// and the second run was split. Returns the split run's files' folder.
fn same_files(
    fabric: impl Fn() -> Fabric,
    experiment: Experiment,
    spec: WorkloadSpec,
    watch: Option<Vec<(u32, u16)>>,
    threads: usize,
) -> (sim::Report, tempfile::TempDir) {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut reports = Vec::new();
    for (dir, threads) in dirs.iter().zip([1, threads]) {
        let experiment = Experiment { threads, ..experiment.clone() };
        let run = sim::run("par", fabric(), experiment, spec.clone(), watch.clone(), None).unwrap();
        assert!(run.report.finished);
        assert_eq!(run.speed.threads, threads, "split into as many partitions as threads");
        run.write(dir.path()).unwrap();
        reports.push(run.report);
    }
    for file in FILES {
        let a = std::fs::read(dirs[0].path().join(file)).unwrap();
        let b = std::fs::read(dirs[1].path().join(file)).unwrap();
        assert!(a.len() > 40 || file == "queues.csv", "{file} is nearly empty");
        if a != b {
            let (a, b) = (String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
            let line = a.lines().zip(b.lines()).position(|(x, y)| x != y);
            let shown = line.map(|l| (a.lines().nth(l).unwrap().to_owned(), b.lines().nth(l).unwrap().to_owned()));
            panic!("{file} differs between --threads 1 and {threads}: first at line {line:?}: {shown:?}");
        }
    }
    let [_, split] = dirs;
    (reports.pop().unwrap(), split)
}

#[test]
fn a_ring_allreduce_on_two_threads_writes_the_same_files_as_on_one() {
    let experiment = Experiment { sample_ns: 2_000, ..Experiment::default() };
    // Every cabled port watched: the queue series are merged from both partitions.
    let fabric = fattree3();
    let mut watch = Vec::new();
    for (s, spec) in fabric.switches.iter().enumerate() {
        for port in 0..spec.ports {
            watch.push((s as u32, port));
        }
    }
    let (report, _) = same_files(fattree3, experiment, spec(Kind::Allreduce, 1 << 20), Some(watch), 2);
    assert_eq!(report.drops_total, 0);
}

#[test]
fn an_all_to_all_with_flowlet_dlb_on_three_threads_writes_the_same_files_as_on_one() {
    // Two-tier fat-tree of radix 8: 8 leaves of 4 hosts, 4 spines; jitter and DCQCN too.
    let fabric = || Fabric::from_topology(&labs::generate::fattree("ft8", 8).unwrap().topology).unwrap();
    let experiment = Experiment { lb: LoadBalancing::Flowlet, flowlet_us: 2, ecn: true, ..Experiment::default() };
    let spec = WorkloadSpec { jitter_ns: 5_000, ..spec(Kind::AllToAll, 1 << 20) };
    let (report, _) = same_files(fabric, experiment, spec, None, 3);
    assert!(report.ecn_marked > 0, "congested enough to mark");
}

#[test]
fn an_incast_whose_pauses_cross_partitions_writes_the_same_files() {
    // 15 hosts into the last one: PFC backs up from its leaf through the
    // aggregation and core tiers into the other pods, across the cut.
    let experiment = Experiment { sample_ns: 0, buffer_bytes: 1 << 20, ..Experiment::default() };
    let (report, dir) = same_files(fattree3, experiment, spec(Kind::Incast, 1 << 20), None, 2);
    assert_eq!(report.drops_total, 0);
    assert!(report.pfc_frames_sent > 0);
    let fabric = fattree3();
    let (switch_part, _, _) = labs::sim::parallel::partition(&fabric, 2);
    let part_of = |name: &str| {
        let switch = name.split(':').next().unwrap();
        fabric.switches.iter().position(|s| s.name == switch).map(|s| switch_part[s])
    };
    // ports.csv: switch,port,peer,tx_frames,tx_bytes,dropped,ecn_marked,pfc_rx,pfc_tx,...
    let ports = std::fs::read_to_string(dir.path().join("ports.csv")).unwrap();
    let crossing_pauses = ports
        .lines()
        .skip(1)
        .filter(|line| {
            let f: Vec<&str> = line.split(',').collect();
            let (here, there) = (part_of(f[0]), part_of(f[2]));
            there.is_some() && here != there && f[7].parse::<u64>().unwrap() > 0
        })
        .count();
    assert!(crossing_pauses > 0, "PFC frames crossed between the partitions:\n{ports}");
}

#[test]
fn a_random_ring_beside_background_traffic_writes_the_same_files() {
    // A seeded random ring (its neighbours across pods) with an all-to-all
    // background at 30% of the line on its own class: the run ends with the
    // collective, the background's messages left in flight on both threads.
    let experiment = Experiment { sample_ns: 0, background_class: Some(1), ..Experiment::default() };
    let spec = WorkloadSpec {
        ring_order: RingOrder::Random,
        background: Some(BackgroundSpec {
            pattern: BackgroundPattern::AllToAll,
            bytes: 64 << 10,
            load: 0.3,
            line_bps: experiment.link_bps,
            until_ns: None,
        }),
        ..spec(Kind::Allreduce, 1 << 20)
    };
    let (report, _) = same_files(fattree3, experiment, spec, None, 2);
    let background = report.background.expect("background traffic");
    assert!(background.completed > 0 && background.released > background.completed, "{background:?}");
}

/// A switch-to-switch cable whose ends `threads` partitions put in two
/// different ones, and the first such cable from a leaf (the other end in
/// its own partition, both ends then in one).
fn cables(fabric: &Fabric, threads: usize) -> (u32, u32) {
    use labs::sim::fabric::End;
    let (switch_part, _, _) = labs::sim::parallel::partition(fabric, threads);
    let ends = |(a, b): &(End, End)| match (*a, *b) {
        (End::Switch { switch: x, .. }, End::Switch { switch: y, .. }) => Some((x, y)),
        _ => None,
    };
    let crossing = fabric
        .links
        .iter()
        .position(|l| ends(l).is_some_and(|(x, y)| switch_part[x as usize] != switch_part[y as usize]))
        .expect("a cable across the cut") as u32;
    let inside = fabric
        .links
        .iter()
        .position(|l| {
            ends(l).is_some_and(|(x, y)| {
                switch_part[x as usize] == switch_part[y as usize] && (fabric.is_leaf(x) || fabric.is_leaf(y))
            })
        })
        .expect("a leaf's uplink inside a partition") as u32;
    (crossing, inside)
}

/// An all-to-all (every cable busy) with cable `link` failing 20.3 us in
/// (not on a window boundary), the routes moving off it 30 us later and
/// what was lost sent again after 100 us.
fn failing(link: u32) -> (Experiment, WorkloadSpec) {
    let experiment = Experiment {
        sample_ns: 1_000,
        link_failure: Some((link, 20_300)),
        reconverge_ns: 30_000,
        rto_ns: 100_000,
        ..Experiment::default()
    };
    (experiment, spec(Kind::AllToAll, 1 << 20))
}

#[test]
fn a_link_failure_across_the_cut_on_two_and_three_threads_writes_the_same_files_as_on_one() {
    for threads in [2, 3] {
        let (crossing, _) = cables(&fattree3(), threads);
        let (experiment, spec) = failing(crossing);
        let (report, _) = same_files(fattree3, experiment, spec, None, threads);
        // The failure mattered: frames hashed onto the dead port were lost
        // until the routes moved, and came back at the timeout.
        assert!(report.drops["pipeline-egressportdown"] > 0, "{threads} threads: {:?}", report.drops);
        assert!(report.routes_rewritten > 0 && report.timeouts > 0, "{report:?}");
        assert!(report.reroute_errors.is_empty(), "{:?}", report.reroute_errors);
    }
}

#[test]
fn a_link_failure_inside_a_partition_writes_the_same_files() {
    // A leaf's uplink: both ends in one partition, the reroute in all.
    let (_, inside) = cables(&fattree3(), 2);
    let (experiment, spec) = failing(inside);
    let (report, _) = same_files(fattree3, experiment, spec, None, 2);
    assert!(report.routes_rewritten > 0 && report.timeouts > 0, "{report:?}");
}

#[test]
fn a_link_failure_on_switches_built_from_their_configs_writes_the_same_files() {
    // The ai-rail lab with its switchd configs: after the failure each
    // partition reconverges the whole eBGP underlay's shortcut and writes
    // its own switches' routes, with next-hop and group ids counted over
    // the fabric.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies/ai-rail.clab.yml");
    let fabric = || Fabric::from_topology_file(&path).unwrap().1;
    let probe = fabric();
    let (crossing, _) = cables(&probe, 2);
    let experiment = Experiment {
        mtu: 1024,
        sample_ns: 0,
        link_failure: Some((crossing, 5_000_300)),
        reconverge_ns: 200_000,
        rto_ns: 20_000_000,
        ..Experiment::default()
    };
    let spec = WorkloadSpec { kind: Kind::AllToAll, bytes: 512 << 10, iterations: 1, ..Default::default() };
    let (report, _) = same_files(fabric, experiment, spec, None, 2);
    assert!(report.routes_rewritten > 0, "{report:?}");
    assert!(report.drops["link-down"] + report.drops["pipeline-egressportdown"] > 0, "{:?}", report.drops);
}
