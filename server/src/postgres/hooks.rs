//! The statement hooks of a session: the public gate (reads only, the library's allow-list)
//! and the owner's `SET anonymize.*` / `SET datafusion.*`.

use async_trait::async_trait;
use datafusion::common::ParamValues;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{Set, Statement};
use datafusion_postgres::hooks::HookClient;
use datafusion_postgres::QueryHook;
use pgwire::api::results::{Response, Tag};
use pgwire::api::ClientInfo;
use pgwire::error::{PgWireError, PgWireResult};

use super::user_error;

/// Refuses, for public users, every statement but reads (see `statements`), before the
/// other hooks or the planner see it.
pub(super) struct PublicGate;

fn gate(statement: &Statement) -> Option<PgWireError> {
    datafusion_anonymize::check_public_sql_statement(statement)
        .err()
        .map(|refusal| user_error("42501", refusal.message().to_string()))
}

#[async_trait]
impl QueryHook for PublicGate {
    async fn handle_simple_query(
        &self,
        statement: &Statement,
        _session_context: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        gate(statement).map(Err)
    }

    async fn handle_extended_parse_query(
        &self,
        statement: &Statement,
        _session_context: &SessionContext,
        _client: &(dyn ClientInfo + Send + Sync),
    ) -> Option<PgWireResult<LogicalPlan>> {
        gate(statement).map(Err)
    }

    async fn handle_extended_query(
        &self,
        statement: &Statement,
        _logical_plan: &LogicalPlan,
        _params: &ParamValues,
        _session_context: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        gate(statement).map(Err)
    }
}

/// `SET anonymize.*` and `SET datafusion.*` for the owner: applied to the session by
/// DataFusion, and a setting that fails (a budget below what was spent, an unknown key)
/// is an error, never a silent "SET".
pub(super) struct SettingsHook;

/// Whether `statement` sets one of the session's own settings.
fn session_setting(statement: &Statement) -> bool {
    let Statement::Set(Set::SingleAssignment { variable, .. }) = statement else {
        return false;
    };
    let name = variable.to_string().to_lowercase();
    name.starts_with("anonymize.") || name.starts_with("datafusion.")
}

async fn apply_setting(statement: &Statement, ctx: &SessionContext) -> PgWireResult<Response> {
    let sql = statement.to_string();
    ctx.sql(&sql)
        .await
        .map_err(|e| user_error("22023", e.strip_backtrace()))?;
    Ok(Response::Execution(Tag::new("SET")))
}

#[async_trait]
impl QueryHook for SettingsHook {
    async fn handle_simple_query(
        &self,
        statement: &Statement,
        session_context: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        if !session_setting(statement) {
            return None;
        }
        Some(apply_setting(statement, session_context).await)
    }

    async fn handle_extended_parse_query(
        &self,
        statement: &Statement,
        session_context: &SessionContext,
        _client: &(dyn ClientInfo + Send + Sync),
    ) -> Option<PgWireResult<LogicalPlan>> {
        if !session_setting(statement) {
            return None;
        }
        let plan = session_context
            .state()
            .statement_to_plan(datafusion::sql::parser::Statement::Statement(Box::new(
                statement.clone(),
            )))
            .await
            .map_err(|e| user_error("22023", e.strip_backtrace()));
        Some(plan)
    }

    async fn handle_extended_query(
        &self,
        statement: &Statement,
        _logical_plan: &LogicalPlan,
        _params: &ParamValues,
        session_context: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        if !session_setting(statement) {
            return None;
        }
        Some(apply_setting(statement, session_context).await)
    }
}
