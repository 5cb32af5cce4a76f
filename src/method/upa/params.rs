//! UPA's parameters: the table `anonymize(method => 'upa', ...)` accepts, their validation
//! and the configured method.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{plan_err, Result};

use super::{
    upa_diagnostics_batch, upa_diagnostics_schema, upa_metadata, CounterfeitSa, UpaParams,
    DEFAULT_K,
};
use crate::budget::Cost;
use crate::lattice::LevelBounds;
use crate::mechanism::rng::AnonRng;
use crate::method::{
    level_bounds, max_nodes, Method, MethodArgs, MethodInput, MethodOutput, MethodSpec, MAX_LEVELS,
    MAX_NODES, MIN_LEVELS, SEED,
};
use crate::params::{ParamDefault, ParamKind, ParamSpec};
use crate::privacy::models::{model_spec, ClassModels, C, L, L_MODEL, T, T_MODEL};
use crate::release::ReleaseSize;
use crate::sensitive::SensitiveSpec;

/// UPA in the method registry.
pub const METHOD: MethodSpec = MethodSpec {
    name: "upa",
    about: "UPA (Lee et al. 2017): k-anonymity under an h-ceiling on every record's generalization degree, counterfeit records and a published catalog of them (anonymize_catalog, upa_truthful); syntactic, no differential privacy",
    params: &[
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
    ],
    refuses: &[(
        "epsilon",
        "UPA is syntactic (k-anonymity with an h-ceiling) and has no privacy budget",
    )],
    configure,
};

fn configure(args: &MethodArgs<'_>) -> Result<Arc<dyn Method>> {
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

/// UPA configured for one release.
#[derive(Debug, Clone, PartialEq)]
pub struct Upa {
    /// The algorithm's parameters.
    pub params: UpaParams,
    /// Largest lattice to search.
    pub max_nodes: usize,
    /// `min_levels` / `max_levels`.
    pub level_bounds: LevelBounds,
}

impl Method for Upa {
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

    fn named_columns(&self) -> Vec<(&'static str, &str)> {
        self.params
            .levels
            .iter()
            .flatten()
            .map(|(name, _)| ("levels", name.as_str()))
            .collect()
    }

    /// A class of `n < k` records at any node gets `k − n` counterfeits. Merging classes
    /// never raises the total (`max(0, k − a − b) ≤ max(0, k − a) + max(0, k − b)`), so the
    /// leaf-level classes' shortfall bounds every node's: the bound holds with certainty.
    fn release_size(&self, input: &MethodInput<'_>) -> Result<ReleaseSize> {
        let histogram = input.histogram;
        let rows = histogram.total();
        let k = self.params.k;
        let added: u64 = (0..histogram.class_count())
            .map(|c| k.saturating_sub(histogram.class_size(c)))
            .sum();
        let upper = rows.saturating_add(added) as f64;
        Ok(ReleaseSize {
            expected: upper,
            upper,
            cause: format!("k = {k} adds at most {added} counterfeit rows to classes under k"),
        })
    }

    fn diagnostics_schema(&self) -> SchemaRef {
        upa_diagnostics_schema()
    }

    fn publishes_catalog(&self) -> bool {
        true
    }

    fn check_sensitive(&self, columns: &[SensitiveSpec]) -> Result<()> {
        self.params.models.check_columns(columns)
    }

    fn run(&self, input: &MethodInput<'_>, rng: &mut AnonRng) -> Result<MethodOutput> {
        let result = super::run(
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
            rng,
            input.progress,
        )?;
        Ok(MethodOutput {
            node: result.outcomes[result.chosen].node.clone(),
            metadata: upa_metadata(&self.params, &result, input.hierarchies, input.lattice),
            diagnostics: upa_diagnostics_batch(&result.outcomes, result.chosen)?,
            release: result.release,
            catalog: Some(result.catalog),
            interval_means: None,
        })
    }
}
