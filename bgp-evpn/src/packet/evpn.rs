//! L2VPN EVPN wire format (AFI 25 / SAFI 70): the NLRI route types of
//! RFC 7432 §7 and RFC 9136 §3, route distinguishers (RFC 4364 §4.2), the
//! typed extended communities EVPN over VXLAN uses (RFC 4360, RFC 7432 §7.5
//! and §7.7–7.8, RFC 9135 §8.1, RFC 9012 §4.1) and the PMSI tunnel attribute
//! (RFC 6514 §5) with ingress replication (RFC 7432 §11.2, RFC 8365 §5.1.3).
//!
//! Decoders never panic: every length is checked against the bytes present,
//! and a malformed route is an [`EvpnError`] naming the field. RFC 7606 §5.3
//! makes a malformed NLRI in MP_REACH/MP_UNREACH an AFI/SAFI disable (or a
//! session reset), which the caller applies; an NLRI of a route type this
//! speaker does not know is skipped (RFC 7432 §7: "an implementation that
//! does not recognise a route type ... SHOULD ignore it").
//!
//! Labels are kept as the raw 24-bit field: with VXLAN encapsulation
//! (RFC 8365 §5.1.3) the whole field is the VNI, not an MPLS label.

use core::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnetwork::IpNetwork;

/// Route type codes (RFC 7432 §7, RFC 9136 §3).
pub mod route_type {
    pub const ETHERNET_AUTO_DISCOVERY: u8 = 1;
    pub const MAC_IP_ADVERTISEMENT: u8 = 2;
    pub const INCLUSIVE_MULTICAST: u8 = 3;
    pub const ETHERNET_SEGMENT: u8 = 4;
    pub const IP_PREFIX: u8 = 5;
}

/// Field sizes shared by several route types.
const RD_LEN: usize = 8;
const ESI_LEN: usize = 10;
const TAG_LEN: usize = 4;
const LABEL_LEN: usize = 3;
/// The only MAC length RFC 7432 §7.2 allows, in bits.
const MAC_LEN_BITS: u8 = 48;

/// Why an EVPN NLRI, extended community or PMSI tunnel attribute could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvpnError {
    /// The NLRI list ends inside a route's type/length header or its value.
    Truncated,
    /// A route's length does not fit any layout of its type; names the type.
    BadLength { route_type: u8, len: u8 },
    /// A length field inside a route is not one the RFC allows.
    BadField(&'static str),
}

impl fmt::Display for EvpnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvpnError::Truncated => f.write_str("EVPN NLRI truncated"),
            EvpnError::BadLength { route_type, len } => {
                write!(f, "EVPN route type {route_type} with length {len}")
            }
            EvpnError::BadField(field) => write!(f, "EVPN field {field} invalid"),
        }
    }
}

impl std::error::Error for EvpnError {}

/// A 48-bit MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MacAddr(pub [u8; 6]);

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5])
    }
}

/// Route distinguisher, RFC 4364 §4.2: a 2-octet type then 6 octets of
/// administrator and assigned number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteDistinguisher {
    /// Type 0: 2-octet AS, 4-octet number.
    As2 { asn: u16, number: u32 },
    /// Type 1: IPv4 address, 2-octet number (FRR's `router-id:EVI`).
    Ipv4 { addr: Ipv4Addr, number: u16 },
    /// Type 2: 4-octet AS, 2-octet number.
    As4 { asn: u32, number: u16 },
    /// A type RFC 4364 does not define, kept whole so it is reflected unchanged.
    Other([u8; 8]),
}

impl RouteDistinguisher {
    pub fn from_bytes(b: [u8; 8]) -> RouteDistinguisher {
        let [t0, t1, a, b1, c, d, e, g] = b;
        match u16::from_be_bytes([t0, t1]) {
            0 => RouteDistinguisher::As2 { asn: u16::from_be_bytes([a, b1]), number: u32::from_be_bytes([c, d, e, g]) },
            1 => RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(a, b1, c, d), number: u16::from_be_bytes([e, g]) },
            2 => RouteDistinguisher::As4 { asn: u32::from_be_bytes([a, b1, c, d]), number: u16::from_be_bytes([e, g]) },
            _ => RouteDistinguisher::Other(b),
        }
    }

    pub fn to_bytes(self) -> [u8; 8] {
        let mut out = [0u8; 8];
        match self {
            RouteDistinguisher::As2 { asn, number } => {
                out[2..4].copy_from_slice(&asn.to_be_bytes());
                out[4..].copy_from_slice(&number.to_be_bytes());
            }
            RouteDistinguisher::Ipv4 { addr, number } => {
                out[1] = 1;
                out[2..6].copy_from_slice(&addr.octets());
                out[6..].copy_from_slice(&number.to_be_bytes());
            }
            RouteDistinguisher::As4 { asn, number } => {
                out[1] = 2;
                out[2..6].copy_from_slice(&asn.to_be_bytes());
                out[6..].copy_from_slice(&number.to_be_bytes());
            }
            RouteDistinguisher::Other(b) => out = b,
        }
        out
    }
}

impl fmt::Display for RouteDistinguisher {
    /// As FRR and GoBGP print them: `ADMIN:NUMBER`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteDistinguisher::As2 { asn, number } => write!(f, "{asn}:{number}"),
            RouteDistinguisher::Ipv4 { addr, number } => write!(f, "{addr}:{number}"),
            RouteDistinguisher::As4 { asn, number } => write!(f, "{asn}:{number}"),
            RouteDistinguisher::Other(b) => {
                write!(f, "0x")?;
                b.iter().try_for_each(|x| write!(f, "{x:02x}"))
            }
        }
    }
}

/// Ethernet segment identifier, RFC 7432 §5: 10 octets, all zero for a
/// single-homed site (the only kind this speaker originates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Esi(pub [u8; ESI_LEN]);

impl Esi {
    pub const ZERO: Esi = Esi([0; ESI_LEN]);
}

impl fmt::Display for Esi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// The fields of an EVPN NLRI that are not part of the route's key and are
/// "to be treated as route attributes" (RFC 7432 §7.1, §7.2; RFC 9136 §3.1):
/// they travel with the path, so a re-announcement with a new label replaces
/// the route and a withdrawal need not repeat them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EvpnPathData {
    /// ESI of types 2 and 5 (the ESI is part of type 1's key).
    pub esi: Esi,
    /// Type 1's label, type 2's label 1 (the L2VNI), type 5's label (the L3VNI).
    pub label1: u32,
    /// Type 2's label 2 (the L3VNI of symmetric IRB).
    pub label2: Option<u32>,
    /// Type 5's gateway IP address.
    pub gateway: Option<IpAddr>,
}

/// One EVPN route (the value of one NLRI).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EvpnRoute {
    /// Type 1, RFC 7432 §7.1 (multihoming: decoded, shown and reflected only).
    EthernetAutoDiscovery { rd: RouteDistinguisher, esi: Esi, ethernet_tag: u32, label: u32 },
    /// Type 2, RFC 7432 §7.2. `label2` is the L3VNI of symmetric IRB (RFC 9135 §8.1).
    MacIpAdvertisement {
        rd: RouteDistinguisher,
        esi: Esi,
        ethernet_tag: u32,
        mac: MacAddr,
        ip: Option<IpAddr>,
        label1: u32,
        label2: Option<u32>,
    },
    /// Type 3, RFC 7432 §7.3.
    InclusiveMulticast { rd: RouteDistinguisher, ethernet_tag: u32, originator: IpAddr },
    /// Type 4, RFC 7432 §7.4 (multihoming: decoded, shown and reflected only).
    EthernetSegment { rd: RouteDistinguisher, esi: Esi, originator: IpAddr },
    /// Type 5, RFC 9136 §3.1. The prefix and gateway are of one family.
    IpPrefix { rd: RouteDistinguisher, esi: Esi, ethernet_tag: u32, prefix: IpNetwork, gateway: IpAddr, label: u32 },
}

/// Reads a fixed-size array at `at`, or `Truncated`.
fn array<const N: usize>(b: &[u8], at: usize) -> Result<[u8; N], EvpnError> {
    b.get(at..at + N).and_then(|s| <[u8; N]>::try_from(s).ok()).ok_or(EvpnError::Truncated)
}

fn u24(b: [u8; 3]) -> u32 {
    u32::from_be_bytes([0, b[0], b[1], b[2]])
}

fn put_u24(v: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&v.to_be_bytes()[1..]);
}

fn put_ip(ip: IpAddr, out: &mut Vec<u8>) {
    match ip {
        IpAddr::V4(a) => out.extend_from_slice(&a.octets()),
        IpAddr::V6(a) => out.extend_from_slice(&a.octets()),
    }
}

/// An address of exactly 4 or 16 octets.
fn ip_of(b: &[u8]) -> Option<IpAddr> {
    match b.len() {
        4 => Some(IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))),
        16 => <[u8; 16]>::try_from(b).ok().map(|a| IpAddr::V6(Ipv6Addr::from(a))),
        _ => None,
    }
}

fn ip_bits(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

impl EvpnRoute {
    pub fn route_type(&self) -> u8 {
        match self {
            EvpnRoute::EthernetAutoDiscovery { .. } => route_type::ETHERNET_AUTO_DISCOVERY,
            EvpnRoute::MacIpAdvertisement { .. } => route_type::MAC_IP_ADVERTISEMENT,
            EvpnRoute::InclusiveMulticast { .. } => route_type::INCLUSIVE_MULTICAST,
            EvpnRoute::EthernetSegment { .. } => route_type::ETHERNET_SEGMENT,
            EvpnRoute::IpPrefix { .. } => route_type::IP_PREFIX,
        }
    }

    pub fn rd(&self) -> RouteDistinguisher {
        match self {
            EvpnRoute::EthernetAutoDiscovery { rd, .. }
            | EvpnRoute::MacIpAdvertisement { rd, .. }
            | EvpnRoute::InclusiveMulticast { rd, .. }
            | EvpnRoute::EthernetSegment { rd, .. }
            | EvpnRoute::IpPrefix { rd, .. } => *rd,
        }
    }

    /// The route's key (non-key fields zeroed) and the fields that are not
    /// part of it.
    pub fn split(self) -> (EvpnRoute, EvpnPathData) {
        match self {
            EvpnRoute::EthernetAutoDiscovery { rd, esi, ethernet_tag, label } => (
                EvpnRoute::EthernetAutoDiscovery { rd, esi, ethernet_tag, label: 0 },
                EvpnPathData { label1: label, ..Default::default() },
            ),
            EvpnRoute::MacIpAdvertisement { rd, esi, ethernet_tag, mac, ip, label1, label2 } => (
                EvpnRoute::MacIpAdvertisement { rd, esi: Esi::ZERO, ethernet_tag, mac, ip, label1: 0, label2: None },
                EvpnPathData { esi, label1, label2, gateway: None },
            ),
            EvpnRoute::IpPrefix { rd, esi, ethernet_tag, prefix, gateway, label } => {
                let unset = match prefix {
                    IpNetwork::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                    IpNetwork::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
                };
                (
                    EvpnRoute::IpPrefix { rd, esi: Esi::ZERO, ethernet_tag, prefix, gateway: unset, label: 0 },
                    EvpnPathData { esi, label1: label, label2: None, gateway: Some(gateway) },
                )
            }
            EvpnRoute::InclusiveMulticast { .. } | EvpnRoute::EthernetSegment { .. } => (self, EvpnPathData::default()),
        }
    }

    /// The key form of the route (see [`EvpnRoute::split`]).
    pub fn key(self) -> EvpnRoute {
        self.split().0
    }

    /// The whole route from its key and the path's non-key fields.
    pub fn with_data(self, data: &EvpnPathData) -> EvpnRoute {
        match self {
            EvpnRoute::EthernetAutoDiscovery { rd, esi, ethernet_tag, .. } => {
                EvpnRoute::EthernetAutoDiscovery { rd, esi, ethernet_tag, label: data.label1 }
            }
            EvpnRoute::MacIpAdvertisement { rd, ethernet_tag, mac, ip, .. } => EvpnRoute::MacIpAdvertisement {
                rd,
                esi: data.esi,
                ethernet_tag,
                mac,
                ip,
                label1: data.label1,
                label2: data.label2,
            },
            EvpnRoute::IpPrefix { rd, ethernet_tag, prefix, gateway, .. } => EvpnRoute::IpPrefix {
                rd,
                esi: data.esi,
                ethernet_tag,
                prefix,
                gateway: data.gateway.unwrap_or(gateway),
                label: data.label1,
            },
            other => other,
        }
    }

    /// Octets of this route as one NLRI (type and length included).
    pub fn encoded_len(&self) -> usize {
        let ip_len = |ip: IpAddr| if ip.is_ipv4() { 4 } else { 16 };
        2 + match self {
            EvpnRoute::EthernetAutoDiscovery { .. } => RD_LEN + ESI_LEN + TAG_LEN + LABEL_LEN,
            EvpnRoute::MacIpAdvertisement { ip, label2, .. } => {
                RD_LEN
                    + ESI_LEN
                    + TAG_LEN
                    + 1
                    + 6
                    + 1
                    + ip.map_or(0, ip_len)
                    + LABEL_LEN
                    + if label2.is_some() { LABEL_LEN } else { 0 }
            }
            EvpnRoute::InclusiveMulticast { originator, .. } => RD_LEN + TAG_LEN + 1 + ip_len(*originator),
            EvpnRoute::EthernetSegment { originator, .. } => RD_LEN + ESI_LEN + 1 + ip_len(*originator),
            EvpnRoute::IpPrefix { prefix, .. } => {
                RD_LEN + ESI_LEN + TAG_LEN + 1 + 2 * if prefix.is_ipv4() { 4 } else { 16 } + LABEL_LEN
            }
        }
    }

    /// Decodes the value of one NLRI of type `kind`. `Ok(None)` is a route
    /// type this speaker does not know (to be ignored, RFC 7432 §7).
    pub fn decode_value(kind: u8, v: &[u8]) -> Result<Option<EvpnRoute>, EvpnError> {
        let bad_len = EvpnError::BadLength { route_type: kind, len: v.len() as u8 };
        let rd = || array::<RD_LEN>(v, 0).map(RouteDistinguisher::from_bytes);
        let route = match kind {
            // RD(8) ESI(10) tag(4) label(3).
            route_type::ETHERNET_AUTO_DISCOVERY => {
                if v.len() != RD_LEN + ESI_LEN + TAG_LEN + LABEL_LEN {
                    return Err(bad_len);
                }
                EvpnRoute::EthernetAutoDiscovery {
                    rd: rd()?,
                    esi: Esi(array(v, 8)?),
                    ethernet_tag: u32::from_be_bytes(array(v, 18)?),
                    label: u24(array(v, 22)?),
                }
            }
            // RD(8) ESI(10) tag(4) MAC len(1) MAC(6) IP len(1) IP(0/4/16)
            // label1(3) [label2(3)].
            route_type::MAC_IP_ADVERTISEMENT => {
                const MAC_LEN_AT: usize = 22;
                const MAC_AT: usize = 23;
                const IP_LEN_AT: usize = 29;
                const IP_AT: usize = 30;
                if v.len() < IP_AT + LABEL_LEN {
                    return Err(bad_len);
                }
                if v[MAC_LEN_AT] != MAC_LEN_BITS {
                    return Err(EvpnError::BadField("MAC address length"));
                }
                let ip_len = match v[IP_LEN_AT] {
                    0 => 0,
                    32 => 4,
                    128 => 16,
                    _ => return Err(EvpnError::BadField("IP address length")),
                };
                let labels_at = IP_AT + ip_len;
                let label2 = match v.len().checked_sub(labels_at) {
                    Some(LABEL_LEN) => None,
                    Some(n) if n == 2 * LABEL_LEN => Some(u24(array(v, labels_at + LABEL_LEN)?)),
                    _ => return Err(bad_len),
                };
                EvpnRoute::MacIpAdvertisement {
                    rd: rd()?,
                    esi: Esi(array(v, 8)?),
                    ethernet_tag: u32::from_be_bytes(array(v, 18)?),
                    mac: MacAddr(array(v, MAC_AT)?),
                    ip: if ip_len == 0 { None } else { ip_of(&v[IP_AT..labels_at]) },
                    label1: u24(array(v, labels_at)?),
                    label2,
                }
            }
            // RD(8) tag(4) IP len(1) originator(4/16).
            route_type::INCLUSIVE_MULTICAST => {
                const IP_LEN_AT: usize = 12;
                const IP_AT: usize = 13;
                let expected = match v.get(IP_LEN_AT) {
                    Some(32) => 4,
                    Some(128) => 16,
                    Some(_) => return Err(EvpnError::BadField("originating router's IP length")),
                    None => return Err(bad_len),
                };
                if v.len() != IP_AT + expected {
                    return Err(bad_len);
                }
                EvpnRoute::InclusiveMulticast {
                    rd: rd()?,
                    ethernet_tag: u32::from_be_bytes(array(v, 8)?),
                    originator: ip_of(&v[IP_AT..]).ok_or(bad_len)?,
                }
            }
            // RD(8) ESI(10) IP len(1) originator(4/16).
            route_type::ETHERNET_SEGMENT => {
                const IP_LEN_AT: usize = 18;
                const IP_AT: usize = 19;
                let expected = match v.get(IP_LEN_AT) {
                    Some(32) => 4,
                    Some(128) => 16,
                    Some(_) => return Err(EvpnError::BadField("originating router's IP length")),
                    None => return Err(bad_len),
                };
                if v.len() != IP_AT + expected {
                    return Err(bad_len);
                }
                EvpnRoute::EthernetSegment {
                    rd: rd()?,
                    esi: Esi(array(v, 8)?),
                    originator: ip_of(&v[IP_AT..]).ok_or(bad_len)?,
                }
            }
            // RFC 9136 §3.1: RD(8) ESI(10) tag(4) prefix len(1) prefix(4/16)
            // gateway(4/16) label(3); the family follows from the total
            // length (34 or 58), §3.1: "the IP prefix and gateway ... MUST
            // both be IPv4 or both IPv6".
            route_type::IP_PREFIX => {
                const PREFIX_LEN_AT: usize = 22;
                const PREFIX_AT: usize = 23;
                let addr_len = match v.len() {
                    34 => 4,
                    58 => 16,
                    _ => return Err(bad_len),
                };
                let gateway_at = PREFIX_AT + addr_len;
                let label_at = gateway_at + addr_len;
                let prefix_ip = ip_of(&v[PREFIX_AT..gateway_at]).ok_or(bad_len)?;
                let prefix =
                    IpNetwork::new(prefix_ip, v[PREFIX_LEN_AT]).map_err(|_| EvpnError::BadField("IP prefix length"))?;
                EvpnRoute::IpPrefix {
                    rd: rd()?,
                    esi: Esi(array(v, 8)?),
                    ethernet_tag: u32::from_be_bytes(array(v, 18)?),
                    prefix,
                    gateway: ip_of(&v[gateway_at..label_at]).ok_or(bad_len)?,
                    label: u24(array(v, label_at)?),
                }
            }
            _ => return Ok(None),
        };
        Ok(Some(route))
    }

    /// Decodes a whole MP_REACH/MP_UNREACH NLRI field of family L2VPN EVPN
    /// into `out`. Unknown route types are skipped and counted in the result.
    pub fn decode_all(mut buf: &[u8], out: &mut Vec<EvpnRoute>) -> Result<usize, EvpnError> {
        let mut unknown = 0;
        while !buf.is_empty() {
            let [kind, len] = array::<2>(buf, 0)?;
            let value = buf.get(2..2 + len as usize).ok_or(EvpnError::Truncated)?;
            match EvpnRoute::decode_value(kind, value)? {
                Some(route) => out.push(route),
                None => unknown += 1,
            }
            buf = &buf[2 + len as usize..];
        }
        Ok(unknown)
    }

    /// Appends this route as one NLRI (type, length, value).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.route_type());
        let len_at = out.len();
        out.push(0);
        match *self {
            EvpnRoute::EthernetAutoDiscovery { rd, esi, ethernet_tag, label } => {
                out.extend_from_slice(&rd.to_bytes());
                out.extend_from_slice(&esi.0);
                out.extend_from_slice(&ethernet_tag.to_be_bytes());
                put_u24(label, out);
            }
            EvpnRoute::MacIpAdvertisement { rd, esi, ethernet_tag, mac, ip, label1, label2 } => {
                out.extend_from_slice(&rd.to_bytes());
                out.extend_from_slice(&esi.0);
                out.extend_from_slice(&ethernet_tag.to_be_bytes());
                out.push(MAC_LEN_BITS);
                out.extend_from_slice(&mac.0);
                match ip {
                    None => out.push(0),
                    Some(ip) => {
                        out.push(ip_bits(ip));
                        put_ip(ip, out);
                    }
                }
                put_u24(label1, out);
                if let Some(label2) = label2 {
                    put_u24(label2, out);
                }
            }
            EvpnRoute::InclusiveMulticast { rd, ethernet_tag, originator } => {
                out.extend_from_slice(&rd.to_bytes());
                out.extend_from_slice(&ethernet_tag.to_be_bytes());
                out.push(ip_bits(originator));
                put_ip(originator, out);
            }
            EvpnRoute::EthernetSegment { rd, esi, originator } => {
                out.extend_from_slice(&rd.to_bytes());
                out.extend_from_slice(&esi.0);
                out.push(ip_bits(originator));
                put_ip(originator, out);
            }
            EvpnRoute::IpPrefix { rd, esi, ethernet_tag, prefix, gateway, label } => {
                out.extend_from_slice(&rd.to_bytes());
                out.extend_from_slice(&esi.0);
                out.extend_from_slice(&ethernet_tag.to_be_bytes());
                out.push(prefix.prefix());
                put_ip(prefix.ip(), out);
                // The gateway is of the prefix's family (RFC 9136 §3.1);
                // an unset one is all zeros of that family.
                match (prefix, gateway) {
                    (IpNetwork::V4(_), IpAddr::V4(g)) => out.extend_from_slice(&g.octets()),
                    (IpNetwork::V6(_), IpAddr::V6(g)) => out.extend_from_slice(&g.octets()),
                    (IpNetwork::V4(_), IpAddr::V6(_)) => out.extend_from_slice(&[0; 4]),
                    (IpNetwork::V6(_), IpAddr::V4(_)) => out.extend_from_slice(&[0; 16]),
                }
                put_u24(label, out);
            }
        }
        // Every layout is at most 8+10+4+1+6+1+16+3+3 = 52 or 8+10+4+1+16+16+3 = 58 octets.
        out[len_at] = (out.len() - len_at - 1) as u8;
    }
}

impl fmt::Display for EvpnRoute {
    /// FRR's prefix notation: `[type]:[tag]:[...]` after the RD.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvpnRoute::EthernetAutoDiscovery { rd, esi, ethernet_tag, .. } => {
                write!(f, "{rd} [1]:[{esi}]:[{ethernet_tag}]")
            }
            EvpnRoute::MacIpAdvertisement { rd, ethernet_tag, mac, ip, .. } => {
                write!(f, "{rd} [2]:[{ethernet_tag}]:[48]:[{mac}]")?;
                if let Some(ip) = ip {
                    write!(f, ":[{}]:[{ip}]", ip_bits(*ip))?;
                }
                Ok(())
            }
            EvpnRoute::InclusiveMulticast { rd, ethernet_tag, originator } => {
                write!(f, "{rd} [3]:[{ethernet_tag}]:[{}]:[{originator}]", ip_bits(*originator))
            }
            EvpnRoute::EthernetSegment { rd, esi, originator } => {
                write!(f, "{rd} [4]:[{esi}]:[{}]:[{originator}]", ip_bits(*originator))
            }
            EvpnRoute::IpPrefix { rd, ethernet_tag, prefix, .. } => {
                write!(f, "{rd} [5]:[{ethernet_tag}]:[{}]:[{}]", prefix.prefix(), prefix.ip())
            }
        }
    }
}

/// Extended community type/sub-type codes (RFC 4360, RFC 7153 registry).
mod ext {
    pub const TRANSITIVE_TWO_OCTET_AS: u8 = 0x00;
    pub const TRANSITIVE_IPV4: u8 = 0x01;
    pub const TRANSITIVE_FOUR_OCTET_AS: u8 = 0x02;
    pub const TRANSITIVE_OPAQUE: u8 = 0x03;
    pub const EVPN: u8 = 0x06;
    /// Sub-type of the three address-specific types.
    pub const ROUTE_TARGET: u8 = 0x02;
    /// RFC 9012 §4.1 (opaque).
    pub const ENCAPSULATION: u8 = 0x0c;
    /// RFC 7432 §7.8 (opaque).
    pub const DEFAULT_GATEWAY: u8 = 0x0d;
    /// RFC 7432 §7.7 (EVPN).
    pub const MAC_MOBILITY: u8 = 0x00;
    /// RFC 9135 §8.1 (EVPN).
    pub const ROUTER_MAC: u8 = 0x03;
    /// RFC 7432 §7.7: the sticky/static bit of MAC mobility's flags.
    pub const MAC_MOBILITY_STICKY: u8 = 0x01;
}

/// Tunnel types of the encapsulation community (RFC 9012 §14, IANA "BGP
/// Tunnel Encapsulation Attribute Tunnel Types").
pub mod tunnel_type {
    pub const VXLAN: u16 = 8;
    pub const NVGRE: u16 = 9;
    pub const MPLS: u16 = 10;
    pub const GENEVE: u16 = 19;
}

/// The extended communities EVPN uses, typed; anything else stays raw so it
/// is passed on unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExtCommunity {
    /// Route target with a 2-octet AS (FRR's derived `ASN:VNI`), an IPv4
    /// address or a 4-octet AS as administrator (RFC 4360 §4, RFC 5668).
    RouteTargetAs2 {
        asn: u16,
        number: u32,
    },
    RouteTargetIpv4 {
        addr: Ipv4Addr,
        number: u16,
    },
    RouteTargetAs4 {
        asn: u32,
        number: u16,
    },
    /// RFC 9012 §4.1; [`tunnel_type::VXLAN`] for RFC 8365.
    Encapsulation {
        tunnel_type: u16,
    },
    /// RFC 9135 §8.1: the MAC of the advertising VTEP's L3VNI.
    RouterMac(MacAddr),
    /// RFC 7432 §7.7: sequence number of a moved MAC; sticky (static) MACs never move.
    MacMobility {
        sticky: bool,
        sequence: u32,
    },
    /// RFC 7432 §7.8.
    DefaultGateway,
    Other(u64),
}

impl ExtCommunity {
    /// From the 8 octets as `PathAttrs::ext_communities` holds them.
    pub fn from_u64(raw: u64) -> ExtCommunity {
        let b = raw.to_be_bytes();
        let two = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        let four = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        match (b[0], b[1]) {
            (ext::TRANSITIVE_TWO_OCTET_AS, ext::ROUTE_TARGET) => {
                ExtCommunity::RouteTargetAs2 { asn: two(2), number: four(4) }
            }
            (ext::TRANSITIVE_IPV4, ext::ROUTE_TARGET) => {
                ExtCommunity::RouteTargetIpv4 { addr: Ipv4Addr::from(four(2)), number: two(6) }
            }
            (ext::TRANSITIVE_FOUR_OCTET_AS, ext::ROUTE_TARGET) => {
                ExtCommunity::RouteTargetAs4 { asn: four(2), number: two(6) }
            }
            (ext::TRANSITIVE_OPAQUE, ext::ENCAPSULATION) => ExtCommunity::Encapsulation { tunnel_type: two(6) },
            (ext::TRANSITIVE_OPAQUE, ext::DEFAULT_GATEWAY) => ExtCommunity::DefaultGateway,
            (ext::EVPN, ext::ROUTER_MAC) => ExtCommunity::RouterMac(MacAddr([b[2], b[3], b[4], b[5], b[6], b[7]])),
            (ext::EVPN, ext::MAC_MOBILITY) => {
                ExtCommunity::MacMobility { sticky: b[2] & ext::MAC_MOBILITY_STICKY != 0, sequence: four(4) }
            }
            _ => ExtCommunity::Other(raw),
        }
    }

    pub fn to_u64(self) -> u64 {
        let mut b = [0u8; 8];
        match self {
            ExtCommunity::RouteTargetAs2 { asn, number } => {
                b[..2].copy_from_slice(&[ext::TRANSITIVE_TWO_OCTET_AS, ext::ROUTE_TARGET]);
                b[2..4].copy_from_slice(&asn.to_be_bytes());
                b[4..].copy_from_slice(&number.to_be_bytes());
            }
            ExtCommunity::RouteTargetIpv4 { addr, number } => {
                b[..2].copy_from_slice(&[ext::TRANSITIVE_IPV4, ext::ROUTE_TARGET]);
                b[2..6].copy_from_slice(&addr.octets());
                b[6..].copy_from_slice(&number.to_be_bytes());
            }
            ExtCommunity::RouteTargetAs4 { asn, number } => {
                b[..2].copy_from_slice(&[ext::TRANSITIVE_FOUR_OCTET_AS, ext::ROUTE_TARGET]);
                b[2..6].copy_from_slice(&asn.to_be_bytes());
                b[6..].copy_from_slice(&number.to_be_bytes());
            }
            ExtCommunity::Encapsulation { tunnel_type } => {
                b[..2].copy_from_slice(&[ext::TRANSITIVE_OPAQUE, ext::ENCAPSULATION]);
                b[6..].copy_from_slice(&tunnel_type.to_be_bytes());
            }
            ExtCommunity::DefaultGateway => b[..2].copy_from_slice(&[ext::TRANSITIVE_OPAQUE, ext::DEFAULT_GATEWAY]),
            ExtCommunity::RouterMac(mac) => {
                b[..2].copy_from_slice(&[ext::EVPN, ext::ROUTER_MAC]);
                b[2..].copy_from_slice(&mac.0);
            }
            ExtCommunity::MacMobility { sticky, sequence } => {
                b[..2].copy_from_slice(&[ext::EVPN, ext::MAC_MOBILITY]);
                b[2] = if sticky { ext::MAC_MOBILITY_STICKY } else { 0 };
                b[4..].copy_from_slice(&sequence.to_be_bytes());
            }
            ExtCommunity::Other(raw) => return raw,
        }
        u64::from_be_bytes(b)
    }

    pub fn is_route_target(&self) -> bool {
        matches!(
            self,
            ExtCommunity::RouteTargetAs2 { .. }
                | ExtCommunity::RouteTargetIpv4 { .. }
                | ExtCommunity::RouteTargetAs4 { .. }
        )
    }
}

impl fmt::Display for ExtCommunity {
    /// FRR's `show bgp l2vpn evpn` notation.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExtCommunity::RouteTargetAs2 { asn, number } => write!(f, "RT:{asn}:{number}"),
            ExtCommunity::RouteTargetIpv4 { addr, number } => write!(f, "RT:{addr}:{number}"),
            ExtCommunity::RouteTargetAs4 { asn, number } => write!(f, "RT:{asn}:{number}"),
            ExtCommunity::Encapsulation { tunnel_type: tunnel_type::VXLAN } => f.write_str("ET:8"),
            ExtCommunity::Encapsulation { tunnel_type } => write!(f, "ET:{tunnel_type}"),
            ExtCommunity::RouterMac(mac) => write!(f, "Rmac:{mac}"),
            ExtCommunity::MacMobility { sticky: true, sequence } => write!(f, "MM:{sequence}, sticky MAC"),
            ExtCommunity::MacMobility { sticky: false, sequence } => write!(f, "MM:{sequence}"),
            ExtCommunity::DefaultGateway => f.write_str("Default Gateway"),
            ExtCommunity::Other(raw) => write!(f, "0x{raw:016x}"),
        }
    }
}

/// RFC 7432 §7.7: "If a route has more than one MAC Mobility extended
/// community, the one with the higher sequence number is used" — and a
/// sticky one anywhere makes the MAC sticky.
pub fn mac_mobility(ext_communities: &[u64]) -> Option<(bool, u32)> {
    ext_communities
        .iter()
        .filter_map(|&c| match ExtCommunity::from_u64(c) {
            ExtCommunity::MacMobility { sticky, sequence } => Some((sticky, sequence)),
            _ => None,
        })
        .reduce(|(s1, q1), (s2, q2)| (s1 || s2, q1.max(q2)))
}

/// PMSI_TUNNEL path attribute type code (RFC 6514 §5), optional transitive.
pub const PMSI_TUNNEL_TYPE_CODE: u8 = 22;

/// PMSI tunnel types (RFC 6514 §5); EVPN over VXLAN uses ingress replication.
pub mod pmsi_tunnel_type {
    pub const NONE: u8 = 0;
    pub const INGRESS_REPLICATION: u8 = 6;
}

/// The PMSI tunnel attribute a type 3 route carries: flags(1) tunnel
/// type(1) label(3) tunnel identifier. For ingress replication the
/// identifier is the unicast address of the replicating VTEP (RFC 7432
/// §11.2) and the label is the VNI (RFC 8365 §5.1.3).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PmsiTunnel {
    IngressReplication {
        flags: u8,
        vni: u32,
        endpoint: IpAddr,
    },
    /// Any other tunnel type, kept so a reflector passes it on.
    Other {
        flags: u8,
        tunnel_type: u8,
        label: u32,
        identifier: Vec<u8>,
    },
}

impl PmsiTunnel {
    /// Decodes the attribute's value. A malformed one is an error the
    /// caller handles as treat-as-withdraw (RFC 7606 §2: the attribute
    /// determines where the route's BUM traffic goes).
    pub fn decode(v: &[u8]) -> Result<PmsiTunnel, EvpnError> {
        let [flags, kind, l0, l1, l2] = array::<5>(v, 0)?;
        let label = u24([l0, l1, l2]);
        let identifier = &v[5..];
        Ok(match kind {
            pmsi_tunnel_type::INGRESS_REPLICATION => PmsiTunnel::IngressReplication {
                flags,
                vni: label,
                endpoint: ip_of(identifier).ok_or(EvpnError::BadField("PMSI ingress replication endpoint"))?,
            },
            _ => PmsiTunnel::Other { flags, tunnel_type: kind, label, identifier: identifier.to_vec() },
        })
    }

    /// Appends the attribute's value.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            PmsiTunnel::IngressReplication { flags, vni, endpoint } => {
                out.extend_from_slice(&[*flags, pmsi_tunnel_type::INGRESS_REPLICATION]);
                put_u24(*vni, out);
                put_ip(*endpoint, out);
            }
            PmsiTunnel::Other { flags, tunnel_type, label, identifier } => {
                out.extend_from_slice(&[*flags, *tunnel_type]);
                put_u24(*label, out);
                out.extend_from_slice(identifier);
            }
        }
    }
}

#[cfg(test)]
mod tests;
