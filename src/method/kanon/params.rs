//! k-anonymity's parameters: the table `anonymize(method => 'kanon', ...)` accepts, their
//! validation and the configured method.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{plan_err, Result};

use super::{
    kanon_diagnostics_batch, kanon_diagnostics_schema, kanon_metadata, parse_qi_weights,
    KanonParams, MetricKind, SearchStrategy, SuppressionMode, DEFAULT_K, DEFAULT_KANON_MAX_NODES,
    DEFAULT_SUPPRESSION_LIMIT, METRIC_NAMES,
};
use crate::budget::Cost;
use crate::lattice::LevelBounds;
use crate::mechanism::rng::AnonRng;
use crate::method::{
    level_bounds, max_nodes, Method, MethodArgs, MethodInput, MethodOutput, MethodSpec, MAX_LEVELS,
    MIN_LEVELS,
};
use crate::params::{ParamDefault, ParamKind, ParamSpec};
use crate::privacy::models::{model_spec, ClassModels, C, L, L_MODEL, T, T_MODEL};
use crate::sensitive::SensitiveSpec;

/// Why a deterministic method refuses the randomized methods' arguments.
const NO_BUDGET: &str = "k-anonymization is deterministic and has no privacy budget";

/// Optimal k-anonymity in the method registry.
pub const METHOD: MethodSpec = MethodSpec {
    name: "kanon",
    about: "optimal full-domain k-anonymity with record or cell suppression (least NCP or ARX metric, pruned search); deterministic, no differential privacy",
    params: &[
        ParamSpec::new(
            "max_nodes",
            ParamKind::Count,
            ParamDefault::Integer(DEFAULT_KANON_MAX_NODES as u64),
            "largest lattice to search (the product of the hierarchy heights + 1)",
        ),
        MIN_LEVELS,
        MAX_LEVELS,
        ParamSpec::new(
            "k",
            ParamKind::Integer,
            ParamDefault::Integer(DEFAULT_K),
            "smallest size of a released class",
        ),
        ParamSpec::new(
            "suppression_limit",
            ParamKind::Number,
            ParamDefault::Number(DEFAULT_SUPPRESSION_LIMIT),
            "largest fraction of records in classes smaller than k (suppressed as records or cells)",
        ),
        ParamSpec::new(
            "metric",
            ParamKind::Choice(METRIC_NAMES),
            ParamDefault::Text("ncp"),
            "utility metric to minimize: NCP or one of ARX's (loss, precision, discernibility, entropy, aecs, height)",
        ),
        ParamSpec::new(
            "suppression",
            ParamKind::Choice(&["record", "cell"]),
            ParamDefault::Text("record"),
            "what classes smaller than k lose: whole records, or single values (cells) first",
        ),
        ParamSpec::new(
            "qi_weights",
            ParamKind::Text,
            ParamDefault::Optional("all quasi-identifiers equally important"),
            "importance 'col=weight, ...' (others 1): ARX attribute weights of loss, precision, entropy and height; cell suppression takes the least important first",
        ),
        ParamSpec::new(
            "search",
            ParamKind::Choice(&["pruned", "exhaustive"]),
            ParamDefault::Text("pruned"),
            "pruned best-first search (same optimum) or every node checked",
        ),
        L,
        L_MODEL,
        C,
        T,
        T_MODEL,
    ],
    refuses: &[("epsilon", NO_BUDGET), ("seed", NO_BUDGET)],
    configure,
};

fn configure(args: &MethodArgs<'_>) -> Result<Arc<dyn Method>> {
    let values = args.values;
    let models = model_spec(values, args.has_informative)?;
    let metric = MetricKind::parse(values.text("metric")?)?;
    let Some(suppression) = SuppressionMode::parse(values.text("suppression")?) else {
        return plan_err!("suppression must be 'record' or 'cell'");
    };
    let Some(search) = SearchStrategy::parse(values.text("search")?) else {
        return plan_err!("search must be 'pruned' or 'exhaustive'");
    };
    let weights = match values.opt_text("qi_weights") {
        Some(text) => parse_qi_weights(text, args.qi)?,
        None => Vec::new(),
    };
    let params = KanonParams {
        k: values.u64("k")?,
        suppression_limit: values.f64("suppression_limit")?,
        metric,
        suppression,
        search,
        weights,
        models,
        threads: 1,
    };
    params.validate()?;
    Ok(Arc::new(Kanon {
        params,
        max_nodes: max_nodes(values)?,
        level_bounds: level_bounds(values)?,
    }))
}

/// k-anonymization configured for one release.
#[derive(Debug, Clone, PartialEq)]
pub struct Kanon {
    /// The algorithm's parameters.
    pub params: KanonParams,
    /// Largest lattice to search.
    pub max_nodes: usize,
    /// `min_levels` / `max_levels`.
    pub level_bounds: LevelBounds,
}

impl Method for Kanon {
    fn name(&self) -> &'static str {
        METHOD.name
    }

    fn budget(&self) -> Cost {
        Cost {
            epsilon: 0.0,
            delta: 0.0,
        }
    }

    fn max_nodes(&self) -> usize {
        self.max_nodes
    }

    fn level_bounds(&self) -> &LevelBounds {
        &self.level_bounds
    }

    fn diagnostics_schema(&self) -> SchemaRef {
        kanon_diagnostics_schema()
    }

    fn run(&self, input: &MethodInput<'_>, _rng: &mut AnonRng) -> Result<MethodOutput> {
        let result = super::run(
            input.histogram,
            input.hierarchies,
            input.lattice,
            input.value_domain,
            &KanonParams {
                threads: input.threads,
                ..self.params.clone()
            },
            &ClassModels::new(
                &self.params.models,
                input.histogram,
                input.sensitive,
                METHOD.name,
            )?,
            input.progress,
        )?;
        let metric = &result.metric;
        let display = |s| metric.display(s);
        Ok(MethodOutput {
            node: result.outcomes[result.chosen].node.clone(),
            metadata: kanon_metadata(&self.params, input.lattice, input.sensitive, &result),
            diagnostics: kanon_diagnostics_batch(&result.outcomes, result.chosen, &display)?,
            release: result.release,
            catalog: None,
            interval_means: None,
        })
    }

    fn max_sensitive_columns(&self) -> usize {
        usize::MAX
    }

    fn check_sensitive(&self, columns: &[SensitiveSpec]) -> Result<()> {
        self.params.models.check_columns(columns)
    }
}
