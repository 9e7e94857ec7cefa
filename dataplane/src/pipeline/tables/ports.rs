//! Front-panel ports: configuration, state, VLAN membership bitmaps.

use super::bridge::FdbDest;

use super::{PortId, RifId, TableError, Tables};
use crate::pipeline::counters::{DropReason, PortCounters};
use crate::pipeline::output::TxFrame;
use crate::wire::VlanId;

/// The configuration of one port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortConfig {
    pub admin_up: bool,
    /// Largest payload (Ethernet frame less its header and tags) the port sends.
    pub mtu: u16,
    /// The VLAN of untagged and priority-tagged frames; 0 = drop them.
    pub pvid: VlanId,
    /// Learn source MACs of frames received here.
    pub learning: bool,
}

impl Default for PortConfig {
    fn default() -> Self {
        PortConfig { admin_up: true, mtu: 9100, pvid: 1, learning: true }
    }
}

const VLAN_WORDS: usize = 4096 / 64;

/// A set of VLAN ids.
#[derive(Clone)]
pub(crate) struct VlanSet([u64; VLAN_WORDS]);

impl VlanSet {
    const EMPTY: VlanSet = VlanSet([0; VLAN_WORDS]);

    #[inline]
    pub(crate) fn contains(&self, vid: VlanId) -> bool {
        let vid = usize::from(vid & 0x0fff);
        self.0[vid / 64] & (1 << (vid % 64)) != 0
    }

    pub(crate) fn set(&mut self, vid: VlanId, value: bool) {
        let vid = usize::from(vid & 0x0fff);
        if value {
            self.0[vid / 64] |= 1 << (vid % 64);
        } else {
            self.0[vid / 64] &= !(1 << (vid % 64));
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.iter().all(|&word| word == 0)
    }
}

/// A port's state in the order a frame touches it: what every frame reads
/// (configuration, link state, router interface) and the RX/TX counters it
/// bumps in the first two cache lines (`repr(C)`, 64-byte aligned), the
/// VLAN bitmaps (1 KiB, read only by bridged frames, at one word) boxed
/// apart. Inline, the bitmaps put the state and the counters 1.3 KiB apart:
/// three or four cache misses per frame and port on a simulated fabric of
/// hundreds of switches, where each event finds the switch cold.
#[repr(C, align(64))]
pub(crate) struct Port {
    pub(crate) config: PortConfig,
    pub(crate) oper_up: bool,
    /// The routed-port router interface on this port, if any: the port then
    /// does no bridging.
    pub(crate) rif: Option<RifId>,
    /// VLANs this port is a member of.
    pub(crate) member: Box<VlanSet>,
    /// Of those, the ones it sends tagged.
    pub(crate) tagged: Box<VlanSet>,
    pub(crate) counters: PortCounters,
}

impl Port {
    #[inline]
    pub(crate) fn is_up(&self) -> bool {
        self.config.admin_up && self.oper_up
    }
}

impl Tables {
    /// Creates a port or updates its configuration (keeping memberships and counters).
    pub fn set_port(&mut self, port: PortId, config: PortConfig) -> Result<(), TableError> {
        let slot = self.ports.get_mut(usize::from(port)).ok_or(TableError::Invalid("port id beyond max_ports"))?;
        if config.pvid > crate::wire::vlan::VID_MAX {
            return Err(TableError::Invalid("pvid above 4094"));
        }
        match slot {
            Some(existing) => existing.config = config,
            None => {
                *slot = Some(Port {
                    config,
                    oper_up: true,
                    member: Box::new(VlanSet::EMPTY),
                    tagged: Box::new(VlanSet::EMPTY),
                    rif: None,
                    counters: PortCounters::default(),
                })
            }
        }
        self.refresh_rif_mtus();
        Ok(())
    }

    /// Removes a port; it must first leave its VLANs and lose its router interface.
    pub fn remove_port(&mut self, port: PortId) -> Result<(), TableError> {
        let existing = self.port(port).ok_or(TableError::NotFound)?;
        if !existing.member.is_empty() || existing.rif.is_some() {
            return Err(TableError::InUse);
        }
        if self.bridge.fdb.values().any(|entry| entry.dest == FdbDest::Port(port)) {
            self.flush_fdb(Some(port), None, false);
        }
        self.ports[usize::from(port)] = None;
        self.router.invalidate_rewrites();
        Ok(())
    }

    pub fn port_config(&self, port: PortId) -> Option<PortConfig> {
        self.port(port).map(|port| port.config)
    }

    /// The link state, reported by the port adapter. A port starts up.
    pub fn set_port_oper_status(&mut self, port: PortId, up: bool) {
        if let Some(Some(existing)) = self.ports.get_mut(usize::from(port)) {
            existing.oper_up = up;
            self.router.invalidate_rewrites();
            if !up {
                // The hosts behind a dead link are gone from it (802.1Q 8.8.3).
                self.flush_fdb_inner(Some(port), None, true, true);
            }
        }
    }

    pub fn port_oper_status(&self, port: PortId) -> Option<bool> {
        self.port(port).map(|port| port.oper_up)
    }

    pub(crate) fn port(&self, port: PortId) -> Option<&Port> {
        self.ports.get(usize::from(port))?.as_ref()
    }

    /// Whether `port` can send a frame of VLAN `vid` now, and tagged or not;
    /// counts the egress drop when it cannot.
    #[inline]
    pub(crate) fn egress_member(&mut self, port: PortId, vid: VlanId) -> Result<bool, DropReason> {
        let reason = match self.port(port) {
            None => DropReason::EgressPortDown,
            Some(p) if !p.is_up() => DropReason::EgressPortDown,
            Some(p) if !p.member.contains(vid) => DropReason::EgressVlanFilter,
            Some(p) => return Ok(p.tagged.contains(vid)),
        };
        self.count_tx_drop(port);
        Err(reason)
    }
}

impl Tables {
    /// Counts a frame that really left `port` (the port adapter took it):
    /// the port's TX counters move here, not when the pipeline emits it, so
    /// a frame a queue later drops is never counted as sent.
    pub fn count_transmitted(&mut self, port: PortId, frame: &[u8]) {
        self.count_sent(port, TxFrame::of(frame));
    }

    /// [`count_transmitted`](Self::count_transmitted) from what the
    /// pipeline and the node already know of the frame (its length, and its
    /// cast recorded when it was queued): the frame is not read again.
    #[inline]
    pub fn count_sent(&mut self, port: PortId, frame: TxFrame) {
        if let Some(Some(port)) = self.ports.get_mut(usize::from(port)) {
            port.counters.count_tx(frame);
        }
    }

    /// Counts a frame emitted for `port` that never left it (dropped by its
    /// queue or refused by the port adapter).
    pub fn count_egress_drop(&mut self, port: PortId) {
        self.count_tx_drop(port);
    }

    /// Counts a frame `port` could not send. The frame's drop itself (by
    /// reason) is counted once by whoever gives up on the frame: a flood
    /// that skips one member still forwarded the frame.
    pub(crate) fn count_tx_drop(&mut self, port: PortId) {
        if let Some(Some(port)) = self.ports.get_mut(usize::from(port)) {
            port.counters.tx_drops += 1;
        }
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    #[test]
    fn a_frames_port_state_and_counters_share_two_cache_lines() {
        assert_eq!(align_of::<Port>(), 64);
        // The state every frame reads, then the RX and TX counters it
        // bumps: all within the first 128 bytes.
        for offset in [
            offset_of!(Port, config),
            offset_of!(Port, oper_up),
            offset_of!(Port, rif),
            offset_of!(Port, counters) + offset_of!(PortCounters, rx_packets),
            offset_of!(Port, counters) + offset_of!(PortCounters, rx_broadcast),
            offset_of!(Port, counters) + offset_of!(PortCounters, tx_packets),
            offset_of!(Port, counters) + offset_of!(PortCounters, tx_drops),
        ] {
            assert!(offset + 8 <= 128, "hot field at {offset}");
        }
        // The VLAN bitmaps are not inline, and an empty slot costs no tag.
        assert!(size_of::<Port>() < 512, "{}", size_of::<Port>());
        assert_eq!(size_of::<Option<Port>>(), size_of::<Port>());
    }
}
