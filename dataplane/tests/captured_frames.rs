//! Golden frames from real captures: every frame in `tests/captures/*.pcap`
//! was sent by a Linux kernel between network namespaces and recorded with
//! tcpdump (see `tests/captures/README.md` and `scripts/capture-goldens`).
//! Each frame is walked with the `wire` parsers, its known fields and
//! checksums are checked, and where a `Repr` holds the whole header, emitting
//! it must give back the captured bytes.
//!
//! Fields the script does not fix (IPv4 ident, flow labels, ping
//! timestamps, the VXLAN source port, the IPv6 fragment ident) are not
//! asserted by value, only through the emit round trips.

use std::fs::File;
use std::net::{Ipv4Addr, Ipv6Addr};

use dataplane::wire::icmpv4::{DstUnreachable, TimeExceeded};
use dataplane::wire::vlan::{L2Header, TAG_LEN};
use dataplane::wire::{
    Ecn, EtherType, EthernetAddress, EthernetFrame, EthernetRepr, Icmpv4Packet, Icmpv4Repr, Icmpv6Packet, Icmpv6Repr,
    IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, PseudoHeader, UdpPacket, UdpRepr, VXLAN_PORT, VlanTag,
    VlanTagRepr, VxlanPacket, VxlanRepr, ethernet, ipv4, ipv6, udp, vxlan, walk_extension_headers,
};
use pcap_file::DataLink;
use pcap_file::pcap::PcapReader;

const CAPTURES: [&str; 10] = [
    "icmpv4-echo.pcap",
    "icmpv4-port-unreachable.pcap",
    "icmpv4-time-exceeded.pcap",
    "icmpv6-echo-nd.pcap",
    "ipv4-options-rr.pcap",
    "ipv6-fragment.pcap",
    "udp.pcap",
    "vlan-8021q.pcap",
    "vlan-qinq.pcap",
    "vxlan.pcap",
];

const MAC_A: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 0x0a]);
const MAC_B: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 0x0b]);
const IP_A: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
const IP_B: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);
const IP6_A: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1);
const IP6_B: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 2);
/// What the script's UDP sender puts in every datagram.
const UDP_PAYLOAD: &[u8] = b"captured golden\n";
/// `ping -s 16`: the data is the sender's 16-byte timestamp.
const PING_DATA_LEN: usize = 16;

fn frames(name: &str) -> Vec<Vec<u8>> {
    let path = format!("{}/tests/captures/{name}", env!("CARGO_MANIFEST_DIR"));
    let file = File::open(&path).unwrap_or_else(|err| panic!("{path}: {err}"));
    let mut reader = PcapReader::new(file).unwrap_or_else(|err| panic!("{path}: {err}"));
    assert_eq!(reader.header().datalink, DataLink::ETHERNET, "{name}");
    let mut frames = Vec::new();
    while let Some(packet) = reader.next_packet() {
        let packet = packet.unwrap_or_else(|err| panic!("{path}: {err}"));
        assert_eq!(packet.orig_len as usize, packet.data.len(), "{name}: frame cut short by the snap length");
        frames.push(packet.data.into_owned());
    }
    frames
}

/// Walks the Ethernet header and tags, and checks that the Ethernet and tag
/// `Repr`s emit the captured bytes.
fn l2(frame: &[u8]) -> L2Header {
    let header = L2Header::parse(frame).unwrap();
    let repr = EthernetRepr::parse(&EthernetFrame::new_checked(frame).unwrap()).unwrap();
    assert_eq!((repr.dst_addr, repr.src_addr), (header.dst_addr, header.src_addr));
    let mut emitted = [0u8; ethernet::HEADER_LEN];
    repr.emit(&mut EthernetFrame::new_unchecked(&mut emitted[..]));
    assert_eq!(emitted[..], frame[..ethernet::HEADER_LEN]);

    let mut offset = ethernet::HEADER_LEN;
    for tag in [header.outer, header.inner].into_iter().flatten() {
        let mut emitted = [0u8; TAG_LEN];
        tag.emit(&mut VlanTag::new_unchecked(&mut emitted[..]));
        assert_eq!(emitted[..], frame[offset..offset + TAG_LEN]);
        offset += TAG_LEN;
    }
    assert_eq!(header.payload_offset, offset);
    header
}

/// Parses an IPv4 packet (checksum verified), returning its `Repr`, header
/// length and payload. Without options the `Repr` must emit the captured
/// header; with them, it must round-trip through a 20-byte header.
fn ipv4(bytes: &[u8]) -> (Ipv4Repr, usize, &[u8]) {
    let packet = Ipv4Packet::new_checked(bytes).unwrap();
    assert!(packet.verify_checksum());
    let repr = Ipv4Repr::parse(&packet).unwrap();
    let header_len = packet.header_len();
    assert_eq!(usize::from(packet.total_len()), bytes.len(), "no padding on veth");
    assert_eq!(packet.payload().len(), repr.payload_len);

    let mut emitted = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Ipv4Packet::new_unchecked(&mut emitted[..]));
    if header_len == ipv4::HEADER_LEN {
        assert_eq!(emitted[..ipv4::HEADER_LEN], bytes[..ipv4::HEADER_LEN]);
    } else {
        assert_eq!(Ipv4Repr::parse(&Ipv4Packet::new_checked(&emitted[..]).unwrap()).unwrap(), repr);
    }
    (repr, header_len, packet.payload())
}

/// Parses the fixed IPv6 header, checks that its `Repr` emits the captured
/// bytes, and returns it with the payload.
fn ipv6(bytes: &[u8]) -> (Ipv6Repr, &[u8]) {
    let packet = Ipv6Packet::new_checked(bytes).unwrap();
    let repr = Ipv6Repr::parse(&packet).unwrap();
    assert_eq!(repr.buffer_len(), bytes.len(), "no padding on veth");
    let mut emitted = [0u8; ipv6::HEADER_LEN];
    repr.emit(&mut Ipv6Packet::new_unchecked(&mut emitted[..]));
    assert_eq!(emitted[..], bytes[..ipv6::HEADER_LEN]);
    (repr, packet.payload())
}

/// Parses an ICMPv4 message (checksum verified) and checks that its `Repr`
/// emits the captured bytes.
fn icmpv4(bytes: &[u8]) -> Icmpv4Repr<'_> {
    let packet = Icmpv4Packet::new_checked(bytes).unwrap();
    assert!(packet.verify_checksum());
    let repr = Icmpv4Repr::parse(&packet).unwrap();
    let mut emitted = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Icmpv4Packet::new_unchecked(&mut emitted[..]));
    assert_eq!(emitted, bytes);
    repr
}

fn icmpv6(bytes: &[u8], src_addr: Ipv6Addr, dst_addr: Ipv6Addr) -> Icmpv6Repr<'_> {
    let packet = Icmpv6Packet::new_checked(bytes).unwrap();
    assert!(packet.verify_checksum(src_addr, dst_addr));
    let repr = Icmpv6Repr::parse(&packet, src_addr, dst_addr).unwrap();
    let mut emitted = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Icmpv6Packet::new_unchecked(&mut emitted[..]), src_addr, dst_addr);
    assert_eq!(emitted, bytes);
    repr
}

/// Parses a UDP datagram (checksum present and verified) and checks that
/// `emit`, given the payload in place, writes back the captured header.
fn udp(bytes: &[u8], pseudo: PseudoHeader) -> (UdpRepr, &[u8]) {
    let packet = UdpPacket::new_checked(bytes).unwrap();
    assert_ne!(packet.checksum(), 0, "the kernel computed a checksum");
    assert!(packet.verify_checksum(&pseudo));
    let repr = UdpRepr::parse(&packet, &pseudo).unwrap();
    let mut emitted = bytes.to_vec();
    emitted[..udp::HEADER_LEN].fill(0);
    repr.emit(&mut UdpPacket::new_unchecked(&mut emitted[..]), &pseudo);
    assert_eq!(emitted, bytes);
    (repr, &bytes[udp::HEADER_LEN..])
}

/// The IPv4 part of a ping between `src` and `dst` on an untagged or tagged
/// link, returning the echo.
fn ping_v4(frame: &[u8], src_addr: Ipv4Addr, dst_addr: Ipv4Addr) -> Icmpv4Repr<'_> {
    let header = l2(frame);
    assert_eq!(header.ethertype, EtherType::Ipv4);
    let (ip, header_len, payload) = ipv4(&frame[header.payload_offset..]);
    assert_eq!((ip.src_addr, ip.dst_addr), (src_addr, dst_addr));
    assert_eq!(header_len, ipv4::HEADER_LEN);
    assert_eq!((ip.protocol, ip.ttl, ip.dscp, ip.ecn), (IpProtocol::Icmp, 64, 0, Ecn::NotEct));
    assert!(!ip.more_frags && ip.frag_offset == 0);
    icmpv4(payload)
}

/// A request and its reply: the reply echoes ident, sequence and data.
fn assert_echo_pair(request: Icmpv4Repr, reply: Icmpv4Repr, ident: u16) {
    let Icmpv4Repr::EchoRequest { ident: req_ident, seq_no: req_seq, data: req_data } = request else {
        panic!("not an echo request: {request:?}")
    };
    let Icmpv4Repr::EchoReply { ident: rep_ident, seq_no: rep_seq, data: rep_data } = reply else {
        panic!("not an echo reply: {reply:?}")
    };
    assert_eq!((req_ident, req_seq, req_data.len()), (ident, 1, PING_DATA_LEN));
    assert_eq!((rep_ident, rep_seq, rep_data), (ident, 1, req_data));
}

#[test]
fn every_capture_is_checked_here() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/captures");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".pcap"))
        .collect();
    on_disk.sort();
    assert_eq!(on_disk, CAPTURES);
    for name in CAPTURES {
        assert!(!frames(name).is_empty(), "{name} is empty");
    }
}

#[test]
fn icmpv4_echo_request_and_reply() {
    let frames = frames("icmpv4-echo.pcap");
    assert_eq!(frames.len(), 2);
    let header = l2(&frames[0]);
    assert_eq!((header.dst_addr, header.src_addr, header.outer), (MAC_B, MAC_A, None));
    assert_eq!(header.payload_offset, ethernet::HEADER_LEN);
    let (request_ip, _, _) = ipv4(&frames[0][ethernet::HEADER_LEN..]);
    assert!(request_ip.dont_frag, "ping sets DF (path MTU discovery)");
    assert_eq!(request_ip.payload_len, 8 + PING_DATA_LEN);

    let request = ping_v4(&frames[0], IP_A, IP_B);
    let reply = ping_v4(&frames[1], IP_B, IP_A);
    assert_eq!((l2(&frames[1]).dst_addr, l2(&frames[1]).src_addr), (MAC_A, MAC_B));
    assert_echo_pair(request, reply, 4004);
}

#[test]
fn ipv4_record_route_options_are_skipped() {
    let frames = frames("ipv4-options-rr.pcap");
    assert_eq!(frames.len(), 2);
    let mut echoes = Vec::new();
    for (frame, (src_addr, dst_addr)) in frames.iter().zip([(IP_A, IP_B), (IP_B, IP_A)]) {
        let bytes = &frame[ethernet::HEADER_LEN..];
        let (ip, header_len, payload) = ipv4(bytes);
        // RFC 791: 40 bytes of options (record route for 9 addresses) make
        // IHL 15; the ICMP message starts at IHL * 4.
        assert_eq!(usize::from(bytes[0] & 0x0f) * 4, header_len);
        assert_eq!(header_len, 60);
        assert_eq!(payload.as_ptr(), bytes[header_len..].as_ptr());
        assert_eq!((ip.src_addr, ip.dst_addr, ip.protocol), (src_addr, dst_addr, IpProtocol::Icmp));
        assert_eq!(ip.payload_len, 8 + PING_DATA_LEN);
        echoes.push(icmpv4(payload));
    }
    assert_echo_pair(echoes[0], echoes[1], 4242);

    // The options themselves, as the kernel wrote them: the request carries
    // NOP then Record Route (type 7, length 39) with A's address recorded;
    // the reply has B's twice more (outgoing on B, and B's own answer).
    let request_options = Ipv4Packet::new_checked(&frames[0][ethernet::HEADER_LEN..]).unwrap().options().to_vec();
    assert_eq!(request_options[..4], [1, 7, 39, 8]);
    assert_eq!(request_options[4..8], IP_A.octets());
    assert!(request_options[8..].iter().all(|&byte| byte == 0));
    let reply_options = Ipv4Packet::new_checked(&frames[1][ethernet::HEADER_LEN..]).unwrap().options().to_vec();
    assert_eq!(reply_options[..3], [7, 39, 16]);
    assert_eq!(reply_options[3..15], [IP_A.octets(), IP_B.octets(), IP_B.octets()].concat());
}

#[test]
fn udp_over_ipv4_and_ipv6() {
    let frames = frames("udp.pcap");
    assert_eq!(frames.len(), 2);

    let header = l2(&frames[0]);
    assert_eq!((header.dst_addr, header.src_addr, header.ethertype), (MAC_B, MAC_A, EtherType::Ipv4));
    let (ip, _, payload) = ipv4(&frames[0][header.payload_offset..]);
    assert_eq!((ip.src_addr, ip.dst_addr, ip.protocol, ip.ttl), (IP_A, IP_B, IpProtocol::Udp, 64));
    let (datagram, data) = udp(payload, PseudoHeader::V4 { src_addr: IP_A, dst_addr: IP_B });
    assert_eq!((datagram.src_port, datagram.dst_port, data), (4000, 5000, UDP_PAYLOAD));

    let header = l2(&frames[1]);
    assert_eq!((header.dst_addr, header.src_addr, header.ethertype), (MAC_B, MAC_A, EtherType::Ipv6));
    let (ip, payload) = ipv6(&frames[1][header.payload_offset..]);
    assert_eq!((ip.src_addr, ip.dst_addr, ip.next_header, ip.hop_limit), (IP6_A, IP6_B, IpProtocol::Udp, 64));
    let upper = walk_extension_headers(ip.next_header, payload).unwrap();
    assert_eq!((upper.protocol, upper.offset, upper.fragment), (IpProtocol::Udp, 0, None));
    let (datagram, data) = udp(payload, PseudoHeader::V6 { src_addr: IP6_A, dst_addr: IP6_B });
    assert_eq!((datagram.src_port, datagram.dst_port, data), (4000, 5000, UDP_PAYLOAD));
}

#[test]
fn icmpv4_port_unreachable_quotes_the_datagram() {
    let frames = frames("icmpv4-port-unreachable.pcap");
    assert_eq!(frames.len(), 2);
    let (probe, _, probe_payload) = ipv4(&frames[0][ethernet::HEADER_LEN..]);
    let (datagram, _) = udp(probe_payload, PseudoHeader::V4 { src_addr: IP_A, dst_addr: IP_B });
    assert_eq!((datagram.src_port, datagram.dst_port), (4001, 5001));

    let header = l2(&frames[1]);
    assert_eq!((header.dst_addr, header.src_addr), (MAC_A, MAC_B));
    let (error, _, payload) = ipv4(&frames[1][header.payload_offset..]);
    assert_eq!((error.src_addr, error.dst_addr, error.protocol), (IP_B, IP_A, IpProtocol::Icmp));
    // Linux sends ICMP errors with TOS 0xc0: DSCP CS6 (48), not ECN-capable.
    assert_eq!((error.dscp, error.ecn), (48, Ecn::NotEct));
    let Icmpv4Repr::DstUnreachable { reason, next_hop_mtu, invoking_packet } = icmpv4(payload) else {
        panic!("not a destination unreachable")
    };
    assert_eq!((reason, next_hop_mtu), (DstUnreachable::PortUnreachable, 0));
    // The whole datagram fits in the quote, so it is quoted byte for byte.
    assert_eq!(invoking_packet, &frames[0][ethernet::HEADER_LEN..]);
    let (quoted, _, quoted_payload) = ipv4(invoking_packet);
    assert_eq!(quoted, probe);
    assert_eq!(UdpPacket::new_checked(quoted_payload).unwrap().dst_port(), 5001);
}

#[test]
fn icmpv4_time_exceeded_from_a_router() {
    let frames = frames("icmpv4-time-exceeded.pcap");
    assert_eq!(frames.len(), 2);
    let host_mac = EthernetAddress([2, 0, 0, 0, 1, 0x0a]);
    let router_mac = EthernetAddress([2, 0, 0, 0, 1, 0x01]);
    let host = Ipv4Addr::new(10, 0, 3, 1);
    let router = Ipv4Addr::new(10, 0, 3, 254);
    let far = Ipv4Addr::new(10, 0, 4, 1);

    let header = l2(&frames[0]);
    assert_eq!((header.dst_addr, header.src_addr), (router_mac, host_mac));
    let (probe, _, probe_payload) = ipv4(&frames[0][header.payload_offset..]);
    assert_eq!((probe.src_addr, probe.dst_addr, probe.ttl), (host, far, 1));
    let Icmpv4Repr::EchoRequest { ident: 71, seq_no: 1, .. } = icmpv4(probe_payload) else {
        panic!("not the TTL-1 echo request")
    };

    let header = l2(&frames[1]);
    assert_eq!((header.dst_addr, header.src_addr), (host_mac, router_mac));
    let (error, _, payload) = ipv4(&frames[1][header.payload_offset..]);
    assert_eq!((error.src_addr, error.dst_addr, error.ttl, error.dscp), (router, host, 64, 48));
    let Icmpv4Repr::TimeExceeded { reason, invoking_packet } = icmpv4(payload) else { panic!("not a time exceeded") };
    assert_eq!(reason, TimeExceeded::TtlExpired);
    // RFC 792: the quote is the packet as the router received it (TTL 1).
    assert_eq!(invoking_packet, &frames[0][ethernet::HEADER_LEN..]);
    assert_eq!(ipv4(invoking_packet).0, probe);
}

#[test]
fn icmpv6_neighbour_discovery_and_echo() {
    let frames = frames("icmpv6-echo-nd.pcap");
    assert_eq!(frames.len(), 4);
    let solicited_node = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 1, 0xff00, 2);

    // Neighbour solicitation: to B's solicited-node group (RFC 4861 7.2.2),
    // from A's address, with A's link-layer address.
    let header = l2(&frames[0]);
    assert_eq!((header.dst_addr, header.src_addr), (EthernetAddress([0x33, 0x33, 0xff, 0, 0, 2]), MAC_A));
    let (ip, payload) = ipv6(&frames[0][header.payload_offset..]);
    assert_eq!(
        (ip.src_addr, ip.dst_addr, ip.next_header, ip.hop_limit),
        (IP6_A, solicited_node, IpProtocol::Icmpv6, 255)
    );
    assert_eq!(
        icmpv6(payload, ip.src_addr, ip.dst_addr),
        Icmpv6Repr::NeighborSolicit { target_addr: IP6_B, source_lladdr: Some(MAC_A) }
    );

    // Solicited advertisement back to A, overriding, with B's address.
    let header = l2(&frames[1]);
    assert_eq!((header.dst_addr, header.src_addr), (MAC_A, MAC_B));
    let (ip, payload) = ipv6(&frames[1][header.payload_offset..]);
    assert_eq!((ip.src_addr, ip.dst_addr, ip.hop_limit), (IP6_B, IP6_A, 255));
    assert_eq!(
        icmpv6(payload, ip.src_addr, ip.dst_addr),
        Icmpv6Repr::NeighborAdvert {
            router_flag: false,
            solicited_flag: true,
            override_flag: true,
            target_addr: IP6_B,
            target_lladdr: Some(MAC_B),
        }
    );

    let mut echoes = Vec::new();
    for (frame, (src_addr, dst_addr)) in frames[2..].iter().zip([(IP6_A, IP6_B), (IP6_B, IP6_A)]) {
        let header = l2(frame);
        let (ip, payload) = ipv6(&frame[header.payload_offset..]);
        assert_eq!((ip.src_addr, ip.dst_addr, ip.hop_limit), (src_addr, dst_addr, 64));
        let upper = walk_extension_headers(ip.next_header, payload).unwrap();
        assert_eq!((upper.protocol, upper.offset), (IpProtocol::Icmpv6, 0));
        echoes.push(icmpv6(payload, src_addr, dst_addr));
    }
    let Icmpv6Repr::EchoRequest { ident: 6006, seq_no: 1, data } = echoes[0] else { panic!("{:?}", echoes[0]) };
    assert_eq!(data.len(), PING_DATA_LEN);
    assert_eq!(echoes[1], Icmpv6Repr::EchoReply { ident: 6006, seq_no: 1, data });
}

#[test]
fn ipv6_fragment_header_is_walked() {
    let frames = frames("ipv6-fragment.pcap");
    assert_eq!(frames.len(), 2);
    let mut reassembled = Vec::new();
    let mut fragments = Vec::new();
    for frame in &frames {
        let header = l2(frame);
        assert!(frame.len() <= ethernet::HEADER_LEN + ipv6::MIN_MTU, "the link MTU was 1280");
        let (ip, payload) = ipv6(&frame[header.payload_offset..]);
        assert_eq!((ip.src_addr, ip.dst_addr, ip.next_header), (IP6_A, IP6_B, IpProtocol::Ipv6Frag));
        let upper = walk_extension_headers(ip.next_header, payload).unwrap();
        assert_eq!((upper.protocol, upper.offset), (IpProtocol::Icmpv6, 8));
        fragments.push(upper.fragment.unwrap());
        reassembled.extend_from_slice(&payload[upper.offset..]);
    }
    // 1232 = 1280 - 40 (IPv6) - 8 (Fragment): the largest multiple of 8 that fits.
    assert_eq!((fragments[0].offset, fragments[0].more_frags), (0, true));
    assert_eq!((fragments[1].offset, fragments[1].more_frags), (1232, false));
    assert!(fragments[0].is_first() && !fragments[1].is_first());
    assert_eq!(fragments[0].ident, fragments[1].ident);

    // `ping -s 1300`: 8 bytes of header, a 16-byte timestamp, then bytes
    // counting up from 0x10. The checksum covers the reassembled message.
    assert_eq!(reassembled.len(), 8 + 1300);
    let Icmpv6Repr::EchoRequest { ident: 6044, seq_no: 1, data } = icmpv6(&reassembled, IP6_A, IP6_B) else {
        panic!("not the echo request")
    };
    assert!(data.iter().enumerate().skip(PING_DATA_LEN).all(|(index, &byte)| byte == index as u8));
}

#[test]
fn vlan_single_8021q_tag() {
    let frames = frames("vlan-8021q.pcap");
    assert_eq!(frames.len(), 2);
    let a = EthernetAddress([2, 0, 0, 0, 2, 0x0a]);
    let b = EthernetAddress([2, 0, 0, 0, 2, 0x0b]);
    let (ip_a, ip_b) = (Ipv4Addr::new(10, 0, 100, 1), Ipv4Addr::new(10, 0, 100, 2));
    let mut echoes = Vec::new();
    for (frame, (src, dst)) in frames.iter().zip([((a, ip_a), (b, ip_b)), ((b, ip_b), (a, ip_a))]) {
        assert_eq!(EthernetFrame::new_checked(&frame[..]).unwrap().ethertype(), EtherType::Vlan);
        let header = l2(frame);
        assert_eq!((header.dst_addr, header.src_addr), (dst.0, src.0));
        assert_eq!(header.outer, Some(VlanTagRepr { pcp: 5, dei: false, vid: 100, ethertype: EtherType::Ipv4 }));
        assert_eq!((header.inner, header.ethertype, header.payload_offset), (None, EtherType::Ipv4, 18));
        echoes.push(ping_v4(frame, src.1, dst.1));
    }
    assert_echo_pair(echoes[0], echoes[1], 100);
}

#[test]
fn vlan_double_tag_8021ad_over_8021q() {
    let frames = frames("vlan-qinq.pcap");
    assert_eq!(frames.len(), 2);
    let a = EthernetAddress([2, 0, 0, 0, 3, 0x0a]);
    let b = EthernetAddress([2, 0, 0, 0, 3, 0x0b]);
    let (ip_a, ip_b) = (Ipv4Addr::new(10, 0, 20, 1), Ipv4Addr::new(10, 0, 20, 2));
    let mut echoes = Vec::new();
    for (frame, (src, dst)) in frames.iter().zip([((a, ip_a), (b, ip_b)), ((b, ip_b), (a, ip_a))]) {
        assert_eq!(EthernetFrame::new_checked(&frame[..]).unwrap().ethertype(), EtherType::QinQ);
        let header = l2(frame);
        assert_eq!((header.dst_addr, header.src_addr), (dst.0, src.0));
        assert_eq!(header.outer, Some(VlanTagRepr { pcp: 0, dei: false, vid: 10, ethertype: EtherType::Vlan }));
        assert_eq!(header.inner, Some(VlanTagRepr { pcp: 3, dei: false, vid: 20, ethertype: EtherType::Ipv4 }));
        assert_eq!((header.ethertype, header.payload_offset), (EtherType::Ipv4, 22));
        echoes.push(ping_v4(frame, src.1, dst.1));
    }
    assert_echo_pair(echoes[0], echoes[1], 1020);
}

#[test]
fn vxlan_from_a_kernel_vtep() {
    let frames = frames("vxlan.pcap");
    assert_eq!(frames.len(), 2);
    let inner_a = EthernetAddress([2, 0, 0, 0, 0x42, 0x0a]);
    let inner_b = EthernetAddress([2, 0, 0, 0, 0x42, 0x0b]);
    let (inner_ip_a, inner_ip_b) = (Ipv4Addr::new(10, 42, 0, 1), Ipv4Addr::new(10, 42, 0, 2));
    let mut echoes = Vec::new();
    let directions = [((MAC_A, IP_A, inner_a, inner_ip_a), (MAC_B, IP_B, inner_b, inner_ip_b))];
    let directions = [directions[0], (directions[0].1, directions[0].0)];
    for (frame, (src, dst)) in frames.iter().zip(directions) {
        let header = l2(frame);
        assert_eq!((header.dst_addr, header.src_addr, header.ethertype), (dst.0, src.0, EtherType::Ipv4));
        let (outer, _, payload) = ipv4(&frame[header.payload_offset..]);
        assert_eq!((outer.src_addr, outer.dst_addr, outer.protocol), (src.1, dst.1, IpProtocol::Udp));
        assert_eq!(outer.payload_len, udp::HEADER_LEN + vxlan::HEADER_LEN + 14 + 20 + 8 + PING_DATA_LEN);
        // Created with `udpcsum`, so the outer checksum is there to verify.
        let (datagram, vxlan_bytes) = udp(payload, PseudoHeader::V4 { src_addr: src.1, dst_addr: dst.1 });
        assert_eq!(datagram.dst_port, VXLAN_PORT);

        let packet = VxlanPacket::new_checked(vxlan_bytes).unwrap();
        assert_eq!((packet.flags(), packet.vni_valid()), (0x08, true));
        let repr = VxlanRepr::parse(&packet).unwrap();
        assert_eq!(repr, VxlanRepr { vni: 4242 });
        let mut emitted = [0u8; vxlan::HEADER_LEN];
        repr.emit(&mut VxlanPacket::new_unchecked(&mut emitted[..]));
        assert_eq!(emitted[..], vxlan_bytes[..vxlan::HEADER_LEN]);

        let inner = packet.payload();
        let inner_header = l2(inner);
        assert_eq!((inner_header.dst_addr, inner_header.src_addr), (dst.2, src.2));
        echoes.push(ping_v4(inner, src.3, dst.3));
    }
    assert_echo_pair(echoes[0], echoes[1], 4789);
}
