//! The IB-like switch engine: what happens to a packet between its arrival on
//! one port and its departure on another, sans-IO.
//!
//! A data packet is taken into its input port's receive buffer for its VL
//! (credit accounting, [`super::credit`]), routed by DLID through the
//! [`LinearForwardingTable`], given its output VL by the SL-to-VL table of
//! (input port, output port), and queued in the virtual output queue of
//! (output port, output VL). Each output port's [`VlArbiter`] picks among the
//! VOQs whose head packet the downstream receiver has credit for, so a VL
//! without credit never blocks another VL or another port. When a packet
//! leaves, its blocks return to the input buffer and the upstream sender gets
//! the credit back with the next flow-control packet.
//!
//! Data moves by the logical port state (IBA 7.2): a port in Init takes and
//! sends management only; an Armed port takes data in (its first data
//! packet makes it Active, as hfi1's `set_armed_to_active` does) but sends
//! none; an Active port does both. A packet longer than the input's MTU or
//! the output's neighbour MTU is discarded and counted.
//!
//! A port may have a line rate ([`IbSwitch::set_port_rate`]): it then sends
//! no faster than the rate lets the frames carrying its packets onto the
//! wire ([`crate::shaper::LineRate`], the Ethernet traffic manager's
//! serialisation clock). A packet waiting for the line is not waiting for
//! credit: only the latter counts as xmit wait. The caller wakes at
//! [`IbSwitch::next_transmit_ns`].
//!
//! VL15 (management) is not flow controlled: each output port holds one
//! management packet, and one arriving while it is taken is discarded and
//! counted (IBA 7.9.4). Management packets for the switch itself are handed
//! to the caller for the subnet management agent.
//!
//! The engine holds descriptors, not frames: the caller keeps the bytes under
//! a handle. Queues are allocated once, large enough for every packet the
//! input buffers can hold, so nothing allocates per packet.

use std::collections::VecDeque;

use super::arbiter::{ArbiterError, ArbitrationEntry, VlArbiter};
use super::credit::{ConfigError, FlowControlUpdate, LinkCredits, MAX_DATA_VLS};
use super::lft::LinearForwardingTable;
use super::sl2vl::SlToVlTables;
use super::{MANAGEMENT_VL, blocks};
use crate::shaper::LineRate;

/// The permissive LID (IBA 4.1.3): any port's SMA accepts it.
pub const PERMISSIVE_LID: u16 = 0xffff;

/// A switch's static configuration.
#[derive(Debug, Clone)]
pub struct SwitchConfig {
    pub ports: usize,
    pub operational_vls: u8,
    /// Receive buffer per data VL per port, in 64-byte blocks.
    pub buffer_blocks: u16,
    pub flow_control_refresh_ns: u64,
    pub vl_arbitration_high: Vec<ArbitrationEntry>,
    pub vl_arbitration_low: Vec<ArbitrationEntry>,
    pub high_priority_limit: u8,
}

/// Why a configuration was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchConfigError {
    Ports(usize),
    Credits(ConfigError),
    Arbitration(ArbiterError),
}

impl core::fmt::Display for SwitchConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SwitchConfigError::Ports(n) => write!(f, "ports: {n} is not in 1..=254"),
            SwitchConfigError::Credits(error) => error.fmt(f),
            SwitchConfigError::Arbitration(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for SwitchConfigError {}

/// A port's logical state as far as data is concerned (IBA 7.2); the
/// physical link (flow control exchanged or not) is apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogicalState {
    /// Management only (also what a Down port is to the engine).
    #[default]
    Init,
    /// Data is taken in, none sent.
    Armed,
    Active,
}

/// A received data or management packet, as the caller parsed it from the
/// LRH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketDesc {
    /// The caller's name for the frame's bytes.
    pub handle: u32,
    pub vl: u8,
    pub sl: u8,
    pub dlid: u16,
    /// LRH + payload + VCRC bytes: what the buffers and credits count.
    pub wire_len: u32,
}

/// What became of a received packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// Queued for `out_port` on `vl`; it leaves through
    /// [`IbSwitch::poll_transmit`].
    Queued {
        out_port: u8,
        vl: u8,
    },
    /// A management packet for this switch's agent: the caller hands it on.
    ForAgent,
    Dropped(DropReason),
}

/// Why a packet was discarded (each is counted on the port).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// No LFT entry for the DLID.
    UnknownDlid,
    /// The SL-to-VL table maps the SL to VL15, or to a VL the output port
    /// does not operate.
    SlToVlDrop,
    /// More than the credit granted arrived on the VL.
    CreditOverrun,
    /// Data before flow control was exchanged on the input link, or on an
    /// input port in Init.
    LinkNotActive,
    /// The output port is not Active (PortXmitDiscards).
    OutputNotActive,
    /// Longer than the input port's MTU (PortRcvErrors).
    TooLong,
    /// Longer than the output port's neighbour MTU (PortXmitDiscards).
    MtuExceeded,
    /// The output's one-packet VL15 buffer was taken.
    Vl15Full,
    /// The input port number is out of range.
    NoSuchPort,
}

/// A packet to put on the wire now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    pub handle: u32,
    /// The VL to write into the LRH (recomputing the VCRC).
    pub vl: u8,
}

/// A port's line rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRate {
    pub bits_per_s: u64,
    /// Bytes each packet carries on the wire beyond LRH, payload and VCRC
    /// (the Ethernet header and delimiter shim of the IB-like link; the
    /// preamble, FCS and gap [`LineRate`] adds itself).
    pub frame_overhead: u32,
    /// How far a late caller may catch up with back-to-back packets.
    pub catch_up_ns: u64,
}

/// PortCounters-like counters (IBA 16.1.3.5). Data is counted in 32-bit
/// words as IBA does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortCounters {
    pub xmit_data: u64,
    pub rcv_data: u64,
    pub xmit_packets: u64,
    pub rcv_packets: u64,
    /// Transmit opportunities (calls of `poll_transmit`) when packets were
    /// queued but none had credit: the port waited on flow control.
    pub xmit_wait: u64,
    /// The time of those waits, ns: from the first `poll_transmit` that
    /// found data queued and none sendable to the one that sent data or
    /// found the queues empty (PortXmitWait counts ticks of it, IBA
    /// 16.1.3.5). [`IbSwitch::xmit_wait_ns`] adds a wait still running.
    pub xmit_wait_ns: u64,
    /// Packets received and discarded: unknown DLID or SL-to-VL drop
    /// (PortRcvSwitchRelayErrors).
    pub rcv_switch_relay_errors: u64,
    /// Credit overruns, data on an inactive link, packets longer than the
    /// port's MTU (PortRcvErrors).
    pub rcv_errors: u64,
    /// Packets routed to this port and discarded because it was not Active
    /// or they exceeded its neighbour MTU (PortXmitDiscards).
    pub xmit_discards: u64,
    /// Management packets lost to a full VL15 buffer (VL15Dropped).
    pub vl15_dropped: u64,
}

#[derive(Debug, Clone, Copy)]
struct Queued {
    handle: u32,
    in_port: u8,
    in_vl: u8,
    blocks: u16,
    wire_len: u32,
}

#[derive(Debug, Clone)]
struct Port {
    credits: LinkCredits,
    state: LogicalState,
    /// Longest data packet (LRH + payload + VCRC) taken in / sent.
    receive_max_len: u32,
    transmit_max_len: u32,
    arbiter: VlArbiter,
    /// The line's clock and the bytes it adds per packet, when rated.
    line: Option<(LineRate, u32)>,
    voqs: [VecDeque<Queued>; MAX_DATA_VLS],
    vl15: Option<Queued>,
    counters: PortCounters,
    /// Since when data has waited for credit (`None`: not waiting).
    waiting_since: Option<u64>,
}

/// The switch engine.
#[derive(Debug, Clone)]
pub struct IbSwitch {
    lid: u16,
    ports: Vec<Port>,
    pub lft: LinearForwardingTable,
    pub sl_to_vl: SlToVlTables,
}

impl IbSwitch {
    pub fn new(config: &SwitchConfig) -> Result<IbSwitch, SwitchConfigError> {
        if config.ports == 0 || config.ports > 254 {
            return Err(SwitchConfigError::Ports(config.ports));
        }
        let credits = LinkCredits::new(config.operational_vls, config.buffer_blocks, config.flow_control_refresh_ns)
            .map_err(SwitchConfigError::Credits)?;
        let arbiter =
            VlArbiter::new(&config.vl_arbitration_high, &config.vl_arbitration_low, config.high_priority_limit)
                .map_err(SwitchConfigError::Arbitration)?;
        // Every packet in the switch sits in some input buffer; one block is
        // the smallest packet, so this many descriptors never overflow.
        let voq_capacity = config.ports * usize::from(config.buffer_blocks);
        let port = Port {
            credits,
            state: LogicalState::Init,
            receive_max_len: u32::MAX,
            transmit_max_len: u32::MAX,
            arbiter,
            line: None,
            voqs: core::array::from_fn(|_| VecDeque::with_capacity(voq_capacity)),
            vl15: None,
            counters: PortCounters::default(),
            waiting_since: None,
        };
        Ok(IbSwitch {
            lid: 0,
            ports: vec![port; config.ports],
            lft: LinearForwardingTable::default(),
            sl_to_vl: SlToVlTables::new(config.ports),
        })
    }

    pub fn set_lid(&mut self, lid: u16) {
        self.lid = lid;
    }

    pub fn lid(&self) -> u16 {
        self.lid
    }

    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    pub fn counters(&self, port: usize) -> Option<&PortCounters> {
        self.ports.get(port).map(|port| &port.counters)
    }

    /// Gives `port` its own number of operational data VLs (1, 2, 4 or 8),
    /// with `buffer_blocks` per VL; its flow control starts over.
    pub fn set_port_vls(&mut self, port: usize, operational_vls: u8, buffer_blocks: u16) -> Result<(), ConfigError> {
        let Some(entry) = self.ports.get_mut(port) else { return Ok(()) };
        let refresh = entry.credits.refresh_ns();
        entry.credits = LinkCredits::new(operational_vls, buffer_blocks, refresh)?;
        Ok(())
    }

    /// Replaces `port`'s VL arbitration tables and LimitOfHighPriority (a
    /// VLArbitrationTable or PortInfo Set); the walk starts over.
    pub fn set_port_arbitration(
        &mut self,
        port: usize,
        high: &[ArbitrationEntry],
        low: &[ArbitrationEntry],
        high_limit: u8,
    ) -> Result<(), ArbiterError> {
        let arbiter = VlArbiter::new(high, low, high_limit)?;
        if let Some(entry) = self.ports.get_mut(port) {
            entry.arbiter = arbiter;
        }
        Ok(())
    }

    /// Gives `port` a line rate (`None`: as fast as the caller takes
    /// frames).
    pub fn set_port_rate(&mut self, port: usize, rate: Option<PortRate>) {
        if let Some(entry) = self.ports.get_mut(port) {
            entry.line = rate.map(|r| (LineRate::new(r.bits_per_s, r.catch_up_ns), r.frame_overhead));
        }
    }

    /// The earliest time after `now` a rated port with packets queued has
    /// its line free again, for the caller's timer (a port waiting for
    /// credit is woken by the flow-control packet that brings it).
    pub fn next_transmit_ns(&self, now: u64) -> Option<u64> {
        self.ports
            .iter()
            .filter(|port| port.vl15.is_some() || port.voqs.iter().any(|voq| !voq.is_empty()))
            .filter_map(|port| port.line.as_ref().map(|(line, _)| line.free_at(0)))
            .filter(|&at| at > now)
            .min()
    }

    /// Sets `port`'s logical state (the SM's PortInfo Sets, a link that went
    /// down).
    pub fn set_port_state(&mut self, port: usize, state: LogicalState) {
        if let Some(entry) = self.ports.get_mut(port) {
            entry.state = state;
        }
    }

    pub fn port_state(&self, port: usize) -> Option<LogicalState> {
        self.ports.get(port).map(|port| port.state)
    }

    /// Longest data packets `port` takes in and sends, LRH + payload + VCRC
    /// in bytes (from its MTU and its neighbour MTU).
    pub fn set_port_max_len(&mut self, port: usize, receive: u32, transmit: u32) {
        if let Some(entry) = self.ports.get_mut(port) {
            entry.receive_max_len = receive;
            entry.transmit_max_len = transmit;
        }
    }

    pub fn arbiter(&self, port: usize) -> Option<&VlArbiter> {
        self.ports.get(port).map(|port| &port.arbiter)
    }

    /// The link under `port` went down: its flow control starts over (the
    /// next link must exchange it again before data flows, IBA 7.9.4) and
    /// what waits for it stays queued.
    pub fn reset_link(&mut self, port: usize) {
        if let Some(entry) = self.ports.get_mut(port) {
            entry.credits.reset();
        }
    }

    /// The port's flow-control state (credits per VL), for `show ib port`.
    pub fn credits(&self, port: usize) -> Option<&LinkCredits> {
        self.ports.get(port).map(|port| &port.credits)
    }

    /// True once flow control is exchanged on `port`: it may go ACTIVE.
    pub fn link_ready(&self, port: usize) -> bool {
        self.ports.get(port).is_some_and(|port| port.credits.exchanged())
    }

    /// A packet arrived on `in_port`.
    pub fn receive(&mut self, in_port: usize, packet: PacketDesc) -> Received {
        let Some(port) = self.ports.get_mut(in_port) else {
            return Received::Dropped(DropReason::NoSuchPort);
        };
        port.counters.rcv_packets += 1;
        port.counters.rcv_data += u64::from(packet.wire_len / 4);
        if packet.vl == MANAGEMENT_VL {
            return self.receive_management(in_port, packet);
        }
        let size = blocks(packet.wire_len);
        if !port.credits.exchanged() {
            port.counters.rcv_errors += 1;
            return Received::Dropped(DropReason::LinkNotActive);
        }
        if port.credits.received(packet.vl, size).is_err() {
            port.counters.rcv_errors += 1;
            return Received::Dropped(DropReason::CreditOverrun);
        }
        let refused = match port.state {
            LogicalState::Init => Some(DropReason::LinkNotActive),
            _ if packet.wire_len > port.receive_max_len => Some(DropReason::TooLong),
            _ => None,
        };
        if let Some(reason) = refused {
            port.credits.released(packet.vl, size);
            port.counters.rcv_errors += 1;
            return Received::Dropped(reason);
        }
        if port.state == LogicalState::Armed {
            port.state = LogicalState::Active;
        }
        let route = self.lft.lookup(packet.dlid).map(usize::from).filter(|&out| out < self.ports.len());
        let Some(out_port) = route else {
            return self.drop_taken(in_port, packet.vl, size, DropReason::UnknownDlid);
        };
        let out_vl = self
            .sl_to_vl
            .map(in_port, out_port, packet.sl)
            .filter(|&vl| vl < self.ports[out_port].credits.operational_vls());
        let Some(out_vl) = out_vl else {
            return self.drop_taken(in_port, packet.vl, size, DropReason::SlToVlDrop);
        };
        let out = &mut self.ports[out_port];
        let refused = if out.state != LogicalState::Active {
            Some(DropReason::OutputNotActive)
        } else if packet.wire_len > out.transmit_max_len {
            Some(DropReason::MtuExceeded)
        } else {
            None
        };
        if let Some(reason) = refused {
            out.counters.xmit_discards += 1;
            self.ports[in_port].credits.released(packet.vl, size);
            return Received::Dropped(reason);
        }
        self.ports[out_port].voqs[usize::from(out_vl)].push_back(Queued {
            handle: packet.handle,
            in_port: in_port as u8,
            in_vl: packet.vl,
            blocks: size,
            wire_len: packet.wire_len,
        });
        Received::Queued { out_port: out_port as u8, vl: out_vl }
    }

    /// Gives back the buffer of a packet accepted and then discarded.
    fn drop_taken(&mut self, in_port: usize, vl: u8, size: u16, reason: DropReason) -> Received {
        let port = &mut self.ports[in_port];
        port.credits.released(vl, size);
        port.counters.rcv_switch_relay_errors += 1;
        Received::Dropped(reason)
    }

    fn receive_management(&mut self, in_port: usize, packet: PacketDesc) -> Received {
        if packet.dlid == self.lid || packet.dlid == PERMISSIVE_LID {
            return Received::ForAgent;
        }
        let Some(out_port) = self.lft.lookup(packet.dlid).map(usize::from).filter(|&out| out < self.ports.len()) else {
            self.ports[in_port].counters.rcv_switch_relay_errors += 1;
            return Received::Dropped(DropReason::UnknownDlid);
        };
        let out = &mut self.ports[out_port];
        if out.vl15.is_some() {
            self.ports[in_port].counters.vl15_dropped += 1;
            return Received::Dropped(DropReason::Vl15Full);
        }
        out.vl15 = Some(Queued {
            handle: packet.handle,
            in_port: in_port as u8,
            in_vl: MANAGEMENT_VL,
            blocks: 0,
            wire_len: packet.wire_len,
        });
        Received::Queued { out_port: out_port as u8, vl: MANAGEMENT_VL }
    }

    /// Queues a management packet the agent sends out of `out_port`
    /// (directed-route responses); false if the port's VL15 buffer is taken,
    /// which is counted as VL15Dropped.
    pub fn send_management(&mut self, out_port: usize, handle: u32, wire_len: u32) -> bool {
        let Some(port) = self.ports.get_mut(out_port) else {
            return false;
        };
        if port.vl15.is_some() {
            port.counters.vl15_dropped += 1;
            return false;
        }
        port.vl15 = Some(Queued { handle, in_port: out_port as u8, in_vl: MANAGEMENT_VL, blocks: 0, wire_len });
        true
    }

    /// The next packet `out_port` may send at `now`, chosen by VL
    /// arbitration among the VOQs whose head the downstream receiver has
    /// credit for, once the port's line (if rated) is free.
    pub fn poll_transmit(&mut self, out_port: usize, now: u64) -> Option<Transmit> {
        let port = self.ports.get_mut(out_port)?;
        let Port { credits, arbiter, voqs, vl15, counters, state, line, waiting_since, .. } = port;
        if line.as_ref().is_some_and(|(line, _)| !line.idle(now)) {
            return None;
        }
        // What was queued before the port left Active waits for it again.
        let ready = credits.exchanged() && *state == LogicalState::Active;
        let chosen = arbiter.select(|vl| {
            if vl == MANAGEMENT_VL {
                return vl15.map(|queued| queued.wire_len);
            }
            let head = voqs.get(usize::from(vl))?.front()?;
            (ready && credits.can_send(vl, head.blocks)).then_some(head.wire_len)
        });
        let Some(vl) = chosen else {
            if voqs.iter().any(|voq| !voq.is_empty()) {
                counters.xmit_wait += 1;
                waiting_since.get_or_insert(now);
            } else if let Some(since) = waiting_since.take() {
                counters.xmit_wait_ns += now.saturating_sub(since);
            }
            return None;
        };
        if vl != MANAGEMENT_VL
            && let Some(since) = waiting_since.take()
        {
            counters.xmit_wait_ns += now.saturating_sub(since);
        }
        let queued = if vl == MANAGEMENT_VL {
            vl15.take()?
        } else {
            let queued = voqs[usize::from(vl)].pop_front()?;
            credits.sent(vl, queued.blocks);
            queued
        };
        counters.xmit_packets += 1;
        counters.xmit_data += u64::from(queued.wire_len / 4);
        if let Some((line, overhead)) = line {
            line.send(now, queued.wire_len + *overhead);
        }
        if vl != MANAGEMENT_VL {
            self.ports[usize::from(queued.in_port)].credits.released(queued.in_vl, queued.blocks);
        }
        Some(Transmit { handle: queued.handle, vl })
    }

    /// Time data on `port` has waited for credit up to `now`, ns (the
    /// counter plus a wait still running).
    pub fn xmit_wait_ns(&self, port: usize, now: u64) -> u64 {
        self.ports.get(port).map_or(0, |port| {
            port.counters.xmit_wait_ns + port.waiting_since.map_or(0, |since| now.saturating_sub(since))
        })
    }

    /// A flow-control packet arrived on `port`.
    pub fn flow_control_received(&mut self, port: usize, update: FlowControlUpdate) -> bool {
        self.ports.get_mut(port).is_some_and(|port| port.credits.flow_control_received(update))
    }

    /// The next flow-control packet `port` must send at `now_ns`.
    pub fn poll_flow_control(&mut self, port: usize, now_ns: u64) -> Option<FlowControlUpdate> {
        self.ports.get_mut(port)?.credits.poll_flow_control(now_ns)
    }

    /// Earliest refresh due over all ports, for the caller's timer.
    pub fn next_timer_ns(&self) -> u64 {
        self.ports.iter().map(|port| port.credits.next_refresh_ns()).min().unwrap_or(u64::MAX)
    }

    /// Bytes (LRH + payload + VCRC) queued for `port` on data `vl`.
    pub fn queued_bytes(&self, port: usize, vl: u8) -> u32 {
        let voq = self.ports.get(port).and_then(|port| port.voqs.get(usize::from(vl)));
        voq.map_or(0, |voq| voq.iter().map(|queued| queued.wire_len).sum())
    }

    /// The link under `port` is gone: the data queued for it can never
    /// leave, and holds buffer (so credit) at the inputs it came from,
    /// stalling them for every other output too. IBA discards such packets
    /// once their head-of-queue lifetime runs out (18.2.5.4, HOQLife);
    /// this discards them at once, counted as PortXmitDiscards, gives the
    /// inputs their buffer back, and hands the packets' handles to the
    /// caller to free.
    pub fn discard_queued(&mut self, port: usize, discarded: &mut Vec<u32>) {
        let Some(entry) = self.ports.get_mut(port) else { return };
        let mut freed = Vec::new();
        for voq in &mut entry.voqs {
            for queued in voq.drain(..) {
                entry.counters.xmit_discards += 1;
                discarded.push(queued.handle);
                freed.push((queued.in_port, queued.in_vl, queued.blocks));
            }
        }
        for (in_port, vl, blocks) in freed {
            self.ports[usize::from(in_port)].credits.released(vl, blocks);
        }
    }

    /// Packets queued for `port` on data `vl`.
    pub fn queued(&self, port: usize, vl: u8) -> usize {
        self.ports.get(port).and_then(|port| port.voqs.get(usize::from(vl))).map_or(0, VecDeque::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::credit::LinkCredits;

    const REFRESH: u64 = 1_000_000;

    fn config(ports: usize) -> SwitchConfig {
        SwitchConfig {
            ports,
            operational_vls: 2,
            buffer_blocks: 8,
            flow_control_refresh_ns: REFRESH,
            vl_arbitration_high: vec![],
            vl_arbitration_low: vec![ArbitrationEntry { vl: 0, weight: 1 }, ArbitrationEntry { vl: 1, weight: 1 }],
            high_priority_limit: 255,
        }
    }

    /// A peer at the far end of each switch port.
    struct Fabric {
        switch: IbSwitch,
        peers: Vec<LinkCredits>,
    }

    impl Fabric {
        fn new(ports: usize) -> Fabric {
            let mut switch = IbSwitch::new(&config(ports)).unwrap();
            for lid in 1..=ports as u16 {
                switch.lft.set(lid, (lid - 1) as u8).unwrap();
            }
            let mut table = [0; 16];
            table[1] = 1;
            for a in 0..ports {
                for b in 0..ports {
                    switch.sl_to_vl.set_table(a, b, table);
                }
            }
            for port in 0..ports {
                switch.set_port_state(port, LogicalState::Active);
            }
            let peers = (0..ports).map(|_| LinkCredits::new(2, 8, REFRESH).unwrap()).collect();
            Fabric { switch, peers }
        }

        fn exchange(&mut self, port: usize, now: u64) {
            loop {
                let mut moved = false;
                while let Some(update) = self.switch.poll_flow_control(port, now) {
                    self.peers[port].flow_control_received(update);
                    moved = true;
                }
                while let Some(update) = self.peers[port].poll_flow_control(now) {
                    self.switch.flow_control_received(port, update);
                    moved = true;
                }
                if !moved {
                    break;
                }
            }
        }

        /// The peer on `port` sends if it has credit; true if it did.
        fn inject(&mut self, port: usize, handle: u32, dlid: u16, sl: u8, wire_len: u32) -> bool {
            let vl = sl; // the hosts map SL n to VL n
            let size = blocks(wire_len);
            if !self.peers[port].can_send(vl, size) {
                return false;
            }
            self.peers[port].sent(vl, size);
            let received = self.switch.receive(port, PacketDesc { handle, vl, sl, dlid, wire_len });
            assert!(matches!(received, Received::Queued { .. }), "{received:?}");
            true
        }
    }

    #[test]
    fn data_moves_by_port_state_and_armed_goes_active_on_data() {
        let mut fabric = Fabric::new(2);
        fabric.exchange(0, 0);
        fabric.exchange(1, 0);
        let packet = PacketDesc { handle: 1, vl: 0, sl: 0, dlid: 2, wire_len: 64 };
        // Input in Init: management only; the credit comes back.
        fabric.switch.set_port_state(0, LogicalState::Init);
        assert_eq!(fabric.switch.receive(0, packet), Received::Dropped(DropReason::LinkNotActive));
        assert_eq!(fabric.switch.counters(0).unwrap().rcv_errors, 1);
        assert_eq!(fabric.switch.credits(0).unwrap().receive_credits(0).unwrap().occupied(), 0);
        // Input Armed: data is taken and the port becomes Active; an output
        // only Armed sends nothing (counted there).
        fabric.switch.set_port_state(0, LogicalState::Armed);
        fabric.switch.set_port_state(1, LogicalState::Armed);
        assert_eq!(fabric.switch.receive(0, packet), Received::Dropped(DropReason::OutputNotActive));
        assert_eq!(fabric.switch.port_state(0), Some(LogicalState::Active));
        assert_eq!(fabric.switch.port_state(1), Some(LogicalState::Armed));
        assert_eq!(fabric.switch.counters(1).unwrap().xmit_discards, 1);
        assert_eq!(fabric.switch.credits(0).unwrap().receive_credits(0).unwrap().occupied(), 0);
        fabric.switch.set_port_state(1, LogicalState::Active);
        assert_eq!(fabric.switch.receive(0, packet), Received::Queued { out_port: 1, vl: 0 });
    }

    #[test]
    fn packets_over_the_mtu_are_discarded_and_counted() {
        let mut fabric = Fabric::new(2);
        fabric.exchange(0, 0);
        fabric.exchange(1, 0);
        // Port 0 takes up to 266 bytes (a 256-byte MTU), port 1's neighbour
        // up to 138.
        fabric.switch.set_port_max_len(0, 266, 266);
        fabric.switch.set_port_max_len(1, 266, 138);
        let packet = |handle, wire_len| PacketDesc { handle, vl: 0, sl: 0, dlid: 2, wire_len };
        assert_eq!(fabric.switch.receive(0, packet(1, 330)), Received::Dropped(DropReason::TooLong));
        assert_eq!(fabric.switch.counters(0).unwrap().rcv_errors, 1);
        assert_eq!(fabric.switch.receive(0, packet(2, 266)), Received::Dropped(DropReason::MtuExceeded));
        assert_eq!(fabric.switch.counters(1).unwrap().xmit_discards, 1);
        assert_eq!(fabric.switch.receive(0, packet(3, 138)), Received::Queued { out_port: 1, vl: 0 });
        assert_eq!(fabric.switch.poll_transmit(1, 0), Some(Transmit { handle: 3, vl: 0 }));
        // Every discarded packet's blocks went back to the sender.
        assert_eq!(fabric.switch.credits(0).unwrap().receive_credits(0).unwrap().occupied(), 0);
    }

    #[test]
    fn a_rated_port_sends_at_its_line_rate_and_waiting_for_the_line_is_no_xmit_wait() {
        let mut fabric = Fabric::new(2);
        fabric.exchange(0, 0);
        fabric.exchange(1, 0);
        // 8 Mb/s, one byte a microsecond: a 100-byte packet with 16 bytes of
        // frame and 24 of preamble, FCS and gap holds the line 140 us.
        fabric.switch.set_port_rate(1, Some(PortRate { bits_per_s: 8_000_000, frame_overhead: 16, catch_up_ns: 0 }));
        for handle in 1..=3 {
            let packet = PacketDesc { handle, vl: 0, sl: 0, dlid: 2, wire_len: 100 };
            assert!(matches!(fabric.switch.receive(0, packet), Received::Queued { .. }));
        }
        assert_eq!(fabric.switch.poll_transmit(1, 0), Some(Transmit { handle: 1, vl: 0 }));
        assert_eq!(fabric.switch.poll_transmit(1, 0), None, "the line is busy");
        assert_eq!(fabric.switch.next_transmit_ns(0), Some(140_000));
        assert_eq!(fabric.switch.poll_transmit(1, 139_999), None);
        assert_eq!(fabric.switch.poll_transmit(1, 140_000), Some(Transmit { handle: 2, vl: 0 }));
        assert_eq!(fabric.switch.counters(1).unwrap().xmit_wait, 0, "waiting for the line is not for credit");
        // Late by more than the catch-up allows (none here): the line starts
        // from now, it does not send a burst.
        assert_eq!(fabric.switch.poll_transmit(1, 1_000_000), Some(Transmit { handle: 3, vl: 0 }));
        assert_eq!(fabric.switch.next_transmit_ns(1_000_000), None, "nothing queued");
        // Unrated, the port sends whenever credit allows.
        fabric.switch.set_port_rate(1, None);
        let packet = PacketDesc { handle: 4, vl: 0, sl: 0, dlid: 2, wire_len: 100 };
        assert!(matches!(fabric.switch.receive(0, packet), Received::Queued { .. }));
        assert_eq!(fabric.switch.poll_transmit(1, 1_000_001), Some(Transmit { handle: 4, vl: 0 }));
    }

    #[test]
    fn data_waits_for_flow_control_exchange() {
        let mut fabric = Fabric::new(2);
        let packet = PacketDesc { handle: 1, vl: 0, sl: 0, dlid: 2, wire_len: 64 };
        assert_eq!(fabric.switch.receive(0, packet), Received::Dropped(DropReason::LinkNotActive));
        assert!(!fabric.switch.link_ready(0));
        fabric.exchange(0, 0);
        assert!(fabric.switch.link_ready(0));
        assert_eq!(fabric.switch.receive(0, packet), Received::Queued { out_port: 1, vl: 0 });
        // Port 1's link is not up: the packet waits, it is not dropped.
        assert_eq!(fabric.switch.poll_transmit(1, 0), None);
        assert_eq!(fabric.switch.counters(1).unwrap().xmit_wait, 1);
        assert_eq!(fabric.switch.xmit_wait_ns(1, 700), 700, "still waiting at 700 ns");
        fabric.exchange(1, 0);
        assert_eq!(fabric.switch.poll_transmit(1, 1_000), Some(Transmit { handle: 1, vl: 0 }));
        assert_eq!(fabric.switch.counters(1).unwrap().xmit_wait_ns, 1_000, "timed to the send");
        assert_eq!(fabric.switch.xmit_wait_ns(1, 5_000), 1_000, "no longer waiting");
    }

    #[test]
    fn unknown_dlid_is_dropped_counted_and_its_credit_returned() {
        let mut fabric = Fabric::new(2);
        fabric.exchange(0, 0);
        for handle in 0..20 {
            // 20 packets of 8 blocks through an 8-block buffer: each one's
            // credit must come back for the next to be sent.
            assert!(fabric.peers[0].can_send(0, 8));
            fabric.peers[0].sent(0, 8);
            let packet = PacketDesc { handle, vl: 0, sl: 0, dlid: 99, wire_len: 512 };
            assert_eq!(fabric.switch.receive(0, packet), Received::Dropped(DropReason::UnknownDlid));
            fabric.exchange(0, 0);
        }
        assert_eq!(fabric.switch.counters(0).unwrap().rcv_switch_relay_errors, 20);
    }

    #[test]
    fn a_fast_sender_into_a_blocked_output_is_throttled_and_loses_nothing() {
        let mut fabric = Fabric::new(3);
        for port in 0..3 {
            fabric.exchange(port, 0);
        }
        // Port 2's peer stops returning credit after the first exchange.
        let mut sent = 0u32;
        let mut delivered = Vec::new();
        for round in 0..100u32 {
            while fabric.inject(0, sent, 3, 0, 128) {
                sent += 1;
            }
            while let Some(transmit) = fabric.switch.poll_transmit(2, 0) {
                delivered.push(transmit.handle);
                fabric.peers[2].received(transmit.vl, 2).unwrap();
            }
            fabric.exchange(0, u64::from(round));
            // Only every 10th round does the slow receiver drain its buffer.
            if round % 10 == 9 {
                let held = fabric.peers[2].receive_credits(0).unwrap().occupied();
                fabric.peers[2].released(0, held);
                fabric.exchange(2, u64::from(round));
            }
        }
        while let Some(transmit) = fabric.switch.poll_transmit(2, 0) {
            delivered.push(transmit.handle);
        }
        let in_flight = fabric.switch.queued(2, 0) as u32;
        assert_eq!(delivered.len() as u32 + in_flight, sent, "nothing lost");
        assert!(delivered.windows(2).all(|w| w[0] < w[1]), "in order");
        assert!(fabric.switch.counters(2).unwrap().xmit_wait > 0, "throttled by credit");
        assert!(sent < 100 * 4, "the sender was held back");
    }

    #[test]
    fn a_blocked_vl_or_port_never_blocks_another() {
        let mut fabric = Fabric::new(3);
        for port in 0..3 {
            fabric.exchange(port, 0);
        }
        // Fill port 1's downstream VL0 buffer: nothing more on VL0 goes out.
        for handle in 0..4 {
            assert!(fabric.inject(0, handle, 2, 0, 128));
            assert!(fabric.switch.poll_transmit(1, 0).is_some());
            fabric.exchange(0, 0);
        }
        assert!(fabric.inject(0, 10, 2, 0, 128));
        assert_eq!(fabric.switch.poll_transmit(1, 0), None);
        fabric.exchange(0, 1);
        // Same output, other VL: goes.
        assert!(fabric.inject(0, 11, 2, 1, 128));
        assert_eq!(fabric.switch.poll_transmit(1, 0), Some(Transmit { handle: 11, vl: 1 }));
        // Other output, same input VL: goes.
        assert!(fabric.inject(0, 12, 3, 0, 128));
        assert_eq!(fabric.switch.poll_transmit(2, 0), Some(Transmit { handle: 12, vl: 0 }));
        assert_eq!(fabric.switch.queued(1, 0), 1);
    }

    #[test]
    fn sl_mapped_to_vl15_is_dropped() {
        let mut fabric = Fabric::new(2);
        fabric.exchange(0, 0);
        let mut table = [0; 16];
        table[5] = MANAGEMENT_VL;
        fabric.switch.sl_to_vl.set_table(0, 1, table);
        fabric.peers[0].sent(0, 1);
        let packet = PacketDesc { handle: 1, vl: 0, sl: 5, dlid: 2, wire_len: 64 };
        assert_eq!(fabric.switch.receive(0, packet), Received::Dropped(DropReason::SlToVlDrop));
    }

    #[test]
    fn management_goes_first_holds_one_packet_and_reaches_the_agent() {
        let mut fabric = Fabric::new(2);
        fabric.switch.set_lid(7);
        let smp = |handle, dlid| PacketDesc { handle, vl: MANAGEMENT_VL, sl: 0, dlid, wire_len: 280 };
        // VL15 needs no flow-control exchange.
        assert_eq!(fabric.switch.receive(0, smp(1, 7)), Received::ForAgent);
        assert_eq!(fabric.switch.receive(0, smp(2, PERMISSIVE_LID)), Received::ForAgent);
        assert_eq!(fabric.switch.receive(0, smp(3, 2)), Received::Queued { out_port: 1, vl: MANAGEMENT_VL });
        assert_eq!(fabric.switch.receive(0, smp(4, 2)), Received::Dropped(DropReason::Vl15Full));
        assert_eq!(fabric.switch.counters(0).unwrap().vl15_dropped, 1);
        assert_eq!(fabric.switch.poll_transmit(1, 0), Some(Transmit { handle: 3, vl: MANAGEMENT_VL }));
    }

    #[test]
    fn discarding_a_down_ports_queue_gives_the_inputs_their_buffer_back() {
        let mut fabric = Fabric::new(3);
        for port in 0..3 {
            fabric.exchange(port, 0);
        }
        // Two packets from port 0 for LID 2 (port 1), whose peer gives no
        // more credit once they are queued: they hold port 0's buffer.
        assert!(fabric.inject(0, 7, 2, 1, 128));
        assert!(fabric.inject(0, 8, 2, 1, 128));
        let held = fabric.switch.credits(0).unwrap().receive_credits(1).unwrap().occupied();
        assert_eq!(held, 4);
        let mut discarded = Vec::new();
        fabric.switch.discard_queued(1, &mut discarded);
        assert_eq!(discarded, [7, 8]);
        assert_eq!(fabric.switch.queued(1, 1), 0);
        assert_eq!(fabric.switch.counters(1).unwrap().xmit_discards, 2);
        assert_eq!(fabric.switch.credits(0).unwrap().receive_credits(1).unwrap().occupied(), 0);
    }
}
