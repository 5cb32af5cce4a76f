//! What happens to the classes that fail the privacy model at a node (METHODS.md §3.4):
//! record suppression (every quasi-identifier of their records becomes `*`) or cell
//! suppression (their records lose single values, least important attribute first, until
//! each group of records sharing a quasi-identifier tuple — `*` counting as a value — passes).

use std::collections::BTreeMap;

use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;

/// How the classes that fail the privacy model are suppressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuppressionMode {
    /// Whole records: every quasi-identifier of a failing class becomes `*`.
    Record,
    /// Single values (cells), least important attribute first; what cannot be fixed that
    /// way is suppressed as a record.
    Cell,
}

impl SuppressionMode {
    /// The mode called `name` (`'record'` or `'cell'`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "record" => Some(Self::Record),
            "cell" => Some(Self::Cell),
            _ => None,
        }
    }

    /// The name in SQL.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Record => "record",
            Self::Cell => "cell",
        }
    }
}

/// The class test: whether a class of this size and these `(value, count)` pairs passes.
pub type Releasable<'a> = &'a dyn Fn(u64, &[(u32, u64)]) -> bool;

/// The mask of a fully suppressed record over `attrs` attributes.
pub fn full_mask(attrs: usize) -> u64 {
    if attrs >= 64 {
        u64::MAX
    } else {
        (1u64 << attrs) - 1
    }
}

/// One released group of suppressed records: the classes merged into it share their values
/// outside `mask` and show `*` inside it.
#[derive(Debug, Clone, PartialEq)]
pub struct SuppressedGroup {
    /// Attributes shown as `*`.
    pub mask: u64,
    /// The node's classes merged into this group (ascending).
    pub classes: Vec<usize>,
    /// Number of records.
    pub size: u64,
}

/// The suppression of one node's failing classes.
#[derive(Debug, Clone, PartialEq)]
pub struct SuppressionPlan {
    /// Per class of the node, the attributes its records lose (0: released as it is).
    pub masks: Vec<u64>,
    /// Groups of suppressed records; the fully suppressed group (mask of every attribute),
    /// if any, is last.
    pub groups: Vec<SuppressedGroup>,
    /// Released classes: intact ones plus the partially suppressed groups.
    pub released_groups: u64,
    /// Sum of their squared sizes.
    pub released_square_sum: u128,
    /// Records with every attribute suppressed.
    pub suppressed_records: u64,
    /// Values replaced by `*` (a fully suppressed record counts every attribute).
    pub suppressed_cells: u64,
}

/// The order in which cell suppression takes attributes away: ascending weight (least
/// important first), then more distinct values at the node's level first (the attribute
/// most likely to separate records), then quasi-identifier order. Attributes whose level
/// has a single value are left out: suppressing them changes nothing.
pub fn cell_order(hierarchies: &[&Hierarchy], node: &[usize], weights: &[f64]) -> Vec<usize> {
    let weight = |a: usize| weights.get(a).copied().unwrap_or(1.0);
    let cardinality = |a: usize| hierarchies[a].level(node[a]).cardinality();
    let mut order: Vec<usize> = (0..hierarchies.len())
        .filter(|&a| cardinality(a) > 1)
        .collect();
    order.sort_by(|&x, &y| {
        weight(x)
            .total_cmp(&weight(y))
            .then(cardinality(y).cmp(&cardinality(x)))
            .then(x.cmp(&y))
    });
    order
}

/// The class's `(value, count)` pairs.
fn pairs(classes: &GroupedHistogram, c: usize) -> impl Iterator<Item = (u32, u64)> + '_ {
    classes.pairs(c)
}

/// Plans the suppression of the `failing` classes (ascending) of `classes`.
///
/// Record mode merges them into one fully suppressed group. Cell mode, with `order` from
/// [`cell_order`], takes away the first attribute of `order` from every failing class, groups
/// the records by their remaining values, releases each group that `releasable` accepts
/// (its size and merged value counts), and repeats with the next attribute on the records
/// left over; whatever is left when only the last attribute of `order` remains is suppressed
/// as records.
pub fn plan_suppression(
    classes: &GroupedHistogram,
    failing: &[usize],
    mode: SuppressionMode,
    order: &[usize],
    releasable: Releasable<'_>,
) -> SuppressionPlan {
    let attrs = classes.class_codes.len();
    let full = full_mask(attrs);
    let mut masks = vec![0u64; classes.class_count()];
    let mut groups = Vec::new();
    let mut released_groups = 0u64;
    let mut released_square_sum = 0u128;
    let mut suppressed_cells = 0u64;
    let mut failed = vec![false; classes.class_count()];
    for &c in failing {
        failed[c] = true;
    }
    for (c, &f) in failed.iter().enumerate() {
        if !f {
            let n = classes.class_size(c) as u128;
            released_groups += 1;
            released_square_sum += n * n;
        }
    }

    let mut remaining: Vec<usize> = failing.to_vec();
    if mode == SuppressionMode::Cell && order.len() > 1 {
        let mut mask = 0u64;
        for &attr in &order[..order.len() - 1] {
            if remaining.is_empty() {
                break;
            }
            mask |= 1u64 << attr;
            let kept: Vec<usize> = (0..attrs).filter(|a| mask >> a & 1 == 0).collect();
            let key = |c: usize| -> Vec<u32> {
                kept.iter().map(|&a| classes.class_codes[a][c]).collect()
            };
            remaining.sort_by_cached_key(|&c| (key(c), c));
            let mut next = Vec::new();
            let mut i = 0;
            while i < remaining.len() {
                let run_key = key(remaining[i]);
                let mut j = i;
                let mut size = 0u64;
                let mut values: BTreeMap<u32, u64> = BTreeMap::new();
                while j < remaining.len() && key(remaining[j]) == run_key {
                    size += classes.class_size(remaining[j]);
                    for (v, n) in pairs(classes, remaining[j]) {
                        *values.entry(v).or_default() += n;
                    }
                    j += 1;
                }
                let merged: Vec<(u32, u64)> = values.into_iter().collect();
                if releasable(size, &merged) {
                    let mut members: Vec<usize> = remaining[i..j].to_vec();
                    members.sort_unstable();
                    for &c in &members {
                        masks[c] = mask;
                    }
                    suppressed_cells += size * u64::from(mask.count_ones());
                    released_groups += 1;
                    released_square_sum += size as u128 * size as u128;
                    groups.push(SuppressedGroup {
                        mask,
                        classes: members,
                        size,
                    });
                } else {
                    next.extend_from_slice(&remaining[i..j]);
                }
                i = j;
            }
            remaining = next;
        }
    }
    let mut suppressed_records = 0u64;
    if !remaining.is_empty() {
        remaining.sort_unstable();
        for &c in &remaining {
            masks[c] = full;
            suppressed_records += classes.class_size(c);
        }
        suppressed_cells += suppressed_records * attrs as u64;
        groups.push(SuppressedGroup {
            mask: full,
            classes: remaining,
            size: suppressed_records,
        });
    }
    SuppressionPlan {
        masks,
        groups,
        released_groups,
        released_square_sum,
        suppressed_records,
        suppressed_cells,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Classes over three attributes with sizes; one informative value.
    fn classes(rows: &[([u32; 3], u64)]) -> GroupedHistogram {
        GroupedHistogram {
            levels: vec![0, 0, 0],
            class_codes: (0..3)
                .map(|a| rows.iter().map(|r| r.0[a]).collect())
                .collect(),
            class_offsets: (0..=rows.len()).collect(),
            pair_values: vec![0; rows.len()],
            pair_counts: rows.iter().map(|r| r.1).collect(),
        }
    }

    #[test]
    fn record_mode_suppresses_every_failing_class() {
        let h = classes(&[([0, 0, 0], 1), ([0, 0, 1], 1), ([1, 1, 1], 5)]);
        let plan = plan_suppression(&h, &[0, 1], SuppressionMode::Record, &[2, 1, 0], &|n, _| {
            n >= 2
        });
        assert_eq!(plan.masks, vec![7, 7, 0]);
        assert_eq!(plan.suppressed_records, 2);
        assert_eq!(plan.suppressed_cells, 6);
        assert_eq!(plan.released_groups, 1);
        assert_eq!(plan.released_square_sum, 25);
    }

    #[test]
    fn cell_mode_takes_single_values_first() {
        // k = 2. Classes 0 and 1 differ only in attribute 2: one '*' in attribute 2 makes a
        // group of 2. Class 2 is alone even after attribute 1 goes: fully suppressed.
        let h = classes(&[
            ([0, 0, 0], 1),
            ([0, 0, 1], 1),
            ([1, 1, 1], 1),
            ([2, 2, 2], 4),
        ]);
        let plan = plan_suppression(
            &h,
            &[0, 1, 2],
            SuppressionMode::Cell,
            &[2, 1, 0],
            &|n, _| n >= 2,
        );
        assert_eq!(plan.masks, vec![4, 4, 7, 0]);
        assert_eq!(plan.suppressed_records, 1);
        assert_eq!(plan.suppressed_cells, 2 + 3);
        assert_eq!(plan.released_groups, 2);
        assert_eq!(plan.released_square_sum, 16 + 4);
        assert_eq!(plan.groups.len(), 2);
        assert_eq!(plan.groups[0].classes, vec![0, 1]);
        assert_eq!(plan.groups[1].mask, 7);
        // A second step: classes agreeing only on attribute 0 meet once 2 and 1 are gone.
        let h = classes(&[([0, 0, 0], 1), ([0, 1, 1], 1), ([3, 3, 3], 9)]);
        let plan = plan_suppression(&h, &[0, 1], SuppressionMode::Cell, &[2, 1, 0], &|n, _| {
            n >= 2
        });
        assert_eq!(plan.masks, vec![6, 6, 0]);
        assert_eq!(plan.suppressed_records, 0);
        assert_eq!(plan.suppressed_cells, 4);
    }
}
