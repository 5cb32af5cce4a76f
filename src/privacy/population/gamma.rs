//! Digamma, trigamma and the gamma function as ARX computes them
//! (`org.deidentifier.arx.risk.Gamma`; Lanczos for Γ).

const DIGAMMA_1: f64 = -0.577_215_664_901_532_9;
pub(super) const TRIGAMMA_1: f64 = std::f64::consts::PI * std::f64::consts::PI / 6.0;
const TETRAGAMMA_1: f64 = -2.0 * 1.202_056_903_159_594_2;
const LARGE_DIGAMMA: f64 = 12.0;
const LARGE_TRIGAMMA: f64 = 8.0;
const SMALL_DIGAMMA: f64 = 1e-6;
const SMALL_TRIGAMMA: f64 = 1e-4;
const S3: f64 = 1.0 / 12.0;
const S4: f64 = 1.0 / 120.0;
const S5: f64 = 1.0 / 252.0;
const S6: f64 = 1.0 / 240.0;
const S7: f64 = 1.0 / 132.0;
const B2: f64 = 1.0 / 6.0;
const B4: f64 = -1.0 / 30.0;
const B6: f64 = 1.0 / 42.0;
const B8: f64 = -1.0 / 30.0;
const B10: f64 = 5.0 / 66.0;

/// Digamma ψ(x) as ARX's `Gamma.digamma` (a port of Minka's Lightspeed toolbox 2.7):
/// reflection for x < 0, Taylor series for x ≤ 1e-6, recurrence up to 12 and de Moivre's
/// asymptotic expansion.
pub(super) fn arx_digamma(x: f64) -> f64 {
    if x.is_infinite() || x.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x < 0.0 {
        return arx_digamma(1.0 - x) + std::f64::consts::PI / (-std::f64::consts::PI * x).tan();
    }
    if x <= SMALL_DIGAMMA {
        return (DIGAMMA_1 - (1.0 / x)) + (TRIGAMMA_1 * x);
    }
    let mut x = x;
    let mut result = 0.0;
    while x < LARGE_DIGAMMA {
        result -= 1.0 / x;
        x += 1.0;
    }
    let mut r = 1.0 / x;
    result += x.ln() - (0.5 * r);
    r *= r;
    result -= r * (S3 - (r * (S4 - (r * (S5 - (r * (S6 - (r * S7))))))));
    result
}

/// Trigamma ψ′(x) exactly as ARX's `Gamma.trigamma` computes it. ARX reduces the argument
/// until it is at least 8 (`LARGE_TRIGAMMA`) but adds the asymptotic tail only when it is at
/// least 12 (`LARGE_DIGAMMA`); for arguments below 12 the result therefore lacks the tail
/// `ψ′(x+m)` and is too small. The Pitman solver only uses it in the Jacobian (the root is
/// checked against the exact equations), so the port keeps ARX's behaviour to follow the
/// same Newton path.
pub(super) fn arx_trigamma(x: f64) -> f64 {
    if x.is_infinite() || x.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x < 0.0 {
        let r = std::f64::consts::PI / (-std::f64::consts::PI * x).sin();
        return -arx_trigamma(1.0 - x) + (r * r);
    }
    if x <= SMALL_TRIGAMMA {
        return (1.0 / (x * x)) + TRIGAMMA_1 + (TETRAGAMMA_1 * x);
    }
    let mut x = x;
    let mut result = 0.0;
    while x < LARGE_TRIGAMMA {
        result += 1.0 / (x * x);
        x += 1.0;
    }
    if x >= LARGE_DIGAMMA {
        let r = 1.0 / (x * x);
        result +=
            (0.5 * r) + ((1.0 + (r * (B2 + (r * (B4 + (r * (B6 + (r * (B8 + (r * B10)))))))))) / x);
    }
    result
}

/// Lanczos coefficients (g = 7, n = 9).
const LANCZOS: [f64; 9] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];

/// ln Γ(x) for x ≥ 0.5 by the Lanczos approximation.
pub(super) fn ln_gamma_lanczos(x: f64) -> f64 {
    let x = x - 1.0;
    let mut sum = LANCZOS[0];
    for (i, &c) in LANCZOS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// ln Γ(x) for x > 0; NaN for x ≤ 0 or NaN, like Apache Commons Math `Gamma.logGamma`.
pub(crate) fn ln_gamma(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return f64::NAN;
    }
    if x.is_infinite() {
        return f64::INFINITY;
    }
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1−x) = π / sin(πx), positive for 0 < x < 1.
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln()
            - ln_gamma_lanczos(1.0 - x);
    }
    ln_gamma_lanczos(x)
}

/// Γ(x), including negative non-integers (reflection); NaN at 0 and the negative integers,
/// like Apache Commons Math `Gamma.gamma`.
pub(super) fn gamma(x: f64) -> f64 {
    if x.is_nan() || (x <= 0.0 && x == x.floor()) {
        return f64::NAN;
    }
    if x >= 0.5 {
        return ln_gamma_lanczos(x).exp();
    }
    let s = (std::f64::consts::PI * x).sin();
    std::f64::consts::PI / (s * gamma(1.0 - x))
}
