//! MST as a method of the engine: the quasi-identifiers generalized to one node chosen
//! from public facts (the `levels` argument, or the first node by level sum whose largest
//! 2-way marginal fits `max_cells`), the histogram rolled up to it, the informative column
//! one more attribute, [`super::synthesize`] on those records, and the synthetic records
//! released as classes.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{plan_err, DataFusionError, Result};

use super::budget::Split;
use super::metadata::{mst_diagnostics_batch, mst_diagnostics_schema, mst_metadata, MstStats};
use super::params::{self, MstParams, DEFAULT_MAX_CELLS};
use super::records::Records;
use crate::budget::Cost;
use crate::hierarchy::Hierarchy;
use crate::lattice::{node_from_levels, parse_level_list, Lattice, LevelBounds, Node};
use crate::mechanism::noise::ExactVariance;
use crate::mechanism::rng::AnonRng;
use crate::method::levels::node_levels as describe;
use crate::method::{check_levels_within_bounds, level_bounds, max_nodes, MethodArgs};
use crate::method::{Guarantee, Input, Method, MethodInput, MethodOutput, MethodSpec, Persons};
use crate::release::{ReleaseSize, ReleasedHistogram, TooManyRows, SIZE_FAILURE};

/// MST in the method registry.
pub const METHOD: MethodSpec = MethodSpec {
    name: "mst",
    about: "synthetic records from a tree of noisy 2-way marginals (McKenna, Miklau & Sheldon's MST, discrete Gaussian noise): (epsilon, delta)-differential privacy (rows are not real records)",
    params: params::PARAMS,
    refuses: params::REFUSES,
    guarantee: Guarantee::WholeReleaseDp,
    methods_section: "§12",
    input: Input::Lattice,
    persons: Persons::BoundRows,
    pseudonyms: false,
    diagnostics_score: None,
    configure,
};

/// MST configured for one release.
#[derive(Debug, Clone, PartialEq)]
pub struct Mst {
    /// The algorithm's parameters.
    pub params: MstParams,
    /// Largest lattice the default node rule walks.
    pub max_nodes: usize,
    /// `min_levels` / `max_levels`.
    pub level_bounds: LevelBounds,
}

/// Each attribute's number of values at `node`: the quasi-identifiers' labels, then the
/// informative values when the release has an informative column.
pub(super) fn attribute_cards(
    hierarchies: &[&Hierarchy],
    node: &[usize],
    value_domain: Option<usize>,
) -> Vec<usize> {
    hierarchies
        .iter()
        .zip(node)
        .map(|(h, &l)| h.level(l).cardinality())
        .chain(value_domain)
        .collect()
}

/// Cells of the largest 2-way marginal: the product of the two largest domains.
pub(super) fn largest_pair(cards: &[usize]) -> u64 {
    let mut sorted: Vec<u64> = cards.iter().map(|&c| c as u64).collect();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    match sorted.as_slice() {
        [a, b, ..] => a.saturating_mul(*b),
        [a] => *a,
        [] => 0,
    }
}

/// The informative attribute's number of values, when the release has one.
fn informative_domain(input: &MethodInput<'_>) -> Option<usize> {
    (!input.sensitive.columns.is_empty()).then_some(input.value_domain)
}

/// The node to release at: the requested levels, or the default rule. Both read only the
/// hierarchies, the informative domain's size and the arguments.
pub(super) fn resolve_node(
    hierarchies: &[&Hierarchy],
    lattice: &Lattice,
    value_domain: Option<usize>,
    params: &MstParams,
) -> Result<Node> {
    let fits = |node: &[usize]| {
        largest_pair(&attribute_cards(hierarchies, node, value_domain)) <= params.max_cells
    };
    let Some(levels) = &params.levels else {
        let mut nodes = lattice.nodes();
        nodes.sort_by_key(|n| n.iter().sum::<usize>()); // stable: lattice order within a sum
        return match nodes.into_iter().find(|n| fits(n)) {
            Some(node) => Ok(node),
            None => plan_err!(
                "mst: even the coarsest generalization has a 2-way marginal of more than max_cells = {} cells; raise max_cells",
                params.max_cells
            ),
        };
    };
    let node = node_from_levels(hierarchies, lattice, levels)?;
    if !fits(&node) {
        let cards = attribute_cards(hierarchies, &node, value_domain);
        return plan_err!(
            "mst: at levels '{}' the largest 2-way marginal has {} cells (domains {}), more than max_cells = {}; choose coarser levels or raise max_cells",
            describe(hierarchies, &node),
            largest_pair(&cards),
            cards
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(" x "),
            params.max_cells
        );
    }
    Ok(node)
}

fn configure(args: &MethodArgs<'_>) -> Result<Arc<dyn Method>> {
    let values = args.values;
    let attributes = args.qi.len() + usize::from(args.has_informative);
    if attributes < 2 {
        return plan_err!(
            "mst models the dependence between columns: it needs at least two, quasi-identifiers and the informative column together (got {attributes})"
        );
    }
    let levels = match values.opt_text("levels") {
        Some(text) => Some(parse_level_list("levels", text)?),
        None => None,
    };
    let params = MstParams {
        epsilon: values.f64("epsilon")?,
        delta: values.f64("delta")?,
        levels,
        max_cells: values.u64("max_cells")?,
        iterations: values.u64("iterations")?,
    };
    params.validate()?;
    let level_bounds = level_bounds(values)?;
    if let Some(levels) = &params.levels {
        check_levels_within_bounds(levels, &level_bounds)?;
    }
    Ok(Arc::new(Mst {
        params,
        max_nodes: max_nodes(values)?,
        level_bounds,
    }))
}

impl Method for Mst {
    fn spec(&self) -> &'static MethodSpec {
        &METHOD
    }

    fn budget(&self) -> Cost {
        Cost {
            epsilon: self.params.epsilon,
            delta: self.params.delta,
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
        mst_diagnostics_schema()
    }

    fn cells_bound(&self) -> Option<(&'static str, u64, u64)> {
        Some(("max_cells", self.params.max_cells, DEFAULT_MAX_CELLS))
    }

    /// The informative column is one attribute of the model: with a hierarchy named for
    /// it, its leaves are the domain (public), not the values the data hold.
    fn wants_public_value_domain(&self) -> bool {
        true
    }

    /// The release has `round(total)` rows, `total` the inverse-variance weighted mean of
    /// the 1-way measurements' sums: the true count plus noise that is sub-Gaussian with
    /// variance proxy `v = 1 / Σ_a 1 / (|domain_a| · σ1²)` (each discrete Gaussian is
    /// σ1²-sub-Gaussian, Canonne, Kamath & Steinke 2020), so it exceeds
    /// `sqrt(2 · v · ln(1 / SIZE_FAILURE))` with probability below `SIZE_FAILURE`.
    fn release_size(&self, input: &MethodInput<'_>) -> Result<ReleaseSize> {
        let rows = input.histogram.total() as f64;
        let domain = informative_domain(input);
        let node = resolve_node(input.hierarchies, input.lattice, domain, &self.params)?;
        let cards = attribute_cards(input.hierarchies, &node, domain);
        let split = Split::new(self.params.rho()?, cards.len());
        let variance = ExactVariance::at_least(split.one_way_variance)?.as_f64();
        let precision: f64 = cards.iter().map(|&c| 1.0 / (c as f64 * variance)).sum();
        let deviation = (2.0 / precision * (1.0 / SIZE_FAILURE).ln()).sqrt();
        Ok(ReleaseSize {
            expected: rows,
            upper: rows + deviation + 1.0,
            cause: format!(
                "the number of synthetic rows is the true number plus noise of standard deviation about {:.1} (epsilon = {}, delta = {})",
                precision.recip().sqrt(),
                self.params.epsilon,
                self.params.delta
            ),
        })
    }

    fn run(&self, input: &MethodInput<'_>, rng: &mut AnonRng) -> Result<MethodOutput> {
        let domain = informative_domain(input);
        let node = resolve_node(input.hierarchies, input.lattice, domain, &self.params)?;
        let records = records_at(input, &node, domain)?;
        let synthesis = super::synthesize(
            rng,
            &records,
            self.params.epsilon,
            self.params.delta,
            usize::try_from(self.params.iterations).unwrap_or(usize::MAX),
            input.progress,
        )?;
        let released_rows = synthesis.records.total();
        if let Some(limit) = input.stop_at.filter(|&limit| released_rows > limit) {
            return Err(DataFusionError::External(Box::new(TooManyRows { limit })));
        }
        let release = classes(&synthesis.records, &node, input.hierarchies.len(), domain);
        let stats = MstStats::new(&records, &synthesis, node.clone());
        Ok(MethodOutput {
            node,
            metadata: mst_metadata(
                &self.params,
                input.hierarchies,
                &stats,
                domain,
                input.sensitive,
            ),
            diagnostics: mst_diagnostics_batch(input.hierarchies, input.sensitive, &stats)?,
            release,
            catalog: None,
            interval_means: None,
            own_rows: None,
        })
    }
}

/// The source's records at `node`: the quasi-identifiers' codes, then the informative
/// value when there is an informative column.
fn records_at(input: &MethodInput<'_>, node: &[usize], domain: Option<usize>) -> Result<Records> {
    let hist = input
        .histogram
        .roll_up(input.hierarchies, node, input.value_domain)?;
    let attrs = input.hierarchies.len();
    let mut records = Records::new(attribute_cards(input.hierarchies, node, domain));
    let mut tuple = vec![0u32; records.width()];
    for class in 0..hist.class_count() {
        for (a, slot) in tuple.iter_mut().take(attrs).enumerate() {
            *slot = hist.class_codes[a][class];
        }
        match domain {
            Some(_) => {
                for (value, count) in hist.pairs(class) {
                    tuple[attrs] = value;
                    records.push(&tuple, count);
                }
            }
            None => records.push(&tuple, hist.class_size(class)),
        }
    }
    Ok(records)
}

/// The synthetic records (sorted by tuple) as released classes: one class per combination
/// of quasi-identifier codes, its informative values with their counts.
fn classes(
    records: &Records,
    node: &[usize],
    attrs: usize,
    domain: Option<usize>,
) -> ReleasedHistogram {
    let mut release = ReleasedHistogram::new(node.to_vec(), attrs);
    let mut pairs: Vec<(u32, u64)> = Vec::new();
    let mut current: Option<&[u32]> = None;
    for i in 0..records.counts.len() {
        let tuple = records.tuple(i);
        let count = records.counts[i];
        if count == 0 {
            continue;
        }
        let (codes, value) = (&tuple[..attrs], domain.map_or(0, |_| tuple[attrs]));
        if current.is_some_and(|c| c != codes) {
            if let Some(previous) = current {
                release.push_class(previous, &pairs, &[]);
            }
            pairs.clear();
        }
        current = Some(codes);
        pairs.push((value, count));
    }
    if let Some(previous) = current {
        release.push_class(previous, &pairs, &[]);
    }
    release
}
