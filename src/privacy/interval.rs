//! Closed intervals of `f64` with outward rounding, for privacy parameters that must be
//! bounded reliably (SafePub's β, k and δ).
//!
//! Every operation returns an interval that contains the exact real result of the same
//! operation applied to any points of its operands:
//!
//! * `+ − × ÷` are correctly rounded in IEEE 754 (round to nearest), so the exact result
//!   lies within one unit in the last place of the computed endpoint; each endpoint is
//!   then moved one ulp outward (`next_down` / `next_up`).
//! * `exp` and `ln` come from the platform's math library, whose results are within one
//!   ulp on every mainstream implementation (glibc, musl, the BSDs, macOS, MSVC) but are
//!   not required to be by any standard; endpoints are moved [`LIBM_ULPS`] ulps outward,
//!   which covers an error of up to four ulps.
//!
//! Comparisons are left to the caller, who compares endpoints in the conservative
//! direction (e.g. "δ is at most the requested value" means `hi <= requested`).

/// How many ulps `exp` and `ln` results are widened by.
pub const LIBM_ULPS: u32 = 4;

/// A closed interval `[lo, hi]` of real numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    lo: f64,
    hi: f64,
}

fn down(x: f64, ulps: u32) -> f64 {
    (0..ulps).fold(x, |v, _| v.next_down())
}

fn up(x: f64, ulps: u32) -> f64 {
    (0..ulps).fold(x, |v, _| v.next_up())
}

impl Interval {
    /// The exact value `x` (a degenerate interval).
    pub fn point(x: f64) -> Self {
        Self { lo: x, hi: x }
    }

    /// The interval `[lo, hi]` as given (the caller guarantees `lo <= hi`).
    pub fn new(lo: f64, hi: f64) -> Self {
        Self { lo, hi }
    }

    /// An integer, exactly (integers up to 2^53 are doubles).
    pub fn int(n: u64) -> Self {
        Self::point(n as f64)
    }

    /// Lower endpoint.
    pub fn lo(self) -> f64 {
        self.lo
    }

    /// Upper endpoint.
    pub fn hi(self) -> f64 {
        self.hi
    }

    /// Whether both endpoints are finite numbers.
    pub fn is_finite(self) -> bool {
        self.lo.is_finite() && self.hi.is_finite()
    }

    #[cfg(test)]
    /// Whether `x` lies in the interval.
    pub fn contains(self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }

    /// `[lo, hi]` from round-to-nearest endpoints, moved `ulps` outward.
    fn outward(lo: f64, hi: f64, ulps: u32) -> Self {
        Self {
            lo: down(lo, ulps),
            hi: up(hi, ulps),
        }
    }

    /// Interval quotient; `None` when the divisor contains zero.
    pub fn checked_div(self, other: Self) -> Option<Self> {
        if other.lo <= 0.0 && other.hi >= 0.0 {
            return None;
        }
        let quotients = [
            self.lo / other.lo,
            self.lo / other.hi,
            self.hi / other.lo,
            self.hi / other.hi,
        ];
        let lo = quotients.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = quotients.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Self::outward(lo, hi, 1))
    }

    /// `e^x` (monotone increasing).
    pub fn exp(self) -> Self {
        let lo = down(self.lo.exp(), LIBM_ULPS).max(0.0);
        Self {
            lo,
            hi: up(self.hi.exp(), LIBM_ULPS),
        }
    }

    /// Natural logarithm (monotone increasing); `None` unless the interval is positive.
    pub fn ln(self) -> Option<Self> {
        if self.lo <= 0.0 || self.lo.is_nan() {
            return None;
        }
        Some(Self::outward(self.lo.ln(), self.hi.ln(), LIBM_ULPS))
    }

    /// The interval `[0, hi]` containing every value of this interval and zero's side of it
    /// (for adding a non-negative remainder known only by an upper bound).
    pub fn zero_to_hi(self) -> Self {
        Self {
            lo: 0.0,
            hi: self.hi,
        }
    }
}

impl std::ops::Add for Interval {
    type Output = Self;

    /// Interval sum.
    fn add(self, other: Self) -> Self {
        Self::outward(self.lo + other.lo, self.hi + other.hi, 1)
    }
}

impl std::ops::Sub for Interval {
    type Output = Self;

    /// Interval difference.
    fn sub(self, other: Self) -> Self {
        Self::outward(self.lo - other.hi, self.hi - other.lo, 1)
    }
}

impl std::ops::Mul for Interval {
    type Output = Self;

    /// Interval product.
    fn mul(self, other: Self) -> Self {
        let products = [
            self.lo * other.lo,
            self.lo * other.hi,
            self.hi * other.lo,
            self.hi * other.hi,
        ];
        let lo = products.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = products.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Self::outward(lo, hi, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encloses_exact_results() {
        // 0.1 + 0.2 is not representable: the enclosure contains the exact sum of the two
        // doubles, which lies strictly between the rounded result's neighbours.
        let s = Interval::point(0.1) + Interval::point(0.2);
        assert!(s.lo() < 0.30000000000000004 && s.hi() > 0.30000000000000004);
        assert!(s.hi() - s.lo() <= 4.0 * f64::EPSILON);
        // 1/3 encloses the true third: lo < 1/3 < hi with a width of two ulps.
        let third = Interval::int(1).checked_div(Interval::int(3)).unwrap();
        assert!(third.lo() < 1.0 / 3.0 && 1.0 / 3.0 < third.hi());
        assert_eq!(third.lo().next_up().next_up(), third.hi());
        // Products of mixed signs.
        let p = Interval::new(-2.0, 3.0) * Interval::new(-5.0, 1.0);
        assert!(p.contains(-15.0) && p.contains(10.0) && !p.contains(10.1));
        assert!(Interval::int(1)
            .checked_div(Interval::new(-1.0, 1.0))
            .is_none());
    }

    #[test]
    fn transcendental_enclosures_contain_known_constants() {
        // e = 2.718281828459045235360287..., ln 2 = 0.693147180559945309417232...
        let e = Interval::int(1).exp();
        assert!(e.contains(std::f64::consts::E));
        assert!(e.hi() - e.lo() < 1e-14);
        let ln2 = Interval::int(2).ln().unwrap();
        assert!(ln2.contains(std::f64::consts::LN_2));
        assert!(ln2.hi() - ln2.lo() < 1e-15);
        assert!(Interval::new(0.0, 1.0).ln().is_none());
        // exp never yields a negative lower bound.
        assert_eq!(Interval::point(-1000.0).exp().lo(), 0.0);
    }
}
