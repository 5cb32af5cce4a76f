//! Discrete Laplace noise and the floor of continuous Laplace noise, exactly.

use rand::RngCore;

use super::bits::BitSource;
use super::geometric::geometric_to_i64;
use super::ExactScale;

/// Samples the discrete Laplace distribution `P(k) ∝ exp(-|k| / scale)` on
/// all integers `k`, exactly.
///
/// Canonne–Kamath–Steinke 2020, Algorithm 2: draw `Y` from
/// `sample_geometric` (geometric.rs) and a fair sign bit `B`; reject the pair `(B = 1,
/// Y = 0)` (so that zero is not counted twice) and otherwise return
/// `(1 - 2B)·Y`. Then `P(k) = (1 - q)/(1 + q) · q^{|k|}` with
/// `q = exp(-1/scale)`; adding it to an integer count gives
/// `(1/scale)`-differential privacy for sensitivity 1.
///
/// The magnitude saturates at `i64::MAX`, with the probability bound given
/// for `sample_geometric` (geometric.rs).
pub fn sample_discrete_laplace<R: RngCore + ?Sized>(rng: &mut R, scale: ExactScale) -> i64 {
    let (negative, y) = BitSource::new(rng).discrete_laplace(scale);
    let y = geometric_to_i64(y);
    if negative {
        -y
    } else {
        y
    }
}

impl<R: RngCore + ?Sized> BitSource<'_, R> {
    /// One discrete Laplace draw of `scale` as its sign and magnitude: a fair sign bit and a
    /// geometric magnitude, "negative zero" rejected ([`sample_discrete_laplace`]; the
    /// discrete Gaussian draws its proposals here too).
    pub(super) fn discrete_laplace(&mut self, scale: ExactScale) -> (bool, u64) {
        loop {
            let negative = self.bit();
            let y = self.geometric(scale);
            if !(negative && y == 0) {
                return (negative, y);
            }
        }
    }
}

/// Samples `floor(L)` for `L ~ Laplace(0, scale)` (continuous), exactly.
///
/// With probability 1/2 it returns `G`, otherwise `-1 - G`, where
/// `G = sample_geometric(scale)` has `P(G = j) = (1 - q) q^j`,
/// `q = exp(-1/scale)`.
///
/// # Why this is exactly `floor(L)`
///
/// The continuous Laplace density is `e^{-|x|/b} / (2b)` with `b = scale`.
/// For `j >= 0`:
///
/// * `P(floor(L) = j) = P(j <= L < j + 1)`
///   `= ½(e^{-j/b} - e^{-(j+1)/b}) = ½ (1 - q) q^j`;
/// * `P(floor(L) = -1 - j) = P(-1 - j <= L < -j)`
///   `= P(j < -L <= j + 1) = ½ (1 - q) q^j` by symmetry.
///
/// Both halves are `½ · P(G = j)`, which is what the sign choice produces.
///
/// # Use for noisy threshold tests
///
/// A test of the form `n <= t + L` with integers `n`, `t` and continuous
/// Laplace noise `L` is equivalent to `n - t <= L`, and since `n - t` is an
/// integer, to `n - t <= floor(L)`. The decision can therefore be taken with
/// this sampler on integers only, with exactly the probabilities of the
/// continuous mechanism and without any floating-point value whose
/// representation could leak `n` (the surface of Mironov's attack).
///
/// The result is clamped to `[i64::MIN, i64::MAX]`, with the probability
/// bound given for `sample_geometric` (geometric.rs).
pub fn sample_floor_laplace<R: RngCore + ?Sized>(rng: &mut R, scale: ExactScale) -> i64 {
    let mut bits = BitSource::new(rng);
    let negative = bits.bit();
    let g = geometric_to_i64(bits.geometric(scale));
    if negative {
        // g <= i64::MAX, so -1 - g >= i64::MIN.
        -1 - g
    } else {
        g
    }
}
