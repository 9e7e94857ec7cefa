//! BIRD 2 (`bird`, Debian package `bird2`) as a reference BGP peer inside a
//! namespace, queried with `birdc`.
//!
//! Each instance has its own directory (config, control socket, pid file,
//! log), so several run in parallel. BIRD runs in the foreground (`-f`) so
//! the [`ProcessGuard`] owns it; its configs have no `kernel` protocol, so
//! it never touches the namespace's routes. Dropping the [`Bird`] kills it
//! and removes the directory; when a test is panicking the log is printed
//! first.
//!
//! BIRD has no JSON output: [`Bird::route`] reads `show route <prefix> all`
//! into a [`BirdRoute`] (the attribute lines as `name: value` pairs), and
//! [`Bird::protocol`] reads `show protocols all <name>`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::frr::{Afi, proc_status_kib, tail};
use crate::netns::{Netns, ProcessGuard};
use crate::switchd::TempDir;
use crate::wait::poll_until;

pub const BIRD: &str = "bird";
pub const BIRDC: &str = "birdc";

/// Whether bird and birdc are installed (and we are root); fails under
/// `CI=true`, otherwise prints a skip message.
pub fn bird_available(test: &str) -> bool {
    crate::require_root_and_tools(test, &["ip", BIRD, BIRDC])
}

/// One BGP neighbour in a [`BirdConfig`]: a `protocol bgp` of one channel.
#[derive(Debug, Clone)]
pub struct BirdNeighbor {
    /// The protocol's name (`show protocols` and `birdc enable/disable`).
    pub name: String,
    pub local_address: String,
    pub address: String,
    pub remote_as: u32,
    /// Never connect; wait for the peer.
    pub passive: bool,
    /// (keepalive, hold) in seconds.
    pub timers: (u16, u16),
    pub family: Afi,
    /// The channel's export: a filter name, or `none`/`all`.
    pub export: String,
}

impl BirdNeighbor {
    /// A neighbour exporting BIRD's static routes through the `export_static`
    /// filter of [`BirdConfig::render`].
    pub fn new(name: &str, local_address: &str, address: &str, remote_as: u32) -> BirdNeighbor {
        BirdNeighbor {
            name: name.to_string(),
            local_address: local_address.to_string(),
            address: address.to_string(),
            remote_as,
            passive: false,
            timers: (1, 3),
            family: if address.contains(':') { Afi::Ipv6 } else { Afi::Ipv4 },
            export: "filter export_static".to_string(),
        }
    }
}

/// bird.conf: a router id, static routes (`blackhole`, so BIRD needs no
/// route to anything to originate them), BGP neighbours, and the
/// `export_static` filter, which exports the static routes only, setting
/// the MED and community given.
#[derive(Debug, Clone)]
pub struct BirdConfig {
    pub asn: u32,
    pub router_id: String,
    pub neighbors: Vec<BirdNeighbor>,
    /// Originated prefixes, v4 or v6.
    pub networks: Vec<String>,
    /// MED set on exported static routes.
    pub med: Option<u32>,
    /// A standard community `(asn, value)` added on exported static routes.
    pub community: Option<(u16, u16)>,
    /// Raw lines appended at the end.
    pub trailer: Vec<String>,
}

impl BirdConfig {
    pub fn new(asn: u32, router_id: &str) -> BirdConfig {
        BirdConfig {
            asn,
            router_id: router_id.to_string(),
            neighbors: Vec::new(),
            networks: Vec::new(),
            med: None,
            community: None,
            trailer: Vec::new(),
        }
    }

    pub fn neighbor(mut self, n: BirdNeighbor) -> BirdConfig {
        self.neighbors.push(n);
        self
    }

    pub fn network(mut self, prefix: &str) -> BirdConfig {
        self.networks.push(prefix.to_string());
        self
    }

    pub fn render(&self) -> String {
        let mut c = String::new();
        let mut line = |s: &str| {
            c.push_str(s);
            c.push('\n');
        };
        line(&format!("router id {};", self.router_id));
        // Interfaces (for direct next hops); no kernel protocol: BIRD's
        // routes stay in its own tables.
        line("protocol device { scan time 10; }");
        for (afi, name) in [(Afi::Ipv4, "static4"), (Afi::Ipv6, "static6")] {
            line(&format!("protocol static {name} {{"));
            line(&format!("  {};", afi.name()));
            for prefix in self.networks.iter().filter(|p| p.contains(':') == (afi == Afi::Ipv6)) {
                line(&format!("  route {prefix} blackhole;"));
            }
            line("}");
        }
        line("filter export_static {");
        line("  if source != RTS_STATIC then reject;");
        if let Some(med) = self.med {
            line(&format!("  bgp_med = {med};"));
        }
        if let Some((asn, value)) = self.community {
            line(&format!("  bgp_community.add(({asn},{value}));"));
        }
        line("  accept;");
        line("}");
        for n in &self.neighbors {
            line(&format!("protocol bgp {} {{", n.name));
            line(&format!("  local {} as {};", n.local_address, self.asn));
            line(&format!("  neighbor {} as {};", n.address, n.remote_as));
            line(&format!("  keepalive time {}; hold time {};", n.timers.0, n.timers.1));
            line("  connect retry time 1; error wait time 1, 5;");
            if n.passive {
                line("  passive on;");
            }
            line(&format!("  {} {{ import all; export {}; }};", n.family.name(), n.export));
            line("}");
        }
        for t in &self.trailer {
            line(t);
        }
        c
    }
}

/// A route as `show route <prefix> all` prints it: the first path (BIRD
/// lists the preferred one first) and its attribute lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BirdRoute {
    pub prefix: String,
    /// The protocol it came from (`static4`, a BGP protocol's name).
    pub protocol: String,
    /// `via <gateway> on <interface>` as printed, if any.
    pub via: Option<String>,
    /// `BGP.as_path`, `BGP.med`, `BGP.community`, `BGP.next_hop`, ...
    pub attributes: BTreeMap<String, String>,
}

impl BirdRoute {
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes.get(name).map(String::as_str)
    }

    /// Reads the first route of `show route ... all` output; None when
    /// BIRD printed no route (`Network not found`).
    pub fn parse(text: &str) -> Option<BirdRoute> {
        let mut route: Option<BirdRoute> = None;
        for line in text.lines() {
            if line.starts_with('\t') {
                // An attribute or `via` line of the path being read.
                let Some(r) = route.as_mut() else { continue };
                let line = line.trim();
                if let Some(via) = line.strip_prefix("via ") {
                    r.via.get_or_insert_with(|| via.to_string());
                } else if let Some((name, value)) = line.split_once(": ") {
                    r.attributes.entry(name.trim().to_string()).or_insert_with(|| value.trim().to_string());
                }
                continue;
            }
            if route.is_some() {
                // Another path (indented with spaces) or another network.
                break;
            }
            // `10.2.0.0/24  unicast [ours4 12:00:00.123] * (100) [AS65002i]`
            let Some(prefix) = line.split_whitespace().next().filter(|word| word.contains('/')) else { continue };
            let protocol = line
                .split_once('[')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or_default()
                .to_string();
            route = Some(BirdRoute { prefix: prefix.to_string(), protocol, via: None, attributes: BTreeMap::new() });
        }
        route
    }
}

/// A running bird.
pub struct Bird {
    process: ProcessGuard,
    dir: TempDir,
    ns_name: String,
}

impl Bird {
    /// Starts bird in `ns` with `config` (bird.conf text, e.g. from
    /// [`BirdConfig::render`]) and waits until birdc answers.
    pub fn start(ns: &Netns, config: &str) -> Bird {
        let dir = TempDir::new("bird");
        let conf = dir.path().join("bird.conf");
        std::fs::write(&conf, with_log(config, dir.path())).expect("write bird.conf");
        let output = std::fs::File::create(dir.path().join("bird.out")).expect("create bird.out");
        let mut cmd = ns.command(BIRD);
        cmd.arg("-f")
            .arg("-c")
            .arg(&conf)
            .arg("-s")
            .arg(dir.path().join("bird.ctl"))
            .arg("-P")
            .arg(dir.path().join("bird.pid"))
            .stdin(Stdio::null())
            .stdout(output.try_clone().expect("dup output"))
            .stderr(output);
        let process = ProcessGuard::spawn("bird", cmd);
        let mut bird = Bird { process, dir, ns_name: ns.name().to_string() };
        bird.wait_ready(Duration::from_secs(15));
        bird
    }

    fn wait_ready(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            if self.dir.path().join("bird.ctl").exists() && self.birdc_status(&["show", "status"]).0 {
                return;
            }
            if !self.process.is_running() || Instant::now() >= deadline {
                panic!("bird in {} did not answer within {timeout:?}; log:\n{}", self.ns_name, self.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The bird process id (for /proc/PID/status).
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// What bird logged so far (its log file and anything it printed).
    pub fn log(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
        read("bird.out") + &read("bird.log")
    }

    /// Runs `birdc -s <socket> <args>`; returns (success, output): birdc
    /// exits non-zero when BIRD answers with an error, and a command it
    /// cannot parse or a socket it cannot reach is a failure too.
    pub fn birdc_status(&self, args: &[&str]) -> (bool, String) {
        let out = Command::new(BIRDC)
            .arg("-s")
            .arg(self.dir.path().join("bird.ctl"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run birdc");
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        let refused = text.lines().any(|l| l.starts_with("syntax error") || l.starts_with("Unable to connect"));
        (out.status.success() && !refused, text)
    }

    /// birdc, panicking unless it succeeds.
    #[track_caller]
    pub fn birdc(&self, args: &[&str]) -> String {
        let (ok, text) = self.birdc_status(args);
        assert!(ok, "birdc {args:?} failed: {text}");
        text
    }

    /// Replaces the configuration and makes BIRD read it (`birdc configure`):
    /// static routes removed from the config are withdrawn.
    #[track_caller]
    pub fn reconfigure(&self, config: &str) {
        let conf = self.dir.path().join("bird.conf");
        std::fs::write(&conf, with_log(config, self.dir.path())).expect("write bird.conf");
        let text = self.birdc(&["configure"]);
        assert!(text.contains("Reconfigured") || text.contains("Reconfiguration in progress"), "configure: {text}");
    }

    /// `show protocols all <name>` as `name: value` pairs of its indented
    /// lines, plus `state` (`up`, `start`...) and `info` (`Established`,
    /// `Active`, `Connect`...) from its summary line.
    pub fn protocol(&self, name: &str) -> BTreeMap<String, String> {
        let text = self.birdc(&["show", "protocols", "all", name]);
        let mut out = BTreeMap::new();
        for line in text.lines() {
            if line.starts_with(name) {
                // `ours4      BGP        ---        up     12:00:00.123  Established`
                let words: Vec<&str> = line.split_whitespace().collect();
                if let Some(state) = words.get(3) {
                    out.insert("state".to_string(), state.to_string());
                }
                if words.len() > 5 {
                    out.insert("info".to_string(), words[5..].join(" "));
                }
            } else if let Some((key, value)) = line.trim().split_once(':') {
                out.entry(key.trim().to_string()).or_insert_with(|| value.trim().to_string());
            }
        }
        out
    }

    /// Whether BGP protocol `name` is Established.
    pub fn established(&self, name: &str) -> bool {
        self.protocol(name).get("BGP state").map(String::as_str) == Some("Established")
    }

    /// Waits until BGP protocol `name` is Established.
    #[track_caller]
    pub fn wait_established(&self, name: &str, timeout: Duration) {
        if poll_until(timeout, Duration::from_millis(100), || self.established(name).then_some(())).is_none() {
            panic!(
                "BIRD in {}: {name} not Established within {timeout:?}: {:#?}\nlog tail:\n{}",
                self.ns_name,
                self.protocol(name),
                tail(&self.log(), 40)
            );
        }
    }

    /// The route BIRD prefers for exactly `prefix`, if any.
    pub fn route(&self, prefix: &str) -> Option<BirdRoute> {
        // birdc exits non-zero for `Network not found`.
        let (ok, text) = self.birdc_status(&["show", "route", prefix, "all"]);
        if text.contains("Network not found") {
            return None;
        }
        assert!(ok, "birdc show route {prefix} all failed: {text}");
        BirdRoute::parse(&text)
    }

    /// Waits until `prefix` is in BIRD's table and `check` accepts it;
    /// returns it.
    #[track_caller]
    pub fn wait_route(&self, prefix: &str, timeout: Duration, check: impl Fn(&BirdRoute) -> bool) -> BirdRoute {
        let mut last = None;
        poll_until(timeout, Duration::from_millis(100), || {
            last = self.route(prefix);
            last.clone().filter(|route| check(route))
        })
        .unwrap_or_else(|| {
            panic!("BIRD in {}: {prefix} not as expected within {timeout:?}; last: {last:#?}", self.ns_name)
        })
    }

    /// Waits until `prefix` is gone from BIRD's table.
    #[track_caller]
    pub fn wait_no_route(&self, prefix: &str, timeout: Duration) {
        if poll_until(timeout, Duration::from_millis(100), || self.route(prefix).is_none().then_some(())).is_none() {
            panic!("BIRD in {}: {prefix} still present after {timeout:?}: {:#?}", self.ns_name, self.route(prefix));
        }
    }

    /// Routes BGP protocol `name` imported into the table (`Routes: N
    /// imported` of `show protocols all`): cheap, and BIRD puts a route in
    /// its table as it imports it.
    pub fn imported(&self, name: &str) -> u64 {
        self.protocol(name).get("Routes").and_then(|routes| routes.split_whitespace().next()?.parse().ok()).unwrap_or(0)
    }

    /// The number of networks in table `table` (`master4`, `master6`), from
    /// `show route count` (a walk of the table).
    pub fn route_count(&self, table: &str) -> u64 {
        let text = self.birdc(&["show", "route", "count", "table", table]);
        // `1000000 of 1000000 routes for 1000000 networks in table master4`
        text.lines().find_map(|l| l.split_once(" networks in table")?.0.rsplit(' ').next()?.parse().ok()).unwrap_or(0)
    }

    /// Peak resident memory of bird in KiB (VmHWM).
    pub fn vm_hwm_kib(&self) -> Option<u64> {
        proc_status_kib(self.pid(), "VmHWM")
    }

    /// Stops bird (SIGTERM) and returns its log.
    pub fn stop(&mut self) -> String {
        self.process.stop(Duration::from_secs(3));
        self.log()
    }
}

impl Drop for Bird {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- bird in {} (log tail) ---\n{}", self.ns_name, tail(&self.log(), 80));
        }
        // The ProcessGuard kills bird, then the TempDir goes.
    }
}

/// `config` with a `log` line to a file in `dir` first (BIRD logs nothing
/// otherwise when it runs in the foreground).
fn with_log(config: &str, dir: &Path) -> String {
    let log: PathBuf = dir.join("bird.log");
    format!("log \"{}\" all;\n{config}", log.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_with_its_attributes_is_read() {
        let text = "BIRD 2.0.12 ready.
Table master4:
10.2.0.0/24          unicast [ours4 12:28:51.123] * (100) [AS65002i]
\tvia 10.0.12.2 on eth1
\tType: BGP univ
\tBGP.origin: IGP
\tBGP.as_path: 65002
\tBGP.next_hop: 10.0.12.2
\tBGP.med: 20
\tBGP.local_pref: 100
\tBGP.community: (65002,20)
";
        let route = BirdRoute::parse(text).expect("a route");
        assert_eq!(route.prefix, "10.2.0.0/24");
        assert_eq!(route.protocol, "ours4");
        assert_eq!(route.via.as_deref(), Some("10.0.12.2 on eth1"));
        assert_eq!(route.attribute("BGP.as_path"), Some("65002"));
        assert_eq!(route.attribute("BGP.med"), Some("20"));
        assert_eq!(route.attribute("BGP.community"), Some("(65002,20)"));
        assert_eq!(BirdRoute::parse("BIRD 2.0.12 ready.\nNetwork not found\n"), None);
    }
}
