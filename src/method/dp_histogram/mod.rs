//! Noisy contingency table over a generalized domain — the differentially private
//! histogram baseline of the IPA paper, released as microdata rows.
//!
//! The quasi-identifiers are generalized to one fixed lattice node. Every cell of the
//! generalized domain — every combination of the node's labels (from the public
//! hierarchies, including combinations no record has) times every informative value —
//! receives two-sided exact discrete Laplace noise of scale `1/ε`; negative counts are
//! clamped to 0, and each cell with count `c > 0` is released as `c` identical rows.
//!
//! Adding or removing one record changes exactly one cell by 1, so the noisy table is
//! ε-differentially private and the clamping and expansion are post-processing — on the
//! condition that the set of cells does not depend on the data. The hierarchies and the
//! node are public choices. The informative domain is the leaves of the informative
//! column's hierarchy when one is named (`informative => 'disease:disease_h'`, required of
//! public users): a public declaration. Without one it is the set of distinct informative
//! values of the data, which is then disclosed (the `guarantee` metadata says so): the
//! data owner's choice, never a public user's.
//!
//! The node is the `levels` parameter (`'age=1, sex=0'`; attributes not named stay at level
//! 0) or, by default, the first node in order of increasing level sum, then lattice order,
//! whose domain has at most `max_cells` cells. A domain larger than `max_cells` is refused.

use datafusion::common::{internal_err, plan_err, DataFusionError, Result};

use crate::budget::Cost;
use crate::hierarchy::Hierarchy;
use crate::lattice::LevelBounds;
use crate::lattice::{node_from_levels, Lattice, Node};
use crate::mechanism::noise::PositiveNoise;
use crate::mechanism::noise::{sample_discrete_laplace, ExactScale};
use crate::mechanism::rng::AnonRng;
use crate::method::MethodInput;
use crate::method::{Guarantee, Input, Persons};
use crate::method::{Method, MethodOutput, MethodSpec};
use crate::release::ReleasedHistogram;
use crate::release::{ReleaseSize, TooManyRows, SIZE_FAILURE};
use datafusion::arrow::datatypes::SchemaRef;

mod metadata;
mod params;

pub use params::DpHistogramParams;

pub use metadata::{
    dp_histogram_diagnostics_batch, dp_histogram_diagnostics_schema, dp_histogram_metadata,
};

/// Default largest number of cells.
pub const DEFAULT_MAX_CELLS: u64 = 10_000_000;

/// Counts describing one release (owner-only diagnostics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DpHistogramStats {
    /// The node.
    pub node: Node,
    /// Cells of the domain.
    pub cells: u64,
    /// Cells without any record.
    pub empty_cells: u64,
    /// Cells released with a positive count.
    pub released_cells: u64,
    /// Records of the original.
    pub true_records: u64,
    /// Rows released.
    pub released_rows: u64,
    /// Rows added by positive noise.
    pub added_rows: u64,
    /// Records removed by negative noise (including clamping).
    pub removed_rows: u64,
}

/// The result of a DP histogram release.
#[derive(Debug, Clone)]
pub struct DpHistogramResult {
    /// The release.
    pub release: ReleasedHistogram,
    /// Its counts.
    pub stats: DpHistogramStats,
}

/// Number of cells at `node`, `None` on overflow.
pub(super) fn cell_count(
    hierarchies: &[&Hierarchy],
    node: &[usize],
    value_domain: usize,
) -> Option<u64> {
    let mut cells = value_domain as u64;
    for (h, &l) in hierarchies.iter().zip(node) {
        cells = cells.checked_mul(h.level(l).cardinality() as u64)?;
    }
    Some(cells)
}

pub(super) use crate::method::levels::node_levels as describe;

/// The node to release at: the requested levels, or the default rule.
pub fn resolve_node(
    hierarchies: &[&Hierarchy],
    lattice: &Lattice,
    value_domain: usize,
    params: &DpHistogramParams,
) -> Result<Node> {
    let Some(levels) = &params.levels else {
        let mut nodes = lattice.nodes();
        nodes.sort_by_key(|n| n.iter().sum::<usize>()); // stable: lattice order within a sum
        return match nodes
            .into_iter()
            .find(|n| cell_count(hierarchies, n, value_domain).is_some_and(|c| c <= params.max_cells))
        {
            Some(node) => Ok(node),
            None => plan_err!(
                "dp_histogram: even the coarsest generalization has more than max_cells = {} cells ({value_domain} informative values); raise max_cells",
                params.max_cells
            ),
        };
    };
    let node = node_from_levels(hierarchies, lattice, levels)?;
    match cell_count(hierarchies, &node, value_domain) {
        Some(c) if c <= params.max_cells => Ok(node),
        cells => {
            let qi: String = hierarchies
                .iter()
                .zip(&node)
                .map(|(h, &l)| h.level(l).cardinality().to_string())
                .collect::<Vec<_>>()
                .join(" x ");
            let cells = cells.map_or_else(|| "more than 2^64".to_string(), |c| c.to_string());
            plan_err!(
                "dp_histogram: the generalized domain at levels '{}' has {cells} cells ({qi} quasi-identifier values x {value_domain} informative values), more than max_cells = {}; choose coarser levels or raise max_cells",
                describe(hierarchies, &node),
                params.max_cells
            )
        }
    }
}

/// The DP histogram in the method registry.
pub const METHOD: MethodSpec = MethodSpec {
    name: "dp_histogram",
    about: "noisy contingency table over a generalized domain, every cell with exact discrete Laplace noise: epsilon-differential privacy (rows are not real records)",
    params: params::PARAMS,
    refuses: params::REFUSES,
    guarantee: Guarantee::WholeReleaseDp,
    methods_section: "§4.3",
    input: Input::Lattice,
    persons: Persons::BoundRows,
    pseudonyms: false,
    diagnostics_score: None,
    configure: params::configure,
};

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
    fn spec(&self) -> &'static MethodSpec {
        &METHOD
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

    fn cells_bound(&self) -> Option<(&'static str, u64, u64)> {
        Some(("max_cells", self.params.max_cells, DEFAULT_MAX_CELLS))
    }

    /// Every informative value gets a noisy count: with a hierarchy named for the column,
    /// its leaves are the domain (public), not the values the data hold.
    fn wants_public_value_domain(&self) -> bool {
        true
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
        let result = run(input, &self.params, rng)?;
        Ok(MethodOutput {
            node: result.stats.node.clone(),
            metadata: dp_histogram_metadata(
                &self.params,
                input.hierarchies,
                &result.stats,
                input.value_domain,
                input.sensitive.leaf_domain(),
            ),
            diagnostics: dp_histogram_diagnostics_batch(&result.stats)?,
            release: result.release,
            catalog: None,
            interval_means: None,
            own_rows: None,
        })
    }
}

/// Releases the noisy histogram, on validated parameters ([`DpHistogramParams::validate`],
/// called when the method is configured).
pub fn run(
    input: &MethodInput<'_>,
    params: &DpHistogramParams,
    rng: &mut AnonRng,
) -> Result<DpHistogramResult> {
    let (base, hierarchies, lattice, value_domain, progress) = (
        input.histogram,
        input.hierarchies,
        input.lattice,
        input.value_domain,
        input.progress,
    );
    let scale = ExactScale::from_sensitivity_epsilon(1, params.epsilon)?;
    let node = resolve_node(hierarchies, lattice, value_domain, params)?;
    let Some(cells) = cell_count(hierarchies, &node, value_domain) else {
        return internal_err!("dp_histogram: cell count overflow after validation");
    };
    let hist = base.roll_up(hierarchies, &node, value_domain)?;
    let attrs = hierarchies.len();
    let cards: Vec<u32> = hierarchies
        .iter()
        .zip(&node)
        .map(|(h, &l)| h.level(l).cardinality() as u32)
        .collect();

    let mut release = ReleasedHistogram::new(node.clone(), attrs);
    let mut stats = DpHistogramStats {
        node: node.clone(),
        cells,
        empty_cells: 0,
        released_cells: 0,
        true_records: base.total(),
        released_rows: 0,
        added_rows: 0,
        removed_rows: 0,
    };
    let mut codes = vec![0u32; attrs];
    let mut next_class = 0usize;
    let mut true_counts = vec![0u64; value_domain];
    let mut pairs: Vec<(u32, u64)> = Vec::new();
    let combinations = cells / value_domain.max(1) as u64;
    for combination in 0..combinations {
        // Real records of this combination (classes of `hist` come in the same order).
        let matches = next_class < hist.class_count()
            && (0..attrs).all(|a| hist.class_codes[a][next_class] == codes[a]);
        if matches {
            for p in hist.class_range(next_class) {
                true_counts[hist.pair_values[p] as usize] = hist.pair_counts[p];
            }
        }
        pairs.clear();
        for (v, slot) in true_counts.iter_mut().enumerate() {
            let truth = std::mem::take(slot);
            let noise = sample_discrete_laplace(rng, scale);
            let noisy = (truth as i128 + noise as i128).max(0) as u64;
            if truth == 0 {
                stats.empty_cells += 1;
            }
            stats.added_rows += noisy.saturating_sub(truth);
            stats.removed_rows += truth.saturating_sub(noisy);
            if noisy > 0 {
                pairs.push((v as u32, noisy));
            }
        }
        if matches {
            next_class += 1;
        }
        if !pairs.is_empty() {
            stats.released_cells += pairs.len() as u64;
            stats.released_rows = stats
                .released_rows
                .saturating_add(pairs.iter().map(|p| p.1).sum::<u64>());
            if let Some(limit) = input.stop_at.filter(|&limit| stats.released_rows > limit) {
                return Err(DataFusionError::External(Box::new(TooManyRows { limit })));
            }
            release.push_class(&codes, &pairs, &[]);
        }
        // Next combination, the last attribute varying fastest.
        for a in (0..attrs).rev() {
            codes[a] += 1;
            if codes[a] < cards[a] {
                break;
            }
            codes[a] = 0;
        }
        if combination % 4096 == 0 {
            progress.report(combination as usize, combinations as usize)?;
        }
    }
    if next_class != hist.class_count() {
        return internal_err!(
            "dp_histogram: {} classes were not visited",
            hist.class_count() - next_class
        );
    }
    progress.report(combinations as usize, combinations as usize)?;
    Ok(DpHistogramResult { release, stats })
}

#[cfg(test)]
mod tests;
