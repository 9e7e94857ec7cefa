//! Notifications: what the forwarding side tells the control planes (SAI's
//! `fdb_event`, `port_state_change` and friends). They are queued, never
//! delivered by callback on another thread: the owner of the [`crate::Sai`]
//! drains them when it likes ([`crate::Sai::drain_notifications`]).

use std::net::IpAddr;

use dataplane::wire::EthernetAddress;

use crate::object::{FdbEntryKey, ObjectId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FdbEvent {
    /// A source MAC was learned on `bridge_port`.
    Learned,
    /// A learned MAC was not seen for the aging time and was removed.
    Aged,
    /// A learned MAC appeared on another bridge port; `bridge_port` is the new one.
    Moved { from: Option<ObjectId> },
    /// A learned MAC was removed by a flush: an API flush, or its bridge port
    /// or VLAN membership going away.
    Flushed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notification {
    Fdb {
        event: FdbEvent,
        entry: FdbEntryKey,
        /// The bridge port the MAC is (or, for aged, was) behind; `None` if
        /// the backend's destination has no bridge port object (a race with
        /// its removal).
        bridge_port: Option<ObjectId>,
    },
    PortOperStatus {
        port: ObjectId,
        up: bool,
    },
    /// ARP or neighbour discovery resolved `ip` on a router interface.
    NeighborResolved {
        router_interface: ObjectId,
        ip: IpAddr,
        mac: EthernetAddress,
    },
    /// A resolved neighbour failed re-probing and was dropped.
    NeighborExpired {
        router_interface: ObjectId,
        ip: IpAddr,
    },
}

/// Resolution state of a neighbour, as forwarding holds it (RFC 4861
/// section 7.3.2 for both ARP and ND).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeighborState {
    Incomplete,
    Reachable,
    Stale,
    Probe,
    Failed,
}

/// One neighbour as forwarding holds it: control-plane (static) or resolved
/// by ARP/ND.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeighborInfo {
    pub mac: Option<EthernetAddress>,
    pub state: NeighborState,
    pub is_static: bool,
}
