//! Registrations for public users ([`crate::Access::Public`]): what the session can reach,
//! which calls it may make, and the one error text a failed public release shows.
//!
//! The adversary is any SQL user of the session (docs/METHODS.md, "Who the adversary is").
//! Three layers keep everything outside a release's proven mechanism away from them:
//!
//! * the session's catalog shows only the tables the owner declared public and refuses
//!   every change ([`catalog`]); `CREATE EXTERNAL TABLE` is refused by table factories that refuse, and
//!   `COPY` and DML are refused before they run ([`guard`]). Sources are reached only
//!   through `anonymize(...)`, which looks them up in the owner's catalog;
//! * [`PublicRules`] checks each call against the owner's [`PublicPolicy`] at planning time,
//!   from its arguments and the public declarations only;
//! * a release that cannot be computed fails with [`PUBLIC_FAILURE`], whatever the cause,
//!   and data problems a record carries (a NULL or a value outside the public hierarchy)
//!   drop that record instead of failing (see `engine::load_base`).

pub mod guard;
pub mod policy;
pub mod published;
pub mod records;
pub mod settings;
pub mod statements;
pub mod tables;

use std::sync::Arc;

use datafusion::catalog::{CatalogProviderList, TableProvider};
use datafusion::common::{plan_err, DataFusionError, Result, ScalarValue};
use datafusion::execution::SessionState;
use datafusion::prelude::SessionContext;

use crate::budget::ledger::table_key;
use crate::method::{find_method, Guarantee, Method, MethodSpec};
use crate::public::policy::{PublicPolicy, SourcePolicy};
use crate::session::table_reference_candidates;

/// The whole error a public user sees when a release cannot be computed: the same text
/// for every cause, so a refusal tells nothing about the data.
pub const PUBLIC_FAILURE: &str = "anonymize(): the release could not be computed with these arguments; the data owner sees the reason by making the same call in an owner session";

/// What a public registration knows: the owner's policy, the owner's catalog (where
/// `anonymize(...)` finds its sources) and the fixed ε budget.
#[derive(Debug)]
pub struct PublicRules {
    policy: Arc<PublicPolicy>,
    owner_tables: Arc<dyn CatalogProviderList>,
    default_catalog: String,
    default_schema: String,
    epsilon_budget: f64,
    owner_settings: settings::OwnerSettings,
}

impl PublicRules {
    /// The rows ceiling of every public release.
    pub fn max_release_rows(&self) -> u64 {
        self.policy.max_release_rows
    }

    /// The source table `name` from the owner's catalog (sources are not visible to
    /// public SQL otherwise); `None` when there is none.
    pub fn source(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        for candidate in table_reference_candidates(name) {
            let resolved = candidate.resolve(&self.default_catalog, &self.default_schema);
            let Some(catalog) = self.owner_tables.catalog(&resolved.catalog) else {
                continue;
            };
            let Some(schema) = catalog.schema(&resolved.schema) else {
                continue;
            };
            if !schema.table_exist(&resolved.table) {
                continue;
            }
            // Catalog lookups of registered tables complete immediately.
            if let Some(table) = futures::executor::block_on(schema.table(&resolved.table))? {
                return Ok(Some(table));
            }
        }
        Ok(None)
    }

    /// The ledger account's table of the source `name`: the name resolved with the
    /// registration's default catalog and schema (where [`Self::source`] finds it), never
    /// with the session's current settings.
    pub fn account_table(&self, name: &str) -> String {
        table_key(name, &self.default_catalog, &self.default_schema)
    }

    /// Refuses a release in a session whose settings are no longer the owner's
    /// ([`settings`]).
    pub fn check_settings(&self, function: &str, state: &SessionState) -> Result<()> {
        self.owner_settings.check(function, state)
    }

    /// Refuses the arguments a public user may not give: `seed` (a known seed makes every
    /// draw known) and `max_release_rows` (the owner's ceiling applies).
    pub fn check_arguments<'a>(
        &self,
        function: &str,
        mut names: impl Iterator<Item = &'a str>,
    ) -> Result<()> {
        if let Some(name) = names.find(|n| *n == "seed" || *n == "max_release_rows") {
            return match name {
                "seed" => plan_err!(
                    "{function}(): argument 'seed' is not available to public users: with a known seed every random draw is known and the release has no privacy guarantee (seeds are for the data owner's tests)"
                ),
                _ => plan_err!(
                    "{function}(): argument 'max_release_rows' is set by the data owner for public users ({} rows per release) and cannot be given",
                    self.policy.max_release_rows
                ),
            };
        }
        Ok(())
    }

    /// The policy of the source `name` ([`PublicPolicy::sources`]): a source without one
    /// gets the same error as a table that does not exist, so the policy is the only way
    /// to a source.
    pub fn source_policy(&self, function: &str, name: &str) -> Result<&SourcePolicy> {
        let key = self.account_table(name);
        match self.policy.source(&key, |n| self.account_table(n)) {
            Some((_, source)) => Ok(source),
            None => plan_err!("{function}(): source table '{name}' not found"),
        }
    }

    /// The arguments of a public call of `method` on a source with the policy `source`:
    /// the user's, and the arguments the owner fixed for the method (which the user may
    /// not give). A method that is not differentially private takes every argument from
    /// the owner: the call gives only the source and the method.
    pub fn fixed_arguments(
        &self,
        function: &str,
        method: &MethodSpec,
        source: &SourcePolicy,
        given: &[&str],
    ) -> Result<Vec<(String, ScalarValue)>> {
        let fixed = source.fixed.get(method.name);
        if method.guarantee != Guarantee::WholeReleaseDp {
            if let Some(name) = given.iter().find(|n| **n != "source" && **n != "method") {
                return plan_err!(
                    "{function}(): method '{}' is not differentially private, so public users call it with the data owner's arguments only: argument '{name}' cannot be given (give only the source and the method)",
                    method.name
                );
            }
        }
        let mut merged = Vec::new();
        for (name, value) in fixed.into_iter().flatten() {
            if given.contains(&name.as_str()) {
                return plan_err!(
                    "{function}(): argument '{name}' of method '{}' is fixed by the data owner for public users ({name} => {value}) and cannot be given",
                    method.name
                );
            }
            merged.push((name.clone(), value.to_scalar()));
        }
        Ok(merged)
    }

    /// Refuses a method the owner did not enable for the source, and every release when
    /// the session has no finite ε budget: checked first, from the method's name alone.
    pub fn check_enabled(&self, function: &str, method: &str, source: &SourcePolicy) -> Result<()> {
        let enabled = source.methods(&self.policy);
        if !enabled.iter().any(|m| m == method) {
            return plan_err!(
                "{function}(): method '{method}' is not enabled for public users of this source; enabled: {} (the data owner's policy lists the methods)",
                quoted(enabled)
            );
        }
        if !self.epsilon_budget.is_finite() {
            return plan_err!(
                "{function}(): this session has no privacy budget, so it releases nothing: the data owner sets one with dfanon --epsilon-budget or RegisterOptions::budget"
            );
        }
        Ok(())
    }

    /// The column identifying a person in every public release, if the owner set one
    /// ([`PublicPolicy::person`]).
    pub fn person(&self) -> Option<&str> {
        self.policy.person.as_deref()
    }

    /// Checks the columns of a call against the source's policy: every quasi-identifier
    /// with the hierarchy bound to it (`None` for a method without hierarchies), every
    /// informative column with its bound domain or among the plain columns.
    pub fn check_columns(
        &self,
        function: &str,
        source: &SourcePolicy,
        qi: &[(String, Option<String>)],
        sensitive: &[(String, Option<String>)],
    ) -> Result<()> {
        let same = |a: &str, b: &str| self.account_table(a) == self.account_table(b);
        for (column, hierarchy) in qi {
            match source.qi.get(column) {
                // A method without hierarchies (microaggregation) takes the column only.
                Some(_) if hierarchy.is_none() => {}
                Some(bound) if hierarchy.as_deref().is_some_and(|h| same(bound, h)) => {}
                Some(bound) => {
                    return plan_err!(
                        "{function}(): quasi-identifier '{column}' is generalized with the hierarchy '{bound}' for public users; write qi => '{column}' or '{column}:{bound}'"
                    )
                }
                None => {
                    return plan_err!(
                        "{function}(): column '{column}' is not a quasi-identifier public users may release from this source; they may: {}",
                        quoted(&source.qi.keys().cloned().collect::<Vec<_>>())
                    )
                }
            }
        }
        for (column, domain) in sensitive {
            match (source.informative.get(column), domain) {
                (Some(bound), Some(given)) if same(bound, given) => {}
                (Some(bound), _) => {
                    return plan_err!(
                        "{function}(): informative column '{column}' takes its values from '{bound}' for public users; write informative => '{column}' or '{column}:{bound}'"
                    )
                }
                (None, None) if source.plain.contains(column) => {}
                (None, _) => {
                    let mut allowed: Vec<String> = source.informative.keys().cloned().collect();
                    allowed.extend(source.plain.iter().cloned());
                    return plan_err!(
                        "{function}(): column '{column}' is not an informative column public users may release from this source; they may: {}",
                        if allowed.is_empty() { "none".to_string() } else { quoted(&allowed) }
                    );
                }
            }
        }
        Ok(())
    }

    /// Checks a configured call against the source's policy (after
    /// [`Self::check_enabled`]): a method with a proven guarantee, ε within the source's
    /// range.
    pub fn check_method(
        &self,
        function: &str,
        method: &str,
        configured: &dyn Method,
        source: &SourcePolicy,
    ) -> Result<()> {
        if !configured.proven() {
            return plan_err!(
                "{function}(): method '{method}' with these options has no proven guarantee (its guarantee text says NOT PROVEN) and is available to the data owner only; public users use its defaults (for safepub: final_selection => 'exponential' or 'last', search_sample => 'independent')"
            );
        }
        if let Some((argument, cells, default)) = configured.cells_bound() {
            let most = self.policy.max_release_rows.max(default);
            if cells > most {
                return plan_err!(
                    "{function}(): argument '{argument}' of method '{method}' is {cells}; public users may give at most {most} (the larger of its default and the rows a public release may have)"
                );
            }
        }
        let Some(spec) = find_method(method) else {
            return Ok(());
        };
        if !spec.is_differentially_private() {
            return Ok(());
        }
        let epsilon = configured.budget().epsilon;
        match source.epsilon_range(&self.policy) {
            (min, _) if epsilon < min => plan_err!(
                "{function}(): epsilon must be at least {min} for public users of this source"
            ),
            (_, Some(max)) if epsilon > max => plan_err!(
                "{function}(): epsilon must be at most {max} for public users of this source"
            ),
            _ => Ok(()),
        }
    }

    /// The error for a hierarchy table a public user named that is not declared public
    /// (the same text whether or not such a table exists).
    pub fn undeclared_hierarchy(
        &self,
        function: &str,
        table: &str,
        column: &str,
    ) -> DataFusionError {
        DataFusionError::Plan(format!(
            "{function}(): hierarchy table '{table}' for column '{column}' is not one of the tables the data owner declared public in this session"
        ))
    }
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Turns `ctx` into a public session: its catalog shows only the declared public tables
/// and the releases `published` names, and refuses changes; its table factories refuse,
/// writes are refused. Returns the rules
/// its `anonymize` functions check.
pub fn install(
    ctx: &SessionContext,
    policy: &PublicPolicy,
    epsilon_budget: f64,
    published: published::PublishedNames,
) -> Result<Arc<PublicRules>> {
    policy.validate().map_err(DataFusionError::Configuration)?;
    let policy = Arc::new(policy.clone());
    let state = ctx.state();
    let owner_tables = state.catalog_list().clone();
    let defaults = &state.config_options().catalog;
    let rules = Arc::new(PublicRules {
        policy: policy.clone(),
        owner_tables: owner_tables.clone(),
        default_catalog: defaults.default_catalog.clone(),
        default_schema: defaults.default_schema.clone(),
        epsilon_budget,
        owner_settings: settings::OwnerSettings::of(&state),
    });
    // Each source's columns are checked where the session has the table already (a
    // Python context may get its tables after registering); a source the session does not
    // have is not found for public users, like any other name.
    for (name, source) in &policy.sources {
        if let Some(table) = rules.source(name)? {
            let schema = table.schema();
            let columns = source
                .qi
                .keys()
                .chain(source.informative.keys())
                .chain(&source.plain);
            for column in columns {
                if schema.field_with_name(column).is_err() {
                    return Err(DataFusionError::Configuration(format!(
                        "public policy, source '{name}': the table has no column '{column}'"
                    )));
                }
            }
        }
    }
    ctx.register_catalog_list(Arc::new(tables::PublicCatalogList::new(
        owner_tables,
        policy,
        published,
    )));
    for factory in ctx.state_ref().write().table_factories_mut().values_mut() {
        *factory = Arc::new(guard::RefusedFactory);
    }
    ctx.add_analyzer_rule(Arc::new(guard::PublicGuard));
    Ok(rules)
}
