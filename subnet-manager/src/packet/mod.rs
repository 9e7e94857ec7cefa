//! The management datagram wire formats of the InfiniBand Architecture
//! Specification vol. 1 (IBA), byte for byte, in the style of the dataplane's
//! `wire` modules (smoltcp's): a zero-copy typed view over any
//! `AsRef<[u8]>` with its field offsets named once, `new_checked` that
//! guarantees every accessor after it is in bounds, and an owned `...Repr`
//! with `parse` (never panics, typed [`Error`]) and `emit` into the caller's
//! buffer.
//!
//! * [`mad`]: the MAD common header (IBA 13.4.2), methods (13.4.5), the
//!   status field (13.4.7);
//! * [`smp`]: subnet management packets, LID routed (14.2.1.1) and directed
//!   route (14.2.1.2) with hop pointer, hop count, initial and return path;
//! * [`attributes`]: the SMP attributes the SM and its agents exchange
//!   (IBA 14.2.5): NodeInfo, NodeDescription, PortInfo, SwitchInfo,
//!   LinearForwardingTable, SLtoVLMappingTable, VLArbitrationTable, SMInfo
//!   and Notice (13.4.8.2, traps).

use core::fmt;

pub mod attributes;
pub mod mad;
pub mod smp;

pub use attributes::{
    AttributeId, LftBlock, LftBlockRepr, NodeDescription, NodeDescriptionRepr, NodeInfo, NodeInfoRepr, NodeType,
    Notice, NoticeRepr, PortInfo, PortInfoRepr, PortPhysState, PortState, SlToVlRepr, SlToVlTable, SmInfo,
    SmInfoControl, SmInfoRepr, SmState, SwitchInfo, SwitchInfoRepr, VlArbEntry, VlArbRepr, VlArbTable,
};
pub use mad::{InvalidField, MAD_LEN, MadHeader, MadHeaderRepr, MadStatus, Method, MgmtClass};
pub use smp::{Smp, SmpRepr, SmpRouting};

/// Why a buffer could not be read as a given format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// The buffer is shorter than the format requires.
    Truncated,
    /// A well-formed value this implementation does not handle (a MAD base
    /// version other than 1, a management class that is not the SM's).
    Unsupported,
    /// A field holds a value the format forbids (a hop pointer past the
    /// path, a hop count above 63, a 4-bit field above its range).
    Malformed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::Truncated => "truncated",
            Error::Unsupported => "unsupported",
            Error::Malformed => "malformed",
        })
    }
}

impl std::error::Error for Error {}

pub type Result<T> = core::result::Result<T, Error>;

/// Reads `len` (1..=8) big-endian bytes at `offset`. Panics when out of
/// bounds, which a view's `check_len` rules out for its own fields.
#[inline]
pub(crate) fn read_be(buffer: &[u8], offset: usize, len: usize) -> u64 {
    buffer[offset..offset + len].iter().fold(0u64, |acc, &byte| (acc << 8) | u64::from(byte))
}

#[inline]
pub(crate) fn write_be(buffer: &mut [u8], offset: usize, len: usize, value: u64) {
    for (index, byte) in buffer[offset..offset + len].iter_mut().enumerate() {
        *byte = (value >> (8 * (len - 1 - index))) as u8;
    }
}

/// Mask of the `width` low bits.
#[inline]
pub(crate) const fn low_bits(width: u32) -> u64 {
    if width >= 64 { u64::MAX } else { (1u64 << width) - 1 }
}

/// Generates the getters (on `AsRef<[u8]>`) and setters (on `AsMut<[u8]>`)
/// of a view from one table of fields. Each field is `bytes` big-endian
/// bytes at `offset`, of which the `width` bits above `shift` belong to it,
/// the way IBA's attribute tables give bit offsets and lengths. A setter
/// keeps the other bits of the bytes it touches.
macro_rules! view_fields {
    ($view:ident {
        $( $(#[$doc:meta])* $get:ident, $set:ident: $ty:ty = [$offset:expr, $bytes:expr, $shift:expr, $width:expr]; )*
    }) => {
        impl<T: AsRef<[u8]>> $view<T> {
            $(
                $(#[$doc])*
                #[inline]
                pub fn $get(&self) -> $ty {
                    let word = $crate::packet::read_be(self.buffer.as_ref(), $offset, $bytes);
                    ((word >> $shift) & $crate::packet::low_bits($width)) as $ty
                }
            )*
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
            $(
                #[inline]
                pub fn $set(&mut self, value: $ty) {
                    let buffer = self.buffer.as_mut();
                    let mask = $crate::packet::low_bits($width) << $shift;
                    let word = $crate::packet::read_be(buffer, $offset, $bytes);
                    let word = (word & !mask) | ((u64::from(value) << $shift) & mask);
                    $crate::packet::write_be(buffer, $offset, $bytes, word);
                }
            )*
        }
    };
}
pub(crate) use view_fields;

/// The common parts of a fixed-length view: constructors, length check,
/// access to the buffer.
macro_rules! fixed_view {
    ($(#[$doc:meta])* $view:ident, $len:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $view<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $view<T> {
            /// Bytes this view reads; anything after them is ignored.
            pub const LEN: usize = $len;

            pub const fn new_unchecked(buffer: T) -> $view<T> {
                $view { buffer }
            }

            /// A view whose accessors are all in bounds, or
            /// [`Error::Truncated`](crate::packet::Error::Truncated).
            pub fn new_checked(buffer: T) -> $crate::packet::Result<$view<T>> {
                if buffer.as_ref().len() < Self::LEN {
                    return Err($crate::packet::Error::Truncated);
                }
                Ok($view { buffer })
            }

            pub fn into_inner(self) -> T {
                self.buffer
            }

            pub fn as_bytes(&self) -> &[u8] {
                &self.buffer.as_ref()[..Self::LEN]
            }
        }
    };
}
pub(crate) use fixed_view;
