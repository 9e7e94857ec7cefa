//! Routing through `switchd`: hosts in two subnets with their gateways on
//! the switch, and a remote subnet behind two next-hop routers as an ECMP
//! route. Pings succeed, and across many flows both next hops carry
//! traffic, by the switch's counters and by the routers' own.
//!
//! ```text
//!  [ha] 10.1.0.2 -- eth1 [switch] eth2 -- 10.2.0.2 [r1] -- [far 10.9.0.2]
//!  [hb] 10.4.0.2 -- eth4          eth3 -- 10.3.0.2 [r2] --/
//! ```

use std::net::UdpSocket;
use std::time::Duration;

use fabric_tests::{Netns, Switchd, require_root_and_tools, veth};

const CONFIG: &str = "
name: rtsw
ports:
  - name: eth1
    mode: routed
    addresses: [10.1.0.1/24]
  - name: eth2
    mode: routed
    addresses: [10.2.0.1/24]
  - name: eth3
    mode: routed
    addresses: [10.3.0.1/24]
  - name: eth4
    mode: routed
    addresses: [10.4.0.1/24]
routes:
  - prefix: 10.9.0.0/24
    next_hops: [10.2.0.2, 10.3.0.2]
";

fn kernel_counter(ns: &Netns, ifname: &str, counter: &str) -> u64 {
    ns.exec(&["cat", &format!("/sys/class/net/{ifname}/statistics/{counter}")]).trim().parse().expect("counter")
}

#[test]
fn routes_between_subnets_and_spreads_flows_over_ecmp_next_hops() {
    routes_between_subnets_and_spreads_flows(Backend::Soft);
}

#[test]
fn the_kernel_backend_routes_between_subnets_and_spreads_flows_over_ecmp_next_hops() {
    routes_between_subnets_and_spreads_flows(Backend::Kernel);
}

/// One test body for both backends.
#[derive(Debug, Clone, Copy)]
enum Backend {
    Soft,
    Kernel,
}

fn routes_between_subnets_and_spreads_flows(backend: Backend) {
    if !require_root_and_tools("switchd_routing", &["ip", "ping"]) {
        return;
    }
    let sw = Netns::new("rts");
    let ha = Netns::new("rta");
    let hb = Netns::new("rtb");
    let r1 = Netns::new("rr1");
    let r2 = Netns::new("rr2");
    let far = Netns::new("rtf");
    veth(&ha, "eth0", &sw, "eth1");
    veth(&r1, "eth0", &sw, "eth2");
    veth(&r2, "eth0", &sw, "eth3");
    veth(&hb, "eth0", &sw, "eth4");
    veth(&r1, "eth1", &far, "eth1");
    veth(&r2, "eth1", &far, "eth2");

    ha.host_setup("eth0", "10.1.0.2/24", Some("10.1.0.1"));
    hb.host_setup("eth0", "10.4.0.2/24", Some("10.4.0.1"));
    for (r, own, link, far_side, gw) in [
        (&r1, "10.2.0.2/24", "10.20.0.1/30", "10.20.0.2", "10.2.0.1"),
        (&r2, "10.3.0.2/24", "10.21.0.1/30", "10.21.0.2", "10.3.0.1"),
    ] {
        r.host_setup("eth0", own, None);
        r.disable_offloads("eth1");
        r.ip(&["addr", "add", link, "dev", "eth1"]);
        r.sysctl("net.ipv4.ip_forward", "1");
        r.ip(&["route", "add", "10.9.0.0/24", "via", far_side]);
        r.ip(&["route", "add", "10.0.0.0/8", "via", gw]);
    }
    // `far` answers on 10.9.0.2 whichever router the packet came through;
    // replies go back through r1 only (no reverse-path check).
    far.ip(&["addr", "add", "10.20.0.2/30", "dev", "eth1"]);
    far.ip(&["addr", "add", "10.21.0.2/30", "dev", "eth2"]);
    far.ip(&["addr", "add", "10.9.0.2/32", "dev", "lo"]);
    far.ip(&["route", "add", "10.0.0.0/8", "via", "10.20.0.1"]);
    for key in ["all", "default", "eth1", "eth2"] {
        far.sysctl(&format!("net.ipv4.conf.{key}.rp_filter"), "0");
    }

    let switchd = Switchd::start(&sw, &format!("backend: {}\n{CONFIG}", format!("{backend:?}").to_lowercase()));

    // Connected subnets, across the switch.
    assert!(ha.ping_until("10.4.0.2", Duration::from_secs(10)), "ha -> hb");
    assert!(ha.ping("10.4.0.2", 3));
    assert!(hb.ping("10.1.0.2", 3));
    // The ECMP route.
    assert!(ha.ping_until("10.9.0.2", Duration::from_secs(10)), "ha -> far over ECMP");

    let before = [switchd.counter("eth2", "tx_packets"), switchd.counter("eth3", "tx_packets")];
    let kernel_before = [kernel_counter(&r1, "eth0", "rx_packets"), kernel_counter(&r2, "eth0", "rx_packets")];
    // 64 flows (source ports), 20 datagrams each.
    const FLOWS: u64 = 64;
    const PER_FLOW: u64 = 20;
    ha.enter(|| {
        for flow in 0..FLOWS {
            let socket = UdpSocket::bind(("10.1.0.2", 20_000 + flow as u16)).expect("bind");
            for _ in 0..PER_FLOW {
                socket.send_to(b"ecmp flow", "10.9.0.2:9").expect("send");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    std::thread::sleep(Duration::from_millis(800));
    let after = [switchd.counter("eth2", "tx_packets"), switchd.counter("eth3", "tx_packets")];
    let kernel_after = [kernel_counter(&r1, "eth0", "rx_packets"), kernel_counter(&r2, "eth0", "rx_packets")];
    let via = [after[0] - before[0], after[1] - before[1]];
    let seen = [kernel_after[0] - kernel_before[0], kernel_after[1] - kernel_before[1]];
    let total = FLOWS * PER_FLOW;
    // The first datagrams toward a next hop not yet resolved wait on ARP
    // and may be dropped; nearly all must go through.
    assert!(via[0] + via[1] >= total * 95 / 100, "datagrams left toward the next hops: {via:?} of {total}");
    // With 64 flows hashed over 2 members, each should get far more than a
    // handful; 10% is far below what a working hash gives.
    for (i, n) in via.iter().enumerate() {
        assert!(*n >= total / 10, "next hop {} carried {n} of {total} (switch counters {via:?})", i + 1);
    }
    for (i, n) in seen.iter().enumerate() {
        assert!(*n >= total / 10, "router r{} received {n} of {total} (kernel counters {seen:?})", i + 1);
    }
    // Flows stick to one next hop: each flow's datagrams go one way, so the
    // split is in whole flows of PER_FLOW (give or take ARP and pings).
    let routes = switchd.show_rows("routes");
    let ecmp = routes.iter().find(|r| r["prefix"] == "10.9.0.0/24").expect("ECMP route shown");
    assert_eq!(ecmp["next_hops"].as_array().map(Vec::len), Some(2), "{ecmp}");
}
