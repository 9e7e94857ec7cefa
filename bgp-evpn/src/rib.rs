//! Routing information bases (RFC 4271 §3.2): Adj-RIB-In and Adj-RIB-Out per
//! peer, the Loc-RIB, and the attribute interner that lets a million routes
//! share a handful of attribute sets.
//!
//! Everything is keyed by [`Nlri`], so a new address family needs no change here.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::decision::{self, Candidate, LOCAL_WEIGHT, MultipathConfig, PeerKind};
use crate::fib::NextHop;
use crate::packet::evpn::{Esi, EvpnRoute, MacAddr, RouteDistinguisher};
use crate::packet::{Family, Ipv4Prefix, Ipv6Prefix, Nlri, PathAttrs};

/// Index of a peer in the RIB; [`LOCAL_PEER`] originates our own routes.
pub type PeerId = usize;
pub const LOCAL_PEER: PeerId = 0;

/// What the decision process needs to know about a peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    pub addr: Option<IpAddr>,
    pub router_id: Ipv4Addr,
    pub asn: u32,
    pub kind: PeerKind,
    pub weight: u32,
    /// RFC 4456 route-reflector client.
    pub rr_client: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub peer: PeerId,
    pub attrs: Arc<PathAttrs>,
}

/// A Loc-RIB entry: the best path, then the other equal-cost paths used
/// for forwarding. Kept small (32 bytes): there is one per destination, and
/// most destinations have a single path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocEntry {
    best: Route,
    // A thin pointer (8 bytes) instead of a 24-byte Vec: rarely present.
    #[allow(clippy::box_collection)]
    more: Option<Box<Vec<Route>>>,
    reason: u8,
}

impl LocEntry {
    /// `paths` is best first and not empty.
    pub fn new(mut paths: Vec<Route>, reason: &'static str) -> Option<LocEntry> {
        if paths.is_empty() {
            return None;
        }
        let best = paths.remove(0);
        let more = (!paths.is_empty()).then(|| Box::new(paths));
        let reason = decision::REASONS.iter().position(|r| *r == reason).unwrap_or(0) as u8;
        Some(LocEntry { best, more, reason })
    }

    pub fn best(&self) -> &Route {
        &self.best
    }

    /// Every selected path, best first.
    pub fn paths(&self) -> impl Iterator<Item = &Route> {
        core::iter::once(&self.best).chain(self.more.iter().flat_map(|m| m.iter()))
    }

    /// Which decision step chose the best path.
    pub fn reason(&self) -> &'static str {
        decision::REASONS.get(self.reason as usize).copied().unwrap_or("")
    }

    /// Next hops to install: none for locally originated routes. An
    /// IPv4-mapped IPv6 next hop (what a peer without a global IPv6 address
    /// sends for IPv6 routes over an IPv4 session) is no neighbour on the
    /// link: forward through the IPv4 address it maps (RFC 8950 style).
    pub fn next_hops(&self) -> Vec<IpAddr> {
        if self.best.peer == LOCAL_PEER {
            return Vec::new();
        }
        let unmap = |ip: IpAddr| match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        let mut hops: Vec<IpAddr> = self.paths().filter_map(|r| r.attrs.next_hop).map(unmap).collect();
        hops.dedup();
        hops
    }
}

/// A Loc-RIB change for one destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocChange {
    pub nlri: Nlri,
    /// The best path changed (or appeared/disappeared): re-advertise.
    pub best_changed: bool,
    /// New forwarding next hops of an IP route, when they changed; empty
    /// means remove. EVPN routes have none here: what they install depends
    /// on the MAC-VRFs and IP-VRFs that import them (`evpn`).
    pub fib: Option<Vec<NextHop>>,
}

/// The key of a type 2 (MAC/IP advertisement) route without an IP or with
/// an IPv4 address, in 24 bytes instead of an [`EvpnRoute`]'s 68: these are
/// nearly every EVPN route a VTEP holds (a MAC route and a MAC+IPv4 route per
/// host), and each RIB keeps one key per route. Only keys in key form
/// ([`EvpnRoute::key`]: no ESI, no labels) whose RD reads back the same from
/// its bytes are packed; the rest stay [`EvpnRoute`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MacIpKey([u64; 3]);

impl MacIpKey {
    /// The packed key of `route`, if it is one this packs.
    pub fn pack(route: &EvpnRoute) -> Option<MacIpKey> {
        let EvpnRoute::MacIpAdvertisement { rd, esi, ethernet_tag, mac, ip, label1: 0, label2: None } = *route else {
            return None;
        };
        let rd_bytes = rd.to_bytes();
        if esi != Esi::ZERO || RouteDistinguisher::from_bytes(rd_bytes) != rd {
            return None;
        }
        let (flag, ip) = match ip {
            None => (0u8, [0; 4]),
            Some(IpAddr::V4(v4)) => (1, v4.octets()),
            Some(IpAddr::V6(_)) => return None,
        };
        let t = ethernet_tag.to_be_bytes();
        let m = mac.0;
        Some(MacIpKey([
            u64::from_be_bytes(rd_bytes),
            u64::from_be_bytes([t[0], t[1], t[2], t[3], m[0], m[1], m[2], m[3]]),
            u64::from_be_bytes([m[4], m[5], ip[0], ip[1], ip[2], ip[3], flag, 0]),
        ]))
    }

    /// The route key it packs.
    pub fn route(self) -> EvpnRoute {
        let [rd, b, c] = self.0.map(u64::to_be_bytes);
        let ip = (c[6] == 1).then(|| IpAddr::V4(Ipv4Addr::new(c[2], c[3], c[4], c[5])));
        EvpnRoute::MacIpAdvertisement {
            rd: RouteDistinguisher::from_bytes(rd),
            esi: Esi::ZERO,
            ethernet_tag: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            mac: MacAddr([b[4], b[5], b[6], b[7], c[0], c[1]]),
            ip,
            label1: 0,
            label2: None,
        }
    }
}

/// A map keyed by NLRI with one table per family, each keyed by that
/// family's own prefix type: an IPv4 entry is then 16 bytes, not 32 as with
/// `Nlri` keys (sized for IPv6), which matters at a million routes.
#[derive(Debug, Clone)]
pub struct NlriMap<V> {
    v4: FxHashMap<Ipv4Prefix, V>,
    v6: FxHashMap<Ipv6Prefix, V>,
    /// Type 2 EVPN routes whose key packs into a [`MacIpKey`].
    mac_ip: FxHashMap<MacIpKey, V>,
    /// The other EVPN routes, in key form ([`EvpnRoute::key`]).
    evpn: FxHashMap<EvpnRoute, V>,
}

impl<V> Default for NlriMap<V> {
    fn default() -> Self {
        NlriMap {
            v4: FxHashMap::default(),
            v6: FxHashMap::default(),
            mac_ip: FxHashMap::default(),
            evpn: FxHashMap::default(),
        }
    }
}

impl<V> NlriMap<V> {
    pub fn get(&self, nlri: &Nlri) -> Option<&V> {
        match nlri {
            Nlri::Ipv4(p) => self.v4.get(p),
            Nlri::Ipv6(p) => self.v6.get(p),
            Nlri::Evpn(r) => match MacIpKey::pack(r) {
                Some(k) => self.mac_ip.get(&k),
                None => self.evpn.get(r),
            },
        }
    }

    pub fn insert(&mut self, nlri: Nlri, value: V) -> Option<V> {
        match nlri {
            Nlri::Ipv4(p) => self.v4.insert(p, value),
            Nlri::Ipv6(p) => self.v6.insert(p, value),
            Nlri::Evpn(r) => match MacIpKey::pack(&r) {
                Some(k) => self.mac_ip.insert(k, value),
                None => self.evpn.insert(r, value),
            },
        }
    }

    pub fn remove(&mut self, nlri: &Nlri) -> Option<V> {
        match nlri {
            Nlri::Ipv4(p) => self.v4.remove(p),
            Nlri::Ipv6(p) => self.v6.remove(p),
            Nlri::Evpn(r) => match MacIpKey::pack(r) {
                Some(k) => self.mac_ip.remove(&k),
                None => self.evpn.remove(r),
            },
        }
    }

    pub fn contains_key(&self, nlri: &Nlri) -> bool {
        self.get(nlri).is_some()
    }

    pub fn len(&self) -> usize {
        self.v4.len() + self.v6.len() + self.mac_ip.len() + self.evpn.len()
    }

    /// Entries of one family.
    pub fn len_of(&self, family: Family) -> usize {
        match family {
            Family::Ipv4Unicast => self.v4.len(),
            Family::Ipv6Unicast => self.v6.len(),
            Family::L2vpnEvpn => self.mac_ip.len() + self.evpn.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = (Nlri, &V)> {
        let v4 = self.v4.iter().map(|(p, v)| (Nlri::Ipv4(*p), v));
        let v6 = self.v6.iter().map(|(p, v)| (Nlri::Ipv6(*p), v));
        v4.chain(v6).chain(self.evpn_iter())
    }

    fn evpn_iter(&self) -> impl Iterator<Item = (Nlri, &V)> {
        let mac_ip = self.mac_ip.iter().map(|(k, v)| (Nlri::Evpn(k.route()), v));
        mac_ip.chain(self.evpn.iter().map(|(r, v)| (Nlri::Evpn(*r), v)))
    }

    /// Entries of one family.
    pub fn iter_of(&self, family: Family) -> Box<dyn Iterator<Item = (Nlri, &V)> + '_> {
        match family {
            Family::Ipv4Unicast => Box::new(self.v4.iter().map(|(p, v)| (Nlri::Ipv4(*p), v))),
            Family::Ipv6Unicast => Box::new(self.v6.iter().map(|(p, v)| (Nlri::Ipv6(*p), v))),
            Family::L2vpnEvpn => Box::new(self.evpn_iter()),
        }
    }

    pub fn keys(&self) -> impl Iterator<Item = Nlri> + '_ {
        self.iter().map(|(n, _)| n)
    }

    /// Keys of one family, or all.
    pub fn keys_of(&self, family: Option<Family>) -> Vec<Nlri> {
        match family {
            None => self.keys().collect(),
            Some(Family::Ipv4Unicast) => self.v4.keys().map(|p| Nlri::Ipv4(*p)).collect(),
            Some(Family::Ipv6Unicast) => self.v6.keys().map(|p| Nlri::Ipv6(*p)).collect(),
            Some(Family::L2vpnEvpn) => self.evpn_iter().map(|(n, _)| n).collect(),
        }
    }

    /// Empties one family's table, or all, releasing the memory.
    pub fn clear(&mut self, family: Option<Family>) {
        if family.is_none_or(|f| f == Family::Ipv4Unicast) {
            self.v4 = FxHashMap::default();
        }
        if family.is_none_or(|f| f == Family::Ipv6Unicast) {
            self.v6 = FxHashMap::default();
        }
        if family.is_none_or(|f| f == Family::L2vpnEvpn) {
            self.mac_ip = FxHashMap::default();
            self.evpn = FxHashMap::default();
        }
    }
}

pub type RouteMap = NlriMap<Arc<PathAttrs>>;

#[derive(Debug, Default)]
pub struct Rib {
    pub peers: Vec<PeerInfo>,
    adj_in: Vec<RouteMap>,
    adj_out: Vec<RouteMap>,
    pub(crate) loc: NlriMap<LocEntry>,
    interner: FxHashSet<Arc<PathAttrs>>,
    pub multipath: MultipathConfig,
}

impl Rib {
    pub fn new(router_id: Ipv4Addr, local_as: u32, multipath: MultipathConfig) -> Rib {
        let mut rib = Rib { multipath, ..Default::default() };
        rib.add_peer(PeerInfo {
            addr: None,
            router_id,
            asn: local_as,
            kind: PeerKind::Local,
            weight: LOCAL_WEIGHT,
            rr_client: false,
        });
        rib
    }

    pub fn add_peer(&mut self, info: PeerInfo) -> PeerId {
        self.peers.push(info);
        self.adj_in.push(RouteMap::default());
        self.adj_out.push(RouteMap::default());
        self.peers.len() - 1
    }

    /// Returns the shared copy of `attrs`.
    pub fn intern(&mut self, attrs: PathAttrs) -> Arc<PathAttrs> {
        if let Some(a) = self.interner.get(&attrs) {
            return a.clone();
        }
        let a = Arc::new(attrs);
        self.interner.insert(a.clone());
        a
    }

    /// Drops interned attribute sets no route uses any more.
    pub fn collect_garbage(&mut self) {
        self.interner.retain(|a| Arc::strong_count(a) > 1);
    }

    pub fn interned(&self) -> usize {
        self.interner.len()
    }

    // ---- Adj-RIB-In ----

    /// Sets (or with `None` removes) a route from `peer`; true when it changed.
    pub fn set_in(&mut self, peer: PeerId, nlri: Nlri, attrs: Option<Arc<PathAttrs>>) -> bool {
        let table = &mut self.adj_in[peer];
        match attrs {
            Some(a) => match table.insert(nlri, a.clone()) {
                Some(old) => !Arc::ptr_eq(&old, &a),
                None => true,
            },
            None => table.remove(&nlri).is_some(),
        }
    }

    pub fn adj_in(&self, peer: PeerId) -> &RouteMap {
        &self.adj_in[peer]
    }

    /// Removes every route from `peer` (of `family`, if given) and returns their keys.
    pub fn clear_in(&mut self, peer: PeerId, family: Option<Family>) -> Vec<Nlri> {
        let table = &mut self.adj_in[peer];
        let keys = table.keys_of(family);
        table.clear(family);
        keys
    }

    // ---- Loc-RIB ----

    pub fn loc(&self, nlri: &Nlri) -> Option<&LocEntry> {
        self.loc.get(nlri)
    }

    pub fn loc_iter(&self) -> impl Iterator<Item = (Nlri, &LocEntry)> {
        self.loc.iter()
    }

    pub fn loc_len(&self) -> usize {
        self.loc.len()
    }

    /// Every candidate route for `nlri`, one per peer.
    pub fn candidates(&self, nlri: &Nlri) -> Vec<Route> {
        self.adj_in
            .iter()
            .enumerate()
            .filter_map(|(peer, table)| table.get(nlri).map(|a| Route { peer, attrs: a.clone() }))
            .collect()
    }

    /// Runs the decision process for `nlri` and updates the Loc-RIB.
    pub fn decide(&mut self, nlri: Nlri) -> Option<LocChange> {
        let routes = self.candidates(&nlri);
        // One candidate (the common case while a table loads) needs no decision.
        let new = if routes.len() == 1 { LocEntry::new(routes, decision::REASONS[0]) } else { self.select(&routes) };
        self.commit(nlri, new)
    }

    fn select(&self, routes: &[Route]) -> Option<LocEntry> {
        let cands: Vec<Candidate> = routes
            .iter()
            .map(|r| {
                let p = &self.peers[r.peer];
                Candidate {
                    attrs: &r.attrs,
                    kind: p.kind,
                    weight: p.weight,
                    peer_router_id: p.router_id,
                    peer_addr: p.addr,
                    igp_cost: None,
                }
            })
            .collect();
        decision::select(&cands, &self.multipath)
            .and_then(|sel| LocEntry::new(sel.multipath.iter().map(|&i| routes[i].clone()).collect(), sel.reason))
    }

    /// Stores the new entry for `nlri` and says what changed.
    fn commit(&mut self, nlri: Nlri, new: Option<LocEntry>) -> Option<LocChange> {
        // EVPN routes have no forwarding next hops here (see `LocChange::fib`).
        let ip_route = nlri.family() != Family::L2vpnEvpn;
        let hops =
            |e: Option<&LocEntry>| if ip_route { e.map(LocEntry::next_hops).unwrap_or_default() } else { Vec::new() };
        let old_hops = hops(self.loc.get(&nlri));
        let new_hops = hops(new.as_ref());
        let same_best = match (self.loc.get(&nlri).map(LocEntry::best), new.as_ref().map(LocEntry::best)) {
            (Some(a), Some(b)) => a.peer == b.peer && Arc::ptr_eq(&a.attrs, &b.attrs),
            (None, None) => true,
            _ => false,
        };
        match new {
            Some(e) => {
                self.loc.insert(nlri, e);
            }
            None => {
                self.loc.remove(&nlri);
            }
        }
        let fib = (ip_route && old_hops != new_hops).then(|| new_hops.into_iter().map(NextHop::Ip).collect());
        (!same_best || fib.is_some()).then_some(LocChange { nlri, best_changed: !same_best, fib })
    }

    // ---- Adj-RIB-Out ----

    pub fn adj_out(&self, peer: PeerId) -> &RouteMap {
        &self.adj_out[peer]
    }

    pub fn set_out(&mut self, peer: PeerId, nlri: Nlri, attrs: Option<Arc<PathAttrs>>) {
        match attrs {
            Some(a) => self.adj_out[peer].insert(nlri, a),
            None => self.adj_out[peer].remove(&nlri),
        };
    }

    pub fn clear_out(&mut self, peer: PeerId, family: Option<Family>) {
        match family {
            None => self.adj_out[peer].clear(None),
            Some(f) => self.adj_out[peer].clear(Some(f)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::AsPath;

    fn rib() -> Rib {
        let mut rib = Rib::new(Ipv4Addr::new(1, 1, 1, 1), 65000, MultipathConfig::default());
        for i in 1..=2u8 {
            rib.add_peer(PeerInfo {
                addr: Some(IpAddr::from([10, 0, i, 1])),
                router_id: Ipv4Addr::new(i, i, i, i),
                asn: 65000 + i as u32,
                kind: PeerKind::External,
                weight: 0,
                rr_client: false,
            });
        }
        rib
    }

    fn attrs(path: &[u32], nh: [u8; 4]) -> PathAttrs {
        PathAttrs {
            as_path: AsPath::from_sequence(path.iter().copied()),
            next_hop: Some(IpAddr::from(nh)),
            ..Default::default()
        }
    }

    #[test]
    fn loc_entries_stay_small() {
        assert_eq!(core::mem::size_of::<LocEntry>(), 32);
    }

    fn type2(rd: RouteDistinguisher, tag: u32, mac: [u8; 6], ip: Option<&str>) -> EvpnRoute {
        EvpnRoute::MacIpAdvertisement {
            rd,
            esi: Esi::ZERO,
            ethernet_tag: tag,
            mac: MacAddr(mac),
            ip: ip.map(|s| s.parse().unwrap()),
            label1: 0,
            label2: None,
        }
    }

    /// A type 2 route costs its RIBs a 24-byte key, not a 68-byte
    /// `EvpnRoute`: 56 bytes a Loc-RIB slot, 32 an Adj-RIB slot.
    #[test]
    fn type2_keys_pack_into_24_bytes_and_read_back_whole() {
        assert_eq!(core::mem::size_of::<(MacIpKey, LocEntry)>(), 56);
        assert_eq!(core::mem::size_of::<(MacIpKey, Arc<PathAttrs>)>(), 32);
        let rds = [
            RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(10, 77, 0, 1), number: 100 },
            RouteDistinguisher::As2 { asn: 65000, number: 0xdead_beef },
            RouteDistinguisher::As4 { asn: 4_200_000_000, number: 7 },
        ];
        for rd in rds {
            for ip in [None, Some("100.64.0.1"), Some("0.0.0.0"), Some("255.255.255.255")] {
                for (tag, mac) in [(0, [2, 0x77, 0, 0, 0, 1]), (u32::MAX, [0xff; 6]), (5, [0; 6])] {
                    let route = type2(rd, tag, mac, ip);
                    let key = MacIpKey::pack(&route).expect("packs");
                    assert_eq!(key.route(), route);
                }
            }
        }
        // Different routes, different keys (no IP is not 0.0.0.0).
        let rd = rds[0];
        let mac = [2, 0, 0, 0, 0, 1];
        assert_ne!(MacIpKey::pack(&type2(rd, 0, mac, None)), MacIpKey::pack(&type2(rd, 0, mac, Some("0.0.0.0"))));
        // What does not pack stays whole.
        assert_eq!(MacIpKey::pack(&type2(rd, 0, mac, Some("fd00::1"))), None);
        let odd_rd = RouteDistinguisher::Other([0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(MacIpKey::pack(&type2(odd_rd, 0, mac, None)), None);
        let whole = EvpnRoute::MacIpAdvertisement {
            rd,
            esi: Esi::ZERO,
            ethernet_tag: 0,
            mac: MacAddr(mac),
            ip: None,
            label1: 100,
            label2: None,
        };
        assert_eq!(MacIpKey::pack(&whole), None);
        let t3 = EvpnRoute::InclusiveMulticast { rd, ethernet_tag: 0, originator: ip("10.77.0.1") };
        assert_eq!(MacIpKey::pack(&t3), None);
    }

    #[test]
    fn nlri_maps_hold_packed_and_whole_evpn_keys_alike() {
        let rd = RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(10, 77, 0, 1), number: 100 };
        let mac = [2, 0, 0, 0, 0, 1];
        let keys: Vec<Nlri> = [
            type2(rd, 0, mac, None),
            type2(rd, 0, mac, Some("10.0.0.1")),
            type2(rd, 0, mac, Some("fd00::1")),
            type2(RouteDistinguisher::Other([0, 9, 0, 0, 0, 0, 0, 1]), 0, mac, None),
            EvpnRoute::InclusiveMulticast { rd, ethernet_tag: 0, originator: ip("10.77.0.1") },
        ]
        .into_iter()
        .map(Nlri::Evpn)
        .chain(["10.0.0.0/8".parse().unwrap()])
        .collect();
        let mut map = NlriMap::default();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(map.insert(*k, i), None);
        }
        assert_eq!((map.len(), map.len_of(Family::L2vpnEvpn)), (6, 5));
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(map.get(k), Some(&i), "{k:?}");
        }
        let mut listed: Vec<(Nlri, usize)> = map.iter_of(Family::L2vpnEvpn).map(|(n, v)| (n, *v)).collect();
        listed.sort_by_key(|(_, v)| *v);
        assert_eq!(listed, keys[..5].iter().copied().zip(0..).collect::<Vec<_>>());
        let mut all = map.keys_of(Some(Family::L2vpnEvpn));
        all.sort_by_key(|n| keys.iter().position(|k| k == n));
        assert_eq!(all, keys[..5]);
        assert_eq!(map.remove(&keys[1]), Some(1));
        assert_eq!(map.get(&keys[1]), None);
        assert_eq!(map.get(&keys[0]), Some(&0), "the MAC route stays");
        map.clear(Some(Family::L2vpnEvpn));
        assert_eq!(map.len(), 1);
    }

    #[test]
    fn interning_shares_attribute_sets() {
        let mut rib = rib();
        let a = rib.intern(attrs(&[65001], [10, 0, 1, 1]));
        let b = rib.intern(attrs(&[65001], [10, 0, 1, 1]));
        assert!(Arc::ptr_eq(&a, &b));
        drop((a, b));
        rib.collect_garbage();
        assert_eq!(rib.interned(), 0);
    }

    #[test]
    fn ecmp_forms_and_shrinks_with_fib_changes() {
        let mut rib = rib();
        let n: Nlri = "10.9.9.9/32".parse().unwrap();
        let a1 = rib.intern(attrs(&[65001, 65100], [10, 0, 1, 1]));
        let a2 = rib.intern(attrs(&[65002, 65100], [10, 0, 2, 1]));
        assert!(rib.set_in(1, n, Some(a1.clone())));
        assert!(!rib.set_in(1, n, Some(a1)), "same attributes again is no change");
        let c = rib.decide(n).unwrap();
        assert_eq!(c.fib, Some(hops(&[[10, 0, 1, 1]])));
        assert!(c.best_changed);
        rib.set_in(2, n, Some(a2));
        let c = rib.decide(n).unwrap();
        assert_eq!(c.fib, Some(hops(&[[10, 0, 1, 1], [10, 0, 2, 1]])));
        assert!(!c.best_changed, "the best path stayed; only the ECMP set grew");
        assert_eq!(rib.decide(n), None, "nothing changed");
        assert_eq!(rib.clear_in(1, None), vec![n]);
        let c = rib.decide(n).unwrap();
        assert_eq!(c.fib, Some(hops(&[[10, 0, 2, 1]])));
        rib.clear_in(2, Some(Family::Ipv4Unicast));
        let c = rib.decide(n).unwrap();
        assert_eq!((c.best_changed, c.fib), (true, Some(vec![])));
        assert_eq!(rib.loc_len(), 0);
    }

    #[test]
    fn ipv4_mapped_next_hops_install_through_the_ipv4_address() {
        let mut rib = rib();
        let n: Nlri = "fd00:2::/48".parse().unwrap();
        let a = rib.intern(PathAttrs { next_hop: Some(ip("::ffff:10.0.15.2")), ..attrs(&[65001], [0, 0, 0, 0]) });
        rib.set_in(1, n, Some(a));
        assert_eq!(rib.decide(n).unwrap().fib, Some(vec![NextHop::Ip(ip("10.0.15.2"))]));
        // The route itself keeps the next hop it was sent with.
        assert_eq!(rib.loc(&n).unwrap().best().attrs.next_hop, Some(ip("::ffff:10.0.15.2")));
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn hops(list: &[[u8; 4]]) -> Vec<NextHop> {
        list.iter().map(|a| NextHop::Ip(IpAddr::from(*a))).collect()
    }

    #[test]
    fn local_routes_win_and_install_nothing() {
        let mut rib = rib();
        let n: Nlri = "10.0.0.1/32".parse().unwrap();
        let local = rib.intern(PathAttrs::default());
        rib.set_in(LOCAL_PEER, n, Some(local));
        let learned = rib.intern(attrs(&[65001], [10, 0, 1, 1]));
        rib.set_in(1, n, Some(learned));
        let c = rib.decide(n).unwrap();
        assert_eq!(c.fib, None);
        assert_eq!(rib.loc(&n).unwrap().best().peer, LOCAL_PEER);
    }
}
