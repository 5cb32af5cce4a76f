//! Finding the optimal node (METHODS.md §3.2): a pruned best-first search in the spirit of
//! ARX's Flash, and the exhaustive sweep it must agree with.
//!
//! The pruned search pops nodes in ascending order of a lower bound on their score (a
//! priority queue seeded with the bottom node; a node enters when a predecessor leaves),
//! and stops as soon as the bound of the next node cannot beat the best feasible score
//! found: every node not yet popped lies above a queued one and so scores at least its
//! bound. Feasibility is monotone along generalization, so a checked node tags its whole
//! up-set feasible or its whole down-set infeasible (predictive tagging); a node of unknown
//! feasibility first triggers a binary search along an upward path, which settles large
//! parts of the lattice with few checks. Per-node state is one byte, indexed by the node's
//! position; nodes are decoded from their position on demand, never listed.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};

use datafusion::common::Result;

use super::check::{Evaluator, KanonNodeOutcome};
use super::objective::Score;
use crate::lattice::{Lattice, Node};
use crate::progress::Progress;

/// How the optimal node is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchStrategy {
    /// Best-first with lower bounds and predictive tagging (checks few nodes).
    Pruned,
    /// Every node is checked (diagnostics list the whole lattice).
    Exhaustive,
}

impl SearchStrategy {
    /// The strategy called `name` (`'pruned'` or `'exhaustive'`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "pruned" => Some(Self::Pruned),
            "exhaustive" => Some(Self::Exhaustive),
            _ => None,
        }
    }

    /// The name in SQL.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Pruned => "pruned",
            Self::Exhaustive => "exhaustive",
        }
    }
}

/// What a search found.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    /// Every checked node, in lattice order.
    pub outcomes: Vec<KanonNodeOutcome>,
    /// Index in `outcomes` of the optimal feasible node, if any node is feasible.
    pub chosen: Option<usize>,
}

/// The order that decides the optimum: score, then fewer generalization levels, then the
/// earlier position in lattice order.
fn better(a: (Score, usize, usize), b: (Score, usize, usize)) -> bool {
    match a.0.compare(&b.0) {
        Ordering::Less => true,
        Ordering::Greater => false,
        Ordering::Equal => (a.1, a.2) < (b.1, b.2),
    }
}

/// Runs `strategy` over `lattice`.
pub fn search(
    evaluator: &mut Evaluator<'_>,
    lattice: &Lattice,
    strategy: SearchStrategy,
    all_feasible: bool,
    progress: &Progress,
) -> Result<SearchOutcome> {
    let mut found = match strategy {
        SearchStrategy::Exhaustive => exhaustive(evaluator, lattice, progress)?,
        SearchStrategy::Pruned => {
            Pruned::new(lattice, all_feasible, evaluator.monotone()).run(evaluator, progress)?
        }
    };
    progress.report(lattice.len(), lattice.len())?;
    let chosen_node = found.chosen.map(|i| found.outcomes[i].node.clone());
    found.outcomes.sort_by_key(|o| lattice.index_of(&o.node));
    found.chosen = chosen_node.and_then(|n| found.outcomes.iter().position(|o| o.node == n));
    Ok(found)
}

/// The best feasible outcome so far: `(score, level sum, position, outcome index)`.
type Best = Option<(Score, usize, usize, usize)>;

fn track(best: &mut Best, outcome: &KanonNodeOutcome, position: usize, index: usize) {
    if let (true, Some(score)) = (outcome.feasible, outcome.score) {
        let candidate = (score, outcome.node.iter().sum::<usize>(), position);
        if best
            .as_ref()
            .is_none_or(|b| better(candidate, (b.0, b.1, b.2)))
        {
            *best = Some((candidate.0, candidate.1, candidate.2, index));
        }
    }
}

/// Checks every node.
fn exhaustive(
    evaluator: &mut Evaluator<'_>,
    lattice: &Lattice,
    progress: &Progress,
) -> Result<SearchOutcome> {
    let total = lattice.len();
    let mut outcomes = Vec::with_capacity(total.min(1 << 20));
    let mut best: Best = None;
    for position in 0..total {
        let Some(node) = lattice.node_at(position) else {
            break;
        };
        let outcome = evaluator.evaluate(&node)?;
        track(&mut best, &outcome, position, outcomes.len());
        outcomes.push(outcome);
        progress.report(position + 1, total)?;
    }
    Ok(SearchOutcome {
        outcomes,
        chosen: best.map(|b| b.3),
    })
}

const PROCESSED: u8 = 1;
const CHECKED: u8 = 2;
const FEASIBLE: u8 = 4;
const INFEASIBLE: u8 = 8;

/// A queue entry, ordered by bound, then level sum, then position.
#[derive(Debug, Clone, Copy)]
struct Entry {
    bound: Score,
    level_sum: usize,
    position: usize,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.bound
            .compare(&other.bound)
            .then(self.level_sum.cmp(&other.level_sum))
            .then(self.position.cmp(&other.position))
    }
}

/// State of the pruned search.
struct Pruned<'l> {
    lattice: &'l Lattice,
    /// Position stride of each attribute.
    strides: Vec<usize>,
    /// Number of levels of each attribute within the lattice's bounds.
    widths: Vec<usize>,
    state: Vec<u8>,
    all_feasible: bool,
    /// Whether feasibility is monotone (see [`super::ClassRule::monotone`]); otherwise
    /// nothing is inferred about unchecked nodes.
    monotone: bool,
    outcomes: Vec<KanonNodeOutcome>,
    checked: HashMap<usize, usize>,
    best: Best,
    /// Outcomes of nodes checked ahead of their turn, on otherwise idle threads, by
    /// position. A node's outcome does not depend on when it is computed, so the search
    /// visits, checks and chooses exactly as it would one node at a time.
    ahead: HashMap<usize, KanonNodeOutcome>,
}

impl<'l> Pruned<'l> {
    fn new(lattice: &'l Lattice, all_feasible: bool, monotone: bool) -> Self {
        let widths: Vec<usize> = lattice
            .min_levels()
            .iter()
            .zip(lattice.max_levels())
            .map(|(lo, hi)| hi - lo + 1)
            .collect();
        let mut strides = vec![1usize; widths.len()];
        for a in (0..widths.len().saturating_sub(1)).rev() {
            strides[a] = strides[a + 1] * widths[a + 1];
        }
        Self {
            lattice,
            strides,
            widths,
            state: vec![0u8; lattice.len()],
            all_feasible,
            monotone,
            outcomes: Vec::new(),
            checked: HashMap::new(),
            best: None,
            ahead: HashMap::new(),
        }
    }

    /// Level of attribute `a` at `position`, counted from the lattice's lowest level.
    fn level(&self, position: usize, a: usize) -> usize {
        (position / self.strides[a]) % self.widths[a]
    }

    /// Sets `flag` on `position` and on every node below it (`down`) or above it: the
    /// flag's set is closed in that direction, so the walk stops at flagged nodes.
    fn tag(&mut self, position: usize, flag: u8, down: bool) {
        if self.state[position] & flag != 0 {
            return;
        }
        self.state[position] |= flag;
        let mut stack = vec![position];
        let attrs = self.strides.len();
        while let Some(p) = stack.pop() {
            for a in 0..attrs {
                let level = self.level(p, a);
                let next = if down {
                    if level == 0 {
                        continue;
                    }
                    p - self.strides[a]
                } else {
                    if level + 1 == self.widths[a] {
                        continue;
                    }
                    p + self.strides[a]
                };
                if self.state[next] & flag == 0 {
                    self.state[next] |= flag;
                    stack.push(next);
                }
            }
        }
    }

    /// Checks one node and tags the lattice with what it shows.
    fn check(&mut self, evaluator: &mut Evaluator<'_>, node: &Node, position: usize) -> Result<()> {
        let outcome = match self.ahead.remove(&position) {
            Some(outcome) => outcome,
            None => evaluator.evaluate(node)?,
        };
        self.record(outcome, position);
        Ok(())
    }

    /// Tags the lattice with what the checked node at `position` shows.
    fn record(&mut self, outcome: KanonNodeOutcome, position: usize) {
        self.state[position] |= CHECKED;
        if outcome.feasible {
            if self.all_feasible || !self.monotone {
                self.state[position] |= FEASIBLE;
            } else {
                self.tag(position, FEASIBLE, false);
            }
        } else if self.monotone {
            self.tag(position, INFEASIBLE, true);
        } else {
            self.state[position] |= INFEASIBLE;
        }
        track(&mut self.best, &outcome, position, self.outcomes.len());
        self.checked.insert(position, self.outcomes.len());
        self.outcomes.push(outcome);
    }

    /// Whether every popped node that is not pruned gets checked, with no binary search
    /// first: then the next nodes in the queue are the next ones checked, and can be
    /// checked ahead.
    fn checks_in_queue_order(&self) -> bool {
        self.all_feasible || !self.monotone
    }

    /// Whether the queue entry is out of date (its node was processed, or re-queued with a
    /// higher bound).
    fn stale(&self, entry: &Entry, keys: &HashMap<usize, Score>) -> bool {
        self.state[entry.position] & PROCESSED != 0
            || keys.get(&entry.position) != Some(&entry.bound)
    }

    /// Whether a node queued as `entry` may still beat the best feasible node so far.
    fn may_beat_best(&self, evaluator: &Evaluator<'_>, entry: &Entry) -> bool {
        self.best.as_ref().is_none_or(|best| {
            let wins_tie = (entry.level_sum, entry.position) < (best.1, best.2);
            evaluator.metric().may_beat(entry.bound, best.0, wins_tie)
        })
    }

    /// Checks the popped node at `position` together with the nodes next in the queue
    /// that will be checked if the search reaches them, one per idle thread; keeps their
    /// outcomes for their turn.
    fn check_with_next(
        &mut self,
        evaluator: &mut Evaluator<'_>,
        node: &Node,
        position: usize,
        queue: &mut BinaryHeap<Reverse<Entry>>,
        keys: &HashMap<usize, Score>,
    ) -> Result<()> {
        if self.ahead.contains_key(&position) || evaluator.threads() < 2 {
            return self.check(evaluator, node, position);
        }
        let mut nodes = vec![node.clone()];
        let mut positions = vec![position];
        let mut held = Vec::new();
        while nodes.len() < evaluator.threads() {
            let Some(Reverse(entry)) = queue.pop() else {
                break;
            };
            // Out-of-date entries (the popped node's among them: it is processed) are
            // dropped here as the main loop would drop them; the others go back.
            if self.stale(&entry, keys) {
                continue;
            }
            held.push(entry);
            if self.state[entry.position] & (INFEASIBLE | CHECKED) != 0
                || self.ahead.contains_key(&entry.position)
                || positions.contains(&entry.position)
            {
                continue;
            }
            if !self.may_beat_best(evaluator, &entry) {
                break;
            }
            let Some(next) = self.lattice.node_at(entry.position) else {
                continue;
            };
            nodes.push(next);
            positions.push(entry.position);
        }
        queue.extend(held.into_iter().map(Reverse));
        let mut outcomes = evaluator.evaluate_all(&nodes)?.into_iter();
        if let Some(first) = outcomes.next() {
            self.record(first, position);
        }
        for (outcome, &p) in outcomes.zip(&positions[1..]) {
            self.ahead.insert(p, outcome);
        }
        Ok(())
    }

    /// Binary search for the lowest feasible node on an upward path from `start` through
    /// nodes of unknown feasibility (each step to the successor with the smallest bound).
    fn climb(&mut self, evaluator: &mut Evaluator<'_>, start: &Node) -> Result<()> {
        let mut path = vec![start.clone()];
        while let Some(current) = path.last() {
            let next = self
                .lattice
                .successors(current)
                .into_iter()
                .filter(|s| self.state[self.lattice.index_of(s)] & FEASIBLE == 0)
                .min_by(|x, y| {
                    let (bx, by) = (
                        evaluator.metric().static_bound(x),
                        evaluator.metric().static_bound(y),
                    );
                    bx.compare(&by)
                        .then(self.lattice.index_of(x).cmp(&self.lattice.index_of(y)))
                });
            match next {
                Some(n) => path.push(n),
                None => break,
            }
        }
        let (mut low, mut high) = (0isize, path.len() as isize - 1);
        while low <= high {
            let mid = ((low + high) / 2) as usize;
            let position = self.lattice.index_of(&path[mid]);
            if self.state[position] & (FEASIBLE | INFEASIBLE) == 0 {
                self.check(evaluator, &path[mid], position)?;
            }
            if self.state[position] & FEASIBLE != 0 {
                high = mid as isize - 1;
            } else {
                low = mid as isize + 1;
            }
        }
        Ok(())
    }

    fn run(mut self, evaluator: &mut Evaluator<'_>, progress: &Progress) -> Result<SearchOutcome> {
        let total = self.lattice.len();
        let mut queue: BinaryHeap<Reverse<Entry>> = BinaryHeap::new();
        let mut keys: HashMap<usize, Score> = HashMap::new();
        if let Some(bottom) = self.lattice.node_at(0) {
            let bound = evaluator.metric().static_bound(&bottom);
            keys.insert(0, bound);
            queue.push(Reverse(Entry {
                bound,
                level_sum: bottom.iter().sum(),
                position: 0,
            }));
        }
        let mut popped = 0usize;
        while let Some(Reverse(entry)) = queue.pop() {
            let position = entry.position;
            if self.stale(&entry, &keys) {
                continue;
            }
            if !self.may_beat_best(evaluator, &entry) {
                break;
            }
            keys.remove(&position);
            self.state[position] |= PROCESSED;
            popped += 1;
            let Some(node) = self.lattice.node_at(position) else {
                continue;
            };
            if self.state[position] & (INFEASIBLE | CHECKED) == 0 {
                let before = evaluator.checks();
                if self.monotone && !self.all_feasible && self.state[position] & FEASIBLE == 0 {
                    self.climb(evaluator, &node)?;
                }
                if self.state[position] & (INFEASIBLE | CHECKED) == 0 {
                    if self.checks_in_queue_order() {
                        self.check_with_next(evaluator, &node, position, &mut queue, &keys)?;
                    } else {
                        self.check(evaluator, &node, position)?;
                    }
                }
                if evaluator.checks() != before {
                    progress.report(popped, total)?;
                }
            }
            let mut inherited = entry.bound;
            if let Some(&i) = self.checked.get(&position) {
                inherited = inherited.max(self.outcomes[i].bound);
            }
            for successor in self.lattice.successors(&node) {
                let s = self.lattice.index_of(&successor);
                if self.state[s] & PROCESSED != 0 {
                    continue;
                }
                let bound = evaluator.metric().static_bound(&successor).max(inherited);
                let raise = keys
                    .get(&s)
                    .is_none_or(|k| bound.compare(k) == Ordering::Greater);
                if raise {
                    keys.insert(s, bound);
                    queue.push(Reverse(Entry {
                        bound,
                        level_sum: successor.iter().sum(),
                        position: s,
                    }));
                }
            }
        }
        Ok(SearchOutcome {
            outcomes: self.outcomes,
            chosen: self.best.map(|b| b.3),
        })
    }
}
