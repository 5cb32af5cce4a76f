//! Checks of privacy parameters shared by the methods.

use datafusion::common::{plan_err, Result};

/// Checks that `epsilon` (the argument `name` of `function`) is a finite number `> 0`.
pub fn check_epsilon(function: &str, name: &str, epsilon: f64) -> Result<()> {
    if epsilon.is_finite() && epsilon > 0.0 {
        Ok(())
    } else {
        plan_err!("{function}(): {name} must be a positive finite number, got {epsilon}")
    }
}

/// Checks that `delta` (the argument `name` of `function`) is a number in `[0, 1)`.
///
/// `δ = 1` (or more) allows any output; NaN and negative values are not probabilities.
pub fn check_delta(function: &str, name: &str, delta: f64) -> Result<()> {
    if (0.0..1.0).contains(&delta) {
        Ok(())
    } else {
        plan_err!("{function}(): {name} must be a number in [0, 1), got {delta}")
    }
}

/// A warning when `delta` is at least `1/records`.
///
/// An (ε, δ)-DP mechanism may publish each record outright with probability δ, so with
/// `δ ≥ 1/n` it may be expected to publish one of the `n` records completely; the usual
/// advice is `δ ≪ 1/n`. Returns `None` when `delta < 1/records` (or `records == 0`).
///
/// The answer depends on the true number of records, so the warning belongs to the data
/// holder (an error message, owner diagnostics), never to public metadata.
pub fn delta_size_warning(delta: f64, records: u64) -> Option<String> {
    if records == 0 {
        return None;
    }
    // δ ≥ 1/n  ⇔  δ·n ≥ 1; the product of a double and an integer below 2^53 is correctly
    // rounded, and the comparison leans towards warning at the boundary.
    let product = delta * records as f64;
    (product >= 1.0 - 1e-12).then(|| {
        format!(
            "delta = {delta} is not below 1/n for n = {records} records: a mechanism with this delta may publish \
             a whole record; choose delta well below 1/n (e.g. below {:e})",
            0.1 / records as f64
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epsilon_checks() {
        check_epsilon("f", "epsilon", 0.5).unwrap();
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = check_epsilon("f", "epsilon", bad).unwrap_err().to_string();
            assert!(
                err.contains(&format!(
                    "f(): epsilon must be a positive finite number, got {bad}"
                )),
                "{err}"
            );
        }
    }

    #[test]
    fn delta_checks() {
        check_delta("safepub", "delta", 0.0).unwrap();
        check_delta("safepub", "delta", 1e-6).unwrap();
        for bad in [1.0, 1.5, -1e-9, f64::NAN, f64::INFINITY] {
            let err = check_delta("safepub", "delta", bad)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!(
                    "safepub(): delta must be a number in [0, 1), got {bad}"
                )),
                "{err}"
            );
        }
    }

    #[test]
    fn delta_warning_threshold() {
        assert_eq!(delta_size_warning(1e-6, 1000), None);
        assert_eq!(delta_size_warning(0.0099, 100), None);
        assert_eq!(delta_size_warning(0.5, 0), None);
        let w = delta_size_warning(0.01, 100).expect("1/n exactly warns");
        assert!(
            w.contains("delta = 0.01 is not below 1/n for n = 100 records"),
            "{w}"
        );
        assert!(delta_size_warning(0.02, 100).is_some());
        // 1/3 is not a double: the boundary still warns.
        assert!(delta_size_warning(1.0 / 3.0, 3).is_some());
    }
}
