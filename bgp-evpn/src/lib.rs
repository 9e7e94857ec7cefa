//! BGP speaker: wire format, sans-IO FSM, RIBs and decision process, and the
//! tokio tasks that run sessions over TCP.
//!
//! The EVPN address family (next issue) plugs in as one more [`packet::Nlri`]
//! variant and [`packet::Family`].

pub mod config;
pub mod decision;
pub mod events;
pub mod neighbor;
pub mod packet;
pub mod policy;
pub mod rib;
pub mod sink;
pub mod tasks;

pub use config::BgpConfig;
pub use sink::RouteSink;
pub use tasks::BgpSpeaker;
