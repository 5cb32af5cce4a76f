//! MST's parameters: the table `anonymize(method => 'mst', ...)` accepts and their
//! validation (release.rs configures the method from them).

use datafusion::common::{plan_err, Result};

use super::budget::rho_for;
use crate::method::{EPSILON, MAX_LEVELS, MIN_LEVELS, NODE_RULE_MAX_NODES, SEED};
use crate::params::{ParamDefault, ParamKind, ParamSpec};

/// Default δ: private-pgm's, far below one over the number of records of any table the
/// engine handles.
pub const DEFAULT_DELTA: f64 = 1e-9;

/// Default largest 2-way marginal (cells of the two largest attribute domains).
pub const DEFAULT_MAX_CELLS: u64 = 100_000;

/// Default number of steps of the fit.
pub const DEFAULT_ITERATIONS: u64 = 100;

/// Largest number of steps of the fit one call may ask for: every step walks every edge's
/// marginal, so this bounds the work of one call with `max_cells`.
pub const MAX_ITERATIONS: u64 = 20_000;

/// Largest δ: a δ near one hides nothing.
pub const MAX_DELTA: f64 = 1e-3;

/// The parameters of `anonymize(method => 'mst', ...)`, in the order help lists them.
pub(super) const PARAMS: &[ParamSpec] = &[
    EPSILON,
    ParamSpec::new(
        "delta",
        ParamKind::Positive,
        ParamDefault::Number(DEFAULT_DELTA),
        "delta of (epsilon, delta)-differential privacy (at most 1e-3; choose it well below 1/rows)",
    ),
    NODE_RULE_MAX_NODES,
    SEED,
    MIN_LEVELS,
    MAX_LEVELS,
    ParamSpec::new(
        "levels",
        ParamKind::Text,
        ParamDefault::Optional("the first node by level sum whose largest 2-way marginal has at most max_cells cells"),
        "the generalization node, 'col=level, ...' (columns not named stay at level 0); must lie within min_levels / max_levels",
    ),
    ParamSpec::new(
        "max_cells",
        ParamKind::Count,
        ParamDefault::Integer(DEFAULT_MAX_CELLS),
        "largest 2-way marginal (values of one column x values of another, the informative column included) the model may hold",
    ),
    ParamSpec::new(
        "iterations",
        ParamKind::Count,
        ParamDefault::Integer(DEFAULT_ITERATIONS),
        "steps of the model's fit to the noisy marginals, which starts from the 2-way measurements' own tree distribution (at most 20000; post-processing, no privacy cost)",
    ),
];

/// Arguments of other methods 'mst' refuses, with the reason.
pub(super) const REFUSES: &[(&str, &str)] = &[];

/// Parameters of MST.
#[derive(Debug, Clone, PartialEq)]
pub struct MstParams {
    /// ε of (ε, δ)-differential privacy.
    pub epsilon: f64,
    /// δ of (ε, δ)-differential privacy.
    pub delta: f64,
    /// Requested levels by quasi-identifier name (others at level 0); `None` = default node.
    pub levels: Option<Vec<(String, usize)>>,
    /// Largest 2-way marginal allowed.
    pub max_cells: u64,
    /// Steps of the fit.
    pub iterations: u64,
}

impl MstParams {
    /// ρ of the zCDP guarantee that gives (ε, δ)-DP ([`rho_for`]).
    pub fn rho(&self) -> Result<f64> {
        match rho_for(self.epsilon, self.delta) {
            Some(rho) => Ok(rho),
            None => plan_err!(
                "epsilon = {} and delta = {} leave no zCDP budget: raise epsilon",
                self.epsilon,
                self.delta
            ),
        }
    }

    /// Checks ε, δ and the number of steps, and that ρ is positive.
    pub fn validate(&self) -> Result<()> {
        if !(self.epsilon.is_finite() && self.epsilon > 0.0) {
            return plan_err!(
                "epsilon must be a positive finite number, got {}",
                self.epsilon
            );
        }
        if !(self.delta > 0.0 && self.delta <= MAX_DELTA) {
            return plan_err!(
                "delta must be in (0, {MAX_DELTA}], got {}: it is the probability that the guarantee fails",
                self.delta
            );
        }
        if self.iterations > MAX_ITERATIONS {
            return plan_err!(
                "iterations must be at most {MAX_ITERATIONS}, got {}",
                self.iterations
            );
        }
        self.rho().map(|_| ())
    }
}
