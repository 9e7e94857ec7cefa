//! One VRF's forwarding information base: the IPv4 and IPv6 route tables
//! (`prefix-trie` maps, the source of truth) and, once the IPv4 table is
//! big, its DIR-24-8 index. The router keeps one `Fib` per VRF, indexed by
//! [`VrfId`](super::VrfId); a router interface's VRF picks the table its
//! packets are looked up in.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnetwork::{IpNetwork, Ipv4Network, Ipv6Network};
use prefix_trie::PrefixMap;

use super::dir24::{self, Dir24};
use super::{NextHopGroupId, NextHopId, RifId};

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

/// What the route table holds: the target as programmed, and the slot of
/// its next hop or ECMP group (`NO_SLOT` for other targets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Route {
    pub(crate) target: RouteTarget,
    pub(crate) slot: u32,
}

pub(crate) const NO_SLOT: u32 = u32::MAX;

/// The ids behind next-hop and group slots: a DIR-24-8 entry holds only
/// the slot, the route it decodes to names the id too.
pub(crate) trait SlotIds {
    fn next_hop_id(&self, slot: u32) -> NextHopId;
    fn group_id(&self, slot: u32) -> NextHopGroupId;
}

pub(crate) struct Fib {
    v4: PrefixMap<(u32, u8), Route>,
    v6: PrefixMap<(u128, u8), Route>,
    /// The IPv4 table as DIR-24-8, once it holds `dir24_min_routes` routes.
    dir24: Option<Dir24>,
    /// A slot beyond what a DIR-24-8 entry holds was needed: trie only.
    dir24_unusable: bool,
    dir24_min_routes: usize,
    v4_count: usize,
    v6_count: usize,
}

impl Fib {
    pub(crate) fn new(dir24_min_routes: usize) -> Fib {
        Fib {
            v4: PrefixMap::new(),
            v6: PrefixMap::new(),
            dir24: None,
            dir24_unusable: false,
            dir24_min_routes,
            v4_count: 0,
            v6_count: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.v4_count + self.v6_count
    }

    pub(crate) fn get(&self, prefix: IpNetwork) -> Option<Route> {
        match prefix {
            IpNetwork::V4(net) => self.v4.get(&v4_key(net)).copied(),
            IpNetwork::V6(net) => self.v6.get(&v6_key(net)).copied(),
        }
    }

    /// Installs or replaces the route for `prefix` (host bits ignored);
    /// the route it replaced, if any.
    pub(crate) fn insert(&mut self, prefix: IpNetwork, route: Route) -> Option<Route> {
        match prefix {
            IpNetwork::V4(net) => {
                let key = v4_key(net);
                let old = self.v4.insert(key, route);
                if old.is_none() {
                    self.v4_count += 1;
                }
                self.dir24_update(key, Some(route), old.is_none());
                old
            }
            IpNetwork::V6(net) => {
                let old = self.v6.insert(v6_key(net), route);
                if old.is_none() {
                    self.v6_count += 1;
                }
                old
            }
        }
    }

    pub(crate) fn remove(&mut self, prefix: IpNetwork) -> Option<Route> {
        match prefix {
            IpNetwork::V4(net) => {
                let key = v4_key(net);
                let old = self.v4.remove(&key)?;
                self.v4_count -= 1;
                self.dir24_update(key, None, false);
                Some(old)
            }
            IpNetwork::V6(net) => {
                let old = self.v6.remove(&v6_key(net))?;
                self.v6_count -= 1;
                Some(old)
            }
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (IpNetwork, Route)> + '_ {
        let v4 = self.v4.iter().map(|((addr, len), route)| {
            (IpNetwork::V4(Ipv4Network::new(Ipv4Addr::from(addr), len).expect("valid length")), *route)
        });
        let v6 = self.v6.iter().map(|((addr, len), route)| {
            (IpNetwork::V6(Ipv6Network::new(Ipv6Addr::from(addr), len).expect("valid length")), *route)
        });
        v4.chain(v6)
    }

    #[inline]
    pub(crate) fn lookup_v4(&self, addr: Ipv4Addr, ids: &impl SlotIds) -> Option<Route> {
        match &self.dir24 {
            Some(index) => decode(index.lookup(u32::from(addr)), ids),
            None => self.v4.get_lpm(&(u32::from(addr), 32)).map(|(_, route)| *route),
        }
    }

    #[inline]
    pub(crate) fn lookup_v6(&self, addr: Ipv6Addr) -> Option<Route> {
        self.v6.get_lpm(&(u128::from(addr), 128)).map(|(_, route)| *route)
    }

    #[inline]
    pub(crate) fn lookup(&self, addr: IpAddr, ids: &impl SlotIds) -> Option<Route> {
        match addr {
            IpAddr::V4(addr) => self.lookup_v4(addr, ids),
            IpAddr::V6(addr) => self.lookup_v6(addr),
        }
    }

    #[cfg(test)]
    pub(crate) fn dir24_active(&self) -> bool {
        self.dir24.is_some()
    }

    /// The entry of the longest route covering `addr/len` (0: none).
    fn entry_covering(&self, addr: u32, len: u8) -> u32 {
        self.v4.get_lpm(&(addr, len)).and_then(|((_, len), &route)| encode(route, len)).unwrap_or(0)
    }

    /// Keeps the DIR-24-8 index in step with a change of `key` in the trie
    /// (already applied), and builds or drops it as the table grows or shrinks.
    fn dir24_update(&mut self, key: (u32, u8), new: Option<Route>, added: bool) {
        if let Some(mut index) = self.dir24.take() {
            let ok = match new {
                Some(route) => match encode(route, key.1) {
                    Some(entry) => {
                        index.insert(key.0, key.1, entry, added);
                        true
                    }
                    None => false,
                },
                None => {
                    let uncovered = self.entry_covering(key.0, key.1);
                    index.remove(key.0, key.1, uncovered, || self.entry_covering(key.0 & !0xff, 24));
                    true
                }
            };
            if !ok {
                self.dir24_unusable = true;
            } else if self.v4_count >= self.dir24_min_routes / 2 {
                self.dir24 = Some(index);
            }
        } else if self.dir24_min_routes > 0 && self.v4_count >= self.dir24_min_routes && !self.dir24_unusable {
            let mut index = Dir24::new();
            for ((addr, len), &route) in self.v4.iter() {
                let Some(entry) = encode(route, len) else {
                    self.dir24_unusable = true;
                    return;
                };
                index.insert(addr, len, entry, true);
            }
            self.dir24 = Some(index);
        }
    }
}

/// A DIR-24-8 entry for `route` of prefix length `len`; None if its
/// operand does not fit.
fn encode(route: Route, len: u8) -> Option<u32> {
    let (kind, operand) = match route.target {
        RouteTarget::Local => (1, 0),
        RouteTarget::Connected(rif) => (2, u32::from(rif)),
        RouteTarget::NextHop(_) => (3, route.slot),
        RouteTarget::Group(_) => (4, route.slot),
        RouteTarget::Drop => (5, 0),
        RouteTarget::Punt => (6, 0),
    };
    (operand < dir24::OPERAND_LIMIT).then(|| dir24::entry(kind, operand, len))
}

#[inline]
fn decode(entry: u32, ids: &impl SlotIds) -> Option<Route> {
    let (kind, operand) = dir24::target(entry);
    let target = match kind {
        0 => return None,
        1 => RouteTarget::Local,
        2 => RouteTarget::Connected(operand as RifId),
        3 => RouteTarget::NextHop(ids.next_hop_id(operand)),
        4 => RouteTarget::Group(ids.group_id(operand)),
        5 => RouteTarget::Drop,
        _ => RouteTarget::Punt,
    };
    let slot = if matches!(kind, 3 | 4) { operand } else { NO_SLOT };
    Some(Route { target, slot })
}

fn v4_key(net: Ipv4Network) -> (u32, u8) {
    let len = net.prefix();
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
    (u32::from(net.ip()) & mask, len)
}

fn v6_key(net: Ipv6Network) -> (u128, u8) {
    let len = net.prefix();
    let mask = if len == 0 { 0 } else { u128::MAX << (128 - u32::from(len)) };
    (u128::from(net.ip()) & mask, len)
}
