//! [`SubnetManager::reconfigure`]: new settings taken by a running SM.

use super::*;

/// Every switch's LFT as its agent holds it.
fn switch_lfts(fabric: &Fabric) -> Vec<Vec<u8>> {
    fabric.agents.iter().filter_map(|agent| agent.switch.as_ref().map(|s| s.lft.clone())).collect()
}

#[test]
fn a_new_routing_engine_sweeps_heavily_at_once_and_rewrites_the_lfts() {
    let (mut fabric, mut sm, _, mut now) = bring_up(SHAPE, config(Engine::Minhop, 0));
    let before = switch_lfts(&fabric);
    let sweeps = sm.status().heavy_sweeps;
    now += 10 * MS;
    let done = sm.reconfigure(now, config(Engine::Ftree, 0)).unwrap();
    assert!(done.heavy_sweep && !done.priority, "{done:?}");
    let host = node(&fabric, "host-0");
    let events = fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.contains(&SmEvent::SweepStarted { heavy: true, sweep: sweeps + 1 }), "{events:?}");
    assert!(events.iter().any(|e| matches!(e, SmEvent::Routed { engine: Engine::Ftree, .. })), "{events:?}");
    let blocks = events.iter().find_map(|e| match e {
        SmEvent::Programmed { lft_blocks, .. } => Some(*lft_blocks),
        _ => None,
    });
    assert!(blocks.is_some_and(|b| b > 0), "{events:?}");
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{events:?}");
    assert_eq!(sm.status().engine, Some(Engine::Ftree));
    assert_eq!(sm.config().routing.engines, vec![Engine::Ftree]);
    let after = switch_lfts(&fabric);
    assert_ne!(before, after, "the switches hold the new engine's LFTs");
    assert_eq!(fabric.check_all_pairs(), Ok(30 * 29));
    // The same settings again change nothing and send nothing.
    let done = sm.reconfigure(now, config(Engine::Ftree, 0)).unwrap();
    assert_eq!(done, Reconfigured::default());
    assert_eq!(sm.poll_transmit(now), None);
}

#[test]
fn a_new_engine_given_during_a_sweep_routes_the_sweep_after_it() {
    let mut fabric = Fabric::new(SHAPE.build());
    let mut sm = SubnetManager::new(config(Engine::Minhop, 0), LidMap::default());
    let host = node(&fabric, "host-0");
    fabric.host_sm(host, 1, &mut sm);
    let mut now = 0;
    sm.start(now);
    // Mid-discovery: the sweep in progress goes on, another follows it.
    assert_eq!(sm.phase(), Phase::Discovering);
    let done = sm.reconfigure(now, config(Engine::Ftree, 0)).unwrap();
    assert!(done.heavy_sweep);
    let mut events = Vec::new();
    for _ in 0..4 {
        events.extend(fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000));
        if events.iter().filter(|e| matches!(e, SmEvent::FabricUp { .. })).count() == 2 {
            break;
        }
    }
    let ups = events.iter().filter(|e| matches!(e, SmEvent::FabricUp { .. })).count();
    assert_eq!(ups, 2, "{events:?}");
    assert_eq!(sm.status().engine, Some(Engine::Ftree));
    assert_eq!(fabric.check_all_pairs(), Ok(30 * 29));
}

#[test]
fn a_master_whose_priority_falls_below_a_standby_hands_over_at_once() {
    let mut fabric = Fabric::new(SHAPE.build());
    let (master_node, standby_node) = (node(&fabric, "spine-0"), node(&fabric, "leaf-1"));
    let mut master = SubnetManager::new(SmConfig { priority: 9, ..config(Engine::Updn, 0) }, LidMap::default());
    let mut standby = SubnetManager::new(SmConfig { priority: 4, ..config(Engine::Updn, 0) }, LidMap::default());
    fabric.host_sm(master_node, 0, &mut master);
    fabric.host_sm(standby_node, 0, &mut standby);
    let mut now = 0;
    master.start(now);
    let events = fabric.run(&mut master, master_node, 0, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{events:?}");
    standby.start(now);
    let events = fabric.run(&mut standby, standby_node, 0, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::BecameStandby { .. })), "{events:?}");
    let lids = fabric.ca_lids();
    let standby_guid = fabric.topology.nodes[standby_node].ports[0].guid;
    let master_guid = fabric.topology.nodes[master_node].ports[0].guid;

    // Priority 9 -> 2, below the standby's 4: no light-sweep interval to
    // wait for, the master polls the standby now and hands over (IBA 14.4.2).
    let interval_ends = master.next_timer().unwrap();
    let done = master.reconfigure(now, SmConfig { priority: 2, ..config(Engine::Updn, 0) }).unwrap();
    assert!(done.priority && !done.heavy_sweep, "{done:?}");
    assert_eq!(master.sm_info().priority, 2);
    let events = fabric.run(&mut master, master_node, 0, &mut now, 60_000 * MS, 1_000);
    assert!(events.contains(&SmEvent::HandedOver { to_guid: standby_guid }), "{events:?}");
    assert!(now < interval_ends, "handed over before the next light sweep");
    assert_eq!(master.phase(), Phase::Standby);
    let events = fabric.run(&mut standby, standby_node, 0, &mut now, 60_000 * MS, 1_000);
    assert!(events.contains(&SmEvent::BecameMaster), "{events:?}");
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{events:?}");
    let events = fabric.run(&mut master, master_node, 0, &mut now, 10 * MS, 1_000);
    assert!(events.contains(&SmEvent::HandoverAcknowledged), "{events:?}");
    assert_eq!(
        (fabric.sm_state(standby_node), fabric.sm_state(master_node)),
        (Some(SmState::Master), Some(SmState::Standby))
    );
    assert_eq!(master.status().master_guid, Some(standby_guid));
    assert_eq!(fabric.ca_lids(), lids, "no LID moved");
    assert_eq!(fabric.check_all_pairs(), Ok(30 * 29));

    // The old master's priority back above: it stands by until the new
    // master's light sweep finds it higher, which hands back.
    let done = master.reconfigure(now, SmConfig { priority: 9, ..config(Engine::Updn, 0) }).unwrap();
    assert!(done.priority);
    fabric.run(&mut master, master_node, 0, &mut now, 10 * MS, 1_000);
    assert_eq!(master.phase(), Phase::Standby, "a standby never takes mastership itself");
    now = standby.next_timer().unwrap();
    standby.handle_timer(now);
    let events = fabric.run(&mut standby, standby_node, 0, &mut now, 60_000 * MS, 1_000);
    assert!(events.contains(&SmEvent::HandedOver { to_guid: master_guid }), "{events:?}");
    let events = fabric.run(&mut master, master_node, 0, &mut now, 60_000 * MS, 1_000);
    assert!(events.contains(&SmEvent::BecameMaster), "{events:?}");
    assert_eq!(fabric.sm_state(master_node), Some(SmState::Master));
    assert_eq!(fabric.check_all_pairs(), Ok(30 * 29));
}

#[test]
fn a_shorter_sweep_interval_brings_the_next_light_sweep_closer() {
    let (_, mut sm, _, now) = bring_up(SHAPE, config(Engine::Ftree, 0));
    assert_eq!(sm.next_timer(), Some(now + 1_000 * MS));
    let done = sm.reconfigure(now, SmConfig { light_sweep_interval_ns: 100 * MS, ..config(Engine::Ftree, 0) });
    assert_eq!(done, Ok(Reconfigured { sweep_interval: true, ..Reconfigured::default() }));
    assert_eq!(sm.next_timer(), Some(now + 100 * MS));
}

#[test]
fn qos_tables_switched_on_are_programmed_by_the_sweep_it_brings() {
    let (mut fabric, mut sm, _, mut now) = bring_up(SHAPE, config(Engine::Ftree, 0));
    let leaf = node(&fabric, "leaf-0");
    let ports = fabric.agents[leaf].ports.len();
    let before = fabric.agents[leaf].sl2vl[ports + 6];
    let done = sm.reconfigure(now, SmConfig { program_qos: true, ..config(Engine::Ftree, 0) }).unwrap();
    assert!(done.heavy_sweep);
    let host = node(&fabric, "host-0");
    let events = fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000);
    let other_sets = events.iter().find_map(|e| match e {
        SmEvent::Programmed { other_sets, .. } => Some(*other_sets),
        _ => None,
    });
    assert!(other_sets.is_some_and(|n| n > 10 * 5), "SL-to-VL and VL arbitration Sets: {events:?}");
    let after = fabric.agents[leaf].sl2vl[ports + 6];
    assert_eq!(after, [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7], "was {before:?}");
}

#[test]
fn a_first_m_key_is_given_live_and_a_key_over_it_is_refused_whole() {
    const M_KEY: u64 = 0x0123_4567_89ab_cdef;
    let (mut fabric, mut sm, _, mut now) = bring_up(SHAPE, config(Engine::Ftree, 0));
    let keyed = SmConfig { m_key: M_KEY, m_key_protect_bits: 2, m_key_lease_period: 60, ..config(Engine::Ftree, 0) };
    assert!(sm.reconfigure(now, keyed.clone()).unwrap().heavy_sweep);
    let host = node(&fabric, "host-0");
    let events = fabric.run(&mut sm, host, 1, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{events:?}");
    for (index, node) in fabric.topology.nodes.iter().enumerate() {
        let port = if node.is_switch() { 0 } else { 1 };
        assert_eq!(fabric.agents[index].ports[port].m_key, M_KEY, "{}", node.description);
    }
    let other = SmConfig { m_key: 0x42, priority: 3, ..keyed.clone() };
    let refused = sm.reconfigure(now, other).unwrap_err();
    assert!(refused.contains("M_Key"), "{refused}");
    assert_eq!(sm.config(), &keyed, "refused whole: the priority did not change either");
}

#[test]
fn a_standby_whose_poll_sees_the_handover_first_still_acknowledges_it() {
    let mut fabric = Fabric::new(SHAPE.build());
    let (master_node, standby_node) = (node(&fabric, "spine-0"), node(&fabric, "leaf-1"));
    let mut master = SubnetManager::new(SmConfig { priority: 9, ..config(Engine::Updn, 0) }, LidMap::default());
    let mut standby = SubnetManager::new(SmConfig { priority: 4, ..config(Engine::Updn, 0) }, LidMap::default());
    fabric.host_sm(master_node, 0, &mut master);
    fabric.host_sm(standby_node, 0, &mut standby);
    let mut now = 0;
    master.start(now);
    fabric.run(&mut master, master_node, 0, &mut now, 60_000 * MS, 1_000);
    standby.start(now);
    let events = fabric.run(&mut standby, standby_node, 0, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::BecameStandby { .. })), "{events:?}");
    // The standby's priority rises above the master's.
    standby.reconfigure(now, SmConfig { priority: 12, ..config(Engine::Updn, 0) }).unwrap();
    fabric.agents[standby_node].sm_info = Some(standby.sm_info());
    // Its poll of the master goes out ...
    now = standby.next_timer().unwrap().max(master.next_timer().unwrap());
    standby.handle_timer(now);
    let poll = standby.poll_transmit(now).expect("the master poll");
    // ... the master's light sweep hands over meanwhile ...
    master.handle_timer(now);
    let events = fabric.run(&mut master, master_node, 0, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::HandedOver { .. })), "{events:?}");
    // ... and the poll's answer, the master standing by, is taken before
    // the HANDOVER the agent holds: the standby takes over by itself.
    let answer = fabric.carry(standby_node, 0, &poll).expect("an answer");
    standby.handle_mad(now, &answer);
    assert_eq!(standby.poll_event(), Some(SmEvent::BecameMaster));
    // The HANDOVER is acknowledged all the same.
    let events = fabric.run(&mut standby, standby_node, 0, &mut now, 60_000 * MS, 1_000);
    assert!(events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. })), "{events:?}");
    assert_eq!(events.iter().filter(|e| matches!(e, SmEvent::BecameMaster)).count(), 0, "{events:?}");
    let events = fabric.run(&mut master, master_node, 0, &mut now, 10 * MS, 1_000);
    assert!(events.contains(&SmEvent::HandoverAcknowledged), "{events:?}");
    assert_eq!(
        (fabric.sm_state(standby_node), fabric.sm_state(master_node)),
        (Some(SmState::Master), Some(SmState::Standby))
    );
}

#[test]
fn an_acknowledge_overtaking_the_handover_answer_is_kept() {
    let mut fabric = Fabric::new(SHAPE.build());
    let (master_node, standby_node) = (node(&fabric, "spine-0"), node(&fabric, "leaf-1"));
    let mut master = SubnetManager::new(SmConfig { priority: 9, ..config(Engine::Updn, 0) }, LidMap::default());
    let mut standby = SubnetManager::new(SmConfig { priority: 4, ..config(Engine::Updn, 0) }, LidMap::default());
    fabric.host_sm(master_node, 0, &mut master);
    fabric.host_sm(standby_node, 0, &mut standby);
    let mut now = 0;
    master.start(now);
    fabric.run(&mut master, master_node, 0, &mut now, 60_000 * MS, 1_000);
    standby.start(now);
    fabric.run(&mut standby, standby_node, 0, &mut now, 60_000 * MS, 1_000);
    master.reconfigure(now, SmConfig { priority: 2, ..config(Engine::Updn, 0) }).unwrap();
    // The HANDOVER goes out; the standby takes it and acknowledges, and
    // that ACKNOWLEDGE (by another path) arrives before the answer.
    let handover = loop {
        let out = master.poll_transmit(now).expect("SMPs until the HANDOVER");
        let smp = SmpRepr::parse_bytes(&out.bytes).unwrap();
        if smp.method == Method::Set && smp.attribute_id == AttributeId::SmInfo {
            break out;
        }
        let answer = fabric.carry(master_node, 0, &out).expect("an answer");
        master.handle_mad(now, &answer);
    };
    let answer = fabric.carry(master_node, 0, &handover).expect("an answer");
    let events = fabric.run(&mut standby, standby_node, 0, &mut now, 60_000 * MS, 1_000);
    assert!(events.contains(&SmEvent::BecameMaster), "{events:?}");
    let control = fabric.agents[master_node].sm_control.take().expect("the ACKNOWLEDGE");
    while master.poll_event().is_some() {}
    master.handle_sm_control(now, control);
    assert_eq!((master.phase(), master.poll_event()), (Phase::Master, None), "the answer has not come");
    master.handle_mad(now, &answer);
    let events: Vec<SmEvent> = std::iter::from_fn(|| master.poll_event()).collect();
    assert!(
        matches!(
            events[..],
            [SmEvent::HandedOver { .. }, SmEvent::BecameStandby { .. }, SmEvent::HandoverAcknowledged]
        ),
        "{events:?}"
    );
}
