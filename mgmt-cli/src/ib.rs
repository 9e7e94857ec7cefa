//! The IB-like plane's part of the management API: `show ib port`, `show
//! ib counters`, `show ib lft [SWITCH]`, `show ib sm`, `show ib topology`, `show ib routes
//! balance` (types and their rendering).

use serde::{Deserialize, Serialize};

use crate::render::Render;
use crate::table::Table;

/// One port in IB-like mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbPort {
    pub name: String,
    /// IBA port number.
    pub number: u8,
    /// PortInfo PortState: `down`, `init`, `armed`, `active`.
    pub state: String,
    /// PortInfo PortPhysicalState: `polling`, `linkup`, `disabled`...
    pub phys_state: String,
    pub data_vls: u8,
    pub mtu: u16,
    /// Flow control exchanged on every data VL.
    pub flow_control: bool,
    pub counters: IbPortCounters,
    pub vls: Vec<IbVl>,
}

/// PortCounters-like counters (IBA 16.1.3.5; data in 4-byte words).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbPortCounters {
    pub xmit_data: u64,
    pub rcv_data: u64,
    pub xmit_packets: u64,
    pub rcv_packets: u64,
    /// Transmit opportunities with packets queued and no credit.
    pub xmit_wait: u64,
    /// Unknown DLID, SL mapped to VL15 (PortRcvSwitchRelayErrors).
    pub rcv_switch_relay_errors: u64,
    /// Credit overruns, data before flow control or on a port in Init,
    /// longer than the MTU (PortRcvErrors).
    pub rcv_errors: u64,
    /// Routed here and discarded: the port not Active, or longer than its
    /// neighbour MTU (PortXmitDiscards).
    #[serde(default)]
    pub xmit_discards: u64,
    pub vl15_dropped: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbVl {
    pub vl: u8,
    /// Blocks (64 bytes) the peer still grants us on this VL.
    pub send_credit_blocks: u16,
    /// Blocks held in our receive buffer on this VL.
    pub receive_held_blocks: u16,
    /// Packets waiting in the VOQ to this port on this VL.
    pub queued: usize,
}

/// A switch's linear forwarding table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbLft {
    pub switch: String,
    pub guid: String,
    pub lid: u16,
    pub entries: Vec<IbLftEntry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbLftEntry {
    pub lid: u16,
    pub port: u8,
}

/// The embedded subnet manager.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IbSm {
    /// `master`, `standby`, `discovering`... or `not configured`.
    pub state: String,
    pub priority: u8,
    pub guid: String,
    pub lid: u16,
    pub heavy_sweeps: u64,
    pub light_sweeps: u64,
    /// Seconds since the last heavy sweep started.
    pub last_sweep_age_secs: Option<f64>,
    /// How long the last heavy sweep took to bring the fabric up.
    pub last_sweep_ms: Option<f64>,
    /// From the last change the SM detected (trap, PortStateChange, a link
    /// of its switch) to the fabric up with the new LFTs.
    #[serde(default)]
    pub last_reroute_ms: Option<f64>,
    /// LFT blocks the last heavy sweep rewrote (only those that changed).
    #[serde(default)]
    pub last_lft_blocks: usize,
    /// The master a standby polls.
    #[serde(default)]
    pub master_guid: Option<String>,
    pub fabric_up: bool,
    pub engine: Option<String>,
    pub switches: usize,
    pub cas: usize,
    pub traps: u64,
    pub lft_blocks_set: u64,
    pub failed_smps: u64,
    pub smps_sent: u64,
    pub events: Vec<String>,
}

/// The fabric as the embedded SM discovered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbTopology {
    pub nodes: Vec<IbNode>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbNode {
    pub guid: String,
    /// `switch` or `ca`.
    pub kind: String,
    pub description: String,
    /// Switch port 0's LID, or the CA port's.
    pub lid: u16,
    pub links: Vec<IbLink>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbLink {
    pub port: u8,
    pub remote: String,
    pub remote_port: u8,
    pub state: String,
}

/// The balance of the last routing engine run of the embedded SM: how
/// evenly the LFTs spread the CA destinations over the ports (rdma-core's
/// `check_lft_balance.pl`), the edge-forwarding index and deadlock freedom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbRoutesBalance {
    /// The engine whose LFTs these are; None before the first routing.
    pub engine: Option<String>,
    /// Engines tried before it that declined the fabric, with why.
    pub refused: Vec<String>,
    /// CA destination LIDs routed (every LID of every CA port).
    pub destinations: usize,
    /// Over every switch-to-switch port of the fabric.
    pub max_routes_per_port: u32,
    pub min_routes_per_port: u32,
    /// The largest max - min over the up or the down ports of any switch.
    pub worst_spread: u32,
    /// The most (source CA, destination) routes over any switch-to-switch
    /// link direction.
    pub edge_forwarding_index: u64,
    pub unreachable_pairs: u64,
    pub looping_destinations: u64,
    /// Per VL in use: its channel dependency graph is cycle free.
    pub deadlock_free_per_vl: Vec<bool>,
    pub switches: Vec<IbSwitchBalance>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbSwitchBalance {
    pub switch: String,
    pub guid: String,
    /// The switch's linked ports, and any other port routes leave by.
    pub ports: Vec<IbPortRoutes>,
    /// Over `ports`.
    pub max_routes: u32,
    pub min_routes: u32,
    /// max - min over the ports towards switches farther from the CAs.
    pub up_spread: u32,
    /// max - min over the ports towards switches nearer the CAs.
    pub down_spread: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbPortRoutes {
    pub port: u8,
    /// The node at the other end, if linked.
    pub remote: Option<String>,
    /// CA destination LIDs this switch routes out of this port.
    pub routes: u32,
}

impl IbRoutesBalance {
    /// No routing yet (or no SM here).
    pub fn empty() -> IbRoutesBalance {
        IbRoutesBalance {
            engine: None,
            refused: Vec::new(),
            destinations: 0,
            max_routes_per_port: 0,
            min_routes_per_port: 0,
            worst_spread: 0,
            edge_forwarding_index: 0,
            unreachable_pairs: 0,
            looping_destinations: 0,
            deadlock_free_per_vl: Vec::new(),
            switches: Vec::new(),
        }
    }
}

impl Render for IbRoutesBalance {
    fn render(&self) -> String {
        let Some(engine) = &self.engine else {
            return "no routes computed (no SM in this switch, or no sweep yet)\n".to_owned();
        };
        let vls: Vec<String> = self
            .deadlock_free_per_vl
            .iter()
            .enumerate()
            .map(|(vl, free)| format!("VL{vl} {}", if *free { "yes" } else { "NO" }))
            .collect();
        let mut out = format!(
            "engine {engine}, {} destination LIDs\nroutes per switch-to-switch port: max {}, min {}, worst spread {}\n\
             edge-forwarding index {}, unreachable pairs {}, looping destinations {}\ndeadlock free: {}\n",
            self.destinations,
            self.max_routes_per_port,
            self.min_routes_per_port,
            self.worst_spread,
            self.edge_forwarding_index,
            self.unreachable_pairs,
            self.looping_destinations,
            vls.join(", "),
        );
        for refused in &self.refused {
            out.push_str(&format!("declined: {refused}\n"));
        }
        let mut table = Table::new(["SWITCH", "MAX", "MIN", "UP SPREAD", "DOWN SPREAD", "ROUTES PER PORT"]);
        for switch in &self.switches {
            let ports: Vec<String> = switch
                .ports
                .iter()
                .map(|p| {
                    format!("{}{}:{}", p.port, p.remote.as_ref().map_or(String::new(), |r| format!("({r})")), p.routes)
                })
                .collect();
            table.row([
                switch.switch.clone(),
                switch.max_routes.to_string(),
                switch.min_routes.to_string(),
                switch.up_spread.to_string(),
                switch.down_spread.to_string(),
                ports.join(" "),
            ]);
        }
        out.push_str(&table.render());
        out
    }
}

impl Render for Vec<IbPort> {
    fn render(&self) -> String {
        if self.is_empty() {
            return "no port in IB-like mode\n".to_owned();
        }
        let mut table = Table::new([
            "PORT",
            "IB",
            "STATE",
            "PHYS",
            "VLS",
            "MTU",
            "FC",
            "XMIT PKTS",
            "RCV PKTS",
            "XMIT WAIT",
            "RELAY ERR",
            "RCV ERR",
            "XMIT DISC",
            "VL15 DROP",
            "CREDIT/HELD/QUEUED PER VL",
        ]);
        for p in self {
            let c = &p.counters;
            let vls: Vec<String> = p
                .vls
                .iter()
                .map(|v| format!("{}:{}/{}/{}", v.vl, v.send_credit_blocks, v.receive_held_blocks, v.queued))
                .collect();
            table.row([
                p.name.clone(),
                p.number.to_string(),
                p.state.clone(),
                p.phys_state.clone(),
                p.data_vls.to_string(),
                p.mtu.to_string(),
                if p.flow_control { "yes" } else { "no" }.to_owned(),
                c.xmit_packets.to_string(),
                c.rcv_packets.to_string(),
                c.xmit_wait.to_string(),
                c.rcv_switch_relay_errors.to_string(),
                c.rcv_errors.to_string(),
                c.xmit_discards.to_string(),
                c.vl15_dropped.to_string(),
                vls.join(" "),
            ]);
        }
        table.render()
    }
}

impl Render for IbLft {
    fn render(&self) -> String {
        let mut out = format!(
            "Unicast lids [0x0-0x{:x}] of switch {} guid {} (lid {})\n",
            self.entries.last().map_or(0, |e| e.lid),
            self.switch,
            self.guid,
            self.lid
        );
        let mut table = Table::new(["LID", "PORT"]);
        for e in &self.entries {
            table.row([format!("0x{:04x}", e.lid), format!("{:03}", e.port)]);
        }
        out.push_str(&table.render());
        out.push_str(&format!("{} valid lids\n", self.entries.len()));
        out
    }
}

impl Render for IbSm {
    fn render(&self) -> String {
        let mut out = format!(
            "SM state {} priority {} guid {} lid {}\nfabric {} ({} switches, {} CAs), engine {}\n",
            self.state,
            self.priority,
            self.guid,
            self.lid,
            if self.fabric_up { "up" } else { "not up" },
            self.switches,
            self.cas,
            self.engine.as_deref().unwrap_or("-"),
        );
        let ms = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1} ms"));
        let age = self.last_sweep_age_secs.map_or("-".to_owned(), |s| format!("{s:.1} s ago"));
        out.push_str(&format!(
            "sweeps: {} heavy, {} light; last heavy sweep {age}, took {}\nSMPs sent {}, failed {}, LFT blocks set {}, traps {}\n",
            self.heavy_sweeps, self.light_sweeps, ms(self.last_sweep_ms), self.smps_sent, self.failed_smps,
            self.lft_blocks_set, self.traps,
        ));
        if let Some(reroute) = self.last_reroute_ms {
            out.push_str(&format!(
                "last reroute {reroute:.1} ms from the change to new LFTs ({} LFT blocks rewritten)\n",
                self.last_lft_blocks
            ));
        }
        if let Some(master) = &self.master_guid {
            out.push_str(&format!("polling master {master}\n"));
        }
        if !self.events.is_empty() {
            out.push_str("recent events:\n");
            for event in &self.events {
                out.push_str(&format!("  {event}\n"));
            }
        }
        out
    }
}

impl Render for IbTopology {
    fn render(&self) -> String {
        if self.nodes.is_empty() {
            return "no fabric discovered (no SM in this switch, or no sweep yet)\n".to_owned();
        }
        let mut table = Table::new(["NODE", "KIND", "GUID", "LID", "PORT", "REMOTE", "REMOTE PORT", "STATE"]);
        for node in &self.nodes {
            if node.links.is_empty() {
                table.row([node.description.clone(), node.kind.clone(), node.guid.clone(), node.lid.to_string()]);
            }
            for link in &node.links {
                table.row([
                    node.description.clone(),
                    node.kind.clone(),
                    node.guid.clone(),
                    node.lid.to_string(),
                    link.port.to_string(),
                    link.remote.clone(),
                    link.remote_port.to_string(),
                    link.state.clone(),
                ]);
            }
        }
        table.render()
    }
}

/// `show ib counters`: every IB-like port's PortCounters, and what the
/// switch's agent and plane did with management traffic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbCounters {
    pub ports: Vec<IbPortCountersRow>,
    pub agent: IbAgentCounters,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbPortCountersRow {
    pub name: String,
    pub number: u8,
    pub counters: IbPortCounters,
}

/// The subnet management agent's and the plane's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IbAgentCounters {
    /// SMPs answered with status OK, and with an error status.
    pub smps_answered: u64,
    pub smps_bad_status: u64,
    /// Directed-route SMPs discarded (bad hop pointer, a CA asked to
    /// forward, a missing port, a failed M_Key check).
    pub smps_discarded: u64,
    /// Get/Set/TrapRepress that failed the M_Key check.
    pub m_key_violations: u64,
    /// Traps to the master SM sent, repeated for want of a TrapRepress,
    /// and ended by one.
    pub traps_sent: u64,
    pub traps_resent: u64,
    pub traps_repressed: u64,
    /// 0x88B5 frames that did not parse (CRC, length, delimiter).
    pub malformed_frames: u64,
    /// VL15 packets for the agent that held no readable SMP.
    pub bad_smps: u64,
    /// SMPs answered "bad version".
    pub bad_version: u64,
    /// Frames a port adapter did not take.
    pub tx_refused: u64,
}

impl Render for IbCounters {
    fn render(&self) -> String {
        if self.ports.is_empty() {
            return "no port in IB-like mode\n".to_owned();
        }
        let mut table = Table::new([
            "PORT",
            "IB",
            "XMIT DATA",
            "RCV DATA",
            "XMIT PKTS",
            "RCV PKTS",
            "XMIT WAIT",
            "RELAY ERR",
            "RCV ERR",
            "XMIT DISC",
            "VL15 DROP",
        ]);
        for p in &self.ports {
            let c = &p.counters;
            table.row([
                p.name.clone(),
                p.number.to_string(),
                c.xmit_data.to_string(),
                c.rcv_data.to_string(),
                c.xmit_packets.to_string(),
                c.rcv_packets.to_string(),
                c.xmit_wait.to_string(),
                c.rcv_switch_relay_errors.to_string(),
                c.rcv_errors.to_string(),
                c.xmit_discards.to_string(),
                c.vl15_dropped.to_string(),
            ]);
        }
        let a = &self.agent;
        format!(
            "{}(data in 4-byte words)\n\
             agent: {} SMPs answered, {} with an error status, {} discarded, {} M_Key violations\n\
             traps: {} sent, {} repeated, {} repressed\n\
             frames: {} malformed, {} bad SMPs, {} bad version, {} refused by a port\n",
            table.render(),
            a.smps_answered,
            a.smps_bad_status,
            a.smps_discarded,
            a.m_key_violations,
            a.traps_sent,
            a.traps_resent,
            a.traps_repressed,
            a.malformed_frames,
            a.bad_smps,
            a.bad_version,
            a.tx_refused,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counters_show_data_words_and_the_agents_counters() {
        let counters = IbCounters {
            ports: vec![IbPortCountersRow {
                name: "eth2".into(),
                number: 2,
                counters: IbPortCounters { xmit_data: 1000, rcv_data: 2000, vl15_dropped: 7, ..Default::default() },
            }],
            agent: IbAgentCounters {
                m_key_violations: 3,
                traps_sent: 4,
                traps_resent: 5,
                traps_repressed: 6,
                ..Default::default()
            },
        };
        let text = counters.render();
        let row = text.lines().find(|l| l.starts_with("eth2")).unwrap_or_else(|| panic!("{text}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells, ["eth2", "2", "1000", "2000", "0", "0", "0", "0", "0", "0", "7"], "{text}");
        assert!(text.contains(", 3 M_Key violations\n"), "{text}");
        assert!(text.contains("traps: 4 sent, 5 repeated, 6 repressed\n"), "{text}");
        let empty = IbCounters { ports: vec![], agent: IbAgentCounters::default() };
        assert_eq!(empty.render(), "no port in IB-like mode\n");
    }

    #[test]
    fn the_balance_shows_the_engine_the_index_each_vl_and_each_switchs_ports() {
        let balance = IbRoutesBalance {
            engine: Some("updn".into()),
            refused: vec!["ftree: not a fat-tree".into()],
            destinations: 3,
            max_routes_per_port: 2,
            min_routes_per_port: 1,
            worst_spread: 1,
            edge_forwarding_index: 4,
            unreachable_pairs: 0,
            looping_destinations: 0,
            deadlock_free_per_vl: vec![true, false],
            switches: vec![IbSwitchBalance {
                switch: "s1".into(),
                guid: "0x0000000000000100".into(),
                ports: vec![
                    IbPortRoutes { port: 1, remote: Some("ha".into()), routes: 1 },
                    IbPortRoutes { port: 2, remote: Some("s2".into()), routes: 2 },
                ],
                max_routes: 2,
                min_routes: 1,
                up_spread: 0,
                down_spread: 1,
            }],
        };
        let text = balance.render();
        assert!(text.starts_with("engine updn, 3 destination LIDs\n"), "{text}");
        assert!(text.contains("max 2, min 1, worst spread 1\n"), "{text}");
        assert!(text.contains("edge-forwarding index 4,"), "{text}");
        assert!(text.contains("deadlock free: VL0 yes, VL1 NO\n"), "{text}");
        assert!(text.contains("declined: ftree: not a fat-tree\n"), "{text}");
        let row = text.lines().find(|l| l.starts_with("s1")).unwrap_or_else(|| panic!("{text}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells, ["s1", "2", "1", "0", "1", "1(ha):1", "2(s2):2"], "{text}");
        assert!(IbRoutesBalance { engine: None, switches: vec![], ..balance }.render().starts_with("no routes"));
    }

    #[test]
    fn the_port_table_shows_each_error_counter_in_its_column() {
        let port = IbPort {
            name: "eth1".into(),
            number: 1,
            state: "active".into(),
            phys_state: "linkup".into(),
            data_vls: 2,
            mtu: 2048,
            flow_control: true,
            counters: IbPortCounters {
                xmit_wait: 11,
                rcv_switch_relay_errors: 22,
                rcv_errors: 33,
                xmit_discards: 44,
                vl15_dropped: 55,
                ..IbPortCounters::default()
            },
            vls: vec![],
        };
        let text = vec![port].render();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
        let _rule = lines.next();
        let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        for (column, value) in
            [("XMIT WAIT", "11"), ("RELAY ERR", "22"), ("RCV ERR", "33"), ("XMIT DISC", "44"), ("VL15 DROP", "55")]
        {
            let at = header.iter().position(|h| *h == column).unwrap_or_else(|| panic!("{column} in {header:?}"));
            assert_eq!(row[at], value, "{column}:\n{text}");
        }
    }
}
