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

use datafusion::common::{exec_err, internal_err, plan_err, Result};

use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::lattice::Node;
use crate::mechanism::exponential::exponential_mechanism;
use crate::mechanism::rng::{derive_child, AnonRng};
use crate::method::sweep::Sweep;
use crate::method::MethodInput;
use crate::method::{Guarantee, Input, Persons};
use crate::release::interval_means::interval_means;
use crate::release::{IntervalMeans, ReleasedHistogram};

mod metadata;
mod params;
mod perturb;
mod score;
mod values;
mod workload;

use params::Scales;
use perturb::perturb_node;
#[cfg(test)]
use perturb::*;

use crate::budget::Cost;
use crate::lattice::LevelBounds;
use crate::mechanism::noise::ExactScale;
use crate::mechanism::noise::PositiveNoise;
use crate::method::{Method, MethodOutput, MethodSpec};
use crate::release::{ReleaseSize, SIZE_FAILURE};
use datafusion::arrow::datatypes::SchemaRef;
pub use metadata::{ipa_diagnostics_batch, ipa_diagnostics_schema, ipa_metadata};
pub use params::{CounterfeitValues, IpaParams, IpaVariant, NodeScore};
#[cfg(test)]
use score::COUNTERFEIT_COST;
pub use score::{attribute_weights, node_utility, NodeUtility, UtilityModel};
pub use values::{CounterfeitDraw, LabelledValues, MarginalValues};
pub use workload::Workload;

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

/// IPA in the method registry.
pub const METHOD: MethodSpec = MethodSpec {
    name: "ipa",
    about: "IPA (Lee & Chung 2020): full-domain generalization, noisy-threshold suppression, counterfeit records and exponential-mechanism choices; no formal DP guarantee (see the metadata's guarantee text)",
    params: params::PARAMS,
    refuses: params::REFUSES,
    guarantee: Guarantee::PartlyDp,
    methods_section: "§1.11",
    input: Input::Lattice,
    persons: Persons::BoundRows,
    pseudonyms: false,
    diagnostics_score: Some("IPA's node score (the utility score by default; the chosen node is drawn with the exponential mechanism, so it need not be the best)"),
    configure: params::configure,
};

/// IPA configured for one release.
#[derive(Debug, Clone, PartialEq)]
pub struct Ipa {
    /// The algorithm's parameters.
    pub params: IpaParams,
    /// Largest lattice to evaluate.
    pub max_nodes: usize,
    /// `min_levels` / `max_levels`.
    pub level_bounds: LevelBounds,
}

impl Method for Ipa {
    fn spec(&self) -> &'static MethodSpec {
        &METHOD
    }

    /// With `counterfeit_values => 'marginal'` every value of the domain gets a noisy count.
    fn wants_public_value_domain(&self) -> bool {
        self.params.counterfeit_values == CounterfeitValues::Marginal
    }

    /// The total the paper's Theorem 9 claims (δ = 0), although that claim does not hold.
    fn budget(&self) -> Cost {
        Cost {
            epsilon: self.params.claimed_epsilon(),
            delta: 0.0,
        }
    }

    fn max_nodes(&self) -> usize {
        self.max_nodes
    }

    fn publishes_interval_means(&self) -> bool {
        self.params.eps_means > 0.0
    }

    fn level_bounds(&self) -> &LevelBounds {
        &self.level_bounds
    }

    fn named_columns(&self) -> Vec<(&'static str, &str)> {
        self.params
            .qi_weights
            .iter()
            .map(|(name, _)| ("qi_weights", name.as_str()))
            .collect()
    }

    fn diagnostics_schema(&self) -> SchemaRef {
        ipa_diagnostics_schema()
    }

    /// Every released class (at most the phase-1 classes, plus the suppressed class) gets
    /// `max(0, Z)` counterfeits, `Z` discrete Laplace of scale `1/ε_ins`.
    fn release_size(&self, input: &MethodInput<'_>) -> Result<ReleaseSize> {
        let rows = input.histogram.total();
        let classes = input.histogram.class_count() as u64 + 1;
        let scale = ExactScale::from_sensitivity_epsilon(1, self.params.eps_ins)?;
        let noise = PositiveNoise::discrete_laplace(scale.as_f64());
        Ok(ReleaseSize {
            expected: rows as f64 + classes as f64 * noise.mean(),
            upper: rows as f64 + noise.sum_upper_bound(classes, SIZE_FAILURE),
            cause: format!(
                "epsilon_ins = {} adds about {:.1} counterfeit rows to each of up to {classes} classes",
                self.params.eps_ins,
                noise.mean()
            ),
        })
    }

    fn run(&self, input: &MethodInput<'_>, rng: &mut AnonRng) -> Result<MethodOutput> {
        let result = run(input, &self.params, rng)?;
        Ok(MethodOutput {
            node: result.outcomes[result.chosen].node.clone(),
            metadata: ipa_metadata(
                &self.params,
                input.lattice,
                result.score_sensitivity,
                input.sensitive.leaf_domain(),
            ),
            diagnostics: ipa_diagnostics_batch(&result, input.lattice)?,
            release: result.release,
            catalog: None,
            interval_means: result.interval_means,
            own_rows: None,
        })
    }
}

/// Runs IPA on validated parameters (`IpaParams::validate`, called when the method is
/// configured); `input.progress` hears of every lattice node as it finishes.
///
/// `node_score => 'paper'`: Algorithm 1 on every node, the exponential mechanism on their
/// information loss (Algorithm 2). `'utility'`: the utility score of every node on its true
/// class sizes, the exponential mechanism on it, then Algorithm 1 once at the chosen node
/// (docs/METHODS.md §1.13).
pub fn run(input: &MethodInput<'_>, params: &IpaParams, rng: &mut AnonRng) -> Result<IpaResult> {
    if input.histogram.total() == 0 {
        return exec_err!("cannot anonymize an empty table");
    }
    match params.node_score {
        NodeScore::Paper => run_paper_score(input, params, rng),
        NodeScore::Utility => run_utility_score(input, params, rng),
    }
}

/// `node_score => 'utility'`: score every node on its true class sizes, choose one with the
/// exponential mechanism at `ε_cand` and the score's sensitivity, perturb it once.
fn run_utility_score(
    input: &MethodInput<'_>,
    params: &IpaParams,
    rng: &mut AnonRng,
) -> Result<IpaResult> {
    let (base, hierarchies, value_domain) =
        (input.histogram, input.hierarchies, input.value_domain);
    let model = UtilityModel::new(params)?;
    let workload = match &params.workload {
        Some(spec) => Some(Workload::resolve(spec, hierarchies)?),
        None => None,
    };
    let weights = attribute_weights(hierarchies, &params.qi_weights, workload.as_ref())?;
    let utilities = score_nodes(input, &weights, workload.as_ref(), &model)?;
    let scores: Vec<f64> = utilities.iter().map(|u| u.score).collect();
    let pick = exponential_mechanism(rng, &scores, params.eps_cand, model.sensitivity)?;
    let nodes = input.lattice.nodes();
    let hist = base.roll_up(hierarchies, &nodes[pick], value_domain)?;
    let scales = Scales::new(params)?;
    let mut stream = derive_child(rng);
    let values = match &params.counterfeit_by {
        Some(column) => Some(labelled_values(
            &hist,
            hierarchies,
            column,
            value_domain,
            params,
            &mut stream,
        )?),
        None => {
            marginal_values(base, value_domain, params, &mut stream)?.map(CounterfeitDraw::Marginal)
        }
    };
    let (outcome, release) = perturb_node(
        &hist,
        hierarchies,
        value_domain,
        params,
        &scales,
        values.as_ref(),
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

/// The utility score of every lattice node of `input` (lattice order), from class sizes
/// only.
pub fn score_nodes(
    input: &MethodInput<'_>,
    weights: &[f64],
    workload: Option<&Workload>,
    model: &UtilityModel,
) -> Result<Vec<NodeUtility>> {
    let sizes = input.histogram.class_sizes();
    let hierarchies = input.hierarchies;
    sweep(input, &sizes, 1).run(
        |_, _| None,
        |_, hist| Ok(node_utility(hist, hierarchies, weights, workload, model)),
        |_| true,
    )
}

/// The lattice sweep over `base` (the source's histogram, or its class sizes) with the
/// input's lattice, threads and progress.
fn sweep<'a>(
    input: &'a MethodInput<'a>,
    base: &'a GroupedHistogram,
    value_domain: usize,
) -> Sweep<'a> {
    Sweep {
        base,
        hierarchies: input.hierarchies,
        lattice: input.lattice,
        value_domain,
        threads: input.threads,
        progress: input.progress,
        memory: &input.memory,
    }
}

/// `node_score => 'paper'`: Algorithm 1 on every node with its own stream, the exponential
/// mechanism on the candidates' information loss, and the chosen node's stream replayed.
fn run_paper_score(
    input: &MethodInput<'_>,
    params: &IpaParams,
    rng: &mut AnonRng,
) -> Result<IpaResult> {
    let (base, hierarchies, value_domain) =
        (input.histogram, input.hierarchies, input.value_domain);
    let scales = Scales::new(params)?;
    let marginal = marginal_values(base, value_domain, params, rng)?.map(CounterfeitDraw::Marginal);
    let nodes = input.lattice.nodes();
    let streams: Vec<AnonRng> = nodes.iter().map(|_| derive_child(rng)).collect();
    let outcomes = sweep(input, base, value_domain).run(
        |_, _| None,
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
        |_| true,
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

/// The most cells the histogram of `counterfeit_by` may have (labels × values).
const MAX_LABELLED_CELLS: usize = 1 << 24;

/// The noisy histogram of (`column`'s label at the chosen node, value) counterfeits draw
/// from with `counterfeit_by`.
fn labelled_values(
    hist: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    column: &str,
    value_domain: usize,
    params: &IpaParams,
    rng: &mut AnonRng,
) -> Result<CounterfeitDraw> {
    let Some(attr) = hierarchies
        .iter()
        .position(|h| h.attribute().eq_ignore_ascii_case(column))
    else {
        let names: Vec<&str> = hierarchies.iter().map(|h| h.attribute()).collect();
        return plan_err!(
            "counterfeit_by: '{column}' is not a quasi-identifier; use one of {}",
            names.join(", ")
        );
    };
    let labels = hierarchies[attr].level(hist.levels[attr]).cardinality();
    let cells = labels.saturating_mul(value_domain);
    if cells > MAX_LABELLED_CELLS {
        return plan_err!(
            "counterfeit_by: '{column}' has {labels} labels at the chosen level and the informative column {value_domain} values, {cells} cells in all (at most {MAX_LABELLED_CELLS}); name a coarser column"
        );
    }
    Ok(CounterfeitDraw::Labelled(LabelledValues::new(
        hist,
        attr,
        labels,
        value_domain,
        params.eps_val,
        rng,
    )?))
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
