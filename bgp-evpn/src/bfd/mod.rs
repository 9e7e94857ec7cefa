//! Bidirectional Forwarding Detection (RFC 5880), single hop (RFC 5881):
//! `packet` is the control packet's wire format, `session` one session's
//! sans-IO state machine (asynchronous mode, Poll/Final, no echo or demand
//! mode, no authentication), `sessions` the table that demultiplexes
//! datagrams to sessions and enforces TTL 255 (RFC 5881 section 5),
//! `socket` the UDP sockets (port 3784, TTL 255, a source port in
//! 49152-65535), `tasks` the tokio task that runs the table over them and
//! tells the registered protocol (BGP) of state changes.

pub mod packet;
pub mod session;
pub mod sessions;
pub mod socket;
pub mod tasks;

pub use packet::{ControlPacket, ControlRepr, Diagnostic, PacketError, State};
pub use session::{Session, SessionConfig, Transition};
pub use sessions::{Discard, Sessions};
pub use tasks::{Bfd, BfdDiscards, BfdEvent, BfdPeerView, BfdTask};
