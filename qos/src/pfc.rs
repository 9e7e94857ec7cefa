//! Priority-based flow control, IEEE 802.1Qbb.
//!
//! **Sending** ([`PfcSender`]): when an ingress PG of a port goes into XOFF
//! (see [`crate::buffer`]), the port sends a PFC frame naming the
//! priorities of that PG (class-enable vector) with the configured pause
//! quanta; while the PG stays in XOFF the frame is sent again once half the
//! pause time has passed, so the peer never resumes early; when the PG
//! returns to XON a frame with quanta 0 for those priorities resumes the
//! peer at once.
//!
//! **Receiving** ([`PfcReceiver`]): a PFC frame stops each priority whose
//! class-enable bit is set for `quanta x 512` bit times at the port's speed
//! (802.1Qbb clause 36.1.3.2; a quantum is 512 bit times as for 802.3x
//! PAUSE), counted from its arrival; a later frame replaces the time left,
//! quanta 0 resumes at once. Paused time is accounted per priority.

use serde::{Deserialize, Serialize};

use crate::classify::CLASSES;

/// Bit times in one pause quantum.
pub const BITS_PER_QUANTUM: u64 = 512;

/// How long `quanta` stop a priority on a port of `speed_bps`.
#[inline]
pub fn quanta_ns(quanta: u16, speed_bps: u64) -> u64 {
    let bits = u128::from(quanta) * u128::from(BITS_PER_QUANTUM);
    (bits * 1_000_000_000).div_ceil(u128::from(speed_bps.max(1))) as u64
}

/// PFC configuration of the switch (SONiC's `pfc_enable` and the pause
/// time the ASIC puts in its frames).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct PfcConfig {
    /// Priorities PFC is enabled on (both directions).
    pub priorities: Vec<u8>,
    /// Pause quanta in the XOFF frames we send.
    pub quanta: u16,
    /// The peer's time to act on our PFC frame, ns (for the headroom).
    pub response_ns: u64,
    /// The longest a received frame waits in the switch's own receive path
    /// before the traffic manager charges it, ns (for the headroom): 0 on
    /// an ASIC, whose buffer accounting sees a frame as it lands; in a
    /// software switch, the lag of its thread behind the port's rx ring.
    pub rx_lag_ns: u64,
}

impl Default for PfcConfig {
    /// PFC off; 0xffff quanta, a 1 us response time and no receive lag
    /// when turned on.
    fn default() -> PfcConfig {
        PfcConfig { priorities: Vec::new(), quanta: 0xffff, response_ns: 1_000, rx_lag_ns: 0 }
    }
}

impl PfcConfig {
    /// The enabled priorities as a class-enable vector.
    pub fn enabled_mask(&self) -> u8 {
        self.priorities.iter().filter(|&&p| usize::from(p) < CLASSES).fold(0, |m, &p| m | 1 << p)
    }
}

/// A PFC frame to send (or one received), decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PfcFrame {
    /// Bit p set: `quanta[p]` applies to priority p.
    pub class_enable: u8,
    pub quanta: [u16; CLASSES],
}

/// Per-port, per-priority PFC counters (SONiC `show pfc counters`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PfcCounters {
    pub rx_frames: [u64; CLASSES],
    pub tx_frames: [u64; CLASSES],
    /// Time each priority of our transmit side spent paused by the peer, ns
    /// (closed pauses only; [`PfcReceiver::paused_ns`] adds the open one).
    pub rx_paused_ns: [u64; CLASSES],
}

/// The PFC frames one port owes its peer.
#[derive(Debug, Clone, Copy, Default)]
pub struct PfcSender {
    /// Priorities we hold in XOFF.
    asserted: u8,
    /// Priorities whose state must go out in the next frame.
    pending: u8,
    /// When each asserted priority was last sent with non-zero quanta.
    sent_at: [u64; CLASSES],
}

impl PfcSender {
    /// Holds `priorities` paused (a PG went into XOFF).
    pub fn xoff(&mut self, priorities: u8) {
        self.pending |= priorities & !self.asserted;
        self.asserted |= priorities;
    }

    /// Resumes `priorities` (their PG returned to XON).
    pub fn xon(&mut self, priorities: u8) {
        self.pending |= priorities & self.asserted;
        self.asserted &= !priorities;
    }

    pub fn asserted(&self) -> u8 {
        self.asserted
    }

    /// Marks asserted priorities whose pause is half gone as due again.
    pub fn refresh(&mut self, now: u64, refresh_ns: u64) {
        for p in 0..CLASSES {
            if self.asserted & (1 << p) != 0 && now >= self.sent_at[p].saturating_add(refresh_ns) {
                self.pending |= 1 << p;
            }
        }
    }

    /// When the next refresh falls due, if anything is asserted.
    pub fn next_refresh(&self, refresh_ns: u64) -> Option<u64> {
        (0..CLASSES)
            .filter(|&p| self.asserted & (1 << p) != 0)
            .map(|p| self.sent_at[p].saturating_add(refresh_ns))
            .min()
    }

    pub fn has_pending(&self) -> bool {
        self.pending != 0
    }

    /// The frame to send now, if one is due.
    pub fn take(&mut self, now: u64, quanta: u16, counters: &mut PfcCounters) -> Option<PfcFrame> {
        if self.pending == 0 {
            return None;
        }
        let mut frame = PfcFrame { class_enable: self.pending, quanta: [0; CLASSES] };
        for p in 0..CLASSES {
            if self.pending & (1 << p) != 0 {
                counters.tx_frames[p] += 1;
                if self.asserted & (1 << p) != 0 {
                    frame.quanta[p] = quanta;
                    self.sent_at[p] = now;
                }
            }
        }
        self.pending = 0;
        Some(frame)
    }
}

/// Which priorities of one port's transmit side the peer pauses.
#[derive(Debug, Clone, Copy, Default)]
pub struct PfcReceiver {
    since: [u64; CLASSES],
    until: [u64; CLASSES],
    /// The latest `until` of any priority: nothing is paused at or after it.
    any_until: u64,
    /// When a frame with non-zero quanta last arrived, per priority.
    last_pause_at: [u64; CLASSES],
}

impl PfcReceiver {
    /// Applies a received PFC frame at `now` on a port of `speed_bps`.
    pub fn receive(&mut self, now: u64, frame: &PfcFrame, speed_bps: u64, counters: &mut PfcCounters) {
        for p in 0..CLASSES {
            if frame.class_enable & (1 << p) == 0 {
                continue;
            }
            counters.rx_frames[p] += 1;
            let active = self.until[p] > now;
            if !active {
                // Close the previous pause and start afresh.
                counters.rx_paused_ns[p] += self.until[p] - self.since[p];
                self.since[p] = now;
                self.until[p] = now;
            }
            if frame.quanta[p] == 0 {
                counters.rx_paused_ns[p] += now - self.since[p];
                self.since[p] = now;
                self.until[p] = now;
            } else {
                self.until[p] = now + quanta_ns(frame.quanta[p], speed_bps);
                self.last_pause_at[p] = now;
            }
        }
        self.any_until = self.until.iter().copied().max().unwrap_or(0);
    }

    /// Priorities paused at `now`.
    #[inline]
    pub fn paused(&self, now: u64) -> u8 {
        if now >= self.any_until {
            return 0;
        }
        (0..CLASSES).filter(|&p| self.until[p] > now).fold(0, |m, p| m | 1 << p)
    }

    /// When priority `p`'s pause ends.
    pub fn until(&self, p: usize) -> u64 {
        self.until[p]
    }

    /// When priority `p`'s current pause began.
    pub fn since(&self, p: usize) -> u64 {
        self.since[p]
    }

    /// When the latest pause (non-zero quanta) for `p` arrived.
    pub fn last_pause_at(&self, p: usize) -> u64 {
        self.last_pause_at[p]
    }

    /// Takes over `old`, the receiver of the same port in a traffic manager
    /// this one replaces, at `now`, for the `carried` priorities (those PFC
    /// still enables): a pause the peer sent keeps its remaining quanta,
    /// which are bit times, so the time left is counted again at the
    /// port's new speed. A priority not carried is no longer paused: its
    /// pause ends at `now`, its time closed into `counters` (the new
    /// traffic manager's, holding the old one's already).
    pub fn carry_from(
        &mut self,
        now: u64,
        old: &PfcReceiver,
        (old_speed_bps, new_speed_bps): (u64, u64),
        carried: u8,
        counters: &mut PfcCounters,
    ) {
        self.last_pause_at = old.last_pause_at;
        for p in 0..CLASSES {
            if carried & (1 << p) == 0 {
                counters.rx_paused_ns[p] += old.until[p].min(now).saturating_sub(old.since[p]);
                (self.since[p], self.until[p]) = (now, now);
                continue;
            }
            self.since[p] = old.since[p];
            self.until[p] = match old.until[p].checked_sub(now) {
                Some(left) if left > 0 && new_speed_bps > 0 => {
                    let left = u128::from(left) * u128::from(old_speed_bps) / u128::from(new_speed_bps);
                    now.saturating_add(u64::try_from(left).unwrap_or(u64::MAX))
                }
                _ => old.until[p],
            };
        }
        self.any_until = self.until.iter().copied().max().unwrap_or(0);
    }

    /// Total time `p` has been paused by `now`.
    pub fn paused_ns(&self, now: u64, p: usize, counters: &PfcCounters) -> u64 {
        counters.rx_paused_ns[p] + self.until[p].min(now).saturating_sub(self.since[p])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quanta_worked_numbers() {
        // 0xffff x 512 bits at 100 Gb/s = 335.54 us; at 1 Gb/s = 33.55 ms.
        assert_eq!(quanta_ns(0xffff, 100_000_000_000), 335_540);
        assert_eq!(quanta_ns(0xffff, 1_000_000_000), 33_553_920);
        assert_eq!(quanta_ns(1, 10_000_000_000), 52); // 51.2 ns, rounded up
        assert_eq!(quanta_ns(0, 1), 0);
    }

    #[test]
    fn sender_xoff_refresh_xon() {
        let mut sender = PfcSender::default();
        let mut counters = PfcCounters::default();
        assert_eq!(sender.take(0, 0xffff, &mut counters), None);
        sender.xoff(0b0001_1000);
        let frame = sender.take(100, 0xffff, &mut counters).unwrap();
        assert_eq!(frame.class_enable, 0b0001_1000);
        assert_eq!(frame.quanta, [0, 0, 0, 0xffff, 0xffff, 0, 0, 0]);
        // Nothing more until half the pause has passed.
        sender.refresh(1_000, 16_000_000);
        assert!(!sender.has_pending());
        assert_eq!(sender.next_refresh(16_000_000), Some(16_000_100));
        sender.refresh(16_000_100, 16_000_000);
        let refreshed = sender.take(16_000_100, 0xffff, &mut counters).unwrap();
        assert_eq!(refreshed.class_enable, 0b0001_1000);
        // XON for priority 3 only: quanta 0.
        sender.xon(0b0000_1000);
        let resume = sender.take(16_500_000, 0xffff, &mut counters).unwrap();
        assert_eq!(resume, PfcFrame { class_enable: 0b0000_1000, quanta: [0; CLASSES] });
        assert_eq!(counters.tx_frames[3], 3);
        assert_eq!(counters.tx_frames[4], 2);
        // XON of a priority that is not asserted sends nothing.
        sender.xon(0b1000_0000);
        assert!(!sender.has_pending());
    }

    #[test]
    fn receiver_pauses_for_quanta_and_accounts_time() {
        let mut receiver = PfcReceiver::default();
        let mut counters = PfcCounters::default();
        let speed = 1_000_000_000;
        let mut frame = PfcFrame { class_enable: 0b1000, quanta: [0; CLASSES] };
        frame.quanta[3] = 1000; // 512 us at 1 Gb/s
        receiver.receive(1_000, &frame, speed, &mut counters);
        assert_eq!(receiver.paused(1_000), 0b1000);
        assert_eq!(receiver.paused(513_000 - 1), 0b1000);
        assert_eq!(receiver.paused(513_000), 0);
        assert_eq!(receiver.paused_ns(600_000, 3, &counters), 512_000);
        // A second pause later, cut short by XON after 100 us.
        receiver.receive(1_000_000, &frame, speed, &mut counters);
        frame.quanta[3] = 0;
        receiver.receive(1_100_000, &frame, speed, &mut counters);
        assert_eq!(receiver.paused(1_100_000), 0);
        assert_eq!(receiver.paused_ns(2_000_000, 3, &counters), 612_000);
        assert_eq!(counters.rx_frames[3], 3);
        assert_eq!(receiver.last_pause_at(3), 1_000_000);
        // A refresh before expiry extends the same pause.
        frame.quanta[3] = 1000;
        receiver.receive(3_000_000, &frame, speed, &mut counters);
        receiver.receive(3_400_000, &frame, speed, &mut counters);
        assert_eq!(receiver.since(3), 3_000_000);
        assert_eq!(receiver.until(3), 3_912_000);
        assert_eq!(receiver.paused_ns(5_000_000, 3, &counters), 612_000 + 912_000);
    }

    #[test]
    fn enabled_mask_ignores_out_of_range() {
        let config = PfcConfig { priorities: vec![3, 4, 9], ..PfcConfig::default() };
        assert_eq!(config.enabled_mask(), 0b0001_1000);
    }
}
