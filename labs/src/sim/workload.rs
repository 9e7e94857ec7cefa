//! Workloads as a graph of messages: a message goes from one host to
//! another over their connection (queue pair) once every message it
//! depends on has been received, after an optional compute delay.
//! Collectives are built from that: a ring all-reduce's step s on host h
//! waits for step s-1 from h-1; a halving-doubling step waits for the
//! previous partner's data; all-to-all, incast and permutation messages
//! wait for nothing.

use std::collections::BTreeMap;

use clap::ValueEnum;

/// One message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    pub connection: u32,
    pub bytes: u64,
    /// Messages still to be received before this one may go.
    pub waiting_for: u32,
    /// The messages that wait for this one: `dependents[first..first+count]`.
    pub first_dependent: u32,
    pub dependent_count: u32,
    /// Released this long after its last dependency (compute), or after
    /// the start for messages with none (start jitter), ns.
    pub delay_ns: u64,
    pub collective: u32,
}

/// The messages, their connections and the collectives they belong to.
#[derive(Debug, Clone, Default)]
pub struct Workload {
    /// (source host, destination host) of each connection.
    pub connections: Vec<(u32, u32)>,
    by_pair: BTreeMap<(u32, u32), u32>,
    pub messages: Vec<Message>,
    pub dependents: Vec<u32>,
    /// Name of each collective.
    pub collectives: Vec<String>,
    /// Dependency edges before [`Workload::finish`] lays them out.
    edges: Vec<(u32, u32)>,
}

/// The workloads `labs sim --workload` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Ring all-reduce of SIZE bytes per host over all hosts.
    Allreduce,
    /// Recursive halving (reduce-scatter) then doubling (all-gather).
    HalvingDoubling,
    /// Every host sends SIZE/N bytes to every other host.
    AllToAll,
    /// Every host but the last sends SIZE bytes to the last.
    Incast,
    /// Each host sends SIZE bytes to one other, a random derangement.
    Permutation,
    /// A compute phase (--compute-us), then a ring all-reduce, ITERATIONS times.
    Training,
}

impl Workload {
    fn connection(&mut self, src: u32, dst: u32) -> u32 {
        let next = self.connections.len() as u32;
        *self.by_pair.entry((src, dst)).or_insert_with(|| {
            self.connections.push((src, dst));
            next
        })
    }

    /// Names a new collective; its id for [`Workload::message`].
    pub fn collective(&mut self, name: String) -> u32 {
        self.collectives.push(name);
        (self.collectives.len() - 1) as u32
    }

    /// Adds a message; its dependencies are added with [`Workload::depends`].
    pub fn message(&mut self, src: u32, dst: u32, bytes: u64, collective: u32, delay_ns: u64) -> u32 {
        let connection = self.connection(src, dst);
        self.messages.push(Message {
            connection,
            bytes,
            waiting_for: 0,
            first_dependent: 0,
            dependent_count: 0,
            delay_ns,
            collective,
        });
        (self.messages.len() - 1) as u32
    }

    /// `later` waits for `earlier` to be received.
    pub fn depends(&mut self, later: u32, earlier: u32) {
        self.messages[later as usize].waiting_for += 1;
        self.edges.push((earlier, later));
    }

    /// Lays out the dependents lists (call once all messages are in).
    pub fn finish(mut self) -> Workload {
        self.edges.sort_unstable();
        self.dependents = self.edges.iter().map(|&(_, later)| later).collect();
        let mut at = 0;
        for (index, message) in self.messages.iter_mut().enumerate() {
            message.first_dependent = at as u32;
            while at < self.edges.len() && self.edges[at].0 == index as u32 {
                at += 1;
            }
            message.dependent_count = at as u32 - message.first_dependent;
        }
        self.edges = Vec::new();
        self
    }

    pub fn dependents_of(&self, message: u32) -> &[u32] {
        let m = &self.messages[message as usize];
        &self.dependents[m.first_dependent as usize..(m.first_dependent + m.dependent_count) as usize]
    }

    /// Ring all-reduce of `bytes` per host over `hosts` (in ring order):
    /// 2(N-1) steps of bytes/N; messages of the first step wait `start[h]`.
    /// Returns the last message of each host (for what follows).
    pub fn ring_allreduce(
        &mut self,
        hosts: &[u32],
        bytes: u64,
        name: &str,
        after: &[Option<u32>],
        delay: &[u64],
    ) -> Vec<u32> {
        let n = hosts.len();
        let collective = self.collective(name.into());
        let chunk = bytes.div_ceil(n as u64).max(1);
        let steps = 2 * (n - 1);
        let mut previous: Vec<u32> = Vec::new();
        for step in 0..steps {
            let mut current = Vec::with_capacity(n);
            for h in 0..n {
                let delay_ns = if step == 0 { delay[h] } else { 0 };
                let id = self.message(hosts[h], hosts[(h + 1) % n], chunk, collective, delay_ns);
                if step == 0 {
                    if let Some(before) = after[h] {
                        self.depends(id, before);
                    }
                } else {
                    // Host h forwards what it received from h-1 in the last step.
                    self.depends(id, previous[(h + n - 1) % n]);
                }
                current.push(id);
            }
            previous = current;
        }
        // The last message each host receives is its predecessor's.
        (0..n).map(|h| previous[(h + n - 1) % n]).collect()
    }

    /// Recursive halving then doubling over a power-of-two number of hosts.
    pub fn halving_doubling(&mut self, hosts: &[u32], bytes: u64, delay: &[u64]) -> Result<(), String> {
        let n = hosts.len();
        if !n.is_power_of_two() || n < 2 {
            return Err(format!("halving-doubling needs a power-of-two number of hosts, not {n}"));
        }
        let collective = self.collective("halving-doubling".into());
        let rounds = n.trailing_zeros() as usize;
        // Reduce-scatter: round r exchanges bytes / 2^(r+1) with h ^ 2^r;
        // all-gather: the same sizes in reverse order.
        let sizes: Vec<u64> = (0..rounds)
            .map(|r| (bytes >> (r + 1)).max(1))
            .chain((0..rounds).rev().map(|r| (bytes >> (r + 1)).max(1)))
            .collect();
        let distance = |step: usize| if step < rounds { 1 << step } else { 1 << (2 * rounds - 1 - step) };
        let mut received: Vec<u32> = Vec::new();
        for (step, &size) in sizes.iter().enumerate() {
            let mut sent = vec![0; n];
            for h in 0..n {
                let partner = h ^ distance(step);
                let id = self.message(hosts[h], hosts[partner], size, collective, if step == 0 { delay[h] } else { 0 });
                if step > 0 {
                    // What h received in the last step, from its last partner.
                    self.depends(id, received[h]);
                }
                sent[h] = id;
            }
            received = (0..n).map(|h| sent[h ^ distance(step)]).collect();
        }
        Ok(())
    }

    /// Every host sends `bytes / N` to every other (staggered so host h starts with h+1).
    pub fn all_to_all(&mut self, hosts: &[u32], bytes: u64, delay: &[u64]) {
        let n = hosts.len();
        let collective = self.collective("all-to-all".into());
        let share = (bytes / n as u64).max(1);
        for offset in 1..n {
            for h in 0..n {
                self.message(hosts[h], hosts[(h + offset) % n], share, collective, delay[h]);
            }
        }
    }

    /// Every host but the last sends `bytes` to the last.
    pub fn incast(&mut self, hosts: &[u32], bytes: u64, delay: &[u64]) {
        let collective = self.collective("incast".into());
        let (&receiver, senders) = hosts.split_last().expect("at least one host");
        for (h, &sender) in senders.iter().enumerate() {
            self.message(sender, receiver, bytes, collective, delay[h]);
        }
    }

    /// Each host sends `bytes` to `target[h]`.
    pub fn permutation(&mut self, hosts: &[u32], bytes: u64, target: &[usize], delay: &[u64]) {
        let collective = self.collective("permutation".into());
        for (h, &t) in target.iter().enumerate() {
            self.message(hosts[h], hosts[t], bytes, collective, delay[h]);
        }
    }
}

/// A small deterministic generator (SplitMix64) for jitter and permutations.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 { 0 } else { self.next_u64() % bound }
    }

    /// A permutation of `0..n` with no fixed point (n >= 2).
    pub fn derangement(&mut self, n: usize) -> Vec<usize> {
        loop {
            let mut p: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                let j = self.below(i as u64 + 1) as usize;
                p.swap(i, j);
            }
            if p.iter().enumerate().all(|(i, &v)| i != v) {
                return p;
            }
        }
    }
}

/// Parameters of a generated workload.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WorkloadSpec {
    pub kind: Kind,
    pub bytes: u64,
    /// Each host's first message starts uniformly within this, ns.
    pub jitter_ns: u64,
    /// Compute phase before each all-reduce of a training step, ns.
    pub compute_ns: u64,
    pub iterations: u32,
}

/// Builds the workload over `hosts` hosts.
pub fn build(spec: &WorkloadSpec, hosts: usize, seed: u64) -> Result<Workload, String> {
    if hosts < 2 {
        return Err("a workload needs at least two hosts".into());
    }
    let mut rng = Rng::new(seed ^ 0x5157_4f52_4b4c_4f41);
    let delay: Vec<u64> = (0..hosts).map(|_| rng.below(spec.jitter_ns)).collect();
    let all: Vec<u32> = (0..hosts as u32).collect();
    let mut workload = Workload::default();
    match spec.kind {
        Kind::Allreduce => {
            workload.ring_allreduce(&all, spec.bytes, "allreduce", &vec![None; hosts], &delay);
        }
        Kind::HalvingDoubling => workload.halving_doubling(&all, spec.bytes, &delay)?,
        Kind::AllToAll => workload.all_to_all(&all, spec.bytes, &delay),
        Kind::Incast => workload.incast(&all, spec.bytes, &delay),
        Kind::Permutation => {
            let target = rng.derangement(hosts);
            workload.permutation(&all, spec.bytes, &target, &delay);
        }
        Kind::Training => {
            let mut after = vec![None; hosts];
            for iteration in 0..spec.iterations.max(1) {
                let compute: Vec<u64> = delay.iter().map(|d| d + spec.compute_ns).collect();
                let last =
                    workload.ring_allreduce(&all, spec.bytes, &format!("step{}", iteration + 1), &after, &compute);
                after = last.into_iter().map(Some).collect();
            }
        }
    }
    Ok(workload.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_allreduce_chains_each_step_to_the_predecessors_last() {
        let spec = WorkloadSpec { kind: Kind::Allreduce, bytes: 4000, jitter_ns: 0, compute_ns: 0, iterations: 1 };
        let w = build(&spec, 4, 1).unwrap();
        // 2(N-1) = 6 steps of 4 messages of 1000 bytes, over 4 connections.
        assert_eq!(w.messages.len(), 24);
        assert_eq!(w.connections, vec![(0, 1), (1, 2), (2, 3), (3, 0)]);
        assert!(w.messages.iter().all(|m| m.bytes == 1000));
        assert_eq!(w.messages.iter().filter(|m| m.waiting_for == 0).count(), 4);
        // Step 1 of host 1 (message 5) waits for step 0 of host 0 (message 0).
        assert_eq!(w.dependents_of(0), &[5]);
        assert_eq!(w.messages[5].waiting_for, 1);
    }

    #[test]
    fn halving_doubling_pairs_partners_at_growing_then_shrinking_distance() {
        let spec =
            WorkloadSpec { kind: Kind::HalvingDoubling, bytes: 8000, jitter_ns: 0, compute_ns: 0, iterations: 1 };
        let w = build(&spec, 4, 1).unwrap();
        let sizes: Vec<u64> = w.messages.iter().step_by(4).map(|m| m.bytes).collect();
        assert_eq!(sizes, vec![4000, 2000, 2000, 4000]);
        assert!(build(&spec, 6, 1).is_err());
    }
}
