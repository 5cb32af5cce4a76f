//! `anonymize_help()`: every function of the catalog and its parameters, with defaults.

use std::sync::{Arc, OnceLock};

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::TableProvider;
use datafusion::common::Result;
use datafusion::datasource::MemTable;
use datafusion::logical_expr::planner::RelationPlannerContext;

use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::docs::{FunctionDoc, FunctionKind};
use crate::sql::planner::SqlTableFunction;

/// One row of `anonymize_help()`: `(function, parameter, default, description)`.
type HelpRow = [String; 4];

/// `anonymize_help()`: one row per function (empty `parameter`), then one per parameter.
///
/// The rows are set once, by [`HelpFunction::describe`], after the whole catalog (this
/// function included) is built; until then the table is empty.
#[derive(Debug, Default)]
pub struct HelpFunction {
    rows: OnceLock<Vec<HelpRow>>,
}

impl HelpFunction {
    /// Sets the functions this help lists; later calls are ignored.
    pub fn describe(&self, functions: &[FunctionDoc]) {
        let mut rows = Vec::new();
        for f in functions {
            let about = match f.kind {
                FunctionKind::Table => f.description.clone(),
                FunctionKind::Scalar => {
                    format!("Scalar function {}. {}", f.syntax, f.description)
                }
            };
            rows.push([f.name.clone(), String::new(), String::new(), about]);
            for p in &f.params {
                rows.push([
                    f.name.clone(),
                    p.name.clone(),
                    p.default.clone().unwrap_or_default(),
                    p.doc.clone(),
                ]);
            }
        }
        // Ignoring a second call keeps the first, complete description.
        let _ = self.rows.set(rows);
    }
}

impl SqlTableFunction for HelpFunction {
    fn name(&self) -> &'static str {
        "anonymize_help"
    }
    fn params(&self) -> &'static [ParamSpec] {
        &[]
    }
    fn about(&self) -> &'static str {
        "Lists every function of this extension (table and scalar) and its parameters, with defaults."
    }
    fn create(
        &self,
        args: CallArgs,
        _context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        bind(self.name(), &[], &[], args)?;
        let schema = Arc::new(Schema::new(vec![
            Field::new("function", DataType::Utf8, false),
            Field::new("parameter", DataType::Utf8, false),
            Field::new("default", DataType::Utf8, false),
            Field::new("description", DataType::Utf8, false),
        ]));
        let rows = self.rows.get().map(Vec::as_slice).unwrap_or_default();
        let col = |i: usize| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r[i].as_str()),
            ))
        };
        let batch = RecordBatch::try_new(schema.clone(), vec![col(0), col(1), col(2), col(3)])?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }
}
