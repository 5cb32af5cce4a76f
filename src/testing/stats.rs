//! Statistical checks of samplers: Wilson intervals for single probabilities
//! (false-failure rate about 5.7e-7) and chi-square goodness of fit over binned integer
//! outcomes (false-failure rate 1e-6).

use std::collections::BTreeMap;

use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The exact `1 - 1e-6` quantile of the chi-square distribution with `df`
/// degrees of freedom (statrs' inverse CDF; df 1 → 23.93, df 10 → 46.86,
/// df 100 → 182.13).
///
/// A correct sampler exceeds it, and so fails a test using it, with
/// probability 1e-6 (up to the chi-square approximation of the
/// multinomial, which the minimum expected count of 5 per bin keeps
/// accurate). The sampler tests use between 2 and about 155 degrees of
/// freedom.
pub fn chi_square_critical_1e6(df: usize) -> f64 {
    ChiSquared::new(df as f64)
        .expect("at least one degree of freedom")
        .inverse_cdf(1.0 - 1e-6)
}

/// Wilson score interval for a binomial proportion.
pub fn wilson_interval(successes: u64, trials: u64, z: f64) -> (f64, f64) {
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    (center - half, center + half)
}

/// Asserts that `p` lies in the z = 5 Wilson interval of
/// `successes / trials`. For a correct sampler the two-sided false-failure
/// probability is about 5.7e-7.
pub fn assert_wilson(successes: u64, trials: u64, p: f64, what: &str) {
    let (lo, hi) = wilson_interval(successes, trials, 5.0);
    assert!(
        lo <= p && p <= hi,
        "{what}: expected probability {p} outside Wilson interval [{lo}, {hi}] \
         ({successes}/{trials})"
    );
}

/// A bin of consecutive integer outcomes `[lo, hi]` with its exact
/// probability.
#[derive(Debug, Clone, Copy)]
pub struct Bin {
    pub lo: i64,
    pub hi: i64,
    pub prob: f64,
}

/// One singleton bin per outcome `0, 1, …` of a categorical distribution with the
/// probabilities `probs`.
pub fn categorical_bins(probs: &[f64]) -> Vec<Bin> {
    probs
        .iter()
        .enumerate()
        .map(|(i, &p)| Bin {
            lo: i as i64,
            hi: i as i64,
            prob: p,
        })
        .collect()
}

/// Builds bins over the integers for a unimodal distribution with mode 0:
/// singletons while their expected count is at least 5 and the remaining
/// tail beyond them still has expected count at least 5; everything
/// further out goes into one tail bin on each side. `upper(k)` is
/// `P(X >= k)` and `lower(k)` is `P(X <= k)`. Every bin has expected
/// count >= 5.
pub fn build_bins(
    n: u64,
    pmf: &dyn Fn(i64) -> f64,
    upper: &dyn Fn(i64) -> f64,
    lower: &dyn Fn(i64) -> f64,
) -> Vec<Bin> {
    let n = n as f64;
    let mut bins = Vec::new();
    let mut k = 0i64;
    while n * pmf(k) >= 5.0 && n * upper(k + 1) >= 5.0 {
        bins.push(Bin {
            lo: k,
            hi: k,
            prob: pmf(k),
        });
        k += 1;
    }
    bins.push(Bin {
        lo: k,
        hi: i64::MAX,
        prob: upper(k),
    });
    if lower(-1) > 0.0 {
        let mut k = -1i64;
        while n * pmf(k) >= 5.0 && n * lower(k - 1) >= 5.0 {
            bins.push(Bin {
                lo: k,
                hi: k,
                prob: pmf(k),
            });
            k -= 1;
        }
        bins.push(Bin {
            lo: i64::MIN,
            hi: k,
            prob: lower(k),
        });
    }
    for b in &bins {
        assert!(n * b.prob >= 5.0, "bin {b:?} has expected count < 5");
    }
    let total: f64 = bins.iter().map(|b| b.prob).sum();
    assert!(
        (total - 1.0).abs() < 1e-9,
        "bin probabilities sum to {total}"
    );
    bins.sort_by_key(|b| b.lo);
    bins
}

/// Pearson chi-square statistic of `counts` (outcome → count, `n` draws in
/// total) against `bins`; returns the statistic and the degrees of
/// freedom (`bins - 1`).
pub fn chi_square(counts: &BTreeMap<i64, u64>, n: u64, bins: &[Bin]) -> (f64, usize) {
    let mut stat = 0.0;
    let mut seen = 0u64;
    for b in bins {
        let observed: u64 = counts.range(b.lo..=b.hi).map(|(_, c)| *c).sum();
        seen += observed;
        let expected = n as f64 * b.prob;
        let d = observed as f64 - expected;
        stat += d * d / expected;
    }
    assert_eq!(seen, n, "bins do not cover every outcome");
    (stat, bins.len() - 1)
}

/// Asserts that `counts` fit `bins` at false-failure rate 1e-6.
pub fn assert_chi_square_fits(counts: &BTreeMap<i64, u64>, n: u64, bins: &[Bin], what: &str) {
    let (stat, df) = chi_square(counts, n, bins);
    let crit = chi_square_critical_1e6(df);
    assert!(
        df >= 2,
        "{what}: only {} bins; the test has no power",
        df + 1
    );
    assert!(
        stat < crit,
        "{what}: chi-square {stat:.2} >= critical {crit:.2} (df {df})"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chi_square_critical_values() {
        // df 1: the square of the two-sided 1e-6 normal quantile; df 2: the
        // exponential distribution's quantile 2 ln(1e6).
        let z = 4.891_638_475_699_412f64;
        let c1 = chi_square_critical_1e6(1);
        assert!((c1 - z * z).abs() < 1e-6, "{c1}");
        let c2 = chi_square_critical_1e6(2);
        assert!((c2 - 2.0 * 1e6f64.ln()).abs() < 1e-6, "{c2}");
        // Roots of Q(df/2, x/2) = 1e-6 (regularized upper incomplete gamma, 30 digits).
        for (df, exact) in [(10usize, 46.863_047), (30, 82.044_143), (100, 182.126_777)] {
            let c = chi_square_critical_1e6(df);
            assert!((c - exact).abs() < 1e-5, "df {df}: {c} vs {exact}");
        }
    }
}
