//! What a public user may run: an allow-list, checked on the parsed statement before it is
//! planned, by every door of a public session (`dfanon --public`, [`crate::public_sql`],
//! Python's `dfanon.sql` and both protocols of `dfanon-server`), with one refusal text.
//!
//! Allowed: queries (`SELECT`, `WITH`, `VALUES`), `EXPLAIN` of an allowed statement, `SHOW`
//! and `DESCRIBE`, transactions and cursors over queries, and `SET` of the display settings
//! of a client connection ([`PUBLIC_SETTINGS`], `SET TIME ZONE`). Everything else is
//! refused: every other `SET`, every `RESET`, and whatever creates, changes, copies or
//! drops. The session's own settings (DataFusion's execution and runtime settings, the
//! catalog defaults, `anonymize.*`) therefore stay the owner's; a release also checks that
//! they are (`super::settings`), for a door that runs statements without this check.

use std::fmt;

use datafusion::common::DataFusionError;
use datafusion::logical_expr::{LogicalPlan, Statement as PlanStatement};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{Set, Statement};

/// The settings a public user may `SET`: the display settings of a client connection
/// (PostgreSQL's), which change how results are shown on that connection and nothing the
/// session computes.
pub const PUBLIC_SETTINGS: [&str; 8] = [
    "application_name",
    "bytea_output",
    "client_encoding",
    "datestyle",
    "extra_float_digits",
    "intervalstyle",
    "search_path",
    "statement_timeout",
];

/// A statement a public user may not run, with the text they see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicRefusal(String);

impl PublicRefusal {
    /// The refusal of `what` (`"COPY"`, `"SET datafusion.execution.batch_size"`).
    pub fn of(what: &str) -> Self {
        Self(format!(
            "{what} is not available to public users: they run SELECT, EXPLAIN and SHOW over releases and the tables the data owner published"
        ))
    }

    /// The text a public user sees.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PublicRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PublicRefusal {}

impl From<PublicRefusal> for DataFusionError {
    fn from(refusal: PublicRefusal) -> Self {
        DataFusionError::Plan(refusal.0)
    }
}

/// `Ok` when a public user may run `statement` as DataFusion parses it.
pub fn check_statement(statement: &DfStatement) -> Result<(), PublicRefusal> {
    match statement {
        DfStatement::Statement(statement) => check_sql_statement(statement),
        DfStatement::Explain(explain) => check_statement(&explain.statement),
        DfStatement::CreateExternalTable(_) => Err(PublicRefusal::of("CREATE EXTERNAL TABLE")),
        DfStatement::CopyTo(_) => Err(PublicRefusal::of("COPY")),
        DfStatement::Reset(_) => Err(PublicRefusal::of("RESET")),
    }
}

/// `Ok` when a public user may run `statement` as the SQL parser gives it (a protocol that
/// parses statements itself, as the PostgreSQL wire protocol does).
pub fn check_sql_statement(statement: &Statement) -> Result<(), PublicRefusal> {
    match statement {
        // A bare SHOW names nothing to show.
        Statement::ShowVariable { variable } if variable.is_empty() => Err(PublicRefusal(
            "SHOW needs the name of a setting: SHOW datestyle, SHOW ALL".to_string(),
        )),
        Statement::Query(_)
        | Statement::ShowVariable { .. }
        | Statement::ShowTables { .. }
        | Statement::ShowColumns { .. }
        | Statement::ShowStatus { .. }
        | Statement::ShowCatalogs { .. }
        | Statement::ShowSchemas { .. }
        | Statement::ExplainTable { .. }
        | Statement::StartTransaction { .. }
        | Statement::Commit { .. }
        | Statement::Rollback { .. }
        | Statement::Fetch { .. }
        | Statement::Close { .. } => Ok(()),
        Statement::Explain { statement, .. } => check_sql_statement(statement),
        Statement::Declare { stmts } => {
            if stmts.iter().all(|d| d.for_query.is_some()) {
                Ok(())
            } else {
                Err(PublicRefusal::of("DECLARE without a query"))
            }
        }
        Statement::Set(Set::SingleAssignment {
            scope: None,
            hivevar: false,
            variable,
            ..
        }) => check_setting(&variable.to_string()),
        Statement::Set(Set::SetTimeZone { local: false, .. }) => Ok(()),
        // An isolation level or read-only mode (Metabase and JDBC set them on every
        // connection): statements here apply when they run, so it changes nothing.
        Statement::Set(Set::SetTransaction { snapshot: None, .. }) => Ok(()),
        Statement::Set(_) => Err(PublicRefusal::of("this SET")),
        other => Err(PublicRefusal::of(&kind(other))),
    }
}

/// `Ok` when a public user may run `plan`: for a door that sees only the planned statement
/// (the interactive shell), the same answer [`check_statement`] gives on its text. Queries
/// pass (writes and definitions are refused again when they are planned, `guard`).
pub fn check_plan(plan: &LogicalPlan) -> Result<(), PublicRefusal> {
    match plan {
        LogicalPlan::Statement(PlanStatement::SetVariable(set)) => check_setting(&set.variable),
        LogicalPlan::Statement(PlanStatement::ResetVariable(_)) => Err(PublicRefusal::of("RESET")),
        LogicalPlan::Statement(PlanStatement::Prepare(_)) => Err(PublicRefusal::of("PREPARE")),
        LogicalPlan::Statement(PlanStatement::Execute(_)) => Err(PublicRefusal::of("EXECUTE")),
        LogicalPlan::Statement(PlanStatement::Deallocate(_)) => {
            Err(PublicRefusal::of("DEALLOCATE"))
        }
        LogicalPlan::Copy(_) => Err(PublicRefusal::of("COPY")),
        LogicalPlan::Dml(_) => Err(PublicRefusal::of("a write (INSERT, UPDATE or DELETE)")),
        LogicalPlan::Ddl(_) => Err(PublicRefusal::of("a definition (CREATE, ALTER or DROP)")),
        _ => Ok(()),
    }
}

/// `Ok` when a public user may set `name`.
fn check_setting(name: &str) -> Result<(), PublicRefusal> {
    let name = name.to_lowercase();
    if PUBLIC_SETTINGS.contains(&name.as_str()) {
        Ok(())
    } else {
        Err(PublicRefusal::of(&format!("SET {name}")))
    }
}

/// The statement's leading keywords, as the refusal names them (`CREATE TABLE`, `INSERT`).
fn kind(statement: &Statement) -> String {
    let text = statement.to_string();
    let words: Vec<&str> = text.split_whitespace().take(2).collect();
    match words.as_slice() {
        [first, second]
            if matches!(
                first.to_uppercase().as_str(),
                "CREATE" | "DROP" | "ALTER" | "TRUNCATE" | "GRANT" | "REVOKE"
            ) =>
        {
            format!("{} {}", first.to_uppercase(), second.to_uppercase())
        }
        [first, ..] => first.to_uppercase(),
        [] => "this statement".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::DFParser;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn check(sql: &str) -> Result<(), PublicRefusal> {
        let statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).expect("parses");
        check_sql_statement(&statements[0])
    }

    fn check_df(sql: &str) -> Result<(), PublicRefusal> {
        let mut statements = DFParser::parse_sql(sql).expect("parses");
        check_statement(&statements.pop_front().expect("one statement"))
    }

    #[test]
    fn reads_are_allowed() {
        for sql in [
            "SELECT 1",
            "SELECT * FROM anonymize('nps', method => 'ipa')",
            "WITH a AS (SELECT 1) SELECT * FROM a",
            "EXPLAIN SELECT 1",
            "SHOW TABLES",
            "SHOW datestyle",
            "BEGIN",
            "COMMIT",
            "ROLLBACK",
            "SET extra_float_digits = 3",
            "SET DateStyle = 'ISO'",
            "SET TIME ZONE 'UTC'",
            "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED",
            "SET TRANSACTION READ ONLY",
            "DECLARE c CURSOR FOR SELECT 1",
            "FETCH 10 FROM c",
            "CLOSE c",
        ] {
            assert_eq!(check(sql), Ok(()), "{sql}");
        }
        for sql in [
            "SELECT 1",
            "EXPLAIN SELECT 1",
            "SHOW TABLES",
            "SET datestyle = 'ISO'",
        ] {
            assert_eq!(check_df(sql), Ok(()), "{sql}");
        }
    }

    /// The shell's check on plans gives the answers the check on statements gives.
    #[tokio::test]
    async fn plans_are_checked_alike() -> datafusion::common::Result<()> {
        let ctx = datafusion::prelude::SessionContext::new();
        let plan = |sql: &'static str| {
            let state = ctx.state();
            async move { state.create_logical_plan(sql).await }
        };
        assert_eq!(check_plan(&plan("SELECT 1").await?), Ok(()));
        assert_eq!(check_plan(&plan("SET datestyle = 'ISO'").await?), Ok(()));
        for (sql, what) in [
            (
                "SET datafusion.catalog.default_schema = 'x'",
                "SET datafusion.catalog.default_schema",
            ),
            ("RESET datafusion.execution.batch_size", "RESET"),
            (
                "CREATE TABLE x AS SELECT 1",
                "a definition (CREATE, ALTER or DROP)",
            ),
            ("PREPARE p AS SELECT 1", "PREPARE"),
        ] {
            assert_eq!(
                check_plan(&plan(sql).await?),
                Err(PublicRefusal::of(what)),
                "{sql}"
            );
        }
        Ok(())
    }

    #[test]
    fn everything_else_is_refused_by_name() {
        for (sql, what) in [
            ("CREATE TABLE t (a INT)", "CREATE TABLE"),
            ("CREATE VIEW v AS SELECT 1", "CREATE VIEW"),
            ("DROP TABLE nps", "DROP TABLE"),
            ("INSERT INTO t VALUES (1)", "INSERT"),
            ("DELETE FROM t", "DELETE"),
            ("UPDATE t SET a = 1", "UPDATE"),
            ("COPY t TO 'x.csv'", "COPY"),
            (
                "SET anonymize.epsilon_budget = 100",
                "SET anonymize.epsilon_budget",
            ),
            (
                "SET datafusion.execution.batch_size = 1",
                "SET datafusion.execution.batch_size",
            ),
            (
                "SET datafusion.catalog.default_schema = 'fresh1'",
                "SET datafusion.catalog.default_schema",
            ),
            (
                "SET datafusion.runtime.memory_limit = '28K'",
                "SET datafusion.runtime.memory_limit",
            ),
            ("EXPLAIN CREATE TABLE t (a INT)", "CREATE TABLE"),
            ("SET SESSION AUTHORIZATION owner", "this SET"),
            ("PREPARE p AS SELECT 1", "PREPARE"),
        ] {
            assert_eq!(check(sql), Err(PublicRefusal::of(what)), "{sql}");
        }
        assert_eq!(
            check("SHOW"),
            Err(PublicRefusal(
                "SHOW needs the name of a setting: SHOW datestyle, SHOW ALL".to_string()
            ))
        );
        for (sql, what) in [
            ("COPY (SELECT 1) TO 'x.csv'", "COPY"),
            (
                "CREATE EXTERNAL TABLE x STORED AS CSV LOCATION 'x.csv'",
                "CREATE EXTERNAL TABLE",
            ),
            ("RESET datafusion.execution.batch_size", "RESET"),
            (
                "SET datafusion.execution.target_partitions = 1",
                "SET datafusion.execution.target_partitions",
            ),
            ("EXPLAIN COPY (SELECT 1) TO 'x.csv'", "COPY"),
        ] {
            assert_eq!(check_df(sql), Err(PublicRefusal::of(what)), "{sql}");
        }
    }
}
