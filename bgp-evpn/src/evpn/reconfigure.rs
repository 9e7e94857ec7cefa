//! A new `evpn:` section applied to the running instance as a diff: the
//! MAC-VRFs and IP-VRFs it drops are torn down (our routes withdrawn, what
//! forwarding holds for them removed), the ones it adds or changes are made
//! (type 3 and type 5 originated, the Loc-RIB's routes imported into them by
//! route target), and the ones it leaves alone keep their state untouched.

use std::collections::BTreeSet;

use super::*;

/// VRFs to tear down and make again although their definition is the
/// same: forwarding made their objects again (a VNI mapped to another VLAN,
/// a VRF's virtual router re-made), so what it held for them is gone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rebuild {
    pub vnis: BTreeSet<u32>,
    pub vrfs: BTreeSet<String>,
}

impl MacVrf {
    fn same_definition(&self, other: &MacVrf) -> bool {
        (self.vni, self.rd, &self.import, &self.export, &self.ip_vrf, &self.static_macs)
            == (other.vni, other.rd, &other.import, &other.export, &other.ip_vrf, &other.static_macs)
    }
}

impl IpVrf {
    /// The same but perhaps for the networks it advertises.
    fn same_routing(&self, other: &IpVrf) -> bool {
        (&self.name, self.l3vni, self.router_mac, self.rd, &self.import, &self.export)
            == (&other.name, other.l3vni, other.router_mac, other.rd, &other.import, &other.export)
    }
}

/// What a torn-down MAC-VRF learned locally, for the one that replaces it.
#[derive(Debug, Default)]
struct LocalState {
    macs: Vec<(MacAddr, Claim)>,
    ips: BTreeMap<IpAddr, MacAddr>,
}

impl Evpn {
    /// Makes `config` the instance's configuration. `best`: each EVPN route
    /// learned from a peer with its best path (the Loc-RIB), imported into
    /// the VRFs that are new or made again. A MAC-VRF made again keeps the
    /// MACs and ARP/ND bindings learned here unless `rebuild` names it (its
    /// VLAN was made again, and what the dataplane had learned with it).
    pub fn reconfigure<'a>(
        &mut self,
        now: u64,
        config: &EvpnConfig,
        rebuild: &Rebuild,
        best: impl IntoIterator<Item = (EvpnRoute, &'a PathAttrs)>,
    ) {
        let mut fresh = Evpn::new(config, self.derive.asn, self.derive.router_id);
        // Our VTEP is in every route we originate and every flood list.
        let all = config.vtep_ip != self.vtep;
        let changed_vrfs: BTreeSet<String> = self
            .ip_vrfs
            .iter()
            .filter(|(name, old)| {
                all || rebuild.vrfs.contains(*name) || fresh.ip_vrfs.get(*name).is_none_or(|new| !old.same_routing(new))
            })
            .map(|(name, _)| name.clone())
            .collect();
        let changed_vnis: BTreeSet<u32> = self
            .mac_vrfs
            .iter()
            .filter(|(vni, old)| {
                all || rebuild.vnis.contains(*vni)
                    || fresh.mac_vrfs.get(*vni).is_none_or(|new| !old.same_definition(new))
                    // MAC+IP routes carry the IP-VRF's L3VNI, RTs and router MAC.
                    || old.ip_vrf.as_ref().is_some_and(|name| changed_vrfs.contains(name))
            })
            .map(|(vni, _)| *vni)
            .collect();

        // Down first: the MAC-VRFs' MAC+IP routes name their IP-VRF.
        let mut kept_local: BTreeMap<u32, LocalState> = BTreeMap::new();
        for &vni in &changed_vnis {
            let local = self.tear_down_mac_vrf(vni);
            if !rebuild.vnis.contains(&vni) {
                kept_local.insert(vni, local);
            }
        }
        for name in &changed_vrfs {
            self.tear_down_ip_vrf(name);
        }
        // IP-VRFs that only advertise other networks stay as they are.
        for (name, new) in &fresh.ip_vrfs {
            let Some(old) = self.ip_vrfs.get(name) else { continue };
            if old.networks != new.networks {
                let before: BTreeSet<IpNetwork> = old.networks.iter().copied().collect();
                let after: BTreeSet<IpNetwork> = new.networks.iter().copied().collect();
                for (route, _) in self.type5_routes(name) {
                    if let EvpnRoute::IpPrefix { prefix, .. } = route
                        && !after.contains(&prefix)
                    {
                        self.actions.push(EvpnAction::Withdraw(route));
                    }
                }
                self.ip_vrfs.get_mut(name).expect("looked up above").networks = new.networks.clone();
                for (route, attrs) in self.type5_routes(name) {
                    if let EvpnRoute::IpPrefix { prefix, .. } = route
                        && !before.contains(&prefix)
                    {
                        self.actions.push(EvpnAction::Originate(route, Box::new(attrs)));
                    }
                }
            }
        }

        self.vtep = config.vtep_ip;
        self.limits = config.duplicate_detection;
        let new_vrfs: BTreeSet<String> =
            fresh.ip_vrfs.keys().filter(|name| !self.ip_vrfs.contains_key(*name)).cloned().collect();
        let new_vnis: BTreeSet<u32> =
            fresh.mac_vrfs.keys().filter(|vni| !self.mac_vrfs.contains_key(vni)).copied().collect();
        for name in &new_vrfs {
            let vrf = fresh.ip_vrfs.remove(name).expect("listed from it");
            self.ip_vrfs.insert(name.clone(), vrf);
            for (route, attrs) in self.type5_routes(name) {
                self.actions.push(EvpnAction::Originate(route, Box::new(attrs)));
            }
        }
        for &vni in &new_vnis {
            let mut vrf = fresh.mac_vrfs.remove(&vni).expect("listed from it");
            if let Some(local) = kept_local.remove(&vni) {
                for (mac, claim) in local.macs {
                    vrf.macs.entry(mac).or_default().local = Some(claim);
                }
                vrf.local_ips = local.ips;
            }
            self.mac_vrfs.insert(vni, vrf);
            self.originate_type3(vni);
            self.claim_static_macs(vni);
        }

        // The Loc-RIB's routes into what is new; the VRFs that stayed have
        // the same route targets, so they import what they imported.
        for (key, attrs) in best {
            let mut targets = self.import_targets(&key, attrs);
            targets.mac_vrfs.retain(|vni| new_vnis.contains(vni));
            targets.ip_vrfs.retain(|name| new_vrfs.contains(name));
            if targets.mac_vrfs.is_empty() && targets.ip_vrfs.is_empty() {
                continue;
            }
            let data = attrs.evpn.unwrap_or_default();
            for &vni in &targets.mac_vrfs {
                match key {
                    EvpnRoute::MacIpAdvertisement { mac, ip, .. } => {
                        self.remote_mac(now, vni, key, mac, ip, Some(attrs))
                    }
                    EvpnRoute::InclusiveMulticast { originator, .. } => {
                        self.remote_vtep(vni, key, originator, Some(attrs))
                    }
                    _ => {}
                }
            }
            for name in &targets.ip_vrfs {
                self.remote_prefix(name, key, &data, Some(attrs));
            }
        }
        // MACs learned here that no remote route contested: advertised again.
        for &vni in &new_vnis {
            let waiting: Vec<MacAddr> = self.mac_vrfs[&vni]
                .macs
                .iter()
                .filter(|(_, s)| s.winner.is_none() && s.local.is_some())
                .map(|(mac, _)| *mac)
                .collect();
            for mac in waiting {
                self.reselect(now, vni, mac);
            }
        }
    }

    /// Removes MAC-VRF `vni`: its type 3 and type 2 routes withdrawn, its
    /// remote MACs, ARP/ND suppression entries and flood list out of
    /// forwarding. Returns what it had learned locally.
    fn tear_down_mac_vrf(&mut self, vni: u32) -> LocalState {
        if let Some((route, _)) = self.type3_route(vni) {
            self.actions.push(EvpnAction::Withdraw(route));
        }
        let Some(vrf) = self.mac_vrfs.remove(&vni) else { return LocalState::default() };
        let mut local = LocalState { macs: Vec::new(), ips: vrf.local_ips };
        for (mac, state) in vrf.macs {
            for route in state.advertised {
                self.actions.push(EvpnAction::Withdraw(route));
            }
            if let Some(vtep) = state.winner.and_then(|c| c.vtep) {
                tracing::debug!(vni, %mac, %vtep, "MAC-VRF torn down: remote MAC removed");
                self.actions.push(EvpnAction::Fib(FibChange::RemoteMac { vni, mac, vtep: None, sticky: false }));
            }
            // Configured MACs are claimed again from the new definition.
            if let Some(claim) = state.local.filter(|_| !vrf.static_macs.contains_key(&mac)) {
                local.macs.push((mac, claim));
            }
        }
        for ip in vrf.remote_ips.into_keys() {
            self.actions.push(EvpnAction::Fib(FibChange::Neighbor { vni, ip, mac: None }));
        }
        for vtep in vrf.flood.into_keys() {
            self.actions.push(EvpnAction::Fib(FibChange::FloodVtep { vni, vtep, present: false }));
        }
        local
    }

    /// Removes IP-VRF `name`: its type 5 routes withdrawn, its routes out
    /// of forwarding.
    fn tear_down_ip_vrf(&mut self, name: &str) {
        for (route, _) in self.type5_routes(name) {
            self.actions.push(EvpnAction::Withdraw(route));
        }
        let Some(vrf) = self.ip_vrfs.remove(name) else { return };
        for prefix in vrf.routes.into_keys() {
            let change = FibChange::Route { vrf: Some(name.to_owned()), prefix, next_hops: Vec::new() };
            self.actions.push(EvpnAction::Fib(change));
        }
    }
}
