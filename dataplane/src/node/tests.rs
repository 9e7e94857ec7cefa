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
        fn dequeue(&mut self, _: u64, _: PortId) -> Option<FrameRef> {
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
