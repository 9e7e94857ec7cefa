//! The speaker's configuration: the `bgp:` section of switchd's YAML.
//!
//! ```yaml
//! asn: 65001
//! router_id: 10.0.0.1
//! networks: [10.0.0.1/32, "2001:db8::1/128"]
//! multipath: { max_paths: 8, as_path_relax: true }
//! neighbors:
//!   - { address: 10.1.0.0, remote_as: 65000, families: [ipv4-unicast, ipv6-unicast] }
//! prefix_lists: { ... }     # see policy.rs
//! policies: { ... }
//! ```

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use crate::decision::MultipathConfig;
use crate::neighbor::SessionConfig;
use crate::packet::{Family, Nlri};
use crate::policy::{Policy, PolicySet, PrefixList};
use crate::session_security::Password;

pub const BGP_PORT: u16 = 179;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BgpConfig {
    pub asn: u32,
    pub router_id: Ipv4Addr,
    /// TCP port to listen on; 0 disables listening.
    #[serde(default = "default_port")]
    pub listen_port: u16,
    #[serde(default = "default_listen")]
    pub listen_address: IpAddr,
    #[serde(default)]
    pub multipath: MultipathConfig,
    /// RFC 4456 cluster id when reflecting; defaults to the router id.
    #[serde(default)]
    pub cluster_id: Option<Ipv4Addr>,
    /// Prefixes originated by this speaker (loopbacks, connected subnets).
    #[serde(default, with = "nlri_list")]
    pub networks: Vec<Nlri>,
    /// IPv6 next hop announced for IPv6 routes over IPv4 sessions; the
    /// IPv4-mapped address of the session's local address otherwise.
    #[serde(default)]
    pub ipv6_next_hop: Option<Ipv6Addr>,
    #[serde(default)]
    pub timers: Timers,
    /// The timers of the BFD sessions of neighbours with `bfd: true`.
    #[serde(default)]
    pub bfd: BfdTimers,
    /// Drop a directly connected eBGP session at once when its port loses
    /// its link (FRR's `bgp fast-external-failover`, on by default there too).
    #[serde(default = "enabled")]
    pub fast_external_fallover: bool,
    #[serde(default)]
    pub neighbors: Vec<NeighborConfig>,
    #[serde(default)]
    pub prefix_lists: HashMap<String, PrefixList>,
    #[serde(default)]
    pub policies: HashMap<String, Policy>,
    /// EVPN MAC-VRFs and IP-VRFs; neighbours need `l2vpn-evpn` in their families.
    #[serde(default)]
    pub evpn: Option<crate::evpn::EvpnConfig>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timers {
    #[serde(default = "default_hold")]
    pub hold_time: u16,
    #[serde(default = "default_connect_retry")]
    pub connect_retry: u16,
    #[serde(default = "default_idle_hold")]
    pub idle_hold: u16,
}

impl Default for Timers {
    fn default() -> Self {
        Timers { hold_time: default_hold(), connect_retry: default_connect_retry(), idle_hold: default_idle_hold() }
    }
}

/// BFD (RFC 5880) timers, FRR's names and defaults: 300 ms each way,
/// multiplier 3 (a link cut is detected within 900 ms; 3 x 100 ms is the
/// usual fabric setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BfdTimers {
    /// bfd.DesiredMinTxInterval, milliseconds.
    #[serde(default = "default_bfd_interval")]
    pub transmit_interval_ms: u32,
    /// bfd.RequiredMinRxInterval, milliseconds.
    #[serde(default = "default_bfd_interval")]
    pub receive_interval_ms: u32,
    /// bfd.DetectMult.
    #[serde(default = "default_bfd_multiplier")]
    pub detect_multiplier: u8,
}

impl Default for BfdTimers {
    fn default() -> Self {
        BfdTimers {
            transmit_interval_ms: default_bfd_interval(),
            receive_interval_ms: default_bfd_interval(),
            detect_multiplier: default_bfd_multiplier(),
        }
    }
}

impl BfdTimers {
    pub fn session_config(&self) -> crate::bfd::SessionConfig {
        crate::bfd::SessionConfig {
            desired_min_tx_us: self.transmit_interval_ms.saturating_mul(1000),
            required_min_rx_us: self.receive_interval_ms.saturating_mul(1000),
            detect_mult: self.detect_multiplier,
        }
    }

    /// FRR accepts 10 ms to 60 s; the multiplier is 1-255 on the wire (0
    /// is invalid, RFC 5880 6.8.6).
    pub fn validate(&self, field: &str) -> Result<(), String> {
        for (name, value) in
            [("transmit_interval_ms", self.transmit_interval_ms), ("receive_interval_ms", self.receive_interval_ms)]
        {
            if !(10..=60_000).contains(&value) {
                return Err(format!("{field}.{name}: must be 10 to 60000"));
            }
        }
        if self.detect_multiplier == 0 {
            return Err(format!("{field}.detect_multiplier: must be 1 to 255"));
        }
        Ok(())
    }
}

fn default_bfd_interval() -> u32 {
    300
}
fn default_bfd_multiplier() -> u8 {
    3
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaxPrefix {
    pub limit: usize,
    /// Only log when exceeded, instead of closing with Cease/1 (RFC 4486).
    #[serde(default)]
    pub warning_only: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighborConfig {
    /// The peer's address; for a neighbour by `interface` alone (BGP
    /// unnumbered), `::` until its link-local address is learned.
    #[serde(default = "unspecified")]
    pub address: IpAddr,
    /// BGP unnumbered: the peer is whoever sends router advertisements on
    /// this interface; the session runs between the two link-local
    /// addresses and carries IPv4 with IPv6 next hops (RFC 8950).
    #[serde(default)]
    pub interface: Option<String>,
    pub remote_as: u32,
    /// Accept any AS but ours ("remote-as external"); `remote_as` is then
    /// ignored and the peer's AS is learned from its OPEN.
    #[serde(default)]
    pub remote_as_external: bool,
    #[serde(default)]
    pub description: Option<String>,
    /// Remote TCP port (tests run peers on other ports).
    #[serde(default = "default_port")]
    pub port: u16,
    #[serde(default)]
    pub passive: bool,
    /// Source address of our connections ("update-source").
    #[serde(default)]
    pub local_address: Option<IpAddr>,
    #[serde(default)]
    pub hold_time: Option<u16>,
    #[serde(default)]
    pub connect_retry: Option<u16>,
    #[serde(default = "default_families")]
    pub families: Vec<Family>,
    #[serde(default)]
    pub route_reflector_client: bool,
    #[serde(default)]
    pub next_hop_self: bool,
    #[serde(default)]
    pub import_policy: Option<String>,
    #[serde(default)]
    pub export_policy: Option<String>,
    #[serde(default)]
    pub max_prefix: Option<MaxPrefix>,
    #[serde(default)]
    pub weight: u32,
    /// Accept routes whose AS_PATH holds our AS up to this many times
    /// ("allowas-in", for leaves that share one ASN).
    #[serde(default)]
    pub allow_own_as: u8,
    #[serde(default)]
    pub extended_message: bool,
    /// Offer and accept IPv4 unicast routes with IPv6 next hops (RFC 8950,
    /// FRR's "capability extended-nexthop"): IPv4 over an IPv6 session.
    #[serde(default)]
    pub extended_next_hop: bool,
    #[serde(default)]
    pub shutdown: bool,
    /// TCP MD5 signature key (RFC 2385), set in the kernel for this
    /// neighbour's address on the listener and on our connections.
    #[serde(default)]
    pub password: Option<Password>,
    /// GTSM (RFC 5082, "ttl-security hops N"): send with TTL 255 and accept
    /// only segments that travelled at most this many hops (1 = directly
    /// connected).
    #[serde(default)]
    pub ttl_security_hops: Option<u8>,
    /// Run a single-hop BFD session (RFC 5881) with the neighbour and drop
    /// the BGP session when it goes down (RFC 5882 section 10.2).
    #[serde(default)]
    pub bfd: bool,
}

impl NeighborConfig {
    /// A neighbour found by its router advertisements on `interface`.
    pub fn is_unnumbered(&self) -> bool {
        self.interface.is_some() && (self.address.is_unspecified() || is_link_local(self.address))
    }

    pub fn new(address: IpAddr, remote_as: u32) -> NeighborConfig {
        NeighborConfig {
            address,
            interface: None,
            remote_as,
            remote_as_external: false,
            description: None,
            port: BGP_PORT,
            passive: false,
            local_address: None,
            hold_time: None,
            connect_retry: None,
            families: default_families(),
            route_reflector_client: false,
            next_hop_self: false,
            import_policy: None,
            export_policy: None,
            max_prefix: None,
            weight: 0,
            allow_own_as: 0,
            extended_message: false,
            extended_next_hop: false,
            shutdown: false,
            password: None,
            ttl_security_hops: None,
            bfd: false,
        }
    }
}

fn default_port() -> u16 {
    BGP_PORT
}
fn enabled() -> bool {
    true
}
fn unspecified() -> IpAddr {
    IpAddr::V6(Ipv6Addr::UNSPECIFIED)
}
fn default_listen() -> IpAddr {
    IpAddr::V6(Ipv6Addr::UNSPECIFIED)
}
fn default_hold() -> u16 {
    90
}
fn default_connect_retry() -> u16 {
    10
}
fn default_idle_hold() -> u16 {
    1
}
fn default_families() -> Vec<Family> {
    vec![Family::Ipv4Unicast, Family::Ipv6Unicast]
}

impl BgpConfig {
    pub fn new(asn: u32, router_id: Ipv4Addr) -> BgpConfig {
        BgpConfig {
            asn,
            router_id,
            listen_port: BGP_PORT,
            listen_address: default_listen(),
            multipath: MultipathConfig::default(),
            cluster_id: None,
            networks: Vec::new(),
            ipv6_next_hop: None,
            timers: Timers::default(),
            bfd: BfdTimers::default(),
            fast_external_fallover: true,
            neighbors: Vec::new(),
            prefix_lists: HashMap::new(),
            policies: HashMap::new(),
            evpn: None,
        }
    }

    pub fn from_yaml(text: &str) -> Result<BgpConfig, String> {
        let cfg: BgpConfig = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks the whole configuration; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.asn == 0 {
            return Err("bgp.asn: must not be 0".into());
        }
        if self.router_id.is_unspecified() {
            return Err("bgp.router_id: must not be 0.0.0.0 (RFC 6286)".into());
        }
        if self.multipath.max_paths == 0 {
            return Err("bgp.multipath.max_paths: must be at least 1".into());
        }
        let hold_ok = |h: u16| h == 0 || h >= 3;
        if !hold_ok(self.timers.hold_time) {
            return Err("bgp.timers.hold_time: must be 0 or at least 3 (RFC 4271 §4.2)".into());
        }
        self.bfd.validate("bgp.bfd")?;
        self.policy_set().check().map_err(|e| format!("bgp.{e}"))?;
        if let Some(evpn) = &self.evpn {
            evpn.validate(self.router_id)?;
        }
        let mut seen = HashSet::new();
        for (i, n) in self.neighbors.iter().enumerate() {
            let field = |f: &str| format!("bgp.neighbors[{i}].{f}");
            match (&n.interface, n.address.is_unspecified()) {
                (None, true) => return Err(format!("{}: give the peer's address or its interface", field("address"))),
                (Some(iface), _) if iface.is_empty() || iface.len() > 15 => {
                    return Err(format!("{}: {iface:?} is not an interface name", field("interface")));
                }
                (Some(iface), true) => {
                    if !seen.insert(format!("interface {iface}")) {
                        return Err(format!("{}: {iface} is configured twice", field("interface")));
                    }
                }
                _ => {
                    if !seen.insert(n.address.to_string()) {
                        return Err(format!("{}: {} is configured twice", field("address"), n.address));
                    }
                }
            }
            if n.remote_as == 0 && !n.remote_as_external {
                return Err(format!("{}: must not be 0", field("remote_as")));
            }
            if n.families.is_empty() {
                return Err(format!("{}: at least one address family", field("families")));
            }
            if let Some(p) = &n.password {
                p.check().map_err(|e| format!("{}: {e}", field("password")))?;
            }
            if n.ttl_security_hops.is_some_and(|h| !(1..=254).contains(&h)) {
                return Err(format!("{}: must be 1 to 254 (RFC 5082)", field("ttl_security_hops")));
            }
            if n.hold_time.is_some_and(|h| !hold_ok(h)) {
                return Err(format!("{}: must be 0 or at least 3", field("hold_time")));
            }
            for (name, p) in [("import_policy", &n.import_policy), ("export_policy", &n.export_policy)] {
                if let Some(p) = p
                    && !self.policies.contains_key(p)
                {
                    return Err(format!("{}: policy {p:?} is not defined", field(name)));
                }
            }
        }
        Ok(())
    }

    pub fn policy_set(&self) -> PolicySet {
        PolicySet { prefix_lists: self.prefix_lists.clone(), policies: self.policies.clone() }
    }

    pub fn session_config(&self, n: &NeighborConfig) -> SessionConfig {
        SessionConfig {
            remote_addr: n.address,
            remote_as: (!n.remote_as_external).then_some(n.remote_as),
            external_only: n.remote_as_external,
            local_as: self.asn,
            router_id: self.router_id,
            hold_time: n.hold_time.unwrap_or(self.timers.hold_time),
            connect_retry_time: n.connect_retry.unwrap_or(self.timers.connect_retry),
            idle_hold_time: self.timers.idle_hold,
            passive: n.passive,
            families: n.families.clone(),
            extended_message: n.extended_message,
            // BGP unnumbered carries IPv4 over the link-local session.
            extended_next_hop: n.extended_next_hop || n.is_unnumbered(),
        }
    }
}

/// fe80::/10.
pub fn is_link_local(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80)
}

pub(crate) mod nlri_list {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::packet::Nlri;

    pub fn serialize<S: Serializer>(v: &[Nlri], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|n| n.to_string()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Nlri>, D::Error> {
        Vec::<String>::deserialize(d)?.iter().map(|s| s.parse().map_err(serde::de::Error::custom)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = r#"
asn: 65001
router_id: 10.0.0.1
networks: [10.0.0.1/32, "2001:db8::1/128"]
multipath: { max_paths: 4, as_path_relax: true }
timers: { hold_time: 9 }
neighbors:
  - address: 10.1.0.0
    remote_as: 65000
    import_policy: in
    max_prefix: { limit: 1000 }
  - { address: "2001:db8:1::", remote_as: 65001, route_reflector_client: true, families: [ipv6-unicast] }
prefix_lists:
  lo: [{ action: permit, prefix: 10.0.0.0/24, ge: 32 }]
policies:
  in: [{ match: { prefix_list: lo }, action: permit }]
"#;

    #[test]
    fn parses_and_validates() {
        let cfg = BgpConfig::from_yaml(YAML).unwrap();
        assert_eq!(cfg.networks.len(), 2);
        assert_eq!(cfg.neighbors[1].families, vec![Family::Ipv6Unicast]);
        assert_eq!(cfg.session_config(&cfg.neighbors[0]).hold_time, 9);
        assert_eq!(cfg.neighbors[0].max_prefix, Some(MaxPrefix { limit: 1000, warning_only: false }));
    }

    #[test]
    fn errors_name_the_field() {
        let bad = YAML.replace("import_policy: in", "import_policy: nope");
        assert_eq!(
            BgpConfig::from_yaml(&bad).unwrap_err(),
            "bgp.neighbors[0].import_policy: policy \"nope\" is not defined"
        );
        let bad = YAML.replace("hold_time: 9", "hold_time: 2");
        assert!(BgpConfig::from_yaml(&bad).unwrap_err().starts_with("bgp.timers.hold_time"));
        let bad = YAML.replace("2001:db8:1::", "10.1.0.0");
        assert!(BgpConfig::from_yaml(&bad).unwrap_err().contains("configured twice"));
        let bad = YAML.replace("remote_as: 65000", "remote_az: 65000");
        assert!(BgpConfig::from_yaml(&bad).unwrap_err().contains("remote_az"));
    }

    #[test]
    fn unnumbered_neighbours_are_found_by_interface() {
        let yaml = "asn: 65001\nrouter_id: 10.0.0.1\nneighbors:\n  - { interface: eth1, remote_as: 65000 }\n";
        let cfg = BgpConfig::from_yaml(yaml).unwrap();
        let n = &cfg.neighbors[0];
        assert!(n.is_unnumbered() && n.address.is_unspecified());
        assert!(cfg.session_config(n).extended_next_hop, "IPv4 rides the link-local session (RFC 8950)");
        let twice = format!("{yaml}  - {{ interface: eth1, remote_as: 65000 }}\n");
        assert_eq!(BgpConfig::from_yaml(&twice).unwrap_err(), "bgp.neighbors[1].interface: eth1 is configured twice");
        let neither = "asn: 65001\nrouter_id: 10.0.0.1\nneighbors:\n  - { remote_as: 65000 }\n";
        assert!(BgpConfig::from_yaml(neither).unwrap_err().starts_with("bgp.neighbors[0].address: give"));
        let numbered = BgpConfig::from_yaml(YAML).unwrap();
        assert!(!numbered.neighbors[0].is_unnumbered());
    }

    #[test]
    fn bfd_parsed_and_checked() {
        let cfg = BgpConfig::from_yaml(YAML).unwrap();
        assert!(!cfg.neighbors[0].bfd);
        assert_eq!(cfg.bfd.session_config().desired_min_tx_us, 300_000, "FRR's default");
        let on = YAML.replace("max_prefix: { limit: 1000 }", "max_prefix: { limit: 1000 }\n    bfd: true")
            + "bfd: { transmit_interval_ms: 100, receive_interval_ms: 100 }\n";
        let cfg = BgpConfig::from_yaml(&on).unwrap();
        assert!(cfg.neighbors[0].bfd);
        let session = cfg.bfd.session_config();
        assert_eq!((session.desired_min_tx_us, session.required_min_rx_us, session.detect_mult), (100_000, 100_000, 3));
        let bad = on.replace("receive_interval_ms: 100", "receive_interval_ms: 5");
        assert_eq!(BgpConfig::from_yaml(&bad).unwrap_err(), "bgp.bfd.receive_interval_ms: must be 10 to 60000");
        let bad = on.replace("receive_interval_ms: 100", "detect_multiplier: 0");
        assert!(BgpConfig::from_yaml(&bad).unwrap_err().starts_with("bgp.bfd.detect_multiplier"));
    }

    #[test]
    fn session_protection_parsed_and_checked() {
        let ok =
            YAML.replace("import_policy: in", "import_policy: in\n    password: fabric-key\n    ttl_security_hops: 1");
        let cfg = BgpConfig::from_yaml(&ok).unwrap();
        assert_eq!(cfg.neighbors[0].password.as_ref().unwrap().as_bytes(), b"fabric-key");
        assert_eq!(cfg.neighbors[0].ttl_security_hops, Some(1));
        assert!(!format!("{cfg:?}").contains("fabric-key"), "the password must not show in Debug");
        let long = ok.replace("fabric-key", &"k".repeat(81));
        let err = BgpConfig::from_yaml(&long).unwrap_err();
        assert!(err.starts_with("bgp.neighbors[0].password:"), "{err}");
        assert!(!err.contains("kkkk"), "the error must not echo the password: {err}");
        let bad = ok.replace("ttl_security_hops: 1", "ttl_security_hops: 0");
        assert!(BgpConfig::from_yaml(&bad).unwrap_err().starts_with("bgp.neighbors[0].ttl_security_hops"));
    }
}
