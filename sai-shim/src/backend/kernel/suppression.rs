//! ARP/ND suppression as zebra sets it up: every VNI's vxlan device is a
//! bridge port with `neigh_suppress on`, and a remote host's MAC+IP binding
//! is a neighbour entry on its VLAN's SVI (`ip neigh replace <IP> lladdr
//! <MAC> dev <SVI> nud noarp extern_learn`). The bridge then answers a local
//! host's ARP request or neighbour solicitation for that IP itself, from
//! the entry, when the MAC is behind a suppressing port, and floods the
//! request to no such port (the kernel's `br_do_proxy_suppress_arp` and
//! `br_do_suppress_nd`).
//!
//! The kernel looks the entry up on the VLAN's SVI: in the per-VLAN model
//! the VLAN's bridge itself, in the VLAN-aware model its 802.1Q device,
//! which exists only with a router interface on the VLAN. Bindings of a
//! VLAN without one are kept, and installed when its SVI is made.

use std::net::IpAddr;

use dataplane::wire::{EthernetAddress, VlanId};
use netlink_packet_core::{NLM_F_CREATE, NLM_F_REPLACE};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::neighbour::{NeighbourFlags, NeighbourMessage, NeighbourState};

use super::link::{IFLA_BRPORT_NEIGH_SUPPRESS, bridge_port_flag, link_message, set_link};
use super::netlink::Request;
use super::{KernelBackend, Netdev, UndoLog, kernel_error};
use crate::api::ObjectStore;
use crate::attributes::*;
use crate::error::SaiResult;
use crate::object::{ObjectType, SuppressionEntryKey};

impl KernelBackend {
    /// `bridge link set dev <vxlan> neigh_suppress on`.
    pub(super) fn set_neigh_suppress(&self, log: &mut UndoLog, vxlan: &Netdev) -> SaiResult<()> {
        let message = |on| {
            let mut message = link_message(vxlan.ifindex);
            message.header.interface_family = netlink_packet_route::AddressFamily::Bridge;
            message.attributes.push(bridge_port_flag(IFLA_BRPORT_NEIGH_SUPPRESS, on));
            set_link(message)
        };
        self.send(log, format!("neigh_suppress on {}", vxlan.name), message(true), Some(message(false)))
    }

    /// The netdev the bridge looks a VLAN's bindings up on, if it has one.
    fn suppression_netdev(&self, store: &ObjectStore, vid: VlanId) -> Option<Netdev> {
        if self.vlan_aware_bridge().is_none() {
            return self.bridges.get(&vid).cloned();
        }
        let vlan = *self.vlan_of_vid.get(&vid)?;
        store.objects_of(ObjectType::RouterInterface).find_map(|(id, object)| match object {
            Object::RouterInterface(rif) if rif.rif_type == RouterInterfaceType::Vlan(vlan) => {
                self.router_interfaces.get(&id).cloned()
            }
            _ => None,
        })
    }

    fn binding_message(&self, svi: &Netdev, ip: IpAddr, mac: Option<EthernetAddress>) -> NeighbourMessage {
        let mut message = self.neighbor_message(svi.ifindex, ip, mac.map(|mac| mac.0));
        message.header.state = NeighbourState::Noarp;
        message.header.flags = NeighbourFlags::ExtLearned;
        message
    }

    fn install_binding(
        &self,
        log: &mut UndoLog,
        svi: &Netdev,
        ip: IpAddr,
        mac: EthernetAddress,
        old: Option<EthernetAddress>,
    ) -> SaiResult<()> {
        let undo = match old {
            Some(old) => Request::route(
                RouteNetlinkMessage::NewNeighbour(self.binding_message(svi, ip, Some(old))),
                NLM_F_CREATE | NLM_F_REPLACE,
            ),
            None => Request::route(RouteNetlinkMessage::DelNeighbour(self.binding_message(svi, ip, None)), 0),
        };
        self.send(
            log,
            format!("suppression entry {ip} lladdr {mac} on {}", svi.name),
            Request::route(
                RouteNetlinkMessage::NewNeighbour(self.binding_message(svi, ip, Some(mac))),
                NLM_F_CREATE | NLM_F_REPLACE,
            ),
            Some(undo),
        )
    }

    pub(super) fn set_binding(
        &mut self,
        store: &ObjectStore,
        log: &mut UndoLog,
        key: &SuppressionEntryKey,
        mac: EthernetAddress,
    ) -> SaiResult<()> {
        let vid = self.vid(key.vlan)?;
        let old = self.suppression.get(&(vid, key.ip)).copied();
        if let Some(svi) = self.suppression_netdev(store, vid) {
            self.install_binding(log, &svi, key.ip, mac, old)?;
        }
        self.suppression.insert((vid, key.ip), mac);
        Ok(())
    }

    pub(super) fn remove_binding(
        &mut self,
        store: &ObjectStore,
        log: &mut UndoLog,
        key: &SuppressionEntryKey,
    ) -> SaiResult<()> {
        let vid = self.vid(key.vlan)?;
        let Some(mac) = self.suppression.get(&(vid, key.ip)).copied() else { return Ok(()) };
        if let Some(svi) = self.suppression_netdev(store, vid) {
            let request =
                Request::route(RouteNetlinkMessage::DelNeighbour(self.binding_message(&svi, key.ip, None)), 0);
            match self.netlink.request(&request) {
                Ok(()) => log.push(Request::route(
                    RouteNetlinkMessage::NewNeighbour(self.binding_message(&svi, key.ip, Some(mac))),
                    NLM_F_CREATE | NLM_F_REPLACE,
                )),
                Err(error) if [libc::ENOENT, libc::ENODEV].contains(&error.errno) => {}
                Err(error) => return Err(kernel_error(format!("removing suppression entry {}", key.ip), error)),
            }
        }
        self.suppression.remove(&(vid, key.ip));
        Ok(())
    }

    /// A VLAN's SVI was made (VLAN-aware model): its kept bindings go on it.
    pub(super) fn install_kept_bindings(&self, log: &mut UndoLog, svi: &Netdev, vid: VlanId) -> SaiResult<()> {
        for (&(_, ip), &mac) in self.suppression.iter().filter(|((binding_vid, _), _)| *binding_vid == vid) {
            self.install_binding(log, svi, ip, mac, None)?;
        }
        Ok(())
    }
}
