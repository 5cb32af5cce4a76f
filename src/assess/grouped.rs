//! The readers' shared pieces: column expressions, grouping, counts and row ids over a
//! table's quasi-identifiers, and the row type of `anonymize_assess`.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::{cast, concat};
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef};
use datafusion::arrow::row::{OwnedRow, RowConverter, SortField};
use datafusion::common::{exec_err, Column, Result};
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::{cast as cast_expr, lit, Expr};
use datafusion::prelude::DataFrame;

use crate::hierarchy::STAR;

pub(crate) fn column(name: &str) -> Expr {
    Expr::Column(Column::new_unqualified(name))
}

/// Whether every quasi-identifier of a row is `*` (never NULL).
pub(crate) fn suppressed_flag(qi: &[String]) -> Expr {
    let mut flag: Option<Expr> = None;
    for q in qi {
        let is_star = cast_expr(column(q), DataType::Utf8).eq(lit(STAR));
        flag = Some(match flag {
            None => is_star,
            Some(f) => f.and(is_star),
        });
    }
    flag.unwrap_or(lit(false)).is_true()
}

/// Quasi-identifiers as text (so that a release's labels and a source's values compare).
pub(crate) fn qi_text(qi: &[String]) -> Vec<Expr> {
    qi.iter()
        .map(|q| cast_expr(column(q), DataType::Utf8).alias(q))
        .collect()
}

/// `df` grouped by `group`, with the number of rows of each group, then `more` aggregates.
pub(crate) async fn grouped(
    df: DataFrame,
    group: Vec<Expr>,
    more: Vec<Expr>,
) -> Result<Vec<RecordBatch>> {
    let mut aggregates = vec![count(lit(1)).alias("__assess_count")];
    aggregates.extend(more);
    df.aggregate(group, aggregates)?.collect().await
}

pub(crate) fn counts_of(batches: &[RecordBatch], column: usize) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    for b in batches {
        let c = cast(b.column(column), &DataType::Int64)?;
        out.extend(
            c.as_primitive::<Int64Type>()
                .values()
                .iter()
                .map(|&v| v.max(0) as u64),
        );
    }
    Ok(out)
}

/// Dense ids of the rows of `arrays` (equal rows, equal ids) and the number of ids.
pub(crate) fn row_ids(arrays: &[ArrayRef]) -> Result<(Vec<u32>, Vec<OwnedRow>)> {
    let converter = RowConverter::new(
        arrays
            .iter()
            .map(|a| SortField::new(a.data_type().clone()))
            .collect(),
    )?;
    let rows = converter.convert_columns(arrays)?;
    let mut index: HashMap<OwnedRow, u32> = HashMap::new();
    let mut keys = Vec::new();
    let mut ids = Vec::with_capacity(rows.num_rows());
    for row in rows.iter() {
        let next = index.len() as u32;
        let id = *index.entry(row.owned()).or_insert_with(|| {
            keys.push(row.owned());
            next
        });
        ids.push(id);
    }
    Ok((ids, keys))
}

pub(crate) fn concat_column(
    batches: &[RecordBatch],
    i: usize,
    schema: &SchemaRef,
) -> Result<ArrayRef> {
    if batches.is_empty() {
        return Ok(datafusion::arrow::array::new_empty_array(
            schema.field(i).data_type(),
        ));
    }
    let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
    Ok(concat(&arrays)?)
}

/// One row of `anonymize_assess`: key, sensitive column, value (NULL when there is no
/// number, e.g. an estimator that did not converge) and a note saying why, or naming a model.
pub(crate) type Entry = (String, Option<String>, Option<f64>, Option<String>);

/// The error for a NULL quasi-identifier value, as `anonymize` words it: a NULL is no
/// value a class could be formed of.
pub(crate) fn null_qi<T>(function: &str, qi: &str, table: &str) -> Result<T> {
    exec_err!(
        "{function}(): quasi-identifier '{qi}' of table '{table}' contains NULL values; filter or impute them first"
    )
}
