//! A bad config is refused before anything is touched: the daemon exits
//! non-zero with a message naming the field, and no TAP or address exists
//! in its namespace afterwards.

use std::time::Duration;

use fabric_tests::{Netns, Switchd, require_root_and_tools, veth};

/// A valid base the cases below break one field of.
const PORTS: &str = "
ports:
  - name: eth1
    mode: routed
    addresses: [10.1.0.1/24]
  - name: eth2
    mode: access
    vlan: 10
";

struct Case {
    what: &'static str,
    yaml: String,
    /// The field the message must name.
    field: &'static str,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            what: "wrong type",
            yaml: "name: bad1\nports:\n  - name: eth1\n    mode: routed\n    mtu: big\n    addresses: [10.1.0.1/24]\n"
                .into(),
            field: "ports[0].mtu",
        },
        Case {
            what: "unknown port",
            yaml: format!(
                "name: bad2\n{PORTS}vlans:\n  - id: 10\n    addresses: [192.168.10.1/24]\n    members: [eth9]\n"
            ),
            field: "vlans[0].members[0]",
        },
        Case {
            what: "overlapping subnets",
            yaml: format!("name: bad3\n{PORTS}vlans:\n  - id: 10\n    addresses: [10.1.200.1/16]\n"),
            field: "vlans[0].addresses[0]",
        },
        Case {
            what: "VNI out of range",
            yaml: format!(
                "name: bad4\n{PORTS}vlans:\n  - id: 10\nvxlan:\n  source: 10.1.0.1\n  vnis:\n    - vni: 16777216\n      vlan: 10\n"
            ),
            field: "vxlan.vnis[0].vni",
        },
    ]
}

fn assert_untouched(sw: &Netns, what: &str) {
    let links = sw.ip(&["-br", "link", "show"]);
    for line in links.lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        assert!(
            matches!(name, "lo" | "eth1" | "eth2") || name.starts_with("eth1@") || name.starts_with("eth2@"),
            "{what}: interface {name} was created: {links}"
        );
    }
    let addrs = sw.ip(&["-4", "-br", "addr", "show"]);
    assert!(!addrs.contains("10.1.0.1") && !addrs.contains("192.168.10.1"), "{what}: address configured: {addrs}");
}

#[test]
fn bad_configs_are_refused_naming_the_field_and_touch_nothing() {
    if !require_root_and_tools("switchd_config", &["ip"]) {
        return;
    }
    let sw = Netns::new("cfs");
    let h1 = Netns::new("cfa");
    let h2 = Netns::new("cfb");
    veth(&h1, "eth0", &sw, "eth1");
    veth(&h2, "eth0", &sw, "eth2");

    for case in cases() {
        let mut switchd = Switchd::spawn(&sw, &case.yaml);
        let out = switchd
            .process
            .wait_timeout(Duration::from_secs(10))
            .unwrap_or_else(|| panic!("{}: switchd did not exit on a bad config", case.what));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}: exit status {}", case.what, out.status);
        assert!(stderr.contains(case.field), "{}: message does not name {}: {stderr}", case.what, case.field);
        assert_untouched(&sw, case.what);
    }
}

#[test]
fn a_port_missing_from_the_namespace_is_refused_before_any_tap_exists() {
    if !require_root_and_tools("switchd_config_missing_port", &["ip"]) {
        return;
    }
    let sw = Netns::new("cfm");
    let h1 = Netns::new("cfn");
    veth(&h1, "eth0", &sw, "eth1");
    // eth2 is valid config but has no netdev here.
    let yaml = format!("name: bad5\n{PORTS}vlans:\n  - id: 10\n");
    let mut switchd = Switchd::spawn(&sw, &yaml);
    let out = switchd.process.wait_timeout(Duration::from_secs(10)).expect("switchd did not exit");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "exit status {}", out.status);
    assert!(stderr.contains("eth2"), "message does not name eth2: {stderr}");
    let links = sw.ip(&["-br", "link", "show"]);
    assert!(!links.contains("sw-eth") && !links.contains("vlan"), "TAP left: {links}");
    let addrs = sw.ip(&["-4", "-br", "addr", "show"]);
    assert!(!addrs.contains("10.1.0.1"), "address left: {addrs}");
}
