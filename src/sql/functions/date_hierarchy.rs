//! `date_hierarchy(...)`: the days of a date range, or the distinct days of a table's
//! column, as a hierarchy table, coarsened to weeks, months, quarters, years and spans of
//! years ([`crate::hierarchy::dates`]).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Date32Type};
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_err, plan_err, Column, DataFusionError, Result};
use datafusion::datasource::MemTable;
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;
use datafusion::logical_expr::{cast as cast_expr, Expr};
use datafusion::prelude::SessionContext;

use super::anonymize_assess::table;
use super::interval_hierarchy::{hierarchy_schema, rows_to_batch};
use crate::hierarchy::builders::MAX_HIERARCHY_VALUES;
use crate::hierarchy::dates::{
    date_hierarchy_rows, is_date_type, parse_date_domain, parse_date_levels, rows_of_days,
    DateLevel,
};
use crate::hierarchy::Hierarchy;
use crate::params::{ParamDefault, ParamKind};
use crate::session::reading_error;
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::columns::resolve_column;
use crate::sql::planner::SqlTableFunction;
use crate::tables::lazy::{Cached, Compute, LazyTable};

const FUNCTION: &str = "date_hierarchy";

/// The levels when none are given.
const DEFAULT_LEVELS: &str = "month|quarter|year";

const DATE_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "domain",
        ParamKind::Text,
        ParamDefault::Optional("none: the distinct days of source's column"),
        "the days, as a range of ISO dates 'first..last', e.g. '2015-01-01..2019-12-31'; at most 1000000 days",
    ),
    ParamSpec::new(
        "levels",
        ParamKind::Text,
        ParamDefault::Optional("'month|quarter|year'"),
        "levels from the finest, separated by '|' (the day is the value; a leading 'day' may name it), among week (ISO, '2019-W11'; the last level if given), month ('2019-03'), quarter ('2019-Q1'), year ('2019'), 5y ('2015-2019') and 10y ('2010-2019')",
    ),
    ParamSpec::new(
        "source",
        ParamKind::Text,
        ParamDefault::Optional("none"),
        "instead of a domain: a table whose column's distinct days (read when the hierarchy is first scanned) are the values; the hierarchy then lists exactly the days present, so keep it owner-side, and use a domain with date_shift (shifted days are others)",
    ),
    ParamSpec::new(
        "column",
        ParamKind::Text,
        ParamDefault::Optional("none"),
        "with source: the DATE or TIMESTAMP column (a timestamp is read as its day)",
    ),
];

/// The distinct days of a table's column, read when first scanned.
#[derive(Debug)]
struct ColumnDays {
    source_name: String,
    source: Arc<dyn TableProvider>,
    column: String,
    levels: Vec<DateLevel>,
}

#[async_trait]
impl Compute for ColumnDays {
    async fn compute(&self, state: &SessionState) -> Result<Vec<RecordBatch>> {
        let ctx = SessionContext::new_with_state(state.clone());
        let column = Expr::Column(Column::new_unqualified(&self.column));
        let batches = ctx
            .read_table(self.source.clone())?
            .filter(column.clone().is_not_null())?
            .aggregate(
                vec![cast_expr(column, DataType::Date32).alias("day")],
                vec![],
            )?
            .sort(vec![
                Expr::Column(Column::new_unqualified("day")).sort(true, false)
            ])?
            .limit(0, Some(MAX_HIERARCHY_VALUES + 1))?
            .collect()
            .await
            .map_err(|e| reading_error(FUNCTION, &format!("table '{}'", self.source_name), e))?;
        let mut days = Vec::new();
        for batch in &batches {
            let values = cast(batch.column(0), &DataType::Date32)?;
            let values = values.as_primitive::<Date32Type>();
            days.extend((0..values.len()).filter_map(|i| values.value_as_date(i)));
        }
        if days.len() > MAX_HIERARCHY_VALUES {
            return exec_err!(
                "{FUNCTION}(): column '{}' of table '{}' has more than {MAX_HIERARCHY_VALUES} distinct days",
                self.column,
                self.source_name
            );
        }
        if days.is_empty() {
            return exec_err!(
                "{FUNCTION}(): column '{}' of table '{}' has no dates",
                self.column,
                self.source_name
            );
        }
        let count = days.len();
        let rows = rows_of_days(days.into_iter(), count, &self.levels)
            .map_err(|e| DataFusionError::Execution(format!("{FUNCTION}(): {e}")))?;
        Ok(vec![rows_to_batch(&rows)?])
    }
}

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
        "Builds a date hierarchy (ARX layout: value, level_1, ..., '*') of every day of a range (domain), or of the distinct days of a table's date column (source, column): the value is the day as 'YYYY-MM-DD' (a DATE column's text), each level a coarser label that sorts in time order. A DATE or TIMESTAMP quasi-identifier (a timestamp read as its day) takes it in every lattice method (qi => 'admitted:my_dates'). At most 1000000 days and 5000000 cells."
    }
    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let bound = bind(FUNCTION, DATE_PARAMS, &["domain", "levels"], args)?;
        let built = |e: &dyn std::fmt::Display| DataFusionError::Plan(format!("{FUNCTION}(): {e}"));
        let levels = bound
            .string("levels")?
            .unwrap_or_else(|| DEFAULT_LEVELS.to_string());
        let levels = parse_date_levels(&levels).map_err(|e| built(&e))?;
        let domain = bound.string("domain")?;
        let (source, column) = (bound.string("source")?, bound.string("column")?);
        let (first, last) = match (domain, source, column) {
            (Some(domain), None, None) => parse_date_domain(&domain).map_err(|e| built(&e))?,
            (None, Some(source_name), Some(column)) => {
                let source = table(FUNCTION, context, &source_name, "table")?;
                let schema = source.schema();
                let reference = crate::names::parse_list("column", &column, false)?;
                let [item] = reference.as_slice() else {
                    return plan_err!("{FUNCTION}(): 'column' must name one column, got '{column}'");
                };
                let column = resolve_column(FUNCTION, &schema, &source_name, &item.column, ("column", &column))?;
                let data_type = schema.field_with_name(&column)?.data_type();
                if !is_date_type(data_type) {
                    return plan_err!(
                        "{FUNCTION}(): column '{column}' is {data_type}, not a DATE or TIMESTAMP; cast it in a view, or give a domain"
                    );
                }
                let days = ColumnDays {
                    source_name,
                    source,
                    column,
                    levels: levels.clone(),
                };
                return Ok(Arc::new(LazyTable::new(
                    hierarchy_schema(levels.len() + 1),
                    Arc::new(Cached::new(days)),
                )));
            }
            (Some(_), _, _) => {
                return plan_err!("{FUNCTION}(): give a domain, or source and column, not both")
            }
            _ => {
                return plan_err!(
                    "{FUNCTION}(): give the days: domain => 'first..last', or source => '<table>', column => '<date column>'"
                )
            }
        };
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
