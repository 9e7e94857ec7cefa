//! Regression tests for the dataplane conformance gaps of issue 16: each
//! drives the switch as an outside host would and checks what the RFC asks.

use std::net::{IpAddr, Ipv6Addr};

use super::l3::*;
use super::*;
use crate::wire::arp::Operation;
use crate::wire::icmpv4::{DstUnreachable, Icmpv4Message};
use crate::wire::icmpv6::Icmpv6Message;
use crate::wire::{Icmpv4Packet, Icmpv6Packet, Icmpv6Repr, IpProtocol, Ipv4Packet, Ipv6Packet};

/// `ip` with DF cleared and `options` added to its header (checksum redone).
fn without_df_with_options(ip: &[u8], options: &[u8]) -> Vec<u8> {
    assert_eq!(options.len() % 4, 0);
    let mut packet = ip[..20].to_vec();
    packet.extend_from_slice(options);
    packet.extend_from_slice(&ip[20..]);
    let mut view = Ipv4Packet::new_unchecked(&mut packet[..]);
    view.set_header_len(20 + options.len());
    view.set_total_len((ip.len() + options.len()) as u16);
    view.set_dont_frag(false);
    view.fill_checksum();
    packet
}

/// The IPv4 packets of the frames `out` sent out of `port`.
fn ipv4_out_of(out: &Output, port: PortId) -> Vec<Vec<u8>> {
    port_frames(out).into_iter().filter(|(to, _)| *to == Egress::Port(port)).map(|(_, f)| f[14..].to_vec()).collect()
}

#[test]
fn gap_8_ipv4_without_df_larger_than_the_mtu_is_fragmented() {
    let mut switch = l3_switch();
    switch.set_neighbor(0, IpAddr::V4(v4("10.0.0.2")), H0).unwrap();
    let rif = switch.router_interface(0).unwrap();
    switch.set_router_interface(0, RouterInterface { mtu: 600, ..rif }).unwrap();
    let data: Vec<u8> = (0..1500u32).map(|i| i as u8).collect();
    // Record Route (not copied), NOP, Router Alert (copied: RFC 2113).
    let options = [7, 3, 4, 1, 0x94, 4, 0, 0];
    let ip = without_df_with_options(&ipv4(v4("10.0.1.2"), v4("10.0.0.2"), IpProtocol::Udp, 9, &data), &options);
    let mut out = Output::new();
    let sent = frame(R1, H1, None, EtherType::Ipv4, &ip);
    assert_eq!(switch.process(NOW, 1, &sent, &mut out), Disposition::Forwarded);
    let fragments = ipv4_out_of(&out, 0);
    assert_eq!(fragments.len(), 3, "1500 octets in 600-octet fragments");
    let mut reassembled = Vec::new();
    for (index, bytes) in fragments.iter().enumerate() {
        let fragment = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert!(bytes.len() <= 600 && fragment.verify_checksum());
        assert_eq!((fragment.ident(), fragment.ttl(), fragment.dont_frag()), (0x1234, 8, false));
        assert_eq!(fragment.more_frags(), index < 2);
        assert_eq!(usize::from(fragment.frag_offset()), reassembled.len(), "offsets follow on");
        assert_eq!(fragment.frag_offset() % 8, 0);
        let expected_options: &[u8] = if index == 0 { &options } else { &[0x94, 4, 0, 0] };
        assert_eq!(fragment.options(), expected_options, "fragment {index}");
        reassembled.extend_from_slice(fragment.payload());
    }
    assert_eq!(reassembled, &ip[28..], "the datagram's data, in order");
    // A fragment is fragmented further from its own offset, MF kept on the last piece.
    let mut middle = ipv4(v4("10.0.1.2"), v4("10.0.0.2"), IpProtocol::Udp, 9, &data[..800]);
    let mut view = Ipv4Packet::new_unchecked(&mut middle[..]);
    view.set_dont_frag(false);
    view.set_more_frags(true);
    view.set_frag_offset(2000);
    view.fill_checksum();
    out.clear();
    assert_eq!(
        switch.process(NOW, 1, &frame(R1, H1, None, EtherType::Ipv4, &middle), &mut out),
        Disposition::Forwarded
    );
    let pieces = ipv4_out_of(&out, 0);
    let offsets: Vec<(u16, bool)> = pieces
        .iter()
        .map(|bytes| {
            let packet = Ipv4Packet::new_unchecked(&bytes[..]);
            (packet.frag_offset(), packet.more_frags())
        })
        .collect();
    assert_eq!(offsets, vec![(2000, true), (2576, true)]);
}

#[test]
fn gap_16_the_mtu_of_an_svi_or_routed_port_is_capped_by_its_ports() {
    let mut switch = l3_switch();
    let mut out = Output::new();
    switch.set_neighbor(1, IpAddr::V4(v4("10.0.1.2")), H1).unwrap();
    switch.set_neighbor(2, IpAddr::V4(v4("192.168.100.5")), H2).unwrap();
    switch.set_fdb_entry(100, H2, FdbDest::Port(2), FdbKind::Static, NOW).unwrap();
    // Port 3, a trunk in the SVI's VLAN, carries jumbo frames no more.
    switch.set_port(3, PortConfig { pvid: 0, mtu: 1280, ..PortConfig::default() }).unwrap();
    let big = ipv4(v4("10.0.1.2"), v4("192.168.100.5"), IpProtocol::Udp, 9, &[0; 1380]);
    let sent = frame(R1, H1, None, EtherType::Ipv4, &big);
    assert_eq!(switch.process(NOW, 1, &sent, &mut out), Disposition::Dropped(DropReason::MtuExceeded));
    let replies = ipv4_out_of(&out, 1);
    let icmp_packet = Ipv4Packet::new_checked(&replies[0][..]).unwrap();
    let icmp = Icmpv4Packet::new_checked(icmp_packet.payload()).unwrap();
    assert_eq!(
        (icmp.msg_type(), icmp.msg_code(), icmp.next_hop_mtu()),
        (Icmpv4Message::DstUnreachable, u8::from(DstUnreachable::FragRequired), 1280),
        "frag-needed with the member port's MTU (RFC 1191)"
    );
    // The port leaves the VLAN: the SVI's own 1500 holds again.
    switch.remove_vlan_member(100, 3).unwrap();
    out.clear();
    assert_eq!(switch.process(NOW, 1, &sent, &mut out), Disposition::Forwarded);
    assert_eq!(ports_of(&out), vec![2]);
    // A routed port's MTU caps its interface's, for IPv6 too.
    switch.set_port(1, PortConfig { pvid: 0, mtu: 1400, ..PortConfig::default() }).unwrap();
    switch.set_neighbor(0, IpAddr::V6(v6("2001:db8::2")), H0).unwrap();
    switch.set_neighbor(1, IpAddr::V6(v6("2001:db8:1::2")), H1).unwrap();
    let echo = Icmpv6Repr::EchoRequest { ident: 1, seq_no: 1, data: &[0; 1400] };
    let ip = ipv6(v6("2001:db8::2"), v6("2001:db8:ff::9"), 30, &echo);
    out.clear();
    let v6_sent = frame(R0, H0, None, EtherType::Ipv6, &ip);
    assert_eq!(switch.process(NOW, 0, &v6_sent, &mut out), Disposition::Dropped(DropReason::MtuExceeded));
    let replies = port_frames(&out);
    let packet = Ipv6Packet::new_checked(&replies[0].1[14..]).unwrap();
    let icmp = Icmpv6Packet::new_checked(packet.payload()).unwrap();
    assert_eq!(
        Icmpv6Repr::parse(&icmp, packet.src_addr(), packet.dst_addr()).map(|repr| match repr {
            Icmpv6Repr::PacketTooBig { mtu, .. } => mtu,
            _ => 0,
        }),
        Ok(1400)
    );
}

#[test]
fn gap_11_packets_to_an_unresolved_neighbour_wait_for_it_within_bounds() {
    let mut switch = l3_switch_with(SwitchConfig { neighbor_hold_capacity: 4, ..SwitchConfig::default() });
    let mut out = Output::new();
    let packets: Vec<Vec<u8>> = (0..4).map(|sport| udp_packet("10.0.1.2", "10.0.0.2", 1000 + sport, 64)).collect();
    let send = |switch: &mut Switch, out: &mut Output, ip: &[u8]| {
        switch.process(NOW, 1, &frame(R1, H1, None, EtherType::Ipv4, ip), out)
    };
    // Three wait for 10.0.0.2 (RFC 4861 7.2.2 asks for at least one); the
    // fourth is over that neighbour's share.
    for ip in &packets[..3] {
        assert_eq!(send(&mut switch, &mut out, ip), Disposition::Held);
    }
    assert_eq!(send(&mut switch, &mut out, &packets[3]), Disposition::Dropped(DropReason::NeighborQueueFull));
    // The table holds four in all: another neighbour gets the one left.
    let other = udp_packet("10.0.1.2", "10.0.0.3", 7, 64);
    assert_eq!(send(&mut switch, &mut out, &other), Disposition::Held);
    let one_more = udp_packet("10.0.1.2", "10.0.0.4", 7, 64);
    assert_eq!(send(&mut switch, &mut out, &one_more), Disposition::Dropped(DropReason::NeighborQueueFull));
    // Counted apart from resolution failures, as Linux's unresolved_discards.
    assert_eq!(switch.drop_counters()[DropReason::NeighborQueueFull], 2);
    assert_eq!(switch.drop_counters()[DropReason::NeighborMiss], 0);
    // The ARP reply sends the three, oldest first, and nothing for 10.0.0.3.
    out.clear();
    let reply = frame(R0, H0, None, EtherType::Arp, &arp(Operation::Reply, H0, "10.0.0.2", R0, "10.0.0.1"));
    switch.process(NOW + 1, 0, &reply, &mut out);
    let expected: Vec<(Egress, Vec<u8>)> =
        packets[..3].iter().map(|ip| (Egress::Port(0), frame(H0, R0, None, EtherType::Ipv4, &routed(ip)))).collect();
    assert_eq!(port_frames(&out), expected);
    // Their slots are free again.
    assert_eq!(send(&mut switch, &mut out, &one_more), Disposition::Held);
}

#[test]
fn gap_12_failed_resolution_answers_each_held_packet_with_unreachable() {
    let config = SwitchConfig::default();
    let mut switch = l3_switch();
    let mut out = Output::new();
    switch.set_neighbor(1, IpAddr::V4(v4("10.0.1.2")), H1).unwrap();
    switch.set_neighbor(1, IpAddr::V6(v6("2001:db8:1::2")), H1).unwrap();
    let ip = udp_packet("10.0.1.2", "10.0.0.5", 1, 9);
    assert_eq!(switch.process(NOW, 1, &frame(R1, H1, None, EtherType::Ipv4, &ip), &mut out), Disposition::Held);
    let echo = Icmpv6Repr::EchoRequest { ident: 1, seq_no: 1, data: b"anyone?" };
    let ip6 = ipv6(v6("2001:db8:1::2"), v6("2001:db8::5"), 64, &echo);
    assert_eq!(switch.process(NOW, 1, &frame(R1, H1, None, EtherType::Ipv6, &ip6), &mut out), Disposition::Held);
    // Nobody answers the requests.
    let mut t = NOW;
    let mut errors = Vec::new();
    while errors.len() < 2 {
        t += config.neighbor_retrans_ns / 4;
        assert!(t < NOW + 10 * SECOND, "resolution never gave up");
        out.clear();
        switch.poll(t, &mut out);
        errors.extend(port_frames(&out).into_iter().filter(|(to, _)| *to == Egress::Port(1)));
    }
    assert_eq!(switch.neighbor(0, IpAddr::V4(v4("10.0.0.5"))).unwrap().state, NeighborState::Failed);
    // RFC 1812 4.3.3.1: host unreachable, from the interface the packet came in by.
    let (_, v4_error) = errors.iter().find(|(_, f)| f[12..14] == [0x08, 0x00]).unwrap();
    let packet = Ipv4Packet::new_checked(&v4_error[14..]).unwrap();
    assert_eq!((packet.src_addr(), packet.dst_addr()), (v4("10.0.1.1"), v4("10.0.1.2")));
    let icmp = Icmpv4Packet::new_checked(packet.payload()).unwrap();
    assert_eq!((icmp.msg_type(), icmp.msg_code()), (Icmpv4Message::DstUnreachable, 1));
    assert_eq!(&icmp.data()[16..20], &v4("10.0.0.5").octets(), "the held packet is quoted");
    // RFC 4443 3.1: address unreachable, code 3.
    let (_, v6_error) = errors.iter().find(|(_, f)| f[12..14] == [0x86, 0xdd]).unwrap();
    let packet = Ipv6Packet::new_checked(&v6_error[14..]).unwrap();
    assert_eq!((packet.src_addr(), packet.dst_addr()), (v6("2001:db8:1::1"), v6("2001:db8:1::2")));
    let icmp = Icmpv6Packet::new_checked(packet.payload()).unwrap();
    assert_eq!((icmp.msg_type(), icmp.msg_code()), (Icmpv6Message::DstUnreachable, 3));
    assert!(icmp.verify_checksum(packet.src_addr(), packet.dst_addr()));
    assert_eq!(switch.drop_counters()[DropReason::NeighborMiss], 2, "the held packets count as dropped now");
    // While the failure holds off new requests, a packet is refused at once, with the error.
    out.clear();
    let disposition = switch.process(t, 1, &frame(R1, H1, None, EtherType::Ipv4, &ip), &mut out);
    assert_eq!(disposition, Disposition::Dropped(DropReason::NeighborMiss));
    assert_eq!(port_frames(&out).len(), 1, "the unreachable, and no request");
}

/// The ICMPv6 message of an IPv6 frame: (source, destination, type, code).
fn icmpv6_of(frame: &[u8]) -> (Ipv6Addr, Ipv6Addr, Icmpv6Message, u8) {
    let packet = Ipv6Packet::new_checked(&frame[14..]).unwrap();
    let icmp = Icmpv6Packet::new_checked(packet.payload()).unwrap();
    assert!(icmp.verify_checksum(packet.src_addr(), packet.dst_addr()));
    (packet.src_addr(), packet.dst_addr(), icmp.msg_type(), icmp.msg_code())
}

#[test]
fn gap_10_the_subnet_router_anycast_address_is_answered() {
    let mut switch = l3_switch();
    let mut out = Output::new();
    switch.set_neighbor(1, IpAddr::V6(v6("2001:db8:1::2")), H1).unwrap();
    // From another subnet, routed: an echo to 2001:db8:: (RIF 0's prefix).
    let echo = Icmpv6Repr::EchoRequest { ident: 7, seq_no: 1, data: b"anycast" };
    let ping = ipv6(v6("2001:db8:1::2"), v6("2001:db8::"), 64, &echo);
    assert_eq!(switch.process(NOW, 1, &frame(R1, H1, None, EtherType::Ipv6, &ping), &mut out), Disposition::Consumed);
    let replies = port_frames(&out);
    assert_eq!(replies.len(), 1, "no solicitation for it, no forwarding");
    assert_eq!(
        icmpv6_of(&replies[0].1),
        (v6("2001:db8::"), v6("2001:db8:1::2"), Icmpv6Message::EchoReply, 0),
        "answered from the anycast address itself (RFC 4291 2.6)"
    );
    // On its link, a host first solicits it: a router answers, without
    // the override flag (RFC 4861 7.2.7).
    out.clear();
    let solicit = Icmpv6Repr::NeighborSolicit { target_addr: v6("2001:db8::"), source_lladdr: Some(H0) };
    let ns = ipv6(v6("2001:db8::2"), v6("ff02::1:ff00:0"), 255, &solicit);
    let group = EthernetAddress([0x33, 0x33, 0xff, 0, 0, 0]);
    assert_eq!(switch.process(NOW, 0, &frame(group, H0, None, EtherType::Ipv6, &ns), &mut out), Disposition::Consumed);
    let advert = Icmpv6Repr::NeighborAdvert {
        router_flag: true,
        solicited_flag: true,
        override_flag: false,
        target_addr: v6("2001:db8::"),
        target_lladdr: Some(R0),
    };
    let expected = frame(H0, R0, None, EtherType::Ipv6, &ipv6(v6("2001:db8::"), v6("2001:db8::2"), 255, &advert));
    assert_eq!(port_frames(&out), vec![(Egress::Port(0), expected)]);
    // Any other address of the prefix is a host's, still forwarded.
    out.clear();
    let to_host = ipv6(v6("2001:db8:1::2"), v6("2001:db8::100"), 64, &echo);
    assert_eq!(switch.process(NOW, 1, &frame(R1, H1, None, EtherType::Ipv6, &to_host), &mut out), Disposition::Held);
}

#[test]
fn gap_15_link_local_sources_are_answered_on_their_link() {
    let mut switch = l3_switch();
    // No fe80::/64 route at all: the link-local zone is the interface.
    switch.remove_route(net("fe80::/64")).unwrap();
    let mut out = Output::new();
    switch.set_neighbor(0, IpAddr::V6(v6("fe80::2")), H0).unwrap();
    switch.set_neighbor(1, IpAddr::V6(v6("fe80::2")), H1).unwrap();
    // An echo from a neighbour's link-local address to the switch's.
    let echo = Icmpv6Repr::EchoRequest { ident: 3, seq_no: 9, data: b"ll" };
    for (port, host, router) in [(0, H0, R0), (1, H1, R1)] {
        out.clear();
        let ping = ipv6(v6("fe80::2"), v6("fe80::1"), 64, &echo);
        let disposition = switch.process(NOW, port, &frame(router, host, None, EtherType::Ipv6, &ping), &mut out);
        assert_eq!(disposition, Disposition::Consumed);
        let replies = port_frames(&out);
        assert_eq!(replies.len(), 1);
        assert_eq!(replies[0].0, Egress::Port(port), "back on the link it came from");
        assert_eq!(&replies[0].1[..6], host.as_bytes());
        assert_eq!(icmpv6_of(&replies[0].1), (v6("fe80::1"), v6("fe80::2"), Icmpv6Message::EchoReply, 0));
    }
    // A link-local source toward a global destination: beyond scope, code 2.
    out.clear();
    let off_link = ipv6(v6("fe80::2"), v6("2001:db8:ff::9"), 64, &echo);
    assert_eq!(
        switch.process(NOW, 0, &frame(R0, H0, None, EtherType::Ipv6, &off_link), &mut out),
        Disposition::Dropped(DropReason::NoRoute)
    );
    let errors = port_frames(&out);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].0, Egress::Port(0));
    assert_eq!(icmpv6_of(&errors[0].1), (v6("fe80::1"), v6("fe80::2"), Icmpv6Message::DstUnreachable, 2));
}

#[test]
fn gap_13_a_packet_hairpinned_to_an_on_link_next_hop_gets_a_redirect() {
    let mut switch = l3_switch();
    let mut out = Output::new();
    // 10.5.0.0/16 is behind 10.0.0.3, on the same link as the sender 10.0.0.2.
    switch.set_neighbor(0, IpAddr::V4(v4("10.0.0.2")), H0).unwrap();
    switch.set_neighbor(0, IpAddr::V4(v4("10.0.0.3")), H1).unwrap();
    switch.set_next_hop(9, NextHop { rif: 0, ip: IpAddr::V4(v4("10.0.0.3")) }).unwrap();
    switch.set_route(net("10.5.0.0/16"), RouteTarget::NextHop(9)).unwrap();
    let ip = udp_packet("10.0.0.2", "10.5.0.1", 1, 9);
    let sent = frame(R0, H0, None, EtherType::Ipv4, &ip);
    assert_eq!(switch.process(NOW, 0, &sent, &mut out), Disposition::Forwarded, "forwarded all the same");
    let frames = port_frames(&out);
    assert_eq!(frames.len(), 2);
    assert!(frames.contains(&(Egress::Port(0), frame(H1, R0, None, EtherType::Ipv4, &routed(&ip)))));
    let (_, redirect) = frames.iter().find(|(_, f)| f[..6] == *H0.as_bytes()).unwrap();
    let packet = Ipv4Packet::new_checked(&redirect[14..]).unwrap();
    assert_eq!((packet.src_addr(), packet.dst_addr()), (v4("10.0.0.1"), v4("10.0.0.2")));
    let icmp = Icmpv4Packet::new_checked(packet.payload()).unwrap();
    assert_eq!(
        crate::wire::Icmpv4Repr::parse(&icmp),
        Ok(crate::wire::Icmpv4Repr::Redirect { code: 1, gateway: v4("10.0.0.3"), invoking_packet: &ip[..] }),
        "a host redirect naming 10.0.0.3 (RFC 1812 5.2.7.2)"
    );
    // A source off the interface's subnets learns nothing from a redirect.
    out.clear();
    let off_subnet = udp_packet("10.7.0.9", "10.5.0.1", 1, 9);
    switch.process(NOW, 0, &frame(R0, H0, None, EtherType::Ipv4, &off_subnet), &mut out);
    assert_eq!(port_frames(&out).len(), 1, "no redirect");
    // Turned off on the interface: forwarded only.
    switch.set_send_redirects(0, false).unwrap();
    out.clear();
    assert_eq!(switch.process(NOW, 0, &sent, &mut out), Disposition::Forwarded);
    assert_eq!(port_frames(&out), vec![(Egress::Port(0), frame(H1, R0, None, EtherType::Ipv4, &routed(&ip)))]);
    switch.set_send_redirects(0, true).unwrap();

    // IPv6 (RFC 4861 8.2): the better first hop is a router, named by its
    // link-local address, from the switch's link-local address, hop limit 255.
    switch.set_neighbor(0, IpAddr::V6(v6("2001:db8::2")), H0).unwrap();
    switch.set_neighbor(0, IpAddr::V6(v6("fe80::3")), H1).unwrap();
    switch.set_next_hop(10, NextHop { rif: 0, ip: IpAddr::V6(v6("fe80::3")) }).unwrap();
    switch.set_route(net("2001:db8:ee::/48"), RouteTarget::NextHop(10)).unwrap();
    let echo = Icmpv6Repr::EchoRequest { ident: 1, seq_no: 1, data: b"hairpin" };
    let ip6 = ipv6(v6("2001:db8::2"), v6("2001:db8:ee::1"), 64, &echo);
    out.clear();
    assert_eq!(switch.process(NOW, 0, &frame(R0, H0, None, EtherType::Ipv6, &ip6), &mut out), Disposition::Forwarded);
    let frames = port_frames(&out);
    let (_, redirect) = frames.iter().find(|(_, f)| f[..6] == *H0.as_bytes()).unwrap();
    let packet = Ipv6Packet::new_checked(&redirect[14..]).unwrap();
    assert_eq!((packet.src_addr(), packet.dst_addr(), packet.hop_limit()), (v6("fe80::1"), v6("2001:db8::2"), 255));
    let icmp = Icmpv6Packet::new_checked(packet.payload()).unwrap();
    match Icmpv6Repr::parse(&icmp, packet.src_addr(), packet.dst_addr()).unwrap() {
        Icmpv6Repr::Redirect { target_addr, dst_addr, target_lladdr, redirected } => {
            assert_eq!((target_addr, dst_addr, target_lladdr), (v6("fe80::3"), v6("2001:db8:ee::1"), Some(H1)));
            assert_eq!(&redirected[..ip6.len()], &ip6[..], "the redirected packet, as it came");
        }
        other => panic!("not a redirect: {other:?}"),
    }
}
