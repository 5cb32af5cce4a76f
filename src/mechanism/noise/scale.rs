//! Exact rational noise scales.

use super::NoiseError;

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
    #[cfg(test)]
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
        let g = num_integer::gcd(u128::from(num), u128::from(den));
        // g divides both, so the quotients fit u64.
        Ok(ExactScale {
            num: (u128::from(num) / g) as u64,
            den: (u128::from(den) / g) as u64,
        })
    }

    /// The whole-number scale `n` (at least 1: `0` is taken as 1).
    pub fn whole(n: u64) -> Self {
        ExactScale {
            num: n.max(1),
            den: 1,
        }
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
        let eps_fixed = epsilon_grid_numerator(epsilon)?;
        let num = u128::from(sensitivity) << EPSILON_GRID_BITS;
        let den = u128::from(eps_fixed);
        let g = num_integer::gcd(num, den);
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

/// `floor(epsilon · 2^30)`: `epsilon` rounded **down** to a multiple of `2^-30`
/// ([`EPSILON_GRID_BITS`]), as the numerator over `2^30`. Every exact mechanism of this
/// crate runs at this rounded budget, which is never larger than the requested one. An
/// `epsilon` so large that `epsilon · 2^30` exceeds `u64::MAX` is capped there (rounding
/// further down).
///
/// # Errors
///
/// [`NoiseError::InvalidParameter`] named `epsilon` if `epsilon` is NaN, infinite,
/// `<= 0` or below `2^-30`.
pub fn epsilon_grid_numerator(epsilon: f64) -> Result<u64, NoiseError> {
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
    Ok(scaled as u64)
}
