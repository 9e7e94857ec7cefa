//! Symmetric IRB's L3VNIs, laid out in the kernel as zebra expects to find
//! them (FRR's "EVPN symmetric routing"; the topotest `bgp_evpn_rt5` builds
//! the same by hand):
//!
//! | shim object | kernel object |
//! |---|---|
//! | tunnel map entry VNI -> virtual router (the L3VNI) | a bridge `nos-irb<VNI>`, the L3VNI's SVI: the VRF's router MAC its address, enslaved to the VRF's device; in it a vxlan device `nos-vx<VNI>` (`nolearning`, local = the tunnel's source) |
//! | next hop of type TUNNEL_ENCAP (VTEP, VNI, router MAC) | a nexthop `via <VTEP> dev nos-irb<VNI> onlink`; a permanent neighbour `<VTEP> lladdr <router MAC>` on the SVI; an FDB entry `<router MAC> dst <VTEP>` on the vxlan device (`self master extern_learn`) |
//!
//! A route in the VRF through such next hops is then routed onto the SVI
//! to the remote router MAC, which the bridge sends into the vxlan device
//! and the device to the VTEP with the L3VNI; what arrives on the L3VNI
//! for our router MAC is the bridge's own, and is routed in the VRF.
//!
//! The L3VNI has a bridge of its own rather than a VLAN of the VLAN-aware
//! bridge: it takes no VLAN id from the switch's VLANs, and it is the same
//! in both bridge modes. Next hops naming the same VTEP share its neighbour
//! entry (the router MAC of the newest wins), and those naming the same
//! VTEP and MAC share its FDB entry; each goes with its last user.

use std::net::{IpAddr, Ipv4Addr};

use dataplane::wire::EthernetAddress;
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{InfoData, InfoKind, InfoVxlan, LinkAttribute, LinkInfo, LinkMessage};
use netlink_packet_route::neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourFlags, NeighbourState};

use super::bridge::fdb_message;
use super::link::{admin, delete_link};
use super::netlink::Request;
use super::nexthop_wire::{NexthopAttribute, NexthopMessage, NexthopOperation, RTNH_F_ONLINK};
use super::{KernelBackend, Netdev, UndoLog, kernel_error};
use crate::api::ObjectStore;
use crate::attributes::*;
use crate::error::{SaiError, SaiResult};
use crate::object::ObjectId;

/// An L3VNI: its SVI (a bridge) and the vxlan device in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct L3Vni {
    pub virtual_router: ObjectId,
    pub svi: Netdev,
    pub vxlan: Netdev,
}

/// A next hop across the overlay, as the kernel holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TunnelHop {
    pub vni: u32,
    pub vtep: Ipv4Addr,
    pub mac: EthernetAddress,
}

impl KernelBackend {
    fn l3vni(&self, vni: u32) -> SaiResult<&L3Vni> {
        self.l3vnis.get(&vni).ok_or_else(|| SaiError::InvalidAttribute {
            object: "next hop",
            attribute: "TUNNEL_VNI",
            reason: format!("VNI {vni} is no L3VNI (no tunnel map entry maps it to a virtual router)"),
        })
    }

    /// The L3VNI of virtual router `virtual_router`: its SVI with the
    /// router MAC, in the VRF, and its vxlan device in that bridge.
    pub(super) fn create_l3vni(
        &mut self,
        store: &ObjectStore,
        log: &mut UndoLog,
        vni: u32,
        virtual_router: ObjectId,
    ) -> SaiResult<()> {
        if self.l3vnis.contains_key(&vni) {
            return Err(SaiError::AlreadyExists(format!("L3VNI {vni}")));
        }
        let (_, tunnel) = self.tunnel.clone().ok_or_else(|| SaiError::Backend("no tunnel object yet".into()))?;
        let router_mac = match store.get(virtual_router) {
            Some(Object::VirtualRouter(vr)) => vr.src_mac_address.unwrap_or(store.switch().src_mac_address),
            _ => return Err(SaiError::UnknownObject(virtual_router)),
        };
        let mut message = LinkMessage::default();
        message.attributes.push(LinkAttribute::IfName(self.config.l3vni_svi_name(vni)));
        message.attributes.push(LinkAttribute::Address(router_mac.0.to_vec()));
        message.attributes.push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(InfoKind::Bridge)]));
        admin(&mut message, true);
        let svi = self.create_device(log, &format!("create the SVI of L3VNI {vni}"), message)?;
        let mut message = vxlan_message(&self.config.vxlan_name(vni), vni, &tunnel);
        message.attributes.push(LinkAttribute::Controller(svi.ifindex));
        let vxlan = self.create_device(log, &format!("create the vxlan device of L3VNI {vni}"), message)?;
        self.join_vrf(log, &svi, virtual_router)?;
        self.l3vnis.insert(vni, L3Vni { virtual_router, svi, vxlan });
        Ok(())
    }

    /// The L3VNI's devices go, and with them the nexthops, neighbours and
    /// FDB entries of its tunnel next hops. Deleting a device cannot be
    /// undone: the bridge, the last request, takes the vxlan device along.
    pub(super) fn remove_l3vni(&mut self, vni: u32) -> SaiResult<()> {
        let Some(l3vni) = self.l3vnis.get(&vni).cloned() else { return Ok(()) };
        for device in [&l3vni.vxlan, &l3vni.svi] {
            match self.netlink.request(&delete_link(device.ifindex)) {
                Ok(()) => {}
                Err(error) if error.errno == libc::ENODEV => {}
                Err(error) => return Err(kernel_error(format!("delete {}", device.name), error)),
            }
        }
        self.l3vnis.remove(&vni);
        Ok(())
    }

    /// A next hop across the overlay: the remote router MAC behind its
    /// VTEP in the vxlan device's FDB, the VTEP as a neighbour of the SVI
    /// with that MAC, and the nexthop object through the SVI.
    pub(super) fn create_tunnel_next_hop(
        &mut self,
        log: &mut UndoLog,
        id: ObjectId,
        ip: IpAddr,
        vni: u32,
        mac: EthernetAddress,
    ) -> SaiResult<()> {
        let IpAddr::V4(vtep) = ip else {
            return Err(SaiError::InvalidAttribute {
                object: "next hop",
                attribute: "IP",
                reason: "VTEPs are IPv4".into(),
            });
        };
        let hop = TunnelHop { vni, vtep, mac };
        let l3vni = self.l3vni(vni)?.clone();
        if !self.tunnel_hops.values().any(|other| *other == hop) {
            let entry = self.router_mac_entry(&l3vni.vxlan, hop);
            self.send(
                log,
                format!("fdb entry {mac} dst {vtep} on {}", l3vni.vxlan.name),
                Request::route(RouteNetlinkMessage::NewNeighbour(entry.clone()), NLM_F_CREATE | NLM_F_REPLACE),
                Some(Request::route(RouteNetlinkMessage::DelNeighbour(entry), 0)),
            )?;
        }
        let before = self.vtep_router_mac(vni, vtep, None);
        if before != Some(mac) {
            let undo = match before {
                Some(old) => Request::route(
                    RouteNetlinkMessage::NewNeighbour(self.neighbor_message(l3vni.svi.ifindex, ip, Some(old.0))),
                    NLM_F_CREATE | NLM_F_REPLACE,
                ),
                None => Request::route(
                    RouteNetlinkMessage::DelNeighbour(self.neighbor_message(l3vni.svi.ifindex, ip, None)),
                    0,
                ),
            };
            self.send(
                log,
                format!("neighbour {vtep} lladdr {mac} on {}", l3vni.svi.name),
                Request::route(
                    RouteNetlinkMessage::NewNeighbour(self.neighbor_message(l3vni.svi.ifindex, ip, Some(mac.0))),
                    NLM_F_CREATE | NLM_F_REPLACE,
                ),
                Some(undo),
            )?;
        }
        let kernel_id = self.allocate_nexthop_id();
        let mut header = self.nexthop_header(libc::AF_INET as u8);
        // The VTEP is no address of the SVI's subnet (it has none).
        header.flags = RTNH_F_ONLINK;
        let mut message = NexthopMessage::new(NexthopOperation::New, header);
        message.attributes.extend([
            NexthopAttribute::Id(kernel_id),
            NexthopAttribute::Oif(l3vni.svi.ifindex),
            NexthopAttribute::Gateway(ip),
        ]);
        self.send(
            log,
            format!("nexthop {vtep} on L3VNI {vni} (id {kernel_id})"),
            Request::nexthop(message, NLM_F_CREATE | NLM_F_EXCL),
            Some(super::route::delete_nexthop(kernel_id)),
        )?;
        self.nexthop_ids.insert(id, kernel_id);
        self.tunnel_hops.insert(id, hop);
        Ok(())
    }

    /// Before a tunnel next hop's nexthop object goes: its FDB entry and
    /// neighbour go with their last user (the neighbour takes the MAC of
    /// the newest remaining one).
    pub(super) fn release_tunnel_next_hop(&mut self, log: &mut UndoLog, id: ObjectId) -> SaiResult<()> {
        let Some(hop) = self.tunnel_hops.get(&id).copied() else { return Ok(()) };
        // Its L3VNI went first: the devices took everything along.
        let Some(l3vni) = self.l3vnis.get(&hop.vni).cloned() else {
            self.tunnel_hops.remove(&id);
            return Ok(());
        };
        let ip = IpAddr::V4(hop.vtep);
        let after = self.vtep_router_mac(hop.vni, hop.vtep, Some(id));
        if after != Some(hop.mac) {
            let message = |mac: Option<EthernetAddress>| self.neighbor_message(l3vni.svi.ifindex, ip, mac.map(|m| m.0));
            let restore =
                Request::route(RouteNetlinkMessage::NewNeighbour(message(Some(hop.mac))), NLM_F_CREATE | NLM_F_REPLACE);
            let change = match after {
                Some(mac) => {
                    Request::route(RouteNetlinkMessage::NewNeighbour(message(Some(mac))), NLM_F_CREATE | NLM_F_REPLACE)
                }
                None => Request::route(RouteNetlinkMessage::DelNeighbour(message(None)), 0),
            };
            self.send_tolerating_gone(log, format!("neighbour {} on {}", hop.vtep, l3vni.svi.name), change, restore)?;
        }
        if !self.tunnel_hops.iter().any(|(other_id, other)| *other_id != id && *other == hop) {
            let entry = self.router_mac_entry(&l3vni.vxlan, hop);
            self.send_tolerating_gone(
                log,
                format!("fdb entry {} dst {} on {}", hop.mac, hop.vtep, l3vni.vxlan.name),
                Request::route(RouteNetlinkMessage::DelNeighbour(entry.clone()), 0),
                Request::route(RouteNetlinkMessage::NewNeighbour(entry), NLM_F_CREATE | NLM_F_REPLACE),
            )?;
        }
        self.tunnel_hops.remove(&id);
        Ok(())
    }

    /// Sends `request`, undone by `undo`; what is gone already is no error.
    fn send_tolerating_gone(&self, log: &mut UndoLog, what: String, request: Request, undo: Request) -> SaiResult<()> {
        match self.netlink.request(&request) {
            Ok(()) => {
                log.push(undo);
                Ok(())
            }
            Err(error) if [libc::ENOENT, libc::ENODEV].contains(&error.errno) => Ok(()),
            Err(error) => Err(kernel_error(what, error)),
        }
    }

    /// The router MAC the VTEP's neighbour entry on the L3VNI's SVI holds:
    /// the newest tunnel next hop's to it (`without` left out).
    fn vtep_router_mac(&self, vni: u32, vtep: Ipv4Addr, without: Option<ObjectId>) -> Option<EthernetAddress> {
        self.tunnel_hops
            .iter()
            .filter(|(id, hop)| Some(**id) != without && hop.vni == vni && hop.vtep == vtep)
            .max_by_key(|(id, _)| **id)
            .map(|(_, hop)| hop.mac)
    }

    /// `bridge fdb replace <MAC> dev nos-vx<VNI> dst <VTEP> self master
    /// extern_learn`, as zebra installs a remote router MAC. Reachable: the
    /// vxlan device refuses `noarp` (EINVAL), and `extern_learn` keeps it
    /// from aging in both the device and the bridge.
    fn router_mac_entry(&self, vxlan: &Netdev, hop: TunnelHop) -> netlink_packet_route::neighbour::NeighbourMessage {
        let mut message = fdb_message(
            vxlan.ifindex,
            hop.mac,
            NeighbourState::Reachable,
            NeighbourFlags::Own | NeighbourFlags::Controller | NeighbourFlags::ExtLearned,
        );
        message.attributes.push(NeighbourAttribute::Destination(NeighbourAddress::Inet(hop.vtep)));
        message
    }
}

/// `ip link add <name> type vxlan id <vni> local <source> dstport <port>
/// nolearning`, up: remote MACs come from the control plane (EVPN), or are
/// flooded to the VNI's VTEPs, as with zebra.
pub(super) fn vxlan_message(name: &str, vni: u32, tunnel: &Tunnel) -> LinkMessage {
    let mut message = LinkMessage::default();
    message.attributes.push(LinkAttribute::IfName(name.to_owned()));
    message.attributes.push(LinkAttribute::LinkInfo(vec![
        LinkInfo::Kind(InfoKind::Vxlan),
        LinkInfo::Data(InfoData::Vxlan(vec![
            InfoVxlan::Id(vni),
            InfoVxlan::Local(tunnel.encap_src_ip),
            InfoVxlan::Port(tunnel.udp_dst_port),
            InfoVxlan::Learning(false),
        ])),
    ]));
    admin(&mut message, true);
    message
}
