//! Up*/down* routing (OpenSM's `updn`): switches ranked by distance from
//! the roots; a hop is "up" towards a lower rank (equal ranks: towards the
//! lower GUID). Every route goes up zero or more hops, then down zero or
//! more, never up after down, which keeps the channel dependency graph
//! acyclic: deadlock free on one VL.
//!
//! Per destination switch `t`: `down[x]` is the hop count from `x` to `t`
//! going only down; switches with a down-only route use it (so a packet
//! that came down keeps going down); the others go up to the neighbour
//! with the cheapest continuation. Switch LIDs (VL15 management traffic
//! only, which cannot deadlock) get plain shortest paths, and so do the
//! entries of switches with no legal route to a CA (no CA's route crosses
//! them; their own SMP answers still reach the SM).

use super::graph::{SwitchGraph, UNREACHABLE};
use super::{Lfts, RoutingError, least_loaded};

/// Roots: the configured switch GUIDs, or the switches farthest from any
/// CA (the top of a fat tree).
pub fn route(graph: &SwitchGraph<'_>, roots: &[u64]) -> Result<Lfts, RoutingError> {
    let roots = if roots.is_empty() {
        detect_roots(graph)
    } else {
        roots
            .iter()
            .map(|&guid| {
                (0..graph.switch_count()).find(|&s| graph.guid(s) == guid).ok_or(RoutingError::UnknownRoot(guid))
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    let rank = ranks_from(graph, &roots);
    Ok(route_ranked(graph, &rank, false))
}

/// The switches farthest from the CAs' switches.
pub fn detect_roots(graph: &SwitchGraph<'_>) -> Vec<usize> {
    let level = graph.levels_from_leaves();
    let top = level.iter().copied().filter(|&l| l != UNREACHABLE).max();
    match top {
        Some(top) => (0..graph.switch_count()).filter(|&s| level[s] == top).collect(),
        None => (0..graph.switch_count().min(1)).collect(),
    }
}

/// Breadth-first distance from the nearest root.
pub fn ranks_from(graph: &SwitchGraph<'_>, roots: &[usize]) -> Vec<u32> {
    let mut rank = vec![UNREACHABLE; graph.switch_count()];
    let mut queue: Vec<u32> = Vec::new();
    for &r in roots {
        rank[r] = 0;
        queue.push(r as u32);
    }
    let mut head = 0;
    while head < queue.len() {
        let s = queue[head] as usize;
        head += 1;
        for &(_, n) in &graph.links[s] {
            if rank[n as usize] == UNREACHABLE {
                rank[n as usize] = rank[s] + 1;
                queue.push(n);
            }
        }
    }
    rank
}

/// Routes with the given ranks (lower is closer to the roots). With
/// `leaf_round_robin` (ftree), a switch with CAs sends the destinations
/// that are not its own up round robin by their index among those remote
/// destinations (d-mod-k): its up ports differ by at most one route, and
/// on a fat tree with as many spines as hosts per leaf a shift
/// permutation uses every up and down link once.
pub fn route_ranked(graph: &SwitchGraph<'_>, rank: &[u32], leaf_round_robin: bool) -> Lfts {
    let switches = graph.switch_count();
    let guid: Vec<u64> = (0..switches).map(|s| graph.guid(s)).collect();
    // s -> n is an up hop.
    let up = |s: usize, n: usize| rank[n] < rank[s] || (rank[n] == rank[s] && guid[n] < guid[s]);
    let mut lfts = graph.empty_lfts();
    let mut load: Vec<Vec<u32>> = (0..switches).map(|s| vec![0; usize::from(graph.num_ports(s)) + 1]).collect();
    let mut down = vec![UNREACHABLE; switches];
    let mut cost = vec![UNREACHABLE; switches];
    let mut queue: Vec<u32> = Vec::new();
    let mut plain: Vec<u32> = Vec::new();
    let mut buckets: Vec<Vec<u32>> = Vec::new();
    let mut candidates: Vec<u8> = Vec::new();
    let mut start = vec![0usize; switches + 1];
    // (first order, count) of each switch's own CA destinations: contiguous,
    // as SwitchGraph numbers them switch by switch.
    let own_block: Vec<(usize, usize)> = (0..switches)
        .map(|s| {
            let cas: Vec<usize> = graph.dests_at(s).iter().filter(|d| d.is_ca()).map(|d| d.order).collect();
            (cas.first().copied().unwrap_or(0), cas.len())
        })
        .collect();
    for target in 0..switches {
        let dests = graph.dests_at(target);
        if dests.is_empty() {
            continue;
        }
        // Down-only distances: walk from the target against down hops.
        down.fill(UNREACHABLE);
        queue.clear();
        down[target] = 0;
        queue.push(target as u32);
        let mut head = 0;
        while head < queue.len() {
            let x = queue[head] as usize;
            head += 1;
            for &(_, y) in &graph.links[x] {
                let y = y as usize;
                // y -> x must be a down hop, i.e. x -> y is up.
                if down[y] == UNREACHABLE && up(x, y) {
                    down[y] = down[x] + 1;
                    queue.push(y as u32);
                }
            }
        }
        // Costs of the others: up hops into the cheapest continuation,
        // processed in cost order (bucket queue).
        cost.copy_from_slice(&down);
        buckets.iter_mut().for_each(Vec::clear);
        for x in 0..switches {
            if down[x] != UNREACHABLE {
                let c = down[x] as usize;
                if buckets.len() <= c {
                    buckets.resize(c + 1, Vec::new());
                }
                buckets[c].push(x as u32);
            }
        }
        let mut level = 0;
        while level < buckets.len() {
            let mut i = 0;
            while i < buckets[level].len() {
                let x = buckets[level][i] as usize;
                i += 1;
                for &(_, y) in &graph.links[x] {
                    let y = y as usize;
                    // y -> x is an up hop and y has no down-only route.
                    if cost[y] == UNREACHABLE && up(y, x) {
                        cost[y] = level as u32 + 1;
                        if buckets.len() <= level + 1 {
                            buckets.resize(level + 2, Vec::new());
                        }
                        buckets[level + 1].push(y as u32);
                    }
                }
            }
            level += 1;
        }
        candidates.clear();
        for s in 0..switches {
            start[s] = candidates.len();
            if s == target || cost[s] == UNREACHABLE {
                continue;
            }
            for &(port, n) in &graph.links[s] {
                let n = n as usize;
                let legal = if down[s] != UNREACHABLE {
                    !up(s, n) && down[n] != UNREACHABLE && down[n] + 1 == down[s]
                } else {
                    up(s, n) && cost[n] != UNREACHABLE && cost[n] + 1 == cost[s]
                };
                if legal {
                    candidates.push(port);
                }
            }
        }
        start[switches] = candidates.len();
        graph.distances_to(target, &mut plain, &mut queue);
        // The first port one plain hop closer, for the entries up*/down*
        // leaves empty.
        let plain_next = |s: usize| -> Option<u8> {
            if plain[s] == UNREACHABLE {
                return None;
            }
            graph.links[s].iter().find(|&&(_, n)| plain[n as usize] + 1 == plain[s]).map(|&(port, _)| port)
        };
        for dest in dests.iter().filter(|d| !d.is_ca()) {
            // A switch's own LID carries only management traffic, on VL15,
            // which has no credits and so no deadlock: plain shortest
            // paths, even spine to spine (down and up again).
            for s in 0..switches {
                let port = if s == target {
                    0
                } else {
                    match plain_next(s) {
                        Some(port) => port,
                        None => continue,
                    }
                };
                lfts.set(graph.nodes[s], dest.lid, port);
            }
        }
        for dest in dests.iter().filter(|d| d.is_ca()) {
            for s in 0..switches {
                if leaf_round_robin && s != target {
                    let own = &own_block[s];
                    let ports = &candidates[start[s]..start[s + 1]];
                    if own.1 > 0 && !ports.is_empty() {
                        let remote_index = if dest.order < own.0 { dest.order } else { dest.order - own.1 };
                        let port = ports[remote_index % ports.len()];
                        load[s][usize::from(port)] += 1;
                        lfts.set(graph.nodes[s], dest.lid, port);
                        continue;
                    }
                }
                let port = if s == target {
                    dest.port
                } else {
                    let ports = &candidates[start[s]..start[s + 1]];
                    if ports.is_empty() {
                        // No legal up*/down* route from here (a root cut
                        // off from the destination's leaf but for a down-up
                        // detour). No CA's route passes here, so only this
                        // switch's own management traffic (VL15, no credits)
                        // uses the entry: the plain shortest path, which
                        // keeps SMP answers to the SM's LID flowing.
                        match plain_next(s) {
                            Some(port) => port,
                            None => continue,
                        }
                    } else {
                        least_loaded(ports, &mut load[s], dest.order)
                    }
                };
                lfts.set(graph.nodes[s], dest.lid, port);
            }
        }
    }
    lfts
}
