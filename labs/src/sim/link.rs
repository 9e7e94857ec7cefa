//! Links: a frame put on a link at `t` arrives whole at the far end at
//! `t + serialisation + propagation` (store and forward: a node acts on a
//! frame once its last bit is in). The sender keeps the line busy for the
//! serialisation time: the switch's traffic manager does that for its
//! ports (its `LineRate`), the host's NIC for its own ([`super::host`]).
//!
//! Frames in flight live in a [`FrameArena`] (slots reused through a free
//! list, so once the arena has grown to the run's peak nothing allocates)
//! or, for a switch's frames, stay in its node's frame pool ([`InFlight`]).

use dataplane::pipeline::FrameRef;
use qos::shaper::LineRate;

/// Every cable's speed and length (the simulator's fabrics are uniform).
#[derive(Debug, Clone, Copy)]
pub struct Wire {
    pub speed_bps: u64,
    pub propagation_ns: u64,
    /// The serialisation arithmetic, shared with the traffic manager's ports.
    line: LineRate,
}

impl Wire {
    pub fn new(speed_bps: u64, propagation_ns: u64) -> Wire {
        Wire { speed_bps, propagation_ns, line: LineRate::new(speed_bps, 0) }
    }

    /// Nanoseconds a frame of `len` bytes (without FCS) occupies the wire,
    /// preamble, FCS and inter-frame gap included: the same figure the
    /// switch's traffic manager serialises with.
    #[inline]
    pub fn serialisation_ns(&self, len: usize) -> u64 {
        self.line.wire_ns(len as u32)
    }

    /// When a frame put on the wire at `now` is whole at the far end.
    #[inline]
    pub fn arrival(&self, now: u64, len: usize) -> u64 {
        now + self.serialisation_ns(len) + self.propagation_ns
    }
}

/// Where a frame in flight is: a slot of the simulator's [`FrameArena`]
/// (frames a host builds, and the PFC frames a switch writes), or a buffer
/// of the sending switch's own frame pool that its port kept a reference
/// to (a switch's data frames: never copied onto the cable). The receiver
/// knows the sender from the cable, so the number alone names the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct InFlight(u32);

impl InFlight {
    const POOLED: u32 = 1 << 31;

    pub fn arena(slot: u32) -> InFlight {
        debug_assert!(slot < Self::POOLED);
        InFlight(slot)
    }

    pub fn pooled(frame: FrameRef) -> InFlight {
        debug_assert!(frame.index() < Self::POOLED);
        InFlight(frame.index() | Self::POOLED)
    }

    /// The sender's pool buffer, if the frame is there.
    #[inline]
    pub fn as_pooled(self) -> Option<FrameRef> {
        (self.0 & Self::POOLED != 0).then(|| FrameRef::from_index(self.0 & !Self::POOLED))
    }

    /// The arena slot, if the frame is there.
    #[inline]
    pub fn as_arena(self) -> Option<u32> {
        (self.0 & Self::POOLED == 0).then_some(self.0)
    }
}

/// Frames in flight, by slot.
#[derive(Default)]
pub struct FrameArena {
    slots: Vec<Vec<u8>>,
    free: Vec<u32>,
}

impl FrameArena {
    /// A slot holding a copy of `frame`.
    #[inline]
    pub fn store(&mut self, frame: &[u8]) -> u32 {
        let slot = self.alloc();
        let buffer = &mut self.slots[slot as usize];
        buffer.clear();
        buffer.extend_from_slice(frame);
        slot
    }

    /// An empty slot of `len` bytes to write a frame into.
    #[inline]
    pub fn alloc_len(&mut self, len: usize) -> (u32, &mut [u8]) {
        let slot = self.alloc();
        let buffer = &mut self.slots[slot as usize];
        buffer.resize(len, 0);
        (slot, &mut buffer[..len])
    }

    #[inline]
    fn alloc(&mut self) -> u32 {
        match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(Vec::with_capacity(9216));
                (self.slots.len() - 1) as u32
            }
        }
    }

    #[inline]
    pub fn get(&self, slot: u32) -> &[u8] {
        &self.slots[slot as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, slot: u32) -> &mut [u8] {
        &mut self.slots[slot as usize]
    }

    /// Takes the slot's buffer out (to hand it to a node while the arena is
    /// borrowed elsewhere); give it back with [`FrameArena::put_back`].
    #[inline]
    pub fn take(&mut self, slot: u32) -> Vec<u8> {
        std::mem::take(&mut self.slots[slot as usize])
    }

    /// The frame in `slot` has been read: the slot is free.
    #[inline]
    pub fn free(&mut self, slot: u32) {
        self.free.push(slot);
    }

    #[inline]
    pub fn put_back(&mut self, slot: u32, buffer: Vec<u8>) {
        self.slots[slot as usize] = buffer;
        self.free.push(slot);
    }

    /// Slots ever allocated (the peak of frames in flight).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_arrives_after_its_wire_time_and_the_propagation_delay() {
        // 1 Gb/s: 1500 bytes + 24 of overhead = 12,192 bits = 12.192 us.
        let wire = Wire::new(1_000_000_000, 500);
        assert_eq!(wire.serialisation_ns(1500), 12_192);
        assert_eq!(wire.arrival(1_000, 1500), 13_692);
    }

    #[test]
    fn arena_slots_are_reused() {
        let mut arena = FrameArena::default();
        let a = arena.store(b"abc");
        let buffer = arena.take(a);
        assert_eq!(buffer, b"abc");
        arena.put_back(a, buffer);
        let b = arena.store(b"de");
        assert_eq!(a, b);
        assert_eq!(arena.get(b), b"de");
        assert_eq!(arena.capacity(), 1);
    }

    #[test]
    fn in_flight_names_an_arena_slot_or_a_pool_buffer() {
        assert_eq!(InFlight::arena(7).as_arena(), Some(7));
        assert_eq!(InFlight::arena(7).as_pooled(), None);
        let pooled = InFlight::pooled(FrameRef::from_index(7));
        assert_eq!(pooled.as_pooled(), Some(FrameRef::from_index(7)));
        assert_eq!(pooled.as_arena(), None);
    }
}
