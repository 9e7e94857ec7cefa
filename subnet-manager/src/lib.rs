//! InfiniBand-style subnet management: the MAD/SMP wire formats (IBA vol. 1
//! chapters 13 and 14, byte for byte), the subnet management agent every
//! switch and HCA-like endpoint runs, and the subnet manager (discovery, LIDs,
//! routing engines, LFT programming, sweeps, failover) with its transports.

pub mod agent;
pub mod fabric;
pub mod interop;
pub mod lid;
pub mod packet;
pub mod plane;
pub mod routing;
pub mod sm;
pub mod topology;
pub mod transport;
