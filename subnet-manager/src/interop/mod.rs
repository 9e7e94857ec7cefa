//! Files other tools read and write: the ibnetdiscover/ibsim topology
//! format (import, and the fat-tree generator's output) and OpenSM's
//! `opensm-lfts.dump` (export), so OpenSM's and our tables diff with
//! standard tools.

pub mod generate;
pub mod ibnet;
pub mod lfts_dump;
