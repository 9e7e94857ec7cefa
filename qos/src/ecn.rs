//! WRED and ECN marking on egress queue depth (SAI's WRED object; DCQCN's
//! congestion point).
//!
//! With the instantaneous queue depth q (bytes, before the frame joins it):
//!
//! ```text
//!           0                                   q <= Kmin
//!   p(q) =  Pmax x (q - Kmin) / (Kmax - Kmin)   Kmin < q <= Kmax
//!           1                                   q > Kmax
//! ```
//!
//! An ECN-capable frame (ECT(0), ECT(1), CE) chosen with probability p is
//! marked CE; a frame that is not ECN-capable is dropped with probability p
//! or passed, as the profile's `non_ect` says. A profile with marking off is
//! plain WRED: every chosen frame is dropped.
//!
//! DCQCN's evaluation (Zhu et al., SIGCOMM 2015) used Kmin = 5 KB,
//! Kmax = 200 KB, Pmax = 1% at 40 Gb/s; [`WredProfile::dcqcn`] scales both
//! thresholds with the port's speed, never below one and four MTUs so a
//! slow port does not mark every frame behind a single other one.

use serde::{Deserialize, Serialize};

/// Probabilities are fixed point over this scale (2^16 = 100%).
pub const PROBABILITY_ONE: u32 = 1 << 16;

/// What happens to a chosen frame that is not ECN-capable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NonEct {
    /// Dropped (WRED for non-ECT traffic; SAI's default).
    #[default]
    Drop,
    /// Passed unmarked.
    Pass,
}

/// A WRED/ECN profile of a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct WredProfile {
    pub kmin_bytes: u32,
    pub kmax_bytes: u32,
    /// Marking probability at Kmax, percent (0..=100).
    pub pmax_percent: u8,
    /// Mark ECN-capable frames CE instead of dropping them.
    #[serde(default = "yes")]
    pub ecn: bool,
    #[serde(default)]
    pub non_ect: NonEct,
}

fn yes() -> bool {
    true
}

/// DCQCN's reference profile and the speed it was set for.
const DCQCN_KMIN: u64 = 5_000;
const DCQCN_KMAX: u64 = 200_000;
const DCQCN_SPEED: u64 = 40_000_000_000;

impl WredProfile {
    /// DCQCN's profile (5 KB / 200 KB / 1% at 40 Gb/s) scaled to
    /// `speed_bps`: Kmin at least one MTU, Kmax at least four.
    pub fn dcqcn(speed_bps: u64, mtu: u32) -> WredProfile {
        let scale = |bytes: u64| (u128::from(bytes) * u128::from(speed_bps) / u128::from(DCQCN_SPEED)) as u64;
        let kmin = scale(DCQCN_KMIN).max(u64::from(mtu));
        let kmax = scale(DCQCN_KMAX).max(4 * u64::from(mtu)).max(kmin + 1);
        WredProfile {
            kmin_bytes: kmin.min(u64::from(u32::MAX)) as u32,
            kmax_bytes: kmax.min(u64::from(u32::MAX)) as u32,
            pmax_percent: 1,
            ecn: true,
            non_ect: NonEct::Pass,
        }
    }

    /// p(q) in units of [`PROBABILITY_ONE`].
    #[inline]
    pub fn probability(&self, depth_bytes: u32) -> u32 {
        if depth_bytes <= self.kmin_bytes {
            0
        } else if depth_bytes > self.kmax_bytes {
            PROBABILITY_ONE
        } else {
            let span = u64::from(self.kmax_bytes - self.kmin_bytes).max(1);
            let pmax = u64::from(self.pmax_percent.min(100)) * u64::from(PROBABILITY_ONE) / 100;
            (pmax * u64::from(depth_bytes - self.kmin_bytes) / span) as u32
        }
    }

    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.kmin_bytes >= self.kmax_bytes {
            return Err(("kmin-bytes", format!("{} is not below kmax-bytes {}", self.kmin_bytes, self.kmax_bytes)));
        }
        if self.pmax_percent > 100 {
            return Err(("pmax-percent", format!("{} is above 100", self.pmax_percent)));
        }
        Ok(())
    }
}

/// What the congestion point decided for one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcnVerdict {
    Pass,
    MarkCe,
    Drop,
}

/// Applies a profile with a random draw.
#[inline]
pub fn decide(profile: &WredProfile, depth_bytes: u32, ecn_capable: bool, rng: &mut SplitMix64) -> EcnVerdict {
    let p = profile.probability(depth_bytes);
    if p == 0 {
        return EcnVerdict::Pass;
    }
    let chosen = p >= PROBABILITY_ONE || rng.below_one(p);
    match (chosen, profile.ecn && ecn_capable, profile.non_ect) {
        (false, _, _) => EcnVerdict::Pass,
        (true, true, _) => EcnVerdict::MarkCe,
        (true, false, NonEct::Pass) if profile.ecn => EcnVerdict::Pass,
        (true, false, _) => EcnVerdict::Drop,
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny seeded generator, so a run
/// of the simulator marks the same frames every time.
#[derive(Debug, Clone, Copy)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `p / PROBABILITY_ONE`.
    #[inline]
    pub fn below_one(&mut self, p: u32) -> bool {
        ((self.next_u64() >> 48) as u32) < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marking_probability_worked_numbers() {
        // Kmin 5 KB, Kmax 200 KB, Pmax 1%: half way (102.5 KB) is 0.5%.
        let profile =
            WredProfile { kmin_bytes: 5_000, kmax_bytes: 200_000, pmax_percent: 1, ecn: true, non_ect: NonEct::Drop };
        assert_eq!(profile.probability(5_000), 0);
        assert_eq!(profile.probability(102_500), 327); // 0.5% of 65536 = 327.68
        assert_eq!(profile.probability(200_000), 655); // 1% = 655.36
        assert_eq!(profile.probability(200_001), PROBABILITY_ONE);
    }

    #[test]
    fn dcqcn_profile_scales_with_speed() {
        let p100 = WredProfile::dcqcn(100_000_000_000, 1500);
        assert_eq!((p100.kmin_bytes, p100.kmax_bytes, p100.pmax_percent), (12_500, 500_000, 1));
        let p40 = WredProfile::dcqcn(40_000_000_000, 1500);
        assert_eq!((p40.kmin_bytes, p40.kmax_bytes), (5_000, 200_000));
        // 1 Gb/s scales to 125 B / 5 KB: floored at one and four MTUs.
        let p1 = WredProfile::dcqcn(1_000_000_000, 1500);
        assert_eq!((p1.kmin_bytes, p1.kmax_bytes), (1_500, 6_000));
    }

    #[test]
    fn marked_fraction_matches_the_probability() {
        // Pmax 20% at the midpoint: 10% of ECT frames marked, non-ECT passed or dropped as configured.
        let mut profile =
            WredProfile { kmin_bytes: 0, kmax_bytes: 100_000, pmax_percent: 20, ecn: true, non_ect: NonEct::Pass };
        let mut rng = SplitMix64::new(7);
        let marked = (0..100_000).filter(|_| decide(&profile, 50_000, true, &mut rng) == EcnVerdict::MarkCe).count();
        assert!((9_500..10_500).contains(&marked), "{marked}");
        assert!((0..1000).all(|_| decide(&profile, 50_000, false, &mut rng) == EcnVerdict::Pass));
        profile.non_ect = NonEct::Drop;
        let dropped = (0..100_000).filter(|_| decide(&profile, 50_000, false, &mut rng) == EcnVerdict::Drop).count();
        assert!((9_500..10_500).contains(&dropped), "{dropped}");
        // Above Kmax everything is marked; plain WRED drops ECT frames too.
        assert_eq!(decide(&profile, 100_001, true, &mut rng), EcnVerdict::MarkCe);
        profile.ecn = false;
        assert_eq!(decide(&profile, 100_001, true, &mut rng), EcnVerdict::Drop);
    }

    #[test]
    fn the_generator_is_deterministic() {
        let (mut a, mut b) = (SplitMix64::new(42), SplitMix64::new(42));
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
        // Known first output of SplitMix64 seeded with 0.
        assert_eq!(SplitMix64::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn validation_names_the_field() {
        let profile = WredProfile { kmin_bytes: 10, kmax_bytes: 10, pmax_percent: 1, ecn: true, non_ect: NonEct::Drop };
        assert_eq!(profile.validate().unwrap_err().0, "kmin-bytes");
    }
}
