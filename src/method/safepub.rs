//! SafePub — truthful (ε, δ)-differentially private microdata (Bild, Kuhn & Prasser,
//! PoPETs 2018; thesis Ref. 1).
//!
//! 1. **Parameters** ([`crate::privacy::safepub_params`]): ε = ε_anon + ε_search; the
//!    sampling probability β = 1 − e^(−ε_anon) and the threshold k = d'(δ, β, ε_anon) are
//!    computed with interval arithmetic so that the δ delivered never exceeds the request.
//! 2. **Sampling** ([`sample`]): every record is kept with probability β (exact Bernoulli
//!    trials on the histogram's counts).
//! 3. **Search** ([`search`]): a top-down walk through the generalization lattice, each
//!    step an exponential-mechanism choice at ε_search / steps among the predecessors of
//!    the pivots so far, scored by one of the [`score`] functions on the sample
//!    ([`partition`]).
//! 4. **Release**: the sample generalized with the chosen scheme; every record whose class
//!    has fewer than k sampled records is suppressed.
//!
//! # What a suppressed record becomes
//!
//! Suppressed records are removed from the release, not published as `*` rows. The
//! privacy proof (Li, Qardaji & Su, SafePub Theorem 3) rests on a record in a class below
//! k leaving the output unchanged; a row of `*` would publish the number of such records
//! (and with it, on small data, whether a given record was sampled), which the theorem does
//! not cover. The scores still count suppressed and unsampled records as `*`, as in the
//! paper and ARX: that only affects which scheme is chosen and is covered by the
//! sensitivities.

mod params;
pub mod partition;
pub mod sample;
pub mod score;
pub mod search;

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{exec_err, internal_err, plan_err, Result};

use crate::lattice::{node_label, Lattice};
use crate::mechanism::rng::{derive_child, AnonRng};
use crate::method::MethodInput;
use crate::privacy::safepub_params::{
    beta_numerator, calibrate, smoothness_delta, SafePubCalibration, MIN_DELTA,
};
use crate::release::ReleasedHistogram;
pub use params::{SafePub, METHOD};
use partition::{Evaluator, SampleData};
pub use score::ScoreFunction;
pub use search::FinalSelection;
use search::{top_down_search, SearchResult};

/// Default ε of the search.
pub const DEFAULT_EPSILON_SEARCH: f64 = 0.1;

/// Default number of search steps.
pub const DEFAULT_STEPS: u64 = 300;

/// Largest number of search steps accepted.
pub const MAX_STEPS: u64 = 100_000;

/// Share of sampled records suppressed above which the metadata carries a warning.
pub const SUPPRESSION_WARNING_SHARE: f64 = 0.9;

/// Parameters of a SafePub run.
#[derive(Debug, Clone, PartialEq)]
pub struct SafePubParams {
    /// Total ε.
    pub epsilon: f64,
    /// ε spent on the search; the rest goes to sampling and suppression.
    pub epsilon_search: f64,
    /// Requested δ.
    pub delta: f64,
    /// Number of search steps.
    pub steps: u64,
    /// Score function.
    pub score: ScoreFunction,
    /// Use k + 1 as ARX does.
    pub arx_compat: bool,
    /// Best-scoring or last pivot.
    pub final_selection: FinalSelection,
}

impl SafePubParams {
    /// Parameters with the paper's defaults for everything but ε and δ.
    pub fn with_defaults(epsilon: f64, delta: f64) -> Self {
        Self {
            epsilon,
            epsilon_search: DEFAULT_EPSILON_SEARCH,
            delta,
            steps: DEFAULT_STEPS,
            score: ScoreFunction::Granularity,
            arx_compat: false,
            final_selection: FinalSelection::Best,
        }
    }

    /// ε of the sampling + suppression operator.
    pub fn epsilon_anon(&self) -> f64 {
        self.epsilon - self.epsilon_search
    }

    /// Checks the ranges of every parameter.
    pub fn validate(&self) -> Result<()> {
        if !(self.epsilon.is_finite() && self.epsilon > 0.0) {
            return plan_err!(
                "epsilon must be a positive finite number, got {}",
                self.epsilon
            );
        }
        if !(self.epsilon_search.is_finite()
            && self.epsilon_search > 0.0
            && self.epsilon_search < self.epsilon)
        {
            return plan_err!(
                "epsilon_search must be positive and smaller than epsilon = {}, got {}",
                self.epsilon,
                self.epsilon_search
            );
        }
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return plan_err!(
                "delta must lie strictly between 0 and 1 (e.g. 1e-6), got {}",
                self.delta
            );
        }
        if self.delta < MIN_DELTA {
            return plan_err!(
                "delta = {:e} is below the smallest supported delta, {MIN_DELTA:e} (the search for k would not finish); choose a delta between {MIN_DELTA:e} and 1e-4, e.g. 1e-6",
                self.delta
            );
        }
        if self.steps > MAX_STEPS {
            return plan_err!("steps must be at most {MAX_STEPS}, got {}", self.steps);
        }
        Ok(())
    }

    /// The ε' at which the smoothness δ' is reported: 2, or twice ε_anon when that is
    /// larger (Theorem 11 needs ε' >= ε_anon).
    pub fn smoothness_epsilon(&self) -> f64 {
        (2.0f64).max(2.0 * self.epsilon_anon())
    }
}

/// Everything a SafePub run produces.
#[derive(Debug, Clone)]
pub struct SafePubResult {
    /// β, k and δ.
    pub calibration: SafePubCalibration,
    /// The search and its pivots.
    pub search: SearchResult,
    /// The released histogram.
    pub release: ReleasedHistogram,
    /// Records in the input.
    pub input_rows: u64,
    /// Records in the sample.
    pub sampled: u64,
    /// Upper bound on δ' at the smoothness ε'.
    pub smoothness_delta: f64,
}

impl SafePubResult {
    /// Sampled records suppressed by the chosen scheme.
    pub fn suppressed(&self) -> u64 {
        self.sampled - self.search.evaluation.kept
    }

    /// Whether more than [`SUPPRESSION_WARNING_SHARE`] of the sample was suppressed.
    pub fn mostly_suppressed(&self) -> bool {
        self.sampled == 0
            || self.suppressed() as f64 > SUPPRESSION_WARNING_SHARE * self.sampled as f64
    }
}

/// Runs SafePub on the leaf-level histogram of `input`.
pub fn run_safepub(
    input: &MethodInput<'_>,
    params: &SafePubParams,
    rng: &mut AnonRng,
) -> Result<SafePubResult> {
    params.validate()?;
    let input_rows = input.histogram.total();
    if input_rows == 0 {
        return exec_err!("cannot anonymize an empty table");
    }
    let calibration = calibrate(params.epsilon_anon(), params.delta, params.arx_compat)?;
    let smoothness =
        smoothness_delta(calibration.k, calibration.beta, params.smoothness_epsilon())?;
    let mut sample_rng = derive_child(rng);
    let mut search_rng = derive_child(rng);

    let sampled = sample::sample_histogram(
        input.histogram,
        beta_numerator(calibration.beta),
        &mut sample_rng,
    );
    let sample = SampleData::new(sampled, input_rows);
    let attrs = input.hierarchies.len();
    let mut evaluator = Evaluator::new(
        &sample,
        input.hierarchies,
        input.lattice,
        calibration.k,
        params.score,
        input.value_domain,
    );
    let search = top_down_search(
        &mut evaluator,
        input.lattice,
        params.steps,
        params.epsilon_search,
        params.score.sensitivity(calibration.k, attrs),
        params.final_selection,
        &mut search_rng,
        input.progress,
    )?;

    // The release: the sample at the chosen scheme, classes below k removed.
    let node = &search.chosen;
    let rolled = sample
        .histogram
        .roll_up(input.hierarchies, node, input.value_domain)?;
    let mut release = ReleasedHistogram::new(node.clone(), attrs);
    let mut pairs: Vec<(u32, u64)> = Vec::new();
    for c in 0..rolled.class_count() {
        if rolled.class_size(c) < calibration.k {
            continue;
        }
        let codes: Vec<u32> = (0..attrs).map(|a| rolled.class_codes[a][c]).collect();
        pairs.clear();
        pairs.extend(
            (rolled.class_offsets[c]..rolled.class_offsets[c + 1])
                .map(|p| (rolled.pair_values[p], rolled.pair_counts[p])),
        );
        release.push_class(&codes, &pairs, &[]);
    }
    if release.row_count() != search.evaluation.kept {
        return internal_err!(
            "safepub: the release of {node:?} keeps {} records, the search scored {}",
            release.row_count(),
            search.evaluation.kept
        );
    }
    Ok(SafePubResult {
        calibration,
        search,
        release,
        input_rows,
        sampled: sample.sampled,
        smoothness_delta: smoothness,
    })
}

/// SafePub's public metadata entries.
pub fn safepub_metadata(
    params: &SafePubParams,
    result: &SafePubResult,
    lattice: &Lattice,
) -> Vec<(String, String)> {
    let c = &result.calibration;
    let epsilon_anon = params.epsilon_anon();
    let k_rule = if params.arx_compat {
        format!(
            "arx_compat: k = d'(delta) + 1 = {} (ARX's value; the minimal k is {})",
            c.k, c.k_minimal
        )
    } else {
        format!(
            "minimal: k = d'(delta) = min{{k : d(k, beta, epsilon_anon) <= delta}} = {}",
            c.k
        )
    };
    let selection = match params.final_selection {
        FinalSelection::Best => {
            "The search returns the pivot with the best score, as in the paper and ARX. The paper \
             counts this comparison as post-processing; strictly it is not, since the scores are \
             computed on the sample (final_selection => 'last' returns the last pivot, a function \
             of the private choices only)."
        }
        FinalSelection::Last => {
            "The search returns its last pivot, a function of its differentially private choices \
             only (Theorem 10)."
        }
    };
    let guarantee = format!(
        "({epsilon}, {delta:e})-differential privacy: epsilon = epsilon_anon + epsilon_search = {epsilon_anon} + {search}, \
         delta = {delta:e} (an upper bound on d(k, beta, epsilon_anon), computed with interval arithmetic; requested {requested}). \
         Probabilistic form: for neighbouring inputs (one record added or removed) the e^epsilon bound on output \
         probabilities holds except with probability at most delta (SafePub, Bild, Kuhn & Prasser, Theorems 3, 4 and 10). \
         Truthful: every released row is a real input record, kept by random sampling with probability beta = {beta}, \
         its quasi-identifiers generalized to the chosen levels and its other released values unchanged; records in \
         classes with fewer than k = {k} sampled records are removed, and no value is perturbed or invented. \
         Smoothness (Theorem 11): the same release is also ({eps_prime}, {delta_prime:e})-differentially private. {selection} \
         The exponential mechanism runs in floating point: its epsilon excess over this search is at most {excess:.1e}.",
        epsilon = params.epsilon,
        delta = c.delta_delivered,
        search = params.epsilon_search,
        requested = params.delta,
        beta = c.beta,
        k = c.k,
        eps_prime = params.smoothness_epsilon(),
        delta_prime = result.smoothness_delta,
        excess = result.search.floating_point_excess(),
    );
    let steps_run = result.search.steps.len().saturating_sub(1);
    let mut out: Vec<(String, String)> = vec![
        ("epsilon".into(), format!("{}", params.epsilon)),
        ("epsilon_anon".into(), format!("{epsilon_anon}")),
        ("epsilon_search".into(), format!("{}", params.epsilon_search)),
        (
            "epsilon_per_step".into(),
            format!("{}", params.epsilon_search / params.steps.max(1) as f64),
        ),
        ("delta".into(), format!("{}", params.delta)),
        ("delta_delivered".into(), format!("{:e}", c.delta_delivered)),
        ("beta".into(), format!("{}", c.beta)),
        ("k".into(), c.k.to_string()),
        ("k_rule".into(), k_rule),
        ("steps".into(), params.steps.to_string()),
        ("steps_run".into(), steps_run.to_string()),
        ("score".into(), params.score.name().into()),
        (
            "score_sensitivity".into(),
            format!(
                "{}",
                params
                    .score
                    .sensitivity(c.k, lattice.heights().len())
            ),
        ),
        ("final_selection".into(), params.final_selection.name().into()),
        ("smoothness_epsilon".into(), format!("{}", params.smoothness_epsilon())),
        ("smoothness_delta".into(), format!("{:e}", result.smoothness_delta)),
        (
            "suppression".into(),
            "records of classes with fewer than k sampled records are removed from the release (not released as '*')".into(),
        ),
        ("lattice_nodes".into(), lattice.len().to_string()),
        ("guarantee".into(), guarantee),
    ];
    // Computed from the released rows alone (post-processing: no privacy cost).
    out.extend(crate::privacy::risk::release_risk(&result.release));
    if result.mostly_suppressed() {
        out.push((
            "warning".into(),
            format!(
                "more than {:.0}% of the sampled records were suppressed: the classes are too small for k = {}. \
                 Use fewer quasi-identifiers or coarser hierarchies (this warning is one bit about the sample size, \
                 outside the differential-privacy accounting)",
                SUPPRESSION_WARNING_SHARE * 100.0,
                c.k
            ),
        ));
    }
    out
}

/// Schema of `anonymize_diagnostics` for SafePub: one row per search step.
pub fn safepub_diagnostics_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("step", DataType::UInt64, false),
        Field::new("pivot", DataType::Utf8, false),
        Field::new("score", DataType::Float64, false),
        Field::new("candidates", DataType::UInt64, false),
        Field::new("kept_records", DataType::UInt64, false),
        Field::new("classes", DataType::UInt64, false),
        Field::new("chosen", DataType::Boolean, false),
        Field::new("sampled_records", DataType::UInt64, false),
        Field::new("input_records", DataType::UInt64, false),
    ]))
}

/// One diagnostics row per search step (step 0 = the top).
pub fn safepub_diagnostics_batch(result: &SafePubResult) -> Result<RecordBatch> {
    let steps = &result.search.steps;
    let u64s = |f: &dyn Fn(&search::SearchStep) -> u64| {
        Arc::new(UInt64Array::from_iter_values(steps.iter().map(f))) as ArrayRef
    };
    let chosen = &result.search.chosen;
    let columns: Vec<ArrayRef> = vec![
        u64s(&|s| s.step),
        Arc::new(StringArray::from_iter_values(
            steps.iter().map(|s| node_label(&s.pivot)),
        )),
        Arc::new(Float64Array::from_iter_values(
            steps.iter().map(|s| s.evaluation.score),
        )),
        u64s(&|s| s.candidates as u64),
        u64s(&|s| s.evaluation.kept),
        u64s(&|s| s.evaluation.classes),
        Arc::new(BooleanArray::from_iter(
            steps.iter().map(|s| Some(&s.pivot == chosen)),
        )),
        u64s(&|_| result.sampled),
        u64s(&|_| result.input_rows),
    ];
    Ok(RecordBatch::try_new(safepub_diagnostics_schema(), columns)?)
}

#[cfg(test)]
mod tests;
