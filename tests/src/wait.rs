//! Polling with a deadline, for tests that wait on another process's state.

use std::time::{Duration, Instant};

/// Calls `probe` every `interval` until it returns `Some`, and returns that;
/// `None` once `timeout` has passed without it.
pub fn poll_until<T>(timeout: Duration, interval: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(found) = probe() {
            return Some(found);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(interval);
    }
}
