//! IPv4 fragmentation of forwarded datagrams larger than the egress MTU
//! that allow it (DF clear): RFC 1812 section 4.2.2.7 makes it a router's
//! duty, RFC 791 section 3.2 says how.

use super::context::Stages;
use super::router::{Adjacency, Sent};
use crate::pipeline::counters::DropReason;
use crate::pipeline::output::Output;
use crate::pipeline::tables::RifId;
use crate::wire::{EtherType, Ipv4Packet, ipv4};

/// Fragment data is counted in 8-octet units (RFC 791 "fragment offset").
const FRAGMENT_UNIT: usize = 8;

impl Stages {
    /// Sends `ip` (a whole, validated IPv4 datagram with DF clear and a TTL
    /// above 1) to `adjacency` in fragments of at most `mtu` octets: every
    /// fragment with the datagram's ID, its TTL one less, offsets relative
    /// to the datagram's own (it may be a fragment already), MF on all but
    /// the last (and on that one too if the datagram had it); the first
    /// with all the options, the others with the copied ones only.
    pub(crate) fn send_fragments(
        &mut self,
        now: u64,
        ingress: RifId,
        adjacency: Adjacency,
        ip: &[u8],
        mtu: usize,
        out: &mut Output,
    ) -> Result<Sent, DropReason> {
        let packet = Ipv4Packet::new_unchecked(ip);
        let header_len = packet.header_len();
        let mut later_options = [0u8; 40];
        let later_options_len =
            ipv4::copied_options(packet.options(), &mut later_options).map_err(|_| DropReason::Malformed)?;
        let data = &ip[header_len..usize::from(packet.total_len())];
        let (first_offset, datagram_more) = (usize::from(packet.frag_offset()), packet.more_frags());
        if first_offset + data.len() > usize::from(u16::MAX) {
            // Past the largest datagram: no offset field can say where.
            return Err(DropReason::Malformed);
        }
        let mut sent = 0;
        let mut held = false;
        while sent < data.len() {
            let this_header_len = if sent == 0 { header_len } else { ipv4::HEADER_LEN + later_options_len };
            let room = mtu.saturating_sub(this_header_len) / FRAGMENT_UNIT * FRAGMENT_UNIT;
            if room == 0 {
                return Err(DropReason::MtuExceeded);
            }
            let chunk = room.min(data.len() - sent);
            let last = sent + chunk == data.len();
            let len = this_header_len + chunk;
            let fate = self.send_ip(now, Some(ingress), adjacency, EtherType::Ipv4, len, out, |buf| {
                buf[..ipv4::HEADER_LEN].copy_from_slice(&ip[..ipv4::HEADER_LEN]);
                if sent == 0 {
                    buf[ipv4::HEADER_LEN..header_len].copy_from_slice(packet.options());
                } else {
                    buf[ipv4::HEADER_LEN..this_header_len].copy_from_slice(&later_options[..later_options_len]);
                }
                buf[this_header_len..].copy_from_slice(&data[sent..sent + chunk]);
                let mut fragment = Ipv4Packet::new_unchecked(buf);
                fragment.set_header_len(this_header_len);
                fragment.set_total_len(len as u16);
                fragment.set_more_frags(!last || datagram_more);
                fragment.set_frag_offset((first_offset + sent) as u16);
                fragment.set_ttl(packet.ttl() - 1);
                fragment.fill_checksum();
            })?;
            held |= fate == Sent::Held;
            sent += chunk;
        }
        Ok(if held { Sent::Held } else { Sent::Now })
    }
}
