//! The sans-IO forwarding pipeline.
//!
//! A [`Switch`] holds the forwarding state the control plane programs (ports,
//! VLANs, the FDB, router interfaces, routes, next hops, neighbours, the VXLAN
//! VTEP) and turns `(time, ingress port, frame)` into frames to emit, written
//! into a reused [`Output`], and a [`Disposition`]. It does no I/O, reads no
//! clock and allocates nothing per packet once its tables are warm.
//!
//! The tables (`tables/`: one module per table, with the control API) are
//! apart from the stage code that reads them per frame (`stages/`), and
//! neither imports this module: it only composes them. The stages, in order:
//! 1. `ingress`: port counters, admin/oper state, link-level frames;
//! 2. `bridge`: VLAN classification and filtering, learning, FDB lookup,
//!    flooding (with `vxlan` head-end replication), egress tagging;
//! 3. `router` for frames to a router interface's MAC: ARP/ND (`neighbor`),
//!    LPM in the interface's VRF with ECMP, TTL, ICMP (`icmp`), VXLAN
//!    decapsulation, punts.

mod config;
mod counters;
mod disposition;
mod events;
mod output;
mod path_quality;
mod stages;
mod tables;

#[cfg(test)]
mod tests;

pub use config::SwitchConfig;
pub use counters::{DropCounters, DropReason, LinkLevelCounters, PortCounters};
pub use disposition::{Disposition, LinkLevelFrame, link_level_frame};
pub use events::Event;
pub use output::{Cast, Egress, Emitted, FrameMeta, FramePool, FrameRef, Output, PuntReason, TxFrame};
pub use path_quality::{GroupReport, PathQuality, PathQualityReport};
pub use tables::bridge::{FdbDest, FdbEntry, FdbKind};
pub use tables::fib::RouteTarget;
pub use tables::neighbors::{NeighborEntry, NeighborState};
pub use tables::ports::PortConfig;
pub use tables::router::{NextHop, RifKind, RouterInterface, TUNNEL_RIF, TunnelNextHop};
pub use tables::tunnel::{L3Vni, VtepConfig};
pub use tables::{DEFAULT_VRF, NextHopGroupId, NextHopId, PortId, RifId, TableError, Tables, Vni, VrfId};

use stages::{ForwardingState, Stages};

/// One switch: the [`Tables`] its control plane programs (reached through
/// `Deref`, so `switch.set_route(..)` programs its FIB) and the pipeline
/// that forwards over them.
pub struct Switch {
    stages: Stages,
}

impl std::ops::Deref for Switch {
    type Target = Tables;

    fn deref(&self) -> &Tables {
        &self.stages.tables
    }
}

impl std::ops::DerefMut for Switch {
    fn deref_mut(&mut self) -> &mut Tables {
        &mut self.stages.tables
    }
}

impl Switch {
    pub fn new(config: SwitchConfig) -> Switch {
        Switch { stages: Stages { state: ForwardingState::new(&config), tables: Tables::new(config) } }
    }

    /// The stages over this switch's tables.
    #[inline]
    fn stages(&mut self) -> &mut Stages {
        &mut self.stages
    }

    /// Installs (or with `None` removes) the ECMP path-quality hook.
    pub fn set_path_quality(&mut self, quality: Option<Box<dyn PathQuality>>) {
        self.stages.state.path_quality = quality;
    }

    /// The path-quality hook's state, if one is installed and reports.
    /// Tells the path-quality source (if any) a group's own balancing mode.
    pub fn set_group_dlb_mode(&mut self, group: NextHopGroupId, mode: Option<qos::dlb::DlbMode>) {
        if let Some(quality) = self.stages.state.path_quality.as_mut() {
            quality.set_group_mode(group, mode);
        }
    }

    pub fn path_quality_report(&self) -> Option<PathQualityReport> {
        self.stages.state.path_quality.as_ref().and_then(|quality| quality.report())
    }

    /// ICMP errors not sent because of the rate limit.
    pub fn icmp_errors_suppressed(&self) -> u64 {
        self.stages.state.icmp_limiter.suppressed
    }

    /// ARP packets and neighbour advertisements in which another node
    /// claimed one of the switch's addresses (duplicate address; the packet
    /// was punted to the host, never learned).
    pub fn address_conflicts(&self) -> u64 {
        self.stages.state.address_conflicts
    }

    /// ARP requests and neighbour solicitations kept off the overlay:
    /// answered from the suppression table (EVPN's MAC+IP bindings)
    /// instead of flooded, or asking for the anycast gateway on a VLAN
    /// with a VNI (answered by the SVI, flooded to local members only).
    pub fn neighbor_requests_suppressed(&self) -> u64 {
        self.stages.state.neighbor_requests_suppressed
    }

    /// Drops by reason, switch-wide; per-port drops are in [`PortCounters::drops`].
    pub fn drop_counters(&self) -> &DropCounters {
        &self.stages.state.drops
    }

    /// Advances timers: ages FDB entries and walks the neighbour state
    /// machines, writing ARP requests and neighbour solicitations into `out`.
    pub fn poll(&mut self, now: u64, out: &mut Output) {
        self.stages.state.call_flow_hash = 0;
        self.stages().poll_timers(now, out);
        out.finish(None, self.stages.state.call_flow_hash);
    }

    /// Forwards one frame received on `ingress` at time `now`.
    #[inline]
    pub fn process(&mut self, now: u64, ingress: PortId, frame: &[u8], out: &mut Output) -> Disposition {
        self.stages.state.call_flow_hash = 0;
        let disposition = self.stages().ingress(now, ingress, frame, out);
        out.finish(Some(ingress), self.stages.state.call_flow_hash);
        disposition
    }

    /// A frame the host (the kernel, through a host interface) sends out of
    /// `port`: no lookup (SAI hostif transmit).
    pub fn send_from_host(&mut self, now: u64, port: PortId, frame: &[u8], out: &mut Output) {
        self.stages().host_transmit(now, port, frame, out);
        out.finish(None, 0);
    }

    /// A frame the host sends through a router interface: out of the port of
    /// a routed port, or bridged in the SVI's VLAN as if from the CPU.
    pub fn send_from_host_on_rif(&mut self, now: u64, rif: RifId, frame: &[u8], out: &mut Output) {
        self.stages.state.call_flow_hash = 0;
        match self.stages.tables.router.rif(rif).map(|rif| rif.kind) {
            Some(RifKind::Port(port)) => self.stages().host_transmit(now, port, frame, out),
            Some(RifKind::Vlan(vid)) => self.stages().bridge_from_cpu(now, vid, frame, out),
            None => self.stages.state.drops.count(DropReason::RouterInterfaceDown),
        }
        out.finish(None, self.stages.state.call_flow_hash);
    }
}
