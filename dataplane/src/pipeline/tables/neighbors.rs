//! The neighbour cache (ARP for IPv4, RFC 826; neighbour discovery for IPv6,
//! RFC 4861): entries and their states. The state machine runs in `stages::neighbor`.

use std::net::IpAddr;

use rustc_hash::FxHashMap;

use super::{RifId, TableError, Tables};
use crate::pipeline::config::SwitchConfig;
use crate::wire::{EtherType, EthernetAddress};

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
    /// Packets waiting for an Incomplete neighbour.
    pub(crate) held: HeldPackets,
}

impl NeighborTable {
    pub(crate) fn new(config: &SwitchConfig) -> NeighborTable {
        let mut entries = FxHashMap::default();
        entries.reserve(config.neighbor_capacity);
        let held = HeldPackets::new(config.neighbor_hold_capacity, config.neighbor_hold_per_neighbor);
        NeighborTable { entries, capacity: config.neighbor_capacity, held }
    }

    /// Removes a router interface's neighbours; their held packets are
    /// dropped with them (the interface is gone: no error can leave by it).
    pub(crate) fn remove_rif(&mut self, rif: RifId) {
        self.entries.retain(|&(r, _), _| r != rif);
        self.held.discard(|(r, _)| r == rif);
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
        self.neighbors.held.discard(|neighbor| neighbor == (rif, ip));
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

/// A neighbour: a router interface and an address on its link.
pub(crate) type NeighborKey = (RifId, IpAddr);

/// Packets held while their next hop's address is resolved (RFC 4861
/// section 7.2.2 asks for at least one per neighbour; ARP gets the same):
/// at most `per_neighbor` for one neighbour and as many in all as slots.
/// The slots and their buffers are reused, so holding allocates nothing
/// once a buffer has grown to the packets it holds.
pub(crate) struct HeldPackets {
    slots: Vec<HeldPacket>,
    per_neighbor: usize,
    /// Holding order, so that a neighbour's packets leave as they came.
    next_sequence: u64,
    held: usize,
}

pub(crate) struct HeldPacket {
    /// The neighbour the packet waits for; `None` for a free slot.
    pub(crate) neighbor: Option<NeighborKey>,
    /// The router interface the packet arrived on, to send an error back
    /// by if resolution fails; `None` for a packet the switch originated.
    pub(crate) ingress: Option<RifId>,
    pub(crate) ethertype: EtherType,
    sequence: u64,
    /// The IP packet as it will be sent (TTL already decremented).
    pub(crate) bytes: Vec<u8>,
}

impl HeldPackets {
    fn new(capacity: usize, per_neighbor: u8) -> HeldPackets {
        let slots = (0..capacity)
            .map(|_| HeldPacket {
                neighbor: None,
                ingress: None,
                ethertype: EtherType::Ipv4,
                sequence: 0,
                bytes: Vec::new(),
            })
            .collect();
        HeldPackets { slots, per_neighbor: usize::from(per_neighbor), next_sequence: 0, held: 0 }
    }

    /// A buffer of `len` bytes to hold a packet for `neighbor` in, or
    /// `None` when that neighbour's queue or the table is full.
    pub(crate) fn hold(
        &mut self,
        neighbor: NeighborKey,
        ingress: Option<RifId>,
        ethertype: EtherType,
        len: usize,
    ) -> Option<&mut [u8]> {
        if self.held >= self.slots.len() || self.count(neighbor) >= self.per_neighbor {
            return None;
        }
        let slot = self.slots.iter_mut().find(|slot| slot.neighbor.is_none())?;
        self.held += 1;
        self.next_sequence += 1;
        *slot = HeldPacket {
            neighbor: Some(neighbor),
            ingress,
            ethertype,
            sequence: self.next_sequence,
            bytes: std::mem::take(&mut slot.bytes),
        };
        slot.bytes.clear();
        slot.bytes.resize(len, 0);
        Some(&mut slot.bytes)
    }

    fn count(&self, neighbor: NeighborKey) -> usize {
        if self.held == 0 {
            return 0;
        }
        self.slots.iter().filter(|slot| slot.neighbor == Some(neighbor)).count()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.held == 0
    }

    /// Takes out the oldest packet held for a neighbour `which` selects.
    /// Its buffer goes back with [`HeldPackets::recycle`].
    pub(crate) fn take_oldest(&mut self, mut which: impl FnMut(NeighborKey) -> bool) -> Option<(usize, HeldPacket)> {
        if self.held == 0 {
            return None;
        }
        let index = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.neighbor.is_some_and(&mut which))
            .min_by_key(|(_, slot)| slot.sequence)?
            .0;
        let slot = &mut self.slots[index];
        self.held -= 1;
        let taken = HeldPacket {
            neighbor: slot.neighbor.take(),
            ingress: slot.ingress,
            ethertype: slot.ethertype,
            sequence: slot.sequence,
            bytes: std::mem::take(&mut slot.bytes),
        };
        Some((index, taken))
    }

    /// Gives a taken packet's buffer back to its slot, if the slot has not
    /// been given another meanwhile.
    pub(crate) fn recycle(&mut self, index: usize, bytes: Vec<u8>) {
        if let Some(slot) = self.slots.get_mut(index)
            && slot.neighbor.is_none()
            && slot.bytes.capacity() == 0
        {
            slot.bytes = bytes;
        }
    }

    /// Drops every packet held for a neighbour `which` selects.
    pub(crate) fn discard(&mut self, mut which: impl FnMut(NeighborKey) -> bool) {
        for slot in &mut self.slots {
            if slot.neighbor.is_some_and(&mut which) {
                slot.neighbor = None;
                self.held -= 1;
            }
        }
    }
}
