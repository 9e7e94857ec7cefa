//! The switch's configuration: parsed from YAML ([`file`]), validated as a
//! whole ([`validate`]) into the typed model below, which is what
//! `apply` programs. Nothing is applied from a config that has any error.

pub mod bgp;
pub mod file;
pub mod ib;
pub mod qos;
pub mod resources;
mod validate;

use ipnetwork::IpNetwork;
use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

pub use file::{AdminState, BackendKind, ConfigFile, LogLevel, PortKind};

/// A validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub name: String,
    /// The switch's MAC (router interfaces, LLDP chassis id, the kernel's
    /// link-local address on the host interfaces): derived from the name
    /// the daemon started with ([`crate::apply::switch_mac`]), kept when a
    /// commit renames the switch, as a chassis keeps its MAC when its
    /// hostname changes.
    pub system_mac: sai_shim::EthernetAddress,
    /// The dataplane the shim programs.
    pub backend: BackendKind,
    pub log_level: Option<LogLevel>,
    pub socket: PathBuf,
    pub lldp: Lldp,
    /// Table sizes of the pipeline.
    pub profile: resources::Profile,
    /// Ring memory of each afpacket port.
    pub port_rings: resources::PortRings,
    /// The switch's own addresses not bound to a port or VLAN.
    pub loopback: Vec<IpNetwork>,
    /// In file order.
    pub ports: Vec<Port>,
    /// Sorted by id.
    pub vlans: Vec<Vlan>,
    pub vxlan: Option<Vxlan>,
    /// The VRFs SVIs route in (`bgp.evpn.vrfs`: each with its L3VNI and
    /// router MAC, symmetric IRB), by name.
    pub vrfs: Vec<Vrf>,
    pub routes: Vec<StaticRoute>,
    /// The BGP speaker's configuration, resolved against the interfaces.
    pub bgp: Option<bgp_evpn::BgpConfig>,
    /// The traffic manager, ports in file order; `None`: no `qos:` and no
    /// port speed (ports send as fast as their I/O takes frames).
    pub qos: Option<::qos::tm::TmConfig>,
    /// ECMP groups with a DLB mode of their own (`qos.dlb.groups`), by
    /// their sorted next hops.
    pub dlb_groups: BTreeMap<Vec<IpAddr>, ::qos::dlb::DlbMode>,
    /// The IB-like plane, when a port is in `mode: ib`.
    pub ib: Option<ib::IbConfig>,
    /// Where the Prometheus endpoint listens, when enabled.
    pub metrics: Option<std::net::SocketAddr>,
    /// `forwarding.realtime_priority`: the forwarding thread's `SCHED_FIFO`
    /// priority (1-99); `None`: nice -10.
    pub realtime_priority: Option<u8>,
    /// The file as written, for `show running-config`.
    pub source: ConfigFile,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Lldp {
    pub enabled: bool,
    pub tx_interval_secs: u32,
    /// What this switch announces as its TTL.
    pub ttl_secs: u16,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Port {
    /// `ethN`.
    pub name: String,
    /// The `N` of `ethN`, 1-based.
    pub number: u16,
    pub kind: PortKind,
    pub admin_up: bool,
    pub mtu: u16,
    pub description: Option<String>,
    pub mode: PortMode,
    /// ICMP redirects on a routed port (RFC 1812 5.2.7.2, RFC 4861 8.2).
    pub redirects: bool,
    /// The VRF a routed port routes in; `None`: the default VRF.
    pub vrf: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PortMode {
    Access {
        vlan: u16,
    },
    /// `vlans` sorted, without the native VLAN (untagged).
    Trunk {
        vlans: Vec<u16>,
        native: Option<u16>,
    },
    Routed {
        addresses: Vec<IpNetwork>,
    },
    /// The IB-like plane's: no VLAN, no address; its 0x88B5 frames go to
    /// the IB-like switch engine.
    Ib(ib::IbPort),
}

impl PortMode {
    /// The VLAN untagged frames belong to.
    pub fn pvid(&self) -> Option<u16> {
        match self {
            PortMode::Access { vlan } => Some(*vlan),
            PortMode::Trunk { native, .. } => *native,
            PortMode::Routed { .. } | PortMode::Ib(_) => None,
        }
    }

    /// `(vid, tagged)` for every VLAN the port is a member of.
    pub fn memberships(&self) -> Vec<(u16, bool)> {
        match self {
            PortMode::Access { vlan } => vec![(*vlan, false)],
            PortMode::Trunk { vlans, native } => {
                native.iter().map(|&v| (v, false)).chain(vlans.iter().map(|&v| (v, true))).collect()
            }
            PortMode::Routed { .. } | PortMode::Ib(_) => Vec::new(),
        }
    }
}

impl fmt::Display for PortMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PortMode::Access { vlan } => write!(f, "access {vlan}"),
            PortMode::Trunk { vlans, native } => {
                let list: Vec<String> = vlans.iter().map(u16::to_string).collect();
                write!(f, "trunk {}", if list.is_empty() { "-".into() } else { list.join(",") })?;
                if let Some(native) = native {
                    write!(f, " native {native}")?;
                }
                Ok(())
            }
            PortMode::Routed { .. } => f.write_str("routed"),
            PortMode::Ib(port) => write!(f, "ib {} VLs mtu {}", port.data_vls, port.mtu),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Vlan {
    pub id: u16,
    pub name: Option<String>,
    /// SVI addresses; empty means no router interface on this VLAN.
    pub addresses: Vec<IpNetwork>,
    /// The VRF of the SVI; `None`: the default VRF.
    pub vrf: Option<String>,
    /// The SVI's MAC (an anycast gateway's); `None`: the switch's.
    pub mac: Option<dataplane::wire::EthernetAddress>,
    /// MACs configured behind member ports.
    pub static_macs: Vec<StaticMac>,
}

/// A static FDB entry: `mac` behind `port`, never aged or moved by learning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticMac {
    pub mac: dataplane::wire::EthernetAddress,
    pub port: String,
    /// EVPN's sticky bit.
    pub sticky: bool,
}

/// A VRF with its L3VNI and router MAC (symmetric IRB, RFC 9135).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vrf {
    pub name: String,
    pub l3vni: u32,
    pub router_mac: dataplane::wire::EthernetAddress,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Vxlan {
    pub source: Ipv4Addr,
    pub udp_port: u16,
    pub vnis: Vec<VniMap>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct VniMap {
    pub vni: u32,
    pub vlan: u16,
    pub flood: Vec<Ipv4Addr>,
}

/// A layer-3 interface of the switch.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum L3Interface {
    Port(String),
    Vlan(u16),
}

impl fmt::Display for L3Interface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            L3Interface::Port(name) => f.write_str(name),
            L3Interface::Vlan(id) => write!(f, "vlan{id}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct StaticRoute {
    pub prefix: IpNetwork,
    /// Resolved to the interface whose connected subnet holds each.
    pub next_hops: Vec<(IpAddr, L3Interface)>,
}

/// VNIs are 24 bits; 0 is reserved here as "no VNI".
pub const VNI_RANGE: std::ops::RangeInclusive<u32> = 1..=16_777_215;
/// 802.1Q: 0 and 4095 are reserved.
pub const VLAN_RANGE: std::ops::RangeInclusive<u16> = 1..=4094;
pub const MTU_RANGE: std::ops::RangeInclusive<u16> = 68..=9216;

/// One reason a config is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where, as `ports[2].vlans[0]`; empty for the document itself.
    pub path: String,
    /// 1-based line in the YAML, where the parser knows it.
    pub line: Option<usize>,
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() || self.path == "." { "(document)" } else { &self.path };
        write!(f, "{path}: {}", self.reason)?;
        if let Some(line) = self.line {
            write!(f, " (line {line})")?;
        }
        Ok(())
    }
}

/// Every reason a config is refused, in the order found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors {
    pub source: Option<PathBuf>,
    pub errors: Vec<ConfigError>,
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(path) => writeln!(f, "invalid config {}: {} error(s)", path.display(), self.errors.len())?,
            None => writeln!(f, "invalid config: {} error(s)", self.errors.len())?,
        }
        for error in &self.errors {
            writeln!(f, "  {error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

impl ConfigErrors {
    fn one(path: impl Into<String>, line: Option<usize>, reason: impl Into<String>) -> ConfigErrors {
        ConfigErrors { source: None, errors: vec![ConfigError { path: path.into(), line, reason: reason.into() }] }
    }

    /// Whether some error is about `path` (or a field under it).
    pub fn mentions(&self, path: &str) -> bool {
        self.errors.iter().any(|e| {
            e.path == path || e.path.starts_with(&format!("{path}.")) || e.path.starts_with(&format!("{path}["))
        })
    }
}

impl Config {
    /// Parses and validates a YAML document.
    pub fn from_yaml(text: &str) -> Result<Config, ConfigErrors> {
        let file = parse(text)?;
        validate::validate(file)
    }

    /// Reads, parses and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigErrors {
            source: Some(path.to_owned()),
            errors: vec![ConfigError { path: String::new(), line: None, reason: format!("cannot read: {e}") }],
        })?;
        Config::from_yaml(&text).map_err(|mut e| {
            e.source = Some(path.to_owned());
            e
        })
    }

    /// The running configuration as YAML, in the file's format.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(&self.source).unwrap_or_else(|e| format!("# cannot serialize: {e}\n"))
    }

    /// The addresses of routed ports and SVIs in VRFs: (VRF, address, interface).
    pub fn vrf_addresses(&self) -> Vec<(&str, IpNetwork, L3Interface)> {
        let mut all = Vec::new();
        for port in &self.ports {
            if let (Some(vrf), PortMode::Routed { addresses }) = (port.vrf.as_deref(), &port.mode) {
                all.extend(addresses.iter().map(|a| (vrf, *a, L3Interface::Port(port.name.clone()))));
            }
        }
        let in_vrf = self.vlans.iter().filter_map(|v| Some((v.vrf.as_deref()?, v)));
        all.extend(in_vrf.flat_map(|(vrf, v)| v.addresses.iter().map(move |a| (vrf, *a, L3Interface::Vlan(v.id)))));
        all
    }

    /// The VRF of a layer-3 interface; `None`: the default VRF.
    pub fn vrf_of(&self, interface: &L3Interface) -> Option<&str> {
        match interface {
            L3Interface::Port(name) => self.port(name)?.vrf.as_deref(),
            L3Interface::Vlan(id) => self.vlans.iter().find(|v| v.id == *id)?.vrf.as_deref(),
        }
    }

    pub fn vrf(&self, name: &str) -> Option<&Vrf> {
        self.vrfs.iter().find(|v| v.name == name)
    }

    pub fn port(&self, name: &str) -> Option<&Port> {
        self.ports.iter().find(|p| p.name == name)
    }

    /// Every address of the switch in the default VRF with the interface
    /// that carries it (`None` for loopback addresses).
    pub fn addresses(&self) -> Vec<(IpNetwork, Option<L3Interface>)> {
        let mut all: Vec<(IpNetwork, Option<L3Interface>)> = Vec::new();
        for port in self.ports.iter().filter(|p| p.vrf.is_none()) {
            if let PortMode::Routed { addresses } = &port.mode {
                all.extend(addresses.iter().map(|a| (*a, Some(L3Interface::Port(port.name.clone())))));
            }
        }
        for vlan in self.vlans.iter().filter(|v| v.vrf.is_none()) {
            all.extend(vlan.addresses.iter().map(|a| (*a, Some(L3Interface::Vlan(vlan.id)))));
        }
        all.extend(self.loopback.iter().map(|a| (*a, None)));
        all
    }
}

/// YAML to [`ConfigFile`], reporting the field path of a type error.
fn parse(text: &str) -> Result<ConfigFile, ConfigErrors> {
    let deserializer = serde_yaml::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let line = inner.location().map(|l| l.line());
        // serde_yaml appends "at line L column C" itself; the line is
        // reported separately, so keep the reason short.
        let mut reason = inner.to_string();
        if let Some(at) = reason.find(" at line ") {
            reason.truncate(at);
        }
        // serde_yaml also prefixes the path it knows; it is reported apart.
        if let Some(rest) = reason.strip_prefix(&format!("{path}: ")) {
            reason = rest.to_owned();
        }
        ConfigErrors::one(path, line, reason)
    })
}

#[cfg(test)]
mod tests;
