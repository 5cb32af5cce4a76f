//! The privacy-model figures `anonymize_assess(...)` reports for one sensitive column of a
//! table grouped by its quasi-identifiers: the smallest distinct and entropy ℓ of any
//! class and the largest equal-distance and ordered-distance t (docs/METHODS.md §7.5).
//! Pure over (class, value, count) rows; the SQL function reads and codes the table.

use super::models::fib_map::FibMap;
use super::models::l_diversity::entropy_l;
use super::models::ordered_distance::OrderedDistance;
use super::models::t_closeness::EqualDistance;

/// The grouped table, one entry per (class, value) row.
#[derive(Debug, Clone, Copy)]
pub struct Rows<'a> {
    /// Class id of each row.
    pub class_of: &'a [u32],
    /// Whether the row is suppressed (every quasi-identifier `*`): in no class.
    pub suppressed: &'a [bool],
    /// Value id of each row.
    pub value_of: &'a [u32],
    /// Records of each row.
    pub counts: &'a [u64],
}

/// ℓ and t of one sensitive column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SensitiveFigures {
    /// Smallest number of distinct values in a class (0 without classes).
    pub l_distinct: u64,
    /// Smallest entropy ℓ of a class (0 without classes).
    pub l_entropy: f64,
    /// Largest equal-distance EMD of a class to the whole table.
    pub t_equal: f64,
    /// Largest ordered-distance EMD, for a column with a natural order.
    pub t_ordered: Option<f64>,
}

impl SensitiveFigures {
    /// The figures of `rows` grouped into `classes` classes; `reference` counts every
    /// record of the table (suppressed ones included) per value id; `rank` orders the
    /// value ids when the column has a natural order.
    pub fn of(rows: &Rows<'_>, classes: usize, reference: &[u64], rank: Option<&[u32]>) -> Self {
        let m = reference.len();
        let equal = EqualDistance::new(reference, 1.0);
        let ordered = rank.map(|rank| {
            let mut by_rank = vec![0u64; m];
            for (v, &c) in reference.iter().enumerate() {
                by_rank[rank[v] as usize] = c;
            }
            OrderedDistance::new(&by_rank, 1.0)
        });
        // Per class: its values (several rows may share one value of this column).
        let mut rows_of_class: Vec<Vec<u32>> = vec![Vec::new(); classes];
        for r in 0..rows.counts.len() {
            if !rows.suppressed[r] {
                rows_of_class[rows.class_of[r] as usize].push(r as u32);
            }
        }
        let mut map = FibMap::default();
        let (mut l_distinct, mut l_entropy) = (u64::MAX, f64::INFINITY);
        let (mut t_equal, mut t_ordered) = (0.0f64, 0.0f64);
        let mut pairs: Vec<(u32, u64)> = Vec::new();
        for members in rows_of_class.iter().filter(|r| !r.is_empty()) {
            map.clear();
            for &r in members {
                map.add(rows.value_of[r as usize], rows.counts[r as usize]);
            }
            pairs.clear();
            pairs.extend(map.entries());
            let class_counts: Vec<u64> = pairs.iter().map(|p| p.1).collect();
            l_distinct = l_distinct.min(pairs.len() as u64);
            l_entropy = l_entropy.min(entropy_l(&class_counts));
            t_equal = t_equal.max(equal.distance(&pairs));
            if let (Some(check), Some(rank)) = (&ordered, rank) {
                let ranked: Vec<(u32, u64)> =
                    pairs.iter().map(|&(v, c)| (rank[v as usize], c)).collect();
                t_ordered = t_ordered.max(check.distance(&ranked));
            }
        }
        if l_distinct == u64::MAX {
            (l_distinct, l_entropy) = (0, 0.0);
        }
        Self {
            l_distinct,
            l_entropy,
            t_equal,
            t_ordered: ordered.map(|_| t_ordered),
        }
    }
}
