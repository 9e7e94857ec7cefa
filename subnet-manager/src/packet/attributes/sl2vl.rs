//! SLtoVLMappingTable (IBA 14.2.5.8, table 153): 16 four-bit VLs, SL 0 in
//! the high nibble of byte 0. On a switch the attribute modifier names the
//! input port (bits 15-8) and the output port (bits 7-0).

use crate::packet::{Result, fixed_view};

pub const SLS: usize = 16;

/// The attribute modifier of a switch's table for `in_port` -> `out_port`.
pub fn sl2vl_modifier(in_port: u8, out_port: u8) -> u32 {
    (u32::from(in_port) << 8) | u32::from(out_port)
}

fixed_view!(
    /// A read/write view of one SL-to-VL table.
    SlToVlTable,
    8
);

impl<T: AsRef<[u8]>> SlToVlTable<T> {
    /// The VL of service level `sl` (below 16).
    pub fn vl(&self, sl: usize) -> u8 {
        let byte = self.buffer.as_ref()[sl / 2];
        if sl.is_multiple_of(2) { byte >> 4 } else { byte & 0x0f }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SlToVlTable<T> {
    pub fn set_vl(&mut self, sl: usize, vl: u8) {
        let byte = &mut self.buffer.as_mut()[sl / 2];
        *byte = if sl.is_multiple_of(2) { (*byte & 0x0f) | (vl << 4) } else { (*byte & 0xf0) | (vl & 0x0f) };
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlToVlRepr {
    /// VL per SL; 15 means "drop" on a switch.
    pub vls: [u8; SLS],
}

impl SlToVlRepr {
    pub fn parse<T: AsRef<[u8]>>(view: &SlToVlTable<T>) -> Result<SlToVlRepr> {
        let mut vls = [0u8; SLS];
        for (sl, vl) in vls.iter_mut().enumerate() {
            *vl = view.vl(sl);
        }
        Ok(SlToVlRepr { vls })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut SlToVlTable<T>) {
        for (sl, vl) in self.vls.iter().enumerate() {
            view.set_vl(sl, vl & 0x0f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::attributes::attribute_round_trip;

    attribute_round_trip!(round_trip, SlToVlTable, SlToVlRepr);

    #[test]
    fn sl0_is_the_high_nibble() {
        let repr = SlToVlRepr { vls: [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 15] };
        let mut bytes = [0u8; 8];
        repr.emit(&mut SlToVlTable::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, [0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x6f]);
        assert_eq!(sl2vl_modifier(3, 7), 0x0307);
    }
}
