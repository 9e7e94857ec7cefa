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

#[cfg(test)]
mod tests {
    use dataplane::pipeline::SwitchConfig;
    use sai_shim::backend::soft::SoftBackend;
    use sai_shim::{PortAttr, RouterInterfaceAttr, RouterInterfaceType};

    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// A switch with two routed ports on 10.1.0.0/30 and 10.2.0.0/30.
    fn shim() -> Arc<Mutex<Sai<SoftBackend>>> {
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &[]).unwrap();
        let vr = sai.default_virtual_router();
        for (name, subnet) in [("eth1", "10.1.0.0/30"), ("eth2", "10.2.0.0/30")] {
            let port = sai.create_port(&[PortAttr::Name(name.into()), PortAttr::AdminState(true)]).unwrap();
            let rif = sai
                .create_router_interface(&[
                    RouterInterfaceAttr::VirtualRouterId(vr),
                    RouterInterfaceAttr::Type(RouterInterfaceType::Port(port)),
                ])
                .unwrap();
            let key = RouteEntryKey { virtual_router: vr, destination: subnet.parse().unwrap() };
            sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(rif))]).unwrap();
        }
        Arc::new(Mutex::new(sai))
    }

    fn target(sai: &Arc<Mutex<Sai<SoftBackend>>>, prefix: &str) -> Option<ObjectId> {
        let sai = sai.lock().unwrap();
        let key = RouteEntryKey { virtual_router: sai.default_virtual_router(), destination: prefix.parse().unwrap() };
        sai.get_route_entry(key).ok().and_then(|r| r.next_hop)
    }

    fn count(sai: &Arc<Mutex<Sai<SoftBackend>>>, t: ObjectType) -> usize {
        sai.lock().unwrap().store().objects_of(t).count()
    }

    #[test]
    fn ecmp_groups_next_hops_and_routes_follow_the_rib() {
        let sai = shim();
        let mut sink = SaiRouteSink::new(sai.clone());
        let a: Nlri = "10.255.0.2/32".parse().unwrap();
        let b: Nlri = "10.255.0.3/32".parse().unwrap();
        sink.install(a, &[ip("10.1.0.2"), ip("10.2.0.2")]);
        let group = target(&sai, "10.255.0.2/32").unwrap();
        assert_eq!(group.object_type(), Some(ObjectType::NextHopGroup));
        assert_eq!(sai.lock().unwrap().get_next_hop_group_members(group).unwrap().len(), 2);
        // A second prefix with the same set shares the group.
        sink.install(b, &[ip("10.2.0.2"), ip("10.1.0.2")]);
        assert_eq!(target(&sai, "10.255.0.3/32"), Some(group));
        assert_eq!(count(&sai, ObjectType::NextHopGroup), 1);
        assert_eq!(count(&sai, ObjectType::NextHop), 2);
        // Shrinking to one path points the route at the next hop itself.
        sink.install(a, &[ip("10.1.0.2")]);
        let nh = target(&sai, "10.255.0.2/32").unwrap();
        assert_eq!(nh.object_type(), Some(ObjectType::NextHop));
        assert_eq!(sai.lock().unwrap().get_next_hop(nh).unwrap().ip, ip("10.1.0.2"));
        // Removing everything removes every object the sink created.
        sink.remove(b);
        assert_eq!(count(&sai, ObjectType::NextHopGroup), 0);
        assert_eq!(count(&sai, ObjectType::NextHopGroupMember), 0);
        sink.remove(a);
        assert_eq!(target(&sai, "10.255.0.2/32"), None);
        assert_eq!(count(&sai, ObjectType::NextHop), 0);
        assert_eq!(sink.errors, 0);
    }

    #[test]
    fn unresolvable_next_hops_are_counted_not_installed() {
        let sai = shim();
        let mut sink = SaiRouteSink::new(sai.clone());
        sink.install("10.9.0.0/16".parse().unwrap(), &[ip("192.0.2.1")]);
        assert_eq!(target(&sai, "10.9.0.0/16"), None);
        assert_eq!(sink.errors, 1);
        // One resolvable hop of two: installed through that one.
        sink.install("10.9.0.0/16".parse().unwrap(), &[ip("192.0.2.1"), ip("10.2.0.2")]);
        assert_eq!(target(&sai, "10.9.0.0/16").and_then(|t| t.object_type()), Some(ObjectType::NextHop));
    }
}
