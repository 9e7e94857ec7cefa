//! The per-neighbour session: RFC 4271 §8 finite state machine, sans-IO.
//!
//! Events and the current time (u64 nanoseconds, monotonic) go in through
//! [`Neighbor::handle`] and [`Neighbor::handle_timeout`]; actions (connect,
//! send, close, session up/down, UPDATEs received) come out of
//! [`Neighbor::poll_action`]. Timers are deadlines the driver reads with
//! [`Neighbor::poll_timeout`]; nothing here sleeps or touches a socket.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};

use serde::Serialize;

use crate::packet::capability::{Capability, ExtendedNextHop};
use crate::packet::error::{ErrorCode, cease_subcode, fsm_subcode, open_subcode};
use crate::packet::{AfiSafi, DecodeContext, DecodeError, Family, Message, Notification, Open, RouteRefresh, Update};

pub const NANOS_PER_SEC: u64 = 1_000_000_000;
/// RFC 4271 §8.2.2: the hold timer runs with a large value (4 minutes
/// suggested) until the peer's OPEN arrives.
const LARGE_HOLD_TIME_SECS: u64 = 240;

/// Identifies one TCP connection for the driver.
pub type ConnId = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum State {
    Idle,
    Connect,
    Active,
    OpenSent,
    OpenConfirm,
    Established,
}

/// The configuration one session needs.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionConfig {
    pub remote_addr: IpAddr,
    /// The AS the peer must announce; `None` accepts any (BGP unnumbered
    /// style "remote-as external/internal" is decided by the caller).
    pub remote_as: Option<u32>,
    /// With `remote_as: None`: refuse a peer in our own AS ("remote-as external").
    pub external_only: bool,
    pub local_as: u32,
    pub router_id: Ipv4Addr,
    /// Proposed hold time in seconds (0 disables keepalives, RFC 4271 §4.2).
    pub hold_time: u16,
    pub connect_retry_time: u16,
    /// Delay before an automatic restart after the session went down.
    pub idle_hold_time: u16,
    /// Never initiate connections (RFC 4271 §8.1.1 PassiveTcpEstablishment).
    pub passive: bool,
    pub families: Vec<Family>,
    pub extended_message: bool,
    /// Offer IPv4 unicast routes with IPv6 next hops (RFC 8950).
    pub extended_next_hop: bool,
}

impl SessionConfig {
    pub fn new(remote_addr: IpAddr, remote_as: u32, local_as: u32, router_id: Ipv4Addr) -> SessionConfig {
        SessionConfig {
            remote_addr,
            remote_as: Some(remote_as),
            external_only: false,
            local_as,
            router_id,
            hold_time: 90,
            connect_retry_time: 10,
            idle_hold_time: 1,
            passive: false,
            families: vec![Family::Ipv4Unicast, Family::Ipv6Unicast],
            extended_message: false,
            extended_next_hop: false,
        }
    }

    fn open(&self) -> Open {
        let mut caps: Vec<Capability> = self.families.iter().map(|f| Capability::Multiprotocol(f.afi_safi())).collect();
        caps.push(Capability::RouteRefresh);
        if self.extended_next_hop && self.families.contains(&Family::Ipv4Unicast) {
            caps.push(Capability::ExtendedNextHop(vec![ExtendedNextHop::IPV4_UNICAST_OVER_IPV6]));
        }
        if self.extended_message {
            caps.push(Capability::ExtendedMessage);
        }
        // RFC 4724 §3 as a helper: restart time 0, no families preserved.
        caps.push(Capability::GracefulRestart { restarting: false, restart_time: 0, families: Vec::new() });
        Open::new(self.local_as, self.hold_time, self.router_id, caps)
    }
}

/// What the two OPENs agreed on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Negotiated {
    pub peer_as: u32,
    pub peer_id: Ipv4Addr,
    pub hold_time: u16,
    pub keepalive_time: u16,
    pub families: Vec<Family>,
    pub four_octet_as: bool,
    pub extended_message: bool,
    pub route_refresh: bool,
    pub graceful_restart: bool,
    /// Both sides offered IPv4 unicast over IPv6 next hops (RFC 8950).
    pub extended_next_hop: bool,
    pub ebgp: bool,
    /// The peer's Graceful Restart capability (RFC 4724 §3), which decides
    /// what this speaker, as a helper, keeps when the session drops.
    pub peer_restart: Option<PeerRestart>,
}

/// What a peer announced in its Graceful Restart capability.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PeerRestart {
    pub restart_time: u16,
    /// Families with their Forwarding State bit.
    pub families: Vec<(Family, bool)>,
}

impl Negotiated {
    pub fn decode_context(&self) -> DecodeContext {
        DecodeContext { four_octet_as: self.four_octet_as, extended_message: self.extended_message, ebgp: self.ebgp }
    }

    pub fn max_message_len(&self) -> usize {
        self.decode_context().max_message_len()
    }
}

// Events and actions carry a message by value on their way through; see Message.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// RFC 4271 §8.1.2 Event 1 (and 3 when passive).
    ManualStart,
    /// Event 2.
    ManualStop,
    /// Our outgoing connection `ConnId` succeeded (Event 16).
    TcpConnected(ConnId),
    /// The peer connected to us (Event 17).
    TcpAccepted(ConnId),
    /// A connection failed or was closed by the peer (Event 18).
    TcpClosed(ConnId),
    Message(ConnId, Message),
    /// A message on `ConnId` could not be decoded.
    DecodeError(ConnId, DecodeError),
    /// A NOTIFICATION that does not decode: the session ends, unanswered.
    MalformedNotification(ConnId),
    /// The BFD session protecting this one left Up (RFC 5882 section
    /// 10.2); the text says why (the BFD diagnostic).
    BfdDown(String),
    /// The interface under this directly connected session went down: the
    /// session goes at once instead of waiting out the hold time (FRR's and
    /// EOS's default "fast external fallover").
    InterfaceDown,
}

#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Open a TCP connection to the peer and report it as `ConnId`.
    Connect(ConnId),
    Send(ConnId, Message),
    /// Close after flushing what was sent.
    Close(ConnId),
    Established(ConnId, Negotiated),
    /// The session left Established (or an attempt failed); drop its routes.
    /// `graceful`: the connection just went away, without a NOTIFICATION,
    /// so RFC 4724 helper procedures apply.
    Down {
        reason: String,
        graceful: bool,
    },
    UpdateReceived(Box<Update>),
    RouteRefreshRequested(AfiSafi),
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MessageCounters {
    pub open: u64,
    pub update: u64,
    pub notification: u64,
    pub keepalive: u64,
    pub route_refresh: u64,
}

impl MessageCounters {
    fn count(&mut self, msg: &Message) {
        match msg {
            Message::Open(_) => self.open += 1,
            Message::Update(_) => self.update += 1,
            Message::Notification(_) => self.notification += 1,
            Message::Keepalive => self.keepalive += 1,
            Message::RouteRefresh(_) => self.route_refresh += 1,
        }
    }

    pub fn total(&self) -> u64 {
        self.open + self.update + self.notification + self.keepalive + self.route_refresh
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub received: MessageCounters,
    pub sent: MessageCounters,
    pub established_transitions: u64,
    pub decode_errors: u64,
    pub connections_rejected: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timer {
    ConnectRetry,
    Hold,
    Keepalive,
    IdleHold,
}

/// One BGP session with one peer.
#[derive(Debug)]
pub struct Neighbor {
    pub config: SessionConfig,
    state: State,
    /// Administratively started (ManualStart seen, ManualStop not).
    enabled: bool,
    conn: Option<ConnId>,
    conn_outgoing: bool,
    /// A second, incoming connection during OpenSent/OpenConfirm (§6.8).
    collision: Option<ConnId>,
    next_conn: ConnId,
    negotiated: Option<Negotiated>,
    /// Peer's OPEN while in OpenConfirm, kept for collision checks.
    peer_open: Option<Open>,
    connect_retry_at: Option<u64>,
    hold_at: Option<u64>,
    keepalive_at: Option<u64>,
    idle_hold_at: Option<u64>,
    established_at: Option<u64>,
    pub counters: Counters,
    pub last_error: Option<String>,
    actions: VecDeque<Action>,
}

impl Neighbor {
    pub fn new(config: SessionConfig) -> Neighbor {
        Neighbor {
            config,
            state: State::Idle,
            enabled: false,
            conn: None,
            conn_outgoing: false,
            collision: None,
            next_conn: 1,
            negotiated: None,
            peer_open: None,
            connect_retry_at: None,
            hold_at: None,
            keepalive_at: None,
            idle_hold_at: None,
            established_at: None,
            counters: Counters::default(),
            last_error: None,
            actions: VecDeque::new(),
        }
    }

    pub fn state(&self) -> State {
        self.state
    }

    pub fn negotiated(&self) -> Option<&Negotiated> {
        self.negotiated.as_ref().filter(|_| self.state == State::Established)
    }

    /// The connection the session runs on.
    pub fn conn(&self) -> Option<ConnId> {
        self.conn
    }

    /// Nanoseconds in Established, if there.
    pub fn uptime(&self, now: u64) -> Option<u64> {
        self.established_at.map(|t| now.saturating_sub(t))
    }

    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The earliest timer deadline.
    pub fn poll_timeout(&self) -> Option<u64> {
        [self.connect_retry_at, self.hold_at, self.keepalive_at, self.idle_hold_at].into_iter().flatten().min()
    }

    /// Records UPDATEs the driver sent outside the FSM (route advertisement).
    pub fn count_sent_updates(&mut self, n: u64) {
        self.counters.sent.update += n;
    }

    pub fn handle_timeout(&mut self, now: u64) {
        let due = |t: Option<u64>| t.is_some_and(|t| t <= now);
        if due(self.idle_hold_at) {
            self.idle_hold_at = None;
            self.fire(now, Timer::IdleHold);
        }
        if due(self.connect_retry_at) {
            self.connect_retry_at = None;
            self.fire(now, Timer::ConnectRetry);
        }
        if due(self.hold_at) {
            self.hold_at = None;
            self.fire(now, Timer::Hold);
        }
        if due(self.keepalive_at) {
            self.keepalive_at = None;
            self.fire(now, Timer::Keepalive);
        }
    }

    pub fn handle(&mut self, now: u64, event: Event) {
        match event {
            Event::ManualStart => {
                self.enabled = true;
                if self.state == State::Idle {
                    self.idle_hold_at = None;
                    self.start(now);
                }
            }
            Event::ManualStop => {
                self.enabled = false;
                self.idle_hold_at = None;
                if let Some(c) = self.collision.take() {
                    self.close(c);
                }
                if self.conn.is_some() && self.state >= State::OpenSent {
                    self.notify_and_drop(
                        now,
                        Notification::cease(cease_subcode::ADMIN_SHUTDOWN),
                        "administratively stopped",
                    );
                } else {
                    self.drop_session(now, "administratively stopped");
                }
            }
            Event::BfdDown(why) => {
                // RFC 5882 10.2: the forwarding path is gone, so the session
                // goes at once, with Cease/BFD Down (RFC 9384) in case the
                // path still carries it. A session still opening is left
                // alone: it fails on its own if the path is really gone.
                if self.conn.is_some() && self.state >= State::OpenConfirm {
                    self.notify_and_drop(
                        now,
                        Notification::cease(cease_subcode::BFD_DOWN),
                        &format!("BFD down ({why})"),
                    );
                }
            }
            Event::InterfaceDown => {
                // No NOTIFICATION: the link it would leave by is gone. Not
                // graceful either: the peer did not restart, the path to it
                // failed, so its routes go now rather than stay stale.
                if let Some(c) = self.collision.take() {
                    self.close(c);
                }
                if self.state >= State::OpenSent {
                    self.drop_session(now, "interface down");
                }
            }
            Event::TcpConnected(c) => self.on_connected(now, c),
            Event::TcpAccepted(c) => self.on_accepted(now, c),
            Event::TcpClosed(c) => self.on_closed(now, c),
            Event::Message(c, msg) => {
                if Some(c) == self.collision {
                    self.counters.received.count(&msg);
                    self.on_collision_message(now, c, msg);
                } else if Some(c) == self.conn {
                    self.counters.received.count(&msg);
                    self.on_message(now, msg);
                }
            }
            Event::MalformedNotification(c) => {
                self.counters.decode_errors += 1;
                if Some(c) == self.collision {
                    self.close(c);
                    self.collision = None;
                } else if Some(c) == self.conn {
                    self.drop_session(now, "received a malformed NOTIFICATION");
                }
            }
            Event::DecodeError(c, err) => {
                self.counters.decode_errors += 1;
                if Some(c) == self.collision {
                    self.send(c, Message::Notification(err.notification()));
                    self.close(c);
                    self.collision = None;
                } else if Some(c) == self.conn {
                    let reason = format!("sent {}: {}", err.notification(), err.reason);
                    self.notify_and_drop(now, err.notification(), &reason);
                }
            }
        }
    }

    fn start(&mut self, now: u64) {
        if self.config.passive {
            self.state = State::Active;
            self.set_timer(now, Timer::ConnectRetry, None);
        } else {
            self.connect(now);
        }
    }

    fn connect(&mut self, now: u64) {
        let c = self.new_conn();
        self.conn = Some(c);
        self.conn_outgoing = true;
        self.state = State::Connect;
        self.actions.push_back(Action::Connect(c));
        self.set_timer(now, Timer::ConnectRetry, Some(self.config.connect_retry_time as u64));
    }

    fn new_conn(&mut self) -> ConnId {
        let c = self.next_conn;
        self.next_conn += 2;
        c
    }

    /// Connection ids this FSM allocates are odd; the driver numbers accepted
    /// connections with even ids so the two never clash.
    pub fn is_own_conn_id(c: ConnId) -> bool {
        c % 2 == 1
    }

    fn set_timer(&mut self, now: u64, timer: Timer, secs: Option<u64>) {
        let at = secs.map(|s| now + s * NANOS_PER_SEC);
        match timer {
            Timer::ConnectRetry => self.connect_retry_at = at,
            Timer::Hold => self.hold_at = at,
            Timer::Keepalive => self.keepalive_at = at,
            Timer::IdleHold => self.idle_hold_at = at,
        }
    }

    fn fire(&mut self, now: u64, timer: Timer) {
        match (timer, self.state) {
            (Timer::IdleHold, State::Idle) if self.enabled => self.start(now),
            (Timer::ConnectRetry, State::Connect) => {
                // §8.2.2 Connect, Event 9: drop the attempt and try again.
                if let Some(c) = self.conn.take() {
                    self.close(c);
                }
                self.connect(now);
            }
            (Timer::ConnectRetry, State::Active) if !self.config.passive => self.connect(now),
            (Timer::Hold, State::OpenSent | State::OpenConfirm | State::Established) => {
                self.notify_and_drop(now, Notification::new(ErrorCode::HoldTimerExpired, 0), "hold timer expired");
            }
            (Timer::Keepalive, State::OpenConfirm | State::Established) => {
                if let Some(c) = self.conn {
                    self.send(c, Message::Keepalive);
                }
                let ka = self.negotiated.as_ref().map(|n| n.keepalive_time as u64).filter(|&k| k > 0);
                self.set_timer(now, Timer::Keepalive, ka);
            }
            _ => {}
        }
    }

    fn on_connected(&mut self, now: u64, c: ConnId) {
        if Some(c) != self.conn || !matches!(self.state, State::Connect | State::Active) {
            // A stale attempt that completed after we gave up on it.
            self.close(c);
            return;
        }
        self.open_sent(now, c);
    }

    fn open_sent(&mut self, now: u64, c: ConnId) {
        self.set_timer(now, Timer::ConnectRetry, None);
        self.send(c, Message::Open(self.config.open()));
        self.set_timer(now, Timer::Hold, Some(LARGE_HOLD_TIME_SECS));
        self.state = State::OpenSent;
    }

    fn on_accepted(&mut self, now: u64, c: ConnId) {
        match self.state {
            State::Idle => {
                // §8.2.2 Idle: incoming connections are refused.
                self.counters.connections_rejected += 1;
                self.close(c);
            }
            State::Connect | State::Active => {
                if let Some(old) = self.conn.take() {
                    self.close(old);
                }
                self.conn = Some(c);
                self.conn_outgoing = false;
                self.open_sent(now, c);
            }
            State::OpenSent | State::OpenConfirm if self.collision.is_none() && self.conn_outgoing => {
                // §6.8: both sides connected at once. Answer with an OPEN and
                // decide when the peer's OPEN on this connection arrives.
                self.collision = Some(c);
                self.send(c, Message::Open(self.config.open()));
            }
            _ => {
                // §6.8: a connection colliding with an Established one (or a
                // third connection) is refused.
                self.counters.connections_rejected += 1;
                self.send(c, Message::Notification(Notification::cease(cease_subcode::CONNECTION_COLLISION)));
                self.close(c);
            }
        }
    }

    fn on_closed(&mut self, now: u64, c: ConnId) {
        if Some(c) == self.collision {
            self.collision = None;
            return;
        }
        if Some(c) != self.conn {
            return;
        }
        match self.state {
            State::Connect | State::OpenSent => {
                // §8.2.2 Connect/OpenSent, Event 18: restart ConnectRetry, go Active.
                self.conn = None;
                self.close(c);
                self.set_timer(now, Timer::Hold, None);
                self.state = State::Active;
                self.set_timer(now, Timer::ConnectRetry, Some(self.config.connect_retry_time as u64));
            }
            State::Active | State::Idle => {
                self.conn = None;
            }
            State::OpenConfirm => self.drop_session(now, "connection closed by peer"),
            State::Established => self.drop_session_with(now, "connection closed by peer", true),
        }
    }

    fn on_collision_message(&mut self, now: u64, c: ConnId, msg: Message) {
        let Message::Open(open) = msg else {
            if let Message::Notification(_) = msg {
                self.close(c);
                self.collision = None;
            }
            return;
        };
        if let Err(n) = self.check_open(&open) {
            self.send(c, Message::Notification(n));
            self.close(c);
            self.collision = None;
            return;
        }
        // §6.8: the connection initiated by the speaker with the higher BGP
        // Identifier survives. `c` was initiated by the peer.
        let keep_new = u32::from(self.config.router_id) < u32::from(open.bgp_id);
        let collision_notice = Message::Notification(Notification::cease(cease_subcode::CONNECTION_COLLISION));
        self.collision = None;
        if keep_new {
            if let Some(old) = self.conn.take() {
                self.send(old, collision_notice);
                self.close(old);
            }
            self.conn = Some(c);
            self.conn_outgoing = false;
            self.accept_open(now, open);
        } else {
            self.send(c, collision_notice);
            self.close(c);
        }
    }

    /// RFC 4271 §6.2 checks that need configuration.
    fn check_open(&self, open: &Open) -> Result<(), Notification> {
        if let Some(expected) = self.config.remote_as
            && open.asn() != expected
        {
            let mut n = Notification::new(ErrorCode::Open, open_subcode::BAD_PEER_AS);
            n.data = open.my_as.to_be_bytes().to_vec();
            return Err(n);
        }
        if self.config.remote_as.is_none() && self.config.external_only && open.asn() == self.config.local_as {
            let mut n = Notification::new(ErrorCode::Open, open_subcode::BAD_PEER_AS);
            n.data = open.my_as.to_be_bytes().to_vec();
            return Err(n);
        }
        // RFC 6286 §2.2: an internal peer must not share our identifier.
        if open.bgp_id == self.config.router_id && open.asn() == self.config.local_as {
            return Err(Notification::new(ErrorCode::Open, open_subcode::BAD_BGP_IDENTIFIER));
        }
        Ok(())
    }

    fn accept_open(&mut self, now: u64, open: Open) {
        let Some(c) = self.conn else { return };
        // §4.2: the session uses the smaller of the two hold times; the
        // keepalive interval is a third of it.
        let hold_time = self.config.hold_time.min(open.hold_time);
        let keepalive_time = hold_time / 3;
        let peer_families: Vec<AfiSafi> = open.families().collect();
        let families = self
            .config
            .families
            .iter()
            .copied()
            .filter(|f| {
                // RFC 4760 §8 / RFC 2858: no MP capability at all means IPv4 unicast only.
                if peer_families.is_empty() { *f == Family::Ipv4Unicast } else { peer_families.contains(&f.afi_safi()) }
            })
            .collect();
        let has = |p: fn(&Capability) -> bool| open.has(p);
        let negotiated = Negotiated {
            peer_as: open.asn(),
            peer_id: open.bgp_id,
            hold_time,
            keepalive_time,
            families,
            four_octet_as: has(|c| matches!(c, Capability::FourOctetAs(_))),
            extended_message: self.config.extended_message && has(|c| matches!(c, Capability::ExtendedMessage)),
            route_refresh: has(|c| matches!(c, Capability::RouteRefresh)),
            graceful_restart: has(|c| matches!(c, Capability::GracefulRestart { .. })),
            extended_next_hop: self.config.extended_next_hop
                && has(
                    |c| matches!(c, Capability::ExtendedNextHop(e) if e.contains(&ExtendedNextHop::IPV4_UNICAST_OVER_IPV6)),
                ),
            ebgp: open.asn() != self.config.local_as,
            peer_restart: open.capabilities.iter().find_map(|c| match c {
                Capability::GracefulRestart { restart_time, families, .. } => Some(PeerRestart {
                    restart_time: *restart_time,
                    families: families
                        .iter()
                        .filter_map(|f| Some((f.afi_safi.family()?, f.forwarding_preserved)))
                        .collect(),
                }),
                _ => None,
            }),
        };
        self.negotiated = Some(negotiated);
        self.peer_open = Some(open);
        self.send(c, Message::Keepalive);
        self.set_timer(now, Timer::Hold, Some(hold_time as u64).filter(|&h| h > 0));
        self.set_timer(now, Timer::Keepalive, Some(keepalive_time as u64).filter(|&k| k > 0));
        self.state = State::OpenConfirm;
    }

    fn on_message(&mut self, now: u64, msg: Message) {
        if let Message::Notification(n) = &msg {
            // §8.2.2: a NOTIFICATION in any state ends the session.
            let reason = format!("received {n}");
            if let Some(c) = self.conn.take() {
                self.close(c);
            }
            self.drop_session(now, &reason);
            return;
        }
        match (self.state, msg) {
            (State::OpenSent, Message::Open(open)) => match self.check_open(&open) {
                Ok(()) => self.accept_open(now, open),
                Err(n) => {
                    let reason = format!("rejected OPEN: {n}");
                    self.notify_and_drop(now, n, &reason);
                }
            },
            (State::OpenConfirm, Message::Keepalive) => {
                let Some(c) = self.conn else { return };
                self.state = State::Established;
                self.established_at = Some(now);
                self.counters.established_transitions += 1;
                self.last_error = None;
                self.restart_hold(now);
                if let Some(other) = self.collision.take() {
                    self.send(other, Message::Notification(Notification::cease(cease_subcode::CONNECTION_COLLISION)));
                    self.close(other);
                }
                if let Some(neg) = self.negotiated.clone() {
                    self.actions.push_back(Action::Established(c, neg));
                }
            }
            (State::Established, Message::Keepalive) => self.restart_hold(now),
            (State::Established, Message::Update(update)) => {
                self.restart_hold(now);
                self.actions.push_back(Action::UpdateReceived(Box::new(update)));
            }
            (State::Established, Message::RouteRefresh(RouteRefresh { afi_safi, subtype })) => {
                self.restart_hold(now);
                // RFC 7313 §5: only subtype 0 asks for the routes again; the
                // BoRR/EoRR markers (1, 2) of a refresh we did not ask for and
                // unknown subtypes are ignored.
                if subtype == 0 {
                    self.actions.push_back(Action::RouteRefreshRequested(afi_safi));
                }
            }
            (state, _) => {
                // RFC 6608: an unexpected message is an FSM error.
                let subcode = match state {
                    State::OpenSent => fsm_subcode::UNEXPECTED_IN_OPEN_SENT,
                    State::OpenConfirm => fsm_subcode::UNEXPECTED_IN_OPEN_CONFIRM,
                    State::Established => fsm_subcode::UNEXPECTED_IN_ESTABLISHED,
                    _ => 0,
                };
                self.notify_and_drop(now, Notification::new(ErrorCode::Fsm, subcode), "unexpected message");
            }
        }
    }

    fn restart_hold(&mut self, now: u64) {
        let hold = self.negotiated.as_ref().map(|n| n.hold_time as u64).filter(|&h| h > 0);
        self.set_timer(now, Timer::Hold, hold);
    }

    fn send(&mut self, c: ConnId, msg: Message) {
        self.counters.sent.count(&msg);
        self.actions.push_back(Action::Send(c, msg));
    }

    fn close(&mut self, c: ConnId) {
        self.actions.push_back(Action::Close(c));
    }

    /// Sends `n` on the session's connection, closes it and goes Idle.
    pub fn notify_and_drop(&mut self, now: u64, n: Notification, reason: &str) {
        if let Some(c) = self.conn.take() {
            self.send(c, Message::Notification(n));
            self.close(c);
        }
        self.drop_session(now, reason);
    }

    fn drop_session(&mut self, now: u64, reason: &str) {
        self.drop_session_with(now, reason, false);
    }

    fn drop_session_with(&mut self, now: u64, reason: &str, graceful: bool) {
        if let Some(c) = self.conn.take() {
            self.close(c);
        }
        let was_up = self.state != State::Idle;
        self.state = State::Idle;
        self.negotiated = None;
        self.peer_open = None;
        self.established_at = None;
        self.connect_retry_at = None;
        self.hold_at = None;
        self.keepalive_at = None;
        if was_up {
            self.last_error = Some(reason.to_string());
            self.actions.push_back(Action::Down { reason: reason.to_string(), graceful });
        }
        // §8.1.1 AutomaticStart after IdleHoldTime while administratively up.
        if self.enabled {
            self.set_timer(now, Timer::IdleHold, Some(self.config.idle_hold_time.max(1) as u64));
        }
    }
}

impl PartialOrd for State {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        (*self as u8).partial_cmp(&(*other as u8))
    }
}

#[cfg(test)]
mod tests;
