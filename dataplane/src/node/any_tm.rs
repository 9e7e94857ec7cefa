//! A traffic manager chosen at start-up: the FIFO when the switch has no
//! QoS configured, the `qos` traffic manager when it has.

use super::{Dequeued, HeldFrame, OutputQueues, QosTrafficManager, TmDrop, TrafficManager};
use crate::pipeline::{FrameMeta, FrameRef, LinkLevelFrame, PortId};

pub enum AnyTrafficManager {
    Fifo(OutputQueues),
    Qos(Box<QosTrafficManager>),
}

impl AnyTrafficManager {
    /// The `qos` traffic manager, when that is the one running.
    pub fn qos(&self) -> Option<&QosTrafficManager> {
        match self {
            AnyTrafficManager::Qos(tm) => Some(tm),
            AnyTrafficManager::Fifo(_) => None,
        }
    }

    pub fn qos_mut(&mut self) -> Option<&mut QosTrafficManager> {
        match self {
            AnyTrafficManager::Qos(tm) => Some(tm),
            AnyTrafficManager::Fifo(_) => None,
        }
    }
}

macro_rules! delegate {
    ($self:ident, $tm:ident => $call:expr) => {
        match $self {
            AnyTrafficManager::Fifo($tm) => $call,
            AnyTrafficManager::Qos($tm) => $call,
        }
    };
}

impl TrafficManager for AnyTrafficManager {
    #[inline]
    fn enqueue(&mut self, now: u64, port: PortId, frame: FrameRef, meta: &FrameMeta) -> Result<(), TmDrop> {
        delegate!(self, tm => tm.enqueue(now, port, frame, meta))
    }
    #[inline]
    fn dequeue(&mut self, now: u64, port: PortId) -> Option<Dequeued> {
        delegate!(self, tm => tm.dequeue(now, port))
    }

    fn dequeue_burst(&mut self, now: u64, port: PortId, out: &mut Vec<Dequeued>) {
        delegate!(self, tm => tm.dequeue_burst(now, port, out))
    }
    fn backlogged(&self, ports: &mut Vec<PortId>) {
        delegate!(self, tm => tm.backlogged(ports))
    }
    fn link_level(&mut self, now: u64, port: PortId, kind: LinkLevelFrame, frame: &[u8]) {
        delegate!(self, tm => tm.link_level(now, port, kind, frame))
    }
    fn next_wakeup(&self) -> Option<u64> {
        delegate!(self, tm => tm.next_wakeup())
    }
    fn poll(&mut self, now: u64) {
        delegate!(self, tm => tm.poll(now))
    }
    fn take_discarded(&mut self) -> Option<(PortId, FrameRef)> {
        delegate!(self, tm => tm.take_discarded())
    }
    fn take_all(&mut self, now: u64) -> Vec<HeldFrame> {
        delegate!(self, tm => tm.take_all(now))
    }
    fn carry_over(&mut self, now: u64, old: &Self, renumbered: &[PortId]) {
        // Between two `qos` traffic managers; the FIFO keeps nothing.
        if let (AnyTrafficManager::Qos(new), AnyTrafficManager::Qos(old)) = (self, old) {
            new.carry_over(now, old, renumbered);
        }
    }
    fn next_link_frame(&mut self, now: u64, buf: &mut [u8]) -> Option<(PortId, usize)> {
        delegate!(self, tm => tm.next_link_frame(now, buf))
    }
}
