//! `switchd demo`: a leaf-spine fabric in memory, no file and no root.
//!
//! ```text
//!              spine1                 spine2
//!          eth1/      \eth2       eth1/      \eth2
//!     eth1/            \eth1  eth2/           \eth2
//!       leaf1 ----------------------------- leaf2      (underlay: routed /31s,
//!   eth3 eth4 eth5                      eth3 eth4       ECMP over both spines)
//!    h1   h5   h3                        h2   h4
//!   VLAN 10   VLAN 20                 VLAN 10  VLAN 30
//!   (VXLAN VNI 10010 stretches VLAN 10 between the leaves)
//! ```
//!
//! Each switch is the daemon's own stack: the config (embedded from
//! `switchd/demo/*.yaml`) validated and applied to a shim with the soft
//! backend, plus its LLDP agent. Links are in memory; a loop moves every
//! frame a switch emits to the peer's input, in virtual time. Hosts are the
//! small IPv4 stacks of [`host`]. Nothing is faked: every frame printed went
//! through the pipeline, and the tables at the end are the management API's
//! answers, rendered as `swcli` renders them.

pub mod host;
pub mod ib;
pub mod underlay;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use dataplane::node::{Node, Ports};
use dataplane::pipeline::{Disposition, Egress, PortId};
use dataplane::wire::arp::Operation;
use dataplane::wire::{
    ArpPacket, ArpRepr, EtherType, EthernetAddress, EthernetFrame, Icmpv4Packet, Icmpv4Repr, Icmpv6Packet, Icmpv6Repr,
    IpProtocol, Ipv4Packet, Ipv6Packet, UdpPacket, VlanTag, VxlanPacket,
};
use mgmt_cli::render::Render;
use sai_shim::{HostInterfaceAttr, ObjectId};

use crate::config::Config;
use crate::daemon;
use crate::mgmt::SwitchView;
use host::Host;
use underlay::{DemoSpeaker, Underlay};

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

/// Hosts: name, switch, port, address, gateway.
const HOSTS: [(&str, &str, &str, &str, Option<&str>); 5] = [
    ("h1", "leaf1", "eth3", "192.168.10.11/24", None),
    ("h5", "leaf1", "eth4", "192.168.10.15/24", None),
    ("h3", "leaf1", "eth5", "192.168.20.13/24", Some("192.168.20.1")),
    ("h2", "leaf2", "eth3", "192.168.10.12/24", None),
    ("h4", "leaf2", "eth4", "192.168.30.14/24", Some("192.168.30.1")),
];

/// Hosts with IPv6 too: name, address, default router.
const HOSTS_V6: [(&str, &str, &str); 2] =
    [("h3", "2001:db8:20::13/64", "2001:db8:20::1"), ("h4", "2001:db8:30::14/64", "2001:db8:30::1")];

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
    /// Lines describing each delivery while a trace is on.
    trace: Option<Vec<String>>,
    /// Frames punted to a switch's host side that no agent consumed.
    pub punted_to_host: u64,
    /// Each switch's BGP speaker and the sessions between them.
    pub underlay: Underlay,
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
        let mut underlay = Underlay::default();
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
            underlay.speakers.push(DemoSpeaker::new(&config, &applied, sai.clone()));
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
            underlay,
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
        self.underlay.start(self.now());
        while let Some(next) = self.underlay.handle_timeout(self.now()) {
            if self.underlay.all_established() || next > deadline {
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
                let line = format!(
                    "{:>12}  {:<12} -> {:<12} {}",
                    format!("{:.3}ms", now as f64 / 1e6),
                    self.endpoint_name(delivery.from),
                    self.endpoint_name(delivery.to),
                    describe(&delivery.frame)
                );
                if let Some(trace) = self.trace.as_mut() {
                    trace.push(line);
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
                        trace.push(format!(
                            "{:>12}  dropped by {}: {reason:?} (it asks for the MAC; the sender retries)",
                            "", self.switches[i].name
                        ));
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

    /// Advances virtual time, running every switch's timers and LLDP agent.
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
                let mut sai = sai.lock().unwrap();
                switch.node.poll(&mut *sai, now, &mut links);
                for (port, frame) in &lldp_frames {
                    let host_if = switch.host_interfaces[port];
                    switch.node.host_send(&mut *sai, now, host_if, frame, &mut links);
                }
                // Nobody consumes them here; keep the queue from growing.
                sai.drain_notifications();
            }
            self.run_until_idle();
        }
    }

    /// `count` echo requests from host `from` to `dst`, one a second, like
    /// `ping -c`. Returns each outcome and the trace of the first exchange.
    pub fn ping(&mut self, from: &str, dst: IpAddr, count: u16) -> (Vec<PingOutcome>, Vec<String>) {
        let h = self.host_index(from);
        let ident = 0x4000 + h as u16;
        let mut outcomes = Vec::new();
        let mut shown_trace: Option<Vec<String>> = None;
        let mut shown_answered = false;
        let mut sent_at = Vec::new();
        for seq in 1..=count {
            self.trace = Some(Vec::new());
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

/// One line about a frame: what a capture tool would summarize.
pub fn describe(frame: &[u8]) -> String {
    let Ok(ethernet) = EthernetFrame::new_checked(frame) else {
        return "malformed frame".into();
    };
    let (mut ethertype, mut payload, mut tag) = (ethernet.ethertype(), ethernet.payload(), String::new());
    if ethertype == EtherType::Vlan
        && let Ok(vlan) = VlanTag::new_checked(payload)
    {
        tag = format!("vlan {} ", vlan.vid());
        ethertype = vlan.ethertype();
        payload = &payload[4..];
    }
    let body = match ethertype {
        EtherType::Arp => match ArpPacket::new_checked(payload).and_then(|p| ArpRepr::parse(&p)) {
            Ok(arp) if arp.operation == Operation::Request => {
                format!("ARP who-has {} tell {}", arp.target_protocol_addr, arp.sender_protocol_addr)
            }
            Ok(arp) => format!("ARP {} is-at {}", arp.sender_protocol_addr, arp.sender_hardware_addr),
            Err(e) => format!("ARP ({e})"),
        },
        EtherType::Ipv4 => describe_ipv4(payload),
        EtherType::Ipv6 => describe_ipv6(payload),
        EtherType::Lldp => "LLDP".into(),
        other => format!("ethertype {:#06x}", u16::from(other)),
    };
    format!("{tag}{body}")
}

fn describe_ipv4(payload: &[u8]) -> String {
    let Ok(ip) = Ipv4Packet::new_checked(payload) else {
        return "IPv4 (malformed)".into();
    };
    let (src, dst, ttl) = (ip.src_addr(), ip.dst_addr(), ip.ttl());
    match ip.protocol() {
        IpProtocol::Icmp => {
            let kind = match Icmpv4Packet::new_checked(ip.payload()).and_then(|p| Icmpv4Repr::parse(&p)) {
                Ok(Icmpv4Repr::EchoRequest { seq_no, .. }) => format!("echo request seq {seq_no}"),
                Ok(Icmpv4Repr::EchoReply { seq_no, .. }) => format!("echo reply seq {seq_no}"),
                Ok(Icmpv4Repr::TimeExceeded { .. }) => "time exceeded".into(),
                Ok(Icmpv4Repr::DstUnreachable { .. }) => "unreachable".into(),
                Ok(Icmpv4Repr::Redirect { gateway, .. }) => format!("redirect to {gateway}"),
                Err(e) => format!("({e})"),
            };
            format!("ICMP {src} > {dst} {kind} ttl {ttl}")
        }
        IpProtocol::Udp => match UdpPacket::new_checked(ip.payload()) {
            Ok(udp) if udp.dst_port() == dataplane::wire::VXLAN_PORT => match VxlanPacket::new_checked(udp.payload()) {
                Ok(vxlan) => format!(
                    "VXLAN {src} > {dst} sport {} vni {} [{}]",
                    udp.src_port(),
                    vxlan.vni(),
                    describe(vxlan.payload())
                ),
                Err(e) => format!("VXLAN ({e})"),
            },
            Ok(udp) => format!("UDP {src}:{} > {dst}:{} ttl {ttl}", udp.src_port(), udp.dst_port()),
            Err(e) => format!("UDP ({e})"),
        },
        other => format!("IPv4 {src} > {dst} proto {other:?}"),
    }
}

fn describe_ipv6(payload: &[u8]) -> String {
    let Ok(ip) = Ipv6Packet::new_checked(payload) else {
        return "IPv6 (malformed)".into();
    };
    let (src, dst, hops) = (ip.src_addr(), ip.dst_addr(), ip.hop_limit());
    if ip.next_header() != IpProtocol::Icmpv6 {
        return format!("IPv6 {src} > {dst} next header {:?}", ip.next_header());
    }
    match Icmpv6Packet::new_checked(ip.payload()).and_then(|p| Icmpv6Repr::parse(&p, src, dst)) {
        Ok(Icmpv6Repr::EchoRequest { seq_no, .. }) => {
            format!("ICMPv6 {src} > {dst} echo request seq {seq_no} hlim {hops}")
        }
        Ok(Icmpv6Repr::EchoReply { seq_no, .. }) => format!("ICMPv6 {src} > {dst} echo reply seq {seq_no} hlim {hops}"),
        Ok(Icmpv6Repr::NeighborSolicit { target_addr, .. }) => format!("ND who-has {target_addr} tell {src}"),
        Ok(Icmpv6Repr::NeighborAdvert { target_addr, target_lladdr, .. }) => {
            format!("ND {target_addr} is-at {}", target_lladdr.map_or_else(|| "?".into(), |m| m.to_string()))
        }
        Ok(Icmpv6Repr::TimeExceeded { .. }) => format!("ICMPv6 {src} > {dst} time exceeded"),
        Ok(Icmpv6Repr::DstUnreachable { .. }) => format!("ICMPv6 {src} > {dst} unreachable"),
        Ok(Icmpv6Repr::PacketTooBig { mtu, .. }) => format!("ICMPv6 {src} > {dst} packet too big (mtu {mtu})"),
        Ok(Icmpv6Repr::Redirect { target_addr, dst_addr, .. }) => {
            format!("ICMPv6 {src} > {dst} redirect {dst_addr} to {target_addr}")
        }
        Err(e) => format!("ICMPv6 ({e})"),
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
    if received < outcomes.len() {
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
    /// Every BGP session of the underlay came up.
    pub bgp_established: bool,
    pub bridged_replies: usize,
    pub vxlan_replies: usize,
    pub routed_replies: usize,
    pub gateway_replies: usize,
    pub ipv6_replies: usize,
    pub udp_delivered: u64,
    pub ecmp_spine1: u64,
    pub ecmp_spine2: u64,
    pub vxlan_source_ports: Vec<u16>,
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
    let _ = writeln!(out, "fabric-nos demo: a leaf-spine fabric in memory (2 leaves, 2 spines, 5 hosts)");
    let _ = writeln!(out, "{}", MAP);

    // LLDP first: every port announces itself, the agents learn the cabling.
    fabric.advance(2 * SEC);
    heading(&mut out, "LLDP: what each switch discovered (swcli show lldp)");
    for sw in &fabric.switches {
        let _ = writeln!(out, "{}:", sw.name);
        out.push_str(&indent(&sw.view.lldp_neighbors().render()));
    }

    heading(&mut out, "BGP underlay: eBGP leaf <-> spine, IPv4 and IPv6 sessions (swcli show bgp summary)");
    let _ = writeln!(
        out,
        "  (the daemon runs sessions over TCP through the dataplane; here they are in-memory pipes between the speakers)"
    );
    summary.bgp_established = fabric.underlay.all_established();
    for (i, sw) in fabric.switches.iter().enumerate() {
        let Some(bgp) = &fabric.underlay.speakers[i] else { continue };
        if sw.name != "spine1" && sw.name != "leaf1" {
            continue;
        }
        let config = sw.view.config.bgp.as_ref().expect("speaker has a config");
        let peers = bgp.speaker.summary(fabric.now());
        let table = crate::bgp::summary(config, peers, bgp.speaker.rib.loc_len(), 0);
        let _ = writeln!(out, "{}:", sw.name);
        out.push_str(&indent(&table.render()));
    }
    heading(&mut out, "leaf1's BGP table: ECMP through both spines (swcli show bgp ipv4 unicast)");
    if let (Some(leaf1), Some(bgp)) = (
        fabric.switches.iter().position(|s| s.name == "leaf1"),
        fabric.switches.iter().position(|s| s.name == "leaf1").and_then(|i| fabric.underlay.speakers[i].as_ref()),
    ) {
        let config = fabric.switches[leaf1].view.config.bgp.as_ref().expect("leaf1 runs BGP");
        let routes = bgp.speaker.routes(bgp_evpn::packet::Family::Ipv4Unicast, None);
        out.push_str(&indent(&crate::bgp::table(config, mgmt_cli::api::AddressFamily::Ipv4, routes).render()));
    }

    let h = |name: &str| fabric.hosts[fabric.host_index(name)].ip();
    let (h2, h4, h5) = (h("h2"), h("h4"), h("h5"));

    heading(&mut out, "ping h1 -> h5: same VLAN, same leaf (bridged by leaf1)");
    let (outcomes, trace) = fabric.ping("h1", h5.into(), 4);
    push_trace(&mut out, &trace);
    summary.bridged_replies = ping_summary(&mut out, &outcomes);

    heading(&mut out, "ping h1 -> h2: VLAN 10 stretched over VXLAN VNI 10010, leaf1 <-> leaf2");
    let (outcomes, trace) = fabric.ping("h1", h2.into(), 4);
    push_trace(&mut out, &trace);
    summary.vxlan_replies = ping_summary(&mut out, &outcomes);
    summary.vxlan_source_ports = trace.iter().filter_map(|l| vxlan_sport(l)).collect();
    let mut ports = summary.vxlan_source_ports.clone();
    ports.sort_unstable();
    ports.dedup();
    let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
    let _ = writeln!(
        out,
        "    outer UDP source ports above: {} (a hash of the inner flow, RFC 7348 section 5, for underlay ECMP)",
        ports.join(", ")
    );

    heading(&mut out, "ping h3 -> 192.168.20.1: the gateway (leaf1's SVI answers itself)");
    let (outcomes, _) = fabric.ping("h3", "192.168.20.1".parse().unwrap(), 2);
    summary.gateway_replies = ping_summary(&mut out, &outcomes);

    heading(&mut out, "ping h3 -> h4: routed, VLAN 20 -> underlay (ECMP over the spines) -> VLAN 30");
    let (outcomes, trace) = fabric.ping("h3", h4.into(), 5);
    push_trace(&mut out, &trace);
    summary.routed_replies = ping_summary(&mut out, &outcomes);

    heading(&mut out, "ECMP: 64 UDP flows h3 -> h4, one per source port");
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

    heading(&mut out, "ping6 h3 -> h4: IPv6 routed over the same fabric (neighbour discovery at each hop)");
    let h4_v6 = fabric.hosts[fabric.host_index("h4")].address6.expect("h4 has IPv6").ip();
    let (outcomes, trace) = fabric.ping("h3", h4_v6.into(), 5);
    push_trace(&mut out, &trace);
    summary.ipv6_replies = ping_summary(&mut out, &outcomes);

    heading(&mut out, "MAC tables (swcli show mac)");
    for name in ["leaf1", "leaf2"] {
        let _ = writeln!(out, "{name}:");
        out.push_str(&indent(&fabric.switch(name).view.mac_table().render()));
    }
    heading(&mut out, "VXLAN (swcli show vxlan)");
    for name in ["leaf1", "leaf2"] {
        let _ = writeln!(out, "{name}:");
        out.push_str(&indent(&fabric.switch(name).view.vxlan().render()));
    }
    heading(&mut out, "leaf1 routes and neighbours (swcli show routes / show neighbors)");
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

const MAP: &str = "
             spine1                    spine2
          eth1/   \\eth2            eth1/   \\eth2
      eth1/         \\eth1     eth2/          \\eth2
        leaf1 (10.255.0.1)         leaf2 (10.255.0.2)
     eth3  eth4  eth5             eth3   eth4
      h1    h5    h3               h2     h4
    VLAN 10     VLAN 20          VLAN 10  VLAN 30
   .10.11 .10.15 .20.13          .10.12   .30.14     (192.168.x.y)";

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

fn push_trace(out: &mut String, trace: &[String]) {
    let _ = writeln!(out, "  path of the first exchange that got an answer:");
    for line in trace {
        let _ = writeln!(out, "  {line}");
    }
}

fn vxlan_sport(line: &str) -> Option<u16> {
    let rest = &line[line.find("VXLAN ")?..];
    let sport = rest.split_whitespace().skip_while(|w| *w != "sport").nth(1)?;
    sport.parse().ok()
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
        && summary.ipv6_replies > 0
        && summary.udp_delivered == 64
        && summary.ib_up
        && summary.ib_replies == 6 * 3;
    println!("\n{}", if ok { "demo: every kind of path worked" } else { "demo: some pings failed (see above)" });
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fabric_forwards_every_kind_of_path() {
        let (report, summary) = run();
        assert!(summary.bgp_established, "{report}");
        assert!(summary.bridged_replies >= 2, "{report}");
        assert!(summary.vxlan_replies >= 2, "{report}");
        assert!(summary.gateway_replies >= 1, "{report}");
        assert!(summary.routed_replies >= 2, "{report}");
        assert!(summary.ipv6_replies >= 2, "{report}");
        assert_eq!(summary.udp_delivered, 64, "{report}");
        // Both spines carry some of the flows.
        assert!(summary.ecmp_spine1 > 0 && summary.ecmp_spine2 > 0, "{summary:?}");
        assert!(!summary.vxlan_source_ports.is_empty(), "{report}");
        assert!(summary.ib_up, "{report}");
        assert_eq!(summary.ib_replies, 18, "{report}");
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
    fn vxlan_learns_remote_macs_behind_the_vtep() {
        let mut fabric = Fabric::build();
        let h2 = fabric.hosts[fabric.host_index("h2")].ip();
        // Each router on the way drops the first packet it cannot resolve
        // the next hop of: a few requests are needed.
        let (outcomes, _) = fabric.ping("h1", h2.into(), 5);
        assert!(outcomes.iter().any(|o| o.reply.is_some()), "{outcomes:?}");
        let h2_mac = fabric.hosts[fabric.host_index("h2")].mac.to_string();
        let macs = fabric.switch("leaf1").view.mac_table();
        let entry = macs.iter().find(|m| m.mac == h2_mac).expect("h2 learned on leaf1");
        assert_eq!(entry.destination, "vtep 10.255.0.2");
        assert_eq!(entry.vlan, 10);
    }
}
