//! The simulator against the namespace lab: the `incast` lab
//! (`labs/topologies/incast.clab.yml`: h1, h2, h3 and h4 on sw1's eth1-4)
//! run twice at the same load, three senders of 3 MiB each into h4 on the
//! lossless priority (DSCP 26, PFC on priority 3) at 100 Mb/s:
//!
//! - in namespaces: `switchd` with the lab's own `sw1.yaml` (100 Mb/s
//!   ports, the `roce` QoS preset), `fabric-host` senders and receiver
//!   (RoCE-like, obeying PFC);
//! - in the simulator (virtual time): the same topology file, its switch
//!   built from the same `sw1.yaml` by switchd's own parse, validate and
//!   apply, the same payload and load.
//!
//! They must agree (issue 15): no drop in the lossless class in either,
//! the same switch ports send PFC (those toward the three senders, not the
//! receiver's), and the receiver's goodput within 10%.

use std::path::PathBuf;
use std::time::Duration;

use fabric_tests::fabric_host::{FabricHost, pfc_row, start_at, tm_drops, u64_of};
use fabric_tests::{Netns, Switchd, require_root_and_tools, veth};
use labs::sim::fabric::Fabric;
use labs::sim::queue::HeapQueue;
use labs::sim::{Experiment, Kind, Simulation, WorkloadSpec, workload};
use labs::topology::Topology;

/// Each sender's message.
const BYTES: u64 = 3 << 20;
/// RoCE payload bytes per packet, in both (fabric-host's default).
const PAYLOAD: u32 = 4096;

fn lab_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../labs/topologies")
}

/// What a run measured.
#[derive(Debug)]
struct Figures {
    /// Frames the switch dropped (all reasons).
    drops: u64,
    /// Switch ports that sent PFC on priority 3, by name.
    pausing: Vec<String>,
    /// Payload bits per second at the receiver.
    goodput_bps: f64,
}

fn simulate() -> Figures {
    let (_, fabric) = Fabric::from_topology_file(&lab_dir().join("incast.clab.yml")).expect("simulator fabric");
    assert!(fabric.configured(), "sw1 built from sw1.yaml");
    assert!(fabric.hosts.last().is_some_and(|h| h.name.starts_with("h4")), "incast's receiver is the last host");
    // The line rate is sw1.yaml's (`speed: 100M`).
    let experiment = Experiment { mtu: PAYLOAD, sample_ns: 0, ..Experiment::default() };
    let spec = WorkloadSpec {
        kind: Kind::Incast,
        bytes: BYTES,
        jitter_ns: 0,
        compute_ns: 0,
        iterations: 1,
        ..Default::default()
    };
    let workload = workload::build(&spec, fabric.hosts.len(), experiment.seed).expect("workload");
    let mut sim = Simulation::new(fabric, experiment, workload, HeapQueue::default()).expect("simulation");
    sim.run();
    assert!(sim.finished(), "the simulated incast did not finish");
    let node = &sim.switches[0].node;
    let drops = node.counters().tm_drops;
    let tm = node.traffic_manager().tm();
    let pausing = (0..sim.fabric.switches[0].ports)
        .filter(|&port| tm.pfc_counters(port).tx_frames[3] > 0)
        .map(|port| format!("eth{}", port + 1))
        .collect();
    // The receiver's view, as fabric-host reports it: payload bytes over
    // the first arrival to the last.
    let first_release = sim.records.iter().map(|r| r.released_ns).min().expect("messages");
    let last_done = sim.records.iter().map(|r| r.completed_ns).max().expect("messages");
    let goodput_bps = (3 * BYTES * 8) as f64 / ((last_done - first_release) as f64 / 1e9);
    Figures { drops, pausing, goodput_bps }
}

/// The lab's switch config, as the simulator reads it: 100 Mb/s ports and
/// the lossless profile `qos_incast.rs` uses (the PFC response time covers
/// the emulated hosts, which react when their process next runs).
fn switch_config() -> String {
    std::fs::read_to_string(lab_dir().join("incast/sw1.yaml")).expect("sw1.yaml")
}

fn namespaces() -> Figures {
    let topology = Topology::load(&lab_dir().join("incast.clab.yml")).expect("incast lab");
    let addresses: Vec<String> = ["h1", "h2", "h3", "h4"]
        .iter()
        .map(|h| {
            let node = &topology.topology.nodes[*h];
            let exec = node.exec.iter().find(|c| c.starts_with("ip addr add")).expect("host address");
            exec.split_whitespace().nth(3).expect("address").to_string()
        })
        .collect();
    let sw = Netns::new("svls");
    let hosts: Vec<Netns> = (1..=4).map(|n| Netns::new(&format!("svlh{n}"))).collect();
    for (i, host) in hosts.iter().enumerate() {
        veth(host, "eth1", &sw, &format!("eth{}", i + 1));
        host.ip(&["link", "set", "eth1", "mtu", "9100"]);
        sw.ip(&["link", "set", &format!("eth{}", i + 1), "mtu", "9100"]);
        host.host_setup("eth1", &addresses[i], Some("172.16.0.1"));
    }
    let switchd = Switchd::start(&sw, &switch_config());
    for (i, host) in hosts.iter().enumerate() {
        assert!(host.ping_until("172.16.0.1", Duration::from_secs(10)), "h{} -> gateway", i + 1);
    }
    let receiver_ip = addresses[3].split('/').next().expect("ip").to_string();
    let expect = (3 * BYTES).to_string();
    let receiver = FabricHost::start(&hosts[3], &["recv", "--expect-bytes", &expect, "--idle-ms", "1500"]);
    std::thread::sleep(Duration::from_millis(300));
    let start_at = start_at(Duration::from_millis(1500));
    let senders: Vec<FabricHost> = (0..3)
        .map(|i| {
            let qp = (i + 1).to_string();
            let args = [
                "send",
                "--to",
                &receiver_ip,
                "--rate",
                "100M",
                "--bytes",
                &BYTES.to_string(),
                "--dscp",
                "26",
                "--qp",
                &qp,
                "--payload",
                &PAYLOAD.to_string(),
                "--start-at-unix-ms",
                &start_at,
            ];
            FabricHost::start(&hosts[i], &args)
        })
        .collect();
    for sender in senders {
        let report = sender.report(Duration::from_secs(60));
        assert!(report["completed"].as_bool().unwrap_or(false), "{report}");
    }
    let received = receiver.report(Duration::from_secs(60));
    assert_eq!(u64_of(&received, "delivered_bytes"), 3 * BYTES, "receiver: {received}");
    let drops = tm_drops(&switchd).iter().map(|(_, n)| n).sum();
    let pausing = (1..=4)
        .map(|n| format!("eth{n}"))
        .filter(|port| pfc_row(&switchd, port)["tx"][3].as_u64().unwrap_or(0) > 0)
        .collect();
    Figures { drops, pausing, goodput_bps: u64_of(&received, "goodput_bps") as f64 }
}

#[test]
fn the_simulator_and_the_namespace_lab_agree_on_the_incast() {
    if !require_root_and_tools("sim_vs_lab", &["ip", "ping"]) {
        return;
    }
    let simulated = simulate();
    let lab = namespaces();
    println!("simulator: {simulated:?}\nnamespaces: {lab:?}");
    assert_eq!((simulated.drops, lab.drops), (0, 0), "drops in the lossless class");
    let senders_ports = vec!["eth1".to_string(), "eth2".into(), "eth3".into()];
    assert_eq!(simulated.pausing, senders_ports, "simulator: ports sending PFC");
    assert_eq!(lab.pausing, senders_ports, "namespaces: ports sending PFC");
    let ratio = lab.goodput_bps / simulated.goodput_bps;
    assert!(
        (0.9..=1.1).contains(&ratio),
        "goodput: lab {} b/s, simulator {} b/s",
        lab.goodput_bps,
        simulated.goodput_bps
    );
}
