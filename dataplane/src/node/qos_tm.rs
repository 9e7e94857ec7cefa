//! The `qos` crate's traffic manager in the node's slot, and its DLB as the
//! pipeline's ECMP path-quality source.
//!
//! [`QosTrafficManager`] feeds each frame's descriptor (ingress, egress,
//! DSCP/PCP, length, ECN, flow hash) to [`qos::tm::TrafficManager`], parses
//! received PFC frames for it (802.1Qbb, [`crate::wire::mac_control`]) and
//! writes the PFC frames it wants sent (untagged, to 01:80:c2:00:00:01,
//! from the port's MAC).

use qos::classify::ClassKey;
use qos::dlb::{Dlb, DlbConfig, LoadBoard};
use qos::pfc::PfcFrame;
use qos::tm::{ConfigError, Dequeue, DropReason, FrameInfo, TmConfig};

use super::{Dequeued, HeldFrame, TmDrop, TrafficManager};
use crate::pipeline::{
    FrameMeta, FrameRef, GroupReport, LinkLevelFrame, NextHopGroupId, PathQuality, PathQualityReport, PortId,
};
use crate::wire::mac_control::{self, MacControlPacket, MacControlRepr};
use crate::wire::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr, ethernet};

/// Counters of what the adapter itself saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdapterCounters {
    /// MAC control frames that did not parse as PAUSE/PFC.
    pub malformed_link_frames: u64,
    /// 802.3x PAUSE frames received: counted, not obeyed (the switch
    /// runs PFC, and PAUSE is not negotiated).
    pub pause_frames_ignored: u64,
    /// Frames taken over, queued, from the traffic manager this one
    /// replaced ([`crate::node::Node::replace_traffic_manager`]).
    pub migrated_frames: u64,
}

/// The traffic manager of `qos` behind the node's [`TrafficManager`] trait.
pub struct QosTrafficManager {
    tm: qos::tm::TrafficManager<FrameRef>,
    discarded: Vec<(PortId, FrameRef)>,
    port_macs: Vec<EthernetAddress>,
    now: u64,
    counters: AdapterCounters,
}

impl QosTrafficManager {
    /// Builds it from a validated configuration (refused whole otherwise).
    pub fn new(config: &TmConfig) -> Result<QosTrafficManager, ConfigError> {
        let tm = qos::tm::TrafficManager::new(config, FrameRef::DANGLING)?;
        let port_macs =
            (0..config.ports.len()).map(|p| EthernetAddress([0x02, 0, 0, 0, (p >> 8) as u8, p as u8])).collect();
        Ok(QosTrafficManager {
            tm,
            discarded: Vec::with_capacity(256),
            port_macs,
            now: 0,
            counters: AdapterCounters::default(),
        })
    }

    /// The source MAC of the PFC frames `port` sends.
    pub fn set_port_mac(&mut self, port: PortId, mac: EthernetAddress) {
        if let Some(slot) = self.port_macs.get_mut(usize::from(port)) {
            *slot = mac;
        }
    }

    pub fn tm(&self) -> &qos::tm::TrafficManager<FrameRef> {
        &self.tm
    }

    pub fn tm_mut(&mut self) -> &mut qos::tm::TrafficManager<FrameRef> {
        &mut self.tm
    }

    pub fn counters(&self) -> AdapterCounters {
        self.counters
    }

    /// Records the frames it took over from its predecessor.
    pub fn count_migrated(&mut self, frames: u64) {
        self.counters.migrated_frames += frames;
    }

    /// The time of the latest event seen.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// A DLB path-quality source reading this traffic manager's port costs,
    /// for [`crate::pipeline::Switch::set_path_quality`].
    pub fn dlb(&self, config: DlbConfig) -> DlbPathQuality {
        DlbPathQuality { dlb: Dlb::new(config), board: self.tm.load_board() }
    }

    fn frame_info(port: PortId, meta: &FrameMeta) -> FrameInfo {
        FrameInfo {
            ingress: meta.ingress,
            egress: port,
            class: ClassKey::Headers { dscp: (meta.l3_offset != 0).then_some(meta.dscp), pcp: meta.pcp },
            len: u32::from(meta.len),
            ecn_capable: meta.ecn_capable(),
            flow_hash: meta.flow_hash,
        }
    }
}

impl TrafficManager for QosTrafficManager {
    #[inline]
    fn enqueue(&mut self, now: u64, port: PortId, frame: FrameRef, meta: &FrameMeta) -> Result<(), TmDrop> {
        self.now = self.now.max(now);
        match self.tm.enqueue(now, frame, &Self::frame_info(port, meta)) {
            Ok(_) => Ok(()),
            Err(DropReason::EgressLimit) => Err(TmDrop::QueueFull),
            Err(DropReason::IngressLimit | DropReason::HeadroomOverflow) => Err(TmDrop::NoBuffer),
            Err(DropReason::Wred) => Err(TmDrop::Wred),
            Err(DropReason::WatchdogStorm) => Err(TmDrop::PfcWatchdog),
            Err(DropReason::UnknownPort) => Err(TmDrop::UnknownPort),
        }
    }

    #[inline]
    fn dequeue(&mut self, now: u64, port: PortId) -> Option<Dequeued> {
        self.now = self.now.max(now);
        loop {
            match self.tm.dequeue(now, port) {
                Dequeue::Send { handle, mark_ce, .. } => {
                    let more = self.tm.port_depth(port).0 != 0;
                    return Some(Dequeued { frame: handle, mark_ce, more });
                }
                Dequeue::Discard { handle } => self.discarded.push((port, handle)),
                Dequeue::Wait(_) | Dequeue::Idle => return None,
            }
        }
    }

    #[inline]
    fn dequeue_burst(&mut self, now: u64, port: PortId, out: &mut Vec<Dequeued>) {
        self.now = self.now.max(now);
        let first = out.len();
        let discarded = &mut self.discarded;
        self.tm.dequeue_burst(now, port, usize::MAX, |dequeued| match dequeued {
            Dequeue::Send { handle, mark_ce, .. } => out.push(Dequeued { frame: handle, mark_ce, more: true }),
            Dequeue::Discard { handle } => discarded.push((port, handle)),
            Dequeue::Wait(_) | Dequeue::Idle => {}
        });
        if out.len() > first
            && let Some(last) = out.last_mut()
        {
            last.more = self.tm.port_depth(port).0 != 0;
        }
    }

    fn backlogged(&self, ports: &mut Vec<PortId>) {
        self.tm.for_each_backlogged(|port| ports.push(port));
    }

    fn link_level(&mut self, now: u64, port: PortId, kind: LinkLevelFrame, frame: &[u8]) {
        self.now = self.now.max(now);
        let repr = frame
            .get(ethernet::HEADER_LEN..)
            .and_then(|payload| MacControlPacket::new_checked(payload).ok())
            .and_then(|packet| MacControlRepr::parse(&packet).ok());
        match (kind, repr) {
            (LinkLevelFrame::Pfc, Some(MacControlRepr::PriorityFlowControl { class_enable, quanta })) => {
                self.tm.receive_pfc(now, port, &PfcFrame { class_enable, quanta });
            }
            (LinkLevelFrame::Pause, Some(MacControlRepr::Pause { .. })) => self.counters.pause_frames_ignored += 1,
            _ => self.counters.malformed_link_frames += 1,
        }
    }

    fn next_wakeup(&self) -> Option<u64> {
        self.tm.next_wakeup(self.now)
    }

    fn poll(&mut self, now: u64) {
        self.now = self.now.max(now);
        self.tm.poll(now);
    }

    fn take_discarded(&mut self) -> Option<(PortId, FrameRef)> {
        self.discarded.pop()
    }

    fn take_all(&mut self, now: u64) -> Vec<HeldFrame> {
        let held = self.tm.take_all_held(now).into_iter();
        held.map(|held| HeldFrame { port: held.egress, ingress: held.ingress, frame: held.handle }).collect()
    }

    fn carry_over(&mut self, now: u64, old: &Self, renumbered: &[PortId]) {
        self.tm.carry_over(now, &old.tm, |port| !renumbered.iter().any(|&r| usize::from(r) == port));
        self.now = self.now.max(old.now);
        let counters = &mut self.counters;
        counters.malformed_link_frames += old.counters.malformed_link_frames;
        counters.pause_frames_ignored += old.counters.pause_frames_ignored;
        counters.migrated_frames += old.counters.migrated_frames;
    }

    #[inline]
    fn next_link_frame(&mut self, now: u64, buf: &mut [u8]) -> Option<(PortId, usize)> {
        const LEN: usize = ethernet::HEADER_LEN + mac_control::MIN_LEN;
        if buf.len() < LEN {
            return None;
        }
        let (port, pfc) = self.tm.take_pfc(now)?;
        self.write_pfc(port, pfc, &mut buf[..LEN])
    }
}

impl QosTrafficManager {
    /// Writes the PFC frame `port` sends: untagged, to 01:80:c2:00:00:01,
    /// from the port's MAC.
    #[inline(never)]
    fn write_pfc(&self, port: PortId, pfc: PfcFrame, buf: &mut [u8]) -> Option<(PortId, usize)> {
        const LEN: usize = ethernet::HEADER_LEN + mac_control::MIN_LEN;
        let src_addr = self.port_macs.get(usize::from(port)).copied().unwrap_or(EthernetAddress([0x02, 0, 0, 0, 0, 0]));
        EthernetRepr { dst_addr: mac_control::DESTINATION, src_addr, ethertype: EtherType::MacControl }
            .emit(&mut EthernetFrame::new_unchecked(&mut buf[..LEN]));
        MacControlRepr::PriorityFlowControl { class_enable: pfc.class_enable, quanta: pfc.quanta }
            .emit(&mut MacControlPacket::new_unchecked(&mut buf[ethernet::HEADER_LEN..LEN]));
        Some((port, LEN))
    }
}

/// DLB over the pipeline's ECMP groups, from the traffic manager's port costs.
pub struct DlbPathQuality {
    dlb: Dlb,
    board: LoadBoard,
}

impl DlbPathQuality {
    pub fn dlb(&self) -> &Dlb {
        &self.dlb
    }
}

impl PathQuality for DlbPathQuality {
    #[inline]
    fn choose(
        &mut self,
        now: u64,
        group: NextHopGroupId,
        flow_hash: u32,
        members: usize,
        static_index: usize,
        member_port: &dyn Fn(usize) -> Option<PortId>,
    ) -> usize {
        let board = &self.board;
        self.dlb.choose(now, group, flow_hash, members, static_index, |i| {
            member_port(i).map_or(u32::MAX, |p| board.cost(p))
        })
    }

    fn set_group_mode(&mut self, group: NextHopGroupId, mode: Option<qos::dlb::DlbMode>) {
        self.dlb.set_group_mode(group, mode);
    }

    fn report(&self) -> Option<PathQualityReport> {
        let mut groups: Vec<GroupReport> = self
            .dlb
            .groups()
            .map(|(group, state)| GroupReport {
                group,
                mode: state.mode.name(),
                packets: state.packets,
                flowlets: state.flowlets,
                moves: state.moves,
            })
            .collect();
        // Groups with a mode of their own that carried nothing yet.
        groups.extend(
            self.dlb.config().groups.iter().filter(|g| self.dlb.group(g.group).is_none()).map(|g| GroupReport {
                group: g.group,
                mode: g.mode.name(),
                packets: 0,
                flowlets: 0,
                moves: 0,
            }),
        );
        groups.sort_by_key(|g| g.group);
        let port_costs = (0..self.board.len()).map(|p| self.board.cost(p as u16)).collect();
        Some(PathQualityReport { default_mode: self.dlb.config().mode.name(), groups, port_costs })
    }
}
