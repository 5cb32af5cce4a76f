//! The DP histogram's parameters: the table `anonymize(method => 'dp_histogram', ...)`
//! accepts, their validation and `configure`, which turns checked arguments into the
//! configured method (defined in mod.rs).

use std::sync::Arc;

use datafusion::common::{plan_err, Result};

use super::DpHistogram;
use super::DEFAULT_MAX_CELLS;
use crate::lattice::parse_level_list;
use crate::mechanism::noise::ExactScale;
use crate::method::{
    check_levels_within_bounds, level_bounds, max_nodes, Method, MethodArgs, EPSILON, MAX_LEVELS,
    MIN_LEVELS, NODE_RULE_MAX_NODES, SEED,
};
use crate::params::{ParamDefault, ParamKind, ParamSpec};

/// The parameters of `anonymize(method => 'dp_histogram', ...)`, in the order help lists them.
pub(super) const PARAMS: &[ParamSpec] = &[
    EPSILON,
    NODE_RULE_MAX_NODES,
    SEED,
    MIN_LEVELS,
    MAX_LEVELS,
    ParamSpec::new(
        "levels",
        ParamKind::Text,
        ParamDefault::Optional("the first node by level sum with at most max_cells cells"),
        "the generalization node, 'col=level, ...' (columns not named stay at level 0); must lie within min_levels / max_levels",
    ),
    ParamSpec::new(
        "max_cells",
        ParamKind::Count,
        ParamDefault::Integer(DEFAULT_MAX_CELLS),
        "largest generalized domain (quasi-identifier combinations x informative values)",
    ),
];

/// Arguments of other methods 'dp_histogram' refuses, with the reason.
pub(super) const REFUSES: &[(&str, &str)] = &[];

pub(super) fn configure(args: &MethodArgs<'_>) -> Result<Arc<dyn Method>> {
    let values = args.values;
    let levels = match values.opt_text("levels") {
        Some(text) => Some(DpHistogramParams::parse_levels(text)?),
        None => None,
    };
    let params = DpHistogramParams {
        epsilon: values.f64("epsilon")?,
        levels,
        max_cells: values.u64("max_cells")?,
    };
    params.validate()?;
    let level_bounds = level_bounds(values)?;
    if let Some(levels) = &params.levels {
        check_levels_within_bounds(levels, &level_bounds)?;
    }
    Ok(Arc::new(DpHistogram {
        params,
        max_nodes: max_nodes(values)?,
        level_bounds,
    }))
}

/// Parameters of the DP histogram.
#[derive(Debug, Clone, PartialEq)]
pub struct DpHistogramParams {
    /// Privacy parameter: every cell gets discrete Laplace noise of scale `1/epsilon`.
    pub epsilon: f64,
    /// Requested levels by quasi-identifier name (others at level 0); `None` = default node.
    pub levels: Option<Vec<(String, usize)>>,
    /// Largest domain (cells) allowed.
    pub max_cells: u64,
}

impl DpHistogramParams {
    /// Parses `levels => 'age=1, sex=0'` ([`crate::lattice::parse_level_list`]).
    pub fn parse_levels(text: &str) -> Result<Vec<(String, usize)>> {
        Ok(parse_level_list("levels", text)?)
    }

    /// Checks that `epsilon` is positive and finite and that the exact noise scale `1/ε`
    /// exists (e.g. ε ≥ 2^-30).
    pub fn validate(&self) -> Result<()> {
        if !(self.epsilon.is_finite() && self.epsilon > 0.0) {
            return plan_err!(
                "epsilon must be a positive finite number, got {}",
                self.epsilon
            );
        }
        ExactScale::from_sensitivity_epsilon(1, self.epsilon)?;
        Ok(())
    }
}
