//! How the forwarding thread is scheduled, and how late it runs.
//!
//! By default the thread runs at nice -10 (`SCHED_OTHER`). With
//! `forwarding: {realtime_priority: N}` it asks for `SCHED_FIFO` at
//! priority N, so that ordinary work (builds, emulated hosts, a shell's
//! autogroup) cannot keep it off a CPU for tens or hundreds of
//! milliseconds while frames wait in its rx rings. The thread never spins:
//! it blocks in `epoll_wait` (at most [`crate::forwarding::POLL_INTERVAL`])
//! and on its timerfd, so at real-time priority an idle switch still costs
//! nothing, and the kernel's RT throttling (`sched_rt_runtime_us`) bounds
//! what a bug could take. A kernel that refuses (`EPERM` without
//! `CAP_SYS_NICE`, or a cgroup with no real-time budget) leaves the thread
//! at nice -10: logged at warn and counted ([`SchedulingState::refusals`],
//! `show backend`, `switch_forwarding_realtime_refused_total`).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the forwarding thread asked for and got.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchedulingState {
    /// `forwarding.realtime_priority` as configured.
    pub requested: Option<u8>,
    /// The `SCHED_FIFO` priority the thread runs at; `None`: `SCHED_OTHER`.
    pub realtime: Option<u8>,
    /// Times the kernel refused `SCHED_FIFO`.
    pub refusals: u64,
    /// The kernel's answer the last time it refused.
    pub last_refusal: Option<String>,
}

impl SchedulingState {
    /// One line for `show backend`.
    pub fn describe(&self) -> String {
        match (self.realtime, self.requested) {
            (Some(priority), _) => format!("SCHED_FIFO priority {priority}"),
            (None, Some(priority)) => format!(
                "SCHED_OTHER nice {FORWARDING_NICE} (SCHED_FIFO priority {priority} refused: {})",
                self.last_refusal.as_deref().unwrap_or("?")
            ),
            (None, None) => format!("SCHED_OTHER nice {FORWARDING_NICE}"),
        }
    }
}

/// The forwarding thread's nice value when it is not real-time.
pub const FORWARDING_NICE: libc::c_int = -10;

/// Puts the calling thread at `SCHED_FIFO` `priority`, or back to
/// `SCHED_OTHER` at nice -10 for `None`; updates `state`. Never fails: a
/// refusal is logged and counted.
pub fn apply(state: &mut SchedulingState, priority: Option<u8>) {
    state.requested = priority;
    match priority {
        Some(priority) => match set_policy(libc::SCHED_FIFO, libc::c_int::from(priority)) {
            Ok(()) => {
                state.realtime = Some(priority);
                tracing::info!(priority, "forwarding thread runs at SCHED_FIFO");
            }
            Err(error) => {
                state.refusals += 1;
                state.last_refusal = Some(error.to_string());
                if state.realtime.take().is_some() {
                    let _ = set_policy(libc::SCHED_OTHER, 0);
                }
                renice();
                tracing::warn!(
                    priority,
                    %error,
                    "the kernel refused SCHED_FIFO for the forwarding thread (forwarding.realtime_priority); \
                     it runs at SCHED_OTHER nice {FORWARDING_NICE} (needs CAP_SYS_NICE and a real-time budget \
                     in the thread's cgroup)"
                );
            }
        },
        None => {
            if state.realtime.take().is_some()
                && let Err(error) = set_policy(libc::SCHED_OTHER, 0)
            {
                tracing::warn!(%error, "forwarding thread: cannot leave SCHED_FIFO");
            }
            renice();
        }
    }
}

fn set_policy(policy: libc::c_int, priority: libc::c_int) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: pid 0 is the calling thread; param lives for the call.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Nice -10 for the calling thread (best effort: without the privilege it
/// keeps its priority).
pub fn renice() {
    // SAFETY: gettid and setpriority on this thread have no memory preconditions.
    let rc = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, FORWARDING_NICE)
    };
    if rc != 0 {
        tracing::debug!(error = %io::Error::last_os_error(), "forwarding thread keeps its priority");
    }
}

/// Upper bounds of the lateness buckets, nanoseconds (the last is open).
pub const LATE_BOUNDS_NS: [u64; 5] = [100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000];
/// Their names, as `show backend` and the metrics label them.
pub const LATE_NAMES: [&str; 6] = ["100us", "1ms", "10ms", "100ms", "1s", "inf"];

/// How late the thread woke after the instant it asked to (its timerfd or
/// its poll timeout): a histogram, the worst, the sum. Written by the
/// forwarding thread only (relaxed atomics: readers take a snapshot).
#[derive(Debug, Default)]
pub struct Lateness {
    buckets: [AtomicU64; 6],
    max_ns: AtomicU64,
    sum_ns: AtomicU64,
}

/// [`Lateness`] read at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LatenessSnapshot {
    /// Wake-ups late by at most `LATE_BOUNDS_NS[i]` (not cumulative); the
    /// last, by more than a second.
    pub buckets: [u64; 6],
    pub max_ns: u64,
    pub sum_ns: u64,
}

impl LatenessSnapshot {
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Wake-ups later than `bound_ns` (one of [`LATE_BOUNDS_NS`]).
    pub fn over(&self, bound_ns: u64) -> u64 {
        let first = LATE_BOUNDS_NS.iter().position(|&b| b == bound_ns).map_or(0, |i| i + 1);
        self.buckets[first..].iter().sum()
    }
}

impl Lateness {
    pub fn record(&self, late_ns: u64) {
        let bucket = LATE_BOUNDS_NS.iter().position(|&bound| late_ns <= bound).unwrap_or(LATE_BOUNDS_NS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.max_ns.fetch_max(late_ns, Ordering::Relaxed);
        self.sum_ns.fetch_add(late_ns, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> LatenessSnapshot {
        LatenessSnapshot {
            buckets: std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed)),
            max_ns: self.max_ns.load(Ordering::Relaxed),
            sum_ns: self.sum_ns.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    const PORTS: &str = "name: s\nports:\n  - {name: eth1, mode: routed, addresses: [10.0.1.1/31]}\n";

    #[test]
    fn the_realtime_priority_is_checked() {
        let ok = Config::from_yaml(&format!("{PORTS}forwarding: {{realtime_priority: 10}}\n")).unwrap();
        assert_eq!(ok.realtime_priority, Some(10));
        assert_eq!(Config::from_yaml(PORTS).unwrap().realtime_priority, None);
        for (value, backend) in [("0", ""), ("100", ""), ("4000000000", ""), ("10", "backend: kernel\n")] {
            let errors = Config::from_yaml(&format!("{PORTS}{backend}forwarding: {{realtime_priority: {value}}}\n"))
                .unwrap_err();
            assert_eq!(errors.errors.len(), 1, "{errors}");
            assert_eq!(errors.errors[0].path, "forwarding.realtime_priority", "{errors}");
        }
        let errors = Config::from_yaml(&format!("{PORTS}forwarding: {{realtime_priority: -1}}\n")).unwrap_err();
        assert!(errors.to_string().contains("forwarding.realtime_priority"), "{errors}");
    }

    #[test]
    fn lateness_lands_in_its_bucket() {
        let late = Lateness::default();
        for ns in [0, 100_000, 100_001, 5_000_000, 2_000_000_000] {
            late.record(ns);
        }
        let s = late.snapshot();
        assert_eq!(s.buckets, [2, 1, 1, 0, 0, 1]);
        assert_eq!((s.count(), s.max_ns), (5, 2_000_000_000));
        assert_eq!((s.over(1_000_000), s.over(10_000_000), s.over(1_000_000_000)), (2, 1, 1));
    }

    /// A thread that asks for SCHED_FIFO gets it where the kernel allows
    /// (as root here), or is refused, counted and left at SCHED_OTHER;
    /// `None` puts it back.
    #[test]
    fn realtime_is_granted_or_refused_and_counted() {
        std::thread::spawn(|| {
            let mut state = SchedulingState::default();
            apply(&mut state, Some(5));
            // SAFETY: plain query of the calling thread.
            let policy = unsafe { libc::sched_getscheduler(0) };
            match state.realtime {
                Some(5) => assert_eq!(policy, libc::SCHED_FIFO),
                None => {
                    assert_eq!((state.refusals, policy), (1, libc::SCHED_OTHER));
                    assert!(state.describe().contains("refused"), "{}", state.describe());
                }
                other => panic!("{other:?}"),
            }
            apply(&mut state, None);
            // SAFETY: as above.
            assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
            assert_eq!(state.realtime, None);
        })
        .join()
        .unwrap();
    }
}
