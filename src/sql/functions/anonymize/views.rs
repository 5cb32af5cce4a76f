//! The tables behind `anonymize_metadata`, `anonymize_warnings` and
//! `anonymize_manifest`.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::Result;

/// Schema of `anonymize_metadata`.
pub fn metadata_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, false),
    ]))
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

/// Schema of `anonymize_manifest`: one JSON text.
pub fn manifest_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "manifest",
        DataType::Utf8,
        false,
    )]))
}

/// The one row of `anonymize_manifest`.
pub fn manifest_batch(json: &str) -> Result<RecordBatch> {
    let column: ArrayRef = Arc::new(StringArray::from(vec![json]));
    Ok(RecordBatch::try_new(manifest_schema(), vec![column])?)
}
