//! BGP speaker: wire format, sans-IO FSM, RIBs and decision process, and the
//! tokio tasks that run sessions over TCP.
//!
//! ```text
//!  TCP bytes ──► tasks.rs (framing) ──► events::Speaker ──► neighbor::Neighbor (RFC 4271 §8 FSM)
//!                                          │    ▲                 │ UpdateReceived
//!                                          │    └── timers ◄──────┘
//!                                          ▼
//!             packet (decode, RFC 7606) ► policy (import) ► rib (Adj-RIB-In, interned attributes)
//!                                          ▼
//!                          decision (RFC 4271 §9.1, multipath) ► rib (Loc-RIB)
//!                                          ▼
//!           Output::Fib ──► sink::RouteSink (QueueSink ─► ShimProgrammer: route entries, next hops, ECMP groups)
//!           export (eBGP/iBGP rules, RFC 4456 reflection, export policy) ► Adj-RIB-Out
//!                          ► packet::update::pack_* ──► Output::Send ──► tasks.rs ──► TCP
//! ```
//!
//! - [`packet`]: every message, hand-written decoders that never panic;
//!   errors carry the NOTIFICATION they map to, and UPDATE attribute errors
//!   are classified as RFC 7606 says ([`packet::ErrorAction`]).
//! - [`neighbor`]: one session's FSM, sans-IO (events and time in, actions out).
//! - [`events`]: the whole speaker, sans-IO: FSMs, RIBs, policy, export,
//!   graceful-restart helper; what the daemon, the tests and the fuzzers drive.
//! - [`rib`], [`decision`], [`policy`], [`config`]: the pieces it is built from.
//! - [`tasks`]: tokio I/O and the [`BgpSpeaker`] handle; [`sink`]: where
//!   selected routes go.
//!
//! The EVPN address family (next issue) plugs in as one more [`packet::Nlri`]
//! variant and [`packet::Family`]: the RIBs, decision process, export and
//! update packing are keyed by `Nlri` and do not change.

pub mod bfd;
pub mod config;
pub mod decision;
pub mod events;
pub mod evpn;
pub mod fib;
pub mod neighbor;
pub mod packet;
pub mod policy;
pub mod rib;
pub mod session_security;
pub mod sink;
pub mod tasks;
pub mod unnumbered;

pub use config::BgpConfig;
pub use sink::RouteSink;
pub use tasks::BgpSpeaker;
