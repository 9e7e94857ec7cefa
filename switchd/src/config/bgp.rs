//! The `bgp:` section: how the file spells it ([`BgpFile`]) and its
//! validation against the rest of the config into the speaker's own
//! configuration ([`bgp_evpn::BgpConfig`]).
//!
//! ```yaml
//! bgp:
//!   asn: 65101
//!   router_id: 10.255.0.1          # default: the first IPv4 loopback address
//!   timers: { hold_time: 9, connect_retry: 2 }
//!   multipath: { max_paths: 8, as_path_relax: true }
//!   networks: [10.200.0.0/24]      # originated as written
//!   redistribute: [loopback, connected]
//!   neighbors:
//!     - { interface: eth1, remote_as: external }   # the peer on eth1's /31 or /30
//!     - { address: 10.1.2.0, remote_as: 65000, import_policy: from-spine }
//!       # per neighbour also: password: KEY (TCP MD5, RFC 2385), ttl_security_hops: 1 (GTSM, RFC 5082),
//!       # bfd: true (RFC 5880/5881; the session drops when BFD goes down)
//!   bfd: { transmit_interval_ms: 100, receive_interval_ms: 100, detect_multiplier: 3 }  # default 300/300/3
//!   fast_external_fallover: false  # default true: a port losing its link drops the eBGP sessions over it at once
//!   prefix_lists:
//!     loopbacks: [{ action: permit, prefix: 10.255.0.0/16, ge: 32 }]
//!   policies:
//!     from-spine: [{ match: { prefix_list: loopbacks }, action: permit, set: { local_pref: 200 } }]
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bgp_evpn::config::{BGP_PORT, BfdTimers, MaxPrefix, NeighborConfig, Timers};
use bgp_evpn::decision::MultipathConfig;
use bgp_evpn::packet::{Family, Ipv4Prefix, Ipv6Prefix, Nlri};
use bgp_evpn::policy::{Policy, PrefixList};
use bgp_evpn::session_security::Password;
use bgp_evpn::{BgpConfig, policy::PolicySet};
use ipnetwork::IpNetwork;
use serde::{Deserialize, Serialize};

use super::{Config, ConfigError, L3Interface, PortMode};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BgpFile {
    pub asn: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_id: Option<Ipv4Addr>,
    /// TCP port the speaker listens on (0: never accept, only connect).
    #[serde(default = "default_port")]
    pub listen_port: u16,
    #[serde(default)]
    pub timers: Timers,
    /// Timers of the BFD sessions of neighbours with `bfd: true`.
    #[serde(default, skip_serializing_if = "is_default_bfd")]
    pub bfd: BfdTimers,
    /// A port losing its link drops the eBGP sessions directly over it at
    /// once (default); `false` leaves them to BFD or the hold timer.
    #[serde(default = "fallover_default", skip_serializing_if = "is_fallover_default")]
    pub fast_external_fallover: bool,
    #[serde(default)]
    pub multipath: MultipathFile,
    /// Prefixes originated as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<IpNetwork>,
    /// The switch's own subnets originated too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redistribute: Vec<Redistribute>,
    #[serde(default)]
    pub neighbors: Vec<NeighborFile>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prefix_lists: BTreeMap<String, PrefixList>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub policies: BTreeMap<String, Policy>,
    /// MAC-VRFs and IP-VRFs; each VNI must be mapped to a VLAN in `vxlan:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evpn: Option<bgp_evpn::evpn::EvpnConfig>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MultipathFile {
    /// 1 turns ECMP off.
    #[serde(default = "default_max_paths")]
    pub max_paths: usize,
    /// Equal-length AS paths through different neighbouring ASes count as
    /// equal ("bestpath as-path multipath-relax"): spines with one ASN each.
    #[serde(default = "default_true")]
    pub as_path_relax: bool,
}

impl Default for MultipathFile {
    fn default() -> Self {
        MultipathFile { max_paths: default_max_paths(), as_path_relax: true }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Redistribute {
    /// The subnets of routed ports and VLAN interfaces.
    Connected,
    /// The `loopback:` addresses.
    Loopback,
}

/// `remote_as: 65000`, `remote_as: internal` (our own ASN).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RemoteAs {
    Number(u32),
    Kind(RemoteAsKind),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RemoteAsKind {
    Internal,
    /// Any AS but ours, learned from the peer's OPEN.
    External,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighborFile {
    /// The peer's address; or
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<IpAddr>,
    /// a routed port or VLAN interface: the peer is the other address of its
    /// point-to-point subnet (/31, /30; /127, /126).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    pub remote_as: RemoteAs,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Default: the session's own family (IPv4 unicast over IPv4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub families: Option<Vec<Family>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_time: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_retry: Option<u16>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub passive: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub next_hop_self: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub route_reflector_client: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_prefix: Option<MaxPrefix>,
    /// Accept our own AS this many times in received AS paths (leaves
    /// sharing one ASN).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub allow_own_as: u8,
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub weight: u32,
    #[serde(default, skip_serializing_if = "is_false")]
    pub shutdown: bool,
    /// TCP MD5 signature key (RFC 2385). `show running-config` prints
    /// `<hidden>` in its place, never the key.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "hidden_password")]
    pub password: Option<Password>,
    /// GTSM (RFC 5082): accept only segments that travelled at most this
    /// many hops (1 = directly connected); we send with TTL 255.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_security_hops: Option<u8>,
    /// A single-hop BFD session with the peer (RFC 5881); the BGP session
    /// drops as soon as it goes down (RFC 5882 section 10.2).
    #[serde(default, skip_serializing_if = "is_false")]
    pub bfd: bool,
}

fn fallover_default() -> bool {
    true
}
fn is_fallover_default(on: &bool) -> bool {
    *on
}

fn is_default_bfd(t: &BfdTimers) -> bool {
    *t == BfdTimers::default()
}

fn hidden_password<S: serde::Serializer>(p: &Option<Password>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Some(_) => s.serialize_str("<hidden>"),
        None => s.serialize_none(),
    }
}

fn default_port() -> u16 {
    BGP_PORT
}
fn default_max_paths() -> usize {
    64
}
fn default_true() -> bool {
    true
}
fn is_false(b: &bool) -> bool {
    !*b
}
fn is_zero(n: &u8) -> bool {
    *n == 0
}
fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

pub fn to_nlri(net: &IpNetwork) -> Option<Nlri> {
    match net {
        IpNetwork::V4(n) => Ipv4Prefix::new(n.network(), n.prefix()).map(Nlri::Ipv4),
        IpNetwork::V6(n) => Ipv6Prefix::new(n.network(), n.prefix()).map(Nlri::Ipv6),
    }
}

/// The other address of a point-to-point subnet holding `local`.
fn point_to_point_peer(local: &IpNetwork) -> Option<IpAddr> {
    match local {
        IpNetwork::V4(n) => {
            let me = u32::from(n.ip());
            let base = u32::from(n.network());
            let peer = match n.prefix() {
                31 => base + (1 - (me - base)),
                30 => base + 3 - (me - base),
                _ => return None,
            };
            Some(IpAddr::V4(Ipv4Addr::from(peer)))
        }
        IpNetwork::V6(n) => {
            let me = u128::from(n.ip());
            let base = u128::from(n.network());
            let peer = match n.prefix() {
                127 => base + (1 - (me - base)),
                126 => base + 3 - (me - base),
                _ => return None,
            };
            Some(IpAddr::V6(Ipv6Addr::from(peer)))
        }
    }
}

/// Checks the section against `config` (ports, VLANs, loopbacks already
/// validated) and builds the speaker's configuration. Every problem is
/// pushed to `errors` with the path of its field.
pub(super) fn check(bgp: &BgpFile, config: &Config, errors: &mut Vec<ConfigError>) -> BgpConfig {
    let mut error = |path: String, reason: String| errors.push(ConfigError { path, line: None, reason });
    let addresses = config.addresses();
    let is_local = |ip: IpAddr| addresses.iter().any(|(a, _)| a.ip() == ip);

    if bgp.asn == 0 {
        error("bgp.asn".into(), "must not be 0".into());
    }
    let first_v4 = || {
        let v4 = addresses.iter().filter_map(|(a, iface)| match a.ip() {
            IpAddr::V4(ip) => Some((iface.is_some(), ip)),
            IpAddr::V6(_) => None,
        });
        // Loopbacks first (`false` sorts first), then the lowest address.
        v4.clone().filter(|(on_iface, _)| !on_iface).map(|(_, ip)| ip).next().or_else(|| v4.map(|(_, ip)| ip).min())
    };
    let router_id = match bgp.router_id.or_else(first_v4) {
        Some(id) if id.is_unspecified() || id.is_multicast() || id.is_broadcast() => {
            error("bgp.router_id".into(), format!("{id} is not a usable router id (RFC 6286)"));
            id
        }
        Some(id) => id,
        None => {
            error("bgp.router_id".into(), "not given, and the switch has no IPv4 address to take it from".into());
            Ipv4Addr::UNSPECIFIED
        }
    };
    if bgp.multipath.max_paths == 0 {
        error("bgp.multipath.max_paths".into(), "must be at least 1".into());
    }
    let hold_ok = |h: u16| h == 0 || h >= 3;
    if !hold_ok(bgp.timers.hold_time) {
        error(
            "bgp.timers.hold_time".into(),
            format!("{} must be 0 or at least 3 (RFC 4271 4.2)", bgp.timers.hold_time),
        );
    }
    if bgp.timers.connect_retry == 0 {
        error("bgp.timers.connect_retry".into(), "must be at least 1 second".into());
    }
    if let Err(e) = bgp.bfd.validate("bgp.bfd") {
        let (path, reason) = e.split_once(": ").unwrap_or(("bgp.bfd", &e));
        error(path.into(), reason.into());
    }

    // Originated prefixes, without duplicates, in a stable order.
    let mut networks: BTreeSet<Nlri> = BTreeSet::new();
    for (i, net) in bgp.networks.iter().enumerate() {
        if net.ip() != net.network() {
            error(format!("bgp.networks[{i}]"), format!("{net} has host bits set (the network is {})", net.network()));
        }
        networks.extend(to_nlri(net));
    }
    for what in &bgp.redistribute {
        for (net, iface) in &addresses {
            let wanted = match what {
                Redistribute::Connected => iface.is_some(),
                Redistribute::Loopback => iface.is_none(),
            };
            if wanted {
                networks.extend(to_nlri(net));
            }
        }
    }

    let policy_set = PolicySet {
        prefix_lists: bgp.prefix_lists.clone().into_iter().collect(),
        policies: bgp.policies.clone().into_iter().collect(),
    };
    for (name, list) in &bgp.prefix_lists {
        for (j, entry) in list.0.iter().enumerate() {
            let (base, max) = match entry.prefix {
                Nlri::Ipv4(p) => (p.len(), 32),
                Nlri::Ipv6(p) => (p.len(), 128),
                // Prefix lists hold IP prefixes only (parsed from text).
                Nlri::Evpn(_) => continue,
            };
            for (field, bound) in [("ge", entry.ge), ("le", entry.le)] {
                if let Some(b) = bound
                    && (b < base || b > max)
                {
                    error(
                        format!("bgp.prefix_lists.{name}[{j}].{field}"),
                        format!("{b} is outside {base}..={max} for {}", entry.prefix),
                    );
                }
            }
        }
    }
    if let Err(e) = policy_set.check() {
        // "policies.NAME: reason"
        let (path, reason) = e.split_once(": ").unwrap_or(("policies", &e));
        error(format!("bgp.{path}"), reason.to_owned());
    }

    let mut neighbors = Vec::new();
    let mut seen: HashMap<IpAddr, usize> = HashMap::new();
    for (i, n) in bgp.neighbors.iter().enumerate() {
        let path = |f: &str| format!("bgp.neighbors[{i}].{f}");
        // Who the peer is, and our address facing it when known.
        let mut unnumbered = false;
        let resolved: Option<(IpAddr, Option<IpAddr>)> = match (&n.address, &n.interface) {
            (Some(_), Some(_)) => {
                error(path("interface"), "give either address or interface, not both".into());
                None
            }
            (None, None) => {
                error(path("address"), "give the peer's address or the interface it is on".into());
                None
            }
            (Some(addr), None) => {
                if is_local(*addr) {
                    error(path("address"), format!("{addr} is an address of this switch"));
                    None
                } else if addr.is_unspecified() || addr.is_multicast() {
                    error(path("address"), format!("{addr} is not a unicast address"));
                    None
                } else {
                    let local = addresses
                        .iter()
                        .filter(|(a, iface)| iface.is_some() && a.contains(*addr))
                        .max_by_key(|(a, _)| a.prefix())
                        .map(|(a, _)| a.ip());
                    Some((*addr, local))
                }
            }
            (None, Some(name)) => {
                let iface = match name.strip_prefix("vlan").and_then(|id| id.parse::<u16>().ok()) {
                    Some(id) => L3Interface::Vlan(id),
                    None => L3Interface::Port(name.clone()),
                };
                let known = match &iface {
                    L3Interface::Port(p) => config.port(p).map(|p| matches!(p.mode, PortMode::Routed { .. })),
                    L3Interface::Vlan(id) => config.vlans.iter().find(|v| v.id == *id).map(|v| !v.addresses.is_empty()),
                };
                let mine: Vec<&IpNetwork> =
                    addresses.iter().filter(|(_, i)| i.as_ref() == Some(&iface)).map(|(a, _)| a).collect();
                let numbered = mine.iter().any(|a| point_to_point_peer(a).is_some());
                match known {
                    None => {
                        error(path("interface"), format!("unknown interface {name}"));
                        None
                    }
                    // BGP unnumbered: a routed port without a point-to-point
                    // subnet; the peer is found by its router advertisements.
                    Some(true) if matches!(iface, L3Interface::Port(_)) && !numbered => {
                        unnumbered = true;
                        Some((IpAddr::V6(Ipv6Addr::UNSPECIFIED), None))
                    }
                    Some(false) => {
                        error(
                            path("interface"),
                            format!("{name} has no addresses (not a routed port or VLAN interface)"),
                        );
                        None
                    }
                    Some(true) => {
                        // IPv4 first: the usual underlay.
                        let peer = mine
                            .iter()
                            .filter(|a| a.is_ipv4())
                            .chain(mine.iter().filter(|a| a.is_ipv6()))
                            .find_map(|a| point_to_point_peer(a).map(|p| (p, Some(a.ip()))));
                        if peer.is_none() {
                            error(
                                path("interface"),
                                format!(
                                    "{name} has no /31, /30, /127 or /126 address to find the peer on; give address instead"
                                ),
                            );
                        }
                        peer
                    }
                }
            }
        };
        let remote_as = match n.remote_as {
            RemoteAs::Number(0) => {
                error(path("remote_as"), "must not be 0".into());
                0
            }
            RemoteAs::Number(asn) => asn,
            RemoteAs::Kind(RemoteAsKind::Internal) => bgp.asn,
            // Never equal to ours: the session is external whatever the peer says.
            RemoteAs::Kind(RemoteAsKind::External) => 0,
        };
        let external_any = n.remote_as == RemoteAs::Kind(RemoteAsKind::External);
        let families = n.families.clone().unwrap_or_else(|| match resolved {
            // One link-local session carries both (RFC 8950 for IPv4).
            _ if unnumbered => vec![Family::Ipv4Unicast, Family::Ipv6Unicast],
            Some((IpAddr::V6(_), _)) => vec![Family::Ipv6Unicast],
            _ => vec![Family::Ipv4Unicast],
        });
        if families.is_empty() {
            error(path("families"), "at least one address family".into());
        }
        let mut unique = families.clone();
        unique.sort_by_key(|f| f.to_string());
        unique.dedup();
        if unique.len() != families.len() {
            error(path("families"), "a family is listed twice".into());
        }
        if let Some(h) = n.hold_time
            && !hold_ok(h)
        {
            error(path("hold_time"), format!("{h} must be 0 or at least 3 (RFC 4271 4.2)"));
        }
        if n.connect_retry == Some(0) {
            error(path("connect_retry"), "must be at least 1 second".into());
        }
        for (field, name) in [("import_policy", &n.import_policy), ("export_policy", &n.export_policy)] {
            if let Some(name) = name
                && !bgp.policies.contains_key(name)
            {
                error(path(field), format!("policy {name:?} is not defined"));
            }
        }
        if n.max_prefix.is_some_and(|m| m.limit == 0) {
            error(path("max_prefix.limit"), "must be at least 1".into());
        }
        let ebgp = external_any || remote_as != bgp.asn;
        if n.route_reflector_client && ebgp {
            error(path("route_reflector_client"), "only internal (iBGP) neighbours can be reflector clients".into());
        }
        let Some((address, local)) = resolved else { continue };
        if ebgp && local.is_none() && !unnumbered {
            // No multihop eBGP: the session runs over a connected subnet.
            error(path("address"), format!("external neighbour {address} is not in a connected subnet"));
        }
        if !unnumbered && let Some(first) = seen.insert(address, i) {
            error(path("address"), format!("{address} is also bgp.neighbors[{first}]"));
        }
        let mut neighbor = NeighborConfig::new(address, remote_as);
        if unnumbered {
            // The session runs over the port's host interface.
            neighbor.interface = n.interface.as_deref().map(crate::hostif::port_host_name);
        }
        neighbor.remote_as_external = external_any;
        neighbor.description = n.description.clone();
        neighbor.passive = n.passive;
        // Bind our end of the session to the interface's address, so the
        // kernel's source choice never surprises the peer.
        neighbor.local_address = local;
        neighbor.hold_time = n.hold_time;
        neighbor.connect_retry = n.connect_retry;
        neighbor.families = families;
        neighbor.route_reflector_client = n.route_reflector_client;
        neighbor.next_hop_self = n.next_hop_self;
        neighbor.import_policy = n.import_policy.clone();
        neighbor.export_policy = n.export_policy.clone();
        neighbor.max_prefix = n.max_prefix;
        neighbor.weight = n.weight;
        neighbor.allow_own_as = n.allow_own_as;
        neighbor.shutdown = n.shutdown;
        if let Some(password) = &n.password
            && let Err(e) = password.check()
        {
            error(path("password"), e);
        }
        if n.ttl_security_hops.is_some_and(|h| !(1..=254).contains(&h)) {
            error(path("ttl_security_hops"), "must be 1 to 254 (RFC 5082)".into());
        }
        neighbor.password = n.password.clone();
        neighbor.ttl_security_hops = n.ttl_security_hops;
        neighbor.bfd = n.bfd;
        neighbors.push(neighbor);
    }

    if let Some(evpn) = &bgp.evpn {
        check_evpn(evpn, router_id, config, &mut error);
    }

    let mut out = BgpConfig::new(bgp.asn, router_id);
    out.evpn = bgp.evpn.clone().map(|evpn| with_static_macs(with_routed_port_subnets(evpn, config), config));
    out.listen_port = bgp.listen_port;
    out.multipath = MultipathConfig { max_paths: bgp.multipath.max_paths, as_path_relax: bgp.multipath.as_path_relax };
    out.timers = bgp.timers;
    out.bfd = bgp.bfd;
    out.fast_external_fallover = bgp.fast_external_fallover;
    out.networks = networks.into_iter().collect();
    out.neighbors = neighbors;
    out.prefix_lists = policy_set.prefix_lists;
    out.policies = policy_set.policies;
    out
}

/// The static MACs of each EVPN VNI's VLAN, for the speaker to advertise
/// (sticky ones with the sticky bit).
fn with_static_macs(mut evpn: bgp_evpn::evpn::EvpnConfig, config: &Config) -> bgp_evpn::evpn::EvpnConfig {
    let maps = config.vxlan.iter().flat_map(|x| x.vnis.iter());
    for map in maps {
        let Some(vni) = evpn.vnis.iter_mut().find(|v| v.vni == map.vni) else { continue };
        let Some(vlan) = config.vlans.iter().find(|v| v.id == map.vlan) else { continue };
        vni.static_macs = vlan
            .static_macs
            .iter()
            .map(|s| bgp_evpn::evpn::config::StaticMac {
                mac: bgp_evpn::packet::evpn::MacAddr(s.mac.0),
                sticky: s.sticky,
            })
            .collect();
    }
    evpn
}

/// Each routed port in a VRF has its connected subnets advertised as type 5
/// routes in that VRF (as FRR's `advertise ipv4 unicast` with connected
/// routes redistributed into the VRF): hosts behind a routed port are not
/// learned as type 2, so the subnet is how the other leaves reach them.
fn with_routed_port_subnets(mut evpn: bgp_evpn::evpn::EvpnConfig, config: &Config) -> bgp_evpn::evpn::EvpnConfig {
    for (vrf, address, interface) in config.vrf_addresses() {
        if !matches!(interface, L3Interface::Port(_)) {
            continue;
        }
        let Some(vrf) = evpn.vrfs.iter_mut().find(|v| v.name == vrf) else { continue };
        if let Some(subnet) = to_nlri(&address)
            && !vrf.networks.contains(&subnet)
        {
            vrf.networks.push(subnet);
        }
    }
    evpn
}

/// The `evpn:` part: valid on its own, and the switch is the VTEP it
/// describes (the VXLAN tunnel's source, a VLAN for each VNI, no static
/// flood list where EVPN builds one).
fn check_evpn(
    evpn: &bgp_evpn::evpn::EvpnConfig,
    router_id: Ipv4Addr,
    config: &Config,
    error: &mut impl FnMut(String, String),
) {
    if let Err(e) = evpn.validate(router_id) {
        let (path, reason) = e.split_once(": ").unwrap_or(("bgp.evpn", &e));
        error(path.into(), reason.into());
    }
    let Some(vxlan) = &config.vxlan else {
        return error("bgp.evpn".into(), "needs the vxlan section (the tunnel and each VNI's VLAN)".into());
    };
    if evpn.vtep_ip != IpAddr::V4(vxlan.source) {
        error("bgp.evpn.vtep_ip".into(), format!("must be vxlan.source ({})", vxlan.source));
    }
    for (i, v) in evpn.vnis.iter().enumerate() {
        match vxlan.vnis.iter().find(|m| m.vni == v.vni) {
            None => {
                error(format!("bgp.evpn.vnis[{i}].vni"), format!("VNI {} is mapped to no VLAN in vxlan.vnis", v.vni))
            }
            Some(m) if !m.flood.is_empty() => error(
                format!("bgp.evpn.vnis[{i}].vni"),
                format!("VNI {} has a static flood list in vxlan.vnis; EVPN builds it from type 3 routes", v.vni),
            ),
            Some(_) => {}
        }
        if !v.static_macs.is_empty() {
            error(
                format!("bgp.evpn.vnis[{i}].static_macs"),
                "a static MAC is configured under its VLAN (vlans[].static_macs), with its port".into(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEAF: &str = r#"
name: leaf1
loopback: [10.255.0.1/32, "fd00:ff::1/128"]
ports:
  - { name: eth1, mode: routed, addresses: [10.1.1.0/31] }
  - { name: eth2, mode: routed, addresses: [10.1.2.1/30, "2001:db8:2::1/127"] }
  - { name: eth3, mode: routed, addresses: [192.168.1.1/24] }
  - { name: eth4, mode: access, vlan: 10 }
vlans:
  - { id: 10 }
bgp:
  asn: 65101
  timers: { hold_time: 9, connect_retry: 2 }
  networks: [10.200.0.0/24]
  redistribute: [loopback, connected]
  neighbors:
    - { interface: eth1, remote_as: external }
    - { interface: eth2, remote_as: 65000, families: [ipv4-unicast, ipv6-unicast], import_policy: in }
    - { address: 10.255.0.9, remote_as: internal, route_reflector_client: true, max_prefix: { limit: 100 } }
  prefix_lists:
    lo: [{ action: permit, prefix: 10.255.0.0/16, ge: 32 }]
  policies:
    in: [{ match: { prefix_list: lo }, action: permit, set: { local_pref: 200, communities: ["65000:1"] } }]
"#;

    fn refused(yaml: &str) -> Vec<String> {
        match Config::from_yaml(yaml) {
            Ok(_) => panic!("accepted:\n{yaml}"),
            Err(e) => e.errors.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn fast_external_fallover_is_on_unless_turned_off() {
        let config = Config::from_yaml(LEAF).unwrap();
        assert!(config.bgp.as_ref().unwrap().fast_external_fallover);
        let off =
            LEAF.replace("  networks: [10.200.0.0/24]", "  networks: [10.200.0.0/24]\n  fast_external_fallover: false");
        let config = Config::from_yaml(&off).unwrap();
        assert!(!config.bgp.as_ref().unwrap().fast_external_fallover);
        let again = Config::from_yaml(&config.to_yaml()).unwrap();
        assert_eq!(again.bgp, config.bgp);
    }

    #[test]
    fn bfd_per_neighbour_with_shared_timers() {
        let on = LEAF
            .replace("{ interface: eth1, remote_as: external }", "{ interface: eth1, remote_as: external, bfd: true }")
            .replace(
                "  networks: [10.200.0.0/24]",
                "  networks: [10.200.0.0/24]\n  bfd: { transmit_interval_ms: 100, receive_interval_ms: 100 }",
            );
        let config = Config::from_yaml(&on).unwrap();
        let bgp = config.bgp.as_ref().unwrap();
        assert_eq!(bgp.neighbors.iter().map(|n| n.bfd).collect::<Vec<_>>(), [true, false, false]);
        assert_eq!(bgp.bfd.session_config().required_min_rx_us, 100_000);
        // Round trip through show running-config.
        let again = Config::from_yaml(&config.to_yaml()).unwrap();
        assert_eq!(again.bgp, config.bgp);
        let e = refused(&on.replace("receive_interval_ms: 100", "receive_interval_ms: 0"));
        assert!(e.iter().any(|e| e.starts_with("bgp.bfd.receive_interval_ms: must be 10 to 60000")), "{e:?}");
    }

    #[test]
    fn evpn_is_checked_against_the_vxlan_section() {
        let evpn = "\n  evpn: { vtep_ip: 10.255.0.1, vnis: [{ vni: 10010 }] }\n";
        let with_vxlan =
            |vxlan: &str| LEAF.replacen("bgp:\n", &format!("vxlan: {vxlan}\nbgp:\n"), 1).trim_end().to_owned() + evpn;
        let ok = with_vxlan("{ source: 10.255.0.1, vnis: [{ vni: 10010, vlan: 10 }] }");
        let config = Config::from_yaml(&ok).unwrap();
        assert_eq!(config.bgp.unwrap().evpn.unwrap().vnis[0].vni, 10010);
        let e = refused(&(LEAF.trim_end().to_owned() + evpn));
        assert!(e.iter().any(|e| e.starts_with("bgp.evpn: needs the vxlan section")), "{e:?}");
        let e = refused(&with_vxlan("{ source: 10.255.0.1, vnis: [{ vni: 10020, vlan: 10 }] }"));
        assert!(e.iter().any(|e| e.starts_with("bgp.evpn.vnis[0].vni: VNI 10010 is mapped to no VLAN")), "{e:?}");
        let e = refused(&with_vxlan("{ source: 10.255.0.1, vnis: [{ vni: 10010, vlan: 10, flood: [10.9.9.9] }] }"));
        assert!(e.iter().any(|e| e.starts_with("bgp.evpn.vnis[0].vni: VNI 10010 has a static flood list")), "{e:?}");
        let e = refused(&with_vxlan("{ source: 192.168.1.1, vnis: [{ vni: 10010, vlan: 10 }] }"));
        assert!(e.iter().any(|e| e.starts_with("bgp.evpn.vtep_ip: must be vxlan.source")), "{e:?}");
        let e = refused(&ok.replace("vni: 10010 }] }", "vni: 0 }] }"));
        assert!(e.iter().any(|e| e.starts_with("bgp.evpn.vnis[0].vni: must be 1 to")), "{e:?}");
    }

    #[test]
    fn leaf_section_maps_to_the_speaker_config() {
        let config = Config::from_yaml(LEAF).unwrap();
        let bgp = config.bgp.unwrap();
        assert_eq!(bgp.asn, 65101);
        // The first loopback is the router id.
        assert_eq!(bgp.router_id, Ipv4Addr::new(10, 255, 0, 1));
        assert_eq!(bgp.timers.hold_time, 9);
        let n = &bgp.neighbors;
        assert_eq!(n[0].address, "10.1.1.1".parse::<IpAddr>().unwrap());
        assert_eq!(n[0].local_address, Some("10.1.1.0".parse().unwrap()));
        assert_eq!(n[0].families, [Family::Ipv4Unicast]);
        assert!(n[0].remote_as_external && !n[1].remote_as_external);
        assert_eq!(n[1].address, "10.1.2.2".parse::<IpAddr>().unwrap());
        assert_eq!(n[1].families.len(), 2);
        assert_eq!(n[2].remote_as, 65101);
        assert_eq!(n[2].local_address, None);
        assert!(n[2].route_reflector_client);
        let nets: Vec<String> = bgp.networks.iter().map(ToString::to_string).collect();
        for want in ["10.200.0.0/24", "10.255.0.1/32", "fd00:ff::1/128", "10.1.1.0/31", "10.1.2.0/30", "192.168.1.0/24"]
        {
            assert!(nets.iter().any(|n| n == want), "{want} not in {nets:?}");
        }
        assert!(bgp.validate().is_ok());
        assert!(bgp.policies["in"].0[0].set.local_pref == Some(200));
    }

    #[test]
    fn running_config_round_trips() {
        let config = Config::from_yaml(LEAF).unwrap();
        let yaml = config.to_yaml();
        assert!(yaml.contains("remote_as: external"), "{yaml}");
        let again = Config::from_yaml(&yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        assert_eq!(again.bgp, config.bgp);
    }

    #[test]
    fn session_protection_mapped_and_password_hidden_in_running_config() {
        let text = LEAF.replace("interface: eth1,", "interface: eth1, password: Leaf-Key-9, ttl_security_hops: 1,");
        let config = Config::from_yaml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let n = &config.bgp.as_ref().unwrap().neighbors[0];
        assert_eq!(n.password.as_ref().map(|p| p.as_bytes().to_vec()), Some(b"Leaf-Key-9".to_vec()));
        assert_eq!(n.ttl_security_hops, Some(1));
        let yaml = config.to_yaml();
        assert!(!yaml.contains("Leaf-Key-9"), "{yaml}");
        assert!(yaml.contains("password: <hidden>"), "{yaml}");
        assert!(!format!("{config:?}").contains("Leaf-Key-9"));
        let e = refused(&LEAF.replace("interface: eth1,", "interface: eth1, ttl_security_hops: 0,"));
        assert!(e.iter().any(|e| e.starts_with("bgp.neighbors[0].ttl_security_hops")), "{e:?}");
        let e = refused(&LEAF.replace("interface: eth1,", &format!("interface: eth1, password: {},", "k".repeat(81))));
        assert!(e.iter().any(|e| e.starts_with("bgp.neighbors[0].password") && !e.contains("kkk")), "{e:?}");
    }

    #[test]
    fn errors_name_the_field() {
        // A routed port without a point-to-point subnet: BGP unnumbered,
        // the peer found on its host interface, IPv4 and IPv6 on one session.
        let config = Config::from_yaml(&LEAF.replace("interface: eth1,", "interface: eth3,")).unwrap();
        let n = &config.bgp.unwrap().neighbors[0];
        assert_eq!((n.interface.as_deref(), n.is_unnumbered()), (Some("sw-eth3"), true));
        assert_eq!(n.families, [Family::Ipv4Unicast, Family::Ipv6Unicast]);
        let e = refused(&LEAF.replace("interface: eth1,", "interface: eth4,"));
        assert!(e.iter().any(|e| e.starts_with("bgp.neighbors[0].interface: eth4 has no addresses")), "{e:?}");
        let e = refused(&LEAF.replace("interface: eth1,", "interface: eth9,"));
        assert!(e.iter().any(|e| e.starts_with("bgp.neighbors[0].interface: unknown interface eth9")), "{e:?}");
        let e = refused(&LEAF.replace("import_policy: in", "import_policy: nope"));
        assert!(e.iter().any(|e| e.starts_with("bgp.neighbors[1].import_policy: policy \"nope\"")), "{e:?}");
        let e = refused(&LEAF.replace("prefix_list: lo", "prefix_list: missing"));
        assert!(e.iter().any(|e| e.starts_with("bgp.policies.in: prefix list \"missing\"")), "{e:?}");
        let e = refused(&LEAF.replace("hold_time: 9", "hold_time: 2"));
        assert!(e.iter().any(|e| e.starts_with("bgp.timers.hold_time")), "{e:?}");
        let e = refused(&LEAF.replace("10.200.0.0/24", "10.200.0.1/24"));
        assert!(e.iter().any(|e| e.starts_with("bgp.networks[0]: 10.200.0.1/24 has host bits")), "{e:?}");
        // An external peer off every connected subnet, our own address, a duplicate.
        let e = refused(
            &LEAF.replace("{ interface: eth1, remote_as: external }", "{ address: 10.9.9.9, remote_as: 65000 }"),
        );
        assert!(e.iter().any(|e| e.starts_with("bgp.neighbors[0].address: external neighbour 10.9.9.9")), "{e:?}");
        let e = refused(
            &LEAF.replace("{ interface: eth1, remote_as: external }", "{ address: 10.1.1.0, remote_as: 65000 }"),
        );
        assert!(e.iter().any(|e| e.contains("is an address of this switch")), "{e:?}");
        let e = refused(
            &LEAF.replace("{ interface: eth1, remote_as: external }", "{ address: 10.1.2.2, remote_as: 65000 }"),
        );
        assert!(
            e.iter().any(|e| e.starts_with("bgp.neighbors[1].address: 10.1.2.2 is also bgp.neighbors[0]")),
            "{e:?}"
        );
        let e = refused(&LEAF.replace("remote_as: internal", "remote_as: external"));
        assert!(e.iter().any(|e| e.starts_with("bgp.neighbors[2].route_reflector_client")), "{e:?}");
        let e = refused(&LEAF.replace("remote_as: internal", "remote_as: outside"));
        assert!(e.iter().any(|e| e.starts_with("bgp.neighbors[2].remote_as")), "{e:?}");
        let e = refused(&LEAF.replace("remote_as: internal,", "remote_as: 65000,"));
        assert!(e.iter().any(|e| e.starts_with("bgp.neighbors[2].route_reflector_client")), "{e:?}");
        let e = refused(&LEAF.replace("ge: 32", "ge: 33"));
        assert!(e.iter().any(|e| e.starts_with("bgp.prefix_lists.lo[0].ge")), "{e:?}");
        let e = refused(&LEAF.replace("asn: 65101", "asn: 65101\n  colour: blue"));
        assert!(e.iter().any(|e| e.contains("colour")), "{e:?}");
        // No router id to be found.
        let e = refused(
            &LEAF
                .replace("loopback: [10.255.0.1/32, \"fd00:ff::1/128\"]", "")
                .replace("addresses: [10.1.1.0/31]", "addresses: [\"2001:db8:1::/127\"]")
                .replace("10.1.2.1/30, ", "")
                .replace("192.168.1.1/24", "\"2001:db8:3::1/64\"")
                .replace("10.255.0.9", "2001:db8:3::9"),
        );
        assert!(e.iter().any(|e| e.starts_with("bgp.router_id")), "{e:?}");
    }

    #[test]
    fn point_to_point_peers() {
        let peer = |s: &str| point_to_point_peer(&s.parse().unwrap()).map(|p| p.to_string());
        assert_eq!(peer("10.0.0.0/31").as_deref(), Some("10.0.0.1"));
        assert_eq!(peer("10.0.0.1/31").as_deref(), Some("10.0.0.0"));
        assert_eq!(peer("10.0.0.1/30").as_deref(), Some("10.0.0.2"));
        assert_eq!(peer("10.0.0.2/30").as_deref(), Some("10.0.0.1"));
        assert_eq!(peer("2001:db8::1/127").as_deref(), Some("2001:db8::"));
        assert_eq!(peer("10.0.0.1/24"), None);
    }
}
