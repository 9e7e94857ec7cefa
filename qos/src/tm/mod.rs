//! The traffic manager: what happens to a frame between the pipeline's
//! decision and the wire, sans-IO and generic over the caller's frame
//! handle `H` (the node's pool reference; an integer in tests).
//!
//! [`TrafficManager::enqueue`] classifies the frame ([`crate::classify`]),
//! applies WRED to frames that are not ECN-capable on its egress queue's
//! depth ([`crate::ecn`]), checks the lossy queue limit and charges the
//! ingress (port, PG) in the shared buffer ([`crate::buffer`]), possibly
//! putting the PG in XOFF (a PFC frame becomes due, [`crate::pfc`]), and
//! appends the frame to the virtual output queue of (egress port, queue)
//! ([`crate::voq`]). It answers with the class, or a drop reason.
//!
//! [`TrafficManager::dequeue`] answers "the next frame port P sends at
//! `now`, or when it may send next": the port's line rate and shaper, the
//! queues the peer pauses (received PFC), the queue shapers and the
//! scheduler ([`crate::scheduler`]) decide. A frame leaving returns its
//! cells, which may end an XOFF (a PFC XON becomes due); an ECN-capable
//! one is marked CE on the depth of the queue it leaves behind.
//!
//! Congestion on one egress never delays another egress: each port has its
//! own queues and scheduler, and a lossy queue's limit (a dynamic threshold
//! by default) keeps it from taking the buffer the others need.
//!
//! Time is the `now` argument; nothing here reads a clock or allocates after
//! [`TrafficManager::new`] (the event list grows only to its capacity).

mod carry;
pub mod config;
mod queue;

pub use config::{ConfigError, EcnSetting, PortConfig, QueueProfile, TmConfig};

use crate::buffer::{BufferDrop, Charged, PgState, QueueState, SharedBuffer};
use crate::classify::{CLASSES, ClassKey, ClassTable, Classified, QosMaps};
use crate::dlb::{CostScale, LoadBoard, Utilisation};
use crate::ecn::{EcnVerdict, SplitMix64, decide};
use crate::pfc::{PfcCounters, PfcFrame, PfcReceiver, PfcSender, quanta_ns};
use crate::scheduler::PortScheduler;
use crate::shaper::{LineRate, TokenBucket};
use crate::voq::{Descriptor, Entry, VoqSet};
use crate::watchdog::{QueueView, QueueWatch, WatchdogAction, WatchdogConfig, WatchdogEvent, WatchdogEventKind};
use queue::QueueSlot;

/// A frame taken out of a traffic manager that is being replaced
/// ([`TrafficManager::take_all_held`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldFrame<H> {
    pub egress: u16,
    /// The port it came in on (`None`: the CPU's).
    pub ingress: Option<u16>,
    pub handle: H,
}

/// What the traffic manager needs to know of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    /// The port it came in on; `None` for frames the switch or its host sends.
    pub ingress: Option<u16>,
    pub egress: u16,
    /// Its traffic class, or the header fields to classify.
    pub class: ClassKey,
    /// Bytes (without FCS).
    pub len: u32,
    /// ECT(0), ECT(1) or CE.
    pub ecn_capable: bool,
    pub flow_hash: u32,
}

/// A frame taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    pub class: Classified,
}

/// Why a frame was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The egress (or ingress) port is not configured.
    UnknownPort,
    /// A lossy ingress PG over its share of the buffer.
    IngressLimit,
    /// A lossless PG's headroom overflowed: the peer ignored our PFC or the
    /// headroom is too small for the link. Never happens with a correct
    /// headroom and a peer that obeys PFC.
    HeadroomOverflow,
    /// A lossy queue over its limit (tail drop).
    EgressLimit,
    /// WRED dropped a frame that was not ECN-capable.
    Wred,
    /// The queue is in a PFC storm and the watchdog's action is drop.
    WatchdogStorm,
}

impl DropReason {
    pub const ALL: [DropReason; 6] = [
        DropReason::UnknownPort,
        DropReason::IngressLimit,
        DropReason::HeadroomOverflow,
        DropReason::EgressLimit,
        DropReason::Wred,
        DropReason::WatchdogStorm,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DropReason::UnknownPort => "unknown-port",
            DropReason::IngressLimit => "ingress-limit",
            DropReason::HeadroomOverflow => "headroom-overflow",
            DropReason::EgressLimit => "egress-limit",
            DropReason::Wred => "wred",
            DropReason::WatchdogStorm => "pfc-watchdog",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl From<BufferDrop> for DropReason {
    fn from(drop: BufferDrop) -> DropReason {
        match drop {
            BufferDrop::IngressLimit => DropReason::IngressLimit,
            BufferDrop::HeadroomOverflow => DropReason::HeadroomOverflow,
            BufferDrop::EgressLimit => DropReason::EgressLimit,
        }
    }
}

/// The answer to "what does port P send now".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dequeue<H> {
    /// Send this frame now; with `mark_ce` the caller sets CE in its IP
    /// header first (ECN marking on the depth of the queue it leaves).
    Send { handle: H, bytes: u32, queue: u8, mark_ce: bool },
    /// Discard this frame (the watchdog's drop action emptied its queue);
    /// the caller releases it and counts it dropped.
    Discard { handle: H },
    /// Frames wait, but none may go before this time.
    Wait(u64),
    /// Nothing waits on the port.
    Idle,
}

/// Per-queue counters (SONiC `show queue counters` / `wredcounters`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounters {
    pub tx_frames: u64,
    pub tx_bytes: u64,
    pub dropped_frames: u64,
    pub dropped_bytes: u64,
    pub ecn_marked: u64,
    pub wred_dropped: u64,
}

/// One port's transmit side.
#[derive(Debug, Clone)]
struct PortState {
    speed_bps: u64,
    line: LineRate,
    shaper: Option<TokenBucket>,
    scheduler: PortScheduler,
    pfc_tx: PfcSender,
    pfc_rx: PfcReceiver,
    pfc: PfcCounters,
    /// Half the pause time of our XOFF frames: when to refresh them.
    refresh_ns: u64,
    frames: u32,
    depth_bytes: u32,
    /// Bit q: queue q has frames (what the scheduler looks at first).
    backlogged_queues: u8,
    /// Bit q: queue q is in a PFC storm (what `enqueue` and `dequeue` look
    /// at, one byte rather than eight `QueueWatch`es).
    stormed: u8,
    cost_scale: CostScale,
    /// When the port may next send, after a `Wait` answer (0: now).
    wake: u64,
    utilisation: Utilisation,
}

/// The traffic manager. `H` is the caller's handle for a frame.
pub struct TrafficManager<H> {
    ports: Vec<PortState>,
    maps: QosMaps,
    /// `maps` composed: what `enqueue` classifies with.
    classes: ClassTable,
    /// Queue stopped by a pause of priority p.
    priority_queue: [u8; CLASSES],
    /// Class-enable vector a PG's XOFF names (only PFC-enabled priorities).
    pg_priorities: [u8; CLASSES],
    pfc_enabled: u8,
    /// Queues (bit q) watched for PFC storms: those PFC priorities stop.
    watched_queues: u8,
    pfc_quanta: u16,
    buffer: SharedBuffer,
    /// The descriptor slab of every VOQ.
    voqs: VoqSet<H>,
    /// Per (port, queue), `port * CLASSES + queue`: the hot state.
    queues: Vec<QueueSlot>,
    queue_shapers: Vec<Option<TokenBucket>>,
    /// Per (port, queue): the counters only drops and marks touch (the
    /// transmit counters are in `queues`).
    queue_counters: Vec<QueueCounters>,
    watch: Vec<QueueWatch>,
    watchdog: WatchdogConfig,
    next_watchdog: u64,
    events: Vec<WatchdogEvent>,
    events_lost: u64,
    drops: [u64; 6],
    rng: SplitMix64,
    board: LoadBoard,
    window_ns: u64,
    /// Bit per port: frames waiting.
    backlog: Vec<u64>,
    /// Bit per port: a PFC frame is due.
    pfc_due: Vec<u64>,
    /// Bit per port: we hold some priority paused (XOFF refreshes fall due).
    pfc_asserted: Vec<u64>,
    /// Queues in a PFC storm now (the watchdog must keep checking them).
    storming: u32,
}

/// Events kept until drained; more are counted as lost.
const EVENT_CAPACITY: usize = 1024;

impl<H: Copy> TrafficManager<H> {
    /// Builds the traffic manager for `config` (validated first);
    /// `filler` is a handle value for unused descriptor slots.
    pub fn new(config: &TmConfig, filler: H) -> Result<TrafficManager<H>, ConfigError> {
        config.validate()?;
        let ports = config.ports.len();
        let cell = config.pool.cell_bytes;
        // Ingress PGs of every port, plus the CPU's (frames the switch or
        // its host sends: lossy, nothing reserved).
        let mut pgs = Vec::with_capacity((ports + 1) * CLASSES);
        for port in &config.ports {
            for (pg, profile) in config.priority_groups.iter().enumerate() {
                pgs.push(PgState {
                    lossless: profile.lossless,
                    reserved_cells: profile.reserved_bytes.div_ceil(cell),
                    headroom_cells: u32::try_from(config.headroom_bytes(port, pg).div_ceil(u64::from(cell)))
                        .unwrap_or(u32::MAX),
                    dynamic_th: profile.dynamic_th,
                    xon_offset_cells: profile.xon_offset_bytes.div_ceil(cell),
                    ..PgState::default()
                });
            }
        }
        pgs.extend((0..CLASSES).map(|_| PgState::default()));
        let buffer = SharedBuffer::new(config.pool, pgs).ok_or_else(|| ConfigError {
            field: "pool.size-bytes".into(),
            reason: "too small for the reserves and headrooms".into(),
        })?;
        let pfc_enabled = config.pfc.enabled_mask();
        let disciplines = config.queues.map(|q| q.scheduler);
        let port_states = config
            .ports
            .iter()
            .map(|port| PortState {
                speed_bps: port.speed_bps,
                line: LineRate::new(port.speed_bps, config.catch_up_ns),
                shaper: port.shaper.map(|s| TokenBucket::new(s, 0)),
                scheduler: PortScheduler::new(disciplines, config.quantum_unit),
                pfc_tx: PfcSender::default(),
                pfc_rx: PfcReceiver::default(),
                pfc: PfcCounters::default(),
                refresh_ns: quanta_ns(config.pfc.quanta, port.speed_bps) / 2,
                frames: 0,
                depth_bytes: 0,
                backlogged_queues: 0,
                stormed: 0,
                cost_scale: CostScale::new(port.speed_bps, u64::from(config.dlb.window_us) * 1000),
                wake: 0,
                utilisation: Utilisation::default(),
            })
            .collect();
        let mut queue_shapers = Vec::with_capacity(ports * CLASSES);
        let mut queues = Vec::with_capacity(ports * CLASSES);
        for port in &config.ports {
            for queue in 0..CLASSES {
                queue_shapers.push(config.queues[queue].shaper.map(|s| TokenBucket::new(s, 0)));
                queues.push(QueueSlot {
                    occupancy: QueueState { limit: config.queues[queue].limit, ..QueueState::default() },
                    wred: config.wred(port, queue),
                    ..QueueSlot::default()
                });
            }
        }
        let maps = config.maps.clone();
        let pg_priorities = core::array::from_fn(|pg| maps.priorities_of_pg(pg as u8) & pfc_enabled);
        let priority_queue = maps.pfc_priority_to_queue;
        let watched_queues = maps.queues_of_priorities(pfc_enabled);
        let words = ports.div_ceil(64);
        Ok(TrafficManager {
            ports: port_states,
            priority_queue,
            pg_priorities,
            pfc_enabled,
            watched_queues,
            pfc_quanta: config.pfc.quanta,
            voqs: VoqSet::new(buffer.total_cells(), filler),
            buffer,
            queues,
            queue_shapers,
            queue_counters: vec![QueueCounters::default(); ports * CLASSES],
            watch: vec![QueueWatch::default(); ports * CLASSES],
            watchdog: config.watchdog,
            next_watchdog: 0,
            events: Vec::with_capacity(EVENT_CAPACITY),
            events_lost: 0,
            drops: [0; 6],
            rng: SplitMix64::new(config.seed),
            board: LoadBoard::new(ports),
            window_ns: u64::from(config.dlb.window_us) * 1000,
            backlog: vec![0; words],
            pfc_due: vec![0; words],
            pfc_asserted: vec![0; words],
            storming: 0,
            classes: ClassTable::new(&maps),
            maps,
        })
    }

    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    pub fn maps(&self) -> &QosMaps {
        &self.maps
    }

    /// The per-port costs DLB reads.
    pub fn load_board(&self) -> LoadBoard {
        self.board.clone()
    }

    /// Classification alone (the pipeline may want the TC early).
    #[inline]
    pub fn classify(&self, key: ClassKey) -> Classified {
        self.maps.classify(key)
    }

    /// Takes a frame in, or refuses it (the caller then drops it).
    #[inline]
    pub fn enqueue(&mut self, now: u64, handle: H, frame: &FrameInfo) -> Result<Admitted, DropReason> {
        let ports = self.ports.len();
        let egress = usize::from(frame.egress);
        let ingress = match frame.ingress {
            Some(port) if usize::from(port) < ports => usize::from(port),
            Some(_) => return Err(self.count_drop(None, 0, DropReason::UnknownPort)),
            None => ports,
        };
        if egress >= ports {
            return Err(self.count_drop(None, 0, DropReason::UnknownPort));
        }
        let class = self.classes.classify(frame.class);
        let queue = egress * CLASSES + usize::from(class.queue);
        let pg = ingress * CLASSES + usize::from(class.pg);
        if self.ports[egress].stormed & (1 << class.queue) != 0 && self.watchdog.action == WatchdogAction::Drop {
            self.watch[queue].dropped_frames += 1;
            return Err(self.count_drop(Some(queue), frame.len, DropReason::WatchdogStorm));
        }
        let frame_cells = self.buffer.cells_of(frame.len);
        let charged = match self.admit(queue, pg, frame, frame_cells) {
            Ok(charged) => charged,
            Err(drop) => return Err(self.count_drop(Some(queue), frame.len, drop)),
        };
        if charged.xoff && ingress < ports {
            self.xoff(ingress, class.pg);
        }
        let entry = Entry {
            handle,
            bytes: frame.len,
            cells: frame_cells,
            ingress_pg: pg as u32,
            ecn_capable: frame.ecn_capable,
        };
        let slot = &mut self.queues[queue];
        if self.voqs.push(&mut slot.fifo, entry).is_err() {
            // Unreachable while every frame takes a cell: the slab has one
            // descriptor per cell. Undo and refuse rather than panic.
            self.release_ingress(pg, frame_cells);
            return Err(self.count_drop(Some(queue), frame.len, DropReason::IngressLimit));
        }
        if slot.fifo.frames() == 1 {
            slot.last_progress = now;
        }
        slot.occupancy.charge(frame_cells, frame.len);
        let port = &mut self.ports[egress];
        port.frames += 1;
        port.depth_bytes += frame.len;
        port.backlogged_queues |= 1 << class.queue;
        port.wake = 0;
        set_bit(&mut self.backlog, egress);
        publish_cost(&self.board, egress, port);
        Ok(Admitted { class })
    }

    /// The buffer's admission of a frame for `queue` from ingress `pg`:
    /// WRED for frames that are not ECN-capable, a lossy queue's limit, the
    /// ingress charge. Nothing changes when it refuses.
    #[inline(always)]
    fn admit(&mut self, queue: usize, pg: usize, frame: &FrameInfo, frame_cells: u32) -> Result<Charged, DropReason> {
        let slot = &self.queues[queue];
        let lossless = self.buffer.pg(pg).lossless;
        // An ECN-capable frame on a marking queue is judged when it leaves
        // (`dequeue`); WRED's drop of the others can only happen here.
        if let Some(profile) = &slot.wred
            && !(profile.ecn && frame.ecn_capable)
        {
            match decide(profile, slot.occupancy.bytes, frame.ecn_capable, &mut self.rng) {
                EcnVerdict::Pass | EcnVerdict::MarkCe => {}
                // A lossless frame is never dropped for WRED: PFC bounds its queue.
                EcnVerdict::Drop if lossless => {}
                EcnVerdict::Drop => {
                    self.queue_counters[queue].wred_dropped += 1;
                    return Err(DropReason::Wred);
                }
            }
        }
        if !lossless && !self.buffer.egress_fits(&slot.occupancy, frame_cells) {
            return Err(DropReason::EgressLimit);
        }
        self.buffer.charge_ingress(pg, frame_cells).map_err(DropReason::from)
    }

    /// PG `pg` of port `ingress` went into XOFF: its priorities' PFC
    /// becomes due (rare: out of the per-frame path).
    #[cold]
    #[inline(never)]
    fn xoff(&mut self, ingress: usize, pg: u8) {
        let priorities = self.pg_priorities[usize::from(pg)];
        if priorities != 0 {
            self.ports[ingress].pfc_tx.xoff(priorities);
            set_bit(&mut self.pfc_due, ingress);
            set_bit(&mut self.pfc_asserted, ingress);
        }
    }

    /// The next frame `port` sends at `now`, or when it may send next.
    #[inline]
    pub fn dequeue(&mut self, now: u64, port: u16) -> Dequeue<H> {
        let mut sent = Dequeue::Idle;
        match self.dequeue_burst(now, port, 1, |frame| sent = frame) {
            Some(stopped) => stopped,
            None => sent,
        }
    }

    /// The frames `port` sends at `now`, up to `max`, each handed to `each`
    /// (a [`Dequeue::Send`] or [`Dequeue::Discard`]) in the order
    /// [`dequeue`](Self::dequeue) would give them; then why it stopped
    /// ([`Dequeue::Wait`] or [`Dequeue::Idle`]), or `None` at `max`. What
    /// holds for the whole burst (the port's pauses at `now`, its storm
    /// state) is read once, and the port's DLB cost published once at the
    /// end: a transmit pass drains a port's read of frames in one call.
    #[inline]
    pub fn dequeue_burst(
        &mut self,
        now: u64,
        port: u16,
        max: usize,
        mut each: impl FnMut(Dequeue<H>),
    ) -> Option<Dequeue<H>> {
        let p = usize::from(port);
        let Some(state) = self.ports.get(p) else { return Some(Dequeue::Idle) };
        if state.frames == 0 {
            return Some(Dequeue::Idle);
        }
        let storm_drops = state.stormed != 0 && self.watchdog.action == WatchdogAction::Drop;
        let mut paused_queues = None;
        let mut stopped = None;
        for _ in 0..max {
            if self.ports[p].frames == 0 {
                stopped = Some(Dequeue::Idle);
                break;
            }
            if storm_drops && let Some(handle) = self.discard_stormed(now, p) {
                each(Dequeue::Discard { handle });
                continue;
            }
            let paused = *paused_queues.get_or_insert_with(|| self.paused_queues(now, p));
            match self.send_next(now, p, paused) {
                Ok(sent) => each(sent),
                Err(wake) => {
                    stopped = Some(Dequeue::Wait(wake));
                    break;
                }
            }
        }
        publish_cost(&self.board, p, &self.ports[p]);
        stopped
    }

    /// The head of a stormed queue of port `p`, discarded by the watchdog.
    #[cold]
    fn discard_stormed(&mut self, now: u64, p: usize) -> Option<H> {
        let base = p * CLASSES;
        let stormed = self.ports[p].stormed;
        let q = (0..CLASSES).find(|&q| stormed & (1 << q) != 0 && !self.queues[base + q].fifo.is_empty())?;
        let descriptor = self.take(now, p, q);
        self.watch[base + q].dropped_frames += 1;
        self.count_drop(Some(base + q), descriptor.bytes, DropReason::WatchdogStorm);
        Some(descriptor.handle)
    }

    /// Sends the frame the scheduler picks on backlogged port `p`, or the
    /// time it may send next.
    #[inline(always)]
    fn send_next(&mut self, now: u64, p: usize, paused_queues: u8) -> Result<Dequeue<H>, u64> {
        let base = p * CLASSES;
        let state = &mut self.ports[p];
        if !state.line.idle(now) {
            state.wake = state.line.free_at(now);
            return Err(state.wake);
        }
        // The port's queues and shapers as arrays: indexed by queue below
        // without a bounds check against the whole table.
        let slots: &mut [QueueSlot; CLASSES] =
            (&mut self.queues[base..base + CLASSES]).try_into().expect("CLASSES queues per port");
        let shapers: &mut [Option<TokenBucket>; CLASSES] =
            (&mut self.queue_shapers[base..base + CLASSES]).try_into().expect("CLASSES queues per port");
        let voqs = &self.voqs;
        let port_shaper = &mut state.shaper;
        let backlogged_queues = state.backlogged_queues;
        let chosen = state.scheduler.select_among(backlogged_queues, |q| {
            if paused_queues & (1 << q) != 0 {
                return None;
            }
            let bytes = voqs.head(&slots[q].fifo)?.bytes;
            if let Some(shaper) = shapers[q].as_mut()
                && !shaper.conforms(now, bytes)
            {
                return None;
            }
            if let Some(shaper) = port_shaper.as_mut()
                && !shaper.conforms(now, bytes)
            {
                return None;
            }
            Some(bytes)
        });
        let Some(q) = chosen else {
            let wake = self.wake_time(now, p, paused_queues);
            self.ports[p].wake = wake;
            return Err(wake);
        };
        // `take`, with the slot and the port already in hand.
        let slot = &mut slots[q];
        let descriptor = self.voqs.pop(&mut slot.fifo).expect("the scheduler chose a backlogged queue");
        let bytes = descriptor.bytes;
        slot.occupancy.release(descriptor.cells, bytes);
        let drained_pg = self.buffer.release_ingress(descriptor.ingress_pg as usize, descriptor.cells);
        slot.last_progress = now;
        state.frames -= 1;
        state.depth_bytes -= bytes;
        if slot.fifo.is_empty() {
            state.scheduler.emptied(q);
            state.backlogged_queues &= !(1 << q);
        }
        if state.frames == 0 {
            clear_bit(&mut self.backlog, p);
        }
        state.line.send(now, bytes);
        if let Some(shaper) = state.shaper.as_mut() {
            shaper.take(now, bytes);
        }
        if let Some(shaper) = shapers[q].as_mut() {
            shaper.take(now, bytes);
        }
        state.utilisation.sent(now, bytes, state.speed_bps, self.window_ns);
        // ECN on an ECN-capable frame, on the depth of the queue it leaves
        // behind: as ASICs that mark at dequeue do, the receiver then learns
        // of the queue as it is now, not as it was when the frame arrived (a
        // mark decided at enqueue waits behind the whole queue it reports,
        // and the senders keep cutting after the queue has gone).
        let mark_ce = descriptor.ecn_capable
            && slot.wred.is_some_and(|profile| {
                decide(&profile, slot.occupancy.bytes, true, &mut self.rng) == EcnVerdict::MarkCe
            });
        slot.tx_frames += 1;
        slot.tx_bytes += u64::from(bytes);
        if mark_ce {
            self.queue_counters[base + q].ecn_marked += 1;
        }
        if drained_pg {
            // The PG left XOFF: its XON becomes due (after the frame's own
            // accounting, which it does not touch).
            self.xon(descriptor.ingress_pg as usize);
        }
        Ok(Dequeue::Send { handle: descriptor.handle, bytes, queue: q as u8, mark_ce })
    }

    /// Pops queue `q` of port `p` and returns its cells (the watchdog's
    /// discards and `take_all`; `send_next` does the same inline).
    fn take(&mut self, now: u64, p: usize, q: usize) -> Descriptor<H> {
        let queue = p * CLASSES + q;
        let slot = &mut self.queues[queue];
        let descriptor = self.voqs.pop(&mut slot.fifo).expect("the caller chose a backlogged queue");
        slot.occupancy.release(descriptor.cells, descriptor.bytes);
        slot.last_progress = now;
        let emptied = slot.fifo.is_empty();
        self.release_ingress(descriptor.ingress_pg as usize, descriptor.cells);
        let state = &mut self.ports[p];
        state.frames -= 1;
        state.depth_bytes -= descriptor.bytes;
        if emptied {
            state.scheduler.emptied(q);
            state.backlogged_queues &= !(1 << q);
        }
        if state.frames == 0 {
            clear_bit(&mut self.backlog, p);
        }
        descriptor
    }

    /// Returns cells to an ingress PG; its XON becomes due if it drained.
    #[inline(always)]
    fn release_ingress(&mut self, pg: usize, cells: u32) {
        if self.buffer.release_ingress(pg, cells) {
            self.xon(pg);
        }
    }

    /// PG `pg` left XOFF: its priorities' XON becomes due (rare: out of
    /// the per-frame path).
    #[cold]
    #[inline(never)]
    fn xon(&mut self, pg: usize) {
        let (port, group) = (pg / CLASSES, pg % CLASSES);
        if port < self.ports.len() && self.pg_priorities[group] != 0 {
            self.ports[port].pfc_tx.xon(self.pg_priorities[group]);
            if self.ports[port].pfc_tx.has_pending() {
                set_bit(&mut self.pfc_due, port);
            }
            if self.ports[port].pfc_tx.asserted() == 0 {
                clear_bit(&mut self.pfc_asserted, port);
            }
        }
    }

    /// Queues of port `p` the peer pauses now (bit per queue), less those
    /// the watchdog lets through.
    #[inline]
    fn paused_queues(&self, now: u64, p: usize) -> u8 {
        let paused = self.ports[p].pfc_rx.paused(now) & self.pfc_enabled;
        if paused == 0 {
            return 0;
        }
        let mut queues = 0u8;
        for priority in 0..CLASSES {
            if paused & (1 << priority) != 0 {
                queues |= 1 << self.priority_queue[priority];
            }
        }
        if self.watchdog.action != WatchdogAction::Alert {
            queues &= !self.ports[p].stormed;
        }
        queues
    }

    /// The earliest time a backlogged queue of port `p` could send.
    fn wake_time(&mut self, now: u64, p: usize, paused_queues: u8) -> u64 {
        let base = p * CLASSES;
        let mut wake = u64::MAX;
        for q in 0..CLASSES {
            let Some(head) = self.voqs.head(&self.queues[base + q].fifo) else { continue };
            let bytes = head.bytes;
            let mut at = now;
            if paused_queues & (1 << q) != 0 {
                let state = &self.ports[p];
                at = (0..CLASSES)
                    .filter(|&priority| usize::from(self.priority_queue[priority]) == q)
                    .map(|priority| state.pfc_rx.until(priority))
                    .filter(|&until| until > now)
                    .max()
                    .unwrap_or(now);
            }
            if let Some(shaper) = self.queue_shapers[base + q].as_mut() {
                at = at.max(shaper.ready_at(now, bytes));
            }
            if let Some(shaper) = self.ports[p].shaper.as_mut() {
                at = at.max(shaper.ready_at(now, bytes));
            }
            wake = wake.min(at);
        }
        // Nothing could go now, yet something said "now" (a DWRR quantum
        // smaller than the frame): try again a little later.
        if wake <= now { now + 1 } else { wake }
    }

    fn count_drop(&mut self, queue: Option<usize>, bytes: u32, reason: DropReason) -> DropReason {
        self.drops[reason.index()] += 1;
        if let Some(queue) = queue {
            let counters = &mut self.queue_counters[queue];
            counters.dropped_frames += 1;
            counters.dropped_bytes += u64::from(bytes);
        }
        reason
    }

    /// A PFC frame received on `port` at `now`.
    pub fn receive_pfc(&mut self, now: u64, port: u16, frame: &PfcFrame) {
        if let Some(state) = self.ports.get_mut(usize::from(port)) {
            state.pfc_rx.receive(now, frame, state.speed_bps, &mut state.pfc);
            state.wake = 0;
        }
    }

    /// The next PFC frame to send, and its port: sent ahead of any queue.
    /// Asked after every frame taken in, and almost always nothing is due:
    /// that answer stays inline.
    #[inline]
    pub fn take_pfc(&mut self, now: u64) -> Option<(u16, PfcFrame)> {
        if self.pfc_due.iter().all(|&word| word == 0) {
            return None;
        }
        self.take_due_pfc(now)
    }

    #[inline(never)]
    fn take_due_pfc(&mut self, now: u64) -> Option<(u16, PfcFrame)> {
        for word in 0..self.pfc_due.len() {
            while self.pfc_due[word] != 0 {
                let port = word * 64 + self.pfc_due[word].trailing_zeros() as usize;
                clear_bit(&mut self.pfc_due, port);
                let state = &mut self.ports[port];
                if let Some(frame) = state.pfc_tx.take(now, self.pfc_quanta, &mut state.pfc) {
                    return Some((port as u16, frame));
                }
            }
        }
        None
    }

    /// Timers: PFC refreshes, the watchdog, utilisation windows.
    pub fn poll(&mut self, now: u64) {
        for (p, state) in self.ports.iter_mut().enumerate() {
            if state.pfc_tx.asserted() != 0 {
                state.pfc_tx.refresh(now, state.refresh_ns);
                if state.pfc_tx.has_pending() {
                    set_bit(&mut self.pfc_due, p);
                }
            }
            state.utilisation.roll(now, state.speed_bps, self.window_ns);
        }
        for p in 0..self.ports.len() {
            publish_cost(&self.board, p, &self.ports[p]);
        }
        if self.watchdog.enabled && self.watched_queues != 0 && now >= self.next_watchdog {
            // The checks keep to a grid from the first: one that runs late
            // does not push the next ones back.
            let interval = u64::from(self.watchdog.poll_interval_ms) * 1_000_000;
            self.next_watchdog = match self.next_watchdog {
                0 => now + interval,
                due => now + interval - (now - due) % interval,
            };
            self.check_watchdog(now);
        }
    }

    fn check_watchdog(&mut self, now: u64) {
        for p in 0..self.ports.len() {
            let rx = self.ports[p].pfc_rx;
            let paused = rx.paused(now) & self.pfc_enabled;
            for q in 0..CLASSES {
                if self.watched_queues & (1 << q) == 0 {
                    continue;
                }
                let priorities = (0..CLASSES)
                    .filter(|&pr| usize::from(self.priority_queue[pr]) == q && self.pfc_enabled & (1 << pr) != 0);
                let (mut pause_since, mut last_pause_at, mut queue_paused) = (0, 0, false);
                for priority in priorities {
                    if paused & (1 << priority) != 0 {
                        queue_paused = true;
                        pause_since = pause_since.max(rx.since(priority));
                    }
                    last_pause_at = last_pause_at.max(rx.last_pause_at(priority));
                }
                let index = p * CLASSES + q;
                let view = QueueView {
                    paused: queue_paused,
                    backlogged: !self.queues[index].fifo.is_empty(),
                    last_progress: self.queues[index].last_progress,
                    pause_since,
                    last_pause_at,
                };
                if let Some(kind) = self.watch[index].check(now, view, &self.watchdog) {
                    match kind {
                        WatchdogEventKind::StormDetected => self.ports[p].stormed |= 1 << q,
                        WatchdogEventKind::StormRestored => self.ports[p].stormed &= !(1 << q),
                    }
                    if self.events.len() < EVENT_CAPACITY {
                        self.events.push(WatchdogEvent { at: now, port: p as u16, queue: q as u8, kind });
                    } else {
                        self.events_lost += 1;
                    }
                    match kind {
                        WatchdogEventKind::StormDetected => {
                            self.storming += 1;
                            self.ports[p].wake = 0;
                        }
                        WatchdogEventKind::StormRestored => self.storming -= 1,
                    }
                }
            }
        }
    }

    /// Watchdog events since the last drain, oldest first.
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, WatchdogEvent> {
        self.events.drain(..)
    }

    /// When the caller should next call [`poll`](Self::poll) and
    /// [`dequeue`](Self::dequeue): a port's frames may go, a PFC refresh or
    /// a watchdog check falls due. `None` when nothing waits.
    pub fn next_wakeup(&self, now: u64) -> Option<u64> {
        fn at(wake: &mut Option<u64>, t: u64) {
            *wake = Some(wake.map_or(t, |w| w.min(t)));
        }
        let mut wake: Option<u64> = None;
        if self.pfc_due.iter().any(|&w| w != 0) {
            at(&mut wake, now);
        }
        // Only ports with frames waiting or a pause of ours to refresh:
        // the others need no wake-up (a switch's scan of all its ports at
        // every event was a fifth of the simulator's time).
        for (word, (&backlog, &asserted)) in self.backlog.iter().zip(&self.pfc_asserted).enumerate() {
            let mut bits = backlog | asserted;
            while bits != 0 {
                let bit = bits.trailing_zeros();
                let state = &self.ports[word * 64 + bit as usize];
                if backlog & (1 << bit) != 0 {
                    at(&mut wake, state.wake.max(now));
                }
                if asserted & (1 << bit) != 0
                    && let Some(refresh) = state.pfc_tx.next_refresh(state.refresh_ns)
                {
                    at(&mut wake, refresh.max(now));
                }
                bits &= bits - 1;
            }
        }
        if self.watchdog.enabled && self.watched_queues != 0 && (wake.is_some() || self.storming > 0) {
            at(&mut wake, self.next_watchdog.max(now));
        }
        wake
    }

    /// Takes every frame out of every queue, whatever may send now (the
    /// traffic manager is being replaced): each with its port, the buffer
    /// given back as if it had left.
    pub fn take_all(&mut self, now: u64) -> Vec<(u16, H)> {
        self.take_all_held(now).into_iter().map(|held| (held.egress, held.handle)).collect()
    }

    /// [`TrafficManager::take_all`] with what a successor needs to queue
    /// each frame again: its ports, port by port and queue by queue in
    /// arrival order.
    pub fn take_all_held(&mut self, now: u64) -> Vec<HeldFrame<H>> {
        let mut taken = Vec::new();
        let ports = self.ports.len();
        for p in 0..ports {
            for q in 0..CLASSES {
                while !self.queues[p * CLASSES + q].fifo.is_empty() {
                    let descriptor = self.take(now, p, q);
                    // The ingress PG index is `port * CLASSES + pg`; the
                    // CPU's PGs follow the ports' (`enqueue`).
                    let ingress = descriptor.ingress_pg as usize / CLASSES;
                    taken.push(HeldFrame {
                        egress: p as u16,
                        ingress: (ingress < ports).then_some(ingress as u16),
                        handle: descriptor.handle,
                    });
                }
            }
        }
        taken
    }

    /// Calls `f` with every port that has frames waiting.
    pub fn for_each_backlogged(&self, mut f: impl FnMut(u16)) {
        for (word, &bits) in self.backlog.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let bit = bits.trailing_zeros() as usize;
                f((word * 64 + bit) as u16);
                bits &= bits - 1;
            }
        }
    }

    // Read side: counters, occupancy, watermarks.

    pub fn buffer(&self) -> &SharedBuffer {
        &self.buffer
    }

    /// Queue `queue` of `port`: counters, frames and bytes waiting, watermark.
    pub fn queue_counters(&self, port: u16, queue: u8) -> QueueCounters {
        let index = usize::from(port) * CLASSES + usize::from(queue);
        let slot = &self.queues[index];
        QueueCounters { tx_frames: slot.tx_frames, tx_bytes: slot.tx_bytes, ..self.queue_counters[index] }
    }

    pub fn queue_depth(&self, port: u16, queue: u8) -> (u32, u32) {
        let index = usize::from(port) * CLASSES + usize::from(queue);
        let slot = &self.queues[index];
        (slot.fifo.frames(), slot.occupancy.bytes)
    }

    pub fn queue_watermark_bytes(&self, port: u16, queue: u8) -> u32 {
        self.queues[usize::from(port) * CLASSES + usize::from(queue)].occupancy.watermark_bytes
    }

    /// Ingress PG `pg` of `port` (`None`: the CPU).
    pub fn priority_group(&self, port: Option<u16>, pg: u8) -> &PgState {
        let port = port.map_or(self.ports.len(), usize::from);
        self.buffer.pg(port * CLASSES + usize::from(pg))
    }

    pub fn pfc_counters(&self, port: u16) -> PfcCounters {
        self.ports[usize::from(port)].pfc
    }

    /// Time priority `priority` of `port` was paused by the peer, by `now`.
    pub fn pfc_paused_ns(&self, now: u64, port: u16, priority: u8) -> u64 {
        let state = &self.ports[usize::from(port)];
        state.pfc_rx.paused_ns(now, usize::from(priority), &state.pfc)
    }

    /// Priorities we hold paused on `port` (XOFF sent).
    pub fn pfc_asserted(&self, port: u16) -> u8 {
        self.ports[usize::from(port)].pfc_tx.asserted()
    }

    pub fn watchdog(&self, port: u16, queue: u8) -> &QueueWatch {
        &self.watch[usize::from(port) * CLASSES + usize::from(queue)]
    }

    pub fn watchdog_config(&self) -> &WatchdogConfig {
        &self.watchdog
    }

    pub fn watchdog_events_lost(&self) -> u64 {
        self.events_lost
    }

    pub fn drops(&self, reason: DropReason) -> u64 {
        self.drops[reason.index()]
    }

    pub fn port_speed(&self, port: u16) -> u64 {
        self.ports[usize::from(port)].speed_bps
    }

    /// Frames and bytes waiting on `port`.
    pub fn port_depth(&self, port: u16) -> (u32, u32) {
        let state = &self.ports[usize::from(port)];
        (state.frames, state.depth_bytes)
    }

    /// Zeroes the queue and PG watermarks.
    pub fn clear_watermarks(&mut self) {
        self.buffer.clear_watermarks();
        for slot in &mut self.queues {
            slot.occupancy.clear_watermark();
        }
    }
}

/// Port `p`'s path cost on the DLB board, from its depth and utilisation.
#[inline]
fn publish_cost(board: &LoadBoard, p: usize, state: &PortState) {
    board.set(p as u16, state.cost_scale.cost(state.depth_bytes, &state.utilisation));
}

#[inline]
fn set_bit(words: &mut [u64], bit: usize) {
    words[bit / 64] |= 1 << (bit % 64);
}

#[inline]
fn clear_bit(words: &mut [u64], bit: usize) {
    words[bit / 64] &= !(1 << (bit % 64));
}

#[cfg(test)]
mod tests;
