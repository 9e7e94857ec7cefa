//! The object store and the API in front of it: every create, set and remove
//! is validated here (attribute types, mandatory attributes, references to
//! existing objects of the right type, uniqueness, reference counts) before
//! the backend is asked to program it, and is recorded only if the backend
//! succeeded.

use std::collections::{BTreeMap, HashMap, HashSet};

use dataplane::wire::EthernetAddress;

use crate::attributes::*;
use crate::backend::{Backend, FdbFlush, FdbFlushType, PortStats};
use crate::error::{EntryKey, SaiError, SaiResult};
use crate::notification::{FdbEvent, NeighborInfo, Notification};
use crate::object::{
    FdbEntryKey, NeighborEntryKey, ObjectId, ObjectType, Referrer, RouteEntryKey, SuppressionEntryKey,
};

/// The shim's record of every object and entry, with reference counts.
/// Backends read it to resolve references.
#[derive(Debug)]
pub struct ObjectStore {
    next_serial: u64,
    objects: BTreeMap<ObjectId, Object>,
    /// Who refers to each object, by kind, so removal can say what is in the way.
    users: HashMap<ObjectId, BTreeMap<Referrer, u32>>,
    fdb: BTreeMap<FdbEntryKey, FdbEntry>,
    routes: BTreeMap<RouteEntryKey, RouteEntry>,
    neighbors: BTreeMap<NeighborEntryKey, NeighborEntry>,
    /// ARP/ND suppression bindings: the MAC answered for each.
    suppression: BTreeMap<SuppressionEntryKey, EthernetAddress>,
    switch: ObjectId,
    cpu_port: ObjectId,
    default_virtual_router: ObjectId,
}

impl ObjectStore {
    pub fn get(&self, id: ObjectId) -> Option<&Object> {
        self.objects.get(&id)
    }

    /// All objects of one type, in creation order.
    pub fn objects_of(&self, object_type: ObjectType) -> impl Iterator<Item = (ObjectId, &Object)> + '_ {
        // Ids sort by type first, so one type's objects are one range.
        let (first, last) = ObjectId::range_of(object_type);
        self.objects.range(first..=last).map(|(id, o)| (*id, o))
    }

    pub fn switch_id(&self) -> ObjectId {
        self.switch
    }

    pub fn switch(&self) -> &Switch {
        match self.objects.get(&self.switch) {
            Some(Object::Switch(s)) => s,
            _ => unreachable!("the switch object exists for the store's lifetime"),
        }
    }

    pub fn cpu_port(&self) -> ObjectId {
        self.cpu_port
    }

    pub fn default_virtual_router(&self) -> ObjectId {
        self.default_virtual_router
    }

    pub fn port(&self, id: ObjectId) -> Option<&Port> {
        match self.objects.get(&id) {
            Some(Object::Port(p)) => Some(p),
            _ => None,
        }
    }

    pub fn vlan(&self, id: ObjectId) -> Option<&Vlan> {
        match self.objects.get(&id) {
            Some(Object::Vlan(v)) => Some(v),
            _ => None,
        }
    }

    pub fn bridge_port(&self, id: ObjectId) -> Option<&BridgePort> {
        match self.objects.get(&id) {
            Some(Object::BridgePort(b)) => Some(b),
            _ => None,
        }
    }

    pub fn router_interface(&self, id: ObjectId) -> Option<&RouterInterface> {
        match self.objects.get(&id) {
            Some(Object::RouterInterface(r)) => Some(r),
            _ => None,
        }
    }

    pub fn next_hop(&self, id: ObjectId) -> Option<&NextHop> {
        match self.objects.get(&id) {
            Some(Object::NextHop(n)) => Some(n),
            _ => None,
        }
    }

    pub fn tunnel(&self, id: ObjectId) -> Option<&Tunnel> {
        match self.objects.get(&id) {
            Some(Object::Tunnel(t)) => Some(t),
            _ => None,
        }
    }

    pub fn tunnel_endpoint(&self, id: ObjectId) -> Option<&TunnelEndpoint> {
        match self.objects.get(&id) {
            Some(Object::TunnelEndpoint(t)) => Some(t),
            _ => None,
        }
    }

    /// The VNI a VLAN is stretched over, if a tunnel map entry maps it.
    pub fn vni_of_vlan(&self, vlan: ObjectId) -> Option<u32> {
        self.objects_of(ObjectType::TunnelMapEntry).find_map(|(_, o)| match o {
            Object::TunnelMapEntry(m) if m.vlan() == Some(vlan) => Some(m.vni),
            _ => None,
        })
    }

    /// The members of a next-hop group, as next-hop ids, in creation order.
    pub fn group_members(&self, group: ObjectId) -> Vec<ObjectId> {
        self.objects_of(ObjectType::NextHopGroupMember)
            .filter_map(|(_, o)| match o {
                Object::NextHopGroupMember(m) if m.group == group => Some(m.next_hop),
                _ => None,
            })
            .collect()
    }

    /// The control-plane FDB entries (learned ones live in the backend).
    pub fn fdb_entries(&self) -> impl Iterator<Item = (&FdbEntryKey, &FdbEntry)> + '_ {
        self.fdb.iter()
    }

    pub fn route_entries(&self) -> impl Iterator<Item = (&RouteEntryKey, &RouteEntry)> + '_ {
        self.routes.iter()
    }

    /// The route entries after `after` (all of them for `None`), in key
    /// order: a table read in chunks, the lock let go between them.
    pub fn route_entries_after(
        &self,
        after: Option<&RouteEntryKey>,
    ) -> impl Iterator<Item = (&RouteEntryKey, &RouteEntry)> + '_ {
        use std::ops::Bound;
        let from = after.map_or(Bound::Unbounded, |key| Bound::Excluded(*key));
        self.routes.range((from, Bound::Unbounded))
    }

    pub fn route_entry(&self, key: &RouteEntryKey) -> Option<&RouteEntry> {
        self.routes.get(key)
    }

    pub fn neighbor_entries(&self) -> impl Iterator<Item = (&NeighborEntryKey, &NeighborEntry)> + '_ {
        self.neighbors.iter()
    }

    /// How many objects and entries refer to `id`.
    pub fn use_count(&self, id: ObjectId) -> u32 {
        self.users.get(&id).map_or(0, |by| by.values().sum())
    }

    fn allocate(&mut self, object_type: ObjectType) -> ObjectId {
        self.next_serial += 1;
        ObjectId::new(object_type, self.next_serial)
    }

    fn find(&self, id: ObjectId, expected: ObjectType, attribute: &'static str) -> SaiResult<&Object> {
        let object = self.objects.get(&id).ok_or(SaiError::UnknownObject(id))?;
        if object.object_type() != expected {
            return Err(SaiError::WrongObjectType {
                attribute,
                id,
                found: id.object_type(),
                expected: expected.name(),
            });
        }
        Ok(object)
    }

    fn check_references(&self, references: &[Reference]) -> SaiResult<()> {
        for reference in references {
            let object = self.objects.get(&reference.id).ok_or(SaiError::UnknownObject(reference.id))?;
            if !reference.expected.contains(&object.object_type()) {
                return Err(SaiError::WrongObjectType {
                    attribute: reference.attribute,
                    id: reference.id,
                    found: reference.id.object_type(),
                    expected: reference.expected.iter().map(|t| t.name()).next().unwrap_or("none"),
                });
            }
        }
        Ok(())
    }

    fn add_users(&mut self, by: Referrer, references: &[Reference]) {
        for reference in references {
            *self.users.entry(reference.id).or_default().entry(by).or_default() += 1;
        }
    }

    fn remove_users(&mut self, by: Referrer, references: &[Reference]) {
        for reference in references {
            if let Some(users) = self.users.get_mut(&reference.id) {
                if let Some(count) = users.get_mut(&by) {
                    *count -= 1;
                    if *count == 0 {
                        users.remove(&by);
                    }
                }
                if users.is_empty() {
                    self.users.remove(&reference.id);
                }
            }
        }
    }

    fn insert(&mut self, id: ObjectId, object: Object) {
        let references = object.references();
        self.add_users(Referrer::Object(object.object_type()), &references);
        self.objects.insert(id, object);
    }

    fn replace(&mut self, id: ObjectId, object: Object) {
        if let Some(old) = self.objects.remove(&id) {
            self.remove_users(Referrer::Object(old.object_type()), &old.references());
        }
        self.insert(id, object);
    }

    fn delete(&mut self, id: ObjectId) -> Option<Object> {
        let old = self.objects.remove(&id)?;
        self.remove_users(Referrer::Object(old.object_type()), &old.references());
        Some(old)
    }

    fn in_use_error(&self, id: ObjectId) -> Option<SaiError> {
        let users = self.users.get(&id)?;
        let (example, _) = users.iter().next()?;
        Some(SaiError::ObjectInUse { id, count: users.values().sum(), example: *example })
    }

    fn exists_other(&self, except: Option<ObjectId>, object_type: ObjectType, pred: impl Fn(&Object) -> bool) -> bool {
        self.objects_of(object_type).any(|(id, o)| Some(id) != except && pred(o))
    }

    /// Rules that span objects: uniqueness, and which combinations make sense.
    fn check_object(&self, id: Option<ObjectId>, object: &Object) -> SaiResult<()> {
        let exists = |what: String| Err(SaiError::AlreadyExists(what));
        match object {
            Object::Port(port) => {
                if self.exists_other(id, ObjectType::Port, |o| matches!(o, Object::Port(p) if p.name == port.name)) {
                    return exists(format!("port named {}", port.name));
                }
            }
            Object::Vlan(vlan) => {
                if self.exists_other(
                    id,
                    ObjectType::Vlan,
                    |o| matches!(o, Object::Vlan(v) if v.vlan_id == vlan.vlan_id),
                ) {
                    return exists(format!("vlan {}", vlan.vlan_id));
                }
            }
            Object::VlanMember(member) => {
                if self.exists_other(id, ObjectType::VlanMember, |o| {
                    matches!(o, Object::VlanMember(m) if m.vlan == member.vlan && m.bridge_port == member.bridge_port)
                }) {
                    return exists(format!("member {} of {}", member.bridge_port, member.vlan));
                }
                let is_tunnel = matches!(
                    self.bridge_port(member.bridge_port),
                    Some(BridgePort { bridge_port_type: BridgePortType::Tunnel(_), .. })
                );
                if is_tunnel && self.vni_of_vlan(member.vlan).is_none() {
                    return Err(SaiError::invalid(
                        ObjectType::VlanMember,
                        "BRIDGE_PORT_ID",
                        format!(
                            "{} is a tunnel bridge port but {} is mapped to no VNI",
                            member.bridge_port, member.vlan
                        ),
                    ));
                }
            }
            Object::BridgePort(bridge_port) => {
                match bridge_port.bridge_port_type {
                    BridgePortType::Port(port) => {
                        self.check_not_cpu_port(ObjectType::BridgePort, "TYPE", port)?;
                        if self.exists_other(id, ObjectType::BridgePort, |o| {
                        matches!(o, Object::BridgePort(b) if b.bridge_port_type == bridge_port.bridge_port_type)
                    }) {
                        return exists(format!("bridge port of {port}"));
                    }
                        if self.routed_port_rif(port).is_some() {
                            return Err(SaiError::invalid(
                                ObjectType::BridgePort,
                                "TYPE",
                                format!("{port} is a routed port (it has a port router interface)"),
                            ));
                        }
                    }
                    BridgePortType::Tunnel(endpoint) => {
                        if self.exists_other(id, ObjectType::BridgePort, |o| {
                        matches!(o, Object::BridgePort(b) if b.bridge_port_type == bridge_port.bridge_port_type)
                    }) {
                        return exists(format!("bridge port of {endpoint}"));
                    }
                    }
                }
            }
            Object::RouterInterface(rif) => {
                match rif.rif_type {
                    RouterInterfaceType::Port(port) => {
                        self.check_not_cpu_port(ObjectType::RouterInterface, "TYPE", port)?;
                        if self.routed_port_rif(port).is_some_and(|other| Some(other) != id) {
                            return exists(format!("router interface on {port}"));
                        }
                        let bridged = self.exists_other(
                            None,
                            ObjectType::BridgePort,
                            |o| matches!(o, Object::BridgePort(b) if b.bridge_port_type == BridgePortType::Port(port)),
                        );
                        if bridged {
                            return Err(SaiError::invalid(
                                ObjectType::RouterInterface,
                                "TYPE",
                                format!("{port} is a bridge port; route on its VLAN with a VLAN router interface"),
                            ));
                        }
                    }
                    RouterInterfaceType::Vlan(vlan) => {
                        if self.exists_other(id, ObjectType::RouterInterface, |o| {
                        matches!(o, Object::RouterInterface(r) if r.rif_type == RouterInterfaceType::Vlan(vlan))
                    }) {
                        return exists(format!("router interface on {vlan}"));
                    }
                    }
                }
            }
            Object::NextHop(next_hop) => {
                if self.exists_other(id, ObjectType::NextHop, |o| matches!(o, Object::NextHop(n) if n == next_hop)) {
                    return exists(format!("next hop {} ({:?})", next_hop.ip, next_hop.next_hop_type));
                }
            }
            Object::NextHopGroupMember(member) => {
                if self.exists_other(
                    id,
                    ObjectType::NextHopGroupMember,
                    |o| matches!(o, Object::NextHopGroupMember(m) if m == member),
                ) {
                    return exists(format!("member {} of {}", member.next_hop, member.group));
                }
            }
            Object::TunnelMapEntry(map) => {
                if self.exists_other(
                    id,
                    ObjectType::TunnelMapEntry,
                    |o| matches!(o, Object::TunnelMapEntry(m) if m.value == map.value),
                ) {
                    return exists(format!("VNI map of {:?}", map.value));
                }
                if self.exists_other(
                    id,
                    ObjectType::TunnelMapEntry,
                    |o| matches!(o, Object::TunnelMapEntry(m) if m.vni == map.vni && m.tunnel == map.tunnel),
                ) {
                    return exists(format!("map of VNI {}", map.vni));
                }
            }
            Object::TunnelEndpoint(endpoint) => {
                if self.exists_other(
                    id,
                    ObjectType::TunnelEndpoint,
                    |o| matches!(o, Object::TunnelEndpoint(e) if e == endpoint),
                ) {
                    return exists(format!("tunnel endpoint {}", endpoint.remote_ip));
                }
            }
            Object::HostInterface(hostif) => {
                if let Object::Port(_) = self.objects[&hostif.obj] {
                    self.check_not_cpu_port(ObjectType::HostInterface, "OBJ_ID", hostif.obj)?;
                }
                if self.exists_other(
                    id,
                    ObjectType::HostInterface,
                    |o| matches!(o, Object::HostInterface(h) if h.name == hostif.name),
                ) {
                    return exists(format!("host interface named {}", hostif.name));
                }
                if self.exists_other(
                    id,
                    ObjectType::HostInterface,
                    |o| matches!(o, Object::HostInterface(h) if h.obj == hostif.obj),
                ) {
                    return exists(format!("host interface of {}", hostif.obj));
                }
            }
            Object::Switch(switch) => {
                let mut types = Vec::new();
                for &id in &switch.qos_maps {
                    if let Some(Object::QosMap(map)) = self.objects.get(&id) {
                        if types.contains(&map.map_type) {
                            return Err(SaiError::invalid(
                                ObjectType::Switch,
                                "QOS_MAP_LIST",
                                format!("two maps of type {:?}", map.map_type),
                            ));
                        }
                        types.push(map.map_type);
                    }
                }
            }
            Object::IngressPriorityGroup(_) | Object::Queue(_) => crate::qos::check_unique(self, id, object)?,
            Object::VirtualRouter(_)
            | Object::NextHopGroup(_)
            | Object::Tunnel(_)
            | Object::QosMap(_)
            | Object::BufferPool(_)
            | Object::BufferProfile(_)
            | Object::Scheduler(_)
            | Object::Wred(_) => {}
        }
        Ok(())
    }

    fn check_not_cpu_port(&self, object: ObjectType, attribute: &'static str, port: ObjectId) -> SaiResult<()> {
        if port == self.cpu_port {
            return Err(SaiError::invalid(object, attribute, "the CPU port cannot be used here"));
        }
        Ok(())
    }

    /// The router interface that makes `port` a routed port, if any.
    pub fn routed_port_rif(&self, port: ObjectId) -> Option<ObjectId> {
        self.objects_of(ObjectType::RouterInterface).find_map(|(id, o)| match o {
            Object::RouterInterface(r) if r.rif_type == RouterInterfaceType::Port(port) => Some(id),
            _ => None,
        })
    }

    fn fdb_references(key: &FdbEntryKey, entry: &FdbEntry) -> Vec<Reference> {
        let mut references = vec![Reference { attribute: "bv_id", id: key.vlan, expected: &[ObjectType::Vlan] }];
        references.extend(entry.references());
        references
    }

    fn route_references(key: &RouteEntryKey, entry: &RouteEntry) -> Vec<Reference> {
        let mut references =
            vec![Reference { attribute: "vr_id", id: key.virtual_router, expected: &[ObjectType::VirtualRouter] }];
        references.extend(entry.references());
        references
    }

    fn neighbor_references(key: &NeighborEntryKey) -> Vec<Reference> {
        vec![Reference { attribute: "rif_id", id: key.router_interface, expected: &[ObjectType::RouterInterface] }]
    }

    fn check_fdb_entry(&self, key: &FdbEntryKey, entry: &FdbEntry) -> SaiResult<()> {
        self.check_references(&Self::fdb_references(key, entry))?;
        if !key.mac.is_unicast() || key.mac == EthernetAddress::ZERO {
            return Err(SaiError::entry_invalid("fdb entry", "mac_address", format!("{} is not unicast", key.mac)));
        }
        Ok(())
    }

    fn check_route_entry(&self, key: &RouteEntryKey, entry: &RouteEntry) -> SaiResult<()> {
        self.check_references(&Self::route_references(key, entry))?;
        if key.destination.ip() != key.destination.network() {
            return Err(SaiError::entry_invalid(
                "route entry",
                "destination",
                format!("{} has host bits set", key.destination),
            ));
        }
        match (entry.packet_action, entry.next_hop) {
            (PacketAction::Forward, None) => {
                return Err(SaiError::entry_invalid("route entry", "NEXT_HOP_ID", "mandatory with action forward"));
            }
            (_, Some(port)) if port.object_type() == Some(ObjectType::Port) && port != self.cpu_port => {
                return Err(SaiError::entry_invalid(
                    "route entry",
                    "NEXT_HOP_ID",
                    "the only port a route may name is the CPU port",
                ));
            }
            _ => {}
        }
        Ok(())
    }

    fn suppression_references(key: &SuppressionEntryKey) -> Vec<Reference> {
        vec![Reference { attribute: "bv_id", id: key.vlan, expected: &[ObjectType::Vlan] }]
    }

    fn check_suppression_entry(&self, key: &SuppressionEntryKey, mac: EthernetAddress) -> SaiResult<()> {
        self.check_references(&Self::suppression_references(key))?;
        if key.ip.is_unspecified() || key.ip.is_multicast() || key.ip.is_loopback() {
            return Err(SaiError::entry_invalid(
                "suppression entry",
                "ip_address",
                format!("{} is not a host", key.ip),
            ));
        }
        if !mac.is_unicast() || mac == EthernetAddress::ZERO {
            return Err(SaiError::entry_invalid("suppression entry", "mac_address", format!("{mac} is not unicast")));
        }
        Ok(())
    }

    fn check_neighbor_entry(&self, key: &NeighborEntryKey) -> SaiResult<()> {
        self.check_references(&Self::neighbor_references(key))?;
        if key.ip.is_unspecified() || key.ip.is_multicast() {
            return Err(SaiError::entry_invalid("neighbor entry", "ip_address", format!("{} is not unicast", key.ip)));
        }
        Ok(())
    }
}

/// The SAI-like API of one switch over one backend.
pub struct Sai<B: Backend> {
    store: ObjectStore,
    backend: B,
    notifications: Vec<Notification>,
    bus: crate::notification::NotificationBus,
}

impl<B: Backend> Sai<B> {
    /// Creates the switch object, its CPU port and default virtual router.
    pub fn new(mut backend: B, attrs: &[SwitchAttr]) -> SaiResult<Sai<B>> {
        check_duplicates("switch", attrs)?;
        let mut store = ObjectStore {
            next_serial: 0,
            objects: BTreeMap::new(),
            users: HashMap::new(),
            fdb: BTreeMap::new(),
            routes: BTreeMap::new(),
            neighbors: BTreeMap::new(),
            suppression: BTreeMap::new(),
            switch: ObjectId::from_raw(0),
            cpu_port: ObjectId::from_raw(0),
            default_virtual_router: ObjectId::from_raw(0),
        };
        store.switch = store.allocate(ObjectType::Switch);
        store.cpu_port = store.allocate(ObjectType::Port);
        store.default_virtual_router = store.allocate(ObjectType::VirtualRouter);
        let mut switch = Switch {
            src_mac_address: EthernetAddress([0x02, 0, 0, 0, 0, 1]),
            fdb_aging_time: 300,
            cpu_port: store.cpu_port,
            default_virtual_router: store.default_virtual_router,
            qos_maps: Vec::new(),
            qos_trust: Default::default(),
            pfc_quanta: qos::pfc::PfcConfig::default().quanta,
            pfc_response_ns: qos::pfc::PfcConfig::default().response_ns,
            pfc_rx_lag_ns: qos::pfc::PfcConfig::default().rx_lag_ns,
            pfc_watchdog: Default::default(),
            dlb: Default::default(),
        };
        for attr in attrs {
            switch.apply(attr.clone());
        }
        let switch = Object::Switch(switch);
        backend.create(&store, store.switch, &switch)?;
        store.insert(store.switch, switch);
        let cpu = Object::Port(Port {
            name: "cpu".into(),
            admin_state: true,
            mtu: 9216,
            port_vlan_id: 1,
            speed_bps: 0,
            cable_length_m: 0,
            priority_flow_control: 0,
            oper_status: true,
        });
        backend.create(&store, store.cpu_port, &cpu)?;
        store.insert(store.cpu_port, cpu);
        let vr = Object::VirtualRouter(VirtualRouter::default());
        backend.create(&store, store.default_virtual_router, &vr)?;
        store.insert(store.default_virtual_router, vr);
        Ok(Sai { store, backend, notifications: Vec::new(), bus: Default::default() })
    }

    pub fn store(&self) -> &ObjectStore {
        &self.store
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The backend, the shim done with: what a simulator drives once the
    /// configuration is programmed.
    pub fn into_backend(self) -> B {
        self.backend
    }

    /// The backend, for its own entry points (the soft backend's packet path).
    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    pub fn switch_id(&self) -> ObjectId {
        self.store.switch
    }

    pub fn cpu_port(&self) -> ObjectId {
        self.store.cpu_port
    }

    pub fn default_virtual_router(&self) -> ObjectId {
        self.store.default_virtual_router
    }

    // ------------------------------------------------------------ generic paths

    pub(crate) fn create_object(&mut self, object: Object) -> SaiResult<ObjectId> {
        self.store.check_references(&object.references())?;
        self.store.check_object(None, &object)?;
        let id = self.store.allocate(object.object_type());
        self.backend.create(&self.store, id, &object)?;
        self.store.insert(id, object);
        Ok(id)
    }

    pub(crate) fn set_object(
        &mut self,
        id: ObjectId,
        object_type: ObjectType,
        change: impl FnOnce(&mut Object) -> SaiResult<()>,
    ) -> SaiResult<()> {
        let old = self.store.find(id, object_type, "object_id")?.clone();
        if id == self.store.cpu_port {
            return Err(SaiError::NotSupported("the CPU port's attributes are fixed".into()));
        }
        let mut new = old.clone();
        change(&mut new)?;
        if new == old {
            return Ok(());
        }
        self.store.check_references(&new.references())?;
        self.store.check_object(Some(id), &new)?;
        self.backend.set(&self.store, id, &old, &new)?;
        self.store.replace(id, new);
        Ok(())
    }

    pub(crate) fn get_object(&self, id: ObjectId, object_type: ObjectType) -> SaiResult<&Object> {
        self.store.find(id, object_type, "object_id")
    }

    /// Removes any id-keyed object. Fails with [`SaiError::ObjectInUse`]
    /// while other objects or entries refer to it.
    pub fn remove(&mut self, id: ObjectId) -> SaiResult<()> {
        let object = self.store.objects.get(&id).ok_or(SaiError::UnknownObject(id))?;
        if id == self.store.switch || id == self.store.cpu_port || id == self.store.default_virtual_router {
            return Err(SaiError::NotSupported(format!("{id} exists as long as the switch")));
        }
        if let Some(in_use) = self.store.in_use_error(id) {
            return Err(in_use);
        }
        if let Object::TunnelMapEntry(map) = object {
            // Flood-list members on tunnel bridge ports only make sense while
            // their VLAN has a VNI.
            let flooding = self
                .store
                .objects_of(ObjectType::VlanMember)
                .filter(|(_, o)| match o {
                    Object::VlanMember(m) => {
                        Some(m.vlan) == map.vlan()
                            && matches!(
                                self.store.bridge_port(m.bridge_port),
                                Some(BridgePort { bridge_port_type: BridgePortType::Tunnel(_), .. })
                            )
                    }
                    _ => false,
                })
                .count() as u32;
            if flooding > 0 {
                return Err(SaiError::ObjectInUse {
                    id,
                    count: flooding,
                    example: Referrer::Object(ObjectType::VlanMember),
                });
            }
        }
        self.backend.remove(&self.store, id, object)?;
        self.store.delete(id);
        Ok(())
    }

    // ------------------------------------------------------------ switch

    pub fn set_switch_attribute(&mut self, attr: SwitchAttr) -> SaiResult<()> {
        let id = self.store.switch;
        self.set_object(id, ObjectType::Switch, |o| {
            if let Object::Switch(s) = o {
                s.apply(attr);
            }
            Ok(())
        })
    }

    pub fn get_switch(&self) -> Switch {
        self.store.switch().clone()
    }

    // ------------------------------------------------------------ ports

    pub fn create_port(&mut self, attrs: &[PortAttr]) -> SaiResult<ObjectId> {
        check_duplicates("port", attrs)?;
        self.create_object(Object::Port(Port::build(attrs)?))
    }

    pub fn set_port_attribute(&mut self, id: ObjectId, attr: PortAttr) -> SaiResult<()> {
        check_settable("port", &attr)?;
        self.set_object(id, ObjectType::Port, |o| match o {
            Object::Port(p) => p.apply(attr),
            _ => unreachable!(),
        })
    }

    pub fn get_port(&self, id: ObjectId) -> SaiResult<Port> {
        match self.get_object(id, ObjectType::Port)? {
            Object::Port(p) => {
                let mut port = p.clone();
                port.oper_status = id == self.store.cpu_port || self.backend.port_oper_status(id);
                Ok(port)
            }
            _ => unreachable!(),
        }
    }

    pub fn get_port_stats(&self, id: ObjectId) -> SaiResult<PortStats> {
        self.get_object(id, ObjectType::Port)?;
        self.backend.port_stats(id)
    }

    // ------------------------------------------------------------ VLANs and bridging

    pub fn create_vlan(&mut self, attrs: &[VlanAttr]) -> SaiResult<ObjectId> {
        check_duplicates("vlan", attrs)?;
        self.create_object(Object::Vlan(Vlan::build(attrs)?))
    }

    pub fn get_vlan(&self, id: ObjectId) -> SaiResult<Vlan> {
        match self.get_object(id, ObjectType::Vlan)? {
            Object::Vlan(v) => Ok(v.clone()),
            _ => unreachable!(),
        }
    }

    pub fn create_bridge_port(&mut self, attrs: &[BridgePortAttr]) -> SaiResult<ObjectId> {
        check_duplicates("bridge port", attrs)?;
        self.create_object(Object::BridgePort(BridgePort::build(attrs)?))
    }

    pub fn set_bridge_port_attribute(&mut self, id: ObjectId, attr: BridgePortAttr) -> SaiResult<()> {
        check_settable("bridge port", &attr)?;
        self.set_object(id, ObjectType::BridgePort, |o| {
            if let Object::BridgePort(b) = o {
                b.apply(attr);
            }
            Ok(())
        })
    }

    pub fn get_bridge_port(&self, id: ObjectId) -> SaiResult<BridgePort> {
        match self.get_object(id, ObjectType::BridgePort)? {
            Object::BridgePort(b) => Ok(b.clone()),
            _ => unreachable!(),
        }
    }

    pub fn create_vlan_member(&mut self, attrs: &[VlanMemberAttr]) -> SaiResult<ObjectId> {
        check_duplicates("vlan member", attrs)?;
        self.create_object(Object::VlanMember(VlanMember::build(attrs)?))
    }

    pub fn set_vlan_member_attribute(&mut self, id: ObjectId, attr: VlanMemberAttr) -> SaiResult<()> {
        check_settable("vlan member", &attr)?;
        self.set_object(id, ObjectType::VlanMember, |o| {
            if let Object::VlanMember(m) = o {
                m.apply(attr);
            }
            Ok(())
        })
    }

    pub fn get_vlan_member(&self, id: ObjectId) -> SaiResult<VlanMember> {
        match self.get_object(id, ObjectType::VlanMember)? {
            Object::VlanMember(m) => Ok(m.clone()),
            _ => unreachable!(),
        }
    }

    pub fn create_fdb_entry(&mut self, key: FdbEntryKey, attrs: &[FdbEntryAttr]) -> SaiResult<()> {
        check_duplicates("fdb entry", attrs)?;
        let entry = FdbEntry::build(attrs)?;
        self.store.check_fdb_entry(&key, &entry)?;
        if self.store.fdb.contains_key(&key) {
            return Err(SaiError::AlreadyExists(EntryKey::Fdb(key).to_string()));
        }
        self.backend.create_fdb_entry(&self.store, &key, &entry)?;
        self.store.add_users(Referrer::FdbEntry, &ObjectStore::fdb_references(&key, &entry));
        self.store.fdb.insert(key, entry);
        Ok(())
    }

    pub fn set_fdb_entry_attribute(&mut self, key: FdbEntryKey, attr: FdbEntryAttr) -> SaiResult<()> {
        let old = self.store.fdb.get(&key).ok_or(SaiError::UnknownEntry(EntryKey::Fdb(key)))?.clone();
        let mut new = old.clone();
        new.apply(attr);
        self.store.check_fdb_entry(&key, &new)?;
        self.backend.set_fdb_entry(&self.store, &key, &old, &new)?;
        self.store.remove_users(Referrer::FdbEntry, &ObjectStore::fdb_references(&key, &old));
        self.store.add_users(Referrer::FdbEntry, &ObjectStore::fdb_references(&key, &new));
        self.store.fdb.insert(key, new);
        Ok(())
    }

    pub fn remove_fdb_entry(&mut self, key: FdbEntryKey) -> SaiResult<()> {
        let entry = self.store.fdb.get(&key).ok_or(SaiError::UnknownEntry(EntryKey::Fdb(key)))?;
        self.backend.remove_fdb_entry(&self.store, &key, entry)?;
        self.forget_fdb_entry(&key);
        Ok(())
    }

    fn forget_fdb_entry(&mut self, key: &FdbEntryKey) {
        if let Some(entry) = self.store.fdb.remove(key) {
            self.store.remove_users(Referrer::FdbEntry, &ObjectStore::fdb_references(key, &entry));
        }
    }

    /// A control-plane FDB entry. Learned entries are in [`Sai::fdb_table`].
    pub fn get_fdb_entry(&self, key: FdbEntryKey) -> SaiResult<FdbEntry> {
        self.store.fdb.get(&key).cloned().ok_or(SaiError::UnknownEntry(EntryKey::Fdb(key)))
    }

    /// The FDB as forwarding sees it, learned entries included.
    pub fn fdb_table(&self) -> Vec<(FdbEntryKey, FdbEntry)> {
        self.backend.fdb_entries(&self.store)
    }

    /// How many entries [`Self::fdb_table`] has, without listing them.
    pub fn fdb_entry_count(&self) -> usize {
        self.backend.fdb_entry_count(&self.store)
    }

    /// The FDB with remote VTEPs and last-seen times, for display.
    pub fn fdb_details(&self) -> Vec<crate::backend::FdbDetail> {
        self.backend.fdb_details(&self.store)
    }

    /// Whether a port's link is up, as forwarding sees it.
    pub fn port_oper_status(&self, port: ObjectId) -> bool {
        self.backend.port_oper_status(port)
    }

    /// Forwarding's counters of a port, where the backend keeps them.
    pub fn port_counters(&self, port: ObjectId) -> Option<crate::backend::PortCounters> {
        self.backend.port_counters(port)
    }

    /// Switch-wide drops by reason, where the backend counts them.
    pub fn drop_counters(&self) -> Option<crate::backend::DropCounters> {
        self.backend.drop_counters()
    }

    /// The traffic manager's counters and DLB's state, where the backend has them.
    pub fn qos_report(&self) -> Option<crate::backend::QosReport> {
        self.backend.qos_report()
    }

    /// SAI's flush_fdb_entries: removes the matching entries, control-plane
    /// and learned alike (as the flush type says).
    pub fn flush_fdb_entries(&mut self, filter: FdbFlush) -> SaiResult<()> {
        for id in [filter.bridge_port, filter.vlan].into_iter().flatten() {
            self.store.objects.get(&id).ok_or(SaiError::UnknownObject(id))?;
        }
        let doomed: Vec<FdbEntryKey> = self
            .store
            .fdb
            .iter()
            .filter(|(key, entry)| {
                filter.bridge_port.is_none_or(|b| b == entry.bridge_port)
                    && filter.vlan.is_none_or(|v| v == key.vlan)
                    && match filter.entry_type {
                        FdbFlushType::All => true,
                        FdbFlushType::Static => entry.entry_type == FdbEntryType::Static,
                        FdbFlushType::Dynamic => entry.entry_type == FdbEntryType::Dynamic,
                    }
            })
            .map(|(key, _)| *key)
            .collect();
        for key in doomed {
            self.remove_fdb_entry(key)?;
        }
        if filter.entry_type != FdbFlushType::Static {
            self.backend.flush_learned_fdb_entries(&self.store, &filter)?;
        }
        Ok(())
    }

    // ------------------------------------------------------------ routing

    /// Creates a VRF: a virtual router with a routing table of its own,
    /// which router interfaces and route entries name.
    pub fn create_virtual_router(&mut self) -> SaiResult<ObjectId> {
        self.create_virtual_router_with(&[])
    }

    /// A VRF with attributes (its router MAC for symmetric IRB).
    pub fn create_virtual_router_with(&mut self, attrs: &[VirtualRouterAttr]) -> SaiResult<ObjectId> {
        check_duplicates("virtual router", attrs)?;
        self.create_object(Object::VirtualRouter(VirtualRouter::build(attrs)?))
    }

    pub fn create_router_interface(&mut self, attrs: &[RouterInterfaceAttr]) -> SaiResult<ObjectId> {
        check_duplicates("router interface", attrs)?;
        let mac = self.store.switch().src_mac_address;
        self.create_object(Object::RouterInterface(RouterInterface::build(attrs, mac)?))
    }

    pub fn set_router_interface_attribute(&mut self, id: ObjectId, attr: RouterInterfaceAttr) -> SaiResult<()> {
        check_settable("router interface", &attr)?;
        self.set_object(id, ObjectType::RouterInterface, |o| match o {
            Object::RouterInterface(r) => r.apply(attr),
            _ => unreachable!(),
        })
    }

    pub fn get_router_interface(&self, id: ObjectId) -> SaiResult<RouterInterface> {
        match self.get_object(id, ObjectType::RouterInterface)? {
            Object::RouterInterface(r) => Ok(r.clone()),
            _ => unreachable!(),
        }
    }

    pub fn create_next_hop(&mut self, attrs: &[NextHopAttr]) -> SaiResult<ObjectId> {
        check_duplicates("next hop", attrs)?;
        self.create_object(Object::NextHop(NextHop::build(attrs)?))
    }

    pub fn get_next_hop(&self, id: ObjectId) -> SaiResult<NextHop> {
        match self.get_object(id, ObjectType::NextHop)? {
            Object::NextHop(n) => Ok(n.clone()),
            _ => unreachable!(),
        }
    }

    pub fn create_next_hop_group(&mut self) -> SaiResult<ObjectId> {
        self.create_next_hop_group_with(&[])
    }

    pub fn create_next_hop_group_with(&mut self, attrs: &[NextHopGroupAttr]) -> SaiResult<ObjectId> {
        check_duplicates("next-hop group", attrs)?;
        self.create_object(Object::NextHopGroup(NextHopGroup::build(attrs)))
    }

    /// A group's DLB mode applies from its next packet, also while the
    /// traffic manager runs (the soft backend tells the pipeline's DLB).
    pub fn set_next_hop_group_attribute(&mut self, id: ObjectId, attr: NextHopGroupAttr) -> SaiResult<()> {
        check_settable("next-hop group", &attr)?;
        self.set_object(id, ObjectType::NextHopGroup, |o| match o {
            Object::NextHopGroup(g) => {
                g.apply(attr);
                Ok(())
            }
            _ => unreachable!(),
        })
    }

    pub fn get_next_hop_group(&self, id: ObjectId) -> SaiResult<NextHopGroup> {
        match self.get_object(id, ObjectType::NextHopGroup)? {
            Object::NextHopGroup(g) => Ok(g.clone()),
            _ => unreachable!(),
        }
    }

    pub fn create_next_hop_group_member(&mut self, attrs: &[NextHopGroupMemberAttr]) -> SaiResult<ObjectId> {
        check_duplicates("next-hop group member", attrs)?;
        self.create_object(Object::NextHopGroupMember(NextHopGroupMember::build(attrs)?))
    }

    /// The next hops of a group, in the order their members were created.
    pub fn get_next_hop_group_members(&self, id: ObjectId) -> SaiResult<Vec<ObjectId>> {
        self.get_object(id, ObjectType::NextHopGroup)?;
        Ok(self.store.group_members(id))
    }

    pub fn create_route_entry(&mut self, key: RouteEntryKey, attrs: &[RouteEntryAttr]) -> SaiResult<()> {
        check_duplicates("route entry", attrs)?;
        let entry = RouteEntry::build(attrs)?;
        self.store.check_route_entry(&key, &entry)?;
        if self.store.routes.contains_key(&key) {
            return Err(SaiError::AlreadyExists(EntryKey::Route(key).to_string()));
        }
        self.backend.create_route_entry(&self.store, &key, &entry)?;
        self.store.add_users(Referrer::RouteEntry, &ObjectStore::route_references(&key, &entry));
        self.store.routes.insert(key, entry);
        Ok(())
    }

    /// Creates several route entries at once, as SAI's bulk
    /// `create_route_entries` with error mode "ignore error": each entry is
    /// checked and created on its own and has its own result, in order; a
    /// refused entry leaves the others alone. A backend that can hand the
    /// whole set to its dataplane in one go (the kernel backend: one
    /// netlink batch) does, which is what makes a full table load fast.
    pub fn create_route_entries(&mut self, entries: &[(RouteEntryKey, &[RouteEntryAttr])]) -> Vec<SaiResult<()>> {
        let mut results: Vec<SaiResult<()>> = Vec::with_capacity(entries.len());
        let mut valid = Vec::with_capacity(entries.len());
        let mut indexes = Vec::with_capacity(entries.len());
        let mut keys = HashSet::with_capacity(entries.len());
        for (index, (key, attrs)) in entries.iter().enumerate() {
            let checked = check_duplicates("route entry", attrs).and_then(|()| {
                let entry = RouteEntry::build(attrs)?;
                self.store.check_route_entry(key, &entry)?;
                if self.store.routes.contains_key(key) || !keys.insert(*key) {
                    return Err(SaiError::AlreadyExists(EntryKey::Route(*key).to_string()));
                }
                Ok(entry)
            });
            match checked {
                Ok(entry) => {
                    valid.push((*key, entry));
                    indexes.push(index);
                    results.push(Ok(()));
                }
                Err(error) => results.push(Err(error)),
            }
        }
        let created = self.backend.create_route_entries(&self.store, &valid);
        debug_assert_eq!(created.len(), valid.len(), "one result per entry");
        for ((index, (key, entry)), result) in indexes.into_iter().zip(valid).zip(created) {
            match result {
                Ok(()) => {
                    self.store.add_users(Referrer::RouteEntry, &ObjectStore::route_references(&key, &entry));
                    self.store.routes.insert(key, entry);
                }
                Err(error) => results[index] = Err(error),
            }
        }
        results
    }

    pub fn set_route_entry_attribute(&mut self, key: RouteEntryKey, attr: RouteEntryAttr) -> SaiResult<()> {
        let old = self.store.routes.get(&key).ok_or(SaiError::UnknownEntry(EntryKey::Route(key)))?.clone();
        let mut new = old.clone();
        new.apply(attr);
        self.store.check_route_entry(&key, &new)?;
        self.backend.set_route_entry(&self.store, &key, &old, &new)?;
        self.store.remove_users(Referrer::RouteEntry, &ObjectStore::route_references(&key, &old));
        self.store.add_users(Referrer::RouteEntry, &ObjectStore::route_references(&key, &new));
        self.store.routes.insert(key, new);
        Ok(())
    }

    pub fn remove_route_entry(&mut self, key: RouteEntryKey) -> SaiResult<()> {
        let entry = self.store.routes.get(&key).ok_or(SaiError::UnknownEntry(EntryKey::Route(key)))?;
        self.backend.remove_route_entry(&self.store, &key, entry)?;
        let entry = self.store.routes.remove(&key).expect("checked above");
        self.store.remove_users(Referrer::RouteEntry, &ObjectStore::route_references(&key, &entry));
        Ok(())
    }

    pub fn get_route_entry(&self, key: RouteEntryKey) -> SaiResult<RouteEntry> {
        self.store.routes.get(&key).cloned().ok_or(SaiError::UnknownEntry(EntryKey::Route(key)))
    }

    pub fn create_neighbor_entry(&mut self, key: NeighborEntryKey, attrs: &[NeighborEntryAttr]) -> SaiResult<()> {
        check_duplicates("neighbor entry", attrs)?;
        let entry = NeighborEntry::build(attrs)?;
        self.store.check_neighbor_entry(&key)?;
        if self.store.neighbors.contains_key(&key) {
            return Err(SaiError::AlreadyExists(EntryKey::Neighbor(key).to_string()));
        }
        self.backend.create_neighbor_entry(&self.store, &key, &entry)?;
        self.store.add_users(Referrer::NeighborEntry, &ObjectStore::neighbor_references(&key));
        self.store.neighbors.insert(key, entry);
        Ok(())
    }

    pub fn set_neighbor_entry_attribute(&mut self, key: NeighborEntryKey, attr: NeighborEntryAttr) -> SaiResult<()> {
        let old = self.store.neighbors.get(&key).ok_or(SaiError::UnknownEntry(EntryKey::Neighbor(key)))?.clone();
        let mut new = old.clone();
        new.apply(attr)?;
        self.backend.set_neighbor_entry(&self.store, &key, &old, &new)?;
        self.store.neighbors.insert(key, new);
        Ok(())
    }

    pub fn remove_neighbor_entry(&mut self, key: NeighborEntryKey) -> SaiResult<()> {
        let entry = self.store.neighbors.get(&key).ok_or(SaiError::UnknownEntry(EntryKey::Neighbor(key)))?;
        self.backend.remove_neighbor_entry(&self.store, &key, entry)?;
        self.store.neighbors.remove(&key);
        self.store.remove_users(Referrer::NeighborEntry, &ObjectStore::neighbor_references(&key));
        Ok(())
    }

    /// The neighbours forwarding knows, resolved ones included, with their state.
    pub fn neighbor_table(&self) -> Vec<(NeighborEntryKey, NeighborInfo)> {
        self.backend.neighbor_entries(&self.store)
    }

    pub fn get_neighbor_entry(&self, key: NeighborEntryKey) -> SaiResult<NeighborEntry> {
        self.store.neighbors.get(&key).cloned().ok_or(SaiError::UnknownEntry(EntryKey::Neighbor(key)))
    }

    /// ARP/ND suppression: forwarding answers ARP requests and neighbour
    /// solicitations for `key.ip` in `key.vlan` with `mac` (installs or
    /// replaces the binding).
    pub fn set_suppression_entry(&mut self, key: SuppressionEntryKey, mac: EthernetAddress) -> SaiResult<()> {
        self.store.check_suppression_entry(&key, mac)?;
        self.backend.set_suppression_entry(&self.store, &key, mac)?;
        if self.store.suppression.insert(key, mac).is_none() {
            self.store.add_users(Referrer::SuppressionEntry, &ObjectStore::suppression_references(&key));
        }
        Ok(())
    }

    pub fn remove_suppression_entry(&mut self, key: SuppressionEntryKey) -> SaiResult<()> {
        if !self.store.suppression.contains_key(&key) {
            return Err(SaiError::UnknownEntry(EntryKey::Suppression(key)));
        }
        self.backend.remove_suppression_entry(&self.store, &key)?;
        self.store.suppression.remove(&key);
        self.store.remove_users(Referrer::SuppressionEntry, &ObjectStore::suppression_references(&key));
        Ok(())
    }

    /// The ARP/ND suppression bindings, in key order.
    pub fn suppression_entries(&self) -> Vec<(SuppressionEntryKey, EthernetAddress)> {
        self.store.suppression.iter().map(|(key, mac)| (*key, *mac)).collect()
    }

    // ------------------------------------------------------------ VXLAN

    pub fn create_tunnel(&mut self, attrs: &[TunnelAttr]) -> SaiResult<ObjectId> {
        check_duplicates("tunnel", attrs)?;
        self.create_object(Object::Tunnel(Tunnel::build(attrs)?))
    }

    pub fn set_tunnel_attribute(&mut self, id: ObjectId, attr: TunnelAttr) -> SaiResult<()> {
        check_settable("tunnel", &attr)?;
        self.set_object(id, ObjectType::Tunnel, |o| match o {
            Object::Tunnel(t) => t.apply(attr),
            _ => unreachable!(),
        })
    }

    pub fn get_tunnel(&self, id: ObjectId) -> SaiResult<Tunnel> {
        match self.get_object(id, ObjectType::Tunnel)? {
            Object::Tunnel(t) => Ok(t.clone()),
            _ => unreachable!(),
        }
    }

    pub fn create_tunnel_map_entry(&mut self, attrs: &[TunnelMapEntryAttr]) -> SaiResult<ObjectId> {
        check_duplicates("tunnel map entry", attrs)?;
        self.create_object(Object::TunnelMapEntry(TunnelMapEntry::build(attrs)?))
    }

    pub fn get_tunnel_map_entry(&self, id: ObjectId) -> SaiResult<TunnelMapEntry> {
        match self.get_object(id, ObjectType::TunnelMapEntry)? {
            Object::TunnelMapEntry(m) => Ok(m.clone()),
            _ => unreachable!(),
        }
    }

    pub fn create_tunnel_endpoint(&mut self, attrs: &[TunnelEndpointAttr]) -> SaiResult<ObjectId> {
        check_duplicates("tunnel endpoint", attrs)?;
        self.create_object(Object::TunnelEndpoint(TunnelEndpoint::build(attrs)?))
    }

    pub fn get_tunnel_endpoint(&self, id: ObjectId) -> SaiResult<TunnelEndpoint> {
        match self.get_object(id, ObjectType::TunnelEndpoint)? {
            Object::TunnelEndpoint(e) => Ok(e.clone()),
            _ => unreachable!(),
        }
    }

    // ------------------------------------------------------------ host interfaces

    pub fn create_host_interface(&mut self, attrs: &[HostInterfaceAttr]) -> SaiResult<ObjectId> {
        check_duplicates("host interface", attrs)?;
        self.create_object(Object::HostInterface(HostInterface::build(attrs)?))
    }

    pub fn get_host_interface(&self, id: ObjectId) -> SaiResult<HostInterface> {
        match self.get_object(id, ObjectType::HostInterface)? {
            Object::HostInterface(h) => Ok(h.clone()),
            _ => unreachable!(),
        }
    }

    // ------------------------------------------------------------ notifications

    /// Everything forwarding reported since the last call, oldest first.
    ///
    /// Control-plane dynamic FDB entries that aged out or moved are updated
    /// in the store on the way, so the store never names a forwarding state
    /// that no longer exists.
    /// A subscriber to notifications: what [`Sai::publish_notifications`]
    /// drains is sent to it over a channel of `capacity`.
    pub fn subscribe(&mut self, name: &str, capacity: usize) -> crate::notification::Subscription {
        self.bus.subscribe(name, capacity)
    }

    /// Drains the notifications (as [`Sai::drain_notifications`]) and
    /// delivers them to every subscriber; returns them too.
    pub fn publish_notifications(&mut self) -> Vec<Notification> {
        let notifications = self.drain_notifications();
        self.bus.publish(&notifications);
        notifications
    }

    /// The subscribers and what each lost to a full channel.
    pub fn subscribers(&self) -> Vec<crate::notification::SubscriberStats> {
        self.bus.subscribers()
    }

    pub fn drain_notifications(&mut self) -> Vec<Notification> {
        self.backend.drain_notifications(&self.store, &mut self.notifications);
        let notifications = std::mem::take(&mut self.notifications);
        for notification in &notifications {
            if let Notification::Fdb { event, entry: key, bridge_port } = notification {
                let Some(entry) = self.store.fdb.get(key) else {
                    continue;
                };
                if entry.entry_type != FdbEntryType::Dynamic {
                    continue;
                }
                match (event, bridge_port) {
                    (FdbEvent::Aged | FdbEvent::Flushed, _) | (FdbEvent::Moved { .. }, None) => {
                        self.forget_fdb_entry(key)
                    }
                    (FdbEvent::Moved { .. }, Some(to)) => {
                        let (key, to) = (*key, *to);
                        let old = self.store.fdb[&key].clone();
                        self.store.remove_users(Referrer::FdbEntry, &ObjectStore::fdb_references(&key, &old));
                        let new = FdbEntry { bridge_port: to, ..old };
                        self.store.add_users(Referrer::FdbEntry, &ObjectStore::fdb_references(&key, &new));
                        self.store.fdb.insert(key, new);
                    }
                    (FdbEvent::Learned | FdbEvent::MoveRefused { .. }, _) => {}
                }
            }
        }
        notifications
    }
}
