//! Resolving tables named by string arguments (`anonymize('nps', qi => 'age:age_h')`).
//!
//! DataFusion's SQL planner only pre-loads the tables a statement references as table
//! factors, so a table named inside a string argument is not visible through the planner's
//! `get_table_source`. The planner does hand the planning session to table functions, so a
//! small internal table function looks names up in that session's catalog.

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{plan_err, Result, ScalarValue};
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::planner::RelationPlannerContext;
use datafusion::logical_expr::{lit, Expr};

use super::lazy::session_state;
use crate::session::table_reference_candidates;

/// Name under which the internal resolver function is registered.
pub const RESOLVER_FUNCTION: &str = "__anonymize_resolve_table";

/// Looks a table up by name in the planning session; `None` when it does not exist.
pub fn resolve_table(
    context: &mut dyn RelationPlannerContext,
    name: &str,
) -> Result<Option<Arc<dyn TableProvider>>> {
    for candidate in table_reference_candidates(name) {
        if let Ok(source) = context.context_provider().get_table_source(candidate) {
            return Ok(Some(source_as_provider(&source)?));
        }
    }
    match context
        .context_provider()
        .get_table_function_source(RESOLVER_FUNCTION, vec![lit(name)])
    {
        Ok(source) => Ok(Some(source_as_provider(&source)?)),
        Err(e) if e.to_string().contains(NOT_FOUND_MARK) => Ok(None),
        Err(e) => Err(e),
    }
}

const NOT_FOUND_MARK: &str = "__anonymize_table_not_found";

/// The internal table function behind [`resolve_table`]: returns the named table itself.
#[derive(Debug)]
pub struct TableResolver;

impl TableFunctionImpl for TableResolver {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let name = match args.exprs() {
            [Expr::Literal(ScalarValue::Utf8(Some(name)) | ScalarValue::Utf8View(Some(name)), _)] => {
                name.clone()
            }
            _ => return plan_err!("{RESOLVER_FUNCTION} takes one table name"),
        };
        let state = session_state(args.session())?;
        for candidate in table_reference_candidates(&name) {
            let Ok(schema) = state.schema_for_ref(candidate.clone()) else {
                continue;
            };
            let table = candidate.table().to_string();
            if !schema.table_exist(&table) {
                continue;
            }
            // Catalog lookups of registered tables complete immediately.
            if let Some(provider) = futures::executor::block_on(schema.table(&table))? {
                return Ok(provider);
            }
        }
        plan_err!("{NOT_FOUND_MARK}: table '{name}' not found")
    }
}
