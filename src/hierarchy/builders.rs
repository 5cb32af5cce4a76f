//! Builders that produce ARX-layout hierarchy rows: numeric interval ladders and prefix masks.

use std::fmt;

use datafusion::common::DataFusionError;

use super::STAR;

/// Largest number of values (rows) a built hierarchy may have: an interval domain's
/// integers, a mask's distinct codes. A million values take a few seconds and a few hundred
/// MB to build and check.
pub const MAX_HIERARCHY_VALUES: usize = 1_000_000;

/// Largest number of cells (values × columns, the columns being the value, one per level
/// and the final `*`) a built hierarchy may have: the levels multiply the work.
pub const MAX_HIERARCHY_CELLS: usize = 5_000_000;

/// Why a domain, an interval level or a mask could not build hierarchy rows.
///
/// The [`Display`](fmt::Display) text is the message alone; `From` makes it a planning
/// error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildError {
    /// A range `lo..hi` with `lo > hi`.
    EmptyRange {
        /// The range as written.
        item: String,
        /// Its lower end.
        lo: i64,
        /// Its upper end.
        hi: i64,
    },
    /// A range with more than [`MAX_HIERARCHY_VALUES`] values.
    RangeTooLarge {
        /// The range as written.
        item: String,
    },
    /// A domain with more than [`MAX_HIERARCHY_VALUES`] values.
    DomainTooLarge {
        /// The domain as written.
        spec: String,
    },
    /// A domain without values.
    EmptyDomain {
        /// The domain as written.
        spec: String,
    },
    /// A number that is not an `i64`.
    NotAnInteger {
        /// What the number is part of (`domain`, `interval level`).
        what: &'static str,
        /// The number as written (trimmed).
        text: String,
    },
    /// An interval level without numbers.
    EmptyLevel {
        /// The level as written.
        spec: String,
    },
    /// An interval width of zero or less.
    WidthNotPositive {
        /// The width.
        width: i64,
    },
    /// Breakpoints that do not increase strictly.
    BreakpointsNotIncreasing {
        /// The level as written.
        spec: String,
    },
    /// A domain value outside a level's breakpoints.
    OutsideBreakpoints {
        /// The value.
        value: i64,
        /// The first breakpoint.
        first: i64,
        /// The last breakpoint.
        last: i64,
        /// Whether the last bin includes the last breakpoint.
        close_last: bool,
    },
    /// A masking hierarchy asked for without values.
    NoMaskValues,
    /// A masking hierarchy over more than [`MAX_HIERARCHY_VALUES`] distinct values.
    TooManyMaskValues,
    /// A hierarchy of more than [`MAX_HIERARCHY_CELLS`] cells.
    TooManyCells {
        /// Its values (rows).
        values: usize,
        /// Its columns: the value, the levels and `*`.
        columns: usize,
        /// What to give less of, in the user's words.
        fewer: &'static str,
    },
    /// Mask lengths that do not decrease strictly.
    MaskNotDecreasing {
        /// The lengths.
        keep: Vec<usize>,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::EmptyRange { item, lo, hi } => {
                write!(f, "domain range '{item}' is empty: {lo} > {hi}")
            }
            BuildError::RangeTooLarge { item } => write!(
                f,
                "domain range '{item}' has more than {MAX_HIERARCHY_VALUES} values, the most a built hierarchy may have"
            ),
            BuildError::DomainTooLarge { spec } => write!(
                f,
                "domain '{spec}' has more than {MAX_HIERARCHY_VALUES} values, the most a built hierarchy may have"
            ),
            BuildError::EmptyDomain { spec } => write!(
                f,
                "domain '{spec}' is empty; write e.g. '1..100' or '11, 21..26'"
            ),
            BuildError::NotAnInteger { what, text } => {
                write!(f, "{what}: '{text}' is not an integer")
            }
            BuildError::EmptyLevel { spec } => write!(
                f,
                "interval level '{spec}' is empty; write a width like '10' or breakpoints like '0,30,60,100'"
            ),
            BuildError::WidthNotPositive { width } => {
                write!(f, "interval width must be positive, got {width}")
            }
            BuildError::BreakpointsNotIncreasing { spec } => write!(
                f,
                "interval breakpoints '{spec}' must be strictly increasing"
            ),
            BuildError::OutsideBreakpoints {
                value,
                first,
                last,
                close_last,
            } => {
                let note = if *close_last {
                    ""
                } else {
                    " (the last breakpoint is exclusive unless it is the domain maximum)"
                };
                write!(
                    f,
                    "value {value} lies outside the breakpoints {first}..{last}{note}"
                )
            }
            BuildError::NoMaskValues => write!(
                f,
                "cannot build a masking hierarchy from an empty set of values"
            ),
            BuildError::TooManyMaskValues => write!(
                f,
                "the column has more than {MAX_HIERARCHY_VALUES} distinct values, the most a built hierarchy may have"
            ),
            BuildError::TooManyCells {
                values,
                columns,
                fewer,
            } => write!(
                f,
                "the hierarchy would have {values} values × {columns} columns = {} cells, more than {MAX_HIERARCHY_CELLS}, the most a built hierarchy may have; give {fewer}",
                values.saturating_mul(*columns)
            ),
            BuildError::MaskNotDecreasing { keep } => {
                write!(f, "mask lengths must be strictly decreasing, got {keep:?}")
            }
        }
    }
}

impl std::error::Error for BuildError {}

impl From<BuildError> for DataFusionError {
    /// A planning error whose message is the error's [`Display`](fmt::Display).
    fn from(e: BuildError) -> Self {
        DataFusionError::Plan(e.to_string())
    }
}

/// Parses an integer domain such as `"1..100"` or `"11, 21..26, 31..39"` (inclusive ranges).
pub fn parse_integer_domain(spec: &str) -> Result<Vec<i64>, BuildError> {
    let mut values = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if let Some((lo, hi)) = item.split_once("..") {
            let lo = parse_int(lo, "domain")?;
            let hi = parse_int(hi, "domain")?;
            if lo > hi {
                return Err(BuildError::EmptyRange {
                    item: item.to_string(),
                    lo,
                    hi,
                });
            }
            if hi.abs_diff(lo) >= MAX_HIERARCHY_VALUES as u64 {
                return Err(BuildError::RangeTooLarge {
                    item: item.to_string(),
                });
            }
            values.extend(lo..=hi);
        } else {
            values.push(parse_int(item, "domain")?);
        }
        if values.len() > MAX_HIERARCHY_VALUES {
            return Err(BuildError::DomainTooLarge {
                spec: spec.to_string(),
            });
        }
    }
    values.sort_unstable();
    values.dedup();
    if values.is_empty() {
        return Err(BuildError::EmptyDomain {
            spec: spec.to_string(),
        });
    }
    Ok(values)
}

fn parse_int(text: &str, what: &'static str) -> Result<i64, BuildError> {
    text.trim()
        .parse::<i64>()
        .map_err(|_| BuildError::NotAnInteger {
            what,
            text: text.trim().to_string(),
        })
}

/// One level of an interval ladder.
#[derive(Debug, Clone, PartialEq)]
pub enum IntervalLevel {
    /// Fixed-width bins `[k·w, (k+1)·w)`.
    Width(i64),
    /// Explicit, strictly increasing breakpoints `b0 < b1 < … < bn`: bins `[b_i, b_{i+1})`,
    /// the last bin also holding the value `bn` itself (label `[b_{n-1}-b_n]`).
    Breakpoints(Vec<i64>),
}

impl IntervalLevel {
    /// Parses `"10"` (a width) or `"0, 30, 60, 100"` (breakpoints).
    pub fn parse(spec: &str) -> Result<Self, BuildError> {
        let numbers = spec
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| parse_int(s, "interval level"))
            .collect::<Result<Vec<_>, _>>()?;
        match numbers.len() {
            0 => Err(BuildError::EmptyLevel {
                spec: spec.to_string(),
            }),
            1 if numbers[0] > 0 => Ok(Self::Width(numbers[0])),
            1 => Err(BuildError::WidthNotPositive { width: numbers[0] }),
            _ => {
                if numbers.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(BuildError::BreakpointsNotIncreasing {
                        spec: spec.to_string(),
                    });
                }
                Ok(Self::Breakpoints(numbers))
            }
        }
    }

    /// Label of `value`; with `close_last`, the last bin includes the last breakpoint.
    fn label(&self, value: i64, close_last: bool) -> Result<String, BuildError> {
        match self {
            Self::Width(width) => {
                // In i128: the bin of a value near the ends of i64 may reach beyond them.
                let width = i128::from(*width);
                let lo = i128::from(value).div_euclid(width) * width;
                Ok(interval_label(lo, lo + width, false))
            }
            Self::Breakpoints(points) => {
                let last = points[points.len() - 1];
                let beyond = if close_last {
                    value > last
                } else {
                    value >= last
                };
                if value < points[0] || beyond {
                    return Err(BuildError::OutsideBreakpoints {
                        value,
                        first: points[0],
                        last,
                        close_last,
                    });
                }
                let upper = points
                    .partition_point(|&b| b <= value)
                    .min(points.len() - 1);
                let is_last_bin = upper == points.len() - 1;
                Ok(interval_label(
                    i128::from(points[upper - 1]),
                    i128::from(points[upper]),
                    close_last && is_last_bin,
                ))
            }
        }
    }

    fn closes_last_bin(&self, domain_max: i64) -> bool {
        matches!(self, Self::Breakpoints(points) if points[points.len() - 1] == domain_max)
    }
}

/// Label of an integer interval: the value itself when it holds one integer, otherwise
/// `[lo-hi)` (half-open) or `[lo-hi]` (closed).
/// Bounds are `i128` so that bins reaching past the ends of `i64` are labelled exactly.
pub fn interval_label(lo: i128, hi: i128, closed: bool) -> String {
    if (!closed && hi - lo == 1) || (closed && hi == lo) {
        lo.to_string()
    } else if closed {
        format!("[{lo}-{hi}]")
    } else {
        format!("[{lo}-{hi})")
    }
}

/// Builds ARX-layout rows for an integer domain and a ladder of interval levels. A final
/// `*` level is appended unless the last level already maps everything to one value.
pub fn interval_hierarchy_rows(
    domain: &[i64],
    levels: &[IntervalLevel],
) -> Result<Vec<Vec<String>>, BuildError> {
    check_cells(
        domain.len(),
        levels.len(),
        "fewer levels or a smaller domain",
    )?;
    let domain_max = domain.iter().copied().max().unwrap_or_default();
    let mut rows = Vec::with_capacity(domain.len());
    for &value in domain {
        let mut row = Vec::with_capacity(levels.len() + 2);
        row.push(value.to_string());
        for level in levels {
            row.push(level.label(value, level.closes_last_bin(domain_max))?);
        }
        rows.push(row);
    }
    append_star_level(&mut rows);
    Ok(rows)
}

/// Builds ARX-layout rows that mask codes from the right: with `keep = [3, 2]`,
/// `I634 → I63* → I6* → *`. An empty `keep` uses every prefix length from the longest
/// code's length − 1 down to 1.
pub fn mask_hierarchy_rows(
    values: &[String],
    keep: &[usize],
) -> Result<Vec<Vec<String>>, BuildError> {
    if values.is_empty() {
        return Err(BuildError::NoMaskValues);
    }
    if values.len() > MAX_HIERARCHY_VALUES {
        return Err(BuildError::TooManyMaskValues);
    }
    let longest = values.iter().map(|v| v.chars().count()).max().unwrap_or(0);
    let keep: Vec<usize> = if keep.is_empty() {
        (1..longest).rev().collect()
    } else {
        if keep.windows(2).any(|w| w[0] <= w[1]) {
            return Err(BuildError::MaskNotDecreasing {
                keep: keep.to_vec(),
            });
        }
        keep.to_vec()
    };
    check_cells(values.len(), keep.len(), "fewer keep lengths")?;
    let mut rows = Vec::with_capacity(values.len());
    for value in values {
        let mut row = Vec::with_capacity(keep.len() + 2);
        row.push(value.clone());
        for &k in &keep {
            let prefix: String = value.chars().take(k).collect();
            row.push(format!("{prefix}{STAR}"));
        }
        rows.push(row);
    }
    append_star_level(&mut rows);
    Ok(rows)
}

/// Refuses a hierarchy of `values` rows and `levels` levels (plus the value and `*`) above
/// [`MAX_HIERARCHY_CELLS`] cells, before anything is built.
fn check_cells(values: usize, levels: usize, fewer: &'static str) -> Result<(), BuildError> {
    let columns = levels.saturating_add(2);
    if values.saturating_mul(columns) > MAX_HIERARCHY_CELLS {
        return Err(BuildError::TooManyCells {
            values,
            columns,
            fewer,
        });
    }
    Ok(())
}

/// Appends a `*` column unless the last column already holds one value for every row.
fn append_star_level(rows: &mut [Vec<String>]) {
    let Some(first) = rows.first() else { return };
    let width = first.len();
    let top = &first[width - 1];
    let single_top = width > 1 && rows.iter().all(|r| &r[width - 1] == top);
    if !single_top {
        for row in rows.iter_mut() {
            row.push(STAR.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy::Hierarchy;

    #[test]
    fn domain_parsing() {
        assert_eq!(parse_integer_domain("3, 1..2").unwrap(), vec![1, 2, 3]);
        assert_eq!(parse_integer_domain("11,21..26,31..39").unwrap().len(), 16);
        assert!(parse_integer_domain("5..1").is_err());
        assert!(parse_integer_domain("a..b").is_err());
        assert!(parse_integer_domain("").is_err());
    }

    #[test]
    fn reference_nps_age_hierarchy() {
        let domain = parse_integer_domain("1..100").unwrap();
        let levels = [
            IntervalLevel::parse("10").unwrap(),
            IntervalLevel::parse("0,30,60,100").unwrap(),
        ];
        let rows = interval_hierarchy_rows(&domain, &levels).unwrap();
        assert_eq!(rows[0], vec!["1", "[0-10)", "[0-30)", "*"]);
        assert_eq!(rows[36], vec!["37", "[30-40)", "[30-60)", "*"]);
        assert_eq!(rows[99], vec!["100", "[100-110)", "[60-100]", "*"]);
        let h = Hierarchy::from_rows("age", &rows).unwrap();
        assert_eq!(h.height(), 3);
        assert_eq!(h.level(1).cardinality(), 11);
        assert_eq!(h.level(2).labels(), &["[0-30)", "[30-60)", "[60-100]"]);
    }

    #[test]
    fn reference_nps_los_and_location_hierarchies() {
        let los = interval_hierarchy_rows(
            &parse_integer_domain("1..400").unwrap(),
            &[
                IntervalLevel::parse("1,2,5,10,30,400").unwrap(),
                IntervalLevel::parse("1,2,400").unwrap(),
            ],
        )
        .unwrap();
        assert_eq!(los[0], vec!["1", "1", "1", "*"]);
        assert_eq!(los[2], vec!["3", "[2-5)", "[2-400]", "*"]);
        assert_eq!(los[399], vec!["400", "[30-400]", "[2-400]", "*"]);
        let loc = interval_hierarchy_rows(
            &parse_integer_domain("11,21..26,31..39").unwrap(),
            &[
                IntervalLevel::parse("11,12,21,27,31,40").unwrap(),
                IntervalLevel::parse("11,12,21,40").unwrap(),
            ],
        )
        .unwrap();
        assert_eq!(loc[0], vec!["11", "11", "11", "*"]);
        assert_eq!(loc[1], vec!["21", "[21-27)", "[21-40)", "*"]);
        assert_eq!(loc[15], vec!["39", "[31-40)", "[21-40)", "*"]);
        let h = Hierarchy::from_rows("location", &loc).unwrap();
        assert_eq!(h.ncp_per_code(2), vec![0.0, 15.0 / 16.0]);
    }

    #[test]
    fn interval_errors() {
        assert!(IntervalLevel::parse("0").is_err());
        assert!(IntervalLevel::parse("5,3").is_err());
        assert!(IntervalLevel::parse("x").is_err());
        let domain = parse_integer_domain("1..10").unwrap();
        let err =
            interval_hierarchy_rows(&domain, &[IntervalLevel::parse("2,5").unwrap()]).unwrap_err();
        assert!(err.to_string().contains("outside the breakpoints"), "{err}");
        // Ladders that are not nested are caught by validation.
        let rows = interval_hierarchy_rows(
            &domain,
            &[
                IntervalLevel::parse("0,4,11").unwrap(),
                IntervalLevel::parse("0,3,11").unwrap(),
            ],
        )
        .unwrap();
        assert!(Hierarchy::from_rows("x", &rows)
            .unwrap_err()
            .to_string()
            .contains("two parents"));
        // Built by interval_hierarchy(), the error names no column: the levels are at fault.
        assert_eq!(
            Hierarchy::from_rows("interval_hierarchy", &rows)
                .unwrap_err()
                .built_by("interval_hierarchy"),
            "interval_hierarchy(): the intervals of level 1 are not nested in those of level 2: '[0-4)' lies in both '[0-3)' and '[3-11)'; every interval of a level must lie within one interval of the next level"
        );
    }

    /// Values and breakpoints at the ends of the 64-bit range label exactly, without
    /// overflow (these overflowed, and panicked in debug builds, before).
    #[test]
    fn extreme_integers() {
        let max = i64::MAX;
        let rows = interval_hierarchy_rows(&[max], &[IntervalLevel::parse("10").unwrap()]).unwrap();
        assert_eq!(rows[0][1], "[9223372036854775800-9223372036854775810)");
        let rows =
            interval_hierarchy_rows(&[i64::MIN], &[IntervalLevel::parse("10").unwrap()]).unwrap();
        assert_eq!(rows[0][1], "[-9223372036854775810--9223372036854775800)");
        let wide = IntervalLevel::parse("-9223372036854775808,9223372036854775807").unwrap();
        let rows = interval_hierarchy_rows(&[1, 5], &[wide]).unwrap();
        assert_eq!(rows[0][1], "[-9223372036854775808-9223372036854775807)");
        let err = parse_integer_domain("-9223372036854775808..9223372036854775807").unwrap_err();
        assert!(
            err.to_string().contains("has more than 1000000 values"),
            "{err}"
        );
    }

    /// One argument cannot make a builder work without bound: at most a million values,
    /// at most five million cells.
    #[test]
    fn built_hierarchies_are_bounded() {
        let err = parse_integer_domain("0..9999999").unwrap_err().to_string();
        assert_eq!(
            err,
            "domain range '0..9999999' has more than 1000000 values, the most a built hierarchy may have"
        );
        let err = parse_integer_domain("0..600000, 700000..1200000")
            .unwrap_err()
            .to_string();
        assert!(err.contains("has more than 1000000 values"), "{err}");
        let domain = parse_integer_domain("0..999999").unwrap();
        assert_eq!(domain.len(), MAX_HIERARCHY_VALUES);
        let levels: Vec<IntervalLevel> = (1..=4)
            .map(|l| IntervalLevel::Width(10i64.pow(l)))
            .collect();
        let err = interval_hierarchy_rows(&domain, &levels)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "the hierarchy would have 1000000 values × 6 columns = 6000000 cells, more than 5000000, the most a built hierarchy may have; give fewer levels or a smaller domain"
        );
        let codes: Vec<String> = (0..2000).map(|i| format!("{i:0>4}")).collect();
        let keep: Vec<usize> = (1..=3000).rev().collect();
        let err = mask_hierarchy_rows(&codes, &keep).unwrap_err().to_string();
        assert!(err.contains("give fewer keep lengths"), "{err}");
    }

    #[test]
    fn masking() {
        let values: Vec<String> = ["I634", "I619", "J189"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let rows = mask_hierarchy_rows(&values, &[3, 2]).unwrap();
        assert_eq!(rows[0], vec!["I634", "I63*", "I6*", "*"]);
        let rows = mask_hierarchy_rows(&values, &[]).unwrap();
        assert_eq!(rows[2], vec!["J189", "J18*", "J1*", "J*", "*"]);
        assert!(mask_hierarchy_rows(&values, &[2, 3]).is_err());
        assert!(mask_hierarchy_rows(&[], &[]).is_err());
        Hierarchy::from_rows("disease", &rows).unwrap();
    }
}
