//! A table computed on the client and carried, inside a plan, to the processes of a
//! cluster that scan it: [`ShippedTable`] in logical plans, [`ShippedExec`] in physical
//! ones. Both hold a [`Shipped`] — a release's compact form or a small table's batches —
//! and only ever expand it; nothing is drawn again where it is scanned.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_err, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};

use crate::release::ReleasedRows;

/// Rows computed on the client, in the form they travel in.
#[derive(Debug, Clone)]
pub enum Shipped {
    /// A release: its histogram, expanded into rows where it is scanned.
    Release(ReleasedRows),
    /// Any other table (metadata, a budget read-out, a hierarchy): its batches.
    Batches {
        /// The batches' schema.
        schema: SchemaRef,
        /// The rows.
        batches: Arc<Vec<RecordBatch>>,
    },
}

impl Shipped {
    /// The schema of the rows.
    pub fn schema(&self) -> SchemaRef {
        match self {
            Self::Release(rows) => rows.schema().clone(),
            Self::Batches { schema, .. } => schema.clone(),
        }
    }

    /// The same rows with only the columns `projection` names (all when `None`).
    pub fn project(&self, projection: Option<&[usize]>) -> Result<Self> {
        let Some(projection) = projection else {
            return Ok(self.clone());
        };
        Ok(match self {
            Self::Release(rows) => Self::Release(rows.project(projection)?),
            Self::Batches { schema, batches } => Self::Batches {
                schema: Arc::new(schema.project(projection)?),
                batches: Arc::new(
                    batches
                        .iter()
                        .map(|b| b.project(projection))
                        .collect::<std::result::Result<_, _>>()?,
                ),
            },
        })
    }

    /// The rows, batch by batch (a release is expanded as the iterator advances).
    pub fn batches(&self) -> Box<dyn Iterator<Item = Result<RecordBatch>> + Send> {
        match self {
            Self::Release(rows) => Box::new(rows.batches()),
            Self::Batches { batches, .. } => {
                let batches = batches.clone();
                Box::new((0..batches.len()).map(move |i| Ok(batches[i].clone())))
            }
        }
    }
}

/// A table provider serving [`Shipped`] rows.
#[derive(Debug)]
pub struct ShippedTable {
    shipped: Shipped,
}

impl ShippedTable {
    /// A provider of `shipped`'s rows.
    pub fn new(shipped: Shipped) -> Self {
        Self { shipped }
    }

    /// The rows it serves.
    pub fn shipped(&self) -> &Shipped {
        &self.shipped
    }
}

#[async_trait]
impl TableProvider for ShippedTable {
    fn schema(&self) -> SchemaRef {
        self.shipped.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let shipped = self.shipped.project(projection.map(Vec::as_slice))?;
        Ok(Arc::new(ShippedExec::new(shipped)))
    }
}

/// The scan of a [`ShippedTable`]: one partition producing its rows in order.
#[derive(Debug)]
pub struct ShippedExec {
    shipped: Shipped,
    properties: Arc<PlanProperties>,
}

impl ShippedExec {
    /// A scan of `shipped`'s rows.
    pub fn new(shipped: Shipped) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(shipped.schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Self {
            shipped,
            properties: Arc::new(properties),
        }
    }

    /// The rows it produces.
    pub fn shipped(&self) -> &Shipped {
        &self.shipped
    }
}

impl DisplayAs for ShippedExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.shipped {
            Shipped::Release(rows) => write!(
                f,
                "ShippedExec: release of {} rows from {} histogram entries",
                rows.row_count(),
                rows.histogram().counts.len()
            ),
            Shipped::Batches { batches, .. } => {
                write!(f, "ShippedExec: {} batches", batches.len())
            }
        }
    }
}

impl ExecutionPlan for ShippedExec {
    fn name(&self) -> &str {
        "ShippedExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            internal_err!("ShippedExec has no inputs")
        }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!("ShippedExec has one partition, not {}", partition + 1);
        }
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.shipped.schema(),
            futures::stream::iter(self.shipped.batches()),
        )))
    }
}
