//! The speaker, sans-IO: every neighbour's FSM, the RIBs and policies, glued
//! together. The driver (tasks.rs, a simulator, or a test) feeds it
//! connection events, received frames and the time, and carries out its
//! [`Output`]s: connect, write bytes, close, and program forwarding.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use ipnetwork::IpNetwork;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use crate::config::{BgpConfig, NeighborConfig};
use crate::decision::PeerKind;
use crate::evpn::{Evpn, EvpnAction, EvpnConfig, Rebuild};
use crate::fib::FibChange;
use crate::neighbor::{Action, ConnId, Counters, Event, NANOS_PER_SEC, Neighbor, PeerRestart, State};
use crate::packet::error::{ErrorAction, cease_subcode};
use crate::packet::evpn::{EvpnPathData, EvpnRoute, ExtCommunity, MacAddr, PmsiTunnel};
use crate::packet::update::{encode_end_of_rib, pack_announce, pack_withdraw};
use crate::packet::{DecodeContext, Family, Message, MessageType, Nlri, Notification, Origin, PathAttrs, Update};
use crate::policy::{Outcome, PolicySet};
use crate::rib::{LOCAL_PEER, LocChange, LocEntry, PeerId, PeerInfo, Rib, Route};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    Connect {
        peer: PeerId,
        conn: ConnId,
        remote: SocketAddr,
    },
    Send {
        peer: PeerId,
        conn: ConnId,
        bytes: Vec<u8>,
    },
    Close {
        peer: PeerId,
        conn: ConnId,
    },
    /// A change to forwarding state: IP routes (one next hop, or an ECMP
    /// set; none removes), and from EVPN remote MACs, ARP/ND suppression
    /// entries, flood lists and routes in IP-VRFs.
    Fib(FibChange),
    SessionUp {
        peer: PeerId,
    },
    SessionDown {
        peer: PeerId,
        reason: String,
    },
}

/// RFC 7606 outcomes counted per neighbour.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ErrorCounters {
    pub treat_as_withdraw: u64,
    pub attribute_discard: u64,
    pub afi_safi_disable: u64,
    pub rejected_routes: u64,
}

#[derive(Debug)]
pub struct Peer {
    pub config: NeighborConfig,
    pub fsm: Neighbor,
    local_addrs: FxHashMap<ConnId, IpAddr>,
    /// Families switched off by RFC 7606 "AFI/SAFI disable" for this session.
    pub disabled: Vec<Family>,
    pub errors: ErrorCounters,
    max_prefix_warned: bool,
    /// The peer's Graceful Restart capability from the last session.
    restart: Option<PeerRestart>,
    /// RFC 4724 §4.2: routes kept from a session that dropped, until the
    /// peer re-sends them (or End-of-RIB, or the timer, says they are gone).
    stale: FxHashSet<Nlri>,
    stale_deadline: Option<u64>,
}

/// Registers neighbour `n` with the RIB and builds its (idle) session.
fn new_peer(config: &BgpConfig, rib: &mut Rib, n: &NeighborConfig) -> (PeerId, Peer) {
    let internal = n.remote_as == config.asn && !n.remote_as_external;
    let kind = if internal { PeerKind::Internal } else { PeerKind::External };
    let id = rib.add_peer(PeerInfo {
        addr: Some(n.address),
        router_id: Ipv4Addr::UNSPECIFIED,
        asn: n.remote_as,
        kind,
        weight: n.weight,
        rr_client: n.route_reflector_client,
    });
    let peer = Peer {
        config: n.clone(),
        fsm: Neighbor::new(config.session_config(n)),
        local_addrs: FxHashMap::default(),
        disabled: Vec::new(),
        errors: ErrorCounters::default(),
        max_prefix_warned: false,
        restart: None,
        stale: FxHashSet::default(),
        stale_deadline: None,
    };
    (id, peer)
}

/// RFC 4724 leaves the stale-path time to the helper; the usual 360 s.
const STALE_PATH_TIME: u64 = 360;

impl Peer {
    /// Routes kept as stale, for `show`.
    pub fn stale_routes(&self) -> usize {
        self.stale.len()
    }

    fn ctx(&self) -> DecodeContext {
        match self.fsm.negotiated() {
            Some(n) => n.decode_context(),
            // Before the OPENs are exchanged no Extended Message capability is
            // negotiated: anything over 4096 octets is a header error (RFC 4271
            // §6.1, RFC 8654 §4), whatever its type.
            None => DecodeContext { four_octet_as: true, extended_message: false, ebgp: false },
        }
    }

    fn local_addr(&self) -> Option<IpAddr> {
        self.fsm.conn().and_then(|c| self.local_addrs.get(&c).copied())
    }

    fn sends(&self, family: Family) -> bool {
        self.fsm.negotiated().is_some_and(|n| n.families.contains(&family))
    }
}

/// Announcements to one peer and family sharing one interned attribute set
/// (keyed by the set's address).
type AnnounceKey = (PeerId, Family, usize);

/// Updates waiting to be packed, per peer: announcements grouped by their
/// (interned) attributes, withdrawals by family.
#[derive(Default)]
struct Batch {
    announce: FxHashMap<AnnounceKey, (Arc<PathAttrs>, Vec<Nlri>)>,
    withdraw: FxHashMap<(PeerId, Family), Vec<Nlri>>,
}

pub struct Speaker {
    pub config: BgpConfig,
    policy: PolicySet,
    /// Indexed by PeerId; index 0 (the local peer) has no session.
    peers: Vec<Option<Peer>>,
    pub rib: Rib,
    outputs: VecDeque<Output>,
    next_accepted: ConnId,
    /// The MAC-VRFs and IP-VRFs, when EVPN is configured.
    pub evpn: Option<Evpn>,
    /// The latest time given to any entry point (EVPN MAC mobility counts
    /// moves in time).
    now: u64,
}

impl Speaker {
    pub fn new(config: BgpConfig) -> Result<Speaker, String> {
        config.validate()?;
        let mut rib = Rib::new(config.router_id, config.asn, config.multipath);
        let mut peers = vec![None];
        for n in &config.neighbors {
            let (id, peer) = new_peer(&config, &mut rib, n);
            debug_assert_eq!(id, peers.len());
            peers.push(Some(peer));
        }
        let mut speaker = Speaker {
            policy: config.policy_set(),
            config,
            peers,
            rib,
            outputs: VecDeque::new(),
            next_accepted: 2,
            evpn: None,
            now: 0,
        };
        for n in speaker.config.networks.clone() {
            speaker.add_network(n);
        }
        if let Some(evpn_config) = &speaker.config.evpn {
            let mut evpn = Evpn::new(evpn_config, speaker.config.asn, speaker.config.router_id);
            evpn.start();
            speaker.evpn = Some(evpn);
            speaker.run_evpn_actions();
        }
        Ok(speaker)
    }

    pub fn peer_ids(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.peers.iter().enumerate().filter(|(_, p)| p.is_some()).map(|(i, _)| i)
    }

    pub fn peer(&self, id: PeerId) -> Option<&Peer> {
        self.peers.get(id).and_then(Option::as_ref)
    }

    /// The configured neighbour with this address (IPv4-mapped IPv6 matches IPv4).
    pub fn peer_by_addr(&self, addr: IpAddr) -> Option<PeerId> {
        let addr = match addr {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(addr),
            v4 => v4,
        };
        if addr.is_unspecified() {
            return None;
        }
        self.peer_ids().find(|&id| self.peers[id].as_ref().is_some_and(|p| p.config.address == addr))
    }

    pub fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<u64> {
        self.peers.iter().flatten().flat_map(|p| [p.fsm.poll_timeout(), p.stale_deadline]).flatten().min()
    }

    /// Starts every neighbour not configured as shut down (an unnumbered
    /// one once its address is known, [`Speaker::set_peer_address`]).
    pub fn start(&mut self, now: u64) {
        for id in self.peer_ids().collect::<Vec<_>>() {
            if !self.peers[id].as_ref().is_some_and(|p| p.config.shutdown || p.config.address.is_unspecified()) {
                self.fsm_event(now, id, Event::ManualStart);
            }
        }
    }

    /// BGP unnumbered: the neighbour on `interface` is `addr` (its
    /// link-local address, from its router advertisements). A new address
    /// restarts the session toward it. Returns the address it replaced
    /// (`::` for none) when it changed.
    pub fn set_peer_address(&mut self, now: u64, interface: &str, addr: IpAddr) -> Option<IpAddr> {
        let found = self.peer_ids().find(|&id| {
            self.peers[id]
                .as_ref()
                .is_some_and(|p| p.config.is_unnumbered() && p.config.interface.as_deref() == Some(interface))
        });
        let id = found?;
        let p = self.peers[id].as_mut()?;
        if p.config.address == addr {
            return None;
        }
        let old = p.config.address;
        let was_known = !old.is_unspecified();
        tracing::info!(interface, peer = %addr, "unnumbered neighbour found");
        if was_known {
            self.fsm_event(now, id, Event::ManualStop);
        }
        let p = self.peers[id].as_mut()?;
        p.config.address = addr;
        p.fsm.config.remote_addr = addr;
        self.rib.peers[id].addr = Some(addr);
        if let IpAddr::V6(peer) = addr {
            // Forwarding must know the port a link-local next hop is on.
            let change = FibChange::LinkLocalPeer { interface: interface.to_string(), peer };
            self.outputs.push_back(Output::Fib(change));
        }
        if !p.config.shutdown {
            self.fsm_event(now, id, Event::ManualStart);
        }
        Some(old)
    }

    pub fn stop_peer(&mut self, now: u64, id: PeerId) {
        self.fsm_event(now, id, Event::ManualStop);
    }

    pub fn start_peer(&mut self, now: u64, id: PeerId) {
        self.fsm_event(now, id, Event::ManualStart);
    }

    /// The BFD session with `addr` reports a failed path: the neighbour's
    /// BGP session goes at once, if it asked for BFD.
    pub fn bfd_down(&mut self, now: u64, addr: IpAddr, why: &str) {
        if let Some(id) = self.peer_by_addr(addr)
            && self.peers[id].as_ref().is_some_and(|p| p.config.bfd)
        {
            self.fsm_event(now, id, Event::BfdDown(why.to_string()));
        }
    }

    /// Fast external fallover: `interface` went down, so the eBGP
    /// sessions that run directly over it (unnumbered on it, or to an
    /// address in one of its `subnets`) go at once, as FRR and EOS do by
    /// default, instead of after the hold time. iBGP sessions, usually
    /// between loopbacks, may reroute and are left to their timers.
    pub fn interface_down(&mut self, now: u64, interface: &str, subnets: &[IpNetwork]) {
        let external_on_link = |peer: &Peer| {
            let config = &peer.config;
            let external = config.remote_as_external || config.remote_as != self.config.asn;
            let on_link = config.interface.as_deref() == Some(interface)
                || subnets.iter().any(|net| net.contains(config.address));
            external && on_link
        };
        let down: Vec<PeerId> =
            self.peer_ids().filter(|&id| self.peers[id].as_ref().is_some_and(external_on_link)).collect();
        for id in down {
            self.fsm_event(now, id, Event::InterfaceDown);
        }
    }

    pub fn shutdown(&mut self, now: u64) {
        for id in self.peer_ids().collect::<Vec<_>>() {
            self.stop_peer(now, id);
        }
    }

    /// Our outgoing connection `conn` to `peer` is up, bound to `local`.
    pub fn connected(&mut self, now: u64, peer: PeerId, conn: ConnId, local: IpAddr) {
        if let Some(p) = self.peers.get_mut(peer).and_then(Option::as_mut) {
            p.local_addrs.insert(conn, local);
        }
        self.fsm_event(now, peer, Event::TcpConnected(conn));
    }

    /// The peer connected to us; returns the connection id to use for it.
    pub fn accepted(&mut self, now: u64, peer: PeerId, local: IpAddr) -> ConnId {
        let conn = self.next_accepted;
        self.next_accepted += 2;
        if let Some(p) = self.peers.get_mut(peer).and_then(Option::as_mut) {
            p.local_addrs.insert(conn, local);
        }
        self.fsm_event(now, peer, Event::TcpAccepted(conn));
        conn
    }

    pub fn closed(&mut self, now: u64, peer: PeerId, conn: ConnId) {
        self.fsm_event(now, peer, Event::TcpClosed(conn));
        if let Some(p) = self.peers.get_mut(peer).and_then(Option::as_mut)
            && p.fsm.conn() != Some(conn)
        {
            p.local_addrs.remove(&conn);
        }
    }

    /// One framed message arrived on `conn`.
    pub fn received(&mut self, now: u64, peer: PeerId, conn: ConnId, frame: &[u8]) {
        let Some(p) = self.peers.get(peer).and_then(Option::as_ref) else { return };
        let event = match Message::decode(frame, &p.ctx()) {
            Ok(msg) => Event::Message(conn, msg),
            // RFC 4271 §6.4: a NOTIFICATION with errors gets none back; the
            // connection just closes.
            Err(e) if frame.get(18) == Some(&(MessageType::Notification as u8)) => {
                tracing::warn!(peer = %p.config.address, error = %e, "malformed NOTIFICATION");
                Event::MalformedNotification(conn)
            }
            Err(e) => {
                tracing::warn!(peer = %p.config.address, error = %e, "bad message");
                Event::DecodeError(conn, e)
            }
        };
        self.fsm_event(now, peer, event);
    }

    pub fn handle_timeout(&mut self, now: u64) {
        self.now = self.now.max(now);
        for id in self.peer_ids().collect::<Vec<_>>() {
            if self.peers[id].as_ref().and_then(|p| p.stale_deadline).is_some_and(|t| t <= now) {
                // RFC 4724 §4.2: the peer did not come back (or did not
                // finish) in time: its stale routes go.
                self.flush_stale(id, None);
            }
            let due = self.peers[id].as_ref().and_then(|p| p.fsm.poll_timeout()).is_some_and(|t| t <= now);
            if due {
                if let Some(p) = self.peers[id].as_mut() {
                    p.fsm.handle_timeout(now);
                }
                self.pump(now, id);
            }
        }
    }

    /// Originates `nlri` from this speaker.
    pub fn add_network(&mut self, nlri: Nlri) {
        let attrs = self.rib.intern(PathAttrs { origin: Origin::Igp, ..Default::default() });
        if self.rib.set_in(LOCAL_PEER, nlri, Some(attrs)) {
            self.settle(vec![nlri]);
        }
    }

    /// Originates a route with `attrs` (an EVPN route in its whole form:
    /// its non-key fields go with the path). Without a next hop, routes
    /// leave with ours (for EVPN: our VTEP).
    pub fn originate(&mut self, whole: Nlri, mut attrs: PathAttrs) {
        let (nlri, evpn) = whole.split();
        attrs.evpn = evpn;
        let attrs = self.rib.intern(attrs);
        if self.rib.set_in(LOCAL_PEER, nlri, Some(attrs)) {
            self.settle(vec![nlri]);
        }
    }

    /// Stops originating `nlri` (key or whole form).
    pub fn withdraw_originated(&mut self, nlri: Nlri) {
        let nlri = nlri.split().0;
        if self.rib.set_in(LOCAL_PEER, nlri, None) {
            self.settle(vec![nlri]);
        }
    }

    pub fn remove_network(&mut self, nlri: Nlri) {
        if self.rib.set_in(LOCAL_PEER, nlri, None) {
            self.settle(vec![nlri]);
        }
    }

    /// Carries out what the EVPN instance asked for: originate and
    /// withdraw our routes, change forwarding.
    fn run_evpn_actions(&mut self) {
        loop {
            let actions = match self.evpn.as_mut() {
                Some(e) => e.take_actions(),
                None => return,
            };
            if actions.is_empty() {
                return;
            }
            for action in actions {
                match action {
                    EvpnAction::Originate(route, attrs) => self.originate(Nlri::Evpn(route), *attrs),
                    EvpnAction::Withdraw(route) => self.withdraw_originated(Nlri::Evpn(route)),
                    EvpnAction::Fib(change) => self.outputs.push_back(Output::Fib(change)),
                }
            }
        }
    }

    /// A new `evpn:` section (`None`: EVPN off), applied as a diff
    /// ([`Evpn::reconfigure`]): routes of VRFs that go are withdrawn, new
    /// VRFs originate theirs and import the Loc-RIB's EVPN routes.
    pub fn evpn_reconfigure(&mut self, now: u64, config: Option<EvpnConfig>, rebuild: &Rebuild) {
        self.now = self.now.max(now);
        let best: Vec<(EvpnRoute, Arc<PathAttrs>)> = self
            .rib
            .loc
            .iter_of(Family::L2vpnEvpn)
            .filter_map(|(nlri, entry)| {
                let Nlri::Evpn(key) = nlri else { return None };
                let best = entry.best();
                (best.peer != LOCAL_PEER).then(|| (key, best.attrs.clone()))
            })
            .collect();
        let best = best.iter().map(|(key, attrs)| (*key, &**attrs));
        match (&config, self.evpn.as_mut()) {
            (Some(new), Some(evpn)) => evpn.reconfigure(self.now, new, rebuild, best),
            (Some(new), None) => {
                let empty = EvpnConfig { vnis: Vec::new(), vrfs: Vec::new(), ..new.clone() };
                let mut evpn = Evpn::new(&empty, self.config.asn, self.config.router_id);
                evpn.reconfigure(self.now, new, rebuild, best);
                self.evpn = Some(evpn);
            }
            (None, Some(evpn)) => {
                let config = self.config.evpn.clone().expect("running EVPN has its config");
                let empty = EvpnConfig { vnis: Vec::new(), vrfs: Vec::new(), ..config };
                evpn.reconfigure(self.now, &empty, rebuild, best);
            }
            (None, None) => {}
        }
        self.run_evpn_actions();
        if config.is_none() {
            self.evpn = None;
        }
        self.config.evpn = config;
    }

    /// The dataplane learned (`present`) or aged out `mac` in `vni`: a
    /// type 2 route is originated or withdrawn (RFC 7432 §9.1), with MAC
    /// mobility (§15) when the MAC was remote.
    pub fn evpn_local_mac(&mut self, now: u64, vni: u32, mac: MacAddr, present: bool) {
        self.now = self.now.max(now);
        if let Some(evpn) = self.evpn.as_mut() {
            evpn.local_mac(self.now, vni, mac, present);
            self.run_evpn_actions();
        }
    }

    /// ARP/ND on the SVI of `vni` bound `ip` to `mac` (`None`: removed):
    /// a MAC+IP type 2 route.
    pub fn evpn_local_neighbor(&mut self, now: u64, vni: u32, ip: IpAddr, mac: Option<MacAddr>) {
        self.now = self.now.max(now);
        if let Some(evpn) = self.evpn.as_mut() {
            evpn.local_neighbor(self.now, vni, ip, mac);
            self.run_evpn_actions();
        }
    }

    pub fn fsm_event(&mut self, now: u64, peer: PeerId, event: Event) {
        self.now = self.now.max(now);
        let Some(p) = self.peers.get_mut(peer).and_then(Option::as_mut) else { return };
        p.fsm.handle(now, event);
        self.pump(now, peer);
    }

    /// Carries out what the FSM of `peer` asked for.
    fn pump(&mut self, now: u64, peer: PeerId) {
        loop {
            let Some(p) = self.peers[peer].as_mut() else { return };
            let Some(action) = p.fsm.poll_action() else { return };
            match action {
                Action::Connect(conn) => {
                    let remote = SocketAddr::new(p.config.address, p.config.port);
                    self.outputs.push_back(Output::Connect { peer, conn, remote });
                }
                Action::Send(conn, msg) => {
                    let bytes = msg.to_bytes(&p.ctx());
                    self.outputs.push_back(Output::Send { peer, conn, bytes });
                }
                Action::Close(conn) => {
                    if p.fsm.conn() != Some(conn) {
                        p.local_addrs.remove(&conn);
                    }
                    self.outputs.push_back(Output::Close { peer, conn });
                }
                Action::Established(_, negotiated) => {
                    tracing::info!(peer = %p.config.address, asn = negotiated.peer_as, "session established");
                    self.rib.peers[peer].router_id = negotiated.peer_id;
                    p.disabled.clear();
                    p.max_prefix_warned = false;
                    p.restart = negotiated.peer_restart.clone();
                    if !p.stale.is_empty() {
                        // RFC 4724 §4.2: families the peer no longer lists with
                        // the Forwarding State bit lose their stale routes now;
                        // the others wait for End-of-RIB.
                        p.stale_deadline = Some(now + STALE_PATH_TIME * NANOS_PER_SEC);
                        let kept: Vec<Family> = negotiated
                            .peer_restart
                            .iter()
                            .flat_map(|r| r.families.iter().filter(|(_, fwd)| *fwd).map(|(f, _)| *f))
                            .collect();
                        for f in Family::ALL {
                            if !kept.contains(&f) {
                                self.flush_stale(peer, Some(f));
                            }
                        }
                    }
                    self.outputs.push_back(Output::SessionUp { peer });
                    self.advertise_all(peer, None);
                }
                Action::Down { reason, graceful } => {
                    tracing::info!(peer = %p.config.address, %reason, graceful, "session down");
                    self.outputs.push_back(Output::SessionDown { peer, reason });
                    self.rib.clear_out(peer, None);
                    let restart = p.restart.take().filter(|r| graceful && r.restart_time > 0 && !r.families.is_empty());
                    let gone = match restart {
                        Some(r) => {
                            // RFC 4724 §4.2, helper: keep the routes of the
                            // families the peer listed, marked stale, for up
                            // to its Restart Time; drop the rest.
                            let families: Vec<Family> = r.families.iter().map(|(f, _)| *f).collect();
                            p.stale.extend(self.rib.adj_in(peer).keys().filter(|n| families.contains(&n.family())));
                            p.stale_deadline = Some(now + r.restart_time as u64 * NANOS_PER_SEC);
                            let mut gone = Vec::new();
                            for f in Family::ALL.into_iter().filter(|f| !families.contains(f)) {
                                gone.extend(self.rib.clear_in(peer, Some(f)));
                            }
                            gone
                        }
                        None => {
                            p.stale.clear();
                            p.stale_deadline = None;
                            self.rib.clear_in(peer, None)
                        }
                    };
                    self.settle(gone);
                    self.rib.collect_garbage();
                }
                Action::UpdateReceived(update) => self.process_update(now, peer, *update),
                Action::RouteRefreshRequested(afi_safi) => {
                    // RFC 2918 §4: re-advertise the Adj-RIB-Out of that family.
                    if let Some(family) = afi_safi.family() {
                        self.rib.clear_out(peer, Some(family));
                        self.advertise_all(peer, Some(family));
                    }
                }
            }
        }
    }

    /// Applies one UPDATE from `peer`: RFC 7606 actions, loop checks, import
    /// policy, Adj-RIB-In, decision, and what follows from it.
    fn process_update(&mut self, now: u64, peer: PeerId, update: Update) {
        let Some(p) = self.peers[peer].as_mut() else { return };
        if let Some(family) = update.end_of_rib().and_then(|af| af.family()) {
            // RFC 4724 §4.2: stale routes the peer did not re-send are gone.
            self.flush_stale(peer, Some(family));
            return;
        }
        if !p.stale.is_empty() {
            for n in update.withdrawn_routes().chain(update.announced().map(|(n, _)| n)) {
                p.stale.remove(&n.split().0);
            }
        }
        let mut treat_as_withdraw = false;
        for e in &update.errors {
            tracing::warn!(peer = %p.config.address, type_code = e.type_code, reason = e.reason, action = ?e.action, "RFC 7606");
        }
        // RFC 7606 §3: the strongest action wins, but an AFI/SAFI disable only
        // covers its family: an error that makes the rest of the UPDATE
        // treat-as-withdraw still applies to the NLRI outside that family,
        // which must never be installed with attributes the peer did not send.
        let has = |wanted: fn(&ErrorAction) -> bool| update.errors.iter().any(|e| wanted(&e.action));
        if has(|a| *a == ErrorAction::TreatAsWithdraw) {
            p.errors.treat_as_withdraw += 1;
            treat_as_withdraw = true;
        }
        let disabled: Vec<_> = update
            .errors
            .iter()
            .filter_map(|e| match e.action {
                ErrorAction::AfiSafiDisable(af) => af.family(),
                _ => None,
            })
            .collect();
        if !disabled.is_empty() {
            p.errors.afi_safi_disable += 1;
        }
        if update.error_action() == Some(ErrorAction::AttributeDiscard) {
            p.errors.attribute_discard += 1;
        }
        for f in disabled {
            let Some(p) = self.peers[peer].as_mut() else { return };
            if !p.disabled.contains(&f) {
                p.disabled.push(f);
                let gone = self.rib.clear_in(peer, Some(f));
                self.settle(gone);
            }
        }
        let Some(p) = self.peers[peer].as_mut() else { return };
        let negotiated: Vec<Family> = p.fsm.negotiated().map(|n| n.families.clone()).unwrap_or_default();
        let accepts = |f: Family, p: &Peer| negotiated.contains(&f) && !p.disabled.contains(&f);

        let mut dirty = Vec::new();
        for nlri in update.withdrawn_routes().map(|n| n.split().0) {
            if accepts(nlri.family(), p) && self.rib.set_in(peer, nlri, None) {
                dirty.push(nlri);
            }
        }
        let local_as = self.config.asn;
        let router_id = self.config.router_id;
        let cluster_id = self.config.cluster_id.unwrap_or(router_id);
        let import = p.config.import_policy.clone();
        let allow_own = p.config.allow_own_as as usize;
        // Feasibility checks that reject every route of this UPDATE.
        let own_as_count =
            update.attrs.as_path.segments.iter().flat_map(|s| &s.asns).filter(|&&a| a == local_as).count();
        let looped = own_as_count > allow_own
            // RFC 4456 §8: our own reflected routes come back.
            || update.attrs.originator_id == Some(router_id)
            || update.attrs.cluster_list.contains(&cluster_id);
        // RFC 4271 §5.1.3 / §6.3: a NEXT_HOP that is the receiving speaker's
        // own address (this session's, or the router id) makes no route.
        let own = [p.local_addr(), Some(IpAddr::V4(router_id))];
        // RFC 8950 §3: IPv4 NLRI with an IPv6 next hop only once the
        // capability is negotiated; otherwise the next hop is unusable.
        let extended_next_hop = p.fsm.negotiated().is_some_and(|n| n.extended_next_hop);
        let mut rejected = 0;
        // Attribute sets interned once per distinct next hop (at most two:
        // NEXT_HOP and the MP_REACH_NLRI next hop) and EVPN non-key fields
        // (one per VNI, typically) in this UPDATE.
        type CacheKey = (Option<IpAddr>, Option<EvpnPathData>);
        let mut cache: Vec<(CacheKey, Arc<PathAttrs>)> = Vec::new();
        // A peer with only a link-local address (BGP unnumbered) may send
        // `::` as the global half of its next hop: the link-local half is it.
        let link_local_only = update
            .mp_reach
            .as_ref()
            .filter(|r| r.next_hop.is_unspecified())
            .and_then(|r| r.link_local_next_hop)
            .map(IpAddr::V6);
        for (whole, next_hop) in update.announced() {
            let next_hop = match (next_hop, link_local_only) {
                (Some(nh), Some(ll)) if nh.is_unspecified() => Some(ll),
                _ => next_hop,
            };
            let (nlri, evpn) = whole.split();
            if !accepts(nlri.family(), p) {
                continue;
            }
            let family_matches = match (nlri.family(), next_hop) {
                (Family::Ipv4Unicast, Some(IpAddr::V6(_))) => extended_next_hop,
                _ => true,
            };
            let feasible =
                !treat_as_withdraw && !looped && family_matches && next_hop.is_some_and(|nh| usable_next_hop(nh, own));
            let attrs = if feasible {
                let hit = cache.iter().find(|(k, _)| *k == (next_hop, evpn)).map(|(_, a)| a.clone());
                let shared = match hit {
                    Some(a) => a,
                    None => {
                        let mut a = update.attrs.clone();
                        a.next_hop = next_hop;
                        a.link_local_next_hop = None;
                        if let Some(r) = &update.mp_reach
                            && next_hop == Some(r.next_hop)
                        {
                            a.link_local_next_hop = r.link_local_next_hop;
                        }
                        a.evpn = evpn;
                        let a = self.rib.intern(a);
                        cache.push(((next_hop, evpn), a.clone()));
                        a
                    }
                };
                match self.policy.apply(import.as_deref(), &nlri, &shared, local_as) {
                    Outcome::Accept => Some(shared),
                    Outcome::Modified(a) => Some(self.rib.intern(*a)),
                    Outcome::Reject => None,
                }
            } else {
                None
            };
            if attrs.is_none() {
                rejected += 1;
            }
            if self.rib.set_in(peer, nlri, attrs) {
                dirty.push(nlri);
            }
        }
        let Some(p) = self.peers[peer].as_mut() else { return };
        if !treat_as_withdraw {
            p.errors.rejected_routes += rejected;
        }
        self.settle(dirty);

        // RFC 4271 §8 / RFC 4486 Cease subcode 1: maximum number of prefixes reached.
        let Some(p) = self.peers[peer].as_mut() else { return };
        if let Some(max) = p.config.max_prefix {
            let count = self.rib.adj_in(peer).len();
            if count > max.limit {
                if max.warning_only {
                    if !p.max_prefix_warned {
                        tracing::warn!(peer = %p.config.address, count, limit = max.limit, "maximum prefixes exceeded");
                        p.max_prefix_warned = true;
                    }
                } else {
                    let mut n = Notification::cease(cease_subcode::MAX_PREFIXES);
                    // RFC 4486 §4: AFI, SAFI and the upper bound.
                    n.data = [&1u16.to_be_bytes()[..], &[1], &(max.limit as u32).to_be_bytes()].concat();
                    p.fsm.notify_and_drop(now, n, "maximum prefixes exceeded");
                    self.pump(now, peer);
                }
            }
        }
    }

    /// Removes the stale routes of `peer` (of `family`, or all).
    fn flush_stale(&mut self, peer: PeerId, family: Option<Family>) {
        let Some(p) = self.peers[peer].as_mut() else { return };
        let gone: Vec<Nlri> = p.stale.iter().filter(|n| family.is_none_or(|f| n.family() == f)).copied().collect();
        for n in &gone {
            p.stale.remove(n);
        }
        if p.stale.is_empty() {
            p.stale_deadline = None;
        }
        let mut dirty = Vec::with_capacity(gone.len());
        for n in gone {
            if self.rib.set_in(peer, n, None) {
                dirty.push(n);
            }
        }
        self.settle(dirty);
    }

    /// Runs the decision process for `dirty` and propagates the results to
    /// forwarding and to every established peer.
    fn settle(&mut self, dirty: Vec<Nlri>) {
        let mut batch = Batch::default();
        for nlri in dirty {
            // The EVPN instance keeps no record of what it imported: it
            // undoes what the previous best path (learned from a peer) gave.
            let old = match nlri {
                Nlri::Evpn(_) if self.evpn.is_some() => {
                    self.rib.loc(&nlri).map(|e| e.best()).filter(|r| r.peer != LOCAL_PEER).map(|r| r.attrs.clone())
                }
                _ => None,
            };
            let Some(change) = self.rib.decide(nlri) else { continue };
            self.apply_change(&change, old.as_deref(), &mut batch);
        }
        self.flush(batch);
        self.run_evpn_actions();
    }

    /// `old`: an EVPN route's best path learned from a peer before the change.
    fn apply_change(&mut self, change: &LocChange, old: Option<&PathAttrs>, batch: &mut Batch) {
        if let (Some(next_hops), Some(prefix)) = (&change.fib, change.nlri.ip_network()) {
            let change = FibChange::Route { vrf: None, prefix, next_hops: next_hops.clone() };
            self.outputs.push_back(Output::Fib(change));
        }
        if let (Nlri::Evpn(key), true, Some(evpn)) = (change.nlri, change.best_changed, self.evpn.as_mut()) {
            // What forwarding holds follows the best path learned from a
            // peer; our own routes install nothing.
            let best = self.rib.loc(&change.nlri).map(|e| e.best()).filter(|r| r.peer != LOCAL_PEER);
            evpn.route_changed(self.now, key, old, best.map(|r| &*r.attrs));
        }
        if !change.best_changed {
            return;
        }
        let entry = self.rib.loc(&change.nlri).cloned();
        for q in 1..self.peers.len() {
            self.export_one(q, change.nlri, entry.as_ref(), batch);
        }
    }

    /// Brings peer `q`'s Adj-RIB-Out for `nlri` in line with the Loc-RIB.
    fn export_one(&mut self, q: PeerId, nlri: Nlri, entry: Option<&LocEntry>, batch: &mut Batch) {
        let family = nlri.family();
        let Some(peer) = self.peers[q].as_ref() else { return };
        if peer.fsm.state() != State::Established || !peer.sends(family) {
            return;
        }
        let new = entry.and_then(|e| self.export_attrs(q, &nlri, e.best()));
        let old = self.rib.adj_out(q).get(&nlri).cloned();
        match (old, new) {
            (Some(o), Some(n)) if Arc::ptr_eq(&o, &n) => {}
            (_, Some(n)) => {
                self.rib.set_out(q, nlri, Some(n.clone()));
                let key = (q, family, Arc::as_ptr(&n) as usize);
                batch.announce.entry(key).or_insert_with(|| (n, Vec::new())).1.push(nlri);
            }
            (Some(_), None) => {
                self.rib.set_out(q, nlri, None);
                batch.withdraw.entry((q, family)).or_default().push(nlri);
            }
            (None, None) => {}
        }
    }

    /// The attributes `route` is advertised to `q` with, or `None` when it
    /// must not be (RFC 4271 §9.2, RFC 4456 §6, export policy).
    fn export_attrs(&mut self, q: PeerId, nlri: &Nlri, route: &Route) -> Option<Arc<PathAttrs>> {
        if route.peer == q {
            return None;
        }
        let to = &self.rib.peers[q];
        let from = &self.rib.peers[route.peer];
        let peer = self.peers[q].as_ref()?;
        let (to_kind, from_kind, from_id) = (to.kind, from.kind, from.router_id);
        // RFC 4456 §6: iBGP-learned routes go to iBGP peers only through reflection.
        let reflect = from_kind == PeerKind::Internal && to_kind == PeerKind::Internal;
        if reflect && !(from.rr_client || to.rr_client) {
            return None;
        }
        let mut a = (*route.attrs).clone();
        // RFC 7432 §7 / RFC 8365 §5.1.3: an EVPN route's next hop is the
        // VTEP that encapsulates for it, not a BGP neighbour: it passes
        // through reflectors and eBGP spines unchanged (FRR's behaviour for
        // l2vpn evpn); only our own routes carry our VTEP address.
        let keeps_next_hop = nlri.family() == Family::L2vpnEvpn && a.next_hop.is_some();
        let next_hop_self = |a: &mut PathAttrs| {
            if keeps_next_hop {
                return;
            }
            a.next_hop = self.self_next_hop(peer, nlri.family());
            // Over a link-local session (BGP unnumbered) our only address
            // is link-local: sent in both halves of a 32-octet next hop,
            // as FRR does (RFC 2545 §3 wants a global first; there is none).
            a.link_local_next_hop = match a.next_hop {
                Some(IpAddr::V6(v6)) if crate::config::is_link_local(IpAddr::V6(v6)) => Some(v6),
                _ => None,
            };
        };
        match to_kind {
            PeerKind::External => {
                // §5.1.2: prepend our AS; §5.1.3: next hop is us; §5.1.5:
                // LOCAL_PREF is not sent; §5.1.4: a MED learned from another
                // AS is not passed on; RFC 4456 attributes stay inside the AS.
                a.as_path.prepend(self.config.asn);
                next_hop_self(&mut a);
                a.local_pref = None;
                if from_kind == PeerKind::External {
                    a.med = None;
                }
                a.originator_id = None;
                a.cluster_list.clear();
            }
            _ => {
                a.local_pref = Some(a.local_pref.unwrap_or(crate::decision::DEFAULT_LOCAL_PREF));
                if from_kind == PeerKind::Local || peer.config.next_hop_self || a.next_hop.is_none() {
                    next_hop_self(&mut a);
                }
                if reflect {
                    // RFC 4456 §8: set ORIGINATOR_ID once, prepend our CLUSTER_ID.
                    a.originator_id.get_or_insert(from_id);
                    a.cluster_list.insert(0, self.config.cluster_id.unwrap_or(self.config.router_id));
                }
            }
        }
        a.next_hop?;
        let export = peer.config.export_policy.clone();
        let attrs = match self.policy.apply(export.as_deref(), nlri, &a, self.config.asn) {
            Outcome::Reject => return None,
            Outcome::Accept => a,
            Outcome::Modified(m) => *m,
        };
        Some(self.rib.intern(attrs))
    }

    /// Our address as a next hop for `family` on the session with `peer`.
    fn self_next_hop(&self, peer: &Peer, family: Family) -> Option<IpAddr> {
        let local = peer.local_addr();
        let extended_next_hop = peer.fsm.negotiated().is_some_and(|n| n.extended_next_hop);
        match family {
            Family::Ipv4Unicast => match local {
                Some(IpAddr::V4(a)) => Some(IpAddr::V4(a)),
                // RFC 8950: over an IPv6 session, our IPv6 address.
                Some(IpAddr::V6(a)) if extended_next_hop && a.to_ipv4_mapped().is_none() => {
                    Some(IpAddr::V6(self.config.ipv6_next_hop.unwrap_or(a)))
                }
                Some(IpAddr::V6(a)) => a.to_ipv4_mapped().map(IpAddr::V4).or(Some(IpAddr::V4(self.config.router_id))),
                None => Some(IpAddr::V4(self.config.router_id)),
            },
            Family::Ipv6Unicast => match (self.config.ipv6_next_hop, local) {
                (Some(a), _) => Some(IpAddr::V6(a)),
                (None, Some(IpAddr::V6(a))) => Some(IpAddr::V6(a)),
                (None, Some(IpAddr::V4(a))) => Some(IpAddr::V6(a.to_ipv6_mapped())),
                (None, None) => None,
            },
            // Our VTEP: the configured one, else the router id (a loopback
            // in EVPN fabrics, as FRR's default source of the VXLAN device).
            Family::L2vpnEvpn => {
                Some(self.config.evpn.as_ref().map_or(IpAddr::V4(self.config.router_id), |e| e.vtep_ip))
            }
        }
    }

    /// Sends `q` the whole Loc-RIB (of `family`) and End-of-RIB markers.
    fn advertise_all(&mut self, q: PeerId, family: Option<Family>) {
        let mut batch = Batch::default();
        let keys: Vec<Nlri> =
            self.rib.loc_iter().map(|(n, _)| n).filter(|n| family.is_none_or(|f| n.family() == f)).collect();
        for nlri in keys {
            let entry = self.rib.loc(&nlri).cloned();
            self.export_one(q, nlri, entry.as_ref(), &mut batch);
        }
        self.flush(batch);
        let Some(p) = self.peers[q].as_ref() else { return };
        let Some(conn) = p.fsm.conn() else { return };
        let families: Vec<Family> = p.fsm.negotiated().map(|n| n.families.clone()).unwrap_or_default();
        let mut bytes = Vec::new();
        let mut markers = 0;
        for f in families.into_iter().filter(|f| family.is_none_or(|x| x == *f)) {
            // RFC 4724 §2: End-of-RIB after the initial table.
            encode_end_of_rib(f, &mut bytes);
            markers += 1;
        }
        if let Some(p) = self.peers[q].as_mut() {
            p.fsm.count_sent_updates(markers);
        }
        self.outputs.push_back(Output::Send { peer: q, conn, bytes });
    }

    fn flush(&mut self, batch: Batch) {
        let mut per_peer: FxHashMap<PeerId, (Vec<u8>, u64)> = FxHashMap::default();
        for ((q, family), routes) in batch.withdraw {
            let Some(p) = self.peers[q].as_ref() else { continue };
            let max = p.fsm.negotiated().map(|n| n.max_message_len()).unwrap_or(4096);
            let (buf, n) = per_peer.entry(q).or_default();
            *n += pack_withdraw(family, &routes, max, buf) as u64;
        }
        for ((q, family, _), (attrs, routes)) in batch.announce {
            let Some(p) = self.peers[q].as_ref() else { continue };
            let Some(neg) = p.fsm.negotiated() else { continue };
            let (buf, n) = per_peer.entry(q).or_default();
            *n += pack_announce(&attrs, family, &routes, &neg.decode_context(), neg.max_message_len(), buf) as u64;
        }
        for (q, (bytes, n)) in per_peer {
            let Some(p) = self.peers[q].as_mut() else { continue };
            let Some(conn) = p.fsm.conn() else { continue };
            p.fsm.count_sent_updates(n);
            if !bytes.is_empty() {
                self.outputs.push_back(Output::Send { peer: q, conn, bytes });
            }
        }
    }

    // ---- show ----

    pub fn summary(&self, now: u64) -> Vec<PeerSummary> {
        self.peer_ids()
            .filter_map(|id| {
                let p = self.peer(id)?;
                Some(PeerSummary {
                    address: p.config.address,
                    // The OPEN's AS when configured as "external".
                    remote_as: p.fsm.negotiated().map_or(p.config.remote_as, |n| n.peer_as),
                    description: p.config.description.clone(),
                    state: p.fsm.state(),
                    uptime_secs: p.fsm.uptime(now).map(|ns| ns / NANOS_PER_SEC),
                    prefixes_received: self.rib.adj_in(id).len(),
                    prefixes_sent: self.rib.adj_out(id).len(),
                    messages_received: p.fsm.counters.received.total(),
                    messages_sent: p.fsm.counters.sent.total(),
                    counters: p.fsm.counters.clone(),
                    errors: p.errors.clone(),
                    last_error: p.fsm.last_error.clone(),
                    negotiated: p.fsm.negotiated().cloned(),
                    disabled_families: p.disabled.clone(),
                    stale_routes: p.stale.len(),
                })
            })
            .collect()
    }

    /// Loc-RIB entries of `family`, or only `prefix`.
    pub fn routes(&self, family: Family, prefix: Option<&Nlri>) -> Vec<RouteView> {
        let entries: Vec<(Nlri, &LocEntry)> = match prefix {
            Some(p) => self.rib.loc(p).map(|e| (*p, e)).into_iter().filter(|(n, _)| n.family() == family).collect(),
            None => self.rib.loc.iter_of(family).collect(),
        };
        let mut out: Vec<RouteView> = entries
            .into_iter()
            .map(|(n, e)| {
                let mut paths: Vec<PathView> = self
                    .rib
                    .candidates(&n)
                    .into_iter()
                    .map(|r| {
                        let selected = e.paths().position(|s| s.peer == r.peer);
                        PathView {
                            peer: self.rib.peers[r.peer].addr,
                            best: selected == Some(0),
                            multipath: selected.is_some(),
                            next_hop: r.attrs.next_hop,
                            as_path: r.attrs.as_path.to_string(),
                            origin: r.attrs.origin.to_string(),
                            med: r.attrs.med,
                            local_pref: r.attrs.local_pref,
                            communities: r
                                .attrs
                                .communities
                                .iter()
                                .map(|c| format!("{}:{}", c >> 16, c & 0xffff))
                                .collect(),
                            ext_communities: r
                                .attrs
                                .ext_communities
                                .iter()
                                .map(|&c| ExtCommunity::from_u64(c).to_string())
                                .collect(),
                            originator_id: r.attrs.originator_id,
                            cluster_list: r.attrs.cluster_list.clone(),
                            evpn: r.attrs.evpn.map(|d| EvpnPathView {
                                label1: d.label1,
                                label2: d.label2,
                                esi: d.esi.to_string(),
                                gateway: d.gateway,
                            }),
                            pmsi_tunnel: r.attrs.pmsi_tunnel.as_ref().map(|t| match t {
                                PmsiTunnel::IngressReplication { vni, endpoint, .. } => {
                                    format!("ingress-replication vni {vni} endpoint {endpoint}")
                                }
                                PmsiTunnel::Other { tunnel_type, label, .. } => {
                                    format!("tunnel type {tunnel_type} label {label}")
                                }
                            }),
                        }
                    })
                    .collect();
                paths.sort_by_key(|p| (!p.best, !p.multipath));
                RouteView { prefix: n.to_string(), reason: e.reason(), paths }
            })
            .collect();
        out.sort_by(|a, b| a.prefix.cmp(&b.prefix));
        out
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PeerSummary {
    pub address: IpAddr,
    pub remote_as: u32,
    pub description: Option<String>,
    pub state: State,
    pub uptime_secs: Option<u64>,
    pub prefixes_received: usize,
    pub prefixes_sent: usize,
    pub messages_received: u64,
    pub messages_sent: u64,
    pub counters: Counters,
    pub errors: ErrorCounters,
    pub last_error: Option<String>,
    pub negotiated: Option<crate::neighbor::Negotiated>,
    pub disabled_families: Vec<Family>,
    /// Routes kept by the RFC 4724 helper after the session dropped.
    pub stale_routes: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct PathView {
    pub peer: Option<IpAddr>,
    pub best: bool,
    pub multipath: bool,
    pub next_hop: Option<IpAddr>,
    pub as_path: String,
    pub origin: String,
    pub med: Option<u32>,
    pub local_pref: Option<u32>,
    pub communities: Vec<String>,
    /// Typed where known, as FRR prints them (`RT:65000:100`, `ET:8`, `Rmac:...`).
    pub ext_communities: Vec<String>,
    pub originator_id: Option<Ipv4Addr>,
    pub cluster_list: Vec<Ipv4Addr>,
    /// EVPN NLRI fields outside the key: the VNIs (labels), ESI, gateway.
    pub evpn: Option<EvpnPathView>,
    pub pmsi_tunnel: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EvpnPathView {
    /// The L2VNI (type 2), the L3VNI (type 5) or type 1's label.
    pub label1: u32,
    /// Type 2's L3VNI (symmetric IRB).
    pub label2: Option<u32>,
    pub esi: String,
    pub gateway: Option<IpAddr>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RouteView {
    pub prefix: String,
    pub reason: &'static str,
    pub paths: Vec<PathView>,
}

pub mod reconfigure;
#[cfg(test)]
mod tests;

/// Whether a route may be installed through `next_hop`: RFC 4271 §6.3 and
/// §5.1.3 rule out an unspecified or multicast (or limited broadcast)
/// address and the receiving speaker's own (`own`).
fn usable_next_hop(next_hop: IpAddr, own: [Option<IpAddr>; 2]) -> bool {
    let special = match next_hop {
        IpAddr::V4(v4) => v4.is_unspecified() || v4.is_multicast() || v4.is_broadcast(),
        IpAddr::V6(v6) => v6.is_unspecified() || v6.is_multicast(),
    };
    !special && !own.contains(&Some(next_hop))
}
