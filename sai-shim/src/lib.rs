//! The SAI-like object API that every control plane programs, and its backends.
//!
//! Control planes (BGP-EVPN, the subnet manager, switchd's config) create,
//! set and remove typed objects through [`Sai`]; it validates them, keeps
//! reference counts and hands them to a [`Backend`], which programs
//! forwarding: [`backend::soft::SoftBackend`] programs this project's
//! pipeline. Forwarding events come back as [`Notification`]s.

pub mod api;
pub mod attributes;
pub mod backend;
pub mod error;
pub mod notification;
pub mod object;

pub use api::{ObjectStore, Sai};
pub use attributes::*;
pub use backend::{Backend, FdbFlush, FdbFlushType, PortStats};
pub use error::{EntryKey, SaiError, SaiResult};
pub use notification::{FdbEvent, Notification};
pub use object::{FdbEntryKey, NeighborEntryKey, ObjectId, ObjectType, Referrer, RouteEntryKey};
