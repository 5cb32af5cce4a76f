//! The exponential mechanism and weighted index sampling, both exact.
//!
//! [`exponential_mechanism`] returns candidate `i` with probability exactly
//!
//! ```text
//! P(i) = exp(ε'·s_i / (2Δ)) / Σ_j exp(ε'·s_j / (2Δ))
//! ```
//!
//! where the scores `s_i` and the sensitivity `Δ` are the given `f64` values read as the
//! exact rationals they are (every finite `f64` is a dyadic rational `m·2^e`), and
//! `ε' = floor(ε·2^30)/2^30 ≤ ε` is the budget rounded down to the grid of the exact noise
//! samplers ([`epsilon_grid_numerator`]).
//!
//! # Construction
//!
//! Rejection sampling. With `s_max` the largest score and
//! `γ_i = ε'·(s_max − s_i)/(2Δ) ≥ 0`, repeat: propose `i` uniformly from `0..n` (an exact
//! uniform integer), accept it with probability `exp(−γ_i)`. A round returns `i` with
//! probability `exp(−γ_i)/n`, so the accepted index has probability
//! `exp(−γ_i)/Σ_j exp(−γ_j)`, which is `P(i)` above (the factor `exp(ε'·s_max/(2Δ))`
//! cancels). `γ_i` is computed exactly as a ratio of big integers from the binary
//! representations of `s_max`, `s_i`, `ε'` and `Δ`, and `Bernoulli(exp(−γ_i))` is drawn
//! exactly (Canonne–Kamath–Steinke 2020, Algorithm 1, `noise` module). No floating-point
//! value is computed on the sampling path, so no candidate's probability is rounded, to 0
//! or otherwise: one whose probability is `e^-50` is returned with probability `e^-50`.
//!
//! Cost: the best candidate is always accepted, so a round succeeds with probability
//! `Σ_j exp(−γ_j)/n ≥ 1/n` and the expected number of rounds is `n / Σ_j exp(−γ_j) ≤ n`. A
//! rejected round costs a uniform index, one exact `γ_i` and on average about 1.6
//! `Bernoulli(e^-1)` trials, about 0.3 µs. Measured (release build, one core,
//! `exponential_timing`, ignored by default): over 531,441 candidates a draw takes 3.3 ms
//! with equal scores (one round; the time is the exact decomposition of the scores),
//! 4–6 ms with the mass on the best few percent, and about 150 ms in the worst case of one
//! candidate far above all others (`n` rounds); over 4,096 candidates at most 0.32 ms.
//!
//! # What is claimed
//!
//! The sampler is exactly `ε'`-differentially private, hence `ε`-DP, **with respect to the
//! scores it is given**: if for every pair of neighbouring datasets the computed `f64` score
//! of every candidate changes by at most `sensitivity`, the probability of any output
//! changes by a factor at most `e^ε'`. There is no floating-point excess in the mechanism
//! itself (given uniform random bits). A caller whose sensitivity bound is proven for exact
//! real-valued scores, while the scores it passes are rounded `f64` computations, must
//! account for the rounding itself: if every computed score is within `E` of its exact
//! value, computed scores of neighbours differ by at most `Δ + 2E`, and the selection is
//! `ε'·(1 + 2E/Δ)`-DP. IPA's utility score does this (docs/METHODS.md §1.13, §6.4).
//!
//! [`exponential_weights`] computes the same probabilities in `f64` for tests and
//! diagnostics only; it is not used to sample.
//!
//! [`sample_weighted_index`] draws index `i` with probability exactly
//! `w_i / Σ_j w_j` for `f64` weights read as exact dyadic rationals: an exact big-integer
//! inverse CDF. Its callers' weights are rounded `f64` values (the IPA value choice of the
//! paper computes them with `exp`), so the distribution is exactly the one of the weights
//! as given, not of the real numbers they approximate.

use num_bigint::{BigInt, BigUint, Sign};
use num_traits::Zero;
use rand::RngCore;

use super::noise::{epsilon_grid_numerator, BitSource, NoiseError, EPSILON_GRID_BITS};

/// A finite `f64` as the exact dyadic rational `mantissa · 2^exponent` (`mantissa` signed,
/// `|mantissa| < 2^53`). Zero is `(0, 0)`.
fn dyadic(x: f64) -> (i64, i32) {
    let bits = x.to_bits();
    let negative = bits >> 63 == 1;
    let field = ((bits >> 52) & 0x7ff) as i32;
    let fraction = (bits & ((1u64 << 52) - 1)) as i64;
    let (mantissa, exponent) = if field == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1i64 << 52), field - 1075)
    };
    if mantissa == 0 {
        return (0, 0);
    }
    // Strip trailing zero bits so the numbers stay small.
    let shift = mantissa.trailing_zeros() as i32;
    let (mantissa, exponent) = (mantissa >> shift, exponent + shift);
    (if negative { -mantissa } else { mantissa }, exponent)
}

/// The exact exponents `γ_i = ε'·(s_max − s_i)/(2Δ)` of a set of scores, as
/// `numerator_i / denominator` with one shared denominator.
///
/// With every score `s_i = m_i·2^{e_i}` and `e_low` the smallest exponent of a non-zero
/// score, `s_max − s_i = D_i·2^{e_low}` for an integer `D_i ≥ 0`; with
/// `ε' = a/2^30` and `Δ = m_Δ·2^{e_Δ}`,
/// `γ_i = a·D_i·2^{e_low − e_Δ − 31} / m_Δ`. The power of two goes to the numerator factor
/// or to the denominator, whichever keeps both integers.
#[derive(Debug, Clone)]
pub(crate) struct ExactExponents {
    /// `(m_i, e_i)` of every score.
    scores: Vec<(i64, i32)>,
    /// `s_max` in units of `2^{e_low}`.
    max_units: BigInt,
    e_low: i32,
    /// `a · 2^{max(shift, 0)}`.
    factor: BigUint,
    /// `m_Δ · 2^{max(−shift, 0)}`.
    denominator: BigUint,
}

impl ExactExponents {
    /// The exponents of `scores` (finite, non-empty) at `ε' = epsilon_num / 2^30` and
    /// `sensitivity` (finite, > 0).
    fn new(scores: &[f64], epsilon_num: u64, sensitivity: f64) -> Self {
        let parts: Vec<(i64, i32)> = scores.iter().map(|&s| dyadic(s)).collect();
        let e_low = parts
            .iter()
            .filter(|(m, _)| *m != 0)
            .map(|&(_, e)| e)
            .min()
            .unwrap_or(0);
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let max_units = units(dyadic(max), e_low);
        let (m_delta, e_delta) = dyadic(sensitivity);
        // sensitivity > 0, so m_delta > 0.
        let m_delta = BigUint::from(m_delta.unsigned_abs());
        let shift = i64::from(e_low) - i64::from(e_delta) - i64::from(EPSILON_GRID_BITS + 1);
        let factor = BigUint::from(epsilon_num) << shift.max(0) as u64;
        let denominator = m_delta << (-shift).max(0) as u64;
        Self {
            scores: parts,
            max_units,
            e_low,
            factor,
            denominator,
        }
    }

    /// `γ_i` as `(numerator, denominator)`; the numerator is zero for a best candidate.
    pub(crate) fn gamma(&self, i: usize) -> (BigUint, &BigUint) {
        let gap = &self.max_units - units(self.scores[i], self.e_low);
        // s_max >= s_i, so the gap is never negative.
        let gap = gap.to_biguint().unwrap_or_default();
        (gap * &self.factor, &self.denominator)
    }
}

/// `m·2^e` in units of `2^e_low` (`e >= e_low` for every non-zero value).
fn units((mantissa, exponent): (i64, i32), e_low: i32) -> BigInt {
    if mantissa == 0 {
        return BigInt::zero();
    }
    let sign = if mantissa < 0 {
        Sign::Minus
    } else {
        Sign::Plus
    };
    let magnitude = BigUint::from(mantissa.unsigned_abs()) << (exponent - e_low).max(0) as u64;
    BigInt::from_biguint(sign, magnitude)
}

/// Validates the inputs of the exponential mechanism; returns `floor(ε·2^30)`.
fn validate(scores: &[f64], epsilon: f64, sensitivity: f64) -> Result<u64, NoiseError> {
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
    epsilon_grid_numerator(epsilon)
}

/// Selection probabilities of the exponential mechanism, in `f64`:
/// `p_i = w_i / Σ_j w_j` with `w_i = exp(ε · (s_i − s_max) / (2 · sensitivity))`.
///
/// For tests and diagnostics only: [`exponential_mechanism`] does not use these
/// rounded values (it samples the exact distribution, at `ε` rounded down to a multiple
/// of `2^-30`). A probability below about `1e-308` shows here as 0.
///
/// # Errors
///
/// The same as [`exponential_mechanism`].
pub fn exponential_weights(
    scores: &[f64],
    epsilon: f64,
    sensitivity: f64,
) -> Result<Vec<f64>, NoiseError> {
    validate(scores, epsilon, sensitivity)?;
    let factor = epsilon / sensitivity / 2.0;
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // s - max <= 0 (possibly -inf when the difference overflows); times a finite positive
    // factor it stays <= 0 and is never NaN, so every weight is in [0, 1].
    let weights: Vec<f64> = scores.iter().map(|&s| ((s - max) * factor).exp()).collect();
    let total: f64 = weights.iter().sum();
    Ok(weights.iter().map(|w| w / total).collect())
}

/// The exponential mechanism: returns index `i` with probability exactly proportional to
/// `exp(ε' · s_i / (2 · sensitivity))`, `ε' = floor(ε · 2^30) / 2^30`, the scores and the
/// sensitivity read as the exact rationals their `f64` values are (module documentation).
///
/// This is `ε`-differentially private when `sensitivity` bounds the change of every
/// computed score between neighbouring datasets; there is no floating-point excess.
///
/// # Errors
///
/// [`NoiseError::InvalidData`] if `scores` is empty or contains a NaN or
/// infinite value; [`NoiseError::InvalidParameter`] if `epsilon` or `sensitivity`
/// is NaN, infinite or `<= 0`, if `epsilon < 2^-30`, or if `epsilon / (2 · sensitivity)`
/// overflows or underflows to zero in `f64`.
pub fn exponential_mechanism<R: RngCore + ?Sized>(
    rng: &mut R,
    scores: &[f64],
    epsilon: f64,
    sensitivity: f64,
) -> Result<usize, NoiseError> {
    let epsilon_num = validate(scores, epsilon, sensitivity)?;
    let exponents = ExactExponents::new(scores, epsilon_num, sensitivity);
    let n = scores.len() as u128;
    let mut bits = BitSource::new(rng);
    loop {
        // n <= usize::MAX, so the index fits.
        let i = bits.uniform_below(n) as usize;
        let (num, den) = exponents.gamma(i);
        if bits.bernoulli_exp_big(num, den) {
            return Ok(i);
        }
    }
}

/// Returns index `i` with probability exactly `weights[i] / Σ_j weights[j]`, the weights
/// read as the exact dyadic rationals their `f64` values are.
///
/// Every positive weight is written as an integer multiple of `2^e_low` (`e_low` the
/// smallest binary exponent among them); one exact uniform integer below the exact integer
/// total picks the index (inverse CDF on integers). A zero weight is never selected; a
/// positive one, however small, has its exact share.
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
    let parts: Vec<(i64, i32)> = weights.iter().map(|&w| dyadic(w)).collect();
    let Some(e_low) = parts.iter().filter(|(m, _)| *m != 0).map(|&(_, e)| e).min() else {
        return Err(NoiseError::invalid_data(
            "weights",
            "at least one weight must be > 0, all are 0",
        ));
    };
    let integers: Vec<BigUint> = parts
        .iter()
        .map(|&part| units(part, e_low).to_biguint().unwrap_or_default())
        .collect();
    let total: BigUint = integers.iter().sum();
    let mut bits = BitSource::new(rng);
    let mut r = bits.uniform_below_big(&total);
    for (i, w) in integers.iter().enumerate() {
        if r < *w {
            return Ok(i);
        }
        r -= w;
    }
    // r < total = Σ w, so the scan returns; the last positive weight is a safe fallback.
    Ok(integers.iter().rposition(|w| !w.is_zero()).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::stats::*;
    use num_bigint::{BigInt, BigUint};
    use num_traits::FromPrimitive;
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

    /// `x` as an exact fraction `num / 2^k`, found by doubling (exact in binary floating
    /// point) until the value is an integer; independent of the code under test.
    fn exact_fraction(x: f64) -> (BigInt, u32) {
        let (mut y, mut k) = (x, 0u32);
        while y.fract() != 0.0 {
            y *= 2.0;
            k += 1;
        }
        // `y` is an integer-valued f64, converted exactly.
        (BigInt::from_f64(y).unwrap_or_default(), k)
    }

    /// Asserts that the mechanism's `γ_i` equals `epsilon_num/2^30 · (s_max − s_i)/(2Δ)`
    /// exactly (cross-multiplied in big integers).
    fn assert_exact_gamma(scores: &[f64], epsilon: f64, sensitivity: f64) {
        let a = epsilon_grid_numerator(epsilon).expect("valid epsilon");
        let exponents = ExactExponents::new(scores, a, sensitivity);
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (max_num, max_k) = exact_fraction(max);
        let (d_num, d_k) = exact_fraction(sensitivity);
        for (i, &s) in scores.iter().enumerate() {
            let (num, den) = exponents.gamma(i);
            let (s_num, s_k) = exact_fraction(s);
            // s_max − s_i = gap / 2^K with K = max(max_k, s_k).
            let k = max_k.max(s_k);
            let gap = (&max_num << (k - max_k)) - (&s_num << (k - s_k));
            // γ = a · gap · 2^d_k / (2^30 · 2 · d_num · 2^K).
            let want_num = (BigInt::from(a) * gap) << d_k;
            let want_den = d_num.clone() << (31 + k);
            let got = BigInt::from(num) * &want_den;
            let want = want_num * BigInt::from(den.clone());
            assert_eq!(
                got, want,
                "γ_{i} of {scores:?} at ε {epsilon}, Δ {sensitivity}"
            );
        }
    }

    #[test]
    fn exponents_are_exact_rationals() {
        assert_exact_gamma(&[0.0, 1.0, 2.0], 2.0, 1.0);
        assert_exact_gamma(&[0.1, 0.3, -0.7, 0.3], 0.1, 0.7);
        assert_exact_gamma(&[1e6, 1e6 - 1.0, -3.25e-3], 0.3, 3.2285);
        assert_exact_gamma(&[5e-324, 0.0, 1e300, -1e-300], 1.0, 1e-3);
        // Closed forms: γ = 2, 1, 0 and γ = 50 exactly.
        let e = ExactExponents::new(&[0.0, 1.0, 2.0], 2 << 30, 1.0);
        for (i, want) in [2u32, 1, 0].into_iter().enumerate() {
            let (num, den) = e.gamma(i);
            assert_eq!(num, BigUint::from(want) * den, "γ_{i}");
        }
        let e = ExactExponents::new(&[0.0, -100.0], 1 << 30, 1.0);
        let (num, den) = e.gamma(1);
        assert_eq!(num, BigUint::from(50u32) * den);
    }

    /// An RNG that returns a scripted bit sequence (least significant bit of each word
    /// first, as the bit reservoir consumes it), then zeros.
    struct ScriptedRng {
        bits: Vec<bool>,
        next: usize,
    }

    impl RngCore for ScriptedRng {
        fn next_u32(&mut self) -> u32 {
            self.next_u64() as u32
        }
        fn next_u64(&mut self) -> u64 {
            let mut word = 0u64;
            for b in 0..64 {
                if self.bits.get(self.next + b).copied().unwrap_or(false) {
                    word |= 1 << b;
                }
            }
            self.next += 64;
            word
        }
        fn fill_bytes(&mut self, dest: &mut [u8]) {
            for chunk in dest.chunks_mut(8) {
                let word = self.next_u64().to_le_bytes();
                chunk.copy_from_slice(&word[..chunk.len()]);
            }
        }
    }

    /// Candidate 1 of scores `[0, −100]` at ε = Δ = 1 has probability
    /// `e^-50 / (1 + e^-50) ≈ 2^-72`. The f64 inverse CDF this module used before could
    /// never return it, whatever the random bits: `1 + e^-50` rounds to 1, and every
    /// uniform variate below 1 lands on candidate 0. The exact sampler returns it for the
    /// bit sequence "propose 1" followed by 50 successful `Bernoulli(e^-1)` trials (each:
    /// `A_2 = 1` with bit 0, `A_3 = 0` with the 2-bit value 1), so index 1 is in its support
    /// and is drawn with probability `e^-50/(1 + e^-50)`.
    #[test]
    fn a_candidate_of_probability_2_pow_minus_72_is_in_the_support() {
        let mut script = vec![true]; // uniform_below(2) = 1: propose candidate 1
        for _ in 0..50 {
            script.extend([false, true, false]);
        }
        let mut rng = ScriptedRng {
            bits: script,
            next: 0,
        };
        assert_eq!(
            exponential_mechanism(&mut rng, &[0.0, -100.0], 1.0, 1.0),
            Ok(1)
        );
        // One failed trial instead rejects it, and candidate 0 is then accepted.
        // Propose 1, A_2 = 0 (bit 1): K = 2 is even, rejected; propose 0: accepted.
        let script = vec![true, true, false];
        let mut rng = ScriptedRng {
            bits: script,
            next: 0,
        };
        assert_eq!(
            exponential_mechanism(&mut rng, &[0.0, -100.0], 1.0, 1.0),
            Ok(0)
        );
    }

    /// Frequencies of a draw with known probabilities, one of them below 2^-60: chi-square
    /// at false-failure rate below 1e-6 (the tiny candidate shares a bin with its
    /// neighbour), and its acceptance exponent is exactly 43.5, so its probability is
    /// `e^-43.5 / Z > 0`, not rounded to 0.
    #[test]
    fn frequencies_match_exact_probabilities_with_a_tiny_candidate() {
        let scores = [0.0, 1.0, 2.0, 3.5, -40.0];
        let raw: Vec<f64> = [3.5f64, 2.5, 1.5, 0.0, 43.5]
            .iter()
            .map(|g| (-g).exp())
            .collect();
        let total: f64 = raw.iter().sum();
        let probs: Vec<f64> = raw.iter().map(|r| r / total).collect();
        assert!(probs[4] > 0.0 && probs[4] < 2f64.powi(-60), "{}", probs[4]);
        let e = ExactExponents::new(&scores, 2 << 30, 1.0);
        let (num, den) = e.gamma(4);
        assert_eq!(num * 2u32, BigUint::from(87u32) * den, "γ_4 = 43.5");
        let mut rng = TestRng::seed_from_u64(17);
        let counts = tally(DRAWS, || {
            exponential_mechanism(&mut rng, &scores, 2.0, 1.0).expect("valid")
        });
        let mut bins = categorical_bins(&probs[..4]);
        bins[3].hi = 4;
        bins[3].prob += probs[4];
        assert_chi_square_fits(&counts, DRAWS, &bins, "exact EM with a 2^-60 candidate");
    }

    #[test]
    fn epsilon_is_rounded_down_to_the_grid() {
        // ε = 0.1 becomes floor(0.1 · 2^30) / 2^30 for the exponent.
        let a = epsilon_grid_numerator(0.1).expect("valid");
        assert_eq!(a, 107_374_182);
        let e = ExactExponents::new(&[0.0, 1.0], a, 1.0);
        let (num, den) = e.gamma(0);
        // γ_0 = a / 2^31.
        assert_eq!(num << 31, BigUint::from(a) * den);
        let mut rng = TestRng::seed_from_u64(18);
        assert!(matches!(
            exponential_mechanism(&mut rng, &[0.0, 1.0], 1e-10, 1.0),
            Err(NoiseError::InvalidParameter { name, .. }) if name == "epsilon"
        ));
    }

    /// A positive weight however small keeps its exact share: `[1, 2^-1074]` cannot be
    /// drawn 2^1074 times, but a scripted uniform integer equal to the total minus one
    /// lands on index 1 (the f64 inverse CDF used before rounded its share to 0).
    #[test]
    fn weighted_index_keeps_a_tiny_weight_in_the_support() {
        // total = 2^1074 + 1 units of 2^-1074: uniform_below draws 1075 bits.
        let mut script = vec![false; 1074];
        script.push(true); // r = 2^1074 = total − 1 → index 1
        let mut rng = ScriptedRng {
            bits: script,
            next: 0,
        };
        assert_eq!(sample_weighted_index(&mut rng, &[1.0, 5e-324]), Ok(1));
    }

    /// Draw times over 4,096 and 531,441 candidates (IPA's lattice sizes) for four score
    /// profiles: gaps spread uniformly over `[0, 3000Δ]` (about 450 proposals per draw at
    /// ε = 0.3), the mass on the best 5 % (about 140), equal scores (one), and one candidate
    /// 1000Δ above all others (the worst case: `n` proposals). Run with
    /// `cargo test --release --lib exponential_timing -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn exponential_timing() {
        let mut rng = TestRng::seed_from_u64(19);
        let delta = 3.2285;
        for n in [4096usize, 531_441] {
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let spread_gaps: Vec<f64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    -((x >> 11) as f64 / (1u64 << 53) as f64) * 3000.0 * delta - 1.0e6
                })
                .collect();
            // 0.999 of the mass on the best 5 %: gaps up to 2/ε · ln(1000) · 20 Δ.
            let best_five_percent: Vec<f64> = (0..n)
                .map(|i| -(i as f64 / n as f64) * delta * 2.0 / 0.3 * 7.0 * 20.0)
                .collect();
            let equal = vec![-1.0e6; n];
            let mut one_best: Vec<f64> = (0..n)
                .map(|i| -1.0e6 - delta * 1000.0 - (i % 7) as f64)
                .collect();
            one_best[n / 3] = -1.0e6;
            for (name, scores) in [
                ("gaps to 3000 Δ", &spread_gaps),
                ("best 5 %", &best_five_percent),
                ("equal", &equal),
                ("one best", &one_best),
            ] {
                let draws = 5;
                let start = std::time::Instant::now();
                for _ in 0..draws {
                    exponential_mechanism(&mut rng, scores, 0.3, delta).expect("valid");
                }
                let per = start.elapsed().as_secs_f64() / draws as f64;
                println!("n = {n:>7}, {name:>14}: {:.3} ms per draw", per * 1e3);
            }
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
