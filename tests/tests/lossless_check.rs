//! The fabric-wide lossless check (`labs check lossless`, `swcli check
//! lossless`) on three `switchd` in namespaces, LLDP on:
//!
//! ```text
//!  [s1] eth1 -- eth1 [s2] eth2 -- eth1 [s3]
//! ```
//!
//! A clean fabric passes; a fabric seeded with faults has each one found
//! and named, at the link or switch where it is: PFC on different
//! priorities at both ends of s1--s2 (and so a different lossless chain
//! at s1), MTU 9000 against 1500 on s2--s3, s3 declaring a 2 km cable
//! for which s2's fixed headroom is too small (each switch alone is
//! valid: only the link shows it), and s3's watchdog off. (ECN Kmin above
//! XOFF cannot be seeded: switchd refuses such a config, naming the
//! field; `qos::lossless`'s unit test covers the check.)

use std::process::Command;
use std::time::Duration;

use fabric_tests::{Netns, Switchd, poll_until, require_root_and_tools, swcli_json, veth, workspace_binary};

fn switch(name: &str, ports: &[&str], qos: &str) -> String {
    let mut yaml = format!("name: {name}\nlldp: {{ enabled: true, tx_interval_secs: 1 }}\nports:\n");
    for port in ports {
        yaml.push_str(&format!("  - {port}\n"));
    }
    yaml.push_str(qos);
    yaml
}

const ROCE: &str = "qos:\n  preset: roce\n";
const LINK12: &str = "mode: routed, speed: 100G, cable-length: 5, mtu: 9000";

/// s1, s2, s3 started on `configs`, once each has heard LLDP from its
/// neighbours.
struct Fabric {
    _ns: Vec<Netns>,
    switches: Vec<Switchd>,
}

fn fabric(configs: [String; 3]) -> Fabric {
    let ns: Vec<Netns> = ["lc1", "lc2", "lc3"].iter().map(|tag| Netns::new(tag)).collect();
    veth(&ns[0], "eth1", &ns[1], "eth1");
    veth(&ns[1], "eth2", &ns[2], "eth1");
    for (n, ports) in ns.iter().zip([&["eth1"][..], &["eth1", "eth2"], &["eth1"]]) {
        for port in ports {
            n.ip(&["link", "set", port, "mtu", "9100"]);
        }
    }
    let switches: Vec<Switchd> = ns.iter().zip(&configs).map(|(n, config)| Switchd::start(n, config)).collect();
    for (sw, expected) in switches.iter().zip([1, 2, 1]) {
        poll_until(Duration::from_secs(20), Duration::from_millis(250), || {
            (sw.show_json("lldp").as_array().map_or(0, Vec::len) >= expected).then_some(())
        })
        .unwrap_or_else(|| panic!("LLDP neighbours not heard: {}", sw.show_json("lldp")));
    }
    Fabric { _ns: ns, switches }
}

/// `labs check lossless --socket ...`: exit status and output.
fn labs_check(fabric: &Fabric, json: bool) -> (i32, String) {
    let mut cmd = Command::new(workspace_binary("labs"));
    cmd.args(["check", "lossless"]);
    for sw in &fabric.switches {
        cmd.arg("--socket").arg(&sw.socket);
    }
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().expect("run labs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn a_clean_fabric_passes_and_each_seeded_fault_is_found_and_named() {
    if !require_root_and_tools("lossless_check", &["ip"]) {
        return;
    }
    {
        let clean = fabric([
            switch("s1", &[&format!("{{ name: eth1, addresses: [10.0.12.0/31], {LINK12} }}")], ROCE),
            switch(
                "s2",
                &[
                    &format!("{{ name: eth1, addresses: [10.0.12.1/31], {LINK12} }}"),
                    &format!("{{ name: eth2, addresses: [10.0.23.0/31], {LINK12} }}"),
                ],
                ROCE,
            ),
            switch("s3", &[&format!("{{ name: eth1, addresses: [10.0.23.1/31], {LINK12} }}")], ROCE),
        ]);
        let (code, text) = labs_check(&clean, false);
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("3 switch(es), 2 link(s)") && text.contains("no problem found"), "{text}");
        let (ok, out, err) = clean.switches[1].swcli_status(&["check", "lossless"]);
        assert!(ok && out.contains("no problem found"), "{out}{err}");
    }

    let headroom = "    {pg}: { lossless: true, reserved-bytes: 18432, dynamic-th: -1, headroom-bytes: 32000 }\n";
    let fixed: String = [3, 4].iter().map(|pg| headroom.replace("{pg}", &pg.to_string())).collect();
    let faulty = fabric([
        switch(
            "s1",
            &[&format!("{{ name: eth1, addresses: [10.0.12.0/31], {LINK12} }}")],
            "qos:\n  preset: roce\n  pfc: { priorities: [3] }\n",
        ),
        switch(
            "s2",
            &[
                &format!("{{ name: eth1, addresses: [10.0.12.1/31], {LINK12} }}"),
                &format!("{{ name: eth2, addresses: [10.0.23.0/31], {LINK12} }}"),
            ],
            &format!("qos:\n  preset: roce\n  priority-groups:\n{fixed}"),
        ),
        switch(
            "s3",
            &["{ name: eth1, addresses: [10.0.23.1/31], mode: routed, speed: 100G, cable-length: 2000, mtu: 1500 }"],
            "qos:\n  preset: roce\n  watchdog: { enabled: false }\n",
        ),
    ]);
    let (code, text) = labs_check(&faulty, false);
    assert_eq!(code, 1, "errors make the exit status non-zero:\n{text}");
    let (code, json) = labs_check(&faulty, true);
    assert_eq!(code, 1);
    let findings = swcli_json(&json);
    let findings = findings.as_array().expect("findings");
    let found = |check: &str, scope: &str| {
        findings
            .iter()
            .find(|f| f["check"] == check && f["scope"] == scope)
            .unwrap_or_else(|| panic!("{check} at {scope} not found:\n{text}"))
    };
    let pfc = found("pfc-priorities", "link s1:eth1 -- s2:eth1");
    assert_eq!(pfc["severity"], "error");
    assert!(pfc["message"].as_str().unwrap().contains("[3]"), "{pfc}");
    found("qos-chain", "switch s1");
    let mtu = found("mtu", "link s2:eth2 -- s3:eth1");
    assert!(mtu["message"].as_str().unwrap().contains("9000") && mtu["message"].as_str().unwrap().contains("1500"));
    let headroom = found("headroom", "link s2:eth2 -- s3:eth1");
    assert!(headroom["message"].as_str().unwrap().contains("2000 m"), "{headroom}");
    assert!(headroom["fix"].as_str().unwrap().contains("cable-length: 2000"), "{headroom}");
    assert_eq!(found("watchdog", "switch s3")["severity"], "warning");
    assert!(
        !findings
            .iter()
            .any(|f| f["scope"].as_str().is_some_and(|s| s.contains("s1:eth1 -- s2:eth1")) && f["check"] == "headroom"),
        "the s1--s2 link's cables agree:\n{text}"
    );
    for f in findings {
        assert!(!f["fix"].as_str().unwrap_or_default().is_empty(), "every finding says how to fix it: {f}");
    }

    // One switch alone: s3's own checks (its watchdog), from its running
    // config, as a table and as JSON.
    let (ok, out, err) = faulty.switches[2].swcli_status(&["check", "lossless"]);
    assert!(ok, "a warning alone exits 0: {out}{err}");
    assert!(out.contains("watchdog") && out.contains("qos.watchdog.enabled: true"), "{out}");
    let own = swcli_json(&faulty.switches[2].swcli(&["check", "lossless", "--json"]));
    assert_eq!(own.as_array().map(Vec::len), Some(1), "{own}");
}
