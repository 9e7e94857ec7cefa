//! `bgp:` changes committed through `swcli configure`/`commit` apply to
//! the running speaker, without a restart of `switchd`: a leaf with three
//! FRR peers, each behind its own port.
//!
//! ```text
//!   [fr1 AS65001]      [fr2 AS65002]      [fr3 AS65003]
//!    eth1 10.1.1.1      eth1 10.1.2.1      eth1 10.1.3.1
//!        |                  |                  |
//!    eth1 10.1.1.0      eth2 10.1.2.0      eth3 10.1.3.0   (/31s)
//!              [l1 switchd AS65100, router id 10.0.0.100]
//! ```
//!
//! Checked, commit by commit: a third neighbour added comes up; a
//! neighbour's hold time changed restarts that session alone (the new
//! hold time negotiated); a neighbour removed is told (Cease) and leaves
//! the summary. Through all three, the untouched session to fr1 stays
//! Established: one establishment on both sides (`established_transitions`
//! in `swcli show bgp neighbors --json`, FRR's `connectionsEstablished`).
//! Then a new ASN, and a new router id: the speaker restarts in place, the
//! commit's answer says every session was reset, FRR sees the new identity,
//! and it is the same daemon (same process, its commit history kept).

use std::time::{Duration, Instant};

use fabric_tests::frr::{Afi, Frr, FrrConfig, FrrNeighbor, frr_available};
use fabric_tests::{Netns, Switchd, swcli_json, veth};
use serde_json::Value;

const CONVERGE: Duration = Duration::from_secs(60);

fn leaf_config() -> String {
    "name: l1
lldp: { enabled: false }
ports:
  - { name: eth1, mode: routed, addresses: [10.1.1.0/31] }
  - { name: eth2, mode: routed, addresses: [10.1.2.0/31] }
  - { name: eth3, mode: routed, addresses: [10.1.3.0/31] }
bgp:
  asn: 65100
  router_id: 10.0.0.100
  timers: { hold_time: 9, connect_retry: 1 }
  neighbors:
    - { address: 10.1.1.1, remote_as: 65001 }
    - { address: 10.1.2.1, remote_as: 65002 }
"
    .to_owned()
}

/// FRR peer `j`: accepts any external AS from the leaf (its ASN changes).
fn peer_bgp(j: u32) -> String {
    let mut n = FrrNeighbor::new(&format!("10.1.{j}.0"), 65100);
    // Longer than the leaf's: the leaf's hold time is what is negotiated.
    n.timers = Some((10, 30));
    n.families = vec![Afi::Ipv4];
    FrrConfig::new(65000 + j, &format!("10.0.0.{j}"))
        .neighbor(n)
        .render()
        .replace("remote-as 65100", "remote-as external")
}

fn neighbor(sw: &Switchd, peer: &str) -> Value {
    let v = swcli_json(&sw.swcli(&["show", "bgp", "neighbors", peer, "--json"]));
    v.as_array().and_then(|a| a.first().cloned()).unwrap_or(Value::Null)
}

fn summary_peers(sw: &Switchd) -> Vec<Value> {
    sw.show_json("bgp summary")["peers"].as_array().cloned().unwrap_or_default()
}

fn established(sw: &Switchd, peer: &str) -> bool {
    summary_peers(sw).iter().any(|p| p["address"] == peer && p["state"] == "Established")
}

#[track_caller]
fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One commit through the shell; its answer.
#[track_caller]
fn commit(sw: &Switchd, lines: &str) -> String {
    let (code, text) = sw.swcli_script(&format!("configure\n{lines}\ncommit\n"));
    assert_eq!(code, 0, "the commit applies without a restart:\n{text}");
    assert!(text.contains("committed (generation"), "{text}");
    text
}

#[test]
fn bgp_commits_apply_live_and_leave_untouched_sessions_up() {
    if !frr_available("switchd_bgp_live") || !fabric_tests::require_root_and_tools("switchd_bgp_live", &["ip"]) {
        return;
    }
    let l1 = Netns::new("blvl1");
    let peers = [Netns::new("blvf1"), Netns::new("blvf2"), Netns::new("blvf3")];
    for (j, fr) in (1u32..).zip(&peers) {
        veth(&l1, &format!("eth{j}"), fr, "eth1");
        l1.disable_offloads(&format!("eth{j}"));
        fr.disable_offloads("eth1");
        fr.ip(&["addr", "add", &format!("10.1.{j}.1/31"), "dev", "eth1"]);
    }
    let frr: Vec<Frr> = (1u32..).zip(&peers).map(|(j, fr)| Frr::start(fr, &peer_bgp(j))).collect();
    let sw = Switchd::start(&l1, &leaf_config());
    let pid = sw.process.id();

    wait_for("fr1 and fr2 Established", CONVERGE, || established(&sw, "10.1.1.1") && established(&sw, "10.1.2.1"));
    // fr1 is never touched: its establishments, counted at both ends,
    // stay what they were once up.
    let ours = neighbor(&sw, "10.1.1.1")["established_transitions"].clone();
    let theirs = frr[0].neighbor("10.1.1.0")["connectionsEstablished"].clone();
    eprintln!("fr1's session up: established {ours} times here, {theirs} times at FRR");
    let untouched = |when: &str| {
        assert!(established(&sw, "10.1.1.1"), "{when}: fr1's session is down");
        let now = neighbor(&sw, "10.1.1.1");
        assert_eq!(now["established_transitions"], ours, "{when}: fr1's session flapped: {now:#}");
        let now = frr[0].neighbor("10.1.1.0");
        assert_eq!(now["bgpState"], "Established", "{when}: {now:#}");
        assert_eq!(now["connectionsEstablished"], theirs, "{when}: FRR saw fr1's session flap: {now:#}");
    };
    untouched("at start");

    // A third neighbour.
    commit(&sw, "set bgp neighbors 10.1.3.1 remote_as 65003");
    frr[2].wait_established("10.1.3.0", CONVERGE);
    wait_for("fr3 Established on the leaf", CONVERGE, || established(&sw, "10.1.3.1"));
    untouched("after adding fr3");

    // fr2's hold time: its session alone restarts and negotiates 6 s.
    assert_eq!(neighbor(&sw, "10.1.2.1")["hold_time_secs"], 9);
    let fr2_before = frr[1].neighbor("10.1.2.0")["connectionsEstablished"].clone();
    let fr3_before = frr[2].neighbor("10.1.3.0")["connectionsEstablished"].clone();
    commit(&sw, "set bgp neighbors 10.1.2.1 hold_time 6");
    wait_for("fr2 back with a 6 s hold time", CONVERGE, || {
        let n = neighbor(&sw, "10.1.2.1");
        n["state"] == "Established" && n["hold_time_secs"] == 6
    });
    wait_for("FRR sees fr2's session established again", CONVERGE, || {
        let n = frr[1].neighbor("10.1.2.0");
        n["bgpState"] == "Established" && n["connectionsEstablished"].as_u64() > fr2_before.as_u64()
    });
    assert_eq!(frr[2].neighbor("10.1.3.0")["connectionsEstablished"], fr3_before, "fr3 untouched");
    untouched("after changing fr2's hold time");

    // fr2 removed: FRR is told, the summary forgets it.
    commit(&sw, "delete bgp neighbors 10.1.2.1");
    wait_for("fr2 gone from the summary", CONVERGE, || {
        let peers = summary_peers(&sw);
        peers.len() == 2 && peers.iter().all(|p| p["address"] != "10.1.2.1")
    });
    wait_for("FRR's fr2 session down", CONVERGE, || {
        frr[1].neighbor_state("10.1.2.0").as_deref() != Some("Established")
    });
    untouched("after removing fr2");
    let generation = sw.generation();

    // A new ASN: every session resets, the daemon stays.
    let before: Vec<_> = [(&frr[0], "10.1.1.0"), (&frr[2], "10.1.3.0")]
        .map(|(fr, peer)| fr.neighbor(peer)["connectionsEstablished"].as_u64())
        .to_vec();
    let answer = commit(&sw, "set bgp asn 65200");
    assert!(answer.contains("bgp.asn changed: every BGP session was reset"), "the answer says so:\n{answer}");
    for ((fr, peer), before) in [(&frr[0], "10.1.1.0"), (&frr[2], "10.1.3.0")].into_iter().zip(before) {
        wait_for("FRR re-established with AS 65200", CONVERGE, || {
            let n = fr.neighbor(peer);
            n["bgpState"] == "Established" && n["remoteAs"] == 65200 && n["connectionsEstablished"].as_u64() > before
        });
    }
    wait_for("both sessions back on the leaf", CONVERGE, || {
        established(&sw, "10.1.1.1") && established(&sw, "10.1.3.1")
    });
    assert_eq!(neighbor(&sw, "10.1.1.1")["local_as"], 65200);

    // A new router id: the same, FRR sees it in the OPEN.
    let before = frr[0].neighbor("10.1.1.0")["connectionsEstablished"].as_u64();
    let answer = commit(&sw, "set bgp router_id 10.0.0.200");
    assert!(answer.contains("bgp.router_id changed: every BGP session was reset"), "{answer}");
    wait_for("FRR re-established with router id 10.0.0.200", CONVERGE, || {
        let n = frr[0].neighbor("10.1.1.0");
        n["bgpState"] == "Established"
            && n["remoteRouterId"] == "10.0.0.200"
            && n["connectionsEstablished"].as_u64() > before
    });

    // The same daemon throughout: its process and its commit history.
    assert_eq!(sw.process.id(), pid);
    assert_eq!(sw.generation(), generation + 2);
    let history = sw.swcli(&["show", "system", "commit", "history"]);
    assert!(history.lines().count() >= 7, "every commit is in the history:\n{history}");
}

/// The `show ip route --json` entry for `prefix` (read from the shim's
/// route table: what forwarding uses).
fn ip_route(sw: &Switchd, prefix: &str) -> Option<Value> {
    let routes = swcli_json(&sw.swcli(&["show", "ip", "route", "--json"]));
    routes.as_array()?.iter().find(|r| r["prefix"] == prefix).cloned()
}

/// `bgp:` added to a running switch by a commit starts the speaker: the
/// session to FRR comes up, FRR's route is installed, ours reaches FRR.
/// Removed: FRR is sent a Cease, its route leaves the leaf's forwarding,
/// ours leaves FRR's table. Added again: the listener binds again and the
/// session returns. One daemon throughout.
#[test]
fn bgp_added_and_removed_by_commits_starts_and_stops_the_speaker() {
    if !frr_available("switchd_bgp_live") || !fabric_tests::require_root_and_tools("switchd_bgp_live", &["ip"]) {
        return;
    }
    let l1 = Netns::new("blal1");
    let fr = Netns::new("blaf1");
    veth(&l1, "eth1", &fr, "eth1");
    l1.disable_offloads("eth1");
    fr.disable_offloads("eth1");
    fr.ip(&["addr", "add", "10.1.1.1/31", "dev", "eth1"]);
    let mut n = FrrNeighbor::new("10.1.1.0", 65100);
    n.timers = Some((10, 30));
    n.families = vec![Afi::Ipv4];
    let frr = Frr::start(&fr, &FrrConfig::new(65001, "10.0.0.1").neighbor(n).network("10.201.0.0/24").render());
    let sw = Switchd::start(
        &l1,
        "name: l1\nlldp: { enabled: false }\nports:\n  - { name: eth1, mode: routed, addresses: [10.1.1.0/31] }\n",
    );
    let pid = sw.process.id();
    let bgp = "set bgp { asn: 65100, router_id: 10.0.0.100, timers: { hold_time: 9, connect_retry: 1 }, \
               networks: [10.100.0.0/24], neighbors: [{ address: 10.1.1.1, remote_as: 65001 }] }";
    let installed = |sw: &Switchd| ip_route(sw, "10.201.0.0/24").is_some_and(|r| r["next_hops"][0]["ip"] == "10.1.1.1");

    for round in ["added", "added again"] {
        commit(&sw, bgp);
        frr.wait_established("10.1.1.0", CONVERGE);
        wait_for(&format!("bgp {round}: Established on the leaf"), CONVERGE, || established(&sw, "10.1.1.1"));
        wait_for(&format!("bgp {round}: FRR's 10.201.0.0/24 in the leaf's forwarding"), CONVERGE, || installed(&sw));
        frr.wait_route("10.100.0.0/24", CONVERGE, |_| true);

        let before = frr.neighbor("10.1.1.0")["connectionsEstablished"].as_u64();
        commit(&sw, "delete bgp");
        wait_for("FRR's session closed by a Cease from the leaf", CONVERGE, || {
            let n = frr.neighbor("10.1.1.0");
            n["bgpState"] != "Established"
                && n["lastNotificationReason"].as_str().is_some_and(|r| r.starts_with("Cease"))
                && n["lastResetDueTo"].as_str().is_some_and(|r| r.contains("Notification received"))
        });
        assert!(before.is_some());
        assert!(ip_route(&sw, "10.201.0.0/24").is_none(), "bgp removed: its route left forwarding");
        frr.wait_no_route("10.100.0.0/24", CONVERGE);
        assert!(summary_peers(&sw).is_empty(), "no speaker: no peers");
    }
    assert_eq!(sw.process.id(), pid, "the same daemon throughout");
}
