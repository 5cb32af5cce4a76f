//! SafePub's parameters: the table `anonymize(method => 'safepub', ...)` accepts, their
//! validation and the configured method.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{plan_err, Result};

use super::{
    safepub_diagnostics_batch, safepub_diagnostics_schema, safepub_metadata, FinalSelection,
    SafePubParams, ScoreFunction, SearchSample, DEFAULT_EPSILON_SEARCH, DEFAULT_STEPS,
};
use crate::budget::Cost;
use crate::lattice::LevelBounds;
use crate::mechanism::rng::AnonRng;
use crate::method::{
    level_bounds, Method, MethodArgs, MethodInput, MethodOutput, MethodSpec, EPSILON, MAX_LEVELS,
    MIN_LEVELS, SEED,
};
use crate::params::{ParamDefault, ParamKind, ParamSpec};
use crate::privacy::sampling_dp::calibrate;

/// SafePub in the method registry.
pub const METHOD: MethodSpec = MethodSpec {
    name: "safepub",
    about: "SafePub (Bild, Kuhn & Prasser 2018): truthful (epsilon, delta)-differential privacy by random sampling, full-domain generalization and suppression of classes below k, with a private top-down search",
    params: &[
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
            "number of search steps (at most 100000; memory does not grow with them)",
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
            ParamKind::Choice(&["last", "best"]),
            ParamDefault::Text("last"),
            "'last' (the last pivot, a function of the private choices only: proven) or 'best' (the best-scoring pivot, as in the paper and ARX: not proven, the guarantee text says so)",
        ),
        ParamSpec::new(
            "search_sample",
            ParamKind::Choice(&["independent", "shared"]),
            ParamDefault::Text("independent"),
            "'independent' (the search scores its own random sample, independent of the released one: proven) or 'shared' (the search scores the released sample, as in the paper and ARX: not proven, the guarantee text says so)",
        ),
    ],
    refuses: &[],
    configure,
};

fn configure(args: &MethodArgs<'_>) -> Result<Arc<dyn Method>> {
    let values = args.values;
    let mut params = SafePubParams::with_defaults(values.f64("epsilon")?, values.f64("delta")?);
    params.epsilon_search = values.f64("epsilon_search")?;
    params.steps = values.u64("steps")?;
    params.score = ScoreFunction::parse(values.text("score")?)?;
    params.arx_compat = values.bool("arx_compat")?;
    params.final_selection = FinalSelection::parse(values.text("final_selection")?)?;
    params.search_sample = SearchSample::parse(values.text("search_sample")?)?;
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
    fn name(&self) -> &'static str {
        METHOD.name
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
        let result = super::run(input, &self.params, rng)?;
        Ok(MethodOutput {
            node: result.search.chosen.clone(),
            metadata: safepub_metadata(&self.params, &result, input.lattice),
            diagnostics: safepub_diagnostics_batch(&result)?,
            release: result.release,
            catalog: None,
            interval_means: None,
        })
    }
}
