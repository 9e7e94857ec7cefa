//! A map for the few entries EVPN keeps per MAC, IP or prefix (the routes
//! giving it: one or two nearly always), in a vector sorted by key and
//! sized to what it holds. A `BTreeMap` allocates a whole node (eleven
//! slots, about a kilobyte with route keys) for its first entry, which at
//! 100,000 routes was over half of the speaker's memory.

use std::cmp::Ordering;

use crate::packet::evpn::EvpnRoute;
use crate::rib::MacIpKey;

/// A route key as these maps keep it: a type 2 key packed into 24 bytes
/// ([`MacIpKey`], 32 with the tag) when it packs, else the whole route in a
/// box (an `EvpnRoute` is 68 bytes). Ordered as the routes it stands for, so
/// a map of them iterates in the order a map of `EvpnRoute`s did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteKey {
    Packed(MacIpKey),
    Whole(Box<EvpnRoute>),
}

impl RouteKey {
    pub fn new(route: EvpnRoute) -> RouteKey {
        match MacIpKey::pack(&route) {
            Some(k) => RouteKey::Packed(k),
            None => RouteKey::Whole(Box::new(route)),
        }
    }

    pub fn route(&self) -> EvpnRoute {
        match self {
            RouteKey::Packed(k) => k.route(),
            RouteKey::Whole(r) => **r,
        }
    }
}

impl PartialOrd for RouteKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for RouteKey {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (RouteKey::Packed(a), RouteKey::Packed(b)) if a == b => Ordering::Equal,
            _ => self.route().cmp(&other.route()),
        }
    }
}

/// Entries sorted by key, so iteration goes in the order a `BTreeMap`'s would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmallMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for SmallMap<K, V> {
    fn default() -> Self {
        SmallMap(Vec::new())
    }
}

impl<K: Ord, V> SmallMap<K, V> {
    /// Sets `key` to `value`; returns the value it had.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.0.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                // Grow by one: most maps stay at one or two entries.
                self.0.reserve_exact(1);
                self.0.insert(i, (key, value));
                None
            }
        }
    }

    pub fn remove(&mut self, key: &K) -> Option<V> {
        let i = self.0.binary_search_by(|(k, _)| k.cmp(key)).ok()?;
        let (_, value) = self.0.remove(i);
        if self.0.is_empty() {
            self.0 = Vec::new();
        } else {
            self.0.shrink_to_fit();
        }
        Some(value)
    }

    #[cfg(test)]
    pub fn get(&self, key: &K) -> Option<&V> {
        self.0.binary_search_by(|(k, _)| k.cmp(key)).ok().map(|i| &self.0[i].1)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Values in key order.
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.0.iter().map(|(_, v)| v)
    }

    /// Entries in key order.
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::SmallMap;

    #[test]
    fn behaves_as_a_btree_map() {
        let mut small = SmallMap::default();
        let mut btree = BTreeMap::new();
        // A fixed pseudo-random sequence of inserts and removes.
        let mut x: u32 = 12345;
        for _ in 0..2000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let key = (x >> 16) % 13;
            if x.is_multiple_of(3) {
                assert_eq!(small.remove(&key), btree.remove(&key));
            } else {
                assert_eq!(small.insert(key, x), btree.insert(key, x));
            }
            assert_eq!(small.len(), btree.len());
            assert!(small.iter().eq(btree.iter()));
            assert_eq!(small.get(&3), btree.get(&3));
            assert_eq!(small.values().next(), btree.values().next());
        }
    }

    #[test]
    fn route_keys_order_as_their_routes() {
        use std::net::{IpAddr, Ipv4Addr};

        use super::RouteKey;
        use crate::packet::evpn::{Esi, EvpnRoute, MacAddr, RouteDistinguisher};
        let rd = |n| RouteDistinguisher::Ipv4 { addr: Ipv4Addr::new(10, 0, 0, 3), number: n };
        let t2 = |n, ip: Option<IpAddr>, mac: u8| EvpnRoute::MacIpAdvertisement {
            rd: rd(n),
            esi: Esi::ZERO,
            ethernet_tag: 0,
            mac: MacAddr([2, 0, 0, 0, 0, mac]),
            ip,
            label1: 0,
            label2: None,
        };
        let host = IpAddr::V4(Ipv4Addr::new(10, 1, 0, 1));
        let v4 = Some(host);
        let v6 = Some("fd00::1".parse().unwrap());
        let mut routes = vec![
            t2(2, None, 1),
            t2(1, v4, 1),
            t2(1, v6, 1),
            t2(1, None, 2),
            t2(1, None, 1),
            EvpnRoute::InclusiveMulticast { rd: rd(1), ethernet_tag: 0, originator: host },
            t2(1, Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9))), 1),
        ];
        let mut keys: Vec<RouteKey> = routes.iter().map(|r| RouteKey::new(*r)).collect();
        assert!(matches!(keys[0], RouteKey::Packed(_)) && matches!(keys[2], RouteKey::Whole(_)));
        routes.sort();
        keys.sort();
        assert_eq!(keys.iter().map(RouteKey::route).collect::<Vec<_>>(), routes);
        assert_eq!(size_of::<RouteKey>(), 32);
    }

    #[test]
    fn holds_no_more_than_it_needs() {
        let mut small = SmallMap::default();
        small.insert(1u64, 1u64);
        assert_eq!(small.0.capacity(), 1);
        small.insert(2, 2);
        assert_eq!(small.0.capacity(), 2);
        small.remove(&1);
        assert_eq!(small.0.capacity(), 1);
        small.remove(&2);
        assert_eq!(small.0.capacity(), 0);
    }
}
