//! UPA's parameters: the table `anonymize(method => 'upa', ...)` accepts, their validation
//! and `configure`, which turns checked arguments into the
//! configured method (defined in mod.rs).

use std::sync::Arc;

use datafusion::common::{plan_err, Result};

use super::Upa;
use super::{CounterfeitSa, DEFAULT_K};
use crate::method::{
    level_bounds, max_nodes, Method, MethodArgs, MAX_LEVELS, MAX_NODES, MIN_LEVELS, SEED,
};
use crate::params::{ParamDefault, ParamKind, ParamSpec};
use crate::privacy::models::ModelSpec;
use crate::privacy::models::{model_spec, C, L, L_MODEL, T, T_MODEL};

/// The parameters of `anonymize(method => 'upa', ...)`, in the order help lists them.
pub(super) const PARAMS: &[ParamSpec] = &[
    MAX_NODES,
    MIN_LEVELS,
    MAX_LEVELS,
    SEED,
    ParamSpec::new(
        "k",
        ParamKind::Integer,
        ParamDefault::Integer(DEFAULT_K),
        "smallest size of a released class, counterfeits included (at least 2)",
    ),
    ParamSpec::new(
        "h",
        ParamKind::Number,
        ParamDefault::Optional("none: every node is searched and h is the chosen node's largest degree (lowest RCE)"),
        "ceiling in (0, 1] on every record's generalization degree D(r)",
    ),
    ParamSpec::new(
        "counterfeit_sa",
        ParamKind::Choice(&["uniform", "constrained"]),
        ParamDefault::Text("uniform"),
        "sensitive value of a counterfeit: 'uniform' over the domain (the paper) or 'constrained' to values real records outside its class can conceal",
    ),
    L,
    L_MODEL,
    C,
    T,
    T_MODEL,
    ParamSpec::new(
        "levels",
        ParamKind::Text,
        ParamDefault::Optional("none: the whole lattice within the ceiling is searched"),
        "evaluate only this node, as 'column=level, ...' (others at level 0), e.g. to reproduce a given generalization",
    ),
];

/// Arguments of other methods 'upa' refuses, with the reason.
pub(super) const REFUSES: &[(&str, &str)] = &[(
    "epsilon",
    "UPA is syntactic (k-anonymity with an h-ceiling) and has no privacy budget",
)];

pub(super) fn configure(args: &MethodArgs<'_>) -> Result<Arc<dyn Method>> {
    if !args.has_informative {
        return plan_err!(
            "argument 'sensitive' (or its synonym 'informative') is required for method 'upa': the column released unchanged, whose values counterfeits draw and the catalog counts, e.g. sensitive => 'disease'"
        );
    }
    let values = args.values;
    let counterfeit_sa = match values.text("counterfeit_sa")? {
        "constrained" => CounterfeitSa::Constrained,
        _ => CounterfeitSa::Uniform,
    };
    let params = UpaParams {
        k: values.u64("k")?,
        h: values.opt_f64("h"),
        counterfeit_sa,
        levels: match values.opt_text("levels") {
            Some(text) => Some(crate::lattice::parse_level_list("levels", text)?),
            None => None,
        },
        models: model_spec(values, args.has_informative)?,
    };
    params.validate()?;
    Ok(Arc::new(Upa {
        params,
        max_nodes: max_nodes(values)?,
        level_bounds: level_bounds(values)?,
    }))
}

/// Parameters of a UPA release.
#[derive(Debug, Clone, PartialEq)]
pub struct UpaParams {
    /// Smallest class size, counterfeits included (at least 2).
    pub k: u64,
    /// Ceiling on every record's generalization degree, in `(0, 1]`; `None`: chosen.
    pub h: Option<f64>,
    /// Distribution of the counterfeits' sensitive values.
    pub counterfeit_sa: CounterfeitSa,
    /// Only this node (`column=level` pairs, others at 0) is evaluated; `None`: the lattice.
    pub levels: Option<Vec<(String, usize)>>,
    /// ℓ-diversity and t-closeness every class's real records must meet.
    pub models: ModelSpec,
}

impl UpaParams {
    /// Checks `k ≥ 2` and `0 < h ≤ 1`.
    pub fn validate(&self) -> Result<()> {
        if self.k < 2 {
            return plan_err!(
                "k must be at least 2 for method 'upa' (k = 1 needs no counterfeits), got {}",
                self.k
            );
        }
        if let Some(h) = self.h {
            if !(h.is_finite() && h > 0.0 && h <= 1.0) {
                return plan_err!(
                    "h must be a generalization degree in (0, 1] for method 'upa', got {h}"
                );
            }
        }
        self.models.validate()
    }
}
