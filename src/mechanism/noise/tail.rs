//! How many rows positive noise adds, computed before anything is drawn: the expectation
//! and a high-probability upper bound of a sum of positive parts of discrete Laplace noise.
//! Release size limits use them to refuse a release whose noise would produce far more
//! rows than intended (a typo such as `epsilon => 1e-7`) without drawing a single value.
//!
//! These are planning figures computed in `f64`; nothing here is on a sampling path.

/// The positive part `Z⁺ = max(0, Z)` of two-sided discrete Laplace noise `Z` of scale `t`
/// (`P(Z = z) ∝ exp(−|z|/t)`), as [`super::sample_discrete_laplace`] draws it.
///
/// With `p = exp(−1/t)`: `P(Z⁺ ≥ 1) = p/(1+p)`, and given `Z⁺ ≥ 1` it is geometric on
/// `{1, 2, …}` with success probability `1 − p`. Hence `E[Z⁺] = p/(1 − p²)` (about `t/2` for
/// large `t`) and its moment generating function is
/// `M(λ) = 1 + q·(e^λ − 1)/(1 − p·e^λ)` for `λ < 1/t`, with `q = p/(1+p)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PositiveNoise {
    /// `1/t`.
    rate: f64,
}

impl PositiveNoise {
    /// The positive part of discrete Laplace noise of scale `scale > 0`.
    pub fn discrete_laplace(scale: f64) -> Self {
        Self { rate: 1.0 / scale }
    }

    /// `p = exp(−1/t)`.
    fn p(&self) -> f64 {
        (-self.rate).exp()
    }

    /// `E[Z⁺] = p/((1 − p)(1 + p))`, with `1 − p` computed without cancellation.
    pub fn mean(&self) -> f64 {
        let p = self.p();
        p / ((-(-self.rate).exp_m1()) * (1.0 + p))
    }

    /// `ln M(λ)` for `0 < λ < 1/t`.
    fn log_mgf(&self, lambda: f64) -> f64 {
        let p = self.p();
        let q = p / (1.0 + p);
        // 1 − p·e^λ = −expm1(λ − 1/t) > 0.
        let denominator = -(lambda - self.rate).exp_m1();
        (q * lambda.exp_m1() / denominator).ln_1p()
    }

    /// An upper bound `s` with `P(Z⁺_1 + … + Z⁺_m > s) ≤ failure` for `m` independent copies:
    /// Chernoff's bound `P(S ≥ s) ≤ exp(m·ln M(λ) − λ·s)`, minimized over a grid of `λ` in
    /// `(0, 1/t)`. It is at least `m·E[Z⁺]` (Jensen) and, for large `m`, close to
    /// `m·E[Z⁺] + sqrt(2·m·Var[Z⁺]·ln(1/failure))`.
    pub fn sum_upper_bound(&self, m: u64, failure: f64) -> f64 {
        if m == 0 {
            return 0.0;
        }
        let m = m as f64;
        let log_inverse_failure = (1.0 / failure.clamp(f64::MIN_POSITIVE, 1.0)).ln();
        let mut best = f64::INFINITY;
        // λ = f/t for f on a geometric grid in (0, 1).
        let steps = 400;
        for i in 0..steps {
            let f = 1e-9_f64.powf(1.0 - i as f64 / steps as f64) * 0.999;
            let lambda = f * self.rate;
            let bound = (m * self.log_mgf(lambda) + log_inverse_failure) / lambda;
            if bound.is_finite() && bound < best {
                best = bound;
            }
        }
        best.max(m * self.mean())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanism::noise::{sample_discrete_laplace, ExactScale};
    use crate::mechanism::rng::rng_from_seed;

    /// `E[Z⁺]` by direct summation of the probability mass function.
    fn mean_by_summation(scale: f64) -> f64 {
        let p = (-1.0 / scale).exp();
        let norm = (1.0 - p) / (1.0 + p);
        (1..200_000).map(|z| z as f64 * norm * p.powi(z)).sum()
    }

    #[test]
    fn mean_matches_the_distribution() {
        for scale in [0.5, 1.0, 3.3, 10.0, 100.0] {
            let exact = mean_by_summation(scale);
            let ours = PositiveNoise::discrete_laplace(scale).mean();
            assert!(
                (ours - exact).abs() < 1e-9 * exact.max(1.0),
                "{scale}: {ours} vs {exact}"
            );
        }
        // For large scales E[Z⁺] ≈ t/2; the closed form keeps its precision.
        let big = PositiveNoise::discrete_laplace(1e7).mean();
        assert!((big / 5e6 - 1.0).abs() < 1e-6, "{big}");
    }

    #[test]
    fn bound_holds_for_drawn_sums_and_is_not_loose() {
        // 400 sums of m = 200 draws at scale 4 from the production sampler (fixed seed).
        // With failure 1e-6, a sum above the bound has probability at most 1e-6 each, so
        // the test fails falsely with probability at most 4e-4.
        let scale = ExactScale::new(4, 1).unwrap();
        let noise = PositiveNoise::discrete_laplace(4.0);
        let m = 200;
        let bound = noise.sum_upper_bound(m, 1e-6);
        let mean = m as f64 * noise.mean();
        let mut rng = rng_from_seed(7);
        let mut largest = 0u64;
        for _ in 0..400 {
            let sum: u64 = (0..m)
                .map(|_| sample_discrete_laplace(&mut rng, scale).max(0) as u64)
                .sum();
            largest = largest.max(sum);
        }
        assert!((largest as f64) <= bound, "{largest} > {bound}");
        assert!(bound >= mean);
        // Var[Z⁺] ≤ E[(Z⁺)²] ≤ 2t² = 32: the bound stays within a few standard deviations
        // of the mean plus a term of the order of t·ln(1/failure).
        let spread = (m as f64 * 32.0).sqrt();
        assert!(
            bound <= mean + 6.0 * spread + 4.0 * 14.0,
            "{bound} vs mean {mean}"
        );
    }

    #[test]
    fn bound_scales_with_tiny_epsilon() {
        // ε = 1e-6: about 5e5 rows per copy on average; 1000 copies ≈ 5e8.
        let noise = PositiveNoise::discrete_laplace(1e6);
        let bound = noise.sum_upper_bound(1000, 1e-9);
        assert!(bound > 5e8 && bound < 8e8, "{bound}");
        assert_eq!(noise.sum_upper_bound(0, 1e-9), 0.0);
    }
}
