//! The sensitive columns of a release (released unchanged; IPA's *informative* column):
//! their distinct values, how one value code of the phase-1 histogram decodes into one value
//! per column, and what each column offers the privacy models (an order, a hierarchy).
//!
//! Phase 1 gives each distinct *tuple* of sensitive values one code, in lexicographic order
//! of the columns' own codes (each column's distinct values sorted). With one sensitive
//! column a tuple code is that column's value code, so nothing changes for one column.

use datafusion::arrow::array::{ArrayRef, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;

use crate::hierarchy::Hierarchy;

/// A sensitive column's hierarchy and the leaf code of each of its value codes.
#[derive(Debug, Clone)]
pub struct SensitiveHierarchy {
    /// Name of the hierarchy table, as given.
    pub name: String,
    /// The hierarchy.
    pub hierarchy: Hierarchy,
    /// Leaf code of each value code of the column.
    pub leaf_of_value: Vec<u32>,
}

/// One sensitive column.
#[derive(Debug, Clone)]
pub struct SensitiveColumn {
    /// Column name.
    pub name: String,
    /// Distinct values in canonical (sorted) order; index = the column's value code.
    pub values: ArrayRef,
    /// The column's value code of each tuple code.
    pub of_tuple: Vec<u32>,
    /// Position of each value code in the column's order, when it has one: the natural
    /// order of a numeric or temporal column, else the leaf order of its hierarchy table.
    pub rank: Option<Vec<u32>>,
    /// The column's hierarchy, when one was named (`sensitive => 'col:table'`).
    pub hierarchy: Option<SensitiveHierarchy>,
}

impl SensitiveColumn {
    /// Number of distinct values of the column in the data.
    pub fn cardinality(&self) -> usize {
        self.values.len()
    }
}

/// Every sensitive column of a release and the tuple codes of the histogram.
#[derive(Debug, Clone)]
pub struct SensitiveDomain {
    /// The columns, in release order.
    pub columns: Vec<SensitiveColumn>,
    tuples: usize,
}

impl SensitiveDomain {
    /// No sensitive column: every record carries the same (unreleased) tuple code 0.
    pub fn none() -> Self {
        Self {
            columns: Vec::new(),
            tuples: 1,
        }
    }

    /// The domain of `tuples` tuple codes over `columns`.
    pub fn new(columns: Vec<SensitiveColumn>, tuples: usize) -> Self {
        Self { columns, tuples }
    }

    /// Number of tuple codes (the histogram's value domain).
    pub fn tuples(&self) -> usize {
        self.tuples
    }

    /// Per column, its value of every tuple code (the arrays the release takes rows from).
    pub fn tuple_arrays(&self) -> Result<Vec<ArrayRef>> {
        self.columns
            .iter()
            .map(|c| {
                let idx = UInt32Array::from(c.of_tuple.clone());
                Ok(take(c.values.as_ref(), &idx, None)?)
            })
            .collect()
    }
}

/// Whether values of this type have a natural total order that their sorted codes follow.
pub fn has_natural_order(data_type: &DataType) -> bool {
    data_type.is_numeric() || data_type.is_temporal()
}
