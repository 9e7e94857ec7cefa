//! `labs check`'s symmetric IRB part (RFC 9135): which host pairs of a lab
//! with tenant VRFs must ping, and which must not.
//!
//! A host's VRF is the VRF of the `switchd` SVI whose subnet holds its
//! address (`vlans[]` with `addresses` and `vrf`: the anycast gateway).
//! Two hosts are a pair when each can send to the other: the same subnet
//! (bridged), or both with a default route (routed through their
//! gateways). A pair in one VRF must ping; a pair across two VRFs must not
//! (the leaves route each tenant in its own table, so the echo finds no
//! route): those are the isolated pairs.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::process::Command;

use ipnetwork::Ipv4Network;

use crate::check::config_yaml;
use crate::runner::Lab;
use crate::topology::Role;

/// One host as the pair plan sees it.
#[derive(Debug, Clone)]
pub struct IrbHost {
    pub namespace: String,
    pub addresses: Vec<Ipv4Addr>,
    pub vrf: Option<String>,
    /// The subnets of its addresses (from the gateways' SVIs).
    pub subnets: Vec<Ipv4Network>,
    pub default_route: bool,
}

/// The pings of a lab with VRFs: per source namespace, the targets that
/// must answer and those that must not.
#[derive(Debug, Clone, Default)]
pub struct PairPlan {
    pub reachable: Vec<(String, Vec<Ipv4Addr>)>,
    pub isolated: Vec<(String, Vec<Ipv4Addr>)>,
    /// Reachable pairs in different subnets (routed by the gateways).
    pub routed: usize,
}

/// The VRF of every SVI subnet of the lab's `switchd` nodes.
pub fn subnet_vrfs(lab: &Lab) -> BTreeMap<Ipv4Network, String> {
    let mut vrfs = BTreeMap::new();
    for node in lab.nodes.iter().filter(|n| n.role == Role::Switchd) {
        let Some(config) = config_yaml(node) else { continue };
        for vlan in config["vlans"].as_sequence().into_iter().flatten() {
            let Some(vrf) = vlan["vrf"].as_str() else { continue };
            for address in vlan["addresses"].as_sequence().into_iter().flatten() {
                let Some(network) = address.as_str().and_then(|a| a.parse::<Ipv4Network>().ok()) else { continue };
                let subnet = Ipv4Network::new(network.network(), network.prefix()).expect("same length");
                vrfs.insert(subnet, vrf.to_owned());
            }
        }
    }
    vrfs
}

fn has_default_route(namespace: &str) -> bool {
    Command::new("ip")
        .args(["-n", namespace, "-4", "route", "show", "default"])
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
}

/// The hosts with their VRFs, or `None` in a lab without VRFs.
pub fn hosts(lab: &Lab, addresses: &[(String, String, Vec<Ipv4Addr>)]) -> Option<Vec<IrbHost>> {
    let vrfs = subnet_vrfs(lab);
    if vrfs.is_empty() {
        return None;
    }
    let hosts = addresses
        .iter()
        .map(|(_, namespace, addresses)| {
            let subnets: Vec<(Ipv4Network, &String)> = addresses
                .iter()
                .filter_map(|a| vrfs.iter().find(|(subnet, _)| subnet.contains(*a)).map(|(s, v)| (*s, v)))
                .collect();
            IrbHost {
                namespace: namespace.clone(),
                addresses: addresses.clone(),
                vrf: subnets.first().map(|(_, vrf)| (*vrf).clone()),
                subnets: subnets.iter().map(|(s, _)| *s).collect(),
                default_route: has_default_route(namespace),
            }
        })
        .collect();
    Some(hosts)
}

/// Which pings must answer and which must not (see the module comment).
pub fn plan(hosts: &[IrbHost]) -> PairPlan {
    let mut plan = PairPlan::default();
    for (i, src) in hosts.iter().enumerate() {
        let (mut reachable, mut isolated) = (Vec::new(), Vec::new());
        for (j, dst) in hosts.iter().enumerate() {
            if i == j {
                continue;
            }
            let bridged = src.subnets.iter().any(|s| dst.subnets.contains(s));
            let routed = !bridged && src.default_route && dst.default_route;
            match (&src.vrf, &dst.vrf) {
                (Some(a), Some(b)) if a != b && src.default_route => isolated.extend(&dst.addresses),
                (Some(a), Some(b)) if a != b => {}
                _ if bridged || routed => {
                    reachable.extend(&dst.addresses);
                    if routed {
                        plan.routed += dst.addresses.len();
                    }
                }
                _ => {}
            }
        }
        if !reachable.is_empty() {
            plan.reachable.push((src.namespace.clone(), reachable));
        }
        if !isolated.is_empty() {
            plan.isolated.push((src.namespace.clone(), isolated));
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(ns: &str, address: [u8; 4], vrf: &str, default_route: bool) -> IrbHost {
        let address = Ipv4Addr::from(address);
        IrbHost {
            namespace: ns.into(),
            addresses: vec![address],
            vrf: Some(vrf.into()),
            subnets: vec![Ipv4Network::new(address, 24).map(|n| Ipv4Network::new(n.network(), 24).unwrap()).unwrap()],
            default_route,
        }
    }

    #[test]
    fn same_vrf_pairs_ping_and_cross_vrf_pairs_are_isolated() {
        let hosts = [
            host("r1", [192, 168, 10, 10], "red", true),
            host("r2", [192, 168, 20, 11], "red", true),
            host("r3", [192, 168, 20, 13], "red", false),
            host("b1", [192, 168, 30, 10], "blue", true),
        ];
        let plan = plan(&hosts);
        let targets = |list: &[(String, Vec<Ipv4Addr>)], ns: &str| {
            list.iter().find(|(n, _)| n == ns).map(|(_, t)| t.clone()).unwrap_or_default()
        };
        // r1 routes to r2 (both with gateways), not to r3 (no way back).
        assert_eq!(targets(&plan.reachable, "r1"), vec![Ipv4Addr::new(192, 168, 20, 11)]);
        // r3 is bridged to r2 only.
        assert_eq!(targets(&plan.reachable, "r3"), vec![Ipv4Addr::new(192, 168, 20, 11)]);
        assert_eq!(targets(&plan.isolated, "r1"), vec![Ipv4Addr::new(192, 168, 30, 10)]);
        assert!(targets(&plan.isolated, "r3").is_empty(), "no route: not a pair");
        assert_eq!(targets(&plan.isolated, "b1").len(), 3);
        assert_eq!(plan.routed, 2);
    }
}
