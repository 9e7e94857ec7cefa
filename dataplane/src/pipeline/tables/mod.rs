//! The forwarding tables the control plane programs, apart from the stage
//! code that reads them per packet (`super::stages`): one module per table,
//! each with the control API that keeps it consistent with the others.
//! [`Tables`] can be built, programmed and queried without any stage.

pub(crate) mod bridge;
mod dir24;
pub(crate) mod fib;
pub(crate) mod neighbors;
pub(crate) mod ports;
pub(crate) mod router;
pub(crate) mod suppression;
pub(crate) mod tunnel;

use super::config::SwitchConfig;
use super::counters::PortCounters;
use super::events::{Event, EventQueue};

/// Dense index of a front-panel port, `< SwitchConfig::max_ports`, chosen by the caller.
pub type PortId = u16;
/// Dense index of a router interface, `< SwitchConfig::max_router_interfaces`.
pub type RifId = u16;
pub type NextHopId = u32;
pub type NextHopGroupId = u32;
/// A 24-bit VXLAN network identifier.
pub type Vni = u32;
/// A virtual routing and forwarding instance (its own routing table),
/// `< SwitchConfig::max_vrfs`; VRF 0 always exists.
pub type VrfId = u16;
/// The VRF every switch has, and the underlay's: router interfaces and
/// routes are in it unless they name another.
pub const DEFAULT_VRF: VrfId = 0;

/// Why a table operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableError {
    Full,
    NotFound,
    InUse,
    Invalid(&'static str),
}

impl core::fmt::Display for TableError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TableError::Full => f.write_str("table full"),
            TableError::NotFound => f.write_str("not found"),
            TableError::InUse => f.write_str("in use"),
            TableError::Invalid(why) => write!(f, "invalid: {why}"),
        }
    }
}

impl std::error::Error for TableError {}

/// The forwarding state one switch's control plane programs: ports, VLANs
/// and the FDB, router interfaces, VRFs and their routes, next hops and
/// groups, neighbours, ARP/ND suppression bindings, the VXLAN VTEP; and the events its changes raise.
pub struct Tables {
    pub(crate) config: SwitchConfig,
    pub(crate) ports: Vec<Option<ports::Port>>,
    pub(crate) bridge: bridge::Bridge,
    pub(crate) router: router::Router,
    pub(crate) neighbors: neighbors::NeighborTable,
    pub(crate) suppression: suppression::Suppression,
    pub(crate) vxlan: tunnel::Vtep,
    pub(crate) events: EventQueue,
}

impl Tables {
    pub fn new(config: SwitchConfig) -> Tables {
        Tables {
            ports: (0..config.max_ports).map(|_| None).collect(),
            bridge: bridge::Bridge::new(&config),
            router: router::Router::new(&config),
            neighbors: neighbors::NeighborTable::new(&config),
            suppression: suppression::Suppression::new(&config),
            vxlan: tunnel::Vtep::default(),
            events: EventQueue::new(config.event_capacity),
            config,
        }
    }

    pub fn config(&self) -> &SwitchConfig {
        &self.config
    }

    /// Events since the last drain, oldest first.
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, Event> {
        self.events.events.drain(..)
    }

    /// Events lost because the queue was full when they happened.
    pub fn events_lost(&self) -> u64 {
        self.events.lost
    }

    pub fn port_counters(&self, port: PortId) -> Option<&PortCounters> {
        self.ports.get(usize::from(port))?.as_ref().map(|port| &port.counters)
    }
}

/// The tables on their own, with no stage: what the control plane (or
/// another forwarding engine, such as the simulator's) builds and queries.
#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::bridge::{FdbDest, FdbKind};
    use super::fib::RouteTarget;
    use super::ports::PortConfig;
    use super::router::{NextHop, RifKind, RouterInterface};
    use super::*;
    use crate::wire::EthernetAddress;

    #[test]
    fn tables_are_programmed_and_queried_without_a_pipeline() {
        let mut tables = Tables::new(SwitchConfig::small());
        let mac = EthernetAddress([0x02, 0, 0, 0, 0, 1]);
        tables.set_port(0, PortConfig { pvid: 10, ..PortConfig::default() }).unwrap();
        tables.create_vlan(10).unwrap();
        tables.set_vlan_member(10, 0, false).unwrap();
        tables.set_fdb_entry(10, mac, FdbDest::Port(0), FdbKind::Static, 0).unwrap();
        assert_eq!(tables.fdb_entry(10, mac).map(|entry| entry.dest), Some(FdbDest::Port(0)));
        assert_eq!(tables.remove_vlan(10), Err(TableError::InUse), "a VLAN with members stays");

        tables.set_port(1, PortConfig { pvid: 0, ..PortConfig::default() }).unwrap();
        tables.create_vrf(2).unwrap();
        let rif = RouterInterface { kind: RifKind::Port(1), mac, mtu: 1500, admin_up: true, vrf: 2 };
        tables.set_router_interface(0, rif).unwrap();
        let next_hop = NextHop { rif: 0, ip: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)) };
        tables.set_next_hop(1, next_hop).unwrap();
        tables.set_route_in(2, "10.1.0.0/16".parse().unwrap(), RouteTarget::NextHop(1)).unwrap();
        let inside = IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3));
        assert_eq!(tables.lookup_route_in(2, inside), Some(RouteTarget::NextHop(1)));
        assert_eq!(tables.lookup_route(inside), None, "not in the default VRF");
        assert_eq!(tables.remove_next_hop(1), Err(TableError::InUse), "a route uses it");
    }
}
