//! Warnings about privacy parameters that depend on the data (owner-only).

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
