//! A one-partition plan whose batches come through a channel from a producer that
//! `execute` starts (on a thread, or on the package's runtime): the host polls only the
//! channel, which needs no runtime.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{exec_err, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::channel::mpsc;

/// Where a producer sends its batches; a failed send means the reader is gone.
pub type Sender = mpsc::Sender<Result<RecordBatch>>;

/// What a [`ChannelExec`] runs when executed.
pub trait Producer: fmt::Debug + Send + Sync {
    /// The plan's name, as EXPLAIN shows it.
    fn name(&self) -> &str;
    /// Starts sending the batches to `tx` and returns at once.
    fn start(&self, tx: Sender) -> Result<()>;
}

/// The plan of one [`Producer`].
#[derive(Debug)]
pub struct ChannelExec {
    producer: Arc<dyn Producer>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl ChannelExec {
    /// The batches of `producer`, of `schema`.
    pub fn new(schema: SchemaRef, producer: Arc<dyn Producer>) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        Self {
            producer,
            schema,
            properties,
        }
    }
}

impl DisplayAs for ChannelExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.producer.name())
    }
}

impl ExecutionPlan for ChannelExec {
    fn name(&self) -> &str {
        self.producer.name()
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return exec_err!(
                "{} has one partition, not {partition}",
                self.producer.name()
            );
        }
        let (tx, rx) = mpsc::channel(2);
        self.producer.start(tx)?;
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            rx,
        )))
    }
}
