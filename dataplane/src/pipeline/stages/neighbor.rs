//! ARP (RFC 826) and neighbour discovery (RFC 4861): resolution, learning
//! from what arrives, and the neighbour state machine, driven by `Switch::poll`.

use std::net::{IpAddr, Ipv6Addr};

use super::context::Stages;
use super::icmp::{Icmpv4Error, Icmpv6Error};
use super::router::{Adjacency, L3Frame, L3Source, Sent};
use crate::pipeline::counters::DropReason;
use crate::pipeline::disposition::Disposition;
use crate::pipeline::events::Event;
use crate::pipeline::output::{Egress, Output, PuntReason};
use crate::pipeline::tables::RifId;
use crate::pipeline::tables::fib::RouteTarget;
use crate::pipeline::tables::neighbors::{Neighbor, NeighborEntry, NeighborKey, NeighborState, NeighborTable, Request};
use crate::pipeline::tables::router::{RifKind, RouterInterface};
use crate::wire::arp::{self, Operation};
use crate::wire::icmpv6::{self};
use crate::wire::{
    ArpPacket, ArpRepr, Ecn, EtherType, EthernetAddress, EthernetFrame, EthernetRepr, Icmpv6Packet, Icmpv6Repr,
    IpProtocol, Ipv6Packet, Ipv6Repr, ethernet, ipv6,
};

impl Stages {
    /// The MAC of neighbour `ip` behind `rif` if it is usable. A miss
    /// creates an Incomplete entry and sends the first request; a Stale
    /// entry in use goes to Probe (RFC 4861 7.3.3, without DELAY).
    #[inline]
    pub(crate) fn resolve_neighbor(
        &mut self,
        now: u64,
        rif: RifId,
        ip: IpAddr,
        out: &mut Output,
    ) -> Option<EthernetAddress> {
        let retrans = self.tables.config.neighbor_retrans_ns;
        let usable = |state| matches!(state, NeighborState::Reachable | NeighborState::Probe | NeighborState::Stale);
        let state = self.tables.neighbors.entries.get(&(rif, ip)).map(|neighbor| neighbor.entry.state);
        if !state.is_some_and(usable)
            && let Some(mac) = self.suppressed_binding(rif, ip)
        {
            self.neighbor_learn(now, rif, ip, mac, true, true, out);
            return Some(mac);
        }
        match self.tables.neighbors.entries.get_mut(&(rif, ip)) {
            Some(neighbor) => match neighbor.entry.state {
                NeighborState::Reachable | NeighborState::Probe => neighbor.entry.mac,
                NeighborState::Stale => {
                    self.tables.router.invalidate_rewrites();
                    neighbor.entry.state = NeighborState::Probe;
                    neighbor.entry.updated = now;
                    neighbor.probes = 0;
                    neighbor.next_probe = now;
                    neighbor.entry.mac
                }
                NeighborState::Incomplete => None,
                NeighborState::Failed => {
                    // A failed neighbour is retried, but no more often than
                    // once per retransmission interval.
                    if now >= neighbor.next_probe {
                        self.tables.router.invalidate_rewrites();
                        neighbor.entry.state = NeighborState::Incomplete;
                        neighbor.entry.updated = now;
                        neighbor.probes = 1;
                        neighbor.next_probe = now.saturating_add(retrans);
                        self.send_neighbor_request(now, Request { rif, ip, unicast: None }, out);
                    }
                    None
                }
            },
            None => {
                if self.tables.neighbors.is_full() {
                    return None;
                }
                let entry =
                    NeighborEntry { mac: None, state: NeighborState::Incomplete, updated: now, is_static: false };
                let next_probe = now.saturating_add(retrans);
                self.tables.neighbors.entries.insert((rif, ip), Neighbor { entry, probes: 1, next_probe });
                self.tables.router.invalidate_rewrites();
                self.send_neighbor_request(now, Request { rif, ip, unicast: None }, out);
                None
            }
        }
    }

    /// The MAC that an EVPN MAC+IP route binds `ip` to in the VLAN of SVI
    /// `rif` (the suppression table): a host behind another VTEP, which the
    /// router takes from there rather than asking it over the overlay, as
    /// the bridge answers the hosts' own requests (RFC 7432 section 10).
    /// The anycast gateway's request for a host no route binds yet is
    /// flooded in the VNI: the host answers the anycast MAC, its own leaf
    /// takes the answer and advertises the binding, which then answers here.
    fn suppressed_binding(&self, rif: RifId, ip: IpAddr) -> Option<EthernetAddress> {
        if self.tables.suppression.entries.is_empty() {
            return None;
        }
        match self.tables.router.rif(rif)?.kind {
            RifKind::Vlan(vid) => self.tables.suppression.get(vid, ip),
            RifKind::Port(_) => None,
        }
    }

    /// Records what a received ARP packet or ND message says about `ip`.
    /// `confirmed` (a solicited reply) makes the entry Reachable; otherwise
    /// a new or changed address is Stale (RFC 4861 7.2.3, 7.2.5). Only with
    /// `create` is a missing entry made.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn neighbor_learn(
        &mut self,
        now: u64,
        rif: RifId,
        ip: IpAddr,
        mac: EthernetAddress,
        confirmed: bool,
        create: bool,
        out: &mut Output,
    ) {
        if !is_neighbor_address(ip) || self.tables.router.is_own(ip) {
            return;
        }
        let key = (rif, ip);
        let room = !self.tables.neighbors.is_full();
        // Learning runs at the rate of ARP/ND packets, not of traffic.
        self.tables.router.invalidate_rewrites();
        let resolved = match self.tables.neighbors.entries.get_mut(&key) {
            Some(neighbor) if neighbor.entry.is_static => false,
            Some(neighbor) => {
                let changed = neighbor.entry.mac != Some(mac);
                if confirmed {
                    neighbor.entry.state = NeighborState::Reachable;
                    neighbor.entry.updated = now;
                } else if changed || neighbor.entry.state == NeighborState::Failed {
                    neighbor.entry.state = NeighborState::Stale;
                    neighbor.entry.updated = now;
                }
                neighbor.entry.mac = Some(mac);
                neighbor.probes = 0;
                changed
            }
            None if create && room => {
                let state = if confirmed { NeighborState::Reachable } else { NeighborState::Stale };
                let entry = NeighborEntry { mac: Some(mac), state, updated: now, is_static: false };
                self.tables.neighbors.entries.insert(key, Neighbor { entry, probes: 0, next_probe: 0 });
                true
            }
            None => false,
        };
        if resolved {
            self.tables.events.push(Event::NeighborResolved { rif, ip, mac });
        }
        // RFC 4861 7.2.5: what waited for the address leaves now.
        if !self.tables.neighbors.held.is_empty()
            && let Some(mac) = self.tables.neighbors.entries.get(&key).and_then(|neighbor| neighbor.entry.mac)
        {
            self.send_held(now, key, mac, out);
        }
    }

    /// `send_ip` on a neighbour with no usable address: while it is being
    /// resolved (Incomplete) the packet is held, within the queue's bounds
    /// (RFC 4861 7.2.2); one that failed lately, and is not retried yet,
    /// gets the unreachable error at once.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn hold_for_neighbor(
        &mut self,
        now: u64,
        ingress: Option<RifId>,
        adjacency: Adjacency,
        ethertype: EtherType,
        ip_len: usize,
        out: &mut Output,
        write: impl FnOnce(&mut [u8]),
    ) -> Result<Sent, DropReason> {
        let key = (adjacency.rif, adjacency.next_hop);
        let state = self.tables.neighbors.entries.get(&key).map(|neighbor| neighbor.entry.state);
        if state == Some(NeighborState::Incomplete) {
            let Some(buf) = self.tables.neighbors.held.hold(key, ingress, ethertype, ip_len) else {
                return Err(DropReason::NeighborQueueFull);
            };
            write(buf);
            return Ok(Sent::Held);
        }
        if let Some(ingress) = ingress
            && state == Some(NeighborState::Failed)
        {
            let mut scratch = self.state.scratch.pop().unwrap_or_default();
            scratch.clear();
            scratch.resize(ip_len, 0);
            write(&mut scratch);
            self.unreachable_error(now, ingress, ethertype, &scratch, out);
            self.state.scratch.push(scratch);
        }
        Err(DropReason::NeighborMiss)
    }

    /// Sends the packets held for `neighbor`, oldest first, to `mac`.
    fn send_held(&mut self, now: u64, neighbor: NeighborKey, mac: EthernetAddress, out: &mut Output) {
        while let Some((slot, held)) = self.tables.neighbors.held.take_oldest(|key| key == neighbor) {
            let bytes = held.bytes;
            let _ = self.rif_send_frame(now, neighbor.0, mac, held.ethertype, bytes.len(), out, |buf| {
                buf.copy_from_slice(&bytes)
            });
            self.tables.neighbors.held.recycle(slot, bytes);
        }
    }

    /// After the timers ran: packets whose neighbour is no longer being
    /// resolved leave, to the address it got, or, when resolution failed
    /// (or the entry is gone), are answered with the unreachable error
    /// (RFC 1812 4.3.3.1, RFC 4443 3.1 code 3, RFC 4861 7.2.2).
    fn settle_held(&mut self, now: u64, out: &mut Output) {
        loop {
            let NeighborTable { entries, held, .. } = &mut self.tables.neighbors;
            let settled = |key: NeighborKey| {
                entries.get(&key).is_none_or(|neighbor| neighbor.entry.state != NeighborState::Incomplete)
            };
            let Some((slot, packet)) = held.take_oldest(settled) else { break };
            let neighbor = packet.neighbor.expect("taken packets are held for a neighbour");
            let usable_mac = entries.get(&neighbor).filter(|n| n.entry.state != NeighborState::Failed);
            match usable_mac.and_then(|n| n.entry.mac) {
                Some(mac) => {
                    let _ =
                        self.rif_send_frame(now, neighbor.0, mac, packet.ethertype, packet.bytes.len(), out, |buf| {
                            buf.copy_from_slice(&packet.bytes)
                        });
                }
                None => {
                    self.state.drops.count(DropReason::NeighborMiss);
                    if let Some(ingress) = packet.ingress {
                        self.unreachable_error(now, ingress, packet.ethertype, &packet.bytes, out);
                    }
                }
            }
            self.tables.neighbors.held.recycle(slot, packet.bytes);
        }
    }

    /// The error for a packet whose next hop could not be resolved, back to
    /// its source by the interface it came in on.
    fn unreachable_error(&mut self, now: u64, ingress: RifId, ethertype: EtherType, ip: &[u8], out: &mut Output) {
        match ethertype {
            EtherType::Ipv4 => self.icmpv4_error(now, ingress, ip, Icmpv4Error::HostUnreachable, out),
            EtherType::Ipv6 => self.icmpv6_error(now, ingress, ip, Icmpv6Error::AddressUnreachable, out),
            _ => {}
        }
    }

    /// Walks the neighbour timers: retransmits requests of Incomplete
    /// entries, probes Probe entries, turns Reachable into Stale and removes
    /// Stale entries that stayed unused (after the stale time) and Failed
    /// ones (after the reachable time).
    pub(crate) fn neighbor_timers(&mut self, now: u64, out: &mut Output) {
        let config = &self.tables.config;
        let requests = &mut self.state.neighbor_requests;
        let events = &mut self.tables.events;
        let mut changed = false;
        requests.clear();
        self.tables.neighbors.entries.retain(|&(rif, ip), neighbor| {
            let entry = &mut neighbor.entry;
            if entry.is_static {
                return true;
            }
            let age = now.saturating_sub(entry.updated);
            match entry.state {
                NeighborState::Incomplete | NeighborState::Probe if now >= neighbor.next_probe => {
                    if neighbor.probes >= config.neighbor_max_probes {
                        changed = true;
                        if entry.state == NeighborState::Probe {
                            events.push(Event::NeighborExpired { rif, ip });
                        }
                        entry.state = NeighborState::Failed;
                        entry.mac = None;
                        entry.updated = now;
                        neighbor.next_probe = now.saturating_add(config.neighbor_retrans_ns);
                    } else {
                        neighbor.probes += 1;
                        neighbor.next_probe = now.saturating_add(config.neighbor_retrans_ns);
                        let unicast = if entry.state == NeighborState::Probe { entry.mac } else { None };
                        requests.push(Request { rif, ip, unicast });
                    }
                    true
                }
                NeighborState::Reachable if age >= config.neighbor_reachable_ns => {
                    changed = true;
                    entry.state = NeighborState::Stale;
                    entry.updated = now;
                    true
                }
                NeighborState::Stale if age >= config.neighbor_stale_ns => {
                    changed = true;
                    events.push(Event::NeighborExpired { rif, ip });
                    false
                }
                // Failed entries only hold off retries; they must not fill the
                // table for long when something scans a connected subnet.
                NeighborState::Failed => age < config.neighbor_reachable_ns,
                _ => true,
            }
        });
        if changed {
            self.tables.router.invalidate_rewrites();
        }
        for index in 0..self.state.neighbor_requests.len() {
            let request = self.state.neighbor_requests[index];
            self.send_neighbor_request(now, request, out);
        }
        if !self.tables.neighbors.held.is_empty() {
            self.settle_held(now, out);
        }
    }

    /// Sends an ARP request or a neighbour solicitation: broadcast (to the
    /// solicited-node group) to resolve, unicast to the known MAC to probe.
    /// A host the suppression table binds is not asked: its binding is
    /// taken as the answer.
    pub(crate) fn send_neighbor_request(&mut self, now: u64, request: Request, out: &mut Output) {
        if let Some(mac) = self.suppressed_binding(request.rif, request.ip) {
            self.neighbor_learn(now, request.rif, request.ip, mac, true, false, out);
            return;
        }
        let Some(rif) = self.tables.router.rif(request.rif).copied() else { return };
        match request.ip {
            IpAddr::V4(target) => {
                let Some(sender) = self.tables.router.source_v4(request.rif, target) else { return };
                let arp = ArpRepr {
                    operation: Operation::Request,
                    sender_hardware_addr: rif.mac,
                    sender_protocol_addr: sender,
                    target_hardware_addr: EthernetAddress::ZERO,
                    target_protocol_addr: target,
                };
                let dst = request.unicast.unwrap_or(EthernetAddress::BROADCAST);
                let _ = self.rif_send_frame(now, request.rif, dst, EtherType::Arp, arp::PACKET_LEN, out, |buf| {
                    arp.emit(&mut ArpPacket::new_unchecked(buf))
                });
            }
            IpAddr::V6(target) => {
                let Some(src) = self.tables.router.source_v6(request.rif, target) else { return };
                let dst_ip = if request.unicast.is_some() { target } else { solicited_node(target) };
                let dst = request.unicast.unwrap_or_else(|| ipv6_multicast_mac(dst_ip));
                let solicit = Icmpv6Repr::NeighborSolicit { target_addr: target, source_lladdr: Some(rif.mac) };
                self.send_nd(now, request.rif, dst, src, dst_ip, solicit, out);
            }
        }
    }

    /// Writes an ND message (hop limit 255) and sends it out of `rif` to `dst`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send_nd(
        &mut self,
        now: u64,
        rif: RifId,
        dst: EthernetAddress,
        src_ip: Ipv6Addr,
        dst_ip: Ipv6Addr,
        message: Icmpv6Repr<'_>,
        out: &mut Output,
    ) {
        let ip = Ipv6Repr {
            src_addr: src_ip,
            dst_addr: dst_ip,
            next_header: IpProtocol::Icmpv6,
            payload_len: message.buffer_len(),
            hop_limit: icmpv6::ND_HOP_LIMIT,
            dscp: 0,
            ecn: Ecn::NotEct,
            flow_label: 0,
        };
        let _ = self.rif_send_frame(now, rif, dst, EtherType::Ipv6, ip.buffer_len(), out, |buf| {
            ip.emit(&mut Ipv6Packet::new_unchecked(&mut *buf));
            message.emit(&mut Icmpv6Packet::new_unchecked(&mut buf[ipv6::HEADER_LEN..]), src_ip, dst_ip);
        });
    }

    /// Copies a neighbour protocol frame to the host, untagged.
    fn punt_neighbor_frame(
        &mut self,
        source: L3Source,
        frame: L3Frame<'_>,
        packet: &[u8],
        reason: PuntReason,
        out: &mut Output,
    ) {
        let Some(port) = source.ingress_port() else { return };
        let buf = out.push(Egress::Host { port, rif: Some(source.rif()), reason }, ethernet::HEADER_LEN + packet.len());
        EthernetRepr { dst_addr: frame.dst, src_addr: frame.src, ethertype: frame.ethertype }
            .emit(&mut EthernetFrame::new_unchecked(&mut *buf));
        buf[ethernet::HEADER_LEN..].copy_from_slice(packet);
    }

    /// Whether `ip` is one of the switch's addresses in `rif`'s VRF.
    fn is_local(&self, rif: &RouterInterface, ip: IpAddr) -> bool {
        self.tables.router.lookup(rif.vrf, ip) == Some(RouteTarget::Local)
    }

    /// RFC 4861 section 7.2.5 discards an advertisement for which there is
    /// no entry. An SVI of an EVPN VNI takes it, as Linux does with
    /// `accept_untracked_na = 2`, when it is solicited, addressed to one of
    /// the SVI's own addresses and from a host on its subnet: the answer to
    /// a solicitation from the anycast gateway address that every leaf
    /// shares, which another leaf sent for a silent host behind this one.
    /// This leaf learns the host and advertises its MAC+IPv6 binding, which
    /// answers the asking leaf (the IPv4 counterpart: an ARP reply to our
    /// address creates an entry, RFC 826).
    fn accepts_untracked_advert(&self, source: L3Source, rif: RifId, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        let L3Source::Svi { vid, .. } = source else { return false };
        self.tables.bridge.vlan(vid).is_some_and(|vlan| vlan.vni.is_some())
            && self.tables.router.is_own_v6(dst)
            && self.tables.router.on_link(rif, IpAddr::V6(dst))
            && !src.is_unicast_link_local()
            && self.tables.router.on_link(rif, IpAddr::V6(src))
    }

    /// ARP (RFC 826): learn the sender, answer requests for the switch's
    /// addresses, and copy every other ARP packet to the host.
    pub(crate) fn arp_ingress(
        &mut self,
        now: u64,
        source: L3Source,
        rif: RouterInterface,
        frame: L3Frame<'_>,
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let packet = ArpPacket::new_checked(frame.payload).map_err(|_| DropReason::Malformed)?;
        let arp = ArpRepr::parse(&packet).map_err(|_| DropReason::Malformed)?;
        let sender = arp.sender_protocol_addr;
        if arp.sender_hardware_addr.is_multicast() {
            return Err(DropReason::SourceMacInvalid);
        }
        let rif_id = source.rif();
        // No host has a group, loopback or subnet broadcast address (Linux's
        // arp_process drops such senders too).
        if sender.is_multicast()
            || sender.is_broadcast()
            || sender.is_loopback()
            || self.tables.router.is_subnet_broadcast(Some(rif_id), sender)
        {
            return Err(DropReason::MartianSource);
        }
        if self.tables.router.is_own_v4(sender) {
            // Someone else claims our address: a conflict (RFC 5227 section
            // 2.4), never a binding to learn or a request to answer. The
            // host gets it to log, as a router would.
            self.state.address_conflicts += 1;
            self.punt_neighbor_frame(source, frame, &frame.payload[..arp::PACKET_LEN], PuntReason::Arp, out);
            return Ok(Disposition::Punted);
        }
        let for_us = self.is_local(&rif, IpAddr::V4(arp.target_protocol_addr));
        // RFC 5227 probes (sender 0.0.0.0) teach nothing.
        if !sender.is_unspecified() {
            // RFC 826 "merge": update what we have; create only when the
            // packet is for us (the sender will talk to us next) and the
            // sender is on one of the interface's subnets (an entry for an
            // off-subnet next hop we resolve ourselves is still updated).
            let confirmed = arp.operation == Operation::Reply && for_us;
            let create = for_us && self.tables.router.on_link(rif_id, IpAddr::V4(sender));
            self.neighbor_learn(now, rif_id, IpAddr::V4(sender), arp.sender_hardware_addr, confirmed, create, out);
        }
        if arp.operation == Operation::Request && for_us && !arp.is_gratuitous() {
            // Answered here and not copied to the host: the kernel behind the
            // host interface would answer too, and every request would get
            // two replies. The kernel resolves for itself when it sends, and
            // sees that reply (a reply to the router MAC is copied below).
            let reply = arp.reply(rif.mac);
            self.rif_send_frame(now, rif_id, arp.sender_hardware_addr, EtherType::Arp, arp::PACKET_LEN, out, |buf| {
                reply.emit(&mut ArpPacket::new_unchecked(buf))
            })?;
            return Ok(Disposition::Consumed);
        }
        self.punt_neighbor_frame(source, frame, &frame.payload[..arp::PACKET_LEN], PuntReason::Arp, out);
        Ok(Disposition::Punted)
    }

    /// Neighbour discovery (RFC 4861 section 7.2): learn from solicitations
    /// and advertisements, answer solicitations for the switch's addresses,
    /// copy everything else to the host.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn ndp_ingress(
        &mut self,
        now: u64,
        source: L3Source,
        rif: RouterInterface,
        frame: L3Frame<'_>,
        ip: &[u8],
        message: Icmpv6Repr<'_>,
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let packet = Ipv6Packet::new_unchecked(ip);
        let src = packet.src_addr();
        let rif_id = source.rif();
        let anycast = matches!(message, Icmpv6Repr::NeighborSolicit { target_addr, .. } if self.tables.router.is_subnet_router_anycast(rif.vrf, target_addr));
        let answered_here = anycast
            || matches!(message, Icmpv6Repr::NeighborSolicit { target_addr, .. } if self.is_local(&rif, IpAddr::V6(target_addr)));
        // As for ARP: what the pipeline answers is not copied, or the host's
        // kernel would send a second advertisement.
        if !answered_here {
            self.punt_neighbor_frame(source, frame, ip, PuntReason::NeighborDiscovery, out);
        }
        match message {
            Icmpv6Repr::NeighborSolicit { target_addr, source_lladdr } => {
                let for_us = answered_here;
                if let Some(lladdr) = source_lladdr
                    && !src.is_unspecified()
                {
                    let create = for_us && self.tables.router.on_link(rif_id, IpAddr::V6(src));
                    self.neighbor_learn(now, rif_id, IpAddr::V6(src), lladdr, false, create, out);
                }
                if !for_us {
                    return Ok(Disposition::Punted);
                }
                // RFC 4861 7.2.4; a DAD probe (from ::) is answered to all nodes.
                let (dst_ip, dst_mac, solicited) = if src.is_unspecified() {
                    let all_nodes = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
                    (all_nodes, ipv6_multicast_mac(all_nodes), false)
                } else {
                    (src, source_lladdr.unwrap_or(frame.src), true)
                };
                let advert = Icmpv6Repr::NeighborAdvert {
                    router_flag: true,
                    solicited_flag: solicited,
                    // RFC 4861 7.2.7: an anycast answer must not override
                    // another router's for the same address.
                    override_flag: !anycast,
                    target_addr,
                    target_lladdr: Some(rif.mac),
                };
                self.send_nd(now, rif_id, dst_mac, target_addr, dst_ip, advert, out);
                Ok(Disposition::Consumed)
            }
            Icmpv6Repr::NeighborAdvert { solicited_flag, target_addr, target_lladdr, .. } => {
                if self.tables.router.is_own_v6(target_addr) {
                    // Another node advertises our address: a duplicate
                    // (RFC 4862 5.4.4), for the host to log, never learned.
                    self.state.address_conflicts += 1;
                    return Ok(Disposition::Punted);
                }
                if let Some(lladdr) = target_lladdr {
                    let target = IpAddr::V6(target_addr);
                    let untracked = solicited_flag
                        && !self.tables.neighbors.entries.contains_key(&(rif_id, target))
                        && self.accepts_untracked_advert(source, rif_id, src, packet.dst_addr());
                    // Such an entry starts Stale: this router did not solicit it.
                    let confirmed = solicited_flag && !untracked;
                    self.neighbor_learn(now, rif_id, target, lladdr, confirmed, untracked, out);
                } else if solicited_flag {
                    // Confirms the address we already have (RFC 4861 7.2.5).
                    if let Some(neighbor) = self.tables.neighbors.entries.get_mut(&(rif_id, IpAddr::V6(target_addr)))
                        && neighbor.entry.mac.is_some()
                        && !neighbor.entry.is_static
                    {
                        neighbor.entry.state = NeighborState::Reachable;
                        neighbor.entry.updated = now;
                        self.tables.router.invalidate_rewrites();
                    }
                }
                Ok(Disposition::Punted)
            }
            _ => Ok(Disposition::Punted),
        }
    }
}

/// Whether `ip` can be a neighbour at all: a unicast address, not zero,
/// loopback or (IPv4) limited broadcast.
fn is_neighbor_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => !(ip.is_unspecified() || ip.is_multicast() || ip.is_broadcast() || ip.is_loopback()),
        IpAddr::V6(ip) => !(ip.is_unspecified() || ip.is_multicast() || ip.is_loopback()),
    }
}

/// The solicited-node multicast address of `addr` (RFC 4291 2.7.1).
fn solicited_node(addr: Ipv6Addr) -> Ipv6Addr {
    let o = addr.octets();
    Ipv6Addr::from([0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, o[13], o[14], o[15]])
}

/// The Ethernet group address of an IPv6 multicast address (RFC 2464 7).
fn ipv6_multicast_mac(addr: Ipv6Addr) -> EthernetAddress {
    let o = addr.octets();
    EthernetAddress([0x33, 0x33, o[12], o[13], o[14], o[15]])
}
