//! Segmenting the TCP super-frames of a peer with TSO/GSO on.
//!
//! A host whose veth keeps the kernel's default offloads hands its TCP
//! stack's output to the device as one frame of up to 64 KiB, for "hardware"
//! to cut into wire-sized segments. A veth has no wire: the switch's end
//! receives the super-frame as is. The port adapter cuts it as the sender's
//! NIC would have (what OVS and VPP do in software with GSO), so the pipeline
//! only ever sees frames of the port's MTU. Like completing checksums, this is
//! part of receiving, not of forwarding.
//!
//! Handled: Ethernet (up to two VLAN tags), IPv4 (any options, not a
//! fragment) or IPv6 (TCP or UDP directly after the fixed header), TCP; and
//! the same inside VXLAN (UDP port 4789), which a host kernel VTEP's
//! tunnel GSO produces. Segments follow Linux's `tcp_gso_segment`: sequence
//! numbers advance by the payload before them, FIN and PSH only on the last
//! segment, CWR only on the first, IPv4 IDs count up from the first; every
//! length and checksum is written in full. The outer UDP checksum of VXLAN
//! over IPv4 is zero (RFC 7348 section 5 allows it), over IPv6 it is
//! computed.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::offload::{ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_QINQ, ETHERTYPE_VLAN, PROTO_TCP, PROTO_UDP, be16};
use crate::wire::checksum;

const VXLAN_PORT: u16 = 4789;
const VXLAN_HEADER_LEN: usize = 8;
const UDP_HEADER_LEN: usize = 8;

// TCP header fields (RFC 9293 section 3.1).
const TCP_SEQ: usize = 4;
const TCP_FLAGS: usize = 13;
const TCP_CHECKSUM: usize = 16;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

/// Why a frame too long for the port could not be segmented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsegmentable {
    /// Not TCP over IPv4/IPv6 (optionally in VXLAN): UDP GSO, an extension
    /// header, an IPv4 fragment, something else.
    NotTcp,
    /// A length field that disagrees with the frame.
    Malformed,
    /// The headers alone leave no room for payload within the MTU.
    HeadersTooLong,
}

/// One IP header on the way to the TCP header: outer (VXLAN's) or inner.
#[derive(Debug, Clone, Copy)]
struct IpHeader {
    at: usize,
    v4: bool,
    /// Header length (IPv4 IHL in bytes, 40 for IPv6).
    len: usize,
}

#[derive(Debug, Clone, Copy)]
struct Layout {
    /// The IP header the MTU applies to: the outermost.
    outer: IpHeader,
    /// VXLAN's UDP header, when the TCP is tunnelled.
    udp: Option<usize>,
    /// The IP header in front of TCP (the same as `outer` without a tunnel).
    inner: IpHeader,
    tcp: usize,
    payload: usize,
}

/// A super-frame being cut into segments; the buffer is allocated once.
pub struct Segmenter {
    frame: Box<[u8]>,
    len: usize,
    layout: Option<Layout>,
    /// Payload octets already sent in segments.
    done: usize,
    segments: u16,
    mss: usize,
}

/// The largest super-frame a veth hands over (`GSO_MAX_SIZE` without BIG TCP),
/// with room for the Ethernet header and two tags.
pub const MAX_SUPER_FRAME: usize = 65_536 + 14 + 8;

/// The IP header at `at` (its EtherType given), and the L4 protocol and
/// offset after it, checked against the frame's length.
fn ip_header(frame: &[u8], ethertype: u16, at: usize) -> Result<(IpHeader, u8, usize), Unsegmentable> {
    match ethertype {
        ETHERTYPE_IPV4 => {
            let header = frame.get(at..at + 20).ok_or(Unsegmentable::Malformed)?;
            let ihl = usize::from(header[0] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([header[2], header[3]]));
            if header[0] >> 4 != 4 || ihl < 20 || total < ihl || at + total != frame.len() {
                return Err(Unsegmentable::Malformed);
            }
            if u16::from_be_bytes([header[6], header[7]]) & 0x3fff != 0 {
                return Err(Unsegmentable::NotTcp);
            }
            Ok((IpHeader { at, v4: true, len: ihl }, header[9], at + ihl))
        }
        ETHERTYPE_IPV6 => {
            let header = frame.get(at..at + 40).ok_or(Unsegmentable::Malformed)?;
            let payload = usize::from(u16::from_be_bytes([header[4], header[5]]));
            if header[0] >> 4 != 6 || at + 40 + payload != frame.len() {
                return Err(Unsegmentable::Malformed);
            }
            Ok((IpHeader { at, v4: false, len: 40 }, header[6], at + 40))
        }
        _ => Err(Unsegmentable::NotTcp),
    }
}

/// The EtherType after the MAC addresses and up to two tags, and where the
/// L3 header starts.
fn skip_l2(frame: &[u8], start: usize) -> Result<(u16, usize), Unsegmentable> {
    let mut at = start + 12;
    let mut ethertype = be16(frame, at).ok_or(Unsegmentable::Malformed)?;
    for _ in 0..2 {
        if ethertype != ETHERTYPE_VLAN && ethertype != ETHERTYPE_QINQ {
            break;
        }
        at += 4;
        ethertype = be16(frame, at).ok_or(Unsegmentable::Malformed)?;
    }
    Ok((ethertype, at + 2))
}

/// Whether a frame's L3 packet fits `mtu` as it is, so it needs no cutting:
/// a jumbo frame read from the socket because it was longer than a ring slot.
pub fn fits_mtu(frame: &[u8], mtu: usize) -> bool {
    skip_l2(frame, 0).is_ok_and(|(_, l3)| frame.len() - l3 <= mtu)
}

fn parse(frame: &[u8]) -> Result<Layout, Unsegmentable> {
    let (ethertype, l3) = skip_l2(frame, 0)?;
    let (outer, protocol, l4) = ip_header(frame, ethertype, l3)?;
    let (udp, inner, protocol, l4) = match protocol {
        PROTO_TCP => (None, outer, protocol, l4),
        PROTO_UDP if be16(frame, l4 + 2) == Some(VXLAN_PORT) => {
            let inner_l2 = l4 + UDP_HEADER_LEN + VXLAN_HEADER_LEN;
            let (ethertype, inner_l3) = skip_l2(frame, inner_l2)?;
            let (inner, protocol, inner_l4) = ip_header(frame, ethertype, inner_l3)?;
            (Some(l4), inner, protocol, inner_l4)
        }
        _ => return Err(Unsegmentable::NotTcp),
    };
    if protocol != PROTO_TCP {
        return Err(Unsegmentable::NotTcp);
    }
    let data_offset = usize::from(*frame.get(l4 + 12).ok_or(Unsegmentable::Malformed)? >> 4) * 4;
    if data_offset < 20 || l4 + data_offset > frame.len() {
        return Err(Unsegmentable::Malformed);
    }
    Ok(Layout { outer, udp, inner, tcp: l4, payload: l4 + data_offset })
}

impl Default for Segmenter {
    fn default() -> Self {
        Segmenter::new()
    }
}

impl Segmenter {
    pub fn new() -> Segmenter {
        Segmenter {
            frame: vec![0; MAX_SUPER_FRAME].into_boxed_slice(),
            len: 0,
            layout: None,
            done: 0,
            segments: 0,
            mss: 0,
        }
    }

    /// Where the next super-frame is written (then [`Segmenter::load`]).
    pub fn buffer(&mut self) -> &mut [u8] {
        &mut self.frame
    }

    /// Takes the `len` bytes written into [`Segmenter::buffer`] as the frame
    /// to cut into segments whose outermost IP packet fits `mtu`.
    pub fn load(&mut self, len: usize, mtu: usize) -> Result<(), Unsegmentable> {
        self.layout = None;
        let frame = &self.frame[..len.min(self.frame.len())];
        let layout = parse(frame)?;
        let headers_in_mtu = layout.payload - layout.outer.at;
        if headers_in_mtu >= mtu {
            return Err(Unsegmentable::HeadersTooLong);
        }
        self.len = frame.len();
        self.layout = Some(layout);
        self.mss = mtu - headers_in_mtu;
        self.done = 0;
        self.segments = 0;
        Ok(())
    }

    /// Forgets the loaded frame and whatever of it was not sent.
    pub fn discard(&mut self) {
        self.layout = None;
    }

    /// Segments still to come from the loaded frame.
    pub fn remaining(&self) -> usize {
        match self.layout {
            Some(layout) => (self.len - layout.payload - self.done).div_ceil(self.mss),
            None => 0,
        }
    }

    /// Writes the next segment into `out` and returns its length; `None`
    /// when every segment was written (or `out` is too small for one).
    pub fn next_segment(&mut self, out: &mut [u8]) -> Option<usize> {
        let layout = self.layout?;
        let total_payload = self.len - layout.payload;
        if self.done >= total_payload {
            self.layout = None;
            return None;
        }
        let chunk = self.mss.min(total_payload - self.done);
        let seg_len = layout.payload + chunk;
        if out.len() < seg_len {
            return None;
        }
        let first = self.done == 0;
        let last = self.done + chunk == total_payload;
        out[..layout.payload].copy_from_slice(&self.frame[..layout.payload]);
        let from = layout.payload + self.done;
        out[layout.payload..seg_len].copy_from_slice(&self.frame[from..from + chunk]);
        let segment = &mut out[..seg_len];

        // TCP: sequence number, flags.
        let tcp = layout.tcp;
        let seq = u32::from_be_bytes(segment[tcp + TCP_SEQ..tcp + TCP_SEQ + 4].try_into().expect("4 bytes"))
            .wrapping_add(self.done as u32);
        segment[tcp + TCP_SEQ..tcp + TCP_SEQ + 4].copy_from_slice(&seq.to_be_bytes());
        if !last {
            segment[tcp + TCP_FLAGS] &= !(TCP_FIN | TCP_PSH);
        }
        if !first {
            segment[tcp + TCP_FLAGS] &= !TCP_CWR;
        }
        // Lengths and IDs, innermost first; checksums follow the lengths.
        let index = self.segments;
        set_ip_lengths(segment, layout.inner, index);
        let tcp_len = seg_len - tcp;
        segment[tcp + TCP_CHECKSUM..tcp + TCP_CHECKSUM + 2].fill(0);
        let sum =
            checksum::finish(pseudo_header(segment, layout.inner, PROTO_TCP, tcp_len) + checksum::sum(&segment[tcp..]));
        segment[tcp + TCP_CHECKSUM..tcp + TCP_CHECKSUM + 2].copy_from_slice(&sum.to_be_bytes());
        if let Some(udp) = layout.udp {
            let udp_len = seg_len - udp;
            segment[udp + 4..udp + 6].copy_from_slice(&(udp_len as u16).to_be_bytes());
            segment[udp + 6..udp + 8].fill(0);
            set_ip_lengths(segment, layout.outer, index);
            if !layout.outer.v4 {
                let mut sum = checksum::finish(
                    pseudo_header(segment, layout.outer, PROTO_UDP, udp_len) + checksum::sum(&segment[udp..]),
                );
                // RFC 768: a computed zero is sent as all ones.
                if sum == 0 {
                    sum = 0xffff;
                }
                segment[udp + 6..udp + 8].copy_from_slice(&sum.to_be_bytes());
            }
        }
        self.done += chunk;
        self.segments = self.segments.wrapping_add(1);
        Some(seg_len)
    }
}

/// Writes an IP header's length for the segment it now heads (and for IPv4
/// its ID, `index` after the super-frame's, and header checksum).
fn set_ip_lengths(segment: &mut [u8], ip: IpHeader, index: u16) {
    let at = ip.at;
    if ip.v4 {
        let total = (segment.len() - at) as u16;
        segment[at + 2..at + 4].copy_from_slice(&total.to_be_bytes());
        let id = u16::from_be_bytes([segment[at + 4], segment[at + 5]]).wrapping_add(index);
        segment[at + 4..at + 6].copy_from_slice(&id.to_be_bytes());
        segment[at + 10..at + 12].fill(0);
        let sum = checksum::checksum(&segment[at..at + ip.len]);
        segment[at + 10..at + 12].copy_from_slice(&sum.to_be_bytes());
    } else {
        let payload = (segment.len() - at - 40) as u16;
        segment[at + 4..at + 6].copy_from_slice(&payload.to_be_bytes());
    }
}

fn pseudo_header(segment: &[u8], ip: IpHeader, protocol: u8, length: usize) -> u32 {
    let at = ip.at;
    if ip.v4 {
        let src: [u8; 4] = segment[at + 12..at + 16].try_into().expect("4 bytes");
        let dst: [u8; 4] = segment[at + 16..at + 20].try_into().expect("4 bytes");
        checksum::pseudo_header_v4(Ipv4Addr::from(src), Ipv4Addr::from(dst), protocol, length as u32)
    } else {
        let src: [u8; 16] = segment[at + 8..at + 24].try_into().expect("16 bytes");
        let dst: [u8; 16] = segment[at + 24..at + 40].try_into().expect("16 bytes");
        checksum::pseudo_header_v6(Ipv6Addr::from(src), Ipv6Addr::from(dst), protocol, length as u32)
    }
}

#[cfg(test)]
mod tests;
