//! Our BGP encodings read by an independent decoder: every message type,
//! every path attribute, written to a pcap (text2pcap wraps each message in
//! Ethernet/IPv4/TCP to port 179) and decoded by tshark, which must find no
//! malformed packet and read back the values we put in.

use std::net::{IpAddr, Ipv4Addr};
use std::process::Command;

use bgp_evpn::packet::attribute::flag;
use bgp_evpn::packet::capability::GracefulRestartFamily;
use bgp_evpn::packet::{
    AfiSafi, AsPath, AsSegment, Capability, DecodeContext, LargeCommunity, Message, MpReach, MpUnreach, Nlri,
    Notification, Open, Origin, PathAttrs, RawAttribute, RouteRefresh, SegmentKind, Update,
};
use fabric_tests::{TempDir, require_root_and_tools};

fn messages() -> Vec<Message> {
    let open = Open::new(
        4_200_000_001,
        90,
        Ipv4Addr::new(10, 0, 0, 1),
        vec![
            Capability::Multiprotocol(AfiSafi::IPV4_UNICAST),
            Capability::Multiprotocol(AfiSafi::IPV6_UNICAST),
            Capability::RouteRefresh,
            Capability::ExtendedMessage,
            Capability::GracefulRestart {
                restarting: false,
                restart_time: 120,
                families: vec![GracefulRestartFamily { afi_safi: AfiSafi::IPV4_UNICAST, forwarding_preserved: true }],
            },
        ],
    );
    let v4 = PathAttrs {
        origin: Origin::Egp,
        as_path: AsPath {
            segments: vec![
                AsSegment { kind: SegmentKind::Sequence, asns: vec![65001, 4_200_000_002] },
                AsSegment { kind: SegmentKind::Set, asns: vec![65010, 65011] },
            ],
        },
        next_hop: Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1))),
        med: Some(10),
        local_pref: Some(200),
        atomic_aggregate: true,
        aggregator: Some((65001, Ipv4Addr::new(10, 0, 0, 9))),
        communities: vec![65001 << 16 | 100],
        originator_id: Some(Ipv4Addr::new(10, 0, 0, 7)),
        cluster_list: vec![Ipv4Addr::new(10, 0, 0, 100)],
        ext_communities: vec![0x0002_fde9_0000_0007],
        large_communities: vec![LargeCommunity { global_admin: 65001, local_1: 1, local_2: 2 }],
        unknown: vec![RawAttribute {
            flags: flag::OPTIONAL | flag::TRANSITIVE | flag::PARTIAL,
            type_code: 222,
            value: vec![1, 2],
        }],
        ..Default::default()
    };
    let update_v4 = Update {
        withdrawn: vec!["192.168.0.0/16".parse().unwrap()],
        attrs: v4,
        nlri: vec!["10.1.0.0/24".parse().unwrap(), "10.2.0.0/16".parse().unwrap()],
        ..Default::default()
    };
    let update_v6 = Update {
        attrs: PathAttrs { as_path: AsPath::from_sequence([65001]), ..Default::default() },
        mp_reach: Some(MpReach {
            afi_safi: AfiSafi::IPV6_UNICAST,
            next_hop: "2001:db8::1".parse().unwrap(),
            link_local_next_hop: Some("fe80::1".parse().unwrap()),
            nlri: vec!["2001:db8:1::/48".parse::<Nlri>().unwrap()],
        }),
        mp_unreach: Some(MpUnreach {
            afi_safi: AfiSafi::IPV6_UNICAST,
            withdrawn: vec!["2001:db8:2::/64".parse().unwrap()],
        }),
        ..Default::default()
    };
    vec![
        Message::Open(open),
        Message::Keepalive,
        Message::Update(update_v4),
        Message::Update(update_v6),
        Message::RouteRefresh(RouteRefresh { afi_safi: AfiSafi::IPV6_UNICAST, subtype: 0 }),
        Message::Notification(Notification { code: 6, subcode: 2, data: vec![] }),
    ]
}

#[test]
fn bgp_messages_decode_in_tshark() {
    if !require_root_and_tools("bgp_messages_decode_in_tshark", &["tshark", "text2pcap"]) {
        return;
    }
    let dir = TempDir::new("bgptshark");
    let mut hex = String::new();
    for m in messages() {
        let bytes = m.to_bytes(&DecodeContext::default());
        for (i, chunk) in bytes.chunks(16).enumerate() {
            hex.push_str(&format!("{:06x}", i * 16));
            for b in chunk {
                hex.push_str(&format!(" {b:02x}"));
            }
            hex.push('\n');
        }
    }
    let txt = dir.path().join("bgp.txt");
    let pcap = dir.path().join("bgp.pcap");
    std::fs::write(&txt, hex).unwrap();
    let out = Command::new("text2pcap")
        .args(["-q", "-e", "0x800", "-4", "10.0.0.1,10.0.0.2", "-T", "40000,179"])
        .arg(&txt)
        .arg(&pcap)
        .output()
        .unwrap();
    assert!(out.status.success(), "text2pcap: {}", String::from_utf8_lossy(&out.stderr));
    let out =
        Command::new("tshark").arg("-r").arg(&pcap).args(["-V", "-o", "tcp.check_checksum:FALSE"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    let has = |s: &str| assert!(text.contains(s), "tshark's decoding lacks {s:?}:\n{text}");
    assert!(!text.contains("Malformed"), "malformed:\n{text}");
    assert!(!text.contains("[Expert Info (Error"), "expert error:\n{text}");
    for s in [
        "Type: OPEN Message (1)",
        "My AS: 23456",
        "Hold Time: 90",
        "BGP Identifier: 10.0.0.1",
        "AS Number: 4200000001",
        "Multiprotocol extensions capability",
        "Route refresh capability",
        "Graceful Restart capability",
        "Restart Timers: 0x0078",
        "Preserve forwarding state: Yes",
        "Type: KEEPALIVE Message (4)",
        "Type: UPDATE Message (2)",
        "192.168.0.0/16",
        "ORIGIN: EGP",
        "AS_PATH: 65001 4200000002 {65010, 65011}",
        "NEXT_HOP: 192.0.2.1",
        "MULTI_EXIT_DISC: 10",
        "LOCAL_PREF: 200",
        "ATOMIC_AGGREGATE",
        "AGGREGATOR: AS: 65001 origin: 10.0.0.9",
        "COMMUNITIES: 65001:100",
        "ORIGINATOR_ID: 10.0.0.7",
        "CLUSTER_LIST: 10.0.0.100",
        "Route Target: 65001:7",
        "LARGE_COMMUNITY: 65001:1:2",
        "10.1.0.0/24",
        "10.2.0.0/16",
        "MP_REACH_NLRI",
        "2001:db8::1",
        "fe80::1",
        "2001:db8:1::/48",
        "MP_UNREACH_NLRI",
        "2001:db8:2::/64",
        "Type: ROUTE-REFRESH Message (5)",
        "Type: NOTIFICATION Message (3)",
        "Minor error Code (Cease): Administratively Shutdown (2)",
    ] {
        has(s);
    }
}
