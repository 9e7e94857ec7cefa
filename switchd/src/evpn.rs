//! EVPN in the daemon: what the dataplane learns goes to the speaker, and
//! what the speaker imports goes into the shim's overlay objects.
//!
//! shim notifications (MAC learned/aged/moved on a local port, ARP/ND on an
//! SVI) -> [`LocalFeed`] -> speaker (type 2 routes)
//! speaker (remote MACs, flood lists) -> `ShimProgrammer` -> [`Overlay`] -> tunnel endpoints, FDB, VLAN members

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use bgp_evpn::events::RouteView;
use bgp_evpn::evpn::show::EvpnState;
use bgp_evpn::packet::Family;
use bgp_evpn::packet::evpn::MacAddr;
use bgp_evpn::sink::EvpnBindings;
use bgp_evpn::{BgpConfig, BgpSpeaker};
use sai_shim::{FdbEvent, Notification, ObjectId, Subscription};

use mgmt_cli::api::{self, Reply, Request};

use crate::apply::Applied;
use crate::bgp::BgpView;
use crate::config::Config;

/// The shim objects EVPN installs into for `config` as `applied` made
/// them: no tunnel without `bgp.evpn` or the VXLAN tunnel.
pub fn bindings(config: &Config, applied: &Applied) -> EvpnBindings {
    let Some(evpn) = config.bgp.as_ref().and_then(|b| b.evpn.as_ref()) else { return EvpnBindings::default() };
    let Some(tunnel) = applied.tunnel else { return EvpnBindings::default() };
    EvpnBindings {
        tunnel: Some(tunnel),
        vlans: vni_vlans(config, applied).filter(|(vni, _)| evpn.vnis.iter().any(|v| v.vni == *vni)).collect(),
        configured_vteps: applied.remote_vteps.iter().map(|(ip, objects)| (*ip, *objects)).collect(),
        virtual_routers: applied.vrfs.iter().map(|(name, v)| (name.clone(), v.virtual_router)).collect(),
    }
}

/// Each VXLAN-mapped VNI with its VLAN object.
fn vni_vlans<'a>(config: &'a Config, applied: &'a Applied) -> impl Iterator<Item = (u32, ObjectId)> + 'a {
    let maps = config.vxlan.iter().flat_map(|x| x.vnis.iter());
    maps.filter_map(|m| Some((m.vni, applied.vlans.get(&m.vlan)?.vlan)))
}

/// Something learned locally that EVPN advertises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalEvent {
    /// `mac` is (or is no longer) behind a local port in `vni` (or sent
    /// from one where a sticky entry elsewhere kept it from being learned).
    Mac { vni: u32, mac: MacAddr, present: bool },
    /// ARP/ND on the SVI of `vni` bound `ip` (`None`: the binding went).
    Neighbor { vni: u32, ip: IpAddr, mac: Option<MacAddr> },
}

/// Turns shim notifications into [`LocalEvent`]s: only MACs behind the
/// switch's own ports (not remote VTEPs) in EVPN VNIs, and neighbours on
/// those VNIs' SVIs.
#[derive(Debug, Clone, Default)]
pub struct LocalFeed {
    vni_of_vlan: HashMap<ObjectId, u32>,
    vni_of_svi: HashMap<ObjectId, u32>,
    local_bridge_ports: HashSet<ObjectId>,
}

impl LocalFeed {
    pub fn new(config: &Config, applied: &Applied) -> LocalFeed {
        let evpn_vnis: HashSet<u32> =
            config.bgp.iter().flat_map(|b| b.evpn.iter()).flat_map(|e| e.vnis.iter().map(|v| v.vni)).collect();
        let mut feed = LocalFeed::default();
        for m in config.vxlan.iter().flat_map(|x| x.vnis.iter()).filter(|m| evpn_vnis.contains(&m.vni)) {
            let Some(vlan) = applied.vlans.get(&m.vlan) else { continue };
            feed.vni_of_vlan.insert(vlan.vlan, m.vni);
            if let Some(rif) = vlan.router_interface {
                feed.vni_of_svi.insert(rif, m.vni);
            }
        }
        feed.local_bridge_ports = applied.ports.values().filter_map(|p| p.bridge_port).collect();
        feed
    }

    pub fn translate(&self, notification: &Notification) -> Option<LocalEvent> {
        match *notification {
            Notification::Fdb { event, entry, bridge_port } => {
                let vni = *self.vni_of_vlan.get(&entry.vlan)?;
                let local = bridge_port.is_some_and(|bp| self.local_bridge_ports.contains(&bp));
                let present = match event {
                    FdbEvent::Learned => local,
                    // Moved here from a VTEP or another port, or away to a VTEP.
                    FdbEvent::Moved { from } => {
                        let was_local = from.is_some_and(|bp| self.local_bridge_ports.contains(&bp));
                        if !local && !was_local {
                            return None;
                        }
                        local
                    }
                    FdbEvent::Aged | FdbEvent::Flushed if local => false,
                    // A sticky MAC of another VTEP sending here: the speaker
                    // counts the refused move (its entry never moved).
                    FdbEvent::MoveRefused { .. } if local => true,
                    _ => return None,
                };
                if event == FdbEvent::Learned && !present {
                    return None;
                }
                Some(LocalEvent::Mac { vni, mac: MacAddr(entry.mac.0), present })
            }
            Notification::NeighborResolved { router_interface, ip, mac } => {
                let vni = *self.vni_of_svi.get(&router_interface)?;
                Some(LocalEvent::Neighbor { vni, ip, mac: Some(MacAddr(mac.0)) })
            }
            Notification::NeighborExpired { router_interface, ip } => {
                let vni = *self.vni_of_svi.get(&router_interface)?;
                Some(LocalEvent::Neighbor { vni, ip, mac: None })
            }
            _ => None,
        }
    }
}

/// How often learned state is handed to the speaker.
const FEED_INTERVAL: Duration = Duration::from_millis(20);

/// Hands what the dataplane learns to the speaker until the subscription
/// ends, through the latest [`LocalFeed`] (commits send new ones).
pub async fn run_feed(subscription: Subscription, feeds: watch::Receiver<Arc<LocalFeed>>, speaker: Arc<BgpSpeaker>) {
    let mut tick = tokio::time::interval(FEED_INTERVAL);
    let mut lost = 0;
    loop {
        tick.tick().await;
        let notifications = subscription.drain();
        let feed = feeds.borrow().clone();
        if subscription.lost() != lost {
            lost = subscription.lost();
            tracing::warn!(lost, "EVPN missed shim notifications (channel full)");
        }
        for event in notifications.iter().filter_map(|n| feed.translate(n)) {
            tracing::debug!(?event, "EVPN local state");
            match event {
                LocalEvent::Mac { vni, mac, present } => speaker.evpn_local_mac(vni, mac, present).await,
                LocalEvent::Neighbor { vni, ip, mac } => speaker.evpn_local_neighbor(vni, ip, mac).await,
            }
        }
    }
}

/// The EVPN shows (`request` is one of them).
pub fn show(bgp: &BgpView, request: &Request) -> Reply {
    match *request {
        Request::ShowBgpEvpn { route_type } => {
            let routes = bgp.runtime.block_on(bgp.speaker.routes(Family::L2vpnEvpn, None));
            Reply::BgpEvpnRoutes(evpn_table(&bgp.config, routes, route_type))
        }
        Request::ShowEvpnVni { .. } => show_state(bgp.runtime.block_on(bgp.speaker.evpn_vni_state()), request),
        _ => show_state(bgp.runtime.block_on(bgp.speaker.evpn_state()), request),
    }
}

/// The EVPN shows other than the BGP table, from the speaker's `state`
/// (the daemon's speaker runs in tasks, the demo's in memory).
pub fn show_state(state: EvpnState, request: &Request) -> Reply {
    match *request {
        Request::ShowEvpnVni { vni } => Reply::EvpnVnis(
            state
                .vnis
                .into_iter()
                .filter(|v| vni.is_none_or(|n| n == v.vni))
                .map(|v| api::EvpnVni {
                    vni: v.vni,
                    kind: v.kind.into(),
                    vrf: v.vrf,
                    rd: v.rd,
                    import_rts: v.import_rts,
                    export_rts: v.export_rts,
                    local_macs: v.local_macs,
                    remote_macs: v.remote_macs,
                    arp_entries: v.arp_entries,
                    duplicate_macs: v.duplicate_macs,
                    remote_vteps: v.remote_vteps,
                })
                .collect(),
        ),
        Request::ShowEvpnMac { vni } => Reply::EvpnMacs(
            state
                .macs
                .into_iter()
                .filter(|m| vni.is_none_or(|n| n == m.vni))
                .map(|m| api::EvpnMac {
                    vni: m.vni,
                    mac: m.mac,
                    kind: m.kind.into(),
                    vtep: m.vtep,
                    sequence: m.sequence,
                    sticky: m.sticky,
                    moves: m.moves,
                    duplicate: m.duplicate,
                    refused_moves: m.refused_moves,
                })
                .collect(),
        ),
        Request::ShowEvpnArpCache { vni } => Reply::EvpnArpCache(
            state
                .arp_cache
                .into_iter()
                .filter(|a| vni.is_none_or(|n| n == a.vni))
                .map(|a| api::EvpnArp { vni: a.vni, ip: a.ip, mac: a.mac, kind: a.kind.into() })
                .collect(),
        ),
        Request::ShowEvpnNextHops { vni } => Reply::EvpnNextHops(
            state
                .next_hops
                .into_iter()
                .filter(|h| vni.is_none_or(|n| n == h.l3vni))
                .map(|h| api::EvpnNextHop {
                    l3vni: h.l3vni,
                    vrf: h.vrf,
                    vtep: h.vtep,
                    router_mac: h.router_mac,
                    routes: h.routes,
                })
                .collect(),
        ),
        _ => Reply::Vrfs(
            state
                .vrfs
                .into_iter()
                .map(|v| api::Vrf {
                    name: v.name,
                    l3vni: v.l3vni,
                    router_mac: v.router_mac,
                    rd: v.rd,
                    routes: v
                        .routes
                        .into_iter()
                        .map(|r| api::VrfRoute { prefix: r.prefix, next_hops: r.next_hops })
                        .collect(),
                })
                .collect(),
        ),
    }
}

/// `show bgp l2vpn evpn [route type N]` of the speaker's EVPN `routes`.
pub fn evpn_table(config: &BgpConfig, routes: Vec<RouteView>, route_type: Option<u8>) -> api::BgpEvpnRoutes {
    let routes = routes
        .into_iter()
        .filter_map(|r| {
            // `RD [T]:...` as EvpnRoute prints it.
            let (rd, rest) = r.prefix.split_once(' ')?;
            let kind: u8 = rest.strip_prefix('[')?.split(']').next()?.parse().ok()?;
            let rd = rd.to_owned();
            route_type.is_none_or(|t| t == kind).then(|| api::BgpEvpnRoute {
                route_type: kind,
                rd,
                paths: r
                    .paths
                    .iter()
                    .map(|p| api::BgpEvpnPath {
                        peer: p.peer,
                        best: p.best,
                        next_hop: p.next_hop,
                        as_path: p.as_path.clone(),
                        origin: p.origin.clone(),
                        local_pref: p.local_pref,
                        ext_communities: p.ext_communities.clone(),
                        label1: p.evpn.as_ref().map(|e| e.label1).filter(|_| kind != 3),
                        label2: p.evpn.as_ref().and_then(|e| e.label2),
                        pmsi_tunnel: p.pmsi_tunnel.clone(),
                    })
                    .collect(),
                prefix: r.prefix.clone(),
            })
        })
        .collect();
    api::BgpEvpnRoutes { router_id: Some(config.router_id), asn: config.asn, routes }
}

#[cfg(test)]
mod tests {
    use sai_shim::{EthernetAddress, FdbEntryKey};

    use super::*;

    #[test]
    fn local_ports_learn_remote_vteps_do_not() {
        let id = ObjectId::from_raw;
        let mut feed = LocalFeed::default();
        feed.vni_of_vlan.insert(id(1), 100);
        feed.vni_of_svi.insert(id(2), 100);
        feed.local_bridge_ports.insert(id(10));
        let (port, vtep) = (Some(id(10)), Some(id(20)));
        let entry = FdbEntryKey { vlan: id(1), mac: EthernetAddress([2, 0, 0, 0, 0, 1]) };
        let fdb = |event, bridge_port| feed.translate(&Notification::Fdb { event, entry, bridge_port });
        let mac = |present| Some(LocalEvent::Mac { vni: 100, mac: MacAddr([2, 0, 0, 0, 0, 1]), present });
        assert_eq!(fdb(FdbEvent::Learned, port), mac(true));
        assert_eq!(fdb(FdbEvent::Learned, vtep), None, "data-plane learning through a tunnel is not ours");
        assert_eq!(fdb(FdbEvent::Moved { from: vtep }, port), mac(true));
        assert_eq!(fdb(FdbEvent::Moved { from: port }, vtep), mac(false));
        assert_eq!(fdb(FdbEvent::Aged, port), mac(false));
        assert_eq!(fdb(FdbEvent::Aged, vtep), None);
        let other = FdbEntryKey { vlan: id(3), ..entry };
        assert_eq!(
            feed.translate(&Notification::Fdb { event: FdbEvent::Learned, entry: other, bridge_port: port }),
            None
        );
        let resolved =
            Notification::NeighborResolved { router_interface: id(2), ip: "10.1.0.5".parse().unwrap(), mac: entry.mac };
        assert!(matches!(feed.translate(&resolved), Some(LocalEvent::Neighbor { vni: 100, mac: Some(_), .. })));
    }
}
