use super::*;
use crate::packet::attributes::{NodeType, Notice, NoticeRepr, PortState, SmState};
use crate::packet::smp::SmpRouting;
use crate::topology::{PortRef, Topology};

/// A switch with a CA on port 2.
fn switch_and_ca() -> (Topology, Agent, Agent) {
    let mut topology = Topology::new();
    let s = topology.add_node(Node::new(0x10, NodeKind::Switch, 4, "sw")).unwrap();
    let h = topology.add_node(Node::new(0x20, NodeKind::Ca, 1, "ca")).unwrap();
    topology.nodes[h].ports[1].guid = 0x21;
    topology.connect(PortRef { node: s, port: 2 }, PortRef { node: h, port: 1 }).unwrap();
    let switch = Agent::new(&topology.nodes[s]);
    let ca = Agent::new(&topology.nodes[h]);
    (topology, switch, ca)
}

fn get(attribute: AttributeId, modifier: u32, path: &[u8]) -> SmpRepr {
    SmpRepr::directed(Method::Get, 1, attribute, modifier, path, [0; 64]).unwrap()
}

#[test]
fn directed_route_out_and_back_through_a_switch() {
    let (_, mut switch, mut ca) = switch_and_ca();
    let guids = [0, 0x21];
    // The SM on the CA asks the switch (one hop out of CA port 1).
    let mut smp = get(AttributeId::NodeInfo, 0, &[1]);
    assert_eq!(ca.originate(1, &guids, &mut smp), Disposition::Forward { port: 1 });
    // The switch receives it on port 2: the end of the path; it answers.
    assert_eq!(switch.receive(2, &[], &mut smp), Disposition::Respond { port: 2 });
    let SmpRouting::DirectedRoute { returning, hop_pointer, return_path, .. } = smp.routing else { panic!() };
    assert!(returning);
    assert_eq!(hop_pointer, 1);
    assert_eq!(return_path[1], 2);
    assert_eq!(smp.method, Method::GetResp);
    let info = NodeInfoRepr::parse(&NodeInfo::new_checked(&smp.data[..]).unwrap()).unwrap();
    assert_eq!(info.node_type, NodeType::Switch);
    assert_eq!(info.local_port_num, 2);
    assert_eq!(info.node_guid, 0x10);
    // Back at the CA: for its SM.
    assert_eq!(ca.receive(1, &guids, &mut smp), Disposition::ToLocalSm);
    let SmpRouting::DirectedRoute { hop_pointer, .. } = smp.routing else { panic!() };
    assert_eq!(hop_pointer, 0);
}

#[test]
fn a_ca_never_forwards_and_bad_hop_pointers_are_discarded() {
    let (_, _, mut ca) = switch_and_ca();
    let mut smp = get(AttributeId::NodeInfo, 0, &[1, 3]);
    if let SmpRouting::DirectedRoute { hop_pointer, .. } = &mut smp.routing {
        *hop_pointer = 1;
    }
    assert_eq!(ca.receive(1, &[0, 0x21], &mut smp), Disposition::Discard(DrError::NotASwitch));
    let mut smp = get(AttributeId::NodeInfo, 0, &[1, 3]);
    assert_eq!(ca.receive(1, &[0, 0x21], &mut smp), Disposition::Discard(DrError::NotStepped));
    assert_eq!(ca.counters.discarded, 2);
}

#[test]
fn a_path_through_a_missing_port_is_discarded() {
    let (_, mut switch, _) = switch_and_ca();
    let mut smp = get(AttributeId::NodeInfo, 0, &[1, 9]);
    if let SmpRouting::DirectedRoute { hop_pointer, .. } = &mut smp.routing {
        *hop_pointer = 1;
    }
    assert_eq!(switch.receive(2, &[], &mut smp), Disposition::Discard(DrError::NoSuchPort(9)));
}

#[test]
fn statuses_for_what_the_agent_does_not_do() {
    let (_, mut switch, mut ca) = switch_and_ca();
    let mut smp = get(AttributeId::Unknown(0x7777), 0, &[]);
    assert!(switch.process(0, &[], &mut smp));
    assert_eq!(smp.status, MadStatus::invalid(InvalidField::MethodAttributeUnsupported));
    let mut smp = get(AttributeId::NodeInfo, 0, &[]);
    smp.method = Method::Send;
    assert!(switch.process(0, &[], &mut smp));
    assert_eq!(smp.status, MadStatus::invalid(InvalidField::MethodUnsupported));
    let mut smp = get(AttributeId::SwitchInfo, 0, &[]);
    assert!(ca.process(1, &[0, 0x21], &mut smp));
    assert_eq!(smp.status, MadStatus::invalid(InvalidField::MethodAttributeUnsupported));
    let mut smp = get(AttributeId::PortInfo, 9, &[]);
    assert!(switch.process(0, &[], &mut smp));
    assert_eq!(smp.status, MadStatus::invalid(InvalidField::InvalidValue));
    assert_eq!(switch.counters.bad_status, 3);
}

#[test]
fn port_state_moves_init_armed_active_and_refuses_skipping() {
    let (_, mut switch, _) = switch_and_ca();
    let set_state = |agent: &mut Agent, port: u32, state: PortState| {
        let mut info = agent.ports[port as usize];
        info.port_state = state.into();
        let mut data = [0u8; 64];
        info.emit(&mut PortInfo::new_unchecked(&mut data[..]));
        let mut smp = SmpRepr::directed(Method::Set, 2, AttributeId::PortInfo, port, &[], data).unwrap();
        assert!(agent.process(0, &[], &mut smp));
        smp.status
    };
    assert_eq!(switch.ports[2].state(), PortState::Init);
    assert_eq!(set_state(&mut switch, 2, PortState::Active), MadStatus::invalid(InvalidField::InvalidValue));
    assert_eq!(switch.ports[2].state(), PortState::Init, "a refused Set changes nothing");
    assert_eq!(set_state(&mut switch, 2, PortState::Armed), MadStatus::OK);
    assert_eq!(set_state(&mut switch, 2, PortState::Active), MadStatus::OK);
    assert_eq!(switch.ports[2].state(), PortState::Active);
    // An uncabled port is Down and stays so.
    assert_eq!(set_state(&mut switch, 3, PortState::Armed), MadStatus::invalid(InvalidField::InvalidValue));
}

#[test]
fn lft_blocks_set_and_read_back() {
    let (_, mut switch, _) = switch_and_ca();
    let mut ports = [0xffu8; 64];
    ports[5] = 2;
    let mut data = [0u8; 64];
    LftBlockRepr { ports }.emit(&mut LftBlock::new_unchecked(&mut data[..]));
    let mut smp = SmpRepr::directed(Method::Set, 3, AttributeId::LinearForwardingTable, 1, &[], data).unwrap();
    assert!(switch.process(0, &[], &mut smp));
    assert_eq!(smp.status, MadStatus::OK);
    assert_eq!(switch.lft_port(64 + 5), Some(2));
    assert_eq!(switch.lft_port(64 + 6), None);
    let mut smp = get(AttributeId::LinearForwardingTable, 1, &[]);
    assert!(switch.process(0, &[], &mut smp));
    assert_eq!(smp.data[5], 2);
    // Past LinearFDBCap: invalid value.
    let mut smp = get(AttributeId::LinearForwardingTable, 0x300, &[]);
    assert!(switch.process(0, &[], &mut smp));
    assert_eq!(smp.status, MadStatus::invalid(InvalidField::InvalidValue));
}

#[test]
fn an_smp_on_a_port_the_node_lacks_is_discarded() {
    // Found by the `agent` fuzz target: a response must leave by a real port.
    let (_, mut switch, mut ca) = switch_and_ca();
    let mut smp = get(AttributeId::NodeInfo, 0, &[1]);
    if let SmpRouting::DirectedRoute { hop_pointer, .. } = &mut smp.routing {
        *hop_pointer = 1;
    }
    let mut other = smp;
    assert_eq!(switch.receive(9, &[], &mut smp), Disposition::Discard(DrError::NoSuchPort(9)));
    assert_eq!(ca.receive(0, &[0, 0x21], &mut other), Disposition::Discard(DrError::NoSuchPort(0)));
}

/// A PortInfo Set of `port` carrying `smp_key`, with `info` as its data.
fn port_info_set(port: u32, info: &PortInfoRepr, smp_key: u64) -> SmpRepr {
    let mut data = [0u8; 64];
    info.emit(&mut PortInfo::new_unchecked(&mut data[..]));
    let mut smp = SmpRepr::directed(Method::Set, 7, AttributeId::PortInfo, port, &[], data).unwrap();
    smp.m_key = smp_key;
    smp
}

/// The switch of [`switch_and_ca`] with LID 5, master SM LID 1 and port 0
/// protected by `key` at `protect` with a lease of `lease_s` seconds.
fn protected_switch(key: u64, protect: u8, lease_s: u16) -> Agent {
    let (_, mut switch, _) = switch_and_ca();
    let mut info = switch.ports[0];
    info.lid = 5;
    info.master_sm_lid = 1;
    info.m_key = key;
    info.m_key_protect_bits = protect;
    info.m_key_lease_period = lease_s;
    info.port_state = PortState::NoChange.into();
    assert!(switch.process(0, &[], &mut port_info_set(0, &info, 0)));
    assert_eq!((switch.ports[0].m_key, switch.ports[0].m_key_protect_bits), (key, protect));
    switch
}

fn port_info_get(port: u32, key: u64) -> SmpRepr {
    let mut smp = get(AttributeId::PortInfo, port, &[]);
    smp.m_key = key;
    smp
}

#[test]
fn m_key_zero_lets_everything_through() {
    let (_, mut switch, _) = switch_and_ca();
    let mut info = switch.ports[0];
    info.lid = 9;
    info.port_state = PortState::NoChange.into();
    assert!(switch.process(0, &[], &mut port_info_set(0, &info, 0xdead)));
    assert_eq!(switch.ports[0].lid, 9);
    assert_eq!(switch.counters.m_key_violations, 0);
}

#[test]
fn a_set_with_a_wrong_key_changes_nothing_is_counted_and_trapped() {
    const KEY: u64 = 0x1122_3344_5566_7788;
    for protect in 0..=3 {
        let mut switch = protected_switch(KEY, protect, 0);
        let mut info = switch.ports[0];
        info.lid = 77;
        info.port_state = PortState::NoChange.into();
        let mut smp = port_info_set(0, &info, KEY ^ 1);
        let request = smp;
        assert!(!switch.process(0, &[], &mut smp), "protect {protect}: no response");
        assert_eq!(smp, request, "the request is left as it came");
        assert_eq!(switch.ports[0].lid, 5, "protect {protect}: nothing changed");
        assert_eq!(switch.ports[0].m_key_violations, 1);
        assert_eq!(switch.counters.m_key_violations, 1);
        // Trap 256 to the master SM, naming the offending SMP.
        let traps = switch.poll_traps(0);
        assert_eq!(traps.len(), 1);
        assert_eq!((traps[0].dlid, traps[0].smp.method, traps[0].repeat), (1, Method::Trap, false));
        let notice = NoticeRepr::parse(&Notice::new_checked(&traps[0].smp.data[..]).unwrap()).unwrap();
        assert_eq!((notice.trap_number, notice.issuer_lid, notice.notice_type), (TRAP_BAD_M_KEY, 5, 2));
        assert_eq!(mkey::bad_m_key_of(&notice), KEY ^ 1);
        assert_eq!(notice.data_details[6], u8::from(Method::Set));
        assert_eq!(&notice.data_details[8..10], &[0x00, 0x15], "attribute PortInfo");
        assert_eq!(notice.data_details[23] & 0x80, 0x80, "DRNotice: a directed-route SMP");
        // The right key is answered.
        assert!(switch.process(0, &[], &mut port_info_set(0, &info, KEY)));
        assert_eq!(switch.ports[0].lid, 77);
    }
}

#[test]
fn gets_by_protect_level() {
    const KEY: u64 = 0xabcd;
    let read_key = |smp: &SmpRepr| PortInfoRepr::parse(&PortInfo::new_unchecked(&smp.data[..])).unwrap().m_key;
    // Level 0: answered, the key shown.
    let mut switch = protected_switch(KEY, 0, 0);
    let mut smp = port_info_get(0, 0);
    assert!(switch.process(0, &[], &mut smp));
    assert_eq!((smp.status, read_key(&smp)), (MadStatus::OK, KEY));
    // Level 1: answered, the key read as zero; with the key, shown.
    let mut switch = protected_switch(KEY, 1, 0);
    let mut smp = port_info_get(0, 0);
    assert!(switch.process(0, &[], &mut smp));
    assert_eq!((smp.status, read_key(&smp)), (MadStatus::OK, 0));
    let mut smp = port_info_get(0, KEY);
    assert!(switch.process(0, &[], &mut smp));
    assert_eq!(read_key(&smp), KEY);
    assert_eq!(switch.counters.m_key_violations, 0, "a Get below level 2 is no violation");
    // Levels 2 and 3: a Get with the wrong key is a violation too, on any
    // attribute.
    for protect in [2, 3] {
        let mut switch = protected_switch(KEY, protect, 0);
        assert!(!switch.process(0, &[], &mut port_info_get(0, 0)));
        let mut smp = get(AttributeId::NodeInfo, 0, &[]);
        assert!(!switch.process(0, &[], &mut smp));
        assert_eq!(switch.ports[0].m_key_violations, 2);
        smp.m_key = KEY;
        assert!(switch.process(0, &[], &mut smp));
    }
}

#[test]
fn a_directed_route_smp_with_a_wrong_key_is_discarded_at_its_end() {
    let mut switch = protected_switch(0x77, 2, 0);
    let mut smp = get(AttributeId::NodeInfo, 0, &[2]);
    if let SmpRouting::DirectedRoute { hop_pointer, .. } = &mut smp.routing {
        *hop_pointer = 1;
    }
    assert_eq!(switch.receive(2, &[], &mut smp), Disposition::Discard(DrError::MKeyViolation));
}

#[test]
fn the_lease_ends_protection_and_the_right_key_renews_it() {
    const KEY: u64 = 0x55;
    const SECOND: u64 = 1_000_000_000;
    let mut switch = protected_switch(KEY, 2, 10);
    switch.advance_clock(100 * SECOND);
    assert!(!switch.process(0, &[], &mut port_info_get(0, 0)));
    assert_eq!(switch.next_lease_expiry_ns(), Some(110 * SECOND));
    // Another violation does not restart a running timer.
    switch.advance_clock(105 * SECOND);
    assert!(!switch.process(0, &[], &mut port_info_get(0, 0)));
    assert_eq!(switch.next_lease_expiry_ns(), Some(110 * SECOND));
    switch.advance_clock(110 * SECOND - 1);
    assert_eq!(switch.ports[0].m_key_protect_bits, 2);
    switch.advance_clock(110 * SECOND);
    assert_eq!(switch.ports[0].m_key_protect_bits, 0, "the lease expired: protection off");
    assert_eq!(switch.ports[0].m_key, KEY, "the key itself stays");
    assert!(switch.process(0, &[], &mut port_info_get(0, 0)), "a Get passes at level 0");
    // With the right key before expiry, the lease is renewed (the timer
    // stops) and protection stays.
    let mut switch = protected_switch(KEY, 2, 10);
    assert!(!switch.process(0, &[], &mut port_info_get(0, 0)));
    assert!(switch.process(0, &[], &mut port_info_get(0, KEY)));
    assert_eq!(switch.next_lease_expiry_ns(), None);
    switch.advance_clock(1000 * SECOND);
    assert_eq!(switch.ports[0].m_key_protect_bits, 2);
    // Lease period 0: protection never lapses.
    let mut switch = protected_switch(KEY, 2, 0);
    assert!(!switch.process(0, &[], &mut port_info_get(0, 0)));
    assert_eq!(switch.next_lease_expiry_ns(), None);
}

#[test]
fn a_ca_checks_the_key_of_its_port() {
    let (_, _, mut ca) = switch_and_ca();
    let guids = [0, 0x21];
    let mut info = ca.ports[1];
    info.m_key = 0x99;
    info.m_key_protect_bits = 3;
    info.port_state = PortState::NoChange.into();
    assert!(ca.process(1, &guids, &mut port_info_set(1, &info, 0)));
    assert!(!ca.process(1, &guids, &mut port_info_get(1, 0)));
    assert_eq!(ca.ports[1].m_key_violations, 1);
    assert!(ca.process(1, &guids, &mut port_info_get(1, 0x99)));
}

#[test]
fn a_trap_repress_with_a_wrong_key_does_not_end_the_trap() {
    const KEY: u64 = 0x1234;
    let mut switch = protected_switch(KEY, 1, 0);
    switch.push_notice(NoticeRepr::link_state_change(5));
    let sent = switch.poll_traps(0);
    let mut repress = sent[0].smp;
    repress.method = Method::TrapRepress;
    assert!(!switch.trap_repressed(1, &repress), "M_Key 0 against a protected switch");
    assert_eq!(switch.counters.m_key_violations, 1);
    repress.m_key = KEY;
    assert!(switch.trap_repressed(1, &repress));
    assert_eq!(switch.traps().outstanding().count(), 0);
}

#[test]
fn a_trap_is_repeated_with_backoff_until_repressed() {
    let mut switch = protected_switch(0, 0, 0);
    // SubnetTimeout 18: 4.096 us x 2^18, about 1.07 s.
    let timeout = traps::subnet_timeout_ns(18);
    assert_eq!(timeout, 1_073_741_824);
    switch.push_notice(NoticeRepr::link_state_change(5));
    let first = switch.poll_traps(0);
    assert_eq!(first.len(), 1);
    let transaction = first[0].smp.transaction_id;
    assert!(switch.poll_traps(timeout - 1).is_empty(), "nothing before the subnet timeout");
    // Repeats after 1, then 2, 4, 8, 16 timeouts, and no longer apart than 16.
    let mut at = 0;
    let mut gaps = Vec::new();
    for _ in 0..7 {
        let due = switch.next_trap_ns().unwrap();
        assert!(switch.poll_traps(due - 1).is_empty());
        let repeat = switch.poll_traps(due);
        assert_eq!(repeat.len(), 1);
        assert!(repeat[0].repeat);
        assert_eq!(repeat[0].smp.transaction_id, transaction, "the same trap, the same transaction");
        assert_eq!(repeat[0].smp.data, first[0].smp.data);
        gaps.push((due - at) / timeout);
        at = due;
    }
    assert_eq!(gaps, [1, 2, 4, 8, 16, 16, 16]);
    assert_eq!((switch.counters.traps_sent, switch.counters.traps_resent), (1, 7));
    // A TrapRepress for another transaction ends nothing; its own ends it.
    let mut repress = first[0].smp;
    repress.method = Method::TrapRepress;
    repress.transaction_id = transaction + 1;
    assert!(!switch.trap_repressed(1, &repress));
    repress.transaction_id = transaction;
    assert!(switch.trap_repressed(1, &repress));
    assert_eq!(switch.next_trap_ns(), None);
    assert!(switch.poll_traps(u64::MAX / 2).is_empty());
    assert_eq!(switch.counters.traps_repressed, 1);
}

#[test]
fn traps_wait_for_a_lid_and_a_master_sm() {
    let (_, mut switch, _) = switch_and_ca();
    switch.push_notice(NoticeRepr::link_state_change(0));
    assert!(switch.poll_traps(0).is_empty(), "nobody to tell: dropped");
    assert_eq!(switch.counters.traps_sent, 0);
    assert_eq!(switch.next_trap_ns(), None);
}

/// An SMInfo request carrying `sm_key` (the requester's SMInfo as data).
fn sm_info_request(method: Method, control: SmInfoControl, sm_key: u64) -> SmpRepr {
    let mut data = [0u8; 64];
    let requester = SmInfoRepr { guid: 0x99, sm_key, act_count: 0, priority: 3, sm_state: SmState::Master };
    requester.emit(&mut SmInfo::new_unchecked(&mut data[..]));
    let modifier = if method == Method::Set { u32::from(control) } else { 0 };
    SmpRepr::directed(method, 3, AttributeId::SmInfo, modifier, &[], data).unwrap()
}

#[test]
fn sm_info_shows_the_sm_key_and_takes_a_handover_only_with_it() {
    const SM_KEY: u64 = 0x5eed_0000_0000_0001;
    let (_, _, mut ca) = switch_and_ca();
    let ours = SmInfoRepr { guid: 0x21, sm_key: SM_KEY, act_count: 7, priority: 1, sm_state: SmState::Standby };
    ca.sm_info = Some(ours);
    let answer = |smp: &SmpRepr| SmInfoRepr::parse(&SmInfo::new_unchecked(&smp.data[..])).unwrap();
    // IBA 14.4.1: the right key reads it, a wrong one reads it zeroed.
    let mut smp = sm_info_request(Method::Get, SmInfoControl::Handover, SM_KEY);
    assert!(ca.process(1, &[0, 0x21], &mut smp));
    assert_eq!(answer(&smp), ours);
    let mut smp = sm_info_request(Method::Get, SmInfoControl::Handover, SM_KEY ^ 1);
    assert!(ca.process(1, &[0, 0x21], &mut smp));
    assert_eq!((smp.status, answer(&smp)), (MadStatus::OK, SmInfoRepr { sm_key: 0, ..ours }));
    assert_eq!(ca.counters.sm_key_mismatches, 1);
    // A handover with a wrong key is refused and not passed to the SM.
    let mut smp = sm_info_request(Method::Set, SmInfoControl::Handover, 0);
    assert!(ca.process(1, &[0, 0x21], &mut smp));
    assert_ne!(smp.status, MadStatus::OK);
    assert_eq!(answer(&smp).sm_key, 0);
    assert_eq!(ca.sm_control, None);
    assert_eq!(ca.counters.sm_key_mismatches, 2);
    let mut smp = sm_info_request(Method::Set, SmInfoControl::Handover, SM_KEY);
    assert!(ca.process(1, &[0, 0x21], &mut smp));
    assert_eq!(smp.status, MadStatus::OK);
    assert_eq!(ca.sm_control, Some(SmInfoControl::Handover));
    // An SM without a key (0) checks none.
    ca.sm_info = Some(SmInfoRepr { sm_key: 0, ..ours });
    let mut smp = sm_info_request(Method::Get, SmInfoControl::Handover, 0x1234);
    assert!(ca.process(1, &[0, 0x21], &mut smp));
    assert_eq!(answer(&smp).sm_key, 0);
    assert_eq!(ca.counters.sm_key_mismatches, 2);
}
