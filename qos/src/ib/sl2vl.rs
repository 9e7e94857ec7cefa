//! SL-to-VL mapping (IBA vol. 1, 7.6.6 and the SLtoVLMappingTable attribute,
//! 14.2.5.8): a switch has one 16-entry table per (input port, output port);
//! a packet's SL picks the VL it leaves on. A VL of 15 in the table means the
//! packet is dropped (data may never go on VL15).

use super::MANAGEMENT_VL;

/// SLs and so entries per table.
pub const SLS: usize = 16;

/// The SL-to-VL tables of a switch of `ports` ports.
#[derive(Debug, Clone)]
pub struct SlToVlTables {
    ports: usize,
    tables: Box<[[u8; SLS]]>,
}

impl SlToVlTables {
    /// Every table maps every SL to VL0.
    pub fn new(ports: usize) -> SlToVlTables {
        SlToVlTables { ports, tables: vec![[0; SLS]; ports * ports].into_boxed_slice() }
    }

    fn index(&self, in_port: usize, out_port: usize) -> Option<usize> {
        (in_port < self.ports && out_port < self.ports).then_some(in_port * self.ports + out_port)
    }

    /// The VL for `sl` from `in_port` to `out_port`; `None` means drop (VL15
    /// in the table, or a port out of range).
    pub fn map(&self, in_port: usize, out_port: usize, sl: u8) -> Option<u8> {
        let vl = *self.tables.get(self.index(in_port, out_port)?)?.get(usize::from(sl))?;
        (vl != MANAGEMENT_VL).then_some(vl)
    }

    pub fn table(&self, in_port: usize, out_port: usize) -> Option<[u8; SLS]> {
        self.index(in_port, out_port).map(|i| self.tables[i])
    }

    /// Sets one table; entries above 15 are refused (returns false).
    pub fn set_table(&mut self, in_port: usize, out_port: usize, table: [u8; SLS]) -> bool {
        match self.index(in_port, out_port) {
            Some(i) if table.iter().all(|&vl| vl <= MANAGEMENT_VL) => {
                self.tables[i] = table;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_port_pair_has_its_own_table_and_vl15_drops() {
        let mut tables = SlToVlTables::new(3);
        let mut table = [0; SLS];
        table[2] = 1;
        table[3] = MANAGEMENT_VL;
        assert!(tables.set_table(0, 2, table));
        assert_eq!(tables.map(0, 2, 2), Some(1));
        assert_eq!(tables.map(1, 2, 2), Some(0));
        assert_eq!(tables.map(0, 2, 3), None);
        assert_eq!(tables.map(0, 3, 0), None);
        assert!(!tables.set_table(0, 1, [16; SLS]));
    }
}
