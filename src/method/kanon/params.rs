//! k-anonymity's parameters: the table `anonymize(method => 'kanon', ...)` accepts, their
//! validation and `configure`, which turns checked arguments into the
//! configured method (defined in mod.rs).

use std::sync::Arc;

use datafusion::common::{plan_err, Result};

use super::ClassRule;
use super::Kanon;
use super::{
    parse_qi_weights, MetricKind, SearchStrategy, SuppressionMode, DEFAULT_K,
    DEFAULT_KANON_MAX_NODES, DEFAULT_SUPPRESSION_LIMIT, METRIC_NAMES,
};
use crate::method::{level_bounds, max_nodes, Method, MethodArgs, MAX_LEVELS, MIN_LEVELS};
use crate::params::{ParamDefault, ParamKind, ParamSpec};
use crate::privacy::models::ModelSpec;
use crate::privacy::models::{model_spec, ClassModels, C, L, L_MODEL, T, T_MODEL};

/// Why a deterministic method refuses the randomized methods' arguments.
const NO_BUDGET: &str = "k-anonymization is deterministic and has no privacy budget";

/// The parameters of `anonymize(method => 'kanon', ...)`, in the order help lists them.
pub(super) const PARAMS: &[ParamSpec] = &[
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
];

/// Arguments of other methods 'kanon' refuses, with the reason.
pub(super) const REFUSES: &[(&str, &str)] = &[("epsilon", NO_BUDGET), ("seed", NO_BUDGET)];

pub(super) fn configure(args: &MethodArgs<'_>) -> Result<Arc<dyn Method>> {
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
    };
    params.validate()?;
    Ok(Arc::new(Kanon {
        params,
        max_nodes: max_nodes(values)?,
        level_bounds: level_bounds(values)?,
    }))
}

/// Parameters of a k-anonymization.
#[derive(Debug, Clone, PartialEq)]
pub struct KanonParams {
    /// Smallest size of a released (non-suppressed) class.
    pub k: u64,
    /// Largest fraction of records that may be in failing classes, in `[0, 1]`.
    pub suppression_limit: f64,
    /// The utility metric to minimize.
    pub metric: MetricKind,
    /// Record or cell suppression.
    pub suppression: SuppressionMode,
    /// Pruned or exhaustive search.
    pub search: SearchStrategy,
    /// Importance of each quasi-identifier, in quasi-identifier order (empty: all equal).
    pub weights: Vec<f64>,
    /// ℓ-diversity and t-closeness every released class must meet besides `k`.
    pub models: ModelSpec,
}

impl Default for KanonParams {
    fn default() -> Self {
        Self {
            k: DEFAULT_K,
            suppression_limit: DEFAULT_SUPPRESSION_LIMIT,
            metric: MetricKind::Ncp,
            suppression: SuppressionMode::Record,
            search: SearchStrategy::Pruned,
            weights: Vec::new(),
            models: ModelSpec::default(),
        }
    }
}

impl KanonParams {
    #[cfg(test)]
    /// Record-mode NCP parameters with the given `k` and limit.
    pub fn new(k: u64, suppression_limit: f64) -> Self {
        Self {
            k,
            suppression_limit,
            ..Self::default()
        }
    }

    /// Checks `k >= 1`, `0 <= suppression_limit <= 1` and the weights (finite,
    /// non-negative, a positive sum).
    pub fn validate(&self) -> Result<()> {
        if self.k == 0 {
            return plan_err!("k must be at least 1, got 0");
        }
        if !(self.suppression_limit.is_finite() && (0.0..=1.0).contains(&self.suppression_limit)) {
            return plan_err!(
                "suppression_limit must be a fraction between 0 and 1, got {}",
                self.suppression_limit
            );
        }
        if let Some(w) = self.weights.iter().find(|w| !(w.is_finite() && **w >= 0.0)) {
            return plan_err!("qi_weights: weights must be finite and non-negative, got {w}");
        }
        // As IPA: all-zero weights make every node's metric alike (and cell suppression's
        // order arbitrary).
        if !self.weights.is_empty() && self.weights.iter().sum::<f64>() <= 0.0 {
            return plan_err!("qi_weights: the weights must have a positive sum");
        }
        self.models.validate()
    }

    /// Largest number of records that may be suppressed out of `total`.
    pub fn max_suppressed(&self, total: u64) -> u64 {
        (self.suppression_limit * total as f64).floor() as u64
    }

    /// The per-class privacy test: `k` and the models checked by `models`.
    pub fn rule(&self, models: &ClassModels) -> ClassRule {
        ClassRule::new(self.k, models.clone())
    }

    /// The weight of every one of `attrs` quasi-identifiers.
    pub(super) fn weights_for(&self, attrs: usize) -> Vec<f64> {
        if self.weights.len() == attrs {
            self.weights.clone()
        } else {
            vec![1.0; attrs]
        }
    }
}
