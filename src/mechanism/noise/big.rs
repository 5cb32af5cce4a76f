//! Exact uniform and Bernoulli samplers over big integers: `Bernoulli(num/den)` and
//! `Bernoulli(exp(−num/den))` for arbitrary non-negative rationals, as the exponential
//! mechanism needs them (its exponents are exact dyadic rationals of any size).

use num_bigint::BigUint;
use num_traits::{ToPrimitive, Zero};
use rand::RngCore;

use super::bits::BitSource;

impl<R: RngCore + ?Sized> BitSource<'_, R> {
    /// Exact uniform integer in `[0, n)` for `n >= 1` (returns 0 for `n <= 1`).
    ///
    /// Rejection sampling on the bit length of `n − 1`, as
    /// [`BitSource::uniform_below`]; each attempt succeeds with probability above 1/2.
    pub(crate) fn uniform_below_big(&mut self, n: &BigUint) -> BigUint {
        if let Some(small) = n.to_u128() {
            return BigUint::from(self.uniform_below(small));
        }
        let max = n - 1u32;
        let width = max.bits();
        let words = width.div_ceil(64);
        let top = (width - (words - 1) * 64) as u32;
        let mut digits: Vec<u64> = vec![0; words as usize];
        loop {
            for (w, digit) in digits.iter_mut().enumerate() {
                let bits = if w as u64 == words - 1 { top } else { 64 };
                *digit = self.bits(bits);
            }
            let x = big_from_u64_digits(&digits);
            if x <= max {
                return x;
            }
        }
    }

    /// `true` with probability exactly `num / den`; `num >= den` is `true`, `den == 0`
    /// is `false`.
    pub(crate) fn bernoulli_big(&mut self, num: &BigUint, den: &BigUint) -> bool {
        if den.is_zero() {
            return false;
        }
        if num >= den {
            return true;
        }
        if num.is_zero() {
            return false;
        }
        if let (Some(n), Some(d)) = (num.to_u128(), den.to_u128()) {
            return self.bernoulli_rational(n, d);
        }
        self.uniform_below_big(den) < *num
    }

    /// `true` with probability exactly `exp(−num/den)` for `0 <= num <= den`, `den > 0`
    /// (Canonne–Kamath–Steinke 2020, Algorithm 1, case `γ ∈ [0, 1]`): draw
    /// `A_k ~ Bernoulli(γ/k)` for `k = 1, 2, …` until the first failure at index `K`;
    /// `P(K > k) = γ^k / k!`, so `P(K odd) = Σ_j (−γ)^j / j! = e^{−γ}`.
    fn bernoulli_exp_unit_big(&mut self, num: &BigUint, den: &BigUint) -> bool {
        if num.is_zero() {
            return true;
        }
        let mut k: u64 = 1;
        let mut dk = den.clone();
        loop {
            if !self.bernoulli_big(num, &dk) {
                break;
            }
            k += 1;
            dk += den;
        }
        k % 2 == 1
    }

    /// `true` with probability exactly `exp(−num/den)` for any rational `num/den >= 0`;
    /// `den == 0` is treated as `γ = +∞` (returns `false`).
    ///
    /// `e^{−γ} = (e^{−1})^{⌊γ⌋} · e^{−(γ − ⌊γ⌋)}`: `⌊γ⌋` independent `Bernoulli(e^{−1})`
    /// trials, stopping at the first failure, then one `Bernoulli(e^{−(γ − ⌊γ⌋)})`. The
    /// expected number of trials is below `1/(1 − e^{−1}) + 1 ≈ 2.6` whatever `γ`; the
    /// integer part is counted down exactly (by subtracting `den`), however large it is.
    pub(crate) fn bernoulli_exp_big(&mut self, mut num: BigUint, den: &BigUint) -> bool {
        if den.is_zero() {
            return false;
        }
        if num.is_zero() {
            return true;
        }
        if let (Some(n), Some(d)) = (num.to_u64(), den.to_u64()) {
            return self.bernoulli_exp(n, d);
        }
        // Subtract 1 from γ per Bernoulli(e^-1) success instead of dividing: the loop
        // ends at the first failure (after about 1.6 trials on average) or when
        // `rest < den`, and costs no big division whatever γ is.
        while num >= *den {
            if !self.bernoulli_exp_unit(1, 1) {
                return false;
            }
            num -= den;
        }
        self.bernoulli_exp_unit_big(&num, den)
    }
}

/// The integer whose base-2^64 digits, least significant first, are `digits`.
pub(crate) fn big_from_u64_digits(digits: &[u64]) -> BigUint {
    let mut halves = Vec::with_capacity(2 * digits.len());
    for &d in digits {
        halves.push(d as u32);
        halves.push((d >> 32) as u32);
    }
    BigUint::new(halves)
}

#[cfg(test)]
/// Returns `true` with probability exactly `exp(−num/den)` for big non-negative integers
/// (`den == 0` is `γ = +∞` and returns `false`). See [`super::bernoulli_exp`] for the
/// construction; this variant accepts exponents of any size and precision.
pub fn bernoulli_exp_big<R: RngCore + ?Sized>(rng: &mut R, num: &BigUint, den: &BigUint) -> bool {
    BitSource::new(rng).bernoulli_exp_big(num.clone(), den)
}

#[cfg(test)]
/// Returns an exactly uniform big integer in `[0, n)` (`n == 0` is treated as `n == 1`).
pub fn sample_uniform_below_big<R: RngCore + ?Sized>(rng: &mut R, n: &BigUint) -> BigUint {
    BitSource::new(rng).uniform_below_big(n)
}
