//! The lab layer: containerlab topologies and their runner, `fabric-host`
//! (the lab host program) and the virtual-time simulator.

pub mod check;
pub mod evpn;
pub mod fabric_host;
pub mod frr_vrf;
pub mod generate;
pub mod host_limits;
pub mod hosts;
pub mod ib;
pub mod irb;
pub mod lossless;
pub mod netns;
pub mod ping;
pub mod runner;
pub mod sim;
pub mod topology;
pub mod traffic;
