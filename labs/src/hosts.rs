//! A deployed lab's host interfaces as the kernel has them: name, MAC,
//! IPv4 address and subnet, and the node at the other end of the link.

use std::net::Ipv4Addr;
use std::process::Command;

use ipnetwork::Ipv4Network;
use serde_json::Value;

use crate::runner::Lab;
use crate::topology::Role;

/// One IPv4 address of a host interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    pub host: String,
    pub namespace: String,
    pub interface: String,
    pub mac: String,
    pub address: Ipv4Addr,
    pub subnet: Ipv4Network,
    /// The node the interface's link goes to.
    pub attached_to: String,
}

/// Every host interface with an IPv4 address (`ip -j addr`) that a link of
/// the lab cables.
pub fn host_ports(lab: &Lab) -> Vec<HostPort> {
    let mut ports = Vec::new();
    for host in lab.nodes.iter().filter(|n| n.role == Role::Host) {
        let Ok(out) = Command::new("ip").args(["-n", &host.namespace, "-j", "addr", "show"]).output() else {
            continue;
        };
        let interfaces: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
        for interface in interfaces {
            let (Some(ifname), Some(mac)) = (interface["ifname"].as_str(), interface["address"].as_str()) else {
                continue;
            };
            let peer = lab.links.iter().find_map(|(a, b)| {
                if a.node == host.name && a.interface == ifname {
                    Some(b.node.clone())
                } else if b.node == host.name && b.interface == ifname {
                    Some(a.node.clone())
                } else {
                    None
                }
            });
            let Some(attached_to) = peer else { continue };
            for info in interface["addr_info"].as_array().into_iter().flatten() {
                let (Some(local), Some(len)) = (info["local"].as_str(), info["prefixlen"].as_u64()) else { continue };
                let Ok(address) = local.parse::<Ipv4Addr>() else { continue };
                let Ok(network) = Ipv4Network::new(address, len as u8) else { continue };
                let subnet = Ipv4Network::new(network.network(), len as u8).expect("same length");
                ports.push(HostPort {
                    host: host.name.clone(),
                    namespace: host.namespace.clone(),
                    interface: ifname.to_owned(),
                    mac: mac.to_lowercase(),
                    address,
                    subnet,
                    attached_to: attached_to.clone(),
                });
            }
        }
    }
    ports
}

/// The interface `namespace`'s kernel sends to `destination` through
/// (`ip route get`), if it has a route.
pub fn route_interface(namespace: &str, destination: Ipv4Addr) -> Option<String> {
    let out = Command::new("ip")
        .args(["-n", namespace, "-j", "route", "get", &destination.to_string()])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let routes: Vec<Value> = serde_json::from_slice(&out.stdout).ok()?;
    routes.first()?["dev"].as_str().map(str::to_owned)
}
