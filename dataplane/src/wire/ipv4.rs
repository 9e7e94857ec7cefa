//! IPv4 headers (RFC 791), with the DSCP/ECN split of the old TOS octet
//! (RFC 2474, RFC 3168) and the incremental checksum update routers use when
//! they decrement the TTL (RFC 1624, RFC 1812 section 5.3.1).

use std::net::Ipv4Addr;

use super::{Error, Field, Result, checksum, read_u16, write_u16};

/// The protocol numbers of the IPv4 `protocol` field and the IPv6 `next
/// header` field (IANA "Assigned Internet Protocol Numbers"), which share one
/// registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpProtocol {
    /// IPv6 Hop-by-Hop Options extension header (RFC 8200 section 4.3).
    HopByHop,
    Icmp,
    Tcp,
    Udp,
    /// IPv6 Routing extension header (RFC 8200 section 4.4).
    Ipv6Route,
    /// IPv6 Fragment extension header (RFC 8200 section 4.5).
    Ipv6Frag,
    Icmpv6,
    /// No next header (RFC 8200 section 4.7).
    Ipv6NoNxt,
    /// IPv6 Destination Options extension header (RFC 8200 section 4.6).
    Ipv6Opts,
    Unknown(u8),
}

impl From<u8> for IpProtocol {
    #[inline]
    fn from(value: u8) -> Self {
        match value {
            0 => IpProtocol::HopByHop,
            1 => IpProtocol::Icmp,
            6 => IpProtocol::Tcp,
            17 => IpProtocol::Udp,
            43 => IpProtocol::Ipv6Route,
            44 => IpProtocol::Ipv6Frag,
            58 => IpProtocol::Icmpv6,
            59 => IpProtocol::Ipv6NoNxt,
            60 => IpProtocol::Ipv6Opts,
            other => IpProtocol::Unknown(other),
        }
    }
}

impl From<IpProtocol> for u8 {
    fn from(value: IpProtocol) -> Self {
        match value {
            IpProtocol::HopByHop => 0,
            IpProtocol::Icmp => 1,
            IpProtocol::Tcp => 6,
            IpProtocol::Udp => 17,
            IpProtocol::Ipv6Route => 43,
            IpProtocol::Ipv6Frag => 44,
            IpProtocol::Icmpv6 => 58,
            IpProtocol::Ipv6NoNxt => 59,
            IpProtocol::Ipv6Opts => 60,
            IpProtocol::Unknown(other) => other,
        }
    }
}

/// The two ECN bits of the IPv4 TOS octet / IPv6 traffic class (RFC 3168
/// section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Ecn {
    /// 00: the transport is not ECN-capable; congestion means a drop.
    #[default]
    NotEct,
    /// 10: ECN-capable transport, ECT(0).
    Ect0,
    /// 01: ECN-capable transport, ECT(1) (L4S, RFC 9331).
    Ect1,
    /// 11: congestion experienced, set by a queue instead of dropping.
    Ce,
}

impl Ecn {
    /// Decodes the two low bits of `bits`.
    pub const fn from_bits(bits: u8) -> Ecn {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b10 => Ecn::Ect0,
            0b01 => Ecn::Ect1,
            _ => Ecn::Ce,
        }
    }

    pub const fn to_bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect0 => 0b10,
            Ecn::Ect1 => 0b01,
            Ecn::Ce => 0b11,
        }
    }

    /// Whether a queue may mark this packet CE instead of dropping it.
    pub const fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
}

mod field {
    use super::Field;
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const TOTAL_LEN: Field = 2..4;
    pub const IDENT: Field = 4..6;
    pub const FLAGS_FRAG_OFFSET: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    /// TTL and protocol form one 16-bit word of the checksummed header.
    pub const TTL_PROTOCOL: Field = 8..10;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
}

/// Length of a header without options.
pub const HEADER_LEN: usize = field::DST_ADDR.end;

const FLAG_DONT_FRAG: u16 = 0x4000;
const FLAG_MORE_FRAGS: u16 = 0x2000;
const FRAG_OFFSET_MASK: u16 = 0x1fff;

/// A read/write view of an IPv4 packet.
///
/// [`Ipv4Packet::new_checked`] guarantees the buffer holds the whole header
/// (options included) and `total_len` bytes, so every accessor after it is in
/// bounds. Bytes after `total_len` (Ethernet padding) are ignored.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Ipv4Packet<T> {
        Ipv4Packet { buffer }
    }

    #[inline]
    pub fn new_checked(buffer: T) -> Result<Ipv4Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks the fixed header, the IHL and the total length against the
    /// buffer: `Truncated` when the buffer is too short for what the header
    /// announces, `Malformed` when the header contradicts itself.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if len < header_len {
            return Err(Error::Truncated);
        }
        let total_len = usize::from(self.total_len());
        if total_len < header_len {
            return Err(Error::Malformed);
        }
        if len < total_len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL × 4), options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// Differentiated services code point (RFC 2474), 0..=63.
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] >> 2
    }

    #[inline]
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.buffer.as_ref()[field::DSCP_ECN])
    }

    /// Length of the whole packet, header included.
    #[inline]
    pub fn total_len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::TOTAL_LEN)
    }

    pub fn ident(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::IDENT)
    }

    pub fn dont_frag(&self) -> bool {
        read_u16(self.buffer.as_ref(), field::FLAGS_FRAG_OFFSET) & FLAG_DONT_FRAG != 0
    }

    pub fn more_frags(&self) -> bool {
        read_u16(self.buffer.as_ref(), field::FLAGS_FRAG_OFFSET) & FLAG_MORE_FRAGS != 0
    }

    /// Fragment offset in bytes (the field counts 8-byte units).
    pub fn frag_offset(&self) -> u16 {
        (read_u16(self.buffer.as_ref(), field::FLAGS_FRAG_OFFSET) & FRAG_OFFSET_MASK) << 3
    }

    /// Whether this packet is a fragment (first, middle or last) rather than a
    /// whole datagram: only the first fragment carries the transport header.
    #[inline]
    pub fn is_fragment(&self) -> bool {
        read_u16(self.buffer.as_ref(), field::FLAGS_FRAG_OFFSET) & (FLAG_MORE_FRAGS | FRAG_OFFSET_MASK) != 0
    }

    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    #[inline]
    pub fn protocol(&self) -> IpProtocol {
        IpProtocol::from(self.buffer.as_ref()[field::PROTOCOL])
    }

    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    #[inline]
    pub fn src_addr(&self) -> Ipv4Addr {
        let data = &self.buffer.as_ref()[field::SRC_ADDR];
        Ipv4Addr::new(data[0], data[1], data[2], data[3])
    }

    #[inline]
    pub fn dst_addr(&self) -> Ipv4Addr {
        let data = &self.buffer.as_ref()[field::DST_ADDR];
        Ipv4Addr::new(data[0], data[1], data[2], data[3])
    }

    /// Whether the header checksum (RFC 791 section 3.1) is correct.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::checksum(&self.buffer.as_ref()[..self.header_len()]) == 0
    }

    /// The options between the fixed header and the payload (unparsed: a
    /// switch forwards them untouched).
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Ipv4Packet<&'a T> {
    /// The payload: from the end of the options to `total_len`, so that
    /// Ethernet padding after a short packet is not part of it.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    pub fn set_version(&mut self, value: u8) {
        let byte = &mut self.buffer.as_mut()[field::VER_IHL];
        *byte = (*byte & 0x0f) | (value << 4);
    }

    /// Sets the IHL from a length in bytes (a multiple of 4, 20..=60).
    pub fn set_header_len(&mut self, value: usize) {
        let byte = &mut self.buffer.as_mut()[field::VER_IHL];
        *byte = (*byte & 0xf0) | ((value / 4) as u8 & 0x0f);
    }

    pub fn set_dscp(&mut self, value: u8) {
        let byte = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *byte = (*byte & 0b11) | (value << 2);
    }

    pub fn set_ecn(&mut self, value: Ecn) {
        let byte = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *byte = (*byte & !0b11) | value.to_bits();
    }

    pub fn set_total_len(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::TOTAL_LEN, value);
    }

    pub fn set_ident(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::IDENT, value);
    }

    pub fn set_dont_frag(&mut self, value: bool) {
        let word = read_u16(self.buffer.as_ref(), field::FLAGS_FRAG_OFFSET) & !FLAG_DONT_FRAG;
        write_u16(self.buffer.as_mut(), field::FLAGS_FRAG_OFFSET, word | if value { FLAG_DONT_FRAG } else { 0 });
    }

    pub fn set_more_frags(&mut self, value: bool) {
        let word = read_u16(self.buffer.as_ref(), field::FLAGS_FRAG_OFFSET) & !FLAG_MORE_FRAGS;
        write_u16(self.buffer.as_mut(), field::FLAGS_FRAG_OFFSET, word | if value { FLAG_MORE_FRAGS } else { 0 });
    }

    /// Sets the fragment offset from a byte offset (rounded down to 8 bytes).
    pub fn set_frag_offset(&mut self, value: u16) {
        let word = read_u16(self.buffer.as_ref(), field::FLAGS_FRAG_OFFSET) & !FRAG_OFFSET_MASK;
        write_u16(self.buffer.as_mut(), field::FLAGS_FRAG_OFFSET, word | (value >> 3));
    }

    pub fn set_ttl(&mut self, value: u8) {
        self.buffer.as_mut()[field::TTL] = value;
    }

    pub fn set_protocol(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = value.into();
    }

    pub fn set_checksum(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::CHECKSUM, value);
    }

    pub fn set_src_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&value.octets());
    }

    pub fn set_dst_addr(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&value.octets());
    }

    /// Computes and stores the header checksum over the header and options.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let value = checksum::checksum(&self.buffer.as_ref()[..self.header_len()]);
        self.set_checksum(value);
    }

    /// The router's TTL step (RFC 1812 section 5.3.1): when the TTL is above
    /// 1, decrements it, patches the checksum incrementally (RFC 1624) and
    /// returns the new TTL. When it is 0 or 1 the packet must not be
    /// forwarded: returns `None` and leaves the header untouched, ready to be
    /// quoted in an ICMP Time Exceeded.
    #[inline]
    pub fn decrement_ttl_incremental(&mut self) -> Option<u8> {
        let ttl = self.ttl();
        if ttl <= 1 {
            return None;
        }
        let old = read_u16(self.buffer.as_ref(), field::TTL_PROTOCOL);
        let new = old - 0x0100;
        write_u16(self.buffer.as_mut(), field::TTL_PROTOCOL, new);
        let value = checksum::update(self.checksum(), old, new);
        self.set_checksum(value);
        Some(ttl - 1)
    }

    /// Rewrites the ECN field and patches the checksum incrementally: what a
    /// queue does when it marks an ECT packet CE.
    pub fn set_ecn_incremental(&mut self, value: Ecn) {
        let data = self.buffer.as_ref();
        let old = u16::from_be_bytes([data[field::VER_IHL], data[field::DSCP_ECN]]);
        self.set_ecn(value);
        let data = self.buffer.as_ref();
        let new = u16::from_be_bytes([data[field::VER_IHL], data[field::DSCP_ECN]]);
        let value = checksum::update(self.checksum(), old, new);
        self.set_checksum(value);
    }

    /// The payload up to `total_len` (see [`Ipv4Packet::payload`]).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = self.header_len()..usize::from(self.total_len());
        &mut self.buffer.as_mut()[range]
    }
}

/// The owned form of an IPv4 header. Options are not kept: a parsed packet's
/// options are skipped, and `emit` writes a 20-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    pub src_addr: Ipv4Addr,
    pub dst_addr: Ipv4Addr,
    pub protocol: IpProtocol,
    /// Length of the payload after the header (and options).
    pub payload_len: usize,
    pub ttl: u8,
    pub dscp: u8,
    pub ecn: Ecn,
    pub ident: u16,
    pub dont_frag: bool,
    pub more_frags: bool,
    /// Fragment offset in bytes, a multiple of 8.
    pub frag_offset: u16,
}

impl Ipv4Repr {
    /// Reads and validates a header: version 4 (else `Unsupported`), lengths
    /// (see [`Ipv4Packet::check_len`]) and checksum (else `BadChecksum`).
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv4Packet<T>) -> Result<Ipv4Repr> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::Unsupported);
        }
        if !packet.verify_checksum() {
            return Err(Error::BadChecksum);
        }
        Ok(Ipv4Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - packet.header_len(),
            ttl: packet.ttl(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            more_frags: packet.more_frags(),
            frag_offset: packet.frag_offset(),
        })
    }

    /// Length of the header `emit` writes.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of the whole packet: header and payload.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Writes the header (no options) with its checksum into the start of
    /// `packet`, which must hold at least [`HEADER_LEN`] bytes. The payload
    /// is the caller's to write; the header checksum does not cover it.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv4Packet<T>) {
        packet.set_version(4);
        packet.set_header_len(HEADER_LEN);
        packet.set_dscp(self.dscp);
        packet.set_ecn(self.ecn);
        packet.set_total_len(self.buffer_len() as u16);
        packet.set_ident(self.ident);
        write_u16(packet.buffer.as_mut(), field::FLAGS_FRAG_OFFSET, 0);
        packet.set_dont_frag(self.dont_frag);
        packet.set_more_frags(self.more_frags);
        packet.set_frag_offset(self.frag_offset);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

/// Option type octets (RFC 791 section 3.1): the copied flag, and the two
/// single-octet options.
const OPTION_COPIED: u8 = 0x80;
const OPTION_END: u8 = 0;
const OPTION_NOP: u8 = 1;

/// Writes into `into` the options of a fragment after the first: those of
/// `options` whose copied flag is set (RFC 791 section 3.2, "copied"), padded
/// with End of Option List to a multiple of 4 octets. Returns their length;
/// an option whose length runs past the header is malformed.
pub fn copied_options(options: &[u8], into: &mut [u8; 40]) -> Result<usize> {
    let mut read = 0;
    let mut written = 0;
    while let Some(&kind) = options.get(read) {
        let len = match kind {
            OPTION_END => break,
            OPTION_NOP => 1,
            _ => usize::from(*options.get(read + 1).ok_or(Error::Malformed)?),
        };
        if len < 1 || (kind != OPTION_NOP && len < 2) || read + len > options.len() {
            return Err(Error::Malformed);
        }
        if kind & OPTION_COPIED != 0 {
            into[written..written + len].copy_from_slice(&options[read..read + len]);
            written += len;
        }
        read += len;
    }
    let padded = written.next_multiple_of(4);
    into[written..padded].fill(OPTION_END);
    Ok(padded)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    // ICMP echo request 192.168.1.10 -> 192.168.1.1, 56 bytes of data, DF set,
    // TTL 64, the IPv4 part of a Linux `ping` frame. Bytes emitted with scapy
    // 2.5 (IP(id=0x1c46, flags="DF", ttl=64)/ICMP(id=0x1234, seq=1)/payload)
    // and pasted here.
    pub(crate) const PING_REQUEST: [u8; 84] = [
        0x45, 0x00, 0x00, 0x54, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x01, 0x9b, 0x07, 0xc0, 0xa8, 0x01, 0x0a, //
        0xc0, 0xa8, 0x01, 0x01, 0x08, 0x00, 0xee, 0xb7, 0x12, 0x34, 0x00, 0x01, 0x00, 0x01, 0x02, 0x03, //
        0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, //
        0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x21, 0x22, 0x23, //
        0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f, 0x30, 0x31, 0x32, 0x33, //
        0x34, 0x35, 0x36, 0x37,
    ];

    #[test]
    fn parses_captured_ping() {
        let packet = Ipv4Packet::new_checked(&PING_REQUEST[..]).unwrap();
        let repr = Ipv4Repr::parse(&packet).unwrap();
        assert_eq!(repr.src_addr, Ipv4Addr::new(192, 168, 1, 10));
        assert_eq!(repr.dst_addr, Ipv4Addr::new(192, 168, 1, 1));
        assert_eq!(repr.protocol, IpProtocol::Icmp);
        assert_eq!(repr.payload_len, 64);
        assert_eq!(repr.ttl, 64);
        assert_eq!(repr.ident, 0x1c46);
        assert!(repr.dont_frag);
        assert!(!repr.more_frags);
        assert_eq!(repr.frag_offset, 0);
        assert_eq!((repr.dscp, repr.ecn), (0, Ecn::NotEct));
        assert_eq!(packet.checksum(), 0x9b07);
        assert_eq!(packet.payload()[0], 8);
        assert!(!packet.is_fragment());
    }

    #[test]
    fn emit_reproduces_captured_header() {
        let repr = Ipv4Repr::parse(&Ipv4Packet::new_checked(&PING_REQUEST[..]).unwrap()).unwrap();
        let mut buf = [0xa5u8; HEADER_LEN];
        repr.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, PING_REQUEST[..HEADER_LEN]);
    }

    #[test]
    fn ethernet_padding_is_not_payload() {
        // A 28-byte packet padded to the 46-byte Ethernet minimum.
        let repr = Ipv4Repr {
            src_addr: Ipv4Addr::new(10, 0, 0, 1),
            dst_addr: Ipv4Addr::new(10, 0, 0, 2),
            protocol: IpProtocol::Udp,
            payload_len: 8,
            ttl: 1,
            dscp: 0,
            ecn: Ecn::NotEct,
            ident: 7,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
        };
        let mut buf = [0u8; 46];
        repr.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
        let packet = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(packet.payload().len(), 8);
        assert_eq!(Ipv4Repr::parse(&packet).unwrap(), repr);
    }

    #[test]
    fn options_are_skipped() {
        // IHL 6: a Router Alert option (RFC 2113) before an 8-byte payload.
        let mut buf = [0u8; 32];
        let mut packet = Ipv4Packet::new_unchecked(&mut buf[..]);
        packet.set_version(4);
        packet.set_header_len(24);
        packet.set_total_len(32);
        packet.set_ttl(1);
        packet.set_protocol(IpProtocol::Unknown(2));
        packet.set_src_addr(Ipv4Addr::new(10, 1, 1, 1));
        packet.set_dst_addr(Ipv4Addr::new(224, 0, 0, 22));
        buf[20..24].copy_from_slice(&[0x94, 0x04, 0x00, 0x00]);
        buf[24..32].copy_from_slice(b"payload!");
        Ipv4Packet::new_unchecked(&mut buf[..]).fill_checksum();
        let packet = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(packet.options(), &[0x94, 0x04, 0x00, 0x00]);
        assert_eq!(packet.payload(), b"payload!");
        let repr = Ipv4Repr::parse(&packet).unwrap();
        assert_eq!(repr.payload_len, 8);
        assert_eq!(repr.protocol, IpProtocol::Unknown(2));
    }

    #[test]
    fn bad_lengths() {
        assert_eq!(Ipv4Packet::new_checked(&PING_REQUEST[..19]).unwrap_err(), Error::Truncated);
        // total_len says 84; the buffer holds 83.
        assert_eq!(Ipv4Packet::new_checked(&PING_REQUEST[..83]).unwrap_err(), Error::Truncated);
        let mut ihl_too_small = PING_REQUEST;
        ihl_too_small[0] = 0x44;
        assert_eq!(Ipv4Packet::new_checked(&ihl_too_small[..]).unwrap_err(), Error::Malformed);
        let mut ihl_beyond_buffer = PING_REQUEST;
        ihl_beyond_buffer[0] = 0x4f;
        ihl_beyond_buffer[2..4].copy_from_slice(&40u16.to_be_bytes());
        assert_eq!(Ipv4Packet::new_checked(&ihl_beyond_buffer[..40]).unwrap_err(), Error::Truncated);
        assert_eq!(Ipv4Packet::new_checked(&ihl_beyond_buffer[..]).unwrap_err(), Error::Malformed);
        let mut total_below_header = PING_REQUEST;
        total_below_header[2..4].copy_from_slice(&19u16.to_be_bytes());
        assert_eq!(Ipv4Packet::new_checked(&total_below_header[..]).unwrap_err(), Error::Malformed);
    }

    #[test]
    fn bad_checksum_and_version() {
        let mut corrupted = PING_REQUEST;
        corrupted[8] = 63;
        let packet = Ipv4Packet::new_checked(&corrupted[..]).unwrap();
        assert!(!packet.verify_checksum());
        assert_eq!(Ipv4Repr::parse(&packet).unwrap_err(), Error::BadChecksum);
        let mut version6 = PING_REQUEST;
        version6[0] = 0x65;
        assert_eq!(Ipv4Repr::parse(&Ipv4Packet::new_checked(&version6[..]).unwrap()).unwrap_err(), Error::Unsupported);
    }

    #[test]
    fn ttl_decrement_keeps_checksum_valid() {
        let mut buf = PING_REQUEST;
        let mut packet = Ipv4Packet::new_unchecked(&mut buf[..]);
        assert_eq!(packet.decrement_ttl_incremental(), Some(63));
        assert_eq!(packet.ttl(), 63);
        assert!(packet.verify_checksum());
        // Same result as recomputing from scratch.
        let incremental = packet.checksum();
        packet.fill_checksum();
        assert_eq!(packet.checksum(), incremental);

        packet.set_ttl(1);
        packet.fill_checksum();
        let before = buf;
        let mut packet = Ipv4Packet::new_unchecked(&mut buf[..]);
        assert_eq!(packet.decrement_ttl_incremental(), None);
        assert_eq!(buf, before);
    }

    #[test]
    fn ecn_and_dscp_fields() {
        let mut buf = PING_REQUEST;
        let mut packet = Ipv4Packet::new_unchecked(&mut buf[..]);
        packet.set_dscp(46); // EF
        packet.set_ecn(Ecn::Ect0);
        packet.fill_checksum();
        assert_eq!(packet.buffer[1], 0xba);
        assert_eq!((packet.dscp(), packet.ecn()), (46, Ecn::Ect0));
        packet.set_ecn_incremental(Ecn::Ce);
        assert_eq!((packet.dscp(), packet.ecn()), (46, Ecn::Ce));
        assert!(packet.verify_checksum());
        for bits in 0..4 {
            assert_eq!(Ecn::from_bits(bits).to_bits(), bits);
        }
        assert_eq!(Ecn::from_bits(0b10), Ecn::Ect0);
        assert_eq!(Ecn::from_bits(0b01), Ecn::Ect1);
    }

    #[test]
    fn fragment_fields() {
        let mut buf = PING_REQUEST;
        let mut packet = Ipv4Packet::new_unchecked(&mut buf[..]);
        packet.set_dont_frag(false);
        packet.set_more_frags(true);
        packet.set_frag_offset(1480);
        assert_eq!(&packet.buffer[6..8], &[0x20, 0xb9]);
        assert!(packet.is_fragment());
        assert_eq!(packet.frag_offset(), 1480);
    }

    pub(crate) fn any_protocol() -> impl Strategy<Value = IpProtocol> {
        any::<u8>().prop_map(IpProtocol::from)
    }

    pub(crate) fn any_ecn() -> impl Strategy<Value = Ecn> {
        (0u8..4).prop_map(Ecn::from_bits)
    }

    fn any_repr() -> impl Strategy<Value = Ipv4Repr> {
        (
            (any::<[u8; 4]>(), any::<[u8; 4]>(), any_protocol(), 0usize..1480, any::<u8>()),
            (0u8..64, any_ecn(), any::<u16>(), any::<bool>(), any::<bool>(), 0u16..8192),
        )
            .prop_map(
                |((src, dst, protocol, payload_len, ttl), (dscp, ecn, ident, dont_frag, more_frags, frag))| Ipv4Repr {
                    src_addr: src.into(),
                    dst_addr: dst.into(),
                    protocol,
                    payload_len,
                    ttl,
                    dscp,
                    ecn,
                    ident,
                    dont_frag,
                    more_frags,
                    frag_offset: frag << 3,
                },
            )
    }

    proptest! {
        #[test]
        fn round_trip(repr in any_repr()) {
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
            let packet = Ipv4Packet::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(Ipv4Repr::parse(&packet).unwrap(), repr);
            prop_assert_eq!(packet.payload().len(), repr.payload_len);
        }

        #[test]
        fn protocol_numbers_round_trip(number in any::<u8>()) {
            prop_assert_eq!(u8::from(IpProtocol::from(number)), number);
        }

        #[test]
        fn incremental_ttl_matches_full_checksum(repr in any_repr()) {
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
            let mut packet = Ipv4Packet::new_unchecked(&mut buf[..]);
            if packet.decrement_ttl_incremental().is_some() {
                prop_assert!(packet.verify_checksum());
                prop_assert_eq!(packet.ttl(), repr.ttl - 1);
            }
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok(packet) = Ipv4Packet::new_checked(&data[..]) {
                let _ = Ipv4Repr::parse(&packet);
                let _ = (packet.payload(), packet.options(), packet.verify_checksum());
            }
        }
    }

    #[test]
    fn fragments_after_the_first_keep_only_copied_options() {
        // NOP, Record Route (7, not copied, 7 octets), Security (130, copied,
        // 11 octets), End.
        let options = [1, 7, 7, 4, 0, 0, 0, 0, 130, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let mut into = [0xffu8; 40];
        assert_eq!(copied_options(&options, &mut into), Ok(12));
        assert_eq!(&into[..12], &[130, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(copied_options(&[], &mut into), Ok(0));
        assert_eq!(copied_options(&[130, 30, 0, 0], &mut into), Err(Error::Malformed), "runs past the header");
        assert_eq!(copied_options(&[130, 0, 0, 0], &mut into), Err(Error::Malformed), "a length below 2");
    }
}
