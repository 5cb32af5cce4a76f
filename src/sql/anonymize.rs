//! `anonymize(...)`, `anonymize_metadata(...)` and `anonymize_diagnostics(...)`.
//!
//! All three share one cache keyed by the canonical arguments and the identity of the
//! source and hierarchy tables: the first scan of any of them computes the release, every
//! later scan (same statement or not) serves the same rows. A query can therefore never
//! trigger a new random draw behind the user's back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray};
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
use crate::method::dp_histogram::{DpHistogramParams, DEFAULT_MAX_CELLS};
use crate::method::ipa::{IpaParams, IpaVariant};
use crate::method::kanon::KanonParams;
use crate::method::safepub::{FinalSelection, SafePubParams, ScoreFunction};
use crate::method::MethodParams;
use crate::metric::information_loss::InformationLoss;

/// Which view of a release a function returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseView {
    /// The released microdata rows.
    Rows,
    /// Public metadata `(key, value)`.
    Metadata,
    /// Owner-only diagnostics; never publish.
    Diagnostics,
    /// Owner-only information loss of the release against its original; never publish.
    InformationLoss,
    /// Owner-only warnings `(topic, message)`; never publish.
    Warnings,
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
    ParamSpec { name: "method", doc: "anonymization method: 'ipa', 'safepub', 'kanon' or 'dp_histogram'", default: Some("'ipa'") },
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
    ParamSpec {
        name: "epsilon_search",
        doc: "safepub: part of epsilon spent on the search; the rest (epsilon_anon) on sampling and suppression",
        default: Some("0.1"),
    },
    ParamSpec {
        name: "delta",
        doc: "safepub: delta of (epsilon, delta)-differential privacy, required; choose a power of ten below 1/rows and at most 1e-4, e.g. 1e-6",
        default: None,
    },
    ParamSpec { name: "steps", doc: "safepub: number of search steps", default: Some("300") },
    ParamSpec {
        name: "score",
        doc: "safepub: score of the search: 'granularity' (ARX: loss), 'intensity' (precision), 'discernibility', 'entropy' (non-uniform entropy proxy), 'group_size', 'classification' (class = the informative column)",
        default: Some("'granularity'"),
    },
    ParamSpec { name: "arx_compat", doc: "safepub: use k = d'(delta) + 1 as ARX does (the minimal k otherwise)", default: Some("false") },
    ParamSpec {
        name: "final_selection",
        doc: "safepub: 'best' (best-scoring pivot, as in the paper) or 'last' (last pivot, a function of the private choices only)",
        default: Some("'best'"),
    },
    ParamSpec { name: "max_nodes", doc: "largest lattice to evaluate (safepub, which walks the lattice without enumerating it: no limit unless given)", default: Some("100000") },
    ParamSpec { name: "k", doc: "kanon: smallest size of a released class", default: Some("10") },
    ParamSpec { name: "suppression_limit", doc: "kanon: largest fraction of records that may be suppressed (to the '*' class)", default: Some("0.05") },
    ParamSpec {
        name: "levels",
        doc: "dp_histogram: the generalization node, 'col=level, ...' (columns not named stay at level 0)",
        default: Some("the first node by level sum with at most max_cells cells"),
    },
    ParamSpec { name: "max_cells", doc: "dp_histogram: largest generalized domain (quasi-identifier combinations x informative values)", default: Some("10000000") },
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
        "safepub" => &[
            "epsilon_search",
            "delta",
            "steps",
            "score",
            "arx_compat",
            "final_selection",
        ],
        "kanon" => &["k", "suppression_limit"],
        "dp_histogram" => &["levels", "max_cells"],
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
            ReleaseView::InformationLoss => "anonymize_information_loss",
            ReleaseView::Warnings => "anonymize_warnings",
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
            ReleaseView::InformationLoss => {
                "Owner-only information loss of the same release against its original (IPA paper Eq. 5-10, one definition for every method): NCP, EMD, Rate, their sum and mean. Never publish this: it is computed from the exact data."
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
            ReleaseView::InformationLoss => information_loss_schema(),
            ReleaseView::Warnings => metadata_schema(),
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
            ReleaseView::InformationLoss => Arc::new(vec![information_loss_batch(
                self.entry.request.method.name(),
                &output.information_loss,
            )?]),
            ReleaseView::Warnings => Arc::new(vec![metadata_batch(&output.warnings)?]),
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

/// Schema of `anonymize_information_loss`.
pub fn information_loss_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("method", DataType::Utf8, false),
        Field::new("ncp", DataType::Float64, false),
        Field::new("emd", DataType::Float64, false),
        Field::new("rate", DataType::Float64, false),
        Field::new("il_sum", DataType::Float64, false),
        Field::new("il_mean", DataType::Float64, false),
    ]))
}

fn information_loss_batch(method: &str, il: &InformationLoss) -> Result<RecordBatch> {
    let f = |x: f64| Arc::new(Float64Array::from(vec![x])) as ArrayRef;
    Ok(RecordBatch::try_new(
        information_loss_schema(),
        vec![
            Arc::new(StringArray::from(vec![method])),
            f(il.ncp),
            f(il.emd),
            f(il.rate),
            f(il.sum()),
            f(il.mean()),
        ],
    )?)
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
        "safepub" => MethodParams::SafePub(safepub_params(
            function,
            args,
            epsilon,
            informative.is_some(),
        )?),
        "kanon" => {
            for name in ["epsilon", "seed"] {
                if args.has(name) {
                    return plan_err!("{function}(): argument '{name}' does not apply to method 'kanon': k-anonymization is deterministic and has no privacy budget");
                }
            }
            let defaults = KanonParams::default();
            let params = KanonParams {
                k: args.u64("k")?.unwrap_or(defaults.k),
                suppression_limit: args
                    .f64("suppression_limit")?
                    .unwrap_or(defaults.suppression_limit),
            };
            params.validate().map_err(|e| prefix_error(function, e))?;
            MethodParams::Kanon(params)
        }
        "dp_histogram" => {
            let levels = match args.string("levels")? {
                Some(text) => Some(
                    DpHistogramParams::parse_levels(&text)
                        .map_err(|e| prefix_error(function, e))?,
                ),
                None => None,
            };
            let max_cells = match args.u64("max_cells")? {
                Some(0) => return plan_err!("{function}(): max_cells must be at least 1"),
                Some(n) => n,
                None => DEFAULT_MAX_CELLS,
            };
            MethodParams::DpHistogram(DpHistogramParams {
                epsilon,
                levels,
                max_cells,
            })
        }
        other => {
            return plan_err!(
                "{function}(): unknown method '{other}'; valid methods: ipa, safepub, kanon, dp_histogram"
            )
        }
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
        // SafePub walks the lattice without enumerating it: no size limit unless asked.
        None if matches!(method, MethodParams::SafePub(_)) => usize::MAX,
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

fn safepub_params(
    function: &str,
    args: &BoundArgs,
    epsilon: f64,
    has_informative: bool,
) -> Result<SafePubParams> {
    let Some(delta) = args.f64("delta")? else {
        return plan_err!(
            "{function}(): argument 'delta' is required for method 'safepub', e.g. delta => 1e-6 (a power of ten below 1/rows, at most 1e-4)"
        );
    };
    let mut params = SafePubParams::with_defaults(epsilon, delta);
    if let Some(e) = args.f64("epsilon_search")? {
        params.epsilon_search = e;
    }
    if let Some(steps) = args.u64("steps")? {
        params.steps = steps;
    }
    if let Some(score) = args.string("score")? {
        params.score = ScoreFunction::parse(&score)?;
    }
    if let Some(flag) = args.bool("arx_compat")? {
        params.arx_compat = flag;
    }
    if let Some(selection) = args.string("final_selection")? {
        params.final_selection = FinalSelection::parse(&selection)?;
    }
    if params.score == ScoreFunction::Classification && !has_informative {
        return plan_err!(
            "{function}(): score 'classification' needs a class attribute: name it with informative => '<column>' (released unchanged, never generalized)"
        );
    }
    params.validate()?;
    Ok(params)
}

/// Prefixes a planning error with the function name.
fn prefix_error(
    function: &str,
    e: datafusion::error::DataFusionError,
) -> datafusion::error::DataFusionError {
    datafusion::error::DataFusionError::Plan(format!(
        "{function}(): {}",
        e.strip_backtrace()
            .trim_start_matches("Error during planning: ")
    ))
}
