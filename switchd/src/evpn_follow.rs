//! EVPN follows commits: a VNI, a VRF (L3VNI, router MAC, networks), an
//! SVI's `vrf:` or an anycast gateway added, changed or removed by a
//! commit or SIGHUP applies live, as a diff.
//!
//! Before the shim reconciles, what EVPN installed in the objects that go
//! or are made again (a VNI's VLAN or VNI map, a VRF's virtual router, the
//! tunnel) is removed, so they can go ([`ShimProgrammer::detach`]). After,
//! the programmer is pointed at the new objects ([`ShimProgrammer::attach`]),
//! the speaker is given the new `bgp.evpn` with what was detached to
//! rebuild (`Evpn::reconfigure`: type 3/5 routes of new VRFs originated,
//! those of VRFs that went withdrawn, the Loc-RIB's routes imported into
//! the new ones), and the feed of locally learned MACs and ARP/ND learns
//! the new VLANs and SVIs.
//!
//! [`ShimProgrammer::detach`]: bgp_evpn::sink::ShimProgrammer::detach
//! [`ShimProgrammer::attach`]: bgp_evpn::sink::ShimProgrammer::attach

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use bgp_evpn::BgpSpeaker;
use bgp_evpn::evpn::{EvpnConfig, Rebuild};
use bgp_evpn::sink::ShimProgrammer;
use sai_shim::{Backend, Sai};
use tokio::sync::watch;

use crate::apply::Applied;
use crate::bgp::ProgrammerControl;
use crate::commit::FollowsConfig;
use crate::config::Config;
use crate::evpn::{LocalFeed, bindings};

/// How long a commit waits for the programmer to run a job.
const JOB_TIMEOUT: Duration = Duration::from_secs(10);

/// EVPN's part of a running daemon, moved along by every commit.
pub struct EvpnFollower<B: Backend> {
    /// The config the speaker, the programmer and the feed are at.
    running: Arc<Config>,
    speaker: Arc<BgpSpeaker>,
    programmer: ProgrammerControl<B>,
    feed: watch::Sender<Arc<LocalFeed>>,
    runtime: tokio::runtime::Handle,
    /// Detached and not yet handed to the speaker to rebuild.
    detached: Rebuild,
}

impl<B: Backend + Send + 'static> EvpnFollower<B> {
    /// Must be made on the daemon's runtime.
    pub fn new(
        running: Arc<Config>,
        speaker: Arc<BgpSpeaker>,
        programmer: ProgrammerControl<B>,
        feed: watch::Sender<Arc<LocalFeed>>,
    ) -> EvpnFollower<B> {
        EvpnFollower::with_runtime(running, speaker, programmer, feed, tokio::runtime::Handle::current())
    }

    /// Waits for the speaker on `runtime`.
    pub fn with_runtime(
        running: Arc<Config>,
        speaker: Arc<BgpSpeaker>,
        programmer: ProgrammerControl<B>,
        feed: watch::Sender<Arc<LocalFeed>>,
        runtime: tokio::runtime::Handle,
    ) -> EvpnFollower<B> {
        EvpnFollower { running, speaker, programmer, feed, runtime, detached: Rebuild::default() }
    }

    /// Runs `job` on the programmer and the shim, after the changes queued
    /// before it, and waits for it.
    pub(crate) fn run(
        &self,
        job: impl FnOnce(&mut ShimProgrammer<B>, &mut Sai<B>) + Send + 'static,
    ) -> Result<(), String> {
        let (done, finished) = std::sync::mpsc::channel();
        let job = Box::new(move |programmer: &mut ShimProgrammer<B>, sai: &mut Sai<B>| {
            job(programmer, sai);
            let _ = done.send(());
        });
        self.programmer.send(job).map_err(|_| "EVPN: the route programmer has stopped".to_owned())?;
        finished.recv_timeout(JOB_TIMEOUT).map_err(|_| "EVPN: the route programmer did not answer".to_owned())
    }
}

fn evpn_of(config: &Config) -> Option<&EvpnConfig> {
    config.bgp.as_ref()?.evpn.as_ref()
}

/// The VLAN id of each EVPN VNI that `config` maps to one.
fn vni_vlan_ids(config: &Config) -> BTreeMap<u32, u16> {
    let Some(evpn) = evpn_of(config) else { return BTreeMap::new() };
    let maps = config.vxlan.iter().flat_map(|x| x.vnis.iter());
    maps.filter(|m| evpn.vnis.iter().any(|v| v.vni == m.vni)).map(|m| (m.vni, m.vlan)).collect()
}

/// What EVPN must let go of before the shim goes from `running` (as
/// `applied`) to `target`: the VNIs whose VLAN or VNI map goes or changes,
/// the VRFs whose virtual router goes or is made again; everything when
/// the tunnel goes.
pub fn to_detach(running: &Config, target: &Config, applied: &Applied) -> Rebuild {
    let tunnel_goes = target.vxlan.is_none() || evpn_of(target).is_none();
    let after = vni_vlan_ids(target);
    let vnis = vni_vlan_ids(running)
        .into_iter()
        .filter(|(vni, vlan)| tunnel_goes || after.get(vni) != Some(vlan))
        .map(|(vni, _)| vni)
        .collect();
    let stale = crate::apply_vrf::stale(applied, target);
    let vrfs = applied.vrfs.keys().filter(|name| tunnel_goes || stale.contains(*name)).cloned().collect();
    Rebuild { vnis, vrfs }
}

impl<B: Backend + Send + 'static> FollowsConfig for EvpnFollower<B> {
    fn remove_stale(&mut self, target: &Config, applied: &Applied) -> Result<(), String> {
        let detach = to_detach(&self.running, target, applied);
        if detach.vnis.is_empty() && detach.vrfs.is_empty() {
            return Ok(());
        }
        tracing::info!(vnis = ?detach.vnis, vrfs = ?detach.vrfs, "EVPN: removing what is installed in objects the commit changes");
        let (vnis, vrfs): (Vec<u32>, Vec<String>) =
            (detach.vnis.iter().copied().collect(), detach.vrfs.iter().cloned().collect());
        self.run(move |programmer, sai| programmer.detach(sai, &vnis, &vrfs))?;
        self.detached.vnis.extend(detach.vnis);
        self.detached.vrfs.extend(detach.vrfs);
        Ok(())
    }

    fn add_missing(&mut self, target: &Config, applied: &Applied) -> Result<(), String> {
        let bindings = bindings(target, applied);
        self.run(move |programmer, _| programmer.attach(bindings))?;
        let evpn = evpn_of(target).cloned();
        let rebuild = std::mem::take(&mut self.detached);
        if evpn.as_ref() != evpn_of(&self.running) || rebuild != Rebuild::default() {
            let vnis: BTreeSet<u32> = evpn.iter().flat_map(|e| e.vnis.iter().map(|v| v.vni)).collect();
            let vrfs: BTreeSet<&str> = evpn.iter().flat_map(|e| e.vrfs.iter().map(|v| v.name.as_str())).collect();
            tracing::info!(?vnis, ?vrfs, rebuilt = ?rebuild, "EVPN: applying the committed bgp.evpn");
            self.runtime.block_on(self.speaker.evpn_reconfigure(evpn, rebuild));
        }
        self.feed.send_replace(Arc::new(LocalFeed::new(target, applied)));
        self.running = Arc::new(target.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use dataplane::pipeline::SwitchConfig;
    use sai_shim::backend::soft::SoftBackend;

    use super::*;
    use crate::apply::{apply, switch_attributes};
    use crate::daemon::restart_needed;

    fn leaf(vlan_of_10200: u16, l3vni: u32, rt: &str) -> Config {
        Config::from_yaml(&format!(
            "name: l1
loopback: [10.255.0.1/32]
ports:
  - {{ name: eth1, mode: routed, addresses: [10.1.0.0/31] }}
  - {{ name: eth3, mode: access, vlan: 10 }}
vlans:
  - {{ id: 10, addresses: [172.16.1.1/24], vrf: t1 }}
  - {{ id: {vlan_of_10200} }}
vxlan:
  source: 10.255.0.1
  vnis: [{{ vni: 10100, vlan: 10 }}, {{ vni: 10200, vlan: {vlan_of_10200} }}]
bgp:
  asn: 65101
  neighbors: [{{ interface: eth1, remote_as: 65000, families: [ipv4-unicast, l2vpn-evpn] }}]
  evpn:
    vtep_ip: 10.255.0.1
    vnis: [{{ vni: 10100, export_rts: [\"{rt}\"] }}, {{ vni: 10200 }}]
    vrfs: [{{ name: t1, l3vni: {l3vni}, router_mac: \"02:cc:00:00:00:01\" }}]
"
        ))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn applied(config: &Config) -> Applied {
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(config)).unwrap();
        apply(&mut sai, config).unwrap()
    }

    #[test]
    fn what_a_commit_detaches_is_what_it_remaps_or_makes_again() {
        let running = leaf(20, 4001, "65101:10100");
        let applied = applied(&running);
        let detach = |target: &Config| to_detach(&running, target, &applied);
        // Route targets only: the speaker's diff, no object changes.
        assert_eq!(detach(&leaf(20, 4001, "65101:7")), Rebuild::default());
        // VNI 10200 moves to VLAN 30: its objects go.
        assert_eq!(detach(&leaf(30, 4001, "65101:10100")).vnis, BTreeSet::from([10200]));
        // A new L3VNI makes the VRF's virtual router again.
        let l3 = detach(&leaf(20, 4002, "65101:10100"));
        assert_eq!((l3.vnis.len(), l3.vrfs), (0, BTreeSet::from(["t1".to_string()])));
        // VNI 10200 leaves: its VNI map goes with it.
        let mut gone = running.clone();
        gone.vxlan.as_mut().unwrap().vnis.retain(|m| m.vni != 10200);
        gone.bgp.as_mut().unwrap().evpn.as_mut().unwrap().vnis.retain(|v| v.vni != 10200);
        assert_eq!(detach(&gone).vnis, BTreeSet::from([10200]));
    }

    #[test]
    fn bgp_evpn_changes_and_turning_evpn_on_or_off_apply_in_place() {
        let running = leaf(20, 4001, "65101:10100");
        assert_eq!(restart_needed(&running, &leaf(30, 4002, "65101:7")), Vec::<String>::new());
        let mut off = running.clone();
        off.bgp.as_mut().unwrap().evpn = None;
        assert_eq!(restart_needed(&running, &off), Vec::<String>::new());
        assert_eq!(restart_needed(&off, &running), Vec::<String>::new());
        let mut no_bgp = off.clone();
        no_bgp.bgp = None;
        assert_eq!(restart_needed(&running, &no_bgp), Vec::<String>::new(), "bgp: removed stops the speaker");
        assert_eq!(restart_needed(&no_bgp, &running), Vec::<String>::new(), "bgp: added starts it");
        let mut asn = running.clone();
        asn.bgp.as_mut().unwrap().asn = 65999;
        assert!(restart_needed(&running, &asn)[0].contains("BGP settings"));
    }
}
