//! The IB-like plane's link-level algorithms, modelled on the InfiniBand
//! Architecture Specification vol. 1 (IBA) chapter 7: credit-based flow
//! control per data virtual lane ([`credit`]) and VL arbitration
//! ([`arbiter`]). Sans-IO: the caller hands in packets' sizes and flow-control
//! packets' fields, and sends what these decide.

pub mod arbiter;
pub mod cc;
pub mod credit;
pub mod lft;
pub mod sl2vl;
pub mod switch;

/// Bytes in one flow-control block and one arbitration weight unit (IBA 7.9.2
/// and 7.6.9.2).
pub const BLOCK_BYTES: u32 = 64;

/// The VL that carries subnet management; never flow controlled, always
/// first in arbitration (IBA 7.6.3).
pub const MANAGEMENT_VL: u8 = 15;

/// Blocks a packet of `wire_bytes` occupies in a receive buffer (rounded up).
pub const fn blocks(wire_bytes: u32) -> u16 {
    wire_bytes.div_ceil(BLOCK_BYTES) as u16
}
