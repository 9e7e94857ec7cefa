//! FRR's `bgpd` as a reference BGP peer inside a namespace, queried with
//! `vtysh ... json`.
//!
//! Each instance has its own directory (config, pid file, vty socket, log),
//! so several run in parallel; bgpd runs without zebra (`-Z`) and without
//! touching the kernel's routes (`-n`), as root (`-S`), in the foreground so
//! the [`ProcessGuard`] owns it. Dropping the [`Frr`] kills bgpd and removes
//! the directory; when a test is panicking the log is printed first.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::netns::{Netns, ProcessGuard};
use crate::switchd::TempDir;
use crate::wait::poll_until;

pub const BGPD: &str = "/usr/lib/frr/bgpd";
pub const VTYSH: &str = "vtysh";
pub const ZEBRA: &str = "/usr/lib/frr/zebra";
pub const BFDD: &str = "/usr/lib/frr/bfdd";

/// Whether bgpd and vtysh are installed (and we are root). Fails under
/// `CI=true`, otherwise prints a skip message; see
/// [`crate::require_root_and_tools`].
pub fn frr_available(test: &str) -> bool {
    if !Path::new(BGPD).is_file() {
        let message = format!("{test}: needs FRR ({BGPD}; Debian package frr)");
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{message} (CI=true: a missing prerequisite is a failure)");
        }
        eprintln!("SKIP {message}");
        return false;
    }
    crate::require_root_and_tools(test, &["ip", VTYSH])
}

/// A running bgpd.
pub struct Frr {
    process: ProcessGuard,
    /// zebra, when bgpd installs its routes in the kernel through it.
    zebra: Option<ProcessGuard>,
    dir: TempDir,
    ns_name: String,
}

impl Frr {
    /// Starts bgpd in `ns` with `config` (bgpd.conf text, e.g. from
    /// [`FrrConfig::render`]) and waits until vtysh answers.
    pub fn start(ns: &Netns, config: &str) -> Frr {
        Self::start_with_args(ns, config, &[])
    }

    /// As [`Frr::start`], with extra bgpd arguments.
    pub fn start_with_args(ns: &Netns, config: &str, extra: &[&str]) -> Frr {
        let dir = TempDir::new("frr");
        let conf = dir.path().join("bgpd.conf");
        std::fs::write(&conf, config).expect("write bgpd.conf");
        let log = std::fs::File::create(dir.path().join("bgpd.log")).expect("create bgpd.log");
        let mut cmd = ns.command(BGPD);
        cmd.args(["-Z", "-n", "-S", "-P", "0", "--log", "stdout", "--log-level", "debug"])
            .arg("-f")
            .arg(&conf)
            .arg("-i")
            .arg(dir.path().join("bgpd.pid"))
            .arg("--vty_socket")
            .arg(dir.path())
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup log"))
            .stderr(log);
        let process = ProcessGuard::spawn("bgpd", cmd);
        let frr = Frr { process, zebra: None, dir, ns_name: ns.name().to_string() };
        frr.wait_ready(Duration::from_secs(15));
        frr
    }

    /// Starts zebra, then bgpd connected to it, in `ns`: bgpd's best paths
    /// go through zebra into the namespace's kernel FIB, as FRR runs on a
    /// Linux router. zebra gets Debian's packaged options (`-s 90000000`, a
    /// 90 MB netlink receive buffer) and otherwise its defaults (its
    /// dataplane thread batches netlink requests; nexthop groups as kernel
    /// nexthop objects where the kernel has them).
    pub fn start_with_zebra(ns: &Netns, config: &str) -> Frr {
        Self::start_with_netns_vrfs(ns, "", config, &[])
    }

    /// As [`Frr::start_with_zebra`], with zebra's VRFs as network namespaces
    /// (`zebra --vrfwnetns`, FRR's VRF backend where the kernel has no VRF
    /// devices, as FRR's bgp_evpn_rt5 topotest runs it): each of `vrfs` is a
    /// VRF named after its namespace. zebra adopts every namespace in
    /// /run/netns, so zebra and bgpd run in a mount namespace of their own
    /// whose /run/netns holds only `vrfs`: the other tests' namespaces stay
    /// out of this FRR. `zebra_conf` is added to zebra.conf (`vrf NAME` /
    /// ` vni L3VNI`).
    pub fn start_with_netns_vrfs(ns: &Netns, zebra_conf: &str, config: &str, vrfs: &[&Netns]) -> Frr {
        let dir = TempDir::new("frr");
        // zebra drops to the `frr` user (it keeps only the capabilities it
        // needs and has no switch to stay root), so its directory must be
        // writable to it.
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .expect("chmod the FRR directory");
        let zserv = dir.path().join("zserv.api");
        std::fs::write(dir.path().join("zebra.conf"), format!("hostname zebra\n{zebra_conf}"))
            .expect("write zebra.conf");
        let log = std::fs::File::create(dir.path().join("zebra.log")).expect("create zebra.log");
        let mut cmd = if vrfs.is_empty() {
            ns.command(ZEBRA)
        } else {
            // A private /run/netns with bind mounts of the VRFs' namespaces
            // only (kept aside first: the tmpfs hides the originals).
            let mut script = String::from("set -e\nmount --make-rprivate /\n");
            for vrf in vrfs {
                let name = vrf.name();
                let aside = dir.path().join(format!("{name}.netns"));
                let aside = aside.display();
                script.push_str(&format!("touch {aside}\nmount --bind /run/netns/{name} {aside}\n"));
            }
            script.push_str("mount -t tmpfs netns /run/netns\n");
            for vrf in vrfs {
                let name = vrf.name();
                let aside = dir.path().join(format!("{name}.netns"));
                script.push_str(&format!(
                    "touch /run/netns/{name}\nmount --bind {} /run/netns/{name}\n",
                    aside.display()
                ));
            }
            script.push_str("exec \"$@\"\n");
            let mut cmd = ns.command("unshare");
            cmd.args(["-m", "sh", "-c", &script, "sh", ZEBRA, "--vrfwnetns"]);
            cmd
        };
        cmd.args(["-P", "0", "-s", "90000000", "--log", "stdout", "--log-level", "info"])
            .arg("-f")
            .arg(dir.path().join("zebra.conf"))
            .arg("-i")
            .arg(dir.path().join("zebra.pid"))
            .arg("-z")
            .arg(&zserv)
            .arg("--vty_socket")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup log"))
            .stderr(log);
        // ip netns exec, unshare and sh all exec: the pid is zebra's.
        let zebra = ProcessGuard::spawn("zebra", cmd);
        let deadline = Instant::now() + Duration::from_secs(15);
        while !zserv.exists() {
            assert!(Instant::now() < deadline, "zebra in {} opened no zserv socket", ns.name());
            std::thread::sleep(Duration::from_millis(50));
        }

        let conf = dir.path().join("bgpd.conf");
        std::fs::write(&conf, config).expect("write bgpd.conf");
        let log = std::fs::File::create(dir.path().join("bgpd.log")).expect("create bgpd.log");
        let mut cmd = if vrfs.is_empty() {
            ns.command(BGPD)
        } else {
            // bgpd opens its VRFs' sockets through the same /run/netns.
            let mut cmd = Command::new("nsenter");
            cmd.arg(format!("--target={}", zebra.id())).args(["--mount", "--net", BGPD]);
            cmd
        };
        cmd.args(["-S", "-P", "0", "--log", "stdout", "--log-level", "info"])
            .arg("-f")
            .arg(&conf)
            .arg("-i")
            .arg(dir.path().join("bgpd.pid"))
            .arg("-z")
            .arg(&zserv)
            .arg("--vty_socket")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup log"))
            .stderr(log);
        let process = ProcessGuard::spawn("bgpd", cmd);
        let frr = Frr { process, zebra: Some(zebra), dir, ns_name: ns.name().to_string() };
        frr.wait_ready(Duration::from_secs(15));
        frr
    }

    /// zebra's process id, when it runs.
    pub fn zebra_pid(&self) -> Option<u32> {
        self.zebra.as_ref().map(ProcessGuard::id)
    }

    fn wait_ready(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let socket = self.dir.path().join("bgpd.vty");
        loop {
            if socket.exists() && self.vtysh_status(&["show bgp summary json"]).0 {
                return;
            }
            if Instant::now() >= deadline {
                panic!("bgpd in {} did not answer within {timeout:?}; log:\n{}", self.ns_name, self.log());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The bgpd process id (for /proc/PID/status).
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Whether bgpd is still running.
    pub fn is_running(&mut self) -> bool {
        self.process.is_running()
    }

    /// What bgpd logged so far.
    pub fn log(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
        match self.zebra {
            Some(_) => format!("{}--- zebra ---\n{}", read("bgpd.log"), read("zebra.log")),
            None => read("bgpd.log"),
        }
    }

    /// Runs vtysh against this bgpd, one `-c` per command; returns (success,
    /// stdout + stderr).
    pub fn vtysh_status(&self, commands: &[&str]) -> (bool, String) {
        let mut cmd = Command::new(VTYSH);
        cmd.arg("--vty_socket").arg(self.dir.path()).args(["-d", "bgpd"]);
        for c in commands {
            cmd.args(["-c", c]);
        }
        let out = cmd.stdin(Stdio::null()).output().expect("run vtysh");
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        (out.status.success(), text)
    }

    /// vtysh against zebra (`show evpn ...`, `show ip route vrf ...`).
    #[track_caller]
    pub fn zebra_vtysh(&self, command: &str) -> String {
        let out = Command::new(VTYSH)
            .arg("--vty_socket")
            .arg(self.dir.path())
            .args(["-d", "zebra", "-c", command])
            .stdin(Stdio::null())
            .output()
            .expect("run vtysh");
        assert!(out.status.success(), "vtysh -d zebra -c {command:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// vtysh, panicking unless it succeeds.
    #[track_caller]
    pub fn vtysh(&self, commands: &[&str]) -> String {
        let (ok, text) = self.vtysh_status(commands);
        assert!(ok, "vtysh {commands:?} failed: {text}");
        text
    }

    /// A `show ... json` command parsed.
    #[track_caller]
    pub fn json(&self, command: &str) -> Value {
        let text = self.vtysh(&[command]);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("`{command}` did not print JSON ({e}): {text}"))
    }

    /// Configuration lines entered under `configure terminal` (each line
    /// as typed, e.g. `router bgp 65001`, ` neighbor X shutdown`).
    #[track_caller]
    pub fn configure(&self, lines: &[&str]) {
        let mut commands = vec!["configure terminal"];
        commands.extend_from_slice(lines);
        let text = self.vtysh(&commands);
        // vtysh exits 0 on some rejected lines; FRR prints "% ..." then.
        assert!(!text.lines().any(|l| l.starts_with('%')), "configure {lines:?}: {text}");
    }

    /// `show bgp summary json`.
    pub fn summary(&self) -> Value {
        self.json("show bgp summary json")
    }

    /// The state of neighbour `peer` (`Established`, `Active`, `Idle`, ...),
    /// from `show bgp neighbors <peer> json`.
    pub fn neighbor_state(&self, peer: &str) -> Option<String> {
        let v = self.json(&format!("show bgp neighbors {peer} json"));
        v[peer]["bgpState"].as_str().map(str::to_string)
    }

    /// `show bgp neighbors <peer> json`, the neighbour's object.
    pub fn neighbor(&self, peer: &str) -> Value {
        self.json(&format!("show bgp neighbors {peer} json"))[peer].clone()
    }

    /// Waits until neighbour `peer` is Established.
    #[track_caller]
    pub fn wait_established(&self, peer: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let state = self.neighbor_state(peer);
            if state.as_deref() == Some("Established") {
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "FRR in {}: {peer} not Established within {timeout:?} (state {state:?}); neighbor: {:#}\nlog tail:\n{}",
                    self.ns_name,
                    self.neighbor(peer),
                    tail(&self.log(), 40)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The `routes` object of `show bgp <afi> unicast json` (prefix -> array
    /// of paths).
    pub fn routes(&self, afi: Afi) -> serde_json::Map<String, Value> {
        let v = self.json(&format!("show bgp {} unicast json", afi.name()));
        match v.get("routes") {
            Some(Value::Object(map)) => map.clone(),
            _ => serde_json::Map::new(),
        }
    }

    /// The detailed view of one prefix (`show bgp <afi> unicast <prefix>
    /// json`): `paths` with aspath, origin, metric, locPrf, community,
    /// nexthops, or None when FRR has no such prefix.
    pub fn route(&self, prefix: &str) -> Option<Value> {
        let afi = if prefix.contains(':') { Afi::Ipv6 } else { Afi::Ipv4 };
        let v = self.json(&format!("show bgp {} unicast {prefix} json", afi.name()));
        match v.get("paths") {
            Some(Value::Array(paths)) if !paths.is_empty() => Some(v),
            _ => None,
        }
    }

    /// Waits until `prefix` is in FRR's table and `check` accepts its detail
    /// view; returns it.
    #[track_caller]
    pub fn wait_route(&self, prefix: &str, timeout: Duration, check: impl Fn(&Value) -> bool) -> Value {
        let mut last = None;
        poll_until(timeout, Duration::from_millis(200), || {
            last = self.route(prefix);
            last.clone().filter(|route| check(route))
        })
        .unwrap_or_else(|| {
            panic!("FRR in {}: {prefix} not as expected within {timeout:?}; last seen: {last:#?}", self.ns_name)
        })
    }

    /// Waits until `prefix` is gone from FRR's table.
    #[track_caller]
    pub fn wait_no_route(&self, prefix: &str, timeout: Duration) {
        if poll_until(timeout, Duration::from_millis(200), || self.route(prefix).is_none().then_some(())).is_none() {
            panic!("FRR in {}: {prefix} still present after {timeout:?}", self.ns_name);
        }
    }

    /// The number of prefixes in FRR's table for `afi`, from `show bgp <afi>
    /// unicast statistics json` (the summary's `ribCount` counts trie
    /// nodes, not prefixes). Walks the table: about a second per million.
    pub fn rib_count(&self, afi: Afi) -> u64 {
        let key = match afi {
            Afi::Ipv4 => "ipv4Unicast",
            Afi::Ipv6 => "ipv6Unicast",
        };
        let v = self.json(&format!("show bgp {} unicast statistics json", afi.name()));
        v[key][0]["totalPrefixes"].as_u64().unwrap_or(0)
    }

    /// Prefixes accepted from `peer` (`pfxRcd` in the summary): cheap, but
    /// counts the Adj-RIB-In, which bgpd fills before its best-path work
    /// queue runs.
    pub fn prefixes_received(&self, afi: Afi, peer: &str) -> u64 {
        let v = self.json(&format!("show bgp {} unicast summary json", afi.name()));
        v["peers"][peer]["pfxRcd"].as_u64().unwrap_or(0)
    }

    /// Peak resident memory of bgpd in KiB (VmHWM).
    pub fn vm_hwm_kib(&self) -> Option<u64> {
        proc_status_kib(self.pid(), "VmHWM")
    }

    /// Stops bgpd (SIGTERM) and returns its log.
    pub fn stop(&mut self) -> String {
        self.process.stop(Duration::from_secs(3));
        self.log()
    }
}

impl Drop for Frr {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- bgpd in {} (log tail) ---\n{}", self.ns_name, tail(&self.log(), 80));
        }
        // The ProcessGuard kills bgpd, then the TempDir goes.
    }
}

/// FRR's `bfdd` in a namespace with single-hop peers from its own
/// bfdd.conf (no zebra needed), queried with `vtysh -d bfdd`. Runs as
/// FRR's user, so its directory is world-writable; killed on drop.
pub struct Bfdd {
    _process: ProcessGuard,
    dir: TempDir,
    ns_name: String,
}

impl Bfdd {
    /// Starts bfdd in `ns` with a session to each `(peer, local address)`,
    /// both intervals `interval_ms`, multiplier `multiplier`.
    pub fn start(ns: &Netns, peers: &[(&str, &str)], interval_ms: u32, multiplier: u8) -> Bfdd {
        let dir = TempDir::new("bfdd");
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .expect("chmod the bfdd directory");
        let mut conf = String::from("hostname bfdd\nlog stdout debugging\nbfd\n");
        for (peer, local) in peers {
            conf.push_str(&format!(
                " peer {peer} local-address {local}\n  receive-interval {interval_ms}\n  transmit-interval {interval_ms}\n  detect-multiplier {multiplier}\n exit\n"
            ));
        }
        conf.push_str("exit\n");
        let path = dir.path().join("bfdd.conf");
        std::fs::write(&path, conf).expect("write bfdd.conf");
        let log = std::fs::File::create(dir.path().join("bfdd.log")).expect("create bfdd.log");
        let mut cmd = ns.command(BFDD);
        cmd.args(["-P", "0", "--log", "stdout"])
            .arg("-f")
            .arg(&path)
            .arg("-i")
            .arg(dir.path().join("bfdd.pid"))
            .arg("--vty_socket")
            .arg(dir.path())
            .arg("--bfdctl")
            .arg(dir.path().join("bfdd.sock"))
            // No zebra runs: bfdd keeps retrying this socket, harmlessly.
            .arg("-z")
            .arg(dir.path().join("zserv.api"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup log"))
            .stderr(log);
        let process = ProcessGuard::spawn("bfdd", cmd);
        let bfdd = Bfdd { _process: process, dir, ns_name: ns.name().to_string() };
        let ready = poll_until(Duration::from_secs(15), Duration::from_millis(100), || {
            bfdd.peers_status().ok().filter(|v| v.as_array().is_some_and(|a| a.len() == peers.len()))
        });
        assert!(ready.is_some(), "bfdd in {} did not answer; log:\n{}", bfdd.ns_name, bfdd.log());
        bfdd
    }

    fn peers_status(&self) -> Result<Value, String> {
        let out = Command::new(VTYSH)
            .arg("--vty_socket")
            .arg(self.dir.path())
            .args(["-d", "bfdd", "-c", "show bfd peers json"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
    }

    /// `show bfd peers json`: the entry for `peer` (`status`, `diagnostic`,
    /// `remote-receive-interval`...).
    pub fn peer(&self, peer: &str) -> Option<Value> {
        self.peers_status().ok()?.as_array()?.iter().find(|p| p["peer"] == peer).cloned()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("bfdd.log")).unwrap_or_default()
    }
}

impl Drop for Bfdd {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- bfdd in {} (log tail) ---\n{}", self.ns_name, tail(&self.log(), 40));
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Afi {
    Ipv4,
    Ipv6,
}

impl Afi {
    pub fn name(self) -> &'static str {
        match self {
            Afi::Ipv4 => "ipv4",
            Afi::Ipv6 => "ipv6",
        }
    }
}

/// One neighbour in an [`FrrConfig`].
#[derive(Debug, Clone)]
pub struct FrrNeighbor {
    pub address: String,
    pub remote_as: u32,
    /// Never connect; wait for the peer (`neighbor X passive`).
    pub passive: bool,
    /// `timers KEEPALIVE HOLD`.
    pub timers: Option<(u16, u16)>,
    /// Address families to activate (IPv4 unicast is active by default in
    /// FRR 8's `datacenter` profile only when `bgp default ipv4-unicast`
    /// is on, so every family is activated explicitly).
    pub families: Vec<Afi>,
    /// Extra lines under `router bgp` for this neighbour (whole lines).
    pub extra: Vec<String>,
}

impl FrrNeighbor {
    pub fn new(address: &str, remote_as: u32) -> FrrNeighbor {
        FrrNeighbor {
            address: address.to_string(),
            remote_as,
            passive: false,
            timers: Some((1, 3)),
            families: vec![Afi::Ipv4, Afi::Ipv6],
            extra: Vec::new(),
        }
    }
}

/// bgpd.conf for one `router bgp` with neighbours and originated networks.
#[derive(Debug, Clone)]
pub struct FrrConfig {
    pub asn: u32,
    pub router_id: String,
    pub neighbors: Vec<FrrNeighbor>,
    /// Prefixes originated with `network` (v4 or v6), with an optional
    /// route-map name.
    pub networks: Vec<(String, Option<String>)>,
    /// Raw lines appended after `router bgp` (route-maps, prefix lists).
    pub trailer: Vec<String>,
    /// `bgp bestpath as-path multipath-relax` and `maximum-paths`.
    pub multipath: bool,
}

impl FrrConfig {
    pub fn new(asn: u32, router_id: &str) -> FrrConfig {
        FrrConfig {
            asn,
            router_id: router_id.to_string(),
            neighbors: Vec::new(),
            networks: Vec::new(),
            trailer: Vec::new(),
            multipath: false,
        }
    }

    pub fn neighbor(mut self, n: FrrNeighbor) -> FrrConfig {
        self.neighbors.push(n);
        self
    }

    pub fn network(mut self, prefix: &str) -> FrrConfig {
        self.networks.push((prefix.to_string(), None));
        self
    }

    pub fn network_with_route_map(mut self, prefix: &str, route_map: &str) -> FrrConfig {
        self.networks.push((prefix.to_string(), Some(route_map.to_string())));
        self
    }

    pub fn trailer(mut self, line: &str) -> FrrConfig {
        self.trailer.push(line.to_string());
        self
    }

    pub fn render(&self) -> String {
        let mut c = String::new();
        let mut line = |s: &str| {
            c.push_str(s);
            c.push('\n');
        };
        line("frr defaults datacenter");
        line("hostname frr");
        line("log stdout debugging");
        line("debug bgp neighbor-events");
        line(&format!("router bgp {}", self.asn));
        line(&format!(" bgp router-id {}", self.router_id));
        line(" no bgp ebgp-requires-policy");
        line(" no bgp default ipv4-unicast");
        // Without zebra there is no RIB to check `network` against.
        line(" no bgp network import-check");
        if self.multipath {
            line(" bgp bestpath as-path multipath-relax");
        }
        for n in &self.neighbors {
            line(&format!(" neighbor {} remote-as {}", n.address, n.remote_as));
            if n.passive {
                line(&format!(" neighbor {} passive", n.address));
            }
            if let Some((keepalive, hold)) = n.timers {
                line(&format!(" neighbor {} timers {keepalive} {hold}", n.address));
                // Reconnect quickly after a reset.
                line(&format!(" neighbor {} timers connect 1", n.address));
            }
            for extra in &n.extra {
                line(&format!(" {extra}"));
            }
        }
        for afi in [Afi::Ipv4, Afi::Ipv6] {
            line(&format!(" address-family {} unicast", afi.name()));
            for (prefix, route_map) in &self.networks {
                if prefix.contains(':') == (afi == Afi::Ipv6) {
                    match route_map {
                        Some(rm) => line(&format!("  network {prefix} route-map {rm}")),
                        None => line(&format!("  network {prefix}")),
                    }
                }
            }
            for n in &self.neighbors {
                if n.families.contains(&afi) {
                    line(&format!("  neighbor {} activate", n.address));
                }
            }
            if self.multipath {
                line("  maximum-paths 16");
                line("  maximum-paths ibgp 16");
            }
            line(" exit-address-family");
        }
        line("exit");
        for t in &self.trailer {
            line(t);
        }
        c
    }
}

/// A `/proc/<pid>/status` field in KiB (`VmHWM`, `VmRSS`).
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(PathBuf::from(format!("/proc/{pid}/status"))).ok()?;
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
