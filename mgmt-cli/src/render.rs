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
            Reply::LosslessFindings(v) => v.render(),
            Reply::LosslessProfile(v) => format!("{}\n", serde_json::to_string_pretty(v).unwrap_or_default()),
            Reply::Backend(v) => v.render(),
            Reply::BgpSummary(v) => v.render(),
            Reply::BgpNeighbors(v) => v.render(),
            Reply::BgpRoutes(v) => v.render(),
            Reply::BfdPeers(v) => v.render(),
            Reply::IpRoutes(v) => v.render(),
            Reply::InterfaceCounters(v) => v.render(),
            Reply::PfcCounters(v) => v.render(),
            Reply::QueueCounters(v) => v.render(),
            Reply::WredCounters(v) => v.render(),
            Reply::Watermarks(v) => v.render(),
            Reply::BufferPool(v) => v.render(),
            Reply::PfcwdStats(v) => v.render(),
            Reply::Dlb(v) => v.render(),
            Reply::IbPorts(v) => v.render(),
            Reply::IbCounters(v) => v.render(),
            Reply::IbLft(v) => v.render(),
            Reply::IbSm(v) => v.render(),
            Reply::IbTopology(v) => v.render(),
            Reply::IbRoutesBalance(v) => v.render(),
            Reply::BgpEvpnRoutes(v) => v.render(),
            Reply::EvpnVnis(v) => v.render(),
            Reply::EvpnMacs(v) => v.render(),
            Reply::EvpnArpCache(v) => v.render(),
            Reply::Vrfs(v) => v.render(),
            Reply::Completions(v) => v.render(),
            Reply::CommitHistory(v) => v.render(),
            Reply::Validated(v) => v.render(),
            Reply::Committed(v) => v.render(),
            Reply::Saved(v) => format!("saved generation {} to {}\n", v.generation, v.path),
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
                (c.rx_drops + c.tx_drops + c.rx_ring_drops).to_string(),
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

impl Render for BackendInfo {
    fn render(&self) -> String {
        let mut table = Table::new(["BACKEND".to_owned(), self.name.clone()]);
        for (key, value) in &self.details {
            table.row([key.clone(), value.clone()]);
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

impl Render for Completions {
    fn render(&self) -> String {
        let mut table = Table::new(["KIND", "VALUES"]);
        table.row(["interfaces".to_owned(), join(&self.interfaces, " ")]);
        table.row(["vlans".to_owned(), join(&self.vlans, " ")]);
        table.row(["vnis".to_owned(), join(&self.vnis, " ")]);
        table.row(["neighbors".to_owned(), join(&self.neighbors, " ")]);
        table.row(["prefixes".to_owned(), join(&self.prefixes, " ")]);
        table.render()
    }
}

impl Render for Vec<CommitEntry> {
    fn render(&self) -> String {
        let mut table = Table::new(["#", "GENERATION", "TIME (UTC)", "USER", "CONFIRM", "COMMENT"]);
        for (back, entry) in self.iter().enumerate() {
            table.row([
                back.to_string(),
                entry.generation.to_string(),
                utc_time(entry.time_unix),
                entry.user.clone(),
                or_dash(entry.confirm.as_ref()),
                or_dash(entry.comment.as_ref()),
            ]);
        }
        table.render()
    }
}

impl Render for Validated {
    fn render(&self) -> String {
        if self.diff.is_empty() {
            "configuration check succeeds (no changes)\n".into()
        } else {
            format!("configuration check succeeds\n{}", self.diff)
        }
    }
}

impl Render for Committed {
    fn render(&self) -> String {
        let mut text = match self.rollback_in_secs {
            Some(secs) => format!(
                "{} (generation {}); rolled back in {secs}s unless confirmed by `commit`\n",
                self.outcome, self.generation
            ),
            None => format!("{} (generation {})\n", self.outcome, self.generation),
        };
        for line in &self.disrupted {
            text.push_str(&format!("note: {line}\n"));
        }
        text
    }
}

/// `2026-11-26 06:12:05` from seconds since the epoch (proleptic Gregorian,
/// Howard Hinnant's days-to-civil).
pub fn utc_time(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

type CounterOf = fn(&BgpMessageCounters) -> u64;

/// `01:02:03`, or `1d02h03m` past a day, as FRR prints uptimes.
fn uptime(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 { format!("{d}d{h:02}h{m:02}m") } else { format!("{h:02}:{m:02}:{s:02}") }
}

impl Render for BgpSummary {
    fn render(&self) -> String {
        if !self.enabled {
            return "BGP is not configured\n".to_owned();
        }
        let mut out = format!(
            "BGP router identifier {}, local AS number {}\nRIB entries {}, install failures {}\nPeers {}\n\n",
            or_dash(self.router_id),
            self.asn,
            self.loc_rib_routes,
            self.install_failures,
            self.peers.len()
        );
        let mut table =
            Table::new(["Neighbor", "V", "AS", "MsgRcvd", "MsgSent", "Up/Down", "State/PfxRcd", "PfxSnt", "Desc"]);
        for p in &self.peers {
            let established = p.state == "Established";
            table.row([
                p.address.to_string(),
                "4".into(),
                p.remote_as.to_string(),
                p.messages_received.to_string(),
                p.messages_sent.to_string(),
                p.uptime_secs.map(uptime).unwrap_or_else(|| "never".into()),
                if established { p.prefixes_received.to_string() } else { p.state.clone() },
                p.prefixes_sent.to_string(),
                or_dash(p.description.as_ref()),
            ]);
        }
        out.push_str(&table.render());
        out.push_str(&format!("\nTotal number of neighbors {}\n", self.peers.len()));
        out
    }
}

impl Render for BfdPeers {
    fn render(&self) -> String {
        let mut table = Table::new([
            "PEER",
            "STATE",
            "REMOTE",
            "TX/RX MS",
            "MULT",
            "DETECT MS",
            "UPTIME",
            "LAST DOWN",
            "RX PKTS",
            "TX PKTS",
            "UPS",
            "DOWNS",
        ]);
        for p in &self.peers {
            table.row([
                p.peer.to_string(),
                p.state.clone(),
                p.remote_state.clone(),
                format!("{}/{}", p.negotiated_transmit_ms, p.receive_interval_ms),
                p.detect_multiplier.to_string(),
                p.detection_time_ms.to_string(),
                or_dash(p.uptime_ms.map(|ms| uptime(ms / 1000))),
                or_dash(p.last_down_diagnostic.as_ref()),
                p.packets_received.to_string(),
                p.packets_sent.to_string(),
                p.up_transitions.to_string(),
                p.down_transitions.to_string(),
            ]);
        }
        let mut out = if self.peers.is_empty() { "no BFD sessions\n".to_owned() } else { table.render() };
        let discarded = self.discarded_malformed + self.discarded_bad_ttl + self.discarded_no_session;
        if discarded > 0 {
            out.push_str(&format!(
                "discarded: {} malformed, {} TTL below 255, {} for no session\n",
                self.discarded_malformed, self.discarded_bad_ttl, self.discarded_no_session
            ));
        }
        out
    }
}

impl Render for Vec<BgpNeighbor> {
    fn render(&self) -> String {
        if self.is_empty() {
            return "no BGP neighbors\n".to_owned();
        }
        let mut out = String::new();
        for n in self {
            out.push_str(&format!(
                "BGP neighbor is {}, remote AS {}, local AS {}, {} link\n",
                n.address, n.remote_as, n.local_as, n.link
            ));
            if let Some(d) = &n.description {
                out.push_str(&format!(" Description: {d}\n"));
            }
            out.push_str(&format!("  BGP state = {}", n.state));
            if let Some(up) = n.uptime_secs {
                out.push_str(&format!(", up for {}", uptime(up)));
            }
            out.push('\n');
            out.push_str(&format!(
                "  Remote router ID {}, local address {}\n",
                or_dash(n.remote_router_id),
                or_dash(n.local_address)
            ));
            if let (Some(hold), Some(ka)) = (n.hold_time_secs, n.keepalive_secs) {
                out.push_str(&format!("  Hold time is {hold} seconds, keepalive interval is {ka} seconds\n"));
            }
            out.push_str(&format!("  Address families: {}\n", join(&n.families, ", ")));
            if !n.capabilities.is_empty() {
                out.push_str(&format!("  Capabilities: {}\n", join(&n.capabilities, ", ")));
            }
            if !n.disabled_families.is_empty() {
                out.push_str(&format!("  Disabled by RFC 7606: {}\n", join(&n.disabled_families, ", ")));
            }
            out.push_str(&format!(
                "  Policies: import {}, export {}\n",
                or_dash(n.import_policy.as_ref()),
                or_dash(n.export_policy.as_ref())
            ));
            out.push_str(&format!("  Established {} time(s)\n", n.established_transitions));
            out.push_str("  Message statistics:\n");
            let mut table = Table::new(["", "Sent", "Rcvd"]);
            let rows: [(&str, CounterOf); 5] = [
                ("Opens:", |c| c.open),
                ("Notifications:", |c| c.notification),
                ("Updates:", |c| c.update),
                ("Keepalives:", |c| c.keepalive),
                ("Route Refresh:", |c| c.route_refresh),
            ];
            for (name, get) in rows {
                table.row([format!("    {name}"), get(&n.sent).to_string(), get(&n.received).to_string()]);
            }
            let total = |c: &BgpMessageCounters| c.open + c.notification + c.update + c.keepalive + c.route_refresh;
            table.row(["    Total:".to_owned(), total(&n.sent).to_string(), total(&n.received).to_string()]);
            // The table's header underline is noise here.
            for (i, line) in table.render().lines().enumerate() {
                if i != 1 {
                    out.push_str(line.trim_end());
                    out.push('\n');
                }
            }
            out.push_str(&format!(
                "  Prefixes: received {}, sent {}, rejected {}\n",
                n.prefixes_received, n.prefixes_sent, n.rejected_routes
            ));
            out.push_str(&format!(
                "  Errors: decode {}, treat-as-withdraw {}, attribute-discard {}, afi-safi-disable {}\n",
                n.decode_errors, n.treat_as_withdraw, n.attribute_discard, n.afi_safi_disable
            ));
            if let Some(e) = &n.last_error {
                out.push_str(&format!("  Last reset: {e}\n"));
            }
            out.push('\n');
        }
        out
    }
}

impl Render for BgpRoutes {
    fn render(&self) -> String {
        let mut out = format!(
            "BGP table, local router ID is {}, local AS {}\n\
             Status codes: * valid, > best, = multipath\n\
             Origin codes: i - IGP, e - EGP, ? - incomplete\n\n",
            or_dash(self.router_id),
            self.asn
        );
        let mut table = Table::new(["", "Network", "Next Hop", "Metric", "LocPrf", "Path"]);
        for r in &self.routes {
            for (i, p) in r.paths.iter().enumerate() {
                let status = format!(
                    "*{}",
                    if p.best {
                        ">"
                    } else if p.multipath {
                        "="
                    } else {
                        ""
                    }
                );
                let next_hop = match (p.peer, p.next_hop) {
                    (None, _) => "0.0.0.0".to_owned(),
                    (Some(_), hop) => or_dash(hop),
                };
                let path = if p.as_path.is_empty() { p.origin.clone() } else { format!("{} {}", p.as_path, p.origin) };
                table.row([
                    status,
                    if i == 0 { r.prefix.clone() } else { String::new() },
                    next_hop,
                    or_dash(p.med),
                    or_dash(p.local_pref),
                    path,
                ]);
            }
        }
        out.push_str(&table.render());
        let paths: usize = self.routes.iter().map(|r| r.paths.len()).sum();
        out.push_str(&format!("\nDisplayed {} routes and {paths} total paths\n", self.routes.len()));
        if let [only] = &self.routes[..] {
            out.push_str(&format!("Best path to {} chosen by: {}\n", only.prefix, only.reason));
            for p in only.paths.iter().filter(|p| !p.communities.is_empty()) {
                out.push_str(&format!("  from {}: communities {}\n", or_dash(p.peer), p.communities.join(" ")));
            }
        }
        out
    }
}

impl Render for BgpEvpnRoutes {
    fn render(&self) -> String {
        let mut out = format!(
            "BGP table version, local router ID is {}, local AS {}\n\
             Status codes: * valid, > best\n\
             EVPN type-1 prefix: [1]:[ESI]:[EthTag]\n\
             EVPN type-2 prefix: [2]:[EthTag]:[MAClen]:[MAC]:[IPlen]:[IP]\n\
             EVPN type-3 prefix: [3]:[EthTag]:[IPlen]:[OrigIP]\n\
             EVPN type-4 prefix: [4]:[ESI]:[IPlen]:[OrigIP]\n\
             EVPN type-5 prefix: [5]:[EthTag]:[IPlen]:[IP]\n\n",
            or_dash(self.router_id),
            self.asn
        );
        let mut table = Table::new(["", "Network", "Next Hop", "LocPrf", "Path", "VNI", "Extended Communities"]);
        for r in &self.routes {
            for (i, p) in r.paths.iter().enumerate() {
                let vni = match (p.label1, p.label2) {
                    (Some(l1), Some(l2)) => format!("{l1}/{l2}"),
                    (Some(l1), None) => l1.to_string(),
                    _ => "-".into(),
                };
                let path = if p.as_path.is_empty() { p.origin.clone() } else { format!("{} {}", p.as_path, p.origin) };
                table.row([
                    if p.best { "*>" } else { "*" }.to_owned(),
                    if i == 0 { r.prefix.clone() } else { String::new() },
                    if p.peer.is_none() { "0.0.0.0".to_owned() } else { or_dash(p.next_hop) },
                    or_dash(p.local_pref),
                    path,
                    vni,
                    join(&p.ext_communities, " "),
                ]);
            }
        }
        out.push_str(&table.render());
        let paths: usize = self.routes.iter().map(|r| r.paths.len()).sum();
        out.push_str(&format!("\nDisplayed {} prefixes ({paths} paths)\n", self.routes.len()));
        out
    }
}

impl Render for Vec<EvpnVni> {
    fn render(&self) -> String {
        let mut table =
            Table::new(["VNI", "Type", "VRF", "RD", "Import RT", "Export RT", "#MACs", "#ARP", "Remote VTEPs"]);
        for v in self {
            table.row([
                v.vni.to_string(),
                v.kind.clone(),
                or_dash(v.vrf.as_ref()),
                v.rd.clone(),
                join(&v.import_rts, ","),
                join(&v.export_rts, ","),
                (v.local_macs + v.remote_macs).to_string(),
                v.arp_entries.to_string(),
                join(&v.remote_vteps, ","),
            ]);
        }
        table.render()
    }
}

impl Render for Vec<EvpnMac> {
    fn render(&self) -> String {
        let mut table = Table::new(["VNI", "MAC", "Type", "Remote VTEP", "Sequence", "Moves", "Refused", "Flags"]);
        for m in self {
            let mut flags = Vec::new();
            if m.sticky {
                flags.push("sticky");
            }
            if m.duplicate {
                flags.push("duplicate");
            }
            table.row([
                m.vni.to_string(),
                m.mac.clone(),
                m.kind.clone(),
                or_dash(m.vtep),
                m.sequence.to_string(),
                m.moves.to_string(),
                m.refused_moves.to_string(),
                join(&flags, ","),
            ]);
        }
        table.render()
    }
}

impl Render for Vec<EvpnArp> {
    fn render(&self) -> String {
        let mut table = Table::new(["VNI", "IP", "MAC", "Type"]);
        for a in self {
            table.row([a.vni.to_string(), a.ip.to_string(), a.mac.clone(), a.kind.clone()]);
        }
        table.render()
    }
}

impl Render for Vec<Vrf> {
    fn render(&self) -> String {
        let mut out = String::new();
        for v in self {
            out.push_str(&format!("VRF {} L3VNI {} router MAC {} RD {}\n", v.name, v.l3vni, v.router_mac, v.rd));
            let mut table = Table::new(["Prefix", "Next hops"]);
            for r in &v.routes {
                table.row([r.prefix.clone(), join(&r.next_hops, ", ")]);
            }
            out.push_str(&table.render());
        }
        out
    }
}

/// What the first lines of `show ip route` say (FRR's legend).
pub const IP_ROUTE_CODES: &str = "Codes: K - kernel route, C - connected, L - local, S - static, B - BGP\n       \
     > - selected route, * - FIB route\n\n";

impl Render for Vec<IpRoute> {
    fn render(&self) -> String {
        let mut out = String::from(IP_ROUTE_CODES);
        for route in self {
            render_ip_route(route, &mut out);
        }
        out
    }
}

/// One route of `show ip route`, a line per next hop (ECMP members
/// aligned under the first): rows stand alone, so a streamed table is
/// printed as its routes arrive.
pub fn render_ip_route(r: &IpRoute, out: &mut String) {
    let code = match r.protocol.as_str() {
        "connected" => 'C',
        "local" => 'L',
        "static" => 'S',
        "bgp" => 'B',
        "kernel" => 'K',
        _ => '?',
    };
    let selected = if r.installed { ">" } else { " " };
    let head = format!("{code}{selected}");
    let metric = if matches!(r.protocol.as_str(), "connected" | "local") {
        String::new()
    } else {
        format!(" [{}/{}]", r.distance, r.metric)
    };
    if r.next_hops.is_empty() {
        let what = if r.protocol == "local" { "is local" } else { "unreachable (blackhole)" };
        out.push_str(&format!("{head}{} {}{metric} {what}\n", if r.installed { "*" } else { " " }, r.prefix));
        return;
    }
    let indent = head.len() + 1 + r.prefix.len() + metric.len();
    for (i, nh) in r.next_hops.iter().enumerate() {
        let fib = if nh.active { "*" } else { " " };
        let iface = nh.interface.as_deref().unwrap_or("-");
        let rmac = nh.router_mac.as_deref().map(|m| format!(" rmac {m}")).unwrap_or_default();
        let via = match nh.ip {
            Some(ip) => format!("via {ip}, {iface}{rmac}"),
            None => format!("is directly connected, {iface}"),
        };
        if i == 0 {
            out.push_str(&format!("{head}{fib} {}{metric} {via}\n", r.prefix));
        } else {
            out.push_str(&format!("  {fib}{:indent$} {via}\n", "", indent = indent - 2));
        }
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
        let backend = BackendInfo { name: "kernel".into(), details: vec![("bridge_mode".into(), "per-vlan".into())] };
        let text = Reply::Backend(backend).render();
        assert!(
            text.contains("kernel") && text.lines().any(|l| l.contains("bridge_mode") && l.contains("per-vlan")),
            "{text}"
        );
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
            counters: Counters {
                rx_packets: 5,
                rx_bytes: 420,
                tx_packets: 7,
                tx_bytes: 600,
                rx_drops: 1,
                tx_drops: 1,
                rx_ring_drops: 2,
            },
            rx_ring_wait: None,
        }]);
        let text = reply.render();
        let row = text.lines().nth(2).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells,
            ["eth1", "afpacket", "up", "down", "9100", "access", "10", "-", "5", "420", "7", "600", "4"],
            "ring drops count with the others"
        );
    }

    fn hop(ip: &str, interface: &str, active: bool) -> IpRouteNextHop {
        IpRouteNextHop { ip: Some(ip.parse().unwrap()), interface: Some(interface.into()), active, router_mac: None }
    }

    #[test]
    fn ip_route_over_the_l3vni_shows_the_router_mac() {
        let mut hop = hop("10.255.0.2", "vni4001", true);
        hop.router_mac = Some("02:cc:00:00:00:02".into());
        let route = IpRoute {
            prefix: "172.16.2.12/32".into(),
            protocol: "bgp".into(),
            distance: 20,
            metric: 0,
            installed: true,
            next_hops: vec![hop],
        };
        let text = Reply::IpRoutes(vec![route]).render();
        assert!(text.contains("B>* 172.16.2.12/32 [20/0] via 10.255.0.2, vni4001 rmac 02:cc:00:00:00:02"), "{text}");
    }

    #[test]
    fn ip_route_prints_codes_and_aligns_ecmp_members() {
        let route = |prefix: &str, protocol: &str, distance, installed, next_hops| IpRoute {
            prefix: prefix.into(),
            protocol: protocol.into(),
            distance,
            metric: 0,
            installed,
            next_hops,
        };
        let reply = Reply::IpRoutes(vec![
            route(
                "10.1.1.0/31",
                "connected",
                0,
                true,
                vec![IpRouteNextHop { ip: None, interface: Some("eth1".into()), active: true, router_mac: None }],
            ),
            route("10.1.1.0/32", "local", 0, true, vec![]),
            route(
                "10.255.0.2/32",
                "bgp",
                20,
                true,
                vec![hop("10.1.1.1", "eth1", true), hop("10.1.2.1", "eth2", true), hop("10.9.9.9", "-", false)],
            ),
            route("10.7.0.0/16", "bgp", 200, false, vec![hop("10.8.8.8", "-", false)]),
        ]);
        let text = reply.render();
        let lines: Vec<&str> = text.lines().skip(3).collect();
        assert_eq!(
            lines,
            [
                "C>* 10.1.1.0/31 is directly connected, eth1",
                "L>* 10.1.1.0/32 is local",
                "B>* 10.255.0.2/32 [20/0] via 10.1.1.1, eth1",
                "  *                      via 10.1.2.1, eth2",
                "                         via 10.9.9.9, -",
                "B   10.7.0.0/16 [200/0] via 10.8.8.8, -",
            ],
            "{text}"
        );
    }

    #[test]
    fn bgp_summary_and_table_read_like_frr() {
        let peer = |address: &str, state: &str, uptime| BgpPeer {
            address: address.parse().unwrap(),
            remote_as: 65000,
            description: Some("s1".into()),
            state: state.into(),
            uptime_secs: uptime,
            prefixes_received: 5,
            prefixes_sent: 6,
            messages_received: 10,
            messages_sent: 11,
        };
        let summary = Reply::BgpSummary(BgpSummary {
            enabled: true,
            asn: 65101,
            router_id: Some(Ipv4Addr::new(10, 255, 0, 1)),
            loc_rib_routes: 7,
            install_failures: 0,
            peers: vec![peer("10.1.1.1", "Established", Some(3725)), peer("10.1.2.1", "Active", None)],
        });
        let text = summary.render();
        assert!(text.starts_with("BGP router identifier 10.255.0.1, local AS number 65101\n"), "{text}");
        let cells = |line: &str| line.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        let rows: Vec<Vec<String>> = text.lines().filter(|l| l.starts_with("10.")).map(cells).collect();
        assert_eq!(rows[0], ["10.1.1.1", "4", "65000", "10", "11", "01:02:05", "5", "6", "s1"]);
        assert_eq!(rows[1][5..7], ["never", "Active"]);
        assert_eq!(uptime(2 * 86400 + 3 * 3600 + 60), "2d03h01m");
        assert_eq!(Reply::BgpSummary(BgpSummary::default()).render(), "BGP is not configured\n");

        let path = |peer: Option<&str>, best, next_hop: Option<&str>, as_path: &str| BgpPath {
            peer: peer.map(|p| p.parse().unwrap()),
            best,
            multipath: true,
            next_hop: next_hop.map(|p| p.parse().unwrap()),
            as_path: as_path.into(),
            origin: "i".into(),
            med: None,
            local_pref: None,
            communities: vec![],
        };
        let table = Reply::BgpRoutes(BgpRoutes {
            family: AddressFamily::Ipv4,
            router_id: Some(Ipv4Addr::new(10, 255, 0, 1)),
            asn: 65101,
            routes: vec![
                BgpRoute {
                    prefix: "10.255.0.1/32".into(),
                    reason: "only path".into(),
                    paths: vec![path(None, true, None, "")],
                },
                BgpRoute {
                    prefix: "10.255.0.2/32".into(),
                    reason: "router id".into(),
                    paths: vec![
                        path(Some("10.1.1.1"), true, Some("10.1.1.1"), "65000 65102"),
                        path(Some("10.1.2.1"), false, Some("10.1.2.1"), "65000 65102"),
                    ],
                },
            ],
        });
        let text = table.render();
        let rows: Vec<Vec<String>> = text.lines().filter(|l| l.starts_with('*')).map(cells).collect();
        assert_eq!(rows[0], ["*>", "10.255.0.1/32", "0.0.0.0", "-", "-", "i"]);
        assert_eq!(rows[1], ["*>", "10.255.0.2/32", "10.1.1.1", "-", "-", "65000", "65102", "i"]);
        assert_eq!(rows[2], ["*=", "10.1.2.1", "-", "-", "65000", "65102", "i"]);
        assert!(text.contains("Displayed 2 routes and 3 total paths"), "{text}");
    }
}
