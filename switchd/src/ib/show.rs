//! What `swcli show ib ...` reads from the IB-like runtime.

use mgmt_cli::ib::{
    IbAgentCounters, IbCounters, IbLft, IbLftEntry, IbLink, IbNode, IbPort, IbPortCounters, IbPortRoutes,
    IbRoutesBalance, IbSm, IbSwitchBalance, IbTopology, IbVl,
};
use subnet_manager::packet::attributes::{PortPhysState, PortState};
use subnet_manager::routing::analyze;
use subnet_manager::topology::NodeKind;

use super::IbRuntime;

fn state_name(state: PortState) -> String {
    match state {
        PortState::Down => "down".into(),
        PortState::Init => "init".into(),
        PortState::Armed => "armed".into(),
        PortState::Active => "active".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

fn phys_name(state: PortPhysState) -> String {
    format!("{state:?}").to_lowercase()
}

fn guid(value: u64) -> String {
    format!("0x{value:016x}")
}

impl IbRuntime {
    pub fn show_ports(&self) -> Vec<IbPort> {
        self.plane
            .port_status()
            .into_iter()
            .map(|status| {
                let c = status.counters;
                IbPort {
                    name: self.port_name(status.number).unwrap_or("-").to_owned(),
                    number: status.number,
                    state: state_name(status.state),
                    phys_state: phys_name(status.phys_state),
                    data_vls: status.data_vls,
                    mtu: status.mtu,
                    flow_control: status.flow_control_ready,
                    counters: IbPortCounters {
                        xmit_data: c.xmit_data,
                        rcv_data: c.rcv_data,
                        xmit_packets: c.xmit_packets,
                        rcv_packets: c.rcv_packets,
                        xmit_wait: c.xmit_wait,
                        rcv_switch_relay_errors: c.rcv_switch_relay_errors,
                        rcv_errors: c.rcv_errors,
                        xmit_discards: c.xmit_discards,
                        vl15_dropped: c.vl15_dropped,
                    },
                    vls: status
                        .vls
                        .iter()
                        .map(|vl| IbVl {
                            vl: vl.vl,
                            send_credit_blocks: vl.send_credit_blocks,
                            receive_held_blocks: vl.receive_held_blocks,
                            queued: vl.queued,
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// `show ib counters`: the ports' PortCounters and the agent's.
    pub fn show_counters(&self) -> IbCounters {
        let ports = self
            .show_ports()
            .into_iter()
            .map(|p| mgmt_cli::ib::IbPortCountersRow { name: p.name, number: p.number, counters: p.counters })
            .collect();
        let plane = self.plane.counters();
        let agent = self.plane.agent().counters;
        IbCounters {
            ports,
            agent: IbAgentCounters {
                smps_answered: agent.answered,
                smps_bad_status: agent.bad_status,
                smps_discarded: agent.discarded,
                m_key_violations: agent.m_key_violations,
                traps_sent: agent.traps_sent,
                traps_resent: agent.traps_resent,
                traps_repressed: agent.traps_repressed,
                malformed_frames: plane.malformed,
                bad_smps: plane.bad_smps,
                bad_version: plane.bad_version,
                tx_refused: plane.tx_refused,
            },
        }
    }

    /// This switch's LFT (`switch` None, its name or its GUID), or another
    /// switch's as the embedded SM computed and programmed it.
    pub fn show_lft(&self, name: &str, switch: Option<&str>) -> Result<IbLft, String> {
        let own_guid = self.plane.agent().node_info.node_guid;
        let wanted_guid = switch.and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok());
        let is_own = switch.is_none_or(|s| s == name) || wanted_guid == Some(own_guid);
        if is_own {
            let entries = self.plane.lft_entries().into_iter().map(|(lid, port)| IbLftEntry { lid, port }).collect();
            return Ok(IbLft { switch: name.to_owned(), guid: guid(own_guid), lid: self.plane.lid(), entries });
        }
        let switch = switch.unwrap_or_default();
        let Some(sm) = &self.sm else {
            return Err(format!("{switch}: not this switch, and no subnet manager runs here to know its LFT"));
        };
        let topology = sm.sm.topology();
        let found = topology.nodes.iter().position(|node| {
            node.kind == NodeKind::Switch && (node.description == switch || Some(node.guid) == wanted_guid)
        });
        let Some(index) = found else { return Err(format!("{switch}: no such switch in the discovered fabric")) };
        let node = &topology.nodes[index];
        let table = sm.sm.lfts().table(index).unwrap_or(&[]);
        let entries = table
            .iter()
            .enumerate()
            .filter(|&(lid, &port)| lid != 0 && port != 0xff)
            .map(|(lid, &port)| IbLftEntry { lid: lid as u16, port })
            .collect();
        Ok(IbLft { switch: node.description.clone(), guid: guid(node.guid), lid: node.ports[0].lid, entries })
    }

    pub fn show_sm(&self, now: u64) -> IbSm {
        let agent = self.plane.agent();
        let Some(embedded) = &self.sm else {
            return IbSm {
                state: "not configured".into(),
                priority: 0,
                guid: guid(agent.node_info.node_guid),
                lid: self.plane.lid(),
                heavy_sweeps: 0,
                light_sweeps: 0,
                last_sweep_age_secs: None,
                last_sweep_ms: None,
                last_reroute_ms: None,
                last_lft_blocks: 0,
                master_guid: None,
                fabric_up: false,
                engine: None,
                switches: 0,
                cas: 0,
                traps: 0,
                lft_blocks_set: 0,
                failed_smps: 0,
                smps_sent: 0,
                events: Vec::new(),
            };
        };
        let status = embedded.sm.status();
        let started = status.heavy_sweeps > 0;
        IbSm {
            state: format!("{:?}", status.sm_state).to_lowercase(),
            priority: status.priority,
            guid: guid(status.port_guid),
            lid: status.lid,
            heavy_sweeps: status.heavy_sweeps,
            light_sweeps: status.light_sweeps,
            last_sweep_age_secs: started.then(|| now.saturating_sub(status.last_sweep_started_ns) as f64 / 1e9),
            last_sweep_ms: status.last_sweep_took_ns.map(|ns| ns as f64 / 1e6),
            last_reroute_ms: status.last_reroute_ns.map(|ns| ns as f64 / 1e6),
            last_lft_blocks: status.last_lft_blocks,
            master_guid: status.master_guid.map(guid),
            fabric_up: embedded.fabric_up,
            engine: status.engine.map(|e| e.name().to_owned()),
            switches: status.switches,
            cas: status.cas,
            traps: status.counters.traps,
            lft_blocks_set: status.counters.lft_blocks_set,
            failed_smps: status.counters.failed_smps,
            smps_sent: status.smps.sent,
            events: embedded.events.iter().map(|(at, event)| format!("{:.3}s {event}", *at as f64 / 1e9)).collect(),
        }
    }

    pub fn show_topology(&self) -> IbTopology {
        let Some(embedded) = &self.sm else { return IbTopology { nodes: Vec::new() } };
        let topology = embedded.sm.topology();
        let nodes = topology
            .nodes
            .iter()
            .map(|node| {
                let switch = node.kind == NodeKind::Switch;
                let links = (1..=node.num_ports)
                    .filter_map(|port| {
                        let entry = &node.ports[usize::from(port)];
                        let remote = entry.remote?;
                        Some(IbLink {
                            port,
                            remote: topology.nodes[remote.node].description.clone(),
                            remote_port: remote.port,
                            state: entry.state.map_or("-".into(), state_name),
                        })
                    })
                    .collect();
                IbNode {
                    guid: guid(node.guid),
                    kind: if switch { "switch" } else { "ca" }.into(),
                    description: node.description.clone(),
                    lid: node.ports[if switch { 0 } else { 1 }.min(node.ports.len() - 1)].lid,
                    links,
                }
            })
            .collect();
        IbTopology { nodes }
    }

    /// The balance of the LFTs the embedded SM last computed (analysed on
    /// request: the fabrics a switch-embedded SM runs are small).
    pub fn show_routes_balance(&self) -> IbRoutesBalance {
        let Some(embedded) = &self.sm else { return IbRoutesBalance::empty() };
        let (topology, lfts) = (embedded.sm.topology(), embedded.sm.lfts());
        let Some(engine) = lfts.engine else { return IbRoutesBalance::empty() };
        let lmc = embedded.sm.config().routing.lmc;
        let balance = analyze(topology, lfts, lmc);
        let ca_ports: usize =
            topology.nodes.iter().filter(|n| n.kind != NodeKind::Switch).map(|n| n.endpoint_ports().count()).sum();
        let switches = balance
            .switches
            .iter()
            .map(|switch| {
                let node = &topology.nodes[switch.node];
                let ports: Vec<IbPortRoutes> = switch
                    .routes
                    .iter()
                    .enumerate()
                    .filter_map(|(port, &routes)| {
                        let remote = node.ports.get(port).and_then(|p| p.remote);
                        let remote = remote.map(|r| topology.nodes[r.node].description.clone());
                        (port != 0 && (remote.is_some() || routes > 0)).then_some(IbPortRoutes {
                            port: port as u8,
                            remote,
                            routes,
                        })
                    })
                    .collect();
                IbSwitchBalance {
                    switch: node.description.clone(),
                    guid: guid(node.guid),
                    max_routes: ports.iter().map(|p| p.routes).max().unwrap_or(0),
                    min_routes: ports.iter().map(|p| p.routes).min().unwrap_or(0),
                    ports,
                    up_spread: switch.up_spread,
                    down_spread: switch.down_spread,
                }
            })
            .collect();
        IbRoutesBalance {
            engine: Some(engine.name().to_owned()),
            refused: lfts.refused.iter().map(|(engine, why)| format!("{}: {why}", engine.name())).collect(),
            destinations: ca_ports << lmc,
            max_routes_per_port: balance.max_routes_per_port,
            min_routes_per_port: balance.min_routes_per_port,
            worst_spread: balance.worst_spread,
            edge_forwarding_index: balance.edge_forwarding_index,
            unreachable_pairs: balance.unreachable_pairs,
            looping_destinations: balance.looping_destinations,
            deadlock_free_per_vl: balance.acyclic_per_vl,
            switches,
        }
    }
}
