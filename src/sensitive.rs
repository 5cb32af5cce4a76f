//! The sensitive columns of a release (released unchanged; IPA's *informative* column):
//! their distinct values, how one value code of the phase-1 histogram decodes into one value
//! per column, and what each column offers the privacy models (an order, a hierarchy).
//!
//! Phase 1 gives each distinct *tuple* of sensitive values one code, in lexicographic order
//! of the columns' own codes (each column's distinct values sorted). With one sensitive
//! column a tuple code is that column's value code, so nothing changes for one column.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray, UInt32Array};
use datafusion::arrow::compute::{cast, concat, sort_to_indices, take};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{exec_err, Result};

use std::sync::Arc;

use datafusion::catalog::TableProvider;

use crate::hierarchy::Hierarchy;

/// A sensitive column: released unchanged, checked by the privacy models.
#[derive(Debug, Clone)]
pub struct SensitiveSpec {
    /// Column name in the source.
    pub column: String,
    /// Its Arrow type (kept in the release).
    pub data_type: DataType,
    /// Hierarchy table `(name as given, table)`, when named (`sensitive => 'col:table'`).
    pub hierarchy: Option<(String, Arc<dyn TableProvider>)>,
    /// A direct identifier released as pseudonyms (`identifier_mode => 'pseudonym'`):
    /// carried like a sensitive column, never checked by ℓ-diversity or t-closeness.
    pub pseudonym: bool,
}

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
    /// Distinct values in canonical (sorted) order; index = the column's value code. After
    /// [`SensitiveDomain::add_hierarchy_leaves`], the hierarchy's leaves that the data lack
    /// follow, in hierarchy order (`rank` gives the column's order).
    pub values: ArrayRef,
    /// The column's value code of each tuple code.
    pub of_tuple: Vec<u32>,
    /// Position of each value code in the column's order, when it has one: the natural
    /// order of a numeric or temporal column, else the leaf order of its hierarchy table.
    pub rank: Option<Vec<u32>>,
    /// The column's hierarchy, when one was named (`sensitive => 'col:table'`).
    pub hierarchy: Option<SensitiveHierarchy>,
    /// Pseudonyms of a direct identifier: no privacy model checks them.
    pub pseudonym: bool,
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
    /// Set by [`SensitiveDomain::add_hierarchy_leaves`]: every leaf of the one sensitive
    /// column's hierarchy has a value code, whatever the data hold.
    leaves_added: bool,
}

impl SensitiveDomain {
    /// No sensitive column: every record carries the same (unreleased) tuple code 0.
    pub fn none() -> Self {
        Self {
            columns: Vec::new(),
            tuples: 1,
            leaves_added: false,
        }
    }

    /// The domain of `tuples` tuple codes over `columns`.
    pub fn new(columns: Vec<SensitiveColumn>, tuples: usize) -> Self {
        Self {
            columns,
            tuples,
            leaves_added: false,
        }
    }

    /// Number of tuple codes (the histogram's value domain).
    pub fn tuples(&self) -> usize {
        self.tuples
    }

    /// Makes the value domain public: with exactly one sensitive column and a hierarchy
    /// named for it (`informative => 'col:table'`), gives every leaf of that hierarchy that
    /// the data lack a value code, after the data's own codes (so every code of the phase-1
    /// histogram keeps its meaning), and returns `true`. The domain is then the hierarchy's
    /// leaves, chosen by the data owner, whatever the data hold ([`Self::leaf_domain`]).
    /// With several sensitive columns or no hierarchy nothing changes and it returns
    /// `false`.
    ///
    /// A new leaf's value is its label cast to the column's type; `rank` is recomputed
    /// (natural order, or hierarchy leaf order).
    ///
    /// # Errors
    ///
    /// An execution error when a leaf label cannot be read as a value of the column's type
    /// (or does not read back as the same label, the way data values are matched).
    pub fn add_hierarchy_leaves(&mut self) -> Result<bool> {
        let [column] = self.columns.as_mut_slice() else {
            return Ok(false);
        };
        let Some(h) = column.hierarchy.as_mut() else {
            return Ok(false);
        };
        let leaves = h.hierarchy.level(0).labels();
        let mut present = vec![false; leaves.len()];
        for &leaf in &h.leaf_of_value {
            if let Some(p) = present.get_mut(leaf as usize) {
                *p = true;
            }
        }
        let missing: Vec<u32> = (0..leaves.len() as u32)
            .filter(|&l| !present[l as usize])
            .collect();
        if !missing.is_empty() {
            let labels =
                StringArray::from_iter_values(missing.iter().map(|&l| &leaves[l as usize]));
            let data_type = column.values.data_type().clone();
            let typed = cast(&labels, &data_type)?;
            let back = cast(&typed, &DataType::Utf8)?;
            let back = back.as_string::<i32>();
            for (k, &leaf) in missing.iter().enumerate() {
                let label = &leaves[leaf as usize];
                if typed.is_null(k) || back.is_null(k) || back.value(k) != label {
                    return exec_err!(
                        "anonymize(): leaf '{label}' of hierarchy '{}' cannot be read as a value of column '{}' ({data_type})",
                        h.name,
                        column.name
                    );
                }
            }
            let first_new = column.values.len() as u32;
            column.values = concat(&[column.values.as_ref(), typed.as_ref()])?;
            h.leaf_of_value.extend(&missing);
            let added = missing.len() as u32;
            column.of_tuple.extend(first_new..first_new + added);
            self.tuples = column.values.len();
            if column.rank.is_some() {
                let order: Vec<u32> = if has_natural_order(&data_type) {
                    sort_to_indices(&column.values, None, None)?
                        .values()
                        .to_vec()
                } else {
                    let mut order: Vec<u32> = (0..column.values.len() as u32).collect();
                    order.sort_by_key(|&v| h.leaf_of_value[v as usize]);
                    order
                };
                let mut rank = vec![0u32; order.len()];
                for (position, &v) in order.iter().enumerate() {
                    rank[v as usize] = position as u32;
                }
                column.rank = Some(rank);
            }
        }
        self.leaves_added = true;
        Ok(true)
    }

    /// The name of the hierarchy whose leaves are the value domain, after
    /// [`Self::add_hierarchy_leaves`] made them so; `None` when the domain is the set of
    /// distinct values read from the data. The answer never depends on the data.
    pub fn leaf_domain(&self) -> Option<&str> {
        if !self.leaves_added {
            return None;
        }
        match self.columns.as_slice() {
            [column] => column.hierarchy.as_ref().map(|h| h.name.as_str()),
            _ => None,
        }
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
