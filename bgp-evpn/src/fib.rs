//! Typed forwarding changes: what the speaker asks the dataplane to hold.
//!
//! IP routes carry their VRF; a next hop is either an underlay neighbour or,
//! for routes learned through EVPN, the remote VTEP with the L3VNI and the
//! router MAC to encapsulate with (RFC 9135 §4.1, symmetric IRB). EVPN also
//! yields the L2 state of a MAC-VRF: remote MACs behind VTEPs (RFC 7432 §9.2),
//! ARP/ND suppression entries (§10) and per-VNI flood lists (§11, head-end
//! replication per RFC 8365 §8).

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

use crate::packet::evpn::MacAddr;
use ipnetwork::IpNetwork;

/// Where an IP route forwards to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NextHop {
    /// A neighbour on a connected subnet (the underlay, or the default VRF).
    Ip(IpAddr),
    /// Across the overlay: VXLAN to `vtep` with `vni` (the L3VNI), the inner
    /// frame addressed to the remote `router_mac`.
    Vtep { vtep: IpAddr, vni: u32, router_mac: MacAddr },
}

impl NextHop {
    /// The underlay address of a plain next hop.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            NextHop::Ip(ip) => Some(*ip),
            NextHop::Vtep { .. } => None,
        }
    }
}

impl fmt::Display for NextHop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NextHop::Ip(ip) => write!(f, "{ip}"),
            NextHop::Vtep { vtep, vni, router_mac } => write!(f, "{vtep} vni {vni} rmac {router_mac}"),
        }
    }
}

/// One change to forwarding state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FibChange {
    /// `prefix` in `vrf` (`None`: the default VRF) through `next_hops`
    /// (several: an ECMP group); none removes the route.
    Route { vrf: Option<String>, prefix: IpNetwork, next_hops: Vec<NextHop> },
    /// `mac` in `vni` is behind `vtep` (`None`: no longer remote);
    /// `sticky` (RFC 7432 section 15.2, advertised with the sticky bit):
    /// pinned there, data-plane learning never moves it to a local port.
    RemoteMac { vni: u32, mac: MacAddr, vtep: Option<IpAddr>, sticky: bool },
    /// ARP/ND suppression: `ip` in `vni` is `mac` (`None`: forget it).
    Neighbor { vni: u32, ip: IpAddr, mac: Option<MacAddr> },
    /// `vtep` joins (`present`) or leaves the flood list of `vni`.
    FloodVtep { vni: u32, vtep: IpAddr, present: bool },
    /// BGP unnumbered: the neighbour with link-local address `peer` is on
    /// `interface` (the kernel's name): next hops at that address leave
    /// through it, which no connected subnet can tell.
    LinkLocalPeer { interface: String, peer: Ipv6Addr },
}
