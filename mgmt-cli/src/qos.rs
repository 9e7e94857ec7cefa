//! The traffic manager's show payloads, in SONiC's words and columns
//! (`show pfc counters`, `show queue counters` ...).

use serde::{Deserialize, Serialize};

/// Priorities, queues and priority groups per port.
pub const CLASSES: usize = 8;

/// `show interfaces counters`: one row per front-panel port.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceCounters {
    pub iface: String,
    /// `U` (up) or `D`.
    pub state: String,
    /// Line rate in bits per second, when configured.
    pub speed_bps: Option<u64>,
    pub rx_ok: u64,
    pub rx_bytes: u64,
    pub rx_err: u64,
    pub rx_drp: u64,
    pub tx_ok: u64,
    pub tx_bytes: u64,
    pub tx_err: u64,
    pub tx_drp: u64,
}

/// `show pfc counters`: PFC frames per port and priority, and how long the
/// peer held each priority paused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PfcCounters {
    pub port: String,
    pub rx: [u64; CLASSES],
    pub tx: [u64; CLASSES],
    pub paused_us: [u64; CLASSES],
}

/// `show queue counters`: one row per (port, queue).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueCounters {
    pub port: String,
    /// `UC0`..`UC7`.
    pub txq: String,
    pub counter_pkts: u64,
    pub counter_bytes: u64,
    pub drop_pkts: u64,
    pub drop_bytes: u64,
    /// Frames and bytes waiting now.
    pub depth_pkts: u32,
    pub depth_bytes: u32,
}

/// `show queue wredcounters`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WredCounters {
    pub port: String,
    pub txq: String,
    pub wred_drp_pkts: u64,
    pub ecn_marked_pkts: u64,
}

/// `show priority-group watermark headroom|shared`, `show queue
/// watermark`: highest use in bytes, per port, by index.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watermarks {
    /// `headroom`, `shared` or `queue`.
    pub kind: String,
    pub rows: Vec<WatermarkRow>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatermarkRow {
    pub port: String,
    pub bytes: [u64; CLASSES],
}

/// `show buffer pool`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferPool {
    pub pool: String,
    pub size_bytes: u64,
    pub used_bytes: u64,
    pub shared_bytes: u64,
    pub shared_used_bytes: u64,
    pub watermark_bytes: u64,
    /// Frames the traffic manager refused, by reason.
    pub drops: Vec<(String, u64)>,
    /// Frames it took over, queued, from the traffic manager a commit
    /// replaced (those it refused are in `drops`).
    #[serde(default)]
    pub migrated_frames: u64,
}

/// `show pfcwd stats`: one row per watched (port, queue).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PfcwdStats {
    pub port: String,
    pub queue: u8,
    /// `operational` or `stormed`.
    pub status: String,
    pub storm_detected: u64,
    pub storm_restored: u64,
    /// Frames the drop action discarded.
    pub tx_drop: u64,
    /// The latest storm in the switch's own clock (ns since the forwarding
    /// thread started): when it began (the pause that stopped the
    /// backlogged queue, or its last frame sent after) and when the
    /// watchdog's check saw it; the difference is at most the detection
    /// time plus one poll interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_storm_began_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_storm_detected_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_detection_ns: Option<u64>,
    /// The latest restored storm's end, in the same clock: the peer's last
    /// pause and the check that restored the queue; the difference is at
    /// most the restoration time plus one poll interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_storm_last_pause_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_storm_restored_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_restoration_ns: Option<u64>,
    /// The watchdog's settings, so the bound above can be read here.
    #[serde(default)]
    pub detection_ms: u32,
    #[serde(default)]
    pub restoration_ms: u32,
    #[serde(default)]
    pub poll_interval_ms: u32,
}

/// `show dlb`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dlb {
    /// `static`, `flowlet` or `spray`; `None` when DLB is not running.
    pub mode: Option<String>,
    pub groups: Vec<DlbGroup>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DlbGroup {
    /// The group's ECMP members by next hop.
    pub next_hops: Vec<DlbMember>,
    pub mode: String,
    pub packets: u64,
    pub flowlets: u64,
    pub moves: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DlbMember {
    pub next_hop: String,
    pub port: Option<String>,
    /// The member's path cost (queued bytes at line rate plus recent
    /// utilisation, in ns; lower is better).
    pub quality_cost: Option<u32>,
}
