//! VXLAN encapsulation, decapsulation, flood lists and split horizon.

use std::net::{IpAddr, Ipv4Addr};

use super::l3::{H0, H1, H2, R0, R1, R2, arp, ipv6, l3_switch, net, udp_packet, v4, v6};
use super::*;
use crate::wire::arp::Operation;
use crate::wire::vxlan::{self, VXLAN_PORT};
use crate::wire::{
    Ecn, Icmpv6Packet, Icmpv6Repr, IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, UdpPacket, UdpRepr, VxlanPacket,
    VxlanRepr,
};

const VNI: Vni = 5000;

/// `l3_switch` plus a VTEP at 1.1.1.1, VLAN 100 on VNI 5000 flooding to
/// 2.2.2.2 (routed over the ECMP group) and 3.3.3.3 (via 10.0.1.2).
fn vtep_switch() -> Switch {
    let mut switch = l3_switch();
    switch.set_route("1.1.1.1/32".parse().unwrap(), RouteTarget::Local).unwrap();
    switch.set_route("2.2.2.0/24".parse().unwrap(), RouteTarget::Group(1)).unwrap();
    switch.set_route("3.3.3.3/32".parse().unwrap(), RouteTarget::NextHop(2)).unwrap();
    switch.set_neighbor(0, IpAddr::V4(v4("10.0.0.2")), H0).unwrap();
    switch.set_neighbor(1, IpAddr::V4(v4("10.0.1.2")), H1).unwrap();
    switch.set_vtep(Some(VtepConfig { source_ip: v4("1.1.1.1"), udp_port: VXLAN_PORT }));
    switch.map_vlan_to_vni(100, VNI).unwrap();
    switch.add_flood_vtep(VNI, v4("2.2.2.2")).unwrap();
    switch.add_flood_vtep(VNI, v4("3.3.3.3")).unwrap();
    switch
}

/// The VXLAN packet (outer IPv4 on) carrying `inner`.
fn vxlan_ip(src: Ipv4Addr, dst: Ipv4Addr, src_port: u16, vni: Vni, inner: &[u8]) -> Vec<u8> {
    vxlan_ip_with_id(src, dst, src_port, 0, vni, inner)
}

fn vxlan_ip_with_id(src: Ipv4Addr, dst: Ipv4Addr, src_port: u16, ident: u16, vni: Vni, inner: &[u8]) -> Vec<u8> {
    let udp = UdpRepr { src_port, dst_port: VXLAN_PORT, payload_len: vxlan::HEADER_LEN + inner.len() };
    let ip = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        protocol: IpProtocol::Udp,
        payload_len: udp.buffer_len(),
        ttl: 64,
        dscp: 0,
        ecn: Ecn::NotEct,
        ident,
        dont_frag: false,
        more_frags: false,
        frag_offset: 0,
    };
    let mut buf = vec![0; ip.buffer_len()];
    ip.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
    udp.emit_header(&mut UdpPacket::new_unchecked(&mut buf[20..]));
    VxlanRepr { vni }.emit(&mut VxlanPacket::new_unchecked(&mut buf[28..]));
    buf[36..].copy_from_slice(inner);
    buf
}

fn outer_source_port(frame: &[u8]) -> u16 {
    let ip = Ipv4Packet::new_checked(&frame[14..]).unwrap();
    UdpPacket::new_checked(ip.payload()).unwrap().src_port()
}

fn outer_ident(frame: &[u8]) -> u16 {
    Ipv4Packet::new_checked(&frame[14..]).unwrap().ident()
}

fn outer_dst(frame: &[u8]) -> Ipv4Addr {
    Ipv4Packet::new_checked(&frame[14..]).unwrap().dst_addr()
}

#[test]
fn flood_replicates_to_local_members_and_every_remote_vtep() {
    let mut switch = vtep_switch();
    let mut out = Output::new();
    let inner = frame(mac(9), H2, None, EtherType::Ipv4, &udp_packet("192.168.100.2", "192.168.100.9", 7, 64));
    assert_eq!(switch.process(NOW, 2, &inner, &mut out), Disposition::Flooded);
    let got = emitted(&out);
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].0, Egress::Port(3));
    // 3.3.3.3 via next hop 10.0.1.2 on port 1.
    let tunnels = &got[1..];
    let (to, bytes) = tunnels.iter().find(|(_, bytes)| outer_dst(bytes) == v4("3.3.3.3")).unwrap();
    assert_eq!(*to, Egress::Port(1));
    let sport = outer_source_port(bytes);
    assert!(sport >= 49152, "RFC 7348: dynamic port range");
    let ident = outer_ident(bytes);
    let outer = vxlan_ip_with_id(v4("1.1.1.1"), v4("3.3.3.3"), sport, ident, VNI, &inner);
    assert_eq!(*bytes, frame(H1, R1, None, EtherType::Ipv4, &outer));
    assert!(tunnels.iter().any(|(_, bytes)| outer_dst(bytes) == v4("2.2.2.2")));
    // RFC 6864 4.1: outer headers may be fragmented, so their IDs differ.
    let mut ids: Vec<u16> = tunnels.iter().map(|(_, bytes)| outer_ident(bytes)).collect();
    ids.dedup();
    assert_eq!(ids.len(), 2, "{ids:?}");
}

#[test]
fn remote_macs_are_encapsulated_with_a_per_flow_source_port() {
    let mut switch = vtep_switch();
    switch.set_fdb_entry(100, mac(9), FdbDest::Tunnel(v4("2.2.2.2")), FdbKind::Static, 0).unwrap();
    let mut out = Output::new();
    let mut ports = std::collections::BTreeSet::new();
    let mut paths = std::collections::HashSet::new();
    for flow in 0..64u16 {
        let ip = udp_packet("192.168.100.2", "192.168.100.9", 1000 + flow, 64);
        // Tagged from the trunk: the inner frame loses the tag.
        let sent = frame(mac(9), H2, Some(100), EtherType::Ipv4, &ip);
        let mut seen = Vec::new();
        for _ in 0..2 {
            out.clear();
            assert_eq!(switch.process(NOW, 3, &sent, &mut out), Disposition::Forwarded);
            let (to, bytes) = emitted(&out).remove(0);
            seen.push((to, outer_source_port(&bytes)));
            let expected_inner = frame(mac(9), H2, None, EtherType::Ipv4, &ip);
            assert_eq!(&bytes[14 + 36..], &expected_inner[..]);
        }
        assert_eq!(seen[0], seen[1], "one flow, one outer source port and path");
        ports.insert(seen[0].1);
        paths.insert(seen[0].0);
    }
    assert!(ports.len() > 50, "inner flows spread over source ports: {}", ports.len());
    assert_eq!(paths.len(), 2, "and so over the underlay's ECMP members");
}

#[test]
fn decapsulation_learns_the_remote_vtep_and_bridges_with_split_horizon() {
    let mut switch = vtep_switch();
    switch.set_fdb_entry(100, H2, FdbDest::Port(2), FdbKind::Static, 0).unwrap();
    let mut out = Output::new();
    let inner = frame(H2, mac(20), None, EtherType::Ipv4, &udp_packet("192.168.100.20", "192.168.100.2", 5, 64));
    let outer = frame(R0, H0, None, EtherType::Ipv4, &vxlan_ip(v4("2.2.2.2"), v4("1.1.1.1"), 50000, VNI, &inner));
    assert_eq!(switch.process(NOW, 0, &outer, &mut out), Disposition::Forwarded);
    assert_eq!(emitted(&out), vec![(Egress::Port(2), inner)]);
    assert_eq!(switch.fdb_entry(100, mac(20)).unwrap().dest, FdbDest::Tunnel(v4("2.2.2.2")));
    assert_eq!(
        switch.drain_events().collect::<Vec<_>>(),
        vec![Event::FdbLearned { vid: 100, mac: mac(20), dest: FdbDest::Tunnel(v4("2.2.2.2")) }]
    );
    // Unknown inner destination: flooded locally, never back into the overlay.
    out.clear();
    let unknown =
        frame(mac(30), mac(20), None, EtherType::Ipv4, &udp_packet("192.168.100.20", "192.168.100.30", 5, 64));
    let outer = frame(R0, H0, None, EtherType::Ipv4, &vxlan_ip(v4("2.2.2.2"), v4("1.1.1.1"), 50000, VNI, &unknown));
    assert_eq!(switch.process(NOW, 0, &outer, &mut out), Disposition::Flooded);
    assert_eq!(ports_of(&out), vec![2, 3]);
    // Known behind another VTEP: split horizon drops it.
    switch.set_fdb_entry(100, mac(30), FdbDest::Tunnel(v4("3.3.3.3")), FdbKind::Static, 0).unwrap();
    out.clear();
    assert_eq!(switch.process(NOW, 0, &outer, &mut out), Disposition::Dropped(DropReason::SplitHorizon));
    // A VNI we do not serve.
    let stray = frame(R0, H0, None, EtherType::Ipv4, &vxlan_ip(v4("2.2.2.2"), v4("1.1.1.1"), 50000, 77, &unknown));
    assert_eq!(switch.process(NOW, 0, &stray, &mut out), Disposition::Dropped(DropReason::VxlanUnknownVni));
    // Local traffic to the remote-learned MAC is encapsulated back to its VTEP.
    out.clear();
    let reply = frame(mac(20), H2, None, EtherType::Ipv4, &udp_packet("192.168.100.2", "192.168.100.20", 5, 64));
    assert_eq!(switch.process(NOW, 2, &reply, &mut out), Disposition::Forwarded);
    assert_eq!(outer_dst(&emitted(&out)[0].1), v4("2.2.2.2"));
}

#[test]
fn a_decapsulated_frame_with_its_own_vlan_tag_is_discarded() {
    let mut switch = vtep_switch();
    let mut out = Output::new();
    // RFC 7348 section 6.1: the VNI says the VLAN; an inner tag is not relayed untagged.
    let tagged = frame(H2, mac(20), Some(100), EtherType::Ipv4, &udp_packet("192.168.100.20", "192.168.100.2", 5, 64));
    let outer = frame(R0, H0, None, EtherType::Ipv4, &vxlan_ip(v4("2.2.2.2"), v4("1.1.1.1"), 50000, VNI, &tagged));
    assert_eq!(switch.process(NOW, 0, &outer, &mut out), Disposition::Dropped(DropReason::VxlanInnerVlanTag));
    assert!(out.is_empty());
    assert_eq!(switch.fdb_entry(100, mac(20)), None, "nothing learned from it");
    assert_eq!(switch.drop_counters()[DropReason::VxlanInnerVlanTag], 1);
}

#[test]
fn the_svi_answers_arp_from_a_remote_host_through_the_tunnel() {
    let mut switch = vtep_switch();
    let mut out = Output::new();
    let arp = crate::wire::ArpRepr {
        operation: crate::wire::arp::Operation::Request,
        sender_hardware_addr: mac(20),
        sender_protocol_addr: v4("192.168.100.20"),
        target_hardware_addr: EthernetAddress::ZERO,
        target_protocol_addr: v4("192.168.100.1"),
    };
    let mut body = vec![0; 28];
    arp.emit(&mut crate::wire::ArpPacket::new_unchecked(&mut body[..]));
    let inner = frame(EthernetAddress::BROADCAST, mac(20), None, EtherType::Arp, &body);
    let outer = frame(R1, H1, None, EtherType::Ipv4, &vxlan_ip(v4("3.3.3.3"), v4("1.1.1.1"), 50001, VNI, &inner));
    assert_eq!(switch.process(NOW, 1, &outer, &mut out), Disposition::Consumed);
    let got = emitted(&out);
    // Flooded to the local members (not back to the overlay), answered through the tunnel, and not copied to
    // the host, whose kernel would answer a second time.
    assert_eq!(ports_of(&out).iter().filter(|&&port| port >= 2).count(), 2);
    assert!(!got.iter().any(|(to, _)| matches!(to, Egress::Host { .. })));
    let (to, answer) = got.iter().find(|(_, bytes)| bytes.len() > 60 && outer_dst(bytes) == v4("3.3.3.3")).unwrap();
    assert_eq!(*to, Egress::Port(1));
    let reply_inner = &answer[14 + 36..];
    let reply = crate::wire::ArpRepr::parse(&crate::wire::ArpPacket::new_checked(&reply_inner[14..]).unwrap()).unwrap();
    assert_eq!(reply, arp.reply(R2));
    assert_eq!(&reply_inner[..12], &[mac(20).0, R2.0].concat()[..]);
}

/// Issue 9: a local host's ARP request and neighbour solicitation for its
/// anycast gateway (the SVI's own address on a VLAN mapped to a VNI) are
/// answered once, by this leaf's SVI, and never cross the overlay: every
/// other leaf's SVI has the same address and would answer again. The local
/// members still get their copy, as from Linux's bridge with neigh_suppress.
#[test]
fn arp_and_nd_for_the_anycast_gateway_are_answered_locally_and_kept_off_the_overlay() {
    let mut switch = vtep_switch();
    switch.set_route(net("2001:db8:100::1/128"), RouteTarget::Local).unwrap();
    switch.set_route(net("2001:db8:100::/64"), RouteTarget::Connected(2)).unwrap();
    let mut out = Output::new();
    // Ports 0 and 1 are the underlay, 2 (the host's) and 3 the VLAN's members.
    let underlay = |out: &Output| ports_of(out).iter().filter(|&&port| port < 2).count();

    let request = arp(Operation::Request, H2, "192.168.100.2", EthernetAddress::ZERO, "192.168.100.1");
    let sent = frame(EthernetAddress::BROADCAST, H2, None, EtherType::Arp, &request);
    assert_eq!(switch.process(NOW, 2, &sent, &mut out), Disposition::Consumed);
    assert_eq!(underlay(&out), 0, "no VXLAN copy");
    let got = emitted(&out);
    assert!(got.iter().any(|(to, _)| *to == Egress::Port(3)), "the other local member still gets it");
    let reply = arp(Operation::Reply, R2, "192.168.100.1", H2, "192.168.100.2");
    let replies: Vec<_> = got.iter().filter(|(to, _)| *to == Egress::Port(2)).collect();
    assert_eq!(replies, vec![&(Egress::Port(2), frame(H2, R2, None, EtherType::Arp, &reply))], "one local reply");
    assert_eq!(switch.neighbor_requests_suppressed(), 1);

    out.clear();
    let (host_ip, gateway) = (v6("2001:db8:100::2"), v6("2001:db8:100::1"));
    let solicit = Icmpv6Repr::NeighborSolicit { target_addr: gateway, source_lladdr: Some(H2) };
    let ns = ipv6(host_ip, v6("ff02::1:ff00:1"), 255, &solicit);
    let sent = frame(EthernetAddress([0x33, 0x33, 0xff, 0, 0, 1]), H2, None, EtherType::Ipv6, &ns);
    switch.process(NOW, 2, &sent, &mut out);
    assert_eq!(underlay(&out), 0, "no VXLAN copy");
    let got = emitted(&out);
    let adverts: Vec<_> = got.iter().filter(|(to, _)| *to == Egress::Port(2)).collect();
    assert_eq!(adverts.len(), 1, "one local advertisement");
    let packet = Ipv6Packet::new_checked(&adverts[0].1[14..]).unwrap();
    let icmp = Icmpv6Packet::new_checked(packet.payload()).unwrap();
    let advert = Icmpv6Repr::parse(&icmp, packet.src_addr(), packet.dst_addr()).unwrap();
    assert!(
        matches!(advert, Icmpv6Repr::NeighborAdvert { target_addr, solicited_flag: true, .. } if target_addr == gateway)
    );
    assert_eq!(switch.neighbor_requests_suppressed(), 2);

    // A request for another host in the VNI still floods to the remote VTEPs.
    out.clear();
    let other = arp(Operation::Request, H2, "192.168.100.2", EthernetAddress::ZERO, "192.168.100.7");
    let sent = frame(EthernetAddress::BROADCAST, H2, None, EtherType::Arp, &other);
    assert_eq!(switch.process(NOW, 2, &sent, &mut out), Disposition::Flooded);
    assert_eq!(underlay(&out), 2, "one VXLAN copy per remote VTEP");
    assert_eq!(switch.neighbor_requests_suppressed(), 2);
}

#[test]
fn vni_and_flood_list_management() {
    let mut switch = vtep_switch();
    assert_eq!(switch.map_vlan_to_vni(100, 1 << 24), Err(TableError::Invalid("VNI is 24 bits")));
    switch.create_vlan(200).unwrap();
    assert_eq!(switch.map_vlan_to_vni(200, VNI), Err(TableError::InUse));
    assert_eq!(switch.remove_vlan(100), Err(TableError::InUse));
    assert_eq!(switch.flood_vteps(VNI), &[v4("2.2.2.2"), v4("3.3.3.3")]);
    switch.remove_flood_vtep(VNI, v4("2.2.2.2")).unwrap();
    assert_eq!(switch.remove_flood_vtep(VNI, v4("2.2.2.2")), Err(TableError::NotFound));
    switch.unmap_vlan(100).unwrap();
    assert_eq!(switch.vlan_vni(100), None);
    // Without a VNI the VLAN floods locally only.
    let mut out = Output::new();
    switch.process(NOW, 2, &frame(mac(9), H2, None, EtherType::Ipv4, &[0x45; 40]), &mut out);
    assert_eq!(ports_of(&out), vec![3]);
}

proptest::proptest! {
    #[test]
    fn mutated_vxlan_never_panics(index in 0usize..120, value in proptest::num::u8::ANY, cut in 0usize..100) {
        let mut switch = vtep_switch();
        let mut out = Output::new();
        let inner = frame(H2, mac(20), None, EtherType::Ipv4, &udp_packet("192.168.100.20", "192.168.100.2", 5, 64));
        let mut outer = frame(R0, H0, None, EtherType::Ipv4, &vxlan_ip(v4("2.2.2.2"), v4("1.1.1.1"), 50000, VNI, &inner));
        let index = index % outer.len();
        outer[index] = value;
        // Keep the outer checksum right so the mutation reaches the inner layers.
        if index >= 14 + 20 {
            let mut header = Ipv4Packet::new_unchecked(&mut outer[14..]);
            header.fill_checksum();
        }
        outer.truncate(outer.len() - cut.min(outer.len()));
        let disposition = switch.process(NOW, 0, &outer, &mut out);
        if let Disposition::Dropped(reason) = disposition {
            proptest::prop_assert!(switch.drop_counters()[reason] >= 1);
        }
    }
}

#[test]
fn underlay_route_changes_move_tunnels_at_once() {
    let mut switch = vtep_switch();
    switch.set_fdb_entry(100, mac(9), FdbDest::Tunnel(v4("3.3.3.3")), FdbKind::Static, 0).unwrap();
    let sent = frame(mac(9), H2, None, EtherType::Ipv4, &udp_packet("192.168.100.2", "192.168.100.9", 1, 64));
    let mut out = Output::new();
    switch.process(NOW, 2, &sent, &mut out);
    assert_eq!(ports_of(&out), vec![1]);
    switch.set_route("3.3.3.3/32".parse().unwrap(), RouteTarget::NextHop(1)).unwrap();
    out.clear();
    switch.process(NOW, 2, &sent, &mut out);
    assert_eq!(ports_of(&out), vec![0]);
    switch.remove_route("3.3.3.3/32".parse().unwrap()).unwrap();
    out.clear();
    assert_eq!(switch.process(NOW, 2, &sent, &mut out), Disposition::Dropped(DropReason::NoRoute));
}

#[test]
fn the_underlay_can_run_over_an_svi() {
    let mut switch = vtep_switch();
    // VLAN 200 on access port 4 is an underlay segment behind SVI 3.
    let r3 = EthernetAddress([0x02, 0xaa, 0, 0, 0, 3]);
    let peer = mac(40);
    switch.create_vlan(200).unwrap();
    switch.set_port(4, PortConfig { pvid: 200, ..PortConfig::default() }).unwrap();
    switch.set_vlan_member(200, 4, false).unwrap();
    switch
        .set_router_interface(
            3,
            RouterInterface { kind: RifKind::Vlan(200), mac: r3, mtu: 1500, admin_up: true, vrf: DEFAULT_VRF },
        )
        .unwrap();
    switch.set_route("10.0.2.1/32".parse().unwrap(), RouteTarget::Local).unwrap();
    switch.set_route("10.0.2.0/24".parse().unwrap(), RouteTarget::Connected(3)).unwrap();
    switch.set_next_hop(4, NextHop { rif: 3, ip: IpAddr::V4(v4("10.0.2.2")) }).unwrap();
    switch.set_route("4.4.4.4/32".parse().unwrap(), RouteTarget::NextHop(4)).unwrap();
    switch.set_neighbor(3, IpAddr::V4(v4("10.0.2.2")), peer).unwrap();
    switch.set_fdb_entry(200, peer, FdbDest::Port(4), FdbKind::Static, 0).unwrap();
    switch.set_fdb_entry(100, H2, FdbDest::Port(2), FdbKind::Static, 0).unwrap();
    let mut out = Output::new();
    // Decapsulation of a packet routed to us through the SVI.
    let inner = frame(H2, mac(21), None, EtherType::Ipv4, &udp_packet("192.168.100.21", "192.168.100.2", 5, 64));
    let outer = frame(r3, peer, None, EtherType::Ipv4, &vxlan_ip(v4("4.4.4.4"), v4("1.1.1.1"), 50002, VNI, &inner));
    assert_eq!(switch.process(NOW, 4, &outer, &mut out), Disposition::Forwarded);
    assert_eq!(emitted(&out), vec![(Egress::Port(2), inner)]);
    assert_eq!(switch.fdb_entry(100, mac(21)).unwrap().dest, FdbDest::Tunnel(v4("4.4.4.4")));
    // And back: encapsulated, then bridged out of the underlay VLAN's port.
    out.clear();
    let reply = frame(mac(21), H2, None, EtherType::Ipv4, &udp_packet("192.168.100.2", "192.168.100.21", 5, 64));
    assert_eq!(switch.process(NOW, 2, &reply, &mut out), Disposition::Forwarded);
    let got = emitted(&out);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, Egress::Port(4));
    let (sport, ident) = (outer_source_port(&got[0].1), outer_ident(&got[0].1));
    let outer = vxlan_ip_with_id(v4("1.1.1.1"), v4("4.4.4.4"), sport, ident, VNI, &reply);
    assert_eq!(got[0].1, frame(peer, r3, None, EtherType::Ipv4, &outer));
}

/// RFC 7432 section 10: with EVPN's binding of 192.168.100.9 and
/// 2001:db8:100::9 to a host behind a remote VTEP, the bridge answers a
/// local host's ARP request and neighbour solicitation itself, out of the
/// port they came in on, and floods nothing (no copy to the trunk, none to
/// the VTEPs of the flood list). Unknown targets, gratuitous ARP and DAD
/// still flood.
#[test]
fn arp_and_nd_for_evpn_known_hosts_are_answered_locally_not_flooded() {
    let mut switch = vtep_switch();
    let remote_host = mac(9);
    switch.set_suppression_entry(100, IpAddr::V4(v4("192.168.100.9")), remote_host).unwrap();
    switch.set_suppression_entry(100, IpAddr::V6(v6("2001:db8:100::9")), remote_host).unwrap();
    let mut out = Output::new();

    let request = arp(Operation::Request, H2, "192.168.100.2", EthernetAddress::ZERO, "192.168.100.9");
    let sent = frame(EthernetAddress::BROADCAST, H2, None, EtherType::Arp, &request);
    assert_eq!(switch.process(NOW, 2, &sent, &mut out), Disposition::Consumed);
    let reply = arp(Operation::Reply, remote_host, "192.168.100.9", H2, "192.168.100.2");
    assert_eq!(emitted(&out), vec![(Egress::Port(2), frame(H2, remote_host, None, EtherType::Arp, &reply))]);
    assert_eq!(switch.neighbor_requests_suppressed(), 1);

    // Neighbour solicitation to the solicited-node group: a solicited advertisement back.
    out.clear();
    let (host_ip, target) = (v6("2001:db8:100::2"), v6("2001:db8:100::9"));
    let solicit = Icmpv6Repr::NeighborSolicit { target_addr: target, source_lladdr: Some(H2) };
    let ns = ipv6(host_ip, v6("ff02::1:ff00:9"), 255, &solicit);
    let sent = frame(EthernetAddress([0x33, 0x33, 0xff, 0, 0, 9]), H2, None, EtherType::Ipv6, &ns);
    assert_eq!(switch.process(NOW, 2, &sent, &mut out), Disposition::Consumed);
    let advert = Icmpv6Repr::NeighborAdvert {
        router_flag: false,
        solicited_flag: true,
        override_flag: true,
        target_addr: target,
        target_lladdr: Some(remote_host),
    };
    let na = ipv6(target, host_ip, 255, &advert);
    let got = emitted(&out);
    assert_eq!(got, vec![(Egress::Port(2), frame(H2, remote_host, None, EtherType::Ipv6, &na))]);
    let icmp = Icmpv6Packet::new_checked(&got[0].1[14 + 40..]).unwrap();
    assert!(icmp.verify_checksum(target, host_ip));
    assert_eq!(Ipv6Packet::new_checked(&got[0].1[14..]).unwrap().hop_limit(), 255);
    assert_eq!(switch.neighbor_requests_suppressed(), 2);

    // Not suppressed: an unknown target, a gratuitous ARP, DAD from ::.
    let unknown = arp(Operation::Request, H2, "192.168.100.2", EthernetAddress::ZERO, "192.168.100.10");
    let gratuitous = arp(Operation::Request, H2, "192.168.100.9", EthernetAddress::ZERO, "192.168.100.9");
    let dad = ipv6(
        v6("::"),
        v6("ff02::1:ff00:9"),
        255,
        &Icmpv6Repr::NeighborSolicit { target_addr: target, source_lladdr: None },
    );
    for (ethertype, body) in [(EtherType::Arp, unknown), (EtherType::Arp, gratuitous), (EtherType::Ipv6, dad)] {
        out.clear();
        let dst = if ethertype == EtherType::Arp {
            EthernetAddress::BROADCAST
        } else {
            EthernetAddress([0x33, 0x33, 0xff, 0, 0, 9])
        };
        assert_eq!(switch.process(NOW, 2, &frame(dst, H2, None, ethertype, &body), &mut out), Disposition::Flooded);
        // Ports 0 and 1 are the underlay: one VXLAN copy per remote VTEP.
        let encapsulated = ports_of(&out).iter().filter(|&&port| port < 2).count();
        assert_eq!(encapsulated, 2, "flooded to both VTEPs");
    }
    assert_eq!(switch.neighbor_requests_suppressed(), 2);

    // Withdrawn binding: flooded again.
    switch.remove_suppression_entry(100, IpAddr::V4(v4("192.168.100.9"))).unwrap();
    out.clear();
    let sent = frame(EthernetAddress::BROADCAST, H2, None, EtherType::Arp, &request);
    assert_eq!(switch.process(NOW, 2, &sent, &mut out), Disposition::Flooded);
    assert_eq!(switch.remove_suppression_entry(100, IpAddr::V4(v4("192.168.100.9"))), Err(TableError::NotFound));
    assert!(switch.set_suppression_entry(999, IpAddr::V4(v4("192.168.100.9")), remote_host).is_err(), "no such VLAN");
}

/// EVPN's remote MACs: a static entry that allows moves never ages, and a
/// host that shows up on a local port moves it (reported as a move); a
/// remote VTEP learning is off for teaches the FDB nothing.
#[test]
fn evpn_remote_entries_never_age_but_move_and_evpn_vteps_teach_nothing() {
    let mut switch = vtep_switch();
    let remote = v4("2.2.2.2");
    switch.set_fdb_entry(100, mac(20), FdbDest::Tunnel(remote), FdbKind::StaticMovable, 0).unwrap();
    let mut out = Output::new();
    switch.poll(NOW + 3600 * 1_000_000_000, &mut out);
    assert_eq!(switch.fdb_entry(100, mac(20)).map(|e| e.kind), Some(FdbKind::StaticMovable), "never aged");
    let _ = switch.drain_events().count();
    // The host moved here: its frame on port 2 moves the entry.
    let from_host = frame(EthernetAddress::BROADCAST, mac(20), None, EtherType::Arp, &[0; 28]);
    switch.process(NOW, 2, &from_host, &mut out);
    let entry = switch.fdb_entry(100, mac(20)).unwrap();
    assert_eq!((entry.dest, entry.kind), (FdbDest::Port(2), FdbKind::Dynamic));
    let events: Vec<Event> = switch.drain_events().collect();
    assert!(events.contains(&Event::FdbMoved {
        vid: 100,
        mac: mac(20),
        from: FdbDest::Tunnel(remote),
        to: FdbDest::Port(2)
    }));

    // No learning from 2.2.2.2: its inner source stays unknown.
    switch.set_remote_learning(remote, false);
    out.clear();
    let inner = frame(H2, mac(21), None, EtherType::Ipv4, &udp_packet("192.168.100.21", "192.168.100.2", 5, 64));
    let outer = frame(R0, H0, None, EtherType::Ipv4, &vxlan_ip(remote, v4("1.1.1.1"), 50000, VNI, &inner));
    switch.process(NOW, 0, &outer, &mut out);
    assert_eq!(switch.fdb_entry(100, mac(21)), None);
    switch.set_remote_learning(remote, true);
    switch.process(NOW, 0, &outer, &mut out);
    assert_eq!(switch.fdb_entry(100, mac(21)).map(|e| e.dest), Some(FdbDest::Tunnel(remote)));
}

/// RFC 7432 section 15.2: a sticky MAC behind a remote VTEP is a static
/// entry that allows no move. Its frames on a local port are forwarded but
/// not learned; each is counted, and the refusal reported as an event at
/// most once a second.
#[test]
fn a_sticky_remote_mac_is_never_learned_on_a_local_port() {
    let mut switch = vtep_switch();
    let remote = v4("2.2.2.2");
    switch.set_fdb_entry(100, mac(20), FdbDest::Tunnel(remote), FdbKind::Static, 0).unwrap();
    let _ = switch.drain_events().count();
    let mut out = Output::new();
    let spoofed = frame(EthernetAddress::BROADCAST, mac(20), None, EtherType::Arp, &[0; 28]);
    assert_eq!(switch.process(NOW, 2, &spoofed, &mut out), Disposition::Flooded, "forwarded, not dropped");
    switch.process(NOW + 1_000, 2, &spoofed, &mut out);
    let entry = switch.fdb_entry(100, mac(20)).unwrap();
    assert_eq!((entry.dest, entry.kind), (FdbDest::Tunnel(remote), FdbKind::Static), "still behind the VTEP");
    assert_eq!(switch.fdb_moves_refused(), 2);
    let refused =
        Event::FdbMoveRefused { vid: 100, mac: mac(20), pinned: FdbDest::Tunnel(remote), from: FdbDest::Port(2) };
    assert_eq!(switch.drain_events().collect::<Vec<_>>(), vec![refused], "reported once");
    switch.process(NOW + 1_000_000_000, 2, &spoofed, &mut out);
    assert_eq!(switch.drain_events().collect::<Vec<_>>(), vec![refused], "and again a second later");
    assert_eq!(switch.fdb_moves_refused(), 3);
}

const L3VNI: Vni = 4001;
const TENANT: VrfId = 1;
/// The anycast gateway's MAC, our router MAC on the L3VNI, the remote's.
const GATEWAY: EthernetAddress = EthernetAddress([0x02, 0x00, 0x5e, 0, 0, 1]);
const OUR_RMAC: EthernetAddress = EthernetAddress([0x02, 0xcc, 0, 0, 0, 1]);
const REMOTE_RMAC: EthernetAddress = EthernetAddress([0x02, 0xcc, 0, 0, 0, 2]);

/// `vtep_switch` plus VRF 1 with L3VNI 4001: VLAN 300 on access port 4,
/// its SVI (RIF 3, 10.30.0.1/24) in the VRF with the gateway MAC; host
/// 10.40.0.5 behind VTEP 3.3.3.3 (router MAC `REMOTE_RMAC`) as a tunnel
/// next hop; local host 10.30.0.5 is `mac(30)` on port 4.
fn irb_switch() -> Switch {
    let mut switch = vtep_switch();
    switch.create_vrf(TENANT).unwrap();
    switch.create_vlan(300).unwrap();
    switch.set_port(4, PortConfig { pvid: 300, ..PortConfig::default() }).unwrap();
    switch.set_vlan_member(300, 4, false).unwrap();
    let svi = RouterInterface { kind: RifKind::Vlan(300), mac: GATEWAY, mtu: 1500, admin_up: true, vrf: TENANT };
    switch.set_router_interface(3, svi).unwrap();
    switch.set_route_in(TENANT, net("10.30.0.1/32"), RouteTarget::Local).unwrap();
    switch.set_route_in(TENANT, net("10.30.0.0/24"), RouteTarget::Connected(3)).unwrap();
    switch.map_vni_to_vrf(L3VNI, L3Vni { vrf: TENANT, router_mac: OUR_RMAC }).unwrap();
    let remote = TunnelNextHop { remote: v4("3.3.3.3"), vni: L3VNI, router_mac: REMOTE_RMAC };
    switch.set_tunnel_next_hop(7, remote).unwrap();
    switch.set_route_in(TENANT, net("10.40.0.5/32"), RouteTarget::NextHop(7)).unwrap();
    switch.set_neighbor(3, IpAddr::V4(v4("10.30.0.5")), mac(30)).unwrap();
    switch.set_fdb_entry(300, mac(30), FdbDest::Port(4), FdbKind::Static, 0).unwrap();
    switch
}

/// RFC 9135 section 4.1, symmetric IRB: a packet the VRF routes to a host
/// behind a remote VTEP leaves with TTL - 1 in a frame from our router MAC
/// to the remote's, VXLAN on the L3VNI to the VTEP (routed in the underlay:
/// 3.3.3.3 via 10.0.1.2 on port 1); and back, what arrives on the L3VNI
/// for our router MAC is routed in the VRF to the local host.
#[test]
fn symmetric_irb_routes_into_and_out_of_the_l3vni() {
    let mut switch = irb_switch();
    let mut out = Output::new();
    let sent = frame(GATEWAY, mac(30), None, EtherType::Ipv4, &udp_packet("10.30.0.5", "10.40.0.5", 7, 64));
    assert_eq!(switch.process(NOW, 4, &sent, &mut out), Disposition::Forwarded);
    let got = emitted(&out);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, Egress::Port(1));
    let inner = frame(REMOTE_RMAC, OUR_RMAC, None, EtherType::Ipv4, &udp_packet("10.30.0.5", "10.40.0.5", 7, 63));
    let (sport, ident) = (outer_source_port(&got[0].1), outer_ident(&got[0].1));
    let outer = vxlan_ip_with_id(v4("1.1.1.1"), v4("3.3.3.3"), sport, ident, L3VNI, &inner);
    assert_eq!(got[0].1, frame(H1, R1, None, EtherType::Ipv4, &outer));

    out.clear();
    let inner = frame(OUR_RMAC, REMOTE_RMAC, None, EtherType::Ipv4, &udp_packet("10.40.0.5", "10.30.0.5", 7, 63));
    let outer = frame(R1, H1, None, EtherType::Ipv4, &vxlan_ip(v4("3.3.3.3"), v4("1.1.1.1"), 50001, L3VNI, &inner));
    assert_eq!(switch.process(NOW, 1, &outer, &mut out), Disposition::Forwarded);
    let routed = frame(mac(30), GATEWAY, None, EtherType::Ipv4, &udp_packet("10.40.0.5", "10.30.0.5", 7, 62));
    assert_eq!(emitted(&out), vec![(Egress::Port(4), routed)]);
    // Nothing is learned from a routed frame.
    assert!(switch.fdb_entry(300, REMOTE_RMAC).is_none());
}

#[test]
fn the_l3vni_takes_only_frames_to_our_router_mac_and_never_routes_back_into_the_overlay() {
    let mut switch = irb_switch();
    let mut out = Output::new();
    let decap = |switch: &mut Switch, dst_mac, dst: &str, vni, out: &mut Output| {
        let inner = frame(dst_mac, REMOTE_RMAC, None, EtherType::Ipv4, &udp_packet("10.40.0.9", dst, 7, 63));
        let outer = frame(R1, H1, None, EtherType::Ipv4, &vxlan_ip(v4("3.3.3.3"), v4("1.1.1.1"), 50001, vni, &inner));
        switch.process(NOW, 1, &outer, out)
    };
    let other = EthernetAddress([0x02, 0xcc, 0, 0, 0, 9]);
    assert_eq!(decap(&mut switch, other, "10.30.0.5", L3VNI, &mut out), Disposition::Dropped(DropReason::NotRouterMac));
    // A host route back into the overlay: split horizon.
    assert_eq!(
        decap(&mut switch, OUR_RMAC, "10.40.0.5", L3VNI, &mut out),
        Disposition::Dropped(DropReason::SplitHorizon)
    );
    assert_eq!(decap(&mut switch, OUR_RMAC, "10.99.0.1", L3VNI, &mut out), Disposition::Dropped(DropReason::NoRoute));
    assert_eq!(
        decap(&mut switch, OUR_RMAC, "10.30.0.5", 4002, &mut out),
        Disposition::Dropped(DropReason::VxlanUnknownVni)
    );
    assert!(out.is_empty());
    // A VNI is a VLAN's or a VRF's, and a VRF has one L3VNI.
    assert_eq!(switch.map_vni_to_vrf(VNI, L3Vni { vrf: TENANT, router_mac: OUR_RMAC }), Err(TableError::InUse));
    assert!(switch.map_vni_to_vrf(4002, L3Vni { vrf: TENANT, router_mac: OUR_RMAC }).is_err());
    // The tunnel next hop is in use by its route; without the L3VNI the VRF cannot encapsulate.
    assert_eq!(switch.remove_next_hop(7), Err(TableError::InUse));
    switch.unmap_vni_from_vrf(L3VNI).unwrap();
    out.clear();
    let sent = frame(GATEWAY, mac(30), None, EtherType::Ipv4, &udp_packet("10.30.0.5", "10.40.0.5", 7, 64));
    assert_eq!(switch.process(NOW, 4, &sent, &mut out), Disposition::Dropped(DropReason::VxlanUnknownVni));
}

/// RFC 7432 section 10 for the router itself: the SVI resolving a host that
/// an EVPN MAC+IP route binds in its VLAN takes the binding as the answer
/// and asks nothing over the overlay. A request sent before the binding
/// came (a silent host, flooded in the VNI) is answered by it at the next
/// retransmission, and the packet held for it leaves then.
#[test]
fn the_svi_takes_evpn_bindings_as_answers_instead_of_asking_across_the_overlay() {
    let mut switch = vtep_switch();
    let (known, silent) = (mac(9), mac(10));
    switch.set_suppression_entry(100, IpAddr::V4(v4("192.168.100.9")), known).unwrap();
    switch.set_fdb_entry(100, known, FdbDest::Tunnel(v4("3.3.3.3")), FdbKind::Static, 0).unwrap();
    let arp_sent =
        |out: &Output| emitted(out).iter().filter(|(_, bytes)| bytes.windows(2).any(|w| w == [0x08, 0x06])).count();
    let mut out = Output::new();
    let packet = frame(R0, H0, None, EtherType::Ipv4, &udp_packet("10.0.0.2", "192.168.100.9", 7, 64));
    assert_eq!(switch.process(NOW, 0, &packet, &mut out), Disposition::Forwarded);
    let got = emitted(&out);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0, outer_dst(&got[0].1)), (Egress::Port(1), v4("3.3.3.3")), "routed into VLAN 100, over VXLAN");
    assert_eq!(arp_sent(&out), 0);
    let neighbor = switch.neighbor(2, IpAddr::V4(v4("192.168.100.9"))).unwrap();
    assert_eq!((neighbor.mac, neighbor.state), (Some(known), NeighborState::Reachable));

    // A silent host: the request floods (the local members and both VTEPs), the packet waits.
    out.clear();
    let packet = frame(R0, H0, None, EtherType::Ipv4, &udp_packet("10.0.0.2", "192.168.100.10", 7, 64));
    switch.process(NOW, 0, &packet, &mut out);
    assert_eq!(ports_of(&out).iter().filter(|&&port| port < 2).count(), 2, "the request crosses to both VTEPs");
    // Its MAC+IP route arrives before the next retransmission, which asks nothing.
    switch.set_suppression_entry(100, IpAddr::V4(v4("192.168.100.10")), silent).unwrap();
    switch.set_fdb_entry(100, silent, FdbDest::Tunnel(v4("3.3.3.3")), FdbKind::Static, 0).unwrap();
    out.clear();
    switch.poll(NOW + switch.config().neighbor_retrans_ns, &mut out);
    let got = emitted(&out);
    assert_eq!(got.len(), 1, "only the held packet: {got:?}");
    assert_eq!(outer_dst(&got[0].1), v4("3.3.3.3"));
    let neighbor = switch.neighbor(2, IpAddr::V4(v4("192.168.100.10"))).unwrap();
    assert_eq!((neighbor.mac, neighbor.state), (Some(silent), NeighborState::Reachable));
}

/// An SVI of an EVPN VNI takes a solicited advertisement it has no entry
/// for when it is addressed to its own address and from its subnet (the
/// answer to another leaf's solicitation from the shared anycast gateway
/// address, for a silent host behind this leaf), as a Stale entry, and
/// reports the binding; anything else untracked is still discarded (RFC
/// 4861 section 7.2.5), as on an SVI with no VNI.
#[test]
fn an_evpn_svi_learns_a_host_from_the_answer_to_another_leafs_solicitation() {
    let advert = |target: &str, solicited: bool, dst: &str| {
        let target = v6(target);
        let na = Icmpv6Repr::NeighborAdvert {
            router_flag: false,
            solicited_flag: solicited,
            override_flag: true,
            target_addr: target,
            target_lladdr: Some(H2),
        };
        frame(R2, H2, None, EtherType::Ipv6, &ipv6(target, v6(dst), 255, &na))
    };
    let learned = |switch: &Switch, ip: &str| switch.neighbor(2, IpAddr::V6(v6(ip)));
    for evpn in [true, false] {
        let mut switch = if evpn { vtep_switch() } else { l3_switch() };
        switch.set_route(net("2001:db8:100::1/128"), RouteTarget::Local).unwrap();
        switch.set_route(net("2001:db8:100::/64"), RouteTarget::Connected(2)).unwrap();
        let _ = switch.drain_events().count();
        let mut out = Output::new();
        switch.process(NOW, 2, &advert("2001:db8:100::2", true, "2001:db8:100::1"), &mut out);
        if evpn {
            let entry = learned(&switch, "2001:db8:100::2").expect("learned");
            assert_eq!((entry.mac, entry.state), (Some(H2), NeighborState::Stale));
            let resolved = Event::NeighborResolved { rif: 2, ip: IpAddr::V6(v6("2001:db8:100::2")), mac: H2 };
            assert!(switch.drain_events().any(|e| e == resolved), "reported");
        } else {
            assert_eq!(learned(&switch, "2001:db8:100::2"), None, "no VNI: RFC 4861 7.2.5");
        }
        // Unsolicited, or off the subnet, or not to our address: discarded.
        switch.process(NOW, 2, &advert("2001:db8:100::3", false, "2001:db8:100::1"), &mut out);
        switch.process(NOW, 2, &advert("2001:db8:7::3", true, "2001:db8:100::1"), &mut out);
        switch.process(NOW, 2, &advert("2001:db8:100::4", true, "2001:db8:100::9"), &mut out);
        for ip in ["2001:db8:100::3", "2001:db8:7::3", "2001:db8:100::4"] {
            assert_eq!(learned(&switch, ip), None, "{ip}");
        }
    }
}
