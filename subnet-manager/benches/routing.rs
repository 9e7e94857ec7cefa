//! Routing engines on generated fat trees, and the whole SM (discovery,
//! LIDs, routing, programming) against the in-process fabric of simulated
//! agents. Run with `cargo bench -p subnet-manager --bench routing`;
//! figures and the machine's load go to docs/benchmarks.md.
//!
//! Sizes are the gen-fattree presets: 650, 4100, 10k and 50k nodes, every
//! engine at every size (sssp and dfsssp build one tree per destination
//! LID, 47k of them at 50k: seconds per sample there).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use subnet_manager::fabric::Fabric;
use subnet_manager::interop::generate::FatTree;
use subnet_manager::lid::{self, LidMap};
use subnet_manager::routing::{self, Engine, RoutingConfig};
use subnet_manager::sm::{SmConfig, SmEvent, SubnetManager};

/// `cargo test --all-targets` runs each benchmark once, unoptimised: the
/// small preset only, then (cargo bench passes `--bench`).
fn presets(all: &'static [&'static str]) -> &'static [&'static str] {
    if std::env::args().any(|a| a == "--bench") { all } else { &all[..1] }
}

fn engines(c: &mut Criterion) {
    let mut group = c.benchmark_group("route");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(5));
    for &preset in presets(&["650", "4100", "10k", "50k"]) {
        let mut topology = FatTree::preset(preset).expect("preset").build();
        lid::assign(&mut topology, 0, 0, &LidMap::default()).expect("LIDs");
        for engine in [Engine::Minhop, Engine::Updn, Engine::Ftree, Engine::Sssp, Engine::Dfsssp] {
            let config = RoutingConfig { engines: vec![engine], ..RoutingConfig::default() };
            group.bench_with_input(BenchmarkId::new(engine.name(), preset), &topology, |b, topology| {
                b.iter(|| black_box(routing::route(topology, &config).expect("routed")))
            });
        }
    }
    group.finish();
}

/// The goal: 10,000 HCAs discovered, routed and programmed in
/// process in under a second.
fn bring_up(c: &mut Criterion) {
    let mut group = c.benchmark_group("bring_up_in_process");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(10));
    for &preset in presets(&["650", "4100", "10k"]) {
        let topology = FatTree::preset(preset).expect("preset").build();
        let host = topology.cas().next().expect("a host");
        group.bench_function(BenchmarkId::new("ftree", preset), |b| {
            b.iter_batched(
                || Fabric::new(topology.clone()),
                |mut fabric| {
                    let config = SmConfig {
                        routing: RoutingConfig { engines: vec![Engine::Ftree], ..RoutingConfig::default() },
                        window: 256,
                        ..SmConfig::default()
                    };
                    let mut sm = SubnetManager::new(config, LidMap::default());
                    let mut now = 0;
                    sm.start(now);
                    let events = fabric.run(&mut sm, host, 1, &mut now, u64::MAX / 4, 0);
                    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })));
                    fabric
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, engines, bring_up);
criterion_main!(benches);
