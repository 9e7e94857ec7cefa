//! The node: one sans-IO packet loop around the pipeline, shared by
//! `switchd`'s forwarding thread, the demo's in-memory fabric and the
//! simulator.
//!
//! A [`Node`] is driven by `(now, event)`: a frame received on a port, a
//! frame the host sends, a timer, a link going up or down. It runs the
//! pipeline ([`Forwarding`]), takes link-level frames off to their owner,
//! puts the frames for ports into the traffic manager ([`TrafficManager`]),
//! hands punts to the host at once, and transmits from the traffic manager
//! to [`Ports`] — where a frame is counted as sent only once the port took
//! it. Time is an input; the node reads no clock and does no I/O.

mod any_tm;
mod fifo;
mod qos_stats;
mod qos_tm;

pub use any_tm::AnyTrafficManager;
pub use fifo::{OutputQueues, OutputQueuesConfig};
pub use qos_stats::{PfcStats, PortQosStats, PriorityGroupStats, QosStats, QueueStats};
pub use qos_tm::{AdapterCounters, DlbPathQuality, QosTrafficManager};

use crate::pipeline::{
    Cast, Disposition, Egress, FrameMeta, FramePool, FrameRef, LinkLevelFrame, Output, PortId, RifId, RifKind, Switch,
    Tables, TxFrame,
};

/// What the node drives: the pipeline itself, or a wrapper around it (the
/// shim's soft backend, whose host interfaces are shim objects).
pub trait Forwarding {
    /// How host interfaces (the kernel's side of ports and router
    /// interfaces) are named.
    type HostIf: Copy + Eq + core::fmt::Debug;
    /// A frame received on front-panel port `port`.
    fn process(&mut self, now: u64, port: PortId, frame: &[u8], out: &mut Output) -> Disposition;
    /// A frame the host sent through `host_if` (SAI hostif transmit).
    fn host_send(&mut self, now: u64, host_if: Self::HostIf, frame: &[u8], out: &mut Output);
    /// The host interface a punted frame goes to.
    fn punt_target(&self, egress: &Egress) -> Option<Self::HostIf>;
    /// Timers: aging, neighbour state, probes.
    fn poll(&mut self, now: u64, out: &mut Output);
    /// The link under `port` went up or down.
    fn set_link_status(&mut self, port: PortId, up: bool);
    /// A frame left `port`: count it as sent (its length and cast, as the
    /// node recorded them when it queued the frame).
    fn count_transmitted(&mut self, port: PortId, frame: TxFrame);
    /// A frame for `port` never left it (queue drop, port refused it).
    fn count_egress_drop(&mut self, port: PortId);
}

/// What a host interface is bound to, for a bare pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostIfTarget {
    /// A front-panel port: its punts, and the host's frames leave through it.
    Port(PortId),
    /// A router interface on a VLAN: the host's frames are bridged in it.
    VlanRif(RifId),
}

/// A bare pipeline: a punt through a VLAN router interface goes to that
/// interface's host interface, any other to its port's.
impl Forwarding for Switch {
    type HostIf = HostIfTarget;
    fn process(&mut self, now: u64, port: PortId, frame: &[u8], out: &mut Output) -> Disposition {
        Switch::process(self, now, port, frame, out)
    }
    fn host_send(&mut self, now: u64, host_if: HostIfTarget, frame: &[u8], out: &mut Output) {
        match host_if {
            HostIfTarget::Port(port) => self.send_from_host(now, port, frame, out),
            HostIfTarget::VlanRif(rif) => self.send_from_host_on_rif(now, rif, frame, out),
        }
    }
    fn punt_target(&self, egress: &Egress) -> Option<HostIfTarget> {
        match *egress {
            Egress::Host { rif: Some(rif), .. }
                if self.router_interface(rif).is_some_and(|r| matches!(r.kind, RifKind::Vlan(_))) =>
            {
                Some(HostIfTarget::VlanRif(rif))
            }
            Egress::Host { port, .. } => Some(HostIfTarget::Port(port)),
            Egress::Port(_) => None,
        }
    }
    fn poll(&mut self, now: u64, out: &mut Output) {
        Switch::poll(self, now, out);
    }
    fn set_link_status(&mut self, port: PortId, up: bool) {
        self.set_port_oper_status(port, up);
    }
    fn count_transmitted(&mut self, port: PortId, frame: TxFrame) {
        Tables::count_sent(self, port, frame);
    }
    fn count_egress_drop(&mut self, port: PortId) {
        Tables::count_egress_drop(self, port);
    }
}

/// Where a port's frames are written: AF_PACKET rings and TAPs in the
/// daemon, links of an in-memory fabric in the demo and the simulator.
pub trait Ports<H> {
    /// Writes `frame` out of `port`; `false` if the port could not take it.
    fn transmit(&mut self, port: PortId, frame: &[u8]) -> bool;
    /// Writes the node's pooled frame `frame` out of `port`. Ports that
    /// keep frames in memory (the simulator's cables) may hold a reference
    /// ([`FramePool::retain`]) instead of copying the bytes, and give it
    /// back later with [`Node::release_frame`]; by default the bytes are
    /// written with [`Ports::transmit`].
    fn transmit_pooled(&mut self, port: PortId, pool: &mut FramePool, frame: FrameRef) -> bool {
        self.transmit(port, pool.bytes(frame))
    }
    /// Gives a punted frame to the host interface `host_if`, or to nobody
    /// (`None`: no host interface serves it).
    fn punt(&mut self, host_if: Option<H>, egress: Egress, frame: &[u8]);
    /// A link-level frame received on `port` that no owner in the node
    /// consumed (the IB-like plane runs outside the node for now).
    fn link_level(&mut self, _port: PortId, _kind: LinkLevelFrame, _frame: &[u8]) {}
}

/// Why the traffic manager refused a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TmDrop {
    /// The egress queue (or the shared buffer) is full.
    QueueFull,
    /// The ingress priority group has no buffer left (lossy share used up,
    /// or a lossless headroom overflowed).
    NoBuffer,
    /// WRED chose the frame and it is not ECN-capable.
    Wred,
    /// The queue is in a PFC storm and the watchdog drops its frames.
    PfcWatchdog,
    /// The egress port is not known to the traffic manager.
    UnknownPort,
}

/// A frame the traffic manager lets go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dequeued {
    pub frame: FrameRef,
    /// Congestion: the node sets CE in the frame's IP header before it
    /// leaves (the frame is ECN-capable).
    pub mark_ce: bool,
    /// The port has more frames waiting: `false` spares the node a call
    /// that could only answer "nothing".
    pub more: bool,
}

impl Dequeued {
    /// A frame sent as it is.
    pub fn unmarked(frame: FrameRef, more: bool) -> Dequeued {
        Dequeued { frame, mark_ce: false, more }
    }
}

/// The traffic manager's place in the node: it holds the frames for ports
/// (by their pool buffer, never copied) and decides what each port sends
/// next and when. The `qos` crate's traffic manager plugs in here; the
/// default, [`OutputQueues`], is a bounded FIFO per port that sends at once.
pub trait TrafficManager {
    /// Accepts a frame for `port` (the node already holds a reference for
    /// it), or refuses it: the node then releases and counts it as dropped.
    fn enqueue(&mut self, now: u64, port: PortId, frame: FrameRef, meta: &FrameMeta) -> Result<(), TmDrop>;
    /// The next frame `port` may send at `now`, if any.
    fn dequeue(&mut self, now: u64, port: PortId) -> Option<Dequeued>;
    /// Every frame `port` may send at `now`, appended to `out` in the order
    /// [`dequeue`](Self::dequeue) gives them: one call per port in a
    /// transmit pass, so what holds for the whole burst is worked out once.
    fn dequeue_burst(&mut self, now: u64, port: PortId, out: &mut Vec<Dequeued>) {
        while let Some(dequeued) = self.dequeue(now, port) {
            out.push(dequeued);
            if !dequeued.more {
                break;
            }
        }
    }
    /// Ports that have frames waiting (whether or not they may send now).
    fn backlogged(&self, ports: &mut Vec<PortId>);
    /// A link-level frame received on `port` (PAUSE/PFC): consumed here.
    fn link_level(&mut self, now: u64, port: PortId, kind: LinkLevelFrame, frame: &[u8]);
    /// When the traffic manager next needs [`Node::poll`] (a pause expiring,
    /// a shaper refilling), if it has frames it could not send.
    fn next_wakeup(&self) -> Option<u64>;
    /// Timers (PFC refreshes, the watchdog), run at every [`Node::poll`].
    fn poll(&mut self, _now: u64) {}
    /// A frame the traffic manager gave up (a queue the PFC watchdog
    /// empties) and its port: the node releases it and counts it as dropped.
    fn take_discarded(&mut self) -> Option<(PortId, FrameRef)> {
        None
    }
    /// Every frame waiting, whatever may send now, port by port in the
    /// order each queue holds them (the traffic manager is being replaced:
    /// [`Node::replace_traffic_manager`]). By default without their
    /// ingress port, which only a traffic manager that charges ingress
    /// buffers remembers.
    fn take_all(&mut self, now: u64) -> Vec<HeldFrame> {
        let mut ports = Vec::new();
        self.backlogged(&mut ports);
        let mut frames = Vec::new();
        for port in ports {
            while let Some(dequeued) = self.dequeue(now, port) {
                frames.push(HeldFrame { port, ingress: None, frame: dequeued.frame });
            }
        }
        frames
    }
    /// Takes over from `old`, the traffic manager this one replaces, what
    /// outlives it: the pauses its ports' peers sent and its cumulative
    /// counters ([`Node::replace_traffic_manager`], before the frames
    /// move), except for the `renumbered` ports (their index now names
    /// another port, or none). Nothing by default.
    fn carry_over(&mut self, _now: u64, _old: &Self, _renumbered: &[PortId])
    where
        Self: Sized,
    {
    }
    /// A link-level frame the traffic manager sends (PFC), written into
    /// `buf` (at least 64 bytes): its port and length. Sent ahead of data.
    fn next_link_frame(&mut self, _now: u64, _buf: &mut [u8]) -> Option<(PortId, usize)> {
        None
    }
}

/// A frame a traffic manager held when it was replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldFrame {
    /// The egress port it waited for.
    pub port: PortId,
    /// The port it came in on, when the traffic manager knows it.
    pub ingress: Option<PortId>,
    pub frame: FrameRef,
}

/// What became of the frames a replaced traffic manager held
/// ([`Node::replace_traffic_manager`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Migration {
    /// Queued again in the new traffic manager, in their order.
    pub kept: u64,
    /// Refused by the new one (counted there under its reason, and in
    /// [`NodeCounters::tm_reconfigure_drops`]), or given up by the old one.
    pub dropped: u64,
}

/// One input to the node.
#[derive(Debug, Clone, Copy)]
pub enum NodeEvent<'a, H> {
    /// A frame received on a front-panel port.
    Frame { port: PortId, frame: &'a [u8] },
    /// A frame the host sent through a host interface.
    HostFrame { host_if: H, frame: &'a [u8] },
    /// The link under a port went up or down.
    Link { port: PortId, up: bool },
    /// Time passed: run due timers and transmit what may go now.
    Timer,
}

/// The node's own counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeCounters {
    /// Frames the traffic manager refused.
    pub tm_drops: u64,
    /// Frames a port adapter refused to take.
    pub port_refused: u64,
    /// Punted frames no host interface serves.
    pub punts_unattached: u64,
    /// Frames the traffic manager asked to mark that got CE.
    pub ce_marked: u64,
    /// Frames it asked to mark that could not be: a flood copy sharing its
    /// buffer with other ports, or no IP header where the descriptor said.
    pub ce_unmarkable: u64,
    /// Link-level frames (PFC) the traffic manager sent.
    pub link_frames_sent: u64,
    /// Frames a replaced traffic manager held that its successor took.
    pub tm_migrated: u64,
    /// Frames a replaced traffic manager held that could not be kept (also
    /// in `tm_drops`): the new one refused them (their port or its buffer
    /// gone) or the old one had already given them up.
    pub tm_reconfigure_drops: u64,
}

/// The sans-IO node: the place around the pipeline where frames are
/// queued, timed and transmitted.
pub struct Node<T: TrafficManager = OutputQueues> {
    tm: T,
    out: Output,
    backlog: Vec<PortId>,
    /// The frames of one port's burst in a transmit pass.
    burst: Vec<Dequeued>,
    next_poll: u64,
    poll_interval: u64,
    counters: NodeCounters,
    link_frame: [u8; 64],
}

impl Node<OutputQueues> {
    /// A node that sends every frame at once (bounded FIFO per port), as a
    /// switch without a traffic manager does.
    pub fn new() -> Node<OutputQueues> {
        Node::with_traffic_manager(OutputQueues::new(OutputQueuesConfig::default()))
    }
}

impl Default for Node<OutputQueues> {
    fn default() -> Self {
        Node::new()
    }
}

impl<T: TrafficManager> Node<T> {
    /// How often the pipeline's timers run (aging, neighbour probes).
    pub const POLL_INTERVAL_NS: u64 = 10_000_000;

    pub fn with_traffic_manager(tm: T) -> Node<T> {
        Node::with_output_capacity(tm, 256)
    }

    /// A node whose frame pool starts with `frames` slots (a simulated
    /// switch with small queues needs far fewer than a daemon's).
    pub fn with_output_capacity(tm: T, frames: usize) -> Node<T> {
        Node::with_output(tm, Output::with_capacity(frames))
    }

    /// A node emitting through `out` (a simulator's, with a pool of
    /// slots sized to its fabric's MTU: [`FramePool::with_slots_of`]).
    pub fn with_output(tm: T, out: Output) -> Node<T> {
        Node {
            tm,
            out,
            backlog: Vec::with_capacity(64),
            burst: Vec::with_capacity(256),
            next_poll: 0,
            poll_interval: Self::POLL_INTERVAL_NS,
            counters: NodeCounters::default(),
            link_frame: [0; 64],
        }
    }

    pub fn traffic_manager(&self) -> &T {
        &self.tm
    }

    pub fn traffic_manager_mut(&mut self) -> &mut T {
        &mut self.tm
    }

    /// Runs `tm` from now on (a new configuration). The frames the old one
    /// held move into it, each queue in its order, classified again by the
    /// new maps from their headers and charged to their ingress port's
    /// priority group (so a lossless queue that fills the new buffer
    /// pauses its sender). A frame the new one refuses (its port gone, no
    /// buffer for it under the new limits) is released and counted: under
    /// the new traffic manager's drop reason, in `tm_drops` and in
    /// `tm_reconfigure_drops`. `renumbered` are the ports whose index
    /// names another port now, or none (a commit removed one and the
    /// index went to a port it added): their frames are released and
    /// counted the same way, and nothing of theirs is carried over.
    pub fn replace_traffic_manager(&mut self, now: u64, tm: T, renumbered: &[PortId]) -> Migration {
        let mut old = std::mem::replace(&mut self.tm, tm);
        self.tm.carry_over(now, &old, renumbered);
        let mut migration = Migration::default();
        for held in old.take_all(now) {
            let mut meta = FrameMeta::describe(self.out.pool().bytes(held.frame));
            meta.ingress = held.ingress;
            if !renumbered.contains(&held.port) && self.tm.enqueue(now, held.port, held.frame, &meta).is_ok() {
                migration.kept += 1;
            } else {
                self.out.release(held.frame);
                migration.dropped += 1;
            }
        }
        while let Some((_, frame)) = old.take_discarded() {
            self.out.release(frame);
            migration.dropped += 1;
        }
        self.counters.tm_migrated += migration.kept;
        self.counters.tm_drops += migration.dropped;
        self.counters.tm_reconfigure_drops += migration.dropped;
        migration
    }

    pub fn counters(&self) -> NodeCounters {
        self.counters
    }

    /// The pool the node's frames live in.
    pub fn pool(&self) -> &FramePool {
        self.out.pool()
    }

    /// The pool, for another node to take a frame from
    /// ([`Node::take_frame`]).
    pub fn pool_mut(&mut self) -> &mut FramePool {
        self.out.pool_mut()
    }

    /// Gives back a reference a [`Ports::transmit_pooled`] kept.
    pub fn release_frame(&mut self, frame: FrameRef) {
        self.out.release(frame);
    }

    /// When the node next needs a [`NodeEvent::Timer`].
    pub fn next_wakeup(&self) -> u64 {
        match self.tm.next_wakeup() {
            Some(at) => at.min(self.next_poll),
            None => self.next_poll,
        }
    }

    /// Runs one event through the node.
    pub fn handle<F: Forwarding>(
        &mut self,
        forwarding: &mut F,
        now: u64,
        event: NodeEvent<'_, F::HostIf>,
        ports: &mut impl Ports<F::HostIf>,
    ) -> Option<Disposition> {
        match event {
            NodeEvent::Frame { port, frame } => return Some(self.receive(forwarding, now, port, frame, ports)),
            NodeEvent::HostFrame { host_if, frame } => self.host_send(forwarding, now, host_if, frame, ports),
            NodeEvent::Link { port, up } => forwarding.set_link_status(port, up),
            NodeEvent::Timer => self.poll(forwarding, now, ports),
        }
        None
    }

    /// A frame received on `port`.
    pub fn receive<F: Forwarding>(
        &mut self,
        forwarding: &mut F,
        now: u64,
        port: PortId,
        frame: &[u8],
        ports: &mut impl Ports<F::HostIf>,
    ) -> Disposition {
        let disposition = self.take_in(forwarding, now, port, frame, ports);
        self.transmit(forwarding, now, ports);
        disposition
    }

    /// Takes in `frame` of `source` (another node's pool, or its owner's:
    /// a simulated cable), whose reference the caller gives up: the frame
    /// moves into this node's pool without a copy (the two slots swap
    /// buffers, `source` keeps one). For [`Node::receive_pooled`].
    pub fn take_frame(&mut self, source: &mut FramePool, frame: FrameRef) -> FrameRef {
        self.out.pool_mut().move_from(source, frame)
    }

    /// A frame received on `port` that is one of this node's pool
    /// ([`Node::take_frame`]), with a reference the caller gives up: the
    /// pipeline routes it in its own buffer where it can
    /// (`Output::forward_in_place`), rewriting its headers rather than
    /// copying the packet. What leaves is what [`Node::receive`] of the
    /// same bytes sends.
    pub fn receive_pooled<F: Forwarding>(
        &mut self,
        forwarding: &mut F,
        now: u64,
        port: PortId,
        frame: FrameRef,
        ports: &mut impl Ports<F::HostIf>,
    ) -> Disposition {
        self.out.clear();
        let len = self.out.pool().tx_frame(frame).len as usize;
        // Lent out while the pipeline reads it and writes the output.
        let buffer = self.out.lend_received(frame);
        let bytes = &buffer[..len];
        let disposition = forwarding.process(now, port, bytes, &mut self.out);
        self.take_link_level(now, port, disposition, bytes, ports);
        self.out.return_received(frame, buffer);
        self.out.release(frame);
        self.dispatch(forwarding, now, ports);
        self.transmit(forwarding, now, ports);
        disposition
    }

    /// Frames received together on `port` (one read of its ring): each
    /// through the pipeline into the traffic manager, then one pass over
    /// the ports that may send, rather than one after every frame.
    pub fn receive_batch<'a, F: Forwarding>(
        &mut self,
        forwarding: &mut F,
        now: u64,
        port: PortId,
        frames: impl IntoIterator<Item = &'a [u8]>,
        ports: &mut impl Ports<F::HostIf>,
    ) {
        for frame in frames {
            self.take_in(forwarding, now, port, frame, ports);
            self.send_link_frames(now, ports);
        }
        self.transmit(forwarding, now, ports);
    }

    /// The pipeline and the traffic manager for one received frame; the
    /// caller transmits.
    fn take_in<F: Forwarding>(
        &mut self,
        forwarding: &mut F,
        now: u64,
        port: PortId,
        frame: &[u8],
        ports: &mut impl Ports<F::HostIf>,
    ) -> Disposition {
        self.out.clear();
        let disposition = forwarding.process(now, port, frame, &mut self.out);
        self.take_link_level(now, port, disposition, frame, ports);
        self.dispatch(forwarding, now, ports);
        disposition
    }

    /// A link-level frame the pipeline passed up goes to its owner.
    #[inline]
    fn take_link_level<H>(
        &mut self,
        now: u64,
        port: PortId,
        disposition: Disposition,
        frame: &[u8],
        ports: &mut impl Ports<H>,
    ) {
        if let Disposition::LinkLevel(kind) = disposition {
            match kind {
                LinkLevelFrame::Pause | LinkLevelFrame::Pfc => self.tm.link_level(now, port, kind, frame),
                LinkLevelFrame::MacControlOther => {}
                LinkLevelFrame::IbLike => ports.link_level(port, kind, frame),
            }
        }
    }

    /// A frame the host sent through `host_if`.
    pub fn host_send<F: Forwarding>(
        &mut self,
        forwarding: &mut F,
        now: u64,
        host_if: F::HostIf,
        frame: &[u8],
        ports: &mut impl Ports<F::HostIf>,
    ) {
        self.out.clear();
        forwarding.host_send(now, host_if, frame, &mut self.out);
        self.dispatch(forwarding, now, ports);
        self.transmit(forwarding, now, ports);
    }

    /// Runs the pipeline's timers when due and sends what the traffic
    /// manager now allows.
    pub fn poll<F: Forwarding>(&mut self, forwarding: &mut F, now: u64, ports: &mut impl Ports<F::HostIf>) {
        self.out.clear();
        if now >= self.next_poll {
            forwarding.poll(now, &mut self.out);
            self.next_poll = now + self.poll_interval;
        }
        self.tm.poll(now);
        self.dispatch(forwarding, now, ports);
        self.transmit(forwarding, now, ports);
    }

    /// Punts go to the host at once; frames for ports into the traffic
    /// manager (the caller then transmits).
    fn dispatch<F: Forwarding>(&mut self, forwarding: &mut F, now: u64, ports: &mut impl Ports<F::HostIf>) {
        for index in 0..self.out.len() {
            let emitted = self.out.get(index).expect("in range");
            match emitted.to {
                Egress::Port(port) => {
                    let (buffer, meta) = (emitted.buffer, emitted.meta);
                    // Read now, beside the headers the descriptor just read,
                    // for the port's counters when the frame leaves.
                    let cast = Cast::of(emitted.frame);
                    self.out.pool_mut().set_cast(buffer, cast);
                    self.out.retain(buffer);
                    if self.tm.enqueue(now, port, buffer, &meta).is_err() {
                        self.out.release(buffer);
                        self.counters.tm_drops += 1;
                        forwarding.count_egress_drop(port);
                    }
                }
                egress @ Egress::Host { .. } => {
                    let target = forwarding.punt_target(&egress);
                    if target.is_none() {
                        self.counters.punts_unattached += 1;
                    }
                    ports.punt(target, egress, emitted.frame);
                }
            }
        }
        self.out.clear();
    }

    /// PFC frames the traffic manager wants sent: ahead of any data, and
    /// within a batch after the frame that called for them (a pause sent
    /// a batch later lets the peer send a batch more into the headroom).
    fn send_link_frames<H>(&mut self, now: u64, ports: &mut impl Ports<H>) {
        while let Some((port, len)) = self.tm.next_link_frame(now, &mut self.link_frame) {
            if ports.transmit(port, &self.link_frame[..len.min(self.link_frame.len())]) {
                self.counters.link_frames_sent += 1;
            } else {
                self.counters.port_refused += 1;
            }
        }
    }

    /// Sends from every backlogged port what the traffic manager releases.
    fn transmit<F: Forwarding>(&mut self, forwarding: &mut F, now: u64, ports: &mut impl Ports<F::HostIf>) {
        self.send_link_frames(now, ports);
        while let Some((port, frame)) = self.tm.take_discarded() {
            self.out.release(frame);
            self.counters.tm_drops += 1;
            forwarding.count_egress_drop(port);
        }
        self.backlog.clear();
        self.tm.backlogged(&mut self.backlog);
        for &port in &self.backlog {
            self.burst.clear();
            self.tm.dequeue_burst(now, port, &mut self.burst);
            for &Dequeued { frame, mark_ce, .. } in &self.burst {
                if mark_ce {
                    mark_leaving(self.out.pool_mut(), frame, &mut self.counters);
                }
                if ports.transmit_pooled(port, self.out.pool_mut(), frame) {
                    forwarding.count_transmitted(port, self.out.pool().tx_frame(frame));
                } else {
                    self.counters.port_refused += 1;
                    forwarding.count_egress_drop(port);
                }
                self.out.release(frame);
            }
        }
    }
}

/// Sets CE in a frame the traffic manager chose to mark as it leaves.
fn mark_leaving(pool: &mut FramePool, frame: FrameRef, counters: &mut NodeCounters) {
    // The queue's reference alone: any more and the buffer is a flood copy
    // other ports send too.
    let l3_offset = FrameMeta::describe(pool.bytes(frame)).l3_offset;
    if pool.refs(frame) <= 1 && set_ce(pool.bytes_mut(frame), l3_offset) {
        counters.ce_marked += 1;
    } else {
        counters.ce_unmarkable += 1;
    }
}

/// Sets CE in the IPv4 or IPv6 header at `l3_offset` of `frame` if it is
/// ECN-capable (the IPv4 checksum patched incrementally, RFC 1624).
/// `false` when no such header is there.
fn set_ce(frame: &mut [u8], l3_offset: u16) -> bool {
    use crate::wire::{Ecn, Ipv4Packet, Ipv6Packet};
    let offset = usize::from(l3_offset);
    if offset == 0 {
        return false;
    }
    let Some(ip) = frame.get_mut(offset..) else { return false };
    match ip.first().map(|b| b >> 4) {
        Some(4) => match Ipv4Packet::new_checked(ip) {
            Ok(mut packet) if matches!(packet.ecn(), Ecn::Ect0 | Ecn::Ect1 | Ecn::Ce) => {
                if packet.ecn() != Ecn::Ce {
                    packet.set_ecn_incremental(Ecn::Ce);
                }
                true
            }
            _ => false,
        },
        Some(6) => match Ipv6Packet::new_checked(ip) {
            Ok(mut packet) if matches!(packet.ecn(), Ecn::Ect0 | Ecn::Ect1 | Ecn::Ce) => {
                packet.set_ecn(Ecn::Ce);
                true
            }
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests;
