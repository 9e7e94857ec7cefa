//! What the demo shows of the frames it moves: one line per delivery, as a
//! capture tool would summarize it, and the VXLAN frames that crossed the
//! fabric decoded (outer addresses, VNI, inner Ethernet header) for the
//! report and the checks.

use std::net::Ipv4Addr;

use dataplane::wire::arp::Operation;
use dataplane::wire::{
    ArpPacket, ArpRepr, EtherType, EthernetAddress, EthernetFrame, Icmpv4Packet, Icmpv4Repr, Icmpv6Packet, Icmpv6Repr,
    IpProtocol, Ipv4Packet, Ipv6Packet, UdpPacket, VlanTag, VxlanPacket,
};

/// The frames of one exchange, in the order they were delivered.
#[derive(Debug, Default, Clone)]
pub struct Trace {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone)]
enum Entry {
    Delivery { at: u64, from: String, to: String, frame: Vec<u8> },
    Dropped { switch: String, reason: String },
}

/// A VXLAN frame seen on a link of the fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlayFrame {
    /// Where it was delivered: `switch:port` names.
    pub from: String,
    pub to: String,
    pub vtep_src: Ipv4Addr,
    pub vtep_dst: Ipv4Addr,
    pub source_port: u16,
    pub vni: u32,
    pub inner_src: EthernetAddress,
    pub inner_dst: EthernetAddress,
    /// The inner frame, summarized.
    pub inner: String,
}

impl Trace {
    pub fn delivery(&mut self, at: u64, from: String, to: String, frame: &[u8]) {
        self.entries.push(Entry::Delivery { at, from, to, frame: frame.to_vec() });
    }

    pub fn dropped(&mut self, switch: &str, reason: String) {
        self.entries.push(Entry::Dropped { switch: switch.to_owned(), reason });
    }

    /// One line per delivery (and drop).
    pub fn lines(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|entry| match entry {
                Entry::Delivery { at, from, to, frame } => {
                    format!("{:>12}  {from:<12} -> {to:<12} {}", format!("{:.3}ms", *at as f64 / 1e6), describe(frame))
                }
                Entry::Dropped { switch, reason } => {
                    let why = match reason.as_str() {
                        "NeighborMiss" => " (it asks for the MAC; the sender retries)",
                        "NoRoute" => " (no route in the VRF of the interface it came in on)",
                        _ => "",
                    };
                    format!("{:>12}  dropped by {switch}: {reason}{why}", "")
                }
            })
            .collect()
    }

    /// The VXLAN frames delivered, decoded.
    pub fn overlay(&self) -> Vec<OverlayFrame> {
        self.entries
            .iter()
            .filter_map(|entry| match entry {
                Entry::Delivery { from, to, frame, .. } => decode_overlay(from, to, frame),
                Entry::Dropped { .. } => None,
            })
            .collect()
    }

    /// Deliveries to `to` (a host's name, or `switch:port`) that `matches`.
    pub fn delivered_to(&self, to: &str, matches: impl Fn(&str) -> bool) -> usize {
        self.entries
            .iter()
            .filter(
                |entry| matches!(entry, Entry::Delivery { to: t, frame, .. } if t == to && matches(&describe(frame))),
            )
            .count()
    }
}

/// Ethernet, IPv4, UDP to the VXLAN port, VXLAN, inner Ethernet: the
/// headers an overlay frame has on an underlay link.
fn decode_overlay(from: &str, to: &str, frame: &[u8]) -> Option<OverlayFrame> {
    let ethernet = EthernetFrame::new_checked(frame).ok()?;
    if ethernet.ethertype() != EtherType::Ipv4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(ethernet.payload()).ok()?;
    if ip.protocol() != IpProtocol::Udp {
        return None;
    }
    let udp = UdpPacket::new_checked(ip.payload()).ok()?;
    if udp.dst_port() != dataplane::wire::VXLAN_PORT {
        return None;
    }
    let vxlan = VxlanPacket::new_checked(udp.payload()).ok()?;
    let inner = EthernetFrame::new_checked(vxlan.payload()).ok()?;
    Some(OverlayFrame {
        from: from.to_owned(),
        to: to.to_owned(),
        vtep_src: ip.src_addr(),
        vtep_dst: ip.dst_addr(),
        source_port: udp.src_port(),
        vni: vxlan.vni(),
        inner_src: inner.src_addr(),
        inner_dst: inner.dst_addr(),
        inner: describe(vxlan.payload()),
    })
}

/// One line about a frame: what a capture tool would summarize.
pub fn describe(frame: &[u8]) -> String {
    let Ok(ethernet) = EthernetFrame::new_checked(frame) else {
        return "malformed frame".into();
    };
    let (mut ethertype, mut payload, mut tag) = (ethernet.ethertype(), ethernet.payload(), String::new());
    if ethertype == EtherType::Vlan
        && let Ok(vlan) = VlanTag::new_checked(payload)
    {
        tag = format!("vlan {} ", vlan.vid());
        ethertype = vlan.ethertype();
        payload = &payload[4..];
    }
    let body = match ethertype {
        EtherType::Arp => match ArpPacket::new_checked(payload).and_then(|p| ArpRepr::parse(&p)) {
            Ok(arp) if arp.operation == Operation::Request => {
                format!("ARP who-has {} tell {}", arp.target_protocol_addr, arp.sender_protocol_addr)
            }
            Ok(arp) => format!("ARP {} is-at {}", arp.sender_protocol_addr, arp.sender_hardware_addr),
            Err(e) => format!("ARP ({e})"),
        },
        EtherType::Ipv4 => describe_ipv4(payload),
        EtherType::Ipv6 => describe_ipv6(payload),
        EtherType::Lldp => "LLDP".into(),
        other => format!("ethertype {:#06x}", u16::from(other)),
    };
    format!("{tag}{body}")
}

fn describe_ipv4(payload: &[u8]) -> String {
    let Ok(ip) = Ipv4Packet::new_checked(payload) else {
        return "IPv4 (malformed)".into();
    };
    let (src, dst, ttl) = (ip.src_addr(), ip.dst_addr(), ip.ttl());
    match ip.protocol() {
        IpProtocol::Icmp => {
            let kind = match Icmpv4Packet::new_checked(ip.payload()).and_then(|p| Icmpv4Repr::parse(&p)) {
                Ok(Icmpv4Repr::EchoRequest { seq_no, .. }) => format!("echo request seq {seq_no}"),
                Ok(Icmpv4Repr::EchoReply { seq_no, .. }) => format!("echo reply seq {seq_no}"),
                Ok(Icmpv4Repr::TimeExceeded { .. }) => "time exceeded".into(),
                Ok(Icmpv4Repr::DstUnreachable { .. }) => "unreachable".into(),
                Ok(Icmpv4Repr::Redirect { gateway, .. }) => format!("redirect to {gateway}"),
                Err(e) => format!("({e})"),
            };
            format!("ICMP {src} > {dst} {kind} ttl {ttl}")
        }
        IpProtocol::Udp => match UdpPacket::new_checked(ip.payload()) {
            Ok(udp) if udp.dst_port() == dataplane::wire::VXLAN_PORT => match VxlanPacket::new_checked(udp.payload()) {
                Ok(vxlan) => {
                    // The inner addresses tell bridged (host MACs) from routed
                    // (router MACs, symmetric IRB) overlay frames.
                    let macs = EthernetFrame::new_checked(vxlan.payload())
                        .map(|f| format!("{} > {}, ", f.src_addr(), f.dst_addr()))
                        .unwrap_or_default();
                    format!(
                        "VXLAN {src} > {dst} sport {} vni {} [{macs}{}]",
                        udp.src_port(),
                        vxlan.vni(),
                        describe(vxlan.payload())
                    )
                }
                Err(e) => format!("VXLAN ({e})"),
            },
            Ok(udp) => format!("UDP {src}:{} > {dst}:{} ttl {ttl}", udp.src_port(), udp.dst_port()),
            Err(e) => format!("UDP ({e})"),
        },
        other => format!("IPv4 {src} > {dst} proto {other:?}"),
    }
}

fn describe_ipv6(payload: &[u8]) -> String {
    let Ok(ip) = Ipv6Packet::new_checked(payload) else {
        return "IPv6 (malformed)".into();
    };
    let (src, dst, hops) = (ip.src_addr(), ip.dst_addr(), ip.hop_limit());
    if ip.next_header() != IpProtocol::Icmpv6 {
        return format!("IPv6 {src} > {dst} next header {:?}", ip.next_header());
    }
    match Icmpv6Packet::new_checked(ip.payload()).and_then(|p| Icmpv6Repr::parse(&p, src, dst)) {
        Ok(Icmpv6Repr::EchoRequest { seq_no, .. }) => {
            format!("ICMPv6 {src} > {dst} echo request seq {seq_no} hlim {hops}")
        }
        Ok(Icmpv6Repr::EchoReply { seq_no, .. }) => format!("ICMPv6 {src} > {dst} echo reply seq {seq_no} hlim {hops}"),
        Ok(Icmpv6Repr::NeighborSolicit { target_addr, .. }) => format!("ND who-has {target_addr} tell {src}"),
        Ok(Icmpv6Repr::NeighborAdvert { target_addr, target_lladdr, .. }) => {
            format!("ND {target_addr} is-at {}", target_lladdr.map_or_else(|| "?".into(), |m| m.to_string()))
        }
        Ok(Icmpv6Repr::TimeExceeded { .. }) => format!("ICMPv6 {src} > {dst} time exceeded"),
        Ok(Icmpv6Repr::DstUnreachable { .. }) => format!("ICMPv6 {src} > {dst} unreachable"),
        Ok(Icmpv6Repr::PacketTooBig { mtu, .. }) => format!("ICMPv6 {src} > {dst} packet too big (mtu {mtu})"),
        Ok(Icmpv6Repr::Redirect { target_addr, dst_addr, .. }) => {
            format!("ICMPv6 {src} > {dst} redirect {dst_addr} to {target_addr}")
        }
        Err(e) => format!("ICMPv6 ({e})"),
    }
}
