//! UPA, utility-preserving anonymization (Lee, Kim, Kim & Chung 2017; docs/METHODS.md §5):
//! k-anonymity under an h-ceiling on every record's generalization degree, counterfeit
//! records to fill classes up to k, and a catalog of the counterfeits from which a recipient
//! rebuilds a truthful table (`upa_truthful`).
//!
//! The search (the paper's Algorithm 1) walks the full-domain lattice by level sum. A node
//! whose largest record degree exceeds `h` fails the ceiling, and so does every
//! generalization of it (monotonicity), which is pruned without being rolled up. At every
//! other node each class under `k` gets `k − |E|` counterfeits ([`counterfeits`]), the
//! classes are grouped into a catalog satisfying Lemma 1 ([`grouping`]) — a node without
//! such a catalog is skipped — and the node's RCE is computed. The node with the lowest RCE
//! is released (ties: fewer counterfeits, fewer generalization levels, lattice order). A node
//! whose RCE is bound to exceed the lowest of the levels already searched (every real record
//! of a class of `V` cells costs at least `1 − 1/V`, [`node::rce_lower_bound`]) cannot be released
//! and gets no counterfeits. Without `h` every node is searched and `h` is the chosen node's
//! largest degree.
//!
//! Randomness: one ChaCha20 child stream per lattice node, drawn in lattice order; the
//! chosen node's stream is replayed for the release, which is therefore exactly the
//! evaluated candidate.

use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::common::{exec_err, internal_err, Result};

use crate::budget::Cost;
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::lattice::LevelBounds;
use crate::lattice::{node_label, Node};
use crate::mechanism::rng::{derive_child, AnonRng};
use crate::method::sweep::Sweep;
use crate::method::MethodInput;
use crate::method::{Guarantee, Input, Persons};
use crate::method::{Method, MethodOutput, MethodSpec};
use crate::metric::degree::Degrees;
use crate::privacy::models::ClassModels;
use crate::privacy_unit::PersonClasses;
use crate::release::catalog::CounterfeitCatalog;
use crate::release::ReleaseSize;
use crate::release::ReleasedHistogram;
use crate::sensitive::SensitiveSpec;
use datafusion::arrow::datatypes::SchemaRef;

mod counterfeits;
mod grouping;
mod metadata;
mod node;
mod params;

use node::evaluate_node;

pub use params::UpaParams;
pub mod truthful;

pub use metadata::{upa_diagnostics_batch, upa_diagnostics_schema, upa_metadata};

/// Default `k`.
pub const DEFAULT_K: u64 = 10;

/// How a counterfeit's sensitive value is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterfeitSa {
    /// Uniform over the sensitive domain (the paper's "randomly selected within the domain").
    Uniform,
    /// Uniform over the values real records outside the class can still conceal.
    Constrained,
}

impl CounterfeitSa {
    /// The SQL word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Uniform => "uniform",
            Self::Constrained => "constrained",
        }
    }
}

/// What happened at one lattice node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeStatus {
    /// Within the ceiling, counterfeits inserted and concealed by a catalog.
    Feasible,
    /// Some record's degree exceeds `h`.
    OverCeiling,
    /// A generalization of a node over the ceiling: not evaluated.
    Pruned,
    /// No catalog satisfies Lemma 1 for the drawn counterfeits.
    NotConcealable,
    /// More than [`MAX_COUNTERFEITS_PER_NODE`] counterfeits would be needed.
    TooManyCounterfeits,
    /// Not the node requested by `levels`: not evaluated.
    NotRequested,
    /// Some class's real records fail ℓ-diversity or t-closeness.
    FailsModels,
    /// Within the ceiling, but its RCE is bound to exceed that of a feasible node of a
    /// lower level sum: not given counterfeits.
    AboveBest,
}

impl NodeStatus {
    /// Label in the diagnostics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Feasible => "feasible",
            Self::OverCeiling => "over_h",
            Self::Pruned => "pruned",
            Self::NotConcealable => "not_concealable",
            Self::TooManyCounterfeits => "too_many_counterfeits",
            Self::NotRequested => "not_requested",
            Self::FailsModels => "fails_l_or_t",
            Self::AboveBest => "rce_above_best",
        }
    }
}

/// Evaluation of one lattice node (owner-only diagnostics).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeOutcome {
    /// The lattice node.
    pub node: Node,
    /// What happened.
    pub status: NodeStatus,
    /// Largest record degree `max D(r)` (not computed for pruned nodes).
    pub max_degree: Option<f64>,
    /// Number of classes (0 when not rolled up).
    pub classes: usize,
    /// Counterfeit rows inserted.
    pub counterfeits: u64,
    /// Catalog groups.
    pub groups: usize,
    /// LM of the node's release.
    pub lm: Option<f64>,
    /// Exact RCE of the node's release (what the search minimizes).
    pub rce: Option<f64>,
}

/// The result of a UPA run.
#[derive(Debug, Clone)]
pub struct UpaResult {
    /// Outcome of every node, in lattice order.
    pub outcomes: Vec<NodeOutcome>,
    /// Index of the chosen node.
    pub chosen: usize,
    /// The released histogram (real records plus counterfeits).
    pub release: ReleasedHistogram,
    /// The catalog of the release's counterfeits.
    pub catalog: CounterfeitCatalog,
    /// The ceiling: as given, or the chosen node's largest degree.
    pub h: f64,
    /// Per person: the persons of every released class, counterfeits counted as one each.
    pub class_persons: Option<Vec<u64>>,
}

/// What UPA says per person: it fills small classes with counterfeit rows instead of
/// suppressing them, each counterfeit standing for one more person.
const PERSONS_WITH_COUNTERFEITS: &str = "Per person (column '{column}'): every released class holds at least k persons, not only k rows: a class of p < k distinct persons gets k - p counterfeit rows, each standing for one more person; the prosecutor risks count persons.";

/// UPA in the method registry.
pub const METHOD: MethodSpec = MethodSpec {
    name: "upa",
    about: "UPA (Lee et al. 2017): k-anonymity under an h-ceiling on every record's generalization degree, counterfeit records and a published catalog of them (anonymize_catalog, upa_truthful); syntactic, no differential privacy",
    params: params::PARAMS,
    refuses: params::REFUSES,
    guarantee: Guarantee::Syntactic,
    methods_section: "§5.7",
    input: Input::Lattice,
    persons: Persons::Counted(PERSONS_WITH_COUNTERFEITS),
    pseudonyms: false,
    diagnostics_score: Some("UPA's LM information loss of each node (lower is better)"),
    configure: params::configure,
};

/// UPA configured for one release.
#[derive(Debug, Clone, PartialEq)]
pub struct Upa {
    /// The algorithm's parameters.
    pub params: UpaParams,
    /// Largest lattice to search.
    pub max_nodes: usize,
    /// `min_levels` / `max_levels`.
    pub level_bounds: LevelBounds,
}

impl Method for Upa {
    fn spec(&self) -> &'static MethodSpec {
        &METHOD
    }

    fn budget(&self) -> Cost {
        Cost::NONE
    }

    fn max_nodes(&self) -> usize {
        self.max_nodes
    }

    fn level_bounds(&self) -> &LevelBounds {
        &self.level_bounds
    }

    fn named_columns(&self) -> Vec<(&'static str, &str)> {
        self.params
            .levels
            .iter()
            .flatten()
            .map(|(name, _)| ("levels", name.as_str()))
            .collect()
    }

    /// A class of `n < k` records at any node gets `k − n` counterfeits. Merging classes
    /// never raises the total (`max(0, k − a − b) ≤ max(0, k − a) + max(0, k − b)`), so the
    /// leaf-level classes' shortfall bounds every node's: the bound holds with certainty.
    ///
    /// Per person a class counts its distinct persons: merging classes of `a` and `b`
    /// persons gives at least `max(a, b)`, and `k − max(a, b) ≤ (k − a) + (k − b)` whenever
    /// both are under k, so the leaf-level shortfall bounds every node's there too.
    fn release_size(&self, input: &MethodInput<'_>) -> Result<ReleaseSize> {
        let histogram = input.histogram;
        let rows = histogram.total();
        let k = self.params.k;
        let counted = match input.persons {
            None => histogram.sizes().into_owned(),
            Some(persons) => persons_per_class(persons, input.hierarchies, histogram)?,
        };
        let added: u64 = counted.iter().map(|&n| k.saturating_sub(n)).sum();
        let upper = rows.saturating_add(added) as f64;
        Ok(ReleaseSize {
            expected: upper,
            upper,
            cause: format!("k = {k} adds at most {added} counterfeit rows to classes under k"),
        })
    }

    fn diagnostics_schema(&self) -> SchemaRef {
        upa_diagnostics_schema()
    }

    fn publishes_catalog(&self) -> bool {
        true
    }

    fn check_sensitive(&self, columns: &[SensitiveSpec]) -> Result<()> {
        self.params.models.check_columns(columns)
    }

    fn run(&self, input: &MethodInput<'_>, rng: &mut AnonRng) -> Result<MethodOutput> {
        let result = run(input, &self.params, rng)?;
        Ok(MethodOutput {
            node: result.outcomes[result.chosen].node.clone(),
            metadata: upa_metadata(&self.params, &result, input.hierarchies, input.lattice),
            diagnostics: upa_diagnostics_batch(&result.outcomes, result.chosen)?,
            release: result.release,
            catalog: Some(result.catalog),
            interval_means: None,
            own_rows: None,
        })
    }
}

/// Runs UPA over the lattice, on validated parameters (`UpaParams::validate`, called when
/// the method is configured).
pub fn run(input: &MethodInput<'_>, params: &UpaParams, rng: &mut AnonRng) -> Result<UpaResult> {
    let (base, hierarchies, lattice, value_domain) = (
        input.histogram,
        input.hierarchies,
        input.lattice,
        input.value_domain,
    );
    let models = ClassModels::new(&params.models, base, input.sensitive, METHOD.name)?;
    let total = base.total();
    if total == 0 {
        return exec_err!("cannot anonymize an empty table");
    }
    if params.k > total {
        return exec_err!(
            "upa: k = {} exceeds the number of records ({total}); lower k",
            params.k
        );
    }
    let mut totals = vec![0u64; value_domain];
    for (p, &v) in base.pair_values.iter().enumerate() {
        totals[v as usize] += base.pair_counts[p];
    }
    let degrees = Degrees::new(hierarchies);
    // What a class counts towards k: its records, or per person its distinct persons
    // (a counterfeit row then stands for one more person; METHODS.md §9.3).
    let counted = |hist: &GroupedHistogram| -> Result<Vec<u64>> {
        match input.persons {
            None => Ok(hist.sizes().into_owned()),
            Some(persons) => persons_per_class(persons, hierarchies, hist),
        }
    };
    let requested = match &params.levels {
        Some(levels) => Some(crate::lattice::node_from_levels(
            hierarchies,
            lattice,
            levels,
        )?),
        None => None,
    };
    let nodes = lattice.nodes();
    let streams: Vec<AnonRng> = nodes.iter().map(|_| derive_child(rng)).collect();
    let sweep = Sweep {
        base,
        hierarchies,
        lattice,
        value_domain,
        threads: input.threads,
        progress: input.progress,
        memory: &input.memory,
    };
    // The lowest RCE of a feasible node of the levels already searched (as f64 bits),
    // updated when the sweep reaches a new level, before any node of it is evaluated: a
    // node bound to exceed it cannot be chosen (`NodeStatus::AboveBest`). The bound uses
    // finished levels only, so which nodes it skips does not depend on thread timing.
    let best_before = AtomicU64::new(f64::INFINITY.to_bits());
    let mut best_level: Option<usize> = None;
    // The ceiling's monotonicity: a node with a predecessor over the ceiling (or itself
    // pruned) is over it too, and is not rolled up.
    let skip = |i: usize, earlier: &[Option<NodeOutcome>]| -> Option<NodeOutcome> {
        let level: usize = nodes[i].iter().sum();
        if best_level != Some(level) {
            best_level = Some(level);
            let best = earlier
                .iter()
                .flatten()
                .filter(|o| o.status == NodeStatus::Feasible)
                .filter_map(|o| o.rce)
                .fold(f64::INFINITY, f64::min);
            best_before.store(best.to_bits(), Ordering::Relaxed);
        }
        let blocked = lattice.predecessors(&nodes[i]).iter().any(|p| {
            earlier[lattice.index_of(p)]
                .as_ref()
                .is_some_and(|o| matches!(o.status, NodeStatus::OverCeiling | NodeStatus::Pruned))
        });
        let skipped = requested.as_ref().is_some_and(|r| r != &nodes[i]);
        (blocked || skipped).then(|| NodeOutcome {
            node: nodes[i].clone(),
            status: if skipped {
                NodeStatus::NotRequested
            } else {
                NodeStatus::Pruned
            },
            max_degree: None,
            classes: 0,
            counterfeits: 0,
            groups: 0,
            lm: None,
            rce: None,
        })
    };
    // Node `i` evaluated on its own stream (replayable: the stream is cloned).
    let evaluate_at = |i: usize, hist: &GroupedHistogram, build: bool, rce_above: f64| {
        evaluate_node(
            hist,
            hierarchies,
            &degrees,
            params,
            &models,
            &totals,
            &counted,
            &mut streams[i].clone(),
            build,
            rce_above,
        )
    };
    let evaluate = |i: usize, hist: &GroupedHistogram| {
        let best = f64::from_bits(best_before.load(Ordering::Relaxed));
        Ok(evaluate_at(i, hist, false, best)?.outcome)
    };
    let outcomes = sweep.run(skip, evaluate, |o| o.status != NodeStatus::OverCeiling)?;

    let chosen = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| o.status == NodeStatus::Feasible)
        .min_by(|(i, a), (j, b)| {
            let ra = a.rce.unwrap_or(f64::INFINITY);
            let rb = b.rce.unwrap_or(f64::INFINITY);
            ra.total_cmp(&rb)
                .then(a.counterfeits.cmp(&b.counterfeits))
                .then(
                    a.node
                        .iter()
                        .sum::<usize>()
                        .cmp(&b.node.iter().sum::<usize>()),
                )
                .then(i.cmp(j))
        })
        .map(|(i, _)| i);
    let Some(chosen) = chosen else {
        return Err(no_feasible_node(params, &outcomes));
    };

    // Replay the chosen node's stream: the release is exactly the evaluated candidate.
    let node = &nodes[chosen];
    let hist = base.roll_up(hierarchies, node, value_domain)?;
    let replay = evaluate_at(chosen, &hist, true, f64::INFINITY)?;
    if replay.outcome != outcomes[chosen] {
        return internal_err!("UPA replay of node {node:?} differs from the evaluated candidate");
    }
    let Some((release, catalog)) = replay.release else {
        return internal_err!("UPA replay produced no release");
    };
    if release.row_count() != total + catalog.counterfeits() {
        return internal_err!(
            "UPA release has {} rows, expected {total} real plus {} counterfeit",
            release.row_count(),
            catalog.counterfeits()
        );
    }
    let h = params
        .h
        .unwrap_or_else(|| outcomes[chosen].max_degree.unwrap_or(0.0));
    // Per person, the persons of every released class: its real persons and its
    // counterfeits, one person each.
    let class_persons = match input.persons {
        None => None,
        Some(persons) => {
            let real = persons_per_class(persons, hierarchies, &hist)?;
            let fakes = catalog_counts(&release, &hist);
            Some(real.iter().zip(fakes).map(|(r, f)| r + f).collect())
        }
    };
    Ok(UpaResult {
        outcomes,
        chosen,
        release,
        catalog,
        h,
        class_persons,
    })
}

/// The counterfeit rows of each class of `release`, the release of the node `hist`
/// (its classes in the same order): released rows minus real records.
fn catalog_counts(release: &ReleasedHistogram, hist: &GroupedHistogram) -> Vec<u64> {
    (0..release.class_count())
        .map(|c| {
            let released: u64 = release.class_range(c).map(|e| release.counts[e]).sum();
            released - hist.class_size(c)
        })
        .collect()
}

/// The distinct persons of every class of `hist` (a node's histogram), from the persons'
/// histogram rolled up to the same node: the two have the same classes in the same order.
fn persons_per_class(
    persons: &PersonClasses,
    hierarchies: &[&Hierarchy],
    hist: &GroupedHistogram,
) -> Result<Vec<u64>> {
    let rolled = persons
        .histogram
        .roll_up(hierarchies, &hist.levels, persons.codes.len())?;
    if rolled.class_codes != hist.class_codes {
        return internal_err!("UPA: the persons' classes differ from the records' classes");
    }
    let mut pairs = Vec::new();
    Ok((0..rolled.class_count())
        .map(|c| {
            pairs.clear();
            pairs.extend(rolled.pairs(c));
            persons.codes.distinct_persons(&pairs)
        })
        .collect())
}

/// The error when no node can be released: names k and h and what to relax.
fn no_feasible_node(
    params: &UpaParams,
    outcomes: &[NodeOutcome],
) -> datafusion::error::DataFusionError {
    let count = |s: NodeStatus| outcomes.iter().filter(|o| o.status == s).count();
    let over = count(NodeStatus::OverCeiling) + count(NodeStatus::Pruned);
    let hidden = count(NodeStatus::NotConcealable) + count(NodeStatus::TooManyCounterfeits);
    let failing = count(NodeStatus::FailsModels);
    let models = params.models.describe(&[]);
    let (with, model_part) = if models.is_empty() {
        (String::new(), String::new())
    } else {
        (
            format!(" and {}", models.join(" and ")),
            format!(", {failing} have a class whose real records fail them"),
        )
    };
    let h = params
        .h
        .map_or_else(|| "none".to_string(), |h| h.to_string());
    let requested = if params.levels.is_some() {
        " at the node given by 'levels'"
    } else {
        ""
    };
    let advice = if params.counterfeit_sa == CounterfeitSa::Uniform {
        "raise h, lower k, or draw counterfeit values with counterfeit_sa => 'constrained'"
    } else {
        "raise h or lower k"
    };
    let lowest = outcomes
        .iter()
        .filter(|o| o.status == NodeStatus::NotConcealable)
        .map(|o| node_label(&o.node))
        .next()
        .unwrap_or_default();
    let example = if lowest.is_empty() {
        String::new()
    } else {
        format!(" (first: node {lowest})")
    };
    datafusion::error::DataFusionError::Execution(format!(
        "upa: no generalization{requested} satisfies k = {}{with} under h = {h}: {over} of {} nodes exceed the h-ceiling{model_part} and the counterfeits of {hidden} others cannot be concealed by any catalog (Lemma 1){example}; {advice}",
        params.k,
        outcomes.len() - count(NodeStatus::NotRequested)
    ))
}

#[cfg(test)]
mod person_tests;
#[cfg(test)]
mod tests;
