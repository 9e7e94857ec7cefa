//! `labs traffic`: RoCE-like `fabric-host` flows in a deployed lab, an
//! all-to-all or an incast, with what they achieved (goodput, bytes
//! delivered) and what the switches did meanwhile (PFC pause frames sent,
//! frames the traffic managers dropped).
//!
//! Flows follow the hosts' own routing: a flow from host A to an address of
//! host B leaves through the interface A's kernel routes that address to
//! (`ip route get`), so on an `ai-rail` server NIC r reaches rail r of every
//! other server and nothing else. One `fabric-host recv` per destination
//! interface takes all its flows (each its own queue pair); the senders
//! start together at one wall-clock instant.

use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use crate::check::swcli;
use crate::hosts::{HostPort, host_interfaces, host_ports, route_interface};
use crate::runner::{Lab, binary};
use crate::topology::Role;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// Every host to every address of every other host it has a route to.
    AllToAll,
    /// Every other host to the first address of the last host.
    Incast,
}

#[derive(Debug, Clone)]
pub struct TrafficOptions {
    pub pattern: Pattern,
    /// Bytes per flow.
    pub bytes: u64,
    /// Each sender's wire rate, bits per second.
    pub rate_bps: u64,
    pub dscp: u8,
    /// Each `fabric-host`'s own time limit.
    pub timeout: Duration,
}

/// One planned flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Flow {
    pub from: String,
    pub interface: String,
    pub to: String,
    pub to_interface: String,
    pub address: Ipv4Addr,
    /// Unique among the flows into one receiver.
    pub qp: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct FlowResult {
    #[serde(flatten)]
    pub flow: Flow,
    pub delivered_bytes: u64,
    pub completed: bool,
    pub pauses_obeyed: u64,
    /// Go-back-N's work: frames the sender sent again, NAKs it got, timer expiries.
    pub retransmitted: u64,
    pub naks: u64,
    pub timeouts: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReceiverResult {
    pub host: String,
    pub interface: String,
    pub flows: usize,
    pub expected_bytes: u64,
    pub delivered_bytes: u64,
    pub goodput_bps: u64,
    /// Frames the kernel dropped before `fabric-host` read them (its
    /// socket's rx ring full).
    pub rx_ring_drops: u64,
    /// Arrivals ahead of a hole, and arrivals already delivered or held.
    pub out_of_order: u64,
    pub duplicates: u64,
}

/// The switches' counters over the run, summed over every `switchd`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SwitchCounters {
    /// PFC frames sent, per priority.
    pub pfc_tx: [u64; 8],
    /// Frames the traffic managers refused.
    pub drops: u64,
    /// Frames the kernel dropped before a switch read them: a port's
    /// `AF_PACKET` receive ring full while its forwarding thread waited
    /// for a CPU (ahead of the traffic manager, so PFC cannot prevent it).
    pub rx_ring_drops: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TrafficReport {
    pub pattern: Pattern,
    pub bytes_per_flow: u64,
    pub rate_bps: u64,
    pub dscp: u8,
    pub flows: Vec<FlowResult>,
    pub receivers: Vec<ReceiverResult>,
    /// First start to last receiver done.
    pub elapsed_ns: u64,
    pub switches: SwitchCounters,
}

impl TrafficReport {
    pub fn expected_bytes(&self) -> u64 {
        self.receivers.iter().map(|r| r.expected_bytes).sum()
    }

    pub fn delivered_bytes(&self) -> u64 {
        self.receivers.iter().map(|r| r.delivered_bytes).sum()
    }

    /// Every flow completed and every byte arrived.
    pub fn complete(&self) -> bool {
        self.flows.iter().all(|f| f.completed) && self.delivered_bytes() == self.expected_bytes()
    }
}

impl fmt::Display for TrafficReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        let mbps = |b: u64| b as f64 / 1e6;
        writeln!(
            f,
            "traffic {:?}: {} flows of {:.2} MiB at {:.0} Mb/s, DSCP {}",
            self.pattern,
            self.flows.len(),
            mib(self.bytes_per_flow),
            mbps(self.rate_bps),
            self.dscp
        )?;
        for r in &self.receivers {
            writeln!(
                f,
                "  {}:{} {} flows, {:.2}/{:.2} MiB delivered, goodput {:.1} Mb/s",
                r.host,
                r.interface,
                r.flows,
                mib(r.delivered_bytes),
                mib(r.expected_bytes),
                mbps(r.goodput_bps)
            )?;
        }
        let elapsed = self.elapsed_ns.max(1) as f64 / 1e9;
        writeln!(
            f,
            "delivered {:.2} of {:.2} MiB in {elapsed:.2} s ({:.1} Mb/s aggregate); {} of {} flows completed",
            mib(self.delivered_bytes()),
            mib(self.expected_bytes()),
            self.delivered_bytes() as f64 * 8.0 / elapsed / 1e6,
            self.flows.iter().filter(|f| f.completed).count(),
            self.flows.len()
        )?;
        let obeyed: u64 = self.flows.iter().map(|f| f.pauses_obeyed).sum();
        let again: u64 = self.flows.iter().map(|f| f.retransmitted).sum();
        let ring_drops: u64 = self.receivers.iter().map(|r| r.rx_ring_drops).sum();
        writeln!(
            f,
            "switches: {} PFC frames sent (per priority {:?}), {obeyed} pauses obeyed by senders, {} frames dropped by traffic managers, {} by full port rings",
            self.switches.pfc_tx.iter().sum::<u64>(),
            self.switches.pfc_tx,
            self.switches.drops,
            self.switches.rx_ring_drops
        )?;
        write!(f, "hosts: {ring_drops} frames dropped by full receive rings, {again} frames sent again (go-back-N)")
    }
}

/// The flows of `pattern` over `ports`; `route` says which interface a
/// host's namespace sends to an address through.
pub fn plan(pattern: Pattern, ports: &[HostPort], route: &dyn Fn(&HostPort, Ipv4Addr) -> Option<String>) -> Vec<Flow> {
    let destinations: Vec<&HostPort> = match pattern {
        Pattern::AllToAll => ports.iter().collect(),
        Pattern::Incast => {
            let last = ports.iter().map(|p| &p.host).max();
            ports.iter().filter(|p| Some(&p.host) == last).take(1).collect()
        }
    };
    let mut flows = Vec::new();
    let mut qps: BTreeMap<(String, String), u32> = BTreeMap::new();
    for destination in destinations {
        let mut sources: Vec<&str> = ports.iter().map(|p| p.host.as_str()).filter(|h| *h != destination.host).collect();
        sources.dedup();
        for source in sources {
            let Some(any) = ports.iter().find(|p| p.host == source) else { continue };
            let Some(interface) = route(any, destination.address) else { continue };
            // Only through an interface of the lab's (not a management one).
            if !ports.iter().any(|p| p.host == source && p.interface == interface) {
                continue;
            }
            let qp = qps.entry((destination.host.clone(), destination.interface.clone())).or_insert(0);
            *qp += 1;
            flows.push(Flow {
                from: source.to_owned(),
                interface,
                to: destination.host.clone(),
                to_interface: destination.interface.clone(),
                address: destination.address,
                qp: *qp,
            });
        }
    }
    flows
}

fn fabric_host(namespace: &str, interface: &str, args: &[String]) -> Result<Child, String> {
    Command::new("ip")
        .args(["netns", "exec", namespace])
        .arg(binary("fabric-host"))
        .args(["--interface", interface, "--json"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start fabric-host in {namespace}: {e}"))
}

fn report_of(child: Child, what: &str) -> Result<Value, String> {
    let out = child.wait_with_output().map_err(|e| format!("{what}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("fabric-host {what} failed: {stdout}{}", String::from_utf8_lossy(&out.stderr)));
    }
    serde_json::from_str(stdout.trim()).map_err(|e| format!("fabric-host {what}: {e}: {stdout}"))
}

fn switch_counters(lab: &Lab) -> SwitchCounters {
    let mut counters = SwitchCounters::default();
    for node in lab.nodes.iter().filter(|n| n.role == Role::Switchd) {
        for row in
            swcli(node, &["show", "pfc", "counters", "--json"]).and_then(|v| v.as_array().cloned()).unwrap_or_default()
        {
            for (priority, n) in row["tx"].as_array().into_iter().flatten().enumerate().take(8) {
                counters.pfc_tx[priority] += n.as_u64().unwrap_or(0);
            }
        }
        let pools = swcli(node, &["show", "buffer", "pool", "--json"]).unwrap_or(Value::Null);
        for pool in pools.as_array().into_iter().flatten() {
            counters.drops += pool["drops"].as_array().into_iter().flatten().filter_map(|r| r[1].as_u64()).sum::<u64>();
        }
        let ports = swcli(node, &["show", "interfaces", "--json"]).unwrap_or(Value::Null);
        for port in ports.as_array().into_iter().flatten() {
            counters.rx_ring_drops += port["counters"]["rx_ring_drops"].as_u64().unwrap_or(0);
        }
    }
    counters
}

/// Runs the flows and collects the reports.
pub fn run(lab: &Lab, options: &TrafficOptions) -> Result<TrafficReport, String> {
    let ports = host_ports(lab, &host_interfaces(lab));
    let flows = plan(options.pattern, &ports, &|port, address| route_interface(&port.namespace, address));
    if flows.is_empty() {
        return Err(format!("lab {} has no pair of hosts with a route between them", lab.name));
    }
    let namespace = |host: &str| crate::runner::namespace(&lab.name, host);
    let before = switch_counters(lab);
    let started = std::time::Instant::now();
    let timeout = options.timeout.as_secs().max(1).to_string();
    // Receivers first, so the first packet finds them.
    let mut into: BTreeMap<(String, String), usize> = BTreeMap::new();
    for flow in &flows {
        *into.entry((flow.to.clone(), flow.to_interface.clone())).or_default() += 1;
    }
    let mut receivers = Vec::new();
    for ((host, interface), count) in &into {
        let expect = (*count as u64 * options.bytes).to_string();
        let args =
            ["recv", "--expect-bytes", &expect, "--idle-ms", "3000", "--timeout-secs", &timeout].map(String::from);
        receivers.push((host.clone(), interface.clone(), *count, fabric_host(&namespace(host), interface, &args)?));
    }
    std::thread::sleep(Duration::from_millis(300));
    // Together, once each has resolved its next hop.
    let start_at = (SystemTime::now() + Duration::from_millis(1000 + 20 * flows.len() as u64))
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_millis()
        .to_string();
    let mut senders = Vec::new();
    for flow in &flows {
        let args = [
            "send".to_owned(),
            "--to".into(),
            flow.address.to_string(),
            "--rate".into(),
            options.rate_bps.to_string(),
            "--bytes".into(),
            options.bytes.to_string(),
            "--dscp".into(),
            options.dscp.to_string(),
            "--qp".into(),
            flow.qp.to_string(),
            "--timeout-secs".into(),
            timeout.clone(),
            "--start-at-unix-ms".into(),
            start_at.clone(),
        ];
        senders.push(fabric_host(&namespace(&flow.from), &flow.interface, &args)?);
    }
    let mut results = Vec::new();
    for (flow, child) in flows.iter().zip(senders) {
        let report = report_of(child, &format!("send {} -> {}", flow.from, flow.address))?;
        results.push(FlowResult {
            flow: flow.clone(),
            delivered_bytes: 0,
            completed: report["completed"].as_bool().unwrap_or(false),
            pauses_obeyed: report["pauses_obeyed"].as_u64().unwrap_or(0),
            retransmitted: report["transport"]["retransmitted"].as_u64().unwrap_or(0),
            naks: report["transport"]["naks_received"].as_u64().unwrap_or(0),
            timeouts: report["transport"]["timeouts"].as_u64().unwrap_or(0),
        });
    }
    let mut receiver_results = Vec::new();
    for (host, interface, count, child) in receivers {
        let report = report_of(child, &format!("recv {host}:{interface}"))?;
        for qp in report["queue_pairs"].as_array().into_iter().flatten() {
            let delivered = qp["delivered_bytes"].as_u64().unwrap_or(0);
            if let Some(result) = results.iter_mut().find(|r| {
                r.flow.to == host && r.flow.to_interface == interface && Some(u64::from(r.flow.qp)) == qp["qp"].as_u64()
            }) {
                result.delivered_bytes = delivered;
            }
        }
        receiver_results.push(ReceiverResult {
            host,
            interface,
            flows: count,
            expected_bytes: count as u64 * options.bytes,
            delivered_bytes: report["delivered_bytes"].as_u64().unwrap_or(0),
            goodput_bps: report["goodput_bps"].as_u64().unwrap_or(0),
            rx_ring_drops: report["rx_ring_drops"].as_u64().unwrap_or(0),
            out_of_order: report["out_of_order"].as_u64().unwrap_or(0),
            duplicates: report["duplicates"].as_u64().unwrap_or(0),
        });
    }
    let elapsed_ns = started.elapsed().as_nanos() as u64;
    let after = switch_counters(lab);
    let mut switches = SwitchCounters {
        drops: after.drops.saturating_sub(before.drops),
        rx_ring_drops: after.rx_ring_drops.saturating_sub(before.rx_ring_drops),
        ..Default::default()
    };
    for priority in 0..8 {
        switches.pfc_tx[priority] = after.pfc_tx[priority].saturating_sub(before.pfc_tx[priority]);
    }
    Ok(TrafficReport {
        pattern: options.pattern,
        bytes_per_flow: options.bytes,
        rate_bps: options.rate_bps,
        dscp: options.dscp,
        flows: results,
        receivers: receiver_results,
        elapsed_ns,
        switches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(host: &str, interface: &str, address: &str) -> HostPort {
        HostPort {
            host: host.into(),
            namespace: format!("clab-t-{host}"),
            interface: interface.into(),
            mac: String::new(),
            address: address.parse().unwrap(),
            subnet: format!("{address}/24").parse().unwrap(),
            attached_to: "leaf".into(),
        }
    }

    /// Two servers with two rails: rail r reaches rail r only.
    #[test]
    fn flows_follow_the_hosts_routes() {
        let ports = [
            port("s1", "eth1", "172.16.0.10"),
            port("s1", "eth2", "172.16.1.10"),
            port("s2", "eth1", "172.16.0.11"),
            port("s2", "eth2", "172.16.1.11"),
            port("s3", "eth1", "172.16.0.12"),
        ];
        let route = |_: &HostPort, to: Ipv4Addr| Some(if to.octets()[2] == 0 { "eth1" } else { "eth2" }.to_owned());
        let all = plan(Pattern::AllToAll, &ports, &route);
        // Rail 1: 3 hosts, 6 flows; rail 2: s1 <-> s2, and s3 has no eth2.
        assert_eq!(all.len(), 6 + 2, "{all:#?}");
        assert!(all.iter().all(|f| f.interface == f.to_interface));
        let into_s1: Vec<u32> = all.iter().filter(|f| f.to == "s1" && f.to_interface == "eth1").map(|f| f.qp).collect();
        assert_eq!(into_s1, [1, 2], "one queue pair per flow into a receiver");
        let incast = plan(Pattern::Incast, &ports, &route);
        assert_eq!(incast.len(), 2);
        assert!(incast.iter().all(|f| f.to == "s3" && f.address == Ipv4Addr::new(172, 16, 0, 12)));
    }
}
