//! Host interfaces, the SAI hostif model: the kernel side of the switch.
//!
//! For each front-panel port and each VLAN router interface (SVI) the
//! daemon creates a TAP in its own namespace. The switch's own traffic
//! (ARP, ICMP, TCP to its addresses, LLDP) is punted by the pipeline into
//! that TAP, and whatever the kernel sends through it goes back into the
//! pipeline, so `ping` to the switch and socket-based protocols on the switch
//! work through the software dataplane.
//!
//! Names, chosen to read obviously next to the containerlab wiring:
//!
//! | what | name | carries |
//! |---|---|---|
//! | front-panel port `eth1` (the veth; owned by AF_PACKET) | `eth1` | the wire |
//! | its host interface | `sw-eth1` | the switch's own traffic on eth1; a routed port's addresses |
//! | SVI of VLAN 100 | `vlan100` | the switch's own traffic in VLAN 100; the SVI's addresses |
//!
//! (`ethN` itself cannot be the TAP: containerlab created it and the
//! dataplane reads it.) Each TAP gets the MAC of its router interface, so the
//! kernel's ARP answers and the pipeline's agree, and the MTU of its port.
//!
//! The front-panel netdev is quieted so the kernel never answers on the wire
//! past the dataplane: ARP replies off (`arp_ignore=8`) and IPv6 off on
//! `ethN`. Addresses are added through rtnetlink. The TAPs are removed when
//! their [`dataplane::io::Tap`] is dropped (the forwarding thread owns them).

use std::fmt;
use std::io;
use std::net::IpAddr;

use dataplane::io::{Tap, TapConfig, if_index};
use ipnetwork::IpNetwork;
use rtnetlink::LinkUnspec;

use crate::forwarding::Attachment;

/// The host interface name of front-panel port `port` (`eth1` -> `sw-eth1`).
pub fn port_host_name(port: &str) -> String {
    format!("sw-{port}")
}

/// The host interface name of VLAN `vid`'s router interface.
pub fn vlan_host_name(vid: u16) -> String {
    format!("vlan{vid}")
}

/// One host interface to create.
#[derive(Debug, Clone, PartialEq)]
pub struct HostIfSpec<H> {
    /// The TAP's name ([`port_host_name`], [`vlan_host_name`]).
    pub name: String,
    /// What the forwarding loop calls it: the shim's host interface object
    /// (or a [`crate::forwarding::HostIfTarget`] for a bare pipeline).
    pub host_if: H,
    /// The router interface's MAC (or the switch MAC for a bridged port).
    pub mac: [u8; 6],
    pub mtu: u32,
    pub addresses: Vec<IpNetwork>,
    /// The front-panel netdev to quiet (`eth1` for `sw-eth1`); `None` for
    /// SVIs and TAP ports.
    pub front_panel: Option<String>,
}

#[derive(Debug)]
pub struct HostIfError {
    pub interface: String,
    pub action: &'static str,
    pub error: io::Error,
}

impl fmt::Display for HostIfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "host interface {}: cannot {}: {}", self.interface, self.action, self.error)
    }
}

impl std::error::Error for HostIfError {}

/// Creates every host interface of `specs`: TAP up with its MAC and MTU,
/// addresses added, front-panel netdev quieted (best effort). All or nothing: on error,
/// the TAPs created so far are removed (dropped) before returning.
pub fn create_host_interfaces<H: Copy>(specs: &[HostIfSpec<H>]) -> Result<Vec<Attachment<H>>, HostIfError> {
    let mut created = Vec::with_capacity(specs.len());
    for spec in specs {
        let tap =
            Tap::create(&TapConfig { name: spec.name.clone(), mac: Some(spec.mac), mtu: Some(spec.mtu), up: true })
                .map_err(|error| HostIfError { interface: spec.name.clone(), action: "create TAP", error })?;
        if let Some(front) = &spec.front_panel {
            // Best effort: in a container whose /proc/sys is read-only the
            // switch still works, the kernel may just answer ARP on ethN too.
            if let Err(error) = quiet_front_panel(front) {
                tracing::warn!(port = %front, %error, "cannot quiet the front-panel netdev (arp_ignore, disable_ipv6)");
            }
        }
        created.push((spec, tap));
    }
    let with_addresses: Vec<(&str, &[IpNetwork])> =
        specs.iter().filter(|s| !s.addresses.is_empty()).map(|s| (s.name.as_str(), s.addresses.as_slice())).collect();
    add_addresses(&with_addresses)?;
    Ok(created.into_iter().map(|(spec, tap)| Attachment::Host { host_if: spec.host_if, tap }).collect())
}

/// Keeps the kernel from speaking on a front-panel netdev behind the
/// dataplane's back: it would answer ARP for the switch's addresses with the
/// veth's MAC (`arp_ignore` 8: never reply) and send IPv6 DAD/RS from it.
pub fn quiet_front_panel(name: &str) -> io::Result<()> {
    write_sysctl(&format!("/proc/sys/net/ipv4/conf/{name}/arp_ignore"), "8")?;
    // IPv6 may be disabled in the kernel altogether; that is fine too.
    let _ = write_sysctl(&format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6"), "1");
    Ok(())
}

fn write_sysctl(path: &str, value: &str) -> io::Result<()> {
    std::fs::write(path, value)
}

/// The kernel interface that carries the config's `loopback:` addresses.
pub const LOOPBACK_INTERFACE: &str = "lo";

/// The config's `loopback:` addresses on the kernel's `lo` in the switch's
/// namespace, so sockets on the switch can bind to them (a BGP session
/// sourced from the loopback, `ssh` to it). Removed when dropped, as the
/// TAPs are.
///
/// A packet to a loopback address arrives on a port's or SVI's TAP (the
/// pipeline punts it to the ingress router interface's host interface). The
/// kernel accepts it there without any sysctl change: it takes any local
/// address on any interface (weak host model), and `rp_filter`, strict or
/// loose, only checks that the route back to the *sender* leaves through the
/// TAP it came in on, which the TAP's connected subnet guarantees. The reply,
/// sourced from the loopback address, follows that route out of the TAP and
/// back into the pipeline. `accept_local` concerns packets whose *source* is
/// a local address, which these are not. So neither is touched.
#[derive(Debug)]
pub struct LoopbackAddresses {
    addresses: Vec<IpNetwork>,
}

impl LoopbackAddresses {
    /// Brings `lo` up (an address on a down link is not local) and adds
    /// `addresses` to it. On error, the addresses added so far are removed.
    pub fn add(addresses: &[IpNetwork]) -> Result<LoopbackAddresses, HostIfError> {
        // Built before adding, so a partial failure is undone by the drop.
        let guard = LoopbackAddresses { addresses: addresses.to_vec() };
        add_addresses(&[(LOOPBACK_INTERFACE, addresses)])?;
        Ok(guard)
    }
}

impl LoopbackAddresses {
    /// The addresses on `lo` now.
    pub fn addresses(&self) -> &[IpNetwork] {
        &self.addresses
    }

    /// Makes `wanted` the addresses on `lo`: removes the others, adds the
    /// new ones; those in both stay untouched. On error, what is
    /// recorded covers every address that may be on `lo`.
    pub fn set(&mut self, wanted: &[IpNetwork]) -> Result<(), HostIfError> {
        let stale: Vec<IpNetwork> = self.addresses.iter().filter(|a| !wanted.contains(a)).copied().collect();
        remove_addresses(&[(LOOPBACK_INTERFACE, &stale)])?;
        self.addresses.retain(|a| wanted.contains(a));
        let new: Vec<IpNetwork> = wanted.iter().filter(|a| !self.addresses.contains(a)).copied().collect();
        self.addresses.extend(&new);
        add_addresses(&[(LOOPBACK_INTERFACE, &new)])
    }
}

impl Drop for LoopbackAddresses {
    fn drop(&mut self) {
        if let Err(error) = remove_addresses(&[(LOOPBACK_INTERFACE, &self.addresses)]) {
            tracing::warn!(%error, "cannot remove the loopback addresses");
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AddressChange {
    /// Sets the link up and adds (or replaces) each address.
    Add,
    /// Removes each address; one already gone is not an error.
    Remove,
}

/// Adds `addresses` to each named interface through rtnetlink, setting the
/// interface up. Runs on a thread of its own with a current-thread runtime,
/// so callers need not be (and may be) inside a tokio runtime.
pub fn add_addresses(interfaces: &[(&str, &[IpNetwork])]) -> Result<(), HostIfError> {
    change_addresses(interfaces, AddressChange::Add)
}

/// Removes `addresses` from each named interface through rtnetlink (as
/// [`add_addresses`]). Tries them all; returns the first error.
pub fn remove_addresses(interfaces: &[(&str, &[IpNetwork])]) -> Result<(), HostIfError> {
    change_addresses(interfaces, AddressChange::Remove)
}

fn change_addresses(interfaces: &[(&str, &[IpNetwork])], change: AddressChange) -> Result<(), HostIfError> {
    if interfaces.iter().all(|(_, addresses)| addresses.is_empty()) {
        return Ok(());
    }
    let mut resolved = Vec::new();
    for (name, addresses) in interfaces {
        let index =
            if_index(name).map_err(|error| HostIfError { interface: name.to_string(), action: "find", error })?;
        resolved.push((name.to_string(), index, addresses.to_vec()));
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|error| {
                    HostIfError { interface: String::new(), action: "start netlink runtime", error }
                })?;
                runtime.block_on(change_addresses_async(&resolved, change))
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

async fn change_addresses_async(
    interfaces: &[(String, u32, Vec<IpNetwork>)],
    change: AddressChange,
) -> Result<(), HostIfError> {
    let netlink_error = |name: &str, action: &'static str, error: String| HostIfError {
        interface: name.to_string(),
        action,
        error: io::Error::other(error),
    };
    let (connection, handle, _) = rtnetlink::new_connection().map_err(|error| HostIfError {
        interface: String::new(),
        action: "open rtnetlink",
        error,
    })?;
    let task = tokio::spawn(connection);
    let mut result = Ok(());
    'all: for (name, index, addresses) in interfaces {
        match change {
            AddressChange::Add => {
                let up = LinkUnspec::new_with_index(*index).up().build();
                if let Err(error) = handle.link().set(up).execute().await {
                    result = Err(netlink_error(name, "set up", error.to_string()));
                    break 'all;
                }
                for address in addresses {
                    let ip: IpAddr = address.ip();
                    if let Err(error) = handle.address().add(*index, ip, address.prefix()).replace().execute().await {
                        result = Err(netlink_error(name, "add address", format!("{address}: {error}")));
                        break 'all;
                    }
                }
            }
            AddressChange::Remove => {
                for address in addresses {
                    // The add request builds the same message `ip addr del`
                    // sends: index, family, prefix length, IFA_LOCAL/ADDRESS.
                    let mut request = handle.address().add(*index, address.ip(), address.prefix());
                    let message = request.message_mut().clone();
                    match handle.address().del(message).execute().await {
                        Ok(()) => {}
                        Err(rtnetlink::Error::NetlinkError(e)) if e.raw_code() == -libc::EADDRNOTAVAIL => {}
                        Err(error) => {
                            if result.is_ok() {
                                result = Err(netlink_error(name, "remove address", format!("{address}: {error}")));
                            }
                        }
                    }
                }
            }
        }
    }
    task.abort();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_like_the_ports_they_serve() {
        assert_eq!(port_host_name("eth1"), "sw-eth1");
        assert_eq!(vlan_host_name(100), "vlan100");
        // The longest containerlab port still fits IFNAMSIZ - 1.
        assert!(port_host_name("eth128").len() < libc::IFNAMSIZ);
        assert!(vlan_host_name(4094).len() < libc::IFNAMSIZ);
    }
}
