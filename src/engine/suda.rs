//! Reading a table for `anonymize_suda(...)`: its key and quasi-identifier columns (one
//! DataFusion projection), each quasi-identifier coded to dense ids, and SUDA2
//! ([`crate::privacy::suda`], docs/METHODS.md §7.5.2) over the codes. SUDA2 needs every
//! record's codes at once, so the projection is held in memory: four bytes per record and
//! quasi-identifier, and the key column.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_err, Result};
use datafusion::execution::SessionState;
use datafusion::prelude::SessionContext;

use super::assess::{column, concat_column, null_qi, row_ids};
use crate::privacy::suda::{suda2_with, SudaConfig};
use crate::session::reading_error;

/// The columns `anonymize_suda` adds to the key column.
pub const SUDA_COLUMNS: [&str; 4] = ["msu_count", "min_msu_size", "suda_score", "dis_suda_score"];

/// A validated call of `anonymize_suda(...)`.
#[derive(Debug, Clone)]
pub(crate) struct SudaRequest {
    pub(crate) source_name: String,
    pub(crate) source: Arc<dyn TableProvider>,
    pub(crate) qi: Vec<String>,
    /// The column that names each record in the output, and its type.
    pub(crate) key: (String, DataType),
    pub(crate) config: SudaConfig,
}

/// Schema of `anonymize_suda`: the key column, then [`SUDA_COLUMNS`].
pub(crate) fn suda_schema(key: &(String, DataType)) -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(&key.0, key.1.clone(), true),
        Field::new(SUDA_COLUMNS[0], DataType::Int64, false),
        Field::new(SUDA_COLUMNS[1], DataType::Int64, true),
        Field::new(SUDA_COLUMNS[2], DataType::Float64, false),
        Field::new(SUDA_COLUMNS[3], DataType::Float64, false),
    ]))
}

/// One row per record of the source: its key, its number of minimal sample uniques of at
/// most `max_size` quasi-identifiers, the size of its smallest (NULL without one), and its
/// SUDA and DIS-SUDA scores.
pub(crate) async fn suda(request: &SudaRequest, state: &SessionState) -> Result<Vec<RecordBatch>> {
    let function = "anonymize_suda";
    let ctx = SessionContext::new_with_state(state.clone());
    let mut projection = vec![column(&request.key.0)];
    projection.extend(request.qi.iter().map(|q| column(q)));
    let batches = ctx
        .read_table(request.source.clone())?
        .select(projection)?
        .collect()
        .await
        .map_err(|e| reading_error(function, &format!("table '{}'", request.source_name), e))?;
    let schema = suda_schema(&request.key);
    let Some(first) = batches.first() else {
        return Ok(vec![RecordBatch::new_empty(schema)]);
    };
    let read = first.schema();
    let keys = concat_column(&batches, 0, &read)?;
    if keys.is_empty() {
        return Ok(vec![RecordBatch::new_empty(schema)]);
    }
    let mut codes: Vec<Vec<u32>> = Vec::with_capacity(request.qi.len());
    for (a, name) in request.qi.iter().enumerate() {
        let values = concat_column(&batches, 1 + a, &read)?;
        if values.null_count() > 0 {
            return null_qi(function, name, &request.source_name);
        }
        codes.push(row_ids(std::slice::from_ref(&values))?.0);
    }
    drop(batches);
    let result = match suda2_with(&codes, &request.config) {
        Ok(result) => result,
        Err(e) => return exec_err!("{function}(): {e}"),
    };
    let columns: Vec<ArrayRef> = vec![
        keys,
        Arc::new(Int64Array::from_iter_values(
            result.msu_count.iter().map(|&n| i64::from(n)),
        )),
        Arc::new(Int64Array::from_iter(
            result.min_msu_size.iter().map(|m| m.map(i64::from)),
        )),
        Arc::new(Float64Array::from(result.score)),
        Arc::new(Float64Array::from(result.dis_score)),
    ];
    Ok(vec![RecordBatch::try_new(schema, columns)?])
}
