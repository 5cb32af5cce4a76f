//! Loading hierarchies from Arrow data (any table or view in ARX's layout).

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{exec_err, Result};

use super::Hierarchy;

/// Converts an Arrow array to text the way hierarchy matching sees values (`None` for null).
pub fn array_to_strings(array: &ArrayRef) -> Result<Vec<Option<String>>> {
    let utf8 = cast(array, &DataType::Utf8)?;
    let strings = utf8.as_string::<i32>();
    Ok((0..strings.len())
        .map(|i| (!strings.is_null(i)).then(|| strings.value(i).to_string()))
        .collect())
}

/// Builds a hierarchy from the batches of a table in ARX layout: column 0 the raw value,
/// column `i` its level-`i` generalization. `source` names the table in error messages.
///
/// Cells are taken byte for byte, exactly as data values are matched: a cell `'F '` is
/// not the value `'F'`. (Trim a CSV hierarchy in SQL if it has padding, e.g. with a view
/// `SELECT trim(column_1), ...`.)
pub fn hierarchy_from_batches(
    attribute: &str,
    source: &str,
    batches: &[RecordBatch],
) -> Result<Hierarchy> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for batch in batches {
        if batch.num_columns() < 2 {
            return exec_err!(
                "hierarchy table '{source}' for column '{attribute}' has {} column(s); it needs the raw value and at least one generalization level",
                batch.num_columns()
            );
        }
        let columns = batch
            .columns()
            .iter()
            .map(array_to_strings)
            .collect::<Result<Vec<_>>>()?;
        for row in 0..batch.num_rows() {
            if columns[0][row].is_none() {
                return exec_err!(
                    "hierarchy table '{source}' for column '{attribute}': row {} has NULL as its raw value (level 0, the table's first column); every row needs the data value it generalizes",
                    rows.len() + 1
                );
            }
            let mut cells = Vec::with_capacity(columns.len());
            for column in &columns {
                match &column[row] {
                    Some(text) => cells.push(text.clone()),
                    // Ragged CSV rows arrive as trailing nulls: treat them as missing levels.
                    None => break,
                }
            }
            rows.push(cells);
        }
    }
    // The table's contents are data read while the release runs: an execution error.
    Hierarchy::from_rows(attribute, &rows).map_err(|e| {
        datafusion::error::DataFusionError::Execution(format!("{e} (hierarchy table '{source}')"))
    })
}
