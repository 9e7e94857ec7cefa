//! A run split across threads: a conservative parallel discrete-event
//! simulation by partition (docs/simulator.md, "Splitting a larger fabric
//! across cores").
//!
//! The switches are cut into partitions (the pods of a fat-tree, the leaves
//! of a two-tier fabric: what is left connected below the top tier, in
//! contiguous groups of about as many hosts each; the top tier dealt out
//! evenly), each host with its leaf. Each partition has its own event queue
//! and frame pool and runs on its own thread. A partition reaches another
//! only by a frame on a cable between them (data and PFC frames alike) or by
//! a delivery notice from a receiver to its sender, and both take at least
//! the lookahead L (the fabric's least cable propagation plus a one-byte
//! frame's serialisation). So the partitions run in windows of L on a grid
//! of L: each runs its events below the window's end, the events it made
//! for others go into per-pair mailboxes (frames copied), a barrier closes
//! the window, and each takes what was sent to it before the next one (the
//! next window is the grid's one of the earliest event anywhere).
//!
//! Events at the same nanosecond are ordered by a key that does not depend
//! on the partitioning (the scheduling node and its own count): each
//! partition runs its share of the single-threaded order, and nothing else
//! is shared, so `--threads N` writes the same files as `--threads 1`. The
//! run stops at the end of the window in which the last message was
//! received (a single-threaded run does the same), and the partitions are
//! merged back into one [`Simulation`] in the fabric's order for the report.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Instant;

use super::Speed;
use super::engine::{ELSEWHERE, Outbox, Part, Simulation};
use super::fabric::{End, Fabric};
use super::host::{Connection, ConnectionSpec};
use super::queue::EventQueue;
use super::stats::DepthHistogram;

/// The partition of every switch and every host (each with its leaf), and
/// how many partitions there are (at most `threads`, at least 1).
pub fn partition(fabric: &Fabric, threads: usize) -> (Vec<u32>, Vec<u32>, usize) {
    let switches = fabric.switches.len();
    let mut neighbours: Vec<Vec<u32>> = vec![Vec::new(); switches];
    let mut hosts_on = vec![0usize; switches];
    for &(a, b) in &fabric.links {
        match (a, b) {
            (End::Switch { switch: x, .. }, End::Switch { switch: y, .. }) => {
                neighbours[x as usize].push(y);
                neighbours[y as usize].push(x);
            }
            (End::Switch { switch, .. }, End::Host { .. }) | (End::Host { .. }, End::Switch { switch, .. }) => {
                hosts_on[switch as usize] += 1;
            }
            _ => {}
        }
    }
    // Tiers: hops from the nearest switch with hosts.
    let mut tier = vec![u32::MAX; switches];
    let mut queue: std::collections::VecDeque<u32> =
        (0..switches as u32).filter(|&s| hosts_on[s as usize] > 0).collect();
    for &s in &queue {
        tier[s as usize] = 0;
    }
    while let Some(s) = queue.pop_front() {
        for &n in &neighbours[s as usize] {
            if tier[n as usize] == u32::MAX {
                tier[n as usize] = tier[s as usize] + 1;
                queue.push_back(n);
            }
        }
    }
    let top = tier.iter().copied().filter(|&t| t != u32::MAX).max().unwrap_or(0);
    let is_top = |s: usize| top > 0 && (tier[s] == top || tier[s] == u32::MAX);
    // Groups: what stays connected below the top tier, in order of their
    // first switch.
    let mut group = vec![u32::MAX; switches];
    let mut groups: Vec<(Vec<u32>, usize)> = Vec::new();
    for start in 0..switches {
        if group[start] != u32::MAX || is_top(start) {
            continue;
        }
        let id = groups.len() as u32;
        let mut members = vec![start as u32];
        group[start] = id;
        let mut at = 0;
        while at < members.len() {
            let s = members[at];
            at += 1;
            for &n in &neighbours[s as usize] {
                if group[n as usize] == u32::MAX && !is_top(n as usize) {
                    group[n as usize] = id;
                    members.push(n);
                }
            }
        }
        let hosts = members.iter().map(|&s| hosts_on[s as usize]).sum();
        groups.push((members, hosts));
    }
    let parts = threads.clamp(1, groups.len().max(1));
    let total: usize = groups.iter().map(|g| g.1.max(1)).sum();
    let mut switch_part = vec![0u32; switches];
    let (mut part, mut filled) = (0usize, 0usize);
    for (members, hosts) in &groups {
        // Contiguous groups, a partition closed once it holds its share.
        if filled * parts >= (part + 1) * total && part + 1 < parts {
            part += 1;
        }
        for &s in members {
            switch_part[s as usize] = part as u32;
        }
        filled += hosts.max(&1);
    }
    let tops: Vec<usize> = (0..switches).filter(|&s| is_top(s)).collect();
    for (i, &s) in tops.iter().enumerate() {
        switch_part[s] = (i * parts / tops.len()) as u32;
    }
    let host_part = fabric.hosts.iter().map(|h| switch_part[h.switch as usize]).collect();
    (switch_part, host_part, parts)
}

/// Why this run cannot be split so, if it cannot.
fn refusal<Q: EventQueue>(sim: &Simulation<Q>, host_part: &[u32]) -> Option<String> {
    let workload = &sim.workload;
    for (id, message) in workload.messages.iter().enumerate() {
        let (_, receiver) = workload.connections[message.connection as usize];
        for &later in workload.dependents_of(id as u32) {
            let (sender, _) = workload.connections[workload.messages[later as usize].connection as usize];
            if host_part[sender as usize] != host_part[receiver as usize] {
                return Some(format!(
                    "--threads: message {later} (from host {sender}) waits for message {id} received by host \
                     {receiver} in another partition; a split run releases a message only on what its own \
                     sender received: run it with --threads 1"
                ));
            }
        }
    }
    None
}

impl<Q: EventQueue> Simulation<Q> {
    /// Splits a run not yet started into `parts` partitions.
    fn split(mut self, parts: usize, switch_part: Vec<u32>, host_part: Vec<u32>, make: &dyn Fn() -> Q) -> Vec<Self> {
        let switch_part = Arc::new(switch_part);
        let host_part = Arc::new(host_part);
        let global = self.global_node();
        let switch_count = self.fabric.switches.len() as u32;
        let mut queues: Vec<Q> = (0..parts).map(|_| make()).collect();
        while let Some((at, key, event)) = self.queue.pop() {
            let node = self.target(&event);
            if node == global {
                for queue in &mut queues {
                    queue.push(at, key, event);
                }
            } else {
                let part = if node < switch_count {
                    switch_part[node as usize]
                } else {
                    host_part[(node - switch_count) as usize]
                };
                queues[part as usize].push(at, key, event);
            }
        }
        let mut switches: Vec<Vec<_>> = (0..parts).map(|_| Vec::new()).collect();
        let mut switch_local: Vec<Vec<u32>> = vec![vec![ELSEWHERE; switch_part.len()]; parts];
        for switch in std::mem::take(&mut self.switches) {
            let p = switch_part[switch.id as usize] as usize;
            switch_local[p][switch.id as usize] = switches[p].len() as u32;
            switches[p].push(switch);
        }
        let mut hosts: Vec<Vec<_>> = (0..parts).map(|_| Vec::new()).collect();
        let mut host_ids: Vec<Vec<u32>> = vec![Vec::new(); parts];
        let mut host_local: Vec<Vec<u32>> = vec![vec![ELSEWHERE; host_part.len()]; parts];
        for (h, host) in std::mem::take(&mut self.hosts).into_iter().enumerate() {
            let p = host_part[h] as usize;
            host_local[p][h] = hosts[p].len() as u32;
            host_ids[p].push(h as u32);
            hosts[p].push(host);
        }
        // Each connection runs in its sender's partition; the others hold a
        // stand-in at its number.
        let stand_in = || {
            let spec = ConnectionSpec {
                src_mac: Default::default(),
                gateway_mac: Default::default(),
                src_ip: std::net::Ipv4Addr::UNSPECIFIED,
                dst_ip: std::net::Ipv4Addr::UNSPECIFIED,
                qp: 0,
                ecn: false,
                dcqcn: false,
                link_bps: 1_000_000_000,
                dscp: 0,
                background: false,
            };
            Connection::new(0, 0, &spec)
        };
        let mut connections: Vec<Vec<Connection>> = (0..parts).map(|_| Vec::new()).collect();
        for connection in std::mem::take(&mut self.connections) {
            let owner = host_part[connection.src as usize] as usize;
            for (p, list) in connections.iter_mut().enumerate() {
                if p != owner {
                    list.push(stand_in());
                }
            }
            connections[owner].push(connection);
        }
        let mut out = Vec::with_capacity(parts);
        for (p, ((((queue, switches), hosts), connections), (switch_local, (host_local, host_ids)))) in queues
            .into_iter()
            .zip(switches)
            .zip(hosts)
            .zip(connections)
            .zip(switch_local.into_iter().zip(host_local.into_iter().zip(host_ids)))
            .enumerate()
        {
            out.push(Simulation {
                now: 0,
                queue,
                frames: dataplane::pipeline::FramePool::with_slots_of(64, self.slot),
                slot: self.slot,
                fabric: Arc::clone(&self.fabric),
                experiment: self.experiment.clone(),
                routes: Arc::clone(&self.routes),
                // Each partition converges the whole underlay after a
                // failure and programs its own switches.
                underlay: self.underlay.clone(),
                switches,
                hosts,
                switch_local,
                host_local,
                host_ids,
                connections,
                workload: Arc::clone(&self.workload),
                waiting: self.waiting.clone(),
                order: Arc::clone(&self.order),
                received: self.received.clone(),
                records: self.records.clone(),
                completed: 0,
                completed_foreground: 0,
                finished_ns: 0,
                background_done_bytes: 0,
                switch_peers: Arc::clone(&self.switch_peers),
                host_peers: Arc::clone(&self.host_peers),
                link_up: self.link_up.clone(),
                flight: Default::default(),
                wires: Arc::clone(&self.wires),
                lookahead_ns: self.lookahead_ns,
                source: global,
                counters: self.counters.clone(),
                part: Some(Part {
                    me: p as u32,
                    switch_part: Arc::clone(&switch_part),
                    host_part: Arc::clone(&host_part),
                    outbox: (0..parts).map(|_| Outbox::default()).collect(),
                }),
                events: 0,
                punts: 0,
                reroutes: 0,
                routes_rewritten: 0,
                reroute_errors: Vec::new(),
                depth: DepthHistogram::default(),
                watched: self.watched.clone(),
                series: Vec::new(),
            });
        }
        out
    }

    /// The partitions of a split run, back into one run in the fabric's order.
    fn merge(parts: Vec<Self>) -> (Self, usize) {
        let mut parts = parts.into_iter();
        let mut base = parts.next().expect("a partition");
        let rest: Vec<Self> = parts.collect();
        let all = || std::iter::once(&base).chain(rest.iter());
        let finished_ns = all().map(|p| p.finished_ns).max().unwrap_or(0);
        let last_ns = all().map(|p| p.now).max().unwrap_or(0);
        let flight_peak: usize = all().map(|p| p.flight.peak).sum();
        let (events, punts, completed, foreground): (u64, u64, usize, usize) = all().fold((0, 0, 0, 0), |t, s| {
            (t.0 + s.events, t.1 + s.punts, t.2 + s.completed, t.3 + s.completed_foreground)
        });
        let background_done_bytes = all().map(|p| p.background_done_bytes).sum();
        // Each partition rewrote its own switches' routes.
        let routes_rewritten = all().map(|p| p.routes_rewritten).sum();
        let mut reroute_errors: Vec<(u32, u32, String)> =
            all().flat_map(|p| p.reroute_errors.iter().cloned()).collect();
        reroute_errors.sort_by_key(|e| (e.0, e.1));
        // Queue-depth rows: every partition sampled at the same times, each
        // its own watched ports.
        let owner = |s: u32| base.part.as_ref().map_or(0, |p| p.switch_part[s as usize]) as usize;
        let watched_owner: Vec<usize> = base.watched.iter().map(|&(s, _)| owner(s)).collect();
        let series_of: Vec<&Vec<(u64, Vec<u32>)>> = all().map(|p| &p.series).collect();
        let rows = series_of.iter().map(|s| s.len()).max().unwrap_or(0);
        let mut series = Vec::with_capacity(rows);
        for row in 0..rows {
            let at = series_of.iter().find_map(|s| s.get(row).map(|r| r.0)).unwrap_or(0);
            let mut cursor = vec![0usize; series_of.len()];
            let mut values = Vec::with_capacity(watched_owner.len());
            for &p in &watched_owner {
                values.push(series_of[p].get(row).and_then(|r| r.1.get(cursor[p]).copied()).unwrap_or(0));
                cursor[p] += 1;
            }
            series.push((at, values));
        }
        let mut depth = DepthHistogram::default();
        for p in all() {
            depth.merge(&p.depth);
        }
        let mut records = base.records.clone();
        for p in rest.iter() {
            for (record, theirs) in records.iter_mut().zip(&p.records) {
                record.released_ns = record.released_ns.min(theirs.released_ns);
                record.completed_ns = record.completed_ns.min(theirs.completed_ns);
            }
        }
        let host_part = base.part.as_ref().map(|p| Arc::clone(&p.host_part)).expect("a split run");
        let mut switches = Vec::new();
        let mut hosts = Vec::new();
        let mut connections: Vec<Option<Connection>> = (0..base.connections.len()).map(|_| None).collect();
        let mut take = |p: &mut Self, me: usize| {
            switches.extend(std::mem::take(&mut p.switches));
            hosts.extend(p.host_ids.iter().copied().zip(std::mem::take(&mut p.hosts)));
            for (id, connection) in std::mem::take(&mut p.connections).into_iter().enumerate() {
                if host_part[connection.src as usize] as usize == me && connections[id].is_none() {
                    connections[id] = Some(connection);
                }
            }
        };
        take(&mut base, 0);
        for (i, mut p) in rest.into_iter().enumerate() {
            take(&mut p, i + 1);
        }
        switches.sort_by_key(|s| s.id);
        hosts.sort_by_key(|h| h.0);
        base.switch_local = (0..switches.len() as u32).collect();
        base.host_local = (0..hosts.len() as u32).collect();
        base.host_ids = (0..hosts.len() as u32).collect();
        base.switches = switches;
        base.hosts = hosts.into_iter().map(|h| h.1).collect();
        base.connections =
            connections.into_iter().map(|c| c.expect("every connection has its sender's partition")).collect();
        base.records = records;
        base.completed = completed;
        base.completed_foreground = foreground;
        base.background_done_bytes = background_done_bytes;
        base.routes_rewritten = routes_rewritten;
        base.reroute_errors = reroute_errors;
        base.finished_ns = finished_ns;
        base.events = events;
        base.punts = punts;
        base.depth = depth;
        base.series = series;
        base.part = None;
        base.now = if base.finished() { finished_ns } else { last_ns };
        (base, flight_peak)
    }
}

/// What each partition says at the end of a window: its next event (or the
/// earliest it sent), collective messages received whole, events, bytes delivered.
const FIELDS: usize = 4;

/// How a run is split: the partition of each switch and host.
pub struct Plan {
    switch_part: Vec<u32>,
    host_part: Vec<u32>,
    pub parts: usize,
}

/// The split of `sim` on up to `threads` threads: `None` when it makes one
/// partition (the run stays on one thread); refused, saying why, when the
/// run cannot be split exactly.
pub fn plan<Q: EventQueue>(sim: &Simulation<Q>, threads: usize) -> Result<Option<Plan>, String> {
    if threads <= 1 {
        return Ok(None);
    }
    let (switch_part, host_part, parts) = partition(&sim.fabric, threads);
    if parts < 2 {
        return Ok(None);
    }
    if let Some(why) = refusal(sim, &host_part) {
        return Err(why);
    }
    Ok(Some(Plan { switch_part, host_part, parts }))
}

/// Runs `sim` (not yet started) split by `plan`, one thread per partition
/// (this one runs the first and reports progress); returns the merged run
/// and the sum of the partitions' peaks of frames in flight.
pub fn run<Q: EventQueue + Send>(
    sim: Simulation<Q>,
    plan: Plan,
    make: &dyn Fn() -> Q,
    progress: Option<&mut dyn FnMut(&Speed)>,
) -> (Simulation<Q>, usize) {
    let parts = plan.parts;
    let mut partitions = sim.split(parts, plan.switch_part, plan.host_part, make);
    let first = partitions.iter_mut().map(|p| p.next_at()).min().unwrap_or(u64::MAX);
    let mail: Vec<Mutex<Outbox>> = (0..2 * parts * parts).map(|_| Mutex::new(Outbox::default())).collect();
    let said: Vec<AtomicU64> = (0..2 * parts * FIELDS).map(|_| AtomicU64::new(0)).collect();
    let shared = Shared { parts, mail, said, barrier: Barrier::new(parts) };
    let start = Instant::now();
    let mut rest: Vec<Simulation<Q>> = partitions.split_off(1);
    let mut zero = partitions.pop().expect("partition 0");
    std::thread::scope(|scope| {
        let handles: Vec<_> = rest
            .iter_mut()
            .enumerate()
            .map(|(i, p)| {
                let shared = &shared;
                scope.spawn(move || window_loop(p, i + 1, first, shared, None, start))
            })
            .collect();
        window_loop(&mut zero, 0, first, &shared, progress, start);
        for handle in handles {
            handle.join().expect("a partition's thread panicked");
        }
    });
    let mut all = vec![zero];
    all.extend(rest);
    Simulation::merge(all)
}

struct Shared {
    parts: usize,
    /// [parity][from][to]: what a partition sent another in a window.
    mail: Vec<Mutex<Outbox>>,
    /// [parity][partition][field]: what each said at a window's end.
    said: Vec<AtomicU64>,
    barrier: Barrier,
}

impl Shared {
    fn mailbox(&self, parity: usize, from: usize, to: usize) -> &Mutex<Outbox> {
        &self.mail[(parity * self.parts + from) * self.parts + to]
    }

    fn said(&self, parity: usize, part: usize, field: usize) -> &AtomicU64 {
        &self.said[(parity * self.parts + part) * FIELDS + field]
    }
}

/// One partition's windows, until the last message is received, nothing is
/// left or the time limit.
fn window_loop<Q: EventQueue>(
    sim: &mut Simulation<Q>,
    me: usize,
    first: u64,
    shared: &Shared,
    mut progress: Option<&mut dyn FnMut(&Speed)>,
    start: Instant,
) {
    let lookahead = sim.lookahead_ns;
    let limit = sim.experiment.time_limit_ns;
    // The run ends with the collectives (background traffic may be left).
    let messages = sim.workload.foreground_messages;
    let total_bytes = sim.workload.foreground_bytes();
    let mut window = if first == u64::MAX { u64::MAX } else { first / lookahead * lookahead };
    let mut next_report = 1u64 << 20;
    let mut iteration = 0usize;
    while window <= limit && window != u64::MAX && messages > 0 {
        if iteration > 0 {
            for from in 0..shared.parts {
                if from != me {
                    let mut inbox = shared.mailbox((iteration - 1) % 2, from, me).lock().expect("mailbox");
                    sim.take_crossings(&mut inbox);
                }
            }
        }
        sim.run_window(window.saturating_add(lookahead));
        let parity = iteration % 2;
        let mut next = sim.next_at();
        let part = sim.part.as_mut().expect("a split run");
        for to in 0..shared.parts {
            if to != me && !part.outbox[to].is_empty() {
                next = next.min(part.outbox[to].min_at);
                let mut slot = shared.mailbox(parity, me, to).lock().expect("mailbox");
                std::mem::swap(&mut *slot, &mut part.outbox[to]);
            }
        }
        let delivered = sim
            .hosts
            .iter()
            .map(|h| h.receiver.counters().delivered_bytes)
            .sum::<u64>()
            .saturating_sub(sim.background_done_bytes);
        shared.said(parity, me, 0).store(next, Ordering::Relaxed);
        shared.said(parity, me, 1).store(sim.completed_foreground as u64, Ordering::Relaxed);
        shared.said(parity, me, 2).store(sim.events, Ordering::Relaxed);
        shared.said(parity, me, 3).store(delivered, Ordering::Relaxed);
        shared.barrier.wait();
        let mut earliest = u64::MAX;
        let (mut completed, mut events, mut bytes) = (0u64, 0u64, 0u64);
        for p in 0..shared.parts {
            earliest = earliest.min(shared.said(parity, p, 0).load(Ordering::Relaxed));
            completed += shared.said(parity, p, 1).load(Ordering::Relaxed);
            events += shared.said(parity, p, 2).load(Ordering::Relaxed);
            bytes += shared.said(parity, p, 3).load(Ordering::Relaxed);
        }
        if events >= next_report {
            next_report = (events >> 20 << 20) + (1 << 20);
            let share = (bytes as f64 / total_bytes.max(1) as f64).min(1.0);
            let now = window.saturating_add(lookahead);
            report_share(&mut progress, events, now, completed as usize, share, messages, start);
        }
        if completed as usize == messages || earliest == u64::MAX {
            break;
        }
        window = earliest / lookahead * lookahead;
        iteration += 1;
    }
}

fn report_share(
    progress: &mut Option<&mut dyn FnMut(&Speed)>,
    events: u64,
    now: u64,
    completed: usize,
    share: f64,
    messages: usize,
    start: Instant,
) {
    let Some(progress) = progress.as_mut() else { return };
    let wall_s = start.elapsed().as_secs_f64();
    progress(&Speed {
        events,
        wall_s,
        events_per_s: events as f64 / wall_s.max(1e-9),
        simulated_ns: now,
        done_fraction: completed as f64 / messages.max(1) as f64,
        bytes_done_fraction: share,
        frames_in_flight_peak: 0,
        threads: 0,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::fabric;

    #[test]
    fn a_three_tier_fat_tree_splits_by_pods_with_the_cores_dealt_out() {
        let topology = fabric::fattree3("ft", 4, 1).expect("fat-tree");
        let fabric = Fabric::from_topology(&topology).expect("fabric");
        let (switch_part, host_part, parts) = partition(&fabric, 2);
        assert_eq!(parts, 2);
        // Every host with its leaf; half the hosts on each side.
        for (h, spec) in fabric.hosts.iter().enumerate() {
            assert_eq!(host_part[h], switch_part[spec.switch as usize]);
        }
        assert_eq!(host_part.iter().filter(|&&p| p == 0).count(), fabric.hosts.len() / 2);
        // Cables between partitions run only to the top tier.
        let crossing = fabric
            .links
            .iter()
            .filter(|(a, b)| match (a, b) {
                (End::Switch { switch: x, .. }, End::Switch { switch: y, .. }) => {
                    switch_part[*x as usize] != switch_part[*y as usize]
                }
                _ => false,
            })
            .count();
        assert!(crossing > 0);
        assert_eq!(partition(&fabric, 1).2, 1);
    }
}
