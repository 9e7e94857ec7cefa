//! ICMP redirects: a packet that leaves by the interface it came in on, to
//! a next hop on the sender's own link, tells the sender of the better
//! first hop (RFC 1812 section 5.2.7.2 for IPv4, RFC 4861 section 8.2 for
//! IPv6). The packet is forwarded all the same. Per router interface they
//! can be turned off (`Tables::set_send_redirects`); they share the ICMP
//! error rate limit.

use std::net::{IpAddr, Ipv6Addr};

use super::context::Stages;
use super::icmp::Icmpv4Error;
use super::router::Adjacency;
use crate::pipeline::output::Output;
use crate::pipeline::tables::RifId;
use crate::wire::{EthernetAddress, Icmpv6Repr, Ipv4Packet, Ipv6Packet, icmpv6, ipv6};

/// IPv4 option types of the source routes (RFC 791): loose and strict.
const OPTION_LSRR: u8 = 131;
const OPTION_SSRR: u8 = 137;
/// Any link-local address: asks `source_v6` for the switch's on a link.
const LINK_LOCAL: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0);
/// The most of the redirected packet a redirect carries: the message must
/// fit the IPv6 minimum MTU (RFC 4861 4.6.3): 1280 less the IPv6 header,
/// the redirect's own 40 octets, the target link-layer address option
/// and the redirected header option's 8.
const MAX_REDIRECTED: usize = 1280 - ipv6::HEADER_LEN - icmpv6::REDIRECT_HEADER_LEN - 8 - 8;

impl Stages {
    /// RFC 1812 5.2.7.2: a host redirect when the packet leaves by its
    /// ingress interface, its source and the next hop share a subnet of
    /// it, and it carries no source route. Inline: most packets leave by
    /// another interface, and that one compare is all they pay.
    #[inline]
    pub(crate) fn redirect_v4(&mut self, now: u64, ingress: RifId, ip: &[u8], adjacency: Adjacency, out: &mut Output) {
        if adjacency.rif == ingress {
            self.redirect_v4_same_interface(now, ingress, ip, adjacency, out);
        }
    }

    #[inline(never)]
    fn redirect_v4_same_interface(
        &mut self,
        now: u64,
        ingress: RifId,
        ip: &[u8],
        adjacency: Adjacency,
        out: &mut Output,
    ) {
        let IpAddr::V4(gateway) = adjacency.next_hop else { return };
        if !self.tables.router.sends_redirects(ingress) {
            return;
        }
        let packet = Ipv4Packet::new_unchecked(ip);
        let src = IpAddr::V4(packet.src_addr());
        // A packet sent back to its own source names no better first hop.
        if src == adjacency.next_hop
            || !self.tables.router.share_subnet(ingress, src, adjacency.next_hop)
            || has_source_route(packet.options())
        {
            return;
        }
        self.icmpv4_error(now, ingress, ip, Icmpv4Error::Redirect(gateway), out);
    }

    /// RFC 4861 8.2: the sender is a neighbour on the ingress link and the
    /// better first hop is too: the destination itself when it is on the
    /// link, else the next-hop router, named by its link-local address
    /// (hosts accept no other, 8.1). Sent from the switch's link-local
    /// address with hop limit 255, to the sender's MAC.
    #[inline]
    pub(crate) fn redirect_v6(
        &mut self,
        now: u64,
        ingress: RifId,
        sender_mac: EthernetAddress,
        ip: &[u8],
        adjacency: Adjacency,
        out: &mut Output,
    ) {
        if adjacency.rif == ingress {
            self.redirect_v6_same_interface(now, ingress, sender_mac, ip, adjacency, out);
        }
    }

    #[inline(never)]
    fn redirect_v6_same_interface(
        &mut self,
        now: u64,
        ingress: RifId,
        sender_mac: EthernetAddress,
        ip: &[u8],
        adjacency: Adjacency,
        out: &mut Output,
    ) {
        let IpAddr::V6(next_hop) = adjacency.next_hop else { return };
        if !self.tables.router.sends_redirects(ingress) {
            return;
        }
        let packet = Ipv6Packet::new_unchecked(ip);
        let (src, dst) = (packet.src_addr(), packet.dst_addr());
        if src == next_hop
            || !self.tables.router.on_link(ingress, IpAddr::V6(src))
            || !(next_hop == dst || next_hop.is_unicast_link_local())
        {
            return;
        }
        let Some(from) = self.tables.router.source_v6(ingress, LINK_LOCAL).filter(Ipv6Addr::is_unicast_link_local)
        else {
            return;
        };
        if !self.state.icmp_limiter.allow(now) {
            return;
        }
        let target_lladdr = self.tables.neighbors.entries.get(&(ingress, adjacency.next_hop)).and_then(|n| n.entry.mac);
        let redirect = Icmpv6Repr::Redirect {
            target_addr: next_hop,
            dst_addr: dst,
            target_lladdr,
            redirected: &ip[..ip.len().min(MAX_REDIRECTED)],
        };
        self.send_nd(now, ingress, sender_mac, from, src, redirect, out);
    }
}

/// Whether IPv4 `options` hold a loose or strict source route.
fn has_source_route(options: &[u8]) -> bool {
    let mut at = 0;
    while let Some(&kind) = options.get(at) {
        match kind {
            0 => return false,
            1 => at += 1,
            OPTION_LSRR | OPTION_SSRR => return true,
            _ => at += usize::from(options.get(at + 1).copied().unwrap_or(0)).max(2),
        }
    }
    false
}
