//! Optimal full-domain k-anonymity with record suppression — the k-anonymization baseline
//! the IPA paper compares against (Incognito/Flash-style full-domain generalization).
//!
//! Every node of the lattice is evaluated. At a node, each equivalence class with fewer than
//! `k` records is suppressed: its records keep their informative value and get `*` for every
//! quasi-identifier, forming one suppressed class `*` (as ARX does). A node is *feasible* when
//! at most `floor(suppression_limit · N)` of the `N` records are suppressed. Among feasible
//! nodes the release minimizes the loss
//!
//! ```text
//! NCP = (1 / (q · N)) · Σ_records Σ_A NCP(r[A]),   NCP(v) = |v| / |L_A|  (0 for a leaf),
//! ```
//!
//! the IPA paper's Eq. 5–6 with suppressed values scoring 1 — the NCP term of the same
//! information loss the evaluation reports (a k-anonymous release has EMD = Rate = 0). The
//! loss is compared exactly, in integers over the least common multiple of the hierarchies'
//! leaf counts; ties go to the node with the fewest generalization levels, then to the
//! earliest node in lattice order. The method is deterministic and draws no randomness.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{exec_err, internal_err, plan_err, Result};

use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::lattice::{node_label, Lattice, Node};
use crate::privacy::models::{ClassModels, ModelScratch, ModelSpec};
use crate::privacy::risk::release_risk;
use crate::release::{ReleasedHistogram, SUPPRESSED};
use crate::sensitive::SensitiveDomain;

mod params;

pub use params::{Kanon, METHOD};

/// Default `k`.
pub const DEFAULT_K: u64 = 10;

/// Default suppression limit (fraction of records).
pub const DEFAULT_SUPPRESSION_LIMIT: f64 = 0.05;

/// Parameters of a k-anonymization.
#[derive(Debug, Clone, PartialEq)]
pub struct KanonParams {
    /// Smallest size of a released (non-suppressed) class.
    pub k: u64,
    /// Largest fraction of records that may be suppressed, in `[0, 1]`.
    pub suppression_limit: f64,
    /// ℓ-diversity and t-closeness every released class must meet besides `k`.
    pub models: ModelSpec,
}

impl Default for KanonParams {
    fn default() -> Self {
        Self {
            k: DEFAULT_K,
            suppression_limit: DEFAULT_SUPPRESSION_LIMIT,
            models: ModelSpec::default(),
        }
    }
}

impl KanonParams {
    /// Checks `k >= 1` and `0 <= suppression_limit <= 1`.
    pub fn validate(&self) -> Result<()> {
        if self.k == 0 {
            return plan_err!("k must be at least 1, got 0");
        }
        if !(self.suppression_limit.is_finite() && (0.0..=1.0).contains(&self.suppression_limit)) {
            return plan_err!(
                "suppression_limit must be a fraction between 0 and 1, got {}",
                self.suppression_limit
            );
        }
        self.models.validate()
    }

    /// Largest number of records that may be suppressed out of `total`.
    pub fn max_suppressed(&self, total: u64) -> u64 {
        (self.suppression_limit * total as f64).floor() as u64
    }
}

/// Evaluation of one lattice node (owner-only diagnostics).
#[derive(Debug, Clone, PartialEq)]
pub struct KanonNodeOutcome {
    /// The lattice node.
    pub node: Node,
    /// Whether the node satisfies k within the suppression limit.
    pub feasible: bool,
    /// Number of equivalence classes before suppression.
    pub classes: usize,
    /// Number of classes smaller than k.
    pub suppressed_classes: usize,
    /// Number of records in those classes.
    pub suppressed_records: u64,
    /// NCP of the node's release.
    pub ncp: f64,
    /// The exact loss: `ncp · q · N · D` with `D` the lcm of the leaf counts.
    pub loss: u128,
}

/// The result of a k-anonymization.
#[derive(Debug, Clone)]
pub struct KanonResult {
    /// Outcome of every node, in lattice order.
    pub outcomes: Vec<KanonNodeOutcome>,
    /// Index of the chosen node.
    pub chosen: usize,
    /// The released histogram at the chosen node.
    pub release: ReleasedHistogram,
}

/// Integer penalties per code and level: `penalty[a][level][code]`, each `NCP · D`.
struct Penalties {
    per_code: Vec<Vec<Vec<u128>>>,
    /// Penalty of a suppressed value (`D`).
    suppressed: u128,
}

impl Penalties {
    fn new(hierarchies: &[&Hierarchy]) -> Result<Self> {
        let mut d: u128 = 1;
        for h in hierarchies {
            let l = h.leaf_count() as u128;
            let Some(next) = (d / num_integer::gcd(d, l)).checked_mul(l) else {
                return plan_err!(
                    "kanon: the hierarchies' leaf counts are too large for exact loss comparison"
                );
            };
            d = next;
        }
        let per_code = hierarchies
            .iter()
            .map(|h| {
                let unit = d / h.leaf_count() as u128;
                (0..=h.height())
                    .map(|level| {
                        h.level(level)
                            .leaf_counts()
                            .iter()
                            .map(|&c| if c <= 1 { 0 } else { c as u128 * unit })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        Ok(Self {
            per_code,
            suppressed: d,
        })
    }
}

/// The class-level histogram: one pair per class holding the class size.
fn class_sizes(base: &GroupedHistogram) -> GroupedHistogram {
    let classes = base.class_count();
    GroupedHistogram {
        levels: base.levels.clone(),
        class_codes: base.class_codes.clone(),
        class_offsets: (0..=classes).collect(),
        pair_values: vec![0; classes],
        pair_counts: (0..classes).map(|c| base.class_size(c)).collect(),
    }
}

/// Evaluates one node from its class sizes.
fn evaluate(
    sizes: &GroupedHistogram,
    penalties: &Penalties,
    params: &KanonParams,
    models: &ClassModels,
    scratch: &mut ModelScratch,
    total: u64,
) -> Result<KanonNodeOutcome> {
    let attrs = sizes.class_codes.len();
    let mut loss: u128 = 0;
    let mut suppressed_classes = 0;
    let mut suppressed_records = 0u64;
    for c in 0..sizes.class_count() {
        let n = sizes.class_size(c);
        if !class_released(sizes, c, n, params.k, models, scratch) {
            suppressed_classes += 1;
            suppressed_records += n;
            continue;
        }
        let mut per_record: u128 = 0;
        for a in 0..attrs {
            per_record += penalties.per_code[a][sizes.levels[a]][sizes.class_codes[a][c] as usize];
        }
        loss += per_record * n as u128;
    }
    loss += suppressed_records as u128 * attrs as u128 * penalties.suppressed;
    let denominator = (attrs.max(1) as u128 * total as u128 * penalties.suppressed) as f64;
    Ok(KanonNodeOutcome {
        node: sizes.levels.clone(),
        feasible: suppressed_records <= params.max_suppressed(total),
        classes: sizes.class_count(),
        suppressed_classes,
        suppressed_records,
        ncp: if denominator > 0.0 {
            loss as f64 / denominator
        } else {
            0.0
        },
        loss,
    })
}

/// Whether class `c` of `hist` (with `n` records) is released: at least `k` records and
/// every privacy model met (a class failing a model is suppressed like a small one).
fn class_released(
    hist: &GroupedHistogram,
    c: usize,
    n: u64,
    k: u64,
    models: &ClassModels,
    scratch: &mut ModelScratch,
) -> bool {
    if n < k {
        return false;
    }
    if models.is_empty() {
        return true;
    }
    let range = hist.class_offsets[c]..hist.class_offsets[c + 1];
    models.accepts(
        &hist.pair_values[range.clone()],
        &hist.pair_counts[range],
        scratch,
    )
}

/// Runs optimal k-anonymization over the whole lattice; with `models`, a class must also
/// meet every privacy model to be released.
pub fn run_kanon(
    base: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    lattice: &Lattice,
    value_domain: usize,
    params: &KanonParams,
    models: &ClassModels,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<KanonResult> {
    params.validate()?;
    let total = base.total();
    if total == 0 {
        return exec_err!("cannot anonymize an empty table");
    }
    let penalties = Penalties::new(hierarchies)?;
    // Without models only class sizes matter; with them, the values too.
    let (sizes, domain) = if models.is_empty() {
        (class_sizes(base), 1)
    } else {
        (base.clone(), value_domain)
    };
    let mut scratch = ModelScratch::default();
    let nodes = lattice.nodes();
    let mut outcomes = Vec::with_capacity(nodes.len());
    for (i, node) in nodes.iter().enumerate() {
        let rolled = sizes.roll_up(hierarchies, node, domain)?;
        outcomes.push(evaluate(
            &rolled,
            &penalties,
            params,
            models,
            &mut scratch,
            total,
        )?);
        progress(i + 1, nodes.len());
    }
    let chosen = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| o.feasible)
        .min_by_key(|(i, o)| (o.loss, o.node.iter().sum::<usize>(), *i))
        .map(|(i, _)| i);
    let Some(chosen) = chosen else {
        let models = params.models.describe(&[]);
        let (with, lower) = if models.is_empty() {
            (String::new(), "lower k")
        } else {
            (
                format!(" and {}", models.join(" and ").replace(" on ", "")),
                "lower k, l or raise t",
            )
        };
        return exec_err!(
            "kanon: no generalization satisfies k = {}{with} with suppression_limit = {} ({} of {total} records may be suppressed); {lower} or raise suppression_limit",
            params.k,
            params.suppression_limit,
            params.max_suppressed(total)
        );
    };
    let release = release_at(
        base,
        hierarchies,
        &nodes[chosen],
        value_domain,
        params.k,
        models,
    )?;
    if release.row_count() != total {
        return internal_err!(
            "kanon release has {} rows, expected {total}",
            release.row_count()
        );
    }
    Ok(KanonResult {
        outcomes,
        chosen,
        release,
    })
}

/// The release at `node`: classes of at least `k` records as they are, the others merged
/// into the suppressed class `*`.
fn release_at(
    base: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    node: &[usize],
    value_domain: usize,
    k: u64,
    models: &ClassModels,
) -> Result<ReleasedHistogram> {
    let mut scratch = ModelScratch::default();
    let hist = base.roll_up(hierarchies, node, value_domain)?;
    let attrs = hierarchies.len();
    let mut release = ReleasedHistogram::new(node.to_vec(), attrs);
    let mut suppressed = vec![0u64; value_domain];
    let mut any_suppressed = false;
    for c in 0..hist.class_count() {
        let range = hist.class_offsets[c]..hist.class_offsets[c + 1];
        if !class_released(&hist, c, hist.class_size(c), k, models, &mut scratch) {
            any_suppressed = true;
            for p in range {
                suppressed[hist.pair_values[p] as usize] += hist.pair_counts[p];
            }
            continue;
        }
        let pairs: Vec<(u32, u64)> = range
            .map(|p| (hist.pair_values[p], hist.pair_counts[p]))
            .collect();
        let codes: Vec<u32> = (0..attrs).map(|a| hist.class_codes[a][c]).collect();
        release.push_class(&codes, &pairs, &[]);
    }
    if any_suppressed {
        let pairs: Vec<(u32, u64)> = suppressed
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(v, n)| (v as u32, *n))
            .collect();
        release.push_class(&vec![SUPPRESSED; attrs], &pairs, &[]);
    }
    Ok(release)
}

/// The method's public metadata entries, with the risk figures of `release`.
pub fn kanon_metadata(
    params: &KanonParams,
    lattice: &Lattice,
    sensitive: &SensitiveDomain,
    release: &ReleasedHistogram,
) -> Vec<(String, String)> {
    let columns: Vec<String> = sensitive.columns.iter().map(|c| c.name.clone()).collect();
    let described = params.models.describe(&columns);
    let disclosure = if described.is_empty() {
        "k-anonymity does not prevent attribute disclosure (a class whose records share one informative \
         value reveals it)"
            .to_string()
    } else {
        format!(
            "every released class also satisfies {}, which limits attribute disclosure as far as these \
             models go (they compare with the distribution of the whole input table)",
            described.join(" and ")
        )
    };
    let guarantee = format!(
        "k-anonymity with k = {k}: every released combination of quasi-identifier values other than the \
         suppressed class '*' is shared by at least {k} records; the '*' class holds the suppressed records \
         (at most a fraction {limit} of them) and may be smaller than k. No differential privacy: the \
         generalization is chosen deterministically from the data, every real record is published with its \
         true informative value, and {disclosure}.",
        k = params.k,
        limit = params.suppression_limit
    );
    let mut models = vec![format!("k-anonymity (k = {})", params.k)];
    models.extend(described);
    let mut out: Vec<(String, String)> = vec![
        ("k".into(), params.k.to_string()),
        ("suppression_limit".into(), params.suppression_limit.to_string()),
        ("privacy_models".into(), models.join("; ")),
        (
            "loss".into(),
            "NCP (IPA paper Eq. 5-6, suppressed values score 1), minimized exactly over all feasible nodes; ties: fewest generalization levels, then lattice order".into(),
        ),
        ("lattice_nodes".into(), lattice.len().to_string()),
        ("guarantee".into(), guarantee),
    ];
    out.extend(release_risk(release));
    out
}

/// Schema of the method's diagnostics: one row per lattice node.
pub fn kanon_diagnostics_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("node", DataType::Utf8, false),
        Field::new("chosen", DataType::Boolean, false),
        Field::new("feasible", DataType::Boolean, false),
        Field::new("ncp", DataType::Float64, false),
        Field::new("classes", DataType::UInt64, false),
        Field::new("suppressed_classes", DataType::UInt64, false),
        Field::new("suppressed_records", DataType::UInt64, false),
    ]))
}

/// The diagnostics batch.
pub fn kanon_diagnostics_batch(
    outcomes: &[KanonNodeOutcome],
    chosen: usize,
) -> Result<RecordBatch> {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            outcomes.iter().map(|o| node_label(&o.node)),
        )),
        Arc::new(BooleanArray::from_iter(
            (0..outcomes.len()).map(|i| Some(i == chosen)),
        )),
        Arc::new(BooleanArray::from_iter(
            outcomes.iter().map(|o| Some(o.feasible)),
        )),
        Arc::new(Float64Array::from_iter_values(
            outcomes.iter().map(|o| o.ncp),
        )),
        Arc::new(UInt64Array::from_iter_values(
            outcomes.iter().map(|o| o.classes as u64),
        )),
        Arc::new(UInt64Array::from_iter_values(
            outcomes.iter().map(|o| o.suppressed_classes as u64),
        )),
        Arc::new(UInt64Array::from_iter_values(
            outcomes.iter().map(|o| o.suppressed_records),
        )),
    ];
    Ok(RecordBatch::try_new(kanon_diagnostics_schema(), columns)?)
}

#[cfg(test)]
mod tests;
