//! Links: a frame put on a link at `t` arrives whole at the far end at
//! `t + serialisation + propagation` (store and forward: a node acts on a
//! frame once its last bit is in). The sender keeps the line busy for the
//! serialisation time: the switch's traffic manager does that for its
//! ports (its `LineRate`), the host's NIC for its own ([`super::host`]).
//!
//! Frames in flight live in the simulator's frame pool (hosts' frames, PFC
//! frames) or, for a switch's frames, stay in its node's pool
//! ([`InFlight`]); pools grow to the run's peak, then nothing allocates.

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

/// Where a frame in flight is: a frame of the simulator's own pool (frames
/// a host builds, and the PFC frames a switch writes), or a buffer of the
/// sending switch's frame pool that its port kept a reference to (a
/// switch's data frames: never copied onto the cable). The receiver knows
/// the sender from the cable, so the number alone names the frame. A
/// switch receiving either takes the frame into its own pool by swapping
/// buffers ([`dataplane::node::Node::take_frame`]): no frame is copied on
/// its way through the fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct InFlight(u32);

impl InFlight {
    const POOLED: u32 = 1 << 31;

    /// A frame of the simulator's own pool.
    pub fn own(frame: FrameRef) -> InFlight {
        debug_assert!(frame.index() < Self::POOLED);
        InFlight(frame.index())
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

    /// The frame of the simulator's pool, if it is there.
    #[inline]
    pub fn as_own(self) -> Option<FrameRef> {
        (self.0 & Self::POOLED == 0).then_some(FrameRef::from_index(self.0))
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
    fn in_flight_names_a_frame_of_the_simulator_or_of_the_sender() {
        let frame = FrameRef::from_index(7);
        assert_eq!(InFlight::own(frame).as_own(), Some(frame));
        assert_eq!(InFlight::own(frame).as_pooled(), None);
        assert_eq!(InFlight::pooled(frame).as_pooled(), Some(frame));
        assert_eq!(InFlight::pooled(frame).as_own(), None);
    }
}
