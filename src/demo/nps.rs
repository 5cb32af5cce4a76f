use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::error::ArrowError;
use std::sync::Arc;
pub const NPS_DEFAULT_ROWS: usize = 1_361_000;
pub const NPS_DEFAULT_SEED: u64 = 2011;
pub fn nps_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("age", DataType::Int32, false)]))
}
pub fn generate_nps(_rows: usize, _seed: u64, _b: usize) -> Result<Vec<RecordBatch>, ArrowError> {
    Ok(vec![])
}
