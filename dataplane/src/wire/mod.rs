//! Wire formats, one module per format, in the style of smoltcp's `wire`:
//!
//! * a zero-copy typed view (`Frame<T>`, `Packet<T>`) over any `AsRef<[u8]>`,
//!   with field offsets named once in a `field` module;
//! * `new_checked`, which validates lengths so that every accessor after it is
//!   in bounds (accessors on an unchecked view may panic, checked ones never);
//! * an owned representation (`...Repr`) with `parse` (never panics, returns a
//!   typed [`Error`]) and `emit` into a caller-provided buffer.

pub mod arp;
pub mod checksum;
pub mod ethernet;
pub mod ib;
pub mod icmpv4;
pub mod icmpv6;
pub mod ipv4;
pub mod ipv6;
pub mod link_crc;
pub mod lldp;
pub mod mac_control;
pub mod udp;
pub mod vlan;
pub mod vxlan;

use core::fmt;

/// Why a buffer could not be read as a given format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// The buffer is shorter than the format (or its own length field) requires.
    Truncated,
    /// A checksum in the buffer does not match its contents.
    BadChecksum,
    /// A well-formed value this implementation does not handle (version,
    /// hardware type, opcode...).
    Unsupported,
    /// A field holds a value the format forbids (a length below the header
    /// size, a reserved bit set where it must be zero...).
    Malformed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::Truncated => "truncated",
            Error::BadChecksum => "bad checksum",
            Error::Unsupported => "unsupported",
            Error::Malformed => "malformed",
        })
    }
}

impl std::error::Error for Error {}

pub type Result<T> = core::result::Result<T, Error>;

/// A byte range inside a header: `buf[field::SRC]`.
pub(crate) type Field = core::ops::Range<usize>;
/// The bytes from an offset to the end of the buffer.
pub(crate) type Rest = core::ops::RangeFrom<usize>;

/// A big-endian 16-bit field. Panics if `field` is out of bounds, which a
/// view's `check_len` rules out for its own fields.
pub(crate) fn read_u16(buffer: &[u8], field: Field) -> u16 {
    let data = &buffer[field];
    u16::from_be_bytes([data[0], data[1]])
}

pub(crate) fn write_u16(buffer: &mut [u8], field: Field, value: u16) {
    buffer[field].copy_from_slice(&value.to_be_bytes());
}

pub use arp::{ArpPacket, ArpRepr};
pub use ethernet::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr};
pub use ib::{DataPacket, FlowControlPacket, FlowControlRepr, IbFrame, IbPacketRepr, LrhRepr};
pub use icmpv4::{Icmpv4Packet, Icmpv4Repr};
pub use icmpv6::{Icmpv6Packet, Icmpv6Repr, NdOption};
pub use ipv4::{Ecn, IpProtocol, Ipv4Packet, Ipv4Repr};
pub use ipv6::{Ipv6Packet, Ipv6Repr, UpperLayer, walk_extension_headers};
pub use lldp::{ChassisId, LldpPdu, LldpRepr, PortId};
pub use mac_control::{MacControlPacket, MacControlRepr};
pub use udp::{PseudoHeader, UdpPacket, UdpRepr};
pub use vlan::{VlanId, VlanTag, VlanTagRepr};
pub use vxlan::{VXLAN_PORT, VxlanPacket, VxlanRepr};
