//! Channel dependency graphs (Dally and Seitz): a vertex per channel
//! between two switches, an edge from the channel a packet arrives on to
//! the channel the switch forwards it on. Routes sharing a VL cannot
//! deadlock when their graph is acyclic.
//!
//! The graph is kept as a count per turn (switch, in-port, out-port): how
//! many destination LIDs the switch forwards from that in-port to that
//! out-port. Its size is bounded by the switches' port counts, not by the
//! number of LIDs, and destinations can be added and taken out again
//! (dfsssp moves them between VL layers).

use super::graph::{SwitchGraph, UNREACHABLE};
use super::{Lfts, NO_ROUTE};

/// Which switch port faces which: per (switch, port), the switch and port
/// at the far end of the cable, if that is a switch.
pub struct Wiring {
    /// `far[offset[s] + port]`.
    offset: Vec<usize>,
    far: Vec<(u32, u8)>,
}

impl Wiring {
    pub fn new(graph: &SwitchGraph<'_>) -> Wiring {
        let switches = graph.switch_count();
        let mut offset = Vec::with_capacity(switches + 1);
        let mut far = Vec::new();
        for s in 0..switches {
            offset.push(far.len());
            let node = &graph.topology.nodes[graph.nodes[s]];
            far.extend(node.ports.iter().take(usize::from(node.num_ports) + 1).map(|port| {
                port.remote
                    .map(|remote| (graph.dense[remote.node], remote.port))
                    .filter(|&(n, _)| n != UNREACHABLE)
                    .unwrap_or((UNREACHABLE, 0))
            }));
        }
        offset.push(far.len());
        Wiring { offset, far }
    }

    /// The switch and its port at the far end of `switch`'s `port`.
    #[inline]
    pub fn far(&self, switch: usize, port: u8) -> Option<(usize, u8)> {
        let end = self.offset[switch + 1];
        let index = self.offset[switch] + usize::from(port);
        (index < end).then(|| self.far[index]).filter(|&(n, _)| n != UNREACHABLE).map(|(n, p)| (n as usize, p))
    }

    fn ports(&self, switch: usize) -> usize {
        self.offset[switch + 1] - self.offset[switch]
    }
}

/// A turn: `switch` forwards what arrives on `from` out of `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    pub switch: u32,
    pub from: u8,
    pub to: u8,
}

/// One VL's channel dependency graph.
pub struct DependencyGraph<'a> {
    graph: &'a SwitchGraph<'a>,
    wiring: &'a Wiring,
    /// Destinations per turn: `turns[turn_offset[s] + from * ports(s) + to]`.
    turn_offset: Vec<usize>,
    turns: Vec<u32>,
}

impl<'a> DependencyGraph<'a> {
    pub fn new(graph: &'a SwitchGraph<'a>, wiring: &'a Wiring) -> DependencyGraph<'a> {
        let mut turn_offset = Vec::with_capacity(graph.switch_count() + 1);
        let mut total = 0;
        for s in 0..graph.switch_count() {
            turn_offset.push(total);
            total += wiring.ports(s) * wiring.ports(s);
        }
        turn_offset.push(total);
        DependencyGraph { graph, wiring, turn_offset, turns: vec![0; total] }
    }

    #[inline]
    fn turn_index(&self, switch: usize, from: u8, to: u8) -> usize {
        self.turn_offset[switch] + usize::from(from) * self.wiring.ports(switch) + usize::from(to)
    }

    pub fn count(&self, turn: Turn) -> u32 {
        self.turns[self.turn_index(turn.switch as usize, turn.from, turn.to)]
    }

    /// Empties the graph.
    pub fn clear(&mut self) {
        self.turns.fill(0);
    }

    /// Adds the dependencies of the routes to `lids`, switch by switch (each
    /// switch's LFT and its neighbours' read in LID order).
    pub fn add(&mut self, lfts: &Lfts, lids: &[u16]) {
        let tables = self.tables(lfts);
        for s in 0..self.graph.switch_count() {
            let Some(table) = tables[s] else { continue };
            for &lid in lids {
                if let Some(turn) = self.turn_after(&tables, s, table, lid) {
                    let index = self.turn_index(turn.switch as usize, turn.from, turn.to);
                    self.turns[index] += 1;
                }
            }
        }
    }

    /// Takes the dependencies of the routes to `lid` out.
    pub fn remove(&mut self, lfts: &Lfts, lid: u16) {
        let tables = self.tables(lfts);
        for s in 0..self.graph.switch_count() {
            let Some(table) = tables[s] else { continue };
            if let Some(turn) = self.turn_after(&tables, s, table, lid) {
                let index = self.turn_index(turn.switch as usize, turn.from, turn.to);
                self.turns[index] = self.turns[index].saturating_sub(1);
            }
        }
    }

    /// Of `lids`, those whose routes take `turn`.
    pub fn users(&self, lfts: &Lfts, turn: Turn, lids: impl Iterator<Item = u16>) -> Vec<u16> {
        let n = turn.switch as usize;
        let Some((s, port)) = self.wiring.far(n, turn.from) else { return Vec::new() };
        let (Some(before), Some(at)) = (lfts.table(self.graph.nodes[s]), lfts.table(self.graph.nodes[n])) else {
            return Vec::new();
        };
        lids.filter(|&lid| before[usize::from(lid)] == port && at[usize::from(lid)] == turn.to).collect()
    }

    fn tables<'l>(&self, lfts: &'l Lfts) -> Vec<Option<&'l [u8]>> {
        self.graph.nodes.iter().map(|&node| lfts.table(node)).collect()
    }

    /// The turn that a packet to `lid` leaving switch `s` takes at the next
    /// switch, if both hops are between switches (a channel from or to a
    /// CA is a source or a sink, never part of a cycle).
    #[inline]
    fn turn_after(&self, tables: &[Option<&[u8]>], s: usize, table: &[u8], lid: u16) -> Option<Turn> {
        let port = table.get(usize::from(lid)).copied().filter(|&p| p != NO_ROUTE)?;
        let (n, from) = self.wiring.far(s, port)?;
        let to = tables[n]?.get(usize::from(lid)).copied().filter(|&p| p != NO_ROUTE)?;
        self.wiring.far(n, to)?;
        Some(Turn { switch: n as u32, from, to })
    }

    pub fn is_acyclic(&self) -> bool {
        self.find_cycle(&mut CycleSearch::default()).is_none()
    }

    /// A cycle, as its turns, or none. Iterative depth-first search over
    /// the channels (a channel is named by the switch it enters and the
    /// port it enters by). `search` keeps what is done between calls:
    /// channels fully explored stay so, since taking edges out (breaking a
    /// cycle) cannot make a new one.
    pub fn find_cycle(&self, search: &mut CycleSearch) -> Option<Vec<Turn>> {
        let channels = *self.wiring.offset.last().unwrap_or(&0);
        if search.color.len() != channels {
            search.color = vec![Color::White; channels];
            search.owner = (0..self.graph.switch_count())
                .flat_map(|s| std::iter::repeat_n(s as u32, self.wiring.ports(s)))
                .collect();
            search.root = 0;
        }
        while search.root < channels {
            let root = search.root;
            let (s, port) = self.channel(search, root);
            if search.color[root] != Color::White || self.wiring.far(s, port).is_none() {
                search.root += 1;
                continue;
            }
            search.color[root] = Color::Grey;
            search.stack.push((root as u32, 0));
            while let Some(&(channel, next)) = search.stack.last() {
                let (n, from) = self.channel(search, channel as usize);
                let ports = self.wiring.ports(n);
                let base = self.turn_index(n, from, 0);
                let mut to = usize::from(next);
                let mut descend = None;
                while to < ports {
                    if self.turns[base + to] > 0
                        && let Some((m, into)) = self.wiring.far(n, to as u8)
                    {
                        let target = self.wiring.offset[m] + usize::from(into);
                        match search.color[target] {
                            Color::White => {
                                descend = Some(target);
                                break;
                            }
                            Color::Grey => {
                                search.stack.last_mut().expect("top").1 = to as u16 + 1;
                                return Some(self.take_cycle(search, target));
                            }
                            Color::Black => {}
                        }
                    }
                    to += 1;
                }
                match descend {
                    Some(target) => {
                        search.stack.last_mut().expect("top").1 = to as u16 + 1;
                        search.color[target] = Color::Grey;
                        search.stack.push((target as u32, 0));
                    }
                    None => {
                        search.color[channel as usize] = Color::Black;
                        search.stack.pop();
                    }
                }
            }
            search.root += 1;
        }
        None
    }

    /// The switch a channel enters and the port it enters by.
    #[inline]
    fn channel(&self, search: &CycleSearch, channel: usize) -> (usize, u8) {
        let s = search.owner[channel] as usize;
        (s, (channel - self.wiring.offset[s]) as u8)
    }

    /// The turns from the grey channel `start` round the search stack back
    /// to it; the stack's channels go back to unexplored.
    fn take_cycle(&self, search: &mut CycleSearch, start: usize) -> Vec<Turn> {
        let first = search.stack.iter().position(|&(c, _)| c as usize == start).expect("grey is on the stack");
        let cycle = search.stack[first..]
            .iter()
            .map(|&(channel, next)| {
                let (s, from) = self.channel(search, channel as usize);
                Turn { switch: s as u32, from, to: (next - 1) as u8 }
            })
            .collect();
        for &(channel, _) in &search.stack {
            search.color[channel as usize] = Color::White;
        }
        search.stack.clear();
        cycle
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Color {
    White,
    Grey,
    Black,
}

/// A depth-first search's state, kept between [`DependencyGraph::find_cycle`]
/// calls on one graph.
#[derive(Default)]
pub struct CycleSearch {
    color: Vec<Color>,
    /// The switch each channel enters.
    owner: Vec<u32>,
    /// (channel, the next out-port to try).
    stack: Vec<(u32, u16)>,
    root: usize,
}
