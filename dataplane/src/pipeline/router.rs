//! Layer 3: router interfaces (SVIs and routed ports) and their VRFs, the
//! per-VRF route tables (`tables::fib`), next hops and ECMP groups, and the
//! forwarding of IPv4 and IPv6 packets.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnetwork::IpNetwork;
use rustc_hash::{FxHashMap, FxHashSet};

use super::bridge::{BridgeSource, BridgedFrame};
use super::icmp::{Icmpv4Error, Icmpv6Error};
use super::output::{Output, PuntReason};
use super::tables::fib::{Fib, NO_SLOT, Route, RouteTarget, SlotIds};
use super::tables::{DEFAULT_VRF, VrfId};
use super::{
    Disposition, DropReason, Egress, FdbDest, NextHopGroupId, NextHopId, PortId, RifId, Switch, SwitchConfig,
    TableError,
};
use crate::wire::icmpv6::{self, Icmpv6Message};
use crate::wire::{
    Ecn, EtherType, EthernetAddress, EthernetFrame, EthernetRepr, Icmpv4Packet, Icmpv4Repr, Icmpv6Packet, Icmpv6Repr,
    IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, UdpPacket, VlanId, ethernet, ipv4, ipv6,
};

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

/// A frame handed to the router: its MACs, EtherType and layer-3 payload.
#[derive(Debug, Clone, Copy)]
pub(crate) struct L3Frame<'a> {
    pub(crate) dst: EthernetAddress,
    pub(crate) src: EthernetAddress,
    pub(crate) ethertype: EtherType,
    pub(crate) payload: &'a [u8],
}

/// The router interface a frame arrived on, and how it got there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum L3Source {
    Port { port: PortId, rif: RifId },
    Svi { source: BridgeSource, vid: VlanId, rif: RifId },
}

impl L3Source {
    pub(crate) fn rif(self) -> RifId {
        match self {
            L3Source::Port { rif, .. } | L3Source::Svi { rif, .. } => rif,
        }
    }

    pub(crate) fn ingress_port(self) -> Option<PortId> {
        match self {
            L3Source::Port { port, .. } => Some(port),
            L3Source::Svi { source, .. } => source.ingress_port(),
        }
    }
}

pub(crate) struct Router {
    pub(crate) rifs: Vec<Option<RouterInterface>>,
    /// One table per VRF, indexed by its id; `None` where no VRF is.
    fibs: Vec<Option<Fib>>,
    route_count: usize,
    route_capacity: usize,
    /// Next hops and groups by id: their slots in `hops` and `group_slots`,
    /// which routes carry so that the packet path indexes, never hashes.
    next_hops: FxHashMap<NextHopId, u32>,
    pub(crate) hops: Vec<Hop>,
    free_hops: Vec<u32>,
    groups: FxHashMap<NextHopGroupId, u32>,
    group_slots: Vec<Group>,
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
}

impl Router {
    pub(crate) fn new(config: &SwitchConfig) -> Router {
        Router {
            rifs: (0..config.max_router_interfaces).map(|_| None).collect(),
            fibs: std::iter::once(Some(Fib::new(config.dir24_min_routes))).collect(),
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
        }
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

    /// The table of `vrf`, if that VRF exists.
    #[inline]
    pub(crate) fn fib(&self, vrf: VrfId) -> Option<&Fib> {
        self.fibs.get(usize::from(vrf))?.as_ref()
    }

    fn fib_mut(&mut self, vrf: VrfId) -> Result<&mut Fib, TableError> {
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
            .or_else(|| self.local_v6.iter().find(|addr| on_rif(addr, false)))
            .or(self.local_v6.first())
            .copied()
    }
}

impl Switch {
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
        self.router.invalidate_rewrites();
        Ok(())
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
        self.router.invalidate_rewrites();
        self.neighbors.remove_rif(rif);
        Ok(())
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
        if self.router.fibs.get(index).is_some_and(Option::is_some) {
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
        self.router.fibs.iter().enumerate().filter(|(_, fib)| fib.is_some()).map(|(vrf, _)| vrf as VrfId)
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
    pub fn lookup_route(&self, addr: IpAddr) -> Option<RouteTarget> {
        self.router.lookup(DEFAULT_VRF, addr)
    }

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
        let router = &mut self.router;
        let hop = Hop { id, next_hop, rewrite: Rewrite::default() };
        match router.next_hops.get(&id) {
            // Replaced in its slot: the routes and groups using it follow.
            Some(&slot) => {
                let old = std::mem::replace(&mut router.hops[slot as usize], hop);
                *router.rif_refs.entry(old.next_hop.rif).or_default() -= 1;
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
        *router.rif_refs.entry(next_hop.rif).or_default() += 1;
        router.invalidate_rewrites();
        Ok(())
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
        *self.router.rif_refs.entry(old.next_hop.rif).or_default() -= 1;
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

    // ---- forwarding ----

    /// A frame addressed to a router interface's MAC (or any frame on a
    /// routed port): ARP, IPv4, IPv6.
    pub(crate) fn l3_ingress(
        &mut self,
        now: u64,
        source: L3Source,
        frame: L3Frame<'_>,
        out: &mut Output,
    ) -> Disposition {
        match self.l3_dispatch(now, source, frame, out) {
            Ok(disposition) => disposition,
            Err(reason) => self.drop(source.ingress_port(), reason),
        }
    }

    /// A broadcast or multicast frame the SVI hears while the bridge floods
    /// it: the router answers what is for it (ARP, NS) and copies control
    /// traffic to the host; the flood already counted the frame, so what the
    /// router cannot use is not a drop.
    pub(crate) fn l3_group_ingress(
        &mut self,
        now: u64,
        source: L3Source,
        frame: L3Frame<'_>,
        out: &mut Output,
    ) -> Disposition {
        match frame.ethertype {
            EtherType::Arp | EtherType::Ipv4 | EtherType::Ipv6 => {
                self.l3_dispatch(now, source, frame, out).unwrap_or(Disposition::Flooded)
            }
            _ => Disposition::Flooded,
        }
    }

    fn l3_dispatch(
        &mut self,
        now: u64,
        source: L3Source,
        frame: L3Frame<'_>,
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let rif = match self.router.rif(source.rif()) {
            Some(rif) if rif.admin_up => *rif,
            _ => return Err(DropReason::RouterInterfaceDown),
        };
        if frame.dst != rif.mac && !frame.dst.is_multicast() {
            return Err(DropReason::NotRouterMac);
        }
        match frame.ethertype {
            EtherType::Arp => self.arp_ingress(now, source, rif, frame, out),
            EtherType::Ipv4 => self.ipv4_ingress(now, source, rif.vrf, frame, out),
            EtherType::Ipv6 => self.ipv6_ingress(now, source, rif, frame, out),
            _ => Err(DropReason::UnknownEtherType),
        }
    }

    fn ipv4_ingress(
        &mut self,
        now: u64,
        source: L3Source,
        vrf: VrfId,
        frame: L3Frame<'_>,
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let packet = Ipv4Packet::new_checked(frame.payload).map_err(|_| DropReason::Malformed)?;
        if packet.version() != 4 {
            return Err(DropReason::Malformed);
        }
        if !packet.verify_checksum() {
            return Err(DropReason::BadChecksum);
        }
        let total_len = usize::from(packet.total_len());
        let ip = &frame.payload[..total_len];
        let (src, dst) = (packet.src_addr(), packet.dst_addr());
        // RFC 1812 section 5.3.7: no group, loopback or own source address
        // arrives from outside (0.0.0.0 does: DHCP clients).
        if src.is_multicast() || src.is_broadcast() || src.is_loopback() || self.router.is_own_v4(src) {
            return Err(DropReason::MartianSource);
        }
        if dst.is_broadcast() || dst.is_multicast() || frame.dst.is_multicast() {
            // Routing protocols, DHCP: link-local control traffic (224.0.0.0/24,
            // RFC 5771) is the host's. Multicast routing is not done here.
            let link_local = dst.is_broadcast() || dst.octets()[..3] == [224, 0, 0];
            if !link_local {
                return Err(DropReason::Unsupported);
            }
            self.punt_l3(source, frame, ip, PuntReason::LinkLocalMulticast, out);
            return Ok(Disposition::Punted);
        }
        // The VTEP lives in the underlay: the default VRF.
        if let Some(vtep) = self.vxlan.config
            && vrf == DEFAULT_VRF
            && dst == vtep.source_ip
            && packet.protocol() == IpProtocol::Udp
            && !packet.is_fragment()
        {
            let udp = UdpPacket::new_checked(packet.payload()).map_err(|_| DropReason::Malformed)?;
            if udp.dst_port() == vtep.udp_port {
                return self.vxlan_decap(now, source, src, packet.ecn(), udp.payload(), out);
            }
        }
        let Some(route) = self.router.lookup_v4(vrf, dst) else {
            self.icmpv4_error(now, source, ip, Icmpv4Error::NetUnreachable, out);
            return Err(DropReason::NoRoute);
        };
        match route.target {
            RouteTarget::Local => return self.ipv4_local(now, source, frame, ip, out),
            RouteTarget::Punt => {
                self.punt_l3(source, frame, ip, PuntReason::RouteTrap, out);
                return Ok(Disposition::Punted);
            }
            RouteTarget::Drop => return Err(DropReason::Blackhole),
            // RFC 2644: directed broadcasts are not forwarded by default;
            // and the broadcast address is no neighbour to resolve.
            RouteTarget::Connected(rif) if self.router.is_subnet_broadcast(Some(rif), dst) => {
                return Err(DropReason::DirectedBroadcast);
            }
            RouteTarget::Connected(_) | RouteTarget::NextHop(_) | RouteTarget::Group(_) => {}
        }
        if packet.ttl() <= 1 {
            self.icmpv4_error(now, source, ip, Icmpv4Error::TimeExceeded, out);
            return Err(DropReason::TtlExpired);
        }
        let adjacency = self.select_next_hop(now, route, IpAddr::V4(dst), || {
            let ports = if packet.is_fragment() { 0 } else { transport_ports(packet.protocol(), packet.payload()) };
            flow_hash(u128::from(u32::from(src)), u128::from(u32::from(dst)), packet.protocol().into(), ports)
        })?;
        let mtu = self.router.rif(adjacency.rif).map_or(0, |rif| usize::from(rif.mtu));
        if total_len > mtu {
            // No fragmentation in the fast path; RFC 1191 tells DF senders.
            if packet.dont_frag() {
                self.icmpv4_error(now, source, ip, Icmpv4Error::FragRequired(mtu as u16), out);
            }
            return Err(DropReason::MtuExceeded);
        }
        self.send_ip(now, adjacency, EtherType::Ipv4, total_len, out, |buf| {
            buf.copy_from_slice(ip);
            // RFC 1812 section 5.3.1, with the RFC 1624 checksum update.
            Ipv4Packet::new_unchecked(buf).decrement_ttl_incremental();
        })?;
        Ok(Disposition::Forwarded)
    }

    /// An IPv4 packet to one of the switch's addresses: echo is answered
    /// here, the rest goes to the host.
    fn ipv4_local(
        &mut self,
        now: u64,
        source: L3Source,
        frame: L3Frame<'_>,
        ip: &[u8],
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let packet = Ipv4Packet::new_unchecked(ip);
        if packet.protocol() == IpProtocol::Icmp && !packet.is_fragment() {
            let icmp = Icmpv4Packet::new_checked(packet.payload()).map_err(|_| DropReason::Malformed)?;
            if let Ok(Icmpv4Repr::EchoRequest { ident, seq_no, data }) = Icmpv4Repr::parse(&icmp) {
                let reply = Icmpv4Repr::EchoReply { ident, seq_no, data };
                self.originate_v4(
                    now,
                    self.router.rif_vrf(source.rif()),
                    Some(packet.dst_addr()),
                    packet.src_addr(),
                    IpProtocol::Icmp,
                    reply.buffer_len(),
                    out,
                    |buf| reply.emit(&mut Icmpv4Packet::new_unchecked(buf)),
                )?;
                return Ok(Disposition::Consumed);
            }
        }
        self.punt_l3(source, frame, ip, PuntReason::Ip2Me, out);
        Ok(Disposition::Punted)
    }

    fn ipv6_ingress(
        &mut self,
        now: u64,
        source: L3Source,
        rif: RouterInterface,
        frame: L3Frame<'_>,
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let packet = Ipv6Packet::new_checked(frame.payload).map_err(|_| DropReason::Malformed)?;
        if packet.version() != 6 {
            return Err(DropReason::Malformed);
        }
        let total_len = ipv6::HEADER_LEN + usize::from(packet.payload_len());
        let ip = &frame.payload[..total_len];
        let (src, dst) = (packet.src_addr(), packet.dst_addr());
        // RFC 4291 2.7 and 2.5.3: a group or loopback address is never a
        // source; one of our own from outside is a martian too.
        if src.is_multicast() || src.is_loopback() || self.router.is_own_v6(src) {
            return Err(DropReason::MartianSource);
        }
        if dst.is_multicast() {
            // Only link-scope groups (all-nodes, solicited-node, routers,
            // routing protocols: ff02::/16) concern the router.
            if dst.segments()[0] & 0xff0f != 0xff02 {
                return Err(DropReason::Unsupported);
            }
            return self.ipv6_local(now, source, rif, frame, ip, out);
        }
        let Some(route) = self.router.lookup_v6(rif.vrf, dst) else {
            self.icmpv6_error(now, source, ip, Icmpv6Error::NoRoute, out);
            return Err(DropReason::NoRoute);
        };
        match route.target {
            RouteTarget::Local => return self.ipv6_local(now, source, rif, frame, ip, out),
            RouteTarget::Punt => {
                self.punt_l3(source, frame, ip, PuntReason::RouteTrap, out);
                return Ok(Disposition::Punted);
            }
            RouteTarget::Drop => return Err(DropReason::Blackhole),
            RouteTarget::Connected(_) | RouteTarget::NextHop(_) | RouteTarget::Group(_) => {}
        }
        if dst.is_unicast_link_local() || src.is_unicast_link_local() {
            // RFC 4291 section 2.5.6: link-local packets are never forwarded.
            return Err(DropReason::NoRoute);
        }
        if packet.hop_limit() <= 1 {
            self.icmpv6_error(now, source, ip, Icmpv6Error::TimeExceeded, out);
            return Err(DropReason::TtlExpired);
        }
        let adjacency = self.select_next_hop(now, route, IpAddr::V6(dst), || {
            let (protocol, ports) = match packet.upper_layer() {
                Ok(upper) if upper.fragment.is_none() => (
                    upper.protocol,
                    transport_ports(upper.protocol, packet.payload().get(upper.offset..).unwrap_or(&[])),
                ),
                Ok(upper) => (upper.protocol, 0),
                Err(_) => (packet.next_header(), 0),
            };
            flow_hash(u128::from(src), u128::from(dst), protocol.into(), ports ^ packet.flow_label())
        })?;
        let mtu = self.router.rif(adjacency.rif).map_or(0, |rif| usize::from(rif.mtu));
        if total_len > mtu {
            self.icmpv6_error(now, source, ip, Icmpv6Error::PacketTooBig(mtu as u32), out);
            return Err(DropReason::MtuExceeded);
        }
        self.send_ip(now, adjacency, EtherType::Ipv6, total_len, out, |buf| {
            buf.copy_from_slice(ip);
            Ipv6Packet::new_unchecked(buf).decrement_hop_limit();
        })?;
        Ok(Disposition::Forwarded)
    }

    /// An IPv6 packet to the switch or to a multicast group: neighbour
    /// discovery and echo are handled here, the rest goes to the host.
    fn ipv6_local(
        &mut self,
        now: u64,
        source: L3Source,
        rif: RouterInterface,
        frame: L3Frame<'_>,
        ip: &[u8],
        out: &mut Output,
    ) -> Result<Disposition, DropReason> {
        let packet = Ipv6Packet::new_unchecked(ip);
        let (src, dst) = (packet.src_addr(), packet.dst_addr());
        let punt_reason = if dst.is_multicast() { PuntReason::LinkLocalMulticast } else { PuntReason::Ip2Me };
        let upper = packet.upper_layer().map_err(|_| DropReason::Malformed)?;
        if upper.protocol == IpProtocol::Icmpv6 && upper.fragment.is_none() {
            let icmp_bytes = packet.payload().get(upper.offset..).ok_or(DropReason::Malformed)?;
            let icmp = Icmpv6Packet::new_checked(icmp_bytes).map_err(|_| DropReason::Malformed)?;
            let is_nd = matches!(icmp.msg_type(), Icmpv6Message::NeighborSolicit | Icmpv6Message::NeighborAdvert);
            match Icmpv6Repr::parse(&icmp, src, dst) {
                Ok(repr @ (Icmpv6Repr::NeighborSolicit { .. } | Icmpv6Repr::NeighborAdvert { .. })) => {
                    // RFC 4861 section 7.1: a hop limit below 255 means the
                    // message crossed a router and may be forged.
                    if packet.hop_limit() != icmpv6::ND_HOP_LIMIT {
                        return Err(DropReason::Malformed);
                    }
                    return self.ndp_ingress(now, source, rif, frame, ip, repr, out);
                }
                Ok(Icmpv6Repr::EchoRequest { ident, seq_no, data }) if !dst.is_multicast() => {
                    let reply = Icmpv6Repr::EchoReply { ident, seq_no, data };
                    let len = reply.buffer_len();
                    self.originate_v6(now, rif.vrf, Some(dst), src, IpProtocol::Icmpv6, len, out, |buf, from, to| {
                        reply.emit(&mut Icmpv6Packet::new_unchecked(buf), from, to)
                    })?;
                    return Ok(Disposition::Consumed);
                }
                Err(_) if is_nd => return Err(DropReason::Malformed),
                _ => {}
            }
        }
        self.punt_l3(source, frame, ip, punt_reason, out);
        Ok(Disposition::Punted)
    }

    /// The next hop `route` gives for `dst`; for an ECMP group, the member
    /// the flow `hash` picks (computed only then), mixed with this switch's
    /// seed so that the tiers of a Clos do not all hash alike, or the member
    /// the path-quality hook (dynamic load balancing) prefers at `now`.
    /// Array indexing only: the route carries its next hop's or group's slot.
    #[inline]
    pub(crate) fn select_next_hop(
        &mut self,
        now: u64,
        route: Route,
        dst: IpAddr,
        hash: impl FnOnce() -> u32,
    ) -> Result<Adjacency, DropReason> {
        let slot = match route.target {
            RouteTarget::Connected(rif) => return Ok(Adjacency { rif, next_hop: dst, slot: NO_SLOT }),
            RouteTarget::NextHop(_) => route.slot,
            RouteTarget::Group(id) => {
                let members = &self.router.group_slots.get(route.slot as usize).ok_or(DropReason::NoRoute)?.members;
                if members.is_empty() {
                    return Err(DropReason::Blackhole);
                }
                let hash = seeded_hash(hash(), self.config.hash_seed);
                self.call_flow_hash = hash;
                // Multiply-shift maps the hash onto the members without a division.
                let static_index = ((u64::from(hash) * members.len() as u64) >> 32) as usize;
                let index = match self.path_quality.as_mut() {
                    Some(quality) => {
                        let chosen = quality.choose(now, id, hash, members.len(), static_index);
                        if chosen < members.len() { chosen } else { static_index }
                    }
                    None => static_index,
                };
                members[index]
            }
            RouteTarget::Drop => return Err(DropReason::Blackhole),
            RouteTarget::Local | RouteTarget::Punt => return Err(DropReason::NoRoute),
        };
        let next_hop = self.router.hops.get(slot as usize).ok_or(DropReason::NoRoute)?.next_hop;
        Ok(Adjacency { rif: next_hop.rif, next_hop: next_hop.ip, slot })
    }

    /// Sends an IP packet of `ip_len` bytes (written by `write`) to a
    /// neighbour: MTU, resolution (a miss starts it and drops the packet),
    /// then out of the router interface.
    #[inline]
    pub(crate) fn send_ip(
        &mut self,
        now: u64,
        adjacency: Adjacency,
        ethertype: EtherType,
        ip_len: usize,
        out: &mut Output,
        write: impl FnOnce(&mut [u8]),
    ) -> Result<(), DropReason> {
        // The fast path: a next hop on a routed port with a usable
        // neighbour has its rewrite cached; one index, no lookups.
        if let Some(hop) = self.router.hops.get(adjacency.slot as usize)
            && hop.rewrite.generation == self.router.generation
        {
            let rewrite = hop.rewrite;
            if ip_len > usize::from(rewrite.mtu) {
                return Err(DropReason::MtuExceeded);
            }
            let buf = out.push(Egress::Port(rewrite.port), ethernet::HEADER_LEN + ip_len);
            buf[..12].copy_from_slice(&rewrite.macs);
            buf[12..14].copy_from_slice(&u16::from(ethertype).to_be_bytes());
            write(&mut buf[ethernet::HEADER_LEN..]);
            return Ok(());
        }
        let rif = match self.router.rif(adjacency.rif) {
            Some(rif) if rif.admin_up => *rif,
            _ => return Err(DropReason::RouterInterfaceDown),
        };
        if ip_len > usize::from(rif.mtu) {
            return Err(DropReason::MtuExceeded);
        }
        let mac = self.resolve_neighbor(now, adjacency.rif, adjacency.next_hop, out).ok_or(DropReason::NeighborMiss)?;
        self.rif_send_frame(now, adjacency.rif, mac, ethertype, ip_len, out, write)?;
        self.cache_rewrite(adjacency, rif, mac);
        Ok(())
    }

    /// Caches the rewrite of a next hop that was just sent to, if the next
    /// packet may skip the checks: a routed port that is up, and a neighbour
    /// whose MAC is used as is (Reachable, Probe or static: no state change
    /// on use). SVIs keep the slow path (the FDB decides the port).
    fn cache_rewrite(&mut self, adjacency: Adjacency, rif: RouterInterface, mac: EthernetAddress) {
        let Some(hop) = self.router.hops.get(adjacency.slot as usize) else { return };
        if hop.next_hop.rif != adjacency.rif {
            return;
        }
        let RifKind::Port(port) = rif.kind else { return };
        if !self.port(port).is_some_and(|p| p.is_up()) {
            return;
        }
        let usable = self.neighbors.entries.get(&(adjacency.rif, adjacency.next_hop)).is_some_and(|neighbor| {
            neighbor.entry.mac == Some(mac)
                && matches!(neighbor.entry.state, super::NeighborState::Reachable | super::NeighborState::Probe)
        });
        if !usable {
            return;
        }
        let mut macs = [0u8; 12];
        macs[..6].copy_from_slice(&mac.0);
        macs[6..].copy_from_slice(&rif.mac.0);
        let generation = self.router.generation;
        self.router.hops[adjacency.slot as usize].rewrite = Rewrite { generation, port, mtu: rif.mtu, macs };
    }

    /// Sends a frame with `rif`'s MAC as source: directly out of a routed
    /// port, or bridged in an SVI's VLAN (FDB lookup, remote VTEP, flood).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rif_send_frame(
        &mut self,
        now: u64,
        rif: RifId,
        dst: EthernetAddress,
        ethertype: EtherType,
        len: usize,
        out: &mut Output,
        write: impl FnOnce(&mut [u8]),
    ) -> Result<(), DropReason> {
        let Some(config) = self.router.rif(rif).copied() else {
            return Err(DropReason::RouterInterfaceDown);
        };
        match config.kind {
            RifKind::Port(port) => {
                if !self.port(port).is_some_and(|p| p.is_up()) {
                    self.count_tx_drop(port);
                    return Err(DropReason::EgressPortDown);
                }
                let header = EthernetRepr { dst_addr: dst, src_addr: config.mac, ethertype };
                self.emit_port(port, ethernet::HEADER_LEN + len, out, |buf| {
                    header.emit(&mut EthernetFrame::new_unchecked(&mut *buf));
                    write(&mut buf[ethernet::HEADER_LEN..]);
                });
                Ok(())
            }
            RifKind::Vlan(vid) => {
                // The frame is built once in a scratch buffer, then bridged
                // (copied per egress port, or encapsulated).
                let mut scratch = self.scratch.pop().unwrap_or_default();
                scratch.clear();
                scratch.resize(2 + len, 0);
                scratch[..2].copy_from_slice(&u16::from(ethertype).to_be_bytes());
                write(&mut scratch[2..]);
                let frame = BridgedFrame { dst, src: config.mac, pcp: 0, body: &scratch };
                let result = match self.bridge.fdb.get(&super::fdb_key(vid, dst)).map(|entry| entry.dest) {
                    Some(FdbDest::Port(port)) if !dst.is_multicast() => self.send_bridged(port, vid, frame, out),
                    Some(FdbDest::Tunnel(remote)) if !dst.is_multicast() => {
                        self.vxlan_encap(now, vid, remote, frame, out)
                    }
                    _ => {
                        self.flood(now, BridgeSource::Cpu, vid, frame, out);
                        Ok(())
                    }
                };
                self.scratch.push(scratch);
                result
            }
        }
    }

    /// Sends an IPv4 packet the switch originates (ICMP): routed like any
    /// other in `vrf`, from `src` or the outgoing interface's address.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn originate_v4(
        &mut self,
        now: u64,
        vrf: VrfId,
        src: Option<Ipv4Addr>,
        dst: Ipv4Addr,
        protocol: IpProtocol,
        payload_len: usize,
        out: &mut Output,
        write_payload: impl FnOnce(&mut [u8]),
    ) -> Result<(), DropReason> {
        let route = self.router.lookup_v4(vrf, dst).ok_or(DropReason::NoRoute)?;
        let adjacency = self.select_next_hop(now, route, IpAddr::V4(dst), || {
            flow_hash(
                u128::from(u32::from(src.unwrap_or(Ipv4Addr::UNSPECIFIED))),
                u128::from(u32::from(dst)),
                protocol.into(),
                0,
            )
        })?;
        let src = src.or_else(|| self.router.source_v4(adjacency.rif, dst)).ok_or(DropReason::NoRoute)?;
        let repr = Ipv4Repr {
            src_addr: src,
            dst_addr: dst,
            protocol,
            payload_len,
            ttl: 64,
            dscp: 0,
            ecn: Ecn::NotEct,
            ident: 0,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
        };
        self.send_ip(now, adjacency, EtherType::Ipv4, repr.buffer_len(), out, |buf| {
            repr.emit(&mut Ipv4Packet::new_unchecked(&mut *buf));
            write_payload(&mut buf[ipv4::HEADER_LEN..]);
        })
    }

    /// Sends an IPv6 packet the switch originates; `write_payload` gets the
    /// payload buffer and the source and destination (for its checksum).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn originate_v6(
        &mut self,
        now: u64,
        vrf: VrfId,
        src: Option<Ipv6Addr>,
        dst: Ipv6Addr,
        protocol: IpProtocol,
        payload_len: usize,
        out: &mut Output,
        write_payload: impl FnOnce(&mut [u8], Ipv6Addr, Ipv6Addr),
    ) -> Result<(), DropReason> {
        let route = self.router.lookup_v6(vrf, dst).ok_or(DropReason::NoRoute)?;
        let adjacency = self.select_next_hop(now, route, IpAddr::V6(dst), || {
            flow_hash(u128::from(src.unwrap_or(Ipv6Addr::UNSPECIFIED)), u128::from(dst), protocol.into(), 0)
        })?;
        let src = src.or_else(|| self.router.source_v6(adjacency.rif, dst)).ok_or(DropReason::NoRoute)?;
        let repr = Ipv6Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: protocol,
            payload_len,
            hop_limit: 64,
            dscp: 0,
            ecn: Ecn::NotEct,
            flow_label: 0,
        };
        self.send_ip(now, adjacency, EtherType::Ipv6, repr.buffer_len(), out, |buf| {
            repr.emit(&mut Ipv6Packet::new_unchecked(&mut *buf));
            write_payload(&mut buf[ipv6::HEADER_LEN..], src, dst);
        })
    }

    /// Gives an L3 packet to the host, untagged, as the kernel's interface
    /// for the router interface expects it.
    pub(crate) fn punt_l3(
        &mut self,
        source: L3Source,
        frame: L3Frame<'_>,
        ip: &[u8],
        reason: PuntReason,
        out: &mut Output,
    ) {
        let Some(port) = source.ingress_port() else { return };
        let to = Egress::Host { port, rif: Some(source.rif()), reason };
        let buf = out.push(to, ethernet::HEADER_LEN + ip.len());
        let header = EthernetRepr { dst_addr: frame.dst, src_addr: frame.src, ethertype: frame.ethertype };
        header.emit(&mut EthernetFrame::new_unchecked(&mut *buf));
        buf[ethernet::HEADER_LEN..].copy_from_slice(ip);
    }
}

/// A next hop and its cached rewrite.
pub(crate) struct Hop {
    id: NextHopId,
    pub(crate) next_hop: NextHop,
    rewrite: Rewrite,
}

impl SlotIds for Router {
    fn next_hop_id(&self, slot: u32) -> NextHopId {
        self.hops[slot as usize].id
    }

    fn group_id(&self, slot: u32) -> NextHopGroupId {
        self.group_slots[slot as usize].id
    }
}

impl Default for Hop {
    fn default() -> Self {
        Hop { id: 0, next_hop: NextHop { rif: 0, ip: IpAddr::V4(Ipv4Addr::UNSPECIFIED) }, rewrite: Rewrite::default() }
    }
}

/// Everything sending to a next hop needs, resolved (the adjacency of a
/// hardware FIB): egress port, MTU, destination and source MACs. Valid
/// while `generation` equals `Router::generation` (0: never).
#[derive(Debug, Clone, Copy, Default)]
struct Rewrite {
    generation: u64,
    port: PortId,
    mtu: u16,
    macs: [u8; 12],
}

/// An ECMP group: its member ids, and their slots for the packet path.
#[derive(Default)]
pub(crate) struct Group {
    id: NextHopGroupId,
    ids: Vec<NextHopId>,
    members: Vec<u32>,
}

/// A resolved next hop: the neighbour `next_hop` behind `rif`, and the
/// next hop's slot when it is one (not a connected destination).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Adjacency {
    pub(crate) rif: RifId,
    pub(crate) next_hop: IpAddr,
    slot: u32,
}

/// The source and destination ports of a TCP or UDP header (0 for other
/// protocols), for the flow hash; both protocols start with them.
#[inline]
pub(crate) fn transport_ports(protocol: IpProtocol, l4: &[u8]) -> u32 {
    match (protocol, l4.get(..4)) {
        (IpProtocol::Tcp | IpProtocol::Udp, Some(ports)) => {
            u32::from_be_bytes([ports[0], ports[1], ports[2], ports[3]])
        }
        _ => 0,
    }
}

/// A flow hash mixed with a per-switch seed (one multiply and xor-shift):
/// with seed 0 the hash is used as it is.
#[inline]
pub(crate) fn seeded_hash(hash: u32, seed: u64) -> u32 {
    if seed == 0 {
        return hash;
    }
    let mut h = (u64::from(hash) ^ seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^= h >> 29;
    h as u32 ^ (h >> 32) as u32
}

/// The ECMP hash of a 5-tuple: the fields folded into 64 bits, then
/// MurmurHash3's finaliser so that every input bit moves the result.
#[inline]
pub(crate) fn flow_hash(src: u128, dst: u128, protocol: u8, ports: u32) -> u32 {
    let fold = |addr: u128| (addr as u64) ^ ((addr >> 64) as u64).rotate_left(29);
    let mut h = fold(src) ^ fold(dst).rotate_left(32) ^ (u64::from(protocol) << 40) ^ u64::from(ports).rotate_left(13);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h as u32
}

fn prefix_max(prefix: IpNetwork) -> u8 {
    match prefix {
        IpNetwork::V4(_) => 32,
        IpNetwork::V6(_) => 128,
    }
}
