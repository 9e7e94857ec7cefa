//! A port the config asks to be a TAP (`kind: tap`): switchd creates `eth1`
//! as a TAP device; moved into a host's namespace it is that host's link to
//! the switch, and the host reaches another one behind an AF_PACKET port.

use std::time::Duration;

use fabric_tests::{Netns, Switchd, require_root_and_tools, veth};

const CONFIG: &str = "
name: tapsw
ports:
  - name: eth1
    kind: tap
    mode: access
    vlan: 10
  - name: eth2
    mode: access
    vlan: 10
vlans:
  - id: 10
";

#[test]
fn a_tap_port_carries_a_host() {
    if !require_root_and_tools("switchd_tap_port", &["ip", "ping"]) {
        return;
    }
    let sw = Netns::new("tps");
    let h1 = Netns::new("tp1");
    let h2 = Netns::new("tp2");
    veth(&h2, "eth0", &sw, "eth2");
    h2.host_setup("eth0", "192.168.10.2/24", None);

    let switchd = Switchd::start(&sw, CONFIG);
    // The TAP switchd made; the daemon keeps reading it wherever it lives.
    let links = sw.ip(&["-br", "link", "show", "eth1"]);
    assert!(links.starts_with("eth1"), "{links}");
    sw.ip(&["link", "set", "eth1", "netns", h1.name()]);
    h1.ip(&["link", "set", "eth1", "up"]);
    h1.ip(&["addr", "add", "192.168.10.1/24", "dev", "eth1"]);

    assert!(h1.ping_until("192.168.10.2", Duration::from_secs(10)), "h1 (on the TAP) -> h2");
    assert!(h1.ping("192.168.10.2", 3));
    assert!(h2.ping("192.168.10.1", 3));
    assert!(switchd.counter("eth1", "rx_packets") >= 6);
}
