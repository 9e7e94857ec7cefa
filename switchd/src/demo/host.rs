//! A minimal host for the demo: one interface; IPv4 with ARP (RFC 826), a
//! cache and a queue of packets waiting for resolution, ICMP echo (RFC 792)
//! both ways and UDP datagrams it counts; optionally IPv6 with neighbour
//! discovery (RFC 4861) and ICMPv6 echo (RFC 4443). Built on `dataplane::wire`, so the
//! frames it sends are the ones real hosts send.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use dataplane::wire::arp::Operation;
use dataplane::wire::{
    ArpPacket, ArpRepr, Ecn, EtherType, EthernetAddress, EthernetFrame, EthernetRepr, Icmpv4Packet, Icmpv4Repr,
    Icmpv6Packet, Icmpv6Repr, IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, PseudoHeader, UdpPacket, UdpRepr,
};
use ipnetwork::{Ipv4Network, Ipv6Network};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EchoReply {
    pub from: IpAddr,
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
    pub address6: Option<Ipv6Network>,
    pub gateway6: Option<Ipv6Addr>,
    neighbors6: HashMap<Ipv6Addr, EthernetAddress>,
    waiting6: Vec<(Ipv6Addr, Vec<u8>)>,
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
            address6: None,
            gateway6: None,
            neighbors6: HashMap::new(),
            waiting6: Vec::new(),
        }
    }

    /// Gives the host an IPv6 address (and default router).
    pub fn with_ipv6(mut self, address: Ipv6Network, gateway: Option<Ipv6Addr>) -> Host {
        self.address6 = Some(address);
        self.gateway6 = gateway;
        self
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
        // 33:33:xx: IPv6 multicast (RFC 2464 section 7), for the
        // solicited-node and all-nodes groups.
        let ipv6_multicast = dst.0[..2] == [0x33, 0x33];
        if dst != self.mac && !dst.is_broadcast() && !ipv6_multicast {
            return;
        }
        match ethernet.ethertype() {
            EtherType::Arp => self.receive_arp(ethernet.payload(), out),
            EtherType::Ipv4 => self.receive_ipv4(ethernet.src_addr(), ethernet.payload(), now, out),
            EtherType::Ipv6 => self.receive_ipv6(ethernet.src_addr(), ethernet.payload(), now, out),
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

    /// Sends an ICMPv6 echo request.
    pub fn ping6(&mut self, dst: Ipv6Addr, ident: u16, seq: u16, out: &mut Vec<Vec<u8>>) {
        let Some(src) = self.address6.map(|a| a.ip()) else { return };
        let echo = Icmpv6Repr::EchoRequest { ident, seq_no: seq, data: PING_DATA };
        let mut payload = vec![0u8; echo.buffer_len()];
        echo.emit(&mut Icmpv6Packet::new_unchecked(&mut payload[..]), src, dst);
        self.send_ipv6(dst, &payload, 64, out);
    }

    fn send_ipv6(&mut self, dst: Ipv6Addr, icmp: &[u8], hop_limit: u8, out: &mut Vec<Vec<u8>>) {
        let Some(address) = self.address6 else { return };
        let packet = ipv6_packet(address.ip(), dst, icmp, hop_limit);
        let next_hop = if address.contains(dst) { dst } else { self.gateway6.unwrap_or(dst) };
        match self.neighbors6.get(&next_hop) {
            Some(&mac) => out.push(self.ethernet(mac, EtherType::Ipv6, &packet)),
            None => {
                let queued = self.waiting6.iter().filter(|(hop, _)| *hop == next_hop).count();
                if queued >= MAX_WAITING {
                    let oldest = self.waiting6.iter().position(|(hop, _)| *hop == next_hop).expect("counted");
                    self.waiting6.remove(oldest);
                }
                self.waiting6.push((next_hop, packet));
                self.neighbor_solicit(address.ip(), next_hop, out);
            }
        }
    }

    /// RFC 4861 section 7.2.2: to the target's solicited-node group, with
    /// our link-layer address, hop limit 255.
    fn neighbor_solicit(&self, src: Ipv6Addr, target: Ipv6Addr, out: &mut Vec<Vec<u8>>) {
        let t = target.octets();
        let group = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 1, 0xff00 | u16::from(t[13]), u16::from_be_bytes([t[14], t[15]]));
        let ns = Icmpv6Repr::NeighborSolicit { target_addr: target, source_lladdr: Some(self.mac) };
        let mut icmp = vec![0u8; ns.buffer_len()];
        ns.emit(&mut Icmpv6Packet::new_unchecked(&mut icmp[..]), src, group);
        let g = group.octets();
        let mac = EthernetAddress([0x33, 0x33, g[12], g[13], g[14], g[15]]);
        out.push(self.ethernet(mac, EtherType::Ipv6, &ipv6_packet(src, group, &icmp, 255)));
    }

    fn receive_ipv6(&mut self, src_mac: EthernetAddress, payload: &[u8], now: u64, out: &mut Vec<Vec<u8>>) {
        let Some(own) = self.address6.map(|a| a.ip()) else { return };
        let Ok(packet) = Ipv6Packet::new_checked(payload) else { return };
        let Ok(ip) = Ipv6Repr::parse(&packet) else { return };
        // Only ICMPv6 without extension headers: all this host speaks.
        if ip.next_header != IpProtocol::Icmpv6 {
            return;
        }
        let Ok(icmp) = Icmpv6Packet::new_checked(packet.payload()) else { return };
        let Ok(message) = Icmpv6Repr::parse(&icmp, ip.src_addr, ip.dst_addr) else { return };
        match message {
            Icmpv6Repr::NeighborSolicit { target_addr, source_lladdr } if target_addr == own => {
                let their_mac = source_lladdr.unwrap_or(src_mac);
                self.neighbors6.insert(ip.src_addr, their_mac);
                let na = Icmpv6Repr::NeighborAdvert {
                    router_flag: false,
                    solicited_flag: true,
                    override_flag: true,
                    target_addr: own,
                    target_lladdr: Some(self.mac),
                };
                let mut buf = vec![0u8; na.buffer_len()];
                na.emit(&mut Icmpv6Packet::new_unchecked(&mut buf[..]), own, ip.src_addr);
                out.push(self.ethernet(their_mac, EtherType::Ipv6, &ipv6_packet(own, ip.src_addr, &buf, 255)));
                self.release6(ip.src_addr, their_mac, out);
            }
            Icmpv6Repr::NeighborAdvert { target_addr, target_lladdr, .. } => {
                let mac = target_lladdr.unwrap_or(src_mac);
                self.neighbors6.insert(target_addr, mac);
                self.release6(target_addr, mac, out);
            }
            Icmpv6Repr::EchoRequest { ident, seq_no, data } if ip.dst_addr == own => {
                let next_hop = if self.address6.is_some_and(|a| a.contains(ip.src_addr)) {
                    ip.src_addr
                } else {
                    self.gateway6.unwrap_or(ip.src_addr)
                };
                self.neighbors6.entry(next_hop).or_insert(src_mac);
                let reply = Icmpv6Repr::EchoReply { ident, seq_no, data };
                let mut buf = vec![0u8; reply.buffer_len()];
                reply.emit(&mut Icmpv6Packet::new_unchecked(&mut buf[..]), own, ip.src_addr);
                self.send_ipv6(ip.src_addr, &buf, 64, out);
            }
            Icmpv6Repr::EchoReply { ident, seq_no, .. } if ip.dst_addr == own => {
                self.echo_replies.push(EchoReply {
                    from: ip.src_addr.into(),
                    ident,
                    seq: seq_no,
                    ttl: ip.hop_limit,
                    at: now,
                });
            }
            _ => {}
        }
    }

    fn release6(&mut self, resolved: Ipv6Addr, mac: EthernetAddress, out: &mut Vec<Vec<u8>>) {
        let (ready, still): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.waiting6).into_iter().partition(|(hop, _)| *hop == resolved);
        self.waiting6 = still;
        for (_, packet) in ready {
            out.push(self.ethernet(mac, EtherType::Ipv6, &packet));
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
                            from: ip.src_addr.into(),
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

fn ipv6_packet(src: Ipv6Addr, dst: Ipv6Addr, icmp: &[u8], hop_limit: u8) -> Vec<u8> {
    let ip = Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::Icmpv6,
        payload_len: icmp.len(),
        hop_limit,
        dscp: 0,
        ecn: Ecn::NotEct,
        flow_label: 0,
    };
    let mut packet = vec![0u8; dataplane::wire::ipv6::HEADER_LEN + icmp.len()];
    ip.emit(&mut Ipv6Packet::new_unchecked(&mut packet[..]));
    packet[dataplane::wire::ipv6::HEADER_LEN..].copy_from_slice(icmp);
    packet
}
