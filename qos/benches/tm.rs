//! The Ethernet traffic manager's per-frame path, on one core:
//!
//! - `classify`: DSCP -> TC -> queue/PG;
//! - `enqueue_dequeue`: a frame in (classify, ECN/WRED decision on a DCQCN
//!   profile, egress limit, ingress charge, VOQ append) and out (line rate,
//!   pause check, DWRR, cells returned), 4 ingress ports into 4 egress ports
//!   at 100 Gb/s, 8 classes, lossless classes 3 and 4;
//! - `ecn_decision`: the marking decision alone at a depth between Kmin and Kmax;
//! - `dlb_flowlet` / `dlb_spray`: the member choice for a 4-member group.
//!
//!     nice -n 5 cargo bench -p qos --bench tm

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use qos::classify::ClassKey;
use qos::dlb::{Dlb, DlbConfig, DlbMode};
use qos::ecn::{SplitMix64, WredProfile, decide};
use qos::tm::{Dequeue, FrameInfo, PortConfig, TmConfig, TrafficManager};
use std::hint::black_box;

const BATCH: u64 = 1024;
const PORTS: u16 = 4;

fn frames() -> Vec<FrameInfo> {
    (0..BATCH)
        .map(|i| FrameInfo {
            ingress: Some((i % u64::from(PORTS)) as u16),
            egress: ((i / 3) % u64::from(PORTS)) as u16,
            class: ClassKey::Headers { dscp: Some(((i * 8) % 64) as u8), pcp: 0 },
            len: 64 + (i % 1400) as u32,
            ecn_capable: i % 2 == 0,
            flow_hash: (i as u32).wrapping_mul(0x9e37_79b9),
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let frames = frames();
    let config = TmConfig::roce((0..PORTS).map(|_| PortConfig::new(100_000_000_000)).collect());
    let mut group = c.benchmark_group("tm");
    group.throughput(Throughput::Elements(BATCH));

    let tm = TrafficManager::new(&config, 0u32).unwrap();
    group.bench_function("classify", |b| {
        b.iter(|| {
            for frame in &frames {
                black_box(tm.classify(black_box(frame.class)));
            }
        })
    });

    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    let mut now = 0u64;
    group.bench_function("enqueue_dequeue", |b| {
        b.iter(|| {
            for (handle, frame) in frames.iter().enumerate() {
                let _ = black_box(tm.enqueue(now, handle as u32, frame));
                now += 30;
                // Each frame's egress is served as the wire allows (about
                // one 700-byte frame per 60 ns at 100 Gb/s, so queues build).
                if let Dequeue::Send { handle, .. } = tm.dequeue(now, frame.egress) {
                    black_box(handle);
                }
            }
        })
    });

    let profile = WredProfile::dcqcn(100_000_000_000, 9100);
    let mut rng = SplitMix64::new(1);
    group.bench_function("ecn_decision", |b| {
        b.iter(|| {
            for (i, frame) in frames.iter().enumerate() {
                black_box(decide(&profile, 20_000 + (i as u32) * 100, frame.ecn_capable, &mut rng));
            }
        })
    });

    for (name, mode) in [("dlb_flowlet", DlbMode::Flowlet), ("dlb_spray", DlbMode::Spray)] {
        let mut dlb = Dlb::new(DlbConfig { mode, ..DlbConfig::default() });
        let board = tm.load_board();
        let mut now = 0u64;
        group.bench_function(name, |b| {
            b.iter(|| {
                for frame in &frames {
                    now += 50;
                    let member = dlb
                        .choose(now, 1, frame.flow_hash, 4, (frame.flow_hash % 4) as usize, |i| board.cost(i as u16));
                    black_box(member);
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
