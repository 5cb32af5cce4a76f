//! `sample_count_interval(count, cells, beta, k, confidence)`: error bars for counts of a
//! sampled and thresholded release (SafePub), from its public `beta` and `k` metadata
//! ([`crate::privacy::sample_counts`]). It reads no table, so public users may call it.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Result};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::planner::RelationPlannerContext;

use crate::params::{ParamDefault, ParamKind};
use crate::privacy::sample_counts::{count_interval, MAX_RELEASED};
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;

const NAME: &str = "sample_count_interval";

const PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "count",
        ParamKind::Integer,
        ParamDefault::Required,
        "the released rows counted (over whole released cells: any GROUP BY of the release's columns)",
    ),
    ParamSpec::new(
        "cells",
        ParamKind::Count,
        ParamDefault::Integer(1),
        "how many released cells (distinct rows of the release) the count covers",
    ),
    ParamSpec::new(
        "beta",
        ParamKind::Positive,
        ParamDefault::Required,
        "the sampling probability: the release's beta metadata",
    ),
    ParamSpec::new(
        "k",
        ParamKind::Integer,
        ParamDefault::Required,
        "the threshold a cell's sampled rows met to be released: the release's k metadata",
    ),
    ParamSpec::new(
        "confidence",
        ParamKind::Number,
        ParamDefault::Number(0.95),
        "the probability the interval holds the source's count, in (0, 1)",
    ),
];

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("count", DataType::UInt64, false),
        Field::new("cells", DataType::UInt64, false),
        Field::new("confidence", DataType::Float64, false),
        Field::new("estimate", DataType::Float64, false),
        Field::new("low", DataType::UInt64, false),
        Field::new("high", DataType::UInt64, false),
    ]))
}

/// `sample_count_interval(...)`.
#[derive(Debug, Default)]
pub struct SampleCountIntervalFunction;

impl SqlTableFunction for SampleCountIntervalFunction {
    fn name(&self) -> &'static str {
        NAME
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn about(&self) -> &'static str {
        "Error bars for the counts of a SafePub release: each source row was kept with probability beta, and a released cell (a distinct released row) was kept only if at least k of its sampled rows fell in it. For count released rows over cells released cells, one row: estimate = count / beta, the source's rows in those cells, and low .. high, an interval that holds that number with probability at least confidence given that the cells were released (conservative: docs/METHODS.md §2.14). Holds for SafePub's default independent search sample. Reads no data."
    }

    fn create(
        &self,
        args: CallArgs,
        _context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let bound = bind(
            NAME,
            PARAMS,
            &["count", "cells", "beta", "k", "confidence"],
            args,
        )?;
        let (Some(count), Some(beta), Some(k)) =
            (bound.u64("count")?, bound.f64("beta")?, bound.u64("k")?)
        else {
            return plan_err!("{NAME}(): arguments 'count', 'beta' and 'k' are required");
        };
        let cells = bound.u64("cells")?.unwrap_or(1);
        let confidence = bound.f64("confidence")?.unwrap_or(0.95);
        if count > MAX_RELEASED {
            return plan_err!("{NAME}(): invalid parameter count: {count} is above {MAX_RELEASED}");
        }
        if beta > 1.0 {
            return plan_err!("{NAME}(): invalid parameter beta: {beta} is above 1");
        }
        if !(confidence > 0.0 && confidence < 1.0) {
            return plan_err!(
                "{NAME}(): invalid parameter confidence: {confidence} is not in (0, 1)"
            );
        }
        let Some(found) = count_interval(count, cells, beta, k, confidence) else {
            return plan_err!(
                "{NAME}(): invalid parameter count: {count} rows cannot fill {cells} released cells of at least k = {k} rows"
            );
        };
        let columns: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(vec![count])),
            Arc::new(UInt64Array::from(vec![cells])),
            Arc::new(Float64Array::from(vec![confidence])),
            Arc::new(Float64Array::from(vec![found.estimate])),
            Arc::new(UInt64Array::from(vec![found.low])),
            Arc::new(UInt64Array::from(vec![found.high])),
        ];
        let batch = RecordBatch::try_new(schema(), columns)?;
        Ok(Arc::new(MemTable::try_new(schema(), vec![vec![batch]])?))
    }
}
