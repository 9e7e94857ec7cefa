//! The measurement behind `scripts/bench-kernel-fib` (ignored by default:
//! run with `--ignored`): the same IPv4 table, learned over BGP from one
//! GoBGP peer, installed into a namespace's kernel FIB once by FRR (bgpd +
//! zebra) and once by our `switchd` with `backend: kernel` (the speaker's
//! best paths through the shim's kernel backend over rtnetlink). For each
//! it prints routes per second into the kernel FIB.
//!
//! ```text
//!   [feeder: gobgpd] eth1 ---- eth1 [frr: zebra + bgpd]        kernel FIB of ns "frr"
//!                    eth2 ---- eth1 [ours: switchd, kernel]    kernel FIB of ns "ours"
//! ```
//!
//! The table (consecutive /24s from 11.0.0.0, 1000 AS paths, one next hop:
//! the feeder) is loaded into GoBGP from an MRT file before either receiver
//! starts; the receivers run one after the other, each alone, with the
//! feeder idle in between. The FIB is counted from
//! `/proc/<pid>/net/fib_triestat` (the namespace's main table, read through
//! a process inside it: a count kept by the kernel, cheap to poll, unlike a
//! dump of a million routes), and checked once at the end with `ip -4 route
//! show proto <ours>` counted line by line.
//!
//! Environment: `KERNEL_FIB_BENCH_PREFIXES` (default 100000),
//! `KERNEL_FIB_BENCH_ONLY` (`frr` or `ours`), `KERNEL_FIB_BENCH_OUT` (a file
//! the results are appended to as one JSON line per receiver),
//! `SWITCHD_BIN` (the switchd to measure; the script passes a release
//! build), `KERNEL_FIB_BENCH_TIMEOUT` (seconds).

use std::io::Write;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use fabric_tests::frr::{Afi, Frr, FrrConfig, FrrNeighbor, frr_available, proc_status_kib};
use fabric_tests::gobgp::{Gobgp, GobgpConfig, GobgpNeighbor, MrtTable, gobgp_available};
use fabric_tests::{Netns, ProcessGuard, TempDir, swcli_json, veth, workspace_binary};

const FEEDER_AS: u32 = 65100;
const FRR_AS: u32 = 65001;
const OURS_AS: u32 = 65003;
/// The routing protocol number FRR's zebra gives BGP routes (`RTPROT_BGP`).
const RTPROT_BGP: &str = "186";
/// Ours (the kernel backend's default `KernelConfig::protocol`).
const RTPROT_OURS: &str = "196";

/// What one receiver did.
#[derive(Debug)]
struct FibResult {
    receiver: &'static str,
    prefixes: u64,
    /// Session Established -> first prefix received (the feeder's walk of
    /// its table for a new peer).
    first_received: f64,
    /// Session Established -> first of the table in the FIB.
    first_in_fib: f64,
    /// Session Established -> the whole table in the FIB.
    all_in_fib: f64,
    /// Peak resident memory of the receiver's processes, summed.
    peak_kib: u64,
    /// Routes of the receiver's protocol in `ip -4 route` at the end.
    listed: u64,
}

impl FibResult {
    /// Routes per second into the FIB, from the first prefix received to
    /// the last route installed: the receiver's own pace, without the
    /// feeder's start-up.
    fn rate(&self) -> f64 {
        self.prefixes as f64 / (self.all_in_fib - self.first_received)
    }

    fn print(&self) {
        println!(
            "RESULT {:<5} prefixes={} fib_rate={:.0} routes/s (first received {:.2} s, first in FIB {:.2} s, all in FIB {:.2} s after Established) peak_rss={:.1} MiB listed={}",
            self.receiver,
            self.prefixes,
            self.rate(),
            self.first_received,
            self.first_in_fib,
            self.all_in_fib,
            self.peak_kib as f64 / 1024.0,
            self.listed
        );
        if let Ok(path) = std::env::var("KERNEL_FIB_BENCH_OUT") {
            let line = serde_json::json!({
                "receiver": self.receiver,
                "prefixes": self.prefixes,
                "fib_rate": self.rate(),
                "first_received_seconds": self.first_received,
                "first_in_fib_seconds": self.first_in_fib,
                "all_in_fib_seconds": self.all_in_fib,
                "peak_kib": self.peak_kib,
                "listed": self.listed,
            });
            let mut f =
                std::fs::OpenOptions::new().create(true).append(true).open(path).expect("open KERNEL_FIB_BENCH_OUT");
            writeln!(f, "{line}").expect("write KERNEL_FIB_BENCH_OUT");
        }
    }
}

/// The number of prefixes in the main table of the namespace `pid` runs
/// in (`Main:` of `/proc/<pid>/net/fib_triestat`; on a kernel without
/// policy-routing rules the local table shares it).
fn fib_prefixes(pid: u32) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/net/fib_triestat")).unwrap_or_default();
    let main = text.split("Main:").nth(1).unwrap_or_default();
    main.lines().find_map(|l| l.trim().strip_prefix("Prefixes:")?.trim().parse().ok()).unwrap_or(0)
}

/// CPU seconds (user + system) used so far by `pid`.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<f64>().ok()).sum();
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// Waits until `pid` uses under 5% of a CPU over a second, so the receiver
/// measured next does not pay for the feeder's garbage collection.
fn wait_idle(what: &str, pid: u32, timeout: Duration) {
    let start = Instant::now();
    let mut last = cpu_seconds(pid);
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let now = cpu_seconds(pid);
        if now - last < 0.05 {
            println!("{what} idle after {:.1}s", start.elapsed().as_secs_f64());
            return;
        }
        last = now;
        if start.elapsed() > timeout {
            println!("{what} still busy after {timeout:?}; going on");
            return;
        }
    }
}

/// Polls every `every` until `done` returns Some; panics after `timeout`.
fn wait_for<T>(what: &str, timeout: Duration, every: Duration, mut done: impl FnMut() -> Option<T>) -> (Instant, T) {
    let start = Instant::now();
    loop {
        if let Some(value) = done() {
            return (Instant::now(), value);
        }
        assert!(start.elapsed() < timeout, "{what} not reached within {timeout:?}");
        std::thread::sleep(every);
    }
}

/// Timestamps of one receiver's load: the first prefix received (from
/// `received`), the first route and the whole table in the FIB of the
/// namespace `fib_pid` runs in. Prints progress every five seconds.
struct Progress {
    first_received: Instant,
    first_in_fib: Instant,
    all_in_fib: Instant,
}

/// How often the FIB count is read: fib_triestat walks the trie (a few
/// ms for a million routes), so this costs the receiver little.
const FIB_POLL: Duration = Duration::from_millis(100);
/// How often the receiver's own count of received prefixes is read.
const RECEIVED_POLL: Duration = Duration::from_millis(250);

fn watch(
    what: &str,
    count: u64,
    baseline: u64,
    fib_pid: u32,
    timeout: Duration,
    mut received: impl FnMut() -> u64,
) -> Progress {
    let start = Instant::now();
    let mut first_received = None;
    let mut first_in_fib = None;
    let mut next_report = start + Duration::from_secs(5);
    let mut next_received_poll = start;
    loop {
        let now = Instant::now();
        let in_fib = fib_prefixes(fib_pid).saturating_sub(baseline);
        if first_in_fib.is_none() && in_fib > 0 {
            first_in_fib = Some(now);
        }
        // A route in the FIB was received first. Reading the receiver's
        // count costs it (vtysh runs on bgpd's main thread), so only every
        // RECEIVED_POLL and only until its first prefix.
        if first_received.is_none() && (in_fib > 0 || (now >= next_received_poll && received() > 0)) {
            first_received = Some(now);
        }
        if now >= next_received_poll {
            next_received_poll = now + RECEIVED_POLL;
        }
        if in_fib >= count {
            return Progress {
                first_received: first_received.unwrap_or(now),
                first_in_fib: first_in_fib.unwrap_or(now),
                all_in_fib: now,
            };
        }
        if now >= next_report {
            println!("  {what}: {in_fib} of {count} in the FIB after {:.0}s", start.elapsed().as_secs_f64());
            next_report += Duration::from_secs(5);
        }
        assert!(start.elapsed() < timeout, "{what}: {in_fib} of {count} in the FIB after {timeout:?}");
        std::thread::sleep(FIB_POLL);
    }
}

/// The FIB's prefixes that are not the receiver's routes, taken when its
/// session is up (the process is in its namespace and has put its addresses
/// in place by then): the count less any route of `protocol` already there.
fn fib_baseline(ns: &Netns, fib_pid: u32, protocol: &str) -> u64 {
    let fib = fib_prefixes(fib_pid);
    fib.saturating_sub(listed(ns, protocol))
}

/// `ip -4 route show proto <protocol>` in `ns`, counted, less connected
/// routes (`scope link`: the kernel backend marks the routes of the
/// switch's subnets as its own too).
fn listed(ns: &Netns, protocol: &str) -> u64 {
    let out = ns
        .command("ip")
        .args(["-4", "-o", "route", "show", "proto", protocol])
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run ip route");
    String::from_utf8_lossy(&out.stdout).lines().filter(|line| !line.contains("scope link")).count() as u64
}

fn bench_frr(ns: &Netns, feeder_addr: &str, count: u64, timeout: Duration) -> FibResult {
    let mut neighbor = FrrNeighbor::new(feeder_addr, FEEDER_AS);
    neighbor.families = vec![Afi::Ipv4];
    neighbor.timers = Some((30, 90));
    // As in bgp_bench.rs: our speaker sends nothing back to the peer a
    // route came from, so bgpd is spared that too.
    neighbor.extra = vec![format!("neighbor {feeder_addr} sender-as-path-loop-detection")];
    let config = FrrConfig::new(FRR_AS, "10.77.0.11").neighbor(neighbor);
    let frr = Frr::start_with_zebra(ns, &config.render());
    let zebra = frr.zebra_pid().expect("zebra runs");
    let (established, ()) = wait_for("FRR: session Established", timeout, Duration::from_millis(20), || {
        (frr.neighbor_state(feeder_addr).as_deref() == Some("Established")).then_some(())
    });
    let baseline = fib_baseline(ns, zebra, RTPROT_BGP);
    // vtysh runs on bgpd's main thread: polled only until the first prefix.
    let progress = watch("FRR", count, baseline, zebra, timeout, || frr.prefixes_received(Afi::Ipv4, feeder_addr));
    let peak_kib = frr.vm_hwm_kib().unwrap_or(0) + proc_status_kib(zebra, "VmHWM").unwrap_or(0);
    let listed = listed(ns, RTPROT_BGP);
    result("frr", count, established, &progress, peak_kib, listed)
}

fn result(
    receiver: &'static str,
    prefixes: u64,
    established: Instant,
    progress: &Progress,
    peak_kib: u64,
    listed: u64,
) -> FibResult {
    let since = |t: Instant| t.saturating_duration_since(established).as_secs_f64();
    FibResult {
        receiver,
        prefixes,
        first_received: since(progress.first_received),
        first_in_fib: since(progress.first_in_fib),
        all_in_fib: since(progress.all_in_fib),
        peak_kib,
        listed,
    }
}

/// `swcli show bgp summary --json` of the switchd listening on `socket`.
fn bgp_summary(swcli: &std::path::Path, socket: &std::path::Path) -> serde_json::Value {
    let out = std::process::Command::new(swcli)
        .arg("--socket")
        .arg(socket)
        .args(["show", "bgp", "summary", "--json"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run swcli");
    if !out.status.success() {
        return serde_json::Value::Null;
    }
    swcli_json(&String::from_utf8_lossy(&out.stdout))
}

fn bench_ours(ns: &Netns, feeder_addr: &str, count: u64, timeout: Duration) -> FibResult {
    let switchd =
        std::env::var_os("SWITCHD_BIN").map(std::path::PathBuf::from).unwrap_or_else(|| workspace_binary("switchd"));
    let swcli = switchd.with_file_name("swcli");
    let swcli = if swcli.is_file() { swcli } else { workspace_binary("swcli") };
    let dir = TempDir::new("kfib-ours");
    let config = dir.path().join("switchd.yaml");
    let socket = dir.path().join("switchd.sock");
    std::fs::write(
        &config,
        format!(
            "name: kfib
backend: kernel
lldp: {{ enabled: false }}
ports:
  - {{ name: eth1, mode: routed, addresses: [10.77.2.2/30] }}
bgp:
  asn: {OURS_AS}
  router_id: 10.77.0.13
  neighbors:
    - {{ address: {feeder_addr}, remote_as: {FEEDER_AS}, families: [ipv4-unicast], hold_time: 90 }}
management:
  socket: {}
",
            socket.display()
        ),
    )
    .expect("write config");
    let log = std::fs::File::create(dir.path().join("switchd.log")).expect("create log");
    let mut cmd = ns.command(switchd.to_str().expect("utf-8 path"));
    cmd.arg("run")
        .arg("--config")
        .arg(&config)
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().expect("dup log"))
        .stderr(log);
    let process = ProcessGuard::spawn("switchd", cmd);
    let pid = process.id();
    let summary = || bgp_summary(&swcli, &socket);
    let (established, ()) = wait_for("ours: session Established", timeout, Duration::from_millis(20), || {
        (summary()["peers"][0]["state"] == "Established").then_some(())
    });
    let baseline = fib_baseline(ns, pid, RTPROT_OURS);
    let progress = watch("ours", count, baseline, pid, timeout, || {
        summary()["peers"][0]["prefixes_received"].as_u64().unwrap_or(0)
    });
    let peak_kib = proc_status_kib(pid, "VmHWM").unwrap_or(0);
    let listed = listed(ns, RTPROT_OURS);
    let summary = summary();
    println!("  ours: loc_rib_routes {} install_failures {}", summary["loc_rib_routes"], summary["install_failures"]);
    drop(process);
    result("ours", count, established, &progress, peak_kib, listed)
}

#[test]
#[ignore = "benchmark: run through scripts/bench-kernel-fib"]
fn kernel_fib_load() {
    if !frr_available("kernel_fib_load")
        || !gobgp_available("kernel_fib_load")
        || !std::path::Path::new(fabric_tests::frr::ZEBRA).is_file()
    {
        return;
    }
    let env = |name: &str| std::env::var(name).ok();
    let count: u32 = env("KERNEL_FIB_BENCH_PREFIXES").and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let only = env("KERNEL_FIB_BENCH_ONLY");
    let timeout = Duration::from_secs(env("KERNEL_FIB_BENCH_TIMEOUT").and_then(|v| v.parse().ok()).unwrap_or(600));

    let feeder_ns = Netns::new("kfg");
    let frr_ns = Netns::new("kff");
    let ours_ns = Netns::new("kfo");
    veth(&feeder_ns, "eth1", &frr_ns, "eth1");
    veth(&feeder_ns, "eth2", &ours_ns, "eth1");
    feeder_ns.ip(&["addr", "add", "10.77.1.1/30", "dev", "eth1"]);
    frr_ns.ip(&["addr", "add", "10.77.1.2/30", "dev", "eth1"]);
    feeder_ns.ip(&["addr", "add", "10.77.2.1/30", "dev", "eth2"]);
    // Ours: switchd puts its address on the port itself.

    let dir = TempDir::new("kfib");
    let mrt = dir.path().join("table.mrt");
    let t = Instant::now();
    MrtTable { count, attribute_sets: 1000, origin_as: FEEDER_AS, nexthop: Ipv4Addr::new(10, 77, 0, 1) }
        .write(&mrt, 20_000)
        .expect("write MRT");
    println!("generated {count} prefixes as MRT in {:.2}s", t.elapsed().as_secs_f64());

    let mut to_frr = GobgpNeighbor::new("10.77.1.2", FRR_AS);
    to_frr.families = vec![Afi::Ipv4];
    to_frr.timers = (30, 90);
    let mut to_ours = GobgpNeighbor::new("10.77.2.2", OURS_AS);
    to_ours.families = vec![Afi::Ipv4];
    to_ours.timers = (30, 90);
    let mut feeder_config = GobgpConfig::new(FEEDER_AS, "10.77.0.1").neighbor(to_frr).neighbor(to_ours);
    // Only the feeder connects: it is the one that knows when it is loaded.
    feeder_config.listen_port = -1;
    feeder_config.log_level = "info";
    // The receivers install the routes: the next hop must be on their link.
    feeder_config.next_hop_self = true;
    let feeder = Gobgp::start(&feeder_ns, &feeder_config);
    let t = Instant::now();
    feeder.mrt_inject(&mrt, None);
    let injected = fabric_tests::poll_until(Duration::from_secs(10), Duration::from_millis(200), || {
        (feeder.rib_count(Afi::Ipv4) >= u64::from(count)).then_some(())
    });
    assert!(injected.is_some(), "GoBGP holds {} of {count}", feeder.rib_count(Afi::Ipv4));
    println!("GoBGP loaded {count} prefixes (mrt inject) in {:.2}s", t.elapsed().as_secs_f64());

    let mut results = Vec::new();
    if only.as_deref() != Some("ours") {
        wait_idle("GoBGP", feeder.pid(), Duration::from_secs(120));
        let result = bench_frr(&frr_ns, "10.77.1.1", u64::from(count), timeout);
        result.print();
        results.push(result);
    }
    if only.as_deref() != Some("frr") {
        wait_idle("GoBGP", feeder.pid(), Duration::from_secs(120));
        let result = bench_ours(&ours_ns, "10.77.2.1", u64::from(count), timeout);
        result.print();
        results.push(result);
    }
    for result in &results {
        assert!(
            result.listed >= result.prefixes,
            "{}: ip route lists {} of {} routes",
            result.receiver,
            result.listed,
            result.prefixes
        );
    }
}
