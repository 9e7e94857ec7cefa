//! The object layer's error paths, through the soft backend: every error says
//! what is wrong, and a failed call changes nothing.

mod common;

use std::net::{IpAddr, Ipv4Addr};

use common::*;
use dataplane::pipeline::SwitchConfig;
use dataplane::wire::EthernetAddress;
use sai_shim::*;

fn net(s: &str) -> ipnetwork::IpNetwork {
    s.parse().unwrap()
}

#[test]
fn unknown_and_stale_ids() {
    let mut lab = Lab::new();
    let vlan = lab.vlan(10);
    lab.sai.remove(vlan).unwrap();
    assert_eq!(lab.sai.remove(vlan), Err(SaiError::UnknownObject(vlan)));
    assert_eq!(lab.sai.get_vlan(vlan), Err(SaiError::UnknownObject(vlan)));
    // Ids are never reused: the same VLAN again gets a new id.
    let again = lab.vlan(10);
    assert_ne!(again, vlan);
    assert_eq!(again.object_type(), Some(ObjectType::Vlan));
    let forged = ObjectId::from_raw(0xdead);
    assert_eq!(lab.sai.remove(forged), Err(SaiError::UnknownObject(forged)));
    let err =
        lab.sai.create_vlan_member(&[VlanMemberAttr::VlanId(vlan), VlanMemberAttr::BridgePortId(forged)]).unwrap_err();
    assert_eq!(err, SaiError::UnknownObject(vlan));
}

#[test]
fn wrong_object_type() {
    let mut lab = Lab::new();
    let port = lab.port("eth1");
    let vlan = lab.vlan(10);
    assert!(matches!(
        lab.sai.get_port(vlan),
        Err(SaiError::WrongObjectType { id, found: Some(ObjectType::Vlan), expected: "port", .. }) if id == vlan
    ));
    let err =
        lab.sai.create_vlan_member(&[VlanMemberAttr::VlanId(port), VlanMemberAttr::BridgePortId(port)]).unwrap_err();
    assert!(
        matches!(err, SaiError::WrongObjectType { attribute: "VLAN_ID", found: Some(ObjectType::Port), .. }),
        "{err}"
    );
    assert_eq!(err.to_string(), format!("VLAN_ID: {port} is not a vlan"));
    let err = lab
        .sai
        .create_next_hop(&[NextHopAttr::Ip("10.0.0.1".parse().unwrap()), NextHopAttr::RouterInterfaceId(port)])
        .unwrap_err();
    assert!(matches!(err, SaiError::WrongObjectType { attribute: "ROUTER_INTERFACE_ID", .. }), "{err}");
}

#[test]
fn objects_in_use_cannot_be_removed() {
    let mut lab = Lab::new();
    let vlan = lab.vlan(10);
    let (port, bridge_port) = lab.access_port("eth1", vlan, 10);
    assert_eq!(
        lab.sai.remove(port),
        Err(SaiError::ObjectInUse { id: port, count: 1, example: Referrer::Object(ObjectType::BridgePort) })
    );
    assert_eq!(
        lab.sai.remove(bridge_port),
        Err(SaiError::ObjectInUse { id: bridge_port, count: 1, example: Referrer::Object(ObjectType::VlanMember) })
    );
    assert!(matches!(lab.sai.remove(vlan), Err(SaiError::ObjectInUse { .. })));
    let key = FdbEntryKey { vlan, mac: mac(9) };
    lab.sai
        .create_fdb_entry(key, &[FdbEntryAttr::Type(FdbEntryType::Static), FdbEntryAttr::BridgePortId(bridge_port)])
        .unwrap();
    assert_eq!(lab.sai.store().use_count(bridge_port), 2);
    // Tear down in order: every step frees the next.
    let member = lab.sai.store().objects_of(ObjectType::VlanMember).map(|(id, _)| id).next().unwrap();
    lab.sai.remove(member).unwrap();
    assert_eq!(
        lab.sai.remove(bridge_port),
        Err(SaiError::ObjectInUse { id: bridge_port, count: 1, example: Referrer::FdbEntry })
    );
    lab.sai.remove_fdb_entry(key).unwrap();
    lab.sai.remove(bridge_port).unwrap();
    lab.sai.remove(port).unwrap();
    lab.sai.remove(vlan).unwrap();
}

#[test]
fn next_hops_used_by_routes_or_groups_cannot_be_removed() {
    let mut lab = Lab::new();
    let port = lab.port("eth1");
    let vr = lab.sai.default_virtual_router();
    let rif = lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vr),
            RouterInterfaceAttr::Type(RouterInterfaceType::Port(port)),
        ])
        .unwrap();
    let ip: IpAddr = "10.0.0.2".parse().unwrap();
    let nh = lab.sai.create_next_hop(&[NextHopAttr::Ip(ip), NextHopAttr::RouterInterfaceId(rif)]).unwrap();
    let key = RouteEntryKey { virtual_router: vr, destination: net("192.0.2.0/24") };
    lab.sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(nh))]).unwrap();
    assert_eq!(lab.sai.remove(nh), Err(SaiError::ObjectInUse { id: nh, count: 1, example: Referrer::RouteEntry }));
    assert!(matches!(lab.sai.remove(rif), Err(SaiError::ObjectInUse { .. })));
    lab.sai.remove_route_entry(key).unwrap();

    let group = lab.sai.create_next_hop_group().unwrap();
    let member = lab
        .sai
        .create_next_hop_group_member(&[
            NextHopGroupMemberAttr::NextHopGroupId(group),
            NextHopGroupMemberAttr::NextHopId(nh),
        ])
        .unwrap();
    assert_eq!(
        lab.sai.remove(nh),
        Err(SaiError::ObjectInUse { id: nh, count: 1, example: Referrer::Object(ObjectType::NextHopGroupMember) })
    );
    lab.sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(group))]).unwrap();
    assert!(matches!(lab.sai.remove(group), Err(SaiError::ObjectInUse { .. })));
    // Re-pointing the route releases the group.
    lab.sai.set_route_entry_attribute(key, RouteEntryAttr::PacketAction(PacketAction::Drop)).unwrap();
    lab.sai.set_route_entry_attribute(key, RouteEntryAttr::NextHopId(None)).unwrap();
    lab.sai.remove(member).unwrap();
    lab.sai.remove(group).unwrap();
    lab.sai.remove(nh).unwrap();
    // A neighbour holds its router interface.
    let neighbor = NeighborEntryKey { router_interface: rif, ip };
    lab.sai.create_neighbor_entry(neighbor, &[NeighborEntryAttr::DstMacAddress(mac(2))]).unwrap();
    assert_eq!(lab.sai.remove(rif), Err(SaiError::ObjectInUse { id: rif, count: 1, example: Referrer::NeighborEntry }));
    lab.sai.remove_neighbor_entry(neighbor).unwrap();
    lab.sai.remove_route_entry(key).unwrap();
    lab.sai.remove(rif).unwrap();
    lab.sai.remove(port).unwrap();
}

#[test]
fn invalid_attributes_say_which_and_why() {
    let mut lab = Lab::new();
    let err = lab.sai.create_port(&[PortAttr::Name("eth1".into()), PortAttr::PortVlanId(0)]).unwrap_err();
    assert!(matches!(err, SaiError::InvalidAttribute { object: "port", attribute: "PORT_VLAN_ID", .. }), "{err}");
    assert_eq!(err.to_string(), "invalid attribute PORT_VLAN_ID of port: VLAN id 0 outside 1..=4094");
    let err = lab.sai.create_vlan(&[VlanAttr::VlanId(4095)]).unwrap_err();
    assert!(matches!(err, SaiError::InvalidAttribute { attribute: "VLAN_ID", .. }));
    let err =
        lab.sai.create_port(&[PortAttr::Name("eth1".into()), PortAttr::Mtu(1500), PortAttr::Mtu(9000)]).unwrap_err();
    assert!(
        matches!(err, SaiError::InvalidAttribute { attribute: "MTU", ref reason, .. } if reason == "given more than once")
    );
    let port = lab.port("eth1");
    assert_eq!(
        lab.sai.set_port_attribute(port, PortAttr::Name("eth9".into())),
        Err(SaiError::CreateOnlyAttribute { object: "port", attribute: "NAME" })
    );
    let vr = lab.sai.default_virtual_router();
    let host_bits = RouteEntryKey { virtual_router: vr, destination: net("10.1.2.3/24") };
    let err = lab.sai.create_route_entry(host_bits, &[RouteEntryAttr::PacketAction(PacketAction::Drop)]).unwrap_err();
    assert!(matches!(err, SaiError::InvalidAttribute { attribute: "destination", .. }), "{err}");
    let key = RouteEntryKey { virtual_router: vr, destination: net("10.1.2.0/24") };
    let err = lab.sai.create_route_entry(key, &[]).unwrap_err();
    assert!(matches!(err, SaiError::InvalidAttribute { attribute: "NEXT_HOP_ID", .. }), "{err}");
    let err = lab.sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(port))]).unwrap_err();
    assert!(matches!(err, SaiError::InvalidAttribute { attribute: "NEXT_HOP_ID", .. }), "{err}");
    // A multicast MAC is no FDB key.
    let vlan = lab.vlan(10);
    let bridge_port = lab.bridge_port(port);
    let group_mac = EthernetAddress([0x01, 0, 0x5e, 0, 0, 1]);
    let err = lab
        .sai
        .create_fdb_entry(
            FdbEntryKey { vlan, mac: group_mac },
            &[FdbEntryAttr::Type(FdbEntryType::Static), FdbEntryAttr::BridgePortId(bridge_port)],
        )
        .unwrap_err();
    assert!(matches!(err, SaiError::InvalidAttribute { attribute: "mac_address", .. }), "{err}");
    // A bridged port cannot also be a routed port.
    let err = lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vr),
            RouterInterfaceAttr::Type(RouterInterfaceType::Port(port)),
        ])
        .unwrap_err();
    assert!(matches!(err, SaiError::InvalidAttribute { object: "router interface", attribute: "TYPE", .. }), "{err}");
    // Flooding to a remote VTEP needs the VLAN to have a VNI.
    let tunnel = lab.sai.create_tunnel(&[TunnelAttr::EncapSrcIp(Ipv4Addr::new(10, 0, 0, 1))]).unwrap();
    let endpoint = lab
        .sai
        .create_tunnel_endpoint(&[
            TunnelEndpointAttr::TunnelId(tunnel),
            TunnelEndpointAttr::RemoteIp(Ipv4Addr::new(10, 0, 0, 2)),
        ])
        .unwrap();
    let tunnel_port = lab.sai.create_bridge_port(&[BridgePortAttr::Type(BridgePortType::Tunnel(endpoint))]).unwrap();
    let err = lab
        .sai
        .create_vlan_member(&[VlanMemberAttr::VlanId(vlan), VlanMemberAttr::BridgePortId(tunnel_port)])
        .unwrap_err();
    assert!(matches!(err, SaiError::InvalidAttribute { attribute: "BRIDGE_PORT_ID", .. }), "{err}");
    let err = lab
        .sai
        .create_tunnel_map_entry(&[
            TunnelMapEntryAttr::TunnelId(tunnel),
            TunnelMapEntryAttr::VlanId(vlan),
            TunnelMapEntryAttr::Vni(1 << 24),
        ])
        .unwrap_err();
    assert!(matches!(err, SaiError::InvalidAttribute { attribute: "VNI_ID_KEY", .. }), "{err}");
}

#[test]
fn mandatory_attributes() {
    let mut lab = Lab::new();
    assert_eq!(
        lab.sai.create_port(&[]),
        Err(SaiError::MandatoryAttributeMissing { object: "port", attribute: "NAME" })
    );
    assert_eq!(
        lab.sai.create_vlan(&[]),
        Err(SaiError::MandatoryAttributeMissing { object: "vlan", attribute: "VLAN_ID" })
    );
    let vlan = lab.vlan(10);
    assert_eq!(
        lab.sai.create_fdb_entry(FdbEntryKey { vlan, mac: mac(1) }, &[FdbEntryAttr::Type(FdbEntryType::Static)]),
        Err(SaiError::MandatoryAttributeMissing { object: "fdb entry", attribute: "BRIDGE_PORT_ID" })
    );
    assert_eq!(
        lab.sai.create_router_interface(&[RouterInterfaceAttr::Mtu(9000)]),
        Err(SaiError::MandatoryAttributeMissing { object: "router interface", attribute: "VIRTUAL_ROUTER_ID" })
    );
    assert_eq!(
        lab.sai.create_tunnel(&[]),
        Err(SaiError::MandatoryAttributeMissing { object: "tunnel", attribute: "ENCAP_SRC_IP" })
    );
}

#[test]
fn duplicates_already_exist() {
    let mut lab = Lab::new();
    let vlan = lab.vlan(10);
    assert_eq!(lab.sai.create_vlan(&[VlanAttr::VlanId(10)]), Err(SaiError::AlreadyExists("vlan 10".into())));
    let port = lab.port("eth1");
    assert!(matches!(lab.sai.create_port(&[PortAttr::Name("eth1".into())]), Err(SaiError::AlreadyExists(_))));
    let bridge_port = lab.bridge_port(port);
    assert!(matches!(
        lab.sai.create_bridge_port(&[BridgePortAttr::Type(BridgePortType::Port(port))]),
        Err(SaiError::AlreadyExists(_))
    ));
    lab.member(vlan, bridge_port, false);
    assert!(matches!(
        lab.sai.create_vlan_member(&[VlanMemberAttr::VlanId(vlan), VlanMemberAttr::BridgePortId(bridge_port)]),
        Err(SaiError::AlreadyExists(_))
    ));
    let key = FdbEntryKey { vlan, mac: mac(1) };
    let attrs = [FdbEntryAttr::Type(FdbEntryType::Static), FdbEntryAttr::BridgePortId(bridge_port)];
    lab.sai.create_fdb_entry(key, &attrs).unwrap();
    assert!(matches!(lab.sai.create_fdb_entry(key, &attrs), Err(SaiError::AlreadyExists(_))));
}

#[test]
fn full_tables_fail_and_leave_no_trace() {
    let config = SwitchConfig { max_ports: 2, fdb_capacity: 1, route_capacity: 1, ..SwitchConfig::default() };
    let mut lab = Lab::with(config, &[]);
    lab.port("eth1");
    let port = lab.port("eth2");
    let before = lab.sai.store().objects_of(ObjectType::Port).count();
    assert_eq!(lab.sai.create_port(&[PortAttr::Name("eth3".into())]), Err(SaiError::TableFull { table: "port" }));
    assert_eq!(lab.sai.store().objects_of(ObjectType::Port).count(), before);
    // The name was not taken by the failed create.
    lab.sai.remove(port).unwrap();
    // The freed pipeline index serves the next port.
    lab.port("eth3");
}

#[test]
fn fdb_and_route_tables_full() {
    let config = SwitchConfig { fdb_capacity: 1, route_capacity: 1, ..SwitchConfig::default() };
    let mut lab = Lab::with(config, &[]);
    let vlan = lab.vlan(10);
    let (_, bridge_port) = lab.access_port("eth1", vlan, 10);
    let attrs = [FdbEntryAttr::Type(FdbEntryType::Static), FdbEntryAttr::BridgePortId(bridge_port)];
    lab.sai.create_fdb_entry(FdbEntryKey { vlan, mac: mac(1) }, &attrs).unwrap();
    let second = FdbEntryKey { vlan, mac: mac(2) };
    assert_eq!(lab.sai.create_fdb_entry(second, &attrs), Err(SaiError::TableFull { table: "fdb entry" }));
    assert_eq!(lab.sai.get_fdb_entry(second), Err(SaiError::UnknownEntry(EntryKey::Fdb(second))));
    assert_eq!(lab.sai.store().use_count(bridge_port), 2, "one VLAN member and one FDB entry");

    let vr = lab.sai.default_virtual_router();
    let drop = [RouteEntryAttr::PacketAction(PacketAction::Drop)];
    lab.sai.create_route_entry(RouteEntryKey { virtual_router: vr, destination: net("10.0.0.0/8") }, &drop).unwrap();
    let key = RouteEntryKey { virtual_router: vr, destination: net("2001:db8::/32") };
    assert_eq!(lab.sai.create_route_entry(key, &drop), Err(SaiError::TableFull { table: "route entry" }));
    assert_eq!(lab.sai.get_route_entry(key), Err(SaiError::UnknownEntry(EntryKey::Route(key))));
}

#[test]
fn soft_backend_limits_are_not_supported_errors() {
    let mut lab = Lab::new();
    let cpu = lab.sai.cpu_port();
    assert!(matches!(lab.sai.remove(cpu), Err(SaiError::NotSupported(_))));
    assert!(matches!(lab.sai.set_port_attribute(cpu, PortAttr::Mtu(1000)), Err(SaiError::NotSupported(_))));
    assert!(matches!(lab.sai.set_switch_attribute(SwitchAttr::FdbAgingTime(1)), Err(SaiError::NotSupported(_))));
    // A second VTEP does not fit the soft backend.
    lab.sai.create_tunnel(&[TunnelAttr::EncapSrcIp(Ipv4Addr::new(10, 0, 0, 1))]).unwrap();
    assert_eq!(
        lab.sai.create_tunnel(&[TunnelAttr::EncapSrcIp(Ipv4Addr::new(10, 0, 0, 9))]),
        Err(SaiError::TableFull { table: "tunnel" })
    );
}

#[test]
fn get_returns_what_was_set() {
    let mut lab = Lab::new();
    let port = lab.port("eth1");
    lab.sai.set_port_attribute(port, PortAttr::Mtu(9000)).unwrap();
    let got = lab.sai.get_port(port).unwrap();
    assert_eq!(
        (got.name.as_str(), got.admin_state, got.mtu, got.port_vlan_id, got.oper_status),
        ("eth1", true, 9000, 1, true)
    );
    let switch = lab.sai.get_switch();
    assert_eq!(switch.cpu_port, lab.sai.cpu_port());
    lab.sai.set_switch_attribute(SwitchAttr::SrcMacAddress(mac(0x77))).unwrap();
    let vr = lab.sai.default_virtual_router();
    let rif = lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vr),
            RouterInterfaceAttr::Type(RouterInterfaceType::Port(port)),
        ])
        .unwrap();
    // A router interface takes the switch's MAC unless told otherwise.
    assert_eq!(lab.sai.get_router_interface(rif).unwrap().src_mac_address, mac(0x77));
    assert_eq!(
        lab.sai
            .backend()
            .pipeline()
            .router_interface(lab.sai.backend().router_interface_index(rif).unwrap())
            .unwrap()
            .mac,
        mac(0x77)
    );
}

/// Bulk route creation (SAI's `create_route_entries`, error mode "ignore"):
/// one result per entry, each what a single create would have said; the
/// refused ones are not in the store, the others are and hold their next hop.
#[test]
fn bulk_route_creation_has_a_result_per_entry() {
    let mut lab = Lab::new();
    let port = lab.port("eth1");
    let vr = lab.sai.default_virtual_router();
    let rif = lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vr),
            RouterInterfaceAttr::Type(RouterInterfaceType::Port(port)),
        ])
        .unwrap();
    let ip: IpAddr = "10.0.0.2".parse().unwrap();
    let nh = lab.sai.create_next_hop(&[NextHopAttr::Ip(ip), NextHopAttr::RouterInterfaceId(rif)]).unwrap();
    let key = |prefix: &str| RouteEntryKey { virtual_router: vr, destination: net(prefix) };
    let existing = key("192.0.2.0/24");
    lab.sai.create_route_entry(existing, &[RouteEntryAttr::NextHopId(Some(nh))]).unwrap();

    let via = [RouteEntryAttr::NextHopId(Some(nh))];
    let no_next_hop: [RouteEntryAttr; 0] = [];
    let entries: Vec<(RouteEntryKey, &[RouteEntryAttr])> = vec![
        (key("198.51.100.0/24"), &via),
        (existing, &via),
        (key("203.0.113.0/24"), &no_next_hop),
        (key("203.0.113.7/24"), &via),
        (key("198.51.100.0/24"), &via),
        (key("2001:db8::/32"), &via),
    ];
    let results = lab.sai.create_route_entries(&entries);
    assert_eq!(results.len(), entries.len());
    assert_eq!(results[0], Ok(()));
    assert!(matches!(&results[1], Err(SaiError::AlreadyExists(what)) if what.contains("192.0.2.0/24")), "{results:?}");
    assert!(matches!(results[2], Err(SaiError::InvalidAttribute { attribute: "NEXT_HOP_ID", .. })), "{results:?}");
    assert!(matches!(results[3], Err(SaiError::InvalidAttribute { attribute: "destination", .. })), "{results:?}");
    assert!(matches!(&results[4], Err(SaiError::AlreadyExists(_))), "the same key twice: {results:?}");
    assert_eq!(results[5], Ok(()));

    assert_eq!(lab.sai.get_route_entry(key("198.51.100.0/24")).unwrap().next_hop, Some(nh));
    assert_eq!(lab.sai.get_route_entry(key("2001:db8::/32")).unwrap().next_hop, Some(nh));
    assert!(lab.sai.get_route_entry(key("203.0.113.0/24")).is_err());
    assert_eq!(lab.sai.store().route_entries().count(), 3);
    // The created routes hold their next hop like single creates.
    assert_eq!(lab.sai.remove(nh), Err(SaiError::ObjectInUse { id: nh, count: 3, example: Referrer::RouteEntry }));
}
