//! `switchd`, the switch daemon, as a library: the config model, its
//! application to the SAI-like shim, the management server, the LLDP agent,
//! the BGP speaker's glue, the IB-like plane
//! and the in-memory demo fabric. `main.rs` is a thin command-line front.

pub mod access;
pub mod apply;
pub mod apply_vrf;
pub mod backend;
pub mod bgp;
pub mod bgp_follow;
pub mod bgp_plane;
pub mod commit;
pub mod config;
pub mod daemon;
pub mod demo;
pub mod evpn;
pub mod evpn_follow;
pub mod forwarding;
pub mod hostif;
pub mod ib;
pub mod lldp;
pub mod metrics;
pub mod mgmt;
pub mod qos;
pub mod scheduling;
pub mod soft_forwarding;
