//! A switch's IB-like plane: the `qos::ib` switch engine and the switch's
//! agent behind the ports configured in IB-like mode.
//!
//! Port numbers are IBA's: 1..=`num_ports` for the external ports, 0 for the
//! switch's management port where its agent (and an embedded SM) sits. A
//! number that is not configured as an IB-like port is reported Down and
//! carries nothing.

use dataplane::wire::EthernetAddress;
use qos::ib::arbiter::ArbitrationEntry;
use qos::ib::credit::LinkCredits;
use qos::ib::lft::BLOCK_ENTRIES;
use qos::ib::switch::{IbSwitch, PacketDesc, PortCounters, Received, SwitchConfig, SwitchConfigError};

use super::frames::{self, FrameError, LinkPacket};
use super::{FrameStore, default_sl_to_vl, describe_port, logical_state, max_wire_len, mtu_bytes};
use crate::agent::{Agent, Disposition};
use crate::packet::attributes::{AttributeId, NoticeRepr, PortPhysState, PortState, VlArbBlock, VlArbEntry};
use crate::packet::smp::{PERMISSIVE_LID, SmpRouting};
use crate::packet::{MAD_LEN, Method, SmpRepr};
use crate::topology::NodeKind;
use crate::transport::inband;

/// One external port in IB-like mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchPortConfig {
    /// IBA port number, 1..=254.
    pub number: u8,
    /// Operational data VLs: 1, 2, 4 or 8.
    pub data_vls: u8,
    /// IB MTU in bytes: 256, 512, 1024, 2048 or 4096.
    pub mtu: u16,
    /// The port's line rate in bits per second, counting the Ethernet
    /// frames that carry its packets (`None`: as fast as the link takes
    /// them).
    pub rate_bps: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchPlaneConfig {
    pub guid: u64,
    pub description: String,
    /// Source address of the frames this switch writes.
    pub mac: EthernetAddress,
    pub ports: Vec<SwitchPortConfig>,
    /// Receive buffer per data VL per port, in 64-byte blocks.
    pub buffer_blocks: u16,
    pub flow_control_refresh_ns: u64,
}

/// Frames the plane could not act on, and what its agent did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlaneCounters {
    /// 0x88B5 frames that failed to parse (CRC, length, delimiter).
    pub malformed: u64,
    /// VL15 packets for the agent that held no SMP it could read.
    pub bad_smps: u64,
    /// SMPs answered with status "bad version".
    pub bad_version: u64,
    /// Frames the port adapter did not take.
    pub tx_refused: u64,
    /// Traps (128 link state change, 256 bad M_Key) sent to the master SM
    /// for the first time, and repeated for want of a TrapRepress.
    pub traps_sent: u64,
    pub traps_resent: u64,
    /// TrapRepress from the SM that ended a trap.
    pub traps_repressed: u64,
    /// SMPs discarded by the M_Key check.
    pub m_key_violations: u64,
}

/// A port as `show ib port` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortStatus {
    pub number: u8,
    pub state: PortState,
    pub phys_state: PortPhysState,
    pub data_vls: u8,
    pub mtu: u16,
    /// Flow control exchanged on every data VL.
    pub flow_control_ready: bool,
    pub counters: PortCounters,
    /// Per data VL: blocks the peer still grants us, blocks held in our
    /// receive buffer, packets waiting in the VOQ.
    pub vls: Vec<VlStatus>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlStatus {
    pub vl: u8,
    pub send_credit_blocks: u16,
    pub receive_held_blocks: u16,
    pub queued: usize,
}

pub struct SwitchPlane {
    engine: IbSwitch,
    agent: Agent,
    guids: Vec<u64>,
    mac: EthernetAddress,
    /// By port number.
    ports: Vec<Option<SwitchPortConfig>>,
    /// Carrier as the port's adapter reports it, by port number.
    carrier: Vec<bool>,
    /// When each port last heard a flow-control packet (ns).
    heard: Vec<u64>,
    /// A link up that hears no flow control for this long is down.
    silence_ns: u64,
    frames: FrameStore,
    flow_control_frame: [u8; 64],
    counters: PlaneCounters,
    /// MADs for the SM on this switch, in arrival order.
    for_sm: Vec<[u8; MAD_LEN]>,
}

/// Writes a frame out of an IBA port; false if the port did not take it.
pub type Transmit<'a> = dyn FnMut(u8, &[u8]) -> bool + 'a;

/// Flow-control refresh periods without one from the peer after which a
/// link that was up is taken down: the peer sends each data VL's state at
/// every refresh (IBA 7.9.4.3), so silence means it is gone. Over veth a
/// peer process that dies leaves the carrier up; a real port would lose
/// the signal. Generous, so that a loaded machine's late wake-ups do not
/// drop links.
pub const SILENT_REFRESHES: u64 = 20;

impl SwitchPlane {
    pub fn new(config: &SwitchPlaneConfig) -> Result<SwitchPlane, SwitchConfigError> {
        let num_ports = config.ports.iter().map(|p| p.number).max().unwrap_or(0);
        if config.ports.iter().any(|p| p.number == 0 || p.number == 255) {
            return Err(SwitchConfigError::Ports(0));
        }
        let most_vls = config.ports.iter().map(|p| p.data_vls).max().unwrap_or(1);
        let weights: Vec<ArbitrationEntry> = (0..most_vls).map(|vl| ArbitrationEntry { vl, weight: 32 }).collect();
        let mut engine = IbSwitch::new(&SwitchConfig {
            ports: usize::from(num_ports) + 1,
            operational_vls: most_vls,
            buffer_blocks: config.buffer_blocks,
            flow_control_refresh_ns: config.flow_control_refresh_ns,
            vl_arbitration_high: Vec::new(),
            vl_arbitration_low: weights.clone(),
            high_priority_limit: 0,
        })?;
        let (mut agent, guids) = Agent::standalone(config.guid, NodeKind::Switch, num_ports, &config.description);
        let mut ports = vec![None; usize::from(num_ports) + 1];
        for port in &config.ports {
            engine
                .set_port_vls(usize::from(port.number), port.data_vls, config.buffer_blocks)
                .map_err(SwitchConfigError::Credits)?;
            engine.set_port_max_len(usize::from(port.number), max_wire_len(port.mtu), max_wire_len(port.mtu));
            engine.set_port_rate(usize::from(port.number), port.rate_bps.map(super::port_rate));
            ports[usize::from(port.number)] = Some(*port);
        }
        let count = usize::from(num_ports) + 1;
        for (number, info) in agent.ports.iter_mut().enumerate().skip(1) {
            info.port_state = PortState::Down.into();
            info.port_phys_state = PortPhysState::Polling.into();
            if let Some(port) = ports[number] {
                describe_port(info, port.data_vls, port.mtu);
            } else {
                info.port_phys_state = PortPhysState::Disabled.into();
            }
        }
        // The engine's arbitration as VLArbitrationTable reads it: the low
        // priority table, block 1.
        for (number, port) in ports.iter().enumerate() {
            if port.is_some() {
                for (entry, weight) in agent.vl_arb[number][0].iter_mut().zip(&weights) {
                    *entry = VlArbEntry { vl: weight.vl, weight: weight.weight };
                }
            }
        }
        // SL n on VL n mod the output's data VLs, in the agent's tables (what
        // SMPs read) and the engine's (what forwards).
        for input in 0..count {
            for (output, port) in ports.iter().enumerate() {
                let table = default_sl_to_vl(port.map_or(1, |p| p.data_vls));
                agent.sl2vl[input * count + output] = table;
                engine.sl_to_vl.set_table(input, output, table);
            }
        }
        Ok(SwitchPlane {
            engine,
            agent,
            guids,
            mac: config.mac,
            carrier: vec![true; count],
            heard: vec![0; count],
            silence_ns: config.flow_control_refresh_ns.saturating_mul(SILENT_REFRESHES),
            ports,
            frames: FrameStore::default(),
            flow_control_frame: [0; 64],
            counters: PlaneCounters::default(),
            for_sm: Vec::new(),
        })
    }

    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The agent, for an SM on this switch (SMInfo) or a test's misbehaving
    /// agent.
    pub fn agent_mut(&mut self) -> &mut Agent {
        &mut self.agent
    }

    pub fn engine(&self) -> &IbSwitch {
        &self.engine
    }

    pub fn port_guids(&self) -> &[u64] {
        &self.guids
    }

    pub fn counters(&self) -> PlaneCounters {
        let agent = &self.agent.counters;
        PlaneCounters {
            traps_sent: agent.traps_sent,
            traps_resent: agent.traps_resent,
            traps_repressed: agent.traps_repressed,
            m_key_violations: agent.m_key_violations,
            ..self.counters
        }
    }

    pub fn lid(&self) -> u16 {
        self.agent.ports[0].lid
    }

    pub fn num_ports(&self) -> u8 {
        self.agent.num_ports()
    }

    pub fn is_ib_port(&self, number: u8) -> bool {
        self.ports.get(usize::from(number)).is_some_and(Option::is_some)
    }

    /// Frames held in receive buffers, VOQs and VL15 slots.
    pub fn frames_held(&self) -> usize {
        self.frames.held()
    }

    /// MADs that arrived for an SM on this switch (responses at the start
    /// of their directed route, LID-routed responses and traps to our LID).
    pub fn take_for_sm(&mut self) -> Vec<[u8; MAD_LEN]> {
        core::mem::take(&mut self.for_sm)
    }

    /// The adapter under `number` lost or regained carrier.
    pub fn set_carrier(&mut self, now: u64, number: u8, up: bool, tx: &mut Transmit<'_>) {
        let Some(carrier) = self.carrier.get_mut(usize::from(number)) else { return };
        if *carrier == up {
            return;
        }
        *carrier = up;
        if !up {
            self.engine.reset_link(usize::from(number));
        }
        self.update_port_state(number);
        self.service(now, tx);
    }

    /// A frame received on IBA port `number`.
    pub fn receive(&mut self, now: u64, number: u8, frame: &[u8], tx: &mut Transmit<'_>) {
        if !self.is_ib_port(number) {
            return;
        }
        match frames::parse(frame) {
            Err(FrameError::NotIbLike) => return,
            Err(FrameError::Malformed(_)) => {
                self.counters.malformed += 1;
                return;
            }
            Ok(LinkPacket::FlowControl(update)) => {
                self.heard[usize::from(number)] = now;
                self.engine.flow_control_received(usize::from(number), update);
                self.update_port_state(number);
            }
            Ok(LinkPacket::Data { lrh, wire_len }) => {
                let handle = self.frames.store(frame);
                let packet = PacketDesc { handle, vl: lrh.vl, sl: lrh.sl, dlid: lrh.dlid, wire_len };
                let received = self.engine.receive(usize::from(number), packet);
                // An Armed port's first data packet made it Active.
                let info = &mut self.agent.ports[usize::from(number)];
                if info.state() == PortState::Armed
                    && self.engine.port_state(usize::from(number)) == Some(qos::ib::switch::LogicalState::Active)
                {
                    info.port_state = PortState::Active.into();
                }
                match received {
                    Received::Queued { .. } => {}
                    Received::ForAgent => {
                        // Out of the store while the agent answers (which
                        // stores its response), then back for reuse.
                        let bytes = core::mem::take(self.frames.get_mut(handle));
                        self.agent_receive(number, &bytes);
                        *self.frames.get_mut(handle) = bytes;
                        self.frames.release(handle);
                    }
                    Received::Dropped(_) => self.frames.release(handle),
                }
            }
        }
        self.service(now, tx);
    }

    /// Timers (flow-control refreshes) and whatever may be sent now.
    pub fn poll(&mut self, now: u64, tx: &mut Transmit<'_>) {
        self.service(now, tx);
    }

    /// When [`poll`](Self::poll) is next due: a flow-control refresh, a
    /// trap's repeat, an M_Key lease's end.
    pub fn next_timer_ns(&self) -> u64 {
        let agent = [self.agent.next_trap_ns(), self.agent.next_lease_expiry_ns()];
        agent.into_iter().flatten().fold(self.engine.next_timer_ns(), u64::min)
    }

    /// When a rated port's line is next free for what waits for it (after
    /// `now`), if anything does.
    pub fn next_transmit_ns(&self, now: u64) -> Option<u64> {
        self.engine.next_transmit_ns(now)
    }

    /// Sends an SMP from the SM on this switch: a directed route starts at
    /// the agent (port 0), a LID-routed one goes by the LFT.
    pub fn send_from_sm(&mut self, now: u64, mad: &[u8; MAD_LEN], dlid: u16, tx: &mut Transmit<'_>) {
        let Ok(mut smp) = SmpRepr::parse_bytes(mad) else { return };
        match smp.routing {
            SmpRouting::DirectedRoute { .. } => {
                match self.agent.originate(0, &self.guids.clone(), &mut smp) {
                    Disposition::ToLocalSm => self.for_sm.push(smp.to_bytes()),
                    Disposition::Forward { port } | Disposition::Respond { port } => {
                        self.send_management(port, &smp.to_bytes(), dlid, self.lid())
                    }
                    Disposition::Discard(_) => {}
                }
                self.after_answer(0, &smp);
            }
            SmpRouting::LidRouted => {
                if dlid == self.lid() && smp.method == Method::TrapRepress {
                    // The SM beside us repressing our own trap.
                    self.agent.trap_repressed(0, &smp);
                } else if dlid == self.lid() {
                    let guids = self.guids.clone();
                    if self.agent.process(0, &guids, &mut smp) {
                        self.after_answer(0, &smp);
                        self.for_sm.push(smp.to_bytes());
                    }
                } else if let Some(port) = self.engine.lft.lookup(dlid) {
                    self.send_management(port, mad, dlid, self.lid());
                }
            }
        }
        self.service(now, tx);
    }

    /// An SMP on VL15 for this switch, in the frame it arrived in.
    fn agent_receive(&mut self, in_port: u8, frame: &[u8]) {
        let Some((mad, dlid, slid)) = inband::decode_frame(frame) else {
            self.counters.bad_smps += 1;
            return;
        };
        let guids = self.guids.clone();
        let lid = self.lid();
        let mut smp = match SmpRepr::parse_bytes(&mad) {
            Ok(smp) => smp,
            Err(_) => {
                match self.agent.answer_bad_version(in_port, &guids, &mad) {
                    Some((Disposition::Respond { port } | Disposition::Forward { port }, bytes)) => {
                        let answered = bytes[3] & 0x80 != 0 && mad[3] & 0x80 == 0;
                        self.counters.bad_version += u64::from(answered);
                        let directed = bytes[1] == 0x81;
                        let (dlid, slid) = match (directed, answered) {
                            (true, _) => (PERMISSIVE_LID, if answered { lid } else { slid }),
                            (false, _) => (slid, lid),
                        };
                        self.send_management(port, &bytes, dlid, slid);
                    }
                    Some((Disposition::ToLocalSm, bytes)) => self.for_sm.push(bytes),
                    _ => self.counters.bad_smps += 1,
                }
                return;
            }
        };
        match smp.routing {
            SmpRouting::DirectedRoute { .. } => match self.agent.receive(in_port, &guids, &mut smp) {
                Disposition::Forward { port } | Disposition::Respond { port } => {
                    // Directed routes keep the permissive DLID both ways
                    // (IBA 14.2.2): every hop's agent steers them.
                    let slid = if smp.method.is_response() { lid } else { slid };
                    self.after_answer(in_port, &smp);
                    self.send_management(port, &smp.to_bytes(), dlid, slid);
                }
                Disposition::ToLocalSm => self.for_sm.push(smp.to_bytes()),
                Disposition::Discard(_) => {}
            },
            SmpRouting::LidRouted => {
                if smp.method.is_response() || smp.method == Method::Trap {
                    self.for_sm.push(smp.to_bytes());
                    return;
                }
                if smp.method == Method::TrapRepress {
                    // The SM has our notice; it wants no answer (IBA 13.4.9).
                    self.agent.trap_repressed(in_port, &smp);
                    return;
                }
                if !self.agent.process(in_port, &guids, &mut smp) {
                    return;
                }
                self.after_answer(in_port, &smp);
                let out = if slid == PERMISSIVE_LID { Some(in_port) } else { self.engine.lft.lookup(slid) };
                if let Some(port) = out {
                    self.send_management(port, &smp.to_bytes(), slid, lid);
                }
            }
        }
    }

    /// Programs into the engine what a Set the agent answered changed.
    fn after_answer(&mut self, _in_port: u8, smp: &SmpRepr) {
        if !smp.method.is_response() || !smp.status.is_ok() {
            return;
        }
        match smp.attribute_id {
            AttributeId::LinearForwardingTable => {
                let block = smp.attribute_modifier as usize;
                let Some(tables) = self.agent.switch.as_ref() else { return };
                let Some(stored) = tables.lft.get(block * BLOCK_ENTRIES..(block + 1) * BLOCK_ENTRIES) else { return };
                let mut entries = [qos::ib::lft::NO_PORT; BLOCK_ENTRIES];
                entries.copy_from_slice(stored);
                let _ = self.engine.lft.set_block(block as u16, &entries);
            }
            AttributeId::PortInfo => {
                self.engine.set_lid(self.agent.ports[0].lid);
                let port = smp.attribute_modifier as usize;
                if let Some(config) = self.ports.get(port).copied().flatten() {
                    let info = &self.agent.ports[port];
                    self.engine.set_port_state(port, logical_state(info.state()));
                    let neighbor = mtu_bytes(info.neighbor_mtu).min(config.mtu);
                    self.engine.set_port_max_len(port, max_wire_len(config.mtu), max_wire_len(neighbor));
                }
                // VLHighLimit is a PortInfo field.
                self.program_arbitration(smp.attribute_modifier as usize);
            }
            AttributeId::VlArbitrationTable => self.program_arbitration((smp.attribute_modifier & 0xffff) as usize),
            AttributeId::SlToVlMappingTable => {
                let count = self.agent.ports.len();
                for input in 0..count {
                    for output in 0..count {
                        self.engine.sl_to_vl.set_table(input, output, self.agent.sl2vl[input * count + output]);
                    }
                }
            }
            _ => {}
        }
    }

    /// Programs `port`'s arbiter from its VLArbitrationTable blocks and
    /// VLHighLimit, as the agent holds them. Entries naming VL15 are left
    /// out (VL15 is always served first); weight 0 entries are skipped by
    /// the arbiter itself.
    fn program_arbitration(&mut self, port: usize) {
        if !self.is_ib_port(port as u8) {
            return;
        }
        let table = |blocks: [VlArbBlock; 2]| -> Vec<ArbitrationEntry> {
            blocks
                .iter()
                .flat_map(|block| self.agent.vl_arb[port][block.number() as usize - 1])
                .filter(|entry| entry.vl < qos::ib::MANAGEMENT_VL)
                .map(|entry| ArbitrationEntry { vl: entry.vl, weight: entry.weight })
                .collect()
        };
        let high = table([VlArbBlock::HighLower, VlArbBlock::HighUpper]);
        let low = table([VlArbBlock::LowLower, VlArbBlock::LowUpper]);
        let limit = self.agent.ports[port].vl_high_limit;
        // The tables came through the agent's parser: at most 64 entries of
        // data VLs, which the arbiter always takes.
        let _ = self.engine.set_port_arbitration(port, &high, &low, limit);
    }

    /// Queues a management packet out of `port` (VL15: one slot, what does
    /// not fit is dropped and counted by the engine).
    fn send_management(&mut self, port: u8, mad: &[u8; MAD_LEN], dlid: u16, slid: u16) {
        if !self.is_ib_port(port) {
            return;
        }
        let frame = inband::encode_frame(mad, dlid, slid, self.mac);
        let wire_len = (frame.len() - frames::ETHERNET_HEADER_LEN - dataplane::wire::ib::SHIM_LEN) as u32;
        let handle = self.frames.store(&frame);
        if !self.engine.send_management(usize::from(port), handle, wire_len) {
            self.frames.release(handle);
        }
    }

    /// PortInfo follows the link: Down without carrier or before flow
    /// control is exchanged, then Init until the SM moves it on. A change
    /// sets SwitchInfo's PortStateChange for the SM's light sweep.
    fn update_port_state(&mut self, number: u8) {
        let index = usize::from(number);
        let up = self.carrier[index] && self.engine.link_ready(index);
        let info = &mut self.agent.ports[index];
        let changed = match (up, info.state()) {
            (true, PortState::Down) => {
                info.port_state = PortState::Init.into();
                info.port_phys_state = PortPhysState::LinkUp.into();
                true
            }
            (false, state) if state != PortState::Down => {
                info.port_state = PortState::Down.into();
                info.port_phys_state = PortPhysState::Polling.into();
                self.engine.set_port_state(index, qos::ib::switch::LogicalState::Init);
                true
            }
            _ => false,
        };
        if changed && let Some(tables) = self.agent.switch.as_mut() {
            tables.info.port_state_change = true;
            self.send_link_state_trap();
        }
    }

    /// Trap 128, "link state of at least one port has changed" (IBA
    /// 14.2.5.1, table 144), for the master SM that PortInfo of port 0
    /// names. Before an SM has given us a LID and its own there is nobody
    /// to tell: its next sweep finds PortStateChange set instead.
    fn send_link_state_trap(&mut self) {
        self.agent.push_notice(NoticeRepr::link_state_change(self.lid()));
    }

    /// An SM on this switch's port 0 started (`true`) or stopped: sets or
    /// clears CapabilityMask IsSM and, when that changed it, tells the
    /// master SM with trap 144 (IBA 14.2.5.1), whose heavy sweep then meets
    /// the new SM (and hands over to it if it is higher) or forgets it.
    pub fn set_sm_capability(&mut self, is_sm: bool) {
        let port = &mut self.agent.ports[0];
        let mask = if is_sm {
            port.capability_mask | crate::sm::CAPABILITY_IS_SM
        } else {
            port.capability_mask & !crate::sm::CAPABILITY_IS_SM
        };
        if mask != port.capability_mask {
            port.capability_mask = mask;
            let lid = self.lid();
            self.agent.push_notice(NoticeRepr::capability_mask_change(lid, mask));
        }
    }

    /// The agent's traps due now (new, or repeated until the SM represses
    /// them), LID routed to the master SM.
    fn send_traps(&mut self, now: u64) {
        let lid = self.lid();
        for trap in self.agent.poll_traps(now) {
            let bytes = trap.smp.to_bytes();
            if trap.dlid == lid {
                self.for_sm.push(bytes);
            } else if let Some(port) = self.engine.lft.lookup(trap.dlid) {
                self.send_management(port, &bytes, trap.dlid, lid);
            }
        }
    }

    /// Sends what may go: data and management by VL arbitration where the
    /// downstream credit allows, then the flow-control packets due (the
    /// credit that forwarding just returned included).
    fn service(&mut self, now: u64, tx: &mut Transmit<'_>) {
        self.agent.advance_clock(now);
        self.send_traps(now);
        for number in 1..self.ports.len() {
            if self.carrier[number]
                && self.engine.link_ready(number)
                && now.saturating_sub(self.heard[number]) > self.silence_ns
            {
                // The credits start over when the peer speaks again.
                self.engine.reset_link(number);
                self.update_port_state(number as u8);
            }
        }
        for number in 1..self.ports.len() {
            let Some(_) = self.ports[number] else { continue };
            if !self.carrier[number] {
                continue;
            }
            while let Some(out) = self.engine.poll_transmit(number, now) {
                let frame = self.frames.get_mut(out.handle);
                frames::relay(frame, self.mac, out.vl);
                if !tx(number as u8, frame) {
                    self.counters.tx_refused += 1;
                }
                self.frames.release(out.handle);
            }
        }
        for number in 1..self.ports.len() {
            if self.ports[number].is_none() || !self.carrier[number] {
                continue;
            }
            while let Some(update) = self.engine.poll_flow_control(number, now) {
                let len = frames::flow_control(&mut self.flow_control_frame, self.mac, update);
                if !tx(number as u8, &self.flow_control_frame[..len]) {
                    self.counters.tx_refused += 1;
                }
            }
        }
    }

    /// Every configured port as `show ib port` reports it.
    pub fn port_status(&self) -> Vec<PortStatus> {
        self.ports
            .iter()
            .flatten()
            .map(|port| {
                let index = usize::from(port.number);
                let info = &self.agent.ports[index];
                let credits: Option<&LinkCredits> = self.engine.credits(index);
                let vls = (0..port.data_vls)
                    .map(|vl| VlStatus {
                        vl,
                        send_credit_blocks: credits.and_then(|c| c.send_credits(vl)).map_or(0, |s| s.available()),
                        receive_held_blocks: credits.and_then(|c| c.receive_credits(vl)).map_or(0, |r| r.occupied()),
                        queued: self.engine.queued(index, vl),
                    })
                    .collect();
                PortStatus {
                    number: port.number,
                    state: info.state(),
                    phys_state: PortPhysState::from(info.port_phys_state),
                    data_vls: port.data_vls,
                    mtu: port.mtu,
                    flow_control_ready: self.engine.link_ready(index),
                    counters: self.engine.counters(index).copied().unwrap_or_default(),
                    vls,
                }
            })
            .collect()
    }

    /// The LFT's routed entries: (LID, port).
    pub fn lft_entries(&self) -> Vec<(u16, u8)> {
        (1..self.engine.lft.top() as u16)
            .filter_map(|lid| self.engine.lft.lookup(lid).map(|port| (lid, port)))
            .collect()
    }
}
