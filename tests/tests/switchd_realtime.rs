//! `forwarding: {realtime_priority: N}`: the forwarding thread runs at
//! `SCHED_FIFO` N, never spins (an idle switch costs about nothing even
//! at real-time priority), follows commits, and a kernel that refuses is
//! logged and counted in `show backend` and the metrics.
//!
//! ```text
//!  [h1] 10.1.0.2 -- eth1 [switch]     (qos: the traffic manager's timers run too)
//! ```

use std::time::Duration;

use fabric_tests::metrics::{Scrape, parser_present};
use fabric_tests::{Netns, Switchd, poll_until, require_root_and_tools, veth};

/// The switch's config with `forwarding` (YAML) appended.
fn config(name: &str, forwarding: &str, metrics_port: u16) -> String {
    format!(
        "name: {name}\nports:\n  - {{name: eth1, mode: routed, addresses: [10.1.0.1/24], speed: 100M, cable-length: 5}}\n\
         qos: {{preset: roce, pfc: {{priorities: [3, 4], response-ns: 20000000}}}}\n\
         metrics: {{listen: 127.0.0.1:{metrics_port}}}\n{forwarding}"
    )
}

/// The forwarding thread of `pid`: its task id.
fn forwarding_tid(pid: u32) -> u32 {
    poll_until(Duration::from_secs(5), Duration::from_millis(50), || {
        std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten().find_map(|task| {
            let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
            (comm.trim() == "forwarding").then(|| task.file_name().to_str()?.parse().ok()).flatten()
        })
    })
    .expect("a thread named forwarding")
}

/// `/proc/PID/task/TID/stat` fields, 1-based as proc(5) numbers them.
fn stat(pid: u32, tid: u32) -> Vec<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).expect("stat");
    // After the command's closing parenthesis: field 3 on.
    let rest = &text[text.rfind(')').expect("comm") + 2..];
    let mut fields = vec![0, 0];
    fields.extend(rest.split_whitespace().map(|f| f.parse::<i64>().map_or(0, |v| v as u64)));
    fields.insert(0, 0);
    fields
}

/// (policy, rt_priority) of the thread: fields 41 and 40.
fn policy(pid: u32, tid: u32) -> (u64, u64) {
    let fields = stat(pid, tid);
    (fields[41], fields[40])
}

/// CPU time of the thread in clock ticks (utime + stime, fields 14-15).
fn cpu_ticks(pid: u32, tid: u32) -> u64 {
    let fields = stat(pid, tid);
    fields[14] + fields[15]
}

fn backend_detail(switchd: &Switchd, key: &str) -> String {
    let backend = switchd.show_json("backend");
    let details = backend["details"].as_array().cloned().unwrap_or_default();
    details
        .iter()
        .find(|pair| pair[0] == key)
        .and_then(|pair| pair[1].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no {key} in show backend: {backend}"))
}

#[test]
fn a_realtime_forwarding_thread_idles_at_no_cost_and_follows_commits() {
    if !require_root_and_tools("switchd_realtime", &["ip", "ping"]) || !parser_present("switchd_realtime") {
        return;
    }
    let sw = Netns::new("rts");
    let h1 = Netns::new("rth");
    veth(&h1, "eth1", &sw, "eth1");
    h1.host_setup("eth1", "10.1.0.2/24", Some("10.1.0.1"));
    let switchd = Switchd::start(&sw, &config("rt", "forwarding: {realtime_priority: 10}\n", 9431));
    assert!(h1.ping_until("10.1.0.1", Duration::from_secs(10)), "forwarding works");
    let pid = switchd.process.id();
    let tid = forwarding_tid(pid);
    assert_eq!(policy(pid, tid), (1, 10), "SCHED_FIFO (1) at priority 10");
    assert_eq!(backend_detail(&switchd, "forwarding_scheduling"), "SCHED_FIFO priority 10");
    assert_eq!(backend_detail(&switchd, "forwarding_realtime_refusals"), "0");

    // Idle: the thread blocks in epoll_wait and on its timer; it must not
    // spin (at real-time priority a spinning thread takes a whole CPU).
    let ticks_per_sec = 100.0; // USER_HZ
    let (t0, c0) = (std::time::Instant::now(), cpu_ticks(pid, tid));
    std::thread::sleep(Duration::from_secs(3));
    let used = (cpu_ticks(pid, tid) - c0) as f64 / ticks_per_sec / t0.elapsed().as_secs_f64();
    eprintln!("idle forwarding thread at SCHED_FIFO 10: {:.2}% of a CPU over 3 s", used * 100.0);
    assert!(used < 0.05, "an idle real-time forwarding thread used {:.1}% of a CPU", used * 100.0);
    let wakeups: u64 = backend_detail(&switchd, "forwarding_wakeups_timed").parse().unwrap();
    assert!(wakeups > 100, "it woke on its timers ({wakeups} timed wake-ups)");

    // The rx ring's wait, shown per port and as a histogram: the pings'
    // frames were read (reads counted) after a wait under a second.
    let eth1 = switchd.show_json("interfaces eth1");
    let eth1 = eth1.as_array().and_then(|a| a.first()).cloned().unwrap_or(eth1);
    let wait = &eth1["rx_ring_wait"];
    let reads = wait["reads"].as_u64().unwrap_or_else(|| panic!("no rx_ring_wait in {eth1}"));
    assert!(reads > 0 && wait["over_1s"] == 0, "{wait}");
    assert!(wait["max_us"].as_u64().unwrap() >= wait["mean_us"].as_u64().unwrap(), "{wait}");
    let scrape = Scrape::get(&sw, "127.0.0.1:9431");
    let port = [("port", "eth1")];
    let counted = scrape.value("switch_port_rx_ring_wait_seconds_count", &port);
    assert!(counted >= reads as f64, "the histogram counts the reads too: {counted} < {reads}");
    assert!(scrape.value("switch_port_rx_ring_wait_seconds_bucket", &[("port", "eth1"), ("le", "+Inf")]) == counted);
    assert_eq!(scrape.value("switch_forwarding_realtime_priority", &[]), 10.0);
    assert_eq!(scrape.value("switch_forwarding_realtime_refused_total", &[]), 0.0);
    assert!(scrape.find("switch_forwarding_late_wakeups_total", &[("over", "10ms")]).is_some());

    // Out of range: refused naming the field; running unchanged.
    let generation = switchd.generation();
    let (code, text) = switchd.swcli_script("configure\nset forwarding realtime_priority 150\ncommit\nabort\n");
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("forwarding.realtime_priority"), "the field is named:\n{text}");
    assert_eq!(switchd.generation(), generation);
    // Removed by a commit: back to SCHED_OTHER at nice -10; set again: FIFO.
    let (code, text) = switchd.swcli_script("configure\ndelete forwarding\ncommit\n");
    assert_eq!(code, 0, "{text}");
    let other =
        poll_until(Duration::from_secs(5), Duration::from_millis(50), || (policy(pid, tid).0 == 0).then_some(()));
    assert!(other.is_some(), "SCHED_OTHER after the commit: {:?}", policy(pid, tid));
    assert_eq!(stat(pid, tid)[19] as i64 as i32, -10, "nice -10");
    let (code, text) = switchd.swcli_script("configure\nset forwarding realtime_priority 20\ncommit\n");
    assert_eq!(code, 0, "{text}");
    let fifo =
        poll_until(Duration::from_secs(5), Duration::from_millis(50), || (policy(pid, tid) == (1, 20)).then_some(()));
    assert!(fifo.is_some(), "SCHED_FIFO 20 after the commit: {:?}", policy(pid, tid));
}

#[test]
fn a_kernel_refusing_realtime_is_logged_counted_and_forwarding_goes_on() {
    if !require_root_and_tools("switchd_realtime", &["ip", "ping", "setpriv"]) || !parser_present("switchd_realtime") {
        return;
    }
    let sw = Netns::new("rtr");
    let h1 = Netns::new("rtrh");
    veth(&h1, "eth1", &sw, "eth1");
    h1.host_setup("eth1", "10.1.0.2/24", Some("10.1.0.1"));
    // Without CAP_SYS_NICE (and RLIMIT_RTPRIO 0) the kernel says EPERM.
    let mut switchd = Switchd::start_under(
        &sw,
        &config("rtr", "forwarding: {realtime_priority: 10}\n", 9432),
        &["setpriv", "--bounding-set", "-sys_nice", "--inh-caps", "-sys_nice"],
    );
    assert!(h1.ping_until("10.1.0.1", Duration::from_secs(10)), "forwarding works at SCHED_OTHER");
    let pid = switchd.process.id();
    assert_eq!(policy(pid, forwarding_tid(pid)).0, 0, "SCHED_OTHER");
    let shown = backend_detail(&switchd, "forwarding_scheduling");
    assert!(shown.contains("SCHED_FIFO priority 10 refused") && shown.contains("not permitted"), "{shown}");
    assert_eq!(backend_detail(&switchd, "forwarding_realtime_refusals"), "1");
    let scrape = Scrape::get(&sw, "127.0.0.1:9432");
    assert_eq!(scrape.value("switch_forwarding_realtime_priority", &[]), 0.0);
    assert_eq!(scrape.value("switch_forwarding_realtime_refused_total", &[]), 1.0);
    let out = switchd.stop().expect("switchd ran");
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(log.contains("the kernel refused SCHED_FIFO"), "{log}");
}
