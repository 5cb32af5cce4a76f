//! SQL surface: a `RelationPlanner` that turns `FROM anonymize(...)` (any letter case,
//! positional and `name => value` arguments) into a scan of our table providers.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, DFSchema, Result, ScalarValue, TableReference};
use datafusion::datasource::provider_as_source;
use datafusion::logical_expr::planner::{
    PlannedRelation, RelationPlanner, RelationPlannerContext, RelationPlanning,
};
use datafusion::logical_expr::{Expr, LogicalPlanBuilder};
use datafusion::sql::sqlparser::ast::{Expr as SqlExpr, FunctionArg, FunctionArgExpr, TableFactor};

use super::args::{CallArgs, ParamSpec};

/// A table function planned by [`FunctionPlanner`].
pub trait SqlTableFunction: Debug + Send + Sync {
    /// Lower-case name used in SQL.
    fn name(&self) -> &'static str;
    /// Declared parameters (for errors and help).
    fn params(&self) -> &'static [ParamSpec];
    /// One-paragraph description for help.
    fn about(&self) -> &'static str;
    /// Whether the function shows exact figures of the raw data (counts, scores), so that
    /// only the data owner may call it: such functions exist only in registrations with
    /// [`crate::Access::Owner`].
    fn owner_only(&self) -> bool {
        false
    }
    /// Why an owner-only function is the data owner's only, as the error a public user
    /// gets says it.
    fn owner_only_reason(&self) -> &'static str {
        "it shows exact figures of the raw data"
    }
    /// Builds the provider for one call.
    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>>;
}

/// Plans calls of our table functions, matching names case-insensitively.
#[derive(Debug, Default)]
pub struct FunctionPlanner {
    functions: HashMap<String, Arc<dyn SqlTableFunction>>,
    /// Owner-only functions this registration withholds, with why, named in a clear error.
    withheld: Vec<(String, &'static str)>,
}

impl FunctionPlanner {
    /// A planner for `functions`; calls of a `withheld` function get an error saying it is
    /// owner-only.
    pub fn new(
        functions: Vec<Arc<dyn SqlTableFunction>>,
        withheld: Vec<(String, &'static str)>,
    ) -> Self {
        Self {
            functions: functions
                .into_iter()
                .map(|f| (f.name().to_string(), f))
                .collect(),
            withheld,
        }
    }
}

impl RelationPlanner for FunctionPlanner {
    fn plan_relation(
        &self,
        relation: TableFactor,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<RelationPlanning> {
        let TableFactor::Table {
            name,
            alias,
            args: Some(function_args),
            ..
        } = &relation
        else {
            return Ok(RelationPlanning::Original(Box::new(relation)));
        };
        let Some(ident) = (name.0.len() == 1).then(|| name.0[0].as_ident()).flatten() else {
            return Ok(RelationPlanning::Original(Box::new(relation)));
        };
        let lower = ident.value.to_ascii_lowercase();
        let Some(function) = self.functions.get(&lower).cloned() else {
            if let Some((_, reason)) = self.withheld.iter().find(|(name, _)| *name == lower) {
                return plan_err!(
                    "{lower}() is an owner-only function ({reason}) and is not available in this session, which was registered for public users; the data owner uses dfanon without --public, or registers with RegisterOptions::owner()"
                );
            }
            return Ok(RelationPlanning::Original(Box::new(relation)));
        };
        let alias = alias.clone();
        let mut call = CallArgs::default();
        for arg in function_args.args.clone() {
            match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => {
                    if !call.named.is_empty() {
                        return plan_err!(
                            "{}(): positional arguments must come before named ones",
                            function.name()
                        );
                    }
                    call.positional
                        .push(literal(context, e, function.name(), None)?);
                }
                FunctionArg::Named {
                    name,
                    arg: FunctionArgExpr::Expr(e),
                    ..
                }
                // `name => value` as the PostgreSQL dialect parses it (a prepared
                // statement on dfanon-server).
                | FunctionArg::ExprNamed {
                    name: SqlExpr::Identifier(name),
                    arg: FunctionArgExpr::Expr(e),
                    ..
                } => {
                    let key = name.value.to_ascii_lowercase();
                    let value = literal(context, e, function.name(), Some(&key))?;
                    call.named.push((key, value));
                }
                other => return plan_err!("{}(): unsupported argument '{other}'", function.name()),
            }
        }
        let provider = function.create(call, context)?;
        let plan = LogicalPlanBuilder::scan(
            TableReference::bare(format!("{}()", function.name())),
            provider_as_source(provider),
            None,
        )?
        .build()?;
        Ok(RelationPlanning::Planned(Box::new(PlannedRelation::new(
            plan, alias,
        ))))
    }
}

/// Reduces an argument expression to a literal value.
fn literal(
    context: &mut dyn RelationPlannerContext,
    expr: datafusion::sql::sqlparser::ast::Expr,
    function: &str,
    name: Option<&str>,
) -> Result<ScalarValue> {
    let shown = expr.to_string();
    let which = || {
        name.map(|n| format!("argument '{n}'"))
            .unwrap_or_else(|| "an argument".into())
    };
    // A bare name (`anonymize(adult, ...)`) would otherwise fail with DataFusion's
    // "No field named adult".
    if let SqlExpr::Identifier(_) | SqlExpr::CompoundIdentifier(_) = &expr {
        let example = match name {
            Some(n) => format!("{n} => '{shown}'"),
            None => format!("{function}('{shown}', ...)"),
        };
        return plan_err!(
            "{function}(): {} is the bare name {shown}; write table and column names as text in single quotes: {example}",
            which()
        );
    }
    let planned = context.sql_to_expr(expr, &DFSchema::empty())?;
    match fold(&planned) {
        Some(v) => Ok(v),
        None => plan_err!(
            "{function}(): {} must be a literal value, got {shown}",
            which()
        ),
    }
}

fn fold(expr: &Expr) -> Option<ScalarValue> {
    match expr {
        Expr::Literal(v, _) => Some(v.clone()),
        Expr::Negative(inner) => match fold(inner)? {
            ScalarValue::Int64(Some(x)) => Some(ScalarValue::Int64(Some(x.checked_neg()?))),
            ScalarValue::Float64(Some(x)) => Some(ScalarValue::Float64(Some(-x))),
            _ => None,
        },
        Expr::Cast(c) => fold(&c.expr)?.cast_to(c.field.data_type()).ok(),
        Expr::Alias(a) => fold(&a.expr),
        _ => None,
    }
}
