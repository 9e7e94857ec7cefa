//! Netdevs: the bridge, front-panel ports, bridge ports, SVIs and vxlan
//! devices; link statistics; the removal of what a previous run left.

use netlink_packet_core::{DefaultNla, Emitable, NLA_F_NESTED, NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::link::{
    InfoBridge, InfoData, InfoKind, InfoVxlan, LinkAttribute, LinkFlags, LinkInfo, LinkMessage,
};
use netlink_packet_route::neighbour::{NeighbourAttribute, NeighbourMessage};
use netlink_packet_route::route::{RouteAttribute, RouteMessage, RouteProtocol, RouteScope, RouteType};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::netlink::{Message, Request};
use super::nexthop_wire::{NexthopHeader, NexthopMessage, NexthopOperation};
use super::vlan_aware::{BridgeMode, vlan_aware_bridge_info};
use super::{KernelBackend, Netdev, UndoLog, kernel_error};
use crate::api::ObjectStore;
use crate::attributes::*;
use crate::backend::PortStats;
use crate::error::{SaiError, SaiResult};
use crate::notification::{FdbEvent, Notification};
use crate::object::{FdbEntryKey, ObjectId};

/// A netdev as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LinkState {
    pub ifindex: u32,
    pub name: String,
    pub up: bool,
    pub running: bool,
    pub mtu: u32,
    pub master: u32,
    pub mac: Option<[u8; 6]>,
    pub stats: Option<PortStats>,
    /// The kernel's link statistics in the pipeline's counter shape.
    pub counters: Option<crate::backend::PortCounters>,
}

impl LinkState {
    pub(super) fn of(message: &LinkMessage) -> LinkState {
        let mut state = LinkState {
            ifindex: message.header.index,
            name: String::new(),
            up: message.header.flags.contains(LinkFlags::Up),
            running: message.header.flags.contains(LinkFlags::Running),
            mtu: 0,
            master: 0,
            mac: None,
            stats: None,
            counters: None,
        };
        for attribute in &message.attributes {
            match attribute {
                LinkAttribute::IfName(name) => state.name = name.clone(),
                LinkAttribute::Mtu(mtu) => state.mtu = *mtu,
                LinkAttribute::Controller(master) => state.master = *master,
                LinkAttribute::Address(mac) if mac.len() == 6 => {
                    state.mac = Some(mac[..6].try_into().expect("6 bytes"));
                }
                LinkAttribute::Stats64(stats) => {
                    state.stats = Some(PortStats {
                        in_octets: stats.rx_bytes,
                        // The kernel counts multicast received, not sent.
                        in_ucast_pkts: stats.rx_packets.saturating_sub(stats.multicast),
                        in_non_ucast_pkts: stats.multicast,
                        in_discards: stats.rx_dropped,
                        out_octets: stats.tx_bytes,
                        out_ucast_pkts: stats.tx_packets,
                        out_non_ucast_pkts: 0,
                        out_discards: stats.tx_dropped,
                    });
                    state.counters = Some(crate::backend::PortCounters {
                        rx_packets: stats.rx_packets,
                        rx_bytes: stats.rx_bytes,
                        rx_multicast: stats.multicast,
                        rx_unicast: stats.rx_packets.saturating_sub(stats.multicast),
                        rx_drops: stats.rx_dropped,
                        tx_packets: stats.tx_packets,
                        tx_bytes: stats.tx_bytes,
                        // The kernel does not tell sent unicast from multicast.
                        tx_unicast: stats.tx_packets,
                        tx_drops: stats.tx_dropped,
                        ..Default::default()
                    });
                }
                _ => {}
            }
        }
        state
    }
}

/// `IFLA_PROTINFO` and, inside it, `IFLA_BRPORT_LEARNING`: the bridge-port
/// flag `bridge link set ... learning` sets (netlink-packet-route has no
/// emitter for it).
const IFLA_PROTINFO: u16 = 12;
const IFLA_BRPORT_LEARNING: u16 = 8;
/// `bridge link set ... neigh_suppress on`: the bridge answers ARP and NS
/// for hosts behind the port from its neighbour table, and floods none of
/// those it answered to the port.
pub(super) const IFLA_BRPORT_NEIGH_SUPPRESS: u16 = 32;

fn learning_attribute(learning: bool) -> LinkAttribute {
    bridge_port_flag(IFLA_BRPORT_LEARNING, learning)
}

/// One bridge-port flag in `IFLA_PROTINFO`.
pub(super) fn bridge_port_flag(flag: u16, on: bool) -> LinkAttribute {
    let inner = DefaultNla::new(flag, vec![u8::from(on)]);
    let mut value = vec![0; inner.buffer_len()];
    inner.emit(&mut value);
    LinkAttribute::Other(DefaultNla::new(IFLA_PROTINFO | NLA_F_NESTED, value))
}

pub(super) fn link_message(ifindex: u32) -> LinkMessage {
    let mut message = LinkMessage::default();
    message.header.index = ifindex;
    message
}

/// An `RTM_SETLINK` of an existing netdev.
pub(super) fn set_link(message: LinkMessage) -> Request {
    Request::route(RouteNetlinkMessage::SetLink(message), 0)
}

pub(super) fn admin(message: &mut LinkMessage, up: bool) {
    message.header.change_mask |= LinkFlags::Up;
    if up {
        message.header.flags |= LinkFlags::Up;
    } else {
        message.header.flags.remove(LinkFlags::Up);
    }
}

pub(super) fn delete_link(ifindex: u32) -> Request {
    Request::route(RouteNetlinkMessage::DelLink(link_message(ifindex)), 0)
}

/// How long the bridge keeps a learned MAC, in the kernel's centiseconds.
fn ageing_centiseconds(seconds: u32) -> u32 {
    seconds.saturating_mul(100)
}

impl KernelBackend {
    pub(super) fn link_by_name(&self, name: &str) -> Result<LinkState, super::netlink::NetlinkError> {
        let mut message = LinkMessage::default();
        message.attributes.push(LinkAttribute::IfName(name.to_owned()));
        match self.netlink.get(Message::Route(RouteNetlinkMessage::GetLink(message)))? {
            Message::Route(RouteNetlinkMessage::NewLink(link)) => Ok(LinkState::of(&link)),
            other => Err(super::netlink::NetlinkError {
                errno: 0,
                message: Some(format!("unexpected answer to a link query: {other:?}")),
            }),
        }
    }

    pub(super) fn link_by_index(&self, ifindex: u32) -> Result<LinkState, super::netlink::NetlinkError> {
        match self.netlink.get(Message::Route(RouteNetlinkMessage::GetLink(link_message(ifindex))))? {
            Message::Route(RouteNetlinkMessage::NewLink(link)) => Ok(LinkState::of(&link)),
            other => Err(super::netlink::NetlinkError {
                errno: 0,
                message: Some(format!("unexpected answer to a link query: {other:?}")),
            }),
        }
    }

    /// Creates a device of ours and returns it; undone by deleting it.
    pub(super) fn create_device(&self, log: &mut UndoLog, what: &str, message: LinkMessage) -> SaiResult<Netdev> {
        let name = message
            .attributes
            .iter()
            .find_map(|a| match a {
                LinkAttribute::IfName(name) => Some(name.clone()),
                _ => None,
            })
            .expect("devices of ours are created by name");
        self.netlink
            .request(&Request::route(RouteNetlinkMessage::NewLink(message), NLM_F_CREATE | NLM_F_EXCL))
            .map_err(|e| kernel_error(format!("{what} {name}"), e))?;
        let link = self.link_by_name(&name).map_err(|e| kernel_error(format!("reading back {name}"), e))?;
        log.push(delete_link(link.ifindex));
        Ok(Netdev { ifindex: link.ifindex, name })
    }

    // ------------------------------------------------------------ switch

    pub(super) fn create_switch(&mut self, log: &mut UndoLog, switch: &Switch) -> SaiResult<()> {
        // A switch routes: the namespace forwards IPv4 and IPv6, and hashes
        // ECMP on the 5-tuple as the soft pipeline does (the kernel's
        // default policy 0 hashes addresses only).
        for (path, value) in [
            ("/proc/sys/net/ipv4/ip_forward", "1"),
            ("/proc/sys/net/ipv6/conf/all/forwarding", "1"),
            ("/proc/sys/net/ipv4/fib_multipath_hash_policy", "1"),
            ("/proc/sys/net/ipv6/fib_multipath_hash_policy", "1"),
        ] {
            std::fs::write(path, value)
                .map_err(|error| SaiError::Backend(format!("kernel backend: cannot set {path} to {value}: {error}")))?;
        }
        self.remove_ours()?;
        self.switch = Some((switch.src_mac_address, switch.fdb_aging_time));
        self.bridge_mode = self.probe_vlan_aware_bridge(log, switch)?;
        self.port_vlans.clear();
        self.vrfs.clear();
        self.l3vnis.clear();
        self.tunnel_hops.clear();
        self.bridge_mtu_set = None;
        tracing::info!(
            bridge_mode = self.bridge_mode.name(),
            "kernel backend: {}",
            match self.bridge_mode {
                BridgeMode::VlanAware(_) => "VLANs are bridge VLANs on one VLAN-aware bridge",
                BridgeMode::PerVlan =>
                    "the kernel has no VLAN filtering (CONFIG_BRIDGE_VLAN_FILTERING): one bridge per VLAN",
            }
        );
        Ok(())
    }

    /// Tries to create the VLAN-aware bridge: the kernel refusing
    /// `vlan_filtering` (`EOPNOTSUPP`) means one bridge per VLAN.
    fn probe_vlan_aware_bridge(&self, log: &mut UndoLog, switch: &Switch) -> SaiResult<BridgeMode> {
        let name = self.config.vlan_aware_bridge_name();
        let mut message = LinkMessage::default();
        message.attributes.push(LinkAttribute::IfName(name.clone()));
        message.attributes.push(LinkAttribute::Address(switch.src_mac_address.0.to_vec()));
        let mut data = vlan_aware_bridge_info();
        data.push(InfoBridge::AgeingTime(ageing_centiseconds(switch.fdb_aging_time)));
        message.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Bridge),
            LinkInfo::Data(InfoData::Bridge(data)),
        ]));
        admin(&mut message, true);
        match self.netlink.request(&Request::route(RouteNetlinkMessage::NewLink(message), NLM_F_CREATE | NLM_F_EXCL)) {
            Ok(()) => {}
            Err(error) if error.errno == libc::EOPNOTSUPP => return Ok(BridgeMode::PerVlan),
            Err(error) => return Err(kernel_error(format!("create the VLAN-aware bridge {name}"), error)),
        }
        let link = self.link_by_name(&name).map_err(|e| kernel_error(format!("reading back {name}"), e))?;
        log.push(delete_link(link.ifindex));
        Ok(BridgeMode::VlanAware(Netdev { ifindex: link.ifindex, name }))
    }

    fn ageing_request(&self, bridge: u32, seconds: u32) -> Request {
        let mut message = link_message(bridge);
        message.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Bridge),
            LinkInfo::Data(InfoData::Bridge(vec![InfoBridge::AgeingTime(ageing_centiseconds(seconds))])),
        ]));
        Request::route(RouteNetlinkMessage::NewLink(message), 0)
    }

    pub(super) fn set_switch(&mut self, log: &mut UndoLog, old: &Switch, new: &Switch) -> SaiResult<()> {
        if old.fdb_aging_time != new.fdb_aging_time {
            // In the VLAN-aware model every VLAN names the one bridge.
            let mut bridges: Vec<Netdev> = self.bridges.values().cloned().collect();
            bridges.extend(self.vlan_aware_bridge().cloned());
            bridges.sort_by_key(|bridge| bridge.ifindex);
            bridges.dedup();
            for bridge in bridges {
                self.send(
                    log,
                    format!("the ageing time of {}", bridge.name),
                    self.ageing_request(bridge.ifindex, new.fdb_aging_time),
                    Some(self.ageing_request(bridge.ifindex, old.fdb_aging_time)),
                )?;
            }
        }
        self.switch = Some((new.src_mac_address, new.fdb_aging_time));
        Ok(())
    }

    // ------------------------------------------------------------ VLANs

    pub(super) fn create_vlan(&mut self, log: &mut UndoLog, id: ObjectId, vlan: &Vlan) -> SaiResult<()> {
        let (mac, aging) = self.switch.ok_or_else(|| SaiError::Backend("no switch object yet".into()))?;
        let vid = vlan.vlan_id;
        if let Some(bridge) = self.vlan_aware_bridge().cloned() {
            self.create_aware_vlan(log, &bridge, vid)?;
            self.bridges.insert(vid, bridge);
            self.vlans.insert(id, vid);
            self.vlan_of_vid.insert(vid, id);
            return Ok(());
        }
        let mut message = LinkMessage::default();
        message.attributes.push(LinkAttribute::IfName(self.config.bridge_name(vid)));
        message.attributes.push(LinkAttribute::Address(mac.0.to_vec()));
        message.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Bridge),
            LinkInfo::Data(InfoData::Bridge(vec![InfoBridge::AgeingTime(ageing_centiseconds(aging))])),
        ]));
        admin(&mut message, true);
        let bridge = self.create_device(log, &format!("create the bridge of vlan {vid}"), message)?;
        self.vid_of_bridge.insert(bridge.ifindex, vid);
        self.bridges.insert(vid, bridge);
        self.vlans.insert(id, vid);
        self.vlan_of_vid.insert(vid, id);
        Ok(())
    }

    /// The last member is gone (the store checked): the bridge goes.
    pub(super) fn remove_vlan(&mut self, id: ObjectId, vlan: &Vlan) -> SaiResult<()> {
        let vid = vlan.vlan_id;
        if let Some(bridge) = self.vlan_aware_bridge().cloned() {
            self.remove_aware_vlan(&bridge, vid)?;
            self.bridges.remove(&vid);
        } else if let Some(bridge) = self.bridges.get(&vid) {
            match self.netlink.request(&delete_link(bridge.ifindex)) {
                Ok(()) => {}
                Err(error) if error.errno == libc::ENODEV => {}
                Err(error) => return Err(kernel_error(format!("delete {}", bridge.name), error)),
            }
            self.vid_of_bridge.remove(&bridge.ifindex);
            self.bridges.remove(&vid);
        }
        self.vlans.remove(&id);
        self.vlan_of_vid.remove(&vid);
        self.learned.retain(|(learned_vid, _), _| *learned_vid != vid);
        Ok(())
    }

    /// Removes every object of ours in the kernel: routes, nexthops and
    /// neighbours with our protocol number, devices with our prefix (which
    /// takes their FDB entries and VLANs along, and frees the ports they
    /// held). Foreign objects are never touched.
    pub(super) fn remove_ours(&mut self) -> SaiResult<()> {
        let protocol = self.config.protocol;
        let dump = |message: Message| self.netlink.dump(message).map_err(|e| kernel_error("a dump", e));
        let mut doomed: Vec<Request> = Vec::new();
        for family in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut query = RouteMessage::default();
            query.header.address_family = family;
            for message in dump(Message::Route(RouteNetlinkMessage::GetRoute(query)))? {
                if let Message::Route(RouteNetlinkMessage::NewRoute(route)) = message
                    && route.header.protocol == RouteProtocol::Other(protocol)
                {
                    // The prefix, table and protocol name it; the dump's
                    // nexthop details would be refused next to its nhid.
                    let mut delete = RouteMessage::default();
                    delete.header = route.header;
                    delete.header.scope = RouteScope::NoWhere;
                    delete.header.kind = RouteType::Unspec;
                    delete.header.flags = Default::default();
                    delete.attributes = route
                        .attributes
                        .into_iter()
                        .filter(|a| matches!(a, RouteAttribute::Destination(_) | RouteAttribute::Table(_)))
                        .collect();
                    doomed.push(Request::route(RouteNetlinkMessage::DelRoute(delete), 0));
                }
            }
            let mut query = NeighbourMessage::default();
            query.header.family = family;
            for message in dump(Message::Route(RouteNetlinkMessage::GetNeighbour(query)))? {
                if let Message::Route(RouteNetlinkMessage::NewNeighbour(neighbour)) = message
                    && neighbour
                        .attributes
                        .iter()
                        .any(|a| matches!(a, NeighbourAttribute::Protocol(p) if *p == RouteProtocol::Other(protocol)))
                {
                    doomed.push(Request::route(RouteNetlinkMessage::DelNeighbour(neighbour), 0));
                }
            }
        }
        // Groups before their members.
        let mut nexthops: Vec<NexthopMessage> =
            dump(Message::Nexthop(NexthopMessage::new(NexthopOperation::Get, NexthopHeader::default())))?
                .into_iter()
                .filter_map(|message| match message {
                    Message::Nexthop(nexthop) if nexthop.header.protocol == protocol => Some(nexthop),
                    _ => None,
                })
                .collect();
        nexthops.sort_by_key(|nexthop| nexthop.group().is_none());
        for nexthop in nexthops {
            if let Some(id) = nexthop.id() {
                let mut delete = NexthopMessage::new(NexthopOperation::Delete, NexthopHeader::default());
                delete.attributes.push(super::nexthop_wire::NexthopAttribute::Id(id));
                doomed.push(Request::nexthop(delete, 0));
            }
        }
        for message in dump(Message::Route(RouteNetlinkMessage::GetLink(LinkMessage::default())))? {
            if let Message::Route(RouteNetlinkMessage::NewLink(link)) = message {
                let link = LinkState::of(&link);
                if link.name.starts_with(&self.config.device_prefix) {
                    doomed.push(delete_link(link.ifindex));
                }
            }
        }
        let count = doomed.len();
        for (request, result) in doomed.iter().zip(self.netlink.batch(&doomed)) {
            // Gone already (a route with its device, a member with its group).
            if let Err(error) = result
                && ![libc::ENOENT, libc::ENODEV, libc::ESRCH].contains(&error.errno)
            {
                return Err(kernel_error(format!("removing a stale object of ours ({request:?})"), error));
            }
        }
        if count > 0 {
            tracing::info!(objects = count, "kernel backend: removed what a previous run left");
        }
        Ok(())
    }

    // ------------------------------------------------------------ ports

    pub(super) fn create_port(&mut self, log: &mut UndoLog, id: ObjectId, port: &Port) -> SaiResult<()> {
        if port.name == super::MANAGEMENT_INTERFACE {
            return Err(SaiError::InvalidAttribute {
                object: "port",
                attribute: "NAME",
                reason: format!("{} is the management interface; the kernel backend never takes it", port.name),
            });
        }
        let link = self.link_by_name(&port.name).map_err(|error| SaiError::InvalidAttribute {
            object: "port",
            attribute: "NAME",
            reason: format!("no netdev {} in the kernel ({error})", port.name),
        })?;
        let mut change = link_message(link.ifindex);
        admin(&mut change, port.admin_state);
        change.attributes.push(LinkAttribute::Mtu(u32::from(port.mtu)));
        let mut undo = link_message(link.ifindex);
        admin(&mut undo, link.up);
        undo.attributes.push(LinkAttribute::Mtu(link.mtu));
        self.send(log, format!("admin state and MTU of {}", port.name), set_link(change), Some(set_link(undo)))?;
        self.ports.insert(id, Netdev { ifindex: link.ifindex, name: port.name.clone() });
        self.port_of_ifindex.insert(link.ifindex, id);
        self.oper_up.insert(id, link.running);
        Ok(())
    }

    pub(super) fn set_port(
        &mut self,
        store: &ObjectStore,
        log: &mut UndoLog,
        id: ObjectId,
        old: &Port,
        new: &Port,
    ) -> SaiResult<()> {
        let ifindex = self.port(id)?.ifindex;
        if old.admin_state != new.admin_state || old.mtu != new.mtu {
            let message = |port: &Port| {
                let mut message = link_message(ifindex);
                admin(&mut message, port.admin_state);
                message.attributes.push(LinkAttribute::Mtu(u32::from(port.mtu)));
                set_link(message)
            };
            self.send(log, format!("admin state and MTU of {}", new.name), message(new), Some(message(old)))?;
        }
        if old.port_vlan_id != new.port_vlan_id && self.vlan_aware_bridge().is_some() {
            let netdev = self.port(id)?.clone();
            return self.move_aware_pvid(log, id, &netdev, old.port_vlan_id, new.port_vlan_id);
        }
        if old.port_vlan_id != new.port_vlan_id
            && let Some(vid) = self.untagged_vlan.get(&id)
        {
            // The port's untagged frames are bridged where the port is.
            let _ = store;
            return Err(SaiError::NotSupported(format!(
                "the kernel backend cannot move {}'s PORT_VLAN_ID while it is an untagged member of vlan {vid}",
                new.name
            )));
        }
        Ok(())
    }

    pub(super) fn link_counters(&self, port: ObjectId) -> Option<crate::backend::PortCounters> {
        let netdev = self.ports.get(&port)?;
        self.link_by_index(netdev.ifindex).ok()?.counters
    }

    pub(super) fn link_stats(&self, port: ObjectId) -> SaiResult<PortStats> {
        let netdev = self.port(port)?;
        let link =
            self.link_by_index(netdev.ifindex).map_err(|e| kernel_error(format!("stats of {}", netdev.name), e))?;
        Ok(link.stats.unwrap_or_default())
    }

    // ------------------------------------------------------------ bridge ports

    pub(super) fn enslave(&self, log: &mut UndoLog, netdev: &Netdev, bridge: &Netdev) -> SaiResult<()> {
        let mut change = link_message(netdev.ifindex);
        change.attributes.push(LinkAttribute::Controller(bridge.ifindex));
        let mut undo = link_message(netdev.ifindex);
        undo.attributes.push(LinkAttribute::Controller(0));
        self.send(log, format!("{} into {}", netdev.name, bridge.name), set_link(change), Some(set_link(undo)))
    }

    pub(super) fn release(&self, log: &mut UndoLog, netdev: &Netdev, bridge: &Netdev) -> SaiResult<()> {
        let mut change = link_message(netdev.ifindex);
        change.attributes.push(LinkAttribute::Controller(0));
        let mut undo = link_message(netdev.ifindex);
        undo.attributes.push(LinkAttribute::Controller(bridge.ifindex));
        self.send(log, format!("{} out of {}", netdev.name, bridge.name), set_link(change), Some(set_link(undo)))
    }

    /// A bridge port's learning flag on a netdev in a bridge (on by default).
    pub(super) fn set_learning(&self, log: &mut UndoLog, netdev: &Netdev, learning: bool) -> SaiResult<()> {
        let message = |learning| {
            let mut message = link_message(netdev.ifindex);
            message.header.interface_family = AddressFamily::Bridge;
            message.attributes.push(learning_attribute(learning));
            set_link(message)
        };
        self.send(log, format!("learning on {}", netdev.name), message(learning), Some(message(!learning)))
    }

    /// The netdevs a port's bridge port puts in bridges: the port itself
    /// (untagged member) and its 802.1Q devices (tagged members).
    pub(super) fn bridged_netdevs(&self, port: ObjectId) -> Vec<Netdev> {
        let mut out = Vec::new();
        if (self.untagged_vlan.contains_key(&port) || self.port_vlans.contains_key(&port))
            && let Some(netdev) = self.ports.get(&port)
        {
            out.push(netdev.clone());
        }
        out.extend(self.subinterfaces.iter().filter(|((p, _), _)| *p == port).map(|(_, netdev)| netdev.clone()));
        out
    }

    pub(super) fn create_bridge_port(
        &mut self,
        store: &ObjectStore,
        _log: &mut UndoLog,
        id: ObjectId,
        bridge_port: &BridgePort,
    ) -> SaiResult<()> {
        match bridge_port.bridge_port_type {
            BridgePortType::Port(port) => {
                // The port joins bridges with its VLAN memberships.
                let ifindex = self.port(port)?.ifindex;
                self.bridge_port_of_ifindex.insert(ifindex, id);
            }
            BridgePortType::Tunnel(endpoint) => {
                let endpoint = store.tunnel_endpoint(endpoint).ok_or(SaiError::UnknownObject(endpoint))?;
                self.bridge_port_of_remote.insert(endpoint.remote_ip, id);
            }
        }
        Ok(())
    }

    pub(super) fn set_bridge_port(
        &mut self,
        _store: &ObjectStore,
        log: &mut UndoLog,
        _id: ObjectId,
        bridge_port: &BridgePort,
    ) -> SaiResult<()> {
        if let BridgePortType::Port(port) = bridge_port.bridge_port_type {
            for netdev in self.bridged_netdevs(port) {
                self.set_learning(log, &netdev, bridge_port.learning)?;
            }
        }
        Ok(())
    }

    pub(super) fn remove_bridge_port(
        &mut self,
        store: &ObjectStore,
        _log: &mut UndoLog,
        id: ObjectId,
        bridge_port: &BridgePort,
    ) -> SaiResult<()> {
        match bridge_port.bridge_port_type {
            BridgePortType::Port(port) => {
                // Its VLAN members are gone (the store checked), and with
                // them its place in the bridges and the MACs behind it.
                let ifindex = self.port(port)?.ifindex;
                self.bridge_port_of_ifindex.retain(|_, bridge_port| *bridge_port != id);
                self.forget_learned(|_, _, learned_on| learned_on == ifindex, Some(id), store);
            }
            BridgePortType::Tunnel(endpoint) => {
                if let Some(endpoint) = store.tunnel_endpoint(endpoint) {
                    self.bridge_port_of_remote.remove(&endpoint.remote_ip);
                }
            }
        }
        Ok(())
    }

    /// Drops learned MACs that `doomed` selects from our table and reports
    /// them flushed (the kernel removed them itself, or is about to).
    pub(super) fn forget_learned(
        &mut self,
        doomed: impl Fn(u16, &dataplane::wire::EthernetAddress, u32) -> bool,
        bridge_port: Option<ObjectId>,
        _store: &ObjectStore,
    ) {
        let gone: Vec<((u16, dataplane::wire::EthernetAddress), u32)> = self
            .learned
            .iter()
            .filter(|((vid, mac), ifindex)| doomed(*vid, mac, **ifindex))
            .map(|(key, ifindex)| (*key, *ifindex))
            .collect();
        for ((vid, mac), ifindex) in gone {
            self.learned.remove(&(vid, mac));
            if let Some(&vlan) = self.vlan_of_vid.get(&vid) {
                self.notifications.push(Notification::Fdb {
                    event: FdbEvent::Flushed,
                    entry: FdbEntryKey { vlan, mac },
                    bridge_port: bridge_port.or_else(|| self.bridge_port_of_ifindex.get(&ifindex).copied()),
                });
            }
        }
    }

    // ------------------------------------------------------------ router interfaces

    pub(super) fn create_router_interface(
        &mut self,
        log: &mut UndoLog,
        id: ObjectId,
        rif: &RouterInterface,
    ) -> SaiResult<()> {
        let netdev = match rif.rif_type {
            RouterInterfaceType::Port(port) => {
                let netdev = self.port(port)?.clone();
                let link = self
                    .link_by_index(netdev.ifindex)
                    .map_err(|e| kernel_error(format!("reading {}", netdev.name), e))?;
                let mut change = link_message(netdev.ifindex);
                change.attributes.push(LinkAttribute::Address(rif.src_mac_address.0.to_vec()));
                change.attributes.push(LinkAttribute::Mtu(u32::from(rif.mtu)));
                let mut undo = link_message(netdev.ifindex);
                if let Some(mac) = link.mac {
                    undo.attributes.push(LinkAttribute::Address(mac.to_vec()));
                }
                undo.attributes.push(LinkAttribute::Mtu(link.mtu));
                self.send(log, format!("MAC and MTU of {}", netdev.name), set_link(change), Some(set_link(undo)))?;
                netdev
            }
            RouterInterfaceType::Vlan(vlan) if self.vlan_aware_bridge().is_some() => {
                let bridge = self.vlan_aware_bridge().cloned().expect("checked");
                let vid = self.vid(vlan)?;
                let svi = self.create_aware_svi(log, &bridge, vid, rif)?;
                self.install_kept_bindings(log, &svi, vid)?;
                svi
            }
            RouterInterfaceType::Vlan(vlan) => {
                // The VLAN's bridge is its SVI: it takes the router
                // interface's MAC and MTU.
                let bridge = self.bridge(self.vid(vlan)?)?.clone();
                let link = self
                    .link_by_index(bridge.ifindex)
                    .map_err(|e| kernel_error(format!("reading {}", bridge.name), e))?;
                let mut change = link_message(bridge.ifindex);
                change.attributes.push(LinkAttribute::Address(rif.src_mac_address.0.to_vec()));
                change.attributes.push(LinkAttribute::Mtu(u32::from(rif.mtu)));
                admin(&mut change, rif.admin_state);
                let mut undo = link_message(bridge.ifindex);
                if let Some(mac) = link.mac {
                    undo.attributes.push(LinkAttribute::Address(mac.to_vec()));
                }
                undo.attributes.push(LinkAttribute::Mtu(link.mtu));
                admin(&mut undo, link.up);
                self.send(log, format!("MAC and MTU of {}", bridge.name), set_link(change), Some(set_link(undo)))?;
                bridge
            }
        };
        self.join_vrf(log, &netdev, rif.virtual_router)?;
        self.rif_of_ifindex.insert(netdev.ifindex, id);
        self.router_interfaces.insert(id, netdev);
        Ok(())
    }

    pub(super) fn set_router_interface(
        &mut self,
        log: &mut UndoLog,
        id: ObjectId,
        old: &RouterInterface,
        new: &RouterInterface,
    ) -> SaiResult<()> {
        let netdev = self.router_interface(id)?.clone();
        if matches!(new.rif_type, RouterInterfaceType::Vlan(_)) {
            self.make_room_for_svi_mtu(log, new.mtu)?;
        }
        let message = |rif: &RouterInterface| {
            let mut message = link_message(netdev.ifindex);
            message.attributes.push(LinkAttribute::Address(rif.src_mac_address.0.to_vec()));
            message.attributes.push(LinkAttribute::Mtu(u32::from(rif.mtu)));
            if matches!(rif.rif_type, RouterInterfaceType::Vlan(_)) {
                // A routed port's admin state is the port's.
                admin(&mut message, rif.admin_state);
            }
            set_link(message)
        };
        self.send(log, format!("router interface {}", netdev.name), message(new), Some(message(old)))?;
        if let (RouterInterfaceType::Vlan(vlan), Some(bridge)) = (new.rif_type, self.vlan_aware_bridge().cloned())
            && old.src_mac_address != new.src_mac_address
        {
            let vid = self.vid(vlan)?;
            self.remove_svi_local_entry(log, &bridge, vid, old.src_mac_address)?;
            self.add_svi_local_entry(log, &bridge, vid, new.src_mac_address)?;
        }
        Ok(())
    }

    pub(super) fn remove_router_interface(
        &mut self,
        log: &mut UndoLog,
        id: ObjectId,
        rif: &RouterInterface,
    ) -> SaiResult<()> {
        let netdev = self.router_interface(id)?.clone();
        if let (RouterInterfaceType::Vlan(vlan), Some(bridge)) = (rif.rif_type, self.vlan_aware_bridge().cloned()) {
            let vid = self.vid(vlan)?;
            self.remove_svi_local_entry(log, &bridge, vid, rif.src_mac_address)?;
            // The SVI device of the VLAN-aware model goes. Deleting a
            // device cannot be undone; it is the call's last request.
            match self.netlink.request(&delete_link(netdev.ifindex)) {
                Ok(()) => {}
                Err(error) if error.errno == libc::ENODEV => {}
                Err(error) => return Err(kernel_error(format!("delete {}", netdev.name), error)),
            }
        } else {
            self.leave_vrf(log, &netdev, rif.virtual_router)?;
        }
        self.router_interfaces.remove(&id);
        self.rif_of_ifindex.remove(&netdev.ifindex);
        self.resolved.retain(|(ifindex, _), _| *ifindex != netdev.ifindex);
        Ok(())
    }

    // ------------------------------------------------------------ VXLAN

    pub(super) fn create_vni_map(
        &mut self,
        store: &ObjectStore,
        log: &mut UndoLog,
        map: &TunnelMapEntry,
    ) -> SaiResult<()> {
        let vlan = match map.value {
            TunnelMapValue::Vlan(vlan) => vlan,
            TunnelMapValue::VirtualRouter(virtual_router) => {
                return self.create_l3vni(store, log, map.vni, virtual_router);
            }
        };
        let vid = self.vid(vlan)?;
        let (_, tunnel) = self.tunnel.clone().ok_or(SaiError::UnknownObject(map.tunnel))?;
        let mut message = super::l3vni::vxlan_message(&self.config.vxlan_name(map.vni), map.vni, &tunnel);
        message.attributes.push(LinkAttribute::Controller(self.bridge(vid)?.ifindex));
        let netdev = self.create_device(log, "create the vxlan device", message)?;
        if self.vlan_aware_bridge().is_some() {
            self.attach_aware_vxlan(log, &netdev, vid)?;
        }
        self.set_neigh_suppress(log, &netdev)?;
        if self.unlearning_vteps.get(&vid).is_some_and(|count| *count > 0) {
            self.set_learning(log, &netdev, false)?;
        }
        self.vxlans.insert(vid, (map.vni, netdev));
        Ok(())
    }

    pub(super) fn remove_vni_map(&mut self, log: &mut UndoLog, map: &TunnelMapEntry) -> SaiResult<()> {
        let vlan = match map.value {
            TunnelMapValue::Vlan(vlan) => vlan,
            TunnelMapValue::VirtualRouter(_) => return self.remove_l3vni(map.vni),
        };
        let vid = self.vid(vlan)?;
        let _ = log;
        if let Some((_, netdev)) = self.vxlans.get(&vid) {
            self.netlink
                .request(&delete_link(netdev.ifindex))
                .map_err(|e| kernel_error(format!("delete {}", netdev.name), e))?;
            let ifindex = netdev.ifindex;
            self.vxlans.remove(&vid);
            self.learned.retain(|_, learned_on| *learned_on != ifindex);
        }
        Ok(())
    }

    pub(super) fn set_tunnel(&mut self, log: &mut UndoLog, id: ObjectId, old: &Tunnel, new: &Tunnel) -> SaiResult<()> {
        let mut devices: Vec<(u32, Netdev)> = self.vxlans.values().cloned().collect();
        devices.extend(self.l3vnis.iter().map(|(vni, l3vni)| (*vni, l3vni.vxlan.clone())));
        for (vni, netdev) in devices {
            let message = |tunnel: &Tunnel| {
                let mut message = link_message(netdev.ifindex);
                message.attributes.push(LinkAttribute::LinkInfo(vec![
                    LinkInfo::Kind(InfoKind::Vxlan),
                    LinkInfo::Data(InfoData::Vxlan(vec![
                        InfoVxlan::Id(vni),
                        InfoVxlan::Local(tunnel.encap_src_ip),
                        InfoVxlan::Port(tunnel.udp_dst_port),
                    ])),
                ]));
                Request::route(RouteNetlinkMessage::NewLink(message), 0)
            };
            self.send(log, format!("source and port of {}", netdev.name), message(new), Some(message(old)))?;
        }
        self.tunnel = Some((id, new.clone()));
        Ok(())
    }
}
