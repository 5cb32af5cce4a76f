//! Pitman's two-parameter Poisson–Dirichlet model for uniqueness, after Hoshino (2001)
//! (ARX `ModelPitman`).

use super::gamma::{arx_digamma, arx_trigamma, gamma, ln_gamma};
use super::solver::newton_raphson;
use super::{Histogram, SolverConfig};

/// Pitman's estimate (ARX `ModelPitman`): maximum-likelihood estimates of θ and α of the
/// Pitman sampling formula, solving
/// `Σ_{i=1}^{u−1} 1/(θ+iα) − Σ_{i=1}^{n−1} 1/(θ+i) = 0` and
/// `Σ_{i=1}^{u−1} i/(θ+iα) − Σ_{j≥2} c_j Σ_{k=1}^{j−1} 1/(k−α) = 0`
/// (closed forms via digamma/trigamma first, checked against and if need be replaced by the
/// direct sums), then `N^α · Γ(θ+1)/Γ(θ+α)` population uniques.
pub(super) fn pitman(hist: &Histogram, population: f64, config: &SolverConfig) -> f64 {
    let c1 = hist.classes_of_size(1) as f64;
    let mut c2 = hist.classes_of_size(2) as f64;
    let u = hist.classes as f64;
    let n = hist.records as f64;
    let p = population;

    // Initial guess (ModelPitman constructor).
    c2 = if c2 != 0.0 { c2 } else { 1.0 };
    let c = (c1 * (c1 - 1.0)) / c2;
    let t = ((n * u * c) - (c1 * (n - 1.0) * ((2.0 * u) + c)))
        / (((2.0 * c1 * u) + (c1 * c)) - (n * c));
    let a = ((t * (c1 - n)) + ((n - 1.0) * c1)) / (n * u);

    let classes = &hist.entries;
    let constraint = |theta: f64, _alpha: f64| theta >= 0.0;
    let mut result = newton_raphson(
        |x, y| pitman_closed(classes, u, n, x, y),
        constraint,
        (t, a),
        config,
    );
    let use_iterative = if result.0.is_nan() || result.1.is_nan() {
        true
    } else {
        let test = pitman_iterative(classes, u, n, result.0, result.1, false).0;
        test[0].is_nan()
            || test[1].is_nan()
            || test[0].abs() > config.accuracy
            || test[1].abs() > config.accuracy
    };
    if use_iterative {
        result = newton_raphson(
            |x, y| pitman_iterative(classes, u, n, x, y, true),
            constraint,
            (t, a),
            config,
        );
    }
    pitman_result(result.0, result.1, p)
}

/// `ModelPitman.getMasterFunctionClosed`: the likelihood equations and their Jacobian in
/// closed form (digamma / trigamma), term by term as in ARX.
pub(super) fn pitman_closed(
    classes: &[(u64, u64)],
    u: f64,
    n: f64,
    t: f64,
    a: f64,
) -> ([f64; 2], [f64; 4]) {
    let val0 = u - 1.0;
    let val1 = arx_digamma(val0 + (t / a) + 1.0);
    let val2 = arx_trigamma((a + t + (a * val0)) / a);
    let val3 = arx_trigamma((t / a) + 1.0);
    let val4 = arx_digamma((t / a) + 1.0);
    let val5 = a * a;

    let d1 = (val3 - val2) / val5;
    let d5 = (((a * val1) + (t * val2)) - (a * val4) - (t * val3)) / (val5 * a);
    let d3 = (((((val5 * val0) - (t * t * val2)) + (t * t * val3)) - (2.0 * a * t * val1))
        + (2.0 * a * t * val4))
        / (val5 * val5);
    let o1 = (val1 - val4) / a;
    let o3 = ((-t * val1) + (a * val0) + (t * val4)) / (a * a);
    let o2 = arx_digamma(n + t) - arx_digamma(t + 1.0);
    let d2 = arx_trigamma(t + 1.0) - arx_trigamma(n + t);

    let mut d4 = 0.0;
    let mut o4 = 0.0;
    let val6 = arx_digamma(1.0 - a);
    let val7 = arx_trigamma(1.0 - a);
    for &(key, value) in classes {
        if key != 1 {
            let key = key as f64;
            let value = value as f64;
            d4 += value * (val7 - arx_trigamma(key - a));
            o4 += value * (arx_digamma(key - a) - val6);
        }
    }
    (
        [o1 - o2, o3 - o4],
        [d2 - d1, 0.0 - d5, 0.0 - d5, 0.0 - d3 - d4],
    )
}

/// `ModelPitman.getMasterFunctionIterative` (and, without derivatives,
/// `getObjectFunctionsIterative`): the likelihood equations as direct sums.
pub(super) fn pitman_iterative(
    classes: &[(u64, u64)],
    u: f64,
    n: f64,
    t: f64,
    a: f64,
    derivatives: bool,
) -> ([f64; 2], [f64; 4]) {
    let (mut d1, mut d2, mut d3, mut d4, mut d5) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut o1, mut o2, mut o3, mut o4) = (0.0, 0.0, 0.0, 0.0);

    let mut i = 1u64;
    while (i as f64) < u {
        let fi = i as f64;
        let val0 = t + (fi * a);
        let val1 = 1.0 / val0;
        o1 += val1;
        o3 += fi * val1;
        if derivatives {
            let val3 = 1.0 / (val0 * val0);
            let val4 = fi * val3;
            d1 += val3;
            d5 += val4;
            d3 += fi * val4;
        }
        i += 1;
    }
    for &(key, value) in classes {
        if key != 1 {
            let mut v1 = 0.0;
            let mut v2 = 0.0;
            let mut j = 1u64;
            while j < key {
                let val3 = j as f64 - a;
                if derivatives {
                    v1 += 1.0 / (val3 * val3);
                }
                v2 += 1.0 / val3;
                j += 1;
            }
            d4 += value as f64 * v1;
            o4 += value as f64 * v2;
        }
    }
    let mut i = 1u64;
    while (i as f64) < n {
        let val0 = t + i as f64;
        if derivatives {
            d2 += 1.0 / (val0 * val0);
        }
        o2 += 1.0 / val0;
        i += 1;
    }
    (
        [o1 - o2, o3 - o4],
        [d2 - d1, 0.0 - d5, 0.0 - d5, 0.0 - d3 - d4],
    )
}

/// `ModelPitman.getResult`: `N^α · Γ(θ+1)/Γ(θ+α)`, computed once through log-gamma and
/// once through gamma; each is kept only if it lies in [0, N], and the larger is used.
pub(super) fn pitman_result(t: f64, a: f64, p: f64) -> f64 {
    if a.is_nan() || t.is_nan() || a == 0.0 {
        return f64::NAN;
    }
    let keep = |v: f64| if v >= 0.0 && v <= p { v } else { f64::NAN };
    let val1 = keep((ln_gamma(t + 1.0) - ln_gamma(t + a)).exp() * p.powf(a));
    let val2 = keep((gamma(t + 1.0) / gamma(t + a)) * p.powf(a));
    match (val1.is_nan(), val2.is_nan()) {
        (true, true) => f64::NAN,
        (false, false) => val1.max(val2),
        (true, false) => val2,
        (false, true) => val1,
    }
}
