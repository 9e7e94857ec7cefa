//! The operator's side of `switchd`: the interactive `swcli` shell driven
//! through tmux (Tab, `?`, configure/commit changing forwarding, a
//! confirmed commit that rolls back, `rollback`), `save` under SIGKILL,
//! who may commit (SO_PEERCRED and the `swadmin` group), and a Prometheus
//! scrape read by an independent parser (python3-prometheus-client's
//! OpenMetrics parser) agreeing with `swcli show ... --json`.
//!
//! ```text
//!  [ha] 10.1.0.2 -- eth1 [switch] eth2 -- 10.2.0.2 [hb] (10.9.0.1 on its lo)
//! ```

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fabric_tests::{
    Netns, ProcessGuard, Switchd, TempDir, poll_until, require_root_and_tools, swcli_json, unique_name, veth,
    workspace_binary,
};

const CONFIG: &str = "
name: shellsw
lldp: { enabled: false }
ports:
  - { name: eth1, mode: routed, addresses: [10.1.0.1/24] }
  - { name: eth2, mode: routed, addresses: [10.2.0.1/24] }
";

/// Two hosts on the switch; `hb` also holds 10.9.0.1, which the switch
/// reaches only with a route to 10.9.0.0/24 through 10.2.0.2.
struct Lab {
    ha: Netns,
    _hb: Netns,
    sw: Netns,
}

fn lab() -> Lab {
    let sw = Netns::new("shsw");
    let ha = Netns::new("shha");
    let hb = Netns::new("shhb");
    veth(&sw, "eth1", &ha, "veth0");
    veth(&sw, "eth2", &hb, "veth0");
    for ns in [&sw, &ha, &hb] {
        for ifname in ["eth1", "eth2", "veth0"] {
            if ns.exec_status(&["ip", "link", "show", ifname]).status.success() {
                ns.disable_offloads(ifname);
            }
        }
    }
    ha.host_setup("veth0", "10.1.0.2/24", Some("10.1.0.1"));
    hb.host_setup("veth0", "10.2.0.2/24", Some("10.2.0.1"));
    hb.ip(&["addr", "add", "10.9.0.1/32", "dev", "lo"]);
    Lab { ha, _hb: hb, sw }
}

/// A tmux session running `swcli`, killed on drop.
struct Tmux {
    name: String,
    _home: TempDir,
}

impl Tmux {
    fn start(socket: &std::path::Path) -> Tmux {
        let name = unique_name("swcli");
        let home = TempDir::new("swcli-home");
        let command = format!(
            "HOME={} {} --socket {}",
            home.path().display(),
            workspace_binary("swcli").display(),
            socket.display()
        );
        let status = Command::new("tmux")
            .args(["new-session", "-d", "-s", &name, "-x", "160", "-y", "50", &command])
            .status()
            .expect("run tmux");
        assert!(status.success(), "tmux new-session");
        let tmux = Tmux { name, _home: home };
        tmux.wait_for("shellsw> ", Duration::from_secs(10));
        tmux.wait_ready();
        tmux
    }

    fn send(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.name];
        args.extend_from_slice(keys);
        assert!(Command::new("tmux").args(&args).status().expect("tmux send-keys").success());
    }

    /// Types `line` and presses Enter, once the shell waits for a line.
    fn line(&self, line: &str) {
        self.wait_ready();
        self.send(&["-l", line]);
        self.send(&["Enter"]);
    }

    /// Waits until the shell's prompt is drawn, empty, with the cursor
    /// after it. reedline asks the terminal where its cursor is (`ESC [6n`)
    /// before it draws the prompt; keys sent before the answer arrives
    /// race with it, and on a loaded machine the answer (`ESC [12;1R`) was
    /// then read as typed text. Once the prompt is drawn the answer is in.
    #[track_caller]
    fn wait_ready(&self) {
        let ready = poll_until(Duration::from_secs(10), Duration::from_millis(20), || {
            let cursor = self.tmux_output(&["display-message", "-p", "-t", &self.name, "#{cursor_x} #{cursor_y}"]);
            let (x, y) = cursor.trim().split_once(' ')?;
            let (x, y): (usize, usize) = (x.parse().ok()?, y.parse().ok()?);
            // The cursor's row as drawn, trailing spaces kept (-N).
            let row = self.tmux_output(&[
                "capture-pane",
                "-p",
                "-N",
                "-t",
                &self.name,
                "-S",
                &y.to_string(),
                "-E",
                &y.to_string(),
            ]);
            let row = row.trim_end_matches('\n');
            let drawn = row.get(..x)?;
            let prompt = drawn.ends_with("> ") || drawn.ends_with("# ");
            (prompt && row[x..].trim().is_empty()).then_some(())
        });
        assert!(ready.is_some(), "the prompt was not drawn, empty, with the cursor after it:\n{}", self.capture());
    }

    fn tmux_output(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").args(args).output().expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The whole pane with its scrollback.
    fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-J", "-S", "-2000", "-t", &self.name])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Clears the scrollback, so later waits see only new output.
    fn clear(&self) {
        self.send(&["C-l"]);
        let _ = Command::new("tmux").args(["clear-history", "-t", &self.name]).status();
    }

    #[track_caller]
    fn wait_for(&self, text: &str, timeout: Duration) -> String {
        poll_until(timeout, Duration::from_millis(100), || {
            let pane = self.capture();
            pane.contains(text).then_some(pane)
        })
        .unwrap_or_else(|| panic!("{text:?} did not appear in the pane:\n{}", self.capture()))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["kill-session", "-t", &self.name]).status();
    }
}

fn running_has_route(sw: &Switchd, prefix: &str) -> bool {
    sw.show_json("running-config")["yaml"].as_str().unwrap_or_default().contains(prefix)
}

#[test]
fn the_interactive_shell_completes_helps_and_commits_changes_to_forwarding() {
    if !require_root_and_tools("swcli_shell", &["ip", "ping", "tmux"]) {
        return;
    }
    let lab = lab();
    let sw = Switchd::start(&lab.sw, CONFIG);
    assert!(lab.ha.ping_until("10.2.0.2", Duration::from_secs(10)), "connected routing works");
    let shell = Tmux::start(&sw.socket);

    // Tab completes a command word, then lists the live interface names.
    shell.send(&["-l", "show interf"]);
    shell.send(&["Tab"]);
    shell.wait_for("show interfaces", Duration::from_secs(5));
    shell.send(&["-l", " et"]);
    shell.send(&["Tab"]);
    let pane = shell.wait_for("eth2", Duration::from_secs(5));
    assert!(pane.contains("eth1"), "both ports offered:\n{pane}");
    shell.send(&["-l", "1"]);
    shell.send(&["Escape"]);
    // tmux reads an Escape followed within its escape-time (500 ms) by
    // Enter as Alt-Enter.
    std::thread::sleep(Duration::from_millis(700));
    shell.send(&["Enter"]);
    shell.wait_for("10.1.0.1/24", Duration::from_secs(5));
    shell.clear();

    // `?` lists what may follow, with help, and keeps the line.
    shell.send(&["-l", "show bgp ?"]);
    let pane = shell.wait_for("one line per BGP neighbour", Duration::from_secs(5));
    assert!(pane.contains("neighbors") && pane.contains("ipv4"), "{pane}");
    shell.send(&["C-u"]);
    shell.clear();

    // configure, set, compare, commit: the route makes the ping work.
    assert!(!lab.ha.ping("10.9.0.1", 1), "no route to 10.9.0.0/24 yet");
    shell.line("configure");
    shell.wait_for("shellsw(config)# ", Duration::from_secs(5));
    shell.line("set routes 10.9.0.0/24 next_hops [10.2.0.2]");
    shell.line("show compare");
    shell.wait_for("+- prefix: 10.9.0.0/24", Duration::from_secs(5));
    shell.line("commit comment route to hb's loopback");
    shell.wait_for("committed (generation 1)", Duration::from_secs(5));
    assert!(lab.ha.ping_until("10.9.0.1", Duration::from_secs(10)), "the committed route forwards");

    // A bad set is refused at commit, naming the field; running stays.
    shell.clear();
    shell.line("set routes 10.8.0.0/24 next_hops [10.7.7.7]");
    shell.line("commit");
    let pane = shell.wait_for("routes[1].next_hops[0]", Duration::from_secs(5));
    assert!(pane.contains("invalid config"), "{pane}");
    assert!(!running_has_route(&sw, "10.8.0.0/24"));
    assert!(lab.ha.ping("10.9.0.1", 1));
    shell.line("discard");
    shell.wait_for("candidate reset to running", Duration::from_secs(5));

    // A confirmed commit left unconfirmed rolls back by itself.
    shell.clear();
    shell.line("delete routes 10.9.0.0/24");
    shell.line("commit confirmed 3s");
    shell.wait_for("rolled back in 3s unless confirmed", Duration::from_secs(5));
    assert!(!running_has_route(&sw, "10.9.0.0/24"));
    assert!(!lab.ha.ping("10.9.0.1", 1), "route removed while unconfirmed");
    assert!(
        poll_until(Duration::from_secs(15), Duration::from_millis(200), || running_has_route(&sw, "10.9.0.0/24")
            .then_some(()))
        .is_some(),
        "rolled back"
    );
    assert!(lab.ha.ping_until("10.9.0.1", Duration::from_secs(10)), "forwarding again after the rollback");
    shell.clear();
    shell.line("show system commit history");
    // The last line of the answer, so the whole table is on the pane.
    let pane = shell.wait_for("loaded from", Duration::from_secs(5));
    assert!(pane.contains("rolled back") && pane.contains("was not confirmed in time"), "{pane}");

    // rollback 1 loads the commit before (without the route); committing it
    // removes the route, and rollback 1 again restores it.
    shell.line("discard");
    shell.line("rollback 1");
    shell.wait_for("into the candidate", Duration::from_secs(5));
    shell.line("commit");
    poll_until(Duration::from_secs(5), Duration::from_millis(100), || {
        (!running_has_route(&sw, "10.9.0.0/24")).then_some(())
    })
    .expect("rollback 1 committed");
    assert!(!lab.ha.ping("10.9.0.1", 1));
    shell.line("rollback 1");
    shell.line("commit");
    poll_until(Duration::from_secs(5), Duration::from_millis(100), || {
        running_has_route(&sw, "10.9.0.0/24").then_some(())
    })
    .expect("rollback 1 restored the route");
    assert!(lab.ha.ping_until("10.9.0.1", Duration::from_secs(10)));

    // Two sessions configuring at once: this one copies running, another
    // commits first; this commit is then refused with what changed, and
    // goes through once the candidate starts again from running.
    shell.clear();
    shell.line("discard");
    shell.wait_for("candidate reset to running", Duration::from_secs(5));
    shell.line("set routes 10.8.0.0/24 next_hops [10.2.0.2]");
    shell.wait_for("shellsw(config*)# ", Duration::from_secs(5));
    let (code, text) =
        sw.swcli_script("configure\nset ports eth1 description other-session\ncommit comment the other session\n");
    assert_eq!(code, 0, "{text}");
    shell.line("commit");
    let pane = shell.wait_for("running changed since this candidate was copied", Duration::from_secs(5));
    assert!(pane.contains("description: other-session"), "the refusal shows the other session's change:\n{pane}");
    assert!(!running_has_route(&sw, "10.8.0.0/24"), "the refused commit changed nothing");
    shell.line("discard");
    shell.line("set routes 10.8.0.0/24 next_hops [10.2.0.2]");
    shell.line("commit");
    poll_until(Duration::from_secs(5), Duration::from_millis(100), || {
        running_has_route(&sw, "10.8.0.0/24").then_some(())
    })
    .expect("committed on top of the other session's change");
    assert!(running_has_route(&sw, "other-session"), "the other session's change stays");

    // A rename applies live: the prompt follows at once.
    shell.clear();
    shell.line("set name shellsw2");
    shell.line("commit");
    let pane = shell.wait_for("shellsw2(config)# ", Duration::from_secs(5));
    assert!(pane.contains("name: now shellsw2"), "the answer says what stays:\n{pane}");
}

/// `swcli` as another user, with exactly the given supplementary groups.
fn swcli_as(uid: u32, groups: &[u32], socket: &std::path::Path, args: &[&str], stdin: &str) -> (i32, String) {
    let groups = if groups.is_empty() {
        "--clear-groups".to_owned()
    } else {
        format!("--groups={}", groups.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
    };
    let mut child = Command::new("setpriv")
        .args([&format!("--reuid={uid}"), &format!("--regid={uid}"), &groups, "--"])
        .arg(workspace_binary("swcli"))
        .arg("--socket")
        .arg(socket)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run setpriv");
    use std::io::Write;
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
    let out = child.wait_with_output().expect("swcli output");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// The gid of `group`, created (as a system group) if missing.
fn group(name: &str) -> u32 {
    let lookup = || {
        let out = Command::new("getent").args(["group", name]).output().expect("getent");
        String::from_utf8_lossy(&out.stdout).split(':').nth(2).and_then(|gid| gid.trim().parse().ok())
    };
    if let Some(gid) = lookup() {
        return gid;
    }
    let status = Command::new("groupadd").args(["--system", name]).status().expect("groupadd");
    assert!(status.success() || lookup().is_some(), "groupadd {name}");
    lookup().expect("group exists")
}

#[test]
fn only_swadmin_members_may_commit() {
    if !require_root_and_tools("swcli_shell", &["ip", "setpriv", "getent", "groupadd"]) {
        return;
    }
    let (admin, read) = (group("swadmin"), group("swread"));
    let sw_ns = Netns::new("shacl");
    let sw = Switchd::start(
        &sw_ns,
        "name: shellsw\nports:\n  - { name: eth1, kind: tap, mode: routed, addresses: [10.1.0.1/24] }\n",
    );
    // Let other users reach the socket's directory; the socket is 0666.
    let dir = sw.socket.parent().expect("socket dir");
    std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    const NOBODY: u32 = 65534;
    let commit = "configure\nset routes 10.9.0.0/24 next_hops [10.1.0.2]\ncommit\n";

    let (code, text) = swcli_as(NOBODY, &[read], &sw.socket, &["show", "interfaces"], "");
    assert_eq!(code, 0, "a swread member may show: {text}");
    assert!(text.contains("eth1"), "{text}");
    let (code, text) = swcli_as(NOBODY, &[read], &sw.socket, &[], commit);
    assert_eq!(code, 3, "refused by switchd: {text}");
    assert!(text.contains("permission denied") && text.contains("may not change the configuration"), "{text}");
    assert!(text.contains("group swadmin"), "the refusal says what is needed: {text}");
    assert!(!running_has_route(&sw, "10.9.0.0/24"));

    let (code, text) = swcli_as(NOBODY, &[], &sw.socket, &["show", "interfaces"], "");
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("neither group swread nor swadmin"), "{text}");

    let (code, text) = swcli_as(NOBODY, &[admin], &sw.socket, &[], commit);
    assert_eq!(code, 0, "a swadmin member may commit: {text}");
    assert!(running_has_route(&sw, "10.9.0.0/24"));
    let history = sw.swcli(&["show", "system", "commit", "history"]);
    assert!(history.lines().nth(2).is_some_and(|l| l.contains("nobody")), "the commit names its user:\n{history}");
}

/// A commit that adds a port with an address applies live: the forwarding
/// thread takes the new port, its host interface appears with the
/// address, and a ping over it works; deleting it stops that ping and
/// removes the host interface; adding it back works again. Meanwhile the
/// other port's traffic is not disturbed (a ping running through the
/// commits loses nothing), and a loopback address comes and goes the
/// same way, as does a VLAN interface (SVI) with an access port.
#[test]
fn commits_add_and_remove_ports_and_interfaces_live() {
    if !require_root_and_tools("swcli_shell", &["ip", "ping"]) {
        return;
    }
    let lab = lab();
    let sw = Switchd::start(
        &lab.sw,
        "name: shellsw\nlldp: { enabled: true, tx_interval_secs: 1 }\nports:\n  - { name: eth1, mode: routed, addresses: [10.1.0.1/24] }\n",
    );
    assert!(lab.ha.ping_until("10.1.0.1", Duration::from_secs(10)), "the port in the startup config forwards");
    assert!(!lab.ha.ping("10.2.0.2", 1), "eth2 is not a port yet");
    let has_link = |name: &str| lab.sw.exec_status(&["ip", "link", "show", name]).status.success();
    assert!(!has_link("sw-eth2"));

    // The other flow: pings over eth1 every 100 ms while the commits run.
    let mut ping = lab.ha.command("ping");
    ping.args(["-i", "0.1", "-W", "2", "-n", "-q", "10.1.0.1"]).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut other = ProcessGuard::spawn("ping", ping);
    let add = "configure\nset ports eth2 { mode: routed, addresses: [10.2.0.1/24] }\n\
               set loopback [10.255.0.1/32]\ncommit comment add eth2\n";
    for round in 0..2 {
        let (code, text) = sw.swcli_script(add);
        assert_eq!(code, 0, "round {round}: the commit applies without a restart: {text}");
        assert!(has_link("sw-eth2"), "round {round}: the new port's host interface exists");
        assert!(
            lab.sw.exec(&["ip", "-br", "addr", "show", "sw-eth2"]).contains("10.2.0.1/24"),
            "round {round}: with its address"
        );
        assert!(lab.ha.ping_until("10.2.0.2", Duration::from_secs(10)), "round {round}: a ping over the new port");
        assert!(lab.ha.ping("10.255.0.1", 1), "round {round}: the new loopback address answers");
        let interfaces = sw.show_json("interfaces");
        assert!(interfaces.to_string().contains("eth2"), "round {round}: show interfaces lists eth2: {interfaces}");

        let (code, text) = sw.swcli_script("configure\ndelete ports eth2\ndelete loopback\ncommit\n");
        assert_eq!(code, 0, "round {round}: {text}");
        assert!(!has_link("sw-eth2"), "round {round}: the host interface went with the port");
        assert!(!lab.ha.ping("10.2.0.2", 2), "round {round}: nothing forwards to the deleted port");
        assert!(!lab.sw.exec(&["ip", "-br", "addr", "show", "lo"]).contains("10.255.0.1"), "round {round}");
    }
    // A VLAN interface (SVI) with an access port in its VLAN, added live:
    // its host interface `vlan20` appears with the address and routes.
    let (code, text) = sw.swcli_script(
        "configure\nset vlans 20 { addresses: [10.3.0.1/24] }\nset ports eth2 { mode: access, vlan: 20 }\ncommit\n",
    );
    assert_eq!(code, 0, "{text}");
    assert!(lab.sw.exec(&["ip", "-br", "addr", "show", "vlan20"]).contains("10.3.0.1/24"), "the SVI's host interface");
    lab._hb.ip(&["addr", "add", "10.3.0.2/24", "dev", "veth0"]);
    lab._hb.ip(&["route", "replace", "default", "via", "10.3.0.1"]);
    assert!(lab.ha.ping_until("10.3.0.2", Duration::from_secs(10)), "routed through the new SVI");
    let (code, text) = sw.swcli_script("configure\ndelete ports eth2\ndelete vlans 20\ncommit\n");
    assert_eq!(code, 0, "{text}");
    assert!(!has_link("vlan20"), "the SVI's host interface went with it");
    assert!(!lab.ha.ping("10.3.0.2", 1));

    // SIGINT: ping prints its statistics and ends.
    assert!(Command::new("kill").args(["-INT", &other.id().to_string()]).status().expect("kill").success());
    let out = other.wait_timeout(Duration::from_secs(10)).expect("the background ping ends");
    let text = String::from_utf8_lossy(&out.stdout);
    let count = |word: &str| -> u64 {
        let before = text.split(word).next().unwrap_or_default();
        before.split_whitespace().last().and_then(|n| n.parse().ok()).unwrap_or(0)
    };
    let (sent, received) = (count(" packets transmitted"), count(" received"));
    // The one in flight when SIGINT came may be unanswered.
    assert!(sent >= 5 && received + 1 >= sent, "the other flow was not disturbed by the commits:\n{text}");
    let history = sw.swcli(&["show", "system", "commit", "history"]);
    assert!(history.contains("add eth2"), "{history}");
}

/// A small deterministic generator, so a failure can be replayed (the
/// seed is printed).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound
    }
}

#[test]
fn save_killed_at_any_point_leaves_the_old_or_the_new_startup_file() {
    if !require_root_and_tools("swcli_shell", &["ip"]) {
        return;
    }
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    eprintln!("seed {seed}");
    let mut random = Lcg(seed);
    let ns = Netns::new("shsave");
    let dir = TempDir::new("save");
    let path = dir.path().join("startup.yaml");
    let socket = dir.path().join("sw.sock");
    // Many routes make the file big enough for a kill to land mid-write.
    let mut yaml = format!(
        "name: shellsw\nmanagement: {{ socket: {} }}\nlldp: {{ enabled: false }}\nports:\n  - {{ name: eth1, kind: tap, mode: routed, addresses: [10.0.0.1/16] }}\nroutes:\n",
        socket.display()
    );
    for i in 0..2000 {
        yaml.push_str(&format!("  - {{ prefix: 10.{}.{}.0/24, next_hops: [10.0.0.2] }}\n", 100 + i / 256, i % 256));
    }
    std::fs::write(&path, &yaml).expect("write startup");
    let swcli = |args: &[&str], stdin: &str| -> (bool, String) {
        let mut child = Command::new(workspace_binary("swcli"))
            .arg("--socket")
            .arg(&socket)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("swcli");
        use std::io::Write;
        child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("stdin");
        let out = child.wait_with_output().expect("swcli");
        (
            out.status.success(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        )
    };
    let (mut saved_new, mut kept_old) = (0, 0);
    // How long a whole `swcli save` takes here, so the kills spread over it.
    let mut save_time = Duration::ZERO;
    for round in 0..12 {
        let mut cmd = ns.command(workspace_binary("switchd").to_str().expect("utf-8"));
        cmd.args(["run", "--config"]).arg(&path).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        let mut daemon = ProcessGuard::spawn("switchd", cmd);
        poll_until(Duration::from_secs(20), Duration::from_millis(100), || {
            swcli(&["show", "interfaces"], "").0.then_some(())
        })
        .unwrap_or_else(|| panic!("round {round}: switchd did not start from the saved file"));
        let old = std::fs::read_to_string(&path).expect("read startup");
        let description = format!("round-{round}");
        let (ok, text) = swcli(&[], &format!("configure\nset ports eth1 description {description}\ncommit\n"));
        assert!(ok, "{text}");
        if round == 0 {
            // The first round calibrates: a save left to finish.
            let started = Instant::now();
            let (ok, text) = swcli(&["save"], "");
            assert!(ok, "{text}");
            save_time = started.elapsed();
            eprintln!("a save takes {save_time:?}");
            assert!(std::fs::read_to_string(&path).expect("read").contains(&description));
            drop(daemon);
            let _ = std::fs::remove_file(&socket);
            continue;
        }
        // Save, and SIGKILL the daemon at a random moment within 1.5 saves.
        let bound = (save_time.as_micros() as u64 * 3 / 2).max(1);
        let delay = Duration::from_micros(random.next(bound));
        let save = Command::new(workspace_binary("swcli"))
            .arg("--socket")
            .arg(&socket)
            .arg("save")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("swcli save");
        let started = Instant::now();
        while started.elapsed() < delay {
            std::hint::spin_loop();
        }
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        unsafe { libc::kill(daemon.id() as i32, libc::SIGKILL) };
        let _ = daemon.wait_timeout(Duration::from_secs(5));
        let mut save = save;
        let _ = save.wait();
        let now = std::fs::read_to_string(&path).expect("read startup after the kill");
        if now == old {
            kept_old += 1;
        } else {
            assert!(now.contains(&description), "round {round}: neither old nor new:\n{now}");
            assert!(now.contains("10.107.207.0/24"), "round {round}: the new file is whole");
            saved_new += 1;
        }
        let _ = std::fs::remove_file(&socket);
    }
    eprintln!("{saved_new} rounds saved the new file, {kept_old} kept the old");
    assert_eq!(saved_new + kept_old, 11);
}

#[test]
fn a_prometheus_scrape_parses_and_agrees_with_show() {
    if !require_root_and_tools("swcli_shell", &["ip", "ping", "python3"]) {
        return;
    }
    if !fabric_tests::metrics::parser_present("swcli_shell") {
        return;
    }
    let lab = lab();
    // eth4, in mode ib, is a veth whose peer stays in the switch's namespace.
    lab.sw.ip(&["link", "add", "eth4", "type", "veth", "peer", "name", "ib4"]);
    lab.sw.ip(&["link", "set", "ib4", "up"]);
    let sw = Switchd::start(&lab.sw, METRICS_CONFIG);
    assert!(lab.ha.ping_until("10.2.0.2", Duration::from_secs(10)));
    let shows = ["interfaces", "queue counters", "pfc counters", "queue wredcounters", "evpn vni", "ib sm", "ib port"];
    let before: Vec<serde_json::Value> = shows.iter().map(|what| sw.show_json(what)).collect();
    let scrape = fabric_tests::metrics::Scrape::get(&lab.sw, "127.0.0.1:9417");
    let after: Vec<serde_json::Value> = shows.iter().map(|what| sw.show_json(what)).collect();
    let samples = &scrape.samples;
    let labelled = |name: &str, labels: &[(&str, &str)]| -> f64 { scrape.value(name, labels) };
    let sample = |name: &str, port: &str| labelled(name, &[("port", port)]);
    // A scraped counter lies between what show said before and after.
    let within = |metric: &str, labels: &[(&str, &str)], show: usize, find: &dyn Fn(&serde_json::Value) -> f64| {
        let scraped = labelled(metric, labels);
        let (low, high) = (find(&before[show]), find(&after[show]));
        assert!(low <= scraped && scraped <= high, "{metric}{labels:?}: {scraped} outside show's {low}..={high}");
        scraped
    };
    let row = |rows: &serde_json::Value, keys: &[(&str, &str)], field: &str| -> f64 {
        rows.as_array()
            .and_then(|all| all.iter().find(|r| keys.iter().all(|(k, v)| r[*k] == *v)))
            .and_then(|r| r[field].as_f64())
            .unwrap_or_else(|| panic!("no {field} of {keys:?} in {rows}"))
    };
    let counter = |interfaces: &serde_json::Value, port: &str, field: &str| -> f64 {
        interfaces
            .as_array()
            .and_then(|all| all.iter().find(|i| i["name"] == port))
            .and_then(|i| i["counters"][field].as_f64())
            .expect("counter in show interfaces")
    };
    for port in ["eth1", "eth2"] {
        for (metric, field) in [
            ("switch_port_received_packets_total", "rx_packets"),
            ("switch_port_received_bytes_total", "rx_bytes"),
            ("switch_port_transmitted_packets_total", "tx_packets"),
            ("switch_port_transmitted_bytes_total", "tx_bytes"),
        ] {
            let scraped = sample(metric, port);
            let (low, high) = (counter(&before[0], port, field), counter(&after[0], port, field));
            assert!(low <= scraped && scraped <= high, "{metric} {port}: {scraped} outside show's {low}..={high}");
        }
        assert!(sample("switch_port_received_packets_total", port) > 0.0, "pings crossed {port}");
    }
    assert!(samples.iter().any(|s| s["family"] == "switch_route_entries" && s["type"] == "gauge"));

    // The traffic manager: queues (`show queue counters`), PFC (`show pfc
    // counters`), ECN (`show queue wredcounters`).
    let mut sent = 0.0;
    for port in ["eth1", "eth2"] {
        for q in 0..8 {
            let (queue, txq) = (q.to_string(), format!("UC{q}"));
            let labels = [("port", port), ("queue", queue.as_str())];
            let keys = [("port", port), ("txq", txq.as_str())];
            sent += within("switch_queue_transmitted_packets_total", &labels, 1, &|v| row(v, &keys, "counter_pkts"));
            within("switch_queue_transmitted_bytes_total", &labels, 1, &|v| row(v, &keys, "counter_bytes"));
            within("switch_queue_dropped_packets_total", &labels, 1, &|v| row(v, &keys, "drop_pkts"));
            within("switch_queue_ecn_marked_packets_total", &labels, 3, &|v| row(v, &keys, "ecn_marked_pkts"));
            within("switch_queue_wred_dropped_packets_total", &labels, 3, &|v| row(v, &keys, "wred_drp_pkts"));
            let priority = [("port", port), ("priority", queue.as_str())];
            let pfc = |v: &serde_json::Value, field: &str| {
                let rows = v.as_array().expect("pfc rows");
                let r = rows.iter().find(|r| r["port"] == port).expect("a pfc row");
                r[field][q].as_f64().expect("a count")
            };
            within("switch_pfc_received_frames_total", &priority, 2, &|v| pfc(v, "rx"));
            within("switch_pfc_transmitted_frames_total", &priority, 2, &|v| pfc(v, "tx"));
            let paused = labelled("switch_pfc_paused_seconds_total", &priority);
            assert!(paused * 1e6 <= pfc(&after[2], "paused_us") + 1.0, "paused time in seconds");
        }
    }
    assert!(sent > 0.0, "the pings went through the traffic manager's queues");
    for (metric, storms) in [("switch_pfcwd_storms_detected_total", 0.0), ("switch_pfcwd_stormed", 0.0)] {
        assert_eq!(labelled(metric, &[("port", "eth1"), ("queue", "3")]), storms, "{metric}: the watchdog watches");
    }
    assert!(labelled("switch_buffer_pool_size_bytes", &[("pool", "ingress_lossless_pool")]) > 0.0);

    // EVPN (`show evpn vni`) and the subnet manager (`show ib sm`, `ib port`).
    assert_eq!(labelled("switch_evpn_vnis", &[]), 1.0);
    let vni = [("vni", "10100")];
    assert_eq!(after[4][0]["vni"], 10100);
    for (metric, field) in [("switch_evpn_local_macs", "local_macs"), ("switch_evpn_remote_macs", "remote_macs")] {
        let scraped = labelled(metric, &vni);
        let shown = [before[4][0][field].as_f64(), after[4][0][field].as_f64()];
        assert!(shown.contains(&Some(scraped)), "{metric}: {scraped}, show said {shown:?}");
    }
    // The forwarding thread's own losses and errors, every reason present
    // (zero on this idle lab) so that a dashboard can rate() them.
    for reason in ["traffic-manager", "traffic-manager-reconfigure", "port-refused", "transmit-error"] {
        assert_eq!(labelled("switch_forwarding_dropped_packets_total", &[("reason", reason)]), 0.0, "{reason}");
    }
    assert_eq!(labelled("switch_forwarding_errors_total", &[("kind", "watchdog-event-lost")]), 0.0);
    let sm = |field: &'static str| move |v: &serde_json::Value| v[field].as_f64().expect("an SM counter");
    let sweeps = within("switch_ib_sm_heavy_sweeps_total", &[], 5, &sm("heavy_sweeps"));
    assert!(sweeps >= 1.0, "the SM swept its subnet");
    within("switch_ib_sm_smps_sent_total", &[], 5, &sm("smps_sent"));
    assert_eq!(labelled("switch_ib_sm_switches", &[]), sm("switches")(&after[5]));
    within("switch_ib_port_transmitted_packets_total", &[("port", "eth4")], 6, &|v| {
        let port = v.as_array().and_then(|all| all.iter().find(|p| p["name"] == "eth4")).expect("eth4 in show ib port");
        port["counters"]["xmit_packets"].as_f64().expect("a count")
    });

    // A commit moves the endpoint live: the new address answers, the old
    // one is closed; an address that cannot be bound is refused whole.
    let (code, text) = sw.swcli_script("configure\nset metrics listen 127.0.0.1:9418\ncommit\n");
    assert_eq!(code, 0, "{text}");
    lab.sw.enter(|| {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect("127.0.0.1:9418").expect("the moved endpoint answers");
        stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: sw\r\n\r\n").expect("request");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("answer");
        assert!(answer.contains("switch_port_received_packets_total"), "{answer}");
        assert!(std::net::TcpStream::connect("127.0.0.1:9417").is_err(), "the old address is closed");
    });
    let (code, text) = sw.swcli_script("configure\nset metrics listen 192.0.2.1:9418\ncommit\n");
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("metrics"), "{text}");
    lab.sw.enter(|| std::net::TcpStream::connect("127.0.0.1:9418").expect("still where it was"));
}

/// The metrics lab: the traffic manager on the routed ports, an EVPN VNI
/// on a TAP access port, an IB-like port with the SM, the endpoint.
const METRICS_CONFIG: &str = "
name: shellsw
lldp: { enabled: false }
loopback: [10.255.0.1/32]
ports:
  - { name: eth1, mode: routed, addresses: [10.1.0.1/24], speed: 100M, cable-length: 5 }
  - { name: eth2, mode: routed, addresses: [10.2.0.1/24], speed: 100M, cable-length: 5 }
  - { name: eth3, kind: tap, mode: access, vlan: 10, speed: 100M }
  - { name: eth4, mode: ib, speed: 100M }
vlans:
  - { id: 10 }
vxlan:
  source: 10.255.0.1
  vnis: [{ vni: 10100, vlan: 10 }]
qos:
  preset: roce
  pfc: { priorities: [3, 4] }
ib:
  sm: { priority: 7 }
bgp:
  asn: 65101
  neighbors: []
  evpn:
    vtep_ip: 10.255.0.1
    vnis: [{ vni: 10100 }]
metrics: { listen: 127.0.0.1:9417 }
";

/// `swcli COMMAND` run once: its exit status, stdout and stderr.
fn swcli_once(socket: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(workspace_binary("swcli"))
        .arg("--socket")
        .arg(socket)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run swcli");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// `swcli ARGS | head -1` (`script` on its standard input): the exit
/// status, the first line, and stderr. The reader closes the pipe after
/// one line, while swcli still has more to write.
fn swcli_head_1(socket: &std::path::Path, args: &[&str], script: &str) -> (i32, String, String) {
    use std::io::{BufRead, Read, Write};
    let mut child = Command::new(workspace_binary("swcli"))
        .arg("--socket")
        .arg(socket)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run swcli");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(script.as_bytes()).expect("write the script");
    drop(stdin);
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first).expect("read a line");
    let mut stderr = String::new();
    child.stderr.take().expect("stderr").read_to_string(&mut stderr).expect("read stderr");
    let status = child.wait().expect("wait for swcli");
    (status.code().unwrap_or(-1), first, stderr)
}

/// Every exit status `swcli --help` documents, from the binary against a
/// live `switchd` and against sockets nobody answers: 0 done, 1 a check
/// found an error, 2 the command did not parse, 3 switchd refused or
/// failed it, 4 switchd could not be reached; a reader that leaves early
/// is no failure (0).
#[test]
fn swcli_exit_statuses_say_what_failed() {
    if !require_root_and_tools("swcli_shell", &["ip"]) {
        return;
    }
    let ns = Netns::new("shexit");
    // Routes enough that their table outgrows a pipe's buffer (64 KiB):
    // a reader leaving after the first line leaves swcli writing.
    let mut config = String::from(
        "name: exitsw\nlldp: { enabled: false }\nports:\n  - { name: eth1, kind: tap, mode: routed, addresses: [10.1.0.1/24] }\nroutes:\n",
    );
    for i in 0..3000u32 {
        config.push_str(&format!("  - {{ prefix: 20.0.{}.{}/32, next_hops: [10.1.0.2] }}\n", i >> 8, i & 255));
    }
    let sw = Switchd::start(&ns, &config);
    let help = Command::new(workspace_binary("swcli")).arg("--help").output().expect("swcli --help");
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    assert!(help.contains("Exit status: 0 done, 1 a check found an error, 2 the command did not parse"), "{help}");

    // 0: done, output on stdout, nothing on stderr.
    let (code, stdout, stderr) = swcli_once(&sw.socket, &["show", "interfaces"]);
    assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
    assert!(stdout.contains("eth1"), "{stdout}");
    let (code, stdout, _) = swcli_once(&sw.socket, &["show", "ip", "route", "--json"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(swcli_json(&stdout).as_array().is_some_and(|routes| !routes.is_empty()), "{stdout}");

    // 0 too: a reader that leaves after the first line (`| head -1`) ends
    // swcli quietly, streamed (the table, `--json`) or not, one-shot or
    // from a script.
    for (args, script) in [
        (&["show", "ip", "route"][..], ""),
        (&["show", "ip", "route", "--json"], ""),
        (&["show", "running-config"], ""),
        (&[], "show ip route | json\nshow interfaces\n"),
    ] {
        let (code, first, stderr) = swcli_head_1(&sw.socket, args, script);
        assert_eq!((code, stderr.as_str()), (0, ""), "{args:?} {script:?} | head -1: {first}");
        assert!(!first.is_empty(), "{args:?} {script:?}");
    }

    // 1: the lossless check finds an error (no traffic manager), and prints it.
    let (code, stdout, _) = swcli_once(&sw.socket, &["check", "lossless"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("no traffic manager"), "{stdout}");

    // 2: the line does not parse (a command, a filter); nothing is asked.
    for args in [&["show", "nonsense"][..], &["show", "interfaces", "|", "sort"], &["commit"]] {
        let (code, stdout, stderr) = swcli_once(&sw.socket, args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert!(stdout.is_empty() && !stderr.is_empty(), "{args:?}: the reason on stderr: {stdout}{stderr}");
    }

    // 3: switchd refuses: a request for what is not configured, and a
    // commit it cannot apply (from a script: the last failure is the status).
    let (code, stdout, stderr) = swcli_once(&sw.socket, &["show", "bgp", "ipv4", "unicast"]);
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert!(stderr.contains("BGP is not configured"), "{stderr}");
    let (code, text) = sw.swcli_script("configure\nset profile small\ncommit\nabort\n");
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("table sizes are carved once"), "{text}");
    // A script whose lines all work exits 0; one bad line makes it 2.
    assert_eq!(sw.swcli_script("show interfaces\nshow ip route\n").0, 0);
    assert_eq!(sw.swcli_script("show interfaces\nshow nonsense\nshow ip route\n").0, 2);

    // 4: nobody answers: no such socket, a stale socket file, a daemon gone.
    let dir = TempDir::new("swcli-exit");
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).expect("bind a socket"));
    assert!(stale.exists(), "the socket file outlives its listener");
    for socket in [dir.path().join("missing.sock"), stale] {
        let (code, stdout, stderr) = swcli_once(&socket, &["show", "interfaces"]);
        assert_eq!(code, 4, "{}: {stdout}{stderr}", socket.display());
        assert!(stderr.contains("cannot connect"), "{stderr}");
    }
    let socket = sw.socket.clone();
    drop(sw);
    let (code, stdout, stderr) = swcli_once(&socket, &["show", "ip", "route"]);
    assert_eq!(code, 4, "{stdout}{stderr}");
}
