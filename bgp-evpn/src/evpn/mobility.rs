//! MAC mobility (RFC 7432 §15): which advertisement of a MAC wins, and
//! duplicate detection.

use std::collections::VecDeque;
use std::net::IpAddr;

use super::config::DuplicateDetection;
use crate::neighbor::NANOS_PER_SEC;

/// One advertisement of a MAC: ours or a remote VTEP's, with its MAC
/// Mobility community (sequence 0 and not sticky when it carries none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// `None`: learned here.
    pub vtep: Option<IpAddr>,
    pub sequence: u32,
    pub sticky: bool,
}

impl Claim {
    /// The better of two claims. §15.2: a sticky MAC does not move; §15.1:
    /// "the route with the higher sequence number" wins, and among equal
    /// numbers the VTEP "with the lowest IP address" (`own` is ours).
    pub fn better(self, other: Claim, own: IpAddr) -> Claim {
        let rank = |c: &Claim| (c.sticky, c.sequence);
        match rank(&self).cmp(&rank(&other)) {
            std::cmp::Ordering::Greater => self,
            std::cmp::Ordering::Less => other,
            std::cmp::Ordering::Equal if self.vtep.unwrap_or(own) <= other.vtep.unwrap_or(own) => self,
            std::cmp::Ordering::Equal => other,
        }
    }
}

/// The moves of one MAC: §15.1 "If N MAC moves are detected within M
/// seconds ... the PE MUST alert the operator and stop sending and
/// processing any BGP MAC/IP Advertisement routes for that MAC address".
/// Nothing until the first move (8 bytes a MAC: most never move).
#[derive(Debug, Clone, Default)]
pub struct Moves(Option<Box<MoveLog>>);

#[derive(Debug, Clone, Default)]
struct MoveLog {
    /// Times of the moves still inside the window.
    recent: VecDeque<u64>,
    /// Every move since the MAC was first seen.
    total: u32,
    /// When the MAC was found duplicate; it is frozen from then on.
    frozen_since: Option<u64>,
}

impl Moves {
    /// Counts a move at `now`; true when it makes the MAC a duplicate.
    pub fn record(&mut self, now: u64, limits: DuplicateDetection) -> bool {
        let log = self.0.get_or_insert_default();
        log.total += 1;
        let window = u64::from(limits.window_secs) * NANOS_PER_SEC;
        while log.recent.front().is_some_and(|&t| now.saturating_sub(t) >= window) {
            log.recent.pop_front();
        }
        log.recent.push_back(now);
        if log.frozen_since.is_none() && log.recent.len() >= limits.max_moves as usize {
            log.frozen_since = Some(now);
            return true;
        }
        false
    }

    pub fn frozen(&self) -> bool {
        self.frozen_since().is_some()
    }

    /// Every move since the MAC was first seen.
    pub fn total(&self) -> u32 {
        self.0.as_ref().map_or(0, |l| l.total)
    }

    /// When the MAC was found duplicate.
    pub fn frozen_since(&self) -> Option<u64> {
        self.0.as_ref().and_then(|l| l.frozen_since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_inside_the_window_freeze_the_mac_and_older_ones_do_not_count() {
        let limits = DuplicateDetection { max_moves: 3, window_secs: 10 };
        let mut m = Moves::default();
        assert!(!m.record(0, limits));
        assert!(!m.record(5 * NANOS_PER_SEC, limits));
        // The first move has left the window: two in it, not three.
        assert!(!m.record(12 * NANOS_PER_SEC, limits));
        assert!(m.record(13 * NANOS_PER_SEC, limits));
        assert_eq!((m.total(), m.frozen_since()), (4, Some(13 * NANOS_PER_SEC)));
        assert!(!m.record(14 * NANOS_PER_SEC, limits), "reported once");
    }

    #[test]
    fn sticky_then_sequence_then_lowest_vtep_wins() {
        let own: IpAddr = "10.0.0.5".parse().unwrap();
        let at = |s: &str, sequence, sticky| Claim { vtep: Some(s.parse().unwrap()), sequence, sticky };
        let local = Claim { vtep: None, sequence: 3, sticky: false };
        assert_eq!(local.better(at("10.0.0.9", 4, false), own), at("10.0.0.9", 4, false));
        assert_eq!(local.better(at("10.0.0.9", 3, false), own), local, "ours is the lower address");
        assert_eq!(local.better(at("10.0.0.1", 3, false), own), at("10.0.0.1", 3, false));
        assert_eq!(at("10.0.0.1", 0, true).better(local, own), at("10.0.0.1", 0, true));
    }
}
