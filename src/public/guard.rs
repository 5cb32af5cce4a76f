//! The statements a public session refuses before anything runs: writing files (`COPY`),
//! changing tables (`INSERT`, `UPDATE`, `DELETE`) and data definition that reaches the
//! planner (`CREATE TABLE ... AS`). Catalog changes are refused by the public catalog
//! (`crate::sql::functions`) and `CREATE EXTERNAL TABLE` by the absence of table factories.

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{plan_err, Result};
use datafusion::logical_expr::LogicalPlan;
use datafusion::optimizer::AnalyzerRule;

/// An analyzer rule (it sees every plan a session executes) refusing writes.
#[derive(Debug, Default)]
pub struct PublicGuard;

impl AnalyzerRule for PublicGuard {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let mut refused: Option<&'static str> = None;
        plan.apply_with_subqueries(|node| {
            refused = match node {
                LogicalPlan::Copy(_) => Some("COPY"),
                LogicalPlan::Dml(_) => Some("INSERT, UPDATE and DELETE"),
                LogicalPlan::Ddl(_) => Some("CREATE, ALTER and DROP"),
                _ => None,
            };
            Ok(if refused.is_some() {
                TreeNodeRecursion::Stop
            } else {
                TreeNodeRecursion::Continue
            })
        })?;
        match refused {
            Some(what) => plan_err!(
                "{what} are not available in this session: its users are public users, who read releases and the tables the data owner published"
            ),
            None => Ok(plan),
        }
    }

    fn name(&self) -> &str {
        "anonymize_public_guard"
    }
}
