//! The EVPN instance alone: routes in, actions out.

use super::*;
use crate::evpn::config::{VniConfig, VrfConfig};

const MAC1: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x11]);
const S: u64 = crate::neighbor::NANOS_PER_SEC;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn instance(max_moves: u32) -> Evpn {
    instance_with(max_moves, vec![])
}

fn instance_with(max_moves: u32, static_macs: Vec<config::StaticMac>) -> Evpn {
    let config = config_with(max_moves, static_macs);
    Evpn::new(&config, 65000, Ipv4Addr::new(10, 0, 0, 1))
}

fn config_with(max_moves: u32, static_macs: Vec<config::StaticMac>) -> EvpnConfig {
    let config = EvpnConfig {
        vtep_ip: ip("10.0.0.1"),
        vnis: vec![VniConfig {
            vni: 100,
            rd: None,
            import_rts: vec![],
            export_rts: vec![],
            vrf: Some("t1".into()),
            static_macs,
        }],
        vrfs: vec![VrfConfig {
            name: "t1".into(),
            l3vni: 4001,
            router_mac: MacAddr([2, 0, 0, 0, 0, 1]),
            rd: None,
            import_rts: vec![],
            export_rts: vec![],
            networks: vec![],
        }],
        duplicate_detection: DuplicateDetection { max_moves, window_secs: 60 },
    };
    config.validate(Ipv4Addr::new(10, 0, 0, 1)).unwrap();
    config
}

/// A remote type 2 for MAC1 from `vtep` with MAC mobility `(sticky, seq)`.
fn remote(evpn: &mut Evpn, now: u64, vtep: &str, mobility: Option<(bool, u32)>) -> EvpnRoute {
    let key = EvpnRoute::MacIpAdvertisement {
        rd: RouteDistinguisher::Ipv4 { addr: vtep.parse().unwrap(), number: 100 },
        esi: Esi::ZERO,
        ethernet_tag: 0,
        mac: MAC1,
        ip: None,
        label1: 0,
        label2: None,
    };
    let mut ext = vec![derived_rt(65000, 100).to_u64()];
    if let Some((sticky, sequence)) = mobility {
        ext.push(ExtCommunity::MacMobility { sticky, sequence }.to_u64());
    }
    let attrs = PathAttrs {
        next_hop: Some(ip(vtep)),
        ext_communities: ext,
        evpn: Some(crate::packet::evpn::EvpnPathData { label1: 100, ..Default::default() }),
        ..Default::default()
    };
    evpn.route_changed(now, key, None, Some(&attrs));
    key
}

fn originated_mm(actions: &[EvpnAction]) -> Option<Option<(bool, u32)>> {
    actions.iter().find_map(|a| match a {
        EvpnAction::Originate(EvpnRoute::MacIpAdvertisement { ip: None, .. }, attrs) => {
            Some(mac_mobility(&attrs.ext_communities))
        }
        _ => None,
    })
}

#[test]
fn type3_and_rd_rt_are_derived_as_frr_does() {
    let mut e = instance(5);
    e.start();
    let actions = e.take_actions();
    let [EvpnAction::Originate(route, attrs)] = &actions[..] else { panic!("{actions:?}") };
    assert_eq!(route.to_string(), "10.0.0.1:100 [3]:[0]:[32]:[10.0.0.1]");
    let communities: Vec<String> =
        attrs.ext_communities.iter().map(|&c| ExtCommunity::from_u64(c).to_string()).collect();
    assert_eq!(communities, ["RT:65000:100", "ET:8"]);
    assert_eq!(
        attrs.pmsi_tunnel,
        Some(PmsiTunnel::IngressReplication { flags: 0, vni: 100, endpoint: ip("10.0.0.1") })
    );
}

#[test]
fn a_mac_that_moves_here_gets_the_next_sequence_number_and_the_remote_entry_goes() {
    let mut e = instance(5);
    remote(&mut e, 0, "10.0.0.3", Some((false, 4)));
    assert_eq!(
        e.take_actions(),
        vec![EvpnAction::Fib(FibChange::RemoteMac { vni: 100, mac: MAC1, vtep: Some(ip("10.0.0.3")), sticky: false })]
    );
    e.local_mac(S, 100, MAC1, true);
    let actions = e.take_actions();
    assert_eq!(originated_mm(&actions), Some(Some((false, 5))), "RFC 7432 §15.1: one above the remote's 4");
    assert!(actions.contains(&EvpnAction::Fib(FibChange::RemoteMac {
        vni: 100,
        mac: MAC1,
        vtep: None,
        sticky: false
    })));
    // The remote VTEP moves it back with a higher number: ours is withdrawn.
    remote(&mut e, 2 * S, "10.0.0.3", Some((false, 6)));
    let actions = e.take_actions();
    assert!(actions.iter().any(|a| matches!(a, EvpnAction::Withdraw(EvpnRoute::MacIpAdvertisement { ip: None, .. }))));
    assert!(actions.contains(&EvpnAction::Fib(FibChange::RemoteMac {
        vni: 100,
        mac: MAC1,
        vtep: Some(ip("10.0.0.3")),
        sticky: false
    })));
    let shown = e.macs(2 * S, Some(100));
    assert_eq!((shown[0].kind, shown[0].sequence, shown[0].moves), ("remote", 6, 2));
}

#[test]
fn equal_sequence_numbers_go_to_the_lower_vtep_address() {
    let mut e = instance(5);
    remote(&mut e, 0, "10.0.0.3", Some((false, 2)));
    remote(&mut e, 0, "10.0.0.2", Some((false, 2)));
    let actions = e.take_actions();
    assert_eq!(
        actions.last(),
        Some(&EvpnAction::Fib(FibChange::RemoteMac { vni: 100, mac: MAC1, vtep: Some(ip("10.0.0.2")), sticky: false }))
    );
    // A sticky MAC stays where it is whatever the numbers say (§15.2).
    remote(&mut e, 0, "10.0.0.3", Some((true, 0)));
    e.local_mac(S, 100, MAC1, true);
    let actions = e.take_actions();
    assert!(actions.contains(&EvpnAction::Fib(FibChange::RemoteMac {
        vni: 100,
        mac: MAC1,
        vtep: Some(ip("10.0.0.3")),
        sticky: true
    })));
    assert_eq!(originated_mm(&actions), None, "the sticky remote wins: nothing of ours is advertised");
}

const STICKY: config::StaticMac = config::StaticMac { mac: MAC1, sticky: true };

/// RFC 7432 §15.2: a configured sticky MAC is advertised with the sticky
/// bit and stays ours whatever remote VTEPs advertise (sticky or with any
/// sequence number); each refused move is counted; the dataplane's reports
/// about it change nothing.
#[test]
fn a_static_sticky_mac_is_advertised_sticky_and_never_moves() {
    let mut e = instance_with(2, vec![STICKY]);
    e.start();
    let actions = e.take_actions();
    assert_eq!(originated_mm(&actions), Some(Some((true, 0))), "the sticky bit, sequence 0: {actions:?}");
    remote(&mut e, S, "10.0.0.3", Some((false, 7)));
    remote(&mut e, 2 * S, "10.0.0.2", Some((true, 9)));
    e.local_mac(3 * S, 100, MAC1, false);
    let actions = e.take_actions();
    assert!(
        !actions.iter().any(|a| matches!(a, EvpnAction::Withdraw(_) | EvpnAction::Fib(FibChange::RemoteMac { .. }))),
        "nothing moves: {actions:?}"
    );
    let shown = &e.macs(3 * S, Some(100))[0];
    assert_eq!((shown.kind, shown.sticky, shown.moves, shown.refused_moves), ("local", true, 0, 2));
    assert!(!shown.duplicate, "refused moves are no moves for duplicate detection");
}

/// A MAC a remote VTEP advertises sticky never moves to a local learn.
#[test]
fn a_received_sticky_mac_never_moves_to_a_local_learn() {
    let mut e = instance(5);
    remote(&mut e, 0, "10.0.0.3", Some((true, 0)));
    e.take_actions();
    e.local_mac(S, 100, MAC1, true);
    e.local_mac(2 * S, 100, MAC1, true);
    assert_eq!(e.take_actions(), vec![], "not advertised, the remote entry stays");
    let shown = &e.macs(2 * S, Some(100))[0];
    assert_eq!((shown.kind, shown.vtep, shown.refused_moves), ("remote", Some(ip("10.0.0.3")), 2));
}

/// A sticky MAC added to a VNI by a new configuration is advertised and
/// takes over from the remote one; removed, it is withdrawn and the
/// remote advertisement is installed.
#[test]
fn static_macs_follow_reconfiguration() {
    let mut e = instance(5);
    e.start();
    let key = remote(&mut e, 0, "10.0.0.3", Some((false, 3)));
    e.take_actions();
    let attrs = PathAttrs {
        next_hop: Some(ip("10.0.0.3")),
        ext_communities: vec![
            derived_rt(65000, 100).to_u64(),
            ExtCommunity::MacMobility { sticky: false, sequence: 3 }.to_u64(),
        ],
        evpn: Some(crate::packet::evpn::EvpnPathData { label1: 100, ..Default::default() }),
        ..Default::default()
    };
    e.reconfigure(S, &config_with(5, vec![STICKY]), &Rebuild::default(), [(key, &attrs)]);
    let actions = e.take_actions();
    // Sticky: the sequence number does not matter (§15.2), ours stays 0.
    assert_eq!(originated_mm(&actions), Some(Some((true, 0))), "{actions:?}");
    assert!(actions.contains(&EvpnAction::Fib(FibChange::RemoteMac {
        vni: 100,
        mac: MAC1,
        vtep: None,
        sticky: false
    })));
    assert_eq!(e.macs(S, Some(100))[0].kind, "local");
    e.reconfigure(2 * S, &config_with(5, vec![]), &Rebuild::default(), [(key, &attrs)]);
    let actions = e.take_actions();
    assert!(actions.iter().any(|a| matches!(a, EvpnAction::Withdraw(EvpnRoute::MacIpAdvertisement { .. }))));
    assert!(actions.contains(&EvpnAction::Fib(FibChange::RemoteMac {
        vni: 100,
        mac: MAC1,
        vtep: Some(ip("10.0.0.3")),
        sticky: false
    })));
}

#[test]
fn a_mac_moving_too_often_is_frozen_and_reported() {
    let mut e = instance(3);
    remote(&mut e, 0, "10.0.0.3", Some((false, 0)));
    e.local_mac(S, 100, MAC1, true); // move 1, ours with 1
    remote(&mut e, 2 * S, "10.0.0.3", Some((false, 2))); // move 2
    e.local_mac(3 * S, 100, MAC1, false);
    e.local_mac(3 * S, 100, MAC1, true); // move 3: frozen, ours with 3 stays
    e.take_actions();
    remote(&mut e, 4 * S, "10.0.0.3", Some((false, 4)));
    assert_eq!(e.take_actions(), vec![], "a duplicate MAC's routes are not processed");
    let shown = e.macs(4 * S, None);
    assert_eq!((shown[0].kind, shown[0].sequence, shown[0].moves, shown[0].duplicate), ("local", 3, 3, true));
}

#[test]
fn arp_bindings_become_mac_ip_routes_with_the_l3vni_and_router_mac() {
    let mut e = instance(5);
    e.local_neighbor(0, 100, ip("192.168.1.10"), Some(MAC1));
    assert_eq!(e.take_actions(), vec![], "the MAC is not ours yet");
    e.local_mac(0, 100, MAC1, true);
    let actions = e.take_actions();
    let irb = actions.iter().find_map(|a| match a {
        EvpnAction::Originate(r @ EvpnRoute::MacIpAdvertisement { ip: Some(_), .. }, attrs) => Some((r, attrs)),
        _ => None,
    });
    let (route, attrs) = irb.expect("a MAC+IP route");
    assert_eq!(route.to_string(), "10.0.0.1:100 [2]:[0]:[48]:[02:00:00:00:00:11]:[32]:[192.168.1.10]");
    let EvpnRoute::MacIpAdvertisement { label1, label2, .. } = route else { unreachable!() };
    assert_eq!((*label1, *label2), (100, Some(4001)));
    let communities: Vec<String> =
        attrs.ext_communities.iter().map(|&c| ExtCommunity::from_u64(c).to_string()).collect();
    assert_eq!(communities, ["RT:65000:100", "RT:65000:4001", "ET:8", "Rmac:02:00:00:00:00:01"]);
    // The binding goes: the MAC+IP route is withdrawn, the MAC route stays.
    e.local_neighbor(S, 100, ip("192.168.1.10"), None);
    let actions = e.take_actions();
    assert!(
        actions.iter().any(|a| matches!(a, EvpnAction::Withdraw(EvpnRoute::MacIpAdvertisement { ip: Some(_), .. })))
    );
    assert!(!actions.iter().any(|a| matches!(a, EvpnAction::Withdraw(EvpnRoute::MacIpAdvertisement { ip: None, .. }))));
}

#[test]
fn remote_routes_become_flood_lists_suppression_entries_and_vrf_routes() {
    let mut e = instance(5);
    let vtep = ip("10.0.0.3");
    let rmac = MacAddr([2, 0, 0, 0, 0, 3]);
    let rts = |vnis: &[u32]| vnis.iter().map(|&v| derived_rt(65000, v).to_u64()).collect::<Vec<_>>();
    // Type 3: the VTEP joins VNI 100's flood list; a foreign RT imports nothing.
    let t3 = EvpnRoute::InclusiveMulticast {
        rd: RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(10, 0, 0, 3), number: 100 },
        ethernet_tag: 0,
        originator: vtep,
    };
    let attrs = PathAttrs {
        next_hop: Some(vtep),
        ext_communities: rts(&[100]),
        pmsi_tunnel: Some(PmsiTunnel::IngressReplication { flags: 0, vni: 100, endpoint: vtep }),
        ..Default::default()
    };
    e.route_changed(0, t3, None, Some(&attrs));
    assert_eq!(e.take_actions(), vec![EvpnAction::Fib(FibChange::FloodVtep { vni: 100, vtep, present: true })]);
    let foreign = PathAttrs { ext_communities: rts(&[999]), ..attrs.clone() };
    let other_t3 = EvpnRoute::InclusiveMulticast {
        rd: RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(10, 0, 0, 4), number: 100 },
        ethernet_tag: 0,
        originator: ip("10.0.0.4"),
    };
    e.route_changed(0, other_t3, None, Some(&foreign));
    assert_eq!(e.take_actions(), vec![]);

    // Type 2 with an IP: remote MAC, ARP suppression, host route in the VRF.
    let t2 = EvpnRoute::MacIpAdvertisement {
        rd: RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(10, 0, 0, 3), number: 100 },
        esi: Esi::ZERO,
        ethernet_tag: 0,
        mac: MAC1,
        ip: Some(ip("192.168.1.20")),
        label1: 0,
        label2: None,
    };
    let mut ext = rts(&[100, 4001]);
    ext.push(ExtCommunity::RouterMac(rmac).to_u64());
    let attrs2 = PathAttrs {
        next_hop: Some(vtep),
        ext_communities: ext.clone(),
        evpn: Some(crate::packet::evpn::EvpnPathData { label1: 100, label2: Some(4001), ..Default::default() }),
        ..Default::default()
    };
    e.route_changed(0, t2, None, Some(&attrs2));
    let actions = e.take_actions();
    let hop = crate::fib::NextHop::Vtep { vtep, vni: 4001, router_mac: rmac };
    for expected in [
        FibChange::RemoteMac { vni: 100, mac: MAC1, vtep: Some(vtep), sticky: false },
        FibChange::Neighbor { vni: 100, ip: ip("192.168.1.20"), mac: Some(MAC1) },
        FibChange::Route { vrf: Some("t1".into()), prefix: "192.168.1.20/32".parse().unwrap(), next_hops: vec![hop] },
    ] {
        assert!(actions.contains(&EvpnAction::Fib(expected.clone())), "{expected:?} in {actions:?}");
    }

    // Type 5 into the VRF.
    let t5 = EvpnRoute::IpPrefix {
        rd: RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(10, 0, 0, 3), number: 4001 },
        esi: Esi::ZERO,
        ethernet_tag: 0,
        prefix: "172.16.0.0/16".parse().unwrap(),
        gateway: ip("0.0.0.0"),
        label: 0,
    };
    let attrs5 = PathAttrs {
        next_hop: Some(vtep),
        ext_communities: ext,
        evpn: Some(crate::packet::evpn::EvpnPathData { label1: 4001, ..Default::default() }),
        ..Default::default()
    };
    e.route_changed(0, t5, None, Some(&attrs5));
    let route =
        FibChange::Route { vrf: Some("t1".into()), prefix: "172.16.0.0/16".parse().unwrap(), next_hops: vec![hop] };
    assert_eq!(e.take_actions(), vec![EvpnAction::Fib(route)]);
    assert_eq!(e.state(0).vrfs[0].routes.len(), 2);
    // `show evpn next-hops`: the VTEP and its router MAC on the L3VNI, both prefixes through it.
    assert_eq!(
        e.state(0).next_hops,
        vec![super::show::NextHopView { l3vni: 4001, vrf: "t1".into(), vtep, router_mac: rmac.to_string(), routes: 2 }]
    );

    // Withdrawals undo all of it.
    e.route_changed(S, t2, Some(&attrs2), None);
    e.route_changed(S, t3, Some(&attrs), None);
    e.route_changed(S, t5, Some(&attrs5), None);
    let actions = e.take_actions();
    assert!(actions.contains(&EvpnAction::Fib(FibChange::RemoteMac {
        vni: 100,
        mac: MAC1,
        vtep: None,
        sticky: false
    })));
    assert!(actions.contains(&EvpnAction::Fib(FibChange::Neighbor { vni: 100, ip: ip("192.168.1.20"), mac: None })));
    assert!(actions.contains(&EvpnAction::Fib(FibChange::FloodVtep { vni: 100, vtep, present: false })));
    let state = e.state(S);
    assert!(state.macs.is_empty() && state.arp_cache.is_empty() && state.vrfs[0].routes.is_empty());
    assert!(state.next_hops.is_empty());
}

#[test]
fn derived_route_targets_match_with_the_as_masked_as_frr_does() {
    let mut e = instance(5);
    // An eBGP leaf in AS 65099 derives RT 65099:100.
    let t3 = EvpnRoute::InclusiveMulticast {
        rd: RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(10, 0, 0, 9), number: 100 },
        ethernet_tag: 0,
        originator: ip("10.0.0.9"),
    };
    let attrs = PathAttrs {
        next_hop: Some(ip("10.0.0.9")),
        ext_communities: vec![derived_rt(65099, 100).to_u64()],
        ..Default::default()
    };
    e.route_changed(0, t3, None, Some(&attrs));
    assert_eq!(
        e.take_actions(),
        vec![EvpnAction::Fib(FibChange::FloodVtep { vni: 100, vtep: ip("10.0.0.9"), present: true })]
    );
}

fn config_of(vnis: &[(u32, Option<&str>)], vrfs: &[(&str, u32)]) -> EvpnConfig {
    let config = EvpnConfig {
        vtep_ip: ip("10.0.0.1"),
        vnis: vnis
            .iter()
            .map(|&(vni, vrf)| VniConfig {
                vni,
                rd: None,
                import_rts: vec![],
                export_rts: vec![],
                vrf: vrf.map(str::to_owned),
                static_macs: vec![],
            })
            .collect(),
        vrfs: vrfs
            .iter()
            .map(|&(name, l3vni)| VrfConfig {
                name: name.into(),
                l3vni,
                router_mac: MacAddr([2, 0, 0, 0, 0, 1]),
                rd: None,
                import_rts: vec![],
                export_rts: vec![],
                networks: vec![],
            })
            .collect(),
        duplicate_detection: DuplicateDetection::default(),
    };
    config.validate(Ipv4Addr::new(10, 0, 0, 1)).unwrap();
    config
}

/// A remote VTEP's type 3 for `vni` and its MAC+IP route for MAC1 in
/// `vni` with L3VNI `l3vni`, each with its best path.
fn remote_routes(vni: u32, l3vni: u32) -> Vec<(EvpnRoute, PathAttrs)> {
    let vtep = ip("10.0.0.3");
    let rd = RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(10, 0, 0, 3), number: vni as u16 };
    let t3 = EvpnRoute::InclusiveMulticast { rd, ethernet_tag: 0, originator: vtep };
    let t3_attrs = PathAttrs {
        next_hop: Some(vtep),
        ext_communities: vec![derived_rt(65000, vni).to_u64()],
        pmsi_tunnel: Some(PmsiTunnel::IngressReplication { flags: 0, vni, endpoint: vtep }),
        ..Default::default()
    };
    let t2 = EvpnRoute::MacIpAdvertisement {
        rd,
        esi: Esi::ZERO,
        ethernet_tag: 0,
        mac: MAC1,
        ip: Some(ip("192.168.1.20")),
        label1: 0,
        label2: None,
    };
    let t2_attrs = PathAttrs {
        next_hop: Some(vtep),
        ext_communities: vec![
            derived_rt(65000, vni).to_u64(),
            derived_rt(65000, l3vni).to_u64(),
            ExtCommunity::RouterMac(MacAddr([2, 0, 0, 0, 0, 3])).to_u64(),
        ],
        evpn: Some(crate::packet::evpn::EvpnPathData { label1: vni, label2: Some(l3vni), ..Default::default() }),
        ..Default::default()
    };
    vec![(t3, t3_attrs), (t2, t2_attrs)]
}

fn feed(e: &mut Evpn, routes: &[(EvpnRoute, PathAttrs)]) {
    for (key, attrs) in routes {
        e.route_changed(0, *key, None, Some(attrs));
    }
}

fn reconfigure(
    e: &mut Evpn,
    config: &EvpnConfig,
    rebuild: &Rebuild,
    best: &[(EvpnRoute, PathAttrs)],
) -> Vec<EvpnAction> {
    e.reconfigure(S, config, rebuild, best.iter().map(|(k, a)| (*k, a)));
    e.take_actions()
}

#[test]
fn a_vni_added_live_originates_its_type3_and_imports_what_the_rib_holds() {
    let mut e = Evpn::new(&config_of(&[(100, None)], &[]), 65000, Ipv4Addr::new(10, 0, 0, 1));
    e.start();
    e.local_mac(0, 100, MAC1, true);
    e.take_actions();
    let mut best = remote_routes(200, 4001);
    best.truncate(1);
    let actions = reconfigure(&mut e, &config_of(&[(100, None), (200, None)], &[]), &Rebuild::default(), &best);
    let originated: Vec<String> = actions
        .iter()
        .filter_map(|a| match a {
            EvpnAction::Originate(r, _) => Some(r.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(originated, ["10.0.0.1:200 [3]:[0]:[32]:[10.0.0.1]"], "VNI 100 untouched: {actions:?}");
    assert!(actions.contains(&EvpnAction::Fib(FibChange::FloodVtep { vni: 200, vtep: ip("10.0.0.3"), present: true })));
    assert!(!actions.iter().any(|a| matches!(a, EvpnAction::Withdraw(_))), "{actions:?}");
    assert_eq!(e.state(S).vnis.len(), 2);
}

#[test]
fn a_vni_removed_live_withdraws_its_routes_and_forwarding_state() {
    let config = config_of(&[(100, Some("t1")), (200, None)], &[("t1", 4001)]);
    let mut e = Evpn::new(&config, 65000, Ipv4Addr::new(10, 0, 0, 1));
    e.start();
    let best = remote_routes(200, 4001);
    feed(&mut e, &best);
    e.local_mac(0, 100, MacAddr([2, 0, 0, 0, 0, 0x22]), true);
    e.take_actions();
    let actions = reconfigure(&mut e, &config_of(&[(100, Some("t1"))], &[("t1", 4001)]), &Rebuild::default(), &best);
    let vtep = ip("10.0.0.3");
    for expected in [
        EvpnAction::Withdraw(EvpnRoute::InclusiveMulticast {
            rd: RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(10, 0, 0, 1), number: 200 },
            ethernet_tag: 0,
            originator: ip("10.0.0.1"),
        }),
        EvpnAction::Fib(FibChange::FloodVtep { vni: 200, vtep, present: false }),
        EvpnAction::Fib(FibChange::RemoteMac { vni: 200, mac: MAC1, vtep: None, sticky: false }),
        EvpnAction::Fib(FibChange::Neighbor { vni: 200, ip: ip("192.168.1.20"), mac: None }),
    ] {
        assert!(actions.contains(&expected), "{expected:?} in {actions:?}");
    }
    // The host route stays in t1: it was imported by the L3VNI's RT.
    assert!(!actions.iter().any(|a| matches!(a, EvpnAction::Fib(FibChange::Route { .. }))), "{actions:?}");
    assert!(!actions.iter().any(|a| matches!(a, EvpnAction::Originate(..))), "VNI 100 untouched: {actions:?}");
    // The route, withdrawn later, finds nothing of VNI 200 to undo.
    e.route_changed(2 * S, best[1].0, Some(&best[1].1), None);
    let after = e.take_actions();
    assert_eq!(after.len(), 1, "only t1's host route goes: {after:?}");
    assert!(matches!(&after[0], EvpnAction::Fib(FibChange::Route { next_hops, .. }) if next_hops.is_empty()));
}

#[test]
fn a_vrf_made_again_moves_its_routes_and_rebinds_its_vnis_keeping_local_macs() {
    let config = config_of(&[(100, Some("t1"))], &[("t1", 4001)]);
    let mut e = Evpn::new(&config, 65000, Ipv4Addr::new(10, 0, 0, 1));
    e.start();
    let best = remote_routes(100, 4001);
    feed(&mut e, &best);
    let local = MacAddr([2, 0, 0, 0, 0, 0x22]);
    e.local_mac(0, 100, local, true);
    e.local_neighbor(0, 100, ip("192.168.1.30"), Some(local));
    e.take_actions();
    // t1 renamed t2 with L3VNI 4002; the remote still advertises 4001's RT,
    // which t2 no longer imports: the host route leaves the VRFs.
    let moved = config_of(&[(100, Some("t2"))], &[("t2", 4002)]);
    let actions = reconfigure(&mut e, &moved, &Rebuild::default(), &best);
    let host: IpNetwork = "192.168.1.20/32".parse().unwrap();
    let removed = FibChange::Route { vrf: Some("t1".into()), prefix: host, next_hops: vec![] };
    assert!(actions.contains(&EvpnAction::Fib(removed)), "{actions:?}");
    // Our MAC+IP route is advertised again with the new L3VNI.
    let label2 = actions.iter().find_map(|a| match a {
        EvpnAction::Originate(EvpnRoute::MacIpAdvertisement { ip: Some(_), label2, .. }, _) => Some(*label2),
        _ => None,
    });
    assert_eq!(label2, Some(Some(4002)), "{actions:?}");
    // The remote advertises t2's RT now: the route lands in t2.
    let best = remote_routes(100, 4002);
    feed(&mut e, &best);
    let actions = e.take_actions();
    let hop = crate::fib::NextHop::Vtep { vtep: ip("10.0.0.3"), vni: 4002, router_mac: MacAddr([2, 0, 0, 0, 0, 3]) };
    let added = FibChange::Route { vrf: Some("t2".into()), prefix: host, next_hops: vec![hop] };
    assert!(actions.contains(&EvpnAction::Fib(added)), "{actions:?}");
    let shown = e.state(S);
    assert_eq!(shown.vrfs.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(), ["t2"]);
    assert_eq!(shown.macs.iter().filter(|m| m.kind == "local").count(), 1, "the local MAC stays learned");
}

#[test]
fn a_vrf_whose_virtual_router_was_made_again_installs_its_routes_again() {
    let config = config_of(&[(100, Some("t1"))], &[("t1", 4001)]);
    let mut e = Evpn::new(&config, 65000, Ipv4Addr::new(10, 0, 0, 1));
    e.start();
    let best = remote_routes(100, 4001);
    feed(&mut e, &best);
    e.take_actions();
    let rebuild = Rebuild { vrfs: ["t1".to_string()].into(), ..Default::default() };
    let actions = reconfigure(&mut e, &config, &rebuild, &best);
    let host: IpNetwork = "192.168.1.20/32".parse().unwrap();
    let routes: Vec<usize> = actions
        .iter()
        .filter_map(|a| match a {
            EvpnAction::Fib(FibChange::Route { prefix, next_hops, .. }) if *prefix == host => Some(next_hops.len()),
            _ => None,
        })
        .collect();
    assert_eq!(routes, [0, 1], "removed from the old virtual router, then installed again: {actions:?}");
    // Nothing changed, nothing rebuilt: no actions at all.
    assert_eq!(reconfigure(&mut e, &config, &Rebuild::default(), &best), vec![]);
}

/// What each MAC and route costs in the tables (100,000 routes: every byte
/// of these is 100 kB); sizes a change must not grow unnoticed.
#[test]
fn per_mac_and_per_route_state_stays_small() {
    // Nothing for moves until the first one.
    assert_eq!(size_of::<Moves>(), 8);
    assert!(size_of::<MacState>() <= 112, "MacState {} bytes", size_of::<MacState>());
    assert!(size_of::<Imported>() <= 48, "Imported {} bytes", size_of::<Imported>());
    assert!(size_of::<EvpnRoute>() <= 68, "EvpnRoute {} bytes", size_of::<EvpnRoute>());
    // A remote route's entry in its MAC's claims and its IP's bindings:
    // the key packed (32 bytes), not a 68-byte `EvpnRoute`.
    assert_eq!(size_of::<(RouteKey, Claim)>(), 56);
    assert_eq!(size_of::<(RouteKey, MacAddr)>(), 40);
    // One remote claim per route key, no B-tree node.
    let mut state = MacState::default();
    let route = EvpnRoute::MacIpAdvertisement {
        rd: RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(10, 0, 0, 3), number: 100 },
        esi: Esi::ZERO,
        ethernet_tag: 0,
        mac: MAC1,
        ip: None,
        label1: 0,
        label2: None,
    };
    state.remote.insert(RouteKey::new(route), Claim { vtep: Some(ip("10.0.0.3")), sequence: 0, sticky: false });
    assert_eq!(state.remote.values().count(), 1);
}

/// The instance keeps no record per imported route: a best path replaced
/// by one with other route targets leaves the VNI the old one imported it
/// into for the new one's, and its withdrawal undoes the new one's import.
#[test]
fn a_route_whose_targets_change_moves_between_vnis_and_its_withdrawal_undoes_the_last() {
    let mut e = Evpn::new(&config_of(&[(100, None), (200, None)], &[]), 65000, Ipv4Addr::new(10, 0, 0, 1));
    e.start();
    e.take_actions();
    let vtep = ip("10.0.0.3");
    let key = EvpnRoute::MacIpAdvertisement {
        rd: RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(10, 0, 0, 3), number: 1 },
        esi: Esi::ZERO,
        ethernet_tag: 0,
        mac: MAC1,
        ip: None,
        label1: 0,
        label2: None,
    };
    let path = |vni: u32| PathAttrs {
        next_hop: Some(vtep),
        ext_communities: vec![derived_rt(65000, vni).to_u64()],
        evpn: Some(crate::packet::evpn::EvpnPathData { label1: vni, ..Default::default() }),
        ..Default::default()
    };
    let (in100, in200) = (path(100), path(200));
    let remote = |vni, vtep| EvpnAction::Fib(FibChange::RemoteMac { vni, mac: MAC1, vtep, sticky: false });
    e.route_changed(0, key, None, Some(&in100));
    assert_eq!(e.take_actions(), vec![remote(100, Some(vtep))]);
    e.route_changed(S, key, Some(&in100), Some(&in200));
    assert_eq!(e.take_actions(), vec![remote(100, None), remote(200, Some(vtep))]);
    e.route_changed(2 * S, key, Some(&in200), None);
    assert_eq!(e.take_actions(), vec![remote(200, None)]);
    assert!(e.state(2 * S).macs.is_empty());
}

/// `show evpn vni` and the metrics endpoint read the VNIs with their
/// counts, without the MAC and binding tables `state` builds.
#[test]
fn the_vni_state_counts_without_listing() {
    let config = config_of(&[(100, Some("t1")), (200, None)], &[("t1", 4001)]);
    let mut e = Evpn::new(&config, 65000, Ipv4Addr::new(10, 0, 0, 1));
    e.start();
    feed(&mut e, &remote_routes(200, 4001));
    e.local_mac(0, 100, MacAddr([2, 0, 0, 0, 0, 0x22]), true);
    let (all, vnis) = (e.state(S), e.vni_state());
    assert_eq!(format!("{:?}", vnis.vnis), format!("{:?}", all.vnis));
    assert_eq!((all.macs.len(), all.arp_cache.len()), (2, 1));
    assert!(vnis.macs.is_empty() && vnis.arp_cache.is_empty() && vnis.vrfs.is_empty());
    let counts: Vec<(u32, usize, usize, usize)> =
        vnis.vnis.iter().map(|v| (v.vni, v.local_macs, v.remote_macs, v.arp_entries)).collect();
    assert_eq!(counts, [(100, 1, 0, 0), (200, 0, 1, 1), (4001, 0, 0, 0)]);
}

/// A remote MAC+IPv6 route for a link-local address binds it for ND
/// suppression in the MAC-VRF but puts no host route in the IP-VRF (as
/// FRR; the kernel backend refused the /128 through an IPv4 VTEP).
#[test]
fn a_link_local_binding_is_suppressed_but_not_routed() {
    let mut e = instance(5);
    let vtep = ip("10.0.0.3");
    let rmac = MacAddr([2, 0, 0, 0, 0, 3]);
    let mut ext: Vec<u64> = [100, 4001].iter().map(|&v| derived_rt(65000, v).to_u64()).collect();
    ext.push(ExtCommunity::RouterMac(rmac).to_u64());
    let attrs = PathAttrs {
        next_hop: Some(vtep),
        ext_communities: ext,
        evpn: Some(crate::packet::evpn::EvpnPathData { label1: 100, label2: Some(4001), ..Default::default() }),
        ..Default::default()
    };
    for (address, routed) in [("fe80::1", false), ("2001:db8::20", true)] {
        let route = EvpnRoute::MacIpAdvertisement {
            rd: RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(10, 0, 0, 3), number: 100 },
            esi: Esi::ZERO,
            ethernet_tag: 0,
            mac: MAC1,
            ip: Some(ip(address)),
            label1: 0,
            label2: None,
        };
        e.route_changed(0, route, None, Some(&attrs));
        let actions = e.take_actions();
        let binding = FibChange::Neighbor { vni: 100, ip: ip(address), mac: Some(MAC1) };
        assert!(actions.contains(&EvpnAction::Fib(binding)), "{address} bound: {actions:?}");
        let route = actions.iter().any(|a| matches!(a, EvpnAction::Fib(FibChange::Route { .. })));
        assert_eq!(route, routed, "{address}: a host route in the VRF? {actions:?}");
    }
}
