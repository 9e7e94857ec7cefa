//! Stage 2, VLAN-aware bridging (IEEE 802.1Q): classification and
//! filtering, learning, forwarding, flooding and egress tagging.

use std::net::Ipv4Addr;

use super::context::Stages;
use super::router::{InPlace, L3Frame};
use crate::pipeline::counters::DropReason;
use crate::pipeline::disposition::Disposition;
use crate::pipeline::output::{Egress, FrameRef, Output, PuntReason};
use crate::pipeline::tables::PortId;
use crate::pipeline::tables::bridge::{FdbDest, fdb_key};
use crate::wire::vlan::{L2Header, TAG_LEN, VlanTag, VlanTagRepr};
use crate::wire::{EtherType, EthernetAddress, VlanId, ethernet};

/// Where a frame entered the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BridgeSource {
    Port(PortId),
    /// Decapsulated from VXLAN sent by `remote`, which arrived on `port`.
    Tunnel {
        remote: Ipv4Addr,
        port: PortId,
    },
    /// Sent by the host through an SVI.
    Cpu,
}

impl BridgeSource {
    pub(crate) fn ingress_port(self) -> Option<PortId> {
        match self {
            BridgeSource::Port(port) | BridgeSource::Tunnel { port, .. } => Some(port),
            BridgeSource::Cpu => None,
        }
    }
}

/// A frame inside the bridge: addresses, priority, and the bytes from the
/// EtherType after the tag we classified on (untagged frames: after the MACs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BridgedFrame<'a> {
    pub(crate) dst: EthernetAddress,
    pub(crate) src: EthernetAddress,
    pub(crate) pcp: u8,
    /// EtherType and payload, as they follow the (removed) VLAN tag.
    pub(crate) body: &'a [u8],
}

impl BridgedFrame<'_> {
    /// Writes the frame into `buf`: 12 bytes of MACs, the tag if `vid`, the body.
    #[inline]
    pub(crate) fn write(&self, buf: &mut [u8], vid: Option<VlanId>) {
        buf[0..6].copy_from_slice(&self.dst.0);
        buf[6..12].copy_from_slice(&self.src.0);
        let mut at = 12;
        if let Some(vid) = vid {
            buf[12..14].copy_from_slice(&u16::from(EtherType::Vlan).to_be_bytes());
            // The body starts with the inner EtherType, which is the tag's.
            let ethertype = EtherType::from(u16::from_be_bytes([self.body[0], self.body[1]]));
            let tag = VlanTagRepr { pcp: self.pcp, dei: false, vid, ethertype };
            tag.emit(&mut VlanTag::new_unchecked(&mut buf[14..18]));
            at = 16;
        }
        buf[at..at + self.body.len()].copy_from_slice(self.body);
    }

    /// The EtherType and payload as the router sees them.
    pub(crate) fn l3(&self) -> Option<L3Frame<'_>> {
        let ethertype = EtherType::from(u16::from_be_bytes([*self.body.first()?, *self.body.get(1)?]));
        // Bridged bytes may be another frame's (decapsulated, built by
        // the CPU, tagged): never forwarded in place.
        Some(L3Frame { dst: self.dst, src: self.src, ethertype, payload: &self.body[2..], in_place: InPlace::No })
    }
}

/// IEEE 802.1Q table 8-1: 01-80-C2-00-00-00..0F are never forwarded by a
/// bridge (STP, PAUSE/PFC, LACP, LLDP...).
fn is_reserved_group(mac: EthernetAddress) -> bool {
    let b = mac.0;
    b[..5] == [0x01, 0x80, 0xc2, 0x00, 0x00] && b[5] <= 0x0f
}

impl Stages {
    // ---- the pipeline ----

    /// Stage 2: classification, learning, and bridging or routing.
    pub(crate) fn bridge_ingress(&mut self, now: u64, ingress: PortId, frame: &[u8], out: &mut Output) -> Disposition {
        let Ok(l2) = L2Header::parse_customer(frame) else {
            return self.drop(Some(ingress), DropReason::Malformed);
        };
        if l2.src_addr.is_multicast() || l2.src_addr == EthernetAddress::ZERO {
            return self.drop(Some(ingress), DropReason::SourceMacInvalid);
        }
        let port = self.tables.port(ingress).expect("caller checked");
        if is_reserved_group(l2.dst_addr) || l2.ethertype == EtherType::Lldp {
            let rif = port.rif;
            let buf = out.push(Egress::Host { port: ingress, rif, reason: PuntReason::L2Protocol }, frame.len());
            buf.copy_from_slice(frame);
            return Disposition::Punted;
        }
        // Our own frames coming back (a loop) or a spoofer: never learned,
        // never forwarded, or the router MAC would move behind this port.
        if self.tables.router.is_router_mac(l2.src_addr) {
            return self.drop(Some(ingress), DropReason::RouterMacSource);
        }
        let port = self.tables.port(ingress).expect("caller checked");
        if let Some(rif) = port.rif {
            // A routed port takes untagged (or priority-tagged) frames only.
            if l2.outer.is_some_and(|tag| tag.vid != 0) {
                return self.drop(Some(ingress), DropReason::IngressVlanFilter);
            }
            let l3 = super::router::L3Frame {
                dst: l2.dst_addr,
                src: l2.src_addr,
                ethertype: l2.ethertype,
                payload: &frame[l2.payload_offset..],
                // The received frame's own bytes after an untagged header:
                // the router may forward them in their buffer.
                in_place: if l2.payload_offset == ethernet::HEADER_LEN { InPlace::Allowed } else { InPlace::No },
            };
            return self.l3_ingress(now, super::router::L3Source::Port { port: ingress, rif }, l3, out);
        }
        let (vid, pcp, body_start) = match l2.outer {
            None => (port.config.pvid, 0, ethernet::HEADER_LEN - 2),
            Some(tag) if tag.vid == 0 => (port.config.pvid, tag.pcp, ethernet::HEADER_LEN - 2 + TAG_LEN),
            Some(tag) => (tag.vid, tag.pcp, ethernet::HEADER_LEN - 2 + TAG_LEN),
        };
        if vid == 0 || !port.member.contains(vid) {
            return self.drop(Some(ingress), DropReason::IngressVlanFilter);
        }
        if port.config.learning {
            self.tables.learn(now, vid, l2.src_addr, FdbDest::Port(ingress));
        }
        let bridged = BridgedFrame { dst: l2.dst_addr, src: l2.src_addr, pcp, body: &frame[body_start..] };
        self.bridge_forward(now, BridgeSource::Port(ingress), vid, bridged, out)
    }

    /// Forwards a classified frame inside `vid`: to the SVI if it is for the
    /// router, to the FDB's port or VTEP, or flooded.
    pub(crate) fn bridge_forward(
        &mut self,
        now: u64,
        source: BridgeSource,
        vid: VlanId,
        frame: BridgedFrame<'_>,
        out: &mut Output,
    ) -> Disposition {
        let Some(vlan) = self.tables.bridge.vlan(vid) else {
            return self.drop(source.ingress_port(), DropReason::IngressVlanFilter);
        };
        let (svi, vni) = (vlan.rif, vlan.vni);
        if let Some(rif) = svi
            && source != BridgeSource::Cpu
        {
            let rif_mac = self.tables.router.rif_mac(rif);
            if rif_mac == Some(frame.dst) {
                let Some(l3) = frame.l3() else {
                    return self.drop(source.ingress_port(), DropReason::Malformed);
                };
                return self.l3_ingress(now, super::router::L3Source::Svi { source, vid, rif }, l3, out);
            }
        }
        if frame.dst.is_multicast() {
            if let BridgeSource::Port(port) = source
                && self.suppress_neighbor_request(port, vid, frame, out)
            {
                return Disposition::Consumed;
            }
            // A local host asking for the anycast gateway is answered by
            // this leaf's SVI below; a copy over the overlay would only make
            // every other leaf's SVI (same address, same MAC) answer again.
            // As Linux's bridge with neigh_suppress does, the local members
            // still get it (they see what a plain bridge shows them); the
            // remote VTEPs do not (RFC 9161 section 3).
            let to_gateway = vni.is_some()
                && matches!(source, BridgeSource::Port(_))
                && svi.is_some_and(|rif| self.asks_for_own_address(rif, frame));
            if to_gateway {
                self.state.neighbor_requests_suppressed += 1;
            }
            let flooded = self.flood_within(now, source, vid, frame, out, !to_gateway);
            // The router behind the SVI hears broadcasts and multicasts too
            // (ARP requests, neighbour solicitations, routing protocols).
            if let Some(rif) = svi
                && source != BridgeSource::Cpu
                && let Some(l3) = frame.l3()
            {
                let routed = self.l3_group_ingress(now, super::router::L3Source::Svi { source, vid, rif }, l3, out);
                if routed == Disposition::Consumed {
                    return routed;
                }
            }
            return flooded;
        }
        match self.tables.bridge.fdb.get(&fdb_key(vid, frame.dst)).map(|entry| entry.dest) {
            Some(FdbDest::Port(port)) => {
                if source == BridgeSource::Port(port) {
                    return self.drop(Some(port), DropReason::SameSegment);
                }
                if let Err(reason) = self.send_bridged(port, vid, frame, out) {
                    return self.drop(source.ingress_port(), reason);
                }
                Disposition::Forwarded
            }
            Some(FdbDest::Tunnel(remote)) => {
                if matches!(source, BridgeSource::Tunnel { .. }) {
                    return self.drop(source.ingress_port(), DropReason::SplitHorizon);
                }
                match self.vxlan_encap(now, vid, remote, frame, out) {
                    Ok(()) => Disposition::Forwarded,
                    Err(reason) => self.drop(source.ingress_port(), reason),
                }
            }
            None => self.flood(now, source, vid, frame, out),
        }
    }

    /// Sends a bridged frame out of `port` in `vid`, tagged as the port's
    /// membership says, after the egress checks (state, membership, MTU).
    #[inline]
    pub(crate) fn send_bridged(
        &mut self,
        port: PortId,
        vid: VlanId,
        frame: BridgedFrame<'_>,
        out: &mut Output,
    ) -> Result<(), DropReason> {
        self.send_bridged_copy(port, vid, frame, out, &mut FloodCopies::default())
    }

    /// [`Switch::send_bridged`] for one of several copies of a frame: a copy
    /// identical to one already emitted (same tagging) shares its buffer.
    fn send_bridged_copy(
        &mut self,
        port: PortId,
        vid: VlanId,
        frame: BridgedFrame<'_>,
        out: &mut Output,
        copies: &mut FloodCopies,
    ) -> Result<(), DropReason> {
        let tagged = self.tables.egress_member(port, vid)?;
        let p = self.tables.port(port).expect("egress_member checked");
        if frame.body.len().saturating_sub(2) > usize::from(p.config.mtu) {
            self.tables.count_tx_drop(port);
            return Err(DropReason::MtuExceeded);
        }
        if let Some(shared) = copies.0[usize::from(tagged)] {
            out.push_shared(Egress::Port(port), shared);
            return Ok(());
        }
        // Assembled from parts: the frame is copied once, never zeroed first.
        let mut header = [0u8; 16];
        header[0..6].copy_from_slice(&frame.dst.0);
        header[6..12].copy_from_slice(&frame.src.0);
        let header_len = if tagged {
            header[12..14].copy_from_slice(&u16::from(EtherType::Vlan).to_be_bytes());
            // The tag view covers the TCI and the EtherType after it, which
            // is the body's first two bytes.
            let mut tag = [0u8; TAG_LEN];
            let ethertype = EtherType::from(u16::from_be_bytes([frame.body[0], frame.body[1]]));
            VlanTagRepr { pcp: frame.pcp, dei: false, vid, ethertype }.emit(&mut VlanTag::new_unchecked(&mut tag[..]));
            header[14..16].copy_from_slice(&tag[..2]);
            16
        } else {
            12
        };
        let buffer = out.push_parts(Egress::Port(port), &[&header[..header_len], frame.body]);
        copies.0[usize::from(tagged)] = Some(buffer);
        Ok(())
    }

    /// Floods to every member of `vid` that is up, except the one the frame
    /// came from, and (unless it came from the overlay: split horizon) to
    /// every remote VTEP on the VLAN's VNI flood list.
    pub(crate) fn flood(
        &mut self,
        now: u64,
        source: BridgeSource,
        vid: VlanId,
        frame: BridgedFrame<'_>,
        out: &mut Output,
    ) -> Disposition {
        self.flood_within(now, source, vid, frame, out, true)
    }

    /// [`Stages::flood`], to the remote VTEPs only if `overlay`.
    fn flood_within(
        &mut self,
        now: u64,
        source: BridgeSource,
        vid: VlanId,
        frame: BridgedFrame<'_>,
        out: &mut Output,
        overlay: bool,
    ) -> Disposition {
        let Some(vlan) = self.tables.bridge.vlan(vid) else {
            return self.drop(source.ingress_port(), DropReason::IngressVlanFilter);
        };
        let members = vlan.members.len();
        let vni = vlan.vni;
        let mut copies = FloodCopies::default();
        for index in 0..members {
            let port = self.tables.bridge.vlans[usize::from(vid)].as_ref().expect("exists").members[index];
            if source == BridgeSource::Port(port) || !self.tables.port(port).is_some_and(|p| p.is_up()) {
                continue;
            }
            // A member that cannot take the frame (MTU) is counted by send_bridged.
            let _ = self.send_bridged_copy(port, vid, frame, out, &mut copies);
        }
        if let Some(vni) = vni
            && overlay
            && !matches!(source, BridgeSource::Tunnel { .. })
        {
            self.vxlan_flood(now, vid, vni, frame, out);
        }
        Disposition::Flooded
    }

    /// A frame the host sends from an SVI: bridged in the VLAN as if it came
    /// from a port that is in no FDB entry.
    pub(crate) fn bridge_from_cpu(&mut self, now: u64, vid: VlanId, frame: &[u8], out: &mut Output) {
        let Ok(l2) = L2Header::parse_customer(frame) else {
            self.state.drops.count(DropReason::Malformed);
            return;
        };
        let body_start = l2.payload_offset - 2;
        let pcp = l2.outer.map_or(0, |tag| tag.pcp);
        let bridged = BridgedFrame { dst: l2.dst_addr, src: l2.src_addr, pcp, body: &frame[body_start..] };
        self.bridge_forward(now, BridgeSource::Cpu, vid, bridged, out);
    }
}

/// The buffers of a flood's copies so far, untagged and tagged: every other
/// member with the same tagging gets the same bytes.
#[derive(Default)]
struct FloodCopies([Option<FrameRef>; 2]);
