//! Stage 1, port ingress: counters, admin and oper state, link-level frames
//! taken off the port before anything else; frames the host sends out of a
//! port; and the timers `Switch::poll` runs.

use super::context::Stages;
use crate::pipeline::config::SECOND;
use crate::pipeline::counters::DropReason;
use crate::pipeline::disposition::{Disposition, IB_LIKE, LinkLevelFrame, MAC_CONTROL, link_level_frame};
use crate::pipeline::output::Output;
use crate::pipeline::tables::PortId;

impl Stages {
    pub(crate) fn poll_timers(&mut self, now: u64, out: &mut Output) {
        if now >= self.state.next_fdb_scan {
            self.tables.age_fdb(now);
            // Scanning a big table on every poll would cost more than it
            // buys: aging is accurate to a tenth of the aging time.
            self.state.next_fdb_scan =
                now.saturating_add((self.tables.config.fdb_aging_ns / 10).clamp(SECOND / 10, 10 * SECOND));
        }
        if now >= self.state.next_neighbor_scan {
            self.neighbor_timers(now, out);
            self.state.next_neighbor_scan =
                now.saturating_add((self.tables.config.neighbor_retrans_ns / 4).max(SECOND / 1000));
        }
    }

    pub(crate) fn ingress(&mut self, now: u64, ingress: PortId, frame: &[u8], out: &mut Output) -> Disposition {
        let Some(port) = self.tables.ports.get_mut(usize::from(ingress)).and_then(Option::as_mut) else {
            self.state.drops.count(DropReason::UnknownPort);
            return Disposition::Dropped(DropReason::UnknownPort);
        };
        port.counters.count_rx(frame);
        if !port.is_up() {
            return self.drop(Some(ingress), DropReason::PortDown);
        }
        // One compare on the common path; the kind is worked out only for
        // the rare link-level frame.
        let ethertype = match frame.get(12..14) {
            Some(&[high, low]) => u16::from_be_bytes([high, low]),
            _ => 0,
        };
        if (ethertype == MAC_CONTROL || ethertype == IB_LIKE)
            && let Some(kind) = link_level_frame(frame)
        {
            let counters = &mut port.counters.link_level;
            match kind {
                LinkLevelFrame::Pause => counters.pause_rx += 1,
                LinkLevelFrame::Pfc => counters.pfc_rx += 1,
                LinkLevelFrame::MacControlOther => counters.mac_control_other_rx += 1,
                LinkLevelFrame::IbLike => counters.ib_rx += 1,
            }
            return Disposition::LinkLevel(kind);
        }
        self.bridge_ingress(now, ingress, frame, out)
    }

    pub(crate) fn host_transmit(&mut self, _now: u64, port: PortId, frame: &[u8], out: &mut Output) {
        match self.tables.port(port) {
            Some(p) if p.is_up() => self.emit_port(port, frame.len(), out, |buf| buf.copy_from_slice(frame)),
            Some(_) => {
                self.tables.count_tx_drop(port);
                self.state.drops.count(DropReason::EgressPortDown);
            }
            None => self.state.drops.count(DropReason::UnknownPort),
        }
    }
}
