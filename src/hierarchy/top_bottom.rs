//! Top and bottom coding as a hierarchy: the values below `bottom` become one label
//! `<bottom` and the values at or above `top` one label `>=top`, the values between keep
//! themselves (level 1); further levels group the kept values into intervals of the given
//! widths counted from `bottom` (the coded ends keep their labels), and the last level is
//! `*`. This is sdcMicro's `topBotCoding` and ARX's top/bottom coding of an interval
//! hierarchy, as a hierarchy every lattice method can climb (docs/GUIDE.md, "Hierarchies").

use std::fmt;

use super::builders::{interval_label, BuildError, MAX_HIERARCHY_CELLS};
use super::STAR;

/// What to code: the thresholds (at least one) and the interval widths above level 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopBottom {
    /// Values below this become `<bottom`.
    pub bottom: Option<i64>,
    /// Values at or above this become `>=top`.
    pub top: Option<i64>,
    /// Widths of the interval levels, strictly increasing, each a multiple of the one before.
    pub steps: Vec<i64>,
}

/// A top/bottom coding that cannot be built.
#[derive(Debug, Clone, PartialEq)]
pub enum TopBottomError {
    /// Neither `bottom` nor `top`.
    NothingToCode,
    /// `bottom >= top`.
    BottomNotBelowTop {
        /// The bottom threshold.
        bottom: i64,
        /// The top threshold.
        top: i64,
    },
    /// A width of zero or less.
    StepNotPositive {
        /// The width.
        step: i64,
    },
    /// A width that does not group the previous level's intervals.
    StepsNotNested {
        /// The width before.
        previous: i64,
        /// The width that is not a larger multiple of it.
        step: i64,
    },
    /// The domain or its size.
    Build(BuildError),
}

impl fmt::Display for TopBottomError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NothingToCode => f.write_str(
                "give bottom, top or both: the values below bottom and those at or above top are coded",
            ),
            Self::BottomNotBelowTop { bottom, top } => {
                write!(f, "bottom = {bottom} must be below top = {top}")
            }
            Self::StepNotPositive { step } => {
                write!(f, "a step must be a positive width, got {step}")
            }
            Self::StepsNotNested { previous, step } => write!(
                f,
                "step {step} does not follow step {previous}: each width must be a larger multiple of the one before (e.g. '5|10|20'), so that each level groups the previous one's intervals"
            ),
            Self::Build(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for TopBottomError {}

impl From<BuildError> for TopBottomError {
    fn from(e: BuildError) -> Self {
        Self::Build(e)
    }
}

/// The hierarchy rows (ARX layout: value, level 1, the interval levels, `*`) of `domain`
/// under `coding`.
pub fn top_bottom_rows(
    domain: &[i64],
    coding: &TopBottom,
) -> Result<Vec<Vec<String>>, TopBottomError> {
    if coding.bottom.is_none() && coding.top.is_none() {
        return Err(TopBottomError::NothingToCode);
    }
    if let (Some(bottom), Some(top)) = (coding.bottom, coding.top) {
        if bottom >= top {
            return Err(TopBottomError::BottomNotBelowTop { bottom, top });
        }
    }
    let mut previous: Option<i64> = None;
    for &step in &coding.steps {
        if step <= 0 {
            return Err(TopBottomError::StepNotPositive { step });
        }
        if let Some(previous) = previous {
            if step <= previous || step % previous != 0 {
                return Err(TopBottomError::StepsNotNested { previous, step });
            }
        }
        previous = Some(step);
    }
    let columns = coding.steps.len() + 3;
    if domain.len().saturating_mul(columns) > MAX_HIERARCHY_CELLS {
        return Err(BuildError::TooManyCells {
            values: domain.len(),
            columns,
            fewer: "values or steps",
        }
        .into());
    }
    let low = domain.iter().copied().min().unwrap_or(0);
    let high = domain.iter().copied().max().unwrap_or(0);
    // Intervals count from bottom (or the smallest value) and end at top (or past the
    // largest value).
    let origin = i128::from(coding.bottom.unwrap_or(low));
    let end = coding.top.map_or(i128::from(high) + 1, i128::from);
    Ok(domain
        .iter()
        .map(|&value| {
            let coded = match (coding.bottom, coding.top) {
                (Some(bottom), _) if value < bottom => Some(format!("<{bottom}")),
                (_, Some(top)) if value >= top => Some(format!(">={top}")),
                _ => None,
            };
            let mut row = Vec::with_capacity(columns);
            row.push(value.to_string());
            row.push(coded.clone().unwrap_or_else(|| value.to_string()));
            for &step in &coding.steps {
                row.push(match &coded {
                    Some(label) => label.clone(),
                    None => {
                        let step = i128::from(step);
                        let lo = origin + (i128::from(value) - origin).div_euclid(step) * step;
                        interval_label(lo, (lo + step).min(end), false)
                    }
                });
            }
            row.push(STAR.to_string());
            row
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy::Hierarchy;

    fn coding(bottom: Option<i64>, top: Option<i64>, steps: &[i64]) -> TopBottom {
        TopBottom {
            bottom,
            top,
            steps: steps.to_vec(),
        }
    }

    /// Ages 15..22 with bottom 17, top 21 and steps 2 and 4, row by row.
    #[test]
    fn codes_the_ends_and_groups_the_middle() {
        let domain: Vec<i64> = (15..=22).collect();
        let rows = top_bottom_rows(&domain, &coding(Some(17), Some(21), &[2, 4])).unwrap();
        let expected: Vec<Vec<&str>> = vec![
            vec!["15", "<17", "<17", "<17", "*"],
            vec!["16", "<17", "<17", "<17", "*"],
            vec!["17", "17", "[17-19)", "[17-21)", "*"],
            vec!["18", "18", "[17-19)", "[17-21)", "*"],
            vec!["19", "19", "[19-21)", "[17-21)", "*"],
            vec!["20", "20", "[19-21)", "[17-21)", "*"],
            vec!["21", ">=21", ">=21", ">=21", "*"],
            vec!["22", ">=21", ">=21", ">=21", "*"],
        ];
        assert_eq!(rows, expected);
        // A valid hierarchy: every level a function of the one below.
        assert_eq!(Hierarchy::from_rows("age", &rows).unwrap().height(), 4);
    }

    /// Top coding alone: intervals count from the smallest value and stop at top.
    #[test]
    fn top_alone() {
        let domain: Vec<i64> = (0..=9).collect();
        let rows = top_bottom_rows(&domain, &coding(None, Some(8), &[3])).unwrap();
        let level2: Vec<&str> = rows.iter().map(|r| r[2].as_str()).collect();
        assert_eq!(
            level2,
            vec![
                "[0-3)", "[0-3)", "[0-3)", "[3-6)", "[3-6)", "[3-6)", "[6-8)", "[6-8)", ">=8",
                ">=8"
            ]
        );
        assert!(Hierarchy::from_rows("x", &rows).is_ok());
    }

    #[test]
    fn refuses_what_it_cannot_build() {
        let domain: Vec<i64> = (0..=9).collect();
        let err = |c: TopBottom| top_bottom_rows(&domain, &c).unwrap_err().to_string();
        assert!(err(coding(None, None, &[])).contains("give bottom, top or both"));
        assert_eq!(
            err(coding(Some(5), Some(5), &[])),
            "bottom = 5 must be below top = 5"
        );
        assert!(err(coding(Some(1), None, &[0])).contains("positive width, got 0"));
        assert!(err(coding(Some(1), None, &[4, 6])).contains("step 6 does not follow step 4"));
        let wide: Vec<i64> = (0..1_000_000).collect();
        assert!(
            top_bottom_rows(&wide, &coding(Some(1), None, &[2, 4, 8, 16]))
                .unwrap_err()
                .to_string()
                .contains("values or steps")
        );
    }
}
