//! VLArbitrationTable (IBA 14.2.5.9, table 154): 32 entries of (VL,
//! weight) per block, two bytes each: 4 reserved bits, the VL in the low
//! nibble, then the weight in 64-byte units. The attribute modifier's high
//! 16 bits select the block, its low 16 bits the port (as OpenSM builds it).

use crate::packet::{Result, fixed_view};

pub const VL_ARB_BLOCK_ENTRIES: usize = 32;

/// Which part of the arbitration tables a block holds (IBA table 154).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VlArbBlock {
    /// 1: low priority, entries 0-31.
    LowLower,
    /// 2: high priority, entries 0-31.
    HighLower,
    /// 3: low priority, entries 32-63.
    LowUpper,
    /// 4: high priority, entries 32-63.
    HighUpper,
}

impl VlArbBlock {
    pub fn number(self) -> u32 {
        match self {
            VlArbBlock::LowLower => 1,
            VlArbBlock::HighLower => 2,
            VlArbBlock::LowUpper => 3,
            VlArbBlock::HighUpper => 4,
        }
    }

    pub fn from_number(number: u32) -> Option<VlArbBlock> {
        match number {
            1 => Some(VlArbBlock::LowLower),
            2 => Some(VlArbBlock::HighLower),
            3 => Some(VlArbBlock::LowUpper),
            4 => Some(VlArbBlock::HighUpper),
            _ => None,
        }
    }
}

/// The attribute modifier of `block` of `port`'s tables.
pub fn vl_arb_modifier(block: VlArbBlock, port: u8) -> u32 {
    (block.number() << 16) | u32::from(port)
}

fixed_view!(
    /// A read/write view of one VL arbitration block.
    VlArbTable,
    2 * VL_ARB_BLOCK_ENTRIES
);

impl<T: AsRef<[u8]>> VlArbTable<T> {
    pub fn entry(&self, index: usize) -> VlArbEntry {
        let bytes = &self.buffer.as_ref()[2 * index..2 * index + 2];
        VlArbEntry { vl: bytes[0] & 0x0f, weight: bytes[1] }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlArbTable<T> {
    pub fn set_entry(&mut self, index: usize, entry: VlArbEntry) {
        let bytes = &mut self.buffer.as_mut()[2 * index..2 * index + 2];
        bytes[0] = entry.vl & 0x0f;
        bytes[1] = entry.weight;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlArbEntry {
    pub vl: u8,
    /// In units of 64 bytes; 0 means the entry is skipped.
    pub weight: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlArbRepr {
    pub entries: [VlArbEntry; VL_ARB_BLOCK_ENTRIES],
}

impl VlArbRepr {
    pub fn parse<T: AsRef<[u8]>>(view: &VlArbTable<T>) -> Result<VlArbRepr> {
        let mut entries = [VlArbEntry::default(); VL_ARB_BLOCK_ENTRIES];
        for (index, entry) in entries.iter_mut().enumerate() {
            *entry = view.entry(index);
        }
        Ok(VlArbRepr { entries })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut VlArbTable<T>) {
        for (index, entry) in self.entries.iter().enumerate() {
            view.set_entry(index, *entry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::attributes::attribute_round_trip;

    attribute_round_trip!(round_trip, VlArbTable, VlArbRepr);

    #[test]
    fn entry_layout_and_modifier() {
        let mut repr = VlArbRepr { entries: [VlArbEntry::default(); 32] };
        repr.entries[0] = VlArbEntry { vl: 1, weight: 0x40 };
        repr.entries[31] = VlArbEntry { vl: 7, weight: 0xff };
        let mut bytes = [0xffu8; 64];
        repr.emit(&mut VlArbTable::new_unchecked(&mut bytes[..]));
        assert_eq!(&bytes[..4], &[0x01, 0x40, 0x00, 0x00]);
        assert_eq!(&bytes[62..], &[0x07, 0xff]);
        assert_eq!(vl_arb_modifier(VlArbBlock::HighLower, 5), 0x0002_0005);
        assert_eq!(VlArbBlock::from_number(3), Some(VlArbBlock::LowUpper));
    }
}
