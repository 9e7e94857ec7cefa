//! The fabric-wide lossless check: does every switch, and every link
//! between two of them, hold what a lossless class needs end to end?
//!
//! Each switch is described by its traffic manager's configuration and
//! its ports as LLDP sees their far ends ([`SwitchProfile`]); the check is
//! pure. Per switch: a traffic manager with PFC on some priority, the
//! watchdog on, ECN's Kmin below the XOFF threshold of each lossless
//! class's priority group (marking starts before pausing), the headroom
//! enough for each port's own speed and cable. Per link (both ends known):
//! PFC on the same priorities, the same MTU and speed, the same cable
//! length declared, and each end's headroom enough for the link's speed
//! and longest declared cable (the bytes in flight after XOFF, which a
//! switch checking only itself cannot see). Across the fabric: the
//! lossless DSCP -> TC -> PG -> queue chain identical on every switch.

use serde::{Deserialize, Serialize};

use crate::buffer::pfc_headroom_bytes;
use crate::classify::CLASSES;
use crate::tm::TmConfig;

/// One switch as the check sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchProfile {
    pub name: String,
    /// In the traffic manager's port order (`tm.ports[i]` is `ports[i]`).
    pub ports: Vec<PortProfile>,
    /// `None` when the switch runs no traffic manager (no `qos:`).
    pub tm: Option<TmConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortProfile {
    pub name: String,
    /// The IP MTU, as configured.
    pub mtu: u32,
    /// The far end as LLDP reports it: system name and port.
    pub neighbor: Option<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

/// One problem, where it is and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub severity: Severity,
    /// `switch s1`, `port s1:eth1` or `link s1:eth1 -- s2:eth1`.
    pub scope: String,
    /// `pfc-priorities`, `headroom`, `ecn-kmin`, `mtu`, `watchdog`,
    /// `qos-chain`, `speed`, `cable-length`, `traffic-manager`.
    pub check: String,
    pub message: String,
    pub fix: String,
}

fn finding(severity: Severity, scope: String, check: &str, message: String, fix: String) -> Finding {
    Finding { severity, scope, check: check.to_owned(), message, fix }
}

/// The checks of one switch on its own (what `swcli check lossless` runs,
/// with the links whose far end it cannot see left out).
pub fn check_switch(switch: &SwitchProfile) -> Vec<Finding> {
    let scope = format!("switch {}", switch.name);
    let Some(tm) = &switch.tm else {
        return vec![finding(
            Severity::Error,
            scope,
            "traffic-manager",
            "no traffic manager: nothing is lossless".into(),
            "add `qos: { preset: roce }` and a `speed:` to every port".into(),
        )];
    };
    let mut out = Vec::new();
    if tm.pfc.priorities.is_empty() {
        out.push(finding(
            Severity::Error,
            scope.clone(),
            "pfc-priorities",
            "PFC is on no priority: no class is lossless".into(),
            "set `qos.pfc.priorities` (e.g. [3, 4])".into(),
        ));
    }
    if !tm.watchdog.enabled {
        out.push(finding(
            Severity::Warning,
            scope.clone(),
            "watchdog",
            "the PFC watchdog is off: a PFC storm from a stuck peer spreads through the fabric".into(),
            "set `qos.watchdog.enabled: true`".into(),
        ));
    }
    for pg in lossless_pgs(tm) {
        let xoff = tm.xoff_threshold_bytes(pg);
        for tc in (0..CLASSES).filter(|&tc| usize::from(tm.maps.tc_to_pg[tc]) == pg) {
            let queue = usize::from(tm.maps.tc_to_queue[tc]);
            let Some(port) = tm.ports.first() else { continue };
            let Some(wred) = tm.wred(port, queue) else { continue };
            if u64::from(wred.kmin_bytes) > xoff {
                out.push(finding(
                    Severity::Error,
                    scope.clone(),
                    "ecn-kmin",
                    format!(
                        "queue {queue} (TC {tc}) marks ECN from {} bytes, above the XOFF threshold of priority group {pg} ({xoff} bytes): PFC pauses before ECN marks",
                        wred.kmin_bytes
                    ),
                    format!("lower `qos.queues.{queue}.ecn.kmin-bytes` below {xoff}"),
                ));
            }
        }
        for (port, profile) in tm.ports.iter().zip(&switch.ports) {
            let have = tm.headroom_bytes(port, pg);
            let need = tm.needed_headroom_bytes(port);
            if have < need {
                out.push(headroom_finding(switch, &profile.name, pg, have, need, port.cable_length_m));
            }
        }
    }
    out
}

fn headroom_finding(switch: &SwitchProfile, port: &str, pg: usize, have: u64, need: u64, cable_m: u32) -> Finding {
    finding(
        Severity::Error,
        format!("port {}:{port}", switch.name),
        "headroom",
        format!(
            "priority group {pg} has {have} bytes of headroom; {cable_m} m of cable at this speed needs {need}: frames in flight after XOFF are dropped"
        ),
        format!(
            "declare `cable-length: {cable_m}` on {port} (the headroom follows it) or raise `qos.priority-groups.{pg}.headroom-bytes` to {need}"
        ),
    )
}

fn lossless_pgs(tm: &TmConfig) -> Vec<usize> {
    let mut pgs: Vec<usize> =
        tm.pfc.priorities.iter().map(|&p| usize::from(tm.maps.pfc_priority_to_pg[usize::from(p) % CLASSES])).collect();
    pgs.sort_unstable();
    pgs.dedup();
    pgs.retain(|&pg| tm.priority_groups[pg].lossless);
    pgs
}

/// One lossless entry of the chain: DSCP, TC, PG, queue.
type ChainEntry = (u8, u8, u8, u8);

/// Every lossless entry of the chain, for each DSCP whose class is
/// lossless.
fn lossless_chain(tm: &TmConfig) -> Vec<ChainEntry> {
    let pgs = lossless_pgs(tm);
    (0..64u8)
        .filter_map(|dscp| {
            let tc = tm.maps.dscp_to_tc[usize::from(dscp)];
            let pg = tm.maps.tc_to_pg[usize::from(tc) % CLASSES];
            pgs.contains(&usize::from(pg)).then(|| (dscp, tc, pg, tm.maps.tc_to_queue[usize::from(tc) % CLASSES]))
        })
        .collect()
}

/// Every check: each switch's, each link's whose two ends are both in
/// `switches`, and the chain across all of them. Errors first.
pub fn check_fabric(switches: &[SwitchProfile]) -> Vec<Finding> {
    let mut out: Vec<Finding> = switches.iter().flat_map(check_switch).collect();
    for (a, a_port, b, b_port) in links(switches) {
        out.extend(check_link(a, a_port, b, b_port));
    }
    out.extend(check_chain(switches));
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

/// Links between two switches of the set, each once: (switch, port index,
/// switch, port index).
fn links(switches: &[SwitchProfile]) -> Vec<(&SwitchProfile, usize, &SwitchProfile, usize)> {
    let mut out = Vec::new();
    for (ai, a) in switches.iter().enumerate() {
        for (ap, port) in a.ports.iter().enumerate() {
            let Some((system, remote)) = &port.neighbor else { continue };
            let Some((bi, b)) = switches.iter().enumerate().find(|(_, s)| &s.name == system) else { continue };
            let Some(bp) = b.ports.iter().position(|p| &p.name == remote) else { continue };
            if (ai, ap) < (bi, bp) {
                out.push((a, ap, b, bp));
            }
        }
    }
    out
}

fn check_link(a: &SwitchProfile, ap: usize, b: &SwitchProfile, bp: usize) -> Vec<Finding> {
    let (pa, pb) = (&a.ports[ap], &b.ports[bp]);
    let scope = format!("link {}:{} -- {}:{}", a.name, pa.name, b.name, pb.name);
    let mut out = Vec::new();
    if pa.mtu != pb.mtu {
        out.push(finding(
            Severity::Error,
            scope.clone(),
            "mtu",
            format!(
                "MTU {} on {}:{} but {} on {}:{}: the larger frames are dropped",
                pa.mtu, a.name, pa.name, pb.mtu, b.name, pb.name
            ),
            format!("set the same `mtu` on both ends (e.g. {})", pa.mtu.max(pb.mtu)),
        ));
    }
    let (Some(ta), Some(tb)) = (&a.tm, &b.tm) else { return out };
    let sorted = |tm: &TmConfig| {
        let mut p = tm.pfc.priorities.clone();
        p.sort_unstable();
        p.dedup();
        p
    };
    let (prio_a, prio_b) = (sorted(ta), sorted(tb));
    if prio_a != prio_b {
        out.push(finding(
            Severity::Error,
            scope.clone(),
            "pfc-priorities",
            format!(
                "PFC on priorities {prio_a:?} at {} but {prio_b:?} at {}: a pause for the others is ignored and their frames dropped",
                a.name, b.name
            ),
            "set the same `qos.pfc.priorities` on both switches".into(),
        ));
    }
    let (Some(port_a), Some(port_b)) = (ta.ports.get(ap), tb.ports.get(bp)) else { return out };
    if port_a.speed_bps != port_b.speed_bps {
        out.push(finding(
            Severity::Warning,
            scope.clone(),
            "speed",
            format!("speed {} b/s at {} but {} b/s at {}", port_a.speed_bps, a.name, port_b.speed_bps, b.name),
            "declare the link's real speed on both ends".into(),
        ));
    }
    let cable = port_a.cable_length_m.max(port_b.cable_length_m);
    if port_a.cable_length_m != port_b.cable_length_m {
        out.push(finding(
            Severity::Warning,
            scope.clone(),
            "cable-length",
            format!(
                "cable-length {} m at {} but {} m at {}: the headroom is computed for {cable} m",
                port_a.cable_length_m, a.name, port_b.cable_length_m, b.name
            ),
            format!("declare `cable-length: {cable}` on both ends"),
        ));
    }
    // The bytes the far end sends after our XOFF cross the longest
    // declared cable at the faster of the two speeds.
    let speed = port_a.speed_bps.max(port_b.speed_bps);
    for (switch, tm, port, name) in [(a, ta, port_a, &pa.name), (b, tb, port_b, &pb.name)] {
        for pg in lossless_pgs(tm) {
            let have = tm.headroom_bytes(port, pg);
            let need = pfc_headroom_bytes(speed, cable, port.mtu, tm.pfc.response_ns, tm.pfc.rx_lag_ns);
            let own = tm.needed_headroom_bytes(port);
            // Too small for itself is reported per switch already.
            if have < need && have >= own {
                let mut f = headroom_finding(switch, name, pg, have, need, cable);
                f.scope = scope.clone();
                out.push(f);
            }
        }
    }
    out
}

fn check_chain(switches: &[SwitchProfile]) -> Vec<Finding> {
    let with_tm: Vec<(&SwitchProfile, Vec<ChainEntry>)> =
        switches.iter().filter_map(|s| s.tm.as_ref().map(|tm| (s, lossless_chain(tm)))).collect();
    // The chain most switches have is the reference (the first of them
    // on a tie), so the odd one out is the one named.
    let votes = |chain: &Vec<ChainEntry>| with_tm.iter().filter(|(_, other)| other == chain).count();
    let Some((reference, chain)) = with_tm.iter().rev().max_by_key(|(_, chain)| votes(chain)) else {
        return Vec::new();
    };
    let show = |c: &ChainEntry| format!("DSCP {} -> TC {} -> PG {} -> queue {}", c.0, c.1, c.2, c.3);
    let mut out = Vec::new();
    for (switch, other) in &with_tm {
        if other == chain {
            continue;
        }
        let missing = chain
            .iter()
            .find(|c| !other.contains(c))
            .map(|c| format!("{} at {} is not so here", show(c), reference.name));
        let extra = other
            .iter()
            .find(|c| !chain.contains(c))
            .map(|c| format!("{} here is not so at {}", show(c), reference.name));
        let detail: Vec<String> = missing.into_iter().chain(extra).collect();
        out.push(finding(
            Severity::Error,
            format!("switch {}", switch.name),
            "qos-chain",
            format!(
                "the lossless DSCP -> TC -> PG -> queue chain differs from {}'s: {}",
                reference.name,
                detail.join("; ")
            ),
            format!("use the same `qos.maps` and `qos.pfc` as {}", reference.name),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ecn::WredProfile;
    use crate::tm::{EcnSetting, PortConfig};

    fn port(name: &str, peer: Option<(&str, &str)>) -> PortProfile {
        PortProfile { name: name.into(), mtu: 9100, neighbor: peer.map(|(s, p)| (s.into(), p.into())) }
    }

    /// Two switches, `a:eth1 -- b:eth1`, both RoCE at 100G with 5 m cables.
    fn pair() -> Vec<SwitchProfile> {
        let tm = TmConfig::roce(vec![PortConfig { cable_length_m: 5, mtu: 9118, ..PortConfig::new(100_000_000_000) }]);
        ["a", "b"]
            .iter()
            .map(|&name| {
                let peer = if name == "a" { "b" } else { "a" };
                SwitchProfile {
                    name: name.into(),
                    ports: vec![port("eth1", Some((peer, "eth1")))],
                    tm: Some(tm.clone()),
                }
            })
            .collect()
    }

    fn checks(findings: &[Finding]) -> Vec<(&str, &str)> {
        findings.iter().map(|f| (f.check.as_str(), f.scope.as_str())).collect()
    }

    #[test]
    fn a_clean_pair_passes() {
        assert_eq!(check_fabric(&pair()), []);
    }

    #[test]
    fn each_seeded_fault_is_found_and_named() {
        let mut s = pair();
        s[1].tm.as_mut().unwrap().pfc.priorities = vec![3];
        s[1].tm.as_mut().unwrap().priority_groups[4].lossless = false;
        let found = check_fabric(&s);
        assert!(checks(&found).contains(&("pfc-priorities", "link a:eth1 -- b:eth1")), "{found:#?}");
        assert!(checks(&found).contains(&("qos-chain", "switch b")), "{found:#?}");

        let mut s = pair();
        s[0].ports[0].mtu = 1500;
        assert_eq!(checks(&check_fabric(&s)), [("mtu", "link a:eth1 -- b:eth1")]);

        // b declares a 2 km cable: a's headroom, right for 5 m, is not.
        let mut s = pair();
        let fixed = s[0].tm.as_ref().unwrap().headroom_bytes(&s[0].tm.as_ref().unwrap().ports[0], 3) as u32;
        for pg in [3, 4] {
            s[0].tm.as_mut().unwrap().priority_groups[pg].headroom_bytes = Some(fixed);
        }
        s[1].tm.as_mut().unwrap().ports[0].cable_length_m = 2000;
        let found = check_fabric(&s);
        let headroom: Vec<&Finding> = found.iter().filter(|f| f.check == "headroom").collect();
        assert_eq!(headroom.len(), 2, "PGs 3 and 4 of a:eth1: {found:#?}");
        assert!(headroom[0].message.contains("2000 m") && headroom[0].fix.contains("cable-length: 2000"));
        assert!(checks(&found).contains(&("cable-length", "link a:eth1 -- b:eth1")));

        let mut s = pair();
        let tm = s[0].tm.as_mut().unwrap();
        tm.queues[3].ecn = EcnSetting::Profile(WredProfile {
            kmin_bytes: 9_000_000,
            kmax_bytes: 9_500_000,
            ..WredProfile::dcqcn(100_000_000_000, 9118)
        });
        let found = check_fabric(&s);
        assert_eq!(checks(&found), [("ecn-kmin", "switch a")], "{found:#?}");
        assert!(found[0].message.contains("XOFF"));

        let mut s = pair();
        s[1].tm.as_mut().unwrap().watchdog.enabled = false;
        let found = check_fabric(&s);
        assert_eq!(checks(&found), [("watchdog", "switch b")]);
        assert_eq!(found[0].severity, Severity::Warning);

        let mut s = pair();
        s[1].tm = None;
        assert_eq!(checks(&check_fabric(&s)), [("traffic-manager", "switch b")]);
    }
}
