//! Phase 1 per person (METHODS.md §9): the rows of the aggregate grouped by person, then
//! either bounded to `max_rows_per_person` rows per person (differentially private
//! methods) or numbered as (person, tuple) combinations for the person histogram of a
//! syntactic method ([`PersonClasses`], what a method sees).

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{exec_err, Result};
use rand::RngCore;

use super::{bound_contributions, PersonCodes};
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;

/// The classes of a syntactic release with persons inside: a histogram whose values are
/// (person, tuple) combinations, and how combinations decode.
#[derive(Debug, Clone)]
pub struct PersonClasses {
    /// Leaf-level histogram over combinations of a person and a sensitive tuple.
    pub histogram: GroupedHistogram,
    /// The person and the tuple of every combination.
    pub codes: PersonCodes,
    /// Number of distinct persons in the source.
    pub persons: usize,
}

/// One past the last row of every person, in the aggregate's rows (sorted by person; the
/// person column is `column` of every batch). A NULL person is an error naming the column.
pub fn person_ends(
    batches: &[RecordBatch],
    column: usize,
    name: &str,
    source_name: &str,
) -> Result<Vec<usize>> {
    let mut ends = Vec::new();
    let mut last: Option<String> = None;
    let mut row = 0usize;
    for batch in batches {
        let text = cast(batch.column(column), &DataType::Utf8)?;
        let text = text.as_string::<i32>();
        if text.null_count() > 0 {
            return exec_err!(
                "anonymize(): person column '{name}' of table '{source_name}' contains NULL values; every row needs the person it belongs to"
            );
        }
        for value in text.iter().flatten() {
            if last.as_deref() != Some(value) {
                if row > 0 {
                    ends.push(row);
                }
                last = Some(value.to_string());
            }
            row += 1;
        }
    }
    if row > 0 {
        ends.push(row);
    }
    Ok(ends)
}

/// Keeps at most `m` rows per person, chosen uniformly at random with `rng`
/// ([`bound_contributions`]), and drops the combinations left without a row.
pub fn bound_rows<R: RngCore + ?Sized>(
    ends: &[usize],
    leaf_codes: &mut [Vec<u32>],
    values: &mut Vec<u32>,
    counts: &mut Vec<u64>,
    m: u64,
    rng: &mut R,
) {
    bound_contributions(ends, counts, m, rng);
    let keep: Vec<bool> = counts.iter().map(|&n| n > 0).collect();
    let retain = |v: &mut Vec<u32>| {
        let mut i = 0;
        v.retain(|_| {
            i += 1;
            keep[i - 1]
        });
    };
    for codes in leaf_codes.iter_mut() {
        retain(codes);
    }
    retain(values);
    counts.retain(|&n| n > 0);
}

/// The person histogram of rows sorted by person (`ends` as in [`person_ends`]).
pub fn person_classes(
    hierarchies: &[&Hierarchy],
    ends: &[usize],
    leaf_codes: Vec<Vec<u32>>,
    tuples: &[u32],
    counts: Vec<u64>,
) -> Result<PersonClasses> {
    let (codes, combos) = PersonCodes::number(ends, tuples);
    let histogram =
        GroupedHistogram::from_rows(hierarchies, leaf_codes, combos, counts, codes.len())?;
    Ok(PersonClasses {
        histogram,
        codes,
        persons: ends.len(),
    })
}
