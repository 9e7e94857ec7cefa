//! A copy of the traffic manager's counters and occupancy, taken by the
//! forwarding thread and read by whoever shows them (the shim's soft
//! backend, `swcli show queue counters` ...), so readers never touch the
//! live traffic manager.

use qos::classify::CLASSES;
use qos::tm::DropReason;

use super::QosTrafficManager;

/// One egress queue (SONiC `show queue counters|wredcounters|watermark`,
/// `show pfcwd stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub tx_frames: u64,
    pub tx_bytes: u64,
    pub dropped_frames: u64,
    pub dropped_bytes: u64,
    pub ecn_marked: u64,
    pub wred_dropped: u64,
    pub depth_frames: u32,
    pub depth_bytes: u32,
    pub watermark_bytes: u32,
    /// The PFC watchdog: a storm now, storms detected and restored, frames
    /// its drop action discarded.
    pub storm: bool,
    pub storms_detected: u64,
    pub storms_restored: u64,
    pub watchdog_dropped: u64,
    /// The latest storm, in the traffic manager's clock (ns): when it began
    /// and when the watchdog detected it (both 0: none yet).
    pub storm_began_ns: u64,
    pub storm_detected_ns: u64,
    /// Its end: the peer's last pause, and when the watchdog restored the
    /// queue (both 0: no storm ended yet).
    pub storm_last_pause_ns: u64,
    pub storm_restored_ns: u64,
}

/// One ingress priority group (SONiC `show priority-group watermark`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PriorityGroupStats {
    pub lossless: bool,
    pub xoff: bool,
    pub shared_bytes: u64,
    pub headroom_bytes: u64,
    pub watermark_shared_bytes: u64,
    pub watermark_headroom_bytes: u64,
    pub dropped_frames: u64,
}

/// PFC of one port, by priority (SONiC `show pfc counters`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PfcStats {
    pub rx_frames: [u64; CLASSES],
    pub tx_frames: [u64; CLASSES],
    /// Time each priority of our transmit side was paused by the peer, ns.
    pub paused_ns: [u64; CLASSES],
}

/// One port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortQosStats {
    pub speed_bps: u64,
    pub queues: [QueueStats; CLASSES],
    pub priority_groups: [PriorityGroupStats; CLASSES],
    pub pfc: PfcStats,
}

/// The whole traffic manager at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QosStats {
    /// When it was taken, on the forwarding thread's clock.
    pub taken_at: u64,
    /// By the pipeline's port index.
    pub ports: Vec<PortQosStats>,
    pub pool_size_bytes: u64,
    pub pool_used_bytes: u64,
    pub pool_shared_bytes: u64,
    pub pool_shared_used_bytes: u64,
    pub pool_watermark_bytes: u64,
    /// Frames refused, by [`DropReason::name`].
    pub drops: Vec<(&'static str, u64)>,
    /// 802.3x PAUSE frames received and ignored (the switch runs PFC).
    pub pause_frames_ignored: u64,
    pub malformed_link_frames: u64,
    /// Frames taken over from the traffic manager this one replaced.
    pub migrated_frames: u64,
}

impl QosTrafficManager {
    /// Everything `show` needs, copied at `now`.
    pub fn stats(&self, now: u64) -> QosStats {
        let tm = self.tm();
        let buffer = tm.buffer();
        let cell = u64::from(buffer.cell_bytes());
        let ports = (0..tm.port_count() as u16)
            .map(|port| {
                let pfc = tm.pfc_counters(port);
                let mut stats = PortQosStats {
                    speed_bps: tm.port_speed(port),
                    pfc: PfcStats { rx_frames: pfc.rx_frames, tx_frames: pfc.tx_frames, paused_ns: [0; CLASSES] },
                    ..PortQosStats::default()
                };
                for class in 0..CLASSES as u8 {
                    let c = usize::from(class);
                    stats.pfc.paused_ns[c] = tm.pfc_paused_ns(now, port, class);
                    let counters = tm.queue_counters(port, class);
                    let (depth_frames, depth_bytes) = tm.queue_depth(port, class);
                    let watch = tm.watchdog(port, class);
                    stats.queues[c] = QueueStats {
                        tx_frames: counters.tx_frames,
                        tx_bytes: counters.tx_bytes,
                        dropped_frames: counters.dropped_frames,
                        dropped_bytes: counters.dropped_bytes,
                        ecn_marked: counters.ecn_marked,
                        wred_dropped: counters.wred_dropped,
                        depth_frames,
                        depth_bytes,
                        watermark_bytes: tm.queue_watermark_bytes(port, class),
                        storm: watch.storm,
                        storms_detected: watch.storms_detected,
                        storms_restored: watch.storms_restored,
                        watchdog_dropped: watch.dropped_frames,
                        storm_began_ns: watch.storm_began_at,
                        storm_detected_ns: watch.storm_detected_at,
                        storm_last_pause_ns: watch.storm_last_pause_at,
                        storm_restored_ns: watch.storm_restored_at,
                    };
                    let pg = tm.priority_group(Some(port), class);
                    stats.priority_groups[c] = PriorityGroupStats {
                        lossless: pg.lossless,
                        xoff: pg.xoff,
                        shared_bytes: u64::from(pg.used_shared) * cell,
                        headroom_bytes: u64::from(pg.used_headroom) * cell,
                        watermark_shared_bytes: u64::from(pg.watermark_shared) * cell,
                        watermark_headroom_bytes: u64::from(pg.watermark_headroom) * cell,
                        dropped_frames: pg.dropped_frames,
                    };
                }
                stats
            })
            .collect();
        QosStats {
            taken_at: now,
            ports,
            pool_size_bytes: u64::from(buffer.total_cells()) * cell,
            pool_used_bytes: u64::from(buffer.used_cells()) * cell,
            pool_shared_bytes: u64::from(buffer.shared_cells()) * cell,
            pool_shared_used_bytes: u64::from(buffer.shared_used()) * cell,
            pool_watermark_bytes: u64::from(buffer.pool_watermark()) * cell,
            drops: DropReason::ALL.iter().map(|&reason| (reason.name(), tm.drops(reason))).collect(),
            pause_frames_ignored: self.counters().pause_frames_ignored,
            malformed_link_frames: self.counters().malformed_link_frames,
            migrated_frames: self.counters().migrated_frames,
        }
    }
}
