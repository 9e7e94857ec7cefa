//! The IB-like plane's settings applied live by `swcli configure` /
//! `commit`, on the checked-in `ib-fattree` lab (2 spines, 4 leaves, 8
//! HCAs; the SM in spine1, ftree):
//!
//! 1. a new routing engine (updn rooted at spine2) committed on the SM's
//!    switch: the SM sweeps at once, the leaves' LFTs (`show ib lft` on each leaf, what its engine
//!    forwards by) change, and every HCA pair ibpings again;
//! 2. an SM committed on spine2 (priority 3) stands by: spine1's master
//!    hears of it by trap 144 and meets it in its sweep; `ib.sm` deleted
//!    on spine1: spine1's SMInfo reads NOTACTIVE, spine2 takes over, every
//!    LID stays where it was and every pair ibpings;
//! 3. spine1's SM back with priority 15: it finds spine2 master and stands
//!    by, spine2's light sweep finds it higher and hands over (SMInfo
//!    HANDOVER, ACKNOWLEDGE): spine1 is master again;
//! 4. what needs a link trained again stays refused, naming the port and
//!    why, running untouched.
//!
//! Needs root and `ip`; skipped otherwise (a failure under CI=true).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fabric_tests::labs::{TestLab, recorded_pids, topology_file};
use fabric_tests::{require_root_and_tools, workspace_binary};
use serde_json::Value;

const LEAVES: [&str; 4] = ["leaf1", "leaf2", "leaf3", "leaf4"];

fn socket(lab: &TestLab, node: &str) -> std::path::PathBuf {
    lab.state().node(node).expect("node").config.as_ref().expect("a switchd node").with_extension("sock")
}

/// `swcli ARGS --json` on a switch of the lab, parsed.
fn show(lab: &TestLab, node: &str, args: &[&str]) -> Value {
    let out = Command::new(workspace_binary("swcli"))
        .arg("--socket")
        .arg(socket(lab, node))
        .args(args)
        .arg("--json")
        .output()
        .expect("swcli");
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// `swcli` on `node` reading the shell lines `script`: (exit code, output).
fn shell(lab: &TestLab, node: &str, script: &str) -> (i32, String) {
    let mut child = Command::new(workspace_binary("swcli"))
        .arg("--socket")
        .arg(socket(lab, node))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("swcli");
    use std::io::Write;
    child.stdin.take().expect("stdin").write_all(script.as_bytes()).expect("write");
    let out = child.wait_with_output().expect("swcli");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// Commits `lines` on `node` and saves (`labs check` reads which switches
/// run an SM from their startup files).
#[track_caller]
fn commit(lab: &TestLab, node: &str, lines: &str, comment: &str) -> String {
    let (code, text) = shell(lab, node, &format!("configure\n{lines}commit comment {comment}\nsave\n"));
    assert_eq!(code, 0, "{node}: {comment}: {text}");
    assert!(!text.contains("refused") && !text.contains("error"), "{node}: {comment}: {text}");
    text
}

/// Every leaf's LFT: (leaf, [(LID, port)]).
fn leaf_lfts(lab: &TestLab) -> Vec<(String, Vec<(u64, u64)>)> {
    LEAVES
        .iter()
        .map(|leaf| {
            let lft = show(lab, leaf, &["show", "ib", "lft"]);
            let entries = lft["entries"].as_array().cloned().unwrap_or_default();
            let pairs = entries.iter().filter_map(|e| Some((e["lid"].as_u64()?, e["port"].as_u64()?))).collect();
            (leaf.to_string(), pairs)
        })
        .collect()
}

/// Waits until `node`'s SM is `state` with the fabric up (for a master)
/// and `done` holds; its `show ib sm`.
#[track_caller]
fn wait_sm(lab: &TestLab, node: &str, state: &str, bound: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let sm = show(lab, node, &["show", "ib", "sm"]);
        if sm["state"] == state && (state != "master" || sm["fabric_up"] == true) && done(&sm) {
            return sm;
        }
        if started.elapsed() > bound {
            let spines =
                ["spine1", "spine2"].map(|spine| format!("{spine}: {}", show(lab, spine, &["show", "ib", "sm"])));
            panic!("{node}'s SM not {state} within {bound:?}: {sm}\n{}", spines.join("\n"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// HCA name -> LID as `node`'s SM has them.
fn hca_lids(lab: &TestLab, node: &str) -> Vec<(String, u64)> {
    let topology = show(lab, node, &["show", "ib", "topology"]);
    let mut lids: Vec<(String, u64)> = topology["nodes"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|n| n["kind"] == "ca")
        .filter_map(|n| Some((n["description"].as_str()?.to_owned(), n["lid"].as_u64()?)))
        .collect();
    lids.sort();
    lids
}

#[test]
fn ib_settings_commit_live_engine_sm_moves_and_pings_go_on() {
    if !require_root_and_tools("ib_commit_live", &["ip"]) {
        return;
    }
    let lab = TestLab::deploy(&topology_file("ib-fattree"), "iblive");
    let report = lab.cli(&["check", "--timeout", "45"]);
    assert!(report.contains("56 HCA pairs ibping"), "{report}");
    // Settled: no sweep of the bring-up still to come.
    std::thread::sleep(Duration::from_millis(1500));

    // 1. A new engine on the SM's switch.
    let before = show(&lab, "spine1", &["show", "ib", "sm"]);
    assert_eq!(before["engine"], "ftree", "{before}");
    let lfts_before = leaf_lfts(&lab);
    let lids = hca_lids(&lab, "spine1");
    assert_eq!(lids.len(), 8, "{lids:?}");
    // (ftree, minhop and updn with detected roots route this small tree
    // alike: updn rooted at spine2 alone sends every leaf-to-leaf route
    // up to spine2.)
    let updn = "set ib sm { priority: 15, engine: [updn], roots: [0x0002c90300000200], sweep_interval_ms: 500 }\n";
    commit(&lab, "spine1", updn, "updn");
    let sm = wait_sm(&lab, "spine1", "master", Duration::from_secs(10), |sm: &Value| {
        sm["engine"] == "updn" && sm["heavy_sweeps"].as_u64() > before["heavy_sweeps"].as_u64()
    });
    assert_eq!(sm["priority"], 15, "{sm}");
    let lfts_after = leaf_lfts(&lab);
    assert!(lfts_after.iter().all(|(_, lft)| lft.len() >= 8), "{lfts_after:?}");
    assert_ne!(lfts_before, lfts_after, "the leaves forward by updn's LFTs now");
    // leafN's eth1 goes to spine1: no HCA is reached over it any more.
    let hca: Vec<u64> = lids.iter().map(|(_, lid)| *lid).collect();
    for (leaf, lft) in &lfts_after {
        let over_spine1: Vec<u64> =
            lft.iter().filter(|(lid, port)| *port == 1 && hca.contains(lid)).map(|(lid, _)| *lid).collect();
        assert!(over_spine1.is_empty(), "{leaf} routes HCAs {over_spine1:?} over spine1: {lft:?}");
    }
    assert!(sm["lft_blocks_set"].as_u64() > before["lft_blocks_set"].as_u64(), "{sm}");
    assert_eq!(hca_lids(&lab, "spine1"), lids, "a new engine moves no LID");
    let report = lab.cli(&["check", "--timeout", "20"]);
    assert!(report.contains("56 HCA pairs ibping"), "after the new engine: {report}");

    // 2. A standby on spine2, then the master's SM off: spine2 takes over.
    let spine1_before = show(&lab, "spine1", &["show", "ib", "sm"]);
    commit(&lab, "spine2", "set ib sm { priority: 3, engine: [updn], sweep_interval_ms: 500 }\n", "standby");
    let standby = wait_sm(&lab, "spine2", "standby", Duration::from_secs(10), |_| true);
    assert_eq!(standby["master_guid"], "0x0002c90300000100", "{standby}");
    // The master heard of the new SM (trap 144) and swept to meet it.
    wait_sm(&lab, "spine1", "master", Duration::from_secs(10), |sm| {
        sm["traps"].as_u64() > spine1_before["traps"].as_u64()
            && sm["heavy_sweeps"].as_u64() > spine1_before["heavy_sweeps"].as_u64()
    });
    commit(&lab, "spine1", "delete ib sm\n", "sm-off");
    assert_eq!(show(&lab, "spine1", &["show", "ib", "sm"])["state"], "not configured");
    let master = wait_sm(&lab, "spine2", "master", Duration::from_secs(15), |sm| sm["cas"] == 8);
    assert_eq!(master["engine"], "updn", "{master}");
    assert_eq!(hca_lids(&lab, "spine2"), lids, "the new master keeps every LID the ports hold");
    let report = lab.cli(&["check", "--timeout", "20"]);
    assert!(report.contains("56 HCA pairs ibping"), "under spine2's SM: {report}");

    // 3. spine1's SM back, higher: it stands by, then is handed mastership.
    commit(&lab, "spine1", "set ib sm { priority: 15, engine: [ftree], sweep_interval_ms: 500 }\n", "sm-on");
    wait_sm(&lab, "spine1", "master", Duration::from_secs(20), |sm| sm["engine"] == "ftree" && sm["cas"] == 8);
    // spine2 handed over, and spine1's SMInfo Set(ACKNOWLEDGE) reached it.
    wait_sm(&lab, "spine2", "standby", Duration::from_secs(10), |sm| {
        let events = sm["events"].to_string();
        events.contains("HandedOver") && events.contains("HandoverAcknowledged")
    });
    let report = lab.cli(&["check", "--timeout", "20"]);
    assert!(report.contains("56 HCA pairs ibping"), "back under spine1's SM: {report}");

    // 4. A port between IB and Ethernet mode needs the link trained again:
    // refused, naming it, running untouched.
    let generation = show(&lab, "leaf1", &["show", "system", "commit", "history"]);
    let (code, text) = shell(
        &lab,
        "leaf1",
        "configure\ndelete ports eth4\nset ports eth4 { mode: routed, addresses: [10.9.0.1/24] }\ncommit\n",
    );
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("eth4") && text.contains("Ethernet and IB"), "{text}");
    assert_eq!(show(&lab, "leaf1", &["show", "system", "commit", "history"]), generation);

    lab.destroy_and_check(&recorded_pids(&lab.state()));
}
