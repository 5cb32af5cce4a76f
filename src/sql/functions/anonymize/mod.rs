//! `anonymize(...)` and its views: `anonymize_metadata`, `anonymize_catalog`,
//! `anonymize_interval_means`, `anonymize_diagnostics`, `anonymize_information_loss`,
//! `anonymize_warnings` and `anonymize_manifest`.
//!
//! Each call is bound and checked here and becomes a request (the `request` module); the
//! release itself comes from the registration's store ([`crate::releases`]): the first
//! scan of any of these functions with the same arguments draws and charges it, every
//! later scan serves the same rows.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;

use crate::access::{Principal, RegisterOptions};
use crate::attack::Truth;
use crate::budget::ledger::Ledger;
use crate::engine::ReleaseOutput;
use crate::metric::information_loss::{information_loss_batch, information_loss_schema};
use crate::progress::ProgressFn;
use crate::pseudonym::PseudonymKey;
use crate::public::PublicRules;
use crate::release::{interval_means_schema, ReleaseRowLimit};
use crate::releases::card::guarantee_card;
use crate::releases::events::ReleaseEventFn;
use crate::releases::{Asker, CacheEntry, SharedReleases, SourceMemo};
use crate::sql::args::{bind, BoundArgs, CallArgs, ParamSpec};
use crate::sql::planner::SqlTableFunction;
use crate::sql::resolve::resolve_table;
use crate::tables::lazy::{BatchProducer, BatchSource, LazyTable, Ready};
pub use attack::AttackFunction;
pub use params::ANONYMIZE_PARAMS;
pub use publish::{PublishFunction, PublishedMetadataFunction, UnpublishFunction};
pub use report::ReportFunction;
use request::build_request;
pub use utility::UtilityFunction;
use views::{manifest_batch, manifest_schema, metadata_batch, metadata_schema};

mod attack;
mod call_columns;
mod identifiers;
mod params;
mod publish;
mod read_view;
mod report;
mod request;
mod unit;
mod utility;
pub mod views;

/// Which view of a release a function returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseView {
    /// The released microdata rows.
    Rows,
    /// Public metadata `(key, value)`.
    Metadata,
    /// The public catalog of counterfeit rows (methods that publish one).
    Catalog,
    /// The public means of generalized numeric values (methods that publish them).
    IntervalMeans,
    /// Owner-only diagnostics; never publish.
    Diagnostics,
    /// Owner-only information loss of the release against its original; never publish.
    InformationLoss,
    /// Owner-only warnings `(topic, message)`; never publish.
    Warnings,
    /// The release's guarantee card as JSON (`crate::releases::card`).
    Manifest,
}

/// State shared by the `anonymize` functions of one registration.
#[derive(Default)]
pub struct ReleaseCache {
    store: SharedReleases,
    progress: Mutex<Option<ProgressFn>>,
    /// The registration's ceiling of `max_release_rows`.
    max_release_rows: Option<u64>,
    /// The rules of a public registration; `None` for the data owner.
    public: Option<Arc<PublicRules>>,
    /// The key of pseudonyms, if the owner gave one.
    pseudonym_key: Option<PseudonymKey>,
    /// The user whose requests this registration makes, if it has a quota.
    principal: Option<Principal>,
    /// Told of every release a call is served.
    on_release: Option<ReleaseEventFn>,
    /// The report's attacks on sources as if released, kept while the source is
    /// unchanged.
    source_attacks: SourceMemo<Vec<crate::attack::Outcome>>,
}

impl std::fmt::Debug for ReleaseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReleaseCache").finish_non_exhaustive()
    }
}

impl ReleaseCache {
    /// The cache of a registration with `options` (its own store unless the options give
    /// one to share), for a public registration when `public` is given.
    pub fn new(options: &RegisterOptions, public: Option<Arc<PublicRules>>) -> Self {
        Self {
            store: options.releases.clone().unwrap_or_default(),
            max_release_rows: options.max_release_rows,
            public,
            pseudonym_key: options.pseudonym_key.clone(),
            principal: options.principal.clone(),
            on_release: options.on_release.clone(),
            ..Self::default()
        }
    }

    /// Installs a progress callback for long lattice searches.
    pub fn set_progress(&self, progress: Option<ProgressFn>) {
        if let Ok(mut slot) = self.progress.lock() {
            *slot = progress;
        }
    }

    /// The report's attacks on sources as if released, kept while a source is unchanged.
    pub(crate) fn source_attacks(&self) -> &SourceMemo<Vec<crate::attack::Outcome>> {
        &self.source_attacks
    }

    /// The privacy ledger every release of this cache is charged to.
    pub fn ledger(&self) -> Arc<Ledger> {
        self.store.ledger()
    }

    /// The quota of this registration's user and what their releases spent of it per
    /// source account, from the quota ledger beside `ledger` (else memory); `None` when the
    /// user has no quota.
    pub fn quota(
        &self,
        ledger: Option<&std::path::Path>,
    ) -> Result<Option<(f64, crate::budget::account::Accounts)>> {
        let Some(principal) = &self.principal else {
            return Ok(None);
        };
        let accounts = self.store.quota_accounts(principal, ledger)?;
        Ok(Some((principal.epsilon_quota, accounts)))
    }

    /// Who this registration's requests come from, for the store.
    fn asker(&self) -> Asker {
        Asker {
            public: self.public.clone(),
            principal: self.principal.clone(),
            progress: self.progress.lock().ok().and_then(|p| p.clone()),
            on_release: self.on_release.clone(),
        }
    }

    /// The release of `entry` for the tables as they are now (see
    /// [`SharedReleases::release`]).
    async fn release(
        &self,
        entry: &CacheEntry,
        limit: ReleaseRowLimit,
        state: &SessionState,
    ) -> Result<Arc<ReleaseOutput>> {
        self.store.release(entry, limit, state, &self.asker()).await
    }

    /// The table an examining function (`anonymize_attack`, `anonymize_utility`) reads as
    /// the release: the one `release =>` named, else the cached release of `entry` (drawn
    /// and charged only if no call drew it yet); with what is known of the released row of
    /// each source record (nothing for a named table).
    async fn examined_release(
        &self,
        entry: &CacheEntry,
        limit: ReleaseRowLimit,
        named: Option<&Arc<dyn TableProvider>>,
        state: &SessionState,
    ) -> Result<(Arc<dyn TableProvider>, Truth)> {
        if let Some(table) = named {
            return Ok((table.clone(), Truth::Unknown));
        }
        let output = self.release(entry, limit, state).await?;
        Ok((
            Arc::new(LazyTable::new(
                entry.request.release_schema(),
                Arc::new(Ready(Arc::new(output.rows.clone()))),
            )),
            Truth::of(&output),
        ))
    }

    /// The cache entry of a bound call of `function` (the request validated, its cache
    /// entry made if new) and the call's row limit. Nothing is read or drawn.
    fn entry(
        &self,
        function: &str,
        bound: &BoundArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<(Arc<CacheEntry>, ReleaseRowLimit)> {
        let public = self.public.as_deref();
        if let Some(rules) = public {
            rules.check_arguments(function, bound.names())?;
        }
        let request = build_request(
            function,
            bound,
            context,
            public,
            self.pseudonym_key.as_ref(),
        )?;
        let limit = ReleaseRowLimit {
            given: request.max_release_rows,
            ceiling: self.max_release_rows,
            stop_at: public.map(|rules| rules.max_release_rows()),
        };
        Ok((self.store.entry(request), limit))
    }
}

/// `anonymize`, `anonymize_metadata` or `anonymize_diagnostics`.
#[derive(Debug)]
pub struct AnonymizeFunction {
    view: ReleaseView,
    cache: Arc<ReleaseCache>,
}

impl AnonymizeFunction {
    /// One of the `anonymize` functions over a shared cache.
    pub fn new(view: ReleaseView, cache: Arc<ReleaseCache>) -> Self {
        Self { view, cache }
    }
}

impl SqlTableFunction for AnonymizeFunction {
    fn name(&self) -> &'static str {
        match self.view {
            ReleaseView::Rows => "anonymize",
            ReleaseView::Metadata => "anonymize_metadata",
            ReleaseView::Catalog => "anonymize_catalog",
            ReleaseView::IntervalMeans => "anonymize_interval_means",
            ReleaseView::Diagnostics => "anonymize_diagnostics",
            ReleaseView::InformationLoss => "anonymize_information_loss",
            ReleaseView::Warnings => "anonymize_warnings",
            ReleaseView::Manifest => "anonymize_manifest",
        }
    }

    fn params(&self) -> &'static [ParamSpec] {
        ANONYMIZE_PARAMS.as_slice()
    }

    fn owner_only(&self) -> bool {
        matches!(
            self.view,
            ReleaseView::Diagnostics
                | ReleaseView::InformationLoss
                | ReleaseView::Warnings
                | ReleaseView::Manifest
        )
    }

    fn about(&self) -> &'static str {
        match self.view {
            ReleaseView::Rows => "Releases anonymized microdata rows of a table.",
            ReleaseView::Metadata => "Public metadata (key, value) of the release anonymize() with the same arguments returns.",
            ReleaseView::Catalog => {
                "Public catalog of the counterfeit rows of the same release (method 'upa'): one row per (group_id, class, sensitive value) with the class's quasi-identifier labels as they appear in the release and count, the group's number of counterfeit rows of that value. Publish it with the release; upa_truthful() rebuilds the real records from both."
            }
            ReleaseView::IntervalMeans => {
                "Public means of the generalized numeric values of the same release (method 'ipa' with a fifth budget_split part, its default with node_score 'utility'): one row per (column_name, label) of each numeric quasi-identifier at its released level, with the label's smallest and largest value (lower, upper) and mean, a differentially private estimate of the mean of the original values under the label. Join it to read an interval such as '[30-400]' as that mean instead of its midpoint."
            }
            ReleaseView::Diagnostics => {
                "Owner-only diagnostics of the same release (scores of every lattice node, suppressed and counterfeit counts). Never publish this: it carries exact counts."
            }
            ReleaseView::InformationLoss => {
                "Owner-only information loss of the same release against its original, one definition for every method: NCP, EMD, Rate, their sum and mean (IPA paper Eq. 5-10), LM and the exact RCE (UPA paper). Never publish this: it is computed from the exact data."
            }
            ReleaseView::Warnings => {
                "Owner-only warnings (topic, message) about the same release, e.g. delta not below 1/n. Never publish this: a warning may name exact counts."
            }
            ReleaseView::Manifest => {
                "The guarantee card of the same release, one row with one JSON text (column manifest): method and version, the source's fingerprint keyed by the owner's secret key (none without one), privacy unit and neighbour relation, epsilon and delta with the ledger entry, the hierarchies' fingerprints, what is proven (with its docs/METHODS.md section) and what is not, seeded or not, and the public metadata. Every COPY ... TO of the release writes the same card beside its output as <target>.manifest.json. Owner-only to call (it reads the tables); the card itself is public."
            }
        }
    }

    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let bound = bind(self.name(), &ANONYMIZE_PARAMS, &["source"], args)?;
        let (entry, limit) = self.cache.entry(self.name(), &bound, context)?;
        let schema = match self.view {
            ReleaseView::Rows => entry.request.release_schema(),
            ReleaseView::Metadata => metadata_schema(),
            ReleaseView::Catalog => match entry.request.catalog_schema() {
                Some(schema) => schema,
                None => {
                    return plan_err!(
                        "anonymize_catalog(): method '{}' publishes no catalog of counterfeit rows; a catalog comes with methods that insert counterfeits and publish where they are (method 'upa')",
                        entry.request.method.name()
                    )
                }
            },
            ReleaseView::IntervalMeans => {
                if !entry.request.method.publishes_interval_means() {
                    return plan_err!(
                        "anonymize_interval_means(): method '{}' with these arguments publishes no interval means; they come with method 'ipa' when budget_split has a fifth part (its default with node_score 'utility')",
                        entry.request.method.name()
                    );
                }
                interval_means_schema()
            }
            ReleaseView::Diagnostics => entry.request.method.diagnostics_schema(),
            ReleaseView::InformationLoss => information_loss_schema(),
            ReleaseView::Warnings => metadata_schema(),
            ReleaseView::Manifest => manifest_schema(),
        };
        let producer = ReleaseProducer {
            view: self.view,
            entry,
            cache: self.cache.clone(),
            limit,
        };
        Ok(Arc::new(LazyTable::new(schema, Arc::new(producer))))
    }
}

#[derive(Debug)]
struct ReleaseProducer {
    view: ReleaseView,
    entry: Arc<CacheEntry>,
    cache: Arc<ReleaseCache>,
    /// This call's row limit (not part of the cache key: it decides whether a release may
    /// be computed, not what it is).
    limit: ReleaseRowLimit,
}

#[async_trait]
impl BatchProducer for ReleaseProducer {
    async fn batches(&self, state: &SessionState) -> Result<Arc<dyn BatchSource>> {
        let output = self.cache.release(&self.entry, self.limit, state).await?;
        Ok(match self.view {
            ReleaseView::Rows => Arc::new(output.rows.clone()) as Arc<dyn BatchSource>,
            ReleaseView::Metadata => Arc::new(vec![metadata_batch(&output.metadata)?]),
            ReleaseView::Catalog => match &output.catalog {
                Some(catalog) => Arc::new(catalog.clone()) as Arc<dyn BatchSource>,
                None => Arc::new(Vec::<datafusion::arrow::array::RecordBatch>::new()),
            },
            ReleaseView::IntervalMeans => match &output.interval_means {
                Some(means) => Arc::new(vec![means.to_batch()?]) as Arc<dyn BatchSource>,
                None => Arc::new(Vec::<datafusion::arrow::array::RecordBatch>::new()),
            },
            ReleaseView::Diagnostics => output.diagnostics.clone(),
            ReleaseView::InformationLoss => Arc::new(vec![information_loss_batch(
                self.entry.request.method.name(),
                &output.information_loss,
            )?]),
            ReleaseView::Warnings => Arc::new(vec![metadata_batch(&output.warnings)?]),
            ReleaseView::Manifest => {
                let card = guarantee_card(&self.entry.request, &output, state).await?;
                Arc::new(vec![manifest_batch(&card.to_json()?)?])
            }
        })
    }

    fn release_entry(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        match self.view {
            ReleaseView::Rows => Some(self.entry.clone()),
            _ => None,
        }
    }
}

/// The table an optional argument `parameter` of `function` names, if given; an error
/// if it names no table.
fn named_table(
    function: &str,
    parameter: &str,
    name: Option<&str>,
    context: &mut dyn RelationPlannerContext,
) -> Result<Option<Arc<dyn TableProvider>>> {
    match name {
        None => Ok(None),
        Some(name) => match resolve_table(context, name)? {
            Some(table) => Ok(Some(table)),
            None => plan_err!(
                "{function}(): {parameter} names the table '{name}', which does not exist"
            ),
        },
    }
}
