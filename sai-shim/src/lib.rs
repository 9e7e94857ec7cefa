//! The SAI-like object API that every control plane programs, and its backends.
//!
//! Control planes (BGP-EVPN, the subnet manager, switchd's config) create,
//! set and remove typed objects through [`Sai`]; it validates them (mandatory
//! and create-only attributes, references to existing objects of the right
//! type, uniqueness), keeps reference counts so nothing in use disappears,
//! and hands them to a [`Backend`], which programs forwarding:
//! [`backend::soft::SoftBackend`] programs this project's pipeline, a
//! `kernel` backend (rtnetlink) will sit beside it. What forwarding learns
//! (MACs, neighbours, link state) comes back as queued [`Notification`]s.
//!
//! The model follows SAI's: id-keyed objects ([`ObjectId`] carries the
//! [`ObjectType`] and is never reused) and entries keyed by value
//! ([`FdbEntryKey`], [`RouteEntryKey`], [`NeighborEntryKey`]). Differences
//! from SAI, for simplicity: one implicit .1Q bridge; a
//! [`TunnelMapEntry`] maps a VLAN and a VNI both ways; a remote VTEP is a
//! [`TunnelEndpoint`] behind a tunnel bridge port, whose VLAN membership puts
//! it on the VLAN's flood list (head-end replication); a switch's own
//! addresses are routes whose next hop is the CPU port, its connected subnets
//! routes whose next hop is a router interface.
//!
//! ```
//! use dataplane::pipeline::{Disposition, Output, SwitchConfig};
//! use sai_shim::backend::soft::SoftBackend;
//! use sai_shim::*;
//!
//! let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &[]).unwrap();
//! let vlan = sai.create_vlan(&[VlanAttr::VlanId(10)]).unwrap();
//! let mut ports = Vec::new();
//! for name in ["eth1", "eth2"] {
//!     let port = sai
//!         .create_port(&[PortAttr::Name(name.into()), PortAttr::AdminState(true), PortAttr::PortVlanId(10)])
//!         .unwrap();
//!     let bridge_port = sai.create_bridge_port(&[BridgePortAttr::Type(BridgePortType::Port(port))]).unwrap();
//!     sai.create_vlan_member(&[VlanMemberAttr::VlanId(vlan), VlanMemberAttr::BridgePortId(bridge_port)]).unwrap();
//!     ports.push(port);
//! }
//! // A port with members cannot go.
//! assert!(matches!(sai.remove(ports[0]), Err(SaiError::ObjectInUse { .. })));
//!
//! // A broadcast received on eth1 is flooded to eth2, and its source learned.
//! let mut frame = vec![0xff; 6];
//! frame.extend_from_slice(&[0x02, 0, 0, 0, 0, 1, 0x88, 0xb6]);
//! frame.resize(60, 0);
//! let mut out = Output::new();
//! let disposition = sai.backend_mut().process(0, ports[0], &frame, &mut out);
//! assert_eq!(disposition, Disposition::Flooded);
//! assert_eq!(out.len(), 1);
//! assert!(matches!(
//!     sai.drain_notifications()[..],
//!     [Notification::Fdb { event: FdbEvent::Learned, .. }]
//! ));
//! ```

pub mod api;
pub mod attributes;
pub mod backend;
pub mod error;
pub mod notification;
pub mod object;
pub mod qos;

pub use api::{ObjectStore, Sai};
pub use attributes::*;
pub use backend::{Backend, BackendDescription, FdbDetail, FdbFlush, FdbFlushType, PortStats, QosReport};
/// MAC addresses in FDB and neighbour keys are the dataplane's.
pub use dataplane::wire::EthernetAddress;
pub use error::{EntryKey, SaiError, SaiResult};
pub use notification::{
    FdbEvent, NeighborInfo, NeighborState, Notification, NotificationBus, PfcDeadlockEvent, SubscriberStats,
    Subscription,
};
pub use object::{FdbEntryKey, NeighborEntryKey, ObjectId, ObjectType, Referrer, RouteEntryKey, SuppressionEntryKey};
