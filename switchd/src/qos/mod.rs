//! The traffic manager in the daemon: the config's `qos:` as shim QoS
//! objects ([`apply`]), and what `show` reads back of it ([`show`]).

pub mod lossless;
pub mod show;

use qos::buffer::{PgProfile, QueueLimit};
use qos::classify::CLASSES;
use qos::scheduler::Discipline;
use qos::tm::{EcnSetting, QueueProfile, TmConfig};
use sai_shim::qos::{
    BufferPoolAttr, BufferProfileAttr, BufferThreshold, IngressPriorityGroupAttr, QosMapAttr, QosMapType, QueueAttr,
    SchedulerAttr, SchedulingType, WredAttr,
};
use sai_shim::{Backend, ObjectId, PortAttr, Sai, SaiError, SwitchAttr};

use crate::apply::{Applied, ApplyError};
use crate::config::Config;

/// The shim objects of the traffic manager.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QosObjects {
    pub maps: Vec<ObjectId>,
    pub pool: Option<ObjectId>,
    pub profiles: Vec<ObjectId>,
    pub schedulers: Vec<ObjectId>,
    pub wreds: Vec<ObjectId>,
    /// Per port, in config order: its 8 priority groups and 8 queues.
    pub priority_groups: Vec<[ObjectId; CLASSES]>,
    pub queues: Vec<[ObjectId; CLASSES]>,
    /// The `qos:` they were made from (a commit that changes it makes
    /// them again: [`remove`], then [`apply`]).
    pub config: Option<TmConfig>,
    /// The ports they were made for, in config order (a commit that
    /// removes or adds one makes them again, even when `qos:`, which only
    /// lists the ports' settings, stays the same).
    pub ports: Vec<String>,
}

/// Whether the QoS objects of `applied` must be made again for `candidate`.
pub fn stale(applied: &QosObjects, candidate: &Config) -> bool {
    applied.config != candidate.qos
        || (candidate.qos.is_some() && !applied.ports.iter().eq(candidate.ports.iter().map(|p| &p.name)))
}

/// Removes the traffic manager's objects, users before what they use: the
/// queues and priority groups, then their schedulers, WRED and buffer
/// profiles, the pool, and the maps once the switch no longer lists them.
pub fn remove<B: Backend>(sai: &mut Sai<B>, objects: &mut QosObjects) -> Result<(), ApplyError> {
    let users = objects.queues.iter().chain(&objects.priority_groups).flatten().copied().collect::<Vec<_>>();
    let used = objects.schedulers.iter().chain(&objects.wreds).chain(&objects.profiles).chain(&objects.pool);
    for id in users.into_iter().chain(used.copied().collect::<Vec<_>>()) {
        context(sai.remove(id), || format!("remove QoS object {id}"))?;
    }
    if !objects.maps.is_empty() {
        context(sai.set_switch_attribute(SwitchAttr::QosMapList(Vec::new())), || "the switch's QoS maps".into())?;
        for &id in &objects.maps {
            context(sai.remove(id), || format!("remove QoS map {id}"))?;
        }
    }
    *objects = QosObjects::default();
    Ok(())
}

fn context<T>(result: Result<T, SaiError>, what: impl FnOnce() -> String) -> Result<T, ApplyError> {
    result.map_err(|source| ApplyError { what: what(), source })
}

/// Creates the QoS objects of `config` (ports already exist in `applied`):
/// port speeds, cable lengths and PFC; the switch's maps, PFC timing,
/// watchdog and DLB; the pool, buffer profiles, schedulers, WRED profiles,
/// and every port's priority groups and queues.
pub fn apply<B: Backend>(sai: &mut Sai<B>, config: &Config, applied: &Applied) -> Result<QosObjects, ApplyError> {
    let Some(tm) = &config.qos else { return Ok(QosObjects::default()) };
    let mut objects = QosObjects {
        config: Some(tm.clone()),
        ports: config.ports.iter().map(|p| p.name.clone()).collect(),
        ..QosObjects::default()
    };
    let pfc_mask = tm.pfc.enabled_mask();
    for (port, settings) in config.ports.iter().zip(&tm.ports) {
        let id = applied.ports[&port.name].port;
        for attr in [
            PortAttr::Speed(settings.speed_bps),
            PortAttr::CableLength(settings.cable_length_m),
            PortAttr::PriorityFlowControl(pfc_mask),
        ] {
            context(sai.set_port_attribute(id, attr), || format!("QoS of port {}", port.name))?;
        }
    }

    let maps = &tm.maps;
    let pairs = |table: &[u8]| table.iter().enumerate().map(|(k, &v)| (k as u8, v)).collect::<Vec<_>>();
    for (map_type, table) in [
        (QosMapType::DscpToTc, &maps.dscp_to_tc[..]),
        (QosMapType::Dot1pToTc, &maps.pcp_to_tc[..]),
        (QosMapType::TcToQueue, &maps.tc_to_queue[..]),
        (QosMapType::TcToPriorityGroup, &maps.tc_to_pg[..]),
        (QosMapType::PfcPriorityToQueue, &maps.pfc_priority_to_queue[..]),
        (QosMapType::PfcPriorityToPriorityGroup, &maps.pfc_priority_to_pg[..]),
    ] {
        let id = context(
            sai.create_qos_map(&[QosMapAttr::Type(map_type), QosMapAttr::MapToValueList(pairs(table))]),
            || format!("QoS map {map_type:?}"),
        )?;
        objects.maps.push(id);
    }
    for attr in [
        SwitchAttr::QosMapList(objects.maps.clone()),
        SwitchAttr::QosTrust(maps.trust),
        SwitchAttr::PfcQuanta(tm.pfc.quanta),
        SwitchAttr::PfcResponseTime(tm.pfc.response_ns),
        SwitchAttr::PfcRxLag(tm.pfc.rx_lag_ns),
        SwitchAttr::PfcWatchdog(tm.watchdog),
        SwitchAttr::Dlb(tm.dlb.clone()),
    ] {
        context(sai.set_switch_attribute(attr), || "the switch's QoS attributes".into())?;
    }

    let pool = context(
        sai.create_buffer_pool(&[
            BufferPoolAttr::Size(tm.pool.size_bytes),
            BufferPoolAttr::CellSize(tm.pool.cell_bytes),
        ]),
        || "buffer pool".into(),
    )?;
    objects.pool = Some(pool);

    let mut pg_profiles = [None; CLASSES];
    for (index, profile) in tm.priority_groups.iter().enumerate() {
        let id = context(sai.create_buffer_profile(&pg_profile_attrs(pool, profile)), || {
            format!("buffer profile of priority group {index}")
        })?;
        objects.profiles.push(id);
        pg_profiles[index] = Some(id);
    }
    let mut queue_settings = [(None, None, None); CLASSES];
    for (index, profile) in tm.queues.iter().enumerate() {
        queue_settings[index] = queue_objects(sai, pool, profile, &mut objects)
            .map_err(|source| ApplyError { what: format!("profiles of queue {index}"), source })?;
    }

    for port in &config.ports {
        let id = applied.ports[&port.name].port;
        let mut pgs = [id; CLASSES];
        let mut queues = [id; CLASSES];
        for index in 0..CLASSES {
            pgs[index] = context(
                sai.create_ingress_priority_group(&[
                    IngressPriorityGroupAttr::Port(id),
                    IngressPriorityGroupAttr::Index(index as u8),
                    IngressPriorityGroupAttr::BufferProfile(pg_profiles[index]),
                ]),
                || format!("priority group {index} of {}", port.name),
            )?;
            let (scheduler, wred, profile) = queue_settings[index];
            queues[index] = context(
                sai.create_queue(&[
                    QueueAttr::Port(id),
                    QueueAttr::Index(index as u8),
                    QueueAttr::SchedulerProfileId(scheduler),
                    QueueAttr::WredProfileId(wred),
                    QueueAttr::BufferProfileId(profile),
                ]),
                || format!("queue {index} of {}", port.name),
            )?;
        }
        objects.priority_groups.push(pgs);
        objects.queues.push(queues);
    }
    Ok(objects)
}

fn pg_profile_attrs(pool: ObjectId, profile: &PgProfile) -> Vec<BufferProfileAttr> {
    vec![
        BufferProfileAttr::PoolId(pool),
        BufferProfileAttr::ReservedBufferSize(profile.reserved_bytes),
        BufferProfileAttr::Threshold(BufferThreshold::Dynamic(profile.dynamic_th)),
        BufferProfileAttr::Lossless(profile.lossless),
        BufferProfileAttr::XoffTh(profile.headroom_bytes),
        BufferProfileAttr::XonOffsetTh(profile.xon_offset_bytes),
    ]
}

type QueueSettings = (Option<ObjectId>, Option<ObjectId>, Option<ObjectId>);

/// A queue profile's scheduler, WRED profile and buffer profile.
fn queue_objects<B: Backend>(
    sai: &mut Sai<B>,
    pool: ObjectId,
    profile: &QueueProfile,
    objects: &mut QosObjects,
) -> Result<QueueSettings, SaiError> {
    let mut attrs = match profile.scheduler {
        Discipline::Strict => vec![SchedulerAttr::SchedulingType(SchedulingType::Strict)],
        Discipline::Dwrr { weight } => {
            vec![SchedulerAttr::SchedulingType(SchedulingType::Dwrr), SchedulerAttr::SchedulingWeight(weight)]
        }
    };
    if let Some(shaper) = profile.shaper {
        attrs.push(SchedulerAttr::MaxBandwidthRate(shaper.rate_bps));
        attrs.push(SchedulerAttr::MaxBurstSize(shaper.burst_bytes));
    }
    let scheduler = sai.create_scheduler(&attrs)?;
    objects.schedulers.push(scheduler);
    let wred = match profile.ecn {
        EcnSetting::Off => None,
        setting => {
            let id = sai.create_wred(&[WredAttr::EcnMarkMode(setting)])?;
            objects.wreds.push(id);
            Some(id)
        }
    };
    let threshold = match profile.limit {
        QueueLimit::Static { bytes } => BufferThreshold::Static(bytes),
        QueueLimit::Dynamic { th } => BufferThreshold::Dynamic(th),
    };
    let buffer =
        sai.create_buffer_profile(&[BufferProfileAttr::PoolId(pool), BufferProfileAttr::Threshold(threshold)])?;
    objects.profiles.push(buffer);
    Ok((Some(scheduler), wred, Some(buffer)))
}

/// The traffic manager the soft backend builds from the shim's objects,
/// with the daemon's own timing: a forwarding thread that wakes up late
/// sends what it owes back to back (up to `catch_up_ns`).
pub fn daemon_tm_config(mut config: TmConfig, catch_up_ns: u64) -> TmConfig {
    config.catch_up_ns = catch_up_ns;
    config
}

#[cfg(test)]
mod tests {
    use dataplane::pipeline::SwitchConfig;
    use sai_shim::backend::soft::SoftBackend;

    use super::*;
    use crate::apply::{apply, switch_attributes};

    const CONFIG: &str = r#"
name: leaf1
ports:
  - { name: eth1, mode: routed, addresses: [10.0.1.1/31], speed: 100M, cable-length: 40 }
  - { name: eth2, mode: routed, addresses: [10.0.2.1/31], speed: 100M }
  - { name: eth3, mode: routed, addresses: [10.0.3.1/31], speed: 1G, mtu: 9100 }
qos:
  preset: roce
  maps: {dscp-to-tc: {26: 3, 48: 6}}
  queues: {6: {scheduler: {type: strict}}, 7: {limit: {type: static, bytes: 100000}}}
  watchdog: {action: drop, detection-ms: 100, restoration-ms: 300, poll-interval-ms: 50}
  dlb: {mode: spray}
"#;

    /// The config goes into the shim as QoS objects, and the soft backend
    /// builds the very same traffic manager configuration back from them.
    #[test]
    fn the_shim_objects_give_back_the_configured_traffic_manager() {
        let config = crate::config::Config::from_yaml(CONFIG).unwrap();
        let wanted = config.qos.clone().unwrap();
        assert_eq!(wanted.ports[0].cable_length_m, 40);
        assert_eq!(wanted.ports[2].speed_bps, 1_000_000_000);
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        let applied = apply(&mut sai, &config).unwrap();
        assert_eq!(applied.qos.queues.len(), 3);
        assert_eq!(applied.qos.maps.len(), 6);
        let built = sai.backend().tm_config(sai.store()).unwrap().unwrap();
        assert_eq!(built, wanted);
        // Objects in use cannot go.
        assert!(sai.remove(applied.qos.pool.unwrap()).is_err());
    }

    /// A commit removing a port and adding another with the same settings
    /// (so the same `qos:`) makes the QoS objects again: the old port's
    /// queues and priority groups go with it (else the shim refuses to
    /// remove a port they name), the new one gets its own, and the new
    /// port takes the old one's pipeline index.
    #[test]
    fn a_port_replaced_by_one_with_the_same_settings_gets_its_own_queues() {
        let config = crate::config::Config::from_yaml(CONFIG).unwrap();
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        let mut applied = apply(&mut sai, &config).unwrap();
        let eth3 = applied.ports["eth3"].port;
        let index = sai.backend().port_index(eth3).unwrap();
        let replaced = crate::config::Config::from_yaml(&CONFIG.replace(
            "{ name: eth3, mode: routed, addresses: [10.0.3.1/31]",
            "{ name: eth4, mode: routed, addresses: [10.0.4.1/31]",
        ))
        .unwrap();
        assert_eq!(replaced.qos, config.qos, "the same qos: as far as the traffic manager's config goes");
        assert!(stale(&applied.qos, &replaced));
        crate::apply::reconcile(&mut sai, &mut applied, &replaced).expect("eth3 removed, eth4 added");
        let eth4 = applied.ports["eth4"].port;
        assert_eq!(sai.backend().port_index(eth4), Some(index), "the shim reused eth3's index");
        assert_eq!(applied.qos.ports, ["eth1", "eth2", "eth4"]);
        let queues = sai.store().objects_of(sai_shim::ObjectType::Queue);
        let on_eth4 = queues.filter(|(_, o)| matches!(o, sai_shim::Object::Queue(q) if q.port == eth4)).count();
        assert_eq!(on_eth4, CLASSES);
        assert_eq!(sai.backend().tm_config(sai.store()).unwrap(), replaced.qos);
        assert!(!stale(&applied.qos, &replaced));
    }

    /// A group's DLB mode goes on its shim object and into the traffic
    /// manager's DLB configuration, by the pipeline's group index.
    #[test]
    fn dlb_groups_are_bound_to_their_next_hop_group() {
        use qos::dlb::DlbMode;
        let yaml = format!(
            "{}routes: [{{prefix: 10.9.0.0/16, next_hops: [10.0.1.0, 10.0.2.0]}}]\n",
            CONFIG.replace("dlb: {mode: spray}", "dlb: {groups: [{next-hops: [10.0.1.0, 10.0.2.0], mode: flowlet}]}")
        );
        let config = crate::config::Config::from_yaml(&yaml).unwrap();
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        let applied = apply(&mut sai, &config).unwrap();
        let group = applied.groups.values().next().unwrap().0;
        assert_eq!(sai.get_next_hop_group(group).unwrap().dlb_mode, Some(DlbMode::Flowlet));
        let dlb = sai.backend().tm_config(sai.store()).unwrap().unwrap().dlb;
        assert_eq!(dlb.mode, DlbMode::Static);
        assert_eq!(dlb.groups.len(), 1);
        assert_eq!(dlb.groups[0].mode, DlbMode::Flowlet);
    }

    /// A group that a later commit creates (a new route's next hops) or
    /// gives another mode balances as `qos.dlb.groups` says at once, and a
    /// removed group's mode goes with it: the running DLB is told, no
    /// restart.
    #[test]
    fn dlb_groups_of_a_later_commit_get_their_mode_while_dlb_runs() {
        use dataplane::node::QosTrafficManager;
        let route = |prefix: &str, hops: &str| format!("  - {{prefix: {prefix}, next_hops: [{hops}]}}\n");
        let yaml = |routes: &str, groups: &str| {
            format!("{}  dlb: {{groups: [{groups}]}}\nroutes:\n{routes}", CONFIG.replace("  dlb: {mode: spray}\n", ""))
        };
        let config = crate::config::Config::from_yaml(&yaml(&route("10.9.0.0/16", "10.0.1.0, 10.0.2.0"), "")).unwrap();
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        let mut applied = apply(&mut sai, &config).unwrap();
        // The daemon's start: DLB from the shim's objects, all groups static.
        let tm_config = sai.backend().tm_config(sai.store()).unwrap().unwrap();
        let dlb = QosTrafficManager::new(&tm_config).unwrap().dlb(tm_config.dlb.clone());
        sai.backend_mut().set_path_quality(Some(Box::new(dlb)));
        let modes = |sai: &Sai<SoftBackend>| {
            let report = sai.backend().pipeline().path_quality_report().unwrap();
            report.groups.iter().map(|g| g.mode).collect::<Vec<_>>()
        };
        assert!(modes(&sai).is_empty());

        // A commit adds a route over eth1 and eth3, its group sprayed.
        let routes = route("10.9.0.0/16", "10.0.1.0, 10.0.2.0") + &route("10.8.0.0/16", "10.0.1.0, 10.0.3.0");
        let candidate =
            crate::config::Config::from_yaml(&yaml(&routes, "{next-hops: [10.0.1.0, 10.0.3.0], mode: spray}")).unwrap();
        crate::apply::reconcile(&mut sai, &mut applied, &candidate).unwrap();
        assert_eq!(modes(&sai), ["spray"]);
        // The next commit makes it flowlet, then removes the route (and the group).
        let candidate =
            crate::config::Config::from_yaml(&yaml(&routes, "{next-hops: [10.0.1.0, 10.0.3.0], mode: flowlet}"))
                .unwrap();
        crate::apply::reconcile(&mut sai, &mut applied, &candidate).unwrap();
        assert_eq!(modes(&sai), ["flowlet"]);
        crate::apply::reconcile(&mut sai, &mut applied, &config).unwrap();
        assert!(modes(&sai).is_empty());
    }

    /// Watchdog events handed to the soft backend come back as
    /// notifications naming the port's queue object.
    #[test]
    fn watchdog_events_become_queue_deadlock_notifications() {
        use qos::watchdog::{WatchdogEvent, WatchdogEventKind};
        use sai_shim::{Notification, PfcDeadlockEvent};

        let config = crate::config::Config::from_yaml(CONFIG).unwrap();
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        let applied = apply(&mut sai, &config).unwrap();
        sai.drain_notifications();
        let port = sai.backend().port_index(applied.ports["eth2"].port).unwrap();
        let slot = sai.backend().watchdog_events_slot();
        for (at, kind) in [(1, WatchdogEventKind::StormDetected), (2, WatchdogEventKind::StormRestored)] {
            slot.lock().unwrap().push(WatchdogEvent { at, port, queue: 3, kind });
        }
        let queue = applied.qos.queues[1][3];
        let port = applied.ports["eth2"].port;
        let deadlock = |event| Notification::QueuePfcDeadlock { queue, port, index: 3, event };
        assert_eq!(
            sai.drain_notifications(),
            vec![deadlock(PfcDeadlockEvent::Detected), deadlock(PfcDeadlockEvent::Recovered)]
        );
        assert!(sai.drain_notifications().is_empty());
    }

    #[test]
    fn no_qos_and_no_speed_means_no_traffic_manager() {
        let config = crate::config::Config::from_yaml(
            "name: s\nports: [{name: eth1, mode: routed, addresses: [10.0.1.1/31]}]\n",
        )
        .unwrap();
        assert!(config.qos.is_none());
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        apply(&mut sai, &config).unwrap();
        assert_eq!(sai.backend().tm_config(sai.store()).unwrap(), None);
    }

    /// Profiles are switch-wide in the soft backend: a port whose queue
    /// differs is refused when the traffic manager is built.
    #[test]
    fn per_port_profiles_are_refused_by_the_soft_backend() {
        let config = crate::config::Config::from_yaml(CONFIG).unwrap();
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        let applied = apply(&mut sai, &config).unwrap();
        let strict = sai.create_scheduler(&[SchedulerAttr::SchedulingType(SchedulingType::Strict)]).unwrap();
        sai.set_queue_attribute(applied.qos.queues[1][2], QueueAttr::SchedulerProfileId(Some(strict))).unwrap();
        assert!(matches!(sai.backend().tm_config(sai.store()), Err(SaiError::NotSupported(_))));
    }
}
