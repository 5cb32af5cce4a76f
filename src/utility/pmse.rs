//! The propensity mean squared error (pMSE) as SDNist 2.5 computes it: a decision tree
//! (CART, Gini impurity, depth at most 6, every feature considered at every node) is fitted
//! to tell the release's rows from the source's, on the rows themselves; every row's
//! propensity is the release's share of its leaf, and
//! `pMSE = (1/N) Σ_rows (p − c)²` with `c = n_release / N` over the `N` rows of both.
//! 0 when the tree cannot tell the tables apart; `c (1 − c)` when it always can.
//!
//! The tree is scikit-learn's `DecisionTreeClassifier(max_depth = 6)`: a node is split at
//! the threshold between two consecutive values of one feature that most lowers the
//! weighted Gini impurity (a split that lowers it by nothing is still made, as there), and
//! is a leaf at the depth limit, when pure, or when no feature takes two values in it.
//! Equally good splits are chosen in column order, where scikit-learn draws the order of
//! the features at random: trees differ only where two splits tie exactly.
//!
//! Rows are counted once per distinct combination of values, with their counts in each
//! table as weights, which gives the tree of the expanded rows.

use std::collections::BTreeMap;

/// SDNist's depth limit.
pub const MAX_DEPTH: usize = 6;

/// One distinct combination of coded values, with how many rows of each table hold it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// The codes, one per column, in the order of the column's values.
    pub codes: Vec<u32>,
    /// Rows of the source.
    pub source: f64,
    /// Rows of the release.
    pub release: f64,
}

/// The pMSE and the tree it came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pmse {
    /// The pMSE.
    pub value: f64,
    /// The release's share of all rows, `c`.
    pub share: f64,
    /// The tree's leaves.
    pub leaves: usize,
}

/// The pMSE of `cells` over `columns` coded columns; `None` when either table is empty.
pub fn pmse(cells: &[Cell], columns: usize, max_depth: usize) -> Option<Pmse> {
    let source: f64 = cells.iter().map(|c| c.source).sum();
    let release: f64 = cells.iter().map(|c| c.release).sum();
    if source <= 0.0 || release <= 0.0 {
        return None;
    }
    let rows = source + release;
    let share = release / rows;
    let mut tree = Tree {
        cells,
        columns,
        max_depth,
        share,
        sum: 0.0,
        leaves: 0,
    };
    let all: Vec<usize> = (0..cells.len()).collect();
    tree.grow(&all, 0);
    Some(Pmse {
        value: tree.sum / rows,
        share,
        leaves: tree.leaves,
    })
}

struct Tree<'a> {
    cells: &'a [Cell],
    columns: usize,
    max_depth: usize,
    share: f64,
    /// `Σ n_leaf (p_leaf − c)²` over the leaves made so far.
    sum: f64,
    leaves: usize,
}

/// A split: rows whose code in `column` is at most `code` go left.
#[derive(Debug, Clone, Copy)]
struct Split {
    column: usize,
    code: u32,
    proxy: f64,
}

impl Tree<'_> {
    fn grow(&mut self, items: &[usize], depth: usize) {
        let (w0, w1) = self.weights(items);
        let n = w0 + w1;
        let impurity = 1.0 - (w0 * w0 + w1 * w1) / (n * n);
        let split = if depth >= self.max_depth || n < 2.0 || impurity <= f64::EPSILON {
            None
        } else {
            self.best_split(items)
        };
        match split {
            None => {
                let p = w1 / n;
                self.sum += n * (p - self.share) * (p - self.share);
                self.leaves += 1;
            }
            Some(split) => {
                let (left, right): (Vec<usize>, Vec<usize>) = items
                    .iter()
                    .partition(|&&i| self.cells[i].codes[split.column] <= split.code);
                self.grow(&left, depth + 1);
                self.grow(&right, depth + 1);
            }
        }
    }

    fn weights(&self, items: &[usize]) -> (f64, f64) {
        items.iter().fold((0.0, 0.0), |(a, b), &i| {
            (a + self.cells[i].source, b + self.cells[i].release)
        })
    }

    /// The split with the largest Gini proxy `Σ_side (n₀² + n₁²) / n` (scikit-learn's
    /// `proxy_impurity_improvement`), the first of equals in column and code order.
    fn best_split(&self, items: &[usize]) -> Option<Split> {
        let mut best: Option<Split> = None;
        for column in 0..self.columns {
            let mut by_code: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
            for &i in items {
                let cell = &self.cells[i];
                let entry = by_code.entry(cell.codes[column]).or_default();
                entry.0 += cell.source;
                entry.1 += cell.release;
            }
            if by_code.len() < 2 {
                continue;
            }
            let (t0, t1) = by_code
                .values()
                .fold((0.0, 0.0), |(a, b), &(x, y)| (a + x, b + y));
            let (mut l0, mut l1) = (0.0, 0.0);
            let last = by_code.len() - 1;
            for (k, (&code, &(x, y))) in by_code.iter().enumerate() {
                if k == last {
                    break;
                }
                l0 += x;
                l1 += y;
                let (r0, r1) = (t0 - l0, t1 - l1);
                let proxy = (l0 * l0 + l1 * l1) / (l0 + l1) + (r0 * r0 + r1 * r1) / (r0 + r1);
                if best.is_none_or(|b| proxy > b.proxy) {
                    best = Some(Split {
                        column,
                        code,
                        proxy,
                    });
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(codes: &[u32], source: f64, release: f64) -> Cell {
        Cell {
            codes: codes.to_vec(),
            source,
            release,
        }
    }

    #[test]
    fn identical_tables_have_no_error() {
        let cells = vec![cell(&[0, 1], 3.0, 3.0), cell(&[1, 0], 5.0, 5.0)];
        let p = pmse(&cells, 2, MAX_DEPTH).unwrap();
        assert_eq!(p.value, 0.0);
        assert_eq!(p.share, 0.5);
    }

    #[test]
    fn separable_tables_reach_c_times_one_minus_c() {
        // The release (1 row in 4) holds only values the source never does.
        let cells = vec![cell(&[0], 3.0, 0.0), cell(&[1], 0.0, 1.0)];
        let p = pmse(&cells, 1, MAX_DEPTH).unwrap();
        assert!((p.value - 0.25 * 0.75).abs() < 1e-15, "{p:?}");
        assert_eq!(p.leaves, 2);
    }

    #[test]
    fn a_split_that_gains_nothing_is_still_made() {
        // XOR: no single split lowers the impurity, two levels separate the tables.
        let cells = vec![
            cell(&[0, 0], 1.0, 0.0),
            cell(&[1, 1], 1.0, 0.0),
            cell(&[0, 1], 0.0, 1.0),
            cell(&[1, 0], 0.0, 1.0),
        ];
        let p = pmse(&cells, 2, MAX_DEPTH).unwrap();
        assert!((p.value - 0.25).abs() < 1e-15, "{p:?}");
        assert_eq!(p.leaves, 4);
        // At depth 1 the tree stops after the useless split: every row gets 1/2.
        let p = pmse(&cells, 2, 1).unwrap();
        assert_eq!(p.value, 0.0);
    }

    #[test]
    fn the_leaf_share_gives_the_error() {
        // One leaf per code: shares 1/4 and 3/4 against c = 1/2.
        let cells = vec![cell(&[0], 3.0, 1.0), cell(&[1], 1.0, 3.0)];
        let p = pmse(&cells, 1, MAX_DEPTH).unwrap();
        assert!((p.value - 0.0625).abs() < 1e-15, "{p:?}");
        assert!(pmse(&[cell(&[0], 3.0, 0.0)], 1, MAX_DEPTH).is_none());
    }
}
