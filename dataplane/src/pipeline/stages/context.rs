//! What the stages work with besides the tables: the per-packet context
//! (counters, scratch buffers, rate limiters, the load-balancing hook) and
//! [`Stages`], the tables and that context held together.

use super::icmp::RateLimiter;
use crate::pipeline::config::SwitchConfig;
use crate::pipeline::counters::{self, DropCounters, DropReason};
use crate::pipeline::disposition::Disposition;
use crate::pipeline::output::{Egress, Output};
use crate::pipeline::path_quality::PathQuality;
use crate::pipeline::tables::neighbors::Request;
use crate::pipeline::tables::{PortId, Tables};

/// The state the stages keep between frames that is no table: drop
/// counters, timers' next runs, reused buffers, limiters, hooks.
pub(crate) struct ForwardingState {
    pub(crate) drops: DropCounters,
    pub(crate) next_fdb_scan: u64,
    pub(crate) next_neighbor_scan: u64,
    /// Buffers for frames built before they are bridged (routed out of an
    /// SVI); a small stack because building can nest (routed into a tunnel).
    pub(crate) scratch: Vec<Vec<u8>>,
    /// Neighbour requests `poll` has decided to send, reused across polls.
    pub(crate) neighbor_requests: Vec<Request>,
    /// Encapsulations in progress on this path, bounding tunnel-in-tunnel loops.
    pub(crate) encap_depth: u8,
    pub(crate) icmp_limiter: RateLimiter,
    /// ARP/ND packets in which another node claimed one of our addresses.
    pub(crate) address_conflicts: u64,
    /// ARP requests and neighbour solicitations the bridge kept off the
    /// overlay: answered from the suppression table instead of flooding,
    /// or for the anycast gateway (answered by the SVI, flooded locally).
    pub(crate) neighbor_requests_suppressed: u64,
    /// Dynamic load balancing's member choice; `None` = static hash.
    pub(crate) path_quality: Option<Box<dyn PathQuality>>,
    /// The flow hash the call in progress computed (ECMP, VXLAN), for the
    /// descriptors of the frames it emits; 0 = none.
    pub(crate) call_flow_hash: u32,
    /// The IPv4 ID of the last datagram the switch originated.
    pub(crate) ip_id: u16,
}

impl ForwardingState {
    pub(crate) fn new(config: &SwitchConfig) -> ForwardingState {
        ForwardingState {
            drops: DropCounters::default(),
            next_fdb_scan: 0,
            next_neighbor_scan: 0,
            // Grown to the largest frame routed into an SVI, then reused.
            scratch: vec![Vec::new(), Vec::new()],
            // At most one request per neighbour per poll: never grows.
            neighbor_requests: Vec::with_capacity(config.neighbor_capacity),
            encap_depth: 0,
            icmp_limiter: RateLimiter::new(config.icmp_errors_per_second),
            address_conflicts: 0,
            neighbor_requests_suppressed: 0,
            path_quality: None,
            call_flow_hash: 0,
            ip_id: 0,
        }
    }
}

/// The tables (which learning and the neighbour state machine update) and
/// the forwarding state, owned together so that the stage code reaches
/// both through one pointer (two borrows in a struct cost a dependent load
/// on every table access of the packet path). The stage files implement
/// their part of the walk as methods on it.
pub(crate) struct Stages {
    pub(crate) tables: Tables,
    pub(crate) state: ForwardingState,
}

impl Stages {
    /// An IPv4 ID for a datagram the switch originates: a counter, so that
    /// IDs do not repeat within the lifetime of a datagram at the rates the
    /// switch originates (RFC 6864 section 4.1).
    #[inline]
    pub(crate) fn next_ip_id(&mut self) -> u16 {
        self.state.ip_id = self.state.ip_id.wrapping_add(1);
        self.state.ip_id
    }

    /// Counts a drop switch-wide and against the ingress port.
    pub(crate) fn drop(&mut self, ingress: Option<PortId>, reason: DropReason) -> Disposition {
        self.state.drops.count(reason);
        let counters = ingress
            .and_then(|port| self.tables.ports.get_mut(usize::from(port))?.as_mut())
            .map(|port| &mut port.counters);
        counters::port_drop(counters, reason);
        Disposition::Dropped(reason)
    }

    /// Pushes a frame on a port's egress (counted as sent when it leaves,
    /// `Tables::count_transmitted`). `build` writes the frame into a
    /// zeroed buffer of `len` bytes.
    pub(crate) fn emit_port(&mut self, port: PortId, len: usize, out: &mut Output, build: impl FnOnce(&mut [u8])) {
        let buf = out.push(Egress::Port(port), len);
        build(&mut buf[..len]);
    }
}
