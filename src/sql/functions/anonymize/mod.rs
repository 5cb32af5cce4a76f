//! `anonymize(...)` and its views: `anonymize_metadata`, `anonymize_catalog`,
//! `anonymize_interval_means`, `anonymize_diagnostics`, `anonymize_information_loss` and
//! `anonymize_warnings`.
//!
//! All of them share one cache keyed by the canonical arguments (validated, every default
//! filled in; see the `request` module) and the identity of the
//! source and hierarchy tables: the first scan of any of them computes the release, every
//! later scan (same statement or not) serves the same rows. A query can therefore never
//! trigger a new random draw behind the user's back. If the tables changed since (an
//! `INSERT INTO` the source, new files; see the `version` module), a scan computes and
//! charges a new release instead of serving the stale one.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_err, plan_err, DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;
use datafusion::prelude::SessionContext;
use tokio::sync::OnceCell;

use crate::access::{Principal, RegisterOptions};
use crate::budget::account::Limits;
use crate::budget::ledger::{Ledger, SLACK};
use crate::budget::{self, charge_release, Cost, ReleaseCharge};
use crate::engine::{self, AnonymizeRequest, ReleaseOutput};
use crate::progress::ProgressFn;
use crate::pseudonym::PseudonymKey;
use crate::public::published::PublishedNames;
use crate::public::{PublicRules, PUBLIC_FAILURE};
use crate::release::{interval_means_schema, ReleaseRowLimit, TooManyRows};
use crate::sql::args::{bind, BoundArgs, CallArgs, ParamSpec};
use crate::sql::lazy::{BatchProducer, BatchSource, LazyTable, Ready};
use crate::sql::planner::SqlTableFunction;
use kept_draws::KeptDraw;
pub use params::ANONYMIZE_PARAMS;
pub use publish::{PublishFunction, PublishedMetadataFunction, UnpublishFunction};
pub use report::ReportFunction;
use request::build_request;
use version::TableVersion;
use views::{information_loss_batch, information_loss_schema, metadata_batch, metadata_schema};

mod identifiers;
mod kept_draws;
mod params;
mod publish;
mod published_files;
mod report;
mod request;
mod unit;
mod version;
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
}

/// The releases and privacy ledger of one or more registrations: every registration has
/// its own unless [`crate::RegisterOptions::releases`] gives one to share (a server's
/// sessions share one, so the same request from two users is one release and one charge;
/// an owner's and a public user's requests are drawn apart, as their semantics differ).
#[derive(Clone, Default)]
pub struct SharedReleases(Arc<ReleaseStore>);

impl std::fmt::Debug for SharedReleases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedReleases").finish_non_exhaustive()
    }
}

impl SharedReleases {
    /// An empty store: no release cached, nothing spent.
    pub fn new() -> Self {
        Self::default()
    }

    /// The names of the releases published in this store, which public sessions over it
    /// show.
    pub(crate) fn published_names(&self) -> PublishedNames {
        self.0.published_names.clone()
    }

    /// Reads back the publications kept beside the ledger file `ledger`
    /// ([`published_files`]), once per store and file: each becomes again the table it
    /// was, in the catalog and schema it was in, with nothing drawn or charged.
    pub(crate) fn restore(&self, ctx: &SessionContext, ledger: &Path) -> Result<()> {
        let mut restored = lock(&self.0.restored);
        if restored.iter().any(|p| p == ledger) {
            return Ok(());
        }
        for kept in published_files::load(&published_files::folder(ledger))? {
            let about = kept.description;
            if lock(&self.0.published).contains_key(&kept.name) {
                continue;
            }
            let Some(schema) = ctx
                .catalog(&about.catalog)
                .and_then(|catalog| catalog.schema(&about.schema))
            else {
                return plan_err!(
                    "the release published as '{}' (kept beside the ledger file '{}') belongs in the schema '{}.{}', which this session does not have; create it, or remove the publication's files from '{}'",
                    kept.name,
                    ledger.display(),
                    about.catalog,
                    about.schema,
                    published_files::folder(ledger).display()
                );
            };
            let rows: u64 = kept
                .batches
                .as_slice()
                .iter()
                .map(|b| b.num_rows() as u64)
                .sum();
            let table: Arc<dyn TableProvider> = Arc::new(LazyTable::new(
                kept.schema,
                Arc::new(Ready(Arc::new(kept.batches))),
            ));
            schema.register_table(kept.name.clone(), table)?;
            lock(&self.0.published).insert(
                kept.name.clone(),
                Arc::new(Publication {
                    arguments: about.arguments,
                    method: about.method,
                    cost: Cost {
                        epsilon: about.epsilon,
                        delta: about.delta,
                    },
                    rows,
                    metadata: about.metadata,
                    location: (about.catalog, about.schema),
                }),
            );
            self.0.published_names.insert(&kept.name);
        }
        restored.push(ledger.to_path_buf());
        Ok(())
    }
}

/// What [`SharedReleases`] holds.
#[derive(Default)]
struct ReleaseStore {
    entries: Mutex<HashMap<String, Arc<CacheEntry>>>,
    ledger: Arc<Ledger>,
    /// What each user ([`Principal`]) has added to each table's account.
    quotas: Ledger,
    /// The published releases, by table name (`anonymize_publish`).
    published: Mutex<BTreeMap<String, Arc<Publication>>>,
    /// Their names, as public sessions' catalogs read them.
    published_names: PublishedNames,
    /// The ledger files whose kept publications this store has read back.
    restored: Mutex<Vec<PathBuf>>,
}

/// A release the data owner published under a table name.
#[derive(Debug)]
pub(super) struct Publication {
    /// The request's arguments as the cache compares them: publishing the same request
    /// again under the same name changes nothing.
    pub(super) arguments: String,
    /// The method's name.
    pub(super) method: String,
    /// What the release was charged.
    pub(super) cost: Cost,
    /// How many rows it has.
    pub(super) rows: u64,
    /// Its public metadata.
    pub(super) metadata: Vec<(String, String)>,
    /// Where its table is registered (catalog, schema).
    pub(super) location: (String, String),
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
            ..Self::default()
        }
    }

    /// Installs a progress callback for long lattice searches.
    pub fn set_progress(&self, progress: Option<ProgressFn>) {
        if let Ok(mut slot) = self.progress.lock() {
            *slot = progress;
        }
    }

    /// The privacy ledger every release of this cache is charged to.
    pub fn ledger(&self) -> Arc<Ledger> {
        self.store.0.ledger.clone()
    }

    fn progress(&self) -> Option<ProgressFn> {
        self.progress.lock().ok().and_then(|p| p.clone())
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
        let key = request.cache_key();
        let mut entries = lock(&self.store.0.entries);
        let entry = entries
            .entry(key)
            .or_insert_with(|| {
                Arc::new(CacheEntry {
                    request,
                    current: Mutex::new(None),
                })
            })
            .clone();
        Ok((entry, limit))
    }

    /// The release of `entry` for the tables as they are now: the cached one, or computed
    /// and charged now (once, whichever function asks first).
    async fn release(
        &self,
        entry: &CacheEntry,
        limit: ReleaseRowLimit,
        state: &SessionState,
    ) -> Result<Arc<ReleaseOutput>> {
        if let Some(rules) = &self.public {
            rules.check_settings("anonymize", state)?;
        }
        let progress = self.progress();
        let request = &entry.request;
        let mut tables = vec![&request.source];
        tables.extend(request.qi.iter().filter_map(|q| q.hierarchy.as_ref()));
        let version = TableVersion::of(&tables, state).await?;
        let cell = entry.cell_for(version);
        let output = cell
            .get_or_try_init(|| async {
                // A release this request drew in an earlier process over the same tables
                // (kept beside the ledger file) is drawn again, not charged again. Tables
                // that cannot be read for their fingerprint are not kept: the draw below
                // meets the same failure and reports it as every failure is reported.
                let kept = KeptDraw::of(request, state).await.ok().flatten();
                if let Some(kept) = &kept {
                    if let Some(output) = kept.replay(request, state, &progress, limit).await {
                        return Ok(Arc::new(output));
                    }
                }
                // Charged once, before anything is drawn; refunded if nothing is released.
                // A seeded release (owner sessions only) has no privacy guarantee (its
                // `guarantee` says so) and is not a DP release: it is counted in the
                // ledger's releases but charges no ε or δ.
                let cost = match request.seed {
                    Some(_) => Cost::NONE,
                    None => request.cost(),
                };
                let quota = self.charge_quota(request, cost, state)?;
                let charge = charge_release(
                    &self.store.0.ledger,
                    &request.account(),
                    cost,
                    state.config_options(),
                )
                .map_err(|e| refund_quota(quota.as_ref(), e))?;
                // Taken back if this future is dropped before the release exists (the
                // client went away): nothing was released.
                let mut pending = PendingCharges {
                    charge: Some(charge),
                    quota,
                };
                let seed = match &kept {
                    Some(_) => Some(kept_draws::fresh_seed().map_err(|e| pending.refund(e))?),
                    None => None,
                };
                let computed = engine::compute_release(request, state, progress, limit, seed);
                match (computed.await, &self.public) {
                    (Ok(mut output), _) => {
                        pending.keep();
                        if let (Some(kept), Some(seed)) = (&kept, seed) {
                            kept.record(&seed, &mut output);
                        }
                        Ok(Arc::new(output))
                    }
                    (Err(e), None) => Err(pending.refund(e)),
                    // A public user learns nothing from why a release failed: the refusal
                    // is the same for every cause, and refunded (its causes are the
                    // arguments, the public declarations and the owner's resources:
                    // docs/METHODS.md §8.3). But a draw that passed the public row limit
                    // failed on the drawn release itself: that charge stays (as after the
                    // post-draw check below).
                    (Err(e), Some(_)) => match TooManyRows::find(&e) {
                        Some(too_many) => {
                            pending.keep();
                            Err(DataFusionError::Execution(too_many.to_string()))
                        }
                        None => {
                            Err(pending.refund(DataFusionError::Execution(PUBLIC_FAILURE.into())))
                        }
                    },
                }
            })
            .await?;
        // The ceiling is checked on the released rows, a function of the release itself:
        // the refusal reveals nothing beyond it, and the charge stays (the draw happened,
        // and the same release is refused again, never drawn anew).
        if let Some(rules) = &self.public {
            if output.rows.row_count() > rules.max_release_rows() {
                let too_many = TooManyRows {
                    limit: rules.max_release_rows(),
                };
                return exec_err!("{too_many}");
            }
        }
        Ok(output.clone())
    }

    /// Charges `cost` to this registration's user's quota on the request's source, if the
    /// user has one; the charge to take back if the release is not made.
    fn charge_quota<'a>(
        &'a self,
        request: &AnonymizeRequest,
        cost: Cost,
        state: &SessionState,
    ) -> Result<Option<QuotaCharge<'a>>> {
        let Some(principal) = &self.principal else {
            return Ok(None);
        };
        let config = state.config_options();
        let table = request.account();
        let account = format!("{table} [user {}]", principal.name);
        let file = budget::config::options(config)
            .ledger_path
            .map(|path| quota_file(&path));
        let limits = Limits {
            epsilon: principal.epsilon_quota,
            delta: f64::INFINITY,
        };
        let ledger = &self.store.0.quotas;
        if let Err(e) = ledger.charge(&account, cost, limits, file.as_deref()) {
            let spent = ledger
                .accounts(file.as_deref())
                .ok()
                .and_then(|a| a.get(&account).copied())
                .unwrap_or_default()
                .epsilon_spent;
            if spent + cost.epsilon <= principal.epsilon_quota * (1.0 + SLACK) {
                return Err(e);
            }
            return plan_err!(
                "privacy quota exceeded for user '{}' on table '{table}': this release costs epsilon = {}; the user's releases of it have spent epsilon = {spent} of their quota of {}. Nothing was released",
                principal.name,
                cost.epsilon,
                principal.epsilon_quota
            );
        }
        Ok(Some(QuotaCharge {
            ledger,
            account,
            cost,
            file,
        }))
    }
}

/// The guard of `mutex`, also after a thread panicked holding it (the data it guards stay
/// consistent: every update under it is a single insert or replace).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// The ledger file of users' quotas beside the ledger file `path`: `<path>.quotas`.
fn quota_file(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".quotas");
    PathBuf::from(name)
}

/// A charge to a user's quota, taken back if the release is not made.
struct QuotaCharge<'a> {
    ledger: &'a Ledger,
    account: String,
    cost: Cost,
    file: Option<PathBuf>,
}

/// The charges of a release being computed: kept when it is made, taken back when it
/// fails or when its computation is dropped unfinished (nothing was released). A refund
/// on drop that cannot be written leaves the charge (the safe side).
struct PendingCharges<'a> {
    charge: Option<ReleaseCharge<'a>>,
    quota: Option<QuotaCharge<'a>>,
}

impl PendingCharges<'_> {
    /// The release was made: the charges stay.
    fn keep(&mut self) {
        self.charge = None;
        self.quota = None;
    }

    /// The release failed with `error`: takes the charges back; returns the error.
    fn refund(&mut self, error: DataFusionError) -> DataFusionError {
        let error = match self.charge.take() {
            Some(charge) => charge.refund(error),
            None => error,
        };
        refund_quota(self.quota.take().as_ref(), error)
    }
}

impl Drop for PendingCharges<'_> {
    fn drop(&mut self) {
        if self.charge.is_some() || self.quota.is_some() {
            let _ = self.refund(DataFusionError::Execution(String::new()));
        }
    }
}

/// Takes back `quota` (if any) after the release failed with `error`; returns the error.
fn refund_quota(quota: Option<&QuotaCharge<'_>>, error: DataFusionError) -> DataFusionError {
    let Some(quota) = quota else {
        return error;
    };
    match quota
        .ledger
        .refund(&quota.account, quota.cost, quota.file.as_deref())
    {
        Ok(()) => error,
        Err(refund_error) => error.context(format!(
            "the release failed and its charge to the quota account '{}' could not be taken back ({})",
            quota.account,
            refund_error.strip_backtrace()
        )),
    }
}

/// The release of one request, computed at most once.
type ReleaseCell = Arc<OnceCell<Arc<ReleaseOutput>>>;

/// One cached release. Holding the providers keeps their identity (address) stable.
#[derive(Debug)]
struct CacheEntry {
    request: AnonymizeRequest,
    /// The release of the tables as they were at one [`TableVersion`]; replaced when a
    /// scan finds the tables changed.
    current: Mutex<Option<(TableVersion, ReleaseCell)>>,
}

impl CacheEntry {
    /// The release cell for the tables at `version`: the cached one if they have not
    /// changed since, else a fresh one (the stale release is never served again).
    fn cell_for(&self, version: TableVersion) -> ReleaseCell {
        let mut current = lock(&self.current);
        match &*current {
            Some((seen, cell)) if *seen == version => cell.clone(),
            _ => {
                let cell = Arc::new(OnceCell::new());
                *current = Some((version, cell.clone()));
                cell
            }
        }
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
        }
    }

    fn params(&self) -> &'static [ParamSpec] {
        ANONYMIZE_PARAMS.as_slice()
    }

    fn owner_only(&self) -> bool {
        matches!(
            self.view,
            ReleaseView::Diagnostics | ReleaseView::InformationLoss | ReleaseView::Warnings
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
        })
    }
}
