//! What the pipeline tells the control plane: learned, aged and moved MACs,
//! resolved and expired neighbours. Drained by the shim into notifications.

use std::net::IpAddr;

use super::{FdbDest, RifId};
use crate::wire::{EthernetAddress, VlanId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    FdbLearned {
        vid: VlanId,
        mac: EthernetAddress,
        dest: FdbDest,
    },
    FdbAged {
        vid: VlanId,
        mac: EthernetAddress,
        dest: FdbDest,
    },
    FdbMoved {
        vid: VlanId,
        mac: EthernetAddress,
        from: FdbDest,
        to: FdbDest,
    },
    /// A frame from `from` had the source MAC of a static entry pinned to
    /// `pinned` (a sticky MAC): not learned. Reported at most once a second
    /// per MAC; every such frame counts in `Tables::fdb_moves_refused`.
    FdbMoveRefused {
        vid: VlanId,
        mac: EthernetAddress,
        pinned: FdbDest,
        from: FdbDest,
    },
    NeighborResolved {
        rif: RifId,
        ip: IpAddr,
        mac: EthernetAddress,
    },
    NeighborExpired {
        rif: RifId,
        ip: IpAddr,
    },
}

/// A bounded queue: the pipeline must not allocate per packet, so once
/// `capacity` events wait undrained, further ones are counted and lost.
#[derive(Debug)]
pub(crate) struct EventQueue {
    pub(crate) events: Vec<Event>,
    capacity: usize,
    pub(crate) lost: u64,
}

impl EventQueue {
    pub(crate) fn new(capacity: usize) -> EventQueue {
        EventQueue { events: Vec::with_capacity(capacity), capacity, lost: 0 }
    }

    pub(crate) fn push(&mut self, event: Event) {
        if self.events.len() < self.capacity {
            self.events.push(event);
        } else {
            self.lost += 1;
        }
    }
}
