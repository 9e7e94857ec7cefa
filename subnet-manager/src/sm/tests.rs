use super::*;
use crate::fabric::Fabric;
use crate::interop::generate::FatTree;
use crate::routing::analyze;

const SHAPE: FatTree = FatTree::TwoLevel { leaves: 6, spines: 4, hosts_per_leaf: 5 };
const MS: u64 = 1_000_000;

fn config(engine: Engine, lmc: u8) -> SmConfig {
    SmConfig {
        routing: RoutingConfig { engines: vec![engine], lmc, ..RoutingConfig::default() },
        timeout_ns: 50 * MS,
        light_sweep_interval_ns: 1_000 * MS,
        ..SmConfig::default()
    }
}

fn node(fabric: &Fabric, name: &str) -> usize {
    fabric.topology.nodes.iter().position(|n| n.description == name).unwrap()
}

/// Brings `shape` up with an SM on host-0; returns the fabric, the SM and
/// the events.
fn bring_up(shape: FatTree, config: SmConfig) -> (Fabric, SubnetManager, Vec<SmEvent>, u64) {
    let mut fabric = Fabric::new(shape.build());
    let mut sm = SubnetManager::new(config, LidMap::default());
    let host = node(&fabric, "host-0");
    fabric.host_sm(host, 1, &mut sm);
    let mut now = 0;
    sm.start(now);
    let events = fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000);
    (fabric, sm, events, now)
}

#[test]
fn brings_a_fat_tree_up_and_every_pair_walks_the_agents_lfts() {
    for engine in [Engine::Ftree, Engine::Minhop, Engine::Updn, Engine::Dfsssp] {
        let (fabric, sm, events, _) = bring_up(SHAPE, config(engine, 0));
        assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{engine:?}: {events:?}");
        assert!(events.iter().any(|e| matches!(e, SmEvent::Discovered { switches: 10, cas: 30, .. })));
        assert_eq!(sm.phase(), Phase::Master);
        assert_eq!(fabric.check_all_pairs(), Ok(30 * 29), "{engine:?}");
        // The SM's own port got the first LID.
        assert_eq!(sm.sm_lid(), 1);
        let status = sm.status();
        assert_eq!((status.sm_state, status.lid, status.switches, status.cas), (SmState::Master, 1, 10, 30));
        assert_eq!(status.engine, Some(engine));
        assert_eq!(status.heavy_sweeps, 1);
        assert!(status.last_sweep_took_ns.is_some_and(|t| t > 0));
        assert_eq!(fabric.agents[node(&fabric, "host-0")].ports[1].lid, 1);
        let balance = analyze(sm.topology(), sm.lfts(), 0);
        assert_eq!(balance.unreachable_pairs, 0);
        if engine == Engine::Ftree {
            assert!(balance.worst_spread <= 1);
        }
    }
}

#[test]
fn lmc_gives_each_ca_port_aligned_lids_and_all_are_routed() {
    let (fabric, _, events, _) = bring_up(SHAPE, config(Engine::Ftree, 2));
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })));
    for (_, lid, lmc) in fabric.ca_lids() {
        assert_eq!(lmc, 2);
        assert_eq!(lid % 4, 0);
    }
    assert_eq!(fabric.check_all_pairs(), Ok(30 * 29 * 4));
}

#[test]
fn three_level_fat_tree_with_qos_tables() {
    let shape =
        FatTree::ThreeLevel { pods: 2, leaves_per_pod: 2, aggs_per_pod: 2, cores_per_group: 2, hosts_per_leaf: 2 };
    let (fabric, _, events, _) = bring_up(shape, SmConfig { program_qos: true, ..config(Engine::Ftree, 0) });
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{events:?}");
    assert_eq!(fabric.check_all_pairs(), Ok(8 * 7));
    // SL-to-VL set on a leaf: SL i -> VL i mod 8 (4 = VL0-7 operational).
    let leaf = node(&fabric, "leaf-0");
    let ports = fabric.agents[leaf].ports.len();
    let table = fabric.agents[leaf].sl2vl[ports + 3];
    assert_eq!(table, [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(fabric.agents[leaf].vl_arb[3][0][7].weight, 32);
}

#[test]
fn unanswered_and_dropped_smps_are_retried_reported_never_fatal() {
    let mut fabric = Fabric::new(SHAPE.build());
    let mut sm = SubnetManager::new(config(Engine::Ftree, 0), LidMap::default());
    let host = node(&fabric, "host-0");
    let dead = node(&fabric, "host-29");
    fabric.unresponsive.insert(dead);
    // The first SMP (the SM's own NodeInfo) is lost 3 times: the 4th try
    // (retries = 3) gets through.
    fabric.drop_next = 3;
    let mut now = 0;
    sm.start(now);
    let events = fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{events:?}");
    let failed: Vec<_> = events.iter().filter(|e| matches!(e, SmEvent::SmpFailed { .. })).collect();
    assert_eq!(failed.len(), 1, "the dead host's NodeInfo only: {failed:?}");
    assert!(matches!(
        failed[0],
        SmEvent::SmpFailed { what: "NodeInfo", failure: SmpFailure::Timeout { attempts: 4 }, .. }
    ));
    assert!(sm.requester_counters().retried >= 3 + 3, "{:?}", sm.requester_counters());
    assert!(events.iter().any(|e| matches!(e, SmEvent::Discovered { cas: 29, .. })));
    fabric.unresponsive.clear();
    // The other 29 hosts reach each other.
    let lids = fabric.ca_lids();
    assert_eq!(lids.len(), 29);
}

#[test]
fn a_switch_answering_bad_status_is_skipped_and_logged() {
    let mut fabric = Fabric::new(SHAPE.build());
    let leaf = node(&fabric, "leaf-5");
    fabric.agents[leaf].forced_status = Some(crate::packet::MadStatus(0x001c));
    let mut sm = SubnetManager::new(config(Engine::Minhop, 0), LidMap::default());
    let host = node(&fabric, "host-0");
    let mut now = 0;
    sm.start(now);
    let events = fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{events:?}");
    assert!(events.iter().any(|e| matches!(
        e,
        SmEvent::SmpFailed { failure: SmpFailure::BadStatus(crate::packet::MadStatus(0x001c)), .. }
    )));
    // Behind leaf-5 nothing was found: 25 hosts, 9 switches.
    assert!(events.iter().any(|e| matches!(e, SmEvent::Discovered { switches: 9, cas: 25, .. })), "{events:?}");
    fabric.agents[leaf].forced_status = None;
}

#[test]
fn a_failed_link_is_routed_around_rewriting_only_changed_blocks() {
    let (mut fabric, mut sm, _, mut now) = bring_up(SHAPE, config(Engine::Ftree, 0));
    let leaf = node(&fabric, "leaf-2");
    let spine_port = 5 + 1; // leaf-2's first up port
    let trap = fabric.link_down(PortRef { node: leaf, port: spine_port }, sm.sm_lid()).expect("a trap");
    now += 10 * MS;
    let failed_at = now;
    sm.handle_mad(now, &trap);
    let host = node(&fabric, "host-0");
    let events = fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::Trap { number: 128, .. })), "{events:?}");
    let reroute = events.iter().find_map(|e| match e {
        SmEvent::FabricUp { reroute_ns, .. } => *reroute_ns,
        _ => None,
    });
    let reroute = reroute.expect("reroute time reported");
    assert!(reroute > 0 && reroute <= now - failed_at);
    assert_eq!(fabric.check_all_pairs(), Ok(30 * 29), "no destination left unreachable");
    let blocks = events.iter().find_map(|e| match e {
        SmEvent::Programmed { lft_blocks, .. } => Some(*lft_blocks),
        _ => None,
    });
    // 10 switches x 1 block (40 LIDs): only some changed.
    assert!(blocks.unwrap() < 10, "{blocks:?}");
    assert!(blocks.unwrap() > 0);
    // A light sweep with nothing changed sends no Set at all.
    let before = sm.counters.lft_blocks_set;
    let next = sm.next_timer().unwrap();
    now = next;
    sm.handle_timer(now);
    let _ = fabric.run(&mut sm, host, 1, &mut now, 100 * MS, 1_000);
    assert_eq!(sm.counters.lft_blocks_set, before);
    // The trap's light sweep, then the interval's.
    assert_eq!(sm.counters.light_sweeps, 2);
}

#[test]
fn lids_persist_across_a_restart() {
    let (fabric, sm, _, _) = bring_up(SHAPE, config(Engine::Ftree, 0));
    let map = sm.lid_map().clone();
    let before: Vec<_> = fabric.ca_lids();
    // A new SM process on another host, given the persisted map.
    let mut fabric2 = Fabric::new(SHAPE.build());
    let mut sm2 = SubnetManager::new(config(Engine::Ftree, 0), map.clone());
    let host = node(&fabric2, "host-7");
    let mut now = 0;
    sm2.start(now);
    fabric2.run(&mut sm2, host, 1, &mut now, 60_000 * MS, 1_000);
    assert_eq!(fabric2.ca_lids(), before);
    assert_eq!(sm2.lid_map(), &map);
    assert!(!sm2.take_lids_changed());
}

#[test]
fn standby_polls_the_master_and_takes_over_when_it_dies() {
    let mut fabric = Fabric::new(SHAPE.build());
    let master_node = node(&fabric, "host-0");
    let standby_node = node(&fabric, "host-1");
    let mut master = SubnetManager::new(SmConfig { priority: 10, ..config(Engine::Ftree, 0) }, LidMap::default());
    let mut standby = SubnetManager::new(SmConfig { priority: 1, ..config(Engine::Ftree, 0) }, LidMap::default());
    fabric.host_sm(master_node, 1, &mut master);
    fabric.host_sm(standby_node, 1, &mut standby);
    let mut now = 0;
    master.start(now);
    let events = fabric.run(&mut master, master_node, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })));
    standby.start(now);
    let events = fabric.run(&mut standby, standby_node, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::BecameStandby { .. })), "{events:?}");
    assert_eq!(standby.phase(), Phase::Standby);
    assert_eq!(fabric.sm_state(standby_node), Some(SmState::Standby));
    // Polls answered: still standby after a few intervals.
    for _ in 0..3 {
        now = standby.next_timer().unwrap();
        standby.handle_timer(now);
        fabric.run(&mut standby, standby_node, 1, &mut now, 10 * MS, 1_000);
    }
    assert_eq!(standby.phase(), Phase::Standby);
    // The master's host dies (its link goes down); the standby's polls go
    // unanswered and it takes over.
    let sm_lid = master.sm_lid();
    fabric.link_down(PortRef { node: master_node, port: 1 }, sm_lid);
    let mut took_over = Vec::new();
    for _ in 0..10 {
        let Some(at) = standby.next_timer() else { break };
        now = at;
        standby.handle_timer(now);
        took_over.extend(fabric.run(&mut standby, standby_node, 1, &mut now, 60_000 * MS, 1_000));
        if took_over.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })) {
            break;
        }
    }
    assert!(took_over.iter().any(|e| matches!(e, SmEvent::BecameMaster)), "{took_over:?}");
    assert!(took_over.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })));
    assert_eq!(standby.phase(), Phase::Master);
    assert_eq!(fabric.sm_state(standby_node), Some(SmState::Master));
}

#[test]
fn switch_embedded_sms_fail_over_keep_every_lid_and_hand_back_with_acknowledge() {
    // Two SMs on switches' port 0, started together: the lower one finds
    // the higher still discovering and stands by; the higher comes up.
    let mut fabric = Fabric::new(SHAPE.build());
    let (high_node, low_node) = (node(&fabric, "spine-0"), node(&fabric, "leaf-1"));
    let mut high = SubnetManager::new(SmConfig { priority: 9, ..config(Engine::Updn, 0) }, LidMap::default());
    let mut low = SubnetManager::new(SmConfig { priority: 4, ..config(Engine::Updn, 0) }, LidMap::default());
    let mut now = 0;
    high.start(now);
    low.start(now);
    fabric.host_sm(high_node, 0, &mut high);
    fabric.host_sm(low_node, 0, &mut low);
    assert_eq!(fabric.sm_state(high_node), Some(SmState::Discovering));
    let events = fabric.run(&mut low, low_node, 0, &mut now, 60_000 * MS, 1_000);
    // (The higher SM has not learnt its own GUID yet: it published 0.)
    assert!(events.iter().any(|e| matches!(e, SmEvent::BecameStandby { .. })), "{events:?}");
    let events = fabric.run(&mut high, high_node, 0, &mut now, 60_000 * MS, 1_000);
    let high_guid = fabric.topology.nodes[high_node].ports[0].guid;
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{events:?}");
    assert_eq!(
        (fabric.sm_state(high_node), fabric.sm_state(low_node)),
        (Some(SmState::Master), Some(SmState::Standby))
    );
    assert_eq!(fabric.check_all_pairs(), Ok(30 * 29));
    let lids = fabric.ca_lids();

    // The master's switch dies: the standby's polls go unanswered, it takes
    // over, every host still connects and no LID moves (its map was empty:
    // it keeps what the ports hold).
    fabric.unresponsive.insert(high_node);
    let mut took_over = Vec::new();
    for _ in 0..10 {
        let Some(at) = low.next_timer() else { break };
        now = at;
        low.handle_timer(now);
        took_over.extend(fabric.run(&mut low, low_node, 0, &mut now, 60_000 * MS, 1_000));
        if took_over.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })) {
            break;
        }
    }
    assert!(took_over.contains(&SmEvent::BecameMaster), "{took_over:?}");
    assert!(took_over.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{took_over:?}");
    assert_eq!(low.status().switches, 9, "the dead spine is out of the fabric");
    assert_eq!(fabric.ca_lids(), lids);
    assert_eq!(fabric.check_all_pairs(), Ok(30 * 29));

    // It comes back with a fresh SM: it finds a master and stands by, the
    // master learns of it (a link event), hands over, and the new master
    // acknowledges; again no LID moves.
    fabric.unresponsive.remove(&high_node);
    let mut high = SubnetManager::new(SmConfig { priority: 9, ..config(Engine::Updn, 0) }, LidMap::default());
    high.start(now);
    fabric.host_sm(high_node, 0, &mut high);
    let events = fabric.run(&mut high, high_node, 0, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::BecameStandby { .. })), "{events:?}");
    low.link_changed(now);
    let events = fabric.run(&mut low, low_node, 0, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{events:?}");
    now = low.next_timer().unwrap();
    low.handle_timer(now);
    let events = fabric.run(&mut low, low_node, 0, &mut now, 60_000 * MS, 1_000);
    assert!(events.contains(&SmEvent::HandedOver { to_guid: high_guid }), "{events:?}");
    let events = fabric.run(&mut high, high_node, 0, &mut now, 60_000 * MS, 1_000);
    assert!(events.contains(&SmEvent::BecameMaster), "{events:?}");
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{events:?}");
    let events = fabric.run(&mut low, low_node, 0, &mut now, 10 * MS, 1_000);
    assert!(events.contains(&SmEvent::HandoverAcknowledged), "{events:?}");
    assert_eq!(
        (fabric.sm_state(high_node), fabric.sm_state(low_node)),
        (Some(SmState::Master), Some(SmState::Standby))
    );
    assert_eq!(low.status().master_guid, Some(high_guid));
    assert_eq!(fabric.ca_lids(), lids);
    assert_eq!(fabric.check_all_pairs(), Ok(30 * 29));
}

#[test]
fn a_sweep_that_finds_nothing_is_tried_again() {
    let mut fabric = Fabric::new(SHAPE.build());
    let mut sm = SubnetManager::new(config(Engine::Ftree, 0), LidMap::default());
    let host = node(&fabric, "host-0");
    fabric.drop_next = 4;
    let mut now = 0;
    sm.start(now);
    let first = fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000);
    assert!(first.iter().any(|e| matches!(e, SmEvent::RoutingFailed(_))), "{first:?}");
    now = sm.next_timer().expect("a retry is scheduled");
    sm.handle_timer(now);
    let second = fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000);
    assert!(second.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{second:?}");
    assert_eq!(fabric.check_all_pairs(), Ok(30 * 29));
}

#[test]
fn a_master_hands_over_to_a_standby_of_higher_priority() {
    let mut fabric = Fabric::new(SHAPE.build());
    let old_node = node(&fabric, "host-0");
    let new_node = node(&fabric, "host-1");
    let mut old = SubnetManager::new(SmConfig { priority: 1, ..config(Engine::Ftree, 0) }, LidMap::default());
    let mut new = SubnetManager::new(SmConfig { priority: 12, ..config(Engine::Ftree, 0) }, LidMap::default());
    fabric.host_sm(old_node, 1, &mut old);
    fabric.host_sm(new_node, 1, &mut new);
    let mut now = 0;
    old.start(now);
    let events = fabric.run(&mut old, old_node, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })));
    // The newcomer finds a master: standby, though its priority is higher.
    new.start(now);
    let events = fabric.run(&mut new, new_node, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::BecameStandby { .. })), "{events:?}");
    // The master's light sweep polls the SM ports its heavy sweep found,
    // sees a standby of higher priority and hands over.
    now = old.next_timer().unwrap();
    old.handle_timer(now);
    let events = fabric.run(&mut old, old_node, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::HandedOver { .. })), "{events:?}");
    assert_eq!(old.phase(), Phase::Standby);
    // The new master takes the control from its agent and sweeps.
    let events = fabric.run(&mut new, new_node, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::BecameMaster)), "{events:?}");
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{events:?}");
    assert_eq!(fabric.sm_state(new_node), Some(SmState::Master));
    assert_eq!(fabric.sm_state(old_node), Some(SmState::Standby));
    // The new master's ACKNOWLEDGE reaches the old one.
    let events = fabric.run(&mut old, old_node, 1, &mut now, 10 * MS, 1_000);
    assert!(events.contains(&SmEvent::HandoverAcknowledged), "{events:?}");
    assert_eq!(fabric.check_all_pairs(), Ok(30 * 29));
}

#[test]
fn a_change_seen_by_a_light_sweep_brings_a_heavy_sweep_even_with_smps_still_out() {
    // Light sweeps (100 ms) come faster than an unanswered SMP gives up
    // (4 x 50 ms), as with OpenSM's defaults on a large fabric.
    let config = SmConfig { light_sweep_interval_ns: 100 * MS, ..config(Engine::Updn, 0) };
    let (mut fabric, mut sm, _, _) = bring_up(SHAPE, config);
    let host = node(&fabric, "host-0");
    // A link goes down, no trap reaches the SM; a switch behind a dead
    // node keeps timing out on every light sweep.
    let leaf = node(&fabric, "leaf-3");
    fabric.link_down(PortRef { node: leaf, port: 6 }, sm.sm_lid());
    fabric.unresponsive.insert(node(&fabric, "leaf-5"));
    let mut events = Vec::new();
    for _ in 0..20 {
        let Some(mut now) = sm.next_timer() else { break };
        sm.handle_timer(now);
        events.extend(fabric.run(&mut sm, host, 1, &mut now, 90 * MS, 1_000));
        if events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })) {
            break;
        }
    }
    assert!(events.iter().any(|e| matches!(e, SmEvent::ChangeDetected)), "{events:?}");
    let reroute = events.iter().find_map(|e| match e {
        SmEvent::FabricUp { reroute_ns, .. } => *reroute_ns,
        _ => None,
    });
    assert!(reroute.is_some(), "{events:?}");
    assert_eq!(sm.counters.heavy_sweeps, 2);
}

#[test]
fn sm_info_names_the_sm_port_before_discovery() {
    let mut fabric = Fabric::new(SHAPE.build());
    let host = node(&fabric, "host-0");
    let mut sm = SubnetManager::new(config(Engine::Ftree, 0), LidMap::default());
    fabric.host_sm(host, 1, &mut sm);
    let port_guid = fabric.topology.nodes[host].ports[1].guid;
    assert_ne!(port_guid, 0);
    assert_eq!(fabric.agents[host].sm_info.map(|i| i.guid), Some(port_guid), "no GUID 0 before the first answer");
    sm.start(0);
    assert_eq!(sm.sm_info().guid, port_guid);
}

#[test]
fn sms_with_different_sm_keys_ignore_each_other() {
    let mut fabric = Fabric::new(SHAPE.build());
    let a_node = node(&fabric, "host-0");
    let b_node = node(&fabric, "host-1");
    let keyed = |priority, sm_key| SmConfig { priority, sm_key, ..config(Engine::Ftree, 0) };
    let mut a = SubnetManager::new(keyed(1, 0xa), LidMap::default());
    let mut b = SubnetManager::new(keyed(12, 0xb), LidMap::default());
    fabric.host_sm(a_node, 1, &mut a);
    fabric.host_sm(b_node, 1, &mut b);
    let mut now = 0;
    a.start(now);
    let events = fabric.run(&mut a, a_node, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })));
    // a's sweep found b's port (IsSM), read its SMInfo with the key zeroed.
    assert!(events.iter().any(|e| matches!(e, SmEvent::SmKeyMismatch { .. })), "{events:?}");
    // b finds a master whose SMInfo comes back with the key zeroed: not
    // its subnet's SM, so b does not stand by.
    b.start(now);
    let events = fabric.run(&mut b, b_node, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::SmKeyMismatch { .. })), "{events:?}");
    assert!(!events.iter().any(|e| matches!(e, SmEvent::BecameStandby { .. })), "{events:?}");
    assert_eq!(b.counters.sm_key_mismatches, 1);
    // b has the higher priority, but another key: a's light sweep hands
    // nothing over to it.
    now = a.next_timer().unwrap();
    a.handle_timer(now);
    let events = fabric.run(&mut a, a_node, 1, &mut now, 100 * MS, 1_000);
    assert!(!events.iter().any(|e| matches!(e, SmEvent::HandedOver { .. })), "{events:?}");
    assert_eq!(a.phase(), Phase::Master);
    assert!(fabric.agents[a_node].counters.sm_key_mismatches > 0);
    // The same key: b stands by as before.
    let mut c = SubnetManager::new(keyed(12, 0xa), LidMap::default());
    let c_node = node(&fabric, "host-2");
    fabric.host_sm(c_node, 1, &mut c);
    c.start(now);
    let events = fabric.run(&mut c, c_node, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::BecameStandby { .. })), "{events:?}");
}

#[test]
fn the_sm_protects_ports_with_its_m_key_and_keeps_managing_them() {
    const M_KEY: u64 = 0x0123_4567_89ab_cdef;
    let keyed = SmConfig { m_key: M_KEY, m_key_protect_bits: 2, m_key_lease_period: 60, ..config(Engine::Ftree, 0) };
    let (mut fabric, mut sm, events, mut now) = bring_up(SHAPE, keyed);
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{events:?}");
    for (index, node) in fabric.topology.nodes.iter().enumerate() {
        let port = if node.is_switch() { 0 } else { 1 };
        let info = fabric.agents[index].ports[port];
        assert_eq!(
            (info.m_key, info.m_key_protect_bits, info.m_key_lease_period),
            (M_KEY, 2, 60),
            "{}",
            node.description
        );
    }
    // Protection is on: a Get with M_Key 0 is refused (level 2) ...
    let leaf = node(&fabric, "leaf-2");
    let mut probe = SmpRepr::directed(Method::Get, 1, AttributeId::PortInfo, 0, &[], [0; DATA_LEN]).unwrap();
    assert!(!fabric.agents[leaf].process(0, &[], &mut probe));
    let violations_before: u64 = fabric.agents.iter().map(|a| a.counters.m_key_violations).sum();
    assert_eq!(violations_before, 1, "the probe's only");
    // ... while the SM, carrying the key, reroutes round a failed link.
    let trap = fabric.link_down(PortRef { node: leaf, port: 6 }, sm.sm_lid()).expect("a trap");
    now += 10 * MS;
    sm.handle_mad(now, &trap);
    let host = node(&fabric, "host-0");
    let events = fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { reroute_ns: Some(_), .. })), "{events:?}");
    assert!(!events.iter().any(|e| matches!(e, SmEvent::SmpFailed { .. })), "{events:?}");
    let violations: u64 = fabric.agents.iter().map(|a| a.counters.m_key_violations).sum();
    assert_eq!(violations, violations_before);
    assert_eq!(fabric.check_all_pairs(), Ok(30 * 29));
}

fn trap(number: u16, issuer_lid: u16) -> [u8; crate::packet::MAD_LEN] {
    let notice = NoticeRepr { trap_number: number, ..NoticeRepr::link_state_change(issuer_lid) };
    let mut data = [0u8; DATA_LEN];
    notice.emit(&mut Notice::new_unchecked(&mut data[..]));
    SmpRepr::lid_routed(Method::Trap, 9, AttributeId::Notice, 0, data).to_bytes()
}

#[test]
fn a_bad_m_key_trap_is_counted_without_a_sweep_and_trap_128_sweeps_lightly_first() {
    let (mut fabric, mut sm, _, mut now) = bring_up(SHAPE, config(Engine::Ftree, 0));
    let host = node(&fabric, "host-0");
    let leaf = node(&fabric, "leaf-2");
    let leaf_lid = fabric.agents[leaf].ports[0].lid;
    now += 10 * MS;
    sm.handle_mad(now, &trap(TRAP_BAD_M_KEY, leaf_lid));
    let events = fabric.run(&mut sm, host, 1, &mut now, 100 * MS, 1_000);
    assert!(events.contains(&SmEvent::SecurityTrap { number: 256, issuer_lid: leaf_lid }), "{events:?}");
    assert!(!events.iter().any(|e| matches!(e, SmEvent::SweepStarted { .. } | SmEvent::ChangeDetected)), "{events:?}");
    assert_eq!((sm.counters.security_traps, sm.counters.heavy_sweeps), (1, 1));
    // Trap 128 with nothing changed (no PortStateChange): a light sweep
    // and no more.
    sm.handle_mad(now, &trap(TRAP_LINK_STATE_CHANGE, leaf_lid));
    let events = fabric.run(&mut sm, host, 1, &mut now, 100 * MS, 1_000);
    assert!(events.contains(&SmEvent::SweepStarted { heavy: false, sweep: 1 }), "{events:?}");
    assert_eq!((sm.counters.light_sweeps, sm.counters.heavy_sweeps), (1, 1));
    // A real link failure: the light sweep sees PortStateChange, then heavy.
    let trap = fabric.link_down(PortRef { node: leaf, port: 6 }, sm.sm_lid()).expect("a trap");
    sm.handle_mad(now, &trap);
    let events = fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { sweep: 2, .. })), "{events:?}");
    assert_eq!((sm.counters.light_sweeps, sm.counters.heavy_sweeps), (2, 2));
    assert_eq!(fabric.check_all_pairs(), Ok(30 * 29));
}

#[test]
fn a_trap_during_discovery_is_not_lost_and_does_not_restart_the_sweep() {
    let mut fabric = Fabric::new(SHAPE.build());
    let host = node(&fabric, "host-0");
    let mut sm = SubnetManager::new(config(Engine::Ftree, 0), LidMap::default());
    fabric.host_sm(host, 1, &mut sm);
    let mut now = 0;
    sm.start(now);
    // A few SMPs of the discovery go out and come back ...
    for _ in 0..3 {
        let out = sm.poll_transmit(now).expect("discovery SMPs");
        if let Some(answer) = fabric.carry(host, 1, &out) {
            sm.handle_mad(now, &answer);
        }
    }
    assert_eq!(sm.phase(), Phase::Discovering);
    // ... then a link fails and its trap arrives mid-sweep.
    let leaf = node(&fabric, "leaf-2");
    let trap = fabric.link_down(PortRef { node: leaf, port: 6 }, 0).expect("a trap");
    sm.handle_mad(now, &trap);
    let events = fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000);
    let sweeps: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            SmEvent::SweepStarted { heavy: true, sweep } | SmEvent::FabricUp { sweep, .. } => Some(*sweep),
            _ => None,
        })
        .collect();
    // Sweep 1 goes on to the end; it may have read leaf-2 before the
    // failure, so sweep 2 starts at once after it.
    assert_eq!(sweeps, [1, 1, 2], "{events:?}");
    assert!(matches!(events.last(), Some(SmEvent::SweepStarted { heavy: true, sweep: 2 })), "{events:?}");
    assert_eq!(sm.phase(), Phase::Discovering, "a second sweep follows");
    let events = fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { sweep: 2, .. })), "{events:?}");
    assert_eq!(fabric.check_all_pairs(), Ok(30 * 29));
}

#[test]
fn a_port_that_trains_while_the_sweep_programs_is_armed_by_the_next_sweep() {
    // The two ends of a leaf-spine link finish training at different
    // times: the sweep reads the spine's end Down (the leaf's end Init, so
    // the link is known), and the spine's end comes up while the sweep
    // programs the tables. Its PortStateChange must survive the sweep, so
    // that a light sweep finds it and a heavy sweep arms it.
    let mut fabric = Fabric::new(SHAPE.build());
    let leaf = node(&fabric, "leaf-1");
    let spine_end = fabric.topology.nodes[leaf].ports[6].remote.expect("leaf-1 port 6 goes to a spine");
    fabric.hold_port_down(spine_end);
    fabric.train_on_next_lft_set.push(spine_end);
    let mut sm = SubnetManager::new(config(Engine::Ftree, 0), LidMap::default());
    let host = node(&fabric, "host-0");
    fabric.host_sm(host, 1, &mut sm);
    let mut now = 0;
    sm.start(now);
    let first = fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000);
    assert!(first.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{first:?}");
    assert!(fabric.train_on_next_lft_set.is_empty(), "the port trained during the sweep");
    let port_state = |fabric: &Fabric| fabric.agents[spine_end.node].ports[usize::from(spine_end.port)].state();
    assert_eq!(port_state(&fabric), PortState::Init, "trained after the sweep armed ports");
    for _ in 0..5 {
        let Some(at) = sm.next_timer() else { break };
        now = now.max(at);
        sm.handle_timer(now);
        fabric.run(&mut sm, host, 1, &mut now, 5_000 * MS, 1_000);
        if port_state(&fabric) == PortState::Active {
            break;
        }
    }
    assert_eq!(port_state(&fabric), PortState::Active, "the light sweep saw the change, a heavy sweep armed it");
    assert_eq!(sm.counters.heavy_sweeps, 2);
}

mod reconfigure;
