//! GoBGP (`gobgpd`) as a reference BGP peer inside a namespace, driven with
//! the `gobgp` CLI over its gRPC port.
//!
//! Each instance has its own directory (TOML config, log) and its own gRPC
//! port on the namespace's loopback; the CLI runs inside the namespace.
//! Dropping the [`Gobgp`] kills gobgpd and removes the directory; when a test
//! is panicking the log is printed first.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::frr::{Afi, proc_status_kib, tail};
use crate::netns::{Netns, ProcessGuard};
use crate::switchd::TempDir;
use crate::wait::poll_until;

pub const GOBGPD: &str = "gobgpd";
pub const GOBGP: &str = "gobgp";

/// Whether gobgpd and gobgp are installed (and we are root); fails under
/// `CI=true`, otherwise prints a skip message.
pub fn gobgp_available(test: &str) -> bool {
    crate::require_root_and_tools(test, &["ip", GOBGPD, GOBGP])
}

static NEXT_API_PORT: AtomicU16 = AtomicU16::new(0);

/// One neighbour in a [`GobgpConfig`].
#[derive(Debug, Clone)]
pub struct GobgpNeighbor {
    pub address: String,
    pub remote_as: u32,
    pub passive: bool,
    /// (keepalive, hold) in seconds.
    pub timers: (u16, u16),
    pub families: Vec<Afi>,
    /// Also the L2VPN EVPN family.
    pub evpn: bool,
}

impl GobgpNeighbor {
    pub fn new(address: &str, remote_as: u32) -> GobgpNeighbor {
        GobgpNeighbor {
            address: address.to_string(),
            remote_as,
            passive: false,
            timers: (1, 3),
            families: vec![Afi::Ipv4, Afi::Ipv6],
            evpn: false,
        }
    }
}

/// gobgpd's TOML configuration.
#[derive(Debug, Clone)]
pub struct GobgpConfig {
    pub asn: u32,
    pub router_id: String,
    /// BGP listen port; -1 does not listen.
    pub listen_port: i32,
    pub neighbors: Vec<GobgpNeighbor>,
    /// gobgpd's `--log-level` (debug logs every path: too much for
    /// benchmarks).
    pub log_level: &'static str,
    /// A global export policy setting each neighbour's next hop to the
    /// session's local address: GoBGP keeps the next hop of injected (MRT)
    /// routes even towards external peers, which cannot reach it.
    pub next_hop_self: bool,
}

impl GobgpConfig {
    pub fn new(asn: u32, router_id: &str) -> GobgpConfig {
        GobgpConfig {
            asn,
            router_id: router_id.to_string(),
            listen_port: 179,
            neighbors: Vec::new(),
            log_level: "debug",
            next_hop_self: false,
        }
    }

    pub fn neighbor(mut self, n: GobgpNeighbor) -> GobgpConfig {
        self.neighbors.push(n);
        self
    }

    pub fn render(&self) -> String {
        let mut c = format!(
            "[global.config]\n  as = {}\n  router-id = \"{}\"\n  port = {}\n",
            self.asn, self.router_id, self.listen_port
        );
        if self.next_hop_self {
            c.push_str(concat!(
                "  [global.apply-policy.config]\n",
                "    export-policy-list = [\"next-hop-self\"]\n",
                "    default-export-policy = \"accept-route\"\n",
                "\n[[policy-definitions]]\n",
                "  name = \"next-hop-self\"\n",
                "  [[policy-definitions.statements]]\n",
                "    name = \"all\"\n",
                "    [policy-definitions.statements.actions]\n",
                "      route-disposition = \"accept-route\"\n",
                "      [policy-definitions.statements.actions.bgp-actions]\n",
                "        set-next-hop = \"self\"\n",
            ));
        }
        for n in &self.neighbors {
            c.push_str(&format!(
                "\n[[neighbors]]\n  [neighbors.config]\n    neighbor-address = \"{}\"\n    peer-as = {}\n",
                n.address, n.remote_as
            ));
            c.push_str(&format!(
                "  [neighbors.timers.config]\n    connect-retry = 1\n    keepalive-interval = {}\n    hold-time = {}\n    idle-hold-time-after-reset = 1\n",
                n.timers.0, n.timers.1
            ));
            if n.passive {
                c.push_str("  [neighbors.transport.config]\n    passive-mode = true\n");
            }
            for afi in &n.families {
                c.push_str(&format!(
                    "  [[neighbors.afi-safis]]\n    [neighbors.afi-safis.config]\n      afi-safi-name = \"{}-unicast\"\n",
                    afi.name()
                ));
            }
            if n.evpn {
                c.push_str("  [[neighbors.afi-safis]]\n    [neighbors.afi-safis.config]\n      afi-safi-name = \"l2vpn-evpn\"\n");
            }
        }
        c
    }
}

/// A running gobgpd.
pub struct Gobgp {
    process: ProcessGuard,
    dir: TempDir,
    ns_name: String,
    api_port: u16,
}

impl Gobgp {
    /// Starts gobgpd in `ns` with `config` and waits until its gRPC API
    /// answers.
    pub fn start(ns: &Netns, config: &GobgpConfig) -> Gobgp {
        let dir = TempDir::new("gobgp");
        let conf = dir.path().join("gobgpd.toml");
        std::fs::write(&conf, config.render()).expect("write gobgpd.toml");
        let log = std::fs::File::create(dir.path().join("gobgpd.log")).expect("create log");
        let api_port = 50051 + NEXT_API_PORT.fetch_add(1, Ordering::Relaxed) % 1000;
        let mut cmd = ns.command(GOBGPD);
        cmd.arg("-f")
            .arg(&conf)
            .arg(format!("--api-hosts=127.0.0.1:{api_port}"))
            .args(["--pprof-disable", "--log-plain"])
            .arg(format!("--log-level={}", config.log_level))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup log"))
            .stderr(log);
        let process = ProcessGuard::spawn("gobgpd", cmd);
        let gobgp = Gobgp { process, dir, ns_name: ns.name().to_string(), api_port };
        gobgp.wait_ready(Duration::from_secs(15));
        gobgp
    }

    fn wait_ready(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            if self.cli_status(&["global"]).0 {
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "gobgpd in {} did not answer on port {} within {timeout:?}; log:\n{}",
                    self.ns_name,
                    self.api_port,
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    pub fn api_port(&self) -> u16 {
        self.api_port
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("gobgpd.log")).unwrap_or_default()
    }

    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// The `gobgp` CLI command for this daemon (runs inside the namespace),
    /// for callers that need to spawn it themselves.
    pub fn cli_command(&self) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns_name, GOBGP]).args(["-u", "127.0.0.1", "-p", &self.api_port.to_string()]);
        cmd
    }

    /// Runs the CLI with `args`; returns (success, stdout + stderr).
    pub fn cli_status(&self, args: &[&str]) -> (bool, String) {
        let out = self.cli_command().args(args).stdin(Stdio::null()).output().expect("run gobgp");
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        (out.status.success(), text)
    }

    #[track_caller]
    pub fn cli(&self, args: &[&str]) -> String {
        let (ok, text) = self.cli_status(args);
        assert!(ok, "gobgp {} failed: {text}", args.join(" "));
        text
    }

    /// The CLI with `-j`, parsed.
    #[track_caller]
    pub fn json(&self, args: &[&str]) -> Value {
        let mut full = args.to_vec();
        full.push("-j");
        let text = self.cli(&full);
        if text.trim().is_empty() {
            return Value::Null;
        }
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("gobgp {args:?} did not print JSON ({e}): {text}"))
    }

    /// Originates `prefix` from the global RIB with extra CLI attributes
    /// (`nexthop 10.0.0.1`, `med 10`, `local-pref 200`, `community 1:2`,
    /// `aspath 65000,65001`...).
    #[track_caller]
    pub fn add_route(&self, prefix: &str, attrs: &[&str]) {
        let afi = afi_of(prefix);
        let mut args = vec!["global", "rib", "add", prefix];
        args.extend_from_slice(attrs);
        args.extend_from_slice(&["-a", afi.name()]);
        self.cli(&args);
    }

    #[track_caller]
    pub fn del_route(&self, prefix: &str) {
        let afi = afi_of(prefix);
        self.cli(&["global", "rib", "del", prefix, "-a", afi.name()]);
    }

    /// `gobgp global rib -a <afi> -j`: prefix -> array of paths, each with
    /// `attrs` (type 1 origin, 2 as_paths, 3 nexthop, 4 metric, 5
    /// local_pref, 8 communities, 14 MP_REACH with nexthop) and `neighbor-ip`.
    #[track_caller]
    pub fn rib(&self, afi: Afi) -> serde_json::Map<String, Value> {
        match self.json(&["global", "rib", "-a", afi.name()]) {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        }
    }

    /// The paths GoBGP holds for `prefix`, if any.
    #[track_caller]
    pub fn route(&self, prefix: &str) -> Option<Value> {
        self.rib(afi_of(prefix)).get(prefix).cloned()
    }

    /// Waits until `prefix` is in the global RIB and `check` accepts its
    /// paths; returns them.
    #[track_caller]
    pub fn wait_route(&self, prefix: &str, timeout: Duration, check: impl Fn(&Value) -> bool) -> Value {
        let mut last = None;
        poll_until(timeout, Duration::from_millis(200), || {
            last = self.route(prefix);
            last.clone().filter(|route| check(route))
        })
        .unwrap_or_else(|| {
            panic!("GoBGP in {}: {prefix} not as expected within {timeout:?}; last seen: {last:#?}", self.ns_name)
        })
    }

    #[track_caller]
    pub fn wait_no_route(&self, prefix: &str, timeout: Duration) {
        if poll_until(timeout, Duration::from_millis(200), || self.route(prefix).is_none().then_some(())).is_none() {
            panic!("GoBGP in {}: {prefix} still present after {timeout:?}", self.ns_name);
        }
    }

    /// `gobgp neighbor <addr> -j`.
    #[track_caller]
    pub fn neighbor(&self, peer: &str) -> Value {
        self.json(&["neighbor", peer])
    }

    /// The session state of `peer` as gobgp's enum name lower-cased
    /// (`established`, `active`, ...).
    pub fn neighbor_state(&self, peer: &str) -> Option<String> {
        let (ok, text) = self.cli_status(&["neighbor", peer, "-j"]);
        if !ok {
            return None;
        }
        let v: Value = serde_json::from_str(&text).ok()?;
        match &v["state"]["session_state"] {
            // apipb.PeerState.SessionState
            Value::Number(n) => Some(
                match n.as_u64()? {
                    1 => "idle",
                    2 => "connect",
                    3 => "active",
                    4 => "opensent",
                    5 => "openconfirm",
                    6 => "established",
                    _ => "unknown",
                }
                .to_string(),
            ),
            Value::String(s) => Some(s.to_lowercase()),
            _ => None,
        }
    }

    #[track_caller]
    pub fn wait_established(&self, peer: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let state = self.neighbor_state(peer);
            if state.as_deref() == Some("established") {
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "GoBGP in {}: {peer} not established within {timeout:?} (state {state:?})\nlog tail:\n{}",
                    self.ns_name,
                    tail(&self.log(), 40)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The number of destinations in the global RIB for `afi` (`gobgp global
    /// rib summary`), cheap for large tables.
    pub fn rib_count(&self, afi: Afi) -> u64 {
        let (_, text) = self.cli_status(&["global", "rib", "summary", "-a", afi.name()]);
        // "Table ipv4-unicast\nDestination: 3, Path: 3"
        text.split("Destination:")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Injects the routes of an MRT TABLE_DUMP_V2 file into the global RIB
    /// (`gobgp mrt inject global FILE`), optionally overwriting next hops.
    ///
    /// gobgp 3.10's CLI exits before its gRPC stream has delivered the last
    /// few hundred to thousand paths (measured: 652 of 100,000, 681 of
    /// 1,000,000 lost, always the file's tail), so a file meant for this
    /// should end with padding (repeats of earlier routes) and the caller
    /// should check the count.
    #[track_caller]
    pub fn mrt_inject(&self, file: &std::path::Path, nexthop: Option<&str>) {
        let path = file.to_str().expect("utf-8 path");
        let mut args = vec!["mrt", "inject", "global", path];
        if let Some(nh) = nexthop {
            args.extend_from_slice(&["--nexthop", nh]);
        }
        self.cli(&args);
    }

    pub fn vm_hwm_kib(&self) -> Option<u64> {
        proc_status_kib(self.pid(), "VmHWM")
    }
}

impl Drop for Gobgp {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- gobgpd in {} (log tail) ---\n{}", self.ns_name, tail(&self.log(), 60));
        }
    }
}

fn afi_of(prefix: &str) -> Afi {
    if prefix.contains(':') { Afi::Ipv6 } else { Afi::Ipv4 }
}

/// The attribute of `type_code` in one GoBGP JSON path, if present.
pub fn path_attr(path: &Value, type_code: u64) -> Option<&Value> {
    path["attrs"].as_array()?.iter().find(|a| a["type"].as_u64() == Some(type_code))
}

/// A generated IPv4 table for [`Gobgp::mrt_inject`]: `count` consecutive
/// /24s from 11.0.0.0 (a million end at 26.255.255.0/24), AS_PATH
/// `65200 <one of attribute_sets 4-octet private ASNs>` (so UPDATEs pack
/// as a real table's do, many prefixes per attribute set), ORIGIN IGP.
#[derive(Debug, Clone, Copy)]
pub struct MrtTable {
    pub count: u32,
    pub attribute_sets: u32,
    /// The AS of the MRT's one peer (the feeder).
    pub origin_as: u32,
    pub nexthop: std::net::Ipv4Addr,
}

impl MrtTable {
    /// The i-th prefix of the table.
    pub fn prefix(i: u32) -> std::net::Ipv4Addr {
        std::net::Ipv4Addr::from((11u32 << 24) + (i << 8))
    }

    /// The i-th prefix as `a.b.c.0/24`.
    pub fn prefix_str(i: u32) -> String {
        format!("{}/24", Self::prefix(i))
    }

    /// The second AS of the i-th route's AS_PATH: 4-octet private ASNs
    /// (RFC 6996), clear of every AS the tests use.
    pub fn path_as(&self, i: u32) -> u32 {
        4_200_000_000 + i % self.attribute_sets
    }

    /// Writes the table as an MRT TABLE_DUMP_V2 file: a PEER_INDEX_TABLE
    /// with one peer, then one RIB_IPV4_UNICAST record per prefix (RFC 6396
    /// §4.3; AS_PATH with 4-octet ASNs as §4.3.4 requires). The first
    /// `padding` routes are repeated at the end: `gobgp mrt inject` loses
    /// the file's tail (see [`Gobgp::mrt_inject`]), and repeats lost there
    /// cost nothing.
    pub fn write(&self, path: &std::path::Path, padding: u32) -> std::io::Result<()> {
        use std::io::Write;
        const TABLE_DUMP_V2: u16 = 13;
        const PEER_INDEX_TABLE: u16 = 1;
        const RIB_IPV4_UNICAST: u16 = 2;
        fn record(out: &mut impl Write, subtype: u16, body: &[u8]) -> std::io::Result<()> {
            out.write_all(&0u32.to_be_bytes())?; // timestamp
            out.write_all(&TABLE_DUMP_V2.to_be_bytes())?;
            out.write_all(&subtype.to_be_bytes())?;
            out.write_all(&(body.len() as u32).to_be_bytes())?;
            out.write_all(body)
        }
        let nexthop = self.nexthop.octets();
        let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
        let mut body = Vec::with_capacity(64);
        body.extend_from_slice(&nexthop); // collector BGP ID
        body.extend_from_slice(&0u16.to_be_bytes()); // view name length
        body.extend_from_slice(&1u16.to_be_bytes()); // peer count
        body.push(0b10); // peer type: 4-octet AS, IPv4 address
        body.extend_from_slice(&nexthop); // peer BGP ID
        body.extend_from_slice(&nexthop); // peer address
        body.extend_from_slice(&self.origin_as.to_be_bytes());
        record(&mut out, PEER_INDEX_TABLE, &body)?;
        for (sequence, i) in (0..self.count).chain(0..padding.min(self.count)).enumerate() {
            body.clear();
            body.extend_from_slice(&(sequence as u32).to_be_bytes());
            body.push(24);
            body.extend_from_slice(&Self::prefix(i).octets()[..3]);
            body.extend_from_slice(&1u16.to_be_bytes()); // entry count
            body.extend_from_slice(&0u16.to_be_bytes()); // peer index
            body.extend_from_slice(&0u32.to_be_bytes()); // originated time
            let mut attrs = Vec::with_capacity(32);
            attrs.extend_from_slice(&[0x40, 1, 1, 0]); // ORIGIN IGP
            attrs.extend_from_slice(&[0x40, 2, 10, 2, 2]); // AS_PATH: one AS_SEQUENCE of 2
            attrs.extend_from_slice(&65200u32.to_be_bytes());
            attrs.extend_from_slice(&self.path_as(i).to_be_bytes());
            attrs.extend_from_slice(&[0x40, 3, 4]); // NEXT_HOP
            attrs.extend_from_slice(&nexthop);
            body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
            body.extend_from_slice(&attrs);
            record(&mut out, RIB_IPV4_UNICAST, &body)?;
        }
        out.flush()
    }
}
