//! Histograms: the base histogram built by one aggregate pass (phase 1) and its roll-up to
//! any lattice node (the phase-2 kernel).
//!
//! A [`GroupedHistogram`] holds, for one lattice node, every non-empty equivalence class
//! (in ascending class-key order) together with the counts of its informative values (in
//! ascending value-code order). Its layout depends only on the data and the node, never on
//! the order in which rows arrived, so every computation on it is reproducible.

use datafusion::common::Result;

use crate::hierarchy::Hierarchy;

/// Pairs of one target class above which [`GroupedHistogram::roll_up`] sums them in a
/// dense array over the value domain instead of sorting them.
const DENSE_MERGE_ABOVE: usize = 64;

/// Per node: equivalence classes and their informative-value counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupedHistogram {
    /// Generalization level of each quasi-identifier.
    pub levels: Vec<usize>,
    /// Per quasi-identifier, the code (at its level) of every class.
    pub class_codes: Vec<Vec<u32>>,
    /// Class `c` owns pairs `class_offsets[c]..class_offsets[c + 1]`.
    pub class_offsets: Vec<usize>,
    /// Informative-value code of each pair.
    pub pair_values: Vec<u32>,
    /// Number of records of each pair.
    pub pair_counts: Vec<u64>,
}

impl GroupedHistogram {
    /// The pairs of class `c`: indexes into `pair_values` and `pair_counts`.
    #[inline]
    pub fn class_range(&self, c: usize) -> std::ops::Range<usize> {
        self.class_offsets[c]..self.class_offsets[c + 1]
    }

    /// `(value code, count)` of every pair of class `c`.
    #[inline]
    pub fn pairs(&self, c: usize) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.class_range(c)
            .map(|p| (self.pair_values[p], self.pair_counts[p]))
    }

    /// Number of equivalence classes.
    pub fn class_count(&self) -> usize {
        self.class_offsets.len() - 1
    }

    /// Number of (class, informative value) pairs.
    pub fn pair_count(&self) -> usize {
        self.pair_values.len()
    }

    /// Number of records in class `c`.
    pub fn class_size(&self, c: usize) -> u64 {
        self.pair_counts[self.class_range(c)].iter().sum()
    }

    /// The size of every class: the pair counts themselves when every class has one pair
    /// (a size-only histogram), summed per class otherwise.
    pub fn sizes(&self) -> std::borrow::Cow<'_, [u64]> {
        if self.pair_count() == self.class_count() {
            std::borrow::Cow::Borrowed(&self.pair_counts)
        } else {
            std::borrow::Cow::Owned(
                (0..self.class_count())
                    .map(|c| self.class_size(c))
                    .collect(),
            )
        }
    }

    /// The class-level histogram: the same classes, one pair per class holding its size
    /// (value 0), for the checks that need class sizes only.
    pub fn class_sizes(&self) -> GroupedHistogram {
        let classes = self.class_count();
        GroupedHistogram {
            levels: self.levels.clone(),
            class_codes: self.class_codes.clone(),
            class_offsets: (0..=classes).collect(),
            pair_values: vec![0; classes],
            pair_counts: self.sizes().into_owned(),
        }
    }

    /// Total number of records.
    pub fn total(&self) -> u64 {
        self.pair_counts.iter().sum()
    }

    /// Builds the leaf-level histogram from raw rows given as leaf codes per attribute,
    /// informative codes and record counts (rows may repeat and arrive in any order).
    pub fn from_rows(
        hierarchies: &[&Hierarchy],
        leaf_codes: Vec<Vec<u32>>,
        values: Vec<u32>,
        counts: Vec<u64>,
        value_domain: usize,
    ) -> Result<Self> {
        let rows = values.len();
        let unit = Self {
            levels: vec![0; hierarchies.len()],
            class_codes: leaf_codes,
            class_offsets: (0..=rows).collect(),
            pair_values: values,
            pair_counts: counts,
        };
        unit.roll_up(hierarchies, &vec![0; hierarchies.len()], value_domain)
    }

    /// The target class of every source class as a number whose order is the lexicographic
    /// order of the target code tuples (first attribute most significant), and an upper
    /// bound on those numbers (the key space).
    ///
    /// While the product of the target cardinalities fits 64 bits, the key is the mixed-radix
    /// number of the code tuple. Beyond that, the key of the attributes so far is replaced
    /// by its rank among the distinct keys observed (at most one per source class) before
    /// the next attribute is appended, so any number of attributes works: classes are keyed
    /// by the combinations that occur, not by every combination the hierarchies allow.
    fn class_keys(&self, maps: &[Vec<u32>], cards: &[u64]) -> (Vec<u64>, u64) {
        let mut keys = vec![0u64; self.class_count()];
        let mut key_space: u64 = 1;
        for (a, map) in maps.iter().enumerate() {
            let card = cards[a].max(1);
            let space = match key_space.checked_mul(card) {
                Some(space) => space,
                None => {
                    key_space = rank_in_place(&mut keys);
                    // A rank is below the number of source classes (< 2^32) and a code
                    // below 2^32, so this product fits.
                    key_space.saturating_mul(card)
                }
            };
            for (key, &code) in keys.iter_mut().zip(&self.class_codes[a]) {
                *key = *key * card + map[code as usize] as u64;
            }
            key_space = space;
        }
        (keys, key_space)
    }

    /// Rolls this histogram up to `target` levels (each `>=` this histogram's level).
    ///
    /// The source classes are sorted by their target code tuples (an LSD radix sort of
    /// [`KeyPacking`] keys, or of [`Self::class_keys`] when the tuples need more than 64
    /// bits); each run of equal keys is one target class, so the targets come out in the
    /// histogram's order and each is summed from its source classes' pairs in one place.
    pub fn roll_up(
        &self,
        hierarchies: &[&Hierarchy],
        target: &[usize],
        value_domain: usize,
    ) -> Result<Self> {
        if value_domain <= 1 && self.pair_count() == self.class_count() {
            // Class sizes only: the same histogram without per-value work.
            return Ok(self.roll_up_sizes(hierarchies, target));
        }
        self.roll_up_pairs(hierarchies, target, value_domain)
    }

    /// [`Self::roll_up`] with every class's pairs summed by value.
    fn roll_up_pairs(
        &self,
        hierarchies: &[&Hierarchy],
        target: &[usize],
        value_domain: usize,
    ) -> Result<Self> {
        let attrs = hierarchies.len();
        let maps: Vec<Vec<u32>> = (0..attrs)
            .map(|a| hierarchies[a].level_map(self.levels[a], target[a]))
            .collect();
        let cards: Vec<u64> = (0..attrs)
            .map(|a| hierarchies[a].level(target[a]).cardinality() as u64)
            .collect();
        let source_classes = self.class_count();
        let packing = KeyPacking::new(&cards);
        let (keys, key_space) = match &packing {
            Some(packing) => (packing.keys(self, &maps), packing.key_space()),
            None => self.class_keys(&maps, &cards),
        };
        let order: Vec<u32> = (0..source_classes as u32).collect();
        let (sorted, order) = radix_sort_pairs(keys, order, key_space);

        // Each run of equal keys is one target class: its source classes' pairs summed by
        // value, ascending. A target without records is dropped.
        let mut target_keys: Vec<u64> = Vec::new();
        let mut first_source: Vec<u32> = Vec::new();
        let mut class_offsets = Vec::with_capacity(source_classes + 1);
        class_offsets.push(0usize);
        let mut pair_values = Vec::with_capacity(self.pair_count());
        let mut pair_counts = Vec::with_capacity(self.pair_count());
        let mut gathered: Vec<(u32, u64)> = Vec::new();
        let mut scratch: Vec<u64> = Vec::new();
        let mut touched: Vec<u32> = Vec::new();
        let mut i = 0;
        while i < sorted.len() {
            let (key, start) = (sorted[i], i);
            while i < sorted.len() && sorted[i] == key {
                i += 1;
            }
            let run = &order[start..i];
            if let [c] = *run {
                // One source class: its pairs are already distinct and ascending.
                for p in self.class_range(c as usize) {
                    if self.pair_counts[p] > 0 {
                        pair_values.push(self.pair_values[p]);
                        pair_counts.push(self.pair_counts[p]);
                    }
                }
            } else {
                gathered.clear();
                for &c in run {
                    gathered.extend(self.pairs(c as usize));
                }
                if gathered.len() <= DENSE_MERGE_ABOVE {
                    gathered.sort_unstable_by_key(|&(v, _)| v);
                    let mut j = 0;
                    while j < gathered.len() {
                        let v = gathered[j].0;
                        let mut n = 0u64;
                        while j < gathered.len() && gathered[j].0 == v {
                            n += gathered[j].1;
                            j += 1;
                        }
                        if n > 0 {
                            pair_values.push(v);
                            pair_counts.push(n);
                        }
                    }
                } else {
                    // Many pairs (a coarse node): summed in a dense array over the domain.
                    if scratch.is_empty() {
                        scratch = vec![0u64; value_domain];
                    }
                    for &(v, n) in &gathered {
                        if scratch[v as usize] == 0 {
                            touched.push(v);
                        }
                        scratch[v as usize] += n;
                    }
                    touched.sort_unstable();
                    for &v in &touched {
                        let n = std::mem::take(&mut scratch[v as usize]);
                        if n > 0 {
                            pair_values.push(v);
                            pair_counts.push(n);
                        }
                    }
                    touched.clear();
                }
            }
            if pair_values.len() > *class_offsets.last().unwrap_or(&0) {
                class_offsets.push(pair_values.len());
                target_keys.push(key);
                first_source.push(run[0]);
            }
        }
        drop(sorted);
        drop(order);
        let class_codes: Vec<Vec<u32>> = match &packing {
            Some(packing) => packing.decode(&target_keys),
            None => (0..attrs)
                .map(|a| {
                    let (map, source) = (&maps[a], &self.class_codes[a]);
                    first_source
                        .iter()
                        .map(|&c| map[source[c as usize] as usize])
                        .collect()
                })
                .collect(),
        };

        Ok(Self {
            levels: target.to_vec(),
            class_codes,
            class_offsets,
            pair_values,
            pair_counts,
        })
    }

    /// Rolls the class sizes of this histogram up to `target` levels (each `>=` this
    /// histogram's level), leaving out the informative values: every class of the result
    /// has one pair, value 0 with the class size. The result equals
    /// `roll_up(hierarchies, target, 1)` of this histogram's class sizes, but is computed
    /// without per-value work: the target keys of the source classes are sorted by an LSD
    /// radix sort (11-bit digits, only as many as the key space needs) and runs of equal
    /// keys are summed.
    pub fn roll_up_sizes(&self, hierarchies: &[&Hierarchy], target: &[usize]) -> Self {
        let attrs = hierarchies.len();
        let maps: Vec<Vec<u32>> = (0..attrs)
            .map(|a| hierarchies[a].level_map(self.levels[a], target[a]))
            .collect();
        let cards: Vec<u64> = (0..attrs)
            .map(|a| hierarchies[a].level(target[a]).cardinality() as u64)
            .collect();
        let Some(packing) = KeyPacking::new(&cards) else {
            return self.roll_up_sizes_ranked(&maps, &cards, target);
        };
        // The sort moves (key, size) pairs, and a tuple is read back from its key, so
        // nothing is gathered from the source classes afterwards.
        let keys = packing.keys(self, &maps);
        let sizes = self.sizes().into_owned();
        let (sorted, sizes) = radix_sort_pairs(keys, sizes, packing.key_space());

        let mut out_keys: Vec<u64> = Vec::new();
        let mut pair_counts: Vec<u64> = Vec::new();
        let mut i = 0;
        while i < sorted.len() {
            let key = sorted[i];
            let mut size = 0u64;
            while i < sorted.len() && sorted[i] == key {
                size += sizes[i];
                i += 1;
            }
            if size > 0 {
                out_keys.push(key);
                pair_counts.push(size);
            }
        }
        let class_codes = packing.decode(&out_keys);
        let classes = pair_counts.len();
        Self {
            levels: target.to_vec(),
            class_codes,
            class_offsets: (0..=classes).collect(),
            pair_values: vec![0; classes],
            pair_counts,
        }
    }

    /// [`Self::roll_up_sizes`] when the packed target codes need more than 64 bits: keys
    /// by rank ([`Self::class_keys`]), codes read from the first source class of each
    /// target class.
    fn roll_up_sizes_ranked(&self, maps: &[Vec<u32>], cards: &[u64], target: &[usize]) -> Self {
        let attrs = maps.len();
        let (keys, key_space) = self.class_keys(maps, cards);
        let order: Vec<u32> = (0..self.class_count() as u32).collect();
        let (sorted, order) = radix_sort_pairs(keys, order, key_space);

        let mut class_codes: Vec<Vec<u32>> = vec![Vec::new(); attrs];
        let mut pair_counts: Vec<u64> = Vec::new();
        let mut i = 0;
        while i < sorted.len() {
            let key = sorted[i];
            let first = order[i] as usize;
            let mut size = 0u64;
            while i < sorted.len() && sorted[i] == key {
                size += self.class_size(order[i] as usize);
                i += 1;
            }
            if size > 0 {
                for (codes, (map, source)) in class_codes
                    .iter_mut()
                    .zip(maps.iter().zip(&self.class_codes))
                {
                    codes.push(map[source[first] as usize]);
                }
                pair_counts.push(size);
            }
        }
        let classes = pair_counts.len();
        Self {
            levels: target.to_vec(),
            class_codes,
            class_offsets: (0..=classes).collect(),
            pair_values: vec![0; classes],
            pair_counts,
        }
    }
}

/// A class's target code tuple packed into one number, first attribute in the highest
/// bits, while the tuple fits 64 bits: the numbers sort like the tuples, and a tuple is
/// read back from its number by shifts.
struct KeyPacking {
    /// Bits of each attribute's code.
    widths: Vec<u32>,
    /// Position of each attribute's lowest bit.
    shifts: Vec<u32>,
    /// Bits of the whole key.
    bits: u32,
}

impl KeyPacking {
    /// The packing for target cardinalities `cards`, or `None` when they need more than
    /// 64 bits together.
    fn new(cards: &[u64]) -> Option<Self> {
        let widths: Vec<u32> = cards
            .iter()
            .map(|&c| u64::BITS - c.max(1).saturating_sub(1).leading_zeros())
            .collect();
        let bits: u32 = widths.iter().sum();
        if bits > u64::BITS {
            return None;
        }
        let mut shifts = vec![0u32; widths.len()];
        let mut shift = bits;
        for (s, &w) in shifts.iter_mut().zip(&widths) {
            shift -= w;
            *s = shift;
        }
        Some(Self {
            widths,
            shifts,
            bits,
        })
    }

    /// An upper bound on the keys.
    fn key_space(&self) -> u64 {
        if self.bits == u64::BITS {
            u64::MAX
        } else {
            1u64 << self.bits
        }
    }

    /// The key of every class of `hist`, its codes mapped by `maps`.
    fn keys(&self, hist: &GroupedHistogram, maps: &[Vec<u32>]) -> Vec<u64> {
        let mut keys = vec![0u64; hist.class_count()];
        for (a, map) in maps.iter().enumerate() {
            if self.widths[a] == 0 {
                // One target value: code 0 adds nothing.
                continue;
            }
            let shift = self.shifts[a];
            for (key, &code) in keys.iter_mut().zip(&hist.class_codes[a]) {
                *key |= (map[code as usize] as u64) << shift;
            }
        }
        keys
    }

    /// The code tuples of `keys`, one column per attribute.
    fn decode(&self, keys: &[u64]) -> Vec<Vec<u32>> {
        self.widths
            .iter()
            .zip(&self.shifts)
            .map(|(&width, &shift)| {
                let mask = if width == 0 {
                    0
                } else {
                    u64::MAX >> (u64::BITS - width)
                };
                keys.iter().map(|&k| ((k >> shift) & mask) as u32).collect()
            })
            .collect()
    }
}

/// Sorts `keys` (each below `key_space`) ascending by a stable LSD radix sort on 11-bit
/// digits, moving `payload` along; returns the sorted keys and their payloads. Keys already
/// in order are returned as they are; digits above the key space are skipped, and so is
/// every pass in which all keys share the digit.
pub(crate) fn radix_sort_pairs<T: Copy + Default>(
    mut keys: Vec<u64>,
    mut payload: Vec<T>,
    key_space: u64,
) -> (Vec<u64>, Vec<T>) {
    const BITS: u32 = 11;
    const MASK: u64 = (1 << BITS) - 1;
    let n = keys.len();
    if n < 2 || keys.windows(2).all(|w| w[0] <= w[1]) {
        return (keys, payload);
    }
    let bits = u64::BITS - key_space.saturating_sub(1).leading_zeros();
    let mut next_keys = vec![0u64; n];
    let mut next_payload = vec![T::default(); n];
    let mut starts = vec![0usize; 1 << BITS];
    let mut shift = 0;
    while shift < bits {
        starts.fill(0);
        for &k in &keys {
            starts[((k >> shift) & MASK) as usize] += 1;
        }
        if starts.contains(&n) {
            shift += BITS;
            continue;
        }
        let mut sum = 0;
        for s in starts.iter_mut() {
            let count = *s;
            *s = sum;
            sum += count;
        }
        for (&k, &p) in keys.iter().zip(&payload) {
            let slot = &mut starts[((k >> shift) & MASK) as usize];
            next_keys[*slot] = k;
            next_payload[*slot] = p;
            *slot += 1;
        }
        std::mem::swap(&mut keys, &mut next_keys);
        std::mem::swap(&mut payload, &mut next_payload);
        shift += BITS;
    }
    (keys, payload)
}

/// [`radix_sort_pairs`] with each key's original index as its payload.
#[cfg(test)]
fn radix_sort(keys: Vec<u64>, key_space: u64) -> (Vec<u64>, Vec<u32>) {
    let order = (0..keys.len() as u32).collect();
    radix_sort_pairs(keys, order, key_space)
}

/// Replaces every key by its rank among the distinct keys (order preserved); returns the
/// number of distinct keys.
fn rank_in_place(keys: &mut [u64]) -> u64 {
    let mut distinct: Vec<u64> = keys.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    for key in keys.iter_mut() {
        // Every key is in `distinct`.
        *key = distinct.partition_point(|&d| d < *key) as u64;
    }
    distinct.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ladder, weighted_histogram};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Brute force: generalize every row's labels and count per (labels, value).
    fn brute_force(
        hs: &[&Hierarchy],
        rows: &[(Vec<u32>, u32, u64)],
        node: &[usize],
    ) -> BTreeMap<Vec<String>, BTreeMap<u32, u64>> {
        let mut out: BTreeMap<Vec<String>, BTreeMap<u32, u64>> = BTreeMap::new();
        for (codes, v, n) in rows {
            let labels = codes
                .iter()
                .enumerate()
                .map(|(a, &c)| {
                    let level = hs[a].level(node[a]);
                    level.labels()[level.leaf_to_code()[c as usize] as usize].clone()
                })
                .collect();
            *out.entry(labels).or_default().entry(*v).or_default() += n;
        }
        out
    }

    fn as_map(
        hs: &[&Hierarchy],
        g: &GroupedHistogram,
    ) -> BTreeMap<Vec<String>, BTreeMap<u32, u64>> {
        let mut out = BTreeMap::new();
        for c in 0..g.class_count() {
            let labels: Vec<String> = (0..hs.len())
                .map(|a| hs[a].level(g.levels[a]).labels()[g.class_codes[a][c] as usize].clone())
                .collect();
            let mut values = BTreeMap::new();
            let range = g.class_range(c);
            assert!(
                g.pair_values[range.clone()].windows(2).all(|w| w[0] < w[1]),
                "values sorted within class"
            );
            for p in range {
                values.insert(g.pair_values[p], g.pair_counts[p]);
            }
            assert!(out.insert(labels, values).is_none(), "class listed twice");
        }
        out
    }

    /// Twelve quasi-identifiers with 100 values each allow 10^24 > 2^64 combinations; the
    /// data has only a few hundred. Classes are keyed by the combinations that occur, and
    /// the result is the same as counting by hand, in lexicographic class order.
    #[test]
    fn roll_up_works_beyond_2_to_the_64_combinations() {
        let attrs = 12;
        let names: Vec<String> = (0..attrs).map(|a| format!("q{a}")).collect();
        let hierarchies: Vec<Hierarchy> =
            names.iter().map(|n| ladder(n, "0..99", &["10"])).collect();
        let hs: Vec<&Hierarchy> = hierarchies.iter().collect();
        let mut next = crate::testing::test_numbers(0x9e37_79b9_7f4a_7c15u64);
        let rows: Vec<(Vec<u32>, u32, u64)> = (0..600)
            .map(|_| {
                let codes = (0..attrs).map(|_| next(100) as u32).collect();
                (codes, next(3) as u32, 1 + next(3))
            })
            .collect();
        let leaf = weighted_histogram(&hs, &rows, 3);
        assert_eq!(leaf.total(), rows.iter().map(|r| r.2).sum::<u64>());
        for target in [
            vec![0; attrs],
            vec![1; attrs],
            (0..attrs).map(|a| a % 3).collect::<Vec<_>>(),
        ] {
            let rolled = leaf.roll_up(&hs, &target, 3).unwrap();
            assert_eq!(as_map(&hs, &rolled), brute_force(&hs, &rows, &target));
            let tuples: Vec<Vec<u32>> = (0..rolled.class_count())
                .map(|c| (0..attrs).map(|a| rolled.class_codes[a][c]).collect())
                .collect();
            assert!(
                tuples.windows(2).all(|w| w[0] < w[1]),
                "classes in lexicographic code order"
            );
            assert_eq!(
                leaf.roll_up_sizes(&hs, &target),
                leaf.class_sizes().roll_up(&hs, &target, 1).unwrap()
            );
        }
    }

    /// The radix sort is a stable sort, whatever the key space (here every bit of 64).
    #[test]
    fn radix_sort_is_a_stable_sort() {
        let mut next = crate::testing::test_numbers(0x2545_f491_4f6c_dd1du64);
        for (n, space) in [(0, 1), (1, 1), (5000, 1), (5000, 3000), (5000, u64::MAX)] {
            // Few distinct keys, so that stability matters.
            let pool: Vec<u64> = (0..50).map(|_| next(space)).collect();
            let keys: Vec<u64> = (0..n).map(|_| pool[next(50) as usize]).collect();
            let mut expected: Vec<u32> = (0..n as u32).collect();
            expected.sort_by_key(|&i| keys[i as usize]);
            let (sorted, order) = radix_sort(keys.clone(), space);
            assert_eq!(order, expected);
            let by_order: Vec<u64> = order.iter().map(|&i| keys[i as usize]).collect();
            assert_eq!(sorted, by_order);
        }
    }

    proptest! {
        #[test]
        fn roll_up_matches_brute_force(
            rows in proptest::collection::vec((0u32..40, 0u32..16, 0u32..5, 1u64..4), 0..300),
            node in (0usize..4, 0usize..3),
            via in (0usize..4, 0usize..3),
        ) {
            let age = ladder("age", "0..39", &["5", "0,10,20,40"]);
            let loc = ladder("loc", "0..15", &["4"]);
            let hs = [&age, &loc];
            let rows: Vec<(Vec<u32>, u32, u64)> = rows.into_iter().map(|(a, l, v, n)| (vec![a, l], v, n)).collect();
            let leaf = weighted_histogram(&hs, &rows, 5);
            let target = [node.0.min(3), node.1.min(2)];
            let direct = leaf.roll_up(&hs, &target, 5).unwrap();
            prop_assert_eq!(as_map(&hs, &direct), brute_force(&hs, &rows, &target));
            // Rolling up through an intermediate finer node gives the identical histogram.
            let mid = [via.0.min(target[0]), via.1.min(target[1])];
            let staged = leaf.roll_up(&hs, &mid, 5).unwrap().roll_up(&hs, &target, 5).unwrap();
            prop_assert_eq!(&staged, &direct);
            prop_assert_eq!(direct.total(), rows.iter().map(|r| r.2).sum::<u64>());
        }

        /// The size-only roll-up gives exactly the general roll-up of the class sizes, from
        /// the leaf histogram with its values, from its class sizes, and staged through an
        /// intermediate node.
        #[test]
        fn roll_up_sizes_matches_roll_up(
            rows in proptest::collection::vec((0u32..40, 0u32..16, 0u32..5, 1u64..4), 0..300),
            node in (0usize..4, 0usize..3),
            via in (0usize..4, 0usize..3),
        ) {
            let age = ladder("age", "0..39", &["5", "0,10,20,40"]);
            let loc = ladder("loc", "0..15", &["4"]);
            let hs = [&age, &loc];
            let rows: Vec<(Vec<u32>, u32, u64)> = rows.into_iter().map(|(a, l, v, n)| (vec![a, l], v, n)).collect();
            let leaf = weighted_histogram(&hs, &rows, 5);
            let target = [node.0.min(3), node.1.min(2)];
            // The general path, which `roll_up` skips for class sizes.
            let expected = leaf.class_sizes().roll_up_pairs(&hs, &target, 1).unwrap();
            prop_assert_eq!(&leaf.class_sizes().roll_up(&hs, &target, 1).unwrap(), &expected);
            prop_assert_eq!(&leaf.roll_up_sizes(&hs, &target), &expected);
            prop_assert_eq!(&leaf.class_sizes().roll_up_sizes(&hs, &target), &expected);
            let mid = [via.0.min(target[0]), via.1.min(target[1])];
            let staged = leaf.roll_up_sizes(&hs, &mid).roll_up_sizes(&hs, &target);
            prop_assert_eq!(&staged, &expected);
        }
    }
}
