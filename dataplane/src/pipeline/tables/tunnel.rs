//! The VXLAN VTEP's tables (RFC 7348): its address, the VLAN-to-VNI map,
//! the flood list (head-end replication) per VNI, and the L3VNIs of
//! symmetric IRB (RFC 9135 section 4): VNI <-> VRF with the VRF's router MAC.

use std::net::Ipv4Addr;

use rustc_hash::FxHashMap;

use super::fib::Route;

use super::{TableError, Tables, Vni, VrfId};
use crate::wire::vxlan::{VNI_MAX, VXLAN_PORT};
use crate::wire::{EthernetAddress, VlanId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VtepConfig {
    /// The local VTEP address: outer source, and what decapsulation answers to.
    pub source_ip: Ipv4Addr,
    /// UDP destination port of outer packets (4789).
    pub udp_port: u16,
}

impl Default for VtepConfig {
    fn default() -> Self {
        VtepConfig { source_ip: Ipv4Addr::UNSPECIFIED, udp_port: VXLAN_PORT }
    }
}

#[derive(Default)]
pub(crate) struct Vtep {
    pub(crate) config: Option<VtepConfig>,
    pub(crate) vni_to_vlan: FxHashMap<Vni, VlanId>,
    pub(crate) flood: FxHashMap<Vni, Vec<Ipv4Addr>>,
    /// Remote VTEPs whose frames teach the FDB nothing: EVPN's, whose MACs
    /// come from the control plane (RFC 8365 section 5.1).
    pub(crate) not_learned_from: rustc_hash::FxHashSet<Ipv4Addr>,
    /// The underlay route to each remote VTEP in use: a hash lookup instead
    /// of a walk of the (possibly large) route table per encapsulated frame.
    /// Cleared whenever a route changes; bounded by `ROUTE_CACHE_CAPACITY`.
    pub(crate) route_cache: FxHashMap<Ipv4Addr, Route>,
    /// L3VNIs: what arrives on one, addressed to the router MAC, is routed
    /// in its VRF (SAI's VNI-to-virtual-router map).
    pub(crate) l3vnis: FxHashMap<Vni, L3Vni>,
    /// Per VRF with an L3VNI, its router MAC: the inner source of what is
    /// routed into the overlay (SAI's virtual router SRC_MAC_ADDRESS).
    pub(crate) vrf_router_macs: FxHashMap<VrfId, EthernetAddress>,
}

/// An L3VNI: the VRF it routes in and the router MAC its frames are sent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L3Vni {
    pub vrf: VrfId,
    pub router_mac: EthernetAddress,
}

pub(crate) const ROUTE_CACHE_CAPACITY: usize = 4096;

impl Tables {
    /// Configures (or, with `None`, removes) the local VTEP.
    pub fn set_vtep(&mut self, config: Option<VtepConfig>) {
        self.vxlan.config = config;
    }

    pub fn vtep(&self) -> Option<VtepConfig> {
        self.vxlan.config
    }

    /// Whether the source MACs of frames decapsulated from `remote` are
    /// learned (the default) or not (EVPN's remote VTEPs).
    pub fn set_remote_learning(&mut self, remote: Ipv4Addr, learning: bool) {
        if learning {
            self.vxlan.not_learned_from.remove(&remote);
        } else {
            self.vxlan.not_learned_from.insert(remote);
        }
    }

    /// Maps a VLAN to a VNI (one to one).
    pub fn map_vlan_to_vni(&mut self, vid: VlanId, vni: Vni) -> Result<(), TableError> {
        if vni > VNI_MAX {
            return Err(TableError::Invalid("VNI is 24 bits"));
        }
        if self.bridge.vlan(vid).is_none() {
            return Err(TableError::Invalid("no such VLAN"));
        }
        if self.vxlan.vni_to_vlan.get(&vni).is_some_and(|&other| other != vid) || self.vxlan.l3vnis.contains_key(&vni) {
            return Err(TableError::InUse);
        }
        let vlan = self.bridge.vlan_mut(vid).expect("checked");
        if let Some(old) = vlan.vni.replace(vni) {
            self.vxlan.vni_to_vlan.remove(&old);
        }
        self.vxlan.vni_to_vlan.insert(vni, vid);
        Ok(())
    }

    pub fn unmap_vlan(&mut self, vid: VlanId) -> Result<(), TableError> {
        let vni = self.bridge.vlan_mut(vid).and_then(|vlan| vlan.vni.take()).ok_or(TableError::NotFound)?;
        self.vxlan.vni_to_vlan.remove(&vni);
        Ok(())
    }

    pub fn vlan_vni(&self, vid: VlanId) -> Option<Vni> {
        self.bridge.vlan(vid).and_then(|vlan| vlan.vni)
    }

    /// Adds a remote VTEP to the VNI's flood list (head-end replication).
    pub fn add_flood_vtep(&mut self, vni: Vni, remote: Ipv4Addr) -> Result<(), TableError> {
        if vni > VNI_MAX {
            return Err(TableError::Invalid("VNI is 24 bits"));
        }
        let list = self.vxlan.flood.entry(vni).or_default();
        if !list.contains(&remote) {
            list.push(remote);
        }
        Ok(())
    }

    pub fn remove_flood_vtep(&mut self, vni: Vni, remote: Ipv4Addr) -> Result<(), TableError> {
        let list = self.vxlan.flood.get_mut(&vni).ok_or(TableError::NotFound)?;
        let before = list.len();
        list.retain(|&vtep| vtep != remote);
        if list.len() == before {
            return Err(TableError::NotFound);
        }
        if list.is_empty() {
            self.vxlan.flood.remove(&vni);
        }
        Ok(())
    }

    /// Makes `vni` an L3VNI of `l3.vrf` (RFC 9135 section 4): VXLAN on it
    /// whose inner destination is `l3.router_mac` is routed in the VRF,
    /// and packets the VRF routes into the overlay carry that MAC as inner
    /// source. A VNI is either a VLAN's or a VRF's.
    pub fn map_vni_to_vrf(&mut self, vni: Vni, l3: L3Vni) -> Result<(), TableError> {
        if vni > VNI_MAX {
            return Err(TableError::Invalid("VNI is 24 bits"));
        }
        if self.router.fib(l3.vrf).is_none() {
            return Err(TableError::Invalid("no such VRF"));
        }
        if l3.router_mac.is_multicast() || l3.router_mac == EthernetAddress::ZERO {
            return Err(TableError::Invalid("router MAC must be unicast"));
        }
        if self.vxlan.vni_to_vlan.contains_key(&vni) {
            return Err(TableError::InUse);
        }
        if self.vxlan.l3vnis.iter().any(|(&other, mapped)| other != vni && mapped.vrf == l3.vrf) {
            return Err(TableError::Invalid("the VRF has another L3VNI"));
        }
        if let Some(old) = self.vxlan.l3vnis.insert(vni, l3) {
            self.vxlan.vrf_router_macs.remove(&old.vrf);
        }
        self.vxlan.vrf_router_macs.insert(l3.vrf, l3.router_mac);
        Ok(())
    }

    pub fn unmap_vni_from_vrf(&mut self, vni: Vni) -> Result<(), TableError> {
        let old = self.vxlan.l3vnis.remove(&vni).ok_or(TableError::NotFound)?;
        self.vxlan.vrf_router_macs.remove(&old.vrf);
        Ok(())
    }

    pub fn l3vni(&self, vni: Vni) -> Option<L3Vni> {
        self.vxlan.l3vnis.get(&vni).copied()
    }

    pub fn flood_vteps(&self, vni: Vni) -> &[Ipv4Addr] {
        self.vxlan.flood.get(&vni).map(Vec::as_slice).unwrap_or_default()
    }
}
