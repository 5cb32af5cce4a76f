//! Exact integer noise samplers.
//!
//! Textbook Laplace noise computed as `x + b·ln(U)` on `f64` does not sample the
//! Laplace distribution: the set of reachable doubles has gaps that depend on
//! `x`, which lets an observer rule out or single out the true value
//! (Mironov's floating-point attack). The noisy quantities released by this
//! crate are integer counts, so the samplers here work on integers only:
//! uniform integers by rejection sampling, Bernoulli trials with rational
//! probabilities, and Bernoulli trials with probability `exp(-γ)` for rational
//! `γ` (with `u64` or, for the exponential mechanism, big-integer numerator and
//! denominator). No floating-point value is computed anywhere on a sampling path, so the
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

mod big;
mod bits;
mod gaussian;
mod geometric;
mod interval;
mod laplace;
mod scale;
mod tail;
#[cfg(test)]
mod tests;

use std::fmt;

use datafusion::error::DataFusionError;

#[cfg(test)]
use big::{bernoulli_exp_big, sample_uniform_below_big};
#[cfg(test)]
use bits::bernoulli_exp;
pub(crate) use bits::BitSource;
pub use bits::{bernoulli_rational, sample_uniform_below};
pub use gaussian::{sample_discrete_gaussian, ExactVariance};
#[cfg(test)]
use geometric::sample_geometric;
pub use interval::{one_cell_half_width, sum_noise};
pub use laplace::{sample_discrete_laplace, sample_floor_laplace};
pub use scale::{epsilon_grid_numerator, ExactScale, EPSILON_GRID_BITS};
pub use tail::PositiveNoise;

/// Error returned when an argument of a mechanism is outside its domain.
///
/// Both kinds display as `invalid parameter {name}: {reason}`; the kind decides only
/// which [`DataFusionError`] the error becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoiseError {
    /// A privacy parameter (ε, a sensitivity, a noise scale) is outside the domain the
    /// mechanism accepts: the query is wrong, so it converts to a planning error.
    InvalidParameter {
        /// Name of the offending parameter, for example `epsilon`.
        name: String,
        /// Why it was rejected, including the offending value.
        reason: String,
    },
    /// Data computed while executing (the scores or weights of the exponential
    /// mechanism) is outside the domain the mechanism accepts: it converts to an
    /// execution error.
    InvalidData {
        /// Name of the offending argument, for example `scores`.
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

    /// Builds a [`NoiseError::InvalidData`].
    pub(crate) fn invalid_data(name: impl Into<String>, reason: impl Into<String>) -> Self {
        NoiseError::InvalidData {
            name: name.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for NoiseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoiseError::InvalidParameter { name, reason }
            | NoiseError::InvalidData { name, reason } => {
                write!(f, "invalid parameter {name}: {reason}")
            }
        }
    }
}

impl std::error::Error for NoiseError {}

impl From<NoiseError> for DataFusionError {
    /// A bad privacy parameter is a planning error, bad data found while executing an
    /// execution error; the message is the error's [`Display`](fmt::Display).
    fn from(e: NoiseError) -> Self {
        match e {
            NoiseError::InvalidParameter { .. } => DataFusionError::Plan(e.to_string()),
            NoiseError::InvalidData { .. } => DataFusionError::Execution(e.to_string()),
        }
    }
}
