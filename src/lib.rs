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
//! from one list, [`sql::catalog::FunctionCatalog`] (see [`functions_markdown`]).
//!
//! The pipeline has three phases: one aggregate pass over the source builds a histogram;
//! the method runs on histograms (small, vectorized); the released histogram is expanded
//! into rows by a table provider, once, and served from memory on every later scan.

pub mod access;
pub mod analysis;
pub mod budget;
pub mod counterfeit_catalog;
pub mod demo;
pub mod distributed;
pub mod engine;
pub mod hierarchy;
pub mod histogram;
pub mod lattice;
pub mod mechanism;
pub mod method;
pub mod metric;
pub mod params;
pub mod privacy;
pub mod progress;
pub mod public;
pub mod quote;
pub mod release;
pub mod sensitive;
pub mod session;
pub mod sql;
#[cfg(test)]
mod testing;

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::SessionContext;

use sql::catalog::FunctionCatalog;
use sql::planner::FunctionPlanner;

pub use access::{Access, PublicPolicy, RegisterOptions};
pub use progress::ProgressFn;
pub use sql::catalog::{cli_help_section, function_docs, functions_markdown};

/// Registers the functions of this crate ([`FunctionCatalog`]) on `ctx` for public users
/// ([`Access::Public`]): the safe default for a service whose SQL users are not the data
/// owner. The data owner's tools use [`register_with`] and [`RegisterOptions::owner`].
pub fn register(ctx: &SessionContext) -> Result<()> {
    register_with(ctx, RegisterOptions::default())
}

/// [`register`] with options.
///
/// With [`Access::Public`] it also turns `ctx` into a public session (see [`public`]): its
/// SQL reaches only the tables [`RegisterOptions::public`] declares and the releases, and
/// cannot create, change or copy anything; register the sources and public tables first,
/// or build the session with [`public_session`] from the owner's.
pub fn register_with(ctx: &SessionContext, options: RegisterOptions) -> Result<()> {
    let public = match options.access {
        Access::Public => Some(public::install(ctx, &options)?),
        Access::Owner => None,
    };
    let catalog = FunctionCatalog::build(&options, public);
    budget::config::install(ctx, &options.budget, options.access == Access::Public);
    // Internal plumbing for table names given as text; not a user-facing function.
    ctx.register_udtf(
        sql::resolve::RESOLVER_FUNCTION,
        Arc::new(sql::resolve::TableResolver),
    );
    ctx.register_relation_planner(Arc::new(FunctionPlanner::new(
        catalog.table_functions,
        catalog.withheld,
    )))?;
    for udf in catalog.scalar_functions {
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
    let state = owner.state();
    let config = state
        .config()
        .clone()
        .with_create_default_catalog_and_schema(false);
    let public = SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(state.runtime_env().clone())
        .with_catalog_list(state.catalog_list().clone())
        .with_default_features()
        .build();
    let ctx = SessionContext::new_with_state(public);
    register_with(
        &ctx,
        RegisterOptions {
            access: Access::Public,
            ..options
        },
    )?;
    Ok(ctx)
}
