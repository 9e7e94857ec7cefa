//! The receiver: returns CNPs for CE-marked packets (DCQCN's notification
//! point: "at most one CNP every N microseconds per flow", N = 50 us by
//! default), puts each QP's packets back in PSN order within a window (so
//! sprayed traffic is usable) and counts goodput, flow completion and disorder.

use super::bth::{Opcode, PSN_MODULUS};

/// Default minimum interval between two CNPs of one QP (DCQCN paper, section 3.2).
pub const DEFAULT_CNP_INTERVAL_NS: u64 = 50_000;
/// PSNs held out of order per QP, at most.
pub const REORDER_WINDOW: usize = 256;

/// One received data packet, as the caller parsed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    pub qp: u32,
    pub psn: u32,
    pub opcode: Opcode,
    /// Payload bytes (goodput counts these).
    pub payload_len: u32,
    /// The IP header's ECN field was CE (0b11).
    pub congestion_experienced: bool,
}

/// What the caller must do after an arrival.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Send a CNP to this QP (the sender's QP, the one the packet was sent to).
    pub cnp_for_qp: Option<u32>,
    /// Packets now delivered in order (this one and any it unblocked).
    pub delivered_packets: u32,
    /// Their payload bytes.
    pub delivered_bytes: u64,
    /// A message ended with this delivery (FCT recorded).
    pub message_completed: bool,
}

/// Why an arrival was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The QP table, sized when built, is full.
    TooManyQueuePairs,
}

/// Counters per QP and in total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverCounters {
    pub packets: u64,
    /// Payload bytes delivered in order.
    pub delivered_bytes: u64,
    pub delivered_packets: u64,
    pub ce_marked: u64,
    pub cnps_sent: u64,
    /// Arrivals ahead of the next expected PSN (held for reordering).
    pub out_of_order: u64,
    /// Held packets later delivered in order.
    pub reordered_delivered: u64,
    /// PSNs already delivered or already held.
    pub duplicates: u64,
    /// Arrivals beyond the reorder window (dropped; RoCE would NAK them).
    pub beyond_window: u64,
    /// Largest distance ahead of the expected PSN seen.
    pub max_reorder_distance: u32,
    pub messages_completed: u64,
}

#[derive(Debug, Clone)]
struct QueuePair {
    expected_psn: u32,
    /// Held payload lengths + 1 by PSN offset (0 = empty slot), ring indexed by PSN.
    held: [u32; REORDER_WINDOW],
    /// Held opcode ends a message.
    held_end: [bool; REORDER_WINDOW],
    last_cnp_ns: Option<u64>,
    first_arrival_ns: Option<u64>,
    last_fct_ns: Option<u64>,
    counters: ReceiverCounters,
}

/// The receiving endpoint of any number of QPs up to its capacity.
#[derive(Debug, Clone)]
pub struct Receiver {
    cnp_interval_ns: u64,
    capacity: usize,
    queue_pairs: Vec<QueuePair>,
    /// (QP number, index in `queue_pairs`), sorted by QP number: a lookup
    /// among a thousand QPs reads this compact table, not every QP's state.
    index: Vec<(u32, u32)>,
    totals: ReceiverCounters,
}

fn psn_distance(from: u32, to: u32) -> u32 {
    to.wrapping_sub(from) & (PSN_MODULUS - 1)
}

impl Receiver {
    /// A receiver for up to `capacity` QPs (memory reserved now), the first
    /// PSN of each expected to be 0.
    pub fn new(capacity: usize, cnp_interval_ns: u64) -> Self {
        Receiver {
            cnp_interval_ns,
            capacity,
            queue_pairs: Vec::with_capacity(capacity),
            index: Vec::with_capacity(capacity),
            totals: ReceiverCounters::default(),
        }
    }

    pub fn counters(&self) -> ReceiverCounters {
        self.totals
    }

    fn find(&self, qp: u32) -> Option<&QueuePair> {
        self.position(qp).ok().map(|i| &self.queue_pairs[self.index[i].1 as usize])
    }

    /// Where `qp` is in the index, or where it would go.
    #[inline]
    fn position(&self, qp: u32) -> Result<usize, usize> {
        self.index.binary_search_by_key(&qp, |&(q, _)| q)
    }

    /// One QP's counters.
    pub fn qp_counters(&self, qp: u32) -> Option<ReceiverCounters> {
        self.find(qp).map(|q| q.counters)
    }

    /// The last message's completion time on `qp`: first arrival to the
    /// in-order delivery of its last packet.
    pub fn flow_completion_ns(&self, qp: u32) -> Option<u64> {
        self.find(qp).and_then(|q| q.last_fct_ns)
    }

    /// The next PSN `qp` expects (the first hole when packets are held).
    pub fn expected_psn(&self, qp: u32) -> Option<u32> {
        self.find(qp).map(|q| q.expected_psn)
    }

    /// A data packet arrived at `now_ns`.
    pub fn on_arrival(&mut self, arrival: Arrival, now_ns: u64) -> Result<Outcome, Refusal> {
        let index = match self.position(arrival.qp) {
            Ok(i) => self.index[i].1 as usize,
            Err(at) if self.queue_pairs.len() < self.capacity => {
                self.index.insert(at, (arrival.qp, self.queue_pairs.len() as u32));
                self.queue_pairs.push(QueuePair {
                    expected_psn: 0,
                    held: [0; REORDER_WINDOW],
                    held_end: [false; REORDER_WINDOW],
                    last_cnp_ns: None,
                    first_arrival_ns: None,
                    last_fct_ns: None,
                    counters: ReceiverCounters::default(),
                });
                self.queue_pairs.len() - 1
            }
            Err(_) => return Err(Refusal::TooManyQueuePairs),
        };
        let qp = &mut self.queue_pairs[index];
        let mut outcome = Outcome::default();
        let before = qp.counters;
        let c = &mut qp.counters;
        c.packets += 1;
        qp.first_arrival_ns.get_or_insert(now_ns);

        if arrival.congestion_experienced {
            c.ce_marked += 1;
            let due = qp.last_cnp_ns.is_none_or(|last| now_ns.saturating_sub(last) >= self.cnp_interval_ns);
            if due {
                qp.last_cnp_ns = Some(now_ns);
                c.cnps_sent += 1;
                outcome.cnp_for_qp = Some(arrival.qp);
            }
        }

        let distance = psn_distance(qp.expected_psn, arrival.psn);
        if distance >= PSN_MODULUS / 2 {
            // Behind the expected PSN: already delivered.
            c.duplicates += 1;
        } else if distance as usize >= REORDER_WINDOW {
            c.beyond_window += 1;
        } else if distance > 0 {
            let slot = (arrival.psn as usize) % REORDER_WINDOW;
            if qp.held[slot] != 0 {
                c.duplicates += 1;
            } else {
                c.out_of_order += 1;
                c.max_reorder_distance = c.max_reorder_distance.max(distance);
                qp.held[slot] = arrival.payload_len + 1;
                qp.held_end[slot] = arrival.opcode.ends_message();
            }
        } else {
            let mut ends = arrival.opcode.ends_message();
            outcome.delivered_packets = 1;
            outcome.delivered_bytes = arrival.payload_len as u64;
            qp.expected_psn = (qp.expected_psn + 1) & (PSN_MODULUS - 1);
            loop {
                if ends {
                    c.messages_completed += 1;
                    outcome.message_completed = true;
                    if let Some(first) = qp.first_arrival_ns.take() {
                        qp.last_fct_ns = Some(now_ns - first);
                    }
                }
                let slot = (qp.expected_psn as usize) % REORDER_WINDOW;
                if qp.held[slot] == 0 {
                    break;
                }
                outcome.delivered_packets += 1;
                outcome.delivered_bytes += (qp.held[slot] - 1) as u64;
                c.reordered_delivered += 1;
                ends = qp.held_end[slot];
                qp.held[slot] = 0;
                qp.held_end[slot] = false;
                qp.expected_psn = (qp.expected_psn + 1) & (PSN_MODULUS - 1);
            }
            c.delivered_packets += outcome.delivered_packets as u64;
            c.delivered_bytes += outcome.delivered_bytes;
        }
        // The totals move by what this QP's counters moved (O(1) per packet).
        let after = *c;
        let t = &mut self.totals;
        t.packets += after.packets - before.packets;
        t.delivered_bytes += after.delivered_bytes - before.delivered_bytes;
        t.delivered_packets += after.delivered_packets - before.delivered_packets;
        t.ce_marked += after.ce_marked - before.ce_marked;
        t.cnps_sent += after.cnps_sent - before.cnps_sent;
        t.out_of_order += after.out_of_order - before.out_of_order;
        t.reordered_delivered += after.reordered_delivered - before.reordered_delivered;
        t.duplicates += after.duplicates - before.duplicates;
        t.beyond_window += after.beyond_window - before.beyond_window;
        t.messages_completed += after.messages_completed - before.messages_completed;
        t.max_reorder_distance = t.max_reorder_distance.max(after.max_reorder_distance);
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(qp: u32, psn: u32, ce: bool) -> Arrival {
        Arrival { qp, psn, opcode: Opcode::SendMiddle, payload_len: 1000, congestion_experienced: ce }
    }

    #[test]
    fn at_most_one_cnp_per_qp_per_interval() {
        let mut rx = Receiver::new(4, DEFAULT_CNP_INTERVAL_NS);
        let mut cnps = Vec::new();
        // CE-marked packets every 10 us for 200 us on QP 7, and one on QP 8.
        for i in 0..20u32 {
            let out = rx.on_arrival(data(7, i, true), i as u64 * 10_000).unwrap();
            cnps.extend(out.cnp_for_qp.map(|qp| (qp, i as u64 * 10_000)));
        }
        let out = rx.on_arrival(data(8, 0, true), 15_000).unwrap();
        assert_eq!(out.cnp_for_qp, Some(8));
        assert_eq!(cnps, vec![(7, 0), (7, 50_000), (7, 100_000), (7, 150_000)]);
        // Unmarked packets never produce one.
        assert_eq!(rx.on_arrival(data(7, 20, false), 1_000_000).unwrap().cnp_for_qp, None);
        let c = rx.counters();
        assert_eq!((c.ce_marked, c.cnps_sent), (21, 5));
        assert_eq!(rx.qp_counters(7).unwrap().cnps_sent, 4);
    }

    #[test]
    fn reorders_within_the_window_and_delivers_in_order() {
        let mut rx = Receiver::new(1, DEFAULT_CNP_INTERVAL_NS);
        // Sprayed: 0, 2, 3, 1, 5, 4 (then a duplicate 3 and a far one).
        let order = [0u32, 2, 3, 1, 5, 4];
        let delivered: Vec<u32> =
            order.iter().map(|&p| rx.on_arrival(data(1, p, false), 0).unwrap().delivered_packets).collect();
        assert_eq!(delivered, vec![1, 0, 0, 3, 0, 2]);
        rx.on_arrival(data(1, 3, false), 0).unwrap();
        rx.on_arrival(data(1, 6 + REORDER_WINDOW as u32, false), 0).unwrap();
        let c = rx.counters();
        assert_eq!(c.delivered_packets, 6);
        assert_eq!(c.delivered_bytes, 6000);
        assert_eq!(c.out_of_order, 3);
        assert_eq!(c.reordered_delivered, 3);
        assert_eq!(c.max_reorder_distance, 2);
        assert_eq!(c.duplicates, 1);
        assert_eq!(c.beyond_window, 1);
    }

    #[test]
    fn psns_wrap_at_24_bits_and_fct_is_first_arrival_to_last_delivery() {
        let mut rx = Receiver::new(1, DEFAULT_CNP_INTERVAL_NS);
        for psn in 0..PSN_MODULUS - 1 {
            // Fast-forward without per-packet cost: only the last few matter.
            if psn == 0 || psn >= PSN_MODULUS - 3 {
                rx.on_arrival(data(2, psn, false), psn as u64).unwrap();
            } else {
                rx.queue_pairs[0].expected_psn = psn + 1;
            }
        }
        rx.on_arrival(data(2, PSN_MODULUS - 1, false), 1_000).unwrap();
        let last = Arrival { opcode: Opcode::SendLast, ..data(2, 1, false) };
        assert_eq!(rx.on_arrival(last, 2_000).unwrap().delivered_packets, 0);
        let out = rx.on_arrival(data(2, 0, false), 3_000).unwrap();
        assert_eq!(out.delivered_packets, 2);
        assert!(out.message_completed);
        assert_eq!(rx.flow_completion_ns(2), Some(3_000));
        assert_eq!(rx.counters().messages_completed, 1);
    }

    #[test]
    fn messages_completed_in_one_drain_are_all_counted() {
        let mut rx = Receiver::new(2, DEFAULT_CNP_INTERVAL_NS);
        let only = |psn| Arrival { opcode: Opcode::SendOnly, ..data(3, psn, false) };
        rx.on_arrival(only(1), 0).unwrap();
        rx.on_arrival(only(2), 0).unwrap();
        rx.on_arrival(data(4, 0, false), 0).unwrap();
        assert_eq!(rx.on_arrival(only(0), 0).unwrap().delivered_packets, 3);
        assert_eq!(rx.counters().messages_completed, 3);
        assert_eq!(rx.qp_counters(3).unwrap().messages_completed, 3);
        assert_eq!(rx.counters().packets, 4);
        assert_eq!(rx.counters().delivered_packets, 4);
    }

    #[test]
    fn queue_pairs_beyond_capacity_are_refused() {
        let mut rx = Receiver::new(1, DEFAULT_CNP_INTERVAL_NS);
        rx.on_arrival(data(1, 0, false), 0).unwrap();
        assert_eq!(rx.on_arrival(data(2, 0, false), 0), Err(Refusal::TooManyQueuePairs));
    }
}
