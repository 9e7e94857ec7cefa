//! The simulator's switches built from the lab's `switchd` YAML: what the
//! file says (a port's speed, PFC priorities, ECN) changes the simulated
//! run as it would the switch, and a bad file is refused naming the field.

use std::path::Path;

use labs::sim::fabric::Fabric;
use labs::sim::{self, Experiment, Kind, Report, WorkloadSpec};

const TOPOLOGY: &str = "
name: incast
topology:
  nodes:
    sw1: { kind: linux, labels: { labs.role: switchd }, binds: ['sw1.yaml:/etc/switchd/config.yaml:ro'] }
    h1: { kind: linux, labels: { labs.role: host }, exec: ['ip addr add 172.16.0.10/24 dev eth1'] }
    h2: { kind: linux, labels: { labs.role: host }, exec: ['ip addr add 172.16.0.11/24 dev eth1'] }
    h3: { kind: linux, labels: { labs.role: host }, exec: ['ip addr add 172.16.0.12/24 dev eth1'] }
    h4: { kind: linux, labels: { labs.role: host }, exec: ['ip addr add 172.16.0.13/24 dev eth1'] }
  links:
    - endpoints: ['sw1:eth1', 'h1:eth1']
    - endpoints: ['sw1:eth2', 'h2:eth1']
    - endpoints: ['sw1:eth3', 'h3:eth1']
    - endpoints: ['sw1:eth4', 'h4:eth1']
";

/// The incast lab's `sw1.yaml` with the receiver's port at `h4_speed` and
/// `qos` lines after the preset.
fn switch_yaml(h4_speed: &str, qos: &str) -> String {
    format!(
        "name: sw1
ports:
  - {{ name: eth1, mode: access, vlan: 10, mtu: 9100, speed: 100M, cable-length: 5 }}
  - {{ name: eth2, mode: access, vlan: 10, mtu: 9100, speed: 100M, cable-length: 5 }}
  - {{ name: eth3, mode: access, vlan: 10, mtu: 9100, speed: 100M, cable-length: 5 }}
  - {{ name: eth4, mode: access, vlan: 10, mtu: 9100, speed: {h4_speed}, cable-length: 5 }}
vlans:
  - {{ id: 10, name: hosts, addresses: [172.16.0.1/24] }}
qos:
  preset: roce
{qos}"
    )
}

fn fabric_with(dir: &Path, switch: &str) -> Result<Fabric, String> {
    std::fs::write(dir.join("incast.clab.yml"), TOPOLOGY).unwrap();
    std::fs::write(dir.join("sw1.yaml"), switch).unwrap();
    Fabric::from_topology_file(&dir.join("incast.clab.yml")).map(|(_, fabric)| fabric)
}

/// Three hosts send `bytes` each into the fourth, in 1024-byte packets.
fn incast(switch: &str, ecn: bool, bytes: u64) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let fabric = fabric_with(dir.path(), switch).unwrap();
    assert!(fabric.configured());
    let experiment = Experiment { mtu: 1024, ecn, sample_ns: 0, ..Experiment::default() };
    let spec =
        WorkloadSpec { kind: Kind::Incast, bytes, jitter_ns: 0, compute_ns: 0, iterations: 1, ..Default::default() };
    let run = sim::run("incast", fabric, experiment, spec, None, None).unwrap();
    assert!(run.report.finished, "{:?}", run.report);
    run.report
}

/// Seconds to move `bytes` of payload in 1024-byte packets at `bps`: each
/// packet is a 1082-byte frame (Ethernet, IPv4, UDP, BTH, ICRC) plus 24
/// bytes of preamble, FCS and gap on the wire.
fn payload_seconds(bytes: u64, bps: f64) -> f64 {
    bytes as f64 / 1024.0 * (1082.0 + 24.0) * 8.0 / bps
}

#[test]
fn the_incast_lab_file_runs_with_its_own_switch_config() {
    let (topology, fabric) =
        Fabric::from_topology_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies/incast.clab.yml")).unwrap();
    assert_eq!(topology.name, "incast");
    assert!(fabric.configured());
    let experiment = Experiment { mtu: 1024, sample_ns: 0, ..Experiment::default() };
    let spec = WorkloadSpec {
        kind: Kind::Incast,
        bytes: 512 << 10,
        jitter_ns: 0,
        compute_ns: 0,
        iterations: 1,
        ..Default::default()
    };
    let run = sim::run("incast", fabric, experiment, spec, None, None).unwrap();
    let report = &run.report;
    assert!(report.finished);
    // sw1.yaml: 100 Mb/s ports, the roce preset (priority 3 lossless).
    assert_eq!(report.drops_total, 0, "lossless priority 3");
    assert!(report.pfc_frames_sent > 0, "the receiver's port is the bottleneck: PFC to the senders");
    assert_eq!(report.punts, 0, "no frame needed a control plane");
    let jct = report.collectives[0].jct_ns.unwrap() as f64 / 1e9;
    let expected = payload_seconds(3 * (512 << 10), 100e6);
    assert!((jct - expected).abs() / expected < 0.02, "JCT {jct} s, the 100 Mb/s bottleneck says {expected} s");
}

#[test]
fn the_receivers_port_speed_in_the_yaml_sets_the_bottleneck() {
    let bytes = 256 << 10;
    let slow = incast(&switch_yaml("100M", ""), false, bytes);
    let fast = incast(&switch_yaml("200M", ""), false, bytes);
    let seconds = |r: &Report| r.collectives[0].jct_ns.unwrap() as f64 / 1e9;
    for (report, bps) in [(&slow, 100e6), (&fast, 200e6)] {
        let expected = payload_seconds(3 * bytes, bps);
        let jct = seconds(report);
        assert!((jct - expected).abs() / expected < 0.02, "JCT {jct} s at {bps} b/s, expected {expected} s");
        assert_eq!(report.drops_total, 0);
    }
}

#[test]
fn pfc_priorities_in_the_yaml_decide_lossless_or_drops() {
    // A small pool so that the lossy class overflows.
    let pool = "  pool: { size-bytes: 1048576, cell-bytes: 256 }\n";
    let lossless = incast(&switch_yaml("100M", &format!("{pool}  pfc: {{ priorities: [3, 4] }}\n")), false, 256 << 10);
    assert_eq!(lossless.drops_total, 0, "priority 3 lossless: {lossless:?}");
    assert!(lossless.pfc_frames_sent > 0);
    let lossy = incast(&switch_yaml("100M", &format!("{pool}  pfc: {{ priorities: [4] }}\n")), false, 256 << 10);
    assert!(lossy.drops_total > 0, "priority 3 lossy: the incast overflows the pool");
    assert_eq!(lossy.pfc_frames_sent, 0, "no PFC on priority 3");
}

#[test]
fn ecn_in_the_yaml_marks_or_not() {
    let marking = incast(&switch_yaml("100M", ""), true, 256 << 10);
    assert!(marking.ecn_marked > 0, "the roce preset marks queue 3 (DCQCN)");
    assert!(marking.cnps_received > 0, "the receiver's CNPs reach the senders (routed through the SVI)");
    let off = incast(&switch_yaml("100M", "  queues: { 3: { ecn: { mode: off } } }\n"), true, 256 << 10);
    assert_eq!(off.ecn_marked, 0, "queue 3's ECN off in the YAML");
    assert_eq!(off.drops_total, 0);
}

#[test]
fn a_bad_switch_config_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let error = fabric_with(dir.path(), &switch_yaml("fast", "")).unwrap_err();
    assert!(error.contains("ports[3].speed"), "{error}");
    assert!(error.contains("sw1"), "{error}");
    let error = fabric_with(dir.path(), &switch_yaml("100M", "  pfc: { priorities: [9] }\n")).unwrap_err();
    assert!(error.contains("qos.pfc"), "{error}");
    // A cabled port the config does not have.
    let three_ports = switch_yaml("100M", "")
        .replace("  - { name: eth4, mode: access, vlan: 10, mtu: 9100, speed: 100M, cable-length: 5 }\n", "");
    let error = fabric_with(dir.path(), &three_ports).unwrap_err();
    assert!(error.contains("topology.links[3]") && error.contains("sw1:eth4"), "{error}");
}

#[test]
fn the_ai_rail_lab_routes_between_rails_through_the_bgp_shortcut() {
    let (_, fabric) =
        Fabric::from_topology_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies/ai-rail.clab.yml")).unwrap();
    assert!(fabric.configured());
    let experiment = Experiment { mtu: 1024, sample_ns: 0, ..Experiment::default() };
    let spec = WorkloadSpec {
        kind: Kind::AllToAll,
        bytes: 64 << 10,
        jitter_ns: 0,
        compute_ns: 0,
        iterations: 1,
        ..Default::default()
    };
    let run = sim::run("ai-rail", fabric, experiment, spec, None, None).unwrap();
    let report = &run.report;
    assert!(report.finished, "{report:?}");
    assert_eq!(report.drops_total, 0);
    assert_eq!(report.timeouts, 0, "nothing lost: every route and neighbour in place");
    assert_eq!(report.punts, 0, "no frame needed a control plane");
}

const TWO_SWITCHES: &str = "
name: two
topology:
  nodes:
    sw1: { kind: linux, labels: { labs.role: switchd }, binds: ['sw1.yaml:/etc/switchd/config.yaml:ro'] }
    sw2: { kind: linux, labels: { labs.role: switchd }, binds: ['sw2.yaml:/etc/switchd/config.yaml:ro'] }
    h1: { kind: linux, labels: { labs.role: host }, exec: ['ip addr add 172.16.1.10/24 dev eth1', 'ip route add 172.16.2.0/24 via 172.16.1.1 dev eth1'] }
    h2: { kind: linux, labels: { labs.role: host }, exec: ['ip addr add 172.16.2.10/24 dev eth1', 'ip route add 172.16.1.0/24 via 172.16.2.1 dev eth1'] }
  links:
    - endpoints: ['sw1:eth1', 'h1:eth1']
    - endpoints: ['sw2:eth1', 'h2:eth1']
    - endpoints: ['sw1:eth2', 'sw2:eth2']
";

/// A switch with hosts in VLAN 10 on `172.16.N.0/24`, a routed link
/// `10.0.0.N-1/31` to the other, and `routes` (no BGP).
fn routed_switch(n: u8, routes: &str) -> String {
    format!(
        "name: sw{n}
ports:
  - {{ name: eth1, mode: access, vlan: 10, speed: 1G }}
  - {{ name: eth2, mode: routed, addresses: [10.0.0.{}/31], speed: 1G }}
vlans:
  - {{ id: 10, addresses: [172.16.{n}.1/24] }}
qos: {{ preset: roce }}
{routes}",
        n - 1
    )
}

#[test]
fn static_routes_in_the_yaml_carry_traffic_between_switches() {
    let run = |sw1_routes: &str| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("two.clab.yml"), TWO_SWITCHES).unwrap();
        std::fs::write(dir.path().join("sw1.yaml"), routed_switch(1, sw1_routes)).unwrap();
        let sw2 = routed_switch(2, "routes: [{ prefix: 172.16.1.0/24, next_hops: [10.0.0.0] }]\n");
        std::fs::write(dir.path().join("sw2.yaml"), sw2).unwrap();
        let (_, fabric) = Fabric::from_topology_file(&dir.path().join("two.clab.yml")).unwrap();
        let experiment = Experiment { mtu: 1024, sample_ns: 0, time_limit_ns: 20_000_000, ..Experiment::default() };
        let spec = WorkloadSpec {
            kind: Kind::Incast,
            bytes: 64 << 10,
            jitter_ns: 0,
            compute_ns: 0,
            iterations: 1,
            ..Default::default()
        };
        sim::run("two", fabric, experiment, spec, None, None).unwrap().report
    };
    let routed = run("routes: [{ prefix: 172.16.2.0/24, next_hops: [10.0.0.1] }]\n");
    assert!(routed.finished, "{routed:?}");
    assert_eq!(routed.drops_total, 0);
    // 64 packets at 1 Gb/s, the last through two switches (three cables of
    // 5 ns per metre of no length: propagation 0).
    let jct = routed.collectives[0].jct_ns.unwrap() as f64 / 1e9;
    let expected = payload_seconds(64 << 10, 1e9) + 2.0 * (1082.0 + 24.0) * 8.0 / 1e9;
    assert!((jct - expected).abs() / expected < 0.01, "JCT {jct} s, expected {expected} s");
    // Without sw1's route, h2's subnet is unreachable from h1: sw1 drops.
    let unrouted = run("");
    assert!(!unrouted.finished);
    assert!(unrouted.drops_total > 0, "{unrouted:?}");
}

#[test]
fn a_failed_spine_link_in_the_ai_rail_lab_is_routed_around() {
    let (_, fabric) =
        Fabric::from_topology_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies/ai-rail.clab.yml")).unwrap();
    let name = |end: &labs::sim::fabric::End| match *end {
        labs::sim::fabric::End::Switch { switch, .. } => fabric.switches[switch as usize].name.clone(),
        labs::sim::fabric::End::Host { host } => fabric.hosts[host as usize].name.clone(),
    };
    let cable = fabric
        .links
        .iter()
        .position(|(a, b)| {
            let mut ends = [name(a), name(b)];
            ends.sort();
            ends == ["leaf-g1-r1", "spine1"]
        })
        .expect("leaf-g1-r1 - spine1") as u32;
    // 100 Mb/s ports: an all-to-all of 512 KiB per host takes tens of
    // milliseconds; the cable fails after five, BGP moves off it 200 us
    // later, what was lost on it comes back at the retransmission timeout.
    let run = |failure: Option<(u32, u64)>| {
        let experiment = Experiment {
            mtu: 1024,
            sample_ns: 0,
            link_failure: failure,
            reconverge_ns: 200_000,
            rto_ns: 20_000_000,
            ..Experiment::default()
        };
        let spec = WorkloadSpec {
            kind: Kind::AllToAll,
            bytes: 512 << 10,
            jitter_ns: 0,
            compute_ns: 0,
            iterations: 1,
            ..Default::default()
        };
        sim::run("ai-rail", fabric.clone(), experiment, spec, None, None).unwrap().report
    };
    let intact = run(None);
    let failed = run(Some((cable, 5_000_000)));
    assert!(intact.finished && failed.finished, "{failed:?}");
    assert_eq!(intact.routes_rewritten, 0);
    // Every switch with routes over the failed cable moved them: leaf-g1-r1
    // to spine2 only, the other leaves' routes to leaf-g1-r1's subnets and
    // loopback via spine2 only, spine1's to them withdrawn.
    assert!(failed.routes_rewritten >= 5, "{} routes rewritten", failed.routes_rewritten);
    assert!(failed.drops["link-down"] + failed.drops["pipeline-egressportdown"] > 0, "{:?}", failed.drops);
    let (intact_jct, failed_jct) = (intact.collectives[0].jct_ns.unwrap(), failed.collectives[0].jct_ns.unwrap());
    println!(
        "ai-rail all-to-all: intact {:.1} ms; leaf-g1-r1 - spine1 down at 5 ms: {:.1} ms, {} routes rewritten, {} timeouts",
        intact_jct as f64 / 1e6,
        failed_jct as f64 / 1e6,
        failed.routes_rewritten,
        failed.timeouts
    );
    assert!(failed_jct > intact_jct, "the failure costs time");
}

#[test]
fn ports_listed_out_of_order_keep_their_names() {
    // eth4 (the receiver's) listed first: pipeline port 0, named eth4.
    let yaml = switch_yaml("100M", "");
    let eth4 = "  - { name: eth4, mode: access, vlan: 10, mtu: 9100, speed: 100M, cable-length: 5 }\n";
    let reordered = yaml.replace(eth4, "").replace("ports:\n", &format!("ports:\n{eth4}"));
    let dir = tempfile::tempdir().unwrap();
    let fabric = fabric_with(dir.path(), &reordered).unwrap();
    assert_eq!(fabric.port_named(0, "eth4"), Some(0));
    assert_eq!(fabric.port_name(0, 1), "eth1");
    assert_eq!(fabric.hosts[3].port, 0, "h4 is on eth4");
    let experiment = Experiment { mtu: 1024, sample_ns: 0, ..Experiment::default() };
    let spec = WorkloadSpec {
        kind: Kind::Incast,
        bytes: 64 << 10,
        jitter_ns: 0,
        compute_ns: 0,
        iterations: 1,
        ..Default::default()
    };
    let run = sim::run("incast", fabric, experiment, spec, None, None).unwrap();
    assert!(run.report.finished);
    run.write(dir.path()).unwrap();
    let ports = std::fs::read_to_string(dir.path().join("ports.csv")).unwrap();
    assert!(ports.lines().nth(1).unwrap().starts_with("sw1,eth4,h4:eth1,"), "{ports}");
}
