//! New settings for a running SM (`switchd`'s commits, a reloaded
//! `opensm.conf`-like file): what each one changes, applied without a
//! restart, as OpenSM applies a re-read configuration at its next sweep.
//!
//! - Routing (engines, LMC, roots, VLs) or `program_qos`: the next sweep is
//!   a heavy one, at once for a master, that routes with the new settings
//!   and rewrites the LFT blocks (and SL-to-VL / VL arbitration tables)
//!   that differ. A standby keeps the settings for when it is master.
//! - Priority: published in SMInfo at once. A master that is no longer the
//!   highest polls the SMs its last heavy sweep found now (as its light
//!   sweep would) and hands over to a higher standby, which acknowledges
//!   (IBA 14.4.2, SMInfo HANDOVER / ACKNOWLEDGE). A standby whose priority
//!   rose waits for the master's next light sweep to find it, as IBA has a
//!   standby never take mastership from a live master.
//! - The light-sweep interval: the next light sweep comes no later than one
//!   new interval from now.
//! - SM_Key: compared from the next SMInfo on.
//! - M_Key: a first key (over none) is given to every port by the heavy
//!   sweep it brings. A key over another one, or new protection bits or
//!   lease over a key in place, is refused ([`live_change_refusal`]): the
//!   ports hold the old key and refuse the Sets that would change it when
//!   they carry another (IBA 14.2.4.1), and they carry it for the whole
//!   sweep, so the SM would lock itself out half-way.
//! - Window, timeout and retries belong to the SMP requester, made at
//!   start: they stay.

use super::{Phase, SmConfig, SubnetManager};

/// What [`SubnetManager::reconfigure`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reconfigured {
    /// A heavy sweep started or is pending to route with the new settings.
    pub heavy_sweep: bool,
    /// The priority changed (a master then polls the other SMs at once).
    pub priority: bool,
    pub sweep_interval: bool,
}

/// Why `new` cannot replace `old` in a running SM, if it cannot.
pub fn live_change_refusal(old: &SmConfig, new: &SmConfig) -> Option<&'static str> {
    let protection = |c: &SmConfig| (c.m_key, c.m_key_protect_bits, c.m_key_lease_period);
    if old.m_key != 0 && protection(old) != protection(new) {
        return Some(
            "the ports hold the running M_Key and refuse a Set carrying any other (IBA 14.2.4.1): \
             a new key, protection or lease over a key in place needs the SM stopped (`ib.sm` \
             removed) until the ports' lease runs out, then started with the new one",
        );
    }
    None
}

impl SubnetManager {
    /// Takes `config` in place of the running settings (see the module's
    /// documentation for what each change does); refused whole, nothing
    /// changed, for what [`live_change_refusal`] names.
    pub fn reconfigure(&mut self, now: u64, config: SmConfig) -> Result<Reconfigured, &'static str> {
        if let Some(why) = live_change_refusal(&self.config, &config) {
            return Err(why);
        }
        let (window, timeout_ns, retries) = (self.config.window, self.config.timeout_ns, self.config.retries);
        let old = std::mem::replace(&mut self.config, SmConfig { window, timeout_ns, retries, ..config });
        let new = &self.config;
        let mut done = Reconfigured {
            heavy_sweep: old.routing != new.routing
                || old.program_qos != new.program_qos
                || old.m_key != new.m_key
                || old.subnet_timeout != new.subnet_timeout,
            priority: old.priority != new.priority,
            sweep_interval: old.light_sweep_interval_ns != new.light_sweep_interval_ns,
        };
        if old.program_qos != new.program_qos || old.routing != new.routing {
            // Tables set under the old settings are set again (dfsssp's
            // layers depend on the routing).
            self.qos_programmed.clear();
        }
        if done.sweep_interval
            && let Some(at) = self.next_light_sweep
        {
            self.next_light_sweep = Some(at.min(now + self.config.light_sweep_interval_ns));
        }
        match self.phase {
            Phase::Idle | Phase::Standby => done.heavy_sweep = false,
            _ if done.heavy_sweep => self.resweep(now),
            _ => {}
        }
        if done.priority && self.phase == Phase::Master && !self.heavy_pending {
            // What a light sweep does: SwitchInfo of every switch, SMInfo of
            // every other SM, which hands over to a higher standby.
            self.next_light_sweep = Some(now);
            self.handle_timer(now);
        }
        Ok(done)
    }

    /// A heavy sweep for new settings: at once for a master (or an SM
    /// waiting for links), after the one in progress otherwise.
    fn resweep(&mut self, now: u64) {
        self.heavy_pending = true;
        if matches!(self.phase, Phase::Master | Phase::Waiting) {
            self.begin_heavy_sweep(now);
        }
    }
}
