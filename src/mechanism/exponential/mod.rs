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

#[cfg(test)]
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
mod tests;
