//! Congestion control of the IB-like plane, after IBA vol. 1 annex A10:
//! a switch port above its threshold marks FECN in the packets it sends
//! ([`PortMarker`]); the destination CA answers a marked packet with a
//! BECN to the source (in a congestion notification packet); the source
//! raises the flow's index into its Congestion Control Table (CCT) and
//! leaves that table entry's inter-packet delay between its packets
//! ([`FlowThrottle`]); a timer lowers the index again.
//!
//! Sans-IO: the caller says what a port queues and whether it had credit,
//! and when BECNs arrive; these decide what to mark and how long to wait.

/// A switch's CongestionControl settings for its ports (A10.4.3.4,
/// SwitchCongestionSetting; the threshold in bytes instead of A10's
/// 4-bit level).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SwitchCongestionSetting {
    /// Bytes queued for a port's VL above which the port is congested.
    pub threshold_bytes: u32,
    /// Packets sent unmarked between two marks while congested
    /// (A10.2.1.1 Marking_Rate; 0: every packet).
    pub marking_rate: u16,
    /// Mark also when the port is congested only because its downstream
    /// gives no credit (a victim, A10.2.1.1 Victim_Mask), not just at the
    /// root of the congestion.
    pub victim_mask: bool,
}

impl Default for SwitchCongestionSetting {
    fn default() -> Self {
        SwitchCongestionSetting { threshold_bytes: 32 << 10, marking_rate: 0, victim_mask: false }
    }
}

/// One switch port's marking state.
#[derive(Debug, Clone, Copy, Default)]
pub struct PortMarker {
    since_mark: u16,
    marked: u64,
}

impl PortMarker {
    /// A data packet leaves the port with `queued_bytes` still waiting on
    /// its VL; `credit_starved`: the downstream receiver has no credit for
    /// another packet on it. True: set FECN in this packet.
    ///
    /// A10.2.1.1: a port above the threshold that still has credit is the
    /// root of the congestion (it sends as fast as its line allows and the
    /// queue grows all the same); one without credit is a victim of
    /// congestion further on, and marks only with the victim mask, so that
    /// flows crossing it to elsewhere are not slowed for someone else's
    /// hot spot.
    pub fn on_transmit(&mut self, setting: &SwitchCongestionSetting, queued_bytes: u32, credit_starved: bool) -> bool {
        let congested = queued_bytes > setting.threshold_bytes && (!credit_starved || setting.victim_mask);
        if !congested {
            return false;
        }
        if self.since_mark < setting.marking_rate {
            self.since_mark += 1;
            return false;
        }
        self.since_mark = 0;
        self.marked += 1;
        true
    }

    /// Packets this port has marked.
    pub fn marked(&self) -> u64 {
        self.marked
    }
}

/// A CA's congestion control settings (A10.4.3.7 CACongestionSetting and
/// the Congestion Control Table of A10.4.3.9).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CaCongestionSetting {
    /// Added to a flow's CCT index per BECN (CCTI_Increase).
    pub ccti_increase: u16,
    /// The index's floor (CCTI_Min).
    pub ccti_min: u16,
    /// The index drops by one every this long (CCTI_Timer, in ns here).
    pub ccti_timer_ns: u64,
    /// Inter-packet delay per index, ns; its length is CCTI_Limit + 1.
    pub table: Vec<u64>,
}

impl CaCongestionSetting {
    /// A table of `entries` delays growing by `step_ns` per index (entry 0:
    /// no delay), as OpenSM's default CCT grows its multiplier.
    pub fn linear(entries: u16, step_ns: u64, ccti_increase: u16, ccti_timer_ns: u64) -> CaCongestionSetting {
        CaCongestionSetting {
            ccti_increase,
            ccti_min: 0,
            ccti_timer_ns: ccti_timer_ns.max(1),
            table: (0..u64::from(entries.max(1))).map(|i| i * step_ns).collect(),
        }
    }

    /// CCTI_Limit: the last index of the table.
    pub fn ccti_limit(&self) -> u16 {
        (self.table.len().max(1) - 1) as u16
    }
}

impl Default for CaCongestionSetting {
    fn default() -> Self {
        // 128 entries of 40 ns: at 4 KiB packets of 100 Gb/s (333 ns) the
        // last entry sends at about a sixteenth of the line. One step per
        // BECN and one back every 2 us: in the simulator's incast beside
        // a victim (labs/tests/sim_ib.rs) larger steps or a slower timer
        // overshoot (the incast slows far below its share) and smaller
        // delays never relieve the shared cable.
        CaCongestionSetting::linear(128, 40, 1, 2_000)
    }
}

/// One flow's (queue pair's) throttle at its source CA.
#[derive(Debug, Clone, Copy, Default)]
pub struct FlowThrottle {
    ccti: u16,
    /// When the CCTI timer last fired (or the index last rose from its floor).
    timer_from: u64,
    becns: u64,
}

impl FlowThrottle {
    /// A BECN for this flow arrived at `now` (A10.3.1.1): the index rises
    /// by CCTI_Increase, up to CCTI_Limit.
    pub fn becn(&mut self, setting: &CaCongestionSetting, now: u64) {
        self.expire(setting, now);
        if self.ccti <= setting.ccti_min {
            self.timer_from = now;
        }
        self.ccti = self.ccti.saturating_add(setting.ccti_increase).min(setting.ccti_limit());
        self.becns += 1;
    }

    /// The CCTI timer's expiries up to `now` (A10.3.1.2): one step down
    /// each, not below CCTI_Min.
    fn expire(&mut self, setting: &CaCongestionSetting, now: u64) {
        if self.ccti <= setting.ccti_min {
            self.timer_from = now;
            return;
        }
        let expiries = now.saturating_sub(self.timer_from) / setting.ccti_timer_ns;
        let steps = expiries.min(u64::from(self.ccti - setting.ccti_min)) as u16;
        self.ccti -= steps;
        self.timer_from += u64::from(steps) * setting.ccti_timer_ns;
    }

    /// The delay to leave after a packet sent at `now` before the flow's
    /// next (the CCT entry at the flow's index).
    pub fn inter_packet_delay_ns(&mut self, setting: &CaCongestionSetting, now: u64) -> u64 {
        self.expire(setting, now);
        setting.table.get(usize::from(self.ccti)).copied().unwrap_or(0)
    }

    pub fn ccti(&self) -> u16 {
        self.ccti
    }

    /// BECNs this flow has taken.
    pub fn becns(&self) -> u64 {
        self.becns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_port_marks_above_its_threshold_at_the_marking_rate() {
        let setting = SwitchCongestionSetting { threshold_bytes: 1000, marking_rate: 2, victim_mask: false };
        let mut port = PortMarker::default();
        assert!(!port.on_transmit(&setting, 1000, false), "at the threshold: not above it");
        let marks: Vec<bool> = (0..6).map(|_| port.on_transmit(&setting, 5000, false)).collect();
        assert_eq!(marks, [false, false, true, false, false, true]);
        assert_eq!(port.marked(), 2);
    }

    #[test]
    fn a_victim_port_marks_only_with_the_victim_mask() {
        let root_only = SwitchCongestionSetting { threshold_bytes: 0, marking_rate: 0, victim_mask: false };
        let mut port = PortMarker::default();
        assert!(!port.on_transmit(&root_only, 5000, true));
        let victims_too = SwitchCongestionSetting { victim_mask: true, ..root_only };
        assert!(port.on_transmit(&victims_too, 5000, true));
    }

    #[test]
    fn becns_raise_the_delay_up_to_the_limit_and_the_timer_lowers_it() {
        let setting = CaCongestionSetting::linear(8, 100, 3, 1000);
        let mut flow = FlowThrottle::default();
        assert_eq!(flow.inter_packet_delay_ns(&setting, 0), 0);
        flow.becn(&setting, 0);
        assert_eq!(flow.inter_packet_delay_ns(&setting, 0), 300);
        flow.becn(&setting, 10);
        flow.becn(&setting, 20);
        assert_eq!(flow.ccti(), 7, "capped at CCTI_Limit");
        assert_eq!(flow.inter_packet_delay_ns(&setting, 999), 700);
        assert_eq!(flow.inter_packet_delay_ns(&setting, 1000), 600, "one expiry a timer period");
        assert_eq!(flow.inter_packet_delay_ns(&setting, 4500), 300);
        assert_eq!(flow.inter_packet_delay_ns(&setting, 100_000), 0, "down to CCTI_Min, no further");
        assert_eq!(flow.becns(), 3);
    }
}
