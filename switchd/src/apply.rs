//! Programs a validated [`Config`] into the SAI-like shim, as a diff from
//! what is programmed ([`Applied`]) to what the config asks for.
//!
//! [`reconcile`] removes what the candidate no longer has (in reverse
//! dependency order: routes, groups, next hops, flood entries, VNI maps,
//! tunnel, router interfaces, VLAN members, bridge ports, ports, VLANs),
//! changes attributes in place (port admin state, MTU, PVID, tagging mode,
//! router interface MTU, tunnel source), and creates what is new (in
//! dependency order). [`apply`] is the first reconcile, from nothing.
//! Validation already refused every config the shim would refuse for
//! content, so an error here is a resource limit (a full table) or a bug;
//! the daemon then reconciles back to the running config.
//!
//! [`Applied`] also lets the management server turn object ids back into the
//! operator's names.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use dataplane::wire::EthernetAddress;
use ipnetwork::IpNetwork;
use sai_shim::{
    Backend, BridgePortAttr, BridgePortType, FdbEntryAttr, FdbEntryKey, FdbEntryType, FdbFlush, FdbFlushType,
    NextHopAttr, NextHopGroupAttr, NextHopGroupMemberAttr, ObjectId, PortAttr, RouteEntryAttr, RouteEntryKey,
    RouterInterfaceAttr, RouterInterfaceType, Sai, SaiError, SwitchAttr, TaggingMode, TunnelAttr, TunnelEndpointAttr,
    TunnelMapEntryAttr, VlanAttr, VlanMemberAttr,
};

use crate::config::{Config, L3Interface, PortMode};

/// Shim objects created for one front-panel port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortObjects {
    pub port: ObjectId,
    /// Set on access and trunk ports.
    pub bridge_port: Option<ObjectId>,
    /// Set on routed ports.
    pub router_interface: Option<ObjectId>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlanObjects {
    pub vlan: ObjectId,
    /// The SVI, when the VLAN has addresses.
    pub router_interface: Option<ObjectId>,
}

/// Sorted ECMP members, by what the config names: the group's identity.
pub type HopSet = Vec<(IpAddr, L3Interface)>;

/// Everything programmed, by the names the config uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    pub ports: BTreeMap<String, PortObjects>,
    pub vlans: BTreeMap<u16, VlanObjects>,
    /// (VLAN, port) -> VLAN member.
    pub members: BTreeMap<(u16, String), ObjectId>,
    pub tunnel: Option<ObjectId>,
    /// VLAN -> (VNI, tunnel map entry).
    pub vni_maps: BTreeMap<u16, (u32, ObjectId)>,
    /// Remote VTEP -> (tunnel endpoint, its bridge port).
    pub remote_vteps: BTreeMap<Ipv4Addr, (ObjectId, ObjectId)>,
    /// (VLAN, remote VTEP) -> the VLAN member that floods to it.
    pub flood_members: BTreeMap<(u16, Ipv4Addr), ObjectId>,
    pub next_hops: BTreeMap<(IpAddr, L3Interface), ObjectId>,
    /// Hop set -> (group, its members).
    pub groups: BTreeMap<HopSet, (ObjectId, Vec<ObjectId>)>,
    /// Route -> what it was programmed for.
    pub routes: BTreeMap<IpNetwork, RouteSpec>,
    /// VRF name -> its objects.
    pub vrfs: BTreeMap<String, crate::apply_vrf::VrfObjects>,
    /// (VRF, route) -> what it was programmed for: the SVIs' addresses and subnets.
    pub vrf_routes: BTreeMap<(String, IpNetwork), RouteSpec>,
    /// (VLAN, MAC) -> the port of its static FDB entry.
    pub static_macs: BTreeMap<(u16, EthernetAddress), String>,
    /// The traffic manager's objects (made again when `qos:` changes).
    pub qos: crate::qos::QosObjects,
}

/// What a route points at, in the config's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteSpec {
    /// An address of the switch: to the CPU port.
    Local,
    Connected(L3Interface),
    Via(HopSet),
}

impl Applied {
    /// The operator's name of an L3 interface object (`eth3`, `vlan10`).
    pub fn router_interface_name(&self, rif: ObjectId) -> Option<String> {
        self.ports.iter().find(|(_, p)| p.router_interface == Some(rif)).map(|(name, _)| name.clone()).or_else(|| {
            self.vlans.iter().find(|(_, v)| v.router_interface == Some(rif)).map(|(id, _)| format!("vlan{id}"))
        })
    }

    /// Where a next hop leaves: its router interface's name, or for a
    /// next hop across the overlay its L3VNI (`vni4001`).
    pub fn next_hop_interface(&self, next_hop: &sai_shim::NextHop) -> Option<String> {
        match next_hop.next_hop_type {
            sai_shim::NextHopType::Ip { router_interface } => self.router_interface_name(router_interface),
            sai_shim::NextHopType::TunnelEncap { vni, .. } => Some(format!("vni{vni}")),
        }
    }

    pub fn port_name(&self, port: ObjectId) -> Option<&str> {
        self.ports.iter().find(|(_, p)| p.port == port).map(|(name, _)| name.as_str())
    }

    /// The name of what a bridge port leads to: a port name or `vtep A.B.C.D`.
    pub fn bridge_port_name(&self, bridge_port: ObjectId) -> Option<String> {
        self.ports.iter().find(|(_, p)| p.bridge_port == Some(bridge_port)).map(|(name, _)| name.clone()).or_else(
            || self.remote_vteps.iter().find(|(_, (_, bp))| *bp == bridge_port).map(|(ip, _)| format!("vtep {ip}")),
        )
    }

    pub fn vlan_id(&self, vlan: ObjectId) -> Option<u16> {
        self.vlans.iter().find(|(_, v)| v.vlan == vlan).map(|(id, _)| *id)
    }

    pub(crate) fn rif_of(&self, interface: &L3Interface) -> Option<ObjectId> {
        match interface {
            L3Interface::Port(name) => self.ports.get(name)?.router_interface,
            L3Interface::Vlan(id) => self.vlans.get(id)?.router_interface,
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("applying {what}: {source}")]
pub struct ApplyError {
    pub what: String,
    #[source]
    pub source: SaiError,
}

pub(crate) trait Context<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, ApplyError>;
}

impl<T> Context<T> for Result<T, SaiError> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, ApplyError> {
        self.map_err(|source| ApplyError { what: what(), source })
    }
}

/// A stable, locally administered MAC for a switch name (IEEE 802 U/L bit
/// set, multicast bit clear): distinct switches in one fabric get distinct
/// router MACs without configuration.
pub fn switch_mac(name: &str) -> EthernetAddress {
    // FNV-1a: stable across runs and Rust versions, unlike DefaultHasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    let b = hash.to_be_bytes();
    EthernetAddress([0x02, b[1], b[2], b[3], b[4], b[5]])
}

/// The IPv6 link-local address (RFC 4291 appendix A, modified EUI-64) the
/// kernel gives a host interface TAP that carries `mac`: every router
/// interface has the switch MAC, so it is one address for all of them.
pub fn link_local_address(mac: EthernetAddress) -> Ipv6Addr {
    let m = mac.0;
    Ipv6Addr::from([0xfe, 0x80, 0, 0, 0, 0, 0, 0, m[0] ^ 0x02, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]])
}

/// The switch attributes a config implies, for [`Sai::new`].
pub fn switch_attributes(config: &Config) -> Vec<SwitchAttr> {
    vec![SwitchAttr::SrcMacAddress(config.system_mac)]
}

/// Creates every object of `config` in a fresh shim.
pub fn apply<B: Backend>(sai: &mut Sai<B>, config: &Config) -> Result<Applied, ApplyError> {
    let mut applied = Applied::default();
    reconcile(sai, &mut applied, config)?;
    Ok(applied)
}

/// Every route `config` implies: the switch's addresses, connected subnets,
/// static routes.
pub fn desired_routes(config: &Config) -> BTreeMap<IpNetwork, RouteSpec> {
    let mut routes = BTreeMap::new();
    for (address, interface) in config.addresses() {
        let host = IpNetwork::new(address.ip(), if address.is_ipv4() { 32 } else { 128 }).expect("host prefix");
        routes.insert(host, RouteSpec::Local);
        if let Some(interface) = interface {
            let subnet = IpNetwork::new(address.network(), address.prefix()).expect("same prefix");
            if subnet.prefix() != host.prefix() {
                routes.insert(subnet, RouteSpec::Connected(interface));
            }
        }
    }
    // The kernel behind the host interfaces speaks from its link-local
    // address too (neighbour solicitations before it answers a TCP SYN to a
    // loopback address, for one): what comes back to it must be ip2me.
    // Routed ports without addresses (BGP unnumbered) have only it.
    let routed_port = config.ports.iter().any(|p| matches!(p.mode, crate::config::PortMode::Routed { .. }));
    if routed_port || config.addresses().iter().any(|(_, interface)| interface.is_some()) {
        let link_local = link_local_address(config.system_mac);
        routes.insert(IpNetwork::new(IpAddr::V6(link_local), 128).expect("host prefix"), RouteSpec::Local);
    }
    for route in &config.routes {
        let mut hops = route.next_hops.clone();
        hops.sort();
        routes.insert(route.prefix, RouteSpec::Via(hops));
    }
    routes
}

/// The static MACs of `config` by (VLAN, MAC), with their port.
fn static_macs(config: &Config) -> BTreeMap<(u16, EthernetAddress), String> {
    let entries = config.vlans.iter().flat_map(|v| v.static_macs.iter().map(move |s| ((v.id, s.mac), s.port.clone())));
    entries.collect()
}

/// What the candidate wants, keyed like [`Applied`].
struct Desired {
    /// Port -> (admin, mtu, pvid, bridged, routed).
    ports: BTreeMap<String, (bool, u16, Option<u16>, bool, bool)>,
    vlans: BTreeSet<u16>,
    svis: BTreeSet<u16>,
    members: BTreeMap<(u16, String), bool>,
    tunnel: Option<(Ipv4Addr, u16)>,
    vni_maps: BTreeMap<u16, u32>,
    flood: BTreeSet<(u16, Ipv4Addr)>,
    routes: BTreeMap<IpNetwork, RouteSpec>,
    groups: BTreeSet<HopSet>,
    next_hops: BTreeSet<(IpAddr, L3Interface)>,
}

impl Desired {
    /// An SVI's MTU: its member ports' smallest, as a Linux bridge takes
    /// its ports' smallest (a VLAN of jumbo-frame ports routes jumbo
    /// frames); the ports' default when it has no member.
    fn svi_mtu(&self, vid: u16) -> u16 {
        let member_mtus = self.members.keys().filter(|(v, _)| *v == vid).filter_map(|(_, port)| self.ports.get(port));
        member_mtus.map(|&(_, mtu, ..)| mtu).min().unwrap_or(1500)
    }

    fn of(config: &Config) -> Desired {
        let mut ports = BTreeMap::new();
        let mut members = BTreeMap::new();
        for port in &config.ports {
            let routed = matches!(port.mode, PortMode::Routed { .. });
            ports.insert(port.name.clone(), (port.admin_up, port.mtu, port.mode.pvid(), !routed, routed));
            for (vid, tagged) in port.mode.memberships() {
                members.insert((vid, port.name.clone()), tagged);
            }
        }
        let routes = desired_routes(config);
        let mut groups = BTreeSet::new();
        let mut next_hops = BTreeSet::new();
        for spec in routes.values() {
            if let RouteSpec::Via(hops) = spec {
                next_hops.extend(hops.iter().cloned());
                if hops.len() > 1 {
                    groups.insert(hops.clone());
                }
            }
        }
        let vxlan = config.vxlan.as_ref();
        Desired {
            ports,
            vlans: config.vlans.iter().map(|v| v.id).collect(),
            svis: config.vlans.iter().filter(|v| !v.addresses.is_empty()).map(|v| v.id).collect(),
            members,
            tunnel: vxlan.map(|x| (x.source, x.udp_port)),
            vni_maps: vxlan.map(|x| x.vnis.iter().map(|m| (m.vlan, m.vni)).collect()).unwrap_or_default(),
            flood: vxlan
                .map(|x| x.vnis.iter().flat_map(|m| m.flood.iter().map(move |r| (m.vlan, *r))).collect())
                .unwrap_or_default(),
            routes,
            groups,
            next_hops,
        }
    }
}

/// Brings the shim from `applied` to `candidate`, updating `applied` as each
/// step succeeds (so that after an error it still tells what is programmed).
pub fn reconcile<B: Backend>(sai: &mut Sai<B>, applied: &mut Applied, candidate: &Config) -> Result<(), ApplyError> {
    let want = Desired::of(candidate);
    let vr = sai.default_virtual_router();
    let route_key = |prefix: IpNetwork| RouteEntryKey { virtual_router: vr, destination: prefix };
    let stale_vrfs = crate::apply_vrf::stale(applied, candidate);
    crate::apply_vrf::remove_routes_and_maps(sai, applied, candidate, &stale_vrfs)?;
    // A new `qos:` makes the traffic manager's objects again (its queues
    // and priority groups name ports: they go first, come back last).
    let qos_changed = crate::qos::stale(&applied.qos, candidate);
    if qos_changed {
        crate::qos::remove(sai, &mut applied.qos)?;
    }

    // ---- removals, users before what they use
    let stale_routes: Vec<IpNetwork> =
        applied.routes.iter().filter(|(p, spec)| want.routes.get(*p) != Some(*spec)).map(|(p, _)| *p).collect();
    for prefix in stale_routes {
        sai.remove_route_entry(route_key(prefix)).context(|| format!("remove route {prefix}"))?;
        applied.routes.remove(&prefix);
    }
    let stale_groups: Vec<HopSet> = applied.groups.keys().filter(|k| !want.groups.contains(*k)).cloned().collect();
    for key in stale_groups {
        let (group, members) = applied.groups[&key].clone();
        for member in members {
            sai.remove(member).context(|| "remove next-hop group member".into())?;
        }
        sai.remove(group).context(|| "remove next-hop group".into())?;
        applied.groups.remove(&key);
    }
    let stale_hops: Vec<(IpAddr, L3Interface)> =
        applied.next_hops.keys().filter(|k| !want.next_hops.contains(*k)).cloned().collect();
    for key in stale_hops {
        sai.remove(applied.next_hops[&key]).context(|| format!("remove next hop {}", key.0))?;
        applied.next_hops.remove(&key);
    }
    // A VLAN whose VNI changes loses its flood entries with its old map.
    let remapped: BTreeSet<u16> = applied
        .vni_maps
        .iter()
        .filter(|(vlan, (vni, _))| want.vni_maps.get(*vlan) != Some(vni))
        .map(|(v, _)| *v)
        .collect();
    let stale_flood: Vec<(u16, Ipv4Addr)> =
        applied.flood_members.keys().filter(|k| !want.flood.contains(*k) || remapped.contains(&k.0)).copied().collect();
    for key in stale_flood {
        sai.remove(applied.flood_members[&key])
            .context(|| format!("remove flood entry {} of vlan {}", key.1, key.0))?;
        applied.flood_members.remove(&key);
    }
    let still_flooded: BTreeSet<Ipv4Addr> = want.flood.iter().map(|(_, r)| *r).collect();
    let stale_remotes: Vec<Ipv4Addr> =
        applied.remote_vteps.keys().filter(|r| !still_flooded.contains(*r)).copied().collect();
    for remote in stale_remotes {
        let (endpoint, bridge_port) = applied.remote_vteps[&remote];
        let _ = sai.flush_fdb_entries(FdbFlush {
            bridge_port: Some(bridge_port),
            vlan: None,
            entry_type: FdbFlushType::All,
        });
        sai.remove(bridge_port).context(|| format!("remove bridge port of vtep {remote}"))?;
        sai.remove(endpoint).context(|| format!("remove vtep {remote}"))?;
        applied.remote_vteps.remove(&remote);
    }
    for vlan in remapped {
        let (_, map) = applied.vni_maps[&vlan];
        sai.remove(map).context(|| format!("remove VNI map of vlan {vlan}"))?;
        applied.vni_maps.remove(&vlan);
    }
    if let Some(tunnel) = applied.tunnel {
        match want.tunnel {
            None => {
                sai.remove(tunnel).context(|| "remove vxlan tunnel".into())?;
                applied.tunnel = None;
            }
            Some((source, port)) => {
                let current = sai.get_tunnel(tunnel).context(|| "read vxlan tunnel".into())?;
                if current.encap_src_ip != source {
                    sai.set_tunnel_attribute(tunnel, TunnelAttr::EncapSrcIp(source))
                        .context(|| "vxlan source".into())?;
                }
                if current.udp_dst_port != port {
                    sai.set_tunnel_attribute(tunnel, TunnelAttr::UdpDstPort(port)).context(|| "vxlan port".into())?;
                }
            }
        }
    }
    let moved_svis = crate::apply_vrf::moved_svis(sai, applied, candidate);
    for (vid, objects) in applied.vlans.iter_mut() {
        if let Some(rif) = objects.router_interface
            && (!want.svis.contains(vid) || moved_svis.contains(vid))
        {
            sai.remove(rif).context(|| format!("remove router interface of vlan {vid}"))?;
            objects.router_interface = None;
        }
    }
    let moved_ports = crate::apply_vrf::moved_ports(sai, applied, candidate);
    for (name, objects) in applied.ports.iter_mut() {
        if let Some(rif) = objects.router_interface
            && (!want.ports.get(name).is_some_and(|p| p.4) || moved_ports.contains(name))
        {
            sai.remove(rif).context(|| format!("remove router interface of {name}"))?;
            objects.router_interface = None;
        }
    }
    let wanted_macs = static_macs(candidate);
    let stale_macs: Vec<(u16, EthernetAddress)> = applied
        .static_macs
        .iter()
        .filter(|(key, port)| wanted_macs.get(*key) != Some(*port))
        .map(|(key, _)| *key)
        .collect();
    for (vid, mac) in stale_macs {
        // Gone already if EVPN installed a remote MAC over it.
        let _ = sai.remove_fdb_entry(FdbEntryKey { vlan: applied.vlans[&vid].vlan, mac });
        applied.static_macs.remove(&(vid, mac));
    }
    let members: Vec<((u16, String), ObjectId)> = applied.members.iter().map(|(k, v)| (k.clone(), *v)).collect();
    for (key, member) in members {
        match want.members.get(&key) {
            None => {
                sai.remove(member).context(|| format!("remove {} from vlan {}", key.1, key.0))?;
                applied.members.remove(&key);
            }
            Some(&tagged) => {
                let mode = if tagged { TaggingMode::Tagged } else { TaggingMode::Untagged };
                if sai.get_vlan_member(member).map(|m| m.tagging_mode).ok() != Some(mode) {
                    sai.set_vlan_member_attribute(member, VlanMemberAttr::TaggingMode(mode))
                        .context(|| format!("tagging of {} in vlan {}", key.1, key.0))?;
                }
            }
        }
    }
    for (name, objects) in applied.ports.iter_mut() {
        if let Some(bridge_port) = objects.bridge_port
            && !want.ports.get(name).is_some_and(|p| p.3)
        {
            let _ = sai.flush_fdb_entries(FdbFlush {
                bridge_port: Some(bridge_port),
                vlan: None,
                entry_type: FdbFlushType::All,
            });
            sai.remove(bridge_port).context(|| format!("remove bridge port of {name}"))?;
            objects.bridge_port = None;
        }
    }
    crate::apply_vrf::remove_virtual_routers(sai, applied, &stale_vrfs)?;
    let stale_ports: Vec<String> = applied.ports.keys().filter(|n| !want.ports.contains_key(*n)).cloned().collect();
    for name in stale_ports {
        sai.remove(applied.ports[&name].port).context(|| format!("remove port {name}"))?;
        applied.ports.remove(&name);
    }
    let stale_vlans: Vec<u16> = applied.vlans.keys().filter(|v| !want.vlans.contains(*v)).copied().collect();
    for vid in stale_vlans {
        sai.remove(applied.vlans[&vid].vlan).context(|| format!("remove vlan {vid}"))?;
        applied.vlans.remove(&vid);
    }

    // ---- creations and in-place changes, what is used before its users
    for &vid in &want.vlans {
        if let std::collections::btree_map::Entry::Vacant(entry) = applied.vlans.entry(vid) {
            let vlan = sai.create_vlan(&[VlanAttr::VlanId(vid)]).context(|| format!("vlan {vid}"))?;
            entry.insert(VlanObjects { vlan, router_interface: None });
        }
    }
    // Before the router interfaces bound to them.
    crate::apply_vrf::create_virtual_routers(sai, applied, candidate)?;
    for port in &candidate.ports {
        let (admin, mtu, pvid, bridged, routed) = want.ports[&port.name];
        let id = match applied.ports.get(&port.name) {
            Some(objects) => {
                let id = objects.port;
                let current = sai.get_port(id).context(|| format!("read port {}", port.name))?;
                if current.admin_state != admin {
                    sai.set_port_attribute(id, PortAttr::AdminState(admin))
                        .context(|| format!("admin state of {}", port.name))?;
                }
                if current.mtu != mtu {
                    sai.set_port_attribute(id, PortAttr::Mtu(mtu)).context(|| format!("mtu of {}", port.name))?;
                }
                if let Some(pvid) = pvid
                    && current.port_vlan_id != pvid
                {
                    sai.set_port_attribute(id, PortAttr::PortVlanId(pvid))
                        .context(|| format!("pvid of {}", port.name))?;
                }
                id
            }
            None => {
                let mut attrs =
                    vec![PortAttr::Name(port.name.clone()), PortAttr::AdminState(admin), PortAttr::Mtu(mtu)];
                if let Some(pvid) = pvid {
                    attrs.push(PortAttr::PortVlanId(pvid));
                }
                let id = sai.create_port(&attrs).context(|| format!("port {}", port.name))?;
                applied
                    .ports
                    .insert(port.name.clone(), PortObjects { port: id, bridge_port: None, router_interface: None });
                id
            }
        };
        let objects = applied.ports.get_mut(&port.name).expect("present");
        if bridged && objects.bridge_port.is_none() {
            let bridge_port = sai
                .create_bridge_port(&[BridgePortAttr::Type(BridgePortType::Port(id)), BridgePortAttr::Learning(true)])
                .context(|| format!("bridge port of {}", port.name))?;
            objects.bridge_port = Some(bridge_port);
        }
        if routed {
            match objects.router_interface {
                None => {
                    let virtual_router = match &port.vrf {
                        Some(name) => applied.vrfs[name].virtual_router,
                        None => vr,
                    };
                    let rif = sai
                        .create_router_interface(&[
                            RouterInterfaceAttr::VirtualRouterId(virtual_router),
                            RouterInterfaceAttr::Type(RouterInterfaceType::Port(id)),
                            RouterInterfaceAttr::Mtu(mtu),
                            RouterInterfaceAttr::AdminState(admin),
                            RouterInterfaceAttr::SendRedirects(port.redirects),
                        ])
                        .context(|| format!("router interface of {}", port.name))?;
                    objects.router_interface = Some(rif);
                }
                Some(rif) => {
                    let current =
                        sai.get_router_interface(rif).context(|| format!("read router interface of {}", port.name))?;
                    if current.mtu != mtu {
                        sai.set_router_interface_attribute(rif, RouterInterfaceAttr::Mtu(mtu))
                            .context(|| format!("router interface mtu of {}", port.name))?;
                    }
                    if current.admin_state != admin {
                        sai.set_router_interface_attribute(rif, RouterInterfaceAttr::AdminState(admin))
                            .context(|| format!("router interface state of {}", port.name))?;
                    }
                    if current.send_redirects != port.redirects {
                        sai.set_router_interface_attribute(rif, RouterInterfaceAttr::SendRedirects(port.redirects))
                            .context(|| format!("router interface redirects of {}", port.name))?;
                    }
                }
            }
        }
    }
    for ((vid, name), &tagged) in &want.members {
        if applied.members.contains_key(&(*vid, name.clone())) {
            continue;
        }
        let vlan = applied.vlans[vid].vlan;
        let bridge_port = applied.ports[name].bridge_port.expect("bridged port has a bridge port");
        let mode = if tagged { TaggingMode::Tagged } else { TaggingMode::Untagged };
        let member = sai
            .create_vlan_member(&[
                VlanMemberAttr::VlanId(vlan),
                VlanMemberAttr::BridgePortId(bridge_port),
                VlanMemberAttr::TaggingMode(mode),
            ])
            .context(|| format!("member {name} of vlan {vid}"))?;
        applied.members.insert((*vid, name.clone()), member);
    }
    for vlan in candidate.vlans.iter().filter(|v| want.svis.contains(&v.id)) {
        let vid = vlan.id;
        let mtu = want.svi_mtu(vid);
        let virtual_router = match &vlan.vrf {
            Some(name) => applied.vrfs[name].virtual_router,
            None => vr,
        };
        // An anycast gateway's MAC, or the switch's.
        let mac = vlan.mac.unwrap_or(sai.store().switch().src_mac_address);
        let objects = applied.vlans.get_mut(&vid).expect("created above");
        match objects.router_interface {
            None => {
                let rif = sai
                    .create_router_interface(&[
                        RouterInterfaceAttr::VirtualRouterId(virtual_router),
                        RouterInterfaceAttr::Type(RouterInterfaceType::Vlan(objects.vlan)),
                        RouterInterfaceAttr::SrcMacAddress(mac),
                        RouterInterfaceAttr::Mtu(mtu),
                    ])
                    .context(|| format!("router interface of vlan {vid}"))?;
                objects.router_interface = Some(rif);
            }
            Some(rif) => {
                if sai.get_router_interface(rif).map(|r| r.src_mac_address).ok() != Some(mac) {
                    sai.set_router_interface_attribute(rif, RouterInterfaceAttr::SrcMacAddress(mac))
                        .context(|| format!("mac of vlan {vid}"))?;
                }
            }
        }
    }
    for ((vid, mac), port) in wanted_macs {
        if applied.static_macs.contains_key(&(vid, mac)) {
            continue;
        }
        let key = FdbEntryKey { vlan: applied.vlans[&vid].vlan, mac };
        let bridge_port = applied.ports[&port].bridge_port.expect("validated: a member port");
        let attrs = [
            FdbEntryAttr::Type(FdbEntryType::Static),
            FdbEntryAttr::AllowMacMove(false),
            FdbEntryAttr::BridgePortId(bridge_port),
        ];
        // A dynamic entry learned for the MAC gives way.
        let made = match sai.create_fdb_entry(key, &attrs) {
            Err(SaiError::AlreadyExists(_)) => {
                let _ = sai.remove_fdb_entry(key);
                sai.create_fdb_entry(key, &attrs)
            }
            other => other,
        };
        made.context(|| format!("static MAC {mac} in vlan {vid}"))?;
        applied.static_macs.insert((vid, mac), port);
    }
    for key in &want.next_hops {
        if applied.next_hops.contains_key(key) {
            continue;
        }
        let rif = applied.rif_of(&key.1).expect("validated: next hop on an L3 interface");
        let id = sai
            .create_next_hop(&[NextHopAttr::Ip(key.0), NextHopAttr::RouterInterfaceId(rif)])
            .context(|| format!("next hop {}", key.0))?;
        applied.next_hops.insert(key.clone(), id);
    }
    for hops in &want.groups {
        let ips: Vec<IpAddr> = hops.iter().map(|hop| hop.0).collect();
        if let Some(&(group, _)) = applied.groups.get(hops) {
            // A group kept: its DLB mode may have changed in `qos.dlb.groups`.
            let mode = candidate.dlb_groups.get(&ips).copied();
            if sai.get_next_hop_group(group).context(|| "next-hop group".into())?.dlb_mode != mode {
                sai.set_next_hop_group_attribute(group, NextHopGroupAttr::DlbMode(mode))
                    .context(|| format!("DLB mode of next-hop group {ips:?}"))?;
            }
            continue;
        }
        let group = match candidate.dlb_groups.get(&ips) {
            Some(&mode) => sai.create_next_hop_group_with(&[NextHopGroupAttr::DlbMode(Some(mode))]),
            None => sai.create_next_hop_group(),
        }
        .context(|| "next-hop group".into())?;
        applied.groups.insert(hops.clone(), (group, Vec::new()));
        for hop in hops {
            let member = sai
                .create_next_hop_group_member(&[
                    NextHopGroupMemberAttr::NextHopGroupId(group),
                    NextHopGroupMemberAttr::NextHopId(applied.next_hops[hop]),
                ])
                .context(|| format!("next-hop group member {}", hop.0))?;
            applied.groups.get_mut(hops).expect("inserted").1.push(member);
        }
    }
    for (prefix, spec) in &want.routes {
        if applied.routes.contains_key(prefix) {
            continue;
        }
        let target = match spec {
            RouteSpec::Local => sai.cpu_port(),
            RouteSpec::Connected(interface) => applied.rif_of(interface).expect("interface with addresses has a rif"),
            RouteSpec::Via(hops) if hops.len() == 1 => applied.next_hops[&hops[0]],
            RouteSpec::Via(hops) => applied.groups[hops].0,
        };
        sai.create_route_entry(route_key(*prefix), &[RouteEntryAttr::NextHopId(Some(target))])
            .context(|| format!("route {prefix}"))?;
        applied.routes.insert(*prefix, spec.clone());
    }
    if let (None, Some((source, port))) = (applied.tunnel, want.tunnel) {
        let tunnel = sai
            .create_tunnel(&[TunnelAttr::EncapSrcIp(source), TunnelAttr::UdpDstPort(port)])
            .context(|| "vxlan tunnel".into())?;
        applied.tunnel = Some(tunnel);
    }
    for (&vlan_id, &vni) in &want.vni_maps {
        if applied.vni_maps.contains_key(&vlan_id) {
            continue;
        }
        let tunnel = applied.tunnel.expect("a VNI map comes with the tunnel");
        let map = sai
            .create_tunnel_map_entry(&[
                TunnelMapEntryAttr::TunnelId(tunnel),
                TunnelMapEntryAttr::VlanId(applied.vlans[&vlan_id].vlan),
                TunnelMapEntryAttr::Vni(vni),
            ])
            .context(|| format!("vni {vni} map"))?;
        applied.vni_maps.insert(vlan_id, (vni, map));
    }
    for &(vlan_id, remote) in &want.flood {
        if applied.flood_members.contains_key(&(vlan_id, remote)) {
            continue;
        }
        let tunnel = applied.tunnel.expect("a flood list comes with the tunnel");
        let bridge_port = match applied.remote_vteps.get(&remote) {
            Some(&(_, bridge_port)) => bridge_port,
            None => {
                let endpoint = sai
                    .create_tunnel_endpoint(&[
                        TunnelEndpointAttr::TunnelId(tunnel),
                        TunnelEndpointAttr::RemoteIp(remote),
                    ])
                    .context(|| format!("remote vtep {remote}"))?;
                let bridge_port = sai
                    .create_bridge_port(&[BridgePortAttr::Type(BridgePortType::Tunnel(endpoint))])
                    .context(|| format!("bridge port of remote vtep {remote}"))?;
                applied.remote_vteps.insert(remote, (endpoint, bridge_port));
                bridge_port
            }
        };
        // A tunnel bridge port in a VLAN puts the remote VTEP on the VNI's
        // flood list (head-end replication).
        let member = sai
            .create_vlan_member(&[
                VlanMemberAttr::VlanId(applied.vlans[&vlan_id].vlan),
                VlanMemberAttr::BridgePortId(bridge_port),
                VlanMemberAttr::TaggingMode(TaggingMode::Untagged),
            ])
            .context(|| format!("flood entry {remote} of vlan {vlan_id}"))?;
        applied.flood_members.insert((vlan_id, remote), member);
    }
    crate::apply_vrf::create_routes_and_maps(sai, applied, candidate)?;
    if qos_changed {
        applied.qos = crate::qos::apply(sai, candidate, applied)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dataplane::pipeline::{RouteTarget, SwitchConfig};
    use sai_shim::backend::soft::SoftBackend;

    const CONFIG: &str = r#"
name: leaf1
loopback: [10.255.0.1/32]
ports:
  - { name: eth1, mode: access, vlan: 10 }
  - { name: eth2, mode: trunk, vlans: [10, 20] }
  - { name: eth3, mode: routed, addresses: [10.0.1.1/24] }
  - { name: eth4, mode: routed, addresses: [10.0.2.1/24] }
vlans:
  - { id: 10, addresses: [192.168.10.1/24] }
  - { id: 20 }
vxlan:
  source: 10.255.0.1
  vnis: [{ vni: 10010, vlan: 10, flood: [10.255.0.2] }]
routes:
  - { prefix: 0.0.0.0/0, next_hops: [10.0.1.2, 10.0.2.2] }
  - { prefix: 10.255.0.2/32, next_hops: [10.0.1.2] }
"#;

    fn applied() -> (Sai<SoftBackend>, Applied) {
        let config = Config::from_yaml(CONFIG).unwrap();
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        let applied = apply(&mut sai, &config).unwrap();
        (sai, applied)
    }

    #[test]
    fn ports_vlans_and_interfaces_are_created() {
        let (sai, applied) = applied();
        assert_eq!(applied.ports.len(), 4);
        assert!(applied.ports["eth1"].bridge_port.is_some());
        assert!(applied.ports["eth3"].router_interface.is_some());
        assert!(applied.vlans[&10].router_interface.is_some());
        assert!(applied.vlans[&20].router_interface.is_none());
        let port = sai.get_port(applied.ports["eth1"].port).unwrap();
        assert_eq!(port.port_vlan_id, 10);
        assert!(port.admin_state);
        assert_eq!(applied.router_interface_name(applied.vlans[&10].router_interface.unwrap()).unwrap(), "vlan10");
    }

    #[test]
    fn routes_reach_the_pipeline() {
        let (sai, _) = applied();
        let routes: BTreeMap<IpNetwork, RouteTarget> = sai.backend().pipeline().routes().collect();
        let net = |s: &str| s.parse::<IpNetwork>().unwrap();
        assert!(matches!(routes[&net("10.255.0.1/32")], RouteTarget::Local));
        assert!(matches!(routes[&net("10.0.1.1/32")], RouteTarget::Local));
        assert!(matches!(routes[&net("192.168.10.1/32")], RouteTarget::Local));
        assert!(matches!(routes[&net("10.0.1.0/24")], RouteTarget::Connected(_)));
        assert!(matches!(routes[&net("192.168.10.0/24")], RouteTarget::Connected(_)));
        assert!(matches!(routes[&net("0.0.0.0/0")], RouteTarget::Group(_)));
        assert!(matches!(routes[&net("10.255.0.2/32")], RouteTarget::NextHop(_)));
    }

    #[test]
    fn next_hops_are_shared_between_routes() {
        let (sai, applied) = applied();
        // 10.0.1.2 serves both routes through one object.
        assert_eq!(applied.next_hops.len(), 2);
        let store = sai.store();
        let group =
            store.route_entries().find(|(k, _)| k.destination.prefix() == 0).and_then(|(_, e)| e.next_hop).unwrap();
        assert_eq!(store.group_members(group).len(), 2);
    }

    #[test]
    fn vxlan_maps_and_flood_list() {
        let (sai, applied) = applied();
        assert!(applied.tunnel.is_some());
        assert_eq!(applied.remote_vteps.len(), 1);
        let vlan10 = applied.vlans[&10].vlan;
        assert_eq!(sai.store().vni_of_vlan(vlan10), Some(10010));
        let bridge_port = applied.remote_vteps[&Ipv4Addr::new(10, 255, 0, 2)].1;
        assert_eq!(applied.bridge_port_name(bridge_port).unwrap(), "vtep 10.255.0.2");
    }

    #[test]
    fn the_host_interfaces_link_local_address_is_local() {
        // RFC 4291 appendix A: 02:00:5e:10:00:01 -> fe80::5eff:fe10:1 (U/L bit flipped).
        let mac = EthernetAddress([0x02, 0x00, 0x5e, 0x10, 0x00, 0x01]);
        assert_eq!(link_local_address(mac), "fe80::5eff:fe10:1".parse::<Ipv6Addr>().unwrap());
        let config = Config::from_yaml(CONFIG).unwrap();
        let routes = desired_routes(&config);
        let link_local = IpNetwork::new(IpAddr::V6(link_local_address(switch_mac(&config.name))), 128).unwrap();
        assert!(matches!(routes[&link_local], RouteSpec::Local));
    }

    #[test]
    fn switch_macs_are_local_unicast_and_distinct() {
        let a = switch_mac("leaf1");
        let b = switch_mac("leaf2");
        assert_ne!(a, b);
        assert_eq!(a.0[0] & 0x03, 0x02);
        assert_eq!(a, switch_mac("leaf1"));
    }

    /// Object counts by type and the route table, what a reconcile must
    /// leave identical to a fresh apply.
    fn fingerprint(sai: &Sai<SoftBackend>) -> (Vec<usize>, BTreeMap<IpNetwork, String>) {
        use sai_shim::ObjectType::*;
        let counts = [
            Port,
            Vlan,
            VlanMember,
            BridgePort,
            RouterInterface,
            NextHop,
            NextHopGroup,
            NextHopGroupMember,
            Tunnel,
            TunnelMapEntry,
            TunnelEndpoint,
        ]
        .into_iter()
        .map(|t| sai.store().objects_of(t).count())
        .collect();
        let routes = sai
            .backend()
            .pipeline()
            .routes()
            .map(|(p, t)| (p, format!("{t:?}").split('(').next().unwrap().to_owned()))
            .collect();
        (counts, routes)
    }

    const CHANGED: &str = r#"
name: leaf1
loopback: [10.255.0.1/32]
ports:
  - { name: eth1, mode: access, vlan: 20, mtu: 9000 }
  - { name: eth2, mode: trunk, vlans: [20] }
  - { name: eth3, mode: routed, addresses: [10.0.1.1/24] }
  - { name: eth5, mode: routed, addresses: [10.0.5.1/24] }
vlans:
  - { id: 20, addresses: [192.168.20.1/24] }
vxlan:
  source: 10.255.0.1
  vnis: [{ vni: 20020, vlan: 20, flood: [10.255.0.3] }]
routes:
  - { prefix: 0.0.0.0/0, next_hops: [10.0.1.2, 10.0.5.2] }
"#;

    #[test]
    fn redirects_turned_off_on_a_routed_port_reach_the_pipeline_and_back() {
        let silenced = CONFIG.replace(
            "{ name: eth3, mode: routed, addresses: [10.0.1.1/24] }",
            "{ name: eth3, mode: routed, addresses: [10.0.1.1/24], redirects: false }",
        );
        let config = Config::from_yaml(&silenced).unwrap();
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        let mut applied = apply(&mut sai, &config).unwrap();
        let silent = |sai: &Sai<SoftBackend>| {
            let pipeline = sai.backend().pipeline();
            (0..64).filter(|&rif| pipeline.router_interface(rif).is_some() && !pipeline.sends_redirects(rif)).count()
        };
        assert_eq!(silent(&sai), 1, "eth3's interface only");
        let eth3 = applied.ports["eth3"].router_interface.unwrap();
        assert!(!sai.get_router_interface(eth3).unwrap().send_redirects);
        reconcile(&mut sai, &mut applied, &Config::from_yaml(CONFIG).unwrap()).unwrap();
        assert_eq!(silent(&sai), 0, "on again by default");
    }

    #[test]
    fn an_svi_takes_its_member_ports_smallest_mtu() {
        // CHANGED's VLAN 20: eth1 at 9000 and eth2 at the default 1500.
        let svi_mtu = |yaml: &str| {
            let config = Config::from_yaml(yaml).unwrap();
            let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
            let applied = apply(&mut sai, &config).unwrap();
            sai.get_router_interface(applied.vlans[&20].router_interface.unwrap()).unwrap().mtu
        };
        assert_eq!(svi_mtu(CHANGED), 1500);
        let jumbo = CHANGED
            .replace("{ name: eth2, mode: trunk, vlans: [20] }", "{ name: eth2, mode: trunk, vlans: [20], mtu: 9100 }");
        assert_eq!(svi_mtu(&jumbo), 9000);
    }

    #[test]
    fn reconcile_to_the_same_config_changes_nothing() {
        let (mut sai, mut applied) = applied();
        let before = (fingerprint(&sai), applied.clone());
        reconcile(&mut sai, &mut applied, &Config::from_yaml(CONFIG).unwrap()).unwrap();
        assert_eq!((fingerprint(&sai), applied), before);
    }

    #[test]
    fn reconcile_reaches_what_a_fresh_apply_builds() {
        let candidate = Config::from_yaml(CHANGED).unwrap();
        let (mut sai, mut applied) = applied();
        reconcile(&mut sai, &mut applied, &candidate).unwrap();
        let mut fresh = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&candidate)).unwrap();
        apply(&mut fresh, &candidate).unwrap();
        assert_eq!(fingerprint(&sai), fingerprint(&fresh));

        // Specific changes landed.
        let eth1 = sai.get_port(applied.ports["eth1"].port).unwrap();
        assert_eq!((eth1.port_vlan_id, eth1.mtu), (20, 9000));
        assert!(!applied.ports.contains_key("eth4"));
        assert!(applied.ports["eth5"].router_interface.is_some());
        assert!(!applied.vlans.contains_key(&10));
        assert_eq!(applied.vni_maps[&20].0, 20020);
        assert_eq!(applied.remote_vteps.keys().copied().collect::<Vec<_>>(), [Ipv4Addr::new(10, 255, 0, 3)]);
        let routes: BTreeMap<IpNetwork, RouteTarget> = sai.backend().pipeline().routes().collect();
        assert!(!routes.contains_key(&"10.255.0.2/32".parse().unwrap()));
        assert!(!routes.contains_key(&"10.0.2.0/24".parse().unwrap()));
        assert!(matches!(routes[&"10.0.5.0/24".parse().unwrap()], RouteTarget::Connected(_)));
        assert!(matches!(routes[&"0.0.0.0/0".parse().unwrap()], RouteTarget::Group(_)));

        // And back again.
        reconcile(&mut sai, &mut applied, &Config::from_yaml(CONFIG).unwrap()).unwrap();
        let (fresh, _) = self::applied();
        assert_eq!(fingerprint(&sai), fingerprint(&fresh));
    }

    #[test]
    fn reconcile_to_nothing_removes_everything() {
        let (mut sai, mut applied) = applied();
        reconcile(&mut sai, &mut applied, &Config::from_yaml("name: leaf1\n").unwrap()).unwrap();
        assert_eq!(applied, Applied::default());
        let (counts, routes) = fingerprint(&sai);
        // Only the CPU port, which lives as long as the switch.
        assert_eq!(counts, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(routes.is_empty(), "{routes:?}");
    }

    #[test]
    fn ipv6_addresses_and_routes() {
        let config = Config::from_yaml(
            "name: v6\nports:\n  - { name: eth1, mode: routed, addresses: [\"2001:db8:1::1/64\"] }\n\
             routes:\n  - { prefix: \"2001:db8:99::/48\", next_hops: [\"2001:db8:1::2\"] }\n",
        )
        .unwrap();
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        apply(&mut sai, &config).unwrap();
        let routes: BTreeMap<IpNetwork, RouteTarget> = sai.backend().pipeline().routes().collect();
        assert!(matches!(routes[&"2001:db8:1::1/128".parse().unwrap()], RouteTarget::Local));
        assert!(matches!(routes[&"2001:db8:1::/64".parse().unwrap()], RouteTarget::Connected(_)));
        assert!(matches!(routes[&"2001:db8:99::/48".parse().unwrap()], RouteTarget::NextHop(_)));
    }

    const IRB: &str = r#"
name: leaf1
loopback: [10.255.0.1/32]
ports:
  - { name: eth1, mode: access, vlan: 100 }
  - { name: eth3, mode: routed, addresses: [10.0.1.1/31] }
vlans:
  - { id: 100, addresses: [10.1.0.1/24], vrf: tenant1, mac: "02:00:5e:00:01:01" }
vxlan:
  source: 10.255.0.1
  vnis: [{ vni: 100, vlan: 100 }]
bgp:
  asn: 65001
  evpn:
    vtep_ip: 10.255.0.1
    vnis: [{ vni: 100, vrf: tenant1 }]
    vrfs: [{ name: tenant1, l3vni: 4001, router_mac: "02:cc:00:00:00:01" }]
"#;

    /// A VRF of `bgp.evpn.vrfs` becomes a virtual router with the router
    /// MAC, its L3VNI a tunnel map entry (the pipeline routes VNI 4001 in
    /// it), and the SVI with `vrf:` is in it with the anycast gateway's MAC,
    /// its subnet and address routed there and not in the default VRF. A
    /// VRF dropped from the config goes, the SVI back in the default VRF.
    #[test]
    fn vrfs_get_virtual_routers_l3vnis_and_their_svis() {
        use dataplane::pipeline::L3Vni;
        let net = |s: &str| s.parse::<IpNetwork>().unwrap();
        let config = Config::from_yaml(IRB).unwrap();
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        let mut applied = apply(&mut sai, &config).unwrap();
        let vrf = &applied.vrfs["tenant1"];
        assert!(vrf.l3vni_map.is_some());
        let rif = sai.get_router_interface(applied.vlans[&100].router_interface.unwrap()).unwrap();
        assert_eq!(rif.virtual_router, vrf.virtual_router);
        assert_eq!(rif.src_mac_address, EthernetAddress([2, 0, 0x5e, 0, 1, 1]));
        let pipeline = sai.backend().pipeline();
        let l3 = pipeline.l3vni(4001).expect("the L3VNI is mapped");
        assert_eq!(l3, L3Vni { vrf: l3.vrf, router_mac: EthernetAddress([2, 0xcc, 0, 0, 0, 1]) });
        assert_ne!(l3.vrf, dataplane::pipeline::DEFAULT_VRF);
        let in_vrf: BTreeMap<IpNetwork, RouteTarget> = pipeline.routes_in(l3.vrf).collect();
        assert!(matches!(in_vrf[&net("10.1.0.0/24")], RouteTarget::Connected(_)));
        assert_eq!(in_vrf[&net("10.1.0.1/32")], RouteTarget::Local);
        assert!(pipeline.route(net("10.1.0.0/24")).is_none(), "not in the default VRF");

        let mut plain = config.clone();
        plain.vrfs.clear();
        plain.vlans[0].vrf = None;
        reconcile(&mut sai, &mut applied, &plain).unwrap();
        assert!(applied.vrfs.is_empty() && applied.vrf_routes.is_empty());
        let pipeline = sai.backend().pipeline();
        assert!(pipeline.l3vni(4001).is_none());
        assert!(matches!(pipeline.route(net("10.1.0.0/24")), Some(RouteTarget::Connected(_))));
        assert_eq!(sai.store().objects_of(sai_shim::ObjectType::VirtualRouter).count(), 1);
    }

    /// Tenants reuse address space: the same subnet and gateway in the
    /// default VRF and in tenant1 is accepted, each VRF holding its own
    /// connected and local routes; twice in one VRF it is refused.
    #[test]
    fn the_same_subnet_in_two_vrfs_is_two_tables() {
        let net = |s: &str| s.parse::<IpNetwork>().unwrap();
        let twice = IRB.replace(
            "  - { id: 100, addresses: [10.1.0.1/24], vrf: tenant1, mac: \"02:00:5e:00:01:01\" }\n",
            "  - { id: 100, addresses: [10.1.0.1/24], vrf: tenant1, mac: \"02:00:5e:00:01:01\" }\n  \
             - { id: 200, addresses: [10.1.0.1/24] }\n",
        );
        let config = Config::from_yaml(&twice).unwrap_or_else(|e| panic!("{e}"));
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        let applied = apply(&mut sai, &config).unwrap();
        let pipeline = sai.backend().pipeline();
        let tenant = pipeline.l3vni(4001).expect("the L3VNI is mapped").vrf;
        let (in_tenant, in_default): (BTreeMap<IpNetwork, RouteTarget>, BTreeMap<IpNetwork, RouteTarget>) =
            (pipeline.routes_in(tenant).collect(), pipeline.routes().collect());
        let rif_index = |vlan: u16| {
            let rif = applied.vlans[&vlan].router_interface.unwrap();
            sai.backend().router_interface_index(rif).expect("a pipeline interface")
        };
        assert_eq!(in_tenant[&net("10.1.0.0/24")], RouteTarget::Connected(rif_index(100)));
        assert_eq!(in_default[&net("10.1.0.0/24")], RouteTarget::Connected(rif_index(200)));
        assert_eq!(
            (in_tenant[&net("10.1.0.1/32")], in_default[&net("10.1.0.1/32")]),
            (RouteTarget::Local, RouteTarget::Local)
        );

        let same_vrf = twice.replace(
            "  - { id: 200, addresses: [10.1.0.1/24] }",
            "  - { id: 200, addresses: [10.1.0.1/24], vrf: tenant1 }",
        );
        let error = Config::from_yaml(&same_vrf).unwrap_err().to_string();
        assert!(error.contains("vlans[1].addresses[0]") && error.contains("overlaps 10.1.0.1/24"), "{error}");
    }

    /// A routed port with `vrf:` gets its router interface in the VRF's
    /// virtual router, its address and subnet routed there (not in the
    /// default VRF), and its subnet advertised as a type 5 in the VRF; a
    /// commit that takes it out of the VRF makes the interface again in
    /// the default VRF, and back.
    #[test]
    fn a_routed_port_in_a_vrf_routes_there() {
        let net = |s: &str| s.parse::<IpNetwork>().unwrap();
        let in_vrf = IRB.replace(
            "  - { name: eth3, mode: routed, addresses: [10.0.1.1/31] }\n",
            "  - { name: eth3, mode: routed, addresses: [10.0.1.1/31] }\n  \
             - { name: eth4, mode: routed, addresses: [172.16.9.1/24], vrf: tenant1 }\n",
        );
        let config = Config::from_yaml(&in_vrf).unwrap();
        let networks = &config.bgp.as_ref().unwrap().evpn.as_ref().unwrap().vrfs[0].networks;
        assert_eq!(
            networks.iter().filter_map(bgp_evpn::packet::Nlri::ip_network).collect::<Vec<_>>(),
            [net("172.16.9.0/24")]
        );
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        let mut applied = apply(&mut sai, &config).unwrap();
        let in_tenant = |sai: &Sai<SoftBackend>, applied: &Applied| {
            let rif = sai.get_router_interface(applied.ports["eth4"].router_interface.unwrap()).unwrap();
            let tenant = applied.vrfs["tenant1"].virtual_router;
            let pipeline = sai.backend().pipeline();
            let vrf = pipeline.l3vni(4001).unwrap().vrf;
            let routes: BTreeMap<IpNetwork, RouteTarget> = pipeline.routes_in(vrf).collect();
            let connected = matches!(routes.get(&net("172.16.9.0/24")), Some(RouteTarget::Connected(_)));
            let default = pipeline.route(net("172.16.9.0/24")).is_some();
            (rif.virtual_router == tenant, connected, routes.get(&net("172.16.9.1/32")).cloned(), default)
        };
        assert_eq!(in_tenant(&sai, &applied), (true, true, Some(RouteTarget::Local), false));

        let plain = Config::from_yaml(&in_vrf.replace(", vrf: tenant1 }\n", " }\n")).unwrap();
        reconcile(&mut sai, &mut applied, &plain).unwrap();
        assert_eq!(in_tenant(&sai, &applied), (false, false, None, true));
        reconcile(&mut sai, &mut applied, &config).unwrap();
        assert_eq!(in_tenant(&sai, &applied), (true, true, Some(RouteTarget::Local), false));
        let mut fresh = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        apply(&mut fresh, &config).unwrap();
        assert_eq!(fingerprint(&sai), fingerprint(&fresh));
    }

    #[test]
    fn a_routed_port_vrf_must_be_declared_and_is_a_routed_port_setting() {
        let port = |line: &str| {
            IRB.replace(
                "  - { name: eth3, mode: routed, addresses: [10.0.1.1/31] }\n",
                &format!("  - {{ name: eth3, mode: routed, addresses: [10.0.1.1/31] }}\n  - {line}\n"),
            )
        };
        let refused = |yaml: String, path: &str| {
            let errors = Config::from_yaml(&yaml).unwrap_err();
            assert!(errors.mentions(path), "{path}: {errors}");
        };
        refused(port("{ name: eth4, mode: routed, addresses: [172.16.9.1/24], vrf: blue }"), "ports[2].vrf");
        refused(port("{ name: eth4, mode: access, vlan: 100, vrf: tenant1 }"), "ports[2].vrf");
        refused(port("{ name: eth4, mode: routed, vrf: tenant1 }"), "ports[2].vrf");
    }

    /// A VLAN's static MAC is a static FDB entry on its port that learning
    /// does not move, handed to EVPN with its sticky bit; a commit without
    /// it removes it. Its port must be a member of the VLAN.
    #[test]
    fn static_macs_are_fixed_fdb_entries_and_evpn_sticky_macs() {
        let sticky = IRB.replace(
            "mac: \"02:00:5e:00:01:01\" }",
            "mac: \"02:00:5e:00:01:01\",\n      static_macs: [{ mac: \"02:aa:00:00:00:01\", port: eth1, sticky: true }] }",
        );
        let config = Config::from_yaml(&sticky).unwrap();
        let vni = &config.bgp.as_ref().unwrap().evpn.as_ref().unwrap().vnis[0];
        let mac = bgp_evpn::packet::evpn::MacAddr([2, 0xaa, 0, 0, 0, 1]);
        assert_eq!(vni.static_macs, [bgp_evpn::evpn::config::StaticMac { mac, sticky: true }]);
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        let mut applied = apply(&mut sai, &config).unwrap();
        let entry = |sai: &Sai<SoftBackend>| {
            sai.store().fdb_entries().find(|(k, _)| k.mac == EthernetAddress(mac.0)).map(|(_, e)| e.clone())
        };
        let fixed = entry(&sai).expect("a static FDB entry");
        assert_eq!(fixed.entry_type, FdbEntryType::Static);
        assert!(!fixed.allow_mac_move);
        assert_eq!(Some(fixed.bridge_port), applied.ports["eth1"].bridge_port);
        reconcile(&mut sai, &mut applied, &Config::from_yaml(IRB).unwrap()).unwrap();
        assert!(entry(&sai).is_none() && applied.static_macs.is_empty());

        let errors = Config::from_yaml(&sticky.replace("port: eth1", "port: eth3")).unwrap_err();
        assert!(errors.mentions("vlans[0].static_macs[0].port"), "{errors}");
        let errors = Config::from_yaml(&sticky.replace("02:aa:00:00:00:01", "03:aa:00:00:00:01")).unwrap_err();
        assert!(errors.mentions("vlans[0].static_macs[0].mac"), "{errors}");
    }

    #[test]
    fn an_svi_vrf_must_be_declared_and_an_l3vni_is_no_vlan_vni() {
        let bad = IRB.replace("vrf: tenant1, mac", "vrf: tenant9, mac").replace("l3vni: 4001", "l3vni: 100");
        let errors = Config::from_yaml(&bad).unwrap_err();
        assert!(errors.mentions("vlans[0].vrf"), "{errors}");
        assert!(errors.mentions("bgp.evpn.vrfs[0].l3vni"), "{errors}");
    }
}
