//! The ARX anonymization tool's own rounding and logarithm, which its metric values follow.

/// ARX keeps ten decimal digits of a per-attribute loss, rounding down.
pub(super) fn arx_round(x: f64) -> f64 {
    const FACTOR: f64 = 1e10;
    (x * FACTOR).floor() / FACTOR
}

/// ARX's value of one attribute's non-uniform entropy from its raw sum `Σ n·log2(p)`
/// (zero or negative): the negated sum rounded as ARX does, and exactly 0 for 0.
pub(super) fn entropy_value(raw: f64) -> f64 {
    if raw == 0.0 {
        0.0
    } else {
        arx_round(-raw)
    }
}

/// `log2` as ARX computes it.
pub(super) fn arx_log2(x: f64) -> f64 {
    x.ln() / std::f64::consts::LN_2
}
