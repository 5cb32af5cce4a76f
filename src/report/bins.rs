//! How the report reads a column of the input and of the release onto one set of bins, so
//! that their distributions can be drawn side by side and compared (docs/METHODS.md §11.2).
//!
//! A value of the input falls in exactly one bin. A value of the release may be
//! generalized: it is spread over the bins of the leaves its hierarchy puts under it, in
//! proportion to how many leaves each bin holds (every leaf under a label is taken as
//! equally likely, the reading of the NCP and of the k-marginal score).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use crate::hierarchy::{Hierarchy, STAR};

/// Most bins a column is read onto.
pub const MAX_BINS: usize = 40;

/// Equal-width bins of a numeric column without a hierarchy.
const NUMERIC_BINS: usize = 10;

/// A released value's share of each bin: `(bin, weight)` with weights summing to 1.
pub type Spread = Vec<(usize, f64)>;

/// A [`Spread`] held by the bins, or made for one value.
pub type SpreadRef<'a> = Cow<'a, [(usize, f64)]>;

/// The bins of one column and how values map onto them.
#[derive(Debug, Clone)]
pub struct Binner {
    /// The column's name.
    pub column: String,
    /// One label per bin.
    pub labels: Vec<String>,
    /// How the bins were made, in words for the report.
    pub reading: String,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// A hierarchy's level: every label of every level → its leaves' bins.
    Hierarchy {
        spread: HashMap<String, Spread>,
        leaf_bin: HashMap<String, usize>,
    },
    /// Equal-width bins over `[lo, hi]`.
    Numeric { lo: f64, width: f64 },
    /// One bin per value, the least frequent merged into the last bin ("other").
    Category { index: HashMap<String, usize> },
}

impl Binner {
    /// Bins at the lowest level of `hierarchy` with at most [`MAX_BINS`] labels; each label
    /// of every level spreads over the bins of its leaves.
    pub fn from_hierarchy(column: &str, hierarchy: &Hierarchy) -> Self {
        let level = (0..=hierarchy.height())
            .find(|&l| hierarchy.level(l).cardinality() <= MAX_BINS)
            .unwrap_or(hierarchy.height());
        let target = hierarchy.level(level);
        let leaf_bin_code = target.leaf_to_code();
        let mut spread: HashMap<String, Spread> = HashMap::new();
        // From the top down, so that a label found at several levels is read at the
        // lowest one.
        for l in (0..=hierarchy.height()).rev() {
            let at = hierarchy.level(l);
            let mut per_code: Vec<HashMap<usize, f64>> = vec![HashMap::new(); at.cardinality()];
            for (leaf, &code) in at.leaf_to_code().iter().enumerate() {
                *per_code[code as usize]
                    .entry(leaf_bin_code[leaf] as usize)
                    .or_default() += 1.0;
            }
            for (code, bins) in per_code.into_iter().enumerate() {
                let total: f64 = bins.values().sum();
                let mut bins: Spread = bins.into_iter().map(|(b, n)| (b, n / total)).collect();
                bins.sort_by_key(|&(b, _)| b);
                spread.insert(at.labels()[code].clone(), bins);
            }
        }
        let leaves = hierarchy.level(0);
        let leaf_bin = leaves
            .labels()
            .iter()
            .enumerate()
            .map(|(leaf, label)| (label.clone(), leaf_bin_code[leaf] as usize))
            .collect();
        let reading = if level == 0 {
            "its values".to_string()
        } else {
            format!(
                "level {level} of its hierarchy ({} groups); a released value above that level is spread evenly over the leaves under it",
                target.cardinality()
            )
        };
        Self {
            column: column.to_string(),
            labels: target.labels().to_vec(),
            reading,
            kind: Kind::Hierarchy { spread, leaf_bin },
        }
    }

    /// [`NUMERIC_BINS`] equal-width bins over the input's range `[lo, hi]`.
    pub fn numeric(column: &str, lo: f64, hi: f64) -> Self {
        let width = if hi > lo {
            (hi - lo) / NUMERIC_BINS as f64
        } else {
            1.0
        };
        let bins = if hi > lo { NUMERIC_BINS } else { 1 };
        let labels = (0..bins)
            .map(|b| {
                let from = lo + width * b as f64;
                format!("{}–{}", short(from), short(from + width))
            })
            .collect();
        Self {
            column: column.to_string(),
            labels,
            reading: format!("{bins} equal-width bins over the input's range"),
            kind: Kind::Numeric { lo, width },
        }
    }

    /// One bin per value of the input, most frequent first; past [`MAX_BINS`] − 1 values
    /// the rest share one bin, "other".
    pub fn categories(column: &str, counts: &[(String, f64)]) -> Self {
        let mut sorted: Vec<&(String, f64)> = counts.iter().collect();
        sorted.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let keep = if sorted.len() > MAX_BINS {
            MAX_BINS - 1
        } else {
            sorted.len()
        };
        let mut labels: Vec<String> = sorted[..keep].iter().map(|(v, _)| v.clone()).collect();
        let mut index: HashMap<String, usize> = labels
            .iter()
            .enumerate()
            .map(|(i, v)| (v.clone(), i))
            .collect();
        if sorted.len() > keep {
            for (v, _) in &sorted[keep..] {
                index.insert(v.clone(), keep);
            }
            labels.push("other".to_string());
        }
        let reading = if sorted.len() > keep {
            format!(
                "its {keep} most frequent values, the other {} in one bin",
                sorted.len() - keep
            )
        } else {
            "its values".to_string()
        };
        Self {
            column: column.to_string(),
            labels,
            reading,
            kind: Kind::Category { index },
        }
    }

    /// The bin of a value of the input (`None` for a value the bins do not know).
    pub fn input_bin(&self, value: &str) -> Option<usize> {
        match &self.kind {
            Kind::Hierarchy { leaf_bin, .. } => leaf_bin.get(value).copied(),
            Kind::Numeric { .. } => self.numeric_bin(value),
            Kind::Category { index } => index.get(value).copied(),
        }
    }

    /// How a value of the release spreads over the bins (`None` for a value the bins do
    /// not know).
    pub fn released(&self, value: &str) -> Option<SpreadRef<'_>> {
        match &self.kind {
            Kind::Hierarchy { spread, .. } => {
                spread.get(value).map(|s| Cow::Borrowed(s.as_slice()))
            }
            _ => self.input_bin(value).map(|b| Cow::Owned(vec![(b, 1.0)])),
        }
    }

    /// Whether a released value is the suppressed value `*`.
    pub fn is_suppressed(value: &str) -> bool {
        value == STAR
    }

    fn numeric_bin(&self, value: &str) -> Option<usize> {
        let Kind::Numeric { lo, width } = self.kind else {
            return None;
        };
        let x: f64 = value.trim().parse().ok()?;
        if !x.is_finite() {
            return None;
        }
        let bin = ((x - lo) / width).floor();
        Some((bin.max(0.0) as usize).min(self.labels.len() - 1))
    }
}

/// A number in at most four significant digits.
fn short(x: f64) -> String {
    let text = format!("{x:.4}");
    let trimmed = text.trim_end_matches('0').trim_end_matches('.');
    if trimmed.len() > 8 {
        format!("{x:.3e}")
    } else {
        trimmed.to_string()
    }
}

/// The counts of every bin of one column, and of every pair of bins of two columns, in one
/// table (the input or the release).
#[derive(Debug, Clone, Default)]
pub struct Marginals {
    /// Per column, the (spread) count of each bin.
    pub one_way: Vec<Vec<f64>>,
    /// Per column, the records whose value is `*`.
    pub suppressed: Vec<f64>,
    /// Per column, the records whose value the bins do not know.
    pub unknown: Vec<f64>,
    /// Per pair of columns `(a, b)`, `a < b`, in order: the count of each pair of bins.
    pub two_way: Vec<BTreeMap<(usize, usize), f64>>,
    /// Records counted.
    pub records: f64,
}

/// Which of the two tables a [`Marginals`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The input: every value in one bin.
    Input,
    /// The release: generalized values spread, `*` counted as suppressed (and spread over
    /// every bin in the two-way counts).
    Release,
}

impl Marginals {
    /// Empty counts for `binners`.
    pub fn new(binners: &[Binner]) -> Self {
        let m = binners.len();
        Self {
            one_way: binners.iter().map(|b| vec![0.0; b.labels.len()]).collect(),
            suppressed: vec![0.0; m],
            unknown: vec![0.0; m],
            two_way: vec![BTreeMap::new(); m * m.saturating_sub(1) / 2],
            records: 0.0,
        }
    }

    /// Adds `count` records with `values` (one per binner; `None` for NULL).
    pub fn add(&mut self, binners: &[Binner], side: Side, values: &[Option<&str>], count: f64) {
        if side == Side::Input {
            let bins: Vec<Option<usize>> = binners
                .iter()
                .zip(values)
                .map(|(binner, value)| value.and_then(|v| binner.input_bin(v)))
                .collect();
            self.add_input_bins(&bins, count);
            return;
        }
        self.records += count;
        let spreads: Vec<Option<SpreadRef<'_>>> = binners
            .iter()
            .zip(values)
            .enumerate()
            .map(|(c, (binner, value))| {
                let Some(value) = value else {
                    self.unknown[c] += count;
                    return None;
                };
                let spread = match side {
                    Side::Input => binner.input_bin(value).map(|b| Cow::Owned(vec![(b, 1.0)])),
                    Side::Release => binner.released(value),
                };
                match &spread {
                    None => self.unknown[c] += count,
                    Some(_) if side == Side::Release && Binner::is_suppressed(value) => {
                        self.suppressed[c] += count
                    }
                    Some(bins) => {
                        for &(b, w) in bins.iter() {
                            self.one_way[c][b] += count * w;
                        }
                    }
                }
                spread
            })
            .collect();
        let mut pair = 0;
        for a in 0..binners.len() {
            for b in a + 1..binners.len() {
                if let (Some(sa), Some(sb)) = (&spreads[a], &spreads[b]) {
                    let cells = &mut self.two_way[pair];
                    for &(x, wx) in sa.iter() {
                        for &(y, wy) in sb.iter() {
                            *cells.entry((x, y)).or_default() += count * wx * wy;
                        }
                    }
                }
                pair += 1;
            }
        }
    }
}

impl Marginals {
    /// Counts `count` input records whose values fall in `bins` in the records, the one-way
    /// counts and the unknown values, not the two-way counts.
    pub fn add_one_way_bins(&mut self, bins: &[Option<usize>], count: f64) {
        self.records += count;
        for (c, bin) in bins.iter().enumerate() {
            match bin {
                Some(b) => self.one_way[c][*b] += count,
                None => self.unknown[c] += count,
            }
        }
    }

    /// Adds `count` input records whose values fall in `bins` (one per binner; `None` for
    /// NULL or a value the bins do not know), the way [`Marginals::add`] counts the input.
    pub fn add_input_bins(&mut self, bins: &[Option<usize>], count: f64) {
        self.add_one_way_bins(bins, count);
        let mut pair = 0;
        for a in 0..bins.len() {
            for b in a + 1..bins.len() {
                if let (Some(x), Some(y)) = (bins[a], bins[b]) {
                    *self.two_way[pair].entry((x, y)).or_default() += count;
                }
                pair += 1;
            }
        }
    }
}

/// The 2-way k-marginal score of a release against its input, in `[0, 1000]`: for every
/// pair of columns, `1 − TVD` of the two tables' joint distributions over the pair's bins
/// (TVD, the total variation distance, is half the sum of absolute differences of the
/// shares), averaged over the pairs, times 1000 (NIST CRC's k-marginal score with k = 2).
/// Returns the score of each pair too; `None` with fewer than two columns.
pub fn k_marginal_score(input: &Marginals, release: &Marginals) -> Option<(f64, Vec<f64>)> {
    if input.two_way.is_empty() {
        return None;
    }
    let per_pair: Vec<f64> = input
        .two_way
        .iter()
        .zip(&release.two_way)
        .map(|(p, q)| 1000.0 * (1.0 - total_variation(p, q)))
        .collect();
    let score = per_pair.iter().sum::<f64>() / per_pair.len() as f64;
    Some((score, per_pair))
}

/// Half the L1 distance between the shares of two count tables (1 when one is empty).
fn total_variation(p: &BTreeMap<(usize, usize), f64>, q: &BTreeMap<(usize, usize), f64>) -> f64 {
    let (np, nq): (f64, f64) = (p.values().sum(), q.values().sum());
    if np <= 0.0 || nq <= 0.0 {
        return 1.0;
    }
    let mut l1 = 0.0;
    for (cell, &x) in p {
        l1 += (x / np - q.get(cell).copied().unwrap_or(0.0) / nq).abs();
    }
    for (cell, &y) in q {
        if !p.contains_key(cell) {
            l1 += y / nq;
        }
    }
    (l1 / 2.0).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn age() -> Hierarchy {
        let rows: Vec<Vec<String>> = [
            ["20", "20-29", "*"],
            ["25", "20-29", "*"],
            ["30", "30-39", "*"],
            ["35", "30-39", "*"],
        ]
        .iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect();
        Hierarchy::from_rows("age", &rows).unwrap()
    }

    #[test]
    fn labels_spread_over_their_leaves_bins() {
        let b = Binner::from_hierarchy("age", &age());
        // Four leaves fit: bins are the leaves.
        assert_eq!(b.labels, ["20", "25", "30", "35"]);
        assert_eq!(b.input_bin("30"), Some(2));
        assert_eq!(b.released("20-29").unwrap()[..], [(0, 0.5), (1, 0.5)]);
        assert_eq!(
            b.released("*").unwrap()[..],
            [(0, 0.25), (1, 0.25), (2, 0.25), (3, 0.25)]
        );
        assert!(b.released("40").is_none());
    }

    #[test]
    fn numeric_and_category_bins() {
        let n = Binner::numeric("x", 0.0, 10.0);
        assert_eq!(n.labels.len(), 10);
        assert_eq!(n.input_bin("0"), Some(0));
        assert_eq!(n.input_bin("9.99"), Some(9));
        assert_eq!(n.input_bin("10"), Some(9));
        assert_eq!(n.input_bin("x"), None);
        let counts: Vec<(String, f64)> = (0..50).map(|i| (format!("v{i}"), i as f64)).collect();
        let c = Binner::categories("c", &counts);
        assert_eq!(c.labels.len(), MAX_BINS);
        assert_eq!(c.labels[0], "v49");
        assert_eq!(c.labels[MAX_BINS - 1], "other");
        assert_eq!(c.input_bin("v0"), Some(MAX_BINS - 1));
    }

    #[test]
    fn the_score_is_1000_for_an_identical_release_and_falls_with_generalization() {
        let h = age();
        let binners = vec![
            Binner::from_hierarchy("age", &h),
            Binner::categories("sex", &[("F".into(), 2.0), ("M".into(), 2.0)]),
        ];
        let rows = [("20", "F"), ("25", "M"), ("30", "F"), ("35", "M")];
        let mut input = Marginals::new(&binners);
        let mut same = Marginals::new(&binners);
        let mut coarse = Marginals::new(&binners);
        for (a, s) in rows {
            input.add(&binners, Side::Input, &[Some(a), Some(s)], 1.0);
            same.add(&binners, Side::Release, &[Some(a), Some(s)], 1.0);
            let decade = if a < "30" { "20-29" } else { "30-39" };
            coarse.add(&binners, Side::Release, &[Some(decade), Some(s)], 1.0);
        }
        let (score, pairs) = k_marginal_score(&input, &same).unwrap();
        assert_eq!(score, 1000.0);
        assert_eq!(pairs, [1000.0]);
        // (20, F) is one of four records: the coarse release puts 1/8 on each of the
        // four (age, sex) cells of each decade: |1/4 − 1/8| on the four cells with a
        // record, 1/8 on the four without: L1 = 1, TVD = 1/2.
        let (score, _) = k_marginal_score(&input, &coarse).unwrap();
        assert!((score - 500.0).abs() < 1e-9, "{score}");
        assert_eq!(coarse.one_way[0], [1.0, 1.0, 1.0, 1.0]);
    }

    #[test]
    fn suppressed_values_are_counted_apart_and_spread_in_pairs() {
        let h = age();
        let binners = vec![
            Binner::from_hierarchy("age", &h),
            Binner::categories("sex", &[("F".into(), 1.0)]),
        ];
        let mut release = Marginals::new(&binners);
        release.add(&binners, Side::Release, &[Some("*"), Some("F")], 4.0);
        release.add(&binners, Side::Release, &[None, Some("F")], 1.0);
        assert_eq!(release.suppressed, [4.0, 0.0]);
        assert_eq!(release.unknown, [1.0, 0.0]);
        assert_eq!(release.one_way[0], [0.0; 4]);
        assert_eq!(release.one_way[1], [5.0]);
        assert_eq!(release.two_way[0].values().sum::<f64>(), 4.0);
    }
}
