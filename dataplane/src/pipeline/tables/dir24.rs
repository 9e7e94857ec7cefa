//! DIR-24-8 (Gupta, Lin and McKeown, "Routing lookups in hardware at memory
//! access speeds", 1998): the IPv4 forwarding table as an array indexed by
//! the top 24 bits of the address, with 256-entry chunks for the /24s that
//! hold longer prefixes. A lookup is one memory access, two for addresses
//! under a prefix longer than /24.
//!
//! It is an index over the route table, not the table itself: the
//! `prefix-trie` map stays the source of truth (it answers `route`, iterates,
//! and tells what a removed prefix uncovers). The top array is 64 MiB of
//! address space, allocated zeroed so that the kernel only backs the pages
//! routes touch, and only built once the table is big enough for the trie
//! walk to cost more than that (`SwitchConfig::dir24_min_routes`).
//!
//! An entry is a `u32`: bits 0-5 the prefix length, bits 6-8 the kind of
//! target (0 = no route), bits 9-30 its operand (router interface, or slot
//! of a next hop or group); bit 31 set in the top array means the rest is a
//! chunk index. Entries carry their prefix length so that an update touches
//! exactly the entries of its prefix and never a longer one.

const TOP_LEN: usize = 1 << 24;
const CHUNK_LEN: usize = 256;
const CHUNK: u32 = 1 << 31;
const LEN_MASK: u32 = 0x3f;
const KIND_SHIFT: u32 = 6;
const KIND_MASK: u32 = 0x7;
const OPERAND_SHIFT: u32 = 9;
/// Operands (slots, interface ids) must fit in 22 bits.
pub(crate) const OPERAND_LIMIT: u32 = 1 << 22;

/// Packs a target (`kind` 1..=7, `operand` < `OPERAND_LIMIT`) and its prefix length.
#[inline]
pub(crate) fn entry(kind: u32, operand: u32, len: u8) -> u32 {
    debug_assert!((1..=KIND_MASK).contains(&kind) && operand < OPERAND_LIMIT && len <= 32);
    (operand << OPERAND_SHIFT) | (kind << KIND_SHIFT) | u32::from(len)
}

/// The kind (0: no route) and operand of an entry.
#[inline]
pub(crate) fn target(entry: u32) -> (u32, u32) {
    ((entry >> KIND_SHIFT) & KIND_MASK, entry >> OPERAND_SHIFT)
}

#[inline]
fn len_of(entry: u32) -> u8 {
    (entry & LEN_MASK) as u8
}

#[inline]
fn is_route(entry: u32) -> bool {
    (entry >> KIND_SHIFT) & KIND_MASK != 0
}

pub(crate) struct Dir24 {
    top: Vec<u32>,
    chunks: Vec<u32>,
    /// Prefixes longer than /24 in each chunk; a chunk with none is freed.
    chunk_prefixes: Vec<u32>,
    free_chunks: Vec<u32>,
}

impl Dir24 {
    pub(crate) fn new() -> Dir24 {
        // Zeroed allocation: pages no route touches are never backed.
        let mut top = vec![0; TOP_LEN];
        advise_huge_pages(&mut top);
        Dir24 { top, chunks: Vec::new(), chunk_prefixes: Vec::new(), free_chunks: Vec::new() }
    }

    /// The entry for `addr` (0 if no route covers it).
    #[inline]
    pub(crate) fn lookup(&self, addr: u32) -> u32 {
        let top = self.top[(addr >> 8) as usize];
        if top & CHUNK == 0 {
            return top;
        }
        self.chunks[(((top & !CHUNK) as usize) << 8) | (addr & 0xff) as usize]
    }

    /// Installs `addr/len` (host bits clear) as `new` (an `entry` of length
    /// `len`); `added` is false when it replaces the prefix's old target.
    pub(crate) fn insert(&mut self, addr: u32, len: u8, new: u32, added: bool) {
        debug_assert_eq!(len_of(new), len);
        let overwrite = |slot: &mut u32| {
            if len_of(*slot) <= len || !is_route(*slot) {
                *slot = new;
            }
        };
        if len <= 24 {
            let first = (addr >> 8) as usize;
            for index in first..first + (1 << (24 - len)) {
                let top = self.top[index];
                if top & CHUNK == 0 {
                    overwrite(&mut self.top[index]);
                } else {
                    let chunk = ((top & !CHUNK) as usize) << 8;
                    self.chunks[chunk..chunk + CHUNK_LEN].iter_mut().for_each(overwrite);
                }
            }
        } else {
            let chunk = self.chunk_for(addr);
            if added {
                self.chunk_prefixes[chunk] += 1;
            }
            let first = (chunk << 8) | (addr & 0xff) as usize;
            self.chunks[first..first + (1 << (32 - len))].iter_mut().for_each(overwrite);
        }
    }

    /// Removes `addr/len`: its entries become `uncovered`, the entry of the
    /// longest prefix shorter than `len` that covers it (0 if none).
    /// `uncovered_24` gives that entry for a whole /24 when a chunk is freed.
    pub(crate) fn remove(&mut self, addr: u32, len: u8, uncovered: u32, uncovered_24: impl FnOnce() -> u32) {
        let replace = |slot: &mut u32| {
            if len_of(*slot) == len && is_route(*slot) {
                *slot = uncovered;
            }
        };
        if len <= 24 {
            let first = (addr >> 8) as usize;
            for index in first..first + (1 << (24 - len)) {
                let top = self.top[index];
                if top & CHUNK == 0 {
                    replace(&mut self.top[index]);
                } else {
                    let chunk = ((top & !CHUNK) as usize) << 8;
                    self.chunks[chunk..chunk + CHUNK_LEN].iter_mut().for_each(replace);
                }
            }
        } else {
            let index = (addr >> 8) as usize;
            let top = self.top[index];
            if top & CHUNK == 0 {
                return;
            }
            let chunk = (top & !CHUNK) as usize;
            let first = (chunk << 8) | (addr & 0xff) as usize;
            self.chunks[first..first + (1 << (32 - len))].iter_mut().for_each(replace);
            self.chunk_prefixes[chunk] -= 1;
            if self.chunk_prefixes[chunk] == 0 {
                self.top[index] = uncovered_24();
                self.free_chunks.push(chunk as u32);
            }
        }
    }

    /// The chunk of the /24 holding `addr`, made from its current entry if needed.
    fn chunk_for(&mut self, addr: u32) -> usize {
        let index = (addr >> 8) as usize;
        let top = self.top[index];
        if top & CHUNK != 0 {
            return (top & !CHUNK) as usize;
        }
        let chunk = match self.free_chunks.pop() {
            Some(chunk) => chunk as usize,
            None => {
                self.chunks.resize(self.chunks.len() + CHUNK_LEN, 0);
                self.chunk_prefixes.push(0);
                self.chunk_prefixes.len() - 1
            }
        };
        self.chunks[chunk << 8..(chunk + 1) << 8].fill(top);
        self.chunk_prefixes[chunk] = 0;
        self.top[index] = CHUNK | chunk as u32;
        chunk
    }
}

/// Asks for transparent huge pages under the (not yet touched) top array:
/// lookups land anywhere in its 64 MiB, which with 4 KiB pages means a TLB
/// miss for most packets; with 2 MiB pages the whole array takes 32 TLB
/// entries. Only a hint: without THP it changes nothing.
fn advise_huge_pages(table: &mut [u32]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = table.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(table);
        let aligned = start.next_multiple_of(PAGE);
        if end > aligned {
            let len = (end - aligned) & !(PAGE - 1);
            // SAFETY: the range lies inside `table`'s allocation, and
            // MADV_HUGEPAGE changes how pages are backed, never their contents.
            unsafe { libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = table;
}

#[cfg(test)]
mod tests {
    use prefix_trie::PrefixMap;
    use proptest::prelude::*;

    use super::*;

    fn key(addr: u32, len: u8) -> (u32, u8) {
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
        (addr & mask, len)
    }

    /// Applies the operations to a trie and to the table, as the router
    /// does, and checks every probe address against the trie's LPM.
    fn check(ops: &[(bool, u32, u8, u32)], probes: &[u32]) {
        let mut trie: PrefixMap<(u32, u8), u32> = PrefixMap::new();
        let mut dir = Dir24::new();
        let encode = |(_, len): (u32, u8), value: u32| entry(1 + value % 7, value, len);
        for &(insert, addr, len, value) in ops {
            let prefix = key(addr, len);
            if insert {
                let added = trie.insert(prefix, value).is_none();
                dir.insert(prefix.0, prefix.1, encode(prefix, value), added);
            } else if trie.remove(&prefix).is_some() {
                let uncovered = trie.get_lpm(&prefix).map_or(0, |(k, &v)| encode(k, v));
                let slash24 = key(prefix.0, 24);
                let uncovered_24 = trie.get_lpm(&slash24).map_or(0, |(k, &v)| encode(k, v));
                dir.remove(prefix.0, prefix.1, uncovered, || uncovered_24);
            }
        }
        for &probe in probes.iter().chain(ops.iter().map(|(_, addr, _, _)| addr)) {
            let expected = trie.get_lpm(&(probe, 32)).map_or(0, |(k, &v)| encode(k, v));
            assert_eq!(dir.lookup(probe), expected, "{:?}", std::net::Ipv4Addr::from(probe));
        }
    }

    #[test]
    fn longer_prefixes_win_and_removal_uncovers_the_shorter() {
        let a = u32::from(std::net::Ipv4Addr::new(10, 1, 2, 3));
        check(
            &[
                (true, 0, 0, 1),
                (true, a, 8, 2),
                (true, a, 24, 3),
                (true, a, 30, 4),
                (true, a, 16, 5),
                (false, a, 24, 0),
                (true, a, 32, 6),
                (false, a, 30, 0),
                (false, a, 32, 0),
                (true, a, 8, 7),
            ],
            &[a, a ^ 1, a ^ 4, a ^ 0x100, a ^ 0x1_0000, a ^ 0x100_0000, 0],
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        #[test]
        fn agrees_with_the_trie(
            ops in proptest::collection::vec(
                // Addresses in a few /16s so that prefixes overlap.
                (any::<bool>(), (0u32..4, any::<u16>()), 0u8..=32, 0u32..1000),
                1..120,
            ),
            probes in proptest::collection::vec((0u32..4, any::<u16>()), 0..64),
        ) {
            let addr = |(high, low): (u32, u16)| 0x0a00_0000 | (high << 16) | u32::from(low);
            let ops: Vec<_> = ops
                .into_iter()
                .map(|(insert, at, len, value)| (insert || value % 3 != 0, addr(at), len.max(8), value))
                .collect();
            let probes: Vec<u32> = probes.into_iter().map(addr).collect();
            check(&ops, &probes);
        }
    }
}
