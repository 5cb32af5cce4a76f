//! IPA's parameters: the table `anonymize(method => 'ipa', ...)` accepts, their validation
//! and `configure`, which turns checked arguments into the
//! configured method (defined in mod.rs).

use std::sync::Arc;

use datafusion::common::{plan_err, Result};

use super::workload::{parse_workload, WorkloadSpec};
use super::Ipa;
use crate::mechanism::noise::{ExactScale, EPSILON_GRID_BITS};
use crate::method::{
    level_bounds, max_nodes, parse_qi_weights, Method, MethodArgs, EPSILON, MAX_LEVELS, MAX_NODES,
    MIN_LEVELS, SEED,
};
use crate::params::{ParamDefault, ParamKind, ParamSpec};

/// Default suppression threshold `t`.
pub const DEFAULT_SUPPRESSION_THRESHOLD: u64 = 2;

/// The parameters of `anonymize(method => 'ipa', ...)`, in the order help lists them.
pub(super) const PARAMS: &[ParamSpec] = &[
    EPSILON,
    MAX_NODES,
    SEED,
    MIN_LEVELS,
    MAX_LEVELS,
    ParamSpec::new(
        "node_score",
        ParamKind::Choice(&["utility", "paper"]),
        ParamDefault::Text("utility"),
        "'utility': choose the node by its expected information loss on the true class sizes (proven sensitivity), then perturb it once; 'paper': perturb every node and choose by the candidates' IL (the paper's Algorithm 2)",
    ),
    ParamSpec::new(
        "qi_weights",
        ParamKind::Text,
        ParamDefault::Optional("equal weights"),
        "weights of the quasi-identifiers in the utility score, 'col=weight, ...' (unnamed columns weigh 1), e.g. 'age=3, los=2'",
    ),
    ParamSpec::new(
        "workload",
        ParamKind::Text,
        ParamDefault::Optional("none: every quasi-identifier costs its NCP"),
        "the analyses the release is for: the quasi-identifiers they group by, a numeric one with its band width, e.g. 'age:5, sex, surgery'; the utility score then charges a label the share of those groups it merges, and nothing for a quasi-identifier not named (public: it is about queries, not data)",
    ),
    ParamSpec::new(
        "budget_split",
        ParamKind::Text,
        ParamDefault::Optional("'0.1,0.3,0.3,0.25,0.05' with node_score 'utility', '0.1,0.3,0.3,0.3' with 'paper' (variant 'reference': '0.1,0.3,0.3,1/3')"),
        "fractions of epsilon for suppression, insertion, value choice, node choice and, optionally, the interval means of anonymize_interval_means, as 'sup,ins,val,cand[,means]'; without the fifth part no means are published",
    ),
    ParamSpec::new(
        "suppression_threshold",
        ParamKind::Integer,
        ParamDefault::Integer(DEFAULT_SUPPRESSION_THRESHOLD),
        "threshold t of the noisy suppression",
    ),
    ParamSpec::new(
        "variant",
        ParamKind::Choice(&["paper", "reference"]),
        ParamDefault::Text("paper"),
        "'paper' (the paper's formulas) or 'reference' (the reference implementation's parameter choices)",
    ),
    ParamSpec::new(
        "insert_into_suppressed",
        ParamKind::Bool,
        ParamDefault::Bool(true),
        "whether the suppressed class '*' also receives counterfeits",
    ),
    ParamSpec::new(
        "counterfeit_by",
        ParamKind::Text,
        ParamDefault::Optional("none: one histogram of the whole table"),
        "with counterfeit_values 'marginal': a quasi-identifier whose released label a counterfeit's informative value is drawn by, from one noisy histogram of (that column's label at the chosen node, informative value) at the same epsilon_val (a counterfeit in a young age band then gets the young's diagnoses); node_score 'utility' only",
    ),
    ParamSpec::new(
        "counterfeit_values",
        ParamKind::Choice(&["marginal", "class"]),
        ParamDefault::Optional("'marginal' with node_score 'utility', 'class' with 'paper'"),
        "how a counterfeit's informative value is drawn: 'marginal' from one noisy histogram of the informative values over the whole table (drawn once; epsilon_val-DP over the leaves of the informative column's hierarchy when one is named, else only between tables with the same distinct informative values), 'class' by the paper's exponential mechanism on the counterfeit's class (Eq. 3-4)",
    ),
];

/// Arguments of other methods 'ipa' refuses, with the reason.
pub(super) const REFUSES: &[(&str, &str)] = &[];

pub(super) fn configure(args: &MethodArgs<'_>) -> Result<Arc<dyn Method>> {
    if !args.has_informative {
        return plan_err!(
            "argument 'informative' (or its synonym 'sensitive') is required for method 'ipa', e.g. informative => 'disease'"
        );
    }
    let values = args.values;
    let epsilon = values.f64("epsilon")?;
    let variant = IpaVariant::parse(values.text("variant")?)?;
    let threshold = values.u64("suppression_threshold")?;
    let mut params = match NodeScore::parse(values.text("node_score")?)? {
        NodeScore::Utility => IpaParams::utility_defaults(variant, epsilon, threshold),
        NodeScore::Paper => IpaParams::with_defaults(variant, epsilon, threshold),
    };
    let split = values.opt_text("budget_split");
    if let Some(split) = split {
        let [sup, ins, val, cand, means] = parse_budget_split(split)?;
        params.eps_sup = sup * epsilon;
        params.eps_ins = ins * epsilon;
        params.eps_val = val * epsilon;
        params.eps_cand = cand * epsilon;
        params.eps_means = means * epsilon;
    }
    params.insert_into_suppressed = values.bool("insert_into_suppressed")?;
    if let Some(text) = values.opt_text("counterfeit_values") {
        params.counterfeit_values = CounterfeitValues::parse(text)?;
    }
    if let Some(column) = values.opt_text("counterfeit_by") {
        if params.counterfeit_values != CounterfeitValues::Marginal
            || params.node_score == NodeScore::Paper
        {
            return plan_err!(
                "counterfeit_by applies to counterfeit_values => 'marginal' with node_score => 'utility' only"
            );
        }
        params.counterfeit_by = Some(column.trim().to_string());
    }
    check_noise_budgets(&params, epsilon, split)?;
    if let Some(text) = values.opt_text("qi_weights") {
        if params.node_score == NodeScore::Paper {
            return plan_err!(
                "qi_weights applies to node_score => 'utility' only; the paper's score weighs every attribute equally"
            );
        }
        params.qi_weights = parse_qi_weights(text)?;
    }
    if let Some(text) = values.opt_text("workload") {
        if params.node_score == NodeScore::Paper {
            return plan_err!(
                "workload applies to node_score => 'utility' only; the paper's score reads no workload"
            );
        }
        params.workload = Some(parse_workload(text)?);
    }
    params.validate()?;
    Ok(Arc::new(Ipa {
        params,
        max_nodes: max_nodes(values)?,
        level_bounds: level_bounds(values)?,
    }))
}

/// The parts of ε that set an exact noise scale (`ε_sup`, `ε_ins`) must reach the samplers'
/// grid, and the suppression scale `(t − 1)/ε_sup` must be representable; the errors name
/// the part, the argument it comes from and the value that would work.
fn check_noise_budgets(params: &IpaParams, epsilon: f64, split: Option<&str>) -> Result<()> {
    let smallest = 1.0 / (1u64 << EPSILON_GRID_BITS) as f64;
    let source = match split {
        Some(split) => format!("budget_split => '{split}'"),
        None => "the default budget_split".to_string(),
    };
    let mut exact = vec![
        ("epsilon_sup", "first", params.eps_sup),
        ("epsilon_ins", "second", params.eps_ins),
    ];
    if params.counterfeit_values == CounterfeitValues::Marginal {
        exact.push(("epsilon_val", "third", params.eps_val));
    }
    if params.eps_means > 0.0 {
        exact.push(("epsilon_means", "fifth", params.eps_means));
    }
    for (name, position, value) in exact {
        if value < smallest {
            let fraction = value / epsilon;
            let fraction_text = if fraction >= 1e-4 {
                format!("{fraction}")
            } else {
                short(fraction)
            };
            return plan_err!(
                "{name} = {} (the {position} fraction {fraction_text} of {source} times epsilon = {}) is below the smallest noise budget the exact samplers support, 2^-{EPSILON_GRID_BITS} = {}; use epsilon >= {} or a larger {position} fraction",
                short(value),
                short(epsilon),
                short(smallest),
                short(smallest / fraction)
            );
        }
    }
    if params.variant == IpaVariant::Paper {
        let sensitivity = params.threshold.saturating_sub(1);
        if ExactScale::from_sensitivity_epsilon(sensitivity.max(1), params.eps_sup).is_err() {
            return plan_err!(
                "suppression_threshold = {} is too large: the suppression noise scale (suppression_threshold - 1) / epsilon_sup = {sensitivity} / {:e} cannot be represented exactly; use a suppression_threshold of at most {MAX_SUPPRESSION_THRESHOLD}",
                params.threshold,
                params.eps_sup
            );
        }
    }
    Ok(())
}

/// Largest `suppression_threshold` whose noise scale `(t − 1)/ε_sup` is representable for
/// every ε_sup on the samplers' grid: the numerator `(t − 1) · 2^30` must fit 64 bits.
pub const MAX_SUPPRESSION_THRESHOLD: u64 = 1 << (64 - EPSILON_GRID_BITS);

/// `x` in scientific notation with at most seven significant digits, trailing zeros dropped
/// (`1.0000000000000002e-10` → `1e-10`).
fn short(x: f64) -> String {
    let text = format!("{x:.6e}");
    match text.split_once('e') {
        Some((mantissa, exponent)) => {
            let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
            format!("{mantissa}e{exponent}")
        }
        None => text,
    }
}

/// Parses `budget_split => 'sup,ins,val,cand'`: four positive fractions summing to at
/// most 1.
/// `'sup,ins,val,cand[,means]'`: four or five positive fractions summing to at most 1; the
/// means part is 0 when left out.
fn parse_budget_split(split: &str) -> Result<[f64; 5]> {
    let parts = split
        .split(',')
        .map(|p| p.trim().parse::<f64>())
        .collect::<std::result::Result<Vec<f64>, _>>();
    let parts = match parts {
        Ok(p) if (4..=5).contains(&p.len()) && p.iter().all(|x| x.is_finite() && *x > 0.0) => p,
        _ => {
            return plan_err!(
                "budget_split must be four or five positive fractions 'sup,ins,val,cand[,means]', got '{split}'"
            )
        }
    };
    let total: f64 = parts.iter().sum();
    if total > 1.0 + 1e-9 {
        return plan_err!("budget_split fractions sum to {total}, more than 1");
    }
    Ok([
        parts[0],
        parts[1],
        parts[2],
        parts[3],
        parts.get(4).copied().unwrap_or(0.0),
    ])
}

/// Which reading of the paper to follow where it is ambiguous (docs/METHODS.md §1.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpaVariant {
    /// The paper's formulas: threshold noise `Lap((t−1)/ε_sup)`, suppress iff `|E| ≤ t + noise`,
    /// IL as the sum NCP + EMD + Rate with `Δu = 3`.
    Paper,
    /// The reference implementation's parameter choices: threshold noise `Lap(1/ε_sup)`
    /// clamped at `t` and compared with `<`, node choice with `ε/3` and `Δu = 1` on the
    /// averaged IL — without its defects.
    Reference,
}

impl IpaVariant {
    /// Parses `paper` or `reference`.
    pub fn parse(text: &str) -> Result<Self> {
        match text.to_ascii_lowercase().as_str() {
            "paper" => Ok(Self::Paper),
            "reference" => Ok(Self::Reference),
            other => {
                plan_err!("unknown variant '{other}' for method 'ipa'; valid: 'paper', 'reference'")
            }
        }
    }

    /// The variant's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Paper => "paper",
            Self::Reference => "reference",
        }
    }
}

/// How IPA chooses its node (docs/METHODS.md §1.8, §1.13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeScore {
    /// The expected size-weighted information loss on the true class sizes, with a proven
    /// sensitivity; Algorithm 1 runs once, at the chosen node.
    Utility,
    /// The paper's Algorithm 2: every node perturbed, chosen by `max_il − il` of the
    /// perturbed candidates.
    Paper,
}

impl NodeScore {
    /// Parses `utility` or `paper`.
    pub fn parse(text: &str) -> Result<Self> {
        match text.to_ascii_lowercase().as_str() {
            "utility" => Ok(Self::Utility),
            "paper" => Ok(Self::Paper),
            other => plan_err!(
                "unknown node_score '{other}' for method 'ipa'; valid: 'utility', 'paper'"
            ),
        }
    }

    /// The score's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Utility => "utility",
            Self::Paper => "paper",
        }
    }
}

/// How IPA draws a counterfeit's informative value (docs/METHODS.md §1.6, §1.14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterfeitValues {
    /// The paper's Eq. 3–4: an exponential mechanism on the counterfeit's class, at
    /// `ε_val` per draw.
    Class,
    /// From one noisy histogram of the informative values over the whole table
    /// (discrete Laplace at `ε_val`, clamped at 0), computed once before any draw.
    Marginal,
}

impl CounterfeitValues {
    /// Parses `marginal` or `class`.
    pub fn parse(text: &str) -> Result<Self> {
        match text.to_ascii_lowercase().as_str() {
            "marginal" => Ok(Self::Marginal),
            "class" => Ok(Self::Class),
            other => plan_err!(
                "unknown counterfeit_values '{other}' for method 'ipa'; valid: 'marginal', 'class'"
            ),
        }
    }

    /// The choice's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Class => "class",
            Self::Marginal => "marginal",
        }
    }
}

/// Parameters of an IPA run.
#[derive(Debug, Clone, PartialEq)]
pub struct IpaParams {
    /// Ambiguity resolution.
    pub variant: IpaVariant,
    /// Budget for the noisy suppression threshold.
    pub eps_sup: f64,
    /// Budget for the counterfeit counts.
    pub eps_ins: f64,
    /// Budget for the informative-value choice.
    pub eps_val: f64,
    /// Budget for the node choice.
    pub eps_cand: f64,
    /// Budget for the interval means (`anonymize_interval_means`); 0 publishes none.
    pub eps_means: f64,
    /// Suppression threshold `t`.
    pub threshold: u64,
    /// Whether the suppressed class `*` also receives counterfeits.
    pub insert_into_suppressed: bool,
    /// How the node is chosen.
    pub node_score: NodeScore,
    /// Weights of the quasi-identifiers in the utility score, by column (others weigh 1).
    pub qi_weights: Vec<(String, f64)>,
    /// The analyses the release is for (`workload`), read by the utility score.
    pub workload: Option<WorkloadSpec>,
    /// How counterfeit values are drawn.
    pub counterfeit_values: CounterfeitValues,
    /// The quasi-identifier whose released label counterfeit values are drawn by
    /// (`counterfeit_by`), if any.
    pub counterfeit_by: Option<String>,
}

impl IpaParams {
    /// The paper's configuration for a total ε: its node score and its budget split
    /// (paper 0.1/0.3/0.3/0.3; reference 0.1/0.3/0.3/(1/3)). `anonymize(...)` defaults to
    /// the utility score instead; see [`IpaParams::node_score`].
    pub fn with_defaults(variant: IpaVariant, epsilon: f64, threshold: u64) -> Self {
        let cand = match variant {
            IpaVariant::Paper => 0.3 * epsilon,
            IpaVariant::Reference => epsilon / 3.0,
        };
        Self {
            variant,
            eps_sup: 0.1 * epsilon,
            eps_ins: 0.3 * epsilon,
            eps_val: 0.3 * epsilon,
            eps_cand: cand,
            eps_means: 0.0,
            threshold,
            insert_into_suppressed: true,
            node_score: NodeScore::Paper,
            qi_weights: Vec::new(),
            workload: None,
            counterfeit_values: CounterfeitValues::Class,
            counterfeit_by: None,
        }
    }

    /// The defaults of `anonymize(method => 'ipa')`: the utility node score, counterfeit
    /// values from the marginal and, for the paper variant, the split
    /// 0.1/0.3/0.3/0.25/0.05 whose fifth part pays for the interval means (the utility
    /// score's choice keeps a margin of thousands of sensitivities with a sixth less of
    /// its share; docs/METHODS.md §1.15).
    pub fn utility_defaults(variant: IpaVariant, epsilon: f64, threshold: u64) -> Self {
        let mut params = Self::with_defaults(variant, epsilon, threshold);
        params.node_score = NodeScore::Utility;
        params.counterfeit_values = CounterfeitValues::Marginal;
        if variant == IpaVariant::Paper {
            params.eps_cand = 0.25 * epsilon;
            params.eps_means = 0.05 * epsilon;
        }
        params
    }

    /// The total budget charged: the four parts the paper's Theorem 9 would claim, plus
    /// the interval means' part.
    pub fn claimed_epsilon(&self) -> f64 {
        self.eps_sup + self.eps_ins + self.eps_val + self.eps_cand + self.eps_means
    }

    pub(crate) fn validate(&self) -> Result<()> {
        for (name, value) in [
            ("epsilon_sup", self.eps_sup),
            ("epsilon_ins", self.eps_ins),
            ("epsilon_val", self.eps_val),
            ("epsilon_cand", self.eps_cand),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return plan_err!("{name} must be a positive finite number, got {value}");
            }
        }
        if self.variant == IpaVariant::Paper && self.threshold < 2 {
            return plan_err!(
                "suppression_threshold must be at least 2 for variant 'paper' (its noise scale is (t-1)/epsilon_sup), got {}",
                self.threshold
            );
        }
        // The exact noise scales must exist for these budgets (e.g. epsilon >= 2^-30).
        Scales::new(self)?;
        Ok(())
    }
}

/// Exact noise scales derived once from the budget.
pub(super) struct Scales {
    pub(super) suppression: ExactScale,
    pub(super) insertion: ExactScale,
}

impl Scales {
    pub(super) fn new(params: &IpaParams) -> Result<Self> {
        let sup_sensitivity = match params.variant {
            IpaVariant::Paper => params.threshold - 1,
            IpaVariant::Reference => 1,
        };
        Ok(Self {
            suppression: ExactScale::from_sensitivity_epsilon(sup_sensitivity, params.eps_sup)?,
            insertion: ExactScale::from_sensitivity_epsilon(1, params.eps_ins)?,
        })
    }
}
