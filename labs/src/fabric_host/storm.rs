//! `fabric-host pfc-storm`: a misbehaving peer that pauses a priority and
//! never lets go — PFC XOFF frames (802.1Qbb, the largest quanta by
//! default) refreshed every interval for as long as asked. What a NIC stuck
//! in a PFC storm looks like to the switch, for its PFC watchdog.

use std::time::Duration;

use dataplane::wire::mac_control::{self, MacControlPacket, MacControlRepr};
use dataplane::wire::{EtherType, EthernetFrame, EthernetRepr, ethernet};
use serde::Serialize;

use super::{Link, monotonic_ns};

#[derive(Debug, Clone)]
pub struct StormOptions {
    pub interface: String,
    /// Priorities paused, bit per priority.
    pub class_enable: u8,
    /// Pause quanta of each enabled priority (512 bit times each).
    pub quanta: u16,
    /// Time between two XOFF frames.
    pub interval: Duration,
    /// How long the storm lasts.
    pub duration: Duration,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StormReport {
    pub pfc_frames_sent: u64,
    pub duration_ns: u64,
}

/// Sends PFC XOFF frames on `options.interface` until the duration passes.
pub fn storm(options: &StormOptions) -> Result<StormReport, String> {
    let mut link = Link::open(&options.interface)?;
    let mut frame = [0u8; ethernet::HEADER_LEN + mac_control::MIN_LEN];
    EthernetRepr { dst_addr: mac_control::DESTINATION, src_addr: link.mac, ethertype: EtherType::MacControl }
        .emit(&mut EthernetFrame::new_unchecked(&mut frame[..]));
    let quanta =
        core::array::from_fn(|priority| if options.class_enable & (1 << priority) != 0 { options.quanta } else { 0 });
    MacControlRepr::PriorityFlowControl { class_enable: options.class_enable, quanta }
        .emit(&mut MacControlPacket::new_unchecked(&mut frame[ethernet::HEADER_LEN..]));
    let start = monotonic_ns();
    let end = start + options.duration.as_nanos() as u64;
    let interval = options.interval.as_nanos() as u64;
    let mut report = StormReport::default();
    let mut next = start;
    while monotonic_ns() < end {
        link.send(&frame)?;
        link.flush();
        report.pfc_frames_sent += 1;
        next += interval;
        // Whatever arrives meanwhile (the switch's traffic) is read and
        // ignored, so the socket's ring never fills.
        while monotonic_ns() < next.min(end) {
            super::wait_readable(link.fd(), next.min(end).saturating_sub(monotonic_ns()));
            link.receive();
        }
    }
    report.duration_ns = monotonic_ns() - start;
    Ok(report)
}
