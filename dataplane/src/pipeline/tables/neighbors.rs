//! The neighbour cache (ARP for IPv4, RFC 826; neighbour discovery for IPv6,
//! RFC 4861): entries and their states. The state machine runs in `stages::neighbor`.

use std::net::IpAddr;

use rustc_hash::FxHashMap;

use super::{RifId, TableError, Tables};
use crate::pipeline::config::SwitchConfig;
use crate::wire::EthernetAddress;

/// RFC 4861 section 7.3.2, less DELAY (a Stale entry in use is probed at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NeighborState {
    /// Resolution in progress: requests sent, no answer yet.
    Incomplete,
    /// Confirmed within the reachable time.
    Reachable,
    /// Not confirmed lately; still used.
    Stale,
    /// Stale and in use: unicast requests are being sent to confirm it.
    Probe,
    /// Resolution failed; packets to it are dropped until it is retried.
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeighborEntry {
    pub mac: Option<EthernetAddress>,
    pub state: NeighborState,
    /// Time of the last state change or confirmation.
    pub updated: u64,
    /// Installed by the control plane: never aged or probed.
    pub is_static: bool,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Neighbor {
    pub(crate) entry: NeighborEntry,
    /// Requests sent in the current Incomplete or Probe round.
    pub(crate) probes: u8,
    /// When the next request is due (Incomplete/Probe).
    pub(crate) next_probe: u64,
}

pub(crate) struct NeighborTable {
    pub(crate) entries: FxHashMap<(RifId, IpAddr), Neighbor>,
    capacity: usize,
}

impl NeighborTable {
    pub(crate) fn new(config: &SwitchConfig) -> NeighborTable {
        let mut entries = FxHashMap::default();
        entries.reserve(config.neighbor_capacity);
        NeighborTable { entries, capacity: config.neighbor_capacity }
    }

    pub(crate) fn remove_rif(&mut self, rif: RifId) {
        self.entries.retain(|&(r, _), _| r != rif);
    }

    pub(crate) fn is_full(&self) -> bool {
        self.entries.len() >= self.capacity
    }
}

impl Tables {
    /// Installs a static neighbour.
    pub fn set_neighbor(&mut self, rif: RifId, ip: IpAddr, mac: EthernetAddress) -> Result<(), TableError> {
        if self.router.rif(rif).is_none() {
            return Err(TableError::Invalid("no such router interface"));
        }
        let key = (rif, ip);
        if !self.neighbors.entries.contains_key(&key) && self.neighbors.is_full() {
            return Err(TableError::Full);
        }
        let entry = NeighborEntry { mac: Some(mac), state: NeighborState::Reachable, updated: 0, is_static: true };
        self.neighbors.entries.insert(key, Neighbor { entry, probes: 0, next_probe: 0 });
        self.router.invalidate_rewrites();
        Ok(())
    }

    pub fn remove_neighbor(&mut self, rif: RifId, ip: IpAddr) -> Result<(), TableError> {
        self.router.invalidate_rewrites();
        self.neighbors.entries.remove(&(rif, ip)).map(|_| ()).ok_or(TableError::NotFound)
    }

    pub fn neighbors(&self) -> impl Iterator<Item = (RifId, IpAddr, NeighborEntry)> + '_ {
        self.neighbors.entries.iter().map(|(&(rif, ip), neighbor)| (rif, ip, neighbor.entry))
    }

    pub fn neighbor(&self, rif: RifId, ip: IpAddr) -> Option<NeighborEntry> {
        self.neighbors.entries.get(&(rif, ip)).map(|neighbor| neighbor.entry)
    }
}

/// A request `poll` sends: to resolve (`unicast: None`) or probe.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request {
    pub(crate) rif: RifId,
    pub(crate) ip: IpAddr,
    pub(crate) unicast: Option<EthernetAddress>,
}
