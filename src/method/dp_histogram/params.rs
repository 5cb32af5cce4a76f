//! The DP histogram's parameters: the table `anonymize(method => 'dp_histogram', ...)`
//! accepts, their validation and the configured method.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{plan_err, Result};

use super::{
    cell_count, dp_histogram_diagnostics_batch, dp_histogram_diagnostics_schema,
    dp_histogram_metadata, resolve_node, DpHistogramParams, DEFAULT_MAX_CELLS,
};
use crate::budget::Cost;
use crate::lattice::LevelBounds;
use crate::mechanism::noise::{ExactScale, PositiveNoise};
use crate::mechanism::rng::AnonRng;
use crate::method::{
    level_bounds, max_nodes, Method, MethodArgs, MethodInput, MethodOutput, MethodSpec, EPSILON,
    MAX_LEVELS, MIN_LEVELS, SEED,
};
use crate::params::{ParamDefault, ParamKind, ParamSpec};
use crate::release::{ReleaseSize, SIZE_FAILURE};

/// The DP histogram in the method registry.
pub const METHOD: MethodSpec = MethodSpec {
    name: "dp_histogram",
    about: "noisy contingency table over a generalized domain, every cell with exact discrete Laplace noise: epsilon-differential privacy (rows are not real records)",
    params: &[
        EPSILON,
        ParamSpec::new(
            "max_nodes",
            ParamKind::Count,
            ParamDefault::Integer(crate::lattice::DEFAULT_MAX_NODES as u64),
            "largest lattice the default node rule walks (not used when 'levels' is given)",
        ),
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

/// `levels` names one node; it must satisfy `min_levels` and `max_levels` (a column not
/// named in `levels` is at level 0).
fn check_levels_within_bounds(levels: &[(String, usize)], bounds: &LevelBounds) -> Result<()> {
    let level_of = |column: &str| {
        levels
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(column))
            .map_or(0, |(_, l)| *l)
    };
    for (column, min) in &bounds.min {
        if level_of(column) < *min {
            return plan_err!(
                "levels: level {} of '{column}' is below its min_levels {min}",
                level_of(column)
            );
        }
    }
    for (column, max) in &bounds.max {
        if level_of(column) > *max {
            return plan_err!(
                "levels: level {} of '{column}' is above its max_levels {max}",
                level_of(column)
            );
        }
    }
    Ok(())
}

/// The DP histogram configured for one release.
#[derive(Debug, Clone, PartialEq)]
pub struct DpHistogram {
    /// The algorithm's parameters.
    pub params: DpHistogramParams,
    /// Largest lattice to consider.
    pub max_nodes: usize,
    /// `min_levels` / `max_levels`.
    pub level_bounds: LevelBounds,
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

    /// With explicit `levels` the lattice is never walked, so `max_nodes` does not apply.
    fn max_nodes(&self) -> usize {
        if self.params.levels.is_some() {
            usize::MAX
        } else {
            self.max_nodes
        }
    }

    fn level_bounds(&self) -> &LevelBounds {
        &self.level_bounds
    }

    fn diagnostics_schema(&self) -> SchemaRef {
        dp_histogram_diagnostics_schema()
    }

    /// A cell of count `n` releases `max(0, n + Z)` rows, at most `n + max(0, Z)`, with `Z`
    /// discrete Laplace of scale `1/ε`, over every cell of the node's domain.
    fn release_size(&self, input: &MethodInput<'_>) -> Result<ReleaseSize> {
        let rows = input.histogram.total();
        let node = resolve_node(
            input.hierarchies,
            input.lattice,
            input.value_domain,
            &self.params,
        )?;
        let cells = cell_count(input.hierarchies, &node, input.value_domain).unwrap_or(u64::MAX);
        let scale = ExactScale::from_sensitivity_epsilon(1, self.params.epsilon)?;
        let noise = PositiveNoise::discrete_laplace(scale.as_f64());
        Ok(ReleaseSize {
            expected: rows as f64 + cells as f64 * noise.mean(),
            upper: rows as f64 + noise.sum_upper_bound(cells, SIZE_FAILURE),
            cause: format!(
                "epsilon = {} adds about {:.1} noise rows to each of {cells} cells",
                self.params.epsilon,
                noise.mean()
            ),
        })
    }

    fn run(&self, input: &MethodInput<'_>, rng: &mut AnonRng) -> Result<MethodOutput> {
        let result = super::run(
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
            interval_means: None,
        })
    }
}
