//! The BFD I/O task: the sans-IO [`Sessions`] driven by a timer and by the
//! datagrams of the sockets in [`super::socket`] (UDP 3784, one pair per
//! address family), and a channel API ([`Bfd`]) through which a protocol
//! registers its peers, hears their state changes ([`BfdEvent`]) and
//! `show bfd peers` reads the sessions ([`BfdPeerView`]).

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use serde::Serialize;
use socket2::SockRef;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::packet::{CONTROL_PORT, Diagnostic, State};
use super::session::{SessionConfig, Transition};
use super::sessions::{Discard, Sessions};
use super::socket::{FamilySockets, Received, recv_with_ttl};

/// A session's state change, for the protocol that registered the peer
/// (BGP drops its neighbour when a session leaves Up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BfdEvent {
    pub peer: IpAddr,
    pub transition: Transition,
    /// The remote's state as last heard: a client keeps its session when
    /// the remote went AdminDown (RFC 5882 section 3.2).
    pub remote_state: State,
}

impl BfdEvent {
    /// The session left Up for a reason its clients act on: the path (or
    /// the remote's forwarding) failed, not an operator's AdminDown.
    pub fn path_failed(&self) -> bool {
        self.transition.from == State::Up && self.transition.to == State::Down && self.remote_state != State::AdminDown
    }
}

/// One session as `show bfd peers` shows it. Intervals in milliseconds
/// (the wire carries microseconds); times in milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BfdPeerView {
    pub peer: IpAddr,
    pub state: String,
    pub remote_state: String,
    /// The diagnostic we send (RFC 5880 4.1): `none` while Up.
    pub diagnostic: String,
    pub local_discriminator: u32,
    pub remote_discriminator: u32,
    pub desired_min_tx_ms: u32,
    pub required_min_rx_ms: u32,
    pub detect_mult: u8,
    pub remote_desired_min_tx_ms: u32,
    pub remote_required_min_rx_ms: u32,
    pub remote_detect_mult: u8,
    /// The negotiated transmit interval (RFC 5880 6.8.2).
    pub tx_interval_ms: u32,
    /// The negotiated detection time (RFC 5880 6.8.4).
    pub detection_time_ms: u64,
    /// Time in Up, while Up.
    pub uptime_ms: Option<u64>,
    /// The last time the session went Down after being Up: how long the
    /// peer had been silent then (the detection time for a cut link; less
    /// when the peer said it went down).
    pub last_down_silence_ms: Option<u64>,
    /// Time since that last Down.
    pub last_down_ago_ms: Option<u64>,
    /// Why it went down then.
    pub last_down_diagnostic: Option<String>,
    pub packets_received: u64,
    pub packets_sent: u64,
    /// Packets the kernel refused to send (no route while a link is down).
    pub send_errors: u64,
    pub up_transitions: u64,
    pub down_transitions: u64,
}

/// Datagrams that reached no session, for the whole system.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BfdDiscards {
    /// Malformed, or failing RFC 5880 6.8.6's checks.
    pub malformed: u64,
    /// RFC 5881 section 5: arrived with a TTL below 255.
    pub bad_ttl: u64,
    /// No session for the discriminator or the source address.
    pub no_session: u64,
}

enum Command {
    /// A peer, with the interface index a link-local one is reached by.
    Add(IpAddr, SessionConfig, Option<u32>),
    Remove(IpAddr),
    Peers(oneshot::Sender<(Vec<BfdPeerView>, BfdDiscards)>),
}

/// A running BFD task. Cloning shares it; the task ends when the last
/// handle (and the event receiver) is dropped, or on [`Bfd::abort`].
#[derive(Clone)]
pub struct Bfd {
    commands: mpsc::UnboundedSender<Command>,
}

/// The task itself, to abort it when its owner stops.
pub struct BfdTask(JoinHandle<()>);

impl Drop for BfdTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Bfd {
    /// Binds UDP `port` (3784, [`CONTROL_PORT`], outside tests) for both
    /// address families and starts the task; state changes go to
    /// `events`. An address family the host lacks is skipped; neither
    /// is an error.
    pub fn spawn(port: u16, events: mpsc::UnboundedSender<BfdEvent>) -> io::Result<(Bfd, BfdTask)> {
        let v4 = FamilySockets::bind(false, port);
        let v6 = FamilySockets::bind(true, port);
        if let (Err(e), Err(_)) = (&v4, &v6) {
            return Err(io::Error::new(e.kind(), format!("BFD: UDP port {port}: {e}")));
        }
        if let Err(e) = &v6 {
            tracing::warn!(error = %e, "BFD: no IPv6 socket; IPv6 peers get no sessions");
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(v4.ok(), v6.ok(), port, rx, events));
        Ok((Bfd { commands: tx }, BfdTask(task)))
    }

    /// Spawns on the standard port.
    pub fn spawn_standard(events: mpsc::UnboundedSender<BfdEvent>) -> io::Result<(Bfd, BfdTask)> {
        Bfd::spawn(CONTROL_PORT, events)
    }

    /// Starts a session with `peer` (kept if one exists).
    pub fn add(&self, peer: IpAddr, config: SessionConfig) {
        let _ = self.commands.send(Command::Add(peer, config, None));
    }

    /// Starts a session with a link-local `peer` on interface `scope`
    /// (BGP unnumbered).
    pub fn add_scoped(&self, peer: IpAddr, config: SessionConfig, scope: u32) {
        let _ = self.commands.send(Command::Add(peer, config, Some(scope)));
    }

    pub fn remove(&self, peer: IpAddr) {
        let _ = self.commands.send(Command::Remove(peer));
    }

    /// Every session, and the datagrams no session took.
    pub async fn peers(&self) -> (Vec<BfdPeerView>, BfdDiscards) {
        let (tx, rx) = oneshot::channel();
        if self.commands.send(Command::Peers(tx)).is_err() {
            return Default::default();
        }
        rx.await.unwrap_or_default()
    }
}

/// What the task counts per session beyond the state machine's own state.
#[derive(Debug, Default)]
struct PeerStats {
    packets_received: u64,
    packets_sent: u64,
    send_errors: u64,
    up_transitions: u64,
    down_transitions: u64,
    up_since: Option<u64>,
    /// When it last left Up, how long the peer had been silent then, and why.
    last_down: Option<(u64, u64, Diagnostic)>,
}

struct Driver {
    sessions: Sessions,
    stats: BTreeMap<IpAddr, PeerStats>,
    /// Interface indexes of link-local peers.
    scopes: BTreeMap<IpAddr, u32>,
    discards: BfdDiscards,
    v4: Option<FamilySockets>,
    v6: Option<FamilySockets>,
    port: u16,
    events: mpsc::UnboundedSender<BfdEvent>,
    start: Instant,
}

impl Driver {
    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn received(&mut self, received: Received, datagram: &[u8]) {
        let now = self.now();
        let from = unmap(received.from.ip());
        match self.sessions.receive(now, from, received.ttl, datagram) {
            Ok((peer, transition)) => {
                if let Some(stats) = self.stats.get_mut(&peer) {
                    stats.packets_received += 1;
                }
                if let Some(transition) = transition {
                    self.changed(now, peer, transition, Some(now));
                }
            }
            Err(discard) => {
                tracing::trace!(%from, ?discard, "BFD datagram discarded");
                match discard {
                    Discard::Packet(_) => self.discards.malformed += 1,
                    Discard::Ttl(_) => self.discards.bad_ttl += 1,
                    Discard::NoSession => self.discards.no_session += 1,
                }
            }
        }
    }

    /// `last_received`: when the peer was last heard, before the change.
    fn changed(&mut self, now: u64, peer: IpAddr, transition: Transition, last_received: Option<u64>) {
        let stats = self.stats.entry(peer).or_default();
        if transition.to == State::Up {
            stats.up_transitions += 1;
            stats.up_since = Some(now);
        }
        if transition.from == State::Up {
            stats.down_transitions += 1;
            stats.up_since = None;
            let silence = last_received.map_or(0, |t| now.saturating_sub(t));
            stats.last_down = Some((now, silence, transition.diagnostic));
        }
        tracing::info!(%peer, from = %transition.from, to = %transition.to, diagnostic = %transition.diagnostic, "BFD session");
        let remote_state = self.sessions.get(peer).map_or(State::Down, |s| s.remote_state());
        let _ = self.events.send(BfdEvent { peer, transition, remote_state });
    }

    /// Runs the detection timers and sends what is due.
    fn tick(&mut self) {
        let now = self.now();
        let last: Vec<(IpAddr, Option<u64>)> =
            self.sessions.iter().map(|(peer, session)| (peer, session.last_received())).collect();
        for (peer, transition) in self.sessions.poll(now) {
            let heard = last.iter().find(|(p, _)| *p == peer).and_then(|(_, t)| *t);
            self.changed(now, peer, transition, heard);
        }
        for (peer, bytes) in self.sessions.transmit(now) {
            let socket = match peer {
                IpAddr::V4(_) => self.v4.as_ref().map(|s| &s.send),
                IpAddr::V6(_) => self.v6.as_ref().map(|s| &s.send),
            };
            let destination = self.destination(peer);
            let stats = self.stats.entry(peer).or_default();
            match socket {
                // Straight to the kernel: tokio's try_send_to reports
                // WouldBlock until its reactor has seen the socket writable.
                Some(socket) => match SockRef::from(socket).send_to(&bytes, &destination.into()) {
                    Ok(_) => stats.packets_sent += 1,
                    Err(e) => {
                        stats.send_errors += 1;
                        tracing::debug!(%peer, error = %e, "BFD send failed");
                    }
                },
                None => stats.send_errors += 1,
            }
        }
    }

    /// UDP `port` at `peer`, through its interface when link-local.
    fn destination(&self, peer: IpAddr) -> SocketAddr {
        match (peer, self.scopes.get(&peer)) {
            (IpAddr::V6(v6), Some(&scope)) => SocketAddr::V6(std::net::SocketAddrV6::new(v6, self.port, 0, scope)),
            _ => SocketAddr::new(peer, self.port),
        }
    }

    fn command(&mut self, command: Command) {
        let now = self.now();
        match command {
            Command::Add(peer, config, scope) => {
                self.sessions.add(peer, config, now);
                self.stats.entry(peer).or_default();
                if let Some(scope) = scope {
                    self.scopes.insert(peer, scope);
                }
            }
            Command::Remove(peer) => {
                self.sessions.remove(peer);
                self.stats.remove(&peer);
                self.scopes.remove(&peer);
            }
            Command::Peers(tx) => {
                let _ = tx.send((self.views(now), self.discards.clone()));
            }
        }
    }

    fn views(&self, now: u64) -> Vec<BfdPeerView> {
        const MS: u64 = 1_000_000;
        self.sessions
            .iter()
            .map(|(peer, session)| {
                let stats = self.stats.get(&peer);
                let config = session.config();
                let (remote_tx, remote_rx, remote_mult) = session.remote_timers();
                let last_down = stats.and_then(|s| s.last_down);
                BfdPeerView {
                    peer,
                    state: session.state().to_string(),
                    remote_state: session.remote_state().to_string(),
                    diagnostic: session.diagnostic().to_string(),
                    local_discriminator: session.local_discriminator(),
                    remote_discriminator: session.remote_discriminator(),
                    desired_min_tx_ms: config.desired_min_tx_us / 1000,
                    required_min_rx_ms: config.required_min_rx_us / 1000,
                    detect_mult: config.detect_mult,
                    remote_desired_min_tx_ms: remote_tx / 1000,
                    remote_required_min_rx_ms: remote_rx / 1000,
                    remote_detect_mult: remote_mult,
                    tx_interval_ms: session.tx_interval_us() / 1000,
                    detection_time_ms: session.detection_time_us() / 1000,
                    uptime_ms: stats.and_then(|s| s.up_since).map(|t| now.saturating_sub(t) / MS),
                    last_down_silence_ms: last_down.map(|(_, silence, _)| silence / MS),
                    last_down_ago_ms: last_down.map(|(at, _, _)| now.saturating_sub(at) / MS),
                    last_down_diagnostic: last_down.map(|(_, _, why)| why.to_string()),
                    packets_received: stats.map_or(0, |s| s.packets_received),
                    packets_sent: stats.map_or(0, |s| s.packets_sent),
                    send_errors: stats.map_or(0, |s| s.send_errors),
                    up_transitions: stats.map_or(0, |s| s.up_transitions),
                    down_transitions: stats.map_or(0, |s| s.down_transitions),
                }
            })
            .collect()
    }
}

fn unmap(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

async fn recv_on(sockets: &Option<FamilySockets>, buf: &mut [u8]) -> io::Result<Received> {
    match sockets {
        Some(s) => recv_with_ttl(&s.receive, buf).await,
        None => std::future::pending().await,
    }
}

async fn run(
    v4: Option<FamilySockets>,
    v6: Option<FamilySockets>,
    port: u16,
    mut commands: mpsc::UnboundedReceiver<Command>,
    events: mpsc::UnboundedSender<BfdEvent>,
) {
    let mut d = Driver {
        sessions: Sessions::new(),
        stats: BTreeMap::new(),
        scopes: BTreeMap::new(),
        discards: BfdDiscards::default(),
        v4,
        v6,
        port,
        events,
        start: Instant::now(),
    };
    // Larger than any control packet with authentication (RFC 5880 4.1:
    // at most 255 octets), so nothing arrives truncated unnoticed.
    let mut buf4 = [0u8; 512];
    let mut buf6 = [0u8; 512];
    loop {
        let wakeup = d.sessions.next_wakeup();
        let sleep = async {
            match wakeup {
                u64::MAX => std::future::pending().await,
                at => tokio::time::sleep_until((d.start + Duration::from_nanos(at)).into()).await,
            }
        };
        tokio::select! {
            received = recv_on(&d.v4, &mut buf4) => match received {
                Ok(r) => d.received(r, &buf4[..r.len.min(buf4.len())]),
                Err(e) => tracing::debug!(error = %e, "BFD receive (IPv4)"),
            },
            received = recv_on(&d.v6, &mut buf6) => match received {
                Ok(r) => d.received(r, &buf6[..r.len.min(buf6.len())]),
                Err(e) => tracing::debug!(error = %e, "BFD receive (IPv6)"),
            },
            command = commands.recv() => match command {
                Some(command) => d.command(command),
                None => break,
            },
            _ = sleep => {}
        }
        d.tick();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAST: SessionConfig = SessionConfig { desired_min_tx_us: 20_000, required_min_rx_us: 20_000, detect_mult: 3 };

    /// A session to 127.0.0.1 on a free port hears its own packets: a
    /// looped-back peer, which RFC 5880's handshake accepts (Down seen ->
    /// Init, Init seen -> Up). It comes up over real UDP sockets, with
    /// TTL 255 sent and checked on receipt. (Peers on other hosts: the
    /// FRR test in tests/tests/bfd_frr.rs.)
    #[tokio::test]
    async fn a_looped_back_session_comes_up_over_udp_with_ttl_255() {
        let a_addr: IpAddr = "127.0.0.1".parse().unwrap();
        let port = free_udp_port();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (bfd, task) = Bfd::spawn(port, tx).unwrap();
        bfd.add(a_addr, FAST);
        let event = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                let event = rx.recv().await.unwrap();
                if event.transition.to == State::Up {
                    return event;
                }
            }
        })
        .await
        .expect("the session came up");
        assert_eq!(event.peer, a_addr);
        let (peers, discards) = bfd.peers().await;
        assert_eq!(peers.len(), 1);
        assert_eq!(peers[0].state, "up");
        assert!(peers[0].packets_received >= 2 && peers[0].packets_sent >= 2, "{:?}", peers[0]);
        assert_eq!(discards.bad_ttl, 0, "TTL 255 arrives as sent");
        drop(task);
    }

    fn free_udp_port() -> u16 {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.local_addr().unwrap().port()
    }
}
