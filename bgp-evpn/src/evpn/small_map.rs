//! A map for the few entries EVPN keeps per MAC, IP or prefix (the routes
//! giving it: one or two nearly always), in a vector sorted by key and
//! sized to what it holds. A `BTreeMap` allocates a whole node (eleven
//! slots, about a kilobyte with route keys) for its first entry, which at
//! 100,000 routes was over half of the speaker's memory.

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
