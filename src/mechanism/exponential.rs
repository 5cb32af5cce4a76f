//! The exponential mechanism and weighted index sampling.
//!
//! [`exponential_mechanism`] selects candidate `i` with probability
//! proportional to `exp(ε · (s_i − s_max) / (2Δs))`. Subtracting the maximum
//! score `s_max` before exponentiating leaves the distribution unchanged
//! (the common factor `exp(ε·s_max/(2Δs))` cancels) but keeps every exponent
//! `<= 0`, so no weight overflows and the best candidate has weight exactly 1.
//! The index is then drawn by inverse CDF: a uniform `u` in `[0, total)` from
//! 53 random bits, and the first index whose cumulative weight exceeds `u`.
//!
//! # Floating-point accuracy
//!
//! The weights, their sum and the uniform variate are `f64`. Each weight
//! carries a relative rounding error of a few units in the last place, and the
//! running sum over `n` candidates a relative error of at most about
//! `n·2^-52`. Following the analysis of the same construction in ARX (Bild,
//! Kuhn, Prasser), the probability with which any candidate is selected
//! differs from the exact one by a factor within `(1 + n·2^-51)^{±2}`, so the
//! mechanism is `(ε + η)`-differentially private with the additive ε-excess
//! `η <= ln((1 + n·2^-51)^2) ≈ 2n·2^-51`: about `9e-15` for `n = 10` and
//! `9e-7` for `n = 10^9`. The uniform variate quantizes the cumulative
//! distribution to multiples of `2^-53 · total`; this is within the bound for
//! candidates whose probability is not itself within a few orders of
//! magnitude of `2^-53` (in the IPA node selection every probability is close
//! to `1/n`). Scores are selection utilities, not released values, so this is
//! not exposed to the floating-point attack that affects additive Laplace
//! noise; released counts use the exact integer samplers of the sibling
//! `noise` module.

use super::noise::NoiseError;
use rand::RngCore;

/// A uniform `f64` in `[0, 1)` built from 53 random bits: every multiple of
/// `2^-53` in the range is equally likely.
fn uniform_unit<R: RngCore + ?Sized>(rng: &mut R) -> f64 {
    const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
    (rng.next_u64() >> 11) as f64 * SCALE
}

/// Inverse-CDF selection over non-negative finite `weights` whose sequential
/// sum `total` is finite and positive. A zero weight is never selected.
fn inverse_cdf<R: RngCore + ?Sized>(rng: &mut R, weights: &[f64], total: f64) -> usize {
    let u = uniform_unit(rng) * total;
    let mut cumulative = 0.0;
    let mut last_positive = 0;
    for (i, &w) in weights.iter().enumerate() {
        if w > 0.0 {
            cumulative += w;
            last_positive = i;
            if u < cumulative {
                return i;
            }
        }
    }
    // Reached only when rounding makes `u` equal to the total: the draw
    // belongs to the last candidate with positive weight.
    last_positive
}

/// Validates the inputs of the exponential mechanism and returns the
/// unnormalized weights `exp(ε(s_i − s_max)/(2Δs))` (the maximum has weight 1).
fn unnormalized_weights(
    scores: &[f64],
    epsilon: f64,
    sensitivity: f64,
) -> Result<Vec<f64>, NoiseError> {
    if scores.is_empty() {
        return Err(NoiseError::invalid_data("scores", "must not be empty"));
    }
    if let Some((i, s)) = scores.iter().enumerate().find(|(_, s)| !s.is_finite()) {
        return Err(NoiseError::invalid_data(
            "scores",
            format!("every score must be finite, got scores[{i}] = {s}"),
        ));
    }
    if !epsilon.is_finite() || epsilon <= 0.0 {
        return Err(NoiseError::invalid(
            "epsilon",
            format!("must be a finite number > 0, got {epsilon}"),
        ));
    }
    if !sensitivity.is_finite() || sensitivity <= 0.0 {
        return Err(NoiseError::invalid(
            "sensitivity",
            format!("must be a finite number > 0, got {sensitivity}"),
        ));
    }
    let factor = epsilon / sensitivity / 2.0;
    if !factor.is_finite() || factor <= 0.0 {
        return Err(NoiseError::invalid(
            "epsilon",
            format!(
                "epsilon / (2 · sensitivity) must be a finite number > 0, got {epsilon} / (2 · {sensitivity})"
            ),
        ));
    }
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // s - max <= 0 (possibly -inf when the difference overflows); times a
    // finite positive factor it stays <= 0 and is never NaN, so every weight
    // is in [0, 1] and the maximum's weight is exactly 1.
    Ok(scores.iter().map(|&s| ((s - max) * factor).exp()).collect())
}

/// Selection probabilities of the exponential mechanism:
/// `p_i = w_i / Σ_j w_j` with `w_i = exp(ε · (s_i − s_max) / (2 · sensitivity))`.
///
/// For tests and diagnostics.
///
/// # Errors
///
/// The same as [`exponential_mechanism`].
pub fn exponential_weights(
    scores: &[f64],
    epsilon: f64,
    sensitivity: f64,
) -> Result<Vec<f64>, NoiseError> {
    let weights = unnormalized_weights(scores, epsilon, sensitivity)?;
    let total: f64 = weights.iter().sum();
    Ok(weights.iter().map(|w| w / total).collect())
}

/// The exponential mechanism: returns index `i` with probability proportional
/// to `exp(ε · (s_i − s_max) / (2 · sensitivity))`.
///
/// This is `ε`-differentially private when `sensitivity` bounds the change of
/// any score between neighbouring datasets, up to the floating-point excess
/// described in the module documentation (`≈ 9e-15` for 10 candidates).
///
/// # Errors
///
/// [`NoiseError::InvalidData`] if `scores` is empty or contains a NaN or
/// infinite value; [`NoiseError::InvalidParameter`] if `epsilon` or `sensitivity`
/// is NaN, infinite or `<= 0`, or if `epsilon / (2 · sensitivity)` overflows or
/// underflows to zero.
pub fn exponential_mechanism<R: RngCore + ?Sized>(
    rng: &mut R,
    scores: &[f64],
    epsilon: f64,
    sensitivity: f64,
) -> Result<usize, NoiseError> {
    let weights = unnormalized_weights(scores, epsilon, sensitivity)?;
    // The maximum contributes exactly 1 and every weight is in [0, 1], so
    // 1 <= total <= n: finite and positive.
    let total: f64 = weights.iter().sum();
    Ok(inverse_cdf(rng, &weights, total))
}

/// Returns index `i` with probability `weights[i] / Σ_j weights[j]`
/// (inverse CDF with a linear scan, a uniform variate of 53 random bits).
///
/// For callers that have already computed their weights, such as the IPA
/// value selection. A zero weight is never selected. Sums that overflow `f64`
/// are handled by rescaling by the largest weight first.
///
/// # Errors
///
/// [`NoiseError::InvalidData`] if `weights` is empty, if any weight is
/// negative, NaN or infinite, or if all weights are zero.
pub fn sample_weighted_index<R: RngCore + ?Sized>(
    rng: &mut R,
    weights: &[f64],
) -> Result<usize, NoiseError> {
    if weights.is_empty() {
        return Err(NoiseError::invalid_data("weights", "must not be empty"));
    }
    if let Some((i, w)) = weights
        .iter()
        .enumerate()
        .find(|(_, w)| !w.is_finite() || **w < 0.0)
    {
        return Err(NoiseError::invalid_data(
            "weights",
            format!("every weight must be finite and >= 0, got weights[{i}] = {w}"),
        ));
    }
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return Err(NoiseError::invalid_data(
            "weights",
            "at least one weight must be > 0, all are 0",
        ));
    }
    if total.is_finite() {
        return Ok(inverse_cdf(rng, weights, total));
    }
    // The sum overflowed: divide by the largest weight so that it is at most n.
    let max = weights.iter().copied().fold(0.0, f64::max);
    let scaled: Vec<f64> = weights.iter().map(|w| w / max).collect();
    let total: f64 = scaled.iter().sum();
    Ok(inverse_cdf(rng, &scaled, total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::stats::*;
    use rand::SeedableRng;
    use std::collections::BTreeMap;

    type TestRng = rand_chacha::ChaCha20Rng;

    const DRAWS: u64 = 200_000;

    fn tally(n: u64, mut f: impl FnMut() -> usize) -> BTreeMap<i64, u64> {
        let mut counts = BTreeMap::new();
        for _ in 0..n {
            *counts.entry(f() as i64).or_insert(0) += 1;
        }
        counts
    }

    #[test]
    fn weights_match_closed_form() {
        let w = exponential_weights(&[0.0, 1.0, 2.0], 2.0, 1.0).expect("valid");
        let raw = [(-2.0f64).exp(), (-1.0f64).exp(), 1.0];
        let total: f64 = raw.iter().sum();
        for (got, want) in w.iter().zip(raw.iter().map(|r| r / total)) {
            assert!((got - want).abs() < 1e-15, "{got} vs {want}");
        }
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn mechanism_frequencies_match_weights() {
        let scores = [0.0, 1.0, 2.0];
        // exp(2 · (s_i - 2) / 2) = e^-2, e^-1, 1, computed independently of
        // the code under test.
        let raw = [(-2.0f64).exp(), (-1.0f64).exp(), 1.0];
        let total: f64 = raw.iter().sum();
        let probs: Vec<f64> = raw.iter().map(|r| r / total).collect();
        let weights = exponential_weights(&scores, 2.0, 1.0).expect("valid");
        for (w, p) in weights.iter().zip(&probs) {
            assert!((w - p).abs() < 1e-15, "{w} vs {p}");
        }
        let mut rng = TestRng::seed_from_u64(11);
        let counts = tally(DRAWS, || {
            exponential_mechanism(&mut rng, &scores, 2.0, 1.0).expect("valid")
        });
        assert_chi_square_fits(
            &counts,
            DRAWS,
            &categorical_bins(&probs),
            "exp mech [0,1,2]",
        );
    }

    #[test]
    fn max_subtraction_avoids_overflow() {
        let scores = [1e6, 1e6 - 1.0];
        let w = exponential_weights(&scores, 1.0, 1.0).expect("valid");
        assert!(w.iter().all(|p| p.is_finite()));
        let want0 = 1.0 / (1.0 + (-0.5f64).exp());
        assert!((w[0] - want0).abs() < 1e-12, "{w:?}");
        let mut rng = TestRng::seed_from_u64(12);
        let n = DRAWS;
        let counts = tally(n, || {
            exponential_mechanism(&mut rng, &scores, 1.0, 1.0).expect("valid")
        });
        assert_wilson(counts.get(&0).copied().unwrap_or(0), n, want0, "P(index 0)");

        // Differences that overflow f64 give weight 0, never NaN.
        let extreme = [f64::MAX, -f64::MAX, 0.0];
        let w = exponential_weights(&extreme, 1.0, 1.0).expect("valid");
        assert_eq!(w, vec![1.0, 0.0, 0.0]);
        for _ in 0..1000 {
            assert_eq!(exponential_mechanism(&mut rng, &extreme, 1.0, 1.0), Ok(0));
        }
        // A huge epsilon/sensitivity ratio still works.
        let w = exponential_weights(&[1.0, 0.0], 1e300, 1e-7).expect("valid");
        assert_eq!(w, vec![1.0, 0.0]);
    }

    #[test]
    fn mechanism_rejects_bad_input() {
        let mut rng = TestRng::seed_from_u64(13);
        let ok = [0.0, 1.0];
        let cases: Vec<(Vec<f64>, f64, f64, &str)> = vec![
            (vec![], 1.0, 1.0, "scores"),
            (vec![0.0, f64::NAN], 1.0, 1.0, "scores"),
            (vec![f64::INFINITY, 0.0], 1.0, 1.0, "scores"),
            (vec![f64::NEG_INFINITY], 1.0, 1.0, "scores"),
            (ok.to_vec(), 0.0, 1.0, "epsilon"),
            (ok.to_vec(), -1.0, 1.0, "epsilon"),
            (ok.to_vec(), f64::NAN, 1.0, "epsilon"),
            (ok.to_vec(), f64::INFINITY, 1.0, "epsilon"),
            (ok.to_vec(), 1.0, 0.0, "sensitivity"),
            (ok.to_vec(), 1.0, -2.0, "sensitivity"),
            (ok.to_vec(), 1.0, f64::NAN, "sensitivity"),
            (ok.to_vec(), 1.0, f64::INFINITY, "sensitivity"),
            (ok.to_vec(), 1e300, 1e-300, "epsilon"),
            (ok.to_vec(), 1e-300, 1e300, "epsilon"),
        ];
        for (scores, eps, sens, name) in cases {
            let err =
                exponential_mechanism(&mut rng, &scores, eps, sens).expect_err("must be rejected");
            let matches = if name == "scores" {
                matches!(&err, NoiseError::InvalidData { name: n, .. } if n == name)
            } else {
                matches!(&err, NoiseError::InvalidParameter { name: n, .. } if n == name)
            };
            assert!(matches, "{scores:?} {eps} {sens}: {err}");
            assert!(exponential_weights(&scores, eps, sens).is_err());
        }
    }

    #[test]
    fn mechanism_is_reproducible_with_seed() {
        let scores = [0.3, 0.1, 0.9, 0.5];
        let run = |seed| {
            let mut rng = TestRng::seed_from_u64(seed);
            (0..50)
                .map(|_| exponential_mechanism(&mut rng, &scores, 1.0, 1.0).expect("valid"))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
    }

    #[test]
    fn weighted_index_frequencies() {
        let weights = [1.0, 0.0, 3.0, 6.0];
        let mut rng = TestRng::seed_from_u64(14);
        let counts = tally(DRAWS, || {
            sample_weighted_index(&mut rng, &weights).expect("valid")
        });
        assert_eq!(counts.get(&1), None, "zero weight selected");
        // Index 1 has no outcomes, so it shares a bin with index 2.
        let bins = vec![
            Bin {
                lo: 0,
                hi: 0,
                prob: 0.1,
            },
            Bin {
                lo: 1,
                hi: 2,
                prob: 0.3,
            },
            Bin {
                lo: 3,
                hi: 3,
                prob: 0.6,
            },
        ];
        assert_chi_square_fits(&counts, DRAWS, &bins, "weighted index [1,0,3,6]");
    }

    #[test]
    fn weighted_index_handles_overflowing_sum() {
        let weights = [f64::MAX, f64::MAX];
        let mut rng = TestRng::seed_from_u64(15);
        let n = DRAWS;
        let counts = tally(n, || {
            sample_weighted_index(&mut rng, &weights).expect("valid")
        });
        assert_wilson(counts.get(&0).copied().unwrap_or(0), n, 0.5, "P(index 0)");
        // A single positive weight is always selected, including last.
        for _ in 0..1000 {
            assert_eq!(sample_weighted_index(&mut rng, &[0.0, 0.0, 2.5]), Ok(2));
        }
    }

    #[test]
    fn weighted_index_rejects_bad_input() {
        let mut rng = TestRng::seed_from_u64(16);
        for w in [
            vec![],
            vec![0.0, 0.0],
            vec![1.0, -1.0],
            vec![1.0, f64::NAN],
            vec![f64::INFINITY],
        ] {
            assert!(
                matches!(
                    sample_weighted_index(&mut rng, &w),
                    Err(NoiseError::InvalidData { name, .. }) if name == "weights"
                ),
                "{w:?}"
            );
        }
    }

    /// The exponential mechanism near its worst case: candidate 0 scores 1 and 20 others 0
    /// in D, the reverse in D' (Δs = 1). P[candidate 0] changes by a factor approaching
    /// e^ε as the number of other candidates grows (here about 0.9·e^ε).
    #[test]
    fn audit_exponential_mechanism() {
        use crate::testing::audit::{assert_private, assert_violated, audit, histogram, ALPHA};
        let epsilon = 2.0;
        let mut d_scores = vec![0.0; 21];
        d_scores[0] = 1.0;
        let mut d2_scores = vec![1.0; 21];
        d2_scores[0] = 0.0;
        let choose = |scores: &[f64], seed: u64| {
            histogram(2, 200_000, seed, |rng| {
                usize::from(exponential_mechanism(rng, scores, epsilon, 1.0).expect("valid") != 0)
            })
        };
        let d = choose(&d_scores, 33);
        let d2 = choose(&d2_scores, 34);
        let report = audit(&d, &d2, epsilon, 0.0, ALPHA);
        assert_private(&report, "exponential mechanism");
        assert!(report.max_ratio_lower_bound > 5.0, "{report}");
        assert_violated(&audit(&d, &d2, 1.5, 0.0, ALPHA), "exponential power check");
    }
}
