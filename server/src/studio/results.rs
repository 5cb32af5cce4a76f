//! Running a statement in the steward's session and reading its result as text.

use datafusion::arrow::util::display::array_value_to_string;
use datafusion::prelude::SessionContext;

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

/// Runs `sql` in `ctx` and reads its result (at most [`MAX_ROWS`] rows).
pub async fn run(ctx: &SessionContext, sql: &str) -> Result<Rows, String> {
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
