//! Host interfaces: the switch's own addresses answer ping, and a TCP
//! connection to a listener inside the switch's namespace works through the
//! dataplane (punt to the TAP, kernel TCP, back through the pipeline). On
//! SIGTERM the daemon removes its TAPs.

use std::time::Duration;

use fabric_tests::{Netns, Switchd, echo_server, require_root_and_tools, tcp_round_trip, veth};

const CONFIG: &str = "
name: hostsw
ports:
  - name: eth1
    mode: routed
    addresses: [10.1.0.1/24, \"2001:db8:1::1/64\"]
  - name: eth2
    mode: access
    vlan: 100
vlans:
  - id: 100
    addresses: [192.168.100.1/24]
";

#[test]
fn switch_addresses_answer_ping_and_tcp_through_the_dataplane() {
    if !require_root_and_tools("switchd_hostif", &["ip", "ping"]) {
        return;
    }
    let sw = Netns::new("hos");
    let ha = Netns::new("hoa");
    let hb = Netns::new("hob");
    veth(&ha, "eth0", &sw, "eth1");
    veth(&hb, "eth0", &sw, "eth2");
    ha.host_setup("eth0", "10.1.0.2/24", Some("10.1.0.1"));
    ha.ip(&["-6", "addr", "add", "2001:db8:1::2/64", "dev", "eth0", "nodad"]);
    hb.host_setup("eth0", "192.168.100.2/24", Some("192.168.100.1"));

    let mut switchd = Switchd::start(&sw, CONFIG);

    // The host interfaces exist, named after what they serve, with the
    // configured addresses.
    let addrs = sw.ip(&["-br", "addr", "show"]);
    assert!(
        addrs.lines().any(|l| l.starts_with("sw-eth1") && l.contains("10.1.0.1/24") && l.contains("2001:db8:1::1/64")),
        "{addrs}"
    );
    assert!(addrs.lines().any(|l| l.starts_with("vlan100") && l.contains("192.168.100.1/24")), "{addrs}");

    assert!(ha.ping_until("10.1.0.1", Duration::from_secs(10)), "routed port address");
    assert!(ha.ping("10.1.0.1", 3));
    assert!(ha.ping_until("2001:db8:1::1", Duration::from_secs(10)), "routed port IPv6 address (neighbour discovery)");
    assert!(hb.ping_until("192.168.100.1", Duration::from_secs(10)), "SVI address");
    assert!(hb.ping("192.168.100.1", 3));
    // Across the switch, too: the SVI's address from the routed side.
    assert!(ha.ping_until("192.168.100.1", Duration::from_secs(5)), "SVI address from another subnet");

    // An echo server in the switch's namespace, reached through the dataplane.
    let server = echo_server(&sw, "[::]:7007", 3);
    tcp_round_trip(&ha, "10.1.0.1:7007");
    tcp_round_trip(&hb, "192.168.100.1:7007");
    tcp_round_trip(&ha, "[2001:db8:1::1]:7007");
    server.join().expect("echo server");

    // SIGTERM: a clean exit, and the TAPs are gone.
    let out = switchd.stop().expect("switchd exited");
    assert!(out.status.success(), "switchd exit status {}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    let links = sw.ip(&["-br", "link", "show"]);
    assert!(!links.contains("sw-eth1") && !links.contains("vlan100"), "TAPs left behind: {links}");
}
