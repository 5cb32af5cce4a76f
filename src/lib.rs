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
pub mod quote;
pub mod release;
pub mod sensitive;
pub mod sql;
#[cfg(test)]
mod testing;

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::prelude::SessionContext;

use progress::ProgressFn;
use sql::catalog::FunctionCatalog;
use sql::planner::FunctionPlanner;

pub use sql::catalog::{cli_help_section, function_docs, functions_markdown};

/// Who the SQL users of a registration are: it decides which functions exist and whether
/// SQL can change the privacy-budget settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Access {
    /// Analysts or the public (the default of [`register`]). Only functions whose output
    /// may be published are registered: releases and their public metadata, the budget
    /// read-out, hierarchy builders, help and the scalar helpers. The owner-only functions
    /// (exact counts of the raw data: diagnostics, information loss, warnings) do not exist
    /// in the session, and the `anonymize.*` budget settings are the ones given in
    /// [`RegisterOptions::budget`]: `SET anonymize.*` is refused.
    #[default]
    Public,
    /// The data owner (what `dfanon` registers unless started with `--public`): every
    /// function, and `SET anonymize.*` changes the budget settings of the session (never
    /// lowering what was spent; see the `budget` module).
    Owner,
}

/// Options for [`register_with`].
#[derive(Default, Clone)]
pub struct RegisterOptions {
    /// Called as long searches progress: `(phase, done, total)`.
    pub progress: Option<ProgressFn>,
    /// Who the SQL users are (default: [`Access::Public`]).
    pub access: Access,
    /// The budget settings (`anonymize.epsilon_budget`, `anonymize.delta_budget`,
    /// `anonymize.ledger_path`): fixed for [`Access::Public`], initial values for
    /// [`Access::Owner`]. Default: unlimited budgets, ledger in memory.
    pub budget: budget::config::AnonymizeOptions,
    /// Largest `max_release_rows` any call may use (default: no ceiling beyond each call's
    /// own limit). An embedding service sets it to bound the work one query can start.
    pub max_release_rows: Option<u64>,
}

impl RegisterOptions {
    /// Options for the data owner: every function, budget settings changeable by SQL.
    pub fn owner() -> Self {
        Self {
            access: Access::Owner,
            ..Self::default()
        }
    }
}

/// Registers the functions of this crate ([`FunctionCatalog`]) on `ctx` for public users
/// ([`Access::Public`]): the safe default for a service whose SQL users are not the data
/// owner. The data owner's tools use [`register_with`] and [`RegisterOptions::owner`].
pub fn register(ctx: &SessionContext) -> Result<()> {
    register_with(ctx, RegisterOptions::default())
}

/// [`register`] with options.
pub fn register_with(ctx: &SessionContext, options: RegisterOptions) -> Result<()> {
    let catalog = FunctionCatalog::new(&options);
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
