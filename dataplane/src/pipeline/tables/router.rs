//! The router's tables: router interfaces (SVIs and routed ports) and their
//! VRFs, the per-VRF route tables (`fib`), next hops with their cached
//! rewrites, and ECMP groups.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnetwork::IpNetwork;
use rustc_hash::{FxHashMap, FxHashSet};

use super::fib::{Fib, NO_SLOT, Route, RouteTarget, SlotIds};

use super::{DEFAULT_VRF, NextHopGroupId, NextHopId, PortId, RifId, TableError, Tables, VrfId};
use crate::pipeline::config::SwitchConfig;
use crate::wire::{EthernetAddress, VlanId};

/// What a router interface is attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RifKind {
    /// A routed port: the port does no bridging.
    Port(PortId),
    /// An SVI: the router's interface into a VLAN.
    Vlan(VlanId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouterInterface {
    pub kind: RifKind,
    /// The router's MAC on this interface: frames to it are routed, frames
    /// routed out of it carry it as source.
    pub mac: EthernetAddress,
    /// Largest IP packet sent out of this interface.
    pub mtu: u16,
    pub admin_up: bool,
    /// The VRF whose table routes what arrives on this interface.
    pub vrf: VrfId,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NextHop {
    pub rif: RifId,
    pub ip: IpAddr,
}

/// A next hop across the overlay (symmetric IRB, RFC 9135 section 4.1;
/// SAI's next hop of type TUNNEL_ENCAP): the routed packet goes in a frame
/// to the remote router MAC, VXLAN-encapsulated with the L3VNI to the
/// remote VTEP. Such a next hop has no router interface: [`TUNNEL_RIF`]
/// stands for it where one is expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TunnelNextHop {
    pub remote: Ipv4Addr,
    pub vni: super::Vni,
    pub router_mac: EthernetAddress,
}

/// The router interface of a tunnel next hop: none (beyond any real id).
pub const TUNNEL_RIF: RifId = RifId::MAX;

pub(crate) struct Router {
    pub(crate) rifs: Vec<Option<RouterInterface>>,
    /// The default VRF's table, in place: the underlay's and most
    /// switches' only one, reached without an index on the packet path.
    default_fib: Fib,
    /// The other VRFs' tables, indexed by id (slot 0 unused); `None`
    /// where no VRF is.
    fibs: Vec<Option<Fib>>,
    route_count: usize,
    route_capacity: usize,
    /// Next hops and groups by id: their slots in `hops` and `group_slots`,
    /// which routes carry so that the packet path indexes, never hashes.
    next_hops: FxHashMap<NextHopId, u32>,
    pub(crate) hops: Vec<Hop>,
    free_hops: Vec<u32>,
    groups: FxHashMap<NextHopGroupId, u32>,
    pub(crate) group_slots: Vec<Group>,
    free_groups: Vec<u32>,
    /// Bumped by every change that can make a next hop's cached rewrite
    /// wrong (neighbours, ports, router interfaces, next hops); a rewrite
    /// of an older generation is rebuilt by the slow path.
    pub(crate) generation: u64,
    /// Routes and groups that use a next hop, routes that use a group,
    /// routes and next hops that use a router interface.
    next_hop_refs: FxHashMap<NextHopId, u32>,
    group_refs: FxHashMap<NextHopGroupId, u32>,
    rif_refs: FxHashMap<RifId, u32>,
    /// The switch's own addresses (`Local` host routes), for the source of
    /// the packets it originates.
    pub(crate) local_v4: Vec<Ipv4Addr>,
    pub(crate) local_v6: Vec<Ipv6Addr>,
    /// The same addresses as sets, for the per-packet martian check, with
    /// a 256-bit filter in front so that most sources cost no hash lookup.
    own_v4: FxHashSet<Ipv4Addr>,
    own_v6: FxHashSet<Ipv6Addr>,
    own_filter: [u64; 4],
    /// The MACs of all router interfaces (usually one), never a valid
    /// source on a front-panel port.
    router_macs: Vec<EthernetAddress>,
    /// Connected subnets, to pick the source address on an interface.
    pub(crate) connected: Vec<(IpNetwork, RifId)>,
    /// Per router interface, the largest IP packet that can leave by it:
    /// its own MTU, capped by its port's, or for an SVI by the smallest of
    /// its VLAN's member ports (`Tables::refresh_rif_mtus`).
    effective_mtus: Vec<u16>,
    /// Router interfaces on which no ICMP redirect is sent (RFC 1812
    /// 5.2.7.2: a router must let the operator turn them off).
    redirects_off: Vec<bool>,
}

impl Router {
    pub(crate) fn new(config: &SwitchConfig) -> Router {
        Router {
            rifs: (0..config.max_router_interfaces).map(|_| None).collect(),
            default_fib: Fib::new(config.dir24_min_routes),
            fibs: Vec::new(),
            route_count: 0,
            route_capacity: config.route_capacity,
            next_hops: FxHashMap::default(),
            hops: Vec::new(),
            free_hops: Vec::new(),
            groups: FxHashMap::default(),
            group_slots: Vec::new(),
            free_groups: Vec::new(),
            generation: 1,
            next_hop_refs: FxHashMap::default(),
            group_refs: FxHashMap::default(),
            rif_refs: FxHashMap::default(),
            local_v4: Vec::new(),
            local_v6: Vec::new(),
            own_v4: FxHashSet::default(),
            own_v6: FxHashSet::default(),
            own_filter: [0; 4],
            router_macs: Vec::new(),
            connected: Vec::new(),
            effective_mtus: vec![0; usize::from(config.max_router_interfaces)],
            redirects_off: vec![false; usize::from(config.max_router_interfaces)],
        }
    }

    /// Whether ICMP redirects may be sent on `rif` (the default).
    #[inline]
    pub(crate) fn sends_redirects(&self, rif: RifId) -> bool {
        !self.redirects_off.get(usize::from(rif)).copied().unwrap_or(true)
    }

    /// Whether `a` and `b` are inside one subnet connected on `rif`.
    pub(crate) fn share_subnet(&self, rif: RifId, a: IpAddr, b: IpAddr) -> bool {
        self.connected.iter().any(|&(net, r)| r == rif && net.contains(a) && net.contains(b))
    }

    /// The largest IP packet `rif` sends (0 for no such interface).
    #[inline]
    pub(crate) fn rif_mtu(&self, rif: RifId) -> u16 {
        self.effective_mtus.get(usize::from(rif)).copied().unwrap_or(0)
    }

    #[inline]
    pub(crate) fn rif(&self, rif: RifId) -> Option<&RouterInterface> {
        self.rifs.get(usize::from(rif))?.as_ref()
    }

    #[inline]
    pub(crate) fn rif_mac(&self, rif: RifId) -> Option<EthernetAddress> {
        self.rif(rif).map(|rif| rif.mac)
    }

    /// Whether `mac` is the MAC of any router interface.
    #[inline]
    pub(crate) fn is_router_mac(&self, mac: EthernetAddress) -> bool {
        self.router_macs.contains(&mac)
    }

    fn refresh_router_macs(&mut self) {
        self.router_macs.clear();
        for rif in self.rifs.iter().flatten() {
            if !self.router_macs.contains(&rif.mac) {
                self.router_macs.push(rif.mac);
            }
        }
    }

    /// Whether `addr` is one of the switch's own addresses.
    #[inline]
    pub(crate) fn is_own_v4(&self, addr: Ipv4Addr) -> bool {
        self.may_be_own(u128::from(u32::from(addr))) && self.own_v4.contains(&addr)
    }

    #[inline]
    pub(crate) fn is_own_v6(&self, addr: Ipv6Addr) -> bool {
        self.may_be_own(u128::from(addr)) && self.own_v6.contains(&addr)
    }

    /// The filter's bit for an address: 0..256.
    #[inline]
    fn own_bit(addr: u128) -> usize {
        let folded = (addr as u64) ^ ((addr >> 64) as u64);
        (folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize
    }

    #[inline]
    fn may_be_own(&self, addr: u128) -> bool {
        let bit = Router::own_bit(addr);
        self.own_filter[bit / 64] & (1 << (bit % 64)) != 0
    }

    /// Rebuilds the filter from the sets (after a removal).
    fn refresh_own_filter(&mut self) {
        let mut filter = [0u64; 4];
        let v4 = self.own_v4.iter().map(|addr| u128::from(u32::from(*addr)));
        for addr in v4.chain(self.own_v6.iter().map(|addr| u128::from(*addr))) {
            let bit = Router::own_bit(addr);
            filter[bit / 64] |= 1 << (bit % 64);
        }
        self.own_filter = filter;
    }

    pub(crate) fn is_own(&self, addr: IpAddr) -> bool {
        match addr {
            IpAddr::V4(addr) => self.is_own_v4(addr),
            IpAddr::V6(addr) => self.is_own_v6(addr),
        }
    }

    /// Whether `addr` is the broadcast address of a subnet connected on
    /// `rif` (any interface if `None`); /31 and /32 have none (RFC 3021).
    pub(crate) fn is_subnet_broadcast(&self, rif: Option<RifId>, addr: Ipv4Addr) -> bool {
        self.connected.iter().any(|&(net, r)| match net {
            IpNetwork::V4(net) => rif.is_none_or(|rif| rif == r) && net.prefix() <= 30 && net.broadcast() == addr,
            IpNetwork::V6(_) => false,
        })
    }

    /// Whether `addr` is inside a subnet connected on `rif` (for IPv6, a
    /// link-local address always is: RFC 4291 2.5.6).
    pub(crate) fn on_link(&self, rif: RifId, addr: IpAddr) -> bool {
        if let IpAddr::V6(v6) = addr
            && v6.is_unicast_link_local()
        {
            return true;
        }
        self.connected.iter().any(|&(net, r)| r == rif && net.contains(addr))
    }

    /// Whether `addr` is the Subnet-Router anycast address (the prefix
    /// with a zero interface identifier, RFC 4291 2.6.1) of a prefix
    /// connected on an interface in `vrf`; /127 has none (RFC 6164 section 6).
    #[inline]
    pub(crate) fn is_subnet_router_anycast(&self, vrf: VrfId, addr: Ipv6Addr) -> bool {
        // Cheap first: the address ends in zero bits for any prefix up to /112.
        if u128::from(addr) & 0xffff != 0 {
            return false;
        }
        self.connected.iter().any(|&(net, rif)| match net {
            IpNetwork::V6(net) => {
                net.prefix() < 127 && net.network() == addr && self.rif(rif).is_some_and(|rif| rif.vrf == vrf)
            }
            IpNetwork::V4(_) => false,
        })
    }

    /// The table of `vrf`, if that VRF exists.
    #[inline]
    pub(crate) fn fib(&self, vrf: VrfId) -> Option<&Fib> {
        if vrf == DEFAULT_VRF {
            return Some(&self.default_fib);
        }
        self.fibs.get(usize::from(vrf))?.as_ref()
    }

    fn fib_mut(&mut self, vrf: VrfId) -> Result<&mut Fib, TableError> {
        if vrf == DEFAULT_VRF {
            return Ok(&mut self.default_fib);
        }
        self.fibs.get_mut(usize::from(vrf)).and_then(Option::as_mut).ok_or(TableError::Invalid("no such VRF"))
    }

    #[inline]
    pub(crate) fn lookup_v4(&self, vrf: VrfId, addr: Ipv4Addr) -> Option<Route> {
        self.fib(vrf)?.lookup_v4(addr, self)
    }

    #[inline]
    pub(crate) fn lookup_v6(&self, vrf: VrfId, addr: Ipv6Addr) -> Option<Route> {
        self.fib(vrf)?.lookup_v6(addr)
    }

    #[inline]
    pub(crate) fn lookup(&self, vrf: VrfId, addr: IpAddr) -> Option<RouteTarget> {
        self.fib(vrf)?.lookup(addr, self).map(|route| route.target)
    }

    /// The VRF of a router interface (the default one for an unknown id).
    #[inline]
    pub(crate) fn rif_vrf(&self, rif: RifId) -> VrfId {
        self.rif(rif).map_or(DEFAULT_VRF, |rif| rif.vrf)
    }

    /// The route entry for a checked target: with the slot of its next hop or group.
    fn route_for(&self, target: RouteTarget) -> Route {
        let slot = match target {
            RouteTarget::NextHop(id) => self.next_hops[&id],
            RouteTarget::Group(id) => self.groups[&id],
            _ => NO_SLOT,
        };
        Route { target, slot }
    }

    pub(crate) fn next_hop(&self, id: NextHopId) -> Option<NextHop> {
        self.next_hops.get(&id).map(|&slot| self.hops[slot as usize].next_hop)
    }

    /// Invalidates every cached rewrite.
    #[inline]
    pub(crate) fn invalidate_rewrites(&mut self) {
        self.generation += 1;
    }

    fn reference(&mut self, target: RouteTarget, delta: i32) {
        let bump = |count: &mut u32| *count = count.saturating_add_signed(delta);
        match target {
            RouteTarget::NextHop(id) => bump(self.next_hop_refs.entry(id).or_default()),
            RouteTarget::Group(id) => bump(self.group_refs.entry(id).or_default()),
            RouteTarget::Connected(rif) => bump(self.rif_refs.entry(rif).or_default()),
            RouteTarget::Local | RouteTarget::Drop | RouteTarget::Punt => {}
        }
    }

    fn check_target(&self, target: RouteTarget) -> Result<(), TableError> {
        match target {
            RouteTarget::NextHop(id) if !self.next_hops.contains_key(&id) => {
                Err(TableError::Invalid("no such next hop"))
            }
            RouteTarget::Group(id) if !self.groups.contains_key(&id) => {
                Err(TableError::Invalid("no such next-hop group"))
            }
            RouteTarget::Connected(rif) if self.rif(rif).is_none() => {
                Err(TableError::Invalid("no such router interface"))
            }
            _ => Ok(()),
        }
    }

    /// The address the switch uses as source on `rif` toward `toward`: one
    /// of its own addresses inside a subnet connected on that interface
    /// (the one containing `toward` if any), else any of its addresses.
    pub(crate) fn source_v4(&self, rif: RifId, toward: Ipv4Addr) -> Option<Ipv4Addr> {
        let on_rif = |addr: &Ipv4Addr, want_toward: bool| {
            self.connected.iter().any(|(net, r)| {
                *r == rif && net.contains(IpAddr::V4(*addr)) && (!want_toward || net.contains(IpAddr::V4(toward)))
            })
        };
        self.local_v4
            .iter()
            .find(|addr| on_rif(addr, true))
            .or_else(|| self.local_v4.iter().find(|addr| on_rif(addr, false)))
            .or(self.local_v4.first())
            .copied()
    }

    pub(crate) fn source_v6(&self, rif: RifId, toward: Ipv6Addr) -> Option<Ipv6Addr> {
        let on_rif = |addr: &Ipv6Addr, want_toward: bool| {
            self.connected.iter().any(|(net, r)| {
                *r == rif && net.contains(IpAddr::V6(*addr)) && (!want_toward || net.contains(IpAddr::V6(toward)))
            })
        };
        // A link-local destination needs a link-local source (RFC 4291 2.5.6).
        let link_local = |addr: &&Ipv6Addr| addr.is_unicast_link_local() == toward.is_unicast_link_local();
        self.local_v6
            .iter()
            .filter(link_local)
            .find(|addr| on_rif(addr, true))
            .or_else(|| self.local_v6.iter().filter(link_local).find(|addr| on_rif(addr, false)))
            // The switch's link-local addresses need no fe80::/64 route to
            // be on every link.
            .or_else(|| {
                self.local_v6.iter().find(|addr| toward.is_unicast_link_local() && addr.is_unicast_link_local())
            })
            .or_else(|| self.local_v6.iter().find(|addr| on_rif(addr, false)))
            .or(self.local_v6.first())
            .copied()
    }
}

impl Tables {
    // ---- router interfaces ----

    /// Creates or replaces a router interface. A routed port stops bridging;
    /// an SVI's VLAN must exist.
    pub fn set_router_interface(&mut self, rif: RifId, config: RouterInterface) -> Result<(), TableError> {
        if usize::from(rif) >= self.router.rifs.len() {
            return Err(TableError::Invalid("router interface id beyond max_router_interfaces"));
        }
        if config.mac.is_multicast() {
            return Err(TableError::Invalid("router MAC must be unicast"));
        }
        if self.router.fib(config.vrf).is_none() {
            return Err(TableError::Invalid("no such VRF"));
        }
        match config.kind {
            RifKind::Port(port) => {
                let p = self.port(port).ok_or(TableError::Invalid("no such port"))?;
                if !p.member.is_empty() {
                    return Err(TableError::Invalid("port is a VLAN member"));
                }
                if p.rif.is_some_and(|other| other != rif) {
                    return Err(TableError::InUse);
                }
            }
            RifKind::Vlan(vid) => {
                let vlan = self.bridge.vlan(vid).ok_or(TableError::Invalid("no such VLAN"))?;
                if vlan.rif.is_some_and(|other| other != rif) {
                    return Err(TableError::InUse);
                }
            }
        }
        if let Some(old) = self.router.rifs[usize::from(rif)].take() {
            self.unbind_rif(old.kind);
        }
        match config.kind {
            RifKind::Port(port) => self.ports[usize::from(port)].as_mut().expect("checked").rif = Some(rif),
            RifKind::Vlan(vid) => self.bridge.vlan_mut(vid).expect("checked").rif = Some(rif),
        }
        self.router.rifs[usize::from(rif)] = Some(config);
        self.router.refresh_router_macs();
        self.refresh_rif_mtus();
        Ok(())
    }

    /// Recomputes every router interface's effective MTU (RFC 1191 needs
    /// the MTU the packet meets, not the one configured on the interface):
    /// after any change to router interfaces, port MTUs or VLAN membership.
    pub(crate) fn refresh_rif_mtus(&mut self) {
        for index in 0..self.router.rifs.len() {
            let effective = self.router.rifs[index].map_or(0, |rif| {
                let port_mtu = |port: PortId| self.port(port).map(|p| p.config.mtu);
                let ports_mtu = match rif.kind {
                    RifKind::Port(port) => port_mtu(port),
                    RifKind::Vlan(vid) => self
                        .bridge
                        .vlan(vid)
                        .and_then(|vlan| vlan.members.iter().filter_map(|&member| port_mtu(member)).min()),
                };
                ports_mtu.map_or(rif.mtu, |mtu| mtu.min(rif.mtu))
            });
            self.router.effective_mtus[index] = effective;
        }
        self.router.invalidate_rewrites();
    }

    fn unbind_rif(&mut self, kind: RifKind) {
        match kind {
            RifKind::Port(port) => {
                if let Some(Some(p)) = self.ports.get_mut(usize::from(port)) {
                    p.rif = None;
                }
            }
            RifKind::Vlan(vid) => {
                if let Some(vlan) = self.bridge.vlan_mut(vid) {
                    vlan.rif = None;
                }
            }
        }
    }

    /// Removes a router interface no route or next hop uses; its neighbours go with it.
    pub fn remove_router_interface(&mut self, rif: RifId) -> Result<(), TableError> {
        let config = self.router.rif(rif).copied().ok_or(TableError::NotFound)?;
        if self.router.rif_refs.get(&rif).is_some_and(|&count| count > 0) {
            return Err(TableError::InUse);
        }
        self.unbind_rif(config.kind);
        self.router.rifs[usize::from(rif)] = None;
        self.router.refresh_router_macs();
        self.refresh_rif_mtus();
        self.neighbors.remove_rif(rif);
        Ok(())
    }

    /// Turns the ICMP redirects sent on a router interface on (the
    /// default) or off.
    pub fn set_send_redirects(&mut self, rif: RifId, enabled: bool) -> Result<(), TableError> {
        let slot = self
            .router
            .redirects_off
            .get_mut(usize::from(rif))
            .ok_or(TableError::Invalid("router interface id beyond max_router_interfaces"))?;
        *slot = !enabled;
        Ok(())
    }

    pub fn sends_redirects(&self, rif: RifId) -> bool {
        self.router.sends_redirects(rif)
    }

    pub fn router_interface(&self, rif: RifId) -> Option<RouterInterface> {
        self.router.rif(rif).copied()
    }

    // ---- VRFs ----

    /// Creates VRF `vrf` with an empty routing table.
    pub fn create_vrf(&mut self, vrf: VrfId) -> Result<(), TableError> {
        let index = usize::from(vrf);
        if index >= usize::from(self.config.max_vrfs) {
            return Err(TableError::Invalid("VRF id beyond max_vrfs"));
        }
        if self.router.fib(vrf).is_some() {
            return Err(TableError::InUse);
        }
        if self.router.fibs.len() <= index {
            self.router.fibs.resize_with(index + 1, || None);
        }
        self.router.fibs[index] = Some(Fib::new(self.config.dir24_min_routes));
        Ok(())
    }

    /// Removes a VRF no router interface is in and no route is left in; the
    /// default VRF stays.
    pub fn remove_vrf(&mut self, vrf: VrfId) -> Result<(), TableError> {
        if vrf == DEFAULT_VRF {
            return Err(TableError::Invalid("the default VRF cannot be removed"));
        }
        let fib = self.router.fib(vrf).ok_or(TableError::NotFound)?;
        if fib.len() > 0 || self.router.rifs.iter().flatten().any(|rif| rif.vrf == vrf) {
            return Err(TableError::InUse);
        }
        self.router.fibs[usize::from(vrf)] = None;
        Ok(())
    }

    pub fn vrf_exists(&self, vrf: VrfId) -> bool {
        self.router.fib(vrf).is_some()
    }

    /// The VRFs that exist, the default first.
    pub fn vrfs(&self) -> impl Iterator<Item = VrfId> + '_ {
        let others = self.router.fibs.iter().enumerate().skip(1).filter(|(_, fib)| fib.is_some());
        std::iter::once(DEFAULT_VRF).chain(others.map(|(vrf, _)| vrf as VrfId))
    }

    // ---- routes ----

    /// Installs or replaces the route for `prefix` (host bits are ignored)
    /// in the default VRF.
    pub fn set_route(&mut self, prefix: IpNetwork, target: RouteTarget) -> Result<(), TableError> {
        self.set_route_in(DEFAULT_VRF, prefix, target)
    }

    /// Installs or replaces the route for `prefix` in `vrf`. Its next hops
    /// may be in another VRF (route leaking).
    pub fn set_route_in(&mut self, vrf: VrfId, prefix: IpNetwork, target: RouteTarget) -> Result<(), TableError> {
        self.router.check_target(target)?;
        let old = self.router.fib(vrf).ok_or(TableError::Invalid("no such VRF"))?.get(prefix).map(|route| route.target);
        if old.is_none() && self.router.route_count >= self.router.route_capacity {
            return Err(TableError::Full);
        }
        if target == RouteTarget::Local && prefix.prefix() != prefix_max(prefix) {
            return Err(TableError::Invalid("a Local route is a host route (/32 or /128)"));
        }
        self.vxlan.route_cache.clear();
        let route = self.router.route_for(target);
        self.router.fib_mut(vrf)?.insert(prefix, route);
        if let Some(old) = old {
            self.router.reference(old, -1);
            self.forget_route_side_tables(prefix, old);
        } else {
            self.router.route_count += 1;
        }
        self.router.reference(target, 1);
        match (target, prefix) {
            (RouteTarget::Local, IpNetwork::V4(net)) => {
                self.router.local_v4.push(net.ip());
                self.router.own_v4.insert(net.ip());
                self.router.refresh_own_filter();
            }
            (RouteTarget::Local, IpNetwork::V6(net)) => {
                self.router.local_v6.push(net.ip());
                self.router.own_v6.insert(net.ip());
                self.router.refresh_own_filter();
            }
            (RouteTarget::Connected(rif), _) => self.router.connected.push((prefix, rif)),
            _ => {}
        }
        Ok(())
    }

    fn forget_route_side_tables(&mut self, prefix: IpNetwork, old: RouteTarget) {
        match (old, prefix) {
            (RouteTarget::Local, IpNetwork::V4(net)) => {
                self.router.local_v4.retain(|&addr| addr != net.ip());
                self.router.own_v4.remove(&net.ip());
                self.router.refresh_own_filter();
            }
            (RouteTarget::Local, IpNetwork::V6(net)) => {
                self.router.local_v6.retain(|&addr| addr != net.ip());
                self.router.own_v6.remove(&net.ip());
                self.router.refresh_own_filter();
            }
            (RouteTarget::Connected(rif), _) => self.router.connected.retain(|&(net, r)| {
                !(r == rif && net.network() == prefix.network() && net.prefix() == prefix.prefix())
            }),
            _ => {}
        }
    }

    pub fn remove_route(&mut self, prefix: IpNetwork) -> Result<(), TableError> {
        self.remove_route_in(DEFAULT_VRF, prefix)
    }

    pub fn remove_route_in(&mut self, vrf: VrfId, prefix: IpNetwork) -> Result<(), TableError> {
        let old = self.router.fib_mut(vrf)?.remove(prefix).ok_or(TableError::NotFound)?.target;
        self.vxlan.route_cache.clear();
        self.router.route_count -= 1;
        self.router.reference(old, -1);
        self.forget_route_side_tables(prefix, old);
        Ok(())
    }

    /// The route for exactly `prefix` in the default VRF.
    pub fn route(&self, prefix: IpNetwork) -> Option<RouteTarget> {
        self.route_in(DEFAULT_VRF, prefix)
    }

    pub fn route_in(&self, vrf: VrfId, prefix: IpNetwork) -> Option<RouteTarget> {
        self.router.fib(vrf)?.get(prefix).map(|route| route.target)
    }

    /// Longest-prefix match in the default VRF, as the pipeline does it.
    #[inline]
    pub fn lookup_route(&self, addr: IpAddr) -> Option<RouteTarget> {
        self.router.lookup(DEFAULT_VRF, addr)
    }

    #[inline]
    pub fn lookup_route_in(&self, vrf: VrfId, addr: IpAddr) -> Option<RouteTarget> {
        self.router.lookup(vrf, addr)
    }

    /// The routes of the default VRF.
    pub fn routes(&self) -> impl Iterator<Item = (IpNetwork, RouteTarget)> + '_ {
        self.routes_in(DEFAULT_VRF)
    }

    pub fn routes_in(&self, vrf: VrfId) -> impl Iterator<Item = (IpNetwork, RouteTarget)> + '_ {
        self.router.fib(vrf).into_iter().flat_map(|fib| fib.iter().map(|(prefix, route)| (prefix, route.target)))
    }

    /// Routes in all VRFs together.
    pub fn route_count(&self) -> usize {
        self.router.route_count
    }

    // ---- next hops and groups ----

    /// Creates or replaces a next hop: an IP neighbour behind a router interface.
    pub fn set_next_hop(&mut self, id: NextHopId, next_hop: NextHop) -> Result<(), TableError> {
        if self.router.rif(next_hop.rif).is_none() {
            return Err(TableError::Invalid("no such router interface"));
        }
        self.put_next_hop(Hop { id, next_hop, tunnel: None, rewrite: Rewrite::default() });
        Ok(())
    }

    /// Creates or replaces a next hop across the overlay.
    pub fn set_tunnel_next_hop(&mut self, id: NextHopId, tunnel: TunnelNextHop) -> Result<(), TableError> {
        if tunnel.vni > crate::wire::vxlan::VNI_MAX {
            return Err(TableError::Invalid("VNI is 24 bits"));
        }
        if tunnel.router_mac.is_multicast() || tunnel.router_mac == EthernetAddress::ZERO {
            return Err(TableError::Invalid("router MAC must be unicast"));
        }
        let next_hop = NextHop { rif: TUNNEL_RIF, ip: IpAddr::V4(tunnel.remote) };
        self.put_next_hop(Hop { id, next_hop, tunnel: Some(tunnel), rewrite: Rewrite::default() });
        Ok(())
    }

    /// The overlay part of a next hop, if it is a tunnel next hop.
    pub fn tunnel_next_hop(&self, id: NextHopId) -> Option<TunnelNextHop> {
        self.router.next_hops.get(&id).and_then(|&slot| self.router.hops[slot as usize].tunnel)
    }

    fn put_next_hop(&mut self, hop: Hop) {
        let router = &mut self.router;
        let (id, rif) = (hop.id, hop.rif());
        match router.next_hops.get(&id) {
            // Replaced in its slot: the routes and groups using it follow.
            Some(&slot) => {
                let old = std::mem::replace(&mut router.hops[slot as usize], hop);
                if let Some(old) = old.rif() {
                    *router.rif_refs.entry(old).or_default() -= 1;
                }
            }
            None => {
                let slot = match router.free_hops.pop() {
                    Some(slot) => {
                        router.hops[slot as usize] = hop;
                        slot
                    }
                    None => {
                        router.hops.push(hop);
                        (router.hops.len() - 1) as u32
                    }
                };
                router.next_hops.insert(id, slot);
            }
        }
        if let Some(rif) = rif {
            *router.rif_refs.entry(rif).or_default() += 1;
        }
        router.invalidate_rewrites();
    }

    pub fn remove_next_hop(&mut self, id: NextHopId) -> Result<(), TableError> {
        let Some(&slot) = self.router.next_hops.get(&id) else {
            return Err(TableError::NotFound);
        };
        if self.router.next_hop_refs.get(&id).is_some_and(|&count| count > 0) {
            return Err(TableError::InUse);
        }
        self.router.next_hops.remove(&id);
        self.router.free_hops.push(slot);
        let old = std::mem::take(&mut self.router.hops[slot as usize]);
        if let Some(rif) = old.rif() {
            *self.router.rif_refs.entry(rif).or_default() -= 1;
        }
        self.router.invalidate_rewrites();
        Ok(())
    }

    pub fn next_hop(&self, id: NextHopId) -> Option<NextHop> {
        self.router.next_hop(id)
    }

    /// Creates or replaces an ECMP group. Members may repeat (weights); an
    /// empty group drops what routes to it.
    pub fn set_next_hop_group(&mut self, id: NextHopGroupId, members: &[NextHopId]) -> Result<(), TableError> {
        if members.iter().any(|member| !self.router.next_hops.contains_key(member)) {
            return Err(TableError::Invalid("no such next hop"));
        }
        let router = &mut self.router;
        for &member in members {
            *router.next_hop_refs.entry(member).or_default() += 1;
        }
        let group = Group {
            id,
            ids: members.to_vec(),
            members: members.iter().map(|member| router.next_hops[member]).collect(),
        };
        match router.groups.get(&id) {
            Some(&slot) => {
                let old = std::mem::replace(&mut router.group_slots[slot as usize], group);
                for member in old.ids {
                    *router.next_hop_refs.entry(member).or_default() -= 1;
                }
            }
            None => {
                let slot = match router.free_groups.pop() {
                    Some(slot) => {
                        router.group_slots[slot as usize] = group;
                        slot
                    }
                    None => {
                        router.group_slots.push(group);
                        (router.group_slots.len() - 1) as u32
                    }
                };
                router.groups.insert(id, slot);
            }
        }
        Ok(())
    }

    pub fn remove_next_hop_group(&mut self, id: NextHopGroupId) -> Result<(), TableError> {
        let Some(&slot) = self.router.groups.get(&id) else {
            return Err(TableError::NotFound);
        };
        if self.router.group_refs.get(&id).is_some_and(|&count| count > 0) {
            return Err(TableError::InUse);
        }
        self.router.groups.remove(&id);
        self.router.free_groups.push(slot);
        for member in std::mem::take(&mut self.router.group_slots[slot as usize]).ids {
            *self.router.next_hop_refs.entry(member).or_default() -= 1;
        }
        Ok(())
    }

    pub fn next_hop_group(&self, id: NextHopGroupId) -> Option<&[NextHopId]> {
        self.router.groups.get(&id).map(|&slot| self.router.group_slots[slot as usize].ids.as_slice())
    }
}

/// A next hop and its cached rewrite.
pub(crate) struct Hop {
    pub(crate) id: NextHopId,
    pub(crate) next_hop: NextHop,
    /// Set for a next hop across the overlay (`next_hop.rif` is then `TUNNEL_RIF`).
    pub(crate) tunnel: Option<TunnelNextHop>,
    pub(crate) rewrite: Rewrite,
}

impl Hop {
    /// The router interface the next hop holds a reference on.
    fn rif(&self) -> Option<RifId> {
        self.tunnel.is_none().then_some(self.next_hop.rif)
    }
}

impl SlotIds for Router {
    #[inline]
    fn next_hop_id(&self, slot: u32) -> NextHopId {
        self.hops[slot as usize].id
    }

    #[inline]
    fn group_id(&self, slot: u32) -> NextHopGroupId {
        self.group_slots[slot as usize].id
    }
}

impl Default for Hop {
    fn default() -> Self {
        Hop {
            id: 0,
            next_hop: NextHop { rif: 0, ip: IpAddr::V4(Ipv4Addr::UNSPECIFIED) },
            tunnel: None,
            rewrite: Rewrite::default(),
        }
    }
}

/// Everything sending to a next hop needs, resolved (the adjacency of a
/// hardware FIB): egress port, MTU, destination and source MACs. Valid
/// while `generation` equals `Router::generation` (0: never).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Rewrite {
    pub(crate) generation: u64,
    pub(crate) port: PortId,
    pub(crate) mtu: u16,
    pub(crate) macs: [u8; 12],
}

/// An ECMP group: its member ids, and their slots for the packet path.
#[derive(Default)]
pub(crate) struct Group {
    id: NextHopGroupId,
    ids: Vec<NextHopId>,
    pub(crate) members: Vec<u32>,
}

fn prefix_max(prefix: IpNetwork) -> u8 {
    match prefix {
        IpNetwork::V4(_) => 32,
        IpNetwork::V6(_) => 128,
    }
}
