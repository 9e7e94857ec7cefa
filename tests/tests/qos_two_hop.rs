//! The incast of `qos_incast` between two `switchd` hops: PFC propagates
//! hop by hop.
//!
//! ```text
//!  [h1] 10.1.0.2 -- eth1 [leaf1] eth4 ===== eth1 [spine] eth2 ===== eth1 [leaf2] eth2 -- 10.4.0.2 [h4]
//!  [h2] 10.2.0.2 -- eth2         10.0.1.0/31                10.0.2.0/31                 (fabric-host recv)
//!  [h3] 10.3.0.2 -- eth3
//!  host links 100 Mb/s, fabric links (===) 400 Mb/s
//! ```
//!
//! Three senders on leaf1 at 100 Mb/s each on the lossless priority
//! (DSCP 26 -> TC 3) cross leaf1's and the spine's fast links, and meet
//! at leaf2's 100 Mb/s port to h4. Only leaf2 congests; the pause travels
//! back: leaf2 pauses the spine, whose queue to leaf2 then fills until it
//! pauses leaf1, whose queue to the spine fills until it pauses the
//! senders. Nothing is lost on the way.

use std::time::Duration;

use fabric_tests::fabric_host::{FabricHost, pfc_row, start_at, tm_drops, u64_of};
use fabric_tests::{Netns, Switchd, require_root_and_tools, veth};

/// Each sender's message.
const BYTES: u64 = 3 << 20;
/// PFC priority (and TC) of DSCP 26.
const PRIORITY: usize = 3;

/// The qos section of a switch with a pool of `pool` bytes. The emulated
/// hosts and the daemons react to a PFC frame when their process next
/// runs, not within a microsecond as a NIC does: 20 ms of response time
/// make the headrooms most of the pool. Each switch's pool leaves about
/// 400 KB to share, so that a switch paused downstream fills its share
/// (and pauses upstream) in a few milliseconds of the incast.
fn qos(pool: u64) -> String {
    format!(
        "qos:\n  preset: roce\n  pool: {{size-bytes: {pool}, cell-bytes: 256}}\n  pfc: {{priorities: [3, 4], response-ns: 20000000}}\n"
    )
}

fn port(name: &str, address: &str, speed: &str) -> String {
    format!("  - {{name: {name}, mode: routed, addresses: [{address}], mtu: 9100, speed: {speed}, cable-length: 5}}\n")
}

fn leaf1() -> String {
    let mut yaml = String::from("name: leaf1\nports:\n");
    for n in 1..=3 {
        yaml.push_str(&port(&format!("eth{n}"), &format!("10.{n}.0.1/24"), "100M"));
    }
    yaml.push_str(&port("eth4", "10.0.1.0/31", "400M"));
    yaml.push_str("routes:\n  - {prefix: 10.4.0.0/24, next_hops: [10.0.1.1]}\n");
    // Headrooms: 6 x 268 KB (100M) + 2 x 1018 KB (400M), reserves 147 KB.
    yaml + &qos(4_200_000)
}

fn spine() -> String {
    let mut yaml = String::from("name: spine\nports:\n");
    yaml.push_str(&port("eth1", "10.0.1.1/31", "400M"));
    yaml.push_str(&port("eth2", "10.0.2.0/31", "400M"));
    yaml.push_str("routes:\n  - {prefix: 10.0.0.0/14, next_hops: [10.0.1.0]}\n");
    yaml.push_str("  - {prefix: 10.4.0.0/24, next_hops: [10.0.2.1]}\n");
    // Headrooms: 4 x 1018 KB, reserves 74 KB.
    yaml + &qos(4_550_000)
}

fn leaf2() -> String {
    let mut yaml = String::from("name: leaf2\nports:\n");
    yaml.push_str(&port("eth1", "10.0.2.1/31", "400M"));
    yaml.push_str(&port("eth2", "10.4.0.1/24", "100M"));
    yaml.push_str("routes:\n  - {prefix: 10.0.0.0/14, next_hops: [10.0.2.0]}\n");
    // Headrooms: 2 x 1018 KB + 2 x 268 KB, reserves 74 KB.
    yaml + &qos(3_050_000)
}

fn mtu(ns: &Netns, ifname: &str) {
    ns.ip(&["link", "set", ifname, "mtu", "9100"]);
}

#[test]
fn pfc_propagates_hop_by_hop_and_nothing_is_lost() {
    if !require_root_and_tools("qos_two_hop", &["ip", "ping"]) {
        return;
    }
    let (l1, sp, l2) = (Netns::new("q2l1"), Netns::new("q2sp"), Netns::new("q2l2"));
    let hosts: Vec<Netns> = (1..=4).map(|n| Netns::new(&format!("q2h{n}"))).collect();
    for (i, host) in hosts[..3].iter().enumerate() {
        let n = i + 1;
        veth(host, "eth1", &l1, &format!("eth{n}"));
        mtu(host, "eth1");
        mtu(&l1, &format!("eth{n}"));
        host.host_setup("eth1", &format!("10.{n}.0.2/24"), Some(&format!("10.{n}.0.1")));
    }
    veth(&l1, "eth4", &sp, "eth1");
    veth(&sp, "eth2", &l2, "eth1");
    veth(&hosts[3], "eth1", &l2, "eth2");
    for (ns, ifname) in [(&l1, "eth4"), (&sp, "eth1"), (&sp, "eth2"), (&l2, "eth1"), (&l2, "eth2"), (&hosts[3], "eth1")]
    {
        mtu(ns, ifname);
    }
    hosts[3].host_setup("eth1", "10.4.0.2/24", Some("10.4.0.1"));
    let leaf1 = Switchd::start(&l1, &leaf1());
    let spine = Switchd::start(&sp, &spine());
    let leaf2 = Switchd::start(&l2, &leaf2());
    for (i, host) in hosts[..3].iter().enumerate() {
        assert!(host.ping_until("10.4.0.2", Duration::from_secs(15)), "h{} -> h4 across the fabric", i + 1);
    }

    let expect = (3 * BYTES).to_string();
    let receiver = FabricHost::start(&hosts[3], &["recv", "--expect-bytes", &expect, "--idle-ms", "2000"]);
    std::thread::sleep(Duration::from_millis(300));
    let start = start_at(Duration::from_millis(1500));
    let senders: Vec<FabricHost> = (0..3)
        .map(|i| {
            let qp = (i + 1).to_string();
            FabricHost::start(
                &hosts[i],
                &["send", "--to", "10.4.0.2", "--rate", "100M", "--bytes", &BYTES.to_string(), "--dscp", "26"]
                    .into_iter()
                    .chain(["--qp", &qp, "--start-at-unix-ms", &start])
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let senders: Vec<serde_json::Value> = senders.into_iter().map(|s| s.report(Duration::from_secs(60))).collect();
    let received = receiver.report(Duration::from_secs(60));
    let pfc = |switchd: &Switchd, port: &str| pfc_row(switchd, port);
    let context = || {
        format!(
            "receiver: {received}\nsenders: {senders:?}\nleaf1:\n{}\nspine:\n{}\nleaf2:\n{}",
            leaf1.swcli(&["show", "pfc", "counters"]),
            spine.swcli(&["show", "pfc", "counters"]),
            leaf2.swcli(&["show", "pfc", "counters"])
        )
    };

    // Nothing lost: every byte in order at h4, no drop in any switch.
    assert_eq!(u64_of(&received, "delivered_bytes"), 3 * BYTES, "{}", context());
    for (name, switchd) in [("leaf1", &leaf1), ("spine", &spine), ("leaf2", &leaf2)] {
        let drops = tm_drops(switchd);
        assert!(drops.iter().all(|(_, n)| *n == 0), "{name} dropped: {drops:?}\n{}", context());
    }
    // How much of each lossless PG's headroom the run used, the rx ring's burst after a pause
    // included (docs/qos.md, "Headroom and the AF_PACKET rx ring").
    for (name, switchd) in [("leaf1", &leaf1), ("spine", &spine), ("leaf2", &leaf2)] {
        eprintln!("{name}:\n{}", switchd.swcli(&["show", "priority-group", "watermark", "headroom"]));
    }
    // Hop by hop, against the traffic: leaf2 paused the spine ...
    let tx = |row: serde_json::Value| row["tx"][PRIORITY].as_u64().unwrap();
    let rx = |row: serde_json::Value| row["rx"][PRIORITY].as_u64().unwrap();
    assert!(tx(pfc(&leaf2, "eth1")) > 0, "leaf2 sent no PFC to the spine\n{}", context());
    assert!(rx(pfc(&spine, "eth2")) > 0, "the spine received no PFC from leaf2\n{}", context());
    assert!(pfc(&spine, "eth2")["paused_us"][PRIORITY].as_u64().unwrap() > 0, "{}", context());
    // ... the spine, congested in turn, paused leaf1 ...
    assert!(tx(pfc(&spine, "eth1")) > 0, "the spine did not pass the pause on to leaf1\n{}", context());
    assert!(rx(pfc(&leaf1, "eth4")) > 0, "leaf1 received no PFC from the spine\n{}", context());
    // ... and leaf1 paused the senders, which obeyed. (Each ingress PG has
    // its own share: a sender the loaded machine slows down may never
    // fill its own, so not every sender need be paused.)
    let mut paused_senders = 0;
    for (i, sender) in senders.iter().enumerate() {
        let port = format!("eth{}", i + 1);
        let sent = tx(pfc(&leaf1, &port));
        let obeyed = u64_of(sender, "pauses_obeyed");
        assert_eq!(sent > 0, obeyed > 0, "h{}: leaf1 sent {sent} PFC frames, {obeyed} obeyed\n{}", i + 1, context());
        paused_senders += usize::from(obeyed > 0);
        assert!(sender["completed"].as_bool().unwrap(), "h{}\n{}", i + 1, context());
    }
    assert!(paused_senders > 0, "leaf1 paused no sender\n{}", context());
    eprintln!(
        "PFC frames (priority 3): leaf2 -> spine {}, spine -> leaf1 {}, leaf1 -> senders {:?}; senders paused {paused_senders}",
        tx(pfc(&leaf2, "eth1")),
        tx(pfc(&spine, "eth1")),
        (1..=3).map(|n| tx(pfc(&leaf1, &format!("eth{n}")))).collect::<Vec<_>>()
    );
}
