//! The sans-IO forwarding pipeline.
//!
//! A [`Switch`] holds the forwarding state the control plane programs (ports,
//! VLANs, the FDB, router interfaces, routes, next hops, neighbours, the VXLAN
//! VTEP) and turns `(time, ingress port, frame)` into frames to emit, written
//! into a reused [`Output`], and a [`Disposition`]. It does no I/O, reads no
//! clock and allocates nothing per packet once its tables are warm.
//!
//! The stages, in order:
//! 1. ingress port: counters, admin/oper state;
//! 2. `bridge`: VLAN classification and filtering, learning, FDB lookup,
//!    flooding (with `vxlan` head-end replication), egress tagging;
//! 3. `router` for frames to a router interface's MAC: ARP/ND (`neighbor`),
//!    LPM with ECMP, TTL, ICMP (`icmp`), VXLAN decapsulation, punts.

mod bridge;
mod counters;
mod events;
mod icmp;
mod neighbor;
mod output;
mod ports;
mod router;
mod tables;
mod vxlan;

#[cfg(test)]
mod tests;

pub use bridge::{FdbDest, FdbEntry, FdbKind};
pub use counters::{DropCounters, DropReason, LinkLevelCounters, PortCounters};
pub use events::Event;
pub use neighbor::{NeighborEntry, NeighborState};
pub use output::{Egress, Emitted, FrameMeta, FramePool, FrameRef, Output, PuntReason};
pub use ports::PortConfig;
pub use router::{NextHop, RifKind, RouterInterface};
pub use tables::fib::RouteTarget;
pub use tables::{DEFAULT_VRF, NextHopGroupId, NextHopId, PortId, RifId, TableError, Vni, VrfId};
pub use vxlan::VtepConfig;

use crate::wire::{EthernetAddress, VlanId};

/// Table sizes and timers, fixed when the switch is created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchConfig {
    pub max_ports: u16,
    pub max_router_interfaces: u16,
    /// VRF ids below this can be created (VRF 0, the default, always exists).
    pub max_vrfs: u16,
    pub fdb_capacity: usize,
    pub route_capacity: usize,
    pub neighbor_capacity: usize,
    /// Dynamic FDB entries not refreshed for this long are removed; 0 = never age.
    pub fdb_aging_ns: u64,
    /// How long a confirmed neighbour stays Reachable before it turns Stale.
    pub neighbor_reachable_ns: u64,
    /// How long an unused Stale neighbour stays before it is removed.
    pub neighbor_stale_ns: u64,
    /// Interval between ARP requests / neighbour solicitations.
    pub neighbor_retrans_ns: u64,
    /// Requests sent before an Incomplete or Probe entry turns Failed.
    pub neighbor_max_probes: u8,
    /// Events kept undrained before further ones are lost (counted).
    pub event_capacity: usize,
    /// ICMP errors (time exceeded, unreachable, packet too big) the router
    /// sends per second at most, in bursts of as many (RFC 1812 4.3.2.8,
    /// RFC 4443 2.4 (f)); 0 sends none.
    pub icmp_errors_per_second: u32,
    /// VLAN ids up to this one can be created (the VLAN table is indexed by
    /// id, one entry per id: 4094 for the full range).
    pub max_vlan_id: VlanId,
    /// The IPv4 table gets its DIR-24-8 index (32 MiB, fast lookups) once it
    /// holds this many routes, and loses it below half of it; 0 = never.
    pub dir24_min_routes: usize,
    /// Mixed into every ECMP member choice, so that switches of different
    /// tiers (or simply different switches) spread the same flows
    /// differently instead of polarising; 0 uses the flow hash as it is.
    pub hash_seed: u64,
}

const SECOND: u64 = 1_000_000_000;

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            max_ports: 64,
            max_router_interfaces: 64,
            max_vrfs: 1024,
            fdb_capacity: 64 * 1024,
            route_capacity: 256 * 1024,
            neighbor_capacity: 16 * 1024,
            fdb_aging_ns: 300 * SECOND,
            // RFC 4861 section 10: REACHABLE_TIME 30 s, RETRANS_TIMER 1 s,
            // MAX_MULTICAST_SOLICIT 3.
            neighbor_reachable_ns: 30 * SECOND,
            neighbor_stale_ns: 600 * SECOND,
            neighbor_retrans_ns: SECOND,
            neighbor_max_probes: 3,
            event_capacity: 64 * 1024,
            icmp_errors_per_second: 1000,
            max_vlan_id: crate::wire::vlan::VID_MAX,
            // Below this the trie walk is short and stays in cache, and a
            // process running many small switches pays no 32 MiB each.
            dir24_min_routes: 16 * 1024,
            hash_seed: 0,
        }
    }
}

impl SwitchConfig {
    /// A profile for the simulator's thousands of switches: 16 ports and
    /// router interfaces, VLANs 1..=63, 256 MACs, 1,024 routes, 64
    /// neighbours, no DIR-24-8 index. Under 64 KiB when built.
    pub fn small() -> SwitchConfig {
        SwitchConfig {
            max_ports: 16,
            max_router_interfaces: 16,
            max_vrfs: 4,
            fdb_capacity: 256,
            route_capacity: 1024,
            neighbor_capacity: 64,
            event_capacity: 128,
            max_vlan_id: 63,
            dir24_min_routes: 0,
            ..SwitchConfig::default()
        }
    }
}

/// What became of one frame given to [`Switch::process`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Sent out of one port (bridged, routed, or encapsulated).
    Forwarded,
    /// Sent to several ports and/or remote VTEPs.
    Flooded,
    /// Given to the host only.
    Punted,
    /// Answered by the pipeline itself (ARP reply, NA, echo reply, ICMP error),
    /// possibly with a copy to the host.
    Consumed,
    Dropped(DropReason),
    /// A link-level frame taken off the port before the pipeline, for its
    /// owner: counted, never forwarded or punted.
    LinkLevel(LinkLevelFrame),
}

/// The kinds of link-level frames recognised at port ingress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkLevelFrame {
    /// 802.3x PAUSE (MAC control opcode 0x0001).
    Pause,
    /// 802.1Qbb PFC (MAC control opcode 0x0101).
    Pfc,
    /// Another MAC control opcode: no owner acts on it.
    MacControlOther,
    /// An IB-like frame (EtherType 0x88B5), for the IB-like plane.
    IbLike,
}

const MAC_CONTROL: u16 = 0x8808;
const IB_LIKE: u16 = 0x88b5;

/// Recognises a link-level frame by its (untagged: MAC control and IB-like
/// frames are never VLAN-tagged) EtherType and, for MAC control, opcode.
#[inline]
pub fn link_level_frame(frame: &[u8]) -> Option<LinkLevelFrame> {
    use crate::wire::mac_control::Opcode;
    let ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    match crate::wire::EtherType::from(ethertype) {
        crate::wire::EtherType::MacControl => Some(match frame.get(14..16) {
            Some(op) => match Opcode::from(u16::from_be_bytes([op[0], op[1]])) {
                Opcode::Pause => LinkLevelFrame::Pause,
                Opcode::PriorityFlowControl => LinkLevelFrame::Pfc,
                Opcode::Unknown(_) => LinkLevelFrame::MacControlOther,
            },
            None => LinkLevelFrame::MacControlOther,
        }),
        crate::wire::EtherType::LocalExperimental => Some(LinkLevelFrame::IbLike),
        _ => None,
    }
}

/// A source of path quality for ECMP groups (dynamic load balancing): given
/// a group's flow, it may pick another member than the static hash does.
/// The traffic manager implements it from egress queue depths and
/// utilisation; without one, the seeded static hash decides.
pub trait PathQuality: Send {
    /// The member index (`< members`) for a packet of flow `flow_hash` in
    /// `group` at `now`; `static_index` is the seeded hash's choice. An
    /// index out of range falls back to `static_index`.
    fn choose(&mut self, now: u64, group: NextHopGroupId, flow_hash: u32, members: usize, static_index: usize)
    -> usize;
}

/// The forwarding state of one switch and the pipeline that uses it.
pub struct Switch {
    config: SwitchConfig,
    ports: Vec<Option<ports::Port>>,
    bridge: bridge::Bridge,
    router: router::Router,
    neighbors: neighbor::NeighborTable,
    vxlan: vxlan::Vtep,
    drops: DropCounters,
    events: events::EventQueue,
    next_fdb_scan: u64,
    next_neighbor_scan: u64,
    /// Buffers for frames built before they are bridged (routed out of an
    /// SVI); a small stack because building can nest (routed into a tunnel).
    scratch: Vec<Vec<u8>>,
    /// Neighbour requests `poll` has decided to send, reused across polls.
    neighbor_requests: Vec<neighbor::Request>,
    /// Encapsulations in progress on this path, bounding tunnel-in-tunnel loops.
    encap_depth: u8,
    icmp_limiter: icmp::RateLimiter,
    /// ARP/ND packets in which another node claimed one of our addresses.
    address_conflicts: u64,
    /// Dynamic load balancing's member choice; `None` = static hash.
    path_quality: Option<Box<dyn PathQuality>>,
    /// The flow hash the call in progress computed (ECMP, VXLAN), for the
    /// descriptors of the frames it emits; 0 = none.
    call_flow_hash: u32,
}

impl Switch {
    pub fn new(config: SwitchConfig) -> Switch {
        Switch {
            ports: (0..config.max_ports).map(|_| None).collect(),
            bridge: bridge::Bridge::new(&config),
            router: router::Router::new(&config),
            neighbors: neighbor::NeighborTable::new(&config),
            vxlan: vxlan::Vtep::default(),
            drops: DropCounters::default(),
            events: events::EventQueue::new(config.event_capacity),
            next_fdb_scan: 0,
            next_neighbor_scan: 0,
            // Grown to the largest frame routed into an SVI, then reused.
            scratch: vec![Vec::new(), Vec::new()],
            // At most one request per neighbour per poll: never grows.
            neighbor_requests: Vec::with_capacity(config.neighbor_capacity),
            encap_depth: 0,
            icmp_limiter: icmp::RateLimiter::new(config.icmp_errors_per_second),
            address_conflicts: 0,
            path_quality: None,
            call_flow_hash: 0,
            config,
        }
    }

    pub fn config(&self) -> &SwitchConfig {
        &self.config
    }

    /// Installs (or with `None` removes) the ECMP path-quality hook.
    pub fn set_path_quality(&mut self, quality: Option<Box<dyn PathQuality>>) {
        self.path_quality = quality;
    }

    /// Events since the last drain, oldest first.
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, Event> {
        self.events.events.drain(..)
    }

    /// ICMP errors not sent because of the rate limit.
    pub fn icmp_errors_suppressed(&self) -> u64 {
        self.icmp_limiter.suppressed
    }

    /// ARP packets and neighbour advertisements in which another node
    /// claimed one of the switch's addresses (duplicate address; the packet
    /// was punted to the host, never learned).
    pub fn address_conflicts(&self) -> u64 {
        self.address_conflicts
    }

    /// Events lost because the queue was full when they happened.
    pub fn events_lost(&self) -> u64 {
        self.events.lost
    }

    pub fn port_counters(&self, port: PortId) -> Option<&PortCounters> {
        self.ports.get(usize::from(port))?.as_ref().map(|port| &port.counters)
    }

    /// Drops by reason, switch-wide; per-port drops are in [`PortCounters::drops`].
    pub fn drop_counters(&self) -> &DropCounters {
        &self.drops
    }

    /// Advances timers: ages FDB entries and walks the neighbour state
    /// machines, writing ARP requests and neighbour solicitations into `out`.
    pub fn poll(&mut self, now: u64, out: &mut Output) {
        self.call_flow_hash = 0;
        self.poll_timers(now, out);
        out.finish(None, self.call_flow_hash);
    }

    fn poll_timers(&mut self, now: u64, out: &mut Output) {
        if now >= self.next_fdb_scan {
            self.age_fdb(now);
            // Scanning a big table on every poll would cost more than it
            // buys: aging is accurate to a tenth of the aging time.
            self.next_fdb_scan = now.saturating_add((self.config.fdb_aging_ns / 10).clamp(SECOND / 10, 10 * SECOND));
        }
        if now >= self.next_neighbor_scan {
            self.neighbor_timers(now, out);
            self.next_neighbor_scan = now.saturating_add((self.config.neighbor_retrans_ns / 4).max(SECOND / 1000));
        }
    }

    /// Forwards one frame received on `ingress` at time `now`.
    #[inline]
    pub fn process(&mut self, now: u64, ingress: PortId, frame: &[u8], out: &mut Output) -> Disposition {
        self.call_flow_hash = 0;
        let disposition = self.ingress(now, ingress, frame, out);
        out.finish(Some(ingress), self.call_flow_hash);
        disposition
    }

    fn ingress(&mut self, now: u64, ingress: PortId, frame: &[u8], out: &mut Output) -> Disposition {
        let Some(port) = self.ports.get_mut(usize::from(ingress)).and_then(Option::as_mut) else {
            self.drops.count(DropReason::UnknownPort);
            return Disposition::Dropped(DropReason::UnknownPort);
        };
        port.counters.count_rx(frame);
        if !port.is_up() {
            return self.drop(Some(ingress), DropReason::PortDown);
        }
        // One compare on the common path; the kind is worked out only for
        // the rare link-level frame.
        let ethertype = match frame.get(12..14) {
            Some(&[high, low]) => u16::from_be_bytes([high, low]),
            _ => 0,
        };
        if (ethertype == MAC_CONTROL || ethertype == IB_LIKE)
            && let Some(kind) = link_level_frame(frame)
        {
            let counters = &mut port.counters.link_level;
            match kind {
                LinkLevelFrame::Pause => counters.pause_rx += 1,
                LinkLevelFrame::Pfc => counters.pfc_rx += 1,
                LinkLevelFrame::MacControlOther => counters.mac_control_other_rx += 1,
                LinkLevelFrame::IbLike => counters.ib_rx += 1,
            }
            return Disposition::LinkLevel(kind);
        }
        self.bridge_ingress(now, ingress, frame, out)
    }

    /// A frame the host (the kernel, through a host interface) sends out of
    /// `port`: no lookup (SAI hostif transmit).
    pub fn send_from_host(&mut self, now: u64, port: PortId, frame: &[u8], out: &mut Output) {
        self.host_transmit(now, port, frame, out);
        out.finish(None, 0);
    }

    fn host_transmit(&mut self, _now: u64, port: PortId, frame: &[u8], out: &mut Output) {
        match self.port(port) {
            Some(p) if p.is_up() => self.emit_port(port, frame.len(), out, |buf| buf.copy_from_slice(frame)),
            Some(_) => {
                self.count_tx_drop(port);
                self.drops.count(DropReason::EgressPortDown);
            }
            None => self.drops.count(DropReason::UnknownPort),
        }
    }

    /// A frame the host sends through a router interface: out of the port of
    /// a routed port, or bridged in the SVI's VLAN as if from the CPU.
    pub fn send_from_host_on_rif(&mut self, now: u64, rif: RifId, frame: &[u8], out: &mut Output) {
        self.call_flow_hash = 0;
        match self.router.rif(rif).map(|rif| rif.kind) {
            Some(RifKind::Port(port)) => self.host_transmit(now, port, frame, out),
            Some(RifKind::Vlan(vid)) => self.bridge_from_cpu(now, vid, frame, out),
            None => self.drops.count(DropReason::RouterInterfaceDown),
        }
        out.finish(None, self.call_flow_hash);
    }

    /// Counts a frame that really left `port` (the port adapter took it):
    /// the port's TX counters move here, not when the pipeline emits it, so
    /// a frame a queue later drops is never counted as sent.
    pub fn count_transmitted(&mut self, port: PortId, frame: &[u8]) {
        if let Some(Some(port)) = self.ports.get_mut(usize::from(port)) {
            port.counters.count_tx(frame);
        }
    }

    /// Counts a frame emitted for `port` that never left it (dropped by its
    /// queue or refused by the port adapter).
    pub fn count_egress_drop(&mut self, port: PortId) {
        self.count_tx_drop(port);
    }

    /// Counts a drop switch-wide and against the ingress port.
    fn drop(&mut self, ingress: Option<PortId>, reason: DropReason) -> Disposition {
        self.drops.count(reason);
        let counters =
            ingress.and_then(|port| self.ports.get_mut(usize::from(port))?.as_mut()).map(|port| &mut port.counters);
        counters::port_drop(counters, reason);
        Disposition::Dropped(reason)
    }

    /// Pushes a frame on a port's egress (counted as sent when it leaves,
    /// [`Switch::count_transmitted`]). `build` writes the frame into a
    /// zeroed buffer of `len` bytes.
    fn emit_port(&mut self, port: PortId, len: usize, out: &mut Output, build: impl FnOnce(&mut [u8])) {
        let buf = out.push(Egress::Port(port), len);
        build(&mut buf[..len]);
    }

    /// Counts a frame `port` could not send. The frame's drop itself (by
    /// reason) is counted once by whoever gives up on the frame: a flood
    /// that skips one member still forwarded the frame.
    fn count_tx_drop(&mut self, port: PortId) {
        if let Some(Some(port)) = self.ports.get_mut(usize::from(port)) {
            port.counters.tx_drops += 1;
        }
    }
}

/// A hashable key for (VLAN, MAC): the FDB's key.
#[inline]
fn fdb_key(vid: VlanId, mac: EthernetAddress) -> u64 {
    (u64::from(vid) << 48) | mac.to_u64()
}
