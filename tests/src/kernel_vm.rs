//! Running tests on another kernel: `scripts/kernel-vm` boots Debian's
//! kernel (which has `CONFIG_BRIDGE_VLAN_FILTERING`, `CONFIG_VLAN_8021Q` and
//! `CONFIG_NET_VRF`) in a throwaway qemu guest that sees this machine's root
//! filesystem read-only, runs one command there and returns its exit code
//! and output. [`test_binary`] finds (building it if need be) another test
//! target's executable, so a test here can run a sibling test inside the VM.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::switchd::NO_BUILD;

/// The packages `scripts/kernel-vm` needs (`scripts/test-all` installs them).
pub const KERNEL_VM_PACKAGES: &[&str] = &["qemu-system-x86", "linux-image-amd64", "busybox-static"];

/// What a command did inside the VM.
#[derive(Debug)]
pub struct VmRun {
    /// The command's exit code (125: the VM could not run it, 124: timeout).
    pub code: Option<i32>,
    /// Its stdout and stderr as the serial console carried them, then the
    /// harness's own lines (boot time, failures).
    pub output: String,
    pub seconds: f64,
}

impl VmRun {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Whether the VM can boot here; if not, why (a test fails naming it under
/// `CI=true`, skips otherwise).
pub fn kernel_vm_missing() -> Option<String> {
    let mut missing = Vec::new();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        missing.push("root".to_string());
    }
    if !Path::new("/usr/bin/qemu-system-x86_64").exists() {
        missing.push("qemu-system-x86_64 (package qemu-system-x86)".to_string());
    }
    if !Path::new("/bin/busybox").exists() {
        missing.push("/bin/busybox (package busybox-static)".to_string());
    }
    let kernels = std::fs::read_dir("/boot")
        .map(|dir| dir.flatten().any(|e| e.file_name().to_string_lossy().starts_with("vmlinuz-")))
        .unwrap_or(false);
    if !kernels {
        missing.push("a kernel in /boot (package linux-image-amd64)".to_string());
    }
    (!missing.is_empty()).then(|| missing.join(", "))
}

/// `scripts/kernel-vm --env NAME=VALUE... -- argv...`: boots, runs, powers
/// off. The workspace's binaries are used as built (`FABRIC_TESTS_NO_BUILD`
/// is set inside: the guest cannot write the target directory).
pub fn run_in_kernel_vm(argv: &[&str], timeout_secs: u32) -> VmRun {
    let started = Instant::now();
    let out = Command::new(workspace().join("scripts/kernel-vm"))
        .current_dir(workspace())
        .args(["--timeout", &timeout_secs.to_string(), "--env", &format!("{NO_BUILD}=1"), "--"])
        .args(argv)
        .output()
        .expect("run scripts/kernel-vm");
    VmRun {
        code: out.status.code(),
        output: format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// The executable of the integration test `name` of this package, built
/// now if it is not current (`cargo test --no-run` says where it is).
pub fn test_binary(name: &str) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let exe = std::env::current_exe().expect("current_exe");
    let profile = exe.parent().and_then(Path::parent).expect("target/<profile>");
    let mut cmd = Command::new(cargo);
    cmd.args(["test", "--no-run", "--message-format=json", "-p", "fabric-tests", "--test", name, "--manifest-path"])
        .arg(workspace().join("Cargo.toml"));
    if profile.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    if let Some(target) = profile.parent() {
        cmd.env("CARGO_TARGET_DIR", target);
    }
    let out = cmd.output().expect("run cargo test --no-run");
    assert!(out.status.success(), "cargo test --no-run --test {name}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("cargo named no executable for test {name}"))
}
