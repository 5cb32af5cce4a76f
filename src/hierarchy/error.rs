//! Why a hierarchy's rows were refused, with messages that name the attribute, the value and
//! the level.

use std::fmt;

use datafusion::common::DataFusionError;

use super::STAR;
use crate::quote::quote;

/// Why a hierarchy's rows were refused.
///
/// The [`Display`](fmt::Display) text is the message alone; the caller decides which
/// [`DataFusionError`] it becomes (`From` makes a planning error; a hierarchy table read
/// while a release runs gives an execution error naming the table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HierarchyError {
    /// No rows.
    Empty {
        /// The column the hierarchy serves.
        attribute: String,
    },
    /// Rows with no cells.
    RowsWithoutValues {
        /// The column the hierarchy serves.
        attribute: String,
    },
    /// A row with a different number of levels than the first row.
    DifferentHeights {
        /// The column the hierarchy serves.
        attribute: String,
        /// Raw value of the first row.
        first_value: String,
        /// Levels of the first row.
        first_levels: usize,
        /// Number (from 1) of the offending row.
        row: usize,
        /// Raw value of the offending row (empty when it has no cells).
        value: String,
        /// Levels of the offending row.
        levels: usize,
    },
    /// An empty cell.
    EmptyCell {
        /// The column the hierarchy serves.
        attribute: String,
        /// Number (from 1) of the row.
        row: usize,
        /// Level of the cell.
        level: usize,
    },
    /// A raw value listed twice with different generalizations.
    ValueListedTwice {
        /// The column the hierarchy serves.
        attribute: String,
        /// The raw value.
        value: String,
    },
    /// More raw values than leaf codes can number.
    TooManyValues {
        /// The column the hierarchy serves.
        attribute: String,
    },
    /// A value with two different parents on the next level.
    TwoParents {
        /// The column the hierarchy serves.
        attribute: String,
        /// The value.
        value: String,
        /// Its level.
        level: usize,
        /// The parent first seen.
        first: String,
        /// The other parent.
        second: String,
    },
    /// A `*` that generalizes further to another label.
    InnerStar {
        /// The column the hierarchy serves.
        attribute: String,
        /// Level of the `*`.
        star_level: usize,
        /// Raw value of the row.
        value: String,
        /// The label above the `*`.
        label: String,
        /// Level of that label.
        level: usize,
    },
    /// A label whose parent differs between the levels it occurs on.
    LabelTwoParents {
        /// The column the hierarchy serves.
        attribute: String,
        /// The label.
        label: String,
        /// Its parent first seen.
        first: String,
        /// The level the label had under `first`.
        first_level: usize,
        /// Its other parent.
        second: String,
        /// The level the label has under `second`.
        second_level: usize,
    },
    /// Labels whose parents lead back to themselves.
    Cycle {
        /// The column the hierarchy serves.
        attribute: String,
        /// The cycle, its first label repeated at the end, each with the level it was first
        /// seen on (if any).
        path: Vec<(String, Option<usize>)>,
    },
    /// A top level with more than one label.
    NoSingleRoot {
        /// The column the hierarchy serves.
        attribute: String,
        /// The top level.
        top_level: usize,
        /// Number of labels on it.
        label_count: usize,
        /// Its first labels (at most five).
        first_labels: Vec<String>,
    },
}

impl HierarchyError {
    /// The message, with `subject` naming the hierarchy (as "hierarchy for column 'age'").
    fn message(&self, subject: &str) -> String {
        match self {
            HierarchyError::Empty { attribute: _ } => {
                format!("{subject} is empty")
            }
            HierarchyError::RowsWithoutValues { attribute: _ } => {
                format!("{subject} has rows without values")
            }
            HierarchyError::DifferentHeights {
                attribute: _,
                first_value,
                first_levels,
                row,
                value,
                levels,
            } => format!(
                "{subject} has rows of different heights: row 1 ({}) has {first_levels} levels, row {row} ({}) has {levels}",
                quote(first_value),
                quote(value)
            ),
            HierarchyError::EmptyCell {
                attribute: _,
                row,
                level,
            } => format!(
                "{subject} has an empty cell at row {row}, level {level}; every row needs a value at every level"
            ),
            HierarchyError::ValueListedTwice { attribute: _, value } => format!(
                "{subject} lists value {} twice with different generalizations",
                quote(value)
            ),
            HierarchyError::TooManyValues { attribute: _ } => {
                format!("{subject} has too many values")
            }
            HierarchyError::TwoParents {
                attribute: _,
                value,
                level,
                first,
                second,
            } => format!(
                "{subject}: value {} at level {level} has two parents at level {}: {} and {}",
                quote(value),
                level + 1,
                quote(first),
                quote(second)
            ),
            HierarchyError::InnerStar {
                attribute: _,
                star_level,
                value,
                label,
                level,
            } => format!(
                "{subject}: '{STAR}' at level {star_level} (row of value {}) is an inner label: it generalizes to {} at level {level}; '{STAR}' stands for the fully generalized value, so every level above a '{STAR}' must be '{STAR}' too",
                quote(value),
                quote(label)
            ),
            HierarchyError::LabelTwoParents {
                attribute: _,
                label,
                first,
                first_level,
                second,
                second_level,
            } => format!(
                "{subject}: label {} has two parents: {} (level {first_level} to {}) and {} (level {second_level} to {}); a label must stand for the same group on every level (are labels swapped between levels?)",
                quote(label),
                quote(first),
                first_level + 1,
                quote(second),
                second_level + 1
            ),
            HierarchyError::Cycle { attribute: _, path } => {
                let shown: Vec<String> = path
                    .iter()
                    .map(|(label, level)| match level {
                        Some(level) => format!("{} (level {level})", quote(label)),
                        None => quote(label),
                    })
                    .collect();
                format!(
                    "{subject}: labels form a cycle: {}; every generalization must lead to a coarser label, never back to a finer one",
                    shown.join(" -> ")
                )
            }
            HierarchyError::NoSingleRoot {
                attribute: _,
                top_level,
                label_count,
                first_labels,
            } => {
                let shown: Vec<String> = first_labels.iter().map(|l| quote(l)).collect();
                let more = if *label_count > first_labels.len() {
                    ", ..."
                } else {
                    ""
                };
                format!(
                    "{subject} has no single root: its top level {top_level} has {label_count} labels ({}{more}); add a last level that generalizes every value to one label, e.g. '{STAR}'",
                    shown.join(", ")
                )
            }
        }
    }

    /// The column the hierarchy serves.
    fn attribute(&self) -> &str {
        match self {
            HierarchyError::Empty { attribute }
            | HierarchyError::RowsWithoutValues { attribute }
            | HierarchyError::DifferentHeights { attribute, .. }
            | HierarchyError::EmptyCell { attribute, .. }
            | HierarchyError::ValueListedTwice { attribute, .. }
            | HierarchyError::TooManyValues { attribute }
            | HierarchyError::TwoParents { attribute, .. }
            | HierarchyError::InnerStar { attribute, .. }
            | HierarchyError::LabelTwoParents { attribute, .. }
            | HierarchyError::Cycle { attribute, .. }
            | HierarchyError::NoSingleRoot { attribute, .. } => attribute,
        }
    }

    /// The message for a hierarchy the builder function `function` made from its arguments
    /// (no column is involved yet): intervals that are not nested said as such, anything
    /// else about "the hierarchy built from these arguments".
    pub fn built_by(&self, function: &str) -> String {
        match self {
            HierarchyError::TwoParents {
                value,
                level,
                first,
                second,
                ..
            } if function == "interval_hierarchy" => format!(
                "{function}(): the intervals of level {} are not nested in those of level {}: {} lies in both {} and {}; every interval of a level must lie within one interval of the next level",
                level,
                level + 1,
                quote(value),
                quote(first),
                quote(second)
            ),
            other => other.message(&format!("{function}(): the hierarchy built from these arguments")),
        }
    }
}

impl fmt::Display for HierarchyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message(&format!("hierarchy for column '{}'", self.attribute())))
    }
}

impl std::error::Error for HierarchyError {}

impl From<HierarchyError> for DataFusionError {
    /// A planning error whose message is the error's [`Display`](fmt::Display).
    fn from(e: HierarchyError) -> Self {
        DataFusionError::Plan(e.to_string())
    }
}
