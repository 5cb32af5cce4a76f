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

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray, UInt32Array, UInt64Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{internal_err, Result};

use crate::hierarchy::{Hierarchy, STAR};
use crate::release::{ReleasedHistogram, SUPPRESSED};

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

    /// The published catalog: one row per (group, value, class), ordered by group, value,
    /// class. `values` holds the sensitive values by code.
    pub fn to_batch(
        &self,
        release: &ReleasedHistogram,
        hierarchies: &[&Hierarchy],
        values: &ArrayRef,
        schema: &SchemaRef,
    ) -> Result<RecordBatch> {
        let attrs = hierarchies.len();
        if schema.fields().len() != attrs + 3 {
            return internal_err!(
                "catalog schema has {} fields, expected {}",
                schema.fields().len(),
                attrs + 3
            );
        }
        let mut group_ids = Vec::new();
        let mut labels: Vec<Vec<&str>> = vec![Vec::new(); attrs];
        let mut value_idx = Vec::new();
        let mut counts = Vec::new();
        for entry in &self.entries {
            let Some(classes) = self.groups.get(entry.group) else {
                return internal_err!(
                    "catalog entry names group {} of {}",
                    entry.group,
                    self.groups.len()
                );
            };
            for &c in classes {
                if c >= release.class_count() {
                    return internal_err!("catalog names class {c} of {}", release.class_count());
                }
                group_ids.push(entry.group as u64 + 1);
                for (a, column) in labels.iter_mut().enumerate() {
                    let code = release.class_codes[a][c];
                    let level = hierarchies[a].level(release.levels[a]);
                    column.push(match code {
                        SUPPRESSED => STAR,
                        code => level.labels()[code as usize].as_str(),
                    });
                }
                value_idx.push(entry.value);
                counts.push(entry.count);
            }
        }
        let mut columns: Vec<ArrayRef> = vec![Arc::new(UInt64Array::from(group_ids))];
        for column in labels {
            columns.push(Arc::new(StringArray::from(column)));
        }
        columns.push(take(values.as_ref(), &UInt32Array::from(value_idx), None)?);
        columns.push(Arc::new(UInt64Array::from(counts)));
        Ok(RecordBatch::try_new(schema.clone(), columns)?)
    }
}

/// The weight the catalog gives each released row: the probability that a row of value `s`
/// in a class of group `G` is real, `(n − c) / n` with `n` the group's rows of value `s` and
/// `c` its catalogued counterfeits; 1 for rows the catalog does not concern.
#[derive(Debug, Clone, Default)]
pub struct CatalogWeights {
    class_group: Vec<Option<usize>>,
    stats: HashMap<(usize, u32), (u64, u64)>,
}

impl CatalogWeights {
    /// Weights of `release`'s rows under `catalog` (all 1 without one).
    pub fn new(release: &ReleasedHistogram, catalog: Option<&CounterfeitCatalog>) -> Self {
        let Some(catalog) = catalog else {
            return Self::default();
        };
        let mut class_group = vec![None; release.class_count()];
        for (g, classes) in catalog.groups.iter().enumerate() {
            for &c in classes {
                if let Some(slot) = class_group.get_mut(c) {
                    *slot = Some(g);
                }
            }
        }
        let mut stats: HashMap<(usize, u32), (u64, u64)> = catalog
            .entries
            .iter()
            .map(|e| ((e.group, e.value), (0, e.count)))
            .collect();
        for (c, group) in class_group.iter().enumerate() {
            let Some(g) = group else { continue };
            for e in release.class_offsets[c]..release.class_offsets[c + 1] {
                if let Some(s) = stats.get_mut(&(*g, release.values[e])) {
                    s.0 += release.counts[e];
                }
            }
        }
        Self { class_group, stats }
    }

    /// Weight of a row of value `value` in released class `class`.
    pub fn weight(&self, class: usize, value: u32) -> f64 {
        let Some(Some(g)) = self.class_group.get(class) else {
            return 1.0;
        };
        match self.stats.get(&(*g, value)) {
            Some(&(n, c)) if n > 0 => (n.saturating_sub(c)) as f64 / n as f64,
            _ => 1.0,
        }
    }
}
