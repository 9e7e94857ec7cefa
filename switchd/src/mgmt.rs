//! The management server: answers [`mgmt_cli::Request`]s from the shim's
//! state, through its queries only (so any backend can be shown).
//!
//! [`SwitchView`] holds what the handlers read and has one handler per
//! request; [`serve`] puts it behind a Unix socket (JSON, one message per
//! line, see `mgmt_cli::codec`). The demo uses the same handlers on its
//! in-memory switches, so what it prints is what `swcli` would show.

use std::collections::BTreeMap;
use std::io;
use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use mgmt_cli::api::{self, Reply, Request, Response};
use mgmt_cli::codec;
use sai_shim::backend::soft::SoftBackend;
use sai_shim::{Backend, FdbEntryType, NeighborState, Object, Sai};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::access::Peer;
use crate::apply::Applied;
use crate::bgp::BgpView;
use crate::commit::ConfigService;
use crate::config::{Config, PortMode};
use crate::lldp::{self, LldpAgent};

pub mod ip_routes;

const NS_PER_SEC: u64 = 1_000_000_000;

/// Everything the management API reads, shared with the forwarding thread
/// and the LLDP agent through their mutexes (each locked briefly, never two
/// at once).
pub struct SwitchView<B: Backend = SoftBackend> {
    pub config: Arc<Config>,
    pub applied: Arc<Applied>,
    pub sai: Arc<Mutex<Sai<B>>>,
    pub lldp: Arc<Mutex<LldpAgent>>,
    /// The BGP speaker, when the config has a `bgp:` section.
    pub bgp: Option<BgpView>,
    /// The daemon's clock (monotonic ns) or the demo's virtual time.
    pub now: Arc<dyn Fn() -> u64 + Send + Sync>,
    /// The IB-like plane, when ports are in `mode: ib`.
    pub ib: Option<crate::ib::SharedIb>,
    /// What the port adapters counted below the pipeline (kernel ring
    /// drops...), as the forwarding thread last published it.
    pub io_stats: IoStatsHandle,
}

/// The forwarding thread's adapter counters, shared with the management API.
pub type IoStatsHandle = Arc<Mutex<crate::forwarding::ForwardingStats>>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not take the management API down with it.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<B: Backend> Clone for SwitchView<B> {
    fn clone(&self) -> Self {
        SwitchView {
            config: self.config.clone(),
            applied: self.applied.clone(),
            sai: self.sai.clone(),
            lldp: self.lldp.clone(),
            bgp: self.bgp.clone(),
            now: self.now.clone(),
            ib: self.ib.clone(),
            io_stats: self.io_stats.clone(),
        }
    }
}

impl<B: Backend> SwitchView<B> {
    /// Answers one request.
    pub fn handle(&self, request: &Request) -> Response {
        let reply = match request {
            Request::ShowInterfaces => Reply::Interfaces(self.interfaces()),
            Request::ShowMac => Reply::Mac(self.mac_table()),
            Request::ShowVxlan => Reply::Vxlan(self.vxlan()),
            Request::ShowNeighbors => Reply::Neighbors(self.neighbors()),
            Request::ShowRoutes => Reply::Routes(self.routes()),
            Request::ShowLldp => Reply::Lldp(self.lldp_neighbors()),
            Request::ShowRunningConfig => {
                Reply::RunningConfig(api::RunningConfig { yaml: self.config.to_yaml(), generation: 0 })
            }
            Request::ShowCompletions => Reply::Completions(self.completions()),
            Request::ShowDrops => Reply::Drops(self.drops()),
            Request::CheckLossless => Reply::LosslessFindings(self.check_lossless()),
            Request::ShowLosslessProfile => {
                Reply::LosslessProfile(serde_json::to_value(self.lossless_profile()).unwrap_or_default())
            }
            Request::ShowBackend => Reply::Backend(self.backend()),
            Request::ShowBgpSummary => Reply::BgpSummary(self.bgp.as_ref().map(BgpView::summary).unwrap_or_default()),
            Request::ShowBgpNeighbors { address } => {
                Reply::BgpNeighbors(self.bgp.as_ref().map(|b| b.neighbors(*address)).unwrap_or_default())
            }
            Request::ShowBfdPeers => Reply::BfdPeers(self.bgp.as_ref().map(BgpView::bfd_peers).unwrap_or_default()),
            Request::ShowBgpRoutes { family, prefix } => match &self.bgp {
                Some(bgp) => match bgp.table(*family, prefix.as_deref()) {
                    Ok(table) => Reply::BgpRoutes(table),
                    Err(message) => return Response::Error { message },
                },
                None => return Response::Error { message: "BGP is not configured".into() },
            },
            Request::ShowIpRoute { family } | Request::StreamIpRoute { family } => {
                Reply::IpRoutes(self.ip_routes(*family))
            }
            Request::ShowIpRouteVrf { family, vrf } => match self.ip_routes_in(*family, Some(vrf)) {
                Some(routes) => Reply::IpRoutes(routes),
                None => return Response::Error { message: format!("no VRF {vrf:?}") },
            },
            Request::ShowInterfacesCounters => Reply::InterfaceCounters(self.interface_counters()),
            Request::ShowPfcCounters => Reply::PfcCounters(self.pfc_counters()),
            Request::ShowQueueCounters => Reply::QueueCounters(self.queue_counters()),
            Request::ShowQueueWredCounters => Reply::WredCounters(self.wred_counters()),
            Request::ShowPriorityGroupWatermark { kind } => Reply::Watermarks(self.pg_watermarks(*kind)),
            Request::ShowQueueWatermark => Reply::Watermarks(self.queue_watermarks()),
            Request::ShowBufferPool => Reply::BufferPool(self.buffer_pools()),
            Request::ShowPfcwdStats => Reply::PfcwdStats(self.pfcwd_stats()),
            Request::ShowDlb => Reply::Dlb(self.dlb()),
            Request::ShowIbPorts => {
                Reply::IbPorts(self.ib.as_ref().map(|ib| crate::ib::lock(ib).show_ports()).unwrap_or_default())
            }
            Request::ShowIbCounters => {
                let Some(ib) = &self.ib else {
                    return Response::Error { message: "no port is in IB-like mode".into() };
                };
                Reply::IbCounters(crate::ib::lock(ib).show_counters())
            }
            Request::ShowIbLft { switch } => {
                let Some(ib) = &self.ib else {
                    return Response::Error { message: "no port is in IB-like mode".into() };
                };
                match crate::ib::lock(ib).show_lft(&self.config.name, switch.as_deref()) {
                    Ok(lft) => Reply::IbLft(lft),
                    Err(message) => return Response::Error { message },
                }
            }
            Request::ShowIbSm => {
                let Some(ib) = &self.ib else {
                    return Response::Error { message: "no port is in IB-like mode".into() };
                };
                Reply::IbSm(Box::new(crate::ib::lock(ib).show_sm((self.now)())))
            }
            Request::ShowIbTopology => Reply::IbTopology(
                self.ib
                    .as_ref()
                    .map(|ib| crate::ib::lock(ib).show_topology())
                    .unwrap_or(mgmt_cli::ib::IbTopology { nodes: Vec::new() }),
            ),
            Request::ShowIbRoutesBalance => Reply::IbRoutesBalance(
                self.ib
                    .as_ref()
                    .map(|ib| crate::ib::lock(ib).show_routes_balance())
                    .unwrap_or_else(mgmt_cli::ib::IbRoutesBalance::empty),
            ),
            Request::ShowBgpEvpn { .. }
            | Request::ShowEvpnVni { .. }
            | Request::ShowEvpnMac { .. }
            | Request::ShowEvpnArpCache { .. }
            | Request::ShowVrf => match &self.bgp {
                Some(bgp) if bgp.config.evpn.is_some() || matches!(request, Request::ShowBgpEvpn { .. }) => {
                    crate::evpn::show(bgp, request)
                }
                _ => return Response::Error { message: "EVPN is not configured (bgp.evpn)".into() },
            },
            Request::ShowCommitHistory
            | Request::ShowCommit { .. }
            | Request::Validate { .. }
            | Request::Commit(_)
            | Request::Save => {
                return Response::Error { message: "this switch has no configuration to change".into() };
            }
        };
        Response::Ok { reply }
    }

    /// `show backend`: the shim backend's own description.
    pub fn backend(&self) -> api::BackendInfo {
        let description = lock(&self.sai).backend().describe();
        let mut details: Vec<(String, String)> =
            description.details.into_iter().map(|(key, value)| (key.to_owned(), value)).collect();
        if description.name == "soft" {
            // The forwarding thread: how it is scheduled, how late it runs.
            let stats = self.forwarding_stats();
            let (scheduling, late) = (&stats.scheduling, &stats.looped.late);
            details.push(("forwarding_scheduling".into(), scheduling.describe()));
            details.push(("forwarding_realtime_refusals".into(), scheduling.refusals.to_string()));
            details.push(("forwarding_wakeups_timed".into(), late.count().to_string()));
            for (bound, name) in crate::scheduling::LATE_BOUNDS_NS.iter().zip(crate::scheduling::LATE_NAMES).skip(1) {
                details.push((format!("forwarding_wakeups_late_over_{name}"), late.over(*bound).to_string()));
            }
            details.push(("forwarding_wakeup_late_max_us".into(), (late.max_ns / 1_000).to_string()));
        }
        api::BackendInfo { name: description.name.to_owned(), details }
    }

    /// What the shell completes from: names and numbers in use now.
    pub fn completions(&self) -> api::Completions {
        let mut neighbors: Vec<IpAddr> = self.neighbors().into_iter().map(|n| n.ip).collect();
        if let Some(bgp) = &self.bgp {
            neighbors.extend(bgp.summary().peers.into_iter().map(|p| p.address));
        }
        neighbors.sort();
        neighbors.dedup();
        api::Completions {
            interfaces: self.interfaces().into_iter().map(|i| i.name).collect(),
            vlans: self.config.vlans.iter().map(|v| v.id).collect(),
            vnis: self.config.vxlan.iter().flat_map(|x| x.vnis.iter().map(|m| m.vni)).collect(),
            neighbors,
            prefixes: self.routes().into_iter().map(|r| r.prefix).collect(),
        }
    }

    pub fn interfaces(&self) -> Vec<api::Interface> {
        // IB-like ports count in the IB-like plane (PortCounters, data in
        // 4-byte words); read before the shim, one lock at a time.
        let ib_ports = self.ib.as_ref().map(|ib| crate::ib::lock(ib).show_ports()).unwrap_or_default();
        let ring_waits = self.ring_waits();
        let ring_drops = self.ring_drops();
        let sai = lock(&self.sai);
        let mut out = Vec::new();
        for port in &self.config.ports {
            let objects = &self.applied.ports[&port.name];
            let counters = sai.port_counters(objects.port).unwrap_or_default();
            let oper_up = sai.port_oper_status(objects.port);
            let addresses = match &port.mode {
                PortMode::Routed { addresses } => addresses.iter().map(ToString::to_string).collect(),
                _ => Vec::new(),
            };
            let mac = objects
                .router_interface
                .and_then(|rif| sai.get_router_interface(rif).ok())
                .map(|rif| rif.src_mac_address.to_string());
            out.push(api::Interface {
                name: port.name.clone(),
                kind: format!("{:?}", port.kind).to_lowercase(),
                admin_up: port.admin_up,
                oper_up: port.admin_up && oper_up,
                mtu: port.mtu,
                mode: port.mode.to_string(),
                addresses,
                mac,
                counters: match ib_ports.iter().find(|p| p.name == port.name) {
                    Some(ib) => api::Counters {
                        rx_packets: ib.counters.rcv_packets,
                        rx_bytes: ib.counters.rcv_data * 4,
                        tx_packets: ib.counters.xmit_packets,
                        tx_bytes: ib.counters.xmit_data * 4,
                        rx_drops: ib.counters.rcv_switch_relay_errors + ib.counters.rcv_errors,
                        tx_drops: ib.counters.vl15_dropped,
                        rx_ring_drops: ring_drops.get(&port.name).copied().unwrap_or(0),
                    },
                    None => api::Counters {
                        rx_packets: counters.rx_packets,
                        rx_bytes: counters.rx_bytes,
                        tx_packets: counters.tx_packets,
                        tx_bytes: counters.tx_bytes,
                        rx_drops: counters.rx_drops,
                        tx_drops: counters.tx_drops,
                        rx_ring_drops: ring_drops.get(&port.name).copied().unwrap_or(0),
                    },
                },
                rx_ring_wait: (port.kind == crate::config::PortKind::Afpacket)
                    .then(|| ring_waits.get(&port.name).map(ring_wait).unwrap_or_default()),
            });
        }
        for vlan in self.config.vlans.iter().filter(|v| !v.addresses.is_empty()) {
            let rif = self.applied.vlans[&vlan.id].router_interface.and_then(|rif| sai.get_router_interface(rif).ok());
            out.push(api::Interface {
                name: format!("vlan{}", vlan.id),
                kind: "svi".into(),
                admin_up: rif.as_ref().is_some_and(|r| r.admin_state),
                oper_up: rif.as_ref().is_some_and(|r| r.admin_state),
                mtu: rif.as_ref().map_or(1500, |r| r.mtu),
                mode: "svi".into(),
                addresses: vlan.addresses.iter().map(ToString::to_string).collect(),
                mac: rif.map(|r| r.src_mac_address.to_string()),
                counters: api::Counters::default(),
                rx_ring_wait: None,
            });
        }
        out
    }

    pub fn mac_table(&self) -> Vec<api::MacEntry> {
        let now = (self.now)();
        let sai = lock(&self.sai);
        let store = sai.store();
        let mut out: Vec<api::MacEntry> = sai
            .fdb_details()
            .into_iter()
            .filter_map(|detail| {
                let vlan = store.vlan(detail.key.vlan)?.vlan_id;
                let destination = match detail.remote_vtep {
                    Some(remote) => format!("vtep {remote}"),
                    None => match store.bridge_port(detail.entry.bridge_port).map(|bp| bp.bridge_port_type) {
                        Some(sai_shim::BridgePortType::Port(port)) => {
                            self.applied.port_name(port).map_or_else(|| format!("port {port:?}"), str::to_owned)
                        }
                        _ => self
                            .applied
                            .bridge_port_name(detail.entry.bridge_port)
                            .unwrap_or_else(|| format!("bridge port {:?}", detail.entry.bridge_port)),
                    },
                };
                let dynamic = detail.entry.entry_type == FdbEntryType::Dynamic;
                Some(api::MacEntry {
                    vlan,
                    mac: detail.key.mac.to_string(),
                    destination,
                    kind: if dynamic { "dynamic" } else { "static" }.into(),
                    age_secs: detail.last_seen_ns.filter(|_| dynamic).map(|seen| now.saturating_sub(seen) / NS_PER_SEC),
                })
            })
            .collect();
        out.sort_by(|a, b| (a.vlan, &a.mac).cmp(&(b.vlan, &b.mac)));
        out
    }

    pub fn vxlan(&self) -> api::Vxlan {
        let Some(vxlan) = &self.config.vxlan else {
            return api::Vxlan::default();
        };
        let sai = lock(&self.sai);
        let mut macs: BTreeMap<std::net::Ipv4Addr, usize> = BTreeMap::new();
        for remote in sai.fdb_details().into_iter().filter_map(|detail| detail.remote_vtep) {
            *macs.entry(remote).or_default() += 1;
        }
        let flood = flood_lists(sai.store());
        let mut remotes: BTreeMap<std::net::Ipv4Addr, Vec<u32>> = BTreeMap::new();
        for (vni, vteps) in &flood {
            for remote in vteps {
                remotes.entry(*remote).or_default().push(*vni);
            }
        }
        for remote in macs.keys() {
            remotes.entry(*remote).or_default();
        }
        api::Vxlan {
            source: Some(vxlan.source),
            udp_port: vxlan.udp_port,
            vnis: vxlan
                .vnis
                .iter()
                .map(|m| api::VniMapping {
                    vni: m.vni,
                    vlan: m.vlan,
                    flood: flood.get(&m.vni).cloned().unwrap_or_default(),
                })
                .collect(),
            remote_vteps: remotes
                .into_iter()
                .map(|(address, vnis)| api::RemoteVtep {
                    address,
                    vnis,
                    macs: macs.get(&address).copied().unwrap_or(0),
                })
                .collect(),
        }
    }

    pub fn neighbors(&self) -> Vec<api::Neighbor> {
        let sai = lock(&self.sai);
        let mut out: Vec<api::Neighbor> = sai
            .neighbor_table()
            .into_iter()
            .map(|(key, entry)| api::Neighbor {
                interface: self
                    .applied
                    .router_interface_name(key.router_interface)
                    .unwrap_or_else(|| format!("rif {:?}", key.router_interface)),
                ip: key.ip,
                mac: entry.mac.map(|m| m.to_string()),
                state: match entry.state {
                    NeighborState::Incomplete => "incomplete",
                    NeighborState::Reachable => "reachable",
                    NeighborState::Stale => "stale",
                    NeighborState::Probe => "probe",
                    NeighborState::Failed => "failed",
                }
                .into(),
            })
            .collect();
        out.sort_by(|a, b| (&a.interface, a.ip).cmp(&(&b.interface, b.ip)));
        out
    }

    pub fn routes(&self) -> Vec<api::Route> {
        let sai = lock(&self.sai);
        let store = sai.store();
        // The config's static routes as applied (a lookup, not a scan of the config per route).
        let configured_static = |net| matches!(self.applied.routes.get(net), Some(crate::apply::RouteSpec::Via(_)));
        let hop = |id| -> api::NextHop {
            match store.next_hop(id) {
                Some(nh) => api::NextHop { ip: Some(nh.ip), interface: self.applied.next_hop_interface(nh) },
                None => api::NextHop { ip: None, interface: None },
            }
        };
        let mut out: Vec<api::Route> = store
            .route_entries()
            .map(|(key, entry)| {
                let (mut kind, next_hops) = match (entry.packet_action, entry.next_hop) {
                    (sai_shim::PacketAction::Drop, _) => ("drop", Vec::new()),
                    (sai_shim::PacketAction::Trap, _) => ("punt", Vec::new()),
                    (_, None) => ("drop", Vec::new()),
                    (_, Some(id)) if id == store.cpu_port() => ("local", Vec::new()),
                    (_, Some(id)) => match store.get(id) {
                        Some(Object::RouterInterface(_)) => (
                            "connected",
                            vec![api::NextHop { ip: None, interface: self.applied.router_interface_name(id) }],
                        ),
                        Some(Object::NextHop(_)) => ("static", vec![hop(id)]),
                        Some(Object::NextHopGroup(_)) => {
                            ("static", store.group_members(id).into_iter().map(hop).collect())
                        }
                        _ => ("unknown", Vec::new()),
                    },
                };
                if kind == "static" && !configured_static(&key.destination) {
                    kind = "dynamic";
                }
                api::Route { prefix: key.destination.to_string(), kind: kind.into(), next_hops }
            })
            .collect();
        // IPv4 before IPv6, then by address and length.
        out.sort_by_key(|r| {
            let net: ipnetwork::IpNetwork = r.prefix.parse().expect("printed from an IpNetwork");
            (matches!(net.ip(), IpAddr::V6(_)), net.network(), net.prefix())
        });
        out
    }

    /// How long frames waited in each port's rx ring, by port name.
    pub fn ring_waits(&self) -> std::collections::HashMap<String, dataplane::io::WaitHistogram> {
        lock(&self.io_stats).devices.iter().map(|device| (device.name.clone(), device.io.rx_wait)).collect()
    }

    /// Frames each port's kernel ring dropped, by port name (the adapter
    /// is named after the port).
    fn ring_drops(&self) -> std::collections::HashMap<String, u64> {
        lock(&self.io_stats).devices.iter().map(|device| (device.name.clone(), device.io.rx_ring_drops)).collect()
    }

    /// Non-zero drop counters: the pipeline's for the switch, the
    /// forwarding thread's own ([`Self::forwarding_drops`]), then each
    /// port's.
    pub fn drops(&self) -> Vec<api::DropCount> {
        let mut out = self.pipeline_drops();
        let switch_rows = out.iter().take_while(|d| d.interface.is_none()).count();
        out.splice(switch_rows..switch_rows, self.forwarding_drops());
        out
    }

    /// Frames the forwarding thread lost around the pipeline (the traffic
    /// manager's refusals, a port adapter that refused or failed a send, a
    /// punt or output with nowhere to go), non-zero ones by reason.
    pub fn forwarding_drops(&self) -> Vec<api::DropCount> {
        lock(&self.io_stats)
            .drops()
            .into_iter()
            .filter(|(_, packets)| *packets > 0)
            .map(|(reason, packets)| api::DropCount { interface: None, reason: reason.to_owned(), packets })
            .collect()
    }

    /// The forwarding thread's own counters as last published.
    pub fn forwarding_stats(&self) -> crate::forwarding::ForwardingStats {
        lock(&self.io_stats).clone()
    }

    /// Non-zero pipeline drop counters: the switch's, then each port's
    /// (with the frames each port's kernel ring dropped before the
    /// pipeline saw them).
    pub fn pipeline_drops(&self) -> Vec<api::DropCount> {
        let ring_drops = self.ring_drops();
        let sai = lock(&self.sai);
        let rows = |interface: Option<String>, counters: &dataplane::pipeline::DropCounters| -> Vec<api::DropCount> {
            counters
                .iter()
                .filter(|(_, packets)| *packets > 0)
                .map(|(reason, packets)| api::DropCount {
                    interface: interface.clone(),
                    reason: kebab(&format!("{reason:?}")),
                    packets,
                })
                .collect()
        };
        let mut out = sai.drop_counters().map(|counters| rows(None, &counters)).unwrap_or_default();
        for port in &self.config.ports {
            if let Some(counters) = sai.port_counters(self.applied.ports[&port.name].port) {
                out.extend(rows(Some(port.name.clone()), &counters.drops));
            }
            // Lost before the pipeline: the kernel found the port's ring full.
            if let Some(&packets) = ring_drops.get(&port.name).filter(|&&packets| packets > 0) {
                out.push(api::DropCount { interface: Some(port.name.clone()), reason: RX_RING_FULL.into(), packets });
            }
        }
        out
    }

    pub fn lldp_neighbors(&self) -> Vec<api::LldpNeighbor> {
        let now = (self.now)();
        let agent = lock(&self.lldp);
        agent
            .neighbors()
            .map(|n| {
                // The agent knows its ports by the names the config gave.
                let local_port = agent.port_name(n.port).map_or_else(|| format!("port {}", n.port), str::to_owned);
                api::LldpNeighbor {
                    local_port,
                    chassis_id: lldp::chassis_id_text(&n.announced.chassis_id),
                    port_id: lldp::port_id_text(&n.announced.port_id),
                    system_name: n.announced.system_name.clone(),
                    port_description: n.announced.port_description.clone(),
                    ttl_secs: n.announced.ttl,
                    expires_in_secs: n.expires.saturating_sub(now).div_ceil(NS_PER_SEC),
                }
            })
            .collect()
    }
}

/// The `show drops` reason of frames the kernel dropped at a full rx ring.
pub const RX_RING_FULL: &str = "rx-ring-full";

/// `NeighborMiss` -> `neighbor-miss`.
fn kebab(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// A bound management socket; dropping it removes the socket file.
pub struct MgmtSocket {
    listener: UnixListener,
    path: PathBuf,
}

impl Drop for MgmtSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Binds the socket at `path` with permissions 0666: every local user may
/// connect, and what each may do is decided per connection from its peer
/// credentials ([`crate::access`]). A stale socket file from a previous
/// run is replaced.
pub fn bind(path: &Path) -> io::Result<MgmtSocket> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
    Ok(MgmtSocket { listener, path: path.to_owned() })
}

/// Serves connections until the task is dropped. `view` is replaced when
/// the configuration changes; each request reads the current one.
/// Configuration requests go to `configure` (none: the demo's read-only
/// switches).
pub async fn serve<B: Backend + Send + 'static>(
    socket: MgmtSocket,
    view: Arc<RwLock<SwitchView<B>>>,
    configure: Option<Arc<dyn ConfigService>>,
) {
    loop {
        match socket.listener.accept().await {
            Ok((stream, _)) => {
                let view = view.clone();
                let configure = configure.clone();
                tokio::spawn(async move {
                    if let Err(error) = connection(stream, view, configure).await {
                        tracing::debug!(%error, "management connection ended");
                    }
                });
            }
            Err(error) => {
                tracing::warn!(%error, "management accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

async fn connection<B: Backend + Send + 'static>(
    stream: UnixStream,
    view: Arc<RwLock<SwitchView<B>>>,
    configure: Option<Arc<dyn ConfigService>>,
) -> io::Result<()> {
    // Who is at the other end, as the kernel says (SO_PEERCRED).
    let credentials = stream.peer_cred()?;
    let peer = Arc::new(Peer::from_credentials(credentials.uid(), credentials.gid(), credentials.pid()));
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut lines).take(codec::MAX_LINE as u64).read_until(b'\n', &mut line).await?;
        if n == 0 {
            return Ok(());
        }
        let response = match codec::decode::<Request>(&line) {
            Ok(request) => match peer.refusal(request.privilege()) {
                Some(message) => {
                    tracing::warn!(user = %peer.user, ?request, "management request refused");
                    Response::Error { message }
                }
                None if matches!(request, Request::StreamIpRoute { .. }) => {
                    let Request::StreamIpRoute { family } = request else { unreachable!() };
                    let view = view.read().unwrap_or_else(|e| e.into_inner()).clone();
                    stream_ip_routes(view, family, &mut write).await?;
                    continue;
                }
                None => {
                    tracing::debug!(user = %peer.user, ?request, "management request");
                    let view = view.read().unwrap_or_else(|e| e.into_inner()).clone();
                    let configure = configure.clone();
                    let peer = peer.clone();
                    // Handlers lock the dataplane; keep that off the async workers.
                    tokio::task::spawn_blocking(move || {
                        configure
                            .and_then(|c| c.handle(&peer, &request, std::time::Instant::now()))
                            .unwrap_or_else(|| view.handle(&request))
                    })
                    .await
                    .unwrap_or_else(|e| Response::Error { message: format!("handler failed: {e}") })
                }
            },
            Err(error) => Response::Error { message: format!("bad request: {error}") },
        };
        let bytes = codec::encode(&response).map_err(io::Error::other)?;
        write.write_all(&bytes).await?;
    }
}

/// Chunks of the route table in flight between the reader and the socket:
/// what a streamed answer holds in memory at most, beside the one being
/// read.
const STREAM_CHUNKS_IN_FLIGHT: usize = 2;

/// `StreamIpRoute`: the table read in chunks on a blocking thread (the
/// shim's lock held per chunk), each chunk one `IpRoutes` line written as
/// soon as it is encoded, an empty chunk last.
async fn stream_ip_routes<B: Backend + Send + 'static>(
    view: SwitchView<B>,
    family: api::AddressFamily,
    write: &mut tokio::net::unix::OwnedWriteHalf,
) -> io::Result<()> {
    let (lines, mut ready) = tokio::sync::mpsc::channel::<Vec<u8>>(STREAM_CHUNKS_IN_FLIGHT);
    let reader = tokio::task::spawn_blocking(move || {
        let mut reader = ip_routes::IpRouteReader::new(&view, family);
        let mut line_size = 0;
        while let Some(chunk) = reader.next_chunk(ip_routes::CHUNK) {
            // Sized as the last line: one allocation per chunk, no regrowth.
            let mut line = Vec::with_capacity(line_size + line_size / 8);
            codec::encode_into(&Response::Ok { reply: Reply::IpRoutes(chunk) }, &mut line).map_err(io::Error::other)?;
            line_size = line.len();
            if lines.blocking_send(line).is_err() {
                return Ok(()); // the client left
            }
        }
        let end = codec::encode(&Response::Ok { reply: Reply::IpRoutes(Vec::new()) }).map_err(io::Error::other)?;
        let _ = lines.blocking_send(end);
        Ok::<(), io::Error>(())
    });
    while let Some(line) = ready.recv().await {
        write.write_all(&line).await?;
    }
    reader.await.map_err(io::Error::other)?
}

/// Each VNI's flood list as the shim has it: the remote VTEPs whose bridge
/// ports are members of the VNI's VLAN, whether a static `flood:` list or
/// EVPN's type 3 routes put them there.
fn flood_lists(store: &sai_shim::ObjectStore) -> BTreeMap<u32, Vec<std::net::Ipv4Addr>> {
    let mut lists: BTreeMap<u32, Vec<std::net::Ipv4Addr>> = BTreeMap::new();
    for (_, object) in store.objects_of(sai_shim::ObjectType::VlanMember) {
        let Object::VlanMember(member) = object else { continue };
        let Some(sai_shim::BridgePortType::Tunnel(endpoint)) =
            store.bridge_port(member.bridge_port).map(|b| b.bridge_port_type)
        else {
            continue;
        };
        let (Some(vni), Some(endpoint)) = (store.vni_of_vlan(member.vlan), store.tunnel_endpoint(endpoint)) else {
            continue;
        };
        lists.entry(vni).or_default().push(endpoint.remote_ip);
    }
    for vteps in lists.values_mut() {
        vteps.sort_unstable();
    }
    lists
}

/// A port's [`dataplane::io::WaitHistogram`] as `show interfaces` gives it.
pub fn ring_wait(wait: &dataplane::io::WaitHistogram) -> api::RingWait {
    let over = |i: usize| wait.over(dataplane::io::WAIT_BOUNDS_NS[i]);
    api::RingWait {
        reads: wait.count(),
        max_us: wait.max_ns / 1_000,
        mean_us: wait.sum_ns.checked_div(wait.count()).unwrap_or(0) / 1_000,
        over_10us: over(0),
        over_100us: over(1),
        over_1ms: over(2),
        over_10ms: over(3),
        over_100ms: over(4),
        over_1s: over(5),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::{apply, switch_attributes};
    use crate::lldp::AgentConfig;
    use dataplane::pipeline::SwitchConfig;
    use mgmt_cli::Client;

    const CONFIG: &str = r#"
name: t1
ports:
  - { name: eth1, mode: access, vlan: 10 }
  - { name: eth2, mode: access, vlan: 10 }
  - { name: eth3, mode: routed, addresses: [10.0.1.1/24] }
  - { name: eth4, mode: routed, addresses: [10.0.2.1/24] }
vlans:
  - { id: 10, addresses: [192.168.10.1/24] }
routes:
  - { prefix: 0.0.0.0/0, next_hops: [10.0.1.2, 10.0.2.2] }
"#;

    fn view() -> SwitchView {
        let config = Config::from_yaml(CONFIG).unwrap();
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &switch_attributes(&config)).unwrap();
        let applied = apply(&mut sai, &config).unwrap();
        let agent = LldpAgent::new(AgentConfig {
            chassis_mac: crate::apply::switch_mac("t1"),
            system_name: "t1".into(),
            tx_interval_secs: 30,
            ttl_secs: 120,
        });
        SwitchView {
            config: Arc::new(config),
            applied: Arc::new(applied),
            sai: Arc::new(Mutex::new(sai)),
            lldp: Arc::new(Mutex::new(agent)),
            bgp: None,
            now: Arc::new(|| 0),
            ib: None,
            io_stats: Default::default(),
        }
    }

    /// A broadcast frame from `mac` on port index `port`: learned by the pipeline.
    fn inject(view: &SwitchView, port: &str, mac: [u8; 6]) {
        let mut sai = view.sai.lock().unwrap();
        let port = sai.backend().port_index(view.applied.ports[port].port).unwrap();
        let mut frame = vec![0xff; 6];
        frame.extend_from_slice(&mac);
        frame.extend_from_slice(&[0x88, 0xb6]);
        frame.resize(60, 0);
        let mut out = dataplane::pipeline::Output::new();
        sai.backend_mut().process_index(0, port, &frame, &mut out);
    }

    #[test]
    fn mac_table_names_ports() {
        let view = view();
        inject(&view, "eth2", [2, 0, 0, 0, 0, 0x22]);
        let macs = view.mac_table();
        assert_eq!(macs.len(), 1);
        assert_eq!(macs[0].mac, "02:00:00:00:00:22");
        assert_eq!(macs[0].destination, "eth2");
        assert_eq!(macs[0].vlan, 10);
        let interfaces = view.interfaces();
        let eth2 = interfaces.iter().find(|i| i.name == "eth2").unwrap();
        assert_eq!(eth2.counters.rx_packets, 1);
        assert!(interfaces.iter().any(|i| i.name == "vlan10" && i.kind == "svi"));
    }

    #[test]
    fn drops_name_reason_and_port() {
        let view = view();
        // A frame with a group source MAC is dropped on ingress.
        let mut sai = view.sai.lock().unwrap();
        let port = sai.backend().port_index(view.applied.ports["eth1"].port).unwrap();
        let mut frame = vec![0xff; 12];
        frame.extend_from_slice(&[0x88, 0xb6]);
        frame.resize(60, 0);
        let mut out = dataplane::pipeline::Output::new();
        sai.backend_mut().process_index(0, port, &frame, &mut out);
        drop(sai);
        let drops = view.drops();
        assert!(
            drops.iter().any(|d| d.interface.is_none() && d.reason == "source-mac-invalid" && d.packets == 1),
            "{drops:?}"
        );
        assert!(
            drops.iter().any(|d| d.interface.as_deref() == Some("eth1") && d.reason == "source-mac-invalid"),
            "{drops:?}"
        );
        assert_eq!(kebab("NeighborMiss"), "neighbor-miss");
    }

    #[test]
    fn routes_show_kinds_and_ecmp_members() {
        let routes = view().routes();
        let find = |p: &str| routes.iter().find(|r| r.prefix == p).unwrap_or_else(|| panic!("{p} in {routes:?}"));
        assert_eq!(find("10.0.1.1/32").kind, "local");
        assert_eq!(find("10.0.1.0/24").kind, "connected");
        assert_eq!(find("10.0.1.0/24").next_hops[0].interface.as_deref(), Some("eth3"));
        assert_eq!(find("192.168.10.0/24").next_hops[0].interface.as_deref(), Some("vlan10"));
        let default = find("0.0.0.0/0");
        assert_eq!(default.kind, "static");
        let hops: Vec<String> = default
            .next_hops
            .iter()
            .map(|h| format!("{}@{}", h.ip.unwrap(), h.interface.as_deref().unwrap()))
            .collect();
        assert_eq!(hops, ["10.0.1.2@eth3", "10.0.2.2@eth4"]);
        assert_eq!(routes[0].prefix, "0.0.0.0/0");
    }

    #[tokio::test]
    async fn the_route_table_streams_in_chunks_and_matches_the_whole_answer() {
        let view = view();
        let whole = view.ip_routes(api::AddressFamily::Ipv4);
        assert!(whole.len() >= 5, "{whole:?}");
        // Read two routes at a time: the same routes, in the same order.
        let mut reader = ip_routes::IpRouteReader::new(&view, api::AddressFamily::Ipv4);
        let mut chunked = Vec::new();
        while let Some(chunk) = reader.next_chunk(2) {
            assert!(chunk.len() <= 2);
            chunked.extend(chunk);
        }
        assert_eq!(chunked, whole);
        // Over the socket, streamed.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let server = tokio::spawn(serve(bind(&path).unwrap(), Arc::new(RwLock::new(view)), None));
        let streamed = tokio::task::spawn_blocking(move || {
            let mut client = Client::connect(&path).unwrap();
            let mut all = Vec::new();
            let request = Request::StreamIpRoute { family: api::AddressFamily::Ipv4 };
            let count = client
                .stream_ip_routes(&request, |chunk| {
                    all.extend(chunk);
                    Ok(())
                })
                .unwrap();
            assert_eq!(count, all.len());
            // The connection serves the next request after the stream.
            assert!(matches!(client.request(&Request::ShowMac), Ok(Reply::Mac(_))));
            all
        })
        .await
        .unwrap();
        server.abort();
        assert_eq!(streamed, whole);
    }

    /// More routes than one answer may carry (the socket's 16 MiB line):
    /// the shell's `show ip route | json` and `show ip route | grep`
    /// stream them, rendered as they arrive.
    #[tokio::test]
    async fn the_shell_streams_a_route_table_larger_than_one_answer() {
        const ROUTES: u32 = 140_000;
        let view = view();
        {
            let mut sai = view.sai.lock().unwrap();
            let eth3 = crate::config::L3Interface::Port("eth3".into());
            let via = view.applied.next_hops[&("10.0.1.2".parse().unwrap(), eth3)];
            let vr = sai.default_virtual_router();
            for i in 0..ROUTES {
                let destination =
                    ipnetwork::IpNetwork::new(std::net::Ipv4Addr::from(0x1400_0000 + i).into(), 32).unwrap();
                let key = sai_shim::RouteEntryKey { virtual_router: vr, destination };
                sai.create_route_entry(key, &[sai_shim::RouteEntryAttr::NextHopId(Some(via))]).unwrap();
            }
        }
        let whole = view.ip_routes(api::AddressFamily::Ipv4);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let server = tokio::spawn(serve(bind(&path).unwrap(), Arc::new(RwLock::new(view)), None));
        let (json, grep) = tokio::task::spawn_blocking(move || {
            let mut session = mgmt_cli::shell::session::Session::connect(&path).unwrap();
            let mut run = |line: &str| {
                let mut out = Vec::new();
                let output = session.execute_to(line, &mut out);
                assert_eq!(output.status, mgmt_cli::shell::session::Status::Ok, "{line}: {}", output.text);
                String::from_utf8(out).unwrap()
            };
            (run("show ip route | json"), run("show ip route | grep 20.0.1."))
        })
        .await
        .unwrap();
        server.abort();
        // One route a line, a byte more each than in one answer: more than
        // one answer may carry.
        assert!(json.len() - whole.len() > codec::MAX_LINE, "{} bytes", json.len());
        let streamed: Vec<api::IpRoute> = serde_json::from_str(&json).unwrap();
        assert_eq!(streamed, whole);
        // The table's rows for 20.0.1.0-255, and nothing else (not the legend).
        let lines: Vec<&str> = grep.lines().collect();
        assert_eq!(lines.len(), 256, "{grep}");
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(*line, format!("K>* 20.0.1.{i}/32 [0/0] via 10.0.1.2, eth3"));
        }
    }

    /// Writes until `room` bytes are taken, then fails as a pipe whose
    /// reader left (`swcli show ip route | head -1`).
    struct ReaderLeaves {
        room: usize,
    }

    impl std::io::Write for ReaderLeaves {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.room == 0 {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            Ok(n)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A reader that leaves in the middle of a streamed table ends the
    /// line quietly (`Exit`: status 0, nothing printed), not as a daemon
    /// out of reach, and the session asks the daemon again on a new
    /// connection (the old one still carries the rest of the stream).
    #[tokio::test]
    async fn a_reader_leaving_a_stream_ends_it_quietly() {
        use mgmt_cli::shell::session::{Session, Status};
        let view = view();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let server = tokio::spawn(serve(bind(&path).unwrap(), Arc::new(RwLock::new(view)), None));
        tokio::task::spawn_blocking(move || {
            let mut session = Session::connect(&path).unwrap();
            for line in ["show ip route", "show ip route | json", "show ip route | grep via", "show interfaces"] {
                for room in [0, 10] {
                    let output = session.execute_to(line, &mut ReaderLeaves { room });
                    assert_eq!((output.status, output.text.as_str()), (Status::Exit, ""), "{line}, {room} bytes");
                }
            }
            let mut out = Vec::new();
            let output = session.execute_to("show ip route | json", &mut out);
            assert_eq!(output.status, Status::Ok, "{}", output.text);
            let routes: Vec<api::IpRoute> = serde_json::from_slice(&out).unwrap();
            assert!(routes.iter().any(|r| r.prefix == "0.0.0.0/0"), "{routes:?}");
        })
        .await
        .unwrap();
        server.abort();
    }

    #[tokio::test]
    async fn socket_answers_requests_with_0666() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/t1.sock");
        let socket = bind(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666);
        let view = view();
        inject(&view, "eth1", [2, 0, 0, 0, 0, 0x11]);
        let server = tokio::spawn(serve(socket, Arc::new(RwLock::new(view)), None));
        let client_path = path.clone();
        let (macs, config, bad) = tokio::task::spawn_blocking(move || {
            let mut client = Client::connect(&client_path).unwrap();
            let macs = client.request(&Request::ShowMac).unwrap();
            let config = client.request(&Request::ShowRunningConfig).unwrap();
            // A garbage line gets an error answer, and the connection lives on.
            use std::io::{BufRead, Write};
            let mut raw = std::os::unix::net::UnixStream::connect(&client_path).unwrap();
            raw.write_all(b"{\"request\":\"reboot\"}\n").unwrap();
            let mut line = String::new();
            std::io::BufReader::new(raw).read_line(&mut line).unwrap();
            (macs, config, line)
        })
        .await
        .unwrap();
        match macs {
            Reply::Mac(entries) => assert_eq!(entries[0].destination, "eth1"),
            other => panic!("{other:?}"),
        }
        match config {
            Reply::RunningConfig(c) => assert!(c.yaml.contains("name: t1")),
            other => panic!("{other:?}"),
        }
        assert!(bad.contains("\"status\":\"error\""), "{bad}");
        server.abort();
    }
}
