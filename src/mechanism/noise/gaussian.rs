//! Discrete Gaussian noise, exactly: Canonne, Kamath & Steinke 2020, Algorithm 3.
//!
//! `P(k) ∝ exp(−k² / (2σ²))` on all integers `k`. Adding it to a vector of integer counts
//! whose L2 sensitivity is `Δ` is `Δ² / (2σ²)`-zCDP (CKS 2020, Theorem 4): the measurement
//! MST makes of its marginals (docs/METHODS.md). The variance is an exact positive rational
//! ([`ExactVariance`]); nothing on the sampling path is floating point.

use num_bigint::BigUint;
use rand::RngCore;

use super::bits::BitSource;
use super::geometric::geometric_to_i64;
use super::{ExactScale, NoiseError};

/// Denominator of the grid onto which [`ExactVariance::at_least`] rounds `σ²` up.
pub const VARIANCE_GRID: u64 = 1 << 20;

/// An exact, strictly positive rational variance `σ² = num / den` of discrete Gaussian
/// noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExactVariance {
    num: u64,
    den: u64,
}

impl ExactVariance {
    /// The variance `num / den`.
    ///
    /// # Errors
    ///
    /// [`NoiseError::InvalidParameter`] if either is zero.
    pub fn new(num: u64, den: u64) -> Result<Self, NoiseError> {
        if num == 0 || den == 0 {
            return Err(NoiseError::invalid(
                "variance",
                format!("must be a positive fraction, got {num}/{den}"),
            ));
        }
        Ok(Self { num, den })
    }

    /// The smallest variance on the grid `k / 2^20` that is at least `sigma2`: rounding up
    /// makes the noise larger, so a guarantee computed for `sigma2` holds.
    ///
    /// # Errors
    ///
    /// [`NoiseError::InvalidParameter`] if `sigma2` is not a finite number in
    /// `(0, 2^40]`.
    pub fn at_least(sigma2: f64) -> Result<Self, NoiseError> {
        if !(sigma2.is_finite() && sigma2 > 0.0 && sigma2 <= (1u64 << 40) as f64) {
            return Err(NoiseError::invalid(
                "variance",
                format!("must be a finite number in (0, 2^40], got {sigma2}"),
            ));
        }
        // sigma2 · 2^20 is exact in f64 (a power-of-two scaling); its ceiling is at most
        // 2^60.
        let num = (sigma2 * VARIANCE_GRID as f64).ceil() as u64;
        Self::new(num.max(1), VARIANCE_GRID)
    }

    /// `σ²` as a float (for reports; never on a sampling path).
    pub fn as_f64(&self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// `⌊σ⌋ + 1`: the largest `t` with `(t − 1)² · den ≤ num`, plus one.
    fn laplace_scale(&self) -> u64 {
        // An integer square root by bisection on u128 (no float rounding).
        let (num, den) = (u128::from(self.num), u128::from(self.den));
        let (mut low, mut high) = (0u128, 1u128 << 32);
        while low < high {
            let mid = (low + high).div_ceil(2);
            if mid * mid * den <= num {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        (low + 1) as u64
    }
}

/// Samples the discrete Gaussian `P(k) ∝ exp(−k² / (2σ²))`, exactly.
///
/// With `t = ⌊σ⌋ + 1`: draw `Y` from the discrete Laplace of scale `t`, and accept it with
/// probability `exp(−(|Y| − σ²/t)² / (2σ²))`, else draw again (CKS 2020, Algorithm 3; the
/// expected number of draws is below 2.5 whatever σ). For `σ² = a/b` the exponent is the
/// rational `(|Y|·b·t − a)² / (2·a·b·t²)`, whose Bernoulli trial is exact on big
/// integers.
pub fn sample_discrete_gaussian<R: RngCore + ?Sized>(rng: &mut R, variance: ExactVariance) -> i64 {
    let t = variance.laplace_scale();
    // t ≥ 1 always, so the scale is valid.
    let scale = ExactScale::whole(t);
    let (a, b) = (BigUint::from(variance.num), BigUint::from(variance.den));
    let t_big = BigUint::from(t);
    let den = BigUint::from(2u32) * &a * &b * &t_big * &t_big;
    let mut bits = BitSource::new(rng);
    loop {
        let (negative, y) = bits.discrete_laplace(scale);
        let magnitude = BigUint::from(y) * &b * &t_big;
        let gap = if magnitude >= a {
            magnitude - &a
        } else {
            &a - magnitude
        };
        if bits.bernoulli_exp_big(&gap * &gap, &den) {
            let y = geometric_to_i64(y);
            return if negative { -y } else { y };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rand::SeedableRng;

    use super::*;
    use crate::testing::stats::{assert_chi_square_fits, build_bins};

    type TestRng = rand_chacha::ChaCha20Rng;

    /// The exact pmf of the discrete Gaussian of variance `s2`, by summing its normalizer
    /// over ±(40σ + 40) (the rest is below 1e-300).
    fn pmf(s2: f64) -> impl Fn(i64) -> f64 {
        let reach = (40.0 * s2.sqrt()) as i64 + 40;
        let z: f64 = (-reach..=reach)
            .map(|k| (-((k * k) as f64) / (2.0 * s2)).exp())
            .sum();
        move |k: i64| (-((k * k) as f64) / (2.0 * s2)).exp() / z
    }

    #[test]
    fn the_laplace_scale_is_floor_sigma_plus_one() {
        let t = |num, den| ExactVariance::new(num, den).expect("valid").laplace_scale();
        assert_eq!(t(1, 4), 1);
        assert_eq!(t(1, 1), 2);
        assert_eq!(t(399, 100), 2);
        assert_eq!(t(4, 1), 3);
        assert_eq!(t(1 << 40, 1), (1 << 20) + 1);
    }

    #[test]
    fn variances_round_up_onto_the_grid() {
        let v = ExactVariance::at_least(1.0).expect("valid");
        assert_eq!((v.num, v.den), (VARIANCE_GRID, VARIANCE_GRID));
        let third = ExactVariance::at_least(1.0 / 3.0).expect("valid");
        assert!(third.as_f64() >= 1.0 / 3.0 && third.as_f64() < 1.0 / 3.0 + 1e-6);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 2e12] {
            assert!(ExactVariance::at_least(bad).is_err(), "{bad}");
        }
        assert!(ExactVariance::new(0, 1).is_err());
    }

    /// Goodness of fit to the exact pmf (chi-square at false-failure rate 1e-6 each), and
    /// the sample variance within 5 standard errors of the exact one.
    #[test]
    fn draws_follow_the_discrete_gaussian() {
        const N: u64 = 200_000;
        for (num, den, seed) in [(1u64, 1u64, 1u64), (10, 3, 2), (1, 4, 3), (2500, 1, 4)] {
            let variance = ExactVariance::new(num, den).expect("valid");
            let s2 = variance.as_f64();
            let p = pmf(s2);
            let reach = (40.0 * s2.sqrt()) as i64 + 40;
            let upper = |k: i64| (k..=reach).map(&p).sum::<f64>();
            let lower = |k: i64| (-reach..=k).map(&p).sum::<f64>();
            let mut rng = TestRng::seed_from_u64(seed);
            let mut counts = BTreeMap::new();
            let (mut sum, mut squares) = (0.0, 0.0);
            for _ in 0..N {
                let k = sample_discrete_gaussian(&mut rng, variance);
                *counts.entry(k).or_insert(0u64) += 1;
                sum += k as f64;
                squares += (k * k) as f64;
            }
            let bins = build_bins(N, &p, &upper, &lower);
            assert_chi_square_fits(&counts, N, &bins, &format!("sigma^2 = {num}/{den}"));
            // Exact variance and fourth moment of the distribution (mean 0).
            let var: f64 = (-reach..=reach).map(|k| (k * k) as f64 * p(k)).sum();
            let m4: f64 = (-reach..=reach)
                .map(|k| ((k * k) as f64).powi(2) * p(k))
                .sum();
            let mean = sum / N as f64;
            assert!(mean.abs() <= 5.0 * (var / N as f64).sqrt(), "mean {mean}");
            let sample_var = squares / N as f64;
            let se = ((m4 - var * var) / N as f64).sqrt();
            assert!(
                (sample_var - var).abs() <= 5.0 * se,
                "sigma^2 = {num}/{den}: variance {sample_var} against {var}"
            );
        }
    }
}
