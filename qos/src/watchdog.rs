//! The PFC watchdog (SONiC `pfcwd`): a lossless queue that is paused by its
//! peer, has frames waiting and has sent nothing for the detection time is
//! in a PFC storm (the peer is stuck sending pauses, or a deadlock). The
//! configured action applies to the queue until the peer has sent no pause
//! for the restoration time:
//!
//! - `drop`: the queue's frames are discarded and new ones dropped, so the
//!   buffer they hold is freed for the other queues;
//! - `forward`: the queue ignores the pauses and sends;
//! - `alert`: only the storm event and counters.
//!
//! Checks run every poll interval, as SONiC's watchdog polls its counters;
//! a storm is seen at most `detection + poll interval` after it began. Each
//! detection records, in the switch's own clock, when the storm began (the
//! later of the pause that stopped the queue and its last progress) and
//! when the check saw it, so that bound can be read back
//! (`show pfcwd stats`).

use serde::{Deserialize, Serialize};

/// The action on a storming queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WatchdogAction {
    #[default]
    Drop,
    Forward,
    Alert,
}

/// SONiC's defaults: 200 ms detection, 200 ms restoration, 200 ms polling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct WatchdogConfig {
    pub enabled: bool,
    pub detection_ms: u32,
    pub restoration_ms: u32,
    pub poll_interval_ms: u32,
    pub action: WatchdogAction,
}

impl Default for WatchdogConfig {
    fn default() -> WatchdogConfig {
        WatchdogConfig {
            enabled: true,
            detection_ms: 200,
            restoration_ms: 200,
            poll_interval_ms: 200,
            action: WatchdogAction::Drop,
        }
    }
}

const MS: u64 = 1_000_000;

/// A storm seen or ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchdogEventKind {
    StormDetected,
    StormRestored,
}

/// A watchdog event for the shim's notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchdogEvent {
    pub at: u64,
    pub port: u16,
    pub queue: u8,
    pub kind: WatchdogEventKind,
}

/// One queue's watchdog state and counters (SONiC `show pfcwd stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueWatch {
    pub storm: bool,
    pub storms_detected: u64,
    pub storms_restored: u64,
    /// Frames the drop action discarded.
    pub dropped_frames: u64,
    /// The latest storm: when it began and when a check detected it (ns,
    /// the caller's clock; 0: none yet).
    pub storm_began_at: u64,
    pub storm_detected_at: u64,
    /// The latest storm's end: the peer's last pause before it, and when
    /// a check found the restoration time passed since (0: none ended yet).
    pub storm_last_pause_at: u64,
    pub storm_restored_at: u64,
}

/// What the queue looked like at a check.
#[derive(Debug, Clone, Copy)]
pub struct QueueView {
    /// The peer pauses the queue now.
    pub paused: bool,
    pub backlogged: bool,
    /// When the queue last sent a frame or last became backlogged.
    pub last_progress: u64,
    /// When the current pause began.
    pub pause_since: u64,
    /// When the peer last sent a pause (non-zero quanta) for it.
    pub last_pause_at: u64,
}

impl QueueWatch {
    /// Runs one check at `now`.
    pub fn check(&mut self, now: u64, view: QueueView, config: &WatchdogConfig) -> Option<WatchdogEventKind> {
        if !self.storm {
            let stalled_since = view.last_progress.max(view.pause_since);
            if view.paused
                && view.backlogged
                && now.saturating_sub(stalled_since) >= u64::from(config.detection_ms) * MS
            {
                self.storm = true;
                self.storms_detected += 1;
                self.storm_began_at = stalled_since;
                self.storm_detected_at = now;
                return Some(WatchdogEventKind::StormDetected);
            }
        } else if now.saturating_sub(view.last_pause_at) >= u64::from(config.restoration_ms) * MS {
            self.storm = false;
            self.storms_restored += 1;
            self.storm_last_pause_at = view.last_pause_at;
            self.storm_restored_at = now;
            return Some(WatchdogEventKind::StormRestored);
        }
        None
    }

    /// How long the latest storm went undetected: at most the detection
    /// time plus one poll interval when the checks run on time.
    pub fn detection_delay_ns(&self) -> Option<u64> {
        (self.storms_detected > 0).then(|| self.storm_detected_at - self.storm_began_at)
    }

    /// How long the latest restored storm stayed in force after the peer's
    /// last pause: at most the restoration time plus one poll interval.
    pub fn restoration_delay_ns(&self) -> Option<u64> {
        (self.storms_restored > 0).then(|| self.storm_restored_at - self.storm_last_pause_at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storm_after_detection_time_restored_after_quiet_time() {
        let config = WatchdogConfig::default();
        let mut watch = QueueWatch::default();
        let mut view = QueueView {
            paused: true,
            backlogged: true,
            last_progress: 0,
            pause_since: 10 * MS,
            last_pause_at: 205 * MS,
        };
        assert_eq!(watch.check(200 * MS, view, &config), None, "stalled only 190 ms");
        assert_eq!(watch.check(210 * MS, view, &config), Some(WatchdogEventKind::StormDetected));
        // Stalled since the pause at 10 ms (it sent nothing since 0), seen at 210 ms.
        assert_eq!((watch.storm_began_at, watch.storm_detected_at), (10 * MS, 210 * MS));
        assert_eq!(watch.detection_delay_ns(), Some(200 * MS));
        assert_eq!(watch.restoration_delay_ns(), None);
        assert_eq!(watch.check(220 * MS, view, &config), None);
        // Pauses keep coming: no restoration.
        view.last_pause_at = 400 * MS;
        assert_eq!(watch.check(500 * MS, view, &config), None);
        // 200 ms without a pause: restored.
        assert_eq!(watch.check(600 * MS, view, &config), Some(WatchdogEventKind::StormRestored));
        assert_eq!((watch.storms_detected, watch.storms_restored), (1, 1));
        // The last pause at 400 ms, seen quiet for 200 ms at 600 ms.
        assert_eq!((watch.storm_last_pause_at, watch.storm_restored_at), (400 * MS, 600 * MS));
        assert_eq!(watch.restoration_delay_ns(), Some(200 * MS));
    }

    #[test]
    fn a_queue_that_sends_or_is_empty_is_no_storm() {
        let config = WatchdogConfig::default();
        let mut watch = QueueWatch::default();
        let busy =
            QueueView { paused: true, backlogged: true, last_progress: 900 * MS, pause_since: 0, last_pause_at: 0 };
        assert_eq!(watch.check(1000 * MS, busy, &config), None);
        let empty = QueueView { backlogged: false, last_progress: 0, ..busy };
        assert_eq!(watch.check(1000 * MS, empty, &config), None);
        let unpaused = QueueView { paused: false, last_progress: 0, ..busy };
        assert_eq!(watch.check(1000 * MS, unpaused, &config), None);
    }
}
