//! A minimal IPv4 host for the demo: one interface, ARP (RFC 826) with a
//! cache and a queue of packets waiting for resolution, ICMP echo (RFC 792)
//! both ways, and UDP datagrams it counts. Built on `dataplane::wire`, so the
//! frames it sends are the ones real hosts send.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use dataplane::wire::arp::Operation;
use dataplane::wire::{
    ArpPacket, ArpRepr, Ecn, EtherType, EthernetAddress, EthernetFrame, EthernetRepr, Icmpv4Packet, Icmpv4Repr,
    IpProtocol, Ipv4Packet, Ipv4Repr, PseudoHeader, UdpPacket, UdpRepr,
};
use ipnetwork::Ipv4Network;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EchoReply {
    pub from: Ipv4Addr,
    pub ident: u16,
    pub seq: u16,
    pub ttl: u8,
    pub at: u64,
}

#[derive(Debug)]
pub struct Host {
    pub name: String,
    pub mac: EthernetAddress,
    pub address: Ipv4Network,
    pub gateway: Option<Ipv4Addr>,
    arp: HashMap<Ipv4Addr, EthernetAddress>,
    /// IPv4 packets waiting for their next hop's MAC.
    waiting: Vec<(Ipv4Addr, Vec<u8>)>,
    pub echo_replies: Vec<EchoReply>,
    pub udp_received: u64,
    next_ident: u16,
}

const PING_DATA: &[u8] = b"fabric-nos demo ping 0123456789abcdef";
/// Packets kept per unresolved next hop.
const MAX_WAITING: usize = 3;

impl Host {
    pub fn new(name: &str, mac: EthernetAddress, address: Ipv4Network, gateway: Option<Ipv4Addr>) -> Host {
        Host {
            name: name.into(),
            mac,
            address,
            gateway,
            arp: HashMap::new(),
            waiting: Vec::new(),
            echo_replies: Vec::new(),
            udp_received: 0,
            next_ident: 1,
        }
    }

    pub fn ip(&self) -> Ipv4Addr {
        self.address.ip()
    }

    /// Sends an ICMP echo request; frames to transmit are appended to `out`.
    pub fn ping(&mut self, dst: Ipv4Addr, ident: u16, seq: u16, out: &mut Vec<Vec<u8>>) {
        let echo = Icmpv4Repr::EchoRequest { ident, seq_no: seq, data: PING_DATA };
        let mut payload = vec![0u8; echo.buffer_len()];
        echo.emit(&mut Icmpv4Packet::new_unchecked(&mut payload[..]));
        self.send_ip(dst, IpProtocol::Icmp, &payload, out);
    }

    /// Sends one UDP datagram.
    pub fn send_udp(&mut self, dst: Ipv4Addr, src_port: u16, dst_port: u16, data: &[u8], out: &mut Vec<Vec<u8>>) {
        let udp = UdpRepr { src_port, dst_port, payload_len: data.len() };
        let mut payload = vec![0u8; udp.buffer_len()];
        // The data first: emit checksums it along with the header.
        payload[udp.buffer_len() - data.len()..].copy_from_slice(data);
        udp.emit(
            &mut UdpPacket::new_unchecked(&mut payload[..]),
            &PseudoHeader::V4 { src_addr: self.ip(), dst_addr: dst },
        );
        self.send_ip(dst, IpProtocol::Udp, &payload, out);
    }

    fn send_ip(&mut self, dst: Ipv4Addr, protocol: IpProtocol, payload: &[u8], out: &mut Vec<Vec<u8>>) {
        let ip = Ipv4Repr {
            src_addr: self.ip(),
            dst_addr: dst,
            protocol,
            payload_len: payload.len(),
            ttl: 64,
            dscp: 0,
            ecn: Ecn::NotEct,
            ident: self.next_ident,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
        };
        self.next_ident = self.next_ident.wrapping_add(1);
        let mut packet = vec![0u8; ip.buffer_len()];
        ip.emit(&mut Ipv4Packet::new_unchecked(&mut packet[..]));
        packet[ip.header_len()..].copy_from_slice(payload);
        let next_hop = if self.address.contains(dst) { dst } else { self.gateway.unwrap_or(dst) };
        match self.arp.get(&next_hop) {
            Some(&mac) => out.push(self.ethernet(mac, EtherType::Ipv4, &packet)),
            None => {
                // Like Linux's unres_qlen: a few packets wait, older ones
                // are dropped; every new packet asks again (the request may
                // have been lost while a router on the way resolved its own
                // next hop).
                let queued = self.waiting.iter().filter(|(hop, _)| *hop == next_hop).count();
                if queued >= MAX_WAITING {
                    let oldest = self.waiting.iter().position(|(hop, _)| *hop == next_hop).expect("counted");
                    self.waiting.remove(oldest);
                }
                self.waiting.push((next_hop, packet));
                self.arp_request(next_hop, out);
            }
        }
    }

    fn arp_request(&self, target: Ipv4Addr, out: &mut Vec<Vec<u8>>) {
        let arp = ArpRepr {
            operation: Operation::Request,
            sender_hardware_addr: self.mac,
            sender_protocol_addr: self.ip(),
            target_hardware_addr: EthernetAddress::ZERO,
            target_protocol_addr: target,
        };
        let mut payload = vec![0u8; arp.buffer_len()];
        arp.emit(&mut ArpPacket::new_unchecked(&mut payload[..]));
        out.push(self.ethernet(EthernetAddress::BROADCAST, EtherType::Arp, &payload));
    }

    fn ethernet(&self, dst: EthernetAddress, ethertype: EtherType, payload: &[u8]) -> Vec<u8> {
        let header = EthernetRepr { dst_addr: dst, src_addr: self.mac, ethertype };
        // Pad to the 60-byte minimum, as a NIC does.
        let mut frame = vec![0u8; (header.buffer_len() + payload.len()).max(60)];
        header.emit(&mut EthernetFrame::new_unchecked(&mut frame[..]));
        frame[header.buffer_len()..header.buffer_len() + payload.len()].copy_from_slice(payload);
        frame
    }

    /// A frame arrived on the host's interface; answers go to `out`.
    /// Anything malformed or not for this host is ignored.
    pub fn receive(&mut self, frame: &[u8], now: u64, out: &mut Vec<Vec<u8>>) {
        let Ok(ethernet) = EthernetFrame::new_checked(frame) else { return };
        let dst = ethernet.dst_addr();
        if dst != self.mac && !dst.is_broadcast() {
            return;
        }
        match ethernet.ethertype() {
            EtherType::Arp => self.receive_arp(ethernet.payload(), out),
            EtherType::Ipv4 => self.receive_ipv4(ethernet.src_addr(), ethernet.payload(), now, out),
            _ => {}
        }
    }

    fn receive_arp(&mut self, payload: &[u8], out: &mut Vec<Vec<u8>>) {
        let Ok(arp) = ArpPacket::new_checked(payload).and_then(|p| ArpRepr::parse(&p)) else { return };
        if arp.target_protocol_addr != self.ip() {
            return;
        }
        self.arp.insert(arp.sender_protocol_addr, arp.sender_hardware_addr);
        if arp.operation == Operation::Request {
            let reply = ArpRepr {
                operation: Operation::Reply,
                sender_hardware_addr: self.mac,
                sender_protocol_addr: self.ip(),
                target_hardware_addr: arp.sender_hardware_addr,
                target_protocol_addr: arp.sender_protocol_addr,
            };
            let mut payload = vec![0u8; reply.buffer_len()];
            reply.emit(&mut ArpPacket::new_unchecked(&mut payload[..]));
            out.push(self.ethernet(arp.sender_hardware_addr, EtherType::Arp, &payload));
        }
        // Release what waited for this neighbour.
        let resolved = arp.sender_protocol_addr;
        let mac = arp.sender_hardware_addr;
        let (ready, still): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.waiting).into_iter().partition(|(hop, _)| *hop == resolved);
        self.waiting = still;
        for (_, packet) in ready {
            out.push(self.ethernet(mac, EtherType::Ipv4, &packet));
        }
    }

    fn receive_ipv4(&mut self, src_mac: EthernetAddress, payload: &[u8], now: u64, out: &mut Vec<Vec<u8>>) {
        let Ok(packet) = Ipv4Packet::new_checked(payload) else { return };
        let Ok(ip) = Ipv4Repr::parse(&packet) else { return };
        if ip.dst_addr != self.ip() {
            return;
        }
        let body = packet.payload();
        match ip.protocol {
            IpProtocol::Icmp => {
                let Ok(icmp) = Icmpv4Packet::new_checked(body) else { return };
                match Icmpv4Repr::parse(&icmp) {
                    Ok(Icmpv4Repr::EchoRequest { ident, seq_no, data }) => {
                        let reply = Icmpv4Repr::EchoReply { ident, seq_no, data };
                        let mut buf = vec![0u8; reply.buffer_len()];
                        reply.emit(&mut Icmpv4Packet::new_unchecked(&mut buf[..]));
                        // Answer the way the request came: learn its MAC.
                        let next_hop = if self.address.contains(ip.src_addr) {
                            ip.src_addr
                        } else {
                            self.gateway.unwrap_or(ip.src_addr)
                        };
                        self.arp.entry(next_hop).or_insert(src_mac);
                        self.send_ip(ip.src_addr, IpProtocol::Icmp, &buf, out);
                    }
                    Ok(Icmpv4Repr::EchoReply { ident, seq_no, .. }) => {
                        self.echo_replies.push(EchoReply {
                            from: ip.src_addr,
                            ident,
                            seq: seq_no,
                            ttl: ip.ttl,
                            at: now,
                        });
                    }
                    _ => {}
                }
            }
            IpProtocol::Udp => {
                let pseudo = PseudoHeader::V4 { src_addr: ip.src_addr, dst_addr: ip.dst_addr };
                if UdpPacket::new_checked(body).and_then(|p| UdpRepr::parse(&p, &pseudo)).is_ok() {
                    self.udp_received += 1;
                }
            }
            _ => {}
        }
    }
}
