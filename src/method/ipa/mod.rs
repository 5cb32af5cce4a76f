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
use crate::mechanism::exponential::{exponential_mechanism, sample_weighted_index};
use crate::mechanism::noise::{
    sample_discrete_laplace, sample_floor_laplace, sample_uniform_below, ExactScale,
};
use crate::mechanism::rng::{derive_child, AnonRng};
use crate::metric::information_loss::class_scores;
use crate::progress::Progress;
use crate::release::interval_means::interval_means;
use crate::release::{IntervalMeans, ReleasedHistogram, SUPPRESSED};

mod params;
mod report;
mod score;
mod values;

pub use params::{
    CounterfeitValues, Ipa, IpaParams, IpaVariant, NodeScore, DEFAULT_SUPPRESSION_THRESHOLD, METHOD,
};
pub use report::{ipa_diagnostics_batch, ipa_diagnostics_schema, ipa_metadata};
pub use score::{attribute_weights, node_utility, NodeUtility, UtilityModel, COUNTERFEIT_COST};
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
pub fn run_ipa(
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

/// Exact noise scales derived once from the budget.
struct Scales {
    suppression: ExactScale,
    insertion: ExactScale,
}

impl Scales {
    fn new(params: &IpaParams) -> Result<Self> {
        let sup_sensitivity = match params.variant {
            IpaVariant::Paper => params.threshold - 1,
            IpaVariant::Reference => 1,
        };
        Ok(Self {
            suppression: ExactScale::from_sensitivity_epsilon(sup_sensitivity, params.eps_sup)?,
            insertion: ExactScale::from_sensitivity_epsilon(1, params.eps_ins)?,
        })
    }
}

/// Per-class scratch state while perturbing one node.
struct ClassWork {
    /// (value, real count) of the class, ascending by value.
    real: Vec<(u32, u64)>,
    /// Counterfeit values drawn for the class.
    fake: Vec<u32>,
}

/// Algorithm 1 on one node plus its information loss. Counterfeit values come from
/// `marginal` when given, else from the paper's per-class draw. With `collect`, also
/// returns the released histogram.
#[allow(clippy::too_many_arguments)]
fn perturb_node(
    hist: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    value_domain: usize,
    params: &IpaParams,
    scales: &Scales,
    marginal: Option<&MarginalValues>,
    rng: &mut AnonRng,
    collect: bool,
) -> Result<(NodeOutcome, Option<ReleasedHistogram>)> {
    let attrs = hierarchies.len();
    let ncp_tables: Vec<Vec<f64>> = (0..attrs)
        .map(|a| hierarchies[a].ncp_per_code(hist.levels[a]))
        .collect();
    let mut acc = Accumulator::default();
    let mut release = collect.then(|| ReleasedHistogram::new(hist.levels.clone(), attrs));
    let mut suppressed = vec![0u64; value_domain];
    let mut suppressed_touched: Vec<u32> = Vec::new();
    let mut work = ClassWork {
        real: Vec::new(),
        fake: Vec::new(),
    };

    for c in 0..hist.class_count() {
        let range = hist.class_offsets[c]..hist.class_offsets[c + 1];
        let n: u64 = hist.pair_counts[range.clone()].iter().sum();
        if suppress(n, params, scales, rng) {
            acc.suppressed_classes += 1;
            acc.suppressed_records += n;
            for p in range {
                let v = hist.pair_values[p];
                if suppressed[v as usize] == 0 {
                    suppressed_touched.push(v);
                }
                suppressed[v as usize] += hist.pair_counts[p];
            }
            continue;
        }
        work.real.clear();
        work.real
            .extend(range.map(|p| (hist.pair_values[p], hist.pair_counts[p])));
        insert_counterfeits(&mut work, n, value_domain, params, scales, marginal, rng)?;
        let ncp_per_record: f64 = (0..attrs)
            .map(|a| ncp_tables[a][hist.class_codes[a][c] as usize])
            .sum();
        acc.add_class(&work, n, ncp_per_record);
        if let Some(rel) = release.as_mut() {
            let codes: Vec<u32> = (0..attrs).map(|a| hist.class_codes[a][c]).collect();
            rel.push_class(&codes, &work.real, &work.fake);
        }
    }

    if acc.suppressed_records > 0 {
        suppressed_touched.sort_unstable();
        work.real.clear();
        work.real.extend(
            suppressed_touched
                .iter()
                .map(|&v| (v, suppressed[v as usize])),
        );
        let n = acc.suppressed_records;
        work.fake.clear();
        if params.insert_into_suppressed {
            insert_counterfeits(&mut work, n, value_domain, params, scales, marginal, rng)?;
        }
        acc.add_class(&work, n, attrs as f64);
        if let Some(rel) = release.as_mut() {
            rel.push_class(&vec![SUPPRESSED; attrs], &work.real, &work.fake);
        }
    }

    let rows = acc.real + acc.counterfeits;
    let classes = acc.classes;
    let ncp = if rows == 0 || attrs == 0 {
        0.0
    } else {
        acc.ncp_sum / (attrs as f64 * rows as f64)
    };
    let emd = if classes == 0 {
        0.0
    } else {
        acc.emd_sum / classes as f64
    };
    let rate = if classes == 0 {
        0.0
    } else {
        acc.rate_sum / classes as f64
    };
    let sum = ncp + emd + rate;
    let il = match params.variant {
        IpaVariant::Paper => sum,
        IpaVariant::Reference => sum / 3.0,
    };
    Ok((
        NodeOutcome {
            node: hist.levels.clone(),
            ncp,
            emd,
            rate,
            il,
            classes,
            suppressed_classes: acc.suppressed_classes,
            suppressed_records: acc.suppressed_records,
            counterfeits: acc.counterfeits,
            released_rows: rows,
        },
        release,
    ))
}

/// Noisy-threshold suppression of a class of `n` records.
///
/// Paper: suppress iff `n ≤ t + L`, `L ~ Lap((t−1)/ε_sup)`. Reference: `τ = max(t, t + L)`,
/// `L ~ Lap(1/ε_sup)`, suppress iff `n < τ`. Both compare an integer with `t + L`, which is
/// decided exactly by `floor(L) ≥ n − t` (up to the probability-zero event `L = n − t`).
fn suppress(n: u64, params: &IpaParams, scales: &Scales, rng: &mut AnonRng) -> bool {
    let t = params.threshold;
    if params.variant == IpaVariant::Reference && n < t {
        return true;
    }
    let floor_noise = sample_floor_laplace(rng, scales.suppression);
    let margin = n as i128 - t as i128;
    floor_noise as i128 >= margin
}

/// Draws the number of counterfeits (`max(0, Z)`, `Z` two-sided geometric with scale
/// `1/ε_ins`) and their values: from `marginal` when given, else by the exponential
/// mechanism of Eq. (3)–(4).
fn insert_counterfeits(
    work: &mut ClassWork,
    n: u64,
    value_domain: usize,
    params: &IpaParams,
    scales: &Scales,
    marginal: Option<&MarginalValues>,
    rng: &mut AnonRng,
) -> Result<()> {
    work.fake.clear();
    let noise = sample_discrete_laplace(rng, scales.insertion);
    if noise <= 0 {
        return Ok(());
    }
    let count = noise as u64;
    if let Some(marginal) = marginal {
        for _ in 0..count {
            work.fake.push(marginal.draw(rng)?);
        }
        return Ok(());
    }
    let (weights, absent) = value_choice_weights(&work.real, n, value_domain, params.eps_val);
    for _ in 0..count {
        let value = draw_value(rng, &work.real, &weights, absent)?;
        work.fake.push(value);
    }
    Ok(())
}

/// Weights of the exponential mechanism choosing a counterfeit's informative value in a
/// class of `n` records with `(value, count)` pairs `real` (Eq. 3-4): score `c_v/(n+1)` for
/// a present value, `1/((n+1)·absent)` for each of the `absent` other values of the
/// domain, ΔS = 1, weight `exp(ε_val·(S − S_max)/2)`. Returns one weight per present value
/// and, when `absent > 0`, one last weight for all absent values together.
fn value_choice_weights(
    real: &[(u32, u64)],
    n: u64,
    value_domain: usize,
    eps_val: f64,
) -> (Vec<f64>, usize) {
    let absent = value_domain.saturating_sub(real.len());
    let denominator = (n + 1) as f64;
    let absent_score = if absent > 0 {
        1.0 / (denominator * absent as f64)
    } else {
        0.0
    };
    let mut max_score = if absent > 0 { absent_score } else { f64::MIN };
    for &(_, c) in real {
        max_score = max_score.max(c as f64 / denominator);
    }
    let half_eps = eps_val / 2.0;
    let mut weights: Vec<f64> = real
        .iter()
        .map(|&(_, c)| (half_eps * (c as f64 / denominator - max_score)).exp())
        .collect();
    if absent > 0 {
        weights.push(absent as f64 * (half_eps * (absent_score - max_score)).exp());
    }
    (weights, absent)
}

/// Draws one value with [`value_choice_weights`]: a present value by its weight, or — with
/// the absent values' total weight — one absent value uniformly.
fn draw_value(
    rng: &mut AnonRng,
    real: &[(u32, u64)],
    weights: &[f64],
    absent: usize,
) -> Result<u32> {
    let pick = sample_weighted_index(rng, weights)?;
    if pick < real.len() {
        Ok(real[pick].0)
    } else {
        let j = sample_uniform_below(rng, absent as u64);
        Ok(nth_absent(real, j as u32))
    }
}

/// The `j`-th value code (ascending) that is not among the class's present values.
fn nth_absent(present: &[(u32, u64)], j: u32) -> u32 {
    let mut candidate = j;
    for &(v, _) in present {
        if v <= candidate {
            candidate += 1;
        } else {
            break;
        }
    }
    candidate
}

#[derive(Default)]
struct Accumulator {
    classes: usize,
    suppressed_classes: usize,
    suppressed_records: u64,
    real: u64,
    counterfeits: u64,
    ncp_sum: f64,
    emd_sum: f64,
    rate_sum: f64,
}

impl Accumulator {
    /// Adds one released class: `n` real records, `work.fake` counterfeits.
    fn add_class(&mut self, work: &ClassWork, n: u64, ncp_per_record: f64) {
        let f = work.fake.len() as u64;
        let size = (n + f) as f64;
        self.classes += 1;
        self.real += n;
        self.counterfeits += f;
        self.ncp_sum += size * ncp_per_record;
        self.rate_sum += f as f64 / size;
        self.emd_sum += class_total_variation(work, n);
    }
}

/// Total-variation distance between a class's real values and its released values
/// (real + counterfeit): `½ Σ_v |c_v/n − (c_v + f_v)/(n + f)|` (Eq. 7 per class), by the
/// same computation the information-loss metric uses.
fn class_total_variation(work: &ClassWork, n: u64) -> f64 {
    if work.fake.is_empty() || n == 0 {
        return 0.0;
    }
    let mut released: Vec<(u32, u64)> = work.real.clone();
    released.extend(work.fake.iter().map(|&v| (v, 1)));
    released.sort_unstable_by_key(|&(v, _)| v);
    released.dedup_by(|next, kept| {
        let same = next.0 == kept.0;
        if same {
            kept.1 += next.1;
        }
        same
    });
    class_scores(&work.real, &released).0
}

#[cfg(test)]
mod audit;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod utility_tests;
