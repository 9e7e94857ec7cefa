//! IEEE 802.1Q VLAN tags: a C-tag (TPID 0x8100) or, for double-tagged
//! (802.1ad Q-in-Q) frames, an S-tag (TPID 0x88a8) followed by a C-tag.
//!
//! The TPID is the EtherType field of the header before the tag; this view
//! covers what follows it: the tag control information (PCP, DEI, VID) and the
//! EtherType of what comes next.

use super::{Error, EtherType, EthernetFrame, Field, Rest, Result, ethernet};

/// A 12-bit VLAN identifier. 0 (priority tag) and 4095 are reserved.
pub type VlanId = u16;

pub const VID_MAX: VlanId = 4094;

mod field {
    use super::{Field, Rest};
    pub const TCI: Field = 0..2;
    pub const ETHERTYPE: Field = 2..4;
    pub const PAYLOAD: Rest = 4..;
}

/// Length of one tag after its TPID.
pub const TAG_LEN: usize = field::PAYLOAD.start;

/// A read/write view of one VLAN tag (TCI and inner EtherType).
#[derive(Debug, Clone)]
pub struct VlanTag<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VlanTag<T> {
    pub const fn new_unchecked(buffer: T) -> VlanTag<T> {
        VlanTag { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<VlanTag<T>> {
        let tag = Self::new_unchecked(buffer);
        tag.check_len()?;
        Ok(tag)
    }

    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < TAG_LEN { Err(Error::Truncated) } else { Ok(()) }
    }

    fn tci(&self) -> u16 {
        let data = &self.buffer.as_ref()[field::TCI];
        u16::from_be_bytes([data[0], data[1]])
    }

    /// Priority code point (802.1p class of service), 0..=7.
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }

    /// Drop eligible indicator.
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }

    pub fn vid(&self) -> VlanId {
        self.tci() & 0x0fff
    }

    pub fn ethertype(&self) -> EtherType {
        let data = &self.buffer.as_ref()[field::ETHERTYPE];
        EtherType::from(u16::from_be_bytes([data[0], data[1]]))
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> VlanTag<&'a T> {
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanTag<T> {
    fn set_tci(&mut self, value: u16) {
        self.buffer.as_mut()[field::TCI].copy_from_slice(&value.to_be_bytes());
    }

    pub fn set_pcp(&mut self, value: u8) {
        let tci = (self.tci() & 0x1fff) | (u16::from(value & 0x7) << 13);
        self.set_tci(tci);
    }

    pub fn set_dei(&mut self, value: bool) {
        let tci = (self.tci() & !0x1000) | if value { 0x1000 } else { 0 };
        self.set_tci(tci);
    }

    pub fn set_vid(&mut self, value: VlanId) {
        let tci = (self.tci() & 0xf000) | (value & 0x0fff);
        self.set_tci(tci);
    }

    pub fn set_ethertype(&mut self, value: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&u16::from(value).to_be_bytes());
    }
}

/// The owned form of one VLAN tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTagRepr {
    pub pcp: u8,
    pub dei: bool,
    pub vid: VlanId,
    /// The EtherType of what follows the tag.
    pub ethertype: EtherType,
}

impl VlanTagRepr {
    pub fn parse<T: AsRef<[u8]>>(tag: &VlanTag<T>) -> Result<VlanTagRepr> {
        tag.check_len()?;
        Ok(VlanTagRepr { pcp: tag.pcp(), dei: tag.dei(), vid: tag.vid(), ethertype: tag.ethertype() })
    }

    pub const fn buffer_len(&self) -> usize {
        TAG_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, tag: &mut VlanTag<T>) {
        tag.set_tci(0);
        tag.set_pcp(self.pcp);
        tag.set_dei(self.dei);
        tag.set_vid(self.vid);
        tag.set_ethertype(self.ethertype);
    }
}

/// The layer-2 header of a frame with its tags walked: what the forwarding
/// pipeline needs before it looks at the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L2Header {
    pub dst_addr: ethernet::EthernetAddress,
    pub src_addr: ethernet::EthernetAddress,
    /// The outer tag (S-tag of a double-tagged frame, or the only tag).
    pub outer: Option<VlanTagRepr>,
    /// The inner C-tag of a double-tagged frame.
    pub inner: Option<VlanTagRepr>,
    /// The EtherType of the payload, after all tags.
    pub ethertype: EtherType,
    /// Offset of the payload from the start of the frame.
    pub payload_offset: usize,
}

impl L2Header {
    /// Walks the Ethernet header and at most two VLAN tags. A third tag is
    /// `Unsupported`.
    pub fn parse(frame: &[u8]) -> Result<L2Header> {
        let eth = EthernetFrame::new_checked(frame)?;
        let mut header = L2Header {
            dst_addr: eth.dst_addr(),
            src_addr: eth.src_addr(),
            outer: None,
            inner: None,
            ethertype: eth.ethertype(),
            payload_offset: ethernet::HEADER_LEN,
        };
        for slot in 0..2 {
            if !header.ethertype.is_vlan_tpid() {
                return Ok(header);
            }
            let tag = VlanTagRepr::parse(&VlanTag::new_checked(&frame[header.payload_offset..])?)?;
            header.ethertype = tag.ethertype;
            header.payload_offset += TAG_LEN;
            if slot == 0 { header.outer = Some(tag) } else { header.inner = Some(tag) }
        }
        if header.ethertype.is_vlan_tpid() { Err(Error::Unsupported) } else { Ok(header) }
    }

    /// Walks the header as a customer-VLAN bridge port sees it (IEEE 802.1Q
    /// table 9-1): only a C-tag (TPID 0x8100) is a tag, and only one; an
    /// S-tag (0x88a8) or a second C-tag is payload, carried unchanged.
    // Always inline: returned through memory, the header is stored field
    // by field and read back wider, a store-forwarding stall per frame.
    #[inline(always)]
    pub fn parse_customer(frame: &[u8]) -> Result<L2Header> {
        let eth = EthernetFrame::new_checked(frame)?;
        let mut header = L2Header {
            dst_addr: eth.dst_addr(),
            src_addr: eth.src_addr(),
            outer: None,
            inner: None,
            ethertype: eth.ethertype(),
            payload_offset: ethernet::HEADER_LEN,
        };
        if header.ethertype == EtherType::Vlan {
            let tag = VlanTagRepr::parse(&VlanTag::new_checked(&frame[header.payload_offset..])?)?;
            header.ethertype = tag.ethertype;
            header.payload_offset += TAG_LEN;
            header.outer = Some(tag);
        }
        Ok(header)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::EthernetAddress;
    use proptest::prelude::*;

    // ICMP echo request on VLAN 100, PCP 5, from a tagged trunk capture.
    const TAGGED: [u8; 22] = [
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x66, 0x77, 0x88, 0x99, 0xaa, // MACs
        0x81, 0x00, 0xa0, 0x64, 0x08, 0x00, // C-tag: PCP 5, VID 100, IPv4
        0x45, 0x00, 0x00, 0x54,
    ];

    #[test]
    fn single_tag() {
        let header = L2Header::parse(&TAGGED).unwrap();
        let tag = header.outer.unwrap();
        assert_eq!((tag.pcp, tag.dei, tag.vid), (5, false, 100));
        assert_eq!(header.ethertype, EtherType::Ipv4);
        assert_eq!(header.payload_offset, 18);
        assert_eq!(header.inner, None);
        assert_eq!(header.dst_addr, EthernetAddress([0, 0x11, 0x22, 0x33, 0x44, 0x55]));
    }

    #[test]
    fn double_tag() {
        let mut frame = vec![0u8; 12];
        frame.extend_from_slice(&[0x88, 0xa8, 0x00, 0x0a, 0x81, 0x00, 0x30, 0x14, 0x86, 0xdd, 0x60]);
        let header = L2Header::parse(&frame).unwrap();
        assert_eq!(header.outer.unwrap().vid, 10);
        assert_eq!(header.inner.unwrap().vid, 20);
        assert_eq!(header.inner.unwrap().pcp, 1);
        assert!(header.inner.unwrap().dei);
        assert_eq!(header.ethertype, EtherType::Ipv6);
        assert_eq!(header.payload_offset, 22);
    }

    #[test]
    fn truncated_tag_and_triple_tag() {
        assert_eq!(L2Header::parse(&TAGGED[..16]).unwrap_err(), Error::Truncated);
        let mut frame = vec![0u8; 12];
        for _ in 0..3 {
            frame.extend_from_slice(&[0x81, 0x00, 0x00, 0x01]);
        }
        frame.extend_from_slice(&[0x08, 0x00]);
        frame[12 + 2..12 + 4].copy_from_slice(&[0x81, 0x00]);
        assert_eq!(L2Header::parse(&frame).unwrap_err(), Error::Unsupported);
    }

    proptest! {
        #[test]
        fn round_trip(pcp in 0u8..8, dei in any::<bool>(), vid in 0u16..4096, ethertype in any::<u16>()) {
            let repr = VlanTagRepr { pcp, dei, vid, ethertype: EtherType::from(ethertype) };
            let mut buf = [0u8; TAG_LEN];
            repr.emit(&mut VlanTag::new_unchecked(&mut buf[..]));
            prop_assert_eq!(VlanTagRepr::parse(&VlanTag::new_checked(&buf[..]).unwrap()).unwrap(), repr);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = L2Header::parse(&data);
        }
    }
}
