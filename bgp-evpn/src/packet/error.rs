//! Decoding errors, each carrying the NOTIFICATION it maps to (RFC 4271 §6), and
//! the RFC 7606 actions for errors found inside an UPDATE's path attributes.

use core::fmt;

use super::nlri::AfiSafi;
use super::notification::Notification;

/// NOTIFICATION error codes (RFC 4271 §4.5, RFC 7313 for ROUTE-REFRESH).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ErrorCode {
    MessageHeader = 1,
    Open = 2,
    Update = 3,
    HoldTimerExpired = 4,
    Fsm = 5,
    Cease = 6,
    RouteRefresh = 7,
}

/// Message Header Error subcodes (RFC 4271 §6.1).
pub mod header_subcode {
    pub const CONNECTION_NOT_SYNCHRONIZED: u8 = 1;
    pub const BAD_MESSAGE_LENGTH: u8 = 2;
    pub const BAD_MESSAGE_TYPE: u8 = 3;
}

/// OPEN Message Error subcodes (RFC 4271 §6.2, RFC 5492 §5).
pub mod open_subcode {
    pub const UNSPECIFIC: u8 = 0;
    pub const UNSUPPORTED_VERSION: u8 = 1;
    pub const BAD_PEER_AS: u8 = 2;
    pub const BAD_BGP_IDENTIFIER: u8 = 3;
    pub const UNSUPPORTED_OPTIONAL_PARAMETER: u8 = 4;
    pub const UNACCEPTABLE_HOLD_TIME: u8 = 6;
    pub const UNSUPPORTED_CAPABILITY: u8 = 7;
}

/// UPDATE Message Error subcodes (RFC 4271 §6.3).
pub mod update_subcode {
    pub const MALFORMED_ATTRIBUTE_LIST: u8 = 1;
    pub const UNRECOGNIZED_WELL_KNOWN: u8 = 2;
    pub const MISSING_WELL_KNOWN: u8 = 3;
    pub const ATTRIBUTE_FLAGS: u8 = 4;
    pub const ATTRIBUTE_LENGTH: u8 = 5;
    pub const INVALID_ORIGIN: u8 = 6;
    pub const INVALID_NEXT_HOP: u8 = 8;
    pub const OPTIONAL_ATTRIBUTE: u8 = 9;
    pub const INVALID_NETWORK_FIELD: u8 = 10;
    pub const MALFORMED_AS_PATH: u8 = 11;
}

/// Finite State Machine Error subcodes (RFC 6608).
pub mod fsm_subcode {
    pub const UNEXPECTED_IN_OPEN_SENT: u8 = 1;
    pub const UNEXPECTED_IN_OPEN_CONFIRM: u8 = 2;
    pub const UNEXPECTED_IN_ESTABLISHED: u8 = 3;
}

/// Cease subcodes (RFC 4486).
pub mod cease_subcode {
    pub const MAX_PREFIXES: u8 = 1;
    pub const ADMIN_SHUTDOWN: u8 = 2;
    pub const PEER_DECONFIGURED: u8 = 3;
    pub const ADMIN_RESET: u8 = 4;
    pub const CONNECTION_REJECTED: u8 = 5;
    pub const CONFIG_CHANGE: u8 = 6;
    pub const CONNECTION_COLLISION: u8 = 7;
    pub const OUT_OF_RESOURCES: u8 = 8;
    /// RFC 9384: the session's BFD session went down.
    pub const BFD_DOWN: u8 = 10;
}

/// A message that cannot be accepted: the session must be reset with the
/// NOTIFICATION this error names (RFC 4271 §6, and RFC 7606's "session reset").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub code: ErrorCode,
    pub subcode: u8,
    /// The NOTIFICATION's Data field, as §6 prescribes for each subcode.
    pub data: Vec<u8>,
    /// What was wrong, for logs.
    pub reason: &'static str,
}

impl DecodeError {
    pub fn new(code: ErrorCode, subcode: u8, data: Vec<u8>, reason: &'static str) -> Self {
        DecodeError { code, subcode, data, reason }
    }

    pub(crate) fn header(subcode: u8, data: Vec<u8>, reason: &'static str) -> Self {
        Self::new(ErrorCode::MessageHeader, subcode, data, reason)
    }

    pub(crate) fn open(subcode: u8, data: Vec<u8>, reason: &'static str) -> Self {
        Self::new(ErrorCode::Open, subcode, data, reason)
    }

    pub(crate) fn update(subcode: u8, data: Vec<u8>, reason: &'static str) -> Self {
        Self::new(ErrorCode::Update, subcode, data, reason)
    }

    /// The NOTIFICATION to send before closing the connection.
    pub fn notification(&self) -> Notification {
        Notification { code: self.code as u8, subcode: self.subcode, data: self.data.clone() }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (notification {}/{})", self.reason, self.code as u8, self.subcode)
    }
}

impl std::error::Error for DecodeError {}

/// The RFC 7606 §2 approaches, weakest first so that `max` picks the one that
/// wins when an UPDATE has several errors (§3: "the most severe").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorAction {
    /// §2 "attribute discard": drop the attribute, keep the routes.
    AttributeDiscard,
    /// §2 "treat-as-withdraw": every route the UPDATE carries is withdrawn.
    TreatAsWithdraw,
    /// §2 "AFI/SAFI disable" (RFC 4760 §7): drop every route of the family
    /// from this peer and ignore the family for the rest of the session.
    AfiSafiDisable(AfiSafi),
}

/// One error found in an UPDATE's path attributes that does not reset the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributeError {
    pub type_code: u8,
    pub action: ErrorAction,
    /// The UPDATE Message Error subcode RFC 4271 would have sent, for logs.
    pub subcode: u8,
    pub reason: &'static str,
}
