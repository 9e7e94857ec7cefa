//! `labs check lossless`: the fabric-wide lossless check over every
//! `switchd` of a lab. Each switch's profile (its traffic manager's
//! configuration, ports and LLDP far ends) is read from its management
//! socket; `qos::lossless::check_fabric` then checks each switch, each
//! link between two of them and the QoS chain across all.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mgmt_cli::api::{Reply, Request};
use mgmt_cli::client::Client;
use qos::lossless::{Finding, Severity, SwitchProfile};

use crate::runner::Lab;
use crate::topology::Role;

/// The management sockets of a lab's `switchd` nodes.
pub fn lab_sockets(lab: &Lab) -> Vec<PathBuf> {
    lab.nodes
        .iter()
        .filter(|n| n.role == Role::Switchd)
        .filter_map(|n| n.config.as_ref().map(|c| c.with_extension("sock")))
        .collect()
}

/// One switch's profile, asked on its socket.
pub fn read_profile(socket: &Path) -> Result<SwitchProfile, String> {
    let mut client = Client::connect(socket).map_err(|e| e.to_string())?;
    match client.request(&Request::ShowLosslessProfile).map_err(|e| format!("{}: {e}", socket.display()))? {
        Reply::LosslessProfile(value) => {
            serde_json::from_value(value).map_err(|e| format!("{}: malformed profile: {e}", socket.display()))
        }
        other => Err(format!("{}: unexpected answer {other:?}", socket.display())),
    }
}

/// The findings over the switches behind `sockets`.
pub fn check(sockets: &[PathBuf]) -> Result<(Vec<SwitchProfile>, Vec<Finding>), String> {
    let profiles = sockets.iter().map(|s| read_profile(s)).collect::<Result<Vec<_>, _>>()?;
    let findings = qos::lossless::check_fabric(&profiles);
    Ok((profiles, findings))
}

/// Links between two of the switches that both ends' LLDP has found.
pub fn links_seen(profiles: &[SwitchProfile]) -> usize {
    profiles
        .iter()
        .flat_map(|s| s.ports.iter().filter_map(move |p| p.neighbor.as_ref().map(|n| (s, p, n))))
        .filter(|(_, _, (system, _))| profiles.iter().any(|o| &o.name == system))
        .count()
        / 2
}

/// The lab's check once LLDP has found both ends of every link between
/// two `switchd` nodes (the check sees a link only through LLDP), or, at
/// `timeout`, with what it has.
pub fn check_lab(lab: &Lab, timeout: Duration) -> Result<(Vec<SwitchProfile>, Vec<Finding>), String> {
    let switch = |node: &str| lab.nodes.iter().any(|n| n.name == node && n.role == Role::Switchd);
    let cabled = lab.links.iter().filter(|(a, b)| switch(&a.node) && switch(&b.node)).count();
    let sockets = lab_sockets(lab);
    let deadline = Instant::now() + timeout;
    loop {
        // A switch just started may not have its socket yet.
        match check(&sockets) {
            Ok((profiles, findings)) if links_seen(&profiles) >= cabled || Instant::now() >= deadline => {
                return Ok((profiles, findings));
            }
            Err(error) if Instant::now() >= deadline => return Err(error),
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The findings as a table, with the count of links checked.
pub fn render(profiles: &[SwitchProfile], findings: &[Finding]) -> String {
    let links = links_seen(profiles);
    let mut out = format!("lossless check: {} switch(es), {links} link(s) between them\n", profiles.len());
    if findings.is_empty() {
        out.push_str("no problem found\n");
        return out;
    }
    let width = |f: fn(&Finding) -> usize| findings.iter().map(f).max().unwrap_or(0);
    let (scope_w, check_w) = (width(|f| f.scope.len()), width(|f| f.check.len()));
    for f in findings {
        let severity = match f.severity {
            Severity::Error => "ERROR",
            Severity::Warning => "WARN",
        };
        out.push_str(&format!("{severity:<5}  {:<scope_w$}  {:<check_w$}  {}\n", f.scope, f.check, f.message));
        out.push_str(&format!("{:<5}  {:<scope_w$}  {:<check_w$}  fix: {}\n", "", "", "", f.fix));
    }
    let errors = findings.iter().filter(|f| f.severity == Severity::Error).count();
    out.push_str(&format!("{errors} error(s), {} warning(s)\n", findings.len() - errors));
    out
}
