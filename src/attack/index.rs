//! A table's rows by value, so that a query is answered from its most selective condition:
//! rows per code for a categorical column, rows sorted by number for a numeric one. Asking
//! whether a query singles out one row then reads the rows its rarest condition allows,
//! not the whole table.

use super::data::{Column, Table, Values, NULL_CODE};

/// One column's rows by value.
#[derive(Debug)]
enum ColumnIndex {
    /// Rows per code; for each label, the codes of this table it covers (itself included).
    Codes {
        postings: Vec<Vec<u32>>,
        covered: Vec<Vec<u32>>,
        nulls: Vec<u32>,
    },
    /// Rows sorted by number, NULLs apart.
    Numbers {
        sorted: Vec<(f64, u32)>,
        nulls: Vec<u32>,
    },
}

/// Rows a condition allows: some lists of rows, or every row.
pub enum Rows<'a> {
    /// The rows in these lists (disjoint).
    Lists(Vec<&'a [u32]>),
    /// A run of the sorted rows.
    Sorted(&'a [(f64, u32)]),
    /// No index narrows it down.
    All,
}

impl Rows<'_> {
    /// How many rows, `None` for every row.
    pub fn count(&self) -> Option<usize> {
        match self {
            Rows::Lists(lists) => Some(lists.iter().map(|l| l.len()).sum()),
            Rows::Sorted(run) => Some(run.len()),
            Rows::All => None,
        }
    }

    /// Calls `each` with every row until it returns false.
    pub fn for_each(&self, rows: usize, mut each: impl FnMut(usize) -> bool) {
        match self {
            Rows::Lists(lists) => {
                for list in lists {
                    for &row in *list {
                        if !each(row as usize) {
                            return;
                        }
                    }
                }
            }
            Rows::Sorted(run) => {
                for &(_, row) in *run {
                    if !each(row as usize) {
                        return;
                    }
                }
            }
            Rows::All => {
                for row in 0..rows {
                    if !each(row) {
                        return;
                    }
                }
            }
        }
    }
}

/// The comparisons a condition may make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `=` (a label covering the value, when covering).
    Eq,
    /// `≠`.
    Ne,
    /// `>`.
    Gt,
    /// `<`.
    Lt,
    /// `≥`.
    Ge,
    /// `≤`.
    Le,
    /// is NULL.
    IsNull,
    /// is not NULL.
    NotNull,
}

/// The rows of one table by value.
#[derive(Debug)]
pub struct Index {
    columns: Vec<ColumnIndex>,
}

impl Index {
    /// Indexes `table`; `columns` tells which labels cover which values.
    pub fn new(table: &Table, columns: &[Column]) -> Self {
        let columns = table
            .columns
            .iter()
            .zip(columns)
            .map(|(values, column)| match values {
                Values::Codes(codes) => {
                    let size = codes
                        .iter()
                        .filter(|&&c| c != NULL_CODE)
                        .map(|&c| c as usize + 1)
                        .max()
                        .unwrap_or(0)
                        .max(column.dictionary_size());
                    let mut postings = vec![Vec::new(); size];
                    let mut nulls = Vec::new();
                    for (row, &code) in codes.iter().enumerate() {
                        if code == NULL_CODE {
                            nulls.push(row as u32);
                        } else {
                            postings[code as usize].push(row as u32);
                        }
                    }
                    let mut covered = vec![Vec::new(); size];
                    for (value, rows) in postings.iter().enumerate() {
                        if rows.is_empty() {
                            continue;
                        }
                        for label in column.labels_covering(value as u32) {
                            if let Some(list) = covered.get_mut(label as usize) {
                                list.push(value as u32);
                            }
                        }
                    }
                    ColumnIndex::Codes {
                        postings,
                        covered,
                        nulls,
                    }
                }
                Values::Numbers(numbers) => {
                    let mut sorted: Vec<(f64, u32)> = Vec::with_capacity(numbers.len());
                    let mut nulls = Vec::new();
                    for (row, &x) in numbers.iter().enumerate() {
                        if x.is_nan() {
                            nulls.push(row as u32);
                        } else {
                            sorted.push((x, row as u32));
                        }
                    }
                    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
                    ColumnIndex::Numbers { sorted, nulls }
                }
            })
            .collect();
        Self { columns }
    }

    /// The rows that may meet `op value` on column `c` (a superset for `≠`, which no index
    /// narrows). `covering`: an `=` label allows the rows of every value it covers (`*`
    /// allows all).
    pub fn rows(
        &self,
        c: usize,
        op: Op,
        value: u64,
        covering: bool,
        star: Option<u32>,
    ) -> Rows<'_> {
        match &self.columns[c] {
            ColumnIndex::Codes {
                postings,
                covered,
                nulls,
            } => match op {
                Op::IsNull => Rows::Lists(vec![nulls]),
                Op::Eq if covering && star == Some(value as u32) => Rows::All,
                Op::Eq if covering => Rows::Lists(
                    covered
                        .get(value as usize)
                        .map(|codes| {
                            codes
                                .iter()
                                .map(|&v| postings[v as usize].as_slice())
                                .collect()
                        })
                        .unwrap_or_default(),
                ),
                Op::Eq => Rows::Lists(
                    postings
                        .get(value as usize)
                        .map(|l| vec![l.as_slice()])
                        .unwrap_or_default(),
                ),
                _ => Rows::All,
            },
            ColumnIndex::Numbers { sorted, nulls } => {
                let v = f64::from_bits(value);
                let below = sorted.partition_point(|&(x, _)| x < v);
                let through = sorted.partition_point(|&(x, _)| x <= v);
                match op {
                    Op::IsNull => Rows::Lists(vec![nulls]),
                    Op::Eq => Rows::Sorted(&sorted[below..through]),
                    Op::Lt => Rows::Sorted(&sorted[..below]),
                    Op::Le => Rows::Sorted(&sorted[..through]),
                    Op::Gt => Rows::Sorted(&sorted[through..]),
                    Op::Ge => Rows::Sorted(&sorted[below..]),
                    Op::Ne | Op::NotNull => Rows::All,
                }
            }
        }
    }
}
