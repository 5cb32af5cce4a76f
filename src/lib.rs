//! # datafusion-anonymize
//!
//! Privacy-preserving release of microdata (row-level data) from DataFusion tables.
//! One call, [`register`], adds the SQL surface to a [`SessionContext`]:
//!
//! ```sql
//! SELECT * FROM anonymize('nps', method => 'ipa',
//!     qi => 'age:age_h, sex:sex_h, los:los_h, surgery:surgery_h, location:location_h',
//!     informative => 'disease', epsilon => 1.0);
//! ```
//!
//! Every function it adds, table and scalar, with its parameters and defaults, is listed in
//! `docs/FUNCTIONS.md`, and in SQL by `SELECT * FROM anonymize_help()`. Both are generated
//! from one list (see [`functions_markdown`] and [`function_docs`]).
//!
//! The pipeline has three phases: one aggregate pass over the source builds a histogram;
//! the method runs on histograms (small, vectorized); the released histogram is expanded
//! into rows by a table provider, once, and served from memory on every later scan.

mod access;
mod analysis;
mod assess;
mod attack;
mod budget;
mod date_shift;
mod demo;
pub mod distributed;
mod engine;
mod hierarchy;
mod histogram;
mod lattice;
mod mechanism;
mod method;
mod metric;
mod names;
mod params;
mod privacy;
mod privacy_unit;
mod profile;
mod progress;
mod pseudonym;
mod public;
mod quote;
mod release;
mod releases;
mod report;
mod sensitive;
mod session;
mod sql;
mod tables;
#[cfg(test)]
mod testing;
mod utility;

#[doc(hidden)]
pub mod internals;

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::SessionContext;

use sql::functions::FunctionList;
use sql::planner::FunctionPlanner;

pub use access::{Access, Principal, RegisterOptions};
pub use budget::config::{
    parse_ledger_path, parse_limit as parse_budget_limit, reset_error as budget_reset_error,
    AnonymizeOptions,
};
pub use progress::ProgressFn;
pub use pseudonym::PseudonymKey;
pub use public::policy::{
    default_public_methods, PolicyValue, PublicPolicy, SourcePolicy,
    DEFAULT_PUBLIC_MAX_RELEASE_ROWS, DEFAULT_PUBLIC_MIN_EPSILON,
};
pub use public::statements::{
    check_plan as check_public_plan, check_sql_statement as check_public_sql_statement,
    check_statement as check_public_statement, PublicRefusal, PUBLIC_SETTINGS,
};
pub use releases::card::GuaranteeCard;
pub use releases::events::{ReleaseEvent, ReleaseEventFn};
pub use releases::publications::PublishedRelease;
pub use releases::{publication_report_path, SharedReleases};
pub use report::html::escape as escape_html;
pub use sql::call::FunctionCall;
pub use sql::copy_manifest::{manifest_path, CopyManifest};
pub use sql::copy_output::{CopyGuard, CopyOutput};
pub use sql::depth::{check_expression_depth, MAX_EXPRESSION_DEPTH, STATEMENT_STACK_BYTES};
pub use sql::docs::{FunctionDoc, FunctionKind, ParamDoc};
pub use sql::functions::{cli_help_section, function_docs, functions_markdown};
pub use sql::script::{is_public, public_sql, run_script, script_dataframe};

/// The anonymization methods: each one's name, as `anonymize(..., method => ...)` takes
/// it, and a one-line description.
pub fn methods() -> Vec<(&'static str, &'static str)> {
    method::METHODS.iter().map(|m| (m.name, m.about)).collect()
}

/// Registers the functions of this crate (listed by [`function_docs`]) on `ctx` for public users
/// ([`Access::Public`]): the safe default for a service whose SQL users are not the data
/// owner. The data owner's tools use [`register_with`] and [`RegisterOptions::owner`].
pub fn register(ctx: &SessionContext) -> Result<()> {
    register_with(ctx, RegisterOptions::default())
}

/// [`register`] with options.
///
/// With [`Access::Public`] it also turns `ctx` into a public session: its
/// SQL reaches only the tables [`RegisterOptions::public`] declares and the releases, and
/// cannot create, change or copy anything; register the sources and public tables first,
/// or build the session with [`public_session`] from the owner's.
pub fn register_with(ctx: &SessionContext, options: RegisterOptions) -> Result<()> {
    let mut options = options;
    // The releases and ledger: the ones given, else those of the session `ctx` was made
    // from (`public_session`, `owner_session`) or registered before, else new ones. So the
    // owner's publications and charges and the public users' are in one store and one
    // ledger.
    let store = match options.releases.clone() {
        Some(store) => store,
        None => ctx
            .state()
            .config()
            .get_extension::<SharedReleases>()
            .map(|store| (*store).clone())
            .unwrap_or_default(),
    };
    options.releases = Some(store.clone());
    ctx.state_ref()
        .write()
        .config_mut()
        .set_extension(Arc::new(store.clone()));
    // Publications kept beside the ledger file come back as the tables they were.
    if let Some(ledger) = &options.budget.ledger_path {
        store.restore(ctx, ledger)?;
    }
    let public = match options.access {
        Access::Public => Some(public::install(
            ctx,
            &options.public,
            options.budget.epsilon_budget,
            store.published_names(),
        )?),
        Access::Owner => None,
    };
    let functions = FunctionList::build(&options, public);
    budget::config::install(ctx, &options.budget, options.access == Access::Public);
    // Internal plumbing for table names given as text; not a user-facing function.
    ctx.register_udtf(
        sql::resolve::RESOLVER_FUNCTION,
        Arc::new(sql::resolve::TableResolver),
    );
    ctx.register_relation_planner(Arc::new(FunctionPlanner::new(
        functions.table_functions,
        functions.withheld,
    )))?;
    for udf in functions.scalar_functions {
        ctx.register_udf(udf);
    }
    Ok(())
}

/// A public session over the data owner's session `owner`: the same configuration,
/// runtime and tables (shared: tables the owner adds later appear as their names are
/// declared), with this crate's functions registered for public users by `options`
/// (its `access` is taken as [`Access::Public`]). `owner` itself is unchanged.
///
/// This is how a setup written in SQL with the owner's functions (hierarchy views, say)
/// becomes a session for public users: `dfanon --public --init setup.sql` does it.
pub fn public_session(owner: &SessionContext, options: RegisterOptions) -> Result<SessionContext> {
    let ctx = session_over(owner);
    register_with(
        &ctx,
        RegisterOptions {
            access: Access::Public,
            ..options
        },
    )?;
    Ok(ctx)
}

/// Another data owner's session over `owner`'s tables (shared both ways: a table either
/// creates is seen by both), with its own settings (`SET` in one leaves the other as it
/// was) and this crate's functions registered by `options` (its `access` is taken as
/// [`Access::Owner`]). A server gives each owner's connection one, with
/// [`RegisterOptions::releases`] shared so that their releases and ledger are one.
pub fn owner_session(owner: &SessionContext, options: RegisterOptions) -> Result<SessionContext> {
    let ctx = session_over(owner);
    register_with(
        &ctx,
        RegisterOptions {
            access: Access::Owner,
            ..options
        },
    )?;
    Ok(ctx)
}

/// A session with `owner`'s configuration, runtime and catalogs, and nothing registered.
fn session_over(owner: &SessionContext) -> SessionContext {
    let state = owner.state();
    // The shared catalogs exist: making a default one would replace them with empty ones.
    let config = state
        .config()
        .clone()
        .with_create_default_catalog_and_schema(false);
    let built = SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(state.runtime_env().clone())
        .with_catalog_list(state.catalog_list().clone())
        .with_default_features()
        .build();
    SessionContext::new_with_state(built)
}
