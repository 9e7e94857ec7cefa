//! Request and response types of the management API.
//!
//! These are plain data (strings, numbers, std address types): the
//! management API is a contract with operators and scripts, so it does not
//! expose the dataplane's internal types.

use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr};

/// What a client asks. Serialized as `{"request":"show_interfaces"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
pub enum Request {
    ShowInterfaces,
    ShowMac,
    ShowVxlan,
    ShowNeighbors,
    ShowRoutes,
    ShowLldp,
    ShowRunningConfig,
    ShowDrops,
}

/// The server's answer to one [`Request`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Response {
    Ok { reply: Reply },
    Error { message: String },
}

/// The payload of a successful answer, one variant per request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum Reply {
    Interfaces(Vec<Interface>),
    Mac(Vec<MacEntry>),
    Vxlan(Vxlan),
    Neighbors(Vec<Neighbor>),
    Routes(Vec<Route>),
    Lldp(Vec<LldpNeighbor>),
    RunningConfig(RunningConfig),
    Drops(Vec<DropCount>),
}

/// A front-panel port or a VLAN interface (SVI).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface {
    pub name: String,
    /// `afpacket`, `tap` or `svi`.
    pub kind: String,
    pub admin_up: bool,
    pub oper_up: bool,
    pub mtu: u16,
    /// `access 10`, `trunk 10,20 native 1`, `routed`, `svi`.
    pub mode: String,
    /// Addresses with their prefix length, `10.0.0.1/31`.
    pub addresses: Vec<String>,
    pub mac: Option<String>,
    pub counters: Counters,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub rx_drops: u64,
    pub tx_drops: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MacEntry {
    pub vlan: u16,
    pub mac: String,
    /// A port name, or `vtep 192.0.2.1` for a MAC behind a remote VTEP.
    pub destination: String,
    /// `dynamic` or `static`.
    pub kind: String,
    /// Seconds since the entry was last refreshed (dynamic entries).
    pub age_secs: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vxlan {
    /// `None` when the switch is not a VTEP.
    pub source: Option<Ipv4Addr>,
    pub udp_port: u16,
    pub vnis: Vec<VniMapping>,
    pub remote_vteps: Vec<RemoteVtep>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VniMapping {
    pub vni: u32,
    pub vlan: u16,
    /// Head-end replication list for broadcast, unknown unicast, multicast.
    pub flood: Vec<Ipv4Addr>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteVtep {
    pub address: Ipv4Addr,
    /// VNIs whose flood list names this VTEP.
    pub vnis: Vec<u32>,
    /// MAC addresses currently learned behind it.
    pub macs: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbor {
    pub interface: String,
    pub ip: IpAddr,
    pub mac: Option<String>,
    /// `reachable`, `stale`, `incomplete`, `static`...
    pub state: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub prefix: String,
    /// `local`, `connected`, `static`, `drop`, `punt`.
    pub kind: String,
    pub next_hops: Vec<NextHop>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextHop {
    /// `None` for a connected route: the destination itself is the next hop.
    pub ip: Option<IpAddr>,
    pub interface: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LldpNeighbor {
    pub local_port: String,
    pub chassis_id: String,
    pub port_id: String,
    pub system_name: Option<String>,
    pub port_description: Option<String>,
    /// Time to live the neighbour announced.
    pub ttl_secs: u16,
    /// Seconds left before the entry expires.
    pub expires_in_secs: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningConfig {
    /// The running configuration as YAML, in the startup config's format.
    pub yaml: String,
}

/// Frames the pipeline dropped, by reason (only reasons that occurred).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropCount {
    /// The ingress port; `None` for the switch as a whole.
    pub interface: Option<String>,
    /// `neighbor-miss`, `malformed`, `no-route`...
    pub reason: String,
    pub packets: u64,
}
