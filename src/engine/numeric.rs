//! Phase 1 and the release of a method that reads numbers (METHODS.md §10): one aggregate
//! over the source (the quasi-identifiers as numbers, the sensitive columns, the record
//! count), then the method on the points ([`crate::method::Method::run_numeric`]). The
//! released rows are the lattice methods' ([`ReleasedRows`]), with numbers for labels.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, BooleanArray, Float64Array};
use datafusion::arrow::compute::{cast, filter_record_batch};
use datafusion::arrow::datatypes::{DataType, Float64Type, UInt64Type};
use datafusion::common::{exec_err, internal_err, Column, DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::{cast as cast_expr, lit, Expr};
use datafusion::prelude::SessionContext;

use super::base::sensitive_codes;
use super::{AnonymizeRequest, ReleaseOutput};
use crate::method::numeric::NumericPoints;
use crate::method::MethodOutput;
use crate::progress::{Cancel, Progress, ProgressFn};
use crate::release::{
    check_release_size, ReleaseRowLimit, ReleaseSize, ReleasedRows, ReleasedRowsParts,
};
use crate::session::reading_error;

/// The release of `request`, whose method reads numbers ([`crate::method::Input::Numeric`]).
pub(super) async fn release(
    request: &AnonymizeRequest,
    state: &SessionState,
    progress: Option<ProgressFn>,
    limit: ReleaseRowLimit,
) -> Result<ReleaseOutput> {
    let ctx = SessionContext::new_with_state(state.clone());
    let local = SessionContext::new_with_state(crate::session::local_state(state));
    let column = |name: &str| Expr::Column(Column::new_unqualified(name));
    let mut group: Vec<Expr> = request
        .qi
        .iter()
        .map(|q| cast_expr(column(&q.column), DataType::Float64).alias(&q.column))
        .collect();
    group.extend(request.sensitive.iter().map(|s| column(&s.column)));
    let mut frame = ctx.read_table(request.source.clone())?;
    if request.public {
        // A public release leaves out the records it cannot use, as the lattice methods do.
        for name in request
            .qi
            .iter()
            .map(|q| &q.column)
            .chain(request.sensitive.iter().map(|s| &s.column))
        {
            frame = frame.filter(column(name).is_not_null())?;
        }
    }
    let mut batches = frame
        .aggregate(group, vec![count(lit(1)).alias("__anonymize_count")])?
        .collect()
        .await
        .map_err(|e| {
            reading_error(
                "anonymize",
                &format!("source table '{}'", request.source_name),
                e,
            )
        })?;
    let attrs = request.qi.len();
    // Every quasi-identifier value a finite number: else the owner is told which column,
    // and a public release leaves the record out.
    for batch in &mut batches {
        let mut keep = vec![true; batch.num_rows()];
        for (a, q) in request.qi.iter().enumerate() {
            let values = batch.column(a).as_primitive::<Float64Type>();
            for (row, value) in values.iter().enumerate() {
                match value {
                    Some(x) if x.is_finite() => {}
                    _ if request.public => keep[row] = false,
                    None => {
                        return exec_err!(
                            "anonymize(): quasi-identifier '{}' of table '{}' contains NULL values; filter or impute them first",
                            q.column,
                            request.source_name
                        )
                    }
                    Some(x) => {
                        return exec_err!(
                            "anonymize(): quasi-identifier '{}' of table '{}' contains the value {x}; {} needs finite numbers",
                            q.column,
                            request.source_name,
                            request.method.name()
                        )
                    }
                }
            }
        }
        if keep.iter().any(|k| !k) {
            *batch = filter_record_batch(batch, &BooleanArray::from(keep))?;
        }
    }
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    if rows == 0 {
        return exec_err!(
            "anonymize(): source table '{}' is empty",
            request.source_name
        );
    }
    let (codes, sensitive) = sensitive_codes(&local, request, &batches, attrs, rows).await?;
    let count_column = attrs + request.sensitive.len();
    let mut records = Vec::with_capacity(rows);
    let mut qi_values: Vec<Vec<f64>> = Vec::with_capacity(rows);
    for batch in &batches {
        let counts = cast(batch.column(count_column), &DataType::UInt64)?;
        records.extend(counts.as_primitive::<UInt64Type>().values().iter().copied());
        let columns: Vec<&Float64Array> = (0..attrs)
            .map(|a| batch.column(a).as_primitive::<Float64Type>())
            .collect();
        for row in 0..batch.num_rows() {
            qi_values.push(columns.iter().map(|c| c.value(row)).collect());
        }
    }
    drop(batches);
    let total: u64 = records.iter().sum();
    if !request.public {
        let advice = format!(
            "Method '{}' never releases more rows than its input: allow the size",
            request.method.name()
        );
        check_release_size(
            request.method.name(),
            &ReleaseSize::at_most(total),
            total,
            limit,
            &advice,
        )?;
    }
    let points = NumericPoints::from_rows(
        attrs,
        qi_values
            .into_iter()
            .zip(codes)
            .zip(records)
            .map(|((values, code), records)| (values, code, records)),
    );
    let cancel = Cancel::new();
    let _stop_when_dropped = cancel.on_drop();
    let progress = Progress::new(request.method.name(), progress, cancel);
    let method = request.method.clone();
    let columns: Vec<String> = request.qi.iter().map(|q| q.column.clone()).collect();
    let result =
        tokio::task::spawn_blocking(move || method.run_numeric(&points, &columns, &progress))
            .await
            .map_err(|e| DataFusionError::Internal(format!("the method's task failed: {e}")))??;

    let schema = request.release_schema();
    let values = sensitive.tuple_arrays()?;
    let labels: Vec<ArrayRef> = result
        .class_values
        .iter()
        .map(|v| {
            // One more entry, where the lattice methods' `*` would be: never used.
            let mut all = v.clone();
            all.push(0.0);
            Arc::new(Float64Array::from(all)) as ArrayRef
        })
        .collect();
    let width = schema.fields().len();
    let release = Arc::new(result.release.clone());
    let rows = ReleasedRows::from_parts(ReleasedRowsParts {
        histogram: release,
        labels,
        values: if width > attrs { values } else { Vec::new() },
        indices: (0..width).collect(),
        schema: schema.clone(),
    })?;
    let output = MethodOutput {
        release: result.release,
        node: vec![0; attrs],
        metadata: result.metadata,
        diagnostics: result.diagnostics,
        catalog: None,
        interval_means: None,
        own_rows: None,
    };
    if rows.row_count() != total {
        return internal_err!(
            "{} released {} of {total} records",
            request.method.name(),
            rows.row_count()
        );
    }
    let metadata = super::common_metadata(request, &output, rows.row_count());
    Ok(ReleaseOutput {
        rows,
        metadata,
        catalog: None,
        interval_means: None,
        diagnostics: Arc::new(vec![output.diagnostics]),
        information_loss: result.information_loss,
        warnings: Vec::new(),
        own_rows: result.own_rows.map(Arc::new),
    })
}
