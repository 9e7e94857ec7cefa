//! The RoCE-like host endpoint, sans-IO: the RoCEv2 Base Transport Header
//! (`bth`), the sender's pacer that obeys PFC pauses per priority (`pacer`),
//! DCQCN's reaction point (`dcqcn`) and the receiver (`receiver`: CNPs for
//! CE-marked packets, PSN reordering within a window, goodput/FCT counters).
//!
//! Time is an input in `u64` nanoseconds. Nothing here allocates per packet:
//! the receiver's per-QP state is reserved when it is built.

pub mod bth;
pub mod dcqcn;
pub mod pacer;
pub mod receiver;

#[cfg(test)]
mod closed_loop;

/// RoCEv2's registered UDP destination port (IBA Annex A17, "RoCEv2").
pub const ROCEV2_UDP_PORT: u16 = 4791;

/// Nanoseconds needed to put `bits` on a link of `rate_bps` bits per second
/// (rounded up, so a pacer never runs faster than its rate).
pub fn serialization_ns(bits: u64, rate_bps: u64) -> u64 {
    if rate_bps == 0 {
        return u64::MAX;
    }
    let ns = (bits as u128 * 1_000_000_000u128).div_ceil(rate_bps as u128);
    ns.min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_of_a_1500_byte_frame_at_1_gbps_is_12_us() {
        assert_eq!(serialization_ns(1500 * 8, 1_000_000_000), 12_000);
        assert_eq!(serialization_ns(1, 3), 333_333_334);
        assert_eq!(serialization_ns(8, 0), u64::MAX);
    }
}
