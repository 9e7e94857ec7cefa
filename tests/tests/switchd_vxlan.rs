//! VXLAN interop with the Linux kernel: `switchd` is one VTEP, a kernel
//! `vxlan` device in a bridge is the other, with static flood lists on both
//! sides. Hosts behind each ping each other, and tshark's decoding of an
//! underlay capture shows VXLAN with the configured VNI and an outer UDP
//! source port that varies with the inner flow (RFC 7348 section 5).
//!
//! ```text
//!  [ha 192.168.50.1] -- eth1 [switchd] eth2 == underlay 172.16.0.0/24 == eth0 [kvtep: vx0 + br0] eth1 -- [hb 192.168.50.2]
//!                       VLAN 10 <-> VNI 10010                             VNI 10010
//! ```

use std::collections::BTreeSet;
use std::net::UdpSocket;
use std::time::Duration;

use fabric_tests::{Netns, Switchd, TempDir, require_root_and_tools, veth};

const VNI: u32 = 10010;

const CONFIG: &str = "
name: vtep1
ports:
  - name: eth1
    mode: access
    vlan: 10
  - name: eth2
    mode: routed
    addresses: [172.16.0.1/24]
vlans:
  - id: 10
vxlan:
  source: 172.16.0.1
  vnis:
    - vni: 10010
      vlan: 10
      flood: [172.16.0.2]
";

#[test]
fn switchd_and_a_kernel_vtep_carry_a_vni_between_hosts() {
    carry_a_vni_between_hosts("soft");
}

#[test]
fn switchd_on_the_kernel_backend_and_a_kernel_vtep_carry_a_vni_between_hosts() {
    carry_a_vni_between_hosts("kernel");
}

/// One test body for both backends (`backend:` in the config).
fn carry_a_vni_between_hosts(backend: &str) {
    if !require_root_and_tools("switchd_vxlan", &["ip", "bridge", "ping", "tshark", "tcpdump"]) {
        return;
    }
    let sw = Netns::new("vxs");
    let kv = Netns::new("vxk");
    let ha = Netns::new("vxa");
    let hb = Netns::new("vxb");
    veth(&ha, "eth0", &sw, "eth1");
    veth(&kv, "eth0", &sw, "eth2");
    veth(&hb, "eth0", &kv, "eth1");
    ha.host_setup("eth0", "192.168.50.1/24", None);
    hb.host_setup("eth0", "192.168.50.2/24", None);
    // The overlay MTU leaves room for the 50 bytes of encapsulation.
    ha.ip(&["link", "set", "eth0", "mtu", "1450"]);
    hb.ip(&["link", "set", "eth0", "mtu", "1450"]);

    // The kernel VTEP: vxlan device with a static flood entry toward
    // switchd, bridged with the port toward hb.
    kv.host_setup("eth0", "172.16.0.2/24", None);
    let vni = VNI.to_string();
    kv.ip(&["link", "add", "vx0", "type", "vxlan", "id", &vni, "local", "172.16.0.2", "dstport", "4789", "nolearning"]);
    kv.exec(&["bridge", "fdb", "append", "00:00:00:00:00:00", "dev", "vx0", "dst", "172.16.0.1"]);
    kv.ip(&["link", "add", "br0", "type", "bridge"]);
    kv.ip(&["link", "set", "vx0", "master", "br0"]);
    kv.ip(&["link", "set", "eth1", "master", "br0"]);
    kv.disable_offloads("eth1");
    for dev in ["vx0", "br0"] {
        kv.ip(&["link", "set", dev, "up"]);
    }

    let switchd = Switchd::start(&sw, &format!("backend: {backend}\n{CONFIG}"));

    // Capture the underlay on the kernel VTEP's side.
    let dir = TempDir::new("vxlan");
    let pcap = dir.path().join("underlay.pcap");
    let pcap_arg = pcap.to_str().unwrap();
    let mut capture = kv.spawn(&["tcpdump", "-i", "eth0", "-n", "-U", "-w", pcap_arg, "udp", "port", "4789"]);
    std::thread::sleep(Duration::from_millis(1000));

    assert!(ha.ping_until("192.168.50.2", Duration::from_secs(15)), "ha -> hb across the overlay");
    assert!(ha.ping("192.168.50.2", 3), "ha -> hb, every reply");
    assert!(hb.ping("192.168.50.1", 3), "hb -> ha, every reply");

    // Many inner flows: one UDP source port each.
    ha.enter(|| {
        for flow in 0..32u16 {
            let socket = UdpSocket::bind(("192.168.50.1", 30_000 + flow)).expect("bind");
            for _ in 0..3 {
                socket.send_to(b"inner flow", "192.168.50.2:9").expect("send");
            }
        }
    });
    std::thread::sleep(Duration::from_millis(800));
    capture.stop(Duration::from_secs(3));

    // tshark decodes UDP 4789 as VXLAN by default.
    let fields = std::process::Command::new("tshark")
        .args([
            "-r",
            pcap_arg,
            "-Y",
            "vxlan",
            "-T",
            "fields",
            "-E",
            "occurrence=f",
            "-e",
            "ip.src",
            "-e",
            "udp.srcport",
            "-e",
            "vxlan.vni",
        ])
        .output()
        .expect("run tshark");
    let text = String::from_utf8_lossy(&fields.stdout);
    let rows: Vec<Vec<&str>> =
        text.lines().map(|l| l.split('\t').collect()).filter(|r: &Vec<&str>| r.len() == 3).collect();
    let from_switchd: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0].starts_with("172.16.0.1")).collect();
    assert!(from_switchd.len() >= 32, "switchd's encapsulated frames in the capture: {text}");
    for row in &rows {
        assert_eq!(row[2], vni, "VNI of every VXLAN frame: {row:?}");
    }
    let source_ports: BTreeSet<&str> = from_switchd.iter().map(|r| r[1]).collect();
    assert!(source_ports.len() >= 4, "outer source ports vary with the inner flow: {source_ports:?}");
    assert!(source_ports.iter().all(|p| p.parse::<u16>().is_ok_and(|p| p >= 1024)), "{source_ports:?}");

    // The switch's view: hb's MAC behind the remote VTEP, the VTEP listed.
    let hb_mac = hb.exec(&["cat", "/sys/class/net/eth0/address"]).trim().to_string();
    let macs = switchd.show_rows("mac");
    let remote = macs
        .iter()
        .find(|m| m["mac"].as_str().is_some_and(|mac| mac.eq_ignore_ascii_case(&hb_mac)))
        .unwrap_or_else(|| panic!("hb's MAC {hb_mac} not learned: {macs:#?}"));
    assert!(remote["destination"].as_str().is_some_and(|d| d.contains("172.16.0.2")), "{remote}");
    let vxlan = switchd.show_json("vxlan");
    let vteps = vxlan["remote_vteps"].as_array().expect("remote_vteps");
    assert!(vteps.iter().any(|v| v["address"] == "172.16.0.2"), "{vxlan}");
}
