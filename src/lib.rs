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
//! | function | returns |
//! |---|---|
//! | `anonymize(source, ...)` | the released microdata rows |
//! | `anonymize_metadata(...)` | public metadata of that release, `(key, value)` |
//! | `anonymize_diagnostics(...)` | owner-only diagnostics; never publish |
//! | `anonymize_information_loss(...)` | owner-only information loss (NCP, EMD, Rate) of that release |
//! | `interval_hierarchy(domain, level, ...)` | a numeric interval hierarchy in ARX layout |
//! | `mask_hierarchy(source, column, keep)` | a prefix-masking hierarchy in ARX layout |
//! | `anonymize_warnings(...)` | owner-only warnings about that release (e.g. δ not below 1/n); never publish |
//! | `privacy_budget()` | ε and δ spent and remaining per source table |
//! | `nps_demo(rows, seed)` | the synthetic NPS-shaped demo table |
//! | `anonymize_help()` | every function and parameter |
//!
//! Methods: `ipa`, `kanon` (optimal k-anonymity), `dp_histogram` (noisy contingency table).
//! Scalar functions for analysts (see [`sql::generalized_udfs`]): `gen_lower`, `gen_upper`,
//! `gen_mid`, `gen_spread` read generalized integer labels (`[10-20)`, `*`) back as numbers.
//!
//! The pipeline has three phases: one aggregate pass over the source builds a histogram;
//! the method runs on histograms (small, vectorized); the released histogram is expanded
//! into rows by a table provider, once, and served from memory on every later scan.

pub mod analysis;
pub mod budget;
pub mod demo;
pub mod engine;
pub mod hierarchy;
pub mod histogram;
pub mod lattice;
pub mod mechanism;
pub mod method;
pub mod metric;
pub mod params;
pub mod privacy;
pub mod release;
pub mod sql;
#[cfg(test)]
mod testing;

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::prelude::SessionContext;

use engine::ProgressFn;
use sql::anonymize::{AnonymizeFunction, ReleaseCache, ReleaseView};
use sql::budget_fn::PrivacyBudgetFunction;
use sql::demo_fns::{HelpFunction, NpsDemoFunction};
use sql::hierarchy_fns::{IntervalHierarchyFunction, MaskHierarchyFunction};
use sql::planner::{FunctionPlanner, SqlTableFunction};

/// Options for [`register_with`].
#[derive(Default, Clone)]
pub struct RegisterOptions {
    /// Called as long searches progress: `(phase, done, total)`.
    pub progress: Option<ProgressFn>,
}

/// Registers every table function of this crate on `ctx`.
pub fn register(ctx: &SessionContext) -> Result<()> {
    register_with(ctx, RegisterOptions::default())
}

/// [`register`] with options.
pub fn register_with(ctx: &SessionContext, options: RegisterOptions) -> Result<()> {
    let cache = Arc::new(ReleaseCache::default());
    cache.set_progress(options.progress);
    let ledger = cache.ledger();
    let mut functions: Vec<Arc<dyn SqlTableFunction>> = vec![
        Arc::new(AnonymizeFunction::new(ReleaseView::Rows, cache.clone())),
        Arc::new(AnonymizeFunction::new(ReleaseView::Metadata, cache.clone())),
        Arc::new(AnonymizeFunction::new(
            ReleaseView::Diagnostics,
            cache.clone(),
        )),
        Arc::new(AnonymizeFunction::new(
            ReleaseView::InformationLoss,
            cache.clone(),
        )),
        Arc::new(AnonymizeFunction::new(ReleaseView::Warnings, cache)),
        Arc::new(PrivacyBudgetFunction::new(ledger)),
        Arc::new(IntervalHierarchyFunction),
        Arc::new(MaskHierarchyFunction),
        Arc::new(NpsDemoFunction::default()),
    ];
    let help = HelpFunction::new(&functions);
    functions.push(Arc::new(help));
    budget::config::install(ctx);
    ctx.register_udtf(
        sql::resolve::RESOLVER_FUNCTION,
        Arc::new(sql::resolve::TableResolver),
    );
    ctx.register_relation_planner(Arc::new(FunctionPlanner::new(functions)))?;
    for udf in sql::generalized_udfs::generalized_udfs() {
        ctx.register_udf(udf);
    }
    Ok(())
}
