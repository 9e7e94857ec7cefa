//! The subnet manager, sans-IO (IBA vol. 1 chapter 14.4 for its duties):
//! a heavy sweep discovers the fabric with directed-route SMPs from the
//! SM's port (NodeInfo; then NodeDescription, SwitchInfo and every port's
//! PortInfo; then one hop further out of every port that is up), assigns
//! LIDs, routes, and programs: PortInfo (LID, LMC, master SM LID),
//! SwitchInfo (LinearFDBTop), the LFT blocks that changed, SL-to-VL and VL
//! arbitration tables, then every port Armed and Active. Light sweeps poll
//! SwitchInfo's PortStateChange; a change or a trap brings a heavy sweep.
//!
//! Inputs are MADs and timer ticks with the time (`u64` nanoseconds);
//! outputs are SMPs to send ([`OutgoingSmp`]) and [`SmEvent`]s. The
//! transports (`crate::transport`, the in-process fabric) move the bytes.

mod reconfigure;
pub mod requester;

use std::collections::VecDeque;

use rustc_hash::{FxHashMap, FxHashSet};

pub use reconfigure::{Reconfigured, live_change_refusal};
pub use requester::{Completion, OutgoingSmp, Requester, RequesterCounters, SmpFailure};

use crate::agent::TRAP_BAD_M_KEY;
use crate::lid::{self, LidMap};
use crate::packet::attributes::{
    AttributeId, LftBlock, LftBlockRepr, NodeDescription, NodeDescriptionRepr, NodeInfo, NodeInfoRepr, Notice,
    NoticeRepr, PortInfo, PortInfoRepr, PortPhysState, PortState, SlToVlRepr, SlToVlTable, SmInfo, SmInfoControl,
    SmInfoRepr, SmState, SwitchInfo, SwitchInfoRepr, VlArbBlock, VlArbEntry, VlArbRepr, VlArbTable, sl2vl_modifier,
    vl_arb_modifier,
};

use crate::packet::attributes::TRAP_LINK_STATE_CHANGE;
use crate::packet::smp::{DATA_LEN, MAX_HOPS, SmpRouting};
use crate::packet::{Method, SmpRepr};
use crate::routing::{self, Engine, Lfts, RoutingConfig, RoutingError};
use crate::topology::{Node, NodeKind, PortRef, Topology};

/// Generic trap 258: bad Q_Key (IBA 14.2.5.1, table 144; 257 is bad P_Key).
const TRAP_BAD_Q_KEY: u16 = 258;

/// PortInfo CapabilityMask bit 1: an SM runs on this port (IBA 14.2.5.6).
pub const CAPABILITY_IS_SM: u32 = 0x0000_0002;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmConfig {
    pub routing: RoutingConfig,
    /// SMPs in flight at once.
    pub window: usize,
    pub timeout_ns: u64,
    /// Transmissions after the first before an SMP is reported failed.
    pub retries: u8,
    pub light_sweep_interval_ns: u64,
    /// SMInfo priority (0-15); higher wins mastership.
    pub priority: u8,
    /// PortInfo SubnetTimeOut given to every port.
    pub subnet_timeout: u8,
    /// Program SL-to-VL and VL arbitration tables (off by default, like
    /// OpenSM without `--qos`: on a switch that is one SMP per (input,
    /// output) port pair; agents that refuse them only cause log lines).
    /// dfsssp's VL layers need it.
    pub program_qos: bool,
    /// Polls of a silent master before a standby takes over.
    pub master_poll_retries: u8,
    /// SMInfo SM_Key (IBA 14.4.1, OpenSM's `sm_key`): SMs of one subnet
    /// share it; one answering with another key is ignored (no following,
    /// no handover). 0: not checked.
    pub sm_key: u64,
    /// The M_Key given to every CA port and switch port 0, and carried in
    /// every SMP this SM sends (IBA 14.2.4; OpenSM's `m_key`,
    /// `m_key_protection_level`, `m_key_lease_period`). 0: no protection.
    pub m_key: u64,
    pub m_key_protect_bits: u8,
    /// Seconds; 0: the lease never runs out.
    pub m_key_lease_period: u16,
}

impl Default for SmConfig {
    fn default() -> Self {
        SmConfig {
            routing: RoutingConfig::default(),
            window: 32,
            timeout_ns: 200_000_000,
            retries: 3,
            light_sweep_interval_ns: 10_000_000_000,
            priority: 0,
            subnet_timeout: 18,
            program_qos: false,
            master_poll_retries: 3,
            sm_key: 0,
            m_key: 0,
            m_key_protect_bits: 0,
            m_key_lease_period: 0,
        }
    }
}

/// What the SM is doing (SMInfo's SMState, plus where a master is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before `start`.
    Idle,
    Discovering,
    /// Discovery found nothing beyond the SM's own node (its links not up
    /// yet): nothing to manage and no mastership to claim, as OpenSM waits
    /// while its port is down. Sweeps again at the interval or a link
    /// change.
    Waiting,
    /// Setting LIDs, LFTs and QoS tables.
    Programming,
    Arming,
    Activating,
    /// Master with the fabric up; light sweeps on the interval.
    Master,
    /// Another SM is master; we poll it.
    Standby,
}

/// What happened, for logs, counters and `swcli show ib sm`.
#[derive(Debug, Clone, PartialEq)]
pub enum SmEvent {
    SweepStarted {
        heavy: bool,
        sweep: u64,
    },
    Discovered {
        switches: usize,
        cas: usize,
        took_ns: u64,
    },
    /// A node that answered with a bad status or not at all was skipped.
    SmpFailed {
        what: &'static str,
        path: Vec<u8>,
        failure: SmpFailure,
    },
    /// Discovery reached the 63-hop limit of directed routes at this path.
    HopLimit {
        path: Vec<u8>,
    },
    LidsAssigned {
        changed: bool,
    },
    /// Routed by `engine`; the engines before it that declined, and why.
    Routed {
        engine: Engine,
        refused: Vec<(Engine, RoutingError)>,
    },
    RoutingFailed(Vec<(Engine, RoutingError)>),
    /// LFT blocks and other Sets sent this sweep.
    Programmed {
        lft_blocks: usize,
        other_sets: usize,
    },
    /// Every port is Active with its LID and the LFTs are in place.
    FabricUp {
        sweep: u64,
        took_ns: u64,
        reroute_ns: Option<u64>,
    },
    /// A trap arrived (number, issuer LID).
    Trap {
        number: u16,
        issuer_lid: u16,
    },
    /// A change (trap, PortStateChange, link event) will bring a heavy sweep.
    ChangeDetected,
    /// Trap 256-258 (bad M_Key, P_Key, Q_Key): someone used a wrong key on
    /// the issuer; counted, nothing to sweep for.
    SecurityTrap {
        number: u16,
        issuer_lid: u16,
    },
    /// Another SM answered SMInfo with an SM_Key not ours (zeroed: it does
    /// not know ours either): not followed, not handed over to.
    SmKeyMismatch {
        guid: u64,
    },
    BecameStandby {
        master_guid: u64,
    },
    BecameMaster,
    /// Mastership handed to a standby of higher priority (IBA 14.4.2).
    HandedOver {
        to_guid: u64,
    },
    /// The SM we handed mastership to acknowledged it (SMInfo Set
    /// ACKNOWLEDGE, IBA 14.4.1).
    HandoverAcknowledged,
}

#[derive(Debug, Clone)]
enum Context {
    NodeInfo {
        path: Vec<u8>,
        parent: Option<PortRef>,
    },
    NodeDescription {
        node: usize,
    },
    SwitchInfo {
        node: usize,
    },
    PortInfo {
        node: usize,
        port: u8,
    },
    SmInfo {
        path: Vec<u8>,
    },
    /// A light sweep's look at another SM.
    PeerSmInfo {
        path: Vec<u8>,
    },
    /// SMInfo Set(Handover) to a standby of higher priority.
    Handover {
        guid: u64,
        priority: u8,
        path: Vec<u8>,
    },
    /// SMInfo Set(Acknowledge) to the SM that handed over to us.
    Acknowledge,
    SetPortInfo {
        node: usize,
        port: u8,
    },
    SetSwitchInfo {
        node: usize,
    },
    SetLft {
        guid: u64,
        block: u16,
    },
    SetQos {
        key: QosKey,
    },
    LightSwitchInfo,
    PollMaster,
}

/// A QoS table set once, so later sweeps skip it: (switch or CA GUID,
/// attribute modifier, SL2VL or VLArb).
type QosKey = (u64, u32, bool);

/// What `swcli show ib sm` shows: state, priority, sweeps, the last sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmStatus {
    pub phase: Phase,
    pub sm_state: SmState,
    pub priority: u8,
    pub port_guid: u64,
    pub lid: u16,
    pub heavy_sweeps: u64,
    pub light_sweeps: u64,
    /// When the last heavy sweep started and, once the fabric came up,
    /// how long it took (ns, the SM's clock).
    pub last_sweep_started_ns: u64,
    pub last_sweep_took_ns: Option<u64>,
    /// From the last change detected (trap, PortStateChange, link event)
    /// to the fabric up again with new LFTs, and the LFT blocks that sweep
    /// rewrote (sweeps that changed no LFT do not count).
    pub last_reroute_ns: Option<u64>,
    pub last_lft_blocks: usize,
    /// The master this SM polls while standby.
    pub master_guid: Option<u64>,
    pub switches: usize,
    pub cas: usize,
    pub engine: Option<Engine>,
    pub counters: SmCounters,
    pub smps: RequesterCounters,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SmCounters {
    pub heavy_sweeps: u64,
    pub light_sweeps: u64,
    pub traps: u64,
    /// Of those, traps 256-258 (no sweep).
    pub security_traps: u64,
    /// SMInfo answers from SMs with another SM_Key.
    pub sm_key_mismatches: u64,
    pub lft_blocks_set: u64,
    pub failed_smps: u64,
}

pub struct SubnetManager {
    config: SmConfig,
    phase: Phase,
    requester: Requester<Context>,
    events: VecDeque<SmEvent>,
    /// Unsolicited MADs to send (TrapRepress).
    outbox: VecDeque<OutgoingSmp>,
    /// The fabric of the last complete discovery, and the one being built.
    topology: Topology,
    building: Topology,
    /// Latest PortInfo per (node, port) of `building`/`topology`.
    port_info: FxHashMap<(usize, u8), PortInfoRepr>,
    switch_info: FxHashMap<usize, SwitchInfoRepr>,
    /// Ports already probed one hop further.
    probed: FxHashSet<(usize, u8)>,
    lids: LidMap,
    lids_changed: bool,
    lfts: Lfts,
    /// LFT as last set successfully, per switch GUID.
    programmed: FxHashMap<u64, Vec<u8>>,
    qos_programmed: FxHashSet<QosKey>,
    sm_port_guid: u64,
    sm_port: u8,
    sm_lid: u16,
    sweep: u64,
    sweep_started: u64,
    phase_started: u64,
    change_detected_at: Option<u64>,
    heavy_pending: bool,
    /// The last heavy sweep could not route: sweep heavily again at the
    /// next interval.
    sweep_failed: bool,
    next_light_sweep: Option<u64>,
    act_count: u32,
    /// The SM to follow, found during discovery (a master, or a higher
    /// SM still discovering): (guid, priority, path).
    master: Option<(u64, u8, Vec<u8>)>,
    /// The path of the master this SM took over from when its poll found
    /// it standing by: that master may have been handing over to us at the
    /// same moment, and waits for our ACKNOWLEDGE.
    took_over_from: Option<Vec<u8>>,
    /// A HANDOVER of ours is out; the new master's ACKNOWLEDGE may come
    /// by another path and reach us before the HANDOVER's answer (`true`
    /// then, said when the answer makes us standby).
    handing_over: Option<bool>,
    /// This SM holds mastership: it brought the fabric up, took over from a
    /// silent master or was handed it. Until then it reports Discovering
    /// and defers to a higher SM; after, only to a higher master.
    mastership: bool,
    master_misses: u8,
    /// Other SMs' ports (IsSM) found by the last heavy sweep.
    peers: Vec<Vec<u8>>,
    sets_this_sweep: (usize, usize),
    last_sweep_took: Option<u64>,
    last_reroute: Option<u64>,
    last_lft_blocks: usize,
    pub counters: SmCounters,
}

impl SubnetManager {
    /// `lids` is the persisted GUID-to-LID map (empty on a first start).
    pub fn new(config: SmConfig, lids: LidMap) -> SubnetManager {
        let requester = Requester::new(config.window, config.timeout_ns, config.retries, 1);
        SubnetManager {
            config,
            phase: Phase::Idle,
            requester,
            events: VecDeque::new(),
            outbox: VecDeque::new(),
            topology: Topology::new(),
            building: Topology::new(),
            port_info: FxHashMap::default(),
            switch_info: FxHashMap::default(),
            probed: FxHashSet::default(),
            lids,
            lids_changed: false,
            lfts: Lfts::default(),
            programmed: FxHashMap::default(),
            qos_programmed: FxHashSet::default(),
            sm_port_guid: 0,
            sm_port: 0,
            sm_lid: 0,
            sweep: 0,
            sweep_started: 0,
            phase_started: 0,
            change_detected_at: None,
            heavy_pending: false,
            sweep_failed: false,
            next_light_sweep: None,
            act_count: 0,
            master: None,
            took_over_from: None,
            handing_over: None,
            mastership: false,
            master_misses: 0,
            peers: Vec::new(),
            sets_this_sweep: (0, 0),
            last_sweep_took: None,
            last_reroute: None,
            last_lft_blocks: 0,
            counters: SmCounters::default(),
        }
    }

    pub fn config(&self) -> &SmConfig {
        &self.config
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The fabric as last discovered completely.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    pub fn lfts(&self) -> &Lfts {
        &self.lfts
    }

    pub fn lid_map(&self) -> &LidMap {
        &self.lids
    }

    /// Whether the LID map changed since [`SubnetManager::take_lids_changed`]
    /// was last called (the driver persists it then).
    pub fn take_lids_changed(&mut self) -> bool {
        std::mem::take(&mut self.lids_changed)
    }

    pub fn sm_lid(&self) -> u16 {
        self.sm_lid
    }

    pub fn sm_port_guid(&self) -> u64 {
        self.sm_port_guid
    }

    /// The GUID of the port this SM runs on, when the transport knows it
    /// before discovery (the first NodeInfo answer tells it otherwise):
    /// SMInfo then never shows GUID 0 to another SM.
    pub fn set_port_guid(&mut self, guid: u64) {
        if self.sm_port_guid == 0 {
            self.sm_port_guid = guid;
        }
    }

    pub fn sweeps(&self) -> u64 {
        self.sweep
    }

    pub fn requester_counters(&self) -> RequesterCounters {
        self.requester.counters
    }

    /// SMInfo as this SM publishes it (the agent of its node answers it).
    pub fn sm_info(&self) -> SmInfoRepr {
        let state = match self.phase {
            Phase::Idle => SmState::NotActive,
            Phase::Discovering | Phase::Waiting if !self.mastership => SmState::Discovering,
            Phase::Standby => SmState::Standby,
            _ => SmState::Master,
        };
        SmInfoRepr {
            guid: self.sm_port_guid,
            sm_key: self.config.sm_key,
            act_count: self.act_count,
            priority: self.config.priority,
            sm_state: state,
        }
    }

    pub fn status(&self) -> SmStatus {
        SmStatus {
            phase: self.phase,
            sm_state: self.sm_info().sm_state,
            priority: self.config.priority,
            port_guid: self.sm_port_guid,
            lid: self.sm_lid,
            heavy_sweeps: self.counters.heavy_sweeps,
            light_sweeps: self.counters.light_sweeps,
            last_sweep_started_ns: self.sweep_started,
            last_sweep_took_ns: self.last_sweep_took,
            last_reroute_ns: self.last_reroute,
            last_lft_blocks: self.last_lft_blocks,
            master_guid: self.master.as_ref().filter(|_| self.phase == Phase::Standby).map(|m| m.0),
            switches: self.topology.switch_count(),
            cas: self.topology.ca_count(),
            engine: self.lfts.engine,
            counters: self.counters,
            smps: self.requester.counters,
        }
    }

    /// Begins the first heavy sweep.
    pub fn start(&mut self, now: u64) {
        self.begin_heavy_sweep(now);
    }

    /// Something outside the MAD stream saw a link change (the in-band
    /// transport's port events): sweep heavily now.
    pub fn link_changed(&mut self, now: u64) {
        self.note_change(now);
        self.advance(now);
    }

    /// An SMInfo Set reached the agent of our node (IBA 14.4.1): a
    /// handover makes a standby master, which acknowledges it to the old
    /// master (SMInfo Set ACKNOWLEDGE carrying our SMInfo, still Standby, as
    /// OpenSM checks) and sweeps; the old master, standby by then, takes
    /// the acknowledgement. The other controls are not acted on.
    pub fn handle_sm_control(&mut self, now: u64, control: SmInfoControl) {
        match control {
            SmInfoControl::Handover if self.phase == Phase::Standby => {
                if let Some((_, _, path)) = self.master.take() {
                    let mut data = [0u8; DATA_LEN];
                    self.sm_info().emit(&mut SmInfo::new_unchecked(&mut data[..]));
                    let acknowledge = SmInfoControl::Acknowledge.into();
                    self.submit(Context::Acknowledge, Method::Set, AttributeId::SmInfo, acknowledge, &path, data);
                }
                self.mastership = true;
                self.events.push_back(SmEvent::BecameMaster);
                self.begin_heavy_sweep(now);
            }
            // Our poll saw the master standing by and we took over in the
            // same moment it handed over to us: acknowledge all the same,
            // or it never learns that the handover reached us.
            SmInfoControl::Handover if self.mastership => {
                if let Some(path) = self.took_over_from.take() {
                    let mut data = [0u8; DATA_LEN];
                    self.sm_info().emit(&mut SmInfo::new_unchecked(&mut data[..]));
                    let acknowledge = SmInfoControl::Acknowledge.into();
                    self.submit(Context::Acknowledge, Method::Set, AttributeId::SmInfo, acknowledge, &path, data);
                }
            }
            SmInfoControl::Acknowledge if self.phase == Phase::Standby => {
                self.events.push_back(SmEvent::HandoverAcknowledged);
            }
            SmInfoControl::Acknowledge if self.handing_over.is_some() => self.handing_over = Some(true),
            _ => {}
        }
    }

    pub fn poll_event(&mut self) -> Option<SmEvent> {
        self.events.pop_front()
    }

    pub fn poll_transmit(&mut self, now: u64) -> Option<OutgoingSmp> {
        if let Some(out) = self.outbox.pop_front() {
            return Some(out);
        }
        self.requester.poll_transmit(now)
    }

    /// Whether the SM has nothing to finish: master, no SMP queued or
    /// out, no change noted or sweep to redo, no other SM to poll. Its
    /// next light sweep would then only read every switch's SwitchInfo,
    /// and act only if one has PortStateChange set (a change no trap
    /// reported): a caller that sees every switch can skip it
    /// (`labs sim`'s IB-like plane does).
    pub fn settled(&self) -> bool {
        self.phase == Phase::Master
            && !self.heavy_pending
            && !self.sweep_failed
            && self.requester.is_idle()
            && self.outbox.is_empty()
            && self.peers.is_empty()
    }

    pub fn next_timer(&self) -> Option<u64> {
        let deadline = self.requester.next_deadline();
        match (deadline, self.next_light_sweep) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A MAD arrived from the transport.
    pub fn handle_mad(&mut self, now: u64, bytes: &[u8]) {
        if let Ok(smp) = SmpRepr::parse_bytes(bytes)
            && smp.method == Method::Trap
            && smp.attribute_id == AttributeId::Notice
        {
            self.handle_trap(now, &smp);
            self.advance(now);
            return;
        }
        if let Some(completion) = self.requester.on_response(bytes) {
            self.complete(now, completion);
        }
        self.advance(now);
    }

    pub fn handle_timer(&mut self, now: u64) {
        let mut failed = Vec::new();
        self.requester.on_timer(now, &mut failed);
        for completion in failed {
            self.complete(now, completion);
        }
        if self.next_light_sweep.is_some_and(|at| at <= now) {
            self.next_light_sweep = None;
            self.light_sweep(now);
        }
        self.advance(now);
    }

    fn note_change(&mut self, now: u64) {
        if !self.heavy_pending {
            self.events.push_back(SmEvent::ChangeDetected);
        }
        self.heavy_pending = true;
        self.change_detected_at.get_or_insert(now);
        // A master sweeps at once, whatever light-sweep SMPs are still out
        // (a switch behind the failed link answers nothing any more).
        if matches!(self.phase, Phase::Master | Phase::Waiting) {
            self.begin_heavy_sweep(now);
        }
    }

    fn handle_trap(&mut self, now: u64, smp: &SmpRepr) {
        self.counters.traps += 1;
        let Ok(notice) = NoticeRepr::parse(&Notice::new_unchecked(&smp.data[..])) else { return };
        let (number, issuer_lid) = (notice.trap_number, notice.issuer_lid);
        self.events.push_back(SmEvent::Trap { number, issuer_lid });
        // TrapRepress (IBA 13.4.9): the same notice back to its issuer,
        // with the key that passes its M_Key check.
        let mut repress = *smp;
        repress.method = Method::TrapRepress;
        repress.m_key = self.config.m_key;
        self.outbox.push_back(OutgoingSmp { bytes: repress.to_bytes(), dlid: notice.issuer_lid });
        if self.phase == Phase::Standby || !notice.is_generic {
            return;
        }
        match number {
            TRAP_BAD_M_KEY..=TRAP_BAD_Q_KEY => {
                // Someone else's SMP or MAD with a wrong key: the fabric
                // did not change (IBA 14.2.5.1, 14.4.10: log and count).
                self.counters.security_traps += 1;
                self.events.push_back(SmEvent::SecurityTrap { number, issuer_lid });
            }
            // A port of the issuer changed state: a light sweep reads
            // every switch's PortStateChange and sweeps heavily if one is
            // set (OpenSM does the same). During a sweep, that sweep may
            // have read the port before it changed: sweep again after it.
            TRAP_LINK_STATE_CHANGE => match self.phase {
                Phase::Master => self.light_sweep(now),
                _ => self.note_change(now),
            },
            _ => self.note_change(now),
        }
    }

    fn submit(
        &mut self,
        context: Context,
        method: Method,
        attribute: AttributeId,
        modifier: u32,
        path: &[u8],
        data: [u8; DATA_LEN],
    ) {
        match SmpRepr::directed(method, 0, attribute, modifier, path, data) {
            Ok(mut smp) => {
                // The key this SM gives every port (a port still holding
                // M_Key 0 lets any key through).
                smp.m_key = self.config.m_key;
                self.requester.submit(context, smp)
            }
            Err(_) => self.events.push_back(SmEvent::HopLimit { path: path.to_vec() }),
        }
    }

    fn begin_heavy_sweep(&mut self, now: u64) {
        // Light-sweep SMPs still out are superseded; those on a path through
        // a failed link would hold the window through all their retries.
        self.requester.cancel(|context| matches!(context, Context::LightSwitchInfo | Context::PeerSmInfo { .. }));
        self.sweep += 1;
        self.counters.heavy_sweeps += 1;
        self.heavy_pending = false;
        self.phase = Phase::Discovering;
        self.sweep_started = now;
        self.phase_started = now;
        self.building = Topology::new();
        self.port_info.clear();
        self.switch_info.clear();
        self.probed.clear();
        self.master = None;
        self.peers.clear();
        self.sets_this_sweep = (0, 0);
        self.events.push_back(SmEvent::SweepStarted { heavy: true, sweep: self.sweep });
        self.submit(
            Context::NodeInfo { path: Vec::new(), parent: None },
            Method::Get,
            AttributeId::NodeInfo,
            0,
            &[],
            [0; DATA_LEN],
        );
    }

    fn light_sweep(&mut self, now: u64) {
        match self.phase {
            // A change seen while SMPs were still out (a switch behind the
            // failed link timing out) must not wait for an idle moment that
            // the next light sweeps would keep away.
            Phase::Master if self.sweep_failed || self.heavy_pending => {
                self.begin_heavy_sweep(now);
            }
            Phase::Waiting => self.begin_heavy_sweep(now),
            Phase::Master => {
                self.counters.light_sweeps += 1;
                self.act_count = self.act_count.wrapping_add(1);
                self.events.push_back(SmEvent::SweepStarted { heavy: false, sweep: self.sweep });
                for switch in self.topology.switches().collect::<Vec<_>>() {
                    let path = self.topology.nodes[switch].path.clone();
                    self.submit(
                        Context::LightSwitchInfo,
                        Method::Get,
                        AttributeId::SwitchInfo,
                        0,
                        &path,
                        [0; DATA_LEN],
                    );
                }
                for path in self.peers.clone() {
                    let context = Context::PeerSmInfo { path: path.clone() };
                    self.submit(context, Method::Get, AttributeId::SmInfo, 0, &path, self.sm_info_request());
                }
            }
            Phase::Standby => {
                if let Some((_, _, path)) = self.master.clone() {
                    let request = self.sm_info_request();
                    self.submit(Context::PollMaster, Method::Get, AttributeId::SmInfo, 0, &path, request);
                }
            }
            _ => {}
        }
        self.next_light_sweep = Some(now + self.config.light_sweep_interval_ns);
    }

    fn complete(&mut self, now: u64, completion: Completion<Context>) {
        let path = match &completion.request.routing {
            SmpRouting::DirectedRoute { initial_path, hop_count, .. } => {
                initial_path[1..=usize::from(*hop_count)].to_vec()
            }
            SmpRouting::LidRouted => Vec::new(),
        };
        let response = match completion.result {
            Ok(response) => response,
            Err(failure) => {
                self.counters.failed_smps += 1;
                let what = context_name(&completion.context);
                match completion.context {
                    // A light sweep's SMP answered after a heavy sweep began
                    // is stale: that sweep sees the fabric as it is now.
                    Context::LightSwitchInfo if self.phase == Phase::Master => self.note_change(now),
                    Context::PollMaster => {
                        self.master_misses += 1;
                        if self.master_misses > self.config.master_poll_retries {
                            // The master is gone: take over (IBA 14.4.2).
                            self.take_over(now);
                        }
                    }
                    Context::Handover { .. } => self.handing_over = None,
                    Context::SetLft { guid, .. } => {
                        // Forget what we believed that switch holds: the next
                        // sweep rewrites it all.
                        self.programmed.remove(&guid);
                    }
                    _ => {}
                }
                self.events.push_back(SmEvent::SmpFailed { what, path, failure });
                return;
            }
        };
        let data = response.data;
        match completion.context {
            Context::NodeInfo { path, parent } => self.on_node_info(&path, parent, &data),
            Context::NodeDescription { node } => {
                if let Ok(desc) = NodeDescriptionRepr::parse(&NodeDescription::new_unchecked(&data[..])) {
                    self.building.nodes[node].description = desc.text;
                }
            }
            Context::SwitchInfo { node } => {
                let info = SwitchInfoRepr::parse(&SwitchInfo::new_unchecked(&data[..])).expect("64 bytes");
                self.building.nodes[node].linear_fdb_cap = info.linear_fdb_cap;
                self.switch_info.insert(node, info);
                if info.port_state_change {
                    self.clear_port_state_change(node, info);
                }
            }
            Context::PortInfo { node, port } => self.on_port_info(node, port, &data),
            Context::SmInfo { path } => {
                let info = SmInfoRepr::parse(&SmInfo::new_unchecked(&data[..])).expect("64 bytes");
                if !self.same_sm_key(&info) {
                    return;
                }
                // IBA 14.4.1.1: a discovering SM that finds a master goes
                // to standby, whatever the priorities (a master of lower
                // priority hands over later), and so does one that finds a
                // higher SM still discovering or standing by (OpenSM's
                // "master or higher SM detected"). An SM holding mastership
                // yields only to a higher master.
                let higher = self.is_higher(&info);
                let follow = match info.sm_state {
                    SmState::Master => !self.mastership || higher,
                    SmState::Discovering | SmState::Standby => !self.mastership && higher && self.master.is_none(),
                    SmState::NotActive | SmState::Unknown(_) => false,
                };
                if info.guid != self.sm_port_guid && follow {
                    self.master = Some((info.guid, info.priority, path.clone()));
                }
                self.peers.push(path);
            }
            Context::PeerSmInfo { path } => {
                let info = SmInfoRepr::parse(&SmInfo::new_unchecked(&data[..])).expect("64 bytes");
                if !self.same_sm_key(&info) {
                    return;
                }
                if self.phase == Phase::Master && info.sm_state == SmState::Master && self.is_higher(&info) {
                    // Two masters (they came up apart): the lower stands by.
                    self.stand_by(now, (info.guid, info.priority, path));
                    return;
                }
                if self.phase == Phase::Master && info.sm_state == SmState::Standby && self.is_higher(&info) {
                    // The Set carries the sender's SMInfo, Master (OpenSM
                    // refuses a HANDOVER from anything else).
                    let mut ours = [0u8; DATA_LEN];
                    self.sm_info().emit(&mut SmInfo::new_unchecked(&mut ours[..]));
                    self.handing_over = Some(false);
                    self.submit(
                        Context::Handover { guid: info.guid, priority: info.priority, path: path.clone() },
                        Method::Set,
                        AttributeId::SmInfo,
                        SmInfoControl::Handover.into(),
                        &path,
                        ours,
                    );
                }
            }
            Context::Handover { guid, priority, path } => {
                // The answer carries the SMInfo the target published when
                // the Set arrived: only a standby takes mastership, so one
                // that was still discovering leaves us master.
                let info = SmInfoRepr::parse(&SmInfo::new_unchecked(&data[..])).expect("64 bytes");
                let acknowledged = self.handing_over.take() == Some(true);
                if info.sm_state == SmState::Standby && self.phase == Phase::Master {
                    self.events.push_back(SmEvent::HandedOver { to_guid: guid });
                    self.stand_by(now, (guid, priority, path));
                    if acknowledged {
                        self.events.push_back(SmEvent::HandoverAcknowledged);
                    }
                }
            }
            Context::Acknowledge => {}
            Context::SetPortInfo { node, port } => {
                let info = PortInfoRepr::parse(&PortInfo::new_unchecked(&data[..])).expect("64 bytes");
                self.port_info.insert((node, port), info);
            }
            Context::SetSwitchInfo { node } => {
                let info = SwitchInfoRepr::parse(&SwitchInfo::new_unchecked(&data[..])).expect("64 bytes");
                self.switch_info.insert(node, info);
            }
            Context::SetLft { guid, block } => {
                self.counters.lft_blocks_set += 1;
                let first = usize::from(block) * 64;
                let ports = LftBlockRepr::parse(&LftBlock::new_unchecked(&data[..])).expect("64 bytes").ports;
                let table = self.programmed.entry(guid).or_default();
                if table.len() < first + 64 {
                    table.resize(first + 64, routing::NO_ROUTE);
                }
                table[first..first + 64].copy_from_slice(&ports);
            }
            Context::SetQos { key } => {
                self.qos_programmed.insert(key);
            }
            Context::LightSwitchInfo => {
                let info = SwitchInfoRepr::parse(&SwitchInfo::new_unchecked(&data[..])).expect("64 bytes");
                if info.port_state_change && self.phase == Phase::Master {
                    self.note_change(now);
                }
            }
            Context::PollMaster => {
                self.master_misses = 0;
                let info = SmInfoRepr::parse(&SmInfo::new_unchecked(&data[..])).expect("64 bytes");
                // A higher SM still discovering becomes master soon; one that
                // stands by or stopped leaves the subnet to us (unless a
                // handover made us master while the poll was out).
                if self.phase == Phase::Standby && !matches!(info.sm_state, SmState::Master | SmState::Discovering) {
                    self.take_over(now);
                }
            }
        }
    }

    /// Our SMInfo as the payload of a Get: it carries our SM_Key, which an
    /// SM of the same subnet answers with its own (IBA 14.4.1).
    fn sm_info_request(&self) -> [u8; DATA_LEN] {
        let mut data = [0u8; DATA_LEN];
        self.sm_info().emit(&mut SmInfo::new_unchecked(&mut data[..]));
        data
    }

    /// Whether another SM's SMInfo answer shows our SM_Key (OpenSM ignores
    /// an SM with another key: "non-matching sm_key"); counted and
    /// reported when not.
    fn same_sm_key(&mut self, info: &SmInfoRepr) -> bool {
        if self.config.sm_key == 0 || info.sm_key == self.config.sm_key {
            return true;
        }
        self.counters.sm_key_mismatches += 1;
        self.events.push_back(SmEvent::SmKeyMismatch { guid: info.guid });
        false
    }

    /// Whether the SM of `info` wins mastership over this one: higher
    /// priority, then the lower GUID (IBA 14.4.1.1).
    fn is_higher(&self, info: &SmInfoRepr) -> bool {
        let theirs = (info.priority, core::cmp::Reverse(info.guid));
        theirs > (self.config.priority, core::cmp::Reverse(self.sm_port_guid))
    }

    /// Standby, polling `master` on the light-sweep interval.
    fn stand_by(&mut self, now: u64, master: (u64, u8, Vec<u8>)) {
        self.events.push_back(SmEvent::BecameStandby { master_guid: master.0 });
        self.master = Some(master);
        self.took_over_from = None;
        self.mastership = false;
        self.master_misses = 0;
        self.phase = Phase::Standby;
        self.next_light_sweep = Some(now + self.config.light_sweep_interval_ns);
    }

    /// The first sweep found no master and no higher SM: this SM brought
    /// the subnet (or the part of it its links reach) up and is master.
    /// Said as an event as takeover and handover say it, so that an SM
    /// which came up alone and later meets a lower master (the links
    /// between them trained after its first sweep) shows how it got there.
    fn claim_mastership(&mut self) {
        if !self.mastership {
            self.mastership = true;
            self.events.push_back(SmEvent::BecameMaster);
        }
    }

    /// The master stopped answering or stands by: this SM is master now.
    fn take_over(&mut self, now: u64) {
        self.took_over_from = self.master.take().map(|(_, _, path)| path);
        self.mastership = true;
        self.events.push_back(SmEvent::BecameMaster);
        self.begin_heavy_sweep(now);
    }

    fn on_node_info(&mut self, path: &[u8], parent: Option<PortRef>, data: &[u8; DATA_LEN]) {
        let info = NodeInfoRepr::parse(&NodeInfo::new_unchecked(&data[..])).expect("64 bytes");
        let Some(kind) = NodeKind::from_node_type(info.node_type) else { return };
        let entry = info.local_port_num;
        let index = match self.building.node_by_guid(info.node_guid) {
            Some(index) => index,
            None => {
                let mut node = Node::new(info.node_guid, kind, info.num_ports, "");
                node.path = path.to_vec();
                if kind == NodeKind::Switch {
                    node.ports[0].guid = info.port_guid;
                }
                let Ok(index) = self.building.add_node(node) else { return };
                self.submit(
                    Context::NodeDescription { node: index },
                    Method::Get,
                    AttributeId::NodeDescription,
                    0,
                    path,
                    [0; DATA_LEN],
                );
                if kind == NodeKind::Switch {
                    self.submit(
                        Context::SwitchInfo { node: index },
                        Method::Get,
                        AttributeId::SwitchInfo,
                        0,
                        path,
                        [0; DATA_LEN],
                    );
                    for port in 0..=info.num_ports {
                        self.submit(
                            Context::PortInfo { node: index, port },
                            Method::Get,
                            AttributeId::PortInfo,
                            u32::from(port),
                            path,
                            [0; DATA_LEN],
                        );
                    }
                }
                index
            }
        };
        if kind == NodeKind::Ca {
            let Some(port) = self.building.nodes[index].ports.get_mut(usize::from(entry)) else { return };
            if port.guid == 0 {
                port.guid = info.port_guid;
                port.path = path.to_vec();
                self.submit(
                    Context::PortInfo { node: index, port: entry },
                    Method::Get,
                    AttributeId::PortInfo,
                    u32::from(entry),
                    path,
                    [0; DATA_LEN],
                );
            }
        }
        if path.is_empty() {
            self.sm_port_guid = info.port_guid;
            self.sm_port = entry;
            if kind == NodeKind::Ca {
                // The SM's own CA: out through the port the SM uses.
                self.probe(index, entry);
            }
        }
        if let Some(parent) = parent {
            let _ = self.building.connect(parent, PortRef { node: index, port: entry });
        }
    }

    /// Sends NodeInfo one hop further, out of `port` of `node`.
    fn probe(&mut self, node: usize, port: u8) {
        if !self.probed.insert((node, port)) {
            return;
        }
        let base = if self.building.nodes[node].kind == NodeKind::Ca {
            self.building.nodes[node].ports[usize::from(port)].path.clone()
        } else {
            self.building.nodes[node].path.clone()
        };
        if base.len() >= usize::from(MAX_HOPS) {
            self.events.push_back(SmEvent::HopLimit { path: base });
            return;
        }
        let mut path = base;
        path.push(port);
        self.submit(
            Context::NodeInfo { path: path.clone(), parent: Some(PortRef { node, port }) },
            Method::Get,
            AttributeId::NodeInfo,
            0,
            &path,
            [0; DATA_LEN],
        );
    }

    /// Clears a switch's PortStateChange before its port states are
    /// trusted, then reads them again. Cleared any later (when tables are
    /// programmed), a port that came up between our read of it and the
    /// clear would lose its only trace: it stays Init, never armed, and
    /// no light sweep sees a change (a link whose two ends finish flow
    /// control at different times, one read Init and the other Down).
    /// Writing 1 clears the bit (IBA 14.2.5.4); a change after the clear
    /// sets it again for the next light sweep.
    fn clear_port_state_change(&mut self, node: usize, current: SwitchInfoRepr) {
        let mut data = [0u8; DATA_LEN];
        current.emit(&mut SwitchInfo::new_unchecked(&mut data[..]));
        let path = self.building.nodes[node].path.clone();
        self.submit(Context::SetSwitchInfo { node }, Method::Set, AttributeId::SwitchInfo, 0, &path, data);
        for port in 1..=self.building.nodes[node].num_ports {
            self.submit(
                Context::PortInfo { node, port },
                Method::Get,
                AttributeId::PortInfo,
                u32::from(port),
                &path,
                [0; DATA_LEN],
            );
        }
    }

    fn on_port_info(&mut self, node: usize, port: u8, data: &[u8; DATA_LEN]) {
        let info = PortInfoRepr::parse(&PortInfo::new_unchecked(&data[..])).expect("64 bytes");
        let is_switch = self.building.nodes[node].is_switch();
        {
            let entry = &mut self.building.nodes[node].ports[usize::from(port)];
            entry.state = Some(info.state());
            entry.width = info.link_width_active;
            entry.speed = info.link_speed_active;
            entry.vl_cap = info.vl_cap;
            // The LID the port holds (a switch's on port 0): kept when no
            // persisted map names it, so that an SM taking over keeps
            // the subnet's addresses.
            if !is_switch || port == 0 {
                entry.lid = info.lid;
            }
        }
        let up = info.phys_state() == PortPhysState::LinkUp && info.state() != PortState::Down;
        if is_switch && port != 0 && up && self.building.nodes[node].ports[usize::from(port)].remote.is_none() {
            self.probe(node, port);
        }
        // Another SM: on a CA port, or on a switch's port 0 (an SM embedded
        // in the switch, IBA 14.2.5.6's IsSM on its management port).
        if (!is_switch || port == 0) && info.capability_mask & CAPABILITY_IS_SM != 0 {
            let guid = self.building.nodes[node].ports[usize::from(port)].guid;
            if guid != self.sm_port_guid {
                let path = if is_switch {
                    self.building.nodes[node].path.clone()
                } else {
                    self.building.nodes[node].ports[usize::from(port)].path.clone()
                };
                let request = self.sm_info_request();
                self.submit(
                    Context::SmInfo { path: path.clone() },
                    Method::Get,
                    AttributeId::SmInfo,
                    0,
                    &path,
                    request,
                );
            }
        }
        self.port_info.insert((node, port), info);
    }

    /// Moves to the next phase when the requests of this one are done.
    fn advance(&mut self, now: u64) {
        loop {
            if !self.requester.is_idle() {
                return;
            }
            match self.phase {
                Phase::Idle => return,
                Phase::Discovering => {
                    self.topology = std::mem::take(&mut self.building);
                    // port_info and switch_info keys are indices of the
                    // topology just completed.
                    self.events.push_back(SmEvent::Discovered {
                        switches: self.topology.switch_count(),
                        cas: self.topology.ca_count(),
                        took_ns: now - self.phase_started,
                    });
                    if let Some(master) = self.master.take() {
                        self.stand_by(now, master);
                        return;
                    }
                    if self.topology.nodes.len() == 1 {
                        self.phase = Phase::Waiting;
                        self.next_light_sweep = Some(now + self.config.light_sweep_interval_ns);
                        return;
                    }
                    self.sweep_failed = !self.assign_and_route(now);
                    if self.sweep_failed {
                        self.phase = Phase::Master;
                        self.claim_mastership();
                        self.next_light_sweep = Some(now + self.config.light_sweep_interval_ns);
                        return;
                    }
                    self.phase = Phase::Programming;
                    self.phase_started = now;
                    self.program_tables();
                }
                Phase::Programming => {
                    self.events.push_back(SmEvent::Programmed {
                        lft_blocks: self.sets_this_sweep.0,
                        other_sets: self.sets_this_sweep.1,
                    });
                    self.phase = Phase::Arming;
                    self.set_port_states(PortState::Init, PortState::Armed);
                }
                Phase::Arming => {
                    self.phase = Phase::Activating;
                    self.set_port_states(PortState::Armed, PortState::Active);
                }
                Phase::Activating => {
                    self.phase = Phase::Master;
                    self.claim_mastership();
                    let reroute_ns = self.change_detected_at.take().map(|at| now - at);
                    // A sweep after a change that rewrote no LFT (a second
                    // trap of the same failure) rerouted nothing.
                    if reroute_ns.is_some() && self.sets_this_sweep.0 > 0 {
                        self.last_reroute = reroute_ns;
                        self.last_lft_blocks = self.sets_this_sweep.0;
                    }
                    self.last_sweep_took = Some(now - self.sweep_started);
                    self.events.push_back(SmEvent::FabricUp {
                        sweep: self.sweep,
                        took_ns: now - self.sweep_started,
                        reroute_ns,
                    });
                    self.next_light_sweep = Some(now + self.config.light_sweep_interval_ns);
                }
                Phase::Master | Phase::Standby | Phase::Waiting => {
                    if self.heavy_pending && self.phase == Phase::Master {
                        self.begin_heavy_sweep(now);
                        continue;
                    }
                    return;
                }
            }
        }
    }

    /// LIDs and routes for the topology just discovered; false when routing
    /// failed (reported; the old tables stay).
    fn assign_and_route(&mut self, now: u64) -> bool {
        match lid::assign(&mut self.topology, self.config.routing.lmc, self.sm_port_guid, &self.lids) {
            Ok(map) => {
                let changed = map != self.lids;
                self.lids_changed |= changed;
                self.lids = map;
                self.events.push_back(SmEvent::LidsAssigned { changed });
            }
            Err(_) => {
                self.events.push_back(SmEvent::RoutingFailed(Vec::new()));
                return false;
            }
        }
        self.sm_lid = self.lids.by_guid.get(&self.sm_port_guid).copied().unwrap_or(0);
        let _ = now;
        match routing::route(&self.topology, &self.config.routing) {
            Ok(lfts) => {
                let engine = lfts.engine.unwrap_or(Engine::Minhop);
                let refused = lfts.refused.clone();
                self.lfts = lfts;
                self.events.push_back(SmEvent::Routed { engine, refused });
                true
            }
            Err(refused) => {
                self.events.push_back(SmEvent::RoutingFailed(refused));
                false
            }
        }
    }

    /// PortInfo (LID, LMC, master SM), SwitchInfo (LinearFDBTop), the LFT
    /// blocks that differ from what the switch holds, QoS tables.
    fn program_tables(&mut self) {
        let lmc = self.config.routing.lmc;
        let top = self.topology.nodes.iter().flat_map(|n| n.endpoint_ports().map(move |p| (n, p))).map(|(n, p)| {
            let lid = n.ports[usize::from(p)].lid;
            if n.is_switch() { lid } else { lid + (1u16 << lmc) - 1 }
        });
        let top = top.max().unwrap_or(0);
        for index in 0..self.topology.nodes.len() {
            let node = &self.topology.nodes[index];
            let endpoint_ports: Vec<u8> = node.endpoint_ports().collect();
            for port in endpoint_ports {
                let Some(current) = self.port_info.get(&(index, port)).copied() else { continue };
                let node = &self.topology.nodes[index];
                let lid = node.ports[usize::from(port)].lid;
                let wanted_lmc = if node.is_switch() { 0 } else { lmc };
                let key = (self.config.m_key, self.config.m_key_protect_bits, self.config.m_key_lease_period);
                if current.lid == lid
                    && current.lmc == wanted_lmc
                    && current.master_sm_lid == self.sm_lid
                    && (current.m_key, current.m_key_protect_bits, current.m_key_lease_period) == key
                {
                    continue;
                }
                let mut wanted = current;
                // Endpoint ports (CA ports, switch port 0) hold the M_Key.
                (wanted.m_key, wanted.m_key_protect_bits, wanted.m_key_lease_period) = key;
                wanted.lid = lid;
                wanted.lmc = wanted_lmc;
                wanted.master_sm_lid = self.sm_lid;
                wanted.subnet_timeout = self.config.subnet_timeout;
                wanted.port_state = PortState::NoChange.into();
                wanted.port_phys_state = PortPhysState::NoChange.into();
                let path = self.port_path(index, port);
                self.set_port_info(index, port, &wanted, &path);
            }
            let node = &self.topology.nodes[index];
            if !node.is_switch() {
                continue;
            }
            let guid = node.guid;
            let path = node.path.clone();
            if let Some(current) = self.switch_info.get(&index).copied()
                && current.linear_fdb_top != top
            {
                let mut wanted = current;
                wanted.linear_fdb_top = top;
                // Writing 0 leaves PortStateChange as it is: a port that
                // changed during this sweep is for the next light sweep.
                wanted.port_state_change = false;
                let mut data = [0u8; DATA_LEN];
                wanted.emit(&mut SwitchInfo::new_unchecked(&mut data[..]));
                self.sets_this_sweep.1 += 1;
                self.submit(
                    Context::SetSwitchInfo { node: index },
                    Method::Set,
                    AttributeId::SwitchInfo,
                    0,
                    &path,
                    data,
                );
            }
            let Some(table) = self.lfts.table(index) else { continue };
            let blocks = table.len().div_ceil(64);
            let old = self.programmed.get(&guid);
            let mut sets = Vec::new();
            for block in 0..blocks {
                let first = block * 64;
                let mut ports = [routing::NO_ROUTE; 64];
                let end = (first + 64).min(table.len());
                ports[..end - first].copy_from_slice(&table[first..end]);
                let unchanged = old.and_then(|o| o.get(first..first + 64)).is_some_and(|o| o == ports);
                if !unchanged {
                    sets.push((block as u16, ports));
                }
            }
            for (block, ports) in sets {
                let mut data = [0u8; DATA_LEN];
                LftBlockRepr { ports }.emit(&mut LftBlock::new_unchecked(&mut data[..]));
                self.sets_this_sweep.0 += 1;
                self.submit(
                    Context::SetLft { guid, block },
                    Method::Set,
                    AttributeId::LinearForwardingTable,
                    u32::from(block),
                    &path,
                    data,
                );
            }
        }
        if self.config.program_qos {
            self.program_qos();
        }
    }

    /// SL-to-VL: SL i on VL (i mod the port's data VLs), the layers of
    /// dfsssp included; VL arbitration: every data VL the same weight in
    /// the low-priority table. Each table once per GUID and modifier.
    fn program_qos(&mut self) {
        let data_vls = |info: Option<&PortInfoRepr>| -> u8 {
            match info.map_or(1, |i| if i.operational_vls != 0 { i.operational_vls } else { i.vl_cap }) {
                0 | 1 => 1,
                2 => 2,
                3 => 4,
                4 => 8,
                _ => 15,
            }
        };
        let mut sets: Vec<(QosKey, Vec<u8>, bool, [u8; DATA_LEN])> = Vec::new();
        for index in 0..self.topology.nodes.len() {
            let node = &self.topology.nodes[index];
            let cabled: Vec<u8> =
                (1..=node.num_ports).filter(|&p| node.ports[usize::from(p)].remote.is_some()).collect();
            let pairs: Vec<(u8, u8)> = if node.is_switch() {
                // SL-to-VL per (input, output) only where traffic can flow.
                let mut pairs = Vec::new();
                for &input in cabled.iter().chain(std::iter::once(&0)) {
                    for &output in &cabled {
                        if input != output {
                            pairs.push((input, output));
                        }
                    }
                }
                pairs
            } else {
                cabled.iter().map(|&p| (0, p)).collect()
            };
            for (input, output) in pairs {
                let vls = data_vls(self.port_info.get(&(index, output)));
                let mut table = SlToVlRepr { vls: [0; 16] };
                for (sl, vl) in table.vls.iter_mut().enumerate() {
                    *vl = (sl as u8) % vls;
                }
                let modifier = if node.is_switch() { sl2vl_modifier(input, output) } else { 0 };
                let key = (node.guid, modifier, true);
                if self.qos_programmed.contains(&key) {
                    continue;
                }
                let mut data = [0u8; DATA_LEN];
                table.emit(&mut SlToVlTable::new_unchecked(&mut data[..]));
                let path =
                    if node.is_switch() { node.path.clone() } else { node.ports[usize::from(output)].path.clone() };
                sets.push((key, path, true, data));
            }
            for &port in &cabled {
                let vls = data_vls(self.port_info.get(&(index, port)));
                let mut table = VlArbRepr { entries: [VlArbEntry::default(); 32] };
                for vl in 0..vls.min(32) {
                    table.entries[usize::from(vl)] = VlArbEntry { vl, weight: 32 };
                }
                let modifier = vl_arb_modifier(VlArbBlock::LowLower, if node.is_switch() { port } else { 0 });
                let key = (node.guid ^ u64::from(port) << 56, modifier, false);
                if self.qos_programmed.contains(&key) {
                    continue;
                }
                let mut data = [0u8; DATA_LEN];
                table.emit(&mut VlArbTable::new_unchecked(&mut data[..]));
                let path =
                    if node.is_switch() { node.path.clone() } else { node.ports[usize::from(port)].path.clone() };
                sets.push((key, path, false, data));
            }
        }
        for (key, path, sl2vl, data) in sets {
            let attribute = if sl2vl { AttributeId::SlToVlMappingTable } else { AttributeId::VlArbitrationTable };
            self.sets_this_sweep.1 += 1;
            self.submit(Context::SetQos { key }, Method::Set, attribute, key.1, &path, data);
        }
    }

    fn port_path(&self, node: usize, port: u8) -> Vec<u8> {
        let node = &self.topology.nodes[node];
        if node.is_switch() { node.path.clone() } else { node.ports[usize::from(port)].path.clone() }
    }

    fn set_port_info(&mut self, node: usize, port: u8, wanted: &PortInfoRepr, path: &[u8]) {
        let mut data = [0u8; DATA_LEN];
        wanted.emit(&mut PortInfo::new_unchecked(&mut data[..]));
        self.sets_this_sweep.1 += 1;
        self.submit(
            Context::SetPortInfo { node, port },
            Method::Set,
            AttributeId::PortInfo,
            u32::from(port),
            path,
            data,
        );
    }

    /// Every cabled port in state `from` asked to move to `to`.
    fn set_port_states(&mut self, from: PortState, to: PortState) {
        let mut wanted_sets = Vec::new();
        for (index, node) in self.topology.nodes.iter().enumerate() {
            for port in 1..=node.num_ports {
                if node.ports[usize::from(port)].remote.is_none() {
                    continue;
                }
                let Some(current) = self.port_info.get(&(index, port)).copied() else { continue };
                if current.state() != from {
                    continue;
                }
                let mut wanted = current;
                wanted.port_state = to.into();
                wanted.port_phys_state = PortPhysState::NoChange.into();
                wanted_sets.push((index, port, wanted));
            }
        }
        for (index, port, wanted) in wanted_sets {
            let path = self.port_path(index, port);
            self.set_port_info(index, port, &wanted, &path);
        }
    }
}

fn context_name(context: &Context) -> &'static str {
    match context {
        Context::NodeInfo { .. } => "NodeInfo",
        Context::NodeDescription { .. } => "NodeDescription",
        Context::SwitchInfo { .. } | Context::LightSwitchInfo => "SwitchInfo",
        Context::PortInfo { .. } => "PortInfo",
        Context::SmInfo { .. } | Context::PollMaster | Context::PeerSmInfo { .. } => "SMInfo",
        Context::Handover { .. } => "SMInfo Set(Handover)",
        Context::Acknowledge => "SMInfo Set(Acknowledge)",
        Context::SetPortInfo { .. } => "PortInfo Set",
        Context::SetSwitchInfo { .. } => "SwitchInfo Set",
        Context::SetLft { .. } => "LinearForwardingTable Set",
        Context::SetQos { .. } => "QoS table Set",
    }
}

#[cfg(test)]
mod tests;
