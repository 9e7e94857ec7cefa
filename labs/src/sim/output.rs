//! A run's results: `summary.json` (the experiment, JCT per collective, FCT
//! slowdown percentiles, drops, PFC, ECN, queue depth percentiles, speed),
//! `messages.csv` (one row per message), `ports.csv` (one row per switch
//! port) and `queues.csv` (the watched ports' depth over time). Nothing in
//! them depends on the wall clock except the `speed` block, kept apart in
//! `speed.json` so that two runs give identical result files.

use std::fmt::Write as _;
use std::path::Path;

use qos::tm::DropReason;
use serde::Serialize;

use super::engine::Simulation;
use super::fabric::End;
use super::host::frame_len;
use super::queue::EventQueue;
use super::stats::{MessageRecord, percentile_of};

#[derive(Debug, Clone, Serialize)]
pub struct CollectiveResult {
    pub name: String,
    pub messages: usize,
    pub bytes: u64,
    /// First release to last completion, ns (`None`: not finished).
    pub jct_ns: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub topology: String,
    pub switches: usize,
    pub hosts: usize,
    pub links: usize,
    pub experiment: super::experiment::Experiment,
    pub workload: super::workload::WorkloadSpec,
    pub finished: bool,
    pub simulated_ns: u64,
    /// The collectives (background traffic is in `background`).
    pub collectives: Vec<CollectiveResult>,
    pub messages: usize,
    pub messages_completed: usize,
    /// FCT over the ideal FCT (the message alone on an idle fabric), of
    /// the collectives' messages.
    pub fct_slowdown: Percentiles,
    /// Background traffic beside the collectives, apart from them.
    pub background: Option<BackgroundResult>,
    /// Payload bytes received over the run, per host per second, Gb/s.
    pub goodput_gbps_per_host: f64,
    /// Frames dropped by the switches, by reason.
    pub drops: std::collections::BTreeMap<String, u64>,
    pub drops_total: u64,
    /// Frames the switches marked CE.
    pub ecn_marked: u64,
    /// CNPs the receivers sent, and those that reached their senders.
    pub cnps: u64,
    pub cnps_received: u64,
    /// Frames the switches punted to a control plane the simulator has not
    /// (an unresolved neighbour, a frame for the switch itself): a routing gap.
    pub punts: u64,
    /// PFC frames the switches sent.
    pub pfc_frames_sent: u64,
    /// Switch ports paused by their peer at some point, and the total time.
    pub paused_ports: usize,
    pub paused_ns_total: u64,
    /// Host NICs paused, and their total paused time with data ready.
    pub paused_hosts: usize,
    pub host_paused_ns_total: u64,
    /// Sampled port queue depths (bytes), over all wired switch ports.
    pub queue_depth_bytes: Percentiles,
    /// Packets received ahead of their PSN (held for reordering), the
    /// largest distance ahead, and those beyond the 256-PSN window (lost:
    /// the endpoint has no retransmission, their message never completes).
    pub out_of_order: u64,
    pub max_reorder_distance: u32,
    pub beyond_reorder_window: u64,
    /// Messages sent again after a timeout, and NAKed PSNs (holes and beyond-window packets).
    pub timeouts: u64,
    pub naks: u64,
    /// Routes rewritten when the underlay reconverged after link failures.
    pub routes_rewritten: usize,
    /// Route changes a switch's tables refused then (that switch kept the
    /// rest of its old routes): "switch NAME: reroute PREFIX: why".
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reroute_errors: Vec<String>,
    pub events: u64,
}

/// Background traffic's results: what was offered, what arrived, and its
/// FCTs (of the messages received whole before the collectives ended).
#[derive(Debug, Clone, Serialize)]
pub struct BackgroundResult {
    pub spec: super::workload::BackgroundSpec,
    /// Its traffic class and DSCP (Ethernet; none on the IB-like plane,
    /// where it shares the collectives' SLs), and whether the collectives'
    /// class was strict.
    pub class: Option<u8>,
    pub dscp: Option<u8>,
    pub strict_collective: bool,
    /// Hosts sending it; messages planned over `[0, until_ns)`.
    pub senders: usize,
    pub until_ns: u64,
    pub messages: usize,
    /// Released (arrived at their sender) before the run ended, and of those
    /// received whole.
    pub released: usize,
    pub completed: usize,
    /// Payload offered per sender over the run (released bytes over
    /// senders × line × the run's time), a fraction of the line.
    pub offered_load: f64,
    /// Completed messages' payload per sender over the run, a fraction of the line.
    pub delivered_load: f64,
    pub fct_ns: Percentiles,
    pub fct_slowdown: Percentiles,
    /// The collectives outlasted the background's arrivals.
    pub ended_before_collectives: bool,
}

/// Percentiles of sorted values.
pub fn percentiles(sorted: &[f64]) -> Percentiles {
    Percentiles {
        p50: percentile_of(sorted, 0.5),
        p90: percentile_of(sorted, 0.9),
        p99: percentile_of(sorted, 0.99),
        max: sorted.last().copied().unwrap_or(0.0),
    }
}

/// The background's results, given each message's ideal FCT.
pub fn background_result(
    workload: &super::workload::Workload,
    records: &[MessageRecord],
    ideal_ns: impl Fn(u32) -> u64,
    now: u64,
    class: Option<u8>,
    dscp: Option<u8>,
    strict_collective: bool,
) -> Option<BackgroundResult> {
    let spec = workload.background_spec.as_ref()?;
    let collective = workload.background_collective?;
    let until_ns = workload.background_until_ns.unwrap_or(0);
    let (mut messages, mut released, mut completed, mut released_bytes, mut completed_bytes) = (0, 0, 0, 0u64, 0u64);
    let mut senders = std::collections::BTreeSet::new();
    let (mut fcts, mut slowdowns) = (Vec::new(), Vec::new());
    let mut last_foreground = 0;
    for (id, (message, record)) in workload.messages.iter().zip(records).enumerate() {
        if message.collective != collective {
            if record.completed_ns != u64::MAX {
                last_foreground = last_foreground.max(record.completed_ns);
            }
            continue;
        }
        messages += 1;
        senders.insert(workload.connections[message.connection as usize].0);
        if record.released_ns == u64::MAX {
            continue;
        }
        released += 1;
        released_bytes += record.bytes;
        if let Some(fct) = record.fct_ns() {
            completed += 1;
            completed_bytes += record.bytes;
            fcts.push(fct as f64);
            slowdowns.push(fct as f64 / ideal_ns(id as u32).max(1) as f64);
        }
    }
    fcts.sort_by(f64::total_cmp);
    slowdowns.sort_by(f64::total_cmp);
    let capacity = senders.len() as f64 * spec.line_bps as f64 / 8.0 * now.max(1) as f64 / 1e9;
    Some(BackgroundResult {
        spec: spec.clone(),
        class,
        dscp,
        strict_collective,
        senders: senders.len(),
        until_ns,
        messages,
        released,
        completed,
        offered_load: released_bytes as f64 / capacity,
        delivered_load: completed_bytes as f64 / capacity,
        fct_ns: percentiles(&fcts),
        fct_slowdown: percentiles(&slowdowns),
        ended_before_collectives: last_foreground > until_ns,
    })
}

/// Per collective: its messages, bytes and JCT (first release to last
/// message received; `None` while a message is missing). Background
/// traffic is not a collective: it is left out.
pub fn collective_results(workload: &super::workload::Workload, records: &[MessageRecord]) -> Vec<CollectiveResult> {
    let mut collectives: Vec<CollectiveResult> = workload
        .collectives
        .iter()
        .map(|name| CollectiveResult { name: name.clone(), messages: 0, bytes: 0, jct_ns: None })
        .collect();
    let mut first = vec![u64::MAX; collectives.len()];
    let mut last = vec![0u64; collectives.len()];
    let mut unfinished = vec![false; collectives.len()];
    for (message, record) in workload.messages.iter().zip(records) {
        let c = message.collective as usize;
        collectives[c].messages += 1;
        collectives[c].bytes += record.bytes;
        first[c] = first[c].min(record.released_ns);
        match record.fct_ns() {
            Some(_) => last[c] = last[c].max(record.completed_ns),
            None => unfinished[c] = true,
        }
    }
    for (c, result) in collectives.iter_mut().enumerate() {
        if !unfinished[c] && first[c] != u64::MAX {
            result.jct_ns = Some(last[c] - first[c]);
        }
    }
    if let Some(background) = workload.background_collective {
        collectives.remove(background as usize);
    }
    collectives
}

impl Report {
    pub fn new<Q: EventQueue>(sim: &Simulation<Q>, topology: &str, workload: super::workload::WorkloadSpec) -> Report {
        let collectives = collective_results(&sim.workload, &sim.records);
        let mut slowdowns: Vec<f64> = (0..sim.records.len())
            .filter(|&m| !sim.workload.is_background(m as u32))
            .filter_map(|m| {
                let fct = sim.records[m].fct_ns()?;
                Some(fct as f64 / ideal_fct_ns(sim, m as u32) as f64)
            })
            .collect();
        slowdowns.sort_by(f64::total_cmp);
        let mut drops = std::collections::BTreeMap::new();
        let (mut ecn_marked, mut pfc_frames_sent, mut paused_ports, mut paused_ns_total) = (0, 0, 0, 0);
        let mut refused = 0;
        for (s, switch) in sim.switches.iter().enumerate() {
            let tm = switch.node.traffic_manager().tm();
            for reason in DropReason::ALL {
                *drops.entry(reason.name().to_owned()).or_insert(0) += tm.drops(reason);
            }
            let counters = switch.node.counters();
            refused += counters.port_refused;
            ecn_marked += counters.ce_marked;
            pfc_frames_sent += counters.link_frames_sent;
            for port in 0..sim.fabric.switches[s].ports {
                let paused = sim.paused_ns(s as u32, port);
                if paused > 0 {
                    paused_ports += 1;
                    paused_ns_total += paused;
                }
            }
        }
        drops.insert("link-down".into(), refused);
        // What the pipelines themselves dropped (a dead egress port, no route).
        for switch in &sim.switches {
            for (reason, count) in switch.pipeline.drop_counters().iter().filter(|&(_, c)| c > 0) {
                *drops.entry(format!("pipeline-{reason:?}").to_lowercase()).or_insert(0) += count;
            }
        }
        let drops_total = drops.values().sum();
        let received: u64 = sim.hosts.iter().map(|h| h.receiver.counters().delivered_bytes).sum();
        let seconds = sim.now as f64 / 1e9;
        let depth = &sim.depth;
        let experiment = &sim.experiment;
        let background = background_result(
            &sim.workload,
            &sim.records,
            |m| ideal_fct_ns(sim, m),
            sim.now,
            Some(experiment.background_priority()),
            Some(experiment.background_dscp()),
            experiment.strict_collective,
        );
        Report {
            topology: topology.into(),
            switches: sim.switches.len(),
            hosts: sim.hosts.len(),
            links: sim.fabric.links.len(),
            experiment: sim.experiment.clone(),
            workload,
            finished: sim.finished(),
            simulated_ns: sim.now,
            collectives,
            messages: sim.records.len(),
            messages_completed: sim.completed,
            fct_slowdown: Percentiles {
                p50: percentile_of(&slowdowns, 0.5),
                p90: percentile_of(&slowdowns, 0.9),
                p99: percentile_of(&slowdowns, 0.99),
                max: slowdowns.last().copied().unwrap_or(0.0),
            },
            background,
            goodput_gbps_per_host: if seconds > 0.0 {
                received as f64 * 8.0 / seconds / 1e9 / sim.hosts.len() as f64
            } else {
                0.0
            },
            drops,
            drops_total,
            ecn_marked,
            cnps: sim.hosts.iter().map(|h| h.counters.cnps_sent).sum(),
            cnps_received: sim.hosts.iter().map(|h| h.counters.cnps_received).sum(),
            punts: sim.punts,
            pfc_frames_sent,
            paused_ports,
            paused_ns_total,
            paused_hosts: sim.hosts.iter().filter(|h| h.pauses_obeyed() > 0).count(),
            host_paused_ns_total: sim.hosts.iter().map(|h| h.paused_ns()).sum(),
            queue_depth_bytes: Percentiles {
                p50: f64::from(depth.percentile(0.5)),
                p90: f64::from(depth.percentile(0.9)),
                p99: f64::from(depth.percentile(0.99)),
                max: f64::from(depth.max()),
            },
            out_of_order: sim.hosts.iter().map(|h| h.receiver.counters().out_of_order).sum(),
            max_reorder_distance: sim
                .hosts
                .iter()
                .map(|h| h.receiver.counters().max_reorder_distance)
                .max()
                .unwrap_or(0),
            beyond_reorder_window: sim.hosts.iter().map(|h| h.receiver.counters().beyond_window).sum(),
            timeouts: sim.hosts.iter().map(|h| h.counters.timeouts).sum(),
            naks: sim.hosts.iter().map(|h| h.counters.naks_sent).sum(),
            routes_rewritten: sim.routes_rewritten,
            reroute_errors: sim.reroute_errors.iter().map(|(_, _, e)| e.clone()).collect(),
            events: sim.events,
        }
    }
}

/// The links a message crosses: host to leaf, the leaves' distance, leaf to host.
pub fn path_links<Q: EventQueue>(sim: &Simulation<Q>, src: u32, dst: u32) -> u64 {
    let (a, b) = (sim.fabric.hosts[src as usize].switch, sim.fabric.hosts[dst as usize].switch);
    u64::from(sim.routes.leaf_distance(a, b)) + 2
}

/// A message's FCT alone on an idle fabric: its packets back to back on
/// the first link, and the last one stored and forwarded over the rest.
pub fn ideal_fct_ns<Q: EventQueue>(sim: &Simulation<Q>, message: u32) -> u64 {
    let m = &sim.workload.messages[message as usize];
    let (src, dst) = sim.workload.connections[m.connection as usize];
    let wire = sim.host_wire(src);
    let mtu = u64::from(sim.experiment.mtu);
    let bytes = m.bytes.max(1);
    let full = bytes / mtu;
    let rest = bytes % mtu;
    let mut serialise = full * wire.serialisation_ns(frame_len(mtu as u32));
    let last = if rest > 0 {
        let ns = wire.serialisation_ns(frame_len(rest as u32));
        serialise += ns;
        ns
    } else {
        wire.serialisation_ns(frame_len(mtu as u32))
    };
    let links = path_links(sim, src, dst);
    serialise + links * wire.propagation_ns + (links - 1) * last
}

/// `messages.csv`, a row per message (two million on the 1,024-host
/// all-reduce, 167 MB): streamed to the file as each row is formatted,
/// never held whole in memory (the string it was grew to 256 MiB, most of
/// the run's peak RSS, and was copied at every doubling).
fn write_messages<Q: EventQueue>(sim: &Simulation<Q>, path: &Path) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut csv = std::io::BufWriter::with_capacity(1 << 16, std::fs::File::create(path)?);
    csv.write_all(b"message,collective,src,dst,bytes,released_ns,completed_ns,fct_ns,ideal_ns,slowdown,traffic\n")?;
    for (id, (message, record)) in sim.workload.messages.iter().zip(&sim.records).enumerate() {
        let (src, dst) = sim.workload.connections[message.connection as usize];
        let ideal = ideal_fct_ns(sim, id as u32);
        write!(
            csv,
            "{id},{},{},{},{},",
            sim.workload.collectives[message.collective as usize],
            sim.fabric.hosts[src as usize].name,
            sim.fabric.hosts[dst as usize].name,
            record.bytes
        )?;
        if record.released_ns != u64::MAX {
            write!(csv, "{}", record.released_ns)?;
        }
        match record.fct_ns() {
            Some(fct) => write!(csv, ",{},{fct},{ideal},{:.4}", record.completed_ns, fct as f64 / ideal as f64)?,
            None => write!(csv, ",,,{ideal},")?,
        }
        let traffic = if sim.workload.is_background(id as u32) { "background" } else { "collective" };
        writeln!(csv, ",{traffic}")?;
    }
    csv.flush()
}

/// Writes `summary.json`, `messages.csv`, `ports.csv` and `queues.csv` into `dir`.
pub fn write<Q: EventQueue>(sim: &Simulation<Q>, report: &Report, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_string_pretty(report).expect("the report serialises");
    std::fs::write(dir.join("summary.json"), json + "\n")?;
    write_messages(sim, &dir.join("messages.csv"))?;
    let mut csv = String::from(
        "switch,port,peer,tx_frames,tx_bytes,dropped,ecn_marked,pfc_rx,pfc_tx,paused_ns,watermark_bytes\n",
    );
    for (s, spec) in sim.fabric.switches.iter().enumerate() {
        let tm = sim.switches[s].node.traffic_manager().tm();
        for port in 0..spec.ports {
            let Some(peer) = sim.peer(s as u32, port) else { continue };
            let peer = match peer {
                End::Switch { switch, port } => {
                    format!("{}:{}", sim.fabric.switches[switch as usize].name, sim.fabric.port_name(switch, port))
                }
                End::Host { host } => sim.fabric.hosts[host as usize].name.clone(),
            };
            let (mut tx_frames, mut tx_bytes, mut dropped, mut marked, mut watermark) = (0, 0, 0, 0, 0);
            for queue in 0..8 {
                let c = tm.queue_counters(port, queue);
                tx_frames += c.tx_frames;
                tx_bytes += c.tx_bytes;
                dropped += c.dropped_frames;
                marked += c.ecn_marked;
                watermark = watermark.max(tm.queue_watermark_bytes(port, queue));
            }
            let pfc = tm.pfc_counters(port);
            let _ = writeln!(
                csv,
                "{},{},{peer},{tx_frames},{tx_bytes},{dropped},{marked},{},{},{},{watermark}",
                spec.name,
                sim.fabric.port_name(s as u32, port),
                pfc.rx_frames.iter().sum::<u64>(),
                pfc.tx_frames.iter().sum::<u64>(),
                sim.paused_ns(s as u32, port),
            );
        }
    }
    std::fs::write(dir.join("ports.csv"), csv)?;
    let mut csv = String::from("time_ns");
    for &(s, port) in &sim.watched {
        let _ = write!(csv, ",{}:{}", sim.fabric.switches[s as usize].name, sim.fabric.port_name(s, port));
    }
    csv.push('\n');
    for (at, row) in &sim.series {
        let _ = write!(csv, "{at}");
        for depth in row {
            let _ = write!(csv, ",{depth}");
        }
        csv.push('\n');
    }
    std::fs::write(dir.join("queues.csv"), csv)?;
    Ok(())
}
