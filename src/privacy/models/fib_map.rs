//! A small open-addressing hash map from `u32` value codes to `u64` counts, hashed by
//! Fibonacci hashing (multiplication by 2^64 / φ, keeping the top bits; Knuth, TAOCP vol. 3,
//! §6.4). It does only what grouping a class's values needs: add to a count, list the
//! entries, clear in time proportional to the entries (Bild, Eicher & Prasser 2020,
//! optimization 1, "Fibonacci hashing"; docs/METHODS.md §7.6).

/// `2^64 / φ`, rounded to an odd integer.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// Marks an empty slot (never a value code: codes are below `u32::MAX`).
const EMPTY: u32 = u32::MAX;

/// Counts per value code, for grouping the values of one class at a time.
#[derive(Debug, Clone)]
pub struct FibMap {
    keys: Vec<u32>,
    counts: Vec<u64>,
    /// Slots in use, in insertion order (for listing and clearing).
    used: Vec<u32>,
    shift: u32,
}

impl Default for FibMap {
    fn default() -> Self {
        Self::with_capacity(16)
    }
}

impl FibMap {
    /// A map that holds `capacity` keys before it grows.
    pub fn with_capacity(capacity: usize) -> Self {
        let slots = (capacity.max(4) * 2).next_power_of_two();
        Self {
            keys: vec![EMPTY; slots],
            counts: vec![0; slots],
            used: Vec::with_capacity(capacity),
            shift: 64 - slots.trailing_zeros(),
        }
    }

    #[inline]
    fn slot(&self, key: u32) -> usize {
        ((key as u64).wrapping_mul(GOLDEN) >> self.shift) as usize
    }

    /// Adds `count` to the count of `key` (`key < u32::MAX`).
    #[inline]
    pub fn add(&mut self, key: u32, count: u64) {
        if 2 * (self.used.len() + 1) > self.keys.len() {
            self.grow();
        }
        let mask = self.keys.len() - 1;
        let mut i = self.slot(key);
        loop {
            let k = self.keys[i];
            if k == key {
                self.counts[i] += count;
                return;
            }
            if k == EMPTY {
                self.keys[i] = key;
                self.counts[i] = count;
                self.used.push(i as u32);
                return;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let entries: Vec<(u32, u64)> = self.entries().collect();
        *self = Self::with_capacity(self.keys.len());
        for (k, c) in entries {
            self.add(k, c);
        }
    }

    #[cfg(test)]
    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.used.len()
    }

    #[cfg(test)]
    /// Whether no key was added since the last clear.
    pub fn is_empty(&self) -> bool {
        self.used.is_empty()
    }

    /// `(key, count)` of every key, in insertion order.
    pub fn entries(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.used
            .iter()
            .map(|&i| (self.keys[i as usize], self.counts[i as usize]))
    }

    /// Empties the map, in time proportional to the number of keys.
    pub fn clear(&mut self) {
        for &i in &self.used {
            self.keys[i as usize] = EMPTY;
        }
        self.used.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        #[test]
        fn groups_like_a_btree_map(items in proptest::collection::vec((0u32..500, 1u64..9), 0..400)) {
            let mut map = FibMap::with_capacity(2);
            let mut expected: BTreeMap<u32, u64> = BTreeMap::new();
            for round in 0..2 {
                for &(k, c) in &items {
                    map.add(k, c);
                    *expected.entry(k).or_default() += c;
                }
                let got: BTreeMap<u32, u64> = map.entries().collect();
                prop_assert_eq!(&got, &expected);
                prop_assert_eq!(map.len(), expected.len());
                map.clear();
                expected.clear();
                prop_assert!(map.is_empty(), "round {}", round);
            }
        }
    }
}
