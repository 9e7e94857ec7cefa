//! EVPN (RFC 7432, RFC 8365 for VXLAN, RFC 9135/9136 for IRB and prefixes):
//! the MAC-VRFs and IP-VRFs this speaker runs, on top of the L2VPN EVPN
//! address family that the RIBs carry like any other (`packet::evpn` is its
//! wire format).

pub mod config;

pub use config::EvpnConfig;
