//! Switches built from their `switchd` YAML, as `switchd` builds them: the
//! config parsed and validated by `switchd::config`, programmed into the
//! soft backend's pipeline by `switchd::apply` (ports, VLANs, router
//! interfaces, static routes) and the traffic manager taken from the shim's
//! QoS objects (`qos:`, the ports' `speed` and `cable-length`), as the
//! daemon's forwarding thread gets it. The pipeline then runs bare in the
//! simulator's [`Node`](dataplane::node::Node).
//!
//! What the control plane would learn is the simulator's shortcut, put in
//! through the same shim: the hosts' ARP entries (and their MACs learned
//! in their VLAN), the BGP neighbours' addresses on routed links, and the
//! routes a converged eBGP underlay installs (every switch with `bgp:`
//! announces its addresses, loopbacks and connected subnets; each learns
//! the others' over every shortest path, ECMP) through `switchd`'s own
//! route programmer (`switchd::bgp::programmer`, the BGP speaker's sink).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::{IpAddr, Ipv4Addr};

use bgp_evpn::packet::Nlri;
use dataplane::node::QosTrafficManager;
use dataplane::pipeline::{NextHop, RouteTarget, Switch};
use dataplane::wire::EthernetAddress;
use ipnetwork::{IpNetwork, Ipv4Network};
use qos::tm::TmConfig;
use sai_shim::backend::soft::SoftBackend;
use sai_shim::{FdbEntryAttr, FdbEntryKey, FdbEntryType, NeighborEntryAttr, NeighborEntryKey, ObjectId, Sai};
use switchd::apply::{Applied, switch_mac};
use switchd::config::{Config, L3Interface, PortMode};

use super::experiment::{Experiment, LoadBalancing};
use super::fabric::{End, Fabric};
use super::link::Wire;
use super::routes::{Addressing, Routes, host_mac};

/// Light travels about 5 ns per metre of fibre or copper.
const NS_PER_METRE: u64 = 5;

/// The fabric's switches as their configs build them.
pub struct ConfiguredSwitches {
    pub pipelines: Vec<Switch>,
    pub traffic_managers: Vec<QosTrafficManager>,
    pub routes: Routes,
    /// Per cable: the slower end's port speed, the longer end's cable length.
    pub wires: Vec<Wire>,
    /// The underlay's shortcut, to converge again after a link failure.
    pub underlay: Underlay,
}

/// One switch, programmed through the shim.
struct Programmed {
    config: Config,
    sai: Sai<SoftBackend>,
    applied: Applied,
    tm: TmConfig,
}

impl Programmed {
    /// Parses, validates and applies the switch's config; its traffic
    /// manager from the shim's QoS objects.
    fn load(fabric: &Fabric, s: u32, experiment: &Experiment, hash_seed: u64) -> Result<Programmed, String> {
        let spec = &fabric.switches[s as usize];
        let path = spec.config.as_ref().ok_or_else(|| format!("switch {}: no switchd config", spec.name))?;
        let name = &spec.name;
        let config = Config::load(path).map_err(|e| format!("switch {name}: {}", e.to_string().trim_end()))?;
        let pipeline = dataplane::pipeline::SwitchConfig { hash_seed, ..config.profile.switch_config() };
        let mut sai = Sai::new(SoftBackend::new(pipeline), &switchd::apply::switch_attributes(&config))
            .map_err(|e| format!("switch {name}: {e}"))?;
        let applied = switchd::apply::apply(&mut sai, &config).map_err(|e| format!("switch {name}: {e}"))?;
        for (index, port) in config.ports.iter().enumerate() {
            if sai.backend().port_index(applied.ports[&port.name].port) != Some(index as u16) {
                return Err(format!("switch {name}: ports[{index}] ({}) is not pipeline port {index}", port.name));
            }
        }
        let mut tm =
            sai.backend().tm_config(sai.store()).map_err(|e| format!("switch {name}: {e}"))?.ok_or_else(|| {
                format!("{}: ports[].speed: the simulator needs each port's line rate", path.display())
            })?;
        if experiment.lb != LoadBalancing::Ecmp {
            tm.dlb.mode = experiment.dlb_config().mode;
        }
        Ok(Programmed { config, sai, applied, tm })
    }

    fn name(&self) -> &str {
        &self.config.name
    }

    /// The router interface of a layer-3 interface.
    fn rif(&self, interface: &L3Interface) -> Option<ObjectId> {
        match interface {
            L3Interface::Port(name) => self.applied.ports.get(name)?.router_interface,
            L3Interface::Vlan(id) => self.applied.vlans.get(id)?.router_interface,
        }
    }

    /// The MAC a layer-3 interface routes with (an SVI's anycast MAC, or the switch's).
    fn mac(&self, interface: &L3Interface) -> EthernetAddress {
        match interface {
            L3Interface::Vlan(id) => {
                self.config.vlans.iter().find(|v| v.id == *id).and_then(|v| v.mac).unwrap_or(switch_mac(self.name()))
            }
            L3Interface::Port(_) => switch_mac(self.name()),
        }
    }

    /// The address and interface of the default VRF's subnet holding `ip`.
    fn subnet_of(&self, ip: Ipv4Addr) -> Option<(IpNetwork, L3Interface)> {
        self.config
            .addresses()
            .into_iter()
            .filter_map(|(net, iface)| Some((net, iface?)))
            .find(|(net, _)| net.contains(IpAddr::V4(ip)))
    }

    /// The IPv4 address of routed port `port` (its place in `ports`).
    fn port_address(&self, port: u16) -> Option<Ipv4Network> {
        match &self.config.ports.get(usize::from(port))?.mode {
            PortMode::Routed { addresses } => addresses.iter().find_map(|a| match a {
                IpNetwork::V4(v4) => Some(*v4),
                IpNetwork::V6(_) => None,
            }),
            _ => None,
        }
    }

    fn neighbor(&mut self, rif: ObjectId, ip: Ipv4Addr, mac: EthernetAddress) -> Result<(), String> {
        let key = NeighborEntryKey { router_interface: rif, ip: IpAddr::V4(ip) };
        self.sai
            .create_neighbor_entry(key, &[NeighborEntryAttr::DstMacAddress(mac)])
            .map_err(|e| format!("switch {}: neighbour {ip}: {e}", self.config.name))
    }
}

/// Builds every switch of a configured fabric.
pub fn build(
    fabric: &Fabric,
    experiment: &Experiment,
    hash_seed: impl Fn(u32) -> u64,
) -> Result<ConfiguredSwitches, String> {
    let mut switches = (0..fabric.switches.len() as u32)
        .map(|s| Programmed::load(fabric, s, experiment, hash_seed(s)))
        .collect::<Result<Vec<_>, String>>()?;
    let addressing = hosts(fabric, &mut switches)?;
    let mut underlay = Underlay::new(fabric, &mut switches)?;
    let route_counts = underlay.install(fabric, &mut switches)?;
    let wires = fabric
        .links
        .iter()
        .map(|&(a, b)| {
            let ends: Vec<&qos::tm::PortConfig> = [a, b]
                .into_iter()
                .filter_map(|end| match end {
                    End::Switch { switch, port } => switches[switch as usize].tm.ports.get(usize::from(port)),
                    End::Host { .. } => None,
                })
                .collect();
            let speed = ends.iter().map(|p| p.speed_bps).min().unwrap_or(experiment.link_bps);
            let metres = ends.iter().map(|p| u64::from(p.cable_length_m)).max().unwrap_or(0);
            Wire::new(speed, metres * NS_PER_METRE)
        })
        .collect();
    let mut pipelines = Vec::with_capacity(switches.len());
    let mut traffic_managers = Vec::with_capacity(switches.len());
    for switch in switches {
        let name = switch.config.name.clone();
        let mut tm = QosTrafficManager::new(&switch.tm).map_err(|e| format!("switch {name}: traffic manager: {e}"))?;
        for port in 0..switch.tm.ports.len() {
            tm.set_port_mac(port as u16, switch_mac(&name));
        }
        let mut pipeline = switch.sai.into_backend().into_pipeline();
        // As the daemon does: DLB is the ECMP path quality, whatever the mode.
        pipeline.set_path_quality(Some(Box::new(tm.dlb(switch.tm.dlb.clone()))));
        pipelines.push(pipeline);
        traffic_managers.push(tm);
    }
    let routes = Routes::new(fabric, addressing, route_counts);
    Ok(ConfiguredSwitches { pipelines, traffic_managers, routes, wires, underlay })
}

/// The hosts' addresses and gateways; on their leaves, their ARP entries
/// and (on VLAN ports) their MACs, as the first exchange leaves them.
fn hosts(fabric: &Fabric, switches: &mut [Programmed]) -> Result<Addressing, String> {
    let count = fabric.hosts.len();
    let mut addressing = Addressing {
        host_ips: Vec::with_capacity(count),
        gateway_ips: Vec::with_capacity(count),
        subnets: Vec::with_capacity(count),
        gateway_macs: Vec::with_capacity(count),
    };
    for (h, host) in fabric.hosts.iter().enumerate() {
        let address = host.address.ok_or_else(|| format!("host {}: no address", host.name))?;
        let ip = address.network.ip();
        let leaf = &mut switches[host.switch as usize];
        let (net, interface) = leaf
            .subnet_of(ip)
            .ok_or_else(|| format!("host {}: {ip} is in no subnet of switch {}", host.name, leaf.name()))?;
        let rif = leaf
            .rif(&interface)
            .ok_or_else(|| format!("switch {}: {interface} has no router interface", leaf.name()))?;
        leaf.neighbor(rif, ip, host_mac(h as u32))?;
        let port = &leaf.config.ports[usize::from(host.port)];
        if let Some(vid) = port.mode.pvid() {
            let objects = &leaf.applied.ports[&port.name];
            let (Some(bridge_port), Some(vlan)) = (objects.bridge_port, leaf.applied.vlans.get(&vid)) else {
                return Err(format!("switch {}: {} has no bridge port in vlan {vid}", leaf.name(), port.name));
            };
            let key = FdbEntryKey { vlan: vlan.vlan, mac: host_mac(h as u32) };
            leaf.sai
                .create_fdb_entry(
                    key,
                    &[FdbEntryAttr::Type(FdbEntryType::Dynamic), FdbEntryAttr::BridgePortId(bridge_port)],
                )
                .map_err(|e| format!("switch {}: FDB entry of {}: {e}", leaf.name(), host.name))?;
        }
        let gateway = match address.gateway {
            Some(gateway) => gateway,
            None => match net.ip() {
                IpAddr::V4(own) => own,
                IpAddr::V6(_) => unreachable!("an IPv4 host's subnet"),
            },
        };
        let (_, gateway_interface) = leaf
            .config
            .addresses()
            .into_iter()
            .find_map(|(net, iface)| Some((net, iface?)).filter(|(net, _)| net.ip() == IpAddr::V4(gateway)))
            .ok_or_else(|| {
                format!("host {}: its gateway {gateway} is no address of switch {}", host.name, leaf.name())
            })?;
        addressing.host_ips.push(ip);
        addressing.gateway_ips.push(gateway);
        addressing.subnets.push(Ipv4Network::new(address.network.network(), address.network.prefix()).expect("valid"));
        addressing.gateway_macs.push(leaf.mac(&gateway_interface));
    }
    Ok(addressing)
}

/// A BGP neighbour on a routed link, as the underlay's shortcut sees it.
#[derive(Debug, Clone, Copy)]
struct Neighbour {
    switch: u32,
    /// Its address on the shared link (the next hop).
    ip: Ipv4Addr,
    link: u32,
    /// The local routed port's router interface, in the pipeline.
    rif: dataplane::pipeline::RifId,
}

/// What the eBGP underlay converges to, kept to converge again when cables
/// fail: every switch with `bgp:` announces the prefixes of its addresses,
/// and every other such switch routes each over all its neighbours one
/// hop closer to it.
#[derive(Clone)]
pub struct Underlay {
    neighbours: Vec<Vec<Neighbour>>,
    speaks_bgp: Vec<bool>,
    owners: BTreeMap<Ipv4Network, BTreeSet<u32>>,
    /// Per switch, per prefix: the next hops installed.
    installed: Vec<BTreeMap<Ipv4Network, Vec<Ipv4Addr>>>,
    /// Next-hop and group ids handed out after the first convergence (the
    /// shim's stay as they are): far above the shim's dense ones.
    next_id: u32,
}

impl Underlay {
    /// The neighbours on routed links (their ARP entries put in through
    /// the shim) and the announced prefixes.
    fn new(fabric: &Fabric, switches: &mut [Programmed]) -> Result<Underlay, String> {
        let count = switches.len();
        let mut neighbours: Vec<Vec<Neighbour>> = vec![Vec::new(); count];
        for (link, &(a, b)) in fabric.links.iter().enumerate() {
            let (End::Switch { switch: sa, port: pa }, End::Switch { switch: sb, port: pb }) = (a, b) else { continue };
            let (Some(addr_a), Some(addr_b)) =
                (switches[sa as usize].port_address(pa), switches[sb as usize].port_address(pb))
            else {
                continue;
            };
            if !addr_a.contains(addr_b.ip()) {
                continue;
            }
            for (here, port, there, address) in [(sa, pa, sb, addr_b), (sb, pb, sa, addr_a)] {
                let mac = switch_mac(switches[there as usize].name());
                let switch = &mut switches[here as usize];
                let name = switch.config.ports[usize::from(port)].name.clone();
                let rif = switch.rif(&L3Interface::Port(name)).expect("a routed port has a router interface");
                switch.neighbor(rif, address.ip(), mac)?;
                let rif = switch.sai.backend().router_interface_index(rif).expect("a programmed router interface");
                neighbours[here as usize].push(Neighbour { switch: there, ip: address.ip(), link: link as u32, rif });
            }
        }
        let speaks_bgp: Vec<bool> = switches.iter().map(|s| s.config.bgp.is_some()).collect();
        let mut owners: BTreeMap<Ipv4Network, BTreeSet<u32>> = BTreeMap::new();
        for (s, switch) in switches.iter().enumerate().filter(|(s, _)| speaks_bgp[*s]) {
            for (net, _) in switch.config.addresses() {
                if let IpNetwork::V4(v4) = net {
                    let prefix = Ipv4Network::new(v4.network(), v4.prefix()).expect("valid");
                    owners.entry(prefix).or_default().insert(s as u32);
                }
            }
        }
        Ok(Underlay { neighbours, speaks_bgp, owners, installed: vec![BTreeMap::new(); count], next_id: 1 << 24 })
    }

    /// Per switch, per prefix: the next hops over the cables up.
    fn converge(&self, link_up: &[bool]) -> Vec<BTreeMap<Ipv4Network, Vec<(Ipv4Addr, dataplane::pipeline::RifId)>>> {
        let count = self.neighbours.len();
        let mut routes = vec![BTreeMap::new(); count];
        for (prefix, owned_by) in &self.owners {
            let mut distance = vec![u32::MAX; count];
            let mut queue: VecDeque<u32> = owned_by.iter().copied().collect();
            for &s in owned_by {
                distance[s as usize] = 0;
            }
            while let Some(s) = queue.pop_front() {
                for n in &self.neighbours[s as usize] {
                    if link_up[n.link as usize]
                        && self.speaks_bgp[n.switch as usize]
                        && distance[n.switch as usize] == u32::MAX
                    {
                        distance[n.switch as usize] = distance[s as usize] + 1;
                        queue.push_back(n.switch);
                    }
                }
            }
            for s in 0..count {
                if !self.speaks_bgp[s] || distance[s] == 0 {
                    continue;
                }
                let hops: Vec<(Ipv4Addr, dataplane::pipeline::RifId)> = self.neighbours[s]
                    .iter()
                    .filter(|n| link_up[n.link as usize] && distance[s] != u32::MAX)
                    .filter(|n| distance[n.switch as usize] == distance[s] - 1)
                    .map(|n| (n.ip, n.rif))
                    .collect();
                routes[s].insert(*prefix, hops);
            }
        }
        routes
    }

    /// The first convergence, installed through each switch's `switchd`
    /// route programmer. Returns the routes installed per switch.
    fn install(&mut self, fabric: &Fabric, switches: &mut [Programmed]) -> Result<Vec<usize>, String> {
        let routes = self.converge(&vec![true; fabric.links.len()]);
        let mut counts = vec![0; switches.len()];
        for (s, switch) in switches.iter_mut().enumerate() {
            let mut programmer = switchd::bgp::programmer(&switch.config, &switch.applied);
            for (prefix, hops) in &routes[s] {
                if hops.is_empty() {
                    continue;
                }
                let nlri = Nlri::from_network(IpNetwork::V4(*prefix)).expect("an IPv4 prefix");
                let ips: Vec<IpAddr> = hops.iter().map(|&(ip, _)| IpAddr::V4(ip)).collect();
                programmer.install(&mut switch.sai, nlri, &ips);
                self.installed[s].insert(*prefix, hops.iter().map(|&(ip, _)| ip).collect());
                counts[s] += 1;
            }
            let refused = programmer.errors().load(std::sync::atomic::Ordering::Relaxed);
            if refused > 0 {
                return Err(format!("switch {}: {refused} learned routes not installed", switch.name()));
            }
        }
        Ok(counts)
    }

    /// After cables failed (`link_up[l]` false), what BGP converges to,
    /// written into the pipelines: a route whose next hops changed points
    /// at new next hops or a new group, one with none left is withdrawn.
    /// `pipelines` is indexed by switch number (`None`: another
    /// partition's, on a run split across threads): what BGP decided and
    /// the ids handed out are counted over every switch, so each switch
    /// gets the same ids however the run is split. A switch whose tables
    /// refuse a change keeps the rest of its old routes (BGP's view moves
    /// on); the others reroute. Returns the routes rewritten on `pipelines`
    /// and each refusal, by switch number.
    pub fn reroute(&mut self, link_up: &[bool], pipelines: &mut [Option<&mut Switch>]) -> (usize, Vec<(u32, String)>) {
        let routes = self.converge(link_up);
        let mut rewritten = 0;
        let mut errors = Vec::new();
        for (s, routes) in routes.iter().enumerate() {
            let mut pipeline = pipelines.get_mut(s).and_then(|p| p.as_deref_mut());
            for (prefix, hops) in routes {
                let ips: Vec<Ipv4Addr> = hops.iter().map(|&(ip, _)| ip).collect();
                let old = self.installed[s].insert(*prefix, ips.clone()).unwrap_or_default();
                if ips == old {
                    continue;
                }
                // Ids first, whether or not the switch is here.
                let first = self.next_id;
                let ids: Vec<u32> = (first..first + hops.len() as u32).collect();
                self.next_id += hops.len() as u32;
                let group = (hops.len() > 1).then(|| {
                    self.next_id += 1;
                    self.next_id - 1
                });
                let Some(switch) = pipeline.as_deref_mut() else { continue };
                let network = IpNetwork::V4(*prefix);
                let applied = (|| {
                    if hops.is_empty() {
                        if !old.is_empty() {
                            switch.remove_route(network)?;
                        }
                        return Ok(());
                    }
                    for (&(ip, rif), &id) in hops.iter().zip(&ids) {
                        switch.set_next_hop(id, NextHop { rif, ip: IpAddr::V4(ip) })?;
                    }
                    let target = match group {
                        Some(group) => {
                            switch.set_next_hop_group(group, &ids)?;
                            RouteTarget::Group(group)
                        }
                        None => RouteTarget::NextHop(ids[0]),
                    };
                    switch.set_route(network, target)
                })();
                match applied {
                    Ok(()) => rewritten += 1,
                    Err(e) => {
                        let e: dataplane::pipeline::TableError = e;
                        errors.push((s as u32, format!("switch {s}: reroute {prefix}: {e:?}")));
                        // The rest of this switch's routes stay as they were.
                        pipeline = None;
                    }
                }
            }
        }
        (rewritten, errors)
    }
}
