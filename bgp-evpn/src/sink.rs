//! Where selected routes go: [`RouteSink`], with a table sink for `show ip
//! route` and tests, and [`SaiRouteSink`], which programs route entries, next
//! hops and next-hop groups through the SAI-like shim.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use ipnetwork::IpNetwork;
use sai_shim::{
    Backend, NextHopAttr, NextHopGroupMemberAttr, ObjectId, ObjectType, PacketAction, RouteEntryAttr, RouteEntryKey,
    Sai,
};

use crate::packet::Nlri;

/// Receives forwarding changes: one next hop is a plain route, several an
/// ECMP group.
pub trait RouteSink: Send + 'static {
    fn install(&mut self, nlri: Nlri, next_hops: &[IpAddr]);
    fn remove(&mut self, nlri: Nlri);
}

/// Keeps the installed routes in a shared table (readable while the speaker runs).
#[derive(Debug, Clone, Default)]
pub struct TableSink(pub Arc<Mutex<BTreeMap<Nlri, Vec<IpAddr>>>>);

impl RouteSink for TableSink {
    fn install(&mut self, nlri: Nlri, next_hops: &[IpAddr]) {
        if let Ok(mut t) = self.0.lock() {
            t.insert(nlri, next_hops.to_vec());
        }
    }

    fn remove(&mut self, nlri: Nlri) {
        if let Ok(mut t) = self.0.lock() {
            t.remove(&nlri);
        }
    }
}

/// Sends changes to several sinks (the shim and a table for `show`).
pub struct Tee(pub Vec<Box<dyn RouteSink>>);

impl RouteSink for Tee {
    fn install(&mut self, nlri: Nlri, next_hops: &[IpAddr]) {
        for s in &mut self.0 {
            s.install(nlri, next_hops);
        }
    }

    fn remove(&mut self, nlri: Nlri) {
        for s in &mut self.0 {
            s.remove(nlri);
        }
    }
}

pub fn to_network(nlri: &Nlri) -> Option<IpNetwork> {
    match nlri {
        Nlri::Ipv4(p) => IpNetwork::new(IpAddr::V4(p.addr()), p.len()).ok(),
        Nlri::Ipv6(p) => IpNetwork::new(IpAddr::V6(p.addr()), p.len()).ok(),
    }
}

/// Programs the shim: a next-hop object per BGP next hop (on the router
/// interface whose connected subnet holds it), a next-hop group per distinct
/// ECMP set, and a route entry per prefix. Objects are shared and
/// reference-counted, and removed when the last route using them goes.
pub struct SaiRouteSink<B: Backend> {
    sai: Arc<Mutex<Sai<B>>>,
    next_hops: HashMap<IpAddr, (ObjectId, usize)>,
    groups: HashMap<Vec<IpAddr>, (ObjectId, Vec<ObjectId>, usize)>,
    routes: HashMap<Nlri, Vec<IpAddr>>,
    /// Changes the shim refused (unresolvable next hop, table full...).
    pub errors: u64,
}

impl<B: Backend> SaiRouteSink<B> {
    pub fn new(sai: Arc<Mutex<Sai<B>>>) -> Self {
        SaiRouteSink { sai, next_hops: HashMap::new(), groups: HashMap::new(), routes: HashMap::new(), errors: 0 }
    }

    /// The router interface of the longest connected route covering `ip`.
    fn resolve_rif(sai: &Sai<B>, ip: IpAddr) -> Option<ObjectId> {
        sai.store()
            .route_entries()
            .filter(|(k, e)| {
                k.destination.contains(ip)
                    && e.next_hop.and_then(|id| id.object_type()) == Some(ObjectType::RouterInterface)
            })
            .max_by_key(|(k, _)| k.destination.prefix())
            .and_then(|(_, e)| e.next_hop)
    }

    fn acquire_hop(&mut self, sai: &mut Sai<B>, ip: IpAddr) -> Option<ObjectId> {
        if let Some((id, refs)) = self.next_hops.get_mut(&ip) {
            *refs += 1;
            return Some(*id);
        }
        let rif = Self::resolve_rif(sai, ip)?;
        let id = sai.create_next_hop(&[NextHopAttr::Ip(ip), NextHopAttr::RouterInterfaceId(rif)]).ok()?;
        self.next_hops.insert(ip, (id, 1));
        Some(id)
    }

    fn release_hop(&mut self, sai: &mut Sai<B>, ip: IpAddr) {
        if let Some((id, refs)) = self.next_hops.get_mut(&ip) {
            *refs -= 1;
            if *refs == 0 {
                let id = *id;
                self.next_hops.remove(&ip);
                let _ = sai.remove(id);
            }
        }
    }

    /// The object a route with these (resolvable) next hops points at.
    fn acquire(&mut self, sai: &mut Sai<B>, hops: &[IpAddr]) -> Option<ObjectId> {
        if hops.len() == 1 {
            return self.acquire_hop(sai, hops[0]);
        }
        if let Some((id, _, refs)) = self.groups.get_mut(hops) {
            *refs += 1;
            return Some(*id);
        }
        let group = sai.create_next_hop_group().ok()?;
        let mut members = Vec::new();
        for &ip in hops {
            if let Some(nh) = self.acquire_hop(sai, ip)
                && let Ok(m) = sai.create_next_hop_group_member(&[
                    NextHopGroupMemberAttr::NextHopGroupId(group),
                    NextHopGroupMemberAttr::NextHopId(nh),
                ])
            {
                members.push(m);
            }
        }
        self.groups.insert(hops.to_vec(), (group, members, 1));
        Some(group)
    }

    fn release(&mut self, sai: &mut Sai<B>, hops: &[IpAddr]) {
        if hops.len() == 1 {
            return self.release_hop(sai, hops[0]);
        }
        let Some((_, _, refs)) = self.groups.get_mut(hops) else { return };
        *refs -= 1;
        if *refs > 0 {
            return;
        }
        if let Some((group, members, _)) = self.groups.remove(hops) {
            for m in members {
                let _ = sai.remove(m);
            }
            let _ = sai.remove(group);
            for &ip in hops {
                self.release_hop(sai, ip);
            }
        }
    }

    fn key(sai: &Sai<B>, nlri: &Nlri) -> Option<RouteEntryKey> {
        Some(RouteEntryKey { virtual_router: sai.default_virtual_router(), destination: to_network(nlri)? })
    }
}

impl<B: Backend + Send + 'static> RouteSink for SaiRouteSink<B> {
    fn install(&mut self, nlri: Nlri, next_hops: &[IpAddr]) {
        let sai = self.sai.clone();
        let Ok(mut sai) = sai.lock() else { return };
        let mut hops: Vec<IpAddr> =
            next_hops.iter().copied().filter(|ip| Self::resolve_rif(&sai, *ip).is_some()).collect();
        hops.sort();
        hops.dedup();
        if hops.is_empty() {
            self.errors += 1;
            drop(sai);
            return self.remove(nlri);
        }
        if self.routes.get(&nlri) == Some(&hops) {
            return;
        }
        let Some(key) = Self::key(&sai, &nlri) else { return };
        let Some(target) = self.acquire(&mut sai, &hops) else {
            self.errors += 1;
            return;
        };
        let result = if self.routes.contains_key(&nlri) {
            sai.set_route_entry_attribute(key, RouteEntryAttr::NextHopId(Some(target)))
        } else {
            sai.create_route_entry(
                key,
                &[RouteEntryAttr::PacketAction(PacketAction::Forward), RouteEntryAttr::NextHopId(Some(target))],
            )
        };
        if result.is_err() {
            self.errors += 1;
            self.release(&mut sai, &hops);
            return;
        }
        if let Some(old) = self.routes.insert(nlri, hops) {
            self.release(&mut sai, &old);
        }
    }

    fn remove(&mut self, nlri: Nlri) {
        let Some(old) = self.routes.remove(&nlri) else { return };
        let sai = self.sai.clone();
        let Ok(mut sai) = sai.lock() else { return };
        if let Some(key) = Self::key(&sai, &nlri) {
            let _ = sai.remove_route_entry(key);
        }
        self.release(&mut sai, &old);
    }
}
