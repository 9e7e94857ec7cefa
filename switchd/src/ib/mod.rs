//! The IB-like plane in `switchd`: the ports in `mode: ib` run
//! `subnet_manager::plane::SwitchPlane` (the `qos::ib` switch engine and the
//! switch's subnet management agent), and, when configured, a subnet
//! manager embedded in the switch ([`sm::EmbeddedSm`]) on its port 0.
//!
//! The forwarding loop hands every 0x88B5 frame the node takes off an IB
//! port ([`dataplane::node::Ports::link_level`]) to [`IbRuntime::receive`]
//! and polls the runtime at every wake-up; the runtime writes its frames
//! through the loop's port adapters. Everything sits behind one mutex, taken
//! once per wake-up by the loop and briefly by the management API.

pub mod follow;
pub mod show;
pub mod sm;

use std::sync::{Arc, Mutex, MutexGuard};

use dataplane::pipeline::PortId;
use subnet_manager::plane::switch::{SwitchPlane, SwitchPlaneConfig, SwitchPortConfig};

use crate::config::{Config, PortMode};

/// How often each data VL's flow-control state is sent even without a
/// change (IBA 7.9.4.3's refresh; the loop wakes every 10 ms).
pub const FLOW_CONTROL_REFRESH_NS: u64 = 50_000_000;

/// Writes a frame out of a pipeline port; false if the port refused it.
pub type Transmit<'a> = dyn FnMut(PortId, &[u8]) -> bool + 'a;

pub struct IbRuntime {
    pub plane: SwitchPlane,
    /// IBA port number by pipeline port.
    number_of: Vec<Option<u8>>,
    /// Pipeline port by IBA port number.
    port_of: Vec<Option<PortId>>,
    /// Port names by IBA port number, for `show ib port`.
    names: Vec<Option<String>>,
    pub sm: Option<sm::EmbeddedSm>,
}

pub type SharedIb = Arc<Mutex<IbRuntime>>;

pub fn lock(ib: &SharedIb) -> MutexGuard<'_, IbRuntime> {
    ib.lock().unwrap_or_else(|e| e.into_inner())
}

impl IbRuntime {
    /// The runtime for `config`'s IB-like ports (`None` without any);
    /// `index` gives a port's pipeline index. IBA port numbers are the
    /// ports' `ethN` numbers.
    pub fn new(config: &Config, index: impl Fn(&str) -> PortId) -> Result<Option<IbRuntime>, String> {
        let Some(ib) = &config.ib else { return Ok(None) };
        let mut ports = Vec::new();
        let mut number_of = Vec::new();
        let mut port_of = Vec::new();
        let mut names = Vec::new();
        for port in &config.ports {
            let PortMode::Ib(settings) = port.mode else { continue };
            let number = u8::try_from(port.number).ok().filter(|&n| n < 255).ok_or_else(|| {
                format!("{}: an IB-like port needs a number below 255 (IBA port numbers are 8 bits)", port.name)
            })?;
            let pipeline = index(&port.name);
            ports.push(SwitchPortConfig {
                number,
                data_vls: settings.data_vls,
                mtu: settings.mtu,
                rate_bps: settings.rate_bps,
            });
            if number_of.len() <= usize::from(pipeline) {
                number_of.resize(usize::from(pipeline) + 1, None);
            }
            number_of[usize::from(pipeline)] = Some(number);
            if port_of.len() <= usize::from(number) {
                port_of.resize(usize::from(number) + 1, None);
                names.resize(usize::from(number) + 1, None);
            }
            port_of[usize::from(number)] = Some(pipeline);
            names[usize::from(number)] = Some(port.name.clone());
        }
        let plane = SwitchPlane::new(&SwitchPlaneConfig {
            guid: ib.guid,
            description: config.name.clone(),
            mac: config.system_mac,
            ports,
            buffer_blocks: ib.buffer_blocks,
            flow_control_refresh_ns: FLOW_CONTROL_REFRESH_NS,
        })
        .map_err(|e| format!("IB-like plane: {e}"))?;
        let sm = ib.sm.as_ref().map(sm::EmbeddedSm::new);
        Ok(Some(IbRuntime { plane, number_of, port_of, names, sm }))
    }

    pub fn number(&self, port: PortId) -> Option<u8> {
        self.number_of.get(usize::from(port)).copied().flatten()
    }

    pub fn port_name(&self, number: u8) -> Option<&str> {
        self.names.get(usize::from(number)).and_then(|n| n.as_deref())
    }

    /// An 0x88B5 frame the node took off pipeline port `port`.
    pub fn receive(&mut self, now: u64, port: PortId, frame: &[u8], tx: &mut Transmit<'_>) {
        let Some(number) = self.number(port) else { return };
        let port_of = &self.port_of;
        self.plane.receive(now, number, frame, &mut |n, f| send(port_of, tx, n, f));
        self.run_sm(now, tx);
    }

    /// Timers: flow-control refreshes, the SM's sweeps and timeouts.
    pub fn poll(&mut self, now: u64, tx: &mut Transmit<'_>) {
        let port_of = &self.port_of;
        self.plane.poll(now, &mut |n, f| send(port_of, tx, n, f));
        self.run_sm(now, tx);
    }

    /// The carrier of pipeline port `port` changed.
    pub fn set_carrier(&mut self, now: u64, port: PortId, up: bool, tx: &mut Transmit<'_>) {
        let Some(number) = self.number(port) else { return };
        let port_of = &self.port_of;
        self.plane.set_carrier(now, number, up, &mut |n, f| send(port_of, tx, n, f));
        if let Some(sm) = &mut self.sm {
            sm.link_changed(now);
        }
    }

    /// When the loop must wake for a rated port's line to send what waits
    /// for it.
    pub fn next_wakeup(&self, now: u64) -> Option<u64> {
        self.plane.next_transmit_ns(now)
    }

    fn run_sm(&mut self, now: u64, tx: &mut Transmit<'_>) {
        let Some(sm) = &mut self.sm else {
            // MADs for an SM no longer here (traps the agent still sends to
            // its own LID until a new master names another) go nowhere.
            self.plane.take_for_sm();
            return;
        };
        let port_of = &self.port_of;
        sm.step(now, &mut self.plane, &mut |n, f| send(port_of, tx, n, f));
    }
}

fn send(port_of: &[Option<PortId>], tx: &mut Transmit<'_>, number: u8, frame: &[u8]) -> bool {
    match port_of.get(usize::from(number)).copied().flatten() {
        Some(port) => tx(port, frame),
        None => false,
    }
}
