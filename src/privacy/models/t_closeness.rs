//! t-closeness of one class's sensitive values against the whole table's distribution (Li,
//! Li & Venkatasubramanian 2007; Bild 2024, §2.1.4, Definition 4), with the earth mover's
//! distance under equal ground distance, under a hierarchy's ground distance, or over an
//! ordered domain ([`super::ordered_distance`]). Computed exactly in integers scaled by
//! `n·N` (class size times table size). docs/METHODS.md §7.3.

use std::fmt;

use super::floor_times;
use crate::hierarchy::Hierarchy;

/// The ground distance of t-closeness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TModel {
    /// Every two distinct values are at distance 1: `D = ½ Σ |p_i − q_i|`.
    Equal,
    /// Two values are at distance `level(lowest common ancestor) / height` of the
    /// column's hierarchy.
    Hierarchical,
    /// Values of a total order: Formula 2.1 of Bild 2024.
    Ordered,
}

impl fmt::Display for TModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TModel::Equal => "equal",
            TModel::Hierarchical => "hierarchical",
            TModel::Ordered => "ordered",
        })
    }
}

/// Equal-distance t-closeness: `D = ½ Σ_i |p_i − q_i| = Σ_i max(0, p_i − q_i)`.
#[derive(Debug, Clone)]
pub struct EqualDistance {
    t: f64,
    total: u64,
    reference: Vec<u64>,
}

impl EqualDistance {
    /// The check against `reference` (records of each value code in the whole table).
    pub fn new(reference: &[u64], t: f64) -> Self {
        Self {
            t,
            total: reference.iter().sum(),
            reference: reference.to_vec(),
        }
    }

    /// `Σ max(0, C_i·N − Q_i·n)` over a class's distinct `(value, count)` pairs, and `n`.
    fn excess(&self, pairs: &[(u32, u64)]) -> (u128, u64) {
        let n: u64 = pairs.iter().map(|p| p.1).sum();
        let excess = pairs
            .iter()
            .map(|&(v, c)| {
                let a = c as u128 * self.total as u128;
                let b = self.reference[v as usize] as u128 * n as u128;
                a.saturating_sub(b)
            })
            .sum();
        (excess, n)
    }

    /// Whether the class (distinct values, any order) is t-close.
    pub fn accepts(&self, pairs: &[(u32, u64)]) -> bool {
        let (excess, n) = self.excess(pairs);
        excess <= floor_times(self.t, n as u128 * self.total as u128)
    }

    /// The distance of a class (distinct values, any order).
    pub fn distance(&self, pairs: &[(u32, u64)]) -> f64 {
        let (excess, n) = self.excess(pairs);
        if n == 0 {
            return 0.0;
        }
        excess as f64 / (n as f64 * self.total as f64)
    }
}

/// Hierarchical-distance t-closeness (Li et al. 2007, §4.2): with `extra` of a leaf
/// `p_i − q_i` and of an inner node the sum over its children,
/// `D = Σ_{inner nodes v} level(v)/H · min(Σ positive child extras, Σ |negative child extras|)`.
#[derive(Debug, Clone)]
pub struct HierarchicalDistance {
    t: f64,
    total: u64,
    height: usize,
    /// Records of each leaf in the whole table.
    reference: Vec<u64>,
    /// Per level l = 1..=H, the level-l code of each level-(l−1) code.
    parents: Vec<Vec<u32>>,
    /// Number of codes at each level 0..=H.
    cards: Vec<usize>,
}

impl HierarchicalDistance {
    /// The check over `hierarchy`, with `reference` the records of each leaf code.
    pub fn new(hierarchy: &Hierarchy, reference: Vec<u64>, t: f64) -> Self {
        let height = hierarchy.height();
        Self {
            t,
            total: reference.iter().sum(),
            height,
            reference,
            parents: (1..=height)
                .map(|l| hierarchy.level_map(l - 1, l))
                .collect(),
            cards: (0..=height)
                .map(|l| hierarchy.level(l).cardinality())
                .collect(),
        }
    }

    /// `Σ_v level(v) · min(pos, neg)` with extras scaled by `n·N`, and `n`.
    fn work(&self, pairs: &[(u32, u64)]) -> (u128, u64) {
        let n: u64 = pairs.iter().map(|p| p.1).sum();
        let mut extra: Vec<i128> = self
            .reference
            .iter()
            .map(|&q| -(q as i128 * n as i128))
            .collect();
        for &(leaf, c) in pairs {
            extra[leaf as usize] += c as i128 * self.total as i128;
        }
        let mut work: u128 = 0;
        for level in 1..=self.height {
            let size = self.cards[level];
            let mut pos = vec![0u128; size];
            let mut neg = vec![0u128; size];
            let mut up = vec![0i128; size];
            for (child, &e) in extra.iter().enumerate() {
                let p = self.parents[level - 1][child] as usize;
                if e > 0 {
                    pos[p] += e as u128;
                } else {
                    neg[p] += e.unsigned_abs();
                }
                up[p] += e;
            }
            for p in 0..size {
                work += level as u128 * pos[p].min(neg[p]);
            }
            extra = up;
        }
        (work, n)
    }

    /// Whether a class, given as distinct `(leaf code, count)` pairs, is t-close.
    pub fn accepts(&self, pairs: &[(u32, u64)]) -> bool {
        let (work, n) = self.work(pairs);
        if self.height == 0 {
            return true;
        }
        work <= floor_times(self.t, self.height as u128 * n as u128 * self.total as u128)
    }

    #[cfg(test)]
    /// The distance of a class given as distinct `(leaf code, count)` pairs.
    pub fn distance(&self, pairs: &[(u32, u64)]) -> f64 {
        let (work, n) = self.work(pairs);
        if n == 0 || self.height == 0 {
            return 0.0;
        }
        work as f64 / (self.height as f64 * n as f64 * self.total as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::rows;
    use proptest::prelude::*;

    #[test]
    fn equal_distance_by_hand() {
        // Q = (2, 1, 1) / 4; class (1, 1, 0) / 2: D = ½(|½ − ½| + |½ − ¼| + |0 − ¼|) = ¼.
        let check = EqualDistance::new(&[2, 1, 1], 0.25);
        assert!((check.distance(&[(0, 1), (1, 1)]) - 0.25).abs() < 1e-15);
        assert!(check.accepts(&[(0, 1), (1, 1)]));
        assert!(!EqualDistance::new(&[2, 1, 1], 0.2).accepts(&[(0, 1), (1, 1)]));
    }

    /// Li et al. 2007's example hierarchy shape: leaves a, b under x, c under y, root *.
    fn tree() -> Hierarchy {
        Hierarchy::from_rows(
            "s",
            &rows(&[&["a", "x", "*"], &["b", "x", "*"], &["c", "y", "*"]]),
        )
        .unwrap()
    }

    #[test]
    fn hierarchical_distance_by_hand() {
        // Q = (1, 1, 2) / 4. Class all 'a' (p = (1, 0, 0)): extras (3/4, −1/4, −1/2).
        // Node x: min(3/4, 1/4) = 1/4 at level 1 → 1/4 · 1/2. Node y: only negative → 0.
        // Root: children x (+1/2), y (−1/2): min = 1/2 at level 2 → 1/2 · 2/2.
        // D = 1/8 + 1/2 = 5/8.
        let check = HierarchicalDistance::new(&tree(), vec![1, 1, 2], 0.625);
        assert!((check.distance(&[(0, 3)]) - 0.625).abs() < 1e-15);
        assert!(check.accepts(&[(0, 3)]));
        assert!(!HierarchicalDistance::new(&tree(), vec![1, 1, 2], 0.6).accepts(&[(0, 3)]));
        // A class distributed as the table is at distance 0.
        assert_eq!(check.distance(&[(0, 1), (1, 1), (2, 2)]), 0.0);
    }

    fn group(pairs: &[(u32, u64)]) -> Vec<(u32, u64)> {
        let mut map = std::collections::BTreeMap::new();
        for &(v, c) in pairs {
            *map.entry(v).or_insert(0u64) += c;
        }
        map.into_iter().collect()
    }

    proptest! {
        /// Monotonicity of both distances under merging classes.
        #[test]
        fn merging_close_classes_stays_close(
            a in proptest::collection::vec((0u32..3, 1u64..6), 1..6),
            b in proptest::collection::vec((0u32..3, 1u64..6), 1..6),
            reference in proptest::collection::vec(1u64..9, 3..4),
            t_milli in 1u32..=1000,
        ) {
            let t = t_milli as f64 / 1000.0;
            let (a, b) = (group(&a), group(&b));
            let both = group(&[a.clone(), b.clone()].concat());
            let equal = EqualDistance::new(&reference, t);
            if equal.accepts(&a) && equal.accepts(&b) {
                prop_assert!(equal.accepts(&both));
            }
            let hier = HierarchicalDistance::new(&tree(), reference.clone(), t);
            if hier.accepts(&a) && hier.accepts(&b) {
                prop_assert!(hier.accepts(&both));
            }
        }
    }
}
