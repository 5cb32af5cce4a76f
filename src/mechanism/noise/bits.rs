//! The bit reservoir behind every sampler, and the exact uniform and Bernoulli samplers.

use rand::RngCore;

/// A reservoir of uniform random bits, refilled 64 bits at a time from an RNG.
///
/// The samplers consume only as many bits as each step needs (a Bernoulli
/// trial with denominator 3 uses 2 bits per attempt, not a 64-bit word), which
/// makes them several times cheaper in RNG output. Every bit is an
/// independent uniform bit of the underlying generator, so exactness is
/// unaffected. Unused bits are discarded when the reservoir is dropped at the
/// end of each public call.
pub(crate) struct BitSource<'a, R: RngCore + ?Sized> {
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
    pub(crate) fn new(rng: &'a mut R) -> Self {
        BitSource {
            rng,
            buf: 0,
            avail: 0,
        }
    }

    /// Returns `n` uniform bits (`0 <= n <= 64`) as the low bits of a `u64`.
    pub(crate) fn bits(&mut self, n: u32) -> u64 {
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
    pub(crate) fn bit(&mut self) -> bool {
        self.bits(1) == 1
    }

    /// Exact uniform integer in `[0, n)` for `n >= 1` (returns 0 for `n <= 1`).
    ///
    /// Rejection sampling: draw as many bits as `n - 1` needs and retry when
    /// the value is `>= n`. Each attempt succeeds with probability above 1/2.
    pub(crate) fn uniform_below(&mut self, n: u128) -> u128 {
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
    pub(crate) fn bernoulli_rational(&mut self, num: u128, den: u128) -> bool {
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
    pub(crate) fn bernoulli_exp_unit(&mut self, num: u64, den: u64) -> bool {
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
    pub(crate) fn bernoulli_exp(&mut self, num: u64, den: u64) -> bool {
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

#[cfg(test)]
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
