//! From the arguments of one `anonymize(...)` call to a validated [`AnonymizeRequest`]:
//! tables and columns resolved, every argument checked against the method's parameter
//! table, defaults filled in. Everything here runs at planning time, before any data is
//! read.

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, DataFusionError, Result};
use datafusion::logical_expr::planner::RelationPlannerContext;

use crate::budget::ledger::table_key;
use crate::engine::{AnonymizeRequest, QiSpec};
use crate::lattice::LatticeError;
use crate::method::{find_method, Method, MethodArgs, MethodSpec, METHODS};
use crate::names::parse_list;
use crate::params::ParamValues;
use crate::public::policy::SourcePolicy;
use crate::public::PublicRules;
use crate::sensitive::SensitiveSpec;
use crate::sql::args::BoundArgs;
use crate::sql::columns::resolve_column;

use super::call_columns::{prefix_error, CallColumns};
use super::identifiers::identifiers;
use super::read_view;
use super::unit::privacy_unit;
use crate::method::common_params::DEFAULT_METHOD;
use crate::method::COMMON_PARAMS;
use crate::pseudonym::PseudonymKey;

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
    pseudonym_key: Option<&PseudonymKey>,
) -> Result<AnonymizeRequest> {
    let method_name = args.string("method")?;
    let method = find_method_named(function, method_name.as_deref().unwrap_or(DEFAULT_METHOD))?;
    // A public call: the source's policy (the only way to a source), and the arguments
    // the owner fixed for the method added to the user's.
    let mut merged;
    let (args, source_policy) = match public {
        None => (args, None),
        Some(rules) => {
            // Shifting dates uses the owner's key: the owner's choice, never a public
            // user's (an owner's policy may fix it for a method).
            if let Some(name) = args
                .names()
                .find(|n| ["date_shift", "max_days"].contains(n))
            {
                return plan_err!(
                    "{function}(): argument '{name}' is for the data owner only: date shifting uses the owner's secret key"
                );
            }
            let source_policy = rules.source_policy(function, &args.required_string("source")?)?;
            rules.check_enabled(function, method.name, source_policy)?;
            let names: Vec<&str> = args.names().collect();
            merged = args.clone();
            for (name, value) in rules.fixed_arguments(function, method, source_policy, &names)? {
                merged.insert(&name, value);
            }
            (&merged, Some((rules, source_policy)))
        }
    };
    let common = ParamValues::parse(function, "every method", COMMON_PARAMS, args.values())?;
    check_applicable(function, method, args)?;
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
    // The ledger account's table: the source as resolved here, once (a public user's with
    // the registration's defaults, whatever the session's settings say later).
    let source_table = match public {
        Some(rules) => rules.account_table(&source_name),
        None => {
            let catalog = &context.context_provider().options().catalog;
            table_key(
                &source_name,
                &catalog.default_catalog,
                &catalog.default_schema,
            )
        }
    };
    let schema = source.schema();
    let tables = Tables {
        function,
        source: &source,
        public: source_policy,
    };
    let qi = if method.takes_hierarchies() {
        resolve_qi(&tables, context, &source_name, &schema, common.text("qi")?)?
    } else {
        numeric_qi(function, &source_name, &schema, common.text("qi")?)?
    };
    let (sensitive, sensitive_param) = match sensitive_text(function, &common)? {
        None => (Vec::new(), "sensitive"),
        Some((name, text)) => (
            resolve_sensitive(&tables, context, &source_name, &schema, &qi, name, text)?,
            name,
        ),
    };
    let qi_columns: Vec<String> = qi.iter().map(|q| q.column.clone()).collect();
    let columns = CallColumns {
        function,
        common: &common,
        schema: &schema,
        source_name: &source_name,
        qi: &qi,
        sensitive: &sensitive,
        method,
    };
    let unit = privacy_unit(&columns, public)?;
    let date_shift = read_view::date_shift(&columns, &unit, pseudonym_key)?;
    let identifiers = identifiers(&columns, public.is_some(), pseudonym_key)?;
    let configured = method
        .configure_for_unit(
            &MethodArgs {
                values: &values,
                has_informative: !sensitive.is_empty(),
                qi: &qi_columns,
            },
            &unit,
        )
        .map_err(|e| prefix_error(function, e))?;
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
    if let Some((rules, source_policy)) = source_policy {
        rules.check_method(function, method.name, &*configured, source_policy)?;
        let qi_pairs: Vec<(String, Option<String>)> = qi
            .iter()
            .map(|q| {
                (
                    q.column.clone(),
                    q.hierarchy.as_ref().map(|_| q.hierarchy_name.clone()),
                )
            })
            .collect();
        let sensitive_pairs: Vec<(String, Option<String>)> = sensitive
            .iter()
            .map(|s| {
                (
                    s.column.clone(),
                    s.hierarchy.as_ref().map(|(name, _)| name.clone()),
                )
            })
            .collect();
        rules.check_columns(function, source_policy, &qi_pairs, &sensitive_pairs)?;
        // A method that counts every informative value takes the values from a published
        // table for a public user: the set of cells is then public, not read from the data.
        if configured.wants_public_value_domain() {
            if let Some(column) = sensitive.iter().find(|s| s.hierarchy.is_none()) {
                return plan_err!(
                    "{function}(): method '{}' gives every value of the informative column a noisy count, so for public users the values come from a published table: write {sensitive_param} => '{}:<published hierarchy or code list>'",
                    method.name,
                    column.column
                );
            }
        }
    }
    // Pseudonyms ride with the sensitive columns from here on; the checks above are of the
    // sensitive columns named.
    let mut sensitive = sensitive;
    sensitive.extend(identifiers.pseudonym_columns());

    let dropped: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|n| !sensitive.iter().any(|s| &s.column == n) && !qi.iter().any(|q| &q.column == n))
        .collect();
    let seed = values.opt_u64("seed");
    let canonical_args = format!(
        "{};unit={};identifiers={:?};date_shift={:?}",
        canonical_args(&source_table, &qi, &sensitive, seed, &*configured),
        unit.canonical(),
        identifiers,
        date_shift
    );
    let source_identity = Arc::as_ptr(&source) as *const () as usize;
    let source = read_view::read_view(&source, &schema, &qi, date_shift.as_ref(), pseudonym_key)?;
    Ok(AnonymizeRequest {
        canonical_args,
        source_name,
        source_table,
        source,
        source_identity,
        date_shift,
        qi,
        sensitive,
        dropped,
        seed,
        method: configured,
        unit,
        identifiers,
        pseudonym_key: pseudonym_key.cloned(),
        max_release_rows: common.opt_u64("max_release_rows"),
        public: public.is_some(),
    })
}

/// The method called `name`, or an error listing the methods.
fn find_method_named(function: &str, name: &str) -> Result<&'static MethodSpec> {
    match find_method(name) {
        Some(method) => Ok(method),
        None => plan_err!(
            "{function}(): unknown method '{name}'; valid methods: {}",
            METHODS
                .iter()
                .map(|m| m.name)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
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
    /// For a public call: the rules and the source's policy.
    public: Option<(&'a PublicRules, &'a SourcePolicy)>,
}

impl Tables<'_> {
    /// The hierarchy a public call's quasi-identifier `column` gets when the call names
    /// none: the one the source's policy binds.
    fn bound_hierarchy(&self, column: &str) -> Option<String> {
        let (_, source) = self.public?;
        source.qi.get(column).cloned()
    }

    /// The domain a public call's informative `column` gets when the call names none: the
    /// one the source's policy binds.
    fn bound_domain(&self, column: &str) -> Option<String> {
        let (_, source) = self.public?;
        source.informative.get(column).cloned()
    }

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
        let Some((rules, _)) = self.public else {
            return Ok(found);
        };
        match found {
            Some(table) if !Arc::ptr_eq(&table, self.source) => Ok(Some(table)),
            _ => Err(rules.undeclared_hierarchy(self.function, name, column)),
        }
    }
}

/// Resolves the `qi` of a method that releases numbers, not hierarchy labels
/// (microaggregation): numeric columns without hierarchy tables.
fn numeric_qi(
    function: &str,
    source_name: &str,
    schema: &Schema,
    qi_text: &str,
) -> Result<Vec<QiSpec>> {
    let mut qi: Vec<QiSpec> = Vec::new();
    for item in parse_list("qi", qi_text, true).map_err(|e| prefix_error(function, e))? {
        if item.table.is_some() {
            return plan_err!(
                "{function}(): qi item '{}' names a hierarchy table, but method 'microaggregation' replaces values by group means and takes none: write qi => '{}'",
                item.written,
                item.column.text
            );
        }
        let column = resolve_column(function, schema, source_name, &item.column, ("qi", qi_text))?;
        let data_type = schema.field_with_name(&column)?.data_type();
        if !data_type.is_numeric() {
            return plan_err!(
                "{function}(): method 'microaggregation' needs numeric quasi-identifiers, and column '{column}' is {data_type}; generalize it with another method, or cast it in a view"
            );
        }
        if qi.iter().any(|q| q.column == column) {
            return plan_err!("{function}(): column '{column}' is listed twice in 'qi'");
        }
        qi.push(QiSpec {
            column,
            hierarchy_name: String::new(),
            hierarchy: None,
        });
    }
    if qi.is_empty() {
        return plan_err!("{function}(): argument 'qi' names no columns");
    }
    Ok(qi)
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
            None => tables
                .bound_hierarchy(&column)
                .unwrap_or_else(|| format!("{table_part}_hierarchy_{column}")),
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
            hierarchy: Some(hierarchy),
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
            None => tables.bound_domain(&name),
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
            pseudonym: false,
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
        .map(|q| {
            q.hierarchy
                .as_ref()
                .map_or(0, |h| h.schema().fields().len().saturating_sub(1))
        })
        .collect();
    bounds.resolve(&columns, &widths).map(|_| ())
}
