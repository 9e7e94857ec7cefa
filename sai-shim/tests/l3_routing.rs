//! Layer 3 through the shim: SVIs and routed ports with IPv4 and IPv6
//! addresses, ARP and neighbour discovery, LPM, ECMP, TTL handling, ICMP and
//! punts to the host.

mod common;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use common::*;
use dataplane::pipeline::{Disposition, DropReason, Egress, PuntReason, SwitchConfig};
use dataplane::wire::arp::Operation;
use dataplane::wire::icmpv4::TimeExceeded;
use dataplane::wire::{EtherType, EthernetAddress, Icmpv4Repr, Icmpv6Repr, IpProtocol};
use sai_shim::*;

const ROUTER_MAC: EthernetAddress = EthernetAddress([0x02, 0xaa, 0, 0, 0, 0x01]);
const SVI_V4: Ipv4Addr = Ipv4Addr::new(192, 168, 10, 1);
const SVI_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x10, 0, 0, 0, 0, 1);
const H1_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x11]);
const H1_V4: Ipv4Addr = Ipv4Addr::new(192, 168, 10, 11);
const H1_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x10, 0, 0, 0, 0, 0x11);
const H2_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x22]);
const H2_V4: Ipv4Addr = Ipv4Addr::new(192, 168, 10, 22);
const R3_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x33]);
const R3_V4: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 2);
const R3_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 2);
const R4_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x44]);
const R4_V4: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 2);
const R4_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, 2);

/// eth1 and eth2: access ports of VLAN 10, routed by an SVI (192.168.10.1/24,
/// 2001:db8:10::1/64). eth3 and eth4: routed ports (10.1.0.1/30 and
/// 2001:db8:1::1/64; 10.2.0.1/30 and 2001:db8:2::1/64) toward routers R3 and
/// R4, whose neighbour entries are static.
struct Routed {
    lab: Lab,
    ports: [ObjectId; 4],
    svi: ObjectId,
    rif3: ObjectId,
    rif4: ObjectId,
    nh3: ObjectId,
    nh4: ObjectId,
    nh3_v6: ObjectId,
    nh4_v6: ObjectId,
    svi_hostif: ObjectId,
}

fn net(s: &str) -> ipnetwork::IpNetwork {
    s.parse().unwrap()
}

fn route(lab: &mut Lab, prefix: &str, next_hop: ObjectId) {
    let key = RouteEntryKey { virtual_router: lab.sai.default_virtual_router(), destination: net(prefix) };
    lab.sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(next_hop))]).unwrap();
}

fn address(lab: &mut Lab, rif: ObjectId, host: &str, subnet: &str) {
    let cpu = lab.sai.cpu_port();
    route(lab, host, cpu);
    route(lab, subnet, rif);
}

fn routed_port(lab: &mut Lab, name: &str) -> (ObjectId, ObjectId) {
    let port = lab.port(name);
    let vr = lab.sai.default_virtual_router();
    let rif = lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vr),
            RouterInterfaceAttr::Type(RouterInterfaceType::Port(port)),
        ])
        .unwrap();
    (port, rif)
}

fn next_hop(lab: &mut Lab, rif: ObjectId, ip: IpAddr, mac: EthernetAddress) -> ObjectId {
    lab.sai
        .create_neighbor_entry(NeighborEntryKey { router_interface: rif, ip }, &[NeighborEntryAttr::DstMacAddress(mac)])
        .unwrap();
    lab.sai.create_next_hop(&[NextHopAttr::Ip(ip), NextHopAttr::RouterInterfaceId(rif)]).unwrap()
}

fn routed_with(config: SwitchConfig) -> Routed {
    let mut lab = Lab::with(config, &[SwitchAttr::SrcMacAddress(ROUTER_MAC)]);
    let vlan = lab.vlan(10);
    let (p1, _) = lab.access_port("eth1", vlan, 10);
    let (p2, _) = lab.access_port("eth2", vlan, 10);
    let vr = lab.sai.default_virtual_router();
    let svi = lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vr),
            RouterInterfaceAttr::Type(RouterInterfaceType::Vlan(vlan)),
        ])
        .unwrap();
    address(&mut lab, svi, "192.168.10.1/32", "192.168.10.0/24");
    address(&mut lab, svi, "2001:db8:10::1/128", "2001:db8:10::/64");
    let (p3, rif3) = routed_port(&mut lab, "eth3");
    address(&mut lab, rif3, "10.1.0.1/32", "10.1.0.0/30");
    address(&mut lab, rif3, "2001:db8:1::1/128", "2001:db8:1::/64");
    let (p4, rif4) = routed_port(&mut lab, "eth4");
    address(&mut lab, rif4, "10.2.0.1/32", "10.2.0.0/30");
    address(&mut lab, rif4, "2001:db8:2::1/128", "2001:db8:2::/64");
    let nh3 = next_hop(&mut lab, rif3, R3_V4.into(), R3_MAC);
    let nh4 = next_hop(&mut lab, rif4, R4_V4.into(), R4_MAC);
    let nh3_v6 = next_hop(&mut lab, rif3, R3_V6.into(), R3_MAC);
    let nh4_v6 = next_hop(&mut lab, rif4, R4_V6.into(), R4_MAC);
    let svi_hostif = lab
        .sai
        .create_host_interface(&[HostInterfaceAttr::Name("vlan10".into()), HostInterfaceAttr::ObjId(svi)])
        .unwrap();
    Routed { lab, ports: [p1, p2, p3, p4], svi, rif3, rif4, nh3, nh4, nh3_v6, nh4_v6, svi_hostif }
}

fn routed() -> Routed {
    routed_with(SwitchConfig::default())
}

impl Routed {
    fn index(&self, n: usize) -> u16 {
        self.lab.index(self.ports[n])
    }

    /// Makes H1 a resolved neighbour on the SVI, learned on eth1.
    fn static_h1(&mut self) {
        self.lab
            .sai
            .create_neighbor_entry(
                NeighborEntryKey { router_interface: self.svi, ip: H1_V4.into() },
                &[NeighborEntryAttr::DstMacAddress(H1_MAC)],
            )
            .unwrap();
        self.lab.inject(self.ports[0], &l2(EthernetAddress::BROADCAST, H1_MAC, None));
    }
}

/// A neighbour's state as the shim shows it.
fn neighbor_state(lab: &Lab, rif: ObjectId, ip: IpAddr) -> Option<sai_shim::NeighborState> {
    let key = NeighborEntryKey { router_interface: rif, ip };
    lab.sai.neighbor_table().into_iter().find(|(k, _)| *k == key).map(|(_, info)| info.state)
}

fn from_h1(ip: &[u8], ethertype: EtherType) -> Vec<u8> {
    eth(ROUTER_MAC, H1_MAC, None, ethertype, ip)
}

#[test]
fn arp_request_for_an_svi_address_is_answered() {
    let mut r = routed();
    let request = arp(Operation::Request, H1_MAC, H1_V4, EthernetAddress::ZERO, SVI_V4);
    let result = r.lab.inject(r.ports[0], &eth(EthernetAddress::BROADCAST, H1_MAC, None, EtherType::Arp, &request));
    let reply = arp(Operation::Reply, ROUTER_MAC, SVI_V4, H1_MAC, H1_V4);
    let expected = eth(H1_MAC, ROUTER_MAC, None, EtherType::Arp, &reply);
    assert!(result.on_port(r.index(0)).contains(&expected.as_slice()), "{result:?}");
    // The broadcast still floods the VLAN (not back to eth1).
    assert_eq!(result.on_port(r.index(1)).len(), 1);
    assert!(result.on_port(r.index(0)).len() == 1);
}

#[test]
fn arp_request_on_a_routed_port_is_answered_and_others_ignored() {
    let mut r = routed();
    let request = arp(Operation::Request, R3_MAC, R3_V4, EthernetAddress::ZERO, Ipv4Addr::new(10, 1, 0, 1));
    let result = r.lab.inject(r.ports[2], &eth(EthernetAddress::BROADCAST, R3_MAC, None, EtherType::Arp, &request));
    let reply = arp(Operation::Reply, ROUTER_MAC, Ipv4Addr::new(10, 1, 0, 1), R3_MAC, R3_V4);
    assert_eq!(result.on_port(r.index(2)), vec![eth(R3_MAC, ROUTER_MAC, None, EtherType::Arp, &reply).as_slice()]);
    // A request for somebody else's address gets no answer.
    let request = arp(Operation::Request, R3_MAC, R3_V4, EthernetAddress::ZERO, Ipv4Addr::new(10, 1, 0, 3));
    let result = r.lab.inject(r.ports[2], &eth(EthernetAddress::BROADCAST, R3_MAC, None, EtherType::Arp, &request));
    assert!(result.on_port(r.index(2)).is_empty(), "{result:?}");
}

#[test]
fn routed_packet_gets_ttl_decremented_with_a_correct_checksum() {
    let mut r = routed();
    route(&mut r.lab, "198.51.100.0/24", r.nh3);
    let dst = Ipv4Addr::new(198, 51, 100, 7);
    let packet = udp4(H1_V4, dst, 40000, 53, 64, b"query");
    let result = r.lab.inject(r.ports[0], &from_h1(&packet, EtherType::Ipv4));
    assert_eq!(result.disposition, Disposition::Forwarded);
    // The expected packet is built from scratch with TTL 63: the incremental
    // checksum update must give the same header checksum.
    let expected = eth(R3_MAC, ROUTER_MAC, None, EtherType::Ipv4, &udp4(H1_V4, dst, 40000, 53, 63, b"query"));
    assert_eq!(result.frames, vec![(Egress::Port(r.index(2)), expected)]);
    let stats = r.lab.sai.get_port_stats(r.ports[2]).unwrap();
    assert_eq!(stats.out_ucast_pkts, 1);
}

#[test]
fn longest_prefix_wins_for_ipv4_and_ipv6() {
    let mut r = routed();
    route(&mut r.lab, "198.51.100.0/24", r.nh3);
    route(&mut r.lab, "198.51.100.128/25", r.nh4);
    route(&mut r.lab, "0.0.0.0/0", r.nh3);
    route(&mut r.lab, "2001:db8:100::/48", r.nh3_v6);
    route(&mut r.lab, "2001:db8:100:8000::/49", r.nh4_v6);
    let cases: [(IpAddr, usize); 6] = [
        (Ipv4Addr::new(198, 51, 100, 7).into(), 2),
        (Ipv4Addr::new(198, 51, 100, 200).into(), 3),
        (Ipv4Addr::new(8, 8, 8, 8).into(), 2),
        ("2001:db8:100:1::5".parse().unwrap(), 2),
        ("2001:db8:100:8001::5".parse().unwrap(), 3),
        ("2001:db8:100:ffff::1".parse().unwrap(), 3),
    ];
    for (dst, port) in cases {
        let frame = match dst {
            IpAddr::V4(dst) => from_h1(&udp4(H1_V4, dst, 1, 2, 64, b"x"), EtherType::Ipv4),
            IpAddr::V6(dst) => from_h1(&udp6(H1_V6, dst, 1, 2, 64, b"x"), EtherType::Ipv6),
        };
        let result = r.lab.inject(r.ports[0], &frame);
        assert_eq!(result.ports(), vec![r.index(port)], "{dst}");
    }
    // No IPv6 default: no route.
    let frame = from_h1(&udp6(H1_V6, "2001:db9::1".parse().unwrap(), 1, 2, 64, b"x"), EtherType::Ipv6);
    assert_eq!(r.lab.inject(r.ports[0], &frame).disposition, Disposition::Dropped(DropReason::NoRoute));
    // Removing the /25 sends its addresses to the /24.
    let key =
        RouteEntryKey { virtual_router: r.lab.sai.default_virtual_router(), destination: net("198.51.100.128/25") };
    r.lab.sai.remove_route_entry(key).unwrap();
    let frame = from_h1(&udp4(H1_V4, Ipv4Addr::new(198, 51, 100, 200), 1, 2, 64, b"x"), EtherType::Ipv4);
    assert_eq!(r.lab.inject(r.ports[0], &frame).ports(), vec![r.index(2)]);
}

#[test]
fn ipv6_hop_limit_is_decremented() {
    let mut r = routed();
    route(&mut r.lab, "2001:db8:100::/48", r.nh4_v6);
    let dst: Ipv6Addr = "2001:db8:100::9".parse().unwrap();
    let result = r.lab.inject(r.ports[0], &from_h1(&udp6(H1_V6, dst, 5000, 6000, 10, b"payload"), EtherType::Ipv6));
    let expected = eth(R4_MAC, ROUTER_MAC, None, EtherType::Ipv6, &udp6(H1_V6, dst, 5000, 6000, 9, b"payload"));
    assert_eq!(result.frames, vec![(Egress::Port(r.index(3)), expected)]);
}

#[test]
fn ecmp_spreads_flows_and_keeps_each_flow_on_one_path() {
    let mut r = routed();
    let group = r.lab.sai.create_next_hop_group().unwrap();
    for nh in [r.nh3, r.nh4] {
        r.lab
            .sai
            .create_next_hop_group_member(&[
                NextHopGroupMemberAttr::NextHopGroupId(group),
                NextHopGroupMemberAttr::NextHopId(nh),
            ])
            .unwrap();
    }
    route(&mut r.lab, "203.0.113.0/24", group);
    let dst = Ipv4Addr::new(203, 0, 113, 10);
    let mut counts = [0usize; 2];
    for sport in 0..64u16 {
        let frame = from_h1(&udp4(H1_V4, dst, 10000 + sport, 80, 64, b"flow"), EtherType::Ipv4);
        let first = r.lab.inject(r.ports[0], &frame).ports();
        assert_eq!(first.len(), 1);
        counts[usize::from(first[0] == r.index(3))] += 1;
        // The same flow always takes the same path.
        for _ in 0..3 {
            assert_eq!(r.lab.inject(r.ports[0], &frame).ports(), first);
        }
        // And the frame on the wire is right for the next hop chosen.
        let result = r.lab.inject(r.ports[0], &frame);
        let next_hop_mac = if first[0] == r.index(2) { R3_MAC } else { R4_MAC };
        let forwarded = udp4(H1_V4, dst, 10000 + sport, 80, 63, b"flow");
        assert_eq!(
            result.on_port(first[0]),
            vec![eth(next_hop_mac, ROUTER_MAC, None, EtherType::Ipv4, &forwarded).as_slice()]
        );
    }
    assert!(counts[0] >= 16 && counts[1] >= 16, "64 flows split {counts:?}");
    // A group member removed: every flow goes to the one left.
    let member = r
        .lab
        .sai
        .store()
        .objects_of(ObjectType::NextHopGroupMember)
        .find_map(|(id, o)| matches!(o, Object::NextHopGroupMember(m) if m.next_hop == r.nh4).then_some(id))
        .unwrap();
    r.lab.sai.remove(member).unwrap();
    for sport in 0..16u16 {
        let frame = from_h1(&udp4(H1_V4, dst, 10000 + sport, 80, 64, b"flow"), EtherType::Ipv4);
        assert_eq!(r.lab.inject(r.ports[0], &frame).ports(), vec![r.index(2)]);
    }
}

#[test]
fn echo_request_to_an_own_address_is_answered() {
    let mut r = routed();
    r.static_h1();
    let data = b"abcdefgh";
    let request = icmp4(&Icmpv4Repr::EchoRequest { ident: 0x77, seq_no: 3, data });
    let result =
        r.lab.inject(r.ports[0], &from_h1(&ipv4(H1_V4, SVI_V4, IpProtocol::Icmp, 64, &request), EtherType::Ipv4));
    assert_eq!(result.disposition, Disposition::Consumed);
    let reply = icmp4(&Icmpv4Repr::EchoReply { ident: 0x77, seq_no: 3, data });
    let mut reply_ip = ipv4(SVI_V4, H1_V4, IpProtocol::Icmp, 64, &reply);
    // The pipeline originates with DF clear and IDs from a counter (RFC 6864 4.1): the first is 1.
    set_ident_and_df(&mut reply_ip, 1, false);
    assert_eq!(
        result.frames,
        vec![(Egress::Port(r.index(0)), eth(H1_MAC, ROUTER_MAC, None, EtherType::Ipv4, &reply_ip))]
    );
}

fn set_ident_and_df(ip: &mut [u8], ident: u16, df: bool) {
    let mut packet = dataplane::wire::Ipv4Packet::new_unchecked(&mut ip[..]);
    packet.set_ident(ident);
    packet.set_dont_frag(df);
    packet.fill_checksum();
}

#[test]
fn icmpv6_echo_and_neighbor_solicitation_for_own_address() {
    let mut r = routed();
    // NS for the SVI's address from H1, to its solicited-node group.
    let solicited: Ipv6Addr = "ff02::1:ff00:1".parse().unwrap();
    let ns = icmp6(&Icmpv6Repr::NeighborSolicit { target_addr: SVI_V6, source_lladdr: Some(H1_MAC) }, H1_V6, solicited);
    let group_mac = EthernetAddress([0x33, 0x33, 0xff, 0, 0, 1]);
    let frame = eth(group_mac, H1_MAC, None, EtherType::Ipv6, &ipv6(H1_V6, solicited, IpProtocol::Icmpv6, 255, &ns));
    let result = r.lab.inject(r.ports[0], &frame);
    let na = icmp6(
        &Icmpv6Repr::NeighborAdvert {
            router_flag: true,
            solicited_flag: true,
            override_flag: true,
            target_addr: SVI_V6,
            target_lladdr: Some(ROUTER_MAC),
        },
        SVI_V6,
        H1_V6,
    );
    let expected = eth(H1_MAC, ROUTER_MAC, None, EtherType::Ipv6, &ipv6(SVI_V6, H1_V6, IpProtocol::Icmpv6, 255, &na));
    assert!(result.on_port(r.index(0)).contains(&expected.as_slice()), "{result:?}");
    // The NS taught the switch H1's address: echo is answered without resolution.
    let request = icmp6(&Icmpv6Repr::EchoRequest { ident: 9, seq_no: 1, data: b"ping6" }, H1_V6, SVI_V6);
    let result =
        r.lab.inject(r.ports[0], &from_h1(&ipv6(H1_V6, SVI_V6, IpProtocol::Icmpv6, 64, &request), EtherType::Ipv6));
    assert_eq!(result.disposition, Disposition::Consumed);
    let reply = icmp6(&Icmpv6Repr::EchoReply { ident: 9, seq_no: 1, data: b"ping6" }, SVI_V6, H1_V6);
    let expected = eth(H1_MAC, ROUTER_MAC, None, EtherType::Ipv6, &ipv6(SVI_V6, H1_V6, IpProtocol::Icmpv6, 64, &reply));
    assert_eq!(result.frames, vec![(Egress::Port(r.index(0)), expected)]);
}

#[test]
fn ttl_expiry_sends_time_exceeded_and_counts_the_drop() {
    let mut r = routed();
    r.static_h1();
    route(&mut r.lab, "198.51.100.0/24", r.nh3);
    let packet = udp4(H1_V4, Ipv4Addr::new(198, 51, 100, 7), 33434, 33435, 1, b"traceroute");
    let result = r.lab.inject(r.ports[0], &from_h1(&packet, EtherType::Ipv4));
    assert_eq!(result.disposition, Disposition::Dropped(DropReason::TtlExpired));
    assert!(result.on_port(r.index(2)).is_empty());
    let sent = result.on_port(r.index(0));
    assert_eq!(sent.len(), 1, "{result:?}");
    // RFC 792: the error quotes the IP header and (at least) 8 bytes of data.
    let frame = sent[0];
    let l3 = &frame[14..];
    let ip = dataplane::wire::Ipv4Packet::new_checked(l3).unwrap();
    let ip_repr = dataplane::wire::Ipv4Repr::parse(&ip).unwrap();
    assert_eq!((ip_repr.src_addr, ip_repr.dst_addr, ip_repr.protocol), (SVI_V4, H1_V4, IpProtocol::Icmp));
    let icmp = dataplane::wire::Icmpv4Packet::new_checked(ip.payload()).unwrap();
    match Icmpv4Repr::parse(&icmp).unwrap() {
        Icmpv4Repr::TimeExceeded { reason: TimeExceeded::TtlExpired, invoking_packet } => {
            assert!(invoking_packet.len() >= 28);
            assert_eq!(invoking_packet, &packet[..invoking_packet.len()]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(&frame[..14], &eth(H1_MAC, ROUTER_MAC, None, EtherType::Ipv4, &[])[..]);
    assert_eq!(r.lab.sai.backend().drop_counters()[DropReason::TtlExpired], 1);
}

#[test]
fn traffic_for_the_switch_and_trapped_routes_go_to_the_host() {
    let mut r = routed();
    r.static_h1();
    // BGP to the SVI address: the kernel's.
    let syn = ipv4(
        H1_V4,
        SVI_V4,
        IpProtocol::Tcp,
        64,
        &[0xc0, 0x01, 0, 179, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 2, 0xff, 0xff, 0, 0, 0, 0],
    );
    let frame = from_h1(&syn, EtherType::Ipv4);
    let result = r.lab.inject(r.ports[0], &frame);
    assert_eq!(result.disposition, Disposition::Punted);
    let svi_index = r.lab.sai.backend().router_interface_index(r.svi).unwrap();
    let host = Egress::Host { port: r.index(0), rif: Some(svi_index), reason: PuntReason::Ip2Me };
    assert_eq!(result.frames, vec![(host, frame)]);
    assert_eq!(r.lab.sai.backend().punt_host_interface(&host), Some(r.svi_hostif));
    // A trap route.
    let vr = r.lab.sai.default_virtual_router();
    let trap = RouteEntryKey { virtual_router: vr, destination: net("192.0.2.0/24") };
    r.lab.sai.create_route_entry(trap, &[RouteEntryAttr::PacketAction(PacketAction::Trap)]).unwrap();
    let frame = from_h1(&udp4(H1_V4, Ipv4Addr::new(192, 0, 2, 1), 1, 2, 64, b"t"), EtherType::Ipv4);
    let result = r.lab.inject(r.ports[0], &frame);
    assert_eq!(result.disposition, Disposition::Punted);
    assert!(matches!(result.frames[0].0, Egress::Host { reason: PuntReason::RouteTrap, .. }));
    // A blackhole.
    let blackhole = RouteEntryKey { virtual_router: vr, destination: net("192.0.3.0/24") };
    r.lab.sai.create_route_entry(blackhole, &[RouteEntryAttr::PacketAction(PacketAction::Drop)]).unwrap();
    let frame = from_h1(&udp4(H1_V4, Ipv4Addr::new(192, 0, 3, 1), 1, 2, 64, b"t"), EtherType::Ipv4);
    assert_eq!(r.lab.inject(r.ports[0], &frame).disposition, Disposition::Dropped(DropReason::Blackhole));
    // Changing the action of a route reprograms it.
    r.lab.sai.set_route_entry_attribute(blackhole, RouteEntryAttr::NextHopId(Some(r.nh4))).unwrap();
    r.lab.sai.set_route_entry_attribute(blackhole, RouteEntryAttr::PacketAction(PacketAction::Forward)).unwrap();
    assert_eq!(r.lab.inject(r.ports[0], &frame).ports(), vec![r.index(3)]);
}

#[test]
fn arp_resolution_of_a_connected_host_and_its_notification() {
    let mut r = routed();
    // R3 sends to H2, whom the switch has never heard of.
    let packet = udp4(R3_V4, H2_V4, 7, 8, 64, b"hello");
    let frame = eth(ROUTER_MAC, R3_MAC, None, EtherType::Ipv4, &packet);
    let result = r.lab.inject(r.ports[2], &frame);
    assert_eq!(result.disposition, Disposition::Held);
    // An ARP request floods VLAN 10.
    let request = arp(Operation::Request, ROUTER_MAC, SVI_V4, EthernetAddress::ZERO, H2_V4);
    let request = eth(EthernetAddress::BROADCAST, ROUTER_MAC, None, EtherType::Arp, &request);
    assert_eq!(by_port(&result.frames), vec![(r.index(0), request.clone()), (r.index(1), request)]);
    assert_eq!(neighbor_state(&r.lab, r.svi, H2_V4.into()), Some(NeighborState::Incomplete));
    // H2 answers from eth2.
    let reply = arp(Operation::Reply, H2_MAC, H2_V4, ROUTER_MAC, SVI_V4);
    r.lab.inject(r.ports[1], &eth(ROUTER_MAC, H2_MAC, None, EtherType::Arp, &reply));
    let notifications = r.lab.sai.drain_notifications();
    assert!(
        notifications.contains(&Notification::NeighborResolved {
            router_interface: r.svi,
            ip: H2_V4.into(),
            mac: H2_MAC
        }),
        "{notifications:?}"
    );
    // Now the packet is routed to H2, out of eth2 only.
    let result = r.lab.inject(r.ports[2], &frame);
    let expected = eth(H2_MAC, ROUTER_MAC, None, EtherType::Ipv4, &udp4(R3_V4, H2_V4, 7, 8, 63, b"hello"));
    assert_eq!(result.frames, vec![(Egress::Port(r.index(1)), expected)]);
    assert_eq!(neighbor_state(&r.lab, r.svi, H2_V4.into()), Some(NeighborState::Reachable));
    // The shim's neighbour table shows it beside the static ones.
    let table = r.lab.sai.neighbor_table();
    let h2 = NeighborEntryKey { router_interface: r.svi, ip: H2_V4.into() };
    assert!(
        table.contains(&(h2, NeighborInfo { mac: Some(H2_MAC), state: NeighborState::Reachable, is_static: false }))
    );
    let r3 = NeighborEntryKey { router_interface: r.rif3, ip: R3_V4.into() };
    assert!(table.iter().any(|(key, info)| *key == r3 && info.is_static && info.mac == Some(R3_MAC)));
}

#[test]
fn neighbor_cache_goes_stale_is_probed_and_expires() {
    let second = 1_000_000_000;
    let config = SwitchConfig {
        neighbor_reachable_ns: 5 * second,
        neighbor_retrans_ns: second,
        neighbor_max_probes: 3,
        ..SwitchConfig::default()
    };
    let mut r = routed_with(config);
    let state = |r: &Routed| neighbor_state(&r.lab, r.svi, H2_V4.into());
    let packet = eth(ROUTER_MAC, R3_MAC, None, EtherType::Ipv4, &udp4(R3_V4, H2_V4, 7, 8, 64, b"hello"));
    r.lab.inject(r.ports[2], &packet);
    let reply = arp(Operation::Reply, H2_MAC, H2_V4, ROUTER_MAC, SVI_V4);
    r.lab.inject(r.ports[1], &eth(ROUTER_MAC, H2_MAC, None, EtherType::Arp, &reply));
    assert_eq!(state(&r), Some(NeighborState::Reachable));
    r.lab.sai.drain_notifications();
    // Past the reachable time the entry is stale, still used.
    r.lab.advance(6 * second);
    r.lab.poll();
    assert_eq!(state(&r), Some(NeighborState::Stale));
    let result = r.lab.inject(r.ports[2], &packet);
    assert_eq!(result.disposition, Disposition::Forwarded);
    // Using a stale entry probes it with a unicast request.
    let mut probes = Vec::new();
    probes.extend(result.frames.iter().filter(|(_, f)| f[12..14] == [0x08, 0x06]).cloned());
    for _ in 0..10 {
        r.lab.advance(second);
        probes.extend(r.lab.poll().into_iter().filter(|(_, f)| f[12..14] == [0x08, 0x06]));
    }
    let unicast = arp(Operation::Request, ROUTER_MAC, SVI_V4, EthernetAddress::ZERO, H2_V4);
    let unicast = eth(H2_MAC, ROUTER_MAC, None, EtherType::Arp, &unicast);
    assert!(!probes.is_empty());
    assert!(probes.iter().all(|(to, f)| *to == Egress::Port(r.index(1)) && *f == unicast), "{probes:?}");
    assert!(probes.len() <= 3, "at most neighbor_max_probes probes: {probes:?}");
    // Nobody answered: the neighbour is gone, and the control plane hears it.
    assert!(matches!(state(&r), None | Some(NeighborState::Failed)), "{:?}", state(&r));
    let notifications = r.lab.sai.drain_notifications();
    assert!(
        notifications.contains(&Notification::NeighborExpired { router_interface: r.svi, ip: H2_V4.into() }),
        "{notifications:?}"
    );
}

#[test]
fn static_neighbors_and_removing_them() {
    let mut r = routed();
    route(&mut r.lab, "198.51.100.0/24", r.nh3);
    let frame = from_h1(&udp4(H1_V4, Ipv4Addr::new(198, 51, 100, 1), 1, 2, 64, b"x"), EtherType::Ipv4);
    assert_eq!(r.lab.inject(r.ports[0], &frame).ports(), vec![r.index(2)]);
    // Changing R3's MAC takes effect at once.
    let key = NeighborEntryKey { router_interface: r.rif3, ip: R3_V4.into() };
    r.lab.sai.set_neighbor_entry_attribute(key, NeighborEntryAttr::DstMacAddress(mac(0x99))).unwrap();
    let result = r.lab.inject(r.ports[0], &frame);
    assert_eq!(&result.on_port(r.index(2))[0][..6], mac(0x99).as_bytes());
    let _ = r.rif4;
}

#[test]
fn neighbor_discovery_resolves_an_ipv6_host() {
    let mut r = routed();
    let h2_v6: Ipv6Addr = "2001:db8:10::22".parse().unwrap();
    let packet = udp6(R3_V6, h2_v6, 7, 8, 64, b"hello6");
    let frame = eth(ROUTER_MAC, R3_MAC, None, EtherType::Ipv6, &packet);
    let result = r.lab.inject(r.ports[2], &frame);
    assert_eq!(result.disposition, Disposition::Held);
    // RFC 4861 section 7.2.2: a solicitation to the solicited-node group,
    // from the interface's address, with the source link-layer address.
    let solicited: Ipv6Addr = "ff02::1:ff00:22".parse().unwrap();
    let ns =
        icmp6(&Icmpv6Repr::NeighborSolicit { target_addr: h2_v6, source_lladdr: Some(ROUTER_MAC) }, SVI_V6, solicited);
    let ns = ipv6(SVI_V6, solicited, IpProtocol::Icmpv6, 255, &ns);
    let ns = eth(EthernetAddress([0x33, 0x33, 0xff, 0, 0, 0x22]), ROUTER_MAC, None, EtherType::Ipv6, &ns);
    assert_eq!(by_port(&result.frames), vec![(r.index(0), ns.clone()), (r.index(1), ns)]);
    // H2 advertises from eth2.
    let na = icmp6(
        &Icmpv6Repr::NeighborAdvert {
            router_flag: false,
            solicited_flag: true,
            override_flag: true,
            target_addr: h2_v6,
            target_lladdr: Some(H2_MAC),
        },
        h2_v6,
        SVI_V6,
    );
    let na = eth(ROUTER_MAC, H2_MAC, None, EtherType::Ipv6, &ipv6(h2_v6, SVI_V6, IpProtocol::Icmpv6, 255, &na));
    r.lab.inject(r.ports[1], &na);
    let notifications = r.lab.sai.drain_notifications();
    assert!(
        notifications.contains(&Notification::NeighborResolved {
            router_interface: r.svi,
            ip: h2_v6.into(),
            mac: H2_MAC
        }),
        "{notifications:?}"
    );
    let result = r.lab.inject(r.ports[2], &frame);
    let expected = eth(H2_MAC, ROUTER_MAC, None, EtherType::Ipv6, &udp6(R3_V6, h2_v6, 7, 8, 63, b"hello6"));
    assert_eq!(result.frames, vec![(Egress::Port(r.index(1)), expected)]);
}

#[test]
fn oversized_packet_with_df_gets_fragmentation_needed() {
    let mut r = routed();
    r.static_h1();
    route(&mut r.lab, "198.51.100.0/24", r.nh3);
    r.lab.sai.set_router_interface_attribute(r.rif3, RouterInterfaceAttr::Mtu(1000)).unwrap();
    let packet = udp4(H1_V4, Ipv4Addr::new(198, 51, 100, 7), 1, 2, 64, &[0u8; 1200]);
    let result = r.lab.inject(r.ports[0], &from_h1(&packet, EtherType::Ipv4));
    assert_eq!(result.disposition, Disposition::Dropped(DropReason::MtuExceeded));
    let sent = result.on_port(r.index(0));
    assert_eq!(sent.len(), 1, "{result:?}");
    let ip = dataplane::wire::Ipv4Packet::new_checked(&sent[0][14..]).unwrap();
    let icmp = dataplane::wire::Icmpv4Packet::new_checked(ip.payload()).unwrap();
    match Icmpv4Repr::parse(&icmp).unwrap() {
        Icmpv4Repr::DstUnreachable { next_hop_mtu, .. } => assert_eq!(next_hop_mtu, 1000),
        other => panic!("{other:?}"),
    }
}

#[test]
fn hosts_on_a_trunk_are_answered_and_routed_tagged() {
    let mut r = routed();
    let vlan = r.lab.sai.store().objects_of(ObjectType::Vlan).map(|(id, _)| id).next().unwrap();
    let trunk = r.lab.port("eth5");
    let bridge_port = r.lab.bridge_port(trunk);
    r.lab.member(vlan, bridge_port, true);
    let i5 = r.lab.index(trunk);
    let request = arp(Operation::Request, H1_MAC, H1_V4, EthernetAddress::ZERO, SVI_V4);
    let result = r.lab.inject(trunk, &eth(EthernetAddress::BROADCAST, H1_MAC, Some(10), EtherType::Arp, &request));
    let reply = arp(Operation::Reply, ROUTER_MAC, SVI_V4, H1_MAC, H1_V4);
    assert_eq!(result.on_port(i5), vec![eth(H1_MAC, ROUTER_MAC, Some(10), EtherType::Arp, &reply).as_slice()]);
    // The request taught the switch H1's address (RFC 826 merge).
    assert!(r.lab.sai.drain_notifications().contains(&Notification::NeighborResolved {
        router_interface: r.svi,
        ip: H1_V4.into(),
        mac: H1_MAC
    }));
    let packet = udp4(R3_V4, H1_V4, 1, 2, 64, b"down");
    let result = r.lab.inject(r.ports[2], &eth(ROUTER_MAC, R3_MAC, None, EtherType::Ipv4, &packet));
    let expected = eth(H1_MAC, ROUTER_MAC, Some(10), EtherType::Ipv4, &udp4(R3_V4, H1_V4, 1, 2, 63, b"down"));
    assert_eq!(result.frames, vec![(Egress::Port(i5), expected)]);
}

#[test]
fn no_icmp_error_about_an_icmp_error_or_a_later_fragment() {
    let mut r = routed();
    r.static_h1();
    route(&mut r.lab, "198.51.100.0/24", r.nh3);
    let dst = Ipv4Addr::new(198, 51, 100, 7);
    // RFC 1812 section 4.3.2.7.
    let quoted = ipv4(dst, H1_V4, IpProtocol::Udp, 1, &[0u8; 8]);
    let error = icmp4(&Icmpv4Repr::TimeExceeded { reason: TimeExceeded::TtlExpired, invoking_packet: &quoted });
    let result = r.lab.inject(r.ports[0], &from_h1(&ipv4(H1_V4, dst, IpProtocol::Icmp, 1, &error), EtherType::Ipv4));
    assert_eq!((result.disposition, result.frames.len()), (Disposition::Dropped(DropReason::TtlExpired), 0));
    let mut fragment = ipv4(H1_V4, dst, IpProtocol::Udp, 1, &[0u8; 16]);
    let mut header = dataplane::wire::Ipv4Packet::new_unchecked(&mut fragment[..]);
    header.set_dont_frag(false);
    header.set_frag_offset(8);
    header.fill_checksum();
    let result = r.lab.inject(r.ports[0], &from_h1(&fragment, EtherType::Ipv4));
    assert_eq!((result.disposition, result.frames.len()), (Disposition::Dropped(DropReason::TtlExpired), 0));
}

#[test]
fn hop_limit_expiry_sends_icmpv6_time_exceeded() {
    let mut r = routed();
    r.lab
        .sai
        .create_neighbor_entry(
            NeighborEntryKey { router_interface: r.svi, ip: H1_V6.into() },
            &[NeighborEntryAttr::DstMacAddress(H1_MAC)],
        )
        .unwrap();
    r.lab.inject(r.ports[0], &l2(EthernetAddress::BROADCAST, H1_MAC, None));
    route(&mut r.lab, "2001:db8:100::/48", r.nh3_v6);
    let packet = udp6(H1_V6, "2001:db8:100::9".parse().unwrap(), 33434, 33435, 1, b"trace6");
    let result = r.lab.inject(r.ports[0], &from_h1(&packet, EtherType::Ipv6));
    assert_eq!(result.disposition, Disposition::Dropped(DropReason::TtlExpired));
    // RFC 4443 section 3.3: from the interface's address, quoting the packet.
    let error = icmp6(
        &Icmpv6Repr::TimeExceeded {
            reason: dataplane::wire::icmpv6::TimeExceeded::HopLimitExceeded,
            invoking_packet: &packet,
        },
        SVI_V6,
        H1_V6,
    );
    let expected = eth(H1_MAC, ROUTER_MAC, None, EtherType::Ipv6, &ipv6(SVI_V6, H1_V6, IpProtocol::Icmpv6, 64, &error));
    assert_eq!(result.frames, vec![(Egress::Port(r.index(0)), expected)]);
}

#[test]
fn a_router_interface_administratively_down_routes_nothing() {
    let mut r = routed();
    route(&mut r.lab, "198.51.100.0/24", r.nh3);
    let frame = from_h1(&udp4(H1_V4, Ipv4Addr::new(198, 51, 100, 7), 1, 2, 64, b"x"), EtherType::Ipv4);
    r.lab.sai.set_router_interface_attribute(r.rif3, RouterInterfaceAttr::AdminState(false)).unwrap();
    assert_eq!(r.lab.inject(r.ports[0], &frame).disposition, Disposition::Dropped(DropReason::RouterInterfaceDown));
    r.lab.sai.set_router_interface_attribute(r.rif3, RouterInterfaceAttr::AdminState(true)).unwrap();
    assert_eq!(r.lab.inject(r.ports[0], &frame).ports(), vec![r.index(2)]);
}

#[test]
fn an_unused_stale_neighbor_is_forgotten() {
    let second = 1_000_000_000;
    let config =
        SwitchConfig { neighbor_reachable_ns: 5 * second, neighbor_stale_ns: 20 * second, ..SwitchConfig::default() };
    let mut r = routed_with(config);
    // H1 asks for the gateway: a request to us leaves H1 Stale.
    let request = arp(Operation::Request, H1_MAC, H1_V4, EthernetAddress::ZERO, SVI_V4);
    r.lab.inject(r.ports[0], &eth(EthernetAddress::BROADCAST, H1_MAC, None, EtherType::Arp, &request));
    let key = NeighborEntryKey { router_interface: r.svi, ip: H1_V4.into() };
    let state = |r: &Routed| r.lab.sai.neighbor_table().into_iter().find(|(k, _)| *k == key).map(|(_, i)| i.state);
    assert_eq!(state(&r), Some(NeighborState::Stale));
    r.lab.sai.drain_notifications();
    r.lab.advance(10 * second);
    r.lab.poll();
    assert_eq!(state(&r), Some(NeighborState::Stale), "kept while younger than the stale time");
    assert!(r.lab.sai.drain_notifications().is_empty());
    r.lab.advance(15 * second);
    r.lab.poll();
    assert_eq!(state(&r), None);
    assert_eq!(
        r.lab.sai.drain_notifications(),
        vec![Notification::NeighborExpired { router_interface: r.svi, ip: H1_V4.into() }]
    );
}

/// A routed port in a virtual router of its own: the same prefix routes
/// differently there than in the default virtual router, and a virtual
/// router in use cannot be removed.
#[test]
fn a_virtual_router_has_its_own_routes() {
    let mut lab = Lab::with(SwitchConfig::default(), &[SwitchAttr::SrcMacAddress(ROUTER_MAC)]);
    let (default_port, default_rif) = routed_port(&mut lab, "eth3");
    let vrf = lab.sai.create_virtual_router().unwrap();
    let vrf_port = lab.port("eth5");
    let vrf_rif = lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vrf),
            RouterInterfaceAttr::Type(RouterInterfaceType::Port(vrf_port)),
        ])
        .unwrap();
    let in_default = next_hop(&mut lab, default_rif, IpAddr::V4(R3_V4), R3_MAC);
    let in_vrf = next_hop(&mut lab, vrf_rif, IpAddr::V4(R4_V4), R4_MAC);
    route(&mut lab, "10.1.0.0/30", default_rif);
    route(&mut lab, "172.16.0.0/16", in_default);
    let vrf_route = |prefix: &str| RouteEntryKey { virtual_router: vrf, destination: net(prefix) };
    lab.sai.create_route_entry(vrf_route("10.2.0.0/30"), &[RouteEntryAttr::NextHopId(Some(vrf_rif))]).unwrap();
    lab.sai.create_route_entry(vrf_route("172.16.0.0/16"), &[RouteEntryAttr::NextHopId(Some(in_vrf))]).unwrap();

    let packet = udp4(R4_V4, Ipv4Addr::new(172, 16, 1, 1), 1, 2, 64, b"x");
    let sent = lab.inject(vrf_port, &eth(ROUTER_MAC, R4_MAC, None, EtherType::Ipv4, &packet));
    assert_eq!(sent.disposition, Disposition::Forwarded);
    let routed = udp4(R4_V4, Ipv4Addr::new(172, 16, 1, 1), 1, 2, 63, b"x");
    assert_eq!(
        by_port(&sent.frames),
        vec![(lab.index(vrf_port), eth(R4_MAC, ROUTER_MAC, None, EtherType::Ipv4, &routed))]
    );
    let sent = lab.inject(default_port, &eth(ROUTER_MAC, R3_MAC, None, EtherType::Ipv4, &packet));
    assert_eq!(sent.disposition, Disposition::Forwarded);
    assert_eq!(by_port(&sent.frames)[0].0, lab.index(default_port));
    // 10.1.0.0/30 is the default virtual router's: not reachable from eth5.
    let other = udp4(R4_V4, R3_V4, 1, 2, 64, b"x");
    let sent = lab.inject(vrf_port, &eth(ROUTER_MAC, R4_MAC, None, EtherType::Ipv4, &other));
    assert_eq!(sent.disposition, Disposition::Dropped(DropReason::NoRoute));

    assert!(lab.sai.remove(vrf).is_err(), "in use by its router interface and routes");
    lab.sai.remove_route_entry(vrf_route("172.16.0.0/16")).unwrap();
    lab.sai.remove_route_entry(vrf_route("10.2.0.0/30")).unwrap();
    lab.sai.remove(in_vrf).unwrap();
    lab.sai.remove_neighbor_entry(NeighborEntryKey { router_interface: vrf_rif, ip: IpAddr::V4(R4_V4) }).unwrap();
    lab.sai.remove(vrf_rif).unwrap();
    lab.sai.remove(vrf).unwrap();
}

/// Symmetric IRB through the shim (RFC 9135 section 4.1): a virtual router
/// with a router MAC and an L3VNI (a tunnel map entry VNI <-> virtual
/// router), a route in it through a next hop of type tunnel encap. What
/// it routes leaves VXLAN-encapsulated with the L3VNI toward the VTEP,
/// the inner frame from our router MAC to the tunnel MAC; what arrives on
/// the L3VNI to our router MAC is routed in the virtual router.
#[test]
fn a_virtual_router_routes_over_its_l3vni_through_tunnel_next_hops() {
    use dataplane::wire::{EthernetFrame, Ipv4Packet, UdpPacket, VxlanPacket};
    const VRF_MAC: EthernetAddress = EthernetAddress([0x02, 0xcc, 0, 0, 0, 1]);
    const REMOTE_MAC: EthernetAddress = EthernetAddress([0x02, 0xcc, 0, 0, 0, 2]);
    let (our_vtep, remote_vtep) = (Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(3, 3, 3, 3));
    let mut lab = Lab::with(SwitchConfig::default(), &[SwitchAttr::SrcMacAddress(ROUTER_MAC)]);
    let (underlay_port, underlay_rif) = routed_port(&mut lab, "eth3");
    address(&mut lab, underlay_rif, "1.1.1.1/32", "10.1.0.0/30");
    let to_r3 = next_hop(&mut lab, underlay_rif, IpAddr::V4(R3_V4), R3_MAC);
    route(&mut lab, "3.3.3.3/32", to_r3);
    let tunnel = lab.sai.create_tunnel(&[TunnelAttr::EncapSrcIp(our_vtep)]).unwrap();
    let vrf = lab.sai.create_virtual_router_with(&[VirtualRouterAttr::SrcMacAddress(VRF_MAC)]).unwrap();
    lab.sai
        .create_tunnel_map_entry(&[
            TunnelMapEntryAttr::TunnelId(tunnel),
            TunnelMapEntryAttr::VirtualRouterId(vrf),
            TunnelMapEntryAttr::Vni(4001),
        ])
        .unwrap();
    let vrf_port = lab.port("eth5");
    let vrf_rif = lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vrf),
            RouterInterfaceAttr::Type(RouterInterfaceType::Port(vrf_port)),
        ])
        .unwrap();
    lab.sai
        .create_neighbor_entry(
            NeighborEntryKey { router_interface: vrf_rif, ip: IpAddr::V4(R4_V4) },
            &[NeighborEntryAttr::DstMacAddress(R4_MAC)],
        )
        .unwrap();
    let vrf_route = |prefix: &str| RouteEntryKey { virtual_router: vrf, destination: net(prefix) };
    lab.sai.create_route_entry(vrf_route("10.2.0.0/30"), &[RouteEntryAttr::NextHopId(Some(vrf_rif))]).unwrap();
    assert!(
        lab.sai
            .create_next_hop(&[
                NextHopAttr::Ip(IpAddr::V4(remote_vtep)),
                NextHopAttr::RouterInterfaceId(vrf_rif),
                NextHopAttr::TunnelId(tunnel),
            ])
            .is_err(),
        "a next hop is on a router interface or a tunnel"
    );
    let over_tunnel = lab
        .sai
        .create_next_hop(&[
            NextHopAttr::Ip(IpAddr::V4(remote_vtep)),
            NextHopAttr::TunnelId(tunnel),
            NextHopAttr::TunnelVni(4001),
            NextHopAttr::TunnelMac(REMOTE_MAC),
        ])
        .unwrap();
    lab.sai.create_route_entry(vrf_route("172.16.0.0/16"), &[RouteEntryAttr::NextHopId(Some(over_tunnel))]).unwrap();

    let packet = udp4(R4_V4, Ipv4Addr::new(172, 16, 1, 1), 1, 2, 64, b"x");
    let sent = lab.inject(vrf_port, &eth(ROUTER_MAC, R4_MAC, None, EtherType::Ipv4, &packet));
    assert_eq!(sent.disposition, Disposition::Forwarded);
    let frames = by_port(&sent.frames);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].0, lab.index(underlay_port));
    let outer = EthernetFrame::new_checked(&frames[0].1[..]).unwrap();
    assert_eq!(outer.dst_addr(), R3_MAC);
    let ip = Ipv4Packet::new_checked(outer.payload()).unwrap();
    assert_eq!((ip.src_addr(), ip.dst_addr()), (our_vtep, remote_vtep));
    let udp = UdpPacket::new_checked(ip.payload()).unwrap();
    assert_eq!(udp.dst_port(), 4789);
    let vxlan = VxlanPacket::new_checked(udp.payload()).unwrap();
    assert_eq!(vxlan.vni(), 4001);
    let routed = udp4(R4_V4, Ipv4Addr::new(172, 16, 1, 1), 1, 2, 63, b"x");
    assert_eq!(vxlan.payload(), &eth(REMOTE_MAC, VRF_MAC, None, EtherType::Ipv4, &routed)[..]);

    // Back on the L3VNI, to the host behind eth5.
    let reply = udp4(Ipv4Addr::new(172, 16, 1, 1), R4_V4, 2, 1, 63, b"y");
    let inner = eth(VRF_MAC, REMOTE_MAC, None, EtherType::Ipv4, &reply);
    let mut vxlan = vec![0x08, 0, 0, 0, 0, 0x0f, 0xa1, 0];
    vxlan.extend_from_slice(&inner);
    let outer = udp4(remote_vtep, our_vtep, 49152, 4789, 64, &vxlan);
    let sent = lab.inject(underlay_port, &eth(ROUTER_MAC, R3_MAC, None, EtherType::Ipv4, &outer));
    assert_eq!(sent.disposition, Disposition::Forwarded);
    let delivered = udp4(Ipv4Addr::new(172, 16, 1, 1), R4_V4, 2, 1, 62, b"y");
    assert_eq!(
        by_port(&sent.frames),
        vec![(lab.index(vrf_port), eth(R4_MAC, ROUTER_MAC, None, EtherType::Ipv4, &delivered))]
    );
    assert!(lab.sai.remove(vrf).is_err(), "its L3VNI map and routes hold it");
}
