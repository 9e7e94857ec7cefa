//! Table sizes and timers of a switch, fixed when it is created.

use crate::wire::VlanId;

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
    /// Packets held for one neighbour while it is resolved (RFC 4861
    /// 7.2.2: at least one); more are dropped.
    pub neighbor_hold_per_neighbor: u8,
    /// Packets held for all neighbours together.
    pub neighbor_hold_capacity: usize,
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

pub(crate) const SECOND: u64 = 1_000_000_000;

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
            // Linux's old unres_qlen: a burst's first packets (a TCP SYN and
            // its retransmission, a ping) survive resolution.
            neighbor_hold_per_neighbor: 3,
            neighbor_hold_capacity: 256,
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
            neighbor_hold_capacity: 16,
            event_capacity: 128,
            max_vlan_id: 63,
            dir24_min_routes: 0,
            ..SwitchConfig::default()
        }
    }
}
