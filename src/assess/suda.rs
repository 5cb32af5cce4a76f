//! Reading a table for `anonymize_suda(...)`: its key and quasi-identifier columns (one
//! DataFusion projection), each quasi-identifier coded to dense ids, and SUDA2
//! ([`crate::privacy::suda`], docs/METHODS.md §7.5.2) over the codes. SUDA2 needs every
//! record's codes at once, so the projection is held in memory: four bytes per record and
//! quasi-identifier, and the key column.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch, UInt32Array,
};
use datafusion::arrow::compute::{cast, take};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_err, Result};
use datafusion::execution::SessionState;
use datafusion::prelude::SessionContext;

use super::grouped::{column, concat_column, null_qi, row_ids};
use crate::hierarchy::STAR;
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

/// The output columns of [`suda`], one entry per source row.
struct SudaRows {
    msu_count: Vec<u32>,
    min_msu_size: Vec<Option<u32>>,
    score: Vec<f64>,
    dis_score: Vec<f64>,
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
    // A release's suppressed rows (every quasi-identifier '*') are no record an attacker can
    // single out: they take no part in the search and get no special unique.
    let mut suppressed = vec![true; keys.len()];
    let mut values = Vec::with_capacity(request.qi.len());
    for (a, name) in request.qi.iter().enumerate() {
        let column = concat_column(&batches, 1 + a, &read)?;
        if column.null_count() > 0 {
            return null_qi(function, name, &request.source_name);
        }
        let text = cast(&column, &DataType::Utf8)?;
        for (row, value) in text.as_string::<i32>().iter().enumerate() {
            if value != Some(STAR) {
                suppressed[row] = false;
            }
        }
        values.push(column);
    }
    drop(batches);
    let kept: Vec<u32> = (0..keys.len() as u32)
        .filter(|&r| !suppressed[r as usize])
        .collect();
    let mut codes: Vec<Vec<u32>> = Vec::with_capacity(request.qi.len());
    for column in &values {
        let column = if kept.len() == keys.len() {
            column.clone()
        } else {
            take(column.as_ref(), &UInt32Array::from(kept.clone()), None)?
        };
        codes.push(row_ids(std::slice::from_ref(&column))?.0);
    }
    drop(values);
    let found = if kept.is_empty() {
        None
    } else {
        match suda2_with(&codes, &request.config) {
            Ok(result) => Some(result),
            Err(e) => return exec_err!("{function}(): {e}"),
        }
    };
    // Every source row in order: a kept row's figures, a suppressed row's zeros.
    let n = keys.len();
    let mut result = SudaRows {
        msu_count: vec![0; n],
        min_msu_size: vec![None; n],
        score: vec![0.0; n],
        dis_score: vec![0.0; n],
    };
    if let Some(found) = found {
        for (i, &r) in kept.iter().enumerate() {
            let r = r as usize;
            result.msu_count[r] = found.msu_count[i];
            result.min_msu_size[r] = found.min_msu_size[i];
            result.score[r] = found.score[i];
            result.dis_score[r] = found.dis_score[i];
        }
    }
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
