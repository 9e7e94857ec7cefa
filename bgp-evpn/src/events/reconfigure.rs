//! A new `bgp:` section applied to a running speaker as a diff: neighbours
//! added, removed or changed one by one (the others' sessions untouched),
//! originated networks added and withdrawn, and a multipath change
//! re-running the decision process. What identifies the speaker itself
//! (ASN, router id, cluster id, IPv6 next hop) restarts the speaker in
//! place ([`reset_reason`]): every session is reset and comes back with
//! the new identity, the originated networks stay. The listener cannot
//! move under it, nor can the ASN or router id under EVPN (its route
//! distinguishers and targets derive from them): [`restart_reason`]
//! names that. `evpn:` follows its own path
//! ([`Speaker::evpn_reconfigure`]) and is left as it is here.

use std::net::IpAddr;

use crate::config::{BgpConfig, NeighborConfig};
use crate::neighbor::Event;
use crate::packet::Nlri;
use crate::rib::{LOCAL_PEER, PeerId};

use super::{Speaker, new_peer};

/// What [`Speaker::reconfigure`] did, for the commit's answer and logs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconfigured {
    pub added: Vec<IpAddr>,
    pub removed: Vec<IpAddr>,
    /// Neighbours whose settings changed: their session restarts with the
    /// new ones (a policy change included: there is no Adj-RIB-In kept
    /// before import policy to re-run it on).
    pub changed: Vec<IpAddr>,
    /// Multipath changed: every prefix went through the decision again.
    pub decided_again: bool,
    pub networks_added: usize,
    pub networks_removed: usize,
    /// Why every session was reset (the speaker restarted in place with
    /// a new identity), when it was.
    pub sessions_reset: Option<&'static str>,
}

impl Reconfigured {
    pub fn is_empty(&self) -> bool {
        *self == Reconfigured::default()
    }
}

/// Why `new` needs a new speaker rather than a diff, if it does.
pub fn restart_reason(old: &BgpConfig, new: &BgpConfig) -> Option<&'static str> {
    let identity_changed = old.asn != new.asn || old.router_id != new.router_id;
    if (old.listen_address, old.listen_port) != (new.listen_address, new.listen_port) {
        Some("bgp.listen_address/listen_port changed: the listener is bound again")
    } else if identity_changed && (old.evpn.is_some() || new.evpn.is_some()) {
        Some("bgp.asn/router_id changed under EVPN: its route distinguishers and targets derive from them")
    } else {
        None
    }
}

/// Why `new` resets every session (the speaker restarts in place under a
/// new identity), if it does: what every OPEN or advertisement carries.
pub fn reset_reason(old: &BgpConfig, new: &BgpConfig) -> Option<&'static str> {
    if old.asn != new.asn {
        Some("bgp.asn changed: every BGP session was reset")
    } else if old.router_id != new.router_id {
        Some("bgp.router_id changed: every BGP session was reset")
    } else if old.cluster_id != new.cluster_id || old.ipv6_next_hop != new.ipv6_next_hop {
        Some("bgp.cluster_id/ipv6_next_hop changed: every BGP session was reset")
    } else {
        None
    }
}

/// Why `new` cannot be applied in place to a speaker running `old`
/// (`has_bfd`: it started with a BFD task), as the daemon's I/O sees it:
/// [`restart_reason`], or BFD or router advertisements it does not watch.
pub fn live_restart_reason(old: &BgpConfig, new: &BgpConfig, has_bfd: bool) -> Option<String> {
    if let Some(why) = restart_reason(old, new) {
        return Some(why.to_owned());
    }
    if !has_bfd && new.neighbors.iter().any(|n| n.bfd) {
        return Some("bgp.neighbors: bfd: the BFD task starts with the speaker, which had no BFD neighbour".to_owned());
    }
    let watched: Vec<&str> =
        old.neighbors.iter().filter(|n| n.is_unnumbered()).filter_map(|n| n.interface.as_deref()).collect();
    if let Some(n) =
        new.neighbors.iter().find(|n| n.is_unnumbered() && !watched.contains(&n.interface.as_deref().unwrap_or("")))
    {
        return Some(format!(
            "bgp.neighbors: interface {}: router advertisements are watched from the speaker's start",
            n.interface.as_deref().unwrap_or("")
        ));
    }
    None
}

/// How a configured neighbour is recognised across configs: its address,
/// or for BGP unnumbered its interface (its address is learned).
fn identity(n: &NeighborConfig) -> (Option<IpAddr>, Option<String>) {
    if n.is_unnumbered() { (None, n.interface.clone()) } else { (Some(n.address), None) }
}

/// Whether `n`'s session must restart to take `new`: its own settings, the
/// session settings it inherits (timers), or a policy it uses changed.
fn neighbor_changed(old: &BgpConfig, new: &BgpConfig, was: &NeighborConfig, n: &NeighborConfig) -> bool {
    let mut was = was.clone();
    if was.is_unnumbered() {
        // The learned link-local address is not configuration.
        was.address = n.address;
    }
    let policies_changed = old.policies != new.policies || old.prefix_lists != new.prefix_lists;
    let uses_policy = n.import_policy.is_some() || n.export_policy.is_some();
    was != *n || old.session_config(&was) != new.session_config(n) || (policies_changed && uses_policy)
}

impl Speaker {
    /// Applies `new` (validated here; refused whole, nothing changed, on
    /// error) as a diff. The caller checks [`restart_reason`] first.
    pub fn reconfigure(&mut self, now: u64, mut new: BgpConfig) -> Result<Reconfigured, String> {
        if let Some(why) = restart_reason(&self.config, &new) {
            return Err(why.to_owned());
        }
        new.evpn = self.config.evpn.clone();
        new.validate()?;
        let sessions_reset = reset_reason(&self.config, &new);
        let old = std::mem::replace(&mut self.config, new);
        self.policy = self.config.policy_set();
        let mut done = Reconfigured { sessions_reset, ..Reconfigured::default() };
        if sessions_reset.is_some() {
            // The local paths carry the speaker's identity into the
            // decision process (RFC 4271 9.1.2.2 f, the BGP Identifier).
            let local = &mut self.rib.peers[LOCAL_PEER];
            local.asn = self.config.asn;
            local.router_id = self.config.router_id;
        }

        // Neighbours that left or changed go first: a changed one is a
        // removal and an addition (a new session, new RIB slot).
        let ids: Vec<PeerId> = self.peer_ids().collect();
        let mut keep = Vec::new();
        for id in ids {
            let Some(peer) = self.peers[id].as_ref() else { continue };
            let was = peer.config.clone();
            let now_configured = self.config.neighbors.iter().find(|n| identity(n) == identity(&was));
            let changed =
                |n: &NeighborConfig| sessions_reset.is_some() || neighbor_changed(&old, &self.config, &was, n);
            match now_configured.map(changed) {
                Some(false) => keep.push(identity(&was)),
                Some(true) => {
                    self.remove_peer(now, id);
                    done.changed.push(was.address);
                }
                None => {
                    self.remove_peer(now, id);
                    done.removed.push(was.address);
                }
            }
        }
        let added: Vec<NeighborConfig> =
            self.config.neighbors.iter().filter(|n| !keep.contains(&identity(n))).cloned().collect();
        for n in added {
            let (id, peer) = new_peer(&self.config, &mut self.rib, &n);
            debug_assert_eq!(id, self.peers.len());
            self.peers.push(Some(peer));
            if !done.changed.contains(&n.address) {
                done.added.push(n.address);
            }
            if !n.shutdown && !n.address.is_unspecified() {
                self.fsm_event(now, id, Event::ManualStart);
            }
        }

        let withdrawn: Vec<Nlri> = old.networks.iter().filter(|n| !self.config.networks.contains(n)).copied().collect();
        for nlri in withdrawn {
            self.remove_network(nlri);
            done.networks_removed += 1;
        }
        for nlri in self.config.networks.clone().into_iter().filter(|n| !old.networks.contains(n)) {
            self.add_network(nlri);
            done.networks_added += 1;
        }

        if old.multipath != self.config.multipath {
            self.rib.multipath = self.config.multipath;
            let mut every: Vec<Nlri> = self.rib.loc_iter().map(|(n, _)| n).collect();
            for id in 0..self.rib.peers.len() {
                every.extend(self.rib.adj_in(id).keys());
            }
            every.sort_unstable();
            every.dedup();
            self.settle(every);
            done.decided_again = true;
        }
        Ok(done)
    }

    /// Stops `id`'s session (Cease, administrative shutdown), drops what
    /// it sent us, and frees its slot: nothing refers to it afterwards.
    fn remove_peer(&mut self, now: u64, id: PeerId) {
        debug_assert_ne!(id, LOCAL_PEER);
        self.fsm_event(now, id, Event::ManualStop);
        if let Some(p) = self.peers[id].as_mut() {
            p.stale.clear();
            p.stale_deadline = None;
        }
        let gone = self.rib.clear_in(id, None);
        self.rib.clear_out(id, None);
        self.rib.peers[id].addr = None;
        self.peers[id] = None;
        self.settle(gone);
        self.rib.collect_garbage();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = "asn: 65001\nrouter_id: 10.0.0.1\nlisten_port: 0\nneighbors:\n  - { address: 10.0.1.2, remote_as: 65002 }\n  - { address: 10.0.2.2, remote_as: 65003 }\n";

    fn config(yaml: &str) -> BgpConfig {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn a_neighbour_added_removed_or_changed_leaves_the_others_alone() {
        let mut speaker = Speaker::new(config(YAML)).unwrap();
        speaker.start(0);
        let kept = speaker.peer_by_addr("10.0.1.2".parse().unwrap()).unwrap();
        let new = YAML.replace("10.0.2.2, remote_as: 65003", "10.0.3.2, remote_as: 65004");
        let done = speaker.reconfigure(1, config(&new)).unwrap();
        assert_eq!(done.added, vec!["10.0.3.2".parse::<IpAddr>().unwrap()]);
        assert_eq!(done.removed, vec!["10.0.2.2".parse::<IpAddr>().unwrap()]);
        assert_eq!(speaker.peer_by_addr("10.0.1.2".parse().unwrap()), Some(kept), "same session");
        assert_eq!(speaker.peer_by_addr("10.0.2.2".parse().unwrap()), None);
        assert!(speaker.peer_by_addr("10.0.3.2".parse().unwrap()).is_some());

        let timers = new.replace("10.0.3.2, remote_as: 65004", "10.0.3.2, remote_as: 65005");
        let done = speaker.reconfigure(2, config(&timers)).unwrap();
        assert_eq!(done.changed, vec!["10.0.3.2".parse::<IpAddr>().unwrap()]);
        assert_eq!(speaker.peer_by_addr("10.0.1.2".parse().unwrap()), Some(kept));
        assert!(speaker.reconfigure(3, config(&timers)).unwrap().is_empty());
    }

    #[test]
    fn identity_changes_reset_every_session_in_place() {
        let mut speaker = Speaker::new(config(YAML)).unwrap();
        speaker.start(0);
        let other_as = YAML.replace("asn: 65001", "asn: 65009");
        let done = speaker.reconfigure(1, config(&other_as)).unwrap();
        assert!(done.sessions_reset.is_some_and(|why| why.contains("bgp.asn")), "{done:?}");
        assert_eq!(done.changed.len(), 2, "every session restarts: {done:?}");
        assert_eq!(speaker.config.asn, 65009);
        assert_eq!(speaker.rib.peers[LOCAL_PEER].asn, 65009);
        for n in &speaker.config.neighbors {
            let id = speaker.peer_by_addr(n.address).expect("neighbour kept");
            assert_eq!(speaker.peer(id).unwrap().fsm.config.local_as, 65009);
        }

        let other_id = other_as.replace("router_id: 10.0.0.1", "router_id: 10.0.0.9");
        let done = speaker.reconfigure(2, config(&other_id)).unwrap();
        assert!(done.sessions_reset.is_some_and(|why| why.contains("router_id")), "{done:?}");
        assert_eq!(speaker.rib.peers[LOCAL_PEER].router_id, "10.0.0.9".parse::<std::net::Ipv4Addr>().unwrap());

        let other_port = other_id.replace("listen_port: 0", "listen_port: 1179");
        let why = speaker.reconfigure(3, config(&other_port)).unwrap_err();
        assert!(why.contains("listen"), "{why}");
        assert_eq!(speaker.config.listen_port, 0, "refused whole");
    }
}
