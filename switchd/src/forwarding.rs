//! The forwarding loop: one thread that moves frames between the port I/O
//! adapters and the pipeline.
//!
//! ```text
//!  ethN (AF_PACKET ring) --rx batch--> Node::receive(now, port, frame) --traffic manager--> ethM tx ring
//!                                                                     \----------------> sw-ethN / vlanV TAP (punt)
//!  sw-ethN / vlanV TAP (kernel's own traffic) --> Node::host_send --> ethN
//!  every POLL_INTERVAL: Node::poll(now) (FDB aging, ARP/ND timers and probes)
//!  ethN in mode ib: 0x88B5 frames --Ports::link_level--> IbRuntime (credits, LFT, agent, SM) --> ethM
//! ```
//!
//! The thread waits on one epoll set holding every port, every host
//! interface TAP and an eventfd that control commands ring. Control-plane
//! access (config apply, management queries) shares the dataplane through a
//! `Mutex` that this thread takes once per wake-up and holds while it works
//! through the ready batches, never per packet. Frames are copied from the
//! rx rings into a [`FrameBatch`] and run through one [`Node`] (the
//! dataplane crate's packet loop, shared with the demo and the simulator),
//! whose pooled frames are written to the tx rings; the steady state
//! allocates nothing.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dataplane::io::{FrameBatch, IoStats, MAX_FRAME_LEN, PortIo, Tap};
use dataplane::node::{AnyTrafficManager, Node, NodeCounters, OutputQueues, OutputQueuesConfig, Ports, QosStats};
use dataplane::pipeline::{Egress, LinkLevelFrame, PortId};
use qos::watchdog::WatchdogEvent;

use crate::ib::{IbRuntime, SharedIb};

/// Frames read from one descriptor before moving to the next ready one.
pub const RX_BATCH: usize = 64;
/// How often the pipeline's timers run (aging, neighbour probes). Also the
/// longest the thread sleeps when nothing arrives.
pub const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// How often the ports' link state (carrier) is checked.
pub const LINK_INTERVAL: Duration = Duration::from_millis(250);
/// How long [`Forwarding::sync`] waits for the thread.
const SYNC_TIMEOUT: Duration = Duration::from_secs(5);
/// How often adapter counters are published for the management API.
const STATS_INTERVAL: Duration = Duration::from_millis(200);
/// How often the traffic manager's counters are copied for `show`.
const QOS_STATS_INTERVAL: Duration = Duration::from_millis(50);
/// How far the traffic manager lets a port's transmit clock lag behind
/// `now` and catch up: the thread's wake-ups (timerfd, scheduling on a busy
/// machine) come late, by milliseconds when the machine is loaded, and a
/// port that could not make up for them would send below its line rate.
/// The price is a burst of at most this much line time after a late wake.
pub const TM_CATCH_UP: Duration = Duration::from_millis(5);

/// The traffic manager the loop runs, and where its counters go.
pub struct TrafficManagerSetup {
    pub tm: AnyTrafficManager,
    /// Filled with the traffic manager's counters every few tens of
    /// milliseconds (the shim's soft backend reads it for `show`).
    pub stats: Option<Arc<Mutex<Option<QosStats>>>>,
    /// Where the PFC watchdog's events go, as often (the shim's soft
    /// backend turns them into notifications).
    pub watchdog_events: Option<Arc<Mutex<Vec<WatchdogEvent>>>>,
    /// The shim's port object behind each pipeline index it was built
    /// for (empty: not known), so that a later one knows which indices
    /// went to another port ([`Node::replace_traffic_manager`]).
    pub port_owners: Vec<Option<sai_shim::ObjectId>>,
}

/// The indices whose port object in `old` (a running traffic manager's
/// [`TrafficManagerSetup::port_owners`]) is gone in `new`: removed, or
/// given to another port (the shim reuses a freed index for the next port
/// it creates). Their queued frames and state must not pass to whatever
/// port has the index now.
pub fn renumbered_ports(old: &[Option<sai_shim::ObjectId>], new: &[Option<sai_shim::ObjectId>]) -> Vec<PortId> {
    (old.iter().enumerate())
        .filter(|&(index, owner)| owner.is_some() && new.get(index) != Some(owner))
        .map(|(index, _)| index as PortId)
        .collect()
}

/// Watchdog events waiting for the shim beyond this many are counted as
/// lost ([`LoopCounters::watchdog_events_lost`]) rather than kept.
const WATCHDOG_EVENT_BACKLOG: usize = 1024;

impl Default for TrafficManagerSetup {
    /// The FIFO: every frame sent as soon as its port takes it.
    fn default() -> Self {
        TrafficManagerSetup {
            tm: AnyTrafficManager::Fifo(OutputQueues::new(OutputQueuesConfig::default())),
            stats: None,
            watchdog_events: None,
            port_owners: Vec::new(),
        }
    }
}

/// Nanoseconds on the daemon's monotonic clock, the time every pipeline and
/// protocol call in `switchd` takes (forwarding, config apply, LLDP), so
/// their timestamps compare.
pub fn monotonic_ns() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// What the forwarding loop drives: the node's view of a pipeline (a bare
/// `Switch`, or the shim with its soft backend).
pub use dataplane::node::{Forwarding as Dataplane, HostIfTarget};

/// Something the forwarding loop reads from and writes to.
pub enum Attachment<H> {
    /// A front-panel port's I/O.
    Port { port: PortId, io: Box<dyn PortIo> },
    /// A host interface: punts for it go into the TAP, frames the kernel
    /// writes into the TAP are sent through it.
    Host { host_if: H, tap: Tap },
}

impl<H> Attachment<H> {
    fn name(&self) -> &str {
        match self {
            Attachment::Port { io, .. } => io.name(),
            Attachment::Host { tap, .. } => tap.name(),
        }
    }
}

/// Control commands, applied between batches.
enum Command<H> {
    Attach(Attachment<H>),
    DetachPort(PortId),
    DetachHost(H),
    /// A new traffic manager (a commit changed `qos:`).
    ReplaceTrafficManager(Box<TrafficManagerSetup>),
    /// `SCHED_FIFO` at this priority, or back to nice -10
    /// (`forwarding.realtime_priority`).
    SetRealtime(Option<u8>),
    /// Answered once every command before it is applied.
    Barrier(Sender<()>),
}

/// Counters of one attached device, below the pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceStats {
    pub name: String,
    pub io: IoStats,
}

/// What the forwarding thread last published for readers elsewhere (the
/// management API, metrics): its adapters' counters and its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForwardingStats {
    pub devices: Vec<DeviceStats>,
    /// The node's counters (traffic manager refusals, ports that refused
    /// a frame, CE marks...).
    pub node: NodeCounters,
    /// The loop's counters, read at the same moment.
    pub looped: LoopSnapshot,
    /// How the thread is scheduled.
    pub scheduling: crate::scheduling::SchedulingState,
}

/// [`LoopCounters`] read at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopSnapshot {
    pub egress_unattached: u64,
    pub punt_unattached: u64,
    pub tx_errors: u64,
    pub rx_errors: u64,
    pub wakeups: u64,
    pub panics: u64,
    pub watchdog_events_lost: u64,
    /// How late the thread woke after the instant it asked to.
    pub late: crate::scheduling::LatenessSnapshot,
}

impl ForwardingStats {
    /// Frames lost in the forwarding thread outside the pipeline's own
    /// drop reasons, by reason (kebab-case, as `show drops` names them).
    /// The traffic manager's refusals made by a reconfiguration are apart
    /// from its ordinary ones (the node counts them in both).
    pub fn drops(&self) -> [(&'static str, u64); 6] {
        let (node, looped) = (&self.node, &self.looped);
        [
            ("traffic-manager", node.tm_drops.saturating_sub(node.tm_reconfigure_drops)),
            ("traffic-manager-reconfigure", node.tm_reconfigure_drops),
            ("port-refused", node.port_refused),
            ("egress-port-unattached", looped.egress_unattached),
            ("punt-unattached", looped.punt_unattached + node.punts_unattached),
            ("transmit-error", looped.tx_errors),
        ]
    }
}

/// Frames the loop itself could not deliver.
#[derive(Debug, Default)]
pub struct LoopCounters {
    /// An Output named a port with no I/O attached.
    pub egress_unattached: AtomicU64,
    /// A punt for a port or router interface with no host interface.
    pub punt_unattached: AtomicU64,
    /// A send on an adapter failed.
    pub tx_errors: AtomicU64,
    /// A receive on an adapter failed.
    pub rx_errors: AtomicU64,
    /// Wake-ups of the loop (for tests and tuning).
    pub wakeups: AtomicU64,
    /// Batches abandoned because the pipeline panicked.
    pub panics: AtomicU64,
    /// PFC watchdog events nobody took in time (see [`TrafficManagerSetup`]).
    pub watchdog_events_lost: AtomicU64,
    /// How late the thread woke after the instant it asked to (its
    /// timerfd or its poll timeout): scheduling delay.
    pub late: crate::scheduling::Lateness,
}

impl LoopCounters {
    pub fn snapshot(&self) -> LoopSnapshot {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        LoopSnapshot {
            egress_unattached: read(&self.egress_unattached),
            punt_unattached: read(&self.punt_unattached),
            tx_errors: read(&self.tx_errors),
            rx_errors: read(&self.rx_errors),
            wakeups: read(&self.wakeups),
            panics: read(&self.panics),
            watchdog_events_lost: read(&self.watchdog_events_lost),
            late: self.late.snapshot(),
        }
    }
}

/// The running forwarding thread. Dropping it stops the thread and drops
/// every attachment (which removes the TAPs).
pub struct Forwarding<H> {
    commands: Sender<Command<H>>,
    wake: Arc<OwnedFd>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<Mutex<ForwardingStats>>,
    counters: Arc<LoopCounters>,
}

impl<H: Copy + Eq + std::fmt::Debug + Send + 'static> Forwarding<H> {
    /// Starts the thread with `attachments`; `dataplane` stays shared with
    /// the control plane, which locks it between the loop's batches.
    pub fn start<D: Dataplane<HostIf = H> + Send + 'static>(
        dataplane: Arc<Mutex<D>>,
        attachments: Vec<Attachment<H>>,
    ) -> io::Result<Forwarding<H>> {
        Forwarding::start_with(dataplane, attachments, TrafficManagerSetup::default(), None)
    }

    /// [`start`](Self::start), with the IB-like plane of the ports in
    /// `mode: ib` run by the loop: their 0x88B5 frames go to it, and it is
    /// polled at every wake-up.
    pub fn start_with_ib<D: Dataplane<HostIf = H> + Send + 'static>(
        dataplane: Arc<Mutex<D>>,
        attachments: Vec<Attachment<H>>,
        ib: Option<SharedIb>,
    ) -> io::Result<Forwarding<H>> {
        Forwarding::start_with(dataplane, attachments, TrafficManagerSetup::default(), ib)
    }

    /// [`start_with_ib`](Self::start_with_ib), with the traffic manager
    /// `setup` gives.
    pub fn start_with<D: Dataplane<HostIf = H> + Send + 'static>(
        dataplane: Arc<Mutex<D>>,
        attachments: Vec<Attachment<H>>,
        setup: TrafficManagerSetup,
        ib: Option<SharedIb>,
    ) -> io::Result<Forwarding<H>> {
        // SAFETY: plain syscalls, results checked before use.
        let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epoll < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh descriptor we own.
        let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
        // SAFETY: as above.
        let wake = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if wake < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh descriptor we own.
        let wake = Arc::new(unsafe { OwnedFd::from_raw_fd(wake) });
        epoll_add(epoll.as_raw_fd(), wake.as_raw_fd(), Token::Wake)?;
        // SAFETY: as above.
        let timer = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if timer < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh descriptor we own.
        let timer = unsafe { OwnedFd::from_raw_fd(timer) };
        epoll_add(epoll.as_raw_fd(), timer.as_raw_fd(), Token::Timer)?;

        let (commands, receiver) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(ForwardingStats::default()));
        let counters = Arc::new(LoopCounters::default());
        let mut lp = Loop {
            dataplane,
            epoll,
            wake: wake.clone(),
            commands: receiver,
            stop: stop.clone(),
            ports: Vec::new(),
            hosts: Vec::new(),
            dirty: Vec::new(),
            links: Vec::new(),
            batch: FrameBatch::new(RX_BATCH, MAX_FRAME_LEN),
            node: Node::with_traffic_manager(setup.tm),
            qos_stats: setup.stats,
            tm_port_owners: setup.port_owners,
            watchdog_events: setup.watchdog_events,
            timer,
            timer_armed_for: u64::MAX,
            ib,
            stats: stats.clone(),
            counters: counters.clone(),
            scheduling: crate::scheduling::SchedulingState::default(),
        };
        for attachment in attachments {
            lp.attach(attachment)?;
        }
        lp.publish_stats();
        let thread = std::thread::Builder::new().name("forwarding".into()).spawn(move || lp.run())?;
        Ok(Forwarding { commands, wake, stop, thread: Some(thread), stats, counters })
    }

    /// Adds a port or host interface to the running loop.
    pub fn attach(&self, attachment: Attachment<H>) {
        self.send(Command::Attach(attachment));
    }

    /// Stops reading and writing a port; its adapter is dropped.
    pub fn detach_port(&self, port: PortId) {
        self.send(Command::DetachPort(port));
    }

    /// Removes a host interface (its TAP is dropped, so deleted).
    pub fn detach_host(&self, host_if: H) {
        self.send(Command::DetachHost(host_if));
    }

    /// Runs the thread at `SCHED_FIFO` `priority`, or at nice -10 for
    /// `None` (`forwarding.realtime_priority`); what it got is in
    /// [`ForwardingStats::scheduling`].
    pub fn set_realtime(&self, priority: Option<u8>) {
        self.send(Command::SetRealtime(priority));
    }

    /// Runs `setup`'s traffic manager from the next batch on; the frames
    /// the old one held move into it (`Node::replace_traffic_manager`).
    pub fn replace_traffic_manager(&self, setup: TrafficManagerSetup) {
        self.send(Command::ReplaceTrafficManager(Box::new(setup)));
    }

    /// Waits until the thread has applied every command sent before (a
    /// detached TAP is then closed, so deleted, and its name free again).
    /// Never call it holding the dataplane's lock: the thread may be
    /// waiting for that lock before it reads its commands.
    pub fn sync(&self) {
        let (done, wait) = mpsc::channel();
        self.send(Command::Barrier(done));
        if wait.recv_timeout(SYNC_TIMEOUT).is_err() && self.is_running() {
            tracing::warn!("the forwarding thread did not answer a barrier in time");
        }
    }

    /// Adapter counters, refreshed every few hundred milliseconds.
    pub fn device_stats(&self) -> Vec<DeviceStats> {
        self.stats.lock().unwrap_or_else(|e| e.into_inner()).devices.clone()
    }

    /// The adapter and loop counters as shared state, for readers elsewhere.
    pub fn stats_handle(&self) -> Arc<Mutex<ForwardingStats>> {
        self.stats.clone()
    }

    pub fn counters(&self) -> &LoopCounters {
        &self.counters
    }

    /// Whether the thread is still running.
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stops the thread and waits for it; the attachments are dropped (TAPs
    /// removed) before this returns.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn send(&self, command: Command<H>) {
        if self.commands.send(command).is_ok() {
            ring(self.wake.as_raw_fd());
        }
    }
}

impl<H> Forwarding<H> {
    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Release);
        ring(self.wake.as_raw_fd());
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("forwarding thread panicked");
        }
    }
}

impl<H> Drop for Forwarding<H> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn ring(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64 to an eventfd.
    unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Wake,
    /// The traffic manager's next wake-up (a port's line rate, a pause
    /// ending, a PFC refresh).
    Timer,
    Port(PortId),
    /// Index into the loop's host interface table.
    Host(u16),
}

impl Token {
    fn encode(self) -> u64 {
        match self {
            Token::Wake => 0,
            Token::Timer => 3 << 32,
            Token::Port(p) => (1 << 32) | u64::from(p),
            Token::Host(slot) => (2 << 32) | u64::from(slot),
        }
    }

    fn decode(value: u64) -> Token {
        let index = value as u16;
        match value >> 32 {
            1 => Token::Port(index),
            2 => Token::Host(index),
            3 => Token::Timer,
            _ => Token::Wake,
        }
    }
}

fn epoll_add(epoll: RawFd, fd: RawFd, token: Token) -> io::Result<()> {
    let mut event = libc::epoll_event { events: libc::EPOLLIN as u32, u64: token.encode() };
    // SAFETY: event is valid for the call.
    if unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, fd, &mut event) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn epoll_del(epoll: RawFd, fd: RawFd) {
    // SAFETY: a null event is allowed for EPOLL_CTL_DEL.
    unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
}

struct Loop<D: Dataplane> {
    dataplane: Arc<Mutex<D>>,
    epoll: OwnedFd,
    wake: Arc<OwnedFd>,
    commands: Receiver<Command<D::HostIf>>,
    stop: Arc<AtomicBool>,
    /// Indexed by PortId.
    ports: Vec<Option<Box<dyn PortIo>>>,
    /// Host interfaces; few, so punts find theirs by a linear scan.
    hosts: Vec<Option<(D::HostIf, Tap)>>,
    /// Ports with frames queued on their tx ring since the last flush.
    dirty: Vec<PortId>,
    /// The link state last reported to the dataplane, by PortId.
    links: Vec<Option<bool>>,
    batch: FrameBatch,
    node: Node<AnyTrafficManager>,
    qos_stats: Option<Arc<Mutex<Option<QosStats>>>>,
    watchdog_events: Option<Arc<Mutex<Vec<WatchdogEvent>>>>,
    /// The running traffic manager's [`TrafficManagerSetup::port_owners`].
    tm_port_owners: Vec<Option<sai_shim::ObjectId>>,
    /// Fires at the node's next wake-up when that is sooner than the
    /// loop's own poll interval.
    timer: OwnedFd,
    timer_armed_for: u64,
    ib: Option<SharedIb>,
    stats: Arc<Mutex<ForwardingStats>>,
    counters: Arc<LoopCounters>,
    scheduling: crate::scheduling::SchedulingState,
}

/// The loop's devices as the node writes to them.
struct Devices<'a, H> {
    ports: &'a mut [Option<Box<dyn PortIo>>],
    hosts: &'a mut [Option<(H, Tap)>],
    dirty: &'a mut Vec<PortId>,
    counters: &'a LoopCounters,
    /// The IB-like plane, locked for this wake-up, and the time.
    ib: Option<&'a mut IbRuntime>,
    now: u64,
}

/// Writes `frame` to `port`'s adapter (flushed when the wake-up ends).
fn send_frame(
    ports: &mut [Option<Box<dyn PortIo>>],
    dirty: &mut Vec<PortId>,
    counters: &LoopCounters,
    port: PortId,
    frame: &[u8],
) -> bool {
    match ports.get_mut(usize::from(port)) {
        Some(Some(io)) => {
            if !dirty.contains(&port) {
                dirty.push(port);
            }
            if io.send(frame).is_err() {
                counters.tx_errors.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            true
        }
        _ => {
            counters.egress_unattached.fetch_add(1, Ordering::Relaxed);
            false
        }
    }
}

impl<H> Devices<'_, H> {
    /// Timers of the IB-like plane, and the carrier of its ports.
    fn poll_ib(&mut self, links: Option<&[(PortId, bool)]>) {
        let Devices { ports, dirty, counters, ib: Some(ib), now, .. } = self else { return };
        let mut tx = |port: PortId, frame: &[u8]| send_frame(ports, dirty, counters, port, frame);
        for &(port, up) in links.unwrap_or_default() {
            ib.set_carrier(*now, port, up, &mut tx);
        }
        ib.poll(*now, &mut tx);
    }
}

impl<H: Copy + Eq> Ports<H> for Devices<'_, H> {
    fn transmit(&mut self, port: PortId, frame: &[u8]) -> bool {
        send_frame(self.ports, self.dirty, self.counters, port, frame)
    }

    fn link_level(&mut self, port: PortId, kind: LinkLevelFrame, frame: &[u8]) {
        let Devices { ports, dirty, counters, ib: Some(ib), now, .. } = self else { return };
        if kind == LinkLevelFrame::IbLike {
            ib.receive(*now, port, frame, &mut |port, frame| send_frame(ports, dirty, counters, port, frame));
        }
    }

    fn punt(&mut self, host_if: Option<H>, _egress: Egress, frame: &[u8]) {
        let tap = self.hosts.iter_mut().flatten().find(|(key, _)| Some(*key) == host_if).map(|(_, tap)| tap);
        match tap {
            Some(tap) => {
                if tap.send(frame).is_err() {
                    self.counters.tx_errors.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => {
                self.counters.punt_unattached.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl<D: Dataplane> Loop<D> {
    fn attach(&mut self, attachment: Attachment<D::HostIf>) -> io::Result<()> {
        let epoll = self.epoll.as_raw_fd();
        tracing::debug!(device = attachment.name(), "attach");
        match attachment {
            Attachment::Port { port, io } => {
                let index = usize::from(port);
                if self.ports.len() <= index {
                    self.ports.resize_with(index + 1, || None);
                }
                epoll_add(epoll, io.fd(), Token::Port(port))?;
                if let Some(old) = self.ports[index].replace(io) {
                    epoll_del(epoll, old.fd());
                }
                if let Some(link) = self.links.get_mut(index) {
                    *link = None;
                }
            }
            Attachment::Host { host_if, tap } => {
                self.detach_host(host_if);
                let slot = match self.hosts.iter().position(Option::is_none) {
                    Some(slot) => slot,
                    None => {
                        self.hosts.push(None);
                        self.hosts.len() - 1
                    }
                };
                let token = u16::try_from(slot)
                    .map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "too many host interfaces"))?;
                epoll_add(epoll, tap.fd(), Token::Host(token))?;
                self.hosts[slot] = Some((host_if, tap));
            }
        }
        Ok(())
    }

    fn detach_host(&mut self, host_if: D::HostIf) {
        let epoll = self.epoll.as_raw_fd();
        for entry in &mut self.hosts {
            if entry.as_ref().is_some_and(|(key, _)| *key == host_if)
                && let Some((_, tap)) = entry.take()
            {
                epoll_del(epoll, tap.fd());
            }
        }
    }

    fn apply(&mut self, command: Command<D::HostIf>) {
        match command {
            Command::Attach(attachment) => {
                let name = attachment.name().to_string();
                if let Err(error) = self.attach(attachment) {
                    tracing::error!(device = name, %error, "cannot attach");
                }
            }
            Command::DetachPort(port) => {
                if let Some(io) = self.ports.get_mut(usize::from(port)).and_then(Option::take) {
                    epoll_del(self.epoll.as_raw_fd(), io.fd());
                    self.dirty.retain(|&p| p != port);
                }
            }
            Command::DetachHost(host_if) => self.detach_host(host_if),
            Command::ReplaceTrafficManager(setup) => {
                // An index whose port a commit removed (and maybe gave to
                // a port it added) keeps nothing of the old port.
                let renumbered = renumbered_ports(&self.tm_port_owners, &setup.port_owners);
                let migration = self.node.replace_traffic_manager(monotonic_ns(), setup.tm, &renumbered);
                self.tm_port_owners = setup.port_owners;
                if let Some(tm) = self.node.traffic_manager_mut().qos_mut() {
                    tm.count_migrated(migration.kept);
                }
                self.qos_stats = setup.stats;
                self.watchdog_events = setup.watchdog_events;
                // The shows read the new one (its speeds) as soon as the
                // commit that made it returns (it waits on a barrier).
                self.publish_qos_stats();
                // The new one's wake-ups, not the old one's.
                self.timer_armed_for = u64::MAX;
                tracing::info!(
                    kept = migration.kept,
                    dropped = migration.dropped,
                    "traffic manager replaced: the frames it held moved into the new one"
                );
            }
            Command::SetRealtime(priority) => {
                crate::scheduling::apply(&mut self.scheduling, priority);
                self.publish_stats();
            }
            Command::Barrier(done) => {
                let _ = done.send(());
            }
        }
    }

    fn run(mut self) {
        crate::scheduling::renice();
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 64];
        let mut next_stats = Instant::now();
        let mut next_qos_stats = Instant::now();
        let mut next_link = Instant::now();
        let dataplane = self.dataplane.clone();
        while !self.stop.load(Ordering::Acquire) {
            let timeout_ms = POLL_INTERVAL.as_millis() as libc::c_int;
            // When the thread should run again at the latest: its timer
            // (a time already past fires at once) or the poll timeout.
            let before = monotonic_ns();
            let due = (self.timer_armed_for.max(before)).min(before + POLL_INTERVAL.as_nanos() as u64);
            // SAFETY: events is a valid array of the length given.
            let n = unsafe {
                libc::epoll_wait(self.epoll.as_raw_fd(), events.as_mut_ptr(), events.len() as libc::c_int, timeout_ms)
            };
            let woke = monotonic_ns();
            if woke >= due {
                self.counters.late.record(woke - due);
            }
            if n < 0 {
                let err = io::Error::last_os_error();
                if err.kind() != io::ErrorKind::Interrupted {
                    tracing::error!(error = %err, "epoll_wait failed; forwarding stops");
                    break;
                }
                continue;
            }
            self.counters.wakeups.fetch_add(1, Ordering::Relaxed);

            // Control first, between batches.
            while let Ok(command) = self.commands.try_recv() {
                self.apply(command);
            }

            let now = monotonic_ns();
            let ready = &events[..n as usize];
            // A bug in the pipeline must not leave a switch that looks up
            // but forwards nothing: the batch in hand is lost, counted and
            // logged, and the loop goes on.
            let worked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.work(&dataplane, ready, now, &mut next_link)
            }));
            if worked.is_err() {
                self.counters.panics.fetch_add(1, Ordering::Relaxed);
                tracing::error!("the pipeline panicked; the batch in hand is dropped");
            }
            self.flush();
            if Instant::now() >= next_stats {
                self.publish_stats();
                next_stats = Instant::now() + STATS_INTERVAL;
            }
            if Instant::now() >= next_qos_stats {
                self.publish_qos_stats();
                next_qos_stats = Instant::now() + QOS_STATS_INTERVAL;
            }
            self.arm_timer();
        }
        self.publish_qos_stats();
        self.flush();
        self.publish_stats();
        tracing::info!("forwarding stopped");
        // Attachments drop here: rings unmapped, TAPs removed.
    }

    /// Everything done under the dataplane lock for one wake-up.
    fn work(&mut self, dataplane: &Mutex<D>, ready: &[libc::epoll_event], now: u64, next_link: &mut Instant) {
        let mut dp = dataplane.lock().unwrap_or_else(|e| e.into_inner());
        let ib = self.ib.clone();
        let mut ib = ib.as_ref().map(crate::ib::lock);
        for event in ready {
            match Token::decode(event.u64) {
                Token::Wake => drain_eventfd(self.wake.as_raw_fd()),
                Token::Timer => {
                    drain_eventfd(self.timer.as_raw_fd());
                    self.timer_armed_for = u64::MAX;
                }
                Token::Port(port) => {
                    if event.events & (libc::EPOLLERR as u32) != 0 {
                        self.port_error(port);
                    }
                    self.rx_port(&mut dp, now, port, ib.as_deref_mut())
                }
                Token::Host(slot) => self.rx_host(&mut dp, now, usize::from(slot)),
            }
        }
        // Time read again: receiving the batch took some, and the ports'
        // line rates count it.
        let now = monotonic_ns();
        if now >= self.node.next_wakeup() {
            let mut devices = Devices {
                ports: &mut self.ports,
                hosts: &mut self.hosts,
                dirty: &mut self.dirty,
                counters: &self.counters,
                ib: None,
                now,
            };
            self.node.poll(&mut *dp, now, &mut devices);
        }
        let mut changed = Vec::new();
        if Instant::now() >= *next_link {
            changed = self.check_links(&mut dp);
            *next_link = Instant::now() + LINK_INTERVAL;
        }
        // The IB-like plane runs at every wake-up: flow-control refreshes
        // and the embedded SM's timers are finer than the pipeline's poll.
        let mut devices = Devices {
            ports: &mut self.ports,
            hosts: &mut self.hosts,
            dirty: &mut self.dirty,
            counters: &self.counters,
            ib: ib.as_deref_mut(),
            now,
        };
        devices.poll_ib(Some(&changed));
    }

    /// Reads a batch from a front-panel port and runs each frame through the
    /// pipeline.
    fn rx_port(&mut self, dp: &mut D, now: u64, port: PortId, ib: Option<&mut IbRuntime>) {
        let Some(Some(io)) = self.ports.get_mut(usize::from(port)) else {
            return;
        };
        self.batch.clear();
        if let Err(error) = io.recv_batch(&mut self.batch) {
            self.counters.rx_errors.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(port, %error, "rx failed");
        }
        let mut devices = Devices {
            ports: &mut self.ports,
            hosts: &mut self.hosts,
            dirty: &mut self.dirty,
            counters: &self.counters,
            ib,
            now,
        };
        self.node.receive_batch(dp, now, port, self.batch.iter(), &mut devices);
    }

    /// Takes a port socket's pending error (its interface went down or
    /// away), which would otherwise make it poll ready forever.
    fn port_error(&mut self, port: PortId) {
        if let Some(Some(io)) = self.ports.get_mut(usize::from(port))
            && let Some(error) = io.take_error()
        {
            self.counters.rx_errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(port = io.name(), %error, "port socket error");
        }
    }

    /// Reads what the kernel sent through a host interface and injects it.
    fn rx_host(&mut self, dp: &mut D, now: u64, slot: usize) {
        let Some(Some((host_if, tap))) = self.hosts.get_mut(slot) else {
            return;
        };
        let host_if = *host_if;
        self.batch.clear();
        if let Err(error) = tap.recv_batch(&mut self.batch) {
            self.counters.rx_errors.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(tap = tap.name(), %error, "host rx failed");
        }
        let mut devices = Devices {
            ports: &mut self.ports,
            hosts: &mut self.hosts,
            dirty: &mut self.dirty,
            counters: &self.counters,
            ib: None,
            now,
        };
        for frame in self.batch.iter() {
            self.node.host_send(dp, now, host_if, frame, &mut devices);
        }
    }

    /// Reports carrier changes of the ports to the dataplane (which stops
    /// forwarding to a down port and flushes the MACs learned on it); the
    /// changes, for the IB-like plane.
    fn check_links(&mut self, dp: &mut D) -> Vec<(PortId, bool)> {
        let mut changed = Vec::new();
        if self.links.len() < self.ports.len() {
            self.links.resize(self.ports.len(), None);
        }
        for (index, io) in self.ports.iter().enumerate() {
            let Some(io) = io else { continue };
            let Some(up) = io.link_up() else { continue };
            if self.links[index] != Some(up) {
                if self.links[index].is_some() {
                    tracing::info!(port = io.name(), up, "link state changed");
                }
                self.links[index] = Some(up);
                dp.set_link_status(index as PortId, up);
                changed.push((index as PortId, up));
            }
        }
        changed
    }

    fn flush(&mut self) {
        for port in self.dirty.drain(..) {
            if let Some(Some(io)) = self.ports.get_mut(usize::from(port))
                && io.flush().is_err()
            {
                self.counters.tx_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Sets the timer to the node's next wake-up when that comes before
    /// the loop's own poll interval would wake it.
    fn arm_timer(&mut self) {
        let mut wake = self.node.next_wakeup();
        if let Some(ib) = &self.ib
            && let Some(line_free) = crate::ib::lock(ib).next_wakeup(monotonic_ns())
        {
            wake = wake.min(line_free);
        }
        if wake == self.timer_armed_for {
            return;
        }
        let delay = wake.saturating_sub(monotonic_ns()).max(1_000);
        if delay >= POLL_INTERVAL.as_nanos() as u64 {
            return;
        }
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: 0, tv_nsec: delay as libc::c_long },
        };
        // SAFETY: a valid itimerspec for a timerfd we own.
        unsafe { libc::timerfd_settime(self.timer.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        self.timer_armed_for = wake;
    }

    fn publish_qos_stats(&mut self) {
        if let (Some(slot), Some(tm)) = (&self.watchdog_events, self.node.traffic_manager_mut().qos_mut()) {
            let mut queue = slot.lock().unwrap_or_else(|e| e.into_inner());
            for event in tm.tm_mut().drain_events() {
                if queue.len() < WATCHDOG_EVENT_BACKLOG {
                    queue.push(event);
                } else {
                    self.counters.watchdog_events_lost.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        let (Some(slot), Some(tm)) = (&self.qos_stats, self.node.traffic_manager().qos()) else { return };
        let stats = tm.stats(monotonic_ns());
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(stats);
    }

    fn publish_stats(&self) {
        let mut all = Vec::new();
        for io in self.ports.iter().flatten() {
            all.push(DeviceStats { name: io.name().to_string(), io: io.stats() });
        }
        for (_, tap) in self.hosts.iter().flatten() {
            all.push(DeviceStats { name: tap.name().to_string(), io: tap.stats() });
        }
        let published = ForwardingStats {
            devices: all,
            node: self.node.counters(),
            looped: self.counters.snapshot(),
            scheduling: self.scheduling.clone(),
        };
        *self.stats.lock().unwrap_or_else(|e| e.into_inner()) = published;
    }
}

fn drain_eventfd(fd: RawFd) {
    let mut value: u64 = 0;
    // SAFETY: reads 8 bytes into a live u64.
    unsafe { libc::read(fd, (&mut value as *mut u64).cast(), 8) };
}
