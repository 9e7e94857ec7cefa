//! EVPN's IP-VRF routes into the shim (symmetric IRB, RFC 9135 section 4.1;
//! RFC 9136 for prefixes): each route through remote VTEPs becomes a route
//! entry in the VRF's virtual router, through a next hop of type tunnel
//! encap per (VTEP, L3VNI, router MAC), or an ECMP group of them; next hops
//! and groups are shared and removed with their last route.

use std::collections::HashMap;
use std::net::IpAddr;

use ipnetwork::IpNetwork;
use sai_shim::{
    Backend, EthernetAddress, NextHopAttr, NextHopGroupMemberAttr, ObjectId, PacketAction, RouteEntryAttr,
    RouteEntryKey, Sai,
};

use crate::fib::NextHop;

/// Why an IP-VRF change was not made.
pub type IpVrfError = String;

/// A group shared by the routes with the same set of overlay next hops.
#[derive(Debug)]
struct Group {
    id: ObjectId,
    members: Vec<(ObjectId, NextHop)>,
    routes: usize,
}

/// The shim objects of the IP-VRFs' routes.
#[derive(Debug)]
pub struct IpVrfs {
    tunnel: ObjectId,
    /// VRF name -> its virtual router.
    virtual_routers: HashMap<String, ObjectId>,
    next_hops: HashMap<NextHop, (ObjectId, usize)>,
    groups: HashMap<Vec<NextHop>, Group>,
    routes: HashMap<(String, IpNetwork), Vec<NextHop>>,
}

impl IpVrfs {
    /// `tunnel`: the switch's VXLAN tunnel; `virtual_routers`: each VRF's.
    pub fn new(tunnel: ObjectId, virtual_routers: HashMap<String, ObjectId>) -> IpVrfs {
        IpVrfs { tunnel, virtual_routers, next_hops: HashMap::new(), groups: HashMap::new(), routes: HashMap::new() }
    }

    /// The tunnel the routes' next hops encapsulate into.
    pub fn tunnel(&self) -> ObjectId {
        self.tunnel
    }

    /// Removes the routes of `vrf` (its virtual router is about to go or
    /// be made again) and forgets it until [`Self::set_virtual_routers`].
    pub fn detach<B: Backend>(&mut self, sai: &mut Sai<B>, vrf: &str) {
        let Some(virtual_router) = self.virtual_routers.remove(vrf) else { return };
        let routes: Vec<IpNetwork> = self.routes.keys().filter(|(v, _)| v == vrf).map(|(_, p)| *p).collect();
        for prefix in routes {
            let Some(old) = self.routes.remove(&(vrf.to_owned(), prefix)) else { continue };
            if let Err(e) = sai.remove_route_entry(RouteEntryKey { virtual_router, destination: prefix }) {
                tracing::warn!(vrf, %prefix, error = %e, "removing a VRF route");
            }
            self.release(sai, &old);
        }
    }

    /// Each VRF's virtual router from now on.
    pub fn set_virtual_routers(&mut self, virtual_routers: HashMap<String, ObjectId>) {
        self.virtual_routers = virtual_routers;
    }

    /// The VRFs routes go into.
    pub fn vrf_names(&self) -> impl Iterator<Item = &str> {
        self.virtual_routers.keys().map(String::as_str)
    }

    /// The routes installed, per VRF and prefix.
    pub fn installed(&self) -> impl Iterator<Item = (&(String, IpNetwork), &Vec<NextHop>)> {
        self.routes.iter()
    }

    fn acquire_hop<B: Backend>(&mut self, sai: &mut Sai<B>, hop: NextHop) -> Result<ObjectId, IpVrfError> {
        if let Some((id, users)) = self.next_hops.get_mut(&hop) {
            *users += 1;
            return Ok(*id);
        }
        let NextHop::Vtep { vtep, vni, router_mac } = hop else {
            return Err(format!("next hop {hop}: an IP-VRF routes only across the overlay here"));
        };
        let vtep = match vtep {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(vtep),
            v4 => v4,
        };
        let id = sai
            .create_next_hop(&[
                NextHopAttr::Ip(vtep),
                NextHopAttr::TunnelId(self.tunnel),
                NextHopAttr::TunnelVni(vni),
                NextHopAttr::TunnelMac(EthernetAddress(router_mac.0)),
            ])
            .map_err(|e| format!("next hop {hop}: {e}"))?;
        self.next_hops.insert(hop, (id, 1));
        Ok(id)
    }

    fn release_hop<B: Backend>(&mut self, sai: &mut Sai<B>, hop: NextHop) {
        let Some((id, users)) = self.next_hops.get_mut(&hop) else { return };
        *users -= 1;
        if *users == 0 {
            let id = *id;
            self.next_hops.remove(&hop);
            if let Err(e) = sai.remove(id) {
                tracing::warn!(%hop, error = %e, "removing an overlay next hop");
            }
        }
    }

    /// What a route through `hops` (sorted, distinct, not empty) points at.
    fn acquire<B: Backend>(&mut self, sai: &mut Sai<B>, hops: &[NextHop]) -> Result<ObjectId, IpVrfError> {
        if let [one] = hops {
            return self.acquire_hop(sai, *one);
        }
        if let Some(group) = self.groups.get_mut(hops) {
            group.routes += 1;
            return Ok(group.id);
        }
        let id = sai.create_next_hop_group().map_err(|e| format!("next-hop group: {e}"))?;
        let mut group = Group { id, members: Vec::new(), routes: 1 };
        for &hop in hops {
            let made = self.acquire_hop(sai, hop).and_then(|nh| {
                sai.create_next_hop_group_member(&[
                    NextHopGroupMemberAttr::NextHopGroupId(id),
                    NextHopGroupMemberAttr::NextHopId(nh),
                ])
                .map_err(|e| format!("member {hop}: {e}"))
            });
            match made {
                Ok(member) => group.members.push((member, hop)),
                Err(e) => {
                    self.release_group_members(sai, &mut group);
                    let _ = sai.remove(id);
                    return Err(e);
                }
            }
        }
        self.groups.insert(hops.to_vec(), group);
        Ok(id)
    }

    fn release_group_members<B: Backend>(&mut self, sai: &mut Sai<B>, group: &mut Group) {
        for (member, hop) in group.members.drain(..) {
            let _ = sai.remove(member);
            self.release_hop(sai, hop);
        }
    }

    fn release<B: Backend>(&mut self, sai: &mut Sai<B>, hops: &[NextHop]) {
        if let [one] = hops {
            return self.release_hop(sai, *one);
        }
        let Some(group) = self.groups.get_mut(hops) else { return };
        group.routes -= 1;
        if group.routes == 0
            && let Some(mut group) = self.groups.remove(hops)
        {
            self.release_group_members(sai, &mut group);
            let _ = sai.remove(group.id);
        }
    }

    /// `prefix` in `vrf` now goes through `next_hops` (none: removed).
    pub fn route<B: Backend>(
        &mut self,
        sai: &mut Sai<B>,
        vrf: &str,
        prefix: IpNetwork,
        next_hops: &[NextHop],
    ) -> Result<(), IpVrfError> {
        if next_hops.is_empty() && !self.virtual_routers.contains_key(vrf) {
            // Detached with its VRF: nothing of it is left to remove.
            return Ok(());
        }
        let virtual_router =
            *self.virtual_routers.get(vrf).ok_or_else(|| format!("VRF {vrf:?} is not one of the switch's"))?;
        let key = RouteEntryKey { virtual_router, destination: prefix };
        let route = (vrf.to_owned(), prefix);
        let mut hops = next_hops.to_vec();
        hops.sort();
        hops.dedup();
        if hops.is_empty() {
            if let Some(old) = self.routes.remove(&route) {
                sai.remove_route_entry(key).map_err(|e| format!("route {prefix} in {vrf}: {e}"))?;
                self.release(sai, &old);
            }
            return Ok(());
        }
        if self.routes.get(&route) == Some(&hops) {
            return Ok(());
        }
        let target = self.acquire(sai, &hops)?;
        let made = if self.routes.contains_key(&route) {
            sai.set_route_entry_attribute(key, RouteEntryAttr::NextHopId(Some(target)))
        } else {
            sai.create_route_entry(
                key,
                &[RouteEntryAttr::PacketAction(PacketAction::Forward), RouteEntryAttr::NextHopId(Some(target))],
            )
        };
        if let Err(e) = made {
            // The VRF's own subnets and addresses win over EVPN's routes.
            self.release(sai, &hops);
            return Err(format!("route {prefix} in {vrf}: {e}"));
        }
        if let Some(old) = self.routes.insert(route, hops) {
            self.release(sai, &old);
        }
        Ok(())
    }
}
