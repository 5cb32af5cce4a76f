//! The statements a public session refuses before anything runs: writing files (`COPY`),
//! changing tables (`INSERT`, `UPDATE`, `DELETE`) and data definition that reaches the
//! planner (`CREATE TABLE ... AS`). Catalog changes are refused by the public catalog
//! (`crate::sql::functions`) and `CREATE EXTERNAL TABLE` by table factories that refuse
//! (`RefusedFactory`).

use std::sync::Arc;

use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{plan_err, Result};
use datafusion::logical_expr::{CreateExternalTable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

/// The text of every refusal: what is refused, and why.
fn refusal(what: &str) -> String {
    format!("{what} not available in this session: its users are public users, who read releases and the tables the data owner published")
}

/// A table factory for every file format a public session knows, refusing
/// `CREATE EXTERNAL TABLE` in words (without one, DataFusion answers "Unable to find
/// factory").
#[derive(Debug, Default)]
pub struct RefusedFactory;

#[async_trait::async_trait]
impl TableProviderFactory for RefusedFactory {
    async fn create(
        &self,
        _state: &dyn Session,
        _cmd: &CreateExternalTable,
    ) -> Result<Arc<dyn TableProvider>> {
        plan_err!("{}", refusal("CREATE EXTERNAL TABLE is"))
    }
}

/// An analyzer rule (it sees every plan a session executes) refusing writes.
#[derive(Debug, Default)]
pub struct PublicGuard;

impl AnalyzerRule for PublicGuard {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let mut refused: Option<&'static str> = None;
        plan.apply_with_subqueries(|node| {
            refused = match node {
                LogicalPlan::Copy(_) => Some("COPY is"),
                LogicalPlan::Dml(_) => Some("INSERT, UPDATE and DELETE are"),
                LogicalPlan::Ddl(_) => Some("CREATE, ALTER and DROP are"),
                _ => None,
            };
            Ok(if refused.is_some() {
                TreeNodeRecursion::Stop
            } else {
                TreeNodeRecursion::Continue
            })
        })?;
        match refused {
            Some(what) => plan_err!("{}", refusal(what)),
            None => Ok(plan),
        }
    }

    /// DataFusion puts the name before the rule's errors ("<name> caused by ..."): it is
    /// written for the public user who reads them.
    fn name(&self) -> &str {
        "a public session"
    }
}
