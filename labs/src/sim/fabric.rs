//! The simulated fabric's shape: switches with numbered ports, hosts (one
//! per NIC), and the cables between them, built from a lab topology
//! (`*.clab.yml`, or a generator's output) or from the three-tier k-ary
//! fat-tree generator here.
//!
//! A `switchd` or FRR node is a switch; its interface `ethN` is port N-1.
//! A host node with several NICs (a rail-optimised server) is one
//! simulated host per NIC, named `server:ethN`.

use std::collections::BTreeMap;

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
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    pub name: String,
    /// The switch and port its NIC is cabled to.
    pub switch: u32,
    pub port: u16,
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
                switches.push(SwitchSpec { name: name.clone(), ports: 0 });
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
                    hosts.push(HostSpec { name: format!("{}:{}", host_end.node, host_end.interface), switch: s, port });
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
