//! LinearForwardingTable (IBA 14.2.5.10, table 156): one block of 64 output
//! ports; the attribute modifier is the block number, so block `b` holds
//! the ports of LIDs `64 * b .. 64 * b + 63`.

use crate::packet::{Result, fixed_view};

pub const LFT_BLOCK_ENTRIES: usize = 64;

fixed_view!(
    /// A read/write view of one LFT block.
    LftBlock,
    LFT_BLOCK_ENTRIES
);

impl<T: AsRef<[u8]>> LftBlock<T> {
    /// The output port of the block's `index`th LID (index below 64).
    pub fn port(&self, index: usize) -> u8 {
        self.buffer.as_ref()[index]
    }

    pub fn ports(&self) -> &[u8] {
        &self.buffer.as_ref()[..LFT_BLOCK_ENTRIES]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> LftBlock<T> {
    pub fn set_port(&mut self, index: usize, port: u8) {
        self.buffer.as_mut()[index] = port;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LftBlockRepr {
    pub ports: [u8; LFT_BLOCK_ENTRIES],
}

impl LftBlockRepr {
    pub fn parse<T: AsRef<[u8]>>(view: &LftBlock<T>) -> Result<LftBlockRepr> {
        let mut ports = [0u8; LFT_BLOCK_ENTRIES];
        ports.copy_from_slice(view.ports());
        Ok(LftBlockRepr { ports })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut LftBlock<T>) {
        view.buffer.as_mut()[..LFT_BLOCK_ENTRIES].copy_from_slice(&self.ports);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::attributes::attribute_round_trip;

    attribute_round_trip!(round_trip, LftBlock, LftBlockRepr);
}
