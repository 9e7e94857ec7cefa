//! What a traffic manager keeps of the one it replaces (a commit changed
//! `qos:` or a port's speed; `dataplane`'s `Node::replace_traffic_manager`
//! calls [`TrafficManager::carry_over`] before it moves the queued frames).
//!
//! Kept, by port (a port keeps its index while it exists) and queue/PG:
//! - the pauses the port's peer sent (802.1Qbb: the peer does not send
//!   them again before its refresh, half its quanta later), for the
//!   priorities PFC still enables, with their remaining quanta; a
//!   priority PFC no longer enables is not paused any more;
//! - the cumulative counters `show` reads: queue tx/drops/ECN marks/WRED
//!   drops, PFC frames and paused time, drops by reason, PG drops, the
//!   watchdog's storms and drops, and the watermarks (queue, PG shared
//!   and headroom, pool: highest use until cleared, as SONiC's
//!   persistent watermarks).
//!
//! Not kept: the pauses this switch asserted to its peers (they expire
//! unless the new buffer asserts them again, within a frame's time) and a
//! storm in progress (the old traffic manager gave up the queue's frames;
//! the storm counts as restored at the swap, and a peer still pausing
//! makes the watchdog detect it again).

use super::{CLASSES, TrafficManager};

impl<H: Copy> TrafficManager<H> {
    /// Takes over from `old`, the traffic manager this one replaces, at
    /// `now` (before any frame is queued here), for the ports `same_port`
    /// says are still the port their index named (a port removed and its
    /// index given to a new one inherits nothing).
    pub fn carry_over(&mut self, now: u64, old: &TrafficManager<H>, same_port: impl Fn(usize) -> bool) {
        let old_cell_bytes = old.buffer.cell_bytes();
        let ports = self.ports.len().min(old.ports.len());
        for port in (0..ports).filter(|&port| same_port(port)) {
            let (from, to) = (&old.ports[port], &mut self.ports[port]);
            to.pfc = from.pfc;
            let speeds = (from.speed_bps, to.speed_bps);
            to.pfc_rx.carry_from(now, &from.pfc_rx, speeds, self.pfc_enabled, &mut to.pfc);
            for class in 0..CLASSES {
                let i = port * CLASSES + class;
                self.queue_counters[i] = old.queue_counters[i];
                let (queue, old_queue) = (&mut self.queues[i], &old.queues[i]);
                (queue.tx_frames, queue.tx_bytes) = (old_queue.tx_frames, old_queue.tx_bytes);
                let watermark = &mut queue.occupancy.watermark_bytes;
                *watermark = (*watermark).max(old_queue.occupancy.watermark_bytes);
                self.buffer.carry_pg(i, old.buffer.pg(i), old_cell_bytes);
                let watch = &mut self.watch[i];
                *watch = old.watch[i];
                if watch.storm {
                    watch.storm = false;
                    watch.storms_restored += 1;
                    watch.storm_restored_at = now;
                }
            }
        }
        // The CPU's PGs come after the ports'.
        for pg in 0..CLASSES {
            let old_pg = old.buffer.pg(old.ports.len() * CLASSES + pg);
            self.buffer.carry_pg(self.ports.len() * CLASSES + pg, old_pg, old_cell_bytes);
        }
        self.buffer.carry_pool_watermark(&old.buffer);
        for (drops, old) in self.drops.iter_mut().zip(old.drops) {
            *drops += old;
        }
        self.events_lost += old.events_lost;
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Dequeue, DropReason, FrameInfo, PortConfig, TmConfig};
    use super::*;
    use crate::classify::ClassKey;
    use crate::pfc::PfcFrame;

    const GIG: u64 = 1_000_000_000;

    fn config(speed_bps: u64) -> TmConfig {
        let ports = (0..2).map(|_| PortConfig { mtu: 1500, ..PortConfig::new(speed_bps) }).collect();
        let mut config = TmConfig::roce(ports);
        config.pool.size_bytes = 1 << 20;
        config
    }

    fn frame(egress: u16, tc: u8) -> FrameInfo {
        FrameInfo { ingress: Some(0), egress, class: ClassKey::Tc(tc), len: 1000, ecn_capable: false, flow_hash: 0 }
    }

    /// Port 1's peer pauses priority 3 for 100 quanta (51.2 us at 1 Gb/s)
    /// at 0; a lossy frame leaves, a lossless one waits, one frame is
    /// dropped; the traffic manager is replaced by one built from `next`
    /// at 10 us, the waiting frame moved into it as the node does.
    fn swapped(next: &TmConfig) -> (TrafficManager<u32>, TrafficManager<u32>) {
        swapped_keeping(next, |_| true)
    }

    fn swapped_keeping(
        next: &TmConfig,
        same_port: impl Fn(usize) -> bool,
    ) -> (TrafficManager<u32>, TrafficManager<u32>) {
        let mut old = TrafficManager::new(&config(GIG), 0u32).unwrap();
        let mut pause = PfcFrame { class_enable: 1 << 3, quanta: [0; 8] };
        pause.quanta[3] = 100;
        old.receive_pfc(0, 1, &pause);
        old.enqueue(0, 1, &frame(1, 3)).unwrap();
        old.enqueue(0, 2, &frame(1, 0)).unwrap();
        assert_eq!(old.enqueue(0, 3, &frame(7, 0)).unwrap_err(), DropReason::UnknownPort);
        assert!(matches!(old.dequeue(0, 1), Dequeue::Send { handle: 2, .. }));
        assert_eq!(old.dequeue(9_000, 1), Dequeue::Wait(51_200), "paused by the peer");
        let mut new = TrafficManager::new(next, 0u32).unwrap();
        new.carry_over(10_000, &old, same_port);
        for (port, handle) in old.take_all(10_000) {
            new.enqueue(10_000, handle, &frame(port, 3)).unwrap();
        }
        (old, new)
    }

    #[test]
    fn a_paused_queue_stays_paused_across_a_swap_until_its_quanta_expire_and_counters_continue() {
        let (_, mut new) = swapped(&config(GIG));
        assert_eq!(new.dequeue(10_000, 1), Dequeue::Wait(51_200), "the peer's pause holds in the new one");
        assert!(matches!(new.dequeue(51_200, 1), Dequeue::Send { handle: 1, .. }), "and ends with its quanta");
        assert_eq!(new.pfc_counters(1).rx_frames[3], 1);
        assert_eq!(new.pfc_paused_ns(100_000, 1, 3), 51_200, "one pause, counted once");
        assert_eq!(new.queue_counters(1, 0).tx_frames, 1, "sent before the swap");
        assert_eq!(new.queue_counters(1, 3).tx_frames, 1, "sent after it");
        assert_eq!(new.drops(DropReason::UnknownPort), 1);
        assert_eq!(new.queue_watermark_bytes(1, 3), 1000);
    }

    #[test]
    fn the_quanta_left_are_timed_again_at_a_new_port_speed() {
        // 41.2 us left at 1 Gb/s are 41 200 bit times: 412 us at 100 Mb/s.
        let (_, mut new) = swapped(&config(GIG / 10));
        assert_eq!(new.dequeue(10_000, 1), Dequeue::Wait(422_000));
    }

    #[test]
    fn a_priority_pfc_no_longer_enables_is_not_paused_after_the_swap() {
        let mut next = config(GIG);
        next.pfc.priorities.retain(|&p| p != 3);
        let (_, mut new) = swapped(&next);
        assert!(matches!(new.dequeue(10_000, 1), Dequeue::Send { handle: 1, .. }));
        assert_eq!(new.pfc_paused_ns(100_000, 1, 3), 10_000, "paused until the swap");
    }

    #[test]
    fn a_port_whose_index_went_to_another_port_inherits_nothing() {
        let (_, mut new) = swapped_keeping(&config(GIG), |port| port != 1);
        assert!(matches!(new.dequeue(10_000, 1), Dequeue::Send { handle: 1, .. }), "not paused by the old peer");
        assert_eq!(new.pfc_counters(1).rx_frames[3], 0);
        assert_eq!(new.queue_counters(1, 0).tx_frames, 0, "counters start again");
    }
}
