//! The startup config as the YAML file spells it: every field an operator
//! may write, with defaults, and nothing checked beyond types. Unknown keys
//! are refused (`deny_unknown_fields`) so a typo never silently does nothing.
//!
//! ```yaml
//! name: leaf1
//! log_level: info              # trace | debug | info | warn | error
//! management:
//!   socket: /run/switchd/leaf1.sock
//! lldp:
//!   tx_interval_secs: 30
//!   hold_multiplier: 4
//! profile: small               # table sizes: default | small | large (config/resources.rs)
//! port_rings: { rx_kib: 256, tx_kib: 64 }   # AF_PACKET ring memory per port
//! loopback: [10.255.0.1/32]    # the switch's own addresses (VTEP source...)
//! ports:
//!   - name: eth1
//!     kind: afpacket           # afpacket | tap
//!     admin: up                # up | down
//!     mtu: 9100
//!     mode: access             # access | trunk | routed | ib
//!     vlan: 10
//!   - name: eth2
//!     mode: trunk
//!     vlans: [10, 20]
//!     native: 1
//!   - name: eth3
//!     mode: routed
//!     addresses: [10.0.1.1/31, "2001:db8:1::1/64"]
//! vlans:
//!   - id: 10
//!     members: [eth4]          # optional: ports may also join from the VLAN side
//!     addresses: [192.168.10.1/24]   # SVI
//! vxlan:
//!   source: 10.255.0.1
//!   udp_port: 4789
//!   vnis:
//!     - vni: 10010
//!       vlan: 10
//!       flood: [10.255.0.2]    # static remote VTEPs (head-end replication)
//! ib:                          # the IB-like plane (see config/ib.rs)
//!   sm: { priority: 5 }
//! routes:
//!   - prefix: 0.0.0.0/0
//!     next_hops: [10.0.1.0, 10.0.2.0]   # several = ECMP
//! ```

use ipnetwork::IpNetwork;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub name: String,
    /// Which dataplane forwards: this project's pipeline (`soft`, the
    /// default) or the Linux kernel (`kernel`).
    #[serde(default, skip_serializing_if = "BackendKind::is_soft")]
    pub backend: BackendKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<LogLevel>,
    #[serde(default)]
    pub management: ManagementFile,
    #[serde(default)]
    pub lldp: LldpFile,
    /// Table sizes (see `config/resources.rs`).
    #[serde(default, skip_serializing_if = "super::resources::Profile::is_default")]
    pub profile: super::resources::Profile,
    /// Ring memory of each afpacket port (see `config/resources.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_rings: Option<super::resources::PortRingsFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loopback: Vec<IpNetwork>,
    #[serde(default)]
    pub ports: Vec<PortFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vlans: Vec<VlanFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vxlan: Option<VxlanFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteFile>,
    /// The BGP speaker (see `config/bgp.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bgp: Option<super::bgp::BgpFile>,
    /// The traffic manager: maps, buffers, queues, PFC, ECN, watchdog, DLB
    /// (see `config/qos.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<super::qos::QosFile>,
    /// The IB-like plane (see `config/ib.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ib: Option<super::ib::IbFile>,
    /// The Prometheus endpoint; none unless asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricsFile>,
    /// How the forwarding thread runs (soft backend).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarding: Option<ForwardingFile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardingFile {
    /// `SCHED_FIFO` priority (1-99) for the forwarding thread; without it
    /// the thread runs at nice -10 (see `scheduling.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realtime_priority: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsFile {
    /// Where `GET /metrics` answers: the management address and a port
    /// (`192.0.2.10:9100`).
    pub listen: std::net::SocketAddr,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// This project's pipeline over AF_PACKET/TAP ports, with host interfaces.
    #[default]
    Soft,
    /// The kernel's bridges, vxlan devices and FIB, programmed over rtnetlink.
    Kernel,
}

impl BackendKind {
    pub fn is_soft(&self) -> bool {
        *self == BackendKind::Soft
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Soft => "soft",
            BackendKind::Kernel => "kernel",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Trace => "trace",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagementFile {
    /// Defaults to `/run/switchd/<name>.sock`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LldpFile {
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// IEEE 802.1AB msgTxInterval.
    #[serde(default = "default_lldp_interval")]
    pub tx_interval_secs: u32,
    /// IEEE 802.1AB msgTxHold: TTL = interval x hold.
    #[serde(default = "default_lldp_hold")]
    pub hold_multiplier: u32,
}

impl Default for LldpFile {
    fn default() -> Self {
        LldpFile { enabled: true, tx_interval_secs: default_lldp_interval(), hold_multiplier: default_lldp_hold() }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PortKind {
    /// A raw AF_PACKET socket on an existing interface (veth, physical).
    #[default]
    Afpacket,
    /// A TAP device switchd creates.
    Tap,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AdminState {
    #[default]
    Up,
    Down,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModeKind {
    Access,
    Trunk,
    Routed,
    /// The IB-like link layer (0x88B5 frames, credits, LID forwarding).
    Ib,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortFile {
    pub name: String,
    #[serde(default)]
    pub kind: PortKind,
    #[serde(default)]
    pub admin: AdminState,
    #[serde(default = "default_mtu")]
    pub mtu: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub mode: ModeKind,
    /// Access mode: the port's VLAN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<u16>,
    /// Trunk mode: the tagged VLANs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlans: Option<Vec<u16>>,
    /// Trunk mode: the VLAN of untagged frames (the PVID).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<u16>,
    /// Routed mode: the port's addresses with prefix length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses: Option<Vec<IpNetwork>>,
    /// Line rate (`100M`, `25G`, or bits per second): the port transmits
    /// at this rate through the traffic manager (see `config/qos.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<super::qos::SpeedFile>,
    /// Metres of cable to the peer, for the PFC headroom (default 5).
    #[serde(default, rename = "cable-length", alias = "cable_length", skip_serializing_if = "Option::is_none")]
    pub cable_length: Option<u32>,
    /// Routed mode: the VRF the port routes in (one of `bgp.evpn.vrfs`);
    /// default: the default VRF. Its connected subnet is advertised as an
    /// EVPN type 5 route in that VRF.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vrf: Option<String>,
    /// Routed mode: ICMP redirects for packets that leave by the port they
    /// came in on (RFC 1812 5.2.7.2); on unless `false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirects: Option<bool>,
    /// IB mode: operational data VLs (1, 2, 4, 8; default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_vls: Option<u8>,
    /// IB mode: the IB MTU (256..4096; default 1024), which with the link
    /// headers must fit `mtu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ib_mtu: Option<u16>,
    /// IB mode: the port's line rate (`50M`, `10G` or bits per second),
    /// counting the Ethernet frames its packets travel in; default: as fast
    /// as the link takes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ib_rate: Option<super::qos::SpeedFile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VlanFile {
    pub id: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Ports that join this VLAN: untagged on access ports, tagged on trunks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    /// Addresses of the VLAN's router interface (SVI).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<IpNetwork>,
    /// The VRF the SVI routes in (one of `bgp.evpn.vrfs`); default: the
    /// default VRF.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vrf: Option<String>,
    /// The SVI's MAC (`02:00:5e:00:01:01`): the same on every leaf with the
    /// same addresses makes a distributed anycast gateway. Default: the
    /// switch's MAC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// MACs configured behind member ports (static FDB entries, never
    /// aged, never moved by learning); in an EVPN VNI advertised as type 2.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_macs: Vec<StaticMacFile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticMacFile {
    pub mac: String,
    /// A member port of the VLAN.
    pub port: String,
    /// Advertised with EVPN's sticky bit (RFC 7432 §15.2): no other VTEP's
    /// advertisement moves it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sticky: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VxlanFile {
    pub source: Ipv4Addr,
    #[serde(default = "default_vxlan_port")]
    pub udp_port: u16,
    #[serde(default)]
    pub vnis: Vec<VniFile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VniFile {
    pub vni: u32,
    pub vlan: u16,
    /// Remote VTEPs that receive this VNI's broadcast, unknown unicast and
    /// multicast (head-end replication).
    #[serde(default)]
    pub flood: Vec<Ipv4Addr>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteFile {
    pub prefix: IpNetwork,
    /// Several next hops make an ECMP group.
    pub next_hops: Vec<IpAddr>,
}

fn default_true() -> bool {
    true
}
fn default_lldp_interval() -> u32 {
    30
}
fn default_lldp_hold() -> u32 {
    4
}
fn default_mtu() -> u16 {
    1500
}
fn default_vxlan_port() -> u16 {
    4789
}
