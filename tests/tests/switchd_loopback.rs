//! Loopback addresses: the config's `loopback:` addresses are put on the
//! kernel's `lo` in the switch's namespace, so a socket on the switch can
//! bind to them and be reached through the dataplane (punt to the ingress
//! port's or SVI's TAP, kernel TCP, reply back through the pipeline). On
//! SIGTERM the daemon removes them from `lo`.

use std::time::Duration;

use fabric_tests::{Netns, Switchd, echo_server, require_root_and_tools, tcp_round_trip, veth};

const CONFIG: &str = "
name: loopsw
loopback: [10.255.0.1/32, \"2001:db8:ff::1/128\"]
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
fn loopback_addresses_are_on_lo_and_reachable_through_the_dataplane() {
    if !require_root_and_tools("switchd_loopback", &["ip", "ping"]) {
        return;
    }
    let sw = Netns::new("lbs");
    let ha = Netns::new("lba");
    let hb = Netns::new("lbb");
    // Strict reverse-path filtering in the switch's namespace (what many
    // distributions set): the punted packets arrive on a TAP, not on `lo`,
    // and must still be accepted. Set before switchd creates its TAPs, so
    // they inherit it from `default`.
    sw.sysctl("net.ipv4.conf.all.rp_filter", "1");
    sw.sysctl("net.ipv4.conf.default.rp_filter", "1");
    veth(&ha, "eth0", &sw, "eth1");
    veth(&hb, "eth0", &sw, "eth2");
    ha.host_setup("eth0", "10.1.0.2/24", None);
    ha.ip(&["route", "add", "10.255.0.1/32", "via", "10.1.0.1"]);
    ha.ip(&["-6", "addr", "add", "2001:db8:1::2/64", "dev", "eth0", "nodad"]);
    ha.ip(&["-6", "route", "add", "2001:db8:ff::1/128", "via", "2001:db8:1::1"]);
    hb.host_setup("eth0", "192.168.100.2/24", Some("192.168.100.1"));

    let mut switchd = Switchd::start(&sw, CONFIG);

    let lo = sw.ip(&["-br", "addr", "show", "dev", "lo"]);
    assert!(lo.contains("10.255.0.1/32") && lo.contains("2001:db8:ff::1/128"), "loopback addresses on lo: {lo}");
    assert!(
        sw.exec(&["cat", "/proc/sys/net/ipv4/conf/sw-eth1/rp_filter"]).trim() == "1",
        "TAP inherits strict rp_filter"
    );

    // Ping: answered by the pipeline (ip2me), through the routed port and the SVI.
    assert!(ha.ping_until("10.255.0.1", Duration::from_secs(10)), "loopback from the routed port");
    assert!(hb.ping_until("10.255.0.1", Duration::from_secs(10)), "loopback from the SVI");
    assert!(ha.ping_until("2001:db8:ff::1", Duration::from_secs(10)), "IPv6 loopback from the routed port");

    // Listeners bound to the loopback addresses themselves: bind fails
    // unless the address is local in the kernel, and the connections work
    // only if the kernel accepts the punted SYN on the TAP and its replies
    // go back out through the dataplane. For IPv6 the kernel first solicits
    // the host from the TAP's link-local address (the loopback address is
    // not on the TAP), so the host's advertisement to that link-local
    // address must reach the kernel too.
    let v4 = echo_server(&sw, "10.255.0.1:7008", 2);
    tcp_round_trip(&ha, "10.255.0.1:7008");
    tcp_round_trip(&hb, "10.255.0.1:7008");
    v4.join().expect("IPv4 echo server");
    let v6 = echo_server(&sw, "[2001:db8:ff::1]:7009", 1);
    tcp_round_trip(&ha, "[2001:db8:ff::1]:7009");
    v6.join().expect("IPv6 echo server");

    // SIGTERM: a clean exit, and the addresses are gone from lo.
    let out = switchd.stop().expect("switchd exited");
    assert!(out.status.success(), "switchd exit status {}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    let lo = sw.ip(&["-br", "addr", "show", "dev", "lo"]);
    assert!(!lo.contains("10.255.0.1") && !lo.contains("2001:db8:ff::1"), "loopback addresses left on lo: {lo}");
    assert!(lo.contains("127.0.0.1/8"), "lo's own address untouched: {lo}");
}
