//! What the kernel reports (the monitor socket's `RTM_NEWLINK`,
//! `RTM_NEWNEIGH`, `RTM_DELNEIGH`), turned into the shim's notifications:
//!
//! - a bridge FDB entry the bridge learned (not static, not `extern_learn`,
//!   not a device's own) is `Learned`, or `Moved` when the MAC was known on
//!   another port; its deletion is `Aged` (the bridge also deletes a
//!   port's MACs when its link goes down, as the soft pipeline flushes them);
//! - a port's `IFF_RUNNING` changing is `PortOperStatus`;
//! - an ARP/ND neighbour resolved on a router interface is
//!   `NeighborResolved`, one that failed or went is `NeighborExpired`.

use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::neighbour::{NeighbourMessage, NeighbourState};

use super::KernelBackend;
use super::bridge::FdbRecord;
use super::link::LinkState;
use super::route::NeighborRecord;
use crate::notification::{FdbEvent, Notification};
use crate::object::FdbEntryKey;

impl KernelBackend {
    /// Reads every queued kernel notification and translates it.
    pub(super) fn read_monitor(&mut self) {
        let mut messages = Vec::new();
        if let Err(error) = self.monitor.drain(&mut messages) {
            // ENOBUFS: the kernel dropped notifications; what we read stands.
            tracing::warn!(%error, "kernel backend: notifications lost");
        }
        for message in messages {
            match message {
                RouteNetlinkMessage::NewLink(link) => self.on_link(&LinkState::of(&link)),
                RouteNetlinkMessage::NewNeighbour(neighbour) => self.on_neighbour(&neighbour, false),
                RouteNetlinkMessage::DelNeighbour(neighbour) => self.on_neighbour(&neighbour, true),
                _ => {}
            }
        }
    }

    fn on_link(&mut self, link: &LinkState) {
        let Some(&port) = self.port_of_ifindex.get(&link.ifindex) else { return };
        let up = link.running;
        if self.oper_up.insert(port, up) != Some(up) {
            self.notifications.push(Notification::PortOperStatus { port, up });
        }
    }

    fn on_neighbour(&mut self, message: &NeighbourMessage, deleted: bool) {
        if let Some(record) = FdbRecord::of(message) {
            self.on_fdb(&record, deleted);
            return;
        }
        let Some(&router_interface) = self.rif_of_ifindex.get(&message.header.ifindex) else { return };
        let Some(record) = NeighborRecord::of(message) else { return };
        let key = (message.header.ifindex, record.ip);
        let state = message.header.state;
        if state == NeighbourState::Permanent {
            // Ours (a control-plane neighbour), not resolved.
            return;
        }
        let resolved = !deleted
            && matches!(
                state,
                NeighbourState::Reachable | NeighbourState::Stale | NeighbourState::Delay | NeighbourState::Probe
            );
        match (resolved, record.mac) {
            (true, Some(mac)) => {
                let mac = dataplane::wire::EthernetAddress(mac);
                if self.resolved.insert(key, mac) != Some(mac) {
                    self.notifications.push(Notification::NeighborResolved { router_interface, ip: record.ip, mac });
                }
            }
            _ if (deleted || state == NeighbourState::Failed) && self.resolved.remove(&key).is_some() => {
                self.notifications.push(Notification::NeighborExpired { router_interface, ip: record.ip });
            }
            _ => {}
        }
    }

    fn on_fdb(&mut self, record: &FdbRecord, deleted: bool) {
        let Some(vid) = self.vid_of_record(record) else { return };
        let Some(&vlan) = self.vlan_of_vid.get(&vid) else { return };
        let entry = FdbEntryKey { vlan, mac: record.mac };
        let key = (vid, record.mac);
        if deleted {
            if self.learned.get(&key) == Some(&record.ifindex) {
                self.learned.remove(&key);
                self.notifications.push(Notification::Fdb {
                    event: FdbEvent::Aged,
                    entry,
                    bridge_port: self.bridge_port_of_ifindex.get(&record.ifindex).copied(),
                });
            }
            return;
        }
        if !record.is_learned() {
            return;
        }
        // MACs the bridge learns behind the vxlan port name no VTEP (the
        // devices do not learn): they are flooded to the VNI's VTEPs, and
        // not reported, as no bridge port object stands for them.
        let Some(&bridge_port) = self.bridge_port_of_ifindex.get(&record.ifindex) else { return };
        match self.learned.insert(key, record.ifindex) {
            None => self.notifications.push(Notification::Fdb {
                event: FdbEvent::Learned,
                entry,
                bridge_port: Some(bridge_port),
            }),
            Some(previous) if previous != record.ifindex => self.notifications.push(Notification::Fdb {
                event: FdbEvent::Moved { from: self.bridge_port_of_ifindex.get(&previous).copied() },
                entry,
                bridge_port: Some(bridge_port),
            }),
            Some(_) => {}
        }
    }
}
