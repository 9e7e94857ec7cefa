//! `switchd run`: composes the daemon from a validated config.
//!
//! 1. the shim on a backend ([`crate::backend::DaemonBackend`]; the soft
//!    backend by default), programmed by [`crate::apply`];
//! 2. forwarding as the backend runs it: for the soft backend, host
//!    interfaces (`sw-ethN`, `vlanN` TAPs with the switch's addresses) and
//!    the front-panel ports' I/O, owned by the forwarding thread; then the
//!    loopback addresses on the kernel's `lo`;
//! 3. the LLDP agent, on the interfaces the backend names (for the soft
//!    backend the ports' host interfaces: the pipeline punts LLDP to
//!    `sw-ethN`, and what the agent writes there leaves through `ethN`);
//! 4. the BGP speaker, when configured ([`crate::bgp`]): sessions over
//!    kernel TCP through the host interfaces, routes into the shim;
//! 5. the management server;
//! 6. a task that delivers the shim's notifications to its subscribers.
//!
//! The running configuration changes through [`crate::commit`]: commits
//! from `swcli` sessions (confirmed commits roll back by themselves when a
//! timer here finds them unconfirmed), and SIGHUP, which re-reads the
//! config file and commits it as the daemon. Either applies in place
//! ([`restart_needed`]) or not at all.
//!
//! It stops on SIGTERM or SIGINT: LLDP sends its shutdown LLDPDUs, the
//! forwarding thread stops and drops its attachments (removing the TAPs),
//! the loopback addresses leave `lo`, and the socket file is removed.

use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use dataplane::io::{AfPacket, AfPacketConfig, FrameBatch, PortIo};
use dataplane::pipeline::PortId;
use sai_shim::backend::soft::SoftBackend;
use sai_shim::{Backend, Notification, PfcDeadlockEvent, Sai};

use crate::apply::{self, Applied};
use crate::backend::{DaemonBackend, LldpPort};
use crate::commit::{ConfigService, Configurator, FollowsConfig};
use crate::config::{Config, PortMode};
use crate::forwarding::monotonic_ns;
use crate::hostif;
use crate::lldp::{AgentConfig, LldpAgent};
use crate::mgmt::{self, SwitchView};

type Shim = Sai<SoftBackend>;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Apply(#[from] apply::ApplyError),
    #[error("shim: {0}")]
    Shim(#[from] sai_shim::SaiError),
    #[error(transparent)]
    HostIf(#[from] hostif::HostIfError),
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
    #[error("BGP: {0}")]
    Bgp(String),
    #[error("{0}")]
    Ib(String),
    #[error("forwarding: {0}")]
    Forwarding(String),
}

pub(crate) fn io_error(what: impl Into<String>) -> impl FnOnce(io::Error) -> RunError {
    let what = what.into();
    move |source| RunError::Io { what, source }
}

/// Builds the shim with the soft backend and programs `config` into it (no I/O).
pub fn build_shim(config: &Config) -> Result<(Shim, Applied), RunError> {
    build_shim_with::<SoftBackend>(config)
}

/// Builds the shim with backend `B` and programs `config` into it.
pub fn build_shim_with<B: DaemonBackend>(config: &Config) -> Result<(Sai<B>, Applied), RunError> {
    let mut sai = Sai::new(B::for_config(config)?, &apply::switch_attributes(config))?;
    match apply::apply(&mut sai, config) {
        Ok(applied) => Ok((sai, applied)),
        Err(error) => {
            // Refused whole: nothing of the half-applied config stays.
            B::abandon(&mut sai);
            Err(error.into())
        }
    }
}

/// The LLDP agent for `config`'s switch, with no ports yet.
pub fn lldp_agent(config: &Config) -> LldpAgent {
    LldpAgent::new(AgentConfig {
        chassis_mac: config.system_mac,
        system_name: config.name.clone(),
        tx_interval_secs: config.lldp.tx_interval_secs,
        ttl_secs: config.lldp.ttl_secs,
    })
}

/// Runs the daemon until SIGTERM or SIGINT; SIGHUP re-reads `path`.
pub async fn run(config: Config, path: PathBuf) -> Result<(), RunError> {
    match config.backend {
        crate::config::BackendKind::Soft => run_with::<SoftBackend>(config, path).await,
        crate::config::BackendKind::Kernel => run_with::<sai_shim::backend::kernel::KernelBackend>(config, path).await,
    }
}

/// [`run`] with the shim on backend `B`.
pub async fn run_with<B: DaemonBackend>(config: Config, path: PathBuf) -> Result<(), RunError> {
    let config = Arc::new(config);
    let (sai, applied) = build_shim_with::<B>(&config)?;
    tracing::info!(
        switch = %config.name,
        backend = B::NAME,
        ports = config.ports.len(),
        vlans = config.vlans.len(),
        routes = applied.routes.len(),
        "config applied to the shim"
    );
    let mut sai = sai;
    let ib = match B::ib_runtime(sai.backend(), &config, &applied) {
        Ok(ib) => ib,
        Err(error) => {
            B::abandon(&mut sai);
            return Err(error);
        }
    };
    let sai = Arc::new(Mutex::new(sai));
    let forwarding = match B::start_forwarding(&sai, &config, &applied, ib.clone()) {
        Ok(forwarding) => Arc::new(Mutex::new(forwarding)),
        Err(error) => {
            // The daemon exits: nothing of the applied config stays behind
            // it (the kernel would forward for a switch that is not there).
            B::abandon(&mut sai.lock().unwrap_or_else(|e| e.into_inner()));
            return Err(error);
        }
    };
    tracing::info!("forwarding running");

    let agent = Arc::new(Mutex::new(lldp_agent(&config)));
    let lldp = {
        let sai = sai.clone();
        let ports_of = move |config: &Config, applied: &Applied| {
            B::lldp_ports(&sai.lock().unwrap_or_else(|e| e.into_inner()), config, applied)
        };
        let mut follower = LldpFollower { io: None, agent: agent.clone(), ports_of: Box::new(ports_of) };
        crate::commit::FollowsConfig::add_missing(&mut follower, &config, &applied)
            .map_err(|error| RunError::Io { what: "start LLDP".into(), source: io::Error::other(error) })?;
        Arc::new(Mutex::new(follower))
    };

    let view = Arc::new(RwLock::new(SwitchView {
        config: config.clone(),
        applied: Arc::new(applied.clone()),
        sai: sai.clone(),
        lldp: agent,
        bgp: None,
        now: Arc::new(monotonic_ns),
        ib: ib.clone(),
        io_stats: forwarding.lock().unwrap_or_else(|e| e.into_inner()).io_stats().unwrap_or_default(),
    }));
    // BGP last: its sessions run over the host interfaces made above.
    // Commits start it, change it live, and stop it (`crate::bgp_plane`).
    let mut plane = crate::bgp_plane::BgpPlane::new(sai.clone(), view.clone());
    plane.start_at_boot(&config, &applied).await.map_err(RunError::Bgp)?;
    let bgp_plane = Arc::new(Mutex::new(plane));
    let configurator = Arc::new(Configurator::new(config.clone(), applied, sai.clone(), view.clone(), path.clone()));
    // Commits add and remove ports and interfaces live: the forwarding
    // thread's I/O and host interfaces first, then LLDP's sockets on them.
    configurator.follow(forwarding.clone());
    configurator.follow(lldp.clone());
    configurator.follow(bgp_plane.clone());
    if let Some(ib) = &ib {
        configurator.follow(Arc::new(Mutex::new(crate::ib::follow::IbFollower::new(ib.clone(), &config))));
    }
    let socket = mgmt::bind(&config.socket).map_err(io_error(format!("bind {}", config.socket.display())))?;
    tracing::info!(socket = %config.socket.display(), "management API listening");
    let service: Arc<dyn ConfigService> = configurator.clone();
    let server = tokio::spawn(mgmt::serve(socket, view.clone(), Some(service)));
    // The metrics endpoint follows commits too (started, moved, stopped).
    let metrics = Arc::new(Mutex::new(crate::metrics::MetricsEndpoint::new(view.clone())));
    metrics
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .add_missing(&config, &view.read().unwrap_or_else(|e| e.into_inner()).applied.clone())
        .map_err(|error| RunError::Io { what: "metrics endpoint".into(), source: io::Error::other(error) })?;
    configurator.follow(metrics.clone());
    let housekeeping = tokio::spawn(publish_notifications(sai.clone()));
    let confirmations = tokio::spawn(expire_confirmed_commits(configurator.clone()));

    loop {
        match next_signal().await.map_err(io_error("install signal handlers"))? {
            Signal::Stop => break,
            Signal::Reload => {
                let configurator = configurator.clone();
                let path = path.clone();
                match tokio::task::spawn_blocking(move || configurator.reload(&path)).await {
                    Ok(Ok(generation)) => tracing::info!(generation, "config reloaded"),
                    Ok(Err(error)) => tracing::error!("reload refused, keeping the running config: {error}"),
                    Err(error) => tracing::error!(%error, "reload failed"),
                }
            }
        }
    }
    tracing::info!("shutting down");
    server.abort();
    housekeeping.abort();
    confirmations.abort();
    metrics.lock().unwrap_or_else(|e| e.into_inner()).stop();
    let _ = server.await;
    drop(view);
    let bgp = bgp_plane.lock().unwrap_or_else(|e| e.into_inner()).speaker();
    if let Some(bgp) = bgp {
        // Cease to every peer before the ports go away.
        bgp.speaker.stop().await;
    }
    lldp.lock().unwrap_or_else(|e| e.into_inner()).stop();
    forwarding.lock().unwrap_or_else(|e| e.into_inner()).stop();
    tracing::info!("stopped");
    Ok(())
}

enum Signal {
    Stop,
    Reload,
}

async fn next_signal() -> io::Result<Signal> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    Ok(tokio::select! {
        _ = term.recv() => { tracing::info!("SIGTERM"); Signal::Stop }
        _ = int.recv() => { tracing::info!("SIGINT"); Signal::Stop }
        _ = hup.recv() => { tracing::info!("SIGHUP: reloading the config"); Signal::Reload }
    })
}

/// What a candidate config changes that a reload cannot apply in place:
/// the socket, the table profile, the BGP speaker's listener, and in the
/// IB-like plane what a link trains with (`crate::ib::follow`) are set up
/// once at start. Ports, interfaces, addresses,
/// LLDP, BGP neighbours, networks and multipath, the traffic manager
/// (`qos:`, port speeds: made again, the queued frames moved, see `Node::replace_traffic_manager`)
/// and the metrics endpoint follow commits
/// ([`crate::commit::FollowsConfig`]); a new BGP ASN or
/// router id restarts the speaker in place (every session reset, said in
/// the commit's answer).
pub fn restart_needed(running: &Config, candidate: &Config) -> Vec<String> {
    let mut reasons = Vec::new();
    // The name applies live (prompt, LLDP, shows; the MAC stays, see
    // `Config::system_mac`). The socket is bound once: moving it would cut
    // every session connected to it, the committing one included, while
    // its answer is on the way; a path derived from a new name (no
    // `management.socket`) is taken at the next start.
    if running.source.management.socket != candidate.source.management.socket {
        reasons.push(format!(
            "management.socket changed: the socket is bound once (moving it would cut every swcli session \
             on it, this one included); switchd keeps listening on {}",
            running.socket.display()
        ));
    }
    if running.profile != candidate.profile {
        // As on hardware: TCAM/hash carving (EOS `hardware tcam profile`,
        // SONiC's SAI profile) takes a reboot; the pipeline's tables are
        // allocated at their size once, and shrinking them under live
        // entries would drop some.
        reasons.push(
            "profile: the table sizes are carved once at start (as TCAM carving needs a reboot on \
             hardware): `save` and restart switchd to take them"
                .to_owned(),
        );
    }
    // `bgp:` added or removed starts or stops the speaker, `bgp.evpn`
    // EVPN's instance in it (`crate::bgp_plane`); the rest of `bgp:`
    // follows commits (`crate::bgp_follow`, `crate::evpn_follow`) unless
    // it needs a new speaker.
    if let (Some(old), Some(new)) = (&running.bgp, &candidate.bgp) {
        let has_bfd = old.neighbors.iter().any(|n| n.bfd);
        if let Some(why) = bgp_evpn::events::reconfigure::live_restart_reason(old, new, has_bfd) {
            reasons.push(format!("the BGP settings changed and need a new speaker: {why}"));
        }
    }
    // `ib.sm` follows commits (`crate::ib::follow`); what a real IB
    // switch would have to train a link again for stays refused.
    reasons.extend(crate::ib::follow::restart_reasons(running, candidate));
    reasons
}

/// How often a pending confirmed commit's deadline is looked at.
const CONFIRM_CHECK_INTERVAL: Duration = Duration::from_millis(250);

/// Rolls back confirmed commits that were not confirmed in time.
async fn expire_confirmed_commits<B: Backend + Send + 'static>(configurator: Arc<Configurator<B>>) {
    let mut tick = tokio::time::interval(CONFIRM_CHECK_INTERVAL);
    loop {
        tick.tick().await;
        let now = std::time::Instant::now();
        if configurator.deadline().is_some_and(|deadline| deadline <= now) {
            let configurator = configurator.clone();
            let _ = tokio::task::spawn_blocking(move || configurator.expire(now)).await;
        }
    }
}

/// How often the shim's queued notifications are delivered to subscribers.
pub const NOTIFICATION_INTERVAL: Duration = Duration::from_millis(50);

/// Delivers the shim's notifications to its subscribers (bounded channels:
/// `Sai::subscribe`; the BGP/EVPN speaker and others take them there), and
/// logs them.
async fn publish_notifications<B: Backend>(sai: Arc<Mutex<Sai<B>>>) {
    let mut tick = tokio::time::interval(NOTIFICATION_INTERVAL);
    loop {
        tick.tick().await;
        let notifications = sai.lock().unwrap_or_else(|e| e.into_inner()).publish_notifications();
        for notification in notifications {
            match notification {
                Notification::QueuePfcDeadlock { queue, port, index, event } => match event {
                    PfcDeadlockEvent::Detected => {
                        tracing::warn!(?port, queue = index, object = ?queue, "PFC watchdog: storm detected")
                    }
                    PfcDeadlockEvent::Recovered => {
                        tracing::info!(?port, queue = index, object = ?queue, "PFC watchdog: storm restored")
                    }
                },
                notification => tracing::debug!(?notification, "shim notification"),
            }
        }
    }
}

/// The LLDP agent's I/O: one AF_PACKET socket per port's host interface
/// (`sw-ethN`), on a thread of its own (LLDP is a few frames a minute).
struct LldpIo {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// New port sets for the thread, taken between polls.
    ports: mpsc::Sender<Vec<LldpPort>>,
    /// The port set last sent.
    current: Vec<LldpPort>,
}

impl LldpIo {
    fn start(agent: Arc<Mutex<LldpAgent>>, ports: Vec<LldpPort>) -> io::Result<LldpIo> {
        let mut sockets = Vec::new();
        set_lldp_ports(&agent, &mut sockets, &ports)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (sender, receiver) = mpsc::channel();
        let thread =
            std::thread::Builder::new().name("lldp".into()).spawn(move || lldp_loop(agent, sockets, receiver, flag))?;
        Ok(LldpIo { stop, thread: Some(thread), ports: sender, current: ports })
    }

    /// Speaks on `ports` from the thread's next poll on.
    fn set_ports(&mut self, ports: Vec<LldpPort>) {
        if ports != self.current {
            self.current = ports.clone();
            let _ = self.ports.send(ports);
        }
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The ports LLDP speaks on for a config and what the shim made of it.
type PortsOf = dyn Fn(&Config, &Applied) -> Vec<LldpPort> + Send;

/// LLDP follows the config: a port that leaves is dropped from the agent
/// (its neighbours forgotten), a new one starts speaking; new timers apply
/// at once; `lldp.enabled` starts the agent's I/O or stops it (stopping
/// sends TTL 0 on every port, so neighbours forget this switch now).
struct LldpFollower {
    /// Running while `lldp.enabled`.
    io: Option<LldpIo>,
    agent: Arc<Mutex<LldpAgent>>,
    /// The ports LLDP speaks on for a config (the backend's
    /// [`DaemonBackend::lldp_ports`]).
    ports_of: Box<PortsOf>,
}

impl LldpFollower {
    fn stop(&mut self) {
        if let Some(mut io) = self.io.take() {
            io.stop();
            self.agent.lock().unwrap_or_else(|e| e.into_inner()).remove_all_ports();
        }
    }
}

impl crate::commit::FollowsConfig for LldpFollower {
    fn remove_stale(&mut self, target: &Config, _applied: &Applied) -> Result<(), String> {
        let Some(io) = &mut self.io else { return Ok(()) };
        let kept = io
            .current
            .iter()
            .filter(|port| target.ports.iter().any(|p| p.name == port.name && !matches!(p.mode, PortMode::Ib(_))))
            .cloned()
            .collect();
        io.set_ports(kept);
        Ok(())
    }

    fn add_missing(&mut self, target: &Config, applied: &Applied) -> Result<(), String> {
        if !target.lldp.enabled {
            self.stop();
            return Ok(());
        }
        let (interval, ttl) = (target.lldp.tx_interval_secs, target.lldp.ttl_secs);
        let mut agent = self.agent.lock().unwrap_or_else(|e| e.into_inner());
        agent.set_timers(interval, ttl, monotonic_ns());
        agent.set_system_name(&target.name, monotonic_ns());
        drop(agent);
        let ports = (self.ports_of)(target, applied);
        match &mut self.io {
            Some(io) => io.set_ports(ports),
            None => self.io = Some(LldpIo::start(self.agent.clone(), ports).map_err(|e| format!("start LLDP: {e}"))?),
        }
        Ok(())
    }
}

/// Makes `sockets` (and the agent's ports) `ports`: closes those that left
/// or changed, opens the new ones.
fn set_lldp_ports(
    agent: &Mutex<LldpAgent>,
    sockets: &mut Vec<(LldpPort, AfPacket)>,
    ports: &[LldpPort],
) -> io::Result<()> {
    let mut agent = agent.lock().unwrap_or_else(|e| e.into_inner());
    sockets.retain(|(port, _)| {
        let keep = ports.contains(port);
        if !keep {
            agent.remove_port(port.id);
        }
        keep
    });
    let new: Vec<&LldpPort> = ports.iter().filter(|port| !sockets.iter().any(|(open, _)| open == *port)).collect();
    for port in new {
        // LLDP only, a frame every few seconds: a small ring bound to its
        // EtherType, not a copy of every punted frame. One 4 KiB block of
        // two slots each way (was 16 + 16 slots, 64 KiB a port: a spine's
        // 124 ports carried 8 MiB of LLDP rings that never held more than
        // a frame): a neighbour sends one LLDPDU per msgTxInterval, and
        // the agent one per port per poll.
        let config = AfPacketConfig {
            rx_frames: 2,
            tx_frames: 2,
            protocol: u16::from_be_bytes(ETHERTYPE_LLDP),
            ..AfPacketConfig::default()
        };
        let socket = AfPacket::with_config(&port.interface, config)?;
        agent.add_port(port.id, port.name.clone(), port.description.clone(), monotonic_ns());
        sockets.push((port.clone(), socket));
    }
    Ok(())
}

const ETHERTYPE_LLDP: [u8; 2] = [0x88, 0xcc];

fn lldp_loop(
    agent: Arc<Mutex<LldpAgent>>,
    mut sockets: Vec<(LldpPort, AfPacket)>,
    port_sets: mpsc::Receiver<Vec<LldpPort>>,
    stop: Arc<AtomicBool>,
) {
    let mut batch = FrameBatch::new(16, 2048);
    let mut out = Vec::new();
    let send = |sockets: &mut Vec<(LldpPort, AfPacket)>, out: &mut Vec<(PortId, Vec<u8>)>| {
        for (port, frame) in out.drain(..) {
            if let Some((_, socket)) = sockets.iter_mut().find(|(p, _)| p.id == port)
                && let Err(error) = socket.send(&frame).and_then(|()| socket.flush())
            {
                tracing::debug!(%error, port, "LLDP send failed");
            }
        }
    };
    while !stop.load(Ordering::Acquire) {
        while let Ok(ports) = port_sets.try_recv() {
            if let Err(error) = set_lldp_ports(&agent, &mut sockets, &ports) {
                tracing::warn!(%error, "LLDP: cannot open a port's socket");
            }
        }
        let mut fds: Vec<libc::pollfd> = sockets
            .iter()
            .map(|(_, s)| libc::pollfd { fd: s.fd().as_raw_fd(), events: libc::POLLIN, revents: 0 })
            .collect();
        // Wake at least every 200 ms to notice `stop`, new ports and timers.
        // SAFETY: fds is a valid array of pollfd for the call's duration.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 200) };
        let now = monotonic_ns();
        let mut agent = agent.lock().unwrap_or_else(|e| e.into_inner());
        for (i, (port, socket)) in sockets.iter_mut().enumerate() {
            if fds[i].revents & libc::POLLERR != 0 {
                // The interface went away (a commit removed the port):
                // take the error, or poll reports it forever.
                let _ = socket.take_error();
            }
            if fds[i].revents & libc::POLLIN == 0 {
                continue;
            }
            batch.clear();
            if socket.recv_batch(&mut batch).is_err() {
                continue;
            }
            for frame in batch.iter() {
                if frame.get(12..14) == Some(&ETHERTYPE_LLDP[..]) {
                    let _ = agent.on_frame(port.id, frame, now);
                }
            }
        }
        agent.poll(now, &mut out);
        drop(agent);
        send(&mut sockets, &mut out);
    }
    agent.lock().unwrap_or_else(|e| e.into_inner()).shutdown(&mut out);
    send(&mut sockets, &mut out);
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "name: s1\nports:\n  - { name: eth1, mode: routed, addresses: [10.0.0.1/24] }\n  - { name: eth2, mode: access, vlan: 10 }\nvlans:\n  - { id: 10 }\n";

    #[test]
    fn route_and_vlan_changes_reload_in_place() {
        let running = Config::from_yaml(BASE).unwrap();
        let candidate = Config::from_yaml(&format!(
            "{BASE}  - {{ id: 20 }}\nroutes:\n  - {{ prefix: 0.0.0.0/0, next_hops: [10.0.0.2] }}\n"
        ))
        .unwrap();
        assert!(restart_needed(&running, &candidate).is_empty());
    }

    #[test]
    fn port_interface_and_address_changes_reload_in_place() {
        let running = Config::from_yaml(BASE).unwrap();
        let moved = Config::from_yaml(&BASE.replace("10.0.0.1/24", "10.0.9.1/24")).unwrap();
        assert!(restart_needed(&running, &moved).is_empty());
        let more =
            Config::from_yaml(&BASE.replace("vlans:", "  - { name: eth3, mode: access, vlan: 10 }\nvlans:")).unwrap();
        assert!(restart_needed(&running, &more).is_empty());
        assert!(restart_needed(&more, &running).is_empty(), "a port leaves");
        let svi = Config::from_yaml(&BASE.replace("{ id: 10 }", "{ id: 10, addresses: [10.10.0.1/24] }")).unwrap();
        assert!(restart_needed(&running, &svi).is_empty());
        let loopback = Config::from_yaml(&format!("{BASE}loopback: [10.255.0.9/32]\n")).unwrap();
        assert!(restart_needed(&running, &loopback).is_empty());
        let renamed = Config::from_yaml(&BASE.replace("name: s1", "name: s2")).unwrap();
        assert!(restart_needed(&running, &renamed).is_empty(), "a rename applies live");
        let moved = Config::from_yaml(&format!("{BASE}management: {{ socket: /run/s1-other.sock }}\n")).unwrap();
        assert!(restart_needed(&running, &moved)[0].starts_with("management.socket"));
    }

    #[test]
    fn a_table_profile_change_stays_a_restart_and_says_why() {
        let running = Config::from_yaml(BASE).unwrap();
        let small = Config::from_yaml(&format!("{BASE}profile: small\n")).unwrap();
        let reasons = restart_needed(&running, &small);
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        assert!(reasons[0].starts_with("profile:") && reasons[0].contains("restart switchd"), "{reasons:?}");
    }
}
