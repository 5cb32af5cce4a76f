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
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_err, plan_err, Column, DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;
use datafusion::logical_expr::Expr;
use datafusion::prelude::SessionContext;
use tokio::sync::OnceCell;

use crate::hierarchy::STAR;
use crate::method::upa::truthful::check_concealed;
use crate::method::upa::truthful::{truthful_rows, CatalogRow, Names, ReleasedRows};
use crate::names::{parse_list, written_name};
use crate::params::{ParamDefault, ParamKind};
use crate::quote::quote;
use crate::release::catalog::{COUNT_COLUMN, GROUP_COLUMN};
use crate::session::reading_error;
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;
use crate::tables::lazy::{BatchProducer, LazyTable};

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
        "every quasi-identifier column of the release, as 'col, ...' (':hierarchy' parts are ignored; names as in anonymize's qi)",
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
        let qi_text = bound.required_string("qi")?;
        let items = parse_list("qi", &qi_text, true).map_err(|e| match e {
            DataFusionError::Plan(message) => DataFusionError::Plan(format!("{NAME}(): {message}")),
            other => other,
        })?;
        for item in items.iter().filter(|i| !i.column.text.is_empty()) {
            let column = column_of(&release_schema, &release_name, &item.column.text)?;
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
        // A catalog has exactly these columns: another one is a quasi-identifier left out
        // of 'qi', whose classes would merge.
        if let Some(extra) = catalog_schema
            .fields()
            .iter()
            .find(|f| !catalog_columns.contains(f.name()))
        {
            let mut all = qi.clone();
            all.push(extra.name().clone());
            return plan_err!(
                "{NAME}(): catalog '{catalog_name}' has column '{}', which is not in 'qi' nor the sensitive column: a catalog has the columns {GROUP_COLUMN}, the quasi-identifiers, the sensitive column and {COUNT_COLUMN}; give every quasi-identifier of the release, e.g. qi => '{}'",
                extra.name(),
                all.iter().map(|c| written_name(c)).collect::<Vec<_>>().join(", ")
            );
        }

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

/// A whole number of at least 0 written as an integer (`3`) or a real number (`3.0`);
/// `None` for a negative, fractional or non-numeric value.
fn whole_number(text: &str) -> Option<u64> {
    let text = text.trim();
    if let Ok(n) = text.parse::<u64>() {
        return Some(n);
    }
    let x = text.parse::<f64>().ok()?;
    // Below 2^53 every whole f64 converts exactly.
    (x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x < 9_007_199_254_740_992.0)
        .then_some(x as u64)
}

#[async_trait]
impl BatchProducer for TruthfulProducer {
    async fn batches(
        &self,
        state: &SessionState,
    ) -> Result<Arc<dyn crate::tables::lazy::BatchSource>> {
        self.cell
            .get_or_try_init(|| async { self.compute(state).await.map(Arc::new) })
            .await
            .map(|batches| batches.clone() as Arc<dyn crate::tables::lazy::BatchSource>)
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
            .await
            .map_err(|e| {
                reading_error(NAME, &format!("release table '{}'", self.release_name), e)
            })?;
        let catalog = ctx
            .read_table(self.catalog.clone())?
            .select(
                self.catalog_columns
                    .iter()
                    .map(|c| col(c))
                    .collect::<Vec<Expr>>(),
            )?
            .collect()
            .await
            .map_err(|e| {
                reading_error(NAME, &format!("catalog table '{}'", self.catalog_name), e)
            })?;
        let attrs = self.qi.len();

        // The catalog as text rows; group ids and counts are whole numbers.
        let group_column = &self.catalog_columns[0];
        let count_column = &self.catalog_columns[attrs + 2];
        let mut rows: Vec<CatalogRow> = Vec::new();
        for batch in &catalog {
            let groups = texts(batch.column(0), group_column, &self.catalog_name)?;
            let counts = texts(batch.column(attrs + 2), count_column, &self.catalog_name)?;
            let labels: Vec<Vec<String>> = (0..attrs)
                .map(|a| texts(batch.column(a + 1), &self.qi[a], &self.catalog_name))
                .collect::<Result<_>>()?;
            let values = texts(batch.column(attrs + 1), &self.sensitive, &self.catalog_name)?;
            for (row, value) in values.into_iter().enumerate() {
                let Some(group) = whole_number(&groups[row]) else {
                    return exec_err!(
                        "{NAME}(): catalog '{}' has {} in its column '{group_column}': group ids are whole numbers",
                        self.catalog_name,
                        quote(&groups[row])
                    );
                };
                let count = match whole_number(&counts[row]) {
                    Some(count) if count >= 1 => count,
                    _ => {
                        return exec_err!(
                            "{NAME}(): catalog '{}' has {} in its column '{count_column}' (group {group}): a count is a whole number of counterfeit rows, at least 1 (anonymize_catalog() lists only groups holding counterfeits)",
                            self.catalog_name,
                            quote(&counts[row])
                        )
                    }
                };
                rows.push(CatalogRow {
                    group,
                    class: labels.iter().map(|l| l[row].clone()).collect(),
                    value,
                    count,
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
        check_concealed(&rows, &released, names)?;
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
