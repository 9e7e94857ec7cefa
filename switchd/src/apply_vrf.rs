//! The VRFs of [`crate::apply`]: a virtual router per `bgp.evpn.vrfs` entry
//! with its router MAC, its L3VNI as a tunnel map entry (VNI <-> virtual
//! router, symmetric IRB), and the addresses and connected subnets of the
//! SVIs and routed ports in it as route entries in it. A VRF whose L3VNI or
//! router MAC changes is made again, with the interfaces in it.

use std::collections::{BTreeMap, BTreeSet};

use dataplane::wire::EthernetAddress;
use ipnetwork::IpNetwork;
use sai_shim::{Backend, ObjectId, RouteEntryAttr, RouteEntryKey, Sai, TunnelMapEntryAttr, VirtualRouterAttr};

use super::apply::{Applied, ApplyError, Context, RouteSpec};
use crate::config::Config;

/// A VRF's shim objects and what they were made for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VrfObjects {
    pub virtual_router: ObjectId,
    pub l3vni: u32,
    pub router_mac: EthernetAddress,
    /// The L3VNI's tunnel map entry (made once the tunnel is).
    pub l3vni_map: Option<ObjectId>,
}

/// The routes of the VRFs' SVIs and routed ports: their addresses (to the
/// CPU) and subnets.
pub fn desired_routes(config: &Config) -> BTreeMap<(String, IpNetwork), RouteSpec> {
    let mut routes = BTreeMap::new();
    for (vrf, address, interface) in config.vrf_addresses() {
        let host = IpNetwork::new(address.ip(), if address.is_ipv4() { 32 } else { 128 }).expect("host prefix");
        routes.insert((vrf.to_owned(), host), RouteSpec::Local);
        let subnet = IpNetwork::new(address.network(), address.prefix()).expect("same prefix");
        if subnet.prefix() != host.prefix() {
            routes.insert((vrf.to_owned(), subnet), RouteSpec::Connected(interface));
        }
    }
    routes
}

/// The programmed VRFs the candidate drops or changes.
pub fn stale(applied: &Applied, candidate: &Config) -> BTreeSet<String> {
    let same = |name: &str, objects: &VrfObjects| {
        candidate.vrf(name).is_some_and(|v| v.l3vni == objects.l3vni && v.router_mac == objects.router_mac)
    };
    applied.vrfs.iter().filter(|(name, objects)| !same(name, objects)).map(|(name, _)| name.clone()).collect()
}

/// The virtual router an SVI of `candidate` must be in, if it is programmed
/// and stays (`None`: it is to be made).
pub fn wanted_virtual_router<B: Backend>(
    sai: &Sai<B>,
    applied: &Applied,
    stale: &BTreeSet<String>,
    vrf: Option<&str>,
) -> Option<ObjectId> {
    match vrf {
        None => Some(sai.default_virtual_router()),
        Some(name) if stale.contains(name) => None,
        Some(name) => applied.vrfs.get(name).map(|v| v.virtual_router),
    }
}

/// The SVIs whose router interface the candidate makes again: their VRF
/// changes, or is made again (SAI's VIRTUAL_ROUTER_ID is create-only).
/// What holds them (their host interfaces) must let go first.
pub fn moved_svis<B: Backend>(sai: &Sai<B>, applied: &Applied, candidate: &Config) -> BTreeSet<u16> {
    let stale = stale(applied, candidate);
    applied
        .vlans
        .iter()
        .filter_map(|(vid, objects)| {
            let current = sai.get_router_interface(objects.router_interface?).ok()?.virtual_router;
            let vrf = candidate.vlans.iter().find(|v| v.id == *vid)?.vrf.as_deref();
            let wanted = wanted_virtual_router(sai, applied, &stale, vrf);
            (wanted != Some(current)).then_some(*vid)
        })
        .collect()
}

/// The routed ports whose router interface the candidate makes again: their
/// VRF changes, or is made again.
pub fn moved_ports<B: Backend>(sai: &Sai<B>, applied: &Applied, candidate: &Config) -> BTreeSet<String> {
    let stale = stale(applied, candidate);
    applied
        .ports
        .iter()
        .filter_map(|(name, objects)| {
            let current = sai.get_router_interface(objects.router_interface?).ok()?.virtual_router;
            let vrf = candidate.port(name)?.vrf.as_deref();
            let wanted = wanted_virtual_router(sai, applied, &stale, vrf);
            (wanted != Some(current)).then(|| name.clone())
        })
        .collect()
}

/// Removes the routes the candidate no longer has in each VRF, and the
/// L3VNI maps of stale VRFs (before the tunnel may go).
pub fn remove_routes_and_maps<B: Backend>(
    sai: &mut Sai<B>,
    applied: &mut Applied,
    candidate: &Config,
    stale: &BTreeSet<String>,
) -> Result<(), ApplyError> {
    let want = desired_routes(candidate);
    let gone: Vec<(String, IpNetwork)> = applied
        .vrf_routes
        .iter()
        .filter(|(key, spec)| stale.contains(&key.0) || want.get(*key) != Some(*spec))
        .map(|(key, _)| key.clone())
        .collect();
    for (vrf, prefix) in gone {
        let virtual_router = applied.vrfs[&vrf].virtual_router;
        sai.remove_route_entry(RouteEntryKey { virtual_router, destination: prefix })
            .context(|| format!("remove route {prefix} in vrf {vrf}"))?;
        applied.vrf_routes.remove(&(vrf, prefix));
    }
    for name in stale {
        if let Some(map) = applied.vrfs.get_mut(name).and_then(|v| v.l3vni_map.take()) {
            sai.remove(map).context(|| format!("remove the L3VNI of vrf {name}"))?;
        }
    }
    Ok(())
}

/// Removes the virtual routers of stale VRFs (after their SVIs).
pub fn remove_virtual_routers<B: Backend>(
    sai: &mut Sai<B>,
    applied: &mut Applied,
    stale: &BTreeSet<String>,
) -> Result<(), ApplyError> {
    for name in stale {
        if let Some(objects) = applied.vrfs.remove(name) {
            sai.remove(objects.virtual_router).context(|| format!("remove vrf {name}"))?;
        }
    }
    Ok(())
}

/// Makes the candidate's new VRFs' virtual routers (before their SVIs).
pub fn create_virtual_routers<B: Backend>(
    sai: &mut Sai<B>,
    applied: &mut Applied,
    candidate: &Config,
) -> Result<(), ApplyError> {
    for vrf in &candidate.vrfs {
        if applied.vrfs.contains_key(&vrf.name) {
            continue;
        }
        let virtual_router = sai
            .create_virtual_router_with(&[VirtualRouterAttr::SrcMacAddress(vrf.router_mac)])
            .context(|| format!("vrf {}", vrf.name))?;
        let objects = VrfObjects { virtual_router, l3vni: vrf.l3vni, router_mac: vrf.router_mac, l3vni_map: None };
        applied.vrfs.insert(vrf.name.clone(), objects);
    }
    Ok(())
}

/// Makes the VRFs' new routes (after the SVIs) and their L3VNI maps (after
/// the tunnel).
pub fn create_routes_and_maps<B: Backend>(
    sai: &mut Sai<B>,
    applied: &mut Applied,
    candidate: &Config,
) -> Result<(), ApplyError> {
    for (key, spec) in desired_routes(candidate) {
        if applied.vrf_routes.contains_key(&key) {
            continue;
        }
        let (vrf, prefix) = &key;
        let target = match &spec {
            RouteSpec::Connected(interface) => {
                applied.rif_of(interface).expect("an interface with addresses has a rif")
            }
            _ => sai.cpu_port(),
        };
        let virtual_router = applied.vrfs[vrf].virtual_router;
        sai.create_route_entry(
            RouteEntryKey { virtual_router, destination: *prefix },
            &[RouteEntryAttr::NextHopId(Some(target))],
        )
        .context(|| format!("route {prefix} in vrf {vrf}"))?;
        applied.vrf_routes.insert(key, spec);
    }
    let Some(tunnel) = applied.tunnel else { return Ok(()) };
    for (name, objects) in applied.vrfs.iter_mut().filter(|(_, v)| v.l3vni_map.is_none()) {
        let map = sai
            .create_tunnel_map_entry(&[
                TunnelMapEntryAttr::TunnelId(tunnel),
                TunnelMapEntryAttr::VirtualRouterId(objects.virtual_router),
                TunnelMapEntryAttr::Vni(objects.l3vni),
            ])
            .context(|| format!("L3VNI {} of vrf {name}", objects.l3vni))?;
        objects.l3vni_map = Some(map);
    }
    Ok(())
}
