//! Host interfaces: the switch's own addresses answer ping, and a TCP
//! connection to a listener inside the switch's namespace works through the
//! dataplane (punt to the TAP, kernel TCP, back through the pipeline). On
//! SIGTERM the daemon removes its TAPs.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use fabric_tests::{Netns, Switchd, require_root_and_tools, veth};

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

/// Connects from `client` to `addr`, sends a line, reads the echo back.
fn tcp_round_trip(client: &Netns, addr: &str) -> String {
    let addr = addr.to_string();
    client.enter(move || {
        let mut stream = TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let payload = vec![b'x'; 20_000]; // several segments, both ways
        stream.write_all(&payload).unwrap();
        stream.shutdown(std::net::Shutdown::Write).unwrap();
        let mut back = Vec::new();
        stream.read_to_end(&mut back).unwrap_or_else(|e| panic!("read from {addr}: {e}"));
        assert_eq!(back.len(), payload.len(), "echo of {addr} complete");
        format!("{} bytes", back.len())
    })
}

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
    let listener = sw.enter(|| TcpListener::bind("[::]:7007").expect("listen in the switch namespace"));
    let server = std::thread::spawn(move || {
        for _ in 0..3 {
            let (mut conn, _) = listener.accept().expect("accept");
            conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut data = Vec::new();
            conn.read_to_end(&mut data).expect("read");
            conn.write_all(&data).expect("echo");
        }
    });
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
