//! Balanced shortest paths (OpenSM's SSSP, after Domke, Hoefler and
//! Nagel, "Deadlock-Free Oblivious Routing for Arbitrary Topologies", IPDPS
//! 2011): each destination's routing tree is a shortest-path tree over
//! channel weights; after each destination, every channel's weight grows by
//! the number of CA sources whose route to it crosses the channel, so later
//! destinations avoid busy channels. [`dfsssp`](super::dfsssp) then places
//! destinations on virtual lanes.
//!
//! OpenSM starts every weight at P^2 (P CA ports) "to force shortest
//! paths": the load then only chooses among the paths of fewest hops. That
//! is computed here directly, without Dijkstra's heap: the switches one hop
//! nearer the destination's switch are found once per switch (breadth
//! first, shared by every LID behind it), and each switch, nearest first,
//! takes the channel towards them whose path carries the least load (the
//! first in its port order on a tie). The trees are those of OpenSM's
//! Dijkstra whenever no min-hop path's load reaches P^2.

use super::Lfts;
use super::graph::{SwitchGraph, UNREACHABLE};

/// Destinations routed before their LFT entries are written out, switch by
/// switch (the LFTs are per switch, the trees per destination).
const BATCH: usize = 64;

/// A channel from a switch to one a hop nearer the destination's switch.
#[derive(Clone, Copy)]
struct Nearer {
    port: u8,
    neighbour: u32,
    /// The channel's weight: `weight[link_start[s] + its index in links[s]]`.
    slot: u32,
}

/// Routes every destination.
pub fn route(graph: &SwitchGraph<'_>) -> Lfts {
    let switches = graph.switch_count();
    let mut link_start = Vec::with_capacity(switches + 1);
    let mut total = 0;
    for links in &graph.links {
        link_start.push(total);
        total += links.len();
    }
    link_start.push(total);
    let mut weight = vec![0u64; total];
    let mut lfts = graph.empty_lfts();
    // Per target switch: switches by hop distance, and each one's channels
    // one hop nearer (`nearer[nearer_start[i]..nearer_start[i + 1]]` for
    // `order[i]`).
    let (mut hops, mut order) = (Vec::new(), Vec::new());
    let mut nearer: Vec<Nearer> = Vec::new();
    let mut nearer_start: Vec<usize> = Vec::with_capacity(switches + 1);
    // Per destination: path load to it and the chosen channel per switch.
    let mut load = vec![0u64; switches];
    let mut chosen: Vec<Option<Nearer>> = vec![None; switches];
    let mut flow = vec![0u64; switches];
    let mut batch = Batch::new(switches);
    for target in 0..switches {
        let dests = graph.dests_at(target);
        if dests.is_empty() {
            continue;
        }
        graph.distances_to(target, &mut hops, &mut order);
        nearer.clear();
        nearer_start.clear();
        for &s in &order {
            let s = s as usize;
            nearer_start.push(nearer.len());
            for (index, &(port, n)) in graph.links[s].iter().enumerate() {
                if hops[n as usize] != UNREACHABLE && hops[n as usize] + 1 == hops[s] {
                    let slot = (link_start[s] + index) as u32;
                    nearer.push(Nearer { port, neighbour: n, slot });
                }
            }
        }
        nearer_start.push(nearer.len());
        for dest in dests {
            load[target] = 0;
            chosen[target] = None;
            for (i, &s) in order.iter().enumerate().skip(1) {
                let mut best: Option<(u64, Nearer)> = None;
                for &hop in &nearer[nearer_start[i]..nearer_start[i + 1]] {
                    let l = load[hop.neighbour as usize] + weight[hop.slot as usize];
                    if best.is_none_or(|(b, _)| l < b) {
                        best = Some((l, hop));
                    }
                }
                // None only where a cable is recorded on one side (breadth
                // first found s from a neighbour that s does not list).
                load[s as usize] = best.map_or(u64::MAX / 2, |(l, _)| l);
                chosen[s as usize] = best.map(|(_, hop)| hop);
            }
            batch.push(dest.lid, |s| {
                if s == target { dest.port } else { chosen[s].map_or(super::NO_ROUTE, |hop| hop.port) }
            });
            if batch.is_full() {
                batch.write(graph, &mut lfts);
            }
            if dest.is_ca() {
                // Sources crossing each tree channel: the CAs of the subtree,
                // farthest switches first.
                for &s in order.iter().rev() {
                    let s = s as usize;
                    flow[s] += u64::from(graph.cas_attached[s]);
                    if let Some(hop) = chosen[s] {
                        weight[hop.slot as usize] += flow[s];
                        flow[hop.neighbour as usize] += flow[s];
                    }
                }
                for &s in &order {
                    flow[s as usize] = 0;
                }
            }
        }
        // Switches this target does not reach keep no route.
        for &s in &order {
            chosen[s as usize] = None;
        }
    }
    batch.write(graph, &mut lfts);
    lfts
}

/// The LFT entries of up to [`BATCH`] destinations, by switch, so that each
/// switch's table is written in one pass of nearby LIDs rather than one
/// scattered entry per destination.
struct Batch {
    lids: Vec<u16>,
    /// `ports[s * BATCH + k]`: switch s's port for `lids[k]`.
    ports: Vec<u8>,
}

impl Batch {
    fn new(switches: usize) -> Batch {
        Batch { lids: Vec::with_capacity(BATCH), ports: vec![super::NO_ROUTE; switches * BATCH] }
    }

    fn push(&mut self, lid: u16, port_of: impl Fn(usize) -> u8) {
        let k = self.lids.len();
        for (s, entry) in self.ports.iter_mut().skip(k).step_by(BATCH).enumerate() {
            *entry = port_of(s);
        }
        self.lids.push(lid);
    }

    fn is_full(&self) -> bool {
        self.lids.len() == BATCH
    }

    fn write(&mut self, graph: &SwitchGraph<'_>, lfts: &mut Lfts) {
        for (s, ports) in self.ports.chunks(BATCH).enumerate() {
            let Some(table) = lfts.table_mut(graph.nodes[s]) else { continue };
            for (&lid, &port) in self.lids.iter().zip(ports) {
                if port != super::NO_ROUTE {
                    table[usize::from(lid)] = port;
                }
            }
        }
        self.lids.clear();
    }
}
