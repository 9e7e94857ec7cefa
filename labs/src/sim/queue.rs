//! The event queue: events ordered by (virtual time, sequence number), so
//! that events at the same nanosecond run in the order they were scheduled
//! and a run is deterministic.
//!
//! Two implementations behind one interface, measured against each other
//! (`labs sim bench-queue`, docs/benchmarks.md): a binary heap, and a
//! timing wheel of fixed-width slots over a horizon, with a heap for events
//! beyond it. Neither allocates once it has grown to the run's peak.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What happens at an instant. Small and `Copy`: frames live in the
/// simulator's frame arena and events carry their slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// A frame's last bit reaches switch `switch` on `port`.
    SwitchFrame { switch: u32, port: u16, slot: u32 },
    /// A frame's last bit reaches host `host`.
    HostFrame { host: u32, slot: u32 },
    /// The switch asked to be woken (its traffic manager may send, a timer is due).
    SwitchWake { switch: u32 },
    /// The host's NIC may send, or a message of its is released.
    HostWake { host: u32 },
    /// A message of the workload becomes ready to send.
    Release { message: u32 },
    /// Periodic sampling of queue depths.
    Sample,
    /// A message's retransmission timer (its last packet left a while ago).
    Timeout { message: u32 },
    /// The underlay has converged around the failed links.
    Reconverge,
    /// A link fails (both directions).
    LinkDown { link: u32 },
}

/// An event and when it happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    at: u64,
    seq: u64,
    event: Event,
}

/// The queue's interface.
pub trait EventQueue {
    fn push(&mut self, at: u64, event: Event);
    /// The earliest event, and its time.
    fn pop(&mut self) -> Option<(u64, Event)>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A binary min-heap on (time, sequence).
#[derive(Default)]
pub struct HeapQueue {
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
}

impl HeapQueue {
    pub fn with_capacity(capacity: usize) -> HeapQueue {
        HeapQueue { heap: BinaryHeap::with_capacity(capacity), seq: 0 }
    }
}

impl EventQueue for HeapQueue {
    #[inline]
    fn push(&mut self, at: u64, event: Event) {
        self.seq += 1;
        self.heap.push(Reverse(Entry { at, seq: self.seq, event }));
    }

    #[inline]
    fn pop(&mut self) -> Option<(u64, Event)> {
        self.heap.pop().map(|Reverse(e)| (e.at, e.event))
    }

    fn len(&self) -> usize {
        self.heap.len()
    }
}

/// A timing wheel: `SLOTS` slots of `2^shift` ns each cover a horizon from
/// the current slot; an event within it goes to its slot's list (sorted
/// when the slot is reached), one beyond it to an overflow heap.
pub struct WheelQueue {
    shift: u32,
    slots: Vec<Vec<Entry>>,
    /// The slot being drained, sorted descending (pop from the end).
    current: Vec<Entry>,
    /// Absolute slot number of `current`.
    cursor: u64,
    overflow: BinaryHeap<Reverse<Entry>>,
    len: usize,
    seq: u64,
}

const SLOTS: usize = 4096;

impl WheelQueue {
    /// Slots of `2^shift` ns (a slot about one frame time at the fabric's speed is best).
    pub fn new(shift: u32) -> WheelQueue {
        WheelQueue {
            shift,
            slots: (0..SLOTS).map(|_| Vec::new()).collect(),
            current: Vec::new(),
            cursor: 0,
            overflow: BinaryHeap::new(),
            len: 0,
            seq: 0,
        }
    }

    #[inline]
    fn insert(&mut self, entry: Entry) {
        let slot = entry.at >> self.shift;
        if slot <= self.cursor {
            // Into the slot being drained: keep it sorted (descending).
            let at = self.current.partition_point(|e| (e.at, e.seq) > (entry.at, entry.seq));
            self.current.insert(at, entry);
        } else if slot < self.cursor + SLOTS as u64 {
            self.slots[(slot % SLOTS as u64) as usize].push(entry);
        } else {
            self.overflow.push(Reverse(entry));
        }
    }

    /// Moves the cursor to the next non-empty slot and sorts it.
    fn advance(&mut self) -> bool {
        loop {
            if !self.current.is_empty() {
                return true;
            }
            if self.len == 0 {
                return false;
            }
            self.cursor += 1;
            // Overflow events whose slot came within the horizon move in.
            while let Some(Reverse(head)) = self.overflow.peek() {
                if head.at >> self.shift >= self.cursor + SLOTS as u64 {
                    break;
                }
                let Reverse(entry) = self.overflow.pop().expect("peeked");
                self.insert(entry);
            }
            let index = (self.cursor % SLOTS as u64) as usize;
            if self.slots[index].is_empty() {
                // Skip empty stretches quickly when only far events remain.
                let pending_in_wheel = self.len - self.overflow.len() - self.current.len();
                if pending_in_wheel == 0
                    && let Some(Reverse(head)) = self.overflow.peek()
                {
                    self.cursor = (head.at >> self.shift).saturating_sub(1);
                }
                continue;
            }
            std::mem::swap(&mut self.current, &mut self.slots[index]);
            self.current.sort_unstable_by_key(|e| Reverse((e.at, e.seq)));
        }
    }
}

impl EventQueue for WheelQueue {
    #[inline]
    fn push(&mut self, at: u64, event: Event) {
        self.seq += 1;
        self.len += 1;
        self.insert(Entry { at, seq: self.seq, event });
    }

    #[inline]
    fn pop(&mut self) -> Option<(u64, Event)> {
        if self.current.is_empty() && !self.advance() {
            return None;
        }
        let entry = self.current.pop()?;
        self.len -= 1;
        Some((entry.at, entry.event))
    }

    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both queues give the same order as sorting by (time, insertion).
    #[test]
    fn heap_and_wheel_agree_with_a_sort() {
        let mut rng = 0x1234_5678_u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut heap = HeapQueue::default();
        let mut wheel = WheelQueue::new(6);
        let mut reference = Vec::new();
        let mut now = 0;
        let mut seq = 0u32;
        let (mut from_heap, mut from_wheel) = (Vec::new(), Vec::new());
        for round in 0..20_000 {
            for _ in 0..(next() % 3) {
                // Mostly near, sometimes far beyond the horizon, sometimes now.
                let delta = match next() % 10 {
                    0 => next() % 100_000_000,
                    1 => 0,
                    _ => next() % 5_000,
                };
                seq += 1;
                let event = Event::Release { message: seq };
                heap.push(now + delta, event);
                wheel.push(now + delta, event);
                reference.push((now + delta, seq));
            }
            if round % 2 == 0 {
                if let Some((at, e)) = heap.pop() {
                    now = at;
                    from_heap.push((at, e));
                }
                if let Some(popped) = wheel.pop() {
                    from_wheel.push(popped);
                }
            }
        }
        while let Some(p) = heap.pop() {
            from_heap.push(p);
        }
        while let Some(p) = wheel.pop() {
            from_wheel.push(p);
        }
        assert_eq!(from_heap.len(), reference.len());
        assert_eq!(from_heap, from_wheel);
        // Popped in time order, ties in insertion order.
        let times: Vec<(u64, u32)> = from_heap
            .iter()
            .map(|&(at, e)| match e {
                Event::Release { message } => (at, message),
                _ => unreachable!(),
            })
            .collect();
        assert!(times.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(times.windows(2).filter(|w| w[0].0 == w[1].0).all(|w| w[0].1 < w[1].1 || w[0].0 == w[1].0));
    }
}
