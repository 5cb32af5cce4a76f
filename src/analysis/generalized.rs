//! Generalized integer values as sets of integers.
//!
//! A released quasi-identifier is a label of its hierarchy. For integer attributes the
//! labels this crate produces (see [`crate::hierarchy::builders::interval_label`]) name
//! sets of consecutive integers:
//!
//! | label | integers |
//! |---|---|
//! | `37` | `{37}` |
//! | `[10-20)` | `10, 11, …, 19` |
//! | `[60-100]` | `60, 61, …, 100` |
//! | `<18` | the integers below 18 (top/bottom coding): with a domain `[lo, hi]`, `lo, …, 17`; otherwise unknown |
//! | `>=90` | the integers from 90 on: with a domain, `90, …, hi`; otherwise unknown |
//! | `*` | the attribute's domain when one is supplied, otherwise unknown |
//!
//! With a domain `[lo, hi]` supplied, every value is intersected with it (`[0-10)` over the
//! domain `1..100` is `1, …, 9`); a value outside the domain is empty. Lower and upper bounds
//! are the smallest and largest integer of the set, the midpoint their mean (the mean of the
//! set under a uniform distribution). The reference implementation of the IPA paper read
//! `[lo-hi)` as the real interval and took `(lo + hi) / 2`, half a unit higher for half-open
//! labels; write `(gen_lower(x) + gen_upper(x) + 1) / 2.0` for that convention.
//!
//! [`spread`] distributes one record uniformly over the integers of its set and sums the
//! shares per group `floor(x / width) * width` — the paper's evaluator for
//! `GROUP BY FLOOR(age / 5) * 5` on generalized ages (docs/METHODS.md §1.12.2).

use std::fmt;

/// Largest number of groups one value may be spread over.
pub const MAX_SPREAD_GROUPS: i128 = 1_000_000;

/// A generalized integer value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeneralizedValue {
    /// The integers `lo..=hi` (`lo <= hi`).
    Range {
        /// Smallest integer.
        lo: i64,
        /// Largest integer.
        hi: i64,
    },
    /// `<b`: every integer below `b` (a bottom-coded value of `top_bottom_hierarchy`).
    Below(i64),
    /// `>=t`: every integer from `t` on (a top-coded value).
    AtLeast(i64),
    /// `*`: fully generalized or suppressed.
    Star,
}

/// Why a label cannot be read as a generalized integer value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The label.
    pub label: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is not a generalized integer value ({}); expected an integer, an interval like '[10-20)' or '[60-100]', a coded end like '<18' or '>=90', or '*'",
            crate::quote::quote(&self.label),
            self.reason
        )
    }
}

impl std::error::Error for ParseError {}

/// Reads a label: an integer, `[lo-hi)` (half-open), `[lo-hi]` (closed), `<b`, `>=t` or `*`.
/// Surrounding spaces are ignored; bounds may be negative (`[-10--5)`).
pub fn parse_generalized(label: &str) -> Result<GeneralizedValue, ParseError> {
    let err = |reason| ParseError {
        label: label.to_string(),
        reason,
    };
    let text = label.trim();
    if text == "*" {
        return Ok(GeneralizedValue::Star);
    }
    if let Ok(v) = text.parse::<i64>() {
        return Ok(GeneralizedValue::Range { lo: v, hi: v });
    }
    if let Some(bound) = text.strip_prefix(">=") {
        return bound
            .trim()
            .parse::<i64>()
            .map(GeneralizedValue::AtLeast)
            .map_err(|_| err("a coded end '>=t' needs an integer t"));
    }
    if let Some(bound) = text.strip_prefix('<') {
        return bound
            .trim()
            .parse::<i64>()
            .map(GeneralizedValue::Below)
            .map_err(|_| err("a coded end '<b' needs an integer b"));
    }
    let Some(inner) = text.strip_prefix('[') else {
        return Err(err("not an integer and not an interval"));
    };
    let (inner, closed) = if let Some(i) = inner.strip_suffix(')') {
        (i, false)
    } else if let Some(i) = inner.strip_suffix(']') {
        (i, true)
    } else {
        return Err(err("an interval must end with ')' or ']'"));
    };
    // The separator is the first '-' that follows a digit (a leading '-' is a sign).
    let bytes = inner.as_bytes();
    let Some(split) = (1..bytes.len()).find(|&i| bytes[i] == b'-' && bytes[i - 1].is_ascii_digit())
    else {
        return Err(err("an interval needs two bounds separated by '-'"));
    };
    let lo = inner[..split].trim().parse::<i64>();
    let hi = inner[split + 1..].trim().parse::<i64>();
    let (Ok(lo), Ok(hi)) = (lo, hi) else {
        return Err(err("interval bounds must be integers"));
    };
    let hi = if closed {
        hi
    } else {
        match hi.checked_sub(1) {
            Some(h) => h,
            None => return Err(err("interval bound out of range")),
        }
    };
    if hi < lo {
        return Err(err("the interval is empty"));
    }
    Ok(GeneralizedValue::Range { lo, hi })
}

impl GeneralizedValue {
    /// The integers of the value within an optional domain `[lo, hi]`, as an inclusive
    /// range; `None` when the set is empty or unknown (`*` without a domain).
    pub fn within(self, domain: Option<(i64, i64)>) -> Option<(i64, i64)> {
        match (self, domain) {
            (Self::Star | Self::Below(_) | Self::AtLeast(_), None) => None,
            (Self::Below(b), Some((dlo, dhi))) => {
                let hi = dhi.min(b.checked_sub(1)?);
                (dlo <= hi).then_some((dlo, hi))
            }
            (Self::AtLeast(t), Some((dlo, dhi))) => {
                let lo = dlo.max(t);
                (lo <= dhi).then_some((lo, dhi))
            }
            (Self::Star, Some((dlo, dhi))) => (dlo <= dhi).then_some((dlo, dhi)),
            (Self::Range { lo, hi }, None) => Some((lo, hi)),
            (Self::Range { lo, hi }, Some((dlo, dhi))) => {
                let (lo, hi) = (lo.max(dlo), hi.min(dhi));
                (lo <= hi).then_some((lo, hi))
            }
        }
    }
}

/// Midpoint of the integers `lo..=hi`.
pub fn midpoint(lo: i64, hi: i64) -> f64 {
    (lo as f64 + hi as f64) / 2.0
}

/// Why a value cannot be spread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpreadError {
    /// The group width is not positive.
    Width(i64),
    /// The value covers more than [`MAX_SPREAD_GROUPS`] groups.
    TooManyGroups(i128),
}

impl fmt::Display for SpreadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Width(w) => write!(f, "group width must be a positive integer, got {w}"),
            Self::TooManyGroups(n) => write!(
                f,
                "the value covers {n} groups, more than {MAX_SPREAD_GROUPS}; use a wider group or a domain"
            ),
        }
    }
}

impl std::error::Error for SpreadError {}

/// Spreads one record uniformly over the integers `lo..=hi` and returns, per group
/// `floor(x / width) * width` (ascending), the share of the record that falls into it.
/// The shares sum to 1.
pub fn spread(lo: i64, hi: i64, width: i64) -> Result<Vec<(i64, f64)>, SpreadError> {
    if width <= 0 {
        return Err(SpreadError::Width(width));
    }
    let (lo, hi, w) = (lo as i128, hi as i128, width as i128);
    let first = lo.div_euclid(w);
    let last = hi.div_euclid(w);
    let groups = last - first + 1;
    if groups > MAX_SPREAD_GROUPS {
        return Err(SpreadError::TooManyGroups(groups));
    }
    let total = (hi - lo + 1) as f64;
    Ok((first..=last)
        .map(|g| {
            let start = (g * w).max(lo);
            let end = (g * w + w - 1).min(hi);
            // g * w lies between lo - w and hi, so it fits i64.
            ((g * w) as i64, (end - start + 1) as f64 / total)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_and_bottom_coded_labels_read_with_a_domain() {
        assert_eq!(parse_generalized("<18"), Ok(GeneralizedValue::Below(18)));
        assert_eq!(
            parse_generalized(" >= 90 "),
            Ok(GeneralizedValue::AtLeast(90))
        );
        assert_eq!(
            GeneralizedValue::Below(18).within(Some((0, 120))),
            Some((0, 17))
        );
        assert_eq!(
            GeneralizedValue::AtLeast(90).within(Some((0, 120))),
            Some((90, 120))
        );
        assert_eq!(GeneralizedValue::Below(18).within(None), None);
        assert_eq!(GeneralizedValue::Below(0).within(Some((0, 120))), None);
        assert!(parse_generalized("<x").is_err());
    }
    use crate::demo::nps::{NPS_TABLE10_FEMALE_COUNTS, NPS_TABLE9_MALE_COUNTS};
    use GeneralizedValue::*;

    #[test]
    fn parses_labels() {
        assert_eq!(parse_generalized("37"), Ok(Range { lo: 37, hi: 37 }));
        assert_eq!(parse_generalized(" [10-20) "), Ok(Range { lo: 10, hi: 19 }));
        assert_eq!(parse_generalized("[60-100]"), Ok(Range { lo: 60, hi: 100 }));
        assert_eq!(parse_generalized("[-10--5)"), Ok(Range { lo: -10, hi: -6 }));
        assert_eq!(parse_generalized("[-3-4]"), Ok(Range { lo: -3, hi: 4 }));
        assert_eq!(parse_generalized("*"), Ok(Star));
        for bad in [
            "", "I63*", "[10-20", "[10,20)", "[a-b)", "[5-5)", "[9-3]", "1.5", "(1-2]",
        ] {
            let e = parse_generalized(bad).unwrap_err();
            assert_eq!(e.label, bad);
            assert!(
                e.to_string().contains("is not a generalized integer value"),
                "{e}"
            );
        }
    }

    #[test]
    fn bounds_within_domain() {
        let v = parse_generalized("[0-10)").unwrap();
        assert_eq!(v.within(None), Some((0, 9)));
        assert_eq!(v.within(Some((1, 100))), Some((1, 9)));
        assert_eq!(v.within(Some((20, 30))), None);
        assert_eq!(Star.within(None), None);
        assert_eq!(Star.within(Some((1, 100))), Some((1, 100)));
        assert_eq!(Star.within(Some((5, 1))), None);
        assert_eq!(midpoint(2, 4), 3.0);
        assert_eq!(midpoint(30, 400), 215.0);
    }

    #[test]
    fn spreads_uniformly() {
        assert_eq!(spread(37, 37, 5).unwrap(), vec![(35, 1.0)]);
        assert_eq!(spread(0, 9, 5).unwrap(), vec![(0, 0.5), (5, 0.5)]);
        assert_eq!(
            spread(1, 9, 5).unwrap(),
            vec![(0, 4.0 / 9.0), (5, 5.0 / 9.0)]
        );
        assert_eq!(spread(-3, 2, 5).unwrap(), vec![(-5, 0.5), (0, 0.5)]);
        let s = spread(30, 400, 7).unwrap();
        assert!((s.iter().map(|(_, w)| w).sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(spread(0, 1, 0), Err(SpreadError::Width(0)));
        assert!(matches!(
            spread(i64::MIN, i64::MAX, 1),
            Err(SpreadError::TooManyGroups(_))
        ));
    }

    /// docs/METHODS.md §1.12.2: spreading the Original columns of Tables 9–10 uniformly
    /// over the k-anonymization intervals `[0-30)`, `[30-60)`, `[60-100)` gives the paper's
    /// k-anonymization columns (±0.05). Ages are restricted to the tables' domain 0..=89
    /// (18 five-year rows); row label `L` covers ages `[L-5, L-1]`.
    #[test]
    fn reproduces_paper_k_anonymization_columns() {
        let kanon_q1 = [6.3, 186.2, 329.8];
        let kanon_q2 = [4.5, 101.7, 379.2];
        let intervals = ["[0-30)", "[30-60)", "[60-100)"];
        for (original, expected) in [
            (NPS_TABLE9_MALE_COUNTS, kanon_q1),
            (NPS_TABLE10_FEMALE_COUNTS, kanon_q2),
        ] {
            let mut estimate = [0.0f64; 18];
            for (i, label) in intervals.iter().enumerate() {
                // Count of records the k-anonymous release puts in this interval.
                let count: u32 = original[6 * i..6 * i + 6].iter().sum();
                let (lo, hi) = parse_generalized(label)
                    .unwrap()
                    .within(Some((0, 89)))
                    .unwrap();
                for (group, weight) in spread(lo, hi, 5).unwrap() {
                    estimate[(group / 5) as usize] += count as f64 * weight;
                }
            }
            for (row, value) in estimate.iter().enumerate() {
                let paper = expected[row / 6];
                assert!(
                    (value - paper).abs() <= 0.05,
                    "row {}: {value} vs paper {paper}",
                    5 * row + 5
                );
            }
        }
    }
}
