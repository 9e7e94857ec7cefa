//! BGP in the daemon: the speaker (`bgp-evpn`) runs as tokio tasks over
//! kernel TCP through the host interfaces, and its best paths and ECMP sets
//! go into the shim (route entries, next hops, next-hop groups; out again on
//! withdraw).
//!
//! config (`bgp:`) -> [`BgpSpeaker`] -> [`QueueSink`] -> channel -> [`ShimProgrammer`] -> shim -> pipeline
//!
//! The shim sits behind the forwarding thread's lock: the sink only queues
//! each change, and bgp-evpn's [`ShimProgrammer`] task applies what is queued
//! in batches, one lock per batch, resolving next hops against the switch's
//! connected subnets (given here from the config).

use std::net::IpAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use std::sync::atomic::{AtomicU64, Ordering};

use bgp_evpn::events::{PeerSummary, RouteView};
use bgp_evpn::packet::{Family, Nlri};
use bgp_evpn::sink::{QueueSink, TableSink, Tee, to_network};
use bgp_evpn::{BgpConfig, BgpSpeaker, RouteSink};
use ipnetwork::IpNetwork;
use mgmt_cli::api;
use sai_shim::backend::soft::SoftBackend;
use sai_shim::{Backend, Notification, ObjectId, Sai, Subscription};

use crate::apply::Applied;
use crate::config::{Config, L3Interface, PortMode};
use crate::mgmt::SwitchView;

#[cfg(test)]
type Shim = Sai<SoftBackend>;

/// bgp-evpn's shim programmer on the daemon's shim.
pub type ShimProgrammer<B = SoftBackend> = bgp_evpn::sink::ShimProgrammer<B>;

/// A programmer resolving next hops against the switch's connected subnets
/// (each address with its router interface).
pub fn programmer<B: Backend>(config: &Config, applied: &Applied) -> ShimProgrammer<B> {
    let subnets = config
        .addresses()
        .into_iter()
        .filter_map(|(net, iface)| {
            let rif = match iface? {
                L3Interface::Port(name) => applied.ports.get(&name)?.router_interface?,
                L3Interface::Vlan(id) => applied.vlans.get(&id)?.router_interface?,
            };
            Some((net, rif))
        })
        .collect();
    // Unnumbered neighbours are on the ports' host interfaces.
    let interfaces = config
        .ports
        .iter()
        .filter_map(|p| Some((crate::hostif::port_host_name(&p.name), applied.ports.get(&p.name)?.router_interface?)))
        .collect();
    let mut programmer = ShimProgrammer::new(subnets).with_interfaces(interfaces);
    // EVPN's remote MACs, flood lists and (symmetric IRB) IP-VRF routes.
    programmer.attach(crate::evpn::bindings(config, applied));
    programmer
}

/// The running speaker as the management API sees it.
#[derive(Clone)]
pub struct BgpView {
    pub config: Arc<BgpConfig>,
    pub speaker: Arc<BgpSpeaker>,
    /// What the speaker asked forwarding to install (whether or not the
    /// shim could): `show ip route` marks BGP routes with it.
    pub installed: TableSink,
    /// The runtime the speaker runs on; handlers run on blocking threads
    /// and wait for its answers there.
    pub runtime: tokio::runtime::Handle,
    /// Route changes the shim did not take.
    pub install_errors: Arc<AtomicU64>,
}

/// The IP routes of the speaker's changes into `installed`, which `show ip
/// route` reads; EVPN's remote MACs, ARP/ND bindings and flood lists are
/// read from the shim (a copy of each cost 59 bytes of every EVPN route).
struct IpRoutesOnly(TableSink);

impl RouteSink for IpRoutesOnly {
    fn apply(&mut self, change: bgp_evpn::fib::FibChange) {
        if matches!(change, bgp_evpn::fib::FibChange::Route { .. }) {
            self.0.apply(change);
        }
    }
}

/// Where jobs for the running [`ShimProgrammer`] go (commits detach and
/// attach EVPN's objects through it).
pub type ProgrammerControl<B> = tokio::sync::mpsc::UnboundedSender<bgp_evpn::sink::ControlJob<B>>;

/// Starts the speaker; its routes go into `sai` through a [`ShimProgrammer`].
pub async fn start<B: Backend + Send + 'static>(
    config: BgpConfig,
    programmer: ShimProgrammer<B>,
    sai: Arc<Mutex<Sai<B>>>,
) -> Result<(BgpView, ProgrammerControl<B>), String> {
    let installed = TableSink::default();
    let (queue, rx) = QueueSink::new();
    let install_errors = programmer.errors();
    let sink: Box<dyn RouteSink> = Box::new(Tee(vec![Box::new(queue), Box::new(IpRoutesOnly(installed.clone()))]));
    let speaker = BgpSpeaker::spawn(config.clone(), sink).await?;
    let (control, jobs) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(programmer.run_with_control(sai, rx, jobs));
    tracing::info!(
        asn = config.asn,
        router_id = %config.router_id,
        neighbors = config.neighbors.len(),
        networks = config.networks.len(),
        listen = ?speaker.listen_addr,
        "BGP speaker running"
    );
    let view = BgpView {
        config: Arc::new(config),
        speaker: Arc::new(speaker),
        installed,
        runtime: tokio::runtime::Handle::current(),
        install_errors,
    };
    Ok((view, control))
}

/// How often port state changes are taken from the shim.
const FALLOVER_INTERVAL: Duration = Duration::from_millis(20);

/// Fast external fallover (FRR's and EOS's default): a port that loses its
/// link takes the eBGP sessions directly over it down at once, so routes
/// through it go in the time port-down detection takes, not the hold time.
pub async fn run_fallover<B: Backend>(
    subscription: Subscription,
    view: Arc<RwLock<SwitchView<B>>>,
    speaker: Arc<BgpSpeaker>,
) {
    let mut tick = tokio::time::interval(FALLOVER_INTERVAL);
    loop {
        tick.tick().await;
        for notification in subscription.drain() {
            let Notification::PortOperStatus { port, up: false } = notification else { continue };
            let under = {
                let view = view.read().unwrap_or_else(|e| e.into_inner());
                // `bgp.fast_external_fallover` follows commits.
                let enabled = view.config.bgp.as_ref().is_some_and(|b| b.fast_external_fallover);
                if !enabled {
                    continue;
                }
                interface_of_port(&view.config, &view.applied, port)
            };
            if let Some((interface, subnets)) = under {
                tracing::info!(%interface, "link down: dropping the eBGP sessions over it");
                speaker.interface_down(&interface, subnets).await;
            }
        }
    }
}

/// The host interface a session over `port` runs on, and the port's
/// subnets (where its directly connected neighbours are).
fn interface_of_port(config: &Config, applied: &Applied, port: ObjectId) -> Option<(String, Vec<IpNetwork>)> {
    let (name, _) = applied.ports.iter().find(|(_, objects)| objects.port == port)?;
    let port = config.ports.iter().find(|p| &p.name == name)?;
    let subnets = match &port.mode {
        PortMode::Routed { addresses } => addresses.clone(),
        _ => Vec::new(),
    };
    Some((crate::hostif::port_host_name(name), subnets))
}

pub fn family(f: api::AddressFamily) -> Family {
    match f {
        api::AddressFamily::Ipv4 => Family::Ipv4Unicast,
        api::AddressFamily::Ipv6 => Family::Ipv6Unicast,
    }
}

impl BgpView {
    /// Must not be called on a runtime worker thread (handlers run in
    /// `spawn_blocking`).
    fn wait<T>(&self, fut: impl Future<Output = T>) -> T {
        self.runtime.block_on(fut)
    }

    pub fn peers(&self) -> Vec<PeerSummary> {
        self.wait(self.speaker.summary())
    }

    pub fn routes(&self, family: Family, prefix: Option<Nlri>) -> Vec<RouteView> {
        self.wait(self.speaker.routes(family, prefix))
    }

    /// `show bfd peers`.
    pub fn bfd_peers(&self) -> api::BfdPeers {
        let (peers, discards) = self.wait(self.speaker.bfd_peers());
        api::BfdPeers {
            peers: peers
                .into_iter()
                .map(|p| api::BfdPeer {
                    peer: p.peer,
                    state: p.state,
                    remote_state: p.remote_state,
                    diagnostic: p.diagnostic,
                    local_discriminator: p.local_discriminator,
                    remote_discriminator: p.remote_discriminator,
                    transmit_interval_ms: p.desired_min_tx_ms,
                    receive_interval_ms: p.required_min_rx_ms,
                    detect_multiplier: p.detect_mult,
                    remote_transmit_interval_ms: p.remote_desired_min_tx_ms,
                    remote_receive_interval_ms: p.remote_required_min_rx_ms,
                    remote_detect_multiplier: p.remote_detect_mult,
                    negotiated_transmit_ms: p.tx_interval_ms,
                    detection_time_ms: p.detection_time_ms,
                    uptime_ms: p.uptime_ms,
                    last_down_silence_ms: p.last_down_silence_ms,
                    last_down_ago_ms: p.last_down_ago_ms,
                    last_down_diagnostic: p.last_down_diagnostic,
                    packets_received: p.packets_received,
                    packets_sent: p.packets_sent,
                    send_errors: p.send_errors,
                    up_transitions: p.up_transitions,
                    down_transitions: p.down_transitions,
                })
                .collect(),
            discarded_malformed: discards.malformed,
            discarded_bad_ttl: discards.bad_ttl,
            discarded_no_session: discards.no_session,
        }
    }

    pub fn summary(&self) -> api::BgpSummary {
        let peers = self.peers();
        let loc_rib_routes = self.wait(self.speaker.loc_rib_len());
        summary(&self.config, peers, loc_rib_routes, self.install_errors.load(Ordering::Relaxed))
    }

    pub fn neighbors(&self, address: Option<IpAddr>) -> Vec<api::BgpNeighbor> {
        let counters = |c: &bgp_evpn::neighbor::MessageCounters| api::BgpMessageCounters {
            open: c.open,
            update: c.update,
            notification: c.notification,
            keepalive: c.keepalive,
            route_refresh: c.route_refresh,
        };
        self.peers()
            .into_iter()
            .filter(|p| address.is_none_or(|a| a == p.address))
            .map(|p| {
                let config = self.config.neighbors.iter().find(|n| n.address == p.address);
                let negotiated = p.negotiated.as_ref();
                let families: Vec<String> = match negotiated {
                    Some(n) => n.families.iter().map(ToString::to_string).collect(),
                    None => config.map(|c| c.families.iter().map(ToString::to_string).collect()).unwrap_or_default(),
                };
                let capabilities = negotiated
                    .map(|n| {
                        [
                            (n.four_octet_as, "4-octet-as"),
                            (n.route_refresh, "route-refresh"),
                            (n.extended_message, "extended-message"),
                            (n.extended_next_hop, "extended-nexthop"),
                            (n.graceful_restart, "graceful-restart"),
                        ]
                        .into_iter()
                        .filter(|(on, _)| *on)
                        .map(|(_, name)| name.to_owned())
                        .collect()
                    })
                    .unwrap_or_default();
                api::BgpNeighbor {
                    address: p.address,
                    remote_as: p.remote_as,
                    local_as: self.config.asn,
                    link: if p.remote_as == self.config.asn { "internal" } else { "external" }.into(),
                    description: p.description.clone(),
                    local_address: config.and_then(|c| c.local_address),
                    state: format!("{:?}", p.state),
                    uptime_secs: p.uptime_secs,
                    established_transitions: p.counters.established_transitions,
                    remote_router_id: negotiated.map(|n| n.peer_id),
                    hold_time_secs: negotiated.map(|n| n.hold_time),
                    keepalive_secs: negotiated.map(|n| n.keepalive_time),
                    families,
                    capabilities,
                    disabled_families: p.disabled_families.iter().map(ToString::to_string).collect(),
                    prefixes_received: p.prefixes_received,
                    prefixes_sent: p.prefixes_sent,
                    sent: counters(&p.counters.sent),
                    received: counters(&p.counters.received),
                    decode_errors: p.counters.decode_errors,
                    treat_as_withdraw: p.errors.treat_as_withdraw,
                    attribute_discard: p.errors.attribute_discard,
                    afi_safi_disable: p.errors.afi_safi_disable,
                    rejected_routes: p.errors.rejected_routes,
                    last_error: p.last_error.clone(),
                    import_policy: config.and_then(|c| c.import_policy.clone()),
                    export_policy: config.and_then(|c| c.export_policy.clone()),
                }
            })
            .collect()
    }

    /// The table of `family`; with `prefix`, that prefix only, or for a bare
    /// address the longest prefix holding it (as FRR's `show bgp ipv4 unicast A.B.C.D`).
    pub fn table(&self, family: api::AddressFamily, prefix: Option<&str>) -> Result<api::BgpRoutes, String> {
        let wanted = self::family(family);
        let name = if family == api::AddressFamily::Ipv4 { "IPv4" } else { "IPv6" };
        let Some(p) = prefix else {
            return Ok(table(&self.config, family, self.routes(wanted, None)));
        };
        if let Ok(address) = p.parse::<IpAddr>() {
            if address.is_ipv4() != (family == api::AddressFamily::Ipv4) {
                return Err(format!("{p} is not an {name} address"));
            }
            let best = self
                .routes(wanted, None)
                .into_iter()
                .filter_map(|r| {
                    let nlri: Nlri = r.prefix.parse().ok()?;
                    let len = to_network(&nlri)?.prefix();
                    nlri.contains_addr(address).then_some((len, r))
                })
                .max_by_key(|(len, _)| *len)
                .map(|(_, r)| r);
            return Ok(table(&self.config, family, best.into_iter().collect()));
        }
        let nlri: Nlri = p.parse().map_err(|e| format!("bad prefix {p:?}: {e}"))?;
        if nlri.family() != wanted {
            return Err(format!("{p} is not an {name} prefix"));
        }
        Ok(table(&self.config, family, self.routes(wanted, Some(nlri))))
    }

    /// Administrative distance of the installed BGP route to `prefix`:
    /// 200 when its best path came from an internal peer, else 20.
    pub fn distances(&self, family: Family) -> std::collections::HashMap<String, u8> {
        let internal: Vec<IpAddr> =
            self.config.neighbors.iter().filter(|n| n.remote_as == self.config.asn).map(|n| n.address).collect();
        self.routes(family, None)
            .into_iter()
            .filter_map(|r| {
                let best = r.paths.iter().find(|p| p.best)?;
                let ibgp = best.peer.is_some_and(|a| internal.contains(&a));
                Some((r.prefix, if ibgp { 200 } else { 20 }))
            })
            .collect()
    }

    /// Sends Cease to every peer when this is the last handle.
    pub async fn shutdown(self) {
        if let Ok(speaker) = Arc::try_unwrap(self.speaker) {
            speaker.shutdown().await;
        }
    }
}

/// `show bgp summary` from the speaker's peers.
pub fn summary(
    config: &BgpConfig,
    peers: Vec<PeerSummary>,
    loc_rib_routes: usize,
    install_failures: u64,
) -> api::BgpSummary {
    api::BgpSummary {
        enabled: true,
        asn: config.asn,
        router_id: Some(config.router_id),
        loc_rib_routes,
        install_failures,
        peers: peers
            .into_iter()
            .map(|p| api::BgpPeer {
                address: p.address,
                remote_as: p.remote_as,
                description: p.description,
                state: format!("{:?}", p.state),
                uptime_secs: p.uptime_secs,
                prefixes_received: p.prefixes_received,
                prefixes_sent: p.prefixes_sent,
                messages_received: p.messages_received,
                messages_sent: p.messages_sent,
            })
            .collect(),
    }
}

/// `show bgp ipv4|ipv6 unicast` from the speaker's Loc-RIB view.
pub fn table(config: &BgpConfig, family: api::AddressFamily, routes: Vec<RouteView>) -> api::BgpRoutes {
    let routes = routes
        .into_iter()
        .map(|r| api::BgpRoute {
            prefix: r.prefix,
            reason: r.reason.to_owned(),
            paths: r
                .paths
                .into_iter()
                .map(|p| api::BgpPath {
                    peer: p.peer,
                    best: p.best,
                    multipath: p.multipath,
                    next_hop: p.next_hop,
                    as_path: p.as_path,
                    origin: match p.origin.as_str() {
                        "IGP" => "i",
                        "EGP" => "e",
                        _ => "?",
                    }
                    .into(),
                    med: p.med,
                    local_pref: p.local_pref,
                    communities: p.communities,
                })
                .collect(),
        })
        .collect();
    api::BgpRoutes { family, router_id: Some(config.router_id), asn: config.asn, routes }
}

#[cfg(test)]
mod tests {
    use bgp_evpn::fib::{FibChange, NextHop};
    use sai_shim::{ObjectType, RouteEntryKey};

    use super::*;

    const CONFIG: &str = "
name: t1
loopback: [10.255.0.1/32]
ports:
  - { name: eth1, mode: routed, addresses: [10.1.1.0/31] }
  - { name: eth2, mode: routed, addresses: [10.1.2.0/31] }
  - { name: eth3, mode: routed, addresses: [192.168.1.1/24] }
";

    fn setup() -> (Shim, ShimProgrammer, Applied) {
        let config = Config::from_yaml(CONFIG).unwrap();
        let (sai, applied) = crate::daemon::build_shim(&config).unwrap();
        let programmer = programmer(&config, &applied);
        (sai, programmer, applied)
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn nlri(s: &str) -> Nlri {
        s.parse().unwrap()
    }

    /// The speaker's change installing `nlri` through underlay next hops.
    fn install(nlri: Nlri, hops: Vec<IpAddr>) -> FibChange {
        let next_hops = hops.into_iter().map(NextHop::Ip).collect();
        FibChange::Route { vrf: None, prefix: nlri.ip_network().unwrap(), next_hops }
    }

    fn remove(nlri: Nlri) -> FibChange {
        FibChange::Route { vrf: None, prefix: nlri.ip_network().unwrap(), next_hops: vec![] }
    }

    fn count(sai: &Shim, t: ObjectType) -> usize {
        sai.store().objects_of(t).count()
    }

    /// What the route to `prefix` points at, as (type, next hop addresses).
    fn target(sai: &Shim, applied: &Applied, prefix: &str) -> Option<(ObjectType, Vec<String>)> {
        let key = RouteEntryKey { virtual_router: sai.default_virtual_router(), destination: prefix.parse().unwrap() };
        let id = sai.get_route_entry(key).ok()?.next_hop?;
        let hop = |id| {
            let nh = sai.get_next_hop(id).unwrap();
            format!("{}@{}", nh.ip, applied.next_hop_interface(&nh).unwrap())
        };
        let hops = match id.object_type()? {
            ObjectType::NextHop => vec![hop(id)],
            ObjectType::NextHopGroup => sai.store().group_members(id).into_iter().map(hop).collect(),
            _ => Vec::new(),
        };
        Some((id.object_type()?, hops))
    }

    #[test]
    fn ecmp_routes_share_groups_shrink_and_leave_nothing_behind() {
        let (mut sai, mut p, applied) = setup();
        let baseline = (count(&sai, ObjectType::NextHop), sai.store().route_entries().count());
        let both = [ip("10.1.2.1"), ip("10.1.1.1")];
        p.apply(&mut sai, install(nlri("10.255.0.2/32"), both.to_vec()));
        p.apply(&mut sai, install(nlri("192.168.2.0/24"), both.to_vec()));
        let (kind, mut hops) = target(&sai, &applied, "10.255.0.2/32").unwrap();
        hops.sort();
        assert_eq!(kind, ObjectType::NextHopGroup);
        assert_eq!(hops, ["10.1.1.1@eth1", "10.1.2.1@eth2"]);
        // One group and two next hops serve both prefixes.
        assert_eq!(count(&sai, ObjectType::NextHopGroup), 1);
        assert_eq!(count(&sai, ObjectType::NextHop), baseline.0 + 2);
        assert_eq!(target(&sai, &applied, "192.168.2.0/24").unwrap().0, ObjectType::NextHopGroup);

        // A spine is lost: both routes shrink to the other one.
        for prefix in ["10.255.0.2/32", "192.168.2.0/24"] {
            p.apply(&mut sai, install(nlri(prefix), vec![ip("10.1.2.1")]));
            assert_eq!(target(&sai, &applied, prefix), Some((ObjectType::NextHop, vec!["10.1.2.1@eth2".into()])));
        }
        assert_eq!(count(&sai, ObjectType::NextHopGroup), 0);
        assert_eq!(count(&sai, ObjectType::NextHopGroupMember), 0);
        assert_eq!(count(&sai, ObjectType::NextHop), baseline.0 + 1);

        // Withdrawn: every object the programmer made is gone.
        p.apply(&mut sai, remove(nlri("10.255.0.2/32")));
        p.apply(&mut sai, remove(nlri("192.168.2.0/24")));
        assert_eq!(target(&sai, &applied, "10.255.0.2/32"), None);
        assert_eq!((count(&sai, ObjectType::NextHop), sai.store().route_entries().count()), baseline);
        assert_eq!(p.errors().load(Ordering::Relaxed), 0);
    }

    #[test]
    fn unresolvable_hops_and_connected_prefixes_are_not_installed() {
        let (mut sai, mut p, applied) = setup();
        // Off every connected subnet; our own address is no next hop either.
        p.apply(&mut sai, install(nlri("10.9.0.0/16"), vec![ip("172.16.0.1"), ip("10.1.1.0")]));
        assert_eq!(target(&sai, &applied, "10.9.0.0/16"), None);
        assert_eq!(p.errors().load(Ordering::Relaxed), 1);
        // One of two resolves: installed through that one.
        p.apply(&mut sai, install(nlri("10.9.0.0/16"), vec![ip("172.16.0.1"), ip("10.1.1.1")]));
        assert_eq!(target(&sai, &applied, "10.9.0.0/16").unwrap().1, ["10.1.1.1@eth1"]);
        // The connected route of eth3 stays connected; no objects leak.
        let hops_before = count(&sai, ObjectType::NextHop);
        p.apply(&mut sai, install(nlri("192.168.1.0/24"), vec![ip("10.1.2.1")]));
        assert_eq!(p.errors().load(Ordering::Relaxed), 2);
        let key = RouteEntryKey {
            virtual_router: sai.default_virtual_router(),
            destination: "192.168.1.0/24".parse().unwrap(),
        };
        let rif = sai.get_route_entry(key).unwrap().next_hop.unwrap();
        assert_eq!(rif.object_type(), Some(ObjectType::RouterInterface));
        assert_eq!(count(&sai, ObjectType::NextHop), hops_before);
        // Withdrawing what was never installed leaves the connected route.
        p.apply(&mut sai, remove(nlri("192.168.1.0/24")));
        assert!(sai.get_route_entry(key).is_ok());
    }

    /// The management handlers on a live speaker (no peers; it originates
    /// its loopback and connected subnets): the blocking handlers wait for
    /// the speaker's answers on its runtime.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn handlers_answer_from_a_running_speaker() {
        use crate::mgmt::SwitchView;
        use mgmt_cli::api::{AddressFamily, Reply, Request, Response};

        let yaml = format!(
            "{CONFIG}bgp:\n  asn: 65101\n  listen_port: 0\n  redistribute: [loopback, connected]\n  neighbors:\n    - {{ interface: eth1, remote_as: 65000, shutdown: true }}\n"
        );
        let config = Config::from_yaml(&yaml).unwrap();
        let (sai, applied) = crate::daemon::build_shim(&config).unwrap();
        let sai = Arc::new(Mutex::new(sai));
        let programmer = programmer(&config, &applied);
        let (bgp, _control) = start(config.bgp.clone().unwrap(), programmer, sai.clone()).await.unwrap();
        let view = SwitchView {
            config: Arc::new(config.clone()),
            applied: Arc::new(applied),
            sai,
            lldp: Arc::new(Mutex::new(crate::daemon::lldp_agent(&config))),
            bgp: Some(bgp),
            now: Arc::new(|| 0),
            ib: None,
            io_stats: Default::default(),
        };
        let ask = |request: Request| {
            let view = view.clone();
            async move {
                match tokio::task::spawn_blocking(move || view.handle(&request)).await.unwrap() {
                    Response::Ok { reply } => Ok(reply),
                    Response::Error { message } => Err(message),
                }
            }
        };
        let Ok(Reply::BgpSummary(summary)) = ask(Request::ShowBgpSummary).await else { panic!() };
        assert!(summary.enabled);
        assert_eq!(summary.router_id, Some("10.255.0.1".parse().unwrap()));
        assert_eq!(summary.peers.len(), 1);
        assert_eq!(summary.peers[0].address, ip("10.1.1.1"));
        assert_eq!(summary.peers[0].state, "Idle");
        let Ok(Reply::BgpNeighbors(n)) = ask(Request::ShowBgpNeighbors { address: Some(ip("10.1.1.1")) }).await else {
            panic!()
        };
        assert_eq!((n.len(), n[0].link.as_str(), n[0].local_address), (1, "external", Some(ip("10.1.1.0"))));
        let Ok(Reply::BgpNeighbors(none)) = ask(Request::ShowBgpNeighbors { address: Some(ip("10.9.9.9")) }).await
        else {
            panic!()
        };
        assert!(none.is_empty());
        let Ok(Reply::BgpRoutes(table)) =
            ask(Request::ShowBgpRoutes { family: AddressFamily::Ipv4, prefix: None }).await
        else {
            panic!()
        };
        let prefixes: Vec<&str> = table.routes.iter().map(|r| r.prefix.as_str()).collect();
        assert_eq!(prefixes, ["10.1.1.0/31", "10.1.2.0/31", "10.255.0.1/32", "192.168.1.0/24"]);
        let local = &table.routes[2].paths[0];
        assert!(local.best && local.peer.is_none() && local.origin == "i", "{local:?}");
        let one = ask(Request::ShowBgpRoutes { family: AddressFamily::Ipv4, prefix: Some("10.255.0.1/32".into()) });
        let Ok(Reply::BgpRoutes(one)) = one.await else { panic!() };
        assert_eq!(one.routes.len(), 1);
        // A bare address: the longest prefix holding it.
        let one = ask(Request::ShowBgpRoutes { family: AddressFamily::Ipv4, prefix: Some("192.168.1.77".into()) });
        let Ok(Reply::BgpRoutes(one)) = one.await else { panic!() };
        assert_eq!(one.routes.iter().map(|r| r.prefix.as_str()).collect::<Vec<_>>(), ["192.168.1.0/24"]);
        let none = ask(Request::ShowBgpRoutes { family: AddressFamily::Ipv4, prefix: Some("172.16.0.1".into()) });
        let Ok(Reply::BgpRoutes(none)) = none.await else { panic!() };
        assert!(none.routes.is_empty());
        let wrong = ask(Request::ShowBgpRoutes { family: AddressFamily::Ipv6, prefix: Some("10.0.0.0/8".into()) });
        assert!(wrong.await.unwrap_err().contains("not an IPv6 prefix"));
        // Originated routes are not forwarding entries; the table shows
        // connected and local routes with their protocols.
        let Ok(Reply::IpRoutes(routes)) = ask(Request::ShowIpRoute { family: AddressFamily::Ipv4 }).await else {
            panic!()
        };
        let find = |p: &str| routes.iter().find(|r| r.prefix == p).unwrap_or_else(|| panic!("{p} in {routes:?}"));
        assert_eq!(find("10.1.1.0/31").protocol, "connected");
        assert_eq!(find("10.255.0.1/32").protocol, "local");
        assert!(routes.iter().all(|r| r.protocol != "bgp"));
        let Ok(Reply::IpRoutes(v6)) = ask(Request::ShowIpRoute { family: AddressFamily::Ipv6 }).await else { panic!() };
        assert!(v6.iter().all(|r| r.prefix.contains(':')), "{v6:?}");
        // What BGP asked for but forwarding does not use is listed, not installed.
        {
            let bgp = view.bgp.as_ref().unwrap();
            let mut asked = bgp.installed.0.lock().unwrap();
            asked.apply(install(nlri("192.168.1.0/24"), vec![ip("10.1.1.1")]));
            asked.apply(install(nlri("10.9.0.0/16"), vec![ip("172.16.0.1")]));
        }
        let Ok(Reply::IpRoutes(routes)) = ask(Request::ShowIpRoute { family: AddressFamily::Ipv4 }).await else {
            panic!()
        };
        let rows: Vec<(&str, &str, bool)> = routes
            .iter()
            .filter(|r| r.prefix == "192.168.1.0/24" || r.prefix == "10.9.0.0/16")
            .map(|r| (r.prefix.as_str(), r.protocol.as_str(), r.installed))
            .collect();
        assert_eq!(
            rows,
            [("10.9.0.0/16", "bgp", false), ("192.168.1.0/24", "connected", true), ("192.168.1.0/24", "bgp", false)]
        );
        let SwitchView { bgp, .. } = view;
        bgp.unwrap().shutdown().await;
    }
}
