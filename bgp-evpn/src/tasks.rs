//! Tokio I/O around the sans-IO [`Speaker`]: a TCP listener, one connector
//! and one reader/writer pair per connection, the timer, and a channel API
//! ([`BgpSpeaker`]) for the daemon and `show` commands. Forwarding changes go
//! to a [`RouteSink`].

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use ipnetwork::IpNetwork;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{JoinHandle, JoinSet};

use crate::bfd::{Bfd, BfdDiscards, BfdEvent, BfdPeerView, BfdTask};
use crate::config::{BgpConfig, NeighborConfig};
use crate::events::reconfigure::{Reconfigured, live_restart_reason};
use crate::events::{Output, PeerSummary, RouteView, Speaker};
use crate::evpn::show::EvpnState;
use crate::evpn::{EvpnConfig, Rebuild};
use crate::neighbor::ConnId;
use crate::packet::evpn::MacAddr;
use crate::packet::message::{EXTENDED_MAX_LEN, HEADER_LEN, frame_len};
use crate::packet::{Family, Nlri};
use crate::rib::PeerId;
use crate::session_security;
use crate::sink::RouteSink;
use crate::unnumbered::{self, Discovered};

/// How long an outgoing TCP connect may take before it counts as failed.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a shutdown waits for the connections' writers to drain.
const WRITERS_CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

/// Frames and connection events queued for the speaker task, across all
/// connections. When the speaker falls behind, readers wait for room and
/// stop reading, so TCP flow control slows the peer instead of this queue
/// growing without bound. Only readers and connect tasks send on it; the
/// speaker task only receives, so it can never wait on itself.
const IO_QUEUE_LEN: usize = 1024;

enum Command {
    Summary(oneshot::Sender<Vec<PeerSummary>>),
    Routes(Family, Option<Nlri>, oneshot::Sender<Vec<RouteView>>),
    LocRibLen(oneshot::Sender<usize>),
    AddNetwork(Nlri),
    RemoveNetwork(Nlri),
    StopPeer(IpAddr),
    StartPeer(IpAddr),
    InterfaceDown(String, Vec<IpNetwork>),
    LocalMac(u32, MacAddr, bool),
    LocalNeighbor(u32, IpAddr, Option<MacAddr>),
    /// The EVPN tables; `true`: the VNIs alone ([`crate::evpn::Evpn::vni_state`]).
    Evpn(bool, oneshot::Sender<EvpnState>),
    EvpnReconfigure(Option<EvpnConfig>, Rebuild, oneshot::Sender<()>),
    Reconfigure(Box<BgpConfig>, oneshot::Sender<Result<Reconfigured, String>>),
    Shutdown(oneshot::Sender<()>),
}

enum IoEvent {
    Connected { peer: PeerId, conn: ConnId, result: io::Result<TcpStream> },
    Frame { peer: PeerId, conn: ConnId, bytes: Vec<u8> },
    Closed { peer: PeerId, conn: ConnId },
}

enum WriterMsg {
    Bytes(Vec<u8>),
    Close,
}

/// A running speaker. Dropping it stops the task (sessions close without
/// NOTIFICATION); [`BgpSpeaker::shutdown`] sends Cease first.
pub struct BgpSpeaker {
    commands: mpsc::Sender<Command>,
    /// The address the listener is bound to, if listening.
    pub listen_addr: Option<SocketAddr>,
    task: Option<JoinHandle<()>>,
    /// The BFD sessions of neighbours with `bfd: true` (none: no task).
    bfd: Option<(Bfd, BfdTask)>,
    /// Router advertisement tasks of unnumbered neighbours' interfaces.
    discovery: Vec<JoinHandle<()>>,
}

impl BgpSpeaker {
    /// Binds the listener and starts every configured session.
    pub async fn spawn(config: BgpConfig, sink: Box<dyn RouteSink>) -> Result<BgpSpeaker, String> {
        let listener = if config.listen_port != 0 {
            let addr = SocketAddr::new(config.listen_address, config.listen_port);
            Some(bind_listener(addr, &config.neighbors)?)
        } else {
            None
        };
        let listen_addr = listener.as_ref().and_then(|l| l.local_addr().ok());
        let (bfd, bfd_events) = start_bfd(&config)?;
        let interfaces: Vec<String> =
            config.neighbors.iter().filter(|n| n.is_unnumbered()).filter_map(|n| n.interface.clone()).collect();
        let (found_tx, found_rx) = mpsc::unbounded_channel();
        let discovery = unnumbered::spawn(interfaces, found_tx);
        let speaker = Speaker::new(config)?;
        let (tx, rx) = mpsc::channel(64);
        let bfd_handle = bfd.as_ref().map(|(b, _)| b.clone());
        let task = tokio::spawn(run(speaker, listener, rx, sink, bfd_events, found_rx, bfd_handle));
        Ok(BgpSpeaker { commands: tx, listen_addr, task: Some(task), bfd, discovery })
    }

    /// `show bfd peers`: the BFD sessions and the datagrams none took.
    pub async fn bfd_peers(&self) -> (Vec<BfdPeerView>, BfdDiscards) {
        match &self.bfd {
            Some((bfd, _)) => bfd.peers().await,
            None => Default::default(),
        }
    }

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.commands.send(make(tx)).await.ok()?;
        rx.await.ok()
    }

    pub async fn summary(&self) -> Vec<PeerSummary> {
        self.ask(Command::Summary).await.unwrap_or_default()
    }

    pub async fn routes(&self, family: Family, prefix: Option<Nlri>) -> Vec<RouteView> {
        self.ask(|tx| Command::Routes(family, prefix, tx)).await.unwrap_or_default()
    }

    pub async fn loc_rib_len(&self) -> usize {
        self.ask(Command::LocRibLen).await.unwrap_or_default()
    }

    pub async fn add_network(&self, nlri: Nlri) {
        let _ = self.commands.send(Command::AddNetwork(nlri)).await;
    }

    pub async fn remove_network(&self, nlri: Nlri) {
        let _ = self.commands.send(Command::RemoveNetwork(nlri)).await;
    }

    /// The dataplane learned (`present`) or aged out `mac` in `vni`.
    pub async fn evpn_local_mac(&self, vni: u32, mac: MacAddr, present: bool) {
        let _ = self.commands.send(Command::LocalMac(vni, mac, present)).await;
    }

    /// ARP/ND bound `ip` to `mac` in `vni` (`None`: the binding went).
    pub async fn evpn_local_neighbor(&self, vni: u32, ip: IpAddr, mac: Option<MacAddr>) {
        let _ = self.commands.send(Command::LocalNeighbor(vni, ip, mac)).await;
    }

    /// A new `evpn:` section applied as a diff ([`Speaker::evpn_reconfigure`]);
    /// returns once the speaker has queued what forwarding must change.
    pub async fn evpn_reconfigure(&self, config: Option<EvpnConfig>, rebuild: Rebuild) {
        let _ = self.ask(|tx| Command::EvpnReconfigure(config, rebuild, tx)).await;
    }

    /// A new `bgp:` section applied as a diff ([`Speaker::reconfigure`]):
    /// the sessions of neighbours that did not change stay up. Refused,
    /// nothing changed, with the reason when it needs a new speaker
    /// (ASN, router id, listener; BFD or an unnumbered interface where the
    /// speaker started without one) or is invalid.
    pub async fn reconfigure(&self, config: BgpConfig) -> Result<Reconfigured, String> {
        self.ask(|tx| Command::Reconfigure(Box::new(config), tx))
            .await
            .unwrap_or_else(|| Err("the BGP speaker has stopped".to_owned()))
    }

    /// The EVPN instance's tables (empty without EVPN).
    pub async fn evpn_state(&self) -> EvpnState {
        self.ask(|tx| Command::Evpn(false, tx)).await.unwrap_or_default()
    }

    /// The EVPN instance's VNIs alone, with their counts (`show evpn vni`,
    /// metrics): no table of MACs built.
    pub async fn evpn_vni_state(&self) -> EvpnState {
        self.ask(|tx| Command::Evpn(true, tx)).await.unwrap_or_default()
    }

    pub async fn stop_peer(&self, addr: IpAddr) {
        let _ = self.commands.send(Command::StopPeer(addr)).await;
    }

    pub async fn start_peer(&self, addr: IpAddr) {
        let _ = self.commands.send(Command::StartPeer(addr)).await;
    }

    /// The port under `interface` (with these subnets) lost its link: the
    /// eBGP sessions directly over it drop now (fast external fallover,
    /// [`Speaker::interface_down`]).
    pub async fn interface_down(&self, interface: &str, subnets: Vec<IpNetwork>) {
        let _ = self.commands.send(Command::InterfaceDown(interface.to_owned(), subnets)).await;
    }

    /// [`Self::shutdown`] through a shared handle (a commit that removes
    /// `bgp:` while shows may hold the speaker): Cease/Administrative
    /// Shutdown to every peer; returns once the task has queued its last
    /// forwarding change and the NOTIFICATIONs, after which it stops, the
    /// listener closing with it.
    pub async fn stop(&self) {
        let _ = self.ask(Command::Shutdown).await;
    }

    /// Sends Cease/Administrative Shutdown to every peer and stops.
    pub async fn shutdown(mut self) {
        let _ = self.ask(Command::Shutdown).await;
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for BgpSpeaker {
    fn drop(&mut self) {
        for task in &self.discovery {
            task.abort();
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Starts the BFD task with a session per neighbour that asks for one
/// (none asking: no task, no socket).
#[allow(clippy::type_complexity)]
fn start_bfd(
    config: &BgpConfig,
) -> Result<(Option<(Bfd, BfdTask)>, Option<mpsc::UnboundedReceiver<BfdEvent>>), String> {
    if !config.neighbors.iter().any(|n| n.bfd) {
        return Ok((None, None));
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let (bfd, task) = Bfd::spawn_standard(tx).map_err(|e| format!("bgp.neighbors: bfd: {e}"))?;
    // Unnumbered neighbours get theirs once their address is known (run).
    for n in config.neighbors.iter().filter(|n| n.bfd && !n.is_unnumbered()) {
        bfd.add(n.address, config.bfd.session_config());
    }
    Ok((Some((bfd, task)), Some(rx)))
}

/// Binds the listener with every neighbour's MD5 key on it (the kernel
/// checks the SYN's signature before we ever see the connection).
fn bind_listener(addr: SocketAddr, neighbors: &[NeighborConfig]) -> Result<TcpListener, String> {
    let fail = |e: io::Error| format!("bgp.listen: {addr}: {e}");
    let socket = if addr.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() }.map_err(fail)?;
    socket.set_reuseaddr(true).map_err(fail)?;
    for (i, n) in neighbors.iter().enumerate() {
        if let Some(password) = &n.password {
            session_security::set_md5_key(&socket, addr.is_ipv6(), n.address, Some(password))
                .map_err(|e| format!("bgp.neighbors[{i}].password: TCP MD5 key on the listener {addr}: {e}"))?;
        }
    }
    let hops: Vec<Option<u8>> = neighbors.iter().map(|n| n.ttl_security_hops).collect();
    session_security::set_listener_gtsm(&socket, addr.is_ipv6(), &hops).map_err(fail)?;
    socket.bind(addr).map_err(fail)?;
    socket.listen(128).map_err(fail)
}

/// [`BgpSpeaker::reconfigure`] in the speaker task: the listener's MD5
/// keys and GTSM and the BFD sessions follow the neighbours.
fn reconfigure(
    d: &mut Driver,
    now: u64,
    new: BgpConfig,
    listener: Option<&TcpListener>,
    bfd: Option<&Bfd>,
) -> Result<Reconfigured, String> {
    let old = d.speaker.config.clone();
    if let Some(why) = live_restart_reason(&old, &new, bfd.is_some()) {
        return Err(format!("needs a restart of the BGP speaker: {why}"));
    }
    let done = d.speaker.reconfigure(now, new)?;
    let new = &d.speaker.config;
    if let Some(listener) = listener {
        let v6 = listener.local_addr().is_ok_and(|a| a.is_ipv6());
        for n in old.neighbors.iter().filter(|n| n.password.is_some()) {
            if !new.neighbors.iter().any(|m| m.address == n.address && m.password.is_some()) {
                let _ = session_security::set_md5_key(listener, v6, n.address, None);
            }
        }
        for (i, n) in new.neighbors.iter().enumerate() {
            if let Some(password) = &n.password {
                session_security::set_md5_key(listener, v6, n.address, Some(password))
                    .map_err(|e| format!("bgp.neighbors[{i}].password: TCP MD5 key on the listener: {e}"))?;
            }
        }
        let hops: Vec<Option<u8>> = new.neighbors.iter().map(|n| n.ttl_security_hops).collect();
        session_security::set_listener_gtsm(listener, v6, &hops)
            .map_err(|e| format!("bgp.neighbors: GTSM on the listener: {e}"))?;
    }
    if let Some(bfd) = bfd {
        for n in old.neighbors.iter().filter(|n| n.bfd && !n.is_unnumbered()) {
            bfd.remove(n.address);
        }
        for n in new.neighbors.iter().filter(|n| n.bfd && !n.is_unnumbered()) {
            bfd.add(n.address, new.bfd.session_config());
        }
    }
    Ok(done)
}

struct Driver {
    speaker: Speaker,
    sink: Box<dyn RouteSink>,
    conns: HashMap<(PeerId, ConnId), mpsc::UnboundedSender<WriterMsg>>,
    /// Every connection's writer, so a shutdown can wait for its Ceases to
    /// leave before the daemon takes the addresses away.
    writers: JoinSet<()>,
    io_tx: mpsc::Sender<IoEvent>,
    start: Instant,
}

impl Driver {
    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// Carries out every pending output of the speaker.
    fn flush(&mut self) {
        while let Some(out) = self.speaker.poll_output() {
            match out {
                Output::Connect { peer, conn, remote } => {
                    let Some(config) = self.speaker.peer(peer).map(|p| p.config.clone()) else { continue };
                    let io_tx = self.io_tx.clone();
                    tokio::spawn(async move {
                        let result = tokio::time::timeout(CONNECT_TIMEOUT, connect(remote, &config))
                            .await
                            .unwrap_or_else(|_| {
                                // A peer whose MD5 key differs (or who has none) drops
                                // our SYNs in its kernel without an answer, so a
                                // timeout is all we see; say so.
                                let why = if config.password.is_some() {
                                    "connect timed out (TCP MD5 is configured: a peer with another or no password drops the SYN silently)"
                                } else {
                                    "connect timed out"
                                };
                                Err(io::Error::new(io::ErrorKind::TimedOut, why))
                            });
                        let _ = io_tx.send(IoEvent::Connected { peer, conn, result }).await;
                    });
                }
                Output::Send { peer, conn, bytes } => {
                    if let Some(tx) = self.conns.get(&(peer, conn)) {
                        let _ = tx.send(WriterMsg::Bytes(bytes));
                    }
                }
                Output::Close { peer, conn } => {
                    if let Some(tx) = self.conns.remove(&(peer, conn)) {
                        let _ = tx.send(WriterMsg::Close);
                    }
                }
                Output::Fib(change) => self.sink.apply(change),
                Output::SessionUp { .. } | Output::SessionDown { .. } => {}
            }
        }
    }

    /// Closes every connection and waits (a bounded time: a peer that
    /// stopped reading must not hold a shutdown) until the writers have put
    /// what was queued, the Ceases included, on the wire and sent their FIN.
    /// Answering the shutdown before that let the daemon remove the session
    /// addresses first, and a peer never heard the Cease: it kept the routes
    /// through us for its hold time.
    async fn close_writers(&mut self) {
        for (_, tx) in self.conns.drain() {
            let _ = tx.send(WriterMsg::Close);
        }
        let all_done = async { while self.writers.join_next().await.is_some() {} };
        if tokio::time::timeout(WRITERS_CLOSE_TIMEOUT, all_done).await.is_err() {
            tracing::warn!("shutdown: a connection's writer still busy after {WRITERS_CLOSE_TIMEOUT:?}");
        }
    }

    /// Starts the reader and writer of a new connection.
    fn attach(&mut self, peer: PeerId, conn: ConnId, stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        let (mut rd, mut wr) = stream.into_split();
        let (tx, mut rx) = mpsc::unbounded_channel::<WriterMsg>();
        self.conns.insert((peer, conn), tx);
        while self.writers.try_join_next().is_some() {}
        self.writers.spawn(async move {
            while let Some(msg) = rx.recv().await {
                match msg {
                    WriterMsg::Bytes(b) => {
                        if wr.write_all(&b).await.is_err() {
                            break;
                        }
                    }
                    WriterMsg::Close => break,
                }
            }
            let _ = wr.shutdown().await;
        });
        let io_tx = self.io_tx.clone();
        tokio::spawn(async move {
            let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
            let mut chunk = vec![0u8; 1 << 16];
            'read: loop {
                let n = match rd.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                let mut at = 0;
                loop {
                    match frame_len(&buf[at..], EXTENDED_MAX_LEN) {
                        Ok(Some(len)) => {
                            let bytes = buf[at..at + len].to_vec();
                            at += len;
                            if io_tx.send(IoEvent::Frame { peer, conn, bytes }).await.is_err() {
                                break 'read;
                            }
                        }
                        Ok(None) => break,
                        Err(_) => {
                            // Let the speaker decode the header and send the
                            // matching NOTIFICATION; nothing after it can be framed.
                            let bytes = buf[at..at + HEADER_LEN].to_vec();
                            let _ = io_tx.send(IoEvent::Frame { peer, conn, bytes }).await;
                            break 'read;
                        }
                    }
                }
                buf.drain(..at);
            }
            let _ = io_tx.send(IoEvent::Closed { peer, conn }).await;
        });
    }

    fn io_event(&mut self, ev: IoEvent) {
        let now = self.now();
        match ev {
            IoEvent::Connected { peer, conn, result: Ok(stream) } => {
                let local = stream.local_addr().map(|a| a.ip()).unwrap_or(IpAddr::from([0, 0, 0, 0]));
                self.attach(peer, conn, stream);
                self.speaker.connected(now, peer, conn, unmap(local));
            }
            IoEvent::Connected { peer, conn, result: Err(e) } => {
                if e.kind() == io::ErrorKind::TimedOut {
                    tracing::warn!(peer, error = %e, "connect failed");
                } else {
                    tracing::debug!(peer, error = %e, "connect failed");
                }
                self.speaker.closed(now, peer, conn);
            }
            IoEvent::Frame { peer, conn, bytes } => self.speaker.received(now, peer, conn, &bytes),
            IoEvent::Closed { peer, conn } => {
                if self.conns.remove(&(peer, conn)).is_some() {
                    self.speaker.closed(now, peer, conn);
                }
            }
        }
    }

    fn accept(&mut self, stream: TcpStream, remote: SocketAddr) {
        let Some(peer) = self.speaker.peer_by_addr(remote.ip()) else {
            tracing::info!(%remote, "connection from an unconfigured address refused");
            return;
        };
        if let Some(hops) = self.speaker.peer(peer).and_then(|p| p.config.ttl_security_hops)
            && let Err(e) = session_security::set_gtsm(&stream, remote, hops)
        {
            tracing::warn!(%remote, error = %e, "GTSM could not be set; connection refused");
            return;
        }
        let local = stream.local_addr().map(|a| unmap(a.ip())).unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let now = self.now();
        // The id is known only once the speaker accepted; outputs wait in its
        // queue until `flush`, after the connection is attached.
        let conn = self.speaker.accepted(now, peer, local);
        self.attach(peer, conn, stream);
    }
}

fn interface_index(name: &str) -> Option<u32> {
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: a valid NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    (index != 0).then_some(index)
}

fn unmap(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

/// Connects to a neighbour with its session protection set before the SYN.
async fn connect(remote: SocketAddr, config: &NeighborConfig) -> io::Result<TcpStream> {
    // A link-local peer is reached through its interface (the scope).
    let remote = match (remote, &config.interface) {
        (SocketAddr::V6(v6), Some(iface)) if crate::config::is_link_local(remote.ip()) => {
            let index = interface_index(iface)
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no interface {iface}")))?;
            SocketAddr::V6(std::net::SocketAddrV6::new(*v6.ip(), v6.port(), 0, index))
        }
        _ => remote,
    };
    let socket = if remote.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    if let Some(local) = config.local_address {
        socket.bind(SocketAddr::new(local, 0))?;
    }
    if let Some(password) = &config.password {
        session_security::set_md5_key(&socket, remote.is_ipv6(), remote.ip(), Some(password))?;
    }
    if let Some(hops) = config.ttl_security_hops {
        session_security::set_gtsm(&socket, remote, hops)?;
    }
    socket.connect(remote).await
}

async fn run(
    speaker: Speaker,
    listener: Option<TcpListener>,
    mut commands: mpsc::Receiver<Command>,
    sink: Box<dyn RouteSink>,
    mut bfd_events: Option<mpsc::UnboundedReceiver<BfdEvent>>,
    mut discovered: mpsc::UnboundedReceiver<Discovered>,
    bfd: Option<Bfd>,
) {
    let (io_tx, mut io_rx) = mpsc::channel(IO_QUEUE_LEN);
    let mut d = Driver { speaker, sink, conns: HashMap::new(), writers: JoinSet::new(), io_tx, start: Instant::now() };
    let now = d.now();
    d.speaker.start(now);
    d.flush();
    loop {
        let deadline = d.speaker.poll_timeout().map(|t| d.start + Duration::from_nanos(t));
        let sleep = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        let accept = async {
            match &listener {
                Some(l) => l.accept().await,
                None => std::future::pending().await,
            }
        };
        let bfd_event = async {
            match &mut bfd_events {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            Some(found) = discovered.recv() => {
                let now = d.now();
                let addr = IpAddr::V6(found.address);
                if let Some(old) = d.speaker.set_peer_address(now, &found.interface, addr)
                    && let Some(bfd) = &bfd
                    && d.speaker.peer_by_addr(addr).and_then(|id| d.speaker.peer(id)).is_some_and(|p| p.config.bfd)
                    && let Some(scope) = interface_index(&found.interface)
                {
                    // The unnumbered neighbour's BFD session follows its address.
                    bfd.remove(old);
                    bfd.add_scoped(addr, d.speaker.config.bfd.session_config(), scope);
                }
            }
            Some(event) = bfd_event => {
                if event.path_failed() {
                    let now = d.now();
                    d.speaker.bfd_down(now, event.peer, &event.transition.diagnostic.to_string());
                }
            }
            ev = io_rx.recv() => {
                let Some(ev) = ev else { break };
                d.io_event(ev);
                // Drain what else is ready. Outputs go out after each event:
                // a NOTIFICATION answering a frame must reach its writer
                // before the reader's Closed (next in the queue) removes it.
                for _ in 0..256 {
                    d.flush();
                    match io_rx.try_recv() {
                        Ok(ev) => d.io_event(ev),
                        Err(_) => break,
                    }
                }
            }
            accepted = accept => {
                if let Ok((stream, remote)) = accepted {
                    d.accept(stream, remote);
                }
            }
            cmd = commands.recv() => {
                let Some(cmd) = cmd else { break };
                let now = d.now();
                match cmd {
                    Command::Summary(tx) => { let _ = tx.send(d.speaker.summary(now)); }
                    Command::Routes(f, p, tx) => { let _ = tx.send(d.speaker.routes(f, p.as_ref())); }
                    Command::LocRibLen(tx) => { let _ = tx.send(d.speaker.rib.loc_len()); }
                    Command::AddNetwork(n) => d.speaker.add_network(n),
                    Command::RemoveNetwork(n) => d.speaker.remove_network(n),
                    Command::LocalMac(vni, mac, present) => d.speaker.evpn_local_mac(now, vni, mac, present),
                    Command::LocalNeighbor(vni, ip, mac) => d.speaker.evpn_local_neighbor(now, vni, ip, mac),
                    Command::EvpnReconfigure(config, rebuild, tx) => {
                        d.speaker.evpn_reconfigure(now, config, &rebuild);
                        d.flush();
                        let _ = tx.send(());
                    }
                    Command::Reconfigure(config, tx) => {
                        let result = reconfigure(&mut d, now, *config, listener.as_ref(), bfd.as_ref());
                        d.flush();
                        let _ = tx.send(result);
                    }
                    Command::Evpn(vnis_only, tx) => {
                        let state = d.speaker.evpn.as_ref().map(|e| if vnis_only { e.vni_state() } else { e.state(now) });
                        let _ = tx.send(state.unwrap_or_default());
                    }
                    Command::StopPeer(a) => if let Some(p) = d.speaker.peer_by_addr(a) { d.speaker.stop_peer(now, p) },
                    Command::StartPeer(a) => if let Some(p) = d.speaker.peer_by_addr(a) { d.speaker.start_peer(now, p) },
                    Command::InterfaceDown(name, subnets) => d.speaker.interface_down(now, &name, &subnets),
                    Command::Shutdown(tx) => {
                        d.speaker.shutdown(now);
                        d.flush();
                        d.close_writers().await;
                        let _ = tx.send(());
                        break;
                    }
                }
            }
            _ = sleep => {
                let now = d.now();
                d.speaker.handle_timeout(now);
            }
        }
        d.flush();
    }
}
