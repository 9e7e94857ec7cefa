//! BGP as a whole follows commits: `bgp:` added to a running switch starts
//! the speaker (with its route programmer, fast-external-fallover watcher
//! and EVPN's follower), removed stops it: every session gets a Cease
//! NOTIFICATION and the routes it installed leave the shim. In between,
//! [`BgpFollower`] and [`EvpnFollower`] carry the changes to the running
//! speaker; `bgp.evpn` added or removed is EVPN's instance made or torn
//! down in it (`Speaker::evpn_reconfigure`), with the feed of locally
//! learned MACs and ARP/ND started or stopped here.

use std::sync::{Arc, Mutex, RwLock};

use sai_shim::{Backend, Sai};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::apply::Applied;
use crate::bgp::BgpView;
use crate::bgp_follow::BgpFollower;
use crate::commit::FollowsConfig;
use crate::config::Config;
use crate::evpn::LocalFeed;
use crate::evpn_follow::EvpnFollower;
use crate::mgmt::SwitchView;

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

/// How many shim notifications EVPN's feed may have waiting.
const FEED_CAPACITY: usize = 65536;
/// How many shim notifications fast external fallover may have waiting.
const FALLOVER_CAPACITY: usize = 4096;

/// The speaker and what runs with it.
struct Running<B: Backend> {
    view: BgpView,
    bgp: BgpFollower,
    evpn: EvpnFollower<B>,
    /// Where the feed of locally learned MACs and bindings reads the VLANs
    /// and SVIs of EVPN's VNIs.
    feed: watch::Sender<Arc<LocalFeed>>,
    /// The feed's task, while `bgp.evpn` is configured.
    feed_task: Option<JoinHandle<()>>,
    fallover: JoinHandle<()>,
}

pub struct BgpPlane<B: Backend> {
    sai: Arc<Mutex<Sai<B>>>,
    view: Arc<RwLock<SwitchView<B>>>,
    runtime: tokio::runtime::Handle,
    running: Option<Running<B>>,
}

impl<B: Backend + Send + 'static> BgpPlane<B> {
    /// Must be made on the daemon's runtime; starts nothing yet
    /// ([`FollowsConfig::add_missing`] with the first config does).
    pub fn new(sai: Arc<Mutex<Sai<B>>>, view: Arc<RwLock<SwitchView<B>>>) -> BgpPlane<B> {
        BgpPlane { sai, view, runtime: tokio::runtime::Handle::current(), running: None }
    }

    /// The running speaker, for the daemon's shutdown.
    pub fn speaker(&self) -> Option<BgpView> {
        self.running.as_ref().map(|r| r.view.clone())
    }

    /// Starts the speaker when `config` has `bgp:` (at the daemon's start,
    /// on its runtime).
    pub async fn start_at_boot(&mut self, config: &Config, applied: &Applied) -> Result<(), String> {
        self.running = self.launch(config, applied).await?;
        Ok(())
    }

    /// On a commit's thread (not the runtime's).
    fn start(&mut self, config: &Config, applied: &Applied) -> Result<(), String> {
        self.running = self.runtime.clone().block_on(self.launch(config, applied))?;
        Ok(())
    }

    async fn launch(&self, config: &Config, applied: &Applied) -> Result<Option<Running<B>>, String> {
        let Some(bgp) = &config.bgp else { return Ok(None) };
        let programmer = crate::bgp::programmer(config, applied);
        let (view, control) = crate::bgp::start(bgp.clone(), programmer, self.sai.clone()).await?;
        let fallover = {
            let subscription = lock(&self.sai).subscribe("bgp-fallover", FALLOVER_CAPACITY);
            self.runtime.spawn(crate::bgp::run_fallover(subscription, self.view.clone(), view.speaker.clone()))
        };
        let (feed, _) = watch::channel(Arc::new(LocalFeed::new(config, applied)));
        let evpn = EvpnFollower::with_runtime(
            Arc::new(config.clone()),
            view.speaker.clone(),
            control,
            feed.clone(),
            self.runtime.clone(),
        );
        let mut running = Running {
            bgp: BgpFollower::with_runtime(bgp.clone(), view.speaker.clone(), self.runtime.clone()),
            view: view.clone(),
            evpn,
            feed,
            feed_task: None,
            fallover,
        };
        running.follow_evpn(&self.sai, &self.runtime, config);
        write(&self.view).bgp = Some(view);
        Ok(Some(running))
    }

    /// Cease to every peer, the speaker's routes out of the shim, its
    /// tasks stopped.
    fn stop(&mut self) -> Result<(), String> {
        let Some(running) = self.running.take() else { return Ok(()) };
        write(&self.view).bgp = None;
        running.fallover.abort();
        if let Some(feed) = running.feed_task {
            feed.abort();
        }
        self.runtime.block_on(running.view.speaker.stop());
        // After the speaker's last change: the programmer runs jobs after
        // what was queued before them.
        let cleared = running.evpn.run(|programmer, sai| programmer.clear(sai));
        tracing::info!("BGP speaker stopped: every session closed with Cease, its routes withdrawn");
        cleared
    }
}

impl<B: Backend + Send + 'static> Running<B> {
    /// EVPN's feed runs while `bgp.evpn` is configured.
    fn follow_evpn(&mut self, sai: &Mutex<Sai<B>>, runtime: &tokio::runtime::Handle, config: &Config) {
        let wanted = config.bgp.as_ref().is_some_and(|b| b.evpn.is_some());
        match (&self.feed_task, wanted) {
            (None, true) => {
                let subscription = lock(sai).subscribe("evpn", FEED_CAPACITY);
                let feeds = self.feed.subscribe();
                let speaker = self.view.speaker.clone();
                self.feed_task = Some(runtime.spawn(crate::evpn::run_feed(subscription, feeds, speaker)));
            }
            (Some(_), false) => {
                if let Some(task) = self.feed_task.take() {
                    task.abort();
                }
            }
            _ => {}
        }
    }
}

impl<B: Backend + Send + 'static> FollowsConfig for BgpPlane<B> {
    fn remove_stale(&mut self, target: &Config, applied: &Applied) -> Result<(), String> {
        if target.bgp.is_none() {
            // Before the shim reconciles: its routes use router interfaces
            // the commit may remove.
            return self.stop();
        }
        match &mut self.running {
            Some(running) => running.evpn.remove_stale(target, applied),
            None => Ok(()),
        }
    }

    fn add_missing(&mut self, target: &Config, applied: &Applied) -> Result<(), String> {
        let Some(running) = &mut self.running else { return self.start(target, applied) };
        if target.bgp.is_none() {
            return self.stop();
        }
        running.evpn.add_missing(target, applied)?;
        running.follow_evpn(&self.sai, &self.runtime, target);
        running.bgp.add_missing(target, applied)?;
        // The shows read the running `bgp:` here.
        if let Some(bgp) = &target.bgp {
            running.view.config = Arc::new(bgp.clone());
            if let Some(view) = write(&self.view).bgp.as_mut() {
                view.config = running.view.config.clone();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use sai_shim::backend::soft::SoftBackend;

    use super::*;
    use crate::daemon::{build_shim, lldp_agent};

    /// A leaf with a VNI; `bgp` is its `bgp:` section (no listener, no
    /// neighbour: nothing here needs the network).
    fn leaf(bgp: &str) -> Config {
        Config::from_yaml(&format!(
            "name: l1
loopback: [10.255.0.1/32]
ports:
  - {{ name: eth1, mode: routed, addresses: [10.1.0.0/31] }}
  - {{ name: eth3, mode: access, vlan: 10 }}
vlans:
  - {{ id: 10 }}
vxlan:
  source: 10.255.0.1
  vnis: [{{ vni: 10100, vlan: 10 }}]
{bgp}"
        ))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    const BGP: &str = "bgp:\n  asn: 65101\n  router_id: 10.255.0.1\n  listen_port: 0\n";
    const EVPN: &str = "  evpn:\n    vtep_ip: 10.255.0.1\n    vnis: [{ vni: 10100 }]\n";

    /// Moves `plane` from `running` to `target` as a commit does.
    fn commit(
        plane: &mut BgpPlane<SoftBackend>,
        sai: &Mutex<Sai<SoftBackend>>,
        applied: &mut Applied,
        target: &Config,
    ) {
        plane.remove_stale(target, applied).unwrap();
        crate::apply::reconcile(&mut lock(sai), applied, target).unwrap();
        plane.add_missing(target, applied).unwrap();
    }

    fn evpn_vnis(plane: &BgpPlane<SoftBackend>, runtime: &tokio::runtime::Runtime) -> Vec<u32> {
        let speaker = plane.speaker().expect("the speaker runs").speaker;
        runtime.block_on(speaker.evpn_state()).vnis.iter().map(|v| v.vni).collect()
    }

    #[test]
    fn bgp_and_bgp_evpn_added_and_removed_start_and_stop_what_runs() {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let none = leaf("");
        let (sai, mut applied) = build_shim(&none).unwrap();
        let sai = Arc::new(Mutex::new(sai));
        let view = Arc::new(RwLock::new(SwitchView {
            config: Arc::new(none.clone()),
            applied: Arc::new(applied.clone()),
            sai: sai.clone(),
            lldp: Arc::new(Mutex::new(lldp_agent(&none))),
            bgp: None,
            now: Arc::new(|| 0),
            ib: None,
            io_stats: Default::default(),
        }));
        let mut plane = {
            let _runtime = runtime.enter();
            BgpPlane::new(sai.clone(), view.clone())
        };
        let subscribers = |sai: &Mutex<Sai<SoftBackend>>| {
            let mut names: Vec<String> = lock(sai).subscribers().into_iter().map(|s| s.name).collect();
            names.sort();
            names
        };

        // bgp: added: the speaker runs, without EVPN.
        commit(&mut plane, &sai, &mut applied, &leaf(BGP));
        assert!(view.read().unwrap().bgp.is_some(), "the shows see the speaker");
        assert_eq!(evpn_vnis(&plane, &runtime), Vec::<u32>::new());
        assert_eq!(subscribers(&sai), ["bgp-fallover"]);

        // bgp.evpn added: EVPN's instance and its feed.
        commit(&mut plane, &sai, &mut applied, &leaf(&format!("{BGP}{EVPN}")));
        assert_eq!(evpn_vnis(&plane, &runtime), [10100]);
        assert_eq!(subscribers(&sai), ["bgp-fallover", "evpn"]);

        // bgp.evpn removed: gone from the same speaker.
        let speaker = plane.speaker().unwrap().speaker;
        commit(&mut plane, &sai, &mut applied, &leaf(BGP));
        assert!(Arc::ptr_eq(&speaker, &plane.speaker().unwrap().speaker), "the speaker stayed");
        assert_eq!(evpn_vnis(&plane, &runtime), Vec::<u32>::new());

        // bgp: removed: the speaker stops, the shows no longer see it.
        commit(&mut plane, &sai, &mut applied, &none);
        assert!(plane.speaker().is_none() && view.read().unwrap().bgp.is_none());
        assert!(runtime.block_on(speaker.summary()).is_empty(), "the speaker's task has ended");
    }
}
