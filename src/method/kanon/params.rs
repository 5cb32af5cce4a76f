//! k-anonymity's parameters: the table `anonymize(method => 'kanon', ...)` accepts, their
//! validation and the configured method.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{plan_err, Result};

use super::{
    kanon_diagnostics_batch, kanon_diagnostics_schema, kanon_metadata, parse_qi_weights, run_kanon,
    KanonParams, MetricKind, SearchStrategy, SuppressionMode, DEFAULT_K, DEFAULT_KANON_MAX_NODES,
    DEFAULT_SUPPRESSION_LIMIT, METRIC_NAMES,
};
use crate::budget::Cost;
use crate::engine::SensitiveSpec;
use crate::lattice::LevelBounds;
use crate::mechanism::rng::AnonRng;
use crate::method::{
    level_bounds, max_nodes, Method, MethodArgs, MethodInput, MethodOutput, MethodSpec, MAX_LEVELS,
    MIN_LEVELS,
};
use crate::params::{ParamDefault, ParamKind, ParamSpec};
use crate::privacy::models::{ClassModels, LDiversity, LModel, ModelSpec, TModel};

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
        ParamSpec::new(
            "l",
            ParamKind::Count,
            ParamDefault::Optional("none: no l-diversity"),
            "l-diversity: every released class holds at least l well-represented values of each sensitive column (see l_model)",
        ),
        ParamSpec::new(
            "l_model",
            ParamKind::Choice(&["distinct", "entropy", "recursive"]),
            ParamDefault::Text("distinct"),
            "reading of l: 'distinct' values, 'entropy' (entropy >= ln l) or 'recursive' (c,l)-diversity (most frequent count < c x the sum of the l-th and rarer counts)",
        ),
        ParamSpec::new(
            "c",
            ParamKind::Positive,
            ParamDefault::Optional("required for l_model 'recursive'"),
            "the constant c of recursive (c,l)-diversity",
        ),
        ParamSpec::new(
            "t",
            ParamKind::Number,
            ParamDefault::Optional("none: no t-closeness"),
            "t-closeness: every released class's distribution of each sensitive column is within earth mover's distance t of the whole table's, t in (0, 1] (see t_model)",
        ),
        ParamSpec::new(
            "t_model",
            ParamKind::Choice(&["equal", "hierarchical", "ordered"]),
            ParamDefault::Text("equal"),
            "ground distance of t: 'equal' (any two values at distance 1), 'hierarchical' (the sensitive column's hierarchy: sensitive => 'col:table'), 'ordered' (numeric or date order, or the rows of sensitive => 'col:table')",
        ),
    ],
    refuses: &[("epsilon", NO_BUDGET), ("seed", NO_BUDGET)],
    configure,
};

fn configure(args: &MethodArgs<'_>) -> Result<Arc<dyn Method>> {
    let values = args.values;
    let l_model = match values.text("l_model")? {
        "entropy" => LModel::Entropy,
        "recursive" => match values.opt_f64("c") {
            Some(c) => LModel::Recursive { c },
            None => return plan_err!("l_model 'recursive' needs c (e.g. c => 3)"),
        },
        _ => LModel::Distinct,
    };
    if values.given("l_model") && !values.given("l") {
        return plan_err!("l_model needs l (e.g. l => 3)");
    }
    if values.given("c") && !matches!(l_model, LModel::Recursive { .. }) {
        return plan_err!("c applies only to l_model 'recursive'");
    }
    if values.given("t_model") && !values.given("t") {
        return plan_err!("t_model needs t (e.g. t => 0.2)");
    }
    let t_model = match values.text("t_model")? {
        "hierarchical" => TModel::Hierarchical,
        "ordered" => TModel::Ordered,
        _ => TModel::Equal,
    };
    let models = ModelSpec {
        l: values
            .opt_u64("l")
            .map(|l| LDiversity { l, model: l_model }),
        t: values.opt_f64("t").map(|t| (t, t_model)),
    };
    if !models.is_empty() && !args.has_informative {
        return plan_err!(
            "'{}' needs a sensitive column: name it with sensitive => '<column>'",
            if models.l.is_some() { "l" } else { "t" }
        );
    }
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
        let result = run_kanon(
            input.histogram,
            input.hierarchies,
            input.lattice,
            input.value_domain,
            &self.params,
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
        })
    }

    fn max_sensitive_columns(&self) -> usize {
        usize::MAX
    }

    fn check_sensitive(&self, columns: &[SensitiveSpec]) -> Result<()> {
        self.params.models.check_columns(columns)
    }
}
