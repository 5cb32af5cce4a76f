//! Session helpers every layer uses: how a table name given as text is looked up
//! ([`table_reference_candidates`]), and where a session's work runs (a session connected
//! to a cluster sends its queries there, while the small reads that belong on this process,
//! hierarchy tables, plan with [`local_state`]).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::{DataFusionError, Result, TableReference};
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};

/// Names the table an error of a scan came from, as `function(): could not read <what>`
/// (e.g. `anonymize(): could not read source table 'nps'`) followed by the cause: a file,
/// format, storage or memory error of the scan (a truncated Parquet file, a malformed CSV,
/// a memory limit) names no table otherwise. Errors of this crate (a view over another
/// release) pass unchanged.
pub fn reading_error(function: &str, what: &str, e: DataFusionError) -> DataFusionError {
    match e {
        DataFusionError::ArrowError(..)
        | DataFusionError::ParquetError(_)
        | DataFusionError::ObjectStore(_)
        | DataFusionError::IoError(_)
        | DataFusionError::External(_)
        | DataFusionError::ResourcesExhausted(_) => {
            e.context(format!("{function}(): could not read {what}"))
        }
        other => other,
    }
}

/// Ways a table name given as text may be registered: as written (a dotted name is
/// parsed as `schema.table`), then lower-cased as SQL normalizes unquoted names.
pub fn table_reference_candidates(name: &str) -> Vec<TableReference> {
    let mut out = Vec::new();
    if name.contains('.') {
        out.push(TableReference::from(name));
        out.push(TableReference::from(name.to_ascii_lowercase().as_str()));
    }
    out.push(TableReference::bare(name));
    out.push(TableReference::bare(name.to_ascii_lowercase()));
    out
}

/// Marks a session whose query planner sends plans to a cluster (set by
/// `distributed::ballista::connect`): work that belongs on this process then plans with
/// [`local_state`].
#[derive(Debug, Clone, Copy, Default)]
pub struct PlansOnCluster;

/// `state` for work that belongs on this process (reading a small hierarchy table): when
/// the session sends its queries to a cluster (`PlansOnCluster`), a copy that plans and
/// runs them here.
pub fn local_state(state: &SessionState) -> SessionState {
    match state.config().get_extension::<PlansOnCluster>() {
        Some(_) => SessionStateBuilder::new_from_existing(state.clone())
            .with_query_planner(Arc::new(LocalPlanner))
            .build(),
        None => state.clone(),
    }
}

/// Plans and runs on this process only, whatever planner the session uses.
#[derive(Debug)]
struct LocalPlanner;

#[async_trait]
impl QueryPlanner for LocalPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        DefaultPhysicalPlanner::default()
            .create_physical_plan(logical_plan, session)
            .await
    }
}
