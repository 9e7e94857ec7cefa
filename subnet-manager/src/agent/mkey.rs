//! M_Key protection (IBA vol. 1 section 14.2.4): the management key a port
//! holds in PortInfo, checked on every Get, Set and TrapRepress that reaches
//! the agent.
//!
//! * An SMP passes when the port's M_Key is 0 or the SMP carries it.
//! * Otherwise, by M_KeyProtectBits (table 130): at level 0 a Get succeeds;
//!   at level 1 a Get succeeds with PortInfo:M_Key returned as zero; at
//!   levels 2 and 3 a Get fails too. A Set or TrapRepress with a wrong key
//!   fails at every level.
//! * A failed check (14.2.4.2): the SMP is discarded with no response,
//!   M_KeyViolations counts it (saturating at 0xffff), the M_Key lease
//!   timer starts if M_KeyLeasePeriod is not 0 and it is not running, and
//!   trap 256 "Bad M_Key" goes to the master SM.
//! * The lease (14.2.4.3): an SMP that passes with the right key stops the
//!   timer; when the timer expires, M_KeyProtectBits go back to 0, so an SM
//!   that lost the key can take the port over again.
//!
//! On a switch the management port's (port 0's) key protects the whole
//! switch; a channel adapter checks the key of the port the SMP came in on.
//! The checks follow Linux's `check_mkey` (qib, hfi1) where IBA leaves room.

use super::Agent;
use crate::packet::attributes::{DATA_DETAILS_LEN, NoticeRepr};
use crate::packet::smp::SmpRouting;
use crate::packet::{Method, SmpRepr};

/// Generic trap 256: "Bad M_Key, <M_Key> from <LID> attempted <Method> with
/// <AttributeID> and <AttributeModifier>" (IBA 14.2.5.1, table 144).
pub const TRAP_BAD_M_KEY: u16 = 256;
/// Notice type "security" (IBA 13.4.8.2: 2).
pub const NOTICE_TYPE_SECURITY: u8 = 2;

/// Nanoseconds per second of M_KeyLeasePeriod.
const SECOND_NS: u64 = 1_000_000_000;

/// What the check decided for one SMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MKeyCheck {
    /// Answer it.
    Pass,
    /// Answer it, with PortInfo:M_Key read as zero (a Get at level 1).
    PassHidingKey,
    /// Discard it unanswered; counted and trapped.
    Violation,
}

/// The M_Key lease timer of one port: when it expires, if running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LeaseTimer {
    pub expires_ns: Option<u64>,
}

/// Byte offsets of trap 256's data details (OpenSM's and Linux's `ntc_256`):
/// reserved, LIDADDR, DRSLID, method, reserved, attribute ID, attribute
/// modifier, M_Key, reserved, DRNotice/DRPathTruncated/DRHopCount, and the
/// return path.
mod ntc_256 {
    pub const LID: usize = 2;
    pub const DR_SLID: usize = 4;
    pub const METHOD: usize = 6;
    pub const ATTRIBUTE_ID: usize = 8;
    pub const ATTRIBUTE_MODIFIER: usize = 10;
    pub const M_KEY: usize = 14;
    pub const DR_TRUNC_HOP: usize = 23;
    pub const DR_RETURN_PATH: usize = 24;
    pub const DR_RETURN_PATH_LEN: usize = 30;
    /// DRNotice: the offending SMP was directed route.
    pub const DR_NOTICE: u8 = 0x80;
    /// DRPathTruncated: its return path did not fit.
    pub const DR_TRUNCATED: u8 = 0x40;
}

/// Trap 256 from `issuer_lid` (a switch's or a CA port's LID) about `smp`.
pub fn bad_m_key_notice(issuer_lid: u16, producer_type: u32, smp: &SmpRepr) -> NoticeRepr {
    use ntc_256::*;
    let mut details = [0u8; DATA_DETAILS_LEN];
    details[LID..LID + 2].copy_from_slice(&issuer_lid.to_be_bytes());
    details[METHOD] = u8::from(smp.method);
    details[ATTRIBUTE_ID..ATTRIBUTE_ID + 2].copy_from_slice(&u16::from(smp.attribute_id).to_be_bytes());
    details[ATTRIBUTE_MODIFIER..ATTRIBUTE_MODIFIER + 4].copy_from_slice(&smp.attribute_modifier.to_be_bytes());
    details[M_KEY..M_KEY + 8].copy_from_slice(&smp.m_key.to_be_bytes());
    if let SmpRouting::DirectedRoute { dr_slid, hop_count, return_path, .. } = &smp.routing {
        details[DR_SLID..DR_SLID + 2].copy_from_slice(&dr_slid.to_be_bytes());
        let hops = usize::from(*hop_count);
        let kept = hops.min(DR_RETURN_PATH_LEN);
        let truncated = if hops > DR_RETURN_PATH_LEN { DR_TRUNCATED } else { 0 };
        details[DR_TRUNC_HOP] = DR_NOTICE | truncated | (*hop_count & 0x3f);
        // The return path as recorded so far, from hop 1.
        details[DR_RETURN_PATH..DR_RETURN_PATH + kept].copy_from_slice(&return_path[1..=kept]);
    }
    NoticeRepr {
        is_generic: true,
        notice_type: NOTICE_TYPE_SECURITY,
        producer_type,
        trap_number: TRAP_BAD_M_KEY,
        issuer_lid,
        notice_toggle: false,
        notice_count: 0,
        data_details: details,
    }
}

/// The M_Key of trap 256's data details (what the offending SMP carried).
pub fn bad_m_key_of(notice: &NoticeRepr) -> u64 {
    let at = ntc_256::M_KEY;
    u64::from_be_bytes(notice.data_details[at..at + 8].try_into().unwrap_or([0; 8]))
}

impl Agent {
    /// The port whose PortInfo M_Key fields protect an SMP that came in on
    /// `in_port`.
    pub(super) fn key_port(&self, in_port: u8) -> usize {
        if self.is_switch() { 0 } else { usize::from(in_port) }
    }

    /// Time for the M_Key lease timers (the caller's clock, nanoseconds):
    /// an expired lease clears its port's M_KeyProtectBits.
    pub fn advance_clock(&mut self, now_ns: u64) {
        self.clock_ns = self.clock_ns.max(now_ns);
        for (port, lease) in self.m_key_leases.iter_mut().enumerate() {
            if lease.expires_ns.is_some_and(|at| at <= self.clock_ns) {
                lease.expires_ns = None;
                if let Some(info) = self.ports.get_mut(port) {
                    info.m_key_protect_bits = 0;
                }
            }
        }
    }

    /// When the next lease expires, for the caller's timer.
    pub fn next_lease_expiry_ns(&self) -> Option<u64> {
        self.m_key_leases.iter().filter_map(|lease| lease.expires_ns).min()
    }

    /// The M_Key check of IBA 14.2.4.1 for `smp` arriving on `in_port`,
    /// with its consequences (violation counter, lease timer, trap 256).
    /// Methods other than Get, Set and TrapRepress are not checked.
    pub fn check_m_key(&mut self, in_port: u8, smp: &SmpRepr) -> MKeyCheck {
        if !matches!(smp.method, Method::Get | Method::Set | Method::TrapRepress) {
            return MKeyCheck::Pass;
        }
        let port = self.key_port(in_port);
        let Some(info) = self.ports.get(port) else { return MKeyCheck::Pass };
        let (key, protect) = (info.m_key, info.m_key_protect_bits);
        if key == 0 || smp.m_key == key {
            // The right key renews the lease.
            if key != 0
                && let Some(lease) = self.m_key_leases.get_mut(port)
            {
                lease.expires_ns = None;
            }
            return MKeyCheck::Pass;
        }
        match (smp.method, protect) {
            (Method::Get, 0) => return MKeyCheck::Pass,
            (Method::Get, 1) => return MKeyCheck::PassHidingKey,
            _ => {}
        }
        let info = &mut self.ports[port];
        info.m_key_violations = info.m_key_violations.saturating_add(1);
        let period = u64::from(info.m_key_lease_period);
        if period != 0
            && let Some(lease) = self.m_key_leases.get_mut(port)
            && lease.expires_ns.is_none()
        {
            lease.expires_ns = Some(self.clock_ns + period * SECOND_NS);
        }
        self.counters.m_key_violations += 1;
        let issuer = if self.is_switch() { self.ports[0].lid } else { self.ports[port].lid };
        let producer = u32::from(u8::from(self.node_info.node_type));
        self.push_notice(bad_m_key_notice(issuer, producer, smp));
        MKeyCheck::Violation
    }
}
