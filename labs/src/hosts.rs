//! A deployed lab's host interfaces as the kernel has them: name, MAC,
//! IPv4 address and subnet, and the node at the other end of the link.
//! Read once per `labs check` or `labs traffic`, in this process.

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

/// One interface of a host as its kernel lists it (`getifaddrs` inside
/// the host's namespace).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub mac: String,
    /// (address, prefix length), loopback and link-local left out.
    pub ipv4: Vec<(Ipv4Addr, u8)>,
}

/// Every host of the lab with its interfaces: (node, namespace, interfaces).
/// Read in this process, a few namespaces at a time, rather than by one
/// `ip` process per host (248 hosts in the 128-switch rails lab).
pub fn host_interfaces(lab: &Lab) -> Vec<(String, String, Vec<Interface>)> {
    let hosts: Vec<_> = lab.nodes.iter().filter(|n| n.role == Role::Host).collect();
    let read = crate::check::in_parallel(&hosts, |_, host| {
        crate::netns::enter(&host.namespace, interfaces_here).unwrap_or_default()
    });
    hosts.iter().zip(read).map(|(host, interfaces)| (host.name.clone(), host.namespace.clone(), interfaces)).collect()
}

/// This thread's namespace's interfaces, by name order of first appearance.
fn interfaces_here() -> Result<Vec<Interface>, String> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list`, freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Err(format!("getifaddrs: {}", std::io::Error::last_os_error()));
    }
    let mut interfaces: Vec<Interface> = Vec::new();
    let mut entry = list;
    while !entry.is_null() {
        // SAFETY: a node of the list getifaddrs returned, alive until freeifaddrs.
        let ifa = unsafe { &*entry };
        entry = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string of the list.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }.to_string_lossy().into_owned();
        let index = match interfaces.iter().position(|i| i.name == name) {
            Some(index) => index,
            None => {
                interfaces.push(Interface { name, ..Interface::default() });
                interfaces.len() - 1
            }
        };
        // SAFETY: ifa_addr is non-null; its family says which sockaddr it is.
        match i32::from(unsafe { (*ifa.ifa_addr).sa_family }) {
            libc::AF_PACKET => {
                // SAFETY: an AF_PACKET entry's address is a sockaddr_ll.
                let link = unsafe { &*ifa.ifa_addr.cast::<libc::sockaddr_ll>() };
                let bytes = &link.sll_addr[..usize::from(link.sll_halen).min(link.sll_addr.len())];
                interfaces[index].mac = bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
            }
            libc::AF_INET if !ifa.ifa_netmask.is_null() => {
                // SAFETY: AF_INET entries' address and netmask are sockaddr_in.
                let (address, mask) = unsafe {
                    (&*ifa.ifa_addr.cast::<libc::sockaddr_in>(), &*ifa.ifa_netmask.cast::<libc::sockaddr_in>())
                };
                let address = Ipv4Addr::from(u32::from_be(address.sin_addr.s_addr));
                let prefix = u32::from_be(mask.sin_addr.s_addr).leading_ones() as u8;
                if !address.is_loopback() && !address.is_link_local() {
                    interfaces[index].ipv4.push((address, prefix));
                }
            }
            _ => {}
        }
    }
    // SAFETY: the list getifaddrs returned, freed once.
    unsafe { libc::freeifaddrs(list) };
    Ok(interfaces)
}

/// Each host's IPv4 addresses: (node, namespace, addresses).
pub fn host_addresses(hosts: &[(String, String, Vec<Interface>)]) -> Vec<(String, String, Vec<Ipv4Addr>)> {
    hosts
        .iter()
        .map(|(name, namespace, interfaces)| {
            let addresses = interfaces.iter().flat_map(|i| i.ipv4.iter().map(|(a, _)| *a)).collect();
            (name.clone(), namespace.clone(), addresses)
        })
        .collect()
}

/// Every host interface with an IPv4 address that a link of the lab cables.
pub fn host_ports(lab: &Lab, hosts: &[(String, String, Vec<Interface>)]) -> Vec<HostPort> {
    let mut ports = Vec::new();
    for (host, namespace, interfaces) in hosts {
        for interface in interfaces {
            let peer = lab.links.iter().find_map(|(a, b)| {
                if a.node == *host && a.interface == interface.name {
                    Some(b.node.clone())
                } else if b.node == *host && b.interface == interface.name {
                    Some(a.node.clone())
                } else {
                    None
                }
            });
            let Some(attached_to) = peer else { continue };
            for &(address, len) in &interface.ipv4 {
                let Ok(network) = Ipv4Network::new(address, len) else { continue };
                let subnet = Ipv4Network::new(network.network(), len).expect("same length");
                ports.push(HostPort {
                    host: host.clone(),
                    namespace: namespace.clone(),
                    interface: interface.name.clone(),
                    mac: interface.mac.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interfaces_here_lists_loopback_without_its_host_scoped_address() {
        let interfaces = interfaces_here().expect("getifaddrs");
        let lo = interfaces.iter().find(|i| i.name == "lo").expect("lo listed");
        assert!(lo.ipv4.iter().all(|(a, _)| !a.is_loopback()), "{lo:?}");
    }

    #[test]
    fn ports_are_the_addresses_on_cabled_interfaces_with_their_subnet() {
        let endpoint =
            |node: &str, interface: &str| crate::topology::Endpoint { node: node.into(), interface: interface.into() };
        let lab = Lab {
            name: "t".into(),
            topology: "t.clab.yml".into(),
            nodes: Vec::new(),
            links: vec![(endpoint("h1", "eth1"), endpoint("sw1", "eth3"))],
            supervisor: None,
            deploy_secs: None,
        };
        let eth1 = Interface {
            name: "eth1".into(),
            mac: "02:00:00:00:00:01".into(),
            ipv4: vec![("10.0.1.5".parse().unwrap(), 24)],
        };
        let eth9 = Interface {
            name: "eth9".into(),
            mac: "02:00:00:00:00:09".into(),
            ipv4: vec![("10.9.0.1".parse().unwrap(), 16)],
        };
        let hosts = vec![("h1".to_owned(), "clab-t-h1".to_owned(), vec![eth1, eth9])];
        let ports = host_ports(&lab, &hosts);
        assert_eq!(ports.len(), 1, "eth9 is cabled to nothing: {ports:?}");
        assert_eq!((ports[0].attached_to.as_str(), ports[0].subnet.to_string()), ("sw1", "10.0.1.0/24".to_owned()));
        assert_eq!(host_addresses(&hosts)[0].2.len(), 2);
    }
}
