//! The sender's pacer: frames leave no faster than a rate (bits on the wire
//! per second), and not at all while the link partner pauses their priority.
//!
//! IEEE 802.1Qbb (PFC): a pause quantum is 512 bit times at the link's speed,
//! so a PFC frame with quanta q stops a priority for q x 512 / speed seconds;
//! quanta 0 resumes it at once.

use super::serialization_ns;

/// Bit times in one pause quantum (802.1Qbb / 802.3 Annex 31B).
pub const BITS_PER_QUANTUM: u64 = 512;
/// Ethernet overhead on the wire beyond the frame: preamble + SFD (8) + IFG (12).
pub const WIRE_OVERHEAD_BYTES: u64 = 20;

/// What the pacer has done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacerCounters {
    /// Frames released.
    pub frames: u64,
    /// Frame bytes released.
    pub bytes: u64,
    /// PFC frames with non-zero quanta for our priority that were obeyed.
    pub pauses_obeyed: u64,
    /// PFC frames with quanta 0 (XON) for our priority.
    pub resumes: u64,
    /// Nanoseconds a ready frame waited because of a pause.
    pub paused_ns: u64,
}

/// Paces one flow on one priority of a link.
#[derive(Debug, Clone)]
pub struct Pacer {
    link_speed_bps: u64,
    priority: u8,
    rate_bps: u64,
    next_send_ns: u64,
    paused_until_ns: u64,
    counters: PacerCounters,
}

impl Pacer {
    /// A pacer at `rate_bps` on priority `priority` (0..=7) of a link of `link_speed_bps`.
    pub fn new(link_speed_bps: u64, priority: u8, rate_bps: u64, now_ns: u64) -> Self {
        Pacer {
            link_speed_bps,
            priority: priority & 7,
            rate_bps: rate_bps.min(link_speed_bps),
            next_send_ns: now_ns,
            paused_until_ns: 0,
            counters: PacerCounters::default(),
        }
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Changes the rate (DCQCN's R_C); never above the link speed.
    pub fn set_rate_bps(&mut self, rate_bps: u64) {
        self.rate_bps = rate_bps.min(self.link_speed_bps);
    }

    pub fn counters(&self) -> PacerCounters {
        self.counters
    }

    /// Whether the priority is paused at `now_ns`.
    pub fn paused(&self, now_ns: u64) -> bool {
        now_ns < self.paused_until_ns
    }

    /// A PFC frame arrived: `quanta[p]` for each priority whose bit is set in
    /// `enable_vector`. Only our priority matters.
    pub fn on_pfc(&mut self, enable_vector: u8, quanta: &[u16; 8], now_ns: u64) {
        if enable_vector & (1 << self.priority) == 0 {
            return;
        }
        let q = quanta[self.priority as usize] as u64;
        if q == 0 {
            self.counters.resumes += 1;
            if self.paused(now_ns) {
                self.paused_until_ns = now_ns;
            }
            return;
        }
        self.counters.pauses_obeyed += 1;
        // A new pause frame replaces the running timer (802.1Qbb 36.1.3.3: the
        // timer is reloaded with the new value).
        self.paused_until_ns = now_ns + serialization_ns(q * BITS_PER_QUANTUM, self.link_speed_bps);
    }

    /// When the next frame may leave (`None` never: the rate is zero).
    pub fn next_send_ns(&self) -> Option<u64> {
        if self.rate_bps == 0 {
            return None;
        }
        Some(self.next_send_ns.max(self.paused_until_ns))
    }

    /// Whether a frame may leave at `now_ns`.
    pub fn ready(&self, now_ns: u64) -> bool {
        self.next_send_ns().is_some_and(|t| now_ns >= t)
    }

    /// A frame of `frame_bytes` (Ethernet header to FCS) left at `now_ns`:
    /// the next one may leave once its wire time at the paced rate has passed.
    pub fn on_sent(&mut self, frame_bytes: u64, now_ns: u64) {
        let start = self.next_send_ns.max(now_ns);
        // Time the frame was due by the rate but held by a pause.
        if self.paused_until_ns > self.next_send_ns {
            self.counters.paused_ns += self.paused_until_ns.min(now_ns).saturating_sub(self.next_send_ns);
        }
        self.counters.frames += 1;
        self.counters.bytes += frame_bytes;
        self.next_send_ns = start + serialization_ns((frame_bytes + WIRE_OVERHEAD_BYTES) * 8, self.rate_bps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GBPS: u64 = 1_000_000_000;

    #[test]
    fn gaps_between_frames_are_their_wire_time_at_the_paced_rate() {
        // 1500-byte frames (+20 bytes preamble/IFG) at 800 Mb/s: 1520 x 8 / 0.8 = 15.2 us.
        let mut pacer = Pacer::new(10 * GBPS, 3, 800_000_000, 0);
        assert!(pacer.ready(0));
        pacer.on_sent(1500, 0);
        assert_eq!(pacer.next_send_ns(), Some(15_200));
        assert!(!pacer.ready(15_199));
        assert!(pacer.ready(15_200));
        pacer.on_sent(1500, 15_200);
        assert_eq!(pacer.next_send_ns(), Some(30_400));
        // Late sending does not earn credit: the gap counts from the actual send.
        pacer.on_sent(1500, 100_000);
        assert_eq!(pacer.next_send_ns(), Some(115_200));
        // The rate is capped at the link's speed.
        pacer.set_rate_bps(40 * GBPS);
        assert_eq!(pacer.rate_bps(), 10 * GBPS);
    }

    #[test]
    fn a_pfc_pause_holds_the_priority_for_quanta_times_512_bit_times() {
        // 1 Gb/s link: a quantum is 512 ns; 0xffff quanta = 33.553920 ms.
        let mut pacer = Pacer::new(GBPS, 3, 500_000_000, 0);
        let mut quanta = [0u16; 8];
        quanta[3] = 0xffff;
        pacer.on_pfc(1 << 3, &quanta, 1_000);
        assert!(pacer.paused(1_000));
        assert_eq!(pacer.next_send_ns(), Some(1_000 + 33_553_920));
        assert!(!pacer.ready(33_554_919));
        assert!(pacer.ready(33_554_920));
        pacer.on_sent(1000, 33_554_920);
        let c = pacer.counters();
        assert_eq!(c.pauses_obeyed, 1);
        // Due at 0, held until 33_554_920.
        assert_eq!(c.paused_ns, 33_554_920);
    }

    #[test]
    fn other_priorities_and_xon_are_honoured() {
        let mut pacer = Pacer::new(GBPS, 3, GBPS, 0);
        let mut quanta = [0u16; 8];
        quanta[4] = 100;
        quanta[3] = 100;
        // Priority 3's bit is clear: not for us even though its quanta is set.
        pacer.on_pfc(1 << 4, &quanta, 0);
        assert!(pacer.ready(0));
        assert_eq!(pacer.counters().pauses_obeyed, 0);
        // Paused for 100 x 512 ns = 51.2 us, then XON at 10 us resumes at once.
        pacer.on_pfc(1 << 3, &quanta, 0);
        assert_eq!(pacer.next_send_ns(), Some(51_200));
        pacer.on_pfc(1 << 3, &[0; 8], 10_000);
        assert!(pacer.ready(10_000));
        assert_eq!(pacer.counters().resumes, 1);
        pacer.on_sent(64, 10_000);
        assert_eq!(pacer.counters().paused_ns, 10_000);
    }
}
