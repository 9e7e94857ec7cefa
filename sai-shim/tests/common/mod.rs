//! Shared fixtures of the behaviour tests: a switch behind the shim with the
//! soft backend, and frame builders made from `dataplane::wire` Reprs, so the
//! expected bytes come from the wire formats, not from the pipeline.
#![allow(dead_code)]

use std::net::Ipv4Addr;

use dataplane::pipeline::{Disposition, Egress, Output, SwitchConfig};
use dataplane::wire::{
    ArpPacket, ArpRepr, EtherType, EthernetAddress, EthernetFrame, EthernetRepr, IpProtocol, Ipv4Packet, Ipv4Repr,
    PseudoHeader, UdpPacket, UdpRepr, VlanTag, VlanTagRepr, VxlanPacket, VxlanRepr, arp::Operation,
};
use sai_shim::backend::soft::SoftBackend;
use sai_shim::*;

pub const SECOND: u64 = 1_000_000_000;

pub fn mac(last: u8) -> EthernetAddress {
    EthernetAddress([0x02, 0x00, 0x00, 0x00, 0x00, last])
}

/// What one injected frame produced.
#[derive(Debug)]
pub struct Result {
    pub disposition: Disposition,
    pub frames: Vec<(Egress, Vec<u8>)>,
}

impl Result {
    /// Frames sent out of front-panel ports, by pipeline port index.
    pub fn on_port(&self, port: u16) -> Vec<&[u8]> {
        self.frames.iter().filter(|(to, _)| *to == Egress::Port(port)).map(|(_, f)| f.as_slice()).collect()
    }

    pub fn ports(&self) -> Vec<u16> {
        let mut ports: Vec<u16> = self
            .frames
            .iter()
            .filter_map(|(to, _)| match to {
                Egress::Port(p) => Some(*p),
                Egress::Host { .. } => None,
            })
            .collect();
        ports.sort();
        ports
    }

    pub fn punted(&self) -> Vec<&(Egress, Vec<u8>)> {
        self.frames.iter().filter(|(to, _)| matches!(to, Egress::Host { .. })).collect()
    }
}

pub struct Lab {
    pub sai: Sai<SoftBackend>,
    pub out: Output,
    pub now: u64,
}

impl Lab {
    pub fn new() -> Lab {
        Lab::with(SwitchConfig::default(), &[])
    }

    pub fn with(config: SwitchConfig, attrs: &[SwitchAttr]) -> Lab {
        let sai = Sai::new(SoftBackend::new(config), attrs).expect("switch");
        Lab { sai, out: Output::new(), now: SECOND }
    }

    /// A front-panel port, admin up.
    pub fn port(&mut self, name: &str) -> ObjectId {
        self.sai.create_port(&[PortAttr::Name(name.into()), PortAttr::AdminState(true)]).expect("port")
    }

    pub fn index(&self, port: ObjectId) -> u16 {
        self.sai.backend().port_index(port).expect("port index")
    }

    pub fn vlan(&mut self, vid: u16) -> ObjectId {
        self.sai.create_vlan(&[VlanAttr::VlanId(vid)]).expect("vlan")
    }

    pub fn bridge_port(&mut self, port: ObjectId) -> ObjectId {
        self.sai.create_bridge_port(&[BridgePortAttr::Type(BridgePortType::Port(port))]).expect("bridge port")
    }

    pub fn member(&mut self, vlan: ObjectId, bridge_port: ObjectId, tagged: bool) -> ObjectId {
        let mode = if tagged { TaggingMode::Tagged } else { TaggingMode::Untagged };
        self.sai
            .create_vlan_member(&[
                VlanMemberAttr::VlanId(vlan),
                VlanMemberAttr::BridgePortId(bridge_port),
                VlanMemberAttr::TaggingMode(mode),
            ])
            .expect("vlan member")
    }

    /// An access port: untagged member of `vlan` with PVID `vid`.
    pub fn access_port(&mut self, name: &str, vlan: ObjectId, vid: u16) -> (ObjectId, ObjectId) {
        let port = self.port(name);
        self.sai.set_port_attribute(port, PortAttr::PortVlanId(vid)).expect("pvid");
        let bridge_port = self.bridge_port(port);
        self.member(vlan, bridge_port, false);
        (port, bridge_port)
    }

    pub fn inject(&mut self, port: ObjectId, frame: &[u8]) -> Result {
        self.out.clear();
        let disposition = self.sai.backend_mut().process(self.now, port, frame, &mut self.out);
        Result { disposition, frames: self.drain_out() }
    }

    pub fn poll(&mut self) -> Vec<(Egress, Vec<u8>)> {
        self.out.clear();
        self.sai.backend_mut().poll(self.now, &mut self.out);
        self.drain_out()
    }

    pub fn host_send(&mut self, hostif: ObjectId, frame: &[u8]) -> Vec<(Egress, Vec<u8>)> {
        self.out.clear();
        self.sai.backend_mut().host_send(self.now, hostif, frame, &mut self.out).expect("host send");
        self.drain_out()
    }

    /// What the pipeline emitted; every frame for a port leaves it (and is
    /// counted as sent), as the node does when the port takes it.
    fn drain_out(&mut self) -> Vec<(Egress, Vec<u8>)> {
        let frames: Vec<(Egress, Vec<u8>)> = self.out.iter().map(|e| (e.to, e.frame.to_vec())).collect();
        for (to, frame) in &frames {
            if let Egress::Port(port) = to {
                self.sai.backend_mut().count_transmitted(*port, frame);
            }
        }
        frames
    }

    pub fn advance(&mut self, ns: u64) {
        self.now += ns;
    }
}

impl Default for Lab {
    fn default() -> Self {
        Lab::new()
    }
}

/// An Ethernet II frame with an optional 802.1Q tag.
pub fn eth(
    dst: EthernetAddress,
    src: EthernetAddress,
    vid: Option<u16>,
    ethertype: EtherType,
    payload: &[u8],
) -> Vec<u8> {
    let tag_len = if vid.is_some() { 4 } else { 0 };
    let mut frame = vec![0u8; 14 + tag_len + payload.len()];
    let outer_type = if vid.is_some() { EtherType::Vlan } else { ethertype };
    EthernetRepr { dst_addr: dst, src_addr: src, ethertype: outer_type }
        .emit(&mut EthernetFrame::new_unchecked(&mut frame[..]));
    if let Some(vid) = vid {
        VlanTagRepr { pcp: 0, dei: false, vid, ethertype }.emit(&mut VlanTag::new_unchecked(&mut frame[14..18]));
    }
    frame[14 + tag_len..].copy_from_slice(payload);
    frame
}

/// A payload of recognisable bytes for an EtherType nobody routes.
pub const TEST_ETHERTYPE: EtherType = EtherType::Unknown(0x88b6);

pub fn l2(dst: EthernetAddress, src: EthernetAddress, vid: Option<u16>) -> Vec<u8> {
    let payload: Vec<u8> = (0u8..46).collect();
    eth(dst, src, vid, TEST_ETHERTYPE, &payload)
}

pub fn arp(operation: Operation, sha: EthernetAddress, spa: Ipv4Addr, tha: EthernetAddress, tpa: Ipv4Addr) -> Vec<u8> {
    let repr = ArpRepr {
        operation,
        sender_hardware_addr: sha,
        sender_protocol_addr: spa,
        target_hardware_addr: tha,
        target_protocol_addr: tpa,
    };
    let mut packet = vec![0u8; repr.buffer_len()];
    repr.emit(&mut ArpPacket::new_unchecked(&mut packet[..]));
    packet
}

/// An IPv4 packet (header and payload) with a 20-byte header.
pub fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, protocol: IpProtocol, ttl: u8, payload: &[u8]) -> Vec<u8> {
    let repr = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        protocol,
        payload_len: payload.len(),
        ttl,
        dscp: 0,
        ecn: dataplane::wire::Ecn::NotEct,
        ident: 0x1234,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
    };
    let mut packet = vec![0u8; repr.buffer_len()];
    packet[20..].copy_from_slice(payload);
    repr.emit(&mut Ipv4Packet::new_unchecked(&mut packet[..]));
    packet
}

/// A UDP datagram over IPv4 with a correct checksum.
pub fn udp4(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, ttl: u8, payload: &[u8]) -> Vec<u8> {
    let repr = UdpRepr { src_port: sport, dst_port: dport, payload_len: payload.len() };
    let mut datagram = vec![0u8; repr.buffer_len()];
    datagram[8..].copy_from_slice(payload);
    repr.emit(&mut UdpPacket::new_unchecked(&mut datagram[..]), &PseudoHeader::V4 { src_addr: src, dst_addr: dst });
    ipv4(src, dst, IpProtocol::Udp, ttl, &datagram)
}

/// A VXLAN packet: outer Ethernet/IPv4/UDP (zero UDP checksum, as RFC 7348
/// allows) around `inner`.
#[allow(clippy::too_many_arguments)]
pub fn vxlan(
    outer_dst: EthernetAddress,
    outer_src: EthernetAddress,
    src_ip: Ipv4Addr,
    dst_ip: Ipv4Addr,
    sport: u16,
    ttl: u8,
    vni: u32,
    inner: &[u8],
) -> Vec<u8> {
    let mut udp_payload = vec![0u8; 8 + inner.len()];
    VxlanRepr { vni }.emit(&mut VxlanPacket::new_unchecked(&mut udp_payload[..]));
    udp_payload[8..].copy_from_slice(inner);
    let udp = UdpRepr { src_port: sport, dst_port: 4789, payload_len: udp_payload.len() };
    let mut datagram = vec![0u8; udp.buffer_len()];
    datagram[8..].copy_from_slice(&udp_payload);
    udp.emit_header(&mut UdpPacket::new_unchecked(&mut datagram[..]));
    let mut packet = ipv4(src_ip, dst_ip, IpProtocol::Udp, ttl, &datagram);
    // As a VTEP originates it: DF clear (see `with_ident_of` for the ID).
    let mut header = Ipv4Packet::new_unchecked(&mut packet[..]);
    header.set_ident(0);
    header.set_dont_frag(false);
    header.fill_checksum();
    eth(outer_dst, outer_src, None, EtherType::Ipv4, &packet)
}

/// `expected` (an Ethernet + IPv4 frame) with the IPv4 ID `actual` carries:
/// the switch numbers what it originates from a counter (RFC 6864 4.1).
pub fn with_ident_of(expected: Vec<u8>, actual: &[u8]) -> Vec<u8> {
    let mut expected = expected;
    let ident = Ipv4Packet::new_checked(&actual[14..]).expect("IPv4").ident();
    let mut header = Ipv4Packet::new_unchecked(&mut expected[14..]);
    header.set_ident(ident);
    header.fill_checksum();
    expected
}

/// An IPv6 packet (fixed header and payload).
pub fn ipv6(
    src: std::net::Ipv6Addr,
    dst: std::net::Ipv6Addr,
    next_header: IpProtocol,
    hop_limit: u8,
    payload: &[u8],
) -> Vec<u8> {
    let repr = dataplane::wire::Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header,
        payload_len: payload.len(),
        hop_limit,
        dscp: 0,
        ecn: dataplane::wire::Ecn::NotEct,
        flow_label: 0,
    };
    let mut packet = vec![0u8; repr.buffer_len()];
    repr.emit(&mut dataplane::wire::Ipv6Packet::new_unchecked(&mut packet[..]));
    packet[40..].copy_from_slice(payload);
    packet
}

/// A UDP datagram over IPv6 with a correct checksum.
pub fn udp6(
    src: std::net::Ipv6Addr,
    dst: std::net::Ipv6Addr,
    sport: u16,
    dport: u16,
    hop_limit: u8,
    payload: &[u8],
) -> Vec<u8> {
    let repr = UdpRepr { src_port: sport, dst_port: dport, payload_len: payload.len() };
    let mut datagram = vec![0u8; repr.buffer_len()];
    datagram[8..].copy_from_slice(payload);
    repr.emit(&mut UdpPacket::new_unchecked(&mut datagram[..]), &PseudoHeader::V6 { src_addr: src, dst_addr: dst });
    ipv6(src, dst, IpProtocol::Udp, hop_limit, &datagram)
}

/// An ICMPv4 message (header and body) with its checksum.
pub fn icmp4(repr: &dataplane::wire::Icmpv4Repr<'_>) -> Vec<u8> {
    let mut message = vec![0u8; repr.buffer_len()];
    repr.emit(&mut dataplane::wire::Icmpv4Packet::new_unchecked(&mut message[..]));
    message
}

/// An ICMPv6 message with its checksum for `src` -> `dst`.
pub fn icmp6(repr: &dataplane::wire::Icmpv6Repr<'_>, src: std::net::Ipv6Addr, dst: std::net::Ipv6Addr) -> Vec<u8> {
    let mut message = vec![0u8; repr.buffer_len()];
    repr.emit(&mut dataplane::wire::Icmpv6Packet::new_unchecked(&mut message[..]), src, dst);
    message
}

/// Frames emitted to front-panel ports, sorted by port.
pub fn by_port(frames: &[(Egress, Vec<u8>)]) -> Vec<(u16, Vec<u8>)> {
    let mut v: Vec<(u16, Vec<u8>)> = frames
        .iter()
        .filter_map(|(to, f)| match to {
            Egress::Port(p) => Some((*p, f.clone())),
            Egress::Host { .. } => None,
        })
        .collect();
    v.sort();
    v
}
