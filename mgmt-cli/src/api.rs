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
    /// `show backend`: what forwards for the switch and how.
    ShowBackend,
    /// `show bgp summary`.
    ShowBgpSummary,
    /// `show bgp neighbors [ADDRESS]`.
    ShowBgpNeighbors {
        address: Option<IpAddr>,
    },
    /// `show bfd peers`: the BFD sessions (RFC 5880) BGP asked for.
    ShowBfdPeers,
    /// `show bgp ipv4 unicast [PREFIX]`, `show bgp ipv6 unicast [PREFIX]`:
    /// the Loc-RIB of one family with every candidate path.
    ShowBgpRoutes {
        family: AddressFamily,
        prefix: Option<String>,
    },
    /// `show ip route`, `show ipv6 route`: the routing table with each
    /// route's protocol, as FRR prints it.
    ShowIpRoute {
        family: AddressFamily,
    },
    /// `show ip route vrf NAME`, `show ipv6 route vrf NAME`: one VRF's
    /// table (its SVIs' subnets and EVPN's routes over the L3VNI).
    ShowIpRouteVrf {
        family: AddressFamily,
        vrf: String,
    },
    /// `show ip route` streamed: answered with one `IpRoutes` line per
    /// chunk of routes, an empty chunk last, so neither end holds the
    /// whole table.
    StreamIpRoute {
        family: AddressFamily,
    },
    /// `show interfaces counters`.
    ShowInterfacesCounters,
    /// `show pfc counters`.
    ShowPfcCounters,
    /// `show queue counters`.
    ShowQueueCounters,
    /// `show queue wredcounters`.
    ShowQueueWredCounters,
    /// `show priority-group watermark headroom|shared`.
    ShowPriorityGroupWatermark {
        kind: PgWatermarkKind,
    },
    /// `show queue watermark`.
    ShowQueueWatermark,
    /// `show buffer pool`.
    ShowBufferPool,
    /// `show pfcwd stats`.
    ShowPfcwdStats,
    /// `show dlb`.
    ShowDlb,
    /// `show ib port`: the ports in IB-like mode, their state, credits and
    /// PortCounters.
    ShowIbPorts,
    /// `show ib counters`: every IB-like port's PortCounters and the
    /// agent's (SMPs, M_Key violations, traps).
    ShowIbCounters,
    /// `show ib lft [SWITCH]`: this switch's LFT, or (from the embedded
    /// SM) another switch's by name or GUID.
    ShowIbLft {
        switch: Option<String>,
    },
    /// `show ib sm`: the embedded subnet manager.
    ShowIbSm,
    /// `show ib topology`: the fabric the embedded SM discovered.
    ShowIbTopology,
    /// `show ib routes balance`: the last routing engine run's balance.
    ShowIbRoutesBalance,
    /// `show bgp l2vpn evpn [route [type N]]`: the EVPN Loc-RIB, every path.
    ShowBgpEvpn {
        route_type: Option<u8>,
    },
    /// `show evpn vni [VNI]`: the MAC-VRFs and L3VNIs.
    ShowEvpnVni {
        vni: Option<u32>,
    },
    /// `show evpn mac vni VNI|all`.
    ShowEvpnMac {
        vni: Option<u32>,
    },
    /// `show evpn arp-cache vni VNI|all`.
    ShowEvpnArpCache {
        vni: Option<u32>,
    },
    /// `show vrf`: the IP-VRFs with the routes EVPN put in them.
    ShowVrf,
    /// Live values the shell completes: interface names, VLANs, VNIs,
    /// neighbours, prefixes.
    ShowCompletions,
    /// `show system commit history`.
    ShowCommitHistory,
    /// The configuration of an earlier commit (`rollback N` loads it into
    /// the candidate): `back` 0 is running, 1 the commit before it...
    ShowCommit {
        back: usize,
    },
    /// Validate a candidate without applying it (`validate`).
    Validate {
        yaml: String,
    },
    /// Make a candidate the running configuration.
    Commit(CommitRequest),
    /// Write the running configuration to the startup file.
    Save,
    /// `check lossless`: the lossless checks of this switch.
    CheckLossless,
    /// `show lossless profile`: what the fabric-wide check reads from each
    /// switch (its traffic manager's configuration, ports and LLDP far ends).
    ShowLosslessProfile,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PgWatermarkKind {
    Headroom,
    Shared,
}

/// Who may send a request (checked by the daemon on the socket's peer
/// credentials, `SO_PEERCRED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Privilege {
    /// Members of `swread` (and everyone who may configure).
    Read,
    /// Root and members of `swadmin`.
    Configure,
}

/// The group whose members may configure.
pub const ADMIN_GROUP: &str = "swadmin";
/// The group whose members may only show.
pub const READ_GROUP: &str = "swread";

impl Request {
    /// What the sender must be allowed to do.
    pub fn privilege(&self) -> Privilege {
        match self {
            Request::Validate { .. } | Request::Commit(_) | Request::Save => Privilege::Configure,
            _ => Privilege::Read,
        }
    }
}

/// `commit [confirmed SECONDS] [comment TEXT]` of a candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitRequest {
    /// The whole candidate configuration, YAML in the startup file's format.
    pub yaml: String,
    /// The running generation the candidate was copied from: the commit is
    /// refused if running changed since (another session committed).
    pub base_generation: u64,
    pub comment: Option<String>,
    /// Roll back by itself unless confirmed (a later commit) within this.
    pub confirm_within_secs: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AddressFamily {
    Ipv4,
    Ipv6,
}

/// The server's answer to one [`Request`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Response {
    Ok { reply: Reply },
    Error { message: String },
}

/// `show backend`: the shim backend forwarding for the switch (`soft`,
/// `kernel`) and its settings (the kernel backend's `bridge_mode`:
/// `vlan-aware` or `per-vlan`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BackendInfo {
    pub name: String,
    pub details: Vec<(String, String)>,
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
    Backend(BackendInfo),
    BgpSummary(BgpSummary),
    BgpNeighbors(Vec<BgpNeighbor>),
    BgpRoutes(BgpRoutes),
    BfdPeers(BfdPeers),
    IpRoutes(Vec<IpRoute>),
    InterfaceCounters(Vec<crate::qos::InterfaceCounters>),
    PfcCounters(Vec<crate::qos::PfcCounters>),
    QueueCounters(Vec<crate::qos::QueueCounters>),
    WredCounters(Vec<crate::qos::WredCounters>),
    Watermarks(crate::qos::Watermarks),
    BufferPool(Vec<crate::qos::BufferPool>),
    PfcwdStats(Vec<crate::qos::PfcwdStats>),
    Dlb(crate::qos::Dlb),
    IbPorts(Vec<crate::ib::IbPort>),
    IbCounters(crate::ib::IbCounters),
    IbLft(crate::ib::IbLft),
    // Boxed: the largest reply by far.
    IbSm(Box<crate::ib::IbSm>),
    IbTopology(crate::ib::IbTopology),
    IbRoutesBalance(crate::ib::IbRoutesBalance),
    BgpEvpnRoutes(BgpEvpnRoutes),
    EvpnVnis(Vec<EvpnVni>),
    EvpnMacs(Vec<EvpnMac>),
    EvpnArpCache(Vec<EvpnArp>),
    Vrfs(Vec<Vrf>),
    Completions(Completions),
    CommitHistory(Vec<CommitEntry>),
    Validated(Validated),
    Committed(Committed),
    Saved(Saved),
    LosslessFindings(Vec<crate::lossless::LosslessFinding>),
    /// A `qos::lossless::SwitchProfile`.
    LosslessProfile(serde_json::Value),
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
    /// How long frames waited in the port's AF_PACKET receive ring before
    /// the forwarding thread read them (afpacket ports): what
    /// `qos.pfc.rx-lag-ns` must cover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_ring_wait: Option<RingWait>,
}

/// The wait of the oldest frame in each read of a port's receive ring:
/// reads that found frames, the worst and mean wait, and how many reads
/// waited longer than each bound (cumulative from the top: `over_1ms`
/// includes `over_10ms`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RingWait {
    pub reads: u64,
    pub max_us: u64,
    pub mean_us: u64,
    pub over_10us: u64,
    pub over_100us: u64,
    pub over_1ms: u64,
    pub over_10ms: u64,
    pub over_100ms: u64,
    pub over_1s: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub rx_drops: u64,
    pub tx_drops: u64,
    /// Frames the kernel dropped before the switch saw them: the port's
    /// AF_PACKET receive ring was full (`PACKET_STATISTICS` tp_drops).
    #[serde(default)]
    pub rx_ring_drops: u64,
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
    /// Counts commits since start (0 is the startup file): a candidate
    /// names the one it was copied from.
    #[serde(default)]
    pub generation: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Completions {
    pub interfaces: Vec<String>,
    pub vlans: Vec<u16>,
    pub vnis: Vec<u32>,
    pub neighbors: Vec<IpAddr>,
    pub prefixes: Vec<String>,
}

/// One commit kept by the daemon, newest first in the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitEntry {
    pub generation: u64,
    /// Seconds since the Unix epoch.
    pub time_unix: u64,
    pub user: String,
    pub comment: Option<String>,
    /// `pending 42s` while a confirmed commit waits, `confirmed`, or
    /// `rolled back` for one that was not confirmed in time.
    pub confirm: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validated {
    /// Running configuration changes the candidate would make (a unified
    /// diff of the YAML); empty when it changes nothing.
    pub diff: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Committed {
    /// The new running generation (unchanged when the commit only
    /// confirmed a pending one or changed nothing).
    pub generation: u64,
    /// Seconds before the commit is rolled back unless confirmed.
    pub rollback_in_secs: Option<u64>,
    /// What happened, one line: `committed`, `confirmed`, `no changes`.
    pub outcome: String,
    /// What the commit disrupted to apply in place, one line each (every
    /// BGP session reset by a new ASN or router id).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disrupted: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    pub path: String,
    pub generation: u64,
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

/// `show bgp summary`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BgpSummary {
    /// `false` when the config has no `bgp:` section (the rest is empty).
    pub enabled: bool,
    pub asn: u32,
    pub router_id: Option<Ipv4Addr>,
    /// Destinations in the Loc-RIB, both families.
    pub loc_rib_routes: usize,
    /// Route changes forwarding did not take since start (no next hop in a
    /// connected subnet, or a connected/static route of the same prefix).
    pub install_failures: u64,
    pub peers: Vec<BgpPeer>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BgpPeer {
    pub address: IpAddr,
    pub remote_as: u32,
    pub description: Option<String>,
    /// RFC 4271 state: `Idle`, `Connect`, `Active`, `OpenSent`, `OpenConfirm`, `Established`.
    pub state: String,
    /// Seconds in Established.
    pub uptime_secs: Option<u64>,
    pub prefixes_received: usize,
    pub prefixes_sent: usize,
    pub messages_received: u64,
    pub messages_sent: u64,
}

/// `show bgp neighbors`: one session in detail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BgpNeighbor {
    pub address: IpAddr,
    pub remote_as: u32,
    pub local_as: u32,
    /// `external` or `internal`.
    pub link: String,
    pub description: Option<String>,
    pub local_address: Option<IpAddr>,
    pub state: String,
    pub uptime_secs: Option<u64>,
    pub established_transitions: u64,
    /// What the OPENs agreed on, while a session is up.
    pub remote_router_id: Option<Ipv4Addr>,
    pub hold_time_secs: Option<u16>,
    pub keepalive_secs: Option<u16>,
    /// Negotiated families (`ipv4-unicast`...), or the configured ones when down.
    pub families: Vec<String>,
    /// Capabilities both sides announced: `4-octet-as`, `route-refresh`...
    pub capabilities: Vec<String>,
    pub disabled_families: Vec<String>,
    pub prefixes_received: usize,
    pub prefixes_sent: usize,
    pub sent: BgpMessageCounters,
    pub received: BgpMessageCounters,
    pub decode_errors: u64,
    /// RFC 7606 outcomes for this peer's UPDATEs.
    pub treat_as_withdraw: u64,
    pub attribute_discard: u64,
    pub afi_safi_disable: u64,
    /// Routes the import policy or a loop check refused.
    pub rejected_routes: u64,
    pub last_error: Option<String>,
    pub import_policy: Option<String>,
    pub export_policy: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BgpMessageCounters {
    pub open: u64,
    pub update: u64,
    pub notification: u64,
    pub keepalive: u64,
    pub route_refresh: u64,
}

/// `show bfd peers`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BfdPeers {
    pub peers: Vec<BfdPeer>,
    /// Datagrams on UDP 3784 that reached no session: malformed, arrived
    /// with a TTL below 255 (RFC 5881 section 5), or for no session.
    pub discarded_malformed: u64,
    pub discarded_bad_ttl: u64,
    pub discarded_no_session: u64,
}

/// One BFD session. Intervals and times in milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BfdPeer {
    pub peer: IpAddr,
    /// `up`, `down`, `init`, `admin-down`.
    pub state: String,
    pub remote_state: String,
    /// The RFC 5880 diagnostic we send: `none` while up.
    pub diagnostic: String,
    pub local_discriminator: u32,
    pub remote_discriminator: u32,
    pub transmit_interval_ms: u32,
    pub receive_interval_ms: u32,
    pub detect_multiplier: u8,
    pub remote_transmit_interval_ms: u32,
    pub remote_receive_interval_ms: u32,
    pub remote_detect_multiplier: u8,
    /// Negotiated: the interval we send at, and the time without packets
    /// after which the session goes down.
    pub negotiated_transmit_ms: u32,
    pub detection_time_ms: u64,
    pub uptime_ms: Option<u64>,
    /// At the last drop from Up: how long the peer had been silent (about
    /// the detection time for a cut link), and how long ago that was.
    pub last_down_silence_ms: Option<u64>,
    pub last_down_ago_ms: Option<u64>,
    /// Why it went down then (`control detection time expired`...).
    pub last_down_diagnostic: Option<String>,
    pub packets_received: u64,
    pub packets_sent: u64,
    pub send_errors: u64,
    pub up_transitions: u64,
    pub down_transitions: u64,
}

/// `show bgp ipv4 unicast`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BgpRoutes {
    pub family: AddressFamily,
    pub router_id: Option<Ipv4Addr>,
    pub asn: u32,
    pub routes: Vec<BgpRoute>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BgpRoute {
    pub prefix: String,
    /// Why the best path won (`AS path length`, `router id`, `only path`...).
    pub reason: String,
    /// Best first, then the other multipaths, then the rest.
    pub paths: Vec<BgpPath>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BgpPath {
    /// `None` for a route this switch originates.
    pub peer: Option<IpAddr>,
    pub best: bool,
    /// Used for forwarding (the best path and its equals under multipath).
    pub multipath: bool,
    pub next_hop: Option<IpAddr>,
    pub as_path: String,
    /// `i`, `e` or `?`.
    pub origin: String,
    pub med: Option<u32>,
    pub local_pref: Option<u32>,
    pub communities: Vec<String>,
}

/// One route of `show ip route`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpRoute {
    pub prefix: String,
    /// `connected`, `local`, `static`, `bgp`, `kernel`...
    pub protocol: String,
    /// Administrative distance (connected 0, static 1, eBGP 20, iBGP 200).
    pub distance: u8,
    pub metric: u32,
    /// Programmed into the forwarding table.
    pub installed: bool,
    pub next_hops: Vec<IpRouteNextHop>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpRouteNextHop {
    /// `None`: directly connected.
    pub ip: Option<IpAddr>,
    pub interface: Option<String>,
    /// In the forwarding table (a BGP next hop may be unresolvable).
    pub active: bool,
    /// Across the overlay (symmetric IRB): the remote VTEP's router MAC,
    /// the inner destination of packets sent on the L3VNI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_mac: Option<String>,
}

/// `show bgp l2vpn evpn`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BgpEvpnRoutes {
    pub router_id: Option<Ipv4Addr>,
    pub asn: u32,
    pub routes: Vec<BgpEvpnRoute>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BgpEvpnRoute {
    /// As FRR prints it: `RD [type]:[fields]`.
    pub prefix: String,
    pub route_type: u8,
    pub rd: String,
    pub paths: Vec<BgpEvpnPath>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BgpEvpnPath {
    /// `None` for a route this switch originates.
    pub peer: Option<IpAddr>,
    pub best: bool,
    /// The VTEP.
    pub next_hop: Option<IpAddr>,
    pub as_path: String,
    pub origin: String,
    pub local_pref: Option<u32>,
    /// `RT:65000:100`, `ET:8`, `Rmac:...`, `MM:1`.
    pub ext_communities: Vec<String>,
    /// The L2VNI (type 2), L3VNI (type 5).
    pub label1: Option<u32>,
    /// Type 2's L3VNI.
    pub label2: Option<u32>,
    pub pmsi_tunnel: Option<String>,
}

/// One line of `show evpn vni`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvpnVni {
    pub vni: u32,
    /// `L2` or `L3`.
    pub kind: String,
    pub vrf: Option<String>,
    pub rd: String,
    pub import_rts: Vec<String>,
    pub export_rts: Vec<String>,
    pub local_macs: usize,
    pub remote_macs: usize,
    pub arp_entries: usize,
    /// MACs frozen by duplicate detection (moved too often, RFC 7432 §15.1).
    #[serde(default)]
    pub duplicate_macs: usize,
    pub remote_vteps: Vec<IpAddr>,
}

/// One line of `show evpn mac vni`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvpnMac {
    pub vni: u32,
    pub mac: String,
    /// `local` or `remote`.
    pub kind: String,
    pub vtep: Option<IpAddr>,
    pub sequence: u32,
    pub sticky: bool,
    pub moves: u32,
    pub duplicate: bool,
    /// Moves a sticky MAC refused (RFC 7432 §15.2).
    #[serde(default)]
    pub refused_moves: u32,
}

/// One line of `show evpn arp-cache vni`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvpnArp {
    pub vni: u32,
    pub ip: IpAddr,
    pub mac: String,
    pub kind: String,
}

/// One IP-VRF of `show vrf`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vrf {
    pub name: String,
    pub l3vni: u32,
    pub router_mac: String,
    pub rd: String,
    pub routes: Vec<VrfRoute>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VrfRoute {
    pub prefix: String,
    /// `VTEP vni L3VNI rmac MAC`.
    pub next_hops: Vec<String>,
}
