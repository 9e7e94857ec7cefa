//! EVPN wire format against bytes laid out field by field from the RFCs'
//! figures (RFC 7432 §7.1–7.4, RFC 9136 §3.1, RFC 4360, RFC 6514 §5) and
//! against bytes GoBGP itself encoded (module `gobgp_captured`).

use super::*;

fn rd1() -> RouteDistinguisher {
    RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(1, 1, 1, 1), number: 100 }
}

const RD1: [u8; 8] = [0x00, 0x01, 1, 1, 1, 1, 0x00, 0x64];
const MAC: [u8; 6] = [0x00, 0x11, 0x22, 0x33, 0x44, 0x55];

fn round_trip(route: &EvpnRoute, golden: &[u8]) {
    let mut out = Vec::new();
    route.encode(&mut out);
    assert_eq!(out, golden, "encoding of {route}");
    let mut decoded = Vec::new();
    assert_eq!(EvpnRoute::decode_all(golden, &mut decoded), Ok(0));
    assert_eq!(decoded, vec![*route]);
}

#[test]
fn type2_mac_ip_with_l3vni() {
    let route = EvpnRoute::MacIpAdvertisement {
        rd: rd1(),
        esi: Esi::ZERO,
        ethernet_tag: 0,
        mac: MacAddr(MAC),
        ip: Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
        label1: 100,
        label2: Some(4000),
    };
    let mut golden = vec![2, 40];
    golden.extend_from_slice(&RD1);
    golden.extend_from_slice(&[0; 10]); // ESI
    golden.extend_from_slice(&[0, 0, 0, 0]); // Ethernet tag
    golden.push(48);
    golden.extend_from_slice(&MAC);
    golden.extend_from_slice(&[32, 10, 0, 0, 1]);
    golden.extend_from_slice(&[0x00, 0x00, 0x64, 0x00, 0x0f, 0xa0]); // VNI 100, L3VNI 4000
    round_trip(&route, &golden);
    assert_eq!(route.to_string(), "1.1.1.1:100 [2]:[0]:[48]:[00:11:22:33:44:55]:[32]:[10.0.0.1]");
}

#[test]
fn type2_mac_only_and_ipv6() {
    let mac_only = EvpnRoute::MacIpAdvertisement {
        rd: RouteDistinguisher::As2 { asn: 65000, number: 10 },
        esi: Esi::ZERO,
        ethernet_tag: 0,
        mac: MacAddr(MAC),
        ip: None,
        label1: 10,
        label2: None,
    };
    let mut golden = vec![2, 33, 0, 0, 0xfd, 0xe8, 0, 0, 0, 10];
    golden.extend_from_slice(&[0; 14]);
    golden.push(48);
    golden.extend_from_slice(&MAC);
    golden.extend_from_slice(&[0, 0, 0, 10]);
    round_trip(&mac_only, &golden);

    let v6 = EvpnRoute::MacIpAdvertisement {
        rd: RouteDistinguisher::As4 { asn: 4_200_000_000, number: 7 },
        esi: Esi::ZERO,
        ethernet_tag: 0,
        mac: MacAddr(MAC),
        ip: Some("2001:db8::1".parse().unwrap()),
        label1: 7,
        label2: None,
    };
    let mut golden = vec![2, 49, 0, 2, 0xfa, 0x56, 0xea, 0x00, 0, 7];
    golden.extend_from_slice(&[0; 14]);
    golden.push(48);
    golden.extend_from_slice(&MAC);
    golden.push(128);
    golden.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    golden.extend_from_slice(&[0, 0, 7]);
    round_trip(&v6, &golden);
}

#[test]
fn type3_inclusive_multicast() {
    let route = EvpnRoute::InclusiveMulticast {
        rd: rd1(),
        ethernet_tag: 0,
        originator: IpAddr::V4(Ipv4Addr::new(10, 255, 0, 1)),
    };
    let mut golden = vec![3, 17];
    golden.extend_from_slice(&RD1);
    golden.extend_from_slice(&[0, 0, 0, 0, 32, 10, 255, 0, 1]);
    round_trip(&route, &golden);
    assert_eq!(route.to_string(), "1.1.1.1:100 [3]:[0]:[32]:[10.255.0.1]");
}

#[test]
fn type5_ip_prefix_v4_and_v6() {
    let route = EvpnRoute::IpPrefix {
        rd: rd1(),
        esi: Esi::ZERO,
        ethernet_tag: 0,
        prefix: "192.168.10.0/24".parse().unwrap(),
        gateway: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        label: 4000,
    };
    let mut golden = vec![5, 34];
    golden.extend_from_slice(&RD1);
    golden.extend_from_slice(&[0; 14]);
    golden.extend_from_slice(&[24, 192, 168, 10, 0, 0, 0, 0, 0, 0x00, 0x0f, 0xa0]);
    round_trip(&route, &golden);
    assert_eq!(route.to_string(), "1.1.1.1:100 [5]:[0]:[24]:[192.168.10.0]");

    let v6 = EvpnRoute::IpPrefix {
        rd: rd1(),
        esi: Esi::ZERO,
        ethernet_tag: 0,
        prefix: "2001:db8:1::/48".parse().unwrap(),
        gateway: IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        label: 4000,
    };
    let mut golden = vec![5, 58];
    golden.extend_from_slice(&RD1);
    golden.extend_from_slice(&[0; 14]);
    golden.extend_from_slice(&[48, 0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    golden.extend_from_slice(&[0; 16]);
    golden.extend_from_slice(&[0x00, 0x0f, 0xa0]);
    round_trip(&v6, &golden);
}

#[test]
fn types_1_and_4_are_decoded_for_reflection() {
    let esi = Esi([0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09]);
    let ad = EvpnRoute::EthernetAutoDiscovery { rd: rd1(), esi, ethernet_tag: 0xffff_ffff, label: 0 };
    let mut golden = vec![1, 25];
    golden.extend_from_slice(&RD1);
    golden.extend_from_slice(&esi.0);
    golden.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0]);
    round_trip(&ad, &golden);

    let es = EvpnRoute::EthernetSegment { rd: rd1(), esi, originator: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)) };
    let mut golden = vec![4, 23];
    golden.extend_from_slice(&RD1);
    golden.extend_from_slice(&esi.0);
    golden.extend_from_slice(&[32, 10, 0, 0, 9]);
    round_trip(&es, &golden);
}

#[test]
fn unknown_route_type_is_skipped_and_the_rest_kept() {
    let route =
        EvpnRoute::InclusiveMulticast { rd: rd1(), ethernet_tag: 0, originator: IpAddr::V4(Ipv4Addr::LOCALHOST) };
    let mut buf = vec![9, 3, 0xaa, 0xbb, 0xcc];
    route.encode(&mut buf);
    let mut out = Vec::new();
    assert_eq!(EvpnRoute::decode_all(&buf, &mut out), Ok(1));
    assert_eq!(out, vec![route]);
}

#[test]
fn malformed_routes_are_errors_naming_the_field() {
    let mut good = Vec::new();
    EvpnRoute::MacIpAdvertisement {
        rd: rd1(),
        esi: Esi::ZERO,
        ethernet_tag: 0,
        mac: MacAddr(MAC),
        ip: None,
        label1: 1,
        label2: None,
    }
    .encode(&mut good);
    let mut out = Vec::new();
    // Truncated value and truncated header.
    assert_eq!(EvpnRoute::decode_all(&good[..good.len() - 1], &mut out), Err(EvpnError::Truncated));
    assert_eq!(EvpnRoute::decode_all(&[2], &mut out), Err(EvpnError::Truncated));
    // MAC length other than 48.
    let mut bad = good.clone();
    bad[2 + 22] = 40;
    assert_eq!(EvpnRoute::decode_all(&bad, &mut out), Err(EvpnError::BadField("MAC address length")));
    // IP length 24.
    let mut bad = good.clone();
    bad[2 + 29] = 24;
    assert_eq!(EvpnRoute::decode_all(&bad, &mut out), Err(EvpnError::BadField("IP address length")));
    // Length that is neither one nor two labels.
    let mut bad = good.clone();
    bad[1] += 1;
    bad.push(0);
    assert_eq!(EvpnRoute::decode_all(&bad, &mut out), Err(EvpnError::BadLength { route_type: 2, len: 34 }));
    // Type 5 with a /33 IPv4 prefix.
    let mut t5 = Vec::new();
    EvpnRoute::IpPrefix {
        rd: rd1(),
        esi: Esi::ZERO,
        ethernet_tag: 0,
        prefix: "10.0.0.0/8".parse().unwrap(),
        gateway: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        label: 1,
    }
    .encode(&mut t5);
    t5[2 + 22] = 33;
    assert_eq!(EvpnRoute::decode_all(&t5, &mut out), Err(EvpnError::BadField("IP prefix length")));
    // Type 3 whose originator length disagrees with the route length.
    let bad3 = [3, 17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 128, 1, 2, 3, 4];
    assert_eq!(EvpnRoute::decode_all(&bad3, &mut out), Err(EvpnError::BadLength { route_type: 3, len: 17 }));
    assert!(out.is_empty());
}

#[test]
fn extended_communities_golden() {
    let cases = [
        // RFC 4360 §4: 2-octet AS route target 65000:100 (FRR's auto RT for VNI 100).
        (
            ExtCommunity::RouteTargetAs2 { asn: 65000, number: 100 },
            [0x00, 0x02, 0xfd, 0xe8, 0, 0, 0, 100],
            "RT:65000:100",
        ),
        (
            ExtCommunity::RouteTargetIpv4 { addr: Ipv4Addr::new(10, 0, 0, 1), number: 5 },
            [0x01, 0x02, 10, 0, 0, 1, 0, 5],
            "RT:10.0.0.1:5",
        ),
        (
            ExtCommunity::RouteTargetAs4 { asn: 4_200_000_000, number: 5 },
            [0x02, 0x02, 0xfa, 0x56, 0xea, 0, 0, 5],
            "RT:4200000000:5",
        ),
        // RFC 9012 §4.1 encapsulation, tunnel type 8 = VXLAN.
        (ExtCommunity::Encapsulation { tunnel_type: tunnel_type::VXLAN }, [0x03, 0x0c, 0, 0, 0, 0, 0, 8], "ET:8"),
        // RFC 9135 §8.1 router MAC.
        (
            ExtCommunity::RouterMac(MacAddr(MAC)),
            [0x06, 0x03, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55],
            "Rmac:00:11:22:33:44:55",
        ),
        // RFC 7432 §7.7 MAC mobility, sticky, sequence 0; and non-sticky sequence 3.
        (
            ExtCommunity::MacMobility { sticky: true, sequence: 0 },
            [0x06, 0x00, 0x01, 0, 0, 0, 0, 0],
            "MM:0, sticky MAC",
        ),
        (ExtCommunity::MacMobility { sticky: false, sequence: 3 }, [0x06, 0x00, 0x00, 0, 0, 0, 0, 3], "MM:3"),
        // RFC 7432 §7.8 default gateway.
        (ExtCommunity::DefaultGateway, [0x03, 0x0d, 0, 0, 0, 0, 0, 0], "Default Gateway"),
    ];
    for (community, bytes, text) in cases {
        let raw = u64::from_be_bytes(bytes);
        assert_eq!(ExtCommunity::from_u64(raw), community);
        assert_eq!(community.to_u64(), raw);
        assert_eq!(community.to_string(), text);
    }
    let other = u64::from_be_bytes([0x43, 0x00, 0, 0, 0, 0, 0, 1]);
    assert_eq!(ExtCommunity::from_u64(other), ExtCommunity::Other(other));
    assert_eq!(ExtCommunity::Other(other).to_u64(), other);
    assert!(ExtCommunity::RouteTargetAs2 { asn: 1, number: 1 }.is_route_target());
    assert!(!ExtCommunity::DefaultGateway.is_route_target());
}

#[test]
fn mac_mobility_takes_highest_sequence_and_any_sticky() {
    let c = |sticky, sequence| ExtCommunity::MacMobility { sticky, sequence }.to_u64();
    let rt = ExtCommunity::RouteTargetAs2 { asn: 65000, number: 100 }.to_u64();
    assert_eq!(mac_mobility(&[rt]), None);
    assert_eq!(mac_mobility(&[c(false, 2), rt, c(false, 7)]), Some((false, 7)));
    assert_eq!(mac_mobility(&[c(true, 0), c(false, 7)]), Some((true, 7)));
}

#[test]
fn pmsi_tunnel_ingress_replication_golden() {
    // RFC 6514 §5: flags 0, tunnel type 6, label = VNI 100 (RFC 8365 §5.1.3), endpoint 10.255.0.1.
    let golden = [0x00, 0x06, 0x00, 0x00, 0x64, 10, 255, 0, 1];
    let pmsi =
        PmsiTunnel::IngressReplication { flags: 0, vni: 100, endpoint: IpAddr::V4(Ipv4Addr::new(10, 255, 0, 1)) };
    assert_eq!(PmsiTunnel::decode(&golden), Ok(pmsi.clone()));
    let mut out = Vec::new();
    pmsi.encode(&mut out);
    assert_eq!(out, golden);
    assert_eq!(PmsiTunnel::decode(&golden[..4]), Err(EvpnError::Truncated));
    assert_eq!(PmsiTunnel::decode(&golden[..8]), Err(EvpnError::BadField("PMSI ingress replication endpoint")));
    let other = [0x01, 0x03, 0, 0, 0, 0xaa, 0xbb];
    let decoded = PmsiTunnel::decode(&other).unwrap();
    let mut out = Vec::new();
    decoded.encode(&mut out);
    assert_eq!(out, other);
}

#[test]
fn route_distinguishers_of_all_three_types() {
    for (rd, bytes, text) in [
        (RouteDistinguisher::As2 { asn: 65000, number: 100 }, [0, 0, 0xfd, 0xe8, 0, 0, 0, 100], "65000:100"),
        (rd1(), RD1, "1.1.1.1:100"),
        (
            RouteDistinguisher::As4 { asn: 4_200_000_000, number: 100 },
            [0, 2, 0xfa, 0x56, 0xea, 0, 0, 100],
            "4200000000:100",
        ),
        (RouteDistinguisher::Other([0, 9, 1, 2, 3, 4, 5, 6]), [0, 9, 1, 2, 3, 4, 5, 6], "0x0009010203040506"),
    ] {
        assert_eq!(RouteDistinguisher::from_bytes(bytes), rd);
        assert_eq!(rd.to_bytes(), bytes);
        assert_eq!(rd.to_string(), text);
    }
}

proptest::proptest! {
    /// Whatever decodes re-encodes to the same bytes (of the length
    /// `encoded_len` says) and splits into key and non-key fields that join
    /// back into the route; nothing panics.
    #[test]
    fn arbitrary_bytes_never_panic_and_round_trip(buf in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
        let mut out = Vec::new();
        if let Ok(0) = EvpnRoute::decode_all(&buf, &mut out) {
            let mut again = Vec::new();
            for r in &out {
                let at = again.len();
                r.encode(&mut again);
                proptest::prop_assert_eq!(again.len() - at, r.encoded_len());
                let (key, data) = r.split();
                proptest::prop_assert_eq!(key.key(), key);
                proptest::prop_assert_eq!(key.with_data(&data), *r);
            }
            let mut decoded = Vec::new();
            proptest::prop_assert_eq!(EvpnRoute::decode_all(&again, &mut decoded), Ok(0));
            proptest::prop_assert_eq!(decoded, out);
        }
    }
}

/// Bytes GoBGP 3 wrote for its own EVPN routes, cut from an MRT TABLE_DUMPv2
/// dump of its global RIB (`[[mrt-dump]] dump-type = "table"`) after:
///
/// ```text
/// gobgp global rib -a evpn add macadv 00:11:22:33:44:55 10.0.0.1 etag 0 label 100,4000 \
///     rd 1.1.1.1:100 rt 65000:100 encap vxlan router-mac 00:aa:bb:cc:dd:ee
/// gobgp global rib -a evpn add multicast 10.255.0.1 etag 0 rd 1.1.1.1:100 rt 65000:100 \
///     encap vxlan pmsi ingress-repl 100 10.255.0.1
/// gobgp global rib -a evpn add prefix 192.168.10.0/24 etag 0 rd 1.1.1.1:100 rt 65000:4000 \
///     encap vxlan label 4000 router-mac 00:aa:bb:cc:dd:ee
/// ```
mod gobgp_captured {
    use super::*;

    const TYPE2_NLRI: &[u8] = &[
        0x02, 0x28, 0x00, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00, 0x64, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x30, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x20, 0x0a, 0x00, 0x00, 0x01,
        0x00, 0x00, 0x64, 0x00, 0x0f, 0xa0,
    ];
    /// The value of the type 2 route's EXTENDED_COMMUNITIES attribute.
    const TYPE2_EXT_COMMUNITIES: &[u8] = &[
        0x00, 0x02, 0xfd, 0xe8, 0x00, 0x00, 0x00, 0x64, 0x03, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x06, 0x03,
        0x00, 0xaa, 0xbb, 0xcc, 0xdd, 0xee,
    ];
    const TYPE3_NLRI: &[u8] = &[
        0x03, 0x11, 0x00, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00, 0x64, 0x00, 0x00, 0x00, 0x00, 0x20, 0x0a, 0xff, 0x00,
        0x01,
    ];
    /// The value of the type 3 route's PMSI_TUNNEL attribute (flags 0xc0, code 22, length 9 before it).
    const TYPE3_PMSI: &[u8] = &[0x00, 0x06, 0x00, 0x00, 0x64, 0x0a, 0xff, 0x00, 0x01];
    const TYPE5_NLRI: &[u8] = &[
        0x05, 0x22, 0x00, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00, 0x64, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x18, 0xc0, 0xa8, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0xa0,
    ];

    fn decode_one(bytes: &[u8]) -> EvpnRoute {
        let mut out = Vec::new();
        assert_eq!(EvpnRoute::decode_all(bytes, &mut out), Ok(0));
        assert_eq!(out.len(), 1);
        let mut again = Vec::new();
        out[0].encode(&mut again);
        assert_eq!(again, bytes, "our encoding of {} differs from GoBGP's", out[0]);
        out.pop().unwrap()
    }

    #[test]
    fn type2_from_gobgp() {
        assert_eq!(
            decode_one(TYPE2_NLRI),
            EvpnRoute::MacIpAdvertisement {
                rd: rd1(),
                esi: Esi::ZERO,
                ethernet_tag: 0,
                mac: MacAddr(MAC),
                ip: Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
                label1: 100,
                label2: Some(4000),
            }
        );
        let communities: Vec<ExtCommunity> = TYPE2_EXT_COMMUNITIES
            .chunks_exact(8)
            .map(|c| ExtCommunity::from_u64(u64::from_be_bytes(c.try_into().unwrap())))
            .collect();
        assert_eq!(
            communities,
            [
                ExtCommunity::RouteTargetAs2 { asn: 65000, number: 100 },
                ExtCommunity::Encapsulation { tunnel_type: tunnel_type::VXLAN },
                ExtCommunity::RouterMac(MacAddr([0x00, 0xaa, 0xbb, 0xcc, 0xdd, 0xee])),
            ]
        );
    }

    #[test]
    fn type3_with_pmsi_from_gobgp() {
        assert_eq!(
            decode_one(TYPE3_NLRI),
            EvpnRoute::InclusiveMulticast {
                rd: rd1(),
                ethernet_tag: 0,
                originator: IpAddr::V4(Ipv4Addr::new(10, 255, 0, 1))
            }
        );
        let pmsi = PmsiTunnel::decode(TYPE3_PMSI).unwrap();
        assert_eq!(
            pmsi,
            PmsiTunnel::IngressReplication { flags: 0, vni: 100, endpoint: IpAddr::V4(Ipv4Addr::new(10, 255, 0, 1)) }
        );
        let mut again = Vec::new();
        pmsi.encode(&mut again);
        assert_eq!(again, TYPE3_PMSI);
    }

    #[test]
    fn type5_from_gobgp() {
        assert_eq!(
            decode_one(TYPE5_NLRI),
            EvpnRoute::IpPrefix {
                rd: rd1(),
                esi: Esi::ZERO,
                ethernet_tag: 0,
                prefix: "192.168.10.0/24".parse().unwrap(),
                gateway: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                label: 4000,
            }
        );
    }
}

/// Whole UPDATEs of family L2VPN EVPN: MP_REACH_NLRI / MP_UNREACH_NLRI
/// with EVPN NLRI (RFC 4760 §3-4, RFC 7432 §7), and RFC 7606 for them.
mod update {
    use super::*;
    use crate::packet::attribute::{flag, type_code};
    use crate::packet::update::{pack_announce, pack_withdraw};
    use crate::packet::{AfiSafi, DecodeContext, ErrorAction, Family, Message, Nlri, PathAttrs, Update};

    fn ctx() -> DecodeContext {
        DecodeContext { four_octet_as: true, extended_message: false, ebgp: false }
    }

    /// Type 2 of VNI 100 for 00:11:22:33:44:55 with RD 1.1.1.1:100, as in
    /// `type2_mac_ip_with_l3vni` but without IP.
    fn type2_bytes() -> Vec<u8> {
        let mut v = vec![2, 33];
        v.extend_from_slice(&RD1);
        v.extend_from_slice(&[0; 14]);
        v.push(48);
        v.extend_from_slice(&MAC);
        v.extend_from_slice(&[0, 0, 0, 100]);
        v
    }

    /// An UPDATE laid out field by field: MP_REACH_NLRI (AFI 25, SAFI 70,
    /// next hop 10.255.0.1) with `nlri`, ORIGIN IGP, empty AS_PATH,
    /// LOCAL_PREF 100, EXTENDED_COMMUNITIES RT:65000:100 + ET:8, and
    /// `extra` attributes.
    fn update_bytes(nlri: &[u8], next_hop: &[u8], extra: &[u8]) -> Vec<u8> {
        let mp_len = 3 + 1 + next_hop.len() + 1 + nlri.len();
        let mut attrs = vec![flag::OPTIONAL | flag::EXTENDED_LENGTH, type_code::MP_REACH_NLRI];
        attrs.extend_from_slice(&(mp_len as u16).to_be_bytes());
        if mp_len <= 255 {
            // The one-octet length form, as encoders use when it fits.
            attrs = vec![flag::OPTIONAL, type_code::MP_REACH_NLRI, mp_len as u8];
        }
        attrs.extend_from_slice(&[0, 25, 70, next_hop.len() as u8]);
        attrs.extend_from_slice(next_hop);
        attrs.push(0);
        attrs.extend_from_slice(nlri);
        attrs.extend_from_slice(&[0x40, 1, 1, 0, 0x40, 2, 0, 0x40, 5, 4, 0, 0, 0, 100]);
        attrs.extend_from_slice(&[0xc0, 16, 16, 0x00, 0x02, 0xfd, 0xe8, 0, 0, 0, 100]);
        attrs.extend_from_slice(&[0x03, 0x0c, 0, 0, 0, 0, 0, 8]);
        attrs.extend_from_slice(extra);
        let mut body = vec![0, 0];
        body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
        body.extend_from_slice(&attrs);
        let mut msg = vec![0xff; 16];
        msg.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
        msg.push(2);
        msg.extend_from_slice(&body);
        msg
    }

    fn decode(bytes: &[u8]) -> Update {
        match Message::decode(bytes, &ctx()) {
            Ok(Message::Update(u)) => u,
            other => panic!("not an UPDATE: {other:?}"),
        }
    }

    const PMSI: [u8; 12] = [0xc0, 22, 9, 0, 6, 0, 0x00, 0x64, 10, 255, 0, 1];

    #[test]
    fn mp_reach_with_type_2_and_type_3_decodes_and_packs_back_to_the_same_bytes() {
        let mut nlri = type2_bytes();
        let mut type3 = vec![3, 17];
        type3.extend_from_slice(&RD1);
        type3.extend_from_slice(&[0, 0, 0, 0, 32, 10, 255, 0, 1]);
        nlri.extend_from_slice(&type3);
        let bytes = update_bytes(&nlri, &[10, 255, 0, 1], &PMSI);
        let u = decode(&bytes);
        assert!(u.errors.is_empty(), "{:?}", u.errors);
        let reach = u.mp_reach.as_ref().unwrap();
        assert_eq!(reach.afi_safi, AfiSafi::L2VPN_EVPN);
        assert_eq!(reach.next_hop, IpAddr::V4(Ipv4Addr::new(10, 255, 0, 1)));
        assert_eq!(reach.nlri.len(), 2);
        let Nlri::Evpn(EvpnRoute::MacIpAdvertisement { label1: 100, mac: MacAddr(MAC), .. }) = reach.nlri[0] else {
            panic!("{:?}", reach.nlri[0]);
        };
        assert_eq!(
            u.attrs.pmsi_tunnel,
            Some(PmsiTunnel::IngressReplication {
                flags: 0,
                vni: 100,
                endpoint: IpAddr::V4(Ipv4Addr::new(10, 255, 0, 1))
            })
        );
        let typed: Vec<ExtCommunity> = u.attrs.ext_communities.iter().map(|&c| ExtCommunity::from_u64(c)).collect();
        assert_eq!(
            typed,
            vec![
                ExtCommunity::RouteTargetAs2 { asn: 65000, number: 100 },
                ExtCommunity::Encapsulation { tunnel_type: tunnel_type::VXLAN }
            ]
        );
        // Packed from the RIB's form: keys plus the path's non-key fields.
        let (key, data) = reach.nlri[0].split();
        let attrs = PathAttrs { next_hop: Some(reach.next_hop), evpn: data, ..u.attrs.clone() };
        let mut out = Vec::new();
        let (key3, _) = reach.nlri[1].split();
        // Type 3 carries no non-key fields, so both pack under one attribute set.
        assert_eq!(pack_announce(&attrs, Family::L2vpnEvpn, &[key, key3], &ctx(), 4096, &mut out), 1);
        assert_eq!(out, bytes);
    }

    #[test]
    fn withdrawals_carry_the_key_with_zero_labels() {
        let route = EvpnRoute::decode_value(2, &type2_bytes()[2..]).unwrap().unwrap();
        let mut out = Vec::new();
        pack_withdraw(Family::L2vpnEvpn, &[Nlri::Evpn(route.key())], 4096, &mut out);
        let u = decode(&out);
        let un = u.mp_unreach.unwrap();
        assert_eq!(un.afi_safi, AfiSafi::L2VPN_EVPN);
        let Nlri::Evpn(EvpnRoute::MacIpAdvertisement { label1, .. }) = un.withdrawn[0] else { panic!() };
        assert_eq!(label1, 0);
        assert_eq!(un.withdrawn[0].split().0, Nlri::Evpn(route.key()));
        // An empty MP_UNREACH of the family is its End-of-RIB (RFC 4724 §2).
        let mut eor = Vec::new();
        crate::packet::update::encode_end_of_rib(Family::L2vpnEvpn, &mut eor);
        assert_eq!(decode(&eor).end_of_rib(), Some(AfiSafi::L2VPN_EVPN));
    }

    #[test]
    fn rfc7606_malformed_evpn_nlri_disables_the_family_and_bad_pmsi_withdraws() {
        // A type 2 whose length byte claims one octet more than its layout.
        let mut bad = type2_bytes();
        bad[1] = 34;
        bad.push(0);
        let u = decode(&update_bytes(&bad, &[10, 255, 0, 1], &[]));
        assert_eq!(u.error_action(), Some(ErrorAction::AfiSafiDisable(AfiSafi::L2VPN_EVPN)));
        assert!(u.mp_reach.is_none());
        // An NLRI running past the attribute.
        let mut cut = type2_bytes();
        cut.truncate(20);
        let u = decode(&update_bytes(&cut, &[10, 255, 0, 1], &[]));
        assert_eq!(u.error_action(), Some(ErrorAction::AfiSafiDisable(AfiSafi::L2VPN_EVPN)));
        // A 32-octet next hop means nothing for EVPN.
        let u = decode(&update_bytes(&type2_bytes(), &[0xfe; 32], &[]));
        assert_eq!(u.error_action(), Some(ErrorAction::AfiSafiDisable(AfiSafi::L2VPN_EVPN)));
        // A PMSI tunnel attribute too short for its fixed part: treat-as-withdraw.
        let u = decode(&update_bytes(&type2_bytes(), &[10, 255, 0, 1], &[0xc0, 22, 3, 0, 6, 0]));
        assert_eq!(u.error_action(), Some(ErrorAction::TreatAsWithdraw));
        assert_eq!(u.errors[0].type_code, type_code::PMSI_TUNNEL);
        // Ingress replication whose endpoint is neither 4 nor 16 octets.
        let u = decode(&update_bytes(&type2_bytes(), &[10, 255, 0, 1], &[0xc0, 22, 7, 0, 6, 0, 0, 100, 10, 0]));
        assert_eq!(u.error_action(), Some(ErrorAction::TreatAsWithdraw));
        // Extended communities of a length not a multiple of 8 (RFC 7606 §7.14).
        let mut bytes = update_bytes(&type2_bytes(), &[10, 255, 0, 1], &[]);
        let ext_at = bytes.windows(3).position(|w| w == [0xc0, 16, 16]).unwrap();
        bytes[ext_at + 2] = 15;
        bytes.remove(ext_at + 3);
        let len = u16::from_be_bytes([bytes[16], bytes[17]]) - 1;
        bytes[16..18].copy_from_slice(&len.to_be_bytes());
        let attr_len = u16::from_be_bytes([bytes[21], bytes[22]]) - 1;
        assert_eq!(attr_len as usize, bytes.len() - 23, "total path attribute length at 21..23");
        bytes[21..23].copy_from_slice(&attr_len.to_be_bytes());
        assert_eq!(decode(&bytes).error_action(), Some(ErrorAction::TreatAsWithdraw));
        // An unknown route type is skipped and the rest of the NLRI kept.
        let mut nlri = vec![9, 2, 0xaa, 0xbb];
        nlri.extend_from_slice(&type2_bytes());
        let u = decode(&update_bytes(&nlri, &[10, 255, 0, 1], &[]));
        assert!(u.errors.is_empty());
        assert_eq!(u.mp_reach.unwrap().nlri.len(), 1);
    }
}
