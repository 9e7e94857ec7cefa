//! `labs check`: waits until a deployed lab has converged and says how long
//! it took. Converged means, in this order:
//!
//! 1. every BGP neighbour of every `switchd` (`swcli show bgp summary
//!    --json`) and FRR node (`vtysh show bgp summary json`) is Established;
//! 2. every BGP-speaking `switchd` has the IPv4 loopback of every
//!    `switchd` in another AS installed (`swcli show ip route --json`);
//! 3. every EVPN VTEP floods each of its VNIs to every other VTEP with that
//!    VNI (type 3 routes, see [`crate::evpn`]);
//! 4. every host pings every address of every other host it has a route to
//!    (hosts in different VNIs without a router between them are not a
//!    pair: the kernel refuses the echo with "network unreachable");
//!    in a large lab ([`Pairs`]) every host pings one address behind every
//!    leaf instead, and every host address is pinged at least once;
//!    With tenant VRFs (see [`crate::irb`]): the pairs within a VRF ping,
//!    bridged or routed by the anycast gateways, and then no pair across
//!    two VRFs does;
//! 5. every EVPN VTEP has learned the MACs of the hosts behind the other
//!    VTEPs in its hosts' subnets (type 2 routes);
//! 6. in a lab with HCAs: the SM embedded in a switch is master and has
//!    swept the fabric, every HCA has a LID, and every HCA ibpings every
//!    other (see [`crate::ib`]).

use std::fmt;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::hosts::{HostPort, host_addresses, host_interfaces, host_ports};
use crate::runner::{Lab, NodeState, binary};
use crate::topology::Role;

/// Which host pairs step 4 pings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pairs {
    /// Every address of every other host, from every host.
    All,
    /// From every host, one address behind every switch that has hosts
    /// (rotating through that switch's addresses), plus any address no
    /// source picked: every host reaches every leaf, each leaf pair's path
    /// is crossed by every host behind it, and every host address answers.
    /// What it does not prove: that each individual pair of hosts does
    /// (their state in the fabric is the leaves' routes and neighbour
    /// entries, which it covers; a filter on one pair it would miss).
    PerLeaf,
    /// `All` up to [`AUTO_ALL_PAIRS_LIMIT`] pairs, `PerLeaf` above.
    #[default]
    Auto,
}

/// Above this many all-pairs targets, [`Pairs::Auto`] pings per leaf: the
/// 32-switch rails lab (16,128 pairs) still pings all, the 128-switch one
/// (245,024, half a minute of a 2-core machine's switchds) does not.
pub const AUTO_ALL_PAIRS_LIMIT: usize = 20_000;

#[derive(Debug, Clone)]
pub struct Report {
    pub elapsed: Duration,
    pub sessions: usize,
    pub routes: usize,
    pub pairs: usize,
    /// Whether `pairs` is every pair or the per-leaf sample.
    pub per_leaf: bool,
    /// When the sessions were up and the routes in, from the start.
    pub sessions_at: Duration,
    pub routes_at: Duration,
    /// (VNI, remote VTEP) flood entries checked on the EVPN VTEPs.
    pub evpn_flood_entries: usize,
    /// Remote MACs checked on the EVPN VTEPs.
    pub evpn_remote_macs: usize,
    /// Host pairs in different subnets of one VRF that ping (routed by
    /// the anycast gateways, symmetric IRB).
    pub routed_pairs: usize,
    /// Host pairs across two VRFs that do not ping, as they must not.
    pub isolated_pairs: usize,
    pub ib: Option<IbReport>,
}

/// The IB-like plane's part of a converged lab.
#[derive(Debug, Clone)]
pub struct IbReport {
    /// The switch whose SM is master.
    pub sm_switch: String,
    pub switches: u64,
    pub hcas: usize,
    /// The SM's own figure for its last sweep.
    pub last_sweep_ms: Option<f64>,
    /// When the fabric was up with every HCA's LID, from the start.
    pub up_at: Duration,
    /// Ordered HCA pairs whose every ibping came back.
    pub pairs: usize,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "converged in {:.2} s", self.elapsed.as_secs_f64())?;
        // A lab of only the IB-like plane has no BGP and no IP hosts.
        if self.ib.is_none() || self.sessions > 0 || self.pairs > 0 {
            write!(
                f,
                ": {} BGP sessions established ({:.2} s), {} loopback routes installed ({:.2} s), {} host pairs ping{}",
                self.sessions,
                self.sessions_at.as_secs_f64(),
                self.routes,
                self.routes_at.as_secs_f64(),
                self.pairs,
                if self.per_leaf {
                    " (per leaf: every host to every leaf, every host address; --pairs all for all)"
                } else {
                    ""
                }
            )?;
        }
        if self.isolated_pairs > 0 {
            write!(
                f,
                " ({} routed between subnets), {} cross-VRF pairs isolated",
                self.routed_pairs, self.isolated_pairs
            )?;
        }
        if let Some(ib) = &self.ib {
            write!(
                f,
                "{}IB: SM on {} master, fabric up with {} switches and {} HCAs each with a LID ({:.2} s, last sweep {:.0} ms), {} HCA pairs ibping",
                if self.sessions > 0 || self.pairs > 0 { ", " } else { ": " },
                ib.sm_switch,
                ib.switches,
                ib.hcas,
                ib.up_at.as_secs_f64(),
                ib.last_sweep_ms.unwrap_or(0.0),
                ib.pairs
            )?;
        }
        if self.evpn_flood_entries > 0 {
            write!(
                f,
                ", EVPN: {} remote VTEP flood entries, {} remote MACs learned",
                self.evpn_flood_entries, self.evpn_remote_macs
            )?;
        }
        Ok(())
    }
}

pub(crate) fn swcli(node: &NodeState, args: &[&str]) -> Option<Value> {
    let socket = node.config.as_ref()?.with_extension("sock");
    let out =
        Command::new(binary("swcli")).arg("--socket").arg(&socket).args(args).stdin(Stdio::null()).output().ok()?;
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

pub(crate) fn config_yaml(node: &NodeState) -> Option<serde_yaml::Value> {
    serde_yaml::from_str(&std::fs::read_to_string(node.config.as_ref()?).ok()?).ok()
}

/// (established, configured) sessions of one node.
fn sessions(lab: &Lab, node: &NodeState) -> (usize, usize) {
    match node.role {
        Role::Switchd => {
            let configured =
                config_yaml(node).and_then(|c| c["bgp"]["neighbors"].as_sequence().map(|s| s.len())).unwrap_or(0);
            if configured == 0 {
                return (0, 0);
            }
            let peers = swcli(node, &["show", "bgp", "summary", "--json"])
                .and_then(|s| s["peers"].as_array().cloned())
                .unwrap_or_default();
            (peers.iter().filter(|p| p["state"] == "Established").count(), configured)
        }
        Role::Frr => {
            let vty = crate::runner::state_dir(&lab.name).join(&node.name);
            let out = Command::new("vtysh")
                .arg("--vty_socket")
                .arg(&vty)
                .args(["-d", "bgpd", "-c", "show bgp summary json"])
                .stdin(Stdio::null())
                .output();
            let summary: Value = out.ok().and_then(|o| serde_json::from_slice(&o.stdout).ok()).unwrap_or(Value::Null);
            let peers = summary["ipv4Unicast"]["peers"].as_object().cloned().unwrap_or_default();
            let configured = std::fs::read_to_string(node.config.as_deref().unwrap_or(Path::new("/dev/null")))
                .map(|t| {
                    t.lines().filter(|l| l.trim_start().starts_with("neighbor") && l.contains("remote-as")).count()
                })
                .unwrap_or(0);
            (peers.values().filter(|p| p["state"] == "Established").count(), configured)
        }
        Role::Host | Role::Hca => (0, 0),
    }
}

fn loopbacks(node: &NodeState) -> Vec<String> {
    config_yaml(node)
        .and_then(|c| c["loopback"].as_sequence().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .filter(|p| !p.contains(':'))
        .collect()
}

/// How many of `wanted` prefixes the node has installed.
fn installed(node: &NodeState, wanted: &[String]) -> usize {
    let routes =
        swcli(node, &["show", "ip", "route", "--json"]).and_then(|r| r.as_array().cloned()).unwrap_or_default();
    wanted.iter().filter(|p| routes.iter().any(|r| r["prefix"] == p.as_str() && r["installed"] == true)).count()
}

/// One ping round from every source (a few sources at a time, each on one
/// raw socket, see [`crate::ping`]); returns the pairs with a route and
/// the unanswered pairs per source.
fn ping_round(sources: &[(String, Vec<Ipv4Addr>)]) -> (usize, Vec<(String, Vec<Ipv4Addr>)>) {
    let next = AtomicUsize::new(0);
    let routed = AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map(|n| n.get() * 4).unwrap_or(8).min(sources.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((ns, targets)) = sources.get(i) else { break };
                    let unanswered = match crate::ping::ping_round(ns, targets, Duration::from_secs(1)) {
                        Ok(round) => {
                            routed.fetch_add(targets.len() - round.unroutable.len(), Ordering::Relaxed);
                            round.unanswered
                        }
                        Err(_) => targets.clone(),
                    };
                    if !unanswered.is_empty() {
                        failed.lock().expect("lock").push((ns.clone(), unanswered));
                    }
                }
            });
        }
    });
    (routed.into_inner(), failed.into_inner().expect("lock"))
}

/// `f` over `items` on a few threads (each call mostly waits for a
/// switch's management socket); results in order.
pub(crate) fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(usize, &T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::with_capacity(items.len()));
    let workers = std::thread::available_parallelism().map(|n| n.get() * 4).unwrap_or(8).min(items.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let result = f(i, item);
                    results.lock().expect("lock").push((i, result));
                }
            });
        }
    });
    let mut results = results.into_inner().expect("lock");
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, result)| result).collect()
}

pub fn converge(lab: &Lab, timeout: Duration, which_pairs: Pairs) -> Result<Report, String> {
    let started = Instant::now();
    let deadline = started + timeout;
    let poll = Duration::from_millis(200);
    // 1. Sessions.
    let speakers: Vec<&NodeState> = lab.nodes.iter().filter(|n| matches!(n.role, Role::Switchd | Role::Frr)).collect();
    let mut established = 0;
    loop {
        let mut missing = Vec::new();
        let mut total = 0;
        let counts = in_parallel(&speakers, |_, node| sessions(lab, node));
        for (node, (up, configured)) in speakers.iter().zip(counts) {
            total += up;
            if up < configured {
                missing.push(format!("{} {up}/{configured}", node.name));
            }
        }
        if missing.is_empty() {
            established = established.max(total);
            break;
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "not converged after {timeout:?}: BGP sessions not established on {}",
                missing.join(", ")
            ));
        }
        std::thread::sleep(poll);
    }
    let sessions_at = started.elapsed();
    // 2. Loopback routes on every BGP switchd.
    let switches: Vec<&NodeState> = lab.nodes.iter().filter(|n| n.role == Role::Switchd).collect();
    let bgp_switches: Vec<&NodeState> =
        switches.iter().copied().filter(|n| config_yaml(n).is_some_and(|c| !c["bgp"].is_null())).collect();
    // A speaker never takes paths through its own AS (RFC 4271 9.1.2), so
    // switches sharing an AS (the spines) do not learn each other's
    // loopbacks. Each config is read once, not once per pair and poll.
    let asns: Vec<Option<u64>> =
        bgp_switches.iter().map(|n| config_yaml(n).and_then(|c| c["bgp"]["asn"].as_u64())).collect();
    let own: Vec<Vec<String>> = bgp_switches.iter().map(|n| loopbacks(n)).collect();
    let wanted: Vec<Vec<String>> = (0..bgp_switches.len())
        .map(|i| {
            (0..bgp_switches.len()).filter(|&j| j != i && asns[j] != asns[i]).flat_map(|j| own[j].clone()).collect()
        })
        .collect();
    let mut routes = 0;
    loop {
        let mut missing = Vec::new();
        let mut total = 0;
        let counts = in_parallel(&bgp_switches, |i, node| installed(node, &wanted[i]));
        for (i, (node, have)) in bgp_switches.iter().zip(counts).enumerate() {
            let wanted = &wanted[i];
            total += have;
            if have < wanted.len() {
                missing.push(format!("{} {have}/{}", node.name, wanted.len()));
            }
        }
        if missing.is_empty() {
            routes = routes.max(total);
            break;
        }
        if Instant::now() >= deadline {
            return Err(format!("not converged after {timeout:?}: loopback routes missing on {}", missing.join(", ")));
        }
        std::thread::sleep(poll);
    }
    let routes_at = started.elapsed();
    // 3. EVPN flood lists.
    let vteps = crate::evpn::vteps(lab);
    let evpn_flood_entries =
        wait_for(deadline, timeout, "EVPN flood lists", || crate::evpn::flood_lists_missing(lab, &vteps))?;
    // 4. All-pairs ping, retrying the pairs that failed.
    // The hosts' interfaces, read once for steps 4 and 5.
    let reading = Instant::now();
    let interfaces = host_interfaces(lab);
    eprintln!("host interfaces of {} hosts read in {:.2} s", interfaces.len(), reading.elapsed().as_secs_f64());
    let ports = host_ports(lab, &interfaces);
    let hosts = host_addresses(&interfaces);
    // With tenant VRFs, the pairs across VRFs must not ping (step 4b).
    let irb = crate::irb::hosts(lab, &hosts).map(|h| crate::irb::plan(&h));
    let all_pairs: usize = hosts.iter().map(|(_, _, a)| a.len()).sum::<usize>() * hosts.len().saturating_sub(1);
    let per_leaf = irb.is_none()
        && match which_pairs {
            Pairs::All => false,
            Pairs::PerLeaf => true,
            Pairs::Auto => all_pairs > AUTO_ALL_PAIRS_LIMIT,
        };
    let mut pending: Vec<(String, Vec<Ipv4Addr>)> = match &irb {
        Some(plan) => plan.reachable.clone(),
        None if per_leaf => per_leaf_targets(&host_leaves(&ports, &hosts)),
        None => hosts
            .iter()
            .map(|(src, ns, _)| {
                let others = hosts.iter().filter(|(dst, _, _)| dst != src);
                (ns.clone(), others.flat_map(|(_, _, addresses)| addresses.iter().copied()).collect())
            })
            .collect(),
    };
    let mut pairs = None;
    // (A lab without IP hosts, such as the IB-like one, has no pass to make.)
    for pass in 1.. {
        if pending.is_empty() {
            break;
        }
        let pass_started = Instant::now();
        let (tried, failed) = ping_round(&pending);
        pairs.get_or_insert(tried);
        pending = failed;
        let unanswered: usize = pending.iter().map(|(_, a)| a.len()).sum();
        let sample: Vec<String> =
            pending.iter().flat_map(|(ns, a)| a.iter().map(move |a| format!("{ns} -> {a}"))).take(4).collect();
        eprintln!(
            "all-pairs ping, pass {pass}: {tried} pairs tried, {unanswered} unanswered ({:.2} s) {}",
            pass_started.elapsed().as_secs_f64(),
            sample.join(", ")
        );
        if pending.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            let count: usize = pending.iter().map(|(_, a)| a.len()).sum();
            let sample: Vec<String> =
                pending.iter().flat_map(|(ns, a)| a.iter().map(move |a| format!("{ns} -> {a}"))).take(5).collect();
            return Err(format!(
                "not converged after {timeout:?}: {count} of {} host pairs do not ping (e.g. {})",
                pairs.unwrap_or(0),
                sample.join(", ")
            ));
        }
        std::thread::sleep(poll);
    }
    let pairs = pairs.unwrap_or(0);
    // 4b. Cross-VRF pairs: once every pair within a VRF answers, no echo
    // across two VRFs comes back.
    let (routed_pairs, isolated_pairs) = match &irb {
        Some(plan) => (plan.routed, isolated(&plan.isolated)?),
        None => (0, 0),
    };
    // 5. EVPN remote MACs, learned from the hosts' pings.
    let evpn_remote_macs =
        wait_for(deadline, timeout, "EVPN remote MACs", || crate::evpn::remote_macs_missing(lab, &vteps, &ports))?;
    // 6. The IB-like plane: the SM's sweep, LIDs, all-pairs ibping.
    let ib = if crate::ib::hcas(lab).is_empty() { None } else { Some(ib_converge(lab, started, deadline, timeout)?) };
    Ok(Report {
        elapsed: started.elapsed(),
        sessions: established,
        routes,
        pairs,
        per_leaf,
        sessions_at,
        routes_at,
        evpn_flood_entries,
        evpn_remote_macs,
        routed_pairs,
        isolated_pairs,
        ib,
    })
}

/// A host of the per-leaf ping: its namespace, and each of its addresses
/// with the switch that address's interface is cabled to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostLeaves {
    pub namespace: String,
    /// (address, the switch its interface is cabled to).
    pub addresses: Vec<(Ipv4Addr, String)>,
}

/// The hosts of `host_addresses` with the switch behind each address.
fn host_leaves(ports: &[HostPort], hosts: &[(String, String, Vec<Ipv4Addr>)]) -> Vec<HostLeaves> {
    hosts
        .iter()
        .map(|(_, namespace, addresses)| HostLeaves {
            namespace: namespace.clone(),
            addresses: addresses
                .iter()
                .map(|a| {
                    let leaf = ports.iter().find(|p| p.address == *a).map(|p| p.attached_to.clone());
                    // An address on no cabled interface is its own "leaf": pinged by every host.
                    (*a, leaf.unwrap_or_else(|| a.to_string()))
                })
                .collect(),
        })
        .collect()
}

/// [`Pairs::PerLeaf`]'s targets: from each host, one address of another
/// host behind every switch (source `i` takes the switch's `i`-th address,
/// modulo how many it has, so the sources spread over them); then each
/// address no source picked, from a host behind the same switch (or any
/// other host).
pub(crate) fn per_leaf_targets(hosts: &[HostLeaves]) -> Vec<(String, Vec<Ipv4Addr>)> {
    let mut behind: std::collections::BTreeMap<&str, Vec<(usize, Ipv4Addr)>> = Default::default();
    for (h, host) in hosts.iter().enumerate() {
        for (address, leaf) in &host.addresses {
            behind.entry(leaf.as_str()).or_default().push((h, *address));
        }
    }
    let mut targets: Vec<Vec<Ipv4Addr>> = vec![Vec::new(); hosts.len()];
    let mut picked = std::collections::HashSet::new();
    for (source, chosen) in targets.iter_mut().enumerate() {
        for addresses in behind.values() {
            let others: Vec<Ipv4Addr> = addresses.iter().filter(|(h, _)| *h != source).map(|(_, a)| *a).collect();
            if let Some(address) = others.get(source % others.len().max(1)) {
                chosen.push(*address);
                picked.insert(*address);
            }
        }
    }
    for (leaf, addresses) in &behind {
        for (owner, address) in addresses {
            if picked.contains(address) {
                continue;
            }
            let neighbour = hosts
                .iter()
                .enumerate()
                .find(|(h, host)| h != owner && host.addresses.iter().any(|(_, l)| l == leaf))
                .or_else(|| hosts.iter().enumerate().find(|(h, _)| h != owner));
            if let Some((source, _)) = neighbour {
                targets[source].push(*address);
                picked.insert(*address);
            }
        }
    }
    hosts.iter().zip(targets).map(|(host, t)| (host.namespace.clone(), t)).filter(|(_, t)| !t.is_empty()).collect()
}

/// One ping round over the cross-VRF pairs: every one must stay
/// unanswered (a leak between tenants is an error); returns how many.
fn isolated(pairs: &[(String, Vec<Ipv4Addr>)]) -> Result<usize, String> {
    let rounds = in_parallel(pairs, |_, (ns, targets)| crate::ping::ping_round(ns, targets, Duration::from_secs(1)));
    let mut leaks = Vec::new();
    for ((ns, targets), round) in pairs.iter().zip(rounds) {
        let round = round?;
        let silent = |a: &Ipv4Addr| round.unanswered.contains(a) || round.unroutable.contains(a);
        leaks.extend(targets.iter().filter(|a| !silent(a)).map(|a| format!("{ns} -> {a}")));
    }
    if !leaks.is_empty() {
        return Err(format!("{} cross-VRF pairs ping (tenants leak): {}", leaks.len(), leaks.join(", ")));
    }
    Ok(pairs.iter().map(|(_, t)| t.len()).sum())
}

/// Step 6: the SM's sweep done with a LID for every HCA, then ibping
/// rounds until every pair answers.
fn ib_converge(lab: &Lab, started: Instant, deadline: Instant, timeout: Duration) -> Result<IbReport, String> {
    let (sm, lids) =
        crate::ib::wait_fabric_up(lab, deadline).map_err(|e| format!("not converged after {timeout:?}: {e}"))?;
    let up_at = started.elapsed();
    for pass in 1.. {
        let pass_started = Instant::now();
        // A round ends when every HCA has its summaries, or at the deadline.
        let (pairs, failed) = crate::ib::ibping_round(lab, &lids, deadline);
        eprintln!(
            "all-pairs ibping, pass {pass}: {pairs} pairs answered, {} not ({:.2} s) {}",
            failed.len(),
            pass_started.elapsed().as_secs_f64(),
            failed.iter().take(4).cloned().collect::<Vec<_>>().join(", ")
        );
        if failed.is_empty() {
            let hcas = lids.len();
            return Ok(IbReport {
                sm_switch: sm.switch,
                switches: sm.switches,
                hcas,
                last_sweep_ms: sm.last_sweep_ms,
                up_at,
                pairs,
            });
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "not converged after {timeout:?}: {} HCA pairs do not ibping (e.g. {})\n{}",
                failed.len(),
                failed.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
                crate::ib::diagnostics(lab)
            ));
        }
    }
    unreachable!("the loop returns")
}

/// Polls `pending` (count checked, what is missing) until nothing is
/// missing; the count, or an error naming what was still missing.
fn wait_for(
    deadline: Instant,
    timeout: Duration,
    what: &str,
    mut pending: impl FnMut() -> (usize, Vec<String>),
) -> Result<usize, String> {
    loop {
        let (checked, missing) = pending();
        if missing.is_empty() {
            return Ok(checked);
        }
        if Instant::now() >= deadline {
            return Err(format!("not converged after {timeout:?}: {what}: {}", missing.join("; ")));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` hosts per leaf on `leaves` leaves, each host with one address.
    fn hosts(leaves: u8, n: u8) -> Vec<HostLeaves> {
        (0..leaves)
            .flat_map(|l| {
                (0..n).map(move |h| HostLeaves {
                    namespace: format!("l{l}h{h}"),
                    addresses: vec![(Ipv4Addr::new(10, l, 0, h), format!("leaf{l}"))],
                })
            })
            .collect()
    }

    #[test]
    fn per_leaf_reaches_every_leaf_from_every_host_and_every_address() {
        let hosts = hosts(5, 3);
        let targets = per_leaf_targets(&hosts);
        assert_eq!(targets.len(), 15);
        let mut targeted = std::collections::HashSet::new();
        for (ns, addresses) in &targets {
            let leaves: std::collections::BTreeSet<u8> = addresses.iter().map(|a| a.octets()[1]).collect();
            assert_eq!(leaves.len(), 5, "{ns} reaches every leaf: {addresses:?}");
            let own = hosts.iter().find(|h| &h.namespace == ns).unwrap().addresses[0].0;
            assert!(!addresses.contains(&own), "{ns} pings itself");
            targeted.extend(addresses.iter().copied());
        }
        assert_eq!(targeted.len(), 15, "every address pinged");
        // 15 hosts x 5 leaves, not 15 x 14.
        assert_eq!(targets.iter().map(|(_, t)| t.len()).sum::<usize>(), 75);
    }

    #[test]
    fn per_leaf_adds_the_addresses_no_source_picked() {
        // One source host and a leaf of four: rotation alone picks one.
        let mut hosts = hosts(1, 4);
        hosts.push(HostLeaves {
            namespace: "lone".into(),
            addresses: vec![(Ipv4Addr::new(10, 9, 0, 1), "leaf9".into())],
        });
        let targets = per_leaf_targets(&hosts);
        let targeted: std::collections::HashSet<Ipv4Addr> =
            targets.iter().flat_map(|(_, t)| t.iter().copied()).collect();
        assert_eq!(targeted.len(), 5, "{targets:?}");
    }
}
