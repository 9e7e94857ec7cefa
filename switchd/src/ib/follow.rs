//! The IB-like plane follows commits, as far as a real IB switch could
//! without training a link again.
//!
//! Live: `ib.sm` added (an SM starts on port 0, sets IsSM and sends trap
//! 144 to the master, whose sweep meets it), removed (it stops: IsSM
//! cleared, trap 144, SMInfo NOTACTIVE, so a standby takes over at its
//! next poll; what it programmed stays) or changed (a new engine, LMC or
//! `qos` reroutes and reprograms at once, a new priority may hand
//! mastership over: [`EmbeddedSm::reconfigure`]).
//!
//! Refused, with the reason ([`restart_reasons`]): what the link trains
//! with or what identifies the node. A port between Ethernet and IB mode
//! speaks another link protocol, and the switch's IBA port count
//! (NodeInfo NumPorts) is fixed; a port's data VLs, IB MTU and rate are
//! its VLCap, MTUCap and speed, exchanged when the link trains (IBA
//! 7.9.4, 14.2.5.6), as are `ib.buffer_blocks`, the receive buffer whose
//! credits the link advertises from training on; `ib.guid` is the node's
//! identity in the subnet (burnt in on hardware); an M_Key over a key the
//! ports hold ([`subnet_manager::sm::live_change_refusal`]).

use crate::apply::Applied;
use crate::commit::FollowsConfig;
use crate::config::ib::IbSm;
use crate::config::{Config, PortMode};
use crate::forwarding::monotonic_ns;

use super::sm::{self, EmbeddedSm};
use super::{IbRuntime, SharedIb, lock};

pub struct IbFollower {
    ib: SharedIb,
    /// The `ib.sm` running.
    running: Option<IbSm>,
}

impl IbFollower {
    pub fn new(ib: SharedIb, config: &Config) -> IbFollower {
        IbFollower { ib, running: config.ib.as_ref().and_then(|ib| ib.sm.clone()) }
    }
}

impl FollowsConfig for IbFollower {
    fn remove_stale(&mut self, _target: &Config, _applied: &Applied) -> Result<(), String> {
        Ok(())
    }

    fn add_missing(&mut self, target: &Config, _applied: &Applied) -> Result<(), String> {
        let wanted = target.ib.as_ref().and_then(|ib| ib.sm.clone());
        if wanted == self.running {
            return Ok(());
        }
        let now = monotonic_ns();
        let mut runtime = lock(&self.ib);
        let IbRuntime { plane, sm, .. } = &mut *runtime;
        match (sm.as_mut(), &wanted) {
            (Some(running), Some(new)) => {
                let done = running.reconfigure(now, new)?;
                tracing::info!(?done, "subnet manager reconfigured live");
            }
            (Some(running), None) => {
                running.stop(plane);
                *sm = None;
                tracing::info!("subnet manager stopped");
            }
            (None, Some(new)) => {
                // Started by the forwarding loop's next step.
                *sm = Some(EmbeddedSm::new(new));
                tracing::info!(priority = new.priority, "subnet manager started");
            }
            (None, None) => {}
        }
        self.running = wanted;
        Ok(())
    }
}

/// What `candidate` changes in the IB-like plane that needs a link trained
/// again (or a new node), each with why; empty when it all applies live.
pub fn restart_reasons(running: &Config, candidate: &Config) -> Vec<String> {
    let mut reasons = Vec::new();
    let mode = |c: &Config, name: &str| c.port(name).map(|p| matches!(p.mode, PortMode::Ib(_)));
    let names = running.ports.iter().chain(&candidate.ports).map(|p| p.name.as_str());
    let mut seen = Vec::new();
    for name in names {
        if seen.contains(&name) {
            continue;
        }
        seen.push(name);
        let (old, new) = (running.port(name), candidate.port(name));
        match (mode(running, name), mode(candidate, name)) {
            (Some(false), Some(true)) | (Some(true), Some(false)) => reasons.push(format!(
                "ports {name}: a port between Ethernet and IB mode trains again in the other link protocol"
            )),
            (None, Some(true)) | (Some(true), None) => reasons.push(format!(
                "ports {name}: an IB-like port added or removed changes the switch's IBA port count \
                 (NodeInfo NumPorts), fixed at start"
            )),
            _ => {}
        }
        if let (Some(PortMode::Ib(old)), Some(PortMode::Ib(new))) = (old.map(|p| &p.mode), new.map(|p| &p.mode))
            && old != new
        {
            reasons.push(format!(
                "ports {name}: data_vls, ib_mtu and ib_rate are the port's VLCap, MTUCap and speed, \
                 which the link trains with (IBA 7.9.4, 14.2.5.6): the port must train again"
            ));
        }
    }
    if let (Some(old), Some(new)) = (&running.ib, &candidate.ib) {
        // A GUID derived from the name stays what it was at start when a
        // commit renames the switch (as its MAC does: `Commits::apply`).
        if old.guid != new.guid && !(guid_from_name(running) && guid_from_name(candidate)) {
            reasons.push("ib.guid: the switch's GUID is its identity in the subnet (NodeGUID)".to_owned());
        }
        if old.buffer_blocks != new.buffer_blocks {
            reasons.push(
                "ib.buffer_blocks: each port advertises credits for its receive buffer from link \
                 training on (IBA 7.9.4): the ports must train again"
                    .to_owned(),
            );
        }
        if let (Some(old), Some(new)) = (&old.sm, &new.sm)
            && let Some(why) = sm::live_refusal(old, new)
        {
            reasons.push(format!("ib.sm.m_key: {why}"));
        }
    }
    reasons
}

/// Whether `config`'s IB-like GUID is the default one, derived from the
/// switch name (no `ib.guid`).
pub fn guid_from_name(config: &Config) -> bool {
    config.source.ib.as_ref().is_none_or(|ib| ib.guid.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    const IB: &str = "name: s1\nports:\n  - { name: eth1, mode: ib }\n  - { name: eth2, mode: ib }\n  - { name: eth3, mode: routed, addresses: [10.0.0.1/24] }\nib:\n  sm: { priority: 5, engine: [minhop] }\n";

    fn reasons(running: &str, candidate: &str) -> Vec<String> {
        let (running, candidate) = (Config::from_yaml(running).unwrap(), Config::from_yaml(candidate).unwrap());
        crate::daemon::restart_needed(&running, &candidate)
    }

    #[test]
    fn the_sm_added_removed_and_changed_applies_live() {
        let engine =
            IB.replace("priority: 5, engine: [minhop]", "priority: 12, engine: [ftree, updn], lmc: 1, qos: true");
        assert_eq!(reasons(IB, &engine), Vec::<String>::new());
        let without = IB.replace("  sm: { priority: 5, engine: [minhop] }\n", "  buffer_blocks: 64\n");
        assert_eq!(reasons(IB, &without), Vec::<String>::new());
        assert_eq!(reasons(&without, IB), Vec::<String>::new());
        let first_key = IB.replace("engine: [minhop]", "engine: [minhop], m_key: 0x1234, m_key_protect_bits: 2");
        assert_eq!(reasons(IB, &first_key), Vec::<String>::new());
        // A rename keeps a GUID derived from the name (the commit keeps
        // the running one, as it keeps the MAC).
        assert_eq!(reasons(IB, &IB.replace("name: s1", "name: s2")), Vec::<String>::new());
    }

    #[test]
    fn what_a_link_trains_with_stays_refused_and_says_why() {
        let ethernet = IB.replace("{ name: eth2, mode: ib }", "{ name: eth2, mode: routed, addresses: [10.0.2.1/24] }");
        let why = reasons(IB, &ethernet);
        assert!(why.len() == 1 && why[0].contains("eth2") && why[0].contains("Ethernet and IB"), "{why:?}");
        let vls = IB.replace("{ name: eth1, mode: ib }", "{ name: eth1, mode: ib, data_vls: 2 }");
        let why = reasons(IB, &vls);
        assert!(why.len() == 1 && why[0].contains("eth1") && why[0].contains("VLCap"), "{why:?}");
        let added = IB.replace("  - { name: eth3", "  - { name: eth4, mode: ib }\n  - { name: eth3");
        assert!(reasons(IB, &added)[0].contains("NumPorts"));
        let buffers = IB.replace("ib:\n", "ib:\n  buffer_blocks: 128\n");
        assert!(reasons(IB, &buffers)[0].starts_with("ib.buffer_blocks"));
        let explicit = IB.replace("ib:\n", "ib:\n  guid: 0x100\n");
        let why = reasons(&explicit, &explicit.replace("guid: 0x100", "guid: 0x200"));
        assert!(why.len() == 1 && why[0].starts_with("ib.guid"), "{why:?}");
        let keyed = IB.replace("engine: [minhop]", "engine: [minhop], m_key: 0x1234");
        let rekeyed = IB.replace("engine: [minhop]", "engine: [minhop], m_key: 0x5678");
        assert!(reasons(&keyed, &rekeyed)[0].starts_with("ib.sm.m_key"));
    }
}
