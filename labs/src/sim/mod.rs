//! The fabric simulator: the switch's own pipeline, traffic manager and DLB,
//! and the RoCE-like host endpoint, driven in virtual time over a fabric of
//! thousands of nodes (docs/simulator.md).
//!
//! - [`queue`]: the event queue (heap or timing wheel), virtual ns;
//! - [`link`]: cables that serialise at their speed, plus propagation;
//! - [`fabric`]: the shape, from a `*.clab.yml` or a generator;
//! - [`routes`]: the control plane's shortcut (shortest paths, ECMP);
//! - [`host`]: the NIC and its queue pairs (pacing, PFC, DCQCN, reordering);
//! - [`workload`]: collectives as graphs of messages;
//! - [`experiment`]: what a run varies (LB, PFC, ECN, links);
//! - [`engine`]: the event loop; [`stats`], [`output`]: what it measures and writes.

pub mod cli;
pub mod compare;
pub mod configured;
pub mod engine;
pub mod experiment;
pub mod fabric;
pub mod host;
pub mod ib;
pub mod ib_sm;
pub mod link;
pub mod output;
pub mod parallel;
pub mod plot;
pub mod queue;
pub mod routes;
pub mod stats;
pub mod workload;

use std::time::Instant;

pub use engine::Simulation;
pub use experiment::{Experiment, LoadBalancing, QueueKind};
pub use fabric::Fabric;
pub use output::Report;
pub use workload::{Kind, WorkloadSpec};

use queue::{EventQueue, HeapQueue, WheelQueue};

/// Wall-clock figures of a run (kept out of the result files).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Speed {
    pub events: u64,
    pub wall_s: f64,
    pub events_per_s: f64,
    pub simulated_ns: u64,
    /// The collectives' messages received whole, as a fraction of theirs.
    pub done_fraction: f64,
    /// Payload bytes delivered in order, as a fraction of the collectives'
    /// (the background's received whole left out).
    pub bytes_done_fraction: f64,
    /// Frames on cables or being read at once, at the peak (on a split
    /// run, the sum of the partitions' peaks).
    pub frames_in_flight_peak: usize,
    /// Threads the run was split across (its partitions).
    pub threads: usize,
}

impl Speed {
    /// Where `sim` stands `start.elapsed()` into its run.
    fn of<Q: EventQueue>(sim: &Simulation<Q>, start: Instant, frames_in_flight_peak: usize, threads: usize) -> Speed {
        let wall_s = start.elapsed().as_secs_f64();
        Speed {
            events: sim.events,
            wall_s,
            events_per_s: sim.events as f64 / wall_s.max(1e-9),
            simulated_ns: sim.now,
            done_fraction: sim.completed_foreground as f64 / sim.workload.foreground_messages.max(1) as f64,
            bytes_done_fraction: if sim.finished() { 1.0 } else { bytes_done_share(sim) },
            frames_in_flight_peak,
            threads,
        }
    }

    /// Wall seconds left, extrapolated from the bytes delivered so far.
    /// Bytes, not messages: an all-to-all's messages all complete at its
    /// end, so their count says nothing until then, while its bytes flow
    /// from the start at a steady rate.
    pub fn eta_s(&self) -> Option<f64> {
        let done = self.bytes_done_fraction;
        (done > 0.0 && done <= 1.0).then(|| self.wall_s * (1.0 - done) / done)
    }
}

/// Writes a finished run's files into a folder.
type Writer = dyn Fn(&std::path::Path) -> std::io::Result<()>;

/// A finished run: the report, and the simulation for files and plots.
pub struct Run {
    pub report: Report,
    pub speed: Speed,
    pub plot_data: plot::PlotData,
    writer: Box<Writer>,
}

impl Run {
    /// Writes the plots into `dir`.
    pub fn write_plots(&self, dir: &std::path::Path) -> Result<(), String> {
        plot::write_run(&self.plot_data, dir)
    }

    /// Writes the result files into `dir`.
    pub fn write(&self, dir: &std::path::Path) -> std::io::Result<()> {
        (self.writer)(dir)
    }
}

/// Runs `workload` on `fabric` under `experiment`, with the event queue it names.
pub fn run(
    name: &str,
    fabric: Fabric,
    experiment: Experiment,
    spec: WorkloadSpec,
    watch: Option<Vec<(u32, u16)>>,
    progress: Option<&mut dyn FnMut(&Speed)>,
) -> Result<Run, String> {
    let names: Vec<String> = fabric.hosts.iter().map(|h| h.name.clone()).collect();
    let workload = workload::build_named(&spec, &names, experiment.seed)?;
    match experiment.queue {
        QueueKind::Heap => {
            let make = || HeapQueue::with_capacity(1 << 16);
            run_with(name, Simulation::new(fabric, experiment, workload, make())?, spec, watch, progress, &make)
        }
        QueueKind::Wheel => {
            let make = || WheelQueue::new(6);
            run_with(name, Simulation::new(fabric, experiment, workload, make())?, spec, watch, progress, &make)
        }
    }
}

fn run_with<Q: EventQueue + Send + 'static>(
    name: &str,
    mut sim: Simulation<Q>,
    spec: WorkloadSpec,
    watch: Option<Vec<(u32, u16)>>,
    mut progress: Option<&mut dyn FnMut(&Speed)>,
    make: &dyn Fn() -> Q,
) -> Result<Run, String> {
    let watched = watch.unwrap_or_else(|| default_watch(&sim));
    sim.watch(watched);
    let plan = parallel::plan(&sim, sim.experiment.threads)?;
    let start = Instant::now();
    if let Some(plan) = plan {
        let threads = plan.parts;
        let (sim, frames_in_flight_peak) = parallel::run(sim, plan, make, progress);
        let speed = Speed::of(&sim, start, frames_in_flight_peak, threads);
        return Ok(finish(name, sim, spec, speed));
    }
    sim.run_with(|sim| {
        if let Some(progress) = progress.as_mut() {
            progress(&Speed::of(sim, start, 0, 1));
        }
    });
    let frames_in_flight_peak = sim.frames_allocated();
    let speed = Speed::of(&sim, start, frames_in_flight_peak, 1);
    Ok(finish(name, sim, spec, speed))
}

/// The payload bytes delivered in order, as a share of the collectives'
/// (the run ends with them, whatever background is left): the background's
/// received whole left out (what of it is still on its way counts, a little).
fn bytes_done_share<Q: EventQueue>(sim: &Simulation<Q>) -> f64 {
    let delivered: u64 = sim.hosts.iter().map(|h| h.receiver.counters().delivered_bytes).sum();
    let total = sim.workload.foreground_bytes();
    (delivered.saturating_sub(sim.background_done_bytes) as f64 / total.max(1) as f64).min(1.0)
}

fn finish<Q: EventQueue + 'static>(name: &str, sim: Simulation<Q>, spec: WorkloadSpec, speed: Speed) -> Run {
    let report = Report::new(&sim, name, spec);
    let plot_data = plot_data(&sim, name, &report);
    let for_writer = report.clone();
    let writer = Box::new(move |dir: &std::path::Path| output::write(&sim, &for_writer, dir));
    Run { report, speed, plot_data, writer }
}

fn plot_data<Q: EventQueue>(sim: &Simulation<Q>, name: &str, report: &Report) -> plot::PlotData {
    let switch = |s: u32| sim.fabric.switches[s as usize].name.clone();
    let run_ns = sim.now.max(1) as f64;
    let mut slowdowns: Vec<f64> = (0..sim.records.len())
        .filter(|&m| !sim.workload.is_background(m as u32))
        .filter_map(|m| Some(sim.records[m].fct_ns()? as f64 / output::ideal_fct_ns(sim, m as u32) as f64))
        .collect();
    slowdowns.sort_by(f64::total_cmp);
    plot::PlotData {
        name: name.into(),
        series_names: sim
            .watched
            .iter()
            .map(|&(s, p)| format!("{}:{}", switch(s), sim.fabric.port_name(s, p)))
            .collect(),
        series: sim.series.clone(),
        switch_names: (0..sim.switches.len() as u32).map(switch).collect(),
        paused_share: (0..sim.switches.len() as u32)
            .map(|s| (0..sim.fabric.switches[s as usize].ports).map(|p| sim.paused_ns(s, p) as f64 / run_ns).collect())
            .collect(),
        pause_caption: None,
        slowdowns,
        jcts: report.collectives.iter().filter_map(|c| c.jct_ns).map(|j| j as f64).collect(),
    }
}

/// Every wired port of small fabrics (up to 64 ports); none on larger ones.
fn default_watch<Q: EventQueue>(sim: &Simulation<Q>) -> Vec<(u32, u16)> {
    let mut ports = Vec::new();
    for (s, spec) in sim.fabric.switches.iter().enumerate() {
        for port in 0..spec.ports {
            if sim.peer(s as u32, port).is_some() {
                ports.push((s as u32, port));
            }
        }
    }
    if ports.len() > 64 { Vec::new() } else { ports }
}
