//! LID assignment (IBA vol. 1 section 4.1.3 and 14.2.5.6): every CA port
//! gets 2^LMC consecutive LIDs starting at a multiple of 2^LMC, every
//! switch one LID for port 0; the SM's own port is served first; a port
//! keeps the LID it had (the map persists across restarts in OpenSM's
//! `guid2lid` format, written atomically), or else the LID it holds now
//! (as OpenSM keeps the LIDs it finds: an SM taking over changes no
//! address), and LIDs of ports that left stay reserved so they get them
//! back when they return.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use crate::topology::Topology;

/// The highest unicast LID (IBA 4.1.3: 0x0001-0xBFFF).
pub const MAX_UNICAST_LID: u16 = 0xbfff;

/// Port GUID -> base LID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LidMap {
    pub by_guid: BTreeMap<u64, u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LidError {
    /// More LIDs wanted than the unicast range holds.
    Exhausted,
    /// A `guid2lid` line that does not read (line number, text).
    BadLine(usize, String),
    Io(String),
}

impl core::fmt::Display for LidError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LidError::Exhausted => f.write_str("the unicast LID range is exhausted"),
            LidError::BadLine(line, text) => write!(f, "guid2lid line {line}: cannot read {text:?}"),
            LidError::Io(error) => write!(f, "guid2lid: {error}"),
        }
    }
}

impl std::error::Error for LidError {}

/// Assigns base LIDs to every endpoint port of `topology` (writing them
/// into its ports) and returns the map to persist: the old one plus the new
/// assignments. A port's `lid` on entry is the LID it holds (0: none).
pub fn assign(topology: &mut Topology, lmc: u8, sm_port_guid: u64, persisted: &LidMap) -> Result<LidMap, LidError> {
    let lmc = lmc.min(7);
    let mut used = vec![false; usize::from(MAX_UNICAST_LID) + 1];
    used[0] = true;
    // Endpoints: (node, port, guid, LIDs wanted), the SM's port first.
    let mut endpoints = Vec::new();
    for (index, node) in topology.nodes.iter().enumerate() {
        for port in node.endpoint_ports() {
            let guid = node.ports[usize::from(port)].guid;
            let count = if node.is_switch() { 1u16 } else { 1 << lmc };
            endpoints.push((index, port, guid, count));
        }
    }
    endpoints.sort_by_key(|&(_, _, guid, _)| guid != sm_port_guid);
    let aligned = |lid: u16, count: u16| {
        lid.is_multiple_of(count) && lid != 0 && u32::from(lid) + u32::from(count) - 1 <= u32::from(MAX_UNICAST_LID)
    };
    let mut map = LidMap::default();
    // Ports present keep a persisted LID that is still valid for them.
    let present: rustc_hash::FxHashSet<u64> = endpoints.iter().map(|e| e.2).collect();
    let mut assigned: Vec<Option<u16>> = vec![None; endpoints.len()];
    for (slot, &(_, _, guid, count)) in endpoints.iter().enumerate() {
        if let Some(&lid) = persisted.by_guid.get(&guid) {
            let range = usize::from(lid)..usize::from(lid) + usize::from(count);
            if aligned(lid, count) && !used[range.clone()].iter().any(|&u| u) {
                used[range].fill(true);
                assigned[slot] = Some(lid);
                map.by_guid.insert(guid, lid);
            }
        }
    }
    // Then the LIDs the ports hold, where valid and not taken.
    for (slot, &(node, port, guid, count)) in endpoints.iter().enumerate() {
        let lid = topology.nodes[node].ports[usize::from(port)].lid;
        if assigned[slot].is_some() || lid == 0 || !aligned(lid, count) {
            continue;
        }
        let range = usize::from(lid)..usize::from(lid) + usize::from(count);
        if !used[range.clone()].iter().any(|&u| u) {
            used[range].fill(true);
            assigned[slot] = Some(lid);
            map.by_guid.insert(guid, lid);
        }
    }
    // LIDs of ports that are not here now stay theirs.
    for (&guid, &lid) in &persisted.by_guid {
        if !present.contains(&guid) && usize::from(lid) < used.len() && !used[usize::from(lid)] {
            used[usize::from(lid)] = true;
            map.by_guid.insert(guid, lid);
        }
    }
    let mut cursor = 1usize;
    for (slot, &(_, _, guid, count)) in endpoints.iter().enumerate() {
        if assigned[slot].is_some() {
            continue;
        }
        let count_usize = usize::from(count);
        let mut lid = cursor.div_ceil(count_usize) * count_usize;
        loop {
            if lid == 0 {
                lid = count_usize;
            }
            if lid + count_usize - 1 > usize::from(MAX_UNICAST_LID) {
                return Err(LidError::Exhausted);
            }
            if !used[lid..lid + count_usize].iter().any(|&u| u) {
                break;
            }
            lid += count_usize;
        }
        used[lid..lid + count_usize].fill(true);
        if count == 1 {
            cursor = lid + 1;
        }
        assigned[slot] = Some(lid as u16);
        map.by_guid.insert(guid, lid as u16);
    }
    for (slot, &(node, port, _, _)) in endpoints.iter().enumerate() {
        topology.nodes[node].ports[usize::from(port)].lid = assigned[slot].unwrap_or(0);
    }
    Ok(map)
}

impl LidMap {
    /// Reads OpenSM's `guid2lid` format: `0x<port guid> 0x<min lid>
    /// 0x<max lid>` per line. A line that does not read refuses the file.
    pub fn parse(text: &str) -> Result<LidMap, LidError> {
        let mut map = LidMap::default();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = || LidError::BadLine(index + 1, line.to_string());
            let mut words = line.split_whitespace();
            let hex = |w: Option<&str>| w.and_then(|w| u64::from_str_radix(w.trim_start_matches("0x"), 16).ok());
            let guid = hex(words.next()).ok_or_else(bad)?;
            let lid = hex(words.next()).filter(|&l| l > 0 && l <= u64::from(MAX_UNICAST_LID)).ok_or_else(bad)?;
            map.by_guid.insert(guid, lid as u16);
        }
        Ok(map)
    }

    /// The `guid2lid` text; `lmc` gives each CA range's last LID (a
    /// switch's range is one LID: OpenSM writes it the same way).
    pub fn to_text(&self, lmc: u8, switch_guids: &rustc_hash::FxHashSet<u64>) -> String {
        let mut out = String::new();
        for (&guid, &lid) in &self.by_guid {
            let last = if switch_guids.contains(&guid) { lid } else { lid + (1u16 << lmc) - 1 };
            out.push_str(&format!("{guid:#018x} {lid:#06x} {last:#06x}\n"));
        }
        out
    }

    pub fn load(path: &Path) -> Result<LidMap, LidError> {
        match std::fs::read_to_string(path) {
            Ok(text) => LidMap::parse(&text),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(LidMap::default()),
            Err(error) => Err(LidError::Io(format!("{}: {error}", path.display()))),
        }
    }

    /// Writes atomically: a temporary file in the same directory, synced,
    /// then renamed over the old one, so a crash leaves the old map or the
    /// new one, never half of either.
    pub fn store(&self, path: &Path, lmc: u8, switch_guids: &rustc_hash::FxHashSet<u64>) -> Result<(), LidError> {
        let io = |e: std::io::Error| LidError::Io(format!("{}: {e}", path.display()));
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let tmp = dir.join(format!(".{}.tmp", path.file_name().and_then(|n| n.to_str()).unwrap_or("guid2lid")));
        let mut file = std::fs::File::create(&tmp).map_err(io)?;
        file.write_all(self.to_text(lmc, switch_guids).as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
        drop(file);
        std::fs::rename(&tmp, path).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::generate::FatTree;

    fn small() -> Topology {
        FatTree::TwoLevel { leaves: 2, spines: 1, hosts_per_leaf: 2 }.build()
    }

    #[test]
    fn sm_first_aligned_ranges_switches_one_lid() {
        let mut topology = small();
        let sm_guid = topology.nodes[2].ports[1].guid;
        let map = assign(&mut topology, 2, sm_guid, &LidMap::default()).unwrap();
        assert_eq!(topology.nodes[2].ports[1].lid, 4, "the SM's port first, aligned to 2^LMC");
        for node in &topology.nodes {
            for port in node.endpoint_ports() {
                let lid = node.ports[usize::from(port)].lid;
                assert!(lid != 0);
                if !node.is_switch() {
                    assert_eq!(lid % 4, 0, "{} port {port} lid {lid}", node.description);
                }
            }
        }
        // No two endpoints overlap.
        let owners = topology.lid_owners(2);
        assert_eq!(owners.len(), 4 * 4 + 3);
        assert_eq!(map.by_guid.len(), 7);
    }

    #[test]
    fn persisted_lids_are_kept_and_absent_ports_keep_theirs() {
        let mut topology = small();
        let first = assign(&mut topology, 0, 0, &LidMap::default()).unwrap();
        // Through the file format and back.
        let switches: rustc_hash::FxHashSet<u64> =
            topology.nodes.iter().filter(|n| n.is_switch()).map(|n| n.guid).collect();
        let reread = LidMap::parse(&first.to_text(0, &switches)).unwrap();
        assert_eq!(reread, first);
        // host-0 leaves; a new host arrives: it must not take host-0's LID.
        let host0_guid = topology.nodes[0].ports[1].guid;
        let host0_lid = topology.nodes[0].ports[1].lid;
        let mut changed = small();
        changed.nodes[0].ports[1].guid = 0xdead_beef;
        let second = assign(&mut changed, 0, 0, &reread).unwrap();
        assert_eq!(second.by_guid[&host0_guid], host0_lid);
        assert_ne!(changed.nodes[0].ports[1].lid, host0_lid);
        for index in 1..changed.nodes.len() {
            for port in changed.nodes[index].endpoint_ports() {
                assert_eq!(
                    changed.nodes[index].ports[usize::from(port)].lid,
                    topology.nodes[index].ports[usize::from(port)].lid
                );
            }
        }
    }

    #[test]
    fn lids_the_ports_hold_are_kept_without_a_map_and_a_map_wins() {
        // An SM taking over with no map of its own: every port keeps the
        // LID the last master gave it, its own port included.
        let mut held = small();
        let first = assign(&mut held, 0, 0, &LidMap::default()).unwrap();
        let sm_guid = held.nodes[3].ports[1].guid;
        let mut again = held.clone();
        let second = assign(&mut again, 0, sm_guid, &LidMap::default()).unwrap();
        assert_eq!(second, first);
        assert_eq!(again.lid_owners(0), held.lid_owners(0));
        // A held LID that the persisted map gives another port goes to the
        // map's owner; the holder gets a free one. An unaligned held LID
        // (LMC 1 wants even bases) is not kept.
        let (a, b) = (held.nodes[0].ports[1].guid, held.nodes[1].ports[1].guid);
        let b_lid = held.nodes[1].ports[1].lid;
        let persisted = LidMap { by_guid: [(a, b_lid)].into_iter().collect() };
        let mut conflict = held.clone();
        let third = assign(&mut conflict, 0, 0, &persisted).unwrap();
        assert_eq!(third.by_guid[&a], b_lid);
        assert_ne!(third.by_guid[&b], b_lid);
        let mut odd = small();
        odd.nodes[0].ports[1].lid = 3;
        assign(&mut odd, 1, 0, &LidMap::default()).unwrap();
        assert_ne!(odd.nodes[0].ports[1].lid, 3);
    }

    #[test]
    fn store_is_atomic_and_load_refuses_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("guid2lid");
        assert_eq!(LidMap::load(&path).unwrap(), LidMap::default());
        let mut map = LidMap::default();
        map.by_guid.insert(0x10, 1);
        map.store(&path, 0, &Default::default()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "0x0000000000000010 0x0001 0x0001\n");
        assert_eq!(LidMap::load(&path).unwrap(), map);
        assert!(std::fs::read_dir(dir.path()).unwrap().count() == 1, "no temporary left behind");
        assert_eq!(LidMap::parse("0x10 0xc000 0xc000\n"), Err(LidError::BadLine(1, "0x10 0xc000 0xc000".into())));
    }
}
