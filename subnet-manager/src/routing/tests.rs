use super::*;
use crate::interop::generate::FatTree;
use crate::lid;

fn routed(shape: FatTree, engine: Engine, lmc: u8) -> (Topology, Lfts, Balance) {
    let mut topology = shape.build();
    lid::assign(&mut topology, lmc, 0, &Default::default()).unwrap();
    let config = RoutingConfig { engines: vec![engine], lmc, ..RoutingConfig::default() };
    let lfts = route(&topology, &config).unwrap();
    let balance = analyze(&topology, &lfts, lmc);
    (topology, lfts, balance)
}

const TWO_LEVEL: FatTree = FatTree::TwoLevel { leaves: 6, spines: 4, hosts_per_leaf: 5 };
const THREE_LEVEL: FatTree =
    FatTree::ThreeLevel { pods: 3, leaves_per_pod: 3, aggs_per_pod: 2, cores_per_group: 2, hosts_per_leaf: 3 };

#[test]
fn every_engine_reaches_every_destination_without_loops() {
    for shape in [TWO_LEVEL, THREE_LEVEL] {
        for engine in [Engine::Minhop, Engine::Updn, Engine::Ftree, Engine::Sssp, Engine::Dfsssp] {
            let (_, _, balance) = routed(shape, engine, 0);
            assert_eq!(balance.unreachable_pairs, 0, "{engine:?} on {shape:?}");
            assert_eq!(balance.looping_destinations, 0, "{engine:?} on {shape:?}");
        }
    }
}

#[test]
fn ftree_and_updn_are_balanced_and_deadlock_free_on_fat_trees() {
    for shape in [TWO_LEVEL, THREE_LEVEL] {
        for lmc in [0, 1] {
            for engine in [Engine::Ftree, Engine::Updn, Engine::Minhop] {
                let (_, _, balance) = routed(shape, engine, lmc);
                assert!(
                    balance.worst_spread <= 1,
                    "{engine:?} lmc {lmc} on {shape:?}: spread {}",
                    balance.worst_spread
                );
                assert!(balance.deadlock_free(), "{engine:?} on {shape:?}");
            }
        }
    }
}

#[test]
fn lmc_lids_take_different_paths() {
    let (topology, lfts, _) = routed(TWO_LEVEL, Engine::Ftree, 2);
    // A leaf routes the 4 LIDs of a remote host over 4 different spines.
    let leaf = topology.nodes.iter().position(|n| n.description == "leaf-0").unwrap();
    let host = topology.nodes.iter().position(|n| n.description == "host-29").unwrap();
    let base = topology.nodes[host].ports[1].lid;
    let ports: std::collections::BTreeSet<u8> = (0..4).map(|i| lfts.port(leaf, base + i).unwrap()).collect();
    assert_eq!(ports.len(), 4);
}

#[test]
fn ftree_declines_what_is_not_a_fat_tree_and_the_fallback_routes() {
    // Three switches in a ring, a host on each: not a fat tree.
    let text = "Switch 3 \"a\"\n[1] \"b\"[1]\n[2] \"c\"[2]\n[3] \"ha\"[1]\n\nSwitch 3 \"b\"\n[1] \"a\"[1]\n[2] \"c\"[1]\n[3] \"hb\"[1]\n\nSwitch 3 \"c\"\n[1] \"b\"[2]\n[2] \"a\"[2]\n[3] \"hc\"[1]\n\nHca 1 \"ha\"\n[1] \"a\"[3]\n\nHca 1 \"hb\"\n[1] \"b\"[3]\n\nHca 1 \"hc\"\n[1] \"c\"[3]\n";
    let mut topology = crate::interop::ibnet::parse(text).unwrap();
    lid::assign(&mut topology, 0, 0, &Default::default()).unwrap();
    let config = RoutingConfig { engines: vec![Engine::Ftree, Engine::Updn], ..RoutingConfig::default() };
    let lfts = route(&topology, &config).unwrap();
    assert_eq!(lfts.engine, Some(Engine::Updn));
    assert!(matches!(lfts.refused[..], [(Engine::Ftree, RoutingError::NotAFatTree(_))]));
    let balance = analyze(&topology, &lfts, 0);
    assert_eq!(balance.unreachable_pairs, 0);
    assert!(balance.deadlock_free(), "up*/down* on a ring");
    // minhop on a ring of 3 uses the direct links: cycle free too; on a
    // ring of three, dfsssp layering keeps every VL acyclic.
    let config = RoutingConfig { engines: vec![Engine::Dfsssp], ..RoutingConfig::default() };
    let lfts = route(&topology, &config).unwrap();
    assert!(analyze(&topology, &lfts, 0).deadlock_free());
    let refused = route(&topology, &RoutingConfig { engines: vec![Engine::Ftree], ..RoutingConfig::default() });
    assert!(matches!(refused.unwrap_err()[0].1, RoutingError::NotAFatTree(_)));
}

#[test]
fn dfsssp_layers_a_ring_where_shortest_paths_deadlock() {
    // A ring of 5 switches: shortest paths go both ways round and make a
    // cyclic channel dependency graph on one VL.
    let mut text = String::new();
    for i in 0..5 {
        let next = (i + 1) % 5;
        let prev = (i + 4) % 5;
        text.push_str(&format!("Switch 3 \"s{i}\"\n[1] \"s{next}\"[2]\n[2] \"s{prev}\"[1]\n[3] \"h{i}\"[1]\n\n"));
    }
    for i in 0..5 {
        text.push_str(&format!("Hca 1 \"h{i}\"\n[1] \"s{i}\"[3]\n\n"));
    }
    let mut topology = crate::interop::ibnet::parse(&text).unwrap();
    lid::assign(&mut topology, 0, 0, &Default::default()).unwrap();
    let sssp = route(&topology, &RoutingConfig { engines: vec![Engine::Sssp], ..RoutingConfig::default() }).unwrap();
    let one_vl = analyze(&topology, &sssp, 0);
    assert!(!one_vl.deadlock_free(), "shortest paths round a ring of 5 deadlock on one VL");
    let layered =
        route(&topology, &RoutingConfig { engines: vec![Engine::Dfsssp], ..RoutingConfig::default() }).unwrap();
    let balance = analyze(&topology, &layered, 0);
    assert!(balance.acyclic_per_vl.len() >= 2, "needs a second VL");
    assert!(balance.deadlock_free());
    assert_eq!(balance.unreachable_pairs, 0);
    let refused =
        route(&topology, &RoutingConfig { engines: vec![Engine::Dfsssp], max_vls: 1, ..RoutingConfig::default() });
    assert!(matches!(refused.unwrap_err()[0].1, RoutingError::TooManyLayers { .. }));
}

#[test]
fn a_spine_cut_off_from_a_leaf_still_answers_the_sm_and_stays_deadlock_free() {
    let mut topology = TWO_LEVEL.build();
    let leaf = topology.nodes.iter().position(|n| n.description == "leaf-0").unwrap();
    topology.disconnect(crate::topology::PortRef { node: leaf, port: 6 }); // to spine-0
    lid::assign(&mut topology, 0, 0, &Default::default()).unwrap();
    for engine in [Engine::Ftree, Engine::Updn] {
        let lfts = route(&topology, &RoutingConfig { engines: vec![engine], ..RoutingConfig::default() }).unwrap();
        let spine = topology.nodes.iter().position(|n| n.description == "spine-0").unwrap();
        let host0_lid = topology.nodes[0].ports[1].lid;
        assert!(lfts.port(spine, host0_lid).is_some(), "{engine:?}: spine-0 can answer host-0");
        let balance = analyze(&topology, &lfts, 0);
        assert_eq!(balance.unreachable_pairs, 0);
        assert!(balance.deadlock_free(), "{engine:?}");
    }
}

/// For every shift s, host i sends to host (i + s) mod N; counts the most
/// flows any switch-to-switch channel carries.
fn worst_shift_contention(topology: &Topology, lfts: &Lfts) -> usize {
    let hosts: Vec<usize> = topology.cas().collect();
    let n = hosts.len();
    let mut worst = 0;
    for shift in 1..n {
        let mut load: rustc_hash::FxHashMap<(usize, u8), usize> = Default::default();
        for (i, &src) in hosts.iter().enumerate() {
            let dst = hosts[(i + shift) % n];
            let lid = topology.nodes[dst].ports[1].lid;
            let mut at = topology.nodes[src].ports[1].remote.unwrap().node;
            for _ in 0..8 {
                let port = lfts.port(at, lid).unwrap();
                let next = topology.nodes[at].ports[usize::from(port)].remote.unwrap();
                if next.node == dst {
                    break;
                }
                *load.entry((at, port)).or_default() += 1;
                at = next.node;
            }
        }
        worst = worst.max(load.values().copied().max().unwrap_or(0));
    }
    worst
}

#[test]
fn ftree_shift_permutations_are_contention_free_on_a_two_level_fat_tree() {
    // As many spines as hosts per leaf: full bisection.
    let shape = FatTree::TwoLevel { leaves: 6, spines: 4, hosts_per_leaf: 4 };
    let (topology, lfts, _) = routed(shape, Engine::Ftree, 0);
    assert_eq!(worst_shift_contention(&topology, &lfts), 1);
}

/// A torus of `side` x `side` switches, one host each: shortest paths wrap
/// round both rings.
fn torus(side: usize) -> Topology {
    let name = |x: usize, y: usize| format!("s{}-{}", x % side, y % side);
    let mut text = String::new();
    for x in 0..side {
        for y in 0..side {
            text.push_str(&format!(
                "Switch 5 \"{}\"\n[1] \"{}\"[2]\n[2] \"{}\"[1]\n[3] \"{}\"[4]\n[4] \"{}\"[3]\n[5] \"h{x}-{y}\"[1]\n\n",
                name(x, y),
                name(x + 1, y),
                name(x + side - 1, y),
                name(x, y + 1),
                name(x, y + side - 1),
            ));
        }
    }
    for x in 0..side {
        for y in 0..side {
            text.push_str(&format!("Hca 1 \"h{x}-{y}\"\n[1] \"{}\"[5]\n\n", name(x, y)));
        }
    }
    crate::interop::ibnet::parse(&text).unwrap()
}

/// Kahn's algorithm over the (in-channel, out-channel) pairs found by
/// walking every switch's LFT: a check apart from [`cdg`]'s.
fn acyclic_by_walking(topology: &Topology, lfts: &Lfts, lids: &[u16]) -> bool {
    let is_switch = |node: usize| topology.nodes[node].is_switch();
    let mut edges = std::collections::BTreeSet::new();
    for &lid in lids {
        for (s, node) in topology.nodes.iter().enumerate().filter(|(s, _)| is_switch(*s)) {
            let Some(port) = lfts.port(s, lid) else { continue };
            let Some(far) = node.ports[usize::from(port)].remote.filter(|r| is_switch(r.node)) else { continue };
            let Some(next) = lfts.port(far.node, lid) else { continue };
            let Some(after) = topology.nodes[far.node].ports[usize::from(next)].remote else { continue };
            if is_switch(after.node) {
                edges.insert(((s, port), (far.node, next)));
            }
        }
    }
    let mut indegree: std::collections::BTreeMap<(usize, u8), usize> = Default::default();
    for &(a, b) in &edges {
        indegree.entry(a).or_default();
        *indegree.entry(b).or_default() += 1;
    }
    let mut ready: Vec<(usize, u8)> = indegree.iter().filter(|(_, d)| **d == 0).map(|(c, _)| *c).collect();
    let mut removed = 0;
    while let Some(c) = ready.pop() {
        removed += 1;
        for &(_, b) in edges.range((c, (0, 0))..=(c, (usize::MAX, u8::MAX))) {
            let d = indegree.get_mut(&b).unwrap();
            *d -= 1;
            if *d == 0 {
                ready.push(b);
            }
        }
    }
    removed == indegree.len()
}

#[test]
fn dfsssp_layers_a_torus_and_each_layer_is_acyclic_by_an_independent_check() {
    for side in [4, 5, 6] {
        let mut topology = torus(side);
        lid::assign(&mut topology, 0, 0, &Default::default()).unwrap();
        let cas: Vec<u16> = topology.cas().map(|c| topology.nodes[c].ports[1].lid).collect();
        let sssp =
            route(&topology, &RoutingConfig { engines: vec![Engine::Sssp], ..RoutingConfig::default() }).unwrap();
        assert!(!acyclic_by_walking(&topology, &sssp, &cas), "{side}x{side}: one VL deadlocks");
        assert!(!analyze(&topology, &sssp, 0).deadlock_free(), "{side}x{side}: the analysis sees the cycle");
        let layered =
            route(&topology, &RoutingConfig { engines: vec![Engine::Dfsssp], ..RoutingConfig::default() }).unwrap();
        assert_eq!(layered.tables, sssp.tables, "layering keeps sssp's routes");
        let vls = usize::from(*layered.sl_of_lid.iter().max().unwrap()) + 1;
        assert!(vls >= 2, "{side}x{side}");
        for vl in 0..vls {
            let on_vl: Vec<u16> =
                cas.iter().copied().filter(|&lid| usize::from(layered.sl_of_lid[usize::from(lid)]) == vl).collect();
            assert!(!on_vl.is_empty(), "{side}x{side}: VL {vl} in use");
            assert!(acyclic_by_walking(&topology, &layered, &on_vl), "{side}x{side}: VL {vl}");
        }
        let balance = analyze(&topology, &layered, 0);
        assert!(balance.deadlock_free());
        assert_eq!(balance.unreachable_pairs, 0);
    }
}

#[test]
fn sssp_takes_min_hop_paths_and_balances_channel_load_on_fat_trees() {
    for shape in [TWO_LEVEL, THREE_LEVEL] {
        let (_, _, minhop) = routed(shape, Engine::Minhop, 0);
        let (_, _, sssp) = routed(shape, Engine::Sssp, 0);
        // Only min-hop paths on a fat tree: up, then down; one VL is enough.
        assert!(sssp.deadlock_free(), "{shape:?}");
        assert_eq!(sssp.unreachable_pairs, 0);
        assert!(
            sssp.edge_forwarding_index <= minhop.edge_forwarding_index,
            "{shape:?}: sssp {} minhop {}",
            sssp.edge_forwarding_index,
            minhop.edge_forwarding_index
        );
    }
}
