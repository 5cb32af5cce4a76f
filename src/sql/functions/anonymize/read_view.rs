//! The source as a release reads it. Two things happen to a column before any method sees
//! it, in a view over the source that every reader of the request (the release, its
//! assessment and report, the fingerprint of its tables) reads instead of the source:
//!
//! 1. `date_shift`: the named date or timestamp columns moved by one keyed offset per
//!    person ([`crate::date_shift`]);
//! 2. a `TIMESTAMP` (or `Date64`) quasi-identifier read as its day, so that a
//!    `date_hierarchy` of days generalizes it like a `DATE` column.
//!
//! Without either the source is read as it is.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Column, Result, TableReference};
use datafusion::datasource::{provider_as_source, ViewTable};
use datafusion::logical_expr::{cast, Expr, LogicalPlanBuilder};

use super::call_columns::CallColumns;
use crate::date_shift::{check_max_days, DateShift};
use crate::engine::QiSpec;
use crate::hierarchy::dates::is_date_type;
use crate::names::parse_list;
use crate::privacy_unit::PrivacyUnit;
use crate::pseudonym::PseudonymKey;
use crate::sql::columns::resolve_column;

/// Reads `date_shift` and `max_days` against the source, the privacy unit and the key.
pub(super) fn date_shift(
    call: &CallColumns<'_>,
    unit: &PrivacyUnit,
    key: Option<&PseudonymKey>,
) -> Result<Option<DateShift>> {
    let CallColumns {
        function,
        common,
        schema,
        source_name,
        ..
    } = *call;
    let Some(text) = common.opt_text("date_shift") else {
        if common.given("max_days") {
            return plan_err!(
                "{function}(): argument 'max_days' applies only with date_shift => '<date columns>'"
            );
        }
        return Ok(None);
    };
    let max_days = check_max_days(function, common.u64("max_days")?)?;
    let mut columns: Vec<String> = Vec::new();
    for item in parse_list("date_shift", text, false)? {
        let name = resolve_column(
            function,
            schema,
            source_name,
            &item.column,
            ("date_shift", text),
        )?;
        let data_type = schema.field_with_name(&name)?.data_type();
        if !is_date_type(data_type) {
            return plan_err!(
                "{function}(): date_shift column '{name}' is {data_type}, not a DATE or TIMESTAMP; cast it in a view (e.g. CAST({name} AS DATE))"
            );
        }
        if !columns.contains(&name) {
            columns.push(name);
        }
    }
    if columns.is_empty() {
        return plan_err!("{function}(): 'date_shift' names no column, got '{text}'");
    }
    let Some(person) = unit.person_column() else {
        return plan_err!(
            "{function}(): date_shift moves every date of one person by the same offset, so it needs person => '<column identifying a person>'"
        );
    };
    if key.is_none() {
        return plan_err!(
            "{function}(): date_shift draws each person's offset with the owner's secret key: RegisterOptions::pseudonym_key, or dfanon --pseudonym-key-file PATH"
        );
    }
    Ok(Some(DateShift {
        columns,
        max_days,
        person: person.to_string(),
    }))
}

/// The table the release reads: `source` itself, or a view over it with the shifted
/// dates and the quasi-identifiers read as days.
pub(super) fn read_view(
    source: &Arc<dyn TableProvider>,
    schema: &Schema,
    qi: &[QiSpec],
    shift: Option<&DateShift>,
    key: Option<&PseudonymKey>,
) -> Result<Arc<dyn TableProvider>> {
    let as_day = |name: &str| {
        qi.iter().any(|q| q.column == name && q.hierarchy.is_some())
            && matches!(
                schema.field_with_name(name).map(|f| f.data_type()),
                Ok(DataType::Timestamp(_, _) | DataType::Date64)
            )
    };
    let shifted = |name: &str| shift.is_some_and(|s| s.columns.iter().any(|c| c == name));
    let fields = schema.fields();
    if !fields.iter().any(|f| as_day(f.name()) || shifted(f.name())) {
        return Ok(source.clone());
    }
    let column = |name: &str| Expr::Column(Column::new_unqualified(name));
    let mut exprs = Vec::with_capacity(fields.len());
    for field in fields {
        let name = field.name();
        let mut expr = column(name);
        if let (Some(shift), Some(key)) = (shift, key) {
            if shifted(name) {
                expr = shift.shifted(key, expr, column(&shift.person));
            }
        }
        if as_day(name) {
            expr = cast(expr, DataType::Date32);
        }
        exprs.push(expr.alias(name));
    }
    let plan = LogicalPlanBuilder::scan(
        TableReference::bare("anonymize_source"),
        provider_as_source(source.clone()),
        None,
    )?
    .project(exprs)?
    .build()?;
    Ok(Arc::new(ViewTable::new(plan, None)))
}
