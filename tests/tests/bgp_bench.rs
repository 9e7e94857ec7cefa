//! The measurement behind `scripts/bench-bgp` (ignored by default: run with
//! `--ignored`): one GoBGP peer holds a generated table and feeds it, in
//! turn, to FRR's bgpd, to BIRD and to our speaker; for each receiver it
//! prints the seconds from session Established until the whole table is in
//! the Loc-RIB, and the receiver's peak memory (VmHWM).
//!
//! The table is written as an MRT TABLE_DUMP_V2 file (RFC 6396) and loaded
//! into GoBGP with `gobgp mrt inject global` before any receiver starts, so
//! both receivers see the same table dump from an idle sender.
//!
//! Environment: `BGP_BENCH_PREFIXES` (default 100000), `BGP_BENCH_ONLY`
//! (`frr`, `bird` or `ours`, comma-separated, to run only those receivers), `BGP_BENCH_OUT` (a file the
//! results are appended to as one JSON line per receiver).

use std::io::Write;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use fabric_tests::TempDir;
use fabric_tests::bird::{Bird, BirdConfig, BirdNeighbor, bird_available};
use fabric_tests::frr::{Afi, Frr, FrrConfig, FrrNeighbor, frr_available, proc_status_kib};
use fabric_tests::gobgp::{Gobgp, GobgpConfig, GobgpNeighbor, MrtTable, gobgp_available};
use fabric_tests::{Netns, veth};

const FEEDER_AS: u32 = 65100;
const FRR_AS: u32 = 65001;
const BIRD_AS: u32 = 65002;
const OURS_AS: u32 = 65003;
/// What one receiver did.
#[derive(Debug)]
struct LoadResult {
    receiver: &'static str,
    prefixes: u64,
    /// From Established (as the receiver reports it) to the whole table
    /// in the Loc-RIB.
    seconds: f64,
    /// From the receiver's start to the whole table in the Loc-RIB.
    seconds_from_start: f64,
    /// From Established to the first prefix received: the feeder's own
    /// start-up on a new session (GoBGP walks its table before sending).
    first_prefix_seconds: f64,
    idle_rss_kib: u64,
    peak_kib: u64,
}

impl LoadResult {
    fn print(&self) {
        let per_route = (self.peak_kib.saturating_sub(self.idle_rss_kib) * 1024) as f64 / self.prefixes as f64;
        println!(
            "RESULT {:<5} prefixes={} load_seconds={:.2} (first prefix {:.2}, from start {:.2}) peak_rss={:.1} MiB (idle {:.1} MiB) ~{:.0} bytes/route",
            self.receiver,
            self.prefixes,
            self.seconds,
            self.first_prefix_seconds,
            self.seconds_from_start,
            self.peak_kib as f64 / 1024.0,
            self.idle_rss_kib as f64 / 1024.0,
            per_route
        );
        if let Ok(path) = std::env::var("BGP_BENCH_OUT") {
            let line = serde_json::json!({
                "receiver": self.receiver,
                "prefixes": self.prefixes,
                "load_seconds": self.seconds,
                "seconds_from_start": self.seconds_from_start,
                "first_prefix_seconds": self.first_prefix_seconds,
                "idle_rss_kib": self.idle_rss_kib,
                "peak_kib": self.peak_kib,
                "bytes_per_route": per_route,
            });
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).expect("open BGP_BENCH_OUT");
            writeln!(f, "{line}").expect("write BGP_BENCH_OUT");
        }
    }
}

/// Polls `done` every `every` until it holds or `timeout` passes; returns
/// when it held.
fn poll_until(timeout: Duration, every: Duration, mut done: impl FnMut() -> bool) -> Option<Instant> {
    let deadline = Instant::now() + timeout;
    loop {
        if done() {
            return Some(Instant::now());
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(every);
    }
}

/// CPU seconds (user + system) used so far by `pid`.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<f64>().ok()).sum();
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// Waits until `pid` uses under 5% of a CPU over a second (GoBGP keeps
/// working, and collecting garbage, for a while after `mrt inject` returns
/// and after a session ends): the receiver measured next must not pay for it.
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

/// Polls `current` until it reaches `count`, printing progress every five
/// seconds; returns when it did. Panics after `timeout`.
fn poll_count(what: &str, timeout: Duration, every: Duration, count: u64, mut current: impl FnMut() -> u64) -> Instant {
    let start = Instant::now();
    let mut next_report = start + Duration::from_secs(5);
    loop {
        let n = current();
        if n >= count {
            return Instant::now();
        }
        if Instant::now() >= next_report {
            println!("  {what}: {n} of {count} after {:.0}s", start.elapsed().as_secs_f64());
            next_report += Duration::from_secs(5);
        }
        assert!(start.elapsed() < timeout, "{what}: {n} of {count} after {timeout:?}");
        std::thread::sleep(every);
    }
}

fn bench_frr(ns: &Netns, feeder_addr: &str, count: u64, timeout: Duration) -> LoadResult {
    let mut neighbor = FrrNeighbor::new(feeder_addr, FEEDER_AS);
    neighbor.families = vec![Afi::Ipv4];
    neighbor.timers = Some((30, 90));
    // Left alone, bgpd advertises the whole table back to the feeder (eBGP
    // has no split horizon; GoBGP drops it for the AS loop), which doubles
    // its work. Our speaker does not send routes back to the peer they came
    // from, so FRR gets the same courtesy.
    neighbor.extra = vec![format!("neighbor {feeder_addr} sender-as-path-loop-detection")];
    let config = FrrConfig::new(FRR_AS, "10.77.0.11").neighbor(neighbor);
    let started = Instant::now();
    let frr = Frr::start(ns, &config.render());
    let idle_rss_kib = proc_status_kib(frr.pid(), "VmRSS").unwrap_or(0);
    let established = poll_until(timeout, Duration::from_millis(20), || {
        frr.neighbor_state(feeder_addr).as_deref() == Some("Established")
    })
    .expect("FRR: session to the feeder not Established");
    // pfxRcd is cheap; the statistics walk (the Loc-RIB) only at the end.
    // vtysh commands run on bgpd's main thread, the one that processes
    // UPDATEs: polling faster than this measurably slows FRR down (a 20 ms
    // poll delayed its first prefix of a million from ~10 s to 29 s).
    let every = Duration::from_millis(250);
    let first = poll_count("FRR first prefix", timeout, every, 1, || frr.prefixes_received(Afi::Ipv4, feeder_addr));
    poll_count("FRR received", timeout, every, count, || frr.prefixes_received(Afi::Ipv4, feeder_addr));
    let loaded = poll_count("FRR Loc-RIB", timeout, every, count, || frr.rib_count(Afi::Ipv4));
    LoadResult {
        receiver: "frr",
        prefixes: count,
        first_prefix_seconds: (first - established).as_secs_f64(),
        seconds: (loaded - established).as_secs_f64(),
        seconds_from_start: (loaded - started).as_secs_f64(),
        idle_rss_kib,
        peak_kib: frr.vm_hwm_kib().unwrap_or(0),
    }
}

/// BIRD: its routes go into its own table only (no `kernel` protocol), as
/// FRR's bgpd runs without zebra here; nothing is exported back to the
/// feeder. BIRD puts each route in its table as it imports it, so the
/// protocol's `imported` count is the Loc-RIB's.
fn bench_bird(ns: &Netns, feeder_addr: &str, local_addr: &str, count: u64, timeout: Duration) -> LoadResult {
    let mut neighbor = BirdNeighbor::new("feeder", local_addr, feeder_addr, FEEDER_AS);
    neighbor.timers = (30, 90);
    neighbor.export = "none".to_string();
    let config = BirdConfig::new(BIRD_AS, "10.77.0.12").neighbor(neighbor);
    let started = Instant::now();
    let bird = Bird::start(ns, &config.render());
    let idle_rss_kib = proc_status_kib(bird.pid(), "VmRSS").unwrap_or(0);
    let established = poll_until(timeout, Duration::from_millis(20), || bird.established("feeder"))
        .expect("BIRD: session to the feeder not Established");
    // birdc is answered by BIRD's one thread, between UPDATEs: polled as
    // often as FRR is.
    let every = Duration::from_millis(250);
    let first = poll_count("BIRD first prefix", timeout, every, 1, || bird.imported("feeder"));
    let loaded = poll_count("BIRD imported", timeout, every, count, || bird.imported("feeder"));
    let result = LoadResult {
        receiver: "bird",
        prefixes: count,
        first_prefix_seconds: (first - established).as_secs_f64(),
        seconds: (loaded - established).as_secs_f64(),
        seconds_from_start: (loaded - started).as_secs_f64(),
        idle_rss_kib,
        peak_kib: bird.vm_hwm_kib().unwrap_or(0),
    };
    let in_table = bird.route_count("master4");
    println!("  bird: {in_table} networks in table master4");
    assert!(in_table >= count, "BIRD's table holds {in_table} of {count}");
    result
}

/// Our speaker, started from the binary in `$BGP_SPEAKER_BIN` (the script
/// passes a release build) or the test profile's.
fn bench_ours(ns: &Netns, feeder_addr: &str, count: u64, timeout: Duration) -> LoadResult {
    let binary = std::env::var_os("BGP_SPEAKER_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(fabric_tests::bgp_speaker::speaker_binary);
    let dir = TempDir::new("bench-ours");
    let config = dir.path().join("bgp.yaml");
    std::fs::write(
        &config,
        format!(
            "asn: {OURS_AS}\nrouter_id: 10.77.0.13\nneighbors:\n  - {{ address: {feeder_addr}, remote_as: {FEEDER_AS}, families: [ipv4-unicast], hold_time: 90 }}\n"
        ),
    )
    .expect("write config");
    let status_path = dir.path().join("status.json");
    // The status writer only counts big tables (no copy), so it can run
    // often: its interval is the resolution of the measurement.
    let interval_ms = 200;
    let log = std::fs::File::create(dir.path().join("speaker.log")).expect("create log");
    let mut cmd = ns.command(binary.to_str().expect("utf-8 path"));
    cmd.arg("--config")
        .arg(&config)
        .arg("--status")
        .arg(&status_path)
        .args(["--interval-ms", &interval_ms.to_string()])
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().expect("dup log"))
        .stderr(log);
    let started = Instant::now();
    let process = fabric_tests::ProcessGuard::spawn("bgp-speaker", cmd);
    let pid = process.id();
    let status = || -> serde_json::Value {
        std::fs::read_to_string(&status_path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
    };
    poll_until(Duration::from_secs(10), Duration::from_millis(10), || status_path.exists())
        .expect("bgp-speaker wrote no status");
    let idle_rss_kib = proc_status_kib(pid, "VmRSS").unwrap_or(0);
    let established =
        poll_until(timeout, Duration::from_millis(10), || status()["neighbors"][0]["state"] == "Established")
            .unwrap_or_else(|| panic!("ours: session to the feeder not Established: {}", status()));
    let first = poll_count("ours first prefix", timeout, Duration::from_millis(10), 1, || {
        status()["loc_rib"].as_u64().unwrap_or(0)
    });
    let loaded = poll_count("ours Loc-RIB", timeout, Duration::from_millis(10), count, || {
        status()["loc_rib"].as_u64().unwrap_or(0)
    });
    let result = LoadResult {
        receiver: "ours",
        prefixes: count,
        first_prefix_seconds: (first - established).as_secs_f64(),
        seconds: (loaded - established).as_secs_f64(),
        seconds_from_start: (loaded - started).as_secs_f64(),
        idle_rss_kib,
        peak_kib: proc_status_kib(pid, "VmHWM").unwrap_or(0),
    };
    println!("  ours: status interval {interval_ms} ms; fib_routes {}", status()["fib_routes"]);
    drop(process);
    result
}

#[test]
#[ignore = "benchmark: run through scripts/bench-bgp"]
fn bgp_table_load() {
    if !frr_available("bgp_table_load") || !gobgp_available("bgp_table_load") || !bird_available("bgp_table_load") {
        return;
    }
    let count: u32 = std::env::var("BGP_BENCH_PREFIXES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let only = std::env::var("BGP_BENCH_ONLY").ok();
    let runs = |receiver: &str| only.as_deref().is_none_or(|only| only.split(',').any(|o| o == receiver));
    let timeout =
        Duration::from_secs(std::env::var("BGP_BENCH_TIMEOUT").ok().and_then(|v| v.parse().ok()).unwrap_or(600));

    let feeder_ns = Netns::new("bbg");
    let frr_ns = Netns::new("bbf");
    let ours_ns = Netns::new("bbo");
    let bird_ns = Netns::new("bbb");
    veth(&feeder_ns, "eth1", &frr_ns, "eth1");
    veth(&feeder_ns, "eth2", &ours_ns, "eth1");
    veth(&feeder_ns, "eth3", &bird_ns, "eth1");
    feeder_ns.ip(&["addr", "add", "10.77.1.1/30", "dev", "eth1"]);
    frr_ns.ip(&["addr", "add", "10.77.1.2/30", "dev", "eth1"]);
    feeder_ns.ip(&["addr", "add", "10.77.2.1/30", "dev", "eth2"]);
    ours_ns.ip(&["addr", "add", "10.77.2.2/30", "dev", "eth1"]);
    feeder_ns.ip(&["addr", "add", "10.77.3.1/30", "dev", "eth3"]);
    bird_ns.ip(&["addr", "add", "10.77.3.2/30", "dev", "eth1"]);

    let dir = TempDir::new("bench");
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
    let mut to_bird = GobgpNeighbor::new("10.77.3.2", BIRD_AS);
    to_bird.families = vec![Afi::Ipv4];
    to_bird.timers = (30, 90);
    let mut feeder_config =
        GobgpConfig::new(FEEDER_AS, "10.77.0.1").neighbor(to_frr).neighbor(to_ours).neighbor(to_bird);
    // Only the feeder connects: it is the one that knows when it is loaded.
    feeder_config.listen_port = -1;
    feeder_config.log_level = "info";
    let feeder = Gobgp::start(&feeder_ns, &feeder_config);
    let t = Instant::now();
    feeder.mrt_inject(&mrt, None);
    let injected =
        poll_until(Duration::from_secs(10), Duration::from_millis(200), || feeder.rib_count(Afi::Ipv4) >= count as u64);
    assert!(injected.is_some(), "GoBGP holds {} of {count} (padding too short?)", feeder.rib_count(Afi::Ipv4));
    println!("GoBGP loaded {count} prefixes (mrt inject) in {:.2}s", t.elapsed().as_secs_f64());

    if runs("frr") {
        wait_idle("GoBGP", feeder.pid(), Duration::from_secs(120));
        let result = bench_frr(&frr_ns, "10.77.1.1", count as u64, timeout);
        result.print();
    }
    if runs("bird") {
        wait_idle("GoBGP", feeder.pid(), Duration::from_secs(120));
        let result = bench_bird(&bird_ns, "10.77.3.1", "10.77.3.2", count as u64, timeout);
        result.print();
    }
    if runs("ours") {
        wait_idle("GoBGP", feeder.pid(), Duration::from_secs(120));
        let result = bench_ours(&ours_ns, "10.77.2.1", count as u64, timeout);
        result.print();
    }
}
