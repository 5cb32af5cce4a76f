//! The attacked tables on one encoding: each attacked column's values as numbers, or as
//! codes of one dictionary that the release, the source and the control share; and, for a
//! quasi-identifier with a hierarchy, which released labels cover which source values.
//!
//! A release is read as METHODS §7.5.4 reads it: a source value matches a released label
//! that covers it (the value itself, one of its generalizations in the hierarchy, or `*`),
//! and counterfeit rows are rows like any other.

use datafusion::common::HashMap;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::{cast, concat_batches};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;

use crate::hierarchy::{Hierarchy, STAR};

/// The code of a NULL.
pub const NULL_CODE: u32 = u32::MAX;

/// One column's values in one table.
#[derive(Debug, Clone)]
pub enum Values {
    /// A numeric column: its values, NaN for NULL.
    Numbers(Vec<f64>),
    /// A categorical column: dictionary codes, [`NULL_CODE`] for NULL.
    Codes(Vec<u32>),
}

/// A table's attacked columns (in order) as read, and the order the attacks read its rows in.
#[derive(Debug, Clone)]
pub enum Rows {
    /// The rows of these batches, in order.
    AsGiven(Vec<RecordBatch>),
    /// The rows of `batch` at the positions `order` gives, in that order.
    Ordered {
        /// The rows as a scan returned them.
        batch: RecordBatch,
        /// Row positions in reading order.
        order: Vec<u32>,
    },
}

impl Rows {
    /// Number of rows.
    pub fn row_count(&self) -> usize {
        match self {
            Rows::AsGiven(batches) => batches.iter().map(RecordBatch::num_rows).sum(),
            Rows::Ordered { order, .. } => order.len(),
        }
    }
}

impl From<Vec<RecordBatch>> for Rows {
    fn from(batches: Vec<RecordBatch>) -> Self {
        Rows::AsGiven(batches)
    }
}

/// One table's attacked columns, encoded.
#[derive(Debug, Clone)]
pub struct Table {
    /// Number of rows.
    pub rows: usize,
    /// The attacked columns, in the order of [`Columns`].
    pub columns: Vec<Values>,
}

impl Table {
    /// The table without duplicate rows (the first of each kept, in order), as anonymeter
    /// drops duplicates before singling out.
    pub fn distinct(&self) -> Table {
        let mut seen: HashMap<Vec<u64>, ()> =
            HashMap::with_capacity_and_hasher(self.rows, Default::default());
        let mut keep = Vec::with_capacity(self.rows);
        for row in 0..self.rows {
            if seen.insert(self.key(row), ()).is_none() {
                keep.push(row);
            }
        }
        self.take(&keep)
    }

    /// The rows `rows`, in that order.
    pub fn take(&self, rows: &[usize]) -> Table {
        Table {
            rows: rows.len(),
            columns: self
                .columns
                .iter()
                .map(|values| match values {
                    Values::Numbers(x) => Values::Numbers(rows.iter().map(|&r| x[r]).collect()),
                    Values::Codes(x) => Values::Codes(rows.iter().map(|&r| x[r]).collect()),
                })
                .collect(),
        }
    }

    /// A row's values as one hashable key.
    fn key(&self, row: usize) -> Vec<u64> {
        self.columns
            .iter()
            .map(|values| match values {
                Values::Numbers(x) => x[row].to_bits(),
                Values::Codes(x) => x[row] as u64,
            })
            .collect()
    }
}

/// What is known of one attacked column across the tables.
#[derive(Debug, Clone)]
pub struct Column {
    /// For a numeric column, 1 / its range over every table (1 when the range is 0), so
    /// that two values differ by at most 1 (anonymeter's scaling).
    pub scale: f64,
    /// How many codes the dictionary has.
    size: usize,
    /// For each code, the codes of the other labels that cover it.
    covered_by: Vec<Vec<u32>>,
    star: Option<u32>,
}

impl Column {
    /// Whether the released label `label` covers the value `value` (both codes): the same
    /// label, a generalization of it in the column's hierarchy, or `*`. NULL covers NULL.
    pub fn covers(&self, label: u32, value: u32) -> bool {
        if label == value {
            return true;
        }
        if label == NULL_CODE || value == NULL_CODE {
            return false;
        }
        Some(label) == self.star
            || self.covered_by[value as usize]
                .binary_search(&label)
                .is_ok()
    }

    /// The labels that cover `value` (a code), itself included and `*` left out.
    pub fn labels_covering(&self, value: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::once(value).chain(
            self.covered_by
                .get(value as usize)
                .into_iter()
                .flatten()
                .copied(),
        )
    }

    /// The code of `*`, if any table holds it.
    pub fn star(&self) -> Option<u32> {
        self.star
    }

    /// How many codes the dictionary has.
    pub fn dictionary_size(&self) -> usize {
        self.size
    }
}

/// Encodes tables onto shared dictionaries.
#[derive(Debug)]
pub struct Encoder {
    columns: Vec<(String, bool, Option<Hierarchy>)>,
    dictionaries: Vec<HashMap<String, u32>>,
    labels: Vec<Vec<String>>,
    ranges: Vec<(f64, f64)>,
}

impl Encoder {
    /// An encoder of the columns `(name, numeric, hierarchy)`.
    pub fn new(columns: Vec<(String, bool, Option<Hierarchy>)>) -> Self {
        let n = columns.len();
        Self {
            columns,
            dictionaries: vec![HashMap::default(); n],
            labels: vec![Vec::new(); n],
            ranges: vec![(f64::INFINITY, f64::NEG_INFINITY); n],
        }
    }

    /// Encodes `batches`, whose columns are the attacked columns in order.
    pub fn encode(&mut self, batches: &[RecordBatch]) -> Result<Table> {
        let Some(first) = batches.first() else {
            return Ok(Table {
                rows: 0,
                columns: self
                    .columns
                    .iter()
                    .map(|(_, numeric, _)| {
                        if *numeric {
                            Values::Numbers(Vec::new())
                        } else {
                            Values::Codes(Vec::new())
                        }
                    })
                    .collect(),
            });
        };
        let batch = concat_batches(&first.schema(), batches)?;
        let order: Vec<u32> = (0..batch.num_rows() as u32).collect();
        self.encode_ordered(&batch, &order)
    }

    /// Encodes the rows of `batch` (the attacked columns in order) in the order `order`
    /// gives (row positions), as [`Encoder::encode`] would encode them taken in that order.
    pub fn encode_ordered(&mut self, batch: &RecordBatch, order: &[u32]) -> Result<Table> {
        let mut columns = Vec::with_capacity(self.columns.len());
        for c in 0..self.columns.len() {
            let array = batch.column(c);
            columns.push(if self.columns[c].1 {
                let numbers = cast(array, &DataType::Float64)?;
                let numbers = numbers.as_primitive::<datafusion::arrow::datatypes::Float64Type>();
                let mut values = Vec::with_capacity(order.len());
                for &row in order {
                    let row = row as usize;
                    let x = if numbers.is_null(row) {
                        f64::NAN
                    } else {
                        numbers.value(row)
                    };
                    if x.is_finite() {
                        let range = &mut self.ranges[c];
                        range.0 = range.0.min(x);
                        range.1 = range.1.max(x);
                    }
                    values.push(x);
                }
                Values::Numbers(values)
            } else {
                let text = cast(array, &DataType::Utf8)?;
                let text = text.as_string::<i32>();
                let mut codes = Vec::with_capacity(order.len());
                for &row in order {
                    let row = row as usize;
                    codes.push(if text.is_null(row) {
                        NULL_CODE
                    } else {
                        self.code(c, text.value(row))
                    });
                }
                Values::Codes(codes)
            });
        }
        Ok(Table {
            rows: order.len(),
            columns,
        })
    }

    /// Encodes `rows` in their reading order.
    pub fn encode_rows(&mut self, rows: &Rows) -> Result<Table> {
        match rows {
            Rows::AsGiven(batches) => self.encode(batches),
            Rows::Ordered { batch, order } => self.encode_ordered(batch, order),
        }
    }

    fn code(&mut self, column: usize, text: &str) -> u32 {
        if let Some(&code) = self.dictionaries[column].get(text) {
            return code;
        }
        let code = self.labels[column].len() as u32;
        self.labels[column].push(text.to_string());
        self.dictionaries[column].insert(text.to_string(), code);
        code
    }

    /// What the encoded tables hold of each column, once every table is encoded.
    pub fn finish(self) -> Vec<Column> {
        let Encoder {
            columns,
            dictionaries,
            labels,
            ranges,
        } = self;
        columns
            .into_iter()
            .zip(dictionaries)
            .zip(labels)
            .zip(ranges)
            .map(|((((_, _, hierarchy), dictionary), labels), (lo, hi))| {
                let covered_by = labels
                    .iter()
                    .map(|value| {
                        let mut codes: Vec<u32> = hierarchy
                            .as_ref()
                            .and_then(|h| h.leaf_code(value).map(|leaf| (h, leaf)))
                            .map(|(h, leaf)| {
                                (1..=h.height())
                                    .filter_map(|l| {
                                        let level = h.level(l);
                                        let label = &level.labels()
                                            [level.leaf_to_code()[leaf as usize] as usize];
                                        dictionary.get(label).copied()
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        codes.sort_unstable();
                        codes.dedup();
                        codes
                    })
                    .collect();
                let range = hi - lo;
                Column {
                    size: labels.len(),
                    scale: if range.is_finite() && range > 0.0 {
                        1.0 / range
                    } else {
                        1.0
                    },
                    star: dictionary.get(STAR).copied(),
                    covered_by,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{Field, Schema};

    use super::*;

    fn batch(ages: Vec<Option<&str>>, stays: Vec<Option<i64>>) -> RecordBatch {
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("age", DataType::Utf8, true),
                Field::new("stay", DataType::Int64, true),
            ])),
            vec![
                Arc::new(StringArray::from(ages)),
                Arc::new(Int64Array::from(stays)),
            ],
        )
        .expect("batch")
    }

    #[test]
    fn released_labels_cover_the_values_below_them() {
        let rows: Vec<Vec<String>> = [
            ["31", "30-39", "*"],
            ["35", "30-39", "*"],
            ["41", "40-49", "*"],
        ]
        .iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect();
        let hierarchy = Hierarchy::from_rows("age", &rows).expect("hierarchy");
        let mut encoder = Encoder::new(vec![
            ("age".into(), false, Some(hierarchy)),
            ("stay".into(), true, None),
        ]);
        let release = encoder
            .encode(&[batch(
                vec![Some("30-39"), Some("*"), None],
                vec![Some(2), Some(10), None],
            )])
            .expect("release");
        let source = encoder
            .encode(&[batch(
                vec![Some("31"), Some("41"), Some("99")],
                vec![Some(4), None, Some(6)],
            )])
            .expect("source");
        let columns = encoder.finish();
        let (Values::Codes(labels), Values::Codes(values)) =
            (&release.columns[0], &source.columns[0])
        else {
            panic!("codes");
        };
        let age = &columns[0];
        assert!(age.covers(labels[0], values[0]), "30-39 covers 31");
        assert!(!age.covers(labels[0], values[1]), "30-39 does not cover 41");
        assert!(
            age.covers(labels[1], values[1]) && age.covers(labels[1], values[2]),
            "* covers all"
        );
        assert!(
            !age.covers(labels[0], values[2]),
            "a value outside the hierarchy is covered by itself and * only"
        );
        assert!(!age.covers(labels[2], values[0]) && age.covers(labels[2], labels[2]));
        // The numeric column's range spans both tables: 2 to 10.
        assert!((columns[1].scale - 1.0 / 8.0).abs() < 1e-12);
        let Values::Numbers(stays) = &source.columns[1] else {
            panic!("numbers")
        };
        assert!(stays[1].is_nan());
    }

    #[test]
    fn duplicate_rows_are_dropped_first_kept() {
        let mut encoder = Encoder::new(vec![
            ("age".into(), false, None),
            ("stay".into(), true, None),
        ]);
        let table = encoder
            .encode(&[batch(
                vec![Some("a"), Some("b"), Some("a"), None, None],
                vec![Some(1), Some(1), Some(1), None, None],
            )])
            .expect("table");
        let distinct = table.distinct();
        assert_eq!(distinct.rows, 3);
        assert_eq!(table.take(&[2, 4]).distinct().rows, 2);
    }
}
