//! `dp_noise_interval(scale, cells, confidence)`: the exact interval of the noise on a sum
//! of `cells` released counts that each carry discrete Laplace noise of scale `scale`
//! ([`crate::mechanism::noise::sum_noise`]). It reads no table: the scale and the number
//! of cells are public (a release's metadata), so public users may call it.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Result};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::planner::RelationPlannerContext;

use crate::mechanism::noise::sum_noise;
use crate::params::{ParamDefault, ParamKind};
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;

const NAME: &str = "dp_noise_interval";

const PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "scale",
        ParamKind::Positive,
        ParamDefault::Required,
        "the noise scale of one cell: the noise_scale metadata of the release (1/epsilon for dp_histogram)",
    ),
    ParamSpec::new(
        "cells",
        ParamKind::Count,
        ParamDefault::Integer(1),
        "how many released cells the sum adds (1: one count)",
    ),
    ParamSpec::new(
        "confidence",
        ParamKind::Number,
        ParamDefault::Number(0.95),
        "the probability the interval holds the noise, in (0, 1)",
    ),
];

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("scale", DataType::Float64, false),
        Field::new("cells", DataType::UInt64, false),
        Field::new("confidence", DataType::Float64, false),
        Field::new("half_width", DataType::UInt64, false),
        Field::new("coverage", DataType::Float64, false),
        Field::new("standard_deviation", DataType::Float64, false),
    ]))
}

/// `dp_noise_interval(...)`.
#[derive(Debug, Default)]
pub struct NoiseIntervalFunction;

impl SqlTableFunction for NoiseIntervalFunction {
    fn name(&self) -> &'static str {
        NAME
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn about(&self) -> &'static str {
        "Error bars for differentially private counts: the exact interval of the noise on a sum of cells released counts that each carry two-sided geometric (discrete Laplace) noise of scale scale (dp_histogram's cells: scale 1/epsilon, the release's noise_scale metadata). One row: half_width, the smallest q with P(|noise| <= q) >= confidence, its exact coverage, and the noise's standard deviation. A released sum s then lies within s - q .. s + q of the true one with that probability (cells clamped at 0 excepted: clamping only raises a count). Reads no data."
    }

    fn create(
        &self,
        args: CallArgs,
        _context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let bound = bind(NAME, PARAMS, &["scale", "cells", "confidence"], args)?;
        let scale = match bound.f64("scale")? {
            Some(s) => s,
            None => return plan_err!("{NAME}(): argument 'scale' is required"),
        };
        let cells = bound.u64("cells")?.unwrap_or(1);
        let confidence = bound.f64("confidence")?.unwrap_or(0.95);
        let noise = sum_noise(scale, cells, confidence)
            .map_err(|e| datafusion::error::DataFusionError::Plan(format!("{NAME}(): {e}")))?;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Float64Array::from(vec![scale])),
            Arc::new(UInt64Array::from(vec![cells])),
            Arc::new(Float64Array::from(vec![confidence])),
            Arc::new(UInt64Array::from(vec![noise.half_width])),
            Arc::new(Float64Array::from(vec![noise.coverage])),
            Arc::new(Float64Array::from(vec![noise.standard_deviation])),
        ];
        let batch = RecordBatch::try_new(schema(), columns)?;
        Ok(Arc::new(MemTable::try_new(schema(), vec![vec![batch]])?))
    }
}
