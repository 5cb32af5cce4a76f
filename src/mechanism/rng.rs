//! Random number generation for the privacy mechanisms.
//!
//! Every random decision taken by an anonymization run (noise on counts,
//! Bernoulli trials, exponential-mechanism selections) draws from an
//! [`AnonRng`], which is ChaCha20: a cryptographically secure pseudo-random
//! number generator (CSPRNG). In production it is seeded from operating-system
//! entropy with [`try_rng_from_os`]; [`rng_from_seed`] exists only so tests and
//! reproductions are deterministic.
//!
//! Seeding is injectable: code that needs randomness takes `&mut R` with
//! `R: rand::RngCore + ?Sized`, so a test can pass a seeded generator and
//! production code an OS-seeded one.

use rand::{RngCore, SeedableRng, TryRngCore};

/// The random number generator used by every mechanism of this crate.
///
/// ChaCha20 is a cryptographically secure pseudo-random number generator: its
/// output cannot be predicted or distinguished from uniform randomness without
/// the 256-bit seed. A generator seeded from the operating system
/// ([`try_rng_from_os`]) is suitable for releasing differentially private output.
pub type AnonRng = rand_chacha::ChaCha20Rng;

#[cfg(test)]
/// Creates a CSPRNG seeded with 256 bits of operating-system entropy.
///
/// This is the generator to use for any real release.
///
/// # Panics
///
/// Panics only if the operating system cannot provide entropy at all, in which
/// case no secure release is possible. Use [`try_rng_from_os`] to handle that
/// case as an error instead.
pub fn rng_from_os() -> AnonRng {
    AnonRng::from_os_rng()
}

/// Creates a CSPRNG seeded with 256 bits of operating-system entropy drawn
/// through [`rand::rngs::OsRng`].
///
/// # Errors
///
/// Returns the operating system's error when no entropy is available, where
/// [`rng_from_os`] would panic.
pub fn try_rng_from_os() -> Result<AnonRng, rand::rand_core::OsError> {
    Ok(AnonRng::from_seed(try_seed_from_os()?))
}

/// 256 bits of operating-system entropy: the seed of a generator that
/// [`try_rng_from_os`] makes, for a caller that keeps the seed to draw the
/// same stream again.
pub fn try_seed_from_os() -> Result<[u8; 32], rand::rand_core::OsError> {
    let mut seed = <AnonRng as SeedableRng>::Seed::default();
    rand::rngs::OsRng.try_fill_bytes(&mut seed)?;
    Ok(seed)
}

/// Creates a deterministic CSPRNG from a 64-bit seed.
///
/// For tests and for reproducing a run only: a 64-bit seed can be guessed, so
/// output produced from such a generator must never be released as private.
/// The 64-bit seed is expanded into a full 256-bit ChaCha20 key by
/// [`SeedableRng::seed_from_u64`], so equal seeds give equal streams on every
/// platform.
pub fn rng_from_seed(seed: u64) -> AnonRng {
    AnonRng::seed_from_u64(seed)
}

/// Derives an independent child CSPRNG from `parent`.
///
/// A fresh 256-bit seed is drawn from the parent's stream and used to key a new
/// ChaCha20 generator. This gives each unit of work (for example each node of a
/// generalization lattice) its own stream that is reproducible when the parent
/// is seeded deterministically, regardless of the order in which the children
/// are later consumed. The child is as unpredictable as the parent: its key is
/// 256 bits of CSPRNG output.
pub fn derive_child(parent: &mut AnonRng) -> AnonRng {
    let mut seed = <AnonRng as SeedableRng>::Seed::default();
    parent.fill_bytes(&mut seed);
    AnonRng::from_seed(seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_words(rng: &mut AnonRng, n: usize) -> Vec<u64> {
        (0..n).map(|_| rng.next_u64()).collect()
    }

    #[test]
    fn same_seed_gives_same_stream() {
        let a = first_words(&mut rng_from_seed(42), 8);
        let b = first_words(&mut rng_from_seed(42), 8);
        let c = first_words(&mut rng_from_seed(43), 8);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn derived_children_are_reproducible_and_distinct() {
        let mut p1 = rng_from_seed(7);
        let mut p2 = rng_from_seed(7);
        let mut c1a = derive_child(&mut p1);
        let mut c1b = derive_child(&mut p1);
        let mut c2a = derive_child(&mut p2);
        let a = first_words(&mut c1a, 8);
        let b = first_words(&mut c1b, 8);
        assert_eq!(a, first_words(&mut c2a, 8));
        assert_ne!(a, b);
        // The child is not a copy of the parent's continuing stream.
        let parent_next = first_words(&mut rng_from_seed(7), 8);
        assert_ne!(a, parent_next);
    }

    #[test]
    fn os_seeded_generators_differ() {
        let a = first_words(&mut rng_from_os(), 4);
        let b = match try_rng_from_os() {
            Ok(mut r) => first_words(&mut r, 4),
            Err(e) => panic!("no OS entropy: {e}"),
        };
        assert_ne!(a, b);
    }
}
