//! The DP histogram's parameters: the table `anonymize(method => 'dp_histogram', ...)`
//! accepts, their validation and the configured method.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Result;

use super::{
    dp_histogram_diagnostics_batch, dp_histogram_diagnostics_schema, dp_histogram_metadata,
    run_dp_histogram, DpHistogramParams, DEFAULT_MAX_CELLS,
};
use crate::budget::Cost;
use crate::mechanism::noise::ExactScale;
use crate::mechanism::rng::AnonRng;
use crate::method::{
    max_nodes, Method, MethodArgs, MethodInput, MethodOutput, MethodSpec, EPSILON, MAX_NODES, SEED,
};
use crate::params::{ParamDefault, ParamKind, ParamSpec};

/// The DP histogram in the method registry.
pub const METHOD: MethodSpec = MethodSpec {
    name: "dp_histogram",
    about: "noisy contingency table over a generalized domain, every cell with exact discrete Laplace noise: epsilon-differential privacy (rows are not real records)",
    params: &[
        EPSILON,
        MAX_NODES,
        SEED,
        ParamSpec::new(
            "levels",
            ParamKind::Text,
            ParamDefault::Optional("the first node by level sum with at most max_cells cells"),
            "the generalization node, 'col=level, ...' (columns not named stay at level 0)",
        ),
        ParamSpec::new(
            "max_cells",
            ParamKind::Count,
            ParamDefault::Integer(DEFAULT_MAX_CELLS),
            "largest generalized domain (quasi-identifier combinations x informative values)",
        ),
    ],
    refuses: &[],
    configure,
};

fn configure(args: &MethodArgs<'_>) -> Result<Arc<dyn Method>> {
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
    // The exact noise scale must exist for this epsilon (e.g. epsilon >= 2^-30).
    ExactScale::from_sensitivity_epsilon(1, params.epsilon)?;
    Ok(Arc::new(DpHistogram {
        params,
        max_nodes: max_nodes(values)?,
    }))
}

/// The DP histogram configured for one release.
#[derive(Debug, Clone, PartialEq)]
pub struct DpHistogram {
    /// The algorithm's parameters.
    pub params: DpHistogramParams,
    /// Largest lattice to consider.
    pub max_nodes: usize,
}

impl Method for DpHistogram {
    fn name(&self) -> &'static str {
        METHOD.name
    }

    fn budget(&self) -> Cost {
        Cost {
            epsilon: self.params.epsilon,
            delta: 0.0,
        }
    }

    fn max_nodes(&self) -> usize {
        self.max_nodes
    }

    fn diagnostics_schema(&self) -> SchemaRef {
        dp_histogram_diagnostics_schema()
    }

    fn run(&self, input: &MethodInput<'_>, rng: &mut AnonRng) -> Result<MethodOutput> {
        let result = run_dp_histogram(
            input.histogram,
            input.hierarchies,
            input.lattice,
            input.value_domain,
            &self.params,
            rng,
            input.progress,
        )?;
        Ok(MethodOutput {
            node: result.stats.node.clone(),
            metadata: dp_histogram_metadata(
                &self.params,
                input.hierarchies,
                &result.stats,
                input.value_domain,
            ),
            diagnostics: dp_histogram_diagnostics_batch(&result.stats)?,
            release: result.release,
            catalog: None,
        })
    }
}
