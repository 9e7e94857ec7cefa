//! SMPs in flight: a window of outstanding requests matched to responses by
//! transaction ID, each retried after a timeout up to a retry count, then
//! reported failed. Responses that do not parse, or match nothing, are
//! counted and dropped. Sans-IO: time is an input.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::packet::smp::SmpRouting;
use crate::packet::{MAD_LEN, MadStatus, SmpRepr};

/// Why a request produced no usable answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmpFailure {
    /// No response after this many transmissions.
    Timeout { attempts: u8 },
    /// The agent answered with a non-zero status (other than busy).
    BadStatus(MadStatus),
}

impl core::fmt::Display for SmpFailure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SmpFailure::Timeout { attempts } => write!(f, "no response after {attempts} attempts"),
            SmpFailure::BadStatus(status) => write!(f, "status {status}"),
        }
    }
}

/// A finished request: its context and the response or the failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion<C> {
    pub context: C,
    pub request: SmpRepr,
    pub result: Result<SmpRepr, SmpFailure>,
}

/// An SMP to put on the wire: 256 bytes and the DLID to send them to
/// (the permissive LID 0xFFFF for directed route).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutgoingSmp {
    pub bytes: [u8; MAD_LEN],
    pub dlid: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequesterCounters {
    pub sent: u64,
    pub retried: u64,
    pub timed_out: u64,
    pub bad_status: u64,
    pub busy: u64,
    pub malformed_responses: u64,
    pub unmatched_responses: u64,
}

/// The TID bits the requester owns.
const TID_MASK: u64 = 0xffff_ffff;

struct Outstanding<C> {
    context: C,
    request: SmpRepr,
    attempts: u8,
    deadline: u64,
}

pub struct Requester<C> {
    pub window: usize,
    pub timeout_ns: u64,
    /// Transmissions after the first.
    pub retries: u8,
    next_tid: u64,
    queue: VecDeque<(C, SmpRepr, u8)>,
    outstanding: FxHashMap<u64, Outstanding<C>>,
    /// (deadline, tid) in send order; stale entries skipped.
    deadlines: VecDeque<(u64, u64)>,
    pub counters: RequesterCounters,
}

impl<C> Requester<C> {
    pub fn new(window: usize, timeout_ns: u64, retries: u8, first_tid: u64) -> Requester<C> {
        Requester {
            window: window.max(1),
            timeout_ns,
            retries,
            next_tid: (first_tid & TID_MASK).max(1),
            queue: VecDeque::new(),
            outstanding: FxHashMap::default(),
            deadlines: VecDeque::new(),
            counters: RequesterCounters::default(),
        }
    }

    /// Queues a request; its transaction ID is assigned when it is sent.
    pub fn submit(&mut self, context: C, request: SmpRepr) {
        self.queue.push_back((context, request, 0));
    }

    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.outstanding.is_empty()
    }

    pub fn in_flight(&self) -> usize {
        self.outstanding.len()
    }

    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The next SMP to send, while the window has room.
    pub fn poll_transmit(&mut self, now: u64) -> Option<OutgoingSmp> {
        if self.outstanding.len() >= self.window {
            return None;
        }
        let (context, mut request, attempts) = self.queue.pop_front()?;
        let tid = self.next_tid;
        self.next_tid = (self.next_tid + 1) & TID_MASK;
        if self.next_tid == 0 {
            self.next_tid = 1;
        }
        request.transaction_id = tid;
        let dlid = match request.routing {
            SmpRouting::DirectedRoute { .. } => crate::packet::smp::PERMISSIVE_LID,
            SmpRouting::LidRouted => 0,
        };
        let bytes = request.to_bytes();
        let deadline = now + self.timeout_ns;
        self.deadlines.push_back((deadline, tid));
        self.outstanding.insert(tid, Outstanding { context, request, attempts: attempts + 1, deadline });
        self.counters.sent += 1;
        if attempts > 0 {
            self.counters.retried += 1;
        }
        Some(OutgoingSmp { bytes, dlid })
    }

    /// A MAD arrived. Returns the completion it finishes, if any; a busy
    /// status queues the request again (it counts as an attempt).
    pub fn on_response(&mut self, bytes: &[u8]) -> Option<Completion<C>> {
        let Ok(response) = SmpRepr::parse_bytes(bytes) else {
            self.counters.malformed_responses += 1;
            return None;
        };
        if !response.method.is_response() {
            self.counters.unmatched_responses += 1;
            return None;
        }
        // The kernel's MAD layer owns the upper 32 bits of the TID (it
        // writes its agent's there); ours are the lower 32.
        let Some(outstanding) = self.outstanding.remove(&(response.transaction_id & TID_MASK)) else {
            self.counters.unmatched_responses += 1;
            return None;
        };
        if response.status.busy() && outstanding.attempts <= self.retries {
            self.counters.busy += 1;
            self.queue.push_front((outstanding.context, outstanding.request, outstanding.attempts));
            return None;
        }
        let result = if response.status.is_ok() {
            Ok(response)
        } else {
            self.counters.bad_status += 1;
            Err(SmpFailure::BadStatus(response.status))
        };
        Some(Completion { context: outstanding.context, request: outstanding.request, result })
    }

    /// Expires requests whose deadline passed: queued again while retries
    /// remain, else reported.
    pub fn on_timer(&mut self, now: u64, failed: &mut Vec<Completion<C>>) {
        while let Some(&(deadline, tid)) = self.deadlines.front() {
            if deadline > now {
                break;
            }
            self.deadlines.pop_front();
            let Some(entry) = self.outstanding.get(&tid) else { continue };
            if entry.deadline != deadline {
                continue;
            }
            let entry = self.outstanding.remove(&tid).expect("present");
            if entry.attempts <= self.retries {
                self.queue.push_front((entry.context, entry.request, entry.attempts));
            } else {
                self.counters.timed_out += 1;
                failed.push(Completion {
                    context: entry.context,
                    request: entry.request,
                    result: Err(SmpFailure::Timeout { attempts: entry.attempts }),
                });
            }
        }
    }

    /// Drops every queued and outstanding request whose context `matches`,
    /// freeing its window slot; a late answer to one counts as unmatched.
    /// Returns how many were dropped.
    pub fn cancel(&mut self, mut matches: impl FnMut(&C) -> bool) -> usize {
        let before = self.queue.len() + self.outstanding.len();
        self.queue.retain(|(context, _, _)| !matches(context));
        self.outstanding.retain(|_, o| !matches(&o.context));
        before - self.queue.len() - self.outstanding.len()
    }

    /// When [`Requester::on_timer`] next has something to do.
    pub fn next_deadline(&self) -> Option<u64> {
        self.deadlines
            .iter()
            .find(|(d, tid)| self.outstanding.get(tid).is_some_and(|o| o.deadline == *d))
            .map(|(d, _)| *d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{AttributeId, Method};

    fn request() -> SmpRepr {
        SmpRepr::directed(Method::Get, 0, AttributeId::NodeInfo, 0, &[1], [0; 64]).unwrap()
    }

    fn answer(bytes: &[u8; 256], status: MadStatus) -> [u8; 256] {
        let mut response = SmpRepr::parse_bytes(bytes).unwrap();
        response.method = Method::GetResp;
        response.status = status;
        response.to_bytes()
    }

    #[test]
    fn window_limits_what_is_in_flight() {
        let mut requester = Requester::new(2, 1_000, 1, 100);
        for i in 0..3 {
            requester.submit(i, request());
        }
        let first = requester.poll_transmit(0).unwrap();
        let _second = requester.poll_transmit(0).unwrap();
        assert!(requester.poll_transmit(0).is_none(), "window of 2");
        let done = requester.on_response(&answer(&first.bytes, MadStatus::OK)).unwrap();
        assert_eq!(done.context, 0);
        assert!(done.result.is_ok());
        assert!(requester.poll_transmit(0).is_some(), "room again");
    }

    #[test]
    fn timeouts_retry_then_fail() {
        let mut requester = Requester::new(4, 1_000, 2, 1);
        requester.submit("a", request());
        let mut failed = Vec::new();
        for attempt in 0..3u64 {
            let sent = requester.poll_transmit(attempt * 1_000).unwrap();
            assert_eq!(SmpRepr::parse_bytes(&sent.bytes).unwrap().transaction_id, 1 + attempt, "a new TID each time");
            requester.on_timer(attempt * 1_000 + 999, &mut failed);
            assert!(failed.is_empty());
            requester.on_timer(attempt * 1_000 + 1_000, &mut failed);
        }
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].result, Err(SmpFailure::Timeout { attempts: 3 }));
        assert!(requester.is_idle());
        assert_eq!(requester.counters.retried, 2);
        assert_eq!(requester.counters.timed_out, 1);
    }

    #[test]
    fn garbage_late_and_bad_status_answers() {
        let mut requester = Requester::new(4, 1_000, 0, 1);
        requester.submit(7, request());
        let sent = requester.poll_transmit(0).unwrap();
        assert!(requester.on_response(&[0u8; 10]).is_none());
        assert_eq!(requester.counters.malformed_responses, 1);
        // A request echoed back (not a response) matches nothing.
        assert!(requester.on_response(&sent.bytes).is_none());
        let failed = requester.on_response(&answer(&sent.bytes, MadStatus(0x001c))).unwrap();
        assert_eq!(failed.result, Err(SmpFailure::BadStatus(MadStatus(0x001c))));
        // The same answer again: nothing outstanding any more.
        assert!(requester.on_response(&answer(&sent.bytes, MadStatus::OK)).is_none());
        assert_eq!(requester.counters.unmatched_responses, 2);
    }

    #[test]
    fn busy_is_retried() {
        let mut requester = Requester::new(4, 1_000, 1, 1);
        requester.submit((), request());
        let sent = requester.poll_transmit(0).unwrap();
        assert!(requester.on_response(&answer(&sent.bytes, MadStatus(MadStatus::BUSY))).is_none());
        let again = requester.poll_transmit(10).unwrap();
        assert!(requester.on_response(&answer(&again.bytes, MadStatus::OK)).unwrap().result.is_ok());
    }
}

#[cfg(test)]
mod cancel_tests {
    use super::*;
    use crate::packet::{AttributeId, Method};

    #[test]
    fn cancelled_requests_free_the_window() {
        let mut requester = Requester::new(1, 1_000, 3, 1);
        let smp = SmpRepr::directed(Method::Get, 0, AttributeId::SwitchInfo, 0, &[1], [0; 64]).unwrap();
        requester.submit("light", smp);
        requester.submit("light", smp);
        requester.submit("heavy", smp);
        let stale = requester.poll_transmit(0).unwrap();
        assert!(requester.poll_transmit(0).is_none(), "window of 1 full");
        assert_eq!(requester.cancel(|c| *c == "light"), 2);
        let next = requester.poll_transmit(0).unwrap();
        assert_ne!(next.bytes, stale.bytes, "the heavy request, with its own TID");
        let mut late = SmpRepr::parse_bytes(&stale.bytes).unwrap();
        late.method = Method::GetResp;
        assert!(requester.on_response(&late.to_bytes()).is_none());
        assert_eq!(requester.counters.unmatched_responses, 1);
    }
}

#[cfg(test)]
mod tid_tests {
    use super::*;
    use crate::packet::{AttributeId, Method};

    #[test]
    fn the_kernels_upper_tid_bits_are_ignored() {
        let mut requester = Requester::new(4, 1_000, 0, 1);
        requester.submit(1u8, SmpRepr::directed(Method::Get, 0, AttributeId::NodeInfo, 0, &[], [0; 64]).unwrap());
        let sent = requester.poll_transmit(0).unwrap();
        let mut response = SmpRepr::parse_bytes(&sent.bytes).unwrap();
        response.method = Method::GetResp;
        response.transaction_id |= 0x0000_0007_0000_0000;
        assert!(requester.on_response(&response.to_bytes()).is_some());
    }
}
