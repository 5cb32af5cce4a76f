//! `anonymize_assess(...)` and `anonymize_class_sizes(...)`: how risky a table is, before or
//! after anonymizing, without releasing anything.
//!
//! Both read any registered table: a raw source (then the figures are exact facts about
//! the data: owner-only) or a published release, whose `*` values are ordinary labels and
//! whose suppressed rows (every quasi-identifier `*`) are excluded from the classes and
//! counted as `suppressed`. This file binds the arguments; the table is read
//! and the figures computed in [`crate::assess`] (formulas: docs/METHODS.md §7.5).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Result, ScalarValue};
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;

use crate::assess::{assess, assess_schema, class_sizes, entries_batch, AssessRequest, Population};
use crate::params::{ParamDefault, ParamKind, ParamValues};
use crate::privacy::individual_risk::{DEFAULT_MAX_GLOBAL_RISK, DEFAULT_RISK_THRESHOLD};
use crate::sql::args::{bind, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;
use crate::tables::lazy::{Cached, Compute, LazyTable};

pub(super) const WEIGHTS: ParamSpec = ParamSpec::new(
    "weights",
    ParamKind::Text,
    ParamDefault::Optional("none: every record stands for itself"),
    "the column of sampling weights (sdcMicro's weightVar): how many population records each record stands for, positive",
);

pub(super) const SOURCE: ParamSpec = ParamSpec::new(
    "source",
    ParamKind::Text,
    ParamDefault::Required,
    "table to assess: a raw source (owner-only) or a published release (first positional argument)",
);
pub(super) const QI: ParamSpec = ParamSpec::new(
    "qi",
    ParamKind::Text,
    ParamDefault::Required,
    "quasi-identifiers as 'col, ...' (':hierarchy' suffixes, as anonymize takes them, are ignored)",
);

/// Parameters of `anonymize_assess`.
pub const ASSESS_PARAMS: &[ParamSpec] = &[
    SOURCE,
    QI,
    ParamSpec::new(
        "sensitive",
        ParamKind::Text,
        ParamDefault::Optional("none: no l-diversity or t-closeness figures"),
        "sensitive columns as 'col, ...': l-diversity and t-closeness figures for each",
    ),
    ParamSpec::new(
        "population",
        ParamKind::Text,
        ParamDefault::Optional("none: the table is its own population"),
        "the population the table was drawn from: its number of records (an integer) or a table holding it (with the same quasi-identifier columns); adds journalist_risk_max and ARX's population-uniqueness estimates (docs/METHODS.md §7.5.1)",
    ),
    ParamSpec::new(
        "population_size",
        ParamKind::Count,
        ParamDefault::Optional("none: see population"),
        "instead of population: the number of records of the population the table was drawn from (as ARX's population size)",
    ),
    ParamSpec::new(
        "sampling_fraction",
        ParamKind::Number,
        ParamDefault::Optional("none: see population"),
        "instead of population: the share of the population the table holds, in (0, 1]; the population is round(rows / sampling_fraction) records, as ARX derives it",
    ),
    ParamSpec::new(
        "risk_threshold",
        ParamKind::Number,
        ParamDefault::Number(DEFAULT_RISK_THRESHOLD),
        "records_at_risk counts the records whose prosecutor risk 1/(class size) exceeds this, and records_above_risk_threshold those whose individual risk does, in (0, 1]",
    ),
    WEIGHTS,
    ParamSpec::new(
        "person",
        ParamKind::Text,
        ParamDefault::Optional("none: each row is one individual"),
        "the column identifying a person who may own several rows: the class figures (classes, min_class_size, avg_class_size, sample_uniques, the prosecutor risks, records_at_risk, marketer_risk) then count distinct persons per class, and 'persons' is added; not with population or weights, which count records",
    ),
    ParamSpec::new(
        "max_global_risk",
        ParamKind::Number,
        ParamDefault::Number(DEFAULT_MAX_GLOBAL_RISK),
        "with weights: global_threshold is the individual-risk level that brings the expected re-identifications below this share of the records, in (0, 1) (sdcMicro's measure_risk)",
    ),
];

/// Parameters of `anonymize_class_sizes`.
pub(super) const CLASS_SIZES_PARAMS: &[ParamSpec] = &[SOURCE, QI];

/// Column names of `text` ('a, b:h' → a, b), resolved against `schema` (exact name, else a
/// unique case-insensitive match).
pub(super) fn columns(
    function: &str,
    param: &str,
    text: &str,
    table: &str,
    schema: &Schema,
) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let wanted = item.split_once(':').map_or(item, |(c, _)| c.trim());
        let name = if schema.field_with_name(wanted).is_ok() {
            wanted.to_string()
        } else {
            let matches: Vec<&String> = schema
                .fields()
                .iter()
                .map(|f| f.name())
                .filter(|n| n.eq_ignore_ascii_case(wanted))
                .collect();
            match matches.as_slice() {
                [one] => one.to_string(),
                _ => {
                    let names: Vec<&str> =
                        schema.fields().iter().map(|f| f.name().as_str()).collect();
                    return plan_err!(
                        "{function}(): table '{table}' has no column '{wanted}'; its columns are: {}",
                        names.join(", ")
                    );
                }
            }
        };
        if out.contains(&name) {
            return plan_err!("{function}(): column '{name}' is listed twice in '{param}'");
        }
        out.push(name);
    }
    if out.is_empty() {
        return plan_err!("{function}(): argument '{param}' names no columns");
    }
    Ok(out)
}

pub(super) fn table(
    function: &str,
    context: &mut dyn RelationPlannerContext,
    name: &str,
    what: &str,
) -> Result<Arc<dyn TableProvider>> {
    match crate::sql::resolve::resolve_table(context, name)? {
        Some(t) => Ok(t),
        None => plan_err!("{function}(): {what} '{name}' not found"),
    }
}

pub(super) fn build_request(
    function: &str,
    params: &[ParamSpec],
    args: CallArgs,
    context: &mut dyn RelationPlannerContext,
) -> Result<AssessRequest> {
    let bound = bind(function, params, &["source"], args)?;
    let mut given = bound.values().clone();
    let population_arg = given.remove("population");
    let values = ParamValues::parse(function, function, params, &given)?;
    let source_name = values.text("source")?.to_string();
    let source = table(function, context, &source_name, "table")?;
    let schema = source.schema();
    let qi = columns(function, "qi", values.text("qi")?, &source_name, &schema)?;
    let sensitive = match values.opt_text("sensitive") {
        None => Vec::new(),
        Some(text) => columns(function, "sensitive", text, &source_name, &schema)?,
    };
    if let Some(both) = sensitive.iter().find(|s| qi.contains(s)) {
        return plan_err!(
            "{function}(): column '{both}' cannot be both quasi-identifier and sensitive"
        );
    }
    let sensitive = sensitive
        .into_iter()
        .map(|name| {
            let data_type = schema.field_with_name(&name)?.data_type().clone();
            Ok((name, data_type))
        })
        .collect::<Result<Vec<_>>>()?;
    let size = values.opt_u64("population_size");
    let fraction = values.opt_f64("sampling_fraction");
    let given = [population_arg.is_some(), size.is_some(), fraction.is_some()];
    if given.iter().filter(|&&g| g).count() > 1 {
        return plan_err!(
            "{function}(): give one of population, population_size and sampling_fraction"
        );
    }
    let population = match (population_arg, size, fraction) {
        (Some(value), _, _) => population(function, context, &value, &qi)?,
        (None, Some(0), _) => {
            return plan_err!("{function}(): population_size must be at least 1 record")
        }
        (None, Some(rows), _) => Population::Rows(rows),
        (None, None, None) => Population::None,
        (None, None, Some(fraction)) => {
            if !(fraction > 0.0 && fraction <= 1.0) {
                return plan_err!(
                    "{function}(): sampling_fraction must be in (0, 1] (the share of the population the table holds), got {fraction}"
                );
            }
            Population::Fraction(fraction)
        }
    };
    let risk_threshold = values
        .opt_f64("risk_threshold")
        .unwrap_or(DEFAULT_RISK_THRESHOLD);
    if !(risk_threshold > 0.0 && risk_threshold <= 1.0) {
        return plan_err!("{function}(): risk_threshold must be in (0, 1], got {risk_threshold}");
    }
    let weights = match values.opt_text("weights") {
        None => None,
        Some(text) => Some(weight_column(
            function,
            text,
            &source_name,
            &schema,
            &qi,
            &sensitive,
        )?),
    };
    let person = match values.opt_text("person") {
        None => None,
        Some(text) => {
            let name = match columns(function, "person", text, &source_name, &schema)?.as_slice() {
                [one] => one.clone(),
                _ => return plan_err!("{function}(): person must name one column"),
            };
            if qi.contains(&name) || sensitive.iter().any(|(s, _)| *s == name) {
                return plan_err!(
                    "{function}(): column '{name}' cannot be both the person and a quasi-identifier or sensitive column"
                );
            }
            if weights.is_some() || !matches!(population, Population::None) {
                return plan_err!(
                    "{function}(): person cannot be combined with population, population_size, sampling_fraction or weights: those count records, not persons"
                );
            }
            Some(name)
        }
    };
    let max_global_risk = values
        .opt_f64("max_global_risk")
        .unwrap_or(DEFAULT_MAX_GLOBAL_RISK);
    if !(max_global_risk > 0.0 && max_global_risk < 1.0) {
        return plan_err!("{function}(): max_global_risk must be in (0, 1), got {max_global_risk}");
    }
    Ok(AssessRequest {
        source_name,
        source,
        qi,
        sensitive,
        population,
        risk_threshold,
        weights,
        max_global_risk,
        person,
    })
}

/// The sampling-weight column named by `text`: one numeric column of the table that is not
/// a quasi-identifier or sensitive column.
pub(super) fn weight_column(
    function: &str,
    text: &str,
    table: &str,
    schema: &Schema,
    qi: &[String],
    sensitive: &[(String, DataType)],
) -> Result<String> {
    let name = match columns(function, "weights", text, table, schema)?.as_slice() {
        [one] => one.clone(),
        _ => return plan_err!("{function}(): weights must name one column"),
    };
    if qi.contains(&name) || sensitive.iter().any(|(s, _)| *s == name) {
        return plan_err!(
            "{function}(): column '{name}' cannot be both the sampling weights and a quasi-identifier or sensitive column"
        );
    }
    let data_type = schema.field_with_name(&name)?.data_type();
    if !(data_type.is_numeric()) {
        return plan_err!(
            "{function}(): weights column '{name}' of table '{table}' holds {data_type} values, not numbers; sampling weights must be numbers"
        );
    }
    Ok(name)
}

/// `population => 1000`, `population => '1000'` or `population => 'table'`.
fn population(
    function: &str,
    context: &mut dyn RelationPlannerContext,
    value: &ScalarValue,
    qi: &[String],
) -> Result<Population> {
    let text = match value {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::Utf8View(Some(s))
        | ScalarValue::LargeUtf8(Some(s)) => s.trim().to_string(),
        other => other.to_string(),
    };
    if let Ok(rows) = text.parse::<u64>() {
        if rows == 0 {
            return plan_err!("{function}(): population must be at least 1 record");
        }
        return Ok(Population::Rows(rows));
    }
    if text.parse::<f64>().is_ok() {
        return plan_err!(
            "{function}(): population must be a whole number of records or a table name, got {text}"
        );
    }
    let provider = table(function, context, &text, "population table")?;
    let schema = provider.schema();
    for q in qi {
        if schema.field_with_name(q).is_err() {
            return plan_err!(
                "{function}(): population table '{text}' has no quasi-identifier column '{q}'"
            );
        }
    }
    Ok(Population::Table(text, provider))
}

/// Which of the two functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Assess,
    ClassSizes,
}

/// The rows of `anonymize_assess` or `anonymize_class_sizes` for one request.
#[derive(Debug)]
pub(super) struct AssessRows {
    pub(super) kind: Kind,
    pub(super) request: AssessRequest,
}

#[async_trait]
impl Compute for AssessRows {
    async fn compute(&self, state: &SessionState) -> Result<Vec<RecordBatch>> {
        Ok(match self.kind {
            Kind::Assess => vec![entries_batch(&assess(&self.request, state).await?)?],
            Kind::ClassSizes => class_sizes(&self.request, state).await?,
        })
    }
}

/// `anonymize_assess(...)`.
#[derive(Debug, Default)]
pub struct AssessFunction;

impl SqlTableFunction for AssessFunction {
    fn name(&self) -> &'static str {
        "anonymize_assess"
    }

    fn owner_only(&self) -> bool {
        // On a raw source the figures are exact facts about the data.
        true
    }

    fn params(&self) -> &'static [ParamSpec] {
        ASSESS_PARAMS
    }

    fn about(&self) -> &'static str {
        "Re-identification and attribute-disclosure risk of any table, without releasing anything: rows (key, sensitive, value, note) with rows, suppressed, classes, min_class_size, avg_class_size, sample_uniques, prosecutor_risk_max, prosecutor_risk_avg, records_at_risk (at risk_threshold), marketer_risk, journalist_risk_max and population uniqueness (with a population: population_uniques_zayatz, _pitman, _snb, _dankar and population_uniques with their shares, population_model, sampling_fraction; a NULL value's note says why), and per sensitive column l_distinct_min, l_entropy_min, t_equal_max and t_ordered_max (numeric or date columns); with sampling weights (weights => 'column') sdcMicro's weights_sum, individual_risk_max, global_risk_expected, global_risk, records_above_risk_threshold and global_threshold (at max_global_risk). On a published release '*' is an ordinary label and rows whose every quasi-identifier is '*' count as suppressed. Owner-only: on a raw source the figures are exact facts about the data."
    }

    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let request = build_request(self.name(), ASSESS_PARAMS, args, context)?;
        Ok(Arc::new(LazyTable::new(
            assess_schema(),
            Arc::new(Cached::new(AssessRows {
                kind: Kind::Assess,
                request,
            })),
        )))
    }
}
