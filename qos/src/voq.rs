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

/// One queue's head, tail and length: kept by the caller with the rest of
/// the queue's hot state (the traffic manager's per-queue slot), so a frame
/// in or out touches one place for the queue and the slab for its frame.
#[derive(Debug, Clone, Copy)]
pub struct Fifo {
    head: u32,
    tail: u32,
    frames: u32,
}

impl Default for Fifo {
    fn default() -> Fifo {
        Fifo { head: NIL, tail: NIL, frames: 0 }
    }
}

impl Fifo {
    #[inline]
    pub fn frames(&self) -> u32 {
        self.frames
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }
}

/// The descriptor slab all queues of all ports share.
#[derive(Debug, Clone)]
pub struct VoqSet<H> {
    /// Descriptors made so far: reserved for `capacity` at the start, but
    /// a slot is written (its page touched) only when first needed, so an
    /// idle switch's traffic manager keeps its 1.4 MiB slab unresident.
    slab: Vec<Descriptor<H>>,
    capacity: u32,
    /// Released slots, linked through `next`; used before new ones.
    free: u32,
}

impl<H: Copy> VoqSet<H> {
    /// Room for `capacity` frames over any number of [`Fifo`]s. (`filler`
    /// was the unused slots' handle; slots are now made when first used.)
    pub fn new(capacity: u32, _filler: H) -> VoqSet<H> {
        VoqSet { slab: Vec::with_capacity(capacity as usize), capacity, free: NIL }
    }

    /// Appends a frame to `fifo`; gives the frame back if the slab is full.
    #[inline]
    pub fn push(&mut self, fifo: &mut Fifo, frame: Entry<H>) -> Result<(), H> {
        let Entry { handle, bytes, cells, ingress_pg, ecn_capable } = frame;
        let descriptor = Descriptor { handle, bytes, cells, ingress_pg, ecn_capable, next: NIL };
        let slot = self.free;
        let slot = if let Some(free) = self.slab.get_mut(slot as usize) {
            self.free = free.next;
            *free = descriptor;
            slot
        } else if (self.slab.len() as u32) < self.capacity {
            // Within the reserved capacity: no reallocation.
            self.slab.push(descriptor);
            self.slab.len() as u32 - 1
        } else {
            return Err(handle);
        };
        match self.slab.get_mut(fifo.tail as usize) {
            Some(tail) => tail.next = slot,
            None => fifo.head = slot,
        }
        fifo.tail = slot;
        fifo.frames += 1;
        Ok(())
    }

    /// The frame at the head of `fifo`.
    #[inline]
    pub fn head(&self, fifo: &Fifo) -> Option<&Descriptor<H>> {
        self.slab.get(fifo.head as usize)
    }

    /// Takes the head of `fifo`.
    #[inline]
    pub fn pop(&mut self, fifo: &mut Fifo) -> Option<Descriptor<H>> {
        let slot = fifo.head;
        let head = self.slab.get_mut(slot as usize)?;
        let descriptor = *head;
        head.next = self.free;
        self.free = slot;
        fifo.head = descriptor.next;
        if fifo.head == NIL {
            fifo.tail = NIL;
        }
        fifo.frames -= 1;
        Some(descriptor)
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
        let mut voqs = VoqSet::new(4, 0u32);
        let mut fifos = [Fifo::default(); 3];
        voqs.push(&mut fifos[0], entry(10, 100, 1, 0)).unwrap();
        voqs.push(&mut fifos[2], entry(20, 200, 1, 5)).unwrap();
        voqs.push(&mut fifos[0], entry(11, 100, 1, 0)).unwrap();
        voqs.push(&mut fifos[0], entry(12, 100, 1, 0)).unwrap();
        assert_eq!(voqs.push(&mut fifos[1], entry(99, 1, 1, 0)), Err(99), "slab full");
        assert_eq!(fifos[0].frames(), 3);
        assert_eq!(voqs.head(&fifos[2]).unwrap().ingress_pg, 5);
        assert_eq!(voqs.pop(&mut fifos[0]).unwrap().handle, 10);
        voqs.push(&mut fifos[1], entry(30, 1, 1, 0)).unwrap();
        assert_eq!(
            [voqs.pop(&mut fifos[0]), voqs.pop(&mut fifos[0]), voqs.pop(&mut fifos[0])].map(|d| d.map(|d| d.handle)),
            [Some(11), Some(12), None]
        );
        assert!(fifos[0].is_empty());
        assert_eq!(voqs.pop(&mut fifos[1]).unwrap().handle, 30);
        assert_eq!(voqs.pop(&mut fifos[2]).unwrap().handle, 20);
        // Every slot is free again.
        for i in 0..4 {
            voqs.push(&mut fifos[1], entry(i, 1, 1, 0)).unwrap();
        }
        assert!(voqs.push(&mut fifos[1], entry(5, 1, 1, 0)).is_err());
    }
}
