//! Per-port counters and drop accounting by reason.

use crate::pipeline::output::{Cast, TxFrame};
use core::ops::Index;

/// Why the pipeline dropped a frame. Every drop is counted under one reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// The frame (or a header inside it) could not be parsed.
    Malformed,
    /// An IPv4 header checksum did not verify.
    BadChecksum,
    /// The ingress port does not exist.
    UnknownPort,
    /// The ingress port is administratively or operationally down.
    PortDown,
    /// The chosen egress port is down.
    EgressPortDown,
    /// The frame's VLAN does not exist or the ingress port is not a member.
    IngressVlanFilter,
    /// The egress port is not a member of the frame's VLAN.
    EgressVlanFilter,
    /// The source MAC is a group address or all zeros.
    SourceMacInvalid,
    /// The destination MAC is known on the port the frame came in on.
    SameSegment,
    /// A unicast frame on a routed port that is not addressed to the router.
    NotRouterMac,
    /// An EtherType the pipeline does not forward at layer 3.
    UnknownEtherType,
    /// No route matches the destination.
    NoRoute,
    /// TTL or hop limit reached zero.
    TtlExpired,
    /// The next hop's link-layer address is not resolved (yet).
    NeighborMiss,
    /// The packet is larger than the egress MTU.
    MtuExceeded,
    /// The route is a blackhole.
    Blackhole,
    /// A VXLAN packet for a VNI that maps to no VLAN.
    VxlanUnknownVni,
    /// The FDB points at a remote VTEP but the frame came from the overlay
    /// (split horizon), or no VTEP is configured.
    SplitHorizon,
    /// The router interface is missing or down.
    RouterInterfaceDown,
    /// A well-formed packet the pipeline does not handle (IPv4 fragment for
    /// the switch, unknown ICMP type for the switch...), when not punted.
    Unsupported,
    /// A frame from a front-panel port whose source MAC is one of the
    /// router's own MACs: a loop or a spoofer. Learning it would put the
    /// router MAC behind that port.
    RouterMacSource,
    /// An IP packet from outside whose source address is one of the
    /// switch's own, or can never be a source (multicast, limited
    /// broadcast, loopback): a martian (RFC 1812 section 5.3.7). Also ARP
    /// from such a sender.
    MartianSource,
    /// A routed packet to a connected subnet's broadcast address: directed
    /// broadcasts are not forwarded (RFC 2644).
    DirectedBroadcast,
    /// A VXLAN packet whose outer header says congestion experienced (CE)
    /// around an inner packet that is not ECN-capable: RFC 6040 section 4.2
    /// drops it, since its transport would never learn of the congestion.
    EcnCeOnNotEct,
    /// A decapsulated VXLAN frame that carries a VLAN tag of its own: the
    /// VNI gives the VLAN, and RFC 7348 section 6.1 discards such frames.
    VxlanInnerVlanTag,
    /// A packet for a neighbour being resolved found that neighbour's hold
    /// queue (or the whole hold table) full: Linux's `unresolved_discards`.
    NeighborQueueFull,
}

impl DropReason {
    pub const ALL: [DropReason; 26] = [
        DropReason::Malformed,
        DropReason::BadChecksum,
        DropReason::UnknownPort,
        DropReason::PortDown,
        DropReason::EgressPortDown,
        DropReason::IngressVlanFilter,
        DropReason::EgressVlanFilter,
        DropReason::SourceMacInvalid,
        DropReason::SameSegment,
        DropReason::NotRouterMac,
        DropReason::UnknownEtherType,
        DropReason::NoRoute,
        DropReason::TtlExpired,
        DropReason::NeighborMiss,
        DropReason::MtuExceeded,
        DropReason::Blackhole,
        DropReason::VxlanUnknownVni,
        DropReason::SplitHorizon,
        DropReason::RouterInterfaceDown,
        DropReason::Unsupported,
        DropReason::RouterMacSource,
        DropReason::MartianSource,
        DropReason::DirectedBroadcast,
        DropReason::EcnCeOnNotEct,
        DropReason::VxlanInnerVlanTag,
        DropReason::NeighborQueueFull,
    ];
    pub const COUNT: usize = Self::ALL.len();

    pub const fn index(self) -> usize {
        self as usize
    }

    pub const fn name(self) -> &'static str {
        match self {
            DropReason::Malformed => "malformed",
            DropReason::BadChecksum => "bad_checksum",
            DropReason::UnknownPort => "unknown_port",
            DropReason::PortDown => "port_down",
            DropReason::EgressPortDown => "egress_port_down",
            DropReason::IngressVlanFilter => "ingress_vlan_filter",
            DropReason::EgressVlanFilter => "egress_vlan_filter",
            DropReason::SourceMacInvalid => "source_mac_invalid",
            DropReason::SameSegment => "same_segment",
            DropReason::NotRouterMac => "not_router_mac",
            DropReason::UnknownEtherType => "unknown_ethertype",
            DropReason::NoRoute => "no_route",
            DropReason::TtlExpired => "ttl_expired",
            DropReason::NeighborMiss => "neighbor_miss",
            DropReason::MtuExceeded => "mtu_exceeded",
            DropReason::Blackhole => "blackhole",
            DropReason::VxlanUnknownVni => "vxlan_unknown_vni",
            DropReason::SplitHorizon => "split_horizon",
            DropReason::RouterInterfaceDown => "router_interface_down",
            DropReason::Unsupported => "unsupported",
            DropReason::RouterMacSource => "router_mac_source",
            DropReason::MartianSource => "martian_source",
            DropReason::DirectedBroadcast => "directed_broadcast",
            DropReason::EcnCeOnNotEct => "ecn_ce_on_not_ect",
            DropReason::VxlanInnerVlanTag => "vxlan_inner_vlan_tag",
            DropReason::NeighborQueueFull => "neighbor_queue_full",
        }
    }
}

/// Drops by reason, switch-wide. `counters[DropReason::NoRoute]` reads one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DropCounters {
    by_reason: [u64; DropReason::COUNT],
}

impl DropCounters {
    pub fn get(&self, reason: DropReason) -> u64 {
        self.by_reason[reason.index()]
    }

    pub fn total(&self) -> u64 {
        self.by_reason.iter().sum()
    }

    /// Every reason with its count, zeros included.
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL.iter().map(|&reason| (reason, self.get(reason)))
    }

    pub(crate) fn count(&mut self, reason: DropReason) {
        self.by_reason[reason.index()] += 1;
    }
}

impl Index<DropReason> for DropCounters {
    type Output = u64;

    fn index(&self, reason: DropReason) -> &u64 {
        &self.by_reason[reason.index()]
    }
}

/// The counters of one port, as in IF-MIB's ifTable/ifXTable. In this
/// order (`repr(C)`): the RX and TX counters every frame bumps together,
/// beside the port's state (`tables::ports::Port`), the drops by reason after.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[repr(C)]
pub struct PortCounters {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub rx_unicast: u64,
    pub rx_multicast: u64,
    pub rx_broadcast: u64,
    /// Frames received on this port that the pipeline dropped (any reason).
    pub rx_drops: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_unicast: u64,
    pub tx_multicast: u64,
    pub tx_broadcast: u64,
    /// Frames the pipeline would have sent on this port but dropped there
    /// (port down, not a VLAN member, MTU).
    pub tx_drops: u64,
    /// Drops of frames received on this port, by reason.
    pub drops: DropCounters,
    /// Link-level frames received here and consumed before the pipeline.
    pub link_level: LinkLevelCounters,
}

/// Link-level frames a port received: consumed at ingress by their owner
/// (the traffic manager for MAC control, the IB-like plane for 0x88B5),
/// never bridged, routed or punted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkLevelCounters {
    /// 802.3x PAUSE frames.
    pub pause_rx: u64,
    /// 802.1Qbb priority flow control frames.
    pub pfc_rx: u64,
    /// MAC control frames with another opcode, or too short to carry one.
    pub mac_control_other_rx: u64,
    /// IB-like frames (EtherType 0x88B5).
    pub ib_rx: u64,
}

impl PortCounters {
    pub(crate) fn count_rx(&mut self, frame: &[u8]) {
        self.rx_packets += 1;
        self.rx_bytes += frame.len() as u64;
        match Cast::of(frame) {
            Cast::Unicast => self.rx_unicast += 1,
            Cast::Multicast => self.rx_multicast += 1,
            Cast::Broadcast => self.rx_broadcast += 1,
        }
    }

    pub(crate) fn count_tx(&mut self, frame: TxFrame) {
        self.tx_packets += 1;
        self.tx_bytes += u64::from(frame.len);
        match frame.cast {
            Cast::Unicast => self.tx_unicast += 1,
            Cast::Multicast => self.tx_multicast += 1,
            Cast::Broadcast => self.tx_broadcast += 1,
        }
    }
}

/// A drop to record against an ingress port, if the frame had one.
pub(crate) fn port_drop(counters: Option<&mut PortCounters>, reason: DropReason) {
    if let Some(counters) = counters {
        counters.rx_drops += 1;
        counters.drops.count(reason);
    }
}
