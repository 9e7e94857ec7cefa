//! The soft backend: programs this project's forwarding pipeline
//! ([`dataplane::pipeline::Switch`]).
//!
//! It owns the `Switch`, gives every port, router interface, next hop and
//! group a dense pipeline index (indices are reused, object ids never are),
//! and exposes the packet entry points an I/O adapter drives: a frame
//! received on a port ([`SoftBackend::process`]), a frame the host sends
//! through a host interface ([`SoftBackend::host_send`]), timers
//! ([`SoftBackend::poll`]) and link changes ([`SoftBackend::set_link_status`]).
//! What the pipeline reports (learning, aging, neighbour resolution) comes
//! back as shim [`Notification`]s, with pipeline indices turned into ids.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};

use dataplane::node::QosStats;
use qos::tm::TmConfig;
use qos::watchdog::{WatchdogEvent, WatchdogEventKind};

use dataplane::pipeline::{
    self, DEFAULT_VRF, Disposition, DropCounters, Egress, Event, FdbDest, FdbKind, NextHopGroupId, NextHopId, Output,
    PortConfig, PortCounters, PortId, RifId, RifKind, RouteTarget, SwitchConfig, TableError, TxFrame, VrfId,
    VtepConfig,
};
use dataplane::wire::{EthernetAddress, VlanId};

use super::{Backend, FdbFlush, PortStats, QosReport};
use crate::api::ObjectStore;
use crate::attributes::*;
use crate::error::{SaiError, SaiResult};
use crate::notification::{FdbEvent, NeighborInfo, NeighborState, Notification, PfcDeadlockEvent};
use crate::object::{FdbEntryKey, NeighborEntryKey, ObjectId, ObjectType, RouteEntryKey, SuppressionEntryKey};

/// Hands out dense indices below a limit, reusing released ones (lowest
/// first, so small tables stay small) in O(log n).
#[derive(Debug, Default)]
struct DenseIndex {
    limit: usize,
    owners: Vec<Option<ObjectId>>,
    free: std::collections::BTreeSet<u32>,
    of: HashMap<ObjectId, u32>,
}

impl DenseIndex {
    fn with_limit(limit: usize) -> DenseIndex {
        DenseIndex { limit, ..DenseIndex::default() }
    }

    fn allocate(&mut self, id: ObjectId, table: &'static str) -> SaiResult<u32> {
        let slot = match self.free.pop_first() {
            Some(slot) => slot,
            None if self.owners.len() < self.limit => {
                self.owners.push(None);
                (self.owners.len() - 1) as u32
            }
            None => return Err(SaiError::TableFull { table }),
        };
        self.owners[slot as usize] = Some(id);
        self.of.insert(id, slot);
        Ok(slot)
    }

    fn release(&mut self, id: ObjectId) {
        if let Some(slot) = self.of.remove(&id) {
            self.owners[slot as usize] = None;
            self.free.insert(slot);
        }
    }

    fn get(&self, id: ObjectId) -> Option<u32> {
        self.of.get(&id).copied()
    }

    fn owner(&self, index: u32) -> Option<ObjectId> {
        self.owners.get(index as usize).copied().flatten()
    }
}

/// Where a host interface's traffic goes in the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum HostTarget {
    Port(PortId),
    RouterInterface(RifId),
}

pub struct SoftBackend {
    config: SwitchConfig,
    switch: pipeline::Switch,
    /// The latest time the caller gave; stamps control-plane FDB entries.
    now: u64,
    cpu_port: Option<ObjectId>,
    /// Virtual routers as pipeline VRFs; the first (the switch's default
    /// virtual router, created with the switch) is VRF 0.
    vrfs: DenseIndex,
    ports: DenseIndex,
    rifs: DenseIndex,
    next_hops: DenseIndex,
    groups: DenseIndex,
    vlans: HashMap<ObjectId, VlanId>,
    vlan_of_vid: HashMap<VlanId, ObjectId>,
    bridge_port_of_port: HashMap<PortId, ObjectId>,
    bridge_port_of_remote: HashMap<Ipv4Addr, ObjectId>,
    tunnel: Option<ObjectId>,
    host_interfaces: HashMap<ObjectId, HostTarget>,
    host_interface_of: HashMap<HostTarget, ObjectId>,
    notifications: Vec<Notification>,
    /// The traffic manager's counters as the forwarding thread last copied them.
    qos_stats: Arc<Mutex<Option<QosStats>>>,
    /// PFC watchdog events the forwarding thread handed over, oldest first.
    watchdog_events: Arc<Mutex<Vec<WatchdogEvent>>>,
}

fn table_error(error: TableError, table: &'static str, attribute: &'static str) -> SaiError {
    match error {
        TableError::Full => SaiError::TableFull { table },
        TableError::Invalid(why) => SaiError::InvalidAttribute { object: table, attribute, reason: why.into() },
        TableError::NotFound => SaiError::Backend(format!("{table}: the pipeline has no such entry")),
        TableError::InUse => SaiError::Backend(format!("{table}: still in use in the pipeline")),
    }
}

impl SoftBackend {
    /// A backend whose pipeline has the given table sizes and timers. The FDB
    /// aging time is the switch object's `FDB_AGING_TIME`.
    pub fn new(config: SwitchConfig) -> SoftBackend {
        SoftBackend {
            switch: pipeline::Switch::new(config.clone()),
            ports: DenseIndex::with_limit(usize::from(config.max_ports)),
            rifs: DenseIndex::with_limit(usize::from(config.max_router_interfaces)),
            // The pipeline gives next hops and groups no table size of their
            // own; a route uses at most one of each, so the route table's
            // size bounds them (with room to spare on tiny test tables).
            next_hops: DenseIndex::with_limit(config.route_capacity.max(4096)),
            groups: DenseIndex::with_limit(config.route_capacity.max(4096)),
            vrfs: DenseIndex::with_limit(usize::from(config.max_vrfs)),
            config,
            now: 0,
            cpu_port: None,
            vlans: HashMap::new(),
            vlan_of_vid: HashMap::new(),
            bridge_port_of_port: HashMap::new(),
            bridge_port_of_remote: HashMap::new(),
            tunnel: None,
            host_interfaces: HashMap::new(),
            host_interface_of: HashMap::new(),
            notifications: Vec::new(),
            qos_stats: Arc::default(),
            watchdog_events: Arc::default(),
        }
    }

    /// The pipeline, read-only: for show commands and tests of its tables.
    pub fn pipeline(&self) -> &pipeline::Switch {
        &self.switch
    }

    /// The pipeline, programmed: the simulator (`labs sim`) drives it
    /// bare, as switchd's forwarding thread drives it through the shim.
    pub fn into_pipeline(self) -> pipeline::Switch {
        self.switch
    }

    /// The `qos` traffic manager's configuration from the QoS objects and
    /// port speeds, ports by pipeline index; `None` when nothing is
    /// configured (forwarding then runs the FIFO).
    pub fn tm_config(&self, store: &ObjectStore) -> SaiResult<Option<TmConfig>> {
        crate::qos::tm_config(store, |port| self.port_index(port), |group| self.groups.get(group))
    }

    /// Where whoever runs the traffic manager publishes its counters for
    /// [`Backend::qos_report`].
    pub fn qos_stats_slot(&self) -> Arc<Mutex<Option<QosStats>>> {
        self.qos_stats.clone()
    }

    /// Where whoever runs the traffic manager hands over its PFC watchdog
    /// events, which come back as [`Notification::QueuePfcDeadlock`].
    pub fn watchdog_events_slot(&self) -> Arc<Mutex<Vec<WatchdogEvent>>> {
        self.watchdog_events.clone()
    }

    /// The watchdog events handed over since the last call, as
    /// notifications naming the queue objects (the port's queue of that
    /// index; an event for a queue with no object is left out).
    fn translate_watchdog_events(&mut self, store: &ObjectStore) {
        let events = std::mem::take(&mut *self.watchdog_events.lock().unwrap_or_else(|e| e.into_inner()));
        for event in events {
            let Some(port) = self.port_object(event.port) else { continue };
            let queue = store.objects_of(ObjectType::Queue).find_map(|(id, object)| match object {
                Object::Queue(q) if q.port == port && q.index == event.queue => Some(id),
                _ => None,
            });
            let Some(queue) = queue else { continue };
            let event_type = match event.kind {
                WatchdogEventKind::StormDetected => PfcDeadlockEvent::Detected,
                WatchdogEventKind::StormRestored => PfcDeadlockEvent::Recovered,
            };
            self.notifications.push(Notification::QueuePfcDeadlock {
                queue,
                port,
                index: event.queue,
                event: event_type,
            });
        }
    }

    /// Installs the ECMP path-quality source (DLB), or removes it.
    pub fn set_path_quality(&mut self, quality: Option<Box<dyn dataplane::pipeline::PathQuality>>) {
        self.switch.set_path_quality(quality);
    }

    /// The pipeline index of a port (the I/O adapter's port number).
    pub fn port_index(&self, port: ObjectId) -> Option<PortId> {
        self.ports.get(port).map(|index| index as PortId)
    }

    /// The port object behind a pipeline index.
    pub fn port_object(&self, index: PortId) -> Option<ObjectId> {
        self.ports.owner(u32::from(index))
    }

    pub fn router_interface_index(&self, rif: ObjectId) -> Option<RifId> {
        self.rifs.get(rif).map(|index| index as RifId)
    }

    /// The host interface a punted frame is for: the router interface's if
    /// the frame came through one that has a host interface, else the port's.
    pub fn punt_host_interface(&self, egress: &Egress) -> Option<ObjectId> {
        match *egress {
            Egress::Host { port, rif, .. } => rif
                .and_then(|rif| self.host_interface_of.get(&HostTarget::RouterInterface(rif)))
                .or_else(|| self.host_interface_of.get(&HostTarget::Port(port)))
                .copied(),
            Egress::Port(_) => None,
        }
    }

    /// Forwards a frame received on `port` at `now`; emitted frames are
    /// appended to `out`. A port id the backend does not know is dropped and
    /// counted as an unknown port.
    pub fn process(&mut self, now: u64, port: ObjectId, frame: &[u8], out: &mut Output) -> Disposition {
        self.now = self.now.max(now);
        let index = self.port_index(port).unwrap_or(PortId::MAX);
        self.switch.process(now, index, frame, out)
    }

    /// The same by pipeline index, for an I/O loop that already has it.
    pub fn process_index(&mut self, now: u64, port: PortId, frame: &[u8], out: &mut Output) -> Disposition {
        self.now = self.now.max(now);
        self.switch.process(now, port, frame, out)
    }

    /// A frame the host wrote to a host interface (SAI hostif tx): sent out
    /// of its port as is, or, for a router interface's host interface,
    /// bridged in the router interface's VLAN from the CPU.
    pub fn host_send(&mut self, now: u64, host_interface: ObjectId, frame: &[u8], out: &mut Output) -> SaiResult<()> {
        self.now = self.now.max(now);
        let Some(target) = self.host_interfaces.get(&host_interface).copied() else {
            return Err(match host_interface.object_type() {
                Some(ObjectType::HostInterface) | None => SaiError::UnknownObject(host_interface),
                found => SaiError::WrongObjectType {
                    attribute: "host_interface",
                    id: host_interface,
                    found,
                    expected: ObjectType::HostInterface.name(),
                },
            });
        };
        match target {
            HostTarget::Port(port) => self.switch.send_from_host(now, port, frame, out),
            HostTarget::RouterInterface(rif) => self.switch.send_from_host_on_rif(now, rif, frame, out),
        }
        Ok(())
    }

    /// Advances the pipeline's timers (FDB aging, neighbour probes and expiry).
    pub fn poll(&mut self, now: u64, out: &mut Output) {
        self.now = self.now.max(now);
        self.switch.poll(now, out);
    }

    /// The port adapter saw the link go up or down. Reported as a
    /// [`Notification::PortOperStatus`] when it changes.
    pub fn set_link_status(&mut self, port: ObjectId, up: bool) -> SaiResult<()> {
        let index = self.port_index(port).ok_or(SaiError::UnknownObject(port))?;
        if self.switch.port_oper_status(index) == Some(up) {
            return Ok(());
        }
        // Keep notifications in the order things happened: the pipeline's
        // queued events, then the link change, then the MACs it flushed.
        self.translate_events();
        self.switch.set_port_oper_status(index, up);
        self.notifications.push(Notification::PortOperStatus { port, up });
        self.translate_events();
        Ok(())
    }

    pub fn port_counters(&self, port: ObjectId) -> Option<&PortCounters> {
        self.switch.port_counters(self.port_index(port)?)
    }

    /// A frame left pipeline port `port` (the port adapter took it).
    pub fn count_transmitted(&mut self, port: PortId, frame: &[u8]) {
        self.switch.count_transmitted(port, frame);
    }

    /// [`count_transmitted`](Self::count_transmitted) from the frame's
    /// length and cast, as the node recorded them (the frame not read again).
    pub fn count_sent(&mut self, port: PortId, frame: TxFrame) {
        self.switch.count_sent(port, frame);
    }

    /// A frame for pipeline port `port` never left it.
    pub fn count_egress_drop(&mut self, port: PortId) {
        self.switch.count_egress_drop(port);
    }

    pub fn drop_counters(&self) -> &DropCounters {
        self.switch.drop_counters()
    }

    /// Pipeline events lost because nobody drained notifications for too
    /// long (the pipeline's queue is bounded so the hot path never allocates).
    pub fn events_lost(&self) -> u64 {
        self.switch.events_lost()
    }

    fn translate_dest(&self, dest: FdbDest) -> Option<ObjectId> {
        match dest {
            FdbDest::Port(port) => self.bridge_port_of_port.get(&port).copied(),
            FdbDest::Tunnel(remote) => self.bridge_port_of_remote.get(&remote).copied(),
        }
    }

    fn translate_events(&mut self) {
        let events: Vec<Event> = self.switch.drain_events().collect();
        for event in events {
            let notification = match event {
                Event::FdbLearned { vid, mac, dest } | Event::FdbAged { vid, mac, dest } => {
                    let Some(&vlan) = self.vlan_of_vid.get(&vid) else {
                        continue;
                    };
                    let fdb_event =
                        if matches!(event, Event::FdbLearned { .. }) { FdbEvent::Learned } else { FdbEvent::Aged };
                    Notification::Fdb {
                        event: fdb_event,
                        entry: FdbEntryKey { vlan, mac },
                        bridge_port: self.translate_dest(dest),
                    }
                }
                Event::FdbMoved { vid, mac, from, to } => {
                    let Some(&vlan) = self.vlan_of_vid.get(&vid) else {
                        continue;
                    };
                    Notification::Fdb {
                        event: FdbEvent::Moved { from: self.translate_dest(from) },
                        entry: FdbEntryKey { vlan, mac },
                        bridge_port: self.translate_dest(to),
                    }
                }
                Event::FdbMoveRefused { vid, mac, pinned, from } => {
                    let Some(&vlan) = self.vlan_of_vid.get(&vid) else {
                        continue;
                    };
                    Notification::Fdb {
                        event: FdbEvent::MoveRefused { pinned: self.translate_dest(pinned) },
                        entry: FdbEntryKey { vlan, mac },
                        bridge_port: self.translate_dest(from),
                    }
                }
                Event::NeighborResolved { rif, ip, mac } => {
                    let Some(router_interface) = self.rifs.owner(u32::from(rif)) else {
                        continue;
                    };
                    Notification::NeighborResolved { router_interface, ip, mac }
                }
                Event::NeighborExpired { rif, ip } => {
                    let Some(router_interface) = self.rifs.owner(u32::from(rif)) else {
                        continue;
                    };
                    Notification::NeighborExpired { router_interface, ip }
                }
            };
            self.notifications.push(notification);
        }
    }

    fn vid(&self, vlan: ObjectId) -> SaiResult<VlanId> {
        self.vlans.get(&vlan).copied().ok_or(SaiError::UnknownObject(vlan))
    }

    fn port(&self, port: ObjectId) -> SaiResult<PortId> {
        self.port_index(port).ok_or(SaiError::UnknownObject(port))
    }

    fn vrf(&self, virtual_router: ObjectId) -> SaiResult<VrfId> {
        self.vrfs.get(virtual_router).map(|vrf| vrf as VrfId).ok_or(SaiError::UnknownObject(virtual_router))
    }

    fn rif(&self, rif: ObjectId) -> SaiResult<RifId> {
        self.router_interface_index(rif).ok_or(SaiError::UnknownObject(rif))
    }

    /// A port's pipeline configuration: the port's attributes and its bridge
    /// port's learning mode.
    fn port_config(&self, store: &ObjectStore, port: &Port, index: PortId) -> PortConfig {
        let learning = self
            .bridge_port_of_port
            .get(&index)
            .and_then(|bridge_port| store.bridge_port(*bridge_port))
            .is_none_or(|bridge_port| bridge_port.learning);
        PortConfig { admin_up: port.admin_state, mtu: port.mtu, pvid: port.port_vlan_id, learning }
    }

    fn fdb_dest(&self, store: &ObjectStore, bridge_port: ObjectId) -> SaiResult<FdbDest> {
        match store.bridge_port(bridge_port).map(|b| b.bridge_port_type) {
            Some(BridgePortType::Port(port)) => Ok(FdbDest::Port(self.port(port)?)),
            Some(BridgePortType::Tunnel(endpoint)) => {
                let endpoint = store.tunnel_endpoint(endpoint).ok_or(SaiError::UnknownObject(endpoint))?;
                Ok(FdbDest::Tunnel(endpoint.remote_ip))
            }
            None => Err(SaiError::UnknownObject(bridge_port)),
        }
    }

    /// Removes the learned (dynamic) FDB entries `doomed` selects and tells
    /// the control plane, which may have advertised them (EVPN type-2 routes).
    fn flush_learned(&mut self, doomed: impl Fn(VlanId, &pipeline::FdbEntry) -> bool) {
        self.translate_events();
        let flushed: Vec<(VlanId, EthernetAddress, FdbDest)> = self
            .switch
            .fdb_entries()
            .filter(|(vid, _, entry)| entry.kind == FdbKind::Dynamic && doomed(*vid, entry))
            .map(|(vid, mac, entry)| (vid, mac, entry.dest))
            .collect();
        for (vid, mac, dest) in flushed {
            let _ = self.switch.remove_fdb_entry(vid, mac);
            if let Some(&vlan) = self.vlan_of_vid.get(&vid) {
                self.notifications.push(Notification::Fdb {
                    event: FdbEvent::Flushed,
                    entry: FdbEntryKey { vlan, mac },
                    bridge_port: self.translate_dest(dest),
                });
            }
        }
    }

    fn route_target(&self, store: &ObjectStore, entry: &RouteEntry) -> SaiResult<RouteTarget> {
        Ok(match (entry.packet_action, entry.next_hop) {
            (PacketAction::Drop, _) => RouteTarget::Drop,
            (PacketAction::Trap, _) => RouteTarget::Punt,
            (PacketAction::Forward, None) => {
                return Err(SaiError::entry_invalid("route entry", "NEXT_HOP_ID", "mandatory with action forward"));
            }
            (PacketAction::Forward, Some(id)) => match id.object_type() {
                Some(ObjectType::NextHop) => {
                    RouteTarget::NextHop(self.next_hops.get(id).ok_or(SaiError::UnknownObject(id))? as NextHopId)
                }
                Some(ObjectType::NextHopGroup) => {
                    RouteTarget::Group(self.groups.get(id).ok_or(SaiError::UnknownObject(id))? as NextHopGroupId)
                }
                Some(ObjectType::RouterInterface) => RouteTarget::Connected(self.rif(id)?),
                Some(ObjectType::Port) if id == store.cpu_port() => RouteTarget::Local,
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

    fn rif_config(&self, rif: &RouterInterface) -> SaiResult<pipeline::RouterInterface> {
        let kind = match rif.rif_type {
            RouterInterfaceType::Port(port) => RifKind::Port(self.port(port)?),
            RouterInterfaceType::Vlan(vlan) => RifKind::Vlan(self.vid(vlan)?),
        };
        let vrf = self.vrf(rif.virtual_router)?;
        Ok(pipeline::RouterInterface { kind, mac: rif.src_mac_address, mtu: rif.mtu, admin_up: rif.admin_state, vrf })
    }

    /// Reprograms a group with its members per the store, `extra` added and
    /// `without` left out (the store does not hold the change yet).
    fn program_group(
        &mut self,
        store: &ObjectStore,
        group: ObjectId,
        extra: Option<ObjectId>,
        without: Option<ObjectId>,
    ) -> SaiResult<()> {
        let index = self.groups.get(group).ok_or(SaiError::UnknownObject(group))? as NextHopGroupId;
        let mut members: Vec<NextHopId> = Vec::new();
        for (member_id, object) in store.objects_of(ObjectType::NextHopGroupMember) {
            if let Object::NextHopGroupMember(m) = object
                && m.group == group
                && Some(member_id) != without
            {
                members.push(self.next_hops.get(m.next_hop).ok_or(SaiError::UnknownObject(m.next_hop))?);
            }
        }
        if let Some(next_hop) = extra {
            members.push(self.next_hops.get(next_hop).ok_or(SaiError::UnknownObject(next_hop))?);
        }
        self.switch.set_next_hop_group(index, &members).map_err(|e| table_error(e, "next-hop group", "members"))
    }
}

impl Backend for SoftBackend {
    fn describe(&self) -> super::BackendDescription {
        super::BackendDescription {
            name: "soft",
            details: vec![("forwarding", "this project's pipeline over AF_PACKET/TAP ports".into())],
        }
    }

    fn qos_report(&self) -> Option<QosReport> {
        let stats = self.qos_stats.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
        let port_objects = (0..stats.ports.len()).map(|index| self.port_object(index as PortId)).collect();
        let dlb = self.switch.path_quality_report().map(|report| {
            let groups = report.groups.iter().map(|g| self.groups.owner(g.group)).collect();
            (report, groups)
        });
        Some(QosReport { stats, port_objects, dlb })
    }

    fn create(&mut self, store: &ObjectStore, id: ObjectId, object: &Object) -> SaiResult<()> {
        match object {
            Object::Switch(switch) => {
                let aging_ns = u64::from(switch.fdb_aging_time) * 1_000_000_000;
                if aging_ns != self.config.fdb_aging_ns {
                    // Nothing is programmed before the switch object exists.
                    self.config.fdb_aging_ns = aging_ns;
                    self.switch = pipeline::Switch::new(self.config.clone());
                }
            }
            Object::Port(port) => {
                if self.cpu_port.is_none() && port.name == "cpu" && id == store.cpu_port() {
                    self.cpu_port = Some(id);
                    return Ok(());
                }
                let index = self.ports.allocate(id, "port")? as PortId;
                let config = self.port_config(store, port, index);
                if let Err(e) = self.switch.set_port(index, config) {
                    self.ports.release(id);
                    return Err(table_error(e, "port", "PORT_VLAN_ID"));
                }
            }
            Object::Vlan(vlan) => {
                self.switch.create_vlan(vlan.vlan_id).map_err(|e| table_error(e, "vlan", "VLAN_ID"))?;
                self.vlans.insert(id, vlan.vlan_id);
                self.vlan_of_vid.insert(vlan.vlan_id, id);
            }
            Object::BridgePort(bridge_port) => match bridge_port.bridge_port_type {
                BridgePortType::Port(port) => {
                    let index = self.port(port)?;
                    let port = store.port(port).ok_or(SaiError::UnknownObject(port))?;
                    let config = PortConfig { learning: bridge_port.learning, ..self.port_config(store, port, index) };
                    self.switch.set_port(index, config).map_err(|e| table_error(e, "bridge port", "TYPE"))?;
                    self.bridge_port_of_port.insert(index, id);
                }
                BridgePortType::Tunnel(endpoint) => {
                    let endpoint = store.tunnel_endpoint(endpoint).ok_or(SaiError::UnknownObject(endpoint))?;
                    self.bridge_port_of_remote.insert(endpoint.remote_ip, id);
                    self.switch.set_remote_learning(endpoint.remote_ip, bridge_port.learning);
                }
            },
            Object::VlanMember(member) => {
                let vid = self.vid(member.vlan)?;
                match store.bridge_port(member.bridge_port).map(|b| b.bridge_port_type) {
                    Some(BridgePortType::Port(port)) => {
                        let port = self.port(port)?;
                        self.switch
                            .set_vlan_member(vid, port, member.tagging_mode == TaggingMode::Tagged)
                            .map_err(|e| table_error(e, "vlan member", "BRIDGE_PORT_ID"))?
                    }
                    Some(BridgePortType::Tunnel(endpoint)) => {
                        let remote =
                            store.tunnel_endpoint(endpoint).ok_or(SaiError::UnknownObject(endpoint))?.remote_ip;
                        let vni = self.switch.vlan_vni(vid).ok_or_else(|| {
                            SaiError::invalid(ObjectType::VlanMember, "VLAN_ID", "the VLAN is mapped to no VNI")
                        })?;
                        self.switch
                            .add_flood_vtep(vni, remote)
                            .map_err(|e| table_error(e, "vlan member", "BRIDGE_PORT_ID"))?
                    }
                    None => return Err(SaiError::UnknownObject(member.bridge_port)),
                }
            }
            Object::VirtualRouter(_) => {
                let vrf = self.vrfs.allocate(id, "virtual router")? as VrfId;
                // VRF 0 exists in every pipeline: it is the default virtual router.
                if vrf != DEFAULT_VRF
                    && let Err(e) = self.switch.create_vrf(vrf)
                {
                    self.vrfs.release(id);
                    return Err(table_error(e, "virtual router", "-"));
                }
            }
            Object::RouterInterface(rif) => {
                let config = self.rif_config(rif)?;
                let index = self.rifs.allocate(id, "router interface")? as RifId;
                if let Err(e) = self.switch.set_router_interface(index, config) {
                    self.rifs.release(id);
                    return Err(table_error(e, "router interface", "TYPE"));
                }
                self.switch
                    .set_send_redirects(index, rif.send_redirects)
                    .map_err(|e| table_error(e, "router interface", "SEND_REDIRECTS"))?;
            }
            Object::NextHop(next_hop) => {
                let index = self.next_hops.allocate(id, "next hop")?;
                let made = match (next_hop.next_hop_type, next_hop.ip) {
                    (NextHopType::Ip { router_interface }, ip) => match self.rif(router_interface) {
                        Ok(rif) => self.switch.set_next_hop(index, pipeline::NextHop { rif, ip }),
                        Err(e) => {
                            self.next_hops.release(id);
                            return Err(e);
                        }
                    },
                    (NextHopType::TunnelEncap { vni, mac, .. }, IpAddr::V4(remote)) => {
                        self.switch.set_tunnel_next_hop(index, pipeline::TunnelNextHop { remote, vni, router_mac: mac })
                    }
                    (NextHopType::TunnelEncap { .. }, IpAddr::V6(_)) => Err(TableError::Invalid("VTEPs are IPv4")),
                };
                if let Err(e) = made {
                    self.next_hops.release(id);
                    return Err(table_error(e, "next hop", "ROUTER_INTERFACE_ID"));
                }
            }
            Object::NextHopGroup(group) => {
                let index = self.groups.allocate(id, "next-hop group")?;
                if let Err(e) = self.switch.set_next_hop_group(index, &[]) {
                    self.groups.release(id);
                    return Err(table_error(e, "next-hop group", "members"));
                }
                // A group created while DLB runs (a route change) balances
                // as configured; those present at start are in its config.
                self.switch.set_group_dlb_mode(index, group.dlb_mode);
            }
            Object::NextHopGroupMember(member) => {
                self.program_group(store, member.group, Some(member.next_hop), None)?
            }
            Object::Tunnel(tunnel) => {
                if self.tunnel.is_some() {
                    return Err(SaiError::TableFull { table: "tunnel" });
                }
                self.switch
                    .set_vtep(Some(VtepConfig { source_ip: tunnel.encap_src_ip, udp_port: tunnel.udp_dst_port }));
                self.tunnel = Some(id);
            }
            Object::TunnelMapEntry(map) => match map.value {
                TunnelMapValue::Vlan(vlan) => {
                    let vid = self.vid(vlan)?;
                    self.switch
                        .map_vlan_to_vni(vid, map.vni)
                        .map_err(|e| table_error(e, "tunnel map entry", "VNI_ID_KEY"))?
                }
                TunnelMapValue::VirtualRouter(vr) => {
                    let vrf = self.vrf(vr)?;
                    let router_mac = match store.get(vr) {
                        Some(Object::VirtualRouter(vr)) => vr.src_mac_address,
                        _ => None,
                    }
                    .unwrap_or(store.switch().src_mac_address);
                    self.switch
                        .map_vni_to_vrf(map.vni, pipeline::L3Vni { vrf, router_mac })
                        .map_err(|e| table_error(e, "tunnel map entry", "VNI_ID_KEY"))?
                }
            },
            Object::TunnelEndpoint(_) => {}
            Object::HostInterface(hostif) => {
                let target = match hostif.obj.object_type() {
                    Some(ObjectType::Port) => HostTarget::Port(self.port(hostif.obj)?),
                    _ => HostTarget::RouterInterface(self.rif(hostif.obj)?),
                };
                self.host_interfaces.insert(id, target);
                self.host_interface_of.insert(target, id);
            }
            // The traffic manager is built from these when forwarding
            // starts ([`SoftBackend::tm_config`]).
            Object::QosMap(_)
            | Object::BufferPool(_)
            | Object::BufferProfile(_)
            | Object::IngressPriorityGroup(_)
            | Object::Queue(_)
            | Object::Scheduler(_)
            | Object::Wred(_) => {}
        }
        Ok(())
    }

    fn set(&mut self, store: &ObjectStore, id: ObjectId, old: &Object, new: &Object) -> SaiResult<()> {
        match (old, new) {
            (Object::Switch(old), Object::Switch(new)) if old.fdb_aging_time != new.fdb_aging_time => {
                return Err(SaiError::NotSupported(
                    "the soft backend fixes FDB_AGING_TIME when the switch is created".into(),
                ));
            }
            (Object::Port(_), Object::Port(port)) => {
                let index = self.port(id)?;
                let config = self.port_config(store, port, index);
                self.switch.set_port(index, config).map_err(|e| table_error(e, "port", "PORT_VLAN_ID"))?;
            }
            (Object::BridgePort(_), Object::BridgePort(bridge_port)) => {
                if let BridgePortType::Port(port) = bridge_port.bridge_port_type {
                    let index = self.port(port)?;
                    let port = store.port(port).ok_or(SaiError::UnknownObject(port))?;
                    let config = PortConfig { learning: bridge_port.learning, ..self.port_config(store, port, index) };
                    self.switch
                        .set_port(index, config)
                        .map_err(|e| table_error(e, "bridge port", "FDB_LEARNING_MODE"))?;
                }
            }
            (Object::VlanMember(_), Object::VlanMember(member)) => {
                if let Some(BridgePortType::Port(port)) =
                    store.bridge_port(member.bridge_port).map(|b| b.bridge_port_type)
                {
                    let (vid, port) = (self.vid(member.vlan)?, self.port(port)?);
                    self.switch
                        .set_vlan_member(vid, port, member.tagging_mode == TaggingMode::Tagged)
                        .map_err(|e| table_error(e, "vlan member", "VLAN_TAGGING_MODE"))?;
                }
            }
            (Object::RouterInterface(_), Object::RouterInterface(rif)) => {
                let config = self.rif_config(rif)?;
                let index = self.rif(id)?;
                self.switch
                    .set_router_interface(index, config)
                    .map_err(|e| table_error(e, "router interface", "SRC_MAC_ADDRESS"))?;
                self.switch
                    .set_send_redirects(index, rif.send_redirects)
                    .map_err(|e| table_error(e, "router interface", "SEND_REDIRECTS"))?;
            }
            (Object::Tunnel(_), Object::Tunnel(tunnel)) => {
                self.switch
                    .set_vtep(Some(VtepConfig { source_ip: tunnel.encap_src_ip, udp_port: tunnel.udp_dst_port }));
            }
            (Object::NextHopGroup(_), Object::NextHopGroup(group)) => {
                let index = self.groups.get(id).ok_or(SaiError::UnknownObject(id))?;
                self.switch.set_group_dlb_mode(index, group.dlb_mode);
            }
            _ => {}
        }
        Ok(())
    }

    fn remove(&mut self, store: &ObjectStore, id: ObjectId, object: &Object) -> SaiResult<()> {
        match object {
            Object::Switch(_) | Object::TunnelEndpoint(_) => {}
            Object::VirtualRouter(_) => {
                let vrf = self.vrf(id)?;
                self.switch.remove_vrf(vrf).map_err(|e| table_error(e, "virtual router", "-"))?;
                self.vrfs.release(id);
            }
            Object::Port(_) => {
                let index = self.port(id)?;
                self.switch.remove_port(index).map_err(|e| table_error(e, "port", "-"))?;
                self.ports.release(id);
            }
            Object::Vlan(vlan) => {
                self.switch.remove_vlan(vlan.vlan_id).map_err(|e| table_error(e, "vlan", "-"))?;
                self.vlans.remove(&id);
                self.vlan_of_vid.remove(&vlan.vlan_id);
            }
            Object::BridgePort(bridge_port) => match bridge_port.bridge_port_type {
                BridgePortType::Port(port) => {
                    let index = self.port(port)?;
                    // The MACs learned behind a bridge port go with it.
                    self.flush_learned(|_, entry| entry.dest == FdbDest::Port(index));
                    self.bridge_port_of_port.remove(&index);
                    let port = store.port(port).ok_or(SaiError::UnknownObject(port))?;
                    let config = self.port_config(store, port, index);
                    self.switch.set_port(index, config).map_err(|e| table_error(e, "bridge port", "-"))?;
                }
                BridgePortType::Tunnel(endpoint) => {
                    if let Some(endpoint) = store.tunnel_endpoint(endpoint) {
                        let remote = FdbDest::Tunnel(endpoint.remote_ip);
                        self.flush_learned(|_, entry| entry.dest == remote);
                        self.bridge_port_of_remote.remove(&endpoint.remote_ip);
                        self.switch.set_remote_learning(endpoint.remote_ip, true);
                    }
                }
            },
            Object::VlanMember(member) => {
                let vid = self.vid(member.vlan)?;
                match store.bridge_port(member.bridge_port).map(|b| b.bridge_port_type) {
                    Some(BridgePortType::Port(port)) => {
                        let index = self.port(port)?;
                        // The pipeline forgets the port's MACs in the VLAN; say so.
                        self.flush_learned(|entry_vid, entry| entry_vid == vid && entry.dest == FdbDest::Port(index));
                        self.switch.remove_vlan_member(vid, index).map_err(|e| table_error(e, "vlan member", "-"))?
                    }
                    Some(BridgePortType::Tunnel(endpoint)) => {
                        let remote =
                            store.tunnel_endpoint(endpoint).ok_or(SaiError::UnknownObject(endpoint))?.remote_ip;
                        if let Some(vni) = self.switch.vlan_vni(vid) {
                            self.switch
                                .remove_flood_vtep(vni, remote)
                                .map_err(|e| table_error(e, "vlan member", "-"))?;
                        }
                    }
                    None => return Err(SaiError::UnknownObject(member.bridge_port)),
                }
            }
            Object::RouterInterface(_) => {
                let index = self.rif(id)?;
                self.switch.remove_router_interface(index).map_err(|e| table_error(e, "router interface", "-"))?;
                self.rifs.release(id);
            }
            Object::NextHop(_) => {
                let index = self.next_hops.get(id).ok_or(SaiError::UnknownObject(id))?;
                self.switch.remove_next_hop(index).map_err(|e| table_error(e, "next hop", "-"))?;
                self.next_hops.release(id);
            }
            Object::NextHopGroup(_) => {
                let index = self.groups.get(id).ok_or(SaiError::UnknownObject(id))?;
                self.switch.remove_next_hop_group(index).map_err(|e| table_error(e, "next-hop group", "-"))?;
                self.switch.set_group_dlb_mode(index, None);
                self.groups.release(id);
            }
            Object::NextHopGroupMember(member) => self.program_group(store, member.group, None, Some(id))?,
            Object::Tunnel(_) => {
                self.switch.set_vtep(None);
                self.tunnel = None;
            }
            Object::TunnelMapEntry(map) => match map.value {
                TunnelMapValue::Vlan(vlan) => {
                    let vid = self.vid(vlan)?;
                    self.switch.unmap_vlan(vid).map_err(|e| table_error(e, "tunnel map entry", "-"))?
                }
                TunnelMapValue::VirtualRouter(_) => {
                    self.switch.unmap_vni_from_vrf(map.vni).map_err(|e| table_error(e, "tunnel map entry", "-"))?
                }
            },
            Object::HostInterface(_) => {
                if let Some(target) = self.host_interfaces.remove(&id) {
                    self.host_interface_of.remove(&target);
                }
            }
            Object::QosMap(_)
            | Object::BufferPool(_)
            | Object::BufferProfile(_)
            | Object::IngressPriorityGroup(_)
            | Object::Queue(_)
            | Object::Scheduler(_)
            | Object::Wred(_) => {}
        }
        Ok(())
    }

    fn create_fdb_entry(&mut self, store: &ObjectStore, key: &FdbEntryKey, entry: &FdbEntry) -> SaiResult<()> {
        let kind = match entry.entry_type {
            FdbEntryType::Static if entry.allow_mac_move => FdbKind::StaticMovable,
            FdbEntryType::Static => FdbKind::Static,
            FdbEntryType::Dynamic => FdbKind::Dynamic,
        };
        let dest = self.fdb_dest(store, entry.bridge_port)?;
        let (vid, now) = (self.vid(key.vlan)?, self.now);
        self.switch
            .set_fdb_entry(vid, key.mac, dest, kind, now)
            .map_err(|e| table_error(e, "fdb entry", "BRIDGE_PORT_ID"))
    }

    fn set_fdb_entry(
        &mut self,
        store: &ObjectStore,
        key: &FdbEntryKey,
        _old: &FdbEntry,
        new: &FdbEntry,
    ) -> SaiResult<()> {
        self.create_fdb_entry(store, key, new)
    }

    fn remove_fdb_entry(&mut self, store: &ObjectStore, key: &FdbEntryKey, entry: &FdbEntry) -> SaiResult<()> {
        // An entry already gone (aged, flushed by a link going down) is
        // removed; one that learning moved elsewhere since (a host that
        // moved here over an entry allowing moves) is the learned one now,
        // and stays.
        let vid = self.vid(key.vlan)?;
        let dest = self.fdb_dest(store, entry.bridge_port).ok();
        if self.switch.fdb_entry(vid, key.mac).is_some_and(|e| Some(e.dest) == dest) {
            let _ = self.switch.remove_fdb_entry(vid, key.mac);
        }
        Ok(())
    }

    fn flush_learned_fdb_entries(&mut self, store: &ObjectStore, filter: &FdbFlush) -> SaiResult<()> {
        let vid = filter.vlan.map(|vlan| self.vid(vlan)).transpose()?;
        let dest = filter.bridge_port.map(|bridge_port| self.fdb_dest(store, bridge_port)).transpose()?;
        self.flush_learned(|entry_vid, entry| {
            vid.is_none_or(|vid| vid == entry_vid) && dest.is_none_or(|dest| dest == entry.dest)
        });
        Ok(())
    }

    fn create_route_entry(&mut self, store: &ObjectStore, key: &RouteEntryKey, entry: &RouteEntry) -> SaiResult<()> {
        let target = self.route_target(store, entry)?;
        let vrf = self.vrf(key.virtual_router)?;
        self.switch.set_route_in(vrf, key.destination, target).map_err(|e| table_error(e, "route entry", "NEXT_HOP_ID"))
    }

    fn set_route_entry(
        &mut self,
        store: &ObjectStore,
        key: &RouteEntryKey,
        _old: &RouteEntry,
        new: &RouteEntry,
    ) -> SaiResult<()> {
        self.create_route_entry(store, key, new)
    }

    fn remove_route_entry(&mut self, _store: &ObjectStore, key: &RouteEntryKey, _entry: &RouteEntry) -> SaiResult<()> {
        let vrf = self.vrf(key.virtual_router)?;
        self.switch.remove_route_in(vrf, key.destination).map_err(|e| table_error(e, "route entry", "-"))
    }

    fn create_neighbor_entry(
        &mut self,
        _store: &ObjectStore,
        key: &NeighborEntryKey,
        entry: &NeighborEntry,
    ) -> SaiResult<()> {
        let rif = self.rif(key.router_interface)?;
        self.switch
            .set_neighbor(rif, key.ip, entry.dst_mac_address)
            .map_err(|e| table_error(e, "neighbor entry", "DST_MAC_ADDRESS"))
    }

    fn set_neighbor_entry(
        &mut self,
        store: &ObjectStore,
        key: &NeighborEntryKey,
        _old: &NeighborEntry,
        new: &NeighborEntry,
    ) -> SaiResult<()> {
        self.create_neighbor_entry(store, key, new)
    }

    fn remove_neighbor_entry(
        &mut self,
        _store: &ObjectStore,
        key: &NeighborEntryKey,
        _entry: &NeighborEntry,
    ) -> SaiResult<()> {
        let rif = self.rif(key.router_interface)?;
        let _ = self.switch.remove_neighbor(rif, key.ip);
        Ok(())
    }

    fn set_suppression_entry(
        &mut self,
        _store: &ObjectStore,
        key: &SuppressionEntryKey,
        mac: EthernetAddress,
    ) -> SaiResult<()> {
        let vid = self.vid(key.vlan)?;
        self.switch
            .set_suppression_entry(vid, key.ip, mac)
            .map_err(|e| table_error(e, "suppression entry", "MAC_ADDRESS"))
    }

    fn remove_suppression_entry(&mut self, _store: &ObjectStore, key: &SuppressionEntryKey) -> SaiResult<()> {
        let vid = self.vid(key.vlan)?;
        // Gone with its VLAN already: removed all the same.
        let _ = self.switch.remove_suppression_entry(vid, key.ip);
        Ok(())
    }

    fn port_oper_status(&self, port: ObjectId) -> bool {
        self.port_index(port).and_then(|index| self.switch.port_oper_status(index)).unwrap_or(false)
    }

    fn port_stats(&self, port: ObjectId) -> SaiResult<PortStats> {
        if Some(port) == self.cpu_port {
            return Ok(PortStats::default());
        }
        let counters = self.port_counters(port).ok_or(SaiError::UnknownObject(port))?;
        Ok(PortStats {
            in_octets: counters.rx_bytes,
            in_ucast_pkts: counters.rx_unicast,
            in_non_ucast_pkts: counters.rx_multicast + counters.rx_broadcast,
            in_discards: counters.rx_drops,
            out_octets: counters.tx_bytes,
            out_ucast_pkts: counters.tx_unicast,
            out_non_ucast_pkts: counters.tx_multicast + counters.tx_broadcast,
            out_discards: counters.tx_drops,
        })
    }

    fn fdb_entries(&self, _store: &ObjectStore) -> Vec<(FdbEntryKey, FdbEntry)> {
        let mut entries: Vec<(FdbEntryKey, FdbEntry)> = self
            .switch
            .fdb_entries()
            .filter_map(|(vid, mac, entry)| {
                let vlan = *self.vlan_of_vid.get(&vid)?;
                let bridge_port = self.translate_dest(entry.dest)?;
                let entry_type = match entry.kind {
                    FdbKind::Static | FdbKind::StaticMovable => FdbEntryType::Static,
                    FdbKind::Dynamic => FdbEntryType::Dynamic,
                };
                let allow_mac_move = entry.kind == FdbKind::StaticMovable;
                Some((FdbEntryKey { vlan, mac }, FdbEntry { entry_type, bridge_port, allow_mac_move }))
            })
            .collect();
        entries.sort_by_key(|(key, _)| *key);
        entries
    }

    fn fdb_entry_count(&self, _store: &ObjectStore) -> usize {
        // The entries `fdb_entries` lists, counted.
        self.switch
            .fdb_entries()
            .filter(|(vid, _, entry)| self.vlan_of_vid.contains_key(vid) && self.translate_dest(entry.dest).is_some())
            .count()
    }

    fn fdb_details(&self, _store: &ObjectStore) -> Vec<super::FdbDetail> {
        let mut entries: Vec<super::FdbDetail> = self
            .switch
            .fdb_entries()
            .filter_map(|(vid, mac, entry)| {
                let vlan = *self.vlan_of_vid.get(&vid)?;
                let bridge_port = self.translate_dest(entry.dest)?;
                let entry_type = match entry.kind {
                    FdbKind::Static | FdbKind::StaticMovable => FdbEntryType::Static,
                    FdbKind::Dynamic => FdbEntryType::Dynamic,
                };
                let allow_mac_move = entry.kind == FdbKind::StaticMovable;
                let remote_vtep = match entry.dest {
                    FdbDest::Tunnel(remote) => Some(remote),
                    FdbDest::Port(_) => None,
                };
                Some(super::FdbDetail {
                    key: FdbEntryKey { vlan, mac },
                    entry: FdbEntry { entry_type, bridge_port, allow_mac_move },
                    remote_vtep,
                    last_seen_ns: (entry.kind == FdbKind::Dynamic).then_some(entry.last_seen),
                })
            })
            .collect();
        entries.sort_by_key(|detail| detail.key);
        entries
    }

    fn port_counters(&self, port: ObjectId) -> Option<PortCounters> {
        SoftBackend::port_counters(self, port).cloned()
    }

    fn drop_counters(&self) -> Option<DropCounters> {
        Some(self.switch.drop_counters().clone())
    }

    fn neighbor_entries(&self, _store: &ObjectStore) -> Vec<(NeighborEntryKey, NeighborInfo)> {
        let mut entries: Vec<(NeighborEntryKey, NeighborInfo)> = self
            .switch
            .neighbors()
            .filter_map(|(rif, ip, entry)| {
                let router_interface = self.rifs.owner(u32::from(rif))?;
                let state = match entry.state {
                    pipeline::NeighborState::Incomplete => NeighborState::Incomplete,
                    pipeline::NeighborState::Reachable => NeighborState::Reachable,
                    pipeline::NeighborState::Stale => NeighborState::Stale,
                    pipeline::NeighborState::Probe => NeighborState::Probe,
                    pipeline::NeighborState::Failed => NeighborState::Failed,
                };
                Some((
                    NeighborEntryKey { router_interface, ip },
                    NeighborInfo { mac: entry.mac, state, is_static: entry.is_static },
                ))
            })
            .collect();
        entries.sort_by_key(|(key, _)| *key);
        entries
    }

    fn drain_notifications(&mut self, store: &ObjectStore, out: &mut Vec<Notification>) {
        self.translate_events();
        self.translate_watchdog_events(store);
        out.append(&mut self.notifications);
    }
}

/// The shim with the soft backend, as the node drives it: host interfaces
/// are the shim's host interface objects.
impl dataplane::node::Forwarding for crate::Sai<SoftBackend> {
    type HostIf = ObjectId;
    fn process(&mut self, now: u64, port: PortId, frame: &[u8], out: &mut Output) -> Disposition {
        self.backend_mut().process_index(now, port, frame, out)
    }
    fn host_send(&mut self, now: u64, host_if: ObjectId, frame: &[u8], out: &mut Output) {
        if let Err(error) = self.backend_mut().host_send(now, host_if, frame, out) {
            tracing::debug!(%error, "host send refused");
        }
    }
    fn punt_target(&self, egress: &Egress) -> Option<ObjectId> {
        self.backend().punt_host_interface(egress)
    }
    fn poll(&mut self, now: u64, out: &mut Output) {
        self.backend_mut().poll(now, out);
    }
    fn set_link_status(&mut self, port: PortId, up: bool) {
        let backend = self.backend_mut();
        if let Some(object) = backend.port_object(port)
            && let Err(error) = backend.set_link_status(object, up)
        {
            tracing::warn!(port, %error, "cannot report link status");
        }
    }
    fn count_transmitted(&mut self, port: PortId, frame: TxFrame) {
        self.backend_mut().count_sent(port, frame);
    }
    fn count_egress_drop(&mut self, port: PortId) {
        self.backend_mut().count_egress_drop(port);
    }
}
