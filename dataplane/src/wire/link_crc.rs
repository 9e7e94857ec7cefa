//! The link CRC of the IB-like plane: IBA vol. 1 7.8.2 (VCRC, over every data
//! packet) and 7.9.4.3 (LPCRC, over flow-control packets).
//!
//! The VCRC is on the per-packet path of every hop (it is regenerated on
//! each link), and over a 264-byte packet even slice-by-16 tables cost most
//! of a switch's time per packet. Where the CPU multiplies carry-less
//! (PCLMULQDQ) the message is folded 16 bytes at a time instead, as in
//! Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ":
//! a 128-bit block `B` followed by `D` more bits of message is worth
//! `B * x^D mod P`, which two carry-less products of its halves by constants
//! `x^n mod P` give; the last block is carried onto 64 bits and reduced to
//! the CRC with Barrett's method, four more products. Short inputs and other CPUs use slice-by-16
//! tables. No crate offers this for a 16-bit CRC at this length: the
//! generic SIMD one (crc-fast) measured slower than the tables on 264 bytes.

use crc::{Algorithm, Crc, Table};

/// IBA's link CRC in the Rocksoft model: polynomial x^16 + x^12 + x^3 + x +
/// 1 (0x100B), seeded with all ones, bits processed least significant first
/// and the remainder inverted.
pub const VCRC: Algorithm<u16> = Algorithm {
    width: 16,
    poly: 0x100b,
    init: 0xffff,
    refin: true,
    refout: true,
    xorout: 0xffff,
    check: 0x0a3d,
    residue: 0,
};

/// Slice-by-16 tables (8 KiB): short inputs, CPUs without PCLMULQDQ.
static TABLE_CRC: Crc<u16, Table<16>> = Crc::<u16, Table<16>>::new(&VCRC);

/// The CRC of IBA's VCRC and LPCRC over `bytes`.
pub fn link_crc(bytes: &[u8]) -> u16 {
    #[cfg(target_arch = "x86_64")]
    if bytes.len() >= fold::MIN_LEN && std::arch::is_x86_feature_detected!("pclmulqdq") {
        // SAFETY: the CPU has PCLMULQDQ (checked just above); SSE2 is part
        // of x86_64.
        return unsafe { fold::link_crc(bytes) };
    }
    TABLE_CRC.checksum(bytes)
}

#[cfg(target_arch = "x86_64")]
mod fold {
    use std::arch::x86_64::{
        __m128i, _mm_clmulepi64_si128, _mm_cvtsi64_si128, _mm_cvtsi128_si64, _mm_loadu_si128, _mm_set_epi64x,
        _mm_unpackhi_epi64, _mm_xor_si128,
    };

    use super::VCRC;

    /// Below four blocks the tables are as fast.
    pub const MIN_LEN: usize = 64;

    const BLOCK: usize = 16;

    /// `x^n mod P`, bit `m` holding the coefficient of `x^m`.
    const fn x_pow_mod(n: u32) -> u16 {
        let mut remainder: u16 = 1;
        let mut i = 0;
        while i < n {
            let carry = remainder & 0x8000 != 0;
            remainder <<= 1;
            if carry {
                remainder ^= VCRC.poly;
            }
            i += 1;
        }
        remainder
    }

    /// The two constants that carry a block `distance` bits further down the
    /// message.
    ///
    /// The CRC is reflected, so a block loaded little-endian holds the
    /// coefficient of `x^(127-j)` in bit `j`: its low half `lo` is the
    /// polynomial `L * x^64`, its high half `hi` the polynomial `H`, each
    /// `L = sum lo_j x^(63-j)`. A carry-less product `lo * c` holds in bit
    /// `i + j` the coefficient of `x^(127-i-j) = x^(63-i) * x^(64-j)`, so a
    /// constant `K` of degree below 16 is written with its `x^m` at bit
    /// `63 - m` and multiplies by `x * K`; the constants are therefore
    /// `x^(distance + 63)` for the low half and `x^(distance - 1)` for the
    /// high half. Their products have degree below 80: they stay a block.
    const fn fold_constants(distance: u32) -> [u64; 2] {
        let low = (x_pow_mod(distance + 63) as u64).reverse_bits();
        let high = (x_pow_mod(distance - 1) as u64).reverse_bits();
        [low, high]
    }

    const BY_1_BLOCK: [u64; 2] = fold_constants(128);
    const BY_2_BLOCKS: [u64; 2] = fold_constants(256);
    const BY_3_BLOCKS: [u64; 2] = fold_constants(384);
    const BY_4_BLOCKS: [u64; 2] = fold_constants(512);
    /// Carries the low half onto the high half: `x^64 mod P` (the low-half
    /// constant of distance 0).
    const HALF: u64 = (x_pow_mod(63) as u64).reverse_bits();

    /// `floor(x^80 / P) - x^64`, for Barrett's reduction of a polynomial of
    /// degree below 80 (bit `m` the coefficient of `x^m`).
    const BARRETT_MU: u64 = {
        let divisor: u128 = (1 << 16) | VCRC.poly as u128;
        let mut remainder: u128 = 1 << 80;
        let mut quotient: u128 = 0;
        let mut degree = 80;
        while degree >= 16 {
            if remainder & (1 << degree) != 0 {
                quotient |= 1 << (degree - 16);
                remainder ^= divisor << (degree - 16);
            }
            degree -= 1;
        }
        (quotient ^ (1 << 64)) as u64
    };

    #[target_feature(enable = "pclmulqdq")]
    fn constants([low, high]: [u64; 2]) -> __m128i {
        _mm_set_epi64x(high as i64, low as i64)
    }

    /// `block * x^distance`, reduced to a block, for the `constants` of
    /// that distance.
    #[target_feature(enable = "pclmulqdq")]
    fn carry(block: __m128i, constants: __m128i) -> __m128i {
        _mm_xor_si128(_mm_clmulepi64_si128(block, constants, 0x00), _mm_clmulepi64_si128(block, constants, 0x11))
    }

    #[target_feature(enable = "pclmulqdq")]
    fn load(block: &[u8]) -> __m128i {
        assert!(block.len() >= BLOCK);
        // SAFETY: 16 readable bytes (asserted); the load is unaligned.
        unsafe { _mm_loadu_si128(block.as_ptr().cast()) }
    }

    #[target_feature(enable = "pclmulqdq")]
    fn from_u128(value: u128) -> __m128i {
        _mm_set_epi64x((value >> 64) as i64, value as i64)
    }

    /// The 64-bit carry-less product of `a` and `b`, low and high halves.
    #[target_feature(enable = "pclmulqdq")]
    fn multiply(a: u64, b: u64) -> (u64, u64) {
        let product = _mm_clmulepi64_si128(_mm_cvtsi64_si128(a as i64), _mm_cvtsi64_si128(b as i64), 0x00);
        (_mm_cvtsi128_si64(product) as u64, _mm_cvtsi128_si64(_mm_unpackhi_epi64(product, product)) as u64)
    }

    /// # Safety
    /// The CPU must have PCLMULQDQ; `bytes` at least [`MIN_LEN`] long.
    #[target_feature(enable = "pclmulqdq")]
    pub unsafe fn link_crc(bytes: &[u8]) -> u16 {
        // Zero bytes ahead of the message make it whole blocks and change
        // nothing for a zero-seeded CRC: its first `short` bytes become the
        // end of a block of their own, and no partial block is left at the
        // end. The all-ones seed is the same as the message's first two
        // bytes inverted, wherever they land.
        let short = bytes.len() % BLOCK;
        let (first, rest) = bytes.split_at(short);
        let leading = u128::from_le_bytes(bytes[..BLOCK].try_into().expect("MIN_LEN is four blocks"));
        let seed: u128 = 0xffff;
        let first_block = (leading ^ seed).checked_shl(8 * (BLOCK - short) as u32).unwrap_or(0);
        let second_seed = seed >> (8 * first.len());
        // Four lanes, each a block apart, each carried four blocks on: the
        // products of one lane do not wait for those of another.
        let (rest_head, rest) = rest.split_at(3 * BLOCK);
        let mut lanes = [
            from_u128(first_block),
            _mm_xor_si128(load(rest_head), from_u128(second_seed)),
            load(&rest_head[BLOCK..]),
            load(&rest_head[2 * BLOCK..]),
        ];
        let by_4_blocks = constants(BY_4_BLOCKS);
        let mut groups = rest.chunks_exact(lanes.len() * BLOCK);
        for group in &mut groups {
            for (lane, block) in lanes.iter_mut().zip(group.chunks_exact(BLOCK)) {
                *lane = _mm_xor_si128(carry(*lane, by_4_blocks), load(block));
            }
        }
        let [first, second, third, fourth] = lanes;
        let mut folded = _mm_xor_si128(
            _mm_xor_si128(carry(first, constants(BY_3_BLOCKS)), carry(second, constants(BY_2_BLOCKS))),
            _mm_xor_si128(carry(third, constants(BY_1_BLOCK)), fourth),
        );
        let by_1_block = constants(BY_1_BLOCK);
        for block in groups.remainder().chunks_exact(BLOCK) {
            folded = _mm_xor_si128(carry(folded, by_1_block), load(block));
        }
        // The last block as 64 bits: its low half carried onto its high
        // half leaves a product of degree below 80, which reaches 16 bits
        // into the low half; carried again, that part's product has degree
        // below 32, all in the high half.
        let low = _mm_cvtsi128_si64(folded) as u64;
        let high = _mm_cvtsi128_si64(_mm_unpackhi_epi64(folded, folded)) as u64;
        let (spilled, carried) = multiply(low, HALF);
        let (_, carried_again) = multiply(spilled, HALF);
        // Unreflected (bit m the coefficient of x^m), the CRC is
        // `w * x^16 mod P`: Barrett's quotient `q = floor(w * mu / x^64)`,
        // and as `w * x^16` has no terms below x^16, the remainder is the
        // low 16 bits of `q * P`.
        let w = (high ^ carried ^ carried_again).reverse_bits();
        let (_, quotient_high) = multiply(w, BARRETT_MU);
        let quotient = w ^ quotient_high;
        let (remainder, _) = multiply(quotient, VCRC.poly.into());
        (remainder as u16).reverse_bits() ^ VCRC.xorout
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The model bit by bit, with no tables.
    static BITWISE: Crc<u16, crc::NoTable> = Crc::<u16, crc::NoTable>::new(&VCRC);

    #[test]
    fn check_value() {
        assert_eq!(link_crc(b"123456789"), VCRC.check);
        assert_eq!(BITWISE.checksum(b"123456789"), VCRC.check);
    }

    #[test]
    fn matches_the_bitwise_model_across_lengths_up_to_the_largest_packet() {
        // Every length through several four-block rounds, then a spread
        // (61 is prime to the block) up to the largest packet.
        let bytes: Vec<u8> = (0..super::super::ib::MAX_PACKET_LEN + 2).map(|i| (i * 131 + i / 7) as u8).collect();
        for len in (0..=600).chain((601..bytes.len()).step_by(61)).chain([bytes.len()]) {
            assert_eq!(link_crc(&bytes[..len]), BITWISE.checksum(&bytes[..len]), "length {len}");
        }
    }

    proptest! {
        #[test]
        fn matches_the_bitwise_model(bytes in proptest::collection::vec(any::<u8>(), 0..1200)) {
            prop_assert_eq!(link_crc(&bytes), BITWISE.checksum(&bytes));
        }
    }
}
