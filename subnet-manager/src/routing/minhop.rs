//! Min-hop routing (OpenSM's default engine): for every destination, each
//! switch forwards on a port towards a neighbour one hop closer, choosing
//! among equal ports the one that carries the fewest CA routes so far.

use super::graph::{SwitchGraph, UNREACHABLE};
use super::{Lfts, least_loaded};

pub fn route(graph: &SwitchGraph<'_>) -> Lfts {
    let mut lfts = graph.empty_lfts();
    let switches = graph.switch_count();
    let mut load: Vec<Vec<u32>> = (0..switches).map(|s| vec![0; usize::from(graph.num_ports(s)) + 1]).collect();
    let (mut dist, mut queue) = (Vec::new(), Vec::new());
    // Candidate ports of each switch towards the current target switch.
    let mut candidates: Vec<u8> = Vec::new();
    let mut start = vec![0usize; switches + 1];
    for target in 0..switches {
        let dests = graph.dests_at(target);
        if dests.is_empty() {
            continue;
        }
        graph.distances_to(target, &mut dist, &mut queue);
        candidates.clear();
        for s in 0..switches {
            start[s] = candidates.len();
            if s != target && dist[s] != UNREACHABLE {
                for &(port, n) in &graph.links[s] {
                    if dist[n as usize] + 1 == dist[s] {
                        candidates.push(port);
                    }
                }
            }
        }
        start[switches] = candidates.len();
        for dest in dests {
            for s in 0..switches {
                let node = graph.nodes[s];
                let port = if s == target {
                    dest.port
                } else {
                    let ports = &candidates[start[s]..start[s + 1]];
                    if ports.is_empty() {
                        continue;
                    }
                    if dest.is_ca() { least_loaded(ports, &mut load[s], dest.order) } else { ports[0] }
                };
                lfts.set(node, dest.lid, port);
            }
        }
    }
    lfts
}
