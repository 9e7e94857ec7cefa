//! Human-readable rendering of every [`Reply`]: one [`Render`] impl per
//! payload type.

use crate::api::*;
use crate::table::Table;

/// Renders a reply payload as text for a terminal.
pub trait Render {
    fn render(&self) -> String;
}

impl Render for Reply {
    fn render(&self) -> String {
        match self {
            Reply::Interfaces(v) => v.render(),
            Reply::Mac(v) => v.render(),
            Reply::Vxlan(v) => v.render(),
            Reply::Neighbors(v) => v.render(),
            Reply::Routes(v) => v.render(),
            Reply::Lldp(v) => v.render(),
            Reply::RunningConfig(v) => v.render(),
            Reply::Drops(v) => v.render(),
        }
    }
}

fn or_dash(value: Option<impl ToString>) -> String {
    value.map(|v| v.to_string()).unwrap_or_else(|| "-".to_owned())
}

fn up_down(up: bool) -> &'static str {
    if up { "up" } else { "down" }
}

fn join<T: ToString>(items: &[T], sep: &str) -> String {
    if items.is_empty() {
        return "-".to_owned();
    }
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(sep)
}

impl Render for Vec<Interface> {
    fn render(&self) -> String {
        let mut table = Table::new([
            "INTERFACE",
            "KIND",
            "ADMIN",
            "OPER",
            "MTU",
            "MODE",
            "ADDRESSES",
            "RX PKTS",
            "RX BYTES",
            "TX PKTS",
            "TX BYTES",
            "DROPS",
        ]);
        for i in self {
            let c = &i.counters;
            table.row([
                i.name.clone(),
                i.kind.clone(),
                up_down(i.admin_up).to_owned(),
                up_down(i.oper_up).to_owned(),
                i.mtu.to_string(),
                i.mode.clone(),
                join(&i.addresses, ","),
                c.rx_packets.to_string(),
                c.rx_bytes.to_string(),
                c.tx_packets.to_string(),
                c.tx_bytes.to_string(),
                (c.rx_drops + c.tx_drops).to_string(),
            ]);
        }
        table.render()
    }
}

impl Render for Vec<MacEntry> {
    fn render(&self) -> String {
        let mut table = Table::new(["VLAN", "MAC", "DESTINATION", "TYPE", "AGE"]);
        for e in self {
            table.row([
                e.vlan.to_string(),
                e.mac.clone(),
                e.destination.clone(),
                e.kind.clone(),
                e.age_secs.map(|s| format!("{s}s")).unwrap_or_else(|| "-".into()),
            ]);
        }
        format!("{}{} entries\n", table.render(), self.len())
    }
}

impl Render for Vxlan {
    fn render(&self) -> String {
        let Some(source) = self.source else {
            return "VXLAN: not configured\n".to_owned();
        };
        let mut out = format!("VTEP source {source}, UDP port {}\n\n", self.udp_port);
        let mut vnis = Table::new(["VNI", "VLAN", "FLOOD LIST"]);
        for m in &self.vnis {
            vnis.row([m.vni.to_string(), m.vlan.to_string(), join(&m.flood, ",")]);
        }
        out.push_str(&vnis.render());
        out.push('\n');
        let mut remotes = Table::new(["REMOTE VTEP", "VNIS", "MACS"]);
        for r in &self.remote_vteps {
            remotes.row([r.address.to_string(), join(&r.vnis, ","), r.macs.to_string()]);
        }
        out.push_str(&remotes.render());
        out
    }
}

impl Render for Vec<Neighbor> {
    fn render(&self) -> String {
        let mut table = Table::new(["INTERFACE", "ADDRESS", "MAC", "STATE"]);
        for n in self {
            table.row([n.interface.clone(), n.ip.to_string(), or_dash(n.mac.as_ref()), n.state.clone()]);
        }
        table.render()
    }
}

impl Render for Vec<Route> {
    fn render(&self) -> String {
        let mut table = Table::new(["PREFIX", "TYPE", "NEXT HOP", "INTERFACE"]);
        for r in self {
            if r.next_hops.is_empty() {
                table.row([r.prefix.clone(), r.kind.clone(), "-".into(), "-".into()]);
            }
            // ECMP members go one per line, the prefix only on the first.
            for (i, nh) in r.next_hops.iter().enumerate() {
                let (prefix, kind) =
                    if i == 0 { (r.prefix.clone(), r.kind.clone()) } else { (String::new(), String::new()) };
                let via = match nh.ip {
                    Some(ip) => ip.to_string(),
                    None => "direct".into(),
                };
                table.row([prefix, kind, via, or_dash(nh.interface.as_ref())]);
            }
        }
        table.render()
    }
}

impl Render for Vec<LldpNeighbor> {
    fn render(&self) -> String {
        let mut table =
            Table::new(["LOCAL PORT", "CHASSIS ID", "PORT ID", "SYSTEM NAME", "PORT DESCRIPTION", "TTL", "EXPIRES"]);
        for n in self {
            table.row([
                n.local_port.clone(),
                n.chassis_id.clone(),
                n.port_id.clone(),
                or_dash(n.system_name.as_ref()),
                or_dash(n.port_description.as_ref()),
                format!("{}s", n.ttl_secs),
                format!("{}s", n.expires_in_secs),
            ]);
        }
        table.render()
    }
}

impl Render for Vec<DropCount> {
    fn render(&self) -> String {
        if self.is_empty() {
            return "no drops\n".to_owned();
        }
        let mut table = Table::new(["INTERFACE", "REASON", "PACKETS"]);
        for d in self {
            table.row([
                d.interface.clone().unwrap_or_else(|| "(switch)".into()),
                d.reason.clone(),
                d.packets.to_string(),
            ]);
        }
        table.render()
    }
}

impl Render for RunningConfig {
    fn render(&self) -> String {
        let mut text = self.yaml.clone();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn mac_table_lists_each_entry_aligned() {
        let reply = Reply::Mac(vec![
            MacEntry {
                vlan: 10,
                mac: "02:00:00:00:00:01".into(),
                destination: "eth1".into(),
                kind: "dynamic".into(),
                age_secs: Some(3),
            },
            MacEntry {
                vlan: 100,
                mac: "02:00:00:00:00:02".into(),
                destination: "vtep 10.0.0.2".into(),
                kind: "static".into(),
                age_secs: None,
            },
        ]);
        assert_eq!(
            reply.render(),
            "VLAN  MAC                DESTINATION    TYPE     AGE\n\
             ----  -----------------  -------------  -------  ---\n\
             10    02:00:00:00:00:01  eth1           dynamic  3s\n\
             100   02:00:00:00:00:02  vtep 10.0.0.2  static   -\n\
             2 entries\n"
        );
    }

    #[test]
    fn ecmp_route_shows_one_line_per_next_hop() {
        let reply = Reply::Routes(vec![
            Route {
                prefix: "0.0.0.0/0".into(),
                kind: "static".into(),
                next_hops: vec![
                    NextHop { ip: Some("10.0.1.2".parse().unwrap()), interface: Some("eth2".into()) },
                    NextHop { ip: Some("10.0.2.2".parse().unwrap()), interface: Some("eth3".into()) },
                ],
            },
            Route {
                prefix: "10.0.1.0/24".into(),
                kind: "connected".into(),
                next_hops: vec![NextHop { ip: None, interface: Some("eth2".into()) }],
            },
        ]);
        let text = reply.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "PREFIX       TYPE       NEXT HOP  INTERFACE");
        assert_eq!(lines[2], "0.0.0.0/0    static     10.0.1.2  eth2");
        assert_eq!(lines[3], "                        10.0.2.2  eth3");
        assert_eq!(lines[4], "10.0.1.0/24  connected  direct    eth2");
    }

    #[test]
    fn vxlan_shows_vnis_and_remote_vteps() {
        let reply = Reply::Vxlan(Vxlan {
            source: Some(Ipv4Addr::new(10, 0, 0, 1)),
            udp_port: 4789,
            vnis: vec![VniMapping { vni: 10010, vlan: 10, flood: vec![Ipv4Addr::new(10, 0, 0, 2)] }],
            remote_vteps: vec![RemoteVtep { address: Ipv4Addr::new(10, 0, 0, 2), vnis: vec![10010], macs: 1 }],
        });
        let text = reply.render();
        assert!(text.starts_with("VTEP source 10.0.0.1, UDP port 4789\n"));
        assert!(text.contains("10010  10    10.0.0.2\n"), "{text}");
        assert!(text.contains("10.0.0.2     10010  1\n"), "{text}");
        assert_eq!(Reply::Vxlan(Vxlan::default()).render(), "VXLAN: not configured\n");
    }

    #[test]
    fn drops_list_reasons_per_interface() {
        let reply = Reply::Drops(vec![
            DropCount { interface: None, reason: "neighbor-miss".into(), packets: 3 },
            DropCount { interface: Some("eth1".into()), reason: "neighbor-miss".into(), packets: 3 },
        ]);
        assert_eq!(
            reply.render(),
            "INTERFACE  REASON         PACKETS\n\
             ---------  -------------  -------\n\
             (switch)   neighbor-miss  3\n\
             eth1       neighbor-miss  3\n"
        );
        assert_eq!(Reply::Drops(Vec::new()).render(), "no drops\n");
    }

    #[test]
    fn interfaces_show_state_and_counters() {
        let reply = Reply::Interfaces(vec![Interface {
            name: "eth1".into(),
            kind: "afpacket".into(),
            admin_up: true,
            oper_up: false,
            mtu: 9100,
            mode: "access 10".into(),
            addresses: vec![],
            mac: None,
            counters: Counters { rx_packets: 5, rx_bytes: 420, tx_packets: 7, tx_bytes: 600, rx_drops: 1, tx_drops: 1 },
        }]);
        let text = reply.render();
        let row = text.lines().nth(2).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells, ["eth1", "afpacket", "up", "down", "9100", "access", "10", "-", "5", "420", "7", "600", "2"]);
    }
}
