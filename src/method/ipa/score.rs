//! IPA's utility node score (`node_score => 'utility'`, docs/METHODS.md §1.13): the expected
//! size-weighted information loss of a node, computed on the true generalized class sizes
//! before any perturbation, with a proven sensitivity.
//!
//! For a class of `n` records whose labels have weighted NCP `c ∈ [0, 1]`:
//!
//! ```text
//! cost(n, c) = n · (c + (1 − c) · p(n))  +  μ · (1 − p(n)) · (κ + c),    cost(0, c) = 0
//! ```
//!
//! `p(n)` is the probability that the noisy-threshold step suppresses the class (a
//! suppressed record counts as fully generalized), `μ` the expected number of counterfeits
//! a released class receives, and `κ = 2` the size-weighted Rate and EMD a counterfeit row
//! adds (Rate: 1 per counterfeit; EMD: at most 1 per counterfeit), on top of its NCP `c`.
//! The node's score is `−Σ_classes cost`. Every quantity but the class sizes is public
//! (hierarchies, weights, `t`, `ε_sup`, `ε_ins`), and the score does not use `N`.

use datafusion::common::{plan_err, Result};

use super::workload::Workload;
use super::{IpaParams, IpaVariant};
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;

/// Size-weighted Rate + EMD bound of one counterfeit row (§1.13).
pub const COUNTERFEIT_COST: f64 = 2.0;

/// Largest class size the sensitivity scan visits (the tail is bounded analytically).
const SCAN_LIMIT: u64 = 1 << 20;

/// The public model behind the utility score: suppression probabilities, the expected
/// counterfeit count and the score's sensitivity.
#[derive(Debug, Clone, PartialEq)]
pub struct UtilityModel {
    /// Suppression test of the variant: `(threshold, scale b, clamp below t)`.
    threshold: u64,
    scale: f64,
    clamped: bool,
    /// Expected counterfeits per released class, `μ = q / (1 − q²)`, `q = e^(−ε_ins)`.
    pub counterfeit_mean: f64,
    /// Sensitivity `Δ` of the score (§1.13).
    pub sensitivity: f64,
}

impl UtilityModel {
    /// The model of `params` (its variant's suppression test and noise scales).
    pub fn new(params: &IpaParams) -> Result<Self> {
        let (scale, clamped) = match params.variant {
            IpaVariant::Paper => ((params.threshold as f64 - 1.0) / params.eps_sup, false),
            IpaVariant::Reference => (1.0 / params.eps_sup, true),
        };
        if !(scale.is_finite() && scale > 0.0) {
            return plan_err!("the suppression noise scale must be positive and finite");
        }
        let q = (-params.eps_ins).exp();
        let mut model = Self {
            threshold: params.threshold,
            scale,
            clamped,
            counterfeit_mean: q / (1.0 - q * q),
            sensitivity: 0.0,
        };
        if !model.counterfeit_mean.is_finite() {
            return plan_err!("epsilon_ins is too small for the utility score");
        }
        model.sensitivity = model.compute_sensitivity();
        Ok(model)
    }

    /// Probability that the suppression step suppresses a class of `n` records: paper
    /// `P[n ≤ t + L]`, reference `n < t` or `P[n ≤ t + L]` (`L ~ Lap(b)`, §1.4).
    pub fn suppression_probability(&self, n: u64) -> f64 {
        let t = self.threshold;
        if self.clamped && n < t {
            return 1.0;
        }
        let margin = n as f64 - t as f64;
        if margin >= 0.0 {
            0.5 * (-margin / self.scale).exp()
        } else {
            1.0 - 0.5 * (margin / self.scale).exp()
        }
    }

    /// Expected cost of one class of `n` records with weighted NCP `c` (module docs).
    pub fn class_cost(&self, n: u64, c: f64) -> f64 {
        self.class_cost_at(n, c, self.suppression_probability(n))
    }

    /// [`Self::class_cost`] given the class's suppression probability `p`.
    fn class_cost_at(&self, n: u64, c: f64, p: f64) -> f64 {
        if n == 0 {
            return 0.0;
        }
        n as f64 * (c + (1.0 - c) * p) + self.counterfeit_mean * (1.0 - p) * (COUNTERFEIT_COST + c)
    }

    /// `Δ = sup over n ≥ 0 and c ∈ [0, 1] of |cost(n + 1, c) − cost(n, c)|`. The difference
    /// is affine in `c`, so the supremum is taken at `c ∈ {0, 1}`. Class sizes up to
    /// `t + 60 b` (at most [`SCAN_LIMIT`]) are scanned; beyond them the difference is bounded
    /// analytically (docs/METHODS.md §1.13).
    fn compute_sensitivity(&self) -> f64 {
        let (t, b) = (self.threshold as f64, self.scale);
        let end = (t + 60.0 * b + 2.0).min(SCAN_LIMIT as f64) as u64;
        let mut worst: f64 = 0.0;
        for n in 0..=end {
            for c in [0.0, 1.0] {
                worst = worst.max((self.class_cost(n + 1, c) - self.class_cost(n, c)).abs());
            }
        }
        // Tail, n > end ≥ t: with d_n = p(n) − p(n+1) ≤ p(n)/b, the difference lies in
        // [−n·d_n, 1 + μ(κ+1)·d_n]; p is decreasing and x·e^(−(x−t)/b) decreases for x > b.
        let next = (end + 1) as f64;
        let p_end = self.suppression_probability(end + 1);
        let upper = 1.0 + self.counterfeit_mean * (COUNTERFEIT_COST + 1.0) * p_end / b;
        let lower = if next >= b {
            next / (2.0 * b) * (-(next - t) / b).exp()
        } else if b >= t {
            0.5 * (t / b - 1.0).exp()
        } else {
            t / (2.0 * b)
        };
        // A relative margin for the floating-point evaluation of the costs.
        worst.max(upper).max(lower) * (1.0 + 1e-9)
    }
}

/// Normalized attribute weights `w_a / Σ w` from `qi_weights` (unnamed attributes weigh 1;
/// with a workload, an attribute it does not group by weighs 0).
pub fn attribute_weights(
    hierarchies: &[&Hierarchy],
    qi_weights: &[(String, f64)],
    workload: Option<&Workload>,
) -> Result<Vec<f64>> {
    let names: Vec<&str> = hierarchies.iter().map(|h| h.attribute()).collect();
    let mut weights = vec![1.0; hierarchies.len()];
    for (name, w) in qi_weights {
        weights[crate::lattice::qi_position("qi_weights", &names, name)?] = *w;
    }
    if let Some(workload) = workload {
        for (a, w) in weights.iter_mut().enumerate() {
            if !workload.groups(a) {
                *w = 0.0;
            }
        }
    }
    let total: f64 = weights.iter().sum();
    if !(total.is_finite() && total > 0.0) {
        return plan_err!("qi_weights: the weights must have a positive sum");
    }
    Ok(weights.into_iter().map(|w| w / total).collect())
}

/// The components of one node's utility score (owner-only diagnostics).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeUtility {
    /// The score, `−Σ cost` (higher is better).
    pub score: f64,
    /// Expected weighted NCP mass of the real records (suppressed ones counted as 1).
    pub expected_ncp: f64,
    /// Expected number of suppressed records.
    pub expected_suppressed: f64,
    /// Expected number of counterfeit records.
    pub expected_counterfeits: f64,
    /// Number of (true) classes at the node.
    pub classes: usize,
}

/// The utility score of a node from its class sizes (`sizes` holds the node's classes; the
/// size of class `c` is `sizes.class_size(c)`). A label costs its NCP, or with a workload
/// the share of the workload's groups it merges.
pub fn node_utility(
    sizes: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    weights: &[f64],
    workload: Option<&Workload>,
    model: &UtilityModel,
) -> NodeUtility {
    let attrs = hierarchies.len();
    let ncp: Vec<Vec<f64>> = (0..attrs)
        .map(|a| match workload {
            None => hierarchies[a].ncp_per_code(sizes.levels[a]),
            Some(w) => w.cost_per_code(a, hierarchies[a], sizes.levels[a]),
        })
        .collect();
    let mut out = NodeUtility {
        score: 0.0,
        expected_ncp: 0.0,
        expected_suppressed: 0.0,
        expected_counterfeits: 0.0,
        classes: sizes.class_count(),
    };
    // The weighted NCP of every class, attribute by attribute (the same sums in the same
    // order as per class), and the suppression probability of the small class sizes
    // computed once.
    let classes = sizes.class_count();
    let mut class_ncp = vec![0.0f64; classes];
    for (a, codes) in sizes.class_codes.iter().enumerate() {
        let (w, table) = (weights[a], &ncp[a]);
        match table.as_slice() {
            // One NCP for every value of the level (its leaves, or a level of one value):
            // added without a lookup, and adding 0 to a sum that started at +0 is skipped.
            [first, rest @ ..] if rest.iter().all(|x| x == first) => {
                let term = w * first;
                if term != 0.0 {
                    for sum in class_ncp.iter_mut() {
                        *sum += term;
                    }
                }
            }
            _ => {
                for (sum, &code) in class_ncp.iter_mut().zip(codes) {
                    *sum += w * table[code as usize];
                }
            }
        }
    }
    const SMALL: u64 = 64;
    let small: Vec<f64> = (0..SMALL)
        .map(|n| model.suppression_probability(n))
        .collect();
    let class_sizes = sizes.sizes();
    let mut cost = 0.0;
    for (&n, &class_ncp) in class_sizes.iter().zip(&class_ncp) {
        let class_ncp = class_ncp.clamp(0.0, 1.0);
        let p = match small.get(n as usize) {
            Some(&p) => p,
            None => model.suppression_probability(n),
        };
        cost += model.class_cost_at(n, class_ncp, p);
        out.expected_ncp += n as f64 * (class_ncp + (1.0 - class_ncp) * p);
        out.expected_suppressed += n as f64 * p;
        out.expected_counterfeits += model.counterfeit_mean * (1.0 - p);
    }
    out.score = -cost;
    out
}
