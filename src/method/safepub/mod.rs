//! SafePub — truthful (ε, δ)-differentially private microdata (Bild, Kuhn & Prasser,
//! PoPETs 2018; thesis Ref. 1).
//!
//! 1. **Parameters** ([`crate::privacy::sampling_dp`]): ε = ε_anon + ε_search; the
//!    sampling probability β = 1 − e^(−ε_anon) and the threshold k = d'(δ, β, ε_anon) are
//!    computed with interval arithmetic so that the δ delivered never exceeds the request.
//! 2. **Sampling** ([`sample`]): every record is kept with probability β (exact Bernoulli
//!    trials on the histogram's counts). Two independent samples are drawn: one for the
//!    search and one for the release (`search_sample => 'shared'`, the paper's behaviour,
//!    searches the released sample instead).
//! 3. **Search** ([`search`]): on the search's sample ([`partition`]), scored by one of the
//!    [`score`] functions (granularity and intensity with graded suppression, sensitivity
//!    m). On a lattice of at most 20,000 schemes every scheme is scored and one is drawn by
//!    the exponential mechanism at ε_search; on a larger one, a top-down walk whose steps
//!    are exponential-mechanism choices among the predecessors of the pivots so far, and a
//!    final draw among every scheme the walk scored (`final_selection => 'last'` takes the
//!    last pivot; `'best'`, the paper's rule, the best-scoring one).
//! 4. **Release**: the released sample generalized with the chosen scheme; every record
//!    whose released form (generalized quasi-identifiers with its informative value) occurs
//!    fewer than k times in that sample is suppressed.
//!
//! With the defaults the release is (ε_search + ε_anon, δ)-differentially private by
//! sequential composition (docs/METHODS.md §2.12): the search is ε_search-DP on its own
//! sample, and for every fixed scheme the release is (ε_anon, δ)-DP by SafePub's Theorem 3.
//!
//! # What a suppressed record becomes
//!
//! Suppressed records are removed from the release, not published as `*` rows. The
//! privacy proof (Li, Qardaji & Su, SafePub Theorem 3) rests on a record whose released
//! form occurs fewer than k times leaving the output unchanged; a row of `*` would publish
//! the number of such records (and with it, on small data, whether a given record was
//! sampled), which the theorem does not cover. The scores still count suppressed and
//! unsampled records as `*`, as in the paper and ARX: that only affects which scheme is
//! chosen and is covered by the sensitivities.

mod evaluator;
mod metadata;
mod params;
pub mod partition;

pub use params::SafePubParams;
pub mod sample;
pub mod score;
pub mod search;

use datafusion::common::{exec_err, internal_err, Result};

use crate::budget::Cost;
use crate::lattice::{Lattice, LevelBounds};
use crate::mechanism::rng::{derive_child, AnonRng};
use crate::method::MethodInput;
use crate::method::{Guarantee, Input, Persons};
use crate::method::{Method, MethodOutput, MethodSpec};
use crate::privacy::sampling_dp::{
    beta_numerator, calibrate, smoothness_delta, SafePubCalibration, MIN_DELTA,
};
use crate::release::ReleasedHistogram;
use datafusion::arrow::datatypes::SchemaRef;
use evaluator::Evaluator;
pub use metadata::{safepub_diagnostics_batch, safepub_diagnostics_schema, safepub_metadata};
use partition::{Partition, SampleData};
pub use sample::SearchSample;
use score::Evaluation;
pub use score::ScoreFunction;
pub use search::FinalSelection;
pub use search::SearchStrategy;
use search::{exhaustive_search, top_down_search, SearchResult};

/// Default ε of the search.
pub const DEFAULT_EPSILON_SEARCH: f64 = 0.1;

/// Default number of search steps.
pub const DEFAULT_STEPS: u64 = 300;

/// Largest number of search steps accepted.
pub const MAX_STEPS: u64 = 100_000;

/// Largest number of candidates one search may draw its pivots from, summed over its steps
/// (each step's exponential mechanism weighs every candidate): about 20 s on one core
/// (measured: 10,000 steps over the 531,441-node lattice of 12 quasi-identifiers drew from
/// 4·10^8 candidates in 35 s). Checked from the lattice's shape before anything is drawn
/// ([`check_search_work`]).
pub const MAX_SEARCH_CANDIDATES: u64 = 200_000_000;

/// The most candidates a search of `steps` steps can draw from on `lattice`: a step adds at
/// most one predecessor per attribute that can still be generalized less and removes the
/// pivot, so step `s` draws from at most `min(nodes − 1, 1 + s·(a − 1))` candidates.
fn search_candidates_bound(steps: u64, nodes: u64, movable: u64) -> u64 {
    let mut total: u64 = 0;
    for s in 1..=steps {
        let at_step =
            (1 + s.saturating_mul(movable.saturating_sub(1))).min(nodes.saturating_sub(1));
        total = total.saturating_add(at_step);
        if at_step == 0 {
            break;
        }
    }
    total
}

/// Largest lattice `search => 'exhaustive'` scores (ten times the `auto` limit).
pub const MAX_EXHAUSTIVE_NODES: usize = 10 * search::EXHAUSTIVE_MAX_NODES;

/// Refuses an exhaustive search of more than [`MAX_EXHAUSTIVE_NODES`] schemes (the
/// lattice's shape is public).
pub fn check_exhaustive_work(lattice: &Lattice) -> Result<()> {
    let nodes = lattice.len();
    if nodes > MAX_EXHAUSTIVE_NODES {
        return exec_err!(
            "safepub: search => 'exhaustive' would score all {nodes} schemes of this lattice, more than {MAX_EXHAUSTIVE_NODES}; use search => 'top_down', or a smaller lattice (fewer quasi-identifiers, min_levels / max_levels)"
        );
    }
    Ok(())
}

/// Refuses a search whose draws would exceed [`MAX_SEARCH_CANDIDATES`], naming `steps` and
/// the most steps this lattice allows. Depends on the parameters and the lattice's shape
/// (the hierarchies' heights, public) only.
pub fn check_search_work(steps: u64, lattice: &Lattice) -> Result<()> {
    let nodes = lattice.len() as u64;
    let movable = lattice
        .min_levels()
        .iter()
        .zip(lattice.max_levels())
        .filter(|(min, max)| max > min)
        .count() as u64;
    let bound = search_candidates_bound(steps, nodes, movable);
    if bound <= MAX_SEARCH_CANDIDATES {
        return Ok(());
    }
    // The most steps within the bound (the bound grows with the steps).
    let (mut low, mut high) = (0u64, steps);
    while low < high {
        let mid = low + (high - low).div_ceil(2);
        if search_candidates_bound(mid, nodes, movable) <= MAX_SEARCH_CANDIDATES {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    exec_err!(
        "safepub: steps = {steps} would let the search draw its pivots from up to {bound} candidates in all on this lattice ({nodes} nodes, {movable} quasi-identifier(s) to generalize), more than {MAX_SEARCH_CANDIDATES}, the most one search may draw from; use steps => {low} or fewer, or a smaller lattice (fewer quasi-identifiers, min_levels / max_levels)"
    )
}

/// Share of sampled records suppressed above which the metadata carries a warning.
pub const SUPPRESSION_WARNING_SHARE: f64 = 0.9;

/// Everything a SafePub run produces.
#[derive(Debug, Clone)]
pub struct SafePubResult {
    /// β, k and δ.
    pub calibration: SafePubCalibration,
    /// The search and its pivots (scored on the search's sample).
    pub search: SearchResult,
    /// The search that ran (`auto` resolved).
    pub strategy: SearchStrategy,
    /// The released histogram.
    pub release: ReleasedHistogram,
    /// The chosen scheme evaluated on the released sample (its `kept` is the number of
    /// released rows).
    pub released: Evaluation,
    /// Records in the input.
    pub input_rows: u64,
    /// Records in the released sample.
    pub sampled: u64,
    /// Records in the sample the search scored (the released one when it is shared).
    pub search_sampled: u64,
    /// Upper bound on δ' at the smoothness ε'.
    pub smoothness_delta: f64,
}

impl SafePubResult {
    /// Records of the released sample suppressed by the chosen scheme.
    pub fn suppressed(&self) -> u64 {
        self.sampled - self.released.kept
    }

    /// Whether more than [`SUPPRESSION_WARNING_SHARE`] of the sample was suppressed.
    pub fn mostly_suppressed(&self) -> bool {
        self.sampled == 0
            || self.suppressed() as f64 > SUPPRESSION_WARNING_SHARE * self.sampled as f64
    }
}

/// SafePub in the method registry.
pub const METHOD: MethodSpec = MethodSpec {
    name: "safepub",
    about: "SafePub (Bild, Kuhn & Prasser 2018): truthful (epsilon, delta)-differential privacy by random sampling, full-domain generalization and suppression of classes below k, with a private top-down search",
    params: params::PARAMS,
    refuses: params::REFUSES,
    guarantee: Guarantee::WholeReleaseDp,
    methods_section: "§2.12",
    input: Input::Lattice,
    persons: Persons::BoundRows,
    pseudonyms: false,
    diagnostics_score: Some("SafePub's score of each pivot of its search (higher is better)"),
    configure: params::configure,
};

/// SafePub configured for one release.
#[derive(Debug, Clone, PartialEq)]
pub struct SafePub {
    /// The algorithm's parameters.
    pub params: SafePubParams,
    /// Largest lattice to search.
    pub max_nodes: usize,
    /// `min_levels` / `max_levels`.
    pub level_bounds: LevelBounds,
}

impl Method for SafePub {
    fn spec(&self) -> &'static MethodSpec {
        &METHOD
    }

    /// A drawn scheme or the last pivot of a search on an independent sample (§2.12);
    /// `final_selection => 'best'` and `search_sample => 'shared'` are not proven.
    fn proven(&self) -> bool {
        self.params.proven()
    }

    /// The requested δ is charged; the delivered δ is never larger.
    fn budget(&self) -> Cost {
        Cost {
            epsilon: self.params.epsilon,
            delta: self.params.delta,
        }
    }

    fn max_nodes(&self) -> usize {
        self.max_nodes
    }

    fn level_bounds(&self) -> &LevelBounds {
        &self.level_bounds
    }

    fn diagnostics_schema(&self) -> SchemaRef {
        safepub_diagnostics_schema()
    }

    fn run(&self, input: &MethodInput<'_>, rng: &mut AnonRng) -> Result<MethodOutput> {
        let result = run(input, &self.params, rng)?;
        Ok(MethodOutput {
            node: result.search.chosen.clone(),
            metadata: safepub_metadata(&self.params, &result, input.lattice),
            diagnostics: safepub_diagnostics_batch(&result)?,
            release: result.release,
            catalog: None,
            interval_means: None,
            own_rows: None,
        })
    }
}

/// Runs SafePub on the leaf-level histogram of `input`, on validated parameters
/// (`SafePubParams::validate`, called when the method is configured).
pub fn run(
    input: &MethodInput<'_>,
    params: &SafePubParams,
    rng: &mut AnonRng,
) -> Result<SafePubResult> {
    // An empty table (a public release whose records were all left out) is released like
    // any other: the search runs on equal scores, the sample and the release are empty.
    let input_rows = input.histogram.total();
    let strategy = params
        .search
        .resolve(input.lattice.len(), params.final_selection);
    match strategy {
        SearchStrategy::Exhaustive => check_exhaustive_work(input.lattice)?,
        _ => check_search_work(params.steps, input.lattice)?,
    }
    let calibration = calibrate(params.epsilon_anon(), params.delta, params.arx_compat)?;
    let smoothness =
        smoothness_delta(calibration.k, calibration.beta, params.smoothness_epsilon())?;
    let mut sample_rng = derive_child(rng);
    let mut search_rng = derive_child(rng);
    let beta_num = beta_numerator(calibration.beta);

    // The released sample, and the search's own sample drawn with independent randomness
    // (the sequential composition of the search and the release needs it).
    let sample = SampleData::new(
        sample::sample_histogram(input.histogram, beta_num, &mut sample_rng),
        input_rows,
    );
    let search_sample = match params.search_sample {
        SearchSample::Shared => None,
        SearchSample::Independent => {
            let mut search_sample_rng = derive_child(rng);
            Some(SampleData::new(
                sample::sample_histogram(input.histogram, beta_num, &mut search_sample_rng),
                input_rows,
            ))
        }
    };
    let scored = search_sample.as_ref().unwrap_or(&sample);
    let attrs = input.hierarchies.len();
    let mut evaluator = Evaluator::new(
        scored,
        input.hierarchies,
        input.lattice,
        calibration.k,
        params.score,
        input.value_domain,
    )
    .with_suppression(params.suppression);
    if strategy == SearchStrategy::Exhaustive {
        evaluator = evaluator.with_cache_bytes(evaluator::EXHAUSTIVE_CACHE_BYTES);
    }
    let sensitivity = params.score_sensitivity(calibration.k, attrs);
    let search = match strategy {
        SearchStrategy::Exhaustive => exhaustive_search(
            &mut evaluator,
            input.lattice,
            params.epsilon_search,
            sensitivity,
            params.final_selection == FinalSelection::Best,
            &mut search_rng,
            input.progress,
        )?,
        _ => top_down_search(
            &mut evaluator,
            input.lattice,
            params.steps,
            params.epsilon_search,
            sensitivity,
            params.final_selection,
            &mut search_rng,
            input.progress,
        )?,
    };

    // The release: the released sample at the chosen scheme; every released record
    // (generalized quasi-identifiers with its informative value) occurring fewer than k
    // times is removed.
    let k = calibration.k;
    let node = &search.chosen;
    let rolled = sample
        .histogram
        .roll_up(input.hierarchies, node, input.value_domain)?;
    let mut release = ReleasedHistogram::new(node.clone(), attrs);
    let mut pairs: Vec<(u32, u64)> = Vec::new();
    for c in 0..rolled.class_count() {
        pairs.clear();
        pairs.extend(rolled.pairs(c).filter(|&(_, count)| count >= k));
        if pairs.is_empty() {
            continue;
        }
        let codes: Vec<u32> = (0..attrs).map(|a| rolled.class_codes[a][c]).collect();
        release.push_class(&codes, &pairs, &[]);
    }
    // The same scheme through the scores' path on the released sample: the scores see
    // exactly the release's suppression rule.
    let released = Evaluator::new(
        &sample,
        input.hierarchies,
        input.lattice,
        k,
        params.score,
        input.value_domain,
    )
    .score_partition(&Partition::from_scratch(
        &sample,
        input.hierarchies,
        node,
        k,
    ));
    let shared_differs = search_sample.is_none()
        && (released.kept, released.classes) != (search.evaluation.kept, search.evaluation.classes);
    if release.row_count() != released.kept || shared_differs {
        return internal_err!(
            "safepub: the release of {node:?} keeps {} records, its evaluation {}, the search's {}",
            release.row_count(),
            released.kept,
            search.evaluation.kept
        );
    }
    Ok(SafePubResult {
        calibration,
        search,
        strategy,
        release,
        released,
        input_rows,
        sampled: sample.sampled,
        search_sampled: scored.sampled,
        smoothness_delta: smoothness,
    })
}

#[cfg(test)]
mod graded_tests;
#[cfg(test)]
mod rounding_tests;
#[cfg(test)]
mod tests;
