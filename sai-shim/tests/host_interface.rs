//! Host interfaces: what the pipeline punts reaches the right host
//! interface, and what the host sends leaves through the right port.

mod common;

use common::*;
use dataplane::pipeline::{Disposition, Egress, PuntReason};
use dataplane::wire::{EtherType, EthernetAddress};
use sai_shim::*;

#[test]
fn l2_protocol_frames_are_punted_to_the_ports_host_interface() {
    let mut lab = Lab::new();
    let vlan = lab.vlan(10);
    let (port, _) = lab.access_port("eth1", vlan, 10);
    let (other, _) = lab.access_port("eth2", vlan, 10);
    let hostif = lab
        .sai
        .create_host_interface(&[HostInterfaceAttr::Name("sw-eth1".into()), HostInterfaceAttr::ObjId(port)])
        .unwrap();
    let lldp_dst = EthernetAddress([0x01, 0x80, 0xc2, 0, 0, 0x0e]);
    let lldp = eth(lldp_dst, mac(7), None, EtherType::Lldp, &[0u8; 46]);
    let result = lab.inject(port, &lldp);
    assert_eq!(result.disposition, Disposition::Punted);
    let index = lab.index(port);
    assert_eq!(
        result.frames,
        vec![(Egress::Host { port: index, rif: None, reason: PuntReason::L2Protocol }, lldp.clone())]
    );
    assert_eq!(lab.sai.backend().punt_host_interface(&result.frames[0].0), Some(hostif));
    // A port without a host interface has nobody to punt to.
    let result = lab.inject(other, &lldp);
    assert_eq!(lab.sai.backend().punt_host_interface(&result.frames[0].0), None);
}

#[test]
fn host_transmit_on_a_port_bypasses_the_bridge() {
    let mut lab = Lab::new();
    let vlan = lab.vlan(10);
    let (port, _) = lab.access_port("eth1", vlan, 10);
    lab.access_port("eth2", vlan, 10);
    let hostif = lab
        .sai
        .create_host_interface(&[HostInterfaceAttr::Name("sw-eth1".into()), HostInterfaceAttr::ObjId(port)])
        .unwrap();
    // Even a broadcast goes out of this one port only, exactly as written.
    let frame = l2(EthernetAddress::BROADCAST, mac(0x10), None);
    let sent = lab.host_send(hostif, &frame);
    assert_eq!(sent, vec![(Egress::Port(lab.index(port)), frame)]);
    assert_eq!(lab.sai.get_port_stats(port).unwrap().out_non_ucast_pkts, 1);
    // Not a host interface: refused, naming the problem.
    assert!(matches!(
        lab.sai.backend_mut().host_send(lab.now, port, &[0; 60], &mut lab.out),
        Err(SaiError::WrongObjectType { .. })
    ));
    // A removed host interface is unknown.
    lab.sai.remove(hostif).unwrap();
    assert_eq!(
        lab.sai.backend_mut().host_send(lab.now, hostif, &[0; 60], &mut lab.out),
        Err(SaiError::UnknownObject(hostif))
    );
}

#[test]
fn host_transmit_on_an_svi_is_bridged_in_its_vlan() {
    let mut lab = Lab::new();
    let vlan = lab.vlan(10);
    let (p1, _) = lab.access_port("eth1", vlan, 10);
    let p2 = lab.port("eth2");
    let trunk = lab.bridge_port(p2);
    lab.member(vlan, trunk, true);
    let vr = lab.sai.default_virtual_router();
    let svi = lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vr),
            RouterInterfaceAttr::Type(RouterInterfaceType::Vlan(vlan)),
        ])
        .unwrap();
    let hostif = lab
        .sai
        .create_host_interface(&[HostInterfaceAttr::Name("vlan10".into()), HostInterfaceAttr::ObjId(svi)])
        .unwrap();
    let router_mac = lab.sai.get_router_interface(svi).unwrap().src_mac_address;
    let frame = l2(EthernetAddress::BROADCAST, router_mac, None);
    let sent = lab.host_send(hostif, &frame);
    let (i1, i2) = (lab.index(p1), lab.index(p2));
    let mut expected = vec![
        (Egress::Port(i1), frame.clone()),
        (Egress::Port(i2), l2(EthernetAddress::BROADCAST, router_mac, Some(10))),
    ];
    expected.sort_by_key(|(to, _)| format!("{to:?}"));
    let mut sent = sent;
    sent.sort_by_key(|(to, _)| format!("{to:?}"));
    assert_eq!(sent, expected);
    // Unicast to a learned host goes to its port only. (The host's MAC is
    // not the router's: a frame from the router MAC is never learned.)
    let host = mac(0x21);
    assert_ne!(host, router_mac);
    lab.inject(p1, &l2(EthernetAddress::BROADCAST, host, None));
    let unicast = l2(host, router_mac, None);
    assert_eq!(lab.host_send(hostif, &unicast), vec![(Egress::Port(i1), unicast.clone())]);
}
