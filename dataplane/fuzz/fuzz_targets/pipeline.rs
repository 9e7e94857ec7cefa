//! The forwarding pipeline's entry point, `Switch::process`, over arbitrary
//! frames on a small switch that has every feature on: access and trunk
//! ports, two VLANs, an SVI and a routed port with IPv4/IPv6 addresses,
//! connected and ECMP routes, static neighbours, and a VXLAN VTEP with a
//! remote MAC and a flood list.
//!
//! The first input byte picks the ingress port (port 5 does not exist) and
//! the time step; the rest is the frame. Several frames per input share one
//! switch, so learning, moves and neighbour state carry from one to the next:
//! the input is split on the 4-byte separator `FZ\x00\x01`.
//!
//! Checked besides "never panics": every drop is counted under its reason;
//! every frame the switch sends out of a port has a parseable L2 header; and
//! every IPv4 packet it routes or builds (sent from the router MAC) has a
//! valid header checksum; and every packet it originates itself (from one of
//! its own addresses: VXLAN encapsulation, ICMP echo replies and errors,
//! neighbour discovery) also has valid UDP, ICMP and ICMPv6 checksums. Routed
//! packets keep their transport checksum as it came (a router does not
//! verify it), and bridged frames go out untouched: neither is judged there,
//! nor is anything sent in answer to a frame spoofing the switch's MAC or
//! one of its addresses (bridged or routed, it would look originated).

#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use dataplane::pipeline::{
    Disposition, Egress, FdbDest, FdbKind, NextHop, Output, PortConfig, RifKind, RouteTarget,
    DEFAULT_VRF, RouterInterface, Switch, SwitchConfig, VtepConfig,
};
use dataplane::wire::{
    ArpPacket, ArpRepr, EtherType, EthernetAddress, Icmpv4Packet, Icmpv6Packet, IpProtocol,
    Ipv4Packet, Ipv6Packet, PseudoHeader, UdpPacket, vlan::L2Header, walk_extension_headers,
};
use ipnetwork::IpNetwork;
use libfuzzer_sys::fuzz_target;

const SEPARATOR: &[u8] = b"FZ\x00\x01";
const SECOND: u64 = 1_000_000_000;

fn mac(last: u8) -> EthernetAddress {
    EthernetAddress([0x02, 0, 0, 0, 0, last])
}

fn net(text: &str) -> IpNetwork {
    text.parse().unwrap()
}

/// Ports 0 and 1 access in VLAN 10, port 2 a trunk in VLANs 10 and 20, port 3
/// a routed port, port 4 access in VLAN 20. VLAN 20 is stretched over VXLAN
/// VNI 5020 to the remote VTEP 192.0.2.2, reached through the routed port.
const ROUTER_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0xfe]);
/// The switch's own addresses (its `Local` routes below).
const LOCAL_V4: [Ipv4Addr; 3] =
    [Ipv4Addr::new(10, 0, 10, 1), Ipv4Addr::new(10, 0, 1, 0), Ipv4Addr::new(192, 0, 2, 1)];
const LOCAL_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x10, 0, 0, 0, 0, 1);

fn build_switch() -> Switch {
    let mut switch = Switch::new(SwitchConfig {
        max_ports: 8,
        max_router_interfaces: 4,
        fdb_capacity: 64,
        route_capacity: 64,
        neighbor_capacity: 16,
        event_capacity: 64,
        ..SwitchConfig::default()
    });
    switch.create_vlan(10).unwrap();
    switch.create_vlan(20).unwrap();
    for (port, pvid) in [(0, 10), (1, 10), (2, 0), (3, 1), (4, 20)] {
        switch.set_port(port, PortConfig { pvid, ..PortConfig::default() }).unwrap();
    }
    switch.set_vlan_member(10, 0, false).unwrap();
    switch.set_vlan_member(10, 1, false).unwrap();
    switch.set_vlan_member(10, 2, true).unwrap();
    switch.set_vlan_member(20, 2, true).unwrap();
    switch.set_vlan_member(20, 4, false).unwrap();

    let router_mac = ROUTER_MAC;
    let svi = RouterInterface { kind: RifKind::Vlan(10), mac: router_mac, mtu: 1500, admin_up: true, vrf: DEFAULT_VRF };
    let routed = RouterInterface { kind: RifKind::Port(3), mac: router_mac, mtu: 9000, admin_up: true, vrf: DEFAULT_VRF };
    switch.set_router_interface(0, svi).unwrap();
    switch.set_router_interface(1, routed).unwrap();

    for (prefix, target) in [
        ("10.0.10.1/32", RouteTarget::Local),
        ("10.0.10.0/24", RouteTarget::Connected(0)),
        ("10.0.1.0/32", RouteTarget::Local),
        ("10.0.1.0/31", RouteTarget::Connected(1)),
        ("192.0.2.1/32", RouteTarget::Local),
        ("203.0.113.0/24", RouteTarget::Drop),
        ("198.51.100.0/24", RouteTarget::Punt),
        ("2001:db8:10::1/128", RouteTarget::Local),
        ("2001:db8:10::/64", RouteTarget::Connected(0)),
        ("2001:db8:1::/127", RouteTarget::Connected(1)),
    ] {
        switch.set_route(net(prefix), target).unwrap();
    }
    let v4 = |a, b, c, d| IpAddr::V4(Ipv4Addr::new(a, b, c, d));
    let v6 = |last| IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, last));
    switch.set_next_hop(1, NextHop { rif: 1, ip: v4(10, 0, 1, 1) }).unwrap();
    switch.set_next_hop(2, NextHop { rif: 0, ip: v4(10, 0, 10, 50) }).unwrap();
    switch.set_next_hop(3, NextHop { rif: 1, ip: v6(1) }).unwrap();
    switch.set_next_hop_group(1, &[1, 2]).unwrap();
    // Routes through next hops, once these exist.
    switch.set_route(net("192.0.2.0/24"), RouteTarget::NextHop(1)).unwrap();
    switch.set_route(net("0.0.0.0/0"), RouteTarget::Group(1)).unwrap();
    switch.set_route(net("::/0"), RouteTarget::NextHop(3)).unwrap();
    switch.set_neighbor(1, v4(10, 0, 1, 1), mac(0x11)).unwrap();
    switch.set_neighbor(0, v4(10, 0, 10, 50), mac(0x50)).unwrap();
    switch.set_neighbor(1, v6(1), mac(0x11)).unwrap();

    switch.set_vtep(Some(VtepConfig { source_ip: Ipv4Addr::new(192, 0, 2, 1), ..VtepConfig::default() }));
    switch.map_vlan_to_vni(20, 5020).unwrap();
    switch.add_flood_vtep(5020, Ipv4Addr::new(192, 0, 2, 2)).unwrap();
    switch
        .set_fdb_entry(20, mac(0x77), FdbDest::Tunnel(Ipv4Addr::new(192, 0, 2, 2)), FdbKind::Static, 0)
        .unwrap();
    switch.set_fdb_entry(10, mac(0x50), FdbDest::Port(1), FdbKind::Static, 0).unwrap();
    switch
}

fuzz_target!(|data: &[u8]| {
    let mut switch = build_switch();
    let mut out = Output::new();
    let mut now = 1_000 * SECOND;
    for chunk in split(data, SEPARATOR) {
        let Some((&control, frame)) = chunk.split_first() else {
            continue;
        };
        let ingress = u16::from(control % 6);
        now += u64::from(control >> 3) * SECOND;
        out.clear();
        switch.poll(now, &mut out);
        out.clear();
        let spoofed = spoofed(frame);
        let before = switch.drop_counters().total();
        let disposition = switch.process(now, ingress, frame, &mut out);
        if let Disposition::Dropped(reason) = disposition {
            assert!(switch.drop_counters().get(reason) > 0, "{reason:?} not counted");
            assert!(switch.drop_counters().total() > before, "drop not counted");
        }
        for emitted in out.iter() {
            if let Egress::Port(port) = emitted.to {
                assert!(port < 5, "sent out of a port that does not exist");
                let l2 = L2Header::parse(emitted.frame).expect("sent an unparseable frame");
                if l2.src_addr == ROUTER_MAC && !spoofed.mac {
                    let payload = &emitted.frame[l2.payload_offset..];
                    check_built_frame(l2.ethertype, payload, !spoofed.ip);
                }
            }
        }
        let _ = switch.drain_events().count();
    }
});

/// What in `frame`, or in the inner frame of a VXLAN packet, claims to be
/// the switch: its MAC as source, or one of its addresses as IP source.
#[derive(Default, Clone, Copy)]
struct Spoofed {
    mac: bool,
    ip: bool,
}

fn spoofed(frame: &[u8]) -> Spoofed {
    let Ok(l2) = L2Header::parse(frame) else {
        return Spoofed::default();
    };
    let payload = &frame[l2.payload_offset..];
    let mut found = Spoofed { mac: l2.src_addr == ROUTER_MAC, ip: false };
    match l2.ethertype {
        EtherType::Ipv4 => {
            if let Ok(packet) = Ipv4Packet::new_checked(payload) {
                found.ip = LOCAL_V4.contains(&packet.src_addr());
                let inner = (packet.protocol() == IpProtocol::Udp)
                    .then(|| UdpPacket::new_checked(packet.payload()).ok())
                    .flatten()
                    .and_then(|udp| udp.payload().get(8..).map(spoofed));
                if let Some(inner) = inner {
                    found.mac |= inner.mac;
                    found.ip |= inner.ip;
                }
            }
        }
        EtherType::Ipv6 => {
            found.ip = Ipv6Packet::new_checked(payload).is_ok_and(|packet| packet.src_addr() == LOCAL_V6);
        }
        _ => {}
    }
    found
}

/// A frame sent from the router MAC: routed or originated by the switch.
fn check_built_frame(ethertype: EtherType, payload: &[u8], judge_originated: bool) {
    match ethertype {
        EtherType::Arp => {
            let packet = ArpPacket::new_checked(payload).expect("built ARP truncated");
            ArpRepr::parse(&packet).expect("built ARP unparseable");
        }
        EtherType::Ipv4 => {
            let packet = Ipv4Packet::new_checked(payload).expect("built IPv4 truncated");
            assert!(packet.verify_checksum(), "built IPv4 header checksum wrong");
            let pseudo = PseudoHeader::V4 { src_addr: packet.src_addr(), dst_addr: packet.dst_addr() };
            if !judge_originated || packet.is_fragment() || !LOCAL_V4.contains(&packet.src_addr()) {
                return;
            }
            match packet.protocol() {
                IpProtocol::Udp => {
                    let udp = UdpPacket::new_checked(packet.payload()).expect("built UDP truncated");
                    assert!(udp.verify_checksum(&pseudo), "built UDP/IPv4 checksum wrong");
                }
                IpProtocol::Icmp => {
                    let icmp = Icmpv4Packet::new_checked(packet.payload()).expect("built ICMP truncated");
                    assert!(icmp.verify_checksum(), "built ICMP checksum wrong");
                }
                _ => {}
            }
        }
        EtherType::Ipv6 => {
            let packet = Ipv6Packet::new_checked(payload).expect("built IPv6 truncated");
            if !judge_originated || packet.src_addr() != LOCAL_V6 {
                return;
            }
            let Ok(upper) = walk_extension_headers(packet.next_header(), packet.payload()) else {
                return;
            };
            if upper.fragment.is_some() {
                return;
            }
            let message = &packet.payload()[upper.offset..];
            let (src_addr, dst_addr) = (packet.src_addr(), packet.dst_addr());
            match upper.protocol {
                IpProtocol::Udp => {
                    let udp = UdpPacket::new_checked(message).expect("built UDP truncated");
                    let pseudo = PseudoHeader::V6 { src_addr, dst_addr };
                    assert!(udp.verify_checksum(&pseudo), "built UDP/IPv6 checksum wrong");
                }
                IpProtocol::Icmpv6 => {
                    let icmp = Icmpv6Packet::new_checked(message).expect("built ICMPv6 truncated");
                    assert!(icmp.verify_checksum(src_addr, dst_addr), "built ICMPv6 checksum wrong");
                }
                _ => {}
            }
        }
        _ => {}
    }
}

fn split<'a>(data: &'a [u8], separator: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut rest = Some(data);
    std::iter::from_fn(move || {
        let current = rest?;
        match current.windows(separator.len()).position(|window| window == separator) {
            Some(at) => {
                rest = Some(&current[at + separator.len()..]);
                Some(&current[..at])
            }
            None => {
                rest = None;
                Some(current)
            }
        }
    })
}
