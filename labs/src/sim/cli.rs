//! `labs sim`: run one experiment, or compare several side by side.
//!
//! ```text
//! labs sim --fattree 16 --workload allreduce --size 64MiB --lb flowlet --out DIR
//! labs sim --topology lab.clab.yml --workload incast --size 4MiB --out DIR        # switches from the lab's switchd YAML
//! labs sim --topology lab.clab.yml --no-switch-configs --no-pfc --workload incast --out DIR
//! labs sim --fattree 4 --tiers 2 --fabric ib --routing ftree,updn --workload allreduce --out DIR
//! labs sim --rail 128x8 --spines 8 --workload all-to-all --size 16MiB --out DIR
//! labs sim compare --fattree 4 --workload permutation --size 8MiB --lb ecmp,flowlet,spray --out DIR
//! ```

use std::io::Write as _;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::experiment::{Experiment, LoadBalancing, QueueKind};
use super::fabric::{self, Fabric};
use super::ib::{IbCongestionControl, IbExperiment, IbReport, IbSimulation};
use super::ib_sm::SmTiming;
use super::workload::{BackgroundPattern, BackgroundSpec, Kind, RingOrder, WorkloadSpec};
use crate::generate::AiRail;
use crate::topology::Topology;
use qos::ib::cc::SwitchCongestionSetting;
use subnet_manager::routing::Engine;

#[derive(Args, Clone, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SimCommand {
    #[command(subcommand)]
    pub compare: Option<SimSubcommand>,
    #[command(flatten)]
    pub run: SimArgs,
}

#[derive(Subcommand, Clone, Debug)]
pub enum SimSubcommand {
    /// Run the same workload under several experiments and plot them side by side.
    Compare {
        #[command(flatten)]
        run: SimArgs,
        /// Also compare PFC alone against PFC with ECN/DCQCN, and on the IB-like plane credits alone against
        /// credits with FECN/BECN congestion control (otherwise one run per fabric and load balancing).
        #[arg(long)]
        ecn_both: bool,
    },
}

/// The fabric, the workload and the experiment.
#[derive(Args, Clone, Debug)]
pub struct SimArgs {
    /// A containerlab topology file; its switches are built from their switchd configs (the nodes' binds).
    #[arg(long, short = 't', group = "shape")]
    pub topology: Option<PathBuf>,
    /// With --topology: the simulator's own switches and addresses, not the switchd configs.
    #[arg(long)]
    pub no_switch_configs: bool,
    /// A k-ary fat-tree of radix K (three tiers; `--tiers 2` for leaf-spine).
    #[arg(long, group = "shape")]
    pub fattree: Option<usize>,
    #[arg(long, default_value_t = 3)]
    pub tiers: u8,
    /// Hosts per edge over uplinks (n:1), for the three-tier fat-tree.
    #[arg(long, default_value_t = 1)]
    pub oversubscription: usize,
    /// A rail-optimised fabric, SERVERSxRAILS.
    #[arg(long, group = "shape")]
    pub rail: Option<String>,
    #[arg(long, default_value_t = 8)]
    pub spines: usize,
    #[arg(long, default_value_t = 32)]
    pub servers_per_leaf: usize,
    /// One switch and N hosts.
    #[arg(long, group = "shape")]
    pub star: Option<usize>,

    #[arg(long, value_enum, default_value = "allreduce")]
    pub workload: Kind,
    /// Bytes per host (all-reduce, all-to-all) or per flow (incast, permutation): 64MiB, 4M, 4096.
    #[arg(long, default_value = "1MiB", value_parser = parse_size)]
    pub size: u64,
    /// Each host starts uniformly within this, microseconds.
    #[arg(long, default_value_t = 0)]
    pub jitter_us: u64,
    /// Compute phase of a training step, microseconds.
    #[arg(long, default_value_t = 100)]
    pub compute_us: u64,
    #[arg(long, default_value_t = 2)]
    pub iterations: u32,
    /// The hosts' order around the ring (all-reduce, training; halving-doubling's pairs): the fabric's host order,
    /// a seeded shuffle, or rail by rail (NIC N of every server, then N+1).
    #[arg(long, value_enum, default_value = "host")]
    pub ring_order: RingOrder,

    /// Background traffic beside the collective: permutation, all-to-all, incast or incast:N (N senders to one
    /// host), messages of --background-size at a seeded Poisson rate; the run ends with the collective.
    #[arg(long)]
    pub background: Option<BackgroundPattern>,
    /// Bytes per background message.
    #[arg(long, default_value = "256KiB", value_parser = parse_size, requires = "background")]
    pub background_size: u64,
    /// Payload each background sender offers, a fraction of its line (--link-gbps).
    #[arg(long, default_value_t = 0.5, requires = "background")]
    pub background_load: f64,
    /// Background messages arrive until then, microseconds [default: four times the collective's busiest host's
    /// bytes at line rate, plus jitter and compute].
    #[arg(long, requires = "background")]
    pub background_us: Option<u64>,
    /// The traffic class (0-7) of the background (DSCP class * 8; lossy unless it is a PFC priority, 3 or 4)
    /// [default: the collective's, 3].
    #[arg(long, requires = "background")]
    pub background_class: Option<u8>,
    /// The collective's class (3) strict priority over the background's, at the switches and the NICs.
    #[arg(long, requires = "background_class")]
    pub strict_collective: bool,

    /// The link layer: the Ethernet lossless class (switch pipelines, traffic managers, RoCE NICs) or the IB-like
    /// plane (credits per VL, LFTs from the SM's routing engines); a comma-separated list for `compare`.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "ethernet")]
    pub fabric: Vec<LinkLayer>,
    /// IB-like: routing engines tried in order (minhop, updn, ftree, sssp, dfsssp), as OpenSM's routing_engine
    /// [default: the lab's SM config's engines, else ftree,updn,minhop].
    #[arg(long)]
    pub routing: Option<String>,
    /// IB-like: receive buffer per VL per port, in 64-byte blocks.
    #[arg(long, default_value_t = 1024)]
    pub ib_buffer_blocks: u16,
    /// IB-like: each HCA reads what it receives at this rate (default: at once).
    #[arg(long)]
    pub ib_read_gbps: Option<f64>,
    /// IB-like: FECN/BECN congestion control (IBA annex A10): switch ports above the threshold mark FECN, the
    /// destination HCA returns a BECN, the source slows the flow by its CCT.
    #[arg(long)]
    pub ib_cc: bool,
    /// IB-like, with --ib-cc: bytes queued on a port's VL above which it marks.
    #[arg(long, default_value = "32KiB", value_parser = parse_size)]
    pub ib_cc_threshold: u64,

    /// Load balancing; a comma-separated list for `compare`.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "ecmp")]
    pub lb: Vec<LoadBalancing>,
    /// Lossy: no PFC (every class drops when full).
    #[arg(long)]
    pub no_pfc: bool,
    /// ECN marking in the switches and DCQCN at the hosts.
    #[arg(long)]
    pub ecn: bool,
    #[arg(long, default_value_t = 100)]
    pub link_gbps: u64,
    #[arg(long, default_value_t = 500)]
    pub delay_ns: u64,
    #[arg(long, default_value_t = 4096)]
    pub mtu: u32,
    /// Shared buffer per switch (default 8 MiB, or 512 KiB per port if more).
    #[arg(long, value_parser = parse_size)]
    pub buffer: Option<u64>,
    #[arg(long, default_value_t = 16)]
    pub flowlet_us: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The event queue: the binary heap or the timing wheel (docs/benchmarks.md); same order, same results.
    #[arg(long, value_enum, default_value = "heap")]
    pub queue: QueueKind,
    /// Queue-depth sampling interval, microseconds (0: off).
    #[arg(long, default_value_t = 10)]
    pub sample_us: u64,
    /// Split the Ethernet fabric's run across this many threads (partitions of
    /// pods or leaves, windows of the cables' lookahead); the same result files
    /// as one thread. The IB-like plane runs on one.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: u16,
    /// Stop after this much simulated time, milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub time_limit_ms: u64,
    /// Take cable LINK (its index in the topology's links) down at T microseconds: LINK@T.
    #[arg(long)]
    pub fail_link: Option<String>,
    /// After a link failure, the routes move off it this much later (BGP's withdrawal), microseconds.
    #[arg(long, default_value_t = 200)]
    pub reconverge_us: u64,
    /// Retransmission timeout: a message not received this long after its last packet is sent again, microseconds.
    #[arg(long, default_value_t = 4000)]
    pub rto_us: u64,
    /// IB-like: LIDs and LFTs from the subnet manager's own sweeps in virtual time (always with --fail-link).
    #[arg(long)]
    pub ib_sm: bool,
    /// IB-like, with the SM: its light sweep period, microseconds.
    #[arg(long, default_value_t = 1000)]
    pub sm_sweep_us: u64,
    /// IB-like, with the SM: an SMP's time per cable crossed, nanoseconds.
    #[arg(long, default_value_t = 1000)]
    pub smp_hop_ns: u64,
    /// Ports whose queue depth to record over time, SWITCH:ethN (default: all, on fabrics up to 64 ports).
    #[arg(long, value_delimiter = ',')]
    pub watch: Vec<String>,
    /// Output folder.
    #[arg(long, short = 'o', default_value = "sim-out")]
    pub out: PathBuf,
    /// No progress line on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// No PNG/SVG plots (they need DejaVu Sans, Debian's fonts-dejavu-core).
    #[arg(long)]
    pub no_plots: bool,
}

/// Which link layer a run simulates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LinkLayer {
    Ethernet,
    Ib,
}

/// `64MiB`, `16M`, `1GiB`, `4KiB`, `4096`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| format!("{text:?}: a number of bytes, like 64MiB"))?;
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" | "k" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        other => return Err(format!("{text:?}: unknown unit {other:?} (B, KiB, MiB, GiB, KB, MB, GB)")),
    };
    number.checked_mul(scale).ok_or_else(|| format!("{text:?} is too large"))
}

impl SimArgs {
    /// The topology named by the flags, and its name.
    pub fn topology(&self) -> Result<Topology, String> {
        if let Some(path) = &self.topology {
            return Topology::load(path).map_err(|e| e.to_string());
        }
        if let Some(k) = self.fattree {
            return match self.tiers {
                3 => fabric::fattree3(&format!("fattree{k}"), k, self.oversubscription),
                2 => crate::generate::fattree(&format!("fattree{k}"), k).map(|g| g.topology).map_err(|e| e.to_string()),
                other => Err(format!("--tiers {other}: 2 or 3")),
            };
        }
        if let Some(shape) = &self.rail {
            let (servers, rails) = shape
                .split_once('x')
                .and_then(|(s, r)| Some((s.parse().ok()?, r.parse().ok()?)))
                .ok_or_else(|| format!("--rail {shape:?}: SERVERSxRAILS, like 128x8"))?;
            let servers_per_leaf = self.servers_per_leaf.min(servers);
            let spines = if servers > servers_per_leaf { self.spines } else { 0 };
            return AiRail { servers, rails, spines, servers_per_leaf }
                .generate(&format!("rail{servers}x{rails}"))
                .map(|g| g.topology)
                .map_err(|e| e.to_string());
        }
        if let Some(hosts) = self.star {
            return Ok(fabric::star(&format!("star{hosts}"), hosts));
        }
        Err("no fabric: --topology FILE, --fattree K, --rail SxR or --star N".into())
    }

    /// The topology and the fabric it describes: with a topology file,
    /// switches built from their switchd configs (unless `--no-switch-configs`).
    pub fn fabric(&self) -> Result<(Topology, Fabric), String> {
        match &self.topology {
            Some(path) if !self.no_switch_configs => {
                let (topology, fabric) = Fabric::from_topology_file(path)?;
                if !fabric.configured() {
                    eprintln!(
                        "note: {} has a switch that is not a switchd node: the simulator's own switches stand in for all",
                        path.display()
                    );
                }
                Ok((topology, fabric))
            }
            _ => {
                let topology = self.topology()?;
                let fabric = Fabric::from_topology(&topology)?;
                Ok((topology, fabric))
            }
        }
    }

    /// The IB-like run the flags describe.
    pub fn ib_experiment(&self) -> Result<IbExperiment, String> {
        let engines = match &self.routing {
            Some(list) => Engine::parse_list(list)?,
            None => IbExperiment::default().engines,
        };
        if engines.is_empty() {
            return Err("--routing: at least one engine".into());
        }
        Ok(IbExperiment {
            link_bps: self.link_gbps * 1_000_000_000,
            link_delay_ns: self.delay_ns,
            mtu: self.mtu,
            buffer_blocks: self.ib_buffer_blocks,
            read_bps: self.ib_read_gbps.map(|gbps| (gbps * 1e9) as u64),
            engines,
            time_limit_ns: self.time_limit_ms * 1_000_000,
            sample_ns: self.sample_us * 1000,
            cc: self.ib_cc.then(|| IbCongestionControl {
                switch: SwitchCongestionSetting {
                    threshold_bytes: self.ib_cc_threshold.min(u64::from(u32::MAX)) as u32,
                    ..SwitchCongestionSetting::default()
                },
                ..IbCongestionControl::default()
            }),
            sm: (self.ib_sm || self.fail_link.is_some()).then(|| SmTiming {
                light_sweep_ns: self.sm_sweep_us * 1000,
                smp_hop_ns: self.smp_hop_ns,
                ..SmTiming::default()
            }),
            link_failure: self.link_failure()?,
            rto_ns: self.rto_us * 1000,
            ..IbExperiment::default()
        })
    }

    /// `--fail-link LINK@MICROSECONDS`: the cable and the time, ns.
    fn link_failure(&self) -> Result<Option<(u32, u64)>, String> {
        let Some(text) = &self.fail_link else { return Ok(None) };
        let (link, at) = text
            .split_once('@')
            .and_then(|(l, t)| Some((l.parse().ok()?, t.parse::<u64>().ok()?)))
            .ok_or_else(|| format!("--fail-link {text:?}: LINK@MICROSECONDS"))?;
        Ok(Some((link, at * 1000)))
    }

    pub fn experiment(&self, lb: LoadBalancing) -> Result<Experiment, String> {
        let link_failure = self.link_failure()?;
        Ok(Experiment {
            lb,
            pfc: !self.no_pfc,
            ecn: self.ecn,
            link_bps: self.link_gbps * 1_000_000_000,
            link_delay_ns: self.delay_ns,
            mtu: self.mtu,
            buffer_bytes: self.buffer.unwrap_or(0),
            flowlet_us: self.flowlet_us,
            seed: self.seed,
            sample_ns: self.sample_us * 1000,
            queue: self.queue,
            time_limit_ns: self.time_limit_ms * 1_000_000,
            link_failure,
            rto_ns: self.rto_us * 1000,
            reconverge_ns: self.reconverge_us * 1000,
            threads: usize::from(self.threads),
            background_class: self.background_class,
            strict_collective: self.strict_collective,
        })
    }

    pub fn workload(&self) -> WorkloadSpec {
        WorkloadSpec {
            kind: self.workload,
            bytes: self.size,
            jitter_ns: self.jitter_us * 1000,
            compute_ns: self.compute_us * 1000,
            iterations: self.iterations,
            ring_order: self.ring_order,
            background: self.background.map(|pattern| BackgroundSpec {
                pattern,
                bytes: self.background_size,
                load: self.background_load,
                line_bps: self.link_gbps * 1_000_000_000,
                until_ns: self.background_us.map(|us| us * 1000),
            }),
        }
    }

    fn watch(&self, fabric: &Fabric) -> Result<Option<Vec<(u32, u16)>>, String> {
        if self.watch.is_empty() {
            return Ok(None);
        }
        self.watch
            .iter()
            .map(|text| {
                let (switch, port) = text.split_once(':').ok_or_else(|| format!("--watch {text:?}: SWITCH:ethN"))?;
                let s = fabric
                    .switches
                    .iter()
                    .position(|sw| sw.name == switch)
                    .ok_or_else(|| format!("--watch {text:?}: no switch {switch:?}"))?;
                let port =
                    fabric.port_named(s as u32, port).ok_or_else(|| format!("--watch {text:?}: no port {port:?}"))?;
                Ok((s as u32, port))
            })
            .collect::<Result<Vec<_>, String>>()
            .map(Some)
    }
}

/// One run, written into `out`; its report.
pub fn run_one(args: &SimArgs, experiment: Experiment, out: &std::path::Path) -> Result<super::Run, String> {
    let (topology, fabric) = args.fabric()?;
    if fabric.configured() && (args.no_pfc || args.buffer.is_some() || args.strict_collective) {
        return Err("--no-pfc, --buffer and --strict-collective set the simulator's own switches; these switches \
                    take PFC, buffers and scheduling from their switchd configs (edit qos:, or run with \
                    --no-switch-configs)"
            .into());
    }
    let watch = args.watch(&fabric)?;
    let quiet = args.quiet;
    let mut progress = |speed: &super::Speed| {
        if !quiet {
            let eta = speed.eta_s().map_or("?".to_owned(), |s| format!("{s:.0} s"));
            eprint!(
                "\r  simulated {:>10.3} ms  {:>6.2} M events  {:>6.2} M events/s  {:>6.1} s wall  {:>5.1}% of bytes  \
                 {:>5.1}% of messages  ETA {eta:<8}",
                speed.simulated_ns as f64 / 1e6,
                speed.events as f64 / 1e6,
                speed.events_per_s / 1e6,
                speed.wall_s,
                speed.bytes_done_fraction * 100.0,
                speed.done_fraction * 100.0
            );
            let _ = std::io::stderr().flush();
        }
    };
    let run = super::run(&topology.name, fabric, experiment, args.workload(), watch, Some(&mut progress))?;
    if !quiet {
        eprintln!();
    }
    run.write(out).map_err(|e| format!("writing into {}: {e}", out.display()))?;
    let speed = serde_json::to_string_pretty(&run.speed).expect("serialises");
    std::fs::write(out.join("speed.json"), speed + "\n").map_err(|e| format!("writing speed.json: {e}"))?;
    if !args.no_plots {
        run.write_plots(out)?;
    }
    Ok(run)
}

/// One IB-like run, its `summary.json`, `messages.csv` and `ports.csv`
/// written into `out`. With a topology file, each port as its switch's
/// config sets it (`mode: ib`: data VLs, IB MTU, `ib_rate`, the buffer)
/// and the routing engines of its SM, unless `--no-switch-configs`.
pub fn run_ib(args: &SimArgs, out: &std::path::Path) -> Result<IbReport, String> {
    if args.background_class.is_some() {
        return Err("--background-class: the Ethernet fabric's; on the IB-like plane background traffic shares the \
                    collective's SLs"
            .into());
    }
    let topology = args.topology()?;
    let fabric = Fabric::from_topology(&topology)?;
    let mut experiment = args.ib_experiment()?;
    if let Some(path) = args.topology.as_ref().filter(|_| !args.no_switch_configs) {
        let (ports, engines) =
            super::ib::settings_from_configs(&fabric, &topology, path.parent().unwrap_or(".".as_ref()))?;
        experiment.ports = ports;
        if let (None, Some(engines)) = (&args.routing, engines) {
            experiment.engines = engines;
        }
    }
    let watch = args.watch(&fabric)?;
    let names: Vec<String> = fabric.hosts.iter().map(|h| h.name.clone()).collect();
    let workload = super::workload::build_named(&args.workload(), &names, args.seed)?;
    let mut simulation = IbSimulation::new(fabric, experiment, workload)?;
    let watch = watch.unwrap_or_else(|| simulation.default_watch());
    simulation.watch(watch);
    simulation.run();
    let report = simulation.report(&topology.name);
    report.write(out).map_err(|e| format!("writing into {}: {e}", out.display()))?;
    if !args.no_plots {
        super::plot::write_run(&report.plot_data(), out)?;
    }
    Ok(report)
}

/// Each collective's JCT, or that it did not finish.
fn jcts(collectives: &[super::output::CollectiveResult]) -> String {
    let each: Vec<String> = collectives
        .iter()
        .map(|c| match c.jct_ns {
            Some(ns) => format!("{} {:.3} ms", c.name, ns as f64 / 1e6),
            None => format!("{} unfinished", c.name),
        })
        .collect();
    each.join(", ")
}

/// A one-paragraph summary of an IB-like run.
pub fn describe_ib(r: &IbReport) -> String {
    let failure = r.link_failure.as_ref().map_or(String::new(), |f| {
        let us = |ns: Option<u64>| ns.map_or("never".into(), |ns| format!("{:.1} us", ns as f64 / 1e3));
        format!(
            "; cable {} ({}) cut at {}, SM rerouted at {}, {} packets lost, {} retransmission timeouts",
            f.link,
            f.cable,
            us(Some(f.failed_ns)),
            us(f.rerouted_ns),
            f.lost_on_cable + f.discarded_queued + f.dropped_at_dead_port,
            r.timeouts
        )
    });
    format!(
        "{} ({} switches, {} HCAs, IB-like, {} LFTs): {}; drops {}; xmit wait {}; {} flow-control packets; FECN {}, \
         BECN {}; {} events",
        r.topology,
        r.switches,
        r.hosts,
        r.routing_engine,
        jcts(&r.collectives),
        r.drops,
        r.xmit_wait,
        r.flow_control_packets,
        r.fecn_marked,
        r.becns_received,
        r.events
    ) + &failure
        + &describe_background(&r.background)
}

/// The background's line of a summary, if the run had any.
fn describe_background(background: &Option<super::output::BackgroundResult>) -> String {
    let Some(b) = background else { return String::new() };
    let class = b.class.map_or(String::new(), |c| {
        format!(" on class {c}{}", if b.strict_collective { ", the collective's strict" } else { "" })
    });
    let mut text = format!(
        "; background{class}: offered {:.3} of the line, {} of {} messages received (FCT p50 {:.1} us, p99 {:.1} us; slowdown p50 {:.2}, p99 {:.2})",
        b.offered_load,
        b.completed,
        b.released,
        b.fct_ns.p50 / 1e3,
        b.fct_ns.p99 / 1e3,
        b.fct_slowdown.p50,
        b.fct_slowdown.p99
    );
    if b.ended_before_collectives {
        text += &format!(
            "; the background stopped at {:.3} ms, before the collective ended (--background-us)",
            b.until_ns as f64 / 1e6
        );
    }
    text
}

/// A one-paragraph summary of a run.
pub fn describe(run: &super::Run) -> String {
    let r = &run.report;
    format!(
        "{} ({} switches, {} hosts): {}; FCT slowdown p50 {:.2} p99 {:.2}; drops {}; ECN marks {}; PFC frames {}, {} ports paused ({:.3} ms); {} events in {:.2} s ({:.2} M/s)",
        r.topology,
        r.switches,
        r.hosts,
        jcts(&r.collectives),
        r.fct_slowdown.p50,
        r.fct_slowdown.p99,
        r.drops_total,
        r.ecn_marked,
        r.pfc_frames_sent,
        r.paused_ports,
        r.paused_ns_total as f64 / 1e6,
        run.speed.events,
        run.speed.wall_s,
        run.speed.events_per_s / 1e6
    ) + &describe_background(&r.background)
        + &describe_reroute(r)
}

/// After a link failure: routes rewritten, and what the switches refused.
fn describe_reroute(r: &super::Report) -> String {
    let mut text = String::new();
    if r.routes_rewritten > 0 || !r.reroute_errors.is_empty() {
        text += &format!("; {} routes rewritten after the link failure", r.routes_rewritten);
    }
    for error in &r.reroute_errors {
        text += &format!("; refused: {error}");
    }
    text
}

/// `labs sim` and `labs sim compare`.
pub fn main(command: SimCommand) -> Result<(), String> {
    match command.compare {
        None if command.run.fabric.first() == Some(&LinkLayer::Ib) => {
            let args = command.run;
            if args.threads > 1 {
                return Err("--threads: the IB-like plane (--fabric ib) runs on one thread".into());
            }
            let report = run_ib(&args, &args.out)?;
            println!("{}", describe_ib(&report));
            println!("wrote {}", args.out.display());
            Ok(())
        }
        None => {
            let args = command.run;
            let lb = args.lb.first().copied().unwrap_or(LoadBalancing::Ecmp);
            let run = run_one(&args, args.experiment(lb)?, &args.out)?;
            println!("{}", describe(&run));
            println!("wrote {}", args.out.display());
            Ok(())
        }
        Some(SimSubcommand::Compare { run: args, ecn_both }) => {
            let mut variants = Vec::new();
            for &lb in args.lb.iter().filter(|_| args.fabric.contains(&LinkLayer::Ethernet)) {
                let base = args.experiment(lb)?;
                let name = format!("{lb:?}").to_lowercase();
                if ecn_both {
                    variants.push((format!("{name}-pfc"), Experiment { ecn: false, pfc: true, ..base.clone() }));
                    variants.push((format!("{name}-pfc-ecn"), Experiment { ecn: true, pfc: true, ..base }));
                } else {
                    variants.push((name, base));
                }
            }
            let mut runs = Vec::new();
            for (name, experiment) in variants {
                eprintln!("{name}:");
                let run = run_one(&args, experiment, &args.out.join(&name))?;
                println!("{name}: {}", describe(&run));
                runs.push((name, run));
            }
            // The IB-like plane once, as the flags set it (`ib`, or `ib-cc`
            // with --ib-cc); with --ecn-both without and with FECN/BECN
            // congestion control, as the Ethernet runs without and with ECN.
            let mut ib_runs = Vec::new();
            if args.fabric.contains(&LinkLayer::Ib) {
                let variants: &[(&str, bool)] = match (ecn_both, args.ib_cc) {
                    (true, _) => &[("ib", false), ("ib-cc", true)],
                    (false, false) => &[("ib", false)],
                    (false, true) => &[("ib-cc", true)],
                };
                for &(name, ib_cc) in variants {
                    eprintln!("{name}:");
                    let report = run_ib(&SimArgs { ib_cc, ..args.clone() }, &args.out.join(name))?;
                    println!("{name}: {}", describe_ib(&report));
                    ib_runs.push((name.to_owned(), report));
                }
            }
            let collectives = runs
                .first()
                .map(|(_, run)| run.report.collectives.clone())
                .or_else(|| ib_runs.first().map(|(_, r)| r.collectives.clone()))
                .unwrap_or_default();
            for c in &collectives {
                let ethernet = runs.iter().map(|(name, run)| (name, &run.report.collectives));
                let each: Vec<String> = ethernet
                    .chain(ib_runs.iter().map(|(name, r)| (name, &r.collectives)))
                    .map(|(name, results)| {
                        let jct = results.iter().find(|e| e.name == c.name).and_then(|e| e.jct_ns);
                        let jct = jct.map_or("unfinished".into(), |ns| format!("{:.3} ms", ns as f64 / 1e6));
                        format!("{name} {jct}")
                    })
                    .collect();
                println!("JCT {}: {}", c.name, each.join(", "));
            }
            super::compare::write(&runs, &ib_runs, &args.out)?;
            if !args.no_plots {
                let mut data: Vec<super::plot::PlotData> = Vec::new();
                for (name, run) in &runs {
                    data.push(super::plot::PlotData { name: name.clone(), ..run.plot_data.clone() });
                }
                for (name, report) in &ib_runs {
                    data.push(super::plot::PlotData { name: name.clone(), ..report.plot_data() });
                }
                super::plot::write_compare(&data.iter().collect::<Vec<_>>(), &args.out)?;
            }
            println!("wrote {}", args.out.display());
            Ok(())
        }
    }
}
