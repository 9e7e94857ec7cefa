//! The switch graph the engines walk: switches numbered densely, their
//! switch-to-switch links by port, and the destinations (every LID) with
//! the switch and port that reach them.

use crate::topology::{NodeKind, Topology};

/// One destination LID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dest {
    pub lid: u16,
    /// Dense switch id the destination hangs off (or is, for a switch LID).
    pub switch: u32,
    /// The port of that switch that reaches it (0: the switch itself).
    pub port: u8,
    /// Position among CA destinations (ordering and tie-breaking), or
    /// `usize::MAX` for switch LIDs.
    pub order: usize,
}

impl Dest {
    pub fn is_ca(&self) -> bool {
        self.order != usize::MAX
    }
}

pub const UNREACHABLE: u32 = u32::MAX;

pub struct SwitchGraph<'a> {
    pub topology: &'a Topology,
    /// Dense id -> node index.
    pub nodes: Vec<usize>,
    /// Node index -> dense id (`u32::MAX` for CAs).
    pub dense: Vec<u32>,
    /// Switch-to-switch links: (local port, neighbour dense id).
    pub links: Vec<Vec<(u8, u32)>>,
    /// CA ports cabled to each switch.
    pub cas_attached: Vec<u32>,
    /// Every destination, grouped by switch (ascending), then by port.
    pub dests: Vec<Dest>,
    /// `dests[dest_start[s]..dest_start[s + 1]]` hang off switch `s`.
    pub dest_start: Vec<usize>,
    pub max_lid: u16,
    pub lmc: u8,
}

impl<'a> SwitchGraph<'a> {
    pub fn new(topology: &'a Topology, lmc: u8) -> SwitchGraph<'a> {
        let mut dense = vec![u32::MAX; topology.nodes.len()];
        let mut nodes = Vec::new();
        for (index, node) in topology.nodes.iter().enumerate() {
            if node.kind == NodeKind::Switch {
                dense[index] = nodes.len() as u32;
                nodes.push(index);
            }
        }
        let mut links = vec![Vec::new(); nodes.len()];
        let mut cas_attached = vec![0u32; nodes.len()];
        let mut per_switch: Vec<Vec<Dest>> = vec![Vec::new(); nodes.len()];
        let mut max_lid = 0u16;
        for (s, &index) in nodes.iter().enumerate() {
            let node = &topology.nodes[index];
            let lid = node.ports[0].lid;
            if lid != 0 {
                per_switch[s].push(Dest { lid, switch: s as u32, port: 0, order: usize::MAX });
                max_lid = max_lid.max(lid);
            }
            for port in 1..=node.num_ports {
                let Some(remote) = node.ports[usize::from(port)].remote else { continue };
                let far = &topology.nodes[remote.node];
                if far.kind == NodeKind::Switch {
                    links[s].push((port, dense[remote.node]));
                } else {
                    cas_attached[s] += 1;
                    let base = far.ports[usize::from(remote.port)].lid;
                    if base != 0 {
                        for offset in 0..(1u16 << lmc) {
                            per_switch[s].push(Dest { lid: base + offset, switch: s as u32, port, order: 0 });
                            max_lid = max_lid.max(base + offset);
                        }
                    }
                }
            }
        }
        let mut dests = Vec::new();
        let mut dest_start = Vec::with_capacity(nodes.len() + 1);
        let mut order = 0;
        for list in per_switch {
            dest_start.push(dests.len());
            for mut dest in list {
                if dest.port != 0 {
                    dest.order = order;
                    order += 1;
                }
                dests.push(dest);
            }
        }
        dest_start.push(dests.len());
        SwitchGraph { topology, nodes, dense, links, cas_attached, dests, dest_start, max_lid, lmc }
    }

    pub fn switch_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn dests_at(&self, switch: usize) -> &[Dest] {
        &self.dests[self.dest_start[switch]..self.dest_start[switch + 1]]
    }

    pub fn num_ports(&self, switch: usize) -> u8 {
        self.topology.nodes[self.nodes[switch]].num_ports
    }

    pub fn guid(&self, switch: usize) -> u64 {
        self.topology.nodes[self.nodes[switch]].guid
    }

    /// Hop distances from every switch to `target` (breadth first over
    /// switch links; [`UNREACHABLE`] where none).
    pub fn distances_to(&self, target: usize, dist: &mut Vec<u32>, queue: &mut Vec<u32>) {
        dist.clear();
        dist.resize(self.nodes.len(), UNREACHABLE);
        queue.clear();
        dist[target] = 0;
        queue.push(target as u32);
        let mut head = 0;
        while head < queue.len() {
            let s = queue[head] as usize;
            head += 1;
            let next = dist[s] + 1;
            for &(_, n) in &self.links[s] {
                if dist[n as usize] == UNREACHABLE {
                    dist[n as usize] = next;
                    queue.push(n);
                }
            }
        }
    }

    /// Distance of every switch from the nearest switch with a CA (leaf
    /// level 0), [`UNREACHABLE`] where none.
    pub fn levels_from_leaves(&self) -> Vec<u32> {
        let mut level = vec![UNREACHABLE; self.nodes.len()];
        let mut queue: Vec<u32> = Vec::new();
        for s in 0..self.nodes.len() {
            if self.cas_attached[s] > 0 {
                level[s] = 0;
                queue.push(s as u32);
            }
        }
        let mut head = 0;
        while head < queue.len() {
            let s = queue[head] as usize;
            head += 1;
            for &(_, n) in &self.links[s] {
                if level[n as usize] == UNREACHABLE {
                    level[n as usize] = level[s] + 1;
                    queue.push(n);
                }
            }
        }
        level
    }

    /// Empty LFTs sized for this graph's LIDs.
    pub fn empty_lfts(&self) -> super::Lfts {
        super::Lfts::new(self.topology, self.max_lid)
    }
}
