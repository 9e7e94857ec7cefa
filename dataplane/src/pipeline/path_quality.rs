//! The hook through which dynamic load balancing chooses ECMP members.

use super::tables::{NextHopGroupId, PortId};

/// A source of path quality for ECMP groups (dynamic load balancing): given
/// a group's flow, it may pick another member than the static hash does.
/// The traffic manager implements it from egress queue depths and
/// utilisation; without one, the seeded static hash decides.
pub trait PathQuality: Send {
    /// The member index (`< members`) for a packet of flow `flow_hash` in
    /// `group` at `now`; `static_index` is the seeded hash's choice. An
    /// index out of range falls back to `static_index`. `member_port(i)` is
    /// the egress port member i's packets leave by, when the pipeline knows
    /// it (a routed port, or a resolved neighbour on an SVI).
    fn choose(
        &mut self,
        now: u64,
        group: NextHopGroupId,
        flow_hash: u32,
        members: usize,
        static_index: usize,
        member_port: &dyn Fn(usize) -> Option<PortId>,
    ) -> usize;

    /// What the source knows of its groups and ports, for `show dlb`.
    fn report(&self) -> Option<PathQualityReport> {
        None
    }

    /// `group` was created or changed with a balancing mode of its own
    /// (`None`: the default mode; also when it is removed).
    fn set_group_mode(&mut self, _group: NextHopGroupId, _mode: Option<qos::dlb::DlbMode>) {}
}

/// A path-quality source's state (`show dlb`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathQualityReport {
    /// The mode of groups not seen yet.
    pub default_mode: &'static str,
    pub groups: Vec<GroupReport>,
    /// Each port's cost as the source sees it (lower is better), by port index.
    pub port_costs: Vec<u32>,
}

/// One ECMP group's balancing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupReport {
    pub group: NextHopGroupId,
    /// `static`, `flowlet` or `spray`.
    pub mode: &'static str,
    pub packets: u64,
    /// Flowlets started (first packet or after an idle gap).
    pub flowlets: u64,
    /// Flowlets that went to another member than their flow's last one.
    pub moves: u64,
}
