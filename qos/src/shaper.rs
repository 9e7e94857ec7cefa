//! Token-bucket shapers and the port's line rate.
//!
//! A [`TokenBucket`] fills at `rate_bps` up to `burst_bytes`; a frame of L
//! bytes conforms when the bucket holds at least L bytes of tokens, and
//! takes them. Tokens are kept in byte-nanoseconds-per-second units
//! ("nano-bytes": 1 byte = 10^9) so integer arithmetic loses nothing at any
//! rate: `elapsed_ns x rate_bytes_per_s` is exactly the nano-bytes earned.
//!
//! The line rate ([`LineRate`]) is the serialisation clock of a port: a frame
//! of L bytes occupies the wire for `(L + overhead) x 8 / speed` seconds,
//! with overhead the preamble, SFD, FCS and inter-frame gap the frame
//! carried in `FrameMeta::len` does not include.

use serde::{Deserialize, Serialize};

const NANO: u128 = 1_000_000_000;

/// A shaper's configuration (SAI scheduler `MAX_BANDWIDTH_RATE` and
/// `MAX_BANDWIDTH_BURST_RATE`, in bits and bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ShaperConfig {
    /// Bits per second.
    pub rate_bps: u64,
    /// Bucket depth in bytes: the largest burst sent at once.
    pub burst_bytes: u32,
}

/// A token bucket in nano-bytes, refilled lazily at each use.
#[derive(Debug, Clone, Copy)]
pub struct TokenBucket {
    rate_bytes_per_s: u128,
    capacity_nb: u128,
    tokens_nb: u128,
    updated_ns: u64,
}

impl TokenBucket {
    /// A full bucket at time `now`.
    pub fn new(config: ShaperConfig, now: u64) -> TokenBucket {
        let capacity_nb = u128::from(config.burst_bytes) * NANO;
        TokenBucket {
            rate_bytes_per_s: u128::from(config.rate_bps / 8).max(1),
            capacity_nb,
            tokens_nb: capacity_nb,
            updated_ns: now,
        }
    }

    #[inline]
    fn refill(&mut self, now: u64) {
        if now > self.updated_ns {
            let earned = u128::from(now - self.updated_ns) * self.rate_bytes_per_s;
            self.tokens_nb = (self.tokens_nb + earned).min(self.capacity_nb);
            self.updated_ns = now;
        }
    }

    /// Whether `bytes` may leave at `now`.
    #[inline]
    pub fn conforms(&mut self, now: u64, bytes: u32) -> bool {
        self.refill(now);
        self.tokens_nb >= u128::from(bytes) * NANO
    }

    /// Takes `bytes` of tokens (after [`conforms`](Self::conforms) said yes).
    #[inline]
    pub fn take(&mut self, now: u64, bytes: u32) {
        self.refill(now);
        self.tokens_nb = self.tokens_nb.saturating_sub(u128::from(bytes) * NANO);
    }

    /// The earliest time `bytes` conform.
    pub fn ready_at(&mut self, now: u64, bytes: u32) -> u64 {
        self.refill(now);
        let need = u128::from(bytes) * NANO;
        if self.tokens_nb >= need {
            return now;
        }
        let wait = (need - self.tokens_nb).div_ceil(self.rate_bytes_per_s);
        now.saturating_add(wait.min(u128::from(u64::MAX)) as u64)
    }
}

/// Bytes on the wire beyond a frame without its FCS: preamble and SFD (8),
/// FCS (4), inter-frame gap (12).
pub const WIRE_OVERHEAD_BYTES: u32 = 24;

/// A port's serialisation clock.
#[derive(Debug, Clone, Copy)]
pub struct LineRate {
    speed_bps: u64,
    /// Nanoseconds per byte in 32.32 fixed point (`None` below 1 Mb/s,
    /// where it would overflow: exact 128-bit arithmetic then).
    ns_per_byte_q32: Option<u64>,
    /// When the wire is free for the next frame.
    free_at: u64,
    /// How far behind `now` the clock may lag and catch up with back-to-back
    /// frames: a driver that wakes late still reaches line rate on average.
    catch_up_ns: u64,
}

impl LineRate {
    pub fn new(speed_bps: u64, catch_up_ns: u64) -> LineRate {
        let speed_bps = speed_bps.max(1);
        let ns_per_byte_q32 =
            (speed_bps >= 1_000_000).then(|| ((8 * NANO) << 32).div_ceil(u128::from(speed_bps)) as u64);
        LineRate { speed_bps, ns_per_byte_q32, free_at: 0, catch_up_ns }
    }

    pub fn speed_bps(&self) -> u64 {
        self.speed_bps
    }

    /// Nanoseconds `bytes` (a frame without FCS) occupy the wire.
    #[inline]
    pub fn wire_ns(&self, bytes: u32) -> u64 {
        if let Some(q32) = self.ns_per_byte_q32 {
            // A division per frame costs more than the rest of the frame's
            // path; the fixed point is exact at 1/10/25/40/100 Gb/s up to
            // rounding of a fraction of a nanosecond.
            return (u64::from(bytes.min(1 << 20) + WIRE_OVERHEAD_BYTES) * q32).div_ceil(1 << 32);
        }
        let bits = u128::from(bytes + WIRE_OVERHEAD_BYTES) * 8;
        (bits * NANO).div_ceil(u128::from(self.speed_bps)) as u64
    }

    /// When the next frame may start.
    #[inline]
    pub fn free_at(&self, now: u64) -> u64 {
        self.free_at.max(now.saturating_sub(self.catch_up_ns))
    }

    /// Whether a frame may start at `now`.
    #[inline]
    pub fn idle(&self, now: u64) -> bool {
        self.free_at <= now
    }

    /// A frame of `bytes` starts at `now` (or where the lagging clock is).
    #[inline]
    pub fn send(&mut self, now: u64, bytes: u32) {
        self.free_at = self.free_at(now) + self.wire_ns(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends as many `frame`-byte frames as the bucket allows in `span_ns`,
    /// asking every nanosecond step of `step`.
    fn sent_bytes(bucket: &mut TokenBucket, frame: u32, span_ns: u64, step: u64) -> u64 {
        let mut sent = 0;
        let mut now = 0;
        while now < span_ns {
            while bucket.conforms(now, frame) {
                bucket.take(now, frame);
                sent += u64::from(frame);
            }
            now += step;
        }
        sent
    }

    #[test]
    fn bucket_holds_its_rate_after_the_burst() {
        // 100 Mb/s = 12.5 MB/s; 1 s sends the 3000-byte burst plus 12.5 MB.
        let mut bucket = TokenBucket::new(ShaperConfig { rate_bps: 100_000_000, burst_bytes: 3000 }, 0);
        let sent = sent_bytes(&mut bucket, 1000, 1_000_000_000, 10_000);
        assert!((12_500_000..=12_503_000).contains(&sent), "{sent}");
    }

    #[test]
    fn ready_at_is_exact() {
        // 8 Mb/s = 1 byte/us. Empty the 1500-byte bucket, then 500 bytes need 500 us.
        let mut bucket = TokenBucket::new(ShaperConfig { rate_bps: 8_000_000, burst_bytes: 1500 }, 0);
        bucket.take(0, 1500);
        assert!(!bucket.conforms(0, 500));
        assert_eq!(bucket.ready_at(0, 500), 500_000);
        assert!(!bucket.conforms(499_999, 500));
        assert!(bucket.conforms(500_000, 500));
        // Idle time never fills past the burst.
        assert!(!bucket.conforms(10_000_000_000, 1501));
    }

    #[test]
    fn line_rate_serialises_frames() {
        // 1 Gb/s: a 1500-byte frame plus 24 bytes overhead is 12.192 us.
        let mut line = LineRate::new(1_000_000_000, 0);
        assert_eq!(line.wire_ns(1500), 12_192);
        assert!(line.idle(0));
        line.send(0, 1500);
        assert!(!line.idle(12_191));
        assert!(line.idle(12_192));
        // 100G: a 64-byte frame (60 + 4 FCS) with preamble and gap is 84 bytes, 6.72 ns.
        assert_eq!(LineRate::new(100_000_000_000, 0).wire_ns(60), 7);
    }

    #[test]
    fn a_late_driver_catches_up_within_its_slack() {
        let mut line = LineRate::new(1_000_000_000, 100_000);
        line.send(0, 1500);
        // Woken 50 us late: frames go back to back from where the wire was free.
        let mut now = 62_192;
        let mut sent = 0;
        while line.idle(now) {
            line.send(now, 1500);
            sent += 1;
        }
        assert_eq!(sent, 5, "50 us of lag is four frames plus the one due now");
        now += 1_000_000; // a millisecond asleep: only 100 us are made up
        sent = 0;
        while line.idle(now) {
            line.send(now, 1500);
            sent += 1;
        }
        assert_eq!(sent, 9);
    }
}
