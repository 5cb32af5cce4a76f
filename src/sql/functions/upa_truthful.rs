//! `upa_truthful(release, catalog, qi => ..., sensitive => ...)`: the recipient's side of
//! UPA (docs/METHODS.md §5.5). From the two published tables alone — the released rows and
//! their counterfeit catalog, read through DataFusion from any table (memory, Parquet, CSV) —
//! it rebuilds a table of real records only.
//!
//! For each catalog entry `(group G, value s, count c)`:
//!
//! 1. in every class `E` of `G`, `min(c, n_E(s))` of the `n_E(s)` rows with value `s` have
//!    their quasi-identifiers suppressed (`*`): the counterfeits of `E` with `s` are among
//!    them, since `E` holds at most `min(c, n_E(s))` of them;
//! 2. `c` of the suppressed rows are deleted.
//!
//! Every remaining row is real: a generalized row is one of `E`'s real records, and the
//! `Σ_E min(c, n_E(s)) − c` suppressed rows left are exactly as many as the real records
//! among the suppressed ones. The result has exactly the number of real records. Rows are
//! compared on the quasi-identifiers and the sensitive column only, and the result holds
//! these columns only: rows equal on them are interchangeable, so which ones are suppressed
//! or deleted does not matter, and the result is a function of the two tables alone. Kept
//! rows come in the order they are read, the suppressed rows after them.

use std::collections::{HashMap, HashSet};
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

/// One catalogued class: its group and labels.
type ClassKey = Vec<String>;

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

        // The catalog: group of each class, count of each (group, value).
        let mut class_group: HashMap<ClassKey, u64> = HashMap::new();
        let mut counts: HashMap<(u64, String), u64> = HashMap::new();
        let mut group_classes: HashMap<(u64, String), Vec<ClassKey>> = HashMap::new();
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
            for row in 0..batch.num_rows() {
                let group = groups.value(row);
                let class: ClassKey = labels.iter().map(|l| l[row].clone()).collect();
                if let Some(&other) = class_group.get(&class) {
                    if other != group {
                        return exec_err!(
                            "{NAME}(): catalog '{}' lists class ({}) in groups {other} and {group}; a class belongs to one group",
                            self.catalog_name,
                            describe(&self.qi, &class)
                        );
                    }
                }
                class_group.insert(class.clone(), group);
                let key = (group, values[row].clone());
                match counts.get(&key) {
                    Some(&c) if c != n.value(row) => {
                        return exec_err!(
                            "{NAME}(): catalog '{}' gives group {group}, value '{}' two counts ({c} and {})",
                            self.catalog_name,
                            key.1,
                            n.value(row)
                        )
                    }
                    _ => {
                        counts.insert(key.clone(), n.value(row));
                    }
                }
                let members = group_classes.entry(key).or_default();
                if !members.contains(&class) {
                    members.push(class);
                }
            }
        }

        // The release, as one batch, and the rows of every catalogued (class, value).
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
        let rows = release.num_rows();
        let labels: Vec<Vec<String>> = (0..attrs)
            .map(|a| texts(release.column(a), &self.qi[a], &self.release_name))
            .collect::<Result<_>>()?;
        let values = texts(release.column(attrs), &self.sensitive, &self.release_name)?;
        let mut seen_classes: HashSet<ClassKey> = HashSet::new();
        let mut rows_of: HashMap<(ClassKey, String), Vec<usize>> = HashMap::new();
        let mut class: ClassKey = vec![String::new(); attrs];
        for row in 0..rows {
            for (slot, label) in class.iter_mut().zip(&labels) {
                slot.clone_from(&label[row]);
            }
            if !class_group.contains_key(&class) {
                continue;
            }
            if !seen_classes.contains(&class) {
                seen_classes.insert(class.clone());
            }
            rows_of
                .entry((class.clone(), values[row].clone()))
                .or_default()
                .push(row);
        }
        if let Some(missing) = class_group.keys().find(|c| !seen_classes.contains(*c)) {
            return exec_err!(
                "{NAME}(): catalog '{}' lists class ({}), which does not occur in release '{}'; give the release and the catalog of the same anonymize() call",
                self.catalog_name,
                describe(&self.qi, missing),
                self.release_name
            );
        }

        // Suppress, then delete.
        let mut suppressed_flag = vec![false; rows];
        let mut kept_suppressed: Vec<usize> = Vec::new();
        let mut entries: Vec<(&(u64, String), &u64)> = counts.iter().collect();
        entries.sort();
        for (key, &count) in entries {
            let mut suppressed: Vec<usize> = Vec::new();
            let mut members = group_classes.get(key).cloned().unwrap_or_default();
            members.sort();
            for member in members {
                let list = rows_of
                    .get(&(member, key.1.clone()))
                    .map_or(&[][..], Vec::as_slice);
                let m = (count as usize).min(list.len());
                suppressed.extend_from_slice(&list[list.len() - m..]);
            }
            if (suppressed.len() as u64) < count {
                return exec_err!(
                    "{NAME}(): catalog '{}' counts {count} counterfeit rows of '{}' in group {}, but release '{}' holds only {} such rows in the group's classes; give the release and the catalog of the same anonymize() call",
                    self.catalog_name,
                    key.1,
                    key.0,
                    self.release_name,
                    suppressed.len()
                );
            }
            for &r in &suppressed {
                suppressed_flag[r] = true;
            }
            suppressed.sort_unstable();
            kept_suppressed.extend_from_slice(&suppressed[count as usize..]);
        }

        let mut indices: Vec<u64> = (0..rows)
            .filter(|&r| !suppressed_flag[r])
            .map(|r| r as u64)
            .collect();
        let generalized = indices.len();
        indices.extend(kept_suppressed.iter().map(|&r| r as u64));
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

fn describe(qi: &[String], class: &[String]) -> String {
    qi.iter()
        .zip(class)
        .map(|(q, l)| format!("{q}='{l}'"))
        .collect::<Vec<_>>()
        .join(", ")
}
