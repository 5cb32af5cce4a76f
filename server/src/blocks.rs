//! Transaction blocks, honestly: `BEGIN`, `COMMIT` and `ROLLBACK` are accepted (clients such
//! as psycopg and JDBC open a block before their first statement), but this server applies
//! every statement when it runs, so a block groups statements and undoes nothing.
//!
//! - A statement that changes tables (`CREATE`, `INSERT`, `DROP`, `COPY`, …) is refused
//!   inside a block (PostgreSQL's 25001, as for its own statements that cannot be rolled
//!   back), so that no `ROLLBACK` is expected to undo it.
//! - Releases, publications and settings run inside a block; a `ROLLBACK` after them ends
//!   the block with a warning saying that nothing was undone: a release's privacy-budget
//!   charge is never given back (like a PostgreSQL sequence's value).
//! - After an error inside a block, statements are refused until the block ends (25P02),
//!   as in PostgreSQL.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::common::{DFSchema, ParamValues};
use datafusion::logical_expr::{EmptyRelation, LogicalPlan};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::Statement;
use datafusion_postgres::hooks::HookClient;
use datafusion_postgres::QueryHook;
use pgwire::api::results::{Response, Tag};
use pgwire::api::ClientInfo;
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::response::{NoticeResponse, TransactionStatus};
use pgwire::messages::PgWireBackendMessage;

/// The warning a `ROLLBACK` gives after statements ran in its block.
pub const NOTHING_UNDONE: &str = "ROLLBACK ended the transaction block but undid nothing: this \
     server applies each statement when it runs (a release's privacy-budget charge, a \
     publication and a changed setting stay; a charge is never given back)";

/// How many statements ran in the connection's open block (0 outside a block).
#[derive(Default)]
struct BlockStatements(AtomicUsize);

/// The hook answering transaction statements and refusing table changes inside a block.
pub struct TransactionBlocks;

/// What a statement is to a transaction block.
enum Kind {
    Begin,
    Commit,
    Rollback,
    /// Reads, releases, settings and cursors: run inside a block, not undone by it.
    Runs,
    /// Changes tables: refused inside a block.
    Changes,
}

fn kind(statement: &Statement) -> Kind {
    match statement {
        Statement::StartTransaction { .. } => Kind::Begin,
        Statement::Commit { .. } => Kind::Commit,
        Statement::Rollback { .. } => Kind::Rollback,
        Statement::Query(_)
        | Statement::Explain { .. }
        | Statement::ExplainTable { .. }
        | Statement::Set(_)
        | Statement::ShowVariable { .. }
        | Statement::ShowVariables { .. }
        | Statement::ShowTables { .. }
        | Statement::ShowColumns { .. }
        | Statement::ShowStatus { .. }
        | Statement::ShowCatalogs { .. }
        | Statement::ShowSchemas { .. }
        | Statement::Declare { .. }
        | Statement::Fetch { .. }
        | Statement::Close { .. }
        | Statement::Discard { .. }
        | Statement::Deallocate { .. } => Kind::Runs,
        _ => Kind::Changes,
    }
}

fn error(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".to_string(),
        code.to_string(),
        message.into(),
    )))
}

fn aborted() -> PgWireError {
    error(
        "25P02",
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

/// The first word or two of `statement`, for a refusal.
fn name(statement: &Statement) -> String {
    let text = statement.to_string();
    let mut words = text.split_whitespace();
    match (words.next(), words.next()) {
        (Some(first), Some(second))
            if ["CREATE", "DROP", "ALTER"].contains(&first.to_uppercase().as_str()) =>
        {
            format!("{} {}", first.to_uppercase(), second.to_uppercase())
        }
        (Some(first), _) => first.to_uppercase(),
        _ => "this statement".to_string(),
    }
}

async fn answer(
    statement: &Statement,
    client: &mut dyn HookClient,
) -> Option<PgWireResult<Response>> {
    let status = client.transaction_status();
    let count: Arc<BlockStatements> = client
        .session_extensions()
        .get_or_insert_with(BlockStatements::default);
    match (kind(statement), status) {
        (Kind::Begin, TransactionStatus::Idle) => {
            count.0.store(0, Ordering::Relaxed);
            Some(Ok(Response::TransactionStart(Tag::new("BEGIN"))))
        }
        // PostgreSQL warns and stays in the block.
        (Kind::Begin, TransactionStatus::Transaction) => {
            Some(Ok(Response::Execution(Tag::new("BEGIN"))))
        }
        (Kind::Begin, TransactionStatus::Error) => Some(Err(aborted())),
        (Kind::Commit, TransactionStatus::Error) => {
            count.0.store(0, Ordering::Relaxed);
            Some(Ok(Response::TransactionEnd(Tag::new("ROLLBACK"))))
        }
        (Kind::Commit, _) => {
            count.0.store(0, Ordering::Relaxed);
            Some(Ok(Response::TransactionEnd(Tag::new("COMMIT"))))
        }
        (Kind::Rollback, _) => {
            if count.0.swap(0, Ordering::Relaxed) > 0 {
                let notice = ErrorInfo::new(
                    "WARNING".to_string(),
                    "01000".to_string(),
                    NOTHING_UNDONE.to_string(),
                );
                let message = PgWireBackendMessage::NoticeResponse(NoticeResponse::from(notice));
                if let Err(e) = client.send_message(message).await {
                    return Some(Err(e));
                }
            }
            Some(Ok(Response::TransactionEnd(Tag::new("ROLLBACK"))))
        }
        (_, TransactionStatus::Error) => Some(Err(aborted())),
        (Kind::Changes, TransactionStatus::Transaction) => Some(Err(error(
            "25001",
            format!(
                "{} cannot run inside a transaction block: this server cannot roll it back; \
                 run it after COMMIT or ROLLBACK",
                name(statement)
            ),
        ))),
        (_, TransactionStatus::Transaction) => {
            count.0.fetch_add(1, Ordering::Relaxed);
            None
        }
        (_, TransactionStatus::Idle) => None,
    }
}

#[async_trait]
impl QueryHook for TransactionBlocks {
    async fn handle_simple_query(
        &self,
        statement: &Statement,
        _session_context: &SessionContext,
        client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        answer(statement, client).await
    }

    async fn handle_extended_parse_query(
        &self,
        statement: &Statement,
        _session_context: &SessionContext,
        _client: &(dyn ClientInfo + Send + Sync),
    ) -> Option<PgWireResult<LogicalPlan>> {
        match kind(statement) {
            Kind::Begin | Kind::Commit | Kind::Rollback => {
                Some(Ok(LogicalPlan::EmptyRelation(EmptyRelation {
                    produce_one_row: false,
                    schema: Arc::new(DFSchema::empty()),
                })))
            }
            Kind::Runs | Kind::Changes => None,
        }
    }

    async fn handle_extended_query(
        &self,
        statement: &Statement,
        _logical_plan: &LogicalPlan,
        _params: &ParamValues,
        _session_context: &SessionContext,
        client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        answer(statement, client).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn parsed(sql: &str) -> Statement {
        Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .expect("parses")
            .remove(0)
    }

    #[test]
    fn statements_that_change_tables_are_told_apart_from_those_that_run() {
        for sql in [
            "CREATE TABLE t (a INT)",
            "CREATE VIEW v AS SELECT 1",
            "INSERT INTO t VALUES (1)",
            "DELETE FROM t",
            "UPDATE t SET a = 2",
            "DROP TABLE t",
            "COPY t TO 'x.csv'",
            "ALTER TABLE t ADD COLUMN b INT",
        ] {
            assert!(matches!(kind(&parsed(sql)), Kind::Changes), "{sql}");
        }
        for sql in [
            "SELECT 1",
            "SELECT * FROM anonymize_publish('r', 'SELECT 1')",
            "EXPLAIN SELECT 1",
            "SET datestyle = 'ISO'",
            "SHOW datestyle",
            "DECLARE c CURSOR FOR SELECT 1",
            "FETCH 10 FROM c",
            "CLOSE c",
        ] {
            assert!(matches!(kind(&parsed(sql)), Kind::Runs), "{sql}");
        }
        assert!(matches!(kind(&parsed("BEGIN")), Kind::Begin));
        assert!(matches!(kind(&parsed("START TRANSACTION")), Kind::Begin));
        assert!(matches!(kind(&parsed("COMMIT")), Kind::Commit));
        assert!(matches!(kind(&parsed("ROLLBACK")), Kind::Rollback));
    }

    #[test]
    fn a_refusal_names_the_statement() {
        assert_eq!(name(&parsed("create table t (a int)")), "CREATE TABLE");
        assert_eq!(name(&parsed("insert into t values (1)")), "INSERT");
        assert_eq!(name(&parsed("DROP VIEW v")), "DROP VIEW");
    }
}
