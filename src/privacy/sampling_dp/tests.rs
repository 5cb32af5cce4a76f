use std::cmp::Ordering;

use num_bigint::BigUint;

use super::*;

const DELTAS: [f64; 9] = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9];

fn minimal_k(epsilon: f64, delta: f64) -> u64 {
    calibrate(epsilon, delta, false).unwrap().k_minimal
}

#[test]
fn beta_matches_the_paper_and_is_conservative() {
    for (eps, expected) in [(1.0, 0.6321206), (0.9, 0.5934303)] {
        let beta = beta_for(eps).unwrap();
        assert!((beta - expected).abs() < 5e-8, "{eps}: {beta}");
        // Never above the true 1 - e^-eps, and exactly a multiple of 2^-64.
        assert!(beta <= 1.0 - (-eps).exp());
        assert_eq!(beta_numerator(beta) as f64 / 2f64.powi(64), beta);
    }
    assert!(beta_for(0.0).is_err());
    assert!(beta_for(f64::NAN).is_err());
    assert!(beta_for(1e-30)
        .unwrap_err()
        .to_string()
        .contains("too small"));
    assert!(calibrate(50.0, 1e-6, false)
        .unwrap_err()
        .to_string()
        .contains("too large"));
}

#[test]
fn exact_integer_helpers() {
    assert_eq!(floor_mul(0.75, 4), 3);
    assert_eq!(floor_mul(0.75, 3), 2);
    // 0.1 is slightly above 1/10, so 0.1 * 10 floors to 1.
    assert_eq!(floor_mul(0.1, 10), 1);
    // 0.3 is slightly below 3/10.
    assert_eq!(floor_mul(0.3, 10), 2);
    assert_eq!(ceil_div_minus_one(3, 0.75), Some(3));
    assert_eq!(ceil_div_minus_one(4, 0.75), Some(5));
}

/// docs/METHODS.md §2.11 test vectors: d'(δ) for ε = 1 and ε = 0.9 (β = β_max).
#[test]
fn minimal_k_matches_published_vectors() {
    let eps1 = [9, 21, 34, 47, 61, 74, 91, 104, 118];
    let eps09 = [7, 18, 32, 44, 58, 73, 87, 99, 113];
    for (i, &delta) in DELTAS.iter().enumerate() {
        assert_eq!(minimal_k(1.0, delta), eps1[i], "eps 1, delta {delta}");
        assert_eq!(minimal_k(0.9, delta), eps09[i], "eps 0.9, delta {delta}");
    }
}

/// ARX returns one more than the minimal k; `arx_compat` reproduces it and delivers a
/// smaller δ.
#[test]
fn arx_compat_adds_one() {
    for (delta, arx) in [(1e-5, 59), (1e-6, 74), (1e-7, 88)] {
        let c = calibrate(0.9, delta, true).unwrap();
        assert_eq!(c.k, arx);
        assert_eq!(c.k_minimal + 1, arx);
        let minimal = calibrate(0.9, delta, false).unwrap();
        assert!(c.delta_delivered <= minimal.delta_delivered);
        assert!(minimal.delta_delivered <= delta);
    }
    assert_eq!(calibrate(1.0, 1e-6, true).unwrap().k, 75);
}

/// Reliable computing (docs/METHODS.md §2.5; Bild et al. 2020, Table 2): for ε = ln 2 and
/// ln 3 the boundary term j = γn decides the result; the reliable k are the published ones
/// (ARX-compatible +1 included).
#[test]
fn reliable_k_for_irrational_epsilon() {
    let ln2 = [8, 20, 32, 44, 56, 68, 81, 95, 107];
    for (i, &delta) in DELTAS.iter().enumerate() {
        let c = calibrate(std::f64::consts::LN_2, delta, true).unwrap();
        assert_eq!(c.k, ln2[i], "ln 2, delta {delta}");
        assert!(c.delta_delivered <= delta);
    }
    let ln3 = 3f64.ln();
    assert_eq!(calibrate(ln3, 1e-5, true).unwrap().k, 66);
    assert_eq!(calibrate(ln3, 1e-6, true).unwrap().k, 82);
    for (delta, k) in [
        (1e-1, 10),
        (1e-2, 20),
        (1e-3, 35),
        (1e-4, 50),
        (1e-7, 92),
        (1e-8, 108),
        (1e-9, 123),
    ] {
        assert_eq!(minimal_k(ln3, delta), k, "ln 3, delta {delta}");
    }
}

/// docs/METHODS.md §2.11: ε = 1, δ = 1e-6, k = 74 has n_m = 85 and d = 8.995e-7; Li et al.'s
/// bound alone gives c_86 = 3.70e-2 for k = 75.
#[test]
fn intermediate_values() {
    let c = calibrate(1.0, 1e-6, false).unwrap();
    assert_eq!((c.k, c.n_m), (74, 85));
    assert!(
        (c.delta_delivered / 8.995e-7 - 1.0).abs() < 1e-3,
        "{}",
        c.delta_delivered
    );
    let mut calc = DeltaCalculator::new(c.beta, 1.0).unwrap();
    assert_eq!(calc.n_min(75).unwrap(), 86);
    let li = calc.chernoff_upper(86);
    assert!((li / 3.704e-2 - 1.0).abs() < 1e-3, "{li}");
    // The enclosure is tight.
    let d = calc.delta(74).unwrap().delta;
    assert!(d.hi() / d.lo() - 1.0 < 1e-12, "{d:?}");
}

/// Theorem 11 (SafePub Table 1; docs/METHODS.md §2.9, §2.11): ε_anon = 1 with ARX's
/// k = 62/75/92 gives δ' at ε' = 2.
#[test]
fn smoothness_vectors() {
    let beta = beta_for(1.0).unwrap();
    for (k, expected) in [(62, 1.05e-9), (75, 1.53e-11), (92, 4.4e-14)] {
        let d = smoothness_delta(k, beta, 2.0).unwrap();
        assert!((d / expected - 1.0).abs() < 0.01, "k {k}: {d}");
        // Smoothness: d is non-increasing in ε'.
        assert!(
            d <= DeltaCalculator::new(beta, 1.0)
                .unwrap()
                .delta(k)
                .unwrap()
                .delta
                .hi()
        );
    }
}

/// d is non-increasing in k, and the chosen k is minimal.
#[test]
fn delta_is_monotone_and_k_minimal() {
    let beta = beta_for(0.5).unwrap();
    let mut calc = DeltaCalculator::new(beta, 0.5).unwrap();
    let mut previous = f64::INFINITY;
    for k in 1..80 {
        let d = calc.delta(k).unwrap().delta.hi();
        assert!(d <= previous * (1.0 + 1e-12), "k {k}");
        previous = d;
    }
    let (k, bound) = calc.minimal_k(1e-4).unwrap();
    assert!(bound.delta.hi() <= 1e-4);
    assert!(calc.delta(k - 1).unwrap().delta.hi() > 1e-4);
}

#[test]
fn rejects_bad_parameters() {
    assert!(DeltaCalculator::new(0.0, 1.0).is_err());
    assert!(DeltaCalculator::new(1.0, 1.0).is_err());
    // ε below -ln(1 - β) = ln 2.
    let err = DeltaCalculator::new(0.5, 0.6).unwrap_err().to_string();
    assert!(err.contains("Theorem 3"), "{err}");
    assert!(DeltaCalculator::new(0.5, 0.7).is_ok());
    let mut calc = DeltaCalculator::new(beta_for(1.0).unwrap(), 1.0).unwrap();
    assert!(calc.minimal_k(0.0).is_err());
    assert!(calc.minimal_k(1.0).is_err());
}

// ---------------------------------------------------------------------------------------
// Slow exact reference: d(k, β, γ) with big integers for β = p / 2^s and γ an exact double.
// ---------------------------------------------------------------------------------------

/// β = p / 2^s exactly.
fn dyadic(beta: f64) -> (BigUint, u32) {
    let (m, e) = decompose(beta);
    (BigUint::from(m), e.unsigned_abs())
}

/// `a_n · 2^(s n)` = Σ_{j > γ n} C(n, j) p^j q^(n − j), with q = 2^s − p.
fn exact_tail(n: u64, p: &BigUint, s: u32, gamma: f64) -> BigUint {
    let q = (BigUint::from(1u8) << s) - p;
    let start = floor_mul(gamma, n) + 1;
    // Term j = n is p^n; walk down: term_{j-1} = term_j · j q / ((n − j + 1) p).
    let mut term = p.pow(n as u32);
    let mut sum = BigUint::ZERO;
    let mut j = n;
    loop {
        if j < start {
            break;
        }
        sum += &term;
        if j == 0 {
            break;
        }
        term = term * BigUint::from(j) * &q / (BigUint::from(n - j + 1) * p);
        j -= 1;
    }
    sum
}

/// Compares `num / 2^den_log2` with the double `x >= 0`.
fn cmp_dyadic(num: &BigUint, den_log2: u64, x: f64) -> Ordering {
    if x == 0.0 {
        return num.cmp(&BigUint::ZERO);
    }
    let (m, e) = decompose(x);
    // num / 2^d  vs  m · 2^e   ⇔   num  vs  m · 2^(e + d)
    let shift = i64::from(e) + den_log2 as i64;
    if shift >= 0 {
        num.cmp(&(BigUint::from(m) << shift as u64))
    } else {
        (num << (-shift) as u64).cmp(&BigUint::from(m))
    }
}

/// Exact `max_{n_m <= n <= n_max} a_n` as (numerator, denominator log2) plus its index.
fn exact_delta(k: u64, beta: f64, gamma: f64, n_max: u64) -> (BigUint, u64) {
    let (p, s) = dyadic(beta);
    let n_m = ceil_div_minus_one(k, gamma).unwrap().max(1);
    let mut best = (BigUint::ZERO, 0u64);
    for n in n_m..=n_max {
        let a = exact_tail(n, &p, s, gamma);
        // Compare a / 2^(s n) with best.0 / 2^(best.1) by cross-shifting.
        let den = u64::from(s) * n;
        let (lhs, rhs) = if den >= best.1 {
            (a.clone(), &best.0 << (den - best.1))
        } else {
            (&a << (best.1 - den), best.0.clone())
        };
        if lhs > rhs {
            best = (a, den);
        }
    }
    best
}

/// The production enclosure contains the exact δ, for exactly given γ, on small
/// parameters including the rational case β = 1/2, γ = 3/4 where the boundary term
/// j = γn matters; and the exact minimal k equals the production one.
#[test]
fn delta_matches_exact_reference() {
    let cases = [
        (0.5, 0.75),
        (beta_for(1.0).unwrap(), 1.0 - (-2.0f64).exp()),
        (1.0 / 3.0, 0.6),
    ];
    for (beta, gamma) in cases {
        let mut calc = DeltaCalculator::from_gamma(beta, Interval::point(gamma)).unwrap();
        for k in [1u64, 2, 5, 9, 14, 20] {
            let bound = calc.delta(k).unwrap();
            // Reference: a generous fixed range well beyond the stopping index.
            let n_max = bound.n_stop * 2 + 40;
            let (num, den) = exact_delta(k, beta, gamma, n_max);
            assert_ne!(
                cmp_dyadic(&num, den, bound.delta.lo()),
                Ordering::Less,
                "beta {beta} gamma {gamma} k {k}: lo above exact"
            );
            assert_ne!(
                cmp_dyadic(&num, den, bound.delta.hi()),
                Ordering::Greater,
                "beta {beta} gamma {gamma} k {k}: hi below exact"
            );
            assert!(bound.delta.hi() / bound.delta.lo() - 1.0 < 1e-12);
        }
        for delta in [0.2, 0.05, 0.01] {
            let (k, _) = calc.minimal_k(delta).unwrap();
            let reference = (1..)
                .find(|&k| {
                    let n_stop = calc.delta(k).unwrap().n_stop;
                    let (num, den) = exact_delta(k, beta, gamma, n_stop * 2 + 40);
                    cmp_dyadic(&num, den, delta) != Ordering::Greater
                })
                .unwrap();
            assert_eq!(k, reference, "beta {beta} gamma {gamma} delta {delta}");
        }
    }
}

/// Without the boundary term (γ rounded up past 3/4) δ is smaller: the reliable
/// computation includes it whenever γn might be an integer.
#[test]
fn boundary_term_is_included_when_gamma_is_uncertain() {
    let beta = 0.5;
    let exact = DeltaCalculator::from_gamma(beta, Interval::point(0.75))
        .unwrap()
        .tail(8)
        .unwrap();
    // Interval straddling 3/4: the start is ⌊γ_lo · 8⌋ + 1 = 6, the boundary term j = 6
    // is included, so a_8 = P(X_8 >= 6) > P(X_8 >= 7).
    let uncertain =
        DeltaCalculator::from_gamma(beta, Interval::new(0.75f64.next_down(), 0.75f64.next_up()))
            .unwrap()
            .tail(8)
            .unwrap();
    // P(X_8 >= 7) = 9/256; P(X_8 >= 6) = 37/256.
    assert!(exact.contains(9.0 / 256.0), "{exact:?}");
    assert!(uncertain.contains(37.0 / 256.0), "{uncertain:?}");
}
