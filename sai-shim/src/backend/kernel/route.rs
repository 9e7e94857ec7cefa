//! Layer 3: nexthop objects and groups, routes that reference them, and
//! neighbours.
//!
//! Every route points at a nexthop object (`nhid`), a single next hop or a
//! group; a group's membership changes with one `RTM_NEWNEXTHOP` replace,
//! whatever the number of routes using it. A group the control plane left
//! empty holds the backend's blackhole nexthop (the kernel allows no empty
//! group), so its routes drop, as the soft pipeline's do.

use std::net::IpAddr;

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE};
use netlink_packet_route::neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage, RouteProtocol, RouteScope, RouteType};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::netlink::{Message, Request};
use super::nexthop_wire::{
    GroupMember, NexthopAttribute, NexthopHeader, NexthopMessage, NexthopOperation, RTNH_F_ONLINK,
};
use super::{KernelBackend, UndoLog, kernel_error, type_name};

/// `RT_TABLE_UNSPEC`: the table is in `RTA_TABLE`.
const RT_TABLE_UNSPEC: u8 = 0;
use crate::api::ObjectStore;
use crate::attributes::*;
use crate::error::{SaiError, SaiResult};
use crate::notification::{NeighborInfo, NeighborState};
use crate::object::{NeighborEntryKey, ObjectId, ObjectType, RouteEntryKey};

fn family_of(ip: IpAddr) -> AddressFamily {
    match ip {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    }
}

fn family_byte(ip: IpAddr) -> u8 {
    match ip {
        IpAddr::V4(_) => libc::AF_INET as u8,
        IpAddr::V6(_) => libc::AF_INET6 as u8,
    }
}

pub(super) fn delete_nexthop(id: u32) -> Request {
    let mut message = NexthopMessage::new(NexthopOperation::Delete, NexthopHeader::default());
    message.attributes.push(NexthopAttribute::Id(id));
    Request::nexthop(message, 0)
}

fn route_address(ip: IpAddr) -> RouteAddress {
    match ip {
        IpAddr::V4(ip) => RouteAddress::Inet(ip),
        IpAddr::V6(ip) => RouteAddress::Inet6(ip),
    }
}

/// What a route entry becomes in the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KernelRoute {
    /// To the switch itself: the address makes the kernel's local route.
    Nothing,
    Nexthop(u32),
    Connected(u32),
    Blackhole,
}

impl KernelBackend {
    pub(super) fn allocate_nexthop_id(&mut self) -> u32 {
        let id = self.next_nexthop_id;
        self.next_nexthop_id = self.next_nexthop_id.wrapping_add(1).max(self.config.nexthop_id_base);
        id
    }

    pub(super) fn nexthop_header(&self, family: u8) -> NexthopHeader {
        NexthopHeader { family, protocol: self.config.protocol, ..NexthopHeader::default() }
    }

    pub(super) fn create_next_hop(&mut self, log: &mut UndoLog, id: ObjectId, next_hop: &NextHop) -> SaiResult<()> {
        let rif = match next_hop.next_hop_type {
            NextHopType::Ip { router_interface } => router_interface,
            NextHopType::TunnelEncap { vni, mac, .. } => {
                return self.create_tunnel_next_hop(log, id, next_hop.ip, vni, mac);
            }
        };
        let oif = self.router_interface(rif)?.ifindex;
        let kernel_id = self.allocate_nexthop_id();
        let mut header = self.nexthop_header(family_byte(next_hop.ip));
        // The gateway is on the router interface's link whether or not the
        // address that makes its subnet connected is there yet.
        header.flags = RTNH_F_ONLINK;
        let mut message = NexthopMessage::new(NexthopOperation::New, header);
        message.attributes.extend([
            NexthopAttribute::Id(kernel_id),
            NexthopAttribute::Oif(oif),
            NexthopAttribute::Gateway(next_hop.ip),
        ]);
        self.send(
            log,
            format!("nexthop {} (id {kernel_id})", next_hop.ip),
            Request::nexthop(message, NLM_F_CREATE | NLM_F_EXCL),
            Some(delete_nexthop(kernel_id)),
        )?;
        self.nexthop_ids.insert(id, kernel_id);
        Ok(())
    }

    fn blackhole(&mut self, log: &mut UndoLog) -> SaiResult<u32> {
        if let Some(id) = self.blackhole_nexthop {
            return Ok(id);
        }
        let kernel_id = self.allocate_nexthop_id();
        // An IPv6 blackhole: IPv4 routes may use IPv6 nexthops, IPv6 routes
        // no IPv4 ones, so it serves groups of either family.
        let mut message = NexthopMessage::new(NexthopOperation::New, self.nexthop_header(libc::AF_INET6 as u8));
        message.attributes.extend([NexthopAttribute::Id(kernel_id), NexthopAttribute::Blackhole]);
        self.send(
            log,
            "the blackhole nexthop",
            Request::nexthop(message, NLM_F_CREATE | NLM_F_EXCL),
            Some(delete_nexthop(kernel_id)),
        )?;
        self.blackhole_nexthop = Some(kernel_id);
        Ok(kernel_id)
    }

    fn group_message(&self, kernel_id: u32, members: &[u32]) -> NexthopMessage {
        let mut message = NexthopMessage::new(NexthopOperation::New, self.nexthop_header(libc::AF_UNSPEC as u8));
        message.attributes.extend([
            NexthopAttribute::Id(kernel_id),
            NexthopAttribute::Group(members.iter().map(|&id| GroupMember { id, weight: 1 }).collect()),
        ]);
        message
    }

    pub(super) fn create_group(&mut self, log: &mut UndoLog, id: ObjectId) -> SaiResult<()> {
        let blackhole = self.blackhole(log)?;
        let kernel_id = self.allocate_nexthop_id();
        self.send(
            log,
            format!("nexthop group (id {kernel_id})"),
            Request::nexthop(self.group_message(kernel_id, &[blackhole]), NLM_F_CREATE | NLM_F_EXCL),
            Some(delete_nexthop(kernel_id)),
        )?;
        self.nexthop_ids.insert(id, kernel_id);
        Ok(())
    }

    /// Replaces a group's members with the store's, `extra` added and
    /// `without` left out (the store does not hold the change yet).
    pub(super) fn program_group(
        &mut self,
        store: &ObjectStore,
        log: &mut UndoLog,
        group: ObjectId,
        extra: Option<ObjectId>,
        without: Option<ObjectId>,
    ) -> SaiResult<()> {
        let kernel_id = *self.nexthop_ids.get(&group).ok_or(SaiError::UnknownObject(group))?;
        let mut old = Vec::new();
        let mut new = Vec::new();
        for (member_id, object) in store.objects_of(ObjectType::NextHopGroupMember) {
            if let Object::NextHopGroupMember(member) = object
                && member.group == group
            {
                let next_hop =
                    *self.nexthop_ids.get(&member.next_hop).ok_or(SaiError::UnknownObject(member.next_hop))?;
                old.push(next_hop);
                if Some(member_id) != without {
                    new.push(next_hop);
                }
            }
        }
        if let Some(next_hop) = extra {
            new.push(*self.nexthop_ids.get(&next_hop).ok_or(SaiError::UnknownObject(next_hop))?);
        }
        let blackhole = self.blackhole(log)?;
        if old.is_empty() {
            old.push(blackhole);
        }
        if new.is_empty() {
            new.push(blackhole);
        }
        self.send(
            log,
            format!("members of nexthop group {kernel_id}"),
            Request::nexthop(self.group_message(kernel_id, &new), NLM_F_REPLACE),
            Some(Request::nexthop(self.group_message(kernel_id, &old), NLM_F_REPLACE)),
        )
    }

    pub(super) fn remove_nexthop(&mut self, _log: &mut UndoLog, id: ObjectId) -> SaiResult<()> {
        let kernel_id = *self.nexthop_ids.get(&id).ok_or(SaiError::UnknownObject(id))?;
        match self.netlink.request(&delete_nexthop(kernel_id)) {
            Ok(()) => {}
            // Its device went and took it along.
            Err(error) if error.errno == libc::ENOENT => {}
            Err(error) => {
                return Err(kernel_error(format!("removing {} (nexthop id {kernel_id})", type_name(id)), error));
            }
        }
        self.nexthop_ids.remove(&id);
        Ok(())
    }

    fn kernel_route(&self, store: &ObjectStore, entry: &RouteEntry) -> SaiResult<KernelRoute> {
        Ok(match (entry.packet_action, entry.next_hop) {
            (PacketAction::Drop, _) => KernelRoute::Blackhole,
            (PacketAction::Trap, _) => {
                return Err(SaiError::NotSupported(
                    "the kernel backend cannot trap a prefix to the CPU (a route to the CPU port is an address \
                     of the switch)"
                        .into(),
                ));
            }
            (PacketAction::Forward, None) => {
                return Err(SaiError::InvalidAttribute {
                    object: "route entry",
                    attribute: "NEXT_HOP_ID",
                    reason: "mandatory with action forward".into(),
                });
            }
            (PacketAction::Forward, Some(id)) => match id.object_type() {
                Some(ObjectType::NextHop | ObjectType::NextHopGroup) => {
                    KernelRoute::Nexthop(*self.nexthop_ids.get(&id).ok_or(SaiError::UnknownObject(id))?)
                }
                Some(ObjectType::RouterInterface) => KernelRoute::Connected(self.router_interface(id)?.ifindex),
                Some(ObjectType::Port) if id == store.cpu_port() => KernelRoute::Nothing,
                found => {
                    return Err(SaiError::WrongObjectType {
                        attribute: "NEXT_HOP_ID",
                        id,
                        found,
                        expected: "next hop, next-hop group, router interface or CPU port",
                    });
                }
            },
        })
    }

    fn route_message(&self, key: &RouteEntryKey, route: KernelRoute) -> RouteMessage {
        let destination = key.destination;
        let mut message = RouteMessage::default();
        message.header.address_family = family_of(destination.ip());
        message.header.destination_prefix_length = destination.prefix();
        // A table past 255 travels in RTA_TABLE, as iproute2 sends it.
        let table = self.table_of(key.virtual_router);
        message.header.table = u8::try_from(table).unwrap_or(RT_TABLE_UNSPEC);
        if table > 255 {
            message.attributes.push(RouteAttribute::Table(table));
        }
        message.header.protocol = RouteProtocol::Other(self.config.protocol);
        message.header.scope = RouteScope::Universe;
        message.header.kind = RouteType::Unicast;
        message.attributes.push(RouteAttribute::Destination(route_address(destination.network())));
        match route {
            KernelRoute::Nothing => {}
            KernelRoute::Nexthop(id) => message.attributes.push(RouteAttribute::NhId(id)),
            KernelRoute::Connected(oif) => {
                message.header.scope = RouteScope::Link;
                message.attributes.push(RouteAttribute::Oif(oif));
            }
            KernelRoute::Blackhole => message.header.kind = RouteType::BlackHole,
        }
        message
    }

    pub(super) fn install_route(
        &mut self,
        store: &ObjectStore,
        log: &mut UndoLog,
        key: &RouteEntryKey,
        entry: &RouteEntry,
        old: Option<&RouteEntry>,
    ) -> SaiResult<()> {
        let new = self.kernel_route(store, entry)?;
        let old = old.map(|old| self.kernel_route(store, old)).transpose()?;
        let what = format!("route {}", key.destination);
        let message = self.route_message(key, new);
        match (old, new) {
            (None | Some(KernelRoute::Nothing), KernelRoute::Nothing) => Ok(()),
            (None | Some(KernelRoute::Nothing), _) => self.send(
                log,
                what,
                Request::route(RouteNetlinkMessage::NewRoute(message.clone()), NLM_F_CREATE | NLM_F_EXCL),
                Some(Request::route(RouteNetlinkMessage::DelRoute(message), 0)),
            ),
            (Some(old), KernelRoute::Nothing) => {
                let old = self.route_message(key, old);
                self.send(
                    log,
                    what,
                    Request::route(RouteNetlinkMessage::DelRoute(old.clone()), 0),
                    Some(Request::route(RouteNetlinkMessage::NewRoute(old), NLM_F_CREATE | NLM_F_EXCL)),
                )
            }
            (Some(old), _) => self.send(
                log,
                what,
                Request::route(RouteNetlinkMessage::NewRoute(message), NLM_F_CREATE | NLM_F_REPLACE),
                Some(Request::route(
                    RouteNetlinkMessage::NewRoute(self.route_message(key, old)),
                    NLM_F_CREATE | NLM_F_REPLACE,
                )),
            ),
        }
    }

    /// New routes in one netlink batch (a few hundred requests per
    /// datagram, rather than a request and its ack per route, as zebra's
    /// dataplane thread batches). Each request is acknowledged on its own,
    /// so a route the kernel refuses (one it has already) fails alone and
    /// leaves nothing to undo.
    pub(super) fn install_routes(
        &mut self,
        store: &ObjectStore,
        entries: &[(RouteEntryKey, RouteEntry)],
    ) -> Vec<SaiResult<()>> {
        let mut results = Vec::with_capacity(entries.len());
        let mut requests = Vec::with_capacity(entries.len());
        let mut sent = Vec::with_capacity(entries.len());
        for (key, entry) in entries {
            match self.kernel_route(store, entry) {
                Ok(KernelRoute::Nothing) => results.push(Ok(())),
                Ok(route) => {
                    sent.push((results.len(), key.destination));
                    results.push(Ok(()));
                    requests.push(Request::route(
                        RouteNetlinkMessage::NewRoute(self.route_message(key, route)),
                        NLM_F_CREATE | NLM_F_EXCL,
                    ));
                }
                Err(error) => results.push(Err(error)),
            }
        }
        for ((index, destination), outcome) in sent.into_iter().zip(self.netlink.batch(&requests)) {
            if let Err(error) = outcome {
                results[index] = Err(kernel_error(format!("route {destination}"), error));
            }
        }
        results
    }

    pub(super) fn uninstall_route(
        &mut self,
        store: &ObjectStore,
        log: &mut UndoLog,
        key: &RouteEntryKey,
        entry: &RouteEntry,
    ) -> SaiResult<()> {
        let route = match self.kernel_route(store, entry) {
            Ok(KernelRoute::Nothing) => return Ok(()),
            Ok(route) => route,
            // What it referenced is gone; the route went with it.
            Err(SaiError::UnknownObject(_)) => return Ok(()),
            Err(error) => return Err(error),
        };
        let message = self.route_message(key, route);
        match self.netlink.request(&Request::route(RouteNetlinkMessage::DelRoute(message.clone()), 0)) {
            Ok(()) => {
                log.push(Request::route(RouteNetlinkMessage::NewRoute(message), NLM_F_CREATE | NLM_F_EXCL));
                Ok(())
            }
            Err(error) if error.errno == libc::ESRCH || error.errno == libc::ENOENT => Ok(()),
            Err(error) => Err(kernel_error(format!("removing route {}", key.destination), error)),
        }
    }

    // ------------------------------------------------------------ neighbours

    pub(super) fn neighbor_message(&self, ifindex: u32, ip: IpAddr, mac: Option<[u8; 6]>) -> NeighbourMessage {
        let mut message = NeighbourMessage::default();
        message.header.family = family_of(ip);
        message.header.ifindex = ifindex;
        message.header.state = NeighbourState::Permanent;
        message.attributes.push(NeighbourAttribute::Destination(match ip {
            IpAddr::V4(ip) => NeighbourAddress::Inet(ip),
            IpAddr::V6(ip) => NeighbourAddress::Inet6(ip),
        }));
        if let Some(mac) = mac {
            message.attributes.push(NeighbourAttribute::LinkLayerAddress(mac.to_vec()));
        }
        message.attributes.push(NeighbourAttribute::Protocol(RouteProtocol::Other(self.config.protocol)));
        message
    }

    pub(super) fn install_neighbor(
        &mut self,
        log: &mut UndoLog,
        key: &NeighborEntryKey,
        entry: &NeighborEntry,
        old: Option<&NeighborEntry>,
    ) -> SaiResult<()> {
        let ifindex = self.router_interface(key.router_interface)?.ifindex;
        let message = self.neighbor_message(ifindex, key.ip, Some(entry.dst_mac_address.0));
        let undo = match old {
            Some(old) => Request::route(
                RouteNetlinkMessage::NewNeighbour(self.neighbor_message(ifindex, key.ip, Some(old.dst_mac_address.0))),
                NLM_F_CREATE | NLM_F_REPLACE,
            ),
            None => Request::route(RouteNetlinkMessage::DelNeighbour(self.neighbor_message(ifindex, key.ip, None)), 0),
        };
        self.send(
            log,
            format!("neighbour {}", key.ip),
            Request::route(RouteNetlinkMessage::NewNeighbour(message), NLM_F_CREATE | NLM_F_REPLACE),
            Some(undo),
        )
    }

    pub(super) fn uninstall_neighbor(
        &mut self,
        log: &mut UndoLog,
        key: &NeighborEntryKey,
        entry: &NeighborEntry,
    ) -> SaiResult<()> {
        let Some(ifindex) = self.router_interfaces.get(&key.router_interface).map(|n| n.ifindex) else {
            return Ok(());
        };
        match self.netlink.request(&Request::route(
            RouteNetlinkMessage::DelNeighbour(self.neighbor_message(ifindex, key.ip, None)),
            0,
        )) {
            Ok(()) => {
                log.push(Request::route(
                    RouteNetlinkMessage::NewNeighbour(self.neighbor_message(
                        ifindex,
                        key.ip,
                        Some(entry.dst_mac_address.0),
                    )),
                    NLM_F_CREATE | NLM_F_REPLACE,
                ));
                Ok(())
            }
            Err(error) if error.errno == libc::ENOENT => Ok(()),
            Err(error) => Err(kernel_error(format!("removing neighbour {}", key.ip), error)),
        }
    }

    /// Neighbours on router interfaces, static (ours) and resolved.
    pub(super) fn read_neighbors(&self) -> SaiResult<Vec<(NeighborEntryKey, NeighborInfo)>> {
        let mut out = Vec::new();
        for family in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut query = NeighbourMessage::default();
            query.header.family = family;
            let messages = self
                .netlink
                .dump(Message::Route(RouteNetlinkMessage::GetNeighbour(query)))
                .map_err(|e| kernel_error("reading the neighbour table", e))?;
            for message in messages {
                let Message::Route(RouteNetlinkMessage::NewNeighbour(neighbour)) = message else { continue };
                let Some(&router_interface) = self.rif_of_ifindex.get(&neighbour.header.ifindex) else { continue };
                let Some(record) = NeighborRecord::of(&neighbour) else { continue };
                let state = match neighbour.header.state {
                    NeighbourState::Incomplete => NeighborState::Incomplete,
                    NeighbourState::Reachable | NeighbourState::Permanent | NeighbourState::Noarp => {
                        NeighborState::Reachable
                    }
                    NeighbourState::Stale | NeighbourState::Delay => NeighborState::Stale,
                    NeighbourState::Probe => NeighborState::Probe,
                    _ => NeighborState::Failed,
                };
                out.push((
                    NeighborEntryKey { router_interface, ip: record.ip },
                    NeighborInfo {
                        mac: record.mac.map(dataplane::wire::EthernetAddress),
                        state,
                        is_static: neighbour.header.state == NeighbourState::Permanent,
                    },
                ));
            }
        }
        out.sort_by_key(|(key, _)| *key);
        Ok(out)
    }
}

/// An IP neighbour as the kernel reports it.
pub(super) struct NeighborRecord {
    pub ip: IpAddr,
    pub mac: Option<[u8; 6]>,
}

impl NeighborRecord {
    pub(super) fn of(message: &NeighbourMessage) -> Option<NeighborRecord> {
        let mut ip = None;
        let mut mac = None;
        for attribute in &message.attributes {
            match attribute {
                NeighbourAttribute::Destination(NeighbourAddress::Inet(a)) => ip = Some(IpAddr::V4(*a)),
                NeighbourAttribute::Destination(NeighbourAddress::Inet6(a)) => ip = Some(IpAddr::V6(*a)),
                NeighbourAttribute::LinkLayerAddress(m) if m.len() == 6 => {
                    mac = Some(m[..6].try_into().expect("6 bytes"))
                }
                _ => {}
            }
        }
        Some(NeighborRecord { ip: ip?, mac })
    }
}
