//! Fat-tree generators: the fabrics the tests, the ibsim comparison
//! (`scripts/bench-sm`) and the routing benchmarks bring up. Hosts come
//! first, so ibsim puts its SM port on `host-0` (the first node of its
//! file) and our in-process fabric does the same.

use crate::topology::{Node, NodeKind, PortRef, Topology};

const SWITCH_GUID_BASE: u64 = 0x0002_c903_0000_0000;
const HOST_GUID_BASE: u64 = 0x0002_c903_1000_0000;

/// The shape of a fat tree of two or three switch levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FatTree {
    /// Leaves with `hosts_per_leaf` hosts each, every leaf cabled once to
    /// every spine.
    TwoLevel { leaves: usize, spines: usize, hosts_per_leaf: usize },
    /// `pods` pods of `leaves_per_pod` leaves and `aggs_per_pod`
    /// aggregation switches (every leaf to every aggregation switch of its
    /// pod); aggregation switch `j` of every pod cabled to core group `j`
    /// of `cores_per_group` cores.
    ThreeLevel {
        pods: usize,
        leaves_per_pod: usize,
        aggs_per_pod: usize,
        cores_per_group: usize,
        hosts_per_leaf: usize,
    },
}

impl FatTree {
    /// About 650, 1,500 and 4,100 nodes: the sizes of the ibsim
    /// comparison.
    pub fn preset(name: &str) -> Option<FatTree> {
        Some(match name {
            "650" => FatTree::TwoLevel { leaves: 36, spines: 18, hosts_per_leaf: 17 },
            "1500" => FatTree::TwoLevel { leaves: 72, spines: 18, hosts_per_leaf: 18 },
            "4100" => FatTree::ThreeLevel {
                pods: 12,
                leaves_per_pod: 16,
                aggs_per_pod: 8,
                cores_per_group: 4,
                hosts_per_leaf: 20,
            },
            "10k" => FatTree::ThreeLevel {
                pods: 25,
                leaves_per_pod: 20,
                aggs_per_pod: 10,
                cores_per_group: 5,
                hosts_per_leaf: 20,
            },
            "50k" => FatTree::ThreeLevel {
                pods: 64,
                leaves_per_pod: 36,
                aggs_per_pod: 18,
                cores_per_group: 8,
                hosts_per_leaf: 20,
            },
            _ => return None,
        })
    }

    /// Builds the topology; nodes are hosts, then leaves, then the upper
    /// levels.
    pub fn build(self) -> Topology {
        let mut topology = Topology::new();
        let (hosts, leaves) = match self {
            FatTree::TwoLevel { leaves, hosts_per_leaf, .. } => (leaves * hosts_per_leaf, leaves),
            FatTree::ThreeLevel { pods, leaves_per_pod, hosts_per_leaf, .. } => {
                (pods * leaves_per_pod * hosts_per_leaf, pods * leaves_per_pod)
            }
        };
        let hosts_per_leaf = hosts / leaves.max(1);
        for host in 0..hosts {
            let mut node = Node::new(HOST_GUID_BASE + (host as u64) * 0x10, NodeKind::Ca, 1, format!("host-{host}"));
            node.ports[1].guid = node.guid + 1;
            topology.add_node(node).expect("unique GUIDs");
        }
        let mut next_switch = 0u64;
        let mut add_switch = |topology: &mut Topology, ports: usize, name: String| {
            next_switch += 1;
            let mut node = Node::new(SWITCH_GUID_BASE + next_switch, NodeKind::Switch, ports as u8, name);
            node.ports[0].guid = node.guid;
            topology.add_node(node).expect("unique GUIDs")
        };
        let connect = |topology: &mut Topology, a: usize, ap: usize, b: usize, bp: usize| {
            topology
                .connect(PortRef { node: a, port: ap as u8 }, PortRef { node: b, port: bp as u8 })
                .expect("generator cables each port once");
        };
        match self {
            FatTree::TwoLevel { leaves, spines, hosts_per_leaf } => {
                let leaf_ids: Vec<usize> = (0..leaves)
                    .map(|l| add_switch(&mut topology, hosts_per_leaf + spines, format!("leaf-{l}")))
                    .collect();
                let spine_ids: Vec<usize> =
                    (0..spines).map(|s| add_switch(&mut topology, leaves, format!("spine-{s}"))).collect();
                for (l, &leaf) in leaf_ids.iter().enumerate() {
                    for h in 0..hosts_per_leaf {
                        connect(&mut topology, leaf, h + 1, l * hosts_per_leaf + h, 1);
                    }
                    for (s, &spine) in spine_ids.iter().enumerate() {
                        connect(&mut topology, leaf, hosts_per_leaf + s + 1, spine, l + 1);
                    }
                }
            }
            FatTree::ThreeLevel { pods, leaves_per_pod, aggs_per_pod, cores_per_group, .. } => {
                let leaf_ids: Vec<usize> = (0..pods * leaves_per_pod)
                    .map(|l| add_switch(&mut topology, hosts_per_leaf + aggs_per_pod, format!("leaf-{l}")))
                    .collect();
                let agg_ids: Vec<usize> = (0..pods * aggs_per_pod)
                    .map(|a| add_switch(&mut topology, leaves_per_pod + cores_per_group, format!("agg-{a}")))
                    .collect();
                let core_ids: Vec<usize> = (0..aggs_per_pod * cores_per_group)
                    .map(|c| add_switch(&mut topology, pods, format!("core-{c}")))
                    .collect();
                for (l, &leaf) in leaf_ids.iter().enumerate() {
                    for h in 0..hosts_per_leaf {
                        connect(&mut topology, leaf, h + 1, l * hosts_per_leaf + h, 1);
                    }
                    let pod = l / leaves_per_pod;
                    for j in 0..aggs_per_pod {
                        connect(
                            &mut topology,
                            leaf,
                            hosts_per_leaf + j + 1,
                            agg_ids[pod * aggs_per_pod + j],
                            l % leaves_per_pod + 1,
                        );
                    }
                }
                for pod in 0..pods {
                    for j in 0..aggs_per_pod {
                        let agg = agg_ids[pod * aggs_per_pod + j];
                        for c in 0..cores_per_group {
                            connect(
                                &mut topology,
                                agg,
                                leaves_per_pod + c + 1,
                                core_ids[j * cores_per_group + c],
                                pod + 1,
                            );
                        }
                    }
                }
            }
        }
        topology
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_have_the_sizes_they_claim() {
        let sizes: Vec<usize> =
            ["650", "1500", "4100"].iter().map(|p| FatTree::preset(p).unwrap().build().nodes.len()).collect();
        assert_eq!(sizes, vec![612 + 36 + 18, 1296 + 72 + 18, 3840 + 192 + 96 + 32]);
        let topology = FatTree::preset("4100").unwrap().build();
        // Every switch port is cabled: a full fat tree.
        for node in &topology.nodes {
            assert!(node.ports[1..].iter().all(|p| p.remote.is_some()), "{} has a free port", node.description);
        }
    }
}
