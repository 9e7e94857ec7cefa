//! The shared buffer, accounted in fixed-size cells (the SAI buffer pool,
//! buffer profiles and ingress priority groups).
//!
//! Frames live in the caller's frame pool; this module only counts the cells
//! they would occupy in a switch buffer, so admission behaves as on an ASIC
//! of that buffer size. Nothing here allocates after [`SharedBuffer::new`].
//!
//! **Ingress**, per (port, priority group): a frame is charged first to the
//! PG's reserved minimum, then to the shared pool while the PG's shared use
//! stays under its dynamic threshold, `alpha x (shared pool - shared pool
//! used)` with `alpha = 2^dynamic_th` (Choudhury and Hahne's dynamic
//! threshold, as SONiC's `dynamic_th`), then, for a lossless PG, to its
//! headroom. The first frame that does not fit the shared part puts the PG
//! in XOFF (the caller sends PFC); the PG returns to XON when its headroom
//! is empty and its shared use is `xon_offset` below the threshold (or
//! zero). A lossy PG drops what does not fit; a lossless PG drops only when
//! its headroom overflows, which a headroom sized by [`pfc_headroom_bytes`]
//! prevents.
//!
//! **Egress**, per queue: cells and bytes waiting; a lossy frame is refused
//! when its queue would pass its limit (static, or a dynamic threshold over
//! the same shared pool). Lossless frames are never refused at egress: PFC
//! at ingress bounds them.
//!
//! Cells are released in the reverse order of charging (headroom, then
//! shared, then reserved), so a PG leaves XOFF as soon as it drains.

use serde::{Deserialize, Serialize};

/// A buffer pool (SAI_BUFFER_POOL): its size and cell size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PoolConfig {
    pub size_bytes: u64,
    pub cell_bytes: u32,
}

impl Default for PoolConfig {
    /// 8 MiB of 256-byte cells.
    fn default() -> PoolConfig {
        PoolConfig { size_bytes: 8 << 20, cell_bytes: 256 }
    }
}

/// An ingress priority group's buffer profile (SAI_BUFFER_PROFILE bound to
/// SAI_INGRESS_PRIORITY_GROUP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PgProfile {
    /// Lossless: PFC instead of drops.
    #[serde(default)]
    pub lossless: bool,
    /// Reserved minimum (SONiC `size`).
    #[serde(default)]
    pub reserved_bytes: u32,
    /// `alpha = 2^dynamic_th`, -7..=7.
    #[serde(default = "default_lossy_th")]
    pub dynamic_th: i8,
    /// Headroom of a lossless PG; computed per port from speed, cable
    /// length, MTU and PFC response time when absent.
    #[serde(default)]
    pub headroom_bytes: Option<u32>,
    /// Hysteresis between XOFF and XON (SONiC `xon_offset`).
    #[serde(default = "default_xon_offset")]
    pub xon_offset_bytes: u32,
}

fn default_lossy_th() -> i8 {
    3
}

fn default_xon_offset() -> u32 {
    2 * 1536
}

impl Default for PgProfile {
    /// Lossy, no reserve, alpha 8 (SONiC's ingress lossy profile): the
    /// egress queue limits bind first, so one congested egress cannot take
    /// an ingress's whole share and block its frames to other egresses.
    fn default() -> PgProfile {
        PgProfile {
            lossless: false,
            reserved_bytes: 0,
            dynamic_th: 3,
            headroom_bytes: None,
            xon_offset_bytes: default_xon_offset(),
        }
    }
}

/// A lossy queue's limit (egress buffer profile).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum QueueLimit {
    /// At most this many bytes (rounded up to cells).
    Static { bytes: u32 },
    /// `2^th x` the free shared pool.
    Dynamic { th: i8 },
}

impl Default for QueueLimit {
    /// Alpha 1: a congested queue takes at most half the free pool.
    fn default() -> QueueLimit {
        QueueLimit::Dynamic { th: 0 }
    }
}

/// The headroom a lossless PG needs (IEEE 802.1Qbb Annex N, simplified):
///
/// ```text
/// headroom = 2 x MTU                    a frame the peer had started when our
///                                       PFC arrived, and one we were sending
///                                       ahead of the PFC frame
///          + 64                         the PFC frame itself
///          + speed/8 x (2 x L x 5 ns/m  round trip on L metres of cable
///                                       (light in fibre/copper, ~5 ns/m)
///                       + T_response    the peer's time to act on the PFC
///                                       frame (its MAC and its queue logic)
///                       + T_rx_lag)     how long a frame that has arrived
///                                       may wait in our receive path (a
///                                       software switch's rx ring) before
///                                       it is charged: what waits there when
///                                       XOFF is decided is in flight too
/// ```
///
/// in bytes, rounded up. Everything the peer puts on the wire between the
/// arrival of the frame that crosses the XOFF point and the moment the
/// peer stops lands in the headroom.
pub fn pfc_headroom_bytes(speed_bps: u64, cable_m: u32, mtu: u32, response_ns: u64, rx_lag_ns: u64) -> u64 {
    let flight_ns = 2 * u128::from(cable_m) * 5 + u128::from(response_ns) + u128::from(rx_lag_ns);
    let flight_bytes = (u128::from(speed_bps) * flight_ns).div_ceil(8 * 1_000_000_000);
    2 * u64::from(mtu) + 64 + flight_bytes as u64
}

/// Cells `bytes` occupy.
#[inline]
pub fn cells(bytes: u32, cell_bytes: u32) -> u32 {
    bytes.div_ceil(cell_bytes).max(1)
}

/// [`cells`] for one cell size, the division done once: a shift for a
/// power of two (every switch's cell size), else a multiplication by the
/// reciprocal (Granlund-Montgomery: exact for any `u32` dividend with a
/// 64-bit magic number and a 32 + log2(d) shift, rounded up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CellDivider {
    cell_bytes: u32,
    /// `ceil(2^(32 + log) / cell_bytes)`; 0 for a power of two.
    magic: u64,
    /// log2 of the cell size, rounded up.
    log: u32,
}

impl CellDivider {
    fn new(cell_bytes: u32) -> CellDivider {
        let cell_bytes = cell_bytes.max(1);
        let log = 32 - (cell_bytes - 1).leading_zeros();
        let magic = if cell_bytes.is_power_of_two() {
            0
        } else {
            ((1u128 << (32 + log)).div_ceil(u128::from(cell_bytes))) as u64
        };
        CellDivider { cell_bytes, magic, log }
    }

    #[inline]
    fn cells(self, bytes: u32) -> u32 {
        let whole = if self.magic == 0 {
            bytes >> self.log
        } else {
            ((u128::from(bytes) * u128::from(self.magic)) >> (32 + self.log)) as u32
        };
        let rest = bytes - whole * self.cell_bytes;
        (whole + u32::from(rest != 0)).max(1)
    }
}

/// `2^th x free`.
#[inline]
fn dynamic_limit(th: i8, free: u32) -> u32 {
    if th >= 0 { free.saturating_mul(1 << th.min(16)) } else { free >> (-th).min(31) }
}

/// Why a frame found no buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferDrop {
    /// A lossy PG over its share of the pool.
    IngressLimit,
    /// A lossless PG whose headroom overflowed (the peer did not stop in time).
    HeadroomOverflow,
    /// A lossy queue over its limit.
    EgressLimit,
}

/// Occupancy and watermarks of one (port, PG).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PgState {
    pub lossless: bool,
    pub xoff: bool,
    pub reserved_cells: u32,
    pub headroom_cells: u32,
    pub dynamic_th: i8,
    pub xon_offset_cells: u32,
    pub used_reserved: u32,
    pub used_shared: u32,
    pub used_headroom: u32,
    /// Highest shared / headroom use seen (cells), until cleared.
    pub watermark_shared: u32,
    pub watermark_headroom: u32,
    pub dropped_frames: u64,
}

impl PgState {
    pub fn used(&self) -> u32 {
        self.used_reserved + self.used_shared + self.used_headroom
    }
}

/// Occupancy of one egress queue. The traffic manager keeps it with the
/// queue's other hot state; [`SharedBuffer::egress_fits`] judges it
/// against the pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueState {
    pub limit: QueueLimit,
    pub cells: u32,
    pub bytes: u32,
    pub watermark_bytes: u32,
}

impl QueueState {
    /// Adds a frame to the queue's occupancy.
    #[inline]
    pub fn charge(&mut self, cells: u32, bytes: u32) {
        self.cells += cells;
        self.bytes += bytes;
        self.watermark_bytes = self.watermark_bytes.max(self.bytes);
    }

    /// Takes a leaving frame out of the queue's occupancy.
    #[inline]
    pub fn release(&mut self, cells: u32, bytes: u32) {
        debug_assert!(self.cells >= cells && self.bytes >= bytes, "egress released more than charged");
        self.cells = self.cells.saturating_sub(cells);
        self.bytes = self.bytes.saturating_sub(bytes);
    }

    /// Zeroes the watermark (to the occupancy now).
    pub fn clear_watermark(&mut self) {
        self.watermark_bytes = self.bytes;
    }
}

/// What charging a frame at ingress did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charged {
    /// The PG went into XOFF with this frame.
    pub xoff: bool,
}

/// The pool and the ingress PGs (`ports x pgs`); the egress queues'
/// occupancy ([`QueueState`]) is kept by the caller.
#[derive(Debug, Clone)]
pub struct SharedBuffer {
    cell_bytes: u32,
    cell_divider: CellDivider,
    total_cells: u32,
    shared_cells: u32,
    shared_used: u32,
    pool_watermark: u32,
    pgs: Vec<PgState>,
}

impl SharedBuffer {
    /// A pool of `pool.size_bytes`, with `pgs` (reserved, headroom, alpha per
    /// (port, PG)) set up front. The
    /// shared part is what the reserves and headrooms leave; `None` if they
    /// take more than the pool.
    pub fn new(pool: PoolConfig, pgs: Vec<PgState>) -> Option<SharedBuffer> {
        let total_cells = u32::try_from(pool.size_bytes / u64::from(pool.cell_bytes.max(1))).ok()?;
        let reserved: u64 = pgs.iter().map(|pg| u64::from(pg.reserved_cells) + u64::from(pg.headroom_cells)).sum();
        let shared_cells = u32::try_from(u64::from(total_cells).checked_sub(reserved)?).ok()?;
        Some(SharedBuffer {
            cell_bytes: pool.cell_bytes.max(1),
            cell_divider: CellDivider::new(pool.cell_bytes),
            total_cells,
            shared_cells,
            shared_used: 0,
            pool_watermark: 0,
            pgs,
        })
    }

    pub fn cell_bytes(&self) -> u32 {
        self.cell_bytes
    }

    /// [`cells`] of `bytes` in this pool's cells, without a division.
    #[inline]
    pub fn cells_of(&self, bytes: u32) -> u32 {
        self.cell_divider.cells(bytes)
    }
    pub fn total_cells(&self) -> u32 {
        self.total_cells
    }
    pub fn shared_cells(&self) -> u32 {
        self.shared_cells
    }
    pub fn shared_used(&self) -> u32 {
        self.shared_used
    }
    /// Cells in use anywhere (reserved, shared and headroom).
    pub fn used_cells(&self) -> u32 {
        self.pgs.iter().map(PgState::used).sum()
    }
    pub fn pool_watermark(&self) -> u32 {
        self.pool_watermark
    }
    pub fn pg(&self, index: usize) -> &PgState {
        &self.pgs[index]
    }
    pub fn pgs(&self) -> &[PgState] {
        &self.pgs
    }

    /// Keeps what PG `old` of a replaced buffer (cells of `old_cell_bytes`)
    /// recorded, for PG `index` here: its watermarks, as many bytes in this
    /// pool's cells, and its drops.
    pub fn carry_pg(&mut self, index: usize, old: &PgState, old_cell_bytes: u32) {
        let (shared, headroom) = (
            self.rescaled(old.watermark_shared, old_cell_bytes),
            self.rescaled(old.watermark_headroom, old_cell_bytes),
        );
        let Some(pg) = self.pgs.get_mut(index) else { return };
        pg.watermark_shared = pg.watermark_shared.max(shared);
        pg.watermark_headroom = pg.watermark_headroom.max(headroom);
        pg.dropped_frames += old.dropped_frames;
    }

    /// Keeps a replaced buffer's pool watermark.
    pub fn carry_pool_watermark(&mut self, old: &SharedBuffer) {
        self.pool_watermark = self.pool_watermark.max(self.rescaled(old.pool_watermark, old.cell_bytes));
    }

    /// `cells` of `old_cell_bytes` as cells of this pool (rounded up).
    fn rescaled(&self, cells: u32, old_cell_bytes: u32) -> u32 {
        let bytes = u64::from(cells) * u64::from(old_cell_bytes);
        u32::try_from(bytes.div_ceil(u64::from(self.cell_bytes.max(1)))).unwrap_or(u32::MAX)
    }

    /// Zeroes the pool's and the PGs' watermarks (SONiC `sonic-clear ...
    /// watermark`; the queues' are [`QueueState::clear_watermark`]).
    pub fn clear_watermarks(&mut self) {
        self.pool_watermark = self.shared_used;
        for pg in &mut self.pgs {
            pg.watermark_shared = pg.used_shared;
            pg.watermark_headroom = pg.used_headroom;
        }
    }

    /// The shared cells a PG may hold now.
    #[inline]
    pub fn pg_shared_limit(&self, pg: usize) -> u32 {
        dynamic_limit(self.pgs[pg].dynamic_th, self.shared_cells - self.shared_used)
    }

    /// Whether a lossy frame of `cells` fits the limit of `queue`.
    #[inline]
    pub fn egress_fits(&self, queue: &QueueState, cells: u32) -> bool {
        let state = queue;
        let limit = match state.limit {
            QueueLimit::Static { bytes } => bytes.div_ceil(self.cell_bytes),
            QueueLimit::Dynamic { th } => dynamic_limit(th, self.shared_cells - self.shared_used),
        };
        state.cells + cells <= limit
    }

    /// Charges `cells` to ingress PG `pg`: reserved, then shared, then
    /// headroom (lossless). Nothing changes when it fails.
    #[inline]
    pub fn charge_ingress(&mut self, pg: usize, cells: u32) -> Result<Charged, BufferDrop> {
        let free = self.shared_cells - self.shared_used;
        let state = &mut self.pgs[pg];
        let shared_limit = dynamic_limit(state.dynamic_th, free);
        let mut rest = cells;
        let from_reserved = rest.min(state.reserved_cells - state.used_reserved);
        rest -= from_reserved;
        let (mut from_shared, mut from_headroom, mut xoff) = (0, 0, false);
        if rest > 0 {
            if state.used_headroom == 0 && state.used_shared + rest <= shared_limit {
                from_shared = rest;
            } else if state.lossless {
                if state.used_headroom + rest > state.headroom_cells {
                    state.dropped_frames += 1;
                    return Err(BufferDrop::HeadroomOverflow);
                }
                from_headroom = rest;
                xoff = !state.xoff;
                state.xoff = true;
            } else {
                state.dropped_frames += 1;
                return Err(BufferDrop::IngressLimit);
            }
        }
        state.used_reserved += from_reserved;
        state.used_shared += from_shared;
        state.used_headroom += from_headroom;
        state.watermark_shared = state.watermark_shared.max(state.used_shared);
        state.watermark_headroom = state.watermark_headroom.max(state.used_headroom);
        self.shared_used += from_shared;
        self.pool_watermark = self.pool_watermark.max(self.shared_used);
        Ok(Charged { xoff })
    }

    /// Returns `cells` of PG `pg` (headroom first). `true` if the PG left
    /// XOFF with it.
    #[inline]
    pub fn release_ingress(&mut self, pg: usize, cells: u32) -> bool {
        let state = &mut self.pgs[pg];
        let mut rest = cells;
        let from_headroom = rest.min(state.used_headroom);
        rest -= from_headroom;
        let from_shared = rest.min(state.used_shared);
        rest -= from_shared;
        let from_reserved = rest.min(state.used_reserved);
        debug_assert_eq!(rest, from_reserved, "released more cells than charged");
        state.used_headroom -= from_headroom;
        state.used_shared -= from_shared;
        state.used_reserved -= from_reserved;
        let drained = state.xoff && state.used_headroom == 0;
        self.shared_used -= from_shared;
        if drained {
            return self.try_xon(pg);
        }
        false
    }

    /// An XOFF PG whose headroom drained: XON once its shared use is an
    /// offset below its limit (out of the per-frame path).
    #[cold]
    #[inline(never)]
    fn try_xon(&mut self, pg: usize) -> bool {
        let limit = self.pg_shared_limit(pg);
        let state = &mut self.pgs[pg];
        if state.used_shared == 0 || state.used_shared + state.xon_offset_cells <= limit {
            state.xoff = false;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pg(lossless: bool, reserved: u32, headroom: u32, th: i8) -> PgState {
        PgState {
            lossless,
            reserved_cells: reserved,
            headroom_cells: headroom,
            dynamic_th: th,
            xon_offset_cells: 2,
            ..PgState::default()
        }
    }

    proptest! {
        #[test]
        fn cell_divider_matches_the_division(cell_bytes in 1u32..20_000, bytes in any::<u32>()) {
            prop_assert_eq!(CellDivider::new(cell_bytes).cells(bytes), cells(bytes, cell_bytes));
        }
    }

    #[test]
    fn cell_divider_at_the_edges() {
        for cell_bytes in [1, 2, 3, 7, 80, 128, 208, 256, 254, 1 << 31, u32::MAX] {
            let divider = CellDivider::new(cell_bytes);
            for bytes in [0, 1, cell_bytes - 1, cell_bytes, cell_bytes.saturating_add(1), u32::MAX - 1, u32::MAX] {
                assert_eq!(divider.cells(bytes), cells(bytes, cell_bytes), "{bytes} bytes in cells of {cell_bytes}");
            }
        }
    }

    #[test]
    fn headroom_worked_numbers() {
        // 100 Gb/s, 300 m, MTU 9100, 1 us response:
        //   2 x 9100 + 64 + 12.5 B/ns x (3000 + 1000) ns = 18264 + 50000 = 68264.
        assert_eq!(pfc_headroom_bytes(100_000_000_000, 300, 9100, 1000, 0), 68_264);
        // 1 Gb/s, 5 m, MTU 1500, 100 us (a software peer): 3064 + 0.125 x 100050 = 3064 + 12507 (rounded up).
        assert_eq!(pfc_headroom_bytes(1_000_000_000, 5, 1500, 100_000, 0), 3064 + 12_507);
        // The namespace checks' ports: 20 Mb/s, 5 m, MTU 9100, 20 ms response,
        // 20 ms of rx ring lag: 18264 + 2.5 B/us x (0.05 + 20000 + 20000) us
        // = 18264 + 100001 (rounded up).
        assert_eq!(pfc_headroom_bytes(20_000_000, 5, 9100, 20_000_000, 20_000_000), 18_264 + 100_001);
    }

    #[test]
    fn dynamic_threshold_worked_numbers() {
        // 1000 cells, none reserved. alpha = 1: one PG alone takes half the pool
        // (x <= 1000 - x), two congested PGs a third each (x <= 1000 - 2x).
        let pool = PoolConfig { size_bytes: 256_000, cell_bytes: 256 };
        let mut buffer = SharedBuffer::new(pool, vec![pg(false, 0, 0, 0), pg(false, 0, 0, 0)]).unwrap();
        let mut taken = 0;
        while buffer.charge_ingress(0, 1).is_ok() {
            taken += 1;
        }
        assert_eq!(taken, 500);
        for _ in 0..500 {
            buffer.release_ingress(0, 1);
        }
        let (mut a, mut b) = (0, 0);
        loop {
            let ra = buffer.charge_ingress(0, 1).is_ok();
            let rb = buffer.charge_ingress(1, 1).is_ok();
            a += u32::from(ra);
            b += u32::from(rb);
            if !ra && !rb {
                break;
            }
        }
        assert_eq!((a, b), (334, 333));
        // PG 0 failed once while PG 1 still fitted, and once more at the end.
        assert_eq!(buffer.pg(0).dropped_frames, 2);
        // alpha = 1/2: x <= (1000 - x)/2, a third of the pool.
        let mut buffer = SharedBuffer::new(pool, vec![pg(false, 0, 0, -1)]).unwrap();
        let mut taken = 0;
        while buffer.charge_ingress(0, 1).is_ok() {
            taken += 1;
        }
        assert_eq!(taken, 333);
    }

    #[test]
    fn reserve_first_then_shared_then_headroom_with_xoff_and_xon() {
        // 100 cells: PG reserves 10 and 20 of headroom, 70 shared; alpha 1 gives 35 shared.
        let pool = PoolConfig { size_bytes: 100 * 256, cell_bytes: 256 };
        let mut buffer = SharedBuffer::new(pool, vec![pg(true, 10, 20, 0)]).unwrap();
        assert_eq!(buffer.shared_cells(), 70);
        for _ in 0..10 {
            assert_eq!(buffer.charge_ingress(0, 1), Ok(Charged { xoff: false }));
        }
        assert_eq!(buffer.pg(0).used_reserved, 10);
        for _ in 0..35 {
            assert_eq!(buffer.charge_ingress(0, 1), Ok(Charged { xoff: false }));
        }
        assert_eq!(buffer.pg(0).used_shared, 35);
        // The next frame does not fit the shared part: XOFF, into headroom.
        assert_eq!(buffer.charge_ingress(0, 1), Ok(Charged { xoff: true }));
        for _ in 0..19 {
            assert_eq!(buffer.charge_ingress(0, 1), Ok(Charged { xoff: false }));
        }
        assert_eq!(buffer.charge_ingress(0, 1), Err(BufferDrop::HeadroomOverflow));
        assert_eq!(buffer.pg(0).watermark_headroom, 20);
        // Draining: headroom first; XON once it is empty and shared + offset is under the threshold.
        for _ in 0..20 {
            assert!(!buffer.release_ingress(0, 1));
        }
        // The last headroom cell left: shared 35 + offset 2 > limit (70 - 35), still XOFF.
        // One more: 34 + 2 <= 70 - 34, XON.
        assert!(buffer.pg(0).xoff);
        assert!(buffer.release_ingress(0, 1));
        assert!(!buffer.pg(0).xoff);
    }

    #[test]
    fn lossy_queue_limits() {
        let pool = PoolConfig { size_bytes: 100 * 256, cell_bytes: 256 };
        let mut queues =
            [QueueState { limit: QueueLimit::Static { bytes: 2560 }, ..Default::default() }, QueueState::default()];
        let mut buffer = SharedBuffer::new(pool, vec![pg(false, 0, 0, 0)]).unwrap();
        assert!(buffer.egress_fits(&queues[0], 10));
        queues[0].charge(10, 2560);
        assert!(!buffer.egress_fits(&queues[0], 1));
        // Dynamic alpha 1 with 40 of 100 shared cells used: 60 cells.
        for _ in 0..40 {
            buffer.charge_ingress(0, 1).unwrap();
        }
        queues[1].charge(59, 59 * 256);
        assert!(buffer.egress_fits(&queues[1], 1));
        assert!(!buffer.egress_fits(&queues[1], 2));
        queues[0].release(10, 2560);
        assert_eq!(queues[0].watermark_bytes, 2560);
        queues[0].clear_watermark();
        assert_eq!(queues[0].watermark_bytes, 0);
    }

    proptest! {
        /// Whatever the order of charges and releases, no counter goes
        /// negative (u32 would wrap), every cell charged is accounted in
        /// exactly one part, and the pool's shared use is the PGs' sum.
        #[test]
        fn cells_are_conserved(ops in proptest::collection::vec((0usize..4, 1u32..40, any::<bool>()), 1..400)) {
            let pool = PoolConfig { size_bytes: 2000 * 256, cell_bytes: 256 };
            let pgs = vec![pg(true, 20, 100, 0), pg(false, 10, 0, -1), pg(true, 0, 60, 1), pg(false, 0, 0, 2)];
            let mut buffer = SharedBuffer::new(pool, pgs).unwrap();
            let mut held: Vec<Vec<u32>> = vec![Vec::new(); 4];
            for (pg, cells, charge) in ops {
                if charge || held[pg].is_empty() {
                    if buffer.charge_ingress(pg, cells).is_ok() {
                        held[pg].push(cells);
                    }
                } else {
                    let cells = held[pg].remove(0);
                    buffer.release_ingress(pg, cells);
                }
                let state = buffer.pg(pg);
                prop_assert_eq!(state.used(), held[pg].iter().sum::<u32>());
                prop_assert!(state.used_reserved <= state.reserved_cells);
                prop_assert!(state.used_headroom <= state.headroom_cells);
                let shared: u32 = buffer.pgs().iter().map(|p| p.used_shared).sum();
                prop_assert_eq!(shared, buffer.shared_used());
                prop_assert!(buffer.shared_used() <= buffer.shared_cells());
            }
            for (pg, cells) in held.iter().enumerate() {
                for &c in cells {
                    buffer.release_ingress(pg, c);
                }
            }
            prop_assert_eq!(buffer.used_cells(), 0);
            prop_assert!(buffer.pgs().iter().all(|p| !p.xoff));
        }
    }
}
