//! The namespace runner: deploys a containerlab topology on this machine
//! with one network namespace per node (`clab-LAB-NODE`), veth pairs named
//! as the file says, and the nodes' programs started and supervised.
//!
//! Everything a lab owns is written down before it is made, in
//! `/run/labs/LAB/state.json`, so `destroy` removes it all even after the
//! runner died half-way; namespaces named `clab-LAB-*` are removed even
//! without a state file. Per node, `/run/labs/LAB/NODE.log` keeps the
//! program's output and `NODE.yaml`/`NODE.sock` its config and management
//! socket; an HCA's `NODE.ping` is the ping file its `fabric-host ib` reads
//! (the LIDs `labs check` has it ibping).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::frr_vrf;
use crate::topology::{Endpoint, Role, Topology};

/// Where deployed labs keep their state.
pub const STATE_ROOT: &str = "/run/labs";
/// containerlab's prefix for its containers; ours for namespaces.
pub const PREFIX: &str = "clab";
const BGPD: &str = "/usr/lib/frr/bgpd";
const ZEBRA: &str = "/usr/lib/frr/zebra";

/// A deployed lab as recorded in its state file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Lab {
    pub name: String,
    pub topology: PathBuf,
    pub nodes: Vec<NodeState>,
    pub links: Vec<(Endpoint, Endpoint)>,
    /// The `labs supervise` process.
    pub supervisor: Option<u32>,
    /// How long `deploy` took, namespaces to programs started.
    pub deploy_secs: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeState {
    pub name: String,
    pub role: Role,
    pub image: Option<String>,
    pub namespace: String,
    /// The config the node's program reads (a copy in the state folder).
    pub config: Option<PathBuf>,
    /// The program's pid (`switchd`, or FRR's `bgpd`), once started.
    pub pid: Option<u32>,
    /// FRR's zebra.
    pub helper_pid: Option<u32>,
    /// Set by `labs fault kill`: the supervisor leaves the node down.
    pub stopped: bool,
    /// Set by the supervisor when the node kept exiting; left down.
    #[serde(default)]
    pub failed: bool,
    /// An HCA's program and arguments, as started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub program: Vec<String>,
}

pub fn state_dir(lab: &str) -> PathBuf {
    Path::new(STATE_ROOT).join(lab)
}

pub fn namespace(lab: &str, node: &str) -> String {
    format!("{PREFIX}-{lab}-{node}")
}

/// The one deployed lab, when `-t`/`--name` is not given.
pub fn only_deployed_lab() -> Result<String, String> {
    // Labs are the folders with a state file (beside them: the saved
    // neighbour table limits and their lock).
    let labs: Vec<String> = std::fs::read_dir(STATE_ROOT)
        .map(|dir| {
            dir.filter_map(|e| {
                let e = e.ok()?;
                e.path().join("state.json").exists().then(|| e.file_name().into_string().ok())?
            })
            .collect()
        })
        .unwrap_or_default();
    match labs.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(format!("no lab deployed (nothing in {STATE_ROOT}); give -t FILE or --name LAB")),
        many => Err(format!("several labs deployed ({}); give -t FILE or --name LAB", many.join(", "))),
    }
}

/// Runs a command, returning its stdout, or an error with its stderr.
fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("{program} {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// A workspace binary: `$LABS_<NAME>` (upper case, `-` as `_`), else beside
/// this executable (`target/debug/labs` finds `target/debug/switchd`), else
/// on `PATH`.
pub fn binary(name: &str) -> PathBuf {
    let var = format!("LABS_{}", name.to_uppercase().replace('-', "_"));
    if let Some(path) = std::env::var_os(var) {
        return PathBuf::from(path);
    }
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(2) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    PathBuf::from(name)
}

/// An HCA's command line as the runner starts it: the file's program with
/// its first word a workspace binary (`fabric-host`, see [`binary`]) and the
/// node's ping file added, through which `labs check` has it ibping the
/// others (the namespaces share this machine's files, so each HCA gets its
/// own).
fn hca_program(program: &[String], ping_file: &Path) -> Vec<String> {
    let mut words = program.to_vec();
    if let Some(first) = words.first_mut()
        && !first.contains('/')
    {
        *first = binary(first).to_string_lossy().into_owned();
    }
    words.push("--ping-file".into());
    words.push(ping_file.to_string_lossy().into_owned());
    words
}

/// A user's uid and primary gid.
fn user_ids(name: &str) -> Option<(u32, u32)> {
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: getpwnam returns a pointer to static storage or null; read at once.
    let entry = unsafe { libc::getpwnam(name.as_ptr()) };
    // SAFETY: checked for null; fields are plain integers.
    (!entry.is_null()).then(|| unsafe { ((*entry).pw_uid, (*entry).pw_gid) })
}

fn pid_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let alive = unsafe { libc::kill(pid as libc::pid_t, 0) } == 0;
    alive && !is_zombie(pid)
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: sending a signal to a pid this lab recorded.
    unsafe { libc::kill(pid as libc::pid_t, signal) };
}

/// SIGTERM, then SIGKILL after `grace`.
fn stop_process(pid: u32, grace: Duration) {
    signal(pid, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    while pid_alive(pid) && Instant::now() < deadline {
        reap_children();
        std::thread::sleep(Duration::from_millis(20));
    }
    if pid_alive(pid) {
        signal(pid, libc::SIGKILL);
        let deadline = Instant::now() + Duration::from_secs(2);
        while pid_alive(pid) && Instant::now() < deadline {
            reap_children();
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Collects exited children (programs this process started), so they do
/// not linger as zombies.
fn reap_children() {
    loop {
        let mut status = 0;
        // SAFETY: non-blocking wait for any child.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            break;
        }
    }
}

/// Holds the lab's lock file while alive (state read-modify-write).
struct StateLock(File);

impl StateLock {
    fn take(lab: &str) -> Result<StateLock, String> {
        let path = state_dir(lab).join("lock");
        let file = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        // SAFETY: flock on a file we own.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) } != 0 {
            return Err(format!("lock {}: {}", path.display(), std::io::Error::last_os_error()));
        }
        Ok(StateLock(file))
    }
}

impl Drop for StateLock {
    fn drop(&mut self) {
        // SAFETY: unlocking the lock taken in `take`.
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&self.0), libc::LOCK_UN) };
    }
}

impl Lab {
    fn dir(&self) -> PathBuf {
        state_dir(&self.name)
    }

    /// Reads a deployed lab's state.
    pub fn open(name: &str) -> Result<Lab, String> {
        let path = state_dir(name).join("state.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("lab {name} is not deployed ({}: {e})", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Writes the state atomically (rename), so a crash never leaves half a file.
    fn save(&self) -> Result<(), String> {
        let path = self.dir().join("state.json");
        let tmp = self.dir().join("state.json.tmp");
        let text = serde_json::to_string_pretty(self).expect("state serializes");
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn node(&self, name: &str) -> Result<&NodeState, String> {
        self.nodes.iter().find(|n| n.name == name).ok_or_else(|| format!("lab {} has no node {name:?}", self.name))
    }

    /// Deploys `topology_path`: namespaces, links, configs, programs, the
    /// supervisor. On an error the lab is destroyed again.
    pub fn deploy(topology_path: &Path) -> Result<Lab, String> {
        let started = Instant::now();
        let topology = Topology::load(topology_path).map_err(|e| e.to_string())?;
        let topology_path = std::fs::canonicalize(topology_path).map_err(|e| e.to_string())?;
        let folder = topology_path.parent().unwrap_or(Path::new("/"));
        let resolved = topology.resolve(folder).map_err(|e| format!("{}: {e}", topology_path.display()))?;
        check_switch_ports(&topology, &resolved).map_err(|e| format!("{}: {e}", topology_path.display()))?;
        let dir = state_dir(&topology.name);
        if dir.join("state.json").exists() {
            return Err(format!(
                "lab {} is already deployed; `labs destroy --name {}` first",
                topology.name, topology.name
            ));
        }
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut lab = Lab {
            name: topology.name.clone(),
            topology: topology_path.clone(),
            nodes: Vec::new(),
            links: topology.links(),
            supervisor: None,
            deploy_secs: None,
        };
        for node in &resolved {
            let config = match (node.role, &node.config) {
                (Role::Switchd, Some(source)) => {
                    let runtime = dir.join(format!("{}.yaml", node.name));
                    let socket = dir.join(format!("{}.sock", node.name));
                    write_switchd_config(source, &runtime, &socket)?;
                    Some(runtime)
                }
                (Role::Frr, Some(source)) => {
                    let runtime = dir.join(format!("{}.frr.conf", node.name));
                    std::fs::copy(source, &runtime).map_err(|e| format!("{}: {e}", source.display()))?;
                    Some(runtime)
                }
                _ => None,
            };
            let program = match node.role {
                Role::Hca => hca_program(&node.program, &dir.join(format!("{}.ping", node.name))),
                _ => Vec::new(),
            };
            lab.nodes.push(NodeState {
                name: node.name.clone(),
                role: node.role,
                image: node.image.clone(),
                namespace: namespace(&lab.name, &node.name),
                config,
                pid: None,
                helper_pid: None,
                stopped: false,
                failed: false,
                program,
            });
        }
        for raised in crate::host_limits::NeighborLimits::of_this_machine().fit(lab.nodes.len())? {
            eprintln!("raised {raised} (the kernel's neighbour table is shared by every namespace)");
        }
        // Recorded before anything is made: destroy works from here on.
        lab.save()?;
        let result = lab.bring_up(&resolved);
        if let Err(error) = result {
            let _ = destroy(&lab.name);
            return Err(format!("deploy of {} failed, lab removed: {error}", lab.name));
        }
        lab.deploy_secs = Some(started.elapsed().as_secs_f64());
        lab.save()?;
        Ok(lab)
    }

    fn bring_up(&mut self, resolved: &[crate::topology::ResolvedNode]) -> Result<(), String> {
        // One `ip` for every namespace, one for every veth, then one per
        // node for its interfaces and one for its exec lines, a few nodes at
        // a time: an `ip` per namespace, interface and line, one after
        // another, was most of a large lab's deploy time.
        let mut phase = Instant::now();
        let mut phases = Vec::new();
        let mut lap = |name: &'static str| {
            phases.push(format!("{name} {:.2} s", phase.elapsed().as_secs_f64()));
            phase = Instant::now();
        };
        let namespaces: String = self.nodes.iter().map(|node| format!("netns add {}\n", node.namespace)).collect();
        run_ip_batch(&namespaces, None)?;
        lap("namespaces");
        // Made directly in their namespaces, so names like eth1 never meet
        // in the root namespace.
        let mut batch = String::new();
        let mtus: Vec<Option<u32>> = Topology::load(&self.topology)
            .map(|t| t.links_with_mtu().into_iter().map(|(_, _, mtu)| mtu).collect())
            .unwrap_or_default();
        for (i, (a, b)) in self.links.iter().enumerate() {
            let (ns_a, ns_b) = (namespace(&self.name, &a.node), namespace(&self.name, &b.node));
            let mtu = mtus.get(i).copied().flatten().map(|m| format!(" mtu {m}")).unwrap_or_default();
            let _ = writeln!(
                batch,
                "link add {}{mtu} netns {ns_a} type veth peer name {}{mtu} netns {ns_b}",
                a.interface, b.interface
            );
        }
        run_ip_batch(&batch, None)?;
        lap("veth pairs");
        let mut setups = Vec::new();
        for node in resolved {
            let mut interfaces = String::from("link set lo up\n");
            for end in self.links.iter().flat_map(|(a, b)| [a, b]).filter(|end| end.node == node.name) {
                let _ = writeln!(interfaces, "link set {} up", end.interface);
            }
            setups.push((node, self.node(&node.name)?.namespace.clone(), interfaces));
        }
        run_bounded(&setups, SETUP_PARALLELISM, |(node, namespace, interfaces)| {
            // A node whose exec lines are all plain `ip` commands (every
            // generated host: its addresses and a route per remote subnet,
            // 124 lines a host in the 128-switch lab) gets them in the same
            // `ip -batch` as its interfaces: one process, not one a line.
            if node.role != Role::Frr
                && let Some(exec) = ip_batch_of(&node.exec)
            {
                return run_ip_batch(&format!("{interfaces}{exec}"), Some(namespace))
                    .map_err(|e| format!("node {}: {e}", node.name));
            }
            run_ip_batch(interfaces, Some(namespace)).map_err(|e| format!("node {}: {e}", node.name))?;
            // Hosts keep the kernel's default offloads, as containerlab leaves
            // them: switchd's ports cut their TSO super-frames to the MTU.
            if node.role == Role::Frr
                && frr_vrf::makes_vrf_devices(&node.exec)
                && !frr_vrf::kernel_has_vrf_devices(namespace)
            {
                eprintln!("node {}: the kernel has no VRF devices; its VRFs are network namespaces", node.name);
                let script = frr_vrf::netns_script(namespace, &node.exec);
                return run_root_script(&script).map_err(|e| format!("node {} exec: {e}", node.name));
            }
            run_script(namespace, &node.exec).map_err(|e| format!("node {} exec: {e}", node.name))
        })?;
        lap("interfaces and exec lines");
        for i in 0..self.nodes.len() {
            if self.nodes[i].role != Role::Host {
                self.start_node(i)?;
                self.save()?;
            }
        }
        self.supervisor = Some(spawn_detached(
            Command::new(std::env::current_exe().map_err(|e| e.to_string())?).args(["supervise", &self.name]),
            &self.dir().join("supervisor.log"),
        )?);
        lap("programs started");
        // Where a large lab's deploy time goes (scripts/labs-scale prints it).
        eprintln!("deploy phases: {}", phases.join(", "));
        Ok(())
    }

    /// Starts the node's program (switchd; FRR's zebra and bgpd), detached
    /// from this process, output to `NODE.log`.
    fn start_node(&mut self, index: usize) -> Result<(), String> {
        let dir = self.dir();
        let node = &mut self.nodes[index];
        let log = dir.join(format!("{}.log", node.name));
        let config = || node.config.clone().ok_or_else(|| format!("node {} has no config", node.name));
        match node.role {
            Role::Switchd => {
                let config = config()?;
                let switchd = binary("switchd");
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", &node.namespace]).arg(&switchd).arg("run").arg("--config").arg(&config);
                node.pid = Some(spawn_detached(&mut cmd, &log)?);
            }
            Role::Frr => {
                let config = config()?;
                let vty = dir.join(&node.name);
                std::fs::create_dir_all(&vty).map_err(|e| e.to_string())?;
                // The daemons drop to FRR's user before writing pid files
                // and sockets here.
                if let Some((uid, gid)) = user_ids("frr") {
                    std::os::unix::fs::chown(&vty, Some(uid), Some(gid))
                        .map_err(|e| format!("chown {}: {e}", vty.display()))?;
                }
                // The integrated config split as vtysh would: the VRFs'
                // L3VNIs to zebra, the rest to bgpd.
                let integrated = std::fs::read_to_string(&config).map_err(|e| format!("{}: {e}", config.display()))?;
                let (zebra_conf, bgpd_conf) = frr_vrf::split_config(&integrated);
                let (zebra_path, bgpd_path) = (vty.join("zebra.conf"), vty.join("bgpd.conf"));
                std::fs::write(&zebra_path, zebra_conf).map_err(|e| format!("{}: {e}", zebra_path.display()))?;
                std::fs::write(&bgpd_path, bgpd_conf).map_err(|e| format!("{}: {e}", bgpd_path.display()))?;
                // VRFs as namespaces when deploy made them so (a kernel
                // without VRF devices): zebra's other VRF backend.
                let vrfs = frr_vrf::config_vrfs(&integrated);
                let netns_vrfs = !vrfs.is_empty()
                    && vrfs
                        .iter()
                        .all(|v| Path::new("/run/netns").join(frr_vrf::vrf_namespace(&node.namespace, v)).exists());
                let zserv = vty.join("zserv.api");
                let _ = std::fs::remove_file(&zserv);
                let mut zebra = Command::new("ip");
                zebra.args(["netns", "exec", &node.namespace]);
                if netns_vrfs {
                    // zebra adopts every namespace in /run/netns: its own
                    // mount namespace's holds only this node's VRFs, under
                    // the VRFs' names (kept aside first: the tmpfs hides
                    // the originals).
                    let mut script = String::from("set -e\nmount --make-rprivate /\n");
                    let aside = |v: &str| vty.join(format!("{v}.netns"));
                    for v in &vrfs {
                        let ns = frr_vrf::vrf_namespace(&node.namespace, v);
                        let _ = writeln!(script, "touch {0}\nmount --bind /run/netns/{ns} {0}", aside(v).display());
                    }
                    script.push_str("mount -t tmpfs netns /run/netns\n");
                    for v in &vrfs {
                        let _ = writeln!(
                            script,
                            "touch /run/netns/{v}\nmount --bind {} /run/netns/{v}",
                            aside(v).display()
                        );
                    }
                    script.push_str("exec \"$@\"\n");
                    zebra.args(["unshare", "-m", "sh", "-c", &script, "sh", ZEBRA, "--vrfwnetns"]);
                } else {
                    zebra.arg(ZEBRA);
                }
                zebra.arg("-f").arg(&zebra_path);
                zebra.arg("-z").arg(&zserv).arg("--vty_socket").arg(&vty).arg("-i").arg(vty.join("zebra.pid"));
                // ip netns exec, unshare and sh all exec: the pid is zebra's.
                let zebra_pid = spawn_detached(&mut zebra, &dir.join(format!("{}.zebra.log", node.name)))?;
                node.helper_pid = Some(zebra_pid);
                let deadline = Instant::now() + Duration::from_secs(10);
                while !zserv.exists() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(50));
                }
                let mut bgpd = if netns_vrfs {
                    // bgpd opens its VRFs' sockets through zebra's /run/netns.
                    let mut bgpd = Command::new("nsenter");
                    bgpd.arg(format!("--target={zebra_pid}")).args(["--mount", "--net", BGPD]);
                    bgpd
                } else {
                    let mut bgpd = Command::new("ip");
                    bgpd.args(["netns", "exec", &node.namespace, BGPD]);
                    bgpd
                };
                bgpd.arg("-f").arg(&bgpd_path);
                bgpd.arg("-z").arg(&zserv).arg("--vty_socket").arg(&vty).arg("-i").arg(vty.join("bgpd.pid"));
                node.pid = Some(spawn_detached(&mut bgpd, &log)?);
            }
            Role::Hca => {
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", &node.namespace]).args(&node.program);
                node.pid = Some(spawn_detached(&mut cmd, &log)?);
            }
            Role::Host => {}
        }
        Ok(())
    }

    fn stop_node(&mut self, index: usize) {
        let node = &mut self.nodes[index];
        for pid in [node.pid.take(), node.helper_pid.take()].into_iter().flatten() {
            stop_process(pid, Duration::from_secs(5));
        }
    }

    pub fn exec(&self, node: &str, command: &[String]) -> Result<ExitStatus, String> {
        let node = self.node(node)?;
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &node.namespace]).args(command);
        // swcli in a switchd node finds its socket without --socket.
        if let Some(config) = &node.config {
            cmd.env("SWCLI_SOCKET", config.with_extension("sock"));
        }
        cmd.status().map_err(|e| format!("cannot run ip netns exec: {e}"))
    }

    fn node_state(&self, node: &NodeState) -> String {
        match (node.role, node.pid) {
            (Role::Host, _) => "running".into(),
            (_, Some(pid)) if pid_alive(pid) => format!("running ({pid})"),
            _ if node.failed => "failed (see its log)".into(),
            _ if node.stopped => "killed".into(),
            _ => "exited".into(),
        }
    }

    /// The node's first global IPv4 address (loopback on switches).
    fn address(&self, node: &NodeState) -> String {
        let out =
            run("ip", &["-n", &node.namespace, "-4", "-o", "addr", "show", "scope", "global"]).unwrap_or_default();
        out.lines()
            .filter_map(|l| l.split_whitespace().skip_while(|w| *w != "inet").nth(1))
            .next()
            .unwrap_or("-")
            .to_owned()
    }

    pub fn inspect_table(&self) -> String {
        let rows: Vec<[String; 5]> = self
            .nodes
            .iter()
            .map(|n| {
                [
                    n.namespace.clone(),
                    n.role.to_string(),
                    n.image.clone().unwrap_or_else(|| "-".into()),
                    self.node_state(n),
                    self.address(n),
                ]
            })
            .collect();
        let header = ["Name", "Kind", "Image", "State", "IPv4 Address"].map(String::from);
        let widths: Vec<usize> =
            (0..5).map(|c| rows.iter().chain([&header]).map(|r| r[c].len()).max().unwrap_or(0)).collect();
        let mut out = String::new();
        for row in [&header].into_iter().chain(&rows) {
            let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
            let _ = writeln!(out, "{}", cells.join("  ").trim_end());
        }
        if let Some(secs) = self.deploy_secs {
            let _ = writeln!(
                out,
                "lab {}: {} nodes, {} links, deployed in {secs:.2} s",
                self.name,
                self.nodes.len(),
                self.links.len()
            );
        }
        out
    }

    pub fn inspect_json(&self) -> String {
        let nodes: Vec<serde_json::Value> = self
            .nodes
            .iter()
            .map(|n| {
                serde_json::json!({
                    "name": n.namespace, "node": n.name, "kind": n.role.to_string(), "image": n.image,
                    "state": self.node_state(n), "ipv4_address": self.address(n), "pid": n.pid,
                })
            })
            .collect();
        serde_json::to_string_pretty(&nodes).expect("json")
    }

    fn endpoint(&self, text: &str) -> Result<(String, String), String> {
        let endpoint = Endpoint::parse(text)?;
        let node = self.node(&endpoint.node)?;
        Ok((node.namespace.clone(), endpoint.interface))
    }

    pub fn link_set(&self, endpoint: &str, up: bool) -> Result<(), String> {
        let (ns, ifname) = self.endpoint(endpoint)?;
        run("ip", &["-n", &ns, "link", "set", &ifname, if up { "up" } else { "down" }]).map(drop)
    }

    /// netem on the interface's root qdisc; delay 0 and loss 0 remove it.
    pub fn netem(&self, endpoint: &str, delay_ms: f64, loss_percent: f64) -> Result<(), String> {
        let (ns, ifname) = self.endpoint(endpoint)?;
        if !(0.0..=100.0).contains(&loss_percent) || delay_ms < 0.0 {
            return Err(format!("netem: delay {delay_ms} ms, loss {loss_percent}%: delay >= 0, loss 0..100"));
        }
        if delay_ms == 0.0 && loss_percent == 0.0 {
            return run("ip", &["netns", "exec", &ns, "tc", "qdisc", "del", "dev", &ifname, "root"]).map(drop);
        }
        let (delay, loss) = (format!("{delay_ms}ms"), format!("{loss_percent}%"));
        let args = [
            "netns", "exec", &ns, "tc", "qdisc", "replace", "dev", &ifname, "root", "netem", "delay", &delay, "loss",
            &loss,
        ];
        match run("ip", &args) {
            // The module may just not be loaded yet (tc does not load it).
            Err(error) if error.contains("qdisc kind is unknown") => {
                let loaded = run("modprobe", &["sch_netem"]);
                run("ip", &args).map(drop).map_err(|_| match loaded {
                    Ok(_) => format!("netem: {error}"),
                    Err(why) => format!("netem: {NO_NETEM} (tc: {}; modprobe sch_netem: {})", error.trim(), why.trim()),
                })
            }
            result => result.map(drop),
        }
    }

    /// SIGKILL to the node's programs; the supervisor leaves it down.
    pub fn kill(&self, node: &str) -> Result<(), String> {
        let _lock = StateLock::take(&self.name)?;
        let mut lab = Lab::open(&self.name)?;
        let index = lab.nodes.iter().position(|n| n.name == node).ok_or_else(|| format!("no node {node:?}"))?;
        if lab.nodes[index].role == Role::Host {
            return Err(format!("node {node} is a host: it runs no program"));
        }
        lab.nodes[index].stopped = true;
        lab.save()?;
        for pid in [lab.nodes[index].pid, lab.nodes[index].helper_pid].into_iter().flatten() {
            signal(pid, libc::SIGKILL);
        }
        Ok(())
    }

    /// Stops the node's programs if they run and starts them again.
    pub fn restart(&self, node: &str) -> Result<(), String> {
        let _lock = StateLock::take(&self.name)?;
        let mut lab = Lab::open(&self.name)?;
        let index = lab.nodes.iter().position(|n| n.name == node).ok_or_else(|| format!("no node {node:?}"))?;
        if lab.nodes[index].role == Role::Host {
            return Err(format!("node {node} is a host: it runs no program"));
        }
        lab.stop_node(index);
        lab.nodes[index].stopped = false;
        lab.nodes[index].failed = false;
        lab.start_node(index)?;
        lab.save()
    }

    /// Waits until the lab has converged; see [`crate::check`].
    pub fn check(&self, timeout: Duration, pairs: crate::check::Pairs) -> Result<crate::check::Report, String> {
        crate::check::converge(self, timeout, pairs)
    }
}

/// Every front-panel port a switch's config names must be cabled in the
/// topology (a TAP port is the switch's own), or the switch could not start.
fn check_switch_ports(topology: &Topology, nodes: &[crate::topology::ResolvedNode]) -> Result<(), String> {
    let links = topology.links();
    for node in nodes.iter().filter(|n| n.role == Role::Switchd) {
        let Some(path) = &node.config else { continue };
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let config: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        for (i, port) in config["ports"].as_sequence().into_iter().flatten().enumerate() {
            let (Some(name), kind) = (port["name"].as_str(), port["kind"].as_str()) else { continue };
            if kind == Some("tap") {
                continue;
            }
            let cabled = links.iter().any(|(a, b)| [a, b].iter().any(|e| e.node == node.name && e.interface == name));
            if !cabled {
                return Err(format!(
                    "topology.nodes.{}: its config {} has ports[{i}] {name}, which no link gives it",
                    node.name,
                    path.display()
                ));
            }
        }
    }
    Ok(())
}

/// switchd's config with the management socket moved into the lab's folder
/// (several labs and nodes share `/run/switchd` otherwise).
fn write_switchd_config(source: &Path, runtime: &Path, socket: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(source).map_err(|e| format!("{}: {e}", source.display()))?;
    let mut value: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", source.display()))?;
    let map = value.as_mapping_mut().ok_or_else(|| format!("{}: not a YAML mapping", source.display()))?;
    let management = map.entry("management".into()).or_insert_with(|| serde_yaml::Value::Mapping(Default::default()));
    let management =
        management.as_mapping_mut().ok_or_else(|| format!("{}: management is not a mapping", source.display()))?;
    management.insert("socket".into(), socket.to_string_lossy().into_owned().into());
    let text = serde_yaml::to_string(&value).expect("yaml");
    std::fs::write(runtime, text).map_err(|e| format!("{}: {e}", runtime.display()))
}

/// Nodes set up at once during deploy.
const SETUP_PARALLELISM: usize = 8;

/// Runs `job` on every item, `parallelism` at a time; the first error.
fn run_bounded<T: Sync>(
    items: &[T],
    parallelism: usize,
    job: impl Fn(&T) -> Result<(), String> + Sync,
) -> Result<(), String> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let errors = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..parallelism.min(items.len()) {
            scope.spawn(|| {
                while let Some(item) = items.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                    if let Err(error) = job(item) {
                        errors.lock().unwrap_or_else(|e| e.into_inner()).push(error);
                    }
                }
            });
        }
    });
    match errors.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().next() {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// Runs a node's exec lines in its namespace, in one shell that stops at
/// the first failing line.
fn run_script(namespace: &str, lines: &[String]) -> Result<(), String> {
    if lines.is_empty() {
        return Ok(());
    }
    let script = lines.join("\n");
    let out = Command::new("ip")
        .args(["netns", "exec", namespace, "sh", "-ec", &script])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).trim().to_owned()) }
}

/// The exec lines as one `ip -batch` input, if every line is an `ip`
/// command the batch runs as the shell would: no global options (a batch
/// line takes none), nothing the shell would expand, quote or redirect.
/// `ip -batch` stops at the first failing line, as `sh -e` does.
fn ip_batch_of(lines: &[String]) -> Option<String> {
    const SHELL: &[char] =
        &[';', '|', '&', '$', '`', '<', '>', '(', ')', '\'', '"', '\\', '*', '?', '~', '#', '{', '}', '['];
    let mut batch = String::new();
    for line in lines {
        let command = line.trim().strip_prefix("ip ")?.trim_start();
        if command.is_empty() || command.starts_with('-') || command.contains(SHELL) || command.contains('\n') {
            return None;
        }
        batch.push_str(command);
        batch.push('\n');
    }
    Some(batch)
}

/// A shell script run in the root namespace (its lines name their own).
fn run_root_script(script: &str) -> Result<(), String> {
    let out = Command::new("sh")
        .args(["-ec", script])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run sh: {e}"))?;
    if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).trim().to_owned()) }
}

/// `ip -batch`, in `namespace` if given.
fn run_ip_batch(batch: &str, namespace: Option<&str>) -> Result<(), String> {
    if batch.is_empty() {
        return Ok(());
    }
    let netns = namespace.map(|ns| ["-n", ns]);
    let mut child = Command::new("ip")
        .args(netns.iter().flatten())
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    child.stdin.take().expect("piped").write_all(batch.as_bytes()).map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip -batch: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Starts a program in its own session (it outlives the runner), output
/// appended to `log`; returns its pid.
fn spawn_detached(cmd: &mut Command, log: &Path) -> Result<u32, String> {
    let file = File::options().create(true).append(true).open(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file.try_clone().map_err(|e| e.to_string())?;
    cmd.stdin(Stdio::null()).stdout(file).stderr(err);
    // SAFETY: setsid is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| format!("cannot start {:?}: {e}", cmd.get_program()))?;
    Ok(child.id())
}

/// Removes a lab: supervisor first (so nothing restarts), every process in
/// its namespaces, the namespaces (their veths go with them), the state.
/// Works from the state file and, without one, from the namespace names.
pub fn destroy(lab: &str) -> Result<String, String> {
    let dir = state_dir(lab);
    let state = Lab::open(lab).ok();
    if let Some(pid) = state.as_ref().and_then(|s| s.supervisor) {
        stop_process(pid, Duration::from_secs(2));
    }
    let mut namespaces: Vec<String> = state.iter().flat_map(|s| s.nodes.iter().map(|n| n.namespace.clone())).collect();
    let prefix = format!("{PREFIX}-{lab}-");
    if let Ok(entries) = std::fs::read_dir("/run/netns") {
        for entry in entries.flatten() {
            if let Ok(name) = entry.file_name().into_string()
                && name.starts_with(&prefix)
                && !namespaces.contains(&name)
            {
                namespaces.push(name);
            }
        }
    }
    let mut removed = 0;
    let mut killed = 0;
    for ns in &namespaces {
        if !Path::new("/run/netns").join(ns).exists() {
            continue;
        }
        let pids: Vec<u32> = run("ip", &["netns", "pids", ns])
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        for &pid in &pids {
            signal(pid, libc::SIGKILL);
            killed += 1;
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while pids.iter().any(|&p| pid_alive(p)) && Instant::now() < deadline {
            reap_children();
            std::thread::sleep(Duration::from_millis(10));
        }
        run("ip", &["netns", "del", ns])?;
        removed += 1;
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let restored = crate::host_limits::NeighborLimits::of_this_machine().restore_if_last()?;
    let restored = if restored.is_empty() {
        String::new()
    } else {
        format!("; the last lab: neighbour table limits restored ({})", restored.join(" "))
    };
    Ok(format!("{removed} namespaces removed, {killed} processes killed{restored}"))
}

/// What `labs fault netem` says when the kernel cannot delay or drop.
pub const NO_NETEM: &str = "this kernel has no sch_netem (CONFIG_NET_SCH_NETEM)";

/// A node restarted this often within [`RESTART_WINDOW`] is left down: it
/// fails at start (a bad config, a missing binary), and restarting it
/// forever would only fill its log.
const MAX_RESTARTS: usize = 5;
const RESTART_WINDOW: Duration = Duration::from_secs(60);

/// The supervisor: every 500 ms, restarts a node whose program exited
/// unless `labs fault kill` stopped it (or it keeps failing, see
/// [`MAX_RESTARTS`]); exits when the lab is destroyed.
pub fn supervise(lab: &str) -> Result<(), String> {
    let mut restarts: BTreeMap<String, Vec<Instant>> = BTreeMap::new();
    loop {
        std::thread::sleep(Duration::from_millis(500));
        reap_children();
        if !state_dir(lab).join("state.json").exists() {
            return Ok(());
        }
        let Ok(_lock) = StateLock::take(lab) else { return Ok(()) };
        let Ok(mut state) = Lab::open(lab) else { return Ok(()) };
        let mut changed = false;
        for i in 0..state.nodes.len() {
            let node = &state.nodes[i];
            if node.role == Role::Host || node.stopped || node.pid.is_none() {
                continue;
            }
            let down = [node.pid, node.helper_pid].into_iter().flatten().any(|p| !pid_alive(p));
            if down {
                let name = node.name.clone();
                let recent = restarts.entry(name.clone()).or_default();
                recent.retain(|t| t.elapsed() < RESTART_WINDOW);
                state.stop_node(i);
                changed = true;
                if recent.len() >= MAX_RESTARTS {
                    eprintln!(
                        "supervisor: {name} exited {MAX_RESTARTS} times within {RESTART_WINDOW:?}; leaving it down"
                    );
                    state.nodes[i].stopped = true;
                    state.nodes[i].failed = true;
                    continue;
                }
                recent.push(Instant::now());
                eprintln!("supervisor: {name} exited; restarting");
                if let Err(error) = state.start_node(i) {
                    eprintln!("supervisor: cannot restart {name}: {error}");
                }
            }
        }
        if changed {
            state.save()?;
        }
    }
}

/// The topology as an undirected Graphviz graph, interface names on the
/// ends of each edge, switches boxes and hosts ellipses.
pub fn graph_dot(topology: &Topology) -> String {
    let mut out = format!(
        "graph \"{}\" {{\n  layout=dot; rankdir=TB; node [fontname=Helvetica]; edge [fontsize=8];\n",
        topology.name
    );
    let mut ranks: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for name in topology.topology.nodes.keys() {
        let role = topology.role(name).unwrap_or(Role::Host);
        let (shape, color, rank) = match role {
            Role::Switchd if name.starts_with("spine") => ("box", "lightblue", "a"),
            Role::Switchd | Role::Frr => ("box", if role == Role::Frr { "khaki" } else { "lightblue" }, "b"),
            Role::Host => ("ellipse", "white", "c"),
            Role::Hca => ("ellipse", "lightyellow", "c"),
        };
        ranks.entry(rank).or_default().push(name);
        let _ =
            writeln!(out, "  \"{name}\" [shape={shape}, style=filled, fillcolor={color}, label=\"{name}\\n{role}\"];");
    }
    for members in ranks.values() {
        let list: Vec<String> = members.iter().map(|m| format!("\"{m}\"")).collect();
        let _ = writeln!(out, "  {{ rank=same; {} }}", list.join("; "));
    }
    for (a, b) in topology.links() {
        // Spines above leaves above hosts: edges point downwards.
        let _ = writeln!(
            out,
            "  \"{}\" -- \"{}\" [taillabel=\"{}\", headlabel=\"{}\"];",
            a.node, b.node, a.interface, b.interface
        );
    }
    out.push_str("}\n");
    out
}

/// Writes the graph as `.dot`, or renders `.svg`/`.png` with Graphviz.
pub fn render_graph(dot: &str, out: &Path) -> Result<(), String> {
    let format = out.extension().and_then(|e| e.to_str()).unwrap_or("dot");
    if format == "dot" || format == "gv" {
        return std::fs::write(out, dot).map_err(|e| format!("{}: {e}", out.display()));
    }
    if !matches!(format, "svg" | "png" | "pdf") {
        return Err(format!("{}: .dot, .svg, .png or .pdf", out.display()));
    }
    let mut child = Command::new("dot")
        .arg(format!("-T{format}"))
        .arg("-o")
        .arg(out)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run Graphviz dot ({e}); install the Debian package graphviz, or write .dot"))?;
    child.stdin.take().expect("piped").write_all(dot.as_bytes()).map_err(|e| e.to_string())?;
    let result = child.wait_with_output().map_err(|e| e.to_string())?;
    if result.status.success() {
        Ok(())
    } else {
        Err(format!("dot: {}", String::from_utf8_lossy(&result.stderr).trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ip_exec_lines_become_one_batch_and_anything_else_a_shell() {
        let lines = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            ip_batch_of(&lines(&["ip addr add 10.0.0.2/24 dev eth1", "ip route add 10.1.0.0/24 via 10.0.0.1"])),
            Some("addr add 10.0.0.2/24 dev eth1\nroute add 10.1.0.0/24 via 10.0.0.1\n".into())
        );
        assert_eq!(ip_batch_of(&lines(&[])), Some(String::new()));
        assert_eq!(ip_batch_of(&lines(&["ip -6 addr add 2001:db8::2/64 dev eth1"])), None);
        assert_eq!(ip_batch_of(&lines(&["ip link set eth1 up", "sysctl -w net.ipv4.ip_forward=1"])), None);
        assert_eq!(ip_batch_of(&lines(&["ip addr add $ADDR dev eth1"])), None);
        assert_eq!(ip_batch_of(&lines(&["ip route add default via 10.0.0.1 || true"])), None);
    }

    #[test]
    fn graph_has_every_node_and_link_with_interface_names() {
        let lab =
            crate::generate::AiRail { servers: 2, rails: 2, spines: 1, servers_per_leaf: 2 }.generate("g").unwrap();
        let dot = graph_dot(&lab.topology);
        assert!(dot.starts_with("graph \"g\" {"));
        for name in lab.topology.topology.nodes.keys() {
            assert!(dot.contains(&format!("\"{name}\" [shape=")), "{name} missing:\n{dot}");
        }
        assert!(dot.contains("\"leaf-g1-r2\" -- \"spine1\" [taillabel=\"eth1\", headlabel=\"eth2\"]"), "{dot}");
        assert_eq!(dot.matches(" -- ").count(), lab.topology.topology.links.len());
    }

    #[test]
    fn switchd_config_gets_the_labs_socket_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let (source, runtime) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
        std::fs::write(&source, "name: sw\nmanagement: { socket: /elsewhere }\nports: []\n").unwrap();
        write_switchd_config(&source, &runtime, Path::new("/run/labs/x/sw.sock")).unwrap();
        let value: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(&runtime).unwrap()).unwrap();
        assert_eq!(value["management"]["socket"].as_str(), Some("/run/labs/x/sw.sock"));
        assert_eq!(value["name"].as_str(), Some("sw"));
        std::fs::write(&source, "- not a mapping\n").unwrap();
        assert!(write_switchd_config(&source, &runtime, Path::new("/s")).unwrap_err().contains("not a YAML mapping"));
    }
}
