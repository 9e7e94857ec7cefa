//! VXLAN through the shim (RFC 7348): a tunnel, its VLAN<->VNI map, remote
//! VTEPs as tunnel endpoints behind bridge ports, head-end replication,
//! remote MACs, decapsulation with learning, and split horizon.

mod common;

use std::net::{IpAddr, Ipv4Addr};

use common::*;
use dataplane::pipeline::{Disposition, DropReason, Egress};
use dataplane::wire::{EtherType, EthernetAddress, UdpPacket};
use sai_shim::*;

const ROUTER_MAC: EthernetAddress = EthernetAddress([0x02, 0xaa, 0, 0, 0, 0x01]);
const SPINE_MAC: EthernetAddress = EthernetAddress([0x02, 0x5b, 0, 0, 0, 0x01]);
const LOCAL_VTEP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const VTEP2: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const VTEP3: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 3);
const VNI: u32 = 1000;

/// eth1 and eth2: access ports of VLAN 10, stretched over VNI 1000 to the
/// VTEPs 10.0.0.2 and 10.0.0.3, both reached through the spine on the routed
/// underlay port eth9.
struct Overlay {
    lab: Lab,
    vlan: ObjectId,
    access: [ObjectId; 2],
    access_bridge_ports: [ObjectId; 2],
    underlay: ObjectId,
    remote_bridge_ports: [ObjectId; 2],
    flood_members: [ObjectId; 2],
}

fn net(s: &str) -> ipnetwork::IpNetwork {
    s.parse().unwrap()
}

fn overlay() -> Overlay {
    let mut lab = Lab::with(Default::default(), &[SwitchAttr::SrcMacAddress(ROUTER_MAC)]);
    let vlan = lab.vlan(10);
    let (p1, b1) = lab.access_port("eth1", vlan, 10);
    let (p2, b2) = lab.access_port("eth2", vlan, 10);
    // The underlay: a routed port toward the spine, with a route to the VTEPs.
    let underlay = lab.port("eth9");
    let vr = lab.sai.default_virtual_router();
    let rif = lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vr),
            RouterInterfaceAttr::Type(RouterInterfaceType::Port(underlay)),
        ])
        .unwrap();
    let cpu = lab.sai.cpu_port();
    for (prefix, next_hop) in [("10.9.0.1/32", cpu), ("10.9.0.0/30", rif), ("10.0.0.1/32", cpu)] {
        let key = RouteEntryKey { virtual_router: vr, destination: net(prefix) };
        lab.sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(next_hop))]).unwrap();
    }
    let spine: IpAddr = Ipv4Addr::new(10, 9, 0, 2).into();
    lab.sai
        .create_neighbor_entry(
            NeighborEntryKey { router_interface: rif, ip: spine },
            &[NeighborEntryAttr::DstMacAddress(SPINE_MAC)],
        )
        .unwrap();
    let spine_nh = lab.sai.create_next_hop(&[NextHopAttr::Ip(spine), NextHopAttr::RouterInterfaceId(rif)]).unwrap();
    let key = RouteEntryKey { virtual_router: vr, destination: net("10.0.0.0/24") };
    lab.sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(spine_nh))]).unwrap();
    // The overlay.
    let tunnel = lab.sai.create_tunnel(&[TunnelAttr::EncapSrcIp(LOCAL_VTEP)]).unwrap();
    lab.sai
        .create_tunnel_map_entry(&[
            TunnelMapEntryAttr::TunnelId(tunnel),
            TunnelMapEntryAttr::VlanId(vlan),
            TunnelMapEntryAttr::Vni(VNI),
        ])
        .unwrap();
    let mut remote_bridge_ports = Vec::new();
    let mut flood_members = Vec::new();
    for remote in [VTEP2, VTEP3] {
        let endpoint = lab
            .sai
            .create_tunnel_endpoint(&[TunnelEndpointAttr::TunnelId(tunnel), TunnelEndpointAttr::RemoteIp(remote)])
            .unwrap();
        let bridge_port =
            lab.sai.create_bridge_port(&[BridgePortAttr::Type(BridgePortType::Tunnel(endpoint))]).unwrap();
        flood_members.push(lab.member(vlan, bridge_port, false));
        remote_bridge_ports.push(bridge_port);
    }
    Overlay {
        lab,
        vlan,
        access: [p1, p2],
        access_bridge_ports: [b1, b2],
        underlay,
        remote_bridge_ports: remote_bridge_ports.try_into().unwrap(),
        flood_members: flood_members.try_into().unwrap(),
    }
}

/// The outer UDP source port of an encapsulated frame.
fn source_port(frame: &[u8]) -> u16 {
    UdpPacket::new_checked(&frame[14 + 20..]).unwrap().src_port()
}

/// The outer IPv4 destination of an encapsulated frame.
fn outer_dst(frame: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(frame[30], frame[31], frame[32], frame[33])
}

fn inner_udp(src_port: u16) -> Vec<u8> {
    let ip = udp4(Ipv4Addr::new(192, 168, 10, 11), Ipv4Addr::new(192, 168, 10, 99), src_port, 80, 64, b"data");
    eth(mac(0x99), mac(0x11), None, EtherType::Ipv4, &ip)
}

#[test]
fn flooding_replicates_to_local_ports_and_every_remote_vtep() {
    let mut o = overlay();
    let (i1, i2, i9) = (o.lab.index(o.access[0]), o.lab.index(o.access[1]), o.lab.index(o.underlay));
    let inner = l2(EthernetAddress::BROADCAST, mac(0x11), None);
    let result = o.lab.inject(o.access[0], &inner);
    assert_eq!(result.disposition, Disposition::Flooded);
    assert!(result.on_port(i1).is_empty(), "never back out of the ingress port");
    assert_eq!(result.on_port(i2), vec![inner.as_slice()]);
    let encapsulated = result.on_port(i9);
    assert_eq!(encapsulated.len(), 2, "{result:?}");
    let port = source_port(encapsulated[0]);
    assert!(port >= 49152, "RFC 7348: source port in the dynamic range, got {port}");
    let mut remotes = Vec::new();
    for &frame in &encapsulated {
        let remote = outer_dst(frame);
        remotes.push(remote);
        assert_eq!(
            frame,
            with_ident_of(vxlan(SPINE_MAC, ROUTER_MAC, LOCAL_VTEP, remote, port, 64, VNI, &inner), frame)
        );
    }
    remotes.sort();
    assert_eq!(remotes, vec![VTEP2, VTEP3]);
    assert_ne!(encapsulated[0][18..20], encapsulated[1][18..20], "each copy has its own IPv4 ID");
    let stats = o.lab.sai.get_port_stats(o.underlay).unwrap();
    assert_eq!(stats.out_ucast_pkts, 2);
}

#[test]
fn the_outer_source_port_follows_the_inner_flow() {
    let mut o = overlay();
    let i9 = o.lab.index(o.underlay);
    let mut ports = Vec::new();
    for flow in 0..8u16 {
        let frame = inner_udp(20000 + flow);
        let first = o.lab.inject(o.access[0], &frame);
        let port = source_port(first.on_port(i9)[0]);
        // The same flow always gets the same port...
        for _ in 0..3 {
            let again = o.lab.inject(o.access[0], &frame);
            assert!(again.on_port(i9).iter().all(|f| source_port(f) == port));
        }
        ports.push(port);
    }
    // ...and different flows spread over different ports.
    ports.sort();
    ports.dedup();
    assert!(ports.len() >= 6, "8 flows got ports {ports:?}");
}

#[test]
fn remote_macs_are_unicast_to_their_vtep() {
    let mut o = overlay();
    let i9 = o.lab.index(o.underlay);
    let key = FdbEntryKey { vlan: o.vlan, mac: mac(0x99) };
    o.lab
        .sai
        .create_fdb_entry(
            key,
            &[FdbEntryAttr::Type(FdbEntryType::Static), FdbEntryAttr::BridgePortId(o.remote_bridge_ports[1])],
        )
        .unwrap();
    let inner = inner_udp(1234);
    let result = o.lab.inject(o.access[0], &inner);
    assert_eq!(result.disposition, Disposition::Forwarded);
    assert_eq!(result.frames.len(), 1, "{result:?}");
    let frame = result.on_port(i9)[0];
    let expected = vxlan(SPINE_MAC, ROUTER_MAC, LOCAL_VTEP, VTEP3, source_port(frame), 64, VNI, &inner);
    assert_eq!(frame, with_ident_of(expected, frame));
    // The FDB shows it behind the remote VTEP's bridge port.
    assert!(o.lab.sai.fdb_table().contains(&(
        key,
        FdbEntry { entry_type: FdbEntryType::Static, bridge_port: o.remote_bridge_ports[1], allow_mac_move: false }
    )));
}

#[test]
fn decapsulation_learns_the_remote_mac_and_bridges_the_inner_frame() {
    let mut o = overlay();
    let (i1, i9) = (o.lab.index(o.access[0]), o.lab.index(o.underlay));
    // H1 is known on eth1.
    o.lab.inject(o.access[0], &l2(EthernetAddress::BROADCAST, mac(0x11), None));
    o.lab.sai.drain_notifications();
    let inner = l2(mac(0x11), mac(0x42), None);
    let packet = vxlan(ROUTER_MAC, SPINE_MAC, VTEP2, LOCAL_VTEP, 50000, 63, VNI, &inner);
    let result = o.lab.inject(o.underlay, &packet);
    assert_eq!(result.disposition, Disposition::Forwarded);
    assert_eq!(result.frames, vec![(Egress::Port(i1), inner.clone())]);
    assert_eq!(
        o.lab.sai.drain_notifications(),
        vec![Notification::Fdb {
            event: FdbEvent::Learned,
            entry: FdbEntryKey { vlan: o.vlan, mac: mac(0x42) },
            bridge_port: Some(o.remote_bridge_ports[0]),
        }]
    );
    // The answer goes back through the tunnel, to that VTEP only.
    let answer = l2(mac(0x42), mac(0x11), None);
    let result = o.lab.inject(o.access[0], &answer);
    assert_eq!(result.frames.len(), 1);
    let frame = result.on_port(i9)[0];
    let expected = vxlan(SPINE_MAC, ROUTER_MAC, LOCAL_VTEP, VTEP2, source_port(frame), 64, VNI, &answer);
    assert_eq!(frame, with_ident_of(expected, frame));
    // The host moves behind another VTEP: a move.
    let packet = vxlan(ROUTER_MAC, SPINE_MAC, VTEP3, LOCAL_VTEP, 50000, 63, VNI, &inner);
    o.lab.inject(o.underlay, &packet);
    assert_eq!(
        o.lab.sai.drain_notifications(),
        vec![Notification::Fdb {
            event: FdbEvent::Moved { from: Some(o.remote_bridge_ports[0]) },
            entry: FdbEntryKey { vlan: o.vlan, mac: mac(0x42) },
            bridge_port: Some(o.remote_bridge_ports[1]),
        }]
    );
}

#[test]
fn split_horizon_never_floods_overlay_traffic_back_into_the_overlay() {
    let mut o = overlay();
    let (i1, i2) = (o.lab.index(o.access[0]), o.lab.index(o.access[1]));
    let inner = l2(EthernetAddress::BROADCAST, mac(0x42), None);
    let packet = vxlan(ROUTER_MAC, SPINE_MAC, VTEP2, LOCAL_VTEP, 50000, 63, VNI, &inner);
    let result = o.lab.inject(o.underlay, &packet);
    assert_eq!(result.disposition, Disposition::Flooded);
    assert_eq!(by_port(&result.frames), vec![(i1, inner.clone()), (i2, inner)]);
    // Unknown unicast from the overlay: the same.
    let inner = l2(mac(0x55), mac(0x42), None);
    let packet = vxlan(ROUTER_MAC, SPINE_MAC, VTEP2, LOCAL_VTEP, 50000, 63, VNI, &inner);
    let result = o.lab.inject(o.underlay, &packet);
    assert_eq!(by_port(&result.frames), vec![(i1, inner.clone()), (i2, inner)]);
}

#[test]
fn unknown_vni_is_dropped_and_counted() {
    let mut o = overlay();
    let packet = vxlan(ROUTER_MAC, SPINE_MAC, VTEP2, LOCAL_VTEP, 50000, 63, 4242, &l2(mac(1), mac(2), None));
    let result = o.lab.inject(o.underlay, &packet);
    assert_eq!(result.disposition, Disposition::Dropped(DropReason::VxlanUnknownVni));
    assert!(result.frames.is_empty());
    assert_eq!(o.lab.sai.backend().drop_counters()[DropReason::VxlanUnknownVni], 1);
    assert_eq!(o.lab.sai.get_port_stats(o.underlay).unwrap().in_discards, 1);
}

#[test]
fn flood_list_follows_the_vlan_members() {
    let mut o = overlay();
    let i9 = o.lab.index(o.underlay);
    o.lab.sai.remove(o.flood_members[1]).unwrap();
    let result = o.lab.inject(o.access[0], &l2(EthernetAddress::BROADCAST, mac(0x11), None));
    let encapsulated = result.on_port(i9);
    assert_eq!(encapsulated.iter().map(|f| outer_dst(f)).collect::<Vec<_>>(), vec![VTEP2]);
    // The map entry cannot go while a remote VTEP floods the VLAN.
    let map = o.lab.sai.store().objects_of(ObjectType::TunnelMapEntry).map(|(id, _)| id).next().unwrap();
    assert!(matches!(o.lab.sai.remove(map), Err(SaiError::ObjectInUse { .. })));
    o.lab.sai.remove(o.flood_members[0]).unwrap();
    let result = o.lab.inject(o.access[0], &l2(EthernetAddress::BROADCAST, mac(0x11), None));
    assert!(result.on_port(i9).is_empty());
    o.lab.sai.remove(map).unwrap();
    let _ = o.access_bridge_ports;
}

#[test]
fn underlay_ecmp_spreads_tunnelled_flows_over_both_spines() {
    let mut o = overlay();
    // A second spine on eth8, and the route to the VTEPs over both.
    let spine2_mac = EthernetAddress([0x02, 0x5b, 0, 0, 0, 0x02]);
    let eth8 = o.lab.port("eth8");
    let vr = o.lab.sai.default_virtual_router();
    let rif8 = o
        .lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vr),
            RouterInterfaceAttr::Type(RouterInterfaceType::Port(eth8)),
        ])
        .unwrap();
    let spine2: IpAddr = Ipv4Addr::new(10, 8, 0, 2).into();
    o.lab
        .sai
        .create_neighbor_entry(
            NeighborEntryKey { router_interface: rif8, ip: spine2 },
            &[NeighborEntryAttr::DstMacAddress(spine2_mac)],
        )
        .unwrap();
    let nh2 = o.lab.sai.create_next_hop(&[NextHopAttr::Ip(spine2), NextHopAttr::RouterInterfaceId(rif8)]).unwrap();
    let key = RouteEntryKey { virtual_router: vr, destination: net("10.0.0.0/24") };
    let nh1 = o.lab.sai.get_route_entry(key).unwrap().next_hop.unwrap();
    let group = o.lab.sai.create_next_hop_group().unwrap();
    for nh in [nh1, nh2] {
        o.lab
            .sai
            .create_next_hop_group_member(&[
                NextHopGroupMemberAttr::NextHopGroupId(group),
                NextHopGroupMemberAttr::NextHopId(nh),
            ])
            .unwrap();
    }
    o.lab.sai.set_route_entry_attribute(key, RouteEntryAttr::NextHopId(Some(group))).unwrap();
    // Only VTEP2 floods, so each inner flow makes one tunnelled packet.
    o.lab.sai.remove(o.flood_members[1]).unwrap();
    let (i8, i9) = (o.lab.index(eth8), o.lab.index(o.underlay));
    let mut per_spine = [0; 2];
    for flow in 0..32u16 {
        let inner = inner_udp(30000 + flow);
        let result = o.lab.inject(o.access[0], &inner);
        let (spine, frames) =
            if result.on_port(i8).is_empty() { (0, result.on_port(i9)) } else { (1, result.on_port(i8)) };
        assert_eq!(frames.len(), 1, "{result:?}");
        let spine_mac = if spine == 0 { SPINE_MAC } else { spine2_mac };
        let frame = frames[0];
        assert_eq!(
            frame,
            with_ident_of(vxlan(spine_mac, ROUTER_MAC, LOCAL_VTEP, VTEP2, source_port(frame), 64, VNI, &inner), frame)
        );
        per_spine[spine] += 1;
    }
    assert!(per_spine[0] >= 8 && per_spine[1] >= 8, "32 flows over the spines: {per_spine:?}");
}

/// RFC 6040 section 4.2 (normal mode): congestion the underlay marked on the
/// outer header (CE) reaches the inner packet when its transport is
/// ECN-capable, and such a packet around a not-ECN-capable one is dropped;
/// an outer ECT(1) turns an inner ECT(0) into ECT(1); nothing else changes.
#[test]
fn decapsulation_propagates_congestion_marks_per_rfc_6040() {
    use dataplane::wire::{Ecn, Ipv4Packet, Ipv6Packet};
    let mut o = overlay();
    let i1 = o.lab.index(o.access[0]);
    o.lab.inject(o.access[0], &l2(EthernetAddress::BROADCAST, mac(0x11), None));
    let inner_v4 = |ecn: Ecn| {
        let mut ip = udp4(Ipv4Addr::new(192, 168, 10, 42), Ipv4Addr::new(192, 168, 10, 11), 7, 80, 64, b"ecn");
        let mut packet = Ipv4Packet::new_unchecked(&mut ip[..]);
        packet.set_ecn(ecn);
        packet.fill_checksum();
        eth(mac(0x11), mac(0x42), None, EtherType::Ipv4, &ip)
    };
    let tunnelled = |outer: Ecn, inner: &[u8]| {
        let mut frame = vxlan(ROUTER_MAC, SPINE_MAC, VTEP2, LOCAL_VTEP, 50000, 63, VNI, inner);
        let mut packet = Ipv4Packet::new_unchecked(&mut frame[14..]);
        packet.set_ecn(outer);
        packet.fill_checksum();
        frame
    };
    use Ecn::*;
    for (outer, inner, expected) in [
        (NotEct, Ect0, Some(Ect0)),
        (Ect0, Ect1, Some(Ect1)),
        (Ect0, NotEct, Some(NotEct)),
        (Ect1, NotEct, Some(NotEct)),
        (Ect1, Ect0, Some(Ect1)),
        (Ce, Ect0, Some(Ce)),
        (Ce, Ect1, Some(Ce)),
        (Ce, Ce, Some(Ce)),
        (NotEct, Ce, Some(Ce)),
        (Ce, NotEct, None),
    ] {
        let result = o.lab.inject(o.underlay, &tunnelled(outer, &inner_v4(inner)));
        match expected {
            // The expected frame is built from scratch (full checksum), so
            // the pipeline's incremental checksum update is checked too.
            Some(ecn) => {
                assert_eq!(result.disposition, Disposition::Forwarded, "{outer:?} {inner:?}");
                assert_eq!(result.frames, vec![(Egress::Port(i1), inner_v4(ecn))], "{outer:?} {inner:?}");
            }
            None => {
                assert_eq!(result.disposition, Disposition::Dropped(DropReason::EcnCeOnNotEct));
                assert!(result.frames.is_empty());
            }
        }
    }
    assert_eq!(o.lab.sai.backend().drop_counters()[DropReason::EcnCeOnNotEct], 1);

    // An IPv6 inner packet: the traffic class carries the mark.
    let inner_v6 = |ecn: Ecn| {
        let (src, dst) = ("2001:db8:10::42".parse().unwrap(), "2001:db8:10::11".parse().unwrap());
        let mut ip = udp6(src, dst, 7, 80, 64, b"ecn");
        Ipv6Packet::new_unchecked(&mut ip[..]).set_ecn(ecn);
        eth(mac(0x11), mac(0x42), None, EtherType::Ipv6, &ip)
    };
    let result = o.lab.inject(o.underlay, &tunnelled(Ce, &inner_v6(Ect0)));
    assert_eq!(result.frames, vec![(Egress::Port(i1), inner_v6(Ce))]);
}
