//! Two hosts on one VLAN through one `switchd`: ping both ways, and the MAC
//! table shown by `swcli show mac --json` lists both hosts on the right
//! ports. One test body for both backends (`backend:` in the config): on
//! the kernel backend the kernel's bridge learns and floods, and the MAC
//! table is read back from the kernel.

use std::time::Duration;

use dataplane::io::{AfPacket, FrameBatch, PortIo};
use fabric_tests::{Netns, Switchd, kernel_can_tag, kernel_vlans, require_root_and_tools, veth};

const ACCESS: &str = "
name: l2sw
ports:
  - name: eth1
    mode: access
    vlan: 10
  - name: eth2
    mode: access
    vlan: 10
";

const TRUNK: &str = "
  - name: eth3
    mode: trunk
    vlans: [10, 20]
";

const VLANS: &str = "
vlans:
  - id: 10
  - id: 20
";

fn mac_of(ns: &Netns, ifname: &str) -> String {
    ns.exec(&["cat", &format!("/sys/class/net/{ifname}/address")]).trim().to_string()
}

#[test]
fn two_hosts_on_one_vlan_ping_and_are_learned_on_their_ports() {
    two_hosts_on_one_vlan("soft");
}

#[test]
fn on_the_kernel_backend_two_hosts_on_one_vlan_ping_and_are_learned_on_their_ports() {
    two_hosts_on_one_vlan("kernel");
}

fn two_hosts_on_one_vlan(backend: &str) {
    if !require_root_and_tools("switchd_l2", &["ip", "ping"]) {
        return;
    }
    // The soft pipeline tags itself; the kernel's bridge needs VLAN
    // filtering or 802.1Q devices for the trunk.
    let trunk = backend == "soft" || kernel_can_tag("switchd_l2 (kernel backend)");
    if backend == "kernel" {
        eprintln!("kernel bridge mode on this kernel: {:?} ({})", kernel_vlans(), kernel_vlans().mode());
    }
    let sw = Netns::new("l2s");
    let h1 = Netns::new("l2a");
    let h2 = Netns::new("l2b");
    let h3 = Netns::new("l2c");
    veth(&h1, "eth0", &sw, "eth1");
    veth(&h2, "eth0", &sw, "eth2");
    veth(&h3, "eth0", &sw, "eth3");
    h1.host_setup("eth0", "192.168.10.1/24", None);
    h2.host_setup("eth0", "192.168.10.2/24", None);
    // h3 sits on the trunk and speaks raw tagged frames (this kernel may
    // lack 802.1Q sub-interfaces, so no `ip link add ... type vlan`).

    if !trunk {
        // What this kernel cannot bridge is refused whole, naming it, and
        // nothing of the half-applied config stays in the kernel.
        let mut refused =
            Switchd::spawn(&sw, &format!("backend: {backend}\n{ACCESS}{}{VLANS}", TRUNK.trim_start_matches('\n')));
        let out = refused.process.wait_timeout(Duration::from_secs(15)).expect("switchd refuses the trunk and exits");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success(), "{text}");
        assert!(text.contains("eth3") && text.contains("kernel refused tagged vlan"), "{text}");
        let links = sw.ip(&["-o", "link", "show"]);
        assert!(!links.contains("nos-"), "nothing of ours left behind: {links}");
    }
    let config =
        format!("backend: {backend}\n{ACCESS}{}{VLANS}", if trunk { TRUNK.trim_start_matches('\n') } else { "" });
    let switchd = Switchd::start(&sw, &config);

    assert!(h1.ping_until("192.168.10.2", Duration::from_secs(10)), "h1 -> h2");
    assert!(h1.ping("192.168.10.2", 3), "h1 -> h2, every reply");
    assert!(h2.ping("192.168.10.1", 3), "h2 -> h1, every reply");
    let mac3 = "02:00:00:00:33:03";
    if trunk {
        across_the_trunk(&h1, &h3);
    }
    // Flooding within the VLAN: a broadcast from h1 reaches h2 once.
    let seen_on_h2 = flooded(&h1, &h2, [0x02, 0, 0, 0, 0x11, 0x02]);
    assert_eq!(seen_on_h2.len(), 1, "the broadcast reaches h2 once: {seen_on_h2:02x?}");
    assert_eq!(&seen_on_h2[0][12..15], &[0x88, 0xb6, 0xb1], "untagged on the access port");

    let mac1 = mac_of(&h1, "eth0");
    let mac2 = mac_of(&h2, "eth0");
    let table = switchd.show_rows("mac");
    let entry = |mac: &str| {
        table
            .iter()
            .find(|row| row["mac"].as_str().is_some_and(|m| m.eq_ignore_ascii_case(mac)))
            .unwrap_or_else(|| panic!("{mac} not in the MAC table: {table:#?}"))
            .clone()
    };
    let e1 = entry(&mac1);
    let e2 = entry(&mac2);
    assert_eq!(e1["destination"], "eth1", "{e1}");
    assert_eq!(e2["destination"], "eth2", "{e2}");
    let mut entries = vec![e1, e2];
    if trunk {
        let e3 = entry(mac3);
        assert_eq!(e3["destination"], "eth3", "{e3}");
        entries.push(e3);
    }
    for e in &entries {
        assert_eq!(e["vlan"], 10, "{e}");
        assert_eq!(e["kind"], "dynamic", "{e}");
    }

    // The table as an operator reads it names the same ports.
    let text = switchd.swcli(&["show", "mac"]);
    assert!(text.to_lowercase().contains(&mac1.to_lowercase()), "{text}");
    assert!(switchd.counter("eth1", "rx_packets") >= 6);
    assert!(switchd.counter("eth2", "tx_packets") >= 6);

    // Link state follows the wire: h2's side down shows eth2 down.
    h2.ip(&["link", "set", "eth0", "down"]);
    let oper = |name: &str| {
        switchd.show_rows("interfaces").into_iter().find(|i| i["name"] == name).map(|i| i["oper_up"].clone())
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while oper("eth2") != Some(serde_json::Value::Bool(false)) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(oper("eth2"), Some(serde_json::Value::Bool(false)), "eth2 down once its peer is down");
    assert_eq!(oper("eth1"), Some(serde_json::Value::Bool(true)));
}

/// Across the trunk: a broadcast tagged VLAN 10 on eth3 reaches h1
/// untagged; one tagged VLAN 20 does not; a broadcast from h1 leaves the
/// trunk tagged VLAN 10.
fn across_the_trunk(h1: &Netns, h3: &Netns) {
    let seen_on_h1 = h1.enter(|| {
        let mut h1_port = AfPacket::open("eth0").unwrap();
        h3.enter(|| {
            let mut h3_port = AfPacket::open("eth0").unwrap();
            for (vid, marker) in [(10u16, 0xa1u8), (20, 0xa2)] {
                let mut frame = vec![0xff; 6];
                frame.extend([0x02, 0, 0, 0, 0x33, 0x03]);
                frame.extend([0x81, 0x00]);
                frame.extend(vid.to_be_bytes());
                frame.extend([0x88, 0xb6, marker]);
                frame.resize(64, 0);
                h3_port.send(&frame).unwrap();
            }
            h3_port.flush().unwrap();
        });
        std::thread::sleep(Duration::from_millis(300));
        let mut batch = FrameBatch::new(64, 2048);
        h1_port.recv_batch(&mut batch).unwrap();
        batch.iter().filter(|f| f[6..12] == [0x02, 0, 0, 0, 0x33, 0x03]).map(<[u8]>::to_vec).collect::<Vec<_>>()
    });
    assert_eq!(seen_on_h1.len(), 1, "exactly the VLAN 10 frame reaches h1: {seen_on_h1:02x?}");
    assert_eq!(&seen_on_h1[0][12..15], &[0x88, 0xb6, 0xa1], "untagged on the access port");
    // And back: a broadcast from h1 (access) leaves the trunk tagged VLAN 10.
    let seen_on_h3 = flooded(h1, h3, [0x02, 0, 0, 0, 0x11, 0x01]);
    assert_eq!(seen_on_h3.len(), 1, "the broadcast reaches the trunk once: {seen_on_h3:02x?}");
    assert_eq!(&seen_on_h3[0][12..19], &[0x81, 0x00, 0x00, 0x0a, 0x88, 0xb6, 0xb1], "tagged VLAN 10 on the trunk");
}

/// A broadcast (EtherType 0x88b6, marker 0xb1) sent by `from` with source
/// `mac`, as received on `to`'s eth0.
fn flooded(from: &Netns, to: &Netns, mac: [u8; 6]) -> Vec<Vec<u8>> {
    to.enter(|| {
        let mut to_port = AfPacket::open("eth0").unwrap();
        from.enter(|| {
            let mut from_port = AfPacket::open("eth0").unwrap();
            let mut frame = vec![0xff; 6];
            frame.extend(mac);
            frame.extend([0x88, 0xb6, 0xb1]);
            frame.resize(60, 0);
            from_port.send(&frame).unwrap();
            from_port.flush().unwrap();
        });
        std::thread::sleep(Duration::from_millis(300));
        let mut batch = FrameBatch::new(64, 2048);
        to_port.recv_batch(&mut batch).unwrap();
        batch.iter().filter(|f| f[6..12] == mac).map(<[u8]>::to_vec).collect::<Vec<_>>()
    })
}
