//! Plan codecs that carry [`ShippedTable`]s and [`ShippedExec`]s between processes.
//!
//! Each wraps another codec (Ballista's, which knows its shuffle nodes and file formats)
//! and handles only our two node kinds, which it recognises by a magic prefix (`wire::MAGIC`); everything
//! else goes to the wrapped codec unchanged. The client's session, the scheduler and every
//! executor must use them (`dfanon --ballista`, `dfanon-scheduler` and `dfanon-executor`
//! do).

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Result, TableReference};

use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::datasource::MemTable;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{
    AggregateUDF, Extension, HigherOrderUDF, LogicalPlan, ScalarUDF, WindowUDF,
};
use datafusion::physical_expr_common::physical_expr::proto_decode::PhysicalExprDecodeCtx;
use datafusion::physical_expr_common::physical_expr::proto_encode::PhysicalExprEncodeCtx;
use datafusion::physical_plan::{ExecutionPlan, PhysicalExpr};
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};

use datafusion_anonymize::distributed::wire;
use datafusion_anonymize::distributed::{ShippedExec, ShippedTable};

/// The function codecs (scalar, higher-order, aggregate and window functions) both our
/// codecs delegate unchanged to the codec they wrap.
macro_rules! delegate_function_codecs {
    () => {
        fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
            self.inner.try_decode_udf(name, buf)
        }

        fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
            self.inner.try_encode_udf(node, buf)
        }

        fn try_decode_higher_order_function(
            &self,
            name: &str,
            buf: &[u8],
        ) -> Result<Arc<HigherOrderUDF>> {
            self.inner.try_decode_higher_order_function(name, buf)
        }

        fn try_encode_higher_order_function(
            &self,
            node: &HigherOrderUDF,
            buf: &mut Vec<u8>,
        ) -> Result<()> {
            self.inner.try_encode_higher_order_function(node, buf)
        }

        fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> Result<Arc<AggregateUDF>> {
            self.inner.try_decode_udaf(name, buf)
        }

        fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> Result<()> {
            self.inner.try_encode_udaf(node, buf)
        }

        fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> Result<Arc<WindowUDF>> {
            self.inner.try_decode_udwf(name, buf)
        }

        fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> Result<()> {
            self.inner.try_encode_udwf(node, buf)
        }
    };
}

/// Logical codec: [`ShippedTable`]s travel as bytes (`wire.rs`).
#[derive(Debug)]
pub struct AnonymizeLogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
}

impl AnonymizeLogicalCodec {
    /// Our codec in front of `inner`.
    pub fn new(inner: Arc<dyn LogicalExtensionCodec>) -> Self {
        Self { inner }
    }
}

impl LogicalExtensionCodec for AnonymizeLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> Result<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        if wire::is_encoded(buf) {
            Ok(Arc::new(ShippedTable::new(wire::decode(buf)?)))
        } else {
            self.inner
                .try_decode_table_provider(buf, table_ref, schema, ctx)
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let any: &dyn std::any::Any = node.as_ref();
        if let Some(table) = any.downcast_ref::<ShippedTable>() {
            return wire::encode(table.shipped(), buf);
        }
        if any.is::<MemTable>() {
            return plan_err!(
                "table '{table_ref}' is held in this client's memory (CREATE TABLE, a registered batch), which a cluster cannot read; write it to Parquet and read it back with CREATE EXTERNAL TABLE ... STORED AS PARQUET"
            );
        }
        self.inner.try_encode_table_provider(table_ref, node, buf)
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> Result<()> {
        self.inner.try_encode_file_format(buf, node)
    }

    delegate_function_codecs!();
}

/// Physical codec: [`ShippedExec`]s travel as bytes (`wire.rs`).
#[derive(Debug)]
pub struct AnonymizePhysicalCodec {
    inner: Arc<dyn PhysicalExtensionCodec>,
}

impl AnonymizePhysicalCodec {
    /// Our codec in front of `inner`.
    pub fn new(inner: Arc<dyn PhysicalExtensionCodec>) -> Self {
        Self { inner }
    }
}

impl PhysicalExtensionCodec for AnonymizePhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if wire::is_encoded(buf) {
            Ok(Arc::new(ShippedExec::new(wire::decode(buf)?)))
        } else {
            self.inner.try_decode(buf, inputs, ctx, proto_converter)
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        if let Some(exec) = node.downcast_ref::<ShippedExec>() {
            return wire::encode(exec.shipped(), buf);
        }
        self.inner.try_encode(node, buf, proto_converter)
    }

    fn try_decode_expr(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn PhysicalExpr>],
        ctx: &PhysicalExprDecodeCtx<'_>,
    ) -> Result<Arc<dyn PhysicalExpr>> {
        self.inner.try_decode_expr(buf, inputs, ctx)
    }

    fn try_encode_expr(
        &self,
        node: &Arc<dyn PhysicalExpr>,
        buf: &mut Vec<u8>,
        ctx: &PhysicalExprEncodeCtx<'_>,
    ) -> Result<()> {
        self.inner.try_encode_expr(node, buf, ctx)
    }

    delegate_function_codecs!();
}
