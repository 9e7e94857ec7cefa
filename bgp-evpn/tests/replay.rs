//! Replays a recorded FRR session (tests/data) into the sans-IO speaker and
//! compares what it does with what the real session did.

use std::net::IpAddr;

use bgp_evpn::BgpConfig;
use bgp_evpn::events::{Output, Speaker};
use bgp_evpn::packet::message::frame_len;
use bgp_evpn::packet::{AfiSafi, Capability, Family, LargeCommunity, Message, Nlri, decode_message};

const FRR: &[u8] = include_bytes!("data/frr-to-ours.bin");
const OURS: &[u8] = include_bytes!("data/ours-to-frr.bin");

fn frames(mut b: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while let Ok(Some(len)) = frame_len(b, 65535) {
        out.push(&b[..len]);
        b = &b[len..];
    }
    assert!(b.is_empty(), "trailing bytes in a recording");
    out
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn frr_messages_decode_with_their_attributes() {
    let msgs: Vec<Message> = frames(FRR).into_iter().map(|f| decode_message(f).unwrap()).collect();
    let Message::Open(open) = &msgs[0] else { panic!("{:?}", msgs[0]) };
    assert_eq!((open.asn(), open.hold_time, open.bgp_id.to_string()), (65001, 3, "10.11.0.1".to_string()));
    assert!(open.families().any(|f| f == AfiSafi::IPV4_UNICAST));
    assert!(open.has(|c| *c == Capability::RouteRefresh));
    assert!(open.has(|c| matches!(c, Capability::GracefulRestart { .. })));
    // FRR's other capabilities (add-path, FQDN, ...) are kept as unknown.
    assert!(open.has(|c| matches!(c, Capability::Unknown { .. })));
    let updates: Vec<_> = msgs
        .iter()
        .filter_map(|m| match m {
            Message::Update(u) if !u.nlri.is_empty() => Some(u),
            _ => None,
        })
        .collect();
    let prefixes: Vec<Nlri> = updates.iter().flat_map(|u| u.nlri.iter().copied()).collect();
    assert!(prefixes.contains(&"10.1.0.0/24".parse().unwrap()) && prefixes.contains(&"10.1.1.0/24".parse().unwrap()));
    let u = updates.last().unwrap();
    assert!(u.errors.is_empty(), "{:?}", u.errors);
    assert_eq!(u.attrs.med, Some(10));
    assert_eq!(u.attrs.communities, vec![65001 << 16 | 100]);
    assert_eq!(u.attrs.large_communities, vec![LargeCommunity { global_admin: 65001, local_1: 1, local_2: 2 }]);
    // Route target 65001:7: type 0x00, subtype 0x02, AS, value.
    assert_eq!(u.attrs.ext_communities, vec![0x0002_fde9_0000_0007]);
    assert_eq!(u.attrs.as_path.to_string(), "65001");
    // Every FRR message re-encodes to something that decodes to the same value.
    for m in &msgs {
        let again = decode_message(&m.to_bytes(&Default::default())).unwrap();
        assert_eq!(&again, m);
    }
}

#[test]
fn replaying_frr_into_the_speaker_reproduces_the_recorded_session() {
    let config = BgpConfig::from_yaml(include_str!("data/ours.yaml")).unwrap();
    let mut sp = Speaker::new(config).unwrap();
    sp.start(0);
    let peer = sp.peer_by_addr(ip("10.11.0.1")).unwrap();
    let Some(Output::Connect { conn, .. }) = sp.poll_output() else { panic!("no connect") };
    sp.connected(0, peer, conn, ip("10.11.0.2"));
    let mut sent = Vec::new();
    let mut fib = Vec::new();
    let mut drain = |sp: &mut Speaker, sent: &mut Vec<u8>| {
        while let Some(o) = sp.poll_output() {
            match o {
                Output::Send { bytes, .. } => sent.extend_from_slice(&bytes),
                Output::Fib(bgp_evpn::fib::FibChange::Route { prefix, next_hops, .. }) => fib.push((prefix, next_hops)),
                _ => {}
            }
        }
    };
    drain(&mut sp, &mut sent);
    for f in frames(FRR) {
        sp.received(0, peer, conn, f);
        drain(&mut sp, &mut sent);
    }
    // Our OPEN and UPDATEs (keepalive timing aside) are byte for byte the recorded ones.
    let significant = |b: &[u8]| -> Vec<Vec<u8>> {
        frames(b).into_iter().filter(|f| f[18] == 1 || f[18] == 2).map(<[u8]>::to_vec).collect()
    };
    assert_eq!(significant(&sent), significant(OURS));
    // And FRR's routes are in the Loc-RIB and the forwarding table.
    let routes = sp.routes(Family::Ipv4Unicast, None);
    let prefixes: Vec<&str> = routes.iter().map(|r| r.prefix.as_str()).collect();
    assert_eq!(prefixes, vec!["10.1.0.0/24", "10.1.1.0/24", "10.22.0.0/24"]);
    assert_eq!(routes[0].paths[0].communities, vec!["65001:100".to_string()]);
    assert_eq!(fib.len(), 2);
    assert!(fib.iter().all(|(_, hops)| hops == &vec![bgp_evpn::fib::NextHop::Ip(ip("10.11.0.1"))]));
}
