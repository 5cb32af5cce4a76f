//! Statistical differential-privacy audits (test-only), in the style of Google's
//! stochastic DP tester: run a mechanism many times on two neighbouring datasets `D` and
//! `D'`, histogram the outputs over a fixed set of bins, and check for every bin `B`
//!
//! ```text
//! P[M(D) ∈ B] ≤ e^ε · P[M(D') ∈ B] + δ      and the same with D and D' swapped.
//! ```
//!
//! # Decision rule and slack
//!
//! Each probability is bracketed by an exact Clopper–Pearson interval. A bin *violates*
//! the claim only if even the most favourable reading of the samples does:
//! `lower(P[M(D) ∈ B]) > e^ε · upper(P[M(D') ∈ B]) + δ`. The slack is therefore the width
//! of the intervals, which shrinks as `1/sqrt(trials)`.
//!
//! # False-failure rate
//!
//! Every one-sided bound is computed at level `alpha / (4 · bins)` (two datasets, two
//! sides, `bins` bins). By the union bound, with probability at least `1 − alpha` every
//! true probability lies inside its interval; a mechanism that satisfies the claim then
//! passes. Clopper–Pearson intervals are exact (conservative), so this holds for every
//! number of trials, with no normal approximation. The audits use `alpha = 1e-6` and fixed
//! seeds, so each run is reproducible and a correct mechanism fails with probability
//! below `1e-6` over the choice of seed.
//!
//! # Power
//!
//! A statistical audit can only find violations larger than its slack. Each audit of a
//! mechanism that should pass is paired with a *power check*: the same samples audited
//! against a smaller ε (or a mechanism known to violate its claim) must fail, which shows
//! that the audit can fail at all.

use std::fmt;

use statrs::function::beta::beta_reg;

use crate::mechanism::rng::{rng_from_seed, AnonRng};

/// Default total false-failure probability of one audit.
pub const ALPHA: f64 = 1e-6;

/// The `p` in `[0, 1]` at which the monotone `f` crosses `target` (increasing `f` when
/// `increasing`), found by bisection down to adjacent doubles.
fn solve_monotone(f: impl Fn(f64) -> f64, target: f64, increasing: bool) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    loop {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            return mid;
        }
        if (f(mid) < target) == increasing {
            lo = mid;
        } else {
            hi = mid;
        }
    }
}

/// Exact (Clopper–Pearson) one-sided bounds for a binomial proportion: with probability at
/// least `1 − alpha` the true `p` is `≥ lower`, and likewise `≤ upper`.
///
/// Each bound solves its binomial tail equation with statrs' regularized incomplete beta
/// function, written so that the tail compared with `alpha` is the small one (`1 − alpha`
/// would lose the digits of a tiny `alpha`). statrs' `Beta::inverse_cdf` is less accurate
/// here: its bounds miss the tail equations by up to 8e-4 relative at a million trials.
pub fn clopper_pearson(successes: u64, trials: u64, alpha: f64) -> (f64, f64) {
    assert!(trials > 0 && successes <= trials);
    let (x, n) = (successes as f64, trials as f64);
    let lower = if successes == 0 {
        0.0
    } else {
        // P[Bin(n, p) ≥ x] = I_p(x, n − x + 1) = alpha, increasing in p.
        solve_monotone(|p| beta_reg(x, n - x + 1.0, p), alpha, true)
    };
    let upper = if successes == trials {
        1.0
    } else {
        // P[Bin(n, p) ≤ x] = I_{1−p}(n − x, x + 1) = alpha, decreasing in p.
        solve_monotone(|p| beta_reg(n - x, x + 1.0, 1.0 - p), alpha, false)
    };
    (lower, upper)
}

/// Histogram of `trials` outputs of `sample` over `bins` bins (fixed seed).
pub fn histogram(
    bins: usize,
    trials: u64,
    seed: u64,
    mut sample: impl FnMut(&mut AnonRng) -> usize,
) -> Vec<u64> {
    let mut rng = rng_from_seed(seed);
    let mut counts = vec![0u64; bins];
    for _ in 0..trials {
        let b = sample(&mut rng);
        assert!(b < bins, "bin {b} out of range 0..{bins}");
        counts[b] += 1;
    }
    counts
}

/// A bin where the samples contradict the claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// The bin.
    pub bin: usize,
    /// `true` when `P[M(D)]` exceeds the bound from `P[M(D')]`, `false` for the reverse.
    pub forward: bool,
    /// Lower confidence bound of the larger probability.
    pub lower: f64,
    /// Upper confidence bound of the other probability.
    pub upper: f64,
    /// `lower − (e^ε · upper + δ)`, positive.
    pub excess: f64,
}

/// Outcome of [`audit`].
#[derive(Debug, Clone, PartialEq)]
pub struct AuditReport {
    /// Claimed ε.
    pub epsilon: f64,
    /// Claimed δ.
    pub delta: f64,
    /// Trials per dataset.
    pub trials: u64,
    /// Every violating bin, largest excess first.
    pub violations: Vec<Violation>,
    /// The largest ratio `lower(P) / upper(Q)` over bins and directions (an empirical lower
    /// bound on `e^ε` when δ = 0).
    pub max_ratio_lower_bound: f64,
}

impl fmt::Display for AuditReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "audit of (epsilon = {}, delta = {}) over {} trials per dataset: {} violating bin(s); \
             max lower-bounded ratio {:.4} (e^epsilon = {:.4})",
            self.epsilon,
            self.delta,
            self.trials,
            self.violations.len(),
            self.max_ratio_lower_bound,
            self.epsilon.exp()
        )?;
        for v in self.violations.iter().take(3) {
            write!(
                f,
                "; bin {} ({}): lower {:.5} > e^eps * upper {:.5} + delta by {:.5}",
                v.bin,
                if v.forward { "D over D'" } else { "D' over D" },
                v.lower,
                v.upper,
                v.excess
            )?;
        }
        Ok(())
    }
}

/// Audits two output histograms (same bins, `trials` samples each) against `(ε, δ)` with
/// total false-failure probability `alpha` (see the module documentation).
pub fn audit(d: &[u64], d_prime: &[u64], epsilon: f64, delta: f64, alpha: f64) -> AuditReport {
    assert_eq!(d.len(), d_prime.len(), "histograms over different bins");
    let trials: u64 = d.iter().sum();
    assert_eq!(
        trials,
        d_prime.iter().sum::<u64>(),
        "different trial counts"
    );
    let level = alpha / (4.0 * d.len() as f64);
    let bounds = |h: &[u64]| -> Vec<(f64, f64)> {
        h.iter()
            .map(|&c| clopper_pearson(c, trials, level))
            .collect()
    };
    let (bd, bd2) = (bounds(d), bounds(d_prime));
    let factor = epsilon.exp();
    let mut violations = Vec::new();
    let mut max_ratio: f64 = 0.0;
    for bin in 0..d.len() {
        for (forward, p, q) in [(true, bd[bin], bd2[bin]), (false, bd2[bin], bd[bin])] {
            let (lower, upper) = (p.0, q.1);
            if upper > 0.0 {
                max_ratio = max_ratio.max(lower / upper);
            } else if lower > 0.0 {
                max_ratio = f64::INFINITY;
            }
            let excess = lower - (factor * upper + delta);
            if excess > 0.0 {
                violations.push(Violation {
                    bin,
                    forward,
                    lower,
                    upper,
                    excess,
                });
            }
        }
    }
    violations.sort_by(|a, b| b.excess.total_cmp(&a.excess));
    AuditReport {
        epsilon,
        delta,
        trials,
        violations,
        max_ratio_lower_bound: max_ratio,
    }
}

/// Asserts that the audit finds no violation.
pub fn assert_private(report: &AuditReport, what: &str) {
    assert!(
        report.violations.is_empty(),
        "{what}: differential-privacy claim contradicted: {report}"
    );
}

/// Asserts that the audit finds a violation (for power checks and demonstrations).
pub fn assert_violated(report: &AuditReport, what: &str) {
    assert!(
        !report.violations.is_empty(),
        "{what}: expected the audit to find a violation: {report}"
    );
}

/// Bins for an integer output: `lo..=hi` one bin each, plus one bin for everything below
/// and one for everything above (`hi − lo + 3` bins in all).
pub fn integer_bin(value: i64, lo: i64, hi: i64) -> usize {
    if value < lo {
        0
    } else if value > hi {
        (hi - lo + 2) as usize
    } else {
        (value - lo + 1) as usize
    }
}

#[cfg(test)]
mod tests {
    use statrs::function::factorial::ln_binomial;

    use super::*;

    /// P[Bin(n, p) ≤ x] summed directly, for small n.
    fn binomial_cdf(x: u64, n: u64, p: f64) -> f64 {
        (0..=x)
            .map(|k| {
                let ln_choose = ln_binomial(n, k);
                (ln_choose + k as f64 * p.ln() + (n - k) as f64 * (1.0 - p).ln()).exp()
            })
            .sum()
    }

    #[test]
    fn clopper_pearson_closed_forms_and_coverage_equations() {
        let alpha = 1e-3;
        // x = 0: upper = 1 − alpha^(1/n); x = n: lower = alpha^(1/n).
        for n in [1u64, 7, 100, 100_000] {
            let (lo, hi) = clopper_pearson(0, n, alpha);
            assert_eq!(lo, 0.0);
            let want = 1.0 - alpha.powf(1.0 / n as f64);
            assert!(
                (hi - want).abs() <= 1e-9 * want.max(1e-300),
                "n={n}: {hi} vs {want}"
            );
            let (lo, hi) = clopper_pearson(n, n, alpha);
            assert_eq!(hi, 1.0);
            let want = alpha.powf(1.0 / n as f64);
            assert!((lo - want).abs() < 1e-9, "n={n}: {lo} vs {want}");
        }
        // Interior: the bounds solve the defining tail equations.
        for (x, n) in [(3u64, 10u64), (40, 100), (1, 50)] {
            let (lo, hi) = clopper_pearson(x, n, alpha);
            let phat = x as f64 / n as f64;
            assert!(lo < phat && phat < hi);
            assert!((binomial_cdf(x, n, hi) - alpha).abs() < 1e-9);
            assert!(((1.0 - binomial_cdf(x - 1, n, lo)) - alpha).abs() < 1e-9);
        }
        // Large n: the bounds are close to p̂ ± z·sd with z ≈ 3.09 for alpha = 1e-3.
        let (lo, hi) = clopper_pearson(300_000, 1_000_000, alpha);
        let sd = (0.3f64 * 0.7 / 1e6).sqrt();
        assert!(((0.3 - lo) / sd - 3.09).abs() < 0.05, "{lo}");
        assert!(((hi - 0.3) / sd - 3.09).abs() < 0.05, "{hi}");
    }

    #[test]
    fn audit_decides_on_interval_bounds() {
        // Identical histograms never violate.
        let h = vec![500u64, 300, 200];
        assert!(audit(&h, &h, 0.0, 0.0, ALPHA).violations.is_empty());
        // An output that occurs under D and never under D' violates any delta below its
        // lower bound.
        let d = vec![5_000u64, 5_000];
        let d2 = vec![10_000u64, 0];
        let r = audit(&d, &d2, 1.0, 0.0, ALPHA);
        assert_eq!(r.violations[0].bin, 1);
        assert!(r.violations[0].forward);
        assert!(r.max_ratio_lower_bound > 100.0, "{r}");
        assert!(audit(&d, &d2, 1.0, 0.55, ALPHA).violations.is_empty());
    }

    #[test]
    fn integer_bins() {
        assert_eq!(integer_bin(-9, -2, 2), 0);
        assert_eq!(integer_bin(-2, -2, 2), 1);
        assert_eq!(integer_bin(2, -2, 2), 5);
        assert_eq!(integer_bin(3, -2, 2), 6);
    }
}
