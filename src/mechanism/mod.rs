//! Privacy mechanisms: the cryptographically secure RNG, exact integer noise
//! samplers and the exponential mechanism.

pub mod exponential;
pub mod noise;
pub mod rng;
