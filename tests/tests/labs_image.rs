//! The node image's entrypoint (`labs/image/switchd-entrypoint`), run as
//! containerlab runs it but in a namespace (no Docker here): started before
//! its front-panel ports exist, it waits for them (`CLAB_INTFS`, or the
//! ports the config names) and then execs `switchd`, which serves the
//! config; without a config it refuses to start, saying where to bind one.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use fabric_tests::{Netns, ProcessGuard, TempDir, poll_until, require_root_and_tools, veth, workspace_binary};

fn entrypoint() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../labs/image/switchd-entrypoint")
}

/// The entrypoint in `ns`, with the workspace's binaries on PATH.
fn start(ns: &Netns, env: &[(&str, &str)]) -> ProcessGuard {
    let bin_dir = workspace_binary("switchd").parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = ns.command(entrypoint().to_str().unwrap());
    cmd.env("PATH", path).envs(env.iter().copied()).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    ProcessGuard::spawn("switchd-entrypoint", cmd)
}

fn answers(socket: &Path) -> bool {
    Command::new(workspace_binary("swcli"))
        .arg("--socket")
        .arg(socket)
        .args(["show", "interfaces"])
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("eth2"))
}

fn entrypoint_waits_for_ports(env: &[(&str, &str)]) {
    let dir = TempDir::new("img");
    let socket = dir.path().join("sw.sock");
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "name: sw\nmanagement: {{ socket: {} }}\nports:\n  - {{ name: eth1, mode: access, vlan: 10 }}\n  - {{ name: eth2, mode: access, vlan: 10 }}\nvlans:\n  - {{ id: 10 }}\n",
            socket.display()
        ),
    )
    .unwrap();
    let (sw, peer) = (Netns::new("imgs"), Netns::new("imgp"));
    let mut env = env.to_vec();
    env.push(("SWITCHD_CONFIG", config.to_str().unwrap()));
    let mut process = start(&sw, &env);
    // Ports plugged in after the start, one at a time, as containerlab does.
    std::thread::sleep(Duration::from_millis(500));
    veth(&sw, "eth1", &peer, "eth1");
    std::thread::sleep(Duration::from_millis(500));
    assert!(process.is_running() && !socket.exists(), "switchd started before eth2 existed");
    veth(&sw, "eth2", &peer, "eth2");
    let up = poll_until(Duration::from_secs(15), Duration::from_millis(100), || answers(&socket).then_some(()));
    assert!(up.is_some(), "switchd did not serve its config after the ports appeared");
}

#[test]
fn entrypoint_waits_for_the_configs_ports_then_runs_switchd() {
    if !require_root_and_tools("entrypoint_waits_for_the_configs_ports", &["ip", "sh"]) {
        return;
    }
    entrypoint_waits_for_ports(&[]);
}

#[test]
fn entrypoint_waits_for_clab_intfs_ports_then_runs_switchd() {
    if !require_root_and_tools("entrypoint_waits_for_clab_intfs_ports", &["ip", "sh"]) {
        return;
    }
    entrypoint_waits_for_ports(&[("CLAB_INTFS", "2")]);
}

#[test]
fn entrypoint_without_a_config_refuses_to_start() {
    if !require_root_and_tools("entrypoint_without_a_config_refuses_to_start", &["ip", "sh"]) {
        return;
    }
    let ns = Netns::new("imgn");
    let out = ns.exec_status(&["env", "SWITCHD_CONFIG=/nonexistent/config.yaml", entrypoint().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bind one"), "{out:?}");
}
