//! `date_hierarchy(...)`: the days of a date range as a hierarchy table, coarsened to
//! weeks, months, quarters, years and spans of years ([`crate::hierarchy::dates`]).

use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::planner::RelationPlannerContext;

use super::interval_hierarchy::rows_to_batch;
use crate::hierarchy::dates::{date_hierarchy_rows, parse_date_domain, parse_date_levels};
use crate::hierarchy::Hierarchy;
use crate::params::{ParamDefault, ParamKind};
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;

const FUNCTION: &str = "date_hierarchy";

/// The levels when none are given.
const DEFAULT_LEVELS: &str = "month|quarter|year";

const DATE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "domain",
        ParamKind::Text,
        ParamDefault::Required,
        "the days, as a range of ISO dates 'first..last', e.g. '2015-01-01..2019-12-31'; at most 1000000 days",
    ),
    ParamSpec::new(
        "levels",
        ParamKind::Text,
        ParamDefault::Optional("'month|quarter|year'"),
        "levels from the finest, separated by '|', among week (ISO, '2019-W11'; the last level if given), month ('2019-03'), quarter ('2019-Q1'), year ('2019'), 5y ('2015-2019') and 10y ('2010-2019')",
    ),
];

/// `date_hierarchy(domain, levels => ...)`.
#[derive(Debug)]
pub struct DateHierarchyFunction;

impl SqlTableFunction for DateHierarchyFunction {
    fn name(&self) -> &'static str {
        FUNCTION
    }
    fn params(&self) -> &'static [ParamSpec] {
        DATE_PARAMS
    }
    fn about(&self) -> &'static str {
        "Builds a date hierarchy (ARX layout: value, level_1, ..., '*') of every day of a range: the value is the day as 'YYYY-MM-DD' (a DATE column's text), each level a coarser label that sorts in time order. A DATE quasi-identifier takes it in every lattice method (qi => 'admitted:my_dates'). At most 1000000 days and 5000000 cells."
    }
    fn create(
        &self,
        args: CallArgs,
        _context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let bound = bind(FUNCTION, DATE_PARAMS, &["domain", "levels"], args)?;
        let built = |e: &dyn std::fmt::Display| DataFusionError::Plan(format!("{FUNCTION}(): {e}"));
        let (first, last) =
            parse_date_domain(&bound.required_string("domain")?).map_err(|e| built(&e))?;
        let levels = bound
            .string("levels")?
            .unwrap_or_else(|| DEFAULT_LEVELS.to_string());
        let levels = parse_date_levels(&levels).map_err(|e| built(&e))?;
        let rows = date_hierarchy_rows(first, last, &levels).map_err(|e| built(&e))?;
        Hierarchy::from_rows(FUNCTION, &rows)
            .map_err(|e| DataFusionError::Plan(e.built_by(FUNCTION)))?;
        let batch = rows_to_batch(&rows)?;
        Ok(Arc::new(MemTable::try_new(
            batch.schema(),
            vec![vec![batch]],
        )?))
    }
}
