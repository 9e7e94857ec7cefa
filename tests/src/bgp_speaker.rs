//! Our BGP speaker (`bgp-speaker`, from the `bgp-evpn` crate) inside a
//! namespace: started from a YAML config, observed through the JSON status
//! file it rewrites every 50 ms, steered through its control file.
//! Dropping it stops the process (SIGTERM) and removes its directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::frr::tail;
use crate::netns::{Netns, ProcessGuard};
use crate::switchd::TempDir;

/// The `bgp-speaker` binary, built on first use with the running test's
/// profile (cargo builds other packages' binaries only for `--workspace`).
pub fn speaker_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("current_exe");
            let dir = exe.parent().and_then(Path::parent).expect("profile dir").to_path_buf();
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
            let mut cmd = Command::new(cargo);
            cmd.args(["build", "-p", "bgp-evpn", "--bin", "bgp-speaker", "--manifest-path"]).arg(&manifest);
            if dir.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            if let Some(target) = dir.parent() {
                cmd.env("CARGO_TARGET_DIR", target);
            }
            // Inside the kernel VM the target directory is read-only: built before.
            if std::env::var_os(crate::switchd::NO_BUILD).is_none() {
                assert!(cmd.status().expect("run cargo build").success(), "cargo build of bgp-speaker failed");
            }
            let path = dir.join("bgp-speaker");
            assert!(path.is_file(), "{} not built", path.display());
            path
        })
        .clone()
}

pub struct Speaker {
    process: ProcessGuard,
    dir: TempDir,
    ns_name: String,
}

impl Speaker {
    /// Starts the speaker in `ns` with `config_yaml` and waits for its first status.
    pub fn start(ns: &Netns, config_yaml: &str) -> Speaker {
        let dir = TempDir::new("bgpspk");
        let conf = dir.path().join("bgp.yaml");
        std::fs::write(&conf, config_yaml).expect("write bgp.yaml");
        let log = std::fs::File::create(dir.path().join("speaker.log")).expect("create log");
        let mut cmd = ns.command(speaker_binary().to_str().expect("utf-8 path"));
        cmd.arg("--config")
            .arg(&conf)
            .arg("--status")
            .arg(dir.path().join("status.json"))
            .arg("--control")
            .arg(dir.path().join("control"))
            .args(["--interval-ms", "50"])
            .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup log"))
            .stderr(log);
        let process = ProcessGuard::spawn("bgp-speaker", cmd);
        let mut speaker = Speaker { process, dir, ns_name: ns.name().to_string() };
        let deadline = Instant::now() + Duration::from_secs(10);
        while speaker.status().is_none() {
            assert!(speaker.process.is_running(), "bgp-speaker exited; log:\n{}", speaker.log());
            assert!(Instant::now() < deadline, "bgp-speaker wrote no status; log:\n{}", speaker.log());
            std::thread::sleep(Duration::from_millis(50));
        }
        speaker
    }

    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("speaker.log")).unwrap_or_default()
    }

    /// The last status the speaker wrote.
    pub fn status(&self) -> Option<Value> {
        let text = std::fs::read_to_string(self.dir.path().join("status.json")).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Sends control commands (`add P`, `del P`, `stop PEER`, `start PEER`).
    ///
    /// The speaker reads and deletes its one control file every interval, so
    /// a file it has not read yet would be replaced and its commands lost:
    /// wait (bounded) until the previous file is gone before writing.
    #[track_caller]
    pub fn control(&self, lines: &[&str]) {
        let control = self.dir.path().join("control");
        let deadline = Instant::now() + Duration::from_secs(5);
        while control.exists() {
            assert!(
                Instant::now() < deadline,
                "bgp-speaker in {} did not read its previous control file within 5 s; log tail:\n{}",
                self.ns_name,
                tail(&self.log(), 40)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let tmp = self.dir.path().join("control.tmp");
        std::fs::write(&tmp, lines.join("\n")).expect("write control");
        std::fs::rename(&tmp, control).expect("rename control");
    }

    /// The summary entry of neighbour `addr`.
    pub fn neighbor(&self, addr: &str) -> Option<Value> {
        let status = self.status()?;
        status["neighbors"].as_array()?.iter().find(|n| n["address"] == addr).cloned()
    }

    /// Polls the status until `check` holds; panics with the log otherwise.
    #[track_caller]
    pub fn wait(&self, what: &str, timeout: Duration, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.status()
                && check(&s)
            {
                return s;
            }
            if Instant::now() >= deadline {
                panic!(
                    "bgp-speaker in {}: {what} not reached within {timeout:?}; status: {:#}\nlog tail:\n{}",
                    self.ns_name,
                    self.status().unwrap_or_default(),
                    tail(&self.log(), 40)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[track_caller]
    pub fn wait_established(&self, addr: &str, timeout: Duration) {
        self.wait(&format!("{addr} Established"), timeout, |s| {
            s["neighbors"]
                .as_array()
                .is_some_and(|ns| ns.iter().any(|n| n["address"] == addr && n["state"] == "Established"))
        });
    }

    /// The Loc-RIB paths of `prefix` (`ipv4`/`ipv6` entry), if present.
    pub fn route(&self, prefix: &str) -> Option<Value> {
        let status = self.status()?;
        let table = if prefix.contains(':') { "ipv6" } else { "ipv4" };
        status[table].as_array()?.iter().find(|r| r["prefix"] == prefix).cloned()
    }

    /// Next hops installed for `prefix`.
    pub fn fib(&self, prefix: &str) -> Option<Vec<String>> {
        let status = self.status()?;
        let hops = status["fib"][prefix].as_array()?;
        Some(hops.iter().filter_map(|h| h.as_str().map(str::to_string)).collect())
    }

    pub fn vm_hwm_kib(&self) -> Option<u64> {
        crate::frr::proc_status_kib(self.pid(), "VmHWM")
    }

    pub fn stop(&mut self) -> String {
        self.process.stop(Duration::from_secs(3));
        self.log()
    }
}

impl Drop for Speaker {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- bgp-speaker in {} (log tail) ---\n{}", self.ns_name, tail(&self.log(), 60));
        }
    }
}
