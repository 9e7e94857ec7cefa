//! `switchd demo`: a leaf-spine EVPN fabric in memory, no file and no root.
//!
//! ```text
//!               spine1                  spine2          (eBGP: IPv4 underlay and
//!           eth1/      \eth2       eth1/      \eth2         L2VPN EVPN; IPv6 underlay)
//!      eth1/            \eth1  eth2/           \eth2
//!        leaf1 ----------------------------- leaf2      (VTEPs, ECMP over both spines)
//!   eth3 eth4 eth5 eth6                  eth3 eth4 eth5
//!    h1   h5   h3   h6                    h2   h4   h7
//!    red VLAN 10  red 20  blue 30         red 10    blue 40
//! ```
//!
//! Two tenants, each a VRF with an L3VNI and a router MAC per leaf
//! (symmetric IRB, RFC 9135): red has VNIs 10010 and 10020 on both leaves,
//! blue VNI 10030 on leaf1 and 10040 on leaf2; every SVI is an anycast
//! gateway. No VXLAN state is configured beyond the VNIs: the leaves'
//! speakers originate type 3 routes per VNI (the flood lists), type 2 from
//! the MACs and ARP/ND their dataplanes learn, and type 5 for blue's
//! subnets, and install what they import, as the daemon does.
//!
//! Each switch is the daemon's own stack: the config (embedded from
//! `switchd/demo/*.yaml`) validated and applied to a shim with the soft
//! backend, plus its LLDP agent and BGP speaker. Links are in memory; a loop
//! moves every frame a switch emits to the peer's input, in virtual time.
//! Hosts are the small IPv4/IPv6 stacks of [`host`]. Nothing is faked: every
//! frame printed went through the pipeline, and the tables at the end are
//! the management API's answers, rendered as `swcli` renders them.

pub mod bgp;
mod evpn;
pub mod host;
pub mod ib;
pub mod trace;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use dataplane::node::{Node, Ports};
use dataplane::pipeline::{Disposition, Egress, PortId};
use dataplane::wire::{EtherType, EthernetAddress, EthernetFrame};
use mgmt_cli::api::Request;
use mgmt_cli::render::Render;
use sai_shim::{HostInterfaceAttr, ObjectId};

use crate::config::Config;
use crate::daemon;
use crate::mgmt::SwitchView;
use bgp::{DemoSpeaker, Speakers};
use host::Host;
pub use trace::{OverlayFrame, Trace};

/// The switches' startup configs, as a deployment would have them.
pub const CONFIGS: [(&str, &str); 4] = [
    ("leaf1", include_str!("../demo/leaf1.yaml")),
    ("leaf2", include_str!("../demo/leaf2.yaml")),
    ("spine1", include_str!("../demo/spine1.yaml")),
    ("spine2", include_str!("../demo/spine2.yaml")),
];

/// (switch, port) <-> (switch, port) cables.
const CABLES: [(&str, &str, &str, &str); 4] = [
    ("leaf1", "eth1", "spine1", "eth1"),
    ("leaf1", "eth2", "spine2", "eth1"),
    ("leaf2", "eth1", "spine1", "eth2"),
    ("leaf2", "eth2", "spine2", "eth2"),
];

/// Hosts: name, switch, port, address, gateway (the anycast gateway of
/// their VLAN, the same on every leaf).
const HOSTS: [(&str, &str, &str, &str, Option<&str>); 7] = [
    ("h1", "leaf1", "eth3", "192.168.10.11/24", Some("192.168.10.1")),
    ("h5", "leaf1", "eth4", "192.168.10.15/24", Some("192.168.10.1")),
    ("h3", "leaf1", "eth5", "192.168.20.13/24", Some("192.168.20.1")),
    ("h6", "leaf1", "eth6", "192.168.30.16/24", Some("192.168.30.1")),
    ("h2", "leaf2", "eth3", "192.168.10.12/24", Some("192.168.10.1")),
    ("h4", "leaf2", "eth4", "192.168.10.14/24", Some("192.168.10.1")),
    ("h7", "leaf2", "eth5", "192.168.40.17/24", Some("192.168.40.1")),
];

/// Hosts with IPv6 too: name, address, default router.
const HOSTS_V6: [(&str, &str, &str); 2] =
    [("h3", "2001:db8:20::13/64", "2001:db8:20::1"), ("h4", "2001:db8:10::14/64", "2001:db8:10::1")];

/// One-way delay of every link.
const LINK_DELAY_NS: u64 = 1_000;
const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;
/// A bound on the frames one exchange may cause: a loop in the fabric
/// would otherwise run forever.
const MAX_DELIVERIES: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Place {
    Switch(usize),
    Host(usize),
}

type Endpoint = (Place, PortId);

struct Delivery {
    at: u64,
    from: Endpoint,
    to: Endpoint,
    frame: Vec<u8>,
}

pub struct DemoSwitch {
    pub name: String,
    pub view: SwitchView,
    port_names: BTreeMap<PortId, String>,
    host_interfaces: BTreeMap<PortId, ObjectId>,
    /// The same packet loop as the daemon's forwarding thread.
    node: Node,
}

/// The whole fabric and its virtual clock.
pub struct Fabric {
    pub switches: Vec<DemoSwitch>,
    pub hosts: Vec<Host>,
    links: HashMap<Endpoint, Endpoint>,
    queue: VecDeque<Delivery>,
    clock: Arc<AtomicU64>,
    /// Each delivery while a trace is on.
    trace: Option<Trace>,
    /// Frames punted to a switch's host side that no agent consumed.
    pub punted_to_host: u64,
    /// Each switch's BGP speaker and the sessions between them.
    pub bgp: Speakers,
    /// The trace of each exchange of the last [`Fabric::ping`], in order.
    pub exchanges: Vec<Trace>,
}

/// What happened to one ping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PingOutcome {
    pub seq: u16,
    /// Round trip in virtual nanoseconds, and the reply's TTL.
    pub reply: Option<(u64, u8)>,
}

impl Fabric {
    pub fn build() -> Fabric {
        let clock = Arc::new(AtomicU64::new(0));
        let mut switches = Vec::new();
        let mut bgp = Speakers::default();
        for (name, yaml) in CONFIGS {
            let config = Config::from_yaml(yaml).unwrap_or_else(|e| panic!("embedded config {name} is invalid: {e}"));
            let (mut sai, applied) = daemon::build_shim(&config).unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut port_names = BTreeMap::new();
            let mut host_interfaces = BTreeMap::new();
            let agent = daemon::lldp_agent(&config);
            let agent = Arc::new(Mutex::new(agent));
            for port in &config.ports {
                let object = applied.ports[&port.name].port;
                let index = sai.backend().port_index(object).expect("applied port");
                port_names.insert(index, port.name.clone());
                // The host side of each port, as the daemon has it (a TAP
                // there; here LLDP is its only user).
                let host_if = sai
                    .create_host_interface(&[
                        HostInterfaceAttr::Name(format!("sw-{}", port.name)),
                        HostInterfaceAttr::ObjId(object),
                    ])
                    .expect("host interface");
                host_interfaces.insert(index, host_if);
                agent.lock().unwrap().add_port(index, port.name.clone(), port.description.clone(), 0);
            }
            let now = clock.clone();
            let sai = Arc::new(Mutex::new(sai));
            bgp.speakers.push(DemoSpeaker::new(&config, &applied, sai.clone()));
            let view = SwitchView {
                config: Arc::new(config),
                applied: Arc::new(applied),
                sai,
                lldp: agent,
                bgp: None,
                now: Arc::new(move || now.load(Ordering::Relaxed)),
                ib: None,
                io_stats: Default::default(),
            };
            switches.push(DemoSwitch { name: name.into(), view, port_names, host_interfaces, node: Node::new() });
        }
        let mut fabric = Fabric {
            switches,
            hosts: Vec::new(),
            links: HashMap::new(),
            queue: VecDeque::new(),
            clock,
            trace: None,
            punted_to_host: 0,
            bgp,
            exchanges: Vec::new(),
        };
        for (a, pa, b, pb) in CABLES {
            let a = fabric.endpoint(a, pa);
            let b = fabric.endpoint(b, pb);
            fabric.connect(a, b);
        }
        for (i, (name, switch, port, address, gateway)) in HOSTS.into_iter().enumerate() {
            let mac = EthernetAddress([0x02, 0x00, 0x00, 0x00, 0x00, 0x10 + i as u8]);
            let mut host = Host::new(
                name,
                mac,
                address.parse().expect("host address"),
                gateway.map(|g| g.parse().expect("gateway")),
            );
            if let Some((_, address6, gateway6)) = HOSTS_V6.iter().find(|(h, _, _)| *h == name) {
                host =
                    host.with_ipv6(address6.parse().expect("host address"), Some(gateway6.parse().expect("gateway")));
            }
            fabric.hosts.push(host);
            let at = fabric.endpoint(switch, port);
            fabric.connect(at, (Place::Host(i), 0));
        }
        fabric.converge_bgp();
        fabric
    }

    /// Starts every speaker and runs them (in virtual time) until every
    /// session is up and every route is in the shims.
    fn converge_bgp(&mut self) {
        let deadline = self.now() + 120 * SEC;
        self.bgp.start(self.now());
        while let Some(next) = self.bgp.handle_timeout(self.now()) {
            if self.bgp.all_established() || next > deadline {
                break;
            }
            self.clock.fetch_max(next, Ordering::Relaxed);
        }
    }

    fn endpoint(&self, switch: &str, port: &str) -> Endpoint {
        let (index, sw) = self.switches.iter().enumerate().find(|(_, s)| s.name == switch).expect("known switch");
        let port = sw.port_names.iter().find(|(_, name)| *name == port).map(|(index, _)| *index).expect("known port");
        (Place::Switch(index), port)
    }

    fn connect(&mut self, a: Endpoint, b: Endpoint) {
        self.links.insert(a, b);
        self.links.insert(b, a);
    }

    pub fn now(&self) -> u64 {
        self.clock.load(Ordering::Relaxed)
    }

    pub fn switch(&self, name: &str) -> &DemoSwitch {
        self.switches.iter().find(|s| s.name == name).expect("known switch")
    }

    pub fn host_index(&self, name: &str) -> usize {
        self.hosts.iter().position(|h| h.name == name).expect("known host")
    }

    fn endpoint_name(&self, (node, port): Endpoint) -> String {
        match node {
            Place::Switch(i) => format!("{}:{}", self.switches[i].name, self.switches[i].port_names[&port]),
            Place::Host(i) => self.hosts[i].name.clone(),
        }
    }

    fn send(&mut self, from: Endpoint, frame: Vec<u8>) {
        if let Some(&to) = self.links.get(&from) {
            let at = self.now() + LINK_DELAY_NS;
            self.queue.push_back(Delivery { at, from, to, frame });
        }
    }

    /// Moves frames until none is in flight.
    pub fn run_until_idle(&mut self) {
        let mut deliveries = 0;
        while let Some(delivery) = self.queue.pop_front() {
            deliveries += 1;
            assert!(deliveries < MAX_DELIVERIES, "the fabric does not settle: a forwarding loop?");
            self.clock.fetch_max(delivery.at, Ordering::Relaxed);
            let now = self.now();
            if self.trace.is_some() {
                let (from, to) = (self.endpoint_name(delivery.from), self.endpoint_name(delivery.to));
                if let Some(trace) = self.trace.as_mut() {
                    trace.delivery(now, from, to, &delivery.frame);
                }
            }
            match delivery.to {
                (Place::Host(i), _) => {
                    let mut replies = Vec::new();
                    self.hosts[i].receive(&delivery.frame, now, &mut replies);
                    for frame in replies {
                        self.send((Place::Host(i), 0), frame);
                    }
                }
                (Place::Switch(i), port) => {
                    let (switch, mut links) = self.links_of(i, now);
                    let disposition = {
                        let mut sai = switch.view.sai.lock().unwrap();
                        switch.node.receive(&mut *sai, now, port, &delivery.frame, &mut links)
                    };
                    if let (Disposition::Dropped(reason), Some(trace)) = (disposition, self.trace.as_mut()) {
                        trace.dropped(&self.switches[i].name, format!("{reason:?}"));
                    }
                }
            }
        }
    }

    /// Switch `i` and the fabric's links as its node writes to them.
    fn links_of(&mut self, i: usize, now: u64) -> (&mut DemoSwitch, FabricLinks<'_>) {
        let switch = &mut self.switches[i];
        let links = FabricLinks {
            switch: i,
            now,
            links: &self.links,
            queue: &mut self.queue,
            lldp: switch.view.lldp.clone(),
            punted_to_host: &mut self.punted_to_host,
        };
        (switch, links)
    }

    /// Advances virtual time, running every switch's timers, LLDP agent
    /// and BGP speaker (which takes what the dataplane learned, as the
    /// daemon's EVPN feed does every 20 ms).
    pub fn advance(&mut self, by: u64) {
        let target = self.now() + by;
        let step = 10 * MS;
        while self.now() < target {
            self.clock.store((self.now() + step).min(target), Ordering::Relaxed);
            let now = self.now();
            for i in 0..self.switches.len() {
                let mut lldp_frames = Vec::new();
                self.switches[i].view.lldp.lock().unwrap().poll(now, &mut lldp_frames);
                let (switch, mut links) = self.links_of(i, now);
                let sai = switch.view.sai.clone();
                let notifications = {
                    let mut sai = sai.lock().unwrap();
                    switch.node.poll(&mut *sai, now, &mut links);
                    for (port, frame) in &lldp_frames {
                        let host_if = switch.host_interfaces[port];
                        switch.node.host_send(&mut *sai, now, host_if, frame, &mut links);
                    }
                    sai.drain_notifications()
                };
                self.bgp.learned(now, i, &notifications);
            }
            // Routes the speakers exchanged go into the shims here.
            self.bgp.handle_timeout(now);
            self.run_until_idle();
        }
    }

    /// `count` echo requests from host `from` to `dst`, one a second, like
    /// `ping -c`. Returns each outcome and the trace of the first exchange
    /// that got an answer (or of the first, if none did).
    pub fn ping(&mut self, from: &str, dst: IpAddr, count: u16) -> (Vec<PingOutcome>, Trace) {
        let h = self.host_index(from);
        let ident = 0x4000 + h as u16;
        let mut outcomes = Vec::new();
        let mut shown_trace: Option<Trace> = None;
        let mut shown_answered = false;
        let mut sent_at = Vec::new();
        self.exchanges.clear();
        for seq in 1..=count {
            self.trace = Some(Trace::default());
            let sent = self.now();
            let mut frames = Vec::new();
            match dst {
                IpAddr::V4(dst) => self.hosts[h].ping(dst, ident, seq, &mut frames),
                IpAddr::V6(dst) => self.hosts[h].ping6(dst, ident, seq, &mut frames),
            }
            for frame in frames {
                self.send((Place::Host(h), 0), frame);
            }
            self.run_until_idle();
            let trace = self.trace.take().unwrap_or_default();
            self.exchanges.push(trace.clone());
            let answered = self.hosts[h].echo_replies.iter().any(|r| r.ident == ident && r.from == dst);
            // Show the first exchange in which a reply came back (or the
            // first attempt, if none did).
            if shown_trace.is_none() || (answered && !shown_answered) {
                shown_trace = Some(trace);
                shown_answered = answered;
            }
            sent_at.push((seq, sent));
            self.advance(SEC);
        }
        // A request that waited for ARP somewhere is answered late, during a
        // later exchange: match replies to requests once all are done.
        for (seq, sent) in sent_at {
            let reply = self.hosts[h]
                .echo_replies
                .iter()
                .find(|r| r.ident == ident && r.seq == seq && r.from == dst)
                .map(|r| (r.at - sent, r.ttl));
            outcomes.push(PingOutcome { seq, reply });
        }
        (outcomes, shown_trace.unwrap_or_default())
    }

    /// UDP datagrams from `from` to `dst`, one per source port.
    pub fn udp_flows(&mut self, from: &str, dst: Ipv4Addr, source_ports: std::ops::Range<u16>) {
        let h = self.host_index(from);
        for port in source_ports {
            let mut frames = Vec::new();
            self.hosts[h].send_udp(dst, port, 5001, b"flow", &mut frames);
            for frame in frames {
                self.send((Place::Host(h), 0), frame);
            }
            self.run_until_idle();
        }
    }

    /// The rx packet counter of a switch port, from the management API.
    pub fn rx_packets(&self, switch: &str, port: &str) -> u64 {
        self.switch(switch).view.interfaces().iter().find(|i| i.name == port).map_or(0, |i| i.counters.rx_packets)
    }
}

/// The fabric's links as one switch's node writes to them: a frame out of a
/// port is delivered to the peer after the link delay; LLDP punted to the
/// host side goes to the switch's LLDP agent.
struct FabricLinks<'a> {
    switch: usize,
    now: u64,
    links: &'a HashMap<Endpoint, Endpoint>,
    queue: &'a mut VecDeque<Delivery>,
    lldp: Arc<Mutex<crate::lldp::LldpAgent>>,
    punted_to_host: &'a mut u64,
}

impl Ports<ObjectId> for FabricLinks<'_> {
    fn transmit(&mut self, port: PortId, frame: &[u8]) -> bool {
        let from = (Place::Switch(self.switch), port);
        if let Some(&to) = self.links.get(&from) {
            self.queue.push_back(Delivery { at: self.now + LINK_DELAY_NS, from, to, frame: frame.to_vec() });
        }
        true
    }

    fn punt(&mut self, _host_if: Option<ObjectId>, egress: Egress, frame: &[u8]) {
        let Egress::Host { port, .. } = egress else { return };
        let is_lldp = EthernetFrame::new_checked(frame).is_ok_and(|f| f.ethertype() == EtherType::Lldp);
        if is_lldp {
            let _ = self.lldp.lock().unwrap().on_frame(port, frame, self.now);
        } else {
            *self.punted_to_host += 1;
        }
    }
}

fn ping_summary(out: &mut String, outcomes: &[PingOutcome]) -> usize {
    let mut received = 0;
    for outcome in outcomes {
        match outcome.reply {
            Some((rtt, ttl)) => {
                received += 1;
                let _ =
                    writeln!(out, "    seq {}: reply, ttl {ttl}, rtt {:.3}ms (virtual)", outcome.seq, rtt as f64 / 1e6);
            }
            None => {
                let _ = writeln!(out, "    seq {}: no reply", outcome.seq);
            }
        }
    }
    let _ = writeln!(out, "    {}/{} replies", received, outcomes.len());
    if received > 0 && received < outcomes.len() {
        let _ = writeln!(
            out,
            "    (a router drops a packet whose next hop it has not resolved yet and sends an ARP request or a\n     \
             neighbour solicitation; requests that met a hop still resolving were lost, as on real switches)"
        );
    }
    received
}

/// What the scenario established, for the test and the exit status.
#[derive(Debug, Default)]
pub struct Summary {
    /// Every BGP session (underlay and EVPN) came up.
    pub bgp_established: bool,
    /// Per leaf, before any host spoke: each VNI's flood list as installed
    /// in the shim (from the other leaf's type 3 routes).
    pub flood_lists: BTreeMap<String, BTreeMap<u32, Vec<Ipv4Addr>>>,
    pub bridged_replies: usize,
    pub vxlan_replies: usize,
    pub vxlan_source_ports: Vec<u16>,
    pub gateway_replies: usize,
    /// ARP for the anycast gateway: answers to the asking host (one, from
    /// its own leaf) and ARP frames that crossed the fabric (none).
    pub gateway_arp_answers: usize,
    pub gateway_arp_on_fabric: usize,
    /// Red, VNI 10020 -> 10010 across the leaves (symmetric IRB).
    pub routed_replies: usize,
    /// The VXLAN frames of that ping's answered exchange.
    pub routed_overlay: Vec<OverlayFrame>,
    /// The ARP frames on the fabric in that ping's first exchange (the
    /// anycast gateway's request for a host no route binds yet, flooded in
    /// its VNI), and how many crossed in the later ones (none: the MAC+IP
    /// route answers).
    pub routed_probe: Vec<OverlayFrame>,
    pub routed_arp_later: usize,
    /// ARP for a host known by EVPN: answered by the local leaf (replies to
    /// the asking host) and ARP frames that crossed the fabric anyway.
    pub suppressed_arp_answers: usize,
    pub arp_on_fabric: usize,
    pub suppressed_replies: usize,
    pub udp_delivered: u64,
    pub ecmp_spine1: u64,
    pub ecmp_spine2: u64,
    pub ipv6_replies: usize,
    /// Blue, VNI 10030 -> 10040 by the type 5 route of h7's subnet.
    pub blue_replies: usize,
    pub blue_overlay: Vec<OverlayFrame>,
    /// Red pinging blue: replies (none when isolated) and echo requests
    /// that reached a blue host.
    pub cross_tenant_replies: usize,
    pub cross_tenant_leaked: usize,
    /// Per leaf, at the end: its BGP table's EVPN routes by type (index).
    pub evpn_routes: BTreeMap<String, [usize; 6]>,
    /// The IB-like plane: brought up by its SM, and the ping replies
    /// between every HCA pair (3 per pair).
    pub ib_up: bool,
    pub ib_replies: usize,
}

fn heading(out: &mut String, text: &str) {
    let _ = writeln!(out, "\n=== {text} {}", "=".repeat(72usize.saturating_sub(text.len())));
}

/// Runs the whole story; returns the printed report and the summary.
pub fn run() -> (String, Summary) {
    let mut fabric = Fabric::build();
    let mut out = String::new();
    let mut summary = Summary::default();
    let _ = writeln!(
        out,
        "fabric-nos demo: a leaf-spine EVPN fabric in memory (2 leaves, 2 spines, 7 hosts in 2 tenants' VRFs)"
    );
    let _ = writeln!(out, "{}", MAP);

    // LLDP first: every port announces itself, the agents learn the cabling.
    fabric.advance(2 * SEC);
    heading(&mut out, "LLDP: what each switch discovered (swcli show lldp)");
    for sw in &fabric.switches {
        let _ = writeln!(out, "{}:", sw.name);
        out.push_str(&indent(&sw.view.lldp_neighbors().render()));
    }

    heading(
        &mut out,
        "BGP: eBGP leaf <-> spine; IPv4 sessions carry the underlay and L2VPN EVPN (swcli show bgp summary)",
    );
    let _ = writeln!(
        out,
        "  (the daemon runs sessions over TCP through the dataplane; here they are in-memory pipes between the speakers)"
    );
    summary.bgp_established = fabric.bgp.all_established();
    for (i, sw) in fabric.switches.iter().enumerate() {
        let Some(bgp) = &fabric.bgp.speakers[i] else { continue };
        if sw.name != "spine1" && sw.name != "leaf1" {
            continue;
        }
        let config = sw.view.config.bgp.as_ref().expect("speaker has a config");
        let peers = bgp.speaker.summary(fabric.now());
        let table = crate::bgp::summary(config, peers, bgp.speaker.rib.loc_len(), 0);
        let _ = writeln!(out, "{}:", sw.name);
        out.push_str(&indent(&table.render()));
    }
    heading(&mut out, "leaf1's underlay: the other VTEP through both spines, ECMP (swcli show bgp ipv4 unicast)");
    if let (Some(leaf1), Some(bgp)) = (
        fabric.switches.iter().position(|s| s.name == "leaf1"),
        fabric.switches.iter().position(|s| s.name == "leaf1").and_then(|i| fabric.bgp.speakers[i].as_ref()),
    ) {
        let config = fabric.switches[leaf1].view.config.bgp.as_ref().expect("leaf1 runs BGP");
        let routes = bgp.speaker.routes(bgp_evpn::packet::Family::Ipv4Unicast, None);
        out.push_str(&indent(&crate::bgp::table(config, mgmt_cli::api::AddressFamily::Ipv4, routes).render()));
    }

    heading(&mut out, "EVPN before any host spoke: type 3 per VNI, type 5 per blue subnet (swcli show bgp l2vpn evpn)");
    let _ = writeln!(out, "leaf1 (each route of leaf2 twice, through either spine):");
    out.push_str(&indent(&fabric.evpn_routes("leaf1", None).render()));
    heading(&mut out, "Flood lists from the type 3 routes; the configs have none (swcli show vxlan)");
    for name in ["leaf1", "leaf2"] {
        let vxlan = fabric.switch(name).view.vxlan();
        let lists = vxlan.vnis.iter().map(|m| (m.vni, m.flood.clone())).collect();
        summary.flood_lists.insert(name.to_owned(), lists);
        let _ = writeln!(out, "{name}:");
        out.push_str(&indent(&vxlan.render()));
    }

    let h = |name: &str| fabric.hosts[fabric.host_index(name)].ip();
    let (h2, h4, h5, h6, h7) = (h("h2"), h("h4"), h("h5"), h("h6"), h("h7"));

    heading(&mut out, "ping h1 -> h5: red VLAN 10, same leaf (bridged by leaf1)");
    let (outcomes, trace) = fabric.ping("h1", h5.into(), 4);
    push_trace(&mut out, &trace);
    summary.bridged_replies = ping_summary(&mut out, &outcomes);

    heading(&mut out, "ping h1 -> h2: red VLAN 10 stretched over VNI 10010, leaf1 <-> leaf2 (bridged over VXLAN)");
    let (outcomes, trace) = fabric.ping("h1", h2.into(), 4);
    push_trace(&mut out, &trace);
    summary.vxlan_replies = ping_summary(&mut out, &outcomes);
    summary.vxlan_source_ports = trace.overlay().iter().map(|f| f.source_port).collect();
    let mut ports = summary.vxlan_source_ports.clone();
    ports.sort_unstable();
    ports.dedup();
    let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
    let _ = writeln!(
        out,
        "    the ARP request went to leaf2 by the flood list of VNI 10010 (leaf2's type 3 route); outer UDP source\n    \
         ports: {} (a hash of the inner flow, RFC 7348 section 5, for underlay ECMP)",
        ports.join(", ")
    );

    heading(&mut out, "ping h3 -> 192.168.20.1: the anycast gateway (leaf1's SVI in VRF red answers itself)");
    let (outcomes, trace) = fabric.ping("h3", "192.168.20.1".parse().unwrap(), 2);
    summary.gateway_replies = ping_summary(&mut out, &outcomes);
    summary.gateway_arp_answers = trace.delivered_to("h3", |d| d.starts_with("ARP 192.168.20.1 is-at"));
    summary.gateway_arp_on_fabric = trace.overlay().iter().filter(|f| f.inner.contains("ARP")).count();
    let _ = writeln!(
        out,
        "    ARP answers to h3 for its gateway: {}; ARP frames on the fabric: {}",
        summary.gateway_arp_answers, summary.gateway_arp_on_fabric
    );

    heading(&mut out, "ping h3 -> h4: red VLAN 20 -> VLAN 10 on leaf2, routed over the L3VNI (symmetric IRB)");
    let _ = writeln!(
        out,
        "  (h4 has not spoken: leaf1 asks for it in VLAN 10, a request flooded in VNI 10010; h4 answers the anycast\n   \
         gateway, which is leaf2 too, and leaf2 advertises h4's MAC+IP as a type 2 route with the L3VNI and its\n   \
         router MAC, which leaf1 installs as a /32 and takes as the answer to its request (the echo request held\n   \
         for it leaves then). No later exchange asks for h4 across the fabric)"
    );
    let (outcomes, trace) = fabric.ping("h3", h4.into(), 5);
    push_trace(&mut out, &trace);
    summary.routed_replies = ping_summary(&mut out, &outcomes);
    summary.routed_overlay = trace.overlay();
    overlay_summary(&mut out, &fabric, &summary.routed_overlay);
    let arp_on_fabric = |trace: &Trace| -> Vec<OverlayFrame> {
        trace.overlay().into_iter().filter(|f| f.inner.contains("ARP")).collect()
    };
    summary.routed_probe = fabric.exchanges.first().map(arp_on_fabric).unwrap_or_default();
    summary.routed_arp_later = fabric.exchanges.iter().skip(1).map(|t| arp_on_fabric(t).len()).sum();
    let _ = writeln!(
        out,
        "    ARP frames on the fabric: {} in the first exchange (leaf1's request for h4), {} after",
        summary.routed_probe.len(),
        summary.routed_arp_later
    );

    heading(
        &mut out,
        "ping h5 -> h4: ARP suppression (leaf1 answers for h4 from its MAC+IP route), bridged on VNI 10010",
    );
    let (outcomes, trace) = fabric.ping("h5", h4.into(), 2);
    push_trace(&mut out, &trace);
    summary.suppressed_replies = ping_summary(&mut out, &outcomes);
    summary.suppressed_arp_answers = trace.delivered_to("h5", |d| d.starts_with(&format!("ARP {h4} is-at")));
    summary.arp_on_fabric = trace.overlay().iter().filter(|f| f.inner.contains("ARP")).count();
    let _ = writeln!(
        out,
        "    ARP answers to h5 from leaf1: {}; ARP frames on the fabric: {}",
        summary.suppressed_arp_answers, summary.arp_on_fabric
    );

    heading(&mut out, "ECMP: 64 UDP flows h3 -> h4 over the L3VNI, one per source port");
    let before = (fabric.rx_packets("spine1", "eth1"), fabric.rx_packets("spine2", "eth1"));
    let delivered_before = fabric.hosts[fabric.host_index("h4")].udp_received;
    fabric.udp_flows("h3", h4, 40000..40064);
    summary.ecmp_spine1 = fabric.rx_packets("spine1", "eth1") - before.0;
    summary.ecmp_spine2 = fabric.rx_packets("spine2", "eth1") - before.1;
    summary.udp_delivered = fabric.hosts[fabric.host_index("h4")].udp_received - delivered_before;
    let _ = writeln!(
        out,
        "    delivered to h4: {}/64; leaf1 hashed them to spine1: {}, spine2: {}",
        summary.udp_delivered, summary.ecmp_spine1, summary.ecmp_spine2
    );

    heading(&mut out, "ping6 h3 -> h4: IPv6 in VRF red, VLAN 20 -> VLAN 10 on leaf2 over the same L3VNI");
    let _ = writeln!(
        out,
        "  (h3 pings its gateway first: its neighbour solicitation gives leaf1 its MAC+IPv6 binding, a type 2 route\n   \
         that leaf2 installs as a /128. h4 stays silent: leaf1's solicitation for it floods in VNI 10010, h4\n   \
         answers the anycast gateway address, and leaf2, which shares it, takes that advertisement (as Linux's\n   \
         accept_untracked_na does) and advertises h4's binding, which answers leaf1)"
    );
    let gateway = fabric.hosts[fabric.host_index("h3")].gateway6.expect("IPv6 hosts have a gateway");
    let (outcomes, _) = fabric.ping("h3", gateway.into(), 1);
    let _ = writeln!(out, "  h3 -> {gateway}:");
    ping_summary(&mut out, &outcomes);
    let h4_v6 = fabric.hosts[fabric.host_index("h4")].address6.expect("h4 has IPv6").ip();
    let (outcomes, trace) = fabric.ping("h3", h4_v6.into(), 5);
    let _ = writeln!(out, "  h3 -> {h4_v6}:");
    push_trace(&mut out, &trace);
    summary.ipv6_replies = ping_summary(&mut out, &outcomes);

    heading(&mut out, "ping h6 -> h7: blue VLAN 30 on leaf1 -> VLAN 40 on leaf2, by leaf2's type 5 route (L3VNI 4002)");
    let (outcomes, trace) = fabric.ping("h6", h7.into(), 4);
    push_trace(&mut out, &trace);
    summary.blue_replies = ping_summary(&mut out, &outcomes);
    summary.blue_overlay = trace.overlay();
    overlay_summary(&mut out, &fabric, &summary.blue_overlay);

    heading(&mut out, "Tenant isolation: red h1 pings blue h6 (same leaf) and h7; red's table has no blue route");
    for (to, ip) in [("h6", h6), ("h7", h7)] {
        let (outcomes, trace) = fabric.ping("h1", ip.into(), 2);
        let _ = writeln!(out, "  h1 -> {to} ({ip}):");
        for line in trace.lines() {
            let _ = writeln!(out, "  {line}");
        }
        summary.cross_tenant_replies += ping_summary(&mut out, &outcomes);
        summary.cross_tenant_leaked += trace.delivered_to(to, |d| d.contains("echo request"));
    }
    let _ = writeln!(out, "  echo requests that reached a blue host: {}", summary.cross_tenant_leaked);
    for vrf in ["red", "blue"] {
        let _ = writeln!(out, "leaf1 (swcli show ip route vrf {vrf}):");
        out.push_str(&indent(&fabric.ip_routes_in_vrf("leaf1", vrf).render()));
    }

    heading(&mut out, "EVPN after the pings (swcli show bgp l2vpn evpn / show evpn ...)");
    for name in ["leaf1", "leaf2"] {
        let counts = fabric.evpn_route_counts(name);
        let _ = writeln!(
            out,
            "{name}: {} type 2 (MAC, MAC+IP), {} type 3, {} type 5 routes in its BGP table",
            counts[2], counts[3], counts[5]
        );
        summary.evpn_routes.insert(name.to_owned(), counts);
    }
    let _ = writeln!(out, "leaf1 (swcli show bgp l2vpn evpn route type 2):");
    out.push_str(&indent(&fabric.evpn_routes("leaf1", Some(2)).render()));
    for (what, request) in [
        ("show evpn vni", Request::ShowEvpnVni { vni: None }),
        ("show evpn mac vni all", Request::ShowEvpnMac { vni: None }),
        ("show evpn arp-cache vni all", Request::ShowEvpnArpCache { vni: None }),
        ("show evpn next-hops", Request::ShowEvpnNextHops { vni: None }),
    ] {
        let _ = writeln!(out, "leaf1 (swcli {what}):");
        out.push_str(&indent(&fabric.evpn_show("leaf1", &request).render()));
    }

    heading(&mut out, "MAC tables (swcli show mac)");
    for name in ["leaf1", "leaf2"] {
        let _ = writeln!(out, "{name}:");
        out.push_str(&indent(&fabric.switch(name).view.mac_table().render()));
    }
    heading(&mut out, "leaf1's underlay routes and neighbours (swcli show routes / show neighbors)");
    out.push_str(&indent(&fabric.switch("leaf1").view.routes().render()));
    out.push('\n');
    out.push_str(&indent(&fabric.switch("leaf1").view.neighbors().render()));
    heading(&mut out, "Interface counters (swcli show interfaces; KIND is the config's, the links here are in memory)");
    for sw in &fabric.switches {
        let _ = writeln!(out, "{}:", sw.name);
        out.push_str(&indent(&sw.view.interfaces().render()));
    }
    heading(&mut out, "Drops (swcli show drops)");
    for sw in &fabric.switches {
        let _ = writeln!(out, "{}:", sw.name);
        out.push_str(&indent(&sw.view.drops().render()));
    }
    ib_plane(&mut out, &mut summary);
    (out, summary)
}

/// Where the overlay frames of an exchange went, and whose router MAC they
/// were addressed to when routed.
fn overlay_summary(out: &mut String, fabric: &Fabric, frames: &[OverlayFrame]) {
    let mut seen: Vec<(u32, EthernetAddress)> = frames.iter().map(|f| (f.vni, f.inner_dst)).collect();
    seen.sort_unstable_by_key(|(vni, mac)| (*vni, mac.0));
    seen.dedup();
    for (vni, mac) in seen {
        let whose = fabric
            .router_mac_owner(vni, mac)
            .map_or_else(String::new, |(switch, vrf)| format!(": L3VNI of VRF {vrf}, to {switch}'s router MAC"));
        let _ = writeln!(out, "    on the fabric: VNI {vni}, inner destination {mac}{whose}");
    }
}

/// The IB-like plane, brought up from nothing by the SM embedded in ib-s1.
fn ib_plane(out: &mut String, summary: &mut Summary) {
    heading(out, "IB-like plane: 2 switches, 3 HCAs; the SM embedded in ib-s1 brings it up");
    let _ = writeln!(out, "{}", ib::MAP);
    let mut plane = ib::IbDemo::build();
    let up = plane.bring_up(10 * SEC);
    summary.ib_up = up.is_some();
    let _ = match up {
        Some(at) => writeln!(out, "  fabric up after {:.1} ms of virtual time", at as f64 / 1e6),
        None => writeln!(out, "  the fabric did not come up within 10 s of virtual time"),
    };
    let now = plane.now;
    let (_, s1) = &plane.switches[0];
    let _ = writeln!(out, "ib-s1 (swcli show ib sm):");
    out.push_str(&indent(&s1.show_sm(now).render()));
    let _ = writeln!(out, "ib-s1 (swcli show ib topology):");
    out.push_str(&indent(&s1.show_topology().render()));
    let _ = writeln!(out, "ib-s1 (swcli show ib routes balance):");
    out.push_str(&indent(&s1.show_routes_balance().render()));
    let (s2_name, s2) = &plane.switches[1];
    if let Ok(lft) = s2.show_lft(s2_name, None) {
        let _ = writeln!(out, "ib-s2 (swcli show ib lft), as the SM programmed it:");
        out.push_str(&indent(&lft.render()));
    }
    let lids: Vec<u16> = plane.hcas.iter().map(|h| h.lid()).collect();
    let _ = writeln!(out, "ibping between every HCA pair, 3 each:");
    for from in 0..lids.len() {
        for (to, &lid) in lids.iter().enumerate() {
            if to == from {
                continue;
            }
            let replies = plane.ping(from, lid, 3);
            summary.ib_replies += replies;
            let _ = writeln!(out, "    {} -> {} (LID {lid}): {replies}/3 replies", ib::NAMES[from], ib::NAMES[to]);
        }
    }
}

const MAP: &str = r"
           spine1 (AS 65000)               spine2 (AS 65000)
          eth1          eth2            eth1          eth2
           |               \            /               |
           |                 \        /                 |
           |                   \    /                   |
           |                     \/                     |
           |                    /  \                    |
           |                  /      \                  |
           |                /          \                |
          eth1          eth2            eth1          eth2
      leaf1 (AS 65101, VTEP 10.255.0.1)   leaf2 (AS 65102, VTEP 10.255.0.2)
     eth3   eth4   eth5   eth6            eth3   eth4   eth5
      h1     h5     h3     h6              h2     h4     h7
    .10.11 .10.15 .20.13 .30.16          .10.12 .10.14 .40.17     (192.168.x.y)
    red VLAN 10   red 20 blue 30         red VLAN 10   blue 40

  red:  a VRF with L3VNI 4001; VLAN 10 = VNI 10010 and VLAN 20 = VNI 10020 on both leaves
  blue: a VRF with L3VNI 4002; VLAN 30 = VNI 10030 on leaf1, VLAN 40 = VNI 10040 on leaf2
  every SVI an anycast gateway (.1, MAC 02:00:5e:00:01:01); each leaf a router MAC per VRF";

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

fn push_trace(out: &mut String, trace: &Trace) {
    let _ = writeln!(out, "  path of the first exchange that got an answer:");
    for line in trace.lines() {
        let _ = writeln!(out, "  {line}");
    }
}

/// `switchd demo`.
pub fn main() -> ExitCode {
    let (report, summary) = run();
    print!("{report}");
    let ok = summary.bgp_established
        && summary.bridged_replies > 0
        && summary.vxlan_replies > 0
        && summary.routed_replies > 0
        && summary.gateway_replies > 0
        && summary.suppressed_replies > 0
        && summary.ipv6_replies > 0
        && summary.blue_replies > 0
        && summary.cross_tenant_replies == 0
        && summary.udp_delivered == 64
        && summary.ib_up
        && summary.ib_replies == 6 * 3;
    println!("\n{}", if ok { "demo: every kind of path worked" } else { "demo: some pings failed (see above)" });
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

#[cfg(test)]
mod tests {
    use mgmt_cli::api::Reply;

    use super::*;

    const LEAF1_VTEP: Ipv4Addr = Ipv4Addr::new(10, 255, 0, 1);
    const LEAF2_VTEP: Ipv4Addr = Ipv4Addr::new(10, 255, 0, 2);

    fn mac(text: &str) -> EthernetAddress {
        let octets: Vec<u8> = text.split(':').map(|o| u8::from_str_radix(o, 16).expect("hex octet")).collect();
        EthernetAddress(octets.try_into().expect("six octets"))
    }

    /// Each overlay frame of a routed exchange crosses on `l3vni`, to the
    /// router MAC of the leaf it goes to, from the other's.
    fn assert_routed_over(frames: &[OverlayFrame], l3vni: u32, rmacs: [(Ipv4Addr, &str); 2], report: &str) {
        assert!(!frames.is_empty(), "no overlay frame: {report}");
        for frame in frames {
            let to = rmacs.iter().find(|(vtep, _)| *vtep == frame.vtep_dst).expect("to a leaf").1;
            let from = rmacs.iter().find(|(vtep, _)| *vtep == frame.vtep_src).expect("from a leaf").1;
            assert_eq!(
                (frame.vni, frame.inner_dst, frame.inner_src),
                (l3vni, mac(to), mac(from)),
                "{frame:?} is not on the L3VNI to the remote router MAC: {report}"
            );
        }
    }

    #[test]
    fn fabric_forwards_every_kind_of_path() {
        let (report, summary) = run();
        assert!(summary.bgp_established, "{report}");
        assert!(summary.bridged_replies >= 2, "{report}");
        assert!(summary.vxlan_replies >= 2, "{report}");
        assert!(!summary.vxlan_source_ports.is_empty(), "{report}");
        assert!(summary.gateway_replies >= 1, "{report}");
        assert_eq!(summary.gateway_arp_answers, 1, "{report}");
        assert_eq!(summary.gateway_arp_on_fabric, 0, "{report}");
        assert!(summary.routed_replies >= 2, "{report}");
        assert!(summary.ipv6_replies >= 2, "{report}");
        assert_eq!(summary.udp_delivered, 64, "{report}");
        // Both spines carry some of the flows.
        assert!(summary.ecmp_spine1 > 0 && summary.ecmp_spine2 > 0, "{summary:?}");
        assert!(summary.ib_up, "{report}");
        assert_eq!(summary.ib_replies, 18, "{report}");
    }

    #[test]
    fn the_overlay_runs_on_evpn_with_two_tenants() {
        // No static flood list anywhere: the leaves' configs only map VNIs.
        for (name, yaml) in CONFIGS {
            let config = Config::from_yaml(yaml).expect("valid");
            let flood = config.vxlan.iter().flat_map(|x| x.vnis.iter()).flat_map(|m| m.flood.iter());
            assert_eq!(flood.count(), 0, "{name} has a static flood list");
        }
        let (report, summary) = run();
        // Flood lists from the type 3 routes, before any host spoke: each
        // VNI both leaves have floods to the other, blue's one-leaf VNIs to none.
        let lists = |entries: [(u32, Vec<Ipv4Addr>); 3]| BTreeMap::from(entries);
        assert_eq!(
            summary.flood_lists["leaf1"],
            lists([(10010, vec![LEAF2_VTEP]), (10020, vec![LEAF2_VTEP]), (10030, vec![])]),
            "{report}"
        );
        assert_eq!(
            summary.flood_lists["leaf2"],
            lists([(10010, vec![LEAF1_VTEP]), (10020, vec![LEAF1_VTEP]), (10040, vec![])]),
            "{report}"
        );
        // Each leaf's table, the same on both: type 3 for the 3 VNIs of
        // each leaf; type 5 for blue's 2 subnets; type 2 for the 7 hosts'
        // MACs and the 7 MAC+IP bindings the leaves resolved (h1, h6, h7
        // and h3, h4 in IPv4 and IPv6).
        for leaf in ["leaf1", "leaf2"] {
            let counts = summary.evpn_routes[leaf];
            assert_eq!((counts[2], counts[3], counts[5]), (14, 6, 2), "{leaf}'s types 2, 3, 5: {report}");
            assert_eq!((counts[1], counts[4]), (0, 0), "{report}");
        }
        // Red across VNIs (10020 on leaf1 -> 10010 on leaf2): symmetric IRB,
        // on red's L3VNI between the leaves' red router MACs.
        assert!(summary.routed_replies >= 2, "{report}");
        let red = [(LEAF1_VTEP, "02:00:01:00:00:01"), (LEAF2_VTEP, "02:00:02:00:00:01")];
        assert_routed_over(&summary.routed_overlay, 4001, red, &report);
        // h4 was silent: leaf1's anycast gateway asked for it in VNI 10010,
        // flooded to leaf2 (docs/evpn.md); h4's answer went to the anycast
        // MAC and stayed on leaf2, which advertised the binding. Once it
        // was known nothing asked for h4 across the fabric again.
        assert!(!summary.routed_probe.is_empty(), "{report}");
        for frame in &summary.routed_probe {
            assert_eq!(
                (frame.vni, frame.vtep_src, frame.inner_src, frame.inner_dst),
                (10010, LEAF1_VTEP, mac("02:00:5e:00:01:01"), EthernetAddress::BROADCAST),
                "only leaf1's request for h4: {frame:?} {report}"
            );
            assert!(frame.inner.contains("who-has 192.168.10.14 tell 192.168.10.1"), "{frame:?}");
        }
        assert_eq!(summary.routed_arp_later, 0, "{report}");
        // Blue (10030 on leaf1 -> 10040 on leaf2, by the type 5 route).
        assert!(summary.blue_replies >= 2, "{report}");
        let blue = [(LEAF1_VTEP, "02:00:01:00:00:02"), (LEAF2_VTEP, "02:00:02:00:00:02")];
        assert_routed_over(&summary.blue_overlay, 4002, blue, &report);
        // ARP suppression: leaf1 answered h5 for h4 from the MAC+IP route;
        // no ARP frame crossed the fabric.
        assert!(summary.suppressed_arp_answers >= 1, "{report}");
        assert_eq!(summary.arp_on_fabric, 0, "{report}");
        assert!(summary.suppressed_replies >= 1, "{report}");
        // The tenants are isolated: red reaches no blue host, on the same leaf or not.
        assert_eq!(summary.cross_tenant_replies, 0, "{report}");
        assert_eq!(summary.cross_tenant_leaked, 0, "{report}");
    }

    #[test]
    fn lldp_discovers_the_cabling() {
        let mut fabric = Fabric::build();
        fabric.advance(2 * SEC);
        let leaf1 = fabric.switch("leaf1").view.lldp_neighbors();
        let eth1 = leaf1.iter().find(|n| n.local_port == "eth1").expect("neighbour on eth1");
        assert_eq!(eth1.system_name.as_deref(), Some("spine1"));
        assert_eq!(eth1.port_id, "eth1");
        let eth2 = leaf1.iter().find(|n| n.local_port == "eth2").expect("neighbour on eth2");
        assert_eq!(eth2.system_name.as_deref(), Some("spine2"));
    }

    #[test]
    fn evpn_installs_remote_macs_behind_the_vtep() {
        let mut fabric = Fabric::build();
        let h2 = fabric.hosts[fabric.host_index("h2")].ip();
        let (outcomes, _) = fabric.ping("h1", h2.into(), 3);
        assert!(outcomes.iter().any(|o| o.reply.is_some()), "{outcomes:?}");
        // h2's MAC is in leaf1's FDB from leaf2's type 2 route (a static
        // entry: a VTEP learns nothing from the frames of an EVPN peer).
        let h2_mac = fabric.hosts[fabric.host_index("h2")].mac.to_string();
        let macs = fabric.switch("leaf1").view.mac_table();
        let entry = macs.iter().find(|m| m.mac == h2_mac).expect("h2 on leaf1");
        assert_eq!((entry.destination.as_str(), entry.kind.as_str(), entry.vlan), ("vtep 10.255.0.2", "static", 10));
        let Reply::EvpnMacs(evpn) = fabric.evpn_show("leaf1", &Request::ShowEvpnMac { vni: Some(10010) }) else {
            panic!("show evpn mac answers EvpnMacs")
        };
        let remote = evpn.iter().find(|m| m.mac == h2_mac).expect("h2 in leaf1's MAC-VRF");
        assert_eq!(remote.vtep, Some("10.255.0.2".parse().unwrap()), "{remote:?}");
    }
}
