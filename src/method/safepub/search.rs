//! SafePub's top-down search (Section 6, Fig. 7).
//!
//! Starting at the top of the lattice, every step adds the direct predecessors of the
//! current pivot to the candidate set, removes the pivot, and draws the next pivot from
//! the candidates with the exponential mechanism at `ε_walk / steps`. Every candidate
//! is scored once, when first inserted. The result is drawn by the exponential mechanism
//! among every scheme the walk scored, at `ε_final` (the default: [`FINAL_SHARE`] of
//! `ε_search`), or is the last pivot (a function of the private choices only, the walk
//! spending all of `ε_search`), or, as in the paper, the pivot with the best score.
//!
//! [`exhaustive_search`] instead scores every scheme of the lattice and draws one with
//! the exponential mechanism at `ε_search` (the default on lattices of at most
//! [`EXHAUSTIVE_MAX_NODES`] schemes).

use datafusion::common::{DataFusionError, Result};

use super::score::Evaluation;
use crate::lattice::{Lattice, Node};
use crate::mechanism::exponential::exponential_mechanism;
use crate::mechanism::rng::AnonRng;
use crate::progress::Progress;

/// Scores schemes for the search.
pub trait NodeScorer {
    /// Scores `node`: the top of the lattice (`from = None`) or the direct predecessor of
    /// the pivot `from.0` that is one level finer in attribute `from.1`.
    fn score(&mut self, node: &[usize], from: Option<(&[usize], usize)>) -> Result<Evaluation>;
    /// Called when `node` becomes the pivot, before its predecessors are scored.
    fn enter(&mut self, node: &[usize]) -> Result<()>;
}

/// Which scheme the search returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FinalSelection {
    /// The pivot with the best score (the paper's and ARX's rule): an exact comparison of
    /// scores computed on the data, not covered by the privacy proof.
    Best,
    /// The last pivot, a function of the differentially private choices only.
    Last,
    /// Drawn by the exponential mechanism among every scheme the search scored (the
    /// default): the walk spends `1 − FINAL_SHARE` of `ε_search`, the draw the rest.
    #[default]
    Exponential,
}

/// Share of `ε_search` the final exponential draw spends after a top-down walk.
pub const FINAL_SHARE: f64 = 0.5;

/// Largest lattice the default search scores in full (`search => 'auto'`).
pub const EXHAUSTIVE_MAX_NODES: usize = 20_000;

impl FinalSelection {
    /// Parses `exponential`, `last` or `best`.
    pub fn parse(text: &str) -> Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "best" => Ok(Self::Best),
            "last" => Ok(Self::Last),
            "exponential" => Ok(Self::Exponential),
            other => Err(DataFusionError::Plan(format!(
                "unknown final_selection '{other}' for method 'safepub'; valid: 'exponential', 'last', 'best'"
            ))),
        }
    }

    /// `(ε_walk, ε_final)` of a top-down search spending `epsilon`.
    pub fn split(self, epsilon: f64) -> (f64, f64) {
        match self {
            Self::Exponential => {
                let last = epsilon * FINAL_SHARE;
                (epsilon - last, last)
            }
            Self::Best | Self::Last => (epsilon, 0.0),
        }
    }

    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Best => "best",
            Self::Last => "last",
            Self::Exponential => "exponential",
        }
    }
}

/// How the search walks the lattice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchStrategy {
    /// Every scheme when the lattice has at most [`EXHAUSTIVE_MAX_NODES`] and the final
    /// selection is `exponential`, else the top-down walk (the default).
    #[default]
    Auto,
    /// Every scheme of the lattice is scored.
    Exhaustive,
    /// The paper's top-down walk.
    TopDown,
}

impl SearchStrategy {
    /// Parses `auto`, `exhaustive` or `top_down`.
    pub fn parse(text: &str) -> Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "exhaustive" => Ok(Self::Exhaustive),
            "top_down" => Ok(Self::TopDown),
            other => Err(DataFusionError::Plan(format!(
                "unknown search '{other}' for method 'safepub'; valid: 'auto', 'exhaustive', 'top_down'"
            ))),
        }
    }

    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Exhaustive => "exhaustive",
            Self::TopDown => "top_down",
        }
    }

    /// `Exhaustive` or `TopDown` for a lattice of `nodes` schemes (public: the
    /// hierarchies' heights and the level bounds).
    pub fn resolve(self, nodes: usize, selection: FinalSelection) -> Self {
        match self {
            Self::Auto
                if selection == FinalSelection::Exponential && nodes <= EXHAUSTIVE_MAX_NODES =>
            {
                Self::Exhaustive
            }
            Self::Auto => Self::TopDown,
            other => other,
        }
    }
}

/// One step of the search (owner-only diagnostics).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchStep {
    /// Step number (0 = the top, before any choice).
    pub step: u64,
    /// The pivot chosen in this step.
    pub pivot: Node,
    /// Its score and counts.
    pub evaluation: Evaluation,
    /// Number of candidates it was drawn from.
    pub candidates: usize,
}

/// The outcome of a search.
#[derive(Debug, Clone)]
pub struct SearchResult {
    /// The scheme returned.
    pub chosen: Node,
    /// Its score and counts.
    pub evaluation: Evaluation,
    /// Every pivot in order, starting with the top.
    pub steps: Vec<SearchStep>,
    /// Number of distinct schemes scored.
    #[cfg_attr(not(test), allow(dead_code))] // the tests check the cache against it
    pub scored: usize,
}

/// Runs the search for `steps` steps with `epsilon` in total, scores of the given
/// `sensitivity`, calling `progress(step, steps)` as it goes.
#[allow(clippy::too_many_arguments)]
pub fn top_down_search(
    scorer: &mut dyn NodeScorer,
    lattice: &Lattice,
    steps: u64,
    epsilon: f64,
    sensitivity: f64,
    selection: FinalSelection,
    rng: &mut AnonRng,
    progress: &Progress,
) -> Result<SearchResult> {
    let top = lattice.top();
    let top_index = lattice.index_of(&top);
    let mut scores: std::collections::HashMap<usize, Evaluation> = Default::default();
    let top_eval = scorer.score(&top, None)?;
    scores.insert(top_index, top_eval);

    let mut pivot = top.clone();
    let mut best = (top.clone(), top_eval);
    let mut candidates: Vec<(usize, Node)> = vec![(top_index, top)];
    let mut in_candidates: std::collections::HashSet<usize> = [top_index].into_iter().collect();
    let mut history = vec![SearchStep {
        step: 0,
        pivot: pivot.clone(),
        evaluation: top_eval,
        candidates: 1,
    }];
    let (walk_epsilon, final_epsilon) = selection.split(epsilon);
    let step_epsilon = if steps > 0 {
        walk_epsilon / steps as f64
    } else {
        walk_epsilon
    };
    let total = usize::try_from(steps).unwrap_or(usize::MAX);

    for step in 1..=steps {
        scorer.enter(&pivot)?;
        for attr in 0..pivot.len() {
            if pivot[attr] == 0 {
                continue;
            }
            let mut node = pivot.clone();
            node[attr] -= 1;
            let index = lattice.index_of(&node);
            if !in_candidates.insert(index) {
                continue;
            }
            if let std::collections::hash_map::Entry::Vacant(slot) = scores.entry(index) {
                slot.insert(scorer.score(&node, Some((&pivot, attr)))?);
            }
            candidates.push((index, node));
        }
        let pivot_index = lattice.index_of(&pivot);
        candidates.retain(|(i, _)| *i != pivot_index);
        in_candidates.remove(&pivot_index);
        if candidates.is_empty() {
            break;
        }
        let utilities: Vec<f64> = candidates.iter().map(|(i, _)| scores[i].score).collect();
        let choice = exponential_mechanism(rng, &utilities, step_epsilon, sensitivity)?;
        let (index, node) = candidates[choice].clone();
        let evaluation = scores[&index];
        history.push(SearchStep {
            step,
            pivot: node.clone(),
            evaluation,
            candidates: candidates.len(),
        });
        if evaluation.score > best.1.score {
            best = (node.clone(), evaluation);
        }
        pivot = node;
        progress.report(step as usize, total)?;
    }

    let (chosen, evaluation) = match selection {
        FinalSelection::Best => best,
        FinalSelection::Last => {
            let last = history.last().map(|s| (s.pivot.clone(), s.evaluation));
            last.unwrap_or(best)
        }
        FinalSelection::Exponential => {
            // Every scheme scored: a function of the pivots (the top and the direct
            // predecessors of each), in lattice order.
            let mut scored: Vec<(usize, Evaluation)> =
                scores.iter().map(|(&i, &e)| (i, e)).collect();
            scored.sort_unstable_by_key(|&(i, _)| i);
            draw(lattice, &scored, final_epsilon, sensitivity, rng)?
        }
    };
    Ok(SearchResult {
        chosen,
        evaluation,
        steps: history,
        scored: scores.len(),
    })
}

/// The exponential mechanism at `epsilon` over `scored` (lattice index, evaluation).
fn draw(
    lattice: &Lattice,
    scored: &[(usize, Evaluation)],
    epsilon: f64,
    sensitivity: f64,
    rng: &mut AnonRng,
) -> Result<(Node, Evaluation)> {
    let utilities: Vec<f64> = scored.iter().map(|(_, e)| e.score).collect();
    let choice = exponential_mechanism(rng, &utilities, epsilon, sensitivity)?;
    let (index, evaluation) = scored[choice];
    Ok((node_at(lattice, index)?, evaluation))
}

/// The scheme at lattice index `index`.
fn node_at(lattice: &Lattice, index: usize) -> Result<Node> {
    lattice.node_at(index).ok_or_else(|| {
        DataFusionError::Internal(format!("safepub: lattice node {index} out of range"))
    })
}

/// Scores every scheme of `lattice` and draws one with the exponential mechanism at
/// `epsilon`, scores of the given `sensitivity` (`best = true`: the best-scoring scheme
/// instead, not private). Each scheme is scored as a refinement of its parent in a spanning
/// tree of the lattice (one level coarser in its first attribute below its maximum), so
/// every scheme costs one pass over its parent's kept classes.
pub fn exhaustive_search(
    scorer: &mut dyn NodeScorer,
    lattice: &Lattice,
    epsilon: f64,
    sensitivity: f64,
    best: bool,
    rng: &mut AnonRng,
    progress: &Progress,
) -> Result<SearchResult> {
    let (min, max) = (lattice.min_levels(), lattice.max_levels());
    let top = lattice.top();
    let top_eval = scorer.score(&top, None)?;
    let mut scored = vec![(lattice.index_of(&top), top_eval)];
    let mut stack = vec![top.clone()];
    let total = lattice.len();
    while let Some(parent) = stack.pop() {
        // Children in the spanning tree: one level finer in attribute a, every attribute
        // before a at its maximum.
        let mut children = Vec::new();
        for a in 0..parent.len() {
            if parent[a] > min[a] {
                children.push(a);
            }
            if parent[a] < max[a] {
                break;
            }
        }
        if children.is_empty() {
            continue;
        }
        scorer.enter(&parent)?;
        for a in children {
            let mut child = parent.clone();
            child[a] -= 1;
            let evaluation = scorer.score(&child, Some((&parent, a)))?;
            scored.push((lattice.index_of(&child), evaluation));
            stack.push(child);
        }
        progress.report(scored.len(), total)?;
    }
    scored.sort_unstable_by_key(|&(i, _)| i);
    let (chosen, evaluation) = if best {
        // The first of the best-scoring schemes in lattice order.
        let (index, evaluation) =
            scored
                .iter()
                .copied()
                .fold(scored[0], |b, s| if s.1.score > b.1.score { s } else { b });
        (node_at(lattice, index)?, evaluation)
    } else {
        draw(lattice, &scored, epsilon, sensitivity, rng)?
    };
    let steps = vec![
        SearchStep {
            step: 0,
            pivot: top,
            evaluation: top_eval,
            candidates: 1,
        },
        SearchStep {
            step: 1,
            pivot: chosen.clone(),
            evaluation,
            candidates: scored.len(),
        },
    ];
    Ok(SearchResult {
        chosen,
        evaluation,
        steps,
        scored: scored.len(),
    })
}
