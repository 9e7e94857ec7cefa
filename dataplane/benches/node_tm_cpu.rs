//! The traffic manager's cost in user CPU time: the `node_tm` set-up of
//! `pipeline.rs` (L2 known unicast or VXLAN encapsulation, RoCE frames,
//! reads of 64, a sink taking every frame) run for N batches of 256
//! frames with the FIFO or the `qos` traffic manager, and nothing else.
//!
//! On a shared machine criterion's wall-clock rates move with the load (a
//! run waiting for a core looks slow); the user CPU time a process spent
//! in its loop does not count that wait, so two binaries run one after the
//! other compare fairly. `scripts/bench-tm-cpu` runs two trees' builds
//! alternately and prints the traffic manager's cost per side.
//!
//! Usage: `node_tm_cpu l2/fifo|l2/tm|vx/fifo|vx/tm [BATCHES]` prints the
//! user CPU nanoseconds per frame of the loop (`getrusage`, set-up left
//! out) and the wall nanoseconds per frame. Without a mode (as `cargo
//! test --all-targets` runs it) every mode runs a few batches.

mod fixtures;

use std::time::Instant;

use dataplane::node::{Node, TrafficManager};
use dataplane::pipeline::Switch;
use fixtures::*;

fn user_ns() -> u64 {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    usage.ru_utime.tv_sec as u64 * 1_000_000_000 + usage.ru_utime.tv_usec as u64 * 1000
}

/// Runs `batches` passes of `frames`; returns (user ns, wall ns) per frame.
fn run<T: TrafficManager>(mut switch: Switch, mut node: Node<T>, frames: &[Vec<u8>], batches: u64) -> (f64, f64) {
    let mut sink = Sink::default();
    let mut now = NOW;
    // Warm-up, and the check that every frame goes out.
    for _ in 0..2 {
        receive_all(&mut node, &mut switch, &mut now, frames, &mut sink);
    }
    assert_eq!(sink.frames, 2 * frames.len(), "every frame must be sent ({:?})", node.counters());
    let (user, wall) = (user_ns(), Instant::now());
    for _ in 0..batches {
        receive_all(&mut node, &mut switch, &mut now, frames, &mut sink);
    }
    let frames_sent = (batches * frames.len() as u64) as f64;
    assert_eq!(sink.frames as u64, (batches + 2) * frames.len() as u64, "{:?}", node.counters());
    ((user_ns() - user) as f64 / frames_sent, wall.elapsed().as_nanos() as f64 / frames_sent)
}

fn run_mode(mode: &str, batches: u64) -> (f64, f64) {
    match mode {
        "l2/fifo" => {
            let (switch, frames) = l2_case();
            run(switch, Node::new(), &frames, batches)
        }
        "l2/tm" => {
            let (switch, frames) = l2_case();
            run(switch, Node::with_traffic_manager(qos_tm(2)), &frames, batches)
        }
        "vx/fifo" => {
            let (switch, frames) = vxlan_case();
            run(switch, Node::new(), &frames, batches)
        }
        "vx/tm" => {
            let (mut switch, frames) = vxlan_case();
            let tm = vxlan_tm(&mut switch);
            run(switch, Node::with_traffic_manager(tm), &frames, batches)
        }
        other => panic!("unknown mode {other}: l2/fifo, l2/tm, vx/fifo or vx/tm"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    match args.first() {
        Some(mode) => {
            let batches = args.get(1).map_or(50_000, |n| n.parse().expect("BATCHES is a number"));
            let (user, wall) = run_mode(mode, batches);
            println!("{mode} user_ns_per_frame {user:.2} wall_ns_per_frame {wall:.2}");
        }
        None => {
            for mode in ["l2/fifo", "l2/tm", "vx/fifo", "vx/tm"] {
                run_mode(mode, 4);
            }
        }
    }
}
