//! IPA — informative-attribute preserving anonymization (Lee & Chung 2020).
//!
//! For every node of the full-domain lattice the data are generalized, classes are
//! suppressed under a noisy threshold, counterfeit records are inserted with a noisy count
//! and exponential-mechanism choice of informative values (paper Algorithm 1). Every
//! candidate is scored by information loss (NCP + EMD + Rate) and one is chosen with the
//! exponential mechanism (Algorithm 2). The released data are exactly the scored candidate:
//! each node draws from its own reproducible random stream, which is replayed for the chosen
//! node.
//!
//! Privacy caveat (see the `guarantee` text): the paper claims ε-differential privacy for
//! the whole pipeline; that claim does not hold (truthful values, visible classes, one-sided
//! insertion noise, no composition over the lattice).

use std::collections::HashMap;

use datafusion::common::{exec_err, internal_err, Result};

use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::lattice::{roll_up_from_nearest, Lattice, Node};
use crate::mechanism::exponential::exponential_mechanism;
use crate::mechanism::rng::{derive_child, AnonRng};
use crate::progress::Progress;
use crate::release::interval_means::interval_means;
use crate::release::{IntervalMeans, ReleasedHistogram};

mod params;
mod perturb;
mod report;
mod score;
mod values;

#[cfg(test)]
use perturb::*;
use perturb::{perturb_node, Scales};

pub use params::{CounterfeitValues, IpaParams, IpaVariant, NodeScore, METHOD};
pub use report::{ipa_diagnostics_batch, ipa_diagnostics_schema, ipa_metadata};
#[cfg(test)]
use score::COUNTERFEIT_COST;
pub use score::{attribute_weights, node_utility, NodeUtility, UtilityModel};
pub use values::MarginalValues;

/// Scores and counts of one candidate (owner-only diagnostics).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeOutcome {
    /// The lattice node.
    pub node: Node,
    /// Normalized certainty penalty of the candidate.
    pub ncp: f64,
    /// Mean per-class total-variation distance between real and released values.
    pub emd: f64,
    /// Mean per-class share of counterfeit records.
    pub rate: f64,
    /// Information loss as the variant defines it (sum, or mean for `reference`).
    pub il: f64,
    /// Number of released equivalence classes (including `*`).
    pub classes: usize,
    /// Number of classes suppressed.
    pub suppressed_classes: usize,
    /// Number of real records suppressed.
    pub suppressed_records: u64,
    /// Number of counterfeit records inserted.
    pub counterfeits: u64,
    /// Number of released rows (real + counterfeit).
    pub released_rows: u64,
}

/// The result of an IPA run.
#[derive(Debug, Clone)]
pub struct IpaResult {
    /// Perturbed candidates: every node in lattice order (`node_score => 'paper'`), or only
    /// the released one (`'utility'`).
    pub outcomes: Vec<NodeOutcome>,
    /// Index of the released candidate in `outcomes`.
    pub chosen: usize,
    /// Utility score of every node in lattice order (`'utility'` only, else empty).
    pub utilities: Vec<NodeUtility>,
    /// Sensitivity of the node score the selection used.
    pub score_sensitivity: f64,
    /// The released histogram of the chosen node.
    pub release: ReleasedHistogram,
    /// The interval means published with it (`eps_means > 0`).
    pub interval_means: Option<IntervalMeans>,
}

/// Runs IPA. `base` is the leaf-level histogram, `value_domain` the number of distinct
/// informative values; `progress(done, total)` is called as nodes finish.
///
/// `node_score => 'paper'`: Algorithm 1 on every node, the exponential mechanism on their
/// information loss (Algorithm 2). `'utility'`: the utility score of every node on its true
/// class sizes, the exponential mechanism on it, then Algorithm 1 once at the chosen node
/// (docs/METHODS.md §1.13).
pub fn run(
    base: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    lattice: &Lattice,
    value_domain: usize,
    params: &IpaParams,
    rng: &mut AnonRng,
    progress: &Progress,
) -> Result<IpaResult> {
    params.validate()?;
    if base.total() == 0 {
        return exec_err!("cannot anonymize an empty table");
    }
    match params.node_score {
        NodeScore::Paper => run_paper_score(
            base,
            hierarchies,
            lattice,
            value_domain,
            params,
            rng,
            progress,
        ),
        NodeScore::Utility => run_utility_score(
            base,
            hierarchies,
            lattice,
            value_domain,
            params,
            rng,
            progress,
        ),
    }
}

/// `node_score => 'utility'`: score every node on its true class sizes, choose one with the
/// exponential mechanism at `ε_cand` and the score's sensitivity, perturb it once.
fn run_utility_score(
    base: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    lattice: &Lattice,
    value_domain: usize,
    params: &IpaParams,
    rng: &mut AnonRng,
    progress: &Progress,
) -> Result<IpaResult> {
    let model = UtilityModel::new(params)?;
    let weights = attribute_weights(hierarchies, &params.qi_weights)?;
    let utilities = score_nodes(base, hierarchies, lattice, &weights, &model, progress)?;
    let scores: Vec<f64> = utilities.iter().map(|u| u.score).collect();
    let pick = exponential_mechanism(rng, &scores, params.eps_cand, model.sensitivity)?;
    let nodes = lattice.nodes();
    let hist = base.roll_up(hierarchies, &nodes[pick], value_domain)?;
    let scales = Scales::new(params)?;
    let mut stream = derive_child(rng);
    let marginal = marginal_values(base, value_domain, params, &mut stream)?;
    let (outcome, release) = perturb_node(
        &hist,
        hierarchies,
        value_domain,
        params,
        &scales,
        marginal.as_ref(),
        &mut stream,
        true,
    )?;
    let Some(release) = release else {
        return internal_err!("IPA produced no release");
    };
    let interval_means = published_means(base, hierarchies, &nodes[pick], params, &mut stream)?;
    Ok(IpaResult {
        outcomes: vec![outcome],
        chosen: 0,
        utilities,
        score_sensitivity: model.sensitivity,
        release,
        interval_means,
    })
}

/// The utility score of every lattice node (lattice order), from class sizes only.
pub fn score_nodes(
    base: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    lattice: &Lattice,
    weights: &[f64],
    model: &UtilityModel,
    progress: &Progress,
) -> Result<Vec<NodeUtility>> {
    let sizes = base.class_sizes();
    for_each_node(&sizes, hierarchies, lattice, 1, progress, |_, hist| {
        Ok(node_utility(hist, hierarchies, weights, model))
    })
}

/// Evaluates `eval(index, histogram)` on every lattice node, returning the results in
/// lattice order. Nodes are processed by level sum, in parallel within a level; each node's
/// histogram is rolled up from its smallest already computed predecessor.
fn for_each_node<T: Send>(
    base: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    lattice: &Lattice,
    value_domain: usize,
    progress: &Progress,
    eval: impl Fn(usize, &GroupedHistogram) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let nodes = lattice.nodes();
    let total = nodes.len();
    let max_sum: usize = lattice.max_levels().iter().sum();
    let mut by_sum: Vec<Vec<usize>> = vec![Vec::new(); max_sum + 1];
    for (i, node) in nodes.iter().enumerate() {
        by_sum[node.iter().sum::<usize>()].push(i);
    }
    let mut results: Vec<Option<T>> = (0..total).map(|_| None).collect();
    let mut previous: HashMap<usize, GroupedHistogram> = HashMap::new();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .max(1);

    for level_nodes in by_sum.iter().filter(|l| !l.is_empty()) {
        let work = |indices: &[usize]| -> Result<Vec<(usize, GroupedHistogram, T)>> {
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
                let result = eval(i, &hist)?;
                out.push((i, hist, result));
                let finished = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                progress.report(finished, total)?;
            }
            Ok(out)
        };
        let chunk = level_nodes.len().div_ceil(threads).max(1);
        let batches: Vec<Result<Vec<_>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = level_nodes
                .chunks(chunk)
                .map(|part| scope.spawn(|| work(part)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| internal_err!("an IPA worker thread panicked"))
                })
                .collect()
        });
        let mut next = HashMap::with_capacity(level_nodes.len());
        for batch in batches {
            for (i, hist, result) in batch? {
                results[i] = Some(result);
                next.insert(i, hist);
            }
        }
        previous = next;
    }
    results.into_iter().collect::<Option<Vec<T>>>().map_or_else(
        || internal_err!("an IPA lattice node was not evaluated"),
        Ok,
    )
}

/// `node_score => 'paper'`: Algorithm 1 on every node with its own stream, the exponential
/// mechanism on the candidates' information loss, and the chosen node's stream replayed.
fn run_paper_score(
    base: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    lattice: &Lattice,
    value_domain: usize,
    params: &IpaParams,
    rng: &mut AnonRng,
    progress: &Progress,
) -> Result<IpaResult> {
    let scales = Scales::new(params)?;
    let marginal = marginal_values(base, value_domain, params, rng)?;
    let nodes = lattice.nodes();
    let streams: Vec<AnonRng> = nodes.iter().map(|_| derive_child(rng)).collect();
    let outcomes = for_each_node(
        base,
        hierarchies,
        lattice,
        value_domain,
        progress,
        |i, hist| {
            let mut stream = streams[i].clone();
            let (outcome, _) = perturb_node(
                hist,
                hierarchies,
                value_domain,
                params,
                &scales,
                marginal.as_ref(),
                &mut stream,
                false,
            )?;
            Ok(outcome)
        },
    )?;

    let chosen = choose_node(rng, &outcomes, params)?;

    // Replay the chosen node's stream: the release is exactly the scored candidate.
    let node = &nodes[chosen];
    let hist = base.roll_up(hierarchies, node, value_domain)?;
    let mut stream = streams[chosen].clone();
    let (outcome, release) = perturb_node(
        &hist,
        hierarchies,
        value_domain,
        params,
        &scales,
        marginal.as_ref(),
        &mut stream,
        true,
    )?;
    if outcome != outcomes[chosen] {
        return internal_err!("IPA replay of node {node:?} differs from the scored candidate");
    }
    let Some(release) = release else {
        return internal_err!("IPA replay produced no release");
    };
    let interval_means = published_means(base, hierarchies, node, params, rng)?;
    Ok(IpaResult {
        outcomes,
        chosen,
        utilities: Vec::new(),
        score_sensitivity: paper_score_sensitivity(params.variant),
        release,
        interval_means,
    })
}

/// `Δu` of the paper's node score: 3 (IL as a sum), 1 for `reference` (IL as a mean).
fn paper_score_sensitivity(variant: IpaVariant) -> f64 {
    match variant {
        IpaVariant::Paper => 3.0,
        IpaVariant::Reference => 1.0,
    }
}

/// Node choice (Eq. 11-12): the exponential mechanism over the utilities `max_il − il`
/// (paper: IL in `[0, 3]`, Δu = 3; reference: IL in `[0, 1]`, Δu = 1) with `ε_cand`.
fn choose_node(rng: &mut AnonRng, outcomes: &[NodeOutcome], params: &IpaParams) -> Result<usize> {
    let (max_il, sensitivity) = match params.variant {
        IpaVariant::Paper => (3.0, 3.0),
        IpaVariant::Reference => (1.0, 1.0),
    };
    let utilities: Vec<f64> = outcomes.iter().map(|o| max_il - o.il).collect();
    Ok(exponential_mechanism(
        rng,
        &utilities,
        params.eps_cand,
        sensitivity,
    )?)
}

/// The noisy value histogram counterfeits draw from with `counterfeit_values =>
/// 'marginal'`; `None` for the paper's per-class draw.
fn marginal_values(
    base: &GroupedHistogram,
    value_domain: usize,
    params: &IpaParams,
    rng: &mut AnonRng,
) -> Result<Option<MarginalValues>> {
    match params.counterfeit_values {
        CounterfeitValues::Class => Ok(None),
        CounterfeitValues::Marginal => Ok(Some(MarginalValues::new(
            base,
            value_domain,
            params.eps_val,
            rng,
        )?)),
    }
}

/// The interval means of the released node at `ε_means`, drawn after the release; `None`
/// when the budget split has no means part.
fn published_means(
    base: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    node: &Node,
    params: &IpaParams,
    rng: &mut AnonRng,
) -> Result<Option<IntervalMeans>> {
    if params.eps_means <= 0.0 {
        return Ok(None);
    }
    interval_means(base, hierarchies, node, params.eps_means, rng).map(Some)
}

#[cfg(test)]
mod audit;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod utility_tests;
