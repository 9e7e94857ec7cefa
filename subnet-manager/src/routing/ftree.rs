//! Fat-tree routing (the role of OpenSM's `ftree`). The fabric must be a
//! fat tree: every CA on a leaf switch (level 0), every switch link joining
//! adjacent levels; otherwise the engine declines and the next one in the
//! list routes. Routes go up to the lowest common level and down;
//! destinations are numbered leaf by leaf, port by port. A leaf sends the
//! destinations that are not its own up round robin by their index among
//! those (d-mod-k), so its up ports differ by at most one route and, when a
//! leaf has as many up ports as hosts, a shift permutation (host i to host
//! i + s) crosses every up and down link once; higher switches take the up
//! port with the fewest routes, ties broken by the destination's index.

use super::graph::{SwitchGraph, UNREACHABLE};
use super::{Lfts, RoutingError, updn};

pub fn route(graph: &SwitchGraph<'_>) -> Result<Lfts, RoutingError> {
    let level = graph.levels_from_leaves();
    if graph.cas_attached.iter().all(|&c| c == 0) {
        return Err(RoutingError::NotAFatTree("no CA is cabled to a switch".into()));
    }
    let top = level.iter().copied().filter(|&l| l != UNREACHABLE).max().unwrap_or(0);
    for s in 0..graph.switch_count() {
        let guid = graph.guid(s);
        if level[s] == UNREACHABLE {
            return Err(RoutingError::NotAFatTree(format!("switch {guid:#018x} reaches no leaf")));
        }
        if graph.cas_attached[s] > 0 && level[s] != 0 {
            return Err(RoutingError::NotAFatTree(format!("switch {guid:#018x} has CAs above the leaves")));
        }
        for &(port, n) in &graph.links[s] {
            if level[n as usize].abs_diff(level[s]) != 1 {
                return Err(RoutingError::NotAFatTree(format!(
                    "switch {guid:#018x} port {port} joins levels {} and {}",
                    level[s], level[n as usize]
                )));
            }
        }
        if level[s] < top && !graph.links[s].iter().any(|&(_, n)| level[n as usize] == level[s] + 1) {
            return Err(RoutingError::NotAFatTree(format!("switch {guid:#018x} at level {} has no up link", level[s])));
        }
    }
    // Ranks for up*/down*: the top level is rank 0.
    let rank: Vec<u32> = level.iter().map(|&l| top - l).collect();
    Ok(updn::route_ranked(graph, &rank, true))
}
