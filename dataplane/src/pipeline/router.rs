//! Layer 3: router interfaces (SVIs and routed ports), the IPv4 and IPv6
//! route tables (longest-prefix match), next hops and ECMP groups, and the
//! forwarding of IPv4 and IPv6 packets.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnetwork::{IpNetwork, Ipv4Network, Ipv6Network};
use prefix_trie::PrefixMap;
use rustc_hash::FxHashMap;

use super::bridge::BridgeSource;
use super::output::Output;
use super::{
    Disposition, DropReason, NextHopGroupId, NextHopId, PortId, RifId, Switch, SwitchConfig,
    TableError,
};
use crate::wire::{EtherType, EthernetAddress, VlanId};

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
}

/// What a route points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteTarget {
    /// An address of the switch ("ip2me"): answer ARP/NS and echo, punt the rest.
    Local,
    /// A directly attached subnet: the next hop is the destination itself.
    Connected(RifId),
    NextHop(NextHopId),
    /// ECMP: the member is chosen by a hash of the 5-tuple.
    Group(NextHopGroupId),
    /// Blackhole.
    Drop,
    /// Trap to the host.
    Punt,
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
    Port {
        port: PortId,
        rif: RifId,
    },
    Svi {
        source: BridgeSource,
        vid: VlanId,
        rif: RifId,
    },
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
    pub(crate) v4: PrefixMap<(u32, u8), RouteTarget>,
    pub(crate) v6: PrefixMap<(u128, u8), RouteTarget>,
    route_count: usize,
    route_capacity: usize,
    pub(crate) next_hops: FxHashMap<NextHopId, NextHop>,
    pub(crate) groups: FxHashMap<NextHopGroupId, Vec<NextHopId>>,
    /// Routes and groups that use a next hop, routes that use a group,
    /// routes and next hops that use a router interface.
    next_hop_refs: FxHashMap<NextHopId, u32>,
    group_refs: FxHashMap<NextHopGroupId, u32>,
    rif_refs: FxHashMap<RifId, u32>,
    /// The switch's own addresses (`Local` host routes), for the source of
    /// the packets it originates.
    pub(crate) local_v4: Vec<Ipv4Addr>,
    pub(crate) local_v6: Vec<Ipv6Addr>,
    /// Connected subnets, to pick the source address on an interface.
    pub(crate) connected: Vec<(IpNetwork, RifId)>,
}

impl Router {
    pub(crate) fn new(config: &SwitchConfig) -> Router {
        Router {
            rifs: (0..config.max_router_interfaces).map(|_| None).collect(),
            v4: PrefixMap::new(),
            v6: PrefixMap::new(),
            route_count: 0,
            route_capacity: config.route_capacity,
            next_hops: FxHashMap::default(),
            groups: FxHashMap::default(),
            next_hop_refs: FxHashMap::default(),
            group_refs: FxHashMap::default(),
            rif_refs: FxHashMap::default(),
            local_v4: Vec::new(),
            local_v6: Vec::new(),
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

    #[inline]
    pub(crate) fn lookup_v4(&self, addr: Ipv4Addr) -> Option<RouteTarget> {
        self.v4
            .get_lpm(&(u32::from(addr), 32))
            .map(|(_, target)| *target)
    }

    #[inline]
    pub(crate) fn lookup_v6(&self, addr: Ipv6Addr) -> Option<RouteTarget> {
        self.v6
            .get_lpm(&(u128::from(addr), 128))
            .map(|(_, target)| *target)
    }

    pub(crate) fn lookup(&self, addr: IpAddr) -> Option<RouteTarget> {
        match addr {
            IpAddr::V4(addr) => self.lookup_v4(addr),
            IpAddr::V6(addr) => self.lookup_v6(addr),
        }
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
                *r == rif
                    && net.contains(IpAddr::V4(*addr))
                    && (!want_toward || net.contains(IpAddr::V4(toward)))
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
                *r == rif
                    && net.contains(IpAddr::V6(*addr))
                    && (!want_toward || net.contains(IpAddr::V6(toward)))
            })
        };
        // A link-local destination needs a link-local source (RFC 4291 2.5.6).
        let link_local =
            |addr: &&Ipv6Addr| addr.is_unicast_link_local() == toward.is_unicast_link_local();
        self.local_v6
            .iter()
            .filter(link_local)
            .find(|addr| on_rif(addr, true))
            .or_else(|| {
                self.local_v6
                    .iter()
                    .filter(link_local)
                    .find(|addr| on_rif(addr, false))
            })
            .or_else(|| self.local_v6.iter().find(|addr| on_rif(addr, false)))
            .or(self.local_v6.first())
            .copied()
    }
}

fn v4_key(net: Ipv4Network) -> (u32, u8) {
    let len = net.prefix();
    let mask = if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len))
    };
    (u32::from(net.ip()) & mask, len)
}

fn v6_key(net: Ipv6Network) -> (u128, u8) {
    let len = net.prefix();
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    };
    (u128::from(net.ip()) & mask, len)
}

impl Switch {
    // ---- router interfaces ----

    /// Creates or replaces a router interface. A routed port stops bridging;
    /// an SVI's VLAN must exist.
    pub fn set_router_interface(
        &mut self,
        rif: RifId,
        config: RouterInterface,
    ) -> Result<(), TableError> {
        if usize::from(rif) >= self.router.rifs.len() {
            return Err(TableError::Invalid(
                "router interface id beyond max_router_interfaces",
            ));
        }
        if config.mac.is_multicast() {
            return Err(TableError::Invalid("router MAC must be unicast"));
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
                let vlan = self
                    .bridge
                    .vlan(vid)
                    .ok_or(TableError::Invalid("no such VLAN"))?;
                if vlan.rif.is_some_and(|other| other != rif) {
                    return Err(TableError::InUse);
                }
            }
        }
        if let Some(old) = self.router.rifs[usize::from(rif)].take() {
            self.unbind_rif(old.kind);
        }
        match config.kind {
            RifKind::Port(port) => {
                self.ports[usize::from(port)].as_mut().expect("checked").rif = Some(rif)
            }
            RifKind::Vlan(vid) => self.bridge.vlan_mut(vid).expect("checked").rif = Some(rif),
        }
        self.router.rifs[usize::from(rif)] = Some(config);
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
        if self
            .router
            .rif_refs
            .get(&rif)
            .is_some_and(|&count| count > 0)
        {
            return Err(TableError::InUse);
        }
        self.unbind_rif(config.kind);
        self.router.rifs[usize::from(rif)] = None;
        self.neighbors.remove_rif(rif);
        Ok(())
    }

    pub fn router_interface(&self, rif: RifId) -> Option<RouterInterface> {
        self.router.rif(rif).copied()
    }

    // ---- routes ----

    /// Installs or replaces the route for `prefix` (host bits are ignored).
    pub fn set_route(&mut self, prefix: IpNetwork, target: RouteTarget) -> Result<(), TableError> {
        self.router.check_target(target)?;
        let old = match prefix {
            IpNetwork::V4(net) => self.router.v4.get(&v4_key(net)).copied(),
            IpNetwork::V6(net) => self.router.v6.get(&v6_key(net)).copied(),
        };
        if old.is_none() && self.router.route_count >= self.router.route_capacity {
            return Err(TableError::Full);
        }
        if target == RouteTarget::Local && prefix.prefix() != prefix_max(prefix) {
            return Err(TableError::Invalid(
                "a Local route is a host route (/32 or /128)",
            ));
        }
        match prefix {
            IpNetwork::V4(net) => self.router.v4.insert(v4_key(net), target),
            IpNetwork::V6(net) => self.router.v6.insert(v6_key(net), target),
        };
        if let Some(old) = old {
            self.router.reference(old, -1);
            self.forget_route_side_tables(prefix, old);
        } else {
            self.router.route_count += 1;
        }
        self.router.reference(target, 1);
        match (target, prefix) {
            (RouteTarget::Local, IpNetwork::V4(net)) => self.router.local_v4.push(net.ip()),
            (RouteTarget::Local, IpNetwork::V6(net)) => self.router.local_v6.push(net.ip()),
            (RouteTarget::Connected(rif), _) => self.router.connected.push((prefix, rif)),
            _ => {}
        }
        Ok(())
    }

    fn forget_route_side_tables(&mut self, prefix: IpNetwork, old: RouteTarget) {
        match (old, prefix) {
            (RouteTarget::Local, IpNetwork::V4(net)) => {
                self.router.local_v4.retain(|&addr| addr != net.ip())
            }
            (RouteTarget::Local, IpNetwork::V6(net)) => {
                self.router.local_v6.retain(|&addr| addr != net.ip())
            }
            (RouteTarget::Connected(rif), _) => self.router.connected.retain(|&(net, r)| {
                !(r == rif && net.network() == prefix.network() && net.prefix() == prefix.prefix())
            }),
            _ => {}
        }
    }

    pub fn remove_route(&mut self, prefix: IpNetwork) -> Result<(), TableError> {
        let old = match prefix {
            IpNetwork::V4(net) => self.router.v4.remove(&v4_key(net)),
            IpNetwork::V6(net) => self.router.v6.remove(&v6_key(net)),
        }
        .ok_or(TableError::NotFound)?;
        self.router.route_count -= 1;
        self.router.reference(old, -1);
        self.forget_route_side_tables(prefix, old);
        Ok(())
    }

    pub fn route(&self, prefix: IpNetwork) -> Option<RouteTarget> {
        match prefix {
            IpNetwork::V4(net) => self.router.v4.get(&v4_key(net)).copied(),
            IpNetwork::V6(net) => self.router.v6.get(&v6_key(net)).copied(),
        }
    }

    /// Longest-prefix match, as the pipeline does it.
    pub fn lookup_route(&self, addr: IpAddr) -> Option<RouteTarget> {
        self.router.lookup(addr)
    }

    pub fn routes(&self) -> impl Iterator<Item = (IpNetwork, RouteTarget)> + '_ {
        let v4 = self.router.v4.iter().map(|((addr, len), &target)| {
            (
                IpNetwork::V4(Ipv4Network::new(Ipv4Addr::from(addr), len).expect("valid length")),
                target,
            )
        });
        let v6 = self.router.v6.iter().map(|((addr, len), &target)| {
            (
                IpNetwork::V6(Ipv6Network::new(Ipv6Addr::from(addr), len).expect("valid length")),
                target,
            )
        });
        v4.chain(v6)
    }

    pub fn route_count(&self) -> usize {
        self.router.route_count
    }

    // ---- next hops and groups ----

    /// Creates or replaces a next hop: an IP neighbour behind a router interface.
    pub fn set_next_hop(&mut self, id: NextHopId, next_hop: NextHop) -> Result<(), TableError> {
        if self.router.rif(next_hop.rif).is_none() {
            return Err(TableError::Invalid("no such router interface"));
        }
        if let Some(old) = self.router.next_hops.insert(id, next_hop) {
            *self.router.rif_refs.entry(old.rif).or_default() -= 1;
        }
        *self.router.rif_refs.entry(next_hop.rif).or_default() += 1;
        Ok(())
    }

    pub fn remove_next_hop(&mut self, id: NextHopId) -> Result<(), TableError> {
        if !self.router.next_hops.contains_key(&id) {
            return Err(TableError::NotFound);
        }
        if self
            .router
            .next_hop_refs
            .get(&id)
            .is_some_and(|&count| count > 0)
        {
            return Err(TableError::InUse);
        }
        let old = self.router.next_hops.remove(&id).expect("checked");
        *self.router.rif_refs.entry(old.rif).or_default() -= 1;
        Ok(())
    }

    pub fn next_hop(&self, id: NextHopId) -> Option<NextHop> {
        self.router.next_hops.get(&id).copied()
    }

    /// Creates or replaces an ECMP group. Members may repeat (weights); an
    /// empty group drops what routes to it.
    pub fn set_next_hop_group(
        &mut self,
        id: NextHopGroupId,
        members: &[NextHopId],
    ) -> Result<(), TableError> {
        if members
            .iter()
            .any(|member| !self.router.next_hops.contains_key(member))
        {
            return Err(TableError::Invalid("no such next hop"));
        }
        for &member in members {
            *self.router.next_hop_refs.entry(member).or_default() += 1;
        }
        if let Some(old) = self.router.groups.insert(id, members.to_vec()) {
            for member in old {
                *self.router.next_hop_refs.entry(member).or_default() -= 1;
            }
        }
        Ok(())
    }

    pub fn remove_next_hop_group(&mut self, id: NextHopGroupId) -> Result<(), TableError> {
        if !self.router.groups.contains_key(&id) {
            return Err(TableError::NotFound);
        }
        if self
            .router
            .group_refs
            .get(&id)
            .is_some_and(|&count| count > 0)
        {
            return Err(TableError::InUse);
        }
        for member in self.router.groups.remove(&id).expect("checked") {
            *self.router.next_hop_refs.entry(member).or_default() -= 1;
        }
        Ok(())
    }

    pub fn next_hop_group(&self, id: NextHopGroupId) -> Option<&[NextHopId]> {
        self.router.groups.get(&id).map(Vec::as_slice)
    }

    // ---- forwarding ----

    /// A frame addressed to a router interface's MAC (or any frame on a routed port).
    pub(crate) fn l3_ingress(
        &mut self,
        _now: u64,
        source: L3Source,
        frame: L3Frame<'_>,
        _out: &mut Output,
    ) -> Disposition {
        let _ = frame;
        self.drop(source.ingress_port(), DropReason::UnknownEtherType)
    }

    /// A broadcast or multicast frame the SVI hears while the bridge floods it.
    pub(crate) fn l3_group_ingress(
        &mut self,
        _now: u64,
        _source: L3Source,
        _frame: L3Frame<'_>,
        _out: &mut Output,
    ) -> Disposition {
        Disposition::Flooded
    }
}

fn prefix_max(prefix: IpNetwork) -> u8 {
    match prefix {
        IpNetwork::V4(_) => 32,
        IpNetwork::V6(_) => 128,
    }
}
