//! `top_bottom_hierarchy(...)`: top and bottom coding of an integer column as a hierarchy
//! table ([`crate::hierarchy::top_bottom`]).

use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, DataFusionError, Result, ScalarValue};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::planner::RelationPlannerContext;

use super::interval_hierarchy::rows_to_batch;
use crate::hierarchy::builders::parse_integer_domain;
use crate::hierarchy::top_bottom::{top_bottom_rows, TopBottom};
use crate::hierarchy::Hierarchy;
use crate::params::{shown, ParamDefault, ParamKind};
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;

const FUNCTION: &str = "top_bottom_hierarchy";

const TOP_BOTTOM_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "domain",
        ParamKind::Text,
        ParamDefault::Required,
        "integer leaves, e.g. '0..120' (as interval_hierarchy takes them); at most 1000000 values",
    ),
    ParamSpec::new(
        "bottom",
        ParamKind::Integer,
        ParamDefault::Optional("none: no bottom coding"),
        "values below this integer become one label '<bottom'",
    ),
    ParamSpec::new(
        "top",
        ParamKind::Integer,
        ParamDefault::Optional("none: no top coding"),
        "values at or above this integer become one label '>=top'",
    ),
    ParamSpec::new(
        "step",
        ParamKind::Text,
        ParamDefault::Optional("none: the coded values, then '*'"),
        "widths of further levels grouping the values between bottom and top into intervals counted from bottom, e.g. 5 or '5|10' (each a multiple of the one before)",
    ),
];

/// An integer argument that may be negative (`bottom => -10`), or numeric text.
fn integer(name: &str, value: &ScalarValue) -> Result<i64> {
    let n = match value {
        ScalarValue::Int64(Some(n)) => Some(*n),
        ScalarValue::Int32(Some(n)) => Some(i64::from(*n)),
        ScalarValue::UInt64(Some(n)) => i64::try_from(*n).ok(),
        ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => s.trim().parse().ok(),
        _ => None,
    };
    match n {
        Some(n) => Ok(n),
        None => plan_err!(
            "{FUNCTION}(): argument '{name}' must be an integer, got {}",
            shown(value)
        ),
    }
}

/// `step => 5` or `step => '5|10|20'`.
fn steps(value: &ScalarValue) -> Result<Vec<i64>> {
    match value {
        ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => s
            .split('|')
            .map(|part| integer("step", &ScalarValue::Utf8(Some(part.trim().to_string()))))
            .collect(),
        other => Ok(vec![integer("step", other)?]),
    }
}

/// `top_bottom_hierarchy(domain, bottom => ..., top => ..., step => ...)`.
#[derive(Debug)]
pub struct TopBottomHierarchyFunction;

impl SqlTableFunction for TopBottomHierarchyFunction {
    fn name(&self) -> &'static str {
        FUNCTION
    }
    fn params(&self) -> &'static [ParamSpec] {
        TOP_BOTTOM_PARAMS
    }
    fn about(&self) -> &'static str {
        "Builds a top/bottom-coding hierarchy (ARX layout: value, level_1, ..., '*') of an integer domain: level 1 codes the values below bottom as '<bottom' and those at or above top as '>=top' and keeps the others; each step adds a level grouping the kept values into intervals of that width counted from bottom (the coded labels stay); the last level is '*'. As sdcMicro's topBotCoding, usable by every lattice method. At most 1000000 values and 5000000 cells."
    }
    fn create(
        &self,
        args: CallArgs,
        _context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let bound = bind(FUNCTION, TOP_BOTTOM_PARAMS, &["domain"], args)?;
        let built = |e: &dyn std::fmt::Display| DataFusionError::Plan(format!("{FUNCTION}(): {e}"));
        let domain =
            parse_integer_domain(&bound.required_string("domain")?).map_err(|e| built(&e))?;
        let values = bound.values();
        let coding = TopBottom {
            bottom: values
                .get("bottom")
                .map(|v| integer("bottom", v))
                .transpose()?,
            top: values.get("top").map(|v| integer("top", v)).transpose()?,
            steps: values
                .get("step")
                .map(steps)
                .transpose()?
                .unwrap_or_default(),
        };
        let rows = top_bottom_rows(&domain, &coding).map_err(|e| built(&e))?;
        Hierarchy::from_rows(FUNCTION, &rows)
            .map_err(|e| DataFusionError::Plan(e.built_by(FUNCTION)))?;
        let batch = rows_to_batch(&rows)?;
        Ok(Arc::new(MemTable::try_new(
            batch.schema(),
            vec![vec![batch]],
        )?))
    }
}
