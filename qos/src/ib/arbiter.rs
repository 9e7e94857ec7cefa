//! VL arbitration on an output port (IBA vol. 1, 7.6.9).
//!
//! VL15 goes first, always. Data VLs are served from two tables of
//! (VL, weight) entries, high and low priority, each walked round-robin:
//! an entry sends packets while its weight (in 64-byte units) lasts and its VL
//! has an eligible packet (one that the caller says may go: queued and
//! covered by credits), then the walk moves on. "LimitOfHighPriority" bounds
//! how many bytes high priority may send while low priority has a packet
//! waiting: in 4096-byte units, 0 meaning one packet, 255 unbounded.
//! A VL with nothing eligible is skipped, so a VL out of credit never holds
//! up another one.

use super::{BLOCK_BYTES, MANAGEMENT_VL};

/// Entries in each table (IBA: VLArbitrationHighCap/LowCap, at most 64).
pub const MAX_ENTRIES: usize = 64;
/// A LimitOfHighPriority that never yields to low priority.
pub const UNLIMITED_HIGH: u8 = 255;
/// Bytes per LimitOfHighPriority unit.
pub const HIGH_LIMIT_UNIT: u64 = 4096;

/// One arbitration table entry: `weight` 64-byte units for `vl`; weight 0
/// skips the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArbitrationEntry {
    pub vl: u8,
    pub weight: u8,
}

/// Why a table was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArbiterError {
    /// More than [`MAX_ENTRIES`] entries.
    TooManyEntries(usize),
    /// An entry names VL15 or a VL above 14.
    BadVl(u8),
}

impl core::fmt::Display for ArbiterError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ArbiterError::TooManyEntries(n) => write!(f, "vl_arbitration: {n} entries, at most 64"),
            ArbiterError::BadVl(vl) => write!(f, "vl_arbitration: VL {vl} is not a data VL"),
        }
    }
}

impl std::error::Error for ArbiterError {}

#[derive(Debug, Clone)]
struct Table {
    entries: [ArbitrationEntry; MAX_ENTRIES],
    len: usize,
    cursor: usize,
    /// Bytes the current entry may still send.
    remaining: i64,
}

impl Table {
    fn new(entries: &[ArbitrationEntry]) -> Result<Table, ArbiterError> {
        if entries.len() > MAX_ENTRIES {
            return Err(ArbiterError::TooManyEntries(entries.len()));
        }
        if let Some(bad) = entries.iter().find(|entry| entry.vl >= MANAGEMENT_VL) {
            return Err(ArbiterError::BadVl(bad.vl));
        }
        let mut table =
            Table { entries: [ArbitrationEntry::default(); MAX_ENTRIES], len: entries.len(), cursor: 0, remaining: 0 };
        table.entries[..entries.len()].copy_from_slice(entries);
        table.remaining = table.weight_bytes(0);
        Ok(table)
    }

    fn weight_bytes(&self, index: usize) -> i64 {
        i64::from(self.entries[index].weight) * i64::from(BLOCK_BYTES)
    }

    fn advance(&mut self) {
        // A compare, not a division: this runs for every entry the walk
        // passes, on every packet.
        self.cursor = if self.cursor + 1 == self.len { 0 } else { self.cursor + 1 };
        self.remaining = self.weight_bytes(self.cursor);
    }

    /// The next VL to send from and its packet's bytes, charged to the entry.
    fn pick(&mut self, eligible: &mut impl FnMut(u8) -> Option<u32>) -> Option<(u8, u32)> {
        if self.len == 0 {
            return None;
        }
        // One full turn plus the starting entry again with a fresh weight.
        for _ in 0..=self.len {
            let entry = self.entries[self.cursor];
            if self.remaining > 0
                && let Some(bytes) = eligible(entry.vl)
            {
                self.remaining -= i64::from(bytes);
                return Some((entry.vl, bytes));
            }
            self.advance();
        }
        None
    }
}

/// The arbiter of one output port.
#[derive(Debug, Clone)]
pub struct VlArbiter {
    high: Table,
    low: Table,
    high_limit: u8,
    /// High-priority bytes sent since low priority last had its turn.
    high_sent: u64,
}

impl VlArbiter {
    pub fn new(high: &[ArbitrationEntry], low: &[ArbitrationEntry], high_limit: u8) -> Result<VlArbiter, ArbiterError> {
        Ok(VlArbiter { high: Table::new(high)?, low: Table::new(low)?, high_limit, high_sent: 0 })
    }

    /// The high and low priority tables and LimitOfHighPriority in force.
    pub fn tables(&self) -> (&[ArbitrationEntry], &[ArbitrationEntry], u8) {
        (&self.high.entries[..self.high.len], &self.low.entries[..self.low.len], self.high_limit)
    }

    fn high_limit_reached(&self) -> bool {
        match self.high_limit {
            UNLIMITED_HIGH => false,
            limit => self.high_sent > u64::from(limit) * HIGH_LIMIT_UNIT,
        }
    }

    /// The VL to send the next packet from, or `None` if nothing may go.
    /// `eligible(vl)` is the wire length of that VL's head packet if one is
    /// queued and may be sent now (credits cover it), else `None`. It is
    /// called a bounded number of times (at most 2 * (64 + 1) + 1).
    pub fn select(&mut self, mut eligible: impl FnMut(u8) -> Option<u32>) -> Option<u8> {
        if eligible(MANAGEMENT_VL).is_some() {
            return Some(MANAGEMENT_VL);
        }
        if self.high_limit_reached() {
            self.high_sent = 0;
            if let Some((vl, _)) = self.low.pick(&mut eligible) {
                return Some(vl);
            }
        }
        if let Some((vl, bytes)) = self.high.pick(&mut eligible) {
            self.high_sent += u64::from(bytes);
            return Some(vl);
        }
        self.high_sent = 0;
        self.low.pick(&mut eligible).map(|(vl, _)| vl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(vl: u8, weight: u8) -> ArbitrationEntry {
        ArbitrationEntry { vl, weight }
    }

    /// Sends `rounds` packets of `bytes` with every VL in `backlogged`
    /// always eligible; returns bytes sent per VL.
    fn run(arbiter: &mut VlArbiter, backlogged: &[u8], bytes: u32, rounds: usize) -> [u64; 16] {
        let mut sent = [0u64; 16];
        for _ in 0..rounds {
            let vl = arbiter.select(|vl| backlogged.contains(&vl).then_some(bytes)).expect("something is eligible");
            sent[usize::from(vl)] += u64::from(bytes);
        }
        sent
    }

    #[test]
    fn weights_share_the_link() {
        let mut arbiter = VlArbiter::new(&[], &[entry(0, 4), entry(1, 12)], UNLIMITED_HIGH).unwrap();
        let sent = run(&mut arbiter, &[0, 1], 64, 1600);
        assert_eq!(sent[0] * 3, sent[1]);
    }

    #[test]
    fn an_idle_vl_gives_its_share_to_the_others() {
        let mut arbiter = VlArbiter::new(&[], &[entry(0, 4), entry(1, 12)], UNLIMITED_HIGH).unwrap();
        let sent = run(&mut arbiter, &[0], 64, 100);
        assert_eq!(sent[0], 6400);
    }

    #[test]
    fn management_vl_goes_first() {
        let mut arbiter = VlArbiter::new(&[entry(0, 255)], &[], UNLIMITED_HIGH).unwrap();
        assert_eq!(arbiter.select(|_| Some(64)), Some(MANAGEMENT_VL));
        assert_eq!(arbiter.select(|vl| (vl == 0).then_some(64)), Some(0));
        assert_eq!(arbiter.select(|_| None), None);
    }

    #[test]
    fn high_priority_limit_lets_low_priority_through() {
        // Limit 1: up to 4096 bytes of high priority, then one low packet.
        let mut arbiter = VlArbiter::new(&[entry(0, 255)], &[entry(1, 1)], 1).unwrap();
        let sent = run(&mut arbiter, &[0, 1], 1024, 600);
        // Per cycle: 5 high packets (the one crossing 4096 still goes), 1 low.
        assert_eq!(sent[1], 100 * 1024);
        assert_eq!(sent[0], 500 * 1024);

        let mut starving = VlArbiter::new(&[entry(0, 255)], &[entry(1, 1)], UNLIMITED_HIGH).unwrap();
        assert_eq!(run(&mut starving, &[0, 1], 1024, 600)[1], 0);

        let mut one_packet = VlArbiter::new(&[entry(0, 255)], &[entry(1, 1)], 0).unwrap();
        let sent = run(&mut one_packet, &[0, 1], 1024, 600);
        assert_eq!(sent[0], sent[1]);
    }

    #[test]
    fn bad_tables_are_refused() {
        assert_eq!(VlArbiter::new(&[entry(15, 1)], &[], 0).unwrap_err(), ArbiterError::BadVl(15));
        let long = [entry(0, 1); MAX_ENTRIES + 1];
        assert_eq!(VlArbiter::new(&[], &long, 0).unwrap_err(), ArbiterError::TooManyEntries(65));
    }
}
