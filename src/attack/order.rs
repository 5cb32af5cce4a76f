//! A table's rows in one order whatever order a scan returned them in: ascending on each
//! column in turn, NULLs first, the order `ORDER BY c1, c2, … NULLS FIRST` gives (rows
//! equal on every column are interchangeable). The seeded draws of the attacks pick rows by
//! position, so they need it.
//!
//! Sorting the rows themselves compares their values again and again; here each column's
//! values are numbered once by rank among its distinct values (few: ages, labels, codes),
//! and the rows are sorted on those numbers.

use std::cmp::Ordering;

use std::hash::Hash;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::{DataType, Int32Type, Int64Type, SchemaRef};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::{HashMap, Result};

use super::data::Rows;
use crate::histogram::radix_sort_pairs;

/// `batches` (of `schema`) as one batch, and its row positions in the order above.
pub fn in_value_order(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Rows> {
    let batch = concat_batches(schema, batches)?;
    let ranks = batch
        .columns()
        .iter()
        .map(ranks)
        .collect::<Result<Vec<_>>>()?;
    let order = sorted_rows(&ranks, batch.num_rows());
    Ok(Rows::Ordered { batch, order })
}

/// The rows `0..n` sorted on their ranks, column by column: on one packed number per row
/// (radix-sorted) when the ranks' bits fit in 64, else by comparing rank after rank.
fn sorted_rows(ranks: &[(Vec<u32>, u32)], n: usize) -> Vec<u32> {
    let rows: Vec<u32> = (0..n as u32).collect();
    let widths: Vec<u32> = ranks
        .iter()
        .map(|(_, distinct)| u32::BITS - distinct.saturating_sub(1).leading_zeros())
        .collect();
    let total: u32 = widths.iter().sum();
    if total <= 64 {
        let mut keys = vec![0u64; n];
        for ((column, _), &width) in ranks.iter().zip(&widths) {
            for (key, &rank) in keys.iter_mut().zip(column) {
                *key = (*key << width) | u64::from(rank);
            }
        }
        let space = if total == 64 { u64::MAX } else { 1u64 << total };
        return radix_sort_pairs(keys, rows, space).1;
    }
    let mut rows = rows;
    rows.sort_by(|&a, &b| {
        ranks
            .iter()
            .map(|(column, _)| column[a as usize].cmp(&column[b as usize]))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    });
    rows
}

/// Each value's rank among the column's distinct values in sort order (ascending, NULLs
/// first), and how many distinct values there are: strings and integers read directly, any
/// other type through arrow's row format, whose bytes compare as the values sort.
fn ranks(column: &ArrayRef) -> Result<(Vec<u32>, u32)> {
    let nulls = column.logical_nulls();
    let is_null = |i: usize| nulls.as_ref().is_some_and(|n| n.is_null(i));
    let n = column.len();
    match column.data_type() {
        DataType::Utf8 => {
            let values = column.as_string::<i32>();
            Ok(rank_by(
                (0..n).map(|i| (!is_null(i)).then(|| values.value(i))),
            ))
        }
        DataType::LargeUtf8 => {
            let values = column.as_string::<i64>();
            Ok(rank_by(
                (0..n).map(|i| (!is_null(i)).then(|| values.value(i))),
            ))
        }
        DataType::Utf8View => {
            let values = column.as_string_view();
            Ok(rank_by(
                (0..n).map(|i| (!is_null(i)).then(|| values.value(i))),
            ))
        }
        DataType::Int32 => {
            let values = column.as_primitive::<Int32Type>();
            Ok(rank_by(
                (0..n).map(|i| (!is_null(i)).then(|| values.value(i))),
            ))
        }
        DataType::Int64 => {
            let values = column.as_primitive::<Int64Type>();
            Ok(rank_by(
                (0..n).map(|i| (!is_null(i)).then(|| values.value(i))),
            ))
        }
        _ => {
            let converter = RowConverter::new(vec![SortField::new(column.data_type().clone())])?;
            let rows = converter.convert_columns(std::slice::from_ref(column))?;
            Ok(rank_by(
                (0..rows.num_rows()).map(|i| Some(rows.row(i).data())),
            ))
        }
    }
}

/// The ranks of `values` among their distinct values (`None`, a NULL, before every value),
/// and how many distinct values there are.
fn rank_by<T: Ord + Hash + Copy>(values: impl Iterator<Item = Option<T>>) -> (Vec<u32>, u32) {
    let mut seen: HashMap<Option<T>, u32> = HashMap::default();
    let mut distinct: Vec<Option<T>> = Vec::new();
    let codes: Vec<u32> = values
        .map(|value| {
            *seen.entry(value).or_insert_with(|| {
                distinct.push(value);
                distinct.len() as u32 - 1
            })
        })
        .collect();
    let mut by_value: Vec<u32> = (0..distinct.len() as u32).collect();
    // `None < Some(_)`: NULLs first.
    by_value.sort_unstable_by(|&a, &b| distinct[a as usize].cmp(&distinct[b as usize]));
    let mut rank = vec![0u32; distinct.len()];
    for (r, &code) in by_value.iter().enumerate() {
        rank[code as usize] = r as u32;
    }
    let ranks = codes.into_iter().map(|c| rank[c as usize]).collect();
    (ranks, distinct.len() as u32)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Float64Array, Int32Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::prelude::SessionContext;

    use super::*;

    /// The same rows as DataFusion's `ORDER BY … NULLS FIRST`, from two scans' orders.
    #[tokio::test]
    async fn rows_come_out_as_order_by_sorts_them() -> Result<()> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Utf8, true),
            Field::new("n", DataType::Int32, true),
            Field::new("x", DataType::Float64, true),
        ]));
        let a = ["b", "a", "b", "", "é", "a", "b", "B"].map(Some).to_vec();
        let mut a: Vec<Option<&str>> = a;
        a.push(None);
        let n = vec![
            Some(2),
            Some(-1),
            None,
            Some(3),
            Some(0),
            Some(-1),
            Some(2),
            Some(10),
            Some(1),
        ];
        let x = vec![
            Some(0.5),
            Some(-0.0),
            Some(0.0),
            None,
            Some(f64::NAN),
            Some(1e9),
            Some(0.5),
            Some(-2.0),
            Some(3.0),
        ];
        let batch = |order: &[usize]| -> Result<RecordBatch> {
            let pick = |i: &usize| *i;
            Ok(RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(StringArray::from(
                        order.iter().map(|i| a[pick(i)]).collect::<Vec<_>>(),
                    )),
                    Arc::new(Int32Array::from(
                        order.iter().map(|i| n[pick(i)]).collect::<Vec<_>>(),
                    )),
                    Arc::new(Float64Array::from(
                        order.iter().map(|i| x[pick(i)]).collect::<Vec<_>>(),
                    )),
                ],
            )?)
        };
        let forward: Vec<usize> = (0..9).collect();
        let backward: Vec<usize> = (0..9).rev().collect();
        let ctx = SessionContext::new();
        let expected = ctx
            .read_batch(batch(&forward)?)?
            .sort(vec![
                datafusion::prelude::col("a").sort(true, true),
                datafusion::prelude::col("n").sort(true, true),
                datafusion::prelude::col("x").sort(true, true),
            ])?
            .collect()
            .await?;
        let expected = concat_batches(&schema, &expected)?;
        let taken = |rows: Rows| -> Result<RecordBatch> {
            let Rows::Ordered { batch, order } = rows else {
                panic!("rows in an order");
            };
            Ok(datafusion::arrow::compute::take_record_batch(
                &batch,
                &datafusion::arrow::array::UInt32Array::from(order),
            )?)
        };
        let first = taken(in_value_order(
            &schema,
            &[batch(&forward[..4])?, batch(&forward[4..])?],
        )?)?;
        let second = taken(in_value_order(&schema, &[batch(&backward)?])?)?;
        let text = |b: &RecordBatch| {
            datafusion::arrow::util::pretty::pretty_format_batches(std::slice::from_ref(b))
                .map(|t| t.to_string())
        };
        assert_eq!(text(&first)?, text(&expected)?);
        assert_eq!(text(&second)?, text(&expected)?);
        Ok(())
    }
}
