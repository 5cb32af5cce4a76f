//! Running a SQL script: several statements separated by `;`, as in `sql/*.sql`.

use crate::sql::depth::check_expression_depth;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{plan_datafusion_err, plan_err, Result};
use datafusion::dataframe::DataFrame;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::{DFParserBuilder, Statement};
use datafusion::sql::sqlparser::dialect::dialect_from_str;

use super::copy_output::{CopyGuard, CopyOutput};
use crate::public::statements::check_statement;

/// Runs every statement of `script` in order, each one planned after the previous one ran
/// (so a script may create a table and then read it), and returns the last statement's
/// rows. The script is parsed with the session's SQL dialect, so comments and `;` inside
/// string literals are read as SQL reads them; a parse error in any statement runs none.
/// `RESET anonymize.<setting>` is an error saying to `SET` the value instead
/// ([`crate::budget_reset_error`]).
pub async fn run_script(ctx: &SessionContext, script: &str) -> Result<Vec<RecordBatch>> {
    match script_dataframe(ctx, script).await? {
        Some(last) => {
            let guard = CopyGuard::new(CopyOutput::of_plan(last.logical_plan()));
            let state = last.clone().into_parts().0;
            let rows = last.collect().await?;
            guard.finish(&state).await?;
            Ok(rows)
        }
        None => Ok(Vec::new()),
    }
}

/// [`run_script`], but the last statement is planned and not run: its [`DataFrame`] is
/// returned (data definition in it has taken effect, as with [`SessionContext::sql`]).
/// `None` for a script without statements. A `COPY` to a local path before the last
/// statement that fails, or whose future is dropped while it writes, leaves nothing
/// behind ([`CopyGuard`]); the caller guards the last one.
///
/// In a public session (a public registration, [`crate::Access::Public`]) every statement
/// must be one a public user may run ([`crate::check_public_statement`]); one that is not
/// refuses the whole script before anything runs.
pub async fn script_dataframe(ctx: &SessionContext, script: &str) -> Result<Option<DataFrame>> {
    let statements = parse(ctx, script)?;
    if is_public(ctx) {
        for statement in &statements {
            check_statement(statement)?;
        }
    }
    let mut last: Option<DataFrame> = None;
    for statement in statements {
        if let Some(previous) = last.take() {
            let guard = CopyGuard::new(CopyOutput::of_plan(previous.logical_plan()));
            let state = previous.clone().into_parts().0;
            let _: Vec<RecordBatch> = DataFrame::collect(previous).await?;
            guard.finish(&state).await?;
        }
        // DataFusion cannot reset an extension's settings ("Could not find config
        // namespace"): say what to do instead.
        if let Some(e) = crate::budget::config::reset_error(&statement.to_string()) {
            return Err(e);
        }
        let plan = ctx.state().statement_to_plan(statement).await?;
        last = Some(ctx.execute_logical_plan(plan).await?);
    }
    Ok(last)
}

/// Runs one statement of a public user in the public session `ctx`: refused unless a
/// public user may run it ([`crate::check_public_statement`]), then planned and returned
/// as a [`DataFrame`] (as [`SessionContext::sql`]). This is the door an embedding service
/// puts between its users and a session registered for them; `ctx.sql` itself runs any
/// statement, and the session then refuses releases once a setting was changed.
pub async fn public_sql(ctx: &SessionContext, sql: &str) -> Result<DataFrame> {
    let mut statements = parse(ctx, sql)?;
    let statement = match (statements.pop(), statements.is_empty()) {
        (Some(statement), true) => statement,
        (None, _) => return plan_err!("public_sql(): the text holds no SQL statement"),
        (Some(_), false) => {
            return plan_err!("public_sql(): the text holds several statements; give one at a time")
        }
    };
    check_statement(&statement)?;
    let plan = ctx.state().statement_to_plan(statement).await?;
    ctx.execute_logical_plan(plan).await
}

/// Whether `ctx` carries a public registration.
pub fn is_public(ctx: &SessionContext) -> bool {
    crate::budget::config::options(ctx.state_ref().read().config_options()).locked
}

/// The statements of `script`, in the session's SQL dialect (parsed before anything runs,
/// and apart from the async code: the dialect is not `Send`); a statement nested too
/// deeply for the stack is refused before it is parsed ([`check_expression_depth`]).
fn parse(ctx: &SessionContext, script: &str) -> Result<Vec<Statement>> {
    check_expression_depth(script)?;
    let state = ctx.state();
    let options = state.config().options();
    let name = options.sql_parser.dialect;
    let dialect = dialect_from_str(name)
        .ok_or_else(|| plan_datafusion_err!("unsupported SQL dialect {name}"))?;
    Ok(DFParserBuilder::new(script)
        .with_dialect(dialect.as_ref())
        .with_recursion_limit(options.sql_parser.recursion_limit.get())
        .build()?
        .parse_statements()?
        .into_iter()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::Int64Type;

    #[tokio::test]
    async fn runs_statements_in_order_and_returns_the_last() -> Result<()> {
        let ctx = SessionContext::new();
        let rows = run_script(
            &ctx,
            "-- a comment; with a semicolon\n\
             CREATE TABLE t AS SELECT 1 AS a UNION ALL SELECT 2;\n\
             INSERT INTO t VALUES (40);\n\
             SELECT sum(a) AS s, count(*) FILTER (WHERE 'x;y' = 'x;y') AS c FROM t;\n",
        )
        .await?;
        let batch = &rows[0];
        assert_eq!(batch.column(0).as_primitive::<Int64Type>().value(0), 43);
        assert_eq!(batch.column(1).as_primitive::<Int64Type>().value(0), 3);
        Ok(())
    }

    /// RESET of an anonymize.* setting gets the crate's error, not DataFusion's "Could not
    /// find config namespace"; the statements before it ran.
    #[tokio::test]
    async fn reset_of_a_budget_setting_says_what_to_do() {
        let ctx = SessionContext::new();
        crate::register_with(&ctx, crate::RegisterOptions::owner()).unwrap();
        let err = run_script(
            &ctx,
            "CREATE TABLE t AS SELECT 1 AS a; RESET anonymize.epsilon_budget;",
        )
        .await
        .err()
        .map(|e| e.strip_backtrace())
        .unwrap_or_default();
        assert_eq!(
            err,
            "Invalid or Unsupported Configuration: RESET is not supported for anonymize.* settings; set the value instead, e.g. SET anonymize.epsilon_budget = 'unlimited' (the default). In a public session these settings are fixed by the data owner"
        );
        assert!(ctx.table("t").await.is_ok());
    }

    #[tokio::test]
    async fn a_parse_error_runs_nothing() {
        let ctx = SessionContext::new();
        let err = run_script(&ctx, "CREATE TABLE t AS SELECT 1 AS a; SELEC 2;")
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("SELEC"), "{err}");
        assert!(ctx.table("t").await.is_err(), "the first statement ran");
    }

    #[tokio::test]
    async fn the_last_statement_is_planned_and_runs_when_collected() -> Result<()> {
        let ctx = SessionContext::new();
        let last = script_dataframe(
            &ctx,
            "CREATE TABLE t (a BIGINT); INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)",
        )
        .await?
        .expect("a statement");
        let count = |ctx: SessionContext| async move {
            let rows = ctx.sql("SELECT count(*) FROM t").await?.collect().await?;
            Ok::<i64, datafusion::error::DataFusionError>(
                rows[0].column(0).as_primitive::<Int64Type>().value(0),
            )
        };
        // The statements before the last ran; the last runs when its rows are read.
        assert_eq!(count(ctx.clone()).await?, 1);
        last.collect().await?;
        assert_eq!(count(ctx.clone()).await?, 2);
        assert!(script_dataframe(&ctx, " -- nothing\n").await?.is_none());
        Ok(())
    }

    #[tokio::test]
    async fn a_failed_copy_before_the_last_statement_leaves_nothing() -> Result<()> {
        let dir = tempfile::tempdir().expect("temporary directory");
        let target = dir.path().join("out.csv");
        // The first batches are written; a later one divides by zero.
        let script = format!(
            "COPY (SELECT CASE WHEN x < 150000 THEN x ELSE 1 / (x - x) END AS y \
             FROM generate_series(1, 300000) AS t(x)) TO '{}' STORED AS CSV; SELECT 1",
            target.display()
        );
        let ctx = SessionContext::new();
        let err = script_dataframe(&ctx, &script)
            .await
            .err()
            .map(|e| e.to_string());
        assert!(err.unwrap_or_default().contains("Divide by zero"));
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "{left:?}");
        Ok(())
    }

    #[test]
    fn a_script_future_can_be_spawned() {
        fn spawnable<T: Send + 'static>(_: &T) {}
        let ctx = SessionContext::new();
        spawnable(&async move { script_dataframe(&ctx, "SELECT 1").await.map(|_| ()) });
    }
}
