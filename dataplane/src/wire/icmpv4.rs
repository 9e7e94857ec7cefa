//! ICMP for IPv4 (RFC 792): echo request and reply, the errors a router
//! sends (destination unreachable, time exceeded) with the packet that caused
//! them, and redirects.

use std::net::Ipv4Addr;

use super::{Error, Field, Rest, Result, checksum, ipv4, read_u16, write_u16};

/// The message types this implementation reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv4Message {
    EchoReply,
    DstUnreachable,
    Redirect,
    EchoRequest,
    TimeExceeded,
    Unknown(u8),
}

impl From<u8> for Icmpv4Message {
    fn from(value: u8) -> Self {
        match value {
            0 => Icmpv4Message::EchoReply,
            3 => Icmpv4Message::DstUnreachable,
            5 => Icmpv4Message::Redirect,
            8 => Icmpv4Message::EchoRequest,
            11 => Icmpv4Message::TimeExceeded,
            other => Icmpv4Message::Unknown(other),
        }
    }
}

impl From<Icmpv4Message> for u8 {
    fn from(value: Icmpv4Message) -> Self {
        match value {
            Icmpv4Message::EchoReply => 0,
            Icmpv4Message::DstUnreachable => 3,
            Icmpv4Message::Redirect => 5,
            Icmpv4Message::EchoRequest => 8,
            Icmpv4Message::TimeExceeded => 11,
            Icmpv4Message::Unknown(other) => other,
        }
    }
}

/// Codes of Destination Unreachable (RFC 792, RFC 1122 section 3.2.2.1,
/// RFC 1812 section 5.2.7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DstUnreachable {
    NetUnreachable,
    HostUnreachable,
    ProtoUnreachable,
    PortUnreachable,
    /// Fragmentation needed and DF set; carries the next-hop MTU (RFC 1191).
    FragRequired,
    SrcRouteFailed,
    DstNetUnknown,
    DstHostUnknown,
    SrcHostIsolated,
    NetProhibited,
    HostProhibited,
    NetUnreachToS,
    HostUnreachToS,
    CommProhibited,
    HostPrecedenceViolation,
    PrecedenceCutoff,
    Unknown(u8),
}

impl From<u8> for DstUnreachable {
    fn from(value: u8) -> Self {
        use DstUnreachable::*;
        match value {
            0 => NetUnreachable,
            1 => HostUnreachable,
            2 => ProtoUnreachable,
            3 => PortUnreachable,
            4 => FragRequired,
            5 => SrcRouteFailed,
            6 => DstNetUnknown,
            7 => DstHostUnknown,
            8 => SrcHostIsolated,
            9 => NetProhibited,
            10 => HostProhibited,
            11 => NetUnreachToS,
            12 => HostUnreachToS,
            13 => CommProhibited,
            14 => HostPrecedenceViolation,
            15 => PrecedenceCutoff,
            other => Unknown(other),
        }
    }
}

impl From<DstUnreachable> for u8 {
    fn from(value: DstUnreachable) -> Self {
        use DstUnreachable::*;
        match value {
            NetUnreachable => 0,
            HostUnreachable => 1,
            ProtoUnreachable => 2,
            PortUnreachable => 3,
            FragRequired => 4,
            SrcRouteFailed => 5,
            DstNetUnknown => 6,
            DstHostUnknown => 7,
            SrcHostIsolated => 8,
            NetProhibited => 9,
            HostProhibited => 10,
            NetUnreachToS => 11,
            HostUnreachToS => 12,
            CommProhibited => 13,
            HostPrecedenceViolation => 14,
            PrecedenceCutoff => 15,
            Unknown(other) => other,
        }
    }
}

/// Codes of Time Exceeded (RFC 792).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeExceeded {
    /// TTL reached zero in transit: what a router sends.
    TtlExpired,
    /// Fragment reassembly time exceeded.
    FragExpired,
    Unknown(u8),
}

impl From<u8> for TimeExceeded {
    fn from(value: u8) -> Self {
        match value {
            0 => TimeExceeded::TtlExpired,
            1 => TimeExceeded::FragExpired,
            other => TimeExceeded::Unknown(other),
        }
    }
}

impl From<TimeExceeded> for u8 {
    fn from(value: TimeExceeded) -> Self {
        match value {
            TimeExceeded::TtlExpired => 0,
            TimeExceeded::FragExpired => 1,
            TimeExceeded::Unknown(other) => other,
        }
    }
}

mod field {
    use super::{Field, Rest};
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    /// Echo: identifier and sequence number.
    pub const ECHO_IDENT: Field = 4..6;
    pub const ECHO_SEQ_NO: Field = 6..8;
    /// Destination unreachable: unused, then the next-hop MTU (RFC 1191).
    pub const UNUSED: Field = 4..6;
    pub const NEXT_HOP_MTU: Field = 6..8;
    /// Redirect: the better first hop.
    pub const GATEWAY: Field = 4..8;
    pub const DATA: Rest = 8..;
}

pub const HEADER_LEN: usize = field::DATA.start;

/// The most of an invoking packet an error message should quote: RFC 1812
/// section 4.3.2.3 asks for as much as fits in a 576-byte datagram.
pub const MAX_ERROR_QUOTE: usize = 576 - ipv4::HEADER_LEN - HEADER_LEN;

/// The part of `invoking_packet` to quote in an ICMP error (see
/// [`MAX_ERROR_QUOTE`]).
pub fn error_quote(invoking_packet: &[u8]) -> &[u8] {
    &invoking_packet[..invoking_packet.len().min(MAX_ERROR_QUOTE)]
}

/// A read/write view of an ICMPv4 message.
#[derive(Debug, Clone)]
pub struct Icmpv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv4Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Icmpv4Packet<T> {
        Icmpv4Packet { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Icmpv4Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Every message this module handles has an 8-byte header.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN { Err(Error::Truncated) } else { Ok(()) }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn msg_type(&self) -> Icmpv4Message {
        Icmpv4Message::from(self.buffer.as_ref()[field::TYPE])
    }

    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    pub fn echo_ident(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::ECHO_IDENT)
    }

    pub fn echo_seq_no(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::ECHO_SEQ_NO)
    }

    pub fn next_hop_mtu(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::NEXT_HOP_MTU)
    }

    /// Whether the checksum over the whole message (RFC 792) is correct.
    pub fn verify_checksum(&self) -> bool {
        checksum::checksum(self.buffer.as_ref()) == 0
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Icmpv4Packet<&'a T> {
    /// What follows the 8-byte header: echo data, or the invoking packet of
    /// an error.
    pub fn data(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::DATA]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv4Packet<T> {
    pub fn set_msg_type(&mut self, value: Icmpv4Message) {
        self.buffer.as_mut()[field::TYPE] = value.into();
    }

    pub fn set_msg_code(&mut self, value: u8) {
        self.buffer.as_mut()[field::CODE] = value;
    }

    pub fn set_checksum(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::CHECKSUM, value);
    }

    pub fn set_echo_ident(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::ECHO_IDENT, value);
    }

    pub fn set_echo_seq_no(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::ECHO_SEQ_NO, value);
    }

    pub fn set_next_hop_mtu(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::NEXT_HOP_MTU, value);
    }

    /// Computes and stores the checksum over the whole buffer, which must
    /// end where the message ends.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let value = checksum::checksum(self.buffer.as_ref());
        self.set_checksum(value);
    }

    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }
}

/// The owned form of the ICMPv4 messages a switch answers or originates.
/// Data and invoking packets borrow from the parsed buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Icmpv4Repr<'a> {
    EchoRequest {
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    },
    EchoReply {
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    },
    DstUnreachable {
        reason: DstUnreachable,
        /// Meaningful with [`DstUnreachable::FragRequired`]; zero otherwise.
        next_hop_mtu: u16,
        /// The start of the packet that could not be delivered: its IPv4
        /// header and at least 8 bytes after it.
        invoking_packet: &'a [u8],
    },
    TimeExceeded {
        reason: TimeExceeded,
        invoking_packet: &'a [u8],
    },
    /// RFC 792 "Redirect": send to `gateway` instead, for the host (code
    /// 1, the only one a router sends: RFC 1812 5.2.7.2) or network.
    Redirect {
        code: u8,
        gateway: Ipv4Addr,
        invoking_packet: &'a [u8],
    },
}

impl<'a> Icmpv4Repr<'a> {
    /// Reads a message whose buffer ends where the IPv4 payload ends. A bad
    /// checksum is `BadChecksum`; other message types are `Unsupported`; an
    /// echo with a non-zero code is `Malformed`. Error messages must quote
    /// at least an IPv4 header (RFC 792), else `Truncated`.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Icmpv4Packet<&'a T>) -> Result<Icmpv4Repr<'a>> {
        packet.check_len()?;
        if !packet.verify_checksum() {
            return Err(Error::BadChecksum);
        }
        let code = packet.msg_code();
        match packet.msg_type() {
            Icmpv4Message::EchoRequest | Icmpv4Message::EchoReply if code != 0 => Err(Error::Malformed),
            Icmpv4Message::EchoRequest => Ok(Icmpv4Repr::EchoRequest {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data: packet.data(),
            }),
            Icmpv4Message::EchoReply => Ok(Icmpv4Repr::EchoReply {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data: packet.data(),
            }),
            Icmpv4Message::DstUnreachable => Ok(Icmpv4Repr::DstUnreachable {
                reason: DstUnreachable::from(code),
                next_hop_mtu: packet.next_hop_mtu(),
                invoking_packet: invoking_packet(packet.data())?,
            }),
            Icmpv4Message::TimeExceeded => Ok(Icmpv4Repr::TimeExceeded {
                reason: TimeExceeded::from(code),
                invoking_packet: invoking_packet(packet.data())?,
            }),
            Icmpv4Message::Redirect => {
                let gateway = &packet.buffer.as_ref()[field::GATEWAY];
                Ok(Icmpv4Repr::Redirect {
                    code,
                    gateway: Ipv4Addr::new(gateway[0], gateway[1], gateway[2], gateway[3]),
                    invoking_packet: invoking_packet(packet.data())?,
                })
            }
            Icmpv4Message::Unknown(_) => Err(Error::Unsupported),
        }
    }

    /// Length of the whole message, header and data.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
            + match self {
                Icmpv4Repr::EchoRequest { data, .. } | Icmpv4Repr::EchoReply { data, .. } => data.len(),
                Icmpv4Repr::DstUnreachable { invoking_packet, .. }
                | Icmpv4Repr::TimeExceeded { invoking_packet, .. }
                | Icmpv4Repr::Redirect { invoking_packet, .. } => invoking_packet.len(),
            }
    }

    /// Writes the message, data included, and its checksum. `packet` must be
    /// exactly [`Icmpv4Repr::buffer_len`] bytes long, since the checksum
    /// covers the whole buffer.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Icmpv4Packet<T>) {
        let data = match *self {
            Icmpv4Repr::EchoRequest { ident, seq_no, data } | Icmpv4Repr::EchoReply { ident, seq_no, data } => {
                let msg_type = match self {
                    Icmpv4Repr::EchoRequest { .. } => Icmpv4Message::EchoRequest,
                    _ => Icmpv4Message::EchoReply,
                };
                packet.set_msg_type(msg_type);
                packet.set_msg_code(0);
                packet.set_echo_ident(ident);
                packet.set_echo_seq_no(seq_no);
                data
            }
            Icmpv4Repr::DstUnreachable { reason, next_hop_mtu, invoking_packet } => {
                packet.set_msg_type(Icmpv4Message::DstUnreachable);
                packet.set_msg_code(reason.into());
                write_u16(packet.buffer.as_mut(), field::UNUSED, 0);
                packet.set_next_hop_mtu(next_hop_mtu);
                invoking_packet
            }
            Icmpv4Repr::TimeExceeded { reason, invoking_packet } => {
                packet.set_msg_type(Icmpv4Message::TimeExceeded);
                packet.set_msg_code(reason.into());
                write_u16(packet.buffer.as_mut(), field::UNUSED, 0);
                packet.set_next_hop_mtu(0);
                invoking_packet
            }
            Icmpv4Repr::Redirect { code, gateway, invoking_packet } => {
                packet.set_msg_type(Icmpv4Message::Redirect);
                packet.set_msg_code(code);
                packet.buffer.as_mut()[field::GATEWAY].copy_from_slice(&gateway.octets());
                invoking_packet
            }
        };
        packet.data_mut()[..data.len()].copy_from_slice(data);
        packet.fill_checksum();
    }
}

/// The invoking packet of an error must at least hold an IPv4 header.
fn invoking_packet(data: &[u8]) -> Result<&[u8]> {
    if data.len() < ipv4::HEADER_LEN { Err(Error::Truncated) } else { Ok(data) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{IpProtocol, Ipv4Packet, Ipv4Repr, ipv4::tests::PING_REQUEST};
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    // The reply to `ipv4::tests::PING_REQUEST` (192.168.1.1 -> 192.168.1.10,
    // ident 0x1234, seq 1, 56 bytes 00..37): the ICMP part of
    // IP()/ICMP(type=0, id=0x1234, seq=1)/payload emitted with scapy 2.5.
    const PING_REPLY: [u8; 64] = [
        0x00, 0x00, 0xf6, 0xb7, 0x12, 0x34, 0x00, 0x01, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, //
        0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, //
        0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, //
        0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37,
    ];

    // Time Exceeded from router 10.0.0.254 for a traceroute probe (UDP
    // 33434 -> 33435, TTL 1) from 10.0.0.1: the ICMP part of
    // IP()/ICMP(type=11, code=0)/bytes(probe) emitted with scapy 2.5.
    const TTL_EXCEEDED: [u8; 46] = [
        0x0b, 0x00, 0x09, 0x26, 0x00, 0x00, 0x00, 0x00, 0x45, 0x00, 0x00, 0x26, 0x00, 0x01, 0x00, 0x00, //
        0x01, 0x11, 0xa5, 0xc4, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0x82, 0x9a, 0x82, 0x9b, //
        0x00, 0x12, 0xc7, 0x6e, 0x74, 0x72, 0x61, 0x63, 0x65, 0x72, 0x6f, 0x75, 0x74, 0x65,
    ];

    // Fragmentation needed (DF set), next-hop MTU 1400, quoting a UDP
    // datagram: the ICMP part of ICMP(type=3, code=4, nexthopmtu=1400),
    // emitted with scapy 2.5.
    const FRAG_NEEDED: [u8; 37] = [
        0x03, 0x04, 0x0b, 0xa8, 0x00, 0x00, 0x05, 0x78, 0x45, 0x00, 0x00, 0x1d, 0x00, 0x02, 0x00, 0x00, //
        0x40, 0x11, 0x66, 0xc5, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x09, 0x9c, 0x40, 0x27, 0x0f, //
        0x00, 0x09, 0xb0, 0x82, 0x78,
    ];

    #[test]
    fn parses_captured_ping_request_and_builds_its_reply() {
        let ip = Ipv4Packet::new_checked(&PING_REQUEST[..]).unwrap();
        let icmp = Icmpv4Packet::new_checked(ip.payload()).unwrap();
        let request = Icmpv4Repr::parse(&icmp).unwrap();
        let data: Vec<u8> = (0..56).collect();
        assert_eq!(request, Icmpv4Repr::EchoRequest { ident: 0x1234, seq_no: 1, data: &data });

        let Icmpv4Repr::EchoRequest { ident, seq_no, data } = request else { unreachable!() };
        let reply = Icmpv4Repr::EchoReply { ident, seq_no, data };
        let mut buf = vec![0u8; reply.buffer_len()];
        reply.emit(&mut Icmpv4Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, PING_REPLY);
    }

    #[test]
    fn parses_captured_ttl_exceeded() {
        let icmp = Icmpv4Packet::new_checked(&TTL_EXCEEDED[..]).unwrap();
        let repr = Icmpv4Repr::parse(&icmp).unwrap();
        let Icmpv4Repr::TimeExceeded { reason, invoking_packet } = repr else { panic!("{repr:?}") };
        assert_eq!(reason, TimeExceeded::TtlExpired);
        let quoted = Ipv4Repr::parse(&Ipv4Packet::new_checked(invoking_packet).unwrap()).unwrap();
        assert_eq!(quoted.protocol, IpProtocol::Udp);
        assert_eq!(quoted.ttl, 1);
        assert_eq!(quoted.src_addr, Ipv4Addr::new(10, 0, 0, 1));
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut Icmpv4Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, TTL_EXCEEDED);
    }

    #[test]
    fn parses_captured_frag_needed() {
        let repr = Icmpv4Repr::parse(&Icmpv4Packet::new_checked(&FRAG_NEEDED[..]).unwrap()).unwrap();
        let Icmpv4Repr::DstUnreachable { reason, next_hop_mtu, invoking_packet } = repr else { panic!("{repr:?}") };
        assert_eq!((reason, next_hop_mtu, invoking_packet.len()), (DstUnreachable::FragRequired, 1400, 29));
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut Icmpv4Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, FRAG_NEEDED);
    }

    #[test]
    fn bad_checksum_truncation_and_unknown_types() {
        let mut corrupted = PING_REPLY;
        corrupted[10] ^= 0xff;
        let packet = Icmpv4Packet::new_checked(&corrupted[..]).unwrap();
        assert_eq!(Icmpv4Repr::parse(&packet).unwrap_err(), Error::BadChecksum);
        assert_eq!(Icmpv4Packet::new_checked(&PING_REPLY[..7]).unwrap_err(), Error::Truncated);

        // An error quoting less than an IPv4 header.
        let short = Icmpv4Repr::TimeExceeded { reason: TimeExceeded::TtlExpired, invoking_packet: &[0x45; 12] };
        let mut buf = vec![0u8; short.buffer_len()];
        short.emit(&mut Icmpv4Packet::new_unchecked(&mut buf[..]));
        assert_eq!(Icmpv4Repr::parse(&Icmpv4Packet::new_checked(&buf[..]).unwrap()).unwrap_err(), Error::Truncated);

        // A timestamp request (type 13) with a valid checksum.
        let mut timestamp = [13, 0, 0, 0, 0, 1, 0, 1];
        Icmpv4Packet::new_unchecked(&mut timestamp[..]).fill_checksum();
        let packet = Icmpv4Packet::new_checked(&timestamp[..]).unwrap();
        assert_eq!(Icmpv4Repr::parse(&packet).unwrap_err(), Error::Unsupported);

        // An echo request with a non-zero code.
        let mut odd_echo = [8, 1, 0, 0, 0, 1, 0, 1];
        Icmpv4Packet::new_unchecked(&mut odd_echo[..]).fill_checksum();
        let packet = Icmpv4Packet::new_checked(&odd_echo[..]).unwrap();
        assert_eq!(Icmpv4Repr::parse(&packet).unwrap_err(), Error::Malformed);
    }

    #[test]
    fn error_quote_is_bounded() {
        let big = [0u8; 1500];
        assert_eq!(error_quote(&big).len(), 548);
        assert_eq!(error_quote(&big[..100]).len(), 100);
    }

    proptest! {
        #[test]
        fn round_trip(
            data in proptest::collection::vec(any::<u8>(), 20..200),
            kind in 0u8..4,
            a in any::<u16>(),
            b in any::<u16>(),
            code in any::<u8>(),
        ) {
            // Echo data may be any length; errors quote at least an IPv4 header.
            let repr = match kind {
                0 => Icmpv4Repr::EchoRequest { ident: a, seq_no: b, data: &data },
                1 => Icmpv4Repr::EchoReply { ident: a, seq_no: b, data: &data },
                2 => Icmpv4Repr::DstUnreachable { reason: code.into(), next_hop_mtu: a, invoking_packet: &data },
                _ => Icmpv4Repr::TimeExceeded { reason: code.into(), invoking_packet: &data },
            };
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut Icmpv4Packet::new_unchecked(&mut buf[..]));
            let packet = Icmpv4Packet::new_checked(&buf[..]).unwrap();
            prop_assert!(packet.verify_checksum());
            prop_assert_eq!(Icmpv4Repr::parse(&packet).unwrap(), repr);
        }

        #[test]
        fn code_numbers_round_trip(number in any::<u8>()) {
            prop_assert_eq!(u8::from(DstUnreachable::from(number)), number);
            prop_assert_eq!(u8::from(TimeExceeded::from(number)), number);
            prop_assert_eq!(u8::from(Icmpv4Message::from(number)), number);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64), fix_checksum in any::<bool>()) {
            let mut data = data;
            if fix_checksum && data.len() >= HEADER_LEN {
                Icmpv4Packet::new_unchecked(&mut data[..]).fill_checksum();
            }
            if let Ok(packet) = Icmpv4Packet::new_checked(&data[..]) {
                let _ = Icmpv4Repr::parse(&packet);
            }
        }
    }
}
