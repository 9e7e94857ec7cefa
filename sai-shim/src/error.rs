//! Errors of the object API. Each says which object or attribute is wrong and
//! why, so a control plane can log it and an operator can act on it.

use thiserror::Error;

use crate::object::{
    FdbEntryKey, NeighborEntryKey, ObjectId, ObjectType, Referrer, RouteEntryKey, SuppressionEntryKey,
};

/// An entry-keyed object, named by its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKey {
    Fdb(FdbEntryKey),
    Route(RouteEntryKey),
    Neighbor(NeighborEntryKey),
    Suppression(SuppressionEntryKey),
}

impl core::fmt::Display for EntryKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EntryKey::Fdb(k) => write!(f, "fdb entry {} in {}", k.mac, k.vlan),
            EntryKey::Route(k) => {
                write!(f, "route entry {} in {}", k.destination, k.virtual_router)
            }
            EntryKey::Neighbor(k) => write!(f, "neighbor entry {} on {}", k.ip, k.router_interface),
            EntryKey::Suppression(k) => write!(f, "suppression entry {} in {}", k.ip, k.vlan),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SaiError {
    /// No object has this id (never created, or already removed).
    #[error("unknown object {0}")]
    UnknownObject(ObjectId),
    /// No entry has this key.
    #[error("unknown {0}")]
    UnknownEntry(EntryKey),
    /// The id names an object of another type than the call or attribute needs.
    #[error("{attribute}: {id} is not a {expected}")]
    WrongObjectType { attribute: &'static str, id: ObjectId, found: Option<ObjectType>, expected: &'static str },
    /// Other objects or entries still refer to this one.
    #[error("{id} is in use by {count} object(s), e.g. a {example}")]
    ObjectInUse { id: ObjectId, count: u32, example: Referrer },
    /// An attribute value is not acceptable.
    #[error("invalid attribute {attribute} of {object}: {reason}")]
    InvalidAttribute { object: &'static str, attribute: &'static str, reason: String },
    /// A create call lacks an attribute the object type cannot do without.
    #[error("mandatory attribute {attribute} of {object} missing")]
    MandatoryAttributeMissing { object: &'static str, attribute: &'static str },
    /// The attribute may only be given when the object is created.
    #[error("attribute {attribute} of {object} is create-only")]
    CreateOnlyAttribute { object: &'static str, attribute: &'static str },
    /// An object or entry with the same identity already exists.
    #[error("{0} already exists")]
    AlreadyExists(String),
    /// The backend's table for this kind of object has no room.
    #[error("{table} table full")]
    TableFull { table: &'static str },
    /// The backend cannot do this (e.g. a second virtual router on the soft backend).
    #[error("not supported: {0}")]
    NotSupported(String),
    /// The backend failed for a reason of its own (e.g. a netlink error).
    #[error("backend failure: {0}")]
    Backend(String),
}

pub type SaiResult<T> = Result<T, SaiError>;

impl SaiError {
    pub(crate) fn invalid(object: ObjectType, attribute: &'static str, reason: impl Into<String>) -> SaiError {
        SaiError::InvalidAttribute { object: object.name(), attribute, reason: reason.into() }
    }

    pub(crate) fn entry_invalid(object: &'static str, attribute: &'static str, reason: impl Into<String>) -> SaiError {
        SaiError::InvalidAttribute { object, attribute, reason: reason.into() }
    }
}
