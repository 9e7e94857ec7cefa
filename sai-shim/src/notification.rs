//! Notifications: what the forwarding side tells the control planes (SAI's
//! `fdb_event`, `port_state_change` and friends). They are queued, never
//! delivered by callback on another thread: the owner of the [`crate::Sai`]
//! drains them when it likes ([`crate::Sai::drain_notifications`]).

use std::net::IpAddr;

use dataplane::wire::EthernetAddress;

use crate::object::{FdbEntryKey, ObjectId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FdbEvent {
    /// A source MAC was learned on `bridge_port`.
    Learned,
    /// A learned MAC was not seen for the aging time and was removed.
    Aged,
    /// A learned MAC appeared on another bridge port; `bridge_port` is the new one.
    Moved { from: Option<ObjectId> },
    /// A learned MAC was removed by a flush: an API flush, or its bridge port
    /// or VLAN membership going away.
    Flushed,
    /// A frame on `bridge_port` had the source MAC of a static entry that
    /// allows no move (a sticky MAC, RFC 7432 section 15.2) on `pinned`:
    /// not learned. Reported at most once a second per MAC.
    MoveRefused { pinned: Option<ObjectId> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notification {
    Fdb {
        event: FdbEvent,
        entry: FdbEntryKey,
        /// The bridge port the MAC is (or, for aged, was) behind; `None` if
        /// the backend's destination has no bridge port object (a race with
        /// its removal).
        bridge_port: Option<ObjectId>,
    },
    PortOperStatus {
        port: ObjectId,
        up: bool,
    },
    /// ARP or neighbour discovery resolved `ip` on a router interface.
    NeighborResolved {
        router_interface: ObjectId,
        ip: IpAddr,
        mac: EthernetAddress,
    },
    /// A resolved neighbour failed re-probing and was dropped.
    NeighborExpired {
        router_interface: ObjectId,
        ip: IpAddr,
    },
    /// The PFC watchdog found a queue in a storm (paused, backlogged and
    /// silent for the detection time), or saw it restored (SAI's
    /// `queue_pfc_deadlock_notification`).
    QueuePfcDeadlock {
        queue: ObjectId,
        /// The queue's port and index, as the queue object names them.
        port: ObjectId,
        index: u8,
        event: PfcDeadlockEvent,
    },
}

/// What the PFC watchdog saw (SAI's `sai_queue_pfc_deadlock_event_type_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PfcDeadlockEvent {
    Detected,
    Recovered,
}

/// Resolution state of a neighbour, as forwarding holds it (RFC 4861
/// section 7.3.2 for both ARP and ND).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeighborState {
    Incomplete,
    Reachable,
    Stale,
    Probe,
    Failed,
}

/// One neighbour as forwarding holds it: control-plane (static) or resolved
/// by ARP/ND.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeighborInfo {
    pub mac: Option<EthernetAddress>,
    pub state: NeighborState,
    pub is_static: bool,
}

/// Delivers notifications to their subscribers (the BGP/EVPN speaker, the
/// management API, the subnet manager) over bounded channels. A subscriber
/// that does not keep up loses notifications, counted, and never holds up
/// the one publishing them (the forwarding side's owner).
#[derive(Debug, Default)]
pub struct NotificationBus {
    subscribers: Vec<Subscriber>,
}

#[derive(Debug)]
struct Subscriber {
    name: String,
    sender: std::sync::mpsc::SyncSender<Notification>,
    lost: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// One subscriber's end: notifications in the order they happened.
#[derive(Debug)]
pub struct Subscription {
    pub receiver: std::sync::mpsc::Receiver<Notification>,
    lost: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Subscription {
    /// Notifications dropped because this subscriber's channel was full.
    pub fn lost(&self) -> u64 {
        self.lost.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Everything delivered so far, without waiting.
    pub fn drain(&self) -> Vec<Notification> {
        self.receiver.try_iter().collect()
    }
}

/// A subscriber as the bus sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriberStats {
    pub name: String,
    pub lost: u64,
}

impl NotificationBus {
    /// A new subscriber whose channel holds `capacity` notifications.
    pub fn subscribe(&mut self, name: impl Into<String>, capacity: usize) -> Subscription {
        let (sender, receiver) = std::sync::mpsc::sync_channel(capacity);
        let lost = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        self.subscribers.push(Subscriber { name: name.into(), sender, lost: lost.clone() });
        Subscription { receiver, lost }
    }

    /// Sends each notification to every subscriber; a full channel loses it
    /// (counted), a dropped subscription is forgotten.
    pub fn publish(&mut self, notifications: &[Notification]) {
        use std::sync::mpsc::TrySendError;
        self.subscribers.retain(|subscriber| {
            for notification in notifications {
                match subscriber.sender.try_send(notification.clone()) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => {
                        subscriber.lost.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Err(TrySendError::Disconnected(_)) => return false,
                }
            }
            true
        });
    }

    pub fn subscribers(&self) -> Vec<SubscriberStats> {
        self.subscribers
            .iter()
            .map(|s| SubscriberStats { name: s.name.clone(), lost: s.lost.load(std::sync::atomic::Ordering::Relaxed) })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(up: bool) -> Notification {
        Notification::PortOperStatus { port: ObjectId::from_raw(7), up }
    }

    #[test]
    fn every_subscriber_gets_every_notification_in_order_and_a_slow_one_loses_counted() {
        let mut bus = NotificationBus::default();
        let fast = bus.subscribe("bgp", 16);
        let slow = bus.subscribe("slow", 1);
        bus.publish(&[link(false), link(true)]);
        assert_eq!(fast.drain(), vec![link(false), link(true)]);
        assert_eq!(slow.drain(), vec![link(false)]);
        assert_eq!((fast.lost(), slow.lost()), (0, 1));
        assert_eq!(bus.subscribers()[1], SubscriberStats { name: "slow".into(), lost: 1 });
        // A dropped subscription is forgotten; the others go on.
        drop(slow);
        bus.publish(&[link(false)]);
        assert_eq!(bus.subscribers().len(), 1);
        assert_eq!(fast.drain(), vec![link(false)]);
    }
}
