//! Whole speakers wired together through an in-memory network in virtual
//! time: the same code paths as over TCP, deterministic.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr};

use super::*;
use crate::config::NeighborConfig;
use crate::packet::message::frame_len;

const S: u64 = NANOS_PER_SEC;

struct Net {
    nodes: Vec<Speaker>,
    addrs: Vec<IpAddr>,
    /// (node, peer, conn) -> (other node, other peer id, other conn);
    /// connection ids are per peer.
    links: HashMap<(usize, PeerId, ConnId), (usize, PeerId, ConnId)>,
    fib: Vec<HashMap<Nlri, Vec<IpAddr>>>,
    /// EVPN forwarding state each node was asked to hold.
    evpn_fib: Vec<crate::sink::Installed>,
    events: Vec<Vec<Output>>,
    now: u64,
    /// Bytes a node wrote, per (node, conn), for raw-peer tests.
    queue: VecDeque<(usize, Output)>,
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn n(s: &str) -> Nlri {
    s.parse().unwrap()
}

/// A default-VRF IP route change as (prefix, underlay next hops).
fn ip_route(change: &crate::fib::FibChange) -> Option<(Nlri, Vec<IpAddr>)> {
    match change {
        crate::fib::FibChange::Route { vrf: None, prefix, next_hops } => {
            Some((Nlri::from_network(*prefix)?, next_hops.iter().filter_map(crate::fib::NextHop::ip).collect()))
        }
        _ => None,
    }
}

impl Net {
    fn new(configs: Vec<BgpConfig>) -> Net {
        let addrs = configs.iter().map(|c| IpAddr::V4(c.router_id)).collect();
        let count = configs.len();
        let mut net = Net {
            nodes: configs.into_iter().map(|c| Speaker::new(c).unwrap()).collect(),
            addrs,
            links: HashMap::new(),
            fib: vec![HashMap::new(); count],
            evpn_fib: vec![Default::default(); count],
            events: vec![Vec::new(); count],
            now: 0,
            queue: VecDeque::new(),
        };
        for i in 0..count {
            net.nodes[i].start(0);
        }
        net.run();
        net
    }

    fn collect(&mut self) {
        for i in 0..self.nodes.len() {
            while let Some(o) = self.nodes[i].poll_output() {
                self.queue.push_back((i, o));
            }
        }
    }

    /// Delivers everything until no node has output left.
    fn run(&mut self) {
        self.collect();
        while let Some((i, o)) = self.queue.pop_front() {
            let now = self.now;
            match o {
                Output::Connect { peer, conn, remote } => {
                    let j = self.addrs.iter().position(|a| *a == remote.ip());
                    let pj = j.and_then(|j| self.nodes[j].peer_by_addr(self.addrs[i]));
                    match (j, pj) {
                        (Some(j), Some(pj)) => {
                            let cj = self.nodes[j].accepted(now, pj, self.addrs[j]);
                            self.links.insert((i, peer, conn), (j, pj, cj));
                            self.links.insert((j, pj, cj), (i, peer, conn));
                            let local = self.addrs[i];
                            self.nodes[i].connected(now, peer, conn, local);
                        }
                        _ => self.nodes[i].closed(now, peer, conn),
                    }
                }
                Output::Send { peer, conn, mut bytes } => {
                    if let Some(&(j, pj, cj)) = self.links.get(&(i, peer, conn)) {
                        let mut at = 0;
                        while let Ok(Some(len)) = frame_len(&bytes[at..], 65535) {
                            self.nodes[j].received(now, pj, cj, &bytes[at..at + len]);
                            at += len;
                        }
                        bytes.clear();
                    }
                }
                Output::Close { peer, conn } => {
                    if let Some((j, pj, cj)) = self.links.remove(&(i, peer, conn)) {
                        self.links.remove(&(j, pj, cj));
                        self.nodes[j].closed(now, pj, cj);
                    }
                }
                Output::Fib(change) => match ip_route(&change) {
                    Some((nlri, hops)) if hops.is_empty() => {
                        self.fib[i].remove(&nlri);
                    }
                    Some((nlri, hops)) => {
                        self.fib[i].insert(nlri, hops);
                    }
                    None => self.evpn_fib[i].apply(change),
                },
                other => self.events[i].push(other),
            }
            self.collect();
        }
    }

    /// Advances virtual time through timer deadlines up to `until`.
    fn advance(&mut self, until: u64) {
        loop {
            let next = self.nodes.iter().filter_map(Speaker::poll_timeout).min();
            match next {
                Some(t) if t <= until => {
                    self.now = self.now.max(t);
                    for node in &mut self.nodes {
                        node.handle_timeout(self.now);
                    }
                    self.run();
                }
                _ => break,
            }
        }
        self.now = until;
    }

    fn state(&self, i: usize, addr: &str) -> State {
        let id = self.nodes[i].peer_by_addr(ip(addr)).unwrap();
        self.nodes[i].peer(id).unwrap().fsm.state()
    }
}

fn speaker(asn: u32, id: &str, neighbors: &[(&str, u32)]) -> BgpConfig {
    let mut c = BgpConfig::new(asn, id.parse().unwrap());
    c.timers.hold_time = 9;
    for (addr, asn) in neighbors {
        c.neighbors.push(NeighborConfig::new(ip(addr), *asn));
    }
    c
}

#[test]
fn ebgp_pair_exchanges_ipv4_and_ipv6_routes_and_withdraws() {
    let mut a = speaker(65001, "10.0.0.1", &[("10.0.0.2", 65002)]);
    a.networks = vec![n("192.168.1.0/24"), n("2001:db8:1::/48")];
    let b = speaker(65002, "10.0.0.2", &[("10.0.0.1", 65001)]);
    let mut net = Net::new(vec![a, b]);
    assert_eq!(net.state(0, "10.0.0.2"), State::Established);
    assert_eq!(net.state(1, "10.0.0.1"), State::Established);

    let routes = net.nodes[1].routes(Family::Ipv4Unicast, None);
    assert_eq!(routes.len(), 1);
    let path = &routes[0].paths[0];
    assert_eq!(
        (routes[0].prefix.as_str(), path.as_path.as_str(), path.next_hop),
        ("192.168.1.0/24", "65001", Some(ip("10.0.0.1")))
    );
    assert_eq!(path.local_pref, None, "LOCAL_PREF is not sent to external peers");
    let v6 = net.nodes[1].routes(Family::Ipv6Unicast, None);
    assert_eq!(v6[0].paths[0].next_hop, Some(ip("::ffff:10.0.0.1")), "IPv4-mapped next hop over an IPv4 session");
    assert_eq!(net.fib[1].get(&n("192.168.1.0/24")), Some(&vec![ip("10.0.0.1")]));
    assert!(net.fib[0].is_empty(), "local routes are not installed");
    // Nothing comes back: B does not send A's routes back to A.
    assert_eq!(net.nodes[0].rib.adj_in(1).len(), 0);

    net.nodes[0].remove_network(n("192.168.1.0/24"));
    net.run();
    assert!(net.nodes[1].routes(Family::Ipv4Unicast, None).is_empty());
    assert_eq!(net.fib[1].get(&n("192.168.1.0/24")), None);
    assert_eq!(net.fib[1].len(), 1);

    // Keepalives keep the session up for a long time.
    net.advance(100 * S);
    assert_eq!(net.state(1, "10.0.0.1"), State::Established);
    let summary = net.nodes[1].summary(net.now);
    assert_eq!(summary[0].uptime_secs, Some(100));
    assert!(summary[0].counters.received.keepalive >= 30);
}

#[test]
fn leaf_spine_installs_ecmp_through_both_spines() {
    // Two spines (AS 65001, 65002), two leaves (65101, 65102); full mesh
    // between tiers. Addresses double as router ids.
    let spines = [("10.0.0.1", 65001), ("10.0.0.2", 65002)];
    let leaves = [("10.0.1.1", 65101), ("10.0.1.2", 65102)];
    let mut configs = Vec::new();
    for (addr, asn) in spines {
        configs.push(speaker(asn, addr, &leaves));
    }
    for (i, (addr, asn)) in leaves.iter().enumerate() {
        let mut c = speaker(*asn, addr, &spines);
        c.networks = vec![n(&format!("10.255.0.{}/32", i + 1)), n(&format!("2001:db8:ff::{}/128", i + 1))];
        configs.push(c);
    }
    let mut net = Net::new(configs);
    // Leaf 1 (node 2) reaches leaf 2's loopback through both spines.
    assert_eq!(net.fib[2].get(&n("10.255.0.2/32")), Some(&vec![ip("10.0.0.1"), ip("10.0.0.2")]));
    assert_eq!(net.fib[3].get(&n("10.255.0.1/32")), Some(&vec![ip("10.0.0.1"), ip("10.0.0.2")]));
    assert_eq!(net.fib[2].get(&n("2001:db8:ff::2/128")).map(Vec::len), Some(2));
    let view = &net.nodes[2].routes(Family::Ipv4Unicast, Some(&n("10.255.0.2/32")))[0];
    assert_eq!(view.paths.iter().filter(|p| p.multipath).count(), 2);
    // A spine failure shrinks the group to one next hop.
    let spine1 = net.nodes[2].peer_by_addr(ip("10.0.0.1")).unwrap();
    net.nodes[2].stop_peer(net.now, spine1);
    net.run();
    assert_eq!(net.fib[2].get(&n("10.255.0.2/32")), Some(&vec![ip("10.0.0.2")]));
    // Bringing the spine back restores the two-way group.
    net.nodes[2].start_peer(net.now, spine1);
    net.advance(net.now + 5 * S);
    assert_eq!(net.fib[2].get(&n("10.255.0.2/32")).map(Vec::len), Some(2));
}

#[test]
fn interface_down_drops_directly_connected_ebgp_sessions_at_once() {
    // Leaf 10.0.1.1 (AS 65101) with two spines and an iBGP peer 10.0.0.3
    // in the same subnet as spine 1 (10.0.0.0/30 on eth1).
    let spines = [("10.0.0.1", 65001), ("10.0.0.5", 65002)];
    let mut leaf = speaker(65101, "10.0.1.1", &[spines[0], spines[1], ("10.0.0.3", 65101)]);
    leaf.networks = vec![n("10.255.0.1/32")];
    let mut configs = vec![leaf];
    for (addr, asn) in spines {
        let mut spine = speaker(asn, addr, &[("10.0.1.1", 65101), ("10.0.1.2", 65102)]);
        spine.networks = vec![n(&format!("10.254.0.{}/32", asn - 65000))];
        configs.push(spine);
    }
    configs.push(speaker(65101, "10.0.0.3", &[("10.0.1.1", 65101)]));
    let mut net = Net::new(configs);
    assert_eq!(net.state(0, "10.0.0.1"), State::Established);
    assert_eq!(net.state(0, "10.0.0.3"), State::Established);
    assert!(net.fib[0].contains_key(&n("10.254.0.1/32")));
    let sent_before = |net: &Net| net.nodes[0].summary(net.now)[0].counters.sent.notification;
    let notifications = sent_before(&net);

    // eth1 goes down: no time passes, yet the eBGP session over it is gone
    // and its routes with it; the other spine and the iBGP peer stay.
    let subnet: IpNetwork = "10.0.0.0/30".parse().unwrap();
    net.nodes[0].interface_down(net.now, "sw-eth1", &[subnet]);
    net.run();
    assert_eq!(net.state(0, "10.0.0.1"), State::Idle);
    let spine1 = net.nodes[0].peer_by_addr(ip("10.0.0.1")).unwrap();
    assert_eq!(net.nodes[0].peer(spine1).unwrap().fsm.last_error.as_deref(), Some("interface down"));
    assert_eq!(net.state(0, "10.0.0.5"), State::Established);
    assert_eq!(net.state(0, "10.0.0.3"), State::Established, "iBGP is left to its timers");
    assert!(!net.fib[0].contains_key(&n("10.254.0.1/32")), "routes withdrawn at once, not kept as stale");
    assert!(net.fib[0].contains_key(&n("10.254.0.2/32")));
    assert_eq!(sent_before(&net), notifications, "no NOTIFICATION down a dead link");
    // An interface that carries no session changes nothing.
    net.nodes[0].interface_down(net.now, "sw-eth9", &["192.0.2.0/31".parse().unwrap()]);
    net.run();
    assert_eq!(net.state(0, "10.0.0.5"), State::Established);
    // Still enabled: the session comes back once the path does.
    net.advance(net.now + 5 * S);
    assert_eq!(net.state(0, "10.0.0.1"), State::Established);
}

#[test]
fn route_reflector_reflects_between_clients_with_originator_and_cluster() {
    let mut rr = speaker(65000, "10.0.0.100", &[("10.0.0.1", 65000), ("10.0.0.2", 65000)]);
    for nb in &mut rr.neighbors {
        nb.route_reflector_client = true;
    }
    let mut c1 = speaker(65000, "10.0.0.1", &[("10.0.0.100", 65000)]);
    c1.networks = vec![n("172.16.1.0/24")];
    let c2 = speaker(65000, "10.0.0.2", &[("10.0.0.100", 65000)]);
    let mut net = Net::new(vec![rr, c1, c2]);
    let c2_view = net.nodes[2].rib.loc(&n("172.16.1.0/24")).expect("reflected route").best().attrs.clone();
    assert_eq!(c2_view.originator_id, Some(Ipv4Addr::new(10, 0, 0, 1)));
    assert_eq!(c2_view.cluster_list, vec![Ipv4Addr::new(10, 0, 0, 100)]);
    assert_eq!(c2_view.next_hop, Some(ip("10.0.0.1")), "iBGP keeps the originator's next hop");
    assert_eq!(c2_view.local_pref, Some(100));
    // c1 gets nothing back (its own route; ORIGINATOR_ID loop check).
    assert_eq!(net.nodes[1].rib.adj_in(1).len(), 0);
    net.run();
}

#[test]
fn ibgp_without_reflection_does_not_pass_routes_on() {
    let mut a = speaker(65000, "10.0.0.1", &[("10.0.0.2", 65000)]);
    a.networks = vec![n("172.16.1.0/24")];
    let b = speaker(65000, "10.0.0.2", &[("10.0.0.1", 65000), ("10.0.0.3", 65000)]);
    let c = speaker(65000, "10.0.0.3", &[("10.0.0.2", 65000)]);
    let net = Net::new(vec![a, b, c]);
    assert!(net.nodes[1].rib.loc(&n("172.16.1.0/24")).is_some());
    assert!(net.nodes[2].rib.loc(&n("172.16.1.0/24")).is_none());
}

#[test]
fn import_policy_and_max_prefix() {
    let mut a = speaker(65001, "10.0.0.1", &[("10.0.0.2", 65002)]);
    a.networks = vec![n("10.1.0.0/16"), n("10.2.0.0/16"), n("10.3.0.0/16")];
    let mut b = speaker(65002, "10.0.0.2", &[("10.0.0.1", 65001)]);
    b.prefix_lists = serde_yaml::from_str("only2: [{ action: permit, prefix: 10.2.0.0/16 }]").unwrap();
    b.policies =
        serde_yaml::from_str("in: [{ match: { prefix_list: only2 }, action: permit, set: { local_pref: 300 } }]")
            .unwrap();
    b.neighbors[0].import_policy = Some("in".into());
    let net = Net::new(vec![a.clone(), b.clone()]);
    let routes = net.nodes[1].routes(Family::Ipv4Unicast, None);
    assert_eq!(routes.iter().map(|r| r.prefix.as_str()).collect::<Vec<_>>(), vec!["10.2.0.0/16"]);
    assert_eq!(routes[0].paths[0].local_pref, Some(300));
    assert_eq!(net.nodes[1].summary(0)[0].errors.rejected_routes, 2);

    b.neighbors[0].import_policy = None;
    b.neighbors[0].max_prefix = Some(crate::config::MaxPrefix { limit: 2, warning_only: false });
    let net = Net::new(vec![a, b]);
    let s = &net.nodes[1].summary(0)[0];
    assert_ne!(s.state, State::Established);
    assert!(s.last_error.as_deref().unwrap_or("").contains("maximum prefixes"), "{s:?}");
    assert_eq!(s.counters.sent.notification, 1);
    assert!(net.nodes[1].routes(Family::Ipv4Unicast, None).is_empty());
}

#[test]
fn own_as_in_path_is_a_loop_unless_allowed() {
    // Leaves sharing AS 65100 behind spine 65000.
    let mut l1 = speaker(65100, "10.0.1.1", &[("10.0.0.1", 65000)]);
    l1.networks = vec![n("10.255.0.1/32")];
    let spine = speaker(65000, "10.0.0.1", &[("10.0.1.1", 65100), ("10.0.1.2", 65100)]);
    let l2 = speaker(65100, "10.0.1.2", &[("10.0.0.1", 65000)]);
    let net = Net::new(vec![l1.clone(), spine.clone(), l2.clone()]);
    assert!(net.nodes[2].rib.loc(&n("10.255.0.1/32")).is_none());
    let mut l2 = l2;
    l2.neighbors[0].allow_own_as = 1;
    let net = Net::new(vec![l1, spine, l2]);
    assert!(net.nodes[2].rib.loc(&n("10.255.0.1/32")).is_some());
}

// ---- a raw peer: replays hand-made bytes into one speaker ----

struct Raw {
    sp: Speaker,
    peer: PeerId,
    conn: ConnId,
    sent: Vec<Message>,
    fib: HashMap<Nlri, Vec<IpAddr>>,
    closed: bool,
    now: u64,
}

impl Raw {
    fn new() -> Raw {
        Raw::with_caps(vec![])
    }

    /// Established with a peer whose OPEN adds `caps` to IPv4 unicast.
    fn with_caps(caps: Vec<Capability>) -> Raw {
        let mut cfg = speaker(65001, "10.0.0.1", &[("10.0.0.2", 65002)]);
        cfg.neighbors[0].passive = true;
        let mut sp = Speaker::new(cfg).unwrap();
        sp.start(0);
        let peer = sp.peer_by_addr(ip("10.0.0.2")).unwrap();
        let mut raw = Raw { sp, peer, conn: 0, sent: Vec::new(), fib: HashMap::new(), closed: false, now: 0 };
        raw.connect(caps);
        raw
    }

    /// A new connection from the peer, up to Established.
    fn connect(&mut self, caps: Vec<Capability>) {
        // Past the idle hold time after an earlier session, Idle refuses connections.
        self.sp.handle_timeout(self.now);
        self.conn = self.sp.accepted(self.now, self.peer, ip("10.0.0.1"));
        self.closed = false;
        self.drain();
        let mut all = vec![Capability::Multiprotocol(crate::packet::AfiSafi::IPV4_UNICAST)];
        all.extend(caps);
        let open = Open::new(65002, 90, Ipv4Addr::new(10, 0, 0, 2), all);
        self.feed(&Message::Open(open).to_bytes(&DecodeContext::default()));
        self.feed(&Message::Keepalive.to_bytes(&DecodeContext::default()));
        assert_eq!(self.state(), State::Established);
    }

    fn feed(&mut self, bytes: &[u8]) {
        self.sp.received(self.now, self.peer, self.conn, bytes);
        self.drain();
    }

    fn drain(&mut self) {
        while let Some(o) = self.sp.poll_output() {
            match o {
                Output::Send { bytes, .. } => {
                    let mut at = 0;
                    while let Ok(Some(len)) = frame_len(&bytes[at..], 65535) {
                        self.sent.push(crate::packet::decode_message(&bytes[at..at + len]).unwrap());
                        at += len;
                    }
                }
                Output::Fib(change) => match ip_route(&change) {
                    Some((nlri, hops)) if hops.is_empty() => {
                        self.fib.remove(&nlri);
                    }
                    Some((nlri, hops)) => {
                        self.fib.insert(nlri, hops);
                    }
                    None => {}
                },
                Output::Close { .. } => self.closed = true,
                _ => {}
            }
        }
    }

    fn state(&self) -> State {
        self.sp.peer(self.peer).unwrap().fsm.state()
    }
}

use crate::packet::{Capability, Open};

fn raw_update(attrs: &[u8], nlri: &[u8]) -> Vec<u8> {
    let mut body = vec![0, 0];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend_from_slice(attrs);
    body.extend_from_slice(nlri);
    let mut msg = vec![0xff; 16];
    msg.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    msg.push(2);
    msg.extend_from_slice(&body);
    msg
}

const GOOD: [u8; 20] = [0x40, 1, 1, 0, 0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xea, 0x40, 3, 4, 10, 0, 0, 2];

#[test]
fn replayed_update_installs_and_rfc7606_treat_as_withdraw_keeps_session_up() {
    let mut raw = Raw::new();
    raw.feed(&raw_update(&GOOD, &[24, 10, 9, 9]));
    assert_eq!(raw.fib.get(&n("10.9.9.0/24")), Some(&vec![ip("10.0.0.2")]));
    // Same prefix again with ORIGIN = 7: treat-as-withdraw (RFC 7606 §7.1).
    let mut bad = GOOD;
    bad[3] = 7;
    raw.feed(&raw_update(&bad, &[24, 10, 9, 9]));
    assert_eq!(raw.fib.get(&n("10.9.9.0/24")), None, "route withdrawn");
    assert_eq!(raw.state(), State::Established, "session stays up");
    assert!(!raw.closed);
    let s = &raw.sp.summary(0)[0];
    assert_eq!(s.errors.treat_as_withdraw, 1);
    // Attribute discard: bad ATOMIC_AGGREGATE; the route stays.
    let with_bad_atomic = [&GOOD[..], &[0x40, 6, 1, 0]].concat();
    raw.feed(&raw_update(&with_bad_atomic, &[24, 10, 9, 9]));
    assert!(raw.fib.contains_key(&n("10.9.9.0/24")));
    assert_eq!(raw.sp.summary(0)[0].errors.attribute_discard, 1);
    assert_eq!(raw.state(), State::Established);
    // Session reset: an unrecognized well-known attribute.
    let reset = [&GOOD[..], &[0x40, 99, 0]].concat();
    raw.feed(&raw_update(&reset, &[24, 10, 9, 9]));
    assert_ne!(raw.state(), State::Established);
    assert!(raw.closed);
    assert!(matches!(raw.sent.last(), Some(Message::Notification(Notification { code: 3, subcode: 2, .. }))));
    assert!(raw.fib.is_empty());
}

#[test]
fn next_hop_that_is_multicast_broadcast_or_our_own_makes_no_route() {
    let mut raw = Raw::new();
    // GOOD's NEXT_HOP value sits in its last four bytes.
    for bad_next_hop in [[224, 0, 0, 5], [255, 255, 255, 255], [10, 0, 0, 1], [0, 0, 0, 0]] {
        let mut attrs = GOOD;
        attrs[16..].copy_from_slice(&bad_next_hop);
        raw.feed(&raw_update(&attrs, &[24, 10, 9, 9]));
        assert_eq!(raw.fib.get(&n("10.9.9.0/24")), None, "next hop {bad_next_hop:?} installed");
        assert_eq!(raw.state(), State::Established, "a bad next hop is no reason to reset");
    }
    raw.feed(&raw_update(&GOOD, &[24, 10, 9, 9]));
    assert_eq!(raw.fib.get(&n("10.9.9.0/24")), Some(&vec![ip("10.0.0.2")]));
    // A later UPDATE through our own address replaces the route, so it goes.
    let mut own = GOOD;
    own[16..].copy_from_slice(&[10, 0, 0, 1]);
    raw.feed(&raw_update(&own, &[24, 10, 9, 9]));
    assert_eq!(raw.fib.get(&n("10.9.9.0/24")), None);
}

/// RFC 8950: IPv4 NLRI with an IPv6 next hop makes a route only when the
/// Extended Next Hop Encoding capability was negotiated (both offered it).
#[test]
fn ipv4_routes_with_ipv6_next_hops_need_the_extended_next_hop_capability() {
    let offer = Capability::ExtendedNextHop(vec![crate::packet::capability::ExtendedNextHop::IPV4_UNICAST_OVER_IPV6]);
    // ORIGIN and AS_PATH of GOOD, then MP_REACH_NLRI: AFI 1, SAFI 1, a
    // 16-octet next hop 2001:db8::2, 10.9.9.0/24.
    let mut mp = vec![0x80, 14, 25, 0, 1, 1, 16];
    mp.extend_from_slice(&"2001:db8::2".parse::<std::net::Ipv6Addr>().unwrap().octets());
    mp.extend_from_slice(&[0, 24, 10, 9, 9]);
    let update = raw_update(&[&GOOD[..13], &mp].concat(), &[]);
    for (ours, theirs, installed) in [(true, true, true), (false, true, false), (true, false, false)] {
        let mut cfg = speaker(65001, "10.0.0.1", &[("10.0.0.2", 65002)]);
        cfg.neighbors[0].passive = true;
        cfg.neighbors[0].extended_next_hop = ours;
        let mut sp = Speaker::new(cfg).unwrap();
        sp.start(0);
        let peer = sp.peer_by_addr(ip("10.0.0.2")).unwrap();
        let mut raw = Raw { sp, peer, conn: 0, sent: Vec::new(), fib: HashMap::new(), closed: false, now: 0 };
        raw.connect(if theirs { vec![offer.clone()] } else { vec![] });
        raw.feed(&update);
        let want = installed.then(|| vec![ip("2001:db8::2")]);
        assert_eq!(raw.fib.get(&n("10.9.9.0/24")).cloned(), want, "ours {ours}, theirs {theirs}");
        assert_eq!(raw.state(), State::Established, "an unusable next hop is no reason to reset");
    }
}

#[test]
fn afi_safi_disable_drops_the_family_for_the_session() {
    let mut raw = Raw::new();
    raw.feed(&raw_update(&GOOD, &[24, 10, 9, 9]));
    // MP_REACH_NLRI for IPv4 unicast with a 5-byte next hop.
    let mp = [0x80, 14, 10, 0, 1, 1, 5, 1, 2, 3, 4, 5, 0];
    raw.feed(&raw_update(&[&mp[..], &GOOD].concat(), &[]));
    assert!(raw.fib.is_empty(), "every IPv4 route of the peer is gone");
    assert_eq!(raw.state(), State::Established);
    raw.feed(&raw_update(&GOOD, &[24, 10, 8, 8]));
    assert!(raw.fib.is_empty(), "and later ones are ignored");
    assert_eq!(raw.sp.summary(0)[0].disabled_families, vec![Family::Ipv4Unicast]);
}

#[test]
fn an_afi_safi_disable_does_not_install_the_other_nlri_with_invented_attributes() {
    let mut raw = Raw::new();
    raw.feed(&raw_update(&GOOD, &[24, 10, 9, 9]));
    assert!(raw.fib.contains_key(&n("10.9.9.0/24")));
    // One UPDATE: an IPv6 MP_REACH_NLRI with a 5-byte next hop (AFI/SAFI
    // disable for IPv6) and ORIGIN 7 (treat-as-withdraw) for its IPv4 NLRI.
    let mp_v6 = [0x80, 14, 10, 0, 2, 1, 5, 1, 2, 3, 4, 5, 0];
    let mut bad_origin = GOOD;
    bad_origin[3] = 7;
    raw.feed(&raw_update(&[&mp_v6[..], &bad_origin].concat(), &[24, 10, 9, 9]));
    assert_eq!(raw.fib.get(&n("10.9.9.0/24")), None, "the IPv4 NLRI is treated as withdrawn");
    assert_eq!(raw.state(), State::Established);
    let summary = &raw.sp.summary(0)[0];
    assert_eq!((summary.errors.treat_as_withdraw, summary.errors.afi_safi_disable), (1, 1));
}

#[test]
fn established_peer_gets_table_and_end_of_rib() {
    let mut raw = Raw::new();
    let sent: Vec<&Message> = raw.sent.iter().filter(|m| matches!(m, Message::Update(_))).collect();
    let Message::Update(eor) = sent.last().unwrap() else { panic!() };
    assert_eq!(eor.end_of_rib(), Some(crate::packet::AfiSafi::IPV4_UNICAST));
    raw.sp.add_network(n("10.100.0.0/16"));
    raw.drain();
    let Some(Message::Update(u)) = raw.sent.last() else { panic!() };
    assert_eq!(u.nlri, vec![n("10.100.0.0/16")]);
    assert_eq!(u.attrs.as_path.to_string(), "65001");
    assert_eq!(u.attrs.next_hop, Some(ip("10.0.0.1")));
    // Route refresh re-sends it.
    let rr = Message::RouteRefresh(crate::packet::RouteRefresh {
        afi_safi: crate::packet::AfiSafi::IPV4_UNICAST,
        subtype: 0,
    });
    let before = raw.sent.len();
    raw.feed(&rr.to_bytes(&DecodeContext::default()));
    assert!(raw.sent[before..].iter().any(|m| matches!(m, Message::Update(u) if u.nlri == vec![n("10.100.0.0/16")])));
}

#[test]
fn route_refresh_of_an_unknown_subtype_is_ignored() {
    let mut raw = Raw::new();
    raw.sp.add_network(n("10.100.0.0/16"));
    raw.drain();
    for subtype in [1, 2, 7, 255] {
        let rr = Message::RouteRefresh(crate::packet::RouteRefresh {
            afi_safi: crate::packet::AfiSafi::IPV4_UNICAST,
            subtype,
        });
        let before = raw.sent.len();
        raw.feed(&rr.to_bytes(&DecodeContext::default()));
        assert_eq!(raw.sent.len(), before, "subtype {subtype}: RFC 7313 §5 says ignore");
        assert_eq!(raw.state(), State::Established);
    }
}

#[test]
fn a_malformed_notification_closes_the_session_without_one_in_reply() {
    let mut raw = Raw::new();
    // A NOTIFICATION of 20 octets: the error code, no subcode (21 is the minimum).
    let mut bad = vec![0xff; 16];
    bad.extend_from_slice(&[0, 20, 3, 6]);
    let before = raw.sent.len();
    raw.feed(&bad);
    assert_ne!(raw.state(), State::Established);
    assert!(raw.closed);
    assert!(
        !raw.sent[before..].iter().any(|m| matches!(m, Message::Notification(_))),
        "RFC 4271 §6.4: no NOTIFICATION answers a malformed one"
    );
}

#[test]
fn a_long_update_before_extended_messages_are_negotiated_is_a_length_error() {
    let mut cfg = speaker(65001, "10.0.0.1", &[("10.0.0.2", 65002)]);
    cfg.neighbors[0].passive = true;
    let mut sp = Speaker::new(cfg).unwrap();
    sp.start(0);
    let peer = sp.peer_by_addr(ip("10.0.0.2")).unwrap();
    let mut raw = Raw { sp, peer, conn: 0, sent: Vec::new(), fib: HashMap::new(), closed: false, now: 0 };
    raw.conn = raw.sp.accepted(0, peer, ip("10.0.0.1"));
    raw.drain();
    assert_eq!(raw.state(), State::OpenSent);
    // 1,250 /24s: an UPDATE of 5,037 octets, over 4096.
    let nlri: Vec<u8> = (0..1250u32).flat_map(|i| [24, 10, (i >> 8) as u8, i as u8]).collect();
    raw.feed(&raw_update(&GOOD, &nlri));
    assert!(raw.closed);
    assert!(
        matches!(raw.sent.last(), Some(Message::Notification(Notification { code: 1, subcode: 2, .. }))),
        "header error, bad message length: {:?}",
        raw.sent.last()
    );
}

fn graceful_restart(restart_time: u16, forwarding: bool) -> Capability {
    Capability::GracefulRestart {
        restarting: false,
        restart_time,
        families: vec![crate::packet::capability::GracefulRestartFamily {
            afi_safi: crate::packet::AfiSafi::IPV4_UNICAST,
            forwarding_preserved: forwarding,
        }],
    }
}

fn end_of_rib() -> Vec<u8> {
    let mut b = Vec::new();
    crate::packet::update::encode_end_of_rib(Family::Ipv4Unicast, &mut b);
    b
}

#[test]
fn graceful_restart_helper_keeps_routes_until_end_of_rib() {
    let mut raw = Raw::with_caps(vec![graceful_restart(120, true)]);
    raw.feed(&raw_update(&GOOD, &[24, 10, 9, 9, 24, 10, 8, 8]));
    assert_eq!(raw.fib.len(), 2);
    // The TCP connection drops without a NOTIFICATION: routes stay, stale.
    raw.sp.closed(raw.now, raw.peer, raw.conn);
    raw.drain();
    assert_ne!(raw.state(), State::Established);
    assert_eq!(raw.fib.len(), 2, "forwarding continues through the restart");
    assert_eq!(raw.sp.summary(0)[0].stale_routes, 2);
    // The peer comes back, re-sends one route, then End-of-RIB: the other goes.
    raw.now += 5 * S;
    raw.connect(vec![graceful_restart(120, true)]);
    assert_eq!(raw.fib.len(), 2, "stale routes wait for End-of-RIB");
    raw.feed(&raw_update(&GOOD, &[24, 10, 9, 9]));
    raw.feed(&end_of_rib());
    assert_eq!(raw.fib.keys().copied().collect::<Vec<_>>(), vec![n("10.9.9.0/24")]);
    assert_eq!(raw.sp.summary(0)[0].stale_routes, 0);
}

#[test]
fn graceful_restart_helper_gives_up_after_the_restart_time() {
    let mut raw = Raw::with_caps(vec![graceful_restart(30, true)]);
    raw.feed(&raw_update(&GOOD, &[24, 10, 9, 9]));
    raw.sp.closed(raw.now, raw.peer, raw.conn);
    raw.drain();
    assert_eq!(raw.fib.len(), 1);
    raw.sp.handle_timeout(29 * S);
    raw.drain();
    assert_eq!(raw.fib.len(), 1);
    raw.sp.handle_timeout(30 * S);
    raw.drain();
    assert!(raw.fib.is_empty(), "restart time over");
}

#[test]
fn no_graceful_restart_after_a_notification_or_without_the_capability() {
    // Without the capability: routes go at once.
    let mut raw = Raw::new();
    raw.feed(&raw_update(&GOOD, &[24, 10, 9, 9]));
    raw.sp.closed(raw.now, raw.peer, raw.conn);
    raw.drain();
    assert!(raw.fib.is_empty());
    // With it, but the session ended with a NOTIFICATION.
    let mut raw = Raw::with_caps(vec![graceful_restart(120, true)]);
    raw.feed(&raw_update(&GOOD, &[24, 10, 9, 9]));
    raw.feed(&Message::Notification(Notification::cease(2)).to_bytes(&DecodeContext::default()));
    assert!(raw.fib.is_empty());
    // Back without the Forwarding State bit: stale routes go on Established.
    let mut raw = Raw::with_caps(vec![graceful_restart(120, true)]);
    raw.feed(&raw_update(&GOOD, &[24, 10, 9, 9]));
    raw.sp.closed(raw.now, raw.peer, raw.conn);
    raw.drain();
    assert_eq!(raw.fib.len(), 1);
    raw.now += 2 * S;
    raw.connect(vec![graceful_restart(120, false)]);
    assert!(raw.fib.is_empty());
}

#[test]
fn transit_packs_many_prefixes_per_update() {
    // A originates 3000 /24s; B passes them on to C, packed.
    let mut a = speaker(65001, "10.0.0.1", &[("10.0.0.2", 65002)]);
    a.networks = (0..3000u32)
        .map(|i| Nlri::Ipv4(crate::packet::Ipv4Prefix::new(Ipv4Addr::from((20u32 << 24) + (i << 8)), 24).unwrap()))
        .collect();
    let b = speaker(65002, "10.0.0.2", &[("10.0.0.1", 65001), ("10.0.0.3", 65003)]);
    let c = speaker(65003, "10.0.0.3", &[("10.0.0.2", 65002)]);
    let net = Net::new(vec![a, b, c]);
    assert_eq!(net.nodes[2].rib.loc_len(), 3000);
    let updates_at_c = net.nodes[2].summary(0)[0].counters.received.update;
    // 3000 prefixes of 4 bytes fit in 3 full 4096-byte UPDATEs, plus two
    // End-of-RIB markers; B may forward them in a few batches (7 seen), never
    // one by one.
    assert!(updates_at_c <= 8, "{updates_at_c} UPDATEs for 3000 prefixes");
    let path = &net.nodes[2].routes(Family::Ipv4Unicast, Some(&n("20.0.1.0/24")))[0].paths[0];
    assert_eq!(path.as_path, "65002 65001");
    assert_eq!(path.next_hop, Some(ip("10.0.0.2")));
}

mod evpn;
