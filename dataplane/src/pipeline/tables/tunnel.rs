//! The VXLAN VTEP's tables (RFC 7348): its address, the VLAN-to-VNI map and
//! the flood list (head-end replication) per VNI.

use std::net::Ipv4Addr;

use rustc_hash::FxHashMap;

use super::fib::Route;

use super::{TableError, Tables, Vni};
use crate::wire::VlanId;
use crate::wire::vxlan::{VNI_MAX, VXLAN_PORT};

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
        if self.vxlan.vni_to_vlan.get(&vni).is_some_and(|&other| other != vid) {
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

    pub fn flood_vteps(&self, vni: Vni) -> &[Ipv4Addr] {
        self.vxlan.flood.get(&vni).map(Vec::as_slice).unwrap_or_default()
    }
}
