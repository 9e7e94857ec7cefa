//! UDP datagrams (RFC 768), with the checksum over the IPv4 pseudo-header
//! (optional: zero means "not computed") and the IPv6 one (mandatory, RFC
//! 8200 section 8.1).

use std::net::{Ipv4Addr, Ipv6Addr};

use super::{Error, Field, IpProtocol, Result, checksum, read_u16, write_u16};

mod field {
    use super::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
}

pub const HEADER_LEN: usize = field::CHECKSUM.end;

/// The network-layer addresses a transport checksum covers, through the
/// pseudo-header of the IP version carrying the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PseudoHeader {
    V4 { src_addr: Ipv4Addr, dst_addr: Ipv4Addr },
    V6 { src_addr: Ipv6Addr, dst_addr: Ipv6Addr },
}

impl PseudoHeader {
    /// Partial sum of the pseudo-header for an upper-layer packet of
    /// `length` bytes of `protocol`.
    pub fn sum(&self, protocol: IpProtocol, length: usize) -> u32 {
        match *self {
            PseudoHeader::V4 { src_addr, dst_addr } => {
                checksum::pseudo_header_v4(src_addr, dst_addr, protocol.into(), length as u32)
            }
            PseudoHeader::V6 { src_addr, dst_addr } => {
                checksum::pseudo_header_v6(src_addr, dst_addr, protocol.into(), length as u32)
            }
        }
    }
}

/// A read/write view of a UDP datagram.
///
/// [`UdpPacket::new_checked`] guarantees the buffer holds the header and the
/// `length` the header announces; bytes after it (padding) are ignored.
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    pub const fn new_unchecked(buffer: T) -> UdpPacket<T> {
        UdpPacket { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<UdpPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// `Truncated` if the buffer is shorter than the header or than the
    /// length field; `Malformed` if the length field is below the header size
    /// (this includes the IPv6 jumbogram length 0, RFC 2675, not supported).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let length = usize::from(self.len());
        if length < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if len < length {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn src_port(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::SRC_PORT)
    }

    pub fn dst_port(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// Length of the datagram, header included.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::LENGTH)
    }

    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    fn computed_checksum(&self, pseudo: &PseudoHeader) -> u16 {
        let datagram = &self.buffer.as_ref()[..usize::from(self.len())];
        checksum::finish(pseudo.sum(IpProtocol::Udp, datagram.len()) + checksum::sum(datagram))
    }

    /// Whether the checksum is correct. Over IPv4 a zero checksum means the
    /// sender computed none (RFC 768) and is accepted; over IPv6 it is
    /// mandatory (RFC 8200 section 8.1) and zero is rejected.
    pub fn verify_checksum(&self, pseudo: &PseudoHeader) -> bool {
        if self.checksum() == 0 {
            return matches!(pseudo, PseudoHeader::V4 { .. });
        }
        self.computed_checksum(pseudo) == 0
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> UdpPacket<&'a T> {
    /// The payload up to the length field.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    pub fn set_src_port(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::SRC_PORT, value);
    }

    pub fn set_dst_port(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::DST_PORT, value);
    }

    pub fn set_len(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::LENGTH, value);
    }

    pub fn set_checksum(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::CHECKSUM, value);
    }

    /// Computes and stores the checksum over the pseudo-header, header and
    /// payload. A computed zero is sent as 0xffff, since zero on the wire
    /// means "no checksum" (RFC 768).
    pub fn fill_checksum(&mut self, pseudo: &PseudoHeader) {
        self.set_checksum(0);
        let value = match self.computed_checksum(pseudo) {
            0 => 0xffff,
            value => value,
        };
        self.set_checksum(value);
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// The owned form of a UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    pub payload_len: usize,
}

impl UdpRepr {
    /// Reads a header and verifies the checksum against `pseudo` (see
    /// [`UdpPacket::verify_checksum`]).
    pub fn parse<T: AsRef<[u8]>>(packet: &UdpPacket<T>, pseudo: &PseudoHeader) -> Result<UdpRepr> {
        packet.check_len()?;
        if !packet.verify_checksum(pseudo) {
            return Err(Error::BadChecksum);
        }
        Ok(UdpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload_len: usize::from(packet.len()) - HEADER_LEN,
        })
    }

    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of the whole datagram, header and payload.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Writes the header with a zero checksum ("none", valid over IPv4 only),
    /// leaving the payload bytes alone.
    pub fn emit_header<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut UdpPacket<T>) {
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(self.buffer_len() as u16);
        packet.set_checksum(0);
    }

    /// Writes the header and its checksum. The payload must already be in
    /// place after the header (the checksum covers it), so a tunnel can
    /// write its headers in front of a frame without copying it; `packet`
    /// must hold [`UdpRepr::buffer_len`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut UdpPacket<T>, pseudo: &PseudoHeader) {
        self.emit_header(packet);
        packet.fill_checksum(pseudo);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // A DNS query for example.com from 192.168.1.10:53124 to 8.8.8.8:53, the
    // UDP datagram of IP(src=.., dst=..)/UDP()/DNS(id=0x1a2b, rd=1,
    // qd=DNSQR("example.com")) emitted with scapy 2.5 and pasted here.
    const DNS_QUERY: [u8; 37] = [
        0xcf, 0x84, 0x00, 0x35, 0x00, 0x25, 0x74, 0x8f, 0x1a, 0x2b, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x07, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x03, 0x63, 0x6f, 0x6d, //
        0x00, 0x00, 0x01, 0x00, 0x01,
    ];
    const DNS_PSEUDO: PseudoHeader =
        PseudoHeader::V4 { src_addr: Ipv4Addr::new(192, 168, 1, 10), dst_addr: Ipv4Addr::new(8, 8, 8, 8) };

    // UDP 546 -> 547 between 2001:db8::1 and 2001:db8::2 with the payload
    // "dhcpv6-ish", emitted with scapy 2.5 (IPv6()/UDP()/payload).
    const V6_DATAGRAM: [u8; 18] = [
        0x02, 0x22, 0x02, 0x23, 0x00, 0x12, 0xc1, 0x2f, 0x64, 0x68, 0x63, 0x70, 0x76, 0x36, 0x2d, 0x69, //
        0x73, 0x68,
    ];
    const V6_PSEUDO: PseudoHeader = PseudoHeader::V6 {
        src_addr: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1),
        dst_addr: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2),
    };

    #[test]
    fn parses_captured_dns_query() {
        let packet = UdpPacket::new_checked(&DNS_QUERY[..]).unwrap();
        let repr = UdpRepr::parse(&packet, &DNS_PSEUDO).unwrap();
        assert_eq!(repr, UdpRepr { src_port: 53124, dst_port: 53, payload_len: 29 });
        assert_eq!(&packet.payload()[..2], &[0x1a, 0x2b]);
        // Re-emitting gives the same bytes, checksum included.
        let mut buf = DNS_QUERY;
        buf[..HEADER_LEN].fill(0);
        repr.emit(&mut UdpPacket::new_unchecked(&mut buf[..]), &DNS_PSEUDO);
        assert_eq!(buf, DNS_QUERY);
    }

    #[test]
    fn parses_captured_v6_datagram() {
        let packet = UdpPacket::new_checked(&V6_DATAGRAM[..]).unwrap();
        let repr = UdpRepr::parse(&packet, &V6_PSEUDO).unwrap();
        assert_eq!(repr, UdpRepr { src_port: 546, dst_port: 547, payload_len: 10 });
        assert_eq!(packet.payload(), b"dhcpv6-ish");
        let mut buf = V6_DATAGRAM;
        buf[6..8].fill(0);
        repr.emit(&mut UdpPacket::new_unchecked(&mut buf[..]), &V6_PSEUDO);
        assert_eq!(buf, V6_DATAGRAM);
    }

    #[test]
    fn checksum_depends_on_pseudo_header() {
        let other = PseudoHeader::V4 { src_addr: Ipv4Addr::new(192, 168, 1, 11), dst_addr: Ipv4Addr::new(8, 8, 8, 8) };
        let packet = UdpPacket::new_checked(&DNS_QUERY[..]).unwrap();
        assert_eq!(UdpRepr::parse(&packet, &other).unwrap_err(), Error::BadChecksum);
        let mut corrupted = DNS_QUERY;
        corrupted[20] ^= 0x01;
        let packet = UdpPacket::new_checked(&corrupted[..]).unwrap();
        assert_eq!(UdpRepr::parse(&packet, &DNS_PSEUDO).unwrap_err(), Error::BadChecksum);
    }

    #[test]
    fn zero_checksum_is_none_over_v4_and_invalid_over_v6() {
        let mut v4 = DNS_QUERY;
        v4[6..8].fill(0);
        v4[20] ^= 0x01; // not covered any more
        let packet = UdpPacket::new_checked(&v4[..]).unwrap();
        assert!(UdpRepr::parse(&packet, &DNS_PSEUDO).is_ok());
        let mut v6 = V6_DATAGRAM;
        v6[6..8].fill(0);
        let packet = UdpPacket::new_checked(&v6[..]).unwrap();
        assert_eq!(UdpRepr::parse(&packet, &V6_PSEUDO).unwrap_err(), Error::BadChecksum);
    }

    #[test]
    fn computed_zero_is_sent_as_all_ones() {
        // Pick the payload word that makes the sum come out at zero.
        let repr = UdpRepr { src_port: 1, dst_port: 2, payload_len: 2 };
        let mut buf = [0u8; 10];
        repr.emit(&mut UdpPacket::new_unchecked(&mut buf[..]), &DNS_PSEUDO);
        let with_zero_payload = u16::from_be_bytes([buf[6], buf[7]]);
        buf[8..10].copy_from_slice(&with_zero_payload.to_be_bytes());
        let mut packet = UdpPacket::new_unchecked(&mut buf[..]);
        packet.fill_checksum(&DNS_PSEUDO);
        assert_eq!(packet.checksum(), 0xffff);
        assert!(packet.verify_checksum(&DNS_PSEUDO));
    }

    #[test]
    fn bad_lengths() {
        assert_eq!(UdpPacket::new_checked(&DNS_QUERY[..7]).unwrap_err(), Error::Truncated);
        assert_eq!(UdpPacket::new_checked(&DNS_QUERY[..36]).unwrap_err(), Error::Truncated);
        let mut short_length = DNS_QUERY;
        short_length[4..6].copy_from_slice(&7u16.to_be_bytes());
        assert_eq!(UdpPacket::new_checked(&short_length[..]).unwrap_err(), Error::Malformed);
        // Padding after the datagram is not payload.
        let mut padded = DNS_QUERY.to_vec();
        padded.extend_from_slice(&[0; 9]);
        let packet = UdpPacket::new_checked(&padded[..]).unwrap();
        assert_eq!(packet.payload().len(), 29);
        assert!(UdpRepr::parse(&packet, &DNS_PSEUDO).is_ok());
    }

    fn any_pseudo() -> impl Strategy<Value = PseudoHeader> {
        prop_oneof![
            (any::<[u8; 4]>(), any::<[u8; 4]>())
                .prop_map(|(s, d)| PseudoHeader::V4 { src_addr: s.into(), dst_addr: d.into() }),
            (any::<[u8; 16]>(), any::<[u8; 16]>())
                .prop_map(|(s, d)| PseudoHeader::V6 { src_addr: s.into(), dst_addr: d.into() }),
        ]
    }

    proptest! {
        #[test]
        fn round_trip(
            src_port in any::<u16>(),
            dst_port in any::<u16>(),
            payload in proptest::collection::vec(any::<u8>(), 0..256),
            pseudo in any_pseudo(),
        ) {
            let repr = UdpRepr { src_port, dst_port, payload_len: payload.len() };
            let mut buf = vec![0u8; repr.buffer_len()];
            buf[HEADER_LEN..].copy_from_slice(&payload);
            repr.emit(&mut UdpPacket::new_unchecked(&mut buf[..]), &pseudo);
            let packet = UdpPacket::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(UdpRepr::parse(&packet, &pseudo).unwrap(), repr);
            prop_assert_eq!(packet.payload(), &payload[..]);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64), pseudo in any_pseudo()) {
            if let Ok(packet) = UdpPacket::new_checked(&data[..]) {
                let _ = UdpRepr::parse(&packet, &pseudo);
                let _ = packet.payload();
            }
        }
    }
}
