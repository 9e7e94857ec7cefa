//! Balanced shortest paths (OpenSM's SSSP, after Domke, Hoefler and
//! Nagel, "Deadlock-Free Oblivious Routing for Arbitrary Topologies", IPDPS
//! 2011): each destination's routing tree is a shortest-path tree by
//! Dijkstra over channel weights; after each destination, every channel's
//! weight grows by the number of CA sources whose route to it crosses the
//! channel, so later destinations avoid busy channels among the paths of
//! fewest hops.
//! [`dfsssp`](super::dfsssp) then places destinations on virtual lanes.
//!
//! The Dijkstras (one per destination LID) are most of the time: their
//! buffers are made once, the heap holds each switch once (decrease-key
//! rather than stale entries), and the weights are laid out in the order
//! the relaxation reads them.

use super::Lfts;
use super::graph::{SwitchGraph, UNREACHABLE};

/// The next hop of a switch on the current destination's tree.
#[derive(Clone, Copy)]
struct Hop {
    port: u8,
    neighbour: u32,
    /// The channel's place in [`Inbound::ports`] and the weights.
    slot: u32,
}

const NO_HOP: Hop = Hop { port: 0, neighbour: UNREACHABLE, slot: 0 };

/// Routes every destination. Channel weights start at P^2 for P CA ports,
/// as OpenSM's do: more than all the routes any channel can carry, so the
/// load only chooses among the shortest paths and never makes one longer
/// (longer paths would load more channels and make dependency cycles).
pub fn route(graph: &SwitchGraph<'_>) -> Lfts {
    let switches = graph.switch_count();
    let inbound = Inbound::new(graph);
    let cas: u64 = graph.cas_attached.iter().map(|&c| u64::from(c)).sum();
    let mut weight = vec![(cas * cas).max(1); inbound.ports.len()];
    let mut lfts = graph.empty_lfts();
    let mut dist = vec![u64::MAX; switches];
    let mut next = vec![NO_HOP; switches];
    let mut order: Vec<u32> = Vec::with_capacity(switches);
    let mut flow = vec![0u64; switches];
    let mut heap = SwitchHeap::new(switches);
    for dest in &graph.dests {
        let target = dest.switch as usize;
        dist.fill(u64::MAX);
        next.fill(NO_HOP);
        order.clear();
        dist[target] = 0;
        heap.push_or_decrease(target as u32, &dist);
        // Dijkstra towards the target: relax y <- x over y's channels to x.
        while let Some(x) = heap.pop(&dist) {
            order.push(x);
            let x = x as usize;
            let d = dist[x];
            for &(y, start, end) in inbound.from(x) {
                // Of parallel channels y -> x, the first with the lowest weight.
                let (start, end) = (start as usize, end as usize);
                if start == end {
                    continue; // a cable recorded on one side only
                }
                let mut best = start;
                for slot in start + 1..end {
                    if weight[slot] < weight[best] {
                        best = slot;
                    }
                }
                let candidate = d + weight[best];
                if candidate < dist[y as usize] {
                    dist[y as usize] = candidate;
                    next[y as usize] = Hop { port: inbound.ports[best], neighbour: x as u32, slot: best as u32 };
                    heap.push_or_decrease(y, &dist);
                }
            }
        }
        for s in 0..switches {
            let port = if s == target {
                dest.port
            } else if next[s].neighbour != UNREACHABLE {
                next[s].port
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
                let hop = next[x];
                if hop.neighbour != UNREACHABLE {
                    weight[hop.slot as usize] += flow[x];
                    flow[hop.neighbour as usize] += flow[x];
                }
            }
            for &x in &order {
                flow[x as usize] = 0;
            }
        }
    }
    lfts
}

/// A 4-ary min-heap of switches keyed by (distance, switch id), each switch
/// in it at most once; the order is that of a heap of (distance, switch)
/// pairs, so the trees (and ties) are the same.
struct SwitchHeap {
    heap: Vec<u32>,
    /// Where each switch sits in `heap`, [`UNREACHABLE`] when not in it.
    position: Vec<u32>,
}

impl SwitchHeap {
    const ARITY: usize = 4;

    fn new(switches: usize) -> SwitchHeap {
        SwitchHeap { heap: Vec::with_capacity(switches), position: vec![UNREACHABLE; switches] }
    }

    #[inline]
    fn less(a: u32, b: u32, dist: &[u64]) -> bool {
        (dist[a as usize], a) < (dist[b as usize], b)
    }

    fn push_or_decrease(&mut self, switch: u32, dist: &[u64]) {
        let at = match self.position[switch as usize] {
            UNREACHABLE => {
                self.heap.push(switch);
                self.heap.len() - 1
            }
            at => at as usize,
        };
        self.sift_up(at, dist);
    }

    fn pop(&mut self, dist: &[u64]) -> Option<u32> {
        let top = *self.heap.first()?;
        let last = self.heap.pop().expect("not empty");
        self.position[top as usize] = UNREACHABLE;
        if !self.heap.is_empty() {
            self.heap[0] = last;
            self.sift_down(0, dist);
        }
        Some(top)
    }

    fn sift_up(&mut self, mut at: usize, dist: &[u64]) {
        let item = self.heap[at];
        while at > 0 {
            let parent = (at - 1) / Self::ARITY;
            if !Self::less(item, self.heap[parent], dist) {
                break;
            }
            self.heap[at] = self.heap[parent];
            self.position[self.heap[at] as usize] = at as u32;
            at = parent;
        }
        self.heap[at] = item;
        self.position[item as usize] = at as u32;
    }

    fn sift_down(&mut self, mut at: usize, dist: &[u64]) {
        let item = self.heap[at];
        let len = self.heap.len();
        loop {
            let first = at * Self::ARITY + 1;
            if first >= len {
                break;
            }
            let mut child = first;
            for c in first + 1..(first + Self::ARITY).min(len) {
                if Self::less(self.heap[c], self.heap[child], dist) {
                    child = c;
                }
            }
            if !Self::less(self.heap[child], item, dist) {
                break;
            }
            self.heap[at] = self.heap[child];
            self.position[self.heap[at] as usize] = at as u32;
            at = child;
        }
        self.heap[at] = item;
        self.position[item as usize] = at as u32;
    }
}

/// The channels into each switch, grouped by the neighbour they leave,
/// found once rather than by scanning the neighbour's ports on every
/// relaxation (the per-destination Dijkstra's inner loop).
struct Inbound {
    /// `neighbours[start[x]..start[x + 1]]`: (neighbour y, its channels to
    /// x as `ports[from..to]`), in the order of x's links.
    start: Vec<usize>,
    neighbours: Vec<(u32, u32, u32)>,
    /// y's port of each channel, in y's link order (a channel's place
    /// here is its slot in the weights).
    ports: Vec<u8>,
}

impl Inbound {
    fn new(graph: &SwitchGraph<'_>) -> Inbound {
        let switches = graph.switch_count();
        let mut start = Vec::with_capacity(switches + 1);
        let mut neighbours = Vec::new();
        let mut ports = Vec::new();
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
                let from = ports.len() as u32;
                ports.extend(graph.links[y].iter().filter(|&&(_, n)| n as usize == x).map(|&(port, _)| port));
                neighbours.push((y as u32, from, ports.len() as u32));
            }
        }
        start.push(neighbours.len());
        Inbound { start, neighbours, ports }
    }

    fn from(&self, x: usize) -> &[(u32, u32, u32)] {
        &self.neighbours[self.start[x]..self.start[x + 1]]
    }
}
