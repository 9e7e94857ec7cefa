//! What a run measures while it runs: each message's release and
//! completion, and a histogram of sampled queue depths.

/// One message's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageRecord {
    pub bytes: u64,
    /// When it was released to its sender (`u64::MAX`: never).
    pub released_ns: u64,
    /// When its last byte was received in order (`u64::MAX`: never).
    pub completed_ns: u64,
}

impl MessageRecord {
    pub fn new(bytes: u64) -> MessageRecord {
        MessageRecord { bytes, released_ns: u64::MAX, completed_ns: u64::MAX }
    }

    pub fn fct_ns(&self) -> Option<u64> {
        (self.completed_ns != u64::MAX).then(|| self.completed_ns - self.released_ns)
    }
}

/// Sampled queue depths in buckets of 256 bytes (one cell), up to 64 MiB.
#[derive(Debug, Clone)]
pub struct DepthHistogram {
    buckets: Vec<u64>,
    samples: u64,
    max: u32,
}

const BUCKET_BYTES: u32 = 256;

impl Default for DepthHistogram {
    fn default() -> Self {
        DepthHistogram { buckets: vec![0; 1 << 18], samples: 0, max: 0 }
    }
}

impl DepthHistogram {
    #[inline]
    pub fn add(&mut self, bytes: u32) {
        // Bucket b holds depths in ((b-1)*256, b*256]; bucket 0 empty queues.
        let bucket = (bytes.div_ceil(BUCKET_BYTES) as usize).min(self.buckets.len() - 1);
        self.buckets[bucket] += 1;
        self.samples += 1;
        self.max = self.max.max(bytes);
    }

    /// Adds another histogram's samples (a partition's, at the end of a split run).
    pub fn merge(&mut self, other: &DepthHistogram) {
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            *mine += theirs;
        }
        self.samples += other.samples;
        self.max = self.max.max(other.max);
    }

    pub fn samples(&self) -> u64 {
        self.samples
    }

    pub fn max(&self) -> u32 {
        self.max
    }

    /// The depth at or below which `fraction` of the samples lie (a bucket's
    /// upper edge, so never below the truth), bytes.
    pub fn percentile(&self, fraction: f64) -> u32 {
        if self.samples == 0 {
            return 0;
        }
        let rank = ((fraction * self.samples as f64).ceil() as u64).clamp(1, self.samples);
        let mut seen = 0;
        for (bucket, &count) in self.buckets.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return (bucket as u32 * BUCKET_BYTES).min(self.max);
            }
        }
        self.max
    }
}

/// The value at `fraction` of sorted `values` (nearest rank).
pub fn percentile_of(sorted: &[f64], fraction: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((fraction * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_bucket_upper_edges_capped_at_the_max() {
        let mut h = DepthHistogram::default();
        for _ in 0..90 {
            h.add(0);
        }
        for _ in 0..10 {
            h.add(1000);
        }
        assert_eq!(h.percentile(0.5), 0);
        assert_eq!(h.percentile(0.99), 1000);
        assert_eq!(h.max(), 1000);
        assert_eq!(percentile_of(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.0);
    }
}
