//! The profile of a source: per column its type, distinct values, NULL share and most
//! frequent values, and the suggested role with the reason for it, as the library's
//! `anonymize_profile` gives them.

use datafusion::prelude::SessionContext;

use super::project::{ident, literal, ColumnRole};
use super::results::{run, Rows};

/// The most frequent values shown per column.
const TOP_VALUES: usize = 5;

/// One column's profile.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnProfile {
    pub name: String,
    pub data_type: String,
    pub rows: u64,
    pub distinct: u64,
    pub nulls: u64,
    /// The most frequent values with their counts.
    pub top: Vec<(String, u64)>,
    pub suggestion: ColumnRole,
    pub reason: String,
}

/// The statements a profile runs: the library's `anonymize_profile` (counts and the
/// suggested role with its reason), then one query per column for its most frequent values.
pub fn statements(table: &str, columns: &[String]) -> Vec<String> {
    let mut out = vec![format!(
        "SELECT column_name, data_type, rows, distinct_count, null_share, role, reason FROM anonymize_profile({})",
        literal(table)
    )];
    for column in columns {
        out.push(format!(
            "SELECT CAST({c} AS VARCHAR) AS value, COUNT(*) AS n FROM {t} WHERE {c} IS NOT NULL \
             GROUP BY 1 ORDER BY n DESC, value LIMIT {TOP_VALUES}",
            c = ident(column),
            t = ident(table)
        ));
    }
    out
}

/// The studio's role of `anonymize_profile`'s role name.
fn role(name: &str) -> ColumnRole {
    match name {
        "direct_identifier" => ColumnRole::Identifier,
        "quasi_identifier" => ColumnRole::Quasi,
        "sensitive" => ColumnRole::Sensitive,
        _ => ColumnRole::Other,
    }
}

/// Profiles `table` in `ctx`.
pub async fn profile(ctx: &SessionContext, table: &str) -> Result<Vec<ColumnProfile>, String> {
    let schema = ctx
        .table(table)
        .await
        .map_err(|e| e.to_string())?
        .schema()
        .as_arrow()
        .clone();
    let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let sql = statements(table, &columns);
    let profiled = run(ctx, &sql[0]).await?;
    let mut out = Vec::new();
    for (i, name) in columns.iter().enumerate() {
        let top: Rows = run(ctx, &sql[i + 1]).await?;
        let top: Vec<(String, u64)> = (0..top.len())
            .map(|r| (top.cell(r, 0), top.cell(r, 1).parse().unwrap_or(0)))
            .collect();
        let rows: u64 = profiled.cell(i, 2).parse().unwrap_or(0);
        let null_share: f64 = profiled.cell(i, 4).parse().unwrap_or(0.0);
        out.push(ColumnProfile {
            name: name.clone(),
            data_type: profiled.cell(i, 1),
            rows,
            distinct: profiled.cell(i, 3).parse().unwrap_or(0),
            nulls: (null_share * rows as f64).round() as u64,
            top,
            suggestion: role(&profiled.cell(i, 5)),
            reason: profiled.cell(i, 6),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_is_the_library_s_and_one_query_per_column() {
        let sql = statements("a'b", &["x".into(), "y y".into()]);
        assert_eq!(
            sql[0],
            "SELECT column_name, data_type, rows, distinct_count, null_share, role, reason FROM anonymize_profile('a''b')"
        );
        assert_eq!(sql.len(), 3);
        assert!(sql[2].contains("CAST(\"y y\" AS VARCHAR)"), "{}", sql[2]);
        assert_eq!(role("quasi_identifier"), ColumnRole::Quasi);
        assert_eq!(role("direct_identifier"), ColumnRole::Identifier);
    }
}
