//! DFSSSP (Domke, Hoefler and Nagel, "Deadlock-Free Oblivious Routing for
//! Arbitrary Topologies", IPDPS 2011; OpenSM's `dfsssp`): the balanced
//! routes of [`sssp`](super::sssp), then destinations spread over virtual
//! lanes so that each lane's channel dependency graph is acyclic.
//!
//! As OpenSM does it: every destination starts on VL 0; while that VL's
//! graph has a cycle, the cycle's weakest edge (the turn the fewest
//! destinations take) is cut by moving those destinations to the next VL;
//! when VL 0 is acyclic, the moved ones are checked on VL 1 the same way,
//! and so on. OpenSM moves (source, destination) paths and sets the SL per
//! path; here the unit is the destination LID (the SL a host uses towards
//! it), so that [`Lfts::sl_of_lid`] is the whole answer.

use super::cdg::{CycleSearch, DependencyGraph, Wiring};
use super::graph::SwitchGraph;
use super::{Lfts, RoutingError, sssp};

/// The balanced routes, then destinations on VLs (as SLs, SL = VL). All on
/// VL 0 (and [`Lfts::sl_of_lid`] empty) when that is already acyclic.
pub fn route(graph: &SwitchGraph<'_>, max_vls: u8) -> Result<Lfts, RoutingError> {
    let mut lfts = sssp::route(graph);
    let wiring = Wiring::new(graph);
    let mut dependencies = DependencyGraph::new(graph, &wiring);
    let mut sl_of_lid = vec![0u8; usize::from(graph.max_lid) + 1];
    let mut moved_out = vec![false; usize::from(graph.max_lid) + 1];
    let mut layer: Vec<u16> = graph.dests.iter().filter(|d| d.is_ca()).map(|d| d.lid).collect();
    layer.sort_unstable();
    let mut vl = 0u8;
    while !layer.is_empty() {
        if vl >= max_vls {
            return Err(RoutingError::TooManyLayers { needed: usize::from(vl) + 1, available: max_vls });
        }
        dependencies.clear();
        dependencies.add(&lfts, &layer);
        let mut search = CycleSearch::default();
        let mut next_layer = Vec::new();
        while let Some(cycle) = dependencies.find_cycle(&mut search) {
            let weakest = *cycle.iter().min_by_key(|&&turn| dependencies.count(turn)).expect("a cycle has turns");
            let users =
                dependencies.users(&lfts, weakest, layer.iter().copied().filter(|&l| !moved_out[usize::from(l)]));
            if users.is_empty() {
                break; // unreachable: a turn in the graph has users
            }
            for lid in users {
                dependencies.remove(&lfts, lid);
                moved_out[usize::from(lid)] = true;
                sl_of_lid[usize::from(lid)] = vl + 1;
                next_layer.push(lid);
            }
        }
        for &lid in &next_layer {
            moved_out[usize::from(lid)] = false;
        }
        next_layer.sort_unstable();
        layer = next_layer;
        vl += 1;
    }
    if vl > 1 {
        lfts.sl_of_lid = sl_of_lid;
    }
    Ok(lfts)
}
