//! Traffic-management algorithms with no I/O. Time is an input (`u64`
//! nanoseconds); nothing here reads a clock, opens a socket or allocates per
//! packet once built. The node (`dataplane`) drives it in real time, the
//! simulator in virtual time.

pub mod buffer;
pub mod classify;
pub mod dlb;
pub mod ecn;
pub mod endpoint;
pub mod ib;
pub mod lossless;
pub mod pfc;
pub mod scheduler;
pub mod shaper;
pub mod tm;
pub mod voq;
pub mod watchdog;
