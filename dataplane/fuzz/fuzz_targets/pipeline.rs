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
//! Checked besides "never panics": every drop is counted under its reason,
//! and every frame the switch sends out of a port has a parseable L2 header.

#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use dataplane::pipeline::{
    Disposition, Egress, FdbDest, FdbKind, NextHop, Output, PortConfig, RifKind, RouteTarget,
    RouterInterface, Switch, SwitchConfig, VtepConfig,
};
use dataplane::wire::{EthernetAddress, vlan::L2Header};
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

    let router_mac = mac(0xfe);
    let svi = RouterInterface { kind: RifKind::Vlan(10), mac: router_mac, mtu: 1500, admin_up: true };
    let routed = RouterInterface { kind: RifKind::Port(3), mac: router_mac, mtu: 9000, admin_up: true };
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
        let before = switch.drop_counters().total();
        let disposition = switch.process(now, ingress, frame, &mut out);
        if let Disposition::Dropped(reason) = disposition {
            assert!(switch.drop_counters().get(reason) > 0, "{reason:?} not counted");
            assert!(switch.drop_counters().total() > before, "drop not counted");
        }
        for emitted in out.iter() {
            if let Egress::Port(port) = emitted.to {
                assert!(port < 5, "sent out of a port that does not exist");
                assert!(L2Header::parse(emitted.frame).is_ok(), "sent an unparseable frame");
            }
        }
        let _ = switch.drain_events().count();
    }
});

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
