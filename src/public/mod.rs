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

pub mod catalog;
pub mod guard;
pub mod published;
pub mod records;
pub mod settings;
pub mod statements;

use std::sync::Arc;

use datafusion::catalog::{CatalogProviderList, TableProvider};
use datafusion::common::{config_err, plan_err, DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::prelude::SessionContext;

use crate::access::{PublicPolicy, RegisterOptions};
use crate::budget::ledger::table_key;
use crate::method::{find_method, Method};
use crate::session::table_reference_candidates;

/// The whole error a public user sees when a release cannot be computed: the same text
/// for every cause, so a refusal tells nothing about the data.
pub const PUBLIC_FAILURE: &str = "anonymize(): the release could not be computed with these arguments; the data owner sees the reason by making the same call in an owner session";

/// The syntactic methods, whose releases carry no differential-privacy guarantee.
const SYNTACTIC_METHODS: [&str; 3] = ["kanon", "upa", "microaggregation"];

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

    /// Refuses a method the owner did not enable, and every release when the session has
    /// no finite ε budget: checked first, from the method's name alone.
    pub fn check_enabled(&self, function: &str, method: &str) -> Result<()> {
        if !self.policy.methods.iter().any(|m| m == method) {
            return plan_err!(
                "{function}(): method '{method}' is not enabled for public users of this session; enabled: {} (the data owner enables methods with dfanon --public-method or PublicPolicy::methods)",
                quoted(&self.policy.methods)
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

    /// Checks a configured call against the policy (after [`Self::check_enabled`]): ε at
    /// least the minimum; for a syntactic method `k` at least the minimum and exactly the
    /// owner's quasi-identifiers.
    pub fn check_method(
        &self,
        function: &str,
        method: &str,
        configured: &dyn Method,
        k: Option<u64>,
        qi: &[String],
    ) -> Result<()> {
        let cost = configured.budget();
        if !configured.proven() {
            return plan_err!(
                "{function}(): method '{method}' with these options has no proven guarantee (its guarantee text says NOT PROVEN) and is available to the data owner only; public users use its defaults (for safepub: final_selection => 'last', search_sample => 'independent')"
            );
        }
        if SYNTACTIC_METHODS.contains(&method) {
            let (Some(min_k), Some(fixed)) = (self.policy.min_k, &self.policy.syntactic_qi) else {
                return plan_err!(
                    "{function}(): method '{method}' needs a minimum k and fixed quasi-identifiers set by the data owner (dfanon --public-min-k and --public-qi, or PublicPolicy::min_k and syntactic_qi)"
                );
            };
            if k.unwrap_or(0) < min_k {
                return plan_err!(
                    "{function}(): method '{method}' needs k >= {min_k} in this session"
                );
            }
            let mut given: Vec<&str> = qi.iter().map(String::as_str).collect();
            let mut wanted: Vec<&str> = fixed.iter().map(String::as_str).collect();
            given.sort_unstable();
            wanted.sort_unstable();
            if given != wanted {
                return plan_err!(
                    "{function}(): method '{method}' must name exactly the quasi-identifiers {} in this session",
                    quoted(fixed)
                );
            }
        } else if cost.epsilon < self.policy.min_epsilon {
            return plan_err!(
                "{function}(): epsilon must be at least {} for public users of this session",
                self.policy.min_epsilon
            );
        }
        Ok(())
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
    options: &RegisterOptions,
    published: published::PublishedNames,
) -> Result<Arc<PublicRules>> {
    // A syntactic method enabled without the k and quasi-identifiers every call must use
    // would only fail the public users' calls: the owner hears it at registration.
    let policy = &options.public;
    if !policy.allow_non_dp {
        if let Some(method) = policy
            .methods
            .iter()
            .find(|m| find_method(m).is_some_and(|spec| !spec.release_is_dp))
        {
            return config_err!(
                "public method '{method}' does not release differentially private data: public users could read what its guarantee leaves open, as often as they like. Enable it only knowingly, with dfanon --public-allow-non-dp or PublicPolicy::allow_non_dp (public_allow_non_dp = true in server.toml)"
            );
        }
    }
    if let Some(method) = policy
        .methods
        .iter()
        .find(|m| SYNTACTIC_METHODS.contains(&m.as_str()))
    {
        if policy.min_k.is_none() || policy.syntactic_qi.is_none() {
            return config_err!(
                "public method '{method}' needs the minimum k and the quasi-identifiers every public call must use (dfanon --public-min-k and --public-qi, or PublicPolicy::min_k and syntactic_qi)"
            );
        }
    }
    let policy = Arc::new(options.public.clone());
    let state = ctx.state();
    let owner_tables = state.catalog_list().clone();
    let defaults = &state.config_options().catalog;
    let rules = Arc::new(PublicRules {
        policy: policy.clone(),
        owner_tables: owner_tables.clone(),
        default_catalog: defaults.default_catalog.clone(),
        default_schema: defaults.default_schema.clone(),
        epsilon_budget: options.budget.epsilon_budget,
        owner_settings: settings::OwnerSettings::of(&state),
    });
    ctx.register_catalog_list(Arc::new(catalog::PublicCatalogList::new(
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
