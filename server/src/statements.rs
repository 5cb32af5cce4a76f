//! What a public user may run, checked on the parsed statement before it is planned, the
//! same for both protocols. The public session refuses writes again when it plans them;
//! this check also keeps out what the protocols' own handlers would answer (`SET`,
//! cursors) and says plainly what is allowed.

use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{Set, Statement};

/// The settings of the client connection a public user may set: they change how results
/// are shown on that connection only.
const CLIENT_SETTINGS: [&str; 8] = [
    "application_name",
    "bytea_output",
    "client_encoding",
    "datestyle",
    "extra_float_digits",
    "intervalstyle",
    "search_path",
    "statement_timeout",
];

/// The error a public user gets for a statement outside what they may run.
pub fn refusal(what: &str) -> String {
    format!(
        "{what} is not available to public users: they run SELECT, EXPLAIN and SHOW over releases and the tables the data owner published"
    )
}

/// `Ok` when a public user may run `statement`; otherwise the error to show.
pub fn check_public(statement: &Statement) -> Result<(), String> {
    match statement {
        // A bare SHOW is refused here: the protocol's own handler fails on it.
        Statement::ShowVariable { variable } if variable.is_empty() => {
            Err("SHOW needs the name of a setting: SHOW datestyle, SHOW ALL".to_string())
        }
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
        Statement::Explain { statement, .. } => check_public(statement),
        Statement::Declare { stmts } => {
            if stmts.iter().all(|d| d.for_query.is_some()) {
                Ok(())
            } else {
                Err(refusal("DECLARE without a query"))
            }
        }
        Statement::Set(Set::SingleAssignment {
            scope: None,
            hivevar: false,
            variable,
            ..
        }) => {
            let name = variable.to_string().to_lowercase();
            if CLIENT_SETTINGS.contains(&name.as_str()) {
                Ok(())
            } else {
                Err(refusal(&format!("SET {name}")))
            }
        }
        Statement::Set(Set::SetTimeZone { local: false, .. }) => Ok(()),
        Statement::Set(_) => Err(refusal("this SET")),
        other => Err(refusal(&kind(other))),
    }
}

/// `Ok` when a public user may run `statement` as DataFusion parsed it (Flight SQL).
pub fn check_public_df(statement: &DfStatement) -> Result<(), String> {
    match statement {
        DfStatement::Statement(statement) => check_public(statement),
        DfStatement::Explain(explain) => check_public_df(&explain.statement),
        DfStatement::CreateExternalTable(_) => Err(refusal("CREATE EXTERNAL TABLE")),
        DfStatement::CopyTo(_) => Err(refusal("COPY")),
        DfStatement::Reset(_) => Err(refusal("RESET")),
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
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn check(sql: &str) -> Result<(), String> {
        let statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).expect("parses");
        check_public(&statements[0])
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
            "DECLARE c CURSOR FOR SELECT 1",
            "FETCH 10 FROM c",
            "CLOSE c",
        ] {
            assert_eq!(check(sql), Ok(()), "{sql}");
        }
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
            ("EXPLAIN CREATE TABLE t (a INT)", "CREATE TABLE"),
            ("SET SESSION AUTHORIZATION owner", "this SET"),
        ] {
            assert_eq!(check(sql), Err(refusal(what)), "{sql}");
        }
        assert_eq!(
            check("SHOW"),
            Err("SHOW needs the name of a setting: SHOW datestyle, SHOW ALL".to_string())
        );
    }
}
