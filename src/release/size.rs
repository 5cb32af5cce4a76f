//! How many rows a release will have, known before anything is drawn, and the limit that
//! refuses a release far larger than its input (for example `epsilon => 1e-7` typed for
//! `1e-1`, which makes IPA add millions of counterfeit rows per class).
//!
//! Every method states its [`ReleaseSize`] from the phase-1 histogram and its public
//! parameters ([`crate::method::Method::release_size`]); the engine compares the upper
//! bound with `max_release_rows` and refuses with an execution error before the method
//! runs, so nothing is drawn and the privacy-budget charge is taken back. The figures in
//! the error are rounded to two significant digits: they depend on the number of input
//! rows, which the release would roughly show anyway, but no more precisely than that.

use datafusion::common::{exec_err, Result};

/// Probability with which a release may exceed [`ReleaseSize::upper`].
pub const SIZE_FAILURE: f64 = 1e-9;

/// Default `max_release_rows`: this many times the input rows …
pub const DEFAULT_RELEASE_ROWS_FACTOR: u64 = 10;

/// … but never less than this many rows.
pub const DEFAULT_MIN_RELEASE_ROWS: u64 = 100_000;

/// The size of a release, computed before anything is drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseSize {
    /// Expected number of released rows.
    pub expected: f64,
    /// A bound the released row count exceeds with probability at most [`SIZE_FAILURE`].
    pub upper: f64,
    /// What adds rows beyond the input's, in the user's words (empty when nothing does).
    pub cause: String,
}

impl ReleaseSize {
    /// A release that never has more rows than its `input_rows` (generalization,
    /// suppression, sampling).
    pub fn at_most(input_rows: u64) -> Self {
        Self {
            expected: input_rows as f64,
            upper: input_rows as f64,
            cause: String::new(),
        }
    }
}

/// The row limit of one call: `max_release_rows` as given, and the ceiling the registration
/// sets ([`crate::RegisterOptions::max_release_rows`]), which no SQL argument can exceed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReleaseRowLimit {
    /// `max_release_rows => n`, if given.
    pub given: Option<u64>,
    /// The registration's ceiling, if any.
    pub ceiling: Option<u64>,
    /// Rows past which a method that draws its release stops drawing and fails with
    /// [`TooManyRows`] (a public session's `max_release_rows`): the check is on the drawn
    /// release itself, so it bounds the memory a draw holds and reveals nothing beyond the
    /// release.
    pub stop_at: Option<u64>,
}

/// A release that grew past [`ReleaseRowLimit::stop_at`] while it was drawn: nothing is
/// released, and the budget the draw took stays spent (the failure is a function of the
/// drawn release, and the same request drawn again is charged again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyRows {
    /// The limit the release passed.
    pub limit: u64,
}

impl std::fmt::Display for TooManyRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "anonymize(): this release has more rows than public users may receive in this session ({}); its budget was spent. Methods that add noise or counterfeit rows add fewer with a larger epsilon (ipa, dp_histogram) or a smaller k (upa); the others release at most the source's rows",
            self.limit
        )
    }
}

impl std::error::Error for TooManyRows {}

impl TooManyRows {
    /// The error `e` if it is (or wraps) a [`TooManyRows`].
    pub fn find(e: &datafusion::error::DataFusionError) -> Option<Self> {
        match e.find_root() {
            datafusion::error::DataFusionError::External(inner) => {
                inner.downcast_ref::<Self>().copied()
            }
            _ => None,
        }
    }
}

/// The default `max_release_rows` for a source of `input_rows` rows.
pub fn default_max_release_rows(input_rows: u64) -> u64 {
    input_rows
        .saturating_mul(DEFAULT_RELEASE_ROWS_FACTOR)
        .max(DEFAULT_MIN_RELEASE_ROWS)
}

/// Refuses a release whose size bound exceeds `max_release_rows` (the given value, or the
/// default for `input_rows`); the refusal ends with `advice` (what shrinks this method's
/// release, e.g. "Use a larger epsilon, or allow the size") and the `max_release_rows` that
/// would admit it.
pub fn check_release_size(
    method: &str,
    size: &ReleaseSize,
    input_rows: u64,
    limit: ReleaseRowLimit,
    advice: &str,
) -> Result<()> {
    let (mut limit_rows, mut origin) = match limit.given {
        Some(rows) => (rows, "as given".to_string()),
        None => (
            default_max_release_rows(input_rows),
            format!(
                "the default: {DEFAULT_RELEASE_ROWS_FACTOR} × the input rows, at least {DEFAULT_MIN_RELEASE_ROWS}"
            ),
        ),
    };
    if let Some(ceiling) = limit.ceiling.filter(|&c| c < limit_rows) {
        limit_rows = ceiling;
        origin = "the ceiling set when the functions were registered".to_string();
    }
    let limit = limit_rows;
    if size.upper <= limit as f64 {
        return Ok(());
    }
    let cause = if size.cause.is_empty() {
        String::new()
    } else {
        format!(" ({})", size.cause)
    };
    // A certain bound is exact (only the owner reads this text); an estimate is rounded, its
    // upper bound rounded up, so it never reads as less than the limit it exceeds.
    let amount = if size.expected >= size.upper {
        format!("up to {} rows{cause}", size.upper.ceil())
    } else {
        format!(
            "about {} rows{cause}, up to {} with probability 1 − {SIZE_FAILURE:e}",
            round2(size.expected),
            ceil2(size.upper)
        )
    };
    exec_err!(
        "anonymize(): method '{method}' would release {amount}, from {input_rows} input rows: more than max_release_rows = {limit} ({origin}). Nothing was drawn and no budget was spent. {advice} with max_release_rows => {}",
        ceil2(size.upper)
    )
}

/// `x` rounded to two significant digits, written without exponent for readability
/// (`25000000`-style figures are what a user compares with `max_release_rows`).
fn round2(x: f64) -> String {
    two_digits(x, f64::round)
}

/// `x` rounded up to two significant digits: a limit that admits `x`.
fn ceil2(x: f64) -> String {
    two_digits(x, f64::ceil)
}

fn two_digits(x: f64, round: fn(f64) -> f64) -> String {
    if !x.is_finite() {
        return "more than 10^308".to_string();
    }
    if x < 100.0 {
        return format!("{}", round(x) as u64);
    }
    let magnitude = 10f64.powi(x.log10().floor() as i32 - 1);
    let rounded = round(x / magnitude) * magnitude;
    if rounded >= 1e19 {
        format!("{rounded:.1e}")
    } else {
        format!("{}", rounded as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADVICE: &str = "Use a larger epsilon, or allow the size";

    #[test]
    fn rounds_to_two_significant_digits() {
        assert_eq!(round2(7.4), "7");
        assert_eq!(round2(30_162.0), "30000");
        assert_eq!(round2(25_512_345.0), "26000000");
        assert_eq!(round2(1.5e25), "1.5e25");
        assert_eq!(ceil2(10_300_000.0), "11000000");
        assert_eq!(ceil2(25_600_000.0), "26000000");
    }

    #[test]
    fn default_limit_is_a_multiple_of_the_input_with_a_floor() {
        assert_eq!(default_max_release_rows(30_162), 301_620);
        assert_eq!(default_max_release_rows(5), DEFAULT_MIN_RELEASE_ROWS);
        assert_eq!(default_max_release_rows(u64::MAX), u64::MAX);
    }

    #[test]
    fn refuses_only_above_the_limit_and_names_what_allows_it() {
        let small = ReleaseSize::at_most(30_162);
        let default = ReleaseRowLimit::default();
        let given = |rows| ReleaseRowLimit {
            given: Some(rows),
            ..ReleaseRowLimit::default()
        };
        assert!(check_release_size("kanon", &small, 30_162, default, ADVICE).is_ok());
        // A certain bound just above the limit reads as above it (rounded up, no
        // probability).
        let err = check_release_size("kanon", &small, 30_162, given(30_161), ADVICE)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("would release up to 30162 rows, from 30162 input rows: more than max_release_rows = 30161 (as given)"),
            "{err}"
        );
        let big = ReleaseSize {
            expected: 2.55e7,
            upper: 2.56e7,
            cause:
                "epsilon_ins = 1e-6 adds about 500000 counterfeit rows to each of up to 51 classes"
                    .into(),
        };
        let err = check_release_size("ipa", &big, 30_162, default, ADVICE)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("would release about 26000000 rows (epsilon_ins = 1e-6 adds about 500000 counterfeit rows to each of up to 51 classes), up to 26000000 with probability 1 − 1e-9"),
            "{err}"
        );
        assert!(
            err.contains("max_release_rows = 301620 (the default"),
            "{err}"
        );
        assert!(
            err.contains(
                "Use a larger epsilon, or allow the size with max_release_rows => 26000000"
            ),
            "{err}"
        );
        assert!(check_release_size("ipa", &big, 30_162, given(26_000_000), ADVICE).is_ok());
        let err = check_release_size("ipa", &big, 30_162, given(1000), ADVICE)
            .unwrap_err()
            .to_string();
        assert!(err.contains("max_release_rows = 1000 (as given)"), "{err}");
        // The registration's ceiling wins over a larger given value.
        let capped = ReleaseRowLimit {
            given: Some(26_000_000),
            ceiling: Some(500_000),
            stop_at: None,
        };
        let err = check_release_size("ipa", &big, 30_162, capped, ADVICE)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("max_release_rows = 500000 (the ceiling"),
            "{err}"
        );
    }
}
