//! Programs a validated [`Config`] into the SAI-like shim.
//!
//! The order follows the objects' references: ports, VLANs, bridge ports and
//! VLAN members, router interfaces, the switch's own addresses (routes to the
//! CPU port) and connected subnets, next hops and groups, static routes, then
//! the VXLAN tunnel with its VNI maps and flood lists. Validation already
//! refused every config the shim would refuse for content, so an error here
//! is a resource limit (a full table) or a bug; the caller stops the daemon.
//!
//! What was created is recorded in [`Applied`], which the management server
//! uses to turn object ids back into the operator's names.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use dataplane::wire::EthernetAddress;
use ipnetwork::IpNetwork;
use sai_shim::{
    Backend, BridgePortAttr, BridgePortType, NextHopAttr, NextHopGroupMemberAttr, ObjectId, PortAttr, RouteEntryAttr,
    RouteEntryKey, RouterInterfaceAttr, RouterInterfaceType, Sai, SaiError, SwitchAttr, TaggingMode, TunnelAttr,
    TunnelEndpointAttr, TunnelMapEntryAttr, VlanAttr, VlanMemberAttr,
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

/// Everything [`apply`] created, by the names the config uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    pub ports: BTreeMap<String, PortObjects>,
    pub vlans: BTreeMap<u16, VlanObjects>,
    pub tunnel: Option<ObjectId>,
    /// Remote VTEP -> (tunnel endpoint, its bridge port).
    pub remote_vteps: BTreeMap<Ipv4Addr, (ObjectId, ObjectId)>,
    pub next_hops: BTreeMap<(IpAddr, ObjectId), ObjectId>,
    pub routes: Vec<IpNetwork>,
}

impl Applied {
    /// The operator's name of an L3 interface object (`eth3`, `vlan10`).
    pub fn router_interface_name(&self, rif: ObjectId) -> Option<String> {
        self.ports.iter().find(|(_, p)| p.router_interface == Some(rif)).map(|(name, _)| name.clone()).or_else(|| {
            self.vlans.iter().find(|(_, v)| v.router_interface == Some(rif)).map(|(id, _)| format!("vlan{id}"))
        })
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

    fn rif_of(&self, interface: &L3Interface) -> Option<ObjectId> {
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

trait Context<T> {
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

/// The switch attributes a config implies, for [`Sai::new`].
pub fn switch_attributes(config: &Config) -> Vec<SwitchAttr> {
    vec![SwitchAttr::SrcMacAddress(switch_mac(&config.name))]
}

/// Creates every object of `config` in a fresh shim.
pub fn apply<B: Backend>(sai: &mut Sai<B>, config: &Config) -> Result<Applied, ApplyError> {
    let mut applied = Applied::default();

    for vlan in &config.vlans {
        let id = sai.create_vlan(&[VlanAttr::VlanId(vlan.id)]).context(|| format!("vlan {}", vlan.id))?;
        applied.vlans.insert(vlan.id, VlanObjects { vlan: id, router_interface: None });
    }

    for port in &config.ports {
        let mut attrs =
            vec![PortAttr::Name(port.name.clone()), PortAttr::AdminState(port.admin_up), PortAttr::Mtu(port.mtu)];
        if let Some(pvid) = port.mode.pvid() {
            attrs.push(PortAttr::PortVlanId(pvid));
        }
        let id = sai.create_port(&attrs).context(|| format!("port {}", port.name))?;
        let mut objects = PortObjects { port: id, bridge_port: None, router_interface: None };
        match &port.mode {
            PortMode::Access { .. } | PortMode::Trunk { .. } => {
                let bridge_port = sai
                    .create_bridge_port(&[
                        BridgePortAttr::Type(BridgePortType::Port(id)),
                        BridgePortAttr::Learning(true),
                    ])
                    .context(|| format!("bridge port of {}", port.name))?;
                for (vid, tagged) in port.mode.memberships() {
                    let vlan = applied.vlans[&vid].vlan;
                    let mode = if tagged { TaggingMode::Tagged } else { TaggingMode::Untagged };
                    sai.create_vlan_member(&[
                        VlanMemberAttr::VlanId(vlan),
                        VlanMemberAttr::BridgePortId(bridge_port),
                        VlanMemberAttr::TaggingMode(mode),
                    ])
                    .context(|| format!("member {} of vlan {vid}", port.name))?;
                }
                objects.bridge_port = Some(bridge_port);
            }
            PortMode::Routed { .. } => {
                let rif = sai
                    .create_router_interface(&[
                        RouterInterfaceAttr::VirtualRouterId(sai.default_virtual_router()),
                        RouterInterfaceAttr::Type(RouterInterfaceType::Port(id)),
                        RouterInterfaceAttr::Mtu(port.mtu),
                        RouterInterfaceAttr::AdminState(port.admin_up),
                    ])
                    .context(|| format!("router interface of {}", port.name))?;
                objects.router_interface = Some(rif);
            }
        }
        applied.ports.insert(port.name.clone(), objects);
    }

    for vlan in config.vlans.iter().filter(|v| !v.addresses.is_empty()) {
        let objects = applied.vlans.get_mut(&vlan.id).expect("created above");
        let rif = sai
            .create_router_interface(&[
                RouterInterfaceAttr::VirtualRouterId(sai.default_virtual_router()),
                RouterInterfaceAttr::Type(RouterInterfaceType::Vlan(objects.vlan)),
            ])
            .context(|| format!("router interface of vlan {}", vlan.id))?;
        objects.router_interface = Some(rif);
    }

    // The switch's own addresses go to the CPU port; their subnets are
    // connected through the interface.
    for (address, interface) in config.addresses() {
        let host = IpNetwork::new(address.ip(), if address.is_ipv4() { 32 } else { 128 }).expect("host prefix");
        add_route(sai, &mut applied, host, sai.cpu_port())?;
        if let Some(interface) = interface {
            let rif = applied.rif_of(&interface).expect("interface with addresses has a router interface");
            let subnet = IpNetwork::new(address.network(), address.prefix()).expect("same prefix");
            if subnet.prefix() != host.prefix() {
                add_route(sai, &mut applied, subnet, rif)?;
            }
        }
    }

    for route in &config.routes {
        let mut hops = Vec::new();
        for (ip, interface) in &route.next_hops {
            let rif = applied.rif_of(interface).expect("validated: next hop on an L3 interface");
            hops.push(next_hop(sai, &mut applied, *ip, rif)?);
        }
        let target = if let [single] = hops[..] {
            single
        } else {
            let group = sai.create_next_hop_group().context(|| format!("next-hop group of {}", route.prefix))?;
            for hop in &hops {
                sai.create_next_hop_group_member(&[
                    NextHopGroupMemberAttr::NextHopGroupId(group),
                    NextHopGroupMemberAttr::NextHopId(*hop),
                ])
                .context(|| format!("next-hop group member of {}", route.prefix))?;
            }
            group
        };
        add_route(sai, &mut applied, route.prefix, target)?;
    }

    if let Some(vxlan) = &config.vxlan {
        let tunnel = sai
            .create_tunnel(&[TunnelAttr::EncapSrcIp(vxlan.source), TunnelAttr::UdpDstPort(vxlan.udp_port)])
            .context(|| "vxlan tunnel".into())?;
        applied.tunnel = Some(tunnel);
        for map in &vxlan.vnis {
            let vlan = applied.vlans[&map.vlan].vlan;
            sai.create_tunnel_map_entry(&[
                TunnelMapEntryAttr::TunnelId(tunnel),
                TunnelMapEntryAttr::VlanId(vlan),
                TunnelMapEntryAttr::Vni(map.vni),
            ])
            .context(|| format!("vni {} map", map.vni))?;
            for remote in &map.flood {
                let (_, bridge_port) = match applied.remote_vteps.get(remote) {
                    Some(objects) => *objects,
                    None => {
                        let endpoint = sai
                            .create_tunnel_endpoint(&[
                                TunnelEndpointAttr::TunnelId(tunnel),
                                TunnelEndpointAttr::RemoteIp(*remote),
                            ])
                            .context(|| format!("remote vtep {remote}"))?;
                        let bridge_port = sai
                            .create_bridge_port(&[BridgePortAttr::Type(BridgePortType::Tunnel(endpoint))])
                            .context(|| format!("bridge port of remote vtep {remote}"))?;
                        applied.remote_vteps.insert(*remote, (endpoint, bridge_port));
                        (endpoint, bridge_port)
                    }
                };
                // A tunnel bridge port in a VLAN puts the remote VTEP on the
                // VNI's flood list (head-end replication).
                sai.create_vlan_member(&[
                    VlanMemberAttr::VlanId(vlan),
                    VlanMemberAttr::BridgePortId(bridge_port),
                    VlanMemberAttr::TaggingMode(TaggingMode::Untagged),
                ])
                .context(|| format!("flood entry {remote} of vni {}", map.vni))?;
            }
        }
    }
    Ok(applied)
}

fn next_hop<B: Backend>(
    sai: &mut Sai<B>,
    applied: &mut Applied,
    ip: IpAddr,
    rif: ObjectId,
) -> Result<ObjectId, ApplyError> {
    if let Some(id) = applied.next_hops.get(&(ip, rif)) {
        return Ok(*id);
    }
    let id = sai
        .create_next_hop(&[NextHopAttr::Ip(ip), NextHopAttr::RouterInterfaceId(rif)])
        .context(|| format!("next hop {ip}"))?;
    applied.next_hops.insert((ip, rif), id);
    Ok(id)
}

fn add_route<B: Backend>(
    sai: &mut Sai<B>,
    applied: &mut Applied,
    prefix: IpNetwork,
    target: ObjectId,
) -> Result<(), ApplyError> {
    let key = RouteEntryKey { virtual_router: sai.default_virtual_router(), destination: prefix };
    sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(target))]).context(|| format!("route {prefix}"))?;
    applied.routes.push(prefix);
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
    fn switch_macs_are_local_unicast_and_distinct() {
        let a = switch_mac("leaf1");
        let b = switch_mac("leaf2");
        assert_ne!(a, b);
        assert_eq!(a.0[0] & 0x03, 0x02);
        assert_eq!(a, switch_mac("leaf1"));
    }
}
