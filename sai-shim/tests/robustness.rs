//! Garbage on any port of a fully programmed switch (L2, L3, VXLAN): never a
//! panic, and every drop is counted.

mod common;

use std::net::Ipv4Addr;

use common::*;
use dataplane::pipeline::Disposition;
use dataplane::wire::{EtherType, EthernetAddress};
use proptest::prelude::*;
use sai_shim::*;

const ROUTER_MAC: EthernetAddress = EthernetAddress([0x02, 0xaa, 0, 0, 0, 0x01]);

fn programmed() -> (Lab, Vec<ObjectId>) {
    let mut lab = Lab::with(Default::default(), &[SwitchAttr::SrcMacAddress(ROUTER_MAC)]);
    let vlan = lab.vlan(10);
    let (p1, _) = lab.access_port("eth1", vlan, 10);
    let p2 = lab.port("eth2");
    let trunk = lab.bridge_port(p2);
    lab.member(vlan, trunk, true);
    let routed = lab.port("eth3");
    let vr = lab.sai.default_virtual_router();
    let svi = lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vr),
            RouterInterfaceAttr::Type(RouterInterfaceType::Vlan(vlan)),
        ])
        .unwrap();
    let rif = lab
        .sai
        .create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(vr),
            RouterInterfaceAttr::Type(RouterInterfaceType::Port(routed)),
        ])
        .unwrap();
    let cpu = lab.sai.cpu_port();
    for (prefix, target) in [
        ("192.168.10.1/32", cpu),
        ("192.168.10.0/24", svi),
        ("2001:db8:10::1/128", cpu),
        ("2001:db8:10::/64", svi),
        ("10.0.0.1/32", cpu),
        ("10.9.0.0/30", rif),
        ("0.0.0.0/0", rif),
    ] {
        let key = RouteEntryKey { virtual_router: vr, destination: prefix.parse().unwrap() };
        lab.sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(target))]).unwrap();
    }
    let tunnel = lab.sai.create_tunnel(&[TunnelAttr::EncapSrcIp(Ipv4Addr::new(10, 0, 0, 1))]).unwrap();
    lab.sai
        .create_tunnel_map_entry(&[
            TunnelMapEntryAttr::TunnelId(tunnel),
            TunnelMapEntryAttr::VlanId(vlan),
            TunnelMapEntryAttr::Vni(1000),
        ])
        .unwrap();
    (lab, vec![p1, p2, routed])
}

/// Valid frames of every kind the switch handles, for mutation.
fn seeds() -> Vec<Vec<u8>> {
    let inner = l2(EthernetAddress::BROADCAST, mac(0x42), None);
    vec![
        l2(EthernetAddress::BROADCAST, mac(1), None),
        l2(mac(2), mac(1), Some(10)),
        eth(
            ROUTER_MAC,
            mac(1),
            None,
            EtherType::Ipv4,
            &udp4(Ipv4Addr::new(192, 168, 10, 5), Ipv4Addr::new(8, 8, 8, 8), 1, 2, 64, b"x"),
        ),
        eth(
            ROUTER_MAC,
            mac(1),
            None,
            EtherType::Ipv6,
            &udp6("2001:db8:10::5".parse().unwrap(), "2001:db8:10::1".parse().unwrap(), 1, 2, 64, b"x"),
        ),
        vxlan(ROUTER_MAC, mac(3), Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(10, 0, 0, 1), 50000, 64, 1000, &inner),
    ]
}

proptest! {
    #[test]
    fn random_bytes_never_panic_and_drops_are_counted(
        data in proptest::collection::vec(any::<u8>(), 0..300),
        port in 0usize..3,
    ) {
        let (mut lab, ports) = programmed();
        let before = lab.sai.backend().drop_counters().total();
        let result = lab.inject(ports[port], &data);
        let after = lab.sai.backend().drop_counters().total();
        if let Disposition::Dropped(reason) = result.disposition {
            prop_assert!(after > before, "drop {reason:?} not counted");
        }
    }

    #[test]
    fn mutated_frames_never_panic_and_drops_are_counted(
        seed in 0usize..5,
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        cut in any::<usize>(),
        port in 0usize..3,
    ) {
        let (mut lab, ports) = programmed();
        let mut frame = seeds()[seed].clone();
        for (at, value) in flips {
            let len = frame.len();
            frame[at % len] = value;
        }
        frame.truncate(cut % (frame.len() + 1));
        let before = lab.sai.backend().drop_counters().total();
        let result = lab.inject(ports[port], &frame);
        if let Disposition::Dropped(reason) = result.disposition {
            prop_assert!(lab.sai.backend().drop_counters().total() > before, "drop {reason:?} not counted");
        }
    }
}
