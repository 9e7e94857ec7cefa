//! The discrete-event loop: switches (the pipeline in a [`Node`] with the
//! `qos` traffic manager), hosts ([`super::host`]), cables
//! ([`super::link`]) and the workload, driven in virtual nanoseconds.
//!
//! One event at a time, in (time, scheduling order): a run is a pure
//! function of the topology, the experiment and the seed.

use std::net::Ipv4Addr;

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
    pub pipeline: Switch,
    pub node: Node<QosTrafficManager>,
    /// The earliest wake-up asked for and not yet run (`u64::MAX`: none).
    wake_at: u64,
}

/// Where a port's cable goes.
#[derive(Debug, Clone, Copy)]
struct Peer {
    end: End,
    link: u32,
}

pub struct Simulation<Q: EventQueue> {
    pub now: u64,
    queue: Q,
    /// Frames hosts build and switches' PFC frames, in slots of the
    /// switches' size: a switch takes them in by swapping buffers.
    frames: FramePool,
    pub fabric: Fabric,
    pub experiment: Experiment,
    pub routes: Routes,
    /// On switches built from their configs: the BGP underlay's shortcut.
    underlay: Option<configured::Underlay>,
    pub switches: Vec<SimSwitch>,
    pub hosts: Vec<Host>,
    pub connections: Vec<Connection>,
    pub workload: Workload,
    pub records: Vec<MessageRecord>,
    pub completed: usize,
    /// Of those, the collectives' (not background): the run ends with them.
    pub completed_foreground: usize,
    /// Per switch, per port: the cable's far end.
    switch_peers: Vec<Vec<Option<Peer>>>,
    /// Per host: its leaf, port and cable.
    host_peers: Vec<(u32, u16, u32)>,
    pub link_up: Vec<bool>,
    flight: Flight,
    /// Per cable: its speed and propagation delay.
    wires: Vec<Wire>,
    pub events: u64,
    pub punts: u64,
    /// Reconvergences after link failures, routes they rewrote, and refusals.
    pub reroutes: u32,
    pub routes_rewritten: usize,
    pub reroute_errors: Vec<String>,
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
            switches.push(SimSwitch { pipeline, node, wake_at: u64::MAX });
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
        let connections = workload
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
        let mut simulation = Simulation {
            now: 0,
            queue,
            frames: FramePool::with_slots_of(64, slot),
            link_up: vec![true; fabric.links.len()],
            flight: Flight::default(),
            wires,
            fabric,
            experiment,
            routes,
            underlay,
            switches,
            hosts,
            connections,
            workload,
            records,
            completed: 0,
            completed_foreground: 0,
            switch_peers,
            host_peers,
            events: 0,
            punts: 0,
            reroutes: 0,
            routes_rewritten: 0,
            reroute_errors: Vec::new(),
            depth: DepthHistogram::default(),
            watched: Vec::new(),
            series: Vec::new(),
        };
        for (id, message) in simulation.workload.messages.iter().enumerate() {
            if message.waiting_for == 0 {
                simulation.queue.push(message.delay_ns, Event::Release { message: id as u32 });
            }
        }
        if simulation.experiment.sample_ns > 0 {
            simulation.queue.push(0, Event::Sample);
        }
        if let Some((link, at)) = simulation.experiment.link_failure {
            simulation.queue.push(at, Event::LinkDown { link });
        }
        Ok(simulation)
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

    /// Runs, calling `progress` every 2^20 events.
    pub fn run_with(&mut self, mut progress: impl FnMut(&Self)) {
        while !self.finished() {
            let Some((at, event)) = self.queue.pop() else { break };
            if at > self.experiment.time_limit_ns {
                break;
            }
            self.now = at;
            self.events += 1;
            if self.events & ((1 << 20) - 1) == 0 {
                progress(self);
            }
            self.handle(event);
        }
    }

    fn handle(&mut self, event: Event) {
        let now = self.now;
        match event {
            Event::SwitchFrame { switch, port, frame } => {
                let mine = match frame.as_pooled() {
                    Some(pooled) => self.take_from_peer(switch, port, pooled),
                    None => {
                        let own = frame.as_own().expect("not pooled");
                        self.switches[switch as usize].node.take_frame(&mut self.frames, own)
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
                let nic = &mut self.hosts[host as usize];
                let received = match frame.as_pooled() {
                    Some(pooled) => {
                        let leaf = &mut self.switches[self.host_peers[host as usize].0 as usize].node;
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
                        if let Some((message, _)) = self.connections[qp as usize].in_flight.pop_front() {
                            self.complete(message);
                        }
                    }
                }
                if received.wake {
                    self.wake_host(host, now);
                }
            }
            Event::SwitchWake { switch } => {
                if self.switches[switch as usize].wake_at != now {
                    return;
                }
                self.switches[switch as usize].wake_at = u64::MAX;
                self.with_switch(switch, |node, pipeline, ports| node.poll(pipeline, now, ports));
            }
            Event::HostWake { host } => {
                if self.hosts[host as usize].wake_at != now {
                    return;
                }
                self.hosts[host as usize].wake_at = u64::MAX;
                self.run_host(host);
            }
            Event::Release { message } => {
                let m = self.workload.messages[message as usize];
                let (src, _) = self.workload.connections[m.connection as usize];
                self.records[message as usize].released_ns = now;
                self.hosts[src as usize].release(&mut self.connections, m.connection, message, m.bytes);
                self.wake_host(src, now);
            }
            Event::Sample => {
                self.sample();
                self.queue.push(now + self.experiment.sample_ns, Event::Sample);
            }
            Event::LinkDown { link } => {
                self.link_down(link);
                self.queue.push(now + self.experiment.reconverge_ns, Event::Reconverge);
            }
            Event::Reconverge => {
                let mut pipelines: Vec<&mut Switch> = self.switches.iter_mut().map(|s| &mut s.pipeline).collect();
                self.reroutes += 1;
                let rerouted = match &mut self.underlay {
                    Some(underlay) => underlay.reroute(&self.link_up, &mut pipelines),
                    None => routes::reroute(&self.fabric, &self.link_up, &mut pipelines, self.reroutes << 20),
                };
                match rerouted {
                    Ok(rewritten) => self.routes_rewritten += rewritten,
                    Err(error) => self.reroute_errors.push(error),
                }
            }
            Event::Timeout { message } => {
                if self.records[message as usize].completed_ns != u64::MAX {
                    return;
                }
                let m = self.workload.messages[message as usize];
                let (src, _) = self.workload.connections[m.connection as usize];
                self.hosts[src as usize].retransmit_message(&mut self.connections, m.connection, message, m.bytes);
                self.queue.push_monotone(now + self.experiment.rto_ns, Event::Timeout { message });
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
            peers: &self.switch_peers[s as usize],
            link_up: &self.link_up,
            wires: &self.wires,
            queue: &mut self.queue,
            frames: &mut self.frames,
            flight: &mut self.flight,
            punts: &mut self.punts,
        };
        drive(&mut self.switches[s as usize], s, &mut ports, f);
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
        let [receiver, sender] =
            self.switches.get_disjoint_mut([s as usize, sender as usize]).expect("a cable joins two switches");
        receiver.node.take_frame(sender.node.pool_mut(), frame)
    }

    /// Asks host `h` to run at `at` (unless it already will by then).
    fn wake_host(&mut self, h: u32, at: u64) {
        let host = &mut self.hosts[h as usize];
        if at < host.wake_at {
            host.wake_at = at;
            self.queue.push(at, Event::HostWake { host: h });
        }
    }

    /// The host sends what it may now, and asks to be woken for the next.
    fn run_host(&mut self, h: u32) {
        let now = self.now;
        let workload = &self.workload;
        let bytes = |m: u32| workload.messages[m as usize].bytes;
        let host = &mut self.hosts[h as usize];
        match host.send(now, &mut self.connections, &bytes, &mut self.frames) {
            Ok(sent) => {
                let (switch, port, link) = self.host_peers[h as usize];
                // Counted from when the NIC wrote it, as the arena holds it.
                self.flight.took_off();
                let wire = self.wires[link as usize];
                if self.link_up[link as usize] {
                    let at = wire.arrival(now, sent.len);
                    self.queue.push(at, Event::SwitchFrame { switch, port, frame: InFlight::own(sent.frame) });
                } else {
                    self.frames.release(sent.frame);
                    self.flight.landed();
                }
                if let Some(message) = sent.message_sent {
                    self.queue.push_monotone(now + self.experiment.rto_ns, Event::Timeout { message });
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
        if !self.workload.is_background(id) {
            self.completed_foreground += 1;
        }
        let count = self.workload.messages[id as usize].dependent_count;
        let first = self.workload.messages[id as usize].first_dependent;
        for i in 0..count {
            let later = self.workload.dependents[(first + i) as usize];
            let message = &mut self.workload.messages[later as usize];
            message.waiting_for -= 1;
            if message.waiting_for == 0 {
                let delay = message.delay_ns;
                self.queue.push(now + delay, Event::Release { message: later });
            }
        }
    }

    fn sample(&mut self) {
        let mut row = Vec::with_capacity(self.watched.len());
        for &(s, port) in &self.watched {
            let tm = self.switches[s as usize].node.traffic_manager().tm();
            row.push(tm.port_depth(port).1);
        }
        if !row.is_empty() {
            self.series.push((self.now, row));
        }
        for (s, switch) in self.switches.iter().enumerate() {
            let tm = switch.node.traffic_manager().tm();
            for (port, peer) in self.switch_peers[s].iter().enumerate() {
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
            if let End::Switch { switch, port } = end {
                let now = self.now;
                self.with_switch(switch, |node, pipeline, ports| {
                    node.handle(pipeline, now, dataplane::node::NodeEvent::Link { port, up: false }, ports);
                });
            }
        }
    }

    /// Time port `port` of switch `s` was paused on the data priority by its peer.
    pub fn paused_ns(&self, s: u32, port: u16) -> u64 {
        self.switches[s as usize].node.traffic_manager().tm().pfc_paused_ns(self.now, port, DATA_PRIORITY)
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
        ports.queue.push(wake, Event::SwitchWake { switch: s });
    }
}

/// Frames on cables now, and the most there ever were.
#[derive(Debug, Default)]
struct Flight {
    now: usize,
    peak: usize,
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
    peers: &'a [Option<Peer>],
    link_up: &'a [bool],
    wires: &'a [Wire],
    queue: &'a mut Q,
    frames: &'a mut FramePool,
    flight: &'a mut Flight,
    punts: &'a mut u64,
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
        self.queue.push(at, event);
    }
}

impl<Q: EventQueue> Ports<HostIfTarget> for SwitchPorts<'_, Q> {
    #[inline]
    fn transmit(&mut self, port: PortId, frame: &[u8]) -> bool {
        let Some(peer) = self.live_peer(port) else { return false };
        let (own, buffer) = self.frames.alloc_frame(frame.len());
        buffer.copy_from_slice(frame);
        self.launch(peer, frame.len(), InFlight::own(own));
        true
    }

    /// A data frame stays in the switch's pool while on the cable: the
    /// receiver reads it there and gives the reference back.
    #[inline]
    fn transmit_pooled(&mut self, port: PortId, pool: &mut FramePool, frame: FrameRef) -> bool {
        let Some(peer) = self.live_peer(port) else { return false };
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
