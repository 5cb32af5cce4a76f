//! Reading a table for `anonymize_individual_risk(...)`, and the sampling weights of
//! `anonymize_assess(..., weights => ...)`: one DataFusion aggregate per class (records,
//! and the sum, smallest value and non-NULL count of the weight column), then sdcMicro's
//! individual risk of each class ([`crate::privacy::individual_risk`], docs/METHODS.md
//! §7.5.3). Rust sees one row per class, never the raw rows.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch, UInt32Array,
};
use datafusion::arrow::compute::{lexsort_to_indices, take, SortColumn, SortOptions};
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_err, Result};
use datafusion::execution::SessionState;
use datafusion::functions_aggregate::expr_fn::{count, min, sum};
use datafusion::logical_expr::{cast as cast_expr, lit, Expr};
use datafusion::prelude::SessionContext;

use super::grouped::{column, concat_column, null_qi, qi_text, suppressed_flag, Entry};
use crate::privacy::individual_risk::{global_threshold, individual_risk, RiskMethod};
use crate::session::reading_error;

/// The columns `anonymize_individual_risk` adds to the quasi-identifiers.
pub const INDIVIDUAL_RISK_COLUMNS: [&str; 3] = ["records", "weight_sum", "risk"];

/// A validated call of `anonymize_individual_risk(...)`.
#[derive(Debug, Clone)]
pub(crate) struct IndividualRiskRequest {
    pub(crate) source_name: String,
    pub(crate) source: Arc<dyn TableProvider>,
    pub(crate) qi: Vec<String>,
    /// The sampling-weight column; `None`: every record has weight 1 (risk `1/f_k`).
    pub(crate) weights: Option<String>,
    pub(crate) method: RiskMethod,
}

/// Schema of `anonymize_individual_risk`: the quasi-identifiers (as text, as a release
/// shows them), then [`INDIVIDUAL_RISK_COLUMNS`].
pub(crate) fn individual_risk_schema(qi: &[String]) -> SchemaRef {
    let mut fields: Vec<Field> = qi
        .iter()
        .map(|q| Field::new(q, DataType::Utf8, false))
        .collect();
    fields.push(Field::new(
        INDIVIDUAL_RISK_COLUMNS[0],
        DataType::Int64,
        false,
    ));
    fields.push(Field::new(
        INDIVIDUAL_RISK_COLUMNS[1],
        DataType::Float64,
        false,
    ));
    fields.push(Field::new(
        INDIVIDUAL_RISK_COLUMNS[2],
        DataType::Float64,
        false,
    ));
    Arc::new(Schema::new(fields))
}

/// The aggregates of a sampling-weight column for one group: the sum of its weights, the
/// smallest weight and how many are not NULL (to refuse NULL and non-positive weights).
pub(crate) fn weight_aggregates(weights: &str) -> Vec<Expr> {
    let w = cast_expr(column(weights), DataType::Float64);
    vec![
        sum(w.clone()).alias("__weight_sum"),
        min(w.clone()).alias("__weight_min"),
        count(w).alias("__weight_count"),
    ]
}

/// The weight sum of each aggregated row, from the three columns of [`weight_aggregates`]
/// starting at `first`, checked: every weight present, finite and positive.
pub(crate) fn weight_sums(
    batches: &[RecordBatch],
    first: usize,
    records: &[u64],
    function: &str,
    weights: &str,
    table: &str,
) -> Result<Vec<f64>> {
    let Some(schema) = batches.first().map(|b| b.schema()) else {
        return Ok(Vec::new());
    };
    let as_f64 = |i: usize| -> Result<Vec<f64>> {
        let c = concat_column(batches, i, &schema)?;
        let c = datafusion::arrow::compute::cast(&c, &DataType::Float64)?;
        Ok(c.as_primitive::<Float64Type>()
            .iter()
            .map(|v| v.unwrap_or(f64::NAN))
            .collect())
    };
    let sums = as_f64(first)?;
    let mins = as_f64(first + 1)?;
    let present = concat_column(batches, first + 2, &schema)?;
    let present = datafusion::arrow::compute::cast(&present, &DataType::Int64)?;
    let present = present.as_primitive::<Int64Type>();
    if records
        .iter()
        .enumerate()
        .any(|(r, &n)| present.value(r).max(0) as u64 != n)
    {
        return exec_err!(
            "{function}(): weights column '{weights}' of table '{table}' contains NULL values; every record needs its sampling weight"
        );
    }
    for r in 0..records.len() {
        if !(mins[r].is_finite() && mins[r] > 0.0) {
            return exec_err!(
                "{function}(): weights column '{weights}' of table '{table}' holds {}; sampling weights must be positive and finite (a record's weight is the number of population records it stands for)",
                mins[r]
            );
        }
        if !sums[r].is_finite() {
            return exec_err!(
                "{function}(): the sampling weights in column '{weights}' of table '{table}' add up to more than a 64-bit float holds"
            );
        }
    }
    Ok(sums)
}

/// One row per class (records whose every quasi-identifier is `*` are not a class): its
/// quasi-identifier values, records, weight sum and individual risk, riskiest first (ties
/// in the order of the values).
pub(crate) async fn individual_risks(
    request: &IndividualRiskRequest,
    state: &SessionState,
) -> Result<Vec<RecordBatch>> {
    let function = "anonymize_individual_risk";
    let ctx = SessionContext::new_with_state(state.clone());
    let q = request.qi.len();
    let mut aggregates = vec![count(lit(1)).alias("__records")];
    if let Some(w) = &request.weights {
        aggregates.extend(weight_aggregates(w));
    }
    let batches = ctx
        .read_table(request.source.clone())?
        .filter(suppressed_flag(&request.qi).is_not_true())?
        .aggregate(qi_text(&request.qi), aggregates)?
        .collect()
        .await
        .map_err(|e| reading_error(function, &format!("table '{}'", request.source_name), e))?;
    let schema = individual_risk_schema(&request.qi);
    let Some(first) = batches.first() else {
        return Ok(vec![RecordBatch::new_empty(schema)]);
    };
    let read = first.schema();
    let qi_arrays: Vec<ArrayRef> = (0..q)
        .map(|a| concat_column(&batches, a, &read))
        .collect::<Result<_>>()?;
    if let Some(a) = qi_arrays.iter().position(|array| array.null_count() > 0) {
        return null_qi(function, &request.qi[a], &request.source_name);
    }
    let records = concat_column(&batches, q, &read)?;
    let records = datafusion::arrow::compute::cast(&records, &DataType::Int64)?;
    let records: Vec<u64> = records
        .as_primitive::<Int64Type>()
        .values()
        .iter()
        .map(|&n| n.max(0) as u64)
        .collect();
    if records.is_empty() {
        return Ok(vec![RecordBatch::new_empty(schema)]);
    }
    let weight_sums = match &request.weights {
        Some(w) => weight_sums(&batches, q + 1, &records, function, w, &request.source_name)?,
        None => records.iter().map(|&n| n as f64).collect(),
    };
    let classes: Vec<(u64, f64)> = records.iter().copied().zip(weight_sums.clone()).collect();
    let risk = match individual_risk(&classes, request.method, 1.0) {
        Ok(risk) => risk,
        Err(e) => return exec_err!("{function}(): {e}"),
    };
    let mut columns = qi_arrays;
    columns.push(Arc::new(Int64Array::from_iter_values(
        records.iter().map(|&n| n as i64),
    )));
    columns.push(Arc::new(Float64Array::from(weight_sums)));
    columns.push(Arc::new(Float64Array::from(risk.class_risks)));
    // Riskiest first; equal risks in the order of their values, so the output is the same
    // whatever order the aggregate returns.
    let mut order = vec![SortColumn {
        values: columns[q + 2].clone(),
        options: Some(SortOptions {
            descending: true,
            nulls_first: false,
        }),
    }];
    order.extend(columns[..q].iter().map(|c| SortColumn {
        values: c.clone(),
        options: None,
    }));
    let indices: UInt32Array = lexsort_to_indices(&order, None)?;
    let sorted = columns
        .iter()
        .map(|c| Ok(take(c.as_ref(), &indices, None)?))
        .collect::<Result<Vec<ArrayRef>>>()?;
    Ok(vec![RecordBatch::try_new(schema, sorted)?])
}

/// The figures of sdcMicro's `measure_risk` with sampling weights (docs/METHODS.md §7.5.3),
/// from each class's records and weight sum: the total weight, the largest individual
/// risk, the expected number of re-identifications and its share of the records, the
/// records whose individual risk exceeds `threshold`, and the global risk threshold for
/// `max_global_risk`.
pub(crate) fn weighted_entries(
    classes: &[(u64, f64)],
    threshold: f64,
    max_global_risk: f64,
) -> Result<Vec<Entry>> {
    let function = "anonymize_assess";
    let risk = match individual_risk(classes, RiskMethod::Approx, threshold) {
        Ok(risk) => risk,
        Err(e) => return exec_err!("{function}(): {e}"),
    };
    let pairs: Vec<(u64, f64)> = classes
        .iter()
        .zip(&risk.class_risks)
        .map(|(&(f, _), &r)| (f, r))
        .collect();
    let global_threshold = match global_threshold(&pairs, max_global_risk) {
        Ok(t) => t,
        Err(e) => return exec_err!("{function}(): {e}"),
    };
    let max = risk.class_risks.iter().copied().fold(0.0, f64::max);
    let number = |key: &str, value: f64| (key.to_string(), None, Some(value), None);
    let mut out = vec![
        number("weights_sum", classes.iter().map(|c| c.1).sum()),
        number("individual_risk_max", max),
        number("global_risk_expected", risk.expected_reidentifications),
        number("global_risk", risk.global_risk),
        number(
            "records_above_risk_threshold",
            risk.records_above_threshold as f64,
        ),
        number("max_global_risk", max_global_risk),
    ];
    out.push(match global_threshold {
        Some(t) => number("global_threshold", t),
        None => (
            "global_threshold".to_string(),
            None,
            None,
            Some(if risk.records == 0 {
                "no records".to_string()
            } else {
                "none needed: the expected re-identifications are already below max_global_risk"
                    .to_string()
            }),
        ),
    });
    Ok(out)
}
