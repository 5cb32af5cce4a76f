//! SafePub's top-down search (Section 6, Fig. 7).
//!
//! Starting at the top of the lattice, every step adds the direct predecessors of the
//! current pivot to the candidate set, removes the pivot, and draws the next pivot from
//! the candidates with the exponential mechanism at `ε_search / steps`. Every candidate
//! is scored once, when first inserted. The result is the last pivot (the default: a
//! function of the private choices only) or, as in the paper, the pivot with the best score.

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
    /// The last pivot, a function of the differentially private choices only (the default).
    #[default]
    Last,
}

impl FinalSelection {
    /// Parses `best` or `last`.
    pub fn parse(text: &str) -> Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "best" => Ok(Self::Best),
            "last" => Ok(Self::Last),
            other => Err(DataFusionError::Plan(format!(
                "unknown final_selection '{other}' for method 'safepub'; valid: 'best', 'last'"
            ))),
        }
    }

    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Best => "best",
            Self::Last => "last",
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
    let step_epsilon = if steps > 0 {
        epsilon / steps as f64
    } else {
        epsilon
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
    };
    Ok(SearchResult {
        chosen,
        evaluation,
        steps: history,
        scored: scores.len(),
    })
}
