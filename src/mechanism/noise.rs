//! Exact integer noise samplers.
//!
//! Textbook Laplace noise computed as `x + b·ln(U)` on `f64` does not sample the
//! Laplace distribution: the set of reachable doubles has gaps that depend on
//! `x`, which lets an observer rule out or single out the true value
//! (Mironov's floating-point attack). The noisy quantities released by this
//! crate are integer counts, so the samplers here work on integers only:
//! uniform integers by rejection sampling, Bernoulli trials with rational
//! probabilities, and Bernoulli trials with probability `exp(-γ)` for rational
//! `γ`. No floating-point value is computed anywhere on a sampling path, so the
//! output distributions are exactly the stated ones (given a uniform bit
//! source).
//!
//! The constructions follow Canonne, Kamath & Steinke, "The Discrete Gaussian
//! for Differential Privacy" (NeurIPS 2020), Algorithm 1 (Bernoulli(exp(-γ)))
//! and Algorithm 2 (discrete Laplace).
//!
//! Scales are exact positive rationals ([`ExactScale`]). A privacy budget
//! `ε` given as `f64` is converted with
//! [`ExactScale::from_sensitivity_epsilon`], which rounds so that the noise is
//! never smaller than requested.
//!
//! All samplers are generic over `R: rand::RngCore + ?Sized`; production code
//! passes a CSPRNG (see the `rng` module).
//!
//! # Real-valued thresholds
//!
//! A mechanism that compares an integer with a *real-valued* noisy threshold, such as
//! IPA's suppression test `n ≤ t + L` with continuous `L ~ Lap(b)`, never materializes
//! `L`: for integers `n` and `t` the test is equivalent to `n − t ≤ floor(L)`, and
//! [`sample_floor_laplace`] samples `floor(L)` exactly from integer Bernoulli trials. The
//! decision therefore has exactly the probabilities of the continuous mechanism, and no
//! floating-point value that could depend on `n` is ever computed (the surface of
//! Mironov's attack). IPA's `suppress` does exactly this. A future mechanism that needs a
//! real-valued threshold must discretize it the same way (compare integers with the floor
//! or ceiling of exactly sampled noise) or use Mironov's snapping mechanism; it must not
//! add `f64` Laplace noise.

use rand::RngCore;
use std::fmt;

/// Error returned when a mechanism parameter is outside its domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoiseError {
    /// A parameter is outside the domain the mechanism accepts.
    InvalidParameter {
        /// Name of the offending parameter, for example `epsilon`.
        name: String,
        /// Why it was rejected, including the offending value.
        reason: String,
    },
}

impl NoiseError {
    /// Builds a [`NoiseError::InvalidParameter`].
    pub(crate) fn invalid(name: impl Into<String>, reason: impl Into<String>) -> Self {
        NoiseError::InvalidParameter {
            name: name.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for NoiseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoiseError::InvalidParameter { name, reason } => {
                write!(f, "invalid parameter {name}: {reason}")
            }
        }
    }
}

impl std::error::Error for NoiseError {}

/// Number of fractional bits of the grid onto which `ε` is rounded down by
/// [`ExactScale::from_sensitivity_epsilon`]: `ε` becomes a multiple of
/// `2^-30 ≈ 9.3e-10`.
pub const EPSILON_GRID_BITS: u32 = 30;

/// An exact, strictly positive rational noise scale `num / den`, kept reduced
/// (`gcd(num, den) == 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExactScale {
    num: u64,
    den: u64,
}

impl ExactScale {
    /// Creates the scale `num / den`, reduced by their greatest common divisor.
    ///
    /// # Errors
    ///
    /// [`NoiseError::InvalidParameter`] if `num` or `den` is zero.
    pub fn new(num: u64, den: u64) -> Result<Self, NoiseError> {
        if num == 0 {
            return Err(NoiseError::invalid("scale numerator", "must be > 0, got 0"));
        }
        if den == 0 {
            return Err(NoiseError::invalid(
                "scale denominator",
                "must be > 0, got 0",
            ));
        }
        let g = gcd_u128(u128::from(num), u128::from(den));
        // g divides both, so the quotients fit u64.
        Ok(ExactScale {
            num: (u128::from(num) / g) as u64,
            den: (u128::from(den) / g) as u64,
        })
    }

    /// Returns an exact scale `>= sensitivity / epsilon` for the Laplace-type
    /// mechanisms.
    ///
    /// `epsilon` is rounded **down** to a multiple of `2^-30`
    /// ([`EPSILON_GRID_BITS`]), and the scale is
    /// `sensitivity · 2^30 / floor(epsilon · 2^30)`, reduced. Rounding ε down
    /// can only make the noise larger, so the privacy guarantee for the
    /// requested ε holds exactly. The relative increase of the scale is below
    /// `2^-30 / (epsilon - 2^-30)` (under `1e-8` for `epsilon >= 0.1`). An `epsilon`
    /// so large that `epsilon · 2^30` exceeds `u64::MAX` is capped there,
    /// which again only enlarges the scale.
    ///
    /// # Errors
    ///
    /// [`NoiseError::InvalidParameter`] if `sensitivity` is zero, if `epsilon`
    /// is NaN, infinite or `<= 0`, if `epsilon < 2^-30` (so that
    /// `floor(epsilon · 2^30) == 0`), or if the reduced numerator
    /// `sensitivity · 2^30 / gcd` does not fit `u64` (possible only for a
    /// sensitivity of `2^34` or more).
    pub fn from_sensitivity_epsilon(sensitivity: u64, epsilon: f64) -> Result<Self, NoiseError> {
        if sensitivity == 0 {
            return Err(NoiseError::invalid("sensitivity", "must be > 0, got 0"));
        }
        if epsilon.is_nan() {
            return Err(NoiseError::invalid(
                "epsilon",
                "must be a finite number > 0, got NaN",
            ));
        }
        if !epsilon.is_finite() || epsilon <= 0.0 {
            return Err(NoiseError::invalid(
                "epsilon",
                format!("must be a finite number > 0, got {epsilon}"),
            ));
        }
        let grid = (1u64 << EPSILON_GRID_BITS) as f64;
        // Multiplying by a power of two is exact in binary floating point
        // (no overflow is possible for finite epsilon below 2^994), so the
        // floor is the exact rounding of epsilon down to the grid.
        let scaled = (epsilon * grid).floor();
        if scaled < 1.0 {
            return Err(NoiseError::invalid(
                "epsilon",
                format!(
                    "must be at least 2^-{EPSILON_GRID_BITS} ({:e}), got {epsilon:e}",
                    1.0 / grid
                ),
            ));
        }
        // `as` saturates at u64::MAX; that only rounds epsilon further down.
        let eps_fixed = scaled as u64;
        let num = u128::from(sensitivity) << EPSILON_GRID_BITS;
        let den = u128::from(eps_fixed);
        let g = gcd_u128(num, den);
        let (num, den) = (num / g, den / g);
        let num = u64::try_from(num).map_err(|_| {
            NoiseError::invalid(
                "epsilon",
                format!(
                    "scale sensitivity/epsilon = {sensitivity}/{epsilon:e} is too large to represent \
                     (numerator exceeds 2^64)"
                ),
            )
        })?;
        // den <= eps_fixed <= u64::MAX.
        let den = den as u64;
        Ok(ExactScale { num, den })
    }

    /// The numerator of the reduced fraction.
    pub fn num(&self) -> u64 {
        self.num
    }

    /// The denominator of the reduced fraction.
    pub fn den(&self) -> u64 {
        self.den
    }

    /// The scale as a (rounded) `f64`, for display and diagnostics only; the
    /// samplers never use it.
    pub fn as_f64(&self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

fn gcd_u128(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

/// A reservoir of uniform random bits, refilled 64 bits at a time from an RNG.
///
/// The samplers consume only as many bits as each step needs (a Bernoulli
/// trial with denominator 3 uses 2 bits per attempt, not a 64-bit word), which
/// makes them several times cheaper in RNG output. Every bit is an
/// independent uniform bit of the underlying generator, so exactness is
/// unaffected. Unused bits are discarded when the reservoir is dropped at the
/// end of each public call.
struct BitSource<'a, R: RngCore + ?Sized> {
    rng: &'a mut R,
    buf: u64,
    avail: u32,
}

/// Mask of the `n` low bits, `0 <= n <= 64`.
fn low_mask(n: u32) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

impl<'a, R: RngCore + ?Sized> BitSource<'a, R> {
    fn new(rng: &'a mut R) -> Self {
        BitSource {
            rng,
            buf: 0,
            avail: 0,
        }
    }

    /// Returns `n` uniform bits (`0 <= n <= 64`) as the low bits of a `u64`.
    fn bits(&mut self, n: u32) -> u64 {
        let n = n.min(64);
        if n <= self.avail {
            let out = self.buf & low_mask(n);
            self.buf = self.buf.checked_shr(n).unwrap_or(0);
            self.avail -= n;
            out
        } else {
            // All `avail` buffered bits (the rest of `buf` is zero) plus
            // `need` fresh ones; have + need = n <= 64.
            let have = self.avail;
            let need = n - have;
            let word = self.rng.next_u64();
            let fresh = word & low_mask(need);
            let out = (fresh << have) | self.buf;
            self.buf = word.checked_shr(need).unwrap_or(0);
            self.avail = 64 - need;
            out
        }
    }

    /// Returns one fair random bit.
    fn bit(&mut self) -> bool {
        self.bits(1) == 1
    }

    /// Exact uniform integer in `[0, n)` for `n >= 1` (returns 0 for `n <= 1`).
    ///
    /// Rejection sampling: draw as many bits as `n - 1` needs and retry when
    /// the value is `>= n`. Each attempt succeeds with probability above 1/2.
    fn uniform_below(&mut self, n: u128) -> u128 {
        if n <= 1 {
            return 0;
        }
        let max = n - 1;
        let width = 128 - max.leading_zeros();
        loop {
            let x = if width <= 64 {
                u128::from(self.bits(width))
            } else {
                let lo = u128::from(self.bits(64));
                (u128::from(self.bits(width - 64)) << 64) | lo
            };
            if x <= max {
                return x;
            }
        }
    }

    /// `true` with probability `num / den` (see [`bernoulli_rational`]).
    fn bernoulli_rational(&mut self, num: u128, den: u128) -> bool {
        if den == 0 {
            return false;
        }
        if num >= den {
            return true;
        }
        if num == 0 {
            return false;
        }
        self.uniform_below(den) < num
    }

    /// Bernoulli(exp(-num/den)) for `0 <= num <= den`, `den > 0`
    /// (Canonne–Kamath–Steinke 2020, Algorithm 1, case `γ ∈ [0, 1]`).
    ///
    /// Draw `A_k ~ Bernoulli(γ/k)` for `k = 1, 2, …` until the first failure
    /// at index `K`; `P(K > k) = γ^k / k!`, so
    /// `P(K odd) = Σ_j (-γ)^j / j! = e^{-γ}`. `den · k` is computed in `u128`
    /// and cannot overflow before `k = 2^64`, an event of probability at most
    /// `1 / (2^64 - 1)!`; the saturating arithmetic merely rules out a panic.
    fn bernoulli_exp_unit(&mut self, num: u64, den: u64) -> bool {
        let mut k: u128 = 1;
        loop {
            let d = u128::from(den).saturating_mul(k);
            if !self.bernoulli_rational(u128::from(num), d) {
                break;
            }
            k = k.saturating_add(1);
        }
        k % 2 == 1
    }

    /// `true` with probability `exp(-num/den)` (see [`bernoulli_exp`]).
    fn bernoulli_exp(&mut self, num: u64, den: u64) -> bool {
        if den == 0 {
            return false;
        }
        let whole = num / den;
        let frac = num % den;
        for _ in 0..whole {
            if !self.bernoulli_exp_unit(1, 1) {
                return false;
            }
        }
        self.bernoulli_exp_unit(frac, den)
    }

    /// Geometric draw with `q = exp(-1/scale)` (see [`sample_geometric`]).
    fn geometric(&mut self, scale: ExactScale) -> u64 {
        let s = scale.num;
        let t = scale.den;
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

/// Returns an exactly uniform integer in `[0, n)`.
///
/// Uses rejection sampling on the minimal number of random bits, never
/// floating point or modulo reduction, so there is no bias. Each attempt
/// succeeds with probability above 1/2.
///
/// `n == 0` describes an empty range; it is treated as `n == 1` and returns 0.
pub fn sample_uniform_below<R: RngCore + ?Sized>(rng: &mut R, n: u64) -> u64 {
    // The result is < n <= u64::MAX.
    BitSource::new(rng).uniform_below(u128::from(n)) as u64
}

/// Returns `true` with probability exactly `num / den`.
///
/// A uniform integer `U` in `[0, den)` is drawn by rejection sampling and the
/// result is `U < num`. `num >= den` always returns `true` (probability 1);
/// `den == 0` is not a probability and returns `false`.
pub fn bernoulli_rational<R: RngCore + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    BitSource::new(rng).bernoulli_rational(num, den)
}

/// Returns `true` with probability exactly `exp(-gamma_num / gamma_den)`.
///
/// Canonne–Kamath–Steinke 2020, Algorithm 1: for `γ <= 1`, draw
/// `A_k ~ Bernoulli(γ/k)` (exact rational trials) for `k = 1, 2, …` until the
/// first failure at index `K` and return whether `K` is odd, which happens
/// with probability `Σ_j (-γ)^j / j! = e^{-γ}`. For `γ > 1`, run `floor(γ)`
/// independent `exp(-1)` trials (stopping at the first failure) followed by
/// one `exp(-(γ - floor(γ)))` trial, since
/// `e^{-γ} = (e^{-1})^{floor γ} · e^{-(γ - floor γ)}`. The expected number of
/// random bits is bounded by a constant independent of `γ`.
///
/// `gamma_num == 0` returns `true`. `gamma_den == 0` is not a valid rational
/// and is treated as `γ = +∞` (returns `false`).
pub fn bernoulli_exp<R: RngCore + ?Sized>(rng: &mut R, gamma_num: u64, gamma_den: u64) -> bool {
    BitSource::new(rng).bernoulli_exp(gamma_num, gamma_den)
}

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
fn geometric_to_i64(g: u64) -> i64 {
    i64::try_from(g).unwrap_or(i64::MAX)
}

/// Samples the discrete Laplace distribution `P(k) ∝ exp(-|k| / scale)` on
/// all integers `k`, exactly.
///
/// Canonne–Kamath–Steinke 2020, Algorithm 2: draw `Y` from
/// [`sample_geometric`] and a fair sign bit `B`; reject the pair `(B = 1,
/// Y = 0)` (so that zero is not counted twice) and otherwise return
/// `(1 - 2B)·Y`. Then `P(k) = (1 - q)/(1 + q) · q^{|k|}` with
/// `q = exp(-1/scale)`; adding it to an integer count gives
/// `(1/scale)`-differential privacy for sensitivity 1.
///
/// The magnitude saturates at `i64::MAX`, with the probability bound given
/// for [`sample_geometric`].
pub fn sample_discrete_laplace<R: RngCore + ?Sized>(rng: &mut R, scale: ExactScale) -> i64 {
    let mut bits = BitSource::new(rng);
    loop {
        let negative = bits.bit();
        let y = bits.geometric(scale);
        if negative && y == 0 {
            continue;
        }
        let y = geometric_to_i64(y);
        return if negative { -y } else { y };
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
/// bound given for [`sample_geometric`].
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

/// Statistical helpers shared by the sampler tests of this module and its
/// siblings.
#[cfg(test)]
pub(crate) mod test_stats {
    use std::collections::BTreeMap;

    /// Upper-tail standard normal quantile for tail probability `1e-6`:
    /// `P(Z > 4.7534243) = 1e-6`.
    pub const Z_1E6: f64 = 4.753_424_308_822_899;

    /// Approximate `1 - 1e-6` quantile of the chi-square distribution with
    /// `df` degrees of freedom (Wilson–Hilferty):
    /// `df · (1 - 2/(9 df) + z · sqrt(2/(9 df)))^3` with `z = Z_1E6`.
    ///
    /// At this far tail the approximation overestimates the exact quantile
    /// for every df (checked numerically against the regularized incomplete
    /// gamma function: df 1 → 27.50 vs 23.93 exact, df 10 → 47.96 vs 46.86,
    /// df 100 → 182.41 vs 182.13). The exact tail probability beyond the
    /// returned value is between 1.6e-7 (df 1) and 9.7e-7 (df 200), so a
    /// correct sampler fails a test using it with probability below 1e-6
    /// (up to the chi-square approximation of the multinomial, which the
    /// minimum expected count of 5 per bin keeps accurate). The tests here
    /// use between 2 and about 155 degrees of freedom.
    pub fn chi_square_critical_1e6(df: usize) -> f64 {
        let k = df as f64;
        let a = 2.0 / (9.0 * k);
        k * (1.0 - a + Z_1E6 * a.sqrt()).powi(3)
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

    /// Asserts that `counts` fit `bins` at false-failure rate below 1e-6.
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
}

#[cfg(test)]
mod tests {
    use super::test_stats::*;
    use super::*;
    use rand::SeedableRng;
    use std::collections::BTreeMap;

    type TestRng = rand_chacha::ChaCha20Rng;

    /// Draws per distribution and scale in the goodness-of-fit tests.
    const DRAWS: u64 = 200_000;

    fn scales() -> Vec<(ExactScale, &'static str)> {
        vec![
            (ExactScale::new(1, 2).expect("valid"), "0.5"),
            (ExactScale::new(1, 1).expect("valid"), "1"),
            (ExactScale::new(10, 3).expect("valid"), "10/3"),
            (ExactScale::new(10, 1).expect("valid"), "10"),
        ]
    }

    fn q_of(scale: ExactScale) -> f64 {
        (-1.0 / scale.as_f64()).exp()
    }

    struct Summary {
        counts: BTreeMap<i64, u64>,
        mean: f64,
    }

    fn draw(n: u64, seed: u64, mut f: impl FnMut(&mut TestRng) -> i64) -> Summary {
        let mut rng = TestRng::seed_from_u64(seed);
        let mut counts = BTreeMap::new();
        let mut sum = 0.0;
        for _ in 0..n {
            let k = f(&mut rng);
            *counts.entry(k).or_insert(0) += 1;
            sum += k as f64;
        }
        Summary {
            counts,
            mean: sum / n as f64,
        }
    }

    /// Asserts `|sample mean - mean| <= 5 · sd / sqrt(n)` (false-failure rate
    /// about 5.7e-7 by the central limit theorem).
    fn assert_mean(s: &Summary, n: u64, mean: f64, var: f64, what: &str) {
        let bound = 5.0 * (var / n as f64).sqrt();
        assert!(
            (s.mean - mean).abs() <= bound,
            "{what}: sample mean {} differs from {mean} by more than {bound}",
            s.mean
        );
    }

    // Exact distribution functions with q = exp(-1/scale).

    fn geo_pmf(q: f64, k: i64) -> f64 {
        if k < 0 {
            0.0
        } else {
            (1.0 - q) * q.powi(k as i32)
        }
    }
    fn geo_upper(q: f64, k: i64) -> f64 {
        if k <= 0 {
            1.0
        } else {
            q.powi(k as i32)
        }
    }
    fn geo_lower(q: f64, k: i64) -> f64 {
        if k < 0 {
            0.0
        } else {
            1.0 - q.powi(k as i32 + 1)
        }
    }

    fn dlap_pmf(q: f64, k: i64) -> f64 {
        (1.0 - q) / (1.0 + q) * q.powi(k.unsigned_abs() as i32)
    }
    /// P(X >= k) for the discrete Laplace.
    fn dlap_upper(q: f64, k: i64) -> f64 {
        if k >= 1 {
            q.powi(k as i32) / (1.0 + q)
        } else {
            1.0 - dlap_upper(q, 1 - k)
        }
    }
    fn dlap_lower(q: f64, k: i64) -> f64 {
        dlap_upper(q, -k)
    }

    fn floor_pmf(q: f64, k: i64) -> f64 {
        let j = if k >= 0 { k } else { -1 - k };
        0.5 * (1.0 - q) * q.powi(j as i32)
    }
    /// P(floor(L) >= k) = P(L >= k).
    fn floor_upper(q: f64, k: i64) -> f64 {
        if k >= 0 {
            0.5 * q.powi(k as i32)
        } else {
            1.0 - 0.5 * q.powi(-k as i32)
        }
    }
    fn floor_lower(q: f64, k: i64) -> f64 {
        1.0 - floor_upper(q, k + 1)
    }

    #[test]
    fn exact_scale_new_reduces_and_validates() {
        let s = ExactScale::new(20, 6).expect("valid");
        assert_eq!((s.num(), s.den()), (10, 3));
        assert!((s.as_f64() - 10.0 / 3.0).abs() < 1e-15);
        assert!(ExactScale::new(0, 1).is_err());
        assert!(ExactScale::new(1, 0).is_err());
        let big = ExactScale::new(u64::MAX, u64::MAX).expect("valid");
        assert_eq!((big.num(), big.den()), (1, 1));
    }

    #[test]
    fn exact_scale_from_epsilon_values() {
        let two30 = 1u64 << 30;
        // 0.1 · 2^30 = 107374182.4 → 107374182 = 2 · 53687091.
        let s = ExactScale::from_sensitivity_epsilon(1, 0.1).expect("valid");
        assert_eq!((s.num(), s.den()), (two30 / 2, 53_687_091));
        // 0.3 · 2^30 = 322122547.2 → 322122547 (odd).
        let s = ExactScale::from_sensitivity_epsilon(1, 0.3).expect("valid");
        assert_eq!((s.num(), s.den()), (two30, 322_122_547));
        let s = ExactScale::from_sensitivity_epsilon(1, 1.0).expect("valid");
        assert_eq!((s.num(), s.den()), (1, 1));
        let s = ExactScale::from_sensitivity_epsilon(3, 0.3).expect("valid");
        assert_eq!((s.num(), s.den()), (3 * two30, 322_122_547));
        for (sens, eps) in [(1u64, 0.1), (1, 0.3), (1, 1.0), (3, 0.3), (7, 0.123456789)] {
            let s = ExactScale::from_sensitivity_epsilon(sens, eps).expect("valid");
            let want = sens as f64 / eps;
            assert!(s.as_f64() >= want, "scale {} < {want}", s.as_f64());
            assert!(
                (s.as_f64() - want) / want < 1e-8,
                "scale {} vs {want}",
                s.as_f64()
            );
            // Exact check: num/den == sens · 2^30 / floor(eps · 2^30), and the
            // grid value floor(eps · 2^30) / 2^30 (exact in f64) is <= eps.
            let eps_fixed = (eps * two30 as f64).floor();
            assert!(eps_fixed / two30 as f64 <= eps);
            assert_eq!(
                u128::from(s.num()) * eps_fixed as u128,
                u128::from(s.den()) * u128::from(sens) * u128::from(two30)
            );
        }
        // Huge epsilon is capped, never an error and never a smaller scale.
        let s = ExactScale::from_sensitivity_epsilon(1, 1e300).expect("valid");
        assert!(s.as_f64() > 0.0);
    }

    #[test]
    fn exact_scale_from_epsilon_rejects_bad_input() {
        for eps in [
            0.0,
            -0.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e-12,
        ] {
            let err = ExactScale::from_sensitivity_epsilon(1, eps).expect_err("must be rejected");
            let msg = err.to_string();
            assert!(msg.contains("epsilon"), "{msg}");
            if eps.is_nan() {
                assert!(msg.contains("NaN"), "{msg}");
            } else if eps == 1e-12 {
                assert!(msg.contains("1e-12"), "{msg}");
            } else {
                assert!(msg.contains(&format!("{eps}")), "{msg}");
            }
        }
        assert!(ExactScale::from_sensitivity_epsilon(0, 1.0).is_err());
        // 2^40 · 2^30 / 1 does not fit u64.
        assert!(ExactScale::from_sensitivity_epsilon(1 << 40, 1.0 / (1u64 << 30) as f64).is_err());
        // The smallest accepted epsilon.
        assert!(ExactScale::from_sensitivity_epsilon(1, 1.0 / (1u64 << 30) as f64).is_ok());
    }

    #[test]
    fn uniform_below_is_uniform_and_in_range() {
        let mut rng = TestRng::seed_from_u64(1);
        assert_eq!(sample_uniform_below(&mut rng, 0), 0);
        assert_eq!(sample_uniform_below(&mut rng, 1), 0);
        for _ in 0..1000 {
            assert!(sample_uniform_below(&mut rng, u64::MAX) < u64::MAX);
            let mut bits = BitSource::new(&mut rng);
            assert!(bits.uniform_below(u128::MAX) < u128::MAX);
            assert!(bits.uniform_below((1u128 << 64) + 3) < (1u128 << 64) + 3);
        }
        // n = 7 needs 3 bits and rejects 7: chi-square over the 7 outcomes.
        let n = DRAWS;
        let s = draw(n, 2, |r| sample_uniform_below(r, 7) as i64);
        let bins: Vec<Bin> = (0..7)
            .map(|k| Bin {
                lo: k,
                hi: k,
                prob: 1.0 / 7.0,
            })
            .collect();
        assert_chi_square_fits(&s.counts, n, &bins, "uniform_below(7)");
    }

    /// The bit reservoir hands out the generator's bits in order (least
    /// significant first within each word), without loss or repetition.
    #[test]
    fn bit_source_preserves_the_bit_stream() {
        let widths = [1u32, 3, 64, 7, 60, 2, 64, 0, 13, 51, 64, 64, 5];
        let mut got = Vec::new();
        {
            let mut rng = TestRng::seed_from_u64(8);
            let mut bits = BitSource::new(&mut rng);
            for &w in &widths {
                let v = bits.bits(w);
                assert!(w == 64 || v >> w == 0, "value wider than {w} bits");
                got.extend((0..w).map(|i| (v >> i) & 1));
            }
        }
        let mut rng = TestRng::seed_from_u64(8);
        let want: Vec<u64> = (0..got.len().div_ceil(64))
            .flat_map(|_| {
                let w = rng.next_u64();
                (0..64).map(move |i| (w >> i) & 1)
            })
            .take(got.len())
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn bernoulli_rational_edges_and_frequency() {
        let mut rng = TestRng::seed_from_u64(3);
        assert!(!bernoulli_rational(&mut rng, 1, 0));
        assert!(!bernoulli_rational(&mut rng, 0, 5));
        assert!(bernoulli_rational(&mut rng, 5, 5));
        assert!(bernoulli_rational(&mut rng, 6, 5));
        let n = DRAWS;
        let hits = (0..n)
            .filter(|_| bernoulli_rational(&mut rng, 3, 7))
            .count() as u64;
        assert_wilson(hits, n, 3.0 / 7.0, "bernoulli_rational(3/7)");
        // A denominator above 2^64 uses the two-word path.
        let den = (1u128 << 70) + 1;
        let hits = (0..n)
            .filter(|_| bernoulli_rational(&mut rng, den / 4, den))
            .count() as u64;
        assert_wilson(hits, n, 0.25, "bernoulli_rational(~1/4, den > 2^64)");
    }

    #[test]
    fn bernoulli_exp_frequencies() {
        let mut rng = TestRng::seed_from_u64(4);
        for (num, den) in [(0u64, 1u64), (3, 10), (1, 1), (5, 2)] {
            let gamma = num as f64 / den as f64;
            let n = DRAWS;
            let hits = (0..n).filter(|_| bernoulli_exp(&mut rng, num, den)).count() as u64;
            assert_wilson(hits, n, (-gamma).exp(), &format!("bernoulli_exp({gamma})"));
        }
        assert!(!bernoulli_exp(&mut rng, 1, 0));
        // gamma = 0 is certain.
        assert!((0..1000).all(|_| bernoulli_exp(&mut rng, 0, 7)));
    }

    #[test]
    fn geometric_matches_pmf() {
        for (i, (scale, name)) in scales().into_iter().enumerate() {
            let q = q_of(scale);
            let n = DRAWS;
            let s = draw(n, 100 + i as u64, |r| {
                geometric_to_i64(sample_geometric(r, scale))
            });
            let bins = build_bins(n, &|k| geo_pmf(q, k), &|k| geo_upper(q, k), &|k| {
                geo_lower(q, k)
            });
            assert_chi_square_fits(&s.counts, n, &bins, &format!("geometric scale {name}"));
            let mean = q / (1.0 - q);
            let var = q / ((1.0 - q) * (1.0 - q));
            assert_mean(&s, n, mean, var, &format!("geometric scale {name}"));
        }
    }

    #[test]
    fn discrete_laplace_matches_pmf() {
        for (i, (scale, name)) in scales().into_iter().enumerate() {
            let q = q_of(scale);
            let n = DRAWS;
            let s = draw(n, 200 + i as u64, |r| sample_discrete_laplace(r, scale));
            let bins = build_bins(n, &|k| dlap_pmf(q, k), &|k| dlap_upper(q, k), &|k| {
                dlap_lower(q, k)
            });
            let what = format!("discrete Laplace scale {name}");
            assert_chi_square_fits(&s.counts, n, &bins, &what);
            let var = 2.0 * q / ((1.0 - q) * (1.0 - q));
            assert_mean(&s, n, 0.0, var, &what);
            let zeros = s.counts.get(&0).copied().unwrap_or(0);
            assert_wilson(zeros, n, (1.0 - q) / (1.0 + q), &format!("{what}: P(0)"));
        }
    }

    #[test]
    fn floor_laplace_matches_pmf_and_tails() {
        for (i, (scale, name)) in scales().into_iter().enumerate() {
            let q = q_of(scale);
            let n = DRAWS;
            let s = draw(n, 300 + i as u64, |r| sample_floor_laplace(r, scale));
            let bins = build_bins(n, &|k| floor_pmf(q, k), &|k| floor_upper(q, k), &|k| {
                floor_lower(q, k)
            });
            let what = format!("floor Laplace scale {name}");
            assert_chi_square_fits(&s.counts, n, &bins, &what);
            // floor(L) = G or -1 - G with equal probability: mean -1/2,
            // E[X^2] = E[G^2] + E[G] + 1/2.
            let m = q / (1.0 - q);
            let var_g = q / ((1.0 - q) * (1.0 - q));
            let var = var_g + m * m + m + 0.5 - 0.25;
            assert_mean(&s, n, -0.5, var, &what);
            // P(floor(L) >= m) = P(L >= m) for integer m.
            let b = scale.as_f64();
            for m in [-3i64, 0, 1, 5] {
                let want = if m >= 0 {
                    0.5 * (-(m as f64) / b).exp()
                } else {
                    1.0 - 0.5 * ((m as f64) / b).exp()
                };
                let hits: u64 = s.counts.range(m..).map(|(_, c)| *c).sum();
                assert_wilson(hits, n, want, &format!("{what}: P(X >= {m})"));
            }
        }
    }

    /// The goodness-of-fit test has power: samples at scale 10/3 are rejected
    /// against the pmf for scale 3, and discrete Laplace samples are rejected
    /// against the floor-Laplace pmf.
    #[test]
    fn chi_square_rejects_wrong_distribution() {
        let n = DRAWS;
        let scale = ExactScale::new(10, 3).expect("valid");
        let s = draw(n, 500, |r| sample_discrete_laplace(r, scale));
        let q3 = (-1.0f64 / 3.0).exp();
        let bins = build_bins(n, &|k| dlap_pmf(q3, k), &|k| dlap_upper(q3, k), &|k| {
            dlap_lower(q3, k)
        });
        let (stat, df) = chi_square(&s.counts, n, &bins);
        assert!(stat > chi_square_critical_1e6(df), "stat {stat} df {df}");
        let q = q_of(scale);
        let bins = build_bins(n, &|k| floor_pmf(q, k), &|k| floor_upper(q, k), &|k| {
            floor_lower(q, k)
        });
        let (stat, df) = chi_square(&s.counts, n, &bins);
        assert!(stat > chi_square_critical_1e6(df), "stat {stat} df {df}");
    }

    #[test]
    fn chi_square_critical_values() {
        // Exact 1 - 1e-6 quantiles: df 1 → 23.93, df 10 → 46.86,
        // df 30 → 82.04. Wilson–Hilferty lies slightly above them.
        for (df, exact) in [(1usize, 23.928), (10, 46.863), (30, 82.044)] {
            let c = chi_square_critical_1e6(df);
            assert!(c >= exact && c < exact * 1.2, "df {df}: {c} vs {exact}");
        }
    }

    #[test]
    fn samplers_handle_extreme_scales() {
        let mut rng = TestRng::seed_from_u64(6);
        let tiny = ExactScale::new(1, u64::MAX).expect("valid");
        let huge = ExactScale::new(u64::MAX, 1).expect("valid");
        for _ in 0..200 {
            assert_eq!(sample_discrete_laplace(&mut rng, tiny), 0);
            assert_eq!(sample_geometric(&mut rng, tiny), 0);
            let f = sample_floor_laplace(&mut rng, tiny);
            assert!(f == 0 || f == -1);
            // Must not panic or overflow.
            let _ = sample_discrete_laplace(&mut rng, huge);
            let _ = sample_floor_laplace(&mut rng, huge);
        }
        let s = ExactScale::from_sensitivity_epsilon(1, 0.3).expect("valid");
        let v: i64 = (0..1000)
            .map(|_| sample_discrete_laplace(&mut rng, s).abs())
            .sum();
        // Mean |X| ≈ 2q/(1-q^2) ≈ 3.3 for scale 10/3.
        assert!(v > 2000 && v < 5000, "{v}");
    }

    #[test]
    fn seeded_draws_are_reproducible() {
        let scale = ExactScale::new(10, 3).expect("valid");
        let a: Vec<i64> = {
            let mut r = TestRng::seed_from_u64(9);
            (0..100)
                .map(|_| sample_discrete_laplace(&mut r, scale))
                .collect()
        };
        let b: Vec<i64> = {
            let mut r = TestRng::seed_from_u64(9);
            (0..100)
                .map(|_| sample_discrete_laplace(&mut r, scale))
                .collect()
        };
        assert_eq!(a, b);
    }

    #[test]
    fn error_display_names_parameter() {
        let e = NoiseError::invalid("epsilon", "must be > 0, got -1");
        assert_eq!(
            e.to_string(),
            "invalid parameter epsilon: must be > 0, got -1"
        );
        let _: &dyn std::error::Error = &e;
    }
}
