//! `upa_truthful(release, catalog, qi => ..., sensitive => ...)`: the recipient's side of
//! UPA (docs/METHODS.md §5.5). From the two published tables alone — the released rows and
//! their counterfeit catalog, read through DataFusion from any table (memory, Parquet, CSV) —
//! it rebuilds a table of real records only.
//!
//! The rebuild itself is `method::upa::truthful` (docs/METHODS.md §5.5); this function binds
//! the arguments, reads the two tables and writes the rows it keeps.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::compute::{cast, concat_batches, take};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt64Type};
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_err, plan_err, Column, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;
use datafusion::logical_expr::{cast as cast_expr, Expr};
use datafusion::prelude::SessionContext;
use tokio::sync::OnceCell;

use crate::counterfeit_catalog::{COUNT_COLUMN, GROUP_COLUMN};
use crate::hierarchy::STAR;
use crate::method::upa::truthful::{truthful_rows, CatalogRow, Names, ReleasedRows};
use crate::params::{ParamDefault, ParamKind};
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::lazy::{BatchProducer, LazyTable};
use crate::sql::planner::SqlTableFunction;

const PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "release",
        ParamKind::Text,
        ParamDefault::Required,
        "the released table: anonymize(method => 'upa', ...) rows, e.g. read back from Parquet (first positional argument)",
    ),
    ParamSpec::new(
        "catalog",
        ParamKind::Text,
        ParamDefault::Required,
        "its catalog: the rows of anonymize_catalog(...) with the same arguments (second positional argument)",
    ),
    ParamSpec::new(
        "qi",
        ParamKind::Text,
        ParamDefault::Required,
        "the quasi-identifier columns, as 'col, ...' (':hierarchy' parts are ignored)",
    ),
    ParamSpec::new(
        "sensitive",
        ParamKind::Text,
        ParamDefault::Optional("required unless 'informative' is given"),
        "the sensitive column; 'informative' is its synonym",
    ),
    ParamSpec::new(
        "informative",
        ParamKind::Text,
        ParamDefault::Optional("none"),
        "synonym of 'sensitive'",
    ),
];

const NAME: &str = "upa_truthful";

/// `upa_truthful(release, catalog, qi => ..., sensitive => ...)`.
#[derive(Debug)]
pub struct UpaTruthfulFunction;

impl SqlTableFunction for UpaTruthfulFunction {
    fn name(&self) -> &'static str {
        NAME
    }

    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }

    fn about(&self) -> &'static str {
        "Rebuilds the truthful table of a UPA release from the two published tables: per catalog entry (group, value s, count c), suppresses the quasi-identifiers of min(c, n) rows with s in each of the group's classes, then deletes c of the suppressed rows. Every row left is a real record (generalized or suppressed), exactly as many as the original table had."
    }

    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let bound = bind(NAME, PARAMS, &["release", "catalog"], args)?;
        let release_name = bound.required_string("release")?;
        let catalog_name = bound.required_string("catalog")?;
        let sensitive = match (bound.string("sensitive")?, bound.string("informative")?) {
            (Some(_), Some(_)) => {
                return plan_err!("{NAME}(): give 'sensitive' or its synonym 'informative', not both")
            }
            (Some(s), None) | (None, Some(s)) => s,
            (None, None) => {
                return plan_err!(
                    "{NAME}(): argument 'sensitive' is required: the sensitive column of the release, e.g. sensitive => 'disease'"
                )
            }
        };
        let release = resolve(context, &release_name, "release table")?;
        let catalog = resolve(context, &catalog_name, "catalog table")?;
        let release_schema = release.schema();
        let catalog_schema = catalog.schema();

        let mut qi: Vec<String> = Vec::new();
        for item in bound
            .required_string("qi")?
            .split(',')
            .map(|s| s.split(':').next().unwrap_or("").trim().to_string())
            .filter(|s| !s.is_empty())
        {
            let column = column_of(&release_schema, &release_name, &item)?;
            if qi.contains(&column) {
                return plan_err!("{NAME}(): column '{column}' is listed twice in 'qi'");
            }
            qi.push(column);
        }
        if qi.is_empty() {
            return plan_err!("{NAME}(): argument 'qi' names no columns");
        }
        let sensitive = column_of(&release_schema, &release_name, sensitive.trim())?;
        if qi.contains(&sensitive) {
            return plan_err!(
                "{NAME}(): column '{sensitive}' cannot be both quasi-identifier and sensitive"
            );
        }
        let mut catalog_columns = vec![column_of(&catalog_schema, &catalog_name, GROUP_COLUMN)?];
        for q in &qi {
            catalog_columns.push(column_of(&catalog_schema, &catalog_name, q)?);
        }
        catalog_columns.push(column_of(&catalog_schema, &catalog_name, &sensitive)?);
        catalog_columns.push(column_of(&catalog_schema, &catalog_name, COUNT_COLUMN)?);

        let sensitive_field = release_schema.field_with_name(&sensitive)?.clone();
        let mut fields: Vec<Field> = qi
            .iter()
            .map(|q| Field::new(q, DataType::Utf8, false))
            .collect();
        fields.push(sensitive_field.with_nullable(false));
        let schema: SchemaRef = Arc::new(Schema::new(fields));
        let producer = TruthfulProducer {
            release,
            release_name,
            catalog,
            catalog_name,
            qi,
            sensitive,
            catalog_columns,
            schema: schema.clone(),
            cell: OnceCell::new(),
        };
        Ok(Arc::new(LazyTable::new(schema, Arc::new(producer))))
    }
}

fn resolve(
    context: &mut dyn RelationPlannerContext,
    name: &str,
    what: &str,
) -> Result<Arc<dyn TableProvider>> {
    match crate::sql::resolve::resolve_table(context, name)? {
        Some(provider) => Ok(provider),
        None => plan_err!("{NAME}(): {what} '{name}' not found"),
    }
}

/// A column by exact name, else by a unique case-insensitive match.
fn column_of(schema: &Schema, table: &str, wanted: &str) -> Result<String> {
    if schema.field_with_name(wanted).is_ok() {
        return Ok(wanted.to_string());
    }
    let matches: Vec<&str> = schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .filter(|n| n.eq_ignore_ascii_case(wanted))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.to_string()),
        _ => {
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            plan_err!(
                "{NAME}(): table '{table}' has no column '{wanted}'; its columns are: {}",
                names.join(", ")
            )
        }
    }
}

#[derive(Debug)]
struct TruthfulProducer {
    release: Arc<dyn TableProvider>,
    release_name: String,
    catalog: Arc<dyn TableProvider>,
    catalog_name: String,
    qi: Vec<String>,
    sensitive: String,
    /// Catalog columns: group, the quasi-identifiers, the sensitive column, count.
    catalog_columns: Vec<String>,
    schema: SchemaRef,
    cell: OnceCell<Arc<Vec<RecordBatch>>>,
}

fn col(name: &str) -> Expr {
    Expr::Column(Column::new_unqualified(name))
}

/// Text of every value of a column (for matching); NULL is an error naming the column.
fn texts(array: &ArrayRef, column: &str, table: &str) -> Result<Vec<String>> {
    let text = cast(array, &DataType::Utf8)?;
    let text = text.as_string::<i32>();
    if text.null_count() > 0 {
        return exec_err!("{NAME}(): column '{column}' of '{table}' contains NULL values");
    }
    Ok(text
        .iter()
        .map(|v| v.unwrap_or_default().to_string())
        .collect())
}

#[async_trait]
impl BatchProducer for TruthfulProducer {
    async fn batches(
        &self,
        state: &SessionState,
    ) -> Result<Arc<dyn crate::sql::lazy::BatchSource>> {
        self.cell
            .get_or_try_init(|| async { self.compute(state).await.map(Arc::new) })
            .await
            .map(|batches| batches.clone() as Arc<dyn crate::sql::lazy::BatchSource>)
    }
}

impl TruthfulProducer {
    async fn compute(&self, state: &SessionState) -> Result<Vec<RecordBatch>> {
        let ctx = SessionContext::new_with_state(state.clone());
        let mut select: Vec<Expr> = self.qi.iter().map(|q| col(q)).collect();
        select.push(col(&self.sensitive));
        let release = ctx
            .read_table(self.release.clone())?
            .select(select)?
            .collect()
            .await?;
        let catalog = ctx
            .read_table(self.catalog.clone())?
            .select(
                self.catalog_columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        if i == 0 || i + 1 == self.catalog_columns.len() {
                            cast_expr(col(c), DataType::UInt64).alias(c)
                        } else {
                            col(c)
                        }
                    })
                    .collect::<Vec<Expr>>(),
            )?
            .collect()
            .await?;
        let attrs = self.qi.len();

        // The catalog as text rows.
        let mut rows: Vec<CatalogRow> = Vec::new();
        for batch in &catalog {
            let groups = batch.column(0).as_primitive::<UInt64Type>();
            let n = batch.column(attrs + 2).as_primitive::<UInt64Type>();
            if groups.null_count() > 0 || n.null_count() > 0 {
                return exec_err!(
                    "{NAME}(): catalog '{}' has NULL group ids or counts",
                    self.catalog_name
                );
            }
            let labels: Vec<Vec<String>> = (0..attrs)
                .map(|a| texts(batch.column(a + 1), &self.qi[a], &self.catalog_name))
                .collect::<Result<_>>()?;
            let values = texts(batch.column(attrs + 1), &self.sensitive, &self.catalog_name)?;
            for (row, value) in values.into_iter().enumerate() {
                rows.push(CatalogRow {
                    group: groups.value(row),
                    class: labels.iter().map(|l| l[row].clone()).collect(),
                    value,
                    count: n.value(row),
                });
            }
        }

        // The release, as one batch of text labels and the sensitive column's type.
        let schema = Arc::new(Schema::new(
            self.qi
                .iter()
                .map(|q| Field::new(q, DataType::Utf8, true))
                .chain(std::iter::once(Field::new(
                    &self.sensitive,
                    self.schema.field(attrs).data_type().clone(),
                    true,
                )))
                .collect::<Vec<_>>(),
        ));
        let release: Vec<RecordBatch> = release
            .iter()
            .map(|b| {
                let mut columns: Vec<ArrayRef> = Vec::with_capacity(attrs + 1);
                for a in 0..attrs {
                    columns.push(cast(b.column(a), &DataType::Utf8)?);
                }
                columns.push(cast(b.column(attrs), self.schema.field(attrs).data_type())?);
                Ok(RecordBatch::try_new(schema.clone(), columns)?)
            })
            .collect::<Result<_>>()?;
        let release = concat_batches(&schema, &release)?;
        let released = ReleasedRows {
            labels: (0..attrs)
                .map(|a| texts(release.column(a), &self.qi[a], &self.release_name))
                .collect::<Result<_>>()?,
            values: texts(release.column(attrs), &self.sensitive, &self.release_name)?,
        };
        let names = Names {
            function: NAME,
            release: &self.release_name,
            catalog: &self.catalog_name,
            qi: &self.qi,
        };
        let kept = truthful_rows(&rows, &released, names)?;
        let labels = released.labels;
        let generalized = kept.generalized.len();
        let indices: Vec<u64> = kept
            .generalized
            .iter()
            .chain(&kept.suppressed)
            .map(|&r| r as u64)
            .collect();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(attrs + 1);
        for label in &labels {
            let column: StringArray = indices
                .iter()
                .enumerate()
                .map(|(i, &r)| {
                    Some(if i < generalized {
                        label[r as usize].as_str()
                    } else {
                        STAR
                    })
                })
                .collect();
            columns.push(Arc::new(column));
        }
        columns.push(take(
            release.column(attrs).as_ref(),
            &UInt64Array::from(indices),
            None,
        )?);
        Ok(vec![RecordBatch::try_new(self.schema.clone(), columns)?])
    }
}
