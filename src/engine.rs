//! The release pipeline behind `anonymize(...)`: phase 1 (one aggregate pass over the
//! source), phase 2 (the method on histograms) and phase 3 (expansion into rows).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array,
};
use datafusion::arrow::compute::{cast, concat, sort_to_indices, take};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_err, internal_err, plan_err, Column, Result};
use datafusion::execution::SessionState;
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::{lit, Expr};
use datafusion::prelude::SessionContext;

use crate::hierarchy::load::hierarchy_from_batches;
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::lattice::{node_label, Lattice};
use crate::mechanism::rng::{rng_from_os, rng_from_seed};
use crate::method::ipa::{run_ipa, IpaParams, IpaVariant, NodeOutcome};
use crate::sql::anonymize::ProgressFn;

/// A quasi-identifier and its hierarchy table.
#[derive(Debug, Clone)]
pub struct QiSpec {
    /// Column name in the source.
    pub column: String,
    /// Name of the hierarchy table, as given.
    pub hierarchy_name: String,
    /// The hierarchy table.
    pub hierarchy: Arc<dyn TableProvider>,
}

/// Method-specific parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum MethodParams {
    /// IPA (Lee & Chung 2020).
    Ipa(IpaParams),
}

/// A fully validated anonymization request.
#[derive(Debug, Clone)]
pub struct AnonymizeRequest {
    /// Canonical text of the arguments.
    pub canonical_args: String,
    /// Source table name, as given.
    pub source_name: String,
    /// Source table.
    pub source: Arc<dyn TableProvider>,
    /// Quasi-identifiers in release order.
    pub qi: Vec<QiSpec>,
    /// The informative column.
    pub informative: String,
    /// Its Arrow type (kept in the release).
    pub informative_type: DataType,
    /// Source columns that are not released.
    pub dropped: Vec<String>,
    /// Method parameters.
    pub method: MethodParams,
    /// Total ε as given.
    pub epsilon: f64,
    /// Fixed seed (tests and reproduction only).
    pub seed: Option<u64>,
    /// Largest lattice allowed.
    pub max_nodes: usize,
}

impl AnonymizeRequest {
    /// Cache key: canonical arguments plus the identity of every table involved.
    pub fn cache_key(&self) -> String {
        let mut key = format!(
            "{}|src@{:p}",
            self.canonical_args,
            Arc::as_ptr(&self.source) as *const ()
        );
        for q in &self.qi {
            key.push_str(&format!(
                "|{}@{:p}",
                q.column,
                Arc::as_ptr(&q.hierarchy) as *const ()
            ));
        }
        key
    }

    /// Schema of the released rows: quasi-identifiers as text, then the informative column.
    pub fn release_schema(&self) -> SchemaRef {
        let mut fields: Vec<Field> = self
            .qi
            .iter()
            .map(|q| Field::new(&q.column, DataType::Utf8, false))
            .collect();
        fields.push(Field::new(
            &self.informative,
            self.informative_type.clone(),
            false,
        ));
        Arc::new(Schema::new(fields))
    }
}

/// Everything a release produces.
#[derive(Debug)]
pub struct ReleaseOutput {
    /// Released microdata rows, in canonical order.
    pub rows: Arc<Vec<RecordBatch>>,
    /// Public metadata.
    pub metadata: Vec<(String, String)>,
    /// Owner-only diagnostics (one row per lattice node).
    pub diagnostics: Arc<Vec<RecordBatch>>,
}

/// Schema of `anonymize_diagnostics`.
pub fn diagnostics_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("node", DataType::Utf8, false),
        Field::new("chosen", DataType::Boolean, false),
        Field::new("ncp", DataType::Float64, false),
        Field::new("emd", DataType::Float64, false),
        Field::new("rate", DataType::Float64, false),
        Field::new("il", DataType::Float64, false),
        Field::new("classes", DataType::UInt64, false),
        Field::new("suppressed_classes", DataType::UInt64, false),
        Field::new("suppressed_records", DataType::UInt64, false),
        Field::new("counterfeits", DataType::UInt64, false),
        Field::new("released_rows", DataType::UInt64, false),
    ]))
}

/// The leaf-level histogram of a source plus the decoded informative values.
pub struct BaseData {
    /// Hierarchies in quasi-identifier order.
    pub hierarchies: Vec<Hierarchy>,
    /// Leaf-level histogram.
    pub histogram: GroupedHistogram,
    /// Distinct informative values in canonical (sorted) order; index = value code.
    pub values: ArrayRef,
}

/// Phase 1: loads the hierarchies and builds the base histogram with one aggregate query.
pub async fn load_base(request: &AnonymizeRequest, state: &SessionState) -> Result<BaseData> {
    let ctx = SessionContext::new_with_state(state.clone());
    let mut hierarchies = Vec::with_capacity(request.qi.len());
    for q in &request.qi {
        let batches = ctx.read_table(q.hierarchy.clone())?.collect().await?;
        hierarchies.push(hierarchy_from_batches(
            &q.column,
            &q.hierarchy_name,
            &batches,
        )?);
    }

    let mut group: Vec<Expr> = request
        .qi
        .iter()
        .map(|q| Expr::Column(Column::new_unqualified(&q.column)))
        .collect();
    group.push(Expr::Column(Column::new_unqualified(&request.informative)));
    let batches = ctx
        .read_table(request.source.clone())?
        .aggregate(group, vec![count(lit(1)).alias("__anonymize_count")])?
        .collect()
        .await?;
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    if rows == 0 {
        return plan_err!(
            "anonymize(): source table '{}' is empty",
            request.source_name
        );
    }
    let attrs = request.qi.len();

    // Quasi-identifiers: text → leaf code.
    let mut leaf_codes: Vec<Vec<u32>> = vec![Vec::with_capacity(rows); attrs];
    for (a, q) in request.qi.iter().enumerate() {
        let hierarchy = &hierarchies[a];
        let mut last: Option<(String, u32)> = None;
        for batch in &batches {
            let text = cast(batch.column(a), &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            if text.null_count() > 0 {
                return plan_err!(
                    "anonymize(): quasi-identifier '{}' of table '{}' contains NULL values; filter or impute them first",
                    q.column,
                    request.source_name
                );
            }
            for value in text.iter().flatten() {
                let code = match &last {
                    Some((v, c)) if v == value => *c,
                    _ => match hierarchy.leaf_code(value) {
                        Some(c) => {
                            last = Some((value.to_string(), c));
                            c
                        }
                        None => {
                            return plan_err!(
                                "anonymize(): value '{value}' of column '{}' is not in its hierarchy '{}'",
                                q.column,
                                q.hierarchy_name
                            )
                        }
                    },
                };
                leaf_codes[a].push(code);
            }
        }
    }

    // Informative values: canonical codes by sorted value.
    let inf_arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(attrs).as_ref()).collect();
    let informative = concat(&inf_arrays)?;
    if informative.null_count() > 0 {
        return plan_err!(
            "anonymize(): informative column '{}' of table '{}' contains NULL values; filter or impute them first",
            request.informative,
            request.source_name
        );
    }
    let keys = cast(&informative, &DataType::Utf8)?;
    let keys = keys.as_string::<i32>();
    let mut provisional: HashMap<&str, u32> = HashMap::new();
    let mut first_rows: Vec<u32> = Vec::new();
    let mut codes: Vec<u32> = Vec::with_capacity(rows);
    for (row, key) in keys.iter().enumerate() {
        let key = key.unwrap_or_default();
        let next = provisional.len() as u32;
        let code = *provisional.entry(key).or_insert_with(|| {
            first_rows.push(row as u32);
            next
        });
        codes.push(code);
    }
    let distinct = take(
        informative.as_ref(),
        &datafusion::arrow::array::UInt32Array::from(first_rows),
        None,
    )?;
    let order = sort_to_indices(distinct.as_ref(), None, None)?;
    let values = take(distinct.as_ref(), &order, None)?;
    let mut rank = vec![0u32; order.len()];
    for (new_code, &old) in order.values().iter().enumerate() {
        rank[old as usize] = new_code as u32;
    }
    for c in codes.iter_mut() {
        *c = rank[*c as usize];
    }

    let mut counts = Vec::with_capacity(rows);
    for batch in &batches {
        let column = cast(batch.column(attrs + 1), &DataType::UInt64)?;
        counts.extend(
            column
                .as_primitive::<datafusion::arrow::datatypes::UInt64Type>()
                .values()
                .iter()
                .copied(),
        );
    }
    let refs: Vec<&Hierarchy> = hierarchies.iter().collect();
    let histogram = GroupedHistogram::from_rows(&refs, leaf_codes, codes, counts, values.len())?;
    Ok(BaseData {
        hierarchies,
        histogram,
        values,
    })
}

/// Runs the whole pipeline for a request.
pub async fn compute_release(
    request: &AnonymizeRequest,
    state: &SessionState,
    progress: Option<ProgressFn>,
) -> Result<ReleaseOutput> {
    let base = load_base(request, state).await?;
    let request = request.clone();
    let handle = tokio::task::spawn_blocking(move || run_method(&request, base, progress));
    match handle.await {
        Ok(result) => result,
        Err(e) => internal_err!("anonymization task failed: {e}"),
    }
}

fn run_method(
    request: &AnonymizeRequest,
    base: BaseData,
    progress: Option<ProgressFn>,
) -> Result<ReleaseOutput> {
    let MethodParams::Ipa(params) = &request.method;
    let refs: Vec<&Hierarchy> = base.hierarchies.iter().collect();
    let lattice = Lattice::new(refs.iter().map(|h| h.height()).collect(), request.max_nodes)?;
    let mut rng = match request.seed {
        Some(seed) => rng_from_seed(seed),
        None => rng_from_os(),
    };
    let report = |done: usize, total: usize| {
        if let Some(p) = &progress {
            p("ipa lattice", done, total);
        }
    };
    let value_domain = base.values.len();
    let result = run_ipa(
        &base.histogram,
        &refs,
        &lattice,
        value_domain,
        params,
        &mut rng,
        &report,
    )?;
    let schema = request.release_schema();
    let rows = result.release.expand(&refs, &base.values, &schema)?;
    let released: u64 = rows.iter().map(|b| b.num_rows() as u64).sum();
    if released != result.release.row_count() {
        return exec_err!(
            "release expansion produced {released} rows, expected {}",
            result.release.row_count()
        );
    }
    let chosen = &result.outcomes[result.chosen];
    let metadata = ipa_metadata(request, params, &lattice, chosen, released);
    let diagnostics = diagnostics_batch(&result.outcomes, result.chosen)?;
    Ok(ReleaseOutput {
        rows: Arc::new(rows),
        metadata,
        diagnostics: Arc::new(vec![diagnostics]),
    })
}

fn ipa_metadata(
    request: &AnonymizeRequest,
    params: &IpaParams,
    lattice: &Lattice,
    chosen: &NodeOutcome,
    released_rows: u64,
) -> Vec<(String, String)> {
    let levels = request
        .qi
        .iter()
        .zip(&chosen.node)
        .map(|(q, l)| format!("{}={l}", q.column))
        .collect::<Vec<_>>()
        .join(", ");
    let (sup_scale, comparison) = match params.variant {
        IpaVariant::Paper => (
            format!("Lap(({}-1)/epsilon_sup)", params.threshold),
            "suppress iff |E| <= t + noise",
        ),
        IpaVariant::Reference => (
            "Lap(1/epsilon_sup), threshold clamped at t".to_string(),
            "suppress iff |E| < max(t, t + noise)",
        ),
    };
    let claimed = params.claimed_epsilon();
    let guarantee = format!(
        "No formal differential-privacy guarantee. The IPA paper (Lee & Chung 2020, Theorem 9) claims \
         epsilon-DP with epsilon = epsilon_sup + epsilon_ins + epsilon_val + epsilon_cand = {claimed}; that claim \
         does not hold: (1) every real informative value is published truthfully, which no pure epsilon-DP \
         mechanism can do; (2) only classes holding real records can appear, so a class with one record is \
         visible with probability about 0.45 at epsilon_sup = 0.1 and never without that record; (3) the \
         counterfeit count uses noise clamped at zero (one-sided), so a class's released size is never below \
         its true size; (4) all {nodes} lattice candidates are perturbed with fresh noise and scored on the \
         data, and the selection does not compose over them. Treat this release as generalized, \
         noise-augmented microdata that resists simple re-identification, not as differentially private.",
        nodes = lattice.len()
    );
    vec![
        ("method".into(), "ipa".into()),
        ("variant".into(), params.variant.name().into()),
        ("source".into(), request.source_name.clone()),
        (
            "quasi_identifiers".into(),
            request
                .qi
                .iter()
                .map(|q| q.column.clone())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "hierarchies".into(),
            request
                .qi
                .iter()
                .map(|q| format!("{}:{}", q.column, q.hierarchy_name))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("informative".into(), request.informative.clone()),
        ("dropped_columns".into(), request.dropped.join(", ")),
        ("epsilon".into(), format!("{claimed}")),
        ("epsilon_sup".into(), format!("{}", params.eps_sup)),
        ("epsilon_ins".into(), format!("{}", params.eps_ins)),
        ("epsilon_val".into(), format!("{}", params.eps_val)),
        ("epsilon_cand".into(), format!("{}", params.eps_cand)),
        ("suppression_threshold".into(), params.threshold.to_string()),
        (
            "suppression_noise".into(),
            format!("{sup_scale}; {comparison}"),
        ),
        (
            "insertion_noise".into(),
            "two-sided geometric (discrete Laplace) with scale 1/epsilon_ins, clamped at 0".into(),
        ),
        (
            "insert_into_suppressed".into(),
            params.insert_into_suppressed.to_string(),
        ),
        ("lattice_nodes".into(), lattice.len().to_string()),
        ("levels".into(), levels),
        ("node".into(), node_label(&chosen.node)),
        ("released_rows".into(), released_rows.to_string()),
        (
            "row_order".into(),
            "canonical: by class (hierarchy order, suppressed class last), then informative value"
                .into(),
        ),
        ("seeded".into(), request.seed.is_some().to_string()),
        (
            "rng".into(),
            if request.seed.is_some() {
                "ChaCha20 seeded by the caller (reproduction only, not private)"
            } else {
                "ChaCha20 seeded from the operating system"
            }
            .into(),
        ),
        ("guarantee".into(), guarantee),
    ]
}

fn diagnostics_batch(outcomes: &[NodeOutcome], chosen: usize) -> Result<RecordBatch> {
    let u64s = |f: &dyn Fn(&NodeOutcome) -> u64| {
        Arc::new(UInt64Array::from_iter_values(outcomes.iter().map(f))) as ArrayRef
    };
    let f64s = |f: &dyn Fn(&NodeOutcome) -> f64| {
        Arc::new(Float64Array::from_iter_values(outcomes.iter().map(f))) as ArrayRef
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            outcomes.iter().map(|o| node_label(&o.node)),
        )),
        Arc::new(BooleanArray::from_iter(
            (0..outcomes.len()).map(|i| Some(i == chosen)),
        )),
        f64s(&|o| o.ncp),
        f64s(&|o| o.emd),
        f64s(&|o| o.rate),
        f64s(&|o| o.il),
        u64s(&|o| o.classes as u64),
        u64s(&|o| o.suppressed_classes as u64),
        u64s(&|o| o.suppressed_records),
        u64s(&|o| o.counterfeits),
        u64s(&|o| o.released_rows),
    ];
    Ok(RecordBatch::try_new(diagnostics_schema(), columns)?)
}
