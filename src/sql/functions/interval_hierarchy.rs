//! `interval_hierarchy(...)`: a hierarchy of numeric interval ladders in ARX layout, and the
//! hierarchy table layout (schema, rows to a batch) `mask_hierarchy(...)` shares.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, DataFusionError, Result, ScalarValue};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::planner::RelationPlannerContext;

use crate::hierarchy::builders::{
    interval_hierarchy_rows, parse_integer_domain, BuildError, IntervalLevel,
};
use crate::hierarchy::Hierarchy;
use crate::params::{ParamDefault, ParamKind};
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;

/// Schema of a hierarchy table with `levels` generalization levels.
pub fn hierarchy_schema(levels: usize) -> SchemaRef {
    let mut fields = vec![Field::new("value", DataType::Utf8, false)];
    fields.extend((1..=levels).map(|l| Field::new(format!("level_{l}"), DataType::Utf8, false)));
    Arc::new(Schema::new(fields))
}

/// ARX-layout rows as one batch.
pub fn rows_to_batch(rows: &[Vec<String>]) -> Result<RecordBatch> {
    let width = rows.first().map(Vec::len).unwrap_or(1);
    let schema = hierarchy_schema(width - 1);
    let columns: Vec<ArrayRef> = (0..width)
        .map(|i| {
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r[i].as_str()),
            )) as ArrayRef
        })
        .collect();
    Ok(RecordBatch::try_new(schema, columns)?)
}

const INTERVAL_PARAMS: &[ParamSpec] = &[
    ParamSpec::new("domain", ParamKind::Text, ParamDefault::Required, "integer leaves, e.g. '1..100' or '11, 21..26, 31..39'; at most 1000000 values"),
    ParamSpec::new(
        "levels",
        ParamKind::Text,
        ParamDefault::Optional("the further positional arguments"),
        "levels separated by '|': a width ('10') or breakpoints ('0,30,60,100'); further positional arguments are levels too",
    ),
];

/// `interval_hierarchy(domain, level1, level2, ...)`.
#[derive(Debug)]
pub struct IntervalHierarchyFunction;

impl SqlTableFunction for IntervalHierarchyFunction {
    fn name(&self) -> &'static str {
        "interval_hierarchy"
    }
    fn params(&self) -> &'static [ParamSpec] {
        INTERVAL_PARAMS
    }
    fn about(&self) -> &'static str {
        "Builds a numeric interval hierarchy (ARX layout: value, level_1, ..., '*') from an integer domain and one width or breakpoint list per level; each level's intervals must be unions of the previous level's. At most 1000000 values and 5000000 cells (values × columns: the value, one per level and '*')."
    }
    fn create(
        &self,
        mut args: CallArgs,
        _context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let mut extra_levels = Vec::new();
        if args.positional.len() > 1 {
            extra_levels = args.positional.split_off(1);
        }
        let bound = bind(self.name(), INTERVAL_PARAMS, &["domain"], args)?;
        let built = |e: BuildError| DataFusionError::Plan(format!("interval_hierarchy(): {e}"));
        let domain = parse_integer_domain(&bound.required_string("domain")?).map_err(built)?;
        let mut specs: Vec<String> = Vec::new();
        if let Some(levels) = bound.string("levels")? {
            specs.extend(levels.split('|').map(|s| s.trim().to_string()));
        }
        for value in extra_levels {
            match value {
                ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => specs.push(s),
                ScalarValue::Int64(Some(w)) => specs.push(w.to_string()),
                other => return plan_err!("interval_hierarchy(): a level must be a string like '10' or '0,30,60,100', got {other}"),
            }
        }
        if specs.is_empty() {
            return plan_err!("interval_hierarchy(): give at least one level, e.g. interval_hierarchy('1..100', '10', '0,30,60,100')");
        }
        let levels = specs
            .iter()
            .map(|s| IntervalLevel::parse(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(built)?;
        let rows = interval_hierarchy_rows(&domain, &levels).map_err(built)?;
        Hierarchy::from_rows("interval_hierarchy", &rows)
            .map_err(|e| DataFusionError::Plan(e.built_by("interval_hierarchy")))?;
        let batch = rows_to_batch(&rows)?;
        Ok(Arc::new(MemTable::try_new(
            batch.schema(),
            vec![vec![batch]],
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy::builders::{MAX_HIERARCHY_CELLS, MAX_HIERARCHY_VALUES};

    /// The documented limits are the enforced ones.
    #[test]
    fn docs_state_the_limits() {
        let about = IntervalHierarchyFunction.about();
        assert!(
            about.contains(&format!(
                "At most {MAX_HIERARCHY_VALUES} values and {MAX_HIERARCHY_CELLS} cells"
            )),
            "{about}"
        );
        assert!(INTERVAL_PARAMS[0]
            .doc
            .contains(&format!("at most {MAX_HIERARCHY_VALUES} values")));
    }
}
