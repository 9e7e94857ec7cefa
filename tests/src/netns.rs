//! Network namespaces and veth pairs for end-to-end tests.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Whether the test can run: root and every tool in `tools` on PATH. When
/// it cannot, fails under `CI=true` and otherwise prints why and returns
/// false, so the caller returns (a skip).
pub fn require_root_and_tools(test: &str, tools: &[&str]) -> bool {
    let mut missing = Vec::new();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        missing.push("root".to_string());
    }
    for tool in tools {
        if !on_path(tool) {
            missing.push((*tool).to_string());
        }
    }
    if missing.is_empty() {
        return true;
    }
    let message = format!("{test}: needs {}", missing.join(", "));
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{message} (CI=true: a missing prerequisite is a failure)");
    }
    eprintln!("SKIP {message}");
    false
}

fn on_path(tool: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| dir.join(tool).is_file())
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

// <linux/ethtool.h>: legacy set commands taking a struct ethtool_value.
const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_SSG: u32 = 0x19;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_SGRO: u32 = 0x2c;

/// A name unique to this process and call, at most 15 bytes (IFNAMSIZ - 1)
/// when `tag` has at most 4.
pub fn unique_name(tag: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{tag}{}x{n}", std::process::id() % 100_000)
}

/// Runs a command to completion; panics with its output if it fails.
#[track_caller]
pub fn run(program: &str, args: &[&str]) -> String {
    let out = run_status(program, args);
    if !out.status.success() {
        panic!(
            "`{program} {}` failed ({}): {}{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a command to completion and returns its output, whatever the status.
pub fn run_status(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

/// A network namespace, deleted on drop after every process still in it is
/// killed.
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates `<tag><pid>x<n>` with its loopback up.
    pub fn new(tag: &str) -> Netns {
        let name = unique_name(tag);
        run("ip", &["netns", "add", &name]);
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"]);
        ns
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n <ns> <args>`; panics on failure.
    #[track_caller]
    pub fn ip(&self, args: &[&str]) -> String {
        let mut full = vec!["-n", &self.name];
        full.extend_from_slice(args);
        run("ip", &full)
    }

    /// Runs `argv` inside the namespace to completion; panics on failure.
    #[track_caller]
    pub fn exec(&self, argv: &[&str]) -> String {
        let mut full = vec!["netns", "exec", &self.name];
        full.extend_from_slice(argv);
        run("ip", &full)
    }

    /// Runs `argv` inside the namespace and returns its output, whatever the
    /// status.
    pub fn exec_status(&self, argv: &[&str]) -> Output {
        let mut full = vec!["netns", "exec", &self.name];
        full.extend_from_slice(argv);
        run_status("ip", &full)
    }

    /// A command that runs inside the namespace, for the caller to spawn.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name, program]);
        cmd
    }

    /// Spawns `argv` inside the namespace; the guard kills it on drop.
    pub fn spawn(&self, argv: &[&str]) -> ProcessGuard {
        let mut cmd = self.command(argv[0]);
        cmd.args(&argv[1..]).stdin(Stdio::null());
        ProcessGuard::spawn(argv[0], cmd)
    }

    /// `ping -c <count>` from this namespace; true when every reply came back
    /// (`ping` exits 0 only when at least one reply came; we want all).
    pub fn ping(&self, dst: &str, count: u32) -> bool {
        let count = count.to_string();
        let out = self.exec_status(&["ping", "-c", &count, "-i", "0.2", "-W", "1", "-n", "-q", dst]);
        let text = String::from_utf8_lossy(&out.stdout);
        out.status.success() && text.contains(&format!("{count} received"))
    }

    /// Pings until one reply comes back or `timeout` passes (ARP, learning
    /// and the daemon's start take a moment).
    pub fn ping_until(&self, dst: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let out = self.exec_status(&["ping", "-c", "1", "-W", "1", "-n", "-q", dst]);
            if out.status.success() {
                return true;
            }
        }
        false
    }

    /// Turns off the offloads a software switch on the far end of a veth
    /// cannot honour: tx checksum offload (TCP/UDP would leave with the
    /// checksum unfilled, for "hardware" that a veth peer read by AF_PACKET
    /// does not have; the adapter can complete it, but a host set up like
    /// containerlab's has it off) and TSO/GSO (64 KiB super-frames). Uses the
    /// ethtool ioctl directly, so the `ethtool` tool is not needed.
    #[track_caller]
    pub fn disable_offloads(&self, ifname: &str) {
        self.ethtool_off(ifname, &[ETHTOOL_SGRO, ETHTOOL_SGSO, ETHTOOL_STSO, ETHTOOL_SSG, ETHTOOL_STXCSUM]);
    }

    /// Turns off only segmentation offloads (TSO/GSO/GRO), leaving tx
    /// checksum offload on.
    #[track_caller]
    pub fn disable_segmentation_offloads(&self, ifname: &str) {
        self.ethtool_off(ifname, &[ETHTOOL_SGRO, ETHTOOL_SGSO, ETHTOOL_STSO]);
    }

    #[track_caller]
    fn ethtool_off(&self, ifname: &str, commands: &[u32]) {
        let ifname = ifname.to_string();
        let commands = commands.to_vec();
        self.enter(move || {
            #[repr(C)]
            struct EthtoolValue {
                cmd: u32,
                data: u32,
            }
            // SAFETY: plain socket(2) for the ioctl; closed below.
            let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
            assert!(sock >= 0, "socket: {}", std::io::Error::last_os_error());
            for cmd in commands {
                let mut value = EthtoolValue { cmd, data: 0 };
                // SAFETY: ifreq is POD; zeroes are valid.
                let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
                for (dst, src) in req.ifr_name.iter_mut().zip(ifname.bytes()) {
                    *dst = src as libc::c_char;
                }
                req.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
                // SAFETY: req and value are live for the call.
                let rc = unsafe { libc::ioctl(sock, libc::SIOCETHTOOL as _, &mut req as *mut libc::ifreq) };
                assert!(rc == 0, "ethtool cmd {cmd:#x} on {ifname}: {}", std::io::Error::last_os_error());
            }
            // SAFETY: closing the socket opened above.
            unsafe { libc::close(sock) };
        });
    }

    /// Writes `/proc/sys/<key with dots as slashes>` inside the namespace.
    #[track_caller]
    pub fn sysctl(&self, key: &str, value: &str) {
        let path = format!("/proc/sys/{}", key.replace('.', "/"));
        let value = value.to_string();
        self.enter(move || std::fs::write(&path, &value).unwrap_or_else(|e| panic!("write {path}: {e}")));
    }

    /// A host behind a veth: the interface's offloads off (see
    /// [`Netns::disable_offloads`]), an address, and a default route.
    #[track_caller]
    pub fn host_setup(&self, ifname: &str, address: &str, gateway: Option<&str>) {
        self.disable_offloads(ifname);
        self.ip(&["addr", "add", address, "dev", ifname]);
        if let Some(gateway) = gateway {
            self.ip(&["route", "add", "default", "via", gateway]);
        }
    }

    /// Runs `f` on a thread that has entered this namespace (network
    /// namespaces are per thread for `setns`), for sockets made in Rust.
    pub fn enter<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let path = format!("/run/netns/{}", self.name);
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let file = File::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
                    // SAFETY: setns on a namespace file descriptor; affects this thread only.
                    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                    assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
                    f()
                })
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// Kills every process still in the namespace.
    fn kill_all(&self) {
        let out = run_status("ip", &["netns", "pids", &self.name]);
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if let Ok(pid) = pid.parse::<i32>() {
                // SAFETY: kill has no memory preconditions.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        self.kill_all();
        let out = run_status("ip", &["netns", "del", &self.name]);
        if !out.status.success() {
            eprintln!("ip netns del {}: {}", self.name, String::from_utf8_lossy(&out.stderr));
        }
    }
}

/// A veth pair with one end in each namespace, renamed and up. Deleting
/// either namespace deletes the pair.
pub fn veth(a: &Netns, a_if: &str, b: &Netns, b_if: &str) {
    let tmp_a = unique_name("va");
    let tmp_b = unique_name("vb");
    run("ip", &["link", "add", &tmp_a, "type", "veth", "peer", "name", &tmp_b]);
    run("ip", &["link", "set", &tmp_a, "netns", a.name(), "name", a_if]);
    run("ip", &["link", "set", &tmp_b, "netns", b.name(), "name", b_if]);
    a.ip(&["link", "set", a_if, "up"]);
    b.ip(&["link", "set", b_if, "up"]);
}

/// A child process killed on drop (SIGTERM, then SIGKILL after a grace
/// period), so a panicking test leaves nothing running.
pub struct ProcessGuard {
    name: String,
    child: Option<Child>,
}

impl ProcessGuard {
    pub fn spawn(name: &str, mut cmd: Command) -> ProcessGuard {
        let child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        ProcessGuard { name: name.to_string(), child: Some(child) }
    }

    pub fn id(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Sends SIGTERM and waits up to `grace` for the exit; SIGKILL after.
    /// Returns the output captured, if stdout/stderr were piped.
    pub fn stop(&mut self, grace: Duration) -> Option<Output> {
        let mut child = self.child.take()?;
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if !matches!(child.try_wait(), Ok(Some(_))) {
            let _ = child.kill();
        }
        child.wait_with_output().ok()
    }

    /// Waits for the process to exit on its own within `timeout`.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<Output> {
        let deadline = Instant::now() + timeout;
        loop {
            let child = self.child.as_mut()?;
            if let Ok(Some(_)) = child.try_wait() {
                return self.child.take()?.wait_with_output().ok();
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // ip netns exec execs the program, so the pid is the program's.
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(2);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
