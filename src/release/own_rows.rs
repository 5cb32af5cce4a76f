//! Owner-only: the released row each source record became, for the methods that release
//! every record they keep exactly once and invent none (kanon; microaggregation). Record
//! linkage (`anonymize_attack(attack => 'record_linkage')`, METHODS §7.5.6) scores an
//! attacker's links against it. It is kept with the cached release and never published.
//!
//! Records with the same quasi-identifier values become the same released row (the lattice
//! methods recode globally) or are dealt to a few groups (microaggregation), so the map is
//! kept per distinct source tuple: one link per (source tuple, released tuple) with its
//! records.

use std::sync::Arc;

use datafusion::arrow::array::{new_null_array, ArrayRef, Float64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::{internal_err, Result};

use super::SUPPRESSED;
use crate::hierarchy::{Hierarchy, STAR};

/// The values of the links, per quasi-identifier.
#[derive(Debug, Clone, PartialEq)]
pub enum OwnValues {
    /// Hierarchy codes: the source's leaf codes, and the released codes at `levels`
    /// ([`SUPPRESSED`] for `*`).
    Codes {
        /// The released level of each quasi-identifier.
        levels: Vec<usize>,
        /// Per quasi-identifier, the leaf code of each link's source tuple.
        source: Vec<Vec<u32>>,
        /// Per quasi-identifier, the released code of each link.
        released: Vec<Vec<u32>>,
    },
    /// Numbers: the source's values and the released ones.
    Numbers {
        /// Per quasi-identifier, each link's source value.
        source: Vec<Vec<f64>>,
        /// Per quasi-identifier, each link's released value.
        released: Vec<Vec<f64>>,
    },
}

/// Which released row the source's records became: one link per (source tuple, released
/// tuple), with the number of records it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnRows {
    /// The two tuples of each link.
    pub values: OwnValues,
    /// Records of each link.
    pub records: Vec<u64>,
}

impl OwnRows {
    /// Number of links.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there is no link (nothing released).
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The links as two batches with the columns `names` (the quasi-identifiers, whose
    /// `hierarchies` decode codes, then `extra` columns left NULL): the source tuples, then
    /// the released ones, row for row.
    pub fn batches(
        &self,
        names: &[String],
        hierarchies: &[Option<&Hierarchy>],
        extra: &[(String, DataType)],
    ) -> Result<(RecordBatch, RecordBatch)> {
        let n = self.len();
        let (source, released): (Vec<ArrayRef>, Vec<ArrayRef>) = match &self.values {
            OwnValues::Codes {
                levels,
                source,
                released,
            } => {
                if source.len() != names.len() || hierarchies.len() != names.len() {
                    return internal_err!("own rows: {} columns for {}", source.len(), names.len());
                }
                let mut from = Vec::with_capacity(names.len());
                let mut to = Vec::with_capacity(names.len());
                for (a, hierarchy) in hierarchies.iter().enumerate() {
                    let Some(h) = hierarchy else {
                        return internal_err!("own rows: column '{}' has no hierarchy", names[a]);
                    };
                    let leaves = h.level(0).labels();
                    let labels = h.level(levels[a]).labels();
                    let label = |list: &[String], code: u32| -> Result<String> {
                        match list.get(code as usize) {
                            Some(text) => Ok(text.clone()),
                            None => internal_err!("own rows: code {code} of '{}'", names[a]),
                        }
                    };
                    from.push(Arc::new(StringArray::from(
                        source[a]
                            .iter()
                            .map(|&c| label(leaves, c))
                            .collect::<Result<Vec<_>>>()?,
                    )) as ArrayRef);
                    to.push(Arc::new(StringArray::from(
                        released[a]
                            .iter()
                            .map(|&c| {
                                if c == SUPPRESSED {
                                    Ok(STAR.to_string())
                                } else {
                                    label(labels, c)
                                }
                            })
                            .collect::<Result<Vec<_>>>()?,
                    )) as ArrayRef);
                }
                (from, to)
            }
            OwnValues::Numbers { source, released } => {
                if source.len() != names.len() {
                    return internal_err!("own rows: {} columns for {}", source.len(), names.len());
                }
                let column = |v: &Vec<f64>| Arc::new(Float64Array::from(v.clone())) as ArrayRef;
                (
                    source.iter().map(column).collect(),
                    released.iter().map(column).collect(),
                )
            }
        };
        let batch = |mut columns: Vec<ArrayRef>| -> Result<RecordBatch> {
            for (_, data_type) in extra {
                columns.push(new_null_array(data_type, n));
            }
            let fields: Vec<Field> = names
                .iter()
                .zip(&columns)
                .map(|(name, c)| Field::new(name, c.data_type().clone(), true))
                .chain(
                    extra
                        .iter()
                        .map(|(name, data_type)| Field::new(name, data_type.clone(), true)),
                )
                .collect();
            Ok(RecordBatch::try_new(
                Arc::new(Schema::new(fields)),
                columns,
            )?)
        };
        Ok((batch(source)?, batch(released)?))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::AsArray;

    use super::*;

    #[test]
    fn links_decode_to_labels_and_stars() {
        let rows: Vec<Vec<String>> = [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]]
            .iter()
            .map(|r| r.iter().map(|s| s.to_string()).collect())
            .collect();
        let h = Hierarchy::from_rows("n", &rows).expect("hierarchy");
        let own = OwnRows {
            values: OwnValues::Codes {
                levels: vec![1],
                source: vec![vec![0, 1, 2]],
                released: vec![vec![0, 0, SUPPRESSED]],
            },
            records: vec![2, 1, 1],
        };
        let (from, to) = own
            .batches(&["n".into()], &[Some(&h)], &[("s".into(), DataType::Int64)])
            .expect("batches");
        let text = |b: &RecordBatch| -> Vec<String> {
            b.column(0)
                .as_string::<i32>()
                .iter()
                .map(|v| v.unwrap_or_default().to_string())
                .collect()
        };
        assert_eq!(text(&from), ["1", "2", "3"]);
        assert_eq!(text(&to), ["1-2", "1-2", "*"]);
        assert_eq!(to.column(1).null_count(), 3);
        let bad = OwnRows {
            values: OwnValues::Codes {
                levels: vec![1],
                source: vec![vec![7]],
                released: vec![vec![0]],
            },
            records: vec![1],
        };
        assert!(bad.batches(&["n".into()], &[Some(&h)], &[]).is_err());
    }
}
