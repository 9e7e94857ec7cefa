//! `switchd check` as an operator runs it: exit status and messages. No root.

use std::process::Command;

fn check(yaml: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("switch.yaml");
    std::fs::write(&path, yaml).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_switchd")).args(["check", "--config"]).arg(&path).output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn valid_config_passes() {
    let (code, stdout, _) = check("name: s1\nports:\n  - { name: eth1, mode: routed, addresses: [10.0.0.1/24] }\n");
    assert_eq!(code, 0);
    assert!(stdout.contains("is valid"), "{stdout}");
}

#[test]
fn wrong_type_is_refused_with_field_and_line() {
    let (code, _, stderr) = check("name: s1\nports:\n  - name: eth1\n    mode: routed\n    mtu: big\n");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("ports[0].mtu: invalid type: string \"big\", expected u16 (line 5)"), "{stderr}");
}

#[test]
fn every_semantic_error_is_named() {
    let yaml = r#"
name: s1
ports:
  - { name: eth0, mode: access, vlan: 10 }
  - { name: eth1, mode: routed, addresses: [10.0.0.1/24] }
  - { name: eth2, mode: routed, addresses: [10.0.0.9/16] }
vlans:
  - { id: 10, members: [eth7] }
vxlan:
  source: 10.0.0.1
  vnis: [{ vni: 16777216, vlan: 10 }]
"#;
    let (code, _, stderr) = check(yaml);
    assert_eq!(code, 2, "{stderr}");
    for expected in [
        "ports[0].name: eth0 is the management interface",
        "vlans[0].members[0]: unknown port eth7",
        "ports[2].addresses[0]: 10.0.0.9/16 overlaps 10.0.0.1/24",
        "vxlan.vnis[0].vni: VNI 16777216 is outside 1..=16777215",
    ] {
        assert!(stderr.contains(expected), "missing {expected:?} in:\n{stderr}");
    }
}

#[test]
fn missing_file_is_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_switchd"))
        .args(["check", "--config", "/nonexistent/switchd.yaml"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot read"));
}

/// `run` refuses an invalid config before touching anything: it exits 2
/// without needing root or any interface.
#[test]
fn run_refuses_invalid_config_before_starting() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.yaml");
    std::fs::write(&path, "name: s1\nports:\n  - { name: eth9, mode: access, vlan: 4095 }\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_switchd")).args(["run", "--config"]).arg(&path).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("ports[0].vlan: VLAN id 4095 is outside 1..=4094"), "{stderr}");
}
