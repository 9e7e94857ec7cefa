//! The EVPN instance's tables as `show evpn ...` presents them (FRR's
//! `show evpn vni`, `show evpn mac vni`, `show evpn arp-cache vni`,
//! `show evpn next-hops`, `show vrf`).

use std::net::IpAddr;

use serde::Serialize;

use super::Evpn;

#[derive(Debug, Clone, Default, Serialize)]
pub struct EvpnState {
    pub vtep: Option<IpAddr>,
    pub vnis: Vec<VniView>,
    pub macs: Vec<MacView>,
    pub arp_cache: Vec<ArpView>,
    pub vrfs: Vec<VrfView>,
    /// The remote VTEPs and router MACs IP-VRF routes go through (FRR's
    /// `show evpn next-hops vni all`).
    pub next_hops: Vec<NextHopView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct VniView {
    pub vni: u32,
    /// `L2` (a MAC-VRF) or `L3` (an IP-VRF's L3VNI).
    pub kind: &'static str,
    pub rd: String,
    pub import_rts: Vec<String>,
    pub export_rts: Vec<String>,
    pub vrf: Option<String>,
    pub local_macs: usize,
    pub remote_macs: usize,
    pub arp_entries: usize,
    /// MACs found moving too often and frozen (RFC 7432 §15.1).
    pub duplicate_macs: usize,
    /// The flood list (type 3 routes), or for an L3VNI the VTEPs routes go to.
    pub remote_vteps: Vec<IpAddr>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MacView {
    pub vni: u32,
    pub mac: String,
    /// `local` or `remote`.
    pub kind: &'static str,
    pub vtep: Option<IpAddr>,
    pub sequence: u32,
    pub sticky: bool,
    /// Moves since first seen (RFC 7432 §15).
    pub moves: u32,
    /// Frozen by duplicate detection.
    pub duplicate: bool,
    /// Advertisements or local learns from elsewhere a sticky MAC refused.
    pub refused_moves: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct ArpView {
    pub vni: u32,
    pub ip: IpAddr,
    pub mac: String,
    pub kind: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct VrfView {
    pub name: String,
    pub l3vni: u32,
    pub router_mac: String,
    pub rd: String,
    pub import_rts: Vec<String>,
    pub export_rts: Vec<String>,
    pub routes: Vec<VrfRouteView>,
}

/// One remote VTEP of an L3VNI: its router MAC and the VRF routes through it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NextHopView {
    pub l3vni: u32,
    pub vrf: String,
    pub vtep: IpAddr,
    pub router_mac: String,
    /// Prefixes of the VRF (host routes and type 5 prefixes) with this next hop.
    pub routes: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct VrfRouteView {
    pub prefix: String,
    pub next_hops: Vec<String>,
}

impl Evpn {
    /// Every table (`now` ages nothing yet; kept for duplicate-detection windows).
    pub fn state(&self, now: u64) -> EvpnState {
        EvpnState {
            vtep: Some(self.vtep),
            vnis: self.vnis(),
            macs: self.macs(now, None),
            arp_cache: self.arp_cache(None),
            vrfs: self.vrfs(),
            next_hops: self.next_hops(),
        }
    }

    /// The VNIs alone (`show evpn vni`, the metrics endpoint): counts, no
    /// table of MACs or bindings built (at 50,000 MACs that took the
    /// speaker's task longer than the routes themselves when scraped often).
    pub fn vni_state(&self) -> EvpnState {
        EvpnState { vtep: Some(self.vtep), vnis: self.vnis(), ..Default::default() }
    }

    fn vnis(&self) -> Vec<VniView> {
        let mut vnis: Vec<VniView> = self
            .mac_vrfs
            .values()
            .map(|v| {
                let (local, remote) = v.macs.values().fold((0, 0), |(l, r), m| match m.winner {
                    Some(c) if c.vtep.is_none() => (l + 1, r),
                    Some(_) => (l, r + 1),
                    None => (l, r),
                });
                VniView {
                    vni: v.vni,
                    kind: "L2",
                    rd: v.rd.to_string(),
                    import_rts: v.import.iter().map(|i| i.rt.to_string()).collect(),
                    export_rts: v.export.iter().map(|rt| rt.to_string()).collect(),
                    vrf: v.ip_vrf.clone(),
                    local_macs: local,
                    remote_macs: remote,
                    arp_entries: v.local_ips.len() + v.remote_ips.len(),
                    duplicate_macs: v.macs.values().filter(|m| m.moves.frozen()).count(),
                    remote_vteps: v.flood.keys().copied().collect(),
                }
            })
            .collect();
        vnis.extend(self.ip_vrfs.values().map(|v| {
            let mut vteps: Vec<IpAddr> = v
                .routes
                .values()
                .flat_map(|r| r.values())
                .filter_map(|h| match h {
                    crate::fib::NextHop::Vtep { vtep, .. } => Some(*vtep),
                    crate::fib::NextHop::Ip(_) => None,
                })
                .collect();
            vteps.sort();
            vteps.dedup();
            VniView {
                vni: v.l3vni,
                kind: "L3",
                rd: v.rd.to_string(),
                import_rts: v.import.iter().map(|i| i.rt.to_string()).collect(),
                export_rts: v.export.iter().map(|rt| rt.to_string()).collect(),
                vrf: Some(v.name.clone()),
                local_macs: 0,
                remote_macs: 0,
                arp_entries: 0,
                duplicate_macs: 0,
                remote_vteps: vteps,
            }
        }));
        vnis.sort_by_key(|v| v.vni);
        vnis
    }

    /// Per L3VNI, each remote VTEP with its router MAC and how many of the
    /// VRF's prefixes go through it.
    pub fn next_hops(&self) -> Vec<NextHopView> {
        let mut out = Vec::new();
        for v in self.ip_vrfs.values() {
            let mut count: std::collections::BTreeMap<(IpAddr, crate::packet::evpn::MacAddr), usize> =
                std::collections::BTreeMap::new();
            for prefix in v.routes.keys() {
                for hop in v.next_hops(prefix) {
                    if let crate::fib::NextHop::Vtep { vtep, router_mac, .. } = hop {
                        *count.entry((vtep, router_mac)).or_default() += 1;
                    }
                }
            }
            out.extend(count.into_iter().map(|((vtep, mac), routes)| NextHopView {
                l3vni: v.l3vni,
                vrf: v.name.clone(),
                vtep,
                router_mac: mac.to_string(),
                routes,
            }));
        }
        out.sort_by_key(|h| (h.l3vni, h.vtep));
        out
    }

    /// The MACs of `vni` (or all), local and remote, sorted.
    pub fn macs(&self, _now: u64, vni: Option<u32>) -> Vec<MacView> {
        let mut out: Vec<MacView> = self
            .mac_vrfs
            .values()
            .filter(|v| vni.is_none_or(|n| n == v.vni))
            .flat_map(|v| {
                v.macs.iter().filter_map(move |(mac, m)| {
                    let c = m.winner?;
                    Some(MacView {
                        vni: v.vni,
                        mac: mac.to_string(),
                        kind: if c.vtep.is_none() { "local" } else { "remote" },
                        vtep: c.vtep,
                        sequence: c.sequence,
                        sticky: c.sticky,
                        moves: m.moves.total(),
                        duplicate: m.moves.frozen(),
                        refused_moves: m.refused_moves,
                    })
                })
            })
            .collect();
        out.sort_by(|a, b| (a.vni, &a.mac).cmp(&(b.vni, &b.mac)));
        out
    }

    /// ARP/ND bindings of `vni` (or all): learned here, and from remote
    /// MAC+IP routes (the suppression table).
    pub fn arp_cache(&self, vni: Option<u32>) -> Vec<ArpView> {
        self.mac_vrfs
            .values()
            .filter(|v| vni.is_none_or(|n| n == v.vni))
            .flat_map(|v| {
                let local = v.local_ips.iter().map(|(ip, mac)| (*ip, *mac, "local"));
                let remote = v.installed_ips().map(|(ip, mac)| (ip, mac, "remote"));
                local.chain(remote).map(|(ip, mac, kind)| ArpView { vni: v.vni, ip, mac: mac.to_string(), kind })
            })
            .collect()
    }

    /// The IP-VRFs with the routes imported into them.
    pub fn vrfs(&self) -> Vec<VrfView> {
        self.ip_vrfs
            .values()
            .map(|v| VrfView {
                name: v.name.clone(),
                l3vni: v.l3vni,
                router_mac: v.router_mac.to_string(),
                rd: v.rd.to_string(),
                import_rts: v.import.iter().map(|i| i.rt.to_string()).collect(),
                export_rts: v.export.iter().map(|rt| rt.to_string()).collect(),
                routes: v
                    .routes
                    .keys()
                    .map(|prefix| VrfRouteView {
                        prefix: prefix.to_string(),
                        next_hops: v.next_hops(prefix).iter().map(|h| h.to_string()).collect(),
                    })
                    .collect(),
            })
            .collect()
    }
}
