//! Where selected routes go: [`RouteSink`], with a table sink for `show ip
//! route` and tests, and the shim's: [`QueueSink`] queues each change and a
//! [`ShimProgrammer`] task applies them to the SAI-like shim (route entries,
//! next hops, next-hop groups).
//!
//! The shim sits behind the forwarding thread's lock, so the speaker never
//! takes it: the programmer applies what is queued in batches, one lock per
//! batch, and resolves next hops against the switch's connected subnets (a
//! handful) rather than scanning the shim's route entries. EVPN's layer-2
//! state goes into the shim through [`overlay::Overlay`].

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ipnetwork::IpNetwork;
use sai_shim::{
    Backend, NextHopAttr, NextHopGroupMemberAttr, ObjectId, PacketAction, RouteEntryAttr, RouteEntryKey, Sai,
};
use tokio::sync::mpsc;

use crate::fib::{FibChange, NextHop};
use crate::packet::Nlri;
use crate::packet::evpn::MacAddr;

pub mod ip_vrf;
pub mod overlay;

/// Receives forwarding changes, one installer per kind of state.
pub trait RouteSink: Send + 'static {
    fn apply(&mut self, change: FibChange);
}

/// Everything the speaker asked forwarding to hold, as tables (`show`, tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Installed {
    /// IP routes per VRF (`None`: the default VRF).
    pub routes: BTreeMap<(Option<String>, IpNetwork), Vec<NextHop>>,
    /// Remote MACs per VNI and the VTEP behind which each is.
    pub macs: BTreeMap<(u32, MacAddr), IpAddr>,
    /// ARP/ND suppression entries per VNI.
    pub neighbors: BTreeMap<(u32, IpAddr), MacAddr>,
    /// Flood lists per VNI.
    pub flood: BTreeMap<u32, BTreeSet<IpAddr>>,
}

impl Installed {
    pub fn apply(&mut self, change: FibChange) {
        match change {
            FibChange::Route { vrf, prefix, next_hops } if next_hops.is_empty() => {
                self.routes.remove(&(vrf, prefix));
            }
            FibChange::Route { vrf, prefix, next_hops } => {
                self.routes.insert((vrf, prefix), next_hops);
            }
            FibChange::RemoteMac { vni, mac, vtep: Some(vtep), .. } => {
                self.macs.insert((vni, mac), vtep);
            }
            FibChange::RemoteMac { vni, mac, vtep: None, .. } => {
                self.macs.remove(&(vni, mac));
            }
            FibChange::Neighbor { vni, ip, mac: Some(mac) } => {
                self.neighbors.insert((vni, ip), mac);
            }
            FibChange::Neighbor { vni, ip, mac: None } => {
                self.neighbors.remove(&(vni, ip));
            }
            FibChange::FloodVtep { vni, vtep, present: true } => {
                self.flood.entry(vni).or_default().insert(vtep);
            }
            FibChange::FloodVtep { vni, vtep, present: false } => {
                if let Some(list) = self.flood.get_mut(&vni) {
                    list.remove(&vtep);
                    if list.is_empty() {
                        self.flood.remove(&vni);
                    }
                }
            }
            FibChange::LinkLocalPeer { .. } => {}
        }
    }

    /// The underlay next hops of the default VRF's route for `nlri`.
    pub fn ip_route(&self, nlri: &Nlri) -> Option<Vec<IpAddr>> {
        let hops = self.routes.get(&(None, nlri.ip_network()?))?;
        Some(hops.iter().filter_map(NextHop::ip).collect())
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty() && self.macs.is_empty() && self.neighbors.is_empty() && self.flood.is_empty()
    }

    /// The default VRF's routes through plain IP next hops.
    pub fn ip_routes(&self) -> impl Iterator<Item = (IpNetwork, Vec<IpAddr>)> + '_ {
        self.routes
            .iter()
            .filter(|((vrf, _), _)| vrf.is_none())
            .map(|((_, prefix), hops)| (*prefix, hops.iter().filter_map(NextHop::ip).collect()))
    }
}

/// Keeps the installed state in shared tables (readable while the speaker runs).
#[derive(Debug, Clone, Default)]
pub struct TableSink(pub Arc<Mutex<Installed>>);

impl RouteSink for TableSink {
    fn apply(&mut self, change: FibChange) {
        if let Ok(mut t) = self.0.lock() {
            t.apply(change);
        }
    }
}

/// Sends changes to several sinks (the shim and a table for `show`).
pub struct Tee(pub Vec<Box<dyn RouteSink>>);

impl RouteSink for Tee {
    fn apply(&mut self, change: FibChange) {
        if let Some((last, rest)) = self.0.split_last_mut() {
            for s in rest {
                s.apply(change.clone());
            }
            last.apply(change);
        }
    }
}

pub fn to_network(nlri: &Nlri) -> Option<IpNetwork> {
    nlri.ip_network()
}

/// At most this many route changes per hold of the shim's lock.
const BATCH: usize = 512;

/// The speaker's side of the shim: queues changes for [`ShimProgrammer::run`].
pub struct QueueSink(pub mpsc::UnboundedSender<FibChange>);

impl QueueSink {
    /// A sink and the queue a [`ShimProgrammer`] reads.
    pub fn new() -> (QueueSink, mpsc::UnboundedReceiver<FibChange>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (QueueSink(tx), rx)
    }
}

impl RouteSink for QueueSink {
    fn apply(&mut self, change: FibChange) {
        let _ = self.0.send(change);
    }
}

/// Routes new to the shim, resolved and waiting for one bulk create: each
/// with its usable next hops, its key and the next-hop object it points at.
#[derive(Default)]
struct NewRoutes {
    routes: Vec<(Nlri, Vec<IpAddr>, RouteEntryKey, ObjectId)>,
    prefixes: HashSet<Nlri>,
}

/// A next-hop group shared by every route with the same ECMP set.
struct Group {
    id: ObjectId,
    /// Members with the next hop each holds.
    members: Vec<(ObjectId, IpAddr)>,
    routes: usize,
}

/// Work run on a running [`ShimProgrammer`] and the shim, in order with
/// the changes ([`ShimProgrammer::run_with_control`]).
pub type ControlJob<B> = Box<dyn FnOnce(&mut ShimProgrammer<B>, &mut Sai<B>) + Send>;

/// The shim objects EVPN installs into: the VXLAN tunnel (none: the switch
/// is no VTEP), each EVPN VNI's VLAN, the remote VTEPs the config made
/// itself (static flood lists), each VRF's virtual router.
#[derive(Debug, Clone, Default)]
pub struct EvpnBindings {
    pub tunnel: Option<ObjectId>,
    pub vlans: HashMap<u32, ObjectId>,
    pub configured_vteps: Vec<(std::net::Ipv4Addr, (ObjectId, ObjectId))>,
    pub virtual_routers: HashMap<String, ObjectId>,
}

/// Programs BGP's routes into the shim: one next-hop object per next hop
/// (on the router interface whose connected subnet holds it), one next-hop
/// group per distinct ECMP set, one route entry per prefix; objects are
/// shared, reference-counted and removed with their last route.
pub struct ShimProgrammer<B: Backend> {
    /// Connected subnets (with the switch's own address on each) and their
    /// router interfaces, longest first.
    subnets: Vec<(IpNetwork, ObjectId)>,
    /// Host interface name -> router interface, for unnumbered neighbours.
    interfaces: HashMap<String, ObjectId>,
    /// Unnumbered neighbours' link-local addresses and their router
    /// interfaces (from [`FibChange::LinkLocalPeer`]).
    link_local: HashMap<std::net::Ipv6Addr, ObjectId>,
    next_hops: HashMap<IpAddr, (ObjectId, usize)>,
    groups: HashMap<Vec<IpAddr>, Group>,
    routes: HashMap<Nlri, Vec<IpAddr>>,
    /// Changes the shim refused or could not resolve (`show bgp summary`).
    errors: Arc<AtomicU64>,
    /// Where EVPN's remote MACs and flood lists go, when the switch is a VTEP.
    overlay: Option<overlay::Overlay>,
    /// Where IP-VRF routes go, when the switch has VRFs with L3VNIs.
    ip_vrfs: Option<ip_vrf::IpVrfs>,
    _backend: std::marker::PhantomData<fn(&mut Sai<B>)>,
}

impl<B: Backend> ShimProgrammer<B> {
    /// `subnets`: each connected subnet as the switch's address with its
    /// prefix length (`10.1.1.0/31`), and its router interface.
    pub fn new(mut subnets: Vec<(IpNetwork, ObjectId)>) -> Self {
        subnets.sort_by_key(|(net, _)| std::cmp::Reverse(net.prefix()));
        ShimProgrammer {
            subnets,
            interfaces: HashMap::new(),
            link_local: HashMap::new(),
            next_hops: HashMap::new(),
            groups: HashMap::new(),
            routes: HashMap::new(),
            errors: Arc::new(AtomicU64::new(0)),
            overlay: None,
            ip_vrfs: None,
            _backend: std::marker::PhantomData,
        }
    }

    /// Installs EVPN's remote MACs and flood lists through `overlay`.
    pub fn with_overlay(mut self, overlay: overlay::Overlay) -> Self {
        self.overlay = Some(overlay);
        self
    }

    /// Installs IP-VRF routes (symmetric IRB) through `ip_vrfs`.
    pub fn with_ip_vrfs(mut self, ip_vrfs: ip_vrf::IpVrfs) -> Self {
        self.ip_vrfs = Some(ip_vrfs);
        self
    }

    /// The router interface behind each host interface name (`sw-eth1`),
    /// where unnumbered neighbours are found.
    pub fn with_interfaces(mut self, interfaces: HashMap<String, ObjectId>) -> Self {
        self.interfaces = interfaces;
        self
    }

    /// The count of changes the shim refused or could not resolve, shared.
    pub fn errors(&self) -> Arc<AtomicU64> {
        self.errors.clone()
    }

    /// The router interface to reach `ip` through; none for the switch's
    /// own address.
    fn resolve(&self, ip: IpAddr) -> Option<ObjectId> {
        if let IpAddr::V6(v6) = ip
            && let Some(rif) = self.link_local.get(&v6)
        {
            return Some(*rif);
        }
        self.subnets.iter().find(|(net, _)| net.contains(ip) && net.ip() != ip).map(|(_, rif)| *rif)
    }

    fn acquire_hop(&mut self, sai: &mut Sai<B>, ip: IpAddr) -> Option<ObjectId> {
        if let Some((id, refs)) = self.next_hops.get_mut(&ip) {
            *refs += 1;
            return Some(*id);
        }
        let rif = self.resolve(ip)?;
        let id = sai.create_next_hop(&[NextHopAttr::Ip(ip), NextHopAttr::RouterInterfaceId(rif)]).ok()?;
        self.next_hops.insert(ip, (id, 1));
        Some(id)
    }

    fn release_hop(&mut self, sai: &mut Sai<B>, ip: IpAddr) {
        if let Some((id, refs)) = self.next_hops.get_mut(&ip) {
            *refs -= 1;
            if *refs == 0 {
                let id = *id;
                self.next_hops.remove(&ip);
                let _ = sai.remove(id);
            }
        }
    }

    /// The object a route through `hops` (resolvable, sorted) points at.
    fn acquire(&mut self, sai: &mut Sai<B>, hops: &[IpAddr]) -> Option<ObjectId> {
        if let [one] = hops {
            return self.acquire_hop(sai, *one);
        }
        if let Some(group) = self.groups.get_mut(hops) {
            group.routes += 1;
            return Some(group.id);
        }
        let group = sai.create_next_hop_group().ok()?;
        let mut members = Vec::new();
        for &ip in hops {
            if let Some(nh) = self.acquire_hop(sai, ip) {
                match sai.create_next_hop_group_member(&[
                    NextHopGroupMemberAttr::NextHopGroupId(group),
                    NextHopGroupMemberAttr::NextHopId(nh),
                ]) {
                    Ok(member) => members.push((member, ip)),
                    Err(_) => self.release_hop(sai, ip),
                }
            }
        }
        if members.is_empty() {
            let _ = sai.remove(group);
            return None;
        }
        self.groups.insert(hops.to_vec(), Group { id: group, members, routes: 1 });
        Some(group)
    }

    fn release(&mut self, sai: &mut Sai<B>, hops: &[IpAddr]) {
        if let [one] = hops {
            return self.release_hop(sai, *one);
        }
        let Some(group) = self.groups.get_mut(hops) else { return };
        group.routes -= 1;
        if group.routes > 0 {
            return;
        }
        if let Some(group) = self.groups.remove(hops) {
            for (member, ip) in group.members {
                let _ = sai.remove(member);
                self.release_hop(sai, ip);
            }
            let _ = sai.remove(group.id);
        }
    }

    /// The next hops a route can use: those in a connected subnet, sorted,
    /// each once (the key of a shared group).
    fn usable_hops(&self, next_hops: &[IpAddr]) -> Vec<IpAddr> {
        let mut hops: Vec<IpAddr> = next_hops.iter().copied().filter(|ip| self.resolve(*ip).is_some()).collect();
        hops.sort();
        hops.dedup();
        hops
    }

    pub fn install(&mut self, sai: &mut Sai<B>, nlri: Nlri, next_hops: &[IpAddr]) {
        let hops = self.usable_hops(next_hops);
        if hops.is_empty() {
            tracing::debug!(%nlri, ?next_hops, "no next hop in a connected subnet; not installed");
            self.errors.fetch_add(1, Ordering::Relaxed);
            return self.remove(sai, nlri);
        }
        if self.routes.get(&nlri) == Some(&hops) {
            return;
        }
        let Some(destination) = to_network(&nlri) else { return };
        let key = RouteEntryKey { virtual_router: sai.default_virtual_router(), destination };
        let Some(target) = self.acquire(sai, &hops) else {
            // Forwarding through the old next hops would go where BGP no
            // longer points: the route goes until a change that can be made.
            tracing::debug!(%nlri, ?hops, "next hops not created; route removed");
            self.errors.fetch_add(1, Ordering::Relaxed);
            return self.remove(sai, nlri);
        };
        let result = if self.routes.contains_key(&nlri) {
            sai.set_route_entry_attribute(key, RouteEntryAttr::NextHopId(Some(target)))
        } else {
            sai.create_route_entry(
                key,
                &[RouteEntryAttr::PacketAction(PacketAction::Forward), RouteEntryAttr::NextHopId(Some(target))],
            )
        };
        if let Err(error) = result {
            // A connected, local or static route of the same prefix wins.
            tracing::debug!(%nlri, %error, "route not installed");
            self.errors.fetch_add(1, Ordering::Relaxed);
            self.release(sai, &hops);
            return;
        }
        if let Some(old) = self.routes.insert(nlri, hops) {
            self.release(sai, &old);
        }
    }

    pub fn remove(&mut self, sai: &mut Sai<B>, nlri: Nlri) {
        let Some(old) = self.routes.remove(&nlri) else { return };
        if let Some(destination) = to_network(&nlri) {
            let _ = sai.remove_route_entry(RouteEntryKey { virtual_router: sai.default_virtual_router(), destination });
        }
        self.release(sai, &old);
    }

    /// Applies one change. The default VRF's IP routes go into route
    /// entries, next hops and ECMP groups; remote MACs and flood lists into
    /// the overlay's tunnel objects; ARP/ND suppression bindings into the
    /// VNI's VLAN; routes in IP-VRFs into their virtual routers, through
    /// tunnel next hops.
    pub fn apply(&mut self, sai: &mut Sai<B>, change: FibChange) {
        let result = match change {
            FibChange::Route { vrf: None, prefix, next_hops } => {
                let Some(nlri) = Nlri::from_network(prefix) else { return };
                let hops: Vec<IpAddr> = next_hops.iter().filter_map(NextHop::ip).collect();
                if next_hops.is_empty() {
                    self.remove(sai, nlri);
                } else {
                    // Next hops across the overlay cannot be resolved in the
                    // underlay; `install` counts a route left with none.
                    self.install(sai, nlri, &hops);
                }
                Ok(())
            }
            FibChange::LinkLocalPeer { interface, peer } => match self.interfaces.get(&interface) {
                Some(rif) => {
                    self.link_local.insert(peer, *rif);
                    Ok(())
                }
                None => Err(format!("unnumbered neighbour {peer} on {interface}: no router interface there")),
            },
            FibChange::FloodVtep { vni, vtep, present } => match self.overlay.as_mut() {
                Some(o) => o.flood(sai, vni, vtep, present),
                None => Err("not a VTEP: no VXLAN tunnel".to_string()),
            },
            FibChange::RemoteMac { vni, mac, vtep, sticky } => match self.overlay.as_mut() {
                Some(o) => o.mac(sai, vni, mac, vtep, sticky),
                None => Err("not a VTEP: no VXLAN tunnel".to_string()),
            },
            FibChange::Neighbor { vni, ip, mac } => match self.overlay.as_mut() {
                Some(o) => o.suppression(sai, vni, ip, mac),
                None => Err("not a VTEP: no VXLAN tunnel".to_string()),
            },
            FibChange::Route { vrf: Some(vrf), prefix, next_hops } => match self.ip_vrfs.as_mut() {
                Some(v) => v.route(sai, &vrf, prefix, &next_hops),
                None => Err(format!("route {prefix} in VRF {vrf}: the switch has no VRF with an L3VNI")),
            },
        };
        if let Err(error) = result {
            tracing::warn!(%error, "EVPN forwarding change not installed");
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Applies changes in order. Routes new to the shim (nearly all of a
    /// table load) are gathered and created with one bulk call, which the
    /// kernel backend turns into one netlink batch; any other change first
    /// creates what is gathered, so the shim sees the changes in order.
    pub fn apply_batch(&mut self, sai: &mut Sai<B>, changes: impl IntoIterator<Item = FibChange>) {
        let mut gathered = NewRoutes::default();
        for change in changes {
            if let FibChange::Route { vrf: None, prefix, next_hops } = &change
                && !next_hops.is_empty()
                && let Some(nlri) = Nlri::from_network(*prefix)
                && !self.routes.contains_key(&nlri)
                && !gathered.prefixes.contains(&nlri)
            {
                let hops: Vec<IpAddr> = next_hops.iter().filter_map(NextHop::ip).collect();
                self.gather(sai, &mut gathered, nlri, &hops);
                continue;
            }
            self.create_gathered(sai, &mut gathered);
            self.apply(sai, change);
        }
        self.create_gathered(sai, &mut gathered);
    }

    /// Resolves a route new to the shim and holds its next-hop object for
    /// [`Self::create_gathered`]; counts it when it cannot be installed (as
    /// [`Self::install`] does).
    fn gather(&mut self, sai: &mut Sai<B>, gathered: &mut NewRoutes, nlri: Nlri, next_hops: &[IpAddr]) {
        let hops = self.usable_hops(next_hops);
        let Some(destination) = to_network(&nlri) else { return };
        if hops.is_empty() {
            tracing::debug!(%nlri, ?next_hops, "no next hop in a connected subnet; not installed");
            self.errors.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let Some(target) = self.acquire(sai, &hops) else {
            tracing::debug!(%nlri, ?hops, "next hops not created; route not installed");
            self.errors.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let key = RouteEntryKey { virtual_router: sai.default_virtual_router(), destination };
        gathered.prefixes.insert(nlri);
        gathered.routes.push((nlri, hops, key, target));
    }

    /// Creates the gathered routes with one bulk call; a route the shim
    /// refuses (a connected, local or static route of the same prefix
    /// wins) is counted and its next hops released.
    fn create_gathered(&mut self, sai: &mut Sai<B>, gathered: &mut NewRoutes) {
        if gathered.routes.is_empty() {
            return;
        }
        let attributes: Vec<[RouteEntryAttr; 2]> = gathered
            .routes
            .iter()
            .map(|(.., target)| {
                [RouteEntryAttr::PacketAction(PacketAction::Forward), RouteEntryAttr::NextHopId(Some(*target))]
            })
            .collect();
        let entries: Vec<(RouteEntryKey, &[RouteEntryAttr])> =
            gathered.routes.iter().zip(&attributes).map(|((_, _, key, _), attrs)| (*key, &attrs[..])).collect();
        let results = sai.create_route_entries(&entries);
        gathered.prefixes.clear();
        for ((nlri, hops, ..), result) in gathered.routes.drain(..).zip(results) {
            match result {
                Ok(()) => {
                    self.routes.insert(nlri, hops);
                }
                Err(error) => {
                    tracing::debug!(%nlri, %error, "route not installed");
                    self.errors.fetch_add(1, Ordering::Relaxed);
                    self.release(sai, &hops);
                }
            }
        }
    }

    /// The switch's config is about to remove or make again the objects of
    /// these VNIs (VLAN, VNI map) and VRFs (virtual router), or the tunnel
    /// (`all`): what EVPN installed in them is removed now, so they can go.
    /// The speaker installs it again once it is told
    /// (`Speaker::evpn_reconfigure` with them to rebuild).
    pub fn detach(&mut self, sai: &mut Sai<B>, vnis: &[u32], vrfs: &[String]) {
        if let Some(overlay) = self.overlay.as_mut() {
            for &vni in vnis {
                overlay.detach(sai, vni);
            }
        }
        if let Some(ip_vrfs) = self.ip_vrfs.as_mut() {
            for vrf in vrfs {
                ip_vrfs.detach(sai, vrf);
            }
        }
    }

    /// The speaker stopped (`bgp:` removed by a commit): every route it
    /// installed goes, with its next hops and groups, and what EVPN
    /// installed in the VNIs and VRFs.
    pub fn clear(&mut self, sai: &mut Sai<B>) {
        let routes: Vec<Nlri> = self.routes.keys().copied().collect();
        for nlri in routes {
            self.remove(sai, nlri);
        }
        let vnis: Vec<u32> = self.overlay.as_ref().map(|o| o.vlans().keys().copied().collect()).unwrap_or_default();
        let vrfs: Vec<String> =
            self.ip_vrfs.as_ref().map(|v| v.vrf_names().map(str::to_owned).collect()).unwrap_or_default();
        self.detach(sai, &vnis, &vrfs);
        self.link_local.clear();
    }

    /// The objects EVPN installs into from now on, after the switch's
    /// config changed (what changed under it was [`Self::detach`]ed).
    pub fn attach(&mut self, bindings: EvpnBindings) {
        let Some(tunnel) = bindings.tunnel else {
            self.overlay = None;
            self.ip_vrfs = None;
            return;
        };
        match self.overlay.as_mut() {
            Some(overlay) if overlay.tunnel() == tunnel => overlay.set_vlans(bindings.vlans),
            _ => self.overlay = Some(overlay::Overlay::new(tunnel, bindings.vlans, bindings.configured_vteps)),
        }
        match self.ip_vrfs.as_mut() {
            Some(ip_vrfs) if ip_vrfs.tunnel() == tunnel => ip_vrfs.set_virtual_routers(bindings.virtual_routers),
            _ => self.ip_vrfs = Some(ip_vrf::IpVrfs::new(tunnel, bindings.virtual_routers)),
        }
    }

    /// Applies queued changes until every sender is gone, a batch per lock.
    pub async fn run(self, sai: Arc<Mutex<Sai<B>>>, changes: mpsc::UnboundedReceiver<FibChange>) {
        let (_, no_control) = mpsc::unbounded_channel();
        self.run_with_control(sai, changes, no_control).await;
    }

    /// [`Self::run`], also running each job sent on `control` on the
    /// programmer and the shim (under its lock), after the changes queued
    /// before it: config commits detach and attach through it. Runs until
    /// both channels have closed: a commit that stops the speaker (its
    /// change queue closing) still detaches through `control` afterwards.
    pub async fn run_with_control(
        mut self,
        sai: Arc<Mutex<Sai<B>>>,
        mut changes: mpsc::UnboundedReceiver<FibChange>,
        mut control: mpsc::UnboundedReceiver<ControlJob<B>>,
    ) {
        let mut batch = Vec::with_capacity(BATCH);
        let (mut changes_open, mut control_open) = (true, true);
        while changes_open || control_open {
            tokio::select! {
                received = changes.recv_many(&mut batch, BATCH), if changes_open => {
                    if received == 0 {
                        changes_open = false;
                        continue;
                    }
                    let mut shim = sai.lock().unwrap_or_else(|e| e.into_inner());
                    self.apply_batch(&mut shim, batch.drain(..));
                }
                job = control.recv(), if control_open => {
                    let Some(job) = job else {
                        control_open = false;
                        continue;
                    };
                    while let Ok(change) = changes.try_recv() {
                        batch.push(change);
                    }
                    let mut shim = sai.lock().unwrap_or_else(|e| e.into_inner());
                    self.apply_batch(&mut shim, batch.drain(..));
                    job(&mut self, &mut shim);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use dataplane::pipeline::SwitchConfig;
    use sai_shim::backend::soft::SoftBackend;
    use sai_shim::{ObjectType, PortAttr, RouterInterfaceAttr, RouterInterfaceType};

    use super::*;

    type Shim = Sai<SoftBackend>;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn nlri(s: &str) -> Nlri {
        s.parse().unwrap()
    }

    /// A switch with routed ports at 10.1.0.1/30, 10.2.0.1/30 and
    /// 10.3.0.1/30 (connected routes to their router interfaces), and a
    /// programmer that knows those subnets.
    fn shim() -> (Shim, ShimProgrammer<SoftBackend>) {
        let mut sai = Sai::new(SoftBackend::new(SwitchConfig::default()), &[]).unwrap();
        let vr = sai.default_virtual_router();
        let mut subnets = Vec::new();
        for (name, address) in [("eth1", "10.1.0.1/30"), ("eth2", "10.2.0.1/30"), ("eth3", "10.3.0.1/30")] {
            let port = sai.create_port(&[PortAttr::Name(name.into()), PortAttr::AdminState(true)]).unwrap();
            let rif = sai
                .create_router_interface(&[
                    RouterInterfaceAttr::VirtualRouterId(vr),
                    RouterInterfaceAttr::Type(RouterInterfaceType::Port(port)),
                ])
                .unwrap();
            let address: IpNetwork = address.parse().unwrap();
            let subnet = IpNetwork::new(address.network(), address.prefix()).unwrap();
            let key = RouteEntryKey { virtual_router: vr, destination: subnet };
            sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(rif))]).unwrap();
            subnets.push((address, rif));
        }
        (sai, ShimProgrammer::new(subnets))
    }

    /// `bgp:` removed: what the speaker installed goes whole, next hops,
    /// groups, remote MACs and VTEPs with it; the connected routes stay.
    #[test]
    fn clear_removes_everything_the_speaker_installed() {
        use sai_shim::{TunnelAttr, VlanAttr};
        let (mut sai, p) = shim();
        let connected = sai.store().route_entries().count();
        let tunnel = sai.create_tunnel(&[TunnelAttr::EncapSrcIp("10.1.0.1".parse().unwrap())]).unwrap();
        let vlan = sai.create_vlan(&[VlanAttr::VlanId(10)]).unwrap();
        let mut p = p.with_overlay(overlay::Overlay::new(tunnel, [(100, vlan)].into(), []));
        p.install(&mut sai, "10.9.0.0/24".parse().unwrap(), &[ip("10.1.0.2")]);
        p.install(&mut sai, "10.9.1.0/24".parse().unwrap(), &[ip("10.1.0.2"), ip("10.2.0.2")]);
        let mac = MacAddr([2, 0, 0, 0, 0, 7]);
        p.apply(&mut sai, FibChange::RemoteMac { vni: 100, mac, vtep: Some(ip("10.5.0.5")), sticky: false });
        assert_eq!(sai.store().route_entries().count(), connected + 2);
        assert_eq!(count(&sai, ObjectType::TunnelEndpoint), 1);
        p.clear(&mut sai);
        assert_eq!(sai.store().route_entries().count(), connected, "only the connected routes stay");
        for t in [ObjectType::NextHop, ObjectType::NextHopGroup, ObjectType::NextHopGroupMember] {
            assert_eq!(count(&sai, t), 0, "{t:?}");
        }
        assert_eq!(count(&sai, ObjectType::TunnelEndpoint), 0);
        assert_eq!(errors(&p), 0);
    }

    #[test]
    fn remote_macs_and_flood_lists_become_tunnel_objects_shared_per_vtep_and_released() {
        use sai_shim::{FdbEntryKey, TunnelAttr, TunnelMapEntryAttr, VlanAttr};
        let (mut sai, p) = shim();
        let tunnel = sai.create_tunnel(&[TunnelAttr::EncapSrcIp("10.1.0.1".parse().unwrap())]).unwrap();
        let vlan = sai.create_vlan(&[VlanAttr::VlanId(10)]).unwrap();
        sai.create_tunnel_map_entry(&[
            TunnelMapEntryAttr::TunnelId(tunnel),
            TunnelMapEntryAttr::VlanId(vlan),
            TunnelMapEntryAttr::Vni(100),
        ])
        .unwrap();
        let mut p = p.with_overlay(overlay::Overlay::new(tunnel, [(100, vlan)].into(), []));
        let (vtep, mac) = (ip("10.2.0.2"), MacAddr([2, 0, 0, 0, 0, 7]));
        let key = FdbEntryKey { vlan, mac: sai_shim::EthernetAddress(mac.0) };
        p.apply(&mut sai, FibChange::FloodVtep { vni: 100, vtep, present: true });
        p.apply(&mut sai, FibChange::RemoteMac { vni: 100, mac, vtep: Some(vtep), sticky: false });
        // One endpoint and bridge port for the VTEP, used by both.
        assert_eq!(count(&sai, ObjectType::TunnelEndpoint), 1);
        assert_eq!(count(&sai, ObjectType::VlanMember), 1);
        let bridge_port = sai.get_fdb_entry(key).unwrap().bridge_port;
        assert_eq!(bridge_port.object_type(), Some(ObjectType::BridgePort));
        // An unmapped VNI is refused and counted.
        p.apply(&mut sai, FibChange::FloodVtep { vni: 999, vtep, present: true });
        assert_eq!(errors(&p), 1);
        // The flood entry goes; the MAC still holds the VTEP; then nothing does.
        p.apply(&mut sai, FibChange::FloodVtep { vni: 100, vtep, present: false });
        assert_eq!((count(&sai, ObjectType::VlanMember), count(&sai, ObjectType::TunnelEndpoint)), (0, 1));
        p.apply(&mut sai, FibChange::RemoteMac { vni: 100, mac, vtep: None, sticky: false });
        assert!(sai.get_fdb_entry(key).is_err());
        assert_eq!((count(&sai, ObjectType::TunnelEndpoint), count(&sai, ObjectType::BridgePort)), (0, 0));
    }

    /// A sticky remote MAC (RFC 7432 section 15.2) is an FDB entry that
    /// allows no move; the sticky bit changing on the same VTEP remakes the
    /// entry and keeps the VTEP's objects.
    #[test]
    fn a_sticky_remote_mac_is_an_fdb_entry_learning_cannot_move() {
        use sai_shim::{FdbEntryKey, TunnelAttr, VlanAttr};
        let (mut sai, p) = shim();
        let tunnel = sai.create_tunnel(&[TunnelAttr::EncapSrcIp("10.1.0.1".parse().unwrap())]).unwrap();
        let vlan = sai.create_vlan(&[VlanAttr::VlanId(10)]).unwrap();
        let mut p = p.with_overlay(overlay::Overlay::new(tunnel, [(100, vlan)].into(), []));
        let (vtep, mac) = (ip("10.2.0.2"), MacAddr([2, 0, 0, 0, 0, 7]));
        let key = FdbEntryKey { vlan, mac: sai_shim::EthernetAddress(mac.0) };
        p.apply(&mut sai, FibChange::RemoteMac { vni: 100, mac, vtep: Some(vtep), sticky: true });
        let entry = sai.get_fdb_entry(key).unwrap();
        assert!(!entry.allow_mac_move, "{entry:?}");
        let endpoints =
            |sai: &Shim| sai.store().objects_of(ObjectType::TunnelEndpoint).map(|(id, _)| id).collect::<Vec<_>>();
        let endpoint = endpoints(&sai);
        p.apply(&mut sai, FibChange::RemoteMac { vni: 100, mac, vtep: Some(vtep), sticky: false });
        assert!(sai.get_fdb_entry(key).unwrap().allow_mac_move);
        assert_eq!(endpoints(&sai), endpoint, "the VTEP's objects stay");
        assert_eq!(errors(&p), 0);
    }

    /// MAC+IP bindings become ARP/ND suppression entries in the VNI's VLAN,
    /// which then cannot be removed under them; withdrawn, they go.
    #[test]
    fn remote_bindings_become_suppression_entries_in_the_vnis_vlan() {
        use sai_shim::{SaiError, SuppressionEntryKey, TunnelAttr, VlanAttr};
        let (mut sai, p) = shim();
        let tunnel = sai.create_tunnel(&[TunnelAttr::EncapSrcIp("10.1.0.1".parse().unwrap())]).unwrap();
        let vlan = sai.create_vlan(&[VlanAttr::VlanId(10)]).unwrap();
        let mut p = p.with_overlay(overlay::Overlay::new(tunnel, [(100, vlan)].into(), []));
        let (host, mac) = (ip("192.168.100.12"), MacAddr([2, 0, 0, 0, 0, 7]));
        p.apply(&mut sai, FibChange::Neighbor { vni: 100, ip: host, mac: Some(mac) });
        let key = SuppressionEntryKey { vlan, ip: host };
        assert_eq!(sai.suppression_entries(), vec![(key, sai_shim::EthernetAddress(mac.0))]);
        assert_eq!(sai.backend().pipeline().suppression_entry(10, host), Some(sai_shim::EthernetAddress(mac.0)));
        assert!(matches!(sai.remove(vlan), Err(SaiError::ObjectInUse { .. })), "the binding holds its VLAN");
        p.apply(&mut sai, FibChange::Neighbor { vni: 100, ip: host, mac: None });
        assert_eq!(sai.suppression_entries(), vec![]);
        assert_eq!(sai.backend().pipeline().suppression_entry(10, host), None);
        // Withdrawn twice (or never installed) is no error; an unmapped VNI is.
        p.apply(&mut sai, FibChange::Neighbor { vni: 100, ip: host, mac: None });
        assert_eq!(errors(&p), 0);
        p.apply(&mut sai, FibChange::Neighbor { vni: 999, ip: host, mac: Some(mac) });
        assert_eq!(errors(&p), 1);
        sai.remove(vlan).unwrap();
    }

    fn target(sai: &Shim, prefix: &str) -> Option<ObjectId> {
        let key = RouteEntryKey { virtual_router: sai.default_virtual_router(), destination: prefix.parse().unwrap() };
        sai.get_route_entry(key).ok().and_then(|r| r.next_hop)
    }

    fn count(sai: &Shim, t: ObjectType) -> usize {
        sai.store().objects_of(t).count()
    }

    fn errors(p: &ShimProgrammer<SoftBackend>) -> u64 {
        p.errors().load(Ordering::Relaxed)
    }

    #[test]
    fn ecmp_groups_next_hops_and_routes_follow_the_rib() {
        let (mut sai, mut p) = shim();
        p.install(&mut sai, nlri("10.255.0.2/32"), &[ip("10.1.0.2"), ip("10.2.0.2")]);
        let group = target(&sai, "10.255.0.2/32").unwrap();
        assert_eq!(group.object_type(), Some(ObjectType::NextHopGroup));
        assert_eq!(sai.get_next_hop_group_members(group).unwrap().len(), 2);
        // A second prefix with the same set shares the group.
        p.install(&mut sai, nlri("10.255.0.3/32"), &[ip("10.2.0.2"), ip("10.1.0.2")]);
        assert_eq!(target(&sai, "10.255.0.3/32"), Some(group));
        assert_eq!(count(&sai, ObjectType::NextHopGroup), 1);
        assert_eq!(count(&sai, ObjectType::NextHop), 2);
        // Shrinking to one path points the route at the next hop itself.
        p.install(&mut sai, nlri("10.255.0.2/32"), &[ip("10.1.0.2")]);
        let nh = target(&sai, "10.255.0.2/32").unwrap();
        assert_eq!(nh.object_type(), Some(ObjectType::NextHop));
        assert_eq!(sai.get_next_hop(nh).unwrap().ip, ip("10.1.0.2"));
        // Removing everything removes every object the programmer created.
        p.remove(&mut sai, nlri("10.255.0.3/32"));
        assert_eq!(count(&sai, ObjectType::NextHopGroup), 0);
        assert_eq!(count(&sai, ObjectType::NextHopGroupMember), 0);
        p.remove(&mut sai, nlri("10.255.0.2/32"));
        assert_eq!(target(&sai, "10.255.0.2/32"), None);
        assert_eq!(count(&sai, ObjectType::NextHop), 0);
        assert_eq!(errors(&p), 0);
    }

    fn route(prefix: &str, hops: &[&str]) -> FibChange {
        FibChange::Route {
            vrf: None,
            prefix: prefix.parse().unwrap(),
            next_hops: hops.iter().map(|h| NextHop::Ip(ip(h))).collect(),
        }
    }

    /// A batch with new routes (created in bulk) mixed with changes to
    /// routes of the same batch, a withdraw, an unresolvable route and a
    /// prefix a connected route holds ends as the same changes one by one.
    #[test]
    fn a_batch_ends_as_its_changes_applied_one_by_one() {
        let batch = vec![
            route("10.9.0.0/16", &["10.1.0.2"]),
            route("10.8.0.0/16", &["10.1.0.2", "10.2.0.2"]),
            route("10.7.0.0/16", &["192.0.2.1"]),
            route("10.9.0.0/16", &["10.2.0.2"]),
            route("10.6.0.0/16", &["10.2.0.2", "10.1.0.2"]),
            route("10.3.0.0/30", &["10.1.0.2"]),
            route("10.8.0.0/16", &[]),
            route("10.5.0.0/16", &["10.3.0.2"]),
        ];
        let (mut bulk, mut p_bulk) = shim();
        p_bulk.apply_batch(&mut bulk, batch.clone());
        let (mut single, mut p_single) = shim();
        for change in batch {
            p_single.apply(&mut single, change);
        }
        let table = |sai: &Shim| -> Vec<(String, Option<Vec<IpAddr>>)> {
            let mut routes: Vec<_> = sai
                .store()
                .route_entries()
                .map(|(key, entry)| {
                    let hops = entry.next_hop.map(|id| match id.object_type() {
                        Some(ObjectType::NextHop) => vec![sai.get_next_hop(id).unwrap().ip],
                        Some(ObjectType::NextHopGroup) => sai
                            .get_next_hop_group_members(id)
                            .unwrap()
                            .into_iter()
                            .map(|nh| sai.get_next_hop(nh).unwrap().ip)
                            .collect(),
                        _ => Vec::new(),
                    });
                    (key.destination.to_string(), hops)
                })
                .collect();
            routes.sort();
            routes
        };
        assert_eq!(table(&bulk), table(&single));
        assert_eq!(target(&bulk, "10.8.0.0/16"), None);
        assert_eq!(target(&bulk, "10.7.0.0/16"), None);
        assert_eq!(sai_ip(&bulk, "10.9.0.0/16"), Some(ip("10.2.0.2")));
        let group = target(&bulk, "10.6.0.0/16").unwrap();
        assert_eq!(group.object_type(), Some(ObjectType::NextHopGroup));
        // The unresolvable route and the connected prefix are counted.
        assert_eq!(errors(&p_bulk), 2);
        assert_eq!(errors(&p_bulk), errors(&p_single));
        for t in [ObjectType::NextHop, ObjectType::NextHopGroup, ObjectType::NextHopGroupMember] {
            assert_eq!(count(&bulk, t), count(&single, t), "{t:?}");
        }
    }

    fn sai_ip(sai: &Shim, prefix: &str) -> Option<IpAddr> {
        Some(sai.get_next_hop(target(sai, prefix)?).ok()?.ip)
    }

    #[test]
    fn unresolvable_next_hops_and_our_own_address_are_counted_not_installed() {
        let (mut sai, mut p) = shim();
        p.install(&mut sai, nlri("10.9.0.0/16"), &[ip("192.0.2.1")]);
        assert_eq!(target(&sai, "10.9.0.0/16"), None);
        assert_eq!(errors(&p), 1);
        // The switch's own address on eth1 is no next hop.
        p.install(&mut sai, nlri("10.9.0.0/16"), &[ip("10.1.0.1")]);
        assert_eq!(target(&sai, "10.9.0.0/16"), None);
        assert_eq!(count(&sai, ObjectType::NextHop), 0);
        assert_eq!(errors(&p), 2);
        // One resolvable hop of three: installed through that one.
        p.install(&mut sai, nlri("10.9.0.0/16"), &[ip("192.0.2.1"), ip("10.1.0.1"), ip("10.2.0.2")]);
        let nh = target(&sai, "10.9.0.0/16").unwrap();
        assert_eq!(nh.object_type(), Some(ObjectType::NextHop));
        assert_eq!(sai.get_next_hop(nh).unwrap().ip, ip("10.2.0.2"));
    }

    #[test]
    fn a_route_whose_new_next_hops_cannot_be_made_is_removed_not_left_on_the_old_ones() {
        let (mut sai, mut p) = shim();
        // eth3's router interface goes away behind the programmer's back:
        // next hops on it can no longer be created.
        let vr = sai.default_virtual_router();
        let key = RouteEntryKey { virtual_router: vr, destination: "10.3.0.0/30".parse().unwrap() };
        let rif3 = sai.get_route_entry(key).unwrap().next_hop.unwrap();
        sai.remove_route_entry(key).unwrap();
        sai.remove(rif3).unwrap();

        p.install(&mut sai, nlri("10.9.0.0/16"), &[ip("10.1.0.2")]);
        assert!(target(&sai, "10.9.0.0/16").is_some());
        p.install(&mut sai, nlri("10.9.0.0/16"), &[ip("10.3.0.2")]);
        assert_eq!(target(&sai, "10.9.0.0/16"), None, "still forwarding through the withdrawn next hop");
        assert_eq!(count(&sai, ObjectType::NextHop), 0);
        assert_eq!(errors(&p), 1);
        // The same for an ECMP set none of whose members can be made.
        p.install(&mut sai, nlri("10.8.0.0/16"), &[ip("10.1.0.2"), ip("10.2.0.2")]);
        p.install(&mut sai, nlri("10.8.0.0/16"), &[ip("10.3.0.2"), ip("10.3.0.3")]);
        assert_eq!(target(&sai, "10.8.0.0/16"), None);
        assert_eq!(count(&sai, ObjectType::NextHopGroup), 0);
        assert_eq!(count(&sai, ObjectType::NextHop), 0);
        assert_eq!(errors(&p), 2);
        // Later changes that can be made install it again.
        p.install(&mut sai, nlri("10.9.0.0/16"), &[ip("10.2.0.2")]);
        assert!(target(&sai, "10.9.0.0/16").is_some());
    }

    #[tokio::test]
    async fn queued_changes_reach_the_shim_in_batches() {
        let (sai, p) = shim();
        let sai = Arc::new(Mutex::new(sai));
        let (mut sink, rx) = QueueSink::new();
        let task = tokio::spawn(p.run(sai.clone(), rx));
        for i in 0..1000u32 {
            let prefix = format!("10.{}.{}.0/24", 100 + i / 256, i % 256);
            sink.apply(FibChange::Route {
                vrf: None,
                prefix: prefix.parse().unwrap(),
                next_hops: vec![NextHop::Ip(ip("10.1.0.2")), NextHop::Ip(ip("10.2.0.2"))],
            });
        }
        sink.apply(FibChange::Route { vrf: None, prefix: "10.100.0.0/24".parse().unwrap(), next_hops: vec![] });
        drop(sink);
        task.await.unwrap();
        let sai = sai.lock().unwrap();
        assert_eq!(target(&sai, "10.100.0.0/24"), None);
        assert_eq!(target(&sai, "10.103.231.0/24").and_then(|t| t.object_type()), Some(ObjectType::NextHopGroup));
        assert_eq!(count(&sai, ObjectType::NextHopGroup), 1);
    }

    /// A commit that removes `bgp:` stops the speaker (its change queue
    /// closes) and then detaches EVPN through the control channel: the
    /// programmer must still be there to run that job. It used to end with
    /// the queue, and the commit failed with "the route programmer did not
    /// answer" whenever the speaker's task ended first.
    #[tokio::test]
    async fn control_jobs_run_after_the_speaker_has_gone() {
        let (sai, p) = shim();
        let sai = Arc::new(Mutex::new(sai));
        let (sink, rx) = QueueSink::new();
        let (control, jobs) = mpsc::unbounded_channel::<ControlJob<SoftBackend>>();
        let task = tokio::spawn(p.run_with_control(sai.clone(), rx, jobs));
        drop(sink);
        // Let the programmer see its change queue closed.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let (done, finished) = tokio::sync::oneshot::channel();
        let sent = control.send(Box::new(move |_: &mut ShimProgrammer<SoftBackend>, _: &mut Shim| {
            let _ = done.send(());
        }));
        assert!(sent.is_ok(), "the programmer stopped with the speaker's queue");
        assert!(finished.await.is_ok(), "the job was dropped unrun");
        drop(control);
        task.await.unwrap();
    }

    /// Symmetric IRB: IP-VRF routes through remote VTEPs become route
    /// entries in the VRF's virtual router through tunnel-encap next hops
    /// (one per VTEP, L3VNI and router MAC), ECMP groups of them, all
    /// removed with the last route; the pipeline encapsulates with the L3VNI.
    #[test]
    fn ip_vrf_routes_go_into_the_virtual_router_through_tunnel_next_hops() {
        use sai_shim::{NextHopType, TunnelAttr, TunnelMapEntryAttr, VirtualRouterAttr};
        let (mut sai, p) = shim();
        let tunnel = sai.create_tunnel(&[TunnelAttr::EncapSrcIp("10.1.0.1".parse().unwrap())]).unwrap();
        let rmac = sai_shim::EthernetAddress([2, 0xcc, 0, 0, 0, 1]);
        let vr = sai.create_virtual_router_with(&[VirtualRouterAttr::SrcMacAddress(rmac)]).unwrap();
        sai.create_tunnel_map_entry(&[
            TunnelMapEntryAttr::TunnelId(tunnel),
            TunnelMapEntryAttr::VirtualRouterId(vr),
            TunnelMapEntryAttr::Vni(4001),
        ])
        .unwrap();
        let mut p = p.with_ip_vrfs(ip_vrf::IpVrfs::new(tunnel, [("tenant1".to_string(), vr)].into()));
        let hop = |vtep: &str, last: u8| NextHop::Vtep {
            vtep: ip(vtep),
            vni: 4001,
            router_mac: MacAddr([2, 0xcc, 0, 0, 0, last]),
        };
        let route = |prefix: &str, next_hops: Vec<NextHop>| FibChange::Route {
            vrf: Some("tenant1".into()),
            prefix: prefix.parse().unwrap(),
            next_hops,
        };
        let key = |prefix: &str| RouteEntryKey { virtual_router: vr, destination: prefix.parse().unwrap() };
        p.apply(&mut sai, route("10.20.0.5/32", vec![hop("10.2.0.2", 2)]));
        p.apply(&mut sai, route("10.30.0.0/24", vec![hop("10.2.0.2", 2), hop("10.3.0.2", 3)]));
        assert_eq!(errors(&p), 0);
        let host = sai.get_route_entry(key("10.20.0.5/32")).unwrap().next_hop.unwrap();
        let next_hop = sai.get_next_hop(host).unwrap();
        assert_eq!(next_hop.ip, ip("10.2.0.2"));
        assert_eq!(
            next_hop.next_hop_type,
            NextHopType::TunnelEncap { tunnel, vni: 4001, mac: sai_shim::EthernetAddress([2, 0xcc, 0, 0, 0, 2]) }
        );
        let prefix = sai.get_route_entry(key("10.30.0.0/24")).unwrap().next_hop.unwrap();
        assert_eq!(prefix.object_type(), Some(ObjectType::NextHopGroup));
        // The next hop to 10.2.0.2 is shared by the host route and the group.
        assert_eq!(count(&sai, ObjectType::NextHop), 2);
        assert!(
            sai.get_route_entry(RouteEntryKey {
                virtual_router: sai.default_virtual_router(),
                destination: "10.20.0.5/32".parse().unwrap()
            })
            .is_err(),
            "not in the default VRF"
        );

        // A VRF the switch lacks is refused and counted.
        p.apply(
            &mut sai,
            FibChange::Route {
                vrf: Some("other".into()),
                prefix: "10.9.0.0/24".parse().unwrap(),
                next_hops: vec![hop("10.2.0.2", 2)],
            },
        );
        assert_eq!(errors(&p), 1);

        p.apply(&mut sai, route("10.20.0.5/32", vec![]));
        p.apply(&mut sai, route("10.30.0.0/24", vec![]));
        assert!(sai.get_route_entry(key("10.30.0.0/24")).is_err());
        assert_eq!(count(&sai, ObjectType::NextHop), 0);
        assert_eq!(count(&sai, ObjectType::NextHopGroup), 0);
        sai.remove(vr).unwrap_err();
    }

    /// A commit that re-makes a VNI's VLAN and a VRF's virtual router:
    /// detach removes what EVPN installed in them, so the config can remove
    /// them; attach points EVPN at the new ones, where the same changes
    /// install again. Removals for what was detached are no errors.
    #[test]
    fn detach_frees_a_vnis_vlan_and_a_vrfs_virtual_router_and_attach_moves_to_the_new_ones() {
        use sai_shim::{TunnelAttr, TunnelMapEntryAttr, VlanAttr};
        let (mut sai, p) = shim();
        let tunnel = sai.create_tunnel(&[TunnelAttr::EncapSrcIp("10.1.0.1".parse().unwrap())]).unwrap();
        let vlan = sai.create_vlan(&[VlanAttr::VlanId(10)]).unwrap();
        let map = sai
            .create_tunnel_map_entry(&[
                TunnelMapEntryAttr::TunnelId(tunnel),
                TunnelMapEntryAttr::VlanId(vlan),
                TunnelMapEntryAttr::Vni(100),
            ])
            .unwrap();
        let vr = sai.create_virtual_router().unwrap();
        let mut p = p
            .with_overlay(overlay::Overlay::new(tunnel, [(100, vlan)].into(), []))
            .with_ip_vrfs(ip_vrf::IpVrfs::new(tunnel, [("tenant1".to_string(), vr)].into()));
        let (vtep, mac, host) = (ip("10.2.0.2"), MacAddr([2, 0, 0, 0, 0, 7]), ip("192.168.1.7"));
        let hop = NextHop::Vtep { vtep, vni: 4001, router_mac: MacAddr([2, 0xcc, 0, 0, 0, 2]) };
        let changes = |vrf: &str, on: bool| {
            vec![
                FibChange::FloodVtep { vni: 100, vtep, present: on },
                FibChange::RemoteMac { vni: 100, mac, vtep: on.then_some(vtep), sticky: false },
                FibChange::Neighbor { vni: 100, ip: host, mac: on.then_some(mac) },
                FibChange::Route {
                    vrf: Some(vrf.into()),
                    prefix: "192.168.1.7/32".parse().unwrap(),
                    next_hops: if on { vec![hop] } else { vec![] },
                },
            ]
        };
        p.apply_batch(&mut sai, changes("tenant1", true));
        assert!(sai.remove(map).is_err() && sai.remove(vr).is_err(), "EVPN's objects hold them");
        p.detach(&mut sai, &[100], &["tenant1".to_string()]);
        sai.remove(map).unwrap();
        sai.remove(vlan).unwrap();
        sai.remove(vr).unwrap();
        assert_eq!((count(&sai, ObjectType::TunnelEndpoint), count(&sai, ObjectType::NextHop)), (0, 0));
        // The speaker's teardown arrives after: nothing left, no error.
        p.apply_batch(&mut sai, changes("tenant1", false));
        assert_eq!(errors(&p), 0);

        let vlan = sai.create_vlan(&[VlanAttr::VlanId(20)]).unwrap();
        sai.create_tunnel_map_entry(&[
            TunnelMapEntryAttr::TunnelId(tunnel),
            TunnelMapEntryAttr::VlanId(vlan),
            TunnelMapEntryAttr::Vni(100),
        ])
        .unwrap();
        let vr = sai.create_virtual_router().unwrap();
        p.attach(EvpnBindings {
            tunnel: Some(tunnel),
            vlans: [(100, vlan)].into(),
            configured_vteps: vec![],
            virtual_routers: [("tenant2".to_string(), vr)].into(),
        });
        p.apply_batch(&mut sai, changes("tenant2", true));
        assert_eq!(errors(&p), 0);
        let key = sai_shim::FdbEntryKey { vlan, mac: sai_shim::EthernetAddress(mac.0) };
        assert!(sai.get_fdb_entry(key).is_ok(), "the remote MAC in the new VLAN");
        let route = RouteEntryKey { virtual_router: vr, destination: "192.168.1.7/32".parse().unwrap() };
        assert!(sai.get_route_entry(route).is_ok(), "the host route in the new virtual router");
    }
}
