//! Ordered-distance t-closeness: the earth mover's distance between a class's value
//! distribution `P` and the whole table's `Q` over a totally ordered domain of `m` values
//! (Li, Li & Venkatasubramanian 2007; Bild 2024, Formula 2.1):
//!
//! ```text
//! D[P, Q] = 1/(m−1) · Σ_{i=1..m} | Σ_{j≤i} (p_j − q_j) |
//! ```
//!
//! Two implementations give the same answer on every class (a property test checks it):
//!
//! - [`OrderedDistance::accepts_straightforward`]: groups the class's values with the
//!   standard hash map, lays them out over all `m` values and adds every summand;
//! - [`OrderedDistance::accepts`]: the optimizations of Bild, Eicher & Prasser 2020
//!   (Bild 2024, appendix A.2, §3.2): values grouped with a Fibonacci-hashed map
//!   ([`super::fib_map`]) or not at all when they arrive sorted; *check pruning* — the first
//!   `y` summands of a class whose smallest value has rank `y` depend on `Q` only, so their
//!   sum is precomputed and a class is rejected at once when it already exceeds the bound;
//!   *summand pruning* — otherwise the sum starts from that precomputed value at `y`; and
//!   *early abort* — the summation stops as soon as the partial sum exceeds the bound. We
//!   add the mirror image of summand pruning: after the class's largest value every summand
//!   again depends on `Q` only, so the rest of the sum is a precomputed trailing sum.
//!
//! Everything is exact: with `n` records in the class and `N` in the table, the summands
//! are scaled by `n·N` to integers, `|C_i·N − Q_i·n|` with `C_i`, `Q_i` cumulative counts,
//! and the bound `t·(m−1)·n·N` is rounded down exactly ([`super::floor_times`]). Because
//! every summand is non-negative the partial sums only grow, so pruning and early abort
//! reject exactly the classes whose full sum exceeds the bound. docs/METHODS.md §7.4.

use std::collections::HashMap;

use super::fib_map::FibMap;
use super::floor_times;

/// Ordered-distance t-closeness against a fixed reference distribution.
#[derive(Debug, Clone)]
pub struct OrderedDistance {
    t: f64,
    /// `N`: records in the table.
    total: u64,
    /// `Q_i`: cumulative reference counts, by rank.
    cumulative: Vec<u64>,
    /// `L_k = Σ_{i<k} Q_i`, k = 0..m: the first k summands of a class without values of
    /// rank below k, divided by n.
    leading: Vec<u128>,
    /// `T_k = Σ_{i=k..m−2} (N − Q_i)`, k = 0..m: the summands from k on of a class whose
    /// largest rank is at most k, divided by n.
    trailing: Vec<u128>,
    /// `x`: a class whose smallest rank is at least `x` fails (its leading sum exceeds the
    /// bound whatever its size); `m` when no rank is that far.
    prune_from: usize,
}

/// Reusable buffers of the fast check.
#[derive(Debug, Default)]
pub struct OrderedScratch {
    map: FibMap,
    sorted: Vec<(u32, u64)>,
}

impl OrderedDistance {
    /// The check against `reference` (records of each rank in the whole table) for `t` in
    /// `(0, 1]`.
    pub fn new(reference: &[u64], t: f64) -> Self {
        let m = reference.len();
        let total: u64 = reference.iter().sum();
        let mut cumulative = Vec::with_capacity(m);
        let mut running = 0u64;
        for &q in reference {
            running += q;
            cumulative.push(running);
        }
        let mut leading = vec![0u128; m + 1];
        for k in 1..=m {
            leading[k] = leading[k - 1] + cumulative[k - 1] as u128;
        }
        // Summands run over i = 0..m−2 (the last one is always 0).
        let mut trailing = vec![0u128; m + 1];
        for k in (0..m.saturating_sub(1)).rev() {
            trailing[k] = trailing[k + 1] + (total - cumulative[k]) as u128;
        }
        let bound = floor_times(t, (m.saturating_sub(1) as u128) * total as u128);
        let prune_from = (0..=m).find(|&k| leading[k] > bound).unwrap_or(m);
        Self {
            t,
            total,
            cumulative,
            leading,
            trailing,
            prune_from,
        }
    }

    /// Number of values `m`.
    pub fn domain(&self) -> usize {
        self.cumulative.len()
    }

    /// The rank from which on a class's smallest value makes it fail (check pruning).
    pub fn prune_from(&self) -> usize {
        self.prune_from
    }

    /// `floor(t · (m−1) · n · N)`: the bound of the scaled sum for a class of `n` records.
    fn bound(&self, n: u64) -> u128 {
        let m = self.domain() as u128;
        floor_times(self.t, (m - 1) * n as u128 * self.total as u128)
    }

    #[inline]
    fn summand(&self, class_cumulative: u128, n: u64, i: usize) -> u128 {
        let a = class_cumulative * self.total as u128;
        let b = self.cumulative[i] as u128 * n as u128;
        a.abs_diff(b)
    }

    /// The fast check on a class given as `(rank, count)` pairs in any order (repeats
    /// allowed).
    pub fn accepts(&self, pairs: &[(u32, u64)], scratch: &mut OrderedScratch) -> bool {
        if pairs.windows(2).all(|w| w[0].0 < w[1].0) {
            return self.accepts_sorted(pairs);
        }
        scratch.map.clear();
        for &(rank, count) in pairs {
            scratch.map.add(rank, count);
        }
        scratch.sorted.clear();
        scratch.sorted.extend(scratch.map.entries());
        scratch.sorted.sort_unstable_by_key(|&(rank, _)| rank);
        let sorted = std::mem::take(&mut scratch.sorted);
        let accepted = self.accepts_sorted(&sorted);
        scratch.sorted = sorted;
        accepted
    }

    /// The fast check on a class given as `(rank, count)` pairs in strictly ascending rank
    /// order, counts > 0.
    pub fn accepts_sorted(&self, pairs: &[(u32, u64)]) -> bool {
        let m = self.domain();
        let (Some(&(first, _)), Some(&(last, _))) = (pairs.first(), pairs.last()) else {
            return true;
        };
        if m <= 1 {
            return true;
        }
        let y = first as usize;
        // Check pruning: the first y summands alone exceed the bound.
        if y >= self.prune_from {
            return false;
        }
        let n: u64 = pairs.iter().map(|p| p.1).sum();
        let bound = self.bound(n);
        // Summand pruning: start from the precomputed leading sum.
        let mut sum = self.leading[y] * n as u128;
        let z = last as usize;
        let mut class_cumulative: u128 = 0;
        let mut next = 0;
        for i in y..z.min(m - 1) {
            if next < pairs.len() && pairs[next].0 as usize == i {
                class_cumulative += pairs[next].1 as u128;
                next += 1;
            }
            sum += self.summand(class_cumulative, n, i);
            // Early abort: the partial sums only grow.
            if sum > bound {
                return false;
            }
        }
        // From the largest value on the class's cumulative count is n: a trailing sum.
        sum += self.trailing[z.min(m)] * n as u128;
        sum <= bound
    }

    /// The straightforward check: group with the standard hash map, lay the counts out over
    /// all `m` values and add every summand, then compare.
    pub fn accepts_straightforward(&self, pairs: &[(u32, u64)]) -> bool {
        let (sum, n) = self.scaled_sum(pairs);
        n == 0 || self.domain() <= 1 || sum <= self.bound(n)
    }

    /// The distance `D[P, Q]` of a class (0 for an empty class or a one-value domain).
    pub fn distance(&self, pairs: &[(u32, u64)]) -> f64 {
        let (sum, n) = self.scaled_sum(pairs);
        let m = self.domain();
        if n == 0 || m <= 1 {
            return 0.0;
        }
        sum as f64 / ((m - 1) as f64 * n as f64 * self.total as f64)
    }

    /// `Σ_i |C_i·N − Q_i·n|` over every value, and `n`.
    fn scaled_sum(&self, pairs: &[(u32, u64)]) -> (u128, u64) {
        let mut grouped: HashMap<u32, u64> = HashMap::new();
        for &(rank, count) in pairs {
            *grouped.entry(rank).or_default() += count;
        }
        let m = self.domain();
        let mut dense = vec![0u64; m];
        for (rank, count) in grouped {
            dense[rank as usize] += count;
        }
        let n: u64 = dense.iter().sum();
        let mut sum: u128 = 0;
        let mut class_cumulative: u128 = 0;
        for (i, &c) in dense.iter().enumerate().take(m.saturating_sub(1)) {
            class_cumulative += c as u128;
            sum += self.summand(class_cumulative, n, i);
        }
        (sum, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The example of Bild, Eicher & Prasser 2020, Figure 1: Q = (1, 3, 1) / 5,
    /// P(e1) = (1, 1, 0) / 2 at distance 1/4, P(e2) = (0, 2, 1) / 3 at distance 1/6.
    #[test]
    fn paper_example() {
        let check = OrderedDistance::new(&[1, 3, 1], 0.25);
        let e1 = [(0, 1), (1, 1)];
        let e2 = [(1, 2), (2, 1)];
        assert!((check.distance(&e1) - 0.25).abs() < 1e-15);
        assert!((check.distance(&e2) - 1.0 / 6.0).abs() < 1e-15);
        let mut scratch = OrderedScratch::default();
        // Exactly at the bound: accepted by both.
        assert!(check.accepts(&e1, &mut scratch));
        assert!(check.accepts_straightforward(&e1));
        let tighter = OrderedDistance::new(&[1, 3, 1], 0.2);
        assert!(!tighter.accepts(&e1, &mut scratch));
        assert!(!tighter.accepts_straightforward(&e1));
        assert!(tighter.accepts(&e2, &mut scratch));
    }

    /// Check pruning: with Q = (1, 1, 1, 1) / 4 and t = 0.25 the bound is
    /// floor(0.25 · 3 · 4) = 3 over leading sums L = (0, 1, 3, 6, 10): a class whose
    /// smallest rank is 3 or more fails without summation.
    #[test]
    fn check_pruning_threshold() {
        let check = OrderedDistance::new(&[1, 1, 1, 1], 0.25);
        assert_eq!(check.prune_from(), 3);
        assert!(!check.accepts_sorted(&[(3, 5)]));
        assert!(!check.accepts_straightforward(&[(3, 5)]));
    }

    proptest! {
        /// The fast and the straightforward check agree on random classes, tables and t,
        /// and the distance is at most t exactly when both accept.
        #[test]
        fn fast_equals_straightforward(
            reference in proptest::collection::vec(0u64..20, 1..40),
            class in proptest::collection::vec((0u32..40, 1u64..10), 1..30),
            t_milli in 1u32..=1000,
        ) {
            let m = reference.len() as u32;
            let class: Vec<(u32, u64)> = class.into_iter().map(|(r, c)| (r % m, c)).collect();
            // The class is part of the table: add it so that every class value occurs.
            let mut reference = reference;
            for &(r, c) in &class {
                reference[r as usize] += c;
            }
            let t = t_milli as f64 / 1000.0;
            let check = OrderedDistance::new(&reference, t);
            let fast = check.accepts(&class, &mut OrderedScratch::default());
            let slow = check.accepts_straightforward(&class);
            prop_assert_eq!(fast, slow);
            let d = check.distance(&class);
            if (d - t).abs() > 1e-9 {
                prop_assert_eq!(slow, d <= t);
            }
        }

        /// Monotonicity: merging two t-close classes gives a t-close class (EMD is convex).
        #[test]
        fn merging_close_classes_stays_close(
            reference in proptest::collection::vec(1u64..20, 2..12),
            a in proptest::collection::vec((0u32..12, 1u64..6), 1..8),
            b in proptest::collection::vec((0u32..12, 1u64..6), 1..8),
            t_milli in 1u32..=1000,
        ) {
            let m = reference.len() as u32;
            let a: Vec<(u32, u64)> = a.into_iter().map(|(r, c)| (r % m, c)).collect();
            let b: Vec<(u32, u64)> = b.into_iter().map(|(r, c)| (r % m, c)).collect();
            let check = OrderedDistance::new(&reference, t_milli as f64 / 1000.0);
            if check.accepts_straightforward(&a) && check.accepts_straightforward(&b) {
                let both: Vec<(u32, u64)> = a.iter().chain(&b).copied().collect();
                prop_assert!(check.accepts(&both, &mut OrderedScratch::default()));
            }
        }
    }
}
