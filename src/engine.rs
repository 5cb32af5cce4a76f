//! The release pipeline behind `anonymize(...)`: phase 1 (one aggregate pass over the
//! source), phase 2 (the method on histograms) and phase 3 (expansion into rows).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::{cast, interleave, sort_to_indices, take};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{exec_err, internal_err, Column, Result};
use datafusion::execution::SessionState;
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::{lit, Expr};
use datafusion::prelude::SessionContext;

use crate::counterfeit_catalog::{CatalogRows, CounterfeitCatalog};
use crate::hierarchy::load::hierarchy_from_batches;
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::lattice::{node_label, Lattice, LevelBounds};
use crate::mechanism::rng::{rng_from_os, rng_from_seed};
use crate::method::{Method, MethodInput, MethodOutput};
use crate::metric::information_loss::{information_loss, InformationLoss};
use crate::privacy::warnings::delta_size_warning;
use crate::progress::{Cancel, Progress, ProgressFn};
use crate::quote::quote;
use crate::release::IntervalMeans;
use crate::release::{check_release_size, ReleaseRowLimit, ReleasedRows};
use crate::sensitive::{
    has_natural_order, SensitiveColumn, SensitiveDomain, SensitiveHierarchy, SensitiveSpec,
};

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
    /// The sensitive (informative) columns, kept in the release; empty when none.
    pub sensitive: Vec<SensitiveSpec>,
    /// Source columns that are not released.
    pub dropped: Vec<String>,
    /// The configured method.
    pub method: Arc<dyn Method>,
    /// Fixed seed (tests and reproduction only).
    pub seed: Option<u64>,
    /// `max_release_rows`, if given (not part of the cache key).
    pub max_release_rows: Option<u64>,
    /// Made by a public user ([`crate::Access::Public`]): records a release cannot use are
    /// left out instead of failing it ([`crate::public::records`]), and the size limit is
    /// checked on the released rows by the caller, not on figures of the data.
    pub public: bool,
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
        for s in &self.sensitive {
            if let Some((_, h)) = &s.hierarchy {
                key.push_str(&format!("|{}@{:p}", s.column, Arc::as_ptr(h) as *const ()));
            }
        }
        key
    }

    /// Schema of the released rows: quasi-identifiers as text, then the sensitive columns
    /// with their source types.
    pub fn release_schema(&self) -> SchemaRef {
        let mut fields: Vec<Field> = self
            .qi
            .iter()
            .map(|q| Field::new(&q.column, DataType::Utf8, false))
            .collect();
        for s in &self.sensitive {
            fields.push(Field::new(&s.column, s.data_type.clone(), false));
        }
        Arc::new(Schema::new(fields))
    }

    /// Schema of the release's counterfeit catalog (`anonymize_catalog`), when the method
    /// publishes one and the release has a sensitive column.
    pub fn catalog_schema(&self) -> Option<SchemaRef> {
        if !self.method.publishes_catalog() {
            return None;
        }
        let sensitive = self.sensitive.first()?;
        let qi: Vec<String> = self.qi.iter().map(|q| q.column.clone()).collect();
        Some(CounterfeitCatalog::schema(
            &qi,
            (&sensitive.column, &sensitive.data_type),
        ))
    }
}

/// Everything a release produces.
#[derive(Debug)]
pub struct ReleaseOutput {
    /// Released microdata rows, in canonical order, expanded as they are read.
    pub rows: ReleasedRows,
    /// Public metadata.
    pub metadata: Vec<(String, String)>,
    /// The published catalog of counterfeit rows, expanded as it is read (`None` for
    /// methods without one).
    pub catalog: Option<CatalogRows>,
    /// The published interval means (`None` for methods without them).
    pub interval_means: Option<IntervalMeans>,
    /// Owner-only diagnostics (one row per lattice node).
    pub diagnostics: Arc<Vec<RecordBatch>>,
    /// Owner-only information loss of the release against the source.
    pub information_loss: InformationLoss,
    /// Owner-only warnings `(topic, message)`: they may depend on exact counts.
    pub warnings: Vec<(String, String)>,
}

/// The leaf-level histogram of a source plus the decoded sensitive values.
pub struct BaseData {
    /// Hierarchies in quasi-identifier order.
    pub hierarchies: Vec<Hierarchy>,
    /// Leaf-level histogram; its value codes are tuple codes of `sensitive`.
    pub histogram: GroupedHistogram,
    /// The sensitive columns' values and how tuple codes decode into them.
    pub sensitive: SensitiveDomain,
}

/// Phase 1: loads the hierarchies and builds the base histogram with one aggregate query.
///
/// Problems found in the data (an empty source, NULLs, a value missing from its hierarchy,
/// a malformed hierarchy table) are execution errors: the arguments were valid.
pub async fn load_base(request: &AnonymizeRequest, state: &SessionState) -> Result<BaseData> {
    // The aggregate over the source runs wherever the session runs its queries (a cluster,
    // when connected to one); the small hierarchy tables are read on this process.
    let ctx = SessionContext::new_with_state(state.clone());
    let local = SessionContext::new_with_state(crate::session::local_state(state));
    let mut hierarchies = Vec::with_capacity(request.qi.len());
    for q in &request.qi {
        let batches = local.read_table(q.hierarchy.clone())?.collect().await?;
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
    for s in &request.sensitive {
        group.push(Expr::Column(Column::new_unqualified(&s.column)));
    }
    let mut batches = ctx
        .read_table(request.source.clone())?
        .aggregate(group, vec![count(lit(1)).alias("__anonymize_count")])?
        .collect()
        .await?;
    if request.public {
        let mut sensitive = Vec::with_capacity(request.sensitive.len());
        for s in &request.sensitive {
            sensitive.push(match &s.hierarchy {
                None => None,
                Some((name, table)) => {
                    let rows = local.read_table(table.clone())?.collect().await?;
                    Some(hierarchy_from_batches(&s.column, name, &rows)?)
                }
            });
        }
        let qi: Vec<&Hierarchy> = hierarchies.iter().collect();
        let sensitive: Vec<Option<&Hierarchy>> = sensitive.iter().map(Option::as_ref).collect();
        batches = crate::public::records::usable_records(batches, &qi, &sensitive)?;
    }
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
                            "anonymize(): value {} of column '{}' is not in its hierarchy '{}'{}",
                            quote(value),
                            q.column,
                            q.hierarchy_name,
                            near_miss_hint(hierarchy, value)
                        )
                        }
                    },
                };
                leaf_codes[a].push(code);
            }
        }
    }

    let count_column = attrs + request.sensitive.len();
    let (codes, sensitive) = sensitive_codes(&local, request, &batches, attrs, rows).await?;
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
    // Everything needed is in the code arrays now: free the aggregate's output before the
    // histogram is sorted (the two together were phase 1's peak).
    drop(batches);
    let refs: Vec<&Hierarchy> = hierarchies.iter().collect();
    let histogram =
        GroupedHistogram::from_rows(&refs, leaf_codes, codes, counts, sensitive.tuples())?;
    Ok(BaseData {
        hierarchies,
        histogram,
        sensitive,
    })
}

/// When a value is missing from its hierarchy only because of whitespace or letter case,
/// says which leaf it nearly matches (values are matched byte for byte).
fn near_miss_hint(hierarchy: &Hierarchy, value: &str) -> String {
    let wanted = value.trim();
    let leaves = hierarchy.level(0).labels();
    let near = leaves
        .iter()
        .find(|leaf| leaf.trim() == wanted)
        .or_else(|| {
            leaves
                .iter()
                .find(|leaf| leaf.trim().eq_ignore_ascii_case(wanted))
        });
    match near {
        Some(leaf) => format!(
            "; the hierarchy has {}: values are matched byte for byte, spaces and letter case included (trim or fix the data or the hierarchy)",
            quote(leaf)
        ),
        None => String::new(),
    }
}

/// The sensitive columns of the phase-1 result: a tuple code per row and the domain that
/// decodes it. Each column's distinct values are sorted; tuples are numbered in
/// lexicographic order of their columns' codes, so with one column a tuple code is the
/// column's value code.
async fn sensitive_codes(
    ctx: &SessionContext,
    request: &AnonymizeRequest,
    batches: &[RecordBatch],
    attrs: usize,
    rows: usize,
) -> Result<(Vec<u32>, SensitiveDomain)> {
    if request.sensitive.is_empty() {
        // Without a sensitive column every record carries the same (unreleased) value.
        return Ok((vec![0u32; rows], SensitiveDomain::none()));
    }
    let mut per_column: Vec<Vec<u32>> = Vec::with_capacity(request.sensitive.len());
    let mut columns: Vec<SensitiveColumn> = Vec::with_capacity(request.sensitive.len());
    for (j, spec) in request.sensitive.iter().enumerate() {
        let (codes, values) =
            informative_codes(batches, attrs + j, &spec.column, &request.source_name)?;
        let hierarchy = match &spec.hierarchy {
            None => None,
            Some((name, table)) => {
                let hierarchy_batches = ctx.read_table(table.clone())?.collect().await?;
                let hierarchy = hierarchy_from_batches(&spec.column, name, &hierarchy_batches)?;
                let text = cast(&values, &DataType::Utf8)?;
                let mut leaf_of_value = Vec::with_capacity(values.len());
                for value in text.as_string::<i32>().iter() {
                    let value = value.unwrap_or_default();
                    match hierarchy.leaf_code(value) {
                        Some(code) => leaf_of_value.push(code),
                        None => {
                            return exec_err!(
                                "anonymize(): value '{value}' of sensitive column '{}' is not in its hierarchy '{name}'",
                                spec.column
                            )
                        }
                    }
                }
                Some(SensitiveHierarchy {
                    name: name.clone(),
                    hierarchy,
                    leaf_of_value,
                })
            }
        };
        let rank = if has_natural_order(&spec.data_type) {
            Some((0..values.len() as u32).collect())
        } else {
            hierarchy.as_ref().map(|h| {
                let mut order: Vec<u32> = (0..values.len() as u32).collect();
                order.sort_by_key(|&v| h.leaf_of_value[v as usize]);
                let mut rank = vec![0u32; order.len()];
                for (position, &v) in order.iter().enumerate() {
                    rank[v as usize] = position as u32;
                }
                rank
            })
        };
        per_column.push(codes);
        columns.push(SensitiveColumn {
            name: spec.column.clone(),
            values,
            of_tuple: Vec::new(),
            rank,
            hierarchy,
        });
    }
    if let [only] = per_column.as_slice() {
        columns[0].of_tuple = (0..columns[0].cardinality() as u32).collect();
        let tuples = columns[0].cardinality();
        return Ok((only.clone(), SensitiveDomain::new(columns, tuples)));
    }
    // Several columns: number the distinct tuples in lexicographic order.
    let tuple_of_row = |row: usize| -> Vec<u32> { per_column.iter().map(|c| c[row]).collect() };
    let mut distinct: Vec<Vec<u32>> = (0..rows).map(tuple_of_row).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let index: HashMap<&[u32], u32> = distinct
        .iter()
        .enumerate()
        .map(|(i, t)| (t.as_slice(), i as u32))
        .collect();
    let mut codes = Vec::with_capacity(rows);
    for row in 0..rows {
        let tuple = tuple_of_row(row);
        match index.get(tuple.as_slice()) {
            Some(&code) => codes.push(code),
            None => return internal_err!("sensitive tuple missing from its own index"),
        }
    }
    for (j, column) in columns.iter_mut().enumerate() {
        column.of_tuple = distinct.iter().map(|t| t[j]).collect();
    }
    let tuples = distinct.len();
    Ok((codes, SensitiveDomain::new(columns, tuples)))
}

/// Informative values of the phase-1 result: a code per row, and the distinct values in
/// canonical (sorted) order so that codes never depend on the order rows arrived in.
fn informative_codes(
    batches: &[RecordBatch],
    column: usize,
    name: &str,
    source_name: &str,
) -> Result<(Vec<u32>, ArrayRef)> {
    // Batch by batch (no copy of the whole column): a provisional code per distinct value
    // in order of first appearance, and where that value first appeared.
    let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(column).as_ref()).collect();
    if arrays.iter().any(|a| a.null_count() > 0) {
        return exec_err!(
            "anonymize(): sensitive column '{}' of table '{}' contains NULL values; filter or impute them first",
            name,
            source_name
        );
    }
    let mut provisional: HashMap<String, u32> = HashMap::new();
    let mut first_rows: Vec<(usize, usize)> = Vec::new();
    let mut codes: Vec<u32> = Vec::with_capacity(arrays.iter().map(|a| a.len()).sum());
    for (b, array) in arrays.iter().enumerate() {
        let keys = cast(*array, &DataType::Utf8)?;
        for (row, key) in keys.as_string::<i32>().iter().enumerate() {
            let key = key.unwrap_or_default();
            let code = match provisional.get(key) {
                Some(&code) => code,
                None => {
                    let code = provisional.len() as u32;
                    provisional.insert(key.to_string(), code);
                    first_rows.push((b, row));
                    code
                }
            };
            codes.push(code);
        }
    }
    let distinct = interleave(&arrays, &first_rows)?;
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

/// Runs the whole pipeline for a request. Dropping the returned future stops the method at
/// its next progress report (see [`crate::progress`]).
pub async fn compute_release(
    request: &AnonymizeRequest,
    state: &SessionState,
    progress: Option<ProgressFn>,
    limit: ReleaseRowLimit,
) -> Result<ReleaseOutput> {
    let base = load_base(request, state).await?;
    let request = request.clone();
    let cancel = Cancel::new();
    let _stop_when_dropped = cancel.on_drop();
    let progress = Progress::new(request.method.name(), progress, cancel);
    let threads = state.config().target_partitions().max(1);
    let handle =
        tokio::task::spawn_blocking(move || run_method(&request, base, &progress, limit, threads));
    match handle.await {
        Ok(result) => result,
        Err(e) => internal_err!("anonymization task failed: {e}"),
    }
}

fn run_method(
    request: &AnonymizeRequest,
    mut base: BaseData,
    progress: &Progress,
    limit: ReleaseRowLimit,
    threads: usize,
) -> Result<ReleaseOutput> {
    if request.method.wants_public_value_domain() {
        base.sensitive.add_hierarchy_leaves()?;
    }
    let refs: Vec<&Hierarchy> = base.hierarchies.iter().collect();
    let heights: Vec<usize> = refs.iter().map(|h| h.height()).collect();
    let columns: Vec<&str> = request.qi.iter().map(|q| q.column.as_str()).collect();
    // Planning checked the bounds against the hierarchy tables' widths; the loaded
    // hierarchies' heights are exact (a table may carry an empty last level).
    let (min, max) = request
        .method
        .level_bounds()
        .resolve(&columns, &heights)
        .map_err(|e| {
            datafusion::error::DataFusionError::Execution(
                e.strip_backtrace()
                    .trim_start_matches("Error during planning: ")
                    .to_string(),
            )
        })?;
    let lattice = Lattice::bounded(heights, min, max, request.method.max_nodes())?;
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
    let input = MethodInput {
        histogram: &base.histogram,
        hierarchies: &refs,
        value_domain: base.sensitive.tuples(),
        sensitive: &base.sensitive,
        lattice: &lattice,
        progress,
        threads,
    };
    if !request.public {
        let size = request.method.release_size(&input)?;
        check_release_size(request.method.name(), &size, base.histogram.total(), limit)?;
    }
    let output = request.method.run(&input, &mut rng)?;
    let schema = request.release_schema();
    let information_loss = information_loss(
        &base.histogram,
        &refs,
        base.sensitive.tuples(),
        &output.release,
        output.catalog.as_ref(),
    )?;
    let metadata = common_metadata(request, &output, output.release.row_count());
    let values = base.sensitive.tuple_arrays()?;
    let rows = ReleasedRows::new(Arc::new(output.release), &refs, &values, &schema)?;
    let catalog = match (output.catalog, request.catalog_schema(), values.first()) {
        (Some(catalog), Some(schema), Some(values)) => Some(CatalogRows::new(
            rows.clone(),
            Arc::new(catalog),
            values.clone(),
            &schema,
        )?),
        _ => None,
    };
    Ok(ReleaseOutput {
        rows,
        metadata,
        catalog,
        interval_means: output.interval_means,
        diagnostics: Arc::new(vec![output.diagnostics]),
        information_loss,
        warnings,
    })
}

/// The `guarantee` of every seeded release, whatever the method.
pub const SEEDED_GUARANTEE: &str = "none: the caller fixed the seed, so every random draw can be repeated and the release has no privacy guarantee, although its parameters were charged to the budget (seeds are for the data owner's tests and reproduction only)";

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
                .sensitive
                .iter()
                .map(|s| s.column.clone())
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("dropped_columns".into(), request.dropped.join(", ")),
    ];
    out.extend(output.metadata.iter().map(|(key, value)| {
        if key == "guarantee" && request.seed.is_some() {
            (
                key.clone(),
                format!("{SEEDED_GUARANTEE}. Without the seed: {value}"),
            )
        } else {
            (key.clone(), value.clone())
        }
    }));
    let bounds = request.method.level_bounds();
    if !bounds.is_unbounded() {
        out.extend([
            ("min_levels".into(), LevelBounds::describe(&bounds.min)),
            ("max_levels".into(), LevelBounds::describe(&bounds.max)),
        ]);
    }
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
