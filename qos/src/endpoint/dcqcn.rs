//! DCQCN's reaction point (RP), the sender side of "Congestion Control for
//! Large-Scale RDMA Deployments" (Zhu et al., SIGCOMM 2015, section 3.1 and
//! Figure 7). Rates are in bits per second, time in nanoseconds.
//!
//! The paper's rules, as implemented here:
//! - on a CNP: "R_T = R_C; R_C = R_C (1 - alpha/2); alpha = (1 - g) alpha + g";
//!   the increase timer and byte counter restart;
//! - every K without a CNP: "alpha = (1 - g) alpha";
//! - an increase event each time the timer T expires and each B bytes sent;
//!   with T and BC the counts of those events since the last cut:
//!   fast recovery while max(T, BC) < F: "R_C = (R_T + R_C) / 2";
//!   additive increase once one of them reaches F: "R_T = R_T + R_AI", then
//!   R_C = (R_T + R_C) / 2; hyper increase once both have:
//!   "R_T = R_T + i R_HAI" with i = min(T, BC) - F + 1, then R_C = (R_T + R_C) / 2.

/// Reaction-point parameters. `Default` is the paper's (section 5 / Table of
/// parameters): g = 1/256, K = 55 us, T = 55 us, B = 10 MB, F = 5,
/// R_AI = 40 Mb/s; R_HAI = 10 x R_AI (the paper leaves it to the deployment;
/// ten times the additive step is our choice), alpha starts at 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// EWMA gain g.
    pub g: f64,
    /// Alpha update period K (ns).
    pub alpha_period_ns: u64,
    /// Rate increase timer T (ns).
    pub increase_timer_ns: u64,
    /// Byte counter B (bytes).
    pub byte_counter: u64,
    /// Fast recovery steps F.
    pub fast_recovery_steps: u32,
    /// Additive increase step R_AI (bit/s).
    pub additive_bps: u64,
    /// Hyper increase step R_HAI (bit/s).
    pub hyper_bps: u64,
    /// Floor of the current rate (bit/s), so a storm of CNPs never stops a flow.
    pub min_rate_bps: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            g: 1.0 / 256.0,
            alpha_period_ns: 55_000,
            increase_timer_ns: 55_000,
            byte_counter: 10 * 1024 * 1024,
            fast_recovery_steps: 5,
            additive_bps: 40_000_000,
            hyper_bps: 400_000_000,
            min_rate_bps: 1_000_000,
        }
    }
}

/// The line rate the paper's parameters were chosen for.
pub const PAPER_LINE_RATE_BPS: u64 = 40_000_000_000;

impl Params {
    /// The paper's parameters carried over to a link of `line_bps`: the
    /// same dynamics counted in frame times, so an emulated 100 Mb/s link
    /// behaves as the paper's 40 Gb/s one does. Periods (K, T) grow by
    /// 40G / line; the byte counter and the rate steps shrink by line / 40G;
    /// the floor stays 1 Mb/s. At 40 Gb/s this is [`Params::default`]. (The 55 us timers at 100 Mb/s
    /// would recover from a cut within a millisecond: faster than an emulated
    /// host's feedback loop, so DCQCN would never hold a queue down.)
    pub fn for_line_rate(line_bps: u64) -> Params {
        let paper = Params::default();
        let line = u128::from(line_bps.max(1));
        let longer =
            |ns: u64| (u128::from(ns) * u128::from(PAPER_LINE_RATE_BPS) / line).min(u128::from(u64::MAX)) as u64;
        let smaller = |n: u64| ((u128::from(n) * line / u128::from(PAPER_LINE_RATE_BPS)) as u64).max(1);
        Params {
            alpha_period_ns: longer(paper.alpha_period_ns),
            increase_timer_ns: longer(paper.increase_timer_ns),
            byte_counter: smaller(paper.byte_counter),
            additive_bps: smaller(paper.additive_bps),
            hyper_bps: smaller(paper.hyper_bps),
            ..paper
        }
    }
}

/// One queue pair's reaction point.
#[derive(Debug, Clone)]
pub struct ReactionPoint {
    params: Params,
    line_rate_bps: u64,
    current_bps: f64,
    target_bps: f64,
    alpha: f64,
    timer_events: u32,
    byte_events: u32,
    bytes_since_event: u64,
    next_alpha_update_ns: u64,
    next_increase_ns: u64,
    cnps: u64,
}

impl ReactionPoint {
    /// A flow starting at `line_rate_bps` (DCQCN starts at line rate) at `now_ns`.
    pub fn new(params: Params, line_rate_bps: u64, now_ns: u64) -> Self {
        ReactionPoint {
            params,
            line_rate_bps,
            current_bps: line_rate_bps as f64,
            target_bps: line_rate_bps as f64,
            alpha: 1.0,
            timer_events: 0,
            byte_events: 0,
            bytes_since_event: 0,
            next_alpha_update_ns: now_ns + params.alpha_period_ns,
            next_increase_ns: now_ns + params.increase_timer_ns,
            cnps: 0,
        }
    }

    /// The current rate R_C (bit/s) the pacer should use.
    pub fn rate_bps(&self) -> u64 {
        self.current_bps as u64
    }

    /// The target rate R_T (bit/s).
    pub fn target_bps(&self) -> u64 {
        self.target_bps as u64
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// CNPs reacted to.
    pub fn cnps(&self) -> u64 {
        self.cnps
    }

    /// A CNP arrived for this QP: cut the rate.
    pub fn on_cnp(&mut self, now_ns: u64) {
        self.advance(now_ns);
        self.cnps += 1;
        self.target_bps = self.current_bps;
        self.current_bps = (self.current_bps * (1.0 - self.alpha / 2.0)).max(self.params.min_rate_bps as f64);
        self.alpha = (1.0 - self.params.g) * self.alpha + self.params.g;
        self.timer_events = 0;
        self.byte_events = 0;
        self.bytes_since_event = 0;
        self.next_alpha_update_ns = now_ns + self.params.alpha_period_ns;
        self.next_increase_ns = now_ns + self.params.increase_timer_ns;
    }

    /// `bytes` were sent: run the byte counter.
    pub fn on_sent(&mut self, bytes: u64, now_ns: u64) {
        self.advance(now_ns);
        self.bytes_since_event += bytes;
        while self.bytes_since_event >= self.params.byte_counter {
            self.bytes_since_event -= self.params.byte_counter;
            self.byte_events = self.byte_events.saturating_add(1);
            self.increase();
        }
    }

    /// Runs the alpha and increase timers up to `now_ns`.
    pub fn advance(&mut self, now_ns: u64) {
        while now_ns >= self.next_alpha_update_ns {
            self.alpha *= 1.0 - self.params.g;
            self.next_alpha_update_ns += self.params.alpha_period_ns;
        }
        while now_ns >= self.next_increase_ns {
            self.next_increase_ns += self.params.increase_timer_ns;
            self.timer_events = self.timer_events.saturating_add(1);
            self.increase();
            // At line rate with R_T there too nothing more can change; skip idle periods.
            let at_line_rate =
                self.current_bps >= self.line_rate_bps as f64 && self.target_bps >= self.line_rate_bps as f64;
            if at_line_rate && now_ns >= self.next_increase_ns {
                let periods = (now_ns - self.next_increase_ns) / self.params.increase_timer_ns + 1;
                self.next_increase_ns += periods * self.params.increase_timer_ns;
            }
        }
    }

    fn increase(&mut self) {
        let f = self.params.fast_recovery_steps;
        let (most, least) = (self.timer_events.max(self.byte_events), self.timer_events.min(self.byte_events));
        if most < f {
            // Fast recovery: R_T unchanged.
        } else if least < f {
            self.target_bps += self.params.additive_bps as f64;
        } else {
            let i = (least - f + 1) as f64;
            self.target_bps += i * self.params.hyper_bps as f64;
        }
        let line = self.line_rate_bps as f64;
        self.target_bps = self.target_bps.min(line);
        self.current_bps = ((self.target_bps + self.current_bps) / 2.0).min(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GBPS: u64 = 1_000_000_000;

    #[test]
    fn first_cnp_halves_the_rate_since_alpha_starts_at_one() {
        let mut rp = ReactionPoint::new(Params::default(), 800_000_000, 0);
        rp.on_cnp(1_000);
        // R_C = 800M x (1 - 1/2) = 400M; alpha = (1 - 1/256) x 1 + 1/256 = 1.
        assert_eq!(rp.rate_bps(), 400_000_000);
        assert_eq!(rp.target_bps(), 800_000_000);
        assert_eq!(rp.alpha(), 1.0);
        assert_eq!(rp.cnps(), 1);
    }

    #[test]
    fn alpha_decays_by_one_minus_g_per_period_without_cnps() {
        let mut rp = ReactionPoint::new(Params::default(), GBPS, 0);
        rp.on_cnp(0);
        // 10 periods of K = 55 us: alpha = (255/256)^10 = 0.9616170...
        rp.advance(10 * 55_000);
        assert!((rp.alpha() - (255.0f64 / 256.0).powi(10)).abs() < 1e-12);
        assert!((rp.alpha() - 0.961_617_04).abs() < 1e-8);
        // A second CNP with that alpha: R_C x (1 - alpha/2).
        let before = rp.rate_bps() as f64;
        let alpha = rp.alpha();
        rp.on_cnp(10 * 55_000);
        assert!((rp.rate_bps() as f64 - before * (1.0 - alpha / 2.0)).abs() <= 1.0);
        assert!((rp.alpha() - ((1.0 - 1.0 / 256.0) * alpha + 1.0 / 256.0)).abs() < 1e-12);
    }

    #[test]
    fn fast_recovery_then_additive_then_hyper_increase() {
        let params = Params::default();
        let mut rp = ReactionPoint::new(params, 10 * GBPS, 0);
        rp.on_cnp(0); // R_C = 5G, R_T = 10G
        // Fast recovery: each timer event halves the distance to R_T.
        rp.advance(55_000);
        assert_eq!(rp.rate_bps(), 7_500_000_000);
        rp.advance(4 * 55_000);
        // After 4 timer events: 10G - 5G / 2^4 = 9.6875G, R_T still 10G.
        assert_eq!(rp.rate_bps(), 9_687_500_000);
        assert_eq!(rp.target_bps(), 10 * GBPS);

        // Additive increase: 5th timer event (T = F, BC = 0) adds R_AI to R_T.
        let mut rp = ReactionPoint::new(params, 10 * GBPS, 0);
        rp.on_cnp(0);
        rp.current_bps = 1e9;
        rp.target_bps = 2e9;
        for _ in 0..4 {
            rp.on_sent(params.byte_counter, 0); // BC = 4, fast recovery
        }
        assert_eq!(rp.target_bps(), 2 * GBPS);
        rp.on_sent(params.byte_counter, 0); // BC = 5 = F, T = 0: additive
        assert_eq!(rp.target_bps(), 2_040_000_000);
        // Hyper increase: T reaches F too (i = 1), R_T += R_HAI.
        rp.advance(5 * 55_000);
        // The first four timer events are additive (BC = 5, T < 5), the fifth hyper.
        assert_eq!(rp.target_bps(), 2_040_000_000 + 4 * 40_000_000 + 400_000_000);
    }

    #[test]
    fn parameters_scale_with_the_line_rate() {
        assert_eq!(Params::for_line_rate(PAPER_LINE_RATE_BPS), Params::default());
        // 100 Mb/s is 400 times slower: K = T = 55 us x 400 = 22 ms,
        // B = 10 MiB / 400 = 26214 B, R_AI = 40M / 400 = 100 kb/s, R_HAI = 1 Mb/s.
        let p = Params::for_line_rate(100_000_000);
        assert_eq!((p.alpha_period_ns, p.increase_timer_ns), (22_000_000, 22_000_000));
        assert_eq!((p.byte_counter, p.additive_bps, p.hyper_bps), (26_214, 100_000, 1_000_000));
        assert_eq!((p.g, p.fast_recovery_steps), (1.0 / 256.0, 5));
        assert_eq!(p.min_rate_bps, 1_000_000);
    }

    #[test]
    fn rate_never_exceeds_line_rate_nor_falls_under_the_floor() {
        let params = Params::default();
        let mut rp = ReactionPoint::new(params, GBPS, 0);
        for i in 0..1000 {
            rp.on_cnp(i);
        }
        assert_eq!(rp.rate_bps(), params.min_rate_bps);
        rp.advance(1_000_000_000);
        assert_eq!(rp.rate_bps(), GBPS);
        assert_eq!(rp.target_bps(), GBPS);
    }
}
