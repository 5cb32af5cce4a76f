//! Whether the tables behind a cached release changed since it was computed.
//!
//! A release is cached per canonical arguments and table identity (see the parent module).
//! A table can change without changing identity: `INSERT INTO` appends to an in-memory
//! table, files are added to or rewritten in a listing table's directory. Before a cached
//! release is served, the current [`TableVersion`] of its source and hierarchy tables is
//! compared with the one it was computed from; a different version computes (and charges)
//! a new release instead of serving the stale one.
//!
//! What a version captures, by kind of table:
//!
//! * **in-memory tables** (`CREATE TABLE`, `MemTable`): every batch of every partition,
//!   compared by identity. The version holds the batches' arrays, so an array can neither
//!   be freed nor its address reused while the version exists: `INSERT`, `DELETE` and
//!   `UPDATE` all produce arrays the version does not hold.
//! * **listing tables** (`CREATE EXTERNAL TABLE`, Parquet, CSV, ...): the path, size,
//!   modification time and entity tag of every file the table would read.
//! * **views**: the versions of every table their plan scans.
//! * **any other table**: its identity only (it is assumed not to change; register a new
//!   table for new data).

use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::catalog::TableProvider;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Result;
use datafusion::datasource::listing::ListingTable;
use datafusion::datasource::{source_as_provider, MemTable, ViewTable};
use datafusion::execution::SessionState;
use datafusion::logical_expr::LogicalPlan;
use futures::future::BoxFuture;
use futures::{FutureExt, TryStreamExt};

/// How deep views over views are followed.
const MAX_VIEW_DEPTH: usize = 16;

/// One observation of a table's contents.
#[derive(Debug, Clone)]
enum Token {
    /// A batch column, compared by identity (held, so its address stays unique).
    Array(ArrayRef),
    /// Anything compared by value.
    Text(String),
}

impl PartialEq for Token {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Array(a), Self::Array(b)) => {
                std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b)) && a.len() == b.len()
            }
            (Self::Text(a), Self::Text(b)) => a == b,
            _ => false,
        }
    }
}

/// The version of the tables of one release: equal versions mean unchanged tables.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableVersion(Vec<Token>);

impl TableVersion {
    /// The combined version of `tables`, observed now.
    pub async fn of(tables: &[&Arc<dyn TableProvider>], state: &SessionState) -> Result<Self> {
        let mut tokens = Vec::new();
        for table in tables {
            tokens.push(Token::Text("table".into()));
            observe(Arc::clone(table), state, 0, &mut tokens).await?;
        }
        Ok(Self(tokens))
    }
}

/// Appends the observation of `table` to `out`.
fn observe<'a>(
    table: Arc<dyn TableProvider>,
    state: &'a SessionState,
    depth: usize,
    out: &'a mut Vec<Token>,
) -> BoxFuture<'a, Result<()>> {
    async move {
        let any: &dyn std::any::Any = table.as_ref();
        if let Some(memory) = any.downcast_ref::<MemTable>() {
            for partition in &memory.batches {
                let batches = partition.read().await;
                out.push(Token::Text(format!(
                    "partition of {} batches",
                    batches.len()
                )));
                for batch in batches.iter() {
                    out.extend(batch.columns().iter().cloned().map(Token::Array));
                }
            }
        } else if let Some(listing) = any.downcast_ref::<ListingTable>() {
            let extension = &listing.options().file_extension;
            for url in listing.table_paths() {
                let store = state.runtime_env().object_store(url)?;
                let mut files: Vec<String> = url
                    .list_all_files(state, store.as_ref(), extension)
                    .await?
                    .map_ok(|f| {
                        format!(
                            "{} {} {} {:?}",
                            f.location, f.size, f.last_modified, f.e_tag
                        )
                    })
                    .try_collect()
                    .await?;
                files.sort();
                out.push(Token::Text(format!("{url}: {}", files.join("; "))));
            }
        } else if let Some(view) = any.downcast_ref::<ViewTable>() {
            if depth >= MAX_VIEW_DEPTH {
                out.push(Token::Text("views nested too deep".into()));
                return Ok(());
            }
            for scanned in scanned_tables(view.logical_plan())? {
                observe(scanned, state, depth + 1, out).await?;
            }
        } else {
            out.push(Token::Text(format!(
                "{:p}",
                Arc::as_ptr(&table) as *const ()
            )));
        }
        Ok(())
    }
    .boxed()
}

/// The tables a plan scans, subqueries included.
fn scanned_tables(plan: &LogicalPlan) -> Result<Vec<Arc<dyn TableProvider>>> {
    let mut tables = Vec::new();
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            tables.push(source_as_provider(&scan.source)?);
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(tables)
}
