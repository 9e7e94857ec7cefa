//! The traffic manager's configuration and its validation: checked whole,
//! every error naming the field (in the YAML's kebab-case words) and why.

use serde::{Deserialize, Serialize};

use crate::buffer::{PgProfile, PoolConfig, QueueLimit, pfc_headroom_bytes};
use crate::classify::{CLASSES, QosMaps};
use crate::dlb::DlbConfig;
use crate::ecn::WredProfile;
use crate::pfc::PfcConfig;
use crate::scheduler::{DEFAULT_QUANTUM_UNIT, Discipline};
use crate::shaper::ShaperConfig;
use crate::watchdog::WatchdogConfig;

/// One port as the traffic manager sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PortConfig {
    /// Line rate, bits per second.
    pub speed_bps: u64,
    /// Cable to the peer, metres (for the PFC headroom).
    #[serde(default = "default_cable")]
    pub cable_length_m: u32,
    /// Largest frame, bytes.
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    /// A port shaper below line rate.
    #[serde(default)]
    pub shaper: Option<ShaperConfig>,
}

fn default_cable() -> u32 {
    5
}
fn default_mtu() -> u32 {
    9100
}

impl PortConfig {
    pub fn new(speed_bps: u64) -> PortConfig {
        PortConfig { speed_bps, cable_length_m: default_cable(), mtu: default_mtu(), shaper: None }
    }
}

/// ECN/WRED on a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "mode")]
pub enum EcnSetting {
    /// Neither marking nor WRED drops.
    #[default]
    Off,
    /// DCQCN's profile scaled to each port's speed ([`WredProfile::dcqcn`]).
    Dcqcn,
    /// This profile on every port.
    Profile(WredProfile),
}

/// A queue's profile, the same on every port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct QueueProfile {
    pub scheduler: Discipline,
    pub shaper: Option<ShaperConfig>,
    /// Limit for lossy frames.
    pub limit: QueueLimit,
    pub ecn: EcnSetting,
}

/// Everything the traffic manager needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct TmConfig {
    /// Ports by index (the pipeline's port ids).
    pub ports: Vec<PortConfig>,
    pub maps: QosMaps,
    pub pool: PoolConfig,
    /// Profiles of priority groups 0..8, the same on every port.
    pub priority_groups: [PgProfile; CLASSES],
    /// Profiles of queues 0..8, the same on every port.
    pub queues: [QueueProfile; CLASSES],
    pub pfc: PfcConfig,
    pub watchdog: WatchdogConfig,
    pub dlb: DlbConfig,
    /// DWRR bytes per unit of weight per round (at least the largest MTU).
    pub quantum_unit: u32,
    /// How far a port's transmit clock may lag behind `now` and catch up
    /// (a driver that wakes late still reaches line rate), ns.
    pub catch_up_ns: u64,
    /// Seed of the marking PRNG.
    pub seed: u64,
}

impl Default for TmConfig {
    /// No ports; every class lossy; DWRR weight 1 on every queue; no PFC, no ECN.
    fn default() -> TmConfig {
        TmConfig {
            ports: Vec::new(),
            maps: QosMaps::default(),
            pool: PoolConfig::default(),
            priority_groups: [PgProfile::default(); CLASSES],
            queues: [QueueProfile::default(); CLASSES],
            pfc: PfcConfig { priorities: Vec::new(), ..PfcConfig::default() },
            watchdog: WatchdogConfig::default(),
            dlb: DlbConfig::default(),
            quantum_unit: DEFAULT_QUANTUM_UNIT,
            catch_up_ns: 0,
            seed: 0x5eed,
        }
    }
}

impl TmConfig {
    /// The usual RoCE fabric setting: priorities 3 and 4 lossless (PGs 3
    /// and 4, PFC on), DCQCN's ECN profile on queues 3 and 4, queue 6
    /// strict (CNPs), the rest DWRR.
    pub fn roce(ports: Vec<PortConfig>) -> TmConfig {
        let mut config = TmConfig { ports, ..TmConfig::default() };
        for pg in [3, 4] {
            config.priority_groups[pg] =
                PgProfile { lossless: true, reserved_bytes: 2 * 9216, dynamic_th: -1, ..PgProfile::default() };
        }
        for queue in [3, 4] {
            config.queues[queue].ecn = EcnSetting::Dcqcn;
            config.queues[queue].scheduler = Discipline::Dwrr { weight: 4 };
        }
        config.queues[6].scheduler = Discipline::Strict;
        config.pfc.priorities = vec![3, 4];
        config
    }

    /// The headroom PG `pg` gets on port `port`: the configured one, or
    /// [`pfc_headroom_bytes`] for the port.
    pub fn headroom_bytes(&self, port: &PortConfig, pg: usize) -> u64 {
        let profile = &self.priority_groups[pg];
        if !profile.lossless {
            return 0;
        }
        match profile.headroom_bytes {
            Some(bytes) => u64::from(bytes),
            None => self.needed_headroom_bytes(port),
        }
    }

    /// [`pfc_headroom_bytes`] for `port` with this switch's PFC response
    /// time and receive lag: the least a lossless PG may have there.
    pub fn needed_headroom_bytes(&self, port: &PortConfig) -> u64 {
        pfc_headroom_bytes(port.speed_bps, port.cable_length_m, port.mtu, self.pfc.response_ns, self.pfc.rx_lag_ns)
    }

    /// The WRED/ECN profile of queue `queue` on `port`.
    pub fn wred(&self, port: &PortConfig, queue: usize) -> Option<WredProfile> {
        match self.queues[queue].ecn {
            EcnSetting::Off => None,
            EcnSetting::Dcqcn => Some(WredProfile::dcqcn(port.speed_bps, port.mtu)),
            EcnSetting::Profile(profile) => Some(profile),
        }
    }

    /// Cells the pool has left for sharing once every port's reserves and
    /// headrooms are set aside (the ingress pseudo-port of the CPU reserves
    /// nothing).
    pub fn shared_cells(&self) -> Option<u64> {
        let cell = u64::from(self.pool.cell_bytes.max(1));
        let mut reserved = 0u64;
        for port in &self.ports {
            for pg in 0..CLASSES {
                reserved += u64::from(self.priority_groups[pg].reserved_bytes).div_ceil(cell);
                reserved += self.headroom_bytes(port, pg).div_ceil(cell);
            }
        }
        (self.pool.size_bytes / cell).checked_sub(reserved)
    }

    /// The XOFF point of PG `pg` congested alone: its reserve plus
    /// `alpha / (1 + alpha)` of the shared pool, bytes.
    pub fn xoff_threshold_bytes(&self, pg: usize) -> u64 {
        let profile = &self.priority_groups[pg];
        let shared = self.shared_cells().unwrap_or(0) * u64::from(self.pool.cell_bytes);
        let th = i32::from(profile.dynamic_th);
        // alpha / (1 + alpha) with alpha = 2^th.
        let alone = if th >= 0 { shared * (1 << th) / ((1 << th) + 1) } else { shared / ((1 << -th) + 1) };
        u64::from(profile.reserved_bytes) + alone
    }

    /// Checks everything; the first problem found, naming its field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: String, reason: String| Err(ConfigError { field, reason });
        for (index, port) in self.ports.iter().enumerate() {
            if port.speed_bps == 0 {
                return err(format!("ports[{index}].speed"), "must be positive".into());
            }
            if !(68..=16_000).contains(&port.mtu) {
                return err(format!("ports[{index}].mtu"), format!("{} is not in 68..=16000", port.mtu));
            }
            if port.cable_length_m > 100_000 {
                return err(
                    format!("ports[{index}].cable-length"),
                    format!("{} m is longer than 100 km", port.cable_length_m),
                );
            }
            if let Some(shaper) = port.shaper {
                check_shaper(&format!("ports[{index}].shaper"), shaper, port.mtu)?;
            }
        }
        if let Err((field, reason)) = self.maps.validate() {
            return err(format!("maps.{field}"), reason);
        }
        if !(64..=16_384).contains(&self.pool.cell_bytes) {
            return err("pool.cell-bytes".into(), format!("{} is not in 64..=16384", self.pool.cell_bytes));
        }
        if self.pool.size_bytes / u64::from(self.pool.cell_bytes) > u64::from(u32::MAX / 2) {
            return err(
                "pool.size-bytes".into(),
                format!("{} bytes is more cells than the accounting holds", self.pool.size_bytes),
            );
        }
        let max_mtu = self.ports.iter().map(|p| p.mtu).max().unwrap_or(1500);
        for (pg, profile) in self.priority_groups.iter().enumerate() {
            let field = |name: &str| format!("priority-groups[{pg}].{name}");
            if !(-7..=7).contains(&profile.dynamic_th) {
                return err(field("dynamic-th"), format!("{} is not in -7..=7", profile.dynamic_th));
            }
            if profile.lossless
                && let Some(configured) = profile.headroom_bytes
            {
                for (index, port) in self.ports.iter().enumerate() {
                    let needed = self.needed_headroom_bytes(port);
                    if u64::from(configured) < needed {
                        return err(
                            field("headroom-bytes"),
                            format!(
                                "{configured} bytes is too small for port {index} ({} b/s, {} m of cable, MTU {}, {} ns PFC response, {} ns rx lag): it needs {needed}",
                                port.speed_bps, port.cable_length_m, port.mtu, self.pfc.response_ns, self.pfc.rx_lag_ns
                            ),
                        );
                    }
                }
            }
        }
        let enabled = self.pfc.enabled_mask();
        for &priority in &self.pfc.priorities {
            if usize::from(priority) >= CLASSES {
                return err("pfc.priorities".into(), format!("priority {priority} is not in 0..8"));
            }
            let pg = self.maps.pfc_priority_to_pg[usize::from(priority)];
            if !self.priority_groups[usize::from(pg)].lossless {
                return err(
                    "pfc.priorities".into(),
                    format!(
                        "PFC on priority {priority}, but its priority group {pg} (maps.pfc-priority-to-pg) is not lossless"
                    ),
                );
            }
        }
        if enabled != 0 && self.pfc.quanta == 0 {
            return err("pfc.quanta".into(), "0 would never pause".into());
        }
        if self.shared_cells().is_none() {
            return err(
                "pool.size-bytes".into(),
                format!(
                    "{} bytes is less than the reserves and headrooms of {} ports",
                    self.pool.size_bytes,
                    self.ports.len()
                ),
            );
        }
        if self.quantum_unit < max_mtu {
            return err("quantum-unit".into(), format!("{} is below the largest MTU {max_mtu}", self.quantum_unit));
        }
        for (queue, profile) in self.queues.iter().enumerate() {
            let field = |name: &str| format!("queues[{queue}].{name}");
            if let Discipline::Dwrr { weight: 0 } = profile.scheduler {
                return err(field("scheduler.weight"), "must be at least 1".into());
            }
            if let Some(shaper) = profile.shaper {
                check_shaper(&field("shaper"), shaper, max_mtu)?;
            }
            if let QueueLimit::Dynamic { th } = profile.limit
                && !(-7..=7).contains(&th)
            {
                return err(field("limit.dynamic"), format!("{th} is not in -7..=7"));
            }
            for port in &self.ports {
                let Some(wred) = self.wred(port, queue) else { continue };
                if let Err((name, reason)) = wred.validate() {
                    return err(field(&format!("ecn.{name}")), reason);
                }
                // A lossless class in this queue must be marked before its PG pauses.
                for tc in 0..CLASSES {
                    let pg = usize::from(self.maps.tc_to_pg[tc]);
                    if usize::from(self.maps.tc_to_queue[tc]) != queue || !self.priority_groups[pg].lossless {
                        continue;
                    }
                    let xoff = self.xoff_threshold_bytes(pg);
                    if u64::from(wred.kmin_bytes) > xoff {
                        return err(
                            field("ecn.kmin-bytes"),
                            format!(
                                "{} bytes is above the XOFF threshold of priority group {pg} ({xoff} bytes): PFC would pause before ECN marks",
                                wred.kmin_bytes
                            ),
                        );
                    }
                }
            }
        }
        let watchdog = &self.watchdog;
        for (name, value) in [
            ("watchdog.detection-ms", watchdog.detection_ms),
            ("watchdog.restoration-ms", watchdog.restoration_ms),
            ("watchdog.poll-interval-ms", watchdog.poll_interval_ms),
        ] {
            if value == 0 {
                return err(name.into(), "must be positive".into());
            }
        }
        if let Err((name, reason)) = self.dlb.validate() {
            return err(format!("dlb.{name}"), reason);
        }
        Ok(())
    }
}

fn check_shaper(field: &str, shaper: ShaperConfig, mtu: u32) -> Result<(), ConfigError> {
    if shaper.rate_bps < 8 {
        return Err(ConfigError {
            field: format!("{field}.rate-bps"),
            reason: "must be at least 8 (one byte per second)".into(),
        });
    }
    if shaper.burst_bytes < mtu {
        return Err(ConfigError {
            field: format!("{field}.burst-bytes"),
            reason: format!("{} is below the MTU {mtu}: a full frame would never conform", shaper.burst_bytes),
        });
    }
    Ok(())
}

/// A refused configuration: the field (path in the YAML) and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub field: String,
    pub reason: String,
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for ConfigError {}
