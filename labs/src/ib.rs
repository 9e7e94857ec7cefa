//! The IB-like plane of a deployed lab, as `labs check` sees it: the
//! subnet manager embedded in a `switchd` (a switch whose config has
//! `ib.sm`) and the HCA nodes (`fabric-host ib`).
//!
//! Converged means: one of those SMs is master, has swept the fabric and
//! found every HCA (`swcli show ib sm --json`: `fabric_up`, `cas`), every
//! HCA has a LID in the SM's topology (`show ib topology --json`, HCAs by
//! their NodeDescription, which is the node's name), and every HCA ibpings
//! every other. The pings go through each HCA's own `fabric-host`: the
//! runner gave it a ping file (`NODE.ping`); a new text there starts a
//! round of pings to the LIDs it lists, whose `ping_summary` lines land in
//! the node's log.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::check::{config_yaml, swcli};
use crate::runner::{Lab, NodeState, state_dir};
use crate::topology::Role;

/// What the master SM reports once the fabric is up.
#[derive(Debug, Clone)]
pub struct SmView {
    /// The switch the master SM runs in.
    pub switch: String,
    pub switches: u64,
    pub cas: u64,
    pub heavy_sweeps: u64,
    /// The last sweep's duration as the SM measured it.
    pub last_sweep_ms: Option<f64>,
    /// From a change the SM learned of to new LFTs, as it measured it.
    pub last_reroute_ms: Option<f64>,
    pub lft_blocks_set: u64,
    pub raw: Value,
}

pub fn hcas(lab: &Lab) -> Vec<&NodeState> {
    lab.nodes.iter().filter(|n| n.role == Role::Hca).collect()
}

/// The `switchd`s with an SM configured.
pub fn sm_switches(lab: &Lab) -> Vec<&NodeState> {
    lab.nodes
        .iter()
        .filter(|n| n.role == Role::Switchd && config_yaml(n).is_some_and(|c| !c["ib"]["sm"].is_null()))
        .collect()
}

/// The master SM's view, if one is master with the fabric up.
pub fn master_sm(lab: &Lab) -> Option<SmView> {
    sm_switches(lab).into_iter().find_map(|node| {
        let sm = swcli(node, &["show", "ib", "sm", "--json"])?;
        (sm["state"] == "master" && sm["fabric_up"] == true).then(|| SmView {
            switch: node.name.clone(),
            switches: sm["switches"].as_u64().unwrap_or(0),
            cas: sm["cas"].as_u64().unwrap_or(0),
            heavy_sweeps: sm["heavy_sweeps"].as_u64().unwrap_or(0),
            last_sweep_ms: sm["last_sweep_ms"].as_f64(),
            last_reroute_ms: sm["last_reroute_ms"].as_f64(),
            lft_blocks_set: sm["lft_blocks_set"].as_u64().unwrap_or(0),
            raw: sm,
        })
    })
}

/// HCA name -> LID, as the master SM's topology has them (LID 0 left out).
pub fn hca_lids(lab: &Lab, sm: &SmView) -> BTreeMap<String, u16> {
    let Ok(node) = lab.node(&sm.switch) else { return BTreeMap::new() };
    let topology = swcli(node, &["show", "ib", "topology", "--json"]).unwrap_or(Value::Null);
    let nodes = topology["nodes"].as_array().cloned().unwrap_or_default();
    nodes
        .iter()
        .filter(|n| n["kind"] == "ca")
        .filter_map(|n| {
            let lid = u16::try_from(n["lid"].as_u64()?).ok().filter(|&lid| lid != 0)?;
            Some((n["description"].as_str()?.to_owned(), lid))
        })
        .collect()
}

/// Waits until a master SM has the fabric up with every HCA in it and a
/// LID for each; the SM's view and the LIDs.
pub fn wait_fabric_up(lab: &Lab, deadline: Instant) -> Result<(SmView, BTreeMap<String, u16>), String> {
    let hcas = hcas(lab);
    loop {
        let mut missing = String::from("no master SM with the fabric up");
        if let Some(sm) = master_sm(lab) {
            let lids = hca_lids(lab, &sm);
            let without: Vec<&str> =
                hcas.iter().map(|n| n.name.as_str()).filter(|name| !lids.contains_key(*name)).collect();
            if sm.cas as usize >= hcas.len() && without.is_empty() {
                return Ok((sm, lids));
            }
            missing = format!("SM on {} sees {} CAs; without a LID: {}", sm.switch, sm.cas, without.join(", "));
        }
        if Instant::now() >= deadline {
            return Err(format!("IB fabric not up: {missing}"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One round of ibpings from every HCA to every other's LID, all HCAs at
/// once; the pairs whose every echo came back, and those that did not
/// (`from -> LID`), by `deadline`.
pub fn ibping_round(lab: &Lab, lids: &BTreeMap<String, u16>, deadline: Instant) -> (usize, Vec<String>) {
    let dir = state_dir(&lab.name);
    // Per HCA: where its log stood before this round, and its targets.
    let mut rounds = Vec::new();
    for hca in hcas(lab) {
        let log = dir.join(format!("{}.log", hca.name));
        let offset = std::fs::metadata(&log).map_or(0, |m| m.len());
        let targets: Vec<u16> = lids.iter().filter(|(name, _)| **name != hca.name).map(|(_, &lid)| lid).collect();
        // A new text each round (the tag), so fabric-host starts another.
        let tag = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let list: Vec<String> = targets.iter().map(u16::to_string).collect();
        let text = format!("round-{tag} {}\n", list.join(" "));
        if std::fs::write(dir.join(format!("{}.ping", hca.name)), text).is_err() {
            continue;
        }
        rounds.push((hca.name.clone(), log, offset, targets));
    }
    let mut ok = 0;
    let mut failed = Vec::new();
    for (name, log, offset, targets) in rounds {
        let summaries = loop {
            let summaries = summaries_since(&log, offset);
            if targets.iter().all(|lid| summaries.contains_key(lid)) || Instant::now() >= deadline {
                break summaries;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        for lid in targets {
            match summaries.get(&lid) {
                Some(&(sent, received)) if sent > 0 && received == sent => ok += 1,
                _ => failed.push(format!("{name} -> LID {lid}")),
            }
        }
    }
    (ok, failed)
}

/// `ping_summary` lines written to `log` after `offset`: LID -> (sent,
/// received), the last of each.
fn summaries_since(log: &std::path::Path, offset: u64) -> BTreeMap<u16, (u64, u64)> {
    let text = std::fs::read(log).unwrap_or_default();
    let text = String::from_utf8_lossy(text.get(offset as usize..).unwrap_or_default());
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["event"] == "ping_summary")
        .filter_map(|event| {
            let lid = u16::try_from(event["to"].as_u64()?).ok()?;
            Some((lid, (event["sent"].as_u64()?, event["received"].as_u64()?)))
        })
        .collect()
}

/// What to look at when HCAs do not ibping: every switch port not Active
/// or with flow control not exchanged, the discards and relay errors
/// counted, each switch's LFT size, and the master SM's last events.
pub fn diagnostics(lab: &Lab) -> String {
    let mut lines = Vec::new();
    for node in lab.nodes.iter().filter(|n| n.role == Role::Switchd) {
        let ports =
            swcli(node, &["show", "ib", "port", "--json"]).and_then(|p| p.as_array().cloned()).unwrap_or_default();
        for port in &ports {
            let counters = &port["counters"];
            let trouble = port["state"] != "active"
                || port["flow_control"] != true
                || counters["xmit_discards"].as_u64() > Some(0)
                || counters["rcv_switch_relay_errors"].as_u64() > Some(0)
                || counters["rcv_errors"].as_u64() > Some(0);
            if trouble {
                lines.push(format!(
                    "{} {}: {} flow control {} xmit_discards {} relay_errors {} rcv_errors {}",
                    node.name,
                    port["name"].as_str().unwrap_or("?"),
                    port["state"].as_str().unwrap_or("?"),
                    port["flow_control"],
                    counters["xmit_discards"],
                    counters["rcv_switch_relay_errors"],
                    counters["rcv_errors"]
                ));
            }
        }
        let lft = swcli(node, &["show", "ib", "lft", "--json"]).unwrap_or(Value::Null);
        lines.push(format!("{} LFT: {}", node.name, lft["entries"]));
    }
    if let Some(sm) = sm_switches(lab).first().and_then(|n| swcli(n, &["show", "ib", "sm", "--json"])) {
        let events = sm["events"].as_array().cloned().unwrap_or_default();
        let last: Vec<String> =
            events.iter().rev().take(8).rev().filter_map(|e| e.as_str().map(str::to_owned)).collect();
        lines.push(format!("SM: {} fabric_up {} events: {}", sm["state"], sm["fabric_up"], last.join(" | ")));
    }
    lines.join("\n")
}
