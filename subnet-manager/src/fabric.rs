//! An in-process fabric: one [`Agent`] per node of a topology, cabled as
//! the topology says, carrying directed-route SMPs hop by hop exactly as
//! the agents' IBA 14.2.2 rules steer them. The SM's unit tests and
//! benchmarks run against it, and [`Fabric::check_all_pairs`] walks the
//! LFTs the agents hold (not the SM's idea of them) from every CA to every
//! other.
//!
//! Faults for tests: nodes that never answer, SMPs dropped on the way, a
//! node answering every SMP with a bad status, links taken down (the
//! switches at both ends set PortStateChange and send trap 128).

use rustc_hash::FxHashSet;

use crate::agent::{Agent, Disposition};
use crate::packet::attributes::{Notice, NoticeRepr, PortPhysState, PortState, SmState};
use crate::packet::smp::DATA_LEN;
use crate::packet::{AttributeId, MAD_LEN, Method, SmpRepr};
use crate::sm::{OutgoingSmp, SmEvent, SubnetManager};
use crate::topology::{NodeKind, PortRef, Topology};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FabricCounters {
    pub carried: u64,
    pub hops: u64,
    pub dropped: u64,
    pub discarded: u64,
}

pub struct Fabric {
    /// The cabling as it is now (links taken down are removed).
    pub topology: Topology,
    pub agents: Vec<Agent>,
    port_guids: Vec<Vec<u64>>,
    /// Nodes that swallow every SMP.
    pub unresponsive: FxHashSet<usize>,
    /// SMPs to drop before delivering again.
    pub drop_next: u32,
    /// Ports whose link finishes training when the next LFT block is
    /// written (the sweep read them Down and is programming tables).
    pub train_on_next_lft_set: Vec<PortRef>,
    pub counters: FabricCounters,
    /// The node that answered the last SMP carried (its target), for a
    /// driver that applies what a Set wrote somewhere else too.
    pub last_target: Option<usize>,
}

impl Fabric {
    pub fn new(topology: Topology) -> Fabric {
        let agents = topology.nodes.iter().map(Agent::new).collect();
        let port_guids = topology.nodes.iter().map(|n| n.ports.iter().map(|p| p.guid).collect()).collect();
        Fabric {
            topology,
            agents,
            port_guids,
            unresponsive: FxHashSet::default(),
            drop_next: 0,
            train_on_next_lft_set: Vec::new(),
            counters: FabricCounters::default(),
            last_target: None,
        }
    }

    /// Marks `node` as running an SM on `port` (PortInfo IsSM) publishing
    /// `info`.
    pub fn host_sm(&mut self, node: usize, port: u8, sm: &mut SubnetManager) {
        sm.set_port_guid(self.sm_port_guid(node, port));
        let agent = &mut self.agents[node];
        agent.ports[usize::from(port)].capability_mask |= crate::sm::CAPABILITY_IS_SM;
        agent.sm_info = Some(sm.sm_info());
    }

    /// The GUID of the port an SM on (`node`, `port`) runs on: a switch's
    /// port 0, a CA's port.
    fn sm_port_guid(&self, node: usize, port: u8) -> u64 {
        let port = if self.topology.nodes[node].is_switch() { 0 } else { usize::from(port) };
        self.port_guids[node].get(port).copied().unwrap_or(0)
    }

    /// Carries one SMP sent by the SM on (`node`, `port`) and returns the
    /// response that reaches it, if any.
    pub fn carry(&mut self, node: usize, port: u8, out: &OutgoingSmp) -> Option<[u8; MAD_LEN]> {
        self.counters.carried += 1;
        self.last_target = None;
        if self.drop_next > 0 {
            self.drop_next -= 1;
            self.counters.dropped += 1;
            return None;
        }
        let Ok(mut smp) = SmpRepr::parse_bytes(&out.bytes) else {
            self.counters.discarded += 1;
            return None;
        };
        if smp.method == Method::Set && smp.attribute_id == AttributeId::LinearForwardingTable {
            for port in std::mem::take(&mut self.train_on_next_lft_set) {
                self.port_trained(port);
            }
        }
        let mut at = node;
        let mut disposition = self.agents[node].originate(port, &self.port_guids[node], &mut smp);
        let mut target = None;
        // Every hop moves one link; a route longer than 2 * 64 hops is a bug.
        for _ in 0..256 {
            if matches!(disposition, Disposition::Respond { .. }) {
                target.get_or_insert(at);
            }
            match disposition {
                Disposition::ToLocalSm => {
                    self.last_target = Some(target.unwrap_or(node));
                    return (at == node).then(|| smp.to_bytes());
                }
                Disposition::Discard(_) => {
                    self.counters.discarded += 1;
                    return None;
                }
                Disposition::Forward { port } | Disposition::Respond { port } => {
                    let remote = self.topology.nodes[at].ports.get(usize::from(port)).and_then(|p| p.remote);
                    let Some(remote) = remote else {
                        self.counters.dropped += 1;
                        return None;
                    };
                    self.counters.hops += 1;
                    at = remote.node;
                    if self.unresponsive.contains(&at) {
                        self.counters.dropped += 1;
                        return None;
                    }
                    disposition = self.agents[at].receive(remote.port, &self.port_guids[at], &mut smp);
                }
            }
        }
        self.counters.discarded += 1;
        None
    }

    /// Takes the link at `at` down: both ports Down/Polling, the cable
    /// removed, PortStateChange set on switches; returns the trap 128 the
    /// first switch end sends to the SM (LID routed, to `sm_lid`).
    pub fn link_down(&mut self, at: PortRef, sm_lid: u16) -> Option<[u8; MAD_LEN]> {
        let remote = self.topology.nodes[at.node].ports[usize::from(at.port)].remote?;
        self.topology.disconnect(at);
        let mut trap = None;
        for end in [at, remote] {
            let agent = &mut self.agents[end.node];
            let info = &mut agent.ports[usize::from(end.port)];
            info.port_state = PortState::Down.into();
            info.port_phys_state = PortPhysState::Polling.into();
            if let Some(tables) = agent.switch.as_mut() {
                tables.info.port_state_change = true;
                if trap.is_none() {
                    let notice = NoticeRepr::link_state_change(agent.ports[0].lid);
                    let mut data = [0u8; DATA_LEN];
                    notice.emit(&mut Notice::new_unchecked(&mut data[..]));
                    let mut smp =
                        SmpRepr::lid_routed(Method::Trap, u64::from(end.node as u32), AttributeId::Notice, 0, data);
                    smp.m_key = 0;
                    let _ = sm_lid;
                    trap = Some(smp.to_bytes());
                }
            }
        }
        trap
    }

    /// One end of a cabled link still training (Down/Polling) while its
    /// peer may already be up, as when the two ends finish flow control
    /// at different times; the switch's other ports have just trained, so
    /// its PortStateChange is set (as after a boot).
    pub fn hold_port_down(&mut self, at: PortRef) {
        self.port_changed(at, PortState::Down, PortPhysState::Polling);
    }

    /// The port's link trained: LinkUp in Init.
    pub fn port_trained(&mut self, at: PortRef) {
        self.port_changed(at, PortState::Init, PortPhysState::LinkUp);
    }

    /// The port's state changes as its link does: PortStateChange set on
    /// its switch (what a switch's port logic does, IBA 14.2.5.4).
    fn port_changed(&mut self, at: PortRef, state: PortState, phys: PortPhysState) {
        let agent = &mut self.agents[at.node];
        let info = &mut agent.ports[usize::from(at.port)];
        info.port_state = state.into();
        info.port_phys_state = phys.into();
        if let Some(tables) = agent.switch.as_mut() {
            tables.info.port_state_change = true;
        }
    }

    /// Runs `sm` (on `node`, `port`) in virtual time from `*now` until its
    /// sweep is done (fabric up, standby, or routing failed) or `limit_ns`
    /// passes; each SMP exchange costs `smp_ns`. Returns the events.
    pub fn run(
        &mut self,
        sm: &mut SubnetManager,
        node: usize,
        port: u8,
        now: &mut u64,
        limit_ns: u64,
        smp_ns: u64,
    ) -> Vec<SmEvent> {
        let deadline = *now + limit_ns;
        let mut events = Vec::new();
        let mut responses = Vec::new();
        loop {
            if let Some(control) = self.agents[node].sm_control.take() {
                sm.handle_sm_control(*now, control);
            }
            self.agents[node].sm_info = Some(sm.sm_info());
            let mut sent = 0u64;
            while let Some(out) = sm.poll_transmit(*now) {
                sent += 1;
                if out.dlid != crate::packet::smp::PERMISSIVE_LID {
                    continue; // TrapRepress and LID-routed: this fabric carries directed routes only
                }
                if let Some(response) = self.carry(node, port, &out) {
                    responses.push(response);
                }
            }
            *now += sent * smp_ns;
            for response in responses.drain(..) {
                sm.handle_mad(*now, &response);
            }
            let mut finished = false;
            while let Some(event) = sm.poll_event() {
                finished |= matches!(
                    event,
                    SmEvent::FabricUp { .. }
                        | SmEvent::BecameStandby { .. }
                        | SmEvent::HandedOver { .. }
                        | SmEvent::RoutingFailed(_)
                );
                events.push(event);
            }
            if finished || *now >= deadline {
                self.agents[node].sm_info = Some(sm.sm_info());
                return events;
            }
            if sent == 0 {
                match sm.next_timer() {
                    Some(at) if at <= deadline => {
                        *now = at.max(*now);
                        sm.handle_timer(*now);
                    }
                    _ => {
                        self.agents[node].sm_info = Some(sm.sm_info());
                        return events;
                    }
                }
            }
        }
    }

    /// The LID (PortInfo as the SM set it) of every CA port that has one.
    pub fn ca_lids(&self) -> Vec<(PortRef, u16, u8)> {
        let mut lids = Vec::new();
        for (index, node) in self.topology.nodes.iter().enumerate() {
            if node.kind != NodeKind::Ca {
                continue;
            }
            for port in 1..=node.num_ports {
                let info = &self.agents[index].ports[usize::from(port)];
                if node.ports[usize::from(port)].remote.is_some() && info.lid != 0 {
                    lids.push((PortRef { node: index, port }, info.lid, info.lmc));
                }
            }
        }
        lids
    }

    /// Walks the agents' LFTs from every CA port to every LID of every
    /// other CA port; every port on the way must be Active. The number of
    /// (source, destination LID) pairs walked, or the first that fails.
    pub fn check_all_pairs(&self) -> Result<usize, String> {
        let lids = self.ca_lids();
        let mut pairs = 0;
        for &(source, _, _) in &lids {
            for &(dest, base, lmc) in &lids {
                if source == dest {
                    continue;
                }
                for lid in base..base + (1u16 << lmc) {
                    self.walk(source, lid, dest)?;
                    pairs += 1;
                }
            }
        }
        Ok(pairs)
    }

    fn walk(&self, source: PortRef, lid: u16, dest: PortRef) -> Result<(), String> {
        let name = |p: PortRef| format!("{}/{}", self.topology.nodes[p.node].description, p.port);
        let active = |p: PortRef| self.agents[p.node].ports[usize::from(p.port)].state() == PortState::Active;
        let mut at = source;
        for _ in 0..64 {
            if !active(at) {
                return Err(format!("{} -> lid {lid}: port {} is not Active", name(source), name(at)));
            }
            let Some(next) = self.topology.nodes[at.node].ports[usize::from(at.port)].remote else {
                return Err(format!("{} -> lid {lid}: {} is not cabled", name(source), name(at)));
            };
            if next == dest {
                return Ok(());
            }
            if !active(next) {
                return Err(format!("{} -> lid {lid}: port {} is not Active", name(source), name(next)));
            }
            let Some(out) = self.agents[next.node].lft_port(lid) else {
                return Err(format!(
                    "{} -> lid {lid}: no LFT entry at {}",
                    name(source),
                    self.topology.nodes[next.node].description
                ));
            };
            at = PortRef { node: next.node, port: out };
        }
        Err(format!("{} -> lid {lid}: loop", name(source)))
    }

    /// Whether the SM on `node` is published as master.
    pub fn sm_state(&self, node: usize) -> Option<SmState> {
        self.agents[node].sm_info.map(|i| i.sm_state)
    }
}
