//! Running `fabric-host` (the lab's RoCE-like host program) in namespaces
//! and reading its JSON reports, and the QoS shows of `switchd`.

use std::process::Stdio;
use std::time::Duration;

use crate::netns::{Netns, ProcessGuard};
use crate::switchd::{Switchd, swcli_json, workspace_binary};

/// A `fabric-host` run in the background, killed on drop.
pub struct FabricHost {
    process: ProcessGuard,
    what: String,
}

impl FabricHost {
    /// Starts `fabric-host --json <args>` in `ns`.
    pub fn start(ns: &Netns, args: &[&str]) -> FabricHost {
        let mut cmd = ns.command(workspace_binary("fabric-host").to_str().expect("utf-8 path"));
        cmd.arg("--json").args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        FabricHost {
            process: ProcessGuard::spawn("fabric-host", cmd),
            what: format!("{} {}", ns.name(), args.join(" ")),
        }
    }

    /// Waits for its report.
    #[track_caller]
    pub fn report(mut self, timeout: Duration) -> serde_json::Value {
        let out = self
            .process
            .wait_timeout(timeout)
            .unwrap_or_else(|| panic!("fabric-host {} still running after {timeout:?}", self.what));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "fabric-host {} failed: {stdout}{}",
            self.what,
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("fabric-host {}: {e}: {stdout}", self.what))
    }
}

/// `swcli show <words...> --json` parsed.
#[track_caller]
pub fn show(switchd: &Switchd, words: &[&str]) -> serde_json::Value {
    let mut args = vec!["show"];
    args.extend_from_slice(words);
    args.push("--json");
    swcli_json(&switchd.swcli(&args))
}

/// The row of `show pfc counters` for `port`.
#[track_caller]
pub fn pfc_row(switchd: &Switchd, port: &str) -> serde_json::Value {
    let rows = show(switchd, &["pfc", "counters"]);
    rows.as_array()
        .and_then(|rows| rows.iter().find(|r| r["port"] == port).cloned())
        .unwrap_or_else(|| panic!("no {port} in show pfc counters: {rows}"))
}

/// The row of `show queue counters` for `port`, queue `queue`.
#[track_caller]
pub fn queue_row(switchd: &Switchd, port: &str, queue: u8) -> serde_json::Value {
    let rows = show(switchd, &["queue", "counters"]);
    let txq = format!("UC{queue}");
    rows.as_array()
        .and_then(|rows| rows.iter().find(|r| r["port"] == port && r["txq"] == txq.as_str()).cloned())
        .unwrap_or_else(|| panic!("no {port} {txq} in show queue counters: {rows}"))
}

/// Frames the traffic manager refused, by reason, from `show buffer pool`.
#[track_caller]
pub fn tm_drops(switchd: &Switchd) -> Vec<(String, u64)> {
    let pools = show(switchd, &["buffer", "pool"]);
    let drops = &pools[0]["drops"];
    drops
        .as_array()
        .map(|rows| rows.iter().map(|r| (r[0].as_str().unwrap_or("").to_owned(), r[1].as_u64().unwrap_or(0))).collect())
        .unwrap_or_default()
}

pub fn u64_of(value: &serde_json::Value, field: &str) -> u64 {
    value[field].as_u64().unwrap_or_else(|| panic!("no {field} in {value}"))
}

/// Waits until `tshark -w path` has started capturing (its file holds the
/// capture's header), at most `timeout`.
#[track_caller]
pub fn wait_capture_started(path: &std::path::Path, timeout: Duration) {
    let started = crate::wait::poll_until(timeout, Duration::from_millis(50), || {
        std::fs::metadata(path).ok().filter(|m| m.len() > 0).map(|_| ())
    });
    assert!(started.is_some(), "tshark did not start capturing into {} within {timeout:?}", path.display());
}

/// A `--start-at-unix-ms` value `delay` from now, so that several senders
/// (once each has resolved its next hop) start together.
pub fn start_at(delay: Duration) -> String {
    (std::time::SystemTime::now() + delay)
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis()
        .to_string()
}

/// One `switchd` with hosts around it: host `n` (from 1) is namespace
/// `<tag>h<n>`, its `eth1` at 10.n.0.2/24 on the switch's `eth<n>`
/// (10.n.0.1/24, routed, MTU 9100, `speed`, 5 m of cable), and `qos` (the
/// YAML of the config's `qos:` section) applies to the switch.
pub struct Star {
    pub switchd: Switchd,
    /// Host n is `hosts[n - 1]`.
    pub hosts: Vec<Netns>,
    /// The config without its `qos:` section.
    ports_yaml: String,
    sw: Netns,
}

impl Star {
    pub fn start(tag: &str, hosts: usize, speed: &str, qos: &str) -> Star {
        let sw = Netns::new(&format!("{tag}s"));
        let hosts: Vec<Netns> = (1..=hosts).map(|n| Netns::new(&format!("{tag}h{n}"))).collect();
        let mut yaml = format!("name: {tag}\nports:\n");
        for (i, host) in hosts.iter().enumerate() {
            let n = i + 1;
            crate::veth(host, "eth1", &sw, &format!("eth{n}"));
            host.ip(&["link", "set", "eth1", "mtu", "9100"]);
            sw.ip(&["link", "set", &format!("eth{n}"), "mtu", "9100"]);
            host.host_setup("eth1", &format!("10.{n}.0.2/24"), Some(&format!("10.{n}.0.1")));
            yaml.push_str(&format!(
                "  - {{name: eth{n}, mode: routed, addresses: [10.{n}.0.1/24], mtu: 9100, speed: {speed}, cable-length: 5}}\n"
            ));
        }
        let switchd = Switchd::start(&sw, &format!("{yaml}{qos}"));
        let star = Star { switchd, hosts, ports_yaml: yaml, sw };
        star.wait_reachable();
        star
    }

    /// The switch's namespace.
    pub fn switch_ns(&self) -> &Netns {
        &self.sw
    }

    /// Stops the switch and starts it again with another `qos:` section.
    pub fn restart(&mut self, qos: &str) {
        self.switchd.stop();
        self.switchd = Switchd::start(&self.sw, &format!("{}{qos}", self.ports_yaml));
        self.wait_reachable();
    }

    /// Commits another `qos:` section to the running switch (the startup
    /// file rewritten, SIGHUP) and waits until it runs: no restart.
    pub fn reload(&self, qos: &str) {
        let generation = self.switchd.generation();
        self.switchd.reload(&format!("{}{qos}", self.ports_yaml));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while self.switchd.generation() == generation {
            assert!(std::time::Instant::now() < deadline, "the reload was not committed (see switchd's log)");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Like [`Star::reload`] with the ports' YAML changed by `edit` too.
    pub fn reload_with(&self, edit: impl Fn(&str) -> String, qos: &str) {
        let generation = self.switchd.generation();
        self.switchd.reload(&format!("{}{qos}", edit(&self.ports_yaml)));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while self.switchd.generation() == generation {
            assert!(std::time::Instant::now() < deadline, "the reload was not committed (see switchd's log)");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_reachable(&self) {
        for (i, host) in self.hosts.iter().enumerate() {
            assert!(host.ping_until(&format!("10.{}.0.1", i + 1), Duration::from_secs(10)), "h{} -> gateway", i + 1);
        }
    }

    /// Host `n` (from 1).
    pub fn host(&self, n: usize) -> &Netns {
        &self.hosts[n - 1]
    }
}

/// `fabric-host send` arguments to `to`: `bytes` at `rate` on `dscp` and
/// queue pair `qp` (a 100 Mb/s link), then `extra`.
pub fn send_args(to: &str, rate: &str, bytes: u64, dscp: u8, qp: u32, extra: &[&str]) -> Vec<String> {
    send_args_on_link("100M", to, rate, bytes, dscp, qp, extra)
}

/// [`send_args`] on a link of `link_speed` (the bit time of the PFC quanta
/// the sender obeys, and the line rate DCQCN scales its timers to).
pub fn send_args_on_link(
    link_speed: &str,
    to: &str,
    rate: &str,
    bytes: u64,
    dscp: u8,
    qp: u32,
    extra: &[&str],
) -> Vec<String> {
    let mut args: Vec<String> =
        ["send", "--to", to, "--rate", rate, "--link-speed", link_speed].into_iter().map(String::from).collect();
    args.extend([
        "--bytes".into(),
        bytes.to_string(),
        "--dscp".into(),
        dscp.to_string(),
        "--qp".into(),
        qp.to_string(),
    ]);
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

impl FabricHost {
    /// [`FabricHost::start`] with owned arguments.
    pub fn start_owned(ns: &Netns, args: &[String]) -> FabricHost {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        FabricHost::start(ns, &args)
    }
}
