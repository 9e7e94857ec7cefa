//! EVPN (RFC 7432, RFC 8365 for VXLAN, RFC 9135/9136 for IRB and prefixes):
//! the MAC-VRFs and IP-VRFs this speaker runs, on top of the L2VPN EVPN
//! address family that the RIBs carry like any other (`packet::evpn` is its
//! wire format).
//!
//! [`Evpn`] is sans-IO: the speaker hands it locally learned MACs and ARP/ND
//! bindings and every change of a Loc-RIB best path learned from a peer;
//! it answers with [`EvpnAction`]s: routes to originate or withdraw and
//! typed forwarding changes.

pub mod config;
pub mod mobility;
mod reconfigure;
pub mod show;
mod small_map;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnetwork::IpNetwork;
use rustc_hash::FxHashMap;
use small_map::{RouteKey, SmallMap};

pub use config::EvpnConfig;
use config::{DuplicateDetection, derived_rd, derived_rt, parse_rd, parse_rt};
use mobility::{Claim, Moves};
pub use reconfigure::Rebuild;

use crate::fib::{FibChange, NextHop};
use crate::packet::evpn::{
    Esi, EvpnPathData, EvpnRoute, ExtCommunity, MacAddr, PmsiTunnel, RouteDistinguisher, mac_mobility, tunnel_type,
};
use crate::packet::{Nlri, Origin, PathAttrs};

/// What the EVPN instance asks of the speaker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvpnAction {
    /// Originate (or re-originate with new attributes) this whole route.
    Originate(EvpnRoute, Box<PathAttrs>),
    /// Stop originating this route.
    Withdraw(EvpnRoute),
    Fib(FibChange),
}

/// A route target to import, and whether it was derived (FRR then matches
/// it with the AS masked, so eBGP leaves with their own ASNs still agree).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ImportRt {
    rt: ExtCommunity,
    derived: bool,
}

fn import_rts(configured: &[String], derived: ExtCommunity) -> Vec<ImportRt> {
    if configured.is_empty() {
        return vec![ImportRt { rt: derived, derived: true }];
    }
    configured.iter().filter_map(|t| parse_rt(t).ok()).map(|rt| ImportRt { rt, derived: false }).collect()
}

fn export_rts(configured: &[String], derived: ExtCommunity) -> Vec<ExtCommunity> {
    if configured.is_empty() {
        return vec![derived];
    }
    configured.iter().filter_map(|t| parse_rt(t).ok()).collect()
}

/// Whether a route carrying `ext_communities` is imported by `import`.
fn imports(import: &[ImportRt], ext_communities: &[u64]) -> bool {
    let local_admin = |c: &ExtCommunity| match *c {
        ExtCommunity::RouteTargetAs2 { number, .. } => Some(number),
        ExtCommunity::RouteTargetAs4 { number, .. } => Some(u32::from(number)),
        _ => None,
    };
    ext_communities.iter().map(|&c| ExtCommunity::from_u64(c)).filter(ExtCommunity::is_route_target).any(|rt| {
        import.iter().any(|i| {
            i.rt == rt || (i.derived && local_admin(&i.rt).is_some() && local_admin(&i.rt) == local_admin(&rt))
        })
    })
}

fn router_mac(ext_communities: &[u64]) -> Option<MacAddr> {
    ext_communities.iter().find_map(|&c| match ExtCommunity::from_u64(c) {
        ExtCommunity::RouterMac(mac) => Some(mac),
        _ => None,
    })
}

fn host_prefix(ip: IpAddr) -> IpNetwork {
    IpNetwork::new(ip, if ip.is_ipv4() { 32 } else { 128 }).expect("full-length prefix")
}

/// One MAC as this VTEP sees it: our claim, the remote ones, the winner.
#[derive(Debug, Default)]
struct MacState {
    local: Option<Claim>,
    /// Remote advertisements (MAC and MAC+IP routes), by route key.
    remote: SmallMap<RouteKey, Claim>,
    /// The claim in force: ours (advertised) or a remote one (installed).
    winner: Option<Claim>,
    moves: Moves,
    /// Claims from elsewhere that a sticky winner kept out (§15.2).
    refused_moves: u32,
    /// Our type 2 routes for this MAC, in key form.
    advertised: BTreeSet<EvpnRoute>,
}

/// One MAC-VRF (EVI), VLAN-based: one VNI, one bridge domain.
#[derive(Debug)]
struct MacVrf {
    vni: u32,
    rd: RouteDistinguisher,
    import: Vec<ImportRt>,
    export: Vec<ExtCommunity>,
    /// The IP-VRF of symmetric IRB for this VNI's hosts (a key of `ip_vrfs`).
    ip_vrf: Option<String>,
    macs: FxHashMap<MacAddr, MacState>,
    /// MACs configured behind a local port, with their sticky bit: ours
    /// whatever the dataplane reports.
    static_macs: BTreeMap<MacAddr, bool>,
    /// ARP/ND bindings learned on our SVI in this VNI.
    local_ips: BTreeMap<IpAddr, MacAddr>,
    /// Bindings from remote MAC+IP routes: per IP, the routes giving one.
    /// The first route's MAC is the ARP/ND suppression entry handed to
    /// forwarding (`MacVrf::installed_ip`).
    remote_ips: BTreeMap<IpAddr, SmallMap<RouteKey, MacAddr>>,
    /// Remote VTEPs from type 3 routes, with the routes naming each.
    flood: BTreeMap<IpAddr, BTreeSet<EvpnRoute>>,
}

/// One IP-VRF with its L3VNI (symmetric IRB).
#[derive(Debug)]
struct IpVrf {
    name: String,
    l3vni: u32,
    router_mac: MacAddr,
    rd: RouteDistinguisher,
    import: Vec<ImportRt>,
    export: Vec<ExtCommunity>,
    networks: Vec<IpNetwork>,
    /// Imported routes: per prefix, the EVPN routes (type 2 with IP, type 5)
    /// giving a next hop for it.
    routes: BTreeMap<IpNetwork, SmallMap<RouteKey, NextHop>>,
}

impl MacVrf {
    /// The ARP/ND suppression entry for `ip` handed to forwarding.
    fn installed_ip(&self, ip: &IpAddr) -> Option<MacAddr> {
        self.remote_ips.get(ip).and_then(|r| r.values().next().copied())
    }

    /// Every ARP/ND suppression entry handed to forwarding.
    fn installed_ips(&self) -> impl Iterator<Item = (IpAddr, MacAddr)> + '_ {
        self.remote_ips.iter().filter_map(|(ip, r)| Some((*ip, *r.values().next()?)))
    }
}

impl IpVrf {
    fn next_hops(&self, prefix: &IpNetwork) -> Vec<NextHop> {
        let set: BTreeSet<NextHop> = self.routes.get(prefix).into_iter().flat_map(|r| r.values().copied()).collect();
        set.into_iter().collect()
    }
}

/// What a route is imported into: a function of its best path's attributes
/// and the configuration (`Evpn::import_targets`). Not kept per route: a
/// change or withdrawal computes it again from the path it replaces (the
/// speaker hands over the Loc-RIB's previous best path), which gives what
/// was imported, since a VRF's import route targets never change in place
/// (`reconfigure` tears down and makes again a VRF whose definition changes).
#[derive(Debug, Default, Clone)]
struct Imported {
    mac_vrfs: Vec<u32>,
    ip_vrfs: Vec<String>,
}

/// The EVPN instance: every MAC-VRF and IP-VRF of this VTEP.
#[derive(Debug)]
pub struct Evpn {
    vtep: IpAddr,
    limits: DuplicateDetection,
    derive: Derive,
    mac_vrfs: BTreeMap<u32, MacVrf>,
    ip_vrfs: BTreeMap<String, IpVrf>,
    actions: Vec<EvpnAction>,
}

/// How RDs and RTs not given are derived (as FRR derives them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Derive {
    asn: u32,
    router_id: Ipv4Addr,
}

impl Derive {
    fn rd(self, given: &Option<String>, evi: u32) -> RouteDistinguisher {
        given
            .as_deref()
            .and_then(|t| parse_rd(t).ok())
            .or_else(|| derived_rd(self.router_id, evi))
            .unwrap_or(RouteDistinguisher::Ipv4 { addr: self.router_id, number: 0 })
    }

    fn ip_vrf(self, v: &config::VrfConfig) -> IpVrf {
        IpVrf {
            name: v.name.clone(),
            l3vni: v.l3vni,
            router_mac: v.router_mac,
            rd: self.rd(&v.rd, v.l3vni),
            import: import_rts(&v.import_rts, derived_rt(self.asn, v.l3vni)),
            export: export_rts(&v.export_rts, derived_rt(self.asn, v.l3vni)),
            networks: v.networks.iter().filter_map(Nlri::ip_network).collect(),
            routes: BTreeMap::new(),
        }
    }

    fn mac_vrf(self, v: &config::VniConfig) -> MacVrf {
        MacVrf {
            vni: v.vni,
            rd: self.rd(&v.rd, v.vni),
            import: import_rts(&v.import_rts, derived_rt(self.asn, v.vni)),
            export: export_rts(&v.export_rts, derived_rt(self.asn, v.vni)),
            ip_vrf: v.vrf.clone(),
            macs: FxHashMap::default(),
            static_macs: v.static_macs.iter().map(|s| (s.mac, s.sticky)).collect(),
            local_ips: BTreeMap::new(),
            remote_ips: BTreeMap::new(),
            flood: BTreeMap::new(),
        }
    }
}

impl Evpn {
    /// The instance for a validated `config` (RDs and RTs not given are
    /// derived from `asn` and `router_id` as FRR derives them).
    pub fn new(config: &EvpnConfig, asn: u32, router_id: Ipv4Addr) -> Evpn {
        let derive = Derive { asn, router_id };
        Evpn {
            vtep: config.vtep_ip,
            limits: config.duplicate_detection,
            derive,
            mac_vrfs: config.vnis.iter().map(|v| (v.vni, derive.mac_vrf(v))).collect(),
            ip_vrfs: config.vrfs.iter().map(|v| (v.name.clone(), derive.ip_vrf(v))).collect(),
            actions: Vec::new(),
        }
    }

    /// Originates what this VTEP always advertises: a type 3 route per VNI
    /// and a type 5 route per IP-VRF network.
    pub fn start(&mut self) {
        for vni in self.mac_vrfs.keys().copied().collect::<Vec<_>>() {
            self.originate_type3(vni);
            for mac in self.claim_static_macs(vni) {
                self.reselect(0, vni, mac);
            }
        }
        for name in self.ip_vrfs.keys().cloned().collect::<Vec<_>>() {
            for (route, attrs) in self.type5_routes(&name) {
                self.actions.push(EvpnAction::Originate(route, Box::new(attrs)));
            }
        }
    }

    /// The type 3 route of `vni` (RFC 8365 §5.1.3: ingress replication,
    /// the VNI in the PMSI label).
    fn type3_route(&self, vni: u32) -> Option<(EvpnRoute, PathAttrs)> {
        let vrf = self.mac_vrfs.get(&vni)?;
        let route = EvpnRoute::InclusiveMulticast { rd: vrf.rd, ethernet_tag: 0, originator: self.vtep };
        let mut attrs = self.attrs(&vrf.export, None);
        attrs.pmsi_tunnel = Some(PmsiTunnel::IngressReplication { flags: 0, vni: vrf.vni, endpoint: self.vtep });
        Some((route, attrs))
    }

    fn originate_type3(&mut self, vni: u32) {
        if let Some((route, attrs)) = self.type3_route(vni) {
            self.actions.push(EvpnAction::Originate(route, Box::new(attrs)));
        }
    }

    /// The type 5 routes of IP-VRF `name`: one per network (RFC 9136 §3).
    fn type5_routes(&self, name: &str) -> Vec<(EvpnRoute, PathAttrs)> {
        let Some(vrf) = self.ip_vrfs.get(name) else { return Vec::new() };
        vrf.networks
            .iter()
            .map(|&prefix| {
                let gateway = match prefix {
                    IpNetwork::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                    IpNetwork::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
                };
                let route = EvpnRoute::IpPrefix {
                    rd: vrf.rd,
                    esi: Esi::ZERO,
                    ethernet_tag: 0,
                    prefix,
                    gateway,
                    label: vrf.l3vni,
                };
                (route, self.attrs(&vrf.export, Some(vrf.router_mac)))
            })
            .collect()
    }

    /// What the speaker must do next.
    pub fn take_actions(&mut self) -> Vec<EvpnAction> {
        std::mem::take(&mut self.actions)
    }

    /// Our routes' attributes: the route targets, the VXLAN encapsulation
    /// (RFC 8365 §5.1.3), the router MAC for IRB routes (RFC 9135 §8.1).
    fn attrs(&self, rts: &[ExtCommunity], router_mac: Option<MacAddr>) -> PathAttrs {
        let mut ext: Vec<u64> = rts.iter().map(|rt| rt.to_u64()).collect();
        ext.push(ExtCommunity::Encapsulation { tunnel_type: tunnel_type::VXLAN }.to_u64());
        if let Some(mac) = router_mac {
            ext.push(ExtCommunity::RouterMac(mac).to_u64());
        }
        PathAttrs { origin: Origin::Igp, next_hop: Some(self.vtep), ext_communities: ext, ..Default::default() }
    }

    // ---- local state to routes ----

    /// The dataplane learned (`present`) or aged out `mac` in `vni`.
    /// RFC 7432 §15.1: a MAC learned here that a remote VTEP advertised is
    /// advertised with "a sequence number one greater than" the remote's.
    pub fn local_mac(&mut self, now: u64, vni: u32, mac: MacAddr, present: bool) {
        let Some(vrf) = self.mac_vrfs.get_mut(&vni) else { return };
        // A configured MAC is a static entry: ours whatever the dataplane says.
        if vrf.static_macs.contains_key(&mac) {
            return;
        }
        let state = vrf.macs.entry(mac).or_default();
        // Learned again while a remote claim is in force: the MAC moved here.
        let ours = state.winner.is_some_and(|c| c.vtep.is_none());
        if present && ours || !present && state.local.is_none() {
            return;
        }
        // §15.2: a MAC advertised sticky elsewhere does not move here.
        if present && state.winner.is_some_and(|c| c.sticky) {
            state.refused_moves += 1;
            tracing::warn!(vni, %mac, "sticky MAC of another VTEP seen on a local port: not moved (RFC 7432 §15.2)");
            return;
        }
        state.local = present.then(|| {
            let sequence = state.remote.values().map(|c| c.sequence + 1).max().unwrap_or(0);
            Claim { vtep: None, sequence, sticky: false }
        });
        self.reselect(now, vni, mac);
    }

    /// Claims the configured MACs of `vni` as ours (before selection);
    /// returns them.
    fn claim_static_macs(&mut self, vni: u32) -> Vec<MacAddr> {
        let Some(vrf) = self.mac_vrfs.get_mut(&vni) else { return Vec::new() };
        for (&mac, &sticky) in &vrf.static_macs {
            let state = vrf.macs.entry(mac).or_default();
            let sequence = state.remote.values().map(|c| c.sequence + 1).max().unwrap_or(0);
            state.local = Some(Claim { vtep: None, sequence, sticky });
        }
        vrf.static_macs.keys().copied().collect()
    }

    /// ARP/ND on our SVI in `vni` bound `ip` to `mac` (`None`: the binding
    /// went): a MAC+IP type 2 route while the MAC is ours.
    pub fn local_neighbor(&mut self, now: u64, vni: u32, ip: IpAddr, mac: Option<MacAddr>) {
        let Some(vrf) = self.mac_vrfs.get_mut(&vni) else { return };
        let old = match mac {
            Some(mac) => vrf.local_ips.insert(ip, mac),
            None => vrf.local_ips.remove(&ip),
        };
        if old == mac {
            return;
        }
        for m in old.into_iter().chain(mac) {
            self.reselect(now, vni, m);
        }
    }

    /// Picks the claim in force for `mac` and brings our routes and the
    /// remote FDB entry in line with it.
    fn reselect(&mut self, now: u64, vni: u32, mac: MacAddr) {
        let own = self.vtep;
        let limits = self.limits;
        let Some(vrf) = self.mac_vrfs.get_mut(&vni) else { return };
        let Some(state) = vrf.macs.get_mut(&mac) else { return };
        // §15.1: a duplicate MAC's routes are no longer processed; what
        // forwarding holds stays as it was when it was found.
        if state.moves.frozen() {
            return;
        }
        let claims = || state.local.iter().chain(state.remote.values()).copied();
        let mut best = claims().reduce(|a, b| a.better(b, own));
        let old = state.winner;
        // §15.2: a sticky MAC stays where it is while its claim does.
        if let Some(kept) = old.filter(|o| o.sticky).and_then(|o| claims().find(|c| c.sticky && c.vtep == o.vtep)) {
            best = Some(kept);
        }
        let moved = matches!((old, best), (Some(o), Some(n)) if o.vtep != n.vtep);
        if moved && state.moves.record(now, limits) {
            tracing::warn!(vni, %mac, moves = state.moves.total(), "duplicate MAC: moved too often, frozen (RFC 7432 §15.1)");
        }
        state.winner = best;
        // §15.1: a MAC advertised elsewhere with a higher number has moved
        // away; the dataplane's entry becomes the remote one, so ours is gone.
        if best.is_some_and(|c| c.vtep.is_some()) && !vrf.static_macs.contains_key(&mac) {
            state.local = None;
        }
        // The remote entry follows the winner's VTEP and its sticky bit.
        let remote = |claim: Option<Claim>| claim.and_then(|c| Some((c.vtep?, c.sticky)));
        if remote(old) != remote(best) {
            let (vtep, sticky) = remote(best).map_or((None, false), |(vtep, sticky)| (Some(vtep), sticky));
            self.actions.push(EvpnAction::Fib(FibChange::RemoteMac { vni, mac, vtep, sticky }));
        }
        self.advertise(vni, mac);
        let vrf = self.mac_vrfs.get_mut(&vni).expect("looked up above");
        let state = &vrf.macs[&mac];
        if state.local.is_none() && state.remote.is_empty() && state.advertised.is_empty() {
            vrf.macs.remove(&mac);
        }
    }

    /// Originates our type 2 routes for `mac` (the MAC, and MAC+IP for each
    /// ARP/ND binding) while our claim is in force; withdraws them otherwise.
    fn advertise(&mut self, vni: u32, mac: MacAddr) {
        let Some(vrf) = self.mac_vrfs.get(&vni) else { return };
        let Some(state) = vrf.macs.get(&mac) else { return };
        let mut wanted = Vec::new();
        if let Some(claim) = state.winner.filter(|c| c.vtep.is_none()) {
            let irb = vrf.ip_vrf.as_ref().and_then(|name| self.ip_vrfs.get(name));
            let ips = vrf.local_ips.iter().filter(|(_, m)| **m == mac).map(|(ip, _)| Some(*ip));
            for ip in std::iter::once(None).chain(ips) {
                let l3 = irb.filter(|_| ip.is_some());
                let route = EvpnRoute::MacIpAdvertisement {
                    rd: vrf.rd,
                    esi: Esi::ZERO,
                    ethernet_tag: 0,
                    mac,
                    ip,
                    label1: vni,
                    label2: l3.map(|v| v.l3vni),
                };
                // RFC 9135 §8.1: MAC+IP routes carry the IP-VRF's RTs and
                // router MAC as well as the MAC-VRF's RTs.
                let mut rts = vrf.export.clone();
                rts.extend(l3.iter().flat_map(|v| v.export.iter().copied()));
                let mut attrs = self.attrs(&rts, l3.map(|v| v.router_mac));
                if claim.sequence > 0 || claim.sticky {
                    let mm = ExtCommunity::MacMobility { sticky: claim.sticky, sequence: claim.sequence };
                    attrs.ext_communities.push(mm.to_u64());
                }
                wanted.push((route, attrs));
            }
        }
        let keys: BTreeSet<EvpnRoute> = wanted.iter().map(|(r, _)| r.key()).collect();
        let gone: Vec<EvpnRoute> = state.advertised.difference(&keys).copied().collect();
        for route in gone {
            self.actions.push(EvpnAction::Withdraw(route));
        }
        for (route, attrs) in wanted {
            self.actions.push(EvpnAction::Originate(route, Box::new(attrs)));
        }
        if let Some(state) = self.mac_vrfs.get_mut(&vni).and_then(|v| v.macs.get_mut(&mac)) {
            state.advertised = keys;
        }
    }

    // ---- routes to forwarding state ----

    /// The best path for `key` (learned from a peer) is now `attrs`
    /// (`None`: there is none) instead of `old` (the best path learned from
    /// a peer it had before, `None` if none): imported by route target into
    /// MAC-VRFs (types 2 and 3) and IP-VRFs (type 2 with an IP, type 5);
    /// what `old` was imported into and `attrs` is not, undone.
    pub fn route_changed(&mut self, now: u64, key: EvpnRoute, old: Option<&PathAttrs>, attrs: Option<&PathAttrs>) {
        let old = match old {
            Some(a) => self.import_targets(&key, a),
            None => Imported::default(),
        };
        let new = match attrs {
            Some(a) => self.import_targets(&key, a),
            None => Imported::default(),
        };
        if new.mac_vrfs.is_empty() && new.ip_vrfs.is_empty() && old.mac_vrfs.is_empty() && old.ip_vrfs.is_empty() {
            return;
        }
        let data = attrs.and_then(|a| a.evpn).unwrap_or_default();
        // Old and new targets, each once, in order (no set made when they
        // are the same, as they are for nearly every route).
        let mac_vrfs: Vec<u32> = if old.mac_vrfs == new.mac_vrfs || old.mac_vrfs.is_empty() {
            new.mac_vrfs.clone()
        } else {
            old.mac_vrfs.iter().chain(&new.mac_vrfs).copied().collect::<BTreeSet<u32>>().into_iter().collect()
        };
        for vni in mac_vrfs {
            let wanted = attrs.filter(|_| new.mac_vrfs.contains(&vni));
            match key {
                EvpnRoute::MacIpAdvertisement { mac, ip, .. } => self.remote_mac(now, vni, key, mac, ip, wanted),
                EvpnRoute::InclusiveMulticast { originator, .. } => self.remote_vtep(vni, key, originator, wanted),
                _ => {}
            }
        }
        let ip_vrfs: Vec<String> = if old.ip_vrfs == new.ip_vrfs || old.ip_vrfs.is_empty() {
            new.ip_vrfs.clone()
        } else {
            old.ip_vrfs.iter().chain(&new.ip_vrfs).cloned().collect::<BTreeSet<String>>().into_iter().collect()
        };
        for name in ip_vrfs {
            let wanted = attrs.filter(|_| new.ip_vrfs.contains(&name));
            self.remote_prefix(&name, key, &data, wanted);
        }
    }

    fn import_targets(&self, key: &EvpnRoute, attrs: &PathAttrs) -> Imported {
        let ext = &attrs.ext_communities;
        let mac_vrfs = || self.mac_vrfs.values().filter(|v| imports(&v.import, ext)).map(|v| v.vni).collect();
        let ip_vrfs = || self.ip_vrfs.values().filter(|v| imports(&v.import, ext)).map(|v| v.name.clone()).collect();
        let data = attrs.evpn.unwrap_or_default();
        match key {
            EvpnRoute::MacIpAdvertisement { ip, .. } => Imported {
                mac_vrfs: mac_vrfs(),
                // Symmetric IRB host routes need the L3VNI and router MAC.
                // An IPv6 link-local binding is for ND suppression only, as
                // FRR has it: no route in the IP-VRF (the address is not
                // routable; a kernel refuses it through an IPv4 VTEP).
                ip_vrfs: if ip.is_some_and(|ip| !is_ipv6_link_local(ip))
                    && data.label2.is_some()
                    && router_mac(ext).is_some()
                {
                    ip_vrfs()
                } else {
                    Vec::new()
                },
            },
            EvpnRoute::InclusiveMulticast { .. } => Imported { mac_vrfs: mac_vrfs(), ip_vrfs: Vec::new() },
            EvpnRoute::IpPrefix { .. } if router_mac(ext).is_some() => {
                Imported { mac_vrfs: Vec::new(), ip_vrfs: ip_vrfs() }
            }
            _ => Imported::default(),
        }
    }

    /// A remote type 2 route for `mac` (and `ip`) in `vni` is now `attrs`.
    fn remote_mac(
        &mut self,
        now: u64,
        vni: u32,
        key: EvpnRoute,
        mac: MacAddr,
        ip: Option<IpAddr>,
        attrs: Option<&PathAttrs>,
    ) {
        let Some(vrf) = self.mac_vrfs.get_mut(&vni) else { return };
        let claim = attrs.and_then(|a| {
            let (sticky, sequence) = mac_mobility(&a.ext_communities).unwrap_or((false, 0));
            a.next_hop.map(|vtep| Claim { vtep: Some(vtep), sequence, sticky })
        });
        let state = vrf.macs.entry(mac).or_default();
        if let (Some(c), Some(winner)) = (claim, state.winner)
            && winner.sticky
            && winner.vtep != c.vtep
        {
            state.refused_moves += 1;
            tracing::warn!(vni, %mac, from = ?c.vtep, "advertisement of a sticky MAC elsewhere: not moved (RFC 7432 §15.2)");
        }
        let route_key = RouteKey::new(key);
        match claim {
            Some(c) => state.remote.insert(route_key.clone(), c),
            None => state.remote.remove(&route_key),
        };
        if let Some(ip) = ip {
            let installed = vrf.installed_ip(&ip);
            let routes = vrf.remote_ips.entry(ip).or_default();
            match claim {
                Some(_) => routes.insert(route_key, mac),
                None => routes.remove(&route_key),
            };
            if routes.is_empty() {
                vrf.remote_ips.remove(&ip);
            }
            let wanted = vrf.installed_ip(&ip);
            if installed != wanted {
                self.actions.push(EvpnAction::Fib(FibChange::Neighbor { vni, ip, mac: wanted }));
            }
        }
        self.reselect(now, vni, mac);
    }

    /// A remote type 3 route in `vni` is now `attrs`: its VTEP (the PMSI
    /// tunnel's endpoint, RFC 7432 §11.2) joins or leaves the flood list.
    fn remote_vtep(&mut self, vni: u32, key: EvpnRoute, originator: IpAddr, attrs: Option<&PathAttrs>) {
        let own = self.vtep;
        let Some(vrf) = self.mac_vrfs.get_mut(&vni) else { return };
        // The endpoint the route was imported with stays the one removed.
        let vtep = match attrs.and_then(|a| a.pmsi_tunnel.as_ref()) {
            Some(PmsiTunnel::IngressReplication { endpoint, .. }) => *endpoint,
            _ => vrf.flood.iter().find(|(_, routes)| routes.contains(&key)).map_or(originator, |(v, _)| *v),
        };
        if vtep == own {
            return;
        }
        let routes = vrf.flood.entry(vtep).or_default();
        let was_empty = routes.is_empty();
        match attrs {
            Some(_) => routes.insert(key),
            None => routes.remove(&key),
        };
        let now_empty = routes.is_empty();
        if now_empty {
            vrf.flood.remove(&vtep);
        }
        if was_empty != now_empty {
            self.actions.push(EvpnAction::Fib(FibChange::FloodVtep { vni, vtep, present: !now_empty }));
        }
    }

    /// A type 2 (with IP) or type 5 route imported into IP-VRF `i` is now
    /// `attrs`: the VRF's route for its prefix goes through the VTEP on the
    /// L3VNI to the router MAC (RFC 9135 §4.1, RFC 9136 §4.4.1).
    fn remote_prefix(&mut self, name: &str, key: EvpnRoute, data: &EvpnPathData, attrs: Option<&PathAttrs>) {
        let (prefix, vni) = match key {
            EvpnRoute::MacIpAdvertisement { ip: Some(ip), .. } => (host_prefix(ip), data.label2),
            EvpnRoute::IpPrefix { prefix, .. } => (prefix, Some(data.label1)),
            _ => return,
        };
        let hop = attrs.and_then(|a| {
            // The BGP next hop is the VTEP (RFC 9136 §4.4.1's "interface-less"
            // model, FRR's); gateway addresses as overlay indexes are not used.
            let vtep = a.next_hop?;
            Some(NextHop::Vtep { vtep, vni: vni?, router_mac: router_mac(&a.ext_communities)? })
        });
        let Some(vrf) = self.ip_vrfs.get_mut(name) else { return };
        let before = vrf.next_hops(&prefix);
        let routes = vrf.routes.entry(prefix).or_default();
        match hop {
            Some(h) => routes.insert(RouteKey::new(key), h),
            None => routes.remove(&RouteKey::new(key)),
        };
        if routes.is_empty() {
            vrf.routes.remove(&prefix);
        }
        let next_hops = vrf.next_hops(&prefix);
        if next_hops != before {
            let change = FibChange::Route { vrf: Some(vrf.name.clone()), prefix, next_hops };
            self.actions.push(EvpnAction::Fib(change));
        }
    }
}

#[cfg(test)]
mod tests;

/// fe80::/10.
fn is_ipv6_link_local(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80)
}
