//! ARP/ND suppression on the bridge (RFC 7432 section 10, RFC 9161 section
//! 3): an ARP request or neighbour solicitation from a local host for an
//! address the suppression table binds (a host behind a remote VTEP, learned
//! from its MAC+IP route) is answered on the host's behalf out of the port
//! it came in on, and not flooded, so it never crosses the overlay. A
//! request for the SVI's own address (the anycast gateway) is answered by
//! the router and flooded to the local members only.

use std::net::IpAddr;

use super::bridge::BridgedFrame;
use super::context::Stages;
use crate::pipeline::output::Output;
use crate::pipeline::tables::{PortId, RifId};
use crate::wire::arp::{self, Operation};
use crate::wire::icmpv6::{self, Icmpv6Message};
use crate::wire::{
    ArpPacket, ArpRepr, Ecn, EtherType, EthernetAddress, Icmpv6Packet, Icmpv6Repr, IpProtocol, Ipv6Packet, Ipv6Repr,
    VlanId, ipv6,
};

/// EtherType, then the largest answer: an IPv6 header and a neighbour
/// advertisement with a target link-layer address option.
const ANSWER_MAX: usize = 2 + ipv6::HEADER_LEN + 32;

impl Stages {
    /// Answers `frame` (a group-addressed frame from local `port` in `vid`)
    /// if it asks for a suppressed binding; true when it was answered and
    /// must not be flooded. Anything else (gratuitous ARP, probes and DAD
    /// from the unspecified address, unknown targets, malformed packets)
    /// is left to the flood.
    pub(crate) fn suppress_neighbor_request(
        &mut self,
        port: PortId,
        vid: VlanId,
        frame: BridgedFrame<'_>,
        out: &mut Output,
    ) -> bool {
        let Some(l3) = frame.l3() else { return false };
        let mut answer = [0u8; ANSWER_MAX];
        let (dst, src, len) = match l3.ethertype {
            EtherType::Arp => match self.arp_answer(vid, l3.payload, &mut answer[2..]) {
                Some((dst, src)) => (dst, src, 2 + arp::PACKET_LEN),
                None => return false,
            },
            EtherType::Ipv6 => match self.nd_answer(vid, l3.src, l3.payload, &mut answer[2..]) {
                Some((dst, src, len)) => (dst, src, 2 + len),
                None => return false,
            },
            _ => return false,
        };
        answer[..2].copy_from_slice(&u16::from(l3.ethertype).to_be_bytes());
        let reply = BridgedFrame { dst, src, pcp: frame.pcp, body: &answer[..len] };
        // Egress checks failing (the port went down) count on the port; the
        // request is answered or lost either way, as the host's own would be.
        let _ = self.send_bridged(port, vid, reply, out);
        self.state.neighbor_requests_suppressed += 1;
        true
    }

    /// Whether `frame` is an ARP request or a neighbour solicitation for
    /// one of `rif`'s own addresses (the anycast gateway on an SVI), which
    /// the router behind `rif` answers.
    pub(crate) fn asks_for_own_address(&self, rif: RifId, frame: BridgedFrame<'_>) -> bool {
        let Some(l3) = frame.l3() else { return false };
        let target = match l3.ethertype {
            EtherType::Arp => {
                let Ok(packet) = ArpPacket::new_checked(l3.payload) else { return false };
                match ArpRepr::parse(&packet) {
                    Ok(request) if request.operation == Operation::Request => IpAddr::V4(request.target_protocol_addr),
                    _ => return false,
                }
            }
            EtherType::Ipv6 => {
                let Ok(packet) = Ipv6Packet::new_checked(l3.payload) else { return false };
                if packet.next_header() != IpProtocol::Icmpv6 {
                    return false;
                }
                let Ok(icmp) = Icmpv6Packet::new_checked(packet.payload()) else { return false };
                if icmp.msg_type() != Icmpv6Message::NeighborSolicit {
                    return false;
                }
                match Icmpv6Repr::parse(&icmp, packet.src_addr(), packet.dst_addr()) {
                    Ok(Icmpv6Repr::NeighborSolicit { target_addr, .. }) => IpAddr::V6(target_addr),
                    _ => return false,
                }
            }
            _ => return false,
        };
        self.tables.router.is_own(target) && self.tables.router.on_link(rif, target)
    }

    /// The ARP reply (RFC 826) the bound host would send to an ARP request
    /// in `payload`, written into `buf`: (Ethernet destination, source).
    fn arp_answer(&self, vid: VlanId, payload: &[u8], buf: &mut [u8]) -> Option<(EthernetAddress, EthernetAddress)> {
        let packet = ArpPacket::new_checked(payload).ok()?;
        let request = ArpRepr::parse(&packet).ok()?;
        if request.operation != Operation::Request
            || request.is_gratuitous()
            || request.sender_protocol_addr.is_unspecified()
            || request.sender_hardware_addr.is_multicast()
        {
            return None;
        }
        let mac = self.tables.suppression.get(vid, IpAddr::V4(request.target_protocol_addr))?;
        request.reply(mac).emit(&mut ArpPacket::new_unchecked(&mut buf[..arp::PACKET_LEN]));
        Some((request.sender_hardware_addr, mac))
    }

    /// The solicited neighbour advertisement (RFC 4861 section 7.2.4) the
    /// bound host would send to a solicitation in `payload` (an IPv6
    /// packet from `src_mac`), written into `buf`: (Ethernet destination,
    /// source, length). Override set, router flag clear, as Linux's bridge
    /// answers for a suppressed binding.
    fn nd_answer(
        &self,
        vid: VlanId,
        src_mac: EthernetAddress,
        payload: &[u8],
        buf: &mut [u8],
    ) -> Option<(EthernetAddress, EthernetAddress, usize)> {
        let packet = Ipv6Packet::new_checked(payload).ok()?;
        // RFC 4861 7.1.1: a solicitation that crossed a router is invalid.
        if packet.next_header() != IpProtocol::Icmpv6 || packet.hop_limit() != icmpv6::ND_HOP_LIMIT {
            return None;
        }
        let (src, dst) = (packet.src_addr(), packet.dst_addr());
        // Duplicate address detection (from ::) is left to the hosts.
        if src.is_unspecified() {
            return None;
        }
        let icmp = Icmpv6Packet::new_checked(packet.payload()).ok()?;
        if icmp.msg_type() != Icmpv6Message::NeighborSolicit {
            return None;
        }
        let Ok(Icmpv6Repr::NeighborSolicit { target_addr, source_lladdr }) = Icmpv6Repr::parse(&icmp, src, dst) else {
            return None;
        };
        let mac = self.tables.suppression.get(vid, IpAddr::V6(target_addr))?;
        let advert = Icmpv6Repr::NeighborAdvert {
            router_flag: false,
            solicited_flag: true,
            override_flag: true,
            target_addr,
            target_lladdr: Some(mac),
        };
        let ip = Ipv6Repr {
            src_addr: target_addr,
            dst_addr: src,
            next_header: IpProtocol::Icmpv6,
            payload_len: advert.buffer_len(),
            hop_limit: icmpv6::ND_HOP_LIMIT,
            dscp: 0,
            ecn: Ecn::NotEct,
            flow_label: 0,
        };
        let len = ip.buffer_len();
        let buf = buf.get_mut(..len)?;
        ip.emit(&mut Ipv6Packet::new_unchecked(&mut *buf));
        advert.emit(&mut Icmpv6Packet::new_unchecked(&mut buf[ipv6::HEADER_LEN..]), target_addr, src);
        Some((source_lladdr.unwrap_or(src_mac), mac, len))
    }
}
