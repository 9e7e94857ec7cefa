//! ARP/ND suppression (RFC 7432 section 10, RFC 9161): per VLAN, the IP to
//! MAC bindings of hosts behind remote VTEPs that EVPN's MAC+IP routes
//! taught. The bridge answers a host's ARP request or neighbour
//! solicitation for one of them itself instead of flooding it across the
//! overlay.

use std::net::IpAddr;

use rustc_hash::FxHashMap;

use super::{TableError, Tables};
use crate::pipeline::config::SwitchConfig;
use crate::wire::{EthernetAddress, VlanId};

pub(crate) struct Suppression {
    pub(crate) entries: FxHashMap<(VlanId, IpAddr), EthernetAddress>,
    capacity: usize,
}

impl Suppression {
    pub(crate) fn new(config: &SwitchConfig) -> Suppression {
        // One binding per remote host MAC at most, in practice: the FDB's size bounds it.
        Suppression { entries: FxHashMap::default(), capacity: config.fdb_capacity }
    }

    /// The MAC to answer with for `ip` in `vid`.
    #[inline]
    pub(crate) fn get(&self, vid: VlanId, ip: IpAddr) -> Option<EthernetAddress> {
        if self.entries.is_empty() {
            return None;
        }
        self.entries.get(&(vid, ip)).copied()
    }
}

impl Tables {
    /// `ip` in `vid` is `mac`: ARP requests and neighbour solicitations
    /// for it are answered by the bridge (installs or replaces).
    pub fn set_suppression_entry(&mut self, vid: VlanId, ip: IpAddr, mac: EthernetAddress) -> Result<(), TableError> {
        if self.bridge.vlan(vid).is_none() {
            return Err(TableError::Invalid("no such VLAN"));
        }
        if mac.is_multicast() || mac == EthernetAddress::ZERO {
            return Err(TableError::Invalid("a suppression entry answers with a unicast MAC"));
        }
        if ip.is_unspecified() || ip.is_multicast() || ip.is_loopback() {
            return Err(TableError::Invalid("a suppression entry is for a host's unicast address"));
        }
        let table = &mut self.suppression;
        if !table.entries.contains_key(&(vid, ip)) && table.entries.len() >= table.capacity {
            return Err(TableError::Full);
        }
        table.entries.insert((vid, ip), mac);
        Ok(())
    }

    pub fn remove_suppression_entry(&mut self, vid: VlanId, ip: IpAddr) -> Result<(), TableError> {
        self.suppression.entries.remove(&(vid, ip)).map(|_| ()).ok_or(TableError::NotFound)
    }

    pub fn suppression_entry(&self, vid: VlanId, ip: IpAddr) -> Option<EthernetAddress> {
        self.suppression.get(vid, ip)
    }

    pub fn suppression_entries(&self) -> impl Iterator<Item = (VlanId, IpAddr, EthernetAddress)> + '_ {
        self.suppression.entries.iter().map(|(&(vid, ip), &mac)| (vid, ip, mac))
    }
}
