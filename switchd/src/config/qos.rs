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
//!   pfc: {priorities: [3], quanta: 65535, response-ns: 1000, rx-lag-ns: 0}
//!   watchdog: {action: drop, detection-ms: 200, restoration-ms: 200, poll-interval-ms: 200}
//!   dlb: {mode: flowlet, inactivity-us: 256, groups: [{next-hops: [10.0.1.0, 10.0.2.0], mode: spray}]}
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use qos::buffer::{PgProfile, PoolConfig};
use qos::classify::{CLASSES, QosMaps};
use qos::dlb::{DlbConfig, DlbMode};
use qos::pfc::PfcConfig;
use qos::tm::{PortConfig, QueueProfile, TmConfig};
use qos::watchdog::WatchdogConfig;
use serde::{Deserialize, Serialize};

use super::file::{ConfigFile, PortFile};
use super::{ConfigError, StaticRoute};

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
    /// Dynamic load balancing: the mode of every ECMP group, and of
    /// groups named by their next hops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dlb: Option<DlbFile>,
}

/// `qos.dlb`: the `qos` crate's [`DlbConfig`], with groups named as the
/// config's routes name them, by their next hops.
///
/// ```yaml
/// dlb:
///   mode: ecmp                     # ecmp (static hash) | flowlet | spray: groups not listed
///   inactivity-us: 256
///   groups:
///     - {next-hops: [10.0.1.1, 10.0.2.1], mode: spray}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct DlbFile {
    #[serde(default)]
    pub mode: DlbMode,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<DlbGroupFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inactivity_us: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flowset_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_us: Option<u32>,
}

/// An ECMP group's own mode: the group of the routes whose next hops are
/// exactly these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct DlbGroupFile {
    pub next_hops: Vec<IpAddr>,
    pub mode: DlbMode,
}

impl DlbFile {
    fn config(&self) -> DlbConfig {
        let default = DlbConfig::default();
        DlbConfig {
            mode: self.mode,
            groups: Vec::new(),
            inactivity_us: self.inactivity_us.unwrap_or(default.inactivity_us),
            flowset_size: self.flowset_size.unwrap_or(default.flowset_size),
            window_us: self.window_us.unwrap_or(default.window_us),
        }
    }
}

/// The modes of `qos.dlb.groups`, by their sorted next hops; each group
/// must be the next hops of a static route with several of them.
pub fn check_dlb_groups(
    file: &ConfigFile,
    routes: &[StaticRoute],
    errors: &mut Vec<ConfigError>,
) -> BTreeMap<Vec<IpAddr>, DlbMode> {
    let mut modes = BTreeMap::new();
    let Some(dlb) = file.qos.as_ref().and_then(|q| q.dlb.as_ref()) else { return modes };
    let ecmp_sets: BTreeSet<Vec<IpAddr>> =
        routes.iter().filter(|r| r.next_hops.len() > 1).map(|r| sorted(r.next_hops.iter().map(|h| h.0))).collect();
    for (i, group) in dlb.groups.iter().enumerate() {
        let hops = sorted(group.next_hops.iter().copied());
        let path = format!("qos.dlb.groups[{i}].next-hops");
        let error = |reason: String| ConfigError { path: path.clone(), line: None, reason };
        if !ecmp_sets.contains(&hops) {
            errors.push(error(format!(
                "{hops:?} are not the next hops of any route with several (an ECMP group is named by all of them)"
            )));
        } else if modes.insert(hops.clone(), group.mode).is_some() {
            errors.push(error(format!("{hops:?} are listed twice")));
        }
    }
    modes
}

fn sorted(hops: impl Iterator<Item = IpAddr>) -> Vec<IpAddr> {
    let mut hops: Vec<IpAddr> = hops.collect();
    hops.sort();
    hops.dedup();
    hops
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
    if let Some(dlb) = &qos.dlb {
        // Groups are bound to the pipeline's groups when those exist
        // (`check_dlb_groups`, then the shim's next-hop group objects).
        config.dlb = dlb.config();
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
    fn a_dlb_group_must_be_a_routes_next_hops() {
        let ports = "name: s\nports:\n  - {name: eth1, mode: routed, addresses: [10.0.1.0/31], speed: 100M}\n  \
                     - {name: eth2, mode: routed, addresses: [10.0.2.0/31], speed: 100M}\n\
                     routes: [{prefix: 10.9.0.0/16, next_hops: [10.0.1.1, 10.0.2.1]}]\n";
        let (path, reason) =
            refused(&format!("{ports}qos: {{dlb: {{groups: [{{next-hops: [10.0.1.1], mode: spray}}]}}}}\n"));
        assert_eq!(path, "qos.dlb.groups[0].next-hops");
        assert!(reason.contains("not the next hops"), "{reason}");
        // In any order, and `ecmp` for the static hash.
        let config = Config::from_yaml(&format!(
            "{ports}qos: {{dlb: {{mode: flowlet, groups: [{{next-hops: [10.0.2.1, 10.0.1.1], mode: ecmp}}]}}}}\n"
        ))
        .unwrap();
        let hops = vec!["10.0.1.1".parse().unwrap(), "10.0.2.1".parse().unwrap()];
        assert_eq!(config.dlb_groups.get(&hops), Some(&qos::dlb::DlbMode::Static));
        assert_eq!(config.qos.unwrap().dlb.mode, qos::dlb::DlbMode::Flowlet);
    }

    #[test]
    fn the_kernel_backend_refuses_qos() {
        let errors = Config::from_yaml(&format!("{PORTS}backend: kernel\nqos: {{preset: roce}}\n")).unwrap_err();
        assert!(errors.mentions("qos") && errors.mentions("ports[0].speed"), "{errors}");
    }
}
