//! The event queue: events ordered by (virtual time, key). The key is the
//! scheduling node's number and its own count of events scheduled (the
//! engine makes it): events at the same nanosecond run in an order that does
//! not depend on how the fabric is split across threads, so a run is
//! deterministic with one partition or several.
//!
//! Two implementations behind one interface, measured against each other
//! (`labs sim bench-queue`, docs/benchmarks.md): a binary heap, and a
//! timing wheel of fixed-width slots over a horizon, with a heap for events
//! beyond it. Neither allocates once it has grown to the run's peak.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::link::InFlight;

/// What happens at an instant. Small and `Copy`: frames live in the
/// simulator's frame arena or the sender's pool, and events name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// A frame's last bit reaches switch `switch` on `port`.
    SwitchFrame { switch: u32, port: u16, frame: InFlight },
    /// A frame's last bit reaches host `host`.
    HostFrame { host: u32, frame: InFlight },
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
    /// The receiver of `connection` got its oldest message in flight whole
    /// (a lookahead earlier): the sender forgets it (no repeat, no timeout).
    Delivered { connection: u32 },
    /// The underlay has converged around the failed links.
    Reconverge,
    /// A link fails (both directions).
    LinkDown { link: u32 },
}

/// An event and when it happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    at: u64,
    seq: u64,
    event: Event,
}

impl Entry {
    #[inline]
    fn key(&self) -> (u64, u64) {
        (self.at, self.seq)
    }
}

/// The queue's interface.
pub trait EventQueue {
    /// An event at `at` with the tie-breaking `key` (unique per event).
    fn push(&mut self, at: u64, key: u64, event: Event);
    /// An event usually no earlier than every event pushed this way before
    /// (a timer of a fixed delay from the current time): kept in a FIFO
    /// beside the ordered structure, so the many pending retransmission
    /// timers cost no heap depth (one out of order goes to the structure).
    fn push_monotone(&mut self, at: u64, key: u64, event: Event);
    /// The earliest event: its time, key and itself.
    fn pop(&mut self) -> Option<(u64, u64, Event)>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An ordered structure of entries: the heap or the wheel.
pub trait Order {
    fn insert(&mut self, entry: Entry);
    /// The earliest entry's (time, sequence), without taking it.
    fn peek_key(&mut self) -> Option<(u64, u64)>;
    fn take(&mut self) -> Option<Entry>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An [`Order`] for events in any order, and a FIFO for those pushed in
/// (time, key) order; popped in (time, key) order over both.
#[derive(Default)]
pub struct Lanes<O> {
    ordered: O,
    fifo: VecDeque<Entry>,
}

/// The binary heap with the FIFO lane.
pub type HeapQueue = Lanes<HeapOrder>;
/// The timing wheel with the FIFO lane.
pub type WheelQueue = Lanes<WheelOrder>;

impl HeapQueue {
    pub fn with_capacity(capacity: usize) -> HeapQueue {
        Lanes { ordered: HeapOrder::with_capacity(capacity), fifo: VecDeque::new() }
    }
}

impl WheelQueue {
    /// Slots of `2^shift` ns (a slot about one frame time at the fabric's speed is best).
    pub fn new(shift: u32) -> WheelQueue {
        Lanes { ordered: WheelOrder::new(shift), fifo: VecDeque::new() }
    }
}

impl<O: Order> EventQueue for Lanes<O> {
    #[inline]
    fn push(&mut self, at: u64, key: u64, event: Event) {
        self.ordered.insert(Entry { at, seq: key, event });
    }

    #[inline]
    fn push_monotone(&mut self, at: u64, key: u64, event: Event) {
        let entry = Entry { at, seq: key, event };
        match self.fifo.back() {
            Some(last) if last.key() > entry.key() => self.ordered.insert(entry),
            _ => self.fifo.push_back(entry),
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<(u64, u64, Event)> {
        let from_fifo = match (self.fifo.front(), self.ordered.peek_key()) {
            (Some(head), Some(key)) => head.key() < key,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let entry = if from_fifo { self.fifo.pop_front() } else { self.ordered.take() }?;
        Some((entry.at, entry.seq, entry.event))
    }

    fn len(&self) -> usize {
        self.ordered.len() + self.fifo.len()
    }
}

/// A binary min-heap on (time, sequence), of its own rather than
/// `std`'s: keys compared as one 128-bit number, and entries put back
/// bottom-up (the hole at the top goes down to a leaf by the smaller
/// child, one compare a level, and the entry rises from there: new events
/// are mostly later than most of those queued, so they rise little).
///
/// The entry taken last stays at the top until the next insert, which
/// takes its place: the event loop takes one event and its handler
/// usually schedules one or more, and a pop followed by a push then costs
/// one pass over the heap's depth instead of two.
#[derive(Default)]
pub struct HeapOrder {
    heap: Vec<Entry>,
    /// The top entry was taken and is still in the heap (a stale top).
    taken: bool,
}

#[inline(always)]
fn rank(entry: &Entry) -> u128 {
    (u128::from(entry.at) << 64) | u128::from(entry.seq)
}

impl HeapOrder {
    fn with_capacity(capacity: usize) -> HeapOrder {
        HeapOrder { heap: Vec::with_capacity(capacity), taken: false }
    }

    /// Removes the stale top, if any.
    #[inline]
    fn settle(&mut self) {
        if self.taken {
            self.taken = false;
            let last = self.heap.pop().expect("a stale top is in the heap");
            if !self.heap.is_empty() {
                self.replace_top(last);
            }
        }
    }

    /// Puts `entry` in place of the top entry (the heap is not empty).
    #[inline]
    fn replace_top(&mut self, entry: Entry) {
        let heap = &mut self.heap[..];
        let len = heap.len();
        let mut hole = 0;
        let mut child = 1;
        while child + 1 < len {
            // The smaller child moves up into the hole.
            child += usize::from(rank(&heap[child + 1]) < rank(&heap[child]));
            heap[hole] = heap[child];
            hole = child;
            child = 2 * hole + 1;
        }
        if child + 1 == len {
            heap[hole] = heap[child];
            hole = child;
        }
        Self::rise(heap, hole, entry);
    }

    /// Places `entry` at `hole` or above it, moving larger parents down.
    #[inline]
    fn rise(heap: &mut [Entry], mut hole: usize, entry: Entry) {
        let key = rank(&entry);
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if rank(&heap[parent]) <= key {
                break;
            }
            heap[hole] = heap[parent];
            hole = parent;
        }
        heap[hole] = entry;
    }
}

impl Order for HeapOrder {
    #[inline]
    fn insert(&mut self, entry: Entry) {
        if self.taken {
            self.taken = false;
            self.replace_top(entry);
            return;
        }
        let hole = self.heap.len();
        self.heap.push(entry);
        Self::rise(&mut self.heap, hole, entry);
    }

    #[inline]
    fn peek_key(&mut self) -> Option<(u64, u64)> {
        self.settle();
        self.heap.first().map(Entry::key)
    }

    #[inline]
    fn take(&mut self) -> Option<Entry> {
        self.settle();
        let entry = *self.heap.first()?;
        self.taken = true;
        Some(entry)
    }

    fn len(&self) -> usize {
        self.heap.len() - usize::from(self.taken)
    }
}

/// A timing wheel: `SLOTS` slots of `2^shift` ns each cover a horizon from
/// the current slot; an event within it goes to its slot's list (sorted
/// when the slot is reached), one beyond it to an overflow heap.
pub struct WheelOrder {
    shift: u32,
    slots: Vec<Vec<Entry>>,
    /// The slot being drained, sorted descending (pop from the end).
    current: Vec<Entry>,
    /// Absolute slot number of `current`.
    cursor: u64,
    overflow: BinaryHeap<Reverse<Entry>>,
    len: usize,
}

const SLOTS: usize = 4096;

impl WheelOrder {
    fn new(shift: u32) -> WheelOrder {
        WheelOrder {
            shift,
            slots: (0..SLOTS).map(|_| Vec::new()).collect(),
            current: Vec::new(),
            cursor: 0,
            overflow: BinaryHeap::new(),
            len: 0,
        }
    }

    #[inline]
    fn place(&mut self, entry: Entry) {
        let slot = entry.at >> self.shift;
        if slot <= self.cursor {
            // Into the slot being drained: keep it sorted (descending).
            let at = self.current.partition_point(|e| e.key() > entry.key());
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
                self.place(entry);
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
            self.current.sort_unstable_by_key(|e| Reverse(e.key()));
        }
    }
}

impl Order for WheelOrder {
    #[inline]
    fn insert(&mut self, entry: Entry) {
        self.len += 1;
        self.place(entry);
    }

    #[inline]
    fn peek_key(&mut self) -> Option<(u64, u64)> {
        if self.current.is_empty() && !self.advance() {
            return None;
        }
        self.current.last().map(Entry::key)
    }

    #[inline]
    fn take(&mut self) -> Option<Entry> {
        if self.current.is_empty() && !self.advance() {
            return None;
        }
        let entry = self.current.pop()?;
        self.len -= 1;
        Some(entry)
    }

    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The heap keeps the entry it handed out on top until the next insert
    /// takes its place: inserts after a pop (earlier, later, several) and
    /// pops with no insert between them all come out in (time, key) order,
    /// and the length never counts the handed-out entry.
    #[test]
    fn heap_reuses_its_top_slot_without_losing_order() {
        let mut heap = HeapQueue::with_capacity(4);
        let event = |m| Event::Release { message: m };
        for (at, key) in [(50, 1), (10, 2), (30, 3)] {
            heap.push(at, key, event(key as u32));
        }
        assert_eq!(heap.pop().map(|(at, key, _)| (at, key)), Some((10, 2)));
        assert_eq!(heap.len(), 2);
        // Earlier than everything left: it comes out next.
        heap.push(20, 4, event(4));
        assert_eq!(heap.len(), 3);
        assert_eq!(heap.pop().map(|(at, key, _)| (at, key)), Some((20, 4)));
        // Later than everything, then two more after the first took the slot.
        heap.push(60, 5, event(5));
        heap.push(30, 6, event(6));
        heap.push(40, 7, event(7));
        assert_eq!(heap.len(), 5);
        // Pops with no insert between them.
        let rest: Vec<(u64, u64)> = std::iter::from_fn(|| heap.pop().map(|(at, key, _)| (at, key))).collect();
        assert_eq!(rest, [(30, 3), (30, 6), (40, 7), (50, 1), (60, 5)]);
        assert_eq!(heap.len(), 0);
        assert!(heap.pop().is_none());
        heap.push(70, 8, event(8));
        assert_eq!(heap.len(), 1);
        assert_eq!(heap.pop().map(|(at, key, _)| (at, key)), Some((70, 8)));
    }

    /// Both queues, with their FIFO lanes, give the same order as sorting by
    /// (time, insertion).
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
                // Mostly near, sometimes far beyond the horizon, sometimes
                // now, sometimes a fixed-delay timer into the FIFO lane.
                let (delta, monotone) = match next() % 10 {
                    0 => (next() % 100_000_000, false),
                    1 => (0, false),
                    2 => (4_000, true),
                    _ => (next() % 5_000, false),
                };
                seq += 1;
                let event = Event::Release { message: seq };
                let key = u64::from(seq);
                if monotone {
                    heap.push_monotone(now + delta, key, event);
                    wheel.push_monotone(now + delta, key, event);
                } else {
                    heap.push(now + delta, key, event);
                    wheel.push(now + delta, key, event);
                }
                reference.push((now + delta, seq));
            }
            if round % 2 == 0 {
                if let Some((at, _, e)) = heap.pop() {
                    now = at;
                    from_heap.push((at, e));
                }
                if let Some((at, _, e)) = wheel.pop() {
                    from_wheel.push((at, e));
                }
            }
        }
        while let Some((at, _, e)) = heap.pop() {
            from_heap.push((at, e));
        }
        while let Some((at, _, e)) = wheel.pop() {
            from_wheel.push((at, e));
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
