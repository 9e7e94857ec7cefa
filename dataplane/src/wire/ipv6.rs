//! IPv6 headers (RFC 8200): the fixed header, and a bounded walk over the
//! extension headers to the upper-layer protocol.

use std::net::Ipv6Addr;

use super::{Ecn, Error, Field, IpProtocol, Result};

mod field {
    use super::Field;
    pub const VER_TC_FLOW: Field = 0..4;
    pub const PAYLOAD_LEN: Field = 4..6;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Field = 8..24;
    pub const DST_ADDR: Field = 24..40;
}

/// Length of the fixed header.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

/// The minimum link MTU every IPv6 link supports (RFC 8200 section 5).
pub const MIN_MTU: usize = 1280;

/// How many extension headers [`walk_extension_headers`] follows before it
/// gives up with `Unsupported`. RFC 8200 section 4.1 orders at most six kinds,
/// Destination Options twice; longer chains are attacks or exotic.
pub const MAX_EXTENSION_HEADERS: usize = 8;

/// IP protocol number of the Authentication Header (RFC 4302), whose length
/// is counted in 4-byte units.
const AUTHENTICATION_HEADER: u8 = 51;

/// A read/write view of an IPv6 packet.
///
/// [`Ipv6Packet::new_checked`] guarantees the buffer holds the fixed header
/// and `payload_len` bytes after it; bytes beyond (Ethernet padding) are
/// ignored.
#[derive(Debug, Clone)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Ipv6Packet<T> {
        Ipv6Packet { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Ipv6Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// `Truncated` when the buffer is shorter than the fixed header plus the
    /// payload length. (A zero payload length with a Jumbo Payload option,
    /// RFC 2675, is read as an empty payload: jumbograms do not cross this
    /// switch's links.)
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN || len < HEADER_LEN + usize::from(self.payload_len()) {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn ver_tc_flow(&self) -> u32 {
        let data = &self.buffer.as_ref()[field::VER_TC_FLOW];
        u32::from_be_bytes([data[0], data[1], data[2], data[3]])
    }

    pub fn version(&self) -> u8 {
        (self.ver_tc_flow() >> 28) as u8
    }

    /// The traffic class octet: DSCP and ECN (RFC 2474, RFC 3168).
    pub fn traffic_class(&self) -> u8 {
        (self.ver_tc_flow() >> 20) as u8
    }

    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.traffic_class())
    }

    /// The 20-bit flow label (RFC 6437).
    pub fn flow_label(&self) -> u32 {
        self.ver_tc_flow() & 0x000f_ffff
    }

    /// Length of what follows the fixed header, extension headers included.
    pub fn payload_len(&self) -> u16 {
        let data = &self.buffer.as_ref()[field::PAYLOAD_LEN];
        u16::from_be_bytes([data[0], data[1]])
    }

    pub fn next_header(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::NEXT_HEADER])
    }

    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    pub fn src_addr(&self) -> Ipv6Addr {
        let bytes: [u8; 16] = self.buffer.as_ref()[field::SRC_ADDR].try_into().unwrap();
        Ipv6Addr::from(bytes)
    }

    pub fn dst_addr(&self) -> Ipv6Addr {
        let bytes: [u8; 16] = self.buffer.as_ref()[field::DST_ADDR].try_into().unwrap();
        Ipv6Addr::from(bytes)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Ipv6Packet<&'a T> {
    /// The payload up to `payload_len`, extension headers included.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }

    /// Walks the extension headers of the payload (see
    /// [`walk_extension_headers`]).
    pub fn upper_layer(&self) -> Result<UpperLayer> {
        walk_extension_headers(self.next_header(), self.payload())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    fn set_ver_tc_flow(&mut self, value: u32) {
        self.buffer.as_mut()[field::VER_TC_FLOW].copy_from_slice(&value.to_be_bytes());
    }

    pub fn set_version(&mut self, value: u8) {
        let word = (self.ver_tc_flow() & 0x0fff_ffff) | (u32::from(value & 0x0f) << 28);
        self.set_ver_tc_flow(word);
    }

    pub fn set_traffic_class(&mut self, value: u8) {
        let word = (self.ver_tc_flow() & 0xf00f_ffff) | (u32::from(value) << 20);
        self.set_ver_tc_flow(word);
    }

    pub fn set_dscp(&mut self, value: u8) {
        let traffic_class = (self.traffic_class() & 0b11) | (value << 2);
        self.set_traffic_class(traffic_class);
    }

    /// Sets the ECN field; IPv6 has no header checksum to patch.
    pub fn set_ecn(&mut self, value: Ecn) {
        let traffic_class = (self.traffic_class() & !0b11) | value.to_bits();
        self.set_traffic_class(traffic_class);
    }

    pub fn set_flow_label(&mut self, value: u32) {
        let word = (self.ver_tc_flow() & 0xfff0_0000) | (value & 0x000f_ffff);
        self.set_ver_tc_flow(word);
    }

    pub fn set_payload_len(&mut self, value: u16) {
        self.buffer.as_mut()[field::PAYLOAD_LEN].copy_from_slice(&value.to_be_bytes());
    }

    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NEXT_HEADER] = value.into();
    }

    pub fn set_hop_limit(&mut self, value: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = value;
    }

    pub fn set_src_addr(&mut self, value: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&value.octets());
    }

    pub fn set_dst_addr(&mut self, value: Ipv6Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&value.octets());
    }

    /// The router's hop-limit step (RFC 8200 section 3): when the hop limit
    /// is above 1, decrements it and returns the new value; at 0 or 1 the
    /// packet must not be forwarded: returns `None` and leaves the header
    /// untouched, ready to be quoted in an ICMPv6 Time Exceeded.
    pub fn decrement_hop_limit(&mut self) -> Option<u8> {
        let hop_limit = self.hop_limit();
        if hop_limit <= 1 {
            return None;
        }
        self.set_hop_limit(hop_limit - 1);
        Some(hop_limit - 1)
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// The owned form of the fixed IPv6 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Repr {
    pub src_addr: Ipv6Addr,
    pub dst_addr: Ipv6Addr,
    /// The first header after the fixed one: an extension header or the
    /// upper layer.
    pub next_header: IpProtocol,
    /// Length after the fixed header, extension headers included.
    pub payload_len: usize,
    pub hop_limit: u8,
    pub dscp: u8,
    pub ecn: Ecn,
    /// 20 bits.
    pub flow_label: u32,
}

impl Ipv6Repr {
    /// Reads the fixed header: version 6 (else `Unsupported`) and the
    /// payload length against the buffer (else `Truncated`).
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv6Packet<T>) -> Result<Ipv6Repr> {
        packet.check_len()?;
        if packet.version() != 6 {
            return Err(Error::Unsupported);
        }
        Ok(Ipv6Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            flow_label: packet.flow_label(),
        })
    }

    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of the whole packet: fixed header and payload.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Writes the fixed header into the start of `packet`, which must hold
    /// at least [`HEADER_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv6Packet<T>) {
        packet.set_ver_tc_flow(0);
        packet.set_version(6);
        packet.set_dscp(self.dscp);
        packet.set_ecn(self.ecn);
        packet.set_flow_label(self.flow_label);
        packet.set_payload_len(self.payload_len as u16);
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
    }
}

/// What a Fragment header (RFC 8200 section 4.5) says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Fragment {
    /// Offset of this fragment's data in the original payload, in bytes.
    pub offset: u16,
    pub more_frags: bool,
    pub ident: u32,
}

impl Ipv6Fragment {
    /// Only the first fragment (offset 0) carries the upper-layer header.
    pub const fn is_first(&self) -> bool {
        self.offset == 0
    }
}

/// Where the upper layer of an IPv6 packet starts, found by
/// [`walk_extension_headers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpperLayer {
    /// The upper-layer protocol, or [`IpProtocol::Ipv6NoNxt`] when the chain
    /// ends with No Next Header.
    pub protocol: IpProtocol,
    /// Offset of the upper-layer header from the start of the IPv6 payload
    /// (just after the fixed header).
    pub offset: usize,
    /// Set when the packet carries a Fragment header. In a non-first
    /// fragment the bytes at `offset` are the middle of the upper-layer
    /// packet, not its header.
    pub fragment: Option<Ipv6Fragment>,
}

/// Follows the chain of extension headers from `next_header` (the fixed
/// header's) through `payload` to the upper-layer protocol: Hop-by-Hop
/// Options (only first, RFC 8200 section 4.1), Routing, Fragment,
/// Destination Options and Authentication (RFC 4302).
///
/// Bounded: every header is at least 8 bytes and at most
/// [`MAX_EXTENSION_HEADERS`] are followed (then `Unsupported`). A header
/// running past the payload is `Truncated`; a misplaced Hop-by-Hop header
/// or a second Fragment header is `Malformed`.
pub fn walk_extension_headers(next_header: IpProtocol, payload: &[u8]) -> Result<UpperLayer> {
    let mut protocol = next_header;
    let mut offset = 0;
    let mut fragment = None;
    for index in 0..=MAX_EXTENSION_HEADERS {
        let header_len = match protocol {
            IpProtocol::HopByHop if index > 0 => return Err(Error::Malformed),
            IpProtocol::HopByHop | IpProtocol::Ipv6Route | IpProtocol::Ipv6Opts => {
                let length_unit = payload.get(offset + 1).ok_or(Error::Truncated)?;
                (usize::from(*length_unit) + 1) * 8
            }
            IpProtocol::Ipv6Frag => {
                if fragment.is_some() {
                    return Err(Error::Malformed);
                }
                let header = payload.get(offset..offset + 8).ok_or(Error::Truncated)?;
                let offset_flags = u16::from_be_bytes([header[2], header[3]]);
                fragment = Some(Ipv6Fragment {
                    offset: offset_flags & 0xfff8,
                    more_frags: offset_flags & 0x0001 != 0,
                    ident: u32::from_be_bytes([header[4], header[5], header[6], header[7]]),
                });
                8
            }
            IpProtocol::Unknown(AUTHENTICATION_HEADER) => {
                let length_unit = payload.get(offset + 1).ok_or(Error::Truncated)?;
                (usize::from(*length_unit) + 2) * 4
            }
            _ => return Ok(UpperLayer { protocol, offset, fragment }),
        };
        if index == MAX_EXTENSION_HEADERS {
            return Err(Error::Unsupported);
        }
        if payload.len() < offset + header_len {
            return Err(Error::Truncated);
        }
        protocol = IpProtocol::from(payload[offset]);
        offset += header_len;
    }
    Err(Error::Unsupported)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wire::ipv4::tests::{any_ecn, any_protocol};
    use proptest::prelude::*;

    // An ICMPv6 echo request from 2001:db8::1 to 2001:db8::2 with traffic
    // class 0xb8 (DSCP 46, Not-ECT), flow label 0x12345 and hop limit 64:
    // IPv6(tc=0xb8, fl=0x12345)/ICMPv6EchoRequest(id=0x1d2e, seq=3,
    // data=b"abcdefgh") emitted with scapy 2.5 and pasted here.
    pub(crate) const ECHO_REQUEST: [u8; 56] = [
        0x6b, 0x81, 0x23, 0x45, 0x00, 0x10, 0x3a, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x80, 0x00, 0x75, 0x79, 0x1d, 0x2e, 0x00, 0x03, //
        0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    ];

    // A link-local multicast (fe80::1 -> ff02::1) with a Hop-by-Hop header (Router
    // Alert option) and a first Fragment header (M=1, id 0xabcdef01) before
    // UDP 1000 -> 2000: IPv6()/IPv6ExtHdrHopByHop(options=[RouterAlert()])/
    // IPv6ExtHdrFragment()/UDP()/b"frag0", emitted with scapy 2.5.
    const HBH_FRAG_UDP: [u8; 69] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x1d, 0x00, 0x01, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x2c, 0x00, 0x05, 0x02, 0x00, 0x00, 0x01, 0x00, //
        0x11, 0x00, 0x00, 0x01, 0xab, 0xcd, 0xef, 0x01, 0x03, 0xe8, 0x07, 0xd0, 0x00, 0x0d, 0xfe, 0xbc, //
        0x66, 0x72, 0x61, 0x67, 0x30,
    ];

    // Destination Options, then a type-0 Routing header with one address,
    // then TCP: IPv6()/IPv6ExtHdrDestOpt()/IPv6ExtHdrRouting(addresses=[..])/
    // TCP(), emitted with scapy 2.5.
    const DSTOPT_ROUTE_TCP: [u8; 92] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x34, 0x3c, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x2b, 0x00, 0x01, 0x04, 0x00, 0x00, 0x00, 0x00, //
        0x06, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x50, 0x02, 0x20, 0x00, 0x34, 0x6a, 0x00, 0x00,
    ];

    #[test]
    fn parses_captured_fixed_header() {
        let packet = Ipv6Packet::new_checked(&ECHO_REQUEST[..]).unwrap();
        let repr = Ipv6Repr::parse(&packet).unwrap();
        assert_eq!(repr.src_addr, "2001:db8::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(repr.dst_addr, "2001:db8::2".parse::<Ipv6Addr>().unwrap());
        assert_eq!(repr.next_header, IpProtocol::Icmpv6);
        assert_eq!(repr.payload_len, 16);
        assert_eq!(repr.hop_limit, 64);
        assert_eq!((repr.dscp, repr.ecn, repr.flow_label), (46, Ecn::NotEct, 0x12345));
        assert_eq!(packet.traffic_class(), 0xb8);
        assert_eq!(
            packet.upper_layer().unwrap(),
            UpperLayer { protocol: IpProtocol::Icmpv6, offset: 0, fragment: None }
        );
        let mut buf = [0u8; HEADER_LEN];
        repr.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, ECHO_REQUEST[..HEADER_LEN]);
    }

    #[test]
    fn walks_hop_by_hop_and_fragment() {
        let packet = Ipv6Packet::new_checked(&HBH_FRAG_UDP[..]).unwrap();
        assert_eq!(packet.next_header(), IpProtocol::HopByHop);
        let upper = packet.upper_layer().unwrap();
        assert_eq!(upper.protocol, IpProtocol::Udp);
        assert_eq!(upper.offset, 16);
        assert_eq!(upper.fragment, Some(Ipv6Fragment { offset: 0, more_frags: true, ident: 0xabcd_ef01 }));
        assert!(upper.fragment.unwrap().is_first());
        assert_eq!(&packet.payload()[upper.offset..upper.offset + 4], &[0x03, 0xe8, 0x07, 0xd0]);
    }

    #[test]
    fn walks_destination_options_and_routing() {
        let packet = Ipv6Packet::new_checked(&DSTOPT_ROUTE_TCP[..]).unwrap();
        let upper = packet.upper_layer().unwrap();
        assert_eq!(upper, UpperLayer { protocol: IpProtocol::Tcp, offset: 8 + 24, fragment: None });
    }

    #[test]
    fn walks_authentication_header_and_no_next_header() {
        // AH with a 12-byte ICV: payload length field 4 => (4 + 2) * 4 = 24.
        let mut payload = vec![0u8; 24];
        payload[0] = 59;
        payload[1] = 4;
        let upper = walk_extension_headers(IpProtocol::Unknown(AUTHENTICATION_HEADER), &payload).unwrap();
        assert_eq!(upper, UpperLayer { protocol: IpProtocol::Ipv6NoNxt, offset: 24, fragment: None });
    }

    #[test]
    fn later_fragment_reports_offset() {
        let payload = [17, 0, 0x05, 0xa8, 0, 0, 0, 9, 0xde, 0xad];
        let upper = walk_extension_headers(IpProtocol::Ipv6Frag, &payload).unwrap();
        assert_eq!(upper.fragment, Some(Ipv6Fragment { offset: 1448, more_frags: false, ident: 9 }));
        assert!(!upper.fragment.unwrap().is_first());
        assert_eq!(upper.protocol, IpProtocol::Udp);
    }

    #[test]
    fn bad_chains() {
        // Hop-by-Hop after another header.
        let payload = [0u8, 0, 0, 0, 0, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(walk_extension_headers(IpProtocol::Ipv6Opts, &payload).unwrap_err(), Error::Malformed);
        // A header length running past the payload.
        let payload = [17u8, 1, 0, 0, 0, 0, 0, 0];
        assert_eq!(walk_extension_headers(IpProtocol::Ipv6Opts, &payload).unwrap_err(), Error::Truncated);
        // Not even the next-header/length octets.
        assert_eq!(walk_extension_headers(IpProtocol::Ipv6Route, &[43]).unwrap_err(), Error::Truncated);
        assert_eq!(walk_extension_headers(IpProtocol::Ipv6Frag, &[17, 0, 0, 0]).unwrap_err(), Error::Truncated);
        // Two fragment headers.
        let payload = [44u8, 0, 0, 0, 0, 0, 0, 1, 17, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!(walk_extension_headers(IpProtocol::Ipv6Frag, &payload).unwrap_err(), Error::Malformed);
        // An endless chain of Destination Options headers.
        let payload: Vec<u8> = [60u8, 0, 0, 0, 0, 0, 0, 0].repeat(64);
        assert_eq!(walk_extension_headers(IpProtocol::Ipv6Opts, &payload).unwrap_err(), Error::Unsupported);
        // Exactly the most allowed.
        let mut payload: Vec<u8> = [60u8, 0, 0, 0, 0, 0, 0, 0].repeat(MAX_EXTENSION_HEADERS);
        payload[(MAX_EXTENSION_HEADERS - 1) * 8] = 17;
        let upper = walk_extension_headers(IpProtocol::Ipv6Opts, &payload).unwrap();
        assert_eq!((upper.protocol, upper.offset), (IpProtocol::Udp, MAX_EXTENSION_HEADERS * 8));
    }

    #[test]
    fn truncated_and_wrong_version() {
        assert_eq!(Ipv6Packet::new_checked(&ECHO_REQUEST[..39]).unwrap_err(), Error::Truncated);
        assert_eq!(Ipv6Packet::new_checked(&ECHO_REQUEST[..55]).unwrap_err(), Error::Truncated);
        let mut version4 = ECHO_REQUEST;
        version4[0] = 0x4b;
        let packet = Ipv6Packet::new_checked(&version4[..]).unwrap();
        assert_eq!(Ipv6Repr::parse(&packet).unwrap_err(), Error::Unsupported);
        // Padding after the payload is ignored.
        let mut padded = ECHO_REQUEST.to_vec();
        padded.extend_from_slice(&[0; 8]);
        assert_eq!(Ipv6Packet::new_checked(&padded[..]).unwrap().payload().len(), 16);
    }

    #[test]
    fn hop_limit_and_ecn() {
        let mut buf = ECHO_REQUEST;
        let mut packet = Ipv6Packet::new_unchecked(&mut buf[..]);
        assert_eq!(packet.decrement_hop_limit(), Some(63));
        packet.set_ecn(Ecn::Ce);
        assert_eq!((packet.dscp(), packet.ecn(), packet.flow_label()), (46, Ecn::Ce, 0x12345));
        packet.set_hop_limit(1);
        assert_eq!(packet.decrement_hop_limit(), None);
        assert_eq!(packet.hop_limit(), 1);
    }

    fn any_repr() -> impl Strategy<Value = Ipv6Repr> {
        (
            any::<[u8; 16]>(),
            any::<[u8; 16]>(),
            any_protocol(),
            0usize..2000,
            any::<u8>(),
            0u8..64,
            any_ecn(),
            0u32..0x10_0000,
        )
            .prop_map(|(src, dst, next_header, payload_len, hop_limit, dscp, ecn, flow_label)| Ipv6Repr {
                src_addr: src.into(),
                dst_addr: dst.into(),
                next_header,
                payload_len,
                hop_limit,
                dscp,
                ecn,
                flow_label,
            })
    }

    proptest! {
        #[test]
        fn round_trip(repr in any_repr()) {
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]));
            let packet = Ipv6Packet::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(Ipv6Repr::parse(&packet).unwrap(), repr);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..120)) {
            if let Ok(packet) = Ipv6Packet::new_checked(&data[..]) {
                let _ = Ipv6Repr::parse(&packet);
                let _ = packet.upper_layer();
            }
        }

        #[test]
        fn walk_never_panics_and_stays_in_bounds(first in any::<u8>(), payload in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(upper) = walk_extension_headers(IpProtocol::from(first), &payload) {
                prop_assert!(upper.offset <= payload.len());
            }
        }

        #[test]
        fn walk_finds_chains_of_extension_headers(kinds in proptest::collection::vec(prop_oneof![Just(43u8), Just(60u8), Just(51u8)], 0..MAX_EXTENSION_HEADERS), lengths in proptest::collection::vec(0u8..4, MAX_EXTENSION_HEADERS)) {
            // Builds a chain of the given kinds ending in UDP and checks the
            // walk lands on it.
            let mut payload = Vec::new();
            for (i, kind) in kinds.iter().enumerate() {
                let next = kinds.get(i + 1).copied().unwrap_or(17);
                let (len_field, len) = if *kind == 51 {
                    (lengths[i] * 2 + 2, (usize::from(lengths[i]) * 2 + 4) * 4)
                } else {
                    (lengths[i], (usize::from(lengths[i]) + 1) * 8)
                };
                let start = payload.len();
                payload.resize(start + len, 0);
                payload[start] = next;
                payload[start + 1] = len_field;
            }
            let first = kinds.first().copied().unwrap_or(17);
            let expected_offset = payload.len();
            payload.extend_from_slice(&[0; 8]);
            let upper = walk_extension_headers(IpProtocol::from(first), &payload).unwrap();
            prop_assert_eq!(upper, UpperLayer { protocol: IpProtocol::Udp, offset: expected_offset, fragment: None });
        }
    }
}
