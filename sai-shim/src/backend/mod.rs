//! The boundary between the object layer and forwarding.
//!
//! The trait is object-level: a backend hears "this VLAN member now exists,
//! with these attributes", after the object store has checked types,
//! references and uniqueness, and it turns that into its own forwarding state.
//! The `soft` backend programs this project's pipeline; a `kernel` backend
//! turns the same calls into rtnetlink requests (a bridge with VLAN
//! filtering, VXLAN devices, FDB entries with `extern_learn`, neighbours,
//! nexthop objects and groups) and reads its notifications from netlink
//! monitor messages.
//!
//! Every call gets the [`ObjectStore`] so a backend can resolve the objects a
//! reference names (a VLAN member's VLAN id, a next hop's router interface)
//! without keeping copies. On `create` the new object is not in the store yet;
//! on `set` and `remove` the store still holds the old state. A call that
//! returns an error must leave the backend as it was: the store then keeps its
//! old state too.

#[cfg(target_os = "linux")]
pub mod kernel;
pub mod soft;

pub use dataplane::node::QosStats;
pub use dataplane::pipeline::{DropCounters, PathQualityReport, PortCounters};

use crate::api::ObjectStore;
use crate::attributes::{FdbEntry, NeighborEntry, Object, RouteEntry};
use crate::error::{SaiError, SaiResult};
use crate::notification::{NeighborInfo, Notification};
use crate::object::{FdbEntryKey, NeighborEntryKey, ObjectId, RouteEntryKey, SuppressionEntryKey};
use dataplane::wire::EthernetAddress;

/// Which entries [`crate::Sai::flush_fdb_entries`] removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FdbFlush {
    /// Only entries behind this bridge port.
    pub bridge_port: Option<ObjectId>,
    /// Only entries in this VLAN.
    pub vlan: Option<ObjectId>,
    pub entry_type: FdbFlushType,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FdbFlushType {
    /// Learned and control-plane dynamic entries.
    #[default]
    Dynamic,
    Static,
    All,
}

/// One FDB entry as forwarding holds it, for display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdbDetail {
    pub key: FdbEntryKey,
    pub entry: FdbEntry,
    /// The VTEP behind which an overlay MAC is.
    pub remote_vtep: Option<std::net::Ipv4Addr>,
    /// When a learned MAC was last seen, on the backend's clock.
    pub last_seen_ns: Option<u64>,
}

/// The traffic manager's state for `show` (queues, priority groups, PFC,
/// buffer pool, watchdog, DLB).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosReport {
    pub stats: QosStats,
    /// The port object of each entry of `stats.ports`.
    pub port_objects: Vec<Option<ObjectId>>,
    /// DLB over the ECMP groups, with the group object of each group.
    pub dlb: Option<(PathQualityReport, Vec<Option<ObjectId>>)>,
}

/// Per-port counters in SAI's terms (`SAI_PORT_STAT_IF_IN_OCTETS`...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortStats {
    pub in_octets: u64,
    pub in_ucast_pkts: u64,
    pub in_non_ucast_pkts: u64,
    pub in_discards: u64,
    pub out_octets: u64,
    pub out_ucast_pkts: u64,
    pub out_non_ucast_pkts: u64,
    pub out_discards: u64,
}

/// A backend as `show backend` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendDescription {
    pub name: &'static str,
    pub details: Vec<(&'static str, String)>,
}

pub trait Backend {
    /// A new object passed the store's checks; program it.
    fn create(&mut self, store: &ObjectStore, id: ObjectId, object: &Object) -> SaiResult<()>;
    /// Settable attributes of an object changed from `old` to `new`.
    fn set(&mut self, store: &ObjectStore, id: ObjectId, old: &Object, new: &Object) -> SaiResult<()>;
    /// Nothing refers to the object any more; unprogram it.
    fn remove(&mut self, store: &ObjectStore, id: ObjectId, object: &Object) -> SaiResult<()>;

    fn create_fdb_entry(&mut self, store: &ObjectStore, key: &FdbEntryKey, entry: &FdbEntry) -> SaiResult<()>;
    fn set_fdb_entry(
        &mut self,
        store: &ObjectStore,
        key: &FdbEntryKey,
        old: &FdbEntry,
        new: &FdbEntry,
    ) -> SaiResult<()>;
    fn remove_fdb_entry(&mut self, store: &ObjectStore, key: &FdbEntryKey, entry: &FdbEntry) -> SaiResult<()>;
    /// Removes learned entries matching `filter` (the store removes the
    /// entries it created itself through `remove_fdb_entry`).
    fn flush_learned_fdb_entries(&mut self, store: &ObjectStore, filter: &FdbFlush) -> SaiResult<()>;

    fn create_route_entry(&mut self, store: &ObjectStore, key: &RouteEntryKey, entry: &RouteEntry) -> SaiResult<()>;
    /// Creates entries the shim has checked (none exists yet, no key twice):
    /// one result per entry, in order, each as `create_route_entry` would
    /// give it; a failed entry changes nothing and does not stop the rest.
    /// One at a time unless the backend can do better.
    fn create_route_entries(
        &mut self,
        store: &ObjectStore,
        entries: &[(RouteEntryKey, RouteEntry)],
    ) -> Vec<SaiResult<()>> {
        entries.iter().map(|(key, entry)| self.create_route_entry(store, key, entry)).collect()
    }
    fn set_route_entry(
        &mut self,
        store: &ObjectStore,
        key: &RouteEntryKey,
        old: &RouteEntry,
        new: &RouteEntry,
    ) -> SaiResult<()>;
    fn remove_route_entry(&mut self, store: &ObjectStore, key: &RouteEntryKey, entry: &RouteEntry) -> SaiResult<()>;

    fn create_neighbor_entry(
        &mut self,
        store: &ObjectStore,
        key: &NeighborEntryKey,
        entry: &NeighborEntry,
    ) -> SaiResult<()>;
    fn set_neighbor_entry(
        &mut self,
        store: &ObjectStore,
        key: &NeighborEntryKey,
        old: &NeighborEntry,
        new: &NeighborEntry,
    ) -> SaiResult<()>;
    fn remove_neighbor_entry(
        &mut self,
        store: &ObjectStore,
        key: &NeighborEntryKey,
        entry: &NeighborEntry,
    ) -> SaiResult<()>;

    /// Forwarding answers ARP/ND for `key.ip` in `key.vlan` with `mac`
    /// (installs or replaces). Backends without a suppression table refuse.
    fn set_suppression_entry(
        &mut self,
        _store: &ObjectStore,
        key: &SuppressionEntryKey,
        _mac: EthernetAddress,
    ) -> SaiResult<()> {
        Err(SaiError::NotSupported(format!("ARP/ND suppression ({} in {})", key.ip, key.vlan)))
    }
    fn remove_suppression_entry(&mut self, _store: &ObjectStore, key: &SuppressionEntryKey) -> SaiResult<()> {
        Err(SaiError::NotSupported(format!("ARP/ND suppression ({} in {})", key.ip, key.vlan)))
    }

    /// The link state of a port, as far as the backend knows.
    fn port_oper_status(&self, port: ObjectId) -> bool;
    fn port_stats(&self, port: ObjectId) -> SaiResult<PortStats>;
    /// The FDB as forwarding sees it: control-plane entries and learned ones.
    fn fdb_entries(&self, store: &ObjectStore) -> Vec<(FdbEntryKey, FdbEntry)>;
    /// The neighbour table as forwarding sees it: static and resolved entries.
    fn neighbor_entries(&self, store: &ObjectStore) -> Vec<(NeighborEntryKey, NeighborInfo)>;

    /// How many entries [`Self::fdb_entries`] has, without listing them
    /// (a metrics scrape at every table size).
    fn fdb_entry_count(&self, store: &ObjectStore) -> usize {
        self.fdb_entries(store).len()
    }

    /// The FDB with what a `show mac` needs beyond the entries: the remote
    /// VTEP of an overlay MAC and when a learned MAC was last seen (on the
    /// backend's clock), where the backend knows them.
    fn fdb_details(&self, store: &ObjectStore) -> Vec<FdbDetail> {
        self.fdb_entries(store)
            .into_iter()
            .map(|(key, entry)| FdbDetail { key, entry, remote_vtep: None, last_seen_ns: None })
            .collect()
    }

    /// What forwards for the switch and how it is set up, for `show
    /// backend`: the backend's name and details as (key, value) pairs.
    fn describe(&self) -> BackendDescription {
        BackendDescription { name: "unnamed", details: Vec::new() }
    }

    /// Forwarding's counters of a port, with drops by reason and link-level
    /// frames, where the backend counts them.
    fn port_counters(&self, _port: ObjectId) -> Option<PortCounters> {
        None
    }

    /// The traffic manager's counters and DLB's state, where the backend
    /// has them.
    fn qos_report(&self) -> Option<QosReport> {
        None
    }

    /// Switch-wide drops by reason, where the backend counts them.
    fn drop_counters(&self) -> Option<DropCounters> {
        None
    }

    /// Moves what happened in forwarding since the last call (learning,
    /// aging, link changes, neighbour resolution) into `out`, in order.
    fn drain_notifications(&mut self, store: &ObjectStore, out: &mut Vec<Notification>);
}
