//! Table functions that build hierarchies in ARX layout: `interval_hierarchy(...)` for
//! numeric interval ladders and `mask_hierarchy(...)` for prefix masking of codes.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Column, Result, ScalarValue};
use datafusion::datasource::MemTable;
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;
use datafusion::logical_expr::Expr;
use datafusion::prelude::SessionContext;
use tokio::sync::OnceCell;

use super::args::{bind, CallArgs, ParamSpec};
use super::lazy::{BatchProducer, BatchSource, LazyTable};
use super::planner::SqlTableFunction;
use crate::hierarchy::builders::{
    interval_hierarchy_rows, mask_hierarchy_rows, parse_integer_domain, IntervalLevel,
};
use crate::hierarchy::load::array_to_strings;
use crate::hierarchy::Hierarchy;
use crate::params::{ParamDefault, ParamKind};

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
    ParamSpec::new("domain", ParamKind::Text, ParamDefault::Required, "integer leaves, e.g. '1..100' or '11, 21..26, 31..39'"),
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
        "Builds a numeric interval hierarchy (ARX layout: value, level_1, ..., '*') from an integer domain and one width or breakpoint list per level."
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
        let domain = parse_integer_domain(&bound.required_string("domain")?)?;
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
            .collect::<Result<Vec<_>, _>>()?;
        let rows = interval_hierarchy_rows(&domain, &levels)?;
        Hierarchy::from_rows("interval_hierarchy", &rows)?;
        let batch = rows_to_batch(&rows)?;
        Ok(Arc::new(MemTable::try_new(
            batch.schema(),
            vec![vec![batch]],
        )?))
    }
}

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
        "Builds a prefix-masking hierarchy (I634 -> I63* -> I6* -> *) over the distinct values of a column."
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
        let source = match super::resolve::resolve_table(context, &source_name)? {
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
            cell: OnceCell::new(),
        };
        Ok(Arc::new(LazyTable::new(
            hierarchy_schema(keep.len() + 1),
            Arc::new(producer),
        )))
    }
}

#[derive(Debug)]
struct MaskProducer {
    source: Arc<dyn TableProvider>,
    source_name: String,
    column: String,
    keep: Vec<usize>,
    cell: OnceCell<Arc<Vec<RecordBatch>>>,
}

#[async_trait]
impl BatchProducer for MaskProducer {
    async fn batches(&self, state: &SessionState) -> Result<Arc<dyn BatchSource>> {
        self.cell
            .get_or_try_init(|| async {
                let ctx = SessionContext::new_with_state(state.clone());
                let batches = ctx
                    .read_table(self.source.clone())?
                    .select(vec![Expr::Column(Column::new_unqualified(&self.column))])?
                    .distinct()?
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
                let mut rows = mask_hierarchy_rows(&values, &self.keep)?;
                // Keep the declared width even when the mask levels already end in one value.
                let width = self.keep.len() + 2;
                for row in rows.iter_mut() {
                    while row.len() < width {
                        row.push(crate::hierarchy::STAR.to_string());
                    }
                }
                Ok(Arc::new(vec![rows_to_batch(&rows)?]))
            })
            .await
            .map(|batches| batches.clone() as Arc<dyn BatchSource>)
    }
}
