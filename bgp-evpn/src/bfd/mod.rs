//! Bidirectional Forwarding Detection (RFC 5880), single hop (RFC 5881):
//! `packet` is the control packet's wire format, `session` one session's
//! sans-IO state machine (asynchronous mode, Poll/Final, no echo or demand
//! mode, no authentication), `sessions` the table that demultiplexes
//! datagrams to sessions and enforces TTL 255 (RFC 5881 section 5).
//!
//! Not built yet: the UDP 3784 socket task around `Sessions`, BGP's
//! registration of its neighbours, and `show bfd peers`.

pub mod packet;
pub mod session;
pub mod sessions;

pub use packet::{ControlPacket, ControlRepr, Diagnostic, PacketError, State};
pub use session::{Session, SessionConfig, Transition};
pub use sessions::{Discard, Sessions};
