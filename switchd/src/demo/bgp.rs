//! The demo's BGP: each switch runs the speaker of its config (`bgp-evpn`'s
//! sans-IO [`Speaker`]) for the underlay (IPv4/IPv6 unicast) and the
//! overlay (L2VPN EVPN); its routes go into the switch's shim through the
//! daemon's [`ShimProgrammer`] (remote MACs, flood lists, ARP suppression
//! entries and VRF routes included), and what the switch's dataplane
//! learns reaches the speaker through the daemon's [`LocalFeed`].
//!
//! The daemon runs sessions over kernel TCP through the dataplane; the demo
//! has no TCP stack, so a session here is an in-memory pipe between two
//! speakers: a `Connect` of one is an `accepted` of the other, and bytes
//! written on one end are framed and handed to the other, in virtual time.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use bgp_evpn::events::{Output, Speaker};
use bgp_evpn::neighbor::{ConnId, State};
use bgp_evpn::packet::message::{EXTENDED_MAX_LEN, frame_len};
use bgp_evpn::rib::PeerId;
use sai_shim::backend::soft::SoftBackend;
use sai_shim::{Notification, Sai};

use crate::bgp::ShimProgrammer;
use crate::config::Config;
use crate::evpn::{LocalEvent, LocalFeed};

/// One end of a session: (switch, peer, connection).
type End = (usize, PeerId, ConnId);

pub struct DemoSpeaker {
    pub speaker: Speaker,
    programmer: ShimProgrammer,
    sai: Arc<Mutex<Sai<SoftBackend>>>,
    /// The switch's own addresses, to find who a `Connect` is for.
    addresses: Vec<IpAddr>,
    /// Which shim notifications EVPN advertises (MACs on local ports,
    /// ARP/ND on the EVPN VNIs' SVIs).
    feed: LocalFeed,
}

impl DemoSpeaker {
    pub fn new(config: &Config, applied: &crate::apply::Applied, sai: Arc<Mutex<Sai<SoftBackend>>>) -> Option<Self> {
        let bgp = config.bgp.clone()?;
        let speaker = Speaker::new(bgp).unwrap_or_else(|e| panic!("{}: BGP config: {e}", config.name));
        Some(DemoSpeaker {
            speaker,
            programmer: crate::bgp::programmer(config, applied),
            sai,
            addresses: config.addresses().iter().map(|(a, _)| a.ip()).collect(),
            feed: LocalFeed::new(config, applied),
        })
    }
}

/// Every switch's speaker and the sessions between them.
#[derive(Default)]
pub struct Speakers {
    pub speakers: Vec<Option<DemoSpeaker>>,
    pipes: HashMap<End, End>,
    /// Sessions that came up, in order: (switch, peer address).
    pub log: Vec<String>,
}

impl Speakers {
    pub fn start(&mut self, now: u64) {
        for s in self.speakers.iter_mut().flatten() {
            s.speaker.start(now);
        }
    }

    /// Carries out every speaker's outputs until none has any.
    pub fn settle(&mut self, now: u64) {
        loop {
            let mut progressed = false;
            for i in 0..self.speakers.len() {
                while let Some(out) = self.speakers[i].as_mut().and_then(|s| s.speaker.poll_output()) {
                    progressed = true;
                    self.carry_out(now, i, out);
                }
            }
            if !progressed {
                return;
            }
        }
    }

    /// Hands what switch `i`'s shim reported to its speaker, as the
    /// daemon's EVPN feed does: MACs learned, aged or moved on local ports
    /// and ARP/ND bindings on SVIs become (or stop being) type 2 routes.
    pub fn learned(&mut self, now: u64, i: usize, notifications: &[Notification]) {
        let Some(s) = self.speakers[i].as_mut() else { return };
        for event in notifications.iter().filter_map(|n| s.feed.translate(n)) {
            match event {
                LocalEvent::Mac { vni, mac, present } => s.speaker.evpn_local_mac(now, vni, mac, present),
                LocalEvent::Neighbor { vni, ip, mac } => s.speaker.evpn_local_neighbor(now, vni, ip, mac),
            }
        }
    }

    /// Runs timers due at `now`; the earliest next deadline.
    pub fn handle_timeout(&mut self, now: u64) -> Option<u64> {
        for s in self.speakers.iter_mut().flatten() {
            if s.speaker.poll_timeout().is_some_and(|t| t <= now) {
                s.speaker.handle_timeout(now);
            }
        }
        self.settle(now);
        self.speakers.iter().flatten().filter_map(|s| s.speaker.poll_timeout()).min()
    }

    pub fn all_established(&self) -> bool {
        self.speakers.iter().flatten().all(|s| {
            s.speaker.peer_ids().all(|id| s.speaker.peer(id).is_some_and(|p| p.fsm.state() == State::Established))
        })
    }

    fn speaker(&mut self, i: usize) -> &mut Speaker {
        &mut self.speakers[i].as_mut().expect("switch runs BGP").speaker
    }

    fn carry_out(&mut self, now: u64, i: usize, out: Output) {
        match out {
            Output::Connect { peer, conn, remote } => {
                let local = self.speakers[i].as_ref().and_then(|s| s.speaker.peer(peer)?.config.local_address);
                let target =
                    self.speakers.iter().position(|s| s.as_ref().is_some_and(|s| s.addresses.contains(&remote.ip())));
                let accepted = match (target, local) {
                    (Some(j), Some(local)) => {
                        let s = self.speaker(j);
                        s.peer_by_addr(local)
                            .map(|their_peer| (j, their_peer, s.accepted(now, their_peer, remote.ip())))
                    }
                    _ => None,
                };
                match (accepted, local) {
                    (Some(theirs), Some(local)) => {
                        self.pipes.insert((i, peer, conn), theirs);
                        self.pipes.insert(theirs, (i, peer, conn));
                        self.speaker(i).connected(now, peer, conn, local);
                    }
                    // Nobody listens there: connection refused.
                    _ => self.speaker(i).closed(now, peer, conn),
                }
            }
            Output::Send { peer, conn, bytes } => {
                let Some(&(j, their_peer, their_conn)) = self.pipes.get(&(i, peer, conn)) else { return };
                let mut at = 0;
                while let Ok(Some(len)) = frame_len(&bytes[at..], EXTENDED_MAX_LEN) {
                    self.speaker(j).received(now, their_peer, their_conn, &bytes[at..at + len]);
                    at += len;
                }
            }
            Output::Close { peer, conn } => {
                if let Some(theirs) = self.pipes.remove(&(i, peer, conn)) {
                    self.pipes.remove(&theirs);
                    self.speaker(theirs.0).closed(now, theirs.1, theirs.2);
                }
            }
            Output::Fib(change) => {
                let Some(s) = self.speakers[i].as_mut() else { return };
                let mut sai = s.sai.lock().unwrap_or_else(|e| e.into_inner());
                s.programmer.apply(&mut sai, change);
            }
            Output::SessionUp { peer } => {
                let address = self.speakers[i].as_ref().and_then(|s| s.speaker.peer(peer)).map(|p| p.config.address);
                if let Some(address) = address {
                    self.log.push(format!("{i} {address}"));
                }
            }
            Output::SessionDown { .. } => {}
        }
    }
}
