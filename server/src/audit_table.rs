//! `server_audit()`: the audit trail as a table, for owners (public sessions never have
//! it): one row per line of the trail's files, oldest first.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{TableFunctionImpl, TableProvider};
use datafusion::datasource::MemTable;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Expr;
use serde_json::Value;

use crate::audit::Audit;

/// The text columns of `server_audit()`, as the lines name them.
const TEXT_COLUMNS: [&str; 9] = [
    "time", "event", "protocol", "user", "role", "address", "outcome", "error", "text",
];

/// The number columns.
const NUMBER_COLUMNS: [&str; 3] = ["epsilon", "delta", "quota_left"];

/// `server_audit()` over a server's trail.
#[derive(Debug)]
pub struct AuditTable(pub Arc<Audit>);

fn schema() -> SchemaRef {
    let mut fields: Vec<Field> = TEXT_COLUMNS
        .iter()
        .map(|name| Field::new(*name, DataType::Utf8, true))
        .collect();
    fields.push(Field::new("text_sha256", DataType::Utf8, true));
    fields.extend(
        NUMBER_COLUMNS
            .iter()
            .map(|name| Field::new(*name, DataType::Float64, true)),
    );
    fields.push(Field::new("releases", DataType::Utf8, true));
    Arc::new(Schema::new(fields))
}

impl TableFunctionImpl for AuditTable {
    fn call(&self, args: &[Expr]) -> Result<Arc<dyn TableProvider>> {
        if !args.is_empty() {
            return Err(DataFusionError::Plan(
                "server_audit() takes no arguments".into(),
            ));
        }
        let mut lines: Vec<Value> = Vec::new();
        for file in self.0.files() {
            let text = match std::fs::read_to_string(&file) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(DataFusionError::Execution(format!(
                        "server_audit(): cannot read {}: {e}",
                        file.display()
                    )))
                }
            };
            lines.extend(
                text.lines()
                    .filter_map(|line| serde_json::from_str::<Value>(line).ok()),
            );
        }
        let schema = schema();
        let text = |key: &str| -> ArrayRef {
            Arc::new(StringArray::from_iter(
                lines.iter().map(|l| l.get(key).and_then(Value::as_str)),
            ))
        };
        let mut columns: Vec<ArrayRef> = TEXT_COLUMNS.iter().map(|key| text(key)).collect();
        columns.push(text("text_sha256"));
        for key in NUMBER_COLUMNS {
            columns.push(Arc::new(Float64Array::from_iter(
                lines.iter().map(|l| l.get(key).and_then(Value::as_f64)),
            )));
        }
        columns.push(Arc::new(StringArray::from_iter(
            lines
                .iter()
                .map(|l| l.get("releases").map(Value::to_string)),
        )));
        let batch = RecordBatch::try_new(schema.clone(), columns)?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }
}
