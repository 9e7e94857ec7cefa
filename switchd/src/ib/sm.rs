//! The subnet manager embedded in a switch (`ib: {sm: ...}`): the sans-IO
//! `SubnetManager` on the switch's port 0, its SMPs sent through the
//! switch's own agent (directed routes start there, IBA 14.2.2) and the
//! answers taken from it, stepped by the forwarding loop.

use std::collections::VecDeque;

use subnet_manager::lid::LidMap;
use subnet_manager::packet::attributes::{SmInfoRepr, SmState};
use subnet_manager::plane::switch::SwitchPlane;
use subnet_manager::routing::RoutingConfig;
use subnet_manager::sm::{Reconfigured, SmConfig, SmEvent, SubnetManager};

use crate::config::ib::IbSm;

/// Events kept for `show ib sm`.
const EVENT_LOG: usize = 32;

pub struct EmbeddedSm {
    pub sm: SubnetManager,
    started: bool,
    /// Recent events with the time they happened (ns, the daemon's clock).
    pub events: VecDeque<(u64, String)>,
    /// Whether the last heavy sweep brought the fabric up.
    pub fabric_up: bool,
}

impl EmbeddedSm {
    pub fn new(config: &IbSm) -> EmbeddedSm {
        let sm = SubnetManager::new(sm_config(config), LidMap::default());
        EmbeddedSm { sm, started: false, events: VecDeque::new(), fabric_up: false }
    }

    /// New `ib.sm` settings from a commit, taken by the running SM
    /// ([`SubnetManager::reconfigure`]: a new engine reroutes at once, a
    /// new priority may hand mastership over). Refused whole with the
    /// reason for what cannot change live (checked at validation, by
    /// [`live_refusal`], so a commit never gets this far with one).
    pub fn reconfigure(&mut self, now: u64, config: &IbSm) -> Result<Reconfigured, String> {
        let done = self.sm.reconfigure(now, sm_config(config)).map_err(|why| format!("ib.sm: {why}"))?;
        if done != Reconfigured::default() {
            self.record(now, &format!("reconfigured: {done:?}"));
        }
        Ok(done)
    }

    /// The SM stops (a commit removed `ib.sm`): the port drops IsSM (trap
    /// 144 to the master), and SMInfo reads NOTACTIVE (IBA 14.4.1, an SM
    /// disabled), so a standby polling it takes over at its next poll
    /// rather than after its missed polls. What the SM programmed (LIDs,
    /// LFTs, port states) stays in the switches and forwarding goes on.
    pub fn stop(&mut self, plane: &mut SwitchPlane) {
        plane.set_sm_capability(false);
        let info = self.sm.sm_info();
        plane.agent_mut().sm_info = Some(SmInfoRepr { sm_state: SmState::NotActive, ..info });
    }

    /// A local link changed: sweep now rather than at the next light sweep.
    pub fn link_changed(&mut self, now: u64) {
        if self.started {
            self.sm.link_changed(now);
        }
    }

    /// Runs the SM: SMPs out through the switch's agent, answers in, timers,
    /// SMInfo published on the agent (and an SMInfo Set's control taken).
    pub fn step(&mut self, now: u64, plane: &mut SwitchPlane, tx: &mut dyn FnMut(u8, &[u8]) -> bool) {
        if !self.started {
            self.started = true;
            // IsSM on port 0, and trap 144 to a master already there (an SM
            // started by a commit): its sweep meets this one.
            plane.set_sm_capability(true);
            let agent = plane.agent_mut();
            // The switch's port 0 GUID (NodeInfo's PortGUID on a switch).
            self.sm.set_port_guid(agent.node_info.port_guid);
            agent.sm_info = Some(self.sm.sm_info());
            self.sm.start(now);
        }
        for _ in 0..4 {
            let mut moved = false;
            while let Some(out) = self.sm.poll_transmit(now) {
                plane.send_from_sm(now, &out.bytes, out.dlid, tx);
                moved = true;
            }
            for mad in plane.take_for_sm() {
                self.sm.handle_mad(now, &mad);
                moved = true;
            }
            if !moved {
                break;
            }
        }
        if let Some(control) = plane.agent_mut().sm_control.take() {
            self.sm.handle_sm_control(now, control);
        }
        self.sm.handle_timer(now);
        while let Some(out) = self.sm.poll_transmit(now) {
            plane.send_from_sm(now, &out.bytes, out.dlid, tx);
        }
        plane.agent_mut().sm_info = Some(self.sm.sm_info());
        while let Some(event) = self.sm.poll_event() {
            self.on_event(now, &event);
        }
    }

    fn on_event(&mut self, now: u64, event: &SmEvent) {
        match event {
            SmEvent::FabricUp { .. } => self.fabric_up = true,
            SmEvent::SweepStarted { heavy: true, .. } | SmEvent::ChangeDetected => self.fabric_up = false,
            _ => {}
        }
        if matches!(event, SmEvent::SweepStarted { heavy: false, .. }) {
            tracing::debug!(?event, "subnet manager");
        } else {
            self.record(now, &format!("{event:?}"));
        }
    }

    /// Logged, and kept for `show ib sm`.
    fn record(&mut self, now: u64, event: &str) {
        tracing::info!(event, "subnet manager");
        if self.events.len() == EVENT_LOG {
            self.events.pop_front();
        }
        self.events.push_back((now, event.to_owned()));
    }
}

/// The SM's settings for `ib.sm`.
pub fn sm_config(config: &IbSm) -> SmConfig {
    SmConfig {
        routing: RoutingConfig {
            engines: config.engines.clone(),
            lmc: config.lmc,
            roots: config.roots.clone(),
            ..RoutingConfig::default()
        },
        priority: config.priority,
        light_sweep_interval_ns: config.sweep_interval_ms * 1_000_000,
        program_qos: config.qos,
        sm_key: config.sm_key,
        m_key: config.m_key,
        m_key_protect_bits: config.m_key_protect_bits,
        m_key_lease_period: config.m_key_lease_period,
        timeout_ns: 100_000_000,
        ..SmConfig::default()
    }
}

/// Why a running SM cannot take `new` in place of `old`, if it cannot.
pub fn live_refusal(old: &IbSm, new: &IbSm) -> Option<&'static str> {
    subnet_manager::sm::live_change_refusal(&sm_config(old), &sm_config(new))
}
