//! Column builders that cut the generated rows into record batches.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int32Builder, StringBuilder};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::record_batch::RecordBatch;

use super::Row;

/// Accumulates rows into column builders and cuts batches.
pub(super) struct BatchWriter {
    schema: SchemaRef,
    batch_size: usize,
    remaining: usize,
    len: usize,
    age: Int32Builder,
    sex: StringBuilder,
    los: Int32Builder,
    surgery: StringBuilder,
    location: Int32Builder,
    disease: StringBuilder,
    batches: Vec<RecordBatch>,
}

impl BatchWriter {
    pub(super) fn new(schema: SchemaRef, rows: usize, batch_size: usize) -> Self {
        let cap = rows.min(batch_size);
        Self {
            schema,
            batch_size,
            remaining: rows,
            len: 0,
            age: Int32Builder::with_capacity(cap),
            sex: StringBuilder::with_capacity(cap, cap),
            los: Int32Builder::with_capacity(cap),
            surgery: StringBuilder::with_capacity(cap, cap),
            location: Int32Builder::with_capacity(cap),
            disease: StringBuilder::with_capacity(cap, 4 * cap),
            batches: Vec::with_capacity(rows.div_ceil(batch_size)),
        }
    }

    pub(super) fn push(&mut self, row: &Row) -> Result<(), ArrowError> {
        self.age.append_value(row.age);
        self.sex.append_value(if row.male { "M" } else { "F" });
        self.los.append_value(row.los);
        self.surgery
            .append_value(if row.surgery { "Y" } else { "N" });
        self.location.append_value(row.location);
        self.disease.append_value(row.disease);
        self.len += 1;
        self.remaining = self.remaining.saturating_sub(1);
        if self.len == self.batch_size {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ArrowError> {
        if self.len == 0 {
            return Ok(());
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.age.finish()),
            Arc::new(self.sex.finish()),
            Arc::new(self.los.finish()),
            Arc::new(self.surgery.finish()),
            Arc::new(self.location.finish()),
            Arc::new(self.disease.finish()),
        ];
        self.batches
            .push(RecordBatch::try_new(self.schema.clone(), columns)?);
        self.len = 0;
        let cap = self.remaining.min(self.batch_size);
        self.age = Int32Builder::with_capacity(cap);
        self.sex = StringBuilder::with_capacity(cap, cap);
        self.los = Int32Builder::with_capacity(cap);
        self.surgery = StringBuilder::with_capacity(cap, cap);
        self.location = Int32Builder::with_capacity(cap);
        self.disease = StringBuilder::with_capacity(cap, 4 * cap);
        Ok(())
    }

    pub(super) fn finish(mut self) -> Result<Vec<RecordBatch>, ArrowError> {
        self.flush()?;
        Ok(self.batches)
    }
}
