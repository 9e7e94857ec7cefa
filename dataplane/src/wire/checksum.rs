//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).

use std::net::{Ipv4Addr, Ipv6Addr};

/// One's-complement sum of `data` as big-endian 16-bit words, not yet folded
/// or complemented, so that sums over several pieces can be added.
pub fn sum(data: &[u8]) -> u32 {
    let mut acc: u64 = 0;
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_be_bytes(chunk.try_into().unwrap());
        acc += (word >> 48) + ((word >> 32) & 0xffff) + ((word >> 16) & 0xffff) + (word & 0xffff);
    }
    let mut rest = chunks.remainder();
    while rest.len() >= 2 {
        acc += u64::from(u16::from_be_bytes([rest[0], rest[1]]));
        rest = &rest[2..];
    }
    if let Some(&last) = rest.first() {
        acc += u64::from(last) << 8;
    }
    fold64(acc)
}

#[inline]
fn fold64(mut acc: u64) -> u32 {
    while acc > 0xffff_ffff {
        acc = (acc & 0xffff_ffff) + (acc >> 32);
    }
    acc as u32
}

/// Folds a partial sum to 16 bits and complements it: the value to store.
#[inline]
pub fn finish(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// Checksum of a whole buffer (its checksum field included when verifying:
/// a correct buffer gives 0).
pub fn checksum(data: &[u8]) -> u16 {
    finish(sum(data))
}

/// Partial sum of the IPv4 pseudo-header (RFC 768, RFC 793).
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: u32) -> u32 {
    sum(&src.octets()) + sum(&dst.octets()) + u32::from(protocol) + length
}

/// Partial sum of the IPv6 pseudo-header (RFC 8200 section 8.1).
pub fn pseudo_header_v6(src: Ipv6Addr, dst: Ipv6Addr, next_header: u8, length: u32) -> u32 {
    sum(&src.octets()) + sum(&dst.octets()) + (length >> 16) + (length & 0xffff) + u32::from(next_header)
}

/// RFC 1624 eqn. 3: the new checksum after a 16-bit word of the covered data
/// changed from `old` to `new`, without summing the data again.
#[inline]
pub fn update(checksum: u16, old: u16, new: u16) -> u16 {
    let acc = u32::from(!checksum) + u32::from(!old) + u32::from(new);
    finish(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: the sum of these words is 0xddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(finish(sum(&data)), !0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(sum(&[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
    }

    proptest::proptest! {
        #[test]
        fn incremental_update_matches_full_sum(mut data in proptest::collection::vec(proptest::num::u8::ANY, 2..64), new in proptest::num::u16::ANY) {
            let before = checksum(&data);
            let old = u16::from_be_bytes([data[0], data[1]]);
            data[..2].copy_from_slice(&new.to_be_bytes());
            let full = checksum(&data);
            let incremental = update(before, old, new);
            // 0x0000 and 0xffff are the same number in one's complement.
            proptest::prop_assert!(full == incremental || (full | incremental) == 0xffff && full ^ incremental == 0xffff);
        }
    }
}
