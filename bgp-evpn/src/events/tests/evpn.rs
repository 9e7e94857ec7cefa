//! The L2VPN EVPN family through whole speakers: capability negotiation,
//! MP_REACH/MP_UNREACH, keys without labels, reflection and eBGP transit
//! with the VTEP next hop unchanged.

use super::*;
use crate::packet::evpn::{Esi, EvpnRoute, ExtCommunity, MacAddr, PmsiTunnel, RouteDistinguisher, tunnel_type};

fn evpn_speaker(asn: u32, id: &str, neighbors: &[(&str, u32)]) -> BgpConfig {
    let mut c = speaker(asn, id, neighbors);
    for n in &mut c.neighbors {
        n.families = vec![Family::Ipv4Unicast, Family::L2vpnEvpn];
    }
    c
}

fn rd(id: &str, n: u16) -> RouteDistinguisher {
    RouteDistinguisher::Ipv4 { addr: id.parse().unwrap(), number: n }
}

const MAC1: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x11]);

fn type2(label1: u32) -> EvpnRoute {
    EvpnRoute::MacIpAdvertisement {
        rd: rd("10.0.0.1", 100),
        esi: Esi::ZERO,
        ethernet_tag: 0,
        mac: MAC1,
        ip: Some(ip("192.168.100.11")),
        label1,
        label2: Some(4001),
    }
}

fn type3() -> EvpnRoute {
    EvpnRoute::InclusiveMulticast { rd: rd("10.0.0.1", 100), ethernet_tag: 0, originator: ip("10.0.0.1") }
}

fn type5() -> EvpnRoute {
    EvpnRoute::IpPrefix {
        rd: rd("10.0.0.1", 4001),
        esi: Esi::ZERO,
        ethernet_tag: 0,
        prefix: "192.168.200.0/24".parse().unwrap(),
        gateway: ip("0.0.0.0"),
        label: 4001,
    }
}

fn type1() -> EvpnRoute {
    EvpnRoute::EthernetAutoDiscovery {
        rd: rd("10.0.0.1", 1),
        esi: Esi([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
        ethernet_tag: u32::MAX,
        label: 0,
    }
}

fn type4() -> EvpnRoute {
    EvpnRoute::EthernetSegment {
        rd: rd("10.0.0.1", 1),
        esi: Esi([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
        originator: ip("10.0.0.1"),
    }
}

fn attrs(rt_vni: u32) -> PathAttrs {
    PathAttrs {
        ext_communities: vec![
            ExtCommunity::RouteTargetAs2 { asn: 65000, number: rt_vni }.to_u64(),
            ExtCommunity::Encapsulation { tunnel_type: tunnel_type::VXLAN }.to_u64(),
        ],
        ..Default::default()
    }
}

/// The path node `i` holds for `route` (key form), with its attributes.
fn path(net: &Net, i: usize, route: EvpnRoute) -> Option<Arc<PathAttrs>> {
    net.nodes[i].rib.loc(&Nlri::Evpn(route.key())).map(|e| e.best().attrs.clone())
}

fn originate_all(net: &mut Net) {
    let sp = &mut net.nodes[0];
    sp.originate(Nlri::Evpn(type2(100)), attrs(100));
    let mut a3 = attrs(100);
    a3.pmsi_tunnel = Some(PmsiTunnel::IngressReplication { flags: 0, vni: 100, endpoint: ip("10.0.0.1") });
    sp.originate(Nlri::Evpn(type3()), a3);
    sp.originate(Nlri::Evpn(type5()), attrs(4001));
    sp.originate(Nlri::Evpn(type1()), attrs(100));
    sp.originate(Nlri::Evpn(type4()), attrs(100));
    net.run();
}

#[test]
fn route_reflector_passes_every_route_type_with_labels_and_the_vtep_next_hop() {
    let leaf1 = evpn_speaker(65000, "10.0.0.1", &[("10.0.0.2", 65000)]);
    let mut rr = evpn_speaker(65000, "10.0.0.2", &[("10.0.0.1", 65000), ("10.0.0.3", 65000)]);
    for n in &mut rr.neighbors {
        n.route_reflector_client = true;
    }
    let leaf2 = evpn_speaker(65000, "10.0.0.3", &[("10.0.0.2", 65000)]);
    let mut net = Net::new(vec![leaf1, rr, leaf2]);
    assert_eq!(net.state(2, "10.0.0.2"), State::Established);
    let negotiated = net.nodes[2].summary(0)[0].negotiated.clone().unwrap();
    assert!(negotiated.families.contains(&Family::L2vpnEvpn), "EVPN capability negotiated");
    originate_all(&mut net);

    for route in [type1(), type2(100), type3(), type4(), type5()] {
        let a = path(&net, 2, route).unwrap_or_else(|| panic!("leaf2 lacks {route}"));
        assert_eq!(a.next_hop, Some(ip("10.0.0.1")), "VTEP next hop of {route} changed by the reflector");
        assert_eq!(a.originator_id, Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(a.cluster_list, vec![Ipv4Addr::new(10, 0, 0, 2)]);
        assert!(a.ext_communities.contains(
            &ExtCommunity::RouteTargetAs2 { asn: 65000, number: if route == type5() { 4001 } else { 100 } }.to_u64()
        ));
    }
    assert_eq!(path(&net, 2, type2(100)).unwrap().evpn.map(|d| (d.label1, d.label2)), Some((100, Some(4001))));
    assert_eq!(path(&net, 2, type5()).unwrap().evpn.map(|d| (d.label1, d.gateway)), Some((4001, Some(ip("0.0.0.0")))));
    assert_eq!(
        path(&net, 2, type3()).unwrap().pmsi_tunnel,
        Some(PmsiTunnel::IngressReplication { flags: 0, vni: 100, endpoint: ip("10.0.0.1") })
    );
    // The spine holds them without any VNI configured and shows them.
    let shown = net.nodes[1].routes(Family::L2vpnEvpn, None);
    assert_eq!(shown.len(), 5);
    let t2 = shown.iter().find(|r| r.prefix.contains("[2]")).unwrap();
    assert_eq!(t2.prefix, "10.0.0.1:100 [2]:[0]:[48]:[02:00:00:00:00:11]:[32]:[192.168.100.11]");
    assert_eq!(t2.paths[0].ext_communities, vec!["RT:65000:100", "ET:8"]);
    assert_eq!(t2.paths[0].evpn.as_ref().map(|e| e.label1), Some(100));
    // No EVPN route is installed as an IP route.
    assert!(net.fib[2].is_empty());

    // A new label for the same key replaces the route (labels are not part
    // of the key, RFC 7432 §7.2) ...
    net.nodes[0].originate(Nlri::Evpn(type2(101)), attrs(100));
    net.run();
    assert_eq!(net.nodes[2].rib.loc.len_of(Family::L2vpnEvpn), 5);
    assert_eq!(path(&net, 2, type2(100)).unwrap().evpn.map(|d| d.label1), Some(101));
    // ... and a withdrawal, sent in key form, removes it everywhere.
    net.nodes[0].withdraw_originated(Nlri::Evpn(type2(101)));
    net.run();
    assert!(path(&net, 1, type2(0)).is_none() && path(&net, 2, type2(0)).is_none());
    assert_eq!(net.nodes[2].rib.loc.len_of(Family::L2vpnEvpn), 4);
}

#[test]
fn ebgp_spine_keeps_the_vtep_next_hop_and_prepends_its_as() {
    let leaf1 = evpn_speaker(65001, "10.0.0.1", &[("10.0.0.2", 65000)]);
    let spine = evpn_speaker(65000, "10.0.0.2", &[("10.0.0.1", 65001), ("10.0.0.3", 65002)]);
    let leaf2 = evpn_speaker(65002, "10.0.0.3", &[("10.0.0.2", 65000)]);
    let mut net = Net::new(vec![leaf1, spine, leaf2]);
    originate_all(&mut net);
    let a = path(&net, 2, type2(0)).unwrap();
    assert_eq!(a.next_hop, Some(ip("10.0.0.1")));
    assert_eq!(a.as_path.to_string(), "65000 65001");
    assert_eq!(path(&net, 2, type3()).unwrap().next_hop, Some(ip("10.0.0.1")));
}

#[test]
fn peers_without_the_family_get_no_evpn_routes() {
    let leaf1 = evpn_speaker(65000, "10.0.0.1", &[("10.0.0.2", 65000)]);
    // The peer speaks IPv4 only: EVPN is not negotiated.
    let other = speaker(65000, "10.0.0.2", &[("10.0.0.1", 65000)]);
    let mut net = Net::new(vec![leaf1, other]);
    assert_eq!(net.state(0, "10.0.0.2"), State::Established);
    let negotiated = net.nodes[0].summary(0)[0].negotiated.clone().unwrap();
    assert!(!negotiated.families.contains(&Family::L2vpnEvpn));
    originate_all(&mut net);
    assert_eq!(net.nodes[1].rib.loc.len_of(Family::L2vpnEvpn), 0);
}

// ---- MAC-VRFs and IP-VRFs end to end: two leaves and a route reflector ----

use crate::evpn::config::{EvpnConfig, VniConfig, VrfConfig};
use crate::fib::NextHop;

const RMAC1: MacAddr = MacAddr([0x02, 0xaa, 0, 0, 0, 1]);
const RMAC3: MacAddr = MacAddr([0x02, 0xaa, 0, 0, 0, 3]);

fn leaf(id: &str, router_mac: MacAddr, networks: &[&str]) -> BgpConfig {
    let mut c = evpn_speaker(65000, id, &[("10.0.0.2", 65000)]);
    let vni = |vni| VniConfig {
        vni,
        rd: None,
        import_rts: vec![],
        export_rts: vec![],
        vrf: Some("tenant1".into()),
        static_macs: vec![],
    };
    c.evpn = Some(EvpnConfig {
        vtep_ip: ip(id),
        vnis: vec![vni(100), vni(200)],
        vrfs: vec![VrfConfig {
            name: "tenant1".into(),
            l3vni: 4001,
            router_mac,
            rd: None,
            import_rts: vec![],
            export_rts: vec![],
            networks: networks.iter().map(|p| n(p)).collect(),
        }],
        duplicate_detection: Default::default(),
    });
    c
}

/// leaf1 (10.0.0.1) and leaf2 (10.0.0.3), iBGP clients of a reflector
/// (10.0.0.2) that has no VNI.
fn fabric() -> Net {
    let mut rr = evpn_speaker(65000, "10.0.0.2", &[("10.0.0.1", 65000), ("10.0.0.3", 65000)]);
    for nb in &mut rr.neighbors {
        nb.route_reflector_client = true;
    }
    let mut net = Net::new(vec![
        leaf("10.0.0.1", RMAC1, &["192.168.10.0/24"]),
        rr,
        leaf("10.0.0.3", RMAC3, &["192.168.30.0/24"]),
    ]);
    net.run();
    net
}

#[test]
fn leaves_build_flood_lists_remote_macs_arp_entries_and_vrf_routes_from_each_other() {
    let mut net = fabric();
    for (i, other) in [(0, "10.0.0.3"), (2, "10.0.0.1")] {
        let fib = &net.evpn_fib[i];
        for vni in [100, 200] {
            assert_eq!(fib.flood.get(&vni).map(|s| s.iter().copied().collect()), Some(vec![ip(other)]), "node {i}");
        }
    }
    let t5 = net.evpn_fib[0].routes.get(&(Some("tenant1".into()), "192.168.30.0/24".parse().unwrap()));
    assert_eq!(t5, Some(&vec![NextHop::Vtep { vtep: ip("10.0.0.3"), vni: 4001, router_mac: RMAC3 }]));

    // leaf1 learns a host and its ARP binding: leaf2 holds the MAC behind
    // leaf1, the suppression entry and the /32 in the VRF.
    net.nodes[0].evpn_local_mac(0, 100, MAC1, true);
    net.nodes[0].evpn_local_neighbor(0, 100, ip("192.168.10.5"), Some(MAC1));
    net.run();
    let fib = &net.evpn_fib[2];
    assert_eq!(fib.macs.get(&(100, MAC1)), Some(&ip("10.0.0.1")));
    assert_eq!(fib.neighbors.get(&(100, ip("192.168.10.5"))), Some(&MAC1));
    let host = fib.routes.get(&(Some("tenant1".into()), "192.168.10.5/32".parse().unwrap()));
    assert_eq!(host, Some(&vec![NextHop::Vtep { vtep: ip("10.0.0.1"), vni: 4001, router_mac: RMAC1 }]));
    assert!(net.evpn_fib[0].macs.is_empty(), "our own routes install nothing");

    // The host moves to leaf2: leaf2 advertises sequence 1, leaf1 withdraws
    // its routes and points the MAC at leaf2.
    net.nodes[2].evpn_local_mac(1, 100, MAC1, true);
    net.run();
    assert_eq!(net.evpn_fib[0].macs.get(&(100, MAC1)), Some(&ip("10.0.0.3")));
    assert!(!net.evpn_fib[2].macs.contains_key(&(100, MAC1)));
    let macs = net.nodes[2].evpn.as_ref().unwrap().macs(1, Some(100));
    assert_eq!((macs[0].kind, macs[0].sequence), ("local", 1));
    // leaf1 withdrew: only leaf2's routes for the MAC remain on the reflector.
    let on_rr = net.nodes[1].routes(Family::L2vpnEvpn, None);
    let for_mac: Vec<_> = on_rr.iter().filter(|r| r.prefix.contains("02:00:00:00:00:11")).collect();
    assert_eq!(for_mac.len(), 1, "{for_mac:#?}");
    assert!(for_mac[0].prefix.starts_with("10.0.0.3:100"));
}
