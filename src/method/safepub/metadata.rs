//! SafePub's public metadata (with the `guarantee` text of docs/METHODS.md §2.12) and
//! owner-only diagnostics.

use super::sample::SearchSample;
use super::score::ScoreSuppression;
use super::search::{FinalSelection, SearchStrategy};
use super::{SafePubParams, SafePubResult, SUPPRESSION_WARNING_SHARE};
use crate::lattice::{node_label, Lattice};
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::Result;
use std::sync::Arc;

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
    let guarantee = guarantee_text(params, result, lattice.heights().len());
    let steps_run = match result.strategy {
        SearchStrategy::Exhaustive => 0,
        _ => result.search.steps.len().saturating_sub(1),
    };
    let (walk, last) = match result.strategy {
        SearchStrategy::Exhaustive => (0.0, params.epsilon_search),
        _ => params.final_selection.split(params.epsilon_search),
    };
    let mut out: Vec<(String, String)> = vec![
        ("epsilon".into(), format!("{}", params.epsilon)),
        ("epsilon_anon".into(), format!("{epsilon_anon}")),
        ("epsilon_search".into(), format!("{}", params.epsilon_search)),
        (
            "epsilon_per_step".into(),
            format!("{}", walk / params.steps.max(1) as f64),
        ),
        ("epsilon_final".into(), format!("{last}")),
        ("delta".into(), format!("{}", params.delta)),
        ("delta_delivered".into(), format!("{:e}", c.delta_delivered)),
        ("beta".into(), format!("{}", c.beta)),
        ("k".into(), c.k.to_string()),
        ("k_rule".into(), k_rule),
        ("steps".into(), params.steps.to_string()),
        ("steps_run".into(), steps_run.to_string()),
        ("score".into(), params.score.name().into()),
        ("score_suppression".into(), params.suppression.name().into()),
        (
            "score_sensitivity".into(),
            format!(
                "{}",
                params.score_sensitivity(c.k, lattice.heights().len())
            ),
        ),
        ("search".into(), result.strategy.name().into()),
        ("final_selection".into(), params.final_selection.name().into()),
        ("search_sample".into(), params.search_sample.name().into()),
        ("smoothness_epsilon".into(), format!("{}", params.smoothness_epsilon())),
        ("smoothness_delta".into(), format!("{:e}", result.smoothness_delta)),
        (
            "suppression".into(),
            "every released record (generalized quasi-identifiers with its informative value) that occurs fewer than k times in the sample is removed from the release (not released as '*')".into(),
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

/// The `guarantee` metadata text. For the proven configuration (the defaults) it states
/// exactly the theorem of docs/METHODS.md §2.12; otherwise it says plainly what is not
/// proven.
pub fn guarantee_text(params: &SafePubParams, result: &SafePubResult, attrs: usize) -> String {
    let c = &result.calibration;
    let epsilon_anon = params.epsilon_anon();
    let eps_prime = params.smoothness_epsilon();
    let common = format!(
        "delta = {delta:e} is an upper bound on d(k, beta, epsilon_anon) computed with interval arithmetic (requested {requested}). \
         Probabilistic form: for neighbouring inputs (one record added or removed) the e^epsilon bound on output probabilities \
         holds except with probability at most delta.",
        delta = c.delta_delivered,
        requested = params.delta,
    );
    let release_step = format!(
        "the release step: a fresh random sample (each record kept with probability beta = {beta}), generalized to the \
         chosen levels, every released record (generalized quasi-identifiers with its informative value) occurring fewer \
         than k = {k} times removed",
        beta = c.beta,
        k = c.k,
    );
    let truthful = "Truthful: every released row is a real input record with its quasi-identifiers generalized; no value is \
                    perturbed or invented.";
    let per_record = params.score.epsilon_excess_per_record(
        params.epsilon_search,
        c.k,
        attrs,
        params.suppression,
    );
    let excess = match per_record == 0.0 {
        true => "The exponential mechanism is exact and this score is an exact integer, so epsilon_search holds \
                 exactly."
            .to_string(),
        false => format!(
            "The exponential mechanism is exact; this score is computed in floating point from exact integer sums, so \
             with N input records epsilon_search is exceeded by at most N x {per_record:.1e} (docs/METHODS.md section 2.10)."
        ),
    };
    let search_step = match (result.strategy, params.final_selection) {
        (SearchStrategy::Exhaustive, _) => format!(
            "every scheme of the lattice is scored on it, and the released levels are drawn by the exponential mechanism \
             at epsilon_search = {} with the score's sensitivity",
            params.epsilon_search
        ),
        (_, FinalSelection::Exponential) => {
            let (walk, last) = params.final_selection.split(params.epsilon_search);
            format!(
                "a top-down walk draws its pivots by the exponential mechanism at {walk} / steps each with the score's \
                 sensitivity (SafePub Theorem 10), and the released levels are drawn by the exponential mechanism at {last} \
                 among every scheme the walk scored (a set determined by the pivots); {walk} + {last} = epsilon_search"
            )
        }
        _ => "every step is the exponential mechanism at epsilon_search / steps with the score's sensitivity, and the \
              released levels are its last pivot (SafePub Theorem 10)"
            .to_string(),
    };
    let graded = match params.suppression {
        ScoreSuppression::Graded => {
            " The score counts a group of s sampled records as min(s, max(0, 2s - c)) kept records, c = ceil(4k/3) (the \
             release keeps exactly the groups of at least k), so one record changes it by at most the number of \
             quasi-identifiers (docs/METHODS.md section 2.12, Lemma 2)."
        }
        ScoreSuppression::AtK => "",
    };
    if params.proven() {
        return format!(
            "({epsilon}, {delta:e})-differential privacy, proven by sequential composition (docs/METHODS.md section 2.12): \
             epsilon = epsilon_search + epsilon_anon = {search} + {epsilon_anon}. {common} \
             (1) The search is epsilon_search-differentially private: it scores its own random sample (each record kept with \
             probability beta, independently of the released sample); {search_step}.{graded} \
             (2) For any fixed levels, {release_step}, is (epsilon_anon, delta)-differentially private (SafePub Theorems 3 and 4, \
             from Li, Qardaji & Su); its randomness is independent of the search's. \
             Covered: the released rows and the search's outputs (its pivots and the drawn levels, so steps_run and everything computed from them); \
             a warning that most of the sample was suppressed is one bit about the released sample outside this accounting, \
             shown to the data owner only (anonymize_warnings). {truthful} \
             Smoothness (Theorem 11): the release step is also ({eps_prime}, {delta_prime:e})-differentially private, so the \
             whole release is ({eps_total}, {delta_prime:e})-differentially private by the same composition. {excess}",
            epsilon = params.epsilon,
            delta = c.delta_delivered,
            search = params.epsilon_search,
            delta_prime = result.smoothness_delta,
            eps_total = params.epsilon_search + eps_prime,
        );
    }
    let mut unproven = Vec::new();
    if params.final_selection == FinalSelection::Best {
        unproven.push(
            "final_selection => 'best' returns the pivot with the best score, an exact comparison of scores computed on the \
             data: the paper counts it as post-processing, but it is not a function of the private choices, so the levels \
             are not covered by Theorem 10",
        );
    }
    if params.search_sample == SearchSample::Shared {
        unproven.push(
            "search_sample => 'shared' scores the released sample itself (the paper's and ARX's behaviour): the search and \
             the release share their randomness, so the sequential composition that adds epsilon_search and epsilon_anon \
             does not apply",
        );
    }
    format!(
        "NOT PROVEN: ({epsilon}, {delta:e})-differential privacy with epsilon = epsilon_search + epsilon_anon = {search} + \
         {epsilon_anon} is the paper's claim for this configuration; it is not proven here: {why}. The defaults \
         (final_selection => 'exponential', search_sample => 'independent') are proven. What holds: for any fixed levels, \
         {release_step}, is (epsilon_anon, delta)-differentially private (SafePub Theorems 3 and 4); here the levels depend on \
         the data in a way no proof covers. {common} {truthful} {excess}",
        epsilon = params.epsilon,
        delta = c.delta_delivered,
        search = params.epsilon_search,
        why = unproven.join("; "),
    )
}

/// Schema of `anonymize_diagnostics` for SafePub: one row per search step. `score`,
/// `kept_records` and `classes` are the pivot's on the sample the search scored
/// (`sampled_records` records); `released_sample_records` is the size of the released
/// sample (the same sample when `search_sample => 'shared'`).
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
        Field::new("released_sample_records", DataType::UInt64, false),
    ]))
}

/// One diagnostics row per search step (step 0 = the top).
pub fn safepub_diagnostics_batch(result: &SafePubResult) -> Result<RecordBatch> {
    let steps = &result.search.steps;
    let u64s = |f: &dyn Fn(&super::search::SearchStep) -> u64| {
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
        u64s(&|_| result.search_sampled),
        u64s(&|_| result.input_rows),
        u64s(&|_| result.sampled),
    ];
    Ok(RecordBatch::try_new(safepub_diagnostics_schema(), columns)?)
}
