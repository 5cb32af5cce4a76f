//! `mask_hierarchy(source, column, keep)`: a hierarchy that masks codes from the right.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Column, DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;
use datafusion::logical_expr::Expr;
use datafusion::prelude::SessionContext;

use super::interval_hierarchy::{hierarchy_schema, rows_to_batch};
use crate::hierarchy::builders::{mask_hierarchy_rows, MAX_HIERARCHY_VALUES};
use crate::hierarchy::load::array_to_strings;
use crate::params::{ParamDefault, ParamKind};
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;
use crate::tables::lazy::{Cached, Compute, LazyTable};

const MASK_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "source",
        ParamKind::Text,
        ParamDefault::Required,
        "table holding the codes",
    ),
    ParamSpec::new(
        "column",
        ParamKind::Text,
        ParamDefault::Required,
        "column with the codes",
    ),
    ParamSpec::new(
        "keep",
        ParamKind::Text,
        ParamDefault::Required,
        "characters kept per level, strictly decreasing, e.g. '3,2' gives I634 -> I63* -> I6* -> *",
    ),
];

/// `mask_hierarchy(source, column, keep)`.
#[derive(Debug)]
pub struct MaskHierarchyFunction;

impl SqlTableFunction for MaskHierarchyFunction {
    fn name(&self) -> &'static str {
        "mask_hierarchy"
    }
    fn params(&self) -> &'static [ParamSpec] {
        MASK_PARAMS
    }
    fn about(&self) -> &'static str {
        "Builds a prefix-masking hierarchy (I634 -> I63* -> I6* -> *) over the distinct values of a column. At most 1000000 values and 5000000 cells (values × columns: the value, one per keep length and '*')."
    }
    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let bound = bind(
            self.name(),
            MASK_PARAMS,
            &["source", "column", "keep"],
            args,
        )?;
        let source_name = bound.required_string("source")?;
        let column = bound.required_string("column")?;
        let keep_text = bound.required_string("keep")?;
        let keep = keep_text
            .split(',')
            .map(|k| k.trim().parse::<usize>())
            .collect::<std::result::Result<Vec<_>, _>>();
        let keep = match keep {
            Ok(k) if !k.is_empty() && k.iter().all(|&x| x > 0) => k,
            _ => return plan_err!("mask_hierarchy(): keep must list positive prefix lengths like '3,2', got '{keep_text}'"),
        };
        if keep.windows(2).any(|w| w[0] <= w[1]) {
            return plan_err!(
                "mask_hierarchy(): keep lengths must be strictly decreasing, got '{keep_text}'"
            );
        }
        let source = match crate::sql::resolve::resolve_table(context, &source_name)? {
            Some(s) => s,
            None => return plan_err!("mask_hierarchy(): table '{source_name}' not found"),
        };
        if source.schema().field_with_name(&column).is_err() {
            return plan_err!("mask_hierarchy(): table '{source_name}' has no column '{column}'");
        }
        let producer = MaskProducer {
            source,
            source_name,
            column,
            keep: keep.clone(),
        };
        Ok(Arc::new(LazyTable::new(
            hierarchy_schema(keep.len() + 1),
            Arc::new(Cached::new(producer)),
        )))
    }
}

#[derive(Debug)]
struct MaskProducer {
    source: Arc<dyn TableProvider>,
    source_name: String,
    column: String,
    keep: Vec<usize>,
}

#[async_trait]
impl Compute for MaskProducer {
    async fn compute(&self, state: &SessionState) -> Result<Vec<RecordBatch>> {
        let ctx = SessionContext::new_with_state(state.clone());
        let batches = ctx
            .read_table(self.source.clone())?
            .select(vec![Expr::Column(Column::new_unqualified(&self.column))])?
            .distinct()?
            // One value beyond the limit tells that it is exceeded.
            .limit(0, Some(MAX_HIERARCHY_VALUES + 1))?
            .collect()
            .await?;
        let mut values = BTreeSet::new();
        for batch in &batches {
            for v in array_to_strings(batch.column(0))? {
                match v {
                    Some(v) => {
                        values.insert(v);
                    }
                    None => {
                        return plan_err!(
                            "mask_hierarchy(): column '{}' of '{}' contains NULL values",
                            self.column,
                            self.source_name
                        )
                    }
                }
            }
        }
        let values: Vec<String> = values.into_iter().collect();
        let mut rows = mask_hierarchy_rows(&values, &self.keep).map_err(|e| {
            DataFusionError::Execution(format!(
                "mask_hierarchy(): column '{}' of '{}': {e}",
                self.column, self.source_name
            ))
        })?;
        // Keep the declared width even when the mask levels already end in one value.
        let width = self.keep.len() + 2;
        for row in rows.iter_mut() {
            while row.len() < width {
                row.push(crate::hierarchy::STAR.to_string());
            }
        }
        Ok(vec![rows_to_batch(&rows)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy::builders::MAX_HIERARCHY_CELLS;

    /// The documented limits are the enforced ones.
    #[test]
    fn docs_state_the_limits() {
        let about = MaskHierarchyFunction.about();
        assert!(
            about.contains(&format!(
                "At most {MAX_HIERARCHY_VALUES} values and {MAX_HIERARCHY_CELLS} cells"
            )),
            "{about}"
        );
    }
}
