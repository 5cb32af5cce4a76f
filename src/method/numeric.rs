//! The input and output of a method that reads the quasi-identifiers as numbers
//! ([`super::Input::Numeric`]) rather than a histogram over hierarchies: the records as
//! distinct points, and the released classes with a number for each quasi-identifier.

use std::cmp::Ordering;

use datafusion::arrow::array::RecordBatch;

use crate::metric::information_loss::InformationLoss;
use crate::release::{OwnRows, ReleasedHistogram};

/// The records as distinct points: each point's quasi-identifier values, and the
/// `(value code, records)` entries of the records there (value codes of the released
/// columns other than the quasi-identifiers, ascending within a point).
#[derive(Debug, Clone, Default)]
pub struct NumericPoints {
    /// Quasi-identifiers per point (`dims` each, point after point), ascending by point.
    pub values: Vec<f64>,
    /// Number of quasi-identifiers.
    pub dims: usize,
    /// Point `p` owns entries `offsets[p]..offsets[p + 1]`.
    pub offsets: Vec<usize>,
    /// Value code of each entry.
    pub codes: Vec<u32>,
    /// Records of each entry.
    pub counts: Vec<u64>,
}

impl NumericPoints {
    /// Points from rows of `(quasi-identifier values, value code, records)`, in any order
    /// (a row per distinct combination, as an aggregate gives them). Values must be finite.
    pub fn from_rows(dims: usize, rows: impl IntoIterator<Item = (Vec<f64>, u32, u64)>) -> Self {
        let mut rows: Vec<(Vec<f64>, u32, u64)> = rows.into_iter().filter(|r| r.2 > 0).collect();
        rows.sort_by(|a, b| compare(&a.0, &b.0).then(a.1.cmp(&b.1)));
        let mut points = Self {
            dims,
            offsets: vec![0],
            ..Self::default()
        };
        for (values, code, count) in rows {
            let last = points
                .values
                .len()
                .checked_sub(dims)
                .map(|at| &points.values[at..]);
            if last.is_none_or(|last| compare(last, &values).is_ne()) {
                if !points.codes.is_empty() {
                    points.offsets.push(points.codes.len());
                }
                points.values.extend_from_slice(&values);
                points.codes.push(code);
                points.counts.push(count);
            } else if points.codes.last() == Some(&code) {
                if let Some(c) = points.counts.last_mut() {
                    *c += count;
                }
            } else {
                points.codes.push(code);
                points.counts.push(count);
            }
        }
        if !points.codes.is_empty() {
            points.offsets.push(points.codes.len());
        }
        points
    }

    /// Number of points.
    pub fn point_count(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Quasi-identifier values of point `p`.
    pub fn point(&self, p: usize) -> &[f64] {
        &self.values[p * self.dims..(p + 1) * self.dims]
    }

    /// Records at each point.
    pub fn records(&self) -> Vec<u64> {
        (0..self.point_count())
            .map(|p| {
                self.counts[self.offsets[p]..self.offsets[p + 1]]
                    .iter()
                    .sum()
            })
            .collect()
    }
}

/// Lexicographic order of value vectors (total order of `f64`).
pub(crate) fn compare(a: &[f64], b: &[f64]) -> Ordering {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.total_cmp(y))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// What a numeric method releases.
#[derive(Debug, Clone)]
pub struct NumericOutput {
    /// The released classes: class `c`'s value for quasi-identifier `a` is
    /// `class_values[a][c]`; the class codes of attribute `a` are `0..classes`.
    pub release: ReleasedHistogram,
    /// Per quasi-identifier, the released value of each class.
    pub class_values: Vec<Vec<f64>>,
    /// Information loss of the release against the source.
    pub information_loss: InformationLoss,
    /// Method-specific public metadata (parameters, guarantee).
    pub metadata: Vec<(String, String)>,
    /// Owner-only diagnostics, in the method's diagnostics schema.
    pub diagnostics: RecordBatch,
    /// Owner-only: the released row of every source point (see [`OwnRows`]).
    pub own_rows: Option<OwnRows>,
}
