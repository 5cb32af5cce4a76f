//! Date hierarchies: the days of a range, coarsened level by level to ISO weeks, months,
//! quarters, years and 5- or 10-year spans, then `*`. Labels sort in time order as text
//! and read back as what they cover: `2019-03-14` → `2019-03` → `2019-Q1` → `2019` →
//! `2015-2019` → `2010-2019` → `*`. A date column's values cast to text are its leaves, so
//! every lattice method takes such a hierarchy for a `DATE` quasi-identifier.

use std::fmt;

use chrono::{Datelike, NaiveDate};
use datafusion::arrow::datatypes::DataType;

use super::builders::{MAX_HIERARCHY_CELLS, MAX_HIERARCHY_VALUES};
use super::STAR;

/// One level of a date hierarchy, from the finest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DateLevel {
    /// ISO 8601 week, `2019-W11` (its year is the ISO week-year).
    Week,
    /// `2019-03`.
    Month,
    /// `2019-Q1`.
    Quarter,
    /// `2019`.
    Year,
    /// Five calendar years from a multiple of five, `2015-2019`.
    FiveYears,
    /// Ten calendar years from a multiple of ten, `2010-2019`.
    TenYears,
}

impl DateLevel {
    /// The words a `levels` list takes.
    pub const NAMES: &'static str = "week, month, quarter, year, 5y, 10y";

    fn parse(word: &str) -> Option<Self> {
        Some(match word.trim().to_ascii_lowercase().as_str() {
            "week" => DateLevel::Week,
            "month" => DateLevel::Month,
            "quarter" => DateLevel::Quarter,
            "year" => DateLevel::Year,
            "5y" => DateLevel::FiveYears,
            "10y" => DateLevel::TenYears,
            _ => return None,
        })
    }

    /// The label of `day` at this level.
    pub fn label(self, day: NaiveDate) -> String {
        let year = day.year();
        let span = |width: i32| {
            let first = year.div_euclid(width) * width;
            format!("{first:04}-{:04}", first + width - 1)
        };
        match self {
            DateLevel::Week => {
                let week = day.iso_week();
                format!("{:04}-W{:02}", week.year(), week.week())
            }
            DateLevel::Month => format!("{year:04}-{:02}", day.month()),
            DateLevel::Quarter => format!("{year:04}-Q{}", day.month0() / 3 + 1),
            DateLevel::Year => format!("{year:04}"),
            DateLevel::FiveYears => span(5),
            DateLevel::TenYears => span(10),
        }
    }
}

/// Whether a column of this type holds days: a date, or a timestamp (read as its day).
pub fn is_date_type(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(..)
    )
}

/// What is wrong with a date hierarchy's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DateHierarchyError {
    /// A domain that is not `first..last` of ISO dates.
    NotARange { spec: String },
    /// A date that does not parse as `YYYY-MM-DD`.
    NotADate { text: String },
    /// `first` after `last`.
    EmptyRange { first: String, last: String },
    /// More days than a built hierarchy may have.
    TooManyDays { spec: String },
    /// A level word not among [`DateLevel::NAMES`].
    UnknownLevel { word: String },
    /// A level not coarser than the one before it.
    NotCoarser { level: String, previous: String },
    /// A level after `week`, which it does not nest in.
    AfterWeek { level: String },
    /// More cells than a built hierarchy may have.
    TooManyCells { days: usize, columns: usize },
}

impl fmt::Display for DateHierarchyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DateHierarchyError::NotARange { spec } => write!(
                f,
                "domain '{spec}' is not a range of dates such as '2015-01-01..2019-12-31'"
            ),
            DateHierarchyError::NotADate { text } => {
                write!(f, "'{text}' is not a date written YYYY-MM-DD")
            }
            DateHierarchyError::EmptyRange { first, last } => {
                write!(f, "domain range is empty: {first} is after {last}")
            }
            DateHierarchyError::TooManyDays { spec } => write!(
                f,
                "domain '{spec}' has more than {MAX_HIERARCHY_VALUES} days, the most a built hierarchy may have"
            ),
            DateHierarchyError::UnknownLevel { word } => write!(
                f,
                "level '{word}' is not one of {}",
                DateLevel::NAMES
            ),
            DateHierarchyError::NotCoarser { level, previous } => write!(
                f,
                "level '{level}' is not coarser than '{previous}': give the levels from the finest, e.g. 'month|quarter|year'"
            ),
            DateHierarchyError::AfterWeek { level } => write!(
                f,
                "level '{level}' cannot follow 'week': a week may span two months, quarters or years, so it is the last level before '*'"
            ),
            DateHierarchyError::TooManyCells { days, columns } => write!(
                f,
                "the hierarchy would have {days} days × {columns} columns = {} cells, more than {MAX_HIERARCHY_CELLS}, the most a built hierarchy may have; give fewer days or levels",
                days.saturating_mul(*columns)
            ),
        }
    }
}

impl std::error::Error for DateHierarchyError {}

fn date(text: &str) -> Result<NaiveDate, DateHierarchyError> {
    NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d").map_err(|_| DateHierarchyError::NotADate {
        text: text.trim().to_string(),
    })
}

/// The first and last day of a domain `first..last`.
pub fn parse_date_domain(spec: &str) -> Result<(NaiveDate, NaiveDate), DateHierarchyError> {
    let (first, last) = spec
        .split_once("..")
        .ok_or_else(|| DateHierarchyError::NotARange {
            spec: spec.to_string(),
        })?;
    let (first, last) = (date(first)?, date(last)?);
    if first > last {
        return Err(DateHierarchyError::EmptyRange {
            first: first.to_string(),
            last: last.to_string(),
        });
    }
    if (last - first).num_days() >= MAX_HIERARCHY_VALUES as i64 {
        return Err(DateHierarchyError::TooManyDays {
            spec: spec.to_string(),
        });
    }
    Ok((first, last))
}

/// The levels of `spec` (`'month|quarter|year'`), each coarser than the one before and
/// nothing after `week`.
pub fn parse_date_levels(spec: &str) -> Result<Vec<DateLevel>, DateHierarchyError> {
    let mut levels: Vec<DateLevel> = Vec::new();
    for (i, word) in spec.split('|').filter(|w| !w.trim().is_empty()).enumerate() {
        // The day is the hierarchy's value (its leaf): 'day|month' is 'month'.
        if i == 0 && word.trim().eq_ignore_ascii_case("day") {
            continue;
        }
        let level = DateLevel::parse(word).ok_or_else(|| DateHierarchyError::UnknownLevel {
            word: word.trim().to_string(),
        })?;
        if let Some(&previous) = levels.last() {
            if previous == DateLevel::Week {
                return Err(DateHierarchyError::AfterWeek {
                    level: word.trim().to_string(),
                });
            }
            if level <= previous {
                return Err(DateHierarchyError::NotCoarser {
                    level: word.trim().to_string(),
                    previous: format!("{previous:?}").to_ascii_lowercase(),
                });
            }
        }
        levels.push(level);
    }
    Ok(levels)
}

/// The first and last day a date hierarchy's label stands for: a day `2019-03-14`, an ISO
/// week `2019-W11`, a month `2019-03`, a quarter `2019-Q1`, a year `2019` or a span of
/// years `2015-2019`. `None` for `*` (every day) and for text that is none of these.
pub fn label_days(label: &str) -> Option<(NaiveDate, NaiveDate)> {
    let label = label.trim();
    let year = |text: &str| -> Option<i32> {
        (text.len() == 4 && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse().ok())
            .flatten()
    };
    let last_of_year = |y: i32| NaiveDate::from_ymd_opt(y, 12, 31);
    if let Some(y) = year(label) {
        return Some((NaiveDate::from_ymd_opt(y, 1, 1)?, last_of_year(y)?));
    }
    if let Ok(day) = NaiveDate::parse_from_str(label, "%Y-%m-%d") {
        return (label.len() == 10).then_some((day, day));
    }
    let (head, tail) = label.split_once('-')?;
    let y = year(head)?;
    let digits = |text: &str, len: usize| -> Option<u32> {
        (text.len() == len && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse().ok())
            .flatten()
    };
    if let Some(week) = tail.strip_prefix('W') {
        let first = NaiveDate::from_isoywd_opt(y, digits(week, 2)?, chrono::Weekday::Mon)?;
        return Some((first, first + chrono::Days::new(6)));
    }
    if let Some(quarter) = tail.strip_prefix('Q') {
        let q = digits(quarter, 1).filter(|q| (1..=4).contains(q))?;
        let first = NaiveDate::from_ymd_opt(y, 3 * q - 2, 1)?;
        let next = if q == 4 {
            NaiveDate::from_ymd_opt(y + 1, 1, 1)?
        } else {
            NaiveDate::from_ymd_opt(y, 3 * q + 1, 1)?
        };
        return Some((first, next.pred_opt()?));
    }
    if let Some(month) = digits(tail, 2) {
        let first = NaiveDate::from_ymd_opt(y, month, 1)?;
        let next = first.checked_add_months(chrono::Months::new(1))?;
        return Some((first, next.pred_opt()?));
    }
    let end = year(tail).filter(|end| *end >= y)?;
    Some((NaiveDate::from_ymd_opt(y, 1, 1)?, last_of_year(end)?))
}

/// The hierarchy rows (value `YYYY-MM-DD`, one label per level, `*`) of every day from
/// `first` to `last`.
pub fn date_hierarchy_rows(
    first: NaiveDate,
    last: NaiveDate,
    levels: &[DateLevel],
) -> Result<Vec<Vec<String>>, DateHierarchyError> {
    let days = usize::try_from((last - first).num_days() + 1).unwrap_or(usize::MAX);
    rows_of_days(first.iter_days().take(days), days, levels)
}

/// The hierarchy rows of the given `days` (`count` of them, in order, each once).
pub fn rows_of_days(
    days: impl Iterator<Item = NaiveDate>,
    count: usize,
    levels: &[DateLevel],
) -> Result<Vec<Vec<String>>, DateHierarchyError> {
    let columns = levels.len() + 2;
    if count.saturating_mul(columns) > MAX_HIERARCHY_CELLS {
        return Err(DateHierarchyError::TooManyCells {
            days: count,
            columns,
        });
    }
    Ok(days
        .map(|day| {
            let mut row = Vec::with_capacity(columns);
            row.push(day.format("%Y-%m-%d").to_string());
            row.extend(levels.iter().map(|level| level.label(day)));
            row.push(STAR.to_string());
            row
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> NaiveDate {
        date(text).expect("a date")
    }

    #[test]
    fn labels_read_back_and_sort_in_time_order() {
        let levels = parse_date_levels("week").expect("levels");
        assert_eq!(levels, [DateLevel::Week]);
        assert_eq!(
            parse_date_levels("day|week").expect("levels"),
            [DateLevel::Week]
        );
        assert!(parse_date_levels("month|day").is_err());
        let all = [
            DateLevel::Month,
            DateLevel::Quarter,
            DateLevel::Year,
            DateLevel::FiveYears,
            DateLevel::TenYears,
        ];
        let labels: Vec<String> = all.iter().map(|l| l.label(day("2019-03-14"))).collect();
        assert_eq!(
            labels,
            ["2019-03", "2019-Q1", "2019", "2015-2019", "2010-2019"]
        );
        assert_eq!(DateLevel::Quarter.label(day("2019-12-31")), "2019-Q4");
        // ISO weeks: 2019-12-30 is in week 1 of 2020; 2021-01-03 in week 53 of 2020.
        assert_eq!(DateLevel::Week.label(day("2019-12-30")), "2020-W01");
        assert_eq!(DateLevel::Week.label(day("2021-01-03")), "2020-W53");
        assert_eq!(DateLevel::FiveYears.label(day("2020-01-01")), "2020-2024");
        let mut months: Vec<String> = ["2019-11-02", "2020-01-05", "2019-02-01"]
            .iter()
            .map(|d| DateLevel::Month.label(day(d)))
            .collect();
        months.sort();
        assert_eq!(months, ["2019-02", "2019-11", "2020-01"]);
    }

    /// Every label a hierarchy gives a day reads back as a range holding that day, and the
    /// ranges of one level tile the calendar.
    #[test]
    fn labels_read_back_as_their_first_and_last_day() {
        let range = |label: &str| label_days(label).map(|(a, b)| (a.to_string(), b.to_string()));
        let pair = |a: &str, b: &str| Some((a.to_string(), b.to_string()));
        assert_eq!(range("2019-03-14"), pair("2019-03-14", "2019-03-14"));
        assert_eq!(range("2019-02"), pair("2019-02-01", "2019-02-28"));
        assert_eq!(range("2020-02"), pair("2020-02-01", "2020-02-29"));
        assert_eq!(range("2019-12"), pair("2019-12-01", "2019-12-31"));
        assert_eq!(range("2019-Q1"), pair("2019-01-01", "2019-03-31"));
        assert_eq!(range("2019-Q4"), pair("2019-10-01", "2019-12-31"));
        assert_eq!(range("2019"), pair("2019-01-01", "2019-12-31"));
        assert_eq!(range("2015-2019"), pair("2015-01-01", "2019-12-31"));
        assert_eq!(range("2020-W01"), pair("2019-12-30", "2020-01-05"));
        assert_eq!(range("2020-W53"), pair("2020-12-28", "2021-01-03"));
        for bad in [
            "*",
            "",
            "2019-13",
            "2019-Q5",
            "2019-W54",
            "19-03",
            "2019-3",
            "2019-2015",
            "2019-03-1",
            "[10-20)",
        ] {
            assert_eq!(range(bad), None, "{bad}");
        }
        let levels = parse_date_levels("week").expect("levels");
        let coarse = parse_date_levels("month|quarter|year|5y|10y").expect("levels");
        let mut previous_last: Vec<Option<NaiveDate>> = vec![None; 6];
        for d in day("2015-12-20").iter_days().take(800) {
            for (i, level) in levels.iter().chain(&coarse).enumerate() {
                let (first, last) = label_days(&level.label(d)).expect("a label reads back");
                assert!(first <= d && d <= last, "{level:?} {d}");
                // Consecutive labels meet without a gap.
                if first == d {
                    if let Some(p) = previous_last[i] {
                        assert_eq!(p.succ_opt(), Some(d), "{level:?} {d}");
                    }
                }
                previous_last[i] = Some(last);
            }
        }
    }

    #[test]
    fn every_day_of_the_range_gets_a_row() {
        let levels = parse_date_levels("month | quarter|year").expect("levels");
        let rows =
            date_hierarchy_rows(day("2019-03-30"), day("2019-04-02"), &levels).expect("rows");
        assert_eq!(
            rows,
            [
                ["2019-03-30", "2019-03", "2019-Q1", "2019", "*"],
                ["2019-03-31", "2019-03", "2019-Q1", "2019", "*"],
                ["2019-04-01", "2019-04", "2019-Q2", "2019", "*"],
                ["2019-04-02", "2019-04", "2019-Q2", "2019", "*"],
            ]
        );
        // A leap day, and the hierarchy is valid (each label has one parent).
        let rows =
            date_hierarchy_rows(day("2016-01-01"), day("2016-12-31"), &levels).expect("rows");
        assert_eq!(rows.len(), 366);
        crate::hierarchy::Hierarchy::from_rows("dates", &rows).expect("a valid hierarchy");
    }

    #[test]
    fn bad_arguments_are_named() {
        let message = |e: DateHierarchyError| e.to_string();
        assert_eq!(
            parse_date_domain("2019-01-01").map_err(message),
            Err(
                "domain '2019-01-01' is not a range of dates such as '2015-01-01..2019-12-31'"
                    .into()
            )
        );
        assert_eq!(
            parse_date_domain("2019-02-30..2019-03-01").map_err(message),
            Err("'2019-02-30' is not a date written YYYY-MM-DD".into())
        );
        assert_eq!(
            parse_date_domain("2019-03-01..2019-01-01").map_err(message),
            Err("domain range is empty: 2019-03-01 is after 2019-01-01".into())
        );
        assert!(parse_date_domain("0001-01-01..9999-12-31")
            .map_err(message)
            .is_err_and(|e| e.contains("more than 1000000 days")));
        assert_eq!(
            parse_date_levels("month|fortnight").map_err(message),
            Err("level 'fortnight' is not one of week, month, quarter, year, 5y, 10y".into())
        );
        assert!(parse_date_levels("year|month")
            .map_err(message)
            .is_err_and(|e| e.starts_with("level 'month' is not coarser than 'year'")));
        assert!(parse_date_levels("week|year")
            .map_err(message)
            .is_err_and(|e| e.starts_with("level 'year' cannot follow 'week'")));
        let (first, last) = parse_date_domain("1000-01-01..3000-12-31").expect("731 000 days");
        assert!(date_hierarchy_rows(
            first,
            last,
            &parse_date_levels("month|quarter|year|5y|10y").expect("levels")
        )
        .map_err(message)
        .is_err_and(|e| e.contains("cells")));
    }
}
