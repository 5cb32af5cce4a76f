//! Releases: the small released histogram a mechanism produces and its expansion into
//! microdata rows in canonical order (by class, then by value), so that no row's position
//! tells anything about how it came to be (a counterfeit looks like any other row).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{internal_err, Result};

use crate::hierarchy::{Hierarchy, STAR};

/// Class code standing for a suppressed (fully starred) quasi-identifier.
pub const SUPPRESSED: u32 = u32::MAX;

/// Rows a release expands into, per Arrow batch.
pub const RELEASE_BATCH_ROWS: usize = 8192;

/// Generalized classes with the released count of each informative value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleasedHistogram {
    /// Generalization level of each quasi-identifier.
    pub levels: Vec<usize>,
    /// Per quasi-identifier, the code of each released class ([`SUPPRESSED`] for `*`).
    pub class_codes: Vec<Vec<u32>>,
    /// Class `c` owns entries `class_offsets[c]..class_offsets[c + 1]`.
    pub class_offsets: Vec<usize>,
    /// Informative-value code of each entry (ascending within a class).
    pub values: Vec<u32>,
    /// Released number of rows of each entry.
    pub counts: Vec<u64>,
}

impl ReleasedHistogram {
    /// An empty release at the given node.
    pub fn new(levels: Vec<usize>, attrs: usize) -> Self {
        Self {
            levels,
            class_codes: vec![Vec::new(); attrs],
            class_offsets: vec![0],
            values: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// Appends a class from its real `(value, count)` pairs (ascending) and extra values.
    pub fn push_class(&mut self, codes: &[u32], real: &[(u32, u64)], extra: &[u32]) {
        let mut merged: Vec<(u32, u64)> = real.to_vec();
        for &v in extra {
            match merged.binary_search_by_key(&v, |&(value, _)| value) {
                Ok(i) => merged[i].1 += 1,
                Err(i) => merged.insert(i, (v, 1)),
            }
        }
        for (a, &code) in codes.iter().enumerate() {
            self.class_codes[a].push(code);
        }
        for (v, c) in merged {
            self.values.push(v);
            self.counts.push(c);
        }
        self.class_offsets.push(self.values.len());
    }

    /// Number of released classes.
    pub fn class_count(&self) -> usize {
        self.class_offsets.len() - 1
    }

    /// Number of released rows.
    pub fn row_count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Expands the histogram into rows: one Utf8 column per quasi-identifier (its label at
    /// the released level, `*` when suppressed), then — when `schema` has a field for each —
    /// the sensitive columns, each taken from its array in `values` (one entry per value
    /// code of the histogram).
    pub fn expand(
        &self,
        hierarchies: &[&Hierarchy],
        values: &[ArrayRef],
        schema: &SchemaRef,
    ) -> Result<Vec<RecordBatch>> {
        let attrs = hierarchies.len();
        let with_values = match schema.fields().len() {
            n if n == attrs + values.len() => true,
            n if n == attrs => false,
            n => {
                return internal_err!(
                    "release schema has {n} fields, expected {attrs} or {}",
                    attrs + values.len()
                )
            }
        };
        let label_arrays: Vec<ArrayRef> = (0..attrs)
            .map(|a| {
                let labels = hierarchies[a].level(self.levels[a]).labels();
                let mut all: Vec<&str> = labels.iter().map(String::as_str).collect();
                all.push(STAR);
                Arc::new(StringArray::from(all)) as ArrayRef
            })
            .collect();
        let star_index: Vec<u32> = (0..attrs)
            .map(|a| hierarchies[a].level(self.levels[a]).cardinality() as u32)
            .collect();

        let mut batches = Vec::new();
        let mut qi_idx: Vec<Vec<u32>> = vec![Vec::with_capacity(RELEASE_BATCH_ROWS); attrs];
        let mut val_idx: Vec<u32> = Vec::with_capacity(RELEASE_BATCH_ROWS);
        let flush = |qi_idx: &mut Vec<Vec<u32>>,
                     val_idx: &mut Vec<u32>,
                     batches: &mut Vec<RecordBatch>|
         -> Result<()> {
            if val_idx.is_empty() {
                return Ok(());
            }
            let mut columns: Vec<ArrayRef> = Vec::with_capacity(attrs + values.len());
            for a in 0..attrs {
                let idx = UInt32Array::from(std::mem::take(&mut qi_idx[a]));
                columns.push(take(label_arrays[a].as_ref(), &idx, None)?);
            }
            let idx = UInt32Array::from(std::mem::take(val_idx));
            if with_values {
                for array in values {
                    columns.push(take(array.as_ref(), &idx, None)?);
                }
            }
            batches.push(RecordBatch::try_new(schema.clone(), columns)?);
            Ok(())
        };
        for c in 0..self.class_count() {
            let codes: Vec<u32> = (0..attrs)
                .map(|a| match self.class_codes[a][c] {
                    SUPPRESSED => star_index[a],
                    code => code,
                })
                .collect();
            for e in self.class_offsets[c]..self.class_offsets[c + 1] {
                let mut remaining = self.counts[e];
                while remaining > 0 {
                    let room = (RELEASE_BATCH_ROWS - val_idx.len()) as u64;
                    let take_now = remaining.min(room) as usize;
                    for a in 0..attrs {
                        qi_idx[a].extend(std::iter::repeat_n(codes[a], take_now));
                    }
                    val_idx.extend(std::iter::repeat_n(self.values[e], take_now));
                    remaining -= take_now as u64;
                    if val_idx.len() == RELEASE_BATCH_ROWS {
                        flush(&mut qi_idx, &mut val_idx, &mut batches)?;
                    }
                }
            }
        }
        flush(&mut qi_idx, &mut val_idx, &mut batches)?;
        Ok(batches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::rows;
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    fn hierarchy() -> Hierarchy {
        let rows = rows(&[&["a", "ab", "*"], &["b", "ab", "*"], &["c", "c", "*"]]);
        Hierarchy::from_rows("x", &rows).unwrap()
    }

    #[test]
    fn expands_in_canonical_order_with_suppressed_class_last() {
        let h = hierarchy();
        let mut release = ReleasedHistogram::new(vec![1], 1);
        release.push_class(&[0], &[(0, 2), (2, 1)], &[1, 2]);
        release.push_class(&[1], &[(1, 1)], &[]);
        release.push_class(&[SUPPRESSED], &[(0, 1)], &[0]);
        assert_eq!(release.row_count(), 8);
        let values: ArrayRef = Arc::new(StringArray::from(vec!["v0", "v1", "v2"]));
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Utf8, false),
            Field::new("inf", DataType::Utf8, false),
        ]));
        let batches = release
            .expand(&[&h], std::slice::from_ref(&values), &schema)
            .unwrap();
        let rows: Vec<(String, String)> = batches
            .iter()
            .flat_map(|b| {
                let x = b.column(0).as_string::<i32>().clone();
                let v = b.column(1).as_string::<i32>().clone();
                (0..b.num_rows()).map(move |i| (x.value(i).to_string(), v.value(i).to_string()))
            })
            .collect();
        let expected: Vec<(String, String)> = [
            ("ab", "v0"),
            ("ab", "v0"),
            ("ab", "v1"),
            ("ab", "v2"),
            ("ab", "v2"),
            ("c", "v1"),
            ("*", "v0"),
            ("*", "v0"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(rows, expected);
        // Without the informative field only the quasi-identifiers are released.
        let qi_only = Arc::new(Schema::new(vec![Field::new("x", DataType::Utf8, false)]));
        let batches = release.expand(&[&h], &[values], &qi_only).unwrap();
        assert_eq!(batches[0].num_columns(), 1);
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 8);
    }
}
