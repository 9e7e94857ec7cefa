//! OpenSM's `opensm-lfts.dump` (written by `opensm` to its dump directory,
//! `osm_ucast_mgr.c`), so our tables and OpenSM's diff with `diff`:
//!
//! ```text
//! Unicast lids [0x0-0x1c] of switch Lid 1 guid 0x0002c90300000001 (leaf-0):
//!   Lid  Out   Destination
//!        Port     Info
//! 0x0001 000 : (Switch portguid 0x0002c90300000001: 'leaf-0')
//! 0x0005 001 : (Channel Adapter portguid 0x0002c90310000001: 'host-0')
//! 18 valid lids dumped
//! ```
//!
//! This is also what infiniband-diags' `ibroute` prints for one switch, so
//! `ibroute` output read back from a fabric diffs against it line by line.

use std::fmt::Write as _;

use crate::routing::Lfts;
use crate::topology::{NodeKind, Topology};

/// The dump of every switch's LFT; `lmc` names each LID's owner.
pub fn write(topology: &Topology, lfts: &Lfts, lmc: u8) -> String {
    let owners = topology.lid_owners(lmc);
    let mut out = String::new();
    for switch in topology.switches() {
        let node = &topology.nodes[switch];
        let Some(table) = lfts.table(switch) else { continue };
        let top = table.len().saturating_sub(1);
        let _ = writeln!(
            out,
            "Unicast lids [0x0-{top:#x}] of switch Lid {} guid {:#018x} ({}):",
            node.ports[0].lid, node.guid, node.description
        );
        out.push_str("  Lid  Out   Destination\n       Port     Info \n");
        let mut dumped = 0;
        for (lid, &port) in table.iter().enumerate() {
            if port == crate::routing::NO_ROUTE {
                continue;
            }
            let Some(owner) = owners.get(&(lid as u16)) else { continue };
            let owner_node = &topology.nodes[owner.node];
            let kind = match owner_node.kind {
                NodeKind::Switch => "Switch",
                NodeKind::Ca => "Channel Adapter",
            };
            let port_guid = owner_node.ports[usize::from(owner.port)].guid;
            let _ = writeln!(
                out,
                "{lid:#06x} {port:03} : ({kind} portguid {port_guid:#018x}: '{}')",
                owner_node.description
            );
            dumped += 1;
        }
        let _ = writeln!(out, "{dumped} valid lids dumped ");
    }
    out
}

/// Reads a dump back: (switch GUID, LID, port) for every line, OpenSM's or
/// ours.
pub fn parse(text: &str) -> Vec<(u64, u16, u8)> {
    let mut entries = Vec::new();
    let mut switch = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Unicast lids") {
            switch = rest
                .split("guid ")
                .nth(1)
                .and_then(|g| g.split_whitespace().next())
                .and_then(|g| u64::from_str_radix(g.trim_start_matches("0x"), 16).ok());
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(lid), Some(port), Some(guid)) = (words.next(), words.next(), switch) else { continue };
        let Some(lid) = lid.strip_prefix("0x").and_then(|l| u16::from_str_radix(l, 16).ok()) else { continue };
        let Ok(port) = port.parse::<u8>() else { continue };
        entries.push((guid, lid, port));
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::generate::FatTree;
    use crate::routing::{Engine, RoutingConfig, route};

    #[test]
    fn dump_reads_back_to_the_tables() {
        let mut topology = FatTree::TwoLevel { leaves: 2, spines: 2, hosts_per_leaf: 2 }.build();
        crate::lid::assign(&mut topology, 0, 0, &Default::default()).unwrap();
        let lfts = route(&topology, &RoutingConfig { engines: vec![Engine::Ftree], ..Default::default() }).unwrap();
        let text = write(&topology, &lfts, 0);
        assert!(
            text.contains("of switch Lid 5 guid 0x0002c90300000001 (leaf-0):\n  Lid  Out   Destination\n"),
            "{text}"
        );
        assert!(text.contains("0x0001 001 : (Channel Adapter portguid 0x0002c90310000001: 'host-0')\n"), "{text}");
        let entries = parse(&text);
        assert_eq!(entries.len(), 4 * 8);
        for (guid, lid, port) in entries {
            let switch = topology.node_by_guid(guid).unwrap();
            assert_eq!(lfts.port(switch, lid), Some(port));
        }
    }
}
