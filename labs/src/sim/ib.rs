//! The IB-like plane in virtual time: every switch is `qos::ib`'s switch
//! engine ([`IbSwitch`]: input buffers per VL with credit accounting, the
//! LFT, SL-to-VL, VOQs per (output, VL), VL arbitration over the VOQs the
//! downstream receiver has credit for, the port's line rate), every host
//! an HCA that sends only what its link's credits allow ([`LinkCredits`],
//! the same credit layer), and the LFTs are what `subnet-manager`'s routing
//! engines (minhop, updn, ftree, sssp, dfsssp) compute for the fabric's
//! shape with its LIDs assigned as the SM assigns them.
//!
//! Nothing is ever dropped for want of buffer: a sender with no credit
//! waits (counted as the port's xmit wait) until a flow-control packet
//! from the receiver grants more. Flow-control packets travel the cable
//! (a minimum frame's serialisation plus propagation) beside the data,
//! without taking the data's line time: they are few (one per freed
//! buffer change, and a refresh per VL every `refresh_ns`).
//!
//! The engine holds descriptors, so the simulator moves descriptors too: a
//! packet is its slot in a slab (destination LID, SL, VL, length, message),
//! never bytes.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use qos::ib::arbiter::ArbitrationEntry;
use qos::ib::blocks;
use qos::ib::cc::{CaCongestionSetting, FlowThrottle, PortMarker, SwitchCongestionSetting};
use qos::ib::credit::{FlowControlUpdate, LinkCredits};
use qos::ib::switch::{DropReason, IbSwitch, LogicalState, PacketDesc, PortRate, Received, SwitchConfig};
use qos::shaper::LineRate;
use subnet_manager::routing::{self, Engine, NO_ROUTE, RoutingConfig};
use subnet_manager::topology::{Node, NodeKind, PortRef, Topology};

use super::fabric::{End, Fabric};
use super::ib_sm::{SmAction, SmDriver, SmTiming};
use super::link::Wire;
use super::output::CollectiveResult;
use super::output::Percentiles;
use super::stats::{DepthHistogram, MessageRecord};
use super::workload::Workload;

/// LRH (8), BTH (12), ICRC (4) and VCRC (2) around each packet's payload:
/// what the buffers and credits count.
pub const PACKET_OVERHEAD: u32 = 8 + 12 + 4 + 2;
/// The Ethernet header and the IB-like shim each packet travels in
/// (`subnet_manager::plane::port_rate`'s overhead).
pub const FRAME_OVERHEAD: u32 = 14 + 2;
/// A flow-control packet's frame: an Ethernet minimum.
const FLOW_CONTROL_FRAME: usize = 60;
/// The largest IB MTU.
pub const MAX_MTU: u32 = 4096;

/// What an IB-like run varies.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IbExperiment {
    pub link_bps: u64,
    pub link_delay_ns: u64,
    /// Payload bytes per packet (an IB MTU: 256 to 4096).
    pub mtu: u32,
    /// Receive buffer per data VL per port, in 64-byte blocks (switches and HCAs).
    pub buffer_blocks: u16,
    /// Routing engines, tried in order as OpenSM's `routing_engine`.
    #[serde(serialize_with = "engine_names")]
    pub engines: Vec<Engine>,
    /// Flow-control refresh per VL, ns (IBA: at most 65,536 symbol times).
    pub refresh_ns: u64,
    /// How fast an HCA reads what it receives out of its buffer (its
    /// application), bits per second of packet; `None`: at once.
    pub read_bps: Option<u64>,
    pub time_limit_ns: u64,
    /// Queue-depth sampling interval, ns (0: none).
    pub sample_ns: u64,
    /// Congestion control (FECN/BECN, IBA annex A10); `None`: off.
    pub cc: Option<IbCongestionControl>,
    /// Per switch, per port (its place in the fabric): what the switch's
    /// config says (`mode: ib` ports); empty: every port as above.
    #[serde(skip)]
    pub ports: PortPlan,
    /// The subnet manager in virtual time ([`super::ib_sm`]): LIDs and
    /// LFTs from its sweeps, reprogrammed after a failure; `None`: as a
    /// converged SM leaves them, computed at once.
    pub sm: Option<SmTiming>,
    /// Cable (its index in the fabric's links) cut at a time, ns; needs `sm`.
    pub link_failure: Option<(u32, u64)>,
    /// Reliable transport: a message not received this long after its last
    /// packet left is sent again from the first packet the receiver lacks
    /// (go-back-N).
    pub rto_ns: u64,
}

/// FECN/BECN congestion control: what the switches mark, how the HCAs
/// throttle.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct IbCongestionControl {
    pub switch: SwitchCongestionSetting,
    pub ca: CaCongestionSetting,
}

/// Per switch, per port: its settings (`None`: the experiment's).
pub type PortPlan = Vec<Vec<Option<IbPortSettings>>>;

/// An IB-like port as a `switchd` config's `mode: ib` port sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IbPortSettings {
    pub data_vls: u8,
    /// IB MTU: the largest payload.
    pub mtu: u32,
    /// `ib_rate`; `None`: the experiment's link speed.
    pub rate_bps: Option<u64>,
    /// `ib.buffer_blocks`: receive buffer per data VL.
    pub buffer_blocks: u16,
}

/// The IB-like settings of every switch port from the switchd configs a
/// topology file binds (parsed and validated by `switchd::config`), and
/// the routing engines of the first switch with an embedded SM. Refused
/// naming the switch and port if a cabled port is not in `mode: ib`.
pub fn settings_from_configs(
    fabric: &Fabric,
    topology: &crate::topology::Topology,
    dir: &std::path::Path,
) -> Result<(PortPlan, Option<Vec<Engine>>), String> {
    let nodes = topology.resolve(dir)?;
    let mut ports = Vec::with_capacity(fabric.switches.len());
    let mut engines = None;
    for (s, spec) in fabric.switches.iter().enumerate() {
        let mut settings = vec![None; usize::from(spec.ports)];
        let path = nodes.iter().find(|n| n.name == spec.name).and_then(|n| n.config.clone());
        let Some(path) = path.filter(|_| topology.role(&spec.name).is_ok_and(|r| r == crate::topology::Role::Switchd))
        else {
            return Err(format!("switch {}: no switchd config", spec.name));
        };
        let config = switchd::config::Config::load(&path)
            .map_err(|e| format!("switch {}: {}", spec.name, e.to_string().trim_end()))?;
        let buffer_blocks =
            config.ib.as_ref().map_or(switchd::config::ib::DEFAULT_BUFFER_BLOCKS, |ib| ib.buffer_blocks);
        for port in &config.ports {
            if let switchd::config::PortMode::Ib(ib) = port.mode
                && let Some(slot) = settings.get_mut(usize::from(port.number) - 1)
            {
                *slot = Some(IbPortSettings {
                    data_vls: ib.data_vls,
                    mtu: u32::from(ib.mtu),
                    rate_bps: ib.rate_bps,
                    buffer_blocks,
                });
            }
        }
        for (port, setting) in settings.iter().enumerate() {
            let cabled = fabric
                .links
                .iter()
                .any(|&(a, b)| [a, b].contains(&End::Switch { switch: s as u32, port: port as u16 }));
            if cabled && setting.is_none() {
                return Err(format!("switch {}: eth{} is cabled but not in mode: ib", spec.name, port + 1));
            }
        }
        if engines.is_none() {
            engines = config.ib.as_ref().and_then(|ib| ib.sm.as_ref()).map(|sm| sm.engines.clone());
        }
        ports.push(settings);
    }
    Ok((ports, engines))
}

fn engine_names<S: serde::Serializer>(engines: &[Engine], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(engines.iter().map(|e| e.name()))
}

impl Default for IbExperiment {
    fn default() -> IbExperiment {
        IbExperiment {
            link_bps: 100_000_000_000,
            link_delay_ns: 500,
            mtu: MAX_MTU,
            buffer_blocks: 1024,
            engines: vec![Engine::Ftree, Engine::Updn, Engine::Minhop],
            refresh_ns: 50_000,
            read_bps: None,
            time_limit_ns: 10_000_000_000,
            sample_ns: 0,
            cc: None,
            ports: Vec::new(),
            sm: None,
            link_failure: None,
            rto_ns: 4_000_000,
        }
    }
}

/// A packet in the fabric: its slot in the slab is its handle.
#[derive(Debug, Clone, Copy, Default)]
struct Packet {
    message: u32,
    dlid: u16,
    sl: u8,
    /// The VL it travels on this hop (the LRH's).
    vl: u8,
    payload: u32,
    /// Forward explicit congestion notification: a congested switch port
    /// sent it (the BTH's FECN bit).
    fecn: bool,
    /// A congestion notification packet carrying a BECN for `message`'s
    /// connection back to its source; no payload.
    cnp: bool,
    /// Its packet sequence number on its connection (the BTH's PSN).
    psn: u32,
}

impl Packet {
    fn wire_len(&self) -> u32 {
        self.payload + PACKET_OVERHEAD
    }
}

/// A node of the fabric: switch or HCA (host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    Switch { switch: u32, port: u16 },
    Hca { hca: u32 },
}

#[derive(Debug, Clone, Copy)]
enum IbEvent {
    /// A packet's last bit reaches a port.
    Packet {
        at: At,
        packet: u32,
    },
    /// A flow-control packet reaches a port.
    FlowControl {
        at: At,
        update: FlowControlUpdate,
    },
    /// An HCA has read a packet out of its receive buffer.
    Read {
        hca: u32,
        packet: u32,
    },
    SwitchWake {
        switch: u32,
    },
    HcaWake {
        hca: u32,
    },
    Release {
        message: u32,
    },
    /// Record the watched ports' queue depths.
    Sample,
    /// A connection's transport timer.
    Timeout {
        connection: u32,
    },
    /// The cable is cut.
    LinkDown {
        link: u32,
    },
    /// A MAD (in the SM's slab) reaches the SM.
    SmMad {
        slot: u32,
    },
    SmTimer,
    /// An LFT Set reached `switch`.
    LftWritten {
        switch: u32,
        block: u16,
    },
}

/// An event and its time, in (time, scheduling order).
struct Entry {
    at: u64,
    seq: u64,
    event: IbEvent,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// Reversed: the heap pops the earliest.
    fn cmp(&self, other: &Entry) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

struct SimSwitch {
    engine: IbSwitch,
    /// Per engine port (0: the switch itself): the cable's far end and the cable.
    peers: Vec<Option<(At, u32)>>,
    wake_at: u64,
    /// Per engine port: FECN marking.
    markers: Vec<PortMarker>,
}

/// A reliable connection (queue pair) to one destination: messages in
/// order, one PSN per packet. The receiving side is kept here too: the PSN
/// it expects next; it takes only that one (IBA 9.7.5.1.2: an RC
/// responder discards what is out of sequence), so a lost packet holds up
/// what follows until the sender's timeout goes back to it (go-back-N).
/// Acknowledgements are not simulated as packets: the sender reads the
/// receiver's expected PSN as the ACKs would have told it, and its one
/// transport timer (IBA 9.7.6.1.1, the local ACK timeout) restarts while
/// that moves and goes back when it has not moved for `rto_ns`.
#[derive(Debug, Default)]
struct Connection {
    dst_lid: u16,
    sl: u8,
    pending: VecDeque<u32>,
    /// Messages started and not yet received whole, oldest first: (message,
    /// first PSN, packets).
    unacked: VecDeque<(u32, u32, u32)>,
    /// The next PSN to send, and the PSN after the last message started.
    next_psn: u32,
    end_psn: u32,
    /// One past the highest PSN sent: below it, a send is a retransmission.
    sent_psn: u32,
    /// The receiver's next expected PSN.
    expected_psn: u32,
    /// When the transport timer expires (`u64::MAX`: not running), and
    /// when it was last (re)started: by a send with nothing outstanding,
    /// by an acknowledgement that moved, by a go-back.
    timer_at: u64,
    timer_from: u64,
    /// Congestion control: the BECNs' throttle, and when the inter-packet
    /// delay lets the next packet go.
    throttle: FlowThrottle,
    next_send_at: u64,
}

/// An HCA: one port with credits per VL, a line, and its queue pairs.
struct Hca {
    lid: u16,
    credits: LinkCredits,
    line: LineRate,
    /// Payload bytes per packet: the experiment's, within its port's MTU.
    mtu: u32,
    /// The leaf port it is cabled to, and the cable.
    leaf: (u32, u16),
    link: u32,
    connections: Vec<u32>,
    next: usize,
    wake_at: u64,
    /// The reader's clock: when it has read what it holds.
    read_free_at: u64,
    /// Data packets refused for lack of credit (never, if credits work).
    overruns: u64,
    /// Times it had a packet ready and the line free but no credit, the
    /// time of those waits (ns), and since when it is waiting.
    credit_waits: u64,
    credit_wait_ns: u64,
    waiting_since: Option<u64>,
    /// Connections (as the data's source numbers them) owed a BECN for a
    /// FECN-marked packet received: sent first, as CNPs.
    becns_owed: VecDeque<u32>,
    /// The SL packets to this HCA travel on (its LID's, from the routing).
    sl: u8,
}

/// Per switch port, what the run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IbPortResult {
    pub switch: String,
    pub port: String,
    pub xmit_bytes: u64,
    pub xmit_packets: u64,
    pub xmit_wait: u64,
    /// Time data waited for credit on it, ns.
    pub xmit_wait_ns: u64,
    pub discards: u64,
}

/// The subnet manager's part of a run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IbSmReport {
    /// What the first heavy sweep took (before the traffic started).
    pub first_sweep_ns: u64,
    /// SMPs sent and LFT blocks written after it.
    pub smps_sent: u64,
    pub lft_blocks_written: u64,
    /// Light sweeps the SM ran after the first sweep (none while nothing
    /// can have changed: `SmDriver::next_timer`).
    pub light_sweeps: u64,
    /// Each sweep that brought the fabric up: when (the first at 0) and the
    /// engine that routed it.
    pub routings: Vec<IbRouting>,
}

/// A sweep that routed the fabric, and the engine that did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IbRouting {
    pub at_ns: u64,
    pub engine: String,
}

/// A cable cut during the run, and how the fabric recovered.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IbLinkFailure {
    /// Its index in the fabric's links, and its two ends.
    pub link: u32,
    pub cable: String,
    pub failed_ns: u64,
    /// When the trap of the switch at one end reached the SM.
    pub trap_at_sm_ns: Option<u64>,
    /// When the SM's sweep after the failure had every LFT Set answered
    /// (the fabric up again), and the SM's own reroute time (change
    /// detected to LFTs in place).
    pub rerouted_ns: Option<u64>,
    pub sm_reroute_ns: Option<u64>,
    /// Packets lost: on the cable when it was cut, queued for its ports
    /// (discarded), and routed to a dead port before the LFTs moved.
    pub lost_on_cable: u64,
    pub discarded_queued: u64,
    pub dropped_at_dead_port: u64,
    pub last_dead_port_drop_ns: Option<u64>,
    /// LFT entries for an HCA's LID that still point at a dead port at the end.
    pub lft_entries_on_dead_ports: usize,
}

/// What an IB-like run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IbReport {
    pub topology: String,
    pub experiment: IbExperiment,
    /// The routing engine whose LFTs are in effect at the end of the run,
    /// and those that declined the fabric before it (with the SM in
    /// virtual time, its last sweep's: `subnet_manager.routings` has each).
    pub routing_engine: String,
    pub routing_refused: Vec<String>,
    /// Data VLs every port operates: one, or as many as the engine's SL layers (dfsssp).
    pub vls: u8,
    pub switches: usize,
    pub hosts: usize,
    pub finished: bool,
    pub simulated_ns: u64,
    pub collectives: Vec<CollectiveResult>,
    /// Per message: (source host, destination host, FCT ns).
    pub fcts_ns: Vec<(u32, u32, Option<u64>)>,
    /// Packets discarded anywhere (switch receive errors, relay errors,
    /// transmit discards, HCA credit overruns): zero with working credits.
    pub drops: u64,
    /// Transmit opportunities lost to missing credit, switches and HCAs;
    /// the time data waited for credit, summed over switch ports and HCAs,
    /// ns; and how many switch ports waited at all.
    pub xmit_wait: u64,
    pub xmit_wait_ns: u64,
    pub waiting_ports: usize,
    /// FCT over the FCT alone on an idle fabric, over the collectives'
    /// messages received.
    pub fct_slowdown: Percentiles,
    /// Background traffic beside the collectives, apart from them.
    pub background: Option<super::output::BackgroundResult>,
    pub flow_control_packets: u64,
    /// Packets the switches marked FECN; CNPs (each a BECN) the HCAs sent
    /// back, and BECNs the sources took.
    pub fecn_marked: u64,
    pub cnps_sent: u64,
    pub becns_received: u64,
    /// Sampled queue depths (bytes) of every cabled switch port.
    pub queue_depth_bytes: Percentiles,
    pub events: u64,
    pub ports: Vec<IbPortResult>,
    /// Reliable transport: retransmission timeouts that went back, packets
    /// sent again, and packets the receivers discarded out of sequence.
    pub timeouts: u64,
    pub retransmitted_packets: u64,
    pub out_of_sequence: u64,
    pub subnet_manager: Option<IbSmReport>,
    pub link_failure: Option<IbLinkFailure>,
    /// Per message, its FCT alone on an idle fabric (ns).
    #[serde(skip)]
    pub ideal_fcts_ns: Vec<u64>,
    /// Per message, whether it is background traffic.
    #[serde(skip)]
    pub background_messages: Vec<bool>,
    /// Switch names, and per switch, per port of the fabric, the time data
    /// waited for credit there (ns).
    #[serde(skip)]
    pub switch_names: Vec<String>,
    #[serde(skip)]
    pub wait_ns: Vec<Vec<u64>>,
    /// The watched ports, and their depths (bytes) over time.
    #[serde(skip)]
    pub series_names: Vec<String>,
    #[serde(skip)]
    pub series: Vec<(u64, Vec<u32>)>,
}

/// The simulation.
pub struct IbSimulation {
    now: u64,
    seq: u64,
    queue: BinaryHeap<Entry>,
    fabric: Fabric,
    experiment: IbExperiment,
    wires: Vec<Wire>,
    /// Per cable: its two ends, and the last arrival at each (FIFO).
    link_ends: Vec<(At, At)>,
    last_arrival: Vec<[u64; 2]>,
    switches: Vec<SimSwitch>,
    hcas: Vec<Hca>,
    connections: Vec<Connection>,
    packets: Vec<Packet>,
    free_packets: Vec<u32>,
    workload: Workload,
    records: Vec<MessageRecord>,
    /// Payload bytes received per message.
    received: Vec<u64>,
    completed: usize,
    completed_foreground: usize,
    engine: Engine,
    refused: Vec<String>,
    events: u64,
    flow_control_packets: u64,
    hca_drops: u64,
    fecn_marked: u64,
    cnps_sent: u64,
    becns_received: u64,
    /// Watched (switch, engine port) and their sampled depths over time.
    watched: Vec<(u32, u16)>,
    series: Vec<(u64, Vec<u32>)>,
    depth: DepthHistogram,
    /// Per cable: still up.
    link_up: Vec<bool>,
    sm: Option<SmDriver>,
    /// When the SM's timer event is queued for (`u64::MAX`: none).
    sm_timer_at: u64,
    sm_actions: Vec<SmAction>,
    timeouts: u64,
    retransmitted_packets: u64,
    out_of_sequence: u64,
    lost_on_cable: u64,
    discarded_queued: u64,
    dropped_at_dead_port: u64,
    last_dead_port_drop_ns: Option<u64>,
}

/// The LIDs and LFTs the data plane starts with.
pub struct Routing {
    /// Per switch, then per host (HCA port): its LID.
    pub lids: Vec<u16>,
    /// Per switch: output port per LID (`NO_ROUTE`: none).
    pub tables: Vec<Vec<u8>>,
    /// SL per destination LID (dfsssp's layers); empty: SL 0.
    pub sl_of_lid: Vec<u8>,
    pub engine: Engine,
    /// Engines that declined the fabric, and why.
    pub refused: Vec<String>,
}

impl IbSimulation {
    /// Assigns LIDs, routes the fabric with the first engine that takes it,
    /// and builds every switch and HCA.
    pub fn new(fabric: Fabric, experiment: IbExperiment, workload: Workload) -> Result<IbSimulation, String> {
        if !(256..=MAX_MTU).contains(&experiment.mtu) {
            return Err(format!("mtu {}: an IB MTU is 256 to 4096 bytes", experiment.mtu));
        }
        let switch_count = fabric.switches.len();
        if let Some((link, _)) = experiment.link_failure {
            match fabric.links.get(link as usize) {
                None => return Err(format!("link failure: no cable {link} ({} cables)", fabric.links.len())),
                Some(&(End::Switch { .. }, End::Switch { .. })) if experiment.sm.is_some() => {}
                Some(_) if experiment.sm.is_some() => {
                    return Err(format!("link failure: cable {link} ends at a host, whose HCA has one port"));
                }
                Some(_) => return Err("link failure: needs the subnet manager in virtual time (sm)".into()),
            }
        }
        let (lfts, sm) = match experiment.sm {
            None => (route(&fabric, &experiment.engines)?, None),
            Some(timing) => {
                let driver = SmDriver::converge(sm_topology(&fabric)?, &experiment.engines, timing)?;
                (driver.routing(switch_count, fabric.hosts.len())?, Some(driver))
            }
        };
        let layers = lfts.sl_of_lid.iter().copied().max().map_or(1, |sl| sl + 1);
        let vls = layers.next_power_of_two();
        if vls > 8 {
            return Err(format!("the routing needs {layers} VLs, at most 8"));
        }
        let default_port = IbPortSettings {
            data_vls: vls,
            mtu: experiment.mtu,
            rate_bps: Some(experiment.link_bps),
            buffer_blocks: experiment.buffer_blocks,
        };
        let port_of = |s: usize, p: usize| -> IbPortSettings {
            experiment.ports.get(s).and_then(|ports| ports.get(p).copied().flatten()).unwrap_or(default_port)
        };
        let rate = |port: IbPortSettings| port.rate_bps.unwrap_or(experiment.link_bps);
        let arbitration =
            |vls: u8| -> Vec<ArbitrationEntry> { (0..vls).map(|vl| ArbitrationEntry { vl, weight: 255 }).collect() };
        let mut switches = Vec::with_capacity(switch_count);
        for (s, spec) in fabric.switches.iter().enumerate() {
            let ports = usize::from(spec.ports) + 1;
            let config = SwitchConfig {
                ports,
                operational_vls: vls,
                buffer_blocks: experiment.buffer_blocks,
                flow_control_refresh_ns: experiment.refresh_ns,
                vl_arbitration_high: Vec::new(),
                vl_arbitration_low: arbitration(vls),
                high_priority_limit: 0,
            };
            let mut engine = IbSwitch::new(&config).map_err(|e| format!("switch {}: {e}", spec.name))?;
            engine.set_lid(lfts.lids[s]);
            let table = lfts.tables.get(s).ok_or_else(|| format!("switch {}: no LFT", spec.name))?;
            for (lid, &port) in table.iter().enumerate().skip(1) {
                if port != NO_ROUTE {
                    engine.lft.set(lid as u16, port).map_err(|e| format!("switch {}: LFT: {e:?}", spec.name))?;
                }
            }
            for port in 1..ports {
                let settings = port_of(s, port - 1);
                if settings.data_vls < vls {
                    return Err(format!(
                        "switch {} eth{port}: data_vls {}, the routing's layers need {vls}",
                        spec.name, settings.data_vls
                    ));
                }
                let error = |e: &dyn std::fmt::Debug| format!("switch {} eth{port}: {e:?}", spec.name);
                engine.set_port_vls(port, settings.data_vls, settings.buffer_blocks).map_err(|e| error(&e))?;
                engine.set_port_arbitration(port, &[], &arbitration(settings.data_vls), 0).map_err(|e| error(&e))?;
                engine.set_port_state(port, LogicalState::Active);
                let rate = PortRate { bits_per_s: rate(settings), frame_overhead: FRAME_OVERHEAD, catch_up_ns: 0 };
                engine.set_port_rate(port, Some(rate));
                let max_len = settings.mtu + PACKET_OVERHEAD;
                engine.set_port_max_len(port, max_len, max_len);
            }
            for port in 1..ports {
                for out in 1..ports {
                    let out_vls = port_of(s, out - 1).data_vls;
                    engine.sl_to_vl.set_table(port, out, core::array::from_fn(|sl| (sl as u8) % out_vls));
                }
            }
            let markers = vec![PortMarker::default(); ports];
            switches.push(SimSwitch { engine, peers: vec![None; ports], wake_at: u64::MAX, markers });
        }
        let sl_of = |lid: u16| lfts.sl_of_lid.get(usize::from(lid)).copied().unwrap_or(0);
        let mut hcas: Vec<Hca> = Vec::with_capacity(fabric.hosts.len());
        for (h, host) in fabric.hosts.iter().enumerate() {
            // The HCA's port matches its leaf's: VLs, buffer, MTU, rate.
            let leaf = port_of(host.switch as usize, usize::from(host.port));
            let credits = LinkCredits::new(leaf.data_vls, leaf.buffer_blocks, experiment.refresh_ns)
                .map_err(|e| format!("host {}: {e:?}", host.name))?;
            let lid = lfts.lids[switch_count + h];
            hcas.push(Hca {
                lid,
                sl: sl_of(lid),
                credits,
                line: LineRate::new(rate(leaf), 0),
                mtu: leaf.mtu.min(experiment.mtu),
                leaf: (host.switch, host.port + 1),
                link: 0,
                connections: Vec::new(),
                next: 0,
                wake_at: u64::MAX,
                read_free_at: 0,
                overruns: 0,
                credit_waits: 0,
                credit_wait_ns: 0,
                waiting_since: None,
                becns_owed: VecDeque::new(),
            });
        }
        // A cable runs at its slower end's rate.
        let wires = fabric
            .links
            .iter()
            .map(|&(a, b)| {
                let speed = [a, b]
                    .into_iter()
                    .filter_map(|end| match end {
                        End::Switch { switch, port } => Some(rate(port_of(switch as usize, usize::from(port)))),
                        End::Host { .. } => None,
                    })
                    .min()
                    .unwrap_or(experiment.link_bps);
                Wire::new(speed, experiment.link_delay_ns)
            })
            .collect();
        let at = |end: End| match end {
            End::Switch { switch, port } => At::Switch { switch, port: port + 1 },
            End::Host { host } => At::Hca { hca: host },
        };
        let link_ends: Vec<(At, At)> = fabric.links.iter().map(|&(a, b)| (at(a), at(b))).collect();
        for (link, &(a, b)) in fabric.links.iter().enumerate() {
            for (here, there) in [(a, b), (b, a)] {
                match here {
                    End::Switch { switch, port } => {
                        switches[switch as usize].peers[usize::from(port) + 1] = Some((at(there), link as u32))
                    }
                    End::Host { host } => hcas[host as usize].link = link as u32,
                }
            }
        }
        let mut connections = Vec::with_capacity(workload.connections.len());
        for (c, &(src, dst)) in workload.connections.iter().enumerate() {
            let dst_lid = hcas[dst as usize].lid;
            connections.push(Connection { dst_lid, sl: sl_of(dst_lid), timer_at: u64::MAX, ..Connection::default() });
            hcas[src as usize].connections.push(c as u32);
        }
        let records = workload.messages.iter().map(|m| MessageRecord::new(m.bytes)).collect();
        let link_count = fabric.links.len();
        let received = vec![0; workload.messages.len()];
        let mut sim = IbSimulation {
            now: 0,
            seq: 0,
            queue: BinaryHeap::with_capacity(1 << 12),
            last_arrival: vec![[0; 2]; fabric.links.len()],
            link_ends,
            fabric,
            experiment,
            wires,
            switches,
            hcas,
            connections,
            packets: Vec::new(),
            free_packets: Vec::new(),
            workload,
            records,
            received,
            completed: 0,
            completed_foreground: 0,
            engine: lfts.engine,
            refused: lfts.refused,
            events: 0,
            flow_control_packets: 0,
            hca_drops: 0,
            fecn_marked: 0,
            cnps_sent: 0,
            becns_received: 0,
            watched: Vec::new(),
            series: Vec::new(),
            depth: DepthHistogram::default(),
            link_up: vec![true; link_count],
            sm,
            sm_timer_at: u64::MAX,
            sm_actions: Vec::new(),
            timeouts: 0,
            retransmitted_packets: 0,
            out_of_sequence: 0,
            lost_on_cable: 0,
            discarded_queued: 0,
            dropped_at_dead_port: 0,
            last_dead_port_drop_ns: None,
        };
        if let Some((link, at)) = sim.experiment.link_failure {
            sim.push(at, IbEvent::LinkDown { link });
        }
        sim.schedule_sm_timer();
        if sim.experiment.sample_ns > 0 {
            sim.push(0, IbEvent::Sample);
        }
        // Every port starts by sending flow control: the links come up.
        for switch in 0..switch_count as u32 {
            sim.push(0, IbEvent::SwitchWake { switch });
            sim.switches[switch as usize].wake_at = 0;
        }
        for hca in 0..sim.hcas.len() as u32 {
            sim.push(0, IbEvent::HcaWake { hca });
            sim.hcas[hca as usize].wake_at = 0;
        }
        for (id, message) in sim.workload.messages.iter().enumerate() {
            if message.waiting_for == 0 {
                let at = message.delay_ns;
                sim.seq += 1;
                sim.queue.push(Entry { at, seq: sim.seq, event: IbEvent::Release { message: id as u32 } });
            }
        }
        Ok(sim)
    }

    fn push(&mut self, at: u64, event: IbEvent) {
        self.seq += 1;
        self.queue.push(Entry { at, seq: self.seq, event });
    }

    /// The collectives are received whole (background traffic may be left).
    pub fn finished(&self) -> bool {
        self.completed_foreground == self.workload.foreground_messages
    }

    /// Runs until the workload is received whole or the time limit.
    pub fn run(&mut self) {
        while !self.finished() {
            let Some(entry) = self.queue.pop() else { break };
            if entry.at > self.experiment.time_limit_ns {
                break;
            }
            self.now = entry.at;
            self.events += 1;
            self.handle(entry.event);
        }
    }

    fn handle(&mut self, event: IbEvent) {
        match event {
            IbEvent::Packet { at: At::Switch { switch, port }, packet } => {
                if !self.switch_link_up(switch, port) {
                    // On the cable when it was cut.
                    self.lost_on_cable += 1;
                    self.free_packets.push(packet);
                    return;
                }
                let p = self.packets[packet as usize];
                let desc = PacketDesc { handle: packet, vl: p.vl, sl: p.sl, dlid: p.dlid, wire_len: p.wire_len() };
                match self.switches[switch as usize].engine.receive(usize::from(port), desc) {
                    Received::Queued { .. } => {}
                    dropped => {
                        // Counted on the port by the engine.
                        if dropped == Received::Dropped(DropReason::OutputNotActive) {
                            self.dropped_at_dead_port += 1;
                            self.last_dead_port_drop_ns = Some(self.now);
                        }
                        self.free_packets.push(packet);
                    }
                }
                self.run_switch(switch);
            }
            IbEvent::Packet { at: At::Hca { hca }, packet } => {
                if !self.link_up[self.hcas[hca as usize].link as usize] {
                    self.lost_on_cable += 1;
                    self.free_packets.push(packet);
                    return;
                }
                self.hca_receive(hca, packet);
                self.run_hca(hca);
            }
            IbEvent::Read { hca, packet } => {
                self.hca_read(hca, packet);
                self.run_hca(hca);
            }
            IbEvent::FlowControl { at: At::Switch { switch, port }, .. } if !self.switch_link_up(switch, port) => {}
            IbEvent::FlowControl { at: At::Switch { switch, port }, update } => {
                self.switches[switch as usize].engine.flow_control_received(usize::from(port), update);
                self.run_switch(switch);
            }
            IbEvent::FlowControl { at: At::Hca { hca }, update } => {
                self.hcas[hca as usize].credits.flow_control_received(update);
                self.run_hca(hca);
            }
            IbEvent::SwitchWake { switch } => {
                if self.switches[switch as usize].wake_at == self.now {
                    self.switches[switch as usize].wake_at = u64::MAX;
                    self.run_switch(switch);
                }
            }
            IbEvent::HcaWake { hca } => {
                if self.hcas[hca as usize].wake_at == self.now {
                    self.hcas[hca as usize].wake_at = u64::MAX;
                    self.run_hca(hca);
                }
            }
            IbEvent::Release { message } => {
                let m = self.workload.messages[message as usize];
                let (src, _) = self.workload.connections[m.connection as usize];
                self.records[message as usize].released_ns = self.now;
                self.connections[m.connection as usize].pending.push_back(message);
                self.run_hca(src);
            }
            IbEvent::Sample => {
                self.sample();
                self.push(self.now + self.experiment.sample_ns, IbEvent::Sample);
            }
            IbEvent::Timeout { connection } => self.timeout(connection),
            IbEvent::LinkDown { link } => self.link_down(link),
            IbEvent::SmMad { slot } => {
                let mut actions = std::mem::take(&mut self.sm_actions);
                if let Some(sm) = self.sm.as_mut() {
                    sm.deliver(self.now, slot, &mut actions);
                }
                self.apply_sm(actions);
            }
            IbEvent::SmTimer => {
                if self.sm_timer_at == self.now {
                    self.sm_timer_at = u64::MAX;
                    let mut actions = std::mem::take(&mut self.sm_actions);
                    if let Some(sm) = self.sm.as_mut() {
                        sm.timer(self.now, &mut actions);
                    }
                    self.apply_sm(actions);
                }
            }
            IbEvent::LftWritten { switch, block } => {
                if let Some(sm) = &self.sm {
                    let entries = sm.lft_block(switch, block);
                    // A block past the unicast range is refused by the engine as by the agent.
                    let _ = self.switches[switch as usize].engine.lft.set_block(block, &entries);
                }
            }
        }
    }

    /// Whether the cable at `switch`'s engine port `port` is up.
    fn switch_link_up(&self, switch: u32, port: u16) -> bool {
        self.switches[switch as usize].peers[usize::from(port)].is_none_or(|(_, link)| self.link_up[link as usize])
    }

    /// Queues what the SM asked for, and its next timer.
    fn apply_sm(&mut self, mut actions: Vec<SmAction>) {
        for action in actions.drain(..) {
            match action {
                SmAction::Mad { at, slot } => self.push(at, IbEvent::SmMad { slot }),
                SmAction::LftWritten { at, switch, block } => self.push(at, IbEvent::LftWritten { switch, block }),
            }
        }
        self.sm_actions = actions;
        self.schedule_sm_timer();
    }

    fn schedule_sm_timer(&mut self) {
        let Some(at) = self.sm.as_ref().and_then(|sm| sm.next_timer(self.now)) else { return };
        if at < self.sm_timer_at {
            self.sm_timer_at = at;
            self.push(at, IbEvent::SmTimer);
        }
    }

    /// Cable `link` is cut: both ends' ports go down (nothing more is
    /// taken in or sent; flow control starts over, IBA 7.9.4), what was
    /// queued for them is discarded (its inputs get their buffer back),
    /// what is on the cable is lost as it arrives, and the switches' agents
    /// tell the SM (trap 128).
    fn link_down(&mut self, link: u32) {
        if !std::mem::replace(&mut self.link_up[link as usize], false) {
            return;
        }
        let (a, b) = self.link_ends[link as usize];
        let mut discarded = Vec::new();
        for end in [a, b] {
            if let At::Switch { switch, port } = end {
                let engine = &mut self.switches[switch as usize].engine;
                engine.set_port_state(usize::from(port), LogicalState::Init);
                engine.reset_link(usize::from(port));
                engine.discard_queued(usize::from(port), &mut discarded);
                // Nothing left to wait with: closes the port's timed xmit wait.
                let _ = engine.poll_transmit(usize::from(port), self.now);
            }
        }
        self.discarded_queued += discarded.len() as u64;
        self.free_packets.extend(discarded);
        if let (Some(sm), At::Switch { switch, port }) = (self.sm.as_mut(), a) {
            let mut actions = std::mem::take(&mut self.sm_actions);
            sm.link_down(self.now, PortRef { node: switch as usize, port: port as u8 }, &mut actions);
            self.apply_sm(actions);
        }
        for end in [a, b] {
            if let At::Switch { switch, .. } = end {
                self.run_switch(switch);
            }
        }
    }

    /// A connection's transport timer: stopped if everything sent is
    /// acknowledged, pushed on to `rto_ns` after the last acknowledgement
    /// that moved; otherwise the sender goes back to the first packet its
    /// receiver lacks and sends from there again (go-back-N).
    fn timeout(&mut self, c: u32) {
        let now = self.now;
        let rto = self.experiment.rto_ns;
        let connection = &mut self.connections[c as usize];
        if connection.timer_at != now {
            return;
        }
        connection.timer_at = u64::MAX;
        if connection.expected_psn == connection.sent_psn {
            return;
        }
        let due = connection.timer_from + rto;
        if due <= now {
            connection.next_psn = connection.expected_psn;
            connection.timer_from = now;
            self.timeouts += 1;
        }
        let at = connection.timer_from + rto;
        connection.timer_at = at;
        self.push(at, IbEvent::Timeout { connection: c });
        let (src, _) = self.workload.connections[c as usize];
        self.run_hca(src);
    }

    /// Records the depth of every watched port over time, and of every
    /// cabled switch port into the histogram.
    fn sample(&mut self) {
        let depth = |switch: &SimSwitch, port: usize| -> u32 {
            let vls = switch.engine.credits(port).map_or(0, |c| c.operational_vls());
            (0..vls).map(|vl| switch.engine.queued_bytes(port, vl)).sum()
        };
        let row: Vec<u32> =
            self.watched.iter().map(|&(s, port)| depth(&self.switches[s as usize], usize::from(port) + 1)).collect();
        if !row.is_empty() {
            self.series.push((self.now, row));
        }
        for switch in &self.switches {
            for port in 1..switch.peers.len() {
                if switch.peers[port].is_some() {
                    self.depth.add(depth(switch, port));
                }
            }
        }
    }

    /// Ports (switch, port of the fabric) whose depth to record over time.
    pub fn watch(&mut self, ports: Vec<(u32, u16)>) {
        self.watched = ports;
    }

    /// Every cabled switch port of a fabric with up to 64 of them; none on larger ones.
    pub fn default_watch(&self) -> Vec<(u32, u16)> {
        let mut ports = Vec::new();
        for (s, switch) in self.switches.iter().enumerate() {
            for port in 1..switch.peers.len() {
                if switch.peers[port].is_some() {
                    ports.push((s as u32, port as u16 - 1));
                }
            }
        }
        if ports.len() > 64 { Vec::new() } else { ports }
    }

    /// Puts `packet` into a free slot of the slab; its handle.
    fn allocate(&mut self, packet: Packet) -> u32 {
        match self.free_packets.pop() {
            Some(handle) => {
                self.packets[handle as usize] = packet;
                handle
            }
            None => {
                self.packets.push(packet);
                (self.packets.len() - 1) as u32
            }
        }
    }

    /// Sends a packet or flow-control update over `link` to `to`. A cable
    /// delivers in order: a flow-control packet that carries the blocks
    /// sent so far (FCTBS) must not overtake the data it counts, so it
    /// arrives after what is already on the cable.
    fn launch(&mut self, link: u32, to: At, frame_len: usize, event: IbEvent) {
        let wire = self.wires[link as usize];
        let direction = usize::from(self.link_ends[link as usize].0 != to);
        let last = &mut self.last_arrival[link as usize][direction];
        let at = wire.arrival(self.now, frame_len).max(*last + wire.serialisation_ns(frame_len));
        *last = at;
        let event = match event {
            IbEvent::Packet { packet, .. } => IbEvent::Packet { at: to, packet },
            IbEvent::FlowControl { update, .. } => {
                self.flow_control_packets += 1;
                IbEvent::FlowControl { at: to, update }
            }
            other => other,
        };
        self.push(at, event);
    }

    /// The switch sends its due flow control and what its ports may send
    /// now, then asks to be woken for the next line or refresh.
    fn run_switch(&mut self, s: u32) {
        let now = self.now;
        let ports = self.switches[s as usize].peers.len();
        for port in 0..ports {
            let peer = self.switches[s as usize].peers[port].filter(|&(_, link)| self.link_up[link as usize]);
            let Some((to, link)) = peer else {
                // Port 0 (the switch itself), uncabled ports and cut
                // cables: their refreshes go nowhere, but are due all the same.
                while self.switches[s as usize].engine.poll_flow_control(port, now).is_some() {}
                continue;
            };
            while let Some(update) = self.switches[s as usize].engine.poll_flow_control(port, now) {
                let event = IbEvent::FlowControl { at: to, update };
                self.launch(link, to, FLOW_CONTROL_FRAME, event);
            }
            while let Some(sent) = self.switches[s as usize].engine.poll_transmit(port, now) {
                let packet = &mut self.packets[sent.handle as usize];
                packet.vl = sent.vl;
                if let Some(cc) = &self.experiment.cc
                    && !packet.cnp
                {
                    let switch = &mut self.switches[s as usize];
                    let queued = switch.engine.queued_bytes(port, sent.vl);
                    let size = blocks(packet.wire_len());
                    let starved = switch.engine.credits(port).is_some_and(|c| !c.can_send(sent.vl, size));
                    if switch.markers[port].on_transmit(&cc.switch, queued, starved) && !packet.fecn {
                        packet.fecn = true;
                        self.fecn_marked += 1;
                    }
                }
                let frame = (packet.wire_len() + FRAME_OVERHEAD) as usize;
                self.launch(link, to, frame, IbEvent::Packet { at: to, packet: sent.handle });
            }
        }
        let engine = &self.switches[s as usize].engine;
        let wake = engine.next_transmit_ns(now).unwrap_or(u64::MAX).min(engine.next_timer_ns()).max(now + 1);
        if wake < self.switches[s as usize].wake_at {
            self.switches[s as usize].wake_at = wake;
            self.push(wake, IbEvent::SwitchWake { switch: s });
        }
    }

    /// The HCA sends its due flow control and, when its line is free, the
    /// next packet of the next queue pair (round robin) that has credit.
    fn run_hca(&mut self, h: u32) {
        let now = self.now;
        let (leaf, port) = self.hcas[h as usize].leaf;
        let to = At::Switch { switch: leaf, port };
        let link = self.hcas[h as usize].link;
        while let Some(update) = self.hcas[h as usize].credits.poll_flow_control(now) {
            self.launch(link, to, FLOW_CONTROL_FRAME, IbEvent::FlowControl { at: to, update });
        }
        if self.hcas[h as usize].line.idle(now)
            && let Some(packet) = self.next_packet(h)
        {
            let p = self.packets[packet as usize];
            self.hcas[h as usize].line.send(now, p.wire_len() + FRAME_OVERHEAD);
            let c = self.workload.messages[p.message as usize].connection;
            if !p.cnp && self.connections[c as usize].timer_at == u64::MAX {
                // The transport timer runs from when the packet has left.
                let at = self.hcas[h as usize].line.free_at(now) + self.experiment.rto_ns;
                let connection = &mut self.connections[c as usize];
                (connection.timer_at, connection.timer_from) = (at, at - self.experiment.rto_ns);
                self.push(at, IbEvent::Timeout { connection: c });
            }
            if let Some(cc) = &self.experiment.cc
                && !p.cnp
            {
                // A10.3.1: the flow's next packet waits the CCT entry's
                // inter-packet delay after this one has left.
                let c = self.workload.messages[p.message as usize].connection as usize;
                let delay = self.connections[c].throttle.inter_packet_delay_ns(&cc.ca, now);
                self.connections[c].next_send_at = self.hcas[h as usize].line.free_at(now) + delay;
            }
            self.launch(link, to, (p.wire_len() + FRAME_OVERHEAD) as usize, IbEvent::Packet { at: to, packet });
        }
        let hca = &self.hcas[h as usize];
        let mut busy = !hca.becns_owed.is_empty();
        let mut throttled_until = u64::MAX;
        for &c in &hca.connections {
            let c = &self.connections[c as usize];
            if c.next_psn != c.end_psn || !c.pending.is_empty() {
                busy = true;
                if c.next_send_at > now {
                    throttled_until = throttled_until.min(c.next_send_at);
                }
            }
        }
        let line = if busy && !hca.line.idle(now) { hca.line.free_at(now) } else { u64::MAX };
        let wake = line.min(throttled_until).min(hca.credits.next_refresh_ns()).max(now + 1);
        if wake < hca.wake_at {
            self.hcas[h as usize].wake_at = wake;
            self.push(wake, IbEvent::HcaWake { hca: h });
        }
    }

    /// The next packet HCA `h` may send: round robin over its queue pairs,
    /// each's next PSN if the link has credit for it.
    fn next_packet(&mut self, h: u32) -> Option<u32> {
        let now = self.now;
        // BECNs owed go first: a CNP is one block.
        if let Some(&c) = self.hcas[h as usize].becns_owed.front() {
            let (src, _) = self.workload.connections[c as usize];
            let (dlid, sl) = (self.hcas[src as usize].lid, self.hcas[src as usize].sl);
            let hca = &mut self.hcas[h as usize];
            let vl = sl % hca.credits.operational_vls();
            let size = blocks(PACKET_OVERHEAD);
            if hca.credits.can_send(vl, size) {
                hca.credits.sent(vl, size);
                hca.becns_owed.pop_front();
                self.cnps_sent += 1;
                let cnp = Packet { message: c, dlid, sl, vl, payload: 0, fecn: false, cnp: true, psn: 0 };
                return Some(self.allocate(cnp));
            }
        }
        let mtu = u64::from(self.hcas[h as usize].mtu);
        let count = self.hcas[h as usize].connections.len();
        let mut waited = false;
        for i in 0..count {
            let index = (self.hcas[h as usize].next + i) % count;
            let c = self.hcas[h as usize].connections[index] as usize;
            let connection = &mut self.connections[c];
            if connection.next_send_at > now {
                continue;
            }
            if before(connection.next_psn, connection.expected_psn) {
                // Received meanwhile (what went before a go-back arrived after all).
                connection.next_psn = connection.expected_psn;
            }
            if connection.next_psn == connection.end_psn {
                let Some(message) = connection.pending.pop_front() else { continue };
                let packets = self.workload.messages[message as usize].bytes.max(1).div_ceil(mtu) as u32;
                connection.unacked.push_back((message, connection.end_psn, packets));
                connection.end_psn = connection.end_psn.wrapping_add(packets);
            }
            let psn = connection.next_psn;
            let Some(&(message, first, packets)) =
                connection.unacked.iter().find(|&&(_, first, packets)| psn.wrapping_sub(first) < packets)
            else {
                continue;
            };
            let nth = psn.wrapping_sub(first);
            let bytes = self.workload.messages[message as usize].bytes.max(1);
            let payload = if nth + 1 == packets { bytes - u64::from(packets - 1) * mtu } else { mtu } as u32;
            let vl = connection.sl % self.hcas[h as usize].credits.operational_vls();
            let size = blocks(payload + PACKET_OVERHEAD);
            if !self.hcas[h as usize].credits.can_send(vl, size) {
                waited = true;
                continue;
            }
            self.hcas[h as usize].credits.sent(vl, size);
            connection.next_psn = psn.wrapping_add(1);
            if !before(psn, connection.sent_psn) {
                connection.sent_psn = psn.wrapping_add(1);
            } else {
                self.retransmitted_packets += 1;
            }
            let packet = Packet {
                message,
                dlid: connection.dst_lid,
                sl: connection.sl,
                vl,
                payload,
                fecn: false,
                cnp: false,
                psn,
            };
            let handle = self.allocate(packet);
            self.hcas[h as usize].next = (index + 1) % count;
            self.hca_wait_ends(h);
            return Some(handle);
        }
        if waited {
            self.hcas[h as usize].credit_waits += 1;
            self.hcas[h as usize].waiting_since.get_or_insert(now);
        } else {
            self.hca_wait_ends(h);
        }
        None
    }

    /// HCA `h` no longer waits for credit (it sends, or has nothing to send).
    fn hca_wait_ends(&mut self, h: u32) {
        let hca = &mut self.hcas[h as usize];
        if let Some(since) = hca.waiting_since.take() {
            hca.credit_wait_ns += self.now - since;
        }
    }

    /// A packet reaches HCA `h`: into its receive buffer (credit checked),
    /// to be read at once or, with a reader rate, when the reader gets to it.
    fn hca_receive(&mut self, h: u32, packet: u32) {
        let p = self.packets[packet as usize];
        let hca = &mut self.hcas[h as usize];
        if hca.credits.received(p.vl, blocks(p.wire_len())).is_err() {
            hca.overruns += 1;
            self.hca_drops += 1;
            self.free_packets.push(packet);
            return;
        }
        if p.cnp {
            // A BECN for the connection that sent `p.message`'s packets (A10.3.1.1).
            hca.credits.released(p.vl, blocks(p.wire_len()));
            self.free_packets.push(packet);
            self.becns_received += 1;
            if let Some(cc) = &self.experiment.cc {
                self.connections[p.message as usize].throttle.becn(&cc.ca, self.now);
            }
            return;
        }
        if p.fecn {
            // A10.3.2: the destination answers FECN with a BECN to the source.
            hca.becns_owed.push_back(self.workload.messages[p.message as usize].connection);
        }
        match self.experiment.read_bps {
            None => self.hca_read(h, packet),
            Some(bps) => {
                let read_ns = (u64::from(p.wire_len()) * 8 * 1_000_000_000).div_ceil(bps.max(1));
                let done = hca.read_free_at.max(self.now) + read_ns;
                hca.read_free_at = done;
                self.push(done, IbEvent::Read { hca: h, packet });
            }
        }
    }

    /// HCA `h` has read `packet`: its buffer is freed (the sender granted
    /// more) and, if it is the PSN its connection expects, its payload
    /// counted to its message; out of sequence it is discarded.
    fn hca_read(&mut self, h: u32, packet: u32) {
        let p = self.packets[packet as usize];
        self.free_packets.push(packet);
        self.hcas[h as usize].credits.released(p.vl, blocks(p.wire_len()));
        let m = p.message as usize;
        let connection = &mut self.connections[self.workload.messages[m].connection as usize];
        if p.psn != connection.expected_psn {
            self.out_of_sequence += 1;
            return;
        }
        connection.expected_psn = p.psn.wrapping_add(1);
        // The acknowledgement of it restarts the sender's timer.
        connection.timer_from = self.now;
        self.received[m] += u64::from(p.payload);
        if self.received[m] >= self.workload.messages[m].bytes.max(1) {
            self.complete(p.message);
        }
    }

    fn complete(&mut self, id: u32) {
        let now = self.now;
        self.records[id as usize].completed_ns = now;
        self.completed += 1;
        if !self.workload.is_background(id) {
            self.completed_foreground += 1;
        }
        let message = self.workload.messages[id as usize];
        // Received in order: the oldest the connection has not seen acknowledged.
        let connection = &mut self.connections[message.connection as usize];
        if connection.unacked.front().is_some_and(|&(m, _, _)| m == id) {
            connection.unacked.pop_front();
        }
        for i in 0..message.dependent_count {
            let later = self.workload.dependents[(message.first_dependent + i) as usize];
            let m = &mut self.workload.messages[later as usize];
            m.waiting_for -= 1;
            if m.waiting_for == 0 {
                let at = now + m.delay_ns;
                self.push(at, IbEvent::Release { message: later });
            }
        }
    }

    /// Per message, its FCT alone on an idle fabric: its packets back to
    /// back on the sender's cable, the last one stored and forwarded over
    /// the rest of the shortest path.
    fn ideal_fcts_ns(&self) -> Vec<u64> {
        let switches = self.fabric.switches.len();
        let mut neighbours = vec![Vec::new(); switches];
        for &(a, b) in &self.fabric.links {
            if let (End::Switch { switch: a, .. }, End::Switch { switch: b, .. }) = (a, b) {
                neighbours[a as usize].push(b);
                neighbours[b as usize].push(a);
            }
        }
        // Switch-to-switch distances from each leaf that sends, found once.
        let mut distances: Vec<Option<Vec<u64>>> = vec![None; switches];
        let mut ideal = Vec::with_capacity(self.workload.messages.len());
        for m in &self.workload.messages {
            let (src, dst) = self.workload.connections[m.connection as usize];
            let (from, to) = (self.fabric.hosts[src as usize].switch, self.fabric.hosts[dst as usize].switch);
            let from_leaf = distances[from as usize].get_or_insert_with(|| {
                let mut distance = vec![u64::MAX; switches];
                let mut queue = VecDeque::from([from]);
                distance[from as usize] = 0;
                while let Some(at) = queue.pop_front() {
                    for &next in &neighbours[at as usize] {
                        if distance[next as usize] == u64::MAX {
                            distance[next as usize] = distance[at as usize] + 1;
                            queue.push_back(next);
                        }
                    }
                }
                distance
            });
            let links = from_leaf[to as usize].saturating_add(2);
            let hca = &self.hcas[src as usize];
            let wire = self.wires[hca.link as usize];
            let mtu = u64::from(hca.mtu);
            let frame = |payload: u64| (payload as u32 + PACKET_OVERHEAD + FRAME_OVERHEAD) as usize;
            let bytes = m.bytes.max(1);
            let (full, rest) = (bytes / mtu, bytes % mtu);
            let last = wire.serialisation_ns(frame(if rest > 0 { rest } else { mtu }));
            let serialise = full * wire.serialisation_ns(frame(mtu)) + if rest > 0 { last } else { 0 };
            ideal.push(serialise + links * wire.propagation_ns + (links - 1) * last);
        }
        ideal
    }

    /// The failed cable, when it failed, when the SM had rerouted around
    /// it, and what was lost.
    fn link_failure_report(&self) -> Option<IbLinkFailure> {
        let (link, failed_ns) = self.experiment.link_failure?;
        let sm = self.sm.as_ref()?;
        let (a, b) = self.fabric.links[link as usize];
        let name = |end: End| match end {
            End::Switch { switch, port } => {
                format!("{}:{}", self.fabric.switches[switch as usize].name, self.fabric.port_name(switch, port))
            }
            End::Host { host } => self.fabric.hosts[host as usize].name.clone(),
        };
        let rerouted = sm.fabric_up.iter().find(|&&(at, _)| at >= failed_ns);
        let hca_lids: Vec<u16> = self.hcas.iter().map(|h| h.lid).collect();
        let lft_entries_on_dead_ports = self
            .switches
            .iter()
            .map(|switch| {
                hca_lids
                    .iter()
                    .filter_map(|&lid| switch.engine.lft.lookup(lid))
                    .filter(|&port| {
                        switch
                            .peers
                            .get(usize::from(port))
                            .copied()
                            .flatten()
                            .is_some_and(|(_, l)| !self.link_up[l as usize])
                    })
                    .count()
            })
            .sum();
        Some(IbLinkFailure {
            link,
            cable: format!("{} - {}", name(a), name(b)),
            failed_ns,
            trap_at_sm_ns: sm.traps.iter().copied().find(|&at| at >= failed_ns),
            rerouted_ns: rerouted.map(|&(at, _)| at),
            sm_reroute_ns: rerouted.and_then(|&(_, reroute)| reroute),
            lost_on_cable: self.lost_on_cable,
            discarded_queued: self.discarded_queued,
            dropped_at_dead_port: self.dropped_at_dead_port,
            last_dead_port_drop_ns: self.last_dead_port_drop_ns,
            lft_entries_on_dead_ports,
        })
    }

    /// What the run measured.
    pub fn report(&self, topology: &str) -> IbReport {
        let collectives = super::output::collective_results(&self.workload, &self.records);
        // The LFTs in effect now: the SM's last routing, which after a
        // change may be another engine's than the first sweep's.
        let (engine, refused) =
            self.sm.as_ref().and_then(SmDriver::engine_now).unwrap_or_else(|| (self.engine, self.refused.clone()));
        let mut ports = Vec::new();
        let mut drops = self.hca_drops + self.lost_on_cable;
        let now = self.now;
        let mut xmit_wait: u64 = self.hcas.iter().map(|h| h.credit_waits).sum();
        let mut xmit_wait_ns: u64 =
            self.hcas.iter().map(|h| h.credit_wait_ns + h.waiting_since.map_or(0, |since| now - since)).sum();
        let mut wait_ns = Vec::with_capacity(self.switches.len());
        for (s, switch) in self.switches.iter().enumerate() {
            let mut waits = vec![0; switch.peers.len() - 1];
            for port in 1..switch.peers.len() {
                let Some(counters) = switch.engine.counters(port) else { continue };
                let discards = counters.rcv_errors + counters.rcv_switch_relay_errors + counters.xmit_discards;
                drops += discards;
                xmit_wait += counters.xmit_wait;
                let waited_ns = switch.engine.xmit_wait_ns(port, now);
                xmit_wait_ns += waited_ns;
                waits[port - 1] = waited_ns;
                if switch.peers[port].is_some() {
                    ports.push(IbPortResult {
                        switch: self.fabric.switches[s].name.clone(),
                        port: format!("eth{port}"),
                        xmit_bytes: counters.xmit_data * 4,
                        xmit_packets: counters.xmit_packets,
                        xmit_wait: counters.xmit_wait,
                        xmit_wait_ns: waited_ns,
                        discards,
                    });
                }
            }
            wait_ns.push(waits);
        }
        let ideal_fcts_ns = self.ideal_fcts_ns();
        let mut slowdowns: Vec<f64> = self
            .records
            .iter()
            .zip(&ideal_fcts_ns)
            .enumerate()
            .filter(|&(m, _)| !self.workload.is_background(m as u32))
            .filter_map(|(_, (r, &ideal))| Some(r.fct_ns()? as f64 / ideal.max(1) as f64))
            .collect();
        slowdowns.sort_by(f64::total_cmp);
        let percentile = |f: f64| super::stats::percentile_of(&slowdowns, f);
        IbReport {
            topology: topology.to_owned(),
            experiment: self.experiment.clone(),
            routing_engine: engine.name().to_owned(),
            routing_refused: refused,
            vls: self.switches.first().and_then(|s| s.engine.credits(1)).map_or(1, |c| c.operational_vls()),
            switches: self.switches.len(),
            hosts: self.hcas.len(),
            finished: self.finished(),
            simulated_ns: self.now,
            collectives,
            fcts_ns: self
                .workload
                .messages
                .iter()
                .zip(&self.records)
                .map(|(m, r)| {
                    let (src, dst) = self.workload.connections[m.connection as usize];
                    (src, dst, r.fct_ns())
                })
                .collect(),
            drops,
            xmit_wait,
            xmit_wait_ns,
            waiting_ports: ports.iter().filter(|p| p.xmit_wait_ns > 0).count(),
            fct_slowdown: Percentiles {
                p50: percentile(0.5),
                p90: percentile(0.9),
                p99: percentile(0.99),
                max: slowdowns.last().copied().unwrap_or(0.0),
            },
            background: super::output::background_result(
                &self.workload,
                &self.records,
                |m| ideal_fcts_ns[m as usize],
                self.now,
                None,
                None,
                false,
            ),
            flow_control_packets: self.flow_control_packets,
            fecn_marked: self.fecn_marked,
            cnps_sent: self.cnps_sent,
            becns_received: self.becns_received,
            queue_depth_bytes: Percentiles {
                p50: f64::from(self.depth.percentile(0.5)),
                p90: f64::from(self.depth.percentile(0.9)),
                p99: f64::from(self.depth.percentile(0.99)),
                max: f64::from(self.depth.max()),
            },
            events: self.events,
            ports,
            timeouts: self.timeouts,
            retransmitted_packets: self.retransmitted_packets,
            out_of_sequence: self.out_of_sequence,
            subnet_manager: self.sm.as_ref().map(|sm| IbSmReport {
                first_sweep_ns: sm.first_sweep_ns,
                smps_sent: sm.smps_sent,
                lft_blocks_written: sm.lft_blocks_written,
                light_sweeps: sm.light_sweeps(),
                routings: sm
                    .engines
                    .iter()
                    .map(|&(at_ns, engine)| IbRouting { at_ns, engine: engine.name().to_owned() })
                    .collect(),
            }),
            link_failure: self.link_failure_report(),
            background_messages: (0..self.records.len() as u32).map(|m| self.workload.is_background(m)).collect(),
            ideal_fcts_ns,
            switch_names: self.fabric.switches.iter().map(|s| s.name.clone()).collect(),
            wait_ns,
            series_names: self
                .watched
                .iter()
                .map(|&(s, p)| format!("{}:{}", self.fabric.switches[s as usize].name, self.fabric.port_name(s, p)))
                .collect(),
            series: self.series.clone(),
        }
    }
}

impl IbReport {
    /// Writes `summary.json`, `messages.csv` (per message: source,
    /// destination, FCT), `ports.csv` (per switch port: bytes, packets,
    /// xmit wait, discards) and `queues.csv` (the watched ports' depth
    /// over time) into `dir`.
    pub fn write(&self, dir: &std::path::Path) -> std::io::Result<()> {
        use std::fmt::Write as _;
        std::fs::create_dir_all(dir)?;
        let json = serde_json::to_string_pretty(self).expect("the report serialises");
        std::fs::write(dir.join("summary.json"), json + "\n")?;
        let mut csv = String::from("message,src,dst,fct_ns,ideal_ns,slowdown,traffic\n");
        for (m, (src, dst, fct)) in self.fcts_ns.iter().enumerate() {
            let traffic = if self.background_messages.get(m) == Some(&true) { "background" } else { "collective" };
            let ideal = self.ideal_fcts_ns.get(m).copied().unwrap_or(0);
            let (fct, slowdown) = match fct {
                Some(f) => (f.to_string(), format!("{:.4}", *f as f64 / ideal.max(1) as f64)),
                None => (String::new(), String::new()),
            };
            let _ = writeln!(csv, "{m},{src},{dst},{fct},{ideal},{slowdown},{traffic}");
        }
        std::fs::write(dir.join("messages.csv"), csv)?;
        let mut csv = String::from("switch,port,xmit_bytes,xmit_packets,xmit_wait,xmit_wait_ns,discards\n");
        for p in &self.ports {
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{}",
                p.switch, p.port, p.xmit_bytes, p.xmit_packets, p.xmit_wait, p.xmit_wait_ns, p.discards
            );
        }
        std::fs::write(dir.join("ports.csv"), csv)?;
        if !self.series_names.is_empty() {
            let mut csv = format!("time_ns,{}\n", self.series_names.join(","));
            for (time, row) in &self.series {
                let row: Vec<String> = row.iter().map(u32::to_string).collect();
                let _ = writeln!(csv, "{time},{}", row.join(","));
            }
            std::fs::write(dir.join("queues.csv"), csv)?;
        }
        Ok(())
    }

    /// What the plots draw of this run: the watched ports' queue depths,
    /// the share of the run each port waited for credit (the heat map IB's
    /// PortXmitWait makes), the FCT slowdowns and the JCTs.
    pub fn plot_data(&self) -> super::plot::PlotData {
        let run_ns = self.simulated_ns.max(1) as f64;
        let mut slowdowns: Vec<f64> = self
            .fcts_ns
            .iter()
            .zip(&self.ideal_fcts_ns)
            .zip(self.background_messages.iter().chain(std::iter::repeat(&false)))
            .filter(|&(_, &background)| !background)
            .filter_map(|((&(_, _, fct), &ideal), _)| Some(fct? as f64 / ideal.max(1) as f64))
            .collect();
        slowdowns.sort_by(f64::total_cmp);
        super::plot::PlotData {
            name: self.topology.clone(),
            series_names: self.series_names.clone(),
            series: self.series.clone(),
            switch_names: self.switch_names.clone(),
            paused_share: self
                .wait_ns
                .iter()
                .map(|ports| ports.iter().map(|&ns| ns as f64 / run_ns).collect())
                .collect(),
            pause_caption: Some("credit wait (xmit wait time)".into()),
            slowdowns,
            jcts: self.collectives.iter().filter_map(|c| c.jct_ns).map(|j| j as f64).collect(),
        }
    }
}

/// Whether PSN `a` comes before `b` (modulo 2^32, within half the space).
fn before(a: u32, b: u32) -> bool {
    b.wrapping_sub(a).wrapping_sub(1) < u32::MAX / 2
}

/// The fabric as the SM sees it: switches, then one CA per host; switch
/// port N is the fabric's port N-1.
fn sm_topology(fabric: &Fabric) -> Result<Topology, String> {
    let mut topology = Topology::new();
    for (s, spec) in fabric.switches.iter().enumerate() {
        let guid = 0x0002_c903_0000_0000 + s as u64 + 1;
        let mut node = Node::new(guid, NodeKind::Switch, spec.ports as u8, spec.name.clone());
        node.ports[0].guid = guid;
        topology.add_node(node).map_err(|e| format!("switch {}: {e:?}", spec.name))?;
    }
    for (h, host) in fabric.hosts.iter().enumerate() {
        let guid = 0x0002_c904_0000_0000 + h as u64 + 1;
        let mut node = Node::new(guid, NodeKind::Ca, 1, host.name.clone());
        node.ports[1].guid = guid;
        topology.add_node(node).map_err(|e| format!("host {}: {e:?}", host.name))?;
    }
    let switches = fabric.switches.len();
    let port_ref = |end: End| match end {
        End::Switch { switch, port } => PortRef { node: switch as usize, port: port as u8 + 1 },
        End::Host { host } => PortRef { node: switches + host as usize, port: 1 },
    };
    for &(a, b) in &fabric.links {
        topology.connect(port_ref(a), port_ref(b)).map_err(|e| format!("cable {a:?} - {b:?}: {e:?}"))?;
    }
    Ok(topology)
}

/// The fabric's LIDs as `subnet_manager::lid` assigns them, and the LFTs
/// of the first engine that takes it: what a converged SM leaves.
fn route(fabric: &Fabric, engines: &[Engine]) -> Result<Routing, String> {
    let mut topology = sm_topology(fabric)?;
    subnet_manager::lid::assign(&mut topology, 0, 0, &Default::default()).map_err(|e| e.to_string())?;
    let config = RoutingConfig { engines: engines.to_vec(), lmc: 0, roots: Vec::new(), max_vls: 8 };
    let lfts = routing::route(&topology, &config).map_err(|refused| {
        let why: Vec<String> = refused.iter().map(|(e, why)| format!("{}: {why}", e.name())).collect();
        format!("no routing engine took the fabric ({})", why.join("; "))
    })?;
    let switches = fabric.switches.len();
    Ok(Routing {
        lids: (0..switches)
            .map(|s| topology.nodes[s].ports[0].lid)
            .chain((0..fabric.hosts.len()).map(|h| topology.nodes[switches + h].ports[1].lid))
            .collect(),
        tables: (0..switches).map(|s| lfts.table(s).map(<[u8]>::to_vec).unwrap_or_default()).collect(),
        sl_of_lid: lfts.sl_of_lid.clone(),
        engine: lfts.engine.unwrap_or(Engine::Minhop),
        refused: lfts.refused.iter().map(|(e, why)| format!("{}: {why}", e.name())).collect(),
    })
}
