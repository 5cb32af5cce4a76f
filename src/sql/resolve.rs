//! Resolving tables named by string arguments (`anonymize('nps', qi => 'age:age_h')`).
//!
//! DataFusion's SQL planner only pre-loads the tables a statement references as table
//! factors, so a table named inside a string argument is not visible through the planner's
//! `get_table_source`. The planner does hand the planning session to table functions, so a
//! small internal table function looks names up in that session's catalog.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{plan_err, DataFusionError, Result, ScalarValue};
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::planner::RelationPlannerContext;
use datafusion::logical_expr::{lit, Expr};

use crate::session::table_reference_candidates;
use crate::tables::lazy::session_state;

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
        Err(e) if is_table_not_found(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The resolver's answer for a name no table has; it reaches [`resolve_table`] as
/// `DataFusionError::External`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableNotFound {
    /// The name as given.
    pub name: String,
}

impl fmt::Display for TableNotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "table '{}' not found", self.name)
    }
}

impl Error for TableNotFound {}

/// Whether `e`, or an error it wraps (DataFusion may add context or share it), is the
/// resolver's [`TableNotFound`].
fn is_table_not_found(e: &DataFusionError) -> bool {
    let mut current: Option<&(dyn Error + 'static)> = Some(e);
    while let Some(error) = current {
        if error.is::<TableNotFound>() {
            return true;
        }
        current = error.source();
    }
    false
}

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
        Err(DataFusionError::External(Box::new(TableNotFound { name })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_not_found_is_recognised_through_wrappers_and_not_by_text() {
        let not_found = || DataFusionError::External(Box::new(TableNotFound { name: "t".into() }));
        assert!(is_table_not_found(&not_found()));
        assert!(is_table_not_found(&not_found().context("planning")));
        assert!(is_table_not_found(&DataFusionError::Shared(Arc::new(
            not_found()
        ))));
        assert_eq!(
            not_found().to_string(),
            "External error: table 't' not found"
        );
        // The same words from elsewhere are a real error.
        assert!(!is_table_not_found(&DataFusionError::Plan(
            "table 't' not found".into()
        )));
    }
}
