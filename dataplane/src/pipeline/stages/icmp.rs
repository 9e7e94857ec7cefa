//! ICMP errors the router originates (RFC 792 and RFC 1812 section 4.3 for
//! IPv4, RFC 4443 for IPv6). Echo replies are answered in `router`.

use std::net::Ipv4Addr;

use super::context::Stages;

use crate::pipeline::output::Output;
use crate::pipeline::tables::RifId;
use crate::wire::icmpv4::{self, DstUnreachable, Icmpv4Message, TimeExceeded};
use crate::wire::icmpv6::DstUnreachable as Icmpv6Unreachable;
use crate::wire::icmpv6::{self, Icmpv6Message};
use crate::wire::{Icmpv4Packet, Icmpv4Repr, Icmpv6Packet, Icmpv6Repr, IpProtocol, Ipv4Packet, Ipv6Packet};

/// RFC 792 Redirect code 1: for the host. RFC 1812 5.2.7.2: a router
/// never sends network redirects (code 0).
const REDIRECT_HOST: u8 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Icmpv4Error {
    TimeExceeded,
    /// No route to the destination's network (RFC 1812 4.3.3.1).
    NetUnreachable,
    /// Fragmentation needed and DF set, with the next-hop MTU (RFC 1191).
    FragRequired(u16),
    /// The next hop's address could not be resolved (RFC 1812 4.3.3.1).
    HostUnreachable,
    /// Send to this gateway instead (a host redirect, RFC 1812 5.2.7.2).
    Redirect(Ipv4Addr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Icmpv6Error {
    TimeExceeded,
    NoRoute,
    PacketTooBig(u32),
    /// The next hop's address could not be resolved (RFC 4443 3.1, code 3).
    AddressUnreachable,
    /// A link-local source toward a destination off its link (RFC 4443
    /// 3.1, code 2).
    BeyondScope,
}

impl Stages {
    /// Sends `error` about `invoking` (a whole IPv4 packet, already
    /// validated) back to its source, unless RFC 1812 section 4.3.2.7
    /// forbids it: about an ICMP error, a non-initial fragment, or a packet
    /// from an address that is not a unicast host's.
    pub(crate) fn icmpv4_error(
        &mut self,
        now: u64,
        ingress: RifId,
        invoking: &[u8],
        error: Icmpv4Error,
        out: &mut Output,
    ) {
        let packet = Ipv4Packet::new_unchecked(invoking);
        let origin = packet.src_addr();
        if packet.frag_offset() != 0
            || origin.is_unspecified()
            || origin.is_broadcast()
            || origin.is_multicast()
            || origin.is_loopback()
        {
            return;
        }
        if packet.protocol() == IpProtocol::Icmp {
            let is_error = Icmpv4Packet::new_checked(packet.payload())
                .map(|icmp| !matches!(icmp.msg_type(), Icmpv4Message::EchoRequest | Icmpv4Message::EchoReply))
                .unwrap_or(true);
            if is_error {
                return;
            }
        }
        if !self.state.icmp_limiter.allow(now) {
            return;
        }
        let quote = icmpv4::error_quote(invoking);
        let repr = match error {
            Icmpv4Error::TimeExceeded => {
                Icmpv4Repr::TimeExceeded { reason: TimeExceeded::TtlExpired, invoking_packet: quote }
            }
            Icmpv4Error::NetUnreachable => Icmpv4Repr::DstUnreachable {
                reason: DstUnreachable::NetUnreachable,
                next_hop_mtu: 0,
                invoking_packet: quote,
            },
            Icmpv4Error::Redirect(gateway) => {
                Icmpv4Repr::Redirect { code: REDIRECT_HOST, gateway, invoking_packet: quote }
            }
            Icmpv4Error::HostUnreachable => Icmpv4Repr::DstUnreachable {
                reason: DstUnreachable::HostUnreachable,
                next_hop_mtu: 0,
                invoking_packet: quote,
            },
            Icmpv4Error::FragRequired(mtu) => Icmpv4Repr::DstUnreachable {
                reason: DstUnreachable::FragRequired,
                next_hop_mtu: mtu,
                invoking_packet: quote,
            },
        };
        // The error comes from the interface the packet arrived on (RFC 1812 4.3.2.4).
        let from = self.tables.router.source_v4(ingress, origin);
        // Failing to send an error is not a second drop: the packet is counted once.
        let _ = self.originate_v4(
            now,
            self.tables.router.rif_vrf(ingress),
            from,
            origin,
            IpProtocol::Icmp,
            repr.buffer_len(),
            out,
            |buf| repr.emit(&mut Icmpv4Packet::new_unchecked(buf)),
        );
    }

    /// The IPv6 counterpart (RFC 4443 section 2.4 (e)): never about an ICMPv6
    /// error, nor to a multicast or unspecified source.
    pub(crate) fn icmpv6_error(
        &mut self,
        now: u64,
        ingress: RifId,
        invoking: &[u8],
        error: Icmpv6Error,
        out: &mut Output,
    ) {
        let packet = Ipv6Packet::new_unchecked(invoking);
        let origin = packet.src_addr();
        if origin.is_unspecified() || origin.is_multicast() || origin.is_loopback() {
            return;
        }
        if let Ok(upper) = packet.upper_layer()
            && upper.protocol == IpProtocol::Icmpv6
        {
            let is_error = packet
                .payload()
                .get(upper.offset..)
                .and_then(|icmp| Icmpv6Packet::new_checked(icmp).ok())
                .map(|icmp| {
                    matches!(
                        icmp.msg_type(),
                        Icmpv6Message::DstUnreachable
                            | Icmpv6Message::PacketTooBig
                            | Icmpv6Message::TimeExceeded
                            | Icmpv6Message::ParamProblem
                    )
                })
                .unwrap_or(true);
            if is_error {
                return;
            }
        }
        if !self.state.icmp_limiter.allow(now) {
            return;
        }
        let quote = icmpv6::error_quote(invoking);
        let repr = match error {
            Icmpv6Error::TimeExceeded => {
                Icmpv6Repr::TimeExceeded { reason: icmpv6::TimeExceeded::HopLimitExceeded, invoking_packet: quote }
            }
            Icmpv6Error::NoRoute => {
                Icmpv6Repr::DstUnreachable { reason: Icmpv6Unreachable::NoRoute, invoking_packet: quote }
            }
            Icmpv6Error::PacketTooBig(mtu) => Icmpv6Repr::PacketTooBig { mtu, invoking_packet: quote },
            Icmpv6Error::BeyondScope => {
                Icmpv6Repr::DstUnreachable { reason: Icmpv6Unreachable::BeyondScope, invoking_packet: quote }
            }
            Icmpv6Error::AddressUnreachable => {
                Icmpv6Repr::DstUnreachable { reason: Icmpv6Unreachable::AddrUnreachable, invoking_packet: quote }
            }
        };
        let from = self.tables.router.source_v6(ingress, origin);
        let _ = self.originate_v6(
            now,
            ingress,
            from,
            origin,
            IpProtocol::Icmpv6,
            repr.buffer_len(),
            out,
            |buf, src, dst| repr.emit(&mut Icmpv6Packet::new_unchecked(buf), src, dst),
        );
    }
}

/// A token bucket over the caller's clock: `rate` tokens per second, at most
/// `rate` saved up.
#[derive(Debug)]
pub(crate) struct RateLimiter {
    rate: u32,
    tokens: u32,
    last_refill: u64,
    pub(crate) suppressed: u64,
}

impl RateLimiter {
    pub(crate) fn new(rate: u32) -> RateLimiter {
        RateLimiter { rate, tokens: rate, last_refill: 0, suppressed: 0 }
    }

    pub(crate) fn allow(&mut self, now: u64) -> bool {
        let elapsed = now.saturating_sub(self.last_refill);
        let earned = u128::from(elapsed) * u128::from(self.rate) / 1_000_000_000;
        if earned > 0 {
            self.tokens = (u128::from(self.tokens) + earned).min(u128::from(self.rate)) as u32;
            self.last_refill = now;
        }
        if self.tokens > 0 {
            self.tokens -= 1;
            true
        } else {
            self.suppressed += 1;
            false
        }
    }
}
