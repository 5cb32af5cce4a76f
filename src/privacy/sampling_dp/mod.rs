//! SafePub's privacy parameters, computed reliably: the sampling probability β, the
//! suppression threshold k and the δ they deliver (Bild, Kuhn & Prasser, SafePub,
//! Theorems 3–5 and 11; reliable computation as in "Better Safe Than Sorry", 2020).
//!
//! Random sampling with probability β followed by generalization and the suppression of
//! every record whose generalized tuple occurs fewer than k times is (ε, δ)-differentially
//! private for every `ε >= −ln(1 − β)` with
//!
//! ```text
//! δ = d(k, β, ε) = max_{n >= n_m} a_n,   a_n = Σ_{j > γn}^{n} C(n, j) β^j (1 − β)^{n − j},
//! γ = (e^ε − 1 + β) / e^ε,   n_m = ⌈k/γ − 1⌉,
//! ```
//!
//! and by Theorem 4 the maximum is attained before the first `N >= n_m` at which the
//! Chernoff bound `c_N = exp(−N (γ ln(γ/β) − (γ − β)))` drops to the running maximum.
//! `k = d'(δ) = min{k : d(k, β, ε) <= δ}`.
//!
//! # Reliability
//!
//! Floating-point evaluations of `d` under-estimate δ by up to 28% (for ε = ln 2 or ln 3 the
//! boundary term `j = γn` decides the result and rounding drops it). Here every quantity is
//! an [`Interval`] that contains the exact value, and every discrete decision errs on the
//! safe side:
//!
//! * β is the lower end of `1 − e^{−ε}`, rounded down to a multiple of 2^-64, and is the
//!   exact value the sampler uses (a smaller β only strengthens the guarantee);
//! * the summation starts at `⌊γ_lo · n⌋ + 1` (computed exactly), which includes the
//!   boundary term whenever `γn` might be an integer;
//! * `n_m` is computed from the upper end of γ, which can only start the maximum earlier;
//! * the loop stops only when the upper bound of `c_N` is at most the lower bound of the
//!   running maximum;
//! * `k` is accepted only when the upper bound of `d(k)` is at most the requested δ.
//!
//! The tail sums are evaluated term by term from the ratio of consecutive binomial terms
//! (no subtraction, so no cancellation); the terms decrease geometrically and the
//! summation stops with a rigorous bound on the remainder once it is below 2^-60 of the
//! sum. The computed δ is therefore an upper bound on the true one, and `k` is never
//! smaller than the exact `d'(δ)` (in practice equal).

use datafusion::common::{plan_err, Result};

use std::ops::{Add, Mul, Sub};

use super::interval::Interval;

/// Largest `n` the calculation may visit before giving up.
pub const MAX_N: u64 = 2_000_000;

/// Largest `k` the search may try before giving up.
pub const MAX_K: u64 = 1_000_000;

/// Smallest δ accepted. Smaller values need a k whose calculation can run for hours
/// (and no data set is large enough for a δ this small to matter: δ is compared with 1/n).
pub const MIN_DELTA: f64 = 1e-20;

/// Largest number of binomial terms one calculation may sum before giving up; it bounds
/// the time of the k search (a few seconds) for any parameters.
pub const MAX_TERMS: u64 = 200_000_000;

/// Relative size below which the remainder of a tail sum is bounded instead of summed.
const TAIL_CUTOFF: f64 = 1.0 / (1u64 << 60) as f64;

/// `f64` as `mantissa · 2^exponent` (positive finite input).
fn decompose(x: f64) -> (u64, i32) {
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1u64 << 52) - 1);
    if exponent == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1u64 << 52), exponent - 1075)
    }
}

/// `⌊x · n⌋` computed exactly, for `0 < x < 1`.
fn floor_mul(x: f64, n: u64) -> u64 {
    let (mantissa, exponent) = decompose(x);
    let product = u128::from(mantissa) * u128::from(n);
    // x < 1 so exponent < 0.
    let shift = exponent.unsigned_abs();
    if shift >= 128 {
        0
    } else {
        (product >> shift) as u64
    }
}

/// `⌈k / x⌉ − 1` computed exactly, for `0 < x < 1`; `None` if it does not fit.
fn ceil_div_minus_one(k: u64, x: f64) -> Option<u64> {
    let (mantissa, exponent) = decompose(x);
    let shift = exponent.unsigned_abs();
    let numerator = u128::from(k).checked_mul(1u128.checked_shl(shift)?)?;
    if numerator >> shift != u128::from(k) {
        return None;
    }
    let m = u128::from(mantissa);
    let ceil = numerator.div_ceil(m);
    u64::try_from(ceil.saturating_sub(1)).ok()
}

/// The largest sampling probability Theorem 3 allows for `epsilon_anon`, rounded down:
/// the lower end of an enclosure of `1 − e^{−ε}`, then down to a multiple of 2^-64 so
/// that Bernoulli trials with it are exact (`num / 2^64`).
pub fn beta_for(epsilon_anon: f64) -> Result<f64> {
    if !(epsilon_anon.is_finite() && epsilon_anon > 0.0) {
        return plan_err!("epsilon_anon must be a positive finite number, got {epsilon_anon}");
    }
    let one = Interval::int(1);
    let beta = one.sub(Interval::point(-epsilon_anon).exp());
    let scale = 2f64.powi(64);
    // Multiplying and dividing by a power of two is exact, so this is floor(β_lo · 2^64) / 2^64.
    let grid = (beta.lo() * scale).floor() / scale;
    if grid <= 0.0 {
        return plan_err!(
            "epsilon_anon = {epsilon_anon} is too small: the sampling probability 1 - e^(-epsilon_anon) rounds to 0"
        );
    }
    if grid >= 1.0 {
        return plan_err!(
            "epsilon_anon = {epsilon_anon} is too large: the sampling probability 1 - e^(-epsilon_anon) rounds to 1"
        );
    }
    Ok(grid)
}

/// `β` as the exact fraction `num / 2^64` (for Bernoulli trials).
pub fn beta_numerator(beta: f64) -> u128 {
    // beta is a multiple of 2^-64 in (0, 1), so this product is an exact integer < 2^64.
    (beta * 2f64.powi(64)) as u128
}

/// An enclosure of `d(k, β, ε)` and the indices that bound its maximum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeltaBound {
    /// Lower and upper bound of the computed maximum (the upper bound is the δ delivered).
    pub delta: Interval,
    /// First index of the maximum (`n_m`, possibly smaller than the exact one).
    pub n_m: u64,
    /// Index at which the Chernoff bound closed the search.
    pub n_stop: u64,
}

/// Evaluates `d(k, β, ε)` for one `(β, ε)` and many `k`, caching the tail sums `a_n`.
#[derive(Debug, Clone)]
pub struct DeltaCalculator {
    one_minus_beta: Interval,
    /// `β / (1 − β)`, the ratio of consecutive binomial terms without the `(n−j)/(j+1)`.
    rho: Interval,
    gamma: Interval,
    /// Lower bound of the Chernoff exponent `γ ln(γ/β) − (γ − β)`.
    chernoff_rate: f64,
    /// `tails[n - 1]` encloses `a_n` (with the conservative boundary).
    tails: Vec<Interval>,
    /// Binomial term `P(X_n = J_n)` for the last `n` in `tails`, and `J_n`.
    boundary_term: Interval,
    boundary: u64,
    /// Binomial terms summed so far (bounded by [`MAX_TERMS`]).
    terms: u64,
}

impl DeltaCalculator {
    /// A calculator for sampling probability `beta` (exact, `0 < β < 1`) and `epsilon`.
    pub fn new(beta: f64, epsilon: f64) -> Result<Self> {
        if !(beta > 0.0 && beta < 1.0) {
            return plan_err!("the sampling probability must lie in (0, 1), got {beta}");
        }
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return plan_err!("epsilon must be a positive finite number, got {epsilon}");
        }
        let one = Interval::int(1);
        let one_minus_beta = one.sub(Interval::point(beta));
        let e_minus = Interval::point(-epsilon).exp();
        // Theorem 3 needs ε >= −ln(1 − β), i.e. β <= 1 − e^{−ε}, decided conservatively.
        let bound = one.sub(e_minus).lo();
        if bound.is_nan() || beta > bound {
            return plan_err!(
                "sampling probability {beta} is too large for epsilon = {epsilon} (Theorem 3 needs beta <= 1 - e^(-epsilon))"
            );
        }
        // γ = 1 − (1 − β) e^{−ε}.
        let gamma = one.sub(one_minus_beta.mul(e_minus));
        if !gamma.is_finite() || gamma.hi() >= 1.0 {
            return plan_err!(
                "epsilon = {epsilon} is too large for the parameter calculation (gamma = (e^epsilon - 1 + beta) / e^epsilon rounds to 1)"
            );
        }
        if gamma.lo() <= beta {
            return plan_err!(
                "epsilon = {epsilon} is too small for sampling probability {beta} (Theorem 3 needs epsilon >= -ln(1 - beta))"
            );
        }
        Self::from_gamma(beta, gamma)
    }

    /// A calculator for `beta` and an enclosure `gamma` of γ (`β < γ_lo`, `γ_hi < 1`).
    fn from_gamma(beta: f64, gamma: Interval) -> Result<Self> {
        let one = Interval::int(1);
        let b = Interval::point(beta);
        let one_minus_beta = one.sub(b);
        let Some(rho) = b.checked_div(one_minus_beta) else {
            return plan_err!("the sampling probability must lie in (0, 1), got {beta}");
        };
        // The rate is increasing in γ on (β, 1): its value at γ_lo bounds it from below.
        let g = Interval::point(gamma.lo());
        let rate = g
            .checked_div(b)
            .and_then(Interval::ln)
            .map(|l| g.mul(l).sub(g.sub(b)));
        let chernoff_rate = match rate {
            Some(r) if r.lo() > 0.0 && r.is_finite() => r.lo(),
            _ => {
                return plan_err!(
                    "epsilon is too small for a reliable parameter calculation with sampling probability {beta}"
                )
            }
        };
        // n = 1: J_1 = ⌊γ_lo⌋ + 1 = 1 and a_1 = P(X_1 = 1) = β.
        Ok(Self {
            one_minus_beta,
            rho,
            gamma,
            chernoff_rate,
            tails: vec![b],
            boundary_term: b,
            boundary: 1,
            terms: 0,
        })
    }

    /// Upper bound of the Chernoff bound `c_n` of Li et al.
    pub fn chernoff_upper(&self, n: u64) -> f64 {
        Interval::int(n)
            .mul(Interval::point(-self.chernoff_rate))
            .exp()
            .hi()
    }

    /// `n_m = ⌈k/γ − 1⌉` from the upper end of γ (never above the exact value), at least 1.
    pub fn n_min(&self, k: u64) -> Result<u64> {
        match ceil_div_minus_one(k, self.gamma.hi()) {
            Some(n) => Ok(n.max(1)),
            None => plan_err!("k = {k} is too large for the parameter calculation"),
        }
    }

    /// Encloses `a_n` (with the conservative summation start `⌊γ_lo·n⌋ + 1`).
    pub fn tail(&mut self, n: u64) -> Result<Interval> {
        if n == 0 {
            return Ok(Interval::point(0.0));
        }
        if n > MAX_N {
            return plan_err!(
                "the SafePub parameter calculation needs n > {MAX_N} (its Chernoff bound decays too slowly); use a larger delta, or an epsilon_anon between 0.01 and 3"
            );
        }
        while (self.tails.len() as u64) < n {
            self.extend();
            if self.terms > MAX_TERMS {
                return plan_err!(
                    "the SafePub parameter calculation did not finish within {MAX_TERMS} terms (at n = {}); use a larger delta, or an epsilon_anon between 0.01 and 3",
                    self.tails.len()
                );
            }
        }
        Ok(self.tails[n as usize - 1])
    }

    /// Appends `a_{n+1}` to the cache.
    fn extend(&mut self) {
        let n = self.tails.len() as u64;
        let j = self.boundary;
        // P(X_{n+1} = j) = P(X_n = j) · (n+1)/(n+1−j) · (1 − β).
        let factor = Interval::int(n + 1)
            .checked_div(Interval::int(n + 1 - j))
            .unwrap_or(Interval::point(f64::INFINITY));
        let mut term = self.boundary_term.mul(factor).mul(self.one_minus_beta);
        let next_boundary = floor_mul(self.gamma.lo(), n + 1) + 1;
        if next_boundary == j + 1 {
            // P(X_{n+1} = j+1) = P(X_{n+1} = j) · (n+1−j)/(j+1) · β/(1−β).
            term = term.mul(self.ratio(n + 1, j));
        }
        self.boundary = next_boundary;
        self.boundary_term = term;
        let tail = self.tail_from(n + 1, next_boundary, term);
        self.tails.push(tail);
    }

    /// `P(X_n = j+1) / P(X_n = j) = (n − j)/(j + 1) · β/(1 − β)`.
    fn ratio(&self, n: u64, j: u64) -> Interval {
        Interval::int(n - j)
            .checked_div(Interval::int(j + 1))
            .unwrap_or(Interval::point(f64::INFINITY))
            .mul(self.rho)
    }

    /// `Σ_{i=j}^{n} P(X_n = i)` from `first = P(X_n = j)`.
    fn tail_from(&mut self, n: u64, j: u64, first: Interval) -> Interval {
        let mut sum = first;
        let mut term = first;
        let mut i = j;
        while i < n {
            self.terms += 1;
            let r = self.ratio(n, i);
            if r.hi() < 1.0 {
                // Later ratios are smaller, so Σ_{l > i} P(X_n = l) <= term · r / (1 − r).
                let remainder = term.mul(r).checked_div(Interval::int(1).sub(r));
                if let Some(rem) = remainder {
                    if rem.hi() <= sum.lo() * TAIL_CUTOFF {
                        return sum.add(rem.zero_to_hi());
                    }
                }
            }
            term = term.mul(r);
            sum = sum.add(term);
            i += 1;
        }
        sum
    }

    /// The smallest `N >= n` with `c_N <= m` (by the upper bound of `c_N`); `None` when
    /// `m <= 0`, which no bound can reach.
    fn stop_index(&self, n: u64, m: f64) -> Option<u64> {
        if m.is_nan() || m <= 0.0 {
            return None;
        }
        if self.chernoff_upper(n) <= m {
            return Some(n);
        }
        // exp(−N·rate) <= m  ⇔  N >= −ln(m)/rate: start near there, then settle exactly.
        let estimate = (-m.ln() / self.chernoff_rate).ceil();
        let mut stop = if estimate.is_finite() && estimate < MAX_N as f64 {
            (estimate as u64).max(n + 1)
        } else {
            MAX_N + 1
        };
        while stop <= MAX_N && self.chernoff_upper(stop) > m {
            stop += 1;
        }
        while stop > n + 1 && self.chernoff_upper(stop - 1) <= m {
            stop -= 1;
        }
        Some(stop)
    }

    /// Encloses `d(k, β, ε)` (Theorem 4 with the earlier stop `c_N <= running max`): the
    /// maximum of `a_n` from `n_m` to the first `N` whose Chernoff bound is at most the
    /// running maximum (beyond it every `a_n <= c_n <= c_N`).
    pub fn delta(&mut self, k: u64) -> Result<DeltaBound> {
        let n_m = self.n_min(k)?;
        let first = self.tail(n_m)?;
        let (mut lo, mut hi) = (first.lo(), first.hi());
        let mut n = n_m;
        let mut stop = self.stop_index(n, lo);
        // The stop is recomputed when the maximum has grown by 1%: a stop computed for a
        // smaller maximum is later, which only scans a few more terms.
        let mut stop_for = lo;
        while stop.is_none_or(|s| n < s) {
            n += 1;
            let a = self.tail(n)?;
            hi = hi.max(a.hi());
            if a.lo() > lo {
                lo = a.lo();
                if stop.is_none() || lo > stop_for * 1.01 {
                    stop = self.stop_index(n, lo);
                    stop_for = lo;
                }
            }
        }
        let max = Interval::new(lo, hi);
        if !max.is_finite() {
            return plan_err!("the SafePub parameter calculation lost precision (k = {k})");
        }
        Ok(DeltaBound {
            delta: max,
            n_m,
            n_stop: n,
        })
    }

    /// `d'(δ) = min{k : d(k) <= δ}`, deciding with the upper bound of `d(k)`; `d` is
    /// non-increasing in k, so an exponential then a binary search finds it.
    pub fn minimal_k(&mut self, delta: f64) -> Result<(u64, DeltaBound)> {
        if !(delta > 0.0 && delta < 1.0) {
            return plan_err!("delta must lie in (0, 1), got {delta}");
        }
        if delta < MIN_DELTA {
            return plan_err!(
                "delta = {delta:e} is below the smallest supported delta, {MIN_DELTA:e}"
            );
        }
        let reaches = |calc: &mut Self, k: u64| -> Result<Option<DeltaBound>> {
            let bound = calc.delta(k)?;
            Ok((bound.delta.hi() <= delta).then_some(bound))
        };
        // Exponential search: `below` fails (or is 0), `above` reaches δ.
        let mut below = 0u64;
        let mut above = 1u64;
        let mut found = loop {
            if let Some(bound) = reaches(self, above)? {
                break bound;
            }
            below = above;
            above *= 2;
            if above > MAX_K {
                return plan_err!("no k up to {MAX_K} reaches delta = {delta}; use a larger delta");
            }
        };
        while above - below > 1 {
            let middle = below + (above - below) / 2;
            match reaches(self, middle)? {
                Some(bound) => {
                    above = middle;
                    found = bound;
                }
                None => below = middle,
            }
        }
        Ok((above, found))
    }
}

/// The parameters of one SafePub run.
#[derive(Debug, Clone, PartialEq)]
pub struct SafePubCalibration {
    /// ε of the sampling + k-suppression operator.
    pub epsilon_anon: f64,
    /// Sampling probability (exact, a multiple of 2^-64).
    pub beta: f64,
    /// `d'(δ)`, the smallest k whose δ is at most the requested one.
    pub k_minimal: u64,
    /// The k used (`k_minimal`, or `k_minimal + 1` for ARX compatibility).
    pub k: u64,
    /// δ requested.
    pub delta_requested: f64,
    /// Upper bound on `d(k, β, ε_anon)`: the δ delivered.
    pub delta_delivered: f64,
    /// `n_m` and the stopping index of the δ evaluation for the k used.
    pub n_m: u64,
    /// Index at which the Chernoff bound closed the evaluation.
    pub n_stop: u64,
}

/// β, k and δ for `epsilon_anon` and the requested `delta`. With `arx_compat`, k is one
/// more than the minimal value (what ARX computes); δ then only gets smaller.
pub fn calibrate(epsilon_anon: f64, delta: f64, arx_compat: bool) -> Result<SafePubCalibration> {
    let beta = beta_for(epsilon_anon)?;
    let mut calculator = DeltaCalculator::new(beta, epsilon_anon)?;
    let (k_minimal, bound) = calculator.minimal_k(delta)?;
    let (k, bound) = if arx_compat {
        (k_minimal + 1, calculator.delta(k_minimal + 1)?)
    } else {
        (k_minimal, bound)
    };
    Ok(SafePubCalibration {
        epsilon_anon,
        beta,
        k_minimal,
        k,
        delta_requested: delta,
        delta_delivered: bound.delta.hi(),
        n_m: bound.n_m,
        n_stop: bound.n_stop,
    })
}

/// Theorem 11 (smoothness): the same β and k also give `(ε', d(k, β, ε'))`-DP for every
/// `ε' >= ε_anon`. Returns an upper bound on `d(k, β, ε')`.
pub fn smoothness_delta(k: u64, beta: f64, epsilon_prime: f64) -> Result<f64> {
    Ok(DeltaCalculator::new(beta, epsilon_prime)?
        .delta(k)?
        .delta
        .hi())
}

#[cfg(test)]
mod tests;
