//! Fault injection with `labs fault` on the checked-in `ai-rail` lab (2
//! spines, 4 rail leaves, 4 servers), with traffic running between servers
//! in different groups (so it crosses the spines), measuring recovery:
//!
//! - the leaf uplink the traffic takes goes down at the spine end: time until the leaf's
//!   route to a remote leaf loopback has the one remaining spine, and
//!   packets lost. Bound: 3 s, well under the hold time (9 s): both
//!   switches see their port lose carrier (checked every 250 ms) and drop
//!   the eBGP session over it at once (fast external fallover), so the
//!   bound is port-down detection plus the route update, with room for a
//!   loaded machine;
//! - the link comes back: time until both spines are next hops again.
//!   Bound: 15 s (connect retry 2 s, then OPEN, UPDATEs);
//! - `labs fault kill` of a leaf's `switchd`: the supervisor leaves it
//!   down; `labs fault restart`: time to full service (`labs check`).
//!   Bound: 30 s;
//! - the leaf's `switchd` dies on its own (SIGKILL from outside): the
//!   supervisor restarts it; time to full service. Bound: 30 s.
//!
//! The figures are printed (`cargo test -p fabric-tests --test labs_faults
//! -- --nocapture`) and recorded in docs/benchmarks.md.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fabric_tests::labs::{TestLab, labs_cli, recorded_pids, topology_file};
use fabric_tests::{require_root_and_tools, workspace_binary};
use serde_json::Value;

const LEAF: &str = "leaf-g1-r1";
/// leaf-g2-r1's loopback (switch 5: spines 1-2, then the leaves).
const REMOTE_LOOPBACK: &str = "10.255.0.5/32";
/// server1 (group 1, rail 1) to server3 (group 2, rail 1): leaf-g1-r1,
/// a spine, leaf-g2-r1.
const SOURCE: &str = "server1";
const DESTINATION: &str = "172.16.2.10";
const PING_INTERVAL_MS: u64 = 10;

fn active_next_hops(lab: &TestLab, node: &str, prefix: &str) -> Option<usize> {
    let socket = lab.state().node(node).ok()?.config.as_ref()?.with_extension("sock");
    let out = Command::new(workspace_binary("swcli"))
        .arg("--socket")
        .arg(&socket)
        .args(["show", "ip", "route", "--json"])
        .output()
        .ok()?;
    let routes: Value = serde_json::from_slice(&out.stdout).ok()?;
    let route = routes.as_array()?.iter().find(|r| r["prefix"] == prefix && r["installed"] == true)?;
    Some(route["next_hops"].as_array()?.iter().filter(|h| h["active"] == true).count())
}

/// Time until `LEAF`'s route to the remote loopback has `want` next hops.
#[track_caller]
fn time_until_next_hops(lab: &TestLab, want: usize, bound: Duration) -> Duration {
    let started = Instant::now();
    loop {
        if active_next_hops(lab, LEAF, REMOTE_LOOPBACK) == Some(want) {
            return started.elapsed();
        }
        assert!(started.elapsed() < bound, "{REMOTE_LOOPBACK} on {LEAF} not through {want} spines within {bound:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `ping -i 0.01` from SOURCE to DESTINATION until stopped.
struct Traffic(Child);

impl Traffic {
    fn start(lab: &TestLab) -> Traffic {
        let interval = format!("{}", PING_INTERVAL_MS as f64 / 1000.0);
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &labs::runner::namespace(&lab.name, SOURCE),
                "ping",
                "-q",
                "-i",
                &interval,
                DESTINATION,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("ping");
        Traffic(child)
    }

    /// (sent, received) after SIGINT (ping prints its summary).
    fn stop(self) -> (u64, u64) {
        // SAFETY: signalling the child started above.
        unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGINT) };
        let out = self.0.wait_with_output().expect("ping output");
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().find(|l| l.contains("packets transmitted")).unwrap_or_else(|| panic!("{text}"));
        let number = |word: &str| -> u64 {
            let before = line.split(word).next().unwrap_or("");
            before.split_whitespace().last().and_then(|n| n.parse().ok()).unwrap_or(0)
        };
        (number(" packets transmitted"), number(" received"))
    }
}

/// eth1's received packets on a spine (its port to `LEAF`).
fn spine_rx_from_leaf(lab: &TestLab, spine: &str) -> u64 {
    let socket = lab.state().node(spine).unwrap().config.clone().unwrap().with_extension("sock");
    let out = Command::new(workspace_binary("swcli"))
        .arg("--socket")
        .arg(&socket)
        .args(["show", "interfaces", "--json"])
        .output()
        .expect("swcli");
    let interfaces: Value = serde_json::from_slice(&out.stdout).expect("json");
    let eth1 = interfaces.as_array().unwrap().iter().find(|i| i["name"] == "eth1").expect("eth1");
    eth1["counters"]["rx_packets"].as_u64().unwrap()
}

/// The spine the running traffic crosses (ECMP picked it by hash).
fn spine_carrying_traffic(lab: &TestLab) -> &'static str {
    let before = [spine_rx_from_leaf(lab, "spine1"), spine_rx_from_leaf(lab, "spine2")];
    std::thread::sleep(Duration::from_secs(1));
    let after = [spine_rx_from_leaf(lab, "spine1"), spine_rx_from_leaf(lab, "spine2")];
    if after[0] - before[0] >= after[1] - before[1] { "spine1" } else { "spine2" }
}

fn lost_report(name: &str, elapsed: Duration, (sent, received): (u64, u64)) {
    let lost = sent.saturating_sub(received);
    println!(
        "RECOVERY {name}: {:.2} s; traffic {sent} sent, {lost} lost (~{} ms of traffic at {PING_INTERVAL_MS} ms)",
        elapsed.as_secs_f64(),
        lost * PING_INTERVAL_MS
    );
}

#[test]
fn fault_scenarios_recover_within_bounds() {
    if !require_root_and_tools("fault_scenarios_recover_within_bounds", &["ip", "ping", "tc"]) {
        return;
    }
    let lab = TestLab::deploy(&topology_file("ai-rail"), "flt");
    println!("{}", lab.cli(&["check", "--timeout", "90"]));
    time_until_next_hops(&lab, 2, Duration::from_secs(30));

    // 1. The uplink the traffic takes goes down at the spine end.
    let traffic = Traffic::start(&lab);
    let spine = spine_carrying_traffic(&lab);
    let link = format!("{spine}:eth1");
    lab.cli(&["fault", "link-down", &link]);
    let down = time_until_next_hops(&lab, 1, Duration::from_secs(3));
    std::thread::sleep(Duration::from_millis(500));
    let counts = traffic.stop();
    lost_report(&format!("link down ({link}), routes updated"), down, counts);
    assert!(counts.0 > counts.1, "the link that went down carried no traffic: the test measured nothing");
    // Once the routes moved, the traffic flows again.
    let (ok, out) = lab.exec(SOURCE, &["ping", "-c", "3", "-i", "0.2", "-W", "1", DESTINATION]);
    assert!(ok, "traffic not restored over the other spine: {out}");

    // 2. The link comes back.
    let traffic = Traffic::start(&lab);
    lab.cli(&["fault", "link-up", &link]);
    let up = time_until_next_hops(&lab, 2, Duration::from_secs(15));
    std::thread::sleep(Duration::from_millis(500));
    let counts = traffic.stop();
    lost_report(&format!("link up ({link}), both spines again"), up, counts);

    // netem on the path: the delay shows in the round trip (where the
    // kernel has sch_netem; this machine's does not).
    let netem = labs_cli(&["fault", "netem", &format!("{SOURCE}:eth1"), "--delay", "50", "--name", &lab.name]);
    let stderr = String::from_utf8_lossy(&netem.stderr);
    if stderr.contains("qdisc kind is unknown") {
        println!("SKIP netem: this kernel has no sch_netem ({})", stderr.trim());
    } else {
        assert!(netem.status.success(), "{stderr}");
        let (ok, out) = lab.exec(SOURCE, &["ping", "-c", "1", "-W", "2", DESTINATION]);
        assert!(ok, "{out}");
        let rtt: f64 = out.split("time=").nth(1).and_then(|t| t.split_whitespace().next()?.parse().ok()).unwrap();
        assert!(rtt >= 50.0, "netem delay 50 ms not applied: rtt {rtt} ms");
        lab.cli(&["fault", "netem", &format!("{SOURCE}:eth1"), "--delay", "0", "--loss", "0"]);
    }

    // 3. Kill: the supervisor leaves the node down.
    lab.cli(&["fault", "kill", LEAF]);
    std::thread::sleep(Duration::from_millis(1500));
    let table = lab.cli(&["inspect"]);
    let line = table.lines().find(|l| l.contains(LEAF)).unwrap();
    assert!(line.contains("killed"), "{line}");
    let started = Instant::now();
    lab.cli(&["fault", "restart", LEAF]);
    let report = lab.cli(&["check", "--timeout", "30"]);
    let restart = started.elapsed();
    println!("RECOVERY switchd restart ({LEAF}), full service: {:.2} s ({})", restart.as_secs_f64(), report.trim());
    assert!(restart < Duration::from_secs(30));

    // 4. A crash: the supervisor restarts the node.
    let pid = lab.state().node(LEAF).unwrap().pid.unwrap();
    let started = Instant::now();
    // SAFETY: killing the lab's own switchd.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    let mut restarted = false;
    while started.elapsed() < Duration::from_secs(10) {
        if lab.state().node(LEAF).unwrap().pid.is_some_and(|p| p != pid) {
            restarted = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(restarted, "the supervisor did not restart {LEAF}");
    let report = lab.cli(&["check", "--timeout", "30"]);
    let crash = started.elapsed();
    println!(
        "RECOVERY switchd crash ({LEAF}), supervisor restart to full service: {:.2} s ({})",
        crash.as_secs_f64(),
        report.trim()
    );
    assert!(crash < Duration::from_secs(30));

    lab.destroy_and_check(&recorded_pids(&lab.state()));
}
