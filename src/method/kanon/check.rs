//! Checking one lattice node: its classes (rolled up from an already computed finer node),
//! which classes fail the privacy model, whether the node is feasible, and its score.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use datafusion::common::Result;
use rayon::prelude::*;

use super::cells::{cell_order, plan_suppression, SuppressionMode, SuppressionPlan};
use super::objective::{Metric, Score, Suppression};
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::lattice::Node;
use crate::privacy::models::{ClassModels, ModelScratch};
use crate::privacy_unit::PersonCodes;

/// The privacy model's test of one equivalence class: at least `k` records and, when
/// `models` is not empty, every ℓ-diversity / t-closeness check.
///
/// The pruned search infers feasibility along the lattice only when the test is
/// [`ClassRule::monotone`]: a class formed by merging classes of which at least one passes
/// also passes (true of "at least k records" and of distinct ℓ-diversity). Then
/// generalizing a node never makes more records fail. Entropy and recursive ℓ-diversity
/// and t-closeness lack the property, and the search checks every node it visits instead.
#[derive(Debug, Clone)]
pub struct ClassRule {
    /// Smallest size of a released class.
    pub k: u64,
    /// The ℓ-diversity and t-closeness checks (empty: k alone).
    pub models: ClassModels,
    /// Per person (METHODS.md §9): a class's values are (person, tuple) combinations, and
    /// `k` counts its distinct persons, not its records.
    pub persons: Option<Arc<PersonCodes>>,
}

/// Per-thread buffers: the models' scratch, a class's value codes and counts, and its
/// values as sensitive tuples (per person).
type Scratch = (ModelScratch, Vec<u32>, Vec<u64>, Vec<(u32, u64)>);

thread_local! {
    /// Buffers of [`ClassRule::releasable`], one set per thread, so that nodes can be
    /// checked on several threads at once.
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

impl ClassRule {
    /// The test of `k` and `models`.
    pub fn new(k: u64, models: ClassModels) -> Self {
        Self {
            k,
            models,
            persons: None,
        }
    }

    /// The test counting the distinct persons of a class instead of its records; the
    /// classes' values are then combinations of `persons`.
    pub fn per_person(mut self, persons: Arc<PersonCodes>) -> Self {
        self.persons = Some(persons);
        self
    }

    /// Whether the test reads the values of a class (otherwise the search works on class
    /// sizes only, which is faster): for ℓ-diversity and t-closeness, or to count persons.
    pub fn needs_values(&self) -> bool {
        !self.models.is_empty() || self.persons.is_some()
    }

    /// Whether a class that merges classes of which one passes always passes.
    pub fn monotone(&self) -> bool {
        self.models.is_monotone()
    }

    /// Whether a class of `size` records with sensitive-value counts `values` (ascending
    /// by value; only meaningful when [`ClassRule::needs_values`]) may be released.
    /// Per person, `values` are (person, tuple) combinations and the class needs `k`
    /// distinct persons; the models then see the class's tuples.
    pub fn releasable(&self, size: u64, values: &[(u32, u64)]) -> bool {
        if size < self.k {
            return false;
        }
        if let Some(persons) = &self.persons {
            if persons.distinct_persons(values) < self.k {
                return false;
            }
        }
        if self.models.is_empty() {
            return true;
        }
        SCRATCH.with(|cell| {
            let mut guard = cell.borrow_mut();
            let (scratch, codes, counts, tuples) = &mut *guard;
            let values = match &self.persons {
                Some(persons) => {
                    persons.tuples_of(values, tuples);
                    tuples.as_slice()
                }
                None => values,
            };
            codes.clear();
            counts.clear();
            codes.extend(values.iter().map(|v| v.0));
            counts.extend(values.iter().map(|v| v.1));
            self.models.accepts(codes, counts, scratch)
        })
    }
}

/// The evaluation of one lattice node (owner-only diagnostics).
#[derive(Debug, Clone, PartialEq)]
pub struct KanonNodeOutcome {
    /// The lattice node.
    pub node: Node,
    /// Whether at most the suppression limit's records are in failing classes.
    pub feasible: bool,
    /// Number of equivalence classes before suppression.
    pub classes: usize,
    /// Number of classes failing the privacy model (counted until the suppression limit was
    /// exceeded, for an infeasible node).
    pub suppressed_classes: usize,
    /// Records in those classes.
    pub failing_records: u64,
    /// Records with every quasi-identifier suppressed (record mode: `failing_records`).
    pub suppressed_records: u64,
    /// Quasi-identifier values replaced by `*`.
    pub suppressed_cells: u64,
    /// The node's score (feasible nodes only).
    pub score: Option<Score>,
    /// A lower bound on the score of this node and every generalization of it.
    pub bound: Score,
}

/// How much memory the computed class histograms kept as roll-up sources may hold, in bytes
/// (about 1.2 million classes of nine quasi-identifiers with class sizes only).
pub const CACHE_BYTES: usize = 64 << 20;

/// Memory held by a histogram, in bytes (approximately).
fn histogram_bytes(h: &GroupedHistogram) -> usize {
    h.class_count()
        * (h.class_codes.len() * std::mem::size_of::<u32>() + std::mem::size_of::<usize>())
        + h.pair_count() * (std::mem::size_of::<u32>() + std::mem::size_of::<u64>())
}

/// Everything needed to check nodes, plus a cache of computed class histograms.
pub struct Evaluator<'a> {
    hierarchies: &'a [&'a Hierarchy],
    /// Leaf-level classes: sizes only, unless the class rule needs values.
    base: Arc<GroupedHistogram>,
    value_domain: usize,
    metric: Metric,
    rule: ClassRule,
    mode: SuppressionMode,
    weights: Vec<f64>,
    max_suppressed: u64,
    /// Computed histograms, least recently used first, and the bytes they hold.
    cache: VecDeque<Arc<GroupedHistogram>>,
    cache_held: usize,
    cache_bytes: usize,
    checks: usize,
    /// Threads [`Evaluator::evaluate_all`] may use (1: one node at a time).
    threads: usize,
    /// Their pool, started by the first check of several nodes at once.
    pool: Option<Arc<rayon::ThreadPool>>,
}

impl<'a> Evaluator<'a> {
    /// An evaluator over the leaf-level histogram `base`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        base: &GroupedHistogram,
        hierarchies: &'a [&'a Hierarchy],
        value_domain: usize,
        metric: Metric,
        rule: ClassRule,
        mode: SuppressionMode,
        weights: Vec<f64>,
        max_suppressed: u64,
    ) -> Self {
        let (base, value_domain) = if rule.needs_values() {
            (base.clone(), value_domain)
        } else {
            (base.class_sizes(), 1)
        };
        Self {
            hierarchies,
            base: Arc::new(base),
            value_domain,
            metric,
            rule,
            mode,
            weights,
            max_suppressed,
            cache: VecDeque::new(),
            cache_held: 0,
            cache_bytes: CACHE_BYTES,
            checks: 0,
            threads: 1,
            pool: None,
        }
    }

    /// Lets [`Evaluator::evaluate_all`] check up to `threads` nodes at once (1: one at a
    /// time). Results do not depend on it. No thread starts until the search first checks
    /// several nodes at once.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// How many nodes [`Evaluator::evaluate_all`] checks at once.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The pool of [`Self::threads`] threads, started on first use.
    fn pool(&mut self) -> Result<Arc<rayon::ThreadPool>> {
        if let Some(pool) = &self.pool {
            return Ok(pool.clone());
        }
        let threads = self.threads;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("dfanon-kanon-{i}"))
            .build()
            .map_err(|e| {
                datafusion::error::DataFusionError::Execution(format!(
                    "kanon: cannot start {threads} search threads: {e}"
                ))
            })?;
        Ok(self.pool.insert(Arc::new(pool)).clone())
    }

    /// The metric.
    pub fn metric(&self) -> &Metric {
        &self.metric
    }

    /// Whether feasibility is monotone along the lattice (see [`ClassRule::monotone`]).
    pub fn monotone(&self) -> bool {
        self.rule.monotone()
    }

    /// Number of nodes checked so far.
    pub fn checks(&self) -> usize {
        self.checks
    }

    /// Sets the memory the cached histograms may hold (default [`CACHE_BYTES`]); results
    /// do not depend on it.
    #[cfg(test)]
    pub fn with_cache_bytes(mut self, bytes: usize) -> Self {
        self.cache_bytes = bytes;
        self
    }

    /// The computed histogram to roll `node` up from: the cached node below it with the
    /// fewest classes, or the leaf level if none is cached (marked as just used).
    fn source_for(&mut self, node: &[usize]) -> Arc<GroupedHistogram> {
        let below = |h: &GroupedHistogram| h.levels.iter().zip(node).all(|(l, t)| l <= t);
        let found = self
            .cache
            .iter()
            .enumerate()
            .filter(|(_, h)| below(h))
            .min_by_key(|(_, h)| h.class_count())
            .map(|(i, _)| i);
        match found.and_then(|i| self.cache.remove(i)) {
            Some(source) => {
                self.cache.push_back(source.clone());
                source
            }
            None => self.base.clone(),
        }
    }

    /// `source` rolled up to `node`. Without sensitive values the roll-up adds up class
    /// sizes only ([`GroupedHistogram::roll_up_sizes`]).
    fn roll_up(
        &self,
        source: &Arc<GroupedHistogram>,
        node: &[usize],
    ) -> Result<Arc<GroupedHistogram>> {
        if source.levels == node {
            return Ok(source.clone());
        }
        Ok(Arc::new(if self.rule.needs_values() {
            source.roll_up(self.hierarchies, node, self.value_domain)?
        } else {
            source.roll_up_sizes(self.hierarchies, node)
        }))
    }

    /// Keeps a computed histogram as a roll-up source, dropping the least recently used
    /// ones beyond the cache's memory limit.
    fn remember(&mut self, source: &Arc<GroupedHistogram>, rolled: Arc<GroupedHistogram>) {
        if Arc::ptr_eq(source, &rolled) {
            return;
        }
        self.cache_held += histogram_bytes(&rolled);
        self.cache.push_back(rolled);
        while self.cache_held > self.cache_bytes {
            let Some(dropped) = self.cache.pop_front() else {
                break;
            };
            self.cache_held -= histogram_bytes(&dropped);
        }
    }

    /// The classes at `node`, rolled up from the computed node below it with the fewest
    /// classes (the leaf level if none is cached). Computed histograms are kept, least
    /// recently used dropped first, up to the cache's memory limit: the pruned search jumps
    /// across the lattice, and a node's predecessors are often checked long before it.
    pub fn classes_at(&mut self, node: &[usize]) -> Result<Arc<GroupedHistogram>> {
        let source = self.source_for(node);
        let rolled = self.roll_up(&source, node)?;
        self.remember(&source, rolled.clone());
        Ok(rolled)
    }

    /// The classes failing the privacy model, and whether they hold at most the suppression
    /// limit's records (stops counting as soon as they do not).
    pub fn failing(&self, classes: &GroupedHistogram) -> (Vec<usize>, u64, bool) {
        let mut failing = Vec::new();
        let mut records = 0u64;
        for c in 0..classes.class_count() {
            let range = classes.class_range(c);
            let size: u64 = classes.pair_counts[range.clone()].iter().sum();
            let values: Vec<(u32, u64)> = if self.rule.needs_values() {
                range
                    .map(|p| (classes.pair_values[p], classes.pair_counts[p]))
                    .collect()
            } else {
                Vec::new()
            };
            if !self.rule.releasable(size, &values) {
                failing.push(c);
                records += size;
                if records > self.max_suppressed {
                    return (failing, records, false);
                }
            }
        }
        (failing, records, true)
    }

    /// The suppression of `classes`' failing classes in this evaluator's mode.
    pub fn plan(&self, classes: &GroupedHistogram, failing: &[usize]) -> SuppressionPlan {
        let order = cell_order(self.hierarchies, &classes.levels, &self.weights);
        let rule = &self.rule;
        plan_suppression(classes, failing, self.mode, &order, &|n, v| {
            rule.releasable(n, v)
        })
    }

    /// Checks `node`: classes, failing classes, feasibility, and the score if feasible.
    pub fn evaluate(&mut self, node: &[usize]) -> Result<KanonNodeOutcome> {
        self.checks += 1;
        let classes = self.classes_at(node)?;
        Ok(self.assess(node, &classes))
    }

    /// Checks every node of `nodes`, on up to [`Evaluator::threads`] threads at once; the
    /// outcomes, in the order of `nodes`, equal those of [`Evaluator::evaluate`].
    pub fn evaluate_all(&mut self, nodes: &[Node]) -> Result<Vec<KanonNodeOutcome>> {
        if self.threads < 2 || nodes.len() < 2 {
            return nodes.iter().map(|n| self.evaluate(n)).collect();
        }
        let pool = self.pool()?;
        self.checks += nodes.len();
        let sources: Vec<Arc<GroupedHistogram>> =
            nodes.iter().map(|n| self.source_for(n)).collect();
        let this = &*self;
        let done: Vec<Result<(Arc<GroupedHistogram>, KanonNodeOutcome)>> = pool.install(|| {
            nodes
                .par_iter()
                .zip(&sources)
                .map(|(node, source)| {
                    let classes = this.roll_up(source, node)?;
                    let outcome = this.assess(node, &classes);
                    Ok((classes, outcome))
                })
                .collect()
        });
        let mut outcomes = Vec::with_capacity(nodes.len());
        for (result, source) in done.into_iter().zip(&sources) {
            let (classes, outcome) = result?;
            self.remember(source, classes);
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }

    /// The outcome at `node` whose classes are `classes`.
    fn assess(&self, node: &[usize], classes: &GroupedHistogram) -> KanonNodeOutcome {
        let (failing, failing_records, feasible) = self.failing(classes);
        let mut bound = self.metric.static_bound(node);
        if let Some(b) = self.metric.class_bound(classes) {
            bound = bound.max(b);
        }
        let mut outcome = KanonNodeOutcome {
            node: node.to_vec(),
            feasible,
            classes: classes.class_count(),
            suppressed_classes: failing.len(),
            failing_records,
            suppressed_records: failing_records,
            suppressed_cells: failing_records * node.len() as u64,
            score: None,
            bound,
        };
        if feasible {
            let plan = self.plan(classes, &failing);
            outcome.suppressed_records = plan.suppressed_records;
            outcome.suppressed_cells = plan.suppressed_cells;
            outcome.score = Some(self.metric.score(&Suppression {
                classes,
                masks: &plan.masks,
                released_groups: plan.released_groups,
                released_square_sum: plan.released_square_sum,
                suppressed_records: plan.suppressed_records,
            }));
        }
        outcome
    }
}
