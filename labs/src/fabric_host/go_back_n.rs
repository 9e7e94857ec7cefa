//! Reliable delivery for `fabric-host send|recv`, sans-IO: RC's go-back-N
//! (IBA Vol 1, 9.7 "Reliable service"), the way a RoCE NIC recovers what a
//! lossless fabric still loses (here: frames the kernel drops when a
//! switch's or host's `AF_PACKET` ring is full while its reader waits for a
//! CPU, before any traffic manager or PFC sees them).
//!
//! - [`Requester`]: the sender's window. It sends PSNs in order, at most
//!   `window` beyond the last acknowledged one; an ACK moves the window, a
//!   NAK (PSN sequence error) sends everything again from the PSN it names
//!   (9.7.5.1.2), and a retransmission timer does the same from the oldest
//!   unacknowledged PSN when nothing is acknowledged for a while (9.7.6.1.3;
//!   it backs off, doubling, up to a limit).
//! - [`Responder`]: when the receiver answers. A coalesced ACK of the last
//!   PSN delivered in order (every `ack_every` packets, at the end of a
//!   message, or once `ack_delay_ns` passed), one NAK per sequence error
//!   (repeated only if the hole stays open a NAK interval: the NAK itself
//!   may be lost), and a fresh ACK for a duplicate (the sender retransmits
//!   because it missed the ACK).
//!
//! The acknowledgement is an RC Acknowledge packet (opcode 0x11): a BTH
//! whose PSN is the one acknowledged (ACK) or expected (NAK), then the
//! AETH (9.3.5): the syndrome byte and the 24-bit MSN.
//!
//! Packets are numbered from 0 in a `u64` here and carried modulo 2^24 on
//! the wire; the window stays far below 2^23, so a 24-bit PSN maps back to
//! the one packet it can mean.

use qos::endpoint::bth::PSN_MODULUS;

/// BTH opcode of an RC Acknowledge packet (IBA Vol 1, Table 38).
pub const ACKNOWLEDGE_OPCODE: u8 = 0x11;

/// The ACK Extended Transport Header (IBA Vol 1, 9.3.5): offsets named once.
mod field {
    pub const SYNDROME: usize = 0;
    pub const MSN: core::ops::Range<usize> = 1..4;
}
/// Length of the AETH.
pub const AETH_LEN: usize = 4;

/// What an RC Acknowledge says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ack {
    /// Every PSN up to and including this one arrived in order.
    Ack { psn: u32 },
    /// PSN sequence error: this PSN is the one expected; send again from it.
    Nak { psn: u32 },
}

impl Ack {
    /// Syndrome bits 6:5 (Table 44): 00 ACK, 11 NAK; a NAK's low five bits
    /// say which (0: PSN sequence error). Bits 4:0 of an ACK carry credits;
    /// 0b11111 is "no credit limit".
    const ACK_SYNDROME: u8 = 0b0001_1111;
    const NAK_SEQUENCE_ERROR: u8 = 0b0110_0000;

    pub fn psn(self) -> u32 {
        match self {
            Ack::Ack { psn } | Ack::Nak { psn } => psn,
        }
    }

    /// Writes the AETH (MSN 0: the sender here keys on PSNs only).
    pub fn emit_aeth(self, aeth: &mut [u8]) {
        aeth[field::SYNDROME] = match self {
            Ack::Ack { .. } => Self::ACK_SYNDROME,
            Ack::Nak { .. } => Self::NAK_SEQUENCE_ERROR,
        };
        aeth[field::MSN].fill(0);
    }

    /// Reads an AETH that followed a BTH of opcode 0x11 carrying `psn`.
    pub fn parse(psn: u32, aeth: &[u8]) -> Option<Ack> {
        let syndrome = *aeth.get(field::SYNDROME)?;
        match syndrome >> 5 & 0b11 {
            0b00 => Some(Ack::Ack { psn }),
            0b11 if syndrome & 0b1_1111 == 0 => Some(Ack::Nak { psn }),
            _ => None,
        }
    }
}

/// The packet number `psn` stands for, near `base` (at most 2^23 ahead or behind).
fn unwrap_psn(base: u64, psn: u32) -> Option<u64> {
    let base_psn = (base % u64::from(PSN_MODULUS)) as u32;
    let ahead = psn.wrapping_sub(base_psn) & (PSN_MODULUS - 1);
    if ahead < PSN_MODULUS / 2 {
        Some(base + u64::from(ahead))
    } else {
        base.checked_sub(u64::from(PSN_MODULUS - ahead))
    }
}

/// The PSN carried for packet `index`.
pub fn psn_of(index: u64) -> u32 {
    (index % u64::from(PSN_MODULUS)) as u32
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RequesterCounters {
    /// Packets sent again (after a NAK or a timeout).
    pub retransmitted: u64,
    pub acks_received: u64,
    pub naks_received: u64,
    /// Retransmission timer expiries.
    pub timeouts: u64,
}

/// The sending side of one QP: which packet goes next.
#[derive(Debug, Clone)]
pub struct Requester {
    total: u64,
    window: u64,
    /// Every packet below this is acknowledged.
    acked: u64,
    /// The next packet to put on the wire.
    next: u64,
    /// One past the highest packet ever sent.
    high: u64,
    rto_ns: u64,
    max_rto_ns: u64,
    /// The timer's current value (doubled by each expiry without progress).
    backoff_ns: u64,
    /// When the timer was last restarted (progress, or a go-back).
    timer_start_ns: u64,
    /// The last NAK acted on: (packet, when), so its repeats within the
    /// timer do not each rewind the window.
    last_nak: Option<(u64, u64)>,
    counters: RequesterCounters,
}

impl Requester {
    /// `total` packets, at most `window` of them unacknowledged, the timer
    /// at `rto_ns` (doubling up to `max_rto_ns`).
    pub fn new(total: u64, window: u64, rto_ns: u64, max_rto_ns: u64, now_ns: u64) -> Requester {
        assert!(window > 0 && window < u64::from(PSN_MODULUS / 2), "window out of range");
        Requester {
            total,
            window,
            acked: 0,
            next: 0,
            high: 0,
            rto_ns,
            max_rto_ns: max_rto_ns.max(rto_ns),
            backoff_ns: rto_ns,
            timer_start_ns: now_ns,
            last_nak: None,
            counters: RequesterCounters::default(),
        }
    }

    pub fn counters(&self) -> RequesterCounters {
        self.counters
    }

    /// Packets acknowledged.
    pub fn acked(&self) -> u64 {
        self.acked
    }

    /// Every packet acknowledged.
    pub fn done(&self) -> bool {
        self.acked == self.total
    }

    /// The packet to send now, if the window allows one.
    pub fn next_packet(&self) -> Option<u64> {
        (self.next < self.total && self.next < self.acked + self.window).then_some(self.next)
    }

    /// Packet `index` (the one `next_packet` gave) went out.
    pub fn on_sent(&mut self, index: u64, now_ns: u64) {
        if index < self.high {
            self.counters.retransmitted += 1;
        }
        if self.acked == self.high {
            // Nothing was outstanding: the timer starts now.
            self.timer_start_ns = now_ns;
        }
        self.next = index + 1;
        self.high = self.high.max(self.next);
    }

    /// An acknowledgement for this QP arrived.
    pub fn on_ack(&mut self, ack: Ack, now_ns: u64) {
        let Some(index) = unwrap_psn(self.acked, ack.psn()) else { return };
        match ack {
            Ack::Ack { .. } => {
                self.counters.acks_received += 1;
                self.advance_to(index + 1, now_ns);
            }
            Ack::Nak { .. } => {
                self.counters.naks_received += 1;
                self.advance_to(index, now_ns);
                let repeated = self
                    .last_nak
                    .is_some_and(|(at, when)| at == index && now_ns.saturating_sub(when) < self.backoff_ns);
                if index < self.high && !repeated {
                    self.last_nak = Some((index, now_ns));
                    self.next = index;
                    self.timer_start_ns = now_ns;
                }
            }
        }
    }

    fn advance_to(&mut self, acked: u64, now_ns: u64) {
        if acked > self.acked && acked <= self.high {
            self.acked = acked;
            self.next = self.next.max(acked);
            self.backoff_ns = self.rto_ns;
            self.timer_start_ns = now_ns;
        }
    }

    /// When the retransmission timer expires (something is outstanding).
    pub fn timer_due_ns(&self) -> Option<u64> {
        (self.acked < self.high).then(|| self.timer_start_ns + self.backoff_ns)
    }

    /// Runs the timer: on expiry, send again from the oldest unacknowledged packet.
    pub fn poll(&mut self, now_ns: u64) {
        if self.timer_due_ns().is_some_and(|due| now_ns >= due) {
            self.counters.timeouts += 1;
            self.next = self.acked;
            self.backoff_ns = (self.backoff_ns * 2).min(self.max_rto_ns);
            self.timer_start_ns = now_ns;
        }
    }
}

/// The receiving side of one QP: when to acknowledge.
#[derive(Debug, Clone)]
pub struct Responder {
    ack_every: u32,
    ack_delay_ns: u64,
    nak_interval_ns: u64,
    /// The expected PSN when the last ACK went out.
    acked_expected: u32,
    last_ack_ns: u64,
    /// The hole a NAK was sent for: (expected PSN, when).
    nak: Option<(u32, u64)>,
    /// A duplicate arrived since the last ACK.
    duplicate: bool,
    pub acks_sent: u64,
    pub naks_sent: u64,
}

/// What the receiver knows of one QP after its arrivals so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpState {
    /// The next PSN it waits for.
    pub expected_psn: u32,
    /// Packets are held beyond a hole.
    pub hole: bool,
    /// A message was completed since the last acknowledgement.
    pub message_completed: bool,
}

impl Responder {
    pub fn new(ack_every: u32, ack_delay_ns: u64, nak_interval_ns: u64) -> Responder {
        Responder {
            ack_every: ack_every.max(1),
            ack_delay_ns,
            nak_interval_ns,
            acked_expected: 0,
            last_ack_ns: 0,
            nak: None,
            duplicate: false,
            acks_sent: 0,
            naks_sent: 0,
        }
    }

    /// A packet already delivered (or held) arrived again.
    pub fn on_duplicate(&mut self) {
        self.duplicate = true;
    }

    /// The acknowledgement to send now, if any. Call after each batch of
    /// arrivals and on a timer.
    pub fn poll(&mut self, state: QpState, now_ns: u64) -> Option<Ack> {
        let expected = state.expected_psn;
        if self.nak.is_some_and(|(hole, _)| hole != expected) {
            self.nak = None;
        }
        if state.hole && self.nak.is_none_or(|(_, sent)| now_ns.saturating_sub(sent) >= self.nak_interval_ns) {
            self.nak = Some((expected, now_ns));
            self.naks_sent += 1;
            self.mark_acked(expected, now_ns);
            return Some(Ack::Nak { psn: expected });
        }
        let unacked = expected.wrapping_sub(self.acked_expected) & (PSN_MODULUS - 1);
        let due = self.duplicate
            || unacked >= self.ack_every
            || (unacked > 0
                && (state.message_completed || now_ns.saturating_sub(self.last_ack_ns) >= self.ack_delay_ns));
        if !due || (unacked == 0 && expected == 0) {
            self.duplicate = false;
            return None;
        }
        self.acks_sent += 1;
        self.mark_acked(expected, now_ns);
        Some(Ack::Ack { psn: expected.wrapping_sub(1) & (PSN_MODULUS - 1) })
    }

    fn mark_acked(&mut self, expected: u32, now_ns: u64) {
        self.acked_expected = expected;
        self.last_ack_ns = now_ns;
        self.duplicate = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A lossy wire between a requester and an in-order receiver: every
    /// packet is delivered in the end, after NAKs and (for a lost tail) the timer.
    #[test]
    fn every_packet_arrives_despite_losses() {
        let total = 1000;
        let mut requester = Requester::new(total, 64, 20 * MS, 160 * MS, 0);
        let mut responder = Responder::new(8, MS, 10 * MS);
        let mut expected = 0u64;
        let mut delivered = 0u64;
        let mut sent = 0u64;
        let mut tail_tries = 0;
        let mut now = 0;
        while !requester.done() {
            now += 10_000;
            assert!(now < 60_000 * MS, "stuck at {} acked", requester.acked());
            let mut hole = false;
            while let Some(index) = requester.next_packet() {
                requester.on_sent(index, now);
                sent += 1;
                // Lose every 97th transmission, and the last packet's first
                // two copies (nothing follows it: no NAK, only the timer).
                if index == total - 1 {
                    tail_tries += 1;
                }
                if sent.is_multiple_of(97) || (index == total - 1 && tail_tries <= 2) {
                    continue;
                }
                match index.cmp(&expected) {
                    std::cmp::Ordering::Equal => {
                        expected += 1;
                        delivered += 1;
                    }
                    std::cmp::Ordering::Less => responder.on_duplicate(),
                    std::cmp::Ordering::Greater => hole = true,
                }
            }
            let state = QpState { expected_psn: psn_of(expected), hole, message_completed: expected == total };
            if let Some(ack) = responder.poll(state, now) {
                requester.on_ack(ack, now);
            }
            requester.poll(now);
        }
        assert_eq!(delivered, total);
        let counters = requester.counters();
        assert!(counters.naks_received > 0 && counters.retransmitted > 0, "{counters:?}");
        assert!(counters.timeouts > 0, "the lost tail needs the timer: {counters:?}");
    }

    #[test]
    fn the_window_bounds_what_is_outstanding() {
        let mut requester = Requester::new(100, 4, 10 * MS, 10 * MS, 0);
        for i in 0..4 {
            assert_eq!(requester.next_packet(), Some(i));
            requester.on_sent(i, 0);
        }
        assert_eq!(requester.next_packet(), None, "window full");
        requester.on_ack(Ack::Ack { psn: 1 }, MS);
        assert_eq!(requester.next_packet(), Some(4));
        // A NAK for 2 rewinds once; its repeat within the timer does not.
        requester.on_sent(4, MS);
        requester.on_ack(Ack::Nak { psn: 2 }, 2 * MS);
        assert_eq!(requester.next_packet(), Some(2));
        requester.on_sent(2, 2 * MS);
        requester.on_ack(Ack::Nak { psn: 2 }, 3 * MS);
        assert_eq!(requester.next_packet(), Some(3));
        assert_eq!(requester.counters().retransmitted, 1);
    }

    #[test]
    fn the_timer_backs_off_and_resets_on_progress() {
        let mut requester = Requester::new(10, 10, 10 * MS, 40 * MS, 0);
        requester.on_sent(0, 0);
        requester.on_sent(1, 0);
        assert_eq!(requester.timer_due_ns(), Some(10 * MS));
        requester.poll(10 * MS);
        assert_eq!(requester.next_packet(), Some(0));
        assert_eq!(requester.timer_due_ns(), Some(30 * MS), "doubled");
        requester.on_ack(Ack::Ack { psn: 0 }, 12 * MS);
        assert_eq!(requester.timer_due_ns(), Some(22 * MS), "reset by progress");
        requester.on_ack(Ack::Ack { psn: 1 }, 13 * MS);
        assert_eq!(requester.timer_due_ns(), None, "nothing outstanding");
    }

    #[test]
    fn psns_wrap() {
        let base = u64::from(PSN_MODULUS) - 2;
        assert_eq!(unwrap_psn(base, 1), Some(base + 3));
        assert_eq!(unwrap_psn(base, psn_of(base - 5)), Some(base - 5));
        assert_eq!(unwrap_psn(3, PSN_MODULUS - 1), None, "before packet 0");
    }

    #[test]
    fn the_aeth_round_trips() {
        let mut aeth = [0xaa; AETH_LEN];
        for ack in [Ack::Ack { psn: 7 }, Ack::Nak { psn: 9 }] {
            ack.emit_aeth(&mut aeth);
            assert_eq!(Ack::parse(ack.psn(), &aeth), Some(ack));
        }
        assert_eq!(Ack::parse(1, &[0b0110_0001, 0, 0, 0]), None, "another NAK code");
        assert_eq!(Ack::parse(1, &[]), None);
    }

    #[test]
    fn acks_are_coalesced_and_a_hole_is_naked_once_per_interval() {
        let mut responder = Responder::new(4, 2 * MS, 10 * MS);
        let state = |expected: u32, hole: bool| QpState { expected_psn: expected, hole, message_completed: false };
        assert_eq!(responder.poll(state(2, false), 0), None, "2 < 4, and not yet late");
        assert_eq!(responder.poll(state(2, false), 2 * MS), Some(Ack::Ack { psn: 1 }), "late");
        assert_eq!(responder.poll(state(6, false), 3 * MS), Some(Ack::Ack { psn: 5 }), "4 more");
        assert_eq!(responder.poll(state(6, true), 4 * MS), Some(Ack::Nak { psn: 6 }));
        assert_eq!(responder.poll(state(6, true), 5 * MS), None, "NAKed already");
        assert_eq!(responder.poll(state(6, true), 14 * MS), Some(Ack::Nak { psn: 6 }), "again after the interval");
        responder.on_duplicate();
        assert_eq!(responder.poll(state(9, false), 15 * MS), Some(Ack::Ack { psn: 8 }));
        assert_eq!((responder.acks_sent, responder.naks_sent), (3, 2));
    }
}
