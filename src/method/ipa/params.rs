//! IPA's parameters: the table `anonymize(method => 'ipa', ...)` accepts, their validation
//! and the configured method.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{plan_err, Result};

use super::{ipa_diagnostics_batch, ipa_diagnostics_schema, ipa_metadata, run_ipa};
use crate::budget::Cost;
use crate::mechanism::rng::AnonRng;
use crate::method::{
    max_nodes, Method, MethodArgs, MethodInput, MethodOutput, MethodSpec, EPSILON, MAX_NODES, SEED,
};
use crate::params::{ParamDefault, ParamKind, ParamSpec};

/// Default suppression threshold `t`.
pub const DEFAULT_SUPPRESSION_THRESHOLD: u64 = 2;

/// IPA in the method registry.
pub const METHOD: MethodSpec = MethodSpec {
    name: "ipa",
    about: "IPA (Lee & Chung 2020): full-domain generalization, noisy-threshold suppression, counterfeit records and exponential-mechanism choices; no formal DP guarantee (see the metadata's guarantee text)",
    params: &[
        EPSILON,
        MAX_NODES,
        SEED,
        ParamSpec::new(
            "budget_split",
            ParamKind::Text,
            ParamDefault::Optional("'0.1,0.3,0.3,0.3' (variant 'reference': '0.1,0.3,0.3,1/3')"),
            "fractions of epsilon for suppression, insertion, value choice, node choice, as 'sup,ins,val,cand'",
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
    ],
    refuses: &[],
    configure,
};

fn configure(args: &MethodArgs<'_>) -> Result<Arc<dyn Method>> {
    if !args.has_informative {
        return plan_err!(
            "argument 'informative' (or its synonym 'sensitive') is required for method 'ipa', e.g. informative => 'disease'"
        );
    }
    let values = args.values;
    let epsilon = values.f64("epsilon")?;
    let variant = IpaVariant::parse(values.text("variant")?)?;
    let mut params =
        IpaParams::with_defaults(variant, epsilon, values.u64("suppression_threshold")?);
    if let Some(split) = values.opt_text("budget_split") {
        let [sup, ins, val, cand] = parse_budget_split(split)?;
        params.eps_sup = sup * epsilon;
        params.eps_ins = ins * epsilon;
        params.eps_val = val * epsilon;
        params.eps_cand = cand * epsilon;
    }
    params.insert_into_suppressed = values.bool("insert_into_suppressed")?;
    params.validate()?;
    Ok(Arc::new(Ipa {
        params,
        max_nodes: max_nodes(values)?,
    }))
}

/// Parses `budget_split => 'sup,ins,val,cand'`: four positive fractions summing to at
/// most 1.
fn parse_budget_split(split: &str) -> Result<[f64; 4]> {
    let parts = split
        .split(',')
        .map(|p| p.trim().parse::<f64>())
        .collect::<std::result::Result<Vec<f64>, _>>();
    let parts: Option<[f64; 4]> = parts.ok().and_then(|p| p.try_into().ok());
    let parts = match parts {
        Some(p) if p.iter().all(|x: &f64| x.is_finite() && *x > 0.0) => p,
        _ => {
            return plan_err!(
                "budget_split must be four positive fractions 'sup,ins,val,cand', got '{split}'"
            )
        }
    };
    let total: f64 = parts.iter().sum();
    if total > 1.0 + 1e-9 {
        return plan_err!("budget_split fractions sum to {total}, more than 1");
    }
    Ok(parts)
}

/// IPA configured for one release.
#[derive(Debug, Clone, PartialEq)]
pub struct Ipa {
    /// The algorithm's parameters.
    pub params: IpaParams,
    /// Largest lattice to evaluate.
    pub max_nodes: usize,
}

impl Method for Ipa {
    fn name(&self) -> &'static str {
        METHOD.name
    }

    /// The total the paper's Theorem 9 claims (δ = 0), although that claim does not hold.
    fn budget(&self) -> Cost {
        Cost {
            epsilon: self.params.claimed_epsilon(),
            delta: 0.0,
        }
    }

    fn max_nodes(&self) -> usize {
        self.max_nodes
    }

    fn diagnostics_schema(&self) -> SchemaRef {
        ipa_diagnostics_schema()
    }

    fn run(&self, input: &MethodInput<'_>, rng: &mut AnonRng) -> Result<MethodOutput> {
        let result = run_ipa(
            input.histogram,
            input.hierarchies,
            input.lattice,
            input.value_domain,
            &self.params,
            rng,
            input.progress,
        )?;
        Ok(MethodOutput {
            node: result.outcomes[result.chosen].node.clone(),
            metadata: ipa_metadata(&self.params, input.lattice),
            diagnostics: ipa_diagnostics_batch(&result.outcomes, result.chosen)?,
            release: result.release,
            catalog: None,
        })
    }
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
    /// Suppression threshold `t`.
    pub threshold: u64,
    /// Whether the suppressed class `*` also receives counterfeits.
    pub insert_into_suppressed: bool,
}

impl IpaParams {
    /// Default budget split for a total ε: paper 0.1/0.3/0.3/0.3; reference 0.1/0.3/0.3/(1/3).
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
            threshold,
            insert_into_suppressed: true,
        }
    }

    /// The total budget the paper's Theorem 9 would claim.
    pub fn claimed_epsilon(&self) -> f64 {
        self.eps_sup + self.eps_ins + self.eps_val + self.eps_cand
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
        super::Scales::new(self)?;
        Ok(())
    }
}
