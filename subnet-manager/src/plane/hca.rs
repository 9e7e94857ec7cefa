//! An HCA-like endpoint's IB-like plane: one port, its credits per data VL,
//! and the CA's agent.
//!
//! A data packet is sent only when the link's credit covers it
//! ([`HcaPlane::send`] says [`SendError::NoCredit`] otherwise: the caller
//! waits, nothing is dropped). One that arrives for our LID is held in the
//! receive buffer, its blocks not yet returned to the sender, until the
//! application takes it ([`HcaPlane::take`]): a slow reader throttles the
//! fabric up to the sender, as IBA's credits mean to.

use std::collections::VecDeque;

use dataplane::wire::EthernetAddress;
use dataplane::wire::ib::{LrhRepr, MANAGEMENT_VL, NextHeader};
use qos::ib::blocks;
use qos::ib::credit::{ConfigError, LinkCredits};
use qos::shaper::LineRate;

use super::frames::{self, FrameError, LinkPacket};
use super::{default_sl_to_vl, describe_port, max_wire_len};
use crate::agent::{Agent, Disposition};
use crate::packet::attributes::{PortPhysState, PortState};
use crate::packet::smp::{PERMISSIVE_LID, SmpRouting};
use crate::packet::{MAD_LEN, SmpRepr};
use crate::topology::NodeKind;
use crate::transport::inband;

/// The endpoint's one port.
pub const PORT: u8 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HcaConfig {
    pub guid: u64,
    pub description: String,
    pub mac: EthernetAddress,
    pub data_vls: u8,
    /// IB MTU in bytes: the largest payload a data packet carries.
    pub mtu: u16,
    pub buffer_blocks: u16,
    pub flow_control_refresh_ns: u64,
    /// The port's line rate in bits per second, counting the Ethernet
    /// frames it writes (`None`: as fast as the link takes them).
    pub line_rate_bps: Option<u64>,
}

/// A data packet taken from the receive buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    pub slid: u16,
    pub sl: u8,
    pub vl: u8,
    pub payload: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// The link has no credit for it on its VL now: try again later.
    NoCredit,
    /// The port's line is still sending the previous frames (a rated
    /// port): try again at [`HcaPlane::line_free_at`].
    LineBusy,
    /// Flow control is not exchanged yet, or the port is down.
    LinkDown,
    /// The port is up but not Active yet (IBA 7.2: the SM arms it and
    /// activates it).
    NotActive,
    /// More than the MTU, or not a whole number of 4-byte words.
    BadLength,
}

/// PortCounters-like counters of the port (data in 4-byte words).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HcaCounters {
    pub xmit_packets: u64,
    pub xmit_data: u64,
    pub rcv_packets: u64,
    pub rcv_data: u64,
    /// Sends refused for lack of credit.
    pub xmit_wait: u64,
    /// Data for a LID that is not ours.
    pub rcv_wrong_dlid: u64,
    /// Data beyond the credit we granted.
    pub rcv_overruns: u64,
    /// Data while the port was not Armed or Active, or longer than the MTU
    /// (PortRcvErrors).
    pub rcv_errors: u64,
    pub malformed: u64,
    pub bad_smps: u64,
}

pub struct HcaPlane {
    credits: LinkCredits,
    agent: Agent,
    guids: Vec<u64>,
    config: HcaConfig,
    carrier: bool,
    held: VecDeque<(Delivered, u16)>,
    counters: HcaCounters,
    flow_control_frame: [u8; 64],
    for_sm: Vec<[u8; MAD_LEN]>,
    line: Option<LineRate>,
}

/// Writes a frame out of the port; false if it did not take it.
pub type Transmit<'a> = dyn FnMut(&[u8]) -> bool + 'a;

impl HcaPlane {
    pub fn new(config: HcaConfig) -> Result<HcaPlane, ConfigError> {
        let credits = LinkCredits::new(config.data_vls, config.buffer_blocks, config.flow_control_refresh_ns)?;
        let (mut agent, guids) = Agent::standalone(config.guid, NodeKind::Ca, 1, &config.description);
        let info = &mut agent.ports[usize::from(PORT)];
        describe_port(info, config.data_vls, config.mtu);
        info.port_state = PortState::Down.into();
        info.port_phys_state = PortPhysState::Polling.into();
        agent.sl2vl[0] = default_sl_to_vl(config.data_vls);
        Ok(HcaPlane {
            credits,
            agent,
            guids,
            carrier: true,
            held: VecDeque::new(),
            counters: HcaCounters::default(),
            flow_control_frame: [0; 64],
            for_sm: Vec::new(),
            line: config.line_rate_bps.map(|bps| LineRate::new(bps, super::LINE_CATCH_UP_NS)),
            config,
        })
    }

    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    pub fn agent_mut(&mut self) -> &mut Agent {
        &mut self.agent
    }

    pub fn port_guids(&self) -> &[u64] {
        &self.guids
    }

    pub fn counters(&self) -> HcaCounters {
        self.counters
    }

    pub fn credits(&self) -> &LinkCredits {
        &self.credits
    }

    /// Our LID (0 until an SM or a PortInfo Set gives one).
    pub fn lid(&self) -> u16 {
        self.agent.ports[usize::from(PORT)].lid
    }

    pub fn state(&self) -> PortState {
        self.agent.ports[usize::from(PORT)].state()
    }

    /// Flow control exchanged and carrier: data may flow.
    pub fn link_ready(&self) -> bool {
        self.carrier && self.credits.exchanged()
    }

    /// Packets received and not yet taken.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// MADs for an SM on this endpoint.
    pub fn take_for_sm(&mut self) -> Vec<[u8; MAD_LEN]> {
        core::mem::take(&mut self.for_sm)
    }

    /// The VL data on `sl` leaves on (the port's SL-to-VL table).
    pub fn vl_for(&self, sl: u8) -> u8 {
        let vl = self.agent.sl2vl[0][usize::from(sl & 0x0f)];
        if vl < self.credits.operational_vls() { vl } else { 0 }
    }

    pub fn set_carrier(&mut self, up: bool) {
        if self.carrier != up {
            self.carrier = up;
            if !up {
                self.credits.reset();
            }
            self.update_port_state();
        }
    }

    /// A frame received on the port.
    pub fn receive(&mut self, now: u64, frame: &[u8], tx: &mut Transmit<'_>) {
        match frames::parse(frame) {
            Err(FrameError::NotIbLike) => return,
            Err(FrameError::Malformed(_)) => self.counters.malformed += 1,
            Ok(LinkPacket::FlowControl(update)) => {
                self.credits.flow_control_received(update);
                self.update_port_state();
            }
            Ok(LinkPacket::Data { lrh, .. }) if lrh.vl == MANAGEMENT_VL => self.agent_receive(frame, tx),
            Ok(LinkPacket::Data { lrh, wire_len }) => {
                self.counters.rcv_packets += 1;
                self.counters.rcv_data += u64::from(wire_len / 4);
                let size = blocks(wire_len);
                let state = self.state();
                if self.credits.received(lrh.vl, size).is_err() {
                    self.counters.rcv_overruns += 1;
                } else if !matches!(state, PortState::Armed | PortState::Active)
                    || wire_len > max_wire_len(self.config.mtu)
                {
                    self.counters.rcv_errors += 1;
                    self.credits.released(lrh.vl, size);
                } else if !self.is_ours(lrh.dlid) {
                    self.counters.rcv_wrong_dlid += 1;
                    self.credits.released(lrh.vl, size);
                } else {
                    // An Armed port's first data packet makes it Active.
                    self.agent.ports[usize::from(PORT)].port_state = PortState::Active.into();
                    let payload = frames::payload(frame, &lrh).to_vec();
                    self.held.push_back((Delivered { slid: lrh.slid, sl: lrh.sl, vl: lrh.vl, payload }, size));
                }
            }
        }
        self.poll(now, tx);
    }

    fn is_ours(&self, dlid: u16) -> bool {
        let info = &self.agent.ports[usize::from(PORT)];
        let base = info.lid;
        base != 0 && dlid >= base && u32::from(dlid) < u32::from(base) + (1u32 << info.lmc)
    }

    /// Takes the oldest packet received; its buffer blocks go back to the
    /// sender with the next flow-control packet.
    pub fn take(&mut self) -> Option<Delivered> {
        let (delivered, size) = self.held.pop_front()?;
        self.credits.released(delivered.vl, size);
        Some(delivered)
    }

    /// Sends `payload` (whole 4-byte words, at most the MTU) to `dlid` on
    /// `sl`, if the link's credit covers it now.
    pub fn send(
        &mut self,
        now: u64,
        dlid: u16,
        sl: u8,
        payload: &[u8],
        tx: &mut Transmit<'_>,
    ) -> Result<(), SendError> {
        if payload.len() > usize::from(self.config.mtu) || !payload.len().is_multiple_of(4) {
            return Err(SendError::BadLength);
        }
        if !self.link_ready() {
            return Err(SendError::LinkDown);
        }
        if self.state() != PortState::Active {
            return Err(SendError::NotActive);
        }
        let vl = self.vl_for(sl);
        let lrh = LrhRepr { vl, sl, next_header: NextHeader::Raw, dlid, slid: self.lid(), payload_len: payload.len() };
        let size = blocks(lrh.buffer_len() as u32);
        if self.line.as_ref().is_some_and(|line| !line.idle(now)) {
            return Err(SendError::LineBusy);
        }
        if !self.credits.can_send(vl, size) {
            self.counters.xmit_wait += 1;
            return Err(SendError::NoCredit);
        }
        let frame = frames::data(self.config.mac, &lrh, payload).map_err(|_| SendError::BadLength)?;
        self.credits.sent(vl, size);
        if let Some(line) = &mut self.line {
            line.send(now, frame.len() as u32);
        }
        self.counters.xmit_packets += 1;
        self.counters.xmit_data += (lrh.buffer_len() / 4) as u64;
        tx(&frame);
        self.poll(now, tx);
        Ok(())
    }

    /// Flow-control packets due (a change, or the periodic refresh).
    pub fn poll(&mut self, now: u64, tx: &mut Transmit<'_>) {
        if !self.carrier {
            return;
        }
        // Traps (256, bad M_Key) to the master SM, repeated until repressed.
        self.agent.advance_clock(now);
        let lid = self.lid();
        for trap in self.agent.poll_traps(now) {
            tx(&inband::encode_frame(&trap.smp.to_bytes(), trap.dlid, lid, self.config.mac));
        }
        while let Some(update) = self.credits.poll_flow_control(now) {
            let len = frames::flow_control(&mut self.flow_control_frame, self.config.mac, update);
            tx(&self.flow_control_frame[..len]);
        }
    }

    /// When a rated port's line is free for the next frame.
    pub fn line_free_at(&self) -> Option<u64> {
        self.line.as_ref().map(|line| line.free_at(0))
    }

    pub fn next_timer_ns(&self) -> u64 {
        let agent = [self.agent.next_trap_ns(), self.agent.next_lease_expiry_ns()];
        agent.into_iter().flatten().fold(self.credits.next_refresh_ns(), u64::min)
    }

    /// Sends an SMP from an SM on this endpoint (directed route: out of the
    /// port, or answered here for hop count 0).
    pub fn send_from_sm(&mut self, mad: &[u8; MAD_LEN], dlid: u16, tx: &mut Transmit<'_>) {
        let Ok(mut smp) = SmpRepr::parse_bytes(mad) else { return };
        let guids = self.guids.clone();
        let disposition = match smp.routing {
            SmpRouting::DirectedRoute { .. } => self.agent.originate(PORT, &guids, &mut smp),
            SmpRouting::LidRouted if dlid == self.lid() => {
                if !self.agent.process(PORT, &guids, &mut smp) {
                    return;
                }
                Disposition::ToLocalSm
            }
            SmpRouting::LidRouted => Disposition::Forward { port: PORT },
        };
        match disposition {
            Disposition::ToLocalSm => self.for_sm_push(smp.to_bytes()),
            Disposition::Forward { .. } | Disposition::Respond { .. } => {
                tx(&inband::encode_frame(&smp.to_bytes(), dlid, self.lid(), self.config.mac));
            }
            Disposition::Discard(_) => {}
        }
    }

    fn agent_receive(&mut self, frame: &[u8], tx: &mut Transmit<'_>) {
        let Some((mad, dlid, slid)) = inband::decode_frame(frame) else {
            self.counters.bad_smps += 1;
            return;
        };
        let guids = self.guids.clone();
        let lid = self.lid();
        let Ok(mut smp) = SmpRepr::parse_bytes(&mad) else {
            match self.agent.answer_bad_version(PORT, &guids, &mad) {
                Some((Disposition::Respond { .. }, bytes)) => {
                    let dlid = if bytes[1] == 0x81 { PERMISSIVE_LID } else { slid };
                    tx(&inband::encode_frame(&bytes, dlid, lid, self.config.mac));
                }
                Some((Disposition::ToLocalSm, bytes)) => self.for_sm_push(bytes),
                _ => self.counters.bad_smps += 1,
            }
            return;
        };
        if smp.method.is_response() || smp.method == crate::packet::Method::Trap {
            // For an SM here: a directed-route response steps back to the
            // start of its path first.
            if matches!(smp.routing, SmpRouting::LidRouted)
                || self.agent.receive(PORT, &guids, &mut smp) == Disposition::ToLocalSm
            {
                self.for_sm_push(smp.to_bytes());
            }
            return;
        }
        if smp.method == crate::packet::Method::TrapRepress {
            // The SM has our notice; it wants no answer (IBA 13.4.9).
            self.agent.trap_repressed(PORT, &smp);
            return;
        }
        let (disposition, response_dlid) = match smp.routing {
            SmpRouting::DirectedRoute { .. } => (self.agent.receive(PORT, &guids, &mut smp), PERMISSIVE_LID),
            SmpRouting::LidRouted if dlid == lid || dlid == PERMISSIVE_LID => {
                if !self.agent.process(PORT, &guids, &mut smp) {
                    return;
                }
                (Disposition::Respond { port: PORT }, slid)
            }
            SmpRouting::LidRouted => return,
        };
        if let Disposition::Respond { .. } = disposition {
            // The LID may have just been set by this very SMP.
            tx(&inband::encode_frame(&smp.to_bytes(), response_dlid, self.lid(), self.config.mac));
        }
    }

    /// Keeps a MAD for an SM here; bounded, as nobody may be taking them
    /// (the answers to a tool's SMPs sent from this port's wire, say).
    fn for_sm_push(&mut self, mad: [u8; MAD_LEN]) {
        if self.for_sm.len() < 256 {
            self.for_sm.push(mad);
        }
    }

    /// PortInfo follows the link: Down until carrier and flow control, then
    /// Init until the SM moves it on.
    fn update_port_state(&mut self) {
        let up = self.link_ready();
        let info = &mut self.agent.ports[usize::from(PORT)];
        match (up, info.state()) {
            (true, PortState::Down) => {
                info.port_state = PortState::Init.into();
                info.port_phys_state = PortPhysState::LinkUp.into();
            }
            (false, state) if state != PortState::Down => {
                info.port_state = PortState::Down.into();
                info.port_phys_state = PortPhysState::Polling.into();
            }
            _ => {}
        }
    }
}
