//! A port's MTU follows commits: the port's socket is opened again with
//! ring slots for the new MTU, and its host interface with the new MTU.
//!
//! ```text
//!  [ha] 10.1.0.2 -- eth1 [switch] eth2 -- 10.2.0.2 [hb]     hosts at MTU 9000
//! ```
//!
//! With the switch's ports at MTU 1500, a 4000-byte ping with DF set does
//! not cross; after `swcli` commits MTU 9000 on both ports it does, from
//! the same daemon, and small pings work throughout.

use std::time::Duration;

use fabric_tests::{Netns, Switchd, require_root_and_tools, veth};

fn config(mtu: u16) -> String {
    format!(
        "name: mtu
lldp: {{ enabled: false }}
ports:
  - {{ name: eth1, mode: routed, addresses: [10.1.0.1/24], mtu: {mtu} }}
  - {{ name: eth2, mode: routed, addresses: [10.2.0.1/24], mtu: {mtu} }}
"
    )
}

/// A ping of `size` bytes of payload with DF set (no fragmentation).
fn big_ping(ns: &Netns, dst: &str, size: u32) -> bool {
    let size = size.to_string();
    ns.exec_status(&["ping", "-c", "2", "-i", "0.2", "-W", "1", "-n", "-q", "-M", "do", "-s", &size, dst])
        .status
        .success()
}

#[test]
fn a_committed_mtu_lets_larger_frames_through() {
    if !require_root_and_tools("switchd_mtu_live", &["ip", "ping"]) {
        return;
    }
    let (sw, ha, hb) = (Netns::new("mtus"), Netns::new("mtua"), Netns::new("mtub"));
    for (n, host) in [(1, &ha), (2, &hb)] {
        veth(host, "eth1", &sw, &format!("eth{n}"));
        host.ip(&["link", "set", "eth1", "mtu", "9000"]);
        sw.ip(&["link", "set", &format!("eth{n}"), "mtu", "9000"]);
        host.host_setup("eth1", &format!("10.{n}.0.2/24"), Some(&format!("10.{n}.0.1")));
    }
    let switchd = Switchd::start(&sw, &config(1500));
    let pid = switchd.process.id();
    assert!(ha.ping_until("10.2.0.2", Duration::from_secs(10)), "ha -> hb");
    assert!(!big_ping(&ha, "10.2.0.2", 4000), "4000 bytes cross a 1500-byte MTU");

    let (code, text) =
        switchd.swcli_script("configure\nset ports eth1 mtu 9000\nset ports eth2 mtu 9000\ncommit comment jumbo\n");
    assert_eq!(code, 0, "the MTU commit applies live: {text}");
    assert!(ha.ping_until("10.2.0.2", Duration::from_secs(10)), "ha -> hb after the commit");
    assert!(big_ping(&ha, "10.2.0.2", 4000), "4000 bytes cross after the commit to MTU 9000");
    let mtu = sw.exec(&["cat", "/sys/class/net/sw-eth1/mtu"]);
    assert_eq!(mtu.trim(), "9000", "the host interface follows");
    assert_eq!(switchd.process.id(), pid, "the same daemon");
}
