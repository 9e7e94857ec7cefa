//! The IB-like plane's part of the config: ports in `mode: ib` (their data
//! VLs and IB MTU) and the switch-wide `ib:` section (GUID, buffers, the
//! embedded subnet manager).
//!
//! ```yaml
//! ports:
//!   - { name: eth1, mode: ib, data_vls: 4, ib_mtu: 1024, ib_rate: 50M }
//! ib:
//!   guid: 0x0002c90300000100   # default: from the switch name
//!   buffer_blocks: 64          # receive buffer per data VL per port, 64-byte blocks
//!   sm:                        # a subnet manager in this switch (port 0)
//!     priority: 5              # SMInfo priority 0..15
//!     engine: [ftree, updn, minhop]
//!     roots: [0x0002c90300000100]  # updn's roots by switch GUID (default: detected)
//!     lmc: 0
//!     sweep_interval_ms: 10000
//!     sm_key: 0x1              # SMInfo SM_Key the subnet's SMs share (0: unchecked)
//!     m_key: 0x0123456789abcdef  # set on every endpoint port, carried in every SMP (0: none)
//!     m_key_protect_bits: 1    # 0..3
//!     m_key_lease_period: 60   # seconds (0: never expires)
//!     qos: true                # program SL-to-VL and VL arbitration on every port
//! ```

use serde::{Deserialize, Serialize};
use subnet_manager::routing::Engine;

use super::ConfigError;
use super::file::{BackendKind, ConfigFile, ModeKind};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IbFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guid: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_blocks: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm: Option<IbSmFile>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IbSmFile {
    #[serde(default)]
    pub priority: u8,
    /// Routing engines in the order tried (OpenSM's names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engine: Vec<String>,
    /// updn's roots by switch GUID (OpenSM's `root_guid_file`); empty:
    /// detected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<u64>,
    #[serde(default)]
    pub lmc: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_interval_ms: Option<u64>,
    #[serde(default)]
    pub sm_key: u64,
    #[serde(default)]
    pub m_key: u64,
    #[serde(default)]
    pub m_key_protect_bits: u8,
    #[serde(default)]
    pub m_key_lease_period: u16,
    /// Program SL-to-VL and VL arbitration tables (OpenSM's `qos`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub qos: bool,
}

/// A port's IB-like settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IbPort {
    pub data_vls: u8,
    /// IB MTU in bytes: the largest payload of a data packet.
    pub mtu: u16,
    /// Line rate in bits per second (`None`: unrated).
    pub rate_bps: Option<u64>,
}

/// The validated `ib:` section (present whenever a port is in `mode: ib`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbConfig {
    pub guid: u64,
    pub buffer_blocks: u16,
    pub sm: Option<IbSm>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IbSm {
    pub priority: u8,
    pub engines: Vec<Engine>,
    pub roots: Vec<u64>,
    pub lmc: u8,
    pub sweep_interval_ms: u64,
    /// The SM's keys, as `subnet_manager::sm::SmConfig` names them.
    pub sm_key: u64,
    pub m_key: u64,
    pub m_key_protect_bits: u8,
    pub m_key_lease_period: u16,
    /// SL-to-VL and VL arbitration tables set on every port by the SM.
    pub qos: bool,
}

pub const DEFAULT_DATA_VLS: u8 = 4;
pub const DEFAULT_IB_MTU: u16 = 1024;
pub const DEFAULT_BUFFER_BLOCKS: u16 = 64;
/// Bytes around an IB-like packet's payload inside the Ethernet payload:
/// the delimiter shim (2), LRH (8) and VCRC (2).
pub const LINK_OVERHEAD: u16 = 12;

/// Checks the IB-like port fields of port `i` (or that a non-IB port has
/// none of them).
pub(super) fn check_port(errors: &mut Vec<ConfigError>, file: &ConfigFile, i: usize) -> Option<IbPort> {
    let port = &file.ports[i];
    let at = |field: &str| format!("ports[{i}].{field}");
    let mut error = |path: String, reason: String| errors.push(ConfigError { path, line: None, reason });
    if port.mode != ModeKind::Ib {
        for (field, set) in [
            ("data_vls", port.data_vls.is_some()),
            ("ib_mtu", port.ib_mtu.is_some()),
            ("ib_rate", port.ib_rate.is_some()),
        ] {
            if set {
                error(at(field), "only valid on a port in mode ib".into());
            }
        }
        return None;
    }
    for (field, set) in [
        ("vlan", port.vlan.is_some()),
        ("vlans", port.vlans.is_some()),
        ("native", port.native.is_some()),
        ("addresses", port.addresses.is_some()),
    ] {
        if set {
            error(at(field), "not valid on an IB-like port".into());
        }
    }
    if file.backend == BackendKind::Kernel {
        error(at("mode"), "backend kernel: IB-like ports are the soft backend's".into());
    }
    let data_vls = port.data_vls.unwrap_or(DEFAULT_DATA_VLS);
    if !matches!(data_vls, 1 | 2 | 4 | 8) {
        error(at("data_vls"), format!("{data_vls} is not 1, 2, 4 or 8"));
    }
    let mtu = port.ib_mtu.unwrap_or(DEFAULT_IB_MTU);
    if !subnet_manager::plane::MTUS.contains(&mtu) {
        error(at("ib_mtu"), format!("{mtu} is not 256, 512, 1024, 2048 or 4096"));
    } else if mtu + LINK_OVERHEAD > port.mtu {
        error(
            at("ib_mtu"),
            format!(
                "{mtu} bytes of payload and {LINK_OVERHEAD} of link headers do not fit the port's mtu {}",
                port.mtu
            ),
        );
    }
    if port.kind != super::PortKind::Afpacket {
        error(at("kind"), "IB-like ports are AF_PACKET ports".into());
    }
    let rate_bps = match port.ib_rate.as_ref().map(|rate| rate.bits_per_second()) {
        Some(Err(reason)) => {
            error(at("ib_rate"), reason);
            None
        }
        Some(Ok(bps)) => Some(bps),
        None => None,
    };
    Some(IbPort { data_vls, mtu, rate_bps })
}

/// Checks the `ib:` section; `has_ib_ports` says whether any port uses it.
pub(super) fn check(errors: &mut Vec<ConfigError>, file: &ConfigFile, has_ib_ports: bool) -> Option<IbConfig> {
    let mut error = |path: &str, reason: String| errors.push(ConfigError { path: path.into(), line: None, reason });
    let ib = file.ib.clone().or_else(|| has_ib_ports.then(IbFile::default))?;
    if !has_ib_ports {
        error("ib", "no port is in mode ib".into());
    }
    let buffer_blocks = ib.buffer_blocks.unwrap_or(DEFAULT_BUFFER_BLOCKS);
    // One packet of the largest MTU must fit, and the 12-bit credit
    // counters must not wrap within one buffer (IBA 7.9.4).
    let largest = file.ports.iter().filter(|p| p.mode == ModeKind::Ib).filter_map(|p| p.ib_mtu).max();
    let needed = qos::ib::blocks(u32::from(largest.unwrap_or(DEFAULT_IB_MTU) + LINK_OVERHEAD));
    if !(needed..=2048).contains(&buffer_blocks) {
        error(
            "ib.buffer_blocks",
            format!("{buffer_blocks} is outside {needed}..=2048 (one packet of the largest ib_mtu)"),
        );
    }
    let guid = ib.guid.unwrap_or_else(|| guid_from_name(&file.name));
    if guid == 0 {
        error("ib.guid", "0 is not a GUID".into());
    }
    let sm = ib.sm.map(|sm| {
        if sm.priority > 15 {
            error("ib.sm.priority", format!("{} is outside 0..=15", sm.priority));
        }
        if sm.lmc > 7 {
            error("ib.sm.lmc", format!("{} is outside 0..=7", sm.lmc));
        }
        let mut engines = Vec::new();
        for (j, name) in sm.engine.iter().enumerate() {
            match Engine::from_name(name) {
                Some(engine) => engines.push(engine),
                None => error(&format!("ib.sm.engine[{j}]"), format!("unknown routing engine {name:?}")),
            }
        }
        if engines.is_empty() {
            engines.push(Engine::Minhop);
        }
        let sweep_interval_ms = sm.sweep_interval_ms.unwrap_or(10_000);
        if sweep_interval_ms == 0 {
            error("ib.sm.sweep_interval_ms", "must be above 0".into());
        }
        if sm.m_key_protect_bits > 3 {
            error("ib.sm.m_key_protect_bits", format!("{} is outside 0..=3", sm.m_key_protect_bits));
        }
        IbSm {
            priority: sm.priority,
            engines,
            roots: sm.roots,
            lmc: sm.lmc,
            sweep_interval_ms,
            sm_key: sm.sm_key,
            m_key: sm.m_key,
            m_key_protect_bits: sm.m_key_protect_bits,
            m_key_lease_period: sm.m_key_lease_period,
            qos: sm.qos,
        }
    });
    Some(IbConfig { guid, buffer_blocks, sm })
}

/// A stable GUID for a switch without one configured: 0x0002c903 (the
/// Mellanox OUI the agents report as VendorID) and 32 bits of the name's
/// FNV-1a hash.
pub fn guid_from_name(name: &str) -> u64 {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    (0x0002_c903u64 << 32) | (hash & 0xffff_ffff) | 1
}
