//! A table provider whose rows are produced once, when a query reading them first
//! executes, and served from memory afterwards (every scan returns the same batches).
//!
//! Planning never produces the rows: `scan` returns a plan whose single partition asks the
//! producer for its batches only when it is executed. So `EXPLAIN`, `CREATE VIEW` and
//! building a DataFrame compute nothing; `SELECT`, `CREATE TABLE AS`, `COPY` and
//! `EXPLAIN ANALYZE` do (once — the producer caches).

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{internal_err, DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use futures::{StreamExt, TryStreamExt};
use tokio::sync::OnceCell;

use super::shipped::Shipped;

/// Produces the rows of a [`LazyTable`]; implementations cache their result.
#[async_trait]
pub trait BatchProducer: Debug + Send + Sync {
    /// The rows (computed on the first call, cached afterwards).
    async fn batches(&self, state: &SessionState) -> Result<Arc<dyn BatchSource>>;

    /// The cache entry of the release whose rows these are, when they are a release's
    /// (`anonymize(...)`; the entry is a `crate::releases::CacheEntry`): what a `COPY` of
    /// them writes a guarantee card for.
    fn release_entry(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        None
    }
}

/// How a table's rows are computed, for [`Cached`].
#[async_trait]
pub trait Compute: Debug + Send + Sync {
    /// The rows, computed in `state`.
    async fn compute(&self, state: &SessionState) -> Result<Vec<RecordBatch>>;
}

/// A [`BatchProducer`] that computes its rows with a [`Compute`] on the first call and
/// serves them from memory afterwards.
#[derive(Debug)]
pub struct Cached<T> {
    compute: T,
    cell: OnceCell<Arc<Vec<RecordBatch>>>,
}

impl<T> Cached<T> {
    /// Rows computed by `compute`, not yet computed.
    pub fn new(compute: T) -> Self {
        Self {
            compute,
            cell: OnceCell::new(),
        }
    }
}

#[async_trait]
impl<T: Compute> BatchProducer for Cached<T> {
    async fn batches(&self, state: &SessionState) -> Result<Arc<dyn BatchSource>> {
        let batches = self
            .cell
            .get_or_try_init(|| async {
                Ok::<_, DataFusionError>(Arc::new(self.compute.compute(state).await?))
            })
            .await?;
        Ok(batches.clone() as Arc<dyn BatchSource>)
    }
}

/// A [`BatchProducer`] over rows already computed (a release served to a function that
/// reads it as a table).
#[derive(Debug)]
pub struct Ready(pub Arc<dyn BatchSource>);

#[async_trait]
impl BatchProducer for Ready {
    async fn batches(&self, _state: &SessionState) -> Result<Arc<dyn BatchSource>> {
        Ok(self.0.clone())
    }
}

/// Rows a [`BatchProducer`] has computed, read batch by batch: every call of
/// [`BatchSource::iter`] starts again from the first batch.
pub trait BatchSource: Debug + Send + Sync {
    /// The batches with the columns `projection` names (all when `None`), produced as the
    /// iterator is advanced.
    fn iter(
        &self,
        projection: Option<&[usize]>,
    ) -> Result<Box<dyn Iterator<Item = Result<RecordBatch>> + Send>>;

    /// The rows in the form they travel to a cluster in, under `schema` (the table's).
    fn ship(&self, schema: &SchemaRef) -> Result<Shipped>;
}

/// Batches held in memory.
impl BatchSource for Vec<RecordBatch> {
    fn iter(
        &self,
        projection: Option<&[usize]>,
    ) -> Result<Box<dyn Iterator<Item = Result<RecordBatch>> + Send>> {
        let batches = self.clone();
        Ok(match projection.map(<[usize]>::to_vec) {
            None => Box::new(batches.into_iter().map(Ok)),
            Some(p) => Box::new(
                batches
                    .into_iter()
                    .map(move |b| b.project(&p).map_err(Into::into)),
            ),
        })
    }

    fn ship(&self, schema: &SchemaRef) -> Result<Shipped> {
        Ok(Shipped::Batches {
            schema: schema.clone(),
            batches: Arc::new(self.clone()),
        })
    }
}

/// Rows expanded batch by batch from a compact form (a release, a counterfeit catalog), in
/// which a projection decides which columns are built at all.
pub trait ProjectedRows: Clone + Debug + Send + Sync + 'static {
    /// The batches of every column the rows currently produce.
    type Batches: Iterator<Item = Result<RecordBatch>> + Send + 'static;
    /// The same rows restricted to the columns `projection` names.
    fn project(&self, projection: &[usize]) -> Result<Self>;
    /// The batches, produced as the iterator is advanced.
    fn batches(&self) -> Self::Batches;
    /// The rows in the form they travel to a cluster in: by default every batch.
    fn ship(&self, schema: &SchemaRef) -> Result<Shipped> {
        Ok(Shipped::Batches {
            schema: schema.clone(),
            batches: Arc::new(self.batches().collect::<Result<_>>()?),
        })
    }
}

impl<T: ProjectedRows> BatchSource for T {
    fn iter(
        &self,
        projection: Option<&[usize]>,
    ) -> Result<Box<dyn Iterator<Item = Result<RecordBatch>> + Send>> {
        Ok(match projection {
            None => Box::new(ProjectedRows::batches(self)),
            Some(p) => Box::new(ProjectedRows::batches(&ProjectedRows::project(self, p)?)),
        })
    }

    fn ship(&self, schema: &SchemaRef) -> Result<Shipped> {
        ProjectedRows::ship(self, schema)
    }
}

/// A release travels as its histogram, never as rows.
impl ProjectedRows for crate::release::ReleasedRows {
    type Batches = crate::release::ReleaseBatches;
    fn project(&self, projection: &[usize]) -> Result<Self> {
        Self::project(self, projection)
    }
    fn batches(&self) -> Self::Batches {
        Self::batches(self)
    }
    fn ship(&self, _schema: &SchemaRef) -> Result<Shipped> {
        Ok(Shipped::Release(self.clone()))
    }
}

impl ProjectedRows for crate::release::catalog::CatalogRows {
    type Batches = crate::release::catalog::CatalogBatches;
    fn project(&self, projection: &[usize]) -> Result<Self> {
        Self::project(self, projection)
    }
    fn batches(&self) -> Self::Batches {
        Self::batches(self)
    }
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

    /// What computes the rows.
    pub fn producer(&self) -> &Arc<dyn BatchProducer> {
        &self.producer
    }

    /// The rows (computed now if they were not yet) in the form they travel to a cluster.
    pub async fn shipped(&self, state: &SessionState) -> Result<Shipped> {
        self.producer.batches(state).await?.ship(&self.schema)
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
        // The partition produces the projected columns itself (a release builds only
        // those), so the plan applies no projection of its own.
        let schema = match projection {
            Some(p) => Arc::new(self.schema.project(p)?),
            None => self.schema.clone(),
        };
        let partition = DeferredPartition {
            schema: schema.clone(),
            projection: projection.cloned(),
            producer: self.producer.clone(),
            state: session_state(state)?.clone(),
        };
        let exec = StreamingTableExec::try_new(
            schema,
            vec![Arc::new(partition)],
            None,
            Vec::new(),
            false,
            None,
        )?;
        Ok(Arc::new(exec))
    }
}

/// The one partition of a [`LazyTable`] scan: asks the producer for its batches when
/// executed, not when planned.
struct DeferredPartition {
    /// The projected schema.
    schema: SchemaRef,
    /// Columns of the table's schema to produce (all when `None`).
    projection: Option<Vec<usize>>,
    producer: Arc<dyn BatchProducer>,
    state: SessionState,
}

impl Debug for DeferredPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredPartition")
            .field("producer", &self.producer)
            .finish_non_exhaustive()
    }
}

impl PartitionStream for DeferredPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let producer = self.producer.clone();
        let state = self.state.clone();
        let projection = self.projection.clone();
        let batches = futures::stream::once(async move {
            let source = producer.batches(&state).await?;
            source.iter(projection.as_deref())
        })
        .map_ok(futures::stream::iter)
        .try_flatten();
        Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            batches.boxed(),
        ))
    }
}
