//! `anonymize(...)`, `anonymize_metadata(...)` and `anonymize_diagnostics(...)`.
//!
//! All three share one cache keyed by the canonical arguments and the identity of the
//! source and hierarchy tables: the first scan of any of them computes the release, every
//! later scan (same statement or not) serves the same rows. A query can therefore never
//! trigger a new random draw behind the user's back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::planner::RelationPlannerContext;
use tokio::sync::OnceCell;

use super::args::{bind, BoundArgs, CallArgs, ParamSpec};
use super::lazy::{BatchProducer, LazyTable};
use super::planner::SqlTableFunction;
use crate::budget::charge_release;
use crate::budget::ledger::Ledger;
use crate::engine::{self, AnonymizeRequest, QiSpec, ReleaseOutput};
use crate::lattice::DEFAULT_MAX_NODES;
use crate::method::ipa::{IpaParams, IpaVariant};
use crate::method::MethodParams;

/// Which view of a release a function returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseView {
    /// The released microdata rows.
    Rows,
    /// Public metadata `(key, value)`.
    Metadata,
    /// Owner-only diagnostics; never publish.
    Diagnostics,
}

/// Progress callback: `(phase, done, total)`.
pub type ProgressFn = Arc<dyn Fn(&str, usize, usize) + Send + Sync>;

/// State shared by the three functions of one registration.
#[derive(Default)]
pub struct ReleaseCache {
    entries: Mutex<HashMap<String, Arc<CacheEntry>>>,
    progress: Mutex<Option<ProgressFn>>,
    ledger: Arc<Ledger>,
}

impl std::fmt::Debug for ReleaseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReleaseCache").finish_non_exhaustive()
    }
}

impl ReleaseCache {
    /// Installs a progress callback for long lattice searches.
    pub fn set_progress(&self, progress: Option<ProgressFn>) {
        if let Ok(mut slot) = self.progress.lock() {
            *slot = progress;
        }
    }

    /// The privacy ledger every release of this cache is charged to.
    pub fn ledger(&self) -> Arc<Ledger> {
        self.ledger.clone()
    }

    fn progress(&self) -> Option<ProgressFn> {
        self.progress.lock().ok().and_then(|p| p.clone())
    }
}

/// One cached release. Holding the providers keeps their identity (address) stable.
#[derive(Debug)]
struct CacheEntry {
    request: AnonymizeRequest,
    cell: OnceCell<Arc<ReleaseOutput>>,
}

/// The parameters `anonymize` accepts.
pub const ANONYMIZE_PARAMS: &[ParamSpec] = &[
    ParamSpec { name: "source", doc: "table or view to anonymize (first positional argument)", default: None },
    ParamSpec { name: "method", doc: "anonymization method: 'ipa'", default: Some("'ipa'") },
    ParamSpec {
        name: "qi",
        doc: "quasi-identifiers as 'col[:hierarchy_table], ...'; without ':table' the hierarchy <source>_hierarchy_<col> is used",
        default: None,
    },
    ParamSpec { name: "informative", doc: "the informative (sensitive, analysed) column, released unchanged", default: None },
    ParamSpec { name: "epsilon", doc: "total privacy parameter, split over the method's steps", default: Some("1.0") },
    ParamSpec {
        name: "budget_split",
        doc: "ipa: fractions of epsilon for suppression, insertion, value choice, node choice",
        default: Some("'0.1,0.3,0.3,0.3' (reference: '0.1,0.3,0.3,0.3333')"),
    },
    ParamSpec { name: "suppression_threshold", doc: "ipa: threshold t of the noisy suppression", default: Some("2") },
    ParamSpec { name: "variant", doc: "ipa: 'paper' or 'reference' (the reference implementation's parameter choices)", default: Some("'paper'") },
    ParamSpec { name: "insert_into_suppressed", doc: "ipa: whether the suppressed class '*' also receives counterfeits", default: Some("true") },
    ParamSpec { name: "max_nodes", doc: "largest lattice to evaluate", default: Some("100000") },
    ParamSpec { name: "seed", doc: "fixed random seed, for tests and reproduction only (marked in the metadata)", default: None },
];

/// Arguments every method accepts.
const COMMON_PARAMS: &[&str] = &[
    "source",
    "method",
    "qi",
    "informative",
    "epsilon",
    "max_nodes",
    "seed",
];

/// Arguments specific to one method.
fn method_specific_params(method: &str) -> &'static [&'static str] {
    match method {
        "ipa" => &[
            "budget_split",
            "suppression_threshold",
            "variant",
            "insert_into_suppressed",
        ],
        _ => &[],
    }
}

/// `anonymize`, `anonymize_metadata` or `anonymize_diagnostics`.
#[derive(Debug)]
pub struct AnonymizeFunction {
    view: ReleaseView,
    cache: Arc<ReleaseCache>,
}

impl AnonymizeFunction {
    /// One of the three functions over a shared cache.
    pub fn new(view: ReleaseView, cache: Arc<ReleaseCache>) -> Self {
        Self { view, cache }
    }
}

impl SqlTableFunction for AnonymizeFunction {
    fn name(&self) -> &'static str {
        match self.view {
            ReleaseView::Rows => "anonymize",
            ReleaseView::Metadata => "anonymize_metadata",
            ReleaseView::Diagnostics => "anonymize_diagnostics",
        }
    }

    fn params(&self) -> &'static [ParamSpec] {
        ANONYMIZE_PARAMS
    }

    fn about(&self) -> &'static str {
        match self.view {
            ReleaseView::Rows => "Releases anonymized microdata rows of a table.",
            ReleaseView::Metadata => "Public metadata (key, value) of the release anonymize() with the same arguments returns.",
            ReleaseView::Diagnostics => {
                "Owner-only diagnostics of the same release (scores of every lattice node, suppressed and counterfeit counts). Never publish this: it carries exact counts."
            }
        }
    }

    fn create(
        &self,
        args: CallArgs,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let bound = bind(self.name(), ANONYMIZE_PARAMS, &["source"], args)?;
        let request = build_request(self.name(), &bound, context)?;
        let key = request.cache_key();
        let entry = {
            let mut entries = match self.cache.entries.lock() {
                Ok(e) => e,
                Err(poisoned) => poisoned.into_inner(),
            };
            entries
                .entry(key)
                .or_insert_with(|| {
                    Arc::new(CacheEntry {
                        request,
                        cell: OnceCell::new(),
                    })
                })
                .clone()
        };
        let schema = match self.view {
            ReleaseView::Rows => entry.request.release_schema(),
            ReleaseView::Metadata => metadata_schema(),
            ReleaseView::Diagnostics => entry.request.method.diagnostics_schema(),
        };
        let producer = ReleaseProducer {
            view: self.view,
            entry,
            cache: self.cache.clone(),
        };
        Ok(Arc::new(LazyTable::new(schema, Arc::new(producer))))
    }
}

#[derive(Debug)]
struct ReleaseProducer {
    view: ReleaseView,
    entry: Arc<CacheEntry>,
    cache: Arc<ReleaseCache>,
}

#[async_trait]
impl BatchProducer for ReleaseProducer {
    async fn batches(&self, state: &SessionState) -> Result<Arc<Vec<RecordBatch>>> {
        let progress = self.cache.progress();
        let output = self
            .entry
            .cell
            .get_or_try_init(|| async {
                // Charged once, before anything is drawn; refunded if nothing is released.
                let charge = charge_release(
                    &self.cache.ledger,
                    &self.entry.request,
                    state.config_options(),
                )?;
                match engine::compute_release(&self.entry.request, state, progress).await {
                    Ok(output) => Ok(Arc::new(output)),
                    Err(e) => Err(charge.refund(e)),
                }
            })
            .await?;
        Ok(match self.view {
            ReleaseView::Rows => output.rows.clone(),
            ReleaseView::Metadata => Arc::new(vec![metadata_batch(&output.metadata)?]),
            ReleaseView::Diagnostics => output.diagnostics.clone(),
        })
    }
}

/// Schema of `anonymize_metadata`.
pub fn metadata_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, false),
    ]))
}

fn metadata_batch(pairs: &[(String, String)]) -> Result<RecordBatch> {
    let keys: ArrayRef = Arc::new(StringArray::from_iter_values(
        pairs.iter().map(|(k, _)| k.as_str()),
    ));
    let values: ArrayRef = Arc::new(StringArray::from_iter_values(
        pairs.iter().map(|(_, v)| v.as_str()),
    ));
    Ok(RecordBatch::try_new(metadata_schema(), vec![keys, values])?)
}

fn resolve_table(
    function: &str,
    context: &mut dyn RelationPlannerContext,
    name: &str,
    what: &str,
) -> Result<Arc<dyn TableProvider>> {
    match super::resolve::resolve_table(context, name)? {
        Some(provider) => Ok(provider),
        None => plan_err!("{function}(): {what} '{name}' not found"),
    }
}

/// Finds a column by exact name, else by a unique case-insensitive match.
fn resolve_column(function: &str, schema: &Schema, table: &str, wanted: &str) -> Result<String> {
    if schema.field_with_name(wanted).is_ok() {
        return Ok(wanted.to_string());
    }
    let matches: Vec<&str> = schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .filter(|n| n.eq_ignore_ascii_case(wanted))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.to_string()),
        _ => {
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            plan_err!(
                "{function}(): table '{table}' has no column '{wanted}'; its columns are: {}",
                names.join(", ")
            )
        }
    }
}

fn build_request(
    function: &str,
    args: &BoundArgs,
    context: &mut dyn RelationPlannerContext,
) -> Result<AnonymizeRequest> {
    let source_name = args.required_string("source")?;
    let source = resolve_table(function, context, &source_name, "source table")?;
    let schema = source.schema();
    let method = args
        .string("method")?
        .unwrap_or_else(|| "ipa".into())
        .to_ascii_lowercase();

    let qi_text = match args.string("qi")? {
        Some(q) => q,
        None => {
            return plan_err!(
                "{function}(): argument 'qi' is required, e.g. qi => 'age:age_h, sex:sex_h'"
            )
        }
    };
    let table_part = source_name
        .rsplit('.')
        .next()
        .unwrap_or(&source_name)
        .to_string();
    let mut qi = Vec::new();
    for item in qi_text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (column, hierarchy_name) = match item.split_once(':') {
            Some((c, h)) => (c.trim(), h.trim().to_string()),
            None => (item, format!("{table_part}_hierarchy_{item}")),
        };
        let column = resolve_column(function, &schema, &source_name, column)?;
        if qi.iter().any(|q: &QiSpec| q.column == column) {
            return plan_err!("{function}(): column '{column}' is listed twice in 'qi'");
        }
        let hierarchy = match resolve_table(function, context, &hierarchy_name, "hierarchy table") {
            Ok(h) => h,
            Err(_) => {
                return plan_err!(
                    "{function}(): hierarchy table '{hierarchy_name}' for column '{column}' not found; create it (e.g. CREATE VIEW {hierarchy_name} AS SELECT * FROM interval_hierarchy(...)) or name one with qi => '{column}:<table>'"
                )
            }
        };
        qi.push(QiSpec {
            column,
            hierarchy_name,
            hierarchy,
        });
    }
    if qi.is_empty() {
        return plan_err!("{function}(): argument 'qi' names no columns");
    }

    let informative = match args.string("informative")? {
        None => None,
        Some(text) => {
            let columns: Vec<&str> = text
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            let name = match columns.as_slice() {
                [one] => resolve_column(function, &schema, &source_name, one)?,
                _ => {
                    return plan_err!(
                        "{function}(): 'informative' must name exactly one column, got '{text}'"
                    )
                }
            };
            if qi.iter().any(|q| q.column == name) {
                return plan_err!(
                    "{function}(): column '{name}' cannot be both quasi-identifier and informative"
                );
            }
            let data_type = schema.field_with_name(&name)?.data_type().clone();
            Some((name, data_type))
        }
    };

    let epsilon = args.f64("epsilon")?.unwrap_or(1.0);
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return plan_err!("{function}(): epsilon must be a positive finite number, got {epsilon}");
    }
    let method = match method.as_str() {
        "ipa" => {
            if informative.is_none() {
                return plan_err!("{function}(): argument 'informative' is required for method 'ipa', e.g. informative => 'disease'");
            }
            MethodParams::Ipa(ipa_params(function, args, epsilon)?)
        }
        other => return plan_err!("{function}(): unknown method '{other}'; valid methods: ipa"),
    };
    let specific = method_specific_params(method.name());
    for name in args.names() {
        if !COMMON_PARAMS.contains(&name) && !specific.contains(&name) {
            return plan_err!(
                "{function}(): argument '{name}' does not apply to method '{}'; its arguments are: {}",
                method.name(),
                COMMON_PARAMS.iter().chain(specific).copied().collect::<Vec<_>>().join(", ")
            );
        }
    }
    let max_nodes = match args.u64("max_nodes")? {
        Some(0) => return plan_err!("{function}(): max_nodes must be at least 1"),
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        None => DEFAULT_MAX_NODES,
    };

    let dropped: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|n| {
            informative.as_ref().is_none_or(|(i, _)| i != n) && !qi.iter().any(|q| &q.column == n)
        })
        .collect();

    Ok(AnonymizeRequest {
        canonical_args: args.canonical(),
        source_name,
        source,
        qi,
        informative,
        dropped,
        method,
        epsilon,
        seed: args.u64("seed")?,
        max_nodes,
    })
}

fn ipa_params(function: &str, args: &BoundArgs, epsilon: f64) -> Result<IpaParams> {
    let variant = match args.string("variant")? {
        Some(v) => IpaVariant::parse(&v)?,
        None => IpaVariant::Paper,
    };
    let threshold = args.u64("suppression_threshold")?.unwrap_or(2);
    let mut params = IpaParams::with_defaults(variant, epsilon, threshold);
    if let Some(split) = args.string("budget_split")? {
        let parts = split
            .split(',')
            .map(|p| p.trim().parse::<f64>())
            .collect::<std::result::Result<Vec<f64>, _>>();
        let parts = match parts {
            Ok(p) if p.len() == 4 && p.iter().all(|x| x.is_finite() && *x > 0.0) => p,
            _ => {
                return plan_err!(
                    "{function}(): budget_split must be four positive fractions 'sup,ins,val,cand', got '{split}'"
                )
            }
        };
        let total: f64 = parts.iter().sum();
        if total > 1.0 + 1e-9 {
            return plan_err!("{function}(): budget_split fractions sum to {total}, more than 1");
        }
        params.eps_sup = parts[0] * epsilon;
        params.eps_ins = parts[1] * epsilon;
        params.eps_val = parts[2] * epsilon;
        params.eps_cand = parts[3] * epsilon;
    }
    if let Some(flag) = args.bool("insert_into_suppressed")? {
        params.insert_into_suppressed = flag;
    }
    Ok(params)
}
