//! Releases: the small released histogram a mechanism produces and its expansion into
//! microdata rows in canonical order (by class, then by value), so that no row's position
//! tells anything about how it came to be (a counterfeit looks like any other row).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Result;

use crate::hierarchy::Hierarchy;

pub mod catalog;
pub mod interval_means;
mod own_rows;
mod rows;
mod size;

pub use interval_means::{interval_means_schema, IntervalMeans};
pub use own_rows::{OwnRows, OwnValues};
pub use rows::{ReleaseBatches, ReleasedRows, ReleasedRowsParts};
pub use size::{check_release_size, ReleaseRowLimit, ReleaseSize, TooManyRows, SIZE_FAILURE};

/// Class code standing for a suppressed (fully starred) quasi-identifier.
pub const SUPPRESSED: u32 = u32::MAX;

/// Rows a release expands into, per Arrow batch.
pub const RELEASE_BATCH_ROWS: usize = 8192;

/// The columns a streamed table produces: indices into its full schema, in the order
/// wanted, and their schema. Every column until a projection narrows them; columns left
/// out are never built.
#[derive(Debug, Clone)]
pub struct Columns {
    indices: Vec<usize>,
    schema: SchemaRef,
}

impl Columns {
    /// Every column of `schema`.
    pub fn all(schema: &SchemaRef) -> Self {
        Self {
            indices: (0..schema.fields().len()).collect(),
            schema: schema.clone(),
        }
    }

    /// The columns `projection` names (indices into these columns, in the order wanted; an
    /// empty list keeps none: batches then carry only their row counts).
    pub fn project(&self, projection: &[usize]) -> Result<Self> {
        Ok(Self {
            indices: projection.iter().map(|&i| self.indices[i]).collect(),
            schema: Arc::new(self.schema.project(projection)?),
        })
    }

    /// Columns given as indices into a full schema of `width` columns and the schema they
    /// produce; refused unless each index is in range and the schema has one field each.
    pub fn from_parts(indices: Vec<usize>, schema: SchemaRef, width: usize) -> Result<Self> {
        if indices.len() != schema.fields().len() || indices.iter().any(|&i| i >= width) {
            return datafusion::common::internal_err!(
                "columns {indices:?} do not fit a schema of {} fields out of {width}",
                schema.fields().len()
            );
        }
        Ok(Self { indices, schema })
    }

    /// The produced columns as indices into the full schema.
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }

    /// Per column of the full schema (`width` columns), whether it is produced.
    pub fn wanted(&self, width: usize) -> Vec<bool> {
        let mut wanted = vec![false; width];
        for &i in &self.indices {
            if let Some(w) = wanted.get_mut(i) {
                *w = true;
            }
        }
        wanted
    }

    /// The schema of the produced columns.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }
}

/// Two `(value, count)` sequences ascending by value, walked together: `(value, count in
/// a, count in b)` for each value of either, ascending (0 where a value is missing).
pub fn merge_pairs(
    a: impl Iterator<Item = (u32, u64)>,
    b: impl Iterator<Item = (u32, u64)>,
) -> impl Iterator<Item = (u32, u64, u64)> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || match (a.peek().copied(), b.peek().copied()) {
        (Some((v, x)), Some((w, y))) if v == w => {
            a.next();
            b.next();
            Some((v, x, y))
        }
        (Some((v, x)), Some((w, _))) if v < w => {
            a.next();
            Some((v, x, 0))
        }
        (_, Some((w, y))) => {
            b.next();
            Some((w, 0, y))
        }
        (Some((v, x)), None) => {
            a.next();
            Some((v, x, 0))
        }
        (None, None) => None,
    })
}

/// The sum of two `(value, count)` lists ascending by value, ascending by value.
pub fn merge_counts(a: &[(u32, u64)], b: &[(u32, u64)]) -> Vec<(u32, u64)> {
    merge_pairs(a.iter().copied(), b.iter().copied())
        .map(|(v, x, y)| (v, x + y))
        .collect()
}

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
    /// The entries of class `c`: indexes into `values` and `counts`.
    #[inline]
    pub fn class_range(&self, c: usize) -> std::ops::Range<usize> {
        self.class_offsets[c]..self.class_offsets[c + 1]
    }

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
        let mut extra = extra.to_vec();
        extra.sort_unstable();
        let mut extra_pairs: Vec<(u32, u64)> = Vec::new();
        for v in extra {
            match extra_pairs.last_mut() {
                Some((last, count)) if *last == v => *count += 1,
                _ => extra_pairs.push((v, 1)),
            }
        }
        self.push_class_pairs(codes, real, &extra_pairs);
    }

    /// Appends a class from its real `(value, count)` pairs and its extra `(value, count)`
    /// pairs, both ascending by value.
    pub fn push_class_pairs(&mut self, codes: &[u32], real: &[(u32, u64)], extra: &[(u32, u64)]) {
        for (a, &code) in codes.iter().enumerate() {
            self.class_codes[a].push(code);
        }
        for (value, count) in merge_counts(real, extra) {
            self.values.push(value);
            self.counts.push(count);
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
    /// code of the histogram). All at once: see [`ReleasedRows`] for the streaming form,
    /// which every query uses.
    pub fn expand(
        &self,
        hierarchies: &[&Hierarchy],
        values: &[ArrayRef],
        schema: &SchemaRef,
    ) -> Result<Vec<RecordBatch>> {
        ReleasedRows::new(Arc::new(self.clone()), hierarchies, values, schema)?.collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::rows;
    use datafusion::arrow::array::{AsArray, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    fn hierarchy() -> Hierarchy {
        let rows = rows(&[&["a", "ab", "*"], &["b", "ab", "*"], &["c", "c", "*"]]);
        Hierarchy::from_rows("x", &rows).unwrap()
    }

    #[test]
    fn merge_counts_sums_equal_values() {
        assert_eq!(
            merge_counts(&[(1, 2), (4, 1), (7, 3)], &[(0, 2), (4, 2), (9, 1)]),
            vec![(0, 2), (1, 2), (4, 3), (7, 3), (9, 1)]
        );
        assert_eq!(merge_counts(&[], &[(3, 1)]), vec![(3, 1)]);
        assert_eq!(merge_counts(&[(3, 1)], &[]), vec![(3, 1)]);
    }

    #[test]
    fn push_class_merges_extra_values_into_the_real_pairs() {
        let mut release = ReleasedHistogram::new(vec![0], 1);
        release.push_class(&[0], &[(1, 2), (4, 1), (7, 3)], &[9, 4, 0, 4, 1, 5, 0]);
        assert_eq!(release.values, vec![0, 1, 4, 5, 7, 9]);
        assert_eq!(release.counts, vec![2, 3, 3, 1, 3, 1]);
        release.push_class(&[1], &[], &[3, 3]);
        release.push_class(&[2], &[(2, 5)], &[]);
        assert_eq!(release.class_offsets, vec![0, 6, 7, 8]);
        assert_eq!(&release.values[6..], &[3, 2]);
        assert_eq!(&release.counts[6..], &[2, 5]);
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

    /// A projected expansion builds exactly the named columns, in the order named, with the
    /// same rows; an empty projection gives batches carrying only their row counts.
    #[test]
    fn projection_builds_only_the_named_columns() {
        let h = hierarchy();
        let mut release = ReleasedHistogram::new(vec![1], 1);
        // More rows than one batch, so that the counts span batches.
        release.push_class(&[0], &[(0, RELEASE_BATCH_ROWS as u64), (2, 3)], &[1]);
        release.push_class(&[SUPPRESSED], &[(1, 5)], &[]);
        let values: ArrayRef = Arc::new(StringArray::from(vec!["v0", "v1", "v2"]));
        let schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Utf8, false),
            Field::new("inf", DataType::Utf8, false),
        ]));
        let rows = ReleasedRows::new(
            Arc::new(release),
            &[&h],
            std::slice::from_ref(&values),
            &schema,
        )
        .unwrap();
        let full = rows.collect().unwrap();

        let swapped = rows.project(&[1, 0]).unwrap().collect().unwrap();
        assert_eq!(swapped.len(), full.len());
        for (s, f) in swapped.iter().zip(&full) {
            assert_eq!(s.schema().field(0).name(), "inf");
            assert_eq!(s.column(0), f.column(1));
            assert_eq!(s.column(1), f.column(0));
        }
        let only_values = rows.project(&[1]).unwrap().collect().unwrap();
        assert_eq!(only_values[0].num_columns(), 1);
        assert_eq!(only_values[0].column(0), full[0].column(1));

        let none = rows.project(&[]).unwrap();
        let counted = crate::testing::columnless_row_counts(none.batches());
        assert_eq!(
            counted,
            full.iter().map(|b| b.num_rows()).collect::<Vec<_>>()
        );
        assert_eq!(counted.iter().sum::<usize>(), RELEASE_BATCH_ROWS + 9);
        // Projections compose: the second indexes the first's columns.
        let again = rows.project(&[1, 0]).unwrap().project(&[1]).unwrap();
        assert_eq!(again.collect().unwrap()[0].column(0), full[0].column(0));
    }
}
