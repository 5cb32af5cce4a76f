//! A result of the package's engine as a table of the user's `SessionContext`.
//!
//! The host plans and polls it across the FFI boundary; all of its work (planning the
//! engine's query, drawing the release, expanding its rows) runs on this package's runtime
//! and reaches the host through a channel, batch by batch. Scanning it twice runs the same
//! engine query twice, which serves the cached release the second time. A `COPY` to a
//! local path that fails, or whose stream the host drops before its end, leaves nothing
//! behind.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatchOptions;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{Column, Result};
use datafusion::dataframe::DataFrame;
use datafusion::datasource::TableType;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_anonymize::{CopyGuard, CopyOutput};
use futures::{SinkExt, StreamExt};

use crate::channel::{ChannelExec, Producer, Sender};
use crate::runtime::runtime;

/// The rows of one engine query (a release, its metadata, any `dfanon.sql` result).
#[derive(Debug, Clone)]
pub struct EngineView {
    df: DataFrame,
    schema: SchemaRef,
    /// The plan of `df` if it is a `COPY … TO` (its target, and the releases it reads).
    copy_plan: Option<LogicalPlan>,
}

impl EngineView {
    /// The rows `df` gives.
    pub fn new(df: DataFrame) -> Self {
        let schema = Arc::new(df.schema().as_arrow().clone());
        let copy_plan = match df.logical_plan() {
            plan @ LogicalPlan::Copy(_) => Some(plan.clone()),
            _ => None,
        };
        Self {
            df,
            schema,
            copy_plan,
        }
    }
}

#[async_trait]
impl TableProvider for EngineView {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // Only logical plan building here: the host polls this future without our runtime.
        let mut df = self.df.clone();
        let mut no_columns = false;
        match projection {
            // COUNT(*): the rows are counted, their columns dropped.
            Some(projection) if projection.is_empty() => no_columns = true,
            Some(projection) => {
                let columns: Vec<Expr> = projection
                    .iter()
                    .map(|i| Expr::Column(Column::from(self.df.schema().qualified_field(*i))))
                    .collect();
                df = df.select(columns)?;
            }
            None => {}
        }
        if let Some(limit) = limit {
            df = df.limit(0, Some(limit))?;
        }
        let schema = if no_columns {
            Arc::new(Schema::empty())
        } else {
            Arc::new(df.schema().as_arrow().clone())
        };
        Ok(Arc::new(ChannelExec::new(
            schema.clone(),
            Arc::new(EngineRun {
                df,
                schema,
                no_columns,
                copy_plan: self.copy_plan.clone(),
            }),
        )))
    }
}

/// Runs an engine query on our runtime and hands its batches over.
#[derive(Debug)]
struct EngineRun {
    df: DataFrame,
    /// The rows' schema: the query's, or none with `no_columns`.
    schema: SchemaRef,
    /// Hand over only the number of rows of each batch.
    no_columns: bool,
    /// The plan of a `COPY`: its local output is removed unless the statement runs to its
    /// end, and gets the guarantee cards of the releases it reads.
    copy_plan: Option<LogicalPlan>,
}

impl Producer for EngineRun {
    fn name(&self) -> &str {
        "DfanonExec"
    }

    fn start(&self, mut tx: Sender) -> Result<()> {
        let df = self.df.clone();
        let (schema, no_columns) = (self.schema.clone(), self.no_columns);
        // As it is before the statement runs. A COPY's one batch (its row count) comes
        // after everything is written.
        let mut copy = self
            .copy_plan
            .as_ref()
            .map(|plan| CopyGuard::new(CopyOutput::of_plan(plan)));
        let state = df.clone().into_parts().0;
        // Ends when the rows end or the host drops the stream (the send then fails).
        runtime().spawn(async move {
            match df.execute_stream().await {
                Ok(mut stream) => {
                    while let Some(batch) = stream.next().await {
                        // The first batch: finished if it is rows, removed if an error.
                        // The guarantee cards of the releases it read go beside the
                        // output first; if they cannot, the output is removed.
                        let batch = match (batch, copy.take()) {
                            (Ok(rows), Some(copy)) => copy.finish(&state).await.map(|()| rows),
                            (other, _) => other,
                        };
                        let batch = match batch {
                            Ok(b) if no_columns => RecordBatch::try_new_with_options(
                                schema.clone(),
                                vec![],
                                &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
                            )
                            .map_err(Into::into),
                            other => other,
                        };
                        let failed = batch.is_err();
                        if tx.send(batch).await.is_err() || failed {
                            break;
                        }
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                }
            }
        });
        Ok(())
    }
}
