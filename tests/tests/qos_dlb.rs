//! Dynamic load balancing through `switchd`: two elephant flows that the
//! static hash puts on the same uplink of a two-uplink ECMP group.
//!
//! ```text
//!  [h1] 10.1.0.2 -- eth1 [leaf1] eth3 ===== eth1 [leaf2] eth3 -- 10.3.0.2 [h3] (fabric-host recv)
//!  [h2] 10.2.0.2 -- eth2         eth4 ===== eth2
//!  hosts' links 100 Mb/s, uplinks 20 Mb/s; leaf1: 10.3.0.0/24 via both uplinks
//! ```
//!
//! The uplinks are the bottleneck (each sender offers 50 Mb/s, which it
//! reaches easily on a loaded machine; PFC holds it to what its path
//! carries). The group's mode comes from `qos.dlb.groups` (by its next
//! hops). With `ecmp` both flows share one uplink: over the same interval
//! of the steady state, the uplinks' byte counters add up to one link's
//! rate. With `flowlet` or `spray` they add up to at least 1.8 times that,
//! and with `spray` the receiver counts the disorder the two paths made and
//! delivers everything in order.

use std::time::{Duration, Instant};

use fabric_tests::fabric_host::{FabricHost, send_args, show, start_at, tm_drops, u64_of};
use fabric_tests::{Netns, Switchd, require_root_and_tools, veth};

const BYTES: u64 = 8 << 20;
const UPLINKS: [&str; 2] = ["eth3", "eth4"];
/// The uplinks' line rate, b/s.
const UPLINK_BPS: u64 = 20_000_000;
/// What each sender offers.
const SENDER_RATE: &str = "50M";
/// The interval the uplinks' counters are compared over: from this long
/// after the senders start (past the first flowlets' moves) ...
const MEASURE_FROM: Duration = Duration::from_millis(700);
/// ... for this long (the flows last 3.4 s even with both uplinks).
const MEASURE_FOR: Duration = Duration::from_millis(1500);

fn port(name: &str, address: &str, speed: &str) -> String {
    format!("  - {{name: {name}, mode: routed, addresses: [{address}], mtu: 9100, speed: {speed}, cable-length: 5}}\n")
}

fn qos(group_mode: &str) -> String {
    format!(
        "qos:\n  preset: roce\n  pfc: {{priorities: [3, 4], response-ns: 20000000}}\n  \
         dlb: {{mode: ecmp, groups: [{{next-hops: [10.0.1.1, 10.0.2.1], mode: {group_mode}}}]}}\n"
    )
}

fn leaf1(group_mode: &str) -> String {
    let mut yaml = String::from("name: leaf1\nports:\n");
    yaml.push_str(&port("eth1", "10.1.0.1/24", "100M"));
    yaml.push_str(&port("eth2", "10.2.0.1/24", "100M"));
    yaml.push_str(&port("eth3", "10.0.1.0/31", "20M"));
    yaml.push_str(&port("eth4", "10.0.2.0/31", "20M"));
    yaml.push_str("routes:\n  - {prefix: 10.3.0.0/24, next_hops: [10.0.1.1, 10.0.2.1]}\n");
    yaml + &qos(group_mode)
}

fn leaf2() -> String {
    let mut yaml = String::from("name: leaf2\nports:\n");
    yaml.push_str(&port("eth1", "10.0.1.1/31", "20M"));
    yaml.push_str(&port("eth2", "10.0.2.1/31", "20M"));
    yaml.push_str(&port("eth3", "10.3.0.1/24", "100M"));
    yaml.push_str("routes:\n  - {prefix: 10.0.0.0/14, next_hops: [10.0.1.0, 10.0.2.0]}\n");
    yaml + "qos:\n  preset: roce\n  pfc: {priorities: [3, 4], response-ns: 20000000}\n"
}

struct Lab {
    hosts: Vec<Netns>,
    leaf1: Switchd,
    leaf2: Switchd,
    l1: Netns,
    _l2: Netns,
}

impl Lab {
    fn start() -> Lab {
        let (l1, l2) = (Netns::new("qdl1"), Netns::new("qdl2"));
        let hosts: Vec<Netns> = (1..=3).map(|n| Netns::new(&format!("qdh{n}"))).collect();
        veth(&hosts[0], "eth1", &l1, "eth1");
        veth(&hosts[1], "eth1", &l1, "eth2");
        veth(&l1, "eth3", &l2, "eth1");
        veth(&l1, "eth4", &l2, "eth2");
        veth(&hosts[2], "eth1", &l2, "eth3");
        for (ns, ifname) in [(&l1, "eth1"), (&l1, "eth2"), (&l1, "eth3"), (&l1, "eth4")]
            .into_iter()
            .chain([(&l2, "eth1"), (&l2, "eth2"), (&l2, "eth3")])
            .chain(hosts.iter().map(|h| (h, "eth1")))
        {
            ns.ip(&["link", "set", ifname, "mtu", "9100"]);
        }
        for (n, host) in hosts.iter().enumerate() {
            let n = n + 1;
            host.host_setup("eth1", &format!("10.{n}.0.2/24"), Some(&format!("10.{n}.0.1")));
        }
        let leaf2 = Switchd::start(&l2, &leaf2());
        let leaf1 = Switchd::start(&l1, &leaf1("ecmp"));
        let lab = Lab { hosts, leaf1, leaf2, l1, _l2: l2 };
        lab.wait_reachable();
        lab
    }

    /// Every host reaches h3, and each leaf has resolved both of its ECMP
    /// next hops (a packet sprayed to an unresolved one would wait for ARP,
    /// or be dropped, at the start of the flow).
    fn wait_reachable(&self) {
        for n in 0..2 {
            assert!(self.hosts[n].ping_until("10.3.0.2", Duration::from_secs(15)), "h{} -> h3", n + 1);
        }
        for (host, next_hops) in [(0, ["10.0.1.1", "10.0.2.1"]), (2, ["10.0.1.0", "10.0.2.0"])] {
            for hop in next_hops {
                assert!(self.hosts[host].ping_until(hop, Duration::from_secs(15)), "h{} -> {hop}", host + 1);
            }
        }
    }

    fn restart_leaf1(&mut self, group_mode: &str) {
        self.leaf1.stop();
        self.leaf1 = Switchd::start(&self.l1, &leaf1(group_mode));
        self.wait_reachable();
    }

    /// Bytes leaf1 sent out of each uplink.
    fn uplink_bytes(&self) -> [u64; 2] {
        let rows = show(&self.leaf1, &["interfaces", "counters"]);
        UPLINKS.map(|name| {
            let row = rows.as_array().unwrap().iter().find(|r| r["iface"] == name).unwrap();
            u64_of(row, "tx_bytes")
        })
    }

    /// [`Self::uplink_bytes`] (live counters, read under the shim's lock)
    /// and when they were read: the middle of the `swcli` call, which
    /// takes tens of milliseconds on a loaded machine.
    fn uplink_bytes_at(&self) -> (Instant, [u64; 2]) {
        let before = Instant::now();
        let bytes = self.uplink_bytes();
        (before + (Instant::now() - before) / 2, bytes)
    }

    /// The uplink the static hash gives host `n`'s flow from `src_port`:
    /// a short burst, and the uplink whose counter grew by most of it.
    fn uplink_of(&self, n: usize, src_port: u16) -> usize {
        let before = self.uplink_bytes();
        // The sender's go-back-N completes only on the receiver's ACKs.
        let bytes = 256u64 << 10;
        let receiver =
            FabricHost::start(&self.hosts[2], &["recv", "--expect-bytes", &bytes.to_string(), "--idle-ms", "1500"]);
        std::thread::sleep(Duration::from_millis(300));
        let args = send_args("10.3.0.2", "50M", bytes, 26, 90 + n as u32, &["--src-port", &src_port.to_string()]);
        FabricHost::start_owned(&self.hosts[n - 1], &args).report(Duration::from_secs(30));
        receiver.report(Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(300));
        let after = self.uplink_bytes();
        let grown = [after[0] - before[0], after[1] - before[1]];
        let uplink = usize::from(grown[1] > grown[0]);
        assert!(grown[uplink] > 200 << 10, "a 256 KiB burst from h{n} went nowhere: {grown:?}");
        uplink
    }

    /// Both elephants at once (h1 from `ports[0]`, h2 from `ports[1]`): the
    /// receiver's report, the bytes on each uplink over the whole run, and
    /// the uplinks' rates (b/s) over the measured interval.
    fn elephants(&self, ports: [u16; 2]) -> Elephants {
        let expect = (2 * BYTES).to_string();
        let receiver = FabricHost::start(&self.hosts[2], &["recv", "--expect-bytes", &expect, "--idle-ms", "1500"]);
        std::thread::sleep(Duration::from_millis(300));
        let before = self.uplink_bytes();
        let lead = Duration::from_millis(1500);
        let (start, started) = (start_at(lead), Instant::now() + lead);
        let senders: Vec<FabricHost> = (0..2)
            .map(|i| {
                let port = ports[i].to_string();
                let extra = ["--src-port", port.as_str(), "--start-at-unix-ms", start.as_str()];
                let args = send_args("10.3.0.2", SENDER_RATE, BYTES, 26, i as u32 + 1, &extra);
                FabricHost::start_owned(&self.hosts[i], &args)
            })
            .collect();
        // Both uplinks' counters read together at the two ends of the interval.
        std::thread::sleep((started + MEASURE_FROM).saturating_duration_since(Instant::now()));
        let (from, from_bytes) = self.uplink_bytes_at();
        std::thread::sleep(MEASURE_FOR);
        let (to, to_bytes) = self.uplink_bytes_at();
        let seconds = (to - from).as_secs_f64();
        let window_bps = [0, 1].map(|i| ((to_bytes[i] - from_bytes[i]) as f64 * 8.0 / seconds) as u64);
        let mut sender_rates = Vec::new();
        for sender in senders {
            let report = sender.report(Duration::from_secs(60));
            assert!(report["completed"].as_bool().unwrap(), "{report}");
            sender_rates.push(u64_of(&report, "rate_bps"));
        }
        eprintln!("senders' wire rates {sender_rates:?} b/s");
        let received = receiver.report(Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(300));
        let after = self.uplink_bytes();
        let context = || {
            format!(
                "{received}\nleaf1 drops {:?}, leaf2 drops {:?}\nleaf1:\n{}\nleaf2:\n{}",
                tm_drops(&self.leaf1),
                tm_drops(&self.leaf2),
                self.leaf1.swcli(&["show", "interfaces", "counters"]),
                self.leaf2.swcli(&["show", "interfaces", "counters"])
            )
        };
        assert_eq!(u64_of(&received, "delivered_bytes"), 2 * BYTES, "{}", context());
        for switchd in [&self.leaf1, &self.leaf2] {
            assert!(tm_drops(switchd).iter().all(|(_, n)| *n == 0), "{}", context());
        }
        Elephants { received, bytes: [after[0] - before[0], after[1] - before[1]], window_bps }
    }
}

struct Elephants {
    received: serde_json::Value,
    /// Each uplink's bytes over the whole run.
    bytes: [u64; 2],
    /// Each uplink's rate over the measured interval, b/s.
    window_bps: [u64; 2],
}

impl Elephants {
    fn total_bps(&self) -> u64 {
        self.window_bps.iter().sum()
    }
}

#[test]
fn flowlet_and_spray_use_both_uplinks_where_ecmp_uses_one() {
    if !require_root_and_tools("qos_dlb", &["ip", "ping"]) {
        return;
    }
    let mut lab = Lab::start();
    // Two flows the static hash puts on the same uplink.
    let h1_port = 50_000;
    let uplink = lab.uplink_of(1, h1_port);
    let h2_port = (50_000..50_032)
        .find(|&port| lab.uplink_of(2, port) == uplink)
        .expect("no source port of h2 hashes onto h1's uplink in 32 tries");

    let ecmp = lab.elephants([h1_port, h2_port]);
    let total: u64 = ecmp.bytes.iter().sum();
    assert!(
        ecmp.bytes[1 - uplink] < total / 50,
        "ECMP did not keep both flows on {}: {:?}",
        UPLINKS[uplink],
        ecmp.bytes
    );
    // One link's rate: on the wire each frame also takes preamble, FCS and
    // gap, which the counters do not count (about 4% at these sizes); the
    // interval's ends are known to half a `swcli` call (up to 5% of it).
    let ecmp_bps = ecmp.total_bps();
    assert!(
        (UPLINK_BPS * 8 / 10..=UPLINK_BPS * 105 / 100).contains(&ecmp_bps),
        "ECMP's uplinks carried {:?} b/s, not one link's {UPLINK_BPS}",
        ecmp.window_bps
    );
    let dlb = show(&lab.leaf1, &["dlb"]);
    assert_eq!(dlb["groups"][0]["mode"], "static", "{dlb}");

    let mut summary = format!("ecmp: uplinks {:?} b/s = {ecmp_bps} b/s", ecmp.window_bps);
    for mode in ["flowlet", "spray"] {
        lab.restart_leaf1(mode);
        let run = lab.elephants([h1_port, h2_port]);
        let (received, bps) = (&run.received, run.total_bps());
        assert!(
            bps * 10 >= ecmp_bps * 18,
            "{mode}: the uplinks carried {:?} b/s = {bps}, not 1.8x ECMP's {ecmp_bps} (bytes {:?})\n{received}",
            run.window_bps,
            run.bytes
        );
        let dlb = show(&lab.leaf1, &["dlb"]);
        let group = &dlb["groups"][0];
        assert_eq!(group["mode"], mode, "{dlb}");
        assert!(u64_of(group, "packets") > 0, "{dlb}");
        if mode == "flowlet" {
            assert!(u64_of(group, "moves") > 0, "no flowlet moved\n{dlb}");
        }
        if mode == "spray" {
            // The two paths' queues differ, so packets overtook each other,
            // and the receiver put them back in order within its window.
            assert!(u64_of(received, "out_of_order") > 0, "spray made no disorder?\n{received}");
            assert!(u64_of(received, "reordered_delivered") > 0, "{received}");
        }
        assert_eq!(u64_of(received, "beyond_window"), 0, "{mode}: {received}");
        summary.push_str(&format!(
            "; {mode}: uplinks {:?} b/s = {bps} b/s ({:.2}x ECMP), goodput {} b/s, out of order {} (max distance {})",
            run.window_bps,
            bps as f64 / ecmp_bps as f64,
            u64_of(received, "goodput_bps"),
            u64_of(received, "out_of_order"),
            u64_of(received, "max_reorder_distance")
        ));
    }
    eprintln!("{summary}");
}
