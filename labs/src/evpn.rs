//! `labs check`'s EVPN part: what every `switchd` VTEP of a lab must have
//! learned from BGP-EVPN (RFC 8365), compared with what it shows.
//!
//! - Flood lists (type 3 routes, RFC 7432 section 11): for each of its VNIs,
//!   the VTEP of every other node with that VNI is a remote VTEP
//!   (`swcli show evpn vni`). The other VTEPs are the `switchd` nodes'
//!   `bgp.evpn` sections and the FRR nodes' kernel VXLAN devices (their
//!   `ip link add ... type vxlan id VNI local VTEP` exec lines).
//! - MACs (type 2 routes, section 9): once the hosts have talked, every host
//!   interface behind another node, in a subnet this VTEP has hosts in, is a
//!   remote MAC (`swcli show evpn mac vni all`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use ipnetwork::Ipv4Network;

use crate::check::{config_yaml, swcli};
use crate::hosts::HostPort;
use crate::runner::{Lab, NodeState};
use crate::topology::{Role, Topology};

/// One EVPN VTEP of the lab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vtep {
    pub node: String,
    pub address: Ipv4Addr,
    pub vnis: BTreeSet<u32>,
}

/// What is still missing: `node: what` lines, empty when converged.
pub type Missing = Vec<String>;

/// A `switchd` node's VTEP from its `bgp.evpn` section.
fn switchd_vtep(node: &NodeState) -> Option<Vtep> {
    let config = config_yaml(node)?;
    let evpn = &config["bgp"]["evpn"];
    let address = evpn["vtep_ip"].as_str()?.parse().ok()?;
    let vnis = evpn["vnis"].as_sequence()?.iter().filter_map(|v| v["vni"].as_u64()?.try_into().ok()).collect();
    Some(Vtep { node: node.name.clone(), address, vnis })
}

/// An FRR node's kernel VTEP from its exec lines.
pub fn kernel_vtep(node: &str, exec: &[String]) -> Option<Vtep> {
    let mut address = None;
    let mut vnis = BTreeSet::new();
    for line in exec {
        let words: Vec<&str> = line.split_whitespace().collect();
        if !(words.starts_with(&["ip", "link", "add"]) && words.windows(2).any(|w| w == ["type", "vxlan"])) {
            continue;
        }
        let after = |key: &str| words.windows(2).find(|w| w[0] == key).map(|w| w[1]);
        if let (Some(vni), Some(local)) = (after("id").and_then(|v| v.parse().ok()), after("local")) {
            vnis.insert(vni);
            address = local.parse().ok();
        }
    }
    Some(Vtep { node: node.to_owned(), address: address?, vnis })
}

/// Every VTEP of the lab: `switchd` nodes with EVPN and FRR nodes with a
/// kernel VTEP.
pub fn vteps(lab: &Lab) -> Vec<Vtep> {
    let topology = Topology::load(&lab.topology).ok();
    lab.nodes
        .iter()
        .filter_map(|node| match node.role {
            Role::Switchd => switchd_vtep(node),
            Role::Frr => {
                let exec = topology.as_ref()?.topology.nodes.get(&node.name)?.exec.clone();
                kernel_vtep(&node.name, &exec)
            }
            Role::Host | Role::Hca => None,
        })
        .collect()
}

/// The remote VTEPs `vtep` must flood each of its VNIs to.
pub fn expected_flood_lists(vtep: &Vtep, all: &[Vtep]) -> BTreeMap<u32, BTreeSet<Ipv4Addr>> {
    vtep.vnis
        .iter()
        .map(|&vni| {
            let remote = all.iter().filter(|o| o.node != vtep.node && o.vnis.contains(&vni)).map(|o| o.address);
            (vni, remote.collect())
        })
        .collect()
}

/// Flood lists not (yet) as expected on the `switchd` VTEPs; with the count
/// of (VNI, remote VTEP) entries checked.
pub fn flood_lists_missing(lab: &Lab, all: &[Vtep]) -> (usize, Missing) {
    let mut checked = 0;
    let mut missing = Vec::new();
    for node in lab.nodes.iter().filter(|n| n.role == Role::Switchd) {
        let Some(vtep) = all.iter().find(|v| v.node == node.name) else { continue };
        let shown = swcli(node, &["show", "evpn", "vni", "--json"]).and_then(|v| v.as_array().cloned());
        for (vni, wanted) in expected_flood_lists(vtep, all) {
            checked += wanted.len();
            let have: BTreeSet<Ipv4Addr> = shown
                .iter()
                .flatten()
                .filter(|v| v["vni"] == vni)
                .flat_map(|v| v["remote_vteps"].as_array().cloned().unwrap_or_default())
                .filter_map(|a| a.as_str()?.parse().ok())
                .collect();
            let absent: Vec<String> = wanted.difference(&have).map(Ipv4Addr::to_string).collect();
            if !absent.is_empty() {
                missing.push(format!("{} VNI {vni} floods to none of {}", node.name, absent.join(", ")));
            }
        }
    }
    (checked, missing)
}

/// The host MACs a VTEP on `node` must have learned as remote: hosts
/// behind other nodes, in a subnet that has a host behind `node`.
pub fn expected_remote_macs(node: &str, ports: &[HostPort]) -> BTreeSet<String> {
    let local: BTreeSet<Ipv4Network> = ports.iter().filter(|p| p.attached_to == node).map(|p| p.subnet).collect();
    ports.iter().filter(|p| p.attached_to != node && local.contains(&p.subnet)).map(|p| p.mac.clone()).collect()
}

/// Remote MACs not (yet) learned by the `switchd` VTEPs; with the count checked.
pub fn remote_macs_missing(lab: &Lab, all: &[Vtep], ports: &[HostPort]) -> (usize, Missing) {
    let mut checked = 0;
    let mut missing = Vec::new();
    for node in lab.nodes.iter().filter(|n| n.role == Role::Switchd && all.iter().any(|v| v.node == n.name)) {
        let wanted = expected_remote_macs(&node.name, ports);
        checked += wanted.len();
        let shown = swcli(node, &["show", "evpn", "mac", "vni", "all", "--json"]).and_then(|v| v.as_array().cloned());
        let have: BTreeSet<String> = shown
            .iter()
            .flatten()
            .filter(|m| m["kind"] == "remote")
            .filter_map(|m| m["mac"].as_str().map(str::to_lowercase))
            .collect();
        let absent: Vec<&String> = wanted.difference(&have).collect();
        if !absent.is_empty() {
            missing.push(format!("{} has not learned {} remote MAC(s), e.g. {}", node.name, absent.len(), absent[0]));
        }
    }
    (checked, missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_vtep_from_exec_lines() {
        let exec: Vec<String> = [
            "ip addr add 10.255.0.6/32 dev lo",
            "ip link add br10010 type bridge",
            "ip link add vx10010 type vxlan id 10010 local 10.255.0.6 dstport 4789 nolearning",
            "ip link add vx10020 type vxlan id 10020 local 10.255.0.6 dstport 4789 nolearning",
        ]
        .map(String::from)
        .into();
        let vtep = kernel_vtep("leaf4", &exec).unwrap();
        assert_eq!(vtep.address, Ipv4Addr::new(10, 255, 0, 6));
        assert_eq!(vtep.vnis, BTreeSet::from([10010, 10020]));
        assert!(kernel_vtep("h1", &["ip addr add 192.168.10.10/24 dev eth1".to_owned()]).is_none());
    }

    #[test]
    fn flood_lists_and_remote_macs_expected() {
        let vtep = |node: &str, last: u8, vnis: &[u32]| Vtep {
            node: node.into(),
            address: Ipv4Addr::new(10, 255, 0, last),
            vnis: vnis.iter().copied().collect(),
        };
        let all = [vtep("l1", 1, &[10, 20]), vtep("l2", 2, &[10]), vtep("l3", 3, &[10, 20])];
        let lists = expected_flood_lists(&all[0], &all);
        assert_eq!(lists[&10], BTreeSet::from([Ipv4Addr::new(10, 255, 0, 2), Ipv4Addr::new(10, 255, 0, 3)]));
        assert_eq!(lists[&20], BTreeSet::from([Ipv4Addr::new(10, 255, 0, 3)]));
        let port = |host: &str, mac: &str, subnet: &str, leaf: &str| HostPort {
            host: host.into(),
            namespace: format!("clab-t-{host}"),
            interface: "eth1".into(),
            mac: mac.into(),
            address: Ipv4Addr::UNSPECIFIED,
            subnet: subnet.parse().unwrap(),
            attached_to: leaf.into(),
        };
        let ports = [
            port("a", "02:00:00:00:00:0a", "192.168.10.0/24", "l1"),
            port("b", "02:00:00:00:00:0b", "192.168.10.0/24", "l2"),
            port("c", "02:00:00:00:00:0c", "192.168.20.0/24", "l3"),
        ];
        // l1 has a host in VNI 10's subnet only: b, not c.
        assert_eq!(expected_remote_macs("l1", &ports), BTreeSet::from(["02:00:00:00:00:0b".to_owned()]));
        assert!(expected_remote_macs("l3", &ports).is_empty());
    }
}
