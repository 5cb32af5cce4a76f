//! Optimal full-domain k-anonymity with record or cell suppression (METHODS.md §3) — the
//! k-anonymization baseline the IPA paper compares against, with the utility metrics of the
//! ARX anonymization tool and a pruned search in the spirit of ARX's Flash.
//!
//! At a node, each equivalence class that fails the privacy model (fewer than `k` records)
//! is suppressed: in record mode its records get `*` for every quasi-identifier and form one
//! suppressed class `*` (as ARX does); in cell mode they lose single values first
//! (`cells`). A node is *feasible* when at most `floor(suppression_limit · N)` of the `N`
//! records are in failing classes (ARX's rule). Among feasible nodes the release minimizes
//! the chosen metric (`metric`); ties go to the node with the fewest generalization levels,
//! then to the earliest node in lattice order. The pruned search (`search`) finds the same
//! node as checking every node. The method is deterministic and draws no randomness.
//!
//! Modules: `params` (the parameter table), `objective` (NCP and ARX's metrics), `check` (one
//! node: classes, the per-class privacy test, feasibility, score), `cells` (record and cell
//! suppression), `search` (pruned and exhaustive search).

use std::collections::{BTreeMap, HashMap};

use datafusion::common::{exec_err, internal_err, Result};

use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::method::{Guarantee, Input, Persons, PERSONS_PER_CLASS};
use crate::privacy::models::ClassModels;
use crate::privacy_unit::PersonCodes;
use crate::release::{OwnRows, OwnValues, ReleasedHistogram, SUPPRESSED};
use std::sync::Arc;

mod cells;
mod check;
mod metadata;
mod objective;
mod params;

pub use params::KanonParams;
mod search;

pub use cells::{SuppressionMode, SuppressionPlan};
pub use check::{ClassRule, KanonNodeOutcome};
pub use metadata::{kanon_diagnostics_batch, kanon_diagnostics_schema, kanon_metadata};
pub use objective::{Metric, MetricKind, METRIC_NAMES};
pub use search::SearchStrategy;

use crate::budget::Cost;
use crate::lattice::LevelBounds;
use crate::mechanism::rng::AnonRng;
use crate::method::MethodInput;
use crate::method::{Method, MethodOutput, MethodSpec};
use crate::sensitive::SensitiveSpec;
use check::Evaluator;
use datafusion::arrow::datatypes::SchemaRef;

/// Default `k`.
pub const DEFAULT_K: u64 = 10;

/// Default suppression limit (fraction of records).
pub const DEFAULT_SUPPRESSION_LIMIT: f64 = 0.05;

/// Default largest lattice the pruned search accepts (one byte of state per node).
pub const DEFAULT_KANON_MAX_NODES: usize = 1_000_000;

/// The result of a k-anonymization.
#[derive(Debug, Clone)]
pub struct KanonResult {
    /// Every checked node, in lattice order (the whole lattice for an exhaustive search).
    pub outcomes: Vec<KanonNodeOutcome>,
    /// Index in `outcomes` of the chosen node.
    pub chosen: usize,
    /// The released histogram at the chosen node.
    pub release: ReleasedHistogram,
    /// The chosen node's suppression.
    pub plan: SuppressionPlan,
    /// The chosen node's score as a number (see [`Metric::display`]).
    #[cfg_attr(not(test), allow(dead_code))] // the tests compare it with brute force
    pub score: f64,
    /// The metric, prepared for this data.
    pub metric: Metric,
    /// Per person: the distinct persons of every released class (the suppressed class
    /// of `*` only left out), in release order.
    pub class_persons: Option<Vec<u64>>,
    /// Owner-only: the released row of every source tuple.
    pub own_rows: OwnRows,
}

/// Optimal k-anonymity in the method registry.
pub const METHOD: MethodSpec = MethodSpec {
    name: "kanon",
    about: "optimal full-domain k-anonymity with record or cell suppression (least NCP or ARX metric, pruned search); deterministic, no differential privacy",
    params: params::PARAMS,
    refuses: params::REFUSES,
    guarantee: Guarantee::Syntactic,
    methods_section: "§3.5",
    input: Input::Lattice,
    persons: Persons::Counted(PERSONS_PER_CLASS),
    pseudonyms: true,
    diagnostics_score: Some("the k-anonymity search's metric (lower is better; the chosen node is the best feasible one)"),
    configure: params::configure,
};

/// k-anonymization configured for one release.
#[derive(Debug, Clone, PartialEq)]
pub struct Kanon {
    /// The algorithm's parameters.
    pub params: KanonParams,
    /// Largest lattice to search.
    pub max_nodes: usize,
    /// `min_levels` / `max_levels`.
    pub level_bounds: LevelBounds,
}

impl Method for Kanon {
    fn spec(&self) -> &'static MethodSpec {
        &METHOD
    }

    fn budget(&self) -> Cost {
        Cost::NONE
    }

    fn max_nodes(&self) -> usize {
        self.max_nodes
    }

    fn level_bounds(&self) -> &LevelBounds {
        &self.level_bounds
    }

    fn diagnostics_schema(&self) -> SchemaRef {
        kanon_diagnostics_schema()
    }

    fn run(&self, input: &MethodInput<'_>, _rng: &mut AnonRng) -> Result<MethodOutput> {
        let result = run(input, &self.params)?;
        let metric = &result.metric;
        let display = |s| metric.display(s);
        Ok(MethodOutput {
            node: result.outcomes[result.chosen].node.clone(),
            metadata: kanon_metadata(&self.params, input.lattice, input.sensitive, &result),
            diagnostics: kanon_diagnostics_batch(&result.outcomes, result.chosen, &display)?,
            release: result.release,
            catalog: None,
            interval_means: None,
            own_rows: Some(result.own_rows),
        })
    }

    fn max_sensitive_columns(&self) -> usize {
        usize::MAX
    }

    fn check_sensitive(&self, columns: &[SensitiveSpec]) -> Result<()> {
        self.params.models.check_columns(columns)
    }
}

/// Runs optimal k-anonymization on validated parameters (`KanonParams::validate`, called
/// when the method is configured); with ℓ-diversity or t-closeness in `params.models`, a
/// class must also meet them (over `input.sensitive`) to be released. The search checks
/// several nodes at once on `input.threads` threads; the result does not depend on them.
/// Deterministic: it draws nothing.
pub fn run(input: &MethodInput<'_>, params: &KanonParams) -> Result<KanonResult> {
    let (base, hierarchies, lattice, value_domain, progress) = (
        input.histogram,
        input.hierarchies,
        input.lattice,
        input.value_domain,
        input.progress,
    );
    let models = &ClassModels::new(&params.models, base, input.sensitive, METHOD.name)?;
    let total = base.total();
    if total == 0 {
        return exec_err!("cannot anonymize an empty table");
    }
    let weights = params.weights_for(hierarchies.len());
    let metric = Metric::new(params.metric, base, hierarchies, &weights)?;
    let max_suppressed = params.max_suppressed(total);
    // Per person the search runs on the histogram of (person, tuple) combinations, whose
    // classes count the same records.
    let persons = input.persons.map(|p| Arc::new(p.codes.clone()));
    let (base, value_domain) = match input.persons {
        Some(p) => (&p.histogram, p.codes.len()),
        None => (base, value_domain),
    };
    let rule = || match &persons {
        Some(p) => params.rule(models).per_person(p.clone()),
        None => params.rule(models),
    };
    let mut evaluator = Evaluator::new(
        base,
        hierarchies,
        value_domain,
        metric.clone(),
        rule(),
        params.suppression,
        weights.clone(),
        max_suppressed,
    )
    .with_threads(input.threads);
    let found = search::search(
        &mut evaluator,
        lattice,
        params.search,
        max_suppressed >= total,
        progress,
    )?;
    let Some(chosen) = found.chosen else {
        let described = params.models.describe(&[]);
        let (with, lower) = if described.is_empty() {
            (String::new(), "lower k")
        } else {
            (
                format!(" and {}", described.join(" and ")),
                "lower k or l, raise t",
            )
        };
        return exec_err!(
            "kanon: no generalization satisfies k = {}{with} with suppression_limit = {} ({} of {total} records may be suppressed); {lower} or raise suppression_limit",
            params.k,
            params.suppression_limit,
            max_suppressed
        );
    };
    let outcome = &found.outcomes[chosen];
    let score = outcome.score.map(|s| metric.display(s)).unwrap_or(f64::NAN);
    let full = Evaluator::new(
        base,
        hierarchies,
        value_domain,
        metric.clone(),
        rule(),
        params.suppression,
        weights,
        max_suppressed,
    );
    let (release, plan, class_persons, own_rows) = release_at(
        &full,
        base,
        hierarchies,
        &outcome.node,
        value_domain,
        persons.as_deref(),
    )?;
    if release.row_count() != total {
        return internal_err!(
            "kanon release has {} rows, expected {total}",
            release.row_count()
        );
    }
    Ok(KanonResult {
        outcomes: found.outcomes,
        chosen,
        release,
        plan,
        score,
        metric,
        class_persons,
        own_rows,
    })
}

/// A released class: its codes and `(value, count)` pairs.
type ReleasedClass = (Vec<u32>, Vec<(u32, u64)>);

/// The release at `node`: passing classes as they are, the failing ones suppressed as the
/// evaluator's mode says, every class in canonical order (codes ascending, `*` last).
fn release_at(
    evaluator: &Evaluator<'_>,
    base: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    node: &[usize],
    value_domain: usize,
    persons: Option<&PersonCodes>,
) -> Result<(
    ReleasedHistogram,
    SuppressionPlan,
    Option<Vec<u64>>,
    OwnRows,
)> {
    let hist = base.roll_up(hierarchies, node, value_domain)?;
    let (failing, _, feasible) = evaluator.failing(&hist);
    if !feasible {
        return internal_err!("kanon: the chosen node {node:?} exceeds the suppression limit");
    }
    let plan = evaluator.plan(&hist, &failing);
    let attrs = hierarchies.len();
    let pairs = |c: usize| -> Vec<(u32, u64)> { hist.pairs(c).collect() };
    let mut classes: Vec<ReleasedClass> = (0..hist.class_count())
        .filter(|&c| plan.masks[c] == 0)
        .map(|c| {
            let codes = (0..attrs).map(|a| hist.class_codes[a][c]).collect();
            (codes, pairs(c))
        })
        .collect();
    for group in &plan.groups {
        let Some(&first) = group.classes.first() else {
            continue;
        };
        let codes: Vec<u32> = (0..attrs)
            .map(|a| {
                if group.mask >> a & 1 == 1 {
                    SUPPRESSED
                } else {
                    hist.class_codes[a][first]
                }
            })
            .collect();
        let mut merged: BTreeMap<u32, u64> = BTreeMap::new();
        for &c in &group.classes {
            for (v, n) in pairs(c) {
                *merged.entry(v).or_default() += n;
            }
        }
        classes.push((codes, merged.into_iter().collect()));
    }
    classes.sort_by(|x, y| x.0.cmp(&y.0));
    let mut release = ReleasedHistogram::new(node.to_vec(), attrs);
    let mut class_persons = persons.map(|_| Vec::with_capacity(classes.len()));
    let mut tuples = Vec::new();
    for (codes, pairs) in &classes {
        match (persons, class_persons.as_mut()) {
            (Some(persons), Some(counted)) => {
                if !codes.iter().all(|&c| c == SUPPRESSED) {
                    counted.push(persons.distinct_persons(pairs));
                }
                persons.tuples_of(pairs, &mut tuples);
                release.push_class(codes, &tuples, &[]);
            }
            _ => release.push_class(codes, pairs, &[]),
        }
    }
    let own = own_rows(base, &hist, hierarchies, node, &plan);
    Ok((release, plan, class_persons, own))
}

/// The released row of every source tuple (`base`'s classes): its codes at `node`, with
/// `*` where the plan suppressed its class at the node (`hist`).
fn own_rows(
    base: &GroupedHistogram,
    hist: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    node: &[usize],
    plan: &SuppressionPlan,
) -> OwnRows {
    let attrs = hierarchies.len();
    let suppressed: HashMap<Vec<u32>, u64> = (0..hist.class_count())
        .filter(|&c| plan.masks[c] != 0)
        .map(|c| {
            let codes = (0..attrs).map(|a| hist.class_codes[a][c]).collect();
            (codes, plan.masks[c])
        })
        .collect();
    let maps: Vec<Vec<u32>> = (0..attrs)
        .map(|a| hierarchies[a].level_map(base.levels[a], node[a]))
        .collect();
    let classes = base.class_count();
    let mut released: Vec<Vec<u32>> = vec![Vec::with_capacity(classes); attrs];
    let mut codes = vec![0u32; attrs];
    for b in 0..classes {
        for a in 0..attrs {
            codes[a] = maps[a][base.class_codes[a][b] as usize];
        }
        let mask = suppressed.get(&codes).copied().unwrap_or(0);
        for a in 0..attrs {
            released[a].push(if mask >> a & 1 == 1 {
                SUPPRESSED
            } else {
                codes[a]
            });
        }
    }
    OwnRows {
        values: OwnValues::Codes {
            levels: node.to_vec(),
            source: base.class_codes.clone(),
            released,
        },
        records: base.sizes().into_owned(),
    }
}

/// Reads `qi_weights => 'age=2, sex=0.5'` against the quasi-identifiers `qi` (in order):
/// one weight per quasi-identifier, 1 for those not named.
pub fn parse_qi_weights(text: &str, qi: &[String]) -> Result<Vec<f64>> {
    let mut weights = vec![1.0; qi.len()];
    for (name, weight) in crate::method::parse_qi_weights(text)? {
        weights[crate::lattice::qi_position("qi_weights", qi, &name)?] = weight;
    }
    Ok(weights)
}

#[cfg(test)]
mod person_tests;
#[cfg(test)]
mod tests;
