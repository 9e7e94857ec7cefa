//! The subnet manager in band: SMPs on VL15 inside 0x88B5 frames over veth
//! links between network namespaces, to `ib-sm agent` processes (a
//! switch-like agent with several ports, CA agents with one). The fabric:
//!
//! ```text
//! sm (CA) -- sw1 -- sw2 -- host-b
//!             |
//!           host-c
//! ```
//!
//! The SM discovers it through the switches with directed routes, gives
//! LIDs, programs both switches' LFTs and takes every port to Active; the
//! agents report each Set they answered, which is checked against a walk of
//! the LFTs from host-c to host-b.
//!
//! Needs root and `ip`; skipped otherwise (a failure under CI=true).

use std::collections::BTreeMap;
use std::time::Duration;

use fabric_tests::{Netns, ibsim, require_root_and_tools, veth};

/// Final state per agent output: port -> (state, lid), and LFT entries.
fn last_sets(output: &str) -> (BTreeMap<u32, (String, u16)>, Vec<u8>) {
    let mut ports = BTreeMap::new();
    let mut lft = Vec::new();
    for line in output.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.get(2) == Some(&"PortInfo") {
            let port: u32 = words[4].parse().unwrap();
            ports.insert(port, (words[6].to_string(), words[8].parse().unwrap()));
        } else if words.get(2) == Some(&"LFT") {
            let list = line.split('[').nth(1).unwrap().trim_end_matches(']');
            lft = list.split(", ").map(|p| p.parse().unwrap()).collect();
        }
    }
    (ports, lft)
}

#[test]
fn the_sm_brings_up_a_fabric_in_band_over_veth() {
    if !require_root_and_tools("sm_inband", &["ip"]) {
        return;
    }
    let binary = ibsim::sm_binary();
    let binary = binary.to_str().unwrap();
    let sm = Netns::new("sm");
    let sw1 = Netns::new("s1");
    let sw2 = Netns::new("s2");
    let host_b = Netns::new("hb");
    let host_c = Netns::new("hc");
    veth(&sm, "p1", &sw1, "p1");
    veth(&sw1, "p2", &sw2, "p1");
    veth(&sw1, "p3", &host_c, "p1");
    veth(&sw2, "p2", &host_b, "p1");
    let agent = |ns: &Netns, args: &[&str]| {
        let mut command = ns.command(binary);
        command.arg("agent").args(args).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped());
        fabric_tests::ProcessGuard::spawn("ib-sm agent", command)
    };
    let mut agents = vec![
        (
            "sw1",
            agent(
                &sw1,
                &["--switch", "--iface", "p1", "--iface", "p2", "--iface", "p3", "--guid", "0x100", "--name", "sw1"],
            ),
        ),
        ("sw2", agent(&sw2, &["--switch", "--iface", "p1", "--iface", "p2", "--guid", "0x200", "--name", "sw2"])),
        ("host-b", agent(&host_b, &["--iface", "p1", "--guid", "0x300", "--name", "host-b"])),
        ("host-c", agent(&host_c, &["--iface", "p1", "--guid", "0x400", "--name", "host-c"])),
    ];
    std::thread::sleep(Duration::from_millis(300));
    let output = sm
        .command(binary)
        .args(["run-inband", "--iface", "p1", "--guid", "0x500", "--once", "--engine", "minhop", "--limit-s", "30"])
        .output()
        .expect("run ib-sm run-inband");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("fabric up") && stdout.contains("2 switches, 3 CAs"), "{stdout}");

    let mut states = BTreeMap::new();
    for (name, guard) in &mut agents {
        let out = guard.stop(Duration::from_secs(2)).expect("agent output");
        states.insert(*name, last_sets(&String::from_utf8_lossy(&out.stdout)));
    }
    // Every cabled port Active; CA and switch LIDs set, all different.
    let (sw1_ports, sw1_lft) = &states["sw1"];
    let (sw2_ports, sw2_lft) = &states["sw2"];
    for port in 1..=3 {
        assert_eq!(sw1_ports[&port].0, "Active", "sw1 port {port}");
    }
    for port in 1..=2 {
        assert_eq!(sw2_ports[&port].0, "Active", "sw2 port {port}");
    }
    let lid_b = states["host-b"].0[&1].1;
    let lid_c = states["host-c"].0[&1].1;
    assert_eq!(states["host-b"].0[&1].0, "Active");
    assert_eq!(states["host-c"].0[&1].0, "Active");
    let lids = [lid_b, lid_c, sw1_ports[&0].1, sw2_ports[&0].1];
    assert!(lids.iter().all(|&l| l != 0));
    assert_eq!(lids.iter().collect::<std::collections::BTreeSet<_>>().len(), 4);
    // host-c -> host-b: sw1 sends it out of port 2 (to sw2), sw2 out of
    // port 2 (to host-b); back to host-c: sw1 port 3.
    assert_eq!(sw1_lft[usize::from(lid_b)], 2);
    assert_eq!(sw2_lft[usize::from(lid_b)], 2);
    assert_eq!(sw1_lft[usize::from(lid_c)], 3);
    assert_eq!(sw2_lft[usize::from(lid_c)], 1);
    // The SM's own LID (1, its port first) is behind sw1 port 1.
    assert_eq!(sw1_lft[1], 1);
}
