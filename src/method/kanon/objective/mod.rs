//! The utility metrics k-anonymity minimizes (METHODS.md §3.3): NCP and the six measures of
//! the ARX anonymization tool, with ARX's formulas, normalizations and aggregates.
//!
//! Every metric scores a node from its classes and what suppression does to them (a
//! [`Suppression`]), and gives two kinds of lower bounds for the search: a *static* bound
//! of a node from the data's per-attribute marginals (no roll-up needed), and for some
//! metrics a *class* bound from a checked node's classes. Both are valid for the node and
//! every generalization of it, whatever is suppressed there, so a node whose bound cannot
//! beat the best score so far can be skipped together with everything above it.

use std::cmp::Ordering;

use datafusion::common::{plan_err, Result};

use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;

mod arx;
mod suppression;

use arx::{arx_log2, arx_round, entropy_value};
use suppression::SuppressedCells;
pub use suppression::Suppression;

/// The metric names `metric => '...'` accepts, in the order help lists them.
pub const METRIC_NAMES: &[&str] = &[
    "ncp",
    "loss",
    "precision",
    "discernibility",
    "entropy",
    "aecs",
    "height",
];

/// Which utility metric to minimize.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Normalized certainty penalty (IPA paper Eq. 5–6), suppressed values scoring 1.
    Ncp,
    /// ARX's "Loss" (granularity), geometric mean over attributes.
    Loss,
    /// ARX's non-monotonic precision, arithmetic mean over attributes.
    Precision,
    /// ARX's non-monotonic discernibility.
    Discernibility,
    /// ARX's non-monotonic non-uniform entropy, summed over attributes.
    Entropy,
    /// ARX's average equivalence class size.
    Aecs,
    /// ARX's height: the sum of the generalization levels.
    Height,
}

impl MetricKind {
    /// The metric called `name` (one of [`METRIC_NAMES`]).
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "ncp" => Self::Ncp,
            "loss" => Self::Loss,
            "precision" => Self::Precision,
            "discernibility" => Self::Discernibility,
            "entropy" => Self::Entropy,
            "aecs" => Self::Aecs,
            "height" => Self::Height,
            other => {
                return plan_err!(
                    "unknown metric '{other}'; valid metrics: {}",
                    METRIC_NAMES.join(", ")
                )
            }
        })
    }

    /// The name in SQL.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Ncp => "ncp",
            Self::Loss => "loss",
            Self::Precision => "precision",
            Self::Discernibility => "discernibility",
            Self::Entropy => "entropy",
            Self::Aecs => "aecs",
            Self::Height => "height",
        }
    }

    /// One line for the metadata: what is minimized.
    pub fn describe(&self) -> &'static str {
        match self {
            Self::Ncp => "NCP (IPA paper Eq. 5-6, suppressed values score 1), compared exactly",
            Self::Loss => "ARX Loss: per attribute (sum of domain shares - N/|D|) / (N - N/|D|), suppressed values share 1, floored to 10 digits, weighted geometric mean",
            Self::Precision => "ARX precision: per attribute (unsuppressed * level/height + suppressed) / N, weighted arithmetic mean",
            Self::Discernibility => "ARX discernibility: sum of squared released class sizes + N * suppressed records, compared exactly",
            Self::Entropy => "ARX non-uniform entropy: per attribute -sum log2(P(leaf | generalized value)) plus the entropy of the suppressed values, floored to 10 digits, weighted sum",
            Self::Aecs => "ARX AECS: N / (released classes + 1 if any record is suppressed)",
            Self::Height => "ARX height: weighted sum of the generalization levels",
        }
    }
}

/// A node's score (lower is better): exact where the metric is a ratio of integers with a
/// common denominator, otherwise the `f64` ARX computes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Score {
    /// An exact integer numerator (NCP scaled by `q · N · D`, discernibility).
    Exact(u128),
    /// A floating-point score.
    Real(f64),
}

impl Score {
    /// Total order of scores of one metric (both of one kind).
    pub fn compare(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Self::Exact(a), Self::Exact(b)) => a.cmp(b),
            (a, b) => a.raw().total_cmp(&b.raw()),
        }
    }

    /// The larger of two scores.
    pub fn max(self, other: Self) -> Self {
        if other.compare(&self) == Ordering::Greater {
            other
        } else {
            self
        }
    }

    fn raw(&self) -> f64 {
        match self {
            Self::Exact(n) => *n as f64,
            Self::Real(x) => *x,
        }
    }
}

/// A metric prepared for one data set: per-attribute tables and marginals.
#[derive(Debug, Clone)]
pub struct Metric {
    kind: MetricKind,
    /// Number of records `N`.
    total: u64,
    /// Number of classes of the leaf-level histogram.
    base_classes: u64,
    /// Attribute weights, normalized to a maximum of 1 (ARX's rule).
    weights: Vec<f64>,
    /// Hierarchy height of each attribute.
    heights: Vec<usize>,
    /// Leaves under each code: `leaves[a][level][code]`.
    leaves: Vec<Vec<Vec<u64>>>,
    /// Leaves of each hierarchy (ARX's domain size).
    domain: Vec<u64>,
    /// Exact NCP penalties `ncp[a][level][code]` (NCP · D) and `D`.
    ncp: Vec<Vec<Vec<u128>>>,
    ncp_unit: u128,
    /// Per attribute and level, the metric's generalization-only total over all records:
    /// NCP numerator, sum of leaf counts (Loss), or raw non-uniform entropy.
    gen_exact: Vec<Vec<u128>>,
    gen_entropy: Vec<Vec<f64>>,
    /// Per attribute and level, the attribute's term of the static bound (Loss, Precision,
    /// Entropy, Height): the search computes a bound for every node it queues, and the
    /// terms are combined in attribute order, so the bound equals the formula's.
    bound_terms: Vec<Vec<f64>>,
}

impl Metric {
    /// Prepares `kind` for the data of the leaf-level histogram `base`; `weights` are the
    /// attributes' importance (any non-negative numbers, normalized as ARX does).
    pub fn new(
        kind: MetricKind,
        base: &GroupedHistogram,
        hierarchies: &[&Hierarchy],
        weights: &[f64],
    ) -> Result<Self> {
        let attrs = hierarchies.len();
        if attrs > 64 {
            return plan_err!("kanon supports at most 64 quasi-identifiers, got {attrs}");
        }
        if !weights.is_empty() && weights.len() != attrs {
            return plan_err!(
                "qi_weights: {} weight(s) for {attrs} quasi-identifier(s)",
                weights.len()
            );
        }
        let total = base.total();
        let maximum = weights.iter().copied().fold(0.0f64, f64::max);
        let weights: Vec<f64> = if maximum > 0.0 {
            weights.iter().map(|w| w / maximum).collect()
        } else {
            vec![1.0; attrs]
        };
        // Marginal leaf counts per attribute.
        let mut marginals: Vec<Vec<u64>> = hierarchies
            .iter()
            .map(|h| vec![0u64; h.leaf_count()])
            .collect();
        for c in 0..base.class_count() {
            let n = base.class_size(c);
            for (a, marginal) in marginals.iter_mut().enumerate() {
                marginal[base.class_codes[a][c] as usize] += n;
            }
        }
        let leaves: Vec<Vec<Vec<u64>>> = hierarchies
            .iter()
            .map(|h| {
                (0..=h.height())
                    .map(|l| h.level(l).leaf_counts().iter().map(|&c| c as u64).collect())
                    .collect()
            })
            .collect();
        let mut ncp_unit: u128 = 1;
        for h in hierarchies {
            let l = h.leaf_count() as u128;
            let Some(next) = (ncp_unit / num_integer::gcd(ncp_unit, l)).checked_mul(l) else {
                return plan_err!(
                    "kanon: the hierarchies' leaf counts are too large for exact loss comparison"
                );
            };
            ncp_unit = next;
        }
        let ncp: Vec<Vec<Vec<u128>>> = hierarchies
            .iter()
            .map(|h| {
                let unit = ncp_unit / h.leaf_count() as u128;
                (0..=h.height())
                    .map(|level| {
                        h.level(level)
                            .leaf_counts()
                            .iter()
                            .map(|&c| if c <= 1 { 0 } else { c as u128 * unit })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let mut gen_exact = vec![Vec::new(); attrs];
        let mut gen_entropy = vec![Vec::new(); attrs];
        for (a, h) in hierarchies.iter().enumerate() {
            for level in 0..=h.height() {
                let to_code = h.level(level).leaf_to_code();
                let exact: u128 = match kind {
                    MetricKind::Ncp => marginals[a]
                        .iter()
                        .enumerate()
                        .map(|(leaf, &n)| n as u128 * ncp[a][level][to_code[leaf] as usize])
                        .sum(),
                    MetricKind::Loss => marginals[a]
                        .iter()
                        .enumerate()
                        .map(|(leaf, &n)| {
                            n as u128 * leaves[a][level][to_code[leaf] as usize] as u128
                        })
                        .sum(),
                    _ => 0,
                };
                gen_exact[a].push(exact);
                let entropy = if kind == MetricKind::Entropy {
                    let mut generalized = vec![0u64; h.level(level).cardinality()];
                    for (leaf, &n) in marginals[a].iter().enumerate() {
                        generalized[to_code[leaf] as usize] += n;
                    }
                    let mut value = 0.0;
                    for (leaf, &n) in marginals[a].iter().enumerate() {
                        if n > 0 {
                            let b = generalized[to_code[leaf] as usize] as f64;
                            value += n as f64 * arx_log2(n as f64 / b);
                        }
                    }
                    value
                } else {
                    0.0
                };
                gen_entropy[a].push(entropy);
            }
        }
        let mut metric = Self {
            kind,
            total,
            base_classes: base.class_count() as u64,
            weights,
            heights: hierarchies.iter().map(|h| h.height()).collect(),
            leaves,
            domain: hierarchies.iter().map(|h| h.leaf_count() as u64).collect(),
            ncp,
            ncp_unit,
            gen_exact,
            gen_entropy,
            bound_terms: Vec::new(),
        };
        metric.bound_terms = (0..attrs)
            .map(|a| {
                (0..=metric.heights[a])
                    .map(|l| metric.bound_term(a, l))
                    .collect()
            })
            .collect();
        Ok(metric)
    }

    /// Attribute `a`'s term of the static bound at `level` (see [`Self::static_bound`]).
    fn bound_term(&self, a: usize, level: usize) -> f64 {
        match self.kind {
            MetricKind::Loss => self.geometric_factor(a, self.loss_of(a, self.gen_exact[a][level])),
            MetricKind::Precision => {
                self.arithmetic_term(a, self.precision_of(a, level, self.total, 0))
            }
            MetricKind::Entropy => self.weighted_term(a, entropy_value(self.gen_entropy[a][level])),
            MetricKind::Height => self.weighted_term(a, level as f64),
            MetricKind::Ncp | MetricKind::Discernibility | MetricKind::Aecs => 0.0,
        }
    }

    /// The bound terms of `node`'s levels, in attribute order.
    fn terms<'t>(&'t self, node: &'t [usize]) -> impl Iterator<Item = f64> + 't {
        node.iter()
            .zip(&self.bound_terms)
            .map(|(&l, terms)| terms[l])
    }

    /// The score as a number for display: NCP in `[0, 1]`, the others as ARX reports them.
    pub fn display(&self, score: Score) -> f64 {
        match (self.kind, score) {
            (MetricKind::Ncp, Score::Exact(n)) => {
                let q = self.heights.len().max(1) as f64;
                let d = q * self.total as f64 * self.ncp_unit as f64;
                if d > 0.0 {
                    n as f64 / d
                } else {
                    0.0
                }
            }
            (_, s) => s.raw(),
        }
    }

    /// ARX's normalized Loss of one attribute from its sum of leaf counts `sum`
    /// (= Σ records · domain share · |D|).
    fn loss_of(&self, a: usize, sum: u128) -> f64 {
        let n = self.total as u128;
        let size = self.domain[a] as u128;
        if size <= 1 || n == 0 {
            return 0.0;
        }
        let numerator = sum.saturating_sub(n) as f64;
        let denominator = (n * (size - 1)) as f64;
        arx_round((numerator / denominator).max(0.0))
    }

    /// ARX's weighted geometric mean of per-attribute values.
    fn geometric_mean(&self, values: &[f64]) -> f64 {
        let mut result = 1.0f64;
        for (a, &v) in values.iter().enumerate() {
            result *= self.geometric_factor(a, v);
        }
        result - 1.0
    }

    /// Attribute `a`'s factor in [`Self::geometric_mean`]: `(v·w + 1)^(1/q)`.
    fn geometric_factor(&self, a: usize, value: f64) -> f64 {
        (value * self.weights[a] + 1.0).powf(1.0 / self.weights.len() as f64)
    }

    /// ARX's weighted arithmetic mean of per-attribute values.
    fn arithmetic_mean(&self, values: &[f64]) -> f64 {
        values
            .iter()
            .enumerate()
            .map(|(a, &v)| self.arithmetic_term(a, v))
            .sum()
    }

    /// Attribute `a`'s term in [`Self::arithmetic_mean`]: `(v / q)·w`.
    fn arithmetic_term(&self, a: usize, value: f64) -> f64 {
        (value / self.weights.len() as f64) * self.weights[a]
    }

    /// ARX's weighted sum of per-attribute values.
    fn weighted_sum(&self, values: &[f64]) -> f64 {
        values
            .iter()
            .enumerate()
            .map(|(a, &v)| self.weighted_term(a, v))
            .sum()
    }

    /// Attribute `a`'s term in [`Self::weighted_sum`]: `v·w`.
    fn weighted_term(&self, a: usize, value: f64) -> f64 {
        value * self.weights[a]
    }

    /// Precision of one attribute at `level`: `(kept · level/height + suppressed) / N`.
    fn precision_of(&self, a: usize, level: usize, kept: u64, suppressed: u64) -> f64 {
        let value = if self.heights[a] == 0 {
            0.0
        } else {
            level as f64 / self.heights[a] as f64
        };
        ((kept as f64 * value) + suppressed as f64) / self.total as f64
    }

    /// The score of a node's release.
    pub fn score(&self, s: &Suppression<'_>) -> Score {
        let classes = s.classes;
        let levels = &classes.levels;
        let attrs = levels.len();
        let n_total = self.total;
        match self.kind {
            // Both start from the generalization-only totals over all records (computed
            // once from the marginals) and add, attribute by attribute, what suppressing a
            // cell costs beyond its generalized value: exact integer arithmetic, so the
            // result equals the per-class sum.
            MetricKind::Ncp => {
                let cells = SuppressedCells::new(s);
                let loss: u128 = levels
                    .iter()
                    .enumerate()
                    .map(|(a, &level)| {
                        let table = &self.ncp[a][level];
                        cells.total(
                            s,
                            a,
                            self.gen_exact[a][level],
                            n_total as u128 * self.ncp_unit,
                            |code| self.ncp_unit - table[code],
                        )
                    })
                    .sum();
                Score::Exact(loss)
            }
            MetricKind::Loss => {
                let cells = SuppressedCells::new(s);
                let values: Vec<f64> = levels
                    .iter()
                    .enumerate()
                    .map(|(a, &level)| {
                        let table = &self.leaves[a][level];
                        let domain = self.domain[a];
                        let sum = cells.total(
                            s,
                            a,
                            self.gen_exact[a][level],
                            n_total as u128 * domain as u128,
                            |code| (domain - table[code]) as u128,
                        );
                        self.loss_of(a, sum)
                    })
                    .collect();
                Score::Real(self.geometric_mean(&values))
            }
            MetricKind::Precision => {
                let mut suppressed = vec![0u64; attrs];
                for c in 0..classes.class_count() {
                    let mask = s.masks[c];
                    if mask != 0 {
                        let n = classes.class_size(c);
                        for (a, sup) in suppressed.iter_mut().enumerate() {
                            if mask >> a & 1 == 1 {
                                *sup += n;
                            }
                        }
                    }
                }
                let values: Vec<f64> = (0..attrs)
                    .map(|a| {
                        self.precision_of(a, levels[a], n_total - suppressed[a], suppressed[a])
                    })
                    .collect();
                Score::Real(self.arithmetic_mean(&values))
            }
            MetricKind::Discernibility => {
                Score::Exact(s.released_square_sum + n_total as u128 * s.suppressed_records as u128)
            }
            MetricKind::Entropy => {
                let values: Vec<f64> = (0..attrs)
                    .map(|a| {
                        let mut counts: Vec<u64> = Vec::new();
                        let mut suppressed = 0u64;
                        for c in 0..classes.class_count() {
                            if s.masks[c] >> a & 1 == 1 {
                                let n = classes.class_size(c);
                                let code = classes.class_codes[a][c] as usize;
                                if counts.len() <= code {
                                    counts.resize(code + 1, 0);
                                }
                                counts[code] += n;
                                suppressed += n;
                            }
                        }
                        let mut raw = self.gen_entropy[a][levels[a]];
                        if suppressed > 0 {
                            for &count in counts.iter().filter(|&&c| c > 0) {
                                raw += count as f64 * arx_log2(count as f64 / suppressed as f64);
                            }
                        }
                        entropy_value(raw)
                    })
                    .collect();
                Score::Real(self.weighted_sum(&values))
            }
            MetricKind::Aecs => {
                let groups = s.released_groups + u64::from(s.suppressed_records > 0);
                Score::Real(n_total as f64 / groups.max(1) as f64)
            }
            MetricKind::Height => Score::Real(self.height_of(levels)),
        }
    }

    fn height_of(&self, node: &[usize]) -> f64 {
        let values: Vec<f64> = node.iter().map(|&l| l as f64).collect();
        self.weighted_sum(&values)
    }

    /// A lower bound on the score of `node` and of every generalization of it, from the
    /// per-attribute marginals alone: each record scored at its generalized values, as if
    /// nothing were suppressed (a suppressed value never scores less).
    pub fn static_bound(&self, node: &[usize]) -> Score {
        match self.kind {
            MetricKind::Ncp => Score::Exact(
                node.iter()
                    .enumerate()
                    .map(|(a, &l)| self.gen_exact[a][l])
                    .sum(),
            ),
            // The geometric mean's factors multiplied in order, as in `geometric_mean`.
            MetricKind::Loss => Score::Real(self.terms(node).fold(1.0, |p, f| p * f) - 1.0),
            // The arithmetic mean's terms, as in `arithmetic_mean`.
            MetricKind::Precision => Score::Real(self.terms(node).sum()),
            // Every class of n records adds at least n.
            MetricKind::Discernibility => Score::Exact(self.total as u128),
            // The weighted sums' terms, as in `weighted_sum`.
            MetricKind::Entropy | MetricKind::Height => Score::Real(self.terms(node).sum()),
            // A node has at most as many classes as the leaf-level histogram.
            MetricKind::Aecs => Score::Real(self.total as f64 / self.base_classes.max(1) as f64),
        }
    }

    /// A lower bound on the score of every generalization of a checked node, from its
    /// classes (`None` when the static bound is as good): generalizing only merges classes.
    pub fn class_bound(&self, classes: &GroupedHistogram) -> Option<Score> {
        match self.kind {
            MetricKind::Discernibility => Some(Score::Exact(
                (0..classes.class_count())
                    .map(|c| {
                        let n = classes.class_size(c) as u128;
                        n * n
                    })
                    .sum(),
            )),
            MetricKind::Aecs => Some(Score::Real(
                self.total as f64 / classes.class_count().max(1) as f64,
            )),
            _ => None,
        }
    }

    /// Whether a node whose bound is `bound` may still beat (or tie and win against) the
    /// best score so far; `wins_tie` says whether the node would win a tie on its
    /// generalization levels and position. Floating-point bounds keep a margin of
    /// 1e-9 (relative) so that rounding can never prune the optimum.
    pub fn may_beat(&self, bound: Score, best: Score, wins_tie: bool) -> bool {
        match (bound, best) {
            (Score::Exact(b), Score::Exact(best)) => b < best || (b == best && wins_tie),
            (b, best) => {
                let best = best.raw();
                b.raw() <= best + 1e-9 * best.abs().max(1.0)
            }
        }
    }
}

#[cfg(test)]
mod tests;
