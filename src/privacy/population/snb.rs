//! The slide negative binomial model of Chen & Keller-McNulty (1998) (ARX `ModelSNB`).

use super::solver::newton_raphson;
use super::{Histogram, SolverConfig};

/// The SNB estimate (ARX `ModelSNB`): the number of non-empty population classes `K` is
/// estimated with ARX's variant of Haas & Stokes' Shlosser estimator,
/// `K = u + c_1 · (Σ i f² (1−f²)^{i−1} c_i / Σ [(1−f)^i c_i (1+f)^i − 1])
///       · (Σ (1−f)^i c_i / Σ i f (1−f)^{i−1} c_i)²`,
/// then α and β solve ARX's two SNB moment equations for `c_1` and `c_2`, and the estimate
/// is `K · β^α`.
pub(super) fn snb(hist: &Histogram, f: f64, config: &SolverConfig) -> f64 {
    let c1 = hist.classes_of_size(1) as f64;
    let c2 = hist.classes_of_size(2) as f64;
    let k = snb_nonempty_classes(&hist.entries, hist.classes as f64, c1, f);
    let result = newton_raphson(
        |a, b| (snb_object(k, f, c1, c2, a, b), snb_derivatives(k, f, a, b)),
        |_, _| true,
        (1.0, 1.0),
        config,
    );
    k * result.1.powf(result.0)
}

/// `ModelSNB.estimateNonEmptyEquivalenceClasses`, literally (including its `− 1` inside
/// the second sum).
pub(super) fn snb_nonempty_classes(classes: &[(u64, u64)], u: f64, c1: f64, f: f64) -> f64 {
    let (mut var1, mut var2, mut var3, mut var4) = (0.0, 0.0, 0.0, 0.0);
    let var5 = f * f;
    for &(size, count) in classes {
        let val0 = size as f64;
        let val1 = count as f64;
        let val2 = (1.0 - f).powf(val0) * val1;
        var1 += val0 * var5 * (1.0 - var5).powf(val0 - 1.0) * val1;
        var2 += val2 * (1.0 + f).powf(val0) - 1.0;
        var3 += val2;
        var4 += val0 * f * (1.0 - f).powf(val0 - 1.0) * val1;
    }
    u + c1 * (var1 / var2) * (var3 / var4) * (var3 / var4)
}

/// `ModelSNB.getObjectFunction`, literally.
pub(super) fn snb_object(k: f64, f: f64, c1: f64, c2: f64, a: f64, b: f64) -> [f64; 2] {
    let dividend = (1.0 - f) * (1.0 - b);
    let x =
        k * f * (b / (1.0 - dividend)).powf(a) * (((a * dividend) / (1.0 - dividend)) + 1.0) - c1;
    let y = k * a * b.powf(a) * (f * f) * (1.0 - b) / 2.0
        * (1.0 - dividend).powf(a + 2.0)
        * (2.0 - (1.0 - a) * dividend)
        - c2;
    [x, y]
}

/// `ModelSNB.getDerivatives`, literally.
pub(super) fn snb_derivatives(k: f64, f: f64, a: f64, b: f64) -> [f64; 4] {
    let val0 = (b - 1.0) * (f - 1.0);
    let val1 = val0 - 1.0;
    let val2 = 1.0 - val0;
    let val3 = a * val0 / val1 - 1.0;
    let val4 = (-b / val1).powf(a);
    let val6 = f.powf(2.0);
    let val7 = b.powf(a);
    let val8 = val7 * val6 * k;
    let val9 = a * val8;
    let val10 = 2.0 * val2.powf(a + 2.0);
    let val11 = val1.powf(2.0);
    let val13 = f * k;
    let val14 = f - 1.0;
    let val15 = a - 1.0;
    let val16 = b - 1.0;
    let val17 = val15 * val0;
    let val18 = val6 * k;
    let val19 = val17 + 2.0;
    let val20 = val18 * val19;

    let x1 = -val13 * (-b / val1).ln() * val3 * val4 - (val13 * val4 * val0) / val1;
    let x2 = a * val13 * (1.0 / val1 - (b * val14) / val11) * val3 * (-b / val1).powf(val15)
        - val13 * val4 * ((a * val14) / val1 - (a * val16 * val14.powf(2.0)) / val11);
    let y1 = (val9 * val2.ln() * val19 * val16) / val10
        - (val9 * val16.powf(2.0) * val14) / val10
        - (val7 * val20 * val16) / val10
        - (a * val7 * val18 * b.ln() * val19 * val16) / val10;
    let y2 = -(val9 * val19) / val10
        - (a.powf(2.0) * b.powf(val15) * val20 * val16) / val10
        - (a * val7 * val18 * val17) / val10
        - (a * val7 * val20 * (a + 2.0) * val0) / (2.0 * val2.powf(a + 3.0));
    [x1, x2, y1, y2]
}
