//! The release pipeline behind `anonymize(...)`: phase 1 (one aggregate pass over the
//! source), phase 2 (the method on histograms) and phase 3 (expansion into rows).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::{cast, concat, sort_to_indices, take};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_err, internal_err, Column, Result};
use datafusion::execution::SessionState;
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::{lit, Expr};
use datafusion::prelude::SessionContext;

use crate::counterfeit_catalog::CounterfeitCatalog;
use crate::hierarchy::load::hierarchy_from_batches;
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::lattice::{node_label, Lattice};
use crate::mechanism::rng::{rng_from_os, rng_from_seed};
use crate::method::{Method, MethodInput, MethodOutput};
use crate::metric::information_loss::{information_loss, InformationLoss};
use crate::privacy::warnings::delta_size_warning;

/// Progress callback of long work: `(phase, done, total)`.
pub type ProgressFn = Arc<dyn Fn(&str, usize, usize) + Send + Sync>;

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

/// A fully validated anonymization request.
#[derive(Debug, Clone)]
pub struct AnonymizeRequest {
    /// Canonical text of the validated arguments, every default filled in.
    pub canonical_args: String,
    /// Source table name, as given.
    pub source_name: String,
    /// Source table.
    pub source: Arc<dyn TableProvider>,
    /// Quasi-identifiers in release order.
    pub qi: Vec<QiSpec>,
    /// The informative column and its Arrow type (kept in the release), if any.
    pub informative: Option<(String, DataType)>,
    /// Source columns that are not released.
    pub dropped: Vec<String>,
    /// The configured method.
    pub method: Arc<dyn Method>,
    /// Fixed seed (tests and reproduction only).
    pub seed: Option<u64>,
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

    /// Schema of the released rows: quasi-identifiers as text, then the informative column
    /// (when there is one) with its source type.
    pub fn release_schema(&self) -> SchemaRef {
        let mut fields: Vec<Field> = self
            .qi
            .iter()
            .map(|q| Field::new(&q.column, DataType::Utf8, false))
            .collect();
        if let Some((name, data_type)) = &self.informative {
            fields.push(Field::new(name, data_type.clone(), false));
        }
        Arc::new(Schema::new(fields))
    }

    /// Schema of the release's counterfeit catalog (`anonymize_catalog`), when the method
    /// publishes one and the release has a sensitive column.
    pub fn catalog_schema(&self) -> Option<SchemaRef> {
        if !self.method.publishes_catalog() {
            return None;
        }
        let (name, data_type) = self.informative.as_ref()?;
        let qi: Vec<String> = self.qi.iter().map(|q| q.column.clone()).collect();
        Some(CounterfeitCatalog::schema(&qi, (name, data_type)))
    }
}

/// Everything a release produces.
#[derive(Debug)]
pub struct ReleaseOutput {
    /// Released microdata rows, in canonical order.
    pub rows: Arc<Vec<RecordBatch>>,
    /// Public metadata.
    pub metadata: Vec<(String, String)>,
    /// The published catalog of counterfeit rows (empty for methods without one).
    pub catalog: Arc<Vec<RecordBatch>>,
    /// Owner-only diagnostics (one row per lattice node).
    pub diagnostics: Arc<Vec<RecordBatch>>,
    /// Owner-only information loss of the release against the source.
    pub information_loss: InformationLoss,
    /// Owner-only warnings `(topic, message)`: they may depend on exact counts.
    pub warnings: Vec<(String, String)>,
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
///
/// Problems found in the data (an empty source, NULLs, a value missing from its hierarchy,
/// a malformed hierarchy table) are execution errors: the arguments were valid.
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
    if let Some((name, _)) = &request.informative {
        group.push(Expr::Column(Column::new_unqualified(name)));
    }
    let batches = ctx
        .read_table(request.source.clone())?
        .aggregate(group, vec![count(lit(1)).alias("__anonymize_count")])?
        .collect()
        .await?;
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    if rows == 0 {
        return exec_err!(
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
                return exec_err!(
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
                            return exec_err!(
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

    let count_column = if request.informative.is_some() {
        attrs + 1
    } else {
        attrs
    };
    let (codes, values) = match &request.informative {
        Some((name, _)) => informative_codes(&batches, attrs, name, &request.source_name)?,
        // Without an informative column every record carries the same (unreleased) value.
        None => (
            vec![0u32; rows],
            Arc::new(datafusion::arrow::array::NullArray::new(1)) as ArrayRef,
        ),
    };
    let mut counts = Vec::with_capacity(rows);
    for batch in &batches {
        let column = cast(batch.column(count_column), &DataType::UInt64)?;
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

/// Informative values of the phase-1 result: a code per row, and the distinct values in
/// canonical (sorted) order so that codes never depend on the order rows arrived in.
fn informative_codes(
    batches: &[RecordBatch],
    column: usize,
    name: &str,
    source_name: &str,
) -> Result<(Vec<u32>, ArrayRef)> {
    let inf_arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(column).as_ref()).collect();
    let informative = concat(&inf_arrays)?;
    if informative.null_count() > 0 {
        return exec_err!(
            "anonymize(): informative column '{}' of table '{}' contains NULL values; filter or impute them first",
            name,
            source_name
        );
    }
    let keys = cast(&informative, &DataType::Utf8)?;
    let keys = keys.as_string::<i32>();
    let mut provisional: HashMap<&str, u32> = HashMap::new();
    let mut first_rows: Vec<u32> = Vec::new();
    let mut codes: Vec<u32> = Vec::with_capacity(keys.len());
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

    Ok((codes, values))
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
    let refs: Vec<&Hierarchy> = base.hierarchies.iter().collect();
    let lattice = Lattice::new(
        refs.iter().map(|h| h.height()).collect(),
        request.method.max_nodes(),
    )?;
    let mut warnings = Vec::new();
    let delta = request.method.budget().delta;
    if delta > 0.0 {
        if let Some(w) = delta_size_warning(delta, base.histogram.total()) {
            warnings.push(("delta".to_string(), w));
        }
    }
    let mut rng = match request.seed {
        Some(seed) => rng_from_seed(seed),
        None => rng_from_os(),
    };
    let method_name = request.method.name();
    let report = |done: usize, total: usize| {
        if let Some(p) = &progress {
            p(method_name, done, total);
        }
    };
    let input = MethodInput {
        histogram: &base.histogram,
        hierarchies: &refs,
        value_domain: base.values.len(),
        lattice: &lattice,
        progress: &report,
    };
    let output = request.method.run(&input, &mut rng)?;
    let schema = request.release_schema();
    let rows = output.release.expand(&refs, &base.values, &schema)?;
    let released: u64 = rows.iter().map(|b| b.num_rows() as u64).sum();
    if released != output.release.row_count() {
        return exec_err!(
            "release expansion produced {released} rows, expected {}",
            output.release.row_count()
        );
    }
    let metadata = common_metadata(request, &output, released);
    let information_loss = information_loss(
        &base.histogram,
        &refs,
        base.values.len(),
        &output.release,
        output.catalog.as_ref(),
    )?;
    let catalog = match (&output.catalog, request.catalog_schema()) {
        (Some(catalog), Some(schema)) => {
            vec![catalog.to_batch(&output.release, &refs, &base.values, &schema)?]
        }
        _ => Vec::new(),
    };
    Ok(ReleaseOutput {
        rows: Arc::new(rows),
        metadata,
        catalog: Arc::new(catalog),
        diagnostics: Arc::new(vec![output.diagnostics]),
        information_loss,
        warnings,
    })
}

/// Public metadata every method shares, around the method's own entries.
fn common_metadata(
    request: &AnonymizeRequest,
    output: &MethodOutput,
    released_rows: u64,
) -> Vec<(String, String)> {
    let levels = request
        .qi
        .iter()
        .zip(&output.node)
        .map(|(q, l)| format!("{}={l}", q.column))
        .collect::<Vec<_>>()
        .join(", ");
    let mut out: Vec<(String, String)> = vec![
        ("method".into(), request.method.name().into()),
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
        (
            "informative".into(),
            request
                .informative
                .as_ref()
                .map(|(n, _)| n.clone())
                .unwrap_or_default(),
        ),
        ("dropped_columns".into(), request.dropped.join(", ")),
    ];
    out.extend(output.metadata.iter().cloned());
    out.extend([
        ("levels".into(), levels),
        ("node".into(), node_label(&output.node)),
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
    ]);
    out
}
