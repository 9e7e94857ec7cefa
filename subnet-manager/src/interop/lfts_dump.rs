//! OpenSM's `opensm-lfts.dump` (written by `opensm` to its dump directory
//! when routing is logged, `-D 0x43`; `dump_ucast_lfts` in
//! `osm_dump.c`), byte for byte, so our tables and OpenSM's diff with
//! `diff`:
//!
//! ```text
//! Unicast lids [0-6] of switch Lid 1 guid 0x0000000000200000 ('Switch1'):
//! 0x0001 000 # Switch portguid 0x0000000000200000: 'Switch1'
//! 0x0002 001 # Channel Adapter portguid 0x0000000000100001: 'Hca1'
//! 6 lids dumped
//! ```
//!
//! Every LID from 0 to the subnet's highest (2^LMC per CA port counted)
//! that the switch routes to a port it has, named by its owner; the count
//! at the end is that highest LID, as OpenSM prints it. [`parse`] also
//! reads infiniband-diags' `ibroute` output (`0x0001 001 : (Channel Adapter
//! portguid ...)`, "N valid lids dumped").

use std::fmt::Write as _;

use crate::routing::Lfts;
use crate::topology::{NodeKind, Topology};

/// The dump of every switch's LFT; `lmc` names each LID's owner.
pub fn write(topology: &Topology, lfts: &Lfts, lmc: u8) -> String {
    let owners = topology.lid_owners(lmc);
    let max_lid = owners.keys().copied().max().unwrap_or(0);
    // OpenSM walks its switch table keyed by the GUID in network byte order
    // as a little-endian host compares it.
    let mut switches: Vec<usize> = topology.switches().collect();
    switches.sort_by_key(|&switch| topology.nodes[switch].guid.swap_bytes());
    let mut out = String::new();
    for switch in switches {
        let node = &topology.nodes[switch];
        let Some(table) = lfts.table(switch) else { continue };
        let _ = writeln!(
            out,
            "Unicast lids [0-{max_lid}] of switch Lid {} guid {:#018x} ('{}'):",
            node.ports[0].lid, node.guid, node.description
        );
        for lid in 0..=max_lid {
            let port = table.get(usize::from(lid)).copied().unwrap_or(crate::routing::NO_ROUTE);
            if port > node.num_ports {
                continue;
            }
            let _ = write!(out, "{lid:#06x} {port:03} # ");
            match owners.get(&lid) {
                Some(owner) => {
                    let owner_node = &topology.nodes[owner.node];
                    let kind = match owner_node.kind {
                        NodeKind::Switch => "Switch",
                        NodeKind::Ca => "Channel Adapter",
                    };
                    let port_guid = owner_node.ports[usize::from(owner.port)].guid;
                    let _ = writeln!(out, "{kind} portguid {port_guid:#018x}: '{}'", owner_node.description);
                }
                None => out.push_str("unknown node and type\n"),
            }
        }
        let _ = writeln!(out, "{max_lid} lids dumped");
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
        assert!(text.starts_with("Unicast lids [0-8] of switch Lid "), "{text}");
        assert!(text.contains(" guid 0x0002c90300000001 ('leaf-0'):\n"), "{text}");
        assert!(text.contains("0x0001 001 # Channel Adapter portguid 0x0002c90310000001: 'host-0'\n"), "{text}");
        assert!(text.contains("\n8 lids dumped\n"), "{text}");
        // ibroute's lines read back too.
        let ibroute = "Unicast lids [0x0-0x5] of switch Lid 5 guid 0x0002c90300000001 (leaf-0):\n  Lid  Out   Destination\n       Port     Info \n0x0001 001 : (Channel Adapter portguid 0x0002c90310000001: 'host-0')\n1 valid lids dumped \n";
        assert_eq!(parse(ibroute), [(0x0002c90300000001, 1, 1)]);
        let entries = parse(&text);
        assert_eq!(entries.len(), 4 * 8);
        for (guid, lid, port) in entries {
            let switch = topology.node_by_guid(guid).unwrap();
            assert_eq!(lfts.port(switch, lid), Some(port));
        }
    }
}
