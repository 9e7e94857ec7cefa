//! ibsim (Debian `ibsim-utils`): a simulated InfiniBand fabric, and the
//! libibumad programs (our `ib-sm`, OpenSM, infiniband-diags) run against
//! it through umad2sim (`LD_PRELOAD=libumad2sim.so`). Each [`Ibsim`] has a
//! socket name of its own (`IBSIM_SOCKNAME`), so tests run in parallel; it
//! is killed on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::TempDir;

pub const UMAD2SIM: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

/// Whether ibsim, umad2sim, OpenSM and infiniband-diags are installed;
/// under `CI=true` their absence is a failure.
pub fn available() -> bool {
    let found = Path::new(UMAD2SIM).is_file()
        && ["ibsim", "opensm", "smpquery", "ibroute", "ibnetdiscover"].iter().all(|tool| {
            Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success())
        });
    if !found {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("ibsim-utils, opensm or infiniband-diags missing (CI=true: a missing prerequisite is a failure)");
        }
        println!("skipped: ibsim-utils, opensm or infiniband-diags not installed");
    }
    found
}

pub struct Ibsim {
    child: Child,
    /// ibsim's console (when started with one).
    console: Option<std::process::ChildStdin>,
    socket: String,
    pub dir: TempDir,
}

impl Ibsim {
    /// Starts ibsim on `net` (its topology format) and waits until a
    /// client can query the SM's node.
    pub fn start(net: &str) -> Ibsim {
        Ibsim::launch(net, false)
    }

    /// Started with its console on a pipe, for [`Ibsim::console`].
    pub fn start_with_console(net: &str) -> Ibsim {
        Ibsim::launch(net, true)
    }

    /// One ibsim console command (`Unlink "leaf-0"[4]`, `Error ...`).
    pub fn console(&mut self, command: &str) {
        use std::io::Write;
        let console = self.console.as_mut().expect("started with a console");
        writeln!(console, "{command}").expect("write to ibsim's console");
        console.flush().expect("flush ibsim's console");
    }

    fn launch(net: &str, with_console: bool) -> Ibsim {
        let dir = TempDir::new("ibsim");
        let net_path = dir.path().join("net");
        std::fs::write(&net_path, net).expect("write ibsim net file");
        let socket = crate::unique_name("ibsim");
        let log = std::fs::File::create(dir.path().join("ibsim.log")).expect("ibsim log");
        let mut child = Command::new("ibsim")
            .args(["-s", "-N", "8192", "-S", "1024", "-P", "40000"])
            .args(if with_console { &[][..] } else { &["-n"][..] })
            .arg(&net_path)
            .env("IBSIM_SOCKNAME", &socket)
            .current_dir(dir.path())
            .stdin(if with_console { Stdio::piped() } else { Stdio::null() })
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn ibsim");
        let console = child.stdin.take();
        let ibsim = Ibsim { child, console, socket, dir };
        let started = Instant::now();
        loop {
            let output = ibsim.command("smpquery").args(["-D", "nodeinfo", "0"]).output().expect("run smpquery");
            if output.status.success() {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "ibsim did not come up: {}", ibsim.log());
            std::thread::sleep(Duration::from_millis(100));
        }
        ibsim
    }

    /// `program` run against this ibsim.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command.env("LD_PRELOAD", UMAD2SIM).env("IBSIM_SOCKNAME", &self.socket).current_dir(self.dir.path());
        command
    }

    /// Runs `program args` against this ibsim; panics with its output if it
    /// fails.
    pub fn run(&self, program: &str, args: &[&str]) -> String {
        let output: Output = self.command(program).args(args).output().unwrap_or_else(|e| panic!("run {program}: {e}"));
        assert!(
            output.status.success(),
            "{program} {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("ibsim.log")).unwrap_or_default()
    }
}

impl Drop for Ibsim {
    fn drop(&mut self) {
        self.console = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `ib-sm` binary, built on first use with the running test's profile.
pub fn sm_binary() -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().and_then(Path::parent).expect("profile dir").to_path_buf();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--bins", "-p", "subnet-manager", "--manifest-path"]).arg(&manifest);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        if let Some(target) = dir.parent() {
            cmd.env("CARGO_TARGET_DIR", target);
        }
        // Inside the kernel VM the target directory is read-only: built before.
        if std::env::var_os(crate::switchd::NO_BUILD).is_none() {
            assert!(cmd.status().expect("run cargo build").success(), "cargo build of ib-sm failed");
        }
    });
    let path = dir.join("ib-sm");
    assert!(path.is_file(), "{} not built", path.display());
    path
}
