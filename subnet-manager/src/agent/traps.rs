//! Traps the agent sends to the master SM, and their repetition (IBA vol. 1
//! section 13.4.9): a Trap is sent again until the SM answers it with a
//! TrapRepress carrying its transaction ID.
//!
//! The first repeat waits the subnet timeout of the port's PortInfo
//! (4.096 us x 2^SubnetTimeout, the time IBA gives the SM to answer, as
//! Linux's hfi1 uses for its trap timer); every later one waits twice as
//! long as the one before, up to [`MAX_BACKOFF`] times the first, so an SM
//! that is gone is not flooded and one that comes back is told within a
//! bounded time. Sans-IO: the planes ask [`Agent::poll_traps`] what is due
//! and send it LID routed to the master SM.

use std::collections::VecDeque;

use super::Agent;
use super::mkey::MKeyCheck;
use crate::packet::attributes::{AttributeId, Notice, NoticeRepr};
use crate::packet::smp::DATA_LEN;
use crate::packet::{Method, SmpRepr};

/// The longest wait between repeats, as a multiple of the first.
pub const MAX_BACKOFF: u64 = 16;
/// Traps waiting for their TrapRepress at most; a newer one displaces the
/// oldest (the SM's sweep finds what a lost trap would have said).
pub const MAX_OUTSTANDING: usize = 16;

/// A trap sent and not yet repressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outstanding {
    pub transaction_id: u64,
    pub notice: NoticeRepr,
    /// Times sent so far.
    pub sends: u32,
    pub next_send_ns: u64,
    pub interval_ns: u64,
}

/// The agent's traps: new notices, those awaiting TrapRepress.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TrapSender {
    fresh: VecDeque<NoticeRepr>,
    outstanding: VecDeque<Outstanding>,
    last_transaction: u64,
}

impl TrapSender {
    pub fn outstanding(&self) -> impl Iterator<Item = &Outstanding> {
        self.outstanding.iter()
    }
}

/// A trap to send now: LID routed to `dlid` (the master SM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrapOut {
    pub smp: SmpRepr,
    pub dlid: u16,
    /// A repeat of a trap sent before.
    pub repeat: bool,
}

/// The subnet timeout of PortInfo in nanoseconds: 4.096 us x 2^value.
pub fn subnet_timeout_ns(value: u8) -> u64 {
    4096u64 << value.min(31)
}

impl Agent {
    /// Queues a notice for the master SM (sent at the next
    /// [`poll_traps`](Self::poll_traps)).
    pub fn push_notice(&mut self, notice: NoticeRepr) {
        if self.traps.fresh.len() >= MAX_OUTSTANDING {
            self.traps.fresh.pop_front();
        }
        self.traps.fresh.push_back(notice);
    }

    pub fn traps(&self) -> &TrapSender {
        &self.traps
    }

    /// The port whose PortInfo names the master SM and our LID: port 0 on a
    /// switch, the CA's one port.
    fn trap_port(&self) -> usize {
        if self.is_switch() { 0 } else { 1 }
    }

    /// Traps due at `now`: new notices and repeats. Without a LID of our own
    /// or a master SM to send to, new notices are dropped (an SM that
    /// arrives later sweeps) and outstanding ones wait.
    pub fn poll_traps(&mut self, now: u64) -> Vec<TrapOut> {
        let Some(info) = self.ports.get(self.trap_port()) else { return Vec::new() };
        let (lid, sm_lid, timeout) = (info.lid, info.master_sm_lid, subnet_timeout_ns(info.subnet_timeout));
        let mut out = Vec::new();
        if lid == 0 || sm_lid == 0 {
            self.traps.fresh.clear();
            return out;
        }
        while let Some(notice) = self.traps.fresh.pop_front() {
            self.traps.last_transaction += 1;
            let trap = Outstanding {
                transaction_id: self.traps.last_transaction,
                notice,
                sends: 1,
                next_send_ns: now + timeout,
                interval_ns: timeout,
            };
            if self.traps.outstanding.len() >= MAX_OUTSTANDING {
                self.traps.outstanding.pop_front();
            }
            self.traps.outstanding.push_back(trap);
            self.counters.traps_sent += 1;
            out.push(TrapOut { smp: trap_smp(&trap), dlid: sm_lid, repeat: false });
        }
        for trap in self.traps.outstanding.iter_mut().filter(|t| t.next_send_ns <= now) {
            trap.sends += 1;
            trap.interval_ns = (trap.interval_ns * 2).min(timeout * MAX_BACKOFF);
            trap.next_send_ns = now + trap.interval_ns;
            self.counters.traps_resent += 1;
            out.push(TrapOut { smp: trap_smp(trap), dlid: sm_lid, repeat: true });
        }
        out
    }

    /// When the next repeat is due.
    pub fn next_trap_ns(&self) -> Option<u64> {
        self.traps.outstanding.iter().map(|t| t.next_send_ns).min()
    }

    /// A TrapRepress arrived on `in_port` (IBA 13.4.9): it ends the trap of
    /// its transaction ID, if it passes the M_Key check. True if it ended
    /// one.
    pub fn trap_repressed(&mut self, in_port: u8, smp: &SmpRepr) -> bool {
        if smp.method != Method::TrapRepress || self.check_m_key(in_port, smp) == MKeyCheck::Violation {
            return false;
        }
        let before = self.traps.outstanding.len();
        self.traps.outstanding.retain(|t| t.transaction_id != smp.transaction_id);
        let ended = self.traps.outstanding.len() < before;
        self.counters.traps_repressed += u64::from(ended);
        ended
    }
}

fn trap_smp(trap: &Outstanding) -> SmpRepr {
    let mut data = [0u8; DATA_LEN];
    trap.notice.emit(&mut Notice::new_unchecked(&mut data[..]));
    SmpRepr::lid_routed(Method::Trap, trap.transaction_id, AttributeId::Notice, 0, data)
}
