//! The IB-like plane in namespaces: `switchd` switches with ports in
//! `mode: ib` and `fabric-host ib` endpoints on veth links.
//!
//! ```text
//! ha (eth1) -- (eth1) s1 (eth2) -- (eth1) s2 (eth2) -- (eth1) hb
//!                     s1 (eth3) -- (eth1) hc
//! ```
//!
//! 1. LIDs and LFTs set by hand with directed-route SMPs sent from ha's
//!    wire (the switches' agents program their engines): a fast sender
//!    into a slow receiver loses nothing and is held back by credits,
//!    ibping works; malformed SMPs get IBA's statuses from switchd.
//! 2. The SM embedded in s1 brings the plane up from nothing: every HCA
//!    gets a LID and goes Active, every pair pings, `swcli show ib sm`,
//!    `topology`, `lft`, `port` and `routes balance` report it.
//!
//! Needs root and `ip`; skipped otherwise (a failure under CI=true).

use std::process::Stdio;
use std::time::{Duration, Instant};

use fabric_tests::{Netns, ProcessGuard, Switchd, poll_until, require_root_and_tools, veth, workspace_binary};
use subnet_manager::packet::attributes::{LftBlock, LftBlockRepr, Notice, PortInfo, PortInfoRepr, PortState};
use subnet_manager::packet::smp::SmpRouting;
use subnet_manager::packet::{AttributeId, InvalidField, MadStatus, Method, SmpRepr};
use subnet_manager::transport::inband::{PacketSocket, decode_frame, encode_frame, wait_readable};

struct Fabric {
    ha: Netns,
    hb: Netns,
    hc: Netns,
    s1: Switchd,
    s2: Switchd,
    // The namespaces of the switches go after the daemons.
    _s1_ns: Netns,
    _s2_ns: Netns,
}

fn fabric(s1_extra: &str) -> Fabric {
    fabric_with(&["", "", ""], &["", ""], 24, s1_extra)
}

/// The fabric with extra settings per switch port (`ib_rate`) and
/// `buffer_blocks` per VL.
fn fabric_with(s1_ports: &[&str; 3], s2_ports: &[&str; 2], buffer_blocks: u16, s1_extra: &str) -> Fabric {
    let (s1_ns, s2_ns) = (Netns::new("ib1"), Netns::new("ib2"));
    let (ha, hb, hc) = (Netns::new("iha"), Netns::new("ihb"), Netns::new("ihc"));
    veth(&ha, "eth1", &s1_ns, "eth1");
    veth(&s1_ns, "eth2", &s2_ns, "eth1");
    veth(&s2_ns, "eth2", &hb, "eth1");
    veth(&s1_ns, "eth3", &hc, "eth1");
    let port = |n: usize, extra: &str| format!("  - {{ name: eth{n}, mode: ib, data_vls: 2{extra} }}\n");
    let s1_ports: String = s1_ports.iter().enumerate().map(|(i, extra)| port(i + 1, extra)).collect();
    let s2_ports: String = s2_ports.iter().enumerate().map(|(i, extra)| port(i + 1, extra)).collect();
    let s1 = Switchd::start(
        &s1_ns,
        &format!("name: s1\nports:\n{s1_ports}ib:\n  guid: 0x100\n  buffer_blocks: {buffer_blocks}\n{s1_extra}"),
    );
    let s2 = Switchd::start(
        &s2_ns,
        &format!("name: s2\nports:\n{s2_ports}ib:\n  guid: 0x200\n  buffer_blocks: {buffer_blocks}\n"),
    );
    Fabric { ha, hb, hc, s1, s2, _s1_ns: s1_ns, _s2_ns: s2_ns }
}

fn host(ns: &Netns, guid: &str, args: &[&str]) -> ProcessGuard {
    host_with(ns, guid, 24, args)
}

fn host_with(ns: &Netns, guid: &str, buffer_blocks: u16, args: &[&str]) -> ProcessGuard {
    let mut command = ns.command(workspace_binary("fabric-host").to_str().unwrap());
    let blocks = buffer_blocks.to_string();
    command
        .args(["ib", "--iface", "eth1", "--guid", guid, "--name", guid, "--data-vls", "2", "--buffer-blocks", &blocks])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    ProcessGuard::spawn("fabric-host", command)
}

/// The JSON lines a stopped `fabric-host` printed.
fn events(output: &std::process::Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&output.stdout).lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

fn event<'a>(events: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

/// Sends directed-route SMPs from ha's wire and reads their answers, as a
/// management tool on the host would (fabric-host's agent there ignores
/// answers that are not its own).
struct SmpTool {
    socket: PacketSocket,
    transaction: u64,
}

impl SmpTool {
    fn request(
        &mut self,
        method: Method,
        attribute: AttributeId,
        modifier: u32,
        path: &[u8],
        data: [u8; 64],
    ) -> SmpRepr {
        self.transaction += 1;
        let mut smp = SmpRepr::directed(method, self.transaction, attribute, modifier, path, data).unwrap();
        self.send(&mut smp, None)
    }

    /// Steps the SMP as the originating agent would (C14-9:1) and sends it,
    /// with its class version overwritten if asked.
    fn send(&mut self, smp: &mut SmpRepr, class_version: Option<u8>) -> SmpRepr {
        if let SmpRouting::DirectedRoute { hop_pointer, .. } = &mut smp.routing {
            *hop_pointer = 1;
        }
        let mut bytes = smp.to_bytes();
        if let Some(version) = class_version {
            bytes[2] = version;
        }
        let frame = encode_frame(&bytes, 0xffff, 0, self.socket.mac);
        let deadline = Instant::now() + Duration::from_secs(3);
        let mut buffer = vec![0u8; 4096];
        for _ in 0..3 {
            self.socket.send(&frame).unwrap();
            let resend = Instant::now() + Duration::from_millis(500);
            while Instant::now() < resend.min(deadline) {
                if wait_readable(&[&self.socket], Duration::from_millis(50)).unwrap().is_none() {
                    continue;
                }
                while let Some(len) = self.socket.try_recv(&mut buffer).unwrap() {
                    let Some((mut mad, _, _)) = decode_frame(&buffer[..len]) else { continue };
                    if mad[3] & 0x80 == 0 || mad[8..16] != smp.transaction_id.to_be_bytes() {
                        continue;
                    }
                    mad[2] = 1;
                    return SmpRepr::parse_bytes(&mad).unwrap();
                }
            }
        }
        panic!("no answer to {:?} {:?}", smp.method, smp.attribute_id);
    }

    /// Sends `smp` once and listens for `for_` without expecting an answer:
    /// every MAD seen on the wire meanwhile that is not ours (traps, the
    /// answers to others).
    fn send_unanswered(&mut self, smp: &mut SmpRepr, for_: Duration) -> Vec<SmpRepr> {
        if let SmpRouting::DirectedRoute { hop_pointer, .. } = &mut smp.routing {
            *hop_pointer = 1;
        }
        self.socket.send(&encode_frame(&smp.to_bytes(), 0xffff, 0, self.socket.mac)).unwrap();
        self.listen(for_, Some(smp.transaction_id))
    }

    /// The MADs arriving on the wire for `for_` (none answering
    /// `transaction`).
    fn listen(&mut self, for_: Duration, transaction: Option<u64>) -> Vec<SmpRepr> {
        let deadline = Instant::now() + for_;
        let mut buffer = vec![0u8; 4096];
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            if wait_readable(&[&self.socket], Duration::from_millis(50)).unwrap().is_none() {
                continue;
            }
            while let Some(len) = self.socket.try_recv(&mut buffer).unwrap() {
                let Some((mad, _, _)) = decode_frame(&buffer[..len]) else { continue };
                let Ok(smp) = SmpRepr::parse_bytes(&mad) else { continue };
                assert!(!(smp.method.is_response() && Some(smp.transaction_id) == transaction), "answered: {smp:?}");
                seen.push(smp);
            }
        }
        seen
    }

    fn set_lid(&mut self, path: &[u8], lid: u16) {
        let mut info = PortInfoRepr { lid, ..PortInfoRepr::default() };
        info.port_state = PortState::NoChange.into();
        let mut data = [0u8; 64];
        info.emit(&mut PortInfo::new_unchecked(&mut data[..]));
        let answer = self.request(Method::Set, AttributeId::PortInfo, 0, path, data);
        assert_eq!(answer.status, MadStatus::OK, "PortInfo Set along {path:?}");
    }

    /// Moves `port` (ignored by CAs) at the end of `path` to `state`: read,
    /// modify, write, as a CA's PortInfo carries its LID too.
    fn set_state(&mut self, path: &[u8], port: u32, state: PortState) {
        let answer = self.request(Method::Get, AttributeId::PortInfo, port, path, [0; 64]);
        let mut info = PortInfoRepr::parse(&PortInfo::new_unchecked(&answer.data[..])).unwrap();
        info.port_state = state.into();
        let mut data = [0u8; 64];
        info.emit(&mut PortInfo::new_unchecked(&mut data[..]));
        let answer = self.request(Method::Set, AttributeId::PortInfo, port, path, data);
        assert_eq!(answer.status, MadStatus::OK, "PortInfo {state:?} along {path:?} port {port}");
    }

    fn set_lft(&mut self, path: &[u8], routes: &[(u16, u8)]) {
        let mut ports = [0xff; 64];
        for &(lid, port) in routes {
            ports[usize::from(lid)] = port;
        }
        let mut data = [0u8; 64];
        LftBlockRepr { ports }.emit(&mut LftBlock::new_unchecked(&mut data[..]));
        let answer = self.request(Method::Set, AttributeId::LinearForwardingTable, 0, path, data);
        assert_eq!(answer.status, MadStatus::OK, "LFT Set along {path:?}");
    }
}

/// From ha's wire: LFTs, then LIDs (hb 2, hc 3, s1 10, s2 11 and ha 1 last),
/// then every port Armed and Active.
fn program_by_hand() -> SmpTool {
    let mut tool = SmpTool { socket: PacketSocket::open("eth1").unwrap(), transaction: 0x1000 };
    tool.set_lft(&[1], &[(1, 1), (2, 2), (3, 3), (11, 2)]);
    tool.set_lft(&[1, 2], &[(1, 1), (2, 2), (3, 1), (10, 1)]);
    tool.set_lid(&[1, 2, 2], 2);
    tool.set_lid(&[1, 3], 3);
    tool.set_lid(&[1], 10);
    tool.set_lid(&[1, 2], 11);
    tool.set_lid(&[1, 1], 1);
    // No data moves until every port on the way is Active (IBA 7.2); ha
    // last, as it starts sending then (a packet routed to a port not yet
    // Active is discarded).
    let ports: [(&[u8], &[u32]); 5] =
        [(&[1], &[1, 2, 3]), (&[1, 2], &[1, 2]), (&[1, 2, 2], &[0]), (&[1, 3], &[0]), (&[1, 1], &[0])];
    for state in [PortState::Armed, PortState::Active] {
        for (path, numbers) in ports {
            for &port in numbers {
                tool.set_state(path, port, state);
            }
        }
    }
    tool
}

/// M_Key (IBA 14.2.4) on s2, through switchd's agent: s2 gets a key at
/// protect level 2 and names ha (LID 1) its master SM; a Set with a wrong
/// key is not answered and changes nothing, and trap 256 comes to ha,
/// repeated until ha's TrapRepress (with the key) ends it.
fn m_key_protects_s2(tool: &mut SmpTool) {
    const KEY: u64 = 0x0102_0304_0506_0708;
    let answer = tool.request(Method::Get, AttributeId::PortInfo, 0, &[1, 2], [0; 64]);
    let mut info = PortInfoRepr::parse(&PortInfo::new_unchecked(&answer.data[..])).unwrap();
    info.port_state = PortState::NoChange.into();
    (info.m_key, info.m_key_protect_bits, info.master_sm_lid, info.subnet_timeout) = (KEY, 2, 1, 18);
    let mut data = [0u8; 64];
    info.emit(&mut PortInfo::new_unchecked(&mut data[..]));
    assert_eq!(tool.request(Method::Set, AttributeId::PortInfo, 0, &[1, 2], data).status, MadStatus::OK);

    // The wrong key: no answer, LID 11 stays, trap 256 from s2 to ha.
    let mut wrong = info;
    wrong.lid = 99;
    wrong.port_state = PortState::NoChange.into();
    wrong.emit(&mut PortInfo::new_unchecked(&mut data[..]));
    let mut smp = SmpRepr::directed(Method::Set, 0x3000, AttributeId::PortInfo, 0, &[1, 2], data).unwrap();
    smp.m_key = KEY ^ 0xff;
    let seen = tool.send_unanswered(&mut smp, Duration::from_millis(700));
    let traps: Vec<&SmpRepr> = seen.iter().filter(|m| m.method == Method::Trap).collect();
    assert_eq!(traps.len(), 1, "{seen:?}");
    let notice = Notice::new_checked(&traps[0].data[..]).unwrap();
    assert_eq!((notice.trap_number(), notice.issuer_lid()), (256, 11));
    assert_eq!(&notice.data_details()[14..22], &(KEY ^ 0xff).to_be_bytes(), "the offending M_Key");
    let trap = *traps[0];
    let mut get = SmpRepr::directed(Method::Get, 0x3001, AttributeId::PortInfo, 0, &[1, 2], [0; 64]).unwrap();
    get.m_key = KEY;
    let answer = tool.send(&mut get, None);
    let now = PortInfoRepr::parse(&PortInfo::new_unchecked(&answer.data[..])).unwrap();
    assert_eq!((now.lid, now.m_key_violations, now.m_key), (11, 1, KEY), "nothing changed, one violation");
    // A Get without the key at level 2 is a violation too.
    let mut get = SmpRepr::directed(Method::Get, 0x3002, AttributeId::NodeInfo, 0, &[1, 2], [0; 64]).unwrap();
    let mut seen = tool.send_unanswered(&mut get, Duration::from_millis(300));

    // Unrepressed, the first trap comes again after s2's subnet timeout
    // (4.096 us x 2^18, 1.07 s), then 2.14 s later; the TrapRepress with
    // the key ends both.
    seen.extend(tool.listen(Duration::from_millis(2500), None));
    assert!(seen.iter().any(|m| m.method == Method::Trap && m.transaction_id == trap.transaction_id), "{seen:?}");
    for transaction in [trap.transaction_id, trap.transaction_id + 1] {
        let mut repress = trap;
        (repress.method, repress.transaction_id, repress.m_key) = (Method::TrapRepress, transaction, KEY);
        tool.socket.send(&encode_frame(&repress.to_bytes(), 11, 1, tool.socket.mac)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let seen = tool.listen(Duration::from_millis(2500), None);
    assert!(seen.iter().all(|m| m.method != Method::Trap), "repressed, not repeated: {seen:?}");
}

#[test]
fn hand_set_lfts_carry_data_between_hcas_losing_nothing_to_a_slow_receiver() {
    if !require_root_and_tools("ib_plane", &["ip"]) {
        return;
    }
    let f = fabric("");
    let mut hb = host(&f.hb, "0xb0", &["--read-pps", "300"]);
    let mut hc = host(&f.hc, "0xc0", &[]);
    let mut ha =
        host(&f.ha, "0xa0", &["--send", "2", "--packets", "600", "--size", "256", "--ping", "3", "--count", "5"]);
    // Flow control exchanged on every link: all ports Init.
    let ports_up = poll_until(Duration::from_secs(10), Duration::from_millis(100), || {
        let rows = f.s1.show_rows("ib port");
        (rows.len() == 3 && rows.iter().all(|p| p["state"] == "init" && p["flow_control"] == true)).then_some(())
    });
    assert!(ports_up.is_some(), "{}", f.s1.swcli(&["show", "ib", "port"]));

    // LFTs by hand, then LIDs: hb 2, hc 3, s1 10, s2 11 and ha 1 last (it
    // starts sending once it has one).
    f.ha.enter(|| {
        let mut tool = program_by_hand();

        // Malformed SMPs: the IBA statuses, from switchd's agent.
        let answer = tool.request(Method::Get, AttributeId::Notice, 0, &[1], [0; 64]);
        assert_eq!(answer.status, MadStatus::invalid(InvalidField::MethodAttributeUnsupported));
        let answer = tool.request(Method::Send, AttributeId::NodeInfo, 0, &[1, 2], [0; 64]);
        assert_eq!(answer.status, MadStatus::invalid(InvalidField::MethodUnsupported));
        let mut smp = SmpRepr::directed(Method::Get, 0x2000, AttributeId::NodeInfo, 0, &[1, 2], [0; 64]).unwrap();
        let answer = tool.send(&mut smp, Some(2));
        assert_eq!(answer.status, MadStatus::invalid(InvalidField::BadVersion));
        let answer = tool.request(Method::Get, AttributeId::LinearForwardingTable, 0, &[1, 2], [0; 64]);
        assert_eq!(answer.status, MadStatus::OK);
        assert_eq!(&answer.data[..4], &[0xff, 1, 2, 1], "s2's LFT reads back");

        m_key_protects_s2(&mut tool);
    });
    // s2's agent counted what m_key_protects_s2 did: two violations, two
    // traps 256, each repressed, the first after a repeat.
    let counters = f.s2.show_json("ib counters");
    let agent = &counters["agent"];
    assert_eq!(agent["m_key_violations"], 2, "{counters}");
    assert_eq!((agent["traps_sent"].as_u64(), agent["traps_repressed"].as_u64()), (Some(2), Some(2)), "{counters}");
    assert!(agent["traps_resent"].as_u64().unwrap() >= 1, "{counters}");
    assert_eq!(agent["bad_version"], 1, "{counters}");
    let lft = f.s1.show_json("ib lft");
    assert_eq!(lft["lid"], 10);
    assert_eq!(lft["entries"].as_array().unwrap().len(), 4, "{lft}");

    // ha sends 600 packets as fast as credits allow; hb reads 300 a second,
    // so the last cannot arrive before ~1.8 s (what the buffers on the way
    // hold, about 20 packets, aside).
    let done = poll_until(Duration::from_secs(60), Duration::from_millis(200), || {
        let rows = f.s2.show_rows("ib port");
        (rows[1]["counters"]["xmit_packets"].as_u64().unwrap_or(0) > 600).then_some(())
    });
    assert!(done.is_some(), "{}", f.s2.swcli(&["show", "ib", "port"]));
    std::thread::sleep(Duration::from_millis(300));
    let ha_events = events(&ha.stop(Duration::from_secs(3)).unwrap());
    let hb_events = events(&hb.stop(Duration::from_secs(3)).unwrap());
    let hc_events = events(&hc.stop(Duration::from_secs(3)).unwrap());
    let sent = event(&ha_events, "send_summary");
    assert_eq!(sent.len(), 1, "{ha_events:?}");
    assert_eq!(sent[0]["sent"], 600);
    let summary = event(&hb_events, "summary")[0];
    let stream = &summary["streams"][0];
    assert_eq!((stream["slid"].as_u64(), stream["received"].as_u64()), (Some(1), Some(600)), "{summary}");
    assert_eq!((stream["gaps"].as_u64(), stream["out_of_order"].as_u64()), (Some(0), Some(0)), "{summary}");
    // The sender was throttled by credits: ha waited, and s1 waited on s2.
    assert!(sent[0]["xmit_wait"].as_u64().unwrap() > 0, "{sent:?}");
    assert!(sent[0]["elapsed_s"].as_f64().unwrap() > 1.0, "paced by the reader: {sent:?}");
    let s1_ports = f.s1.show_rows("ib port");
    assert!(s1_ports[1]["counters"]["xmit_wait"].as_u64().unwrap() > 0, "{s1_ports:?}");
    for port in s1_ports.iter().chain(f.s2.show_rows("ib port").iter()) {
        assert_eq!(port["counters"]["rcv_errors"], 0, "no credit overrun: {port}");
        assert_eq!(port["counters"]["xmit_discards"], 0, "nothing sent before ports were Active: {port}");
    }
    // ibping ha -> hc, answered by hc's echo.
    let pings = event(&ha_events, "ping_summary");
    assert_eq!((pings[0]["to"].as_u64(), pings[0]["received"].as_u64()), (Some(3), Some(5)), "{ha_events:?}");
    assert!(event(&hc_events, "summary")[0]["echoed"].as_u64() == Some(5));
    // The IB-like ports' counters in `show interfaces` too.
    let interfaces = f.s1.show_rows("interfaces");
    let eth2 = interfaces.iter().find(|i| i["name"] == "eth2").unwrap();
    assert!(eth2["counters"]["tx_packets"].as_u64().unwrap() >= 600, "{eth2}");
}

#[test]
fn the_sm_embedded_in_switchd_brings_the_plane_up_and_every_pair_pings() {
    if !require_root_and_tools("ib_plane", &["ip"]) {
        return;
    }
    let f = fabric("  sm: { priority: 7, engine: [minhop], sweep_interval_ms: 500 }\n");
    let dir = fabric_tests::TempDir::new("ibping");
    let ping_file = dir.path().join("lids");
    let ping_file_arg = ping_file.to_str().unwrap();
    let args = ["--ping-file", ping_file_arg, "--count", "3"];
    let mut hosts = [host(&f.ha, "0xa0", &args), host(&f.hb, "0xb0", &args), host(&f.hc, "0xc0", &args)];

    // Discovery, LIDs, LFTs, ports Active: from nothing.
    let up = poll_until(Duration::from_secs(30), Duration::from_millis(200), || {
        let sm = f.s1.show_json("ib sm");
        (sm["fabric_up"] == true && sm["cas"] == 3 && sm["switches"] == 2).then_some(sm)
    });
    let sm = up.unwrap_or_else(|| panic!("{}", f.s1.swcli(&["show", "ib", "sm"])));
    assert_eq!((sm["state"].as_str(), sm["priority"].as_u64()), (Some("master"), Some(7)), "{sm}");
    assert_eq!(sm["engine"], "minhop");
    let topology = f.s1.show_json("ib topology");
    let nodes = topology["nodes"].as_array().unwrap();
    let lids: Vec<u64> = nodes.iter().filter(|n| n["kind"] == "ca").map(|n| n["lid"].as_u64().unwrap()).collect();
    assert_eq!(lids.len(), 3, "{topology}");
    assert!(lids.iter().all(|&l| l != 0));
    for rows in [f.s1.show_rows("ib port"), f.s2.show_rows("ib port")] {
        assert!(rows.iter().all(|p| p["state"] == "active"), "{rows:?}");
    }
    // s2's LFT as the SM computed it, by name, and as s2 holds it.
    let computed = f.s1.show_json("ib lft s2");
    let held = f.s2.show_json("ib lft");
    assert_eq!(computed["entries"], held["entries"], "{computed} vs {held}");
    // The routing's balance: every switch, each routing every CA LID out of
    // one port, the one towards that CA.
    let balance = f.s1.show_json("ib routes balance");
    assert_eq!(balance["engine"], "minhop", "{balance}");
    assert_eq!(balance["destinations"], 3, "{balance}");
    assert_eq!((balance["unreachable_pairs"].as_u64(), balance["looping_destinations"].as_u64()), (Some(0), Some(0)));
    assert_eq!(balance["deadlock_free_per_vl"], serde_json::json!([true]), "{balance}");
    let switches = balance["switches"].as_array().unwrap();
    let names: Vec<&str> = switches.iter().map(|s| s["switch"].as_str().unwrap()).collect();
    assert_eq!(names, ["s1", "s2"], "{balance}");
    let routes_towards = |switch: &str, remote: &str| -> u64 {
        let ports = switches.iter().find(|s| s["switch"] == switch).unwrap()["ports"].as_array().unwrap();
        ports.iter().filter(|p| p["remote"] == remote).map(|p| p["routes"].as_u64().unwrap()).sum()
    };
    for switch in switches {
        let ports = switch["ports"].as_array().unwrap();
        let sum: u64 = ports.iter().map(|p| p["routes"].as_u64().unwrap()).sum();
        assert_eq!(sum, 3, "{switch}");
    }
    // s1 holds ha and hc (named by their GUIDs), and reaches hb through s2;
    // s2 the other way round.
    assert_eq!([routes_towards("s1", "0xa0"), routes_towards("s1", "0xc0"), routes_towards("s1", "s2")], [1, 1, 1]);
    assert_eq!([routes_towards("s2", "0xb0"), routes_towards("s2", "s1")], [1, 2]);
    // One (source CA, destination) pair per direction over the s1-s2 link
    // at most: ha and hc to hb, hb to ha and hc, so 2.
    assert_eq!(balance["edge_forwarding_index"], 2, "{balance}");

    // Every HCA pings every other.
    let list: Vec<String> = lids.iter().map(u64::to_string).collect();
    std::fs::write(&ping_file, format!("{}\n", list.join(" "))).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    for (i, host) in hosts.iter_mut().enumerate() {
        let out = host.stop(Duration::from_secs(3)).unwrap();
        let events = events(&out);
        let own = event(&events, "lid").last().map(|e| e["lid"].as_u64().unwrap()).unwrap();
        let pings = event(&events, "ping_summary");
        for &lid in lids.iter().filter(|&&l| l != own) {
            let ping = pings.iter().find(|p| p["to"] == lid).unwrap_or_else(|| panic!("host {i}: {events:?}"));
            assert_eq!(ping["received"], 3, "host {i} -> {lid}: {ping}");
        }
    }
}

/// Frame bytes on the wire per data packet of `payload` bytes: Ethernet
/// header (14), delimiter shim (2), LRH (8), VCRC (2), and the preamble,
/// FCS and gap (24) a rated port counts.
fn wire_bytes(payload: u64) -> u64 {
    payload + 26 + 24
}

/// A stream's rate in bits per second on the wire, from its first to its
/// last packet as the receiver took them.
fn stream_wire_bps(stream: &serde_json::Value, payload: u64) -> f64 {
    let received = stream["received"].as_u64().unwrap();
    let span_ns = stream["last_ns"].as_u64().unwrap() - stream["first_ns"].as_u64().unwrap();
    ((received - 1) * wire_bytes(payload) * 8) as f64 / (span_ns as f64 / 1e9)
}

/// A fast sender into slower egresses: ha's line runs at 100 Mb/s, stream A
/// (SL0, VL0) goes to hb through s2's eth2 rated 25 Mb/s, stream B (SL1,
/// VL1) to hc through s1's eth3 rated 50 Mb/s. Nothing is lost; credits
/// throttle ha (it waits) and s1's port towards s2 (xmit wait there: s2's
/// buffer for VL0 is full). The rates against the egress rates (and B's,
/// about twice A's while A's VL0 is blocked) are printed for
/// docs/benchmarks.md, not asserted.
#[test]
fn a_fast_sender_into_slower_egresses_is_throttled_by_credits_and_loses_nothing() {
    if !require_root_and_tools("ib_plane", &["ip"]) {
        return;
    }
    const PACKETS: u64 = 6000;
    const PAYLOAD: u64 = 1024;
    const RATE_A: f64 = 25e6;
    const RATE_B: f64 = 50e6;
    let f = fabric_with(&["", "", ", ib_rate: 50M"], &["", ", ib_rate: 25M"], 512, "");
    let mut hb = host_with(&f.hb, "0xb0", 512, &[]);
    let mut hc = host_with(&f.hc, "0xc0", 512, &[]);
    let packets = PACKETS.to_string();
    let size = PAYLOAD.to_string();
    let mut ha = host_with(
        &f.ha,
        "0xa0",
        512,
        &[
            "--line-rate-mbps",
            "100",
            "--send",
            "2",
            "--sl",
            "0",
            "--flow",
            "3:1",
            "--packets",
            &packets,
            "--size",
            &size,
        ],
    );
    let ports_up = poll_until(Duration::from_secs(10), Duration::from_millis(100), || {
        let rows = f.s1.show_rows("ib port");
        (rows.len() == 3 && rows.iter().all(|p| p["flow_control"] == true)).then_some(())
    });
    assert!(ports_up.is_some(), "{}", f.s1.swcli(&["show", "ib", "port"]));
    f.ha.enter(|| drop(program_by_hand()));

    let done = poll_until(Duration::from_secs(60), Duration::from_millis(200), || {
        let s2 = f.s2.show_rows("ib port");
        let s1 = f.s1.show_rows("ib port");
        let sent = |rows: &[serde_json::Value], i: usize| rows[i]["counters"]["xmit_packets"].as_u64().unwrap_or(0);
        (sent(&s2, 1) >= PACKETS && sent(&s1, 2) >= PACKETS).then_some(())
    });
    assert!(done.is_some(), "{}\n{}", f.s1.swcli(&["show", "ib", "port"]), f.s2.swcli(&["show", "ib", "port"]));
    std::thread::sleep(Duration::from_millis(300));
    let ha_events = events(&ha.stop(Duration::from_secs(3)).unwrap());
    let hb_events = events(&hb.stop(Duration::from_secs(3)).unwrap());
    let hc_events = events(&hc.stop(Duration::from_secs(3)).unwrap());
    let sent = event(&ha_events, "send_summary");
    assert_eq!(sent.len(), 2, "{ha_events:?}");
    assert!(sent.iter().all(|s| s["sent"] == PACKETS), "{sent:?}");
    let stream = |events: &[serde_json::Value]| event(events, "summary")[0]["streams"][0].clone();
    let (a, b) = (stream(&hb_events), stream(&hc_events));
    for s in [&a, &b] {
        assert_eq!(s["slid"], 1, "{s}");
        assert_eq!(
            (s["received"].as_u64(), s["gaps"].as_u64(), s["out_of_order"].as_u64()),
            (Some(PACKETS), Some(0), Some(0)),
            "zero loss: {s}"
        );
    }
    // Throttled by credits: ha waited, and s1 waited on s2 (its eth2).
    assert!(sent[0]["xmit_wait"].as_u64().unwrap() > 0, "{sent:?}");
    let s1_ports = f.s1.show_rows("ib port");
    let s2_ports = f.s2.show_rows("ib port");
    assert!(s1_ports[1]["counters"]["xmit_wait"].as_u64().unwrap() > 0, "{s1_ports:?}");
    for port in s1_ports.iter().chain(s2_ports.iter()) {
        for counter in ["rcv_errors", "xmit_discards", "rcv_switch_relay_errors"] {
            assert_eq!(port["counters"][counter], 0, "{counter}: {port}");
        }
    }
    // B is not held back by A's full VL0: on a machine not starved of CPU
    // it keeps about twice A's rate and ends first. Measured and printed,
    // not asserted (timing: under a load of 50 both ran at what the CPU
    // gave them).
    let (rate_a, rate_b) = (stream_wire_bps(&a, PAYLOAD), stream_wire_bps(&b, PAYLOAD));
    let goodput = |rate: f64| rate * PAYLOAD as f64 / wire_bytes(PAYLOAD) as f64;
    eprintln!(
        "ib_throughput: A {:.2} Mb/s on the wire ({:.4} of 25 Mb/s), goodput {:.2} Mb/s; B {:.2} Mb/s ({:.4} of 50 Mb/s), goodput {:.2} Mb/s; ha xmit_wait {}, s1 eth2 xmit_wait {}; load {}",
        rate_a / 1e6,
        rate_a / RATE_A,
        goodput(rate_a) / 1e6,
        rate_b / 1e6,
        rate_b / RATE_B,
        goodput(rate_b) / 1e6,
        sent[0]["xmit_wait"],
        s1_ports[1]["counters"]["xmit_wait"],
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    );
}
