//! ℓ-diversity of one class's sensitive values (Machanavajjhala et al. 2007; Bild 2024,
//! §2.1.4, Definition 3): distinct, entropy and recursive (c, ℓ). docs/METHODS.md §7.2.

use std::fmt;

/// Which reading of "ℓ well-represented values" a class must meet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LModel {
    /// At least ℓ distinct values.
    Distinct,
    /// Entropy of the value distribution at least ln ℓ.
    Entropy,
    /// Recursive (c, ℓ): `r_1 < c · (r_ℓ + … + r_d)` with `r_1 ≥ r_2 ≥ …` the value counts.
    Recursive {
        /// The constant c.
        c: f64,
    },
}

impl fmt::Display for LModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LModel::Distinct => f.write_str("distinct"),
            LModel::Entropy => f.write_str("entropy"),
            LModel::Recursive { c } => write!(f, "recursive (c = {c})"),
        }
    }
}

/// Relative slack of the entropy comparison, so that a class of exactly ℓ equally frequent
/// values (entropy exactly ln ℓ) is not rejected by a rounding error in the last bit.
const ENTROPY_SLACK: f64 = 1e-12;

/// An ℓ-diversity requirement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LDiversity {
    /// ℓ.
    pub l: u64,
    /// The variant.
    pub model: LModel,
}

impl LDiversity {
    /// Whether a class whose distinct values have `counts` (each > 0, any order) is
    /// ℓ-diverse. `scratch` is reused between calls (recursive needs the counts sorted).
    pub fn accepts(&self, counts: &[u64], scratch: &mut Vec<u64>) -> bool {
        let distinct = counts.len() as u64;
        if distinct < self.l {
            return false;
        }
        match self.model {
            LModel::Distinct => true,
            LModel::Entropy => entropy(counts) >= (self.l as f64).ln() * (1.0 - ENTROPY_SLACK),
            LModel::Recursive { c } => {
                scratch.clear();
                scratch.extend_from_slice(counts);
                scratch.sort_unstable_by(|a, b| b.cmp(a));
                let tail: u64 = scratch[(self.l as usize - 1)..].iter().sum();
                (scratch[0] as f64) < c * tail as f64
            }
        }
    }
}

/// Shannon entropy (natural logarithm) of the distribution given by `counts`:
/// `ln n − (1/n) Σ c ln c`.
pub fn entropy(counts: &[u64]) -> f64 {
    let n: u64 = counts.iter().sum();
    if n == 0 {
        return 0.0;
    }
    let n = n as f64;
    let sum: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| c as f64 * (c as f64).ln())
        .sum();
    (n.ln() - sum / n).max(0.0)
}

/// The largest ℓ for which a class is entropy-ℓ-diverse: `exp(entropy)`.
pub fn entropy_l(counts: &[u64]) -> f64 {
    entropy(counts).exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(l: u64, model: LModel, counts: &[u64]) -> bool {
        LDiversity { l, model }.accepts(counts, &mut Vec::new())
    }

    #[test]
    fn hand_computed_classes() {
        // Distinct: 3 values.
        assert!(check(3, LModel::Distinct, &[5, 1, 1]));
        assert!(!check(4, LModel::Distinct, &[5, 1, 1]));
        // Entropy of (2, 2) is ln 2 exactly: 2-diverse, not 3-diverse.
        assert!(check(2, LModel::Entropy, &[2, 2]));
        assert!(check(3, LModel::Entropy, &[1, 1, 1]));
        // (5, 1, 1): H = ln 7 - (5 ln 5)/7 = 0.796 < ln 3 = 1.0986, > ln 2 = 0.693.
        assert!(!check(3, LModel::Entropy, &[5, 1, 1]));
        assert!(check(2, LModel::Entropy, &[5, 1, 1]));
        assert!((entropy_l(&[1, 1, 1, 1]) - 4.0).abs() < 1e-12);
        // Recursive (c, l) = (2, 2) on (5, 1, 1): 5 < 2 · (1 + 1) is false.
        assert!(!check(2, LModel::Recursive { c: 2.0 }, &[1, 5, 1]));
        // (3, 2, 1) with c = 2, l = 2: 3 < 2 · (2 + 1).
        assert!(check(2, LModel::Recursive { c: 2.0 }, &[1, 3, 2]));
        // c = 1, l = 2: 3 < 3 is false.
        assert!(!check(2, LModel::Recursive { c: 1.0 }, &[2, 1, 3]));
    }

    fn merged(a: &[u64], b: &[u64]) -> Vec<u64> {
        let mut out = vec![0u64; a.len().max(b.len())];
        for (i, &c) in a.iter().enumerate() {
            out[i] += c;
        }
        for (i, &c) in b.iter().enumerate() {
            out[i] += c;
        }
        out.into_iter().filter(|&c| c > 0).collect()
    }

    proptest! {
        /// Monotonicity: merging two ℓ-diverse classes (as generalization does) gives an
        /// ℓ-diverse class, for every variant.
        #[test]
        fn merging_diverse_classes_stays_diverse(
            a in proptest::collection::vec(0u64..6, 1..8),
            b in proptest::collection::vec(0u64..6, 1..8),
            l in 1u64..5,
            c in 1u32..4,
        ) {
            let pos = |v: &[u64]| v.iter().copied().filter(|&x| x > 0).collect::<Vec<_>>();
            for model in [LModel::Distinct, LModel::Entropy, LModel::Recursive { c: c as f64 }] {
                if check(l, model, &pos(&a)) && check(l, model, &pos(&b)) {
                    prop_assert!(check(l, model, &merged(&a, &b)), "{model:?} l={l} {a:?} {b:?}");
                }
            }
        }
    }
}
