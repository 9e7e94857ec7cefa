//! Ethernet II frames (IEEE 802.3 clause 3.1.1 with an EtherType).

use core::fmt;

use super::{Error, Field, Rest, Result};

/// A 48-bit MAC address.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    pub const BROADCAST: EthernetAddress = EthernetAddress([0xff; 6]);
    pub const ZERO: EthernetAddress = EthernetAddress([0; 6]);

    /// Reads an address from the first six bytes of `data`.
    ///
    /// # Panics
    /// If `data` is shorter than six bytes.
    pub fn from_bytes(data: &[u8]) -> EthernetAddress {
        let mut bytes = [0; 6];
        bytes.copy_from_slice(&data[..6]);
        EthernetAddress(bytes)
    }

    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// The I/G bit: group (multicast or broadcast) addresses have it set.
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// A unicast address is the only kind a frame may carry as its source.
    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// The address as a 48-bit integer, handy as a compact hash key.
    pub const fn to_u64(&self) -> u64 {
        let b = self.0;
        u64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]])
    }
}

impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2], b[3], b[4], b[5])
    }
}

impl fmt::Debug for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl core::str::FromStr for EthernetAddress {
    type Err = Error;

    /// Parses `aa:bb:cc:dd:ee:ff` (or with `-` separators).
    fn from_str(s: &str) -> Result<Self> {
        let mut bytes = [0u8; 6];
        let mut parts = s.split([':', '-']);
        for byte in &mut bytes {
            let part = parts.next().ok_or(Error::Malformed)?;
            if part.len() != 2 {
                return Err(Error::Malformed);
            }
            *byte = u8::from_str_radix(part, 16).map_err(|_| Error::Malformed)?;
        }
        if parts.next().is_some() {
            return Err(Error::Malformed);
        }
        Ok(EthernetAddress(bytes))
    }
}

/// The EtherTypes this switch parses; anything else is kept as `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EtherType {
    Ipv4,
    Arp,
    /// IEEE 802.1Q customer VLAN tag (C-tag).
    Vlan,
    /// IEEE 802.1ad service VLAN tag (S-tag), the outer tag of a double-tagged frame.
    QinQ,
    Ipv6,
    /// IEEE 802.3 clause 31 MAC control (PAUSE, PFC).
    MacControl,
    Lldp,
    /// IEEE local experimental EtherType 1, carrying this project's IB-like link packets.
    LocalExperimental,
    Unknown(u16),
}

impl From<u16> for EtherType {
    fn from(value: u16) -> Self {
        match value {
            0x0800 => EtherType::Ipv4,
            0x0806 => EtherType::Arp,
            0x8100 => EtherType::Vlan,
            0x88a8 => EtherType::QinQ,
            0x86dd => EtherType::Ipv6,
            0x8808 => EtherType::MacControl,
            0x88cc => EtherType::Lldp,
            0x88b5 => EtherType::LocalExperimental,
            other => EtherType::Unknown(other),
        }
    }
}

impl From<EtherType> for u16 {
    fn from(value: EtherType) -> Self {
        match value {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Vlan => 0x8100,
            EtherType::QinQ => 0x88a8,
            EtherType::Ipv6 => 0x86dd,
            EtherType::MacControl => 0x8808,
            EtherType::Lldp => 0x88cc,
            EtherType::LocalExperimental => 0x88b5,
            EtherType::Unknown(other) => other,
        }
    }
}

impl EtherType {
    /// Whether this EtherType introduces a VLAN tag rather than a payload.
    pub fn is_vlan_tpid(self) -> bool {
        matches!(self, EtherType::Vlan | EtherType::QinQ)
    }
}

mod field {
    use super::{Field, Rest};
    pub const DESTINATION: Field = 0..6;
    pub const SOURCE: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const PAYLOAD: Rest = 14..;
}

/// Length of the Ethernet II header (no tags, no FCS).
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// A read/write view of an Ethernet II frame without its FCS.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> EthernetFrame<T> {
        EthernetFrame { buffer }
    }

    /// Wraps a buffer after checking it holds at least a header.
    pub fn new_checked(buffer: T) -> Result<EthernetFrame<T>> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN { Err(Error::Truncated) } else { Ok(()) }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn dst_addr(&self) -> EthernetAddress {
        EthernetAddress::from_bytes(&self.buffer.as_ref()[field::DESTINATION])
    }

    pub fn src_addr(&self) -> EthernetAddress {
        EthernetAddress::from_bytes(&self.buffer.as_ref()[field::SOURCE])
    }

    pub fn ethertype(&self) -> EtherType {
        let data = &self.buffer.as_ref()[field::ETHERTYPE];
        EtherType::from(u16::from_be_bytes([data[0], data[1]]))
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> EthernetFrame<&'a T> {
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    pub fn set_dst_addr(&mut self, value: EthernetAddress) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&value.0);
    }

    pub fn set_src_addr(&mut self, value: EthernetAddress) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&value.0);
    }

    pub fn set_ethertype(&mut self, value: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&u16::from(value).to_be_bytes());
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The owned form of an Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetRepr {
    pub dst_addr: EthernetAddress,
    pub src_addr: EthernetAddress,
    pub ethertype: EtherType,
}

impl EthernetRepr {
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<EthernetRepr> {
        frame.check_len()?;
        Ok(EthernetRepr { dst_addr: frame.dst_addr(), src_addr: frame.src_addr(), ethertype: frame.ethertype() })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the start of `frame`, which must hold at least
    /// [`HEADER_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        frame.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // A broadcast ARP request captured on a Linux bridge.
    const ARP_REQUEST: [u8; 42] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x42, 0xac, 0x11, 0x00, 0x02, 0x08, 0x06, //
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0x42, 0xac, 0x11, 0x00, 0x02, //
        0xac, 0x11, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xac, 0x11, 0x00, 0x01,
    ];

    #[test]
    fn parses_captured_header() {
        let frame = EthernetFrame::new_checked(&ARP_REQUEST[..]).unwrap();
        let repr = EthernetRepr::parse(&frame).unwrap();
        assert_eq!(repr.dst_addr, EthernetAddress::BROADCAST);
        assert_eq!(repr.src_addr, "02:42:ac:11:00:02".parse().unwrap());
        assert_eq!(repr.ethertype, EtherType::Arp);
        assert_eq!(frame.payload().len(), 28);
    }

    #[test]
    fn short_buffer_is_truncated() {
        assert_eq!(EthernetFrame::new_checked(&ARP_REQUEST[..13]).unwrap_err(), Error::Truncated);
    }

    #[test]
    fn address_text_round_trip() {
        let mac: EthernetAddress = "de:ad:be:ef:00:01".parse().unwrap();
        assert_eq!(mac.to_string(), "de:ad:be:ef:00:01");
        assert!("de:ad:be:ef:00".parse::<EthernetAddress>().is_err());
        assert!("de:ad:be:ef:00:01:02".parse::<EthernetAddress>().is_err());
    }

    pub(crate) fn any_ethertype() -> impl Strategy<Value = EtherType> {
        any::<u16>().prop_map(EtherType::from)
    }

    proptest! {
        #[test]
        fn round_trip(dst in any::<[u8; 6]>(), src in any::<[u8; 6]>(), ethertype in any_ethertype()) {
            let repr = EthernetRepr { dst_addr: EthernetAddress(dst), src_addr: EthernetAddress(src), ethertype };
            let mut buf = [0u8; HEADER_LEN];
            repr.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
            prop_assert_eq!(EthernetRepr::parse(&EthernetFrame::new_checked(&buf[..]).unwrap()).unwrap(), repr);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..32)) {
            if let Ok(frame) = EthernetFrame::new_checked(&data[..]) {
                let _ = EthernetRepr::parse(&frame);
                let _ = frame.payload();
            }
        }
    }
}
