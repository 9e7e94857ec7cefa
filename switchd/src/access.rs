//! Who may do what on the management socket.
//!
//! The socket is a local Unix socket (mode 0666: reachable by every local
//! user); what each connection may do comes from its peer's credentials
//! as the kernel reports them (`SO_PEERCRED`), never from anything the
//! client says: root and members of `swadmin` may configure, members of
//! `swread` may show, anyone else is refused.

use mgmt_cli::api::{ADMIN_GROUP, Privilege, READ_GROUP};
use std::ffi::{CStr, CString};

/// The user at the other end of a management connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub uid: u32,
    /// The login name, or the uid as a number when it has none.
    pub user: String,
    /// `None`: neither root nor in `swadmin` or `swread`.
    pub privilege: Option<Privilege>,
}

impl Peer {
    /// Resolves a connection's credentials: the process's groups are read
    /// from `/proc/PID/status` (what it runs with, supplementary groups
    /// included), else only its primary group counts.
    pub fn from_credentials(uid: u32, gid: u32, pid: Option<i32>) -> Peer {
        let mut groups = vec![gid];
        if let Some(pid) = pid {
            groups.extend(process_groups(pid, uid));
        }
        let privilege = privilege(uid, &groups, group_id(ADMIN_GROUP), group_id(READ_GROUP));
        Peer { uid, user: user_name(uid).unwrap_or_else(|| uid.to_string()), privilege }
    }

    /// The daemon itself (signals, confirmed-commit timers).
    pub fn daemon(what: &str) -> Peer {
        Peer { uid: 0, user: what.to_owned(), privilege: Some(Privilege::Configure) }
    }

    /// Why this peer may not do what `needed` asks, if it may not.
    pub fn refusal(&self, needed: Privilege) -> Option<String> {
        if self.privilege.is_some_and(|have| have >= needed) {
            return None;
        }
        Some(match needed {
            Privilege::Configure => format!(
                "permission denied: user {} (uid {}) may not change the configuration; \
                 that needs root or membership of group {ADMIN_GROUP}",
                self.user, self.uid
            ),
            Privilege::Read => format!(
                "permission denied: user {} (uid {}) is in neither group {READ_GROUP} nor {ADMIN_GROUP}",
                self.user, self.uid
            ),
        })
    }
}

/// The rule itself, apart from the system's databases.
pub fn privilege(uid: u32, groups: &[u32], admin_gid: Option<u32>, read_gid: Option<u32>) -> Option<Privilege> {
    let member = |gid: Option<u32>| gid.is_some_and(|gid| groups.contains(&gid));
    if uid == 0 || member(admin_gid) {
        Some(Privilege::Configure)
    } else if member(read_gid) {
        Some(Privilege::Read)
    } else {
        None
    }
}

/// The supplementary groups of a running process (`Groups:` of its
/// status), if it still runs as `uid`: a client that exited after
/// connecting may have had its pid reused by another user's process,
/// whose groups must not count.
fn process_groups(pid: i32, uid: u32) -> Vec<u32> {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Vec::new();
    };
    status_groups(&status, uid)
}

fn status_groups(status: &str, uid: u32) -> Vec<u32> {
    let numbers = |prefix: &str| -> Vec<u32> {
        status
            .lines()
            .find_map(|line| line.strip_prefix(prefix))
            .map(|list| list.split_whitespace().filter_map(|n| n.parse().ok()).collect())
            .unwrap_or_default()
    };
    // Uid: real, effective, saved, filesystem.
    if numbers("Uid:").get(1) != Some(&uid) {
        return Vec::new();
    }
    numbers("Groups:")
}

/// Enough for the longest group and passwd entries on ordinary systems;
/// grown on ERANGE.
const INITIAL_BUFFER: usize = 4096;

fn group_id(name: &str) -> Option<u32> {
    let name = CString::new(name).ok()?;
    let mut buffer = vec![0 as libc::c_char; INITIAL_BUFFER];
    loop {
        // SAFETY: all-zero is a valid `group` (null pointers, zero gid).
        let mut group: libc::group = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::group = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call; the strings written
        // into `buffer` are not read after it.
        let rc = unsafe { libc::getgrnam_r(name.as_ptr(), &mut group, buffer.as_mut_ptr(), buffer.len(), &mut result) };
        if rc == libc::ERANGE && buffer.len() < 1 << 20 {
            buffer.resize(buffer.len() * 2, 0);
            continue;
        }
        return (rc == 0 && !result.is_null()).then_some(group.gr_gid);
    }
}

fn user_name(uid: u32) -> Option<String> {
    let mut buffer = vec![0 as libc::c_char; INITIAL_BUFFER];
    loop {
        // SAFETY: all-zero is a valid `passwd`.
        let mut passwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: as in `group_id`; `pw_name` points into `buffer`, read
        // before the buffer is dropped.
        let rc = unsafe { libc::getpwuid_r(uid, &mut passwd, buffer.as_mut_ptr(), buffer.len(), &mut result) };
        if rc == libc::ERANGE && buffer.len() < 1 << 20 {
            buffer.resize(buffer.len() * 2, 0);
            continue;
        }
        if rc != 0 || result.is_null() || passwd.pw_name.is_null() {
            return None;
        }
        // SAFETY: getpwuid_r succeeded, so pw_name is a NUL-terminated string in `buffer`.
        return Some(unsafe { CStr::from_ptr(passwd.pw_name) }.to_string_lossy().into_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_and_admins_configure_readers_show_others_nothing() {
        let (admin, read) = (Some(1001), Some(1002));
        assert_eq!(privilege(0, &[0], admin, read), Some(Privilege::Configure));
        assert_eq!(privilege(500, &[500, 1001], admin, read), Some(Privilege::Configure));
        assert_eq!(privilege(500, &[500, 1002], admin, read), Some(Privilege::Read));
        assert_eq!(privilege(500, &[500], admin, read), None);
        assert_eq!(privilege(500, &[500], None, None), None, "no such groups: only root");
    }

    #[test]
    fn groups_count_only_while_the_process_runs_as_the_peer() {
        let status = "Name:\tswcli\nUid:\t500\t500\t500\t500\nGid:\t500\t500\t500\t500\nGroups:\t1001 1002 \n";
        assert_eq!(status_groups(status, 500), [1001, 1002]);
        assert_eq!(status_groups(status, 0), Vec::<u32>::new(), "another user's process");
    }

    #[test]
    fn refusals_say_what_is_needed() {
        let reader = Peer { uid: 500, user: "ops".into(), privilege: Some(Privilege::Read) };
        assert_eq!(reader.refusal(Privilege::Read), None);
        let refusal = reader.refusal(Privilege::Configure).unwrap();
        assert!(refusal.contains("user ops (uid 500)") && refusal.contains("swadmin"), "{refusal}");
        let stranger = Peer { privilege: None, ..reader };
        assert!(stranger.refusal(Privilege::Read).unwrap().contains("swread"));
    }

    #[test]
    fn this_process_resolves() {
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let peer = Peer::from_credentials(uid, gid, Some(std::process::id() as i32));
        assert_eq!(peer.uid, uid);
        if uid == 0 {
            assert_eq!(peer.user, "root");
            assert_eq!(peer.privilege, Some(Privilege::Configure));
        }
    }
}
