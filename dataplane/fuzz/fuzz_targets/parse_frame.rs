//! Every wire format's parser over arbitrary bytes: the L2 header, then down
//! the stack by EtherType, IP protocol and UDP port, into VXLAN's inner frame.
//!
//! Beyond "never panics" it checks what must hold of what parses: a parsed
//! repr emits and parses back to itself, offsets stay inside the buffer, and
//! the IPv4 incremental checksum updates agree with a full recomputation.
//!
//! The first input byte steers: bit 0 fills in valid checksums before each
//! layer is parsed (random bytes almost never carry one, and without this the
//! fuzzer would rarely get past IPv4), bits 1..=3 pick the layer the rest of
//! the input starts at (an Ethernet frame, or a bare ARP, IPv4, IPv6, LLDP,
//! MAC Control or VXLAN payload), so every parser is reached directly too.

#![no_main]

use std::net::Ipv6Addr;

use dataplane::wire::{
    ArpPacket, ArpRepr, Ecn, EtherType, Icmpv4Packet, Icmpv4Repr, Icmpv6Packet, Icmpv6Repr,
    IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, LldpPdu, LldpRepr, MacControlPacket,
    MacControlRepr, NdOption, PseudoHeader, UdpPacket, UdpRepr, VXLAN_PORT, VxlanPacket,
    VxlanRepr, vlan::L2Header, walk_extension_headers,
};
use libfuzzer_sys::fuzz_target;

/// VXLAN inside VXLAN is legal; bound it as the pipeline does.
const MAX_DEPTH: u8 = 3;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let fix = flags & 1 != 0;
    let mut buf = rest.to_vec();
    match (flags >> 1) & 7 {
        1 => arp(&buf),
        2 => ipv4(&mut buf, fix, 0),
        3 => ipv6(&mut buf, fix, 0),
        4 => lldp(&buf),
        5 => mac_control(&buf),
        6 => vxlan(&mut buf, fix, 0),
        _ => ethernet(&mut buf, fix, 0),
    }
});

fn ethernet(frame: &mut [u8], fix: bool, depth: u8) {
    let Ok(l2) = L2Header::parse(frame) else {
        return;
    };
    assert!(l2.payload_offset <= frame.len());
    assert!(!l2.ethertype.is_vlan_tpid());
    let payload = &mut frame[l2.payload_offset..];
    match l2.ethertype {
        EtherType::Arp => arp(payload),
        EtherType::Ipv4 => ipv4(payload, fix, depth),
        EtherType::Ipv6 => ipv6(payload, fix, depth),
        EtherType::Lldp => lldp(payload),
        EtherType::MacControl => mac_control(payload),
        _ => {}
    }
}

fn arp(payload: &[u8]) {
    let Ok(packet) = ArpPacket::new_checked(payload) else {
        return;
    };
    let _ = (packet.sender_hardware_addr(), packet.target_protocol_addr());
    let Ok(repr) = ArpRepr::parse(&packet) else {
        return;
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut ArpPacket::new_unchecked(&mut buf[..]));
    let again = ArpRepr::parse(&ArpPacket::new_checked(&buf[..]).unwrap()).unwrap();
    assert_eq!(again, repr);
}

fn mac_control(payload: &[u8]) {
    let Ok(packet) = MacControlPacket::new_checked(payload) else {
        return;
    };
    let Ok(repr) = MacControlRepr::parse(&packet) else {
        return;
    };
    for priority in 0..=8 {
        let _ = repr.quanta_for(priority);
    }
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut MacControlPacket::new_unchecked(&mut buf[..]));
    let again = MacControlRepr::parse(&MacControlPacket::new_checked(&buf[..]).unwrap()).unwrap();
    assert_eq!(again, repr);
}

fn lldp(payload: &[u8]) {
    let Ok(pdu) = LldpPdu::new_checked(payload) else {
        return;
    };
    for tlv in pdu.tlvs().flatten() {
        assert!(tlv.value().len() == tlv.value_len());
    }
    let Ok(repr) = LldpRepr::parse(&pdu) else {
        return;
    };
    // A neighbour may send what we would not (a 300-byte system name, text
    // that is not UTF-8 and grows when replaced): only what fits re-emits.
    if repr.check().is_err() {
        return;
    }
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut LldpPdu::new_unchecked(&mut buf[..])).unwrap();
    let again = LldpRepr::parse(&LldpPdu::new_checked(&buf[..]).unwrap()).unwrap();
    assert_eq!(again, repr);
}

fn ipv4(payload: &mut [u8], fix: bool, depth: u8) {
    if fix && let Ok(mut packet) = Ipv4Packet::new_checked(&mut *payload) {
        packet.fill_checksum();
    }
    let Ok(packet) = Ipv4Packet::new_checked(&*payload) else {
        return;
    };
    let _ = (packet.options(), packet.payload(), packet.is_fragment());
    let Ok(repr) = Ipv4Repr::parse(&packet) else {
        return;
    };
    let header_len = packet.header_len();
    let total_len = usize::from(packet.total_len());
    check_incremental_updates(&payload[..total_len]);
    // The repr keeps no options, so it re-emits a 20-byte header.
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
    assert_eq!(Ipv4Repr::parse(&Ipv4Packet::new_checked(&buf[..]).unwrap()).unwrap(), repr);

    let pseudo = PseudoHeader::V4 { src_addr: repr.src_addr, dst_addr: repr.dst_addr };
    let upper = &mut payload[header_len..total_len];
    match repr.protocol {
        IpProtocol::Udp => udp(upper, &pseudo, fix, depth),
        IpProtocol::Icmp => icmpv4(upper, fix),
        _ => {}
    }
}

/// The router's TTL decrement and a queue's ECN marking patch the checksum
/// incrementally (RFC 1624): the result must verify like a full recomputation.
fn check_incremental_updates(packet: &[u8]) {
    let mut copy = packet.to_vec();
    let mut view = Ipv4Packet::new_unchecked(&mut copy[..]);
    let ttl = view.ttl();
    match view.decrement_ttl_incremental() {
        Some(new_ttl) => {
            assert_eq!(new_ttl, ttl - 1);
            assert!(view.verify_checksum(), "checksum wrong after TTL decrement");
        }
        None => assert!(ttl <= 1),
    }
    view.set_ecn_incremental(Ecn::Ce);
    assert!(view.verify_checksum(), "checksum wrong after ECN marking");
}

fn icmpv4(message: &mut [u8], fix: bool) {
    if fix && let Ok(mut packet) = Icmpv4Packet::new_checked(&mut *message) {
        packet.fill_checksum();
    }
    let Ok(packet) = Icmpv4Packet::new_checked(&*message) else {
        return;
    };
    let Ok(repr) = Icmpv4Repr::parse(&packet) else {
        return;
    };
    if let Icmpv4Repr::DstUnreachable { invoking_packet, .. }
    | Icmpv4Repr::TimeExceeded { invoking_packet, .. } = repr
    {
        // What a host does with an error: look at the quoted header.
        if let Ok(quoted) = Ipv4Packet::new_checked(invoking_packet) {
            let _ = (quoted.src_addr(), quoted.protocol(), quoted.options());
        }
    }
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Icmpv4Packet::new_unchecked(&mut buf[..]));
    let again = Icmpv4Repr::parse(&Icmpv4Packet::new_checked(&buf[..]).unwrap()).unwrap();
    assert_eq!(again, repr);
}

fn ipv6(payload: &mut [u8], fix: bool, depth: u8) {
    let Ok(packet) = Ipv6Packet::new_checked(&*payload) else {
        return;
    };
    let Ok(repr) = Ipv6Repr::parse(&packet) else {
        return;
    };
    let ip_payload_len = packet.payload().len();
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]));
    assert_eq!(Ipv6Repr::parse(&Ipv6Packet::new_checked(&buf[..]).unwrap()).unwrap(), repr);
    let _ = packet.upper_layer();
    let Ok(upper) = walk_extension_headers(repr.next_header, packet.payload()) else {
        return;
    };
    assert!(upper.offset <= ip_payload_len, "upper layer past the payload");
    if upper.fragment.is_some_and(|fragment| !fragment.is_first()) {
        return;
    }
    let start = repr.header_len() + upper.offset;
    let end = repr.header_len() + ip_payload_len;
    let message = &mut payload[start..end];
    match upper.protocol {
        IpProtocol::Udp => {
            let pseudo = PseudoHeader::V6 { src_addr: repr.src_addr, dst_addr: repr.dst_addr };
            udp(message, &pseudo, fix, depth);
        }
        IpProtocol::Icmpv6 => icmpv6(message, repr.src_addr, repr.dst_addr, fix),
        _ => {}
    }
}

fn icmpv6(message: &mut [u8], src: Ipv6Addr, dst: Ipv6Addr, fix: bool) {
    if fix && let Ok(mut packet) = Icmpv6Packet::new_checked(&mut *message) {
        packet.fill_checksum(src, dst);
    }
    let Ok(packet) = Icmpv6Packet::new_checked(&*message) else {
        return;
    };
    for option in packet.nd_options() {
        if let Ok(NdOption::Unknown { data, .. }) = option {
            let _ = data.len();
        }
    }
    let Ok(repr) = Icmpv6Repr::parse(&packet, src, dst) else {
        return;
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Icmpv6Packet::new_unchecked(&mut buf[..]), src, dst);
    let again = Icmpv6Repr::parse(&Icmpv6Packet::new_checked(&buf[..]).unwrap(), src, dst).unwrap();
    assert_eq!(again, repr);
}

fn udp(datagram: &mut [u8], pseudo: &PseudoHeader, fix: bool, depth: u8) {
    if fix && let Ok(mut packet) = UdpPacket::new_checked(&mut *datagram) {
        packet.fill_checksum(pseudo);
    }
    let Ok(packet) = UdpPacket::new_checked(&*datagram) else {
        return;
    };
    let Ok(repr) = UdpRepr::parse(&packet, pseudo) else {
        return;
    };
    assert_eq!(repr.payload_len, packet.payload().len());
    let end = repr.buffer_len();
    let mut buf = datagram[..end].to_vec();
    repr.emit(&mut UdpPacket::new_unchecked(&mut buf[..]), pseudo);
    assert_eq!(UdpRepr::parse(&UdpPacket::new_checked(&buf[..]).unwrap(), pseudo).unwrap(), repr);
    if repr.dst_port == VXLAN_PORT {
        vxlan(&mut datagram[repr.header_len()..end], fix, depth);
    }
}

fn vxlan(payload: &mut [u8], fix: bool, depth: u8) {
    let Ok(packet) = VxlanPacket::new_checked(&*payload) else {
        return;
    };
    let Ok(repr) = VxlanRepr::parse(&packet) else {
        return;
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut VxlanPacket::new_unchecked(&mut buf[..]));
    assert_eq!(VxlanRepr::parse(&VxlanPacket::new_checked(&buf[..]).unwrap()).unwrap(), repr);
    if depth < MAX_DEPTH {
        ethernet(&mut payload[repr.buffer_len()..], fix, depth + 1);
    }
}
