//! The tables behind `anonymize_metadata`, `anonymize_warnings` and
//! `anonymize_information_loss`.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::Result;

use crate::metric::information_loss::InformationLoss;

/// Schema of `anonymize_metadata`.
pub fn metadata_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, false),
    ]))
}

/// Schema of `anonymize_information_loss`.
pub fn information_loss_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("method", DataType::Utf8, false),
        Field::new("ncp", DataType::Float64, false),
        Field::new("emd", DataType::Float64, false),
        Field::new("rate", DataType::Float64, false),
        Field::new("il_sum", DataType::Float64, false),
        Field::new("il_mean", DataType::Float64, false),
        Field::new("lm", DataType::Float64, false),
        Field::new("rce", DataType::Float64, false),
    ]))
}

/// The one row of `anonymize_information_loss`.
pub fn information_loss_batch(method: &str, il: &InformationLoss) -> Result<RecordBatch> {
    let f = |x: f64| Arc::new(Float64Array::from(vec![x])) as ArrayRef;
    Ok(RecordBatch::try_new(
        information_loss_schema(),
        vec![
            Arc::new(StringArray::from(vec![method])),
            f(il.ncp),
            f(il.emd),
            f(il.rate),
            f(il.sum()),
            f(il.mean()),
            f(il.lm),
            f(il.rce),
        ],
    )?)
}

/// `(key, value)` rows.
pub fn metadata_batch(pairs: &[(String, String)]) -> Result<RecordBatch> {
    let keys: ArrayRef = Arc::new(StringArray::from_iter_values(
        pairs.iter().map(|(k, _)| k.as_str()),
    ));
    let values: ArrayRef = Arc::new(StringArray::from_iter_values(
        pairs.iter().map(|(_, v)| v.as_str()),
    ));
    Ok(RecordBatch::try_new(metadata_schema(), vec![keys, values])?)
}
