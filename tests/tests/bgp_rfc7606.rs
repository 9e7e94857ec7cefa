//! Error handling of our speaker (`bgp-speaker`) against a raw test peer: a
//! TCP client in another namespace that writes hand-encoded BGP messages
//! (independent of `bgp-evpn`'s encoder) and reads what comes back.
//!
//! - Malformed attributes in UPDATEs get the RFC 7606 action and the
//!   session stays up: treat-as-withdraw (§7.1 ORIGIN, §7.2 AS_PATH, §7.4
//!   MED, §7.8 COMMUNITIES, §3(d) missing well-known attribute), attribute
//!   discard (§7.6 ATOMIC_AGGREGATE); a broken attribute list whose NLRI
//!   cannot be found resets the session (§4 / RFC 4271 §6.3: NOTIFICATION
//!   3/1).
//! - Malformed OPENs and headers get a NOTIFICATION with the RFC 4271 §6.1
//!   and §6.2 code and subcode.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::os::fd::FromRawFd;
use std::time::{Duration, Instant};

use fabric_tests::bgp_speaker::Speaker;
use fabric_tests::frr::Afi;
use fabric_tests::gobgp::{Gobgp, GobgpConfig, GobgpNeighbor, gobgp_available, path_attr};
use fabric_tests::{Netns, require_root_and_tools, veth};

const WAIT: Duration = Duration::from_secs(20);
const OURS: Ipv4Addr = Ipv4Addr::new(10, 0, 14, 1);
/// The peer whose session carries the UPDATE tests.
const PEER_UPDATES: Ipv4Addr = Ipv4Addr::new(10, 0, 14, 2);
const AS_UPDATES: u32 = 65002;
/// The peer the malformed OPENs come from.
const PEER_OPENS: Ipv4Addr = Ipv4Addr::new(10, 0, 14, 3);
const AS_OPENS: u32 = 65003;

const OPEN: u8 = 1;
const UPDATE: u8 = 2;
const NOTIFICATION: u8 = 3;
const KEEPALIVE: u8 = 4;

fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![0xff; 16];
    m.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    m.push(kind);
    m.extend_from_slice(body);
    m
}

/// OPEN with capabilities multiprotocol IPv4 unicast and 4-octet AS.
fn open_body(version: u8, asn: u32, hold: u16, id: Ipv4Addr) -> Vec<u8> {
    let mut caps = vec![1, 4, 0, 1, 0, 1]; // MP: AFI 1, SAFI 1
    caps.extend_from_slice(&[65, 4]);
    caps.extend_from_slice(&asn.to_be_bytes());
    let mut b = vec![version];
    let as2 = if asn > 65535 { 23456 } else { asn as u16 };
    b.extend_from_slice(&as2.to_be_bytes());
    b.extend_from_slice(&hold.to_be_bytes());
    b.extend_from_slice(&id.octets());
    b.push(caps.len() as u8 + 2);
    b.push(2); // capabilities parameter
    b.push(caps.len() as u8);
    b.extend_from_slice(&caps);
    b
}

fn attr(flags: u8, code: u8, value: &[u8]) -> Vec<u8> {
    let mut a = vec![flags, code, value.len() as u8];
    a.extend_from_slice(value);
    a
}

fn origin(value: u8) -> Vec<u8> {
    attr(0x40, 1, &[value])
}

/// AS_PATH with one AS_SEQUENCE of 4-octet ASNs.
fn as_path(asns: &[u32]) -> Vec<u8> {
    let mut v = vec![2, asns.len() as u8];
    for a in asns {
        v.extend_from_slice(&a.to_be_bytes());
    }
    attr(0x40, 2, &v)
}

fn next_hop(addr: Ipv4Addr) -> Vec<u8> {
    attr(0x40, 3, &addr.octets())
}

fn prefix(s: &str) -> Vec<u8> {
    let (addr, len) = s.split_once('/').unwrap();
    let addr: Ipv4Addr = addr.parse().unwrap();
    let len: u8 = len.parse().unwrap();
    let mut v = vec![len];
    v.extend_from_slice(&addr.octets()[..len.div_ceil(8) as usize]);
    v
}

fn update(withdrawn: &[&str], attrs: &[Vec<u8>], nlri: &[&str]) -> Vec<u8> {
    let withdrawn: Vec<u8> = withdrawn.iter().flat_map(|p| prefix(p)).collect();
    let attrs: Vec<u8> = attrs.concat();
    let mut b = Vec::new();
    b.extend_from_slice(&(withdrawn.len() as u16).to_be_bytes());
    b.extend_from_slice(&withdrawn);
    b.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    b.extend_from_slice(&attrs);
    for p in nlri {
        b.extend_from_slice(&prefix(p));
    }
    message(UPDATE, &b)
}

fn good_attrs() -> Vec<Vec<u8>> {
    vec![origin(0), as_path(&[AS_UPDATES]), next_hop(PEER_UPDATES)]
}

/// A TCP connection from `local` to our speaker (bind before connect, so
/// the speaker sees the neighbour address it is configured with).
fn connect_from(ns: &Netns, local: Ipv4Addr) -> std::io::Result<TcpStream> {
    ns.enter(move || {
        // SAFETY: plain socket calls on a descriptor owned here; on success
        // it is handed to TcpStream, which closes it.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let stream = TcpStream::from_raw_fd(fd);
            let sockaddr = |a: Ipv4Addr, port: u16| libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: port.to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from(a).to_be() },
                sin_zero: [0; 8],
            };
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let me = sockaddr(local, 0);
            if libc::bind(fd, (&me as *const libc::sockaddr_in).cast(), len) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let them = sockaddr(OURS, 179);
            if libc::connect(fd, (&them as *const libc::sockaddr_in).cast(), len) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            stream.set_read_timeout(Some(Duration::from_millis(200)))?;
            Ok(stream)
        }
    })
}

/// A received message: type and body, or the end of the connection.
#[derive(Debug, PartialEq)]
enum Received {
    Message(u8, Vec<u8>),
    Closed,
    Nothing,
}

/// Reads one message, waiting up to `timeout`.
fn read_message(stream: &mut TcpStream, timeout: Duration) -> Received {
    let deadline = Instant::now() + timeout;
    let mut header = [0u8; 19];
    let mut got = 0;
    while got < 19 {
        match stream.read(&mut header[got..]) {
            Ok(0) => return Received::Closed,
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if got == 0 && Instant::now() >= deadline {
                    return Received::Nothing;
                }
            }
            Err(_) => return Received::Closed,
        }
    }
    assert_eq!(&header[..16], &[0xff; 16], "marker");
    let len = u16::from_be_bytes([header[16], header[17]]) as usize;
    let mut body = vec![0; len - 19];
    let mut got = 0;
    while got < body.len() {
        match stream.read(&mut body[got..]) {
            Ok(0) => return Received::Closed,
            Ok(n) => got += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Received::Closed,
        }
    }
    Received::Message(header[18], body)
}

/// Reads until a NOTIFICATION arrives (skipping OPEN, KEEPALIVE, UPDATE);
/// returns (code, subcode), or None if the connection ended or `timeout`
/// passed without one.
fn expect_notification(stream: &mut TcpStream, timeout: Duration) -> Option<(u8, u8)> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        match read_message(stream, deadline - Instant::now()) {
            Received::Message(NOTIFICATION, body) => return Some((body[0], body[1])),
            Received::Message(..) => {}
            Received::Closed | Received::Nothing => return None,
        }
    }
    None
}

/// Reads for `duration`; panics on a NOTIFICATION or a closed connection
/// (the session must stay up), answering nothing.
#[track_caller]
fn expect_session_stays_up(stream: &mut TcpStream, duration: Duration) {
    let deadline = Instant::now() + duration;
    while Instant::now() < deadline {
        match read_message(stream, deadline.saturating_duration_since(Instant::now())) {
            Received::Message(NOTIFICATION, body) => {
                panic!("NOTIFICATION {}/{}: the session was reset", body[0], body[1])
            }
            Received::Closed => panic!("the speaker closed the session"),
            _ => {}
        }
    }
}

struct Lab {
    ours_ns: Netns,
    peer_ns: Netns,
    speaker: Speaker,
}

fn lab() -> Lab {
    lab_with("")
}

/// The lab with more neighbour lines (YAML list items) for the speaker.
fn lab_with(extra_neighbors: &str) -> Lab {
    let ours_ns = Netns::new("b7o");
    let peer_ns = Netns::new("b7p");
    veth(&ours_ns, "eth1", &peer_ns, "eth1");
    ours_ns.ip(&["addr", "add", "10.0.14.1/24", "dev", "eth1"]);
    peer_ns.ip(&["addr", "add", "10.0.14.2/24", "dev", "eth1"]);
    peer_ns.ip(&["addr", "add", "10.0.14.3/24", "dev", "eth1"]);
    let speaker = Speaker::start(
        &ours_ns,
        &format!(
            r#"
asn: 65001
router_id: 10.0.14.1
timers: {{ hold_time: 30, connect_retry: 1, idle_hold: 1 }}
neighbors:
  - {{ address: {PEER_UPDATES}, remote_as: {AS_UPDATES}, families: [ipv4-unicast], passive: true }}
  - {{ address: {PEER_OPENS}, remote_as: {AS_OPENS}, families: [ipv4-unicast], passive: true }}
{extra_neighbors}
"#
        ),
    );
    Lab { ours_ns, peer_ns, speaker }
}

/// Connects from `local` once the speaker accepts (it refuses connections
/// while its neighbour is Idle, e.g. during the idle hold after an error).
fn connect_when_accepted(lab: &Lab, local: Ipv4Addr) -> TcpStream {
    let deadline = Instant::now() + WAIT;
    loop {
        match connect_from(&lab.peer_ns, local) {
            Ok(s) => return s,
            Err(e) => {
                assert!(Instant::now() < deadline, "cannot connect from {local}: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// Opens a session from PEER_UPDATES: OPEN, then KEEPALIVE once the
/// speaker's OPEN came; returns when the speaker's KEEPALIVE arrived.
fn establish(lab: &Lab) -> TcpStream {
    let mut s = connect_when_accepted(lab, PEER_UPDATES);
    s.write_all(&message(OPEN, &open_body(4, AS_UPDATES, 30, PEER_UPDATES))).unwrap();
    match read_message(&mut s, WAIT) {
        Received::Message(OPEN, body) => {
            assert_eq!(body[0], 4, "version");
            assert_eq!(u16::from_be_bytes([body[1], body[2]]), 65001, "My AS");
        }
        other => panic!("expected the speaker's OPEN, got {other:?}"),
    }
    s.write_all(&message(KEEPALIVE, &[])).unwrap();
    match read_message(&mut s, WAIT) {
        Received::Message(KEEPALIVE, _) => {}
        other => panic!("expected KEEPALIVE, got {other:?}"),
    }
    lab.speaker.wait_established(&PEER_UPDATES.to_string(), WAIT);
    s
}

fn errors(lab: &Lab) -> serde_json::Value {
    lab.speaker.neighbor(&PEER_UPDATES.to_string()).unwrap()["errors"].clone()
}

#[track_caller]
fn wait_present(lab: &Lab, prefix: &str, present: bool) {
    let what = format!("{prefix} {}", if present { "present" } else { "absent" });
    lab.speaker.wait(&what, WAIT, |_| lab.speaker.route(prefix).is_some() == present);
}

#[test]
fn rfc7606_malformed_attributes_keep_the_session_up() {
    if !require_root_and_tools("bgp_rfc7606 malformed attributes", &["ip"]) {
        return;
    }
    let lab = lab();
    let mut s = establish(&lab);

    s.write_all(&update(&[], &good_attrs(), &["10.60.0.0/24", "10.60.1.0/24", "10.60.5.0/24"])).unwrap();
    wait_present(&lab, "10.60.0.0/24", true);
    wait_present(&lab, "10.60.1.0/24", true);
    wait_present(&lab, "10.60.5.0/24", true);

    // §7.1: an undefined ORIGIN value: treat-as-withdraw for the UPDATE's
    // NLRI (10.60.0.0/24 was announced before: it goes).
    s.write_all(&update(&[], &[origin(7), as_path(&[AS_UPDATES]), next_hop(PEER_UPDATES)], &["10.60.0.0/24"])).unwrap();
    wait_present(&lab, "10.60.0.0/24", false);
    assert!(lab.speaker.route("10.60.1.0/24").is_some(), "other routes stay");
    assert!(errors(&lab)["treat_as_withdraw"].as_u64() >= Some(1), "{}", errors(&lab));

    // §7.2: an AS_PATH segment longer than the attribute: treat-as-withdraw.
    let broken_path = attr(0x40, 2, &[2, 5, 0, 0, 0xfd, 0xea]);
    s.write_all(&update(&[], &[origin(0), broken_path, next_hop(PEER_UPDATES)], &["10.60.1.0/24"])).unwrap();
    wait_present(&lab, "10.60.1.0/24", false);

    // §7.4: MULTI_EXIT_DISC of 3 octets: treat-as-withdraw.
    let mut attrs = good_attrs();
    attrs.push(attr(0x80, 4, &[0, 0, 1]));
    s.write_all(&update(&[], &attrs, &["10.60.2.0/24"])).unwrap();
    // §7.8: COMMUNITIES not a multiple of 4: treat-as-withdraw.
    let mut attrs = good_attrs();
    attrs.push(attr(0xc0, 8, &[0xfd, 0xea, 0, 1, 0]));
    s.write_all(&update(&[], &attrs, &["10.60.4.0/24"])).unwrap();
    // §3(d): NEXT_HOP missing: treat-as-withdraw.
    s.write_all(&update(&[], &[origin(0), as_path(&[AS_UPDATES])], &["10.60.5.0/24"])).unwrap();
    // §7.6: ATOMIC_AGGREGATE of length 1: attribute discard, route kept.
    let mut attrs = good_attrs();
    attrs.push(attr(0x40, 6, &[1]));
    s.write_all(&update(&[], &attrs, &["10.60.3.0/24"])).unwrap();
    wait_present(&lab, "10.60.3.0/24", true);
    wait_present(&lab, "10.60.5.0/24", false);
    assert!(lab.speaker.route("10.60.2.0/24").is_none(), "bad MED: not installed");
    assert!(lab.speaker.route("10.60.4.0/24").is_none(), "bad COMMUNITIES: not installed");
    assert!(lab.speaker.fib("10.60.2.0/24").is_none() && lab.speaker.fib("10.60.4.0/24").is_none());
    // The status file samples the Loc-RIB and the installed table apart: a
    // route can be listed a moment before its forwarding entry.
    let installed = Some(vec![PEER_UPDATES.to_string()]);
    lab.speaker.wait("10.60.3.0/24 installed", WAIT, |_| lab.speaker.fib("10.60.3.0/24") == installed);
    let e = errors(&lab);
    assert!(e["treat_as_withdraw"].as_u64() >= Some(5), "{e}");
    assert!(e["attribute_discard"].as_u64() >= Some(1), "{e}");

    // None of that reset the session.
    s.write_all(&message(KEEPALIVE, &[])).unwrap();
    expect_session_stays_up(&mut s, Duration::from_secs(2));
    let n = lab.speaker.neighbor(&PEER_UPDATES.to_string()).unwrap();
    assert_eq!(n["state"], "Established", "{n:#}");
    assert_eq!(n["counters"]["sent"]["notification"].as_u64().unwrap_or(0), 0, "{n:#}");

    // And a good UPDATE still works afterwards.
    s.write_all(&update(&[], &good_attrs(), &["10.60.2.0/24"])).unwrap();
    wait_present(&lab, "10.60.2.0/24", true);

    // A total path attribute length running past the message leaves no way
    // to find the NLRI: session reset with UPDATE Message Error /
    // Malformed Attribute List (RFC 7606 §4, RFC 4271 §6.3).
    let mut bad = update(&[], &good_attrs(), &["10.60.9.0/24"]);
    let attr_len_at = 19 + 2;
    bad[attr_len_at..attr_len_at + 2].copy_from_slice(&200u16.to_be_bytes());
    s.write_all(&bad).unwrap();
    assert_eq!(expect_notification(&mut s, WAIT), Some((3, 1)), "NOTIFICATION UPDATE/Malformed Attribute List");
    lab.speaker.wait("session down, routes gone", WAIT, |_| {
        lab.speaker.route("10.60.2.0/24").is_none() && lab.speaker.route("10.60.3.0/24").is_none()
    });
}

/// Sends `bytes` (a malformed OPEN or header) on a fresh connection from
/// PEER_OPENS and returns the NOTIFICATION's code and subcode, or None when
/// the speaker answered with its OPEN and closed without one.
fn notification_for(lab: &Lab, bytes: &[u8]) -> Option<(u8, u8)> {
    // While the neighbour is Idle after the previous error the speaker may
    // close a connection before it says anything: retry those.
    let deadline = Instant::now() + WAIT;
    loop {
        let mut s = connect_when_accepted(lab, PEER_OPENS);
        let _ = s.write_all(bytes);
        let mut saw_open = false;
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            match read_message(&mut s, until - Instant::now()) {
                Received::Message(NOTIFICATION, body) => return Some((body[0], body[1])),
                Received::Message(OPEN, _) => saw_open = true,
                Received::Message(..) => {}
                Received::Closed | Received::Nothing => break,
            }
        }
        if saw_open || Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn rfc4271_malformed_open_and_header_get_notifications() {
    if !require_root_and_tools("bgp_rfc7606 malformed OPEN", &["ip"]) {
        return;
    }
    let lab = lab();
    let cases: Vec<(&str, Vec<u8>, (u8, u8))> = vec![
        ("version 3", message(OPEN, &open_body(3, AS_OPENS, 30, PEER_OPENS)), (2, 1)),
        ("wrong peer AS", message(OPEN, &open_body(4, 65099, 30, PEER_OPENS)), (2, 2)),
        ("BGP identifier 0.0.0.0", message(OPEN, &open_body(4, AS_OPENS, 30, Ipv4Addr::UNSPECIFIED)), (2, 3)),
        ("hold time 2", message(OPEN, &open_body(4, AS_OPENS, 2, PEER_OPENS)), (2, 6)),
        (
            "marker not all ones",
            {
                let mut m = message(OPEN, &open_body(4, AS_OPENS, 30, PEER_OPENS));
                m[3] = 0;
                m
            },
            (1, 1),
        ),
        (
            "length 18",
            {
                let mut m = message(KEEPALIVE, &[]);
                m[16..18].copy_from_slice(&18u16.to_be_bytes());
                m
            },
            (1, 2),
        ),
        ("message type 9", message(9, &[]), (1, 3)),
        // RFC 6608 §4: an UPDATE where an OPEN is expected.
        ("UPDATE in OpenSent", update(&[], &[], &[]), (5, 1)),
        (
            "OPEN shorter than its fixed part",
            {
                let mut body = open_body(4, AS_OPENS, 30, PEER_OPENS);
                body.truncate(6);
                message(OPEN, &body)
            },
            (1, 2),
        ),
    ];
    let mut failures = Vec::new();
    for (what, bytes, expected) in cases {
        let got = notification_for(&lab, &bytes);
        eprintln!("{what}: NOTIFICATION {got:?}, expected {expected:?}");
        if got != Some(expected) {
            failures.push(format!("{what}: got {got:?}, expected {expected:?}"));
        }
    }
    assert!(failures.is_empty(), "wrong answers to malformed messages:\n{}", failures.join("\n"));
    // The speaker survived all of it and counted what it sent (the status
    // file trails by up to its interval).
    lab.speaker.wait("9 NOTIFICATIONs counted", WAIT, |_| {
        lab.speaker.neighbor(&PEER_OPENS.to_string()).unwrap()["counters"]["sent"]["notification"].as_u64() >= Some(9)
    });
}

/// RFC 4271 §5 and §9.1.4: an unrecognised optional transitive attribute
/// is passed on to other peers with the Partial bit set; an unrecognised
/// optional non-transitive one is dropped. The raw peer sends both; GoBGP,
/// on the far side of our speaker, shows what arrived.
#[test]
fn unknown_optional_attributes_passed_on_or_dropped() {
    if !require_root_and_tools("bgp_rfc7606 unknown attributes", &["ip"]) || !gobgp_available("bgp_rfc7606") {
        return;
    }
    let lab = lab_with("  - { address: 10.0.19.2, remote_as: 65005, families: [ipv4-unicast] }");
    let gobgp_ns = Netns::new("b7g");
    veth(&lab.ours_ns, "eth2", &gobgp_ns, "eth1");
    lab.ours_ns.ip(&["addr", "add", "10.0.19.1/30", "dev", "eth2"]);
    gobgp_ns.ip(&["addr", "add", "10.0.19.2/30", "dev", "eth1"]);
    let mut g = GobgpNeighbor::new("10.0.19.1", 65001);
    g.families = vec![Afi::Ipv4];
    let gobgp = Gobgp::start(&gobgp_ns, &GobgpConfig::new(65005, "10.0.0.5").neighbor(g));
    gobgp.wait_established("10.0.19.1", WAIT);

    let mut s = establish(&lab);
    let mut attrs = good_attrs();
    attrs.push(attr(0xc0, 99, &[1, 2, 3, 4])); // optional transitive, unknown
    attrs.push(attr(0x80, 98, &[5, 6])); // optional non-transitive, unknown
    s.write_all(&update(&[], &attrs, &["10.61.0.0/24"])).unwrap();
    wait_present(&lab, "10.61.0.0/24", true);
    let paths = gobgp.wait_route("10.61.0.0/24", WAIT, |_| true);
    let path = &paths[0];
    let unknown = path_attr(path, 99).unwrap_or_else(|| panic!("attribute 99 passed on: {path}"));
    // GoBGP shows it as {"flags":224,"type":99,"value":"AQIDBA=="}.
    assert_eq!(unknown["flags"].as_u64().map(|f| f & 0xe0), Some(0xe0), "optional, transitive, partial: {unknown}");
    assert_eq!(unknown["value"], "AQIDBA==", "value unchanged: {unknown}");
    assert!(path_attr(path, 98).is_none(), "non-transitive attribute 98 dropped: {path}");
    assert_eq!(path_attr(path, 2).unwrap()["as_paths"][0]["asns"], serde_json::json!([65001, AS_UPDATES]), "{path}");
    expect_session_stays_up(&mut s, Duration::from_millis(500));
}
