//! k-anonymity's parameters: the table `anonymize(method => 'kanon', ...)` accepts, their
//! validation and the configured method.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Result;

use super::{
    kanon_diagnostics_batch, kanon_diagnostics_schema, kanon_metadata, run_kanon, KanonParams,
    DEFAULT_K, DEFAULT_SUPPRESSION_LIMIT,
};
use crate::budget::Cost;
use crate::mechanism::rng::AnonRng;
use crate::method::{
    max_nodes, Method, MethodArgs, MethodInput, MethodOutput, MethodSpec, MAX_NODES,
};
use crate::params::{ParamDefault, ParamKind, ParamSpec};

/// Why a deterministic method refuses the randomized methods' arguments.
const NO_BUDGET: &str = "k-anonymization is deterministic and has no privacy budget";

/// Optimal k-anonymity in the method registry.
pub const METHOD: MethodSpec = MethodSpec {
    name: "kanon",
    about: "optimal full-domain k-anonymity with record suppression (least NCP over the whole lattice); deterministic, no differential privacy",
    params: &[
        MAX_NODES,
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
            "largest fraction of records that may be suppressed (to the '*' class)",
        ),
    ],
    refuses: &[("epsilon", NO_BUDGET), ("seed", NO_BUDGET)],
    configure,
};

fn configure(args: &MethodArgs<'_>) -> Result<Arc<dyn Method>> {
    let values = args.values;
    let params = KanonParams {
        k: values.u64("k")?,
        suppression_limit: values.f64("suppression_limit")?,
    };
    params.validate()?;
    Ok(Arc::new(Kanon {
        params,
        max_nodes: max_nodes(values)?,
    }))
}

/// k-anonymization configured for one release.
#[derive(Debug, Clone, PartialEq)]
pub struct Kanon {
    /// The algorithm's parameters.
    pub params: KanonParams,
    /// Largest lattice to evaluate.
    pub max_nodes: usize,
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
            input.progress,
        )?;
        Ok(MethodOutput {
            node: result.outcomes[result.chosen].node.clone(),
            metadata: kanon_metadata(&self.params, input.lattice),
            diagnostics: kanon_diagnostics_batch(&result.outcomes, result.chosen)?,
            release: result.release,
            catalog: None,
        })
    }
}
