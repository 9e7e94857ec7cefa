//! The BGP speaker follows commits: `bgp:` changes other than `evpn:`
//! (which [`crate::evpn_follow`] carries) go to the running speaker as a
//! diff ([`BgpSpeaker::reconfigure`]): a neighbour added, removed or
//! changed restarts only its own session; networks (`redistribute`)
//! are originated or withdrawn; a multipath change re-runs the decision
//! process; a new ASN or router id resets every session in place (the
//! speaker keeps its listener, routes and tasks). What needs a new speaker
//! is refused before anything applies ([`crate::daemon::restart_needed`]);
//! `bgp:` added or removed starts or stops it ([`crate::bgp_plane`]).

use std::sync::Arc;

use bgp_evpn::BgpSpeaker;

use crate::apply::Applied;
use crate::commit::FollowsConfig;
use crate::config::Config;

pub struct BgpFollower {
    /// The `bgp:` the speaker runs.
    running: bgp_evpn::BgpConfig,
    speaker: Arc<BgpSpeaker>,
    runtime: tokio::runtime::Handle,
}

impl BgpFollower {
    /// Must be made on the daemon's runtime.
    pub fn new(running: bgp_evpn::BgpConfig, speaker: Arc<BgpSpeaker>) -> BgpFollower {
        BgpFollower::with_runtime(running, speaker, tokio::runtime::Handle::current())
    }

    /// Waits for the speaker on `runtime`.
    pub fn with_runtime(
        running: bgp_evpn::BgpConfig,
        speaker: Arc<BgpSpeaker>,
        runtime: tokio::runtime::Handle,
    ) -> BgpFollower {
        BgpFollower { running, speaker, runtime }
    }
}

impl FollowsConfig for BgpFollower {
    fn remove_stale(&mut self, _target: &Config, _applied: &Applied) -> Result<(), String> {
        Ok(())
    }

    fn add_missing(&mut self, target: &Config, _applied: &Applied) -> Result<(), String> {
        // `bgp:` added or removed starts or stops the speaker (`crate::bgp_plane`).
        let Some(bgp) = &target.bgp else { return Ok(()) };
        let without_evpn = |b: &bgp_evpn::BgpConfig| bgp_evpn::BgpConfig { evpn: None, ..b.clone() };
        if without_evpn(bgp) == without_evpn(&self.running) {
            return Ok(());
        }
        let done = self.runtime.block_on(self.speaker.reconfigure(bgp.clone()))?;
        tracing::info!(
            added = ?done.added,
            removed = ?done.removed,
            changed = ?done.changed,
            decided_again = done.decided_again,
            networks_added = done.networks_added,
            networks_removed = done.networks_removed,
            sessions_reset = ?done.sessions_reset,
            "BGP reconfigured live"
        );
        self.running = bgp.clone();
        Ok(())
    }
}
