//! Distribution tests of the exponential mechanism and the weighted index sampler.

use super::*;
use crate::testing::stats::*;
use num_bigint::{BigInt, BigUint};
use num_traits::FromPrimitive;
use rand::SeedableRng;
use std::collections::BTreeMap;

type TestRng = rand_chacha::ChaCha20Rng;

const DRAWS: u64 = 200_000;

fn tally(n: u64, mut f: impl FnMut() -> usize) -> BTreeMap<i64, u64> {
    let mut counts = BTreeMap::new();
    for _ in 0..n {
        *counts.entry(f() as i64).or_insert(0) += 1;
    }
    counts
}

#[test]
fn weights_match_closed_form() {
    let w = exponential_weights(&[0.0, 1.0, 2.0], 2.0, 1.0).expect("valid");
    let raw = [(-2.0f64).exp(), (-1.0f64).exp(), 1.0];
    let total: f64 = raw.iter().sum();
    for (got, want) in w.iter().zip(raw.iter().map(|r| r / total)) {
        assert!((got - want).abs() < 1e-15, "{got} vs {want}");
    }
    assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-15);
}

#[test]
fn mechanism_frequencies_match_weights() {
    let scores = [0.0, 1.0, 2.0];
    // exp(2 · (s_i - 2) / 2) = e^-2, e^-1, 1, computed independently of
    // the code under test.
    let raw = [(-2.0f64).exp(), (-1.0f64).exp(), 1.0];
    let total: f64 = raw.iter().sum();
    let probs: Vec<f64> = raw.iter().map(|r| r / total).collect();
    let weights = exponential_weights(&scores, 2.0, 1.0).expect("valid");
    for (w, p) in weights.iter().zip(&probs) {
        assert!((w - p).abs() < 1e-15, "{w} vs {p}");
    }
    let mut rng = TestRng::seed_from_u64(11);
    let counts = tally(DRAWS, || {
        exponential_mechanism(&mut rng, &scores, 2.0, 1.0).expect("valid")
    });
    assert_chi_square_fits(
        &counts,
        DRAWS,
        &categorical_bins(&probs),
        "exp mech [0,1,2]",
    );
}

#[test]
fn max_subtraction_avoids_overflow() {
    let scores = [1e6, 1e6 - 1.0];
    let w = exponential_weights(&scores, 1.0, 1.0).expect("valid");
    assert!(w.iter().all(|p| p.is_finite()));
    let want0 = 1.0 / (1.0 + (-0.5f64).exp());
    assert!((w[0] - want0).abs() < 1e-12, "{w:?}");
    let mut rng = TestRng::seed_from_u64(12);
    let n = DRAWS;
    let counts = tally(n, || {
        exponential_mechanism(&mut rng, &scores, 1.0, 1.0).expect("valid")
    });
    assert_wilson(counts.get(&0).copied().unwrap_or(0), n, want0, "P(index 0)");

    // Differences that overflow f64 give weight 0, never NaN.
    let extreme = [f64::MAX, -f64::MAX, 0.0];
    let w = exponential_weights(&extreme, 1.0, 1.0).expect("valid");
    assert_eq!(w, vec![1.0, 0.0, 0.0]);
    for _ in 0..1000 {
        assert_eq!(exponential_mechanism(&mut rng, &extreme, 1.0, 1.0), Ok(0));
    }
    // A huge epsilon/sensitivity ratio still works.
    let w = exponential_weights(&[1.0, 0.0], 1e300, 1e-7).expect("valid");
    assert_eq!(w, vec![1.0, 0.0]);
}

#[test]
fn mechanism_rejects_bad_input() {
    let mut rng = TestRng::seed_from_u64(13);
    let ok = [0.0, 1.0];
    let cases: Vec<(Vec<f64>, f64, f64, &str)> = vec![
        (vec![], 1.0, 1.0, "scores"),
        (vec![0.0, f64::NAN], 1.0, 1.0, "scores"),
        (vec![f64::INFINITY, 0.0], 1.0, 1.0, "scores"),
        (vec![f64::NEG_INFINITY], 1.0, 1.0, "scores"),
        (ok.to_vec(), 0.0, 1.0, "epsilon"),
        (ok.to_vec(), -1.0, 1.0, "epsilon"),
        (ok.to_vec(), f64::NAN, 1.0, "epsilon"),
        (ok.to_vec(), f64::INFINITY, 1.0, "epsilon"),
        (ok.to_vec(), 1.0, 0.0, "sensitivity"),
        (ok.to_vec(), 1.0, -2.0, "sensitivity"),
        (ok.to_vec(), 1.0, f64::NAN, "sensitivity"),
        (ok.to_vec(), 1.0, f64::INFINITY, "sensitivity"),
        (ok.to_vec(), 1e300, 1e-300, "epsilon"),
        (ok.to_vec(), 1e-300, 1e300, "epsilon"),
    ];
    for (scores, eps, sens, name) in cases {
        let err =
            exponential_mechanism(&mut rng, &scores, eps, sens).expect_err("must be rejected");
        let matches = if name == "scores" {
            matches!(&err, NoiseError::InvalidData { name: n, .. } if n == name)
        } else {
            matches!(&err, NoiseError::InvalidParameter { name: n, .. } if n == name)
        };
        assert!(matches, "{scores:?} {eps} {sens}: {err}");
        assert!(exponential_weights(&scores, eps, sens).is_err());
    }
}

#[test]
fn mechanism_is_reproducible_with_seed() {
    let scores = [0.3, 0.1, 0.9, 0.5];
    let run = |seed| {
        let mut rng = TestRng::seed_from_u64(seed);
        (0..50)
            .map(|_| exponential_mechanism(&mut rng, &scores, 1.0, 1.0).expect("valid"))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}

#[test]
fn weighted_index_frequencies() {
    let weights = [1.0, 0.0, 3.0, 6.0];
    let mut rng = TestRng::seed_from_u64(14);
    let counts = tally(DRAWS, || {
        sample_weighted_index(&mut rng, &weights).expect("valid")
    });
    assert_eq!(counts.get(&1), None, "zero weight selected");
    // Index 1 has no outcomes, so it shares a bin with index 2.
    let bins = vec![
        Bin {
            lo: 0,
            hi: 0,
            prob: 0.1,
        },
        Bin {
            lo: 1,
            hi: 2,
            prob: 0.3,
        },
        Bin {
            lo: 3,
            hi: 3,
            prob: 0.6,
        },
    ];
    assert_chi_square_fits(&counts, DRAWS, &bins, "weighted index [1,0,3,6]");
}

#[test]
fn weighted_index_handles_overflowing_sum() {
    let weights = [f64::MAX, f64::MAX];
    let mut rng = TestRng::seed_from_u64(15);
    let n = DRAWS;
    let counts = tally(n, || {
        sample_weighted_index(&mut rng, &weights).expect("valid")
    });
    assert_wilson(counts.get(&0).copied().unwrap_or(0), n, 0.5, "P(index 0)");
    // A single positive weight is always selected, including last.
    for _ in 0..1000 {
        assert_eq!(sample_weighted_index(&mut rng, &[0.0, 0.0, 2.5]), Ok(2));
    }
}

#[test]
fn weighted_index_rejects_bad_input() {
    let mut rng = TestRng::seed_from_u64(16);
    for w in [
        vec![],
        vec![0.0, 0.0],
        vec![1.0, -1.0],
        vec![1.0, f64::NAN],
        vec![f64::INFINITY],
    ] {
        assert!(
            matches!(
                sample_weighted_index(&mut rng, &w),
                Err(NoiseError::InvalidData { name, .. }) if name == "weights"
            ),
            "{w:?}"
        );
    }
}

/// `x` as an exact fraction `num / 2^k`, found by doubling (exact in binary floating
/// point) until the value is an integer; independent of the code under test.
fn exact_fraction(x: f64) -> (BigInt, u32) {
    let (mut y, mut k) = (x, 0u32);
    while y.fract() != 0.0 {
        y *= 2.0;
        k += 1;
    }
    // `y` is an integer-valued f64, converted exactly.
    (BigInt::from_f64(y).unwrap_or_default(), k)
}

/// Asserts that the mechanism's `γ_i` equals `epsilon_num/2^30 · (s_max − s_i)/(2Δ)`
/// exactly (cross-multiplied in big integers).
fn assert_exact_gamma(scores: &[f64], epsilon: f64, sensitivity: f64) {
    let a = epsilon_grid_numerator(epsilon).expect("valid epsilon");
    let exponents = ExactExponents::new(scores, a, sensitivity);
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (max_num, max_k) = exact_fraction(max);
    let (d_num, d_k) = exact_fraction(sensitivity);
    for (i, &s) in scores.iter().enumerate() {
        let (num, den) = exponents.gamma(i);
        let (s_num, s_k) = exact_fraction(s);
        // s_max − s_i = gap / 2^K with K = max(max_k, s_k).
        let k = max_k.max(s_k);
        let gap = (&max_num << (k - max_k)) - (&s_num << (k - s_k));
        // γ = a · gap · 2^d_k / (2^30 · 2 · d_num · 2^K).
        let want_num = (BigInt::from(a) * gap) << d_k;
        let want_den = d_num.clone() << (31 + k);
        let got = BigInt::from(num) * &want_den;
        let want = want_num * BigInt::from(den.clone());
        assert_eq!(
            got, want,
            "γ_{i} of {scores:?} at ε {epsilon}, Δ {sensitivity}"
        );
    }
}

#[test]
fn exponents_are_exact_rationals() {
    assert_exact_gamma(&[0.0, 1.0, 2.0], 2.0, 1.0);
    assert_exact_gamma(&[0.1, 0.3, -0.7, 0.3], 0.1, 0.7);
    assert_exact_gamma(&[1e6, 1e6 - 1.0, -3.25e-3], 0.3, 3.2285);
    assert_exact_gamma(&[5e-324, 0.0, 1e300, -1e-300], 1.0, 1e-3);
    // Closed forms: γ = 2, 1, 0 and γ = 50 exactly.
    let e = ExactExponents::new(&[0.0, 1.0, 2.0], 2 << 30, 1.0);
    for (i, want) in [2u32, 1, 0].into_iter().enumerate() {
        let (num, den) = e.gamma(i);
        assert_eq!(num, BigUint::from(want) * den, "γ_{i}");
    }
    let e = ExactExponents::new(&[0.0, -100.0], 1 << 30, 1.0);
    let (num, den) = e.gamma(1);
    assert_eq!(num, BigUint::from(50u32) * den);
}

/// An RNG that returns a scripted bit sequence (least significant bit of each word
/// first, as the bit reservoir consumes it), then zeros.
struct ScriptedRng {
    bits: Vec<bool>,
    next: usize,
}

impl RngCore for ScriptedRng {
    fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }
    fn next_u64(&mut self) -> u64 {
        let mut word = 0u64;
        for b in 0..64 {
            if self.bits.get(self.next + b).copied().unwrap_or(false) {
                word |= 1 << b;
            }
        }
        self.next += 64;
        word
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

/// Candidate 1 of scores `[0, −100]` at ε = Δ = 1 has probability
/// `e^-50 / (1 + e^-50) ≈ 2^-72`. The f64 inverse CDF this module used before could
/// never return it, whatever the random bits: `1 + e^-50` rounds to 1, and every
/// uniform variate below 1 lands on candidate 0. The exact sampler returns it for the
/// bit sequence "propose 1" followed by 50 successful `Bernoulli(e^-1)` trials (each:
/// `A_2 = 1` with bit 0, `A_3 = 0` with the 2-bit value 1), so index 1 is in its support
/// and is drawn with probability `e^-50/(1 + e^-50)`.
#[test]
fn a_candidate_of_probability_2_pow_minus_72_is_in_the_support() {
    let mut script = vec![true]; // uniform_below(2) = 1: propose candidate 1
    for _ in 0..50 {
        script.extend([false, true, false]);
    }
    let mut rng = ScriptedRng {
        bits: script,
        next: 0,
    };
    assert_eq!(
        exponential_mechanism(&mut rng, &[0.0, -100.0], 1.0, 1.0),
        Ok(1)
    );
    // One failed trial instead rejects it, and candidate 0 is then accepted.
    // Propose 1, A_2 = 0 (bit 1): K = 2 is even, rejected; propose 0: accepted.
    let script = vec![true, true, false];
    let mut rng = ScriptedRng {
        bits: script,
        next: 0,
    };
    assert_eq!(
        exponential_mechanism(&mut rng, &[0.0, -100.0], 1.0, 1.0),
        Ok(0)
    );
}

/// Frequencies of a draw with known probabilities, one of them below 2^-60: chi-square
/// at false-failure rate 1e-6 (the tiny candidate shares a bin with its
/// neighbour), and its acceptance exponent is exactly 43.5, so its probability is
/// `e^-43.5 / Z > 0`, not rounded to 0.
#[test]
fn frequencies_match_exact_probabilities_with_a_tiny_candidate() {
    let scores = [0.0, 1.0, 2.0, 3.5, -40.0];
    let raw: Vec<f64> = [3.5f64, 2.5, 1.5, 0.0, 43.5]
        .iter()
        .map(|g| (-g).exp())
        .collect();
    let total: f64 = raw.iter().sum();
    let probs: Vec<f64> = raw.iter().map(|r| r / total).collect();
    assert!(probs[4] > 0.0 && probs[4] < 2f64.powi(-60), "{}", probs[4]);
    let e = ExactExponents::new(&scores, 2 << 30, 1.0);
    let (num, den) = e.gamma(4);
    assert_eq!(num * 2u32, BigUint::from(87u32) * den, "γ_4 = 43.5");
    let mut rng = TestRng::seed_from_u64(17);
    let counts = tally(DRAWS, || {
        exponential_mechanism(&mut rng, &scores, 2.0, 1.0).expect("valid")
    });
    let mut bins = categorical_bins(&probs[..4]);
    bins[3].hi = 4;
    bins[3].prob += probs[4];
    assert_chi_square_fits(&counts, DRAWS, &bins, "exact EM with a 2^-60 candidate");
}

#[test]
fn epsilon_is_rounded_down_to_the_grid() {
    // ε = 0.1 becomes floor(0.1 · 2^30) / 2^30 for the exponent.
    let a = epsilon_grid_numerator(0.1).expect("valid");
    assert_eq!(a, 107_374_182);
    let e = ExactExponents::new(&[0.0, 1.0], a, 1.0);
    let (num, den) = e.gamma(0);
    // γ_0 = a / 2^31.
    assert_eq!(num << 31, BigUint::from(a) * den);
    let mut rng = TestRng::seed_from_u64(18);
    assert!(matches!(
        exponential_mechanism(&mut rng, &[0.0, 1.0], 1e-10, 1.0),
        Err(NoiseError::InvalidParameter { name, .. }) if name == "epsilon"
    ));
}

/// A positive weight however small keeps its exact share: `[1, 2^-1074]` cannot be
/// drawn 2^1074 times, but a scripted uniform integer equal to the total minus one
/// lands on index 1 (the f64 inverse CDF used before rounded its share to 0).
#[test]
fn weighted_index_keeps_a_tiny_weight_in_the_support() {
    // total = 2^1074 + 1 units of 2^-1074: uniform_below draws 1075 bits.
    let mut script = vec![false; 1074];
    script.push(true); // r = 2^1074 = total − 1 → index 1
    let mut rng = ScriptedRng {
        bits: script,
        next: 0,
    };
    assert_eq!(sample_weighted_index(&mut rng, &[1.0, 5e-324]), Ok(1));
}

/// Draw times over 4,096 and 531,441 candidates (IPA's lattice sizes) for four score
/// profiles: gaps spread uniformly over `[0, 3000Δ]` (about 450 proposals per draw at
/// ε = 0.3), the mass on the best 5 % (about 140), equal scores (one), and one candidate
/// 1000Δ above all others (the worst case: `n` proposals). Run with
/// `cargo test --release --lib exponential_timing -- --ignored --nocapture`.
#[test]
#[ignore]
fn exponential_timing() {
    let mut rng = TestRng::seed_from_u64(19);
    let delta = 3.2285;
    for n in [4096usize, 531_441] {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let spread_gaps: Vec<f64> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                -((x >> 11) as f64 / (1u64 << 53) as f64) * 3000.0 * delta - 1.0e6
            })
            .collect();
        // 0.999 of the mass on the best 5 %: gaps up to 2/ε · ln(1000) · 20 Δ.
        let best_five_percent: Vec<f64> = (0..n)
            .map(|i| -(i as f64 / n as f64) * delta * 2.0 / 0.3 * 7.0 * 20.0)
            .collect();
        let equal = vec![-1.0e6; n];
        let mut one_best: Vec<f64> = (0..n)
            .map(|i| -1.0e6 - delta * 1000.0 - (i % 7) as f64)
            .collect();
        one_best[n / 3] = -1.0e6;
        for (name, scores) in [
            ("gaps to 3000 Δ", &spread_gaps),
            ("best 5 %", &best_five_percent),
            ("equal", &equal),
            ("one best", &one_best),
        ] {
            let draws = 5;
            let start = std::time::Instant::now();
            for _ in 0..draws {
                exponential_mechanism(&mut rng, scores, 0.3, delta).expect("valid");
            }
            let per = start.elapsed().as_secs_f64() / draws as f64;
            println!("n = {n:>7}, {name:>14}: {:.3} ms per draw", per * 1e3);
        }
    }
}

/// The exponential mechanism near its worst case: candidate 0 scores 1 and 20 others 0
/// in D, the reverse in D' (Δs = 1). P[candidate 0] changes by a factor approaching
/// e^ε as the number of other candidates grows (here about 0.9·e^ε).
#[test]
fn audit_exponential_mechanism() {
    use crate::testing::audit::{assert_private, assert_violated, audit, histogram, ALPHA};
    let epsilon = 2.0;
    let mut d_scores = vec![0.0; 21];
    d_scores[0] = 1.0;
    let mut d2_scores = vec![1.0; 21];
    d2_scores[0] = 0.0;
    let choose = |scores: &[f64], seed: u64| {
        histogram(2, 200_000, seed, |rng| {
            usize::from(exponential_mechanism(rng, scores, epsilon, 1.0).expect("valid") != 0)
        })
    };
    let d = choose(&d_scores, 33);
    let d2 = choose(&d2_scores, 34);
    let report = audit(&d, &d2, epsilon, 0.0, ALPHA);
    assert_private(&report, "exponential mechanism");
    assert!(report.max_ratio_lower_bound > 5.0, "{report}");
    assert_violated(&audit(&d, &d2, 1.5, 0.0, ALPHA), "exponential power check");
}
