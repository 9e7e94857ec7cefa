//! VXLAN headers (RFC 7348 section 5): an 8-byte header after a UDP header
//! (destination port 4789), followed by the inner Ethernet frame.
//!
//! ```text
//! |R|R|R|R|I|R|R|R|            Reserved                           |
//! |                VXLAN Network Identifier (VNI) |   Reserved    |
//! ```

use super::{Error, Field, Rest, Result};

/// The IANA-assigned UDP destination port (RFC 7348 section 5).
pub const VXLAN_PORT: u16 = 4789;

/// Largest VNI: the field is 24 bits wide.
pub const VNI_MAX: u32 = 0x00ff_ffff;

mod field {
    use super::{Field, Rest};
    pub const FLAGS: usize = 0;
    pub const RESERVED1: Field = 1..4;
    pub const VNI: Field = 4..7;
    pub const RESERVED2: usize = 7;
    pub const PAYLOAD: Rest = 8..;
}

pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// Bytes VXLAN adds in front of the inner frame over an IPv4 underlay: outer
/// Ethernet (14), IPv4 (20), UDP (8), VXLAN (8).
pub const ENCAP_OVERHEAD_V4: usize = 14 + 20 + 8 + HEADER_LEN;
/// The same over an IPv6 underlay (40-byte IPv6 header).
pub const ENCAP_OVERHEAD_V6: usize = 14 + 40 + 8 + HEADER_LEN;

/// The I flag: "MUST be set to 1 for a valid VXLAN Network ID".
const FLAG_VNI_VALID: u8 = 0x08;

/// The outer UDP source port for an encapsulated flow (RFC 7348 section 5):
/// derived from a hash of the inner frame so that the underlay's ECMP, which
/// hashes the outer 5-tuple, spreads flows; in the dynamic/private range
/// 49152-65535 the RFC recommends. The same flow hash always gives the same
/// port, so a flow's packets stay in order on one path.
pub const fn udp_source_port(flow_hash: u32) -> u16 {
    // Fold the high half in: flow hashes often carry their entropy there.
    let folded = (flow_hash ^ (flow_hash >> 16)) as u16;
    0xc000 | (folded & 0x3fff)
}

/// A read/write view of a VXLAN header and the inner frame after it.
#[derive(Debug, Clone)]
pub struct VxlanPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VxlanPacket<T> {
    pub const fn new_unchecked(buffer: T) -> VxlanPacket<T> {
        VxlanPacket { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<VxlanPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN { Err(Error::Truncated) } else { Ok(()) }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The I flag: the VNI field is valid.
    pub fn vni_valid(&self) -> bool {
        self.flags() & FLAG_VNI_VALID != 0
    }

    /// The 24-bit VXLAN network identifier.
    pub fn vni(&self) -> u32 {
        let data = &self.buffer.as_ref()[field::VNI];
        u32::from_be_bytes([0, data[0], data[1], data[2]])
    }

    /// The 24 reserved bits after the flags (zero on transmit, ignored on
    /// receipt).
    pub fn reserved1(&self) -> u32 {
        let data = &self.buffer.as_ref()[field::RESERVED1];
        u32::from_be_bytes([0, data[0], data[1], data[2]])
    }

    /// The 8 reserved bits after the VNI.
    pub fn reserved2(&self) -> u8 {
        self.buffer.as_ref()[field::RESERVED2]
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> VxlanPacket<&'a T> {
    /// The inner Ethernet frame.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VxlanPacket<T> {
    pub fn set_flags(&mut self, value: u8) {
        self.buffer.as_mut()[field::FLAGS] = value;
    }

    /// Sets the VNI (its low 24 bits).
    pub fn set_vni(&mut self, value: u32) {
        self.buffer.as_mut()[field::VNI].copy_from_slice(&value.to_be_bytes()[1..]);
    }

    pub fn set_reserved1(&mut self, value: u32) {
        self.buffer.as_mut()[field::RESERVED1].copy_from_slice(&value.to_be_bytes()[1..]);
    }

    pub fn set_reserved2(&mut self, value: u8) {
        self.buffer.as_mut()[field::RESERVED2] = value;
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The owned form of a VXLAN header: all it carries is the VNI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VxlanRepr {
    /// 0..=[`VNI_MAX`].
    pub vni: u32,
}

impl VxlanRepr {
    /// Reads a header; a header without the I flag is `Malformed`. Reserved
    /// bits, the other flags included, are ignored as RFC 7348 requires.
    pub fn parse<T: AsRef<[u8]>>(packet: &VxlanPacket<T>) -> Result<VxlanRepr> {
        packet.check_len()?;
        if !packet.vni_valid() {
            return Err(Error::Malformed);
        }
        Ok(VxlanRepr { vni: packet.vni() })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header (I flag set, reserved fields zero) into the start of
    /// `packet`, which must hold at least [`HEADER_LEN`] bytes; the inner
    /// frame after it is left alone.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut VxlanPacket<T>) {
        packet.set_flags(FLAG_VNI_VALID);
        packet.set_reserved1(0);
        packet.set_vni(self.vni);
        packet.set_reserved2(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{
        EtherType, EthernetAddress, EthernetFrame, IpProtocol, Ipv4Packet, Ipv4Repr, PseudoHeader, UdpPacket, UdpRepr,
        ethernet,
    };
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    // A whole VXLAN frame: VTEP 192.0.2.1 -> 192.0.2.2, UDP 55555 -> 4789 with
    // a zero checksum, VNI 5000, carrying an ICMP echo request between
    // 10.1.1.10 and 10.1.1.11. Emitted with scapy 2.5 (Ether()/IP()/UDP()/
    // VXLAN(vni=5000)/Ether()/IP()/ICMP()/b"vxlan!") and pasted here.
    const VXLAN_FRAME: [u8; 98] = [
        0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x45, 0x00, //
        0x00, 0x54, 0x01, 0x01, 0x40, 0x00, 0x40, 0x11, 0xb5, 0x94, 0xc0, 0x00, 0x02, 0x01, 0xc0, 0x00, //
        0x02, 0x02, 0xd9, 0x03, 0x12, 0xb5, 0x00, 0x40, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x13, //
        0x88, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0x22, 0x00, 0x07, 0x00, 0x00, 0x40, 0x01, 0x64, 0xbe, 0x0a, 0x01, 0x01, 0x0a, //
        0x0a, 0x01, 0x01, 0x0b, 0x08, 0x00, 0xa7, 0x02, 0x00, 0x01, 0x00, 0x01, 0x76, 0x78, 0x6c, 0x61, //
        0x6e, 0x21,
    ];

    #[test]
    fn parses_captured_frame() {
        let outer = EthernetFrame::new_checked(&VXLAN_FRAME[..]).unwrap();
        assert_eq!(outer.ethertype(), EtherType::Ipv4);
        let ip = Ipv4Packet::new_checked(outer.payload()).unwrap();
        let ip_repr = Ipv4Repr::parse(&ip).unwrap();
        assert_eq!(ip_repr.protocol, IpProtocol::Udp);
        assert_eq!(ip_repr.src_addr, Ipv4Addr::new(192, 0, 2, 1));
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        let pseudo = PseudoHeader::V4 { src_addr: ip_repr.src_addr, dst_addr: ip_repr.dst_addr };
        let udp_repr = UdpRepr::parse(&udp, &pseudo).unwrap();
        assert_eq!(udp_repr.dst_port, VXLAN_PORT);
        assert_eq!(udp.checksum(), 0);
        let vxlan = VxlanPacket::new_checked(udp.payload()).unwrap();
        assert_eq!(VxlanRepr::parse(&vxlan).unwrap(), VxlanRepr { vni: 5000 });
        assert_eq!((vxlan.reserved1(), vxlan.reserved2()), (0, 0));
        let inner = EthernetFrame::new_checked(vxlan.payload()).unwrap();
        assert_eq!(inner.src_addr(), "02:00:00:00:00:0a".parse::<EthernetAddress>().unwrap());
        assert_eq!(inner.dst_addr(), "02:00:00:00:00:0b".parse::<EthernetAddress>().unwrap());
        assert_eq!(inner.ethertype(), EtherType::Ipv4);
        assert_eq!(VXLAN_FRAME.len() - vxlan.payload().len(), ENCAP_OVERHEAD_V4);
    }

    #[test]
    fn emit_reproduces_captured_header() {
        let offset = ethernet::HEADER_LEN + 20 + 8;
        let mut buf = VXLAN_FRAME;
        buf[offset..offset + HEADER_LEN].fill(0xff);
        VxlanRepr { vni: 5000 }.emit(&mut VxlanPacket::new_unchecked(&mut buf[offset..]));
        assert_eq!(buf, VXLAN_FRAME);
    }

    #[test]
    fn missing_i_flag_is_malformed() {
        let header = [0x00, 0, 0, 0, 0x00, 0x13, 0x88, 0];
        assert_eq!(VxlanRepr::parse(&VxlanPacket::new_unchecked(&header[..])).unwrap_err(), Error::Malformed);
    }

    #[test]
    fn reserved_bits_are_ignored() {
        let header = [0xff, 0xff, 0xff, 0xff, 0x00, 0x13, 0x88, 0xff];
        let packet = VxlanPacket::new_checked(&header[..]).unwrap();
        assert_eq!(VxlanRepr::parse(&packet).unwrap(), VxlanRepr { vni: 5000 });
        assert_eq!((packet.reserved1(), packet.reserved2()), (0xff_ffff, 0xff));
    }

    #[test]
    fn truncated_header() {
        assert_eq!(VxlanPacket::new_checked(&[0x08, 0, 0, 0, 0, 0, 1][..]).unwrap_err(), Error::Truncated);
    }

    #[test]
    fn source_port_spreads_flows_in_range() {
        assert_eq!(udp_source_port(0), 49152);
        assert_eq!(udp_source_port(0x3fff), 65535);
        // Hashes differing only in their high half still give different ports.
        assert_ne!(udp_source_port(0x0001_0000), udp_source_port(0x0002_0000));
        let distinct: std::collections::HashSet<u16> =
            (0u32..1000).map(|i| udp_source_port(i.wrapping_mul(0x9e37_79b9))).collect();
        assert!(distinct.len() > 900, "{} distinct ports", distinct.len());
    }

    proptest! {
        #[test]
        fn round_trip(vni in 0u32..=VNI_MAX, inner in proptest::collection::vec(any::<u8>(), 0..64)) {
            let repr = VxlanRepr { vni };
            let mut buf = vec![0xa5u8; HEADER_LEN];
            buf.extend_from_slice(&inner);
            repr.emit(&mut VxlanPacket::new_unchecked(&mut buf[..]));
            let packet = VxlanPacket::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(VxlanRepr::parse(&packet).unwrap(), repr);
            prop_assert_eq!(packet.payload(), &inner[..]);
        }

        #[test]
        fn source_port_always_in_dynamic_range(hash in any::<u32>()) {
            prop_assert!(udp_source_port(hash) >= 49152);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..16)) {
            if let Ok(packet) = VxlanPacket::new_checked(&data[..]) {
                let _ = VxlanRepr::parse(&packet);
                let _ = packet.payload();
            }
        }
    }
}
