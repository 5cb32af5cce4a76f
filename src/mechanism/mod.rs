//! Privacy mechanisms: the cryptographically secure RNG, exact integer noise
//! samplers and the exponential mechanism.

#[cfg(test)]
pub(crate) mod audit;
pub mod exponential;
pub mod noise;
pub mod rng;
