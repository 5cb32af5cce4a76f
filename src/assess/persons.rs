//! `anonymize_assess(..., person => ...)`: the distinct persons of the table and of each
//! class, counted by DataFusion aggregates.

use std::collections::HashMap;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::row::OwnedRow;
use datafusion::common::Result;
use datafusion::functions_aggregate::expr_fn::count_distinct;
use datafusion::prelude::SessionContext;

use super::grouped::{column, concat_column, counts_of, qi_text, row_ids, suppressed_flag};
use super::AssessRequest;
use crate::session::reading_error;

/// For `anonymize_assess(..., person => ...)`: the distinct persons of every class whose
/// key is in `class_keys` (rows of the quasi-identifiers as text, as `row_ids` made them),
/// counting the rows that are not suppressed; one DataFusion aggregate.
pub(crate) async fn persons_per_class(
    ctx: &SessionContext,
    request: &AssessRequest,
    person: &str,
    class_keys: &[OwnedRow],
) -> Result<Vec<u64>> {
    let q = request.qi.len();
    let batches = ctx
        .read_table(request.source.clone())?
        .filter(!suppressed_flag(&request.qi))?
        .aggregate(
            qi_text(&request.qi),
            vec![count_distinct(column(person)).alias("__assess_persons")],
        )?
        .collect()
        .await
        .map_err(|e| {
            reading_error(
                "anonymize_assess",
                &format!("table '{}'", request.source_name),
                e,
            )
        })?;
    let mut out = vec![0u64; class_keys.len()];
    let Some(first) = batches.first() else {
        return Ok(out);
    };
    let schema = first.schema();
    let arrays: Vec<ArrayRef> = (0..q)
        .map(|a| concat_column(&batches, a, &schema))
        .collect::<Result<_>>()?;
    let (ids, keys) = row_ids(&arrays)?;
    let index: HashMap<&OwnedRow, usize> =
        class_keys.iter().enumerate().map(|(i, k)| (k, i)).collect();
    for (row, n) in counts_of(&batches, q)?.into_iter().enumerate() {
        if let Some(&class) = index.get(&keys[ids[row] as usize]) {
            out[class] = n;
        }
    }
    Ok(out)
}

/// For `anonymize_assess(..., person => ...)`: the number of distinct persons of the table
/// (NULL is no person).
pub(crate) async fn distinct_persons(
    ctx: &SessionContext,
    request: &AssessRequest,
    person: &str,
) -> Result<u64> {
    let batches = ctx
        .read_table(request.source.clone())?
        .aggregate(vec![], vec![count_distinct(column(person)).alias("n")])?
        .collect()
        .await
        .map_err(|e| {
            reading_error(
                "anonymize_assess",
                &format!("table '{}'", request.source_name),
                e,
            )
        })?;
    Ok(counts_of(&batches, 0)?.into_iter().sum())
}
