//! Completing checksums a sender left to offload.
//!
//! A host whose veth keeps tx checksum offload hands TCP and UDP to the
//! device with only the pseudo-header sum in the checksum field
//! (`CHECKSUM_PARTIAL`); real hardware would fill in the rest on the way to
//! the wire. A veth has no wire: the peer receives the frame as is and an
//! `AF_PACKET` ring marks it `TP_STATUS_CSUMNOTREADY`. Forwarded unchanged,
//! such a frame reaches the far host with a wrong checksum and is dropped
//! there, so the port adapter completes the checksum, as the wire would
//! have: it is part of receiving, not of forwarding.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::wire::checksum;

pub(super) const ETHERTYPE_IPV4: u16 = 0x0800;
pub(super) const ETHERTYPE_IPV6: u16 = 0x86dd;
pub(super) const ETHERTYPE_VLAN: u16 = 0x8100;
pub(super) const ETHERTYPE_QINQ: u16 = 0x88a8;
pub(super) const PROTO_TCP: u8 = 6;
pub(super) const PROTO_UDP: u8 = 17;

pub(super) fn be16(frame: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]))
}

/// Recomputes the TCP or UDP checksum of an Ethernet frame (802.1Q/ad tags
/// allowed) carrying IPv4 or IPv6 without extension headers. Returns false,
/// leaving the frame as it was, for anything else or anything inconsistent
/// (a truncated header, a length past the end, an IPv4 fragment).
pub fn complete_l4_checksum(frame: &mut [u8]) -> bool {
    let mut ethertype_at = 12;
    let mut ethertype = match be16(frame, ethertype_at) {
        Some(t) => t,
        None => return false,
    };
    while ethertype == ETHERTYPE_VLAN || ethertype == ETHERTYPE_QINQ {
        ethertype_at += 4;
        ethertype = match be16(frame, ethertype_at) {
            Some(t) => t,
            None => return false,
        };
    }
    let l3 = ethertype_at + 2;
    let (protocol, l4, l4_len, pseudo) = match ethertype {
        ETHERTYPE_IPV4 => {
            let Some(header) = frame.get(l3..l3 + 20) else { return false };
            let ihl = usize::from(header[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([header[2], header[3]]));
            let fragment = u16::from_be_bytes([header[6], header[7]]) & 0x3fff;
            if header[0] >> 4 != 4 || ihl < 20 || total < ihl || l3 + total > frame.len() || fragment != 0 {
                return false;
            }
            let src = Ipv4Addr::new(header[12], header[13], header[14], header[15]);
            let dst = Ipv4Addr::new(header[16], header[17], header[18], header[19]);
            let l4_len = total - ihl;
            (header[9], l3 + ihl, l4_len, checksum::pseudo_header_v4(src, dst, header[9], l4_len as u32))
        }
        ETHERTYPE_IPV6 => {
            let Some(header) = frame.get(l3..l3 + 40) else { return false };
            let l4_len = usize::from(u16::from_be_bytes([header[4], header[5]]));
            if header[0] >> 4 != 6 || l3 + 40 + l4_len > frame.len() {
                return false;
            }
            let src: [u8; 16] = header[8..24].try_into().expect("16 bytes");
            let dst: [u8; 16] = header[24..40].try_into().expect("16 bytes");
            let pseudo = checksum::pseudo_header_v6(Ipv6Addr::from(src), Ipv6Addr::from(dst), header[6], l4_len as u32);
            (header[6], l3 + 40, l4_len, pseudo)
        }
        _ => return false,
    };
    let field = match protocol {
        PROTO_TCP if l4_len >= 20 => l4 + 16,
        PROTO_UDP if l4_len >= 8 => l4 + 6,
        _ => return false,
    };
    frame[field] = 0;
    frame[field + 1] = 0;
    let mut value = checksum::finish(pseudo + checksum::sum(&frame[l4..l4 + l4_len]));
    // RFC 768: a computed UDP checksum of zero is sent as all ones.
    if protocol == PROTO_UDP && value == 0 {
        value = 0xffff;
    }
    frame[field..field + 2].copy_from_slice(&value.to_be_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet + IPv4 + UDP frame with a correct checksum.
    fn udp_v4(tagged: bool) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
        if tagged {
            f.extend([0x81, 0x00, 0x00, 0x0a]);
        }
        f.extend([0x08, 0x00]);
        let payload = b"checksum me";
        let udp_len = 8 + payload.len();
        let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, PROTO_UDP, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2];
        ip[2..4].copy_from_slice(&((20 + udp_len) as u16).to_be_bytes());
        let ip_sum = checksum::checksum(&ip);
        ip[10..12].copy_from_slice(&ip_sum.to_be_bytes());
        f.extend(&ip);
        f.extend([0x30, 0x39, 0x00, 0x09]);
        f.extend((udp_len as u16).to_be_bytes());
        f.extend([0, 0]);
        f.extend(payload);
        let l4 = f.len() - udp_len;
        let pseudo = checksum::pseudo_header_v4(
            Ipv4Addr::new(192, 0, 2, 1),
            Ipv4Addr::new(192, 0, 2, 2),
            PROTO_UDP,
            udp_len as u32,
        );
        let sum = checksum::finish(pseudo + checksum::sum(&f[l4..]));
        f[l4 + 6..l4 + 8].copy_from_slice(&sum.to_be_bytes());
        f
    }

    #[test]
    fn a_partial_checksum_becomes_the_full_one() {
        for tagged in [false, true] {
            let good = udp_v4(tagged);
            let mut partial = good.clone();
            let at = partial.len() - 11 - 2;
            // What a sender with offload leaves: some other value.
            partial[at..at + 2].copy_from_slice(&[0x12, 0x34]);
            assert!(complete_l4_checksum(&mut partial));
            assert_eq!(partial, good, "tagged: {tagged}");
        }
    }

    #[test]
    fn anything_else_is_left_alone() {
        let mut arp = vec![0xff; 6];
        arp.extend([0x02, 0, 0, 0, 0, 1, 0x08, 0x06]);
        arp.resize(42, 0);
        let copy = arp.clone();
        assert!(!complete_l4_checksum(&mut arp));
        assert_eq!(arp, copy);
        // A length field past the end of the frame.
        let mut lying = udp_v4(false);
        lying[16..18].copy_from_slice(&1500u16.to_be_bytes());
        let copy = lying.clone();
        assert!(!complete_l4_checksum(&mut lying));
        assert_eq!(lying, copy);
        // Truncated anywhere: never a panic.
        let good = udp_v4(true);
        for cut in 0..good.len() {
            let mut short = good[..cut].to_vec();
            let _ = complete_l4_checksum(&mut short);
        }
    }
}
