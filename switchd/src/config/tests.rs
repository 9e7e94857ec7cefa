use super::*;

const GOOD: &str = r#"
name: leaf1
log_level: debug
loopback: [10.255.0.1/32]
ports:
  - name: eth1
    mode: access
    vlan: 10
  - name: eth2
    mode: trunk
    vlans: [10, 20]
    native: 30
    mtu: 9100
  - name: eth3
    mode: routed
    addresses: [10.0.1.1/24, "2001:db8:1::1/64"]
  - name: eth4
    mode: routed
    addresses: [10.0.2.1/24]
  - name: eth5
    kind: tap
    admin: down
    mode: access
vlans:
  - id: 10
    addresses: [192.168.10.1/24]
  - id: 20
    members: [eth5]
  - id: 30
vxlan:
  source: 10.255.0.1
  vnis:
    - vni: 10010
      vlan: 10
      flood: [10.255.0.2, 10.255.0.3]
routes:
  - prefix: 0.0.0.0/0
    next_hops: [10.0.1.2, 10.0.2.2]
  - prefix: "2001:db8:99::/48"
    next_hops: ["2001:db8:1::2"]
"#;

fn errors(yaml: &str) -> ConfigErrors {
    match Config::from_yaml(yaml) {
        Ok(_) => panic!("config was accepted:\n{yaml}"),
        Err(e) => e,
    }
}

/// GOOD with `from` replaced by `to` (which must occur).
fn good_with(from: &str, to: &str) -> String {
    assert!(GOOD.contains(from), "{from:?} not in GOOD");
    GOOD.replacen(from, to, 1)
}

#[track_caller]
fn assert_refused(yaml: &str, path: &str, reason_part: &str) {
    let e = errors(yaml);
    assert!(
        e.errors.iter().any(|err| err.path == path && err.reason.contains(reason_part)),
        "expected {path}: ...{reason_part}..., got:\n{e}"
    );
}

#[test]
fn good_config_is_typed() {
    let config = Config::from_yaml(GOOD).unwrap();
    assert_eq!(config.name, "leaf1");
    assert_eq!(config.log_level, Some(LogLevel::Debug));
    assert_eq!(config.socket, PathBuf::from("/run/switchd/leaf1.sock"));
    assert_eq!(config.lldp.tx_interval_secs, 30);
    assert_eq!(config.lldp.ttl_secs, 120);
    assert_eq!(config.ports.len(), 5);
    assert_eq!(config.ports[0].mode, PortMode::Access { vlan: 10 });
    assert_eq!(config.ports[1].mode, PortMode::Trunk { vlans: vec![10, 20], native: Some(30) });
    assert_eq!(config.ports[1].mtu, 9100);
    assert_eq!(config.ports[2].number, 3);
    // eth5 joins VLAN 20 from the VLAN side.
    assert_eq!(config.ports[4].mode, PortMode::Access { vlan: 20 });
    assert_eq!(config.ports[4].kind, PortKind::Tap);
    assert!(!config.ports[4].admin_up);
    let vxlan = config.vxlan.as_ref().unwrap();
    assert_eq!(vxlan.udp_port, 4789);
    assert_eq!(vxlan.vnis[0].vni, 10010);
    assert_eq!(config.routes[0].next_hops.len(), 2);
    assert_eq!(config.routes[0].next_hops[1], ("10.0.2.2".parse().unwrap(), L3Interface::Port("eth4".into())));
}

#[test]
fn running_config_round_trips() {
    let config = Config::from_yaml(GOOD).unwrap();
    let again = Config::from_yaml(&config.to_yaml()).unwrap();
    assert_eq!(again, config);
}

#[test]
fn wrong_type_names_field_and_line() {
    let e = errors(&good_with("    mtu: 9100", "    mtu: jumbo"));
    assert_eq!(e.errors.len(), 1);
    assert_eq!(e.errors[0].path, "ports[1].mtu");
    assert!(e.errors[0].reason.contains("invalid type"), "{e}");
    assert_eq!(e.errors[0].line, Some(13));
    assert!(e.to_string().contains("ports[1].mtu: invalid type"), "{e}");
}

#[test]
fn unknown_field_is_refused() {
    let e = errors(&good_with("    mtu: 9100", "    mtuu: 9100"));
    assert_eq!(e.errors[0].path, "ports[1].mtuu");
    assert!(e.errors[0].reason.contains("unknown field `mtuu`"), "{e}");
}

#[test]
fn unknown_mode_is_refused() {
    let e = errors(&good_with("mode: routed", "mode: bridged"));
    assert_eq!(e.errors[0].path, "ports[2].mode");
}

#[test]
fn eth0_is_refused() {
    assert_refused(&good_with("name: eth4", "name: eth0"), "ports[3].name", "management");
}

#[test]
fn non_front_panel_name_is_refused() {
    assert_refused(&good_with("name: eth4", "name: swp4"), "ports[3].name", "eth1..ethN");
    assert_refused(&good_with("name: eth4", "name: eth04"), "ports[3].name", "eth1..ethN");
}

#[test]
fn duplicate_port_is_refused() {
    assert_refused(&good_with("name: eth4", "name: eth3"), "ports[3].name", "duplicate port eth3");
}

#[test]
fn unknown_port_in_a_vlan_is_refused() {
    assert_refused(&good_with("members: [eth5]", "members: [eth9]"), "vlans[1].members[0]", "unknown port eth9");
}

#[test]
fn undeclared_vlan_on_a_port_is_refused() {
    assert_refused(&good_with("vlans: [10, 20]", "vlans: [10, 21]"), "ports[1].vlans[1]", "not declared");
    assert_refused(&good_with("    vlan: 10", "    vlan: 11"), "ports[0].vlan", "not declared");
}

#[test]
fn vlan_id_range_is_enforced() {
    assert_refused(&good_with("  - id: 30", "  - id: 4095"), "vlans[2].id", "outside 1..=4094");
    assert_refused(&good_with("  - id: 30", "  - id: 0"), "vlans[2].id", "outside 1..=4094");
}

#[test]
fn duplicate_vlan_is_refused() {
    assert_refused(&good_with("  - id: 30", "  - id: 20"), "vlans[2].id", "duplicate VLAN 20");
}

#[test]
fn overlapping_subnets_across_interfaces_are_refused() {
    assert_refused(
        &good_with("10.0.2.1/24", "10.0.1.129/25"),
        "ports[3].addresses[0]",
        "overlaps 10.0.1.1/24 at ports[2].addresses[0]",
    );
    assert_refused(&good_with("192.168.10.1/24", "10.0.1.9/16"), "vlans[0].addresses[0]", "overlaps");
}

#[test]
fn vni_out_of_range_is_refused() {
    assert_refused(&good_with("vni: 10010", "vni: 16777216"), "vxlan.vnis[0].vni", "outside 1..=16777215");
    assert_refused(&good_with("vni: 10010", "vni: 0"), "vxlan.vnis[0].vni", "outside");
}

#[test]
fn vni_mapped_to_unknown_vlan_is_refused() {
    assert_refused(
        &good_with("      vlan: 10\n      flood", "      vlan: 99\n      flood"),
        "vxlan.vnis[0].vlan",
        "not declared",
    );
}

#[test]
fn vxlan_source_must_be_local() {
    assert_refused(
        &good_with("source: 10.255.0.1", "source: 10.255.0.9"),
        "vxlan.source",
        "not an address of this switch",
    );
}

#[test]
fn flood_list_must_name_remote_vteps() {
    assert_refused(
        &good_with("flood: [10.255.0.2, 10.255.0.3]", "flood: [10.255.0.2, 10.255.0.2]"),
        "vxlan.vnis[0].flood[1]",
        "twice",
    );
    assert_refused(
        &good_with("flood: [10.255.0.2, 10.255.0.3]", "flood: [10.255.0.1]"),
        "vxlan.vnis[0].flood[0]",
        "this switch",
    );
}

#[test]
fn next_hop_outside_connected_subnets_is_refused() {
    assert_refused(
        &good_with("next_hops: [10.0.1.2, 10.0.2.2]", "next_hops: [10.0.1.2, 10.9.9.9]"),
        "routes[0].next_hops[1]",
        "not in a connected subnet",
    );
}

#[test]
fn next_hop_of_the_other_family_is_refused() {
    assert_refused(&good_with("[\"2001:db8:1::2\"]", "[10.0.1.2]"), "routes[1].next_hops[0]", "address family");
}

#[test]
fn route_without_next_hop_or_with_host_bits_is_refused() {
    assert_refused(
        &good_with("next_hops: [10.0.1.2, 10.0.2.2]", "next_hops: []"),
        "routes[0].next_hops",
        "at least one",
    );
    assert_refused(
        &good_with("prefix: 0.0.0.0/0", "prefix: 10.7.0.1/16"),
        "routes[0].prefix",
        "did you mean 10.7.0.0/16",
    );
}

#[test]
fn mode_fields_must_match_the_mode() {
    assert_refused(
        &good_with("    mode: access\n    vlan: 10", "    mode: access\n    vlan: 10\n    addresses: [10.9.0.1/24]"),
        "ports[0].addresses",
        "access port",
    );
    assert_refused(
        &good_with("    mode: routed\n    addresses: [10.0.2.1/24]", "    mode: routed\n    vlan: 10"),
        "ports[3].vlan",
        "routed port",
    );
    assert_refused(&good_with("members: [eth5]", "members: [eth4]"), "vlans[1].members[0]", "routed port");
}

#[test]
fn access_port_needs_exactly_one_vlan() {
    assert_refused(&good_with("members: [eth5]", "members: []"), "ports[4].vlan", "needs a VLAN");
    assert_refused(&good_with("members: [eth5]", "members: [eth5, eth1]"), "ports[0].vlan", "exactly one VLAN");
}

#[test]
fn mtu_and_lldp_ranges() {
    assert_refused(&good_with("mtu: 9100", "mtu: 10000"), "ports[1].mtu", "outside");
    assert_refused(&format!("{GOOD}lldp:\n  tx_interval_secs: 0\n"), "lldp.tx_interval_secs", "outside");
}

#[test]
fn interface_address_must_be_a_host() {
    assert_refused(&good_with("10.0.2.1/24", "10.0.2.0/24"), "ports[3].addresses[0]", "network address");
    assert_refused(&good_with("10.0.2.1/24", "10.0.2.255/24"), "ports[3].addresses[0]", "broadcast");
}

#[test]
fn every_error_is_reported_at_once() {
    let yaml = good_with("vni: 10010", "vni: 20000000")
        .replace("name: eth4", "name: eth0")
        .replace("  - id: 30", "  - id: 5000");
    let e = errors(&yaml);
    assert!(e.mentions("vxlan.vnis[0].vni"), "{e}");
    assert!(e.mentions("ports[3].name"), "{e}");
    assert!(e.mentions("vlans[2].id"), "{e}");
}

#[test]
fn name_and_socket_are_checked() {
    assert_refused(&good_with("name: leaf1", "name: \"leaf 1\""), "name", "may only hold");
    assert_refused(&format!("{GOOD}management:\n  socket: relative.sock\n"), "management.socket", "absolute");
}

#[test]
fn route_to_an_own_address_is_refused() {
    assert_refused(
        &good_with("prefix: 0.0.0.0/0", "prefix: 10.255.0.1/32"),
        "routes[0].prefix",
        "address of this switch",
    );
}

#[test]
fn redirects_are_a_routed_port_setting() {
    let off = good_with("    addresses: [10.0.2.1/24]", "    addresses: [10.0.2.1/24]\n    redirects: false");
    let config = Config::from_yaml(&off).unwrap();
    assert!(!config.ports[3].redirects);
    assert!(config.ports[2].redirects, "on unless turned off");
    assert_refused(
        &good_with("    vlan: 10\n", "    vlan: 10\n    redirects: false\n"),
        "ports[0].redirects",
        "routed",
    );
}

#[test]
fn ib_ports_and_the_embedded_sm_validate() {
    let config = Config::from_yaml(
        "name: s1\nports:\n  - { name: eth1, mode: ib, data_vls: 2, ib_mtu: 512, ib_rate: 50M }\n  - { name: eth2, mode: ib }\n  - { name: eth3, mode: access, vlan: 10 }\nvlans: [{ id: 10 }]\nib:\n  guid: 0x100\n  sm: { priority: 3, engine: [updn, minhop] }\n",
    )
    .unwrap();
    assert_eq!(config.ports[0].mode, PortMode::Ib(ib::IbPort { data_vls: 2, mtu: 512, rate_bps: Some(50_000_000) }));
    assert_eq!(config.ports[1].mode, PortMode::Ib(ib::IbPort { data_vls: 4, mtu: 1024, rate_bps: None }));
    let ib = config.ib.as_ref().unwrap();
    assert_eq!((ib.guid, ib.buffer_blocks), (0x100, ib::DEFAULT_BUFFER_BLOCKS));
    let sm = ib.sm.as_ref().unwrap();
    assert_eq!(sm.priority, 3);
    assert_eq!(sm.engines, vec![subnet_manager::routing::Engine::Updn, subnet_manager::routing::Engine::Minhop]);
    assert_eq!((sm.sm_key, sm.m_key, sm.m_key_protect_bits, sm.m_key_lease_period), (0, 0, 0, 0), "no keys by default");
    let keyed = Config::from_yaml(
        "name: s1\nports:\n  - { name: eth1, mode: ib }\nib:\n  sm: { sm_key: 0x5, m_key: 0x1234, m_key_protect_bits: 2, m_key_lease_period: 60 }\n",
    )
    .unwrap();
    let sm = keyed.ib.unwrap().sm.unwrap();
    assert_eq!((sm.sm_key, sm.m_key, sm.m_key_protect_bits, sm.m_key_lease_period), (5, 0x1234, 2, 60));
    // Without an ib: section, one with defaults and a GUID from the name.
    let config = Config::from_yaml("name: s1\nports:\n  - { name: eth1, mode: ib }\n").unwrap();
    assert_eq!(config.ib.unwrap().guid, ib::guid_from_name("s1"));
}

#[test]
fn bad_ib_settings_are_refused_naming_the_field() {
    let e = errors(
        "name: s1\nports:\n  - { name: eth1, mode: ib, data_vls: 3, vlan: 10 }\n  - { name: eth2, mode: ib, ib_mtu: 4096, ib_rate: fast }\n  - { name: eth3, mode: routed, data_vls: 2, ib_rate: 1G }\nib:\n  buffer_blocks: 5000\n  sm: { priority: 16, engine: [fastest], m_key_protect_bits: 4 }\n",
    );
    for path in [
        "ports[0].data_vls",
        "ports[0].vlan",
        "ports[1].ib_mtu",
        "ports[1].ib_rate",
        "ports[2].data_vls",
        "ports[2].ib_rate",
        "ib.buffer_blocks",
        "ib.sm.priority",
        "ib.sm.engine[0]",
        "ib.sm.m_key_protect_bits",
    ] {
        assert!(e.mentions(path), "{path}: {e}");
    }
    let e = errors("name: s1\nports:\n  - { name: eth1, mode: routed }\nib: { guid: 5 }\n");
    assert!(e.mentions("ib"), "{e}");
    let e = errors("name: s1\nbackend: kernel\nports:\n  - { name: eth1, mode: ib }\n");
    assert!(e.mentions("ports[0].mode"), "{e}");
}

#[test]
fn the_large_profile_holds_two_million_routes_and_changing_it_needs_a_restart() {
    let large = Config::from_yaml(&good_with("log_level: debug", "profile: large")).unwrap();
    assert_eq!(large.profile.switch_config().route_capacity, 2 * 1024 * 1024);
    assert_eq!(large.profile.switch_config().fdb_capacity, dataplane::pipeline::SwitchConfig::default().fdb_capacity);
    assert!(large.to_yaml().contains("profile: large"));
    let default = Config::from_yaml(GOOD).unwrap();
    let reasons = crate::daemon::restart_needed(&default, &large);
    assert!(reasons.iter().any(|r| r.starts_with("profile:")), "{reasons:?}");
}
