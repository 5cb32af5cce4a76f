use super::bits::BitSource;
use super::geometric::geometric_to_i64;
use super::*;
use crate::testing::stats::*;
use rand::{RngCore, SeedableRng};
use std::collections::BTreeMap;

type TestRng = rand_chacha::ChaCha20Rng;

/// Draws per distribution and scale in the goodness-of-fit tests.
const DRAWS: u64 = 200_000;

fn scales() -> Vec<(ExactScale, &'static str)> {
    vec![
        (ExactScale::new(1, 2).expect("valid"), "0.5"),
        (ExactScale::new(1, 1).expect("valid"), "1"),
        (ExactScale::new(10, 3).expect("valid"), "10/3"),
        (ExactScale::new(10, 1).expect("valid"), "10"),
    ]
}

fn q_of(scale: ExactScale) -> f64 {
    (-1.0 / scale.as_f64()).exp()
}

struct Summary {
    counts: BTreeMap<i64, u64>,
    mean: f64,
}

fn draw(n: u64, seed: u64, mut f: impl FnMut(&mut TestRng) -> i64) -> Summary {
    let mut rng = TestRng::seed_from_u64(seed);
    let mut counts = BTreeMap::new();
    let mut sum = 0.0;
    for _ in 0..n {
        let k = f(&mut rng);
        *counts.entry(k).or_insert(0) += 1;
        sum += k as f64;
    }
    Summary {
        counts,
        mean: sum / n as f64,
    }
}

/// Asserts `|sample mean - mean| <= 5 · sd / sqrt(n)` (false-failure rate
/// about 5.7e-7 by the central limit theorem).
fn assert_mean(s: &Summary, n: u64, mean: f64, var: f64, what: &str) {
    let bound = 5.0 * (var / n as f64).sqrt();
    assert!(
        (s.mean - mean).abs() <= bound,
        "{what}: sample mean {} differs from {mean} by more than {bound}",
        s.mean
    );
}

// Exact distribution functions with q = exp(-1/scale).

fn geo_pmf(q: f64, k: i64) -> f64 {
    if k < 0 {
        0.0
    } else {
        (1.0 - q) * q.powi(k as i32)
    }
}
fn geo_upper(q: f64, k: i64) -> f64 {
    if k <= 0 {
        1.0
    } else {
        q.powi(k as i32)
    }
}
fn geo_lower(q: f64, k: i64) -> f64 {
    if k < 0 {
        0.0
    } else {
        1.0 - q.powi(k as i32 + 1)
    }
}

fn dlap_pmf(q: f64, k: i64) -> f64 {
    (1.0 - q) / (1.0 + q) * q.powi(k.unsigned_abs() as i32)
}
/// P(X >= k) for the discrete Laplace.
fn dlap_upper(q: f64, k: i64) -> f64 {
    if k >= 1 {
        q.powi(k as i32) / (1.0 + q)
    } else {
        1.0 - dlap_upper(q, 1 - k)
    }
}
fn dlap_lower(q: f64, k: i64) -> f64 {
    dlap_upper(q, -k)
}

fn floor_pmf(q: f64, k: i64) -> f64 {
    let j = if k >= 0 { k } else { -1 - k };
    0.5 * (1.0 - q) * q.powi(j as i32)
}
/// P(floor(L) >= k) = P(L >= k).
fn floor_upper(q: f64, k: i64) -> f64 {
    if k >= 0 {
        0.5 * q.powi(k as i32)
    } else {
        1.0 - 0.5 * q.powi(-k as i32)
    }
}
fn floor_lower(q: f64, k: i64) -> f64 {
    1.0 - floor_upper(q, k + 1)
}

#[test]
fn exact_scale_new_reduces_and_validates() {
    let s = ExactScale::new(20, 6).expect("valid");
    assert_eq!((s.num(), s.den()), (10, 3));
    assert!((s.as_f64() - 10.0 / 3.0).abs() < 1e-15);
    assert!(ExactScale::new(0, 1).is_err());
    assert!(ExactScale::new(1, 0).is_err());
    let big = ExactScale::new(u64::MAX, u64::MAX).expect("valid");
    assert_eq!((big.num(), big.den()), (1, 1));
}

#[test]
fn exact_scale_from_epsilon_values() {
    let two30 = 1u64 << 30;
    // 0.1 · 2^30 = 107374182.4 → 107374182 = 2 · 53687091.
    let s = ExactScale::from_sensitivity_epsilon(1, 0.1).expect("valid");
    assert_eq!((s.num(), s.den()), (two30 / 2, 53_687_091));
    // 0.3 · 2^30 = 322122547.2 → 322122547 (odd).
    let s = ExactScale::from_sensitivity_epsilon(1, 0.3).expect("valid");
    assert_eq!((s.num(), s.den()), (two30, 322_122_547));
    let s = ExactScale::from_sensitivity_epsilon(1, 1.0).expect("valid");
    assert_eq!((s.num(), s.den()), (1, 1));
    let s = ExactScale::from_sensitivity_epsilon(3, 0.3).expect("valid");
    assert_eq!((s.num(), s.den()), (3 * two30, 322_122_547));
    for (sens, eps) in [(1u64, 0.1), (1, 0.3), (1, 1.0), (3, 0.3), (7, 0.123456789)] {
        let s = ExactScale::from_sensitivity_epsilon(sens, eps).expect("valid");
        let want = sens as f64 / eps;
        assert!(s.as_f64() >= want, "scale {} < {want}", s.as_f64());
        assert!(
            (s.as_f64() - want) / want < 1e-8,
            "scale {} vs {want}",
            s.as_f64()
        );
        // Exact check: num/den == sens · 2^30 / floor(eps · 2^30), and the
        // grid value floor(eps · 2^30) / 2^30 (exact in f64) is <= eps.
        let eps_fixed = (eps * two30 as f64).floor();
        assert!(eps_fixed / two30 as f64 <= eps);
        assert_eq!(
            u128::from(s.num()) * eps_fixed as u128,
            u128::from(s.den()) * u128::from(sens) * u128::from(two30)
        );
    }
    // Huge epsilon is capped, never an error and never a smaller scale.
    let s = ExactScale::from_sensitivity_epsilon(1, 1e300).expect("valid");
    assert!(s.as_f64() > 0.0);
}

#[test]
fn exact_scale_from_epsilon_rejects_bad_input() {
    for eps in [
        0.0,
        -0.0,
        -1.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e-12,
    ] {
        let err = ExactScale::from_sensitivity_epsilon(1, eps).expect_err("must be rejected");
        let msg = err.to_string();
        assert!(msg.contains("epsilon"), "{msg}");
        if eps.is_nan() {
            assert!(msg.contains("NaN"), "{msg}");
        } else if eps == 1e-12 {
            assert!(msg.contains("1e-12"), "{msg}");
        } else {
            assert!(msg.contains(&format!("{eps}")), "{msg}");
        }
    }
    assert!(ExactScale::from_sensitivity_epsilon(0, 1.0).is_err());
    // 2^40 · 2^30 / 1 does not fit u64.
    assert!(ExactScale::from_sensitivity_epsilon(1 << 40, 1.0 / (1u64 << 30) as f64).is_err());
    // The smallest accepted epsilon.
    assert!(ExactScale::from_sensitivity_epsilon(1, 1.0 / (1u64 << 30) as f64).is_ok());
}

#[test]
fn uniform_below_is_uniform_and_in_range() {
    let mut rng = TestRng::seed_from_u64(1);
    assert_eq!(sample_uniform_below(&mut rng, 0), 0);
    assert_eq!(sample_uniform_below(&mut rng, 1), 0);
    for _ in 0..1000 {
        assert!(sample_uniform_below(&mut rng, u64::MAX) < u64::MAX);
        let mut bits = BitSource::new(&mut rng);
        assert!(bits.uniform_below(u128::MAX) < u128::MAX);
        assert!(bits.uniform_below((1u128 << 64) + 3) < (1u128 << 64) + 3);
    }
    // n = 7 needs 3 bits and rejects 7: chi-square over the 7 outcomes.
    let n = DRAWS;
    let s = draw(n, 2, |r| sample_uniform_below(r, 7) as i64);
    let bins = categorical_bins(&[1.0 / 7.0; 7]);
    assert_chi_square_fits(&s.counts, n, &bins, "uniform_below(7)");
}

/// The bit reservoir hands out the generator's bits in order (least
/// significant first within each word), without loss or repetition.
#[test]
fn bit_source_preserves_the_bit_stream() {
    let widths = [1u32, 3, 64, 7, 60, 2, 64, 0, 13, 51, 64, 64, 5];
    let mut got = Vec::new();
    {
        let mut rng = TestRng::seed_from_u64(8);
        let mut bits = BitSource::new(&mut rng);
        for &w in &widths {
            let v = bits.bits(w);
            assert!(w == 64 || v >> w == 0, "value wider than {w} bits");
            got.extend((0..w).map(|i| (v >> i) & 1));
        }
    }
    let mut rng = TestRng::seed_from_u64(8);
    let want: Vec<u64> = (0..got.len().div_ceil(64))
        .flat_map(|_| {
            let w = rng.next_u64();
            (0..64).map(move |i| (w >> i) & 1)
        })
        .take(got.len())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn bernoulli_rational_edges_and_frequency() {
    let mut rng = TestRng::seed_from_u64(3);
    assert!(!bernoulli_rational(&mut rng, 1, 0));
    assert!(!bernoulli_rational(&mut rng, 0, 5));
    assert!(bernoulli_rational(&mut rng, 5, 5));
    assert!(bernoulli_rational(&mut rng, 6, 5));
    let n = DRAWS;
    let hits = (0..n)
        .filter(|_| bernoulli_rational(&mut rng, 3, 7))
        .count() as u64;
    assert_wilson(hits, n, 3.0 / 7.0, "bernoulli_rational(3/7)");
    // A denominator above 2^64 uses the two-word path.
    let den = (1u128 << 70) + 1;
    let hits = (0..n)
        .filter(|_| bernoulli_rational(&mut rng, den / 4, den))
        .count() as u64;
    assert_wilson(hits, n, 0.25, "bernoulli_rational(~1/4, den > 2^64)");
}

#[test]
fn bernoulli_exp_frequencies() {
    let mut rng = TestRng::seed_from_u64(4);
    for (num, den) in [(0u64, 1u64), (3, 10), (1, 1), (5, 2)] {
        let gamma = num as f64 / den as f64;
        let n = DRAWS;
        let hits = (0..n).filter(|_| bernoulli_exp(&mut rng, num, den)).count() as u64;
        assert_wilson(hits, n, (-gamma).exp(), &format!("bernoulli_exp({gamma})"));
    }
    assert!(!bernoulli_exp(&mut rng, 1, 0));
    // gamma = 0 is certain.
    assert!((0..1000).all(|_| bernoulli_exp(&mut rng, 0, 7)));
}

/// `Bernoulli(exp(−γ))` over big integers: γ = 3/10, 1/3 (not dyadic), 1, 22/7, 27/10 and
/// 5.5, each written with numerator and denominator scaled by 2^70 (or by 3^50, not a
/// power of two) so that the big-integer path runs, at Wilson z = 5 (false-failure rate
/// about 5.7e-7 per γ); γ = 0 is certain, a huge γ (2^200) almost never succeeds, and
/// `den = 0` never does.
#[test]
fn bernoulli_exp_big_frequencies() {
    use num_bigint::BigUint;
    let mut rng = TestRng::seed_from_u64(41);
    let two70 = BigUint::from(1u32) << 70u32;
    let three50 = BigUint::from(3u32).pow(50);
    for (num, den) in [(3u32, 10u32), (1, 3), (1, 1), (22, 7), (27, 10), (11, 2)] {
        let gamma = f64::from(num) / f64::from(den);
        for scale in [&two70, &three50] {
            let (n_big, d_big) = (BigUint::from(num) * scale, BigUint::from(den) * scale);
            let hits = (0..DRAWS)
                .filter(|_| bernoulli_exp_big(&mut rng, &n_big, &d_big))
                .count() as u64;
            assert_wilson(
                hits,
                DRAWS,
                (-gamma).exp(),
                &format!("bernoulli_exp_big({num}/{den} scaled)"),
            );
        }
    }
    let zero = BigUint::from(0u32);
    let one = BigUint::from(1u32);
    assert!((0..1000).all(|_| bernoulli_exp_big(&mut rng, &zero, &three50)));
    assert!(!bernoulli_exp_big(&mut rng, &one, &zero));
    let huge = BigUint::from(1u32) << 200u32;
    assert!((0..1000).all(|_| !bernoulli_exp_big(&mut rng, &huge, &one)));
}

/// Exact uniform big integers: below 3·2^100, the top two bits of a draw (value ≥ 2^101,
/// ≥ 2^100 or below) are uniform over the three thirds.
#[test]
fn uniform_below_big_is_uniform_over_thirds() {
    use num_bigint::BigUint;
    let mut rng = TestRng::seed_from_u64(42);
    let unit = BigUint::from(1u32) << 100u32;
    let n = &unit * 3u32;
    let mut counts = BTreeMap::new();
    for _ in 0..DRAWS {
        let x = sample_uniform_below_big(&mut rng, &n);
        assert!(x < n);
        let third = (x / &unit).iter_u32_digits().next().unwrap_or(0);
        *counts.entry(i64::from(third)).or_insert(0) += 1;
    }
    let bins = categorical_bins(&[1.0 / 3.0; 3]);
    assert_chi_square_fits(&counts, DRAWS, &bins, "uniform below 3·2^100");
}

#[test]
fn geometric_matches_pmf() {
    for (i, (scale, name)) in scales().into_iter().enumerate() {
        let q = q_of(scale);
        let n = DRAWS;
        let s = draw(n, 100 + i as u64, |r| {
            geometric_to_i64(sample_geometric(r, scale))
        });
        let bins = build_bins(n, &|k| geo_pmf(q, k), &|k| geo_upper(q, k), &|k| {
            geo_lower(q, k)
        });
        assert_chi_square_fits(&s.counts, n, &bins, &format!("geometric scale {name}"));
        let mean = q / (1.0 - q);
        let var = q / ((1.0 - q) * (1.0 - q));
        assert_mean(&s, n, mean, var, &format!("geometric scale {name}"));
    }
}

#[test]
fn discrete_laplace_matches_pmf() {
    for (i, (scale, name)) in scales().into_iter().enumerate() {
        let q = q_of(scale);
        let n = DRAWS;
        let s = draw(n, 200 + i as u64, |r| sample_discrete_laplace(r, scale));
        let bins = build_bins(n, &|k| dlap_pmf(q, k), &|k| dlap_upper(q, k), &|k| {
            dlap_lower(q, k)
        });
        let what = format!("discrete Laplace scale {name}");
        assert_chi_square_fits(&s.counts, n, &bins, &what);
        let var = 2.0 * q / ((1.0 - q) * (1.0 - q));
        assert_mean(&s, n, 0.0, var, &what);
        let zeros = s.counts.get(&0).copied().unwrap_or(0);
        assert_wilson(zeros, n, (1.0 - q) / (1.0 + q), &format!("{what}: P(0)"));
    }
}

#[test]
fn floor_laplace_matches_pmf_and_tails() {
    for (i, (scale, name)) in scales().into_iter().enumerate() {
        let q = q_of(scale);
        let n = DRAWS;
        let s = draw(n, 300 + i as u64, |r| sample_floor_laplace(r, scale));
        let bins = build_bins(n, &|k| floor_pmf(q, k), &|k| floor_upper(q, k), &|k| {
            floor_lower(q, k)
        });
        let what = format!("floor Laplace scale {name}");
        assert_chi_square_fits(&s.counts, n, &bins, &what);
        // floor(L) = G or -1 - G with equal probability: mean -1/2,
        // E[X^2] = E[G^2] + E[G] + 1/2.
        let m = q / (1.0 - q);
        let var_g = q / ((1.0 - q) * (1.0 - q));
        let var = var_g + m * m + m + 0.5 - 0.25;
        assert_mean(&s, n, -0.5, var, &what);
        // P(floor(L) >= m) = P(L >= m) for integer m.
        let b = scale.as_f64();
        for m in [-3i64, 0, 1, 5] {
            let want = if m >= 0 {
                0.5 * (-(m as f64) / b).exp()
            } else {
                1.0 - 0.5 * ((m as f64) / b).exp()
            };
            let hits: u64 = s.counts.range(m..).map(|(_, c)| *c).sum();
            assert_wilson(hits, n, want, &format!("{what}: P(X >= {m})"));
        }
    }
}

/// The goodness-of-fit test has power: samples at scale 10/3 are rejected
/// against the pmf for scale 3, and discrete Laplace samples are rejected
/// against the floor-Laplace pmf.
#[test]
fn chi_square_rejects_wrong_distribution() {
    let n = DRAWS;
    let scale = ExactScale::new(10, 3).expect("valid");
    let s = draw(n, 500, |r| sample_discrete_laplace(r, scale));
    let q3 = (-1.0f64 / 3.0).exp();
    let bins = build_bins(n, &|k| dlap_pmf(q3, k), &|k| dlap_upper(q3, k), &|k| {
        dlap_lower(q3, k)
    });
    let (stat, df) = chi_square(&s.counts, n, &bins);
    assert!(stat > chi_square_critical_1e6(df), "stat {stat} df {df}");
    let q = q_of(scale);
    let bins = build_bins(n, &|k| floor_pmf(q, k), &|k| floor_upper(q, k), &|k| {
        floor_lower(q, k)
    });
    let (stat, df) = chi_square(&s.counts, n, &bins);
    assert!(stat > chi_square_critical_1e6(df), "stat {stat} df {df}");
}

#[test]
fn samplers_handle_extreme_scales() {
    let mut rng = TestRng::seed_from_u64(6);
    let tiny = ExactScale::new(1, u64::MAX).expect("valid");
    let huge = ExactScale::new(u64::MAX, 1).expect("valid");
    for _ in 0..200 {
        assert_eq!(sample_discrete_laplace(&mut rng, tiny), 0);
        assert_eq!(sample_geometric(&mut rng, tiny), 0);
        let f = sample_floor_laplace(&mut rng, tiny);
        assert!(f == 0 || f == -1);
        // Must not panic or overflow.
        let _ = sample_discrete_laplace(&mut rng, huge);
        let _ = sample_floor_laplace(&mut rng, huge);
    }
    let s = ExactScale::from_sensitivity_epsilon(1, 0.3).expect("valid");
    let v: i64 = (0..1000)
        .map(|_| sample_discrete_laplace(&mut rng, s).abs())
        .sum();
    // Mean |X| ≈ 2q/(1-q^2) ≈ 3.3 for scale 10/3.
    assert!(v > 2000 && v < 5000, "{v}");
}

#[test]
fn seeded_draws_are_reproducible() {
    let scale = ExactScale::new(10, 3).expect("valid");
    let a: Vec<i64> = {
        let mut r = TestRng::seed_from_u64(9);
        (0..100)
            .map(|_| sample_discrete_laplace(&mut r, scale))
            .collect()
    };
    let b: Vec<i64> = {
        let mut r = TestRng::seed_from_u64(9);
        (0..100)
            .map(|_| sample_discrete_laplace(&mut r, scale))
            .collect()
    };
    assert_eq!(a, b);
}

#[test]
fn error_display_names_parameter() {
    let e = NoiseError::invalid("epsilon", "must be > 0, got -1");
    assert_eq!(
        e.to_string(),
        "invalid parameter epsilon: must be > 0, got -1"
    );
    let _: &dyn std::error::Error = &e;
}

/// Two-sided count noise: a count of 10 in D and 11 in D', released as
/// `count + Z` with `Z` discrete Laplace of scale 1/ε (sensitivity 1). Outside the
/// interval between the two counts every output's probability ratio is exactly e^ε, so
/// the claim is tight; the power check fails the same samples at 0.9·ε.
#[test]
fn audit_two_sided_count_noise() {
    use crate::testing::audit::{
        assert_private, assert_violated, audit, histogram, integer_bin, ALPHA,
    };
    let epsilon = 1.0;
    let scale = ExactScale::from_sensitivity_epsilon(1, epsilon).expect("valid");
    let released = |count: i64, seed: u64| {
        histogram(24, 200_000, seed, |rng| {
            integer_bin(count + sample_discrete_laplace(rng, scale), 0, 21)
        })
    };
    let d = released(10, 31);
    let d2 = released(11, 32);
    let report = audit(&d, &d2, epsilon, 0.0, ALPHA);
    assert_private(&report, "discrete Laplace count");
    assert!(report.max_ratio_lower_bound > 2.5, "{report}");
    assert_violated(
        &audit(&d, &d2, 0.9 * epsilon, 0.0, ALPHA),
        "count power check",
    );
}

/// A bad privacy parameter becomes a planning error and bad data found while executing an
/// execution error, each with the error's message: what the callers produced by hand.
#[test]
fn converts_to_datafusion_error_by_kind() {
    use datafusion::error::DataFusionError;
    let bad_epsilon = ExactScale::from_sensitivity_epsilon(1, -1.0).expect_err("rejected");
    let message = bad_epsilon.to_string();
    match DataFusionError::from(bad_epsilon) {
        DataFusionError::Plan(m) => assert_eq!(m, message),
        other => panic!("expected a planning error, got {other:?}"),
    }
    let bad_scores = NoiseError::invalid_data("scores", "must not be empty");
    assert_eq!(
        bad_scores.to_string(),
        "invalid parameter scores: must not be empty"
    );
    match DataFusionError::from(bad_scores) {
        DataFusionError::Execution(m) => {
            assert_eq!(m, "invalid parameter scores: must not be empty")
        }
        other => panic!("expected an execution error, got {other:?}"),
    }
}
