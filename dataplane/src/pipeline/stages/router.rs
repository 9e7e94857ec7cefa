//! Stage 3, layer 3: the forwarding of IPv4 and IPv6 packets (martians, LPM
//! in the ingress interface's VRF, ECMP, TTL, MTU), neighbour resolution on
//! the way out, and the packets the switch originates.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::bridge::{BridgeSource, BridgedFrame};
use super::context::Stages;
use super::icmp::{Icmpv4Error, Icmpv6Error};

use crate::pipeline::counters::DropReason;
use crate::pipeline::disposition::Disposition;
use crate::pipeline::output::{Egress, HopEdit, Output, PuntReason};
use crate::pipeline::tables::bridge::{FdbDest, fdb_key};
use crate::pipeline::tables::fib::{NO_SLOT, Route, RouteTarget};
use crate::pipeline::tables::neighbors::NeighborState;
use crate::pipeline::tables::router::{Rewrite, RifKind, RouterInterface, TUNNEL_RIF};
use crate::pipeline::tables::{DEFAULT_VRF, PortId, RifId, VrfId};
use crate::wire::icmpv6::{self, Icmpv6Message};
use crate::wire::{
    Ecn, EtherType, EthernetAddress, EthernetFrame, EthernetRepr, Icmpv4Packet, Icmpv4Repr, Icmpv6Packet, Icmpv6Repr,
    IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, UdpPacket, VlanId, ethernet, ipv4, ipv6,
};

/// A frame handed to the router: its MACs, EtherType and layer-3 payload.
#[derive(Debug, Clone, Copy)]
pub(crate) struct L3Frame<'a> {
    pub(crate) dst: EthernetAddress,
    pub(crate) src: EthernetAddress,
    pub(crate) ethertype: EtherType,
    pub(crate) payload: &'a [u8],
    /// Whether `payload` is the received frame's own bytes right after an
    /// untagged Ethernet header, so that forwarding may rewrite the frame
    /// in its buffer ([`Output::forward_in_place`]).
    pub(crate) in_place: InPlace,
}

/// Whether a routed packet may leave in the buffer it arrived in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InPlace {
    Allowed,
    No,
}

/// The router interface a frame arrived on, and how it got there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum L3Source {
    Port { port: PortId, rif: RifId },
    Svi { source: BridgeSource, vid: VlanId, rif: RifId },
}

impl L3Source {
    pub(crate) fn rif(self) -> RifId {
        match self {
            L3Source::Port { rif, .. } | L3Source::Svi { rif, .. } => rif,
        }
    }

    pub(crate) fn ingress_port(self) -> Option<PortId> {
        match self {
            L3Source::Port { port, .. } => Some(port),
            L3Source::Svi { source, .. } => source.ingress_port(),
        }
    }
}

impl Stages {
    // ---- forwarding ----

    /// A frame addressed to a router interface's MAC (or any frame on a
    /// routed port): ARP, IPv4, IPv6.
    pub(crate) fn l3_ingress(
        &mut self,
        now: u64,
        source: L3Source,
        frame: L3Frame<'_>,
        out: &mut Output,
    ) -> Disposition {
        match self.l3_dispatch(now, source, frame, out) {
            Ok(disposition) => disposition,
            Err(reason) => self.drop(source.ingress_port(), reason),
        }
    }

    /// A broadcast or multicast frame the SVI hears while the bridge floods
    /// it: the router answers what is for it (ARP, NS) and copies control
    /// traffic to the host; the flood already counted the frame, so what the
    /// router cannot use is not a drop.
    pub(crate) fn l3_group_ingress(
        &mut self,
        now: u64,
        source: L3Source,
        frame: L3Frame<'_>,
        out: &mut Output,
    ) -> Disposition {
        match frame.ethertype {
            EtherType::Arp | EtherType::Ipv4 | EtherType::Ipv6 => {
                self.l3_dispatch(now, source, frame, out).unwrap_or(Disposition::Flooded)
            }
            _ => Disposition::Flooded,
        }
    }

    fn l3_dispatch(
        &mut self,
        now: u64,
        source: L3Source,
        frame: L3Frame<'_>,
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let rif = match self.tables.router.rif(source.rif()) {
            Some(rif) if rif.admin_up => *rif,
            _ => return Err(DropReason::RouterInterfaceDown),
        };
        if frame.dst != rif.mac && !frame.dst.is_multicast() {
            return Err(DropReason::NotRouterMac);
        }
        match frame.ethertype {
            EtherType::Arp => self.arp_ingress(now, source, rif, frame, out),
            EtherType::Ipv4 => self.ipv4_ingress(now, source, rif.vrf, frame, out),
            EtherType::Ipv6 => self.ipv6_ingress(now, source, rif, frame, out),
            _ => Err(DropReason::UnknownEtherType),
        }
    }

    fn ipv4_ingress(
        &mut self,
        now: u64,
        source: L3Source,
        vrf: VrfId,
        frame: L3Frame<'_>,
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let packet = Ipv4Packet::new_checked(frame.payload).map_err(|_| DropReason::Malformed)?;
        if packet.version() != 4 {
            return Err(DropReason::Malformed);
        }
        if !packet.verify_checksum() {
            return Err(DropReason::BadChecksum);
        }
        let total_len = usize::from(packet.total_len());
        let ip = &frame.payload[..total_len];
        let (src, dst) = (packet.src_addr(), packet.dst_addr());
        // RFC 1812 section 5.3.7: no group, loopback or own source address
        // arrives from outside (0.0.0.0/8 does, from DHCP clients, but only
        // to be punted: it is never forwarded, below).
        if src.is_multicast() || src.is_broadcast() || src.is_loopback() || self.tables.router.is_own_v4(src) {
            return Err(DropReason::MartianSource);
        }
        if dst.is_broadcast() || dst.is_multicast() || frame.dst.is_multicast() {
            // Routing protocols, DHCP: link-local control traffic (224.0.0.0/24,
            // RFC 5771) is the host's. Multicast routing is not done here.
            let link_local = dst.is_broadcast() || dst.octets()[..3] == [224, 0, 0];
            if !link_local {
                return Err(DropReason::Unsupported);
            }
            self.punt_l3(source, frame, ip, PuntReason::LinkLocalMulticast, out);
            return Ok(Disposition::Punted);
        }
        // The VTEP lives in the underlay: the default VRF.
        if let Some(vtep) = self.tables.vxlan.config
            && vrf == DEFAULT_VRF
            && dst == vtep.source_ip
            && packet.protocol() == IpProtocol::Udp
            && !packet.is_fragment()
        {
            let udp = UdpPacket::new_checked(packet.payload()).map_err(|_| DropReason::Malformed)?;
            if udp.dst_port() == vtep.udp_port {
                return self.vxlan_decap(now, source, src, packet.ecn(), udp.payload(), out);
            }
        }
        let Some(route) = self.tables.router.lookup_v4(vrf, dst) else {
            self.icmpv4_error(now, source.rif(), ip, Icmpv4Error::NetUnreachable, out);
            return Err(DropReason::NoRoute);
        };
        match route.target {
            RouteTarget::Local => return self.ipv4_local(now, source, frame, ip, out),
            RouteTarget::Punt => {
                self.punt_l3(source, frame, ip, PuntReason::RouteTrap, out);
                return Ok(Disposition::Punted);
            }
            RouteTarget::Drop => return Err(DropReason::Blackhole),
            // RFC 2644: directed broadcasts are not forwarded by default;
            // and the broadcast address is no neighbour to resolve.
            RouteTarget::Connected(rif) if self.tables.router.is_subnet_broadcast(Some(rif), dst) => {
                return Err(DropReason::DirectedBroadcast);
            }
            RouteTarget::Connected(_) | RouteTarget::NextHop(_) | RouteTarget::Group(_) => {}
        }
        // RFC 1812 section 5.3.7: "this host on this network" is no source
        // to forward from.
        if src.octets()[0] == 0 {
            return Err(DropReason::MartianSource);
        }
        if packet.ttl() <= 1 {
            self.icmpv4_error(now, source.rif(), ip, Icmpv4Error::TimeExceeded, out);
            return Err(DropReason::TtlExpired);
        }
        let adjacency = self.select_next_hop(now, route, IpAddr::V4(dst), || {
            let ports = if packet.is_fragment() { 0 } else { transport_ports(packet.protocol(), packet.payload()) };
            flow_hash(u128::from(u32::from(src)), u128::from(u32::from(dst)), packet.protocol().into(), ports)
        })?;
        if adjacency.rif == TUNNEL_RIF {
            return self.route_into_tunnel(now, vrf, adjacency.slot, EtherType::Ipv4, ip, out);
        }
        let mtu = usize::from(self.tables.router.rif_mtu(adjacency.rif));
        if total_len > mtu {
            if !packet.dont_frag() {
                return self.send_fragments(now, source.rif(), adjacency, ip, mtu, out).map(Sent::disposition);
            }
            // RFC 1191: the sender learns the MTU of the path.
            self.icmpv4_error(now, source.rif(), ip, Icmpv4Error::FragRequired(mtu as u16), out);
            return Err(DropReason::MtuExceeded);
        }
        self.redirect_v4(now, source.rif(), ip, adjacency, out);
        let sent =
            self.forward_ip(now, source, frame.in_place, adjacency, EtherType::Ipv4, ip, HopEdit::Ipv4Ttl, out)?;
        Ok(sent.disposition())
    }

    /// An IPv4 packet to one of the switch's addresses: echo is answered
    /// here, the rest goes to the host.
    fn ipv4_local(
        &mut self,
        now: u64,
        source: L3Source,
        frame: L3Frame<'_>,
        ip: &[u8],
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let packet = Ipv4Packet::new_unchecked(ip);
        if packet.protocol() == IpProtocol::Icmp && !packet.is_fragment() {
            let icmp = Icmpv4Packet::new_checked(packet.payload()).map_err(|_| DropReason::Malformed)?;
            if let Ok(Icmpv4Repr::EchoRequest { ident, seq_no, data }) = Icmpv4Repr::parse(&icmp) {
                let reply = Icmpv4Repr::EchoReply { ident, seq_no, data };
                self.originate_v4(
                    now,
                    self.tables.router.rif_vrf(source.rif()),
                    Some(packet.dst_addr()),
                    packet.src_addr(),
                    IpProtocol::Icmp,
                    reply.buffer_len(),
                    out,
                    |buf| reply.emit(&mut Icmpv4Packet::new_unchecked(buf)),
                )?;
                return Ok(Disposition::Consumed);
            }
        }
        self.punt_l3(source, frame, ip, PuntReason::Ip2Me, out);
        Ok(Disposition::Punted)
    }

    fn ipv6_ingress(
        &mut self,
        now: u64,
        source: L3Source,
        rif: RouterInterface,
        frame: L3Frame<'_>,
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let packet = Ipv6Packet::new_checked(frame.payload).map_err(|_| DropReason::Malformed)?;
        if packet.version() != 6 {
            return Err(DropReason::Malformed);
        }
        let total_len = ipv6::HEADER_LEN + usize::from(packet.payload_len());
        let ip = &frame.payload[..total_len];
        let (src, dst) = (packet.src_addr(), packet.dst_addr());
        // RFC 4291 2.7 and 2.5.3: a group or loopback address is never a
        // source; one of our own from outside is a martian too.
        if src.is_multicast() || src.is_loopback() || self.tables.router.is_own_v6(src) {
            return Err(DropReason::MartianSource);
        }
        if dst.is_multicast() {
            // Only link-scope groups (all-nodes, solicited-node, routers,
            // routing protocols: ff02::/16) concern the router.
            if dst.segments()[0] & 0xff0f != 0xff02 {
                return Err(DropReason::Unsupported);
            }
            return self.ipv6_local(now, source, rif, frame, ip, out);
        }
        let Some(route) = self.tables.router.lookup_v6(rif.vrf, dst) else {
            self.icmpv6_error(now, source.rif(), ip, Icmpv6Error::NoRoute, out);
            return Err(DropReason::NoRoute);
        };
        match route.target {
            RouteTarget::Local => return self.ipv6_local(now, source, rif, frame, ip, out),
            RouteTarget::Punt => {
                self.punt_l3(source, frame, ip, PuntReason::RouteTrap, out);
                return Ok(Disposition::Punted);
            }
            RouteTarget::Drop => return Err(DropReason::Blackhole),
            // RFC 4291 2.6.1: every router answers the Subnet-Router
            // anycast address of the prefixes of its interfaces.
            RouteTarget::Connected(_) if self.tables.router.is_subnet_router_anycast(rif.vrf, dst) => {
                return self.ipv6_local(now, source, rif, frame, ip, out);
            }
            RouteTarget::Connected(_) | RouteTarget::NextHop(_) | RouteTarget::Group(_) => {}
        }
        if dst.is_unicast_link_local() {
            // RFC 4291 section 2.5.6: link-local packets are never forwarded.
            return Err(DropReason::NoRoute);
        }
        if src.is_unicast_link_local() {
            // RFC 4443 3.1: the destination is beyond the scope of the
            // source address; the error goes back on the source's link.
            self.icmpv6_error(now, source.rif(), ip, Icmpv6Error::BeyondScope, out);
            return Err(DropReason::NoRoute);
        }
        if packet.hop_limit() <= 1 {
            self.icmpv6_error(now, source.rif(), ip, Icmpv6Error::TimeExceeded, out);
            return Err(DropReason::TtlExpired);
        }
        let adjacency = self.select_next_hop(now, route, IpAddr::V6(dst), || {
            let (protocol, ports) = match packet.upper_layer() {
                Ok(upper) if upper.fragment.is_none() => (
                    upper.protocol,
                    transport_ports(upper.protocol, packet.payload().get(upper.offset..).unwrap_or(&[])),
                ),
                Ok(upper) => (upper.protocol, 0),
                Err(_) => (packet.next_header(), 0),
            };
            flow_hash(u128::from(src), u128::from(dst), protocol.into(), ports ^ packet.flow_label())
        })?;
        if adjacency.rif == TUNNEL_RIF {
            return self.route_into_tunnel(now, rif.vrf, adjacency.slot, EtherType::Ipv6, ip, out);
        }
        let mtu = usize::from(self.tables.router.rif_mtu(adjacency.rif));
        if total_len > mtu {
            self.icmpv6_error(now, source.rif(), ip, Icmpv6Error::PacketTooBig(mtu as u32), out);
            return Err(DropReason::MtuExceeded);
        }
        self.redirect_v6(now, source.rif(), frame.src, ip, adjacency, out);
        let sent =
            self.forward_ip(now, source, frame.in_place, adjacency, EtherType::Ipv6, ip, HopEdit::Ipv6HopLimit, out)?;
        Ok(sent.disposition())
    }

    /// An IPv6 packet to the switch or to a multicast group: neighbour
    /// discovery and echo are handled here, the rest goes to the host.
    fn ipv6_local(
        &mut self,
        now: u64,
        source: L3Source,
        rif: RouterInterface,
        frame: L3Frame<'_>,
        ip: &[u8],
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let packet = Ipv6Packet::new_unchecked(ip);
        let (src, dst) = (packet.src_addr(), packet.dst_addr());
        let punt_reason = if dst.is_multicast() { PuntReason::LinkLocalMulticast } else { PuntReason::Ip2Me };
        let upper = packet.upper_layer().map_err(|_| DropReason::Malformed)?;
        if upper.protocol == IpProtocol::Icmpv6 && upper.fragment.is_none() {
            let icmp_bytes = packet.payload().get(upper.offset..).ok_or(DropReason::Malformed)?;
            let icmp = Icmpv6Packet::new_checked(icmp_bytes).map_err(|_| DropReason::Malformed)?;
            let is_nd = matches!(icmp.msg_type(), Icmpv6Message::NeighborSolicit | Icmpv6Message::NeighborAdvert);
            match Icmpv6Repr::parse(&icmp, src, dst) {
                Ok(repr @ (Icmpv6Repr::NeighborSolicit { .. } | Icmpv6Repr::NeighborAdvert { .. })) => {
                    // RFC 4861 section 7.1: a hop limit below 255 means the
                    // message crossed a router and may be forged.
                    if packet.hop_limit() != icmpv6::ND_HOP_LIMIT {
                        return Err(DropReason::Malformed);
                    }
                    return self.ndp_ingress(now, source, rif, frame, ip, repr, out);
                }
                Ok(Icmpv6Repr::EchoRequest { ident, seq_no, data }) if !dst.is_multicast() => {
                    let reply = Icmpv6Repr::EchoReply { ident, seq_no, data };
                    let len = reply.buffer_len();
                    let ingress = source.rif();
                    self.originate_v6(now, ingress, Some(dst), src, IpProtocol::Icmpv6, len, out, |buf, from, to| {
                        reply.emit(&mut Icmpv6Packet::new_unchecked(buf), from, to)
                    })?;
                    return Ok(Disposition::Consumed);
                }
                Err(_) if is_nd => return Err(DropReason::Malformed),
                _ => {}
            }
        }
        self.punt_l3(source, frame, ip, punt_reason, out);
        Ok(Disposition::Punted)
    }

    /// The next hop `route` gives for `dst`; for an ECMP group, the member
    /// the flow `hash` picks (computed only then), mixed with this switch's
    /// seed so that the tiers of a Clos do not all hash alike, or the member
    /// the path-quality hook (dynamic load balancing) prefers at `now`.
    /// Array indexing only: the route carries its next hop's or group's slot.
    #[inline]
    pub(crate) fn select_next_hop(
        &mut self,
        now: u64,
        route: Route,
        dst: IpAddr,
        hash: impl FnOnce() -> u32,
    ) -> Result<Adjacency, DropReason> {
        let slot = match route.target {
            RouteTarget::Connected(rif) => return Ok(Adjacency { rif, next_hop: dst, slot: NO_SLOT }),
            RouteTarget::NextHop(_) => route.slot,
            RouteTarget::Group(id) => {
                let members =
                    &self.tables.router.group_slots.get(route.slot as usize).ok_or(DropReason::NoRoute)?.members;
                if members.is_empty() {
                    return Err(DropReason::Blackhole);
                }
                let hash = seeded_hash(hash(), self.tables.config.hash_seed);
                self.state.call_flow_hash = hash;
                // Multiply-shift maps the hash onto the members without a division.
                let static_index = ((u64::from(hash) * members.len() as u64) >> 32) as usize;
                let index = match self.state.path_quality.as_mut() {
                    Some(quality) => {
                        let router = &self.tables.router;
                        let member_port = |i: usize| -> Option<PortId> {
                            let hop = router.hops.get(*members.get(i)? as usize)?;
                            if hop.rewrite.generation == router.generation {
                                return Some(hop.rewrite.port);
                            }
                            match router.rif(hop.next_hop.rif)?.kind {
                                RifKind::Port(port) => Some(port),
                                RifKind::Vlan(_) => None,
                            }
                        };
                        let chosen = quality.choose(now, id, hash, members.len(), static_index, &member_port);
                        if chosen < members.len() { chosen } else { static_index }
                    }
                    None => static_index,
                };
                members[index]
            }
            RouteTarget::Drop => return Err(DropReason::Blackhole),
            RouteTarget::Local | RouteTarget::Punt => return Err(DropReason::NoRoute),
        };
        let next_hop = self.tables.router.hops.get(slot as usize).ok_or(DropReason::NoRoute)?.next_hop;
        Ok(Adjacency { rif: next_hop.rif, next_hop: next_hop.ip, slot })
    }

    /// Sends an IP packet of `ip_len` bytes (written by `write`) to a
    /// neighbour: MTU, resolution (a miss starts it and holds the packet
    /// until it ends; `ingress` is the interface the packet came in by, for
    /// the error if it fails), then out of the router interface.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send_ip(
        &mut self,
        now: u64,
        ingress: Option<RifId>,
        adjacency: Adjacency,
        ethertype: EtherType,
        ip_len: usize,
        out: &mut Output,
        write: impl FnOnce(&mut [u8]),
    ) -> Result<Sent, DropReason> {
        self.send_ip_as(now, ingress, adjacency, ethertype, ip_len, Body::Partial, out, write)
    }

    /// Forwards the routed packet `ip` with the hop's `edit`. On the fast
    /// path (the next hop's rewrite cached) a packet that is the received
    /// frame's own bytes (`in_place`) leaves in its own buffer, only its
    /// headers rewritten; otherwise it is copied whole into a new frame
    /// (not zeroed first: the copy is the cost).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn forward_ip(
        &mut self,
        now: u64,
        source: L3Source,
        in_place: InPlace,
        adjacency: Adjacency,
        ethertype: EtherType,
        ip: &[u8],
        edit: HopEdit,
        out: &mut Output,
    ) -> Result<Sent, DropReason> {
        if in_place == InPlace::Allowed
            && let Some(rewrite) = self.cached_rewrite(adjacency)
            && ip.len() <= usize::from(rewrite.mtu)
        {
            let mut header = [0u8; ethernet::HEADER_LEN];
            header[..12].copy_from_slice(&rewrite.macs);
            header[12..].copy_from_slice(&u16::from(ethertype).to_be_bytes());
            if out.forward_in_place(Egress::Port(rewrite.port), header, ethernet::HEADER_LEN + ip.len(), edit) {
                return Ok(Sent::Now);
            }
        }
        self.send_ip_as(now, Some(source.rif()), adjacency, ethertype, ip.len(), Body::Whole, out, |buf| {
            buf.copy_from_slice(ip);
            edit.apply(buf);
        })
    }

    /// The next hop's cached rewrite, if still valid: a routed port with a
    /// usable neighbour, one index and no lookups.
    #[inline]
    fn cached_rewrite(&self, adjacency: Adjacency) -> Option<Rewrite> {
        let hop = self.tables.router.hops.get(adjacency.slot as usize)?;
        (hop.rewrite.generation == self.tables.router.generation).then_some(hop.rewrite)
    }

    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn send_ip_as(
        &mut self,
        now: u64,
        ingress: Option<RifId>,
        adjacency: Adjacency,
        ethertype: EtherType,
        ip_len: usize,
        body: Body,
        out: &mut Output,
        write: impl FnOnce(&mut [u8]),
    ) -> Result<Sent, DropReason> {
        // The fast path: a next hop on a routed port with a usable
        // neighbour has its rewrite cached; one index, no lookups.
        if let Some(rewrite) = self.cached_rewrite(adjacency) {
            if ip_len > usize::from(rewrite.mtu) {
                return Err(DropReason::MtuExceeded);
            }
            let buf = body.push(out, Egress::Port(rewrite.port), ethernet::HEADER_LEN + ip_len);
            buf[..12].copy_from_slice(&rewrite.macs);
            buf[12..14].copy_from_slice(&u16::from(ethertype).to_be_bytes());
            write(&mut buf[ethernet::HEADER_LEN..]);
            return Ok(Sent::Now);
        }
        let rif = match self.tables.router.rif(adjacency.rif) {
            Some(rif) if rif.admin_up => *rif,
            _ => return Err(DropReason::RouterInterfaceDown),
        };
        if ip_len > usize::from(self.tables.router.rif_mtu(adjacency.rif)) {
            return Err(DropReason::MtuExceeded);
        }
        let Some(mac) = self.resolve_neighbor(now, adjacency.rif, adjacency.next_hop, out) else {
            return self.hold_for_neighbor(now, ingress, adjacency, ethertype, ip_len, out, write);
        };
        self.rif_send_frame_as(now, adjacency.rif, mac, ethertype, ip_len, body, out, write)?;
        self.cache_rewrite(adjacency, rif, mac);
        Ok(Sent::Now)
    }

    /// Caches the rewrite of a next hop that was just sent to, if the next
    /// packet may skip the checks: a routed port that is up, and a neighbour
    /// whose MAC is used as is (Reachable, Probe or static: no state change
    /// on use). SVIs keep the slow path (the FDB decides the port).
    fn cache_rewrite(&mut self, adjacency: Adjacency, rif: RouterInterface, mac: EthernetAddress) {
        let Some(hop) = self.tables.router.hops.get(adjacency.slot as usize) else { return };
        if hop.next_hop.rif != adjacency.rif {
            return;
        }
        let RifKind::Port(port) = rif.kind else { return };
        if !self.tables.port(port).is_some_and(|p| p.is_up()) {
            return;
        }
        let usable = self.tables.neighbors.entries.get(&(adjacency.rif, adjacency.next_hop)).is_some_and(|neighbor| {
            neighbor.entry.mac == Some(mac)
                && matches!(neighbor.entry.state, NeighborState::Reachable | NeighborState::Probe)
        });
        if !usable {
            return;
        }
        let mut macs = [0u8; 12];
        macs[..6].copy_from_slice(&mac.0);
        macs[6..].copy_from_slice(&rif.mac.0);
        let generation = self.tables.router.generation;
        self.tables.router.hops[adjacency.slot as usize].rewrite =
            Rewrite { generation, port, mtu: self.tables.router.rif_mtu(adjacency.rif), macs };
    }

    /// Sends a frame with `rif`'s MAC as source: directly out of a routed
    /// port, or bridged in an SVI's VLAN (FDB lookup, remote VTEP, flood).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rif_send_frame(
        &mut self,
        now: u64,
        rif: RifId,
        dst: EthernetAddress,
        ethertype: EtherType,
        len: usize,
        out: &mut Output,
        write: impl FnOnce(&mut [u8]),
    ) -> Result<(), DropReason> {
        self.rif_send_frame_as(now, rif, dst, ethertype, len, Body::Partial, out, write)
    }

    #[allow(clippy::too_many_arguments)]
    fn rif_send_frame_as(
        &mut self,
        now: u64,
        rif: RifId,
        dst: EthernetAddress,
        ethertype: EtherType,
        len: usize,
        body: Body,
        out: &mut Output,
        write: impl FnOnce(&mut [u8]),
    ) -> Result<(), DropReason> {
        let Some(config) = self.tables.router.rif(rif).copied() else {
            return Err(DropReason::RouterInterfaceDown);
        };
        match config.kind {
            RifKind::Port(port) => {
                if !self.tables.port(port).is_some_and(|p| p.is_up()) {
                    self.tables.count_tx_drop(port);
                    return Err(DropReason::EgressPortDown);
                }
                let header = EthernetRepr { dst_addr: dst, src_addr: config.mac, ethertype };
                let buf = body.push(out, Egress::Port(port), ethernet::HEADER_LEN + len);
                header.emit(&mut EthernetFrame::new_unchecked(&mut *buf));
                write(&mut buf[ethernet::HEADER_LEN..]);
                Ok(())
            }
            RifKind::Vlan(vid) => {
                // The frame is built once in a scratch buffer, then bridged
                // (copied per egress port, or encapsulated).
                let mut scratch = self.state.scratch.pop().unwrap_or_default();
                scratch.clear();
                scratch.resize(2 + len, 0);
                scratch[..2].copy_from_slice(&u16::from(ethertype).to_be_bytes());
                write(&mut scratch[2..]);
                let frame = BridgedFrame { dst, src: config.mac, pcp: 0, body: &scratch };
                let result = match self.tables.bridge.fdb.get(&fdb_key(vid, dst)).map(|entry| entry.dest) {
                    Some(FdbDest::Port(port)) if !dst.is_multicast() => self.send_bridged(port, vid, frame, out),
                    Some(FdbDest::Tunnel(remote)) if !dst.is_multicast() => {
                        self.vxlan_encap(now, vid, remote, frame, out)
                    }
                    _ => {
                        self.flood(now, BridgeSource::Cpu, vid, frame, out);
                        Ok(())
                    }
                };
                self.state.scratch.push(scratch);
                result
            }
        }
    }

    /// Sends an IPv4 packet the switch originates (ICMP): routed like any
    /// other in `vrf`, from `src` or the outgoing interface's address.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn originate_v4(
        &mut self,
        now: u64,
        vrf: VrfId,
        src: Option<Ipv4Addr>,
        dst: Ipv4Addr,
        protocol: IpProtocol,
        payload_len: usize,
        out: &mut Output,
        write_payload: impl FnOnce(&mut [u8]),
    ) -> Result<(), DropReason> {
        let route = self.tables.router.lookup_v4(vrf, dst).ok_or(DropReason::NoRoute)?;
        let adjacency = self.select_next_hop(now, route, IpAddr::V4(dst), || {
            flow_hash(
                u128::from(u32::from(src.unwrap_or(Ipv4Addr::UNSPECIFIED))),
                u128::from(u32::from(dst)),
                protocol.into(),
                0,
            )
        })?;
        let src = src.or_else(|| self.tables.router.source_v4(adjacency.rif, dst)).ok_or(DropReason::NoRoute)?;
        let repr = Ipv4Repr {
            src_addr: src,
            dst_addr: dst,
            protocol,
            payload_len,
            ttl: 64,
            dscp: 0,
            ecn: Ecn::NotEct,
            // RFC 6864 section 4.1: DF is clear, so the ID must not repeat soon.
            ident: self.next_ip_id(),
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
        };
        self.send_ip(now, None, adjacency, EtherType::Ipv4, repr.buffer_len(), out, |buf| {
            repr.emit(&mut Ipv4Packet::new_unchecked(&mut *buf));
            write_payload(&mut buf[ipv4::HEADER_LEN..]);
        })
        .map(drop)
    }

    /// Sends an IPv6 packet the switch originates in answer to one that
    /// came in by `ingress`: routed in its VRF, or to a link-local
    /// destination straight back on its link (the address's zone, RFC 4007
    /// section 6: no route names it). `write_payload` gets the payload
    /// buffer and the source and destination (for its checksum).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn originate_v6(
        &mut self,
        now: u64,
        ingress: RifId,
        src: Option<Ipv6Addr>,
        dst: Ipv6Addr,
        protocol: IpProtocol,
        payload_len: usize,
        out: &mut Output,
        write_payload: impl FnOnce(&mut [u8], Ipv6Addr, Ipv6Addr),
    ) -> Result<(), DropReason> {
        let adjacency = if dst.is_unicast_link_local() {
            Adjacency { rif: ingress, next_hop: IpAddr::V6(dst), slot: NO_SLOT }
        } else {
            let vrf = self.tables.router.rif_vrf(ingress);
            let route = self.tables.router.lookup_v6(vrf, dst).ok_or(DropReason::NoRoute)?;
            self.select_next_hop(now, route, IpAddr::V6(dst), || {
                flow_hash(u128::from(src.unwrap_or(Ipv6Addr::UNSPECIFIED)), u128::from(dst), protocol.into(), 0)
            })?
        };
        let src = src.or_else(|| self.tables.router.source_v6(adjacency.rif, dst)).ok_or(DropReason::NoRoute)?;
        let repr = Ipv6Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: protocol,
            payload_len,
            hop_limit: 64,
            dscp: 0,
            ecn: Ecn::NotEct,
            flow_label: 0,
        };
        self.send_ip(now, None, adjacency, EtherType::Ipv6, repr.buffer_len(), out, |buf| {
            repr.emit(&mut Ipv6Packet::new_unchecked(&mut *buf));
            write_payload(&mut buf[ipv6::HEADER_LEN..], src, dst);
        })
        .map(drop)
    }

    /// Gives an L3 packet to the host, untagged, as the kernel's interface
    /// for the router interface expects it.
    pub(crate) fn punt_l3(
        &mut self,
        source: L3Source,
        frame: L3Frame<'_>,
        ip: &[u8],
        reason: PuntReason,
        out: &mut Output,
    ) {
        let Some(port) = source.ingress_port() else { return };
        let to = Egress::Host { port, rif: Some(source.rif()), reason };
        let buf = out.push(to, ethernet::HEADER_LEN + ip.len());
        let header = EthernetRepr { dst_addr: frame.dst, src_addr: frame.src, ethertype: frame.ethertype };
        header.emit(&mut EthernetFrame::new_unchecked(&mut *buf));
        buf[ethernet::HEADER_LEN..].copy_from_slice(ip);
    }
}

/// What became of a packet given to `send_ip`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Out of the router interface.
    Now,
    /// Held until its next hop's address is resolved.
    Held,
}

impl Sent {
    pub(crate) fn disposition(self) -> Disposition {
        match self {
            Sent::Now => Disposition::Forwarded,
            Sent::Held => Disposition::Held,
        }
    }
}

/// A resolved next hop: the neighbour `next_hop` behind `rif`, and the
/// next hop's slot when it is one (not a connected destination).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Adjacency {
    pub(crate) rif: RifId,
    pub(crate) next_hop: IpAddr,
    pub(crate) slot: u32,
}

/// The source and destination ports of a TCP or UDP header (0 for other
/// protocols), for the flow hash; both protocols start with them.
#[inline]
pub(crate) fn transport_ports(protocol: IpProtocol, l4: &[u8]) -> u32 {
    match (protocol, l4.get(..4)) {
        (IpProtocol::Tcp | IpProtocol::Udp, Some(ports)) => {
            u32::from_be_bytes([ports[0], ports[1], ports[2], ports[3]])
        }
        _ => 0,
    }
}

/// A flow hash mixed with a per-switch seed (one multiply and xor-shift):
/// with seed 0 the hash is used as it is.
#[inline]
pub(crate) fn seeded_hash(hash: u32, seed: u64) -> u32 {
    if seed == 0 {
        return hash;
    }
    let mut h = (u64::from(hash) ^ seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^= h >> 29;
    h as u32 ^ (h >> 32) as u32
}

/// The ECMP hash of a 5-tuple: the fields folded into 64 bits, then
/// MurmurHash3's finaliser so that every input bit moves the result.
#[inline]
pub(crate) fn flow_hash(src: u128, dst: u128, protocol: u8, ports: u32) -> u32 {
    let fold = |addr: u128| (addr as u64) ^ ((addr >> 64) as u64).rotate_left(29);
    let mut h = fold(src) ^ fold(dst).rotate_left(32) ^ (u64::from(protocol) << 40) ^ u64::from(ports).rotate_left(13);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h as u32
}

/// Whether a frame's writer sets every byte of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    /// It may leave bytes alone: the buffer is zeroed first.
    Partial,
    /// It copies the whole packet in: no zeroing.
    Whole,
}

impl Body {
    #[inline]
    fn push(self, out: &mut Output, to: Egress, len: usize) -> &mut [u8] {
        match self {
            Body::Partial => out.push(to, len),
            Body::Whole => out.push_overwritten(to, len),
        }
    }
}
