//! Balanced shortest paths (OpenSM's SSSP and DFSSSP, after Domke,
//! Hoefler and Nagel, "Deadlock-Free Oblivious Routing for Arbitrary
//! Topologies", IPDPS 2011): each destination's routing tree is a
//! shortest-path tree by Dijkstra over channel weights; after each
//! destination, every channel's weight grows by the number of CA sources
//! whose route to it crosses the channel, so later destinations avoid busy
//! channels. [`route_layered`] then places destinations on virtual lanes so
//! that every lane's channel dependency graph is acyclic (DFSSSP).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::analysis::{ChannelDependencies, Channels};
use super::graph::{SwitchGraph, UNREACHABLE};
use super::{Lfts, RoutingError};

/// Routes every destination; `weights` (per channel, see [`Channels`])
/// start at 1 unless given.
pub fn route(graph: &SwitchGraph<'_>, weights: Option<Vec<u64>>) -> Lfts {
    let switches = graph.switch_count();
    let channels = Channels::new(graph);
    let mut weight = weights.unwrap_or_else(|| vec![1; channels.len()]);
    let mut lfts = graph.empty_lfts();
    let mut dist = vec![u64::MAX; switches];
    // next[s] = (port, neighbour) on the tree towards the destination.
    let mut next: Vec<(u8, u32)> = vec![(0, UNREACHABLE); switches];
    let mut order: Vec<u32> = Vec::with_capacity(switches);
    let mut flow = vec![0u64; switches];
    let mut heap = BinaryHeap::with_capacity(channels.len());
    let inbound = Inbound::new(graph, &channels);
    for dest in &graph.dests {
        let target = dest.switch as usize;
        dist.fill(u64::MAX);
        next.fill((0, UNREACHABLE));
        order.clear();
        dist[target] = 0;
        heap.push(Reverse((0u64, target as u32)));
        // Dijkstra towards the target: relax y <- x over y's channels to x.
        while let Some(Reverse((d, x))) = heap.pop() {
            let x = x as usize;
            if d > dist[x] {
                continue;
            }
            order.push(x as u32);
            for &(y, start, end) in inbound.from(x) {
                // Of parallel channels y -> x, the first with the lowest weight.
                let mut best: Option<(u64, u8)> = None;
                for &(channel, port) in &inbound.channels[start as usize..end as usize] {
                    let w = weight[channel as usize];
                    if best.is_none_or(|(bw, _)| w < bw) {
                        best = Some((w, port));
                    }
                }
                let Some((w, port)) = best else { continue };
                let y = y as usize;
                let candidate = d + w;
                if candidate < dist[y] {
                    dist[y] = candidate;
                    next[y] = (port, x as u32);
                    heap.push(Reverse((candidate, y as u32)));
                }
            }
        }
        for s in 0..switches {
            let port = if s == target {
                dest.port
            } else if next[s].1 != UNREACHABLE {
                next[s].0
            } else {
                continue;
            };
            lfts.set(graph.nodes[s], dest.lid, port);
        }
        if dest.is_ca() {
            // Sources crossing each tree channel: the CAs of the subtree.
            for &x in order.iter().rev() {
                let x = x as usize;
                flow[x] += u64::from(graph.cas_attached[x]);
                let (port, n) = next[x];
                if n != UNREACHABLE {
                    weight[channels.id(x, port)] += flow[x];
                    flow[n as usize] += flow[x];
                }
            }
            for &x in &order {
                flow[x as usize] = 0;
            }
        }
    }
    lfts
}

/// The channels into each switch, grouped by the neighbour they leave,
/// found once rather than by scanning the neighbour's ports on every
/// relaxation (the per-destination Dijkstra's inner loop).
struct Inbound {
    /// `neighbours[start[x]..start[x + 1]]`: (neighbour y, its channels to
    /// x as `channels[from..to]`), in the order of x's links.
    start: Vec<usize>,
    neighbours: Vec<(u32, u32, u32)>,
    /// (channel id, y's port), in y's link order.
    channels: Vec<(u32, u8)>,
}

impl Inbound {
    fn new(graph: &SwitchGraph<'_>, ids: &Channels) -> Inbound {
        let switches = graph.switch_count();
        let mut start = Vec::with_capacity(switches + 1);
        let mut neighbours = Vec::new();
        let mut channels = Vec::new();
        // seen[y] == x + 1: y already grouped for x (parallel links).
        let mut seen = vec![0usize; switches];
        for x in 0..switches {
            start.push(neighbours.len());
            for &(_, y) in &graph.links[x] {
                let y = y as usize;
                if seen[y] == x + 1 {
                    continue;
                }
                seen[y] = x + 1;
                let from = channels.len() as u32;
                for &(port, n) in &graph.links[y] {
                    if n as usize == x {
                        channels.push((ids.id(y, port) as u32, port));
                    }
                }
                neighbours.push((y as u32, from, channels.len() as u32));
            }
        }
        start.push(neighbours.len());
        Inbound { start, neighbours, channels }
    }

    fn from(&self, x: usize) -> &[(u32, u32, u32)] {
        &self.neighbours[self.start[x]..self.start[x + 1]]
    }
}

/// DFSSSP: the balanced routes, then destinations on VLs (as SLs, SL =
/// VL) so that each VL's channel dependency graph is acyclic. All on VL 0
/// when that is already so.
pub fn route_layered(graph: &SwitchGraph<'_>, max_vls: u8) -> Result<Lfts, RoutingError> {
    let mut lfts = route(graph, None);
    let dependencies = ChannelDependencies::new(graph, &lfts);
    if dependencies.acyclic_for(graph.dests.iter().filter(|d| d.is_ca()).map(|d| d.lid)) {
        return Ok(lfts);
    }
    let mut layers: Vec<Vec<u16>> = Vec::new();
    let mut sl_of_lid = vec![0u8; usize::from(graph.max_lid) + 1];
    for dest in graph.dests.iter().filter(|d| d.is_ca()) {
        let mut placed = false;
        for (vl, layer) in layers.iter_mut().enumerate() {
            layer.push(dest.lid);
            if dependencies.acyclic_for(layer.iter().copied()) {
                sl_of_lid[usize::from(dest.lid)] = vl as u8;
                placed = true;
                break;
            }
            layer.pop();
        }
        if !placed {
            if layers.len() >= usize::from(max_vls) {
                return Err(RoutingError::TooManyLayers { needed: layers.len() + 1, available: max_vls });
            }
            sl_of_lid[usize::from(dest.lid)] = layers.len() as u8;
            layers.push(vec![dest.lid]);
        }
    }
    lfts.sl_of_lid = sl_of_lid;
    Ok(lfts)
}
