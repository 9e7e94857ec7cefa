//! `show ip route` / `show ipv6 route`: the routing table with protocols,
//! FRR style: what the shim holds, classified by who put it there, plus
//! BGP routes the shim could not take (not installed).
//!
//! The table is read in chunks ([`IpRouteReader`]): the shim's lock is
//! held for one chunk at a time, and a streamed answer holds one chunk in
//! memory, never the table (a million routes are a few hundred MB of
//! JSON). The speaker's installed table is asked between the shim's
//! chunks, never under the shim's lock (its sink takes the shim's lock
//! while holding its own).

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use ipnetwork::IpNetwork;
use mgmt_cli::api;
use sai_shim::{Backend, Object, ObjectId, RouteEntryKey};

use super::{SwitchView, lock};

/// Routes per chunk: the shim's lock is let go between chunks.
pub const CHUNK: usize = 4096;

/// Reads one family's table in chunks, the shim's routes first (in prefix
/// order), then the BGP routes it does not forward.
pub struct IpRouteReader<'a, B: Backend> {
    view: &'a SwitchView<B>,
    /// The VRF read (`None`: the default one) and its virtual router.
    vrf: Option<String>,
    virtual_router: ObjectId,
    want_v6: bool,
    /// Administrative distances of BGP's best paths (empty without BGP).
    distances: HashMap<String, u8>,
    phase: Phase,
}

enum Phase {
    Shim(Option<RouteEntryKey>),
    Bgp(Option<IpNetwork>),
    Done,
}

impl<B: Backend> SwitchView<B> {
    /// The whole table, sorted (`show ip route` answered at once).
    pub fn ip_routes(&self, family: api::AddressFamily) -> Vec<api::IpRoute> {
        self.ip_routes_in(family, None).expect("the default VRF exists")
    }

    /// One VRF's table (`None`: the default VRF's); `None` for no such VRF.
    pub fn ip_routes_in(&self, family: api::AddressFamily, vrf: Option<&str>) -> Option<Vec<api::IpRoute>> {
        let mut reader = IpRouteReader::in_vrf(self, family, vrf)?;
        let mut out: Vec<(IpNetwork, api::IpRoute)> = Vec::new();
        while let Some(chunk) = reader.next_chunk(CHUNK) {
            out.extend(chunk.into_iter().map(|r| (r.prefix.parse().expect("printed from an IpNetwork"), r)));
        }
        out.sort_by_key(|(net, r)| (net.network(), net.prefix(), r.protocol != "local", !r.installed));
        Some(out.into_iter().map(|(_, r)| r).collect())
    }
}

impl<'a, B: Backend> IpRouteReader<'a, B> {
    pub fn new(view: &'a SwitchView<B>, family: api::AddressFamily) -> IpRouteReader<'a, B> {
        Self::in_vrf(view, family, None).expect("the default VRF exists")
    }

    /// The reader of one VRF's table; `None` for no such VRF.
    pub fn in_vrf(view: &'a SwitchView<B>, family: api::AddressFamily, vrf: Option<&str>) -> Option<Self> {
        let virtual_router = match vrf {
            None => lock(&view.sai).default_virtual_router(),
            Some(name) => view.applied.vrfs.get(name)?.virtual_router,
        };
        let distances = view.bgp.as_ref().map(|b| b.distances(crate::bgp::family(family))).unwrap_or_default();
        Some(IpRouteReader {
            view,
            vrf: vrf.map(str::to_owned),
            virtual_router,
            want_v6: family == api::AddressFamily::Ipv6,
            distances,
            phase: Phase::Shim(None),
        })
    }

    /// Up to about `limit` routes; `None` once the table is read.
    pub fn next_chunk(&mut self, limit: usize) -> Option<Vec<api::IpRoute>> {
        loop {
            match self.phase {
                Phase::Shim(after) => {
                    let (chunk, last) = self.shim_chunk(after, limit);
                    self.phase = match last {
                        Some(key) => Phase::Shim(Some(key)),
                        None => Phase::Bgp(None),
                    };
                    if !chunk.is_empty() {
                        return Some(chunk);
                    }
                }
                Phase::Bgp(after) => {
                    let (chunk, last) = self.bgp_chunk(after, limit);
                    self.phase = match last {
                        Some(net) => Phase::Bgp(Some(net)),
                        None => Phase::Done,
                    };
                    if !chunk.is_empty() {
                        return Some(chunk);
                    }
                }
                Phase::Done => return None,
            }
        }
    }

    /// Whether `net` is one of the config's static routes, as applied (the
    /// applied routes are at hand: no set of a million prefixes is built
    /// per answer). A VRF holds none: its routes are its SVIs' and EVPN's.
    fn configured_static(&self, net: &IpNetwork) -> bool {
        self.vrf.is_none() && matches!(self.view.applied.routes.get(net), Some(crate::apply::RouteSpec::Via(_)))
    }

    /// The BGP next hops the speaker installed for `nets`, asked before
    /// the shim's lock is taken.
    fn bgp_hops(&self, nets: &[IpNetwork]) -> HashMap<IpNetwork, Vec<IpAddr>> {
        let Some(bgp) = &self.view.bgp else { return HashMap::new() };
        let installed = bgp.installed.0.lock().unwrap_or_else(|e| e.into_inner());
        nets.iter()
            .filter_map(|net| {
                let hops = installed.routes.get(&(self.vrf.clone(), *net))?;
                Some((*net, hops.iter().filter_map(bgp_evpn::fib::NextHop::ip).collect()))
            })
            .collect()
    }

    /// The shim's routes after `after`: the routes of the family among the
    /// next `limit` entries, and the last key read (`None` at the end).
    fn shim_chunk(&self, after: Option<RouteEntryKey>, limit: usize) -> (Vec<api::IpRoute>, Option<RouteEntryKey>) {
        let ours =
            |k: &RouteEntryKey| k.virtual_router == self.virtual_router && k.destination.is_ipv6() == self.want_v6;
        // With BGP, what it installed for these prefixes is asked first,
        // outside the shim's lock; without, the entries are read once.
        let bgp_hops = match &self.view.bgp {
            Some(_) => {
                let nets: Vec<IpNetwork> = {
                    let sai = lock(&self.view.sai);
                    sai.store()
                        .route_entries_after(after.as_ref())
                        .take(limit)
                        .filter(|(key, _)| ours(key))
                        .map(|(key, _)| key.destination)
                        .collect()
                };
                self.bgp_hops(&nets)
            }
            None => HashMap::new(),
        };
        let sai = lock(&self.view.sai);
        let store = sai.store();
        let mut last = None;
        let mut out = Vec::with_capacity(limit);
        for (key, entry) in store.route_entries_after(after.as_ref()).take(limit) {
            last = Some(*key);
            if !ours(key) {
                continue;
            }
            // (A BGP route added since its hops were asked is shown as
            // `kernel` until the next show: the shim tells no more.)
            let net = key.destination;
            let (protocol, mut next_hops) = classify(store, &self.view.applied, entry);
            let mut protocol = protocol.to_owned();
            let mut distance = if protocol == "static" { 1 } else { 0 };
            if protocol == "static" && !self.configured_static(&net) {
                if let Some(wanted) = bgp_hops.get(&net) {
                    protocol = "bgp".into();
                    distance = self.distances.get(&net.to_string()).copied().unwrap_or(20);
                    // Next hops BGP chose that the shim could not resolve.
                    for ip in wanted {
                        if !next_hops.iter().any(|h| h.ip == Some(*ip)) {
                            next_hops.push(api::IpRouteNextHop {
                                ip: Some(*ip),
                                interface: None,
                                active: false,
                                router_mac: None,
                            });
                        }
                    }
                } else {
                    // Put there by something else (FRR shows kernel routes at distance 0).
                    protocol = "kernel".into();
                    distance = 0;
                }
            }
            out.push(api::IpRoute {
                prefix: net.to_string(),
                protocol,
                distance,
                metric: 0,
                installed: true,
                next_hops,
            });
        }
        (out, last)
    }

    /// BGP routes forwarding does not use: no resolvable next hop, or a
    /// connected/local/static route of the same prefix wins (listed too,
    /// as FRR lists a BGP route that lost to a connected one).
    fn bgp_chunk(&self, after: Option<IpNetwork>, limit: usize) -> (Vec<api::IpRoute>, Option<IpNetwork>) {
        let Some(bgp) = &self.view.bgp else { return (Vec::new(), None) };
        if self.vrf.is_some() {
            // EVPN's routes in a VRF the shim refused are counted, not listed.
            return (Vec::new(), None);
        }
        let routes: BTreeMap<IpNetwork, Vec<IpAddr>> = {
            use std::ops::Bound;
            let installed = bgp.installed.0.lock().unwrap_or_else(|e| e.into_inner());
            let from = after.map_or(Bound::Unbounded, |a| Bound::Excluded((None, a)));
            installed
                .routes
                .range((from, Bound::Unbounded))
                .take_while(|((vrf, _), _)| vrf.is_none())
                .take(limit)
                .map(|((_, net), hops)| (*net, hops.iter().filter_map(bgp_evpn::fib::NextHop::ip).collect()))
                .collect()
        };
        let Some(&last) = routes.keys().last() else { return (Vec::new(), None) };
        let sai = lock(&self.view.sai);
        let store = sai.store();
        let vr = sai.default_virtual_router();
        let mut out = Vec::new();
        for (net, hops) in routes.into_iter().filter(|(net, _)| net.is_ipv6() == self.want_v6) {
            // Listed with the shim's routes already when the shim holds it
            // as a route of its own (not connected, local or configured).
            let forwarded_as_bgp = !self.configured_static(&net)
                && store
                    .route_entry(&RouteEntryKey { virtual_router: vr, destination: net })
                    .is_some_and(|e| classify(store, &self.view.applied, e).0 == "static");
            if forwarded_as_bgp {
                continue;
            }
            let next_hops = hops
                .iter()
                .map(|ip| api::IpRouteNextHop { ip: Some(*ip), interface: None, active: false, router_mac: None })
                .collect();
            let distance = self.distances.get(&net.to_string()).copied().unwrap_or(20);
            out.push(api::IpRoute {
                prefix: net.to_string(),
                protocol: "bgp".into(),
                distance,
                metric: 0,
                installed: false,
                next_hops,
            });
        }
        (out, Some(last))
    }
}

/// Who put a route entry there as far as the shim tells (`local`,
/// `connected`, or `static` for any next hop or group), and its next hops.
fn classify(
    store: &sai_shim::ObjectStore,
    applied: &crate::apply::Applied,
    entry: &sai_shim::RouteEntry,
) -> (&'static str, Vec<api::IpRouteNextHop>) {
    let hop = |id| -> Option<api::IpRouteNextHop> {
        let nh = store.next_hop(id)?;
        let router_mac = match nh.next_hop_type {
            sai_shim::NextHopType::TunnelEncap { mac, .. } => Some(mac.to_string()),
            sai_shim::NextHopType::Ip { .. } => None,
        };
        Some(api::IpRouteNextHop {
            ip: Some(nh.ip),
            interface: applied.next_hop_interface(nh),
            active: true,
            router_mac,
        })
    };
    match (entry.packet_action, entry.next_hop) {
        (sai_shim::PacketAction::Trap, _) => ("local", Vec::new()),
        (sai_shim::PacketAction::Drop, _) | (_, None) => ("static", Vec::new()),
        (_, Some(id)) if id == store.cpu_port() => ("local", Vec::new()),
        (_, Some(id)) => match store.get(id) {
            Some(Object::RouterInterface(_)) => (
                "connected",
                vec![api::IpRouteNextHop {
                    ip: None,
                    interface: applied.router_interface_name(id),
                    active: true,
                    router_mac: None,
                }],
            ),
            Some(Object::NextHop(_)) => ("static", hop(id).into_iter().collect()),
            Some(Object::NextHopGroup(_)) => ("static", store.group_members(id).into_iter().filter_map(hop).collect()),
            _ => ("static", Vec::new()),
        },
    }
}
