//! The catalog of counterfeit records that accompanies a release with counterfeits (UPA,
//! docs/METHODS.md §5.4): released classes partitioned into groups, and per group and
//! sensitive value the number of counterfeit rows among the group's rows.
//!
//! Published as a table (`anonymize_catalog(...)`), one row per (group, class, value):
//!
//! ```text
//! group_id | <qi_1> … <qi_q> | <sensitive> | count
//! ```
//!
//! A class is identified by its quasi-identifier labels, exactly as they appear in the
//! released rows, so a recipient resolves it from the released table alone (a join on the
//! quasi-identifier columns). `count` is the group's count for the value, repeated on each of
//! the group's classes; the paper's row `({class ids}, value, count)` is the set of rows
//! sharing `group_id` and value.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array, UInt64Array,
};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{internal_err, Result};

use crate::release::{Columns, ReleasedHistogram, ReleasedRows, RELEASE_BATCH_ROWS};

/// Name of the catalog's group column.
pub const GROUP_COLUMN: &str = "group_id";
/// Name of the catalog's count column.
pub const COUNT_COLUMN: &str = "count";

/// One catalog entry: `count` counterfeits with sensitive value `value` among the rows of
/// group `group`'s classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogEntry {
    /// Index into [`CounterfeitCatalog::groups`].
    pub group: usize,
    /// Sensitive-value code.
    pub value: u32,
    /// Number of counterfeit rows (at least 1).
    pub count: u64,
}

/// Groups of released classes and their counterfeit counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterfeitCatalog {
    /// Per group, the released class indices (ascending); groups ordered by first class.
    pub groups: Vec<Vec<usize>>,
    /// Entries ascending by (group, value).
    pub entries: Vec<CatalogEntry>,
}

impl CounterfeitCatalog {
    /// Total number of counterfeit rows.
    pub fn counterfeits(&self) -> u64 {
        self.entries.iter().map(|e| e.count).sum()
    }

    /// Schema of the published catalog for the release's quasi-identifier names and
    /// sensitive column.
    pub fn schema(qi: &[String], sensitive: (&str, &DataType)) -> SchemaRef {
        let mut fields = vec![Field::new(GROUP_COLUMN, DataType::UInt64, false)];
        fields.extend(qi.iter().map(|q| Field::new(q, DataType::Utf8, false)));
        fields.push(Field::new(sensitive.0, sensitive.1.clone(), false));
        fields.push(Field::new(COUNT_COLUMN, DataType::UInt64, false));
        Arc::new(Schema::new(fields))
    }
}

/// The published catalog, expanded as it is read: one row per (group, value, class),
/// ordered by group, value, class, at most [`RELEASE_BATCH_ROWS`] per batch. Only the
/// projected columns are built, and memory stays proportional to the catalog's groups and
/// entries, never to its row count (a group's count is repeated on each of its classes).
#[derive(Debug, Clone)]
pub struct CatalogRows {
    /// The release the catalog describes: its classes' labels.
    release: ReleasedRows,
    catalog: Arc<CounterfeitCatalog>,
    /// Sensitive values by code.
    values: ArrayRef,
    /// The columns produced.
    columns: Columns,
}

impl CatalogRows {
    /// The rows of `catalog` for `release` under `schema` ([`CounterfeitCatalog::schema`]).
    /// Fails if the catalog names a group or class the release does not have.
    pub fn new(
        release: ReleasedRows,
        catalog: Arc<CounterfeitCatalog>,
        values: ArrayRef,
        schema: &SchemaRef,
    ) -> Result<Self> {
        let attrs = release.histogram().levels.len();
        if schema.fields().len() != attrs + 3 {
            return internal_err!(
                "catalog schema has {} fields, expected {}",
                schema.fields().len(),
                attrs + 3
            );
        }
        let classes = release.histogram().class_count();
        for entry in &catalog.entries {
            let Some(group) = catalog.groups.get(entry.group) else {
                return internal_err!(
                    "catalog entry names group {} of {}",
                    entry.group,
                    catalog.groups.len()
                );
            };
            if let Some(&c) = group.iter().find(|&&c| c >= classes) {
                return internal_err!("catalog names class {c} of {classes}");
            }
        }
        Ok(Self {
            release,
            catalog,
            values,
            columns: Columns::all(schema),
        })
    }

    /// The same rows restricted to the columns `projection` names (indices into this
    /// catalog's schema; an empty list gives batches that carry only their row counts).
    pub fn project(&self, projection: &[usize]) -> Result<Self> {
        Ok(Self {
            columns: self.columns.project(projection)?,
            ..self.clone()
        })
    }

    #[cfg(test)]
    /// Number of rows.
    pub fn row_count(&self) -> u64 {
        self.catalog
            .entries
            .iter()
            .map(|e| self.catalog.groups[e.group].len() as u64)
            .sum()
    }

    /// The rows, produced as the iterator is advanced.
    pub fn batches(&self) -> CatalogBatches {
        CatalogBatches {
            rows: self.clone(),
            entry: 0,
            position: 0,
        }
    }

    fn batch(
        &self,
        rows: usize,
        mut groups: Vec<u64>,
        mut labels: Vec<Vec<u32>>,
        mut values: Vec<u32>,
        mut counts: Vec<u64>,
    ) -> Result<RecordBatch> {
        let attrs = labels.len();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.columns.indices().len());
        for &i in self.columns.indices() {
            columns.push(match i {
                0 => Arc::new(UInt64Array::from(std::mem::take(&mut groups))) as ArrayRef,
                i if i <= attrs => take(
                    self.release.labels(i - 1).as_ref(),
                    &UInt32Array::from(std::mem::take(&mut labels[i - 1])),
                    None,
                )?,
                i if i == attrs + 1 => take(
                    self.values.as_ref(),
                    &UInt32Array::from(std::mem::take(&mut values)),
                    None,
                )?,
                _ => Arc::new(UInt64Array::from(std::mem::take(&mut counts))),
            });
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            self.columns.schema().clone(),
            columns,
            &options,
        )?)
    }
}

/// Iterator over the batches of a [`CatalogRows`] (see [`CatalogRows::batches`]).
#[derive(Debug)]
pub struct CatalogBatches {
    rows: CatalogRows,
    /// Next catalog entry to expand.
    entry: usize,
    /// Classes of `entry`'s group already produced.
    position: usize,
}

impl Iterator for CatalogBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let catalog = &self.rows.catalog;
        let attrs = self.rows.release.histogram().levels.len();
        let wanted = self.rows.columns.wanted(attrs + 3);
        let mut groups = Vec::new();
        let mut labels: Vec<Vec<u32>> = vec![Vec::new(); attrs];
        let mut values = Vec::new();
        let mut counts = Vec::new();
        let mut filled = 0usize;
        while filled < RELEASE_BATCH_ROWS && self.entry < catalog.entries.len() {
            let entry = catalog.entries[self.entry];
            let classes = &catalog.groups[entry.group];
            let end = classes
                .len()
                .min(self.position + RELEASE_BATCH_ROWS - filled);
            let part = &classes[self.position..end];
            if wanted[0] {
                groups.extend(std::iter::repeat_n(entry.group as u64 + 1, part.len()));
            }
            for (a, column) in labels.iter_mut().enumerate() {
                if wanted[a + 1] {
                    column.extend(part.iter().map(|&c| self.rows.release.label_index(a, c)));
                }
            }
            if wanted[attrs + 1] {
                values.extend(std::iter::repeat_n(entry.value, part.len()));
            }
            if wanted[attrs + 2] {
                counts.extend(std::iter::repeat_n(entry.count, part.len()));
            }
            filled += part.len();
            self.position = end;
            if self.position == classes.len() {
                self.entry += 1;
                self.position = 0;
            }
        }
        (filled > 0).then(|| self.rows.batch(filled, groups, labels, values, counts))
    }
}

/// The weight the catalog gives each released row: the probability that a row of value `s`
/// in a class of group `G` is real, `(n − c) / n` with `n` the group's rows of value `s` and
/// `c` its catalogued counterfeits; 1 for rows the catalog does not concern.
#[derive(Debug, Clone, Default)]
pub struct CatalogWeights {
    class_group: Vec<Option<usize>>,
    /// Group `g`'s catalogued values are `values[group_start[g]..group_start[g + 1]]`.
    group_start: Vec<usize>,
    /// The catalogued values of each group, ascending, each once.
    values: Vec<u32>,
    /// Per catalogued value: the group's released rows of it, and its counterfeits.
    stats: Vec<(u64, u64)>,
}

impl CatalogWeights {
    /// Weights of `release`'s rows under `catalog` (all 1 without one).
    pub fn new(release: &ReleasedHistogram, catalog: Option<&CounterfeitCatalog>) -> Self {
        Self::from_classes(release.class_count(), catalog, |c| {
            release
                .class_range(c)
                .map(|e| (release.values[e], release.counts[e]))
        })
    }

    /// Weights of a release of `classes` classes whose class `c` holds the released
    /// `(value, count)` entries `entries(c)`, under `catalog` (all 1 without one).
    pub fn from_classes<I: Iterator<Item = (u32, u64)>>(
        classes: usize,
        catalog: Option<&CounterfeitCatalog>,
        entries: impl Fn(usize) -> I,
    ) -> Self {
        let Some(catalog) = catalog else {
            return Self::default();
        };
        let mut class_group = vec![None; classes];
        for (g, classes) in catalog.groups.iter().enumerate() {
            for &c in classes {
                if let Some(slot) = class_group.get_mut(c) {
                    *slot = Some(g);
                }
            }
        }
        // Entries of a group that does not exist concern no class.
        let groups = catalog.groups.len();
        let mut catalogued: Vec<((usize, u32), u64)> = catalog
            .entries
            .iter()
            .filter(|e| e.group < groups)
            .map(|e| ((e.group, e.value), e.count))
            .collect();
        // A repeated (group, value) keeps its last count, as one entry per pair would.
        catalogued.sort_by_key(|&(key, _)| key);
        catalogued.reverse();
        catalogued.dedup_by_key(|&mut (key, _)| key);
        catalogued.reverse();
        let mut group_start = vec![0usize; groups + 1];
        for &((g, _), _) in &catalogued {
            group_start[g + 1] += 1;
        }
        for g in 1..group_start.len() {
            group_start[g] += group_start[g - 1];
        }
        let values: Vec<u32> = catalogued.iter().map(|&((_, v), _)| v).collect();
        let mut weights = Self {
            class_group,
            group_start,
            values,
            stats: catalogued.iter().map(|&(_, count)| (0, count)).collect(),
        };
        for (c, group) in weights.class_group.iter().enumerate() {
            let Some(g) = *group else { continue };
            for (value, count) in entries(c) {
                if let Some(i) = weights.position(g, value) {
                    weights.stats[i].0 += count;
                }
            }
        }
        weights
    }

    /// Index of group `g`'s catalogued `value` in `values` and `stats`.
    fn position(&self, g: usize, value: u32) -> Option<usize> {
        let start = *self.group_start.get(g)?;
        let end = *self.group_start.get(g + 1)?;
        self.values[start..end]
            .binary_search(&value)
            .ok()
            .map(|i| start + i)
    }

    /// Weight of a row of value `value` in released class `class`.
    pub fn weight(&self, class: usize, value: u32) -> f64 {
        let Some(Some(g)) = self.class_group.get(class) else {
            return 1.0;
        };
        match self.position(*g, value).map(|i| self.stats[i]) {
            Some((n, c)) if n > 0 => (n.saturating_sub(c)) as f64 / n as f64,
            _ => 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy::Hierarchy;
    use crate::release::ReleasedHistogram;
    use crate::testing::rows;
    use datafusion::arrow::array::{AsArray, StringArray};
    use datafusion::arrow::datatypes::UInt64Type;

    const CLASSES: usize = 5000;

    /// A release of `CLASSES` one-row classes (leaf `i` holds value `i % 2`) and a catalog
    /// grouping all of them, with counterfeit counts for both values: 10,000 catalog rows.
    fn fixture() -> CatalogRows {
        let leaves: Vec<String> = (0..CLASSES).map(|i| format!("x{i}")).collect();
        let data: Vec<[&str; 2]> = leaves.iter().map(|l| [l.as_str(), "*"]).collect();
        let data: Vec<&[&str]> = data.iter().map(|r| &r[..]).collect();
        let h = Hierarchy::from_rows("x", &rows(&data)).unwrap();
        let mut release = ReleasedHistogram::new(vec![0], 1);
        for i in 0..CLASSES {
            release.push_class(&[i as u32], &[((i % 2) as u32, 1)], &[]);
        }
        let values: ArrayRef = Arc::new(StringArray::from(vec!["flu", "gout"]));
        let release_schema = Arc::new(Schema::new(vec![
            Field::new("x", DataType::Utf8, false),
            Field::new("disease", DataType::Utf8, false),
        ]));
        let rows = ReleasedRows::new(
            Arc::new(release),
            &[&h],
            std::slice::from_ref(&values),
            &release_schema,
        )
        .unwrap();
        let catalog = CounterfeitCatalog {
            groups: vec![(0..CLASSES).collect()],
            entries: vec![
                CatalogEntry {
                    group: 0,
                    value: 0,
                    count: 3,
                },
                CatalogEntry {
                    group: 0,
                    value: 1,
                    count: 2,
                },
            ],
        };
        let schema = CounterfeitCatalog::schema(&["x".to_string()], ("disease", &DataType::Utf8));
        CatalogRows::new(rows, Arc::new(catalog), values, &schema).unwrap()
    }

    /// The catalog streams in batches of at most `RELEASE_BATCH_ROWS` rows, ordered by
    /// group, value, class, with each group's count repeated on every class; projections
    /// build only the named columns.
    #[test]
    fn catalog_rows_stream_in_order() {
        let catalog = fixture();
        assert_eq!(catalog.row_count(), 2 * CLASSES as u64);
        let batches: Vec<RecordBatch> = catalog.batches().map(|b| b.unwrap()).collect();
        let sizes: Vec<usize> = batches.iter().map(|b| b.num_rows()).collect();
        assert_eq!(
            sizes,
            vec![RELEASE_BATCH_ROWS, 2 * CLASSES - RELEASE_BATCH_ROWS]
        );
        let mut row = 0usize;
        for batch in &batches {
            let groups = batch.column(0).as_primitive::<UInt64Type>();
            let labels = batch.column(1).as_string::<i32>();
            let values = batch.column(2).as_string::<i32>();
            let counts = batch.column(3).as_primitive::<UInt64Type>();
            for i in 0..batch.num_rows() {
                let (value, count) = if row < CLASSES {
                    ("flu", 3)
                } else {
                    ("gout", 2)
                };
                assert_eq!(groups.value(i), 1);
                assert_eq!(labels.value(i), format!("x{}", row % CLASSES));
                assert_eq!(values.value(i), value);
                assert_eq!(counts.value(i), count);
                row += 1;
            }
        }
        assert_eq!(row, 2 * CLASSES);

        let swapped: Vec<RecordBatch> = catalog
            .project(&[3, 1])
            .unwrap()
            .batches()
            .map(|b| b.unwrap())
            .collect();
        assert_eq!(swapped[0].schema().field(0).name(), COUNT_COLUMN);
        assert_eq!(swapped[0].column(0), batches[0].column(3));
        assert_eq!(swapped[1].column(1), batches[1].column(1));
        let counted =
            crate::testing::columnless_row_counts(catalog.project(&[]).unwrap().batches());
        assert_eq!(counted, sizes);
    }

    /// A catalog naming a class the release lacks is refused before anything is produced.
    #[test]
    fn catalog_rows_refuse_unknown_classes() {
        let catalog = fixture();
        let mut bad = (*catalog.catalog).clone();
        bad.groups[0].push(CLASSES);
        let schema = catalog.columns.schema().clone();
        let err = CatalogRows::new(catalog.release, Arc::new(bad), catalog.values, &schema)
            .unwrap_err()
            .to_string();
        assert!(err.contains("names class 5000 of 5000"), "{err}");
    }
}
