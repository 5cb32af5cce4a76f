//! From the arguments of one `anonymize(...)` call to a validated [`AnonymizeRequest`]:
//! tables and columns resolved, every argument checked against the method's parameter
//! table, defaults filled in. Everything here runs at planning time, before any data is
//! read.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::Schema;
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, DataFusionError, Result};
use datafusion::logical_expr::planner::RelationPlannerContext;

use crate::engine::{AnonymizeRequest, QiSpec};
use crate::lattice::LatticeError;
use crate::method::{find_method, Method, MethodArgs, MethodSpec, METHODS};
use crate::names::{parse_list, written_name, ListName};
use crate::params::{ParamDefault, ParamKind, ParamSpec, ParamValues};
use crate::public::PublicRules;
use crate::sensitive::SensitiveSpec;
use crate::sql::args::BoundArgs;

use super::unit::{per_row_values, privacy_unit};
use crate::privacy_unit::PrivacyUnit;

/// Name of the default method.
const DEFAULT_METHOD: &str = "ipa";

/// The arguments of `anonymize` that do not depend on the method.
pub const COMMON_PARAMS: &[ParamSpec] = &[
    ParamSpec::new(
        "source",
        ParamKind::Text,
        ParamDefault::Required,
        "table or view to anonymize (first positional argument)",
    ),
    ParamSpec::new(
        "method",
        ParamKind::Text,
        ParamDefault::Text(DEFAULT_METHOD),
        "anonymization method (see the method list)",
    ),
    ParamSpec::new(
        "qi",
        ParamKind::Text,
        ParamDefault::Required,
        "quasi-identifiers as 'col[:hierarchy_table], ...'; without ':table' the hierarchy <source>_hierarchy_<col> is used; a name containing ',' or ':' goes in double quotes, e.g. '\"a:b\":h_ab, sex' (a double quote inside is written twice)",
    ),
    ParamSpec::new(
        "sensitive",
        ParamKind::Text,
        ParamDefault::Optional("none: only the quasi-identifiers are released"),
        "the sensitive (analysed) columns as 'col[:hierarchy_table], ...', released unchanged ('kanon' accepts several, the other methods one); ':table' gives the column's hierarchy or order for t-closeness; 'informative' is its synonym",
    ),
    ParamSpec::new(
        "informative",
        ParamKind::Text,
        ParamDefault::Optional("none"),
        "synonym of 'sensitive' (the IPA paper's name for the released unchanged column)",
    ),
    ParamSpec::new(
        "person",
        ParamKind::Text,
        ParamDefault::Optional("none: each row is one individual"),
        "the column identifying a person who may own several rows (e.g. 'patient_id'), never released: the guarantee then protects persons, not rows; the differentially private methods keep at most max_rows_per_person rows of each person, chosen at random, and 'kanon' counts distinct persons per class",
    ),
    ParamSpec::new(
        "max_rows_per_person",
        ParamKind::Count,
        ParamDefault::Optional("1"),
        "with person, for the differentially private methods (ipa, safepub, dp_histogram): the most rows of one person the release uses (the rest are left out at random); epsilon and delta stay per person, each row gets epsilon / max_rows_per_person (group privacy)",
    ),
    ParamSpec::new(
        "max_release_rows",
        ParamKind::Count,
        ParamDefault::Optional("10 x the input rows, at least 100000"),
        "largest number of rows the release may have: a release whose size bound, computed before anything is drawn, is larger is refused (e.g. a tiny epsilon making IPA add millions of counterfeits); in sessions for public users the data owner sets it and it cannot be given",
    ),
];

/// Every parameter `anonymize` accepts: the common ones, then each method's, merged by
/// name. A parameter that only some methods accept says which in its description; one
/// whose default differs between methods lists each.
pub static ANONYMIZE_PARAMS: LazyLock<Vec<ParamSpec>> = LazyLock::new(merged_params);

fn merged_params() -> Vec<ParamSpec> {
    let mut names: Vec<&'static str> = Vec::new();
    for spec in METHODS.iter().flat_map(|m| m.params) {
        if !names.contains(&spec.name) {
            names.push(spec.name);
        }
    }
    let mut out: Vec<ParamSpec> = COMMON_PARAMS.to_vec();
    out[1].doc = leak(format!(
        "anonymization method: {}",
        METHODS
            .iter()
            .map(|m| format!("'{}'", m.name))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    for name in names {
        let owners: Vec<(&MethodSpec, &ParamSpec)> = METHODS
            .iter()
            .filter_map(|m| m.params.iter().find(|p| p.name == name).map(|p| (*m, p)))
            .collect();
        let first = owners[0].1;
        let mut spec = *first;
        if owners.len() < METHODS.len() {
            let which: Vec<&str> = owners.iter().map(|(m, _)| m.name).collect();
            spec.doc = leak(format!("{}: {}", which.join(", "), first.doc));
        }
        if owners.iter().any(|(_, p)| p.default != first.default) {
            let each: Vec<String> = owners
                .iter()
                .map(|(m, p)| {
                    let default = p.default.describe().unwrap_or_else(|| "required".into());
                    format!("{}: {default}", m.name)
                })
                .collect();
            spec.default = ParamDefault::Optional(leak(each.join("; ")));
        }
        out.push(spec);
    }
    out
}

/// Texts of the merged table, built once per process.
fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// Builds the request of one call of `function` (`anonymize` or one of its views).
///
/// For a public registration (`public`), the source is looked up in the owner's catalog,
/// hierarchies only among the declared public tables, and the call is checked against the
/// owner's policy.
pub fn build_request(
    function: &str,
    args: &BoundArgs,
    context: &mut dyn RelationPlannerContext,
    public: Option<&PublicRules>,
) -> Result<AnonymizeRequest> {
    let common = ParamValues::parse(function, "every method", COMMON_PARAMS, args.values())?;
    let method_name = common.text("method")?;
    let Some(method) = find_method(method_name) else {
        return plan_err!(
            "{function}(): unknown method '{method_name}'; valid methods: {}",
            METHODS
                .iter()
                .map(|m| m.name)
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    check_applicable(function, method, args)?;
    if let Some(rules) = public {
        rules.check_enabled(function, method.name)?;
    }
    let context_text = format!("method '{}'", method.name);
    let values = ParamValues::parse(function, &context_text, method.params, args.values())?;

    let source_name = common.text("source")?.to_string();
    let source = match public {
        None => resolve_table(function, context, &source_name, "source table")?,
        Some(rules) => match rules.source(&source_name)? {
            Some(table) => table,
            None => return plan_err!("{function}(): source table '{source_name}' not found"),
        },
    };
    let schema = source.schema();
    let tables = Tables {
        function,
        source: &source,
        public,
    };
    let qi = resolve_qi(&tables, context, &source_name, &schema, common.text("qi")?)?;
    let (sensitive, sensitive_param) = match sensitive_text(function, &common)? {
        None => (Vec::new(), "sensitive"),
        Some((name, text)) => (
            resolve_sensitive(&tables, context, &source_name, &schema, &qi, name, text)?,
            name,
        ),
    };
    let qi_columns: Vec<String> = qi.iter().map(|q| q.column.clone()).collect();
    let unit = privacy_unit(
        function,
        &common,
        &schema,
        &source_name,
        &qi,
        &sensitive,
        method,
        public,
    )?;
    let values = per_row_values(values, &unit, method)?;
    let configured = (method.configure)(&MethodArgs {
        values: &values,
        has_informative: !sensitive.is_empty(),
        qi: &qi_columns,
    })
    .map_err(|e| per_row_context(prefix_error(function, e), &unit, method, &values))?;
    check_level_bounds(&*configured, &qi)
        .map_err(|e| DataFusionError::Plan(format!("{function}(): {e}")))?;
    if sensitive.len() > configured.max_sensitive_columns() {
        return plan_err!(
            "{function}(): '{sensitive_param}' must name exactly one column, got '{}' (method '{}' releases one sensitive column; 'kanon' releases several)",
            common.opt_text(sensitive_param).unwrap_or_default(),
            method.name
        );
    }
    configured
        .check_sensitive(&sensitive)
        .map_err(|e| prefix_error(function, e))?;
    if let Some(rules) = public {
        rules.check_method(
            function,
            method.name,
            configured.budget(),
            values.opt_u64("k"),
            &qi_columns,
        )?;
    }

    let dropped: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|n| !sensitive.iter().any(|s| &s.column == n) && !qi.iter().any(|q| &q.column == n))
        .collect();
    let seed = values.opt_u64("seed");
    let canonical_args = format!(
        "{};unit={}",
        canonical_args(&source_name, &qi, &sensitive, seed, &*configured),
        unit.canonical()
    );
    Ok(AnonymizeRequest {
        canonical_args,
        source_name,
        source,
        qi,
        sensitive,
        dropped,
        seed,
        method: configured,
        unit,
        max_release_rows: common.opt_u64("max_release_rows"),
        public: public.is_some(),
    })
}

/// Every argument given must belong to the common table or the method's.
fn check_applicable(function: &str, method: &MethodSpec, args: &BoundArgs) -> Result<()> {
    let accepts = |name: &str| {
        COMMON_PARAMS.iter().any(|p| p.name == name) || method.params.iter().any(|p| p.name == name)
    };
    for name in args.names() {
        if accepts(name) {
            continue;
        }
        if let Some((_, why)) = method.refuses.iter().find(|(n, _)| *n == name) {
            return plan_err!(
                "{function}(): argument '{name}' does not apply to method '{}': {why}",
                method.name
            );
        }
        let valid: Vec<&str> = COMMON_PARAMS
            .iter()
            .chain(method.params)
            .map(|p| p.name)
            .collect();
        return plan_err!(
            "{function}(): argument '{name}' does not apply to method '{}'; its arguments are: {}",
            method.name,
            valid.join(", ")
        );
    }
    Ok(())
}

/// The cache key's argument part: the resolved source, columns and hierarchies, the seed,
/// and the configured method (its validated parameters, every default filled in), so that
/// calls meaning the same release (defaults written out or not, `1` or `1.0`, another letter
/// case, spacing in `qi`) share one.
fn canonical_args(
    source_name: &str,
    qi: &[QiSpec],
    sensitive: &[SensitiveSpec],
    seed: Option<u64>,
    method: &dyn Method,
) -> String {
    let qi_text: Vec<String> = qi
        .iter()
        .map(|q| format!("{:?}:{:?}", q.column, q.hierarchy_name))
        .collect();
    let sensitive_text: Vec<String> = sensitive
        .iter()
        .map(|s| match &s.hierarchy {
            None => format!("{:?}", s.column),
            Some((name, _)) => format!("{:?}:{name:?}", s.column),
        })
        .collect();
    format!(
        "source={source_name:?};qi={};informative={:?};seed={seed:?};method={method:?}",
        qi_text.join(","),
        (!sensitive.is_empty()).then(|| sensitive_text.join(",")),
    )
}

fn resolve_table(
    function: &str,
    context: &mut dyn RelationPlannerContext,
    name: &str,
    what: &str,
) -> Result<Arc<dyn TableProvider>> {
    match crate::sql::resolve::resolve_table(context, name)? {
        Some(provider) => Ok(provider),
        None => plan_err!("{function}(): {what} '{name}' not found"),
    }
}

/// Where the tables of one call are found.
struct Tables<'a> {
    function: &'a str,
    source: &'a Arc<dyn TableProvider>,
    public: Option<&'a PublicRules>,
}

impl Tables<'_> {
    /// The hierarchy table `name` of `column`; `None` when there is none. For a public
    /// user only a declared public table other than the source, with one error text
    /// whether or not an undeclared table of that name exists (nothing is read).
    fn hierarchy(
        &self,
        context: &mut dyn RelationPlannerContext,
        name: &str,
        column: &str,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        let found = crate::sql::resolve::resolve_table(context, name)?;
        let Some(rules) = self.public else {
            return Ok(found);
        };
        match found {
            Some(table) if !Arc::ptr_eq(&table, self.source) => Ok(Some(table)),
            _ => Err(rules.undeclared_hierarchy(self.function, name, column)),
        }
    }
}

/// Finds a column: a quoted name by its exact spelling; a plain name by its exact spelling,
/// else by a unique case-insensitive match.
/// `list` is the argument holding the name (its name and text), for a quoting hint.
pub(super) fn resolve_column(
    function: &str,
    schema: &Schema,
    table: &str,
    wanted: &ListName,
    list: (&str, &str),
) -> Result<String> {
    let name = wanted.text.as_str();
    if schema.field_with_name(name).is_ok() {
        return Ok(name.to_string());
    }
    let matches: Vec<&str> = schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .filter(|n| !wanted.quoted && n.eq_ignore_ascii_case(name))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.to_string()),
        [_, _, ..] => {
            let shown: Vec<String> = matches.iter().map(|m| format!("'{m}'")).collect();
            plan_err!(
                "{function}(): column name '{name}' is ambiguous: table '{table}' has columns {} that differ only in letter case; write the one you mean exactly as it is spelled",
                shown.join(" and ")
            )
        }
        [] => {
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            let how = if wanted.quoted {
                " (a name in double quotes must match exactly)"
            } else {
                ""
            };
            let hint = if wanted.quoted {
                String::new()
            } else {
                quoting_hint(schema, list)
            };
            plan_err!(
                "{function}(): table '{table}' has no column '{name}'{how}; its columns are: {}{hint}",
                names.join(", ")
            )
        }
    }
}

/// When a column whose name holds `,` or `:` is written unquoted in the list argument
/// `list` (its name and its text), how to write it: split at the `,` or `:`, its parts
/// named no column.
fn quoting_hint(schema: &Schema, list: (&str, &str)) -> String {
    let (param, text) = list;
    for field in schema.fields() {
        let name = field.name();
        if !name.contains([',', ':']) {
            continue;
        }
        let Some(at) = text.find(name.as_str()) else {
            continue;
        };
        // The rest of the item: a ':table' suffix (up to the next ',').
        let rest = &text[at + name.len()..];
        let suffix = match rest.trim_start().strip_prefix(':') {
            Some(table) => format!(":{}", table.split(',').next().unwrap_or("").trim()),
            None => String::new(),
        };
        return format!(
            "; the column '{name}' has ',' or ':' in its name: write it in double quotes, e.g. {param} => '{}{suffix}'",
            written_name(name)
        );
    }
    String::new()
}

/// Resolves `qi => 'col[:hierarchy], ...'` (grammar: the `names` module) to columns and
/// hierarchy tables.
fn resolve_qi(
    tables: &Tables<'_>,
    context: &mut dyn RelationPlannerContext,
    source_name: &str,
    schema: &Schema,
    qi_text: &str,
) -> Result<Vec<QiSpec>> {
    let function = tables.function;
    let table_part = source_name.rsplit('.').next().unwrap_or(source_name);
    let mut qi: Vec<QiSpec> = Vec::new();
    for item in parse_list("qi", qi_text, true).map_err(|e| prefix_error(function, e))? {
        if item.column.text.is_empty() {
            return plan_err!(
                "{function}(): qi item '{}' names no column before ':'; write qi => 'column:hierarchy_table'",
                item.written
            );
        }
        let column = resolve_column(function, schema, source_name, &item.column, ("qi", qi_text))?;
        let hierarchy_name = match &item.table {
            Some(table) if table.text.is_empty() => {
                return plan_err!(
                    "{function}(): qi item '{}' names no hierarchy table after ':'; write qi => '{}:<hierarchy table>', or just '{}' for the default table '{table_part}_hierarchy_{column}'",
                    item.written,
                    item.column.text,
                    item.column.text
                );
            }
            Some(table) => table.text.clone(),
            None => format!("{table_part}_hierarchy_{column}"),
        };
        if qi.iter().any(|q| q.column == column) {
            return plan_err!("{function}(): column '{column}' is listed twice in 'qi'");
        }
        let Some(hierarchy) = tables.hierarchy(context, &hierarchy_name, &column)? else {
            return plan_err!(
                "{function}(): hierarchy table '{hierarchy_name}' for column '{column}' not found; create it (e.g. CREATE VIEW {hierarchy_name} AS SELECT * FROM interval_hierarchy(...)) or name one with qi => '{column}:<table>'"
            );
        };
        qi.push(QiSpec {
            column,
            hierarchy_name,
            hierarchy,
        });
    }
    if qi.is_empty() {
        return plan_err!("{function}(): argument 'qi' names no columns");
    }
    Ok(qi)
}

/// The text of `sensitive` or of its synonym `informative`, with the name that was used;
/// giving both is an error.
fn sensitive_text<'a>(
    function: &str,
    common: &'a ParamValues,
) -> Result<Option<(&'static str, &'a str)>> {
    match (common.opt_text("sensitive"), common.opt_text("informative")) {
        (Some(_), Some(_)) => {
            plan_err!("{function}(): give 'sensitive' or its synonym 'informative', not both")
        }
        (Some(text), None) => Ok(Some(("sensitive", text))),
        (None, Some(text)) => Ok(Some(("informative", text))),
        (None, None) => Ok(None),
    }
}

/// Resolves `sensitive => 'col[:hierarchy], ...'` (or `informative => ...`, named `param`):
/// at least one column, none of them a quasi-identifier or listed twice; a hierarchy table
/// only where one is named.
fn resolve_sensitive(
    tables: &Tables<'_>,
    context: &mut dyn RelationPlannerContext,
    source_name: &str,
    schema: &Schema,
    qi: &[QiSpec],
    param: &str,
    text: &str,
) -> Result<Vec<SensitiveSpec>> {
    let function = tables.function;
    let mut out: Vec<SensitiveSpec> = Vec::new();
    for item in parse_list(param, text, true).map_err(|e| prefix_error(function, e))? {
        if item.column.text.is_empty() {
            return plan_err!(
                "{function}(): {param} item '{}' names no column before ':'; write {param} => 'column' or 'column:hierarchy_table'",
                item.written
            );
        }
        let name = resolve_column(function, schema, source_name, &item.column, (param, text))?;
        let hierarchy_name = match item.table {
            Some(table) if table.text.is_empty() => {
                return plan_err!(
                    "{function}(): {param} item '{}' names no hierarchy table after ':'",
                    item.written
                )
            }
            Some(table) => Some(table.text),
            None => None,
        };
        if qi.iter().any(|q| q.column == name) {
            return plan_err!(
                "{function}(): column '{name}' cannot be both quasi-identifier and {param}"
            );
        }
        if out.iter().any(|s| s.column == name) {
            return plan_err!("{function}(): column '{name}' is listed twice in '{param}'");
        }
        let hierarchy = match hierarchy_name {
            None => None,
            Some(h) => {
                let Some(table) = tables.hierarchy(context, &h, &name)? else {
                    return plan_err!(
                        "{function}(): hierarchy table '{h}' for sensitive column '{name}' not found"
                    );
                };
                Some((h, table))
            }
        };
        let data_type = schema.field_with_name(&name)?.data_type().clone();
        out.push(SensitiveSpec {
            column: name,
            data_type,
            hierarchy,
        });
    }
    if out.is_empty() {
        return plan_err!("{function}(): '{param}' names no column, got '{text}'");
    }
    Ok(out)
}

/// Checks the columns named inside method arguments (`qi_weights`, `min_levels`,
/// `max_levels`) at planning time: every named column is a quasi-identifier, and no level exceeds what its hierarchy table can hold (its column
/// count − 1; the exact height is checked again when the hierarchy is loaded).
fn check_level_bounds(method: &dyn Method, qi: &[QiSpec]) -> Result<(), LatticeError> {
    let columns: Vec<&str> = qi.iter().map(|q| q.column.as_str()).collect();
    for (param, name) in method.named_columns() {
        crate::lattice::qi_position(param, &columns, name)?;
    }
    let bounds = method.level_bounds();
    if bounds.is_unbounded() {
        return Ok(());
    }
    let widths: Vec<usize> = qi
        .iter()
        .map(|q| q.hierarchy.schema().fields().len().saturating_sub(1))
        .collect();
    bounds.resolve(&columns, &widths).map(|_| ())
}

/// A planning error prefixed with the function name: a planning error's message, or any
/// other error's full text.
pub(super) fn prefix_error(function: &str, e: DataFusionError) -> DataFusionError {
    let message = match e {
        DataFusionError::Plan(message) => message,
        other => other.strip_backtrace(),
    };
    DataFusionError::Plan(format!("{function}(): {message}"))
}

/// A method's refusal of its per-row budget, with where that budget came from.
fn per_row_context(
    e: DataFusionError,
    unit: &PrivacyUnit,
    method: &MethodSpec,
    values: &ParamValues,
) -> DataFusionError {
    match unit {
        PrivacyUnit::Person { max_rows, .. } if *max_rows > 1 && method.is_differentially_private() => {
            DataFusionError::Plan(format!(
                "{} (per person, each row gets epsilon / max_rows_per_person = {}: lower max_rows_per_person or raise epsilon)",
                e.strip_backtrace().trim_start_matches("Error during planning: "),
                values.opt_f64("epsilon").unwrap_or(f64::NAN)
            ))
        }
        _ => e,
    }
}
