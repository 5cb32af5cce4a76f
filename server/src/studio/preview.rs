//! A hierarchy's preview over the source: per level, how many groups the rows fall into
//! and the largest ones.

use datafusion::prelude::SessionContext;

use super::project::{ident, Hierarchy};
use super::results::run;

/// The labels shown per level in a hierarchy's preview.
const PREVIEW_LABELS: usize = 12;

/// One level of a hierarchy's preview.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelPreview {
    /// The level's column in the hierarchy table.
    pub level: String,
    /// How many labels the source's rows fall into at this level.
    pub labels: usize,
    /// The most frequent labels with their rows.
    pub top: Vec<(String, u64)>,
}

/// The preview of a hierarchy over the source: per level, how many labels the rows fall
/// into and the most frequent ones; rows whose value the hierarchy lacks are an error.
pub async fn preview(
    ctx: &SessionContext,
    source: &str,
    hierarchy: &Hierarchy,
    sql: &mut Vec<String>,
) -> Result<Vec<LevelPreview>, String> {
    let frame = ctx
        .table(hierarchy.table.as_str())
        .await
        .map_err(|e| e.to_string())?;
    let columns: Vec<String> = frame
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let Some((value, levels)) = columns.split_first() else {
        return Err("the hierarchy has no columns".into());
    };
    let join = format!(
        "FROM {s} s LEFT JOIN {h} h ON CAST(s.{c} AS VARCHAR) = CAST(h.{v} AS VARCHAR) WHERE s.{c} IS NOT NULL",
        s = ident(source),
        h = ident(&hierarchy.table),
        c = ident(&hierarchy.column),
        v = ident(value)
    );
    let missing_sql = format!("SELECT COUNT(*) {join} AND h.{} IS NULL", ident(value));
    sql.push(missing_sql.clone());
    let missing = run(ctx, &missing_sql).await?.cell(0, 0);
    if missing != "0" {
        return Err(format!(
            "{missing} rows of {source} have a value of {} that the hierarchy lacks",
            hierarchy.column
        ));
    }
    let mut out = Vec::new();
    for level in levels {
        let level_sql = format!(
            "SELECT CAST(h.{l} AS VARCHAR) AS label, COUNT(*) AS n {join} GROUP BY 1 ORDER BY n DESC, label",
            l = ident(level)
        );
        sql.push(level_sql.clone());
        let rows = run(ctx, &level_sql).await?;
        out.push(LevelPreview {
            level: level.clone(),
            labels: rows.len(),
            top: (0..rows.len().min(PREVIEW_LABELS))
                .map(|r| (rows.cell(r, 0), rows.cell(r, 1).parse().unwrap_or(0)))
                .collect(),
        });
    }
    Ok(out)
}
