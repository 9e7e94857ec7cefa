//! Limits of the machine a lab runs on that a large lab outgrows.
//!
//! The kernel's neighbour (ARP/ND) cache is one table for all network
//! namespaces: `gc_thresh3` (1024 by default) bounds the entries of every
//! namespace together, and past it a new neighbour cannot be created
//! ("neighbour: arp_cache: neighbor table overflow!"), so hosts fail to
//! resolve each other until garbage collection frees stale entries. A
//! 32-switch rail lab needs about 3,000 entries (each server resolves every
//! server of its group on every rail); without raising the limit one echo in
//! ten of a first all-pairs ping is never sent and the last pairs pass only
//! after a hundred seconds. containerlab users raise the same sysctls.

use std::path::Path;

/// Entries per lab node the table should have room for: a rail server
/// resolves its group's servers on each rail, a switch's host interfaces
/// their BGP peers.
const ENTRIES_PER_NODE: u64 = 128;
/// Never lowered below the kernel's defaults' scale.
const MIN_THRESH3: u64 = 1024;

/// (sysctl file, share of gc_thresh3): GC starts at thresh1, runs eagerly
/// past thresh2, and thresh3 is the hard limit (the kernel's 1:4:8).
const THRESHOLDS: [(&str, u64); 3] = [("gc_thresh1", 8), ("gc_thresh2", 2), ("gc_thresh3", 1)];

/// Raises the IPv4 and IPv6 neighbour table limits to fit a lab of `nodes`
/// nodes; never lowers them. Returns what it changed, for the user.
pub fn fit_neighbor_tables(nodes: usize) -> Result<Vec<String>, String> {
    let thresh3 = (nodes as u64 * ENTRIES_PER_NODE).max(MIN_THRESH3);
    let mut changed = Vec::new();
    for family in ["ipv4", "ipv6"] {
        for (name, divisor) in THRESHOLDS {
            let path = format!("/proc/sys/net/{family}/neigh/default/{name}");
            let wanted = thresh3 / divisor;
            if raise(Path::new(&path), wanted)? {
                changed.push(format!("net.{family}.neigh.default.{name}={wanted}"));
            }
        }
    }
    Ok(changed)
}

/// Writes `wanted` to a sysctl file holding less; whether it did.
fn raise(path: &Path, wanted: u64) -> Result<bool, String> {
    let current: u64 = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .trim()
        .parse()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if current >= wanted {
        return Ok(false);
    }
    std::fs::write(path, wanted.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raise_only_ever_raises() {
        let dir = std::env::temp_dir().join(format!("labs-limits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("gc_thresh3");
        std::fs::write(&file, "1024\n").unwrap();
        assert!(raise(&file, 6144).unwrap());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "6144");
        assert!(!raise(&file, 2048).unwrap(), "a higher limit is kept");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "6144");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
