//! The IB-like plane's subnet manager in virtual time: `subnet-manager`'s
//! own [`SubnetManager`] (discovery, LID assignment, routing engines,
//! light sweeps, trap handling) on switch 0's port 0, as `switchd`'s
//! embedded SM runs, talking to one `subnet-manager` agent per node of the
//! fabric ([`AgentFabric`], the agents the SM's own tests drive).
//!
//! The SM's SMPs travel the agents' fabric, not the simulated data plane:
//! they take `smp_hop_ns` per cable crossed (each way; VL15 is never
//! blocked by credits, IBA 7.6.2, so the data's queues do not delay them),
//! and what an LFT Set wrote reaches the simulated switch's forwarding
//! table when the Set reaches the switch. The SM's clock is the
//! simulator's plus the time its first sweep took (run before the traffic
//! starts, as a fabric is up before a job runs).

use subnet_manager::fabric::Fabric as AgentFabric;
use subnet_manager::lid::LidMap;
use subnet_manager::packet::smp::PERMISSIVE_LID;
use subnet_manager::packet::{AttributeId, MAD_LEN, Method, SmpRepr};
use subnet_manager::routing::{Engine, RoutingConfig};
use subnet_manager::sm::{SmConfig, SmEvent, SubnetManager};
use subnet_manager::topology::{PortRef, Topology};

use super::ib::Routing;

/// The node the SM runs on: the first switch, on its port 0.
const SM_NODE: usize = 0;
/// How long the first sweep may take before the fabric counts as not
/// coming up.
const FIRST_SWEEP_LIMIT_NS: u64 = 10_000_000_000;

/// The SM's timing in virtual time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SmTiming {
    /// Light sweep period (OpenSM's `sweep_interval`; a trap brings a
    /// heavy sweep at once).
    pub light_sweep_ns: u64,
    /// One cable crossed by an SMP, agent processing included.
    pub smp_hop_ns: u64,
    /// An SMP unanswered this long is sent again.
    pub smp_timeout_ns: u64,
}

impl Default for SmTiming {
    fn default() -> SmTiming {
        SmTiming { light_sweep_ns: 1_000_000, smp_hop_ns: 1_000, smp_timeout_ns: 1_000_000 }
    }
}

/// The engine of the SM's last routing.
fn sm_engine(sm: &SubnetManager) -> Option<Engine> {
    sm.lfts().engine
}

/// What the simulator schedules for the SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmAction {
    /// A MAD (response or trap) reaches the SM: its slot.
    Mad { at: u64, slot: u32 },
    /// An LFT Set reached `switch`: its block `block` is now the agent's.
    LftWritten { at: u64, switch: u32, block: u16 },
}

/// The SM and the agents it manages.
pub struct SmDriver {
    sm: SubnetManager,
    agents: AgentFabric,
    timing: SmTiming,
    /// SM time minus simulator time.
    epoch: u64,
    mads: Vec<[u8; MAD_LEN]>,
    free_mads: Vec<u32>,
    /// What the first sweep took, SM time.
    pub first_sweep_ns: u64,
    pub smps_sent: u64,
    pub lft_blocks_written: u64,
    /// Simulator times the fabric came up again after a change, with the
    /// SM's reroute time (change detected to LFTs in place).
    pub fabric_up: Vec<(u64, Option<u64>)>,
    /// Simulator times traps reached the SM.
    pub traps: Vec<u64>,
    /// The engine that routed each sweep that brought the fabric up
    /// (simulator time; the first sweep at 0).
    pub engines: Vec<(u64, Engine)>,
    light_sweeps_at_start: u64,
}

impl SmDriver {
    /// Brings `topology` up with the SM's first heavy sweep, routed by the
    /// first of `engines` that takes it.
    pub fn converge(topology: Topology, engines: &[Engine], timing: SmTiming) -> Result<SmDriver, String> {
        let config = SmConfig {
            routing: RoutingConfig { engines: engines.to_vec(), lmc: 0, roots: Vec::new(), max_vls: 8 },
            timeout_ns: timing.smp_timeout_ns,
            light_sweep_interval_ns: timing.light_sweep_ns,
            ..SmConfig::default()
        };
        let mut agents = AgentFabric::new(topology);
        let mut sm = SubnetManager::new(config, LidMap::default());
        agents.host_sm(SM_NODE, 0, &mut sm);
        let mut now = 0;
        sm.start(now);
        // Fabric::run charges each SMP one round trip of an average path.
        let events = agents.run(&mut sm, SM_NODE, 0, &mut now, FIRST_SWEEP_LIMIT_NS, 4 * timing.smp_hop_ns);
        if let Some(SmEvent::RoutingFailed(refused)) = events.iter().find(|e| matches!(e, SmEvent::RoutingFailed(_))) {
            let why: Vec<String> = refused.iter().map(|(e, why)| format!("{}: {why}", e.name())).collect();
            return Err(format!("no routing engine took the fabric ({})", why.join("; ")));
        }
        if !events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })) {
            return Err(format!("the SM did not bring the fabric up: {events:?}"));
        }
        Ok(SmDriver {
            agents,
            timing,
            epoch: now,
            mads: Vec::new(),
            free_mads: Vec::new(),
            first_sweep_ns: now,
            smps_sent: 0,
            lft_blocks_written: 0,
            fabric_up: Vec::new(),
            traps: Vec::new(),
            engines: sm_engine(&sm).into_iter().map(|e| (0, e)).collect(),
            light_sweeps_at_start: sm.status().counters.light_sweeps,
            sm,
        })
    }

    /// The LIDs and LFTs the SM programmed into the agents, for `switches`
    /// switches and then `hosts` CAs (the topology's node order).
    pub fn routing(&self, switches: usize, hosts: usize) -> Result<Routing, String> {
        let agents = &self.agents.agents;
        let lids =
            (0..switches).map(|s| agents[s].ports[0].lid).chain((0..hosts).map(|h| agents[switches + h].ports[1].lid));
        let tables = (0..switches)
            .map(|s| agents[s].switch.as_ref().map(|t| t.lft.clone()).ok_or_else(|| format!("node {s}: not a switch")))
            .collect::<Result<Vec<_>, String>>()?;
        let lfts = self.sm.lfts();
        Ok(Routing {
            lids: lids.collect(),
            tables,
            sl_of_lid: lfts.sl_of_lid.clone(),
            engine: lfts.engine.unwrap_or(Engine::Minhop),
            refused: lfts.refused.iter().map(|(e, why)| format!("{}: {why}", e.name())).collect(),
        })
    }

    /// The engine whose LFTs are in effect now, and why the ones before it
    /// declined the fabric (the last sweep's).
    pub fn engine_now(&self) -> Option<(Engine, Vec<String>)> {
        let lfts = self.sm.lfts();
        let refused = lfts.refused.iter().map(|(e, why)| format!("{}: {why}", e.name())).collect();
        Some((lfts.engine?, refused))
    }

    /// Block `block` of the LFT the agent of `switch` holds.
    pub fn lft_block(&self, switch: u32, block: u16) -> [u8; 64] {
        let mut entries = [subnet_manager::routing::NO_ROUTE; 64];
        if let Some(tables) = self.agents.agents[switch as usize].switch.as_ref() {
            let first = usize::from(block) * 64;
            let stored = tables.lft.get(first..).unwrap_or(&[]);
            let n = stored.len().min(64);
            entries[..n].copy_from_slice(&stored[..n]);
        }
        entries
    }

    /// The cable at `end` fails (both ends Down, PortStateChange set): the
    /// trap 128 its first switch end sends, and what the SM does now.
    pub fn link_down(&mut self, now: u64, end: PortRef, actions: &mut Vec<SmAction>) {
        let remote = self.agents.topology.nodes[end.node].ports[usize::from(end.port)].remote;
        let issuer = [Some(end), remote].into_iter().flatten().find(|p| self.agents.topology.nodes[p.node].is_switch());
        let trap = self.agents.link_down(end, self.sm.sm_lid());
        if let (Some(trap), Some(issuer)) = (trap, issuer) {
            let hops = self.hops_to_sm(issuer.node).unwrap_or(0);
            let slot = self.store(trap);
            actions.push(SmAction::Mad { at: now + hops * self.timing.smp_hop_ns, slot });
        }
    }

    /// A MAD reaches the SM.
    pub fn deliver(&mut self, now: u64, slot: u32, actions: &mut Vec<SmAction>) {
        let bytes = self.mads[slot as usize];
        self.free_mads.push(slot);
        if SmpRepr::parse_bytes(&bytes).is_ok_and(|smp| smp.method == Method::Trap) {
            self.traps.push(now);
        }
        self.sm.handle_mad(now + self.epoch, &bytes);
        self.pump(now, actions);
    }

    /// The SM's timer is due (SMP timeouts, the light sweep).
    pub fn timer(&mut self, now: u64, actions: &mut Vec<SmAction>) {
        self.sm.handle_timer(now + self.epoch);
        self.pump(now, actions);
    }

    /// When the SM's next timer is due, simulator time. None while the SM
    /// is settled and no switch has PortStateChange set: its light sweep
    /// would read every switch's SwitchInfo, find nothing and do nothing
    /// (SMPs travel apart from the data, so skipping it changes no packet's
    /// way). Every change the simulator makes (a cut cable) sets
    /// PortStateChange and sends a trap, and the trap starts a light sweep
    /// at once; a change found only by a light sweep is found by the next
    /// one due on the SM's period, as if none had been skipped.
    pub fn next_timer(&self, now: u64) -> Option<u64> {
        let at = self.sm.next_timer()?.saturating_sub(self.epoch);
        if !self.sm.settled() {
            return Some(at.max(now));
        }
        if !self.port_state_change() {
            return None;
        }
        // Settled: the timer is the light sweep; those skipped meanwhile
        // fall on its period.
        let period = self.timing.light_sweep_ns.max(1);
        Some(if at < now { at + (now - at).div_ceil(period) * period } else { at })
    }

    /// Whether a switch's agent has PortStateChange set.
    fn port_state_change(&self) -> bool {
        self.agents.agents.iter().any(|a| a.switch.as_ref().is_some_and(|t| t.info.port_state_change))
    }

    /// Light sweeps after the first sweep.
    pub fn light_sweeps(&self) -> u64 {
        self.sm.status().counters.light_sweeps - self.light_sweeps_at_start
    }

    /// Sends what the SM has to send: each directed-route SMP crosses the
    /// agents' fabric (the agents answer and apply Sets), its response
    /// comes back a round trip later.
    fn pump(&mut self, now: u64, actions: &mut Vec<SmAction>) {
        let hop_ns = self.timing.smp_hop_ns;
        while let Some(out) = self.sm.poll_transmit(now + self.epoch) {
            self.smps_sent += 1;
            if out.dlid != PERMISSIVE_LID {
                continue; // TrapRepress: LID routed, nothing waits for it
            }
            let hops_before = self.agents.counters.hops;
            let response = self.agents.carry(SM_NODE, 0, &out);
            let hops = self.agents.counters.hops - hops_before;
            if let Ok(smp) = SmpRepr::parse_bytes(&out.bytes)
                && smp.method == Method::Set
                && smp.attribute_id == AttributeId::LinearForwardingTable
                && let Some(target) = self.agents.last_target
            {
                self.lft_blocks_written += 1;
                let block = smp.attribute_modifier as u16;
                actions.push(SmAction::LftWritten {
                    at: now + hops.div_ceil(2) * hop_ns,
                    switch: target as u32,
                    block,
                });
            }
            if let Some(bytes) = response {
                let slot = self.store(bytes);
                actions.push(SmAction::Mad { at: now + hops * hop_ns, slot });
            }
        }
        while let Some(event) = self.sm.poll_event() {
            if let SmEvent::FabricUp { reroute_ns, .. } = event {
                self.fabric_up.push((now, reroute_ns));
                if let Some(engine) = sm_engine(&self.sm) {
                    self.engines.push((now, engine));
                }
            }
        }
    }

    fn store(&mut self, bytes: [u8; MAD_LEN]) -> u32 {
        match self.free_mads.pop() {
            Some(slot) => {
                self.mads[slot as usize] = bytes;
                slot
            }
            None => {
                self.mads.push(bytes);
                (self.mads.len() - 1) as u32
            }
        }
    }

    /// Cables between `node` and the SM's node, over the links up now.
    fn hops_to_sm(&self, node: usize) -> Option<u64> {
        let nodes = &self.agents.topology.nodes;
        let mut distance = vec![u64::MAX; nodes.len()];
        let mut queue = std::collections::VecDeque::from([SM_NODE]);
        distance[SM_NODE] = 0;
        while let Some(at) = queue.pop_front() {
            for port in nodes[at].ports.iter().filter_map(|p| p.remote) {
                if distance[port.node] == u64::MAX {
                    distance[port.node] = distance[at] + 1;
                    queue.push_back(port.node);
                }
            }
        }
        Some(distance[node]).filter(|&d| d != u64::MAX)
    }
}
