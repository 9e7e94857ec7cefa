//! The `qos:` section and the ports' `speed`/`cable-length`: the traffic
//! manager's settings in the `qos` crate's own words (kebab-case), checked
//! whole by [`qos::tm::TmConfig::validate`] against the ports they apply to.
//!
//! ```yaml
//! ports:
//!   - {name: eth1, mode: routed, speed: 100M, cable-length: 5, addresses: [10.0.1.1/31]}
//! qos:
//!   preset: roce                 # PGs/priorities 3 and 4 lossless with PFC, DCQCN ECN on queues 3, 4
//!   maps: {dscp-to-tc: {26: 3, 48: 6}}
//!   pool: {size-bytes: 8388608, cell-bytes: 256}
//!   priority-groups: {3: {lossless: true, reserved-bytes: 18432, dynamic-th: -1}}
//!   queues: {3: {scheduler: {type: dwrr, weight: 4}, ecn: {mode: dcqcn}}, 6: {scheduler: {type: strict}}}
//!   pfc: {priorities: [3], quanta: 65535, response-ns: 1000}
//!   watchdog: {action: drop, detection-ms: 200, restoration-ms: 200, poll-interval-ms: 200}
//!   dlb: {mode: flowlet, inactivity-us: 256}
//! ```

use std::collections::BTreeMap;

use qos::buffer::{PgProfile, PoolConfig};
use qos::classify::{CLASSES, QosMaps};
use qos::dlb::DlbConfig;
use qos::pfc::PfcConfig;
use qos::tm::{PortConfig, QueueProfile, TmConfig};
use qos::watchdog::WatchdogConfig;
use serde::{Deserialize, Serialize};

use super::ConfigError;
use super::file::{ConfigFile, PortFile};

/// A starting point the other fields refine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QosPreset {
    /// [`TmConfig::roce`]: priorities 3 and 4 lossless with PFC, DCQCN's
    /// ECN on queues 3 and 4, queue 6 strict.
    Roce,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct QosFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<QosPreset>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maps: Option<QosMaps>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolConfig>,
    /// Profiles by priority group index (0..8), the same on every port.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub priority_groups: BTreeMap<u8, PgProfile>,
    /// Profiles by queue index (0..8), the same on every port.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub queues: BTreeMap<u8, QueueProfile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pfc: Option<PfcConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watchdog: Option<WatchdogConfig>,
    /// Dynamic load balancing of every ECMP group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dlb: Option<DlbConfig>,
}

/// A port speed: bits per second, or a number with K, M, G or T
/// (`100M`, `25G`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SpeedFile {
    Bits(u64),
    Text(String),
}

impl SpeedFile {
    pub fn bits_per_second(&self) -> Result<u64, String> {
        match self {
            SpeedFile::Bits(0) => Err("must be positive".into()),
            SpeedFile::Bits(bps) => Ok(*bps),
            SpeedFile::Text(text) => {
                let upper = text.trim().to_ascii_uppercase();
                let upper = upper.strip_suffix("BPS").unwrap_or(&upper);
                let (digits, scale) = match upper.chars().last() {
                    Some('K') => (&upper[..upper.len() - 1], 1_000),
                    Some('M') => (&upper[..upper.len() - 1], 1_000_000),
                    Some('G') => (&upper[..upper.len() - 1], 1_000_000_000),
                    Some('T') => (&upper[..upper.len() - 1], 1_000_000_000_000),
                    _ => (upper, 1),
                };
                match digits.parse::<u64>().ok().and_then(|n| n.checked_mul(scale)) {
                    Some(0) => Err("must be positive".into()),
                    Some(bps) => Ok(bps),
                    None => Err(format!("{text:?} is not a speed (bits per second, or a number with K, M, G or T)")),
                }
            }
        }
    }
}

/// The frame size the traffic manager plans for: the port's IP MTU, the
/// Ethernet header and one VLAN tag.
pub fn frame_mtu(ip_mtu: u16) -> u32 {
    u32::from(ip_mtu) + 18
}

/// The traffic manager's configuration for `file`, ports in file order;
/// `None` when neither `qos:` nor any port speed is given. Every error
/// names its field.
pub fn check(file: &ConfigFile, errors: &mut Vec<ConfigError>) -> Option<TmConfig> {
    let mut error = |path: String, reason: String| errors.push(ConfigError { path, line: None, reason });
    let any_speed = file.ports.iter().any(|p| p.speed.is_some());
    if file.qos.is_none() && !any_speed {
        return None;
    }
    let mut ports = Vec::new();
    let mut complete = true;
    for (i, port) in file.ports.iter().enumerate() {
        match port_config(port) {
            Ok(config) => ports.push(config),
            Err(reason) => {
                error(format!("ports[{i}].speed"), reason);
                complete = false;
            }
        }
    }
    let qos = file.qos.clone().unwrap_or_default();
    let mut config = match qos.preset {
        Some(QosPreset::Roce) => TmConfig::roce(ports),
        None => TmConfig { ports, ..TmConfig::default() },
    };
    if let Some(maps) = qos.maps {
        config.maps = maps;
    }
    if let Some(pool) = qos.pool {
        config.pool = pool;
    }
    for (&index, profile) in &qos.priority_groups {
        match config.priority_groups.get_mut(usize::from(index)) {
            Some(slot) => *slot = *profile,
            None => error(format!("qos.priority-groups.{index}"), format!("{index} is not in 0..{CLASSES}")),
        }
    }
    for (&index, profile) in &qos.queues {
        match config.queues.get_mut(usize::from(index)) {
            Some(slot) => *slot = *profile,
            None => error(format!("qos.queues.{index}"), format!("{index} is not in 0..{CLASSES}")),
        }
    }
    if let Some(pfc) = qos.pfc {
        config.pfc = pfc;
    }
    if let Some(watchdog) = qos.watchdog {
        config.watchdog = watchdog;
    }
    if let Some(dlb) = qos.dlb {
        if !dlb.groups.is_empty() {
            error(
                "qos.dlb.groups".into(),
                "per-group modes are not configurable yet: one mode for every ECMP group".into(),
            );
        }
        config.dlb = dlb;
    }
    if !complete {
        return None;
    }
    if let Err(e) = config.validate() {
        error(yaml_path(&e.field), e.reason);
        return None;
    }
    Some(config)
}

fn port_config(port: &PortFile) -> Result<PortConfig, String> {
    let speed = port.speed.as_ref().ok_or("required when qos or any port's speed is configured".to_owned())?;
    Ok(PortConfig {
        speed_bps: speed.bits_per_second()?,
        cable_length_m: port.cable_length.unwrap_or(PortConfig::new(1).cable_length_m),
        mtu: frame_mtu(port.mtu),
        shaper: None,
    })
}

/// The traffic manager names fields as its own config does; ours are the
/// same under `qos.`, except the ports' (index and file order agree) and
/// the profile arrays, which the file writes as maps.
fn yaml_path(field: &str) -> String {
    if field.starts_with("ports[") {
        return field.to_owned();
    }
    let mut path = format!("qos.{field}");
    for list in ["priority-groups", "queues"] {
        if let Some(rest) = path.strip_prefix(&format!("qos.{list}["))
            && let Some((index, tail)) = rest.split_once(']')
        {
            path = format!("qos.{list}.{index}{tail}");
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds_parse_with_suffixes() {
        assert_eq!(SpeedFile::Text("100M".into()).bits_per_second(), Ok(100_000_000));
        assert_eq!(SpeedFile::Text("25g".into()).bits_per_second(), Ok(25_000_000_000));
        assert_eq!(SpeedFile::Text("1Gbps".into()).bits_per_second(), Ok(1_000_000_000));
        assert_eq!(SpeedFile::Bits(400).bits_per_second(), Ok(400));
        assert!(SpeedFile::Text("fast".into()).bits_per_second().is_err());
        assert!(SpeedFile::Bits(0).bits_per_second().is_err());
    }

    #[test]
    fn paths_follow_the_file() {
        assert_eq!(yaml_path("priority-groups[3].headroom-bytes"), "qos.priority-groups.3.headroom-bytes");
        assert_eq!(yaml_path("queues[3].ecn.kmin-bytes"), "qos.queues.3.ecn.kmin-bytes");
        assert_eq!(yaml_path("ports[1].cable-length"), "ports[1].cable-length");
        assert_eq!(yaml_path("pfc.priorities"), "qos.pfc.priorities");
    }
}

#[cfg(test)]
mod refusals {
    use crate::config::Config;

    fn refused(yaml: &str) -> (String, String) {
        let errors = Config::from_yaml(yaml).unwrap_err();
        assert_eq!(errors.errors.len(), 1, "{errors}");
        (errors.errors[0].path.clone(), errors.errors[0].reason.clone())
    }

    const PORTS: &str = "name: s\nports:\n  - {name: eth1, mode: routed, addresses: [10.0.1.1/31], speed: 100G, cable-length: 300, mtu: 9100}\n";

    #[test]
    fn ecn_kmin_above_xoff_is_refused() {
        let (path, reason) = refused(&format!(
            "{PORTS}qos:\n  preset: roce\n  queues: {{3: {{ecn: {{mode: profile, kmin-bytes: 9000000, kmax-bytes: 9500000, pmax-percent: 5}}}}}}\n"
        ));
        assert_eq!(path, "qos.queues.3.ecn.kmin-bytes");
        assert!(reason.contains("XOFF"), "{reason}");
    }

    #[test]
    fn headroom_too_small_for_the_cable_is_refused() {
        let (path, reason) = refused(&format!(
            "{PORTS}qos:\n  preset: roce\n  priority-groups: {{3: {{lossless: true, reserved-bytes: 18432, dynamic-th: -1, headroom-bytes: 20000}}}}\n"
        ));
        assert_eq!(path, "qos.priority-groups.3.headroom-bytes");
        assert!(reason.contains("too small") && reason.contains("300 m"), "{reason}");
    }

    #[test]
    fn pfc_on_a_lossy_priority_is_refused() {
        let (path, reason) = refused(&format!("{PORTS}qos:\n  pfc: {{priorities: [5]}}\n"));
        assert_eq!(path, "qos.pfc.priorities");
        assert!(reason.contains("not lossless"), "{reason}");
    }

    #[test]
    fn a_port_without_speed_is_refused_when_qos_is_on() {
        let (path, _) =
            refused("name: s\nports:\n  - {name: eth1, mode: routed, addresses: [10.0.1.1/31]}\nqos: {preset: roce}\n");
        assert_eq!(path, "ports[0].speed");
        let (path, _) =
            refused("name: s\nports:\n  - {name: eth1, mode: routed, addresses: [10.0.1.1/31], speed: 9Q}\n");
        assert_eq!(path, "ports[0].speed");
    }

    #[test]
    fn the_kernel_backend_refuses_qos() {
        let errors = Config::from_yaml(&format!("{PORTS}backend: kernel\nqos: {{preset: roce}}\n")).unwrap_err();
        assert!(errors.mentions("qos") && errors.mentions("ports[0].speed"), "{errors}");
    }
}
