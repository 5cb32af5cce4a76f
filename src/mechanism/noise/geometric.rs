//! The exact geometric sampler, the building block of the Laplace-type samplers.

use rand::RngCore;

use super::bits::BitSource;
use super::ExactScale;

impl<R: RngCore + ?Sized> BitSource<'_, R> {
    /// Geometric draw with `q = exp(-1/scale)` (see [`sample_geometric`]).
    pub(super) fn geometric(&mut self, scale: ExactScale) -> u64 {
        let s = scale.num();
        let t = scale.den();
        loop {
            // u < s <= u64::MAX.
            let u = self.uniform_below(u128::from(s)) as u64;
            if !self.bernoulli_exp(u, s) {
                continue;
            }
            let mut v: u64 = 0;
            while self.bernoulli_exp_unit(1, 1) {
                v = v.saturating_add(1);
            }
            let x = u128::from(u) + u128::from(s) * u128::from(v);
            let y = x / u128::from(t);
            return u64::try_from(y).unwrap_or(u64::MAX);
        }
    }
}

#[cfg(test)]
/// Samples the geometric distribution `P(k) = (1 - q) q^k`, `k >= 0`, with
/// `q = exp(-1/scale)`, exactly.
///
/// With `scale = s / t` (`s = scale.num()`, `t = scale.den()`), this is the
/// inner loop of Canonne–Kamath–Steinke 2020, Algorithm 2:
///
/// 1. `U` uniform in `[0, s)`, accepted with probability `exp(-U/s)`
///    (otherwise start over);
/// 2. `V >= 0` geometric with `P(V >= v) = e^{-v}` (count successes of
///    `exp(-1)` trials until the first failure);
/// 3. `X = U + s·V` then has `P(X = x) ∝ e^{-x/s}` for `x >= 0`;
/// 4. return `Y = floor(X / t)`, which has `P(Y = y) ∝ e^{-y·t/s} = q^y`.
///
/// Each round is accepted with probability
/// `(1 - e^{-1}) / (s·(1 - e^{-1/s})) >= 1 - e^{-1} ≈ 0.63`, so the expected
/// cost is a small constant.
///
/// # Overflow
///
/// `X` is computed in `u128`. `V` is counted in a `u64` that saturates at
/// `u64::MAX` (reaching it needs `2^64 - 1` consecutive `exp(-1)` successes,
/// probability `e^{-(2^64-1)}`), so `X <= (2^64 - 1) + (2^64 - 1)^2 < 2^128`
/// never overflows. The result saturates at `u64::MAX`; that requires
/// `Y >= 2^64 - 1`, which has probability `exp(-(2^64 - 1)/scale)`, below
/// `e^{-2^32}` for any scale up to `2^32`.
pub fn sample_geometric<R: RngCore + ?Sized>(rng: &mut R, scale: ExactScale) -> u64 {
    BitSource::new(rng).geometric(scale)
}

/// Converts a geometric draw to `i64`, saturating at `i64::MAX` (see the
/// overflow notes of [`sample_geometric`]: unreachable for realistic scales).
pub(super) fn geometric_to_i64(g: u64) -> i64 {
    i64::try_from(g).unwrap_or(i64::MAX)
}
