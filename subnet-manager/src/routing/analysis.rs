//! What a routing result is worth: routes per switch port (max, min, and
//! the spread within the up-going and down-going ports, the check of
//! rdma-core's `check_lft_balance.pl`), the edge-forwarding index (the most
//! (source CA, destination) routes any switch-to-switch channel carries),
//! unreachable pairs and routing loops, and whether each VL's channel
//! dependency graph is acyclic (Dally and Seitz: then the routing cannot
//! deadlock).

use super::cdg::{DependencyGraph, Wiring};
use super::graph::{SwitchGraph, UNREACHABLE};
use super::{Engine, Lfts};
use crate::topology::Topology;

/// Dense numbering of the (switch, port) output channels.
pub struct Channels {
    offset: Vec<usize>,
}

impl Channels {
    pub fn new(graph: &SwitchGraph<'_>) -> Channels {
        let mut offset = Vec::with_capacity(graph.switch_count() + 1);
        let mut total = 0;
        for s in 0..graph.switch_count() {
            offset.push(total);
            total += usize::from(graph.num_ports(s)) + 1;
        }
        offset.push(total);
        Channels { offset }
    }

    pub fn id(&self, switch: usize, port: u8) -> usize {
        self.offset[switch] + usize::from(port)
    }

    pub fn len(&self) -> usize {
        *self.offset.last().unwrap_or(&0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Per switch: the switch neighbour behind each port (or none).
fn neighbour_of_port(graph: &SwitchGraph<'_>) -> Vec<Vec<u32>> {
    (0..graph.switch_count())
        .map(|s| {
            let mut by_port = vec![UNREACHABLE; usize::from(graph.num_ports(s)) + 1];
            for &(port, n) in &graph.links[s] {
                by_port[usize::from(port)] = n;
            }
            by_port
        })
        .collect()
}

/// Routes per port of one switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchBalance {
    pub node: usize,
    /// CA-destination LIDs routed out of each port (index = port).
    pub routes: Vec<u32>,
    /// max - min over the ports towards switches farther from the CAs.
    pub up_spread: u32,
    /// max - min over the ports towards switches nearer the CAs.
    pub down_spread: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Balance {
    pub engine: Option<Engine>,
    pub switches: Vec<SwitchBalance>,
    /// The largest up or down spread of any switch.
    pub worst_spread: u32,
    /// Over every switch-to-switch port.
    pub max_routes_per_port: u32,
    pub min_routes_per_port: u32,
    pub edge_forwarding_index: u64,
    /// (source CA port, destination CA LID) pairs with no route.
    pub unreachable_pairs: u64,
    /// Destinations whose LFTs send some packet round in a loop.
    pub looping_destinations: u64,
    /// Per VL in use: its channel dependency graph is acyclic.
    pub acyclic_per_vl: Vec<bool>,
}

impl Balance {
    pub fn deadlock_free(&self) -> bool {
        self.acyclic_per_vl.iter().all(|&a| a)
    }
}

pub fn analyze(topology: &Topology, lfts: &Lfts, lmc: u8) -> Balance {
    let graph = SwitchGraph::new(topology, lmc);
    let switches = graph.switch_count();
    let channels = Channels::new(&graph);
    let neighbours = neighbour_of_port(&graph);
    let level = graph.levels_from_leaves();
    let mut routes: Vec<Vec<u32>> = (0..switches).map(|s| vec![0; usize::from(graph.num_ports(s)) + 1]).collect();
    let mut channel_load = vec![0u64; channels.len()];
    let mut unreachable_pairs = 0u64;
    let mut looping = 0u64;
    let vls = lfts.sl_of_lid.iter().copied().max().map_or(1, |m| usize::from(m) + 1);
    let mut lids_per_vl: Vec<Vec<u16>> = vec![Vec::new(); vls];
    let sources: Vec<usize> = (0..switches).filter(|&s| graph.cas_attached[s] > 0).collect();
    for dest in graph.dests.iter().filter(|d| d.is_ca()) {
        let target = dest.switch as usize;
        for s in 0..switches {
            if let Some(port) = lfts.port(graph.nodes[s], dest.lid) {
                routes[s][usize::from(port)] += 1;
            }
        }
        let vl = lfts.sl_of_lid.get(usize::from(dest.lid)).copied().unwrap_or(0) as usize;
        lids_per_vl[vl].push(dest.lid);
        let mut looped = false;
        for &source in &sources {
            let weight = u64::from(graph.cas_attached[source]);
            let mut at = source;
            let mut steps = 0;
            let reached = loop {
                if at == target {
                    break lfts.port(graph.nodes[at], dest.lid) == Some(dest.port);
                }
                let Some(port) = lfts.port(graph.nodes[at], dest.lid) else { break false };
                let n = neighbours[at].get(usize::from(port)).copied().unwrap_or(UNREACHABLE);
                if n == UNREACHABLE {
                    break false;
                }
                channel_load[channels.id(at, port)] += weight;
                at = n as usize;
                steps += 1;
                if steps > switches {
                    looped = true;
                    break false;
                }
            };
            if !reached {
                unreachable_pairs += weight;
            }
        }
        looping += u64::from(looped);
    }
    let mut per_switch = Vec::with_capacity(switches);
    let (mut worst, mut max_all, mut min_all) = (0u32, 0u32, u32::MAX);
    for s in 0..switches {
        let (mut up, mut down) = (Vec::new(), Vec::new());
        for &(port, n) in &graph.links[s] {
            let count = routes[s][usize::from(port)];
            max_all = max_all.max(count);
            min_all = min_all.min(count);
            if level[n as usize] > level[s] { up.push(count) } else { down.push(count) }
        }
        let spread = |v: &[u32]| v.iter().max().zip(v.iter().min()).map_or(0, |(a, b)| a - b);
        let (up_spread, down_spread) = (spread(&up), spread(&down));
        worst = worst.max(up_spread).max(down_spread);
        per_switch.push(SwitchBalance {
            node: graph.nodes[s],
            routes: std::mem::take(&mut routes[s]),
            up_spread,
            down_spread,
        });
    }
    let mut switch_channels = vec![false; channels.len()];
    for s in 0..switches {
        for &(port, _) in &graph.links[s] {
            switch_channels[channels.id(s, port)] = true;
        }
    }
    let edge_forwarding_index =
        channel_load.iter().zip(&switch_channels).filter(|(_, sw)| **sw).map(|(l, _)| *l).max().unwrap_or(0);
    Balance {
        engine: lfts.engine,
        switches: per_switch,
        worst_spread: worst,
        max_routes_per_port: max_all,
        min_routes_per_port: if min_all == u32::MAX { 0 } else { min_all },
        edge_forwarding_index,
        unreachable_pairs,
        looping_destinations: looping,
        acyclic_per_vl: acyclic_per_vl(&graph, lfts, &mut lids_per_vl),
    }
}

/// Per VL: whether the channel dependency graph of the destinations on it
/// is acyclic. (Switch LIDs carry VL15 management traffic only: no
/// credits, no dependencies.)
fn acyclic_per_vl(graph: &SwitchGraph<'_>, lfts: &Lfts, lids_per_vl: &mut [Vec<u16>]) -> Vec<bool> {
    let wiring = Wiring::new(graph);
    let mut dependencies = DependencyGraph::new(graph, &wiring);
    lids_per_vl
        .iter_mut()
        .map(|lids| {
            lids.sort_unstable();
            dependencies.clear();
            dependencies.add(lfts, lids);
            dependencies.is_acyclic()
        })
        .collect()
}
