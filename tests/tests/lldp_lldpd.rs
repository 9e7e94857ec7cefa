//! LLDP interop with lldpd: `switchd` and an lldpd on the far end of a veth
//! each list the other as a neighbour, with the names and port ids each
//! announced (802.1AB TLVs built and parsed by both sides); `lldp:` changes
//! apply live (SIGHUP): new timers reach lldpd as the TTL it keeps, LLDP
//! turned off makes lldpd forget the switch at once (TTL 0), and on again
//! brings it back; a rename committed through `swcli` reaches lldpd at
//! once as the new system name, the chassis id unchanged.

use std::time::{Duration, Instant};

use fabric_tests::{Netns, Switchd, TempDir, require_root_and_tools, veth};

const CONFIG: &str = "
name: lldpsw
lldp:
  tx_interval_secs: 1
ports:
  - name: eth1
    mode: routed
    description: to-peer
    addresses: [10.77.0.1/24]
";

#[test]
fn switchd_and_lldpd_see_each_other() {
    if !require_root_and_tools("lldp_lldpd", &["ip", "lldpd", "lldpcli"]) {
        return;
    }
    let sw = Netns::new("lls");
    let peer = Netns::new("llp");
    veth(&peer, "eth0", &sw, "eth1");
    let switchd = Switchd::start(&sw, CONFIG);

    let dir = TempDir::new("lldpd");
    let control = dir.path().join("lldpd.socket");
    let control = control.to_str().expect("utf-8 path");
    // -d: foreground; -I: only this interface; -u: a private control socket
    // so several test runs never share one; -S: the system description.
    let _lldpd = peer.spawn(&["lldpd", "-d", "-I", "eth0", "-u", control, "-S", "peer-under-test"]);

    // lldpd announces every 30 s by default; once its control socket is
    // up, make it every second so a lost first LLDPDU costs little.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !peer.exec_status(&["lldpcli", "-u", control, "configure", "lldp", "tx-interval", "1"]).status.success() {
        assert!(Instant::now() < deadline, "lldpd's control socket did not come up");
        std::thread::sleep(Duration::from_millis(100));
    }

    let deadline = Instant::now() + Duration::from_secs(40);
    let (mut ours, mut theirs) = (None, String::new());
    while Instant::now() < deadline {
        ours = switchd.show_rows("lldp").into_iter().find(|n| n["local_port"] == "eth1");
        let out = peer.exec_status(&["lldpcli", "-u", control, "show", "neighbors", "details"]);
        theirs = String::from_utf8_lossy(&out.stdout).into_owned();
        if ours.is_some() && theirs.contains("lldpsw") {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }

    let ours = ours.unwrap_or_else(|| panic!("switchd learned no neighbour on eth1; lldpd sees:\n{theirs}"));
    // lldpd announces its interface name as the port id, or its MAC
    // (depending on version and setup); either names the peer's eth0.
    let peer_mac = peer.exec(&["cat", "/sys/class/net/eth0/address"]).trim().to_string();
    let port_id = ours["port_id"].as_str().unwrap_or_default();
    assert!(port_id == "eth0" || port_id == peer_mac, "port id {port_id}: {ours}");
    assert!(ours["ttl_secs"].as_u64().unwrap_or(0) > 0, "{ours}");

    assert!(theirs.contains("SysName:      lldpsw"), "lldpd did not learn switchd's system name:\n{theirs}");
    assert!(theirs.contains("ifname eth1"), "lldpd did not learn switchd's port id:\n{theirs}");
    assert!(theirs.contains("to-peer"), "lldpd did not learn switchd's port description:\n{theirs}");

    // What lldpd keeps about switchd: `lldp.eth0.port.ttl=N` and the
    // system name, in lldpcli's key=value form.
    let lldpd_view = || {
        let out = peer.exec_status(&["lldpcli", "-u", control, "-f", "keyvalue", "show", "neighbors", "details"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let wait_for = |what: &str, done: &dyn Fn(&str) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let view = lldpd_view();
            if done(&view) {
                return;
            }
            assert!(Instant::now() < deadline, "lldpd: {what}; it shows:\n{view}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let reload = |yaml: &str| {
        let before = switchd.generation();
        switchd.reload(yaml);
        let deadline = Instant::now() + Duration::from_secs(10);
        while switchd.generation() == before {
            assert!(Instant::now() < deadline, "switchd did not commit the reload of\n{yaml}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };

    // New timers: the TTL lldpd keeps is interval x hold, sent at once.
    reload(&CONFIG.replace("tx_interval_secs: 1", "tx_interval_secs: 2\n  hold_multiplier: 3"));
    wait_for("keeps switchd's new TTL 6", &|view| view.lines().any(|l| l.ends_with("port.ttl=6")));

    // Off: the shutdown LLDPDU (TTL 0) makes lldpd forget switchd now, long
    // before the 6 s TTL would; switchd forgets its neighbours too.
    reload(&CONFIG.replace("tx_interval_secs: 1", "enabled: false\n  tx_interval_secs: 30"));
    wait_for("forgets switchd after LLDP is turned off", &|view| !view.contains("lldpsw"));
    assert!(switchd.show_rows("lldp").is_empty(), "switchd still lists neighbours with LLDP off");
    std::thread::sleep(Duration::from_secs(2));
    assert!(!lldpd_view().contains("lldpsw"), "switchd still announces with LLDP off");

    // On again: announced at once, and lldpd learned again.
    reload(CONFIG);
    wait_for("learns switchd again", &|view| view.contains("lldpsw"));

    // Renamed by a commit: announced at once under the new name by the
    // same daemon, with the same chassis id (the switch MAC stays).
    let chassis = |view: &str| view.lines().find(|l| l.contains(".chassis.mac=")).map(str::to_owned);
    let before = chassis(&lldpd_view());
    assert!(before.is_some(), "lldpd keeps switchd's chassis MAC:\n{}", lldpd_view());
    let (code, text) = switchd.swcli_script("configure\nset name lldpsw-renamed\ncommit\n");
    assert_eq!(code, 0, "a rename applies live:\n{text}");
    assert!(text.contains("name: now lldpsw-renamed"), "the answer says what stays:\n{text}");
    wait_for("learns switchd's new name", &|view| view.contains("lldpsw-renamed"));
    assert_eq!(chassis(&lldpd_view()), before, "the chassis id stays");
    assert!(switchd.swcli(&["show", "running-config"]).contains("name: lldpsw-renamed"));
}
