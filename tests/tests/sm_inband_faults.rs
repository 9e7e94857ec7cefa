//! The subnet manager embedded in `switchd` when the fabric breaks: a link
//! taken down, and the master SM killed. Three switches in a triangle, so
//! that every pair of switches has a second path, and one HCA-like
//! endpoint (`fabric-host ib`) on each:
//!
//! ```text
//! ha -- (eth1) s1 (eth2) -- (eth1) s2 (eth2) -- hb
//!        (eth3)                  (eth3)
//!           \                    /
//!          (eth1) s3 (eth3) ----'
//!                 (eth2) -- hc
//! ```
//!
//! 1. `ip link set eth3 down` on s2 (the s2-s3 link): the switches send
//!    trap 128, the SM sweeps, rewrites the LFT blocks of s2 and s3 only
//!    (s1's routes do not change), reports the time from the change to the
//!    new LFTs in `show ib sm`, and every pair pings again (hb and hc
//!    through s1).
//! 2. SMs in s1 (priority 10) and s2 (priority 5): s1 master, s2 standby
//!    polling it. s1's switchd is killed (SIGKILL): s2 takes over after its
//!    polls go unanswered, keeps every LID, and hb and hc ping. s1 comes
//!    back: it finds s2 master and stands by, s2 hands over (SMInfo
//!    HANDOVER), s1 acknowledges (ACKNOWLEDGE) and masters the subnet, and
//!    every pair pings.
//!
//! Needs root and `ip`; skipped otherwise (a failure under CI=true).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use fabric_tests::{Netns, ProcessGuard, Switchd, TempDir, poll_until, require_root_and_tools, veth, workspace_binary};

const SWEEP_MS: u64 = 500;

/// Fields drop in order: the hosts' processes before their namespaces.
struct Triangle {
    hosts: Vec<Host>,
    _host_ns: Vec<Netns>,
    s1_ns: Netns,
    s2_ns: Netns,
    s3_ns: Netns,
    _dir: TempDir,
}

/// A `fabric-host ib` endpoint writing its JSON lines to a file, pinging
/// the LIDs of its ping file whenever the file changes.
struct Host {
    name: &'static str,
    ping_file: PathBuf,
    out_file: PathBuf,
    /// Times the ping file was written (fabric-host numbers its rounds so).
    rounds: std::cell::Cell<u32>,
    _process: ProcessGuard,
}

impl Host {
    fn events(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(&self.out_file).unwrap_or_default();
        text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
    }

    /// Pings `lids` (the test's round `tag`), waits for every summary and
    /// returns the replies per LID.
    fn ping(&self, tag: u32, lids: &[u64]) -> BTreeMap<u64, u64> {
        let list: Vec<String> = lids.iter().map(u64::to_string).collect();
        std::fs::write(&self.ping_file, format!("round-{tag} {}\n", list.join(" "))).unwrap();
        let round = self.rounds.get() + 1;
        self.rounds.set(round);
        let done = poll_until(Duration::from_secs(30), Duration::from_millis(200), || {
            let summaries: BTreeMap<u64, u64> = self
                .events()
                .iter()
                .filter(|e| e["event"] == "ping_summary" && e["round"] == round)
                .map(|e| (e["to"].as_u64().unwrap(), e["received"].as_u64().unwrap()))
                .collect();
            (summaries.len() == lids.len()).then_some(summaries)
        });
        done.unwrap_or_else(|| panic!("{}: round {tag} unfinished: {:?}", self.name, self.events()))
    }
}

fn switch_yaml(name: &str, guid: u32, sm: Option<u8>) -> String {
    let mut yaml = format!(
        "name: {name}\nports:\n  - {{ name: eth1, mode: ib, data_vls: 2 }}\n  - {{ name: eth2, mode: ib, data_vls: 2 }}\n  - {{ name: eth3, mode: ib, data_vls: 2 }}\nib:\n  guid: {guid:#x}\n"
    );
    if let Some(priority) = sm {
        yaml.push_str(&format!("  sm: {{ priority: {priority}, engine: [minhop], sweep_interval_ms: {SWEEP_MS} }}\n"));
    }
    yaml
}

fn triangle() -> Triangle {
    let (s1_ns, s2_ns, s3_ns) = (Netns::new("if1"), Netns::new("if2"), Netns::new("if3"));
    let host_ns = [Netns::new("ifa"), Netns::new("ifb"), Netns::new("ifc")];
    veth(&host_ns[0], "eth1", &s1_ns, "eth1");
    veth(&s1_ns, "eth2", &s2_ns, "eth1");
    veth(&s1_ns, "eth3", &s3_ns, "eth1");
    veth(&s2_ns, "eth2", &host_ns[1], "eth1");
    veth(&s2_ns, "eth3", &s3_ns, "eth3");
    veth(&s3_ns, "eth2", &host_ns[2], "eth1");
    let dir = TempDir::new("smfaults");
    let mut hosts = Vec::new();
    for ((ns, name), guid) in host_ns.into_iter().zip(["ha", "hb", "hc"]).zip(["0xa0", "0xb0", "0xc0"]) {
        let ping_file = dir.path().join(format!("{name}.ping"));
        let out_file = dir.path().join(format!("{name}.out"));
        let mut command = ns.command(workspace_binary("fabric-host").to_str().unwrap());
        command
            .args(["ib", "--iface", "eth1", "--guid", guid, "--name", name, "--data-vls", "2"])
            .args(["--ping-file", ping_file.to_str().unwrap(), "--count", "3"])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out_file).unwrap())
            .stderr(Stdio::null());
        let process = ProcessGuard::spawn("fabric-host", command);
        hosts.push((ns, Host { name, ping_file, out_file, rounds: Default::default(), _process: process }));
    }
    let (host_ns, hosts): (Vec<Netns>, Vec<Host>) = hosts.into_iter().unzip();
    Triangle { hosts, _host_ns: host_ns, s1_ns, s2_ns, s3_ns, _dir: dir }
}

/// Waits until `switch`'s SM reports `state` with the fabric up and `cas`
/// CAs; returns its `show ib sm --json`.
fn wait_sm(switch: &Switchd, state: &str, cas: u64, timeout: Duration) -> serde_json::Value {
    let found = poll_until(timeout, Duration::from_millis(100), || {
        let sm = switch.show_json("ib sm");
        (sm["state"] == state && (state != "master" || (sm["fabric_up"] == true && sm["cas"] == cas))).then_some(sm)
    });
    found.unwrap_or_else(|| panic!("SM not {state} with {cas} CAs: {}", switch.swcli(&["show", "ib", "sm"])))
}

/// CA name -> LID, from the master's `show ib topology`.
fn ca_lids(master: &Switchd) -> BTreeMap<String, u64> {
    let topology = master.show_json("ib topology");
    let nodes = topology["nodes"].as_array().unwrap();
    nodes
        .iter()
        .filter(|n| n["kind"] == "ca")
        .map(|n| (n["description"].as_str().unwrap().to_owned(), n["lid"].as_u64().unwrap()))
        .collect()
}

/// Every host in `hosts` pings every other's LID (round `round`); all
/// three replies must come back.
fn all_pairs_ping(t: &Triangle, round: u32, hosts: &[&str], lids: &BTreeMap<String, u64>) {
    for host in t.hosts.iter().filter(|h| hosts.contains(&h.name)) {
        let targets: Vec<u64> = hosts.iter().filter(|&&n| n != host.name).map(|n| lids[*n]).collect();
        let replies = host.ping(round, &targets);
        assert!(replies.values().all(|&r| r == 3), "{} round {round}: {replies:?}", host.name);
    }
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_owned()
}

#[test]
fn a_link_taken_down_is_routed_around_rewriting_only_changed_blocks() {
    if !require_root_and_tools("sm_inband_faults", &["ip"]) {
        return;
    }
    let t = triangle();
    let s1 = Switchd::start(&t.s1_ns, &switch_yaml("s1", 0x100, Some(7)));
    let s2 = Switchd::start(&t.s2_ns, &switch_yaml("s2", 0x200, None));
    let s3 = Switchd::start(&t.s3_ns, &switch_yaml("s3", 0x300, None));
    wait_sm(&s1, "master", 3, Duration::from_secs(30));
    // Settled: every port Active and no sweep pending.
    let settled = poll_until(Duration::from_secs(20), Duration::from_millis(200), || {
        let all_active = [&s1, &s2, &s3].iter().all(|s| s.show_rows("ib port").iter().all(|p| p["state"] == "active"));
        let sm = s1.show_json("ib sm");
        (all_active && sm["fabric_up"] == true).then_some(sm)
    });
    settled.unwrap_or_else(|| panic!("{}", s1.swcli(&["show", "ib", "sm"])));
    let lids = ca_lids(&s1);
    all_pairs_ping(&t, 1, &["ha", "hb", "hc"], &lids);
    let lft = |s: &Switchd| s.show_json("ib lft")["entries"].clone();
    let before = [lft(&s1), lft(&s2), lft(&s3)];
    let sm_before = s1.show_json("ib sm");

    // The s2-s3 cable fails.
    let failed_at = Instant::now();
    t.s2_ns.ip(&["link", "set", "eth3", "down"]);
    let rerouted = poll_until(Duration::from_secs(30), Duration::from_millis(50), || {
        let sm = s1.show_json("ib sm");
        let swept = sm["heavy_sweeps"].as_u64() > sm_before["heavy_sweeps"].as_u64();
        (swept && sm["fabric_up"] == true && sm["lft_blocks_set"] != sm_before["lft_blocks_set"]).then_some(sm)
    });
    let sm = rerouted.unwrap_or_else(|| panic!("no reroute: {}", s1.swcli(&["show", "ib", "sm"])));
    let seen_ms = failed_at.elapsed().as_secs_f64() * 1e3;
    // Any second trap of the same failure is swept too, changing nothing.
    std::thread::sleep(Duration::from_millis(3 * SWEEP_MS));
    let sm_after = s1.show_json("ib sm");
    let reroute_ms = sm_after["last_reroute_ms"].as_f64().expect("reroute time reported");
    println!(
        "reroute: {reroute_ms:.1} ms from the SM learning of the failure to new LFTs ({} LFT blocks), \
         {seen_ms:.0} ms from `ip link set down` to the test seeing it; load {}",
        sm_after["last_lft_blocks"],
        load()
    );
    // What the SM did meanwhile (failed SMPs would explain a long reroute).
    for event in sm_after["events"].as_array().unwrap() {
        println!("  {}", event.as_str().unwrap_or_default());
    }
    assert!(sm["traps"].as_u64() > sm_before["traps"].as_u64(), "{sm}");
    // Only the changed blocks: s2's and s3's (one block each, LIDs < 64);
    // s1 still reaches every LID the same way.
    let after = [lft(&s1), lft(&s2), lft(&s3)];
    assert_eq!(after[0], before[0], "s1's LFT is unchanged");
    assert_ne!(after[1], before[1]);
    assert_ne!(after[2], before[2]);
    let written = sm_after["lft_blocks_set"].as_u64().unwrap() - sm_before["lft_blocks_set"].as_u64().unwrap();
    assert_eq!(written, 2, "{sm_after}");
    assert_eq!(sm_after["last_lft_blocks"], 2, "{sm_after}");
    // hb and hc now go through s1: s2 sends hc's LID out of eth1.
    let hc_lid = lids["hc"];
    let s2_to_hc = after[1].as_array().unwrap().iter().find(|e| e["lid"] == hc_lid).unwrap()["port"].clone();
    assert_eq!(s2_to_hc, 1, "{}", after[1]);
    let text = s1.swcli(&["show", "ib", "sm"]);
    assert!(text.contains("last reroute") && text.contains("2 LFT blocks rewritten"), "{text}");
    assert!(text.contains("Trap { number: 128"), "{text}");
    all_pairs_ping(&t, 2, &["ha", "hb", "hc"], &lids);
}

#[test]
fn the_master_sm_dies_the_standby_takes_over_and_a_higher_sm_gets_it_back() {
    if !require_root_and_tools("sm_inband_faults", &["ip"]) {
        return;
    }
    let t = triangle();
    let s1_yaml = switch_yaml("s1", 0x100, Some(10));
    let mut s1 = Switchd::start(&t.s1_ns, &s1_yaml);
    let s2 = Switchd::start(&t.s2_ns, &switch_yaml("s2", 0x200, Some(5)));
    let _s3 = Switchd::start(&t.s3_ns, &switch_yaml("s3", 0x300, None));
    let master = wait_sm(&s1, "master", 3, Duration::from_secs(30));
    let standby = wait_sm(&s2, "standby", 0, Duration::from_secs(30));
    assert_eq!(standby["master_guid"], master["guid"], "{standby}");
    assert_eq!((master["priority"].as_u64(), standby["priority"].as_u64()), (Some(10), Some(5)));
    let lids = ca_lids(&s1);
    all_pairs_ping(&t, 1, &["ha", "hb", "hc"], &lids);

    // The master's switch dies at once (no goodbye): s2's polls of its
    // SMInfo go unanswered and it takes over after the retries.
    let killed_at = Instant::now();
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(s1.process.id() as i32, libc::SIGKILL) };
    let _ = s1.process.wait_timeout(Duration::from_secs(5));
    let took_over = wait_sm(&s2, "master", 2, Duration::from_secs(30));
    println!(
        "takeover: {:.1} s from SIGKILL to the standby master with the fabric up; load {}",
        killed_at.elapsed().as_secs_f64(),
        load()
    );
    assert_eq!(took_over["switches"], 2, "{took_over}");
    let events = took_over["events"].to_string();
    assert!(events.contains("BecameMaster"), "{took_over}");
    // Its map was empty: it kept the LIDs the ports hold.
    let after = ca_lids(&s2);
    assert_eq!((after["hb"], after["hc"]), (lids["hb"], lids["hc"]), "{after:?} vs {lids:?}");
    all_pairs_ping(&t, 2, &["hb", "hc"], &lids);

    // s1 comes back and the higher priority ends master, by one of two
    // paths, depending on whether its links to s2 and s3 have trained by
    // its first sweep:
    // - they have: it finds s2 master and stands by; s2 hands over to the
    //   higher priority, s1 acknowledges and brings the subnet up;
    // - they have not: its first sweep reaches only its own CA, so it is
    //   master of that piece; when the links train, s2 (a lower master)
    //   meets it and stands by (IBA 14.4.1.1: of two masters, the lower
    //   yields).
    let s1 = Switchd::start(&t.s1_ns, &s1_yaml);
    let back = wait_sm(&s1, "master", 3, Duration::from_secs(60));
    let old = wait_sm(&s2, "standby", 0, Duration::from_secs(10));
    assert_eq!(old["master_guid"], back["guid"], "{old}");
    let s1_events = back["events"].to_string();
    let s2_events = old["events"].to_string();
    assert!(s1_events.contains("BecameMaster"), "{back}");
    if s1_events.contains("BecameStandby") {
        println!("s1 stood by, then was handed the subnet");
        assert!(s2_events.contains("HandedOver"), "{old}");
        let acknowledged = poll_until(Duration::from_secs(5), Duration::from_millis(100), || {
            s2.show_json("ib sm")["events"].to_string().contains("HandoverAcknowledged").then_some(())
        });
        assert!(acknowledged.is_some(), "{}", s2.swcli(&["show", "ib", "sm"]));
    } else {
        println!("s1 came up alone as master; s2 stood by when they met");
        // After its own takeover, not the standby of the test's start.
        let yielded = format!("BecameStandby {{ master_guid: {} }}", 0x100);
        let events = old["events"].as_array().unwrap();
        let last = |what: &str| events.iter().rposition(|e| e.as_str().unwrap_or_default().contains(what));
        let stood_by = last(&yielded).expect("s2 stood by for s1");
        assert!(last("BecameMaster").is_none_or(|master| stood_by > master), "{old}");
    }
    assert_eq!(ca_lids(&s1), lids, "no LID moved through takeover and handover");
    all_pairs_ping(&t, 3, &["ha", "hb", "hc"], &lids);
}
