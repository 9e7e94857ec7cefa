//! What one call to the pipeline emits: frames, their descriptors, and
//! where they go.
//!
//! Frames live in the slots of a [`FramePool`]: fixed-size buffers,
//! reference-counted, so a queue (the traffic manager) can hold a frame past
//! the call that made it without copying it, and the identical copies of a
//! flood share one buffer. Each emitted frame carries a [`FrameMeta`]: what a
//! traffic manager needs to classify, queue and ECN-mark it without parsing
//! it again. One `Output` is reused across calls; the pool grows only to its
//! high-water mark, so the steady state allocates nothing.

use crate::wire::{Ecn, EtherType, Ipv4Packet, Ipv6Packet, ethernet};

use super::PortId;

/// Why a frame goes to the host (the kernel behind the host interface).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PuntReason {
    /// Addressed to one of the switch's own IP addresses ("ip2me").
    Ip2Me,
    /// A copy of an ARP packet, so the kernel keeps its own neighbour table.
    Arp,
    /// A copy of an IPv6 neighbour discovery packet.
    NeighborDiscovery,
    /// An IEEE 802.1D reserved group address (LLDP, LACP, STP...).
    L2Protocol,
    /// Link-local multicast or broadcast IP (routing protocols, DHCP).
    LinkLocalMulticast,
    /// A route whose target is `RouteTarget::Punt`.
    RouteTrap,
}

/// Where an emitted frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Egress {
    /// Out of a front-panel port.
    Port(PortId),
    /// To the host interface of `port` (and router interface `rif` when the
    /// frame was received through one); for L3 punts the VLAN tag is removed.
    Host { port: PortId, rif: Option<super::RifId>, reason: PuntReason },
}

/// The descriptor of an emitted frame. The pipeline records the ingress
/// port and flow hash when it emits the frame; the header fields (offsets,
/// priority, DSCP, ECN) are read from the frame's first bytes when the
/// descriptor is taken ([`Output::iter`], [`Output::get`]), a few loads with
/// no parse of the packet, so a switch that does not classify pays nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FrameMeta {
    /// The port the frame (or the frame it was made from) came in on; `None`
    /// for frames the switch originates or the host sends.
    pub ingress: Option<PortId>,
    /// Length of the frame in bytes.
    pub len: u16,
    /// Offset of the IP header in the frame, 0 if the frame carries none.
    pub l3_offset: u16,
    /// The 802.1p priority of the frame's outer tag (0 if untagged).
    pub pcp: u8,
    /// DSCP of the IP header at `l3_offset` (for VXLAN: the outer header,
    /// which RFC 6040 copies from the inner one on encapsulation).
    pub dscp: u8,
    /// The ECN field of that IP header: a queue may mark ECT packets CE.
    pub ecn: Ecn,
    /// The flow hash the pipeline computed for ECMP or the VXLAN source
    /// port, 0 when it computed none.
    pub flow_hash: u32,
    /// Traffic class and ingress priority group, set by the traffic
    /// manager's classification (0 until then).
    pub tc: u8,
    pub pg: u8,
}

impl FrameMeta {
    /// Whether a queue may signal congestion by marking rather than dropping.
    pub fn ecn_capable(&self) -> bool {
        matches!(self.ecn, Ecn::Ect0 | Ecn::Ect1 | Ecn::Ce)
    }

    /// Reads the descriptor's L2/L3 fields from the frame's headers.
    pub(crate) fn describe(frame: &[u8]) -> FrameMeta {
        let mut meta = FrameMeta { len: frame.len().min(usize::from(u16::MAX)) as u16, ..FrameMeta::default() };
        let Some(&[t0, t1]) = frame.get(12..14) else { return meta };
        let mut ethertype = u16::from_be_bytes([t0, t1]);
        let mut offset = 14;
        // Up to two tags (802.1Q, Q-in-Q); the outer one carries the priority.
        for depth in 0..2 {
            if ethertype != u16::from(EtherType::Vlan) && ethertype != u16::from(EtherType::QinQ) {
                break;
            }
            let Some(&[tci, _, e0, e1]) = frame.get(offset..offset + 4) else { return meta };
            if depth == 0 {
                meta.pcp = tci >> 5;
            }
            ethertype = u16::from_be_bytes([e0, e1]);
            offset += 4;
        }
        let traffic_class = if ethertype == u16::from(EtherType::Ipv4) {
            frame.get(offset + 1).copied()
        } else if ethertype == u16::from(EtherType::Ipv6) {
            frame.get(offset..offset + 2).map(|tc| (tc[0] << 4) | (tc[1] >> 4))
        } else {
            None
        };
        if let Some(traffic_class) = traffic_class {
            meta.l3_offset = offset as u16;
            meta.dscp = traffic_class >> 2;
            meta.ecn = Ecn::from_bits(traffic_class & 0b11);
        }
        meta
    }
}

/// A frame in a [`FramePool`]: a slot index, valid while a reference is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameRef(u32);

impl FrameRef {
    /// A handle to no frame: what a queue's unused storage holds. Using it
    /// with a pool panics.
    pub const DANGLING: FrameRef = FrameRef(u32::MAX);

    /// The slot index, for a caller that names frames by number (the
    /// simulator's events).
    pub const fn index(self) -> u32 {
        self.0
    }

    /// The frame at slot `index` of a pool (valid only while the caller
    /// holds a reference to it).
    pub const fn from_index(index: u32) -> FrameRef {
        FrameRef(index)
    }
}

/// Fixed-size, reference-counted frame buffers, allocated on first use and
/// kept to the high-water mark.
///
/// Each slot owns its buffer, so a frame can change hands without its bytes
/// being copied: a node takes in a frame held in another pool by swapping
/// the two slots' buffers ([`FramePool::move_from`]), and lends a buffer out
/// while the pipeline reads it (the pipeline then forwards it in place).
#[derive(Debug, Clone)]
pub struct FramePool {
    /// One buffer of `slot_size` bytes per slot; empty until the slot is
    /// first used, and while its bytes are lent out.
    buffers: Vec<Box<[u8]>>,
    /// Bytes per slot: [`FramePool::SLOT_SIZE`] unless the owner knows its
    /// frames are smaller (a simulated fabric of one MTU).
    slot_size: usize,
    slots: Vec<Slot>,
    free: Vec<u32>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    len: u32,
    refs: u32,
    /// What the frame's destination MAC is, recorded when the node queues
    /// it, so the port's counters need not read the frame again as it leaves.
    cast: Cast,
}

/// Whether a frame goes to one station, a group or everyone (its
/// destination MAC): what a port's unicast/multicast/broadcast counters
/// count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Cast {
    #[default]
    Unicast,
    Multicast,
    Broadcast,
}

impl Cast {
    /// Classifies by destination MAC; a runt shorter than a MAC counts as unicast.
    #[inline]
    pub fn of(frame: &[u8]) -> Cast {
        match frame.get(..6) {
            Some([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]) => Cast::Broadcast,
            Some(dst) if dst[0] & 1 != 0 => Cast::Multicast,
            _ => Cast::Unicast,
        }
    }
}

/// A frame that left a port, as its counters see it: its length and cast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxFrame {
    pub len: u32,
    pub cast: Cast,
}

impl TxFrame {
    /// Reads the cast from the frame's destination MAC.
    #[inline]
    pub fn of(frame: &[u8]) -> TxFrame {
        TxFrame { len: frame.len() as u32, cast: Cast::of(frame) }
    }
}

impl FramePool {
    /// The largest frame a slot holds: a 9216-byte jumbo frame plus the
    /// headers VXLAN encapsulation adds, rounded up.
    pub const SLOT_SIZE: usize = 9344;

    pub fn with_slots(slots: usize) -> FramePool {
        FramePool::with_slots_of(slots, Self::SLOT_SIZE)
    }

    /// A pool whose frames are at most `slot_size` bytes: a simulated
    /// switch holding thousands of 4 KiB frames need not reserve 9 KiB
    /// for each (half the memory its queues take, and half the pages).
    /// Only for an owner that bounds every frame it forwards (the
    /// simulator makes its hosts' frames): a longer one panics.
    pub fn with_slots_of(slots: usize, slot_size: usize) -> FramePool {
        let slot_size = slot_size.clamp(64, Self::SLOT_SIZE);
        let mut pool = FramePool { buffers: Vec::new(), slot_size, slots: Vec::new(), free: Vec::new() };
        pool.grow(slots);
        pool
    }

    /// The largest frame a slot of this pool holds.
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    fn grow(&mut self, slots: usize) {
        let old = self.slots.len();
        // No buffer yet: an idle switchd's 256 slots of 9 KiB cost nothing
        // but for the few lowest the free stack hands out.
        self.buffers.resize_with(old + slots, Box::default);
        self.slots.resize(old + slots, Slot::default());
        // Lowest slots on top of the free stack: recently used slots are reused first.
        self.free.extend((old as u32..(old + slots) as u32).rev());
    }

    /// Slots in the pool, in use or free.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Slots holding a frame someone still refers to.
    pub fn in_use(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// A new frame of `len` bytes with one reference; its bytes are stale.
    #[inline]
    fn alloc(&mut self, len: usize) -> FrameRef {
        assert!(len <= self.slot_size, "frame of {len} bytes beyond a pool slot");
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.grow(self.capacity().max(16));
                self.free.pop().expect("grown")
            }
        };
        let buffer = &mut self.buffers[slot as usize];
        if buffer.is_empty() {
            *buffer = vec![0; self.slot_size].into_boxed_slice();
        }
        self.slots[slot as usize] = Slot { len: len as u32, refs: 1, cast: Cast::Unicast };
        FrameRef(slot)
    }

    /// A new frame of `len` bytes with one reference, for the owner to
    /// write whole (its bytes are stale), then to hand on by reference.
    #[inline]
    pub fn alloc_frame(&mut self, len: usize) -> (FrameRef, &mut [u8]) {
        let frame = self.alloc(len);
        (frame, self.bytes_mut(frame))
    }

    /// Another reference to `frame` (a flood sharing one buffer, a queue
    /// holding it).
    pub fn retain(&mut self, frame: FrameRef) {
        self.slots[frame.0 as usize].refs += 1;
    }

    /// Drops one reference; the slot is free again with the last.
    #[inline]
    pub fn release(&mut self, frame: FrameRef) {
        let slot = &mut self.slots[frame.0 as usize];
        debug_assert!(slot.refs > 0, "release of a free slot");
        slot.refs -= 1;
        if slot.refs == 0 {
            self.free.push(frame.0);
        }
    }

    #[inline]
    pub fn bytes(&self, frame: FrameRef) -> &[u8] {
        &self.buffers[frame.0 as usize][..self.slots[frame.0 as usize].len as usize]
    }

    /// References held on `frame`.
    pub fn refs(&self, frame: FrameRef) -> u32 {
        self.slots[frame.0 as usize].refs
    }

    /// The frame's bytes for writing: the caller must know nobody else
    /// reads this buffer (see [`refs`](Self::refs)).
    #[inline]
    pub fn bytes_mut(&mut self, frame: FrameRef) -> &mut [u8] {
        &mut self.buffers[frame.0 as usize][..self.slots[frame.0 as usize].len as usize]
    }

    /// Shortens `frame` to `len` bytes (a frame forwarded in place without
    /// the padding it arrived with).
    #[inline]
    fn truncate(&mut self, frame: FrameRef, len: usize) {
        let slot = &mut self.slots[frame.0 as usize];
        slot.len = slot.len.min(len as u32);
    }

    /// Records the frame's cast for the counters of the port it leaves by.
    #[inline]
    pub(crate) fn set_cast(&mut self, frame: FrameRef, cast: Cast) {
        self.slots[frame.0 as usize].cast = cast;
    }

    /// The frame as the counters of the port it leaves by count it.
    #[inline]
    pub fn tx_frame(&self, frame: FrameRef) -> TxFrame {
        let slot = &self.slots[frame.0 as usize];
        TxFrame { len: slot.len, cast: slot.cast }
    }

    /// Takes in `theirs`, a frame of `other` (a pool of the same slot size)
    /// that the caller holds a reference to: a new frame of this pool with
    /// one reference gets its bytes by swapping the two slots' buffers (no
    /// copy; `other` keeps a buffer for its slot), and the caller's
    /// reference in `other` is released.
    pub fn move_from(&mut self, other: &mut FramePool, theirs: FrameRef) -> FrameRef {
        assert_eq!(self.slot_size, other.slot_size, "frames move between pools of one slot size");
        let len = other.slots[theirs.0 as usize].len as usize;
        let mine = self.alloc(len);
        std::mem::swap(&mut self.buffers[mine.0 as usize], &mut other.buffers[theirs.0 as usize]);
        other.release(theirs);
        mine
    }

    /// Lends `frame`'s buffer out (to be read while the pool is written):
    /// the slot stays in use, bufferless, until [`FramePool::put_back`].
    #[inline]
    fn lend(&mut self, frame: FrameRef) -> Box<[u8]> {
        std::mem::take(&mut self.buffers[frame.0 as usize])
    }

    #[inline]
    fn put_back(&mut self, frame: FrameRef, buffer: Box<[u8]>) {
        debug_assert_eq!(buffer.len(), self.slot_size);
        self.buffers[frame.0 as usize] = buffer;
    }
}

/// One emitted frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Emitted<'a> {
    pub to: Egress,
    pub frame: &'a [u8],
    pub meta: FrameMeta,
    /// The frame's buffer, for [`Output::retain`].
    pub buffer: FrameRef,
}

#[derive(Debug, Clone, Copy)]
struct Record {
    to: Egress,
    frame: FrameRef,
    ingress: Option<PortId>,
    flow_hash: u32,
}

/// Frames emitted by `Switch::process`, `poll` and the host-send calls.
#[derive(Debug, Clone)]
pub struct Output {
    pool: FramePool,
    records: Vec<Record>,
    /// Records up to here have their descriptors filled.
    described: usize,
    /// Some frame has more than one reference (a shared flood copy, or one
    /// retained by a queue): `clear` must count references down.
    shared: bool,
    /// The frame the call in progress reads, when it is one of this pool's
    /// (its buffer lent out meanwhile): the router may forward it in place,
    /// once, instead of copying it into a new frame.
    received: Option<FrameRef>,
    /// The rewrite of the frame forwarded in place, made when its buffer
    /// is back ([`Output::return_received`]).
    in_place: Option<InPlace>,
}

/// A routed packet forwarded in the buffer it arrived in: the new
/// Ethernet header, the hop's change to the IP header, the new length.
#[derive(Debug, Clone, Copy)]
struct InPlace {
    frame: FrameRef,
    header: [u8; ethernet::HEADER_LEN],
    len: usize,
    edit: HopEdit,
}

/// What a router changes in an IP header it forwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HopEdit {
    /// RFC 1812 section 5.3.1, with the RFC 1624 checksum update.
    Ipv4Ttl,
    /// RFC 8200 section 3.
    Ipv6HopLimit,
}

impl HopEdit {
    /// Applies the change to the IP packet `ip`.
    #[inline]
    pub(crate) fn apply(self, ip: &mut [u8]) {
        match self {
            HopEdit::Ipv4Ttl => {
                Ipv4Packet::new_unchecked(ip).decrement_ttl_incremental();
            }
            HopEdit::Ipv6HopLimit => {
                Ipv6Packet::new_unchecked(ip).decrement_hop_limit();
            }
        }
    }
}

impl Default for Output {
    fn default() -> Self {
        Output::new()
    }
}

impl Output {
    pub fn new() -> Output {
        Output::with_capacity(256)
    }

    /// An output with `frames` pool slots preallocated.
    pub fn with_capacity(frames: usize) -> Output {
        Output::with_pool(FramePool::with_slots(frames), frames)
    }

    /// An output over `pool`, with room for `frames` records.
    pub fn with_pool(pool: FramePool, frames: usize) -> Output {
        Output {
            pool,
            records: Vec::with_capacity(frames),
            described: 0,
            shared: false,
            received: None,
            in_place: None,
        }
    }

    /// Forgets every frame, releasing the buffers nobody retained.
    #[inline]
    pub fn clear(&mut self) {
        if self.shared {
            for record in self.records.drain(..) {
                self.pool.release(record.frame);
            }
            self.shared = false;
        } else {
            // One reference each: every slot is free again (first emitted
            // on top, so the next call reuses the same, warm, slots).
            self.pool.free.extend(self.records.iter().rev().map(|record| record.frame.0));
            self.records.clear();
        }
        self.described = 0;
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn get(&self, index: usize) -> Option<Emitted<'_>> {
        self.records.get(index).map(|record| self.emitted(record))
    }

    pub fn iter(&self) -> impl Iterator<Item = Emitted<'_>> + '_ {
        self.records.iter().map(|record| self.emitted(record))
    }

    fn emitted<'a>(&'a self, record: &Record) -> Emitted<'a> {
        let frame = self.pool.bytes(record.frame);
        let mut meta = FrameMeta::describe(frame);
        meta.ingress = record.ingress;
        meta.flow_hash = record.flow_hash;
        Emitted { to: record.to, frame, meta, buffer: record.frame }
    }

    /// Keeps `frame` alive past [`Output::clear`] (a queue holding it); give
    /// it back with [`Output::release`].
    pub fn retain(&mut self, frame: FrameRef) {
        self.shared = true;
        self.pool.retain(frame);
    }

    pub fn release(&mut self, frame: FrameRef) {
        self.pool.release(frame);
    }

    /// The pool the frames live in (a retained frame's bytes).
    pub fn pool_mut(&mut self) -> &mut FramePool {
        &mut self.pool
    }

    pub fn pool(&self) -> &FramePool {
        &self.pool
    }

    /// Ends a pipeline call that took a frame from `ingress` (or none) and
    /// computed `flow_hash` (or 0): fills the descriptors of what it emitted.
    #[inline]
    pub(crate) fn finish(&mut self, ingress: Option<PortId>, flow_hash: u32) {
        for record in &mut self.records[self.described..] {
            record.ingress = ingress;
            record.flow_hash = flow_hash;
        }
        self.described = self.records.len();
    }

    /// Appends a zeroed frame of `len` bytes and returns it for writing.
    pub(crate) fn push(&mut self, to: Egress, len: usize) -> &mut [u8] {
        let frame = self.pool.alloc(len);
        self.records.push(Record { to, frame, ingress: None, flow_hash: 0 });
        let buf = self.pool.bytes_mut(frame);
        buf.fill(0);
        buf
    }

    /// Appends a frame of `len` bytes whose writer sets every byte (a
    /// forwarded packet copied whole), without zeroing it first.
    #[inline]
    pub(crate) fn push_overwritten(&mut self, to: Egress, len: usize) -> &mut [u8] {
        let frame = self.pool.alloc(len);
        self.records.push(Record { to, frame, ingress: None, flow_hash: 0 });
        self.pool.bytes_mut(frame)
    }

    /// Appends a frame made of `parts`, without zeroing first, and returns
    /// its buffer.
    #[inline]
    pub(crate) fn push_parts(&mut self, to: Egress, parts: &[&[u8]]) -> FrameRef {
        let len = parts.iter().map(|part| part.len()).sum();
        let frame = self.pool.alloc(len);
        self.records.push(Record { to, frame, ingress: None, flow_hash: 0 });
        let mut buf = self.pool.bytes_mut(frame);
        for part in parts {
            let (head, rest) = buf.split_at_mut(part.len());
            head.copy_from_slice(part);
            buf = rest;
        }
        frame
    }

    /// Lends out the buffer of `frame`, a frame of this pool the caller
    /// holds a reference to, for a pipeline call to read while it emits
    /// into this output; that call may forward it in place
    /// ([`Output::forward_in_place`]). Give it back with
    /// [`Output::return_received`] before reading the output.
    #[inline]
    pub(crate) fn lend_received(&mut self, frame: FrameRef) -> Box<[u8]> {
        self.received = Some(frame);
        self.pool.lend(frame)
    }

    /// Puts the received frame's buffer back, rewritten if the call
    /// forwarded it in place.
    #[inline]
    pub(crate) fn return_received(&mut self, frame: FrameRef, buffer: Box<[u8]>) {
        self.received = None;
        self.pool.put_back(frame, buffer);
        if let Some(InPlace { frame, header, len, edit }) = self.in_place.take() {
            self.pool.truncate(frame, len);
            let buf = self.pool.bytes_mut(frame);
            buf[..ethernet::HEADER_LEN].copy_from_slice(&header);
            edit.apply(&mut buf[ethernet::HEADER_LEN..]);
        }
    }

    /// Emits the received frame again, out of `to`, as a routed packet of
    /// `len` bytes (from the start of its IP header at
    /// `ethernet::HEADER_LEN`, up to `len`) with the Ethernet `header` and
    /// the hop's `edit`: no copy. `false` (nothing emitted) when the frame
    /// is no frame of this pool, was already forwarded so, or is shorter.
    /// Only for a caller whose packet is the received frame's own bytes
    /// after an untagged Ethernet header.
    #[inline]
    pub(crate) fn forward_in_place(
        &mut self,
        to: Egress,
        header: [u8; ethernet::HEADER_LEN],
        len: usize,
        edit: HopEdit,
    ) -> bool {
        let Some(frame) = self.received else { return false };
        if len > self.pool.slots[frame.0 as usize].len as usize {
            return false;
        }
        self.received = None;
        self.shared = true;
        self.pool.retain(frame);
        self.records.push(Record { to, frame, ingress: None, flow_hash: 0 });
        self.in_place = Some(InPlace { frame, header, len, edit });
        true
    }

    /// Appends another reference to a frame already emitted in this call
    /// (an identical flood copy for another port).
    pub(crate) fn push_shared(&mut self, to: Egress, frame: FrameRef) -> &[u8] {
        self.shared = true;
        self.pool.retain(frame);
        self.records.push(Record { to, frame, ingress: None, flow_hash: 0 });
        self.pool.bytes(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_read_tags_and_the_ip_traffic_class() {
        // 802.1Q tag PCP 5, IPv4 with DSCP 26 (AF31) and ECT(0).
        let mut frame = vec![0u8; 64];
        frame[12..14].copy_from_slice(&[0x81, 0x00]);
        frame[14] = 5 << 5;
        frame[16..18].copy_from_slice(&[0x08, 0x00]);
        frame[18] = 0x45;
        frame[19] = (26 << 2) | 0b10;
        let meta = FrameMeta::describe(&frame);
        assert_eq!((meta.pcp, meta.l3_offset, meta.dscp, meta.ecn, meta.len), (5, 18, 26, Ecn::Ect0, 64));
        assert!(meta.ecn_capable());
        // IPv6, traffic class 0xbb = DSCP 46, ECN CE.
        let mut v6 = vec![0u8; 60];
        v6[12..14].copy_from_slice(&[0x86, 0xdd]);
        v6[14] = 0x60 | 0x0b;
        v6[15] = 0xb0;
        let meta = FrameMeta::describe(&v6);
        assert_eq!((meta.l3_offset, meta.dscp, meta.ecn), (14, 46, Ecn::Ce));
        // Not IP: no L3 offset; a runt: only its length.
        let meta = FrameMeta::describe(&[0u8; 20]);
        assert_eq!((meta.l3_offset, meta.ecn_capable()), (0, false));
        assert_eq!(FrameMeta::describe(&[1, 2, 3]).len, 3);
    }

    #[test]
    fn retained_frames_outlive_clear_and_shared_copies_free_with_the_last_reference() {
        let mut out = Output::with_capacity(4);
        let frame = out.push_parts(Egress::Port(1), &[b"abc", b"def"]);
        out.push_shared(Egress::Port(2), frame);
        out.finish(Some(3), 7);
        assert_eq!(out.pool().in_use(), 1, "two records, one buffer");
        out.retain(frame);
        out.clear();
        assert_eq!(out.pool().bytes(frame), b"abcdef", "a queue's reference keeps the bytes");
        out.release(frame);
        assert_eq!(out.pool().in_use(), 0);
    }

    #[test]
    fn a_pool_of_small_slots_keeps_frames_apart() {
        let mut out = Output::with_pool(FramePool::with_slots_of(1, 128), 2);
        assert_eq!(out.pool().slot_size(), 128);
        let a = out.push_parts(Egress::Port(1), &[&[0xaa; 128]]);
        let b = out.push_parts(Egress::Port(2), &[&[0xbb; 100]]);
        assert_eq!(out.pool().bytes(a), &[0xaa; 128][..]);
        assert_eq!(out.pool().bytes(b), &[0xbb; 100][..]);
        assert!(out.pool().capacity() >= 2, "grown past the first slot");
    }

    #[test]
    fn the_pool_grows_to_its_high_water_mark_and_reuses_slots() {
        let mut out = Output::with_capacity(2);
        for _ in 0..3 {
            for port in 0..40 {
                out.push(Egress::Port(port), 60);
            }
            out.clear();
        }
        assert!(out.pool().capacity() >= 40);
        assert_eq!(out.pool().in_use(), 0);
    }
}
