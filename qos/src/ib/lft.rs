//! The linear forwarding table (IBA vol. 1, 18.2.4.1 and 14.2.5.10): one
//! output port per unicast DLID, read and written by the SM in blocks of 64
//! entries (the LinearForwardingTable attribute).

/// Entries per LinearForwardingTable block.
pub const BLOCK_ENTRIES: usize = 64;
/// Unicast LIDs are 0x0001..=0xBFFF (IBA 4.1.3); multicast sits above.
pub const UNICAST_LIDS: usize = 0xc000;
/// Port 255 in an LFT entry means "no port": the DLID is not routed.
pub const NO_PORT: u8 = 0xff;

/// Why an LFT access was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LftError {
    /// The block number lies past the unicast LID range.
    BlockOutOfRange(u16),
}

/// DLID to output port for every unicast LID.
#[derive(Debug, Clone)]
pub struct LinearForwardingTable {
    ports: Box<[u8]>,
}

impl Default for LinearForwardingTable {
    fn default() -> Self {
        LinearForwardingTable { ports: vec![NO_PORT; UNICAST_LIDS].into_boxed_slice() }
    }
}

impl LinearForwardingTable {
    /// The output port for `dlid`, or `None` (unset, LID 0, multicast).
    pub fn lookup(&self, dlid: u16) -> Option<u8> {
        match self.ports.get(usize::from(dlid)) {
            Some(&port) if port != NO_PORT && dlid != 0 => Some(port),
            _ => None,
        }
    }

    pub fn set(&mut self, dlid: u16, port: u8) -> Result<(), LftError> {
        let slot =
            self.ports.get_mut(usize::from(dlid)).ok_or(LftError::BlockOutOfRange(dlid / BLOCK_ENTRIES as u16))?;
        *slot = port;
        Ok(())
    }

    fn block_range(block: u16) -> Result<core::ops::Range<usize>, LftError> {
        let start = usize::from(block) * BLOCK_ENTRIES;
        if start >= UNICAST_LIDS {
            return Err(LftError::BlockOutOfRange(block));
        }
        Ok(start..start + BLOCK_ENTRIES)
    }

    /// The 64 entries of `block` (LIDs block*64 .. block*64+63).
    pub fn block(&self, block: u16) -> Result<[u8; BLOCK_ENTRIES], LftError> {
        let mut entries = [NO_PORT; BLOCK_ENTRIES];
        entries.copy_from_slice(&self.ports[Self::block_range(block)?]);
        Ok(entries)
    }

    pub fn set_block(&mut self, block: u16, entries: &[u8; BLOCK_ENTRIES]) -> Result<(), LftError> {
        let range = Self::block_range(block)?;
        self.ports[range].copy_from_slice(entries);
        Ok(())
    }

    /// One past the highest LID routed (IBA SwitchInfo LinearFDBTop + 1).
    pub fn top(&self) -> usize {
        self.ports.iter().rposition(|&port| port != NO_PORT).map_or(0, |lid| lid + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_zero_and_multicast_lids_have_no_port() {
        let mut lft = LinearForwardingTable::default();
        assert_eq!(lft.lookup(5), None);
        lft.set(5, 3).unwrap();
        assert_eq!(lft.lookup(5), Some(3));
        lft.set(0, 3).unwrap();
        assert_eq!(lft.lookup(0), None);
        assert_eq!(lft.lookup(0xc001), None);
        assert!(lft.set(0xc001, 1).is_err());
    }

    #[test]
    fn blocks_cover_64_lids_each() {
        let mut lft = LinearForwardingTable::default();
        let mut entries = [NO_PORT; BLOCK_ENTRIES];
        entries[1] = 7;
        lft.set_block(2, &entries).unwrap();
        assert_eq!(lft.lookup(129), Some(7));
        assert_eq!(lft.block(2).unwrap()[1], 7);
        assert_eq!(lft.top(), 130);
        assert_eq!(lft.block(0x300), Err(LftError::BlockOutOfRange(0x300)));
        assert!(lft.block(0x2ff).is_ok());
    }
}
