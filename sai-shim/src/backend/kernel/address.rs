//! The switch's own addresses on its kernel interfaces (routed ports, SVIs,
//! `lo`). They are no shim object (in SAI a switch address is a route to the
//! CPU port), but with the kernel as the dataplane they must sit on the
//! netdevs for the kernel to answer ARP and terminate BGP. They are marked
//! ours (`IFA_PROTO`) and added with `noprefixroute`: the connected route is
//! the shim's route entry, installed as ours.

use std::net::IpAddr;

use ipnetwork::IpNetwork;
use netlink_packet_core::{NLM_F_CREATE, NLM_F_REPLACE};
use netlink_packet_route::address::{AddressAttribute, AddressFlags, AddressMessage, AddressProtocol};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::netlink::{Message, Request};
use super::{KernelBackend, kernel_error};
use crate::error::{SaiError, SaiResult};

/// One address of ours as the kernel holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct InstalledAddress {
    ifindex: u32,
    address: IpNetwork,
    message: AddressMessage,
}

fn address_message(ifindex: u32, address: IpNetwork, protocol: u8) -> AddressMessage {
    let mut message = AddressMessage::default();
    message.header.family = match address.ip() {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    };
    message.header.prefix_len = address.prefix();
    message.header.index = ifindex;
    if address.is_ipv4() {
        message.attributes.push(AddressAttribute::Local(address.ip()));
    }
    message.attributes.push(AddressAttribute::Address(address.ip()));
    message.attributes.push(AddressAttribute::Flags(AddressFlags::Noprefixroute | AddressFlags::Nodad));
    message.attributes.push(AddressAttribute::Protocol(AddressProtocol::Other(protocol)));
    message
}

impl KernelBackend {
    fn addresses_of_ours(&self) -> SaiResult<Vec<InstalledAddress>> {
        let protocol = AddressProtocol::Other(self.config.protocol);
        let messages = self
            .netlink
            .dump(Message::Route(RouteNetlinkMessage::GetAddress(AddressMessage::default())))
            .map_err(|e| kernel_error("reading addresses", e))?;
        let mut out = Vec::new();
        for message in messages {
            let Message::Route(RouteNetlinkMessage::NewAddress(message)) = message else { continue };
            if !message.attributes.contains(&AddressAttribute::Protocol(protocol)) {
                continue;
            }
            let Some(ip) = message
                .attributes
                .iter()
                .find_map(|a| match a {
                    AddressAttribute::Local(ip) => Some(*ip),
                    _ => None,
                })
                .or_else(|| {
                    message.attributes.iter().find_map(|a| match a {
                        AddressAttribute::Address(ip) => Some(*ip),
                        _ => None,
                    })
                })
            else {
                continue;
            };
            let Ok(address) = IpNetwork::new(ip, message.header.prefix_len) else { continue };
            out.push(InstalledAddress { ifindex: message.header.index, address, message });
        }
        Ok(out)
    }

    /// Makes our addresses exactly `wanted` (interface name, address):
    /// adds what is missing, removes ours that are not wanted (a previous
    /// run's), never touches an address that is not ours. Interfaces are
    /// set up.
    pub fn sync_addresses(&self, wanted: &[(String, IpNetwork)]) -> SaiResult<()> {
        let mut resolved = Vec::new();
        for (name, address) in wanted {
            let link = self.link_by_name(name).map_err(|error| SaiError::InvalidAttribute {
                object: "interface address",
                attribute: "interface",
                reason: format!("no netdev {name} for {address} ({error})"),
            })?;
            resolved.push((link, *address));
        }
        for installed in self.addresses_of_ours()? {
            if !resolved
                .iter()
                .any(|(link, address)| link.ifindex == installed.ifindex && *address == installed.address)
            {
                match self.netlink.request(&Request::route(RouteNetlinkMessage::DelAddress(installed.message), 0)) {
                    Ok(()) => tracing::info!(address = %installed.address, "kernel backend: stale address removed"),
                    Err(error) if error.errno == libc::EADDRNOTAVAIL || error.errno == libc::ENODEV => {}
                    Err(error) => return Err(kernel_error(format!("removing address {}", installed.address), error)),
                }
            }
        }
        for (link, address) in &resolved {
            if !link.up {
                let mut up = super::link::link_message(link.ifindex);
                up.header.flags |= netlink_packet_route::link::LinkFlags::Up;
                up.header.change_mask |= netlink_packet_route::link::LinkFlags::Up;
                self.netlink
                    .request(&Request::route(RouteNetlinkMessage::SetLink(up), 0))
                    .map_err(|e| kernel_error(format!("setting {} up", link.name), e))?;
            }
            self.netlink
                .request(&Request::route(
                    RouteNetlinkMessage::NewAddress(address_message(link.ifindex, *address, self.config.protocol)),
                    NLM_F_CREATE | NLM_F_REPLACE,
                ))
                .map_err(|e| kernel_error(format!("address {address} on {}", link.name), e))?;
        }
        Ok(())
    }

    /// Removes every address of ours (the daemon stopping).
    pub fn remove_addresses(&self) -> SaiResult<()> {
        self.sync_addresses(&[])
    }
}
