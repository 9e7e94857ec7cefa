//! Virtual output queues: one FIFO per (egress port, queue), holding frame
//! descriptors in one preallocated slab linked by index, so enqueue and
//! dequeue never allocate and a frame is never copied.
//!
//! Each descriptor remembers the ingress PG it was charged to, so the cells
//! go back to the right (port, PG) when the frame leaves.

/// What the traffic manager keeps per waiting frame.
#[derive(Debug, Clone, Copy)]
pub struct Descriptor<H> {
    pub handle: H,
    pub bytes: u32,
    pub cells: u32,
    /// Index of the ingress (port, PG) charged.
    pub ingress_pg: u32,
    /// ECT(0), ECT(1) or CE: its ECN mark is decided when it leaves.
    pub ecn_capable: bool,
    next: u32,
}

/// A frame to append: a [`Descriptor`] without its link.
#[derive(Debug, Clone, Copy)]
pub struct Entry<H> {
    pub handle: H,
    pub bytes: u32,
    pub cells: u32,
    pub ingress_pg: u32,
    pub ecn_capable: bool,
}

const NIL: u32 = u32::MAX;

/// One queue's head, tail and length.
#[derive(Debug, Clone, Copy)]
struct Fifo {
    head: u32,
    tail: u32,
    frames: u32,
}

impl Default for Fifo {
    fn default() -> Fifo {
        Fifo { head: NIL, tail: NIL, frames: 0 }
    }
}

/// All queues of all ports over one descriptor slab.
#[derive(Debug, Clone)]
pub struct VoqSet<H> {
    /// Descriptors made so far: reserved for `capacity` at the start, but
    /// a slot is written (its page touched) only when first needed, so an
    /// idle switch's traffic manager keeps its 1.4 MiB slab unresident.
    slab: Vec<Descriptor<H>>,
    capacity: u32,
    /// Released slots, linked through `next`; used before new ones.
    free: u32,
    fifos: Vec<Fifo>,
}

impl<H: Copy> VoqSet<H> {
    /// `queues` FIFOs sharing room for `capacity` frames. (`filler` was
    /// the unused slots' handle; slots are now made when first used.)
    pub fn new(queues: usize, capacity: u32, _filler: H) -> VoqSet<H> {
        VoqSet {
            slab: Vec::with_capacity(capacity as usize),
            capacity,
            free: NIL,
            fifos: vec![Fifo::default(); queues],
        }
    }

    /// Appends a frame to `queue`; gives the frame back if the slab is full.
    #[inline]
    pub fn push(&mut self, queue: usize, frame: Entry<H>) -> Result<(), H> {
        let Entry { handle, bytes, cells, ingress_pg, ecn_capable } = frame;
        let descriptor = Descriptor { handle, bytes, cells, ingress_pg, ecn_capable, next: NIL };
        let slot = self.free;
        let slot = if slot != NIL {
            self.free = self.slab[slot as usize].next;
            self.slab[slot as usize] = descriptor;
            slot
        } else if (self.slab.len() as u32) < self.capacity {
            // Within the reserved capacity: no reallocation.
            self.slab.push(descriptor);
            self.slab.len() as u32 - 1
        } else {
            return Err(handle);
        };
        let fifo = &mut self.fifos[queue];
        if fifo.tail == NIL {
            fifo.head = slot;
        } else {
            self.slab[fifo.tail as usize].next = slot;
        }
        fifo.tail = slot;
        fifo.frames += 1;
        Ok(())
    }

    /// The frame at the head of `queue`.
    #[inline]
    pub fn head(&self, queue: usize) -> Option<&Descriptor<H>> {
        let head = self.fifos[queue].head;
        (head != NIL).then(|| &self.slab[head as usize])
    }

    /// Takes the head of `queue`.
    #[inline]
    pub fn pop(&mut self, queue: usize) -> Option<Descriptor<H>> {
        let fifo = &mut self.fifos[queue];
        let slot = fifo.head;
        if slot == NIL {
            return None;
        }
        let descriptor = self.slab[slot as usize];
        fifo.head = descriptor.next;
        if fifo.head == NIL {
            fifo.tail = NIL;
        }
        fifo.frames -= 1;
        self.slab[slot as usize].next = self.free;
        self.free = slot;
        Some(descriptor)
    }

    #[inline]
    pub fn frames(&self, queue: usize) -> u32 {
        self.fifos[queue].frames
    }

    #[inline]
    pub fn is_empty(&self, queue: usize) -> bool {
        self.fifos[queue].head == NIL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(handle: u32, bytes: u32, cells: u32, ingress_pg: u32) -> Entry<u32> {
        Entry { handle, bytes, cells, ingress_pg, ecn_capable: false }
    }

    #[test]
    fn fifos_share_the_slab_in_order() {
        let mut voqs = VoqSet::new(3, 4, 0u32);
        voqs.push(0, entry(10, 100, 1, 0)).unwrap();
        voqs.push(2, entry(20, 200, 1, 5)).unwrap();
        voqs.push(0, entry(11, 100, 1, 0)).unwrap();
        voqs.push(0, entry(12, 100, 1, 0)).unwrap();
        assert_eq!(voqs.push(1, entry(99, 1, 1, 0)), Err(99), "slab full");
        assert_eq!(voqs.frames(0), 3);
        assert_eq!(voqs.head(2).unwrap().ingress_pg, 5);
        assert_eq!(voqs.pop(0).unwrap().handle, 10);
        voqs.push(1, entry(30, 1, 1, 0)).unwrap();
        assert_eq!([voqs.pop(0), voqs.pop(0), voqs.pop(0)].map(|d| d.map(|d| d.handle)), [Some(11), Some(12), None]);
        assert!(voqs.is_empty(0));
        assert_eq!(voqs.pop(1).unwrap().handle, 30);
        assert_eq!(voqs.pop(2).unwrap().handle, 20);
        // Every slot is free again.
        for i in 0..4 {
            voqs.push(1, entry(i, 1, 1, 0)).unwrap();
        }
        assert!(voqs.push(1, entry(5, 1, 1, 0)).is_err());
    }
}
