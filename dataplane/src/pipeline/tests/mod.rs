//! Pipeline unit tests: frames built with the wire Reprs, injected, and the
//! emitted frames and counters checked byte for byte.

use super::*;

mod conformance;
mod l3;
mod vxlan;
use crate::wire::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr, VlanId, VlanTag, VlanTagRepr};

pub(crate) const SECOND: u64 = 1_000_000_000;
pub(crate) const NOW: u64 = 1_000 * SECOND;

pub(crate) fn mac(last: u8) -> EthernetAddress {
    EthernetAddress([0x02, 0, 0, 0, 0, last])
}

/// An Ethernet frame with an optional 802.1Q tag (PCP 0).
pub(crate) fn frame(
    dst: EthernetAddress,
    src: EthernetAddress,
    vid: Option<VlanId>,
    ethertype: EtherType,
    payload: &[u8],
) -> Vec<u8> {
    let tag_len = if vid.is_some() { 4 } else { 0 };
    let mut buf = vec![0u8; 14 + tag_len + payload.len()];
    let outer_type = if vid.is_some() { EtherType::Vlan } else { ethertype };
    EthernetRepr { dst_addr: dst, src_addr: src, ethertype: outer_type }
        .emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
    if let Some(vid) = vid {
        VlanTagRepr { pcp: 0, dei: false, vid, ethertype }.emit(&mut VlanTag::new_unchecked(&mut buf[14..18]));
    }
    buf[14 + tag_len..].copy_from_slice(payload);
    buf
}

pub(crate) fn emitted(out: &Output) -> Vec<(Egress, Vec<u8>)> {
    out.iter().map(|emitted| (emitted.to, emitted.frame.to_vec())).collect()
}

/// Every port frame of `out` leaves its port, as the node does once the
/// port adapter takes it: only then is it counted as sent.
pub(crate) fn transmit(switch: &mut Switch, out: &Output) {
    for emitted in out.iter() {
        if let Egress::Port(port) = emitted.to {
            switch.count_transmitted(port, emitted.frame);
        }
    }
}

pub(crate) fn ports_of(out: &Output) -> Vec<PortId> {
    let mut ports: Vec<PortId> = out
        .iter()
        .filter_map(|emitted| match emitted.to {
            Egress::Port(port) => Some(port),
            Egress::Host { .. } => None,
        })
        .collect();
    ports.sort_unstable();
    ports
}

const PAYLOAD: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz0123456789";
const DATA: EtherType = EtherType::Unknown(0x88b6);

/// Ports 0..=2 access in VLAN 10, port 3 a trunk in VLANs 10 and 20, port 4
/// access in VLAN 20.
pub(crate) fn l2_switch() -> Switch {
    let mut switch = Switch::new(SwitchConfig { fdb_capacity: 1024, ..SwitchConfig::default() });
    switch.create_vlan(10).unwrap();
    switch.create_vlan(20).unwrap();
    for port in 0..=2 {
        switch.set_port(port, PortConfig { pvid: 10, ..PortConfig::default() }).unwrap();
        switch.set_vlan_member(10, port, false).unwrap();
    }
    switch.set_port(3, PortConfig { pvid: 0, ..PortConfig::default() }).unwrap();
    switch.set_vlan_member(10, 3, true).unwrap();
    switch.set_vlan_member(20, 3, true).unwrap();
    switch.set_port(4, PortConfig { pvid: 20, ..PortConfig::default() }).unwrap();
    switch.set_vlan_member(20, 4, false).unwrap();
    switch
}

#[test]
fn unknown_unicast_floods_in_vlan_with_egress_tagging_and_learns() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    let sent = frame(mac(2), mac(1), None, DATA, PAYLOAD);
    assert_eq!(switch.process(NOW, 0, &sent, &mut out), Disposition::Flooded);
    let got = emitted(&out);
    assert_eq!(got.len(), 3, "ports 1, 2 and trunk 3, never ingress 0 nor VLAN 20's port 4");
    assert_eq!(got[0], (Egress::Port(1), sent.clone()));
    assert_eq!(got[1], (Egress::Port(2), sent.clone()));
    assert_eq!(got[2], (Egress::Port(3), frame(mac(2), mac(1), Some(10), DATA, PAYLOAD)));
    let entry = switch.fdb_entry(10, mac(1)).unwrap();
    assert_eq!((entry.dest, entry.kind, entry.last_seen), (FdbDest::Port(0), FdbKind::Dynamic, NOW));
    let events: Vec<Event> = switch.drain_events().collect();
    assert_eq!(events, vec![Event::FdbLearned { vid: 10, mac: mac(1), dest: FdbDest::Port(0) }]);
    let rx = switch.port_counters(0).unwrap();
    assert_eq!((rx.rx_packets, rx.rx_bytes, rx.rx_unicast), (1, sent.len() as u64, 1));
    transmit(&mut switch, &out);
    let tx = switch.port_counters(3).unwrap();
    assert_eq!((tx.tx_packets, tx.tx_bytes), (1, sent.len() as u64 + 4));
}

#[test]
fn known_unicast_goes_to_one_port_and_loses_its_tag_on_access() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    // mac(1) talks from port 0; the trunk answers it with a VLAN 10 tag.
    switch.process(NOW, 0, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out);
    out.clear();
    let reply = frame(mac(1), mac(2), Some(10), DATA, PAYLOAD);
    assert_eq!(switch.process(NOW, 3, &reply, &mut out), Disposition::Forwarded);
    assert_eq!(emitted(&out), vec![(Egress::Port(0), frame(mac(1), mac(2), None, DATA, PAYLOAD))]);
    // And back: now mac(2) is known on the trunk, so port 0's frame goes out tagged there only.
    out.clear();
    assert_eq!(switch.process(NOW, 0, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out), Disposition::Forwarded);
    assert_eq!(emitted(&out), vec![(Egress::Port(3), frame(mac(2), mac(1), Some(10), DATA, PAYLOAD))]);
}

#[test]
fn s_tagged_frames_are_relayed_unchanged_in_the_port_vlan() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    // 802.1ad S-tag (TPID 0x88a8, VID 20) around an untagged payload.
    let mut s_tag = vec![0x00, 20];
    s_tag.extend_from_slice(&u16::from(DATA).to_be_bytes());
    s_tag.extend_from_slice(PAYLOAD);
    let sent = frame(mac(2), mac(1), None, EtherType::QinQ, &s_tag);
    // IEEE 802.1Q table 9-1: on a C-VLAN port only 0x8100 is a tag, so this
    // frame is untagged, in the port's VLAN 10, not in VLAN 20.
    assert_eq!(switch.process(NOW, 0, &sent, &mut out), Disposition::Flooded);
    let got = emitted(&out);
    assert_eq!(got[0], (Egress::Port(1), sent.clone()), "relayed byte for byte");
    assert_eq!(got[2], (Egress::Port(3), frame(mac(2), mac(1), Some(10), EtherType::QinQ, &s_tag)));
    assert!(ports_of(&out).iter().all(|&port| port != 4), "never into VLAN 20");
    assert_eq!(switch.fdb_entry(10, mac(1)).map(|entry| entry.dest), Some(FdbDest::Port(0)));
}

#[test]
fn priority_tag_keeps_pcp_and_uses_pvid() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    let mut sent = frame(mac(2), mac(1), Some(0), DATA, PAYLOAD);
    sent[14] = 0xa0; // PCP 5, VID 0
    assert_eq!(switch.process(NOW, 0, &sent, &mut out), Disposition::Flooded);
    let got = emitted(&out);
    assert_eq!(got[0], (Egress::Port(1), frame(mac(2), mac(1), None, DATA, PAYLOAD)));
    let mut tagged = frame(mac(2), mac(1), Some(10), DATA, PAYLOAD);
    tagged[14] = 0xa0;
    assert_eq!(got[2], (Egress::Port(3), tagged));
}

#[test]
fn ingress_vlan_filtering() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    // VLAN 20 on an access port of VLAN 10.
    let reason = DropReason::IngressVlanFilter;
    assert_eq!(
        switch.process(NOW, 0, &frame(mac(2), mac(1), Some(20), DATA, PAYLOAD), &mut out),
        Disposition::Dropped(reason)
    );
    // Untagged on a trunk without PVID.
    assert_eq!(
        switch.process(NOW, 3, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out),
        Disposition::Dropped(reason)
    );
    // A VLAN that does not exist.
    assert_eq!(
        switch.process(NOW, 3, &frame(mac(2), mac(1), Some(30), DATA, PAYLOAD), &mut out),
        Disposition::Dropped(reason)
    );
    assert!(out.is_empty());
    assert_eq!(switch.drop_counters()[reason], 3);
    assert_eq!(switch.port_counters(3).unwrap().drops[reason], 2);
    assert_eq!(switch.port_counters(3).unwrap().rx_drops, 2);
    assert_eq!(switch.fdb_len(), 0, "filtered frames teach nothing");
}

#[test]
fn same_segment_and_invalid_source_and_runts_are_dropped() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    switch.process(NOW, 0, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out);
    // Two hosts behind one port (a hub): their frames to each other stay there.
    assert_eq!(
        switch.process(NOW, 0, &frame(mac(1), mac(2), None, DATA, PAYLOAD), &mut out),
        Disposition::Dropped(DropReason::SameSegment)
    );
    out.clear();
    assert_eq!(
        switch.process(NOW, 0, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out),
        Disposition::Dropped(DropReason::SameSegment)
    );
    let group_source = EthernetAddress([0x01, 0, 0x5e, 0, 0, 1]);
    assert_eq!(
        switch.process(NOW, 1, &frame(mac(2), group_source, None, DATA, PAYLOAD), &mut out),
        Disposition::Dropped(DropReason::SourceMacInvalid)
    );
    assert_eq!(switch.process(NOW, 1, &[0xff; 13], &mut out), Disposition::Dropped(DropReason::Malformed));
    assert!(out.is_empty());
    assert_eq!(switch.drop_counters().total(), 4);
}

#[test]
fn broadcast_and_multicast_flood_counted_by_kind() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    let broadcast = frame(EthernetAddress::BROADCAST, mac(5), None, DATA, PAYLOAD);
    assert_eq!(switch.process(NOW, 4, &broadcast, &mut out), Disposition::Flooded);
    transmit(&mut switch, &out);
    assert_eq!(
        emitted(&out),
        vec![(Egress::Port(3), frame(EthernetAddress::BROADCAST, mac(5), Some(20), DATA, PAYLOAD))]
    );
    out.clear();
    let multicast = EthernetAddress([0x01, 0x00, 0x5e, 0x01, 0x02, 0x03]);
    assert_eq!(switch.process(NOW, 1, &frame(multicast, mac(6), None, DATA, PAYLOAD), &mut out), Disposition::Flooded);
    assert_eq!(ports_of(&out), vec![0, 2, 3]);
    transmit(&mut switch, &out);
    assert_eq!(switch.port_counters(4).unwrap().rx_broadcast, 1);
    assert_eq!(switch.port_counters(3).unwrap().tx_broadcast, 1);
    assert_eq!(switch.port_counters(3).unwrap().tx_multicast, 1);
    assert_eq!(switch.port_counters(1).unwrap().rx_multicast, 1);
}

#[test]
fn mac_move_is_detected_and_followed() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    switch.process(NOW, 0, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out);
    switch.process(NOW + 1, 1, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out);
    let events: Vec<Event> = switch.drain_events().collect();
    assert_eq!(events[1], Event::FdbMoved { vid: 10, mac: mac(1), from: FdbDest::Port(0), to: FdbDest::Port(1) });
    out.clear();
    assert_eq!(
        switch.process(NOW + 2, 2, &frame(mac(1), mac(3), None, DATA, PAYLOAD), &mut out),
        Disposition::Forwarded
    );
    assert_eq!(ports_of(&out), vec![1]);
}

#[test]
fn static_macs_neither_move_nor_age() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    switch.set_fdb_entry(10, mac(1), FdbDest::Port(0), FdbKind::Static, 0).unwrap();
    switch.process(NOW, 1, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out);
    assert_eq!(switch.fdb_entry(10, mac(1)).unwrap().dest, FdbDest::Port(0));
    switch.poll(NOW + 10_000 * SECOND, &mut out);
    assert_eq!(switch.fdb_entry(10, mac(1)).unwrap().kind, FdbKind::Static);
    // The refused move is counted and reported, never a learn or a move.
    assert_eq!(switch.fdb_moves_refused(), 1);
    let refused = Event::FdbMoveRefused { vid: 10, mac: mac(1), pinned: FdbDest::Port(0), from: FdbDest::Port(1) };
    assert_eq!(switch.drain_events().collect::<Vec<_>>(), vec![refused]);
}

#[test]
fn a_static_mac_added_again_reports_its_first_refused_move_at_once() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    let refused = Event::FdbMoveRefused { vid: 10, mac: mac(1), pinned: FdbDest::Port(0), from: FdbDest::Port(1) };
    switch.set_fdb_entry(10, mac(1), FdbDest::Port(0), FdbKind::Static, 0).unwrap();
    switch.process(NOW, 1, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out);
    // Within the report interval the same MAC's refusals are only counted.
    switch.process(NOW + 1, 1, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out);
    assert_eq!(switch.drain_events().collect::<Vec<_>>(), vec![refused]);
    assert_eq!(switch.fdb_moves_refused(), 2);
    // The entry removed and configured again: a new entry, reported anew.
    switch.remove_fdb_entry(10, mac(1)).unwrap();
    switch.set_fdb_entry(10, mac(1), FdbDest::Port(0), FdbKind::Static, 0).unwrap();
    switch.process(NOW + 2, 1, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out);
    assert_eq!(switch.drain_events().collect::<Vec<_>>(), vec![refused]);
}

#[test]
fn dynamic_entries_age_out_in_poll() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    switch.process(NOW, 0, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out);
    switch.process(NOW + 200 * SECOND, 1, &frame(mac(1), mac(2), None, DATA, PAYLOAD), &mut out);
    switch.drain_events().for_each(drop);
    switch.poll(NOW + 299 * SECOND, &mut out);
    assert_eq!(switch.fdb_len(), 2);
    // Aging scans run every tenth of the aging time.
    switch.poll(NOW + 330 * SECOND, &mut out);
    assert_eq!(switch.fdb_entry(10, mac(1)), None);
    assert!(switch.fdb_entry(10, mac(2)).is_some());
    let events: Vec<Event> = switch.drain_events().collect();
    assert_eq!(events, vec![Event::FdbAged { vid: 10, mac: mac(1), dest: FdbDest::Port(0) }]);
}

#[test]
fn port_down_drops_and_flushes() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    switch.process(NOW, 0, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out);
    switch.drain_events().for_each(drop);
    switch.set_port_oper_status(0, false);
    assert_eq!(switch.fdb_entry(10, mac(1)), None);
    assert_eq!(switch.drain_events().count(), 1, "the flushed MAC is reported aged");
    out.clear();
    assert_eq!(
        switch.process(NOW, 0, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out),
        Disposition::Dropped(DropReason::PortDown)
    );
    // Floods skip the down port.
    assert_eq!(switch.process(NOW, 1, &frame(mac(9), mac(2), None, DATA, PAYLOAD), &mut out), Disposition::Flooded);
    assert_eq!(ports_of(&out), vec![2, 3]);
}

#[test]
fn reserved_group_frames_go_to_the_host_only() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    let lldp = frame(EthernetAddress([0x01, 0x80, 0xc2, 0, 0, 0x0e]), mac(7), None, EtherType::Lldp, PAYLOAD);
    assert_eq!(switch.process(NOW, 2, &lldp, &mut out), Disposition::Punted);
    assert_eq!(emitted(&out), vec![(Egress::Host { port: 2, rif: None, reason: PuntReason::L2Protocol }, lldp)]);
}

#[test]
fn vlan_and_member_management() {
    let mut switch = l2_switch();
    assert_eq!(switch.remove_vlan(10), Err(TableError::InUse));
    assert_eq!(switch.create_vlan(0), Err(TableError::Invalid("VLAN id must be 1..=4094")));
    assert_eq!(switch.remove_port(4), Err(TableError::InUse));
    switch.remove_vlan_member(20, 4).unwrap();
    switch.remove_port(4).unwrap();
    assert_eq!(switch.port_counters(4), None);
    assert_eq!(switch.vlan_members(10).collect::<Vec<_>>(), vec![(0, false), (1, false), (2, false), (3, true)]);
    assert_eq!(switch.set_vlan_member(30, 0, false), Err(TableError::NotFound));
}

#[test]
fn fdb_capacity_is_enforced() {
    let mut switch = Switch::new(SwitchConfig { fdb_capacity: 2, ..SwitchConfig::default() });
    switch.create_vlan(1).unwrap();
    switch.set_port(0, PortConfig::default()).unwrap();
    switch.set_vlan_member(1, 0, false).unwrap();
    switch.set_fdb_entry(1, mac(1), FdbDest::Port(0), FdbKind::Static, 0).unwrap();
    switch.set_fdb_entry(1, mac(2), FdbDest::Port(0), FdbKind::Dynamic, 0).unwrap();
    assert_eq!(switch.set_fdb_entry(1, mac(3), FdbDest::Port(0), FdbKind::Dynamic, 0), Err(TableError::Full));
    let mut out = Output::new();
    switch.process(NOW, 0, &frame(mac(9), mac(4), None, DATA, PAYLOAD), &mut out);
    assert_eq!(switch.fdb_len(), 2, "learning stops when the table is full");
}

proptest::proptest! {
    #[test]
    fn random_bytes_never_panic_and_drops_are_counted(data in proptest::collection::vec(proptest::num::u8::ANY, 0..200), port in 0u16..6) {
        let mut switch = l2_switch();
        let mut out = Output::new();
        let disposition = switch.process(NOW, port, &data, &mut out);
        match disposition {
            Disposition::Dropped(reason) => {
                proptest::prop_assert_eq!(switch.drop_counters()[reason], 1);
                proptest::prop_assert_eq!(switch.drop_counters().total(), 1);
            }
            _ => proptest::prop_assert_eq!(switch.drop_counters().total(), 0),
        }
        if data.len() < 14 && port < 5 {
            proptest::prop_assert_eq!(disposition, Disposition::Dropped(DropReason::Malformed));
        }
    }
}

#[test]
fn egress_drops_count_once_and_on_both_ports() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    switch.process(NOW, 1, &frame(mac(9), mac(2), None, DATA, PAYLOAD), &mut out);
    switch.set_port_oper_status(1, false);
    switch.set_fdb_entry(10, mac(2), FdbDest::Port(1), FdbKind::Static, NOW).unwrap();
    out.clear();
    let reason = DropReason::EgressPortDown;
    assert_eq!(
        switch.process(NOW, 0, &frame(mac(2), mac(1), None, DATA, PAYLOAD), &mut out),
        Disposition::Dropped(reason)
    );
    assert_eq!(switch.drop_counters()[reason], 1);
    assert_eq!(switch.drop_counters().total(), 1);
    assert_eq!(switch.port_counters(0).unwrap().drops[reason], 1);
    assert_eq!(switch.port_counters(1).unwrap().tx_drops, 1);
    // Too big for the egress MTU: the same accounting.
    switch.set_port(2, PortConfig { pvid: 10, mtu: 20, ..PortConfig::default() }).unwrap();
    switch.set_fdb_entry(10, mac(3), FdbDest::Port(2), FdbKind::Static, NOW).unwrap();
    let reason = DropReason::MtuExceeded;
    assert_eq!(
        switch.process(NOW, 0, &frame(mac(3), mac(1), None, DATA, PAYLOAD), &mut out),
        Disposition::Dropped(reason)
    );
    assert_eq!(switch.drop_counters()[reason], 1);
    assert_eq!(switch.port_counters(2).unwrap().tx_drops, 1);
    assert!(out.is_empty());
}

#[test]
fn link_level_frames_are_counted_per_opcode_and_never_punted_or_forwarded() {
    use crate::wire::mac_control::{self, MacControlPacket, MacControlRepr};
    let mut switch = l2_switch();
    let mut out = Output::new();
    let mut control = [0u8; mac_control::MIN_LEN];
    MacControlRepr::PriorityFlowControl { class_enable: 0b0000_1000, quanta: [0, 0, 0, 0xffff, 0, 0, 0, 0] }
        .emit(&mut MacControlPacket::new_unchecked(&mut control[..]));
    let pfc = frame(mac_control::DESTINATION, mac(7), None, EtherType::MacControl, &control);
    assert_eq!(switch.process(NOW, 2, &pfc, &mut out), Disposition::LinkLevel(LinkLevelFrame::Pfc));
    MacControlRepr::Pause { quanta: 100 }.emit(&mut MacControlPacket::new_unchecked(&mut control[..]));
    let pause = frame(mac_control::DESTINATION, mac(7), None, EtherType::MacControl, &control);
    assert_eq!(switch.process(NOW, 2, &pause, &mut out), Disposition::LinkLevel(LinkLevelFrame::Pause));
    let ib = frame(mac(9), mac(7), None, EtherType::LocalExperimental, PAYLOAD);
    assert_eq!(switch.process(NOW, 2, &ib, &mut out), Disposition::LinkLevel(LinkLevelFrame::IbLike));
    assert!(out.is_empty(), "link-level frames are neither forwarded nor punted");
    let counters = switch.port_counters(2).unwrap();
    assert_eq!(counters.link_level, LinkLevelCounters { pause_rx: 1, pfc_rx: 1, mac_control_other_rx: 0, ib_rx: 1 });
    assert_eq!(counters.rx_packets, 3);
    assert_eq!(counters.rx_drops, 0);
    // Nothing was learned from them either.
    assert!(switch.fdb_entries().next().is_none());
}

#[test]
fn a_flood_shares_one_buffer_per_tagging_and_describes_every_copy() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    let sent = frame(EthernetAddress::BROADCAST, mac(1), None, DATA, PAYLOAD);
    assert_eq!(switch.process(NOW, 0, &sent, &mut out), Disposition::Flooded);
    assert_eq!(ports_of(&out), vec![1, 2, 3]);
    // Access ports 1 and 2 get the same untagged bytes, trunk 3 a tagged copy.
    assert_eq!(out.pool().in_use(), 2);
    assert_eq!(out.get(0).unwrap().buffer, out.get(1).unwrap().buffer);
    assert_ne!(out.get(0).unwrap().buffer, out.get(2).unwrap().buffer);
    for emitted in out.iter() {
        assert_eq!(emitted.meta.ingress, Some(0));
        assert_eq!(usize::from(emitted.meta.len), emitted.frame.len());
    }
    out.clear();
    assert_eq!(out.pool().in_use(), 0, "every copy released");
}

#[test]
fn tx_counts_only_frames_that_leave_and_egress_drops_count_as_drops() {
    let mut switch = l2_switch();
    let mut out = Output::new();
    let sent = frame(mac(9), mac(1), None, DATA, PAYLOAD);
    assert_eq!(switch.process(NOW, 0, &sent, &mut out), Disposition::Flooded);
    // Emitted is not sent: nothing counted yet.
    assert_eq!(switch.port_counters(1).unwrap().tx_packets, 0);
    // Port 1 takes its copy; port 2's queue drops it.
    for emitted in out.iter() {
        match emitted.to {
            Egress::Port(2) => switch.count_egress_drop(2),
            Egress::Port(port) => switch.count_transmitted(port, emitted.frame),
            Egress::Host { .. } => {}
        }
    }
    let (one, two) = (switch.port_counters(1).unwrap(), switch.port_counters(2).unwrap());
    assert_eq!((one.tx_packets, one.tx_drops), (1, 0));
    assert_eq!((two.tx_packets, two.tx_bytes, two.tx_drops), (0, 0, 1));
}
