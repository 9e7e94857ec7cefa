//! Object identities: opaque ids that carry their object's type, and the keys
//! of entry-keyed objects (FDB, route and neighbour entries), which, as in SAI,
//! are identified by value rather than by an id.

use core::fmt;
use std::net::IpAddr;

use dataplane::wire::EthernetAddress;
use ipnetwork::IpNetwork;

/// The kinds of id-keyed objects the shim manages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ObjectType {
    Switch = 1,
    Port = 2,
    Vlan = 3,
    VlanMember = 4,
    BridgePort = 5,
    VirtualRouter = 6,
    RouterInterface = 7,
    NextHop = 8,
    NextHopGroup = 9,
    NextHopGroupMember = 10,
    /// A VXLAN tunnel: the switch's own VTEP.
    Tunnel = 11,
    /// One VLAN <-> VNI mapping of a tunnel.
    TunnelMapEntry = 12,
    /// A remote VTEP reachable through a tunnel.
    TunnelEndpoint = 13,
    HostInterface = 14,
    QosMap = 15,
    BufferPool = 16,
    BufferProfile = 17,
    IngressPriorityGroup = 18,
    Queue = 19,
    Scheduler = 20,
    Wred = 21,
}

impl ObjectType {
    const ALL: [ObjectType; 21] = [
        ObjectType::Switch,
        ObjectType::Port,
        ObjectType::Vlan,
        ObjectType::VlanMember,
        ObjectType::BridgePort,
        ObjectType::VirtualRouter,
        ObjectType::RouterInterface,
        ObjectType::NextHop,
        ObjectType::NextHopGroup,
        ObjectType::NextHopGroupMember,
        ObjectType::Tunnel,
        ObjectType::TunnelMapEntry,
        ObjectType::TunnelEndpoint,
        ObjectType::HostInterface,
        ObjectType::QosMap,
        ObjectType::BufferPool,
        ObjectType::BufferProfile,
        ObjectType::IngressPriorityGroup,
        ObjectType::Queue,
        ObjectType::Scheduler,
        ObjectType::Wred,
    ];

    fn from_u8(value: u8) -> Option<ObjectType> {
        Self::ALL.into_iter().find(|t| *t as u8 == value)
    }

    pub const fn name(self) -> &'static str {
        match self {
            ObjectType::Switch => "switch",
            ObjectType::Port => "port",
            ObjectType::Vlan => "vlan",
            ObjectType::VlanMember => "vlan member",
            ObjectType::BridgePort => "bridge port",
            ObjectType::VirtualRouter => "virtual router",
            ObjectType::RouterInterface => "router interface",
            ObjectType::NextHop => "next hop",
            ObjectType::NextHopGroup => "next-hop group",
            ObjectType::NextHopGroupMember => "next-hop group member",
            ObjectType::Tunnel => "tunnel",
            ObjectType::TunnelMapEntry => "tunnel map entry",
            ObjectType::TunnelEndpoint => "tunnel endpoint",
            ObjectType::HostInterface => "host interface",
            ObjectType::QosMap => "qos map",
            ObjectType::BufferPool => "buffer pool",
            ObjectType::BufferProfile => "buffer profile",
            ObjectType::IngressPriorityGroup => "ingress priority group",
            ObjectType::Queue => "queue",
            ObjectType::Scheduler => "scheduler",
            ObjectType::Wred => "wred",
        }
    }
}

impl fmt::Display for ObjectType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An opaque object id. The top byte holds the [`ObjectType`], the rest a
/// serial number that is never reused within one switch, so a stale id held
/// by a control plane can never name a newer object.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(u64);

impl ObjectId {
    const SERIAL_BITS: u32 = 56;

    pub(crate) fn new(object_type: ObjectType, serial: u64) -> ObjectId {
        debug_assert!(serial < 1 << Self::SERIAL_BITS);
        ObjectId(((object_type as u64) << Self::SERIAL_BITS) | serial)
    }

    /// The smallest and largest ids an object of `object_type` can have.
    pub(crate) fn range_of(object_type: ObjectType) -> (ObjectId, ObjectId) {
        (ObjectId::new(object_type, 0), ObjectId::new(object_type, (1 << Self::SERIAL_BITS) - 1))
    }

    /// The type of the object this id names. An id forged from a raw value
    /// with an unknown type byte answers `None`.
    pub fn object_type(self) -> Option<ObjectType> {
        ObjectType::from_u8((self.0 >> Self::SERIAL_BITS) as u8)
    }

    /// The raw value, for logs and for carrying ids across an API boundary.
    pub const fn to_raw(self) -> u64 {
        self.0
    }

    /// Rebuilds an id from [`ObjectId::to_raw`]. The result may name no
    /// object; every API call checks.
    pub const fn from_raw(raw: u64) -> ObjectId {
        ObjectId(raw)
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.object_type() {
            Some(t) => write!(f, "{}:{:#x}", t, self.0),
            None => write!(f, "oid:{:#x}", self.0),
        }
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Key of an FDB entry: a MAC address in a VLAN (SAI's `bv_id` + `mac_address`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FdbEntryKey {
    pub vlan: ObjectId,
    pub mac: EthernetAddress,
}

/// Key of a route entry: a prefix in a virtual router.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RouteEntryKey {
    pub virtual_router: ObjectId,
    pub destination: IpNetwork,
}

/// Key of a neighbour entry: an IP address on a router interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NeighborEntryKey {
    pub router_interface: ObjectId,
    pub ip: IpAddr,
}

/// Key of an ARP/ND suppression entry (RFC 7432 section 10): a host's IP
/// address in a VLAN (bridge domain), answered for by the switch. SAI has
/// no such entry; it is the shape of Linux's `neigh_suppress` bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SuppressionEntryKey {
    pub vlan: ObjectId,
    pub ip: IpAddr,
}

/// What refers to an object, as reported by [`crate::SaiError::ObjectInUse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Referrer {
    Object(ObjectType),
    FdbEntry,
    RouteEntry,
    NeighborEntry,
    SuppressionEntry,
}

impl fmt::Display for Referrer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Referrer::Object(t) => write!(f, "{t}"),
            Referrer::FdbEntry => f.write_str("fdb entry"),
            Referrer::RouteEntry => f.write_str("route entry"),
            Referrer::NeighborEntry => f.write_str("neighbor entry"),
            Referrer::SuppressionEntry => f.write_str("suppression entry"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_carries_its_type() {
        for t in ObjectType::ALL {
            let id = ObjectId::new(t, 42);
            assert_eq!(id.object_type(), Some(t));
            assert_eq!(ObjectId::from_raw(id.to_raw()), id);
        }
        assert_eq!(ObjectId::from_raw(0).object_type(), None);
        assert_eq!(ObjectId::from_raw(0xff << 56).object_type(), None);
    }
}
