//! The simulated fabric's shape: switches with numbered ports, hosts (one
//! per NIC), and the cables between them, built from a lab topology
//! (`*.clab.yml`, or a generator's output) or from the three-tier k-ary
//! fat-tree generator here.
//!
//! A `switchd` or FRR node is a switch; its interface `ethN` is port N-1.
//! A host node with several NICs (a rail-optimised server) is one
//! simulated host per NIC, named `server:ethN`.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use ipnetwork::Ipv4Network;

use crate::topology::{Body, Link, Node, ROLE_LABEL, Role, Topology};

/// One end of a cable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum End {
    Switch { switch: u32, port: u16 },
    Host { host: u32 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchSpec {
    pub name: String,
    /// Ports in use are `0..ports`.
    pub ports: u16,
    /// The node's `switchd` config (its bind to `/etc/switchd/config.yaml`):
    /// the switch is built from it ([`super::configured`]), and port N is the
    /// config's N-th port. `None`: the simulator's own switch, `ethN` port N-1.
    pub config: Option<PathBuf>,
    /// Port N's interface name when it is not `eth(N+1)` (a config's ports
    /// in another order); empty otherwise.
    pub port_names: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    pub name: String,
    /// The switch and port its NIC is cabled to.
    pub switch: u32,
    pub port: u16,
    /// Its address and gateway from the node's `exec` lines, on fabrics of
    /// configured switches; `None`: the simulator's own addressing.
    pub address: Option<HostAddress>,
}

/// A host NIC's address as its lab node sets it up: `ip addr add A/N dev
/// ethK`, and the first `ip route add ... via G dev ethK` (its gateway).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostAddress {
    pub network: Ipv4Network,
    pub gateway: Option<Ipv4Addr>,
}

impl HostAddress {
    /// The address `interface` of `node` gets from its `exec` lines.
    pub fn from_exec(exec: &[String], interface: &str) -> Option<HostAddress> {
        let mut network = None;
        let mut gateway = None;
        for line in exec {
            let words: Vec<&str> = line.split_whitespace().collect();
            let dev = words.windows(2).find(|w| w[0] == "dev").map(|w| w[1]);
            if dev != Some(interface) {
                continue;
            }
            match words.as_slice() {
                ["ip", "addr" | "address" | "a", "add", address, ..] if network.is_none() => {
                    network = address.parse::<Ipv4Network>().ok();
                }
                ["ip", "route" | "r", "add", ..] if gateway.is_none() => {
                    gateway = words.windows(2).find(|w| w[0] == "via").and_then(|w| w[1].parse().ok());
                }
                _ => {}
            }
        }
        Some(HostAddress { network: network?, gateway })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fabric {
    pub switches: Vec<SwitchSpec>,
    pub hosts: Vec<HostSpec>,
    /// Cables, each once.
    pub links: Vec<(End, End)>,
}

impl Fabric {
    /// The fabric a topology describes. Refused whole, naming the link, if a
    /// host has a NIC on no switch or two hosts are cabled together.
    pub fn from_topology(topology: &Topology) -> Result<Fabric, String> {
        let mut switch_index = BTreeMap::new();
        let mut switches = Vec::new();
        for name in topology.topology.nodes.keys() {
            if matches!(topology.role(name)?, Role::Switchd | Role::Frr) {
                switch_index.insert(name.clone(), switches.len() as u32);
                switches.push(SwitchSpec { name: name.clone(), ports: 0, config: None, port_names: Vec::new() });
            }
        }
        let port_of = |interface: &str, at: &str| -> Result<u16, String> {
            interface
                .strip_prefix("eth")
                .and_then(|n| n.parse::<u16>().ok())
                .filter(|&n| n >= 1)
                .map(|n| n - 1)
                .ok_or_else(|| format!("{at}: interface {interface:?} is not ethN (N from 1)"))
        };
        let mut hosts: Vec<HostSpec> = Vec::new();
        let mut links = Vec::new();
        for (i, (a, b)) in topology.links().into_iter().enumerate() {
            let at = format!("topology.links[{i}]");
            let (a_switch, b_switch) = (switch_index.get(&a.node).copied(), switch_index.get(&b.node).copied());
            match (a_switch, b_switch) {
                (Some(sa), Some(sb)) => {
                    let (pa, pb) = (port_of(&a.interface, &at)?, port_of(&b.interface, &at)?);
                    links.push((End::Switch { switch: sa, port: pa }, End::Switch { switch: sb, port: pb }));
                }
                (Some(s), None) | (None, Some(s)) => {
                    let (switch_end, host_end) = if a_switch.is_some() { (&a, &b) } else { (&b, &a) };
                    let port = port_of(&switch_end.interface, &at)?;
                    let host = hosts.len() as u32;
                    hosts.push(HostSpec {
                        name: format!("{}:{}", host_end.node, host_end.interface),
                        switch: s,
                        port,
                        address: None,
                    });
                    links.push((End::Switch { switch: s, port }, End::Host { host }));
                }
                (None, None) => return Err(format!("{at}: two hosts cabled together ({a} - {b})")),
            }
        }
        for &(a, b) in &links {
            for end in [a, b] {
                if let End::Switch { switch, port } = end {
                    let spec = &mut switches[switch as usize];
                    spec.ports = spec.ports.max(port + 1);
                }
            }
        }
        if hosts.is_empty() {
            return Err("topology.links: no host is cabled to a switch".into());
        }
        Ok(Fabric { switches, hosts, links })
    }

    /// The fabric a topology file describes, its switches built from their
    /// `switchd` configs (bind paths resolved against the file's folder)
    /// when every switch is a `switchd` node: each config parsed and
    /// validated by `switchd` (refused naming the file and field), port
    /// `ethN` renumbered to its place in the config's `ports`, and every
    /// host given the address its `exec` lines set. With an FRR node the
    /// simulator's own switches stand in for all (`configured` false).
    pub fn from_topology_file(path: &Path) -> Result<(Topology, Fabric), String> {
        let topology = Topology::load(path).map_err(|e| e.to_string())?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut fabric = Fabric::from_topology(&topology)?;
        let nodes = topology.resolve(dir)?;
        let switchd_configs: BTreeMap<&str, &PathBuf> = nodes
            .iter()
            .filter(|n| n.role == Role::Switchd)
            .filter_map(|n| Some((n.name.as_str(), n.config.as_ref()?)))
            .collect();
        if fabric.switches.iter().any(|s| !switchd_configs.contains_key(s.name.as_str())) {
            return Ok((topology, fabric));
        }
        let mut renumber: Vec<Vec<Option<u16>>> = Vec::new();
        for switch in &mut fabric.switches {
            let config_path = switchd_configs[switch.name.as_str()].clone();
            let config = switchd::config::Config::load(&config_path)
                .map_err(|e| format!("switch {}: {}", switch.name, e.to_string().trim_end()))?;
            let mut numbers = vec![None; usize::from(switch.ports)];
            for (index, port) in config.ports.iter().enumerate() {
                if let Some(slot) = numbers.get_mut(usize::from(port.number) - 1) {
                    *slot = Some(index as u16);
                }
            }
            switch.ports = config.ports.len() as u16;
            switch.config = Some(config_path);
            if config.ports.iter().enumerate().any(|(index, port)| usize::from(port.number) != index + 1) {
                switch.port_names = config.ports.iter().map(|p| p.name.clone()).collect();
            }
            renumber.push(numbers);
        }
        let names: Vec<String> = fabric.switches.iter().map(|s| s.name.clone()).collect();
        let moved = |i: usize, end: &mut End| -> Result<(), String> {
            if let End::Switch { switch, port } = end {
                *port = renumber[*switch as usize][usize::from(*port)].ok_or_else(|| {
                    format!(
                        "topology.links[{i}]: {}:eth{} is cabled but not in the switch's config (ports)",
                        names[*switch as usize],
                        *port + 1
                    )
                })?;
            }
            Ok(())
        };
        for (i, (a, b)) in fabric.links.iter_mut().enumerate() {
            moved(i, a)?;
            moved(i, b)?;
        }
        for host in &mut fabric.hosts {
            let mut end = End::Switch { switch: host.switch, port: host.port };
            moved(0, &mut end)?;
            if let End::Switch { port, .. } = end {
                host.port = port;
            }
            let (node, interface) = host.name.split_once(':').expect("host NICs are named node:ethN");
            let exec = &topology.topology.nodes[node].exec;
            host.address = Some(HostAddress::from_exec(exec, interface).ok_or_else(|| {
                format!("topology.nodes.{node}.exec: no `ip addr add A/N dev {interface}` (its address on the fabric)")
            })?);
        }
        Ok((topology, fabric))
    }

    /// The interface name of `switch`'s port `port`.
    pub fn port_name(&self, switch: u32, port: u16) -> String {
        match self.switches[switch as usize].port_names.get(usize::from(port)) {
            Some(name) => name.clone(),
            None => format!("eth{}", port + 1),
        }
    }

    /// The port of `switch` named `name`.
    pub fn port_named(&self, switch: u32, name: &str) -> Option<u16> {
        (0..self.switches[switch as usize].ports).find(|&p| self.port_name(switch, p) == name)
    }

    /// Whether the switches are built from their `switchd` configs.
    pub fn configured(&self) -> bool {
        self.switches.first().is_some_and(|s| s.config.is_some())
    }

    /// Switches with hosts on them (the leaves, edges or ToRs).
    pub fn is_leaf(&self, switch: u32) -> bool {
        self.hosts.iter().any(|h| h.switch == switch)
    }
}

/// The three-tier fat-tree of k-port switches (Al-Fares et al., 2008): k
/// pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores, k^3/4
/// hosts; edge e of pod p has hosts on ports 1..k/2 and aggregation
/// switches on the rest; aggregation a of pod p goes to cores a*k/2 .. .
/// With `oversubscription` n:1 the edges keep k/2 uplinks and take n*k/2 hosts.
pub fn fattree3(name: &str, k: usize, oversubscription: usize) -> Result<Topology, String> {
    if k < 2 || !k.is_multiple_of(2) {
        return Err(format!("radix {k}: an even number of ports, at least 2"));
    }
    let n = oversubscription.max(1);
    let half = k / 2;
    let mut nodes = BTreeMap::new();
    let mut links = Vec::new();
    let switch = |nodes: &mut BTreeMap<String, Node>, name: String| {
        nodes.insert(name, node("switchd"));
    };
    for c in 0..half * half {
        switch(&mut nodes, format!("core{}", c + 1));
    }
    for p in 0..k {
        for a in 0..half {
            let agg = format!("agg{}-{}", p + 1, a + 1);
            switch(&mut nodes, agg.clone());
            // Aggregation ports 1..k/2 down to edges, k/2+1..k up to cores.
            for j in 0..half {
                let core = a * half + j;
                links.push(cable(&agg, half + j, &format!("core{}", core + 1), p));
            }
        }
        for e in 0..half {
            let edge = format!("edge{}-{}", p + 1, e + 1);
            switch(&mut nodes, edge.clone());
            for a in 0..half {
                links.push(cable(&edge, n * half + a, &format!("agg{}-{}", p + 1, a + 1), e));
            }
            for h in 0..n * half {
                let host = format!("h{}-{}-{}", p + 1, e + 1, h + 1);
                nodes.insert(host.clone(), node("host"));
                links.push(cable(&edge, h, &host, 0));
            }
        }
    }
    Ok(Topology { name: name.into(), topology: Body { nodes, links, ..Body::default() } })
}

fn node(role: &str) -> Node {
    Node { kind: "linux".into(), labels: [(ROLE_LABEL.to_owned(), role.to_owned())].into(), ..Node::default() }
}

/// A cable between port `pa` (from 0) of `a` and port `pb` of `b`.
fn cable(a: &str, pa: usize, b: &str, pb: usize) -> Link {
    Link { endpoints: [format!("{a}:eth{}", pa + 1), format!("{b}:eth{}", pb + 1)], mtu: None }
}

/// A single switch with `hosts` hosts (port i: host i+1).
pub fn star(name: &str, hosts: usize) -> Topology {
    let mut nodes = BTreeMap::new();
    nodes.insert("sw1".to_owned(), node("switchd"));
    let mut links = Vec::new();
    for h in 0..hosts {
        let host = format!("h{}", h + 1);
        nodes.insert(host.clone(), node("host"));
        links.push(cable("sw1", h, &host, 0));
    }
    Topology { name: name.into(), topology: Body { nodes, links, ..Body::default() } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k4_fat_tree_has_20_switches_16_hosts_and_48_cables() {
        let topology = fattree3("ft", 4, 1).unwrap();
        topology.check().unwrap();
        let fabric = Fabric::from_topology(&topology).unwrap();
        assert_eq!(fabric.switches.len(), 4 + 8 + 8);
        assert_eq!(fabric.hosts.len(), 16);
        assert_eq!(fabric.links.len(), 16 + 16 + 16);
        assert!(fabric.switches.iter().all(|s| s.ports == 4));
    }
}
