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
//! is released (ties: fewer counterfeits, fewer generalization levels, lattice order). Without
//! `h` every node is searched and `h` is the chosen node's largest degree.
//!
//! Randomness: one ChaCha20 child stream per lattice node, drawn in lattice order; the
//! chosen node's stream is replayed for the release, which is therefore exactly the
//! evaluated candidate.

use std::collections::HashMap;

use datafusion::common::{exec_err, internal_err, plan_err, Result};

use crate::counterfeit_catalog::{CatalogWeights, CounterfeitCatalog};
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::lattice::{node_label, roll_up_from_nearest, Lattice, Node};
use crate::mechanism::rng::{derive_child, AnonRng};
use crate::metric::degree::{loss_metric, Degrees, DEGREE_TOLERANCE};
use crate::metric::rce::{cell_rce, class_volume};
use crate::privacy::models::{ClassModels, ModelScratch, ModelSpec};
use crate::progress::Progress;
use crate::release::ReleasedHistogram;

mod counterfeits;
mod grouping;
mod params;
mod report;

pub use grouping::{check_lemma1, group_classes};
pub use params::METHOD;
pub use report::{upa_diagnostics_batch, upa_diagnostics_schema, upa_metadata};

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

/// Parameters of a UPA release.
#[derive(Debug, Clone, PartialEq)]
pub struct UpaParams {
    /// Smallest class size, counterfeits included (at least 2).
    pub k: u64,
    /// Ceiling on every record's generalization degree, in `(0, 1]`; `None`: chosen.
    pub h: Option<f64>,
    /// Distribution of the counterfeits' sensitive values.
    pub counterfeit_sa: CounterfeitSa,
    /// Only this node (`column=level` pairs, others at 0) is evaluated; `None`: the lattice.
    pub levels: Option<Vec<(String, usize)>>,
    /// ℓ-diversity and t-closeness every class's real records must meet.
    pub models: ModelSpec,
}

impl UpaParams {
    /// Checks `k ≥ 2` and `0 < h ≤ 1`.
    pub fn validate(&self) -> Result<()> {
        if self.k < 2 {
            return plan_err!(
                "k must be at least 2 for method 'upa' (k = 1 needs no counterfeits), got {}",
                self.k
            );
        }
        if let Some(h) = self.h {
            if !(h.is_finite() && h > 0.0 && h <= 1.0) {
                return plan_err!(
                    "h must be a generalization degree in (0, 1] for method 'upa', got {h}"
                );
            }
        }
        self.models.validate()
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
}

/// The node feasibility check that precedes counterfeits: every class's record degree is
/// within the ceiling. Returns the node's largest degree and whether it passes. Further
/// per-class predicates of a node (e.g. diversity of the sensitive values) belong here.
pub fn node_feasibility(hist: &GroupedHistogram, degrees: &Degrees, h: Option<f64>) -> (f64, bool) {
    let max_degree = (0..hist.class_count())
        .map(|c| degrees.record_degree(&hist.levels, |a| hist.class_codes[a][c]))
        .fold(0.0, f64::max);
    let within = h.is_none_or(|h| max_degree <= h + DEGREE_TOLERANCE);
    (max_degree, within)
}

/// A node's release, catalog and outcome, from its histogram and its random stream.
struct NodeRelease {
    outcome: NodeOutcome,
    release: Option<(ReleasedHistogram, CounterfeitCatalog)>,
}

fn evaluate_node(
    hist: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    degrees: &Degrees,
    params: &UpaParams,
    models: &ClassModels,
    totals: &[u64],
    rng: &mut AnonRng,
) -> Result<NodeRelease> {
    let mut outcome = NodeOutcome {
        node: hist.levels.clone(),
        status: NodeStatus::OverCeiling,
        max_degree: None,
        classes: hist.class_count(),
        counterfeits: 0,
        groups: 0,
        lm: None,
        rce: None,
    };
    let (max_degree, within) = node_feasibility(hist, degrees, params.h);
    outcome.max_degree = Some(max_degree);
    if !within {
        return Ok(NodeRelease {
            outcome,
            release: None,
        });
    }
    // UPA suppresses nothing: every class's real records must meet the models.
    if !models.is_empty() {
        let mut scratch = ModelScratch::default();
        let fails = (0..hist.class_count()).any(|c| {
            let range = hist.class_range(c);
            !models.accepts(
                &hist.pair_values[range.clone()],
                &hist.pair_counts[range],
                &mut scratch,
            )
        });
        if fails {
            outcome.status = NodeStatus::FailsModels;
            return Ok(NodeRelease {
                outcome,
                release: None,
            });
        }
    }
    let fakes =
        match counterfeits::draw_counterfeits(hist, params.k, params.counterfeit_sa, totals, rng) {
            Ok(f) => f,
            Err(counterfeits::DrawFailure::TooMany) => {
                outcome.status = NodeStatus::TooManyCounterfeits;
                return Ok(NodeRelease {
                    outcome,
                    release: None,
                });
            }
        };
    outcome.counterfeits = fakes.total();
    let Some(catalog) = group_classes(hist, &fakes, totals) else {
        outcome.status = NodeStatus::NotConcealable;
        return Ok(NodeRelease {
            outcome,
            release: None,
        });
    };
    check_lemma1(hist, &fakes, &catalog)?;

    let attrs = hierarchies.len();
    let mut release = ReleasedHistogram::new(hist.levels.clone(), attrs);
    let mut extra: Vec<u32> = Vec::new();
    for c in 0..hist.class_count() {
        let codes: Vec<u32> = (0..attrs).map(|a| hist.class_codes[a][c]).collect();
        let real: Vec<(u32, u64)> = hist.pairs(c).collect();
        extra.clear();
        for (v, n) in fakes.class(c) {
            extra.extend(std::iter::repeat_n(v, n as usize));
        }
        release.push_class(&codes, &real, &extra);
    }
    outcome.status = NodeStatus::Feasible;
    outcome.groups = catalog.groups.len();
    outcome.lm = Some(loss_metric(degrees, &release));
    outcome.rce = Some(node_rce(hist, hierarchies, &release, &catalog));
    Ok(NodeRelease {
        outcome,
        release: Some((release, catalog)),
    })
}

/// Exact RCE of a node's release: its classes are the node's classes in the same order,
/// each holding every real record of the class plus the class's counterfeits.
fn node_rce(
    hist: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    release: &ReleasedHistogram,
    catalog: &CounterfeitCatalog,
) -> f64 {
    let weights = CatalogWeights::new(release, Some(catalog));
    let mut total = 0.0;
    for c in 0..release.class_count() {
        let volume = class_volume(hierarchies, &release.levels, |a| release.class_codes[a][c]);
        for e in release.class_range(c) {
            let v = release.values[e];
            let real = counterfeits::real_count(hist, c, v);
            total += cell_rce(real, release.counts[e], weights.weight(c, v), volume);
        }
    }
    total
}

/// Runs UPA over the lattice.
#[allow(clippy::too_many_arguments)]
pub fn run(
    base: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    lattice: &Lattice,
    value_domain: usize,
    params: &UpaParams,
    models: &ClassModels,
    rng: &mut AnonRng,
    progress: &Progress,
) -> Result<UpaResult> {
    params.validate()?;
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
    let node_count = nodes.len();

    let max_sum: usize = lattice.heights().iter().sum();
    let mut by_sum: Vec<Vec<usize>> = vec![Vec::new(); max_sum + 1];
    for (i, node) in nodes.iter().enumerate() {
        by_sum[node.iter().sum::<usize>()].push(i);
    }
    let mut outcomes: Vec<Option<NodeOutcome>> = vec![None; node_count];
    let mut previous: HashMap<usize, GroupedHistogram> = HashMap::new();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .max(1);

    for level_nodes in &by_sum {
        // Pruning by the ceiling's monotonicity: a node with a predecessor over the ceiling
        // (or itself pruned) is over it too.
        let mut evaluate: Vec<usize> = Vec::with_capacity(level_nodes.len());
        for &i in level_nodes {
            let blocked = lattice.predecessors(&nodes[i]).iter().any(|p| {
                outcomes[lattice.index_of(p)].as_ref().is_some_and(|o| {
                    matches!(o.status, NodeStatus::OverCeiling | NodeStatus::Pruned)
                })
            });
            let skipped = requested.as_ref().is_some_and(|r| r != &nodes[i]);
            if blocked || skipped {
                outcomes[i] = Some(NodeOutcome {
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
                });
                let finished = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                progress.report(finished, node_count)?;
            } else {
                evaluate.push(i);
            }
        }
        let work = |indices: &[usize]| -> Result<Vec<(usize, GroupedHistogram, NodeOutcome)>> {
            let mut out = Vec::with_capacity(indices.len());
            for &i in indices {
                let node = &nodes[i];
                let hist = roll_up_from_nearest(
                    base,
                    &previous,
                    lattice,
                    hierarchies,
                    node,
                    value_domain,
                )?;
                let mut stream = streams[i].clone();
                let evaluated = evaluate_node(
                    &hist,
                    hierarchies,
                    &degrees,
                    params,
                    models,
                    &totals,
                    &mut stream,
                )?;
                out.push((i, hist, evaluated.outcome));
                let finished = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                progress.report(finished, node_count)?;
            }
            Ok(out)
        };
        let chunk = evaluate.len().div_ceil(threads).max(1);
        let results: Vec<Result<Vec<_>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = evaluate
                .chunks(chunk)
                .map(|part| scope.spawn(move || work(part)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| internal_err!("a UPA worker thread panicked"))
                })
                .collect()
        });
        let mut next = HashMap::with_capacity(evaluate.len());
        for result in results {
            for (i, hist, outcome) in result? {
                if outcome.status != NodeStatus::OverCeiling {
                    next.insert(i, hist);
                }
                outcomes[i] = Some(outcome);
            }
        }
        previous = next;
    }
    let outcomes: Vec<NodeOutcome> = outcomes
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .map_or_else(|| internal_err!("a UPA lattice node was not evaluated"), Ok)?;

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
    let mut stream = streams[chosen].clone();
    let replay = evaluate_node(
        &hist,
        hierarchies,
        &degrees,
        params,
        models,
        &totals,
        &mut stream,
    )?;
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
    Ok(UpaResult {
        outcomes,
        chosen,
        release,
        catalog,
        h,
    })
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
mod tests;
