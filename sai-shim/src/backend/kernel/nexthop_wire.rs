//! Nexthop objects on the wire (`RTM_NEWNEXTHOP`, `RTM_DELNEXTHOP`,
//! `RTM_GETNEXTHOP`; `include/uapi/linux/nexthop.h`).
//!
//! `netlink-packet-route` has no nexthop messages yet, so this module adds
//! them in its style: a header struct with its field offsets named once,
//! attributes as [`Nla`]s, parsing that returns a [`DecodeError`] on a short
//! or malformed buffer and never panics.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use netlink_packet_core::{DecodeError, DefaultNla, Emitable, Nla, NlaBuffer, NlasIterator, Parseable};

pub const RTM_NEWNEXTHOP: u16 = 104;
pub const RTM_DELNEXTHOP: u16 = 105;
pub const RTM_GETNEXTHOP: u16 = 106;

/// `struct nhmsg`: family, scope, protocol, reserved, flags (u32).
mod field {
    pub const FAMILY: usize = 0;
    pub const SCOPE: usize = 1;
    pub const PROTOCOL: usize = 2;
    pub const FLAGS: core::ops::Range<usize> = 4..8;
    pub const HEADER_LEN: usize = 8;
}

const NHA_ID: u16 = 1;
const NHA_GROUP: u16 = 2;
const NHA_BLACKHOLE: u16 = 4;
const NHA_OIF: u16 = 5;
const NHA_GATEWAY: u16 = 6;

/// `RTNH_F_ONLINK`: the gateway is on the link, whatever the routes say.
pub const RTNH_F_ONLINK: u32 = 4;

/// `struct nexthop_grp`: id (u32), weight - 1 (u8), weight high (u8), reserved (u16).
const GROUP_ENTRY_LEN: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NexthopOperation {
    New,
    Delete,
    Get,
}

impl NexthopOperation {
    pub fn message_type(self) -> u16 {
        match self {
            NexthopOperation::New => RTM_NEWNEXTHOP,
            NexthopOperation::Delete => RTM_DELNEXTHOP,
            NexthopOperation::Get => RTM_GETNEXTHOP,
        }
    }

    pub fn of_message_type(message_type: u16) -> Option<NexthopOperation> {
        match message_type {
            RTM_NEWNEXTHOP => Some(NexthopOperation::New),
            RTM_DELNEXTHOP => Some(NexthopOperation::Delete),
            RTM_GETNEXTHOP => Some(NexthopOperation::Get),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NexthopHeader {
    /// `AF_INET`, `AF_INET6`, or `AF_UNSPEC` for groups and blackholes.
    pub family: u8,
    pub scope: u8,
    /// Who installed it (`RTPROT_*`); ours carry the backend's own number.
    pub protocol: u8,
    pub flags: u32,
}

/// One member of a group: a nexthop id and its weight (1..=256).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupMember {
    pub id: u32,
    pub weight: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NexthopAttribute {
    Id(u32),
    Group(Vec<GroupMember>),
    Blackhole,
    Oif(u32),
    Gateway(IpAddr),
    Other(DefaultNla),
}

impl Nla for NexthopAttribute {
    fn value_len(&self) -> usize {
        match self {
            NexthopAttribute::Id(_) | NexthopAttribute::Oif(_) => 4,
            NexthopAttribute::Group(members) => members.len() * GROUP_ENTRY_LEN,
            NexthopAttribute::Blackhole => 0,
            NexthopAttribute::Gateway(IpAddr::V4(_)) => 4,
            NexthopAttribute::Gateway(IpAddr::V6(_)) => 16,
            NexthopAttribute::Other(nla) => nla.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        match self {
            NexthopAttribute::Id(_) => NHA_ID,
            NexthopAttribute::Group(_) => NHA_GROUP,
            NexthopAttribute::Blackhole => NHA_BLACKHOLE,
            NexthopAttribute::Oif(_) => NHA_OIF,
            NexthopAttribute::Gateway(_) => NHA_GATEWAY,
            NexthopAttribute::Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match self {
            NexthopAttribute::Id(value) | NexthopAttribute::Oif(value) => {
                buffer[..4].copy_from_slice(&value.to_ne_bytes())
            }
            NexthopAttribute::Group(members) => {
                for (member, entry) in members.iter().zip(buffer.chunks_exact_mut(GROUP_ENTRY_LEN)) {
                    // The kernel stores weight - 1 (so 0 means 1), low byte
                    // then high byte.
                    let weight = member.weight.clamp(1, 256) - 1;
                    entry[0..4].copy_from_slice(&member.id.to_ne_bytes());
                    entry[4] = (weight & 0xff) as u8;
                    entry[5] = (weight >> 8) as u8;
                    entry[6..8].copy_from_slice(&[0, 0]);
                }
            }
            NexthopAttribute::Blackhole => {}
            NexthopAttribute::Gateway(IpAddr::V4(ip)) => buffer[..4].copy_from_slice(&ip.octets()),
            NexthopAttribute::Gateway(IpAddr::V6(ip)) => buffer[..16].copy_from_slice(&ip.octets()),
            NexthopAttribute::Other(nla) => nla.emit_value(buffer),
        }
    }
}

fn u32_of(payload: &[u8], what: &str) -> Result<u32, DecodeError> {
    let bytes: [u8; 4] = payload
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| DecodeError::from(format!("{what}: {} bytes, need 4", payload.len())))?;
    Ok(u32::from_ne_bytes(bytes))
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for NexthopAttribute {
    fn parse(buf: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let payload = buf.value();
        Ok(match buf.kind() {
            NHA_ID => NexthopAttribute::Id(u32_of(payload, "NHA_ID")?),
            NHA_OIF => NexthopAttribute::Oif(u32_of(payload, "NHA_OIF")?),
            NHA_BLACKHOLE => NexthopAttribute::Blackhole,
            NHA_GATEWAY => NexthopAttribute::Gateway(match payload.len() {
                4 => IpAddr::V4(Ipv4Addr::new(payload[0], payload[1], payload[2], payload[3])),
                16 => {
                    let octets: [u8; 16] = payload.try_into().expect("16 bytes");
                    IpAddr::V6(Ipv6Addr::from(octets))
                }
                n => return Err(format!("NHA_GATEWAY of {n} bytes").into()),
            }),
            NHA_GROUP => {
                if !payload.len().is_multiple_of(GROUP_ENTRY_LEN) {
                    return Err(format!("NHA_GROUP of {} bytes", payload.len()).into());
                }
                NexthopAttribute::Group(
                    payload
                        .chunks_exact(GROUP_ENTRY_LEN)
                        .map(|entry| GroupMember {
                            id: u32::from_ne_bytes(entry[0..4].try_into().expect("4 bytes")),
                            weight: (u16::from(entry[4]) | (u16::from(entry[5]) << 8)) + 1,
                        })
                        .collect(),
                )
            }
            _ => NexthopAttribute::Other(DefaultNla::parse(buf)?),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NexthopMessage {
    pub operation: NexthopOperation,
    pub header: NexthopHeader,
    pub attributes: Vec<NexthopAttribute>,
}

impl NexthopMessage {
    pub fn new(operation: NexthopOperation, header: NexthopHeader) -> NexthopMessage {
        NexthopMessage { operation, header, attributes: Vec::new() }
    }

    pub fn id(&self) -> Option<u32> {
        self.attributes.iter().find_map(|a| match a {
            NexthopAttribute::Id(id) => Some(*id),
            _ => None,
        })
    }

    pub fn group(&self) -> Option<&[GroupMember]> {
        self.attributes.iter().find_map(|a| match a {
            NexthopAttribute::Group(members) => Some(members.as_slice()),
            _ => None,
        })
    }

    pub fn buffer_len(&self) -> usize {
        field::HEADER_LEN + self.attributes.as_slice().buffer_len()
    }

    pub fn emit(&self, buffer: &mut [u8]) {
        buffer[field::FAMILY] = self.header.family;
        buffer[field::SCOPE] = self.header.scope;
        buffer[field::PROTOCOL] = self.header.protocol;
        buffer[3] = 0;
        buffer[field::FLAGS].copy_from_slice(&self.header.flags.to_ne_bytes());
        self.attributes.as_slice().emit(&mut buffer[field::HEADER_LEN..]);
    }

    pub fn parse(operation: NexthopOperation, payload: &[u8]) -> Result<NexthopMessage, DecodeError> {
        if payload.len() < field::HEADER_LEN {
            return Err(format!("nhmsg of {} bytes", payload.len()).into());
        }
        let header = NexthopHeader {
            family: payload[field::FAMILY],
            scope: payload[field::SCOPE],
            protocol: payload[field::PROTOCOL],
            flags: u32::from_ne_bytes(payload[field::FLAGS].try_into().expect("4 bytes")),
        };
        let mut attributes = Vec::new();
        for nla in NlasIterator::new(&payload[field::HEADER_LEN..]) {
            attributes.push(NexthopAttribute::parse(&nla?)?);
        }
        Ok(NexthopMessage { operation, header, attributes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_round_trips_with_weights_offset_by_one() {
        let mut message =
            NexthopMessage::new(NexthopOperation::New, NexthopHeader { protocol: 196, ..NexthopHeader::default() });
        message.attributes.push(NexthopAttribute::Id(7));
        message
            .attributes
            .push(NexthopAttribute::Group(vec![GroupMember { id: 1, weight: 1 }, GroupMember { id: 2, weight: 256 }]));
        let mut buffer = vec![0; message.buffer_len()];
        message.emit(&mut buffer);
        // nhmsg (8), NHA_ID (8), NHA_GROUP's header (4): entries from byte 20;
        // the kernel stores weight - 1.
        assert_eq!((buffer[24], buffer[32], buffer[33]), (0, 255, 0));
        let parsed = NexthopMessage::parse(NexthopOperation::New, &buffer).unwrap();
        assert_eq!(parsed, message);
        assert_eq!(parsed.id(), Some(7));
    }

    #[test]
    fn gateway_of_either_family_round_trips() {
        for gateway in ["10.0.0.2".parse::<IpAddr>().unwrap(), "fd00::2".parse().unwrap()] {
            let mut message = NexthopMessage::new(NexthopOperation::New, NexthopHeader::default());
            message.attributes.extend([
                NexthopAttribute::Id(9),
                NexthopAttribute::Oif(3),
                NexthopAttribute::Gateway(gateway),
            ]);
            let mut buffer = vec![0; message.buffer_len()];
            message.emit(&mut buffer);
            assert_eq!(NexthopMessage::parse(NexthopOperation::New, &buffer).unwrap(), message);
        }
    }

    #[test]
    fn malformed_buffers_are_errors_not_panics() {
        assert!(NexthopMessage::parse(NexthopOperation::New, &[0; 7]).is_err());
        // An NHA_ID of 2 bytes.
        let buffer = [2, 0, 0, 0, 0, 0, 0, 0, 6, 0, 1, 0, 1, 0, 0, 0];
        assert!(NexthopMessage::parse(NexthopOperation::New, &buffer).is_err());
        // An NHA_GROUP that is not a whole number of entries.
        let buffer = [0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 2, 0, 1, 2, 3, 0];
        assert!(NexthopMessage::parse(NexthopOperation::New, &buffer).is_err());
        // An attribute longer than the buffer.
        let buffer = [0, 0, 0, 0, 0, 0, 0, 0, 40, 0, 1, 0];
        assert!(NexthopMessage::parse(NexthopOperation::New, &buffer).is_err());
    }
}
