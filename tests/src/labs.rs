//! Labs deployed by the `labs` runner, under a unique name so tests run in
//! parallel, destroyed (and checked gone) even when the test panics.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use labs::runner::{Lab, STATE_ROOT, namespace};
use labs::topology::Topology;

use crate::switchd::{TempDir, workspace_binary};

/// The repository's `labs/topologies/NAME.clab.yml`.
pub fn topology_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../labs/topologies").join(format!("{name}.clab.yml"))
}

/// Runs the `labs` CLI.
pub fn labs_cli(args: &[&str]) -> Output {
    Command::new(workspace_binary("labs")).args(args).stdin(Stdio::null()).output().expect("run labs")
}

/// `labs ARGS`, panicking with its output unless it succeeds; its stdout.
#[track_caller]
pub fn labs_ok(args: &[&str]) -> String {
    let out = labs_cli(args);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "labs {} failed:\n{text}", args.join(" "));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A copy of a topology under a unique lab name (configs bound by absolute
/// path), destroyed on drop.
pub struct TestLab {
    pub name: String,
    pub file: PathBuf,
    _dir: TempDir,
}

impl TestLab {
    /// Writes the copy of `source` without deploying it.
    pub fn prepare(source: &Path, tag: &str) -> TestLab {
        let mut topology = Topology::load(source).unwrap_or_else(|e| panic!("{e}"));
        let folder = source.parent().expect("folder").canonicalize().expect("canonical folder");
        topology.name = crate::unique_name(&format!("{tag}-"));
        for node in topology.topology.nodes.values_mut() {
            for bind in &mut node.binds {
                *bind = format!("{}/{bind}", folder.display());
            }
        }
        let dir = TempDir::new("lab");
        let file = dir.path().join(format!("{}.clab.yml", topology.name));
        std::fs::write(&file, topology.to_yaml()).expect("write topology");
        TestLab { name: topology.name, file, _dir: dir }
    }

    /// Prepares and deploys (`labs deploy -t`).
    pub fn deploy(source: &Path, tag: &str) -> TestLab {
        let lab = TestLab::prepare(source, tag);
        labs_ok(&["deploy", "-t", lab.file.to_str().expect("utf-8")]);
        lab
    }

    pub fn state(&self) -> Lab {
        Lab::open(&self.name).unwrap_or_else(|e| panic!("{e}"))
    }

    /// `labs ARGS --name LAB`.
    #[track_caller]
    pub fn cli(&self, args: &[&str]) -> String {
        let mut all = args.to_vec();
        all.extend(["--name", &self.name]);
        labs_ok(&all)
    }

    /// `ip netns exec` in a node; (success, stdout).
    pub fn exec(&self, node: &str, argv: &[&str]) -> (bool, String) {
        let out = Command::new("ip")
            .args(["netns", "exec", &namespace(&self.name, node)])
            .args(argv)
            .stdin(Stdio::null())
            .output()
            .expect("ip netns exec");
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `labs destroy`, then checks that no namespace, state or recorded
    /// process of the lab is left.
    #[track_caller]
    pub fn destroy_and_check(&self, pids: &[u32]) {
        labs_ok(&["destroy", "--name", &self.name]);
        assert_clean(&self.name, pids);
    }
}

impl Drop for TestLab {
    fn drop(&mut self) {
        let _ = labs_cli(&["destroy", "--name", &self.name]);
    }
}

/// Every pid a deployed lab recorded (node programs and the supervisor).
pub fn recorded_pids(lab: &Lab) -> Vec<u32> {
    lab.nodes.iter().flat_map(|n| [n.pid, n.helper_pid]).flatten().chain(lab.supervisor).collect()
}

/// No namespace `clab-LAB-*`, no `/run/labs/LAB`, none of `pids` alive.
#[track_caller]
pub fn assert_clean(lab: &str, pids: &[u32]) {
    let prefix = format!("clab-{lab}-");
    let left: Vec<String> = std::fs::read_dir("/run/netns")
        .map(|d| d.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| n.starts_with(&prefix)).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
    assert!(!Path::new(STATE_ROOT).join(lab).exists(), "state folder left behind");
    for &pid in pids {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie_or_gone =
            stat.is_empty() || stat.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
        assert!(zombie_or_gone, "process {pid} left behind: {stat}");
    }
    // The veths lived only in the lab's namespaces; none may have landed in
    // the root namespace.
    let links = Command::new("ip").args(["-o", "link", "show", "type", "veth"]).output().expect("ip link");
    assert!(!String::from_utf8_lossy(&links.stdout).contains(lab), "veths of {lab} in the root namespace");
}
