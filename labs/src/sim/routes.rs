//! The control plane's shortcut: what a converged BGP underlay (RFC 7938,
//! ECMP over every shortest path) would install, computed at once from the
//! fabric's graph and written into each switch's pipeline tables.
//!
//! Addressing: host i (counted from 0) on leaf switch s has
//! `10.{s/256}.{s%256}.{2i+1}`, the leaf's router interface toward it
//! `.{2i}` (a /31 each, so at most 127 hosts per leaf), and the leaf
//! announces `10.{s/256}.{s%256}.0/24`. Switch-to-switch ports are routed
//! interfaces whose neighbours are set statically (no ARP in the steady
//! state, as after the first exchange in the real fabric).

use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr};

use dataplane::pipeline::{
    DEFAULT_VRF, NextHop, PortConfig, RifKind, RouteTarget, RouterInterface, Switch, SwitchConfig,
};
use dataplane::wire::EthernetAddress;
use ipnetwork::{IpNetwork, Ipv4Network};

use super::fabric::{End, Fabric};

/// The most hosts one leaf can address.
pub const MAX_HOSTS_PER_LEAF: usize = 127;

pub fn switch_mac(switch: u32, port: u16) -> EthernetAddress {
    let [_, _, s1, s0] = switch.to_be_bytes();
    let [p1, p0] = port.to_be_bytes();
    EthernetAddress([0x02, 0x00, s1, s0, p1, p0])
}

pub fn host_mac(host: u32) -> EthernetAddress {
    let [_, h2, h1, h0] = host.to_be_bytes();
    EthernetAddress([0x02, 0x01, 0x00, h2, h1, h0])
}

fn leaf_subnet(switch: u32) -> [u8; 3] {
    [10, (switch >> 8) as u8, switch as u8]
}

/// The address of the `index`-th host of leaf `switch`.
pub fn host_ip(switch: u32, index: usize) -> Ipv4Addr {
    let [a, b, c] = leaf_subnet(switch);
    Ipv4Addr::new(a, b, c, (2 * index + 1) as u8)
}

/// The leaf's interface toward its `index`-th host (the host's gateway).
pub fn gateway_ip(switch: u32, index: usize) -> Ipv4Addr {
    let [a, b, c] = leaf_subnet(switch);
    Ipv4Addr::new(a, b, c, (2 * index) as u8)
}

/// A switch-to-switch port's address.
fn port_ip(switch: u32, port: u16) -> Ipv4Addr {
    Ipv4Addr::from(0x6400_0000 + switch * 1024 + u32::from(port))
}

/// Every host's address, its subnet and its gateway.
#[derive(Debug, Clone)]
pub struct Addressing {
    pub host_ips: Vec<Ipv4Addr>,
    pub gateway_ips: Vec<Ipv4Addr>,
    /// The subnet of each host's NIC: other hosts in it are reached directly.
    pub subnets: Vec<Ipv4Network>,
    /// The MAC of each host's gateway (its leaf's interface toward it).
    pub gateway_macs: Vec<EthernetAddress>,
}

impl Addressing {
    /// The MAC host `src` sends `dst`'s packets to: `dst`'s own in the
    /// same subnet (bridged), else the gateway's.
    pub fn next_hop_mac(&self, src: u32, dst: u32) -> EthernetAddress {
        if self.subnets[src as usize].contains(self.host_ips[dst as usize]) {
            host_mac(dst)
        } else {
            self.gateway_macs[src as usize]
        }
    }
}

/// The tables of every switch, and the hosts' addresses.
pub struct Routes {
    pub addressing: Addressing,
    /// Per switch: routes installed (for the report).
    pub route_counts: Vec<usize>,
    /// Per leaf (by `leaf_index`), the hops from every switch to it.
    distance: Vec<Vec<u32>>,
    leaf_index: Vec<u32>,
}

impl Routes {
    /// Switch-to-switch hops from switch `from` to leaf `to` (`u32::MAX`: unreachable).
    pub fn leaf_distance(&self, from: u32, to: u32) -> u32 {
        match self.leaf_index.get(to as usize) {
            Some(&l) if l != u32::MAX => self.distance[l as usize][from as usize],
            _ => u32::MAX,
        }
    }
}

/// Next hop ids of a leaf's own hosts: this plus the host's port (the
/// switches' next hops are `port + 1`, below 2^16).
const HOST_NEXT_HOPS: u32 = 1 << 16;

/// Builds every switch's pipeline with its routes: for each leaf's subnet,
/// the next hops toward it over every shortest path; for each local host
/// its /32. `hash_seed(s)` seeds switch s's ECMP hash.
pub fn build_switches(fabric: &Fabric, hash_seed: impl Fn(u32) -> u64) -> Result<(Vec<Switch>, Routes), String> {
    let switches = fabric.switches.len();
    // Adjacency: per switch, (port, peer switch, peer port).
    let mut adjacency: Vec<Vec<(u16, u32, u16)>> = vec![Vec::new(); switches];
    let mut host_ports: Vec<Vec<(u16, u32)>> = vec![Vec::new(); switches];
    for &(a, b) in &fabric.links {
        match (a, b) {
            (End::Switch { switch: sa, port: pa }, End::Switch { switch: sb, port: pb }) => {
                adjacency[sa as usize].push((pa, sb, pb));
                adjacency[sb as usize].push((pb, sa, pa));
            }
            (End::Switch { switch, port }, End::Host { host }) | (End::Host { host }, End::Switch { switch, port }) => {
                host_ports[switch as usize].push((port, host));
            }
            (End::Host { .. }, End::Host { .. }) => return Err("two hosts cabled together".into()),
        }
    }
    let mut host_ips = vec![Ipv4Addr::UNSPECIFIED; fabric.hosts.len()];
    let mut gateway_ips = vec![Ipv4Addr::UNSPECIFIED; fabric.hosts.len()];
    let mut subnets = vec![Ipv4Network::new(Ipv4Addr::UNSPECIFIED, 32).expect("/32"); fabric.hosts.len()];
    let mut gateway_macs = vec![EthernetAddress([0; 6]); fabric.hosts.len()];
    for (s, ports) in host_ports.iter_mut().enumerate() {
        ports.sort_unstable();
        if ports.len() > MAX_HOSTS_PER_LEAF {
            return Err(format!(
                "switch {}: {} hosts, at most {MAX_HOSTS_PER_LEAF}",
                fabric.switches[s].name,
                ports.len()
            ));
        }
        for (index, &(port, host)) in ports.iter().enumerate() {
            host_ips[host as usize] = host_ip(s as u32, index);
            gateway_ips[host as usize] = gateway_ip(s as u32, index);
            subnets[host as usize] = Ipv4Network::new(gateway_ip(s as u32, index), 31).expect("/31");
            gateway_macs[host as usize] = switch_mac(s as u32, port);
        }
    }
    let (leaves, distance) = leaf_distances(fabric.switches.len(), &adjacency, |s| !host_ports[s].is_empty());
    let mut built = Vec::with_capacity(switches);
    let mut route_counts = Vec::with_capacity(switches);
    for s in 0..switches as u32 {
        let spec = &fabric.switches[s as usize];
        let ports = spec.ports.max(1);
        let locals = host_ports[s as usize].len();
        let config = SwitchConfig {
            max_ports: ports.max(16),
            max_router_interfaces: ports.max(16),
            route_capacity: leaves.len() + locals + 16,
            neighbor_capacity: usize::from(ports) + 16,
            hash_seed: hash_seed(s),
            ..SwitchConfig::small()
        };
        let mut switch = Switch::new(config);
        let err = |what: &str, e: dataplane::pipeline::TableError| format!("switch {}: {what}: {e:?}", spec.name);
        let mut wired = vec![false; usize::from(ports)];
        for &(port, _, _) in &adjacency[s as usize] {
            wired[usize::from(port)] = true;
        }
        for &(port, _) in &host_ports[s as usize] {
            wired[usize::from(port)] = true;
        }
        for port in (0..ports).filter(|&p| wired[usize::from(p)]) {
            switch
                .set_port(port, PortConfig { pvid: 0, learning: false, ..PortConfig::default() })
                .map_err(|e| err("port", e))?;
            switch
                .set_router_interface(
                    port,
                    RouterInterface {
                        kind: RifKind::Port(port),
                        mac: switch_mac(s, port),
                        mtu: 9000,
                        admin_up: true,
                        vrf: DEFAULT_VRF,
                    },
                )
                .map_err(|e| err("router interface", e))?;
        }
        // Next hop `port + 1`: the neighbour behind that port.
        for &(port, peer, peer_port) in &adjacency[s as usize] {
            let ip = IpAddr::V4(port_ip(peer, peer_port));
            switch.set_neighbor(port, ip, switch_mac(peer, peer_port)).map_err(|e| err("neighbour", e))?;
            switch.set_next_hop(u32::from(port) + 1, NextHop { rif: port, ip }).map_err(|e| err("next hop", e))?;
        }
        let mut routes = 0;
        for &(port, host) in &host_ports[s as usize] {
            let ip = host_ips[host as usize];
            switch.set_neighbor(port, IpAddr::V4(ip), host_mac(host)).map_err(|e| err("neighbour", e))?;
            // A next hop rather than a connected route: the same neighbour,
            // port and MACs, but the pipeline caches the hop's rewrite and
            // skips the neighbour table's hash lookup on the last hop.
            let next_hop = HOST_NEXT_HOPS + u32::from(port);
            switch.set_next_hop(next_hop, NextHop { rif: port, ip: IpAddr::V4(ip) }).map_err(|e| err("next hop", e))?;
            switch
                .set_route(IpNetwork::V4(Ipv4Network::new(ip, 32).expect("/32")), RouteTarget::NextHop(next_hop))
                .map_err(|e| err("route", e))?;
            routes += 1;
        }
        let mut groups: BTreeMap<Vec<u16>, u32> = BTreeMap::new();
        for (l, &leaf) in leaves.iter().enumerate() {
            if leaf == s || distance[l][s as usize] == u32::MAX {
                continue;
            }
            let here = distance[l][s as usize];
            let mut members: Vec<u16> = adjacency[s as usize]
                .iter()
                .filter(|&&(_, peer, _)| distance[l][peer as usize] == here - 1)
                .map(|&(port, _, _)| port)
                .collect();
            members.sort_unstable();
            let target = match members.as_slice() {
                [] => continue,
                [port] => RouteTarget::NextHop(u32::from(*port) + 1),
                _ => {
                    let next_id = groups.len() as u32 + 1;
                    let id = *groups.entry(members.clone()).or_insert(next_id);
                    if id == next_id {
                        let hops: Vec<u32> = members.iter().map(|&p| u32::from(p) + 1).collect();
                        switch.set_next_hop_group(id, &hops).map_err(|e| err("group", e))?;
                    }
                    RouteTarget::Group(id)
                }
            };
            let [a, b, c] = leaf_subnet(leaf);
            let prefix = Ipv4Network::new(Ipv4Addr::new(a, b, c, 0), 24).expect("/24");
            switch.set_route(IpNetwork::V4(prefix), target).map_err(|e| err("route", e))?;
            routes += 1;
        }
        built.push(switch);
        route_counts.push(routes);
    }
    let addressing = Addressing { host_ips, gateway_ips, subnets, gateway_macs };
    Ok((built, Routes::new(fabric, addressing, route_counts)))
}

impl Routes {
    /// The routes of `fabric` with these addresses and route counts.
    pub fn new(fabric: &Fabric, addressing: Addressing, route_counts: Vec<usize>) -> Routes {
        let mut adjacency: Vec<Vec<(u16, u32, u16)>> = vec![Vec::new(); fabric.switches.len()];
        for &(a, b) in &fabric.links {
            if let (End::Switch { switch: sa, port: pa }, End::Switch { switch: sb, port: pb }) = (a, b) {
                adjacency[sa as usize].push((pa, sb, pb));
                adjacency[sb as usize].push((pb, sa, pa));
            }
        }
        let (leaves, distance) = leaf_distances(fabric.switches.len(), &adjacency, |s| fabric.is_leaf(s as u32));
        let mut leaf_index = vec![u32::MAX; fabric.switches.len()];
        for (l, &leaf) in leaves.iter().enumerate() {
            leaf_index[leaf as usize] = l as u32;
        }
        Routes { addressing, route_counts, distance, leaf_index }
    }
}

/// The leaves (switches `is_leaf` says have hosts) and the hop distance
/// from every switch to each (BFS from the leaf).
fn leaf_distances(
    switches: usize,
    adjacency: &[Vec<(u16, u32, u16)>],
    is_leaf: impl Fn(usize) -> bool,
) -> (Vec<u32>, Vec<Vec<u32>>) {
    let leaves: Vec<u32> = (0..switches as u32).filter(|&s| is_leaf(s as usize)).collect();
    let mut distance = vec![vec![u32::MAX; switches]; leaves.len()];
    for (l, &leaf) in leaves.iter().enumerate() {
        let dist = &mut distance[l];
        dist[leaf as usize] = 0;
        let mut queue = VecDeque::from([leaf]);
        while let Some(s) = queue.pop_front() {
            for &(_, peer, _) in &adjacency[s as usize] {
                if dist[peer as usize] == u32::MAX {
                    dist[peer as usize] = dist[s as usize] + 1;
                    queue.push_back(peer);
                }
            }
        }
    }
    (leaves, distance)
}

/// After cables failed (`link_up[l]` false), what the underlay converges
/// to: every switch's route to every leaf's subnet over the shortest paths
/// that remain. New groups get ids from `first_group` up (the old ones
/// stay, unused), counted over every switch whether or not it is among
/// `switches` (indexed by switch number; `None`: another partition's, on a
/// run split across threads), so each switch gets the same ids however the
/// run is split. A switch whose table refuses a change keeps the rest of
/// its old routes; the others reroute. Returns the routes rewritten on
/// `switches` and each refusal, by switch number.
pub fn reroute(
    fabric: &Fabric,
    link_up: &[bool],
    switches: &mut [Option<&mut Switch>],
    first_group: u32,
) -> (usize, Vec<(u32, String)>) {
    let count = fabric.switches.len();
    let mut adjacency: Vec<Vec<(u16, u32)>> = vec![Vec::new(); count];
    let mut has_hosts = vec![false; count];
    for (l, &(a, b)) in fabric.links.iter().enumerate() {
        match (a, b) {
            (End::Switch { switch: sa, port: pa }, End::Switch { switch: sb, port: pb }) if link_up[l] => {
                adjacency[sa as usize].push((pa, sb));
                adjacency[sb as usize].push((pb, sa));
            }
            (End::Switch { switch, .. }, End::Host { .. }) | (End::Host { .. }, End::Switch { switch, .. }) => {
                has_hosts[switch as usize] = true;
            }
            _ => {}
        }
    }
    let mut next_group = first_group;
    let mut rewritten = 0;
    let mut errors: Vec<(u32, String)> = Vec::new();
    let mut refused = vec![false; count];
    let mut groups: BTreeMap<(u32, Vec<u16>), u32> = BTreeMap::new();
    for leaf in (0..count as u32).filter(|&s| has_hosts[s as usize]) {
        let mut distance = vec![u32::MAX; count];
        distance[leaf as usize] = 0;
        let mut queue = VecDeque::from([leaf]);
        while let Some(s) = queue.pop_front() {
            for &(_, peer) in &adjacency[s as usize] {
                if distance[peer as usize] == u32::MAX {
                    distance[peer as usize] = distance[s as usize] + 1;
                    queue.push_back(peer);
                }
            }
        }
        let [a, b, c] = leaf_subnet(leaf);
        let prefix = IpNetwork::V4(Ipv4Network::new(Ipv4Addr::new(a, b, c, 0), 24).expect("/24"));
        for s in 0..count as u32 {
            let here = distance[s as usize];
            if s == leaf || here == u32::MAX {
                continue;
            }
            let mut members: Vec<u16> = adjacency[s as usize]
                .iter()
                .filter(|&&(_, peer)| distance[peer as usize] == here - 1)
                .map(|&(port, _)| port)
                .collect();
            members.sort_unstable();
            // The group's id, whether or not the switch is here: ids are
            // counted over the whole fabric in this order.
            let (target, new_group) = match members.as_slice() {
                [] => continue,
                [port] => (RouteTarget::NextHop(u32::from(*port) + 1), false),
                _ => match groups.get(&(s, members.clone())) {
                    Some(&id) => (RouteTarget::Group(id), false),
                    None => {
                        let id = next_group;
                        next_group += 1;
                        groups.insert((s, members.clone()), id);
                        (RouteTarget::Group(id), true)
                    }
                },
            };
            let Some(switch) = switches.get_mut(s as usize).and_then(|s| s.as_deref_mut()) else { continue };
            if refused[s as usize] {
                continue;
            }
            let applied = (|| {
                if let (true, RouteTarget::Group(id)) = (new_group, target) {
                    let hops: Vec<u32> = members.iter().map(|&p| u32::from(p) + 1).collect();
                    switch.set_next_hop_group(id, &hops)?;
                }
                if switch.route(prefix) != Some(target) {
                    switch.set_route(prefix, target)?;
                    return Ok(true);
                }
                Ok(false)
            })();
            match applied {
                Ok(changed) => rewritten += usize::from(changed),
                Err(e) => {
                    let e: dataplane::pipeline::TableError = e;
                    refused[s as usize] = true;
                    errors.push((s, format!("switch {}: reroute {prefix}: {e:?}", fabric.switches[s as usize].name)));
                }
            }
        }
    }
    errors.sort_by_key(|e| e.0);
    (rewritten, errors)
}
