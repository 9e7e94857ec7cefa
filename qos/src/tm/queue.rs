//! One (egress port, queue)'s hot state in one place: what a frame joining
//! or leaving the queue reads and writes (its VOQ's head and tail, its
//! buffer occupancy and limit, its last progress for the watchdog, the
//! counters every frame bumps, the WRED/ECN profile it is judged by). The
//! traffic manager keeps one [`QueueSlot`] per queue in one table and
//! indexes it once per frame; what only a drop or a mark touches stays in
//! the cold [`QueueCounters`](super::QueueCounters) apart.

use crate::buffer::QueueState;
use crate::ecn::WredProfile;
use crate::voq::Fifo;

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct QueueSlot {
    /// The queue's frames in the descriptor slab.
    pub fifo: Fifo,
    /// Cells and bytes waiting, the limit of a lossy queue, the watermark.
    pub occupancy: QueueState,
    /// When the queue last sent or became backlogged (the PFC watchdog's
    /// "no progress").
    pub last_progress: u64,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    pub wred: Option<WredProfile>,
}
