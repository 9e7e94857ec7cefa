//! The bridge's tables (IEEE 802.1Q): VLANs and their members, the FDB with
//! learning, move detection and aging.

use std::net::Ipv4Addr;

use rustc_hash::FxHashMap;

use super::{PortId, RifId, TableError, Tables, Vni};
use crate::pipeline::config::SwitchConfig;
use crate::pipeline::events::Event;
use crate::wire::vlan::VID_MAX;
use crate::wire::{EthernetAddress, VlanId};

/// Where frames to a MAC go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FdbDest {
    Port(PortId),
    /// A MAC behind a remote VTEP: frames are VXLAN-encapsulated to it.
    Tunnel(Ipv4Addr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FdbKind {
    /// Learned from traffic (or installed as such); ages and moves.
    Dynamic,
    /// Installed by the control plane; never aged, never moved by learning.
    Static,
    /// Installed by the control plane (EVPN's remote MACs, SAI's static
    /// entry with ALLOW_MAC_MOVE): never aged, but a frame from elsewhere
    /// moves it, as learning moves a dynamic entry (RFC 7432 section 15:
    /// a host that moved here is learned over its remote entry).
    StaticMovable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdbEntry {
    pub dest: FdbDest,
    pub kind: FdbKind,
    /// Time the entry was installed or last refreshed by a frame from it.
    pub last_seen: u64,
}

pub(crate) struct Vlan {
    /// Member ports, in the order they joined: the flooding order.
    pub(crate) members: Vec<PortId>,
    /// The SVI on this VLAN.
    pub(crate) rif: Option<RifId>,
    pub(crate) vni: Option<Vni>,
}

pub(crate) struct Bridge {
    pub(crate) vlans: Vec<Option<Vlan>>,
    pub(crate) fdb: FxHashMap<u64, FdbEntry>,
    fdb_capacity: usize,
    /// Frames whose source MAC has a static entry elsewhere (a sticky MAC,
    /// RFC 7432 section 15.2): not learned, counted here.
    pub(crate) moves_refused: u64,
    /// When each such MAC's refusal was last reported as an event.
    refusals_reported: FxHashMap<u64, u64>,
}

/// A MAC sending where its static entry is not is reported at most this
/// often: a host sending at line rate must not fill the event queue.
const MOVE_REFUSED_REPORT_NS: u64 = 1_000_000_000;

impl Bridge {
    pub(crate) fn new(config: &SwitchConfig) -> Bridge {
        let mut fdb = FxHashMap::default();
        fdb.reserve(config.fdb_capacity);
        let vlans = usize::from(config.max_vlan_id.min(VID_MAX)) + 1;
        Bridge {
            vlans: (0..vlans).map(|_| None).collect(),
            fdb,
            fdb_capacity: config.fdb_capacity,
            moves_refused: 0,
            refusals_reported: FxHashMap::default(),
        }
    }

    #[inline]
    pub(crate) fn vlan(&self, vid: VlanId) -> Option<&Vlan> {
        self.vlans.get(usize::from(vid))?.as_ref()
    }

    pub(crate) fn vlan_mut(&mut self, vid: VlanId) -> Option<&mut Vlan> {
        self.vlans.get_mut(usize::from(vid))?.as_mut()
    }
}

impl Tables {
    // ---- VLANs ----

    /// Creates a VLAN (1..=4094); creating an existing one is a no-op.
    pub fn create_vlan(&mut self, vid: VlanId) -> Result<(), TableError> {
        if vid == 0 || vid > VID_MAX {
            return Err(TableError::Invalid("VLAN id must be 1..=4094"));
        }
        let Some(slot) = self.bridge.vlans.get_mut(usize::from(vid)) else {
            return Err(TableError::Invalid("VLAN id above the table's max_vlan_id"));
        };
        if slot.is_none() {
            *slot = Some(Vlan { members: Vec::new(), rif: None, vni: None });
        }
        Ok(())
    }

    /// Removes a VLAN with no members, router interface or VNI; its FDB and
    /// suppression entries go with it.
    pub fn remove_vlan(&mut self, vid: VlanId) -> Result<(), TableError> {
        let vlan = self.bridge.vlan(vid).ok_or(TableError::NotFound)?;
        if !vlan.members.is_empty() || vlan.rif.is_some() || vlan.vni.is_some() {
            return Err(TableError::InUse);
        }
        self.flush_fdb_inner(None, Some(vid), false, false);
        self.suppression.entries.retain(|&(entry_vid, _), _| entry_vid != vid);
        if let Some(slot) = self.bridge.vlans.get_mut(usize::from(vid)) {
            *slot = None;
        }
        Ok(())
    }

    pub fn vlan_exists(&self, vid: VlanId) -> bool {
        self.bridge.vlan(vid).is_some()
    }

    /// Adds `port` to `vid` (or changes its tagging). A port that is untagged
    /// in a VLAN sends that VLAN's frames without a tag; its PVID decides what
    /// untagged frames it receives belong to.
    pub fn set_vlan_member(&mut self, vid: VlanId, port: PortId, tagged: bool) -> Result<(), TableError> {
        if self.bridge.vlan(vid).is_none() {
            return Err(TableError::NotFound);
        }
        let p = self.ports.get_mut(usize::from(port)).and_then(Option::as_mut).ok_or(TableError::NotFound)?;
        if p.rif.is_some() {
            return Err(TableError::Invalid("a routed port cannot be a VLAN member"));
        }
        p.member.set(vid, true);
        p.tagged.set(vid, tagged);
        let vlan = self.bridge.vlan_mut(vid).expect("checked above");
        if !vlan.members.contains(&port) {
            vlan.members.push(port);
        }
        self.refresh_rif_mtus();
        Ok(())
    }

    pub fn remove_vlan_member(&mut self, vid: VlanId, port: PortId) -> Result<(), TableError> {
        let p = self.ports.get_mut(usize::from(port)).and_then(Option::as_mut).ok_or(TableError::NotFound)?;
        if !p.member.contains(vid) {
            return Err(TableError::NotFound);
        }
        p.member.set(vid, false);
        p.tagged.set(vid, false);
        if let Some(vlan) = self.bridge.vlan_mut(vid) {
            vlan.members.retain(|&member| member != port);
        }
        self.flush_fdb_inner(Some(port), Some(vid), false, false);
        self.refresh_rif_mtus();
        Ok(())
    }

    /// Members of a VLAN with their tagging, in joining order.
    pub fn vlan_members(&self, vid: VlanId) -> impl Iterator<Item = (PortId, bool)> + '_ {
        let members = self.bridge.vlan(vid).map(|vlan| vlan.members.as_slice()).unwrap_or_default();
        members.iter().map(move |&port| (port, self.port(port).is_some_and(|p| p.tagged.contains(vid))))
    }

    // ---- FDB ----

    /// Installs or replaces an FDB entry.
    pub fn set_fdb_entry(
        &mut self,
        vid: VlanId,
        mac: EthernetAddress,
        dest: FdbDest,
        kind: FdbKind,
        now: u64,
    ) -> Result<(), TableError> {
        if self.bridge.vlan(vid).is_none() {
            return Err(TableError::Invalid("no such VLAN"));
        }
        if mac.is_multicast() {
            return Err(TableError::Invalid("FDB entries are for unicast MACs"));
        }
        if let FdbDest::Port(port) = dest
            && self.port(port).is_none()
        {
            return Err(TableError::Invalid("no such port"));
        }
        let key = fdb_key(vid, mac);
        if !self.bridge.fdb.contains_key(&key) && self.bridge.fdb.len() >= self.bridge.fdb_capacity {
            return Err(TableError::Full);
        }
        self.bridge.fdb.insert(key, FdbEntry { dest, kind, last_seen: now });
        Ok(())
    }

    pub fn remove_fdb_entry(&mut self, vid: VlanId, mac: EthernetAddress) -> Result<(), TableError> {
        let key = fdb_key(vid, mac);
        // A static entry added again later reports its first refused move
        // at once, not a second after one reported under the old entry.
        self.bridge.refusals_reported.remove(&key);
        self.bridge.fdb.remove(&key).map(|_| ()).ok_or(TableError::NotFound)
    }

    /// Removes the entries matching every given filter (dynamic ones only if asked).
    pub fn flush_fdb(&mut self, port: Option<PortId>, vid: Option<VlanId>, dynamic_only: bool) {
        self.flush_fdb_inner(port, vid, dynamic_only, false);
    }

    /// Flushes; with `notify`, removed dynamic entries are reported as aged
    /// (a link that went down takes its hosts with it, and the control plane
    /// must withdraw them).
    pub(crate) fn flush_fdb_inner(
        &mut self,
        port: Option<PortId>,
        vid: Option<VlanId>,
        dynamic_only: bool,
        notify: bool,
    ) {
        let events = &mut self.events;
        self.bridge.fdb.retain(|&key, entry| {
            let (entry_vid, mac) = split_key(key);
            let matches = port.is_none_or(|port| entry.dest == FdbDest::Port(port))
                && vid.is_none_or(|vid| vid == entry_vid)
                && (!dynamic_only || entry.kind == FdbKind::Dynamic);
            if matches && notify && entry.kind == FdbKind::Dynamic {
                events.push(Event::FdbAged { vid: entry_vid, mac, dest: entry.dest });
            }
            !matches
        });
        let fdb = &self.bridge.fdb;
        self.bridge.refusals_reported.retain(|key, _| fdb.get(key).is_some_and(|e| e.kind == FdbKind::Static));
    }

    /// Frames not learned because their source MAC has a static entry
    /// elsewhere (a sticky MAC behind another VTEP or port).
    pub fn fdb_moves_refused(&self) -> u64 {
        self.bridge.moves_refused
    }

    pub fn fdb_entries(&self) -> impl Iterator<Item = (VlanId, EthernetAddress, FdbEntry)> + '_ {
        self.bridge.fdb.iter().map(|(&key, &entry)| {
            let (vid, mac) = split_key(key);
            (vid, mac, entry)
        })
    }

    pub fn fdb_entry(&self, vid: VlanId, mac: EthernetAddress) -> Option<FdbEntry> {
        self.bridge.fdb.get(&fdb_key(vid, mac)).copied()
    }

    pub fn fdb_len(&self) -> usize {
        self.bridge.fdb.len()
    }

    pub(crate) fn age_fdb(&mut self, now: u64) {
        let aging = self.config.fdb_aging_ns;
        if aging == 0 {
            return;
        }
        // Reports older than their interval hold nothing back any more.
        self.bridge.refusals_reported.retain(|_, &mut at| now.saturating_sub(at) < MOVE_REFUSED_REPORT_NS);
        let events = &mut self.events;
        self.bridge.fdb.retain(|&key, entry| {
            let expired = entry.kind == FdbKind::Dynamic && now.saturating_sub(entry.last_seen) >= aging;
            if expired {
                let (vid, mac) = split_key(key);
                events.push(Event::FdbAged { vid, mac, dest: entry.dest });
            }
            !expired
        });
    }

    /// Learns (or refreshes, or moves) `mac` in `vid` as reachable through `dest`.
    #[inline]
    pub(crate) fn learn(&mut self, now: u64, vid: VlanId, mac: EthernetAddress, dest: FdbDest) {
        let key = fdb_key(vid, mac);
        let room = self.bridge.fdb.len() < self.bridge.fdb_capacity;
        match self.bridge.fdb.get_mut(&key) {
            Some(entry) if entry.dest == dest => entry.last_seen = now,
            Some(entry) if entry.kind == FdbKind::Static => {
                let pinned = entry.dest;
                self.bridge.moves_refused += 1;
                let reported = &mut self.bridge.refusals_reported;
                let due = reported.get(&key).is_none_or(|&at| now.saturating_sub(at) >= MOVE_REFUSED_REPORT_NS);
                if due && (reported.len() < self.bridge.fdb_capacity || reported.contains_key(&key)) {
                    reported.insert(key, now);
                    self.events.push(Event::FdbMoveRefused { vid, mac, pinned, from: dest });
                }
            }
            Some(entry) => {
                let from = entry.dest;
                *entry = FdbEntry { dest, kind: FdbKind::Dynamic, last_seen: now };
                self.events.push(Event::FdbMoved { vid, mac, from, to: dest });
            }
            None if room => {
                self.bridge.fdb.insert(key, FdbEntry { dest, kind: FdbKind::Dynamic, last_seen: now });
                self.events.push(Event::FdbLearned { vid, mac, dest });
            }
            None => {}
        }
    }
}

#[inline]
pub(crate) fn split_key(key: u64) -> (VlanId, EthernetAddress) {
    let bytes = key.to_be_bytes();
    ((key >> 48) as VlanId, EthernetAddress([bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7]]))
}

/// A hashable key for (VLAN, MAC): the FDB's key.
#[inline]
pub(crate) fn fdb_key(vid: VlanId, mac: EthernetAddress) -> u64 {
    (u64::from(vid) << 48) | mac.to_u64()
}
