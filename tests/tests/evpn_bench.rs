//! The measurement behind `scripts/bench-evpn` (ignored by default: run
//! with `--ignored`): EVPN type 2 routes from one GoBGP peer into FRR
//! (bgpd + zebra with a kernel bridge and VXLAN device, `advertise-all-vni`)
//! and into `switchd` (our speaker and the soft backend), one after the
//! other in one run; for each, the seconds from session Established until
//! every MAC is in forwarding state (FRR: the kernel's `bridge fdb` on the
//! VXLAN device, polled once a second; ours: the shim's FDB,
//! `switch_fdb_entries` on the metrics endpoint, polled every 50 ms), the
//! CPU time the receiver's processes spent meanwhile, and the memory per route (peak RSS minus idle RSS, divided by
//! the routes; FRR's is bgpd's plus zebra's, the kernel's FDB not counted).
//!
//! The table: `BGP_BENCH_ROUTES` routes (default 100,000) in VNI 100, half
//! MAC routes and half MAC+IP routes for the same MACs (so routes / 2 FDB
//! entries). GoBGP's CLI adds a route per call (~30 ms), so the routes reach
//! GoBGP's global RIB over a BGP session from this test (UPDATEs packed by
//! `bgp_evpn::packet`) before any receiver starts.
//!
//! ```text
//!   [this test] --127.0.0.1-- [feeder: gobgpd AS65100] eth1 ---- eth1 [frr: bgpd + zebra, br100 + vx100]
//!                                                      eth2 ---- eth1 [ours: switchd, VLAN 100 = VNI 100]
//! ```
//!
//! `BGP_BENCH_FEEDER=direct` leaves GoBGP out: this test listens as the
//! feeder itself and sends each receiver the same UPDATEs, timed from the
//! end of the handshake (GoBGP took 87-114 s to take in 10,000 EVPN routes
//! from a peer, against ~1 s for 2,000: its ingestion grows faster than
//! linearly, which puts 100,000 out of reach).
//!
//! Environment: `BGP_BENCH_ROUTES`, `BGP_BENCH_ONLY` (`frr` or `ours`),
//! `BGP_BENCH_BEFORE` (another `switchd` binary, measured as a third
//! receiver `before` between FRR and ours: old and new in one run),
//! `BGP_BENCH_TIMEOUT` (seconds), `BGP_BENCH_OUT` (a file the results are
//! appended to as one JSON line per receiver).

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpStream};
use std::time::{Duration, Instant};

use bgp_evpn::packet::evpn::{Esi, EvpnPathData, EvpnRoute, ExtCommunity, MacAddr, RouteDistinguisher, tunnel_type};
use bgp_evpn::packet::message::frame_len;
use bgp_evpn::packet::update::{encode_end_of_rib, pack_announce};
use bgp_evpn::packet::{AfiSafi, AsPath, Capability, DecodeContext, Family, Message, Nlri, Open, Origin, PathAttrs};
use fabric_tests::frr::{Frr, proc_status_kib};
use fabric_tests::gobgp::{Gobgp, GobgpConfig, GobgpNeighbor};
use fabric_tests::{Netns, Switchd, veth};

const INJECTOR_AS: u32 = 65099;
const FEEDER_AS: u32 = 65100;
const FRR_AS: u32 = 65001;
const OURS_AS: u32 = 65003;
const VNI: u32 = 100;
/// The VTEP the routes name (the injector's; GoBGP passes it on).
const REMOTE_VTEP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
const METRICS: &str = "127.0.0.1:9417";
/// The injector's hold time. Not 0: GoBGP's write deadline is the hold
/// time, so with 0 its every write to the injector times out.
const HOLD_TIME: u16 = 240;

/// What one receiver did.
struct LoadResult {
    receiver: &'static str,
    routes: u64,
    macs: u64,
    /// From Established to every MAC in forwarding state.
    seconds: f64,
    first_mac_seconds: f64,
    /// User + system CPU seconds the receiver's processes spent over
    /// `seconds` (FRR: bgpd and zebra): apart from the wall time, which the
    /// other processes of a shared machine stretch, the work itself.
    cpu_seconds: f64,
    /// The 1-minute load average when the receiver was loaded.
    load: f64,
    idle_rss_kib: u64,
    peak_kib: u64,
}

impl LoadResult {
    fn print(&self) {
        let per_route = (self.peak_kib.saturating_sub(self.idle_rss_kib) * 1024) as f64 / self.routes as f64;
        println!(
            "RESULT {:<5} routes={} macs={} fdb_seconds={:.2} (first MAC {:.2}) cpu_seconds={:.2} load={:.1} peak_rss={:.1} MiB (idle {:.1} MiB) ~{:.0} bytes/route",
            self.receiver,
            self.routes,
            self.macs,
            self.seconds,
            self.first_mac_seconds,
            self.cpu_seconds,
            self.load,
            self.peak_kib as f64 / 1024.0,
            self.idle_rss_kib as f64 / 1024.0,
            per_route
        );
        if let Ok(path) = std::env::var("BGP_BENCH_OUT") {
            let line = serde_json::json!({
                "receiver": self.receiver,
                "routes": self.routes,
                "macs": self.macs,
                "fdb_seconds": self.seconds,
                "first_mac_seconds": self.first_mac_seconds,
                "cpu_seconds": self.cpu_seconds,
                "load": self.load,
                "idle_rss_kib": self.idle_rss_kib,
                "peak_kib": self.peak_kib,
                "bytes_per_route": per_route,
            });
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).expect("open BGP_BENCH_OUT");
            writeln!(f, "{line}").expect("write BGP_BENCH_OUT");
        }
    }
}

/// User + system CPU seconds `pid` (all its threads) has run so far, from
/// `/proc/PID/stat` (clock ticks: 10 ms steps); 0 if it is gone.
fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0.0 };
    // The fields after the command name, which is in parentheses and may
    // hold spaces: the first is field 3 (state); utime is 14, stime 15.
    let Some((_, rest)) = stat.rsplit_once(')') else { return 0.0 };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    (ticks(11) + ticks(12)) as f64 / per_second as f64
}

/// The 1-minute load average.
fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg").ok().and_then(|l| l.split_whitespace().next()?.parse().ok()).unwrap_or(0.0)
}

/// The i-th MAC of the table (locally administered).
fn mac(i: u32) -> MacAddr {
    let b = i.to_be_bytes();
    MacAddr([0x02, 0x77, b[0], b[1], b[2], b[3]])
}

/// The table: for each of `macs` MACs a MAC route and a MAC+IP route
/// (100.64.0.0/10 addresses), RD 10.77.0.1:100.
fn table(macs: u32) -> Vec<Nlri> {
    let rd = RouteDistinguisher::Ipv4 { addr: REMOTE_VTEP, number: VNI as u16 };
    (0..macs)
        .flat_map(|i| {
            let ip = IpAddr::V4(Ipv4Addr::from(0x6440_0000 + i));
            [None, Some(ip)].map(|ip| {
                Nlri::Evpn(EvpnRoute::MacIpAdvertisement {
                    rd,
                    esi: Esi::ZERO,
                    ethernet_tag: 0,
                    mac: mac(i),
                    ip,
                    label1: VNI,
                    label2: None,
                })
            })
        })
        .collect()
}

/// Reads one whole BGP message from `stream` into `buf` and decodes it.
fn read_message(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Message {
    loop {
        if let Some(len) = frame_len(buf, 4096).expect("a BGP message from the peer")
            && buf.len() >= len
        {
            let message = Message::decode(&buf[..len], &DecodeContext::default()).expect("decode");
            buf.drain(..len);
            return message;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).expect("read from GoBGP");
        assert!(n > 0, "GoBGP closed the injector's session");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Opens an EVPN session to GoBGP (in `ns`, on 127.0.0.1) and sends it
/// `routes` (see [`feed`]); the session stays up while the stream lives.
fn inject(ns: &Netns, routes: &[Nlri]) -> TcpStream {
    let stream = ns.enter(|| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match TcpStream::connect("127.0.0.1:179") {
                Ok(s) => return s,
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
                Err(e) => panic!("connect to GoBGP: {e}"),
            }
        }
    });
    feed(stream, INJECTOR_AS, routes, None)
}

/// The feeder without GoBGP (`BGP_BENCH_FEEDER=direct`) for one receiver.
struct DirectFeeder {
    go: std::sync::mpsc::Sender<()>,
    sent: std::sync::mpsc::Receiver<Instant>,
}

impl DirectFeeder {
    /// Lets the receiver's session come up (after its idle memory is
    /// read); returns when the table started to go out, after the
    /// handshake: the start of the measurement.
    fn start(&self) -> Instant {
        self.go.send(()).expect("the feeder thread runs");
        self.sent.recv().expect("the feeder sent the table")
    }
}

/// Listens on `address`:179 in `ns` as the feeder's AS; once told to go,
/// accepts the receiver and sends it `routes`, from a thread that keeps
/// the session up.
fn serve_directly(ns: &Netns, address: &str, routes: Vec<Nlri>) -> DirectFeeder {
    let listener = ns.enter(|| std::net::TcpListener::bind((address, 179)).expect("bind the feeder's port 179"));
    let (go, go_rx) = std::sync::mpsc::channel();
    let (sent_tx, sent) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if go_rx.recv().is_err() {
            return;
        }
        let (stream, _) = listener.accept().expect("accept the receiver");
        let _session = feed(stream, FEEDER_AS, &routes, Some(sent_tx));
        loop {
            std::thread::park();
        }
    });
    DirectFeeder { go, sent }
}

/// Runs the session on `stream` as `my_as`: OPEN (L2VPN EVPN), KEEPALIVE,
/// then `routes` with VXLAN encapsulation and the route target
/// `FEEDER_AS:VNI` packed as a speaker packs them, and End-of-RIB; then
/// reads and drops what the peer sends and keeps the session up.
fn feed(
    mut stream: TcpStream,
    my_as: u32,
    routes: &[Nlri],
    sent: Option<std::sync::mpsc::Sender<Instant>>,
) -> TcpStream {
    let ctx = DecodeContext::default();
    let open = Open::new(my_as, HOLD_TIME, REMOTE_VTEP, vec![Capability::Multiprotocol(AfiSafi::L2VPN_EVPN)]);
    stream.write_all(&Message::Open(open).to_bytes(&ctx)).expect("send OPEN");
    let mut buf = Vec::new();
    match read_message(&mut stream, &mut buf) {
        Message::Open(_) => {}
        other => panic!("the peer answered {other:?}"),
    }
    stream.write_all(&Message::Keepalive.to_bytes(&ctx)).expect("send KEEPALIVE");
    match read_message(&mut stream, &mut buf) {
        Message::Keepalive => {}
        other => panic!("the peer answered {other:?}"),
    }
    let attrs = PathAttrs {
        origin: Origin::Igp,
        as_path: AsPath::from_sequence([my_as]),
        next_hop: Some(IpAddr::V4(REMOTE_VTEP)),
        ext_communities: vec![
            ExtCommunity::RouteTargetAs2 { asn: FEEDER_AS as u16, number: VNI }.to_u64(),
            ExtCommunity::Encapsulation { tunnel_type: tunnel_type::VXLAN }.to_u64(),
        ],
        evpn: Some(EvpnPathData { esi: Esi::ZERO, label1: VNI, label2: None, gateway: None }),
        ..Default::default()
    };
    let mut out = Vec::with_capacity(routes.len() * 48);
    pack_announce(&attrs, Family::L2vpnEvpn, routes, &ctx, 4096, &mut out);
    encode_end_of_rib(Family::L2vpnEvpn, &mut out);
    if let Some(sent) = sent {
        let _ = sent.send(Instant::now());
    }
    stream.write_all(&out).expect("send the table");
    // GoBGP sends the receivers' routes here too: read and drop them.
    let mut drain = stream.try_clone().expect("clone the injector's socket");
    std::thread::spawn(move || {
        let mut sink = [0u8; 65536];
        while matches!(drain.read(&mut sink), Ok(n) if n > 0) {}
    });
    let mut keepalive = stream.try_clone().expect("clone the injector's socket");
    std::thread::spawn(move || {
        let message = Message::Keepalive.to_bytes(&DecodeContext::default());
        loop {
            // A third of the 90 s GoBGP is configured with for the injector.
            std::thread::sleep(Duration::from_secs(10));
            if keepalive.write_all(&message).is_err() {
                return;
            }
        }
    });
    stream
}

/// Polls `current` until it reaches `count`, printing progress every five
/// seconds; returns (first nonzero, reached). Panics after `timeout`.
fn poll_count(
    what: &str,
    timeout: Duration,
    every: Duration,
    count: u64,
    mut current: impl FnMut() -> u64,
) -> (Instant, Instant) {
    let start = Instant::now();
    let mut first = None;
    let mut next_report = start + Duration::from_secs(5);
    loop {
        let n = current();
        if n > 0 && first.is_none() {
            first = Some(Instant::now());
        }
        if n >= count {
            return (first.unwrap_or_else(Instant::now), Instant::now());
        }
        if Instant::now() >= next_report {
            println!("  {what}: {n} of {count} after {:.0}s", start.elapsed().as_secs_f64());
            next_report += Duration::from_secs(5);
        }
        assert!(start.elapsed() < timeout, "{what}: {n} of {count} after {timeout:?}");
        std::thread::sleep(every);
    }
}

fn wait_established(timeout: Duration, mut up: impl FnMut() -> bool) -> Instant {
    let deadline = Instant::now() + timeout;
    while !up() {
        assert!(Instant::now() < deadline, "session to the feeder not Established");
        std::thread::sleep(Duration::from_millis(20));
    }
    Instant::now()
}

fn bench_frr(ns: &Netns, routes: u64, macs: u64, timeout: Duration, direct: Option<&DirectFeeder>) -> LoadResult {
    ns.ip(&["addr", "add", "10.77.0.11/32", "dev", "lo"]);
    // The routes' VTEP, reachable for bgpd's next-hop tracking.
    ns.ip(&["route", "add", &format!("{REMOTE_VTEP}/32"), "via", "10.77.1.1"]);
    ns.ip(&["link", "add", "br100", "type", "bridge"]);
    ns.ip(&[
        "link",
        "add",
        "vx100",
        "type",
        "vxlan",
        "id",
        "100",
        "local",
        "10.77.0.11",
        "dstport",
        "4789",
        "nolearning",
    ]);
    ns.ip(&["link", "set", "vx100", "master", "br100"]);
    for dev in ["vx100", "br100"] {
        ns.ip(&["link", "set", dev, "up"]);
    }
    // As bgp_bench: no advertising the table back to the feeder.
    let config = format!(
        "frr defaults datacenter
hostname frr
router bgp {FRR_AS}
 bgp router-id 10.77.0.11
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 neighbor 10.77.1.1 remote-as {FEEDER_AS}
 neighbor 10.77.1.1 timers 30 90
 neighbor 10.77.1.1 sender-as-path-loop-detection
 address-family l2vpn evpn
  neighbor 10.77.1.1 activate
  advertise-all-vni
 exit-address-family
exit
"
    );
    let frr = Frr::start_with_zebra(ns, &config);
    let zebra = frr.zebra_pid().expect("zebra runs");
    let rss = |field| proc_status_kib(frr.pid(), field).unwrap_or(0) + proc_status_kib(zebra, field).unwrap_or(0);
    let cpu = || cpu_seconds(frr.pid()) + cpu_seconds(zebra);
    let idle_rss_kib = rss("VmRSS");
    let cpu_before = cpu();
    let established = match direct {
        Some(feeder) => feeder.start(),
        None => wait_established(timeout, || frr.neighbor_state("10.77.1.1").as_deref() == Some("Established")),
    };
    std::thread::sleep(Duration::from_secs(5));

    // `bridge fdb` dumps the kernel's table: once a second.
    let (first, loaded) = poll_count("FRR kernel FDB", timeout, Duration::from_secs(1), macs, || {
        let fdb = ns.exec(&["bridge", "fdb", "show", "dev", "vx100"]);
        fdb.lines().filter(|l| l.contains(" dst ") && !l.starts_with("00:00:00:00:00:00")).count() as u64
    });
    LoadResult {
        receiver: "frr",
        routes,
        macs,
        seconds: (loaded - established).as_secs_f64(),
        first_mac_seconds: (first - established).as_secs_f64(),
        cpu_seconds: cpu() - cpu_before,
        load: load_average(),
        idle_rss_kib,
        peak_kib: rss("VmHWM"),
    }
}

/// `switch_fdb_entries` from switchd's metrics endpoint in `ns`.
fn shim_fdb_entries(ns: &Netns) -> u64 {
    let text = ns.enter(|| {
        let mut stream = TcpStream::connect(METRICS).ok()?;
        stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: sw\r\n\r\n").ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).ok()?;
        Some(text)
    });
    text.unwrap_or_default()
        .lines()
        // `switch_fdb_entries{} 1000`
        .find_map(|l| l.strip_prefix("switch_fdb_entries")?.rsplit_once(' '))
        .and_then(|(_, v)| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// Our receiver: `switchd` (or `binary`, a before build) in `ns`, its
/// uplink `10.77.{subnet}.2/30` to the feeder's `.1`.
fn bench_ours(
    ns: &Netns,
    routes: u64,
    macs: u64,
    timeout: Duration,
    direct: Option<&DirectFeeder>,
    (receiver, subnet, binary): (&'static str, u8, Option<&std::path::Path>),
) -> LoadResult {
    let config = format!(
        "name: ours
lldp: {{ enabled: false }}
loopback: [10.77.0.13/32]
ports:
  - {{ name: eth1, mode: routed, addresses: [10.77.{subnet}.2/30] }}
vlans:
  - {{ id: 100 }}
vxlan:
  source: 10.77.0.13
  vnis: [{{ vni: {VNI}, vlan: 100 }}]
bgp:
  asn: {OURS_AS}
  timers: {{ hold_time: 90 }}
  neighbors:
    - {{ address: 10.77.{subnet}.1, remote_as: {FEEDER_AS}, families: [l2vpn-evpn] }}
  evpn:
    vtep_ip: 10.77.0.13
    vnis: [{{ vni: {VNI} }}]
metrics: {{ listen: {METRICS} }}
"
    );
    let switchd = match binary {
        Some(binary) => Switchd::start_binary(ns, &config, binary),
        None => Switchd::start(ns, &config),
    };
    let pid = switchd.process.id();
    let idle_rss_kib = proc_status_kib(pid, "VmRSS").unwrap_or(0);
    let cpu_before = cpu_seconds(pid);
    let established = match direct {
        Some(feeder) => feeder.start(),
        None => wait_established(timeout, || {
            switchd.swcli(&["show", "bgp", "summary", "--json"]).contains("\"Established\"")
        }),
    };
    // Every 50 ms: the metrics endpoint counts the FDB without listing it.
    let (first, loaded) =
        poll_count("ours shim FDB", timeout, Duration::from_millis(50), macs, || shim_fdb_entries(ns));
    let result = LoadResult {
        receiver,
        routes,
        macs,
        seconds: (loaded - established).as_secs_f64(),
        first_mac_seconds: (first - established).as_secs_f64(),
        cpu_seconds: cpu_seconds(pid) - cpu_before,
        load: load_average(),
        idle_rss_kib,
        peak_kib: proc_status_kib(pid, "VmHWM").unwrap_or(0),
    };
    let vni = switchd.swcli(&["show", "evpn", "vni", "--json"]);
    println!("  {receiver}: show evpn vni {vni}");
    result
}

#[test]
#[ignore = "benchmark: run through scripts/bench-evpn"]
fn evpn_type2_load() {
    if !fabric_tests::frr::frr_available("evpn_type2_load")
        || !fabric_tests::gobgp::gobgp_available("evpn_type2_load")
        || !fabric_tests::require_root_and_tools("evpn_type2_load", &["bridge"])
    {
        return;
    }
    let routes: u32 = std::env::var("BGP_BENCH_ROUTES").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let macs = routes / 2;
    let routes = macs * 2;
    let only = std::env::var("BGP_BENCH_ONLY").ok();
    let runs = |receiver: &str| only.as_deref().is_none_or(|only| only.split(',').any(|o| o == receiver));
    let timeout =
        Duration::from_secs(std::env::var("BGP_BENCH_TIMEOUT").ok().and_then(|v| v.parse().ok()).unwrap_or(600));

    // A before build of switchd, measured in the same run as a third receiver.
    let before = std::env::var_os("BGP_BENCH_BEFORE").map(std::path::PathBuf::from);
    if let Some(path) = &before {
        assert!(path.is_file(), "BGP_BENCH_BEFORE: {} is no file", path.display());
    }

    let feeder_ns = Netns::new("ebg");
    let frr_ns = Netns::new("ebf");
    let ours_ns = Netns::new("ebo");
    let before_ns = Netns::new("ebp");
    veth(&feeder_ns, "eth1", &frr_ns, "eth1");
    veth(&feeder_ns, "eth2", &ours_ns, "eth1");
    veth(&feeder_ns, "eth3", &before_ns, "eth1");
    feeder_ns.ip(&["addr", "add", "10.77.1.1/30", "dev", "eth1"]);
    frr_ns.ip(&["addr", "add", "10.77.1.2/30", "dev", "eth1"]);
    feeder_ns.ip(&["addr", "add", "10.77.2.1/30", "dev", "eth2"]);
    feeder_ns.ip(&["addr", "add", "10.77.3.1/30", "dev", "eth3"]);
    feeder_ns.ip(&["link", "set", "lo", "up"]);

    let table = table(macs);
    // Kept to the end: GoBGP and its session to the injector.
    let mut _feeder = None;
    let mut direct = None;
    if std::env::var("BGP_BENCH_FEEDER").as_deref() == Ok("direct") {
        direct = Some((
            serve_directly(&feeder_ns, "10.77.1.1", table.clone()),
            serve_directly(&feeder_ns, "10.77.2.1", table.clone()),
            serve_directly(&feeder_ns, "10.77.3.1", table),
        ));
        println!("feeder: this test, directly ({routes} EVPN routes, {macs} MACs)");
    } else {
        let mut injector = GobgpNeighbor::new("127.0.0.1", INJECTOR_AS);
        injector.families = Vec::new();
        injector.evpn = true;
        injector.passive = true;
        injector.timers = (30, 90);
        let mut to_frr = GobgpNeighbor::new("10.77.1.2", FRR_AS);
        let mut to_ours = GobgpNeighbor::new("10.77.2.2", OURS_AS);
        let mut to_before = GobgpNeighbor::new("10.77.3.2", OURS_AS);
        for n in [&mut to_frr, &mut to_ours, &mut to_before] {
            n.families = Vec::new();
            n.evpn = true;
            n.timers = (30, 90);
        }
        let mut config = GobgpConfig::new(FEEDER_AS, "10.77.0.1").neighbor(injector).neighbor(to_frr).neighbor(to_ours);
        if before.is_some() {
            config = config.neighbor(to_before);
        }
        config.log_level = "info";
        let feeder = Gobgp::start(&feeder_ns, &config);
        let t = Instant::now();
        let session = inject(&feeder_ns, &table);
        let family = ["global", "rib", "summary", "-a", "evpn"];
        let loaded = fabric_tests::poll_until(timeout, Duration::from_millis(500), || {
            let text = feeder.cli(&family);
            text.contains(&format!("Destination: {routes},")).then_some(())
        });
        assert!(loaded.is_some(), "GoBGP holds: {}", feeder.cli(&family));
        println!("GoBGP loaded {routes} EVPN routes ({macs} MACs) in {:.2}s", t.elapsed().as_secs_f64());
        _feeder = Some((feeder, session));
    }

    if runs("frr") {
        bench_frr(&frr_ns, u64::from(routes), u64::from(macs), timeout, direct.as_ref().map(|d| &d.0)).print();
    }
    let (routes, macs) = (u64::from(routes), u64::from(macs));
    if let Some(binary) = &before {
        let feeder = direct.as_ref().map(|d| &d.2);
        bench_ours(&before_ns, routes, macs, timeout, feeder, ("before", 3, Some(binary))).print();
    }
    if runs("ours") {
        bench_ours(&ours_ns, routes, macs, timeout, direct.as_ref().map(|d| &d.1), ("ours", 2, None)).print();
    }
}
