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
