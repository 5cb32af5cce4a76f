//! One lattice node of the UPA search: its feasibility under the h-ceiling, its counterfeits
//! and catalog, and its RCE (with the lower bound that lets a node be skipped).

use datafusion::common::{internal_err, Result};

use super::counterfeits;
use super::grouping::{check_lemma1, group_classes};
use super::{NodeOutcome, NodeStatus, UpaParams};
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::mechanism::rng::AnonRng;
use crate::metric::degree::{loss_metric, Degrees, DEGREE_TOLERANCE};
use crate::metric::rce::{cell_rce, class_volume, class_volumes};
use crate::privacy::models::{ClassModels, ModelScratch};
use crate::release::catalog::{CatalogWeights, CounterfeitCatalog};
use crate::release::{merge_pairs, ReleasedHistogram};

/// The record degree of each class of `hist`.
pub(super) fn class_degrees(hist: &GroupedHistogram, degrees: &Degrees) -> Vec<f64> {
    degrees.class_degrees(&hist.levels, &hist.class_codes)
}

/// The node feasibility check that precedes counterfeits: every class's record degree is
/// within the ceiling. Returns the node's largest degree and whether it passes.
pub(super) fn feasibility(class_degrees: &[f64], h: Option<f64>) -> (f64, bool) {
    let max_degree = class_degrees.iter().copied().fold(0.0, f64::max);
    let within = h.is_none_or(|h| max_degree <= h + DEGREE_TOLERANCE);
    (max_degree, within)
}

/// The released entries of class `c`: `(value, real count, released count)` for each value
/// of its real records or its counterfeits, ascending by value, as the node's release
/// would hold them (without building it).
pub(super) fn released_entries<'a>(
    hist: &'a GroupedHistogram,
    fakes: &'a counterfeits::Counterfeits,
    c: usize,
) -> impl Iterator<Item = (u32, u64, u64)> + 'a {
    merge_pairs(hist.pairs(c), fakes.class(c)).map(|(v, real, fake)| (v, real, real + fake))
}

/// LM and exact RCE of a node's release, from its classes and counterfeits without building
/// the release: the same sums, in the same order, as [`loss_metric`] and [`node_rce`] over
/// the built release (the chosen node's replay checks that they agree).
pub(super) fn node_scores(
    hist: &GroupedHistogram,
    class_degrees: &[f64],
    volumes: &[f64],
    fakes: &counterfeits::Counterfeits,
    catalog: &CounterfeitCatalog,
) -> (f64, f64) {
    let classes = hist.class_count();
    let (mut weighted, mut rows) = (0.0, 0u64);
    for (c, &degree) in class_degrees.iter().enumerate() {
        let size = hist.class_size(c) + fakes.class(c).map(|(_, n)| n).sum::<u64>();
        if size > 0 {
            weighted += degree * size as f64;
            rows += size;
        }
    }
    let lm = if rows == 0 {
        0.0
    } else {
        weighted / rows as f64
    };
    let weights = CatalogWeights::from_classes(classes, Some(catalog), |c| {
        released_entries(hist, fakes, c).map(|(v, _, released)| (v, released))
    });
    let mut rce = 0.0;
    for (c, &volume) in volumes.iter().enumerate() {
        for (v, real, released) in released_entries(hist, fakes, c) {
            rce += cell_rce(real, released, weights.weight(c, v), volume);
        }
    }
    (lm, rce)
}

/// A node's release, catalog and outcome, from its histogram and its random stream.
pub(super) struct NodeRelease {
    pub(super) outcome: NodeOutcome,
    pub(super) release: Option<(ReleasedHistogram, CounterfeitCatalog)>,
}

/// A lower bound on the RCE of any release of a node whose classes have `sizes` real records
/// and generalized boxes of `volumes` cells: every cell costs at least `real · (1 − 1/V)`
/// ([`cell_rce`] with `released ≥ real` and `2w − w² ≤ 1`), whatever the counterfeits and
/// their catalog.
pub(super) fn rce_lower_bound(sizes: &[u64], volumes: &[f64]) -> f64 {
    sizes
        .iter()
        .zip(volumes)
        .map(|(&n, &v)| n as f64 * (1.0 - 1.0 / v.max(1.0)))
        .sum()
}

/// Evaluates one node on its random stream; with `build`, also builds its release and
/// catalog (the chosen node's replay).
#[allow(clippy::too_many_arguments)]
pub(super) fn evaluate_node(
    hist: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    degrees: &Degrees,
    params: &UpaParams,
    models: &ClassModels,
    totals: &[u64],
    counted: &dyn Fn(&GroupedHistogram) -> Result<Vec<u64>>,
    rng: &mut AnonRng,
    build: bool,
    rce_above: f64,
) -> Result<NodeRelease> {
    let mut outcome = NodeOutcome {
        node: hist.levels.clone(),
        status: NodeStatus::OverCeiling,
        max_degree: None,
        classes: hist.class_count(),
        counterfeits: 0,
        groups: 0,
        lm: None,
        rce: None,
    };
    let class_degrees = class_degrees(hist, degrees);
    let (max_degree, within) = feasibility(&class_degrees, params.h);
    outcome.max_degree = Some(max_degree);
    if !within {
        return Ok(NodeRelease {
            outcome,
            release: None,
        });
    }
    // UPA suppresses nothing: every class's real records must meet the models.
    if !models.is_empty() {
        let mut scratch = ModelScratch::default();
        let fails = (0..hist.class_count()).any(|c| {
            let range = hist.class_range(c);
            !models.accepts(
                &hist.pair_values[range.clone()],
                &hist.pair_counts[range],
                &mut scratch,
            )
        });
        if fails {
            outcome.status = NodeStatus::FailsModels;
            return Ok(NodeRelease {
                outcome,
                release: None,
            });
        }
    }
    let volumes = class_volumes(hierarchies, &hist.levels, &hist.class_codes);
    // A node that cannot beat the best RCE found is not given counterfeits (a relative
    // margin keeps rounding in the two sums from bounding out a tie).
    if rce_lower_bound(&hist.sizes(), &volumes) * (1.0 - 1e-9) > rce_above {
        outcome.status = NodeStatus::AboveBest;
        return Ok(NodeRelease {
            outcome,
            release: None,
        });
    }
    let counted = counted(hist)?;
    let drawn = counterfeits::draw_counterfeits(
        hist,
        params.k,
        &counted,
        params.counterfeit_sa,
        totals,
        rng,
    );
    let fakes = match drawn {
        Ok(f) => f,
        Err(counterfeits::DrawFailure::TooMany) => {
            outcome.status = NodeStatus::TooManyCounterfeits;
            return Ok(NodeRelease {
                outcome,
                release: None,
            });
        }
    };
    outcome.counterfeits = fakes.total();
    let Some(catalog) = group_classes(hist, &fakes, totals) else {
        outcome.status = NodeStatus::NotConcealable;
        return Ok(NodeRelease {
            outcome,
            release: None,
        });
    };
    let (lm, rce) = node_scores(hist, &class_degrees, &volumes, &fakes, &catalog);
    outcome.status = NodeStatus::Feasible;
    outcome.groups = catalog.groups.len();
    outcome.lm = Some(lm);
    outcome.rce = Some(rce);
    let release = match build {
        false => None,
        true => {
            // The catalog that is released is checked against Lemma 1.
            check_lemma1(hist, &fakes, &catalog)?;
            let release = node_release(hist, hierarchies.len(), &fakes);
            // The scores the search compared are those of the release built.
            if loss_metric(degrees, &release) != lm
                || node_rce(hist, hierarchies, &release, &catalog) != rce
            {
                return internal_err!(
                    "UPA scores of node {:?} differ from those of its release",
                    hist.levels
                );
            }
            Some((release, catalog))
        }
    };
    Ok(NodeRelease { outcome, release })
}

/// The release of a node: each class's real records plus its counterfeits.
pub(super) fn node_release(
    hist: &GroupedHistogram,
    attrs: usize,
    fakes: &counterfeits::Counterfeits,
) -> ReleasedHistogram {
    let mut release = ReleasedHistogram::new(hist.levels.clone(), attrs);
    let mut codes: Vec<u32> = Vec::with_capacity(attrs);
    for c in 0..hist.class_count() {
        codes.clear();
        codes.extend((0..attrs).map(|a| hist.class_codes[a][c]));
        let real: Vec<(u32, u64)> = hist.pairs(c).collect();
        let extra: Vec<(u32, u64)> = fakes.class(c).collect();
        release.push_class_pairs(&codes, &real, &extra);
    }
    release
}

/// Exact RCE of a node's release: its classes are the node's classes in the same order,
/// each holding every real record of the class plus the class's counterfeits.
pub(super) fn node_rce(
    hist: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    release: &ReleasedHistogram,
    catalog: &CounterfeitCatalog,
) -> f64 {
    let weights = CatalogWeights::new(release, Some(catalog));
    let mut total = 0.0;
    for c in 0..release.class_count() {
        let volume = class_volume(hierarchies, &release.levels, |a| release.class_codes[a][c]);
        for e in release.class_range(c) {
            let v = release.values[e];
            let real = counterfeits::real_count(hist, c, v);
            total += cell_rce(real, release.counts[e], weights.weight(c, v), volume);
        }
    }
    total
}
