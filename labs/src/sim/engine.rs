//! The discrete-event loop: switches (the pipeline in a [`Node`] with the
//! `qos` traffic manager), hosts ([`super::host`]), cables
//! ([`super::link`]) and the workload, driven in virtual nanoseconds.
//!
//! One event at a time, in (time, key): the key is the scheduling node's
//! number and its own count of events scheduled, so the order of events at
//! the same nanosecond does not depend on how the fabric is split across
//! threads ([`super::parallel`]); a run is a pure function of the topology,
//! the experiment and the seed, on one thread or several.

use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use dataplane::node::{HostIfTarget, Node, Ports, QosTrafficManager};
use dataplane::pipeline::{Egress, FramePool, FrameRef, Output, PortId, Switch};

use super::configured;
use super::experiment::{DATA_DSCP, DATA_PRIORITY, Experiment, LoadBalancing};
use super::fabric::{End, Fabric};
use super::host::{Connection, ConnectionSpec, Host};
use super::link::{InFlight, Wire};
use super::queue::{Event, EventQueue};
use super::routes::{self, Routes, host_mac, switch_mac};
use super::stats::{DepthHistogram, MessageRecord};
use super::workload::Workload;

/// A switch: its pipeline and the node around it.
pub struct SimSwitch {
    /// Its number in the fabric.
    pub id: u32,
    pub pipeline: Switch,
    pub node: Node<QosTrafficManager>,
    /// The earliest wake-up asked for and not yet run (`u64::MAX`: none).
    wake_at: u64,
}

/// An event key: the scheduling node's number (switches, then hosts, then
/// the run itself) above its own count of events scheduled.
const KEY_SHIFT: u32 = 40;

/// Not in this partition.
pub(crate) const ELSEWHERE: u32 = u32::MAX;

/// What a partition of a run split across threads knows of the others.
pub(crate) struct Part {
    pub me: u32,
    /// The partition of every switch and of every host.
    pub switch_part: Arc<Vec<u32>>,
    pub host_part: Arc<Vec<u32>>,
    /// What this partition sent each other one during the current window.
    pub outbox: Vec<Outbox>,
}

/// Events for another partition: frames (their bytes copied here, into the
/// receiver's pool when it takes them) and delivery notices.
#[derive(Default)]
pub(crate) struct Outbox {
    entries: Vec<Crossing>,
    bytes: Vec<u8>,
    /// The earliest event in it (`u64::MAX`: empty).
    pub min_at: u64,
}

struct Crossing {
    at: u64,
    key: u64,
    event: Event,
    offset: u32,
    len: u32,
}

impl Outbox {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    #[inline]
    fn add(&mut self, at: u64, key: u64, event: Event, frame: &[u8]) {
        if self.entries.is_empty() {
            self.min_at = u64::MAX;
        }
        self.min_at = self.min_at.min(at);
        let offset = self.bytes.len() as u32;
        self.bytes.extend_from_slice(frame);
        self.entries.push(Crossing { at, key, event, offset, len: frame.len() as u32 });
    }
}

/// Where a port's cable goes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer {
    end: End,
    link: u32,
}

pub struct Simulation<Q: EventQueue> {
    pub now: u64,
    pub(crate) queue: Q,
    /// Frames hosts build and switches' PFC frames, in slots of the
    /// switches' size: a switch takes them in by swapping buffers.
    pub(crate) frames: FramePool,
    pub(crate) slot: usize,
    pub fabric: Arc<Fabric>,
    pub experiment: Experiment,
    pub routes: Arc<Routes>,
    /// On switches built from their configs: the BGP underlay's shortcut.
    pub(crate) underlay: Option<configured::Underlay>,
    /// The switches and hosts this partition runs (all of them on one
    /// thread, in the fabric's order), and where each of the fabric's is
    /// among them ([`ELSEWHERE`]: another partition's).
    pub switches: Vec<SimSwitch>,
    pub hosts: Vec<Host>,
    pub(crate) switch_local: Vec<u32>,
    pub(crate) host_local: Vec<u32>,
    /// The fabric's number of each of `hosts`.
    pub(crate) host_ids: Vec<u32>,
    /// Every connection; a partition runs those its hosts send on.
    pub connections: Vec<Connection>,
    pub workload: Arc<Workload>,
    /// Per message: the messages it still waits for.
    pub(crate) waiting: Vec<u32>,
    /// Per connection: its messages in the order its sender was given them
    /// (written by the sender, read by the receiver, a cable later at least).
    pub(crate) order: Arc<Vec<Mutex<Vec<u32>>>>,
    /// Per connection: the messages its receiver has got whole.
    pub(crate) received: Vec<u32>,
    pub records: Vec<MessageRecord>,
    pub completed: usize,
    /// When the last message was received whole.
    pub finished_ns: u64,
    /// Payload of the background messages received whole (each at least one byte).
    pub background_done_bytes: u64,
    /// Of those, the collectives' (not background): the run ends with them.
    pub completed_foreground: usize,
    /// Per switch, per port: the cable's far end.
    pub(crate) switch_peers: Arc<Vec<Vec<Option<Peer>>>>,
    /// Per host: its leaf, port and cable.
    pub(crate) host_peers: Arc<Vec<(u32, u16, u32)>>,
    pub link_up: Vec<bool>,
    pub(crate) flight: Flight,
    /// Per cable: its speed and propagation delay.
    pub(crate) wires: Arc<Vec<Wire>>,
    /// The least time an event takes from one node to another (a cable's
    /// propagation plus a one-byte frame's serialisation, the fabric's
    /// least): the windows of a split run, and a delivery notice's delay.
    pub lookahead_ns: u64,
    /// The node whose event runs (its number in keys), and per node the
    /// events it has scheduled.
    pub(crate) source: u32,
    pub(crate) counters: Vec<u64>,
    /// Of a run split across threads: the partitions.
    pub(crate) part: Option<Part>,
    pub events: u64,
    pub punts: u64,
    /// Reconvergences after link failures, routes they rewrote, and refusals.
    pub reroutes: u32,
    pub routes_rewritten: usize,
    /// What a switch's tables refused: (reconvergence, switch, why), in that order.
    pub reroute_errors: Vec<(u32, u32, String)>,
    pub depth: DepthHistogram,
    /// Watched (switch, port) and their sampled depths over time.
    pub watched: Vec<(u32, u16)>,
    pub series: Vec<(u64, Vec<u32>)>,
}

impl<Q: EventQueue> Simulation<Q> {
    /// Builds every node and schedules the workload's first messages.
    pub fn new(fabric: Fabric, experiment: Experiment, workload: Workload, queue: Q) -> Result<Self, String> {
        let seed = experiment.seed;
        let hash_seed = |s: u32| {
            seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(u64::from(s).wrapping_mul(0xbf58_476d_1ce4_e5b9)) | 1
        };
        let (pipelines, traffic_managers, routes, wires, underlay) = if fabric.configured() {
            let built = configured::build(&fabric, &experiment, hash_seed)?;
            let tms = built.traffic_managers.into_iter().map(Some).collect();
            (built.pipelines, tms, built.routes, built.wires, Some(built.underlay))
        } else {
            let (pipelines, routes) = routes::build_switches(&fabric, hash_seed)?;
            let wire = Wire::new(experiment.link_bps, experiment.link_delay_ns);
            (pipelines, Vec::new(), routes, vec![wire; fabric.links.len()], None)
        };
        let mut traffic_managers = traffic_managers.into_iter();
        let mut switches = Vec::with_capacity(pipelines.len());
        // Pool slots fit the largest frame a host makes (the MTU's payload
        // and RoCEv2's headers) with room to spare, not a jumbo frame: half
        // the memory of the queues at 4 KiB. One size everywhere, so that
        // frames move between pools.
        let slot = (experiment.mtu as usize + 256).next_multiple_of(64);
        for (s, mut pipeline) in pipelines.into_iter().enumerate() {
            let tm = match traffic_managers.next().flatten() {
                Some(configured) => configured,
                None => {
                    let ports = fabric.switches[s].ports.max(1);
                    let mut tm = experiment.traffic_manager(ports)?;
                    for port in 0..ports {
                        tm.set_port_mac(port, switch_mac(s as u32, port));
                    }
                    if experiment.lb != LoadBalancing::Ecmp {
                        pipeline.set_path_quality(Some(Box::new(tm.dlb(experiment.dlb_config()))));
                    }
                    tm
                }
            };
            let node = Node::with_output(tm, Output::with_pool(FramePool::with_slots_of(64, slot), 64));
            switches.push(SimSwitch { id: s as u32, pipeline, node, wake_at: u64::MAX });
        }
        let mut switch_peers: Vec<Vec<Option<Peer>>> =
            fabric.switches.iter().map(|s| vec![None; usize::from(s.ports)]).collect();
        let mut host_peers = vec![(0, 0, 0); fabric.hosts.len()];
        for (link, &(a, b)) in fabric.links.iter().enumerate() {
            let link = link as u32;
            for (here, there) in [(a, b), (b, a)] {
                match here {
                    End::Switch { switch, port } => {
                        switch_peers[switch as usize][usize::from(port)] = Some(Peer { end: there, link })
                    }
                    End::Host { host } => {
                        if let End::Switch { switch, port } = there {
                            host_peers[host as usize] = (switch, port, link);
                        }
                    }
                }
            }
        }
        let mut receive_qps = vec![0usize; fabric.hosts.len()];
        for &(_, dst) in &workload.connections {
            receive_qps[dst as usize] += 1;
        }
        experiment.validate()?;
        let background = workload.background_collective.is_some();
        let hosts: Vec<Host> = (0..fabric.hosts.len())
            .map(|h| {
                let (_, _, link) = host_peers[h];
                let speed_bps = wires[link as usize].speed_bps;
                let mut host = Host::new(
                    host_mac(h as u32),
                    routes.addressing.gateway_macs[h],
                    routes.addressing.host_ips[h],
                    speed_bps,
                    experiment.mtu,
                    receive_qps[h].max(1),
                );
                if background {
                    host.set_background(experiment.background_priority(), experiment.strict_collective, speed_bps);
                }
                host
            })
            .collect();
        let connections: Vec<Connection> = workload
            .connections
            .iter()
            .enumerate()
            .map(|(qp, &(src, dst))| {
                let spec = ConnectionSpec {
                    src_mac: hosts[src as usize].mac,
                    gateway_mac: routes.addressing.next_hop_mac(src, dst),
                    src_ip: hosts[src as usize].ip,
                    dst_ip: hosts[dst as usize].ip,
                    qp: qp as u32,
                    ecn: experiment.ecn,
                    dcqcn: experiment.ecn,
                    link_bps: wires[host_peers[src as usize].2 as usize].speed_bps,
                    dscp: if workload.background[qp] { experiment.background_dscp() } else { DATA_DSCP },
                    background: workload.background[qp],
                };
                Connection::new(src, dst, &spec)
            })
            .collect();
        let records = workload.messages.iter().map(|m| MessageRecord::new(m.bytes)).collect();
        let lookahead_ns = wires.iter().map(|w| w.propagation_ns + w.serialisation_ns(1)).min().unwrap_or(1).max(1);
        let nodes = switches.len() + hosts.len() + 1;
        let mut simulation = Simulation {
            now: 0,
            queue,
            frames: FramePool::with_slots_of(64, slot),
            slot,
            link_up: vec![true; fabric.links.len()],
            flight: Flight::default(),
            wires: Arc::new(wires),
            fabric: Arc::new(fabric),
            experiment,
            routes: Arc::new(routes),
            underlay,
            switch_local: (0..switches.len() as u32).collect(),
            host_local: (0..hosts.len() as u32).collect(),
            host_ids: (0..hosts.len() as u32).collect(),
            switches,
            hosts,
            waiting: workload.messages.iter().map(|m| m.waiting_for).collect(),
            order: Arc::new((0..connections.len()).map(|_| Mutex::new(Vec::new())).collect()),
            received: vec![0; connections.len()],
            connections,
            workload: Arc::new(workload),
            records,
            completed: 0,
            finished_ns: 0,
            background_done_bytes: 0,
            completed_foreground: 0,
            switch_peers: Arc::new(switch_peers),
            host_peers: Arc::new(host_peers),
            lookahead_ns,
            source: (nodes - 1) as u32,
            counters: vec![0; nodes],
            part: None,
            events: 0,
            punts: 0,
            reroutes: 0,
            routes_rewritten: 0,
            reroute_errors: Vec::new(),
            depth: DepthHistogram::default(),
            watched: Vec::new(),
            series: Vec::new(),
        };
        let workload = Arc::clone(&simulation.workload);
        for (id, message) in workload.messages.iter().enumerate() {
            if message.waiting_for == 0 {
                simulation.schedule(message.delay_ns, Event::Release { message: id as u32 });
            }
        }
        if simulation.experiment.sample_ns > 0 {
            simulation.schedule(0, Event::Sample);
        }
        if let Some((link, at)) = simulation.experiment.link_failure {
            simulation.schedule(at, Event::LinkDown { link });
        }
        Ok(simulation)
    }

    /// The number in keys of the run itself (sampling, failures).
    pub(crate) fn global_node(&self) -> u32 {
        (self.counters.len() - 1) as u32
    }

    /// The node an event runs on: a switch, a host (by number after the
    /// switches), or the run itself.
    pub(crate) fn target(&self, event: &Event) -> u32 {
        let switches = self.fabric.switches.len() as u32;
        match *event {
            Event::SwitchFrame { switch, .. } | Event::SwitchWake { switch } => switch,
            Event::HostFrame { host, .. } | Event::HostWake { host } => switches + host,
            Event::Release { message } | Event::Timeout { message } => {
                let connection = self.workload.messages[message as usize].connection;
                switches + self.workload.connections[connection as usize].0
            }
            Event::Delivered { connection } => switches + self.workload.connections[connection as usize].0,
            Event::Sample | Event::Reconverge | Event::LinkDown { .. } => self.global_node(),
        }
    }

    /// The next key of the node whose event runs.
    #[inline]
    fn key(&mut self) -> u64 {
        next_key(self.source, &mut self.counters[self.source as usize])
    }

    /// Schedules an event of this partition.
    #[inline]
    fn schedule(&mut self, at: u64, event: Event) {
        let key = self.key();
        self.queue.push(at, key, event);
    }

    #[inline]
    fn schedule_monotone(&mut self, at: u64, event: Event) {
        let key = self.key();
        self.queue.push_monotone(at, key, event);
    }

    /// The end of the window of the lookahead's grid that holds `at`.
    pub fn window_end(&self, at: u64) -> u64 {
        (at / self.lookahead_ns + 1).saturating_mul(self.lookahead_ns)
    }

    /// Watches these ports' queue depth over time.
    pub fn watch(&mut self, ports: Vec<(u32, u16)>) {
        self.watched = ports;
    }

    /// The cable of host `h`'s NIC.
    pub fn host_wire(&self, h: u32) -> Wire {
        self.wires[self.host_peers[h as usize].2 as usize]
    }

    /// The collectives are received whole (background traffic may be left).
    pub fn finished(&self) -> bool {
        self.completed_foreground == self.workload.foreground_messages
    }

    /// Runs until the workload has been received whole or the time limit.
    pub fn run(&mut self) {
        self.run_with(|_| {});
    }

    /// Runs, calling `progress` every 2^20 events. Once the last message is
    /// received, the events left in its window of the lookahead's grid still
    /// run (a run split across threads stops at a window's end, and the
    /// same run on one thread must end in the same state); `now` is then
    /// the last message's time.
    pub fn run_with(&mut self, mut progress: impl FnMut(&Self)) {
        let limit = self.experiment.time_limit_ns;
        let mut end = if self.finished() { 0 } else { u64::MAX };
        while let Some((at, key, event)) = self.queue.pop() {
            if at > limit || at >= end {
                self.queue.push(at, key, event);
                break;
            }
            self.now = at;
            self.events += 1;
            if self.events & ((1 << 20) - 1) == 0 {
                progress(self);
            }
            self.handle(event);
            if end == u64::MAX && self.finished() {
                end = self.window_end(at);
            }
        }
        if self.finished() {
            self.now = self.finished_ns;
        }
    }

    /// Runs this partition's events before `bound` (and within the time limit).
    pub(crate) fn run_window(&mut self, bound: u64) {
        let limit = self.experiment.time_limit_ns;
        while let Some((at, key, event)) = self.queue.pop() {
            if at >= bound || at > limit {
                self.queue.push(at, key, event);
                break;
            }
            self.now = at;
            self.events += 1;
            self.handle(event);
        }
    }

    /// The time of this partition's next event (`u64::MAX`: none).
    pub(crate) fn next_at(&mut self) -> u64 {
        match self.queue.pop() {
            Some((at, key, event)) => {
                self.queue.push(at, key, event);
                at
            }
            None => u64::MAX,
        }
    }

    /// Takes what another partition sent this one: frames into this
    /// partition's pool, every event into its queue with the key it had.
    pub(crate) fn take_crossings(&mut self, inbox: &mut Outbox) {
        let Outbox { entries, bytes, .. } = inbox;
        for crossing in entries.drain(..) {
            let event = match crossing.event {
                Event::SwitchFrame { switch, port, .. } => {
                    let data = &bytes[crossing.offset as usize..(crossing.offset + crossing.len) as usize];
                    let (own, buffer) = self.frames.alloc_frame(data.len());
                    buffer.copy_from_slice(data);
                    self.flight.took_off();
                    Event::SwitchFrame { switch, port, frame: InFlight::own(own) }
                }
                other => other,
            };
            self.queue.push(crossing.at, crossing.key, event);
        }
        bytes.clear();
    }

    fn handle(&mut self, event: Event) {
        let now = self.now;
        self.source = self.target(&event);
        match event {
            Event::SwitchFrame { switch, port, frame } => {
                let mine = match frame.as_pooled() {
                    Some(pooled) => self.take_from_peer(switch, port, pooled),
                    None => {
                        let own = frame.as_own().expect("not pooled");
                        self.switches[self.switch_local[switch as usize] as usize]
                            .node
                            .take_frame(&mut self.frames, own)
                    }
                };
                self.with_switch(switch, |node, pipeline, ports| {
                    node.receive_pooled(pipeline, now, port, mine, ports);
                });
                // Counted until handled: its buffer is in use meanwhile.
                self.flight.landed();
            }
            Event::HostFrame { host, frame } => {
                let ips = &self.routes.addressing.host_ips;
                let connections = &mut self.connections;
                let src_ip = |qp: u32| -> Ipv4Addr {
                    self.workload.connections.get(qp as usize).map_or(Ipv4Addr::UNSPECIFIED, |&(s, _)| ips[s as usize])
                };
                let nic = &mut self.hosts[self.host_local[host as usize] as usize];
                let received = match frame.as_pooled() {
                    Some(pooled) => {
                        let leaf = self.switch_local[self.host_peers[host as usize].0 as usize];
                        let leaf = &mut self.switches[leaf as usize].node;
                        let received = nic.receive(now, leaf.pool().bytes(pooled), connections, src_ip);
                        leaf.release_frame(pooled);
                        received
                    }
                    None => {
                        let own = frame.as_own().expect("not pooled");
                        let received = nic.receive(now, self.frames.bytes(own), connections, src_ip);
                        self.frames.release(own);
                        received
                    }
                };
                self.flight.landed();
                if let Some((qp, count)) = received.completed {
                    for _ in 0..count {
                        let k = self.received[qp as usize] as usize;
                        let message = self.order[qp as usize].lock().expect("order").get(k).copied();
                        if let Some(message) = message {
                            self.received[qp as usize] += 1;
                            self.complete(message);
                            // The sender forgets the message a lookahead later.
                            let (src, _) = self.workload.connections[qp as usize];
                            self.notify_sender(src, now + self.lookahead_ns, Event::Delivered { connection: qp });
                        }
                    }
                }
                if received.wake {
                    self.wake_host(host, now);
                }
            }
            Event::SwitchWake { switch } => {
                let local = self.switch_local[switch as usize] as usize;
                if self.switches[local].wake_at != now {
                    return;
                }
                self.switches[local].wake_at = u64::MAX;
                self.with_switch(switch, |node, pipeline, ports| node.poll(pipeline, now, ports));
            }
            Event::HostWake { host } => {
                let local = self.host_local[host as usize] as usize;
                if self.hosts[local].wake_at != now {
                    return;
                }
                self.hosts[local].wake_at = u64::MAX;
                self.run_host(host);
            }
            Event::Release { message } => {
                let m = self.workload.messages[message as usize];
                let (src, _) = self.workload.connections[m.connection as usize];
                self.records[message as usize].released_ns = now;
                self.order[m.connection as usize].lock().expect("order").push(message);
                let local = self.host_local[src as usize] as usize;
                self.hosts[local].release(&mut self.connections, m.connection, message, m.bytes);
                self.wake_host(src, now);
            }
            Event::Delivered { connection } => {
                self.connections[connection as usize].in_flight.pop_front();
            }
            Event::Sample => {
                // Every partition samples its own switches; one counts the event.
                if self.part.as_ref().is_some_and(|p| p.me != 0) {
                    self.events -= 1;
                }
                self.sample();
                self.schedule(now + self.experiment.sample_ns, Event::Sample);
            }
            Event::LinkDown { link } => {
                // Every partition runs it at the same place in the order
                // (its own copy of the cable's state, its own switch's
                // port); one counts the event.
                if self.part.as_ref().is_some_and(|p| p.me != 0) {
                    self.events -= 1;
                }
                self.link_down(link);
                self.schedule(now + self.experiment.reconverge_ns, Event::Reconverge);
            }
            Event::Reconverge => {
                // Every partition reroutes its own switches, with the ids
                // the whole fabric's reroute gives them; one counts the event.
                if self.part.as_ref().is_some_and(|p| p.me != 0) {
                    self.events -= 1;
                }
                let local = &self.switch_local;
                let mut slots: Vec<Option<&mut SimSwitch>> = self.switches.iter_mut().map(Some).collect();
                let mut pipelines: Vec<Option<&mut Switch>> = local
                    .iter()
                    .map(|&l| if l == ELSEWHERE { None } else { slots[l as usize].take().map(|s| &mut s.pipeline) })
                    .collect();
                self.reroutes += 1;
                let (rewritten, errors) = match &mut self.underlay {
                    Some(underlay) => underlay.reroute(&self.link_up, &mut pipelines),
                    None => routes::reroute(&self.fabric, &self.link_up, &mut pipelines, self.reroutes << 20),
                };
                self.routes_rewritten += rewritten;
                let reroute = self.reroutes;
                self.reroute_errors.extend(errors.into_iter().map(|(s, e)| (reroute, s, e)));
            }
            Event::Timeout { message } => {
                let m = self.workload.messages[message as usize];
                // Delivered (as far as the sender knows): no timer any more.
                if !self.connections[m.connection as usize].in_flight.iter().any(|&(sent, _)| sent == message) {
                    return;
                }
                let (src, _) = self.workload.connections[m.connection as usize];
                let local = self.host_local[src as usize] as usize;
                self.hosts[local].retransmit_message(&mut self.connections, m.connection, message, m.bytes);
                self.schedule_monotone(now + self.experiment.rto_ns, Event::Timeout { message });
                self.wake_host(src, now);
            }
        }
    }

    /// Runs `f` on switch `s` with the ports its frames leave by, then
    /// asks to be woken when its node next needs it.
    fn with_switch(
        &mut self,
        s: u32,
        f: impl FnOnce(&mut Node<QosTrafficManager>, &mut Switch, &mut SwitchPorts<'_, Q>),
    ) {
        let mut ports = SwitchPorts {
            now: self.now,
            source: s,
            counter: &mut self.counters[s as usize],
            peers: &self.switch_peers[s as usize],
            link_up: &self.link_up,
            wires: &self.wires,
            queue: &mut self.queue,
            frames: &mut self.frames,
            flight: &mut self.flight,
            punts: &mut self.punts,
            part: self.part.as_mut(),
        };
        drive(&mut self.switches[self.switch_local[s as usize] as usize], s, &mut ports, f);
    }

    /// A delivery notice to the sender `host`, in this partition or another.
    fn notify_sender(&mut self, host: u32, at: u64, event: Event) {
        let key = self.key();
        match &mut self.part {
            Some(part) if part.host_part[host as usize] != part.me => {
                let to = part.host_part[host as usize] as usize;
                part.outbox[to].add(at, key, event, &[]);
            }
            _ => self.queue.push(at, key, event),
        }
    }

    /// A frame switch `s` receives on `port` that is still in the sending
    /// switch's pool: moved into `s`'s pool (buffers swapped, no copy),
    /// the cable's reference in the sender's given back.
    fn take_from_peer(&mut self, s: u32, port: u16, frame: FrameRef) -> FrameRef {
        let Some(Peer { end: End::Switch { switch: sender, .. }, .. }) =
            self.switch_peers[s as usize][usize::from(port)]
        else {
            unreachable!("a pooled frame comes from a switch across the cable");
        };
        let (s, sender) = (self.switch_local[s as usize] as usize, self.switch_local[sender as usize] as usize);
        let [receiver, sender] = self.switches.get_disjoint_mut([s, sender]).expect("a cable joins two switches");
        receiver.node.take_frame(sender.node.pool_mut(), frame)
    }

    /// Asks host `h` to run at `at` (unless it already will by then).
    fn wake_host(&mut self, h: u32, at: u64) {
        let host = &mut self.hosts[self.host_local[h as usize] as usize];
        if at < host.wake_at {
            host.wake_at = at;
            self.schedule(at, Event::HostWake { host: h });
        }
    }

    /// The host sends what it may now, and asks to be woken for the next.
    fn run_host(&mut self, h: u32) {
        let now = self.now;
        let workload = &self.workload;
        let bytes = |m: u32| workload.messages[m as usize].bytes;
        let host = &mut self.hosts[self.host_local[h as usize] as usize];
        match host.send(now, &mut self.connections, &bytes, &mut self.frames) {
            Ok(sent) => {
                let (switch, port, link) = self.host_peers[h as usize];
                // Counted from when the NIC wrote it, as the arena holds it.
                self.flight.took_off();
                let wire = self.wires[link as usize];
                if self.link_up[link as usize] {
                    let at = wire.arrival(now, sent.len);
                    self.schedule(at, Event::SwitchFrame { switch, port, frame: InFlight::own(sent.frame) });
                } else {
                    self.frames.release(sent.frame);
                    self.flight.landed();
                }
                if let Some(message) = sent.message_sent {
                    self.schedule_monotone(now + self.experiment.rto_ns, Event::Timeout { message });
                }
                // The line is busy for the frame's time: try again then.
                let next = now + wire.serialisation_ns(sent.len);
                self.wake_host(h, next);
            }
            Err(u64::MAX) => {}
            Err(when) => self.wake_host(h, when.max(now + 1)),
        }
    }

    /// Message `id` has been received whole.
    fn complete(&mut self, id: u32) {
        let now = self.now;
        let record = &mut self.records[id as usize];
        record.completed_ns = now;
        self.completed += 1;
        if self.workload.is_background(id) {
            self.background_done_bytes += record.bytes.max(1);
        } else {
            self.completed_foreground += 1;
            self.finished_ns = now;
        }
        let workload = Arc::clone(&self.workload);
        // The dependents are sent by this message's receiver (checked
        // before a run is split): they are released in this partition.
        for &later in workload.dependents_of(id) {
            let waiting = &mut self.waiting[later as usize];
            *waiting -= 1;
            if *waiting == 0 {
                let delay = workload.messages[later as usize].delay_ns;
                self.schedule(now + delay, Event::Release { message: later });
            }
        }
    }

    fn sample(&mut self) {
        let mut row = Vec::with_capacity(self.watched.len());
        for &(s, port) in &self.watched {
            let local = self.switch_local[s as usize];
            if local != ELSEWHERE {
                let tm = self.switches[local as usize].node.traffic_manager().tm();
                row.push(tm.port_depth(port).1);
            }
        }
        if !row.is_empty() {
            self.series.push((self.now, row));
        }
        for switch in &self.switches {
            let tm = switch.node.traffic_manager().tm();
            for (port, peer) in self.switch_peers[switch.id as usize].iter().enumerate() {
                if peer.is_some() {
                    self.depth.add(tm.port_depth(port as u16).1);
                }
            }
        }
    }

    /// Cable `link` fails: both ends see the link go down, and frames put
    /// on it from now on are lost. The routes stay (as until BGP withdraws
    /// them); the pipeline leaves down ports out of its ECMP choices.
    fn link_down(&mut self, link: u32) {
        let Some(&(a, b)) = self.fabric.links.get(link as usize) else { return };
        self.link_up[link as usize] = false;
        for end in [a, b] {
            // Each end in its own partition (on a split run, the other
            // partition runs the same event for its end).
            if let End::Switch { switch, port } = end
                && self.switch_local[switch as usize] != ELSEWHERE
            {
                let now = self.now;
                self.with_switch(switch, |node, pipeline, ports| {
                    node.handle(pipeline, now, dataplane::node::NodeEvent::Link { port, up: false }, ports);
                });
            }
        }
    }

    /// Time port `port` of switch `s` was paused on the data priority by its peer.
    pub fn paused_ns(&self, s: u32, port: u16) -> u64 {
        let local = self.switch_local[s as usize] as usize;
        self.switches[local].node.traffic_manager().tm().pfc_paused_ns(self.now, port, DATA_PRIORITY)
    }

    /// Per switch, per port: the cable's far end.
    pub fn peer(&self, s: u32, port: u16) -> Option<End> {
        self.switch_peers[s as usize].get(usize::from(port)).copied().flatten().map(|p| p.end)
    }

    /// Peak of frames in flight (on cables, or being read, at once).
    pub fn frames_allocated(&self) -> usize {
        self.flight.peak
    }

    /// Events still queued.
    pub fn pending_events(&self) -> usize {
        self.queue.len()
    }
}

/// Runs `f` on `switch` (number `s`), then asks to be woken when its
/// node next needs it.
fn drive<Q: EventQueue>(
    switch: &mut SimSwitch,
    s: u32,
    ports: &mut SwitchPorts<'_, Q>,
    f: impl FnOnce(&mut Node<QosTrafficManager>, &mut Switch, &mut SwitchPorts<'_, Q>),
) {
    f(&mut switch.node, &mut switch.pipeline, ports);
    let wake = switch.node.next_wakeup().max(ports.now + 1);
    if wake < switch.wake_at {
        switch.wake_at = wake;
        let key = next_key(s, ports.counter);
        ports.queue.push(wake, key, Event::SwitchWake { switch: s });
    }
}

#[inline]
fn next_key(source: u32, counter: &mut u64) -> u64 {
    *counter += 1;
    (u64::from(source) << KEY_SHIFT) | *counter
}

/// Frames on cables now, and the most there ever were.
#[derive(Debug, Default)]
pub(crate) struct Flight {
    now: usize,
    pub peak: usize,
}

impl Flight {
    #[inline]
    fn took_off(&mut self) {
        self.now += 1;
        self.peak = self.peak.max(self.now);
    }

    #[inline]
    fn landed(&mut self) {
        self.now -= 1;
    }
}

/// The switch's ports: a frame written to one is on the cable.
struct SwitchPorts<'a, Q> {
    now: u64,
    /// The switch, and its count of events scheduled.
    source: u32,
    counter: &'a mut u64,
    peers: &'a [Option<Peer>],
    link_up: &'a [bool],
    wires: &'a [Wire],
    queue: &'a mut Q,
    frames: &'a mut FramePool,
    flight: &'a mut Flight,
    punts: &'a mut u64,
    part: Option<&'a mut Part>,
}

impl<Q: EventQueue> SwitchPorts<'_, Q> {
    /// The cable's far end, if `port` is wired and up.
    #[inline]
    fn live_peer(&self, port: PortId) -> Option<Peer> {
        let peer = self.peers.get(usize::from(port)).copied().flatten()?;
        self.link_up[peer.link as usize].then_some(peer)
    }

    /// The frame of `len` bytes reaches the cable's far end after its time.
    #[inline]
    fn launch(&mut self, peer: Peer, len: usize, frame: InFlight) {
        let at = self.wires[peer.link as usize].arrival(self.now, len);
        let event = match peer.end {
            End::Switch { switch, port } => Event::SwitchFrame { switch, port, frame },
            End::Host { host } => Event::HostFrame { host, frame },
        };
        self.flight.took_off();
        let key = next_key(self.source, self.counter);
        self.queue.push(at, key, event);
    }

    /// The partition of the far end's switch, if another one runs it: the
    /// frame's bytes go there (copied), with its time and key.
    #[inline]
    fn cross(&mut self, peer: Peer, frame: &[u8]) -> bool {
        let (Some(part), End::Switch { switch, port }) = (self.part.as_deref_mut(), peer.end) else { return false };
        let to = part.switch_part[switch as usize];
        if to == part.me {
            return false;
        }
        let at = self.wires[peer.link as usize].arrival(self.now, frame.len());
        let key = next_key(self.source, self.counter);
        let event = Event::SwitchFrame { switch, port, frame: InFlight::own(FrameRef::from_index(0)) };
        part.outbox[to as usize].add(at, key, event, frame);
        true
    }
}

impl<Q: EventQueue> Ports<HostIfTarget> for SwitchPorts<'_, Q> {
    #[inline]
    fn transmit(&mut self, port: PortId, frame: &[u8]) -> bool {
        let Some(peer) = self.live_peer(port) else { return false };
        if self.cross(peer, frame) {
            return true;
        }
        let (own, buffer) = self.frames.alloc_frame(frame.len());
        buffer.copy_from_slice(frame);
        self.launch(peer, frame.len(), InFlight::own(own));
        true
    }

    /// A data frame stays in the switch's pool while on the cable: the
    /// receiver reads it there and gives the reference back. To another
    /// partition's switch its bytes are copied instead.
    #[inline]
    fn transmit_pooled(&mut self, port: PortId, pool: &mut FramePool, frame: FrameRef) -> bool {
        let Some(peer) = self.live_peer(port) else { return false };
        if self.cross(peer, pool.bytes(frame)) {
            return true;
        }
        pool.retain(frame);
        self.launch(peer, pool.bytes(frame).len(), InFlight::pooled(frame));
        true
    }

    fn punt(&mut self, _host_if: Option<HostIfTarget>, _egress: Egress, _frame: &[u8]) {
        // Nothing here is for a switch's own host side (no ARP, no
        // control plane): a punt is a routing problem, counted.
        *self.punts += 1;
    }
}
