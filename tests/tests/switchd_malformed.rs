//! A flood of malformed frames on a port leaves the daemon up and counts
//! the drops; forwarding goes on afterwards.

use std::time::Duration;

use dataplane::io::{AfPacket, PortIo};
use fabric_tests::{Netns, Switchd, require_root_and_tools, veth};

const CONFIG: &str = "
name: malsw
ports:
  - name: eth1
    mode: access
    vlan: 10
  - name: eth2
    mode: access
    vlan: 10
  - name: eth3
    mode: routed
    addresses: [10.3.0.1/24]
vlans:
  - id: 10
";

/// Deterministic junk: truncated headers, bad lengths, bad checksums,
/// multicast source MACs, tag stacks cut short.
fn malformed(i: u32) -> Vec<u8> {
    let mut x = i.wrapping_mul(2_654_435_761).wrapping_add(0x9e37_79b9);
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    let dst = [0x02, 0, 0, 0, 0x77, 0x01];
    match i % 6 {
        // A frame shorter than an Ethernet header.
        0 => (0..(next() % 14) as usize).map(|_| next() as u8).collect(),
        // IPv4 with a header length below 5 and a total length past the end.
        1 => {
            let mut f = [dst.as_slice(), &[0x02, 0, 0, 0, 0x66, 1], &[0x08, 0x00]].concat();
            f.extend([0x42, 0, 0xff, 0xff, 0, 0, 0, 0, 64, 17, 0, 0, 10, 3, 0, 2, 10, 3, 0, 1]);
            f
        }
        // IPv4 with a wrong header checksum, to the switch's routed MAC.
        2 => {
            let mut f = [[0xff; 6].as_slice(), &[0x02, 0, 0, 0, 0x66, 2], &[0x08, 0x00]].concat();
            f.extend([0x45, 0, 0, 28, 0, 0, 0, 0, 64, 1, 0xde, 0xad, 10, 3, 0, 2, 10, 3, 0, 1]);
            f.extend([8, 0, 0, 0, 0, 0, 0, 0]);
            f
        }
        // A multicast source MAC.
        3 => [dst.as_slice(), &[0x01, 0, 0x5e, 0, 0, 1], &[0x08, 0x06], &[0; 28]].concat(),
        // A VLAN tag and nothing after it.
        4 => [dst.as_slice(), &[0x02, 0, 0, 0, 0x66, 4], &[0x81, 0x00, 0x00]].concat(),
        // ARP truncated mid-body.
        _ => [[0xff; 6].as_slice(), &[0x02, 0, 0, 0, 0x66, 5], &[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0]].concat(),
    }
}

#[test]
fn malformed_flood_is_counted_and_the_daemon_stays_up() {
    if !require_root_and_tools("switchd_malformed", &["ip", "ping"]) {
        return;
    }
    let sw = Netns::new("mls");
    let h1 = Netns::new("mla");
    let h2 = Netns::new("mlb");
    let h3 = Netns::new("mlc");
    veth(&h1, "eth0", &sw, "eth1");
    veth(&h2, "eth0", &sw, "eth2");
    veth(&h3, "eth0", &sw, "eth3");
    h1.host_setup("eth0", "192.168.10.1/24", None);
    h2.host_setup("eth0", "192.168.10.2/24", None);
    h3.host_setup("eth0", "10.3.0.2/24", None);

    let mut switchd = Switchd::start(&sw, CONFIG);
    assert!(h1.ping_until("192.168.10.2", Duration::from_secs(10)));
    let access_before = switchd.counter("eth1", "rx_drops");
    let routed_before = switchd.counter("eth3", "rx_drops");

    const FLOOD: u32 = 30_000;
    for (ns, ifname) in [(&h1, "eth0"), (&h3, "eth0")] {
        ns.enter(|| {
            let mut port = AfPacket::open(ifname).expect("AF_PACKET on the host side");
            for i in 0..FLOOD {
                let frame = malformed(i);
                if !frame.is_empty() {
                    // The kernel refuses frames shorter than a header on
                    // send; that is fine, the rest goes.
                    let _ = port.send(&frame);
                }
                if i % 256 == 0 {
                    let _ = port.flush();
                    // Paced so the switch's receive ring is not what is
                    // measured: a frame the kernel drops at a full ring never
                    // reaches the pipeline to be counted.
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            let _ = port.flush();
        });
    }
    std::thread::sleep(Duration::from_secs(1));

    assert!(switchd.process.is_running(), "switchd died under malformed input");
    // Of each 6 frames, one is shorter than a header (the sender's kernel
    // refuses it) and one is a cut-short VLAN tag (the receiving kernel
    // drops it before AF_PACKET), so 4 in 6 reach the switch.
    let reaching = u64::from(FLOOD) * 4 / 6;
    // On the routed port every one of them is dropped (none is a valid
    // packet for the switch or for routing).
    let routed_drops = switchd.counter("eth3", "rx_drops") - routed_before;
    assert!(routed_drops >= reaching, "routed port: {routed_drops} drops of {reaching} malformed frames");
    // A bridge forwards whatever has valid Ethernet addresses (it does not
    // read L3); what is malformed at L2, a multicast source MAC, is dropped.
    let access_drops = switchd.counter("eth1", "rx_drops") - access_before;
    assert!(access_drops >= reaching / 4, "access port: {access_drops} drops of {} bad-source frames", reaching / 4);
    // Still forwarding.
    assert!(h1.ping("192.168.10.2", 3), "forwarding after the flood");
    assert!(h2.ping("192.168.10.1", 3));
    let out = switchd.stop().expect("exit");
    assert!(out.status.success(), "switchd exit after the flood: {}", out.status);
}
