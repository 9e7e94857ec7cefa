//! Dynamic load balancing over ECMP groups.
//!
//! Per group, one of three modes:
//!
//! - **static**: the seeded hash's member, as without DLB;
//! - **flowlet**: a flowset table (entries indexed by the flow hash) keeps
//!   each flow on its member while its packets keep coming; after an idle
//!   gap longer than the inactivity timer the next packet starts a new
//!   flowlet, which goes to the best member at that moment. The gap is
//!   longer than the difference in path delays, so a flowlet that moves
//!   cannot overtake the one before it (Kandula et al., FLARE; CONGA);
//! - **spray**: every packet goes to the best member (receivers reorder).
//!
//! "Best" is the lowest cost, which the traffic manager publishes per port
//! on a [`LoadBoard`]: the time to drain the port's queues at its speed plus
//! its recent utilisation (an EWMA of the bytes it sent per window, as a
//! fraction of the window). Ties go to the static member for flowlets, and
//! rotate for spraying.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// A group's balancing mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DlbMode {
    /// Plain ECMP (`ecmp` in a config is the same).
    #[default]
    #[serde(alias = "ecmp")]
    Static,
    Flowlet,
    Spray,
}

impl DlbMode {
    pub fn name(self) -> &'static str {
        match self {
            DlbMode::Static => "static",
            DlbMode::Flowlet => "flowlet",
            DlbMode::Spray => "spray",
        }
    }
}

/// A group's mode, by the group's id in the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct GroupMode {
    pub group: u32,
    pub mode: DlbMode,
}

/// DLB configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct DlbConfig {
    /// The mode of groups not listed.
    pub mode: DlbMode,
    pub groups: Vec<GroupMode>,
    /// Idle gap after which a flow may move, microseconds.
    pub inactivity_us: u32,
    /// Flowset entries per group (a power of two).
    pub flowset_size: u32,
    /// Utilisation window of the quality EWMA, microseconds.
    pub window_us: u32,
}

impl Default for DlbConfig {
    /// Static hashing; flowlets of 256 us, 1024 flowset entries, 50 us windows.
    fn default() -> DlbConfig {
        DlbConfig { mode: DlbMode::Static, groups: Vec::new(), inactivity_us: 256, flowset_size: 1024, window_us: 50 }
    }
}

impl DlbConfig {
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !self.flowset_size.is_power_of_two() || self.flowset_size > 1 << 16 {
            return Err(("flowset-size", format!("{} is not a power of two up to 65536", self.flowset_size)));
        }
        if self.inactivity_us == 0 {
            return Err(("inactivity-us", "0 would move every packet (use mode spray)".into()));
        }
        if self.window_us == 0 {
            return Err(("window-us", "must be positive".into()));
        }
        Ok(())
    }
}

/// Per-port path cost, written by the traffic manager, read by DLB
/// (possibly elsewhere: the pipeline owns the ECMP hook, the node the
/// traffic manager).
#[derive(Debug, Clone)]
pub struct LoadBoard(Arc<[AtomicU32]>);

impl LoadBoard {
    pub fn new(ports: usize) -> LoadBoard {
        LoadBoard((0..ports).map(|_| AtomicU32::new(0)).collect())
    }

    /// Ports on the board.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A port's cost (ns-equivalent; lower is better). Unknown ports cost the most.
    #[inline]
    pub fn cost(&self, port: u16) -> u32 {
        self.0.get(usize::from(port)).map_or(u32::MAX, |c| c.load(Ordering::Relaxed))
    }

    #[inline]
    pub fn set(&self, port: u16, cost: u32) {
        if let Some(cell) = self.0.get(usize::from(port)) {
            cell.store(cost, Ordering::Relaxed);
        }
    }
}

/// A port's utilisation as an exponentially weighted moving average of the
/// fraction of each window it spent sending (weight 1/4 per window).
#[derive(Debug, Clone, Copy, Default)]
pub struct Utilisation {
    window_start: u64,
    window_bytes: u64,
    /// Fraction busy, in 1/1024.
    ewma: u32,
}

impl Utilisation {
    /// Records `bytes` sent at `now` on a port of `speed_bps`.
    #[inline]
    pub fn sent(&mut self, now: u64, bytes: u32, speed_bps: u64, window_ns: u64) {
        self.roll(now, speed_bps, window_ns);
        self.window_bytes += u64::from(bytes);
    }

    /// Closes the windows that ended by `now`.
    #[inline]
    pub fn roll(&mut self, now: u64, speed_bps: u64, window_ns: u64) {
        if now < self.window_start + window_ns {
            return;
        }
        let capacity_bytes = (u128::from(speed_bps) * u128::from(window_ns) / 8_000_000_000).max(1);
        let sample = (u128::from(self.window_bytes) * 1024 / capacity_bytes).min(1024) as u32;
        self.ewma = (3 * self.ewma + sample) / 4;
        let idle_windows = ((now - self.window_start) / window_ns - 1).min(32);
        for _ in 0..idle_windows {
            self.ewma = 3 * self.ewma / 4;
        }
        self.window_start = now - (now - self.window_start) % window_ns;
        self.window_bytes = 0;
    }

    /// Busy fraction in 1/1024.
    pub fn fraction(&self) -> u32 {
        self.ewma
    }
}

/// A port's cost from its queue depth and utilisation: the drain time of
/// its queue plus its busy fraction of one window, in ns.
#[inline]
pub fn port_cost(depth_bytes: u32, speed_bps: u64, utilisation: &Utilisation, window_ns: u64) -> u32 {
    CostScale::new(speed_bps, window_ns).cost(depth_bytes, utilisation)
}

/// [`port_cost`] with the divisions done once per port.
#[derive(Debug, Clone, Copy)]
pub struct CostScale {
    /// Drain ns per byte, 16.16 fixed point.
    ns_per_byte_q16: u64,
    window_ns: u64,
}

impl CostScale {
    pub fn new(speed_bps: u64, window_ns: u64) -> CostScale {
        let q16 = (8_000_000_000u128 << 16) / u128::from(speed_bps.max(1));
        CostScale { ns_per_byte_q16: q16.min(u128::from(u32::MAX)) as u64, window_ns }
    }

    #[inline]
    pub fn cost(&self, depth_bytes: u32, utilisation: &Utilisation) -> u32 {
        let drain_ns = (u64::from(depth_bytes) * self.ns_per_byte_q16) >> 16;
        let busy_ns = (u64::from(utilisation.fraction()) * self.window_ns) >> 10;
        (drain_ns + busy_ns).min(u64::from(u32::MAX)) as u32
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Flowset {
    member: u16,
    last_seen: u64,
    valid: bool,
}

/// A group's DLB state and counters (`show dlb`).
#[derive(Debug, Clone)]
pub struct GroupState {
    pub mode: DlbMode,
    flowsets: Box<[Flowset]>,
    rotate: u32,
    pub packets: u64,
    /// Flowlets started (first packet or after an idle gap).
    pub flowlets: u64,
    /// Flowlets that went to another member than their flow's last one.
    pub moves: u64,
}

/// DLB over all groups.
#[derive(Debug, Clone)]
pub struct Dlb {
    config: DlbConfig,
    inactivity_ns: u64,
    groups: FxHashMap<u32, GroupState>,
}

impl Dlb {
    pub fn new(config: DlbConfig) -> Dlb {
        Dlb { inactivity_ns: u64::from(config.inactivity_us) * 1000, config, groups: FxHashMap::default() }
    }

    pub fn config(&self) -> &DlbConfig {
        &self.config
    }

    pub fn group(&self, group: u32) -> Option<&GroupState> {
        self.groups.get(&group)
    }

    pub fn groups(&self) -> impl Iterator<Item = (u32, &GroupState)> {
        self.groups.iter().map(|(&id, state)| (id, state))
    }

    /// Gives `group` a mode of its own, or (`None`) the default one, from
    /// its next packet on: a group created, changed or removed while the
    /// switch runs. Its flowsets and counters start again, as a new
    /// group's would (a removed group's index may be reused).
    pub fn set_group_mode(&mut self, group: u32, mode: Option<DlbMode>) {
        self.config.groups.retain(|g| g.group != group);
        if let Some(mode) = mode {
            self.config.groups.push(GroupMode { group, mode });
        }
        self.groups.remove(&group);
    }

    /// The member for a packet of `flow_hash` in `group` at `now`, among
    /// `members`, where `static_index` is the seeded hash's choice and
    /// `cost(i)` member i's path cost. A group's state is allocated the first
    /// time it is seen; no other call allocates.
    #[inline]
    pub fn choose(
        &mut self,
        now: u64,
        group: u32,
        flow_hash: u32,
        members: usize,
        static_index: usize,
        cost: impl Fn(usize) -> u32,
    ) -> usize {
        if members <= 1 {
            return 0;
        }
        let config = &self.config;
        let state = self.groups.entry(group).or_insert_with(|| {
            let mode = config.groups.iter().find(|g| g.group == group).map_or(config.mode, |g| g.mode);
            let entries = if mode == DlbMode::Flowlet { config.flowset_size as usize } else { 0 };
            GroupState {
                mode,
                flowsets: vec![Flowset::default(); entries].into_boxed_slice(),
                rotate: 0,
                packets: 0,
                flowlets: 0,
                moves: 0,
            }
        });
        state.packets += 1;
        match state.mode {
            DlbMode::Static => static_index,
            DlbMode::Spray => {
                state.rotate = state.rotate.wrapping_add(1);
                best(members, state.rotate as usize % members, &cost)
            }
            DlbMode::Flowlet => {
                let mask = state.flowsets.len() - 1;
                let entry = &mut state.flowsets[flow_hash as usize & mask];
                if entry.valid
                    && now.saturating_sub(entry.last_seen) <= self.inactivity_ns
                    && usize::from(entry.member) < members
                {
                    entry.last_seen = now;
                    return usize::from(entry.member);
                }
                let chosen = best(members, static_index, &cost);
                state.flowlets += 1;
                if entry.valid && usize::from(entry.member) != chosen {
                    state.moves += 1;
                }
                *entry = Flowset { member: chosen as u16, last_seen: now, valid: true };
                chosen
            }
        }
    }
}

/// The lowest-cost member; among equals, the first from `start` on.
#[inline]
fn best(members: usize, start: usize, cost: &impl Fn(usize) -> u32) -> usize {
    let mut chosen = start;
    let mut lowest = cost(start);
    for step in 1..members {
        let index = (start + step) % members;
        let c = cost(index);
        if c < lowest {
            (chosen, lowest) = (index, c);
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_mode_keeps_the_hash() {
        let mut dlb = Dlb::new(DlbConfig::default());
        assert_eq!(dlb.choose(0, 7, 123, 4, 2, |i| if i == 2 { 1000 } else { 0 }), 2);
    }

    #[test]
    fn flowlet_moves_only_after_the_inactivity_gap() {
        let config = DlbConfig { mode: DlbMode::Flowlet, ..DlbConfig::default() };
        let mut dlb = Dlb::new(config);
        let costs = std::cell::Cell::new([0u32, 0]);
        let cost = |i: usize| costs.get()[i];
        // First packet: both idle, the static member.
        assert_eq!(dlb.choose(0, 1, 42, 2, 0, cost), 0);
        // Member 0 congests, but packets keep coming every 100 us: the flow stays.
        costs.set([50_000, 0]);
        for t in 1..10 {
            assert_eq!(dlb.choose(t * 100_000, 1, 42, 2, 0, cost), 0);
        }
        // A gap of 257 us (> 256 us): the next flowlet moves to member 1.
        assert_eq!(dlb.choose(900_000 + 257_000, 1, 42, 2, 0, cost), 1);
        let group = dlb.group(1).unwrap();
        assert_eq!((group.packets, group.flowlets, group.moves), (11, 2, 1));
        // Another flow starting now avoids the congested member.
        assert_eq!(dlb.choose(1_200_000, 1, 43, 2, 0, cost), 1);
    }

    #[test]
    fn spray_sends_each_packet_to_the_best_member_and_rotates_ties() {
        let config = DlbConfig { groups: vec![GroupMode { group: 9, mode: DlbMode::Spray }], ..DlbConfig::default() };
        let mut dlb = Dlb::new(config);
        let picks: Vec<usize> = (0..4).map(|t| dlb.choose(t, 9, 42, 2, 0, |_| 0)).collect();
        assert_eq!(picks, [1, 0, 1, 0]);
        assert!((0..10).all(|t| dlb.choose(t, 9, 42, 3, 0, |i| [30, 10, 20][i]) == 1));
        // The default mode still applies to other groups.
        assert_eq!(dlb.choose(0, 8, 42, 2, 0, |i| [30, 10][i]), 0);
    }

    #[test]
    fn a_group_mode_set_later_applies_from_the_next_packet() {
        let mut dlb = Dlb::new(DlbConfig::default());
        let cost = |i: usize| [30, 10][i];
        assert_eq!(dlb.choose(0, 4, 42, 2, 0, cost), 0, "static by default");
        dlb.set_group_mode(4, Some(DlbMode::Spray));
        assert_eq!(dlb.choose(1, 4, 42, 2, 0, cost), 1, "sprayed to the cheaper member");
        assert_eq!((dlb.group(4).unwrap().mode, dlb.group(4).unwrap().packets), (DlbMode::Spray, 1));
        // Removed (and its index reused by a group without a mode): the default again.
        dlb.set_group_mode(4, None);
        assert!(dlb.group(4).is_none());
        assert_eq!(dlb.choose(2, 4, 42, 2, 0, cost), 0);
        assert!(dlb.config().groups.is_empty());
    }

    #[test]
    fn utilisation_ewma_and_cost() {
        // 1 Gb/s, 50 us windows = 6250 bytes per window.
        let mut utilisation = Utilisation::default();
        let window = 50_000;
        for w in 0..20u64 {
            utilisation.sent(w * window, 6250, 1_000_000_000, window);
        }
        utilisation.roll(20 * window, 1_000_000_000, window);
        assert!(utilisation.fraction() >= 1015, "{}", utilisation.fraction());
        // 1500 queued bytes at 1 Gb/s drain in 12 us, plus ~50 us of busy window.
        let cost = port_cost(1500, 1_000_000_000, &utilisation, window);
        assert!((61_700..=62_000).contains(&cost), "{cost}");
        // Ten idle windows later the utilisation has decayed to (3/4)^10, about 5.6%.
        utilisation.roll(30 * window, 1_000_000_000, window);
        assert!((50..=60).contains(&utilisation.fraction()), "{}", utilisation.fraction());
    }

    #[test]
    fn load_board_is_shared() {
        let board = LoadBoard::new(4);
        let reader = board.clone();
        board.set(2, 77);
        assert_eq!(reader.cost(2), 77);
        assert_eq!(reader.cost(9), u32::MAX);
    }
}
