//! Routing, ARP/ND, ICMP.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::*;
use crate::wire::arp::Operation;
use crate::wire::icmpv4::{self, TimeExceeded};
use crate::wire::icmpv6::Icmpv6Message;
use crate::wire::{
    ArpPacket, ArpRepr, Ecn, Icmpv4Packet, Icmpv4Repr, Icmpv6Packet, Icmpv6Repr, IpProtocol, Ipv4Packet, Ipv4Repr,
    Ipv6Packet, Ipv6Repr, PseudoHeader, UdpPacket, UdpRepr, checksum,
};

pub(crate) const R0: EthernetAddress = EthernetAddress([0x02, 0xaa, 0, 0, 0, 0]);
pub(crate) const R1: EthernetAddress = EthernetAddress([0x02, 0xaa, 0, 0, 0, 1]);
pub(crate) const R2: EthernetAddress = EthernetAddress([0x02, 0xaa, 0, 0, 0, 2]);
pub(crate) const H0: EthernetAddress = EthernetAddress([0x02, 0xbb, 0, 0, 0, 0]);
pub(crate) const H1: EthernetAddress = EthernetAddress([0x02, 0xbb, 0, 0, 0, 1]);
pub(crate) const H2: EthernetAddress = EthernetAddress([0x02, 0xbb, 0, 0, 0, 2]);

pub(crate) fn v4(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

pub(crate) fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

pub(crate) fn net(s: &str) -> ipnetwork::IpNetwork {
    s.parse().unwrap()
}

/// Port 0 and port 1 routed (RIF 0: 10.0.0.1/24, 2001:db8::1/64; RIF 1:
/// 10.0.1.1/24, 2001:db8:1::1/64); ports 2 (untagged) and 3 (tagged) in
/// VLAN 100 with SVI RIF 2 (192.168.100.1/24). 172.16.0.0/16 goes to an
/// ECMP group of 10.0.0.2 and 10.0.1.2; 2001:db8:ff::/48 to 2001:db8:1::2.
pub(crate) fn l3_switch() -> Switch {
    l3_switch_with(SwitchConfig::default())
}

pub(crate) fn l3_switch_with(config: SwitchConfig) -> Switch {
    let mut switch = Switch::new(config);
    for (rif, port, mac) in [(0, 0, R0), (1, 1, R1)] {
        switch.set_port(port, PortConfig { pvid: 0, ..PortConfig::default() }).unwrap();
        switch
            .set_router_interface(
                rif,
                RouterInterface { kind: RifKind::Port(port), mac, mtu: 1500, admin_up: true, vrf: DEFAULT_VRF },
            )
            .unwrap();
    }
    switch.create_vlan(100).unwrap();
    switch.set_port(2, PortConfig { pvid: 100, ..PortConfig::default() }).unwrap();
    switch.set_port(3, PortConfig { pvid: 0, ..PortConfig::default() }).unwrap();
    switch.set_vlan_member(100, 2, false).unwrap();
    switch.set_vlan_member(100, 3, true).unwrap();
    switch
        .set_router_interface(
            2,
            RouterInterface { kind: RifKind::Vlan(100), mac: R2, mtu: 1500, admin_up: true, vrf: DEFAULT_VRF },
        )
        .unwrap();
    for (local, subnet, rif) in [
        ("10.0.0.1/32", "10.0.0.0/24", 0),
        ("10.0.1.1/32", "10.0.1.0/24", 1),
        ("192.168.100.1/32", "192.168.100.0/24", 2),
        ("2001:db8::1/128", "2001:db8::/64", 0),
        ("2001:db8:1::1/128", "2001:db8:1::/64", 1),
        ("fe80::1/128", "fe80::/64", 0),
    ] {
        switch.set_route(net(local), RouteTarget::Local).unwrap();
        switch.set_route(net(subnet), RouteTarget::Connected(rif)).unwrap();
    }
    switch.set_next_hop(1, NextHop { rif: 0, ip: IpAddr::V4(v4("10.0.0.2")) }).unwrap();
    switch.set_next_hop(2, NextHop { rif: 1, ip: IpAddr::V4(v4("10.0.1.2")) }).unwrap();
    switch.set_next_hop(3, NextHop { rif: 1, ip: IpAddr::V6(v6("2001:db8:1::2")) }).unwrap();
    switch.set_next_hop_group(1, &[1, 2]).unwrap();
    switch.set_route(net("172.16.0.0/16"), RouteTarget::Group(1)).unwrap();
    switch.set_route(net("2001:db8:ff::/48"), RouteTarget::NextHop(3)).unwrap();
    switch
}

pub(crate) fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, protocol: IpProtocol, ttl: u8, payload: &[u8]) -> Vec<u8> {
    let repr = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        protocol,
        payload_len: payload.len(),
        ttl,
        dscp: 0,
        ecn: Ecn::NotEct,
        ident: 0x1234,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
    };
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
    buf[20..].copy_from_slice(payload);
    buf
}

pub(crate) fn udp(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let repr = UdpRepr { src_port: sport, dst_port: dport, payload_len: payload.len() };
    let mut buf = vec![0; repr.buffer_len()];
    buf[8..].copy_from_slice(payload);
    repr.emit(&mut UdpPacket::new_unchecked(&mut buf[..]), &PseudoHeader::V4 { src_addr: src, dst_addr: dst });
    buf
}

pub(crate) fn udp_packet(src: &str, dst: &str, sport: u16, ttl: u8) -> Vec<u8> {
    let (src, dst) = (v4(src), v4(dst));
    ipv4(src, dst, IpProtocol::Udp, ttl, &udp(src, dst, sport, 9000, b"payload!"))
}

pub(crate) fn arp(operation: Operation, sha: EthernetAddress, spa: &str, tha: EthernetAddress, tpa: &str) -> Vec<u8> {
    let repr = ArpRepr {
        operation,
        sender_hardware_addr: sha,
        sender_protocol_addr: v4(spa),
        target_hardware_addr: tha,
        target_protocol_addr: v4(tpa),
    };
    let mut buf = vec![0; 28];
    repr.emit(&mut ArpPacket::new_unchecked(&mut buf[..]));
    buf
}

/// What a router makes of `ip`: TTL one less, checksum recomputed from scratch.
pub(crate) fn routed(ip: &[u8]) -> Vec<u8> {
    let mut expected = ip.to_vec();
    expected[8] -= 1;
    expected[10..12].fill(0);
    let sum = checksum::checksum(&expected[..20]);
    expected[10..12].copy_from_slice(&sum.to_be_bytes());
    expected
}

pub(crate) fn host_frames(out: &Output) -> Vec<(Egress, Vec<u8>)> {
    emitted(out).into_iter().filter(|(to, _)| matches!(to, Egress::Host { .. })).collect()
}

pub(crate) fn port_frames(out: &Output) -> Vec<(Egress, Vec<u8>)> {
    emitted(out).into_iter().filter(|(to, _)| matches!(to, Egress::Port(_))).collect()
}

#[test]
fn arp_request_for_own_address_is_answered_and_learned_but_not_copied_to_host() {
    let mut switch = l3_switch();
    let mut out = Output::new();
    let request = frame(
        EthernetAddress::BROADCAST,
        H0,
        None,
        EtherType::Arp,
        &arp(Operation::Request, H0, "10.0.0.2", EthernetAddress::ZERO, "10.0.0.1"),
    );
    assert_eq!(switch.process(NOW, 0, &request, &mut out), Disposition::Consumed);
    let reply = frame(H0, R0, None, EtherType::Arp, &arp(Operation::Reply, R0, "10.0.0.1", H0, "10.0.0.2"));
    assert_eq!(port_frames(&out), vec![(Egress::Port(0), reply)]);
    // The host's kernel would answer a copy a second time.
    assert_eq!(host_frames(&out), vec![]);
    let neighbor = switch.neighbor(0, IpAddr::V4(v4("10.0.0.2"))).unwrap();
    assert_eq!((neighbor.mac, neighbor.state), (Some(H0), NeighborState::Stale));
    // A request for someone else's address teaches nothing new and is not answered.
    out.clear();
    let other = frame(
        EthernetAddress::BROADCAST,
        H1,
        None,
        EtherType::Arp,
        &arp(Operation::Request, H1, "10.0.0.9", EthernetAddress::ZERO, "10.0.0.7"),
    );
    assert_eq!(switch.process(NOW, 0, &other, &mut out), Disposition::Punted);
    assert_eq!(port_frames(&out), vec![]);
    assert_eq!(switch.neighbor(0, IpAddr::V4(v4("10.0.0.9"))), None);
}

#[test]
fn routing_resolves_next_hop_with_arp_then_forwards_with_ttl_decrement() {
    let mut switch = l3_switch();
    let mut out = Output::new();
    let ip = udp_packet("10.0.1.2", "10.0.0.2", 1234, 64);
    let sent = frame(R1, H1, None, EtherType::Ipv4, &ip);
    assert_eq!(switch.process(NOW, 1, &sent, &mut out), Disposition::Held);
    let request = frame(
        EthernetAddress::BROADCAST,
        R0,
        None,
        EtherType::Arp,
        &arp(Operation::Request, R0, "10.0.0.1", EthernetAddress::ZERO, "10.0.0.2"),
    );
    assert_eq!(emitted(&out), vec![(Egress::Port(0), request)]);
    assert_eq!(switch.neighbor(0, IpAddr::V4(v4("10.0.0.2"))).unwrap().state, NeighborState::Incomplete);
    assert_eq!(switch.drop_counters().total(), 0, "held, not dropped");
    // A second packet while resolving sends no second request, and waits too.
    out.clear();
    assert_eq!(switch.process(NOW, 1, &sent, &mut out), Disposition::Held);
    assert!(out.is_empty());
    // The reply resolves it, and what waited leaves, in order.
    let reply = frame(R0, H0, None, EtherType::Arp, &arp(Operation::Reply, H0, "10.0.0.2", R0, "10.0.0.1"));
    assert_eq!(switch.process(NOW + 1, 0, &reply, &mut out), Disposition::Punted);
    let forwarded = frame(H0, R0, None, EtherType::Ipv4, &routed(&ip));
    assert_eq!(port_frames(&out), vec![(Egress::Port(0), forwarded.clone()), (Egress::Port(0), forwarded)]);
    let neighbor = switch.neighbor(0, IpAddr::V4(v4("10.0.0.2"))).unwrap();
    assert_eq!((neighbor.mac, neighbor.state, neighbor.updated), (Some(H0), NeighborState::Reachable, NOW + 1));
    assert!(
        switch
            .drain_events()
            .any(|event| event == Event::NeighborResolved { rif: 0, ip: IpAddr::V4(v4("10.0.0.2")), mac: H0 })
    );
    out.clear();
    assert_eq!(switch.process(NOW + 2, 1, &sent, &mut out), Disposition::Forwarded);
    assert_eq!(emitted(&out), vec![(Egress::Port(0), frame(H0, R0, None, EtherType::Ipv4, &routed(&ip)))]);
}

#[test]
fn ecmp_spreads_flows_and_keeps_each_on_one_path() {
    let mut switch = l3_switch();
    switch.set_neighbor(0, IpAddr::V4(v4("10.0.0.2")), H0).unwrap();
    switch.set_neighbor(1, IpAddr::V4(v4("10.0.1.2")), H1).unwrap();
    let mut out = Output::new();
    let mut per_port = [0u32; 2];
    for sport in 0..200u16 {
        let ip = udp_packet("192.168.100.2", "172.16.5.5", 10_000 + sport, 64);
        let sent = frame(R2, H2, None, EtherType::Ipv4, &ip);
        for _ in 0..2 {
            out.clear();
            assert_eq!(switch.process(NOW, 2, &sent, &mut out), Disposition::Forwarded);
        }
        let (to, bytes) = emitted(&out).remove(0);
        let Egress::Port(port) = to else { panic!("{to:?}") };
        let next_hop_mac = if port == 0 { H0 } else { H1 };
        let rif_mac = if port == 0 { R0 } else { R1 };
        assert_eq!(bytes, frame(next_hop_mac, rif_mac, None, EtherType::Ipv4, &routed(&ip)));
        per_port[usize::from(port)] += 1;
    }
    assert!(per_port[0] > 60 && per_port[1] > 60, "both members carry flows: {per_port:?}");
}

/// The egress port each of 256 UDP flows takes through the ECMP group.
fn ecmp_choices(switch: &mut Switch) -> Vec<PortId> {
    switch.set_neighbor(0, IpAddr::V4(v4("10.0.0.2")), H0).unwrap();
    switch.set_neighbor(1, IpAddr::V4(v4("10.0.1.2")), H1).unwrap();
    let mut out = Output::new();
    (0..256u16)
        .map(|sport| {
            out.clear();
            let sent =
                frame(R2, H2, None, EtherType::Ipv4, &udp_packet("192.168.100.2", "172.16.5.5", 20_000 + sport, 64));
            assert_eq!(switch.process(NOW, 2, &sent, &mut out), Disposition::Forwarded);
            ports_of(&out)[0]
        })
        .collect()
}

#[test]
fn switches_with_different_seeds_spread_the_same_flows_differently() {
    let seeded = |seed| l3_switch_with(SwitchConfig { hash_seed: seed, ..SwitchConfig::default() });
    let a = ecmp_choices(&mut seeded(0x1111));
    let b = ecmp_choices(&mut seeded(0x2222));
    // The same seed is deterministic.
    assert_eq!(a, ecmp_choices(&mut seeded(0x1111)));
    let differing = a.iter().zip(&b).filter(|(x, y)| x != y).count();
    // Independent hashes disagree on about half of the flows; polarised ones on none.
    assert!((64..=192).contains(&differing), "{differing} of 256 flows changed member");
    for choices in [&a, &b] {
        let on_zero = choices.iter().filter(|&&port| port == 0).count();
        assert!((80..=176).contains(&on_zero), "both members carry flows: {on_zero} of 256 on port 0");
    }
}

#[test]
fn dlb_from_the_traffic_manager_steers_new_flows_off_a_loaded_member() {
    use crate::node::{QosTrafficManager, TrafficManager};
    use qos::dlb::{DlbConfig, DlbMode};
    use qos::tm::{PortConfig as TmPort, TmConfig};
    let config = TmConfig { ports: (0..4).map(|_| TmPort::new(1_000_000_000)).collect(), ..TmConfig::default() };
    let mut tm = QosTrafficManager::new(&config).unwrap();
    // 100 frames wait on port 0 (member 0): its drain time is its cost.
    let meta = FrameMeta { ingress: Some(2), len: 1000, ..FrameMeta::default() };
    for _ in 0..100 {
        tm.enqueue(NOW, 0, FrameRef::DANGLING, &meta).unwrap();
    }
    let mut switch = l3_switch();
    switch.set_path_quality(Some(Box::new(tm.dlb(DlbConfig { mode: DlbMode::Flowlet, ..DlbConfig::default() }))));
    let choices = ecmp_choices(&mut switch);
    assert!(choices.iter().all(|&port| port == 1), "every new flowlet on the idle member (port 1)");
    // Static mode keeps the seeded hash: both members carry flows.
    switch.set_path_quality(Some(Box::new(tm.dlb(DlbConfig::default()))));
    let choices = ecmp_choices(&mut switch);
    assert!(choices.contains(&0) && choices.contains(&1));
}

#[test]
fn the_path_quality_hook_overrides_the_static_choice() {
    /// Sends every flow to member 1 and records what it was asked.
    struct AlwaysSecond(std::sync::Arc<std::sync::Mutex<Vec<(u64, NextHopGroupId, usize)>>>);
    impl PathQuality for AlwaysSecond {
        fn choose(
            &mut self,
            now: u64,
            group: NextHopGroupId,
            _hash: u32,
            members: usize,
            _static: usize,
            member_port: &dyn Fn(usize) -> Option<PortId>,
        ) -> usize {
            // The members of the test's group leave by ports 0 and 1.
            assert_eq!((member_port(0), member_port(1), member_port(2)), (Some(0), Some(1), None));
            self.0.lock().unwrap().push((now, group, members));
            1
        }
    }
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut switch = l3_switch();
    switch.set_path_quality(Some(Box::new(AlwaysSecond(asked.clone()))));
    let choices = ecmp_choices(&mut switch);
    assert!(choices.iter().all(|&port| port == 1), "every flow on member 1 (port 1)");
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 256);
    assert!(asked.iter().all(|&call| call == (NOW, 1, 2)));
    // Removing the hook restores the static hash.
    switch.set_path_quality(None);
    assert!(ecmp_choices(&mut switch).contains(&0));
}

/// `l3_switch` plus VRF 7 on routed port 4 (RIF 4), with the same
/// 10.0.0.0/24 subnet as RIF 0 in the default VRF, its own address
/// 10.0.0.1 there too, and 172.16.0.0/16 through 10.0.0.2 on RIF 4.
fn two_vrf_switch() -> Switch {
    const VRF: VrfId = 7;
    let mut switch = l3_switch();
    switch.create_vrf(VRF).unwrap();
    switch.set_port(4, PortConfig { pvid: 0, ..PortConfig::default() }).unwrap();
    let rif = RouterInterface { kind: RifKind::Port(4), mac: R1, mtu: 1500, admin_up: true, vrf: VRF };
    switch.set_router_interface(4, rif).unwrap();
    switch.set_route_in(VRF, net("10.0.0.1/32"), RouteTarget::Local).unwrap();
    switch.set_route_in(VRF, net("10.0.0.0/24"), RouteTarget::Connected(4)).unwrap();
    switch.set_next_hop(9, NextHop { rif: 4, ip: IpAddr::V4(v4("10.0.0.2")) }).unwrap();
    switch.set_route_in(VRF, net("172.16.0.0/16"), RouteTarget::NextHop(9)).unwrap();
    switch.set_neighbor(0, IpAddr::V4(v4("10.0.0.2")), H0).unwrap();
    switch.set_neighbor(1, IpAddr::V4(v4("10.0.1.2")), H1).unwrap();
    switch.set_neighbor(4, IpAddr::V4(v4("10.0.0.2")), H2).unwrap();
    switch
}

#[test]
fn each_vrf_routes_in_its_own_table() {
    let mut switch = two_vrf_switch();
    let mut out = Output::new();
    // The same destination: VRF 7's next hop from port 4, the default VRF's group from port 0.
    let ip = udp_packet("10.0.0.2", "172.16.5.5", 1000, 64);
    assert_eq!(switch.process(NOW, 4, &frame(R1, H2, None, EtherType::Ipv4, &ip), &mut out), Disposition::Forwarded);
    assert_eq!(emitted(&out), vec![(Egress::Port(4), frame(H2, R1, None, EtherType::Ipv4, &routed(&ip)))]);
    out.clear();
    assert_eq!(switch.process(NOW, 0, &frame(R0, H0, None, EtherType::Ipv4, &ip), &mut out), Disposition::Forwarded);
    assert!(matches!(ports_of(&out)[..], [0] | [1]));
    // 10.0.1.0/24 is only in the default VRF: from VRF 7 there is no route.
    out.clear();
    let ip = udp_packet("10.0.0.2", "10.0.1.2", 1000, 64);
    assert_eq!(
        switch.process(NOW, 4, &frame(R1, H2, None, EtherType::Ipv4, &ip), &mut out),
        Disposition::Dropped(DropReason::NoRoute)
    );
    // Only the ICMP net unreachable leaves, back into VRF 7.
    assert_eq!(ports_of(&out), vec![4]);
    assert_eq!(switch.lookup_route_in(7, IpAddr::V4(v4("10.0.1.2"))), None);
    assert_eq!(switch.lookup_route(IpAddr::V4(v4("10.0.1.2"))), Some(RouteTarget::Connected(1)));
    assert_eq!(switch.routes_in(7).count(), 3);
    assert_eq!(switch.vrfs().collect::<Vec<_>>(), vec![DEFAULT_VRF, 7]);
}

#[test]
fn the_switch_answers_in_the_vrf_the_request_came_from() {
    let mut switch = two_vrf_switch();
    let mut out = Output::new();
    let echo = Icmpv4Repr::EchoRequest { ident: 7, seq_no: 3, data: b"vrf" };
    let mut message = vec![0; echo.buffer_len()];
    echo.emit(&mut Icmpv4Packet::new_unchecked(&mut message[..]));
    let ip = ipv4(v4("10.0.0.2"), v4("10.0.0.1"), IpProtocol::Icmp, 64, &message);
    // In the default VRF 10.0.0.2 is behind port 0 (H0); in VRF 7, behind port 4 (H2).
    assert_eq!(switch.process(NOW, 4, &frame(R1, H2, None, EtherType::Ipv4, &ip), &mut out), Disposition::Consumed);
    let got = emitted(&out);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, Egress::Port(4));
    let reply = EthernetFrame::new_checked(&got[0].1[..]).unwrap();
    assert_eq!((reply.dst_addr(), reply.src_addr()), (H2, R1));
    // ARP for the address is answered on RIF 4 too: it is local in VRF 7.
    out.clear();
    let request = arp(Operation::Request, H2, "10.0.0.2", EthernetAddress::ZERO, "10.0.0.1");
    switch.process(NOW, 4, &frame(EthernetAddress::BROADCAST, H2, None, EtherType::Arp, &request), &mut out);
    assert_eq!(ports_of(&out), vec![4]);
}

#[test]
fn vrfs_are_created_and_removed_with_their_references_checked() {
    let mut switch = two_vrf_switch();
    assert_eq!(switch.create_vrf(7), Err(TableError::InUse));
    assert!(matches!(switch.create_vrf(SwitchConfig::default().max_vrfs), Err(TableError::Invalid(_))));
    assert!(matches!(switch.remove_vrf(DEFAULT_VRF), Err(TableError::Invalid(_))));
    assert_eq!(switch.remove_vrf(8), Err(TableError::NotFound));
    let rif = RouterInterface { kind: RifKind::Port(5), mac: R0, mtu: 1500, admin_up: true, vrf: 8 };
    switch.set_port(5, PortConfig { pvid: 0, ..PortConfig::default() }).unwrap();
    assert!(matches!(switch.set_router_interface(5, rif), Err(TableError::Invalid(_))));
    assert!(matches!(switch.set_route_in(8, net("10.0.0.0/8"), RouteTarget::Drop), Err(TableError::Invalid(_))));
    // In use while it has routes or router interfaces.
    assert_eq!(switch.remove_vrf(7), Err(TableError::InUse));
    for prefix in ["10.0.0.1/32", "10.0.0.0/24", "172.16.0.0/16"] {
        switch.remove_route_in(7, net(prefix)).unwrap();
    }
    assert_eq!(switch.remove_vrf(7), Err(TableError::InUse));
    switch.remove_neighbor(4, IpAddr::V4(v4("10.0.0.2"))).unwrap();
    switch.remove_next_hop(9).unwrap();
    switch.remove_router_interface(4).unwrap();
    switch.remove_vrf(7).unwrap();
    assert!(!switch.vrf_exists(7));
    // The default VRF kept its 10.0.0.1 through all of it.
    assert_eq!(switch.lookup_route(IpAddr::V4(v4("10.0.0.1"))), Some(RouteTarget::Local));
}

#[test]
fn sources_in_this_network_are_punted_but_never_forwarded() {
    let mut switch = l3_switch();
    switch.set_neighbor(0, IpAddr::V4(v4("10.0.0.2")), H0).unwrap();
    let mut out = Output::new();
    // RFC 1812 5.3.7: 0.0.0.0/8 is no source to forward from.
    for src in ["0.0.0.0", "0.1.2.3"] {
        out.clear();
        let ip = udp_packet(src, "10.0.0.2", 68, 64);
        assert_eq!(
            switch.process(NOW, 1, &frame(R1, H1, None, EtherType::Ipv4, &ip), &mut out),
            Disposition::Dropped(DropReason::MartianSource),
            "from {src}"
        );
        assert!(ports_of(&out).is_empty());
    }
    // A DHCP client's broadcast still reaches the host.
    out.clear();
    let discover = udp_packet("0.0.0.0", "255.255.255.255", 68, 64);
    let sent = frame(EthernetAddress::BROADCAST, H1, None, EtherType::Ipv4, &discover);
    assert_eq!(switch.process(NOW, 1, &sent, &mut out), Disposition::Punted);
}

#[test]
fn datagrams_the_switch_originates_get_ids_that_do_not_repeat() {
    let mut switch = l3_switch();
    switch.set_neighbor(1, IpAddr::V4(v4("10.0.1.2")), H1).unwrap();
    let mut out = Output::new();
    let echo = Icmpv4Repr::EchoRequest { ident: 7, seq_no: 3, data: b"id" };
    let mut message = vec![0; echo.buffer_len()];
    echo.emit(&mut Icmpv4Packet::new_unchecked(&mut message[..]));
    let ping = ipv4(v4("10.0.1.2"), v4("10.0.1.1"), IpProtocol::Icmp, 64, &message);
    let expiring = udp_packet("10.0.1.2", "172.16.0.9", 5, 1);
    let mut ids = Vec::new();
    for ip in [&ping, &expiring, &ping] {
        out.clear();
        switch.process(NOW, 1, &frame(R1, H1, None, EtherType::Ipv4, ip), &mut out);
        let got = emitted(&out);
        let reply = Ipv4Packet::new_checked(&got[0].1[14..]).unwrap();
        assert!(!reply.dont_frag());
        ids.push(reply.ident());
    }
    assert_eq!(ids, vec![1, 2, 3], "RFC 6864 4.1: DF clear, so no ID repeats");
}

#[test]
fn ttl_expiry_sends_time_exceeded_from_the_ingress_interface() {
    let mut switch = l3_switch();
    switch.set_neighbor(1, IpAddr::V4(v4("10.0.1.2")), H1).unwrap();
    let mut out = Output::new();
    let ip = udp_packet("10.0.1.2", "172.16.0.9", 5, 1);
    assert_eq!(
        switch.process(NOW, 1, &frame(R1, H1, None, EtherType::Ipv4, &ip), &mut out),
        Disposition::Dropped(DropReason::TtlExpired)
    );
    let icmp = Icmpv4Repr::TimeExceeded { reason: TimeExceeded::TtlExpired, invoking_packet: &ip };
    let mut message = vec![0; icmp.buffer_len()];
    icmp.emit(&mut Icmpv4Packet::new_unchecked(&mut message[..]));
    let mut expected_ip = ipv4(v4("10.0.1.1"), v4("10.0.1.2"), IpProtocol::Icmp, 64, &message);
    // Our packets carry no DF, and IDs from a counter (RFC 6864 4.1): the first is 1.
    let repr = Ipv4Repr {
        ident: 1,
        dont_frag: false,
        ..Ipv4Repr::parse(&Ipv4Packet::new_checked(&expected_ip[..]).unwrap()).unwrap()
    };
    repr.emit(&mut Ipv4Packet::new_unchecked(&mut expected_ip[..]));
    assert_eq!(emitted(&out), vec![(Egress::Port(1), frame(H1, R1, None, EtherType::Ipv4, &expected_ip))]);
    assert_eq!(switch.drop_counters()[DropReason::TtlExpired], 1);
    assert!(icmpv4::MAX_ERROR_QUOTE >= ip.len());
}

#[test]
fn echo_to_own_address_is_answered_and_other_traffic_punted() {
    let mut switch = l3_switch();
    switch.set_neighbor(2, IpAddr::V4(v4("192.168.100.2")), H2).unwrap();
    let mut out = Output::new();
    let echo = Icmpv4Repr::EchoRequest { ident: 7, seq_no: 3, data: b"ping data" };
    let mut message = vec![0; echo.buffer_len()];
    echo.emit(&mut Icmpv4Packet::new_unchecked(&mut message[..]));
    let ip = ipv4(v4("192.168.100.2"), v4("192.168.100.1"), IpProtocol::Icmp, 64, &message);
    // From the access port of VLAN 100: the reply goes back untagged, bridged to H2.
    switch.process(NOW, 2, &frame(R2, H2, None, EtherType::Ipv4, &ip), &mut out);
    let got = emitted(&out);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, Egress::Port(2));
    let reply = EthernetFrame::new_checked(&got[0].1[..]).unwrap();
    assert_eq!((reply.dst_addr(), reply.src_addr()), (H2, R2));
    let packet = Ipv4Packet::new_checked(reply.payload()).unwrap();
    assert_eq!((packet.src_addr(), packet.dst_addr()), (v4("192.168.100.1"), v4("192.168.100.2")));
    assert!(packet.verify_checksum());
    let icmp = Icmpv4Packet::new_checked(packet.payload()).unwrap();
    assert_eq!(Icmpv4Repr::parse(&icmp).unwrap(), Icmpv4Repr::EchoReply { ident: 7, seq_no: 3, data: b"ping data" });
    // TCP to the switch (BGP) goes to the host, tag removed.
    out.clear();
    let tcp = ipv4(v4("192.168.100.2"), v4("192.168.100.1"), IpProtocol::Tcp, 64, &[0; 20]);
    let tagged = frame(R2, H2, Some(100), EtherType::Ipv4, &tcp);
    assert_eq!(switch.process(NOW, 3, &tagged, &mut out), Disposition::Punted);
    assert_eq!(
        emitted(&out),
        vec![(
            Egress::Host { port: 3, rif: Some(2), reason: PuntReason::Ip2Me },
            frame(R2, H2, None, EtherType::Ipv4, &tcp)
        )]
    );
}

#[test]
fn routed_into_an_svi_follows_the_fdb_and_tags_on_trunks() {
    let mut switch = l3_switch();
    switch.set_neighbor(2, IpAddr::V4(v4("192.168.100.7")), mac(7)).unwrap();
    let mut out = Output::new();
    let ip = udp_packet("10.0.0.2", "192.168.100.7", 99, 20);
    let sent = frame(R0, H0, None, EtherType::Ipv4, &ip);
    // MAC unknown in the VLAN: flooded to its members.
    assert_eq!(switch.process(NOW, 0, &sent, &mut out), Disposition::Forwarded);
    assert_eq!(ports_of(&out), vec![2, 3]);
    // Once learned behind the trunk: one tagged copy.
    switch.set_fdb_entry(100, mac(7), FdbDest::Port(3), FdbKind::Dynamic, NOW).unwrap();
    out.clear();
    switch.process(NOW, 0, &sent, &mut out);
    assert_eq!(emitted(&out), vec![(Egress::Port(3), frame(mac(7), R2, Some(100), EtherType::Ipv4, &routed(&ip)))]);
}

#[test]
fn drops_are_classified() {
    let mut switch = l3_switch();
    switch.set_route(net("10.9.0.0/16"), RouteTarget::Drop).unwrap();
    switch.set_route(net("10.8.0.0/16"), RouteTarget::Punt).unwrap();
    let mut out = Output::new();
    let send = |switch: &mut Switch, out: &mut Output, dst: EthernetAddress, ip: &[u8]| {
        switch.process(NOW, 1, &frame(dst, H1, None, EtherType::Ipv4, ip), out)
    };
    assert_eq!(
        send(&mut switch, &mut out, R1, &udp_packet("10.0.1.2", "11.0.0.1", 1, 9)),
        Disposition::Dropped(DropReason::NoRoute)
    );
    assert_eq!(
        send(&mut switch, &mut out, R1, &udp_packet("10.0.1.2", "10.9.0.1", 1, 9)),
        Disposition::Dropped(DropReason::Blackhole)
    );
    assert_eq!(send(&mut switch, &mut out, R1, &udp_packet("10.0.1.2", "10.8.0.1", 1, 9)), Disposition::Punted);
    assert_eq!(
        send(&mut switch, &mut out, H0, &udp_packet("10.0.1.2", "10.0.0.2", 1, 9)),
        Disposition::Dropped(DropReason::NotRouterMac)
    );
    let mut bad = udp_packet("10.0.1.2", "10.0.0.2", 1, 9);
    bad[10] ^= 0xff;
    assert_eq!(send(&mut switch, &mut out, R1, &bad), Disposition::Dropped(DropReason::BadChecksum));
    assert_eq!(send(&mut switch, &mut out, R1, &bad[..15]), Disposition::Dropped(DropReason::Malformed));
    let big = ipv4(v4("10.0.1.2"), v4("10.0.0.2"), IpProtocol::Udp, 9, &[0; 1600]);
    switch.set_neighbor(0, IpAddr::V4(v4("10.0.0.2")), H0).unwrap();
    out.clear();
    assert_eq!(send(&mut switch, &mut out, R1, &big), Disposition::Dropped(DropReason::MtuExceeded));
    // DF was set: the sender learns the MTU (RFC 1191), if we can reach it.
    switch.set_neighbor(1, IpAddr::V4(v4("10.0.1.2")), H1).unwrap();
    out.clear();
    send(&mut switch, &mut out, R1, &big);
    let got = emitted(&out);
    let packet = Ipv4Packet::new_checked(&got[0].1[14..]).unwrap();
    let icmp = Icmpv4Packet::new_checked(packet.payload()).unwrap();
    assert_eq!(
        (icmp.msg_type(), icmp.msg_code(), icmp.next_hop_mtu()),
        (icmpv4::Icmpv4Message::DstUnreachable, 4, 1500)
    );
    assert_eq!(switch.port_counters(1).unwrap().rx_drops, 7);
}

#[test]
fn neighbor_state_machine_runs_on_poll() {
    let config = SwitchConfig::default();
    let mut switch = l3_switch();
    let mut out = Output::new();
    let ip = IpAddr::V4(v4("10.0.0.5"));
    let sent = frame(R1, H1, None, EtherType::Ipv4, &udp_packet("10.0.1.2", "10.0.0.5", 1, 9));
    switch.process(NOW, 1, &sent, &mut out);
    // Retransmissions each retrans interval, then Failed.
    let mut requests = 1;
    let mut t = NOW;
    while switch.neighbor(0, ip).unwrap().state == NeighborState::Incomplete {
        t += config.neighbor_retrans_ns;
        out.clear();
        switch.poll(t, &mut out);
        requests += ports_of(&out).iter().filter(|&&port| port == 0).count();
        assert!(t < NOW + 10 * SECOND);
    }
    assert_eq!(requests, usize::from(config.neighbor_max_probes));
    assert_eq!(switch.neighbor(0, ip).unwrap().state, NeighborState::Failed);
    // Failed entries are retried by traffic, and then resolved by a reply.
    out.clear();
    switch.process(t + config.neighbor_retrans_ns, 1, &sent, &mut out);
    assert_eq!(out.len(), 1, "a new request");
    let reply = frame(R0, H0, None, EtherType::Arp, &arp(Operation::Reply, H0, "10.0.0.5", R0, "10.0.0.1"));
    t += 2 * config.neighbor_retrans_ns;
    switch.process(t, 0, &reply, &mut out);
    assert_eq!(switch.neighbor(0, ip).unwrap().state, NeighborState::Reachable);
    // Reachable turns Stale after the reachable time.
    t += config.neighbor_reachable_ns;
    switch.poll(t, &mut out);
    assert_eq!(switch.neighbor(0, ip).unwrap().state, NeighborState::Stale);
    // Traffic to a Stale neighbour still flows, and starts a unicast probe.
    out.clear();
    assert_eq!(switch.process(t, 1, &sent, &mut out), Disposition::Forwarded);
    assert_eq!(switch.neighbor(0, ip).unwrap().state, NeighborState::Probe);
    out.clear();
    switch.poll(t + SECOND, &mut out);
    let probe = frame(
        H0,
        R0,
        None,
        EtherType::Arp,
        &arp(Operation::Request, R0, "10.0.0.1", EthernetAddress::ZERO, "10.0.0.5"),
    );
    // (Port 1 resolves 10.0.1.2, the source that was told 10.0.0.5 was unreachable.)
    let out_of_0: Vec<_> = emitted(&out).into_iter().filter(|(to, _)| *to == Egress::Port(0)).collect();
    assert_eq!(out_of_0, vec![(Egress::Port(0), probe)]);
    // Unanswered probes: Failed, reported expired.
    for step in 2..=5 {
        switch.poll(t + step * SECOND, &mut out);
    }
    assert_eq!(switch.neighbor(0, ip).unwrap().state, NeighborState::Failed);
    assert!(switch.drain_events().any(|event| event == Event::NeighborExpired { rif: 0, ip }));
    // Static neighbours never change.
    switch.set_neighbor(0, ip, H0).unwrap();
    switch.poll(t + 10_000 * SECOND, &mut out);
    let entry = switch.neighbor(0, ip).unwrap();
    assert!(entry.is_static && entry.state == NeighborState::Reachable);
}

#[test]
fn a_failed_neighbour_is_retried_by_traffic_after_one_second_and_that_packet_is_delivered() {
    // A host that was not up yet when first asked (as in a lab being
    // deployed): resolution fails. Linux's back-off, not the 30 s reachable
    // time, holds off the next try, and the packet that starts it waits.
    let config = SwitchConfig::default();
    let mut switch = l3_switch();
    let mut out = Output::new();
    let first = udp_packet("10.0.1.2", "10.0.0.5", 1, 9);
    switch.set_neighbor(1, IpAddr::V4(v4("10.0.1.2")), H1).unwrap();
    assert_eq!(switch.process(NOW, 1, &frame(R1, H1, None, EtherType::Ipv4, &first), &mut out), Disposition::Held);
    let mut t = NOW;
    while switch.neighbor(0, IpAddr::V4(v4("10.0.0.5"))).unwrap().state != NeighborState::Failed {
        t += config.neighbor_retrans_ns;
        switch.poll(t, &mut out);
        assert!(t < NOW + 10 * SECOND);
    }
    let failed_at = t;
    // One second later the next packet sends exactly one request, and waits.
    let second = udp_packet("10.0.1.2", "10.0.0.5", 2, 9);
    out.clear();
    let retry = switch.process(failed_at + SECOND, 1, &frame(R1, H1, None, EtherType::Ipv4, &second), &mut out);
    assert_eq!(retry, Disposition::Held);
    let request = frame(
        EthernetAddress::BROADCAST,
        R0,
        None,
        EtherType::Arp,
        &arp(Operation::Request, R0, "10.0.0.1", EthernetAddress::ZERO, "10.0.0.5"),
    );
    assert_eq!(emitted(&out), vec![(Egress::Port(0), request)]);
    // The host is up now and answers: the waiting packet leaves, unchanged but for the TTL.
    out.clear();
    let reply = frame(R0, H0, None, EtherType::Arp, &arp(Operation::Reply, H0, "10.0.0.5", R0, "10.0.0.1"));
    switch.process(failed_at + SECOND + 1, 0, &reply, &mut out);
    assert_eq!(port_frames(&out), vec![(Egress::Port(0), frame(H0, R0, None, EtherType::Ipv4, &routed(&second)))]);
}

pub(crate) fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, hop_limit: u8, icmp: &Icmpv6Repr<'_>) -> Vec<u8> {
    let repr = Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::Icmpv6,
        payload_len: icmp.buffer_len(),
        hop_limit,
        dscp: 0,
        ecn: Ecn::NotEct,
        flow_label: 0,
    };
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]));
    icmp.emit(&mut Icmpv6Packet::new_unchecked(&mut buf[40..]), src, dst);
    buf
}

#[test]
fn neighbor_solicitation_for_own_address_gets_an_advertisement() {
    let mut switch = l3_switch();
    let mut out = Output::new();
    let solicit = Icmpv6Repr::NeighborSolicit { target_addr: v6("2001:db8::1"), source_lladdr: Some(H0) };
    let group = v6("ff02::1:ff00:1");
    let ip = ipv6(v6("2001:db8::2"), group, 255, &solicit);
    let sent = frame(EthernetAddress([0x33, 0x33, 0xff, 0, 0, 1]), H0, None, EtherType::Ipv6, &ip);
    assert_eq!(switch.process(NOW, 0, &sent, &mut out), Disposition::Consumed);
    let advert = Icmpv6Repr::NeighborAdvert {
        router_flag: true,
        solicited_flag: true,
        override_flag: true,
        target_addr: v6("2001:db8::1"),
        target_lladdr: Some(R0),
    };
    let expected = frame(H0, R0, None, EtherType::Ipv6, &ipv6(v6("2001:db8::1"), v6("2001:db8::2"), 255, &advert));
    assert_eq!(port_frames(&out), vec![(Egress::Port(0), expected)]);
    assert_eq!(host_frames(&out), vec![], "answered here, so not copied for the kernel to answer again");
    let neighbor = switch.neighbor(0, IpAddr::V6(v6("2001:db8::2"))).unwrap();
    assert_eq!((neighbor.mac, neighbor.state), (Some(H0), NeighborState::Stale));
    // Hop limit below 255: forged or routed, dropped (RFC 4861 7.1.1).
    out.clear();
    let routed_ns = frame(R0, H0, None, EtherType::Ipv6, &ipv6(v6("2001:db8::2"), group, 254, &solicit));
    assert_eq!(switch.process(NOW, 0, &routed_ns, &mut out), Disposition::Dropped(DropReason::Malformed));
}

#[test]
fn ipv6_forwarding_resolves_with_ns_and_decrements_hop_limit() {
    let mut switch = l3_switch();
    let mut out = Output::new();
    let echo = Icmpv6Repr::EchoRequest { ident: 1, seq_no: 2, data: b"v6" };
    let ip = ipv6(v6("2001:db8::2"), v6("2001:db8:ff::9"), 30, &echo);
    let sent = frame(R0, H0, None, EtherType::Ipv6, &ip);
    assert_eq!(switch.process(NOW, 0, &sent, &mut out), Disposition::Held);
    let solicit = Icmpv6Repr::NeighborSolicit { target_addr: v6("2001:db8:1::2"), source_lladdr: Some(R1) };
    let expected_ns = ipv6(v6("2001:db8:1::1"), v6("ff02::1:ff00:2"), 255, &solicit);
    assert_eq!(
        emitted(&out),
        vec![(
            Egress::Port(1),
            frame(EthernetAddress([0x33, 0x33, 0xff, 0, 0, 2]), R1, None, EtherType::Ipv6, &expected_ns)
        )]
    );
    let advert = Icmpv6Repr::NeighborAdvert {
        router_flag: false,
        solicited_flag: true,
        override_flag: true,
        target_addr: v6("2001:db8:1::2"),
        target_lladdr: Some(H1),
    };
    let na = ipv6(v6("2001:db8:1::2"), v6("2001:db8:1::1"), 255, &advert);
    out.clear();
    assert_eq!(switch.process(NOW, 1, &frame(R1, H1, None, EtherType::Ipv6, &na), &mut out), Disposition::Punted);
    assert_eq!(switch.neighbor(1, IpAddr::V6(v6("2001:db8:1::2"))).unwrap().state, NeighborState::Reachable);
    let mut expected = ip.clone();
    expected[7] = 29;
    let forwarded = (Egress::Port(1), frame(H1, R1, None, EtherType::Ipv6, &expected));
    assert_eq!(port_frames(&out), vec![forwarded.clone()], "the held packet leaves on the advertisement");
    out.clear();
    assert_eq!(switch.process(NOW, 0, &sent, &mut out), Disposition::Forwarded);
    assert_eq!(emitted(&out), vec![forwarded]);
    // Hop limit 1: ICMPv6 time exceeded back to the sender.
    switch.set_neighbor(0, IpAddr::V6(v6("2001:db8::2")), H0).unwrap();
    let last_hop = ipv6(v6("2001:db8::2"), v6("2001:db8:ff::9"), 1, &echo);
    out.clear();
    assert_eq!(
        switch.process(NOW, 0, &frame(R0, H0, None, EtherType::Ipv6, &last_hop), &mut out),
        Disposition::Dropped(DropReason::TtlExpired)
    );
    let got = emitted(&out);
    let packet = Ipv6Packet::new_checked(&got[0].1[14..]).unwrap();
    assert_eq!((packet.src_addr(), packet.dst_addr()), (v6("2001:db8::1"), v6("2001:db8::2")));
    let icmp = Icmpv6Packet::new_checked(packet.payload()).unwrap();
    assert_eq!(icmp.msg_type(), Icmpv6Message::TimeExceeded);
    assert!(icmp.verify_checksum(packet.src_addr(), packet.dst_addr()));
    // Echo to our own address is answered.
    out.clear();
    let ping = ipv6(v6("2001:db8::2"), v6("2001:db8::1"), 64, &echo);
    assert_eq!(switch.process(NOW, 0, &frame(R0, H0, None, EtherType::Ipv6, &ping), &mut out), Disposition::Consumed);
    let reply = Icmpv6Repr::EchoReply { ident: 1, seq_no: 2, data: b"v6" };
    assert_eq!(
        emitted(&out)[0].1,
        frame(H0, R0, None, EtherType::Ipv6, &ipv6(v6("2001:db8::1"), v6("2001:db8::2"), 64, &reply))
    );
}

#[test]
fn table_references_are_enforced() {
    let mut switch = l3_switch();
    assert_eq!(switch.remove_next_hop(1), Err(TableError::InUse));
    assert_eq!(switch.remove_next_hop_group(1), Err(TableError::InUse));
    assert_eq!(switch.remove_router_interface(0), Err(TableError::InUse));
    switch.remove_route(net("172.16.0.0/16")).unwrap();
    switch.remove_next_hop_group(1).unwrap();
    switch.remove_next_hop(1).unwrap();
    assert_eq!(
        switch.set_route(net("1.0.0.0/8"), RouteTarget::NextHop(1)),
        Err(TableError::Invalid("no such next hop"))
    );
    assert_eq!(switch.lookup_route(IpAddr::V4(v4("10.0.0.77"))), Some(RouteTarget::Connected(0)));
    assert_eq!(switch.lookup_route(IpAddr::V4(v4("10.0.0.1"))), Some(RouteTarget::Local));
    let count = switch.route_count();
    assert_eq!(switch.routes().count(), count);
    assert!(
        switch.routes().any(|(prefix, target)| prefix == net("2001:db8:ff::/48") && target == RouteTarget::NextHop(3))
    );
}

proptest::proptest! {
    #[test]
    fn random_l3_payloads_never_panic(payload in proptest::collection::vec(proptest::num::u8::ANY, 0..120), ethertype in proptest::sample::select(vec![EtherType::Ipv4, EtherType::Ipv6, EtherType::Arp]), port in 0u16..3) {
        let mut switch = l3_switch();
        let mut out = Output::new();
        let dst = [R0, R1, R2][usize::from(port)];
        let disposition = switch.process(NOW, port, &frame(dst, H1, None, ethertype, &payload), &mut out);
        if let Disposition::Dropped(reason) = disposition {
            proptest::prop_assert_eq!(switch.drop_counters()[reason], 1);
        }
    }

    #[test]
    fn mutated_packets_never_panic(index in 0usize..60, value in proptest::num::u8::ANY, cut in 0usize..70) {
        let mut switch = l3_switch();
        switch.set_neighbor(0, IpAddr::V4(v4("10.0.0.2")), H0).unwrap();
        let mut out = Output::new();
        let mut sent = frame(R1, H1, None, EtherType::Ipv4, &udp_packet("10.0.1.2", "10.0.0.2", 1, 9));
        let index = index % sent.len();
        sent[index] = value;
        sent.truncate(sent.len() - cut.min(sent.len()));
        let _ = switch.process(NOW, 1, &sent, &mut out);
    }
}

#[test]
fn only_link_local_multicast_reaches_the_host() {
    let mut switch = l3_switch();
    let mut out = Output::new();
    let ospf = ipv4(v4("10.0.0.2"), v4("224.0.0.5"), IpProtocol::Unknown(89), 1, &[0; 24]);
    let ospf_frame = frame(EthernetAddress([0x01, 0, 0x5e, 0, 0, 5]), H0, None, EtherType::Ipv4, &ospf);
    assert_eq!(switch.process(NOW, 0, &ospf_frame, &mut out), Disposition::Punted);
    assert_eq!(
        emitted(&out),
        vec![(Egress::Host { port: 0, rif: Some(0), reason: PuntReason::LinkLocalMulticast }, ospf_frame)]
    );
    let stream = ipv4(v4("10.0.0.2"), v4("239.1.1.1"), IpProtocol::Udp, 8, &[0; 24]);
    let stream_frame = frame(EthernetAddress([0x01, 0, 0x5e, 1, 1, 1]), H0, None, EtherType::Ipv4, &stream);
    assert_eq!(switch.process(NOW, 0, &stream_frame, &mut out), Disposition::Dropped(DropReason::Unsupported));
    // In a VLAN with an SVI, a multicast stream is flooded and not copied to the host.
    out.clear();
    assert_eq!(switch.process(NOW, 2, &stream_frame, &mut out), Disposition::Flooded);
    assert_eq!(emitted(&out).len(), 1);
    assert_eq!(switch.drop_counters().total(), 1);
}

#[test]
fn no_route_sends_net_unreachable_within_the_icmp_rate_limit() {
    let mut switch = l3_switch_with(SwitchConfig { icmp_errors_per_second: 2, ..SwitchConfig::default() });
    switch.set_neighbor(1, IpAddr::V4(v4("10.0.1.2")), H1).unwrap();
    let mut out = Output::new();
    let ip = udp_packet("10.0.1.2", "11.0.0.1", 1, 9);
    let sent = frame(R1, H1, None, EtherType::Ipv4, &ip);
    let mut answers = 0;
    for _ in 0..5 {
        out.clear();
        assert_eq!(switch.process(NOW, 1, &sent, &mut out), Disposition::Dropped(DropReason::NoRoute));
        answers += out.len();
    }
    assert_eq!(answers, 2, "a burst of the rate, then nothing");
    assert_eq!(switch.icmp_errors_suppressed(), 3);
    // Tokens come back with time.
    out.clear();
    switch.process(NOW + SECOND, 1, &sent, &mut out);
    let got = emitted(&out);
    let packet = Ipv4Packet::new_checked(&got[0].1[14..]).unwrap();
    assert_eq!((packet.src_addr(), packet.dst_addr()), (v4("10.0.1.1"), v4("10.0.1.2")));
    let icmp = Icmpv4Packet::new_checked(packet.payload()).unwrap();
    assert_eq!(
        Icmpv4Repr::parse(&icmp).unwrap(),
        Icmpv4Repr::DstUnreachable {
            reason: icmpv4::DstUnreachable::NetUnreachable,
            next_hop_mtu: 0,
            invoking_packet: &ip
        }
    );
}

/// The packet path sends to a next hop from a cached rewrite (port, MACs,
/// MTU); every change that affects it must show in the very next packet.
#[test]
fn cached_next_hop_rewrites_follow_every_change() {
    let mut switch = l3_switch();
    let mut out = Output::new();
    switch.set_route(net("10.99.0.0/16"), RouteTarget::NextHop(1)).unwrap();
    let ip = udp_packet("172.16.9.9", "10.99.0.7", 7, 64);
    let sent = frame(R2, H2, None, EtherType::Ipv4, &ip);
    let mut send = |switch: &mut Switch, now: u64| {
        out.clear();
        let disposition = switch.process(now, 2, &sent, &mut out);
        (disposition, port_frames(&out))
    };
    let via = |port: PortId, dst: EthernetAddress, src: EthernetAddress| {
        (Disposition::Forwarded, vec![(Egress::Port(port), frame(dst, src, None, EtherType::Ipv4, &routed(&ip)))])
    };
    let reply = |mac: EthernetAddress| {
        frame(R0, mac, None, EtherType::Arp, &arp(Operation::Reply, mac, "10.0.0.2", R0, "10.0.0.1"))
    };
    let mut scratch = Output::new();
    assert_eq!(send(&mut switch, NOW).0, Disposition::Held);
    switch.process(NOW, 0, &reply(H0), &mut scratch);
    // Twice: the second from the cache.
    assert_eq!(send(&mut switch, NOW), via(0, H0, R0));
    assert_eq!(send(&mut switch, NOW), via(0, H0, R0));
    // The neighbour's MAC changes.
    switch.process(NOW, 0, &reply(H1), &mut scratch);
    assert_eq!(send(&mut switch, NOW), via(0, H1, R0));
    // The link goes down and comes back.
    switch.set_port_oper_status(0, false);
    assert_eq!(send(&mut switch, NOW).0, Disposition::Dropped(DropReason::EgressPortDown));
    switch.set_port_oper_status(0, true);
    assert_eq!(send(&mut switch, NOW), via(0, H1, R0));
    // The interface's MAC and MTU change.
    let rif = RouterInterface { kind: RifKind::Port(0), mac: R2, mtu: 1500, admin_up: true, vrf: DEFAULT_VRF };
    switch.set_router_interface(0, rif).unwrap();
    assert_eq!(send(&mut switch, NOW), via(0, H1, R2));
    switch.set_router_interface(0, RouterInterface { mtu: 30, ..rif }).unwrap();
    assert_eq!(send(&mut switch, NOW).0, Disposition::Dropped(DropReason::MtuExceeded));
    switch.set_router_interface(0, RouterInterface { admin_up: false, ..rif }).unwrap();
    assert_eq!(send(&mut switch, NOW).0, Disposition::Dropped(DropReason::RouterInterfaceDown));
    switch.set_router_interface(0, RouterInterface { mac: R0, ..rif }).unwrap();
    assert_eq!(send(&mut switch, NOW), via(0, H1, R0));
    // Reachable turns Stale: the next packet still goes, and starts a probe.
    let later = NOW + switch.config().neighbor_reachable_ns + 1;
    switch.poll(later, &mut scratch);
    assert_eq!(switch.neighbor(0, IpAddr::V4(v4("10.0.0.2"))).unwrap().state, NeighborState::Stale);
    assert_eq!(send(&mut switch, later), via(0, H1, R0));
    assert_eq!(switch.neighbor(0, IpAddr::V4(v4("10.0.0.2"))).unwrap().state, NeighborState::Probe);
    // The next hop moves to another interface.
    switch.set_neighbor(1, IpAddr::V4(v4("10.0.1.2")), H2).unwrap();
    switch.set_next_hop(1, NextHop { rif: 1, ip: IpAddr::V4(v4("10.0.1.2")) }).unwrap();
    assert_eq!(send(&mut switch, later), via(1, H2, R1));
    // The neighbour goes away: resolution starts again.
    switch.remove_neighbor(1, IpAddr::V4(v4("10.0.1.2"))).unwrap();
    let (disposition, _) = send(&mut switch, later);
    assert_eq!(disposition, Disposition::Held);
    assert_eq!(switch.neighbor(1, IpAddr::V4(v4("10.0.1.2"))).unwrap().state, NeighborState::Incomplete);
}

/// From `SwitchConfig::dir24_min_routes` IPv4 routes on, lookups go through the DIR-24-8
/// index; it must answer as a plain longest-prefix match over `routes()`
/// through inserts, replacements and removals, and hand back to the trie
/// when the table shrinks.
#[test]
fn large_ipv4_tables_match_the_longest_prefix_through_changes() {
    let dir24_min_routes = SwitchConfig::default().dir24_min_routes;
    let mut switch = l3_switch();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let targets = [RouteTarget::NextHop(1), RouteTarget::Group(1), RouteTarget::Drop, RouteTarget::Connected(1)];
    let mut installed = Vec::new();
    while switch.route_count() < dir24_min_routes + 2000 {
        let r = next();
        // Addresses inside 20.0.0.0/10 so that prefixes nest.
        let addr = Ipv4Addr::from(0x1400_0000 | ((r >> 32) as u32 & 0x003f_ffff));
        let len = [12, 16, 20, 22, 24, 24, 24, 26, 28, 32][(r % 10) as usize];
        let prefix = ipnetwork::Ipv4Network::new(addr, len).unwrap();
        let prefix = ipnetwork::IpNetwork::V4(ipnetwork::Ipv4Network::new(prefix.network(), len).unwrap());
        switch.set_route(prefix, targets[((r >> 8) % 4) as usize]).unwrap();
        installed.push(prefix);
    }
    let expected = |switch: &Switch, addr: Ipv4Addr| {
        switch
            .routes()
            .filter(|(prefix, _)| prefix.contains(IpAddr::V4(addr)))
            .max_by_key(|(prefix, _)| prefix.prefix())
            .map(|(_, target)| target)
    };
    let mut probe = |switch: &Switch, rounds: usize| {
        for _ in 0..rounds {
            let addr = Ipv4Addr::from(0x1400_0000 | (next() as u32 & 0x003f_ffff));
            assert_eq!(switch.lookup_route(IpAddr::V4(addr)), expected(switch, addr), "{addr}");
        }
    };
    assert!(switch.router.fib(DEFAULT_VRF).unwrap().dir24_active());
    probe(&switch, 200);
    // Replace some, remove many (longer and shorter ones alike).
    for (index, prefix) in installed.iter().enumerate() {
        if index % 3 == 0 {
            switch.set_route(*prefix, RouteTarget::Punt).unwrap();
        } else if index % 3 == 1 {
            let _ = switch.remove_route(*prefix);
        }
    }
    probe(&switch, 200);
    // Below half the threshold the trie answers again; same answers.
    for prefix in &installed {
        let _ = switch.remove_route(*prefix);
    }
    assert!(!switch.router.fib(DEFAULT_VRF).unwrap().dir24_active());
    probe(&switch, 50);
    assert_eq!(switch.lookup_route(IpAddr::V4(v4("172.16.1.1"))), Some(RouteTarget::Group(1)));
}
