use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

use super::attribute::{flag, type_code};
use super::error::{cease_subcode, update_subcode};
use super::update::{encode_end_of_rib, pack_announce, pack_withdraw};
use super::*;

fn ctx() -> DecodeContext {
    DecodeContext::default()
}

fn v4(s: &str) -> Nlri {
    Nlri::Ipv4(s.parse().unwrap())
}

fn v6(s: &str) -> Nlri {
    Nlri::Ipv6(s.parse().unwrap())
}

/// Frames an UPDATE body by hand: the independent encoder these tests compare against.
fn update_bytes(withdrawn: &[u8], attrs: &[u8], nlri: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&(withdrawn.len() as u16).to_be_bytes());
    body.extend_from_slice(withdrawn);
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend_from_slice(attrs);
    body.extend_from_slice(nlri);
    let mut msg = vec![0xff; 16];
    msg.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    msg.push(2);
    msg.extend_from_slice(&body);
    msg
}

const ORIGIN_IGP: [u8; 4] = [0x40, 1, 1, 0];
const AS_PATH_65001: [u8; 9] = [0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xe9];
const NEXT_HOP_10_0_0_1: [u8; 7] = [0x40, 3, 4, 10, 0, 0, 1];

fn base_attrs() -> Vec<u8> {
    [&ORIGIN_IGP[..], &AS_PATH_65001, &NEXT_HOP_10_0_0_1].concat()
}

fn decode_update(bytes: &[u8]) -> Result<Update, DecodeError> {
    match Message::decode(bytes, &ctx())? {
        Message::Update(u) => Ok(u),
        other => panic!("not an update: {other:?}"),
    }
}

#[test]
fn keepalive_golden() {
    let bytes = Message::Keepalive.to_bytes(&ctx());
    let mut expected = vec![0xff; 16];
    expected.extend_from_slice(&[0, 19, 4]);
    assert_eq!(bytes, expected);
    assert_eq!(decode_message(&bytes), Ok(Message::Keepalive));
}

#[test]
fn open_golden_from_capture() {
    // An OPEN as FRR sends it: AS 65001, hold 180, id 1.1.1.1, MP IPv4 and
    // IPv6 unicast, route refresh, 4-octet AS 65001.
    let hex = "ffffffffffffffffffffffffffffffff00390104fde900b4010101011c02060104000100010206010400020001020202000206410400 00fde9";
    let bytes: Vec<u8> = hex
        .split_whitespace()
        .collect::<String>()
        .as_bytes()
        .chunks(2)
        .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 16).unwrap())
        .collect();
    let Message::Open(open) = decode_message(&bytes).unwrap() else { panic!() };
    assert_eq!(open.asn(), 65001);
    assert_eq!(open.hold_time, 180);
    assert_eq!(open.bgp_id, Ipv4Addr::new(1, 1, 1, 1));
    assert_eq!(open.families().collect::<Vec<_>>(), vec![AfiSafi::IPV4_UNICAST, AfiSafi::IPV6_UNICAST]);
    assert!(open.has(|c| *c == Capability::RouteRefresh));
    // Our encoder writes the same bytes back.
    assert_eq!(Message::Open(open).to_bytes(&ctx()), bytes);
}

#[test]
fn open_round_trip_with_all_capabilities_and_as_trans() {
    let open = Open::new(
        4_200_000_001,
        90,
        Ipv4Addr::new(10, 0, 0, 1),
        vec![
            Capability::Multiprotocol(AfiSafi::IPV4_UNICAST),
            Capability::Multiprotocol(AfiSafi::L2VPN_EVPN),
            Capability::RouteRefresh,
            Capability::ExtendedMessage,
            Capability::GracefulRestart {
                restarting: false,
                restart_time: 120,
                families: vec![capability::GracefulRestartFamily {
                    afi_safi: AfiSafi::IPV4_UNICAST,
                    forwarding_preserved: true,
                }],
            },
            Capability::Unknown { code: 69, value: vec![0, 1, 1, 1] },
        ],
    );
    assert_eq!(open.my_as, open::AS_TRANS);
    let bytes = Message::Open(open.clone()).to_bytes(&ctx());
    let Message::Open(back) = decode_message(&bytes).unwrap() else { panic!() };
    assert_eq!(back, open);
    assert_eq!(back.asn(), 4_200_000_001);
}

#[test]
fn extended_next_hop_capability_is_rfc_8950s_triples() {
    let cap = Capability::ExtendedNextHop(vec![capability::ExtendedNextHop::IPV4_UNICAST_OVER_IPV6]);
    let mut bytes = Vec::new();
    cap.encode(&mut bytes);
    // Code 5, length 6: NLRI AFI 1, NLRI SAFI 1 (two octets), next hop AFI 2.
    assert_eq!(bytes, [5, 6, 0, 1, 0, 1, 0, 2]);
    assert_eq!(Capability::decode(&bytes).unwrap(), (cap, 8));
    // A length that is not a multiple of six is malformed.
    assert!(Capability::decode(&[5, 4, 0, 1, 0, 1]).is_err());
    assert!(Capability::decode(&[5, 0]).is_err());
}

#[test]
fn open_errors_map_to_notifications() {
    let open = Open::new(65001, 90, Ipv4Addr::new(1, 2, 3, 4), vec![]);
    let good = Message::Open(open).to_bytes(&ctx());
    let mut bad_version = good.clone();
    bad_version[19] = 3;
    let e = decode_message(&bad_version).unwrap_err();
    assert_eq!((e.code, e.subcode, e.data.as_slice()), (ErrorCode::Open, 1, &[0u8, 4][..]));
    let mut bad_hold = good.clone();
    bad_hold[22..24].copy_from_slice(&2u16.to_be_bytes());
    assert_eq!(decode_message(&bad_hold).unwrap_err().subcode, error::open_subcode::UNACCEPTABLE_HOLD_TIME);
    let mut zero_id = good.clone();
    zero_id[24..28].fill(0);
    assert_eq!(decode_message(&zero_id).unwrap_err().subcode, error::open_subcode::BAD_BGP_IDENTIFIER);
    let mut bad_param = good.clone();
    bad_param[29] = 9;
    assert_eq!(decode_message(&bad_param).unwrap_err().subcode, error::open_subcode::UNSUPPORTED_OPTIONAL_PARAMETER);
}

#[test]
fn header_errors() {
    let mut msg = Message::Keepalive.to_bytes(&ctx());
    msg[3] = 0;
    assert_eq!(decode_message(&msg).unwrap_err().subcode, error::header_subcode::CONNECTION_NOT_SYNCHRONIZED);
    let mut msg = Message::Keepalive.to_bytes(&ctx());
    msg[18] = 9;
    let e = decode_message(&msg).unwrap_err();
    assert_eq!((e.subcode, e.data.clone()), (error::header_subcode::BAD_MESSAGE_TYPE, vec![9]));
    let mut msg = Message::Keepalive.to_bytes(&ctx());
    msg.push(0);
    msg[17] = 20;
    let e = decode_message(&msg).unwrap_err();
    assert_eq!((e.subcode, e.data.clone()), (error::header_subcode::BAD_MESSAGE_LENGTH, vec![0, 20]));
    // A 5000-byte UPDATE is too long without the extended message capability.
    let big = update_bytes(&[], &base_attrs(), &[8, 10].repeat(2480));
    assert_eq!(Message::decode(&big, &ctx()).unwrap_err().subcode, error::header_subcode::BAD_MESSAGE_LENGTH);
    let ext = DecodeContext { extended_message: true, ..ctx() };
    assert!(Message::decode(&big, &ext).is_ok());
}

#[test]
fn notification_and_route_refresh_round_trip() {
    for msg in [
        Message::Notification(Notification { code: 6, subcode: cease_subcode::ADMIN_SHUTDOWN, data: b"bye".to_vec() }),
        Message::RouteRefresh(RouteRefresh { afi_safi: AfiSafi::IPV6_UNICAST, subtype: 0 }),
    ] {
        assert_eq!(decode_message(&msg.to_bytes(&ctx())), Ok(msg));
    }
}

#[test]
fn update_golden_ipv4() {
    // ORIGIN IGP, AS_PATH 65001, NEXT_HOP 10.0.0.1, MED 5, two prefixes, one withdrawal.
    let attrs = [&base_attrs()[..], &[0x80, 4, 4, 0, 0, 0, 5]].concat();
    let bytes = update_bytes(&[8, 192], &attrs, &[24, 10, 1, 1, 16, 172, 16]);
    let u = decode_update(&bytes).unwrap();
    assert_eq!(u.withdrawn, vec![v4("192.0.0.0/8")]);
    assert_eq!(u.nlri, vec![v4("10.1.1.0/24"), v4("172.16.0.0/16")]);
    assert_eq!(u.attrs.origin, Origin::Igp);
    assert_eq!(u.attrs.as_path, AsPath::from_sequence([65001]));
    assert_eq!(u.attrs.next_hop, Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))));
    assert_eq!(u.attrs.med, Some(5));
    assert!(u.errors.is_empty());
    assert_eq!(Message::Update(u).to_bytes(&ctx()), bytes);
}

#[test]
fn update_round_trip_every_attribute() {
    let attrs = PathAttrs {
        origin: Origin::Incomplete,
        as_path: AsPath {
            segments: vec![
                AsSegment { kind: SegmentKind::Sequence, asns: vec![65001, 4_200_000_000] },
                AsSegment { kind: SegmentKind::Set, asns: vec![1, 2] },
            ],
        },
        next_hop: Some(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1))),
        link_local_next_hop: None,
        med: Some(10),
        local_pref: Some(200),
        atomic_aggregate: true,
        aggregator: Some((65001, Ipv4Addr::new(1, 1, 1, 1))),
        communities: vec![0xfde9_0064],
        originator_id: Some(Ipv4Addr::new(2, 2, 2, 2)),
        cluster_list: vec![Ipv4Addr::new(3, 3, 3, 3)],
        ext_communities: vec![0x0002_fde9_0000_0064],
        large_communities: vec![LargeCommunity { global_admin: 65001, local_1: 1, local_2: 2 }],
        pmsi_tunnel: Some(super::evpn::PmsiTunnel::IngressReplication {
            flags: 0,
            vni: 100,
            endpoint: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
        }),
        evpn: None,
        unknown: vec![RawAttribute {
            flags: flag::OPTIONAL | flag::TRANSITIVE | flag::PARTIAL,
            type_code: 99,
            value: vec![1, 2, 3],
        }],
    };
    let update = Update { nlri: vec![v4("10.0.0.0/8")], attrs, ..Default::default() };
    let bytes = Message::Update(update.clone()).to_bytes(&ctx());
    assert_eq!(decode_message(&bytes), Ok(Message::Update(update)));
}

#[test]
fn update_mp_ipv6_round_trip() {
    let global: Ipv6Addr = "2001:db8::1".parse().unwrap();
    let ll: Ipv6Addr = "fe80::1".parse().unwrap();
    let update = Update {
        attrs: PathAttrs { as_path: AsPath::from_sequence([65002]), ..Default::default() },
        mp_reach: Some(MpReach {
            afi_safi: AfiSafi::IPV6_UNICAST,
            next_hop: IpAddr::V6(global),
            link_local_next_hop: Some(ll),
            nlri: vec![v6("2001:db8:1::/48"), v6("::/0")],
        }),
        mp_unreach: Some(MpUnreach { afi_safi: AfiSafi::IPV6_UNICAST, withdrawn: vec![v6("2001:db8:2::/64")] }),
        ..Default::default()
    };
    let bytes = Message::Update(update.clone()).to_bytes(&ctx());
    // MP_REACH_NLRI is the first attribute (RFC 7606 §5.1).
    assert_eq!(bytes[24], type_code::MP_REACH_NLRI);
    let back = decode_update(&bytes).unwrap();
    assert_eq!(back, update);
    assert_eq!(back.announced().count(), 2);
    assert_eq!(back.withdrawn_routes().collect::<Vec<_>>(), vec![v6("2001:db8:2::/64")]);
}

#[test]
fn two_octet_session_as4_path_merge_and_encode() {
    let two = DecodeContext { four_octet_as: false, ..ctx() };
    let attrs = PathAttrs {
        as_path: AsPath::from_sequence([65001, 4_200_000_000, 65003]),
        next_hop: Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
        ..Default::default()
    };
    let update = Update { nlri: vec![v4("10.0.0.0/8")], attrs: attrs.clone(), ..Default::default() };
    let bytes = Message::Update(update.clone()).to_bytes(&two);
    // The 2-octet AS_PATH carries AS_TRANS, AS4_PATH carries the truth.
    assert!(bytes.windows(2).any(|w| w == open::AS_TRANS.to_be_bytes()));
    assert_eq!(decode_update_ctx(&bytes, &two).attrs.as_path, attrs.as_path);
    // A 4-octet session ignores AS4_PATH (RFC 6793 §4.2.2).
    let mut raw = Vec::new();
    Message::Update(update).encode(&ctx(), &mut raw);
    assert_eq!(decode_update_ctx(&raw, &ctx()).attrs.as_path, attrs.as_path);
}

fn decode_update_ctx(bytes: &[u8], ctx: &DecodeContext) -> Update {
    match Message::decode(bytes, ctx).unwrap() {
        Message::Update(u) => u,
        _ => panic!(),
    }
}

#[test]
fn unknown_optional_transitive_passes_with_partial_and_non_transitive_is_dropped() {
    let attrs = [&base_attrs()[..], &[0xc0, 200, 2, 7, 7], &[0x80, 201, 1, 9]].concat();
    let u = decode_update(&update_bytes(&[], &attrs, &[8, 10])).unwrap();
    assert_eq!(u.attrs.unknown, vec![RawAttribute { flags: 0xe0, type_code: 200, value: vec![7, 7] }]);
    assert!(u.errors.is_empty());
}

#[test]
fn unknown_attribute_with_extended_length_round_trips() {
    // Found by fuzzing: the Extended Length bit was kept in the stored
    // flags, so re-encoding a short value changed the flags.
    let attrs = [&base_attrs()[..], &[0xf0, 255, 0, 0]].concat();
    let u = decode_update(&update_bytes(&[], &attrs, &[8, 10])).unwrap();
    assert_eq!(u.attrs.unknown[0].flags, 0xe0);
    let again = decode_update(&Message::Update(u.clone()).to_bytes(&ctx())).unwrap();
    assert_eq!(again, u);
}

#[test]
fn next_hop_without_nlri_round_trips() {
    // Found by fuzzing: a withdraw-only UPDATE carrying NEXT_HOP lost it when re-encoded.
    let u = decode_update(&update_bytes(&[8, 192], &base_attrs(), &[])).unwrap();
    assert_eq!(u.attrs.next_hop, Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))));
    assert_eq!(decode_update(&Message::Update(u.clone()).to_bytes(&ctx())).unwrap(), u);
}

// ---- RFC 7606 classification, one test per rule ----

fn action_of(attrs: &[u8]) -> Option<ErrorAction> {
    decode_update(&update_bytes(&[], attrs, &[8, 10])).unwrap().error_action()
}

#[test]
fn rfc7606_treat_as_withdraw_cases() {
    let taw = Some(ErrorAction::TreatAsWithdraw);
    // §7.1 ORIGIN with an undefined value.
    assert_eq!(action_of(&[&[0x40, 1, 1, 7][..], &AS_PATH_65001, &NEXT_HOP_10_0_0_1].concat()), taw);
    // §7.2 AS_PATH segment overrunning the attribute.
    assert_eq!(action_of(&[&ORIGIN_IGP[..], &[0x40, 2, 4, 2, 5, 0, 1], &NEXT_HOP_10_0_0_1].concat()), taw);
    // §7.3 NEXT_HOP of 3 bytes.
    assert_eq!(action_of(&[&ORIGIN_IGP[..], &AS_PATH_65001, &[0x40, 3, 3, 1, 2, 3]].concat()), taw);
    // §7.4 MED of 2 bytes.
    assert_eq!(action_of(&[&base_attrs()[..], &[0x80, 4, 2, 0, 1]].concat()), taw);
    // §7.8 COMMUNITIES not a multiple of 4.
    assert_eq!(action_of(&[&base_attrs()[..], &[0xc0, 8, 3, 0, 1, 2]].concat()), taw);
    // §7.10 CLUSTER_LIST not a multiple of 4.
    assert_eq!(action_of(&[&base_attrs()[..], &[0x80, 10, 5, 1, 1, 1, 1, 1]].concat()), taw);
    // §7.14 EXTENDED_COMMUNITIES not a multiple of 8.
    assert_eq!(action_of(&[&base_attrs()[..], &[0xc0, 16, 4, 0, 2, 0, 1]].concat()), taw);
    // RFC 8092 §6 LARGE_COMMUNITIES not a multiple of 12.
    assert_eq!(action_of(&[&base_attrs()[..], &[0xc0, 32, 4, 0, 0, 0, 1]].concat()), taw);
    // §3 c: well-known ORIGIN flagged optional.
    assert_eq!(action_of(&[&[0xc0, 1, 1, 0][..], &AS_PATH_65001, &NEXT_HOP_10_0_0_1].concat()), taw);
    // §3 d: ORIGIN missing.
    assert_eq!(action_of(&[&AS_PATH_65001[..], &NEXT_HOP_10_0_0_1].concat()), taw);
    // §4: the last attribute overruns the Total Path Attribute Length.
    assert_eq!(action_of(&[&base_attrs()[..], &[0x80, 4, 9, 0]].concat()), taw);
}

#[test]
fn rfc7606_attribute_discard_cases() {
    let discard = Some(ErrorAction::AttributeDiscard);
    // §7.6 ATOMIC_AGGREGATE with a value.
    let u = decode_update(&update_bytes(&[], &[&base_attrs()[..], &[0x40, 6, 1, 0]].concat(), &[8, 10])).unwrap();
    assert_eq!(u.error_action(), discard);
    assert!(!u.attrs.atomic_aggregate);
    assert_eq!(u.nlri, vec![v4("10.0.0.0/8")]);
    // §7.7 AGGREGATOR of the wrong length.
    assert_eq!(action_of(&[&base_attrs()[..], &[0xc0, 7, 5, 0, 1, 2, 3, 4]].concat()), discard);
    // §7.5 LOCAL_PREF from an external peer.
    let ebgp = DecodeContext { ebgp: true, ..ctx() };
    let bytes = update_bytes(&[], &[&base_attrs()[..], &[0x40, 5, 4, 0, 0, 0, 100]].concat(), &[8, 10]);
    let u = decode_update_ctx(&bytes, &ebgp);
    assert_eq!((u.error_action(), u.attrs.local_pref), (discard, None));
    // RFC 6793 §6: malformed AS4_PATH on a 2-octet session.
    let two = DecodeContext { four_octet_as: false, ..ctx() };
    let attrs =
        [&ORIGIN_IGP[..], &[0x40, 2, 4, 2, 1, 0xfd, 0xe9], &NEXT_HOP_10_0_0_1, &[0xc0, 17, 3, 2, 1, 0]].concat();
    assert_eq!(decode_update_ctx(&update_bytes(&[], &attrs, &[8, 10]), &two).error_action(), discard);
}

#[test]
fn rfc7606_afi_safi_disable_and_session_reset_cases() {
    // §7.11: MP_REACH_NLRI with a next hop length of 5 for IPv6 unicast.
    let mp = [0x80, 14, 10, 0, 2, 1, 5, 1, 2, 3, 4, 5, 0];
    let attrs = [&mp[..], &ORIGIN_IGP, &AS_PATH_65001].concat();
    let u = decode_update(&update_bytes(&[], &attrs, &[])).unwrap();
    assert_eq!(u.error_action(), Some(ErrorAction::AfiSafiDisable(AfiSafi::IPV6_UNICAST)));
    // §3 g: MP_REACH_NLRI twice resets the session.
    let mp_ok = [0x80, 15, 3, 0, 2, 1];
    let e = decode_update(&update_bytes(&[], &[&mp_ok[..], &mp_ok].concat(), &[])).unwrap_err();
    assert_eq!(e.subcode, update_subcode::MALFORMED_ATTRIBUTE_LIST);
    // §3 g: any other repeated attribute: later copies discarded, no error.
    let u = decode_update(&update_bytes(&[], &[&base_attrs()[..], &[0x40, 1, 1, 2]].concat(), &[8, 10])).unwrap();
    assert_eq!((u.error_action(), u.attrs.origin), (None, Origin::Igp));
    // §5.3 (RFC 4271 §6.3): a bad prefix length in the NLRI field resets the session.
    let e = decode_update(&update_bytes(&[], &base_attrs(), &[33, 1, 2, 3, 4, 5])).unwrap_err();
    assert_eq!(e.subcode, update_subcode::INVALID_NETWORK_FIELD);
    // RFC 4271 §6.3: an unrecognized well-known attribute resets the session.
    let e = decode_update(&update_bytes(&[], &[&base_attrs()[..], &[0x40, 250, 0]].concat(), &[8, 10])).unwrap_err();
    assert_eq!((e.subcode, e.data.clone()), (update_subcode::UNRECOGNIZED_WELL_KNOWN, vec![0x40, 250, 0]));
    // Withdrawn Routes Length beyond the message.
    let mut bytes = update_bytes(&[8, 10], &[], &[]);
    bytes[20] = 50;
    assert_eq!(decode_update(&bytes).unwrap_err().subcode, update_subcode::MALFORMED_ATTRIBUTE_LIST);
}

#[test]
fn withdraw_only_update_needs_no_attributes() {
    let u = decode_update(&update_bytes(&[24, 10, 0, 0], &[], &[])).unwrap();
    assert_eq!((u.error_action(), u.withdrawn.len()), (None, 1));
}

// ---- packing ----

fn split_messages(mut buf: &[u8]) -> Vec<Message> {
    let ext = DecodeContext { extended_message: true, ..ctx() };
    let mut out = Vec::new();
    while !buf.is_empty() {
        let len = message::frame_len(buf, 65535).unwrap().unwrap();
        out.push(Message::decode(&buf[..len], &ext).unwrap());
        buf = &buf[len..];
    }
    out
}

#[test]
fn packing_fills_messages_up_to_the_limit() {
    let routes: Vec<Nlri> = (0..5000u32)
        .map(|i| Nlri::Ipv4(Ipv4Prefix::new(Ipv4Addr::from(0x0a00_0000 + (i << 8)), 24).unwrap()))
        .collect();
    let attrs = PathAttrs {
        as_path: AsPath::from_sequence([65001]),
        next_hop: Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
        ..Default::default()
    };
    let mut buf = Vec::new();
    let n = pack_announce(&attrs, Family::Ipv4Unicast, &routes, &ctx(), 4096, &mut buf);
    // Each /24 takes 4 bytes: about 1000 per 4096-byte message.
    assert_eq!(n, 5);
    let msgs = split_messages(&buf);
    assert_eq!(msgs.len(), 5);
    let mut got = Vec::new();
    let mut offset = 0;
    for m in &msgs {
        let len = message::frame_len(&buf[offset..], 65535).unwrap().unwrap();
        assert!(len <= 4096);
        offset += len;
        let Message::Update(u) = m else { panic!() };
        assert_eq!(u.attrs.next_hop, attrs.next_hop);
        got.extend(u.nlri.iter().copied());
    }
    assert_eq!(got, routes);

    // With extended messages, one message holds them all.
    let mut buf = Vec::new();
    assert_eq!(pack_announce(&attrs, Family::Ipv4Unicast, &routes, &ctx(), 65535, &mut buf), 1);
    let mut buf = Vec::new();
    assert_eq!(pack_withdraw(Family::Ipv4Unicast, &routes, 4096, &mut buf), 5);
    let withdrawn: Vec<Nlri> = split_messages(&buf)
        .into_iter()
        .flat_map(|m| match m {
            Message::Update(u) => u.withdrawn,
            _ => vec![],
        })
        .collect();
    assert_eq!(withdrawn, routes);
}

#[test]
fn packing_ipv6_uses_mp_attributes() {
    let routes: Vec<Nlri> = (0..3000u32)
        .map(|i| {
            Nlri::Ipv6(Ipv6Prefix::new(Ipv6Addr::from((0x2001_0db8u128 << 96) | ((i as u128) << 64)), 64).unwrap())
        })
        .collect();
    let attrs = PathAttrs {
        as_path: AsPath::from_sequence([65001]),
        next_hop: Some(IpAddr::V6("2001:db8::1".parse().unwrap())),
        ..Default::default()
    };
    let mut buf = Vec::new();
    let n = pack_announce(&attrs, Family::Ipv6Unicast, &routes, &ctx(), 4096, &mut buf);
    assert!((7..=8).contains(&n), "{n}");
    let got: Vec<Nlri> = split_messages(&buf)
        .into_iter()
        .flat_map(|m| match m {
            Message::Update(u) => u.mp_reach.unwrap().nlri,
            _ => vec![],
        })
        .collect();
    assert_eq!(got, routes);
    let mut buf = Vec::new();
    pack_withdraw(Family::Ipv6Unicast, &routes, 4096, &mut buf);
    let got: Vec<Nlri> = split_messages(&buf)
        .into_iter()
        .flat_map(|m| match m {
            Message::Update(u) => u.mp_unreach.unwrap().withdrawn,
            _ => vec![],
        })
        .collect();
    assert_eq!(got, routes);
}

#[test]
fn end_of_rib_markers() {
    for family in Family::ALL {
        let mut buf = Vec::new();
        encode_end_of_rib(family, &mut buf);
        let Ok(Message::Update(u)) = decode_message(&buf) else { panic!() };
        assert_eq!(u.end_of_rib(), Some(family.afi_safi()));
    }
}

proptest! {
    #[test]
    fn decoding_random_bytes_never_panics(body in proptest::collection::vec(any::<u8>(), 0..300), kind in 1u8..6) {
        let mut msg = vec![0xff; 16];
        msg.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
        msg.push(kind);
        msg.extend_from_slice(&body);
        let _ = decode_message(&msg);
        let _ = Message::decode(&msg, &DecodeContext { four_octet_as: false, extended_message: false, ebgp: true });
    }

    #[test]
    fn decoding_mutated_updates_never_panics(flips in proptest::collection::vec((0usize..64, any::<u8>()), 1..6)) {
        let mut msg = update_bytes(&[8, 10], &[&base_attrs()[..], &[0xc0, 8, 4, 0, 1, 0, 2]].concat(), &[24, 10, 1, 1]);
        for (at, v) in flips {
            let at = 19 + at % (msg.len() - 19);
            msg[at] = v;
        }
        let _ = decode_message(&msg);
    }

    #[test]
    fn ipv4_updates_round_trip(prefixes in proptest::collection::vec((any::<u32>(), 0u8..=32), 1..50), med in any::<Option<u32>>(), path in proptest::collection::vec(1u32.., 0..10)) {
        let nlri: Vec<Nlri> = prefixes.iter().map(|&(a, l)| Nlri::Ipv4(Ipv4Prefix::new(Ipv4Addr::from(a), l).unwrap())).collect();
        let attrs = PathAttrs { as_path: AsPath::from_sequence(path), med, next_hop: Some(IpAddr::V4(Ipv4Addr::new(1, 2, 3, 4))), ..Default::default() };
        let update = Update { nlri, attrs, ..Default::default() };
        let bytes = Message::Update(update.clone()).to_bytes(&ctx());
        prop_assert_eq!(decode_message(&bytes), Ok(Message::Update(update)));
    }
}

/// Conformance gap 1: RFC 5065 §5 with RFC 7606 §7.2 — AS_CONFED_SEQUENCE or
/// AS_CONFED_SET from a peer outside our (absent) confederation makes the
/// AS_PATH malformed: treat-as-withdraw, never a route.
#[test]
fn confederation_segments_from_outside_our_confederation_are_treat_as_withdraw() {
    for kind in [3u8, 4] {
        // AS_PATH: one confed segment of AS 65010, then AS_SEQUENCE 65001.
        let as_path = [0x40, 2, 12, kind, 1, 0, 0, 0xfe, 0xf2, 2, 1, 0, 0, 0xfd, 0xe9];
        let attrs = [&ORIGIN_IGP[..], &as_path, &NEXT_HOP_10_0_0_1].concat();
        for ebgp in [true, false] {
            let ctx = DecodeContext { ebgp, ..ctx() };
            let u = decode_update_ctx(&update_bytes(&[], &attrs, &[8, 10]), &ctx);
            assert_eq!(u.error_action(), Some(ErrorAction::TreatAsWithdraw), "segment type {kind}, ebgp {ebgp}");
            assert!(u.attrs.as_path.segments.is_empty(), "the malformed path is not kept");
        }
    }
}

/// Conformance gap 2: RFC 7606 §7.9 and §7.10 — ORIGINATOR_ID and
/// CLUSTER_LIST from an external peer are discarded, whatever their content
/// or length; from an internal peer a bad length still withdraws.
#[test]
fn originator_id_and_cluster_list_from_ebgp_are_discarded_whatever_they_hold() {
    let ebgp = DecodeContext { ebgp: true, ..ctx() };
    let ibgp = DecodeContext { ebgp: false, ..ctx() };
    let cases: [&[u8]; 4] = [
        &[0x80, 9, 4, 10, 0, 0, 9],     // ORIGINATOR_ID, well formed
        &[0x80, 9, 3, 10, 0, 0],        // ORIGINATOR_ID, bad length
        &[0x80, 10, 4, 10, 9, 9, 9],    // CLUSTER_LIST, well formed
        &[0x80, 10, 5, 10, 9, 9, 9, 9], // CLUSTER_LIST, bad length
    ];
    for (i, attribute) in cases.iter().enumerate() {
        let bytes = update_bytes(&[], &[&base_attrs()[..], attribute].concat(), &[8, 10]);
        let u = decode_update_ctx(&bytes, &ebgp);
        assert_eq!(u.error_action(), Some(ErrorAction::AttributeDiscard), "case {i} from eBGP");
        assert_eq!((u.attrs.originator_id, u.attrs.cluster_list.len()), (None, 0), "case {i}: not acted on");
        assert_eq!(u.nlri, vec![v4("10.0.0.0/8")], "case {i}: the route stays");
        let expected = if i % 2 == 0 { None } else { Some(ErrorAction::TreatAsWithdraw) };
        assert_eq!(decode_update_ctx(&bytes, &ibgp).error_action(), expected, "case {i} from iBGP");
    }
}
