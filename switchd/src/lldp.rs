//! The LLDP agent (IEEE 802.1AB-2016), sans-IO: it builds this switch's
//! LLDPDUs, decides when each port transmits, and keeps the table of what
//! neighbours announced, expiring entries when their TTL runs out. It owns
//! no socket and no clock: the caller feeds it frames and the time.
//!
//! # Contract with the I/O side
//!
//! ```text
//! agent.add_port(port, "eth1", now)          // a front-panel port comes up
//! agent.on_frame(port, frame, now)           // an LLDP frame received on `port`
//!                                            //   (EtherType 0x88cc, untagged, as punted by the pipeline)
//! agent.poll(now, &mut out)                  // call at least every second; appends (port, frame)
//!                                            //   pairs to send out of `port` as is (SAI hostif tx:
//!                                            //   no lookup, no VLAN tag)
//! agent.next_deadline()                      // when poll next has work, to sleep until then
//! agent.shutdown(&mut out)                   // TTL-0 LLDPDUs for a clean stop (802.1AB 9.2.7.3)
//! ```
//!
//! Ports are the pipeline's port indices ([`PortId`]). Times are monotonic
//! nanoseconds, like everywhere in the daemon.

use std::collections::BTreeMap;

use dataplane::pipeline::PortId;
use dataplane::wire::lldp::{self, LldpPdu};
use dataplane::wire::{
    ChassisId, EtherType, EthernetAddress, EthernetFrame, EthernetRepr, LldpRepr, PortId as LldpPortId,
};

const NS_PER_SEC: u64 = 1_000_000_000;
/// Neighbours kept per port; 802.1AB allows several (a hub, a misbehaving
/// peer), but a flood of distinct chassis ids must not grow the table
/// without bound.
pub const MAX_NEIGHBORS_PER_PORT: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentConfig {
    /// Announced as the Chassis ID (MAC address subtype) and used as the
    /// frames' source address.
    pub chassis_mac: EthernetAddress,
    pub system_name: String,
    /// msgTxInterval.
    pub tx_interval_secs: u32,
    /// What neighbours keep our information for (msgTxInterval x msgTxHold).
    pub ttl_secs: u16,
}

/// What one neighbour announced on one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbor {
    pub port: PortId,
    pub announced: LldpRepr,
    /// When the information was last refreshed.
    pub updated: u64,
    pub expires: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentCounters {
    pub tx_frames: u64,
    pub rx_frames: u64,
    /// Frames that were not a valid LLDPDU (counted and dropped).
    pub rx_discarded: u64,
    /// Neighbours removed because their TTL ran out (802.1AB ageout).
    pub ageouts: u64,
    /// New neighbours refused because the port's table was full.
    pub too_many_neighbors: u64,
}

#[derive(Debug, Clone)]
struct PortState {
    name: String,
    description: Option<String>,
    next_tx: u64,
}

#[derive(Debug)]
pub struct LldpAgent {
    config: AgentConfig,
    ports: BTreeMap<PortId, PortState>,
    /// One entry per port and MSAP identifier (chassis id + port id,
    /// 802.1AB 6.5), ordered by port; small, so a vector.
    neighbors: Vec<Neighbor>,
    counters: AgentCounters,
}

impl LldpAgent {
    pub fn new(config: AgentConfig) -> LldpAgent {
        LldpAgent { config, ports: BTreeMap::new(), neighbors: Vec::new(), counters: AgentCounters::default() }
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    pub fn counters(&self) -> AgentCounters {
        self.counters
    }

    /// Starts announcing on `port`; the first LLDPDU is due at once.
    pub fn add_port(&mut self, port: PortId, name: impl Into<String>, description: Option<String>, now: u64) {
        self.ports.insert(port, PortState { name: name.into(), description, next_tx: now });
    }

    /// New timers from a commit. A changed TTL is a change of what this
    /// switch announces (802.1AB 9.2.7.3, somethingChangedLocal): every
    /// port sends at once, so neighbours do not keep the old TTL.
    pub fn set_timers(&mut self, tx_interval_secs: u32, ttl_secs: u16, now: u64) {
        if (self.config.tx_interval_secs, self.config.ttl_secs) == (tx_interval_secs, ttl_secs) {
            return;
        }
        self.config.tx_interval_secs = tx_interval_secs;
        self.config.ttl_secs = ttl_secs;
        for state in self.ports.values_mut() {
            state.next_tx = now;
        }
    }

    /// A new system name from a commit (the switch renamed): as a new TTL,
    /// a change of what this switch announces, sent on every port at once.
    pub fn set_system_name(&mut self, name: &str, now: u64) {
        if self.config.system_name == name {
            return;
        }
        self.config.system_name = name.to_owned();
        for state in self.ports.values_mut() {
            state.next_tx = now;
        }
    }

    /// Stops announcing on every port and forgets every neighbour.
    pub fn remove_all_ports(&mut self) {
        self.ports.clear();
        self.neighbors.clear();
    }

    /// Stops announcing on `port` and forgets its neighbours.
    pub fn remove_port(&mut self, port: PortId) {
        self.ports.remove(&port);
        self.neighbors.retain(|n| n.port != port);
    }

    pub fn port_name(&self, port: PortId) -> Option<&str> {
        self.ports.get(&port).map(|p| p.name.as_str())
    }

    /// An Ethernet frame with EtherType LLDP received on `port`. Invalid
    /// frames are counted and dropped; the error says why.
    pub fn on_frame(&mut self, port: PortId, frame: &[u8], now: u64) -> dataplane::wire::Result<()> {
        let result = self.receive(port, frame, now);
        match result {
            Ok(()) => self.counters.rx_frames += 1,
            Err(_) => self.counters.rx_discarded += 1,
        }
        result
    }

    fn receive(&mut self, port: PortId, frame: &[u8], now: u64) -> dataplane::wire::Result<()> {
        if !self.ports.contains_key(&port) {
            return Err(dataplane::wire::Error::Unsupported);
        }
        let ethernet = EthernetFrame::new_checked(frame)?;
        if ethernet.ethertype() != EtherType::Lldp {
            return Err(dataplane::wire::Error::Unsupported);
        }
        let announced = LldpRepr::parse(&LldpPdu::new_checked(ethernet.payload())?)?;
        let existing = self.neighbors.iter().position(|n| {
            n.port == port && n.announced.chassis_id == announced.chassis_id && n.announced.port_id == announced.port_id
        });
        // 802.1AB 9.2.7.7.1: a TTL of 0 asks receivers to forget at once.
        if announced.ttl == 0 {
            if let Some(i) = existing {
                self.neighbors.remove(i);
            }
            return Ok(());
        }
        let expires = now + u64::from(announced.ttl) * NS_PER_SEC;
        let neighbor = Neighbor { port, announced, updated: now, expires };
        match existing {
            Some(i) => self.neighbors[i] = neighbor,
            None if self.neighbors.iter().filter(|n| n.port == port).count() >= MAX_NEIGHBORS_PER_PORT => {
                self.counters.too_many_neighbors += 1;
            }
            None => {
                let at = self.neighbors.partition_point(|n| n.port <= port);
                self.neighbors.insert(at, neighbor);
            }
        }
        Ok(())
    }

    /// Expires neighbours and appends the LLDPDUs due at `now` to `out`.
    pub fn poll(&mut self, now: u64, out: &mut Vec<(PortId, Vec<u8>)>) {
        let before = self.neighbors.len();
        self.neighbors.retain(|n| n.expires > now);
        self.counters.ageouts += (before - self.neighbors.len()) as u64;

        let interval = u64::from(self.config.tx_interval_secs.max(1)) * NS_PER_SEC;
        let due: Vec<PortId> = self.ports.iter().filter(|(_, p)| p.next_tx <= now).map(|(port, _)| *port).collect();
        for port in due {
            if let Some(frame) = self.frame(port, self.config.ttl_secs) {
                out.push((port, frame));
                self.counters.tx_frames += 1;
            }
            let state = self.ports.get_mut(&port).expect("due port exists");
            // Keep the cadence even if poll ran late, without bursting.
            state.next_tx = (state.next_tx + interval).max(now + 1);
        }
    }

    /// The earliest time [`LldpAgent::poll`] has something to do.
    pub fn next_deadline(&self) -> Option<u64> {
        let tx = self.ports.values().map(|p| p.next_tx);
        let expiry = self.neighbors.iter().map(|n| n.expires);
        tx.chain(expiry).min()
    }

    /// LLDPDUs with TTL 0 on every port, so neighbours forget this switch
    /// now rather than when the TTL runs out.
    pub fn shutdown(&mut self, out: &mut Vec<(PortId, Vec<u8>)>) {
        let ports: Vec<PortId> = self.ports.keys().copied().collect();
        for port in ports {
            if let Some(frame) = self.frame(port, 0) {
                out.push((port, frame));
                self.counters.tx_frames += 1;
            }
        }
    }

    /// The neighbour table, ordered by port.
    pub fn neighbors(&self) -> impl Iterator<Item = &Neighbor> + '_ {
        self.neighbors.iter()
    }

    /// This switch's LLDPDU for `port`, in an Ethernet frame.
    fn frame(&self, port: PortId, ttl: u16) -> Option<Vec<u8>> {
        let state = self.ports.get(&port)?;
        let repr = LldpRepr {
            chassis_id: ChassisId::MacAddress(self.config.chassis_mac),
            port_id: LldpPortId::InterfaceName(state.name.clone()),
            ttl,
            port_description: Some(state.description.clone().unwrap_or_else(|| state.name.clone())),
            system_name: Some(self.config.system_name.clone()),
            other_tlvs: Vec::new(),
        };
        let ethernet =
            EthernetRepr { dst_addr: lldp::DESTINATION, src_addr: self.config.chassis_mac, ethertype: EtherType::Lldp };
        let header = ethernet.buffer_len();
        // Pad to the 60-byte minimum frame (without FCS).
        let mut frame = vec![0u8; (header + repr.buffer_len()).max(60)];
        ethernet.emit(&mut EthernetFrame::new_unchecked(&mut frame[..]));
        let pdu_len = repr.buffer_len();
        repr.emit(&mut LldpPdu::new_unchecked(&mut frame[header..header + pdu_len])).ok()?;
        Some(frame)
    }
}

/// Text for a chassis or port id, as `show lldp` prints it.
pub fn chassis_id_text(id: &ChassisId) -> String {
    match id {
        ChassisId::MacAddress(mac) => mac.to_string(),
        ChassisId::ChassisComponent(s)
        | ChassisId::InterfaceAlias(s)
        | ChassisId::PortComponent(s)
        | ChassisId::InterfaceName(s)
        | ChassisId::LocallyAssigned(s) => s.clone(),
        ChassisId::NetworkAddress(address) => format!("{address:?}"),
        ChassisId::Other { subtype, id } => format!("subtype {subtype}: {}", hex(id)),
    }
}

pub fn port_id_text(id: &LldpPortId) -> String {
    match id {
        LldpPortId::MacAddress(mac) => mac.to_string(),
        LldpPortId::InterfaceAlias(s)
        | LldpPortId::PortComponent(s)
        | LldpPortId::InterfaceName(s)
        | LldpPortId::LocallyAssigned(s) => s.clone(),
        LldpPortId::NetworkAddress(address) => format!("{address:?}"),
        LldpPortId::AgentCircuitId(bytes) => hex(bytes),
        LldpPortId::Other { subtype, id } => format!("subtype {subtype}: {}", hex(id)),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = NS_PER_SEC;

    fn agent(name: &str, mac: u8) -> LldpAgent {
        LldpAgent::new(AgentConfig {
            chassis_mac: EthernetAddress([0x02, 0, 0, 0, 0, mac]),
            system_name: name.into(),
            tx_interval_secs: 30,
            ttl_secs: 120,
        })
    }

    #[test]
    fn announces_at_once_then_every_interval() {
        let mut a = agent("leaf1", 1);
        a.add_port(0, "eth1", None, 5 * SEC);
        let mut out = Vec::new();
        a.poll(5 * SEC, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, 0);
        out.clear();
        a.poll(34 * SEC, &mut out);
        assert!(out.is_empty());
        assert_eq!(a.next_deadline(), Some(35 * SEC));
        a.poll(35 * SEC, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn frame_is_a_valid_lldpdu_to_the_nearest_bridge_group() {
        let mut a = agent("leaf1", 1);
        a.add_port(3, "eth4", Some("to spine1".into()), 0);
        let mut out = Vec::new();
        a.poll(0, &mut out);
        let frame = &out[0].1;
        assert!(frame.len() >= 60);
        let ethernet = EthernetFrame::new_checked(&frame[..]).unwrap();
        assert_eq!(ethernet.dst_addr(), lldp::DESTINATION);
        assert_eq!(ethernet.ethertype(), EtherType::Lldp);
        let repr = LldpRepr::parse(&LldpPdu::new_checked(ethernet.payload()).unwrap()).unwrap();
        assert_eq!(repr.chassis_id, ChassisId::MacAddress(EthernetAddress([2, 0, 0, 0, 0, 1])));
        assert_eq!(repr.port_id, LldpPortId::InterfaceName("eth4".into()));
        assert_eq!(repr.ttl, 120);
        assert_eq!(repr.system_name.as_deref(), Some("leaf1"));
        assert_eq!(repr.port_description.as_deref(), Some("to spine1"));
    }

    /// A commit's new timers: the new TTL goes out at once on every port,
    /// then the new interval holds; the same timers again change nothing.
    #[test]
    fn new_timers_announce_at_once() {
        let ttl_of = |frame: &[u8]| {
            let ethernet = EthernetFrame::new_checked(frame).unwrap();
            LldpRepr::parse(&LldpPdu::new_checked(ethernet.payload()).unwrap()).unwrap().ttl
        };
        let mut a = agent("leaf1", 1);
        a.add_port(0, "eth1", None, 0);
        a.add_port(1, "eth2", None, 0);
        let mut out = Vec::new();
        a.poll(0, &mut out);
        out.clear();
        a.set_timers(2, 6, 10 * SEC);
        a.poll(10 * SEC, &mut out);
        assert_eq!(out.len(), 2, "both ports announce the new TTL at once");
        assert!(out.iter().all(|(_, frame)| ttl_of(frame) == 6));
        assert_eq!(a.next_deadline(), Some(12 * SEC), "then every 2 s");
        a.set_timers(2, 6, 11 * SEC);
        assert_eq!(a.next_deadline(), Some(12 * SEC), "unchanged timers send nothing extra");
        a.remove_all_ports();
        assert_eq!(a.next_deadline(), None);
    }

    /// Two agents wired back to back learn each other, and forget each
    /// other when announcements stop for longer than the TTL.
    #[test]
    fn neighbours_learn_and_age_out() {
        let (mut leaf, mut spine) = (agent("leaf1", 1), agent("spine1", 2));
        leaf.add_port(0, "eth1", None, 0);
        spine.add_port(7, "eth8", None, 0);
        let mut out = Vec::new();
        spine.poll(0, &mut out);
        leaf.on_frame(0, &out[0].1, SEC).unwrap();
        let n: Vec<&Neighbor> = leaf.neighbors().collect();
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].port, 0);
        assert_eq!(n[0].announced.system_name.as_deref(), Some("spine1"));
        assert_eq!(port_id_text(&n[0].announced.port_id), "eth8");
        assert_eq!(n[0].expires, 121 * SEC);

        out.clear();
        leaf.poll(120 * SEC, &mut out);
        assert_eq!(leaf.neighbors().count(), 1);
        leaf.poll(121 * SEC, &mut out);
        assert_eq!(leaf.neighbors().count(), 0);
        assert_eq!(leaf.counters().ageouts, 1);
    }

    #[test]
    fn shutdown_lldpdu_removes_the_neighbour_at_once() {
        let (mut leaf, mut spine) = (agent("leaf1", 1), agent("spine1", 2));
        leaf.add_port(0, "eth1", None, 0);
        spine.add_port(0, "eth1", None, 0);
        let mut out = Vec::new();
        spine.poll(0, &mut out);
        leaf.on_frame(0, &out[0].1, 0).unwrap();
        out.clear();
        spine.shutdown(&mut out);
        leaf.on_frame(0, &out[0].1, SEC).unwrap();
        assert_eq!(leaf.neighbors().count(), 0);
    }

    #[test]
    fn garbage_is_counted_not_learned() {
        let mut leaf = agent("leaf1", 1);
        leaf.add_port(0, "eth1", None, 0);
        let mut frame = vec![0u8; 60];
        frame[12] = 0x88;
        frame[13] = 0xcc;
        frame[14] = 0xff; // a TLV running past the frame
        assert!(leaf.on_frame(0, &frame, 0).is_err());
        assert!(leaf.on_frame(0, &frame[..10], 0).is_err());
        assert!(leaf.on_frame(9, &frame, 0).is_err(), "unknown port");
        assert_eq!(leaf.counters().rx_discarded, 3);
        assert_eq!(leaf.neighbors().count(), 0);
    }

    #[test]
    fn neighbour_table_per_port_is_bounded() {
        let mut leaf = agent("leaf1", 1);
        leaf.add_port(0, "eth1", None, 0);
        for i in 0..20u8 {
            let mut other = agent("x", i);
            other.add_port(0, "eth1", None, 0);
            let mut out = Vec::new();
            other.poll(0, &mut out);
            leaf.on_frame(0, &out[0].1, 0).unwrap();
        }
        assert_eq!(leaf.neighbors().count(), MAX_NEIGHBORS_PER_PORT);
        assert_eq!(leaf.counters().too_many_neighbors, 20 - MAX_NEIGHBORS_PER_PORT as u64);
    }
}
