//! A released histogram expanded into rows, batch by batch, in canonical order.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, RecordBatch, RecordBatchOptions, StringArray, UInt32Array,
};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{internal_err, Result};

use super::{Columns, ReleasedHistogram, RELEASE_BATCH_ROWS, SUPPRESSED};
use crate::hierarchy::{Hierarchy, STAR};

/// A released histogram ready to be expanded into rows: one Utf8 column per
/// quasi-identifier (its label at the released level, `*` when suppressed), then — when the
/// schema has a field for each — the sensitive columns, each taken from its array in
/// `values` (one entry per value code).
///
/// Holding it costs memory proportional to the released *histogram* (classes × values),
/// never to the released row count: [`ReleasedRows::batches`] produces the rows batch by
/// batch, in canonical order, as they are read, and stops when its reader stops.
#[derive(Debug, Clone)]
pub struct ReleasedRows {
    histogram: Arc<ReleasedHistogram>,
    /// Per quasi-identifier, the labels of its released level with `*` appended.
    labels: Vec<ArrayRef>,
    /// Per quasi-identifier, the index of `*` in `labels`.
    star_index: Vec<u32>,
    /// The sensitive columns' arrays (empty when the schema has none).
    values: Vec<ArrayRef>,
    /// The columns produced (of quasi-identifiers first, then the sensitive columns).
    columns: Columns,
}

impl ReleasedRows {
    /// Prepares the expansion of `histogram` under `schema` (the quasi-identifiers, then
    /// optionally the sensitive columns).
    pub fn new(
        histogram: Arc<ReleasedHistogram>,
        hierarchies: &[&Hierarchy],
        values: &[ArrayRef],
        schema: &SchemaRef,
    ) -> Result<Self> {
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
        if histogram.levels.len() != attrs || histogram.class_codes.len() != attrs {
            return internal_err!(
                "released histogram has {} attributes, expected {attrs}",
                histogram.levels.len()
            );
        }
        let labels: Vec<ArrayRef> = (0..attrs)
            .map(|a| {
                let labels = hierarchies[a].level(histogram.levels[a]).labels();
                let mut all: Vec<&str> = labels.iter().map(String::as_str).collect();
                all.push(STAR);
                Arc::new(StringArray::from(all)) as ArrayRef
            })
            .collect();
        let star_index: Vec<u32> = (0..attrs)
            .map(|a| hierarchies[a].level(histogram.levels[a]).cardinality() as u32)
            .collect();
        Ok(Self {
            histogram,
            labels,
            star_index,
            values: if with_values {
                values.to_vec()
            } else {
                Vec::new()
            },
            columns: Columns::all(schema),
        })
    }

    /// The same rows restricted to the columns `projection` names (indices into this
    /// release's schema, in the order wanted; an empty list gives batches that carry only
    /// their row counts, as `COUNT(*)` needs). Columns left out are never built.
    pub fn project(&self, projection: &[usize]) -> Result<Self> {
        Ok(Self {
            columns: self.columns.project(projection)?,
            ..self.clone()
        })
    }

    /// The schema of the rows.
    pub fn schema(&self) -> &SchemaRef {
        self.columns.schema()
    }

    /// The released histogram.
    pub fn histogram(&self) -> &ReleasedHistogram {
        &self.histogram
    }

    /// Index into [`ReleasedRows::labels`]`(attr)` of released class `class`'s label for
    /// quasi-identifier `attr` (the `*` entry when it is suppressed).
    pub fn label_index(&self, attr: usize, class: usize) -> u32 {
        match self.histogram.class_codes[attr][class] {
            SUPPRESSED => self.star_index[attr],
            code => code,
        }
    }

    /// Quasi-identifier `attr`'s labels at its released level, `*` last.
    pub fn labels(&self, attr: usize) -> &ArrayRef {
        &self.labels[attr]
    }

    /// Number of rows [`ReleasedRows::batches`] produces.
    pub fn row_count(&self) -> u64 {
        self.histogram.row_count()
    }

    /// Every batch at once (tests and small releases).
    pub fn collect(&self) -> Result<Vec<RecordBatch>> {
        self.batches().collect()
    }

    /// The parts these rows are rebuilt from in another process (a cluster's scheduler or
    /// executor): see [`ReleasedRows::from_parts`].
    pub fn to_parts(&self) -> ReleasedRowsParts {
        ReleasedRowsParts {
            histogram: self.histogram.clone(),
            labels: self.labels.clone(),
            values: self.values.clone(),
            indices: self.columns.indices().to_vec(),
            schema: self.columns.schema().clone(),
        }
    }

    /// Rows rebuilt from [`ReleasedRows::to_parts`], checked for consistency first: parts
    /// that could make the expansion index out of bounds are refused, not expanded.
    pub fn from_parts(parts: ReleasedRowsParts) -> Result<Self> {
        let ReleasedRowsParts {
            histogram,
            labels,
            values,
            indices,
            schema,
        } = parts;
        let attrs = histogram.levels.len();
        let classes = histogram.class_count();
        let entries = histogram.values.len();
        let offsets_ok = histogram.class_offsets.first() == Some(&0)
            && histogram.class_offsets.last() == Some(&entries)
            && histogram.class_offsets.windows(2).all(|w| w[0] <= w[1]);
        if histogram.class_codes.len() != attrs
            || labels.len() != attrs
            || !offsets_ok
            || histogram.counts.len() != entries
            || histogram.class_codes.iter().any(|c| c.len() != classes)
        {
            return internal_err!("released rows: inconsistent histogram shape");
        }
        let mut star_index = Vec::with_capacity(attrs);
        for (a, l) in labels.iter().enumerate() {
            let Some(star) = l.len().checked_sub(1) else {
                return internal_err!("released rows: no labels for attribute {a}");
            };
            if histogram.class_codes[a]
                .iter()
                .any(|&c| c != SUPPRESSED && c as usize >= star)
            {
                return internal_err!(
                    "released rows: class code beyond the labels of attribute {a}"
                );
            }
            star_index.push(star as u32);
        }
        if values.iter().any(|v| {
            histogram
                .values
                .iter()
                .any(|&code| code as usize >= v.len())
        }) {
            return internal_err!("released rows: value code beyond the sensitive values");
        }
        let columns = Columns::from_parts(indices, schema, attrs + values.len())?;
        Ok(Self {
            histogram,
            labels,
            star_index,
            values,
            columns,
        })
    }

    /// The rows in canonical order, at most [`RELEASE_BATCH_ROWS`] per batch, produced as
    /// the iterator is advanced.
    pub fn batches(&self) -> ReleaseBatches {
        ReleaseBatches {
            rows: self.clone(),
            entry: 0,
            class: 0,
            used_of_entry: 0,
        }
    }

    fn batch(&self, rows: usize, qi_idx: Vec<Vec<u32>>, val_idx: Vec<u32>) -> Result<RecordBatch> {
        let attrs = self.labels.len();
        let qi_idx: Vec<UInt32Array> = qi_idx.into_iter().map(UInt32Array::from).collect();
        let val_idx = UInt32Array::from(val_idx);
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.columns.indices().len());
        for &i in self.columns.indices() {
            columns.push(if i < attrs {
                take(self.labels[i].as_ref(), &qi_idx[i], None)?
            } else {
                take(self.values[i - attrs].as_ref(), &val_idx, None)?
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

/// What [`ReleasedRows`] is made of, to be carried to another process and rebuilt there.
#[derive(Debug, Clone)]
pub struct ReleasedRowsParts {
    /// The released histogram.
    pub histogram: Arc<ReleasedHistogram>,
    /// Per quasi-identifier, the labels of its released level with `*` last.
    pub labels: Vec<ArrayRef>,
    /// The sensitive columns' values by code (empty when the rows carry none).
    pub values: Vec<ArrayRef>,
    /// The produced columns as indices into quasi-identifiers then sensitive columns.
    pub indices: Vec<usize>,
    /// The schema of the produced columns.
    pub schema: SchemaRef,
}

/// Iterator over the batches of a [`ReleasedRows`] (see [`ReleasedRows::batches`]).
#[derive(Debug)]
pub struct ReleaseBatches {
    rows: ReleasedRows,
    /// Next histogram entry to expand.
    entry: usize,
    /// Class owning `entry`.
    class: usize,
    /// Rows of `entry` already produced.
    used_of_entry: u64,
}

impl Iterator for ReleaseBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        let hist = &self.rows.histogram;
        let attrs = self.rows.labels.len();
        let entries = hist.counts.len();
        // Index vectors only for the columns produced; the others stay empty.
        let wanted = self.rows.columns.wanted(attrs + self.rows.values.len());
        let values_wanted = wanted[attrs..].iter().any(|&w| w);
        let mut qi_idx: Vec<Vec<u32>> = vec![Vec::new(); attrs];
        let mut val_idx: Vec<u32> = Vec::new();
        let mut filled = 0usize;
        while filled < RELEASE_BATCH_ROWS && self.entry < entries {
            while hist.class_offsets[self.class + 1] <= self.entry {
                self.class += 1;
            }
            let remaining = hist.counts[self.entry] - self.used_of_entry;
            let take_now = remaining.min((RELEASE_BATCH_ROWS - filled) as u64) as usize;
            for (a, idx) in qi_idx.iter_mut().enumerate() {
                if !wanted[a] {
                    continue;
                }
                let code = self.rows.label_index(a, self.class);
                idx.extend(std::iter::repeat_n(code, take_now));
            }
            if values_wanted {
                val_idx.extend(std::iter::repeat_n(hist.values[self.entry], take_now));
            }
            filled += take_now;
            self.used_of_entry += take_now as u64;
            if self.used_of_entry == hist.counts[self.entry] {
                self.entry += 1;
                self.used_of_entry = 0;
            }
        }
        (filled > 0).then(|| self.rows.batch(filled, qi_idx, val_idx))
    }
}
