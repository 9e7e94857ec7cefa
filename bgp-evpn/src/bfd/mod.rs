//! Bidirectional Forwarding Detection (RFC 5880), single hop (RFC 5881):
//! `packet` is the control packet's wire format, `session` one session's
//! sans-IO state machine (asynchronous mode, Poll/Final, no echo or demand
//! mode, no authentication).
//!
//! Not built yet: the UDP 3784 I/O task (TTL 255 sent and required), the
//! session table demultiplexing by discriminator and address, BGP's
//! registration of its neighbours, and `show bfd peers`.

pub mod packet;
pub mod session;

pub use packet::{ControlPacket, ControlRepr, Diagnostic, PacketError, State};
pub use session::{Session, SessionConfig, Transition};
