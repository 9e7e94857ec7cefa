//! Addresses a router must refuse to learn from or forward for: its own
//! addresses and MAC claimed by others, senders no host can have, directed
//! broadcasts, and martian sources. Each test also checks the legitimate
//! case next to it, so that refusing everything would not pass.

mod common;

use std::net::Ipv4Addr;

use common::*;
use dataplane::pipeline::{Disposition, DropReason, Egress, PuntReason};
use dataplane::wire::arp::Operation;
use dataplane::wire::{EtherType, EthernetAddress};
use sai_shim::*;

const ROUTER_MAC: EthernetAddress = EthernetAddress([0x02, 0xaa, 0, 0, 0, 0x01]);
const SVI_V4: Ipv4Addr = Ipv4Addr::new(192, 168, 10, 1);

/// VLAN 10 on eth1 and eth2 with an SVI 192.168.10.1/24; eth3 a routed port
/// 10.1.0.1/30.
fn svi() -> (Lab, [ObjectId; 3], ObjectId) {
    let mut lab = Lab::with(Default::default(), &[SwitchAttr::SrcMacAddress(ROUTER_MAC)]);
    let vlan = lab.vlan(10);
    let (p1, _) = lab.access_port("eth1", vlan, 10);
    let (p2, _) = lab.access_port("eth2", vlan, 10);
    let p3 = lab.port("eth3");
    let vr = lab.sai.default_virtual_router();
    let svi = lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vr),
            RouterInterfaceAttr::Type(RouterInterfaceType::Vlan(vlan)),
        ])
        .unwrap();
    let rif3 = lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vr),
            RouterInterfaceAttr::Type(RouterInterfaceType::Port(p3)),
        ])
        .unwrap();
    let cpu = lab.sai.cpu_port();
    for (prefix, target) in
        [("192.168.10.1/32", cpu), ("192.168.10.0/24", svi), ("10.1.0.1/32", cpu), ("10.1.0.0/30", rif3)]
    {
        let key = RouteEntryKey { virtual_router: vr, destination: prefix.parse().unwrap() };
        lab.sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(target))]).unwrap();
    }
    (lab, [p1, p2, p3], svi)
}

fn resolved(notifications: &[Notification]) -> Vec<std::net::IpAddr> {
    notifications
        .iter()
        .filter_map(|n| match n {
            Notification::NeighborResolved { ip, .. } => Some(*ip),
            _ => None,
        })
        .collect()
}

/// A host that claims the switch's own address (an address conflict, or an
/// attack) must not become a neighbour entry for that address: the switch
/// would advertise and use a poisoned binding for itself (RFC 5227 section
/// 2.4 treats it as a conflict to defend, never as a binding to learn).
#[test]
fn arp_claiming_an_own_address_is_not_learned() {
    let (mut lab, [p1, p2, _], _) = svi();
    let conflict = arp(Operation::Request, mac(0x44), SVI_V4, EthernetAddress::ZERO, SVI_V4);
    let frame = eth(EthernetAddress::BROADCAST, mac(0x44), None, EtherType::Arp, &conflict);
    let result = lab.inject(p2, &frame);
    assert_eq!(resolved(&lab.sai.drain_notifications()), Vec::<std::net::IpAddr>::new());
    assert!(lab.sai.neighbor_table().iter().all(|(key, _)| key.ip != std::net::IpAddr::V4(SVI_V4)));
    // Counted as a duplicate address, and the host gets the ARP to log it;
    // the pipeline does not answer it.
    assert_eq!(lab.sai.backend().pipeline().address_conflicts(), 1);
    let punted = result.punted();
    assert_eq!(punted.len(), 1, "{result:?}");
    assert!(matches!(punted[0].0, Egress::Host { reason: PuntReason::Arp, .. }));
    // Out of the ports: only the VLAN's flood of the broadcast itself.
    assert_eq!(result.ports(), vec![lab.index(p1)], "{result:?}");
    assert_eq!(result.on_port(lab.index(p1)), vec![frame.as_slice()]);

    // A neighbour asking for our address from its own is learned as before.
    let request = arp(Operation::Request, mac(0x45), Ipv4Addr::new(192, 168, 10, 45), EthernetAddress::ZERO, SVI_V4);
    lab.inject(p2, &eth(EthernetAddress::BROADCAST, mac(0x45), None, EtherType::Arp, &request));
    assert_eq!(resolved(&lab.sai.drain_notifications()), vec![std::net::IpAddr::V4(Ipv4Addr::new(192, 168, 10, 45))]);
    assert_eq!(lab.sai.backend().pipeline().address_conflicts(), 1);
}

/// A sender address that is the subnet's broadcast address, or outside every
/// subnet of the interface, is not a neighbour (Linux's arp_process refuses
/// such senders too).
#[test]
fn arp_from_bogus_sender_addresses_is_not_learned() {
    let (mut lab, [_, p2, _], _) = svi();
    for sender in [
        Ipv4Addr::new(192, 168, 10, 255),
        Ipv4Addr::new(172, 16, 0, 5),
        Ipv4Addr::BROADCAST,
        Ipv4Addr::new(224, 0, 0, 5),
        Ipv4Addr::new(127, 0, 0, 1),
    ] {
        let request = arp(Operation::Request, mac(0x55), sender, EthernetAddress::ZERO, SVI_V4);
        lab.inject(p2, &eth(EthernetAddress::BROADCAST, mac(0x55), None, EtherType::Arp, &request));
        // A reply (to a request never sent) teaches nothing either.
        let reply = arp(Operation::Reply, mac(0x55), sender, ROUTER_MAC, SVI_V4);
        lab.inject(p2, &eth(ROUTER_MAC, mac(0x55), None, EtherType::Arp, &reply));
    }
    assert_eq!(resolved(&lab.sai.drain_notifications()), Vec::<std::net::IpAddr>::new());
    assert!(lab.sai.neighbor_table().is_empty(), "{:?}", lab.sai.neighbor_table());
    // Group, broadcast and loopback senders are martians: the replies sent
    // to the router are dropped and counted (the broadcast requests were
    // flooded in the VLAN, so the router only declined them).
    assert_eq!(lab.sai.backend().drop_counters()[DropReason::MartianSource], 4);

    let on_link = Ipv4Addr::new(192, 168, 10, 55);
    let request = arp(Operation::Request, mac(0x55), on_link, EthernetAddress::ZERO, SVI_V4);
    lab.inject(p2, &eth(EthernetAddress::BROADCAST, mac(0x55), None, EtherType::Arp, &request));
    assert_eq!(resolved(&lab.sai.drain_notifications()), vec![std::net::IpAddr::V4(on_link)]);
}

/// The same for neighbour discovery: a solicitation from an address outside
/// the interface's prefixes creates no entry; one from a link-local or
/// on-prefix address does.
#[test]
fn neighbor_solicitation_from_an_off_link_source_is_not_learned() {
    use dataplane::wire::{Icmpv6Repr, IpProtocol};
    use std::net::{IpAddr, Ipv6Addr};
    let (mut lab, [_, p2, _], svi) = svi();
    let vr = lab.sai.default_virtual_router();
    let cpu = lab.sai.cpu_port();
    for (prefix, target) in [("2001:db8:10::1/128", cpu), ("2001:db8:10::/64", svi)] {
        let key = RouteEntryKey { virtual_router: vr, destination: prefix.parse().unwrap() };
        lab.sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(target))]).unwrap();
    }
    let ours: Ipv6Addr = "2001:db8:10::1".parse().unwrap();
    let group: Ipv6Addr = "ff02::1:ff00:1".parse().unwrap();
    let group_mac = EthernetAddress([0x33, 0x33, 0xff, 0, 0, 1]);
    for src in ["2001:db8:99::7", "2001:db8:10::7"] {
        let src: Ipv6Addr = src.parse().unwrap();
        let solicit = Icmpv6Repr::NeighborSolicit { target_addr: ours, source_lladdr: Some(mac(0x66)) };
        let packet = ipv6(src, group, IpProtocol::Icmpv6, 255, &icmp6(&solicit, src, group));
        lab.inject(p2, &eth(group_mac, mac(0x66), None, EtherType::Ipv6, &packet));
    }
    assert_eq!(resolved(&lab.sai.drain_notifications()), vec![IpAddr::V6("2001:db8:10::7".parse().unwrap())]);
}

/// A packet to a connected subnet's broadcast address is a directed
/// broadcast: not forwarded by default (RFC 2644), and certainly not a
/// neighbour to resolve with ARP.
#[test]
fn directed_broadcast_is_not_resolved_by_arp() {
    let (mut lab, [_, _, p3], _) = svi();
    let packet = udp4(Ipv4Addr::new(10, 1, 0, 2), Ipv4Addr::new(192, 168, 10, 255), 1, 2, 64, b"b");
    let result = lab.inject(p3, &eth(ROUTER_MAC, mac(0x33), None, EtherType::Ipv4, &packet));
    let arp_requests = result.frames.iter().filter(|(_, f)| f[12..14] == [0x08, 0x06]).count();
    assert_eq!(arp_requests, 0, "{result:?}");
    assert_eq!(result.disposition, Disposition::Dropped(DropReason::DirectedBroadcast));
    assert_eq!(result.frames.len(), 0, "{result:?}");
    assert_eq!(lab.sai.backend().drop_counters()[DropReason::DirectedBroadcast], 1);
    assert!(lab.sai.neighbor_table().is_empty());

    // A host of the same subnet is resolved as usual.
    let packet = udp4(Ipv4Addr::new(10, 1, 0, 2), Ipv4Addr::new(192, 168, 10, 254), 1, 2, 64, b"u");
    let result = lab.inject(p3, &eth(ROUTER_MAC, mac(0x33), None, EtherType::Ipv4, &packet));
    assert_eq!(result.disposition, Disposition::Held);
    let arp_requests = result.frames.iter().filter(|(_, f)| f[12..14] == [0x08, 0x06]).count();
    assert_eq!(arp_requests, 2, "one out of each VLAN member: {result:?}");
}

/// A frame whose source is the router's own MAC comes from a loop or a
/// spoofer; learning it puts the router MAC behind a front-panel port.
#[test]
fn router_mac_is_never_learned_on_a_port() {
    let (mut lab, [p1, _, p3], _) = svi();
    let result = lab.inject(p1, &l2(EthernetAddress::BROADCAST, ROUTER_MAC, None));
    assert!(lab.sai.fdb_table().iter().all(|(key, _)| key.mac != ROUTER_MAC), "{:?}", lab.sai.fdb_table());
    assert_eq!(result.disposition, Disposition::Dropped(DropReason::RouterMacSource));
    assert_eq!(result.frames.len(), 0, "not flooded either: {result:?}");
    // On a routed port too.
    let packet = udp4(Ipv4Addr::new(10, 1, 0, 2), Ipv4Addr::new(192, 168, 10, 7), 1, 2, 64, b"m");
    let result = lab.inject(p3, &eth(ROUTER_MAC, ROUTER_MAC, None, EtherType::Ipv4, &packet));
    assert_eq!(result.disposition, Disposition::Dropped(DropReason::RouterMacSource));
    assert_eq!(lab.sai.backend().drop_counters()[DropReason::RouterMacSource], 2);
    let index = lab.index(p1);
    assert_eq!(lab.sai.backend().pipeline().port_counters(index).unwrap().drops[DropReason::RouterMacSource], 1);

    // Any other source is learned.
    lab.inject(p1, &l2(EthernetAddress::BROADCAST, mac(0x11), None));
    assert!(lab.sai.fdb_table().iter().any(|(key, _)| key.mac == mac(0x11)));
}

/// RFC 1812 section 5.3.7: a packet from outside whose source is one of the
/// switch's own addresses is a martian, neither routed nor given to the host.
#[test]
fn packets_from_outside_with_an_own_source_address_are_martians() {
    let (mut lab, [_, p2, p3], _) = svi();
    // Routed toward a connected host, and to the switch itself.
    for (src, dst) in [
        (Ipv4Addr::new(10, 1, 0, 1), Ipv4Addr::new(192, 168, 10, 7)),
        (SVI_V4, Ipv4Addr::new(192, 168, 10, 7)),
        (SVI_V4, Ipv4Addr::new(10, 1, 0, 1)),
        (Ipv4Addr::new(224, 0, 0, 9), SVI_V4),
        (Ipv4Addr::new(127, 0, 0, 1), SVI_V4),
    ] {
        let packet = udp4(src, dst, 1, 2, 64, b"x");
        let result = lab.inject(p3, &eth(ROUTER_MAC, mac(0x33), None, EtherType::Ipv4, &packet));
        assert_eq!(result.disposition, Disposition::Dropped(DropReason::MartianSource), "{src} -> {dst}");
        assert!(result.frames.is_empty(), "{result:?}");
    }
    // Through the SVI as well.
    let packet = udp4(SVI_V4, Ipv4Addr::new(10, 1, 0, 2), 1, 2, 64, b"x");
    let result = lab.inject(p2, &eth(ROUTER_MAC, mac(0x44), None, EtherType::Ipv4, &packet));
    assert_eq!(result.disposition, Disposition::Dropped(DropReason::MartianSource));
    assert_eq!(lab.sai.backend().drop_counters()[DropReason::MartianSource], 6);

    // A neighbour's own source goes through to the host (and would be routed).
    let packet = udp4(Ipv4Addr::new(10, 1, 0, 2), SVI_V4, 1, 2, 64, b"x");
    let result = lab.inject(p3, &eth(ROUTER_MAC, mac(0x33), None, EtherType::Ipv4, &packet));
    assert_eq!(result.disposition, Disposition::Punted);
}

/// The same for IPv6: an own address, a group or loopback as source.
#[test]
fn ipv6_packets_with_an_own_source_address_are_martians() {
    use std::net::Ipv6Addr;
    let (mut lab, [_, p2, p3], svi) = svi();
    let vr = lab.sai.default_virtual_router();
    let cpu = lab.sai.cpu_port();
    for (prefix, target) in [("2001:db8:10::1/128", cpu), ("2001:db8:10::/64", svi)] {
        let key = RouteEntryKey { virtual_router: vr, destination: prefix.parse().unwrap() };
        lab.sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(target))]).unwrap();
    }
    let ours: Ipv6Addr = "2001:db8:10::1".parse().unwrap();
    let host: Ipv6Addr = "2001:db8:10::7".parse().unwrap();
    for src in [ours, "ff02::1".parse().unwrap(), Ipv6Addr::LOCALHOST] {
        let packet = udp6(src, host, 1, 2, 64, b"x");
        let result = lab.inject(p3, &eth(ROUTER_MAC, mac(0x33), None, EtherType::Ipv6, &packet));
        assert_eq!(result.disposition, Disposition::Dropped(DropReason::MartianSource), "{src}");
    }
    let packet = udp6(host, ours, 1, 2, 64, b"x");
    let result = lab.inject(p2, &eth(ROUTER_MAC, mac(0x44), None, EtherType::Ipv6, &packet));
    assert_eq!(result.disposition, Disposition::Punted);
}
