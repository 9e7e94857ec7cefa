//! A port's scheduler over its queues (SAI_SCHEDULER): strict priority
//! first, higher queue index before lower, then deficit weighted round
//! robin (Shreedhar and Varghese's DRR with a quantum proportional to the
//! weight) among the DWRR queues.
//!
//! DWRR: each time the round reaches a backlogged queue it earns
//! `weight x quantum_unit` bytes of deficit and sends head frames while the
//! head fits the deficit; an emptied queue loses its deficit. Over a busy
//! period each queue's share of the bytes is its weight over the sum of the
//! backlogged queues' weights.

use serde::{Deserialize, Serialize};

use crate::classify::CLASSES;

/// How a queue is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum Discipline {
    Strict,
    Dwrr { weight: u8 },
}

impl Default for Discipline {
    fn default() -> Discipline {
        Discipline::Dwrr { weight: 1 }
    }
}

/// Bytes of deficit per unit of weight per round: at least the largest
/// frame, so a queue sends at least one frame per visit.
pub const DEFAULT_QUANTUM_UNIT: u32 = 9216;

/// One port's scheduler state.
#[derive(Debug, Clone, Copy)]
pub struct PortScheduler {
    disciplines: [Discipline; CLASSES],
    /// Bit q: queue q is strict.
    strict: u8,
    quantum: [u32; CLASSES],
    deficit: [u32; CLASSES],
    current: usize,
    /// The round has just moved to `current`: it earns its quantum.
    fresh: bool,
}

impl PortScheduler {
    pub fn new(disciplines: [Discipline; CLASSES], quantum_unit: u32) -> PortScheduler {
        let quantum = disciplines.map(|d| match d {
            Discipline::Strict => 0,
            Discipline::Dwrr { weight } => u32::from(weight.max(1)) * quantum_unit.max(1),
        });
        let strict = (0..CLASSES).filter(|&q| disciplines[q] == Discipline::Strict).fold(0u8, |m, q| m | 1 << q);
        PortScheduler { disciplines, strict, quantum, deficit: [0; CLASSES], current: 0, fresh: true }
    }

    /// The queue to send from next. `head(q)` gives the length of queue q's
    /// head frame if q may send now (backlogged, not paused, its shaper
    /// conforming), else `None`. The chosen queue's frame must be sent.
    #[inline]
    pub fn select(&mut self, head: impl FnMut(usize) -> Option<u32>) -> Option<usize> {
        self.select_among(u8::MAX, head)
    }

    /// [`select`](Self::select) knowing which queues have frames (bit q:
    /// queue q is not empty): the others are never asked about, and the
    /// round passes over them in one step (an empty queue has no deficit
    /// to forfeit, [`emptied`](Self::emptied) took it).
    #[inline]
    pub fn select_among(&mut self, backlogged: u8, mut head: impl FnMut(usize) -> Option<u32>) -> Option<usize> {
        let mut strict = backlogged & self.strict;
        while strict != 0 {
            let queue = 7 - strict.leading_zeros() as usize;
            if head(queue).is_some() {
                return Some(queue);
            }
            strict &= !(1 << queue);
        }
        let dwrr = backlogged & !self.strict;
        if dwrr == 0 {
            return None;
        }
        // At most two visits per queue: a fresh quantum is at least the
        // largest frame, except for a tiny quantum unit, hence the bound.
        let mut eligible_seen = false;
        for step in 0..CLASSES * 64 {
            if step % CLASSES == 0 && step > 0 && !eligible_seen {
                return None;
            }
            let queue = self.current;
            if dwrr & (1 << queue) == 0 {
                let after = (queue + 1) % CLASSES;
                self.current = (after + dwrr.rotate_right(after as u32).trailing_zeros() as usize) % CLASSES;
                self.fresh = true;
                continue;
            }
            let eligible = self.quantum[queue] > 0 && matches!(self.disciplines[queue], Discipline::Dwrr { .. });
            match head(queue).filter(|_| eligible) {
                None => {
                    if eligible {
                        // Empty or blocked: an empty queue forfeits its deficit
                        // (a blocked one keeps it for when it may send).
                        self.deficit[queue] = self.deficit[queue].min(self.quantum[queue]);
                    }
                    self.advance();
                }
                Some(bytes) => {
                    eligible_seen = true;
                    if self.fresh {
                        self.deficit[queue] = self.deficit[queue].saturating_add(self.quantum[queue]);
                        self.fresh = false;
                    }
                    if bytes <= self.deficit[queue] {
                        self.deficit[queue] -= bytes;
                        return Some(queue);
                    }
                    self.advance();
                }
            }
        }
        None
    }

    /// The queue just sent from has emptied: it forfeits its deficit.
    #[inline]
    pub fn emptied(&mut self, queue: usize) {
        self.deficit[queue] = 0;
        if queue == self.current && !self.fresh {
            self.advance();
        }
    }

    #[inline]
    fn advance(&mut self) {
        self.current = (self.current + 1) % CLASSES;
        self.fresh = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serves always-backlogged queues with fixed frame sizes and returns the
    /// bytes each sent in `frames` decisions.
    fn serve(scheduler: &mut PortScheduler, sizes: [Option<u32>; CLASSES], frames: usize) -> [u64; CLASSES] {
        let mut sent = [0u64; CLASSES];
        for _ in 0..frames {
            let queue = scheduler.select(|q| sizes[q]).expect("backlogged");
            sent[queue] += u64::from(sizes[queue].unwrap());
        }
        sent
    }

    #[test]
    fn dwrr_shares_follow_weights() {
        let mut disciplines = [Discipline::Dwrr { weight: 1 }; CLASSES];
        disciplines[1] = Discipline::Dwrr { weight: 3 };
        disciplines[2] = Discipline::Dwrr { weight: 4 };
        let mut scheduler = PortScheduler::new(disciplines, 1500);
        // Queues 0, 1, 2 backlogged with different frame sizes: bytes 1:3:4.
        let sizes = [Some(1500), Some(500), Some(1000), None, None, None, None, None];
        let sent = serve(&mut scheduler, sizes, 12_000);
        let total: u64 = sent.iter().sum();
        let share = |q: usize| sent[q] as f64 / total as f64;
        assert!((share(0) - 0.125).abs() < 0.005, "{sent:?}");
        assert!((share(1) - 0.375).abs() < 0.005, "{sent:?}");
        assert!((share(2) - 0.5).abs() < 0.005, "{sent:?}");
    }

    #[test]
    fn strict_queues_go_first_highest_index_first() {
        let mut disciplines = [Discipline::Dwrr { weight: 1 }; CLASSES];
        disciplines[3] = Discipline::Strict;
        disciplines[6] = Discipline::Strict;
        let mut scheduler = PortScheduler::new(disciplines, 1500);
        let mut sizes = [Some(100); CLASSES];
        assert_eq!(scheduler.select(|q| sizes[q]), Some(6));
        sizes[6] = None;
        assert_eq!(scheduler.select(|q| sizes[q]), Some(3));
        sizes[3] = None;
        // DWRR round: 15 frames of queue 0 (1500 / 100), then queue 1.
        let picks: Vec<usize> = (0..16).map(|_| scheduler.select(|q| sizes[q]).unwrap()).collect();
        assert!(picks[..15].iter().all(|&q| q == 0) && picks[15] == 1, "{picks:?}");
        assert_eq!(scheduler.select(|_| None), None);
    }

    #[test]
    fn a_blocked_queue_does_not_stall_the_others() {
        let mut scheduler = PortScheduler::new([Discipline::Dwrr { weight: 1 }; CLASSES], 1500);
        // Queue 0 paused (not eligible): queue 5 gets every slot.
        let sizes = [None, None, None, None, None, Some(1500), None, None];
        let sent = serve(&mut scheduler, sizes, 100);
        assert_eq!(sent[5], 150_000);
    }

    #[test]
    fn knowing_the_backlog_changes_no_decision() {
        // Two schedulers, one told which queues have frames: the same picks
        // while queues fill and empty.
        let mut disciplines = [Discipline::Dwrr { weight: 1 }; CLASSES];
        disciplines[2] = Discipline::Dwrr { weight: 3 };
        disciplines[6] = Discipline::Strict;
        let (mut told, mut asked) = (PortScheduler::new(disciplines, 1000), PortScheduler::new(disciplines, 1000));
        let mut queued = [0u32; CLASSES];
        let mut seed = 7u64;
        for _ in 0..20_000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let q = (seed >> 33) as usize % CLASSES;
            if !(seed >> 40).is_multiple_of(3) {
                queued[q] += 1;
            }
            let backlog = queued;
            let sizes = |q: usize| (backlog[q] > 0).then_some(300 + 100 * q as u32);
            let mask = (0..CLASSES).filter(|&q| backlog[q] > 0).fold(0u8, |m, q| m | 1 << q);
            let pick = told.select_among(mask, sizes);
            assert_eq!(pick, asked.select(sizes));
            if let Some(q) = pick {
                queued[q] -= 1;
                if queued[q] == 0 {
                    told.emptied(q);
                    asked.emptied(q);
                }
            }
        }
    }
}
