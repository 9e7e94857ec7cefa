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
//!
//! The values found before the first raise are kept in
//! `/run/labs/neighbor-limits.saved`; `labs destroy` of the last lab writes
//! them back, so the machine is left as it was.

use std::fs::File;
use std::path::{Path, PathBuf};

/// Entries per lab node the table should have room for: a rail server
/// resolves its group's servers on each rail, a switch's host interfaces
/// their BGP peers.
const ENTRIES_PER_NODE: u64 = 128;
/// Never lowered below the kernel's defaults' scale.
const MIN_THRESH3: u64 = 1024;

/// (sysctl file, share of gc_thresh3): GC starts at thresh1, runs eagerly
/// past thresh2, and thresh3 is the hard limit (the kernel's 1:4:8).
const THRESHOLDS: [(&str, u64); 3] = [("gc_thresh1", 8), ("gc_thresh2", 2), ("gc_thresh3", 1)];

/// The sysctls and where the values before a lab are kept.
#[derive(Debug, Clone)]
pub struct NeighborLimits {
    /// `/proc/sys/net` (a test's own folder in unit tests).
    pub sysctl_root: PathBuf,
    /// `/run/labs`: the saved values and the lock beside the labs' folders.
    pub state_root: PathBuf,
}

const SAVED: &str = "neighbor-limits.saved";
const LOCK: &str = "neighbor-limits.lock";

impl NeighborLimits {
    pub fn of_this_machine() -> NeighborLimits {
        NeighborLimits { sysctl_root: "/proc/sys/net".into(), state_root: crate::runner::STATE_ROOT.into() }
    }

    fn files(&self) -> impl Iterator<Item = (String, PathBuf, u64)> + '_ {
        ["ipv4", "ipv6"].into_iter().flat_map(move |family| {
            THRESHOLDS.iter().map(move |(name, divisor)| {
                let path = self.sysctl_root.join(family).join("neigh/default").join(name);
                (format!("net.{family}.neigh.default.{name}"), path, *divisor)
            })
        })
    }

    /// Raises the IPv4 and IPv6 neighbour table limits to fit a lab of
    /// `nodes` nodes; never lowers them. The values before are saved unless
    /// some are already (an earlier lab's raise keeps the machine's own).
    /// Returns what it changed, for the user.
    pub fn fit(&self, nodes: usize) -> Result<Vec<String>, String> {
        let _lock = self.lock()?;
        let thresh3 = (nodes as u64 * ENTRIES_PER_NODE).max(MIN_THRESH3);
        let saved = self.state_root.join(SAVED);
        let mut before = String::new();
        let mut changes = Vec::new();
        for (name, path, divisor) in self.files() {
            let current = read(&path)?;
            before.push_str(&format!("{} {current}\n", path.display()));
            let wanted = thresh3 / divisor;
            if current < wanted {
                changes.push((name, path, wanted));
            }
        }
        if !changes.is_empty() && !saved.exists() {
            std::fs::write(&saved, before).map_err(|e| format!("{}: {e}", saved.display()))?;
        }
        let mut changed = Vec::new();
        for (name, path, wanted) in changes {
            std::fs::write(&path, wanted.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
            changed.push(format!("{name}={wanted}"));
        }
        Ok(changed)
    }

    /// Writes back the saved values when no lab is left (no folder in the
    /// state root); returns what it wrote.
    pub fn restore_if_last(&self) -> Result<Vec<String>, String> {
        let _lock = self.lock()?;
        let saved = self.state_root.join(SAVED);
        let Ok(text) = std::fs::read_to_string(&saved) else { return Ok(Vec::new()) };
        let labs_left = std::fs::read_dir(&self.state_root)
            .map_err(|e| format!("{}: {e}", self.state_root.display()))?
            .flatten()
            .any(|entry| entry.file_type().is_ok_and(|t| t.is_dir()));
        if labs_left {
            return Ok(Vec::new());
        }
        let mut restored = Vec::new();
        for line in text.lines() {
            let Some((path, value)) = line.rsplit_once(' ') else { continue };
            std::fs::write(path, value).map_err(|e| format!("{path}: {e}"))?;
            restored.push(format!("{path}={value}"));
        }
        std::fs::remove_file(&saved).map_err(|e| format!("{}: {e}", saved.display()))?;
        Ok(restored)
    }

    /// One deploy or destroy at a time reads and writes the limits; the
    /// lock is released when the returned file closes.
    fn lock(&self) -> Result<File, String> {
        std::fs::create_dir_all(&self.state_root).map_err(|e| format!("{}: {e}", self.state_root.display()))?;
        let path = self.state_root.join(LOCK);
        let file = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        // SAFETY: flock on a file we own.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) } != 0 {
            return Err(format!("lock {}: {}", path.display(), std::io::Error::last_os_error()));
        }
        Ok(file)
    }
}

fn read(path: &Path) -> Result<u64, String> {
    std::fs::read_to_string(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .trim()
        .parse()
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_machine(name: &str) -> NeighborLimits {
        let dir = std::env::temp_dir().join(format!("labs-limits-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let limits = NeighborLimits { sysctl_root: dir.join("sys"), state_root: dir.join("run") };
        for (_, path, divisor) in limits.files() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, format!("{}\n", 1024 / divisor)).unwrap();
        }
        limits
    }

    fn thresh3(limits: &NeighborLimits) -> u64 {
        read(&limits.sysctl_root.join("ipv4/neigh/default/gc_thresh3")).unwrap()
    }

    #[test]
    fn limits_are_raised_never_lowered_and_restored_by_the_last_lab() {
        let limits = fake_machine("restore");
        std::fs::create_dir_all(limits.state_root.join("big")).unwrap();
        assert_eq!(limits.fit(48).unwrap().len(), 6, "48 nodes need 6144 entries");
        assert_eq!(thresh3(&limits), 6144);
        std::fs::create_dir_all(limits.state_root.join("small")).unwrap();
        assert_eq!(limits.fit(16).unwrap(), Vec::<String>::new(), "a higher limit is kept");
        assert_eq!(thresh3(&limits), 6144);
        // One lab goes: the other still needs the room.
        std::fs::remove_dir_all(limits.state_root.join("big")).unwrap();
        assert_eq!(limits.restore_if_last().unwrap(), Vec::<String>::new());
        assert_eq!(thresh3(&limits), 6144);
        // The last goes: the machine's own values are back, once.
        std::fs::remove_dir_all(limits.state_root.join("small")).unwrap();
        assert_eq!(limits.restore_if_last().unwrap().len(), 6);
        assert_eq!(thresh3(&limits), 1024);
        let thresh1 = read(&limits.sysctl_root.join("ipv6/neigh/default/gc_thresh1")).unwrap();
        assert_eq!(thresh1, 128);
        assert!(!limits.state_root.join(SAVED).exists());
        assert_eq!(limits.restore_if_last().unwrap(), Vec::<String>::new());
        std::fs::remove_dir_all(limits.sysctl_root.parent().unwrap()).unwrap();
    }
}
