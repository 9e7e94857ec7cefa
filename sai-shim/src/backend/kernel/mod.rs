//! The kernel backend: the Linux kernel's bridge, vxlan and routing code as
//! the switch's dataplane, programmed over rtnetlink the way FRR's zebra
//! programs it.
//!
//! | shim object | kernel object |
//! |---|---|
//! | VLAN | a bridge `nos-vlan<VID>` (`ageing_time` = the switch's `FDB_AGING_TIME`) |
//! | port | the front-panel netdev of that name (admin state, MTU; never `eth0`) |
//! | VLAN member (port, untagged) | the port enslaved to its VLAN's bridge (bridge-port `learning` per the bridge port) |
//! | VLAN member (port, tagged) | an 802.1Q device `nos-<port>.<VID>` on the port, enslaved to the VLAN's bridge |
//! | tunnel map entry | a vxlan device `nos-vx<VNI>` per VNI (`nolearning`, local = the tunnel's source, dstport) in the VLAN's bridge |
//! | VLAN member (tunnel) | an all-zero-MAC FDB entry `dst <remote>` on the VNI's vxlan device (head-end replication); a bridge port that does not learn (EVPN's VTEPs) turns the vxlan port's `learning` off |
//! | FDB entry | a static (or dynamic) FDB entry in the VLAN's bridge; behind a remote VTEP: `dst <remote> self master extern_learn` on the vxlan device |
//! | router interface | a routed port's own netdev (its MAC and MTU), or the VLAN's bridge (the SVI) |
//! | next hop | a nexthop object (`RTM_NEWNEXTHOP`, `onlink`) |
//! | next-hop group | a nexthop group object; routes reference it, so a member change touches one object. An empty group holds the backend's blackhole nexthop |
//! | route | a route in the main table referencing its nexthop (`nhid`); connected: `scope link dev`; drop: `blackhole`; to the CPU port: nothing (the address the daemon puts on the interface makes the kernel's local route) |
//! | neighbour | a permanent neighbour entry |
//! | virtual router | the first: the main table; the others: an l3mdev VRF device `nos-vrf<TABLE>` with its own table (see [`vrf`]); their router interfaces enslaved to it, their routes in its table |
//! | tunnel map entry to a virtual router (L3VNI) | a bridge `nos-irb<VNI>` (the SVI, with the router MAC, in the VRF) holding a vxlan device `nos-vx<VNI>` (see [`l3vni`]) |
//! | next hop of type TUNNEL_ENCAP | a nexthop `via <VTEP> dev nos-irb<VNI> onlink`, a permanent neighbour VTEP -> router MAC on the SVI, an FDB entry router MAC -> VTEP on the vxlan device |
//! | ARP/ND suppression entry | `neigh_suppress on` on the VNI's vxlan port; a `noarp extern_learn` neighbour on the VLAN's SVI (see [`suppression`]) |
//!
//! That table is the per-VLAN ("traditional") model, the fallback. When the
//! switch object is created the backend tries to create one VLAN-aware
//! bridge (`vlan_filtering 1`); where the kernel can (it has
//! `CONFIG_BRIDGE_VLAN_FILTERING`) VLANs are bridge VLANs on it instead, as
//! [`vlan_aware`] maps them, and where it cannot (the kernel refuses with
//! `EOPNOTSUPP`) the bridges are one per VLAN, which works on every kernel
//! with a bridge, the SVI being the bridge itself. [`KernelBackend::bridge_mode`]
//! says which. In the per-VLAN model a port is an untagged member of at
//! most one VLAN, its `PORT_VLAN_ID`; tagged membership needs the kernel's
//! 802.1Q devices (`CONFIG_VLAN_8021Q`), and where the kernel has none the
//! kernel's refusal comes back as the error.
//!
//! Ours are marked: routes, nexthops and neighbours carry the routing
//! protocol number [`KernelConfig::protocol`], devices the name prefix
//! [`KernelConfig::device_prefix`]. When the switch object is created the
//! backend removes everything of ours it finds (what a killed daemon left)
//! and never touches anything else, so a restart with a changed config ends
//! with exactly the new config installed, foreign routes and devices intact.
//!
//! Every call either succeeds or leaves the kernel as it was: the requests
//! a call sent are undone, newest first, when a later one fails, and the
//! kernel's refusal comes back as a [`SaiError`] naming what was refused.
//!
//! Notifications come from a monitor socket (`RTNLGRP_LINK`,
//! `RTNLGRP_NEIGH`): bridge FDB learning, aging and moves, link state, and
//! neighbour resolution on router interfaces, as the same [`Notification`]s
//! the soft backend sends.

mod address;
mod bridge;
mod events;
mod l3vni;
mod link;
pub mod netlink;
pub mod nexthop_wire;
mod route;
mod suppression;
pub mod vlan_aware;
mod vrf;

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;

use dataplane::wire::{EthernetAddress, VlanId};

use self::netlink::{Monitor, Netlink, NetlinkError, Request};
use super::{Backend, FdbFlush, PortStats};
use crate::api::ObjectStore;
use crate::attributes::*;
use crate::error::{SaiError, SaiResult};
use crate::notification::{NeighborInfo, Notification};
use crate::object::{FdbEntryKey, NeighborEntryKey, ObjectId, ObjectType, RouteEntryKey, SuppressionEntryKey};

/// How the backend marks and names what it creates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelConfig {
    /// Every device the backend creates is named with this prefix.
    pub device_prefix: String,
    /// The routing protocol number of our routes, nexthops and neighbours
    /// (`RTPROT_*`; 196 is unassigned in `/etc/iproute2/rt_protos`).
    pub protocol: u8,
    /// Our nexthop ids start here (zebra's start low).
    pub nexthop_id_base: u32,
    /// The routing table of the first VRF (virtual routers but the
    /// default); the next ones count up from it.
    pub vrf_table_base: u32,
}

impl Default for KernelConfig {
    fn default() -> KernelConfig {
        KernelConfig { device_prefix: "nos-".into(), protocol: 196, nexthop_id_base: 0x4e00_0000, vrf_table_base: 1001 }
    }
}

impl KernelConfig {
    /// The bridge of a VLAN, which is also its SVI.
    pub fn bridge_name(&self, vid: VlanId) -> String {
        format!("{}vlan{vid}", self.device_prefix)
    }

    /// The 802.1Q device that carries a port's tagged VLAN.
    pub fn subinterface_name(&self, port: &str, vid: VlanId) -> String {
        format!("{}{port}.{vid}", self.device_prefix)
    }

    /// The single bridge of the VLAN-aware model.
    pub fn vlan_aware_bridge_name(&self) -> String {
        format!("{}br", self.device_prefix)
    }

    /// The VRF device of the VRF with routing table `table`.
    pub fn vrf_name(&self, table: u32) -> String {
        format!("{}vrf{table}", self.device_prefix)
    }

    /// The SVI of an L3VNI: a bridge holding its vxlan device.
    pub fn l3vni_svi_name(&self, vni: u32) -> String {
        format!("{}irb{vni}", self.device_prefix)
    }

    pub fn vxlan_name(&self, vni: u32) -> String {
        format!("{}vx{vni}", self.device_prefix)
    }
}

/// The interface front-panel ports never include: management.
pub const MANAGEMENT_INTERFACE: &str = "eth0";

/// A netdev the backend knows by index and name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Netdev {
    ifindex: u32,
    name: String,
}

/// What a call sent, with what undoes each request.
type UndoLog = Vec<Request>;

pub struct KernelBackend {
    config: KernelConfig,
    netlink: Netlink,
    monitor: Monitor,
    cpu_port: Option<ObjectId>,
    default_virtual_router: Option<ObjectId>,
    /// The other virtual routers: VRF devices with their tables.
    vrfs: HashMap<ObjectId, vrf::Vrf>,
    /// The switch's MAC (the bridges') and FDB aging time, in seconds.
    switch: Option<(EthernetAddress, u32)>,
    /// One VLAN-aware bridge, or one bridge per VLAN.
    bridge_mode: vlan_aware::BridgeMode,
    /// VLAN-aware: the MTU the backend gave the bridge (for its SVIs).
    bridge_mtu_set: Option<u32>,
    /// VLAN-aware: the bridge VLANs of each port and how it carries them.
    port_vlans: HashMap<ObjectId, BTreeMap<VlanId, TaggingMode>>,
    /// VLAN -> its bridge (in the VLAN-aware model, the one bridge).
    bridges: HashMap<VlanId, Netdev>,
    vid_of_bridge: HashMap<u32, VlanId>,
    /// Port -> the VLAN it is an untagged member of (its bridge holds it).
    untagged_vlan: HashMap<ObjectId, VlanId>,
    /// 802.1Q devices: (port, VID) -> device.
    subinterfaces: HashMap<(ObjectId, VlanId), Netdev>,
    ports: HashMap<ObjectId, Netdev>,
    port_of_ifindex: HashMap<u32, ObjectId>,
    /// Link state as last seen (`IFF_RUNNING`).
    oper_up: HashMap<ObjectId, bool>,
    vlans: HashMap<ObjectId, VlanId>,
    vlan_of_vid: HashMap<VlanId, ObjectId>,
    bridge_port_of_ifindex: HashMap<u32, ObjectId>,
    bridge_port_of_remote: HashMap<Ipv4Addr, ObjectId>,
    tunnel: Option<(ObjectId, Tunnel)>,
    /// VLAN -> (VNI, its vxlan device).
    vxlans: HashMap<VlanId, (u32, Netdev)>,
    /// L3VNIs by VNI: their SVIs and vxlan devices.
    l3vnis: HashMap<u32, l3vni::L3Vni>,
    /// Next hops across the overlay (symmetric IRB).
    tunnel_hops: HashMap<ObjectId, l3vni::TunnelHop>,
    /// ARP/ND suppression bindings: (VID, IP) -> MAC.
    suppression: HashMap<(VlanId, std::net::IpAddr), EthernetAddress>,
    router_interfaces: HashMap<ObjectId, Netdev>,
    rif_of_ifindex: HashMap<u32, ObjectId>,
    nexthop_ids: HashMap<ObjectId, u32>,
    next_nexthop_id: u32,
    /// The member of groups that have none (a group cannot be empty).
    blackhole_nexthop: Option<u32>,
    /// Per VLAN, its members behind remote VTEPs that must not learn (EVPN's):
    /// while there are any, the VNI's vxlan port has `learning off`.
    unlearning_vteps: HashMap<VlanId, usize>,
    /// MACs the bridge learned: (VID, MAC) -> the port's ifindex.
    learned: HashMap<(VlanId, EthernetAddress), u32>,
    /// Neighbours the kernel resolved on router interfaces: -> MAC.
    resolved: HashMap<(u32, std::net::IpAddr), EthernetAddress>,
    notifications: Vec<Notification>,
}

impl std::fmt::Debug for KernelBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelBackend")
            .field("config", &self.config)
            .field("bridge_mode", &self.bridge_mode)
            .field("bridges", &self.bridges)
            .finish()
    }
}

/// A kernel refusal as the shim's typed error: what we asked, and why not.
fn kernel_error(what: impl std::fmt::Display, error: NetlinkError) -> SaiError {
    if error.errno == libc::EEXIST {
        SaiError::AlreadyExists(format!("{what} (the kernel has it already: {error})"))
    } else {
        SaiError::Backend(format!("kernel refused {what}: {error}"))
    }
}

impl KernelBackend {
    /// Opens the netlink sockets; nothing is changed until the switch
    /// object is created.
    pub fn new(config: KernelConfig) -> std::io::Result<KernelBackend> {
        let netlink = Netlink::open()?;
        let monitor = Monitor::open(&[netlink::RTNLGRP_LINK, netlink::RTNLGRP_NEIGH])?;
        Ok(KernelBackend {
            next_nexthop_id: config.nexthop_id_base,
            config,
            netlink,
            monitor,
            cpu_port: None,
            default_virtual_router: None,
            vrfs: HashMap::new(),
            switch: None,
            bridge_mode: vlan_aware::BridgeMode::PerVlan,
            port_vlans: HashMap::new(),
            bridge_mtu_set: None,
            bridges: HashMap::new(),
            vid_of_bridge: HashMap::new(),
            untagged_vlan: HashMap::new(),
            subinterfaces: HashMap::new(),
            ports: HashMap::new(),
            port_of_ifindex: HashMap::new(),
            oper_up: HashMap::new(),
            vlans: HashMap::new(),
            vlan_of_vid: HashMap::new(),
            bridge_port_of_ifindex: HashMap::new(),
            bridge_port_of_remote: HashMap::new(),
            tunnel: None,
            vxlans: HashMap::new(),
            l3vnis: HashMap::new(),
            tunnel_hops: HashMap::new(),
            suppression: HashMap::new(),
            router_interfaces: HashMap::new(),
            rif_of_ifindex: HashMap::new(),
            nexthop_ids: HashMap::new(),
            blackhole_nexthop: None,
            unlearning_vteps: HashMap::new(),
            learned: HashMap::new(),
            resolved: HashMap::new(),
            notifications: Vec::new(),
        })
    }

    pub fn config(&self) -> &KernelConfig {
        &self.config
    }

    /// How VLANs map onto the kernel's bridges (`vlan-aware` or
    /// `per-vlan`), decided when the switch object was created.
    pub fn bridge_mode(&self) -> &'static str {
        self.bridge_mode.name()
    }

    /// The netdev that carries a router interface's addresses: the routed
    /// port itself or the SVI.
    pub fn router_interface_netdev(&self, rif: ObjectId) -> Option<&str> {
        self.router_interfaces.get(&rif).map(|netdev| netdev.name.as_str())
    }

    /// The kernel's ifindex of a port.
    pub fn port_ifindex(&self, port: ObjectId) -> Option<u32> {
        self.ports.get(&port).map(|netdev| netdev.ifindex)
    }

    /// Removes everything of ours from the kernel (the daemon stopping): the
    /// kernel forwards nothing for the switch afterwards. The shim's objects
    /// stay as they are; this is the end of the backend's life.
    pub fn remove_all_of_ours(&mut self) -> SaiResult<()> {
        self.remove_ours()
    }

    /// Sends `request`; on success remembers `undo` (if any) in `log`.
    fn send(
        &self,
        log: &mut UndoLog,
        what: impl std::fmt::Display,
        request: Request,
        undo: Option<Request>,
    ) -> SaiResult<()> {
        self.netlink.request(&request).map_err(|e| kernel_error(what, e))?;
        log.extend(undo);
        Ok(())
    }

    /// Undoes what a failed call sent, newest first. An undo the kernel
    /// refuses is logged: there is nothing better to do with it.
    fn roll_back(&self, log: UndoLog) {
        for request in log.into_iter().rev() {
            if let Err(error) = self.netlink.request(&request) {
                tracing::error!(%error, ?request, "kernel backend: could not undo a request of a failed call");
            }
        }
    }

    /// Runs one backend call: on error its requests are undone. (Each call
    /// records its objects only once every request succeeded; the blackhole
    /// nexthop, made on the way to a group, is the one thing to forget.)
    fn atomically(&mut self, call: impl FnOnce(&mut Self, &mut UndoLog) -> SaiResult<()>) -> SaiResult<()> {
        let mut log = UndoLog::new();
        let blackhole = self.blackhole_nexthop;
        let result = call(self, &mut log);
        if result.is_err() {
            self.roll_back(log);
            self.blackhole_nexthop = blackhole;
        }
        result
    }

    fn vid(&self, vlan: ObjectId) -> SaiResult<VlanId> {
        self.vlans.get(&vlan).copied().ok_or(SaiError::UnknownObject(vlan))
    }

    fn port(&self, port: ObjectId) -> SaiResult<&Netdev> {
        self.ports.get(&port).ok_or(SaiError::UnknownObject(port))
    }

    fn bridge(&self, vid: VlanId) -> SaiResult<&Netdev> {
        self.bridges
            .get(&vid)
            .ok_or_else(|| SaiError::Backend(format!("the kernel backend has no bridge for vlan {vid}")))
    }

    fn router_interface(&self, rif: ObjectId) -> SaiResult<&Netdev> {
        self.router_interfaces.get(&rif).ok_or(SaiError::UnknownObject(rif))
    }
}

impl Backend for KernelBackend {
    fn describe(&self) -> super::BackendDescription {
        super::BackendDescription {
            name: "kernel",
            details: vec![
                ("forwarding", "the Linux kernel's bridge, vxlan and FIB, over rtnetlink".into()),
                ("bridge_mode", self.bridge_mode.name().into()),
                ("device_prefix", self.config.device_prefix.clone()),
                ("route_protocol", self.config.protocol.to_string()),
            ],
        }
    }

    fn create(&mut self, store: &ObjectStore, id: ObjectId, object: &Object) -> SaiResult<()> {
        self.atomically(|this, log| match object {
            Object::Switch(switch) => this.create_switch(log, switch),
            Object::Port(port) => {
                if this.cpu_port.is_none() && port.name == "cpu" && id == store.cpu_port() {
                    this.cpu_port = Some(id);
                    return Ok(());
                }
                this.create_port(log, id, port)
            }
            Object::Vlan(vlan) => this.create_vlan(log, id, vlan),
            Object::BridgePort(bridge_port) => this.create_bridge_port(store, log, id, bridge_port),
            Object::VlanMember(member) => this.create_vlan_member(store, log, member),
            Object::VirtualRouter(_) => this.create_virtual_router(log, id),
            Object::RouterInterface(rif) => this.create_router_interface(log, id, rif),
            Object::NextHop(next_hop) => this.create_next_hop(log, id, next_hop),
            Object::NextHopGroup(_) => this.create_group(log, id),
            Object::NextHopGroupMember(member) => {
                this.program_group(store, log, member.group, Some(member.next_hop), None)
            }
            Object::Tunnel(tunnel) => {
                if this.tunnel.is_some() {
                    return Err(SaiError::TableFull { table: "tunnel" });
                }
                this.tunnel = Some((id, tunnel.clone()));
                Ok(())
            }
            Object::TunnelMapEntry(map) => this.create_vni_map(store, log, map),
            Object::TunnelEndpoint(_) => Ok(()),
            Object::HostInterface(_) => Err(SaiError::NotSupported(
                "the kernel backend needs no host interfaces: the kernel owns the ports".into(),
            )),
            Object::QosMap(_)
            | Object::BufferPool(_)
            | Object::BufferProfile(_)
            | Object::IngressPriorityGroup(_)
            | Object::Queue(_)
            | Object::Scheduler(_)
            | Object::Wred(_) => Err(SaiError::NotSupported(
                "the kernel backend has no traffic manager (QoS objects are the soft backend's)".into(),
            )),
        })
    }

    fn set(&mut self, store: &ObjectStore, id: ObjectId, old: &Object, new: &Object) -> SaiResult<()> {
        self.atomically(|this, log| match (old, new) {
            (Object::Switch(old), Object::Switch(new)) => this.set_switch(log, old, new),
            (Object::Port(old), Object::Port(new)) => this.set_port(store, log, id, old, new),
            (Object::BridgePort(_), Object::BridgePort(new)) => this.set_bridge_port(store, log, id, new),
            (Object::VlanMember(old), Object::VlanMember(new)) => this.set_vlan_member(store, log, old, new),
            (Object::RouterInterface(old), Object::RouterInterface(new)) => {
                this.set_router_interface(log, id, old, new)
            }
            (Object::Tunnel(old), Object::Tunnel(new)) => this.set_tunnel(log, id, old, new),
            _ => Ok(()),
        })
    }

    fn remove(&mut self, store: &ObjectStore, id: ObjectId, object: &Object) -> SaiResult<()> {
        self.atomically(|this, log| match object {
            Object::Switch(_) => this.remove_ours(),
            Object::Port(_) => {
                if let Some(netdev) = this.ports.remove(&id) {
                    this.port_of_ifindex.remove(&netdev.ifindex);
                    this.oper_up.remove(&id);
                }
                Ok(())
            }
            Object::Vlan(vlan) => this.remove_vlan(id, vlan),
            Object::BridgePort(bridge_port) => this.remove_bridge_port(store, log, id, bridge_port),
            Object::VlanMember(member) => this.remove_vlan_member(store, log, member),
            Object::VirtualRouter(_) => this.remove_virtual_router(id),
            Object::RouterInterface(rif) => this.remove_router_interface(log, id, rif),
            Object::NextHop(_) => {
                this.release_tunnel_next_hop(log, id)?;
                this.remove_nexthop(log, id)
            }
            Object::NextHopGroup(_) => this.remove_nexthop(log, id),
            Object::NextHopGroupMember(member) => this.program_group(store, log, member.group, None, Some(id)),
            Object::Tunnel(_) => {
                this.tunnel = None;
                Ok(())
            }
            Object::TunnelMapEntry(map) => this.remove_vni_map(log, map),
            Object::TunnelEndpoint(_) | Object::HostInterface(_) => Ok(()),
            Object::QosMap(_)
            | Object::BufferPool(_)
            | Object::BufferProfile(_)
            | Object::IngressPriorityGroup(_)
            | Object::Queue(_)
            | Object::Scheduler(_)
            | Object::Wred(_) => Ok(()),
        })
    }

    fn create_fdb_entry(&mut self, store: &ObjectStore, key: &FdbEntryKey, entry: &FdbEntry) -> SaiResult<()> {
        self.atomically(|this, log| this.install_fdb_entry(store, log, key, entry, false))
    }

    fn set_fdb_entry(
        &mut self,
        store: &ObjectStore,
        key: &FdbEntryKey,
        old: &FdbEntry,
        new: &FdbEntry,
    ) -> SaiResult<()> {
        self.atomically(|this, log| {
            if old.bridge_port != new.bridge_port {
                // Another device (a port or a vxlan device): remove, then add.
                this.uninstall_fdb_entry(store, log, key, old, true)?;
            }
            this.install_fdb_entry(store, log, key, new, true)
        })
    }

    fn remove_fdb_entry(&mut self, store: &ObjectStore, key: &FdbEntryKey, entry: &FdbEntry) -> SaiResult<()> {
        self.atomically(|this, log| this.uninstall_fdb_entry(store, log, key, entry, false))
    }

    fn flush_learned_fdb_entries(&mut self, store: &ObjectStore, filter: &FdbFlush) -> SaiResult<()> {
        self.flush_learned(store, filter)
    }

    fn create_route_entry(&mut self, store: &ObjectStore, key: &RouteEntryKey, entry: &RouteEntry) -> SaiResult<()> {
        self.atomically(|this, log| this.install_route(store, log, key, entry, None))
    }

    fn create_route_entries(
        &mut self,
        store: &ObjectStore,
        entries: &[(RouteEntryKey, RouteEntry)],
    ) -> Vec<SaiResult<()>> {
        self.install_routes(store, entries)
    }

    fn set_route_entry(
        &mut self,
        store: &ObjectStore,
        key: &RouteEntryKey,
        old: &RouteEntry,
        new: &RouteEntry,
    ) -> SaiResult<()> {
        self.atomically(|this, log| this.install_route(store, log, key, new, Some(old)))
    }

    fn remove_route_entry(&mut self, store: &ObjectStore, key: &RouteEntryKey, entry: &RouteEntry) -> SaiResult<()> {
        self.atomically(|this, log| this.uninstall_route(store, log, key, entry))
    }

    fn create_neighbor_entry(
        &mut self,
        _store: &ObjectStore,
        key: &NeighborEntryKey,
        entry: &NeighborEntry,
    ) -> SaiResult<()> {
        self.atomically(|this, log| this.install_neighbor(log, key, entry, None))
    }

    fn set_neighbor_entry(
        &mut self,
        _store: &ObjectStore,
        key: &NeighborEntryKey,
        old: &NeighborEntry,
        new: &NeighborEntry,
    ) -> SaiResult<()> {
        self.atomically(|this, log| this.install_neighbor(log, key, new, Some(old)))
    }

    fn remove_neighbor_entry(
        &mut self,
        _store: &ObjectStore,
        key: &NeighborEntryKey,
        entry: &NeighborEntry,
    ) -> SaiResult<()> {
        self.atomically(|this, log| this.uninstall_neighbor(log, key, entry))
    }

    fn set_suppression_entry(
        &mut self,
        store: &ObjectStore,
        key: &SuppressionEntryKey,
        mac: EthernetAddress,
    ) -> SaiResult<()> {
        self.atomically(|this, log| this.set_binding(store, log, key, mac))
    }

    fn remove_suppression_entry(&mut self, store: &ObjectStore, key: &SuppressionEntryKey) -> SaiResult<()> {
        self.atomically(|this, log| this.remove_binding(store, log, key))
    }

    fn port_oper_status(&self, port: ObjectId) -> bool {
        self.oper_up.get(&port).copied().unwrap_or(false)
    }

    fn port_stats(&self, port: ObjectId) -> SaiResult<PortStats> {
        if Some(port) == self.cpu_port {
            return Ok(PortStats::default());
        }
        self.link_stats(port)
    }

    /// The kernel's link statistics (no per-reason drops: the kernel counts
    /// none per port).
    fn port_counters(&self, port: ObjectId) -> Option<super::PortCounters> {
        self.link_counters(port)
    }

    fn fdb_entries(&self, store: &ObjectStore) -> Vec<(FdbEntryKey, FdbEntry)> {
        self.fdb_details(store).into_iter().map(|detail| (detail.key, detail.entry)).collect()
    }

    fn fdb_details(&self, _store: &ObjectStore) -> Vec<super::FdbDetail> {
        match self.read_fdb() {
            Ok(entries) => entries,
            Err(error) => {
                tracing::warn!(%error, "kernel backend: cannot read the bridge FDB");
                Vec::new()
            }
        }
    }

    fn neighbor_entries(&self, _store: &ObjectStore) -> Vec<(NeighborEntryKey, NeighborInfo)> {
        match self.read_neighbors() {
            Ok(entries) => entries,
            Err(error) => {
                tracing::warn!(%error, "kernel backend: cannot read the neighbour table");
                Vec::new()
            }
        }
    }

    fn drain_notifications(&mut self, _store: &ObjectStore, out: &mut Vec<Notification>) {
        self.read_monitor();
        out.append(&mut self.notifications);
    }
}

/// The object type of an id, for errors.
fn type_name(id: ObjectId) -> &'static str {
    id.object_type().map(ObjectType::name).unwrap_or("object")
}
