//! The checked-in labs deploy with `labs deploy`, converge (`labs check`:
//! BGP sessions, loopback routes, all-pairs ping), and `labs destroy`
//! leaves no namespace, veth, state or process behind, also when the runner
//! was killed half-way through a deploy.

use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fabric_tests::frr::frr_available;
use fabric_tests::labs::{TestLab, assert_clean, labs_ok, recorded_pids, topology_file};
use fabric_tests::{require_root_and_tools, workspace_binary};
use labs::runner::{Lab, state_dir};

/// Deploys, converges, checks inspect/exec, destroys and checks it is gone.
fn deploy_check_destroy(topology: &str, tag: &str, want_pairs: usize) {
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
    lab.destroy_and_check(&recorded_pids(&state));
}

#[test]
fn incast_deploys_converges_and_destroys_clean() {
    if !require_root_and_tools("incast_deploys_converges_and_destroys_clean", &["ip", "ping"]) {
        return;
    }
    // 4 hosts on one switch: 12 ordered pairs.
    deploy_check_destroy("incast", "inc", 12);
}

#[test]
fn evpn_leaf_spine_with_an_frr_leaf_deploys_converges_and_destroys_clean() {
    if !frr_available("evpn_leaf_spine_with_an_frr_leaf") || !require_root_and_tools("evpn", &["ip", "ping", "bridge"])
    {
        return;
    }
    // Two VNIs of 4 hosts each, one leaf FRR with a kernel VTEP: 2 x 4 x 3.
    deploy_check_destroy("evpn-leaf-spine", "evp", 24);
}

#[test]
fn ai_rail_deploys_converges_and_destroys_clean() {
    if !require_root_and_tools("ai_rail_deploys_converges_and_destroys_clean", &["ip", "ping"]) {
        return;
    }
    // 4 servers x 2 rails, pairs on the same rail: 2 x 4 x 3.
    deploy_check_destroy("ai-rail", "air", 24);
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
