use super::gamma::*;
use super::solver::*;
use super::zayatz::*;
use super::*;

fn cfg() -> SolverConfig {
    SolverConfig::arx_default().without_time_limits()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-300)
}

/// The class-size histogram of ARX's `data/adult.csv` (30,162 records) on all nine
/// attributes, which `TestRiskMetrics.testDecisionRule2` uses as quasi-identifiers.
const ADULT: [(u64, u64); 34] = [
    (1, 15512),
    (2, 2098),
    (3, 754),
    (4, 375),
    (5, 189),
    (6, 155),
    (7, 97),
    (8, 73),
    (9, 39),
    (10, 37),
    (11, 29),
    (12, 18),
    (13, 23),
    (14, 14),
    (15, 15),
    (16, 9),
    (17, 11),
    (18, 10),
    (19, 10),
    (20, 5),
    (21, 3),
    (22, 4),
    (23, 3),
    (24, 2),
    (25, 1),
    (26, 3),
    (27, 5),
    (29, 1),
    (30, 2),
    (32, 1),
    (34, 1),
    (35, 1),
    (36, 1),
    (45, 1),
];

/// ARX's `compareUniqueness`: equality on four decimal digits, by truncation.
fn arx_digits(v: f64) -> i64 {
    (v * 10000.0) as i64
}

#[test]
fn adult_matches_arx_test_risk_metrics() {
    let n = 30162u64;
    assert_eq!(ADULT.iter().map(|&(i, c)| i * c).sum::<u64>(), n);
    // TestRiskMetrics.testDecisionRule2, sampling fraction 0.1: Pitman 0.27684993883653597
    // or, when Pitman does not converge, Zayatz 0.3207402393466189.
    let r = estimate_from_sampling_fraction_with(&ADULT, 0.1, &cfg()).unwrap();
    assert_eq!(r.population_size, 301_620);
    let share = r.share(r.dankar).unwrap();
    match r.dankar_model {
        PopulationUniquenessModel::Pitman => {
            assert_eq!(arx_digits(share), arx_digits(0.276_849_938_836_535_97))
        }
        PopulationUniquenessModel::Zayatz => {
            assert_eq!(arx_digits(share), arx_digits(0.320_740_239_346_618_9))
        }
        other => panic!("unexpected model {other:?}"),
    }
    // Zayatz's number is the same whichever model the rule picks.
    assert_eq!(
        arx_digits(r.share(r.zayatz).unwrap()),
        arx_digits(0.320_740_239_346_618_9)
    );
    // Sampling fraction 0.2: 0.3577099234829125.
    let r = estimate_from_sampling_fraction_with(&ADULT, 0.2, &cfg()).unwrap();
    assert_eq!(
        arx_digits(r.share(r.dankar).unwrap()),
        arx_digits(0.357_709_923_482_912_5)
    );
    // Sampling fraction 0.01: 0.1446083531167384.
    let r = estimate_from_sampling_fraction_with(&ADULT, 0.01, &cfg()).unwrap();
    assert_eq!(
        arx_digits(r.share(r.dankar).unwrap()),
        arx_digits(0.144_608_353_116_738_4)
    );
    // Sampling fraction 1: 0.5142895033485844 = sample uniqueness 15512 / 30162.
    let r = estimate_from_sampling_fraction_with(&ADULT, 1.0, &cfg()).unwrap();
    assert_eq!(
        arx_digits(r.share(r.dankar).unwrap()),
        arx_digits(0.514_289_503_348_584_4)
    );
}

#[test]
fn zayatz_hand_computed() {
    // Histogram: two classes of size 1, one of size 2 → n = 4, u = 3, c1 = 2; N = 8.
    // P_1(1) = n/N = 1/2.
    // P_2(1) = C(2,1)·C(6,3)/C(8,4) = 2·20/70 = 4/7.
    // Σ (c_i/u)·P_i(1) = (2/3)(1/2) + (1/3)(4/7) = 1/3 + 4/21 = 11/21.
    // P(unique | sample unique) = (2/3)(1/2) / (11/21) = 7/11.
    // Estimate = c1 · 7/11 / (n/N) = 2 · 7/11 · 2 = 28/11.
    let r = estimate_from_population_size_with(&[(1, 2), (2, 1)], 8, &cfg()).unwrap();
    assert!(close(r.zayatz.uniques().unwrap(), 28.0 / 11.0, 1e-14));
    assert!(close(r.share(r.zayatz).unwrap(), 28.0 / 11.0 / 8.0, 1e-14));
}

#[test]
fn hypergeometric_matches_binomial_coefficients() {
    fn binom(n: u64, k: u64) -> f64 {
        if k > n {
            return 0.0;
        }
        (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
    }
    for population in 1..25u64 {
        for n in 1..=population {
            for size in 1..=n {
                let direct = size as f64 * binom(population - size, n - 1) / binom(population, n);
                let ours = hypergeometric_one(population as f64, size, n as f64);
                assert!(
                    (direct - ours).abs() <= 1e-12,
                    "N={population} n={n} K={size}: {direct} vs {ours}"
                );
            }
        }
    }
}

#[test]
fn census_gives_sample_uniques() {
    // π = 1: the sample is the population, Zayatz's P_i(1) is 1 for i = 1 and 0 otherwise,
    // so the estimate is exactly c1; Pitman and SNB do not apply.
    let hist = [(1, 3), (2, 2), (5, 1)];
    let r = estimate_from_sampling_fraction_with(&hist, 1.0, &cfg()).unwrap();
    assert_eq!(r.population_size, 12);
    assert_eq!(r.zayatz, Estimate::Uniques(3.0));
    assert_eq!(r.pitman, Estimate::NotApplicable);
    assert_eq!(r.snb, Estimate::NotApplicable);
    assert_eq!(r.dankar, Estimate::Uniques(3.0));
    assert_eq!(r.dankar_model, PopulationUniquenessModel::Zayatz);
    let r = estimate_from_population_size_with(&hist, 12, &cfg()).unwrap();
    assert_eq!(r.dankar, Estimate::Uniques(3.0));
}

#[test]
fn no_sample_uniques_gives_zero() {
    let r = estimate_from_sampling_fraction_with(&[(2, 5), (3, 1)], 0.05, &cfg()).unwrap();
    for e in [r.zayatz, r.pitman, r.snb, r.dankar] {
        assert_eq!(e, Estimate::Uniques(0.0));
    }
    assert_eq!(r.dankar_model, PopulationUniquenessModel::NoSampleUniques);
    // Empty histogram: no records, no uniques, population 0, share undefined.
    let r = estimate_from_sampling_fraction_with(&[], 0.5, &cfg()).unwrap();
    assert_eq!(r.dankar, Estimate::Uniques(0.0));
    assert_eq!(r.population_size, 0);
    assert_eq!(r.share(r.dankar), None);
}

#[test]
fn all_classes_unique() {
    // Every record unique: Zayatz's P(unique | sample unique) is 1, so the estimate is
    // c1 / π = N. Pitman/SNB may or may not converge, but the rule returns a number.
    let r = estimate_from_sampling_fraction_with(&[(1, 100)], 0.1, &cfg()).unwrap();
    assert!(close(r.zayatz.uniques().unwrap(), 1000.0, 1e-12));
    assert!(r.dankar.uniques().is_some());
    let r = estimate_from_sampling_fraction_with(&[(1, 100)], 0.5, &cfg()).unwrap();
    assert!(close(r.zayatz.uniques().unwrap(), 200.0, 1e-12));
    assert!(r.dankar.uniques().is_some());
}

#[test]
fn degenerate_inputs_do_not_panic() {
    let hists: [&[(u64, u64)]; 7] = [
        &[(1, 1)],
        &[(1, 1), (2, 1)],
        &[(1, 2)],
        &[(1, 1), (1000, 1)],
        &[(1, 5), (2, 0), (3, 1)],
        &[(1, 20_000)],
        &[(1, 3), (4, 2), (4, 1)],
    ];
    for hist in hists {
        for pi in [1e-9, 0.001, 0.1, 0.1000001, 0.3, 0.999, 1.0] {
            let r = estimate_from_sampling_fraction_with(hist, pi, &cfg()).unwrap();
            for e in [r.zayatz, r.pitman, r.snb, r.dankar] {
                if let Estimate::Uniques(v) = e {
                    assert!(v.is_finite() && v >= 0.0);
                }
            }
        }
    }
}

#[test]
fn invalid_inputs_are_errors() {
    let h = [(1, 2), (2, 1)];
    for pi in [0.0, -0.1, 1.0000001, f64::NAN, f64::INFINITY] {
        assert_eq!(
            estimate_from_sampling_fraction(&h, pi),
            Err(PopulationError::InvalidSamplingFraction)
        );
    }
    assert_eq!(
        estimate_from_population_size(&h, 3),
        Err(PopulationError::PopulationSmallerThanSample)
    );
    assert_eq!(
        estimate_from_population_size(&[(0, 1)], 3),
        Err(PopulationError::ZeroClassSize)
    );
    assert_eq!(
        estimate_from_population_size(&[(u64::MAX, 2)], 3),
        Err(PopulationError::Overflow)
    );
    // Zero counts and size-0 entries with zero count are ignored; sizes are merged.
    let a = estimate_from_population_size_with(&[(1, 2), (0, 0), (2, 0), (2, 1)], 8, &cfg());
    let b = estimate_from_population_size_with(&[(2, 1), (1, 1), (1, 1)], 8, &cfg());
    assert_eq!(a, b);
}

#[test]
fn population_size_rounding_follows_arx() {
    assert_eq!(population_size_from_sampling_fraction(3, 0.7), Ok(4));
    assert_eq!(
        population_size_from_sampling_fraction(30162, 0.01),
        Ok(3_016_200)
    );
    assert_eq!(population_size_from_sampling_fraction(0, 0.5), Ok(0));
}

#[test]
fn special_functions() {
    let euler = 0.577_215_664_901_532_9;
    assert!(close(arx_digamma(1.0), -euler, 1e-12));
    assert!(close(arx_digamma(0.5), -euler - 2.0 * 2f64.ln(), 1e-12));
    assert!(close(arx_digamma(100.0), 4.600_161_852_738_087, 1e-12));
    assert!(close(arx_digamma(-0.5), 0.036_489_973_978_576_52, 1e-10));
    // ARX's trigamma is exact from 12 on (ψ′(12) = π²/6 − Σ_{k=1}^{11} 1/k²) ...
    let exact12 = TRIGAMMA_1 - (1..12).map(|k| 1.0 / (k * k) as f64).sum::<f64>();
    assert!(close(arx_trigamma(12.0), exact12, 1e-12));
    // ... and below 12 only sums the recurrence up to 8 (ARX Gamma.trigamma).
    let arx1 = (1..8).map(|k| 1.0 / (k * k) as f64).sum::<f64>();
    assert!(close(arx_trigamma(1.0), arx1, 1e-15));
    // Gamma and log-gamma.
    assert!(close(gamma(5.0), 24.0, 1e-13));
    assert!(close(gamma(0.5), std::f64::consts::PI.sqrt(), 1e-13));
    assert!(close(
        gamma(-0.5),
        -2.0 * std::f64::consts::PI.sqrt(),
        1e-13
    ));
    assert!(gamma(-2.0).is_nan() && gamma(0.0).is_nan());
    assert!(close(ln_gamma(0.1), 2.252_712_651_734_206, 1e-13));
    assert!(close(ln_gamma(1000.0), 5_905.220_423_209_181, 1e-13));
    assert!(ln_gamma(0.0).is_nan() && ln_gamma(-1.5).is_nan());
}

#[test]
fn newton_raphson_finds_simple_root() {
    // x² + y² = 2, x − y = 0 → (1, 1) from (2, 0.5).
    let root = newton_raphson(
        |x, y| ([x * x + y * y - 2.0, x - y], [2.0 * x, 2.0 * y, 1.0, -1.0]),
        |_, _| true,
        (2.0, 0.5),
        &cfg(),
    );
    assert!(close(root.0, 1.0, 1e-6) && close(root.1, 1.0, 1e-6));
    // No root: x² + 1 = 0 → NaN after all tries.
    let none = newton_raphson(
        |x, y| ([x * x + 1.0, y], [2.0 * x, 0.0, 0.0, 1.0]),
        |_, _| true,
        (1.0, 1.0),
        &cfg(),
    );
    assert!(none.0.is_nan() && none.1.is_nan());
}

#[test]
fn arx_start_values() {
    let c = SolverConfig::arx_default();
    assert_eq!(c.start_values.len(), 16);
    assert_eq!(c.start_values[0], (0.0, 0.0));
    assert!(close(c.start_values[15].0, 0.99, 1e-12));
}
