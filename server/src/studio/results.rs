//! Running a statement in the steward's session and reading its result as text.

use datafusion::arrow::util::display::array_value_to_string;
use datafusion::prelude::SessionContext;

use crate::audit::SessionAudit;

/// The most rows of a result the studio keeps.
const MAX_ROWS: usize = 10_000;

/// A statement's result: column names and cells as text (NULL as an empty cell).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rows {
    pub columns: Vec<String>,
    pub cells: Vec<Vec<String>>,
}

impl Rows {
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether the result has no rows.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The cell at `row`, `column` (empty when there is none).
    pub fn cell(&self, row: usize, column: usize) -> String {
        self.cells
            .get(row)
            .and_then(|r| r.get(column))
            .cloned()
            .unwrap_or_default()
    }

    /// The value of the row whose first cell is `key`, for key/value results.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.cells
            .iter()
            .find(|row| row.first().is_some_and(|k| k == key))
            .and_then(|row| row.last())
            .map(String::as_str)
    }
}

/// Runs `sql` in `ctx` and reads its result (at most [`MAX_ROWS`] rows); in the audit
/// trail when the session is audited ([`SessionAudit`]).
pub async fn run(ctx: &SessionContext, sql: &str) -> Result<Rows, String> {
    let outcome = read(ctx, sql).await;
    let audit = ctx.state().config().get_extension::<SessionAudit>();
    if let Some(audit) = audit {
        audit.statement(sql, outcome.as_ref().map(|_| ()).map_err(String::as_str))?;
    }
    outcome
}

/// [`run`] without the audit trail.
async fn read(ctx: &SessionContext, sql: &str) -> Result<Rows, String> {
    let frame = ctx.sql(sql).await.map_err(|e| e.to_string())?;
    let columns = frame
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let batches = frame.collect().await.map_err(|e| e.to_string())?;
    let mut cells = Vec::new();
    'batches: for batch in &batches {
        for row in 0..batch.num_rows() {
            if cells.len() >= MAX_ROWS {
                break 'batches;
            }
            cells.push(
                batch
                    .columns()
                    .iter()
                    .map(|array| {
                        if array.is_null(row) {
                            String::new()
                        } else {
                            array_value_to_string(array, row).unwrap_or_default()
                        }
                    })
                    .collect(),
            );
        }
    }
    Ok(Rows { columns, cells })
}

/// Runs each statement in order, stopping at the first error.
pub async fn run_all(ctx: &SessionContext, statements: &[String]) -> Result<(), String> {
    for sql in statements {
        run(ctx, sql).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::audit::{Audit, AuditSettings, Auditing, Protocol, ReleasesHeard};
    use crate::config::Role;

    #[tokio::test]
    async fn an_audited_sessions_statements_are_in_the_trail() {
        let dir = tempfile::tempdir().expect("a folder");
        let audit = Arc::new(
            Audit::open(AuditSettings {
                path: dir.path().join("audit.jsonl"),
                max_bytes: 1 << 20,
                keep: 1,
                hash_public_text: false,
            })
            .expect("opens"),
        );
        let ctx = SessionContext::new();
        ctx.state_ref()
            .write()
            .config_mut()
            .set_extension(Arc::new(SessionAudit {
                audit: audit.clone(),
                auditing: Auditing::new(
                    Protocol::Studio,
                    "steward".into(),
                    Role::Owner,
                    ReleasesHeard::default(),
                ),
            }));
        assert_eq!(
            run(&ctx, "SELECT 1 AS one").await.map(|r| r.cells),
            Ok(vec![vec!["1".to_string()]])
        );
        assert!(run(&ctx, "SELECT nothing").await.is_err());
        let text = std::fs::read_to_string(dir.path().join("audit.jsonl")).expect("the trail");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["protocol"], "studio");
        assert_eq!(lines[0]["user"], "steward");
        assert_eq!(lines[0]["text"], "SELECT 1 AS one");
        assert_eq!(lines[0]["outcome"], "ok");
        assert_eq!(lines[1]["outcome"], "error");
        // A session without the extension writes nothing.
        assert!(run(&SessionContext::new(), "SELECT 2").await.is_ok());
        let after = std::fs::read_to_string(dir.path().join("audit.jsonl")).expect("the trail");
        assert_eq!(after.lines().count(), 2);
    }
}
