//! A subnet management agent (SMA): the state every switch and channel
//! adapter exposes to the SM through SMPs (IBA vol. 1 section 14.2.4 and
//! the attributes of 14.2.5), and the directed-route hop handling of
//! section 14.2.2 (the rules Linux's `smi.c` implements as C14-9 and
//! C14-13).
//!
//! Sans-IO: [`Agent::receive`] takes the 256 bytes that arrived on a port
//! and says what to do with them ([`Disposition`]); the in-process fabric
//! (`crate::fabric`) moves them between agents. It answers Get and Set of
//! NodeInfo, NodeDescription, PortInfo, SwitchInfo, LinearForwardingTable,
//! SLtoVLMappingTable, VLArbitrationTable and SMInfo, with the status IBA
//! prescribes for anything else (bad version, unsupported method,
//! unsupported method/attribute, invalid value). M_Key protection is
//! [`mkey`]'s; the traps it sends to the master SM, repeated until
//! repressed, [`traps`]'.

mod dr;
pub mod mkey;
pub mod traps;

pub use dr::{Disposition, DrError};
pub use mkey::{LeaseTimer, MKeyCheck, TRAP_BAD_M_KEY};
pub use traps::{TrapOut, TrapSender};

use crate::packet::attributes::{
    AttributeId, LftBlock, LftBlockRepr, NodeDescription, NodeInfo, NodeInfoRepr, PortInfo, PortInfoRepr,
    PortPhysState, PortState, SlToVlRepr, SlToVlTable, SmInfo, SmInfoControl, SmInfoRepr, SwitchInfo, SwitchInfoRepr,
    VlArbEntry, VlArbRepr, VlArbTable,
};
use crate::packet::mad::InvalidField;
use crate::packet::smp::DATA_LEN;
use crate::packet::{MadStatus, Method, SmpRepr};
use crate::topology::{Node, NodeKind};

/// Linear forwarding table capacity of the agents we simulate (LIDs
/// 0..=0xBFFF, the whole unicast range).
pub const LINEAR_FDB_CAP: u16 = 0xc000;

/// Switch-only state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchTables {
    pub info: SwitchInfoRepr,
    /// Output port per LID; 0xff (no route) until set.
    pub lft: Vec<u8>,
}

/// Counters of what the agent did with SMPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AgentCounters {
    pub answered: u64,
    pub bad_status: u64,
    pub discarded: u64,
    /// Get, Set or TrapRepress that failed the M_Key check (discarded).
    pub m_key_violations: u64,
    /// Traps sent for the first time, and repeated.
    pub traps_sent: u64,
    pub traps_resent: u64,
    /// TrapRepress that ended an outstanding trap.
    pub traps_repressed: u64,
    /// SMInfo Gets and Sets without the SM's SM_Key (answered with the
    /// key zeroed; a Set not acted on).
    pub sm_key_mismatches: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    pub node_info: NodeInfoRepr,
    pub description: String,
    /// PortInfo per port, index = port number (a CA's entry 0 unused).
    pub ports: Vec<PortInfoRepr>,
    pub switch: Option<SwitchTables>,
    /// SL-to-VL tables: per (input port, output port) on a switch, one on
    /// a CA.
    pub sl2vl: Vec<[u8; 16]>,
    /// VL arbitration blocks 1..=4 per port.
    pub vl_arb: Vec<[[VlArbEntry; 32]; 4]>,
    /// Present when an SM runs on this node (answered on its port).
    pub sm_info: Option<SmInfoRepr>,
    /// An SMInfo Set's control for the SM on this node, until it takes it.
    pub sm_control: Option<SmInfoControl>,
    pub counters: AgentCounters,
    /// A misbehaving agent for tests: answers every SMP with this status.
    pub forced_status: Option<MadStatus>,
    /// The caller's clock as last given ([`Agent::advance_clock`]).
    clock_ns: u64,
    /// M_Key lease timer per port.
    m_key_leases: Vec<LeaseTimer>,
    traps: TrapSender,
}

impl Agent {
    /// An agent for `node` as the fabric cabled it: cabled ports are
    /// physically up in state Init, the others down.
    pub fn new(node: &Node) -> Agent {
        let switch = node.kind == NodeKind::Switch;
        let ports_len = usize::from(node.num_ports) + 1;
        let ports = (0..ports_len)
            .map(|port| {
                let cabled = port != 0 && node.ports[port].remote.is_some();
                let (state, phys) = if switch && port == 0 {
                    (PortState::Active, PortPhysState::LinkUp)
                } else if cabled {
                    (PortState::Init, PortPhysState::LinkUp)
                } else {
                    (PortState::Down, PortPhysState::Polling)
                };
                PortInfoRepr {
                    local_port_num: port as u8,
                    link_width_enabled: 2,
                    link_width_supported: 2,
                    link_width_active: 2,
                    link_speed_supported: 4,
                    link_speed_enabled: 4,
                    link_speed_active: 4,
                    port_state: state.into(),
                    port_phys_state: phys.into(),
                    link_down_default_state: 2,
                    neighbor_mtu: 5,
                    mtu_cap: 5,
                    vl_cap: 4,
                    operational_vls: 4,
                    vl_high_limit: 0,
                    vl_arbitration_high_cap: 32,
                    vl_arbitration_low_cap: 32,
                    // IsSM (bit 1) is set by whoever runs an SM here.
                    capability_mask: 0,
                    subnet_timeout: 18,
                    ..PortInfoRepr::default()
                }
            })
            .collect();
        let port_guid = if switch { node.guid } else { node.ports.get(1).map_or(node.guid, |p| p.guid) };
        Agent {
            node_info: NodeInfoRepr {
                base_version: 1,
                class_version: 1,
                node_type: node.kind.node_type(),
                num_ports: node.num_ports,
                system_image_guid: node.guid,
                node_guid: node.guid,
                port_guid,
                partition_cap: 8,
                device_id: 0x1003,
                revision: 1,
                local_port_num: 0,
                vendor_id: 0x0002c9,
            },
            description: node.description.clone(),
            ports,
            switch: switch.then(|| SwitchTables {
                info: SwitchInfoRepr {
                    linear_fdb_cap: LINEAR_FDB_CAP,
                    multicast_fdb_cap: 0,
                    life_time_value: 18,
                    enhanced_port0: true,
                    ..SwitchInfoRepr::default()
                },
                lft: Vec::new(),
            }),
            sl2vl: vec![[0u8; 16]; if switch { ports_len * ports_len } else { 1 }],
            vl_arb: vec![[[VlArbEntry::default(); 32]; 4]; ports_len],
            sm_info: None,
            sm_control: None,
            counters: AgentCounters::default(),
            forced_status: None,
            clock_ns: 0,
            m_key_leases: vec![LeaseTimer::default(); ports_len],
            traps: TrapSender::default(),
        }
    }

    pub fn is_switch(&self) -> bool {
        self.switch.is_some()
    }

    /// An agent for a node whose cabling is not known in advance (a real
    /// link's far end): ports 1..=`ports` physically up, in state Init.
    pub fn standalone(guid: u64, kind: NodeKind, ports: u8, description: &str) -> (Agent, Vec<u64>) {
        let mut node = Node::new(guid, kind, ports, description);
        let guids: Vec<u64> =
            (0..=u64::from(ports)).map(|p| if kind == NodeKind::Switch { guid } else { guid + p }).collect();
        for (port, entry) in node.ports.iter_mut().enumerate() {
            entry.guid = guids[port];
        }
        let mut agent = Agent::new(&node);
        for info in agent.ports.iter_mut().skip(1) {
            info.port_state = PortState::Init.into();
            info.port_phys_state = PortPhysState::LinkUp.into();
        }
        (agent, guids)
    }

    pub fn num_ports(&self) -> u8 {
        self.node_info.num_ports
    }

    /// The port GUID of `port` as NodeInfo reports it when an SMP enters
    /// there.
    fn port_guid(&self, port: u8, guids: &[u64]) -> u64 {
        if self.is_switch() { self.node_info.node_guid } else { guids.get(usize::from(port)).copied().unwrap_or(0) }
    }

    /// The LFT entry for `lid` (switches), if set.
    pub fn lft_port(&self, lid: u16) -> Option<u8> {
        let tables = self.switch.as_ref()?;
        tables.lft.get(usize::from(lid)).copied().filter(|&p| p != 0xff)
    }

    /// Processes an SMP addressed to this agent (the end of its directed
    /// route or its LID) that entered on `in_port`; turns `smp` into the
    /// response. `port_guids` are this node's port GUIDs by port number.
    /// False when it failed the M_Key check: no response at all (IBA
    /// 14.2.4.2), `smp` untouched.
    #[must_use]
    pub fn process(&mut self, in_port: u8, port_guids: &[u64], smp: &mut SmpRepr) -> bool {
        let check = self.check_m_key(in_port, smp);
        if check == MKeyCheck::Violation {
            return false;
        }
        let status = match self.forced_status {
            Some(status) => Err(status),
            None => self.answer(in_port, port_guids, smp),
        };
        smp.method = Method::GetResp;
        match status {
            Ok(()) => {
                smp.status = MadStatus::OK;
                self.counters.answered += 1;
            }
            Err(status) => {
                smp.status = status;
                self.counters.bad_status += 1;
            }
        }
        if check == MKeyCheck::PassHidingKey && smp.attribute_id == AttributeId::PortInfo {
            PortInfo::new_unchecked(&mut smp.data[..]).set_m_key(0);
        }
        true
    }

    fn answer(&mut self, in_port: u8, port_guids: &[u64], smp: &mut SmpRepr) -> Result<(), MadStatus> {
        let set = match smp.method {
            Method::Get => false,
            Method::Set => true,
            _ => return Err(MadStatus::invalid(InvalidField::MethodUnsupported)),
        };
        let invalid = MadStatus::invalid(InvalidField::InvalidValue);
        let unsupported = MadStatus::invalid(InvalidField::MethodAttributeUnsupported);
        let modifier = smp.attribute_modifier;
        let data = &mut smp.data;
        match smp.attribute_id {
            AttributeId::NodeInfo if !set => {
                let mut info = self.node_info;
                info.local_port_num = in_port;
                info.port_guid = self.port_guid(in_port, port_guids);
                *data = [0; DATA_LEN];
                info.emit(&mut NodeInfo::new_unchecked(&mut data[..]));
            }
            AttributeId::NodeDescription if !set => {
                NodeDescription::new_unchecked(&mut data[..]).set_text(&self.description);
            }
            AttributeId::PortInfo => {
                // A CA answers for the port the SMP came in on (IBA
                // 14.2.5.6: the modifier is ignored on CAs).
                let port = if self.is_switch() { modifier as usize } else { usize::from(in_port) };
                if modifier > 0xff || port >= self.ports.len() {
                    return Err(invalid);
                }
                if set {
                    let wanted = PortInfoRepr::parse(&PortInfo::new_unchecked(&data[..])).map_err(|_| invalid)?;
                    self.set_port_info(port, &wanted)?;
                }
                *data = [0; DATA_LEN];
                self.ports[port].emit(&mut PortInfo::new_unchecked(&mut data[..]));
            }
            AttributeId::SwitchInfo => {
                let tables = self.switch.as_mut().ok_or(unsupported)?;
                if set {
                    let wanted = SwitchInfoRepr::parse(&SwitchInfo::new_unchecked(&data[..])).map_err(|_| invalid)?;
                    if wanted.linear_fdb_top >= tables.info.linear_fdb_cap {
                        return Err(invalid);
                    }
                    tables.info.linear_fdb_top = wanted.linear_fdb_top;
                    tables.info.life_time_value = wanted.life_time_value;
                    // PortStateChange is cleared by writing 1 (14.2.5.4).
                    if wanted.port_state_change {
                        tables.info.port_state_change = false;
                    }
                }
                *data = [0; DATA_LEN];
                tables.info.emit(&mut SwitchInfo::new_unchecked(&mut data[..]));
            }
            AttributeId::LinearForwardingTable => {
                let tables = self.switch.as_mut().ok_or(unsupported)?;
                let block = modifier as usize;
                let first = block * 64;
                if first >= usize::from(tables.info.linear_fdb_cap) {
                    return Err(invalid);
                }
                if set {
                    let repr = LftBlockRepr::parse(&LftBlock::new_unchecked(&data[..])).map_err(|_| invalid)?;
                    if tables.lft.len() < first + 64 {
                        tables.lft.resize(first + 64, 0xff);
                    }
                    tables.lft[first..first + 64].copy_from_slice(&repr.ports);
                }
                *data = [0; DATA_LEN];
                let mut ports = [0xffu8; 64];
                if let Some(stored) = tables.lft.get(first..first + 64) {
                    ports.copy_from_slice(stored);
                }
                LftBlockRepr { ports }.emit(&mut LftBlock::new_unchecked(&mut data[..]));
            }
            AttributeId::SlToVlMappingTable => {
                let ports = self.ports.len();
                let index = match &self.switch {
                    Some(_) => {
                        let (input, output) = (((modifier >> 8) & 0xff) as usize, (modifier & 0xff) as usize);
                        if input >= ports || output >= ports {
                            return Err(invalid);
                        }
                        input * ports + output
                    }
                    None => 0,
                };
                let table = &mut self.sl2vl[index];
                if set {
                    let repr = SlToVlRepr::parse(&SlToVlTable::new_unchecked(&data[..])).map_err(|_| invalid)?;
                    *table = repr.vls;
                }
                let repr = SlToVlRepr { vls: *table };
                *data = [0; DATA_LEN];
                repr.emit(&mut SlToVlTable::new_unchecked(&mut data[..]));
            }
            AttributeId::VlArbitrationTable => {
                let block = (modifier >> 16) as usize;
                let port = if self.is_switch() { (modifier & 0xffff) as usize } else { usize::from(in_port) };
                if !(1..=4).contains(&block) || port >= self.ports.len() {
                    return Err(invalid);
                }
                if set {
                    let repr = VlArbRepr::parse(&VlArbTable::new_unchecked(&data[..])).map_err(|_| invalid)?;
                    self.vl_arb[port][block - 1] = repr.entries;
                }
                let repr = VlArbRepr { entries: self.vl_arb[port][block - 1] };
                *data = [0; DATA_LEN];
                repr.emit(&mut VlArbTable::new_unchecked(&mut data[..]));
            }
            AttributeId::SmInfo => {
                let mut info = self.sm_info.ok_or(unsupported)?;
                let request = SmInfoRepr::parse(&SmInfo::new_unchecked(&data[..]));
                if set && request.is_err() {
                    return Err(invalid);
                }
                // IBA 14.4.1: a requester without our SM_Key gets SMInfo
                // with the key zeroed, and its Set is not acted on (no
                // handover to or from an SM of another subnet).
                let key_matches = info.sm_key == 0 || request.is_ok_and(|r| r.sm_key == info.sm_key);
                if !key_matches {
                    self.counters.sm_key_mismatches += 1;
                    info.sm_key = 0;
                }
                *data = [0; DATA_LEN];
                info.emit(&mut SmInfo::new_unchecked(&mut data[..]));
                if set {
                    // The control (IBA 14.4.1, table 160: handover,
                    // acknowledge, disable, standby, discover) is the SM's
                    // to act on; the agent hands it over and answers with
                    // what the SM last published.
                    match SmInfoControl::from(modifier) {
                        SmInfoControl::Unknown(_) => return Err(invalid),
                        _ if !key_matches => return Err(invalid),
                        control => self.sm_control = Some(control),
                    }
                }
            }
            _ => return Err(unsupported),
        }
        Ok(())
    }

    /// A request in raw bytes that [`SmpRepr::parse_bytes`] refused for its
    /// base or class version: IBA 13.4.7 (C13-8) has the agent answer a Get
    /// or Set of a class it supports in another version with status "bad
    /// version" rather than drop it. The answer takes the same route a
    /// response would ([`Agent::receive`] for directed routes); it keeps the
    /// request's version octets, and such an answer is stepped back along
    /// its path here too. `None`: not an SMP request or directed-route
    /// response, or unparsable beyond its versions (discarded).
    pub fn answer_bad_version(
        &mut self,
        in_port: u8,
        port_guids: &[u64],
        mad: &[u8; crate::packet::MAD_LEN],
    ) -> Option<(Disposition, [u8; crate::packet::MAD_LEN])> {
        use crate::packet::mad::{BASE_VERSION, SM_CLASS_VERSION, field};
        use crate::packet::{MgmtClass, smp::SmpRouting};
        let class = MgmtClass::from(mad[field::MGMT_CLASS]);
        let method = Method::from(mad[field::METHOD]);
        let versions = (mad[field::BASE_VERSION], mad[field::CLASS_VERSION]);
        let request = matches!(method, Method::Get | Method::Set);
        // The answer steps back along its directed route through agents
        // that cannot parse it either.
        let returning = method.is_response() && class == MgmtClass::SubnDirectedRoute;
        if !matches!(class, MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute)
            || !(request || returning)
            || versions == (BASE_VERSION, SM_CLASS_VERSION)
        {
            return None;
        }
        let mut patched = *mad;
        patched[field::BASE_VERSION] = BASE_VERSION;
        patched[field::CLASS_VERSION] = SM_CLASS_VERSION;
        let mut smp = SmpRepr::parse_bytes(&patched).ok()?;
        let forced = if request {
            self.forced_status.replace(MadStatus::invalid(InvalidField::BadVersion))
        } else {
            self.forced_status
        };
        let disposition = match smp.routing {
            SmpRouting::DirectedRoute { .. } => self.receive(in_port, port_guids, &mut smp),
            SmpRouting::LidRouted => {
                if self.process(in_port, port_guids, &mut smp) {
                    Disposition::Respond { port: in_port }
                } else {
                    Disposition::Discard(DrError::MKeyViolation)
                }
            }
        };
        self.forced_status = forced;
        let mut bytes = smp.to_bytes();
        bytes[field::BASE_VERSION] = versions.0;
        bytes[field::CLASS_VERSION] = versions.1;
        Some((disposition, bytes))
    }

    /// PortInfo Set (IBA 14.2.5.6 and the port state machine of 7.2):
    /// LID, LMC and master SM LID where they apply, and the state moves the
    /// SM may ask for: Down, Init -> Armed, Armed -> Active. Anything else
    /// is refused whole with "invalid value".
    fn set_port_info(&mut self, port: usize, wanted: &PortInfoRepr) -> Result<(), MadStatus> {
        let invalid = MadStatus::invalid(InvalidField::InvalidValue);
        let current = self.ports[port].state();
        let next = match PortState::from(wanted.port_state) {
            PortState::NoChange => current,
            PortState::Down => PortState::Down,
            PortState::Armed if matches!(current, PortState::Init | PortState::Armed) => PortState::Armed,
            PortState::Active if matches!(current, PortState::Armed | PortState::Active) => PortState::Active,
            PortState::Active | PortState::Armed if self.is_switch() && port == 0 => current,
            _ => return Err(invalid),
        };
        if wanted.neighbor_mtu > self.ports[port].mtu_cap {
            return Err(invalid);
        }
        let entry = &mut self.ports[port];
        let carries_lid = self.switch.is_none() || port == 0;
        if carries_lid {
            if wanted.lid >= 0xc000 {
                return Err(invalid);
            }
            entry.lid = wanted.lid;
            entry.lmc = wanted.lmc & 0x7;
            entry.master_sm_lid = wanted.master_sm_lid;
            entry.subnet_timeout = wanted.subnet_timeout;
            // The M_Key fields (14.2.4): on a switch port 0's protect it all.
            entry.m_key = wanted.m_key;
            entry.m_key_protect_bits = wanted.m_key_protect_bits;
            entry.m_key_lease_period = wanted.m_key_lease_period;
            entry.m_key_violations = wanted.m_key_violations;
        }
        // NeighborMTU: what the port may send, up to its MTUCap (0: as it
        // is).
        if wanted.neighbor_mtu != 0 {
            entry.neighbor_mtu = wanted.neighbor_mtu;
        }
        // LimitOfHighPriority of the port's VL arbitration (IBA 7.6.9).
        entry.vl_high_limit = wanted.vl_high_limit;
        if wanted.operational_vls != 0 {
            entry.operational_vls = wanted.operational_vls.min(entry.vl_cap);
        }
        entry.port_state = next.into();
        Ok(())
    }
}

#[cfg(test)]
mod tests;
