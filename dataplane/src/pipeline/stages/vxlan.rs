//! VXLAN encapsulation and decapsulation (RFC 7348), flooding to the
//! remote VTEPs of a VNI, and the L3VNIs of symmetric IRB (RFC 9135
//! section 4): routed packets into and out of the overlay.

use std::net::{IpAddr, Ipv4Addr};

use super::bridge::{BridgeSource, BridgedFrame};
use super::context::Stages;
use super::router::{L3Source, flow_hash, transport_ports};
use crate::pipeline::counters::DropReason;
use crate::pipeline::disposition::Disposition;
use crate::pipeline::output::Output;
use crate::pipeline::tables::bridge::FdbDest;
use crate::pipeline::tables::fib::RouteTarget;
use crate::pipeline::tables::router::TUNNEL_RIF;
use crate::pipeline::tables::tunnel::{L3Vni, ROUTE_CACHE_CAPACITY};
use crate::pipeline::tables::{DEFAULT_VRF, Vni, VrfId};
use crate::wire::vlan::L2Header;
use crate::wire::vxlan::{self};
use crate::wire::{
    Ecn, EtherType, EthernetAddress, IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, UdpPacket, UdpRepr, VlanId,
    VxlanPacket, VxlanRepr, ipv4, ipv6, udp,
};

impl Stages {
    /// Encapsulates a frame of `vid` toward `remote` (RFC 7348 section 5):
    /// the inner frame untagged, the outer IPv4 routed through the underlay
    /// like any packet, so ECMP applies; the outer UDP source port comes
    /// from a hash of the inner flow so that the underlay spreads flows.
    pub(crate) fn vxlan_encap(
        &mut self,
        now: u64,
        vid: VlanId,
        remote: Ipv4Addr,
        frame: BridgedFrame<'_>,
        out: &mut Output,
    ) -> Result<(), DropReason> {
        let vni = self.tables.bridge.vlan(vid).and_then(|vlan| vlan.vni).ok_or(DropReason::VxlanUnknownVni)?;
        self.vxlan_encap_vni(now, vni, remote, frame, out)
    }

    /// Encapsulates `frame` with `vni` toward `remote`.
    pub(crate) fn vxlan_encap_vni(
        &mut self,
        now: u64,
        vni: Vni,
        remote: Ipv4Addr,
        frame: BridgedFrame<'_>,
        out: &mut Output,
    ) -> Result<(), DropReason> {
        let vtep = self.tables.vxlan.config.ok_or(DropReason::VxlanUnknownVni)?;
        if self.state.encap_depth > 0 {
            // The underlay path to a VTEP leads into a tunnel again: a loop.
            return Err(DropReason::Unsupported);
        }
        let (hash, dscp, ecn) = inner_flow(&frame);
        self.state.call_flow_hash = hash;
        let src_port = vxlan::udp_source_port(hash);
        let target = match self.tables.vxlan.route_cache.get(&remote) {
            Some(&target) => target,
            None => {
                let target = self.tables.router.lookup_v4(DEFAULT_VRF, remote).ok_or(DropReason::NoRoute)?;
                if self.tables.vxlan.route_cache.len() < ROUTE_CACHE_CAPACITY {
                    self.tables.vxlan.route_cache.insert(remote, target);
                }
                target
            }
        };
        // The underlay's ECMP hashes the outer 5-tuple, in which only the
        // source port varies per flow; the inner flow hash it derives from
        // picks our own uplink the same way, without hashing twice.
        let adjacency = self.select_next_hop(now, target, IpAddr::V4(remote), || hash)?;
        let inner_len = 12 + frame.body.len();
        let udp = UdpRepr { src_port, dst_port: vtep.udp_port, payload_len: vxlan::HEADER_LEN + inner_len };
        let ip = Ipv4Repr {
            src_addr: vtep.source_ip,
            dst_addr: remote,
            protocol: IpProtocol::Udp,
            payload_len: udp.buffer_len(),
            ttl: 64,
            // The uniform model: the underlay sees the inner packet's class
            // and ECN (RFC 6040 normal mode).
            dscp,
            ecn,
            // RFC 6864 section 4.1: a datagram that may be fragmented
            // needs an ID that does not repeat soon.
            ident: self.next_ip_id(),
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
        };
        self.state.encap_depth += 1;
        let result = self.send_ip(now, None, adjacency, EtherType::Ipv4, ip.buffer_len(), out, |buf| {
            ip.emit(&mut Ipv4Packet::new_unchecked(&mut *buf));
            let at = ipv4::HEADER_LEN;
            // UDP checksum zero: allowed for VXLAN over IPv4 (RFC 7348 section 5).
            udp.emit_header(&mut UdpPacket::new_unchecked(&mut buf[at..]));
            let at = at + udp::HEADER_LEN;
            VxlanRepr { vni }.emit(&mut VxlanPacket::new_unchecked(&mut buf[at..]));
            frame.write(&mut buf[at + vxlan::HEADER_LEN..], None);
        });
        self.state.encap_depth -= 1;
        result.map(drop)
    }

    /// Decapsulates a VXLAN packet from `remote` (RFC 7348 section 4.1):
    /// the VNI selects the VLAN, the inner source is learned against the
    /// remote VTEP, and the inner frame is bridged with split horizon.
    pub(crate) fn vxlan_decap(
        &mut self,
        now: u64,
        source: L3Source,
        remote: Ipv4Addr,
        outer_ecn: Ecn,
        udp_payload: &[u8],
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let packet = VxlanPacket::new_checked(udp_payload).map_err(|_| DropReason::Malformed)?;
        let vni = VxlanRepr::parse(&packet).map_err(|_| DropReason::Malformed)?.vni;
        let Some(&vid) = self.tables.vxlan.vni_to_vlan.get(&vni) else {
            let l3 = *self.tables.vxlan.l3vnis.get(&vni).ok_or(DropReason::VxlanUnknownVni)?;
            return self.l3vni_decap(now, l3, outer_ecn, packet.payload(), out);
        };
        let inner = packet.payload();
        let l2 = L2Header::parse_customer(inner).map_err(|_| DropReason::Malformed)?;
        if l2.src_addr.is_multicast() || l2.src_addr == EthernetAddress::ZERO {
            return Err(DropReason::SourceMacInvalid);
        }
        if l2.outer.is_some() {
            return Err(DropReason::VxlanInnerVlanTag);
        }
        let port = source.ingress_port().ok_or(DropReason::Unsupported)?;
        let inner_l3 = &inner[l2.payload_offset..];
        // Only an outer CE or ECT(1) can change the inner field (RFC 6040
        // table 2): the common case does not look at the inner header.
        let marked = matches!(outer_ecn, Ecn::Ce | Ecn::Ect1);
        let inner_ecn = match l2.ethertype {
            _ if !marked => None,
            EtherType::Ipv4 => Ipv4Packet::new_checked(inner_l3).ok().map(|packet| packet.ecn()),
            EtherType::Ipv6 => Ipv6Packet::new_checked(inner_l3).ok().map(|packet| packet.ecn()),
            _ => None,
        };
        let ecn = match inner_ecn {
            Some(inner_ecn) => decapsulated_ecn(outer_ecn, inner_ecn).ok_or(DropReason::EcnCeOnNotEct)?,
            None => None,
        };
        // A router MAC of ours is local on every leaf (an anycast gateway's
        // probe from another leaf): never learned behind a VTEP.
        let learnable =
            self.tables.vxlan.not_learned_from.is_empty() || !self.tables.vxlan.not_learned_from.contains(&remote);
        if learnable && !self.tables.router.is_router_mac(l2.src_addr) {
            self.tables.learn(now, vid, l2.src_addr, FdbDest::Tunnel(remote));
        }
        let source = BridgeSource::Tunnel { remote, port };
        let pcp = 0;
        let body_start = l2.payload_offset - 2;
        let Some(ecn) = ecn else {
            let frame = BridgedFrame { dst: l2.dst_addr, src: l2.src_addr, pcp, body: &inner[body_start..] };
            return Ok(self.bridge_forward(now, source, vid, frame, out));
        };
        // The inner header changes (rarely: the underlay marked congestion):
        // the body is rewritten in a scratch buffer.
        let mut scratch = self.state.scratch.pop().unwrap_or_default();
        scratch.clear();
        scratch.extend_from_slice(&inner[body_start..]);
        let l3 = &mut scratch[2..];
        match l2.ethertype {
            EtherType::Ipv4 => Ipv4Packet::new_unchecked(l3).set_ecn_incremental(ecn),
            _ => Ipv6Packet::new_unchecked(l3).set_ecn(ecn),
        }
        let frame = BridgedFrame { dst: l2.dst_addr, src: l2.src_addr, pcp, body: &scratch };
        let disposition = self.bridge_forward(now, source, vid, frame, out);
        self.state.scratch.push(scratch);
        Ok(disposition)
    }

    /// A packet `vrf` routes to the tunnel next hop in `slot` (symmetric
    /// IRB, RFC 9135 section 4.1): its TTL or hop limit decremented, in a
    /// frame from our router MAC to the remote router MAC, encapsulated
    /// with the L3VNI to the remote VTEP.
    pub(crate) fn route_into_tunnel(
        &mut self,
        now: u64,
        vrf: VrfId,
        slot: u32,
        ethertype: EtherType,
        ip: &[u8],
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let tunnel =
            self.tables.router.hops.get(slot as usize).and_then(|hop| hop.tunnel).ok_or(DropReason::NoRoute)?;
        let vxlan = &self.tables.vxlan;
        // The L3VNI's own router MAC, else the VRF's (a leaked route).
        let src = vxlan
            .l3vnis
            .get(&tunnel.vni)
            .map(|l3| l3.router_mac)
            .or_else(|| vxlan.vrf_router_macs.get(&vrf).copied())
            .ok_or(DropReason::VxlanUnknownVni)?;
        let mut scratch = self.state.scratch.pop().unwrap_or_default();
        scratch.clear();
        scratch.extend_from_slice(&u16::from(ethertype).to_be_bytes());
        scratch.extend_from_slice(ip);
        // The router checked the TTL (hop limit) is above 1.
        let _ = match ethertype {
            EtherType::Ipv4 => Ipv4Packet::new_unchecked(&mut scratch[2..]).decrement_ttl_incremental(),
            _ => Ipv6Packet::new_unchecked(&mut scratch[2..]).decrement_hop_limit(),
        };
        let frame = BridgedFrame { dst: tunnel.router_mac, src, pcp: 0, body: &scratch };
        let result = self.vxlan_encap_vni(now, tunnel.vni, tunnel.remote, frame, out);
        self.state.scratch.push(scratch);
        result.map(|()| Disposition::Forwarded)
    }

    /// VXLAN on an L3VNI (RFC 9135 section 4.1): the inner frame must be
    /// addressed to the VRF's router MAC; its IP packet is routed in the VRF.
    fn l3vni_decap(
        &mut self,
        now: u64,
        l3: L3Vni,
        outer_ecn: Ecn,
        inner: &[u8],
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let l2 = L2Header::parse_customer(inner).map_err(|_| DropReason::Malformed)?;
        if l2.outer.is_some() {
            return Err(DropReason::VxlanInnerVlanTag);
        }
        if l2.dst_addr != l3.router_mac {
            return Err(DropReason::NotRouterMac);
        }
        let mut scratch = self.state.scratch.pop().unwrap_or_default();
        scratch.clear();
        scratch.extend_from_slice(&inner[l2.payload_offset..]);
        let result = self.route_from_overlay(now, l3.vrf, l2.ethertype, outer_ecn, &mut scratch, out);
        self.state.scratch.push(scratch);
        result
    }

    /// Routes a packet decapsulated from an L3VNI in `vrf`. It has no
    /// ingress router interface, so nothing is answered with ICMP and
    /// nothing is punted; and what would go back into the overlay is
    /// dropped (split horizon: the remote VTEP routed it here).
    fn route_from_overlay(
        &mut self,
        now: u64,
        vrf: VrfId,
        ethertype: EtherType,
        outer_ecn: Ecn,
        ip: &mut [u8],
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let marked = matches!(outer_ecn, Ecn::Ce | Ecn::Ect1);
        let (dst, len, hash) = match ethertype {
            EtherType::Ipv4 => {
                let packet = Ipv4Packet::new_checked(&*ip).map_err(|_| DropReason::Malformed)?;
                if packet.version() != 4 {
                    return Err(DropReason::Malformed);
                }
                if !packet.verify_checksum() {
                    return Err(DropReason::BadChecksum);
                }
                let (src, dst) = (packet.src_addr(), packet.dst_addr());
                if src.is_multicast() || src.is_broadcast() || src.is_loopback() || src.octets()[0] == 0 {
                    return Err(DropReason::MartianSource);
                }
                if dst.is_multicast() || dst.is_broadcast() {
                    return Err(DropReason::Unsupported);
                }
                if packet.ttl() <= 1 {
                    return Err(DropReason::TtlExpired);
                }
                let ports = if packet.is_fragment() { 0 } else { transport_ports(packet.protocol(), packet.payload()) };
                let hash =
                    flow_hash(u128::from(u32::from(src)), u128::from(u32::from(dst)), packet.protocol().into(), ports);
                let (len, ecn) = (usize::from(packet.total_len()), packet.ecn());
                if marked {
                    let ecn = decapsulated_ecn(outer_ecn, ecn).ok_or(DropReason::EcnCeOnNotEct)?;
                    if let Some(ecn) = ecn {
                        Ipv4Packet::new_unchecked(&mut *ip).set_ecn_incremental(ecn);
                    }
                }
                let _ = Ipv4Packet::new_unchecked(&mut *ip).decrement_ttl_incremental();
                (IpAddr::V4(dst), len, hash)
            }
            EtherType::Ipv6 => {
                let packet = Ipv6Packet::new_checked(&*ip).map_err(|_| DropReason::Malformed)?;
                if packet.version() != 6 {
                    return Err(DropReason::Malformed);
                }
                let (src, dst) = (packet.src_addr(), packet.dst_addr());
                if src.is_multicast() || src.is_loopback() || src.is_unicast_link_local() {
                    return Err(DropReason::MartianSource);
                }
                if dst.is_multicast() || dst.is_unicast_link_local() {
                    return Err(DropReason::Unsupported);
                }
                if packet.hop_limit() <= 1 {
                    return Err(DropReason::TtlExpired);
                }
                let hash =
                    flow_hash(u128::from(src), u128::from(dst), packet.next_header().into(), packet.flow_label());
                let (len, ecn) = (ipv6::HEADER_LEN + usize::from(packet.payload_len()), packet.ecn());
                if marked {
                    let ecn = decapsulated_ecn(outer_ecn, ecn).ok_or(DropReason::EcnCeOnNotEct)?;
                    if let Some(ecn) = ecn {
                        Ipv6Packet::new_unchecked(&mut *ip).set_ecn(ecn);
                    }
                }
                let _ = Ipv6Packet::new_unchecked(&mut *ip).decrement_hop_limit();
                (IpAddr::V6(dst), len, hash)
            }
            _ => return Err(DropReason::UnknownEtherType),
        };
        let route = match dst {
            IpAddr::V4(dst) => self.tables.router.lookup_v4(vrf, dst),
            IpAddr::V6(dst) => self.tables.router.lookup_v6(vrf, dst),
        }
        .ok_or(DropReason::NoRoute)?;
        match route.target {
            RouteTarget::Connected(_) | RouteTarget::NextHop(_) | RouteTarget::Group(_) => {}
            RouteTarget::Drop => return Err(DropReason::Blackhole),
            // The switch's own addresses are not reached through an L3VNI.
            RouteTarget::Local | RouteTarget::Punt => return Err(DropReason::Unsupported),
        }
        if let (RouteTarget::Connected(rif), IpAddr::V4(dst)) = (route.target, dst)
            && self.tables.router.is_subnet_broadcast(Some(rif), dst)
        {
            return Err(DropReason::DirectedBroadcast);
        }
        let adjacency = self.select_next_hop(now, route, dst, || hash)?;
        if adjacency.rif == TUNNEL_RIF {
            return Err(DropReason::SplitHorizon);
        }
        if len > usize::from(self.tables.router.rif_mtu(adjacency.rif)) {
            return Err(DropReason::MtuExceeded);
        }
        let packet = &ip[..len];
        let sent = self.send_ip(now, None, adjacency, ethertype, len, out, |buf| buf.copy_from_slice(packet))?;
        Ok(sent.disposition())
    }

    /// Head-end replication of a flooded frame to the VNI's remote VTEPs.
    pub(crate) fn vxlan_flood(&mut self, now: u64, vid: VlanId, vni: Vni, frame: BridgedFrame<'_>, out: &mut Output) {
        let count = self.tables.vxlan.flood.get(&vni).map_or(0, Vec::len);
        for index in 0..count {
            let remote = self.tables.vxlan.flood[&vni][index];
            let _ = self.vxlan_encap(now, vid, remote, frame, out);
        }
    }
}

/// RFC 6040 section 4.2 (normal mode, table 2): the inner header's ECN
/// field after decapsulation, `Some(None)` when it stays as it is, `None`
/// when the packet must be dropped (congestion marked on a packet whose
/// transport cannot see it).
fn decapsulated_ecn(outer: Ecn, inner: Ecn) -> Option<Option<Ecn>> {
    match (outer, inner) {
        (Ecn::Ce, Ecn::NotEct) => None,
        (Ecn::Ce, Ecn::Ect0 | Ecn::Ect1) => Some(Some(Ecn::Ce)),
        (Ecn::Ect1, Ecn::Ect0) => Some(Some(Ecn::Ect1)),
        _ => Some(None),
    }
}

/// The flow hash of an inner frame (MACs and EtherType, plus the IP 5-tuple
/// when there is one), with its DSCP and ECN to copy to the outer header.
#[inline]
fn inner_flow(frame: &BridgedFrame<'_>) -> (u32, u8, Ecn) {
    let macs = (u128::from(frame.dst.to_u64()) << 64) | u128::from(frame.src.to_u64());
    let ethertype = EtherType::from(u16::from_be_bytes([frame.body[0], frame.body[1]]));
    let l3 = &frame.body[2..];
    match ethertype {
        EtherType::Ipv4 => {
            if let Ok(packet) = Ipv4Packet::new_checked(l3) {
                let ports = if packet.is_fragment() { 0 } else { transport_ports(packet.protocol(), packet.payload()) };
                let addrs = (u128::from(u32::from(packet.src_addr())) << 32) | u128::from(u32::from(packet.dst_addr()));
                return (flow_hash(macs, addrs, packet.protocol().into(), ports), packet.dscp(), packet.ecn());
            }
        }
        EtherType::Ipv6 => {
            if let Ok(packet) = Ipv6Packet::new_checked(l3) {
                let ports = transport_ports(packet.next_header(), packet.payload());
                let addrs = u128::from(packet.src_addr()) ^ u128::from(packet.dst_addr()).rotate_left(64);
                let hash = flow_hash(macs, addrs, packet.next_header().into(), ports ^ packet.flow_label());
                return (hash, packet.dscp(), packet.ecn());
            }
        }
        _ => {}
    }
    (flow_hash(macs, 0, 0, u32::from(u16::from(ethertype))), 0, Ecn::NotEct)
}
