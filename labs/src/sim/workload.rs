//! Workloads as a graph of messages: a message goes from one host to
//! another over their connection (queue pair) once every message it
//! depends on has been received, after an optional compute delay.
//! Collectives are built from that: a ring all-reduce's step s on host h
//! waits for step s-1 from h-1; a halving-doubling step waits for the
//! previous partner's data; all-to-all, incast and permutation messages
//! wait for nothing. Background traffic ([`BackgroundSpec`]) is messages
//! of its own connections arriving at a seeded Poisson rate beside them;
//! a run ends when the collectives are done, whatever background is left.

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
    by_pair: BTreeMap<(u32, u32, bool), u32>,
    pub messages: Vec<Message>,
    pub dependents: Vec<u32>,
    /// Name of each collective.
    pub collectives: Vec<String>,
    /// Per connection: whether it carries background traffic (its own
    /// queue pairs, on the background's class).
    pub background: Vec<bool>,
    /// The collective the background's messages belong to, if any.
    pub background_collective: Option<u32>,
    /// Messages not of the background: the run ends when these are received.
    pub foreground_messages: usize,
    /// Background messages arrive until then, ns; what they are.
    pub background_until_ns: Option<u64>,
    pub background_spec: Option<BackgroundSpec>,
    /// Dependency edges before [`Workload::finish`] lays them out.
    edges: Vec<(u32, u32)>,
}

/// The workloads `labs sim --workload` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Ring all-reduce of SIZE bytes per host over all hosts.
    #[default]
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

/// The most background messages a run plans.
pub const MAX_BACKGROUND_MESSAGES: u64 = 10_000_000;

/// The order of the hosts around a ring (and of halving-doubling's partners).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RingOrder {
    /// The fabric's host order: ring neighbours mostly share an edge switch.
    #[default]
    Host,
    /// A seeded shuffle: most ring steps cross the spine layer.
    Random,
    /// Rail by rail (NIC N of every server, `server:ethN`, then N+1), as
    /// rail-aligned rings run; on fabrics of one NIC per server, host order.
    Rail,
}

/// The background's pattern of sources and destinations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackgroundPattern {
    /// Each host to one other, a seeded derangement.
    Permutation,
    /// Each message from each host to another drawn at random.
    AllToAll,
    /// SENDERS hosts drawn at random (default all others) to one host drawn at random.
    Incast { senders: Option<usize> },
}

impl std::str::FromStr for BackgroundPattern {
    type Err = String;

    /// `permutation`, `all-to-all`, `incast` or `incast:N`.
    fn from_str(text: &str) -> Result<Self, String> {
        match text.split_once(':') {
            None if text == "permutation" => Ok(BackgroundPattern::Permutation),
            None if text == "all-to-all" => Ok(BackgroundPattern::AllToAll),
            None if text == "incast" => Ok(BackgroundPattern::Incast { senders: None }),
            Some(("incast", n)) => match n.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(BackgroundPattern::Incast { senders: Some(n) }),
                _ => Err(format!("{text:?}: incast:N with N senders, at least 1")),
            },
            _ => Err(format!("{text:?}: permutation, all-to-all, incast or incast:N")),
        }
    }
}

/// Background traffic beside the collectives: messages of `bytes` from
/// each sender at a seeded Poisson rate, so that a sender offers `load` of
/// `line_bps` in payload, over `[0, until_ns)`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BackgroundSpec {
    pub pattern: BackgroundPattern,
    pub bytes: u64,
    /// Offered payload per sender, a fraction of its line (0 < load <= 1).
    pub load: f64,
    /// The line the load is a fraction of, bits per second.
    pub line_bps: u64,
    /// Messages arrive until then, ns (`None`: four times the collectives'
    /// busiest host's bytes at line rate, plus jitter and compute).
    pub until_ns: Option<u64>,
}

impl BackgroundSpec {
    /// Refuses what cannot run, naming the flag.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.load > 0.0 && self.load <= 1.0) {
            return Err(format!("--background-load {}: a fraction of the line, above 0 and at most 1", self.load));
        }
        if self.bytes == 0 {
            return Err("--background-size: at least one byte".into());
        }
        if self.line_bps == 0 {
            return Err("background: the line rate is zero".into());
        }
        if self.until_ns == Some(0) {
            return Err("--background-us: above 0".into());
        }
        Ok(())
    }
}

impl Workload {
    fn connection(&mut self, src: u32, dst: u32) -> u32 {
        self.connection_of(src, dst, false)
    }

    /// The connection from `src` to `dst`; background traffic has its own.
    fn connection_of(&mut self, src: u32, dst: u32, background: bool) -> u32 {
        let next = self.connections.len() as u32;
        *self.by_pair.entry((src, dst, background)).or_insert_with(|| {
            self.connections.push((src, dst));
            self.background.push(background);
            next
        })
    }

    /// Whether message `id` is background traffic.
    #[inline]
    /// The collectives' payload bytes (each message at least one).
    pub fn foreground_bytes(&self) -> u64 {
        (0..self.messages.len() as u32)
            .filter(|&m| !self.is_background(m))
            .map(|m| self.messages[m as usize].bytes.max(1))
            .sum()
    }

    pub fn is_background(&self, id: u32) -> bool {
        self.background_collective.is_some_and(|c| self.messages[id as usize].collective == c)
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
        self.foreground_messages = (0..self.messages.len() as u32).filter(|&m| !self.is_background(m)).count();
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

impl Workload {
    /// Background messages over `hosts` hosts until `until_ns`: each
    /// sender's arrivals a Poisson process of rate `load * line / bytes`
    /// (exponential gaps from `rng`), on connections of their own.
    pub fn background(
        &mut self,
        spec: &BackgroundSpec,
        hosts: usize,
        until_ns: u64,
        rng: &mut Rng,
    ) -> Result<(), String> {
        spec.validate()?;
        let n = hosts as u64;
        let mean_gap_ns = spec.bytes as f64 * 8.0 / (spec.load * spec.line_bps as f64) * 1e9;
        // (sender, fixed destination or None for a random one each time).
        let senders: Vec<(u32, Option<u32>)> = match spec.pattern {
            BackgroundPattern::Permutation => {
                rng.derangement(hosts).into_iter().enumerate().map(|(h, t)| (h as u32, Some(t as u32))).collect()
            }
            BackgroundPattern::AllToAll => (0..hosts as u32).map(|h| (h, None)).collect(),
            BackgroundPattern::Incast { senders } => {
                let count = senders.unwrap_or(hosts - 1);
                if count > hosts - 1 {
                    return Err(format!("--background incast:{count}: at most {} senders on {hosts} hosts", hosts - 1));
                }
                let receiver = rng.below(n) as u32;
                let mut others: Vec<u32> = (0..hosts as u32).filter(|&h| h != receiver).collect();
                for i in (1..others.len()).rev() {
                    let j = rng.below(i as u64 + 1) as usize;
                    others.swap(i, j);
                }
                let mut chosen: Vec<u32> = others[..count].to_vec();
                chosen.sort_unstable();
                chosen.into_iter().map(|h| (h, Some(receiver))).collect()
            }
        };
        // What a simulator holds in memory: refuse a plan of tens of millions.
        let expected = senders.len() as f64 * until_ns as f64 / mean_gap_ns;
        if expected > MAX_BACKGROUND_MESSAGES as f64 {
            return Err(format!(
                "background: about {expected:.0} messages over {:.3} ms (at most {MAX_BACKGROUND_MESSAGES}): \
                 raise --background-size or lower --background-load or --background-us",
                until_ns as f64 / 1e6
            ));
        }
        let collective = self.collective("background".into());
        self.background_collective = Some(collective);
        for (src, fixed) in senders {
            let mut at = rng.exponential(mean_gap_ns);
            while at < until_ns as f64 {
                let dst = fixed.unwrap_or_else(|| {
                    let d = rng.below(n - 1) as u32;
                    if d >= src { d + 1 } else { d }
                });
                let connection = self.connection_of(src, dst, true);
                self.messages.push(Message {
                    connection,
                    bytes: spec.bytes,
                    waiting_for: 0,
                    first_dependent: 0,
                    dependent_count: 0,
                    delay_ns: at as u64,
                    collective,
                });
                at += rng.exponential(mean_gap_ns);
            }
        }
        Ok(())
    }

    /// A lower bound of the collectives' time: the busiest host's bytes (sent
    /// or received) at `line_bps`, plus the longest start delay and the
    /// compute phases, ns.
    pub fn estimate_ns(&self, hosts: usize, line_bps: u64, compute_ns: u64) -> u64 {
        let (mut sent, mut received) = (vec![0u64; hosts], vec![0u64; hosts]);
        for m in &self.messages {
            let (src, dst) = self.connections[m.connection as usize];
            sent[src as usize] += m.bytes;
            received[dst as usize] += m.bytes;
        }
        let busiest = sent.iter().chain(&received).copied().max().unwrap_or(0);
        let first_delay = self.messages.iter().filter(|m| m.waiting_for == 0).map(|m| m.delay_ns).max().unwrap_or(0);
        let phases = self.collectives.len() as u64 * compute_ns;
        (busiest as f64 * 8.0 / line_bps.max(1) as f64 * 1e9) as u64 + first_delay + phases
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

    /// Exponentially distributed with this mean (a Poisson process's gaps).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        // Uniform in (0, 1): 53 random bits, half a step off zero.
        let u = ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        -u.ln() * mean
    }

    /// A seeded shuffle of `0..n`.
    pub fn shuffled(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.below(i as u64 + 1) as usize;
            p.swap(i, j);
        }
        p
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
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct WorkloadSpec {
    pub kind: Kind,
    pub bytes: u64,
    /// Each host's first message starts uniformly within this, ns.
    pub jitter_ns: u64,
    /// Compute phase before each all-reduce of a training step, ns.
    pub compute_ns: u64,
    pub iterations: u32,
    /// The hosts' order around the ring (all-reduce, training) and in
    /// halving-doubling's pairs.
    pub ring_order: RingOrder,
    /// Background traffic beside the collectives.
    pub background: Option<BackgroundSpec>,
}

/// Builds the workload over `hosts` hosts (named `h0`, `h1`, ...: the rail
/// order is the host order).
pub fn build(spec: &WorkloadSpec, hosts: usize, seed: u64) -> Result<Workload, String> {
    let names: Vec<String> = (0..hosts).map(|h| format!("h{h}")).collect();
    build_named(spec, &names, seed)
}

/// The rail of a host named `server:ethN` (N), else 0.
fn rail_of(name: &str) -> u32 {
    name.rsplit_once(":eth").and_then(|(_, n)| n.parse().ok()).unwrap_or(0)
}

/// The hosts in ring order.
pub fn ring_order(order: RingOrder, names: &[String], seed: u64) -> Vec<u32> {
    let mut hosts: Vec<u32> = (0..names.len() as u32).collect();
    match order {
        RingOrder::Host => {}
        RingOrder::Random => {
            let mut rng = Rng::new(seed ^ 0x5249_4e47_4f52_4445);
            hosts = rng.shuffled(names.len()).into_iter().map(|h| h as u32).collect();
        }
        RingOrder::Rail => hosts.sort_by_key(|&h| (rail_of(&names[h as usize]), h)),
    }
    hosts
}

/// Builds the workload over the hosts named `names` (the fabric's order).
pub fn build_named(spec: &WorkloadSpec, names: &[String], seed: u64) -> Result<Workload, String> {
    let hosts = names.len();
    if hosts < 2 {
        return Err("a workload needs at least two hosts".into());
    }
    let mut rng = Rng::new(seed ^ 0x5157_4f52_4b4c_4f41);
    let delay: Vec<u64> = (0..hosts).map(|_| rng.below(spec.jitter_ns)).collect();
    let all: Vec<u32> = (0..hosts as u32).collect();
    let ring = ring_order(spec.ring_order, names, seed);
    let mut workload = Workload::default();
    match spec.kind {
        Kind::Allreduce => {
            workload.ring_allreduce(&ring, spec.bytes, "allreduce", &vec![None; hosts], &delay);
        }
        Kind::HalvingDoubling => workload.halving_doubling(&ring, spec.bytes, &delay)?,
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
                    workload.ring_allreduce(&ring, spec.bytes, &format!("step{}", iteration + 1), &after, &compute);
                after = last.into_iter().map(Some).collect();
            }
        }
    }
    if let Some(background) = &spec.background {
        let until_ns = match background.until_ns {
            Some(ns) => ns,
            None => {
                let compute_ns = if spec.kind == Kind::Training { spec.compute_ns } else { 0 };
                4 * workload.estimate_ns(hosts, background.line_bps, compute_ns).max(1)
            }
        };
        let mut rng = Rng::new(seed ^ 0x4241_434b_4752_4f55);
        workload.background(background, hosts, until_ns, &mut rng)?;
        workload.background_until_ns = Some(until_ns);
        workload.background_spec = Some(background.clone());
    }
    Ok(workload.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_allreduce_chains_each_step_to_the_predecessors_last() {
        let spec = WorkloadSpec {
            kind: Kind::Allreduce,
            bytes: 4000,
            jitter_ns: 0,
            compute_ns: 0,
            iterations: 1,
            ..Default::default()
        };
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
        let spec = WorkloadSpec {
            kind: Kind::HalvingDoubling,
            bytes: 8000,
            jitter_ns: 0,
            compute_ns: 0,
            iterations: 1,
            ..Default::default()
        };
        let w = build(&spec, 4, 1).unwrap();
        let sizes: Vec<u64> = w.messages.iter().step_by(4).map(|m| m.bytes).collect();
        assert_eq!(sizes, vec![4000, 2000, 2000, 4000]);
        assert!(build(&spec, 6, 1).is_err());
    }

    fn names(hosts: &[&str]) -> Vec<String> {
        hosts.iter().map(|h| h.to_string()).collect()
    }

    #[test]
    fn ring_orders_host_random_and_rail() {
        let servers = names(&["s1:eth1", "s1:eth2", "s2:eth1", "s2:eth2", "s3:eth1", "s3:eth2"]);
        assert_eq!(ring_order(RingOrder::Host, &servers, 1), [0, 1, 2, 3, 4, 5]);
        // Rail by rail: NIC 1 of every server, then NIC 2.
        assert_eq!(ring_order(RingOrder::Rail, &servers, 1), [0, 2, 4, 1, 3, 5]);
        let random = ring_order(RingOrder::Random, &servers, 1);
        let mut sorted = random.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2, 3, 4, 5], "a permutation");
        assert_ne!(random, [0, 1, 2, 3, 4, 5]);
        assert_eq!(random, ring_order(RingOrder::Random, &servers, 1), "seeded");
        assert_ne!(random, ring_order(RingOrder::Random, &servers, 2));
        // The ring follows it: host 0's first step goes to its successor.
        let spec = WorkloadSpec { bytes: 6000, ring_order: RingOrder::Rail, ..Default::default() };
        let w = build_named(&spec, &servers, 1).unwrap();
        assert_eq!(w.connections[..3], [(0, 2), (2, 4), (4, 1)]);
    }

    fn background(pattern: BackgroundPattern, load: f64) -> WorkloadSpec {
        WorkloadSpec {
            kind: Kind::Incast,
            bytes: 1000,
            background: Some(BackgroundSpec {
                pattern,
                bytes: 64 << 10,
                load,
                line_bps: 100_000_000_000,
                until_ns: Some(100_000_000),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn background_offers_its_load_at_a_poisson_rate_on_its_own_connections() {
        for (pattern, load) in [
            (BackgroundPattern::Permutation, 0.3),
            (BackgroundPattern::AllToAll, 0.7),
            (BackgroundPattern::Incast { senders: Some(5) }, 0.1),
        ] {
            let w = build(&background(pattern, load), 16, 7).unwrap();
            let collective = w.background_collective.unwrap();
            assert_eq!(w.collectives[collective as usize], "background");
            assert_eq!(w.foreground_messages, 15, "the incast's");
            let mut per_sender = BTreeMap::new();
            for (id, m) in w.messages.iter().enumerate().filter(|&(id, _)| w.is_background(id as u32)) {
                let (src, dst) = w.connections[m.connection as usize];
                assert!(w.background[m.connection as usize] && src != dst);
                assert!(m.delay_ns < 100_000_000 && m.waiting_for == 0, "message {id}");
                *per_sender.entry(src).or_insert(0u64) += m.bytes;
            }
            let senders = match pattern {
                BackgroundPattern::Incast { senders } => senders.unwrap(),
                _ => 16,
            };
            assert_eq!(per_sender.len(), senders, "{pattern:?}");
            // Offered: bytes over senders x line x horizon, within 2%
            // (thousands of messages at these loads).
            let offered = per_sender.values().sum::<u64>() as f64 * 8.0 / (senders as f64 * 100e9 * 0.1);
            assert!((offered - load).abs() / load < 0.02, "{pattern:?}: offered {offered}, load {load}");
            // Its connections are not the collective's, even between the same hosts.
            assert!(w.connections.iter().zip(&w.background).filter(|&(_, &b)| !b).all(|(&(_, d), _)| d == 15));
            if let BackgroundPattern::Incast { .. } = pattern {
                let receivers: std::collections::BTreeSet<u32> =
                    w.connections.iter().zip(&w.background).filter(|&(_, &b)| b).map(|(&(_, d), _)| d).collect();
                assert_eq!(receivers.len(), 1);
            }
        }
        // Seeded: the same messages again, others with another seed.
        let spec = background(BackgroundPattern::AllToAll, 0.5);
        let delays = |seed| build(&spec, 8, seed).unwrap().messages.iter().map(|m| m.delay_ns).collect::<Vec<_>>();
        assert_eq!(delays(3), delays(3));
        assert_ne!(delays(3), delays(4));
    }

    #[test]
    fn background_flags_are_parsed_and_bad_ones_refused() {
        assert_eq!("permutation".parse(), Ok(BackgroundPattern::Permutation));
        assert_eq!("all-to-all".parse(), Ok(BackgroundPattern::AllToAll));
        assert_eq!("incast".parse(), Ok(BackgroundPattern::Incast { senders: None }));
        assert_eq!("incast:4".parse(), Ok(BackgroundPattern::Incast { senders: Some(4) }));
        for bad in ["incast:0", "incast:x", "shuffle", "permutation:2"] {
            assert!(bad.parse::<BackgroundPattern>().is_err(), "{bad}");
        }
        let refused = |spec: WorkloadSpec| build(&spec, 4, 1).unwrap_err();
        assert!(refused(background(BackgroundPattern::Incast { senders: Some(4) }, 0.5)).contains("at most 3 senders"));
        assert!(refused(background(BackgroundPattern::Permutation, 1.5)).contains("--background-load"));
        assert!(refused(background(BackgroundPattern::Permutation, 0.0)).contains("--background-load"));
        let tiny = WorkloadSpec {
            background: Some(BackgroundSpec {
                bytes: 1,
                ..background(BackgroundPattern::Permutation, 1.0).background.unwrap()
            }),
            ..background(BackgroundPattern::Permutation, 1.0)
        };
        assert!(refused(tiny).contains("raise --background-size"));
    }
}
