//! BGP in the daemon: the speaker (`bgp-evpn`) runs as tokio tasks over
//! kernel TCP through the host interfaces, and its best paths and ECMP sets
//! go into the shim through [`SaiRouteSink`] (route entries, next hops,
//! next-hop groups; out again on withdraw). The sink locks the shim once per
//! route change, the same lock the forwarding thread takes per batch, so a
//! change is never seen half-made by the dataplane.
//!
//! config (`bgp:`) -> [`BgpSpeaker`] -> [`RouteSink`] (shim + table) -> shim -> pipeline

use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use bgp_evpn::events::{PeerSummary, RouteView};
use bgp_evpn::packet::{Family, Nlri};
use bgp_evpn::sink::{SaiRouteSink, TableSink, Tee};
use bgp_evpn::{BgpConfig, BgpSpeaker, RouteSink};
use mgmt_cli::api;
use sai_shim::Sai;
use sai_shim::backend::soft::SoftBackend;

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
}

/// Starts the speaker; its routes go into `sai`.
pub async fn start(config: BgpConfig, sai: Arc<Mutex<Sai<SoftBackend>>>) -> Result<BgpView, String> {
    let installed = TableSink::default();
    let sink: Box<dyn RouteSink> = Box::new(Tee(vec![Box::new(SaiRouteSink::new(sai)), Box::new(installed.clone())]));
    let speaker = BgpSpeaker::spawn(config.clone(), sink).await?;
    tracing::info!(
        asn = config.asn,
        router_id = %config.router_id,
        neighbors = config.neighbors.len(),
        networks = config.networks.len(),
        listen = ?speaker.listen_addr,
        "BGP speaker running"
    );
    Ok(BgpView {
        config: Arc::new(config),
        speaker: Arc::new(speaker),
        installed,
        runtime: tokio::runtime::Handle::current(),
    })
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

    pub fn summary(&self) -> api::BgpSummary {
        let peers = self.peers();
        api::BgpSummary {
            enabled: true,
            asn: self.config.asn,
            router_id: Some(self.config.router_id),
            loc_rib_routes: self.wait(self.speaker.loc_rib_len()),
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

    pub fn table(&self, family: api::AddressFamily, prefix: Option<&str>) -> Result<api::BgpRoutes, String> {
        let prefix = match prefix {
            Some(p) => {
                let nlri: Nlri = p.parse().map_err(|e| format!("bad prefix {p:?}: {e}"))?;
                if nlri.family() != self::family(family) {
                    return Err(format!("{p} is not an {family:?} prefix"));
                }
                Some(nlri)
            }
            None => None,
        };
        let routes = self
            .routes(self::family(family), prefix)
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
                        origin: p.origin,
                        med: p.med,
                        local_pref: p.local_pref,
                        communities: p.communities,
                    })
                    .collect(),
            })
            .collect();
        Ok(api::BgpRoutes { family, router_id: Some(self.config.router_id), asn: self.config.asn, routes })
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
