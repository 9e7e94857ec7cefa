//! The subnet manager embedded in a switch (`ib: {sm: ...}`): the sans-IO
//! `SubnetManager` on the switch's port 0, its SMPs sent through the
//! switch's own agent (directed routes start there, IBA 14.2.2) and the
//! answers taken from it, stepped by the forwarding loop.

use std::collections::VecDeque;

use subnet_manager::lid::LidMap;
use subnet_manager::plane::switch::SwitchPlane;
use subnet_manager::routing::RoutingConfig;
use subnet_manager::sm::{CAPABILITY_IS_SM, SmConfig, SmEvent, SubnetManager};

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
        let sm = SubnetManager::new(
            SmConfig {
                routing: RoutingConfig { engines: config.engines.clone(), lmc: config.lmc, ..RoutingConfig::default() },
                priority: config.priority,
                light_sweep_interval_ns: config.sweep_interval_ms * 1_000_000,
                sm_key: config.sm_key,
                m_key: config.m_key,
                m_key_protect_bits: config.m_key_protect_bits,
                m_key_lease_period: config.m_key_lease_period,
                timeout_ns: 100_000_000,
                ..SmConfig::default()
            },
            LidMap::default(),
        );
        EmbeddedSm { sm, started: false, events: VecDeque::new(), fabric_up: false }
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
            let agent = plane.agent_mut();
            agent.ports[0].capability_mask |= CAPABILITY_IS_SM;
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
            self.record(now, &event);
        }
    }

    fn record(&mut self, now: u64, event: &SmEvent) {
        match event {
            SmEvent::FabricUp { .. } => self.fabric_up = true,
            SmEvent::SweepStarted { heavy: true, .. } | SmEvent::ChangeDetected => self.fabric_up = false,
            _ => {}
        }
        let quiet = matches!(event, SmEvent::SweepStarted { heavy: false, .. });
        if quiet {
            tracing::debug!(?event, "subnet manager");
        } else {
            tracing::info!(?event, "subnet manager");
        }
        if !quiet {
            if self.events.len() == EVENT_LOG {
                self.events.pop_front();
            }
            self.events.push_back((now, format!("{event:?}")));
        }
    }
}
