//! The checked-in labs deploy with `labs deploy`, converge (`labs check`:
//! BGP sessions, loopback routes, all-pairs ping; in `ib-fattree` the SM's
//! sweep, every HCA's LID and all-pairs ibping), and `labs destroy`
//! leaves no namespace, veth, state or process behind, also when the runner
//! was killed half-way through a deploy.

use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fabric_tests::frr::frr_available;
use fabric_tests::labs::{TestLab, assert_clean, labs_cli, labs_ok, recorded_pids, topology_file};
use fabric_tests::{require_root_and_tools, workspace_binary};
use labs::runner::{Lab, state_dir};

/// Deploys, converges, checks inspect/exec, runs `also` on the lab,
/// destroys and checks it is gone.
fn deploy_check_run_destroy(topology: &str, tag: &str, want_pairs: usize, also: impl FnOnce(&TestLab)) -> String {
    let lab = TestLab::deploy(&topology_file(topology), tag);
    let state = lab.state();
    let report = lab.cli(&["check", "--timeout", "90"]);
    println!("{topology}: {report}");
    assert!(report.contains(&format!("{want_pairs} host pairs ping")), "{report}");
    // inspect names every node, each program running.
    let table = lab.cli(&["inspect"]);
    for node in &state.nodes {
        let line = table.lines().find(|l| l.starts_with(&node.namespace)).unwrap_or_else(|| panic!("{table}"));
        assert!(line.contains("running"), "{line}");
    }
    // exec runs in the node's namespace.
    let host = state.nodes.iter().find(|n| n.role == labs::topology::Role::Host).unwrap();
    let (ok, links) = lab.exec(&host.name, &["ip", "-o", "link", "show", "eth1"]);
    assert!(ok && links.contains("eth1"), "{links}");
    also(&lab);
    lab.destroy_and_check(&recorded_pids(&state));
    report
}

#[test]
fn incast_deploys_converges_and_destroys_clean() {
    if !require_root_and_tools("incast_deploys_converges_and_destroys_clean", &["ip", "ping"]) {
        return;
    }
    // 4 hosts on one switch: 12 ordered pairs. Then the incast it is named
    // for: h1-h3 send 4 MiB each on the lossless class (DSCP 26) into h4
    // at line rate: the switch pauses the senders (PFC on priority 3) and
    // they obey.
    deploy_check_run_destroy("incast", "inc", 12, |lab| {
        let check = lab.cli(&["check", "lossless", "--timeout", "20"]);
        assert!(check.contains("no problem found"), "{check}");
        let report = traffic(lab, &["--pattern", "incast", "--bytes", "4M"]);
        println!("incast: {report:#}");
        assert_eq!(report["flows"].as_array().unwrap().len(), 3, "{report:#}");
        let flows = report["flows"].as_array().unwrap();
        assert!(flows.iter().all(|f| f["completed"] == true), "{report:#}");
        let receiver = &report["receivers"][0];
        assert_eq!(receiver["delivered_bytes"], 3 * (4 << 20), "every byte: {report:#}");
        let pfc = &report["switches"]["pfc_tx"];
        assert!(pfc[3].as_u64().unwrap() > 0, "no PFC sent on priority 3: {report:#}");
        let obeyed: u64 = flows.iter().map(|f| f["pauses_obeyed"].as_u64().unwrap()).sum();
        assert!(obeyed > 0, "no sender obeyed a pause: {report:#}");
    });
}

#[test]
fn evpn_leaf_spine_with_an_frr_leaf_deploys_converges_and_destroys_clean() {
    if !frr_available("evpn_leaf_spine_with_an_frr_leaf")
        || !require_root_and_tools("evpn", &["ip", "ping", "bridge", "sysctl", "unshare", "nsenter"])
    {
        return;
    }
    // Two tenant VRFs with symmetric IRB on every leaf, FRR's too (its
    // VRFs network namespaces on a kernel without VRF devices, docs/labs.md):
    // red has VNIs 10010 and 10020 with a host on every leaf, blue VNI 10030
    // on leaves 1 and 3 and 10040 on leaves 2 and 4; every host routes
    // through the anycast gateway. Pairs that ping: bridged, 4 x 3 in each
    // red VNI, 2 in 10030 and 2 in 10040 (28); routed within a VRF, 4 x 4 x 2
    // in red and 2 x 2 x 2 in blue (40: inter-VNI through the L3VNIs, to and
    // from leaf4's hosts among them). Then none of the 64 cross-VRF pairs
    // (each of the 12 hosts to each host of the other VRF) pings. Each of
    // the 3 switchd leaves floods its 3 VNIs to the other VTEPs with them
    // (3 + 3 + 1 entries) and has learned the 7 hosts behind them from type
    // 2 routes.
    let report = deploy_check_run_destroy("evpn-leaf-spine", "evp", 68, |lab| {
        // leaf1 reaches leaf4's blue host (VNI 10040, which leaf1 lacks)
        // through FRR's VTEP on blue's L3VNI, to FRR's router MAC for blue.
        let swcli = workspace_binary("swcli");
        let state = lab.state();
        let leaf1 = state.nodes.iter().find(|n| n.name == "leaf1").unwrap();
        let socket = format!("SWCLI_SOCKET={}", leaf1.config.as_ref().unwrap().with_extension("sock").display());
        let (ok, routes) =
            lab.exec("leaf1", &["env", &socket, swcli.to_str().unwrap(), "show", "ip", "route", "vrf", "blue"]);
        let route = routes.lines().find(|l| l.contains("192.168.40.13/32")).unwrap_or_default();
        assert!(ok && route.contains("via 10.255.0.6, vni4002 rmac 02:cc:00:00:02:04"), "{routes}");
    });
    assert!(report.contains("68 host pairs ping (40 routed between subnets), 64 cross-VRF pairs isolated"), "{report}");
    assert!(report.contains("EVPN: 21 remote VTEP flood entries, 21 remote MACs learned"), "{report}");
}

#[test]
fn ai_rail_deploys_converges_and_destroys_clean() {
    if !require_root_and_tools("ai_rail_deploys_converges_and_destroys_clean", &["ip", "ping"]) {
        return;
    }
    // 4 servers x 2 rails, pairs on the same rail: 2 x 4 x 3. The lossless
    // class is configured end to end (`labs check lossless` over the 8
    // switch links LLDP found), and an all-to-all of fabric-host flows on
    // it, each rail's NICs to each other, within a group and across the
    // spines, delivers every byte of every flow.
    //
    // Every byte, not nearly: what a loaded machine still loses (a port's
    // AF_PACKET ring full while its switchd waits for a CPU, before any
    // traffic manager or PFC sees the frame; frames that were in that ring
    // when the port sent XOFF) fabric-host's go-back-N sends again, as a
    // RoCE NIC's RC transport does. The report says how much that was.
    deploy_check_run_destroy("ai-rail", "air", 24, |lab| {
        let check = lab.cli(&["check", "lossless", "--timeout", "30"]);
        assert!(check.contains("6 switch(es), 8 link(s)") && check.contains("no problem found"), "{check}");
        let report = traffic(lab, &["--pattern", "all-to-all", "--bytes", "512K", "--rate", "50M"]);
        println!("all-to-all: {report:#}");
        let flows = report["flows"].as_array().unwrap();
        assert_eq!(flows.len(), 24, "{report:#}");
        assert!(flows.iter().all(|f| f["completed"] == true), "a flow not acknowledged whole: {report:#}");
        let receivers = report["receivers"].as_array().unwrap();
        assert_eq!(receivers.len(), 8, "every server NIC receives: {report:#}");
        for r in receivers {
            assert_eq!(r["delivered_bytes"], r["expected_bytes"], "{r}");
            assert_eq!(r["expected_bytes"], 3 * 512 * 1024, "{r}");
        }
        let sum = |key: &str| flows.iter().map(|f| f[key].as_u64().unwrap()).sum::<u64>();
        println!(
            "ai-rail all-to-all: every byte delivered; switches dropped {} (traffic managers) + {} (full port rings); \
             {} frames sent again after {} NAKs and {} timeouts",
            report["switches"]["drops"],
            report["switches"]["rx_ring_drops"],
            sum("retransmitted"),
            sum("naks"),
            sum("timeouts")
        );
    });
}

/// `labs traffic --json ARGS` on the lab.
fn traffic(lab: &TestLab, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["traffic", "--json", "--name", &lab.name];
    all.extend_from_slice(args);
    let out = labs_cli(&all);
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("labs traffic: {e}: {stdout}{}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn ib_fattree_deploys_the_sm_sweeps_every_hca_pings_and_destroys_clean() {
    if !require_root_and_tools("ib_fattree_deploys_converges_and_destroys_clean", &["ip"]) {
        return;
    }
    // Radix 4: 2 spines, 4 leaves, 8 HCAs; the SM in spine1 brings the
    // IB-like plane up from nothing and every HCA ibpings the 7 others.
    let started = Instant::now();
    let lab = TestLab::deploy(&topology_file("ib-fattree"), "ibf");
    let state = lab.state();
    let report = lab.cli(&["check", "--timeout", "45"]);
    println!("ib-fattree: {report} (deploy and check {:.1} s)", started.elapsed().as_secs_f64());
    assert!(
        report.contains("IB: SM on spine1 master, fabric up with 6 switches and 8 HCAs each with a LID"),
        "{report}"
    );
    assert!(report.contains("56 HCA pairs ibping"), "{report}");
    // Every node runs its program: six switchd, eight fabric-host ib.
    let table = lab.cli(&["inspect"]);
    for node in &state.nodes {
        let line = table.lines().find(|l| l.starts_with(&node.namespace)).unwrap_or_else(|| panic!("{table}"));
        assert!(line.contains("running"), "{line}");
    }
    let hcas: Vec<_> = state.nodes.iter().filter(|n| n.role == labs::topology::Role::Hca).collect();
    assert_eq!(hcas.len(), 8);
    // Each HCA's own log: the SM gave its port a LID.
    for hca in hcas {
        let log = std::fs::read_to_string(state_dir(&lab.name).join(format!("{}.log", hca.name))).unwrap();
        let lid =
            log.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).find(|e| e["event"] == "lid");
        assert!(lid.is_some_and(|e| e["lid"].as_u64() > Some(0)), "{}: {log}", hca.name);
    }
    lab.destroy_and_check(&recorded_pids(&state));
    assert!(started.elapsed() < Duration::from_secs(60), "ib-fattree took {:?}", started.elapsed());
}

#[test]
fn destroy_after_the_runner_was_killed_mid_deploy_leaves_nothing() {
    if !require_root_and_tools("destroy_after_the_runner_was_killed_mid_deploy", &["ip"]) {
        return;
    }
    let lab = TestLab::prepare(&topology_file("ai-rail"), "kil");
    let mut deploy = Command::new(workspace_binary("labs"));
    deploy.args(["deploy", "-t", lab.file.to_str().unwrap()]).stdout(Stdio::null()).stderr(Stdio::null());
    // Its own process group, so the kill below reaches only it.
    deploy.process_group(0);
    let mut child = deploy.spawn().expect("spawn labs deploy");
    // Killed as soon as the second namespace exists: state written, some of
    // the lab made, the rest not.
    let prefix = format!("clab-{}-", lab.name);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let made = std::fs::read_dir("/run/netns")
            .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().starts_with(&prefix)).count())
            .unwrap_or(0);
        if made >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "deploy made no namespace");
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().expect("kill labs deploy");
    child.wait().expect("reap");
    let state = Lab::open(&lab.name).expect("the state file is written before anything is made");
    assert!(state.deploy_secs.is_none(), "the deploy finished before it was killed; the test proves nothing");
    let pids = recorded_pids(&state);
    labs_ok(&["destroy", "--name", &lab.name]);
    assert_clean(&lab.name, &pids);
    assert!(!state_dir(&lab.name).exists());
}

#[test]
fn graph_renders_svg_with_graphviz() {
    if !require_root_and_tools("graph_renders_svg_with_graphviz", &["dot"]) {
        return;
    }
    let dir = fabric_tests::TempDir::new("graph");
    let svg = dir.path().join("lab.svg");
    let file = topology_file("evpn-leaf-spine");
    labs_ok(&["graph", "-t", file.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg"), "not an SVG");
    // (SVG writes "-" as "&#45;", so hosts are matched by their VNI.)
    for node in ["spine1", "leaf4", "vni10010", "vni10020"] {
        assert!(text.contains(node), "{node} not drawn");
    }
    // Without -o: DOT on stdout.
    let dot = labs_ok(&["graph", "-t", file.to_str().unwrap()]);
    assert!(dot.starts_with("graph \"evpn-leaf-spine\""), "{dot}");
}

#[test]
fn an_uncabled_switch_port_is_refused_and_a_node_that_keeps_failing_is_left_down() {
    if !require_root_and_tools("a_node_that_keeps_failing_is_left_down", &["ip"]) {
        return;
    }
    // A config naming a port no link gives the node is refused at deploy,
    // naming both, before anything is made.
    let dir = fabric_tests::TempDir::new("fail");
    std::fs::write(
        dir.path().join("sw.yaml"),
        "name: sw\nports:\n  - { name: eth2, mode: routed, addresses: [10.9.0.1/31] }\n",
    )
    .unwrap();
    let name = fabric_tests::unique_name("fail-");
    let topology = format!(
        "name: {name}\ntopology:\n  nodes:\n    sw: {{ kind: linux, labels: {{ labs.role: switchd }}, binds: ['sw.yaml:/etc/switchd/config.yaml:ro'] }}\n    h: {{ kind: linux, labels: {{ labs.role: host }} }}\n  links:\n    - endpoints: ['sw:eth1', 'h:eth1']\n"
    );
    let file = dir.path().join("fail.clab.yml");
    std::fs::write(&file, &topology).unwrap();
    let refused = labs_cli(&["deploy", "-t", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && stderr.contains("topology.nodes.sw") && stderr.contains("ports[0] eth2"),
        "{stderr}"
    );
    assert_clean(&name, &[]);
    // A switch program that exits at once, every time (`LABS_SWITCHD` picks
    // the binary): the supervisor gives up on it.
    std::fs::write(
        dir.path().join("sw.yaml"),
        "name: sw\nports:\n  - { name: eth1, mode: routed, addresses: [10.9.0.1/31] }\n",
    )
    .unwrap();
    let out = Command::new(workspace_binary("labs"))
        .args(["deploy", "-t", file.to_str().unwrap()])
        .env("LABS_SWITCHD", "/bin/false")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let failed = fabric_tests::poll_until(Duration::from_secs(30), Duration::from_millis(200), || {
        let table = labs_ok(&["inspect", "--name", &name]);
        table.lines().find(|l| l.starts_with(&format!("clab-{name}-sw")) && l.contains("failed")).map(str::to_owned)
    });
    let state = Lab::open(&name).unwrap();
    let log = std::fs::read_to_string(state_dir(&name).join("supervisor.log")).unwrap_or_default();
    labs_ok(&["destroy", "--name", &name]);
    assert!(failed.is_some(), "sw not shown failed; supervisor log:\n{log}");
    assert!(log.contains("leaving it down"), "{log}");
    assert_clean(&name, &recorded_pids(&state));
}
