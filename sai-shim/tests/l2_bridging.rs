//! L2 behaviour of the pipeline, driven only through the shim: VLAN-aware
//! bridging with access and trunk ports, learning, aging, moves, static MACs
//! and flooding.

mod common;

use common::*;
use dataplane::pipeline::{Disposition, DropReason, SwitchConfig};
use dataplane::wire::EthernetAddress;
use sai_shim::*;

/// p1 access VLAN 10, p2 trunk (10 and 20 tagged), p3 access VLAN 20, p4 access VLAN 10.
struct Bridged {
    lab: Lab,
    vlan10: ObjectId,
    vlan20: ObjectId,
    ports: [ObjectId; 4],
    bridge_ports: [ObjectId; 4],
}

fn bridged(lab: Lab) -> Bridged {
    let mut lab = lab;
    let vlan10 = lab.vlan(10);
    let vlan20 = lab.vlan(20);
    let (p1, b1) = lab.access_port("eth1", vlan10, 10);
    let p2 = lab.port("eth2");
    let b2 = lab.bridge_port(p2);
    lab.member(vlan10, b2, true);
    lab.member(vlan20, b2, true);
    // A trunk whose PVID is in no VLAN drops untagged frames.
    lab.sai.set_port_attribute(p2, PortAttr::PortVlanId(4000)).unwrap();
    let (p3, b3) = lab.access_port("eth3", vlan20, 20);
    let (p4, b4) = lab.access_port("eth4", vlan10, 10);
    Bridged { lab, vlan10, vlan20, ports: [p1, p2, p3, p4], bridge_ports: [b1, b2, b3, b4] }
}

#[test]
fn broadcast_floods_the_vlan_and_tags_on_trunks_never_back_to_ingress() {
    let mut s = bridged(Lab::new());
    let [p1, p2, p3, p4] = s.ports.map(|p| s.lab.index(p));
    let frame = l2(EthernetAddress::BROADCAST, mac(1), None);
    let result = s.lab.inject(s.ports[0], &frame);
    assert_eq!(result.disposition, Disposition::Flooded);
    assert_eq!(result.ports(), {
        let mut v = vec![p2, p4];
        v.sort();
        v
    });
    assert!(result.on_port(p1).is_empty() && result.on_port(p3).is_empty());
    // The trunk sends it with an 802.1Q tag of VLAN 10, the access port as it came.
    assert_eq!(result.on_port(p2), vec![l2(EthernetAddress::BROADCAST, mac(1), Some(10)).as_slice()]);
    assert_eq!(result.on_port(p4), vec![frame.as_slice()]);
}

#[test]
fn tagged_frame_from_trunk_leaves_access_port_untagged() {
    let mut s = bridged(Lab::new());
    let p3 = s.lab.index(s.ports[2]);
    let result = s.lab.inject(s.ports[1], &l2(EthernetAddress::BROADCAST, mac(2), Some(20)));
    assert_eq!(result.disposition, Disposition::Flooded);
    assert_eq!(result.ports(), vec![p3]);
    assert_eq!(result.on_port(p3), vec![l2(EthernetAddress::BROADCAST, mac(2), None).as_slice()]);
}

#[test]
fn ingress_vlan_filter_and_pvid() {
    let mut s = bridged(Lab::new());
    // VLAN 20 tagged on an access port of VLAN 10: not a member.
    let result = s.lab.inject(s.ports[0], &l2(EthernetAddress::BROADCAST, mac(1), Some(20)));
    assert_eq!(result.disposition, Disposition::Dropped(DropReason::IngressVlanFilter));
    assert!(result.frames.is_empty());
    // Untagged on the trunk: PVID 4000 is no VLAN of the port.
    let result = s.lab.inject(s.ports[1], &l2(EthernetAddress::BROADCAST, mac(1), None));
    assert_eq!(result.disposition, Disposition::Dropped(DropReason::IngressVlanFilter));
    // Moving the trunk's PVID to 20 makes untagged frames VLAN 20 frames.
    s.lab.sai.set_port_attribute(s.ports[1], PortAttr::PortVlanId(20)).unwrap();
    let p3 = s.lab.index(s.ports[2]);
    let result = s.lab.inject(s.ports[1], &l2(EthernetAddress::BROADCAST, mac(1), None));
    assert_eq!(result.ports(), vec![p3]);
    let counters = s.lab.sai.backend().drop_counters();
    assert_eq!(counters[DropReason::IngressVlanFilter], 2);
    let stats = s.lab.sai.get_port_stats(s.ports[0]).unwrap();
    assert_eq!((stats.in_non_ucast_pkts, stats.in_discards), (1, 1));
}

#[test]
fn learning_turns_flooding_into_unicast_and_notifies() {
    let mut s = bridged(Lab::new());
    let (p1, p4) = (s.lab.index(s.ports[0]), s.lab.index(s.ports[3]));
    // Unknown unicast floods (not back to the ingress port).
    let result = s.lab.inject(s.ports[0], &l2(mac(4), mac(1), None));
    assert_eq!(result.disposition, Disposition::Flooded);
    assert!(!result.ports().contains(&p1));
    let notifications = s.lab.sai.drain_notifications();
    assert_eq!(
        notifications,
        vec![Notification::Fdb {
            event: FdbEvent::Learned,
            entry: FdbEntryKey { vlan: s.vlan10, mac: mac(1) },
            bridge_port: Some(s.bridge_ports[0]),
        }]
    );
    // The answer goes to p1 only, and mac(4) is learned on p4.
    let reply = l2(mac(1), mac(4), None);
    let result = s.lab.inject(s.ports[3], &reply);
    assert_eq!(result.disposition, Disposition::Forwarded);
    assert_eq!(result.frames.len(), 1);
    assert_eq!(result.on_port(p1), vec![reply.as_slice()]);
    // Now both directions are known unicast.
    let result = s.lab.inject(s.ports[0], &l2(mac(4), mac(1), None));
    assert_eq!((result.disposition, result.ports()), (Disposition::Forwarded, vec![p4]));
    let table = s.lab.sai.fdb_table();
    assert!(table.contains(&(
        FdbEntryKey { vlan: s.vlan10, mac: mac(4) },
        FdbEntry { entry_type: FdbEntryType::Dynamic, bridge_port: s.bridge_ports[3], allow_mac_move: false }
    )));
    // Learning is per VLAN: mac(1) is unknown in VLAN 20.
    let result = s.lab.inject(s.ports[1], &l2(mac(1), mac(9), Some(20)));
    assert_eq!(result.disposition, Disposition::Flooded);
    let stats = s.lab.sai.get_port_stats(s.ports[0]).unwrap();
    assert_eq!((stats.in_ucast_pkts, stats.out_ucast_pkts), (2, 1));
}

#[test]
fn same_segment_frames_are_dropped() {
    let mut s = bridged(Lab::new());
    s.lab.inject(s.ports[0], &l2(EthernetAddress::BROADCAST, mac(1), None));
    s.lab.inject(s.ports[0], &l2(EthernetAddress::BROADCAST, mac(2), None));
    let result = s.lab.inject(s.ports[0], &l2(mac(2), mac(1), None));
    assert_eq!(result.disposition, Disposition::Dropped(DropReason::SameSegment));
    assert!(result.frames.is_empty());
}

#[test]
fn learned_entries_age_out_and_notify() {
    let lab = Lab::with(SwitchConfig::default(), &[SwitchAttr::FdbAgingTime(10)]);
    let mut s = bridged(lab);
    s.lab.inject(s.ports[0], &l2(EthernetAddress::BROADCAST, mac(1), None));
    s.lab.sai.drain_notifications();
    s.lab.advance(5 * SECOND);
    s.lab.poll();
    assert!(s.lab.sai.drain_notifications().is_empty(), "not aged before the aging time");
    s.lab.advance(6 * SECOND);
    s.lab.poll();
    assert_eq!(
        s.lab.sai.drain_notifications(),
        vec![Notification::Fdb {
            event: FdbEvent::Aged,
            entry: FdbEntryKey { vlan: s.vlan10, mac: mac(1) },
            bridge_port: Some(s.bridge_ports[0]),
        }]
    );
    // Unknown again: floods.
    let result = s.lab.inject(s.ports[3], &l2(mac(1), mac(4), None));
    assert_eq!(result.disposition, Disposition::Flooded);
}

#[test]
fn traffic_refreshes_a_learned_entry() {
    let lab = Lab::with(SwitchConfig::default(), &[SwitchAttr::FdbAgingTime(10)]);
    let mut s = bridged(lab);
    for _ in 0..4 {
        s.lab.inject(s.ports[0], &l2(EthernetAddress::BROADCAST, mac(1), None));
        s.lab.advance(4 * SECOND);
        s.lab.poll();
    }
    let events = s.lab.sai.drain_notifications();
    assert!(events.iter().all(|n| !matches!(n, Notification::Fdb { event: FdbEvent::Aged, .. })), "{events:?}");
}

#[test]
fn a_mac_that_moves_is_relearned_and_notified() {
    let mut s = bridged(Lab::new());
    let p4 = s.lab.index(s.ports[3]);
    s.lab.inject(s.ports[0], &l2(EthernetAddress::BROADCAST, mac(1), None));
    s.lab.sai.drain_notifications();
    s.lab.inject(s.ports[3], &l2(EthernetAddress::BROADCAST, mac(1), None));
    assert_eq!(
        s.lab.sai.drain_notifications(),
        vec![Notification::Fdb {
            event: FdbEvent::Moved { from: Some(s.bridge_ports[0]) },
            entry: FdbEntryKey { vlan: s.vlan10, mac: mac(1) },
            bridge_port: Some(s.bridge_ports[3]),
        }]
    );
    let result = s.lab.inject(s.ports[0], &l2(mac(1), mac(7), None));
    assert_eq!((result.disposition, result.ports()), (Disposition::Forwarded, vec![p4]));
}

#[test]
fn static_macs_forward_never_move_and_never_age() {
    let lab = Lab::with(SwitchConfig::default(), &[SwitchAttr::FdbAgingTime(10)]);
    let mut s = bridged(lab);
    let p4 = s.lab.index(s.ports[3]);
    let key = FdbEntryKey { vlan: s.vlan10, mac: mac(5) };
    s.lab
        .sai
        .create_fdb_entry(
            key,
            &[FdbEntryAttr::Type(FdbEntryType::Static), FdbEntryAttr::BridgePortId(s.bridge_ports[3])],
        )
        .unwrap();
    let result = s.lab.inject(s.ports[0], &l2(mac(5), mac(1), None));
    assert_eq!((result.disposition, result.ports()), (Disposition::Forwarded, vec![p4]));
    // The same MAC as a source on another port does not move a static
    // entry: the refusal is reported, nothing learned.
    s.lab.inject(s.ports[0], &l2(EthernetAddress::BROADCAST, mac(5), None));
    let events: Vec<Notification> = s
        .lab
        .sai
        .drain_notifications()
        .into_iter()
        .filter(|n| matches!(n, Notification::Fdb { entry, .. } if entry.mac == mac(5)))
        .collect();
    let refused = Notification::Fdb {
        event: FdbEvent::MoveRefused { pinned: Some(s.bridge_ports[3]) },
        entry: key,
        bridge_port: Some(s.bridge_ports[0]),
    };
    assert_eq!(events, vec![refused]);
    s.lab.advance(60 * SECOND);
    s.lab.poll();
    let result = s.lab.inject(s.ports[0], &l2(mac(5), mac(1), None));
    assert_eq!((result.disposition, result.ports()), (Disposition::Forwarded, vec![p4]));
    assert_eq!(
        s.lab.sai.get_fdb_entry(key).unwrap(),
        FdbEntry { entry_type: FdbEntryType::Static, bridge_port: s.bridge_ports[3], allow_mac_move: false }
    );
    // Removing it makes the MAC unknown again.
    s.lab.sai.remove_fdb_entry(key).unwrap();
    let result = s.lab.inject(s.ports[0], &l2(mac(5), mac(1), None));
    assert_eq!(result.disposition, Disposition::Flooded);
}

#[test]
fn multicast_floods_like_broadcast() {
    let mut s = bridged(Lab::new());
    let (p2, p4) = (s.lab.index(s.ports[1]), s.lab.index(s.ports[3]));
    let group = EthernetAddress([0x01, 0x00, 0x5e, 0x01, 0x02, 0x03]);
    let result = s.lab.inject(s.ports[0], &l2(group, mac(1), None));
    assert_eq!(result.disposition, Disposition::Flooded);
    let mut expected = vec![p2, p4];
    expected.sort();
    assert_eq!(result.ports(), expected);
}

#[test]
fn learning_can_be_disabled_per_bridge_port() {
    let mut s = bridged(Lab::new());
    s.lab.sai.set_bridge_port_attribute(s.bridge_ports[0], BridgePortAttr::Learning(false)).unwrap();
    s.lab.inject(s.ports[0], &l2(EthernetAddress::BROADCAST, mac(1), None));
    assert!(s.lab.sai.drain_notifications().is_empty());
    let result = s.lab.inject(s.ports[3], &l2(mac(1), mac(4), None));
    assert_eq!(result.disposition, Disposition::Flooded);
}

#[test]
fn admin_down_port_drops_and_link_down_notifies_and_flushes() {
    let mut s = bridged(Lab::new());
    s.lab.inject(s.ports[0], &l2(EthernetAddress::BROADCAST, mac(1), None));
    s.lab.sai.drain_notifications();
    s.lab.sai.backend_mut().set_link_status(s.ports[0], false).unwrap();
    assert_eq!(
        s.lab.sai.drain_notifications(),
        vec![
            Notification::PortOperStatus { port: s.ports[0], up: false },
            Notification::Fdb {
                event: FdbEvent::Aged,
                entry: FdbEntryKey { vlan: s.vlan10, mac: mac(1) },
                bridge_port: Some(s.bridge_ports[0]),
            },
        ]
    );
    assert!(!s.lab.sai.get_port(s.ports[0]).unwrap().oper_status);
    let result = s.lab.inject(s.ports[0], &l2(EthernetAddress::BROADCAST, mac(1), None));
    assert_eq!(result.disposition, Disposition::Dropped(DropReason::PortDown));
    // A flood skips the down port.
    let p1 = s.lab.index(s.ports[0]);
    let result = s.lab.inject(s.ports[3], &l2(EthernetAddress::BROADCAST, mac(4), None));
    assert!(!result.ports().contains(&p1));
    s.lab.sai.drain_notifications();
    s.lab.sai.backend_mut().set_link_status(s.ports[0], true).unwrap();
    assert_eq!(s.lab.sai.drain_notifications(), vec![Notification::PortOperStatus { port: s.ports[0], up: true }]);
    // Administratively down.
    s.lab.sai.set_port_attribute(s.ports[3], PortAttr::AdminState(false)).unwrap();
    let result = s.lab.inject(s.ports[3], &l2(EthernetAddress::BROADCAST, mac(4), None));
    assert_eq!(result.disposition, Disposition::Dropped(DropReason::PortDown));
}

#[test]
fn flush_removes_learned_entries() {
    let mut s = bridged(Lab::new());
    s.lab.inject(s.ports[0], &l2(EthernetAddress::BROADCAST, mac(1), None));
    s.lab.inject(s.ports[3], &l2(EthernetAddress::BROADCAST, mac(4), None));
    assert_eq!(s.lab.sai.fdb_table().len(), 2);
    s.lab.sai.flush_fdb_entries(FdbFlush { bridge_port: Some(s.bridge_ports[0]), ..FdbFlush::default() }).unwrap();
    let table = s.lab.sai.fdb_table();
    assert_eq!(table.len(), 1);
    assert_eq!(table[0].0.mac, mac(4));
    let notifications = s.lab.sai.drain_notifications();
    assert_eq!(
        notifications.last(),
        Some(&Notification::Fdb {
            event: FdbEvent::Flushed,
            entry: FdbEntryKey { vlan: s.vlan10, mac: mac(1) },
            bridge_port: Some(s.bridge_ports[0]),
        })
    );
    // Leaving the VLAN flushes the port's MACs there, and says so.
    let member = s
        .lab
        .sai
        .store()
        .objects_of(ObjectType::VlanMember)
        .find_map(|(id, o)| matches!(o, Object::VlanMember(m) if m.bridge_port == s.bridge_ports[3]).then_some(id))
        .unwrap();
    s.lab.sai.remove(member).unwrap();
    assert!(s.lab.sai.fdb_table().is_empty());
    assert_eq!(
        s.lab.sai.drain_notifications(),
        vec![Notification::Fdb {
            event: FdbEvent::Flushed,
            entry: FdbEntryKey { vlan: s.vlan10, mac: mac(4) },
            bridge_port: Some(s.bridge_ports[3]),
        }]
    );
    let _ = s.vlan20;
}

#[test]
fn subscribers_receive_learned_and_aged_macs_over_their_channels() {
    let lab = Lab::with(SwitchConfig::default(), &[SwitchAttr::FdbAgingTime(10)]);
    let mut s = bridged(lab);
    let evpn = s.lab.sai.subscribe("evpn", 64);
    let tiny = s.lab.sai.subscribe("tiny", 1);
    s.lab.inject(s.ports[0], &l2(EthernetAddress::BROADCAST, mac(1), None));
    s.lab.inject(s.ports[3], &l2(EthernetAddress::BROADCAST, mac(2), None));
    let published = s.lab.sai.publish_notifications();
    assert_eq!(published.len(), 2);
    let learned = |m, bp| Notification::Fdb {
        event: FdbEvent::Learned,
        entry: FdbEntryKey { vlan: s.vlan10, mac: mac(m) },
        bridge_port: Some(bp),
    };
    assert_eq!(evpn.drain(), vec![learned(1, s.bridge_ports[0]), learned(2, s.bridge_ports[3])]);
    // A subscriber that cannot keep up loses what did not fit, counted.
    assert_eq!(tiny.drain(), vec![learned(1, s.bridge_ports[0])]);
    assert_eq!(tiny.lost(), 1);
    s.lab.advance(11 * SECOND);
    s.lab.poll();
    s.lab.sai.publish_notifications();
    let aged: Vec<FdbEvent> = evpn
        .drain()
        .into_iter()
        .map(|n| match n {
            Notification::Fdb { event, .. } => event,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(aged, vec![FdbEvent::Aged, FdbEvent::Aged]);
}
