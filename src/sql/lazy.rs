//! A table provider whose rows are produced once, on first scan, and served from memory
//! afterwards (every scan returns the same batches).

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{internal_err, Result};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::execution::SessionState;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::ExecutionPlan;

/// Produces the rows of a [`LazyTable`]; implementations cache their result.
#[async_trait]
pub trait BatchProducer: Debug + Send + Sync {
    /// The rows (computed on the first call, cached afterwards).
    async fn batches(&self, state: &SessionState) -> Result<Arc<Vec<RecordBatch>>>;
}

/// A provider with a fixed schema whose rows come from a [`BatchProducer`].
#[derive(Debug)]
pub struct LazyTable {
    schema: SchemaRef,
    producer: Arc<dyn BatchProducer>,
}

impl LazyTable {
    /// A provider serving `producer`'s rows under `schema`.
    pub fn new(schema: SchemaRef, producer: Arc<dyn BatchProducer>) -> Self {
        Self { schema, producer }
    }
}

/// The `SessionState` behind a `&dyn Session`.
pub fn session_state(session: &dyn Session) -> Result<&SessionState> {
    match session.as_any().downcast_ref::<SessionState>() {
        Some(state) => Ok(state),
        None => internal_err!("anonymization tables need a DataFusion SessionState"),
    }
}

#[async_trait]
impl TableProvider for LazyTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let state = session_state(state)?;
        let batches = self.producer.batches(state).await?;
        let exec = MemorySourceConfig::try_new_exec(
            &[batches.as_ref().clone()],
            self.schema.clone(),
            projection.cloned(),
        )?;
        Ok(exec)
    }
}
