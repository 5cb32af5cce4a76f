//! `anonymize_profile(source)`: one row per column of a table with its type, distinct
//! count, NULL share, uniqueness and a suggested role ([`roles`]) with the rule that fired,
//! HIPAA Safe Harbor's identifier kinds among them. One aggregate scan for the counts and
//! one grouping per column for a sample of its most frequent values ([`SAMPLE_VALUES`]).

pub mod patterns;
pub mod roles;
pub mod safe_harbor;

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{Column, Result};
use datafusion::execution::SessionState;
use datafusion::functions_aggregate::expr_fn::{count, count_distinct};
use datafusion::logical_expr::{cast as cast_expr, lit, Expr};
use datafusion::prelude::SessionContext;

use crate::session::reading_error;
use roles::{suggest, ColumnFacts};

/// The most frequent distinct values of a column whose patterns are read.
pub const SAMPLE_VALUES: usize = 50;

/// A validated call of `anonymize_profile(...)`.
#[derive(Debug, Clone)]
pub(crate) struct ProfileRequest {
    pub(crate) source_name: String,
    pub(crate) source: Arc<dyn TableProvider>,
}

/// The columns of `anonymize_profile`.
pub(crate) fn profile_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("column_name", DataType::Utf8, false),
        Field::new("data_type", DataType::Utf8, false),
        Field::new("rows", DataType::Int64, false),
        Field::new("distinct_count", DataType::Int64, false),
        Field::new("null_share", DataType::Float64, false),
        Field::new("uniqueness", DataType::Float64, false),
        Field::new("role", DataType::Utf8, false),
        Field::new("safe_harbor", DataType::Utf8, true),
        Field::new("reason", DataType::Utf8, false),
    ]))
}

fn column(name: &str) -> Expr {
    Expr::Column(Column::new_unqualified(name))
}

fn int(array: &ArrayRef) -> Result<i64> {
    let array = cast(array, &DataType::Int64)?;
    let array = array.as_primitive::<Int64Type>();
    Ok(if array.is_empty() || array.is_null(0) {
        0
    } else {
        array.value(0)
    })
}

/// The profile of the request's table, one row per column in table order.
pub(crate) async fn profile(
    request: &ProfileRequest,
    state: &SessionState,
) -> Result<Vec<RecordBatch>> {
    let ctx = SessionContext::new_with_state(state.clone());
    let failed = |e| {
        reading_error(
            "anonymize_profile",
            &format!("table '{}'", request.source_name),
            e,
        )
    };
    let schema = request.source.schema();
    let mut aggregates = vec![count(lit(1)).alias("__rows")];
    for (i, field) in schema.fields().iter().enumerate() {
        aggregates.push(count_distinct(column(field.name())).alias(format!("__distinct_{i}")));
        aggregates.push(count(column(field.name())).alias(format!("__present_{i}")));
    }
    let counts = ctx
        .read_table(request.source.clone())?
        .aggregate(vec![], aggregates)?
        .collect()
        .await
        .map_err(failed)?;
    let Some(counts) = counts.first() else {
        return Ok(vec![RecordBatch::new_empty(profile_schema())]);
    };
    let rows = int(counts.column(0))?;
    let mut out: [Vec<String>; 4] = Default::default();
    let (mut totals, mut distincts, mut null_shares, mut uniqueness) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut safe_harbor: Vec<Option<&'static str>> = Vec::new();
    for (i, field) in schema.fields().iter().enumerate() {
        let distinct = int(counts.column(1 + 2 * i))?;
        let present = int(counts.column(2 + 2 * i))?;
        let sample: Vec<String> = value_counts(&ctx, request, field.name(), SAMPLE_VALUES)
            .await
            .map_err(failed)?
            .into_iter()
            .map(|(value, _)| value)
            .collect();
        let suggestion = suggest(&ColumnFacts {
            name: field.name(),
            data_type: field.data_type(),
            present: present as u64,
            distinct: distinct as u64,
            sample: &sample,
        });
        out[0].push(field.name().clone());
        out[1].push(field.data_type().to_string());
        out[2].push(suggestion.role.name().to_string());
        out[3].push(suggestion.reason);
        safe_harbor.push(suggestion.safe_harbor.map(|k| k.describe()));
        totals.push(rows);
        distincts.push(distinct);
        null_shares.push(if rows == 0 {
            0.0
        } else {
            (rows - present) as f64 / rows as f64
        });
        uniqueness.push(if present == 0 {
            0.0
        } else {
            distinct as f64 / present as f64
        });
    }
    let [names, types, roles, reasons] = out;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(names)),
        Arc::new(StringArray::from(types)),
        Arc::new(Int64Array::from(totals)),
        Arc::new(Int64Array::from(distincts)),
        Arc::new(Float64Array::from(null_shares)),
        Arc::new(Float64Array::from(uniqueness)),
        Arc::new(StringArray::from(roles)),
        Arc::new(StringArray::from(safe_harbor)),
        Arc::new(StringArray::from(reasons)),
    ];
    Ok(vec![RecordBatch::try_new(profile_schema(), columns)?])
}

/// The column's `limit` most frequent values as text with their rows, most frequent first
/// (ties by value); NULLs left out.
pub(crate) async fn value_counts(
    ctx: &SessionContext,
    request: &ProfileRequest,
    name: &str,
    limit: usize,
) -> Result<Vec<(String, i64)>> {
    let value = cast_expr(column(name), DataType::Utf8).alias("__value");
    let batches = ctx
        .read_table(request.source.clone())?
        .filter(column(name).is_not_null())?
        .aggregate(vec![value], vec![count(lit(1)).alias("__n")])?
        .sort(vec![
            column("__n").sort(false, false),
            column("__value").sort(true, false),
        ])?
        .limit(0, Some(limit))?
        .collect()
        .await?;
    let mut out = Vec::new();
    for batch in batches {
        let values = cast(batch.column(0), &DataType::Utf8)?;
        let counts = cast(batch.column(1), &DataType::Int64)?;
        let (values, counts) = (
            values.as_string::<i32>(),
            counts.as_primitive::<Int64Type>(),
        );
        for r in 0..batch.num_rows() {
            if !values.is_null(r) {
                out.push((values.value(r).to_string(), counts.value(r)));
            }
        }
    }
    Ok(out)
}
