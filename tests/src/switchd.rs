//! Launching `switchd` inside a namespace and querying it with `swcli`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::netns::{Netns, ProcessGuard};

/// Set, `workspace_binary` does not run cargo: the binaries were built
/// before (by the test that boots the kernel VM).
pub const NO_BUILD: &str = "FABRIC_TESTS_NO_BUILD";

/// The target directory profile folder this test binary was built into
/// (`target/debug` for `target/debug/deps/switchd_l2-<hash>`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("deps dir");
    deps.parent().expect("profile dir").to_path_buf()
}

/// The path of a workspace binary (`switchd`, `swcli`, `labs`), built on first use
/// with the same cargo and profile as the running test, so
/// `cargo test -p fabric-tests` alone works (cargo builds other packages'
/// binaries only for `--workspace`). With [`NO_BUILD`] set (inside the
/// kernel VM, whose view of the target directory is read-only) they must be
/// built already.
///
/// `FABRIC_BIN_DIR` names a directory of prebuilt binaries to take instead
/// (benchmarks run release builds under a debug harness).
pub fn workspace_binary(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("FABRIC_BIN_DIR") {
        let path = Path::new(&dir).join(name);
        assert!(path.is_file(), "{} not built (FABRIC_BIN_DIR)", path.display());
        return path;
    }
    static BUILT: OnceLock<()> = OnceLock::new();
    let dir = profile_dir();
    BUILT.get_or_init(|| {
        if std::env::var_os(NO_BUILD).is_some() {
            return;
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--bins", "-p", "switchd", "-p", "mgmt-cli", "-p", "labs", "--manifest-path"])
            .arg(&manifest);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        if let Some(target) = dir.parent() {
            cmd.env("CARGO_TARGET_DIR", target);
        }
        let status = cmd.status().expect("run cargo build");
        assert!(status.success(), "cargo build of switchd and swcli failed");
    });
    let path = dir.join(name);
    assert!(path.is_file(), "{} not built", path.display());
    path
}

/// A running `switchd` in a namespace, stopped (SIGTERM) on drop.
pub struct Switchd {
    pub process: ProcessGuard,
    pub socket: PathBuf,
    pub config_path: PathBuf,
    ns_name: String,
    _dir: TempDir,
}

impl Switchd {
    /// Writes `config_yaml` (with a `management.socket` in a temporary
    /// directory appended; the YAML must not have a `management` section) to
    /// a temporary file and starts `switchd --config <file>` in `ns`, then
    /// waits until the management socket answers.
    pub fn start(ns: &Netns, config_yaml: &str) -> Switchd {
        let switchd = Self::spawn(ns, config_yaml);
        switchd.wait_ready(Duration::from_secs(15));
        switchd
    }

    /// Starts the daemon without waiting for it (for configs expected to be
    /// refused).
    pub fn spawn(ns: &Netns, config_yaml: &str) -> Switchd {
        Self::spawn_under(ns, config_yaml, &[])
    }

    /// [`Switchd::start`] with `switchd` run by `wrapper` (a command and
    /// its arguments that run the rest: `setpriv ...` to drop a
    /// capability).
    pub fn start_under(ns: &Netns, config_yaml: &str, wrapper: &[&str]) -> Switchd {
        let switchd = Self::spawn_under(ns, config_yaml, wrapper);
        switchd.wait_ready(Duration::from_secs(15));
        switchd
    }

    fn spawn_under(ns: &Netns, config_yaml: &str, wrapper: &[&str]) -> Switchd {
        let dir = TempDir::new("switchd");
        let config_path = dir.path().join("switchd.yaml");
        let socket = dir.path().join("switchd.sock");
        let yaml = format!("{}\nmanagement:\n  socket: {}\n", config_yaml.trim_end(), socket.display());
        std::fs::write(&config_path, yaml).expect("write config");
        let binary = workspace_binary("switchd");
        let binary = binary.to_str().expect("utf-8 path");
        let mut cmd = ns.command(wrapper.first().copied().unwrap_or(binary));
        if !wrapper.is_empty() {
            cmd.args(&wrapper[1..]).arg(binary);
        }
        cmd.arg("run")
            .arg("--config")
            .arg(&config_path)
            .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let process = ProcessGuard::spawn("switchd", cmd);
        Switchd { process, socket, config_path, ns_name: ns.name().to_string(), _dir: dir }
    }

    fn wait_ready(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            if self.socket.exists() && self.swcli_status(&["show", "interfaces", "--json"]).0 {
                return;
            }
            if Instant::now() >= deadline {
                panic!("switchd in {} did not answer on {} within {timeout:?}", self.ns_name, self.socket.display());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Runs `swcli --socket <sock> <args>`; returns (success, stdout, stderr).
    pub fn swcli_status(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new(workspace_binary("swcli"))
            .arg("--socket")
            .arg(&self.socket)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run swcli");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `swcli --socket <sock>` reading `lines` from a pipe (one shell
    /// command a line: `configure`, `set ...`, `commit`); returns the exit
    /// code and stdout with stderr.
    pub fn swcli_script(&self, lines: &str) -> (i32, String) {
        let mut child = Command::new(workspace_binary("swcli"))
            .arg("--socket")
            .arg(&self.socket)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run swcli");
        use std::io::Write;
        child.stdin.take().expect("stdin").write_all(lines.as_bytes()).expect("write stdin");
        let out = child.wait_with_output().expect("swcli output");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.code().unwrap_or(-1), text)
    }

    /// `swcli --socket <sock> <args>`, panicking unless it succeeds.
    #[track_caller]
    pub fn swcli(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.swcli_status(args);
        assert!(ok, "swcli {} failed: {stdout}{stderr}", args.join(" "));
        stdout
    }

    /// `swcli show <what> --json` parsed (`what` may be several words:
    /// `ib port`).
    #[track_caller]
    pub fn show_json(&self, what: &str) -> serde_json::Value {
        let mut args = vec!["show"];
        args.extend(what.split_whitespace());
        args.push("--json");
        swcli_json(&self.swcli(&args))
    }

    /// Replaces the startup file with `config_yaml` (the management
    /// section appended as at start) and sends SIGHUP: the daemon commits it
    /// as a reload, or refuses it and keeps running what it ran.
    pub fn reload(&self, config_yaml: &str) {
        let yaml = format!("{}\nmanagement:\n  socket: {}\n", config_yaml.trim_end(), self.socket.display());
        std::fs::write(&self.config_path, yaml).expect("write config");
        let status = Command::new("kill").args(["-HUP", &self.process.id().to_string()]).status().expect("run kill");
        assert!(status.success(), "SIGHUP to switchd failed");
    }

    /// The running config's generation (commits and reloads count up).
    pub fn generation(&self) -> u64 {
        let history = self.show_json("system commit history");
        history[0]["generation"].as_u64().unwrap_or_else(|| panic!("no generation in {history}"))
    }

    /// Stops the daemon with SIGTERM and returns its exit status and logs.
    pub fn stop(&mut self) -> Option<std::process::Output> {
        self.process.stop(Duration::from_secs(5))
    }
}

impl Switchd {
    /// The rows of `swcli show <what> --json` (the payload is an array).
    #[track_caller]
    pub fn show_rows(&self, what: &str) -> Vec<serde_json::Value> {
        match self.show_json(what) {
            serde_json::Value::Array(rows) => rows,
            other => panic!("show {what}: expected an array, got {other}"),
        }
    }

    /// The counters object of interface `name` in `show interfaces`.
    #[track_caller]
    pub fn counters(&self, name: &str) -> serde_json::Value {
        self.show_rows("interfaces")
            .into_iter()
            .find(|row| row["name"] == name)
            .unwrap_or_else(|| panic!("no interface {name} in show interfaces"))["counters"]
            .clone()
    }

    /// One counter of one interface (`rx_packets`, `tx_packets`, `rx_drops`...).
    #[track_caller]
    pub fn counter(&self, name: &str, counter: &str) -> u64 {
        self.counters(name)[counter].as_u64().unwrap_or_else(|| panic!("{name}: no counter {counter}"))
    }
}

impl Drop for Switchd {
    fn drop(&mut self) {
        // A failing test shows what the daemon said.
        if std::thread::panicking()
            && let Some(out) = self.process.stop(Duration::from_secs(3))
        {
            eprintln!("--- switchd in {} ({}) ---", self.ns_name, out.status);
            eprintln!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        }
    }
}

/// Parses `swcli --json` output.
#[track_caller]
pub fn swcli_json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("swcli output is not JSON ({e}): {text}"))
}

/// A temporary directory removed on drop.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let path = std::env::temp_dir().join(crate::unique_name(&format!("ft-{tag}-")));
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
