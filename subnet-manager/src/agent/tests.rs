use super::*;
use crate::packet::attributes::{NodeType, PortState};
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
    switch.process(0, &[], &mut smp);
    assert_eq!(smp.status, MadStatus::invalid(InvalidField::MethodAttributeUnsupported));
    let mut smp = get(AttributeId::NodeInfo, 0, &[]);
    smp.method = Method::Send;
    switch.process(0, &[], &mut smp);
    assert_eq!(smp.status, MadStatus::invalid(InvalidField::MethodUnsupported));
    let mut smp = get(AttributeId::SwitchInfo, 0, &[]);
    ca.process(1, &[0, 0x21], &mut smp);
    assert_eq!(smp.status, MadStatus::invalid(InvalidField::MethodAttributeUnsupported));
    let mut smp = get(AttributeId::PortInfo, 9, &[]);
    switch.process(0, &[], &mut smp);
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
        agent.process(0, &[], &mut smp);
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
    switch.process(0, &[], &mut smp);
    assert_eq!(smp.status, MadStatus::OK);
    assert_eq!(switch.lft_port(64 + 5), Some(2));
    assert_eq!(switch.lft_port(64 + 6), None);
    let mut smp = get(AttributeId::LinearForwardingTable, 1, &[]);
    switch.process(0, &[], &mut smp);
    assert_eq!(smp.data[5], 2);
    // Past LinearFDBCap: invalid value.
    let mut smp = get(AttributeId::LinearForwardingTable, 0x300, &[]);
    switch.process(0, &[], &mut smp);
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
