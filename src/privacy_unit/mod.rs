//! The privacy unit of a release: a row of the source, or a person who may own several rows
//! (`person => 'patient_id'`, METHODS.md §9).
//!
//! Per person, the differentially private methods see at most `max_rows_per_person` rows of
//! each person, chosen uniformly at random with the release's secure generator before
//! anything else happens ([`bound_contributions`]), and run with the per-row budget that
//! group privacy turns into the requested per-person budget ([`per_row_budget`]). The
//! syntactic methods keep every row and count *persons* per class ([`PersonCodes`]).

use std::collections::BTreeSet;

use datafusion::common::{plan_err, Result};
use rand::RngCore;

use crate::budget::account::AccountKey;
use crate::budget::Cost;
use crate::mechanism::noise::sample_uniform_below;

mod persons;
pub use persons::{bound_rows, person_classes, person_ends, PersonClasses};

/// Largest `max_rows_per_person`: beyond it the per-row ε of group privacy is too small for
/// any release to carry information.
pub const MAX_ROWS_PER_PERSON: u64 = 10_000;

/// Default `max_rows_per_person`: one row per person, the strongest bound.
pub const DEFAULT_MAX_ROWS_PER_PERSON: u64 = 1;

/// Who the guarantee of a release protects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrivacyUnit {
    /// Every row of the source is one individual (the default).
    Row,
    /// The rows with the same value of `column` belong to one person.
    Person {
        /// The source column identifying a person.
        column: String,
        /// At most this many rows of a person reach a differentially private method
        /// (syntactic methods keep every row and count persons).
        max_rows: u64,
    },
}

impl PrivacyUnit {
    /// A person unit, its bound checked.
    pub fn person(column: &str, max_rows: u64) -> Result<Self> {
        if !(1..=MAX_ROWS_PER_PERSON).contains(&max_rows) {
            return plan_err!(
                "max_rows_per_person must be between 1 and {MAX_ROWS_PER_PERSON}, got {max_rows}"
            );
        }
        Ok(Self::Person {
            column: column.to_string(),
            max_rows,
        })
    }

    /// The person column, if the unit is a person.
    pub fn person_column(&self) -> Option<&str> {
        match self {
            Self::Row => None,
            Self::Person { column, .. } => Some(column),
        }
    }

    /// The text of the cache key (every release parameter is in it).
    pub fn canonical(&self) -> String {
        match self {
            Self::Row => "row".to_string(),
            Self::Person { column, max_rows } => format!("person={column:?};m={max_rows}"),
        }
    }

    /// The ledger account of a source under this unit: the table's key for rows, the key
    /// and the person column otherwise ([`AccountKey`]).
    pub fn account(&self, table_key: &str) -> String {
        AccountKey {
            table: table_key,
            person: self.person_column(),
        }
        .text()
    }

    /// The `privacy_unit` metadata value.
    pub fn describe(&self, differentially_private: bool) -> String {
        match self {
            Self::Row => "row: each row of the source is one individual".to_string(),
            Self::Person { column, max_rows } if differentially_private => format!(
                "person (column '{column}'), at most {max_rows} row{} each",
                if *max_rows == 1 { "" } else { "s" }
            ),
            Self::Person { column, .. } => {
                format!("person (column '{column}'): classes count distinct persons")
            }
        }
    }
}

/// The per-row budget that gives `(epsilon, delta)` per person when a person has at most
/// `m` rows (group privacy, METHODS.md §9.2): `ε_row = ε / m` and
/// `δ_row = δ · (e^ε_row − 1) / (e^(m·ε_row) − 1)`, each rounded down so that
/// [`per_person_cost`] of the result never exceeds the request.
pub fn per_row_budget(epsilon: f64, delta: f64, m: u64) -> (f64, f64) {
    if m <= 1 {
        return (epsilon, delta);
    }
    let mut eps_row = epsilon / m as f64;
    while m as f64 * eps_row > epsilon {
        eps_row = eps_row.next_down();
    }
    let mut delta_row = delta * eps_row.exp_m1() / (m as f64 * eps_row).exp_m1();
    // The two exponentials are each within an ulp or so; a relative margin of 1e-9 makes
    // the rounding of the quotient irrelevant.
    delta_row *= 1.0 - 1e-9;
    (eps_row, delta_row.max(0.0))
}

/// The per-person cost of a release whose mechanisms cost `row` per row, when a person has
/// at most `m` rows: `(m·ε_row, δ_row · Σ_{i<m} e^(i·ε_row))`. The figures are the floating
/// point results (within an ulp or two of the exact ones); the samplers round every ε they
/// use down to a multiple of 2^-30 (METHODS.md §6.3), far more than that.
pub fn per_person_cost(row: Cost, m: u64) -> Cost {
    if m <= 1 {
        return row;
    }
    let epsilon = m as f64 * row.epsilon;
    let delta = if row.delta == 0.0 {
        0.0
    } else {
        row.delta * epsilon.exp_m1() / row.epsilon.exp_m1()
    };
    Cost { epsilon, delta }
}

/// Contribution bounding: of the rows of each person, keeps at most `m` uniformly at random.
///
/// `counts` holds the row counts of distinct (person, values) combinations, sorted by
/// person; `person_ends[p]` is one past the last combination of person `p`. A person with
/// `n > m` rows keeps a uniformly random `m`-subset of them (Floyd's algorithm over the
/// `n` rows, exact uniform draws from `rng`); the counts are lowered in place (to 0 for a
/// combination none of whose rows was kept). Returns the rows kept.
pub fn bound_contributions<R: RngCore + ?Sized>(
    person_ends: &[usize],
    counts: &mut [u64],
    m: u64,
    rng: &mut R,
) -> u64 {
    let mut start = 0;
    let mut kept = 0u64;
    let mut chosen: BTreeSet<u64> = BTreeSet::new();
    for &end in person_ends {
        let rows = &mut counts[start..end];
        start = end;
        let n: u64 = rows.iter().sum();
        if n <= m {
            kept += n;
            continue;
        }
        chosen.clear();
        for j in (n - m)..n {
            let t = sample_uniform_below(rng, j + 1);
            if !chosen.insert(t) {
                chosen.insert(j);
            }
        }
        // Row instances are numbered combination by combination; each keeps the chosen
        // numbers that fall in its range.
        let mut first = 0u64;
        for count in rows.iter_mut() {
            let last = first + *count;
            let keep = chosen.range(first..last).count() as u64;
            first = last;
            *count = keep;
        }
        kept += m;
    }
    kept
}

/// Persons inside the classes of a syntactic release: the value code of the person
/// histogram is a *combination* of a person and a sensitive tuple, numbered person by
/// person (so ascending combinations have non-decreasing persons).
#[derive(Debug, Clone, PartialEq)]
pub struct PersonCodes {
    /// The person of each combination.
    pub person: Vec<u32>,
    /// The sensitive tuple code of each combination.
    pub tuple: Vec<u32>,
}

impl PersonCodes {
    /// Numbers the (person, tuple) combinations of rows sorted by person (`person_ends` as
    /// in [`bound_contributions`], `tuples` the rows' tuple codes). Returns the codes and
    /// the combination of every row.
    pub fn number(person_ends: &[usize], tuples: &[u32]) -> (Self, Vec<u32>) {
        let mut codes = Self {
            person: Vec::new(),
            tuple: Vec::new(),
        };
        let mut row_combo = vec![0u32; tuples.len()];
        let mut start = 0;
        let mut distinct: Vec<u32> = Vec::new();
        for (p, &end) in person_ends.iter().enumerate() {
            distinct.clear();
            distinct.extend_from_slice(&tuples[start..end]);
            distinct.sort_unstable();
            distinct.dedup();
            let first = codes.person.len() as u32;
            for &t in &distinct {
                codes.person.push(p as u32);
                codes.tuple.push(t);
            }
            for row in start..end {
                let at = distinct.partition_point(|&t| t < tuples[row]);
                row_combo[row] = first + at as u32;
            }
            start = end;
        }
        (codes, row_combo)
    }

    /// Number of combinations (the person histogram's value domain).
    pub fn len(&self) -> usize {
        self.person.len()
    }

    /// Whether there is no combination.
    pub fn is_empty(&self) -> bool {
        self.person.is_empty()
    }

    /// Distinct persons among `values` (combination codes, ascending).
    pub fn distinct_persons(&self, values: &[(u32, u64)]) -> u64 {
        let mut last = None;
        let mut n = 0;
        for &(combo, count) in values {
            let p = self.person[combo as usize];
            if count > 0 && last != Some(p) {
                n += 1;
                last = Some(p);
            }
        }
        n
    }

    /// `values` (combination codes and counts) as sensitive tuple codes and counts,
    /// ascending by tuple, into `out`.
    pub fn tuples_of(&self, values: &[(u32, u64)], out: &mut Vec<(u32, u64)>) {
        out.clear();
        out.extend(values.iter().map(|&(c, n)| (self.tuple[c as usize], n)));
        out.sort_unstable_by_key(|v| v.0);
        let mut merged = 0;
        for i in 0..out.len() {
            if merged > 0 && out[merged - 1].0 == out[i].0 {
                out[merged - 1].1 += out[i].1;
            } else {
                out[merged] = out[i];
                merged += 1;
            }
        }
        out.truncate(merged);
    }
}

#[cfg(test)]
mod tests;
