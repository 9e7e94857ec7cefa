//! LLDP, the Link Layer Discovery Protocol (IEEE 802.1AB-2016 clause 8).
//!
//! An LLDPDU is a sequence of TLVs, each a 16-bit header (7-bit type, 9-bit
//! length) and a value (8.4). It starts with the mandatory Chassis ID, Port ID
//! and Time To Live TLVs in that order and ends with an End Of LLDPDU TLV or
//! the end of the frame (8.2). [`Tlv`] is a zero-copy view of one TLV,
//! [`LldpPdu`] walks them, and [`LldpRepr`] owns the values the switch uses;
//! LLDP is a control-plane protocol, so the repr allocates.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{Error, EthernetAddress, Field, Rest, Result};

/// The nearest-bridge group address (802.1AB 7.1): frames to it are never
/// forwarded by a bridge, so an LLDPDU describes exactly one link.
pub const DESTINATION: EthernetAddress = EthernetAddress([0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e]);

/// Largest value a TLV can carry: the 9-bit length field.
pub const MAX_VALUE_LEN: usize = 0x1ff;

/// Largest ID (after its subtype byte) or string that 802.1AB allows in a
/// Chassis ID, Port ID, Port Description or System Name TLV (8.5.2 - 8.5.6).
pub const MAX_STRING_LEN: usize = 255;

/// TLV types (802.1AB table 8-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TlvType {
    EndOfLldpdu,
    ChassisId,
    PortId,
    TimeToLive,
    PortDescription,
    SystemName,
    SystemDescription,
    SystemCapabilities,
    ManagementAddress,
    OrganizationallySpecific,
    /// Reserved types 9..=126.
    Unknown(u8),
}

impl From<u8> for TlvType {
    fn from(value: u8) -> Self {
        match value {
            0 => TlvType::EndOfLldpdu,
            1 => TlvType::ChassisId,
            2 => TlvType::PortId,
            3 => TlvType::TimeToLive,
            4 => TlvType::PortDescription,
            5 => TlvType::SystemName,
            6 => TlvType::SystemDescription,
            7 => TlvType::SystemCapabilities,
            8 => TlvType::ManagementAddress,
            127 => TlvType::OrganizationallySpecific,
            other => TlvType::Unknown(other),
        }
    }
}

impl From<TlvType> for u8 {
    fn from(value: TlvType) -> Self {
        match value {
            TlvType::EndOfLldpdu => 0,
            TlvType::ChassisId => 1,
            TlvType::PortId => 2,
            TlvType::TimeToLive => 3,
            TlvType::PortDescription => 4,
            TlvType::SystemName => 5,
            TlvType::SystemDescription => 6,
            TlvType::SystemCapabilities => 7,
            TlvType::ManagementAddress => 8,
            TlvType::OrganizationallySpecific => 127,
            TlvType::Unknown(other) => other,
        }
    }
}

mod field {
    use super::{Field, Rest};
    /// Type in the upper 7 bits, value length in the lower 9.
    pub const TYPE_LENGTH: Field = 0..2;
    pub const VALUE: Rest = 2..;
}

/// Length of a TLV header.
pub const TLV_HEADER_LEN: usize = field::VALUE.start;

/// A read/write view of one TLV at the start of a buffer (which may hold more
/// TLVs after it).
#[derive(Debug, Clone)]
pub struct Tlv<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Tlv<T> {
    pub const fn new_unchecked(buffer: T) -> Tlv<T> {
        Tlv { buffer }
    }

    /// Wraps a buffer after checking it holds the header and the whole value
    /// the header declares.
    pub fn new_checked(buffer: T) -> Result<Tlv<T>> {
        let tlv = Self::new_unchecked(buffer);
        tlv.check_len()?;
        Ok(tlv)
    }

    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < TLV_HEADER_LEN || len < self.total_len() { Err(Error::Truncated) } else { Ok(()) }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn type_length(&self) -> u16 {
        let data = &self.buffer.as_ref()[field::TYPE_LENGTH];
        u16::from_be_bytes([data[0], data[1]])
    }

    pub fn tlv_type(&self) -> TlvType {
        TlvType::from((self.type_length() >> 9) as u8)
    }

    /// Length of the value, without the header.
    pub fn value_len(&self) -> usize {
        usize::from(self.type_length() & 0x1ff)
    }

    /// Length of the header and value: where the next TLV starts.
    pub fn total_len(&self) -> usize {
        TLV_HEADER_LEN + self.value_len()
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Tlv<&'a T> {
    pub fn value(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::VALUE][..self.value_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Tlv<T> {
    /// Writes the header; `value_len` must not exceed [`MAX_VALUE_LEN`].
    pub fn set_header(&mut self, tlv_type: TlvType, value_len: usize) {
        debug_assert!(value_len <= MAX_VALUE_LEN);
        let type_length = (u16::from(u8::from(tlv_type) & 0x7f) << 9) | (value_len as u16 & 0x1ff);
        self.buffer.as_mut()[field::TYPE_LENGTH].copy_from_slice(&type_length.to_be_bytes());
    }

    pub fn value_mut(&mut self) -> &mut [u8] {
        let len = self.value_len();
        &mut self.buffer.as_mut()[field::VALUE][..len]
    }
}

/// A view of a whole LLDPDU (the payload of an LLDP Ethernet frame).
#[derive(Debug, Clone)]
pub struct LldpPdu<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> LldpPdu<T> {
    pub const fn new_unchecked(buffer: T) -> LldpPdu<T> {
        LldpPdu { buffer }
    }

    /// Wraps a buffer after checking it holds at least one TLV header. The
    /// TLVs themselves are checked one by one as [`LldpPdu::tlvs`] walks them.
    pub fn new_checked(buffer: T) -> Result<LldpPdu<T>> {
        let pdu = Self::new_unchecked(buffer);
        pdu.check_len()?;
        Ok(pdu)
    }

    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < TLV_HEADER_LEN { Err(Error::Truncated) } else { Ok(()) }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The TLVs up to and including End Of LLDPDU (or up to the end of the
    /// buffer); padding after End is not walked. A TLV whose value runs past
    /// the buffer yields `Err(Truncated)` and ends the walk.
    pub fn tlvs(&self) -> TlvIter<'_> {
        TlvIter { rest: self.buffer.as_ref() }
    }
}

/// Iterator over the TLVs of an LLDPDU; see [`LldpPdu::tlvs`].
#[derive(Debug, Clone)]
pub struct TlvIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for TlvIter<'a> {
    type Item = Result<Tlv<&'a [u8]>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let tlv = match Tlv::new_checked(self.rest) {
            Ok(tlv) => tlv,
            Err(error) => {
                self.rest = &[];
                return Some(Err(error));
            }
        };
        self.rest = if tlv.tlv_type() == TlvType::EndOfLldpdu { &[] } else { &self.rest[tlv.total_len()..] };
        Some(Ok(tlv))
    }
}

/// A network address in an ID or management address TLV: an IANA address
/// family number followed by the address (802.1AB 8.5.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NetworkAddress {
    Ip(IpAddr),
}

const IANA_FAMILY_IPV4: u8 = 1;
const IANA_FAMILY_IPV6: u8 = 2;

impl NetworkAddress {
    /// Reads a family byte and address; `None` for other families or lengths.
    fn parse(data: &[u8]) -> Option<NetworkAddress> {
        match data {
            [IANA_FAMILY_IPV4, addr @ ..] => {
                let octets: [u8; 4] = addr.try_into().ok()?;
                Some(NetworkAddress::Ip(IpAddr::V4(Ipv4Addr::from(octets))))
            }
            [IANA_FAMILY_IPV6, addr @ ..] => {
                let octets: [u8; 16] = addr.try_into().ok()?;
                Some(NetworkAddress::Ip(IpAddr::V6(Ipv6Addr::from(octets))))
            }
            _ => None,
        }
    }

    fn encode(&self) -> Vec<u8> {
        match self {
            NetworkAddress::Ip(IpAddr::V4(addr)) => [&[IANA_FAMILY_IPV4][..], &addr.octets()].concat(),
            NetworkAddress::Ip(IpAddr::V6(addr)) => [&[IANA_FAMILY_IPV6][..], &addr.octets()].concat(),
        }
    }
}

/// The Chassis ID TLV's value by subtype (802.1AB 8.5.2, table 8-2).
///
/// Text subtypes hold UTF-8; a value that does not fit its subtype (text that
/// is not UTF-8, a MAC address that is not 6 bytes, an unknown address family)
/// is kept as [`ChassisId::Other`] with its bytes, so nothing a neighbour sends
/// is lost or rejected.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ChassisId {
    /// Subtype 1: `entPhysicalAlias` of a chassis component.
    ChassisComponent(String),
    /// Subtype 2: `ifAlias`.
    InterfaceAlias(String),
    /// Subtype 3: `entPhysicalAlias` of a port or backplane component.
    PortComponent(String),
    /// Subtype 4: what most switches send.
    MacAddress(EthernetAddress),
    /// Subtype 5.
    NetworkAddress(NetworkAddress),
    /// Subtype 6: `ifName`.
    InterfaceName(String),
    /// Subtype 7.
    LocallyAssigned(String),
    /// A reserved subtype, or a value that does not fit its subtype.
    Other { subtype: u8, id: Vec<u8> },
}

impl ChassisId {
    fn parse(value: &[u8]) -> Result<ChassisId> {
        let [subtype, id @ ..] = value else {
            return Err(Error::Malformed);
        };
        if id.is_empty() || id.len() > MAX_STRING_LEN {
            return Err(Error::Malformed);
        }
        let text = |make: fn(String) -> ChassisId| core::str::from_utf8(id).ok().map(|s| make(s.to_owned()));
        let known = match *subtype {
            1 => text(ChassisId::ChassisComponent),
            2 => text(ChassisId::InterfaceAlias),
            3 => text(ChassisId::PortComponent),
            4 => mac_from(id).map(ChassisId::MacAddress),
            5 => NetworkAddress::parse(id).map(ChassisId::NetworkAddress),
            6 => text(ChassisId::InterfaceName),
            7 => text(ChassisId::LocallyAssigned),
            _ => None,
        };
        Ok(known.unwrap_or_else(|| ChassisId::Other { subtype: *subtype, id: id.to_vec() }))
    }

    fn subtype_and_id(&self) -> (u8, Vec<u8>) {
        match self {
            ChassisId::ChassisComponent(s) => (1, s.as_bytes().to_vec()),
            ChassisId::InterfaceAlias(s) => (2, s.as_bytes().to_vec()),
            ChassisId::PortComponent(s) => (3, s.as_bytes().to_vec()),
            ChassisId::MacAddress(mac) => (4, mac.as_bytes().to_vec()),
            ChassisId::NetworkAddress(addr) => (5, addr.encode()),
            ChassisId::InterfaceName(s) => (6, s.as_bytes().to_vec()),
            ChassisId::LocallyAssigned(s) => (7, s.as_bytes().to_vec()),
            ChassisId::Other { subtype, id } => (*subtype, id.clone()),
        }
    }
}

/// The Port ID TLV's value by subtype (802.1AB 8.5.3, table 8-3). Values that
/// do not fit their subtype are kept as [`PortId::Other`], as for [`ChassisId`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PortId {
    /// Subtype 1: `ifAlias`.
    InterfaceAlias(String),
    /// Subtype 2: `entPhysicalAlias` of a port component.
    PortComponent(String),
    /// Subtype 3.
    MacAddress(EthernetAddress),
    /// Subtype 4.
    NetworkAddress(NetworkAddress),
    /// Subtype 5: `ifName`, what Linux hosts and most switches send.
    InterfaceName(String),
    /// Subtype 6: a DHCP relay agent circuit ID (RFC 3046), opaque bytes.
    AgentCircuitId(Vec<u8>),
    /// Subtype 7.
    LocallyAssigned(String),
    /// A reserved subtype, or a value that does not fit its subtype.
    Other { subtype: u8, id: Vec<u8> },
}

impl PortId {
    fn parse(value: &[u8]) -> Result<PortId> {
        let [subtype, id @ ..] = value else {
            return Err(Error::Malformed);
        };
        if id.is_empty() || id.len() > MAX_STRING_LEN {
            return Err(Error::Malformed);
        }
        let text = |make: fn(String) -> PortId| core::str::from_utf8(id).ok().map(|s| make(s.to_owned()));
        let known = match *subtype {
            1 => text(PortId::InterfaceAlias),
            2 => text(PortId::PortComponent),
            3 => mac_from(id).map(PortId::MacAddress),
            4 => NetworkAddress::parse(id).map(PortId::NetworkAddress),
            5 => text(PortId::InterfaceName),
            6 => Some(PortId::AgentCircuitId(id.to_vec())),
            7 => text(PortId::LocallyAssigned),
            _ => None,
        };
        Ok(known.unwrap_or_else(|| PortId::Other { subtype: *subtype, id: id.to_vec() }))
    }

    fn subtype_and_id(&self) -> (u8, Vec<u8>) {
        match self {
            PortId::InterfaceAlias(s) => (1, s.as_bytes().to_vec()),
            PortId::PortComponent(s) => (2, s.as_bytes().to_vec()),
            PortId::MacAddress(mac) => (3, mac.as_bytes().to_vec()),
            PortId::NetworkAddress(addr) => (4, addr.encode()),
            PortId::InterfaceName(s) => (5, s.as_bytes().to_vec()),
            PortId::AgentCircuitId(id) => (6, id.clone()),
            PortId::LocallyAssigned(s) => (7, s.as_bytes().to_vec()),
            PortId::Other { subtype, id } => (*subtype, id.clone()),
        }
    }
}

fn mac_from(id: &[u8]) -> Option<EthernetAddress> {
    <[u8; 6]>::try_from(id).ok().map(EthernetAddress)
}

/// A TLV the switch does not interpret (system description, capabilities,
/// management address, organizationally specific, reserved types), kept so
/// that it can be shown or re-sent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RawTlv {
    pub tlv_type: TlvType,
    pub value: Vec<u8>,
}

/// The owned form of an LLDPDU.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LldpRepr {
    pub chassis_id: ChassisId,
    pub port_id: PortId,
    /// Seconds the receiver keeps this information; 0 means "forget me now"
    /// (the shutdown LLDPDU of 802.1AB 9.2.7.3).
    pub ttl: u16,
    pub port_description: Option<String>,
    pub system_name: Option<String>,
    /// The other TLVs in the order received, End excluded.
    pub other_tlvs: Vec<RawTlv>,
}

impl LldpRepr {
    /// Reads an LLDPDU (802.1AB 9.2.7.7.1): Chassis ID, Port ID and TTL must
    /// come first and in that order and never again, else `Malformed`; a TLV
    /// running past the buffer is `Truncated`. Text that is not UTF-8 in the
    /// description and name is replaced lossily (they are for display). A
    /// repeated Port Description or System Name keeps the first.
    pub fn parse<T: AsRef<[u8]>>(pdu: &LldpPdu<T>) -> Result<LldpRepr> {
        pdu.check_len()?;
        let mut tlvs = pdu.tlvs();
        let chassis_id = ChassisId::parse(next_mandatory(&mut tlvs, TlvType::ChassisId)?)?;
        let port_id = PortId::parse(next_mandatory(&mut tlvs, TlvType::PortId)?)?;
        // 8.5.4: the TTL TLV's value is exactly two octets.
        let ttl = match *next_mandatory(&mut tlvs, TlvType::TimeToLive)? {
            [high, low] => u16::from_be_bytes([high, low]),
            _ => return Err(Error::Malformed),
        };
        let mut repr =
            LldpRepr { chassis_id, port_id, ttl, port_description: None, system_name: None, other_tlvs: Vec::new() };
        for tlv in tlvs {
            let tlv = tlv?;
            let value = tlv.value();
            match tlv.tlv_type() {
                TlvType::EndOfLldpdu if value.is_empty() => break,
                TlvType::EndOfLldpdu | TlvType::ChassisId | TlvType::PortId | TlvType::TimeToLive => {
                    return Err(Error::Malformed);
                }
                TlvType::PortDescription => {
                    if repr.port_description.is_none() {
                        repr.port_description = Some(String::from_utf8_lossy(value).into_owned());
                    }
                }
                TlvType::SystemName => {
                    if repr.system_name.is_none() {
                        repr.system_name = Some(String::from_utf8_lossy(value).into_owned());
                    }
                }
                tlv_type => repr.other_tlvs.push(RawTlv { tlv_type, value: value.to_vec() }),
            }
        }
        Ok(repr)
    }

    /// Checks every value fits its TLV, so that [`LldpRepr::emit`] can write
    /// it: IDs of 1..=255 bytes, description and name of at most 255 bytes,
    /// other values of at most 511 bytes and of a type that is not one of the
    /// fixed ones.
    pub fn check(&self) -> Result<()> {
        let id_fits = |id: &[u8]| !id.is_empty() && id.len() <= MAX_STRING_LEN;
        let text_fits = |text: &Option<String>| text.as_ref().is_none_or(|s| s.len() <= MAX_STRING_LEN);
        let other_fits = |tlv: &RawTlv| {
            tlv.value.len() <= MAX_VALUE_LEN
                && u8::from(tlv.tlv_type) <= 127
                && !matches!(
                    tlv.tlv_type,
                    TlvType::EndOfLldpdu
                        | TlvType::ChassisId
                        | TlvType::PortId
                        | TlvType::TimeToLive
                        | TlvType::PortDescription
                        | TlvType::SystemName
                )
        };
        if id_fits(&self.chassis_id.subtype_and_id().1)
            && id_fits(&self.port_id.subtype_and_id().1)
            && text_fits(&self.port_description)
            && text_fits(&self.system_name)
            && self.other_tlvs.iter().all(other_fits)
        {
            Ok(())
        } else {
            Err(Error::Malformed)
        }
    }

    /// Length of the LLDPDU [`LldpRepr::emit`] writes, End TLV included.
    pub fn buffer_len(&self) -> usize {
        let text_len = |text: &Option<String>| text.as_ref().map_or(0, |s| TLV_HEADER_LEN + s.len());
        TLV_HEADER_LEN
            + 1
            + self.chassis_id.subtype_and_id().1.len()
            + TLV_HEADER_LEN
            + 1
            + self.port_id.subtype_and_id().1.len()
            + TLV_HEADER_LEN
            + 2
            + text_len(&self.port_description)
            + text_len(&self.system_name)
            + self.other_tlvs.iter().map(|tlv| TLV_HEADER_LEN + tlv.value.len()).sum::<usize>()
            + TLV_HEADER_LEN
    }

    /// Writes the LLDPDU: Chassis ID, Port ID, TTL, Port Description, System
    /// Name, the other TLVs, End. `pdu` must hold [`LldpRepr::buffer_len`]
    /// bytes; a value that does not fit its TLV (see [`LldpRepr::check`]) is
    /// `Malformed` and nothing is written.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, pdu: &mut LldpPdu<T>) -> Result<()> {
        self.check()?;
        let mut writer = TlvWriter { buffer: pdu.buffer.as_mut(), offset: 0 };
        let (subtype, id) = self.chassis_id.subtype_and_id();
        writer.write(TlvType::ChassisId, &[&[subtype][..], &id[..]]);
        let (subtype, id) = self.port_id.subtype_and_id();
        writer.write(TlvType::PortId, &[&[subtype][..], &id[..]]);
        writer.write(TlvType::TimeToLive, &[&self.ttl.to_be_bytes()[..]]);
        if let Some(description) = &self.port_description {
            writer.write(TlvType::PortDescription, &[description.as_bytes()]);
        }
        if let Some(name) = &self.system_name {
            writer.write(TlvType::SystemName, &[name.as_bytes()]);
        }
        for tlv in &self.other_tlvs {
            writer.write(tlv.tlv_type, &[&tlv.value]);
        }
        writer.write(TlvType::EndOfLldpdu, &[]);
        Ok(())
    }
}

/// The value of the next TLV, which must be of the `expected` type.
fn next_mandatory<'a>(tlvs: &mut TlvIter<'a>, expected: TlvType) -> Result<&'a [u8]> {
    let tlv = tlvs.next().ok_or(Error::Truncated)??;
    if tlv.tlv_type() != expected {
        return Err(Error::Malformed);
    }
    Ok(tlv.value())
}

struct TlvWriter<'a> {
    buffer: &'a mut [u8],
    offset: usize,
}

impl TlvWriter<'_> {
    fn write(&mut self, tlv_type: TlvType, parts: &[&[u8]]) {
        let value_len = parts.iter().map(|part| part.len()).sum();
        let mut tlv = Tlv::new_unchecked(&mut self.buffer[self.offset..]);
        tlv.set_header(tlv_type, value_len);
        let mut value = tlv.value_mut();
        for part in parts {
            let (head, rest) = value.split_at_mut(part.len());
            head.copy_from_slice(part);
            value = rest;
        }
        self.offset += TLV_HEADER_LEN + value_len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{EtherType, EthernetFrame, EthernetRepr};
    use proptest::prelude::*;

    fn hex(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits.chunks(2).map(|pair| u8::from_str_radix(core::str::from_utf8(pair).unwrap(), 16).unwrap()).collect()
    }

    // Captured with tshark on a veth peer of an interface named swp1
    // (02:00:00:00:00:11, alias "to spine1 Ethernet1/1", 10.98.0.1/24) on
    // which lldpd 1.0.16 (Debian 12) ran in a namespace with hostname leaf1:
    // its first LLDPDU, and the shutdown LLDPDU (TTL 0) it sent on exit.
    const LLDPD_FRAME: &str = "0180c200000e 020000000011 88cc
        0207 04 020000000011
        0405 05 73777031
        0602 0078
        0a05 6c65616631
        0c55 44656269616e20474e552f4c696e75782031322028626f6f6b776f726d29204c696e757820362e31382e34342d66632d7635303920233120534d5020505245454d50545f44594e414d4943204030207838365f3634
        0e04 009c0080
        100c 05010a620001020000000a00
        1018 1102fe80000000000000000000fffe000011020000000a00
        0815 746f207370696e65312045746865726e6574312f31
        fe09 00120f030100000000
        fe09 00120f0100800000 36
        0000";
    const LLDPD_SHUTDOWN: &str = "0180c200000e 020000000011 88cc
        0207 04 020000000011
        0405 05 73777031
        0602 0000
        0000";

    fn parse_frame(frame: &[u8]) -> Result<LldpRepr> {
        let eth = EthernetFrame::new_checked(frame)?;
        let eth_repr = EthernetRepr::parse(&eth)?;
        assert_eq!((eth_repr.dst_addr, eth_repr.ethertype), (DESTINATION, EtherType::Lldp));
        LldpRepr::parse(&LldpPdu::new_checked(eth.payload())?)
    }

    fn emit(repr: &LldpRepr) -> Vec<u8> {
        let mut buf = vec![0xee; repr.buffer_len()];
        repr.emit(&mut LldpPdu::new_unchecked(&mut buf[..])).unwrap();
        buf
    }

    #[test]
    fn lldpd_frame() {
        let frame = hex(LLDPD_FRAME);
        assert_eq!(frame.len(), 221);
        let repr = parse_frame(&frame).unwrap();
        assert_eq!(repr.chassis_id, ChassisId::MacAddress(EthernetAddress([2, 0, 0, 0, 0, 0x11])));
        assert_eq!(repr.port_id, PortId::InterfaceName("swp1".into()));
        assert_eq!(repr.ttl, 120);
        assert_eq!(repr.system_name.as_deref(), Some("leaf1"));
        assert_eq!(repr.port_description.as_deref(), Some("to spine1 Ethernet1/1"));
        let types: Vec<u8> = repr.other_tlvs.iter().map(|tlv| tlv.tlv_type.into()).collect();
        assert_eq!(types, [6, 7, 8, 8, 127, 127]);
        assert!(repr.other_tlvs[0].value.starts_with(b"Debian GNU/Linux 12"));

        // Re-emitted in our canonical order (port description before the
        // system name and the rest), every TLV is preserved byte for byte.
        let emitted = emit(&repr);
        assert_eq!(emitted.len(), frame.len() - 14);
        assert_eq!(LldpRepr::parse(&LldpPdu::new_checked(&emitted[..]).unwrap()).unwrap(), repr);
        let mut ours: Vec<Vec<u8>> =
            LldpPdu::new_unchecked(&emitted[..]).tlvs().map(|t| t.unwrap().value().to_vec()).collect();
        let mut theirs: Vec<Vec<u8>> =
            LldpPdu::new_unchecked(&frame[14..]).tlvs().map(|t| t.unwrap().value().to_vec()).collect();
        ours.sort();
        theirs.sort();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn lldpd_shutdown_frame_round_trips_exactly() {
        let frame = hex(LLDPD_SHUTDOWN);
        let repr = parse_frame(&frame).unwrap();
        assert_eq!(repr.ttl, 0);
        assert_eq!((repr.system_name.as_ref(), repr.other_tlvs.len()), (None, 0));
        assert_eq!(emit(&repr), &frame[14..]);
    }

    #[test]
    fn tlv_walk_stops_at_end_and_ignores_padding() {
        let mut frame = hex(LLDPD_SHUTDOWN);
        frame.extend_from_slice(&[0x55; 24]);
        let pdu = LldpPdu::new_checked(&frame[14..]).unwrap();
        let types: Vec<TlvType> = pdu.tlvs().map(|tlv| tlv.unwrap().tlv_type()).collect();
        assert_eq!(types, [TlvType::ChassisId, TlvType::PortId, TlvType::TimeToLive, TlvType::EndOfLldpdu]);
        assert_eq!(parse_frame(&frame).unwrap().ttl, 0);
    }

    #[test]
    fn missing_end_is_accepted() {
        let frame = hex(LLDPD_SHUTDOWN);
        assert_eq!(parse_frame(&frame[..frame.len() - 2]).unwrap().ttl, 0);
    }

    #[test]
    fn truncated_at_every_length() {
        let frame = hex(LLDPD_FRAME);
        // End is optional, so a frame cut exactly after a TLV that follows
        // the TTL is a valid, shorter LLDPDU; cut anywhere else it is not.
        let mut boundaries = vec![];
        let mut offset = 14;
        for tlv in LldpPdu::new_unchecked(&frame[14..]).tlvs() {
            offset += tlv.unwrap().total_len();
            boundaries.push(offset);
        }
        for len in 14..frame.len() {
            let result = parse_frame(&frame[..len]);
            if boundaries[2..].contains(&len) {
                assert!(result.is_ok(), "len {len}");
            } else {
                assert_eq!(result, Err(Error::Truncated), "len {len}");
            }
        }
    }

    fn pdu_of(tlvs: &[(u8, &[u8])]) -> Vec<u8> {
        let mut pdu = Vec::new();
        for (tlv_type, value) in tlvs {
            pdu.extend_from_slice(&((u16::from(*tlv_type) << 9) | value.len() as u16).to_be_bytes());
            pdu.extend_from_slice(value);
        }
        pdu
    }

    fn parse_pdu(pdu: &[u8]) -> Result<LldpRepr> {
        LldpRepr::parse(&LldpPdu::new_checked(pdu)?)
    }

    const CHASSIS: (u8, &[u8]) = (1, &[7, b'l', b'e', b'a', b'f']);
    const PORT: (u8, &[u8]) = (2, &[5, b'e', b't', b'h', b'1']);
    const TTL: (u8, &[u8]) = (3, &[0, 120]);
    const END: (u8, &[u8]) = (0, &[]);

    #[test]
    fn mandatory_order_is_enforced() {
        assert!(parse_pdu(&pdu_of(&[CHASSIS, PORT, TTL, END])).is_ok());
        for wrong in [[PORT, CHASSIS, TTL], [CHASSIS, TTL, PORT], [TTL, CHASSIS, PORT], [CHASSIS, PORT, (5, b"x")]] {
            assert_eq!(parse_pdu(&pdu_of(&[wrong[0], wrong[1], wrong[2], END])), Err(Error::Malformed));
        }
        // End before the mandatory TLVs, and a repeated mandatory TLV.
        assert_eq!(parse_pdu(&pdu_of(&[CHASSIS, END])), Err(Error::Malformed));
        assert_eq!(parse_pdu(&pdu_of(&[CHASSIS, PORT, TTL, TTL, END])), Err(Error::Malformed));
        assert_eq!(parse_pdu(&pdu_of(&[CHASSIS, PORT, TTL, (5, b"a"), CHASSIS, END])), Err(Error::Malformed));
        // The PDU ends before the TTL.
        assert_eq!(parse_pdu(&pdu_of(&[CHASSIS, PORT])), Err(Error::Truncated));
    }

    #[test]
    fn malformed_values() {
        // TTL of 1 and 3 bytes, empty IDs, an End with a value.
        assert_eq!(parse_pdu(&pdu_of(&[CHASSIS, PORT, (3, &[1])])), Err(Error::Malformed));
        assert_eq!(parse_pdu(&pdu_of(&[CHASSIS, PORT, (3, &[0, 0, 1])])), Err(Error::Malformed));
        assert_eq!(parse_pdu(&pdu_of(&[(1, &[]), PORT, TTL])), Err(Error::Malformed));
        assert_eq!(parse_pdu(&pdu_of(&[CHASSIS, (2, &[5]), TTL])), Err(Error::Malformed));
        assert_eq!(parse_pdu(&pdu_of(&[CHASSIS, PORT, TTL, (0, &[0])])), Err(Error::Malformed));
        let long_id = [&[7u8][..], &[b'x'; 256]].concat();
        assert_eq!(parse_pdu(&pdu_of(&[(1, &long_id), PORT, TTL])), Err(Error::Malformed));
    }

    #[test]
    fn ids_that_do_not_fit_their_subtype_are_kept_raw() {
        let chassis = (1, &[4u8, 1, 2, 3][..]); // a "MAC address" of 3 bytes
        let port = (2, &[5u8, 0xff, 0xfe][..]); // an interface name that is not UTF-8
        let repr = parse_pdu(&pdu_of(&[chassis, port, TTL])).unwrap();
        assert_eq!(repr.chassis_id, ChassisId::Other { subtype: 4, id: vec![1, 2, 3] });
        assert_eq!(repr.port_id, PortId::Other { subtype: 5, id: vec![0xff, 0xfe] });
        assert_eq!(emit(&repr), pdu_of(&[chassis, port, TTL, END]));

        let chassis = (1, &[5u8, 1, 192, 0, 2, 1][..]);
        let port = (2, &[4u8, 2, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1][..]);
        let repr = parse_pdu(&pdu_of(&[chassis, port, TTL])).unwrap();
        assert_eq!(repr.chassis_id, ChassisId::NetworkAddress(NetworkAddress::Ip("192.0.2.1".parse().unwrap())));
        assert_eq!(repr.port_id, PortId::NetworkAddress(NetworkAddress::Ip("2001:db8::1".parse().unwrap())));
        assert_eq!(emit(&repr), pdu_of(&[chassis, port, TTL, END]));
    }

    #[test]
    fn unknown_tlvs_are_kept_and_duplicates_of_optional_ones_dropped() {
        let pdu = pdu_of(&[CHASSIS, PORT, TTL, (5, b"one"), (42, &[9, 9]), (5, b"two"), END]);
        let repr = parse_pdu(&pdu).unwrap();
        assert_eq!(repr.system_name.as_deref(), Some("one"));
        assert_eq!(repr.other_tlvs, [RawTlv { tlv_type: TlvType::Unknown(42), value: vec![9, 9] }]);
    }

    #[test]
    fn emit_rejects_values_that_do_not_fit() {
        let mut repr = parse_pdu(&pdu_of(&[CHASSIS, PORT, TTL])).unwrap();
        repr.system_name = Some("n".repeat(256));
        assert_eq!(repr.check(), Err(Error::Malformed));
        let mut buf = vec![0u8; repr.buffer_len()];
        assert_eq!(repr.emit(&mut LldpPdu::new_unchecked(&mut buf[..])), Err(Error::Malformed));
        repr.system_name = None;
        repr.port_id = PortId::InterfaceName(String::new());
        assert_eq!(repr.check(), Err(Error::Malformed));
        repr.port_id = PortId::InterfaceName("eth1".into());
        repr.other_tlvs.push(RawTlv { tlv_type: TlvType::TimeToLive, value: vec![0, 1] });
        assert_eq!(repr.check(), Err(Error::Malformed));
        repr.other_tlvs[0] = RawTlv { tlv_type: TlvType::Unknown(200), value: vec![] };
        assert_eq!(repr.check(), Err(Error::Malformed));
    }

    fn text(max: usize) -> impl Strategy<Value = String> {
        proptest::string::string_regex(&format!("[a-zA-Z0-9 /:._é-]{{1,{}}}", max / 2)).unwrap()
    }

    fn any_chassis_id() -> impl Strategy<Value = ChassisId> {
        let raw = proptest::collection::vec(any::<u8>(), 1..=255);
        prop_oneof![
            text(255).prop_map(ChassisId::ChassisComponent),
            text(255).prop_map(ChassisId::InterfaceAlias),
            text(255).prop_map(ChassisId::PortComponent),
            any::<[u8; 6]>().prop_map(|mac| ChassisId::MacAddress(EthernetAddress(mac))),
            any::<[u8; 4]>().prop_map(|ip| ChassisId::NetworkAddress(NetworkAddress::Ip(Ipv4Addr::from(ip).into()))),
            any::<[u8; 16]>().prop_map(|ip| ChassisId::NetworkAddress(NetworkAddress::Ip(Ipv6Addr::from(ip).into()))),
            text(255).prop_map(ChassisId::InterfaceName),
            text(255).prop_map(ChassisId::LocallyAssigned),
            ((8u8..=255).prop_union(0..=0), raw).prop_map(|(subtype, id)| ChassisId::Other { subtype, id }),
        ]
    }

    fn any_port_id() -> impl Strategy<Value = PortId> {
        let raw = proptest::collection::vec(any::<u8>(), 1..=255);
        prop_oneof![
            text(255).prop_map(PortId::InterfaceAlias),
            text(255).prop_map(PortId::PortComponent),
            any::<[u8; 6]>().prop_map(|mac| PortId::MacAddress(EthernetAddress(mac))),
            any::<[u8; 16]>().prop_map(|ip| PortId::NetworkAddress(NetworkAddress::Ip(Ipv6Addr::from(ip).into()))),
            text(255).prop_map(PortId::InterfaceName),
            raw.clone().prop_map(PortId::AgentCircuitId),
            text(255).prop_map(PortId::LocallyAssigned),
            ((8u8..=255).prop_union(0..=0), raw).prop_map(|(subtype, id)| PortId::Other { subtype, id }),
        ]
    }

    fn any_other_tlv() -> impl Strategy<Value = RawTlv> {
        let tlv_type = prop_oneof![6u8..=126, Just(127)].prop_map(TlvType::from);
        (tlv_type, proptest::collection::vec(any::<u8>(), 0..=MAX_VALUE_LEN))
            .prop_map(|(tlv_type, value)| RawTlv { tlv_type, value })
    }

    fn any_repr() -> impl Strategy<Value = LldpRepr> {
        (
            any_chassis_id(),
            any_port_id(),
            any::<u16>(),
            proptest::option::of(text(255)),
            proptest::option::of(text(255)),
            proptest::collection::vec(any_other_tlv(), 0..4),
        )
            .prop_map(|(chassis_id, port_id, ttl, port_description, system_name, other_tlvs)| LldpRepr {
                chassis_id,
                port_id,
                ttl,
                port_description,
                system_name,
                other_tlvs,
            })
    }

    proptest! {
        #[test]
        fn round_trip(repr in any_repr()) {
            prop_assert_eq!(repr.check(), Ok(()));
            let buf = emit(&repr);
            prop_assert_eq!(buf.len(), repr.buffer_len());
            prop_assert_eq!(parse_pdu(&buf).unwrap(), repr);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = parse_pdu(&data);
            for tlv in LldpPdu::new_unchecked(&data[..]).tlvs().flatten() {
                let _ = (tlv.tlv_type(), tlv.value());
            }
        }

        #[test]
        fn parse_never_panics_on_mandatory_prefix(
            tail in proptest::collection::vec(any::<u8>(), 0..300),
            chassis_subtype in any::<u8>(),
            port_subtype in any::<u8>(),
        ) {
            // Random bytes rarely get past the mandatory TLVs; start from a
            // valid prefix so that the optional TLV walk is exercised too.
            let chassis = [chassis_subtype, 1, 2, 3, 4, 5, 6];
            let port = [port_subtype, b'x'];
            let mut pdu = pdu_of(&[(1, &chassis), (2, &port), TTL]);
            pdu.extend_from_slice(&tail);
            let _ = parse_pdu(&pdu);
        }
    }
}
