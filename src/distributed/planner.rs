//! The client side of a cluster session: before a plan leaves for the cluster, every table
//! only this client can produce is computed here and put into the plan.
//!
//! [`ClusterPlanner`] wraps the cluster's query planner. For each scan of a table this
//! crate's functions return (a release, its metadata, a hierarchy builder's rows: see
//! [`LazyTable`]) it asks the table for its rows — computing and charging a release once,
//! exactly as a local query would, with its data-sized aggregate itself running on the
//! cluster — and replaces the scan's source by a [`ShippedTable`] holding them, in compact
//! form for a release. Any other table a plan cannot carry by description (an in-memory
//! table from `CREATE TABLE`, `generate_series`) is scanned here and shipped as batches.
//! The cluster then scans what the client computed; it never draws anything again.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::cte_worktable::CteWorkTable;
use datafusion::catalog::empty::EmptyTable;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::{Transformed, TreeNodeRecursion};
use datafusion::common::Result;
use datafusion::datasource::listing::ListingTable;
use datafusion::datasource::{provider_as_source, source_as_provider, ViewTable};
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::session_state::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

use crate::session::local_state;
use crate::tables::lazy::{session_state, LazyTable};
use crate::tables::shipped::{Shipped, ShippedTable};

/// A query planner that computes the client-side tables of a plan, then hands the plan to
/// the cluster's planner (`inner`).
#[derive(Debug)]
pub struct ClusterPlanner {
    inner: Arc<dyn QueryPlanner + Send + Sync>,
}

impl ClusterPlanner {
    /// Wraps the cluster's planner.
    pub fn new(inner: Arc<dyn QueryPlanner + Send + Sync>) -> Self {
        Self { inner }
    }
}

#[async_trait]
impl QueryPlanner for ClusterPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = ship_client_tables(logical_plan.clone(), session_state(session)?).await?;
        self.inner.create_physical_plan(&plan, session).await
    }
}

/// Replaces every scan of a client-side table in `plan` (subqueries included) by a scan of
/// its computed rows.
async fn ship_client_tables(plan: LogicalPlan, state: &SessionState) -> Result<LogicalPlan> {
    // First every distinct client-side table of the plan, computed once each.
    let mut tables: Vec<Arc<dyn TableProvider>> = Vec::new();
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            if let Ok(provider) = source_as_provider(&scan.source) {
                if client_side(&provider) && !tables.iter().any(|t| Arc::ptr_eq(t, &provider)) {
                    tables.push(provider);
                }
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    if tables.is_empty() {
        return Ok(plan);
    }
    let mut shipped: HashMap<usize, Arc<ShippedTable>> = HashMap::new();
    for table in &tables {
        let rows = compute(table, state).await?;
        shipped.insert(address(table), Arc::new(ShippedTable::new(rows)));
    }
    let plan = plan.transform_up_with_subqueries(|node| match node {
        LogicalPlan::TableScan(mut scan) => {
            let replacement = source_as_provider(&scan.source)
                .ok()
                .and_then(|p| shipped.get(&address(&p)).cloned());
            match replacement {
                Some(table) => {
                    scan.source = provider_as_source(table);
                    Ok(Transformed::yes(LogicalPlan::TableScan(scan)))
                }
                None => Ok(Transformed::no(LogicalPlan::TableScan(scan))),
            }
        }
        other => Ok(Transformed::no(other)),
    })?;
    Ok(plan.data)
}

fn address(table: &Arc<dyn TableProvider>) -> usize {
    Arc::as_ptr(table) as *const () as usize
}

/// Whether only this client can produce `table`'s rows: every table but those a plan
/// carries by description (files, views, recursive-query work tables, empty tables) and
/// those already shipped.
fn client_side(table: &Arc<dyn TableProvider>) -> bool {
    let any: &dyn std::any::Any = table.as_ref();
    !(any.is::<ListingTable>()
        || any.is::<ViewTable>()
        || any.is::<CteWorkTable>()
        || any.is::<EmptyTable>()
        || any.is::<ShippedTable>())
}

/// The rows of a client-side table, in the form they travel in: a release's compact form,
/// or the batches a local scan produces (an in-memory table, `generate_series`, ...).
async fn compute(table: &Arc<dyn TableProvider>, state: &SessionState) -> Result<Shipped> {
    let any: &dyn std::any::Any = table.as_ref();
    if let Some(lazy) = any.downcast_ref::<LazyTable>() {
        return lazy.shipped(state).await;
    }
    let local = SessionContext::new_with_state(local_state(state));
    let batches = local.read_table(table.clone())?.collect().await?;
    Ok(Shipped::Batches {
        schema: table.schema(),
        batches: Arc::new(batches),
    })
}
