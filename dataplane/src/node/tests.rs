//! The node around a bare pipeline: where frames go, and where they are counted.

use super::*;
use crate::pipeline::{PortConfig, SwitchConfig};
use crate::wire::mac_control::{self, MacControlPacket, MacControlRepr};
use crate::wire::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr};

const NOW: u64 = 1_000_000_000_000;

/// Records what the node wrote, and refuses frames on the ports it is told to.
#[derive(Default)]
struct Recorder {
    sent: Vec<(PortId, Vec<u8>)>,
    punted: Vec<(Option<HostIfTarget>, Vec<u8>)>,
    refuse: Vec<PortId>,
}

impl Ports<HostIfTarget> for Recorder {
    fn transmit(&mut self, port: PortId, frame: &[u8]) -> bool {
        if self.refuse.contains(&port) {
            return false;
        }
        self.sent.push((port, frame.to_vec()));
        true
    }
    fn punt(&mut self, host_if: Option<HostIfTarget>, _egress: Egress, frame: &[u8]) {
        self.punted.push((host_if, frame.to_vec()));
    }
}

fn mac(last: u8) -> EthernetAddress {
    EthernetAddress([0x02, 0, 0, 0, 0, last])
}

fn frame(dst: EthernetAddress, src: EthernetAddress, ethertype: EtherType, payload: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; 14 + payload.len()];
    EthernetRepr { dst_addr: dst, src_addr: src, ethertype }.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
    buf[14..].copy_from_slice(payload);
    buf
}

/// Three access ports in VLAN 10.
fn switch() -> Switch {
    let mut switch = Switch::new(SwitchConfig::small());
    switch.create_vlan(10).unwrap();
    for port in 0..3 {
        switch.set_port(port, PortConfig { pvid: 10, ..PortConfig::default() }).unwrap();
        switch.set_vlan_member(10, port, false).unwrap();
    }
    switch
}

const DATA: EtherType = EtherType::Unknown(0x88b6);

#[test]
fn frames_are_counted_as_sent_only_when_the_port_takes_them() {
    let mut switch = switch();
    let mut node = Node::new();
    let mut ports = Recorder { refuse: vec![2], ..Recorder::default() };
    let flood = frame(EthernetAddress::BROADCAST, mac(1), DATA, &[0; 50]);
    let disposition = node.receive(&mut switch, NOW, 0, &flood, &mut ports);
    assert_eq!(disposition, Disposition::Flooded);
    assert_eq!(ports.sent, vec![(1, flood.clone())]);
    let (one, two) = (switch.port_counters(1).unwrap().clone(), switch.port_counters(2).unwrap().clone());
    assert_eq!((one.tx_packets, one.tx_bytes, one.tx_drops), (1, flood.len() as u64, 0));
    assert_eq!((two.tx_packets, two.tx_drops), (0, 1), "refused by the port: a drop, not TX");
    assert_eq!(node.counters().port_refused, 1);
    assert_eq!(node.pool().in_use(), 0, "every buffer back in the pool");
}

#[test]
fn a_batch_goes_out_as_its_frames_would_one_by_one() {
    let mut switch = switch();
    switch.set_fdb_entry(10, mac(2), crate::pipeline::FdbDest::Port(1), crate::pipeline::FdbKind::Static, NOW).unwrap();
    let mut node = Node::new();
    let mut ports = Recorder::default();
    let frames: Vec<Vec<u8>> = (0..3).map(|i| frame(mac(2), mac(1), DATA, &[i; 50])).collect();
    node.receive_batch(&mut switch, NOW, 0, frames.iter().map(Vec::as_slice), &mut ports);
    assert_eq!(ports.sent, frames.iter().map(|f| (1, f.clone())).collect::<Vec<_>>(), "in order, all of them");
    assert_eq!(switch.port_counters(1).unwrap().tx_packets, 3);
    assert_eq!(node.pool().in_use(), 0, "every buffer back in the pool");
}

#[test]
fn a_full_egress_queue_drops_and_counts_it_as_a_drop() {
    /// Holds frames and never sends them: a port paused forever.
    struct Stuck(Vec<FrameRef>, usize);
    impl TrafficManager for Stuck {
        fn enqueue(&mut self, _: u64, _: PortId, frame: FrameRef, _: &FrameMeta) -> Result<(), TmDrop> {
            if self.0.len() >= self.1 {
                return Err(TmDrop::QueueFull);
            }
            self.0.push(frame);
            Ok(())
        }
        fn dequeue(&mut self, _: u64, _: PortId) -> Option<Dequeued> {
            None
        }
        fn backlogged(&self, _: &mut Vec<PortId>) {}
        fn link_level(&mut self, _: u64, _: PortId, _: LinkLevelFrame, _: &[u8]) {}
        fn next_wakeup(&self) -> Option<u64> {
            None
        }
    }
    let mut switch = switch();
    switch.set_fdb_entry(10, mac(2), crate::pipeline::FdbDest::Port(1), crate::pipeline::FdbKind::Static, NOW).unwrap();
    let mut node = Node::with_traffic_manager(Stuck(Vec::new(), 2));
    let mut ports = Recorder::default();
    for _ in 0..3 {
        node.receive(&mut switch, NOW, 0, &frame(mac(2), mac(1), DATA, &[7; 50]), &mut ports);
    }
    assert!(ports.sent.is_empty());
    let counters = switch.port_counters(1).unwrap();
    assert_eq!((counters.tx_packets, counters.tx_drops), (0, 1));
    assert_eq!(node.counters().tm_drops, 1);
    // The two queued frames are still held in the pool, uncopied.
    assert_eq!(node.pool().in_use(), 2);
    assert_eq!(node.traffic_manager().0.len(), 2);
}

#[test]
fn pfc_frames_go_to_the_traffic_manager_and_nowhere_else() {
    let mut switch = switch();
    let mut node = Node::new();
    let mut ports = Recorder::default();
    let mut control = [0u8; mac_control::MIN_LEN];
    MacControlRepr::PriorityFlowControl { class_enable: 0b1000, quanta: [0, 0, 0, 500, 0, 0, 0, 0] }
        .emit(&mut MacControlPacket::new_unchecked(&mut control[..]));
    let pfc = frame(mac_control::DESTINATION, mac(1), EtherType::MacControl, &control);
    let disposition = node.handle(&mut switch, NOW, NodeEvent::Frame { port: 0, frame: &pfc }, &mut ports);
    assert_eq!(disposition, Some(Disposition::LinkLevel(LinkLevelFrame::Pfc)));
    assert!(ports.sent.is_empty() && ports.punted.is_empty(), "never forwarded nor punted");
    assert_eq!(node.traffic_manager().pauses_ignored, 1);
    assert_eq!(switch.port_counters(0).unwrap().link_level.pfc_rx, 1);
}

#[test]
fn punts_go_to_the_host_interface_at_once() {
    let mut switch = switch();
    let mut node = Node::new();
    let mut ports = Recorder::default();
    let lldp = frame(EthernetAddress([0x01, 0x80, 0xc2, 0, 0, 0x0e]), mac(1), EtherType::Lldp, &[0; 50]);
    node.receive(&mut switch, NOW, 2, &lldp, &mut ports);
    assert_eq!(ports.punted, vec![(Some(HostIfTarget::Port(2)), lldp)]);
    // The host's own frames leave through its port, counted as sent.
    let reply = frame(mac(1), mac(9), DATA, &[1; 50]);
    node.handle(&mut switch, NOW, NodeEvent::HostFrame { host_if: HostIfTarget::Port(2), frame: &reply }, &mut ports);
    assert_eq!(ports.sent, vec![(2, reply)]);
    assert_eq!(switch.port_counters(2).unwrap().tx_packets, 1);
}

#[test]
fn timers_run_at_the_poll_interval() {
    let mut switch = switch();
    let mut node = Node::new();
    let mut ports = Recorder::default();
    node.handle(&mut switch, NOW, NodeEvent::Timer, &mut ports);
    assert_eq!(node.next_wakeup(), NOW + Node::<OutputQueues>::POLL_INTERVAL_NS);
    node.handle(&mut switch, NOW, NodeEvent::Link { port: 1, up: false }, &mut ports);
    assert_eq!(
        node.receive(&mut switch, NOW, 1, &frame(mac(2), mac(1), DATA, &[0; 50]), &mut ports),
        Disposition::Dropped(crate::pipeline::DropReason::PortDown)
    );
}

// The `qos` traffic manager in the node's slot.

mod with_qos {
    use super::*;
    use crate::wire::{Ecn, IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr};
    use qos::ecn::{NonEct, WredProfile};
    use qos::tm::{EcnSetting, PortConfig as TmPort, TmConfig};
    use std::net::{Ipv4Addr, Ipv6Addr};

    const GIG: u64 = 1_000_000_000;

    /// Three 1 Gb/s ports (RoCE profile: DSCP 26 -> TC 3, lossless with PFC).
    fn config() -> TmConfig {
        let mut config = TmConfig::roce((0..3).map(|_| TmPort { mtu: 1500, ..TmPort::new(GIG) }).collect());
        config.pool.size_bytes = 1 << 20;
        config
    }

    fn ipv4(dscp: u8, ecn: Ecn, payload: usize) -> Vec<u8> {
        let repr = Ipv4Repr {
            src_addr: Ipv4Addr::new(10, 0, 0, 1),
            dst_addr: Ipv4Addr::new(10, 0, 0, 2),
            protocol: IpProtocol::Udp,
            payload_len: payload,
            ttl: 64,
            dscp,
            ecn,
            ident: 1,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
        };
        let mut ip = vec![0u8; 20 + payload];
        repr.emit(&mut Ipv4Packet::new_unchecked(&mut ip[..]));
        frame(mac(2), mac(1), EtherType::Ipv4, &ip)
    }

    fn node_and_switch(config: &TmConfig) -> (Node<QosTrafficManager>, Switch) {
        let mut switch = switch();
        switch
            .set_fdb_entry(10, mac(2), crate::pipeline::FdbDest::Port(1), crate::pipeline::FdbKind::Static, NOW)
            .unwrap();
        let mut node = Node::with_traffic_manager(QosTrafficManager::new(config).unwrap());
        // The pipeline's first timer run, so that the next is 10 ms away.
        node.handle(&mut switch, NOW, NodeEvent::Timer, &mut Recorder::default());
        (node, switch)
    }

    #[test]
    fn ports_send_at_their_line_rate() {
        let (mut node, mut switch) = node_and_switch(&config());
        let mut ports = Recorder::default();
        let data = ipv4(0, Ecn::NotEct, 1000);
        for _ in 0..3 {
            node.receive(&mut switch, NOW, 0, &data, &mut ports);
        }
        assert_eq!(ports.sent.len(), 1, "one frame on the wire, two queued");
        // (1034 + 24) bytes at 1 Gb/s: 8464 ns.
        let wire_ns = (data.len() as u64 + 24) * 8;
        assert_eq!(node.next_wakeup(), NOW + wire_ns);
        node.handle(&mut switch, NOW + wire_ns, NodeEvent::Timer, &mut ports);
        assert_eq!(ports.sent.len(), 2);
        node.handle(&mut switch, NOW + 2 * wire_ns, NodeEvent::Timer, &mut ports);
        assert_eq!(ports.sent.len(), 3);
        assert_eq!(switch.port_counters(1).unwrap().tx_packets, 3);
        assert_eq!(node.pool().in_use(), 0);
    }

    /// A new configuration takes over the frames the old traffic manager
    /// held: queued again in their order, charged to their ingress port's
    /// priority group, sent at the new port speed.
    #[test]
    fn a_replaced_traffic_manager_hands_its_frames_to_the_new_one() {
        let (mut node, mut switch) = node_and_switch(&config());
        let mut ports = Recorder::default();
        for payload in [1000, 1001, 1002] {
            node.receive(&mut switch, NOW, 0, &ipv4(26, Ecn::NotEct, payload), &mut ports);
        }
        assert_eq!((ports.sent.len(), node.pool().in_use()), (1, 2), "two queued");
        let mut faster = config();
        faster.ports[1].speed_bps *= 10;
        let migration = node.replace_traffic_manager(NOW, QosTrafficManager::new(&faster).unwrap(), &[]);
        assert_eq!(migration, Migration { kept: 2, dropped: 0 });
        assert_eq!(node.counters().tm_migrated, 2);
        assert_eq!(node.counters().tm_drops, 0);
        let tm = node.traffic_manager().tm();
        assert_eq!(tm.queue_depth(1, 3).0, 2, "DSCP 26 is queue 3 under the new maps too");
        assert!(tm.buffer().pg(3).used_reserved + tm.buffer().pg(3).used_shared > 0, "charged to eth0's PG 3");
        // The wire is still busy with the first frame; then the two go, in order.
        for ms in 1..=2 {
            node.handle(&mut switch, NOW + ms * 1_000_000, NodeEvent::Timer, &mut ports);
        }
        let lengths: Vec<usize> = ports.sent.iter().map(|(_, frame)| frame.len()).collect();
        assert_eq!(lengths, [1034, 1035, 1036]);
        assert_eq!(node.pool().in_use(), 0, "every buffer back in the pool");
    }

    /// A frame whose port the new configuration no longer has cannot be
    /// kept: released, counted under the new traffic manager's reason.
    #[test]
    fn frames_for_a_port_the_new_traffic_manager_lacks_are_dropped_and_counted() {
        let (mut node, mut switch) = node_and_switch(&config());
        let mut ports = Recorder::default();
        for _ in 0..3 {
            node.receive(&mut switch, NOW, 0, &ipv4(0, Ecn::NotEct, 1000), &mut ports);
        }
        let mut one_port = config();
        one_port.ports.truncate(1);
        let migration = node.replace_traffic_manager(NOW, QosTrafficManager::new(&one_port).unwrap(), &[]);
        assert_eq!(migration, Migration { kept: 0, dropped: 2 });
        assert_eq!(node.pool().in_use(), 0, "every buffer back in the pool");
        assert_eq!((node.counters().tm_drops, node.counters().tm_reconfigure_drops), (2, 2));
        assert_eq!(node.traffic_manager().tm().drops(qos::tm::DropReason::UnknownPort), 2);
    }

    /// A commit removed port 1 and gave its index to a new port: what
    /// waited for the old port never leaves through the new one.
    #[test]
    fn frames_for_a_renumbered_port_are_dropped_not_sent_out_of_its_successor() {
        let (mut node, mut switch) = node_and_switch(&config());
        let mut ports = Recorder::default();
        for _ in 0..3 {
            node.receive(&mut switch, NOW, 0, &ipv4(0, Ecn::NotEct, 1000), &mut ports);
        }
        let sent = ports.sent.len();
        let migration = node.replace_traffic_manager(NOW, QosTrafficManager::new(&config()).unwrap(), &[1]);
        assert_eq!(migration, Migration { kept: 0, dropped: 2 });
        assert_eq!(node.counters().tm_reconfigure_drops, 2);
        for ms in 1..=3 {
            node.handle(&mut switch, NOW + ms * 1_000_000, NodeEvent::Timer, &mut ports);
        }
        assert_eq!(ports.sent.len(), sent, "nothing more sent");
        assert_eq!(node.pool().in_use(), 0, "every buffer back in the pool");
    }

    #[test]
    fn a_received_pfc_frame_pauses_the_lossless_queue_only() {
        let (mut node, mut switch) = node_and_switch(&config());
        let mut ports = Recorder::default();
        let mut control = [0u8; mac_control::MIN_LEN];
        // 1000 quanta at 1 Gb/s: 512 us.
        MacControlRepr::PriorityFlowControl { class_enable: 0b1000, quanta: [0, 0, 0, 1000, 0, 0, 0, 0] }
            .emit(&mut MacControlPacket::new_unchecked(&mut control[..]));
        let pfc = frame(mac_control::DESTINATION, mac(2), EtherType::MacControl, &control);
        node.receive(&mut switch, NOW, 1, &pfc, &mut ports);
        assert_eq!(node.traffic_manager().tm().pfc_counters(1).rx_frames[3], 1);
        node.receive(&mut switch, NOW, 0, &ipv4(26, Ecn::Ect0, 100), &mut ports);
        assert!(ports.sent.is_empty(), "DSCP 26 is TC 3: paused");
        node.receive(&mut switch, NOW, 0, &ipv4(0, Ecn::NotEct, 100), &mut ports);
        assert_eq!(ports.sent.len(), 1, "TC 0 is not paused");
        // First the wire is busy with that frame ((134 + 24 bytes) x 8 ns) ...
        assert_eq!(node.next_wakeup(), NOW + 1264);
        node.handle(&mut switch, NOW + 1264, NodeEvent::Timer, &mut ports);
        assert_eq!(ports.sent.len(), 1);
        // ... then the pause is what holds the TC 3 frame.
        assert_eq!(node.next_wakeup(), NOW + 512_000);
        node.handle(&mut switch, NOW + 512_000, NodeEvent::Timer, &mut ports);
        assert_eq!(ports.sent.len(), 2);
        assert_eq!(node.traffic_manager().tm().pfc_paused_ns(NOW + 600_000, 1, 3), 512_000);
    }

    /// A commit replaces the traffic manager while port 1's peer pauses
    /// TC 3: the pause holds in the new one until its quanta run out (the
    /// peer does not repeat it before then), and the counters go on.
    #[test]
    fn a_received_pause_and_the_counters_outlive_a_replaced_traffic_manager() {
        let (mut node, mut switch) = node_and_switch(&config());
        let mut ports = Recorder::default();
        let mut control = [0u8; mac_control::MIN_LEN];
        MacControlRepr::PriorityFlowControl { class_enable: 0b1000, quanta: [0, 0, 0, 1000, 0, 0, 0, 0] }
            .emit(&mut MacControlPacket::new_unchecked(&mut control[..]));
        let pfc = frame(mac_control::DESTINATION, mac(2), EtherType::MacControl, &control);
        node.receive(&mut switch, NOW, 1, &pfc, &mut ports);
        node.receive(&mut switch, NOW, 0, &ipv4(0, Ecn::NotEct, 100), &mut ports);
        node.receive(&mut switch, NOW, 0, &ipv4(26, Ecn::Ect0, 100), &mut ports);
        assert_eq!(ports.sent.len(), 1, "TC 0 went, TC 3 is paused");

        let migration = node.replace_traffic_manager(NOW + 100_000, QosTrafficManager::new(&config()).unwrap(), &[]);
        assert_eq!(migration.kept, 1);
        node.handle(&mut switch, NOW + 100_000, NodeEvent::Timer, &mut ports);
        assert_eq!(ports.sent.len(), 1, "still paused after the swap");
        assert_eq!(node.next_wakeup(), NOW + 512_000, "until the peer's quanta end");
        node.handle(&mut switch, NOW + 512_000, NodeEvent::Timer, &mut ports);
        assert_eq!(ports.sent.len(), 2);
        let tm = node.traffic_manager().tm();
        assert_eq!(tm.pfc_counters(1).rx_frames[3], 1, "the PFC frame counted before the swap");
        assert_eq!(tm.pfc_paused_ns(NOW + 600_000, 1, 3), 512_000);
        assert_eq!((tm.queue_counters(1, 0).tx_frames, tm.queue_counters(1, 3).tx_frames), (1, 1));
    }

    #[test]
    fn a_congested_ingress_sends_pfc_frames_that_parse() {
        let mut config = config();
        config.ports[1].speed_bps = 10_000_000; // the egress drains slowly
        let (mut node, mut switch) = node_and_switch(&config);
        node.traffic_manager_mut().set_port_mac(0, mac(0xa0));
        let mut ports = Recorder::default();
        let data = ipv4(26, Ecn::NotEct, 1400);
        let mut sent_pfc = None;
        for i in 0..400 {
            node.receive(&mut switch, NOW + i, 0, &data, &mut ports);
            if let Some((port, bytes)) = ports.sent.iter().find(|(_, f)| f[12..14] == [0x88, 0x08]) {
                sent_pfc = Some((*port, bytes.clone()));
                break;
            }
        }
        let (port, bytes) = sent_pfc.expect("a PFC frame");
        assert_eq!(port, 0, "sent to the ingress port's peer");
        assert_eq!(bytes.len(), 60);
        let ethernet = EthernetFrame::new_checked(&bytes[..]).unwrap();
        assert_eq!(ethernet.dst_addr(), mac_control::DESTINATION);
        assert_eq!(ethernet.src_addr(), mac(0xa0));
        let repr = MacControlRepr::parse(&MacControlPacket::new_checked(&bytes[14..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            MacControlRepr::PriorityFlowControl { class_enable: 0b1000, quanta: [0, 0, 0, 0xffff, 0, 0, 0, 0] }
        );
        assert_eq!(node.counters().link_frames_sent, 1);
        assert_eq!(node.counters().tm_drops, 0, "lossless: nothing dropped");
    }

    fn marking_config() -> TmConfig {
        let mut config = config();
        config.ports[1].speed_bps = 10_000_000;
        // Queue 0 (TC 0): mark everything above 2000 queued bytes.
        let profile =
            WredProfile { kmin_bytes: 1000, kmax_bytes: 2000, pmax_percent: 100, ecn: true, non_ect: NonEct::Pass };
        config.queues[0].ecn = EcnSetting::Profile(profile);
        config
    }

    #[test]
    fn ce_is_written_into_ipv4_with_its_checksum() {
        let (mut node, mut switch) = node_and_switch(&marking_config());
        let mut ports = Recorder::default();
        for i in 0..6 {
            node.receive(&mut switch, NOW + i, 0, &ipv4(0, Ecn::Ect0, 1000), &mut ports);
        }
        // Let the port drain and look at what left.
        for step in 1..10 {
            node.handle(&mut switch, NOW + step * 1_000_000, NodeEvent::Timer, &mut ports);
        }
        assert_eq!(ports.sent.len(), 6);
        assert!(node.counters().ce_marked >= 3, "{:?}", node.counters());
        let ecns: Vec<Ecn> = ports
            .sent
            .iter()
            .map(|(_, f)| {
                let packet = Ipv4Packet::new_checked(&f[14..]).unwrap();
                assert!(packet.verify_checksum(), "checksum patched");
                packet.ecn()
            })
            .collect();
        // Marked as they leave, on the queue they leave behind.
        assert_eq!(ecns[0], Ecn::Ect0, "the first left an empty queue");
        assert_eq!(ecns[1], Ecn::Ce, "the second left four frames behind");
        assert_eq!(ecns[5], Ecn::Ect0, "the last left an empty queue");
        assert_eq!(ecns.iter().filter(|&&e| e == Ecn::Ce).count() as u64, node.counters().ce_marked);
        // Not ECN-capable: never marked, and passed (the profile says so).
        let before = node.counters().ce_marked;
        for i in 0..4 {
            node.receive(&mut switch, NOW + 20_000_000 + i, 0, &ipv4(0, Ecn::NotEct, 1000), &mut ports);
        }
        assert_eq!(node.counters().ce_marked, before);
        assert_eq!(node.counters().tm_drops, 0);
    }

    #[test]
    fn ce_is_written_into_ipv6() {
        let (mut node, mut switch) = node_and_switch(&marking_config());
        let mut ports = Recorder::default();
        let repr = Ipv6Repr {
            src_addr: Ipv6Addr::LOCALHOST,
            dst_addr: Ipv6Addr::LOCALHOST,
            next_header: IpProtocol::Udp,
            payload_len: 1000,
            hop_limit: 64,
            dscp: 0,
            ecn: Ecn::Ect0,
            flow_label: 0,
        };
        let mut ip = vec![0u8; 40 + 1000];
        repr.emit(&mut Ipv6Packet::new_unchecked(&mut ip[..]));
        let data = frame(mac(2), mac(1), EtherType::Ipv6, &ip);
        for i in 0..6 {
            node.receive(&mut switch, NOW + i, 0, &data, &mut ports);
        }
        for step in 1..10 {
            node.handle(&mut switch, NOW + step * 1_000_000, NodeEvent::Timer, &mut ports);
        }
        let second = Ipv6Packet::new_checked(&ports.sent[1].1[14..]).unwrap();
        assert_eq!(second.ecn(), Ecn::Ce, "it left four frames behind");
        assert_eq!(Ipv6Packet::new_checked(&ports.sent[0].1[14..]).unwrap().ecn(), Ecn::Ect0);
    }

    #[test]
    fn a_malformed_pfc_frame_is_counted_not_obeyed() {
        let (mut node, mut switch) = node_and_switch(&config());
        let mut ports = Recorder::default();
        let short = frame(mac_control::DESTINATION, mac(2), EtherType::MacControl, &[0x01, 0x01, 0, 8]);
        node.receive(&mut switch, NOW, 1, &short, &mut ports);
        node.receive(&mut switch, NOW, 0, &ipv4(26, Ecn::Ect0, 100), &mut ports);
        assert_eq!(ports.sent.len(), 1, "nothing paused");
        assert!(
            node.traffic_manager().counters().malformed_link_frames
                + switch.port_counters(1).unwrap().link_level.pfc_rx
                >= 1
        );
    }
}

/// Frames taken from another pool and routed in their own buffer: what
/// leaves is what the copying path sends, and the buffer that leaves is the
/// one that came in.
mod in_place {
    use super::*;
    use crate::pipeline::{DEFAULT_VRF, NextHop, RouteTarget, RouterInterface};
    use crate::wire::{IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr};
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    /// Also records which pool buffers the ports were handed.
    #[derive(Default)]
    struct Cable {
        sent: Vec<(PortId, Vec<u8>)>,
        buffers: Vec<FrameRef>,
    }

    impl Ports<HostIfTarget> for Cable {
        fn transmit(&mut self, port: PortId, frame: &[u8]) -> bool {
            self.sent.push((port, frame.to_vec()));
            true
        }
        fn transmit_pooled(&mut self, port: PortId, pool: &mut FramePool, frame: FrameRef) -> bool {
            self.buffers.push(frame);
            self.transmit(port, pool.bytes(frame))
        }
        fn punt(&mut self, _: Option<HostIfTarget>, _: Egress, _: &[u8]) {}
    }

    const PEER: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x99]);

    /// Routed ports 0 and 1; 10.0.2.0/24 and 2001:db8:2::/64 through the
    /// neighbour behind port 1.
    fn router() -> Switch {
        let mut switch = Switch::new(SwitchConfig::small());
        for port in 0..2 {
            switch.set_port(port, PortConfig { pvid: 0, learning: false, ..PortConfig::default() }).unwrap();
            let rif = RouterInterface {
                kind: RifKind::Port(port),
                mac: mac(0x10 + port as u8),
                mtu: 1500,
                admin_up: true,
                vrf: DEFAULT_VRF,
            };
            switch.set_router_interface(port, rif).unwrap();
        }
        for (id, ip) in [(1, IpAddr::V4(Ipv4Addr::new(10, 0, 1, 2))), (2, IpAddr::V6("2001:db8:1::2".parse().unwrap()))]
        {
            switch.set_neighbor(1, ip, PEER).unwrap();
            switch.set_next_hop(id, NextHop { rif: 1, ip }).unwrap();
        }
        switch.set_route("10.0.2.0/24".parse().unwrap(), RouteTarget::NextHop(1)).unwrap();
        switch.set_route("2001:db8:2::/64".parse().unwrap(), RouteTarget::NextHop(2)).unwrap();
        switch
    }

    fn ipv4(ttl: u8, payload: usize, padding: usize) -> Vec<u8> {
        let repr = Ipv4Repr {
            src_addr: Ipv4Addr::new(10, 0, 0, 1),
            dst_addr: Ipv4Addr::new(10, 0, 2, 7),
            protocol: IpProtocol::Udp,
            payload_len: payload,
            ttl,
            dscp: 26,
            ecn: crate::wire::Ecn::Ect0,
            ident: 9,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
        };
        let mut ip = vec![0xa5u8; 20 + payload + padding];
        repr.emit(&mut Ipv4Packet::new_unchecked(&mut ip[..]));
        frame(mac(0x10), mac(1), EtherType::Ipv4, &ip)
    }

    fn ipv6(payload: usize) -> Vec<u8> {
        let repr = Ipv6Repr {
            src_addr: "2001:db8::1".parse::<Ipv6Addr>().unwrap(),
            dst_addr: "2001:db8:2::7".parse::<Ipv6Addr>().unwrap(),
            next_header: IpProtocol::Udp,
            payload_len: payload,
            hop_limit: 64,
            dscp: 26,
            ecn: crate::wire::Ecn::Ect0,
            flow_label: 7,
        };
        let mut ip = vec![0x5au8; 40 + payload];
        repr.emit(&mut Ipv6Packet::new_unchecked(&mut ip[..]));
        frame(mac(0x10), mac(1), EtherType::Ipv6, &ip)
    }

    /// The frame through `receive` (copied) and through `take_frame` +
    /// `receive_pooled` (in place): the same bytes leave port 1.
    fn both_ways(frame: &[u8]) -> (Vec<u8>, Vec<u8>, Cable, Node) {
        let (mut switch, mut node, mut copied) = (router(), Node::new(), Cable::default());
        // The first frame resolves the next hop and caches its rewrite.
        node.receive(&mut switch, NOW, 0, frame, &mut copied);
        node.receive(&mut switch, NOW, 0, frame, &mut copied);
        let mut source = FramePool::with_slots(4);
        let (theirs, bytes) = source.alloc_frame(frame.len());
        bytes.copy_from_slice(frame);
        let mine = node.take_frame(&mut source, theirs);
        assert_eq!(source.in_use(), 0, "the cable's reference given back");
        let mut moved = Cable::default();
        let disposition = node.receive_pooled(&mut switch, NOW, 0, mine, &mut moved);
        assert_eq!(disposition, Disposition::Forwarded);
        assert_eq!(moved.buffers, vec![mine], "the received buffer itself left");
        assert_eq!(node.pool().in_use(), 0, "every buffer back in the pool");
        let (_, first) = copied.sent.pop().unwrap();
        let (port, second) = moved.sent.pop().unwrap();
        assert_eq!(port, 1);
        (first, second, moved, node)
    }

    #[test]
    fn an_ipv4_packet_leaves_in_its_buffer_as_a_copy_would() {
        let (copied, in_place, _, _) = both_ways(&ipv4(64, 1000, 0));
        assert_eq!(in_place, copied);
        assert_eq!(&in_place[..6], &PEER.0);
        assert_eq!(&in_place[6..12], &mac(0x11).0);
        let packet = Ipv4Packet::new_checked(&in_place[14..]).unwrap();
        assert_eq!(packet.ttl(), 63);
        assert!(packet.verify_checksum(), "the checksum follows the TTL");
    }

    #[test]
    fn padding_after_the_packet_is_left_behind() {
        let (copied, in_place, _, _) = both_ways(&ipv4(64, 10, 20));
        assert_eq!(in_place, copied);
        assert_eq!(in_place.len(), 14 + 20 + 10);
    }

    #[test]
    fn an_ipv6_packet_leaves_in_its_buffer_as_a_copy_would() {
        let (copied, in_place, _, _) = both_ways(&ipv6(500));
        assert_eq!(in_place, copied);
        assert_eq!(Ipv6Packet::new_checked(&in_place[14..]).unwrap().hop_limit(), 63);
    }

    #[test]
    fn what_is_not_routed_in_place_is_released() {
        let (mut switch, mut node, mut cable) = (router(), Node::new(), Cable::default());
        let mut source = FramePool::with_slots(2);
        // TTL 1: answered with an ICMP error, the frame itself dropped.
        let expiring = ipv4(1, 100, 0);
        let (theirs, bytes) = source.alloc_frame(expiring.len());
        bytes.copy_from_slice(&expiring);
        let mine = node.take_frame(&mut source, theirs);
        let disposition = node.receive_pooled(&mut switch, NOW, 0, mine, &mut cable);
        assert!(matches!(disposition, Disposition::Dropped(_)), "{disposition:?}");
        assert!(!cable.buffers.contains(&mine));
        assert_eq!(node.pool().in_use(), 0);
    }

    #[test]
    fn sent_frames_are_counted_from_what_the_node_recorded() {
        let (_, in_place, _, _) = both_ways(&ipv4(64, 200, 0));
        let mut switch = router();
        let mut node = Node::new();
        let mut cable = Cable::default();
        let broadcast = frame(EthernetAddress::BROADCAST, mac(1), DATA, &[0; 50]);
        node.host_send(&mut switch, NOW, HostIfTarget::Port(1), &broadcast, &mut cable);
        node.receive(&mut switch, NOW, 0, &ipv4(64, 200, 0), &mut cable);
        node.receive(&mut switch, NOW, 0, &ipv4(64, 200, 0), &mut cable);
        let counters = switch.port_counters(1).unwrap();
        assert_eq!((counters.tx_packets, counters.tx_broadcast, counters.tx_unicast), (3, 1, 2));
        assert_eq!(counters.tx_bytes, (broadcast.len() + 2 * in_place.len()) as u64);
    }
}
