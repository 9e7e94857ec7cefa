//! The default traffic manager: one bounded FIFO per egress port, sent as
//! soon as the port takes it (a switch with no queueing of its own, as
//! before the `qos` traffic manager).

use std::collections::VecDeque;

use super::{Dequeued, TmDrop, TrafficManager};
use crate::pipeline::{FrameMeta, FrameRef, LinkLevelFrame, PortId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputQueuesConfig {
    /// Frames one port's queue holds before it drops.
    pub frames_per_port: usize,
}

impl Default for OutputQueuesConfig {
    fn default() -> Self {
        OutputQueuesConfig { frames_per_port: 1024 }
    }
}

/// A bounded FIFO per port. A queue is allocated the first time its port
/// sends, at full size, so the steady state allocates nothing.
pub struct OutputQueues {
    config: OutputQueuesConfig,
    queues: Vec<VecDeque<FrameRef>>,
    /// Ports whose queue is not empty, each once.
    backlogged: Vec<PortId>,
    /// Link-level frames received, by port: PAUSE/PFC are counted here (this
    /// traffic manager does not pause).
    pub pauses_ignored: u64,
}

impl OutputQueues {
    pub fn new(config: OutputQueuesConfig) -> OutputQueues {
        OutputQueues { config, queues: Vec::new(), backlogged: Vec::new(), pauses_ignored: 0 }
    }

    /// Frames waiting on `port`.
    pub fn depth(&self, port: PortId) -> usize {
        self.queues.get(usize::from(port)).map_or(0, VecDeque::len)
    }
}

impl TrafficManager for OutputQueues {
    fn enqueue(&mut self, _now: u64, port: PortId, frame: FrameRef, _meta: &FrameMeta) -> Result<(), TmDrop> {
        let index = usize::from(port);
        if self.queues.len() <= index {
            self.queues.resize_with(index + 1, VecDeque::new);
        }
        let queue = &mut self.queues[index];
        if queue.capacity() == 0 {
            queue.reserve_exact(self.config.frames_per_port);
        }
        if queue.len() >= self.config.frames_per_port {
            return Err(TmDrop::QueueFull);
        }
        if queue.is_empty() {
            self.backlogged.push(port);
        }
        queue.push_back(frame);
        Ok(())
    }

    fn dequeue(&mut self, _now: u64, port: PortId) -> Option<Dequeued> {
        let frame = self.queues.get_mut(usize::from(port))?.pop_front()?;
        let more = self.depth(port) != 0;
        if !more {
            self.backlogged.retain(|&p| p != port);
        }
        Some(Dequeued::unmarked(frame, more))
    }

    fn backlogged(&self, ports: &mut Vec<PortId>) {
        ports.extend_from_slice(&self.backlogged);
    }

    fn link_level(&mut self, _now: u64, _port: PortId, _kind: LinkLevelFrame, _frame: &[u8]) {
        self.pauses_ignored += 1;
    }

    fn next_wakeup(&self) -> Option<u64> {
        None
    }
}
