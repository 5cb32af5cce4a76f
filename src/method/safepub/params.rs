//! SafePub's parameters: the table `anonymize(method => 'safepub', ...)` accepts, their
//! validation and `configure`, which turns checked arguments into the
//! configured method (defined in mod.rs).

use std::sync::Arc;

use datafusion::common::{plan_err, Result};

use super::score::ScoreSuppression;
use super::search::SearchStrategy;
use super::SafePub;
use super::{FinalSelection, ScoreFunction, SearchSample, DEFAULT_EPSILON_SEARCH, DEFAULT_STEPS};
use super::{MAX_STEPS, MIN_DELTA};
use crate::method::{level_bounds, Method, MethodArgs, EPSILON, MAX_LEVELS, MIN_LEVELS, SEED};
use crate::params::{ParamDefault, ParamKind, ParamSpec};
use crate::privacy::sampling_dp::calibrate;

/// The parameters of `anonymize(method => 'safepub', ...)`, in the order help lists them.
pub(super) const PARAMS: &[ParamSpec] = &[
    EPSILON,
    ParamSpec::new(
        "max_nodes",
        ParamKind::Count,
        ParamDefault::Optional("no limit: the search walks the lattice without enumerating it"),
        "largest lattice to search",
    ),
    SEED,
    MIN_LEVELS,
    MAX_LEVELS,
    ParamSpec::new(
        "epsilon_search",
        ParamKind::Positive,
        ParamDefault::Number(DEFAULT_EPSILON_SEARCH),
        "part of epsilon spent on the search; the rest (epsilon_anon) on sampling and suppression",
    ),
    ParamSpec::new(
        "delta",
        ParamKind::Number,
        ParamDefault::Required,
        "delta of (epsilon, delta)-differential privacy, e.g. delta => 1e-6 (a power of ten below 1/rows, at most 1e-4)",
    ),
    ParamSpec::new(
        "steps",
        ParamKind::Integer,
        ParamDefault::Integer(DEFAULT_STEPS),
        "number of search steps: at most 100000, and at most as many as keep the candidates the search draws from, summed over the steps, under 200000000 (about 6000 steps on the 531441-node lattice of 12 quasi-identifiers with 2 levels each; the error says how many); memory does not grow with them",
    ),
    ParamSpec::new(
        "score",
        ParamKind::Text,
        ParamDefault::Text("granularity"),
        "score of the search: 'granularity' (ARX: loss), 'intensity' (precision), 'discernibility', 'entropy' (non-uniform entropy proxy), 'group_size', 'classification' (class = the informative column)",
    ),
    ParamSpec::new(
        "arx_compat",
        ParamKind::Bool,
        ParamDefault::Bool(false),
        "use k = d'(delta) + 1 as ARX does (the minimal k otherwise)",
    ),
    ParamSpec::new(
        "final_selection",
        ParamKind::Choice(&["exponential", "last", "best"]),
        ParamDefault::Text("exponential"),
        "'exponential' (drawn by the exponential mechanism among every scheme the search scored, with half of epsilon_search after a top-down walk: proven), 'last' (the last pivot of the walk: proven) or 'best' (the best-scoring pivot, as in the paper and ARX: not proven, the guarantee text says so)",
    ),
    ParamSpec::new(
        "search",
        ParamKind::Choice(&["auto", "exhaustive", "top_down"]),
        ParamDefault::Text("auto"),
        "'exhaustive' (score every scheme of the lattice), 'top_down' (the paper's walk of `steps` steps) or 'auto': exhaustive when the lattice has at most 20000 schemes and final_selection is 'exponential'",
    ),
    ParamSpec::new(
        "score_suppression",
        ParamKind::Choice(&["graded", "at_k"]),
        ParamDefault::Optional("'graded' for the granularity and intensity scores with final_selection 'exponential', else 'at_k'"),
        "how the score counts a group of s records (the release keeps it when s >= k): 'graded' as min(s, max(0, 2s - c)) kept records with c = ceil(4k/3), a ramp centred on k, so the score's sensitivity is m instead of (k - 1)·m, or 'at_k' as s when s >= k and 0 below (the paper)",
    ),
    ParamSpec::new(
        "search_sample",
        ParamKind::Choice(&["independent", "shared"]),
        ParamDefault::Text("independent"),
        "'independent' (the search scores its own random sample, independent of the released one: proven) or 'shared' (the search scores the released sample, as in the paper and ARX: not proven, the guarantee text says so)",
    ),
];

/// Arguments of other methods 'safepub' refuses, with the reason.
pub(super) const REFUSES: &[(&str, &str)] = &[];

pub(super) fn configure(args: &MethodArgs<'_>) -> Result<Arc<dyn Method>> {
    let values = args.values;
    let mut params = SafePubParams::with_defaults(values.f64("epsilon")?, values.f64("delta")?);
    params.epsilon_search = values.f64("epsilon_search")?;
    params.steps = values.u64("steps")?;
    params.score = ScoreFunction::parse(values.text("score")?)?;
    params.arx_compat = values.bool("arx_compat")?;
    params.final_selection = FinalSelection::parse(values.text("final_selection")?)?;
    params.search_sample = SearchSample::parse(values.text("search_sample")?)?;
    params.search = SearchStrategy::parse(values.text("search")?)?;
    params.suppression = match values.opt_text("score_suppression") {
        Some(text) => ScoreSuppression::parse(text)?,
        None => params.default_suppression(),
    };
    if params.score == ScoreFunction::Classification && !args.has_informative {
        return plan_err!(
            "score 'classification' needs a class attribute: name it with informative => '<column>' (released unchanged, never generalized)"
        );
    }
    params.validate()?;
    // β, k and δ depend on the parameters only: a combination the calculation cannot
    // handle is a planning error, before anything is read or charged.
    calibrate(params.epsilon_anon(), params.delta, params.arx_compat)?;
    let max_nodes = values
        .opt_u64("max_nodes")
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    Ok(Arc::new(SafePub {
        params,
        max_nodes,
        level_bounds: level_bounds(values)?,
    }))
}

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
    /// Last pivot (default, proven) or best-scoring pivot (the paper's rule, not proven).
    pub final_selection: FinalSelection,
    /// The search's own sample (default, proven) or the released one (the paper's).
    pub search_sample: SearchSample,
    /// Every scheme, the top-down walk, or the first when the lattice is small.
    pub search: SearchStrategy,
    /// How the score counts groups below k.
    pub suppression: ScoreSuppression,
}

impl SafePubParams {
    /// Parameters with the defaults for everything but ε and δ: the paper's ε_search,
    /// steps and score, and the proven final selection (`last`) and search sample
    /// (`independent`).
    pub fn with_defaults(epsilon: f64, delta: f64) -> Self {
        Self {
            epsilon,
            epsilon_search: DEFAULT_EPSILON_SEARCH,
            delta,
            steps: DEFAULT_STEPS,
            score: ScoreFunction::Granularity,
            arx_compat: false,
            final_selection: FinalSelection::default(),
            search_sample: SearchSample::default(),
            search: SearchStrategy::default(),
            suppression: ScoreSuppression::Graded,
        }
    }

    /// Graded for granularity and intensity with the exponential final selection, else
    /// at k (so `last` and `best` score as before).
    pub fn default_suppression(&self) -> ScoreSuppression {
        let graded = ScoreSuppression::Graded;
        match graded.supports(self.score) && self.final_selection == FinalSelection::Exponential {
            true => graded,
            false => ScoreSuppression::AtK,
        }
    }

    /// Sensitivity of the search's score at threshold `k` over `attrs` quasi-identifiers.
    pub fn score_sensitivity(&self, k: u64, attrs: usize) -> f64 {
        self.score.sensitivity_with(self.suppression, k, attrs)
    }

    #[cfg(test)]
    /// The paper's and ARX's behaviour: the best-scoring pivot, searched on the released
    /// sample. Its privacy is the paper's claim, not proven here.
    pub fn paper(epsilon: f64, delta: f64) -> Self {
        Self {
            final_selection: FinalSelection::Best,
            search_sample: SearchSample::Shared,
            search: SearchStrategy::TopDown,
            suppression: ScoreSuppression::AtK,
            ..Self::with_defaults(epsilon, delta)
        }
    }

    /// Whether the configuration is one the privacy proof covers (docs/METHODS.md §2.12):
    /// a scheme drawn by the exponential mechanism, or the last pivot, of a search on an
    /// independent sample.
    pub fn proven(&self) -> bool {
        self.final_selection != FinalSelection::Best
            && self.search_sample == SearchSample::Independent
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
        if !self.suppression.supports(self.score) {
            return plan_err!(
                "score_suppression '{}' needs score 'granularity' or 'intensity' (score '{}' counts groups below k as suppressed: score_suppression => 'at_k')",
                self.suppression.name(),
                self.score.name()
            );
        }
        if self.search == SearchStrategy::Exhaustive && self.final_selection == FinalSelection::Last
        {
            return plan_err!(
                "search 'exhaustive' has no last pivot: use final_selection => 'exponential' (or search => 'top_down')"
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
