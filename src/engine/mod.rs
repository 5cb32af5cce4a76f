//! The release pipeline behind `anonymize(...)`: phase 1 (one aggregate pass over the
//! source), phase 2 (the method on histograms) and phase 3 (expansion into rows).

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::{internal_err, DataFusionError, Result};
use datafusion::execution::memory_pool::MemoryPool;
use datafusion::execution::SessionState;

use crate::budget::Cost;
use crate::date_shift::DateShift;
use crate::hierarchy::Hierarchy;
use crate::lattice::{node_label, Lattice, LevelBounds};
use crate::mechanism::rng::{rng_from_seed, try_rng_from_os, AnonRng};
use crate::method::{
    is_differentially_private, per_unit_cost, Input, Method, MethodInput, MethodOutput, Persons,
};
use crate::metric::information_loss::{information_loss, InformationLoss};
use crate::privacy::warnings::delta_size_warning;
use crate::privacy_unit::PrivacyUnit;
use crate::progress::{Cancel, Progress, ProgressFn};
use crate::pseudonym::{Identifiers, PseudonymKey};
use crate::release::catalog::{CatalogRows, CounterfeitCatalog};
use crate::release::IntervalMeans;
use crate::release::{check_release_size, OwnRows, ReleaseRowLimit, ReleaseSize, ReleasedRows};
use crate::sensitive::SensitiveSpec;

mod base;
mod numeric;

pub(crate) use base::load_hierarchy;
pub use base::{load_base, BaseData};

/// A quasi-identifier and its hierarchy table.
#[derive(Debug, Clone)]
pub struct QiSpec {
    /// Column name in the source.
    pub column: String,
    /// Name of the hierarchy table, as given (empty without one).
    pub hierarchy_name: String,
    /// The hierarchy table; `None` for a method that releases numbers.
    pub hierarchy: Option<Arc<dyn TableProvider>>,
}

/// A fully validated anonymization request.
#[derive(Debug, Clone)]
pub struct AnonymizeRequest {
    /// Canonical text of the validated arguments, every default filled in.
    pub canonical_args: String,
    /// Source table name, as given.
    pub source_name: String,
    /// The source's table in the ledger: its name resolved when the call was planned and
    /// lower-cased (`datafusion.public.nps`; see [`crate::budget::ledger::table_key`]).
    pub source_table: String,
    /// The table the release reads: the source, or a view over it with shifted dates and
    /// timestamp quasi-identifiers read as days.
    pub source: Arc<dyn TableProvider>,
    /// The identity of the source table the call named (`source` may be a view over it,
    /// made anew for each call).
    pub source_identity: usize,
    /// The dates shifted per person before the method runs, if any.
    pub date_shift: Option<DateShift>,
    /// Quasi-identifiers in release order.
    pub qi: Vec<QiSpec>,
    /// The sensitive (informative) columns, kept in the release; empty when none.
    pub sensitive: Vec<SensitiveSpec>,
    /// Source columns that are not released.
    pub dropped: Vec<String>,
    /// The configured method (a differentially private one per person runs with the
    /// per-row budget, see [`crate::privacy_unit`]).
    pub method: Arc<dyn Method>,
    /// Who the guarantee protects: rows, or persons.
    pub unit: PrivacyUnit,
    /// The direct identifiers, dropped or released as pseudonyms (their columns are then
    /// the last of `sensitive`).
    pub identifiers: Identifiers,
    /// The registration's key of pseudonyms (used only with pseudonyms).
    pub pseudonym_key: Option<PseudonymKey>,
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
    /// Cache key: canonical arguments plus the identity of every table involved, of the
    /// key of pseudonyms, and who asked (an owner's and a public user's draws of the same
    /// arguments differ: a public one leaves out the records it cannot use, an owner's
    /// fails naming them).
    pub fn cache_key(&self) -> String {
        let mut key = format!(
            "{}|{}|src@{:p}",
            if self.public { "public" } else { "owner" },
            self.canonical_args,
            self.source_identity as *const ()
        );
        if let Some(pseudonyms) = &self.pseudonym_key {
            key.push_str(&format!("|pseudonyms@{:p}", pseudonyms.identity()));
        }
        for q in &self.qi {
            if let Some(h) = &q.hierarchy {
                key.push_str(&format!("|{}@{:p}", q.column, Arc::as_ptr(h) as *const ()));
            }
        }
        for s in &self.sensitive {
            if let Some((_, h)) = &s.hierarchy {
                key.push_str(&format!("|{}@{:p}", s.column, Arc::as_ptr(h) as *const ()));
            }
        }
        key
    }

    /// The ledger account every release of this request is charged to: the source's table
    /// in the privacy unit.
    pub fn account(&self) -> String {
        self.unit.account(&self.source_table)
    }

    /// What the release costs in its privacy unit: the method's budget, or per person the
    /// group-privacy cost of the method's per-row budget (METHODS.md §9.2).
    pub fn cost(&self) -> Cost {
        per_unit_cost(&*self.method, &self.unit)
    }

    /// The released sensitive columns whose values are the source's (every one but the
    /// pseudonyms of identifiers), with their types: what the report and the utility
    /// figures compare with the source.
    pub fn released_values(&self) -> Vec<(String, DataType)> {
        self.sensitive
            .iter()
            .filter(|s| !s.pseudonym)
            .map(|s| (s.column.clone(), s.data_type.clone()))
            .collect()
    }

    /// Schema of the released rows: quasi-identifiers as text (as numbers when
    /// released as numbers), then the sensitive columns with their source types.
    pub fn release_schema(&self) -> SchemaRef {
        let qi_type = match self.method.spec().input {
            Input::Numeric => DataType::Float64,
            Input::Lattice => DataType::Utf8,
        };
        let mut fields: Vec<Field> = self
            .qi
            .iter()
            .map(|q| Field::new(&q.column, qi_type.clone(), false))
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
    /// Owner-only: the released row of every source record, for the methods that keep it
    /// (record linkage reads it); never published.
    pub own_rows: Option<Arc<OwnRows>>,
}

/// Runs the whole pipeline for a request. Its random draws come from the request's seed if
/// it has one (owner's reproductions, not private), else from `draw` (a 256-bit seed from
/// the operating system that the caller keeps, to draw the same release again), else from
/// the operating system. Dropping the returned future stops the method at its next
/// progress report (see [`crate::progress`]).
pub async fn compute_release(
    request: &AnonymizeRequest,
    state: &SessionState,
    progress: Option<ProgressFn>,
    limit: ReleaseRowLimit,
    draw: Option<[u8; 32]>,
) -> Result<ReleaseOutput> {
    if request.method.spec().input == Input::Numeric {
        return numeric::release(request, state, progress, limit).await;
    }
    let mut rng = match (request.seed, draw) {
        (Some(seed), _) => rng_from_seed(seed),
        (None, Some(draw)) => <AnonRng as rand::SeedableRng>::from_seed(draw),
        (None, None) => try_rng_from_os().map_err(|e| {
            DataFusionError::External(
                format!("no secure random generator: the operating system gave no entropy ({e})")
                    .into(),
            )
        })?,
    };
    let base = load_base(request, state, &mut rng).await?;
    let request = request.clone();
    let cancel = Cancel::new();
    let _stop_when_dropped = cancel.on_drop();
    let progress = Progress::new(request.method.name(), progress, cancel);
    let threads = state.config().target_partitions().max(1);
    let memory = state.runtime_env().memory_pool.clone();
    let handle = tokio::task::spawn_blocking(move || {
        run_method(&request, base, &progress, limit, threads, memory, rng)
    });
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
    memory: Arc<dyn MemoryPool>,
    mut rng: AnonRng,
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
        .map_err(|e| DataFusionError::Execution(e.to_string()))?;
    let lattice = Lattice::bounded(heights, min, max, request.method.max_nodes())?;
    let mut warnings: Vec<(String, String)> = Vec::new();
    let delta = request.method.budget().delta;
    if delta > 0.0 {
        if let Some(w) = delta_size_warning(delta, base.histogram.total()) {
            warnings.push(("delta".to_string(), w));
        }
    }
    let input = MethodInput {
        histogram: &base.histogram,
        hierarchies: &refs,
        value_domain: base.sensitive.tuples(),
        sensitive: &base.sensitive,
        lattice: &lattice,
        progress,
        threads,
        memory,
        persons: base.persons.as_ref(),
        stop_at: limit.stop_at,
    };
    if !request.public {
        let size = request.method.release_size(&input)?;
        check_release_size(
            request.method.name(),
            &size,
            base.histogram.total(),
            limit,
            &size_advice(&*request.method, &size),
        )?;
    }
    let mut output = request.method.run(&input, &mut rng)?;
    // A method's `warning` is about the data (SafePub's: most of the sample was
    // suppressed), outside its guarantee: the owner reads it in `anonymize_warnings`, it is
    // never public metadata.
    let method_warnings = output
        .metadata
        .iter()
        .filter(|(key, _)| key == "warning")
        .map(|(_, text)| (request.method.name().to_string(), text.clone()))
        .collect::<Vec<_>>();
    output.metadata.retain(|(key, _)| key != "warning");
    warnings.extend(method_warnings);
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
        own_rows: output.own_rows.map(Arc::new),
    })
}

/// What shrinks a release that is too large, for `method` (the end of
/// `check_release_size`'s refusal): only `max_release_rows` when
/// nothing adds rows beyond the input's (kanon, safepub), a larger epsilon when noise
/// rows add them (ipa, dp_histogram), a smaller `k` when counterfeits fill classes up to
/// `k` (upa). Only the methods with an epsilon are told about it.
fn size_advice(method: &dyn Method, size: &ReleaseSize) -> String {
    if size.cause.is_empty() {
        return format!(
            "Method '{}' never releases more rows than its input: allow the size",
            method.name()
        );
    }
    let takes = |param: &str| method.spec().params.iter().any(|p| p.name == param);
    if takes("epsilon") && method.budget().epsilon > 0.0 {
        "Use a larger epsilon, or allow the size".to_string()
    } else if takes("k") {
        "Use a smaller k (fewer counterfeit rows), or allow the size".to_string()
    } else {
        "Allow the size".to_string()
    }
}

/// The `guarantee` of every seeded release, whatever the method.
pub const SEEDED_GUARANTEE: &str = "none: the caller fixed the seed, so every random draw can be repeated and the release has no privacy guarantee; it is counted in the ledger but charges no epsilon or delta (seeds are for the data owner's tests and reproduction only)";

/// The method's `guarantee` in the release's privacy unit (METHODS.md §9): per row it is the
/// method's own text (the `privacy_unit` entry says the unit).
fn per_unit_guarantee(request: &AnonymizeRequest, dp: bool, method_text: &str) -> String {
    match &request.unit {
        PrivacyUnit::Row => method_text.to_string(),
        PrivacyUnit::Person { column, max_rows } if dp => {
            let cost = request.cost();
            format!(
                "Per person (column '{column}', at most {max_rows} row(s) each, chosen at random with the secure generator before anything else; a person's other rows are left out): ({}, {})-differential privacy for every person, by group privacy over the per-row guarantee that follows, which holds with every epsilon and delta divided for {max_rows} row(s). Per row: {method_text}",
                cost.epsilon, cost.delta
            )
        }
        // A syntactic method says what its classes hold per person.
        PrivacyUnit::Person { column, .. } => match request.method.spec().persons {
            Persons::Counted(text) => {
                format!("{} {method_text}", text.replace("{column}", column))
            }
            // Refused when the request was made; never reached.
            Persons::BoundRows | Persons::Refused(_) => method_text.to_string(),
        },
    }
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
    let joined = |items: Vec<String>| items.join(", ");
    let mut out: Vec<(String, String)> = vec![
        ("method".into(), request.method.name().into()),
        ("source".into(), request.source_name.clone()),
        (
            "quasi_identifiers".into(),
            joined(request.qi.iter().map(|q| q.column.clone()).collect()),
        ),
    ];
    // A method that releases numbers has no hierarchies or lattice.
    let lattice = request.method.spec().input == Input::Lattice;
    if lattice {
        out.push((
            "hierarchies".into(),
            joined(
                request
                    .qi
                    .iter()
                    .map(|q| format!("{}:{}", q.column, q.hierarchy_name))
                    .collect(),
            ),
        ));
    }
    out.extend([
        (
            "informative".into(),
            joined(
                request
                    .sensitive
                    .iter()
                    .filter(|s| !s.pseudonym)
                    .map(|s| s.column.clone())
                    .collect(),
            ),
        ),
        ("dropped_columns".into(), request.dropped.join(", ")),
    ]);
    if !request.identifiers.columns.is_empty() {
        out.push(("identifiers".into(), request.identifiers.describe()));
    }
    if let Some(shift) = &request.date_shift {
        out.push(("date_shift".into(), shift.describe()));
    }
    let differentially_private = is_differentially_private(&*request.method);
    out.push((
        "privacy_unit".into(),
        request.unit.describe(differentially_private),
    ));
    if let PrivacyUnit::Person { max_rows, .. } = &request.unit {
        if differentially_private {
            let cost = request.cost();
            out.extend([
                ("max_rows_per_person".into(), max_rows.to_string()),
                ("epsilon_per_person".into(), cost.epsilon.to_string()),
                ("delta_per_person".into(), cost.delta.to_string()),
            ]);
        }
    }
    out.extend(output.metadata.iter().map(|(key, value)| {
        if key != "guarantee" {
            return (key.clone(), value.clone());
        }
        let mut value = per_unit_guarantee(request, differentially_private, value);
        if let Some(shift) = &request.date_shift {
            value.push_str(&format!(
                " The dates of {} were shifted per person by up to {} days before the method ran: masking that hides real dates, not part of this guarantee.",
                shift.columns.join(", "),
                shift.max_days
            ));
        }
        if request.seed.is_some() {
            (
                key.clone(),
                format!("{SEEDED_GUARANTEE}. Without the seed: {value}"),
            )
        } else {
            (key.clone(), value)
        }
    }));
    let bounds = request.method.level_bounds();
    if !bounds.is_unbounded() {
        out.extend([
            ("min_levels".into(), LevelBounds::describe(&bounds.min)),
            ("max_levels".into(), LevelBounds::describe(&bounds.max)),
        ]);
    }
    if lattice {
        out.extend([
            ("levels".into(), levels),
            ("node".into(), node_label(&output.node)),
        ]);
    }
    let row_order = if lattice {
        "canonical: by class (hierarchy order, suppressed class last), then informative value"
    } else {
        "canonical: by released values (ascending), then informative value"
    };
    out.extend([
        ("released_rows".into(), released_rows.to_string()),
        ("row_order".into(), row_order.into()),
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
