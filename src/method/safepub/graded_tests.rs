//! Graded suppression in the scores (docs/METHODS.md §2.12, Lemma 2), the exhaustive
//! search and the exponential final selection.

use std::collections::{BTreeMap, HashSet};

use rand::Rng;

use super::evaluator::Evaluator;
use super::partition::SampleData;
use super::score::{Evaluation, ScoreFunction, ScoreSuppression};
use super::search::{exhaustive_search, top_down_search, FinalSelection};
use super::tests::{all_nodes, close, fixed, hierarchies, random_records};
use crate::hierarchy::Hierarchy;
use crate::lattice::Lattice;
use crate::mechanism::exponential::exponential_weights;
use crate::mechanism::rng::rng_from_seed;
use crate::progress::Progress;
use crate::testing::stats::{assert_chi_square_fits, categorical_bins};
use crate::testing::{histogram, ladder as interval, Record};

const GRADED: [ScoreFunction; 2] = [ScoreFunction::Granularity, ScoreFunction::Intensity];

/// The graded score of one scheme through the production path.
fn graded_score(
    function: ScoreFunction,
    hs: &[&Hierarchy],
    lattice: &Lattice,
    sample: &SampleData,
    node: &[usize],
    k: u64,
    values: u32,
) -> Evaluation {
    let mut evaluator = Evaluator::new(sample, hs, lattice, k, function, values as usize)
        .with_suppression(ScoreSuppression::Graded);
    let partition = evaluator.partition(node);
    evaluator.score_partition(&partition)
}

/// The definition record by record: each (generalized quasi-identifiers, informative
/// value) group of s sampled records counts as `w(s) = min(s, max(0, 2s − ⌈4k/3⌉))` kept
/// records, each costing its cells; every other input record costs m. Also the release's
/// counts: records and classes with a group of at least k.
fn graded_definition(
    function: ScoreFunction,
    hs: &[&Hierarchy],
    sampled: &[Record],
    input_rows: u64,
    node: &[usize],
    k: u64,
) -> (f64, u64, u64) {
    let m = hs.len();
    let mut groups: BTreeMap<(Vec<u32>, u32), u64> = BTreeMap::new();
    for r in sampled {
        let codes: Vec<u32> = (0..m)
            .map(|a| hs[a].level(node[a]).leaf_to_code()[r.0[a] as usize])
            .collect();
        *groups.entry((codes, r.1)).or_default() += 1;
    }
    let mut counted_total = 0.0;
    let mut cells = 0.0;
    let mut kept = 0;
    let mut classes: HashSet<Vec<u32>> = HashSet::new();
    for ((codes, _), &s) in &groups {
        let c = (4 * k).div_ceil(3);
        let w = s.min((2 * s).saturating_sub(c)) as f64;
        if s >= k {
            kept += s;
            classes.insert(codes.clone());
        }
        counted_total += w;
        for a in 0..m {
            let h = hs[a];
            cells += w * match function {
                ScoreFunction::Granularity => {
                    h.level(node[a]).leaf_counts()[codes[a] as usize] as f64 / h.leaf_count() as f64
                }
                _ if h.height() == 0 => 0.0,
                _ => node[a] as f64 / h.height() as f64,
            };
        }
    }
    let score = -(cells + (input_rows as f64 - counted_total) * m as f64);
    (score, kept, classes.len() as u64)
}

/// Graded granularity and intensity equal the definition on every scheme, with and
/// without an informative column, and their kept records and classes are the release's.
#[test]
fn graded_scores_match_the_definition() {
    let owned = hierarchies();
    let hs: Vec<&Hierarchy> = owned.iter().collect();
    let lattice = all_nodes(&hs);
    let mut rng = rng_from_seed(21);
    for trial in 0..5 {
        for values in [1u32, 3] {
            let records = random_records(&mut rng, 60 + 50 * trial, &hs, values);
            let input_rows = records.len() as u64 + 17;
            let sample = SampleData::new(histogram(&hs, &records, values as usize), input_rows);
            for k in [1u64, 2, 3, 4, 7, 10] {
                for node in lattice.nodes() {
                    for function in GRADED {
                        let got = graded_score(function, &hs, &lattice, &sample, &node, k, values);
                        let (score, kept, classes) =
                            graded_definition(function, &hs, &records, input_rows, &node, k);
                        assert!(
                            close(got.score, score),
                            "{function:?} k {k} values {values} node {node:?}: {} vs {score}",
                            got.score
                        );
                        assert_eq!((got.kept, got.classes), (kept, classes), "{node:?} k {k}");
                    }
                }
            }
        }
    }
}

/// Scoring and refining from a pivot's partition give the scores and partitions of
/// grouping from the leaves, with the graded score's lower threshold (groups from
/// ⌊⌈4k/3⌉/2⌋ + 1 on count).
#[test]
fn graded_refinement_matches_from_scratch() {
    let owned = hierarchies();
    let hs: Vec<&Hierarchy> = owned.iter().collect();
    let lattice = all_nodes(&hs);
    let mut rng = rng_from_seed(22);
    for trial in 0..3 {
        let records = random_records(&mut rng, 80 + 70 * trial, &hs, 4);
        let sample = SampleData::new(histogram(&hs, &records, 4), records.len() as u64);
        for k in [2u64, 5, 9] {
            for function in GRADED {
                let mut evaluator = Evaluator::new(&sample, &hs, &lattice, k, function, 4)
                    .with_suppression(ScoreSuppression::Graded);
                for node in lattice.nodes() {
                    let parent = evaluator.partition(&node);
                    for attr in (0..node.len()).filter(|&a| node[a] > 0) {
                        let mut child = node.clone();
                        child[attr] -= 1;
                        let direct = evaluator.partition(&child);
                        let want = evaluator.score_partition(&direct);
                        let via = evaluator.score_refinement(&parent, attr);
                        assert!(
                            close(via.score, want.score),
                            "{function:?} {node:?} -{attr}"
                        );
                        assert_eq!((via.kept, via.classes), (want.kept, want.classes));
                        let refined = evaluator.refine(&parent, attr);
                        assert_eq!(refined.class_count(), direct.class_count());
                        assert_eq!(refined.kept(), direct.kept());
                        let again = evaluator.score_partition(&refined);
                        assert!(close(again.score, want.score));
                    }
                }
            }
        }
    }
}

/// Lemma 2 with graded suppression: adding one record, sampled or not, changes graded
/// granularity and intensity by at most m on every scheme and for every k, and random
/// neighbours come close to the bound (the bound is m, not (k − 1)·m).
#[test]
fn graded_sensitivity_is_m_on_random_neighbours() {
    let owned = hierarchies();
    let hs: Vec<&Hierarchy> = owned.iter().collect();
    let lattice = all_nodes(&hs);
    let m = hs.len();
    let mut rng = rng_from_seed(23);
    let mut worst: BTreeMap<&'static str, f64> = BTreeMap::new();
    for _ in 0..40 {
        let values = rng.random_range(1..4u32);
        let size = rng.random_range(5..60);
        let records = random_records(&mut rng, size, &hs, values);
        let sampled: Vec<Record> = records
            .iter()
            .filter(|_| rng.random_range(0..10) < 6)
            .cloned()
            .collect();
        let extra = random_records(&mut rng, 1, &hs, values).remove(0);
        let n = records.len() as u64;
        let with_extra: Vec<Record> = sampled.iter().cloned().chain([extra]).collect();
        let d1 = SampleData::new(histogram(&hs, &sampled, values as usize), n);
        let d2_sampled = SampleData::new(histogram(&hs, &with_extra, values as usize), n + 1);
        let d2_unsampled = SampleData::new(histogram(&hs, &sampled, values as usize), n + 1);
        for k in [1u64, 2, 3, 4, 5, 8] {
            for node in lattice.nodes() {
                for function in GRADED {
                    let bound = function.sensitivity_with(ScoreSuppression::Graded, k, m);
                    assert_eq!(bound, m as f64);
                    let s1 = graded_score(function, &hs, &lattice, &d1, &node, k, values).score;
                    for d2 in [&d2_sampled, &d2_unsampled] {
                        let s2 = graded_score(function, &hs, &lattice, d2, &node, k, values).score;
                        let change = (s2 - s1).abs();
                        assert!(
                            change <= bound * (1.0 + 1e-12),
                            "{function:?} k {k} node {node:?}: change {change} > {bound}"
                        );
                        let ratio = worst.entry(function.name()).or_insert(0.0);
                        *ratio = ratio.max(change / bound);
                    }
                }
            }
        }
    }
    for function in GRADED {
        assert!(worst[function.name()] > 0.9, "{:?}: {worst:?}", function);
    }
}

/// The graded bound is attained: inside the ramp one record adds two counted records at a
/// cost of 1/100 each, while N grows by one (k = 6, c = 8: a group of 5 counts 2, of 6
/// counts 4).
#[test]
fn graded_sensitivity_bound_is_tight() {
    let h = interval("a", "0..99", &["10"]);
    let hs = [&h];
    let lattice = all_nodes(&hs);
    let k = 6u64;
    assert_eq!(ScoreSuppression::ramp_end(k), 8);
    assert_eq!(ScoreSuppression::Graded.counts_from(k), 5);
    let weights: Vec<u64> = (0..12)
        .map(|s| ScoreSuppression::Graded.kept_weight(s, k))
        .collect();
    assert_eq!(weights, [0, 0, 0, 0, 0, 2, 4, 6, 8, 9, 10, 11]);
    let before: Vec<Record> = (0..k - 1).map(|_| (vec![0], 0)).collect();
    let after: Vec<Record> = (0..k).map(|_| (vec![0], 0)).collect();
    let d1 = SampleData::new(histogram(&hs, &before, 1), k - 1);
    let d2 = SampleData::new(histogram(&hs, &after, 1), k);
    let f = ScoreFunction::Granularity;
    let s1 = graded_score(f, &hs, &lattice, &d1, &[0], k, 1);
    let s2 = graded_score(f, &hs, &lattice, &d2, &[0], k, 1);
    // Before: 2 counted at 0.01, 3 at 1; after: 4 counted at 0.01, 2 at 1.
    assert!(close(s1.score, -(2.0 * 0.01 + 3.0)));
    assert!(close(s2.score, -(4.0 * 0.01 + 2.0)));
    assert!(close(s2.score - s1.score, 1.0 - 2.0 * 0.01));
    // The release's counts stay at k.
    assert_eq!((s1.kept, s1.classes, s2.kept, s2.classes), (0, 0, 6, 1));
}

/// The exhaustive search scores every scheme of the lattice (within level bounds) exactly
/// once, each from its parent's partition; `best` returns the best-scoring scheme.
#[test]
fn exhaustive_search_scores_every_scheme_once() {
    let no_progress = Progress::silent();
    let mut rng = rng_from_seed(3);
    for lattice in [
        Lattice::new(vec![3, 2, 1], 1000).unwrap(),
        Lattice::new(vec![0, 2, 0, 3], 1000).unwrap(),
        Lattice::bounded(vec![4, 3, 2], vec![1, 0, 1], vec![3, 3, 2], 1000).unwrap(),
    ] {
        let mut scorer = fixed(&lattice, &[1.0, 10.0, 100.0, 0.5]);
        let result = exhaustive_search(
            &mut scorer,
            &lattice,
            1.0,
            1.0,
            true,
            &mut rng,
            &no_progress,
        )
        .unwrap();
        assert_eq!(result.scored, lattice.len());
        assert_eq!(scorer.scored.len(), lattice.len());
        assert!(lattice
            .nodes()
            .iter()
            .all(|n| scorer.scored.contains(&lattice.index_of(n))));
        assert_eq!(result.chosen, lattice.bottom());
        assert_eq!(result.steps.len(), 2);
        assert_eq!(result.steps[1].candidates, lattice.len());
    }
    // The real evaluator: every scheme scored from a parent equals its score from scratch.
    let owned = hierarchies();
    let hs: Vec<&Hierarchy> = owned.iter().collect();
    let lattice = all_nodes(&hs);
    let records = random_records(&mut rng, 400, &hs, 3);
    let sample = SampleData::new(histogram(&hs, &records, 3), 450);
    let mut evaluator = Evaluator::new(&sample, &hs, &lattice, 6, ScoreFunction::Granularity, 3)
        .with_suppression(ScoreSuppression::Graded);
    let result = exhaustive_search(
        &mut evaluator,
        &lattice,
        1.0,
        3.0,
        true,
        &mut rng,
        &no_progress,
    )
    .unwrap();
    let best = lattice
        .nodes()
        .into_iter()
        .map(|n| {
            let p = evaluator.partition(&n);
            (evaluator.score_partition(&p).score, n)
        })
        .fold(None, |b: Option<(f64, Vec<usize>)>, s| match b {
            Some(b) if b.0 >= s.0 => Some(b),
            _ => Some(s),
        })
        .unwrap();
    assert!(close(result.evaluation.score, best.0));
}

/// The exhaustive search's draw is the exponential mechanism at ε_search over every
/// scheme (chi-square over 4,000 draws, false-failure probability 1e-6).
#[test]
fn exhaustive_draw_distribution() {
    let lattice = Lattice::new(vec![2, 1, 1], 100).unwrap();
    let weights = [0.5, 1.0, 2.0];
    let scorer = fixed(&lattice, &weights);
    let scores: Vec<f64> = lattice.nodes().iter().map(|n| scorer.score_of(n)).collect();
    let (epsilon, sensitivity) = (2.0, 1.0);
    let expected = exponential_weights(&scores, epsilon, sensitivity).unwrap();
    let draws = 4000u64;
    let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
    let mut rng = rng_from_seed(17);
    let no_progress = Progress::silent();
    for _ in 0..draws {
        let mut scorer = fixed(&lattice, &weights);
        let result = exhaustive_search(
            &mut scorer,
            &lattice,
            epsilon,
            sensitivity,
            false,
            &mut rng,
            &no_progress,
        )
        .unwrap();
        *counts
            .entry(lattice.index_of(&result.chosen) as i64)
            .or_default() += 1;
    }
    let bins = categorical_bins(&expected);
    assert_chi_square_fits(&counts, draws, &bins, "exhaustive draw");
}

/// After a top-down walk, the final draw is the exponential mechanism at ε_final over every
/// scheme the walk scored. With one step from the top of a 2×2×2 lattice the walk scores the
/// top and its three predecessors; the walk's ε is negligible, the final draw's is not
/// (chi-square over 4,000 draws, false-failure probability 1e-6).
#[test]
fn final_draw_is_over_every_scored_scheme() {
    let lattice = Lattice::new(vec![1, 1, 1], 100).unwrap();
    let weights = [3.0, 2.0, 1.0];
    let no_progress = Progress::silent();
    let (epsilon, sensitivity) = (4.0, 1.0);
    let (walk, last) = FinalSelection::Exponential.split(epsilon);
    assert_eq!((walk, last), (2.0, 2.0));
    let scorer = fixed(&lattice, &weights);
    let scored: Vec<Vec<usize>> = vec![vec![1, 1, 1], vec![0, 1, 1], vec![1, 0, 1], vec![1, 1, 0]];
    let mut order: Vec<(usize, f64)> = scored
        .iter()
        .map(|n| (lattice.index_of(n), scorer.score_of(n)))
        .collect();
    order.sort_by_key(|&(i, _)| i);
    let scores: Vec<f64> = order.iter().map(|&(_, s)| s).collect();
    let expected = exponential_weights(&scores, last, sensitivity).unwrap();
    let draws = 4000u64;
    let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
    let mut rng = rng_from_seed(19);
    for _ in 0..draws {
        let mut scorer = fixed(&lattice, &weights);
        let result = top_down_search(
            &mut scorer,
            &lattice,
            1,
            epsilon,
            sensitivity,
            FinalSelection::Exponential,
            &mut rng,
            &no_progress,
        )
        .unwrap();
        assert_eq!(result.scored, 4);
        let position = order
            .iter()
            .position(|&(i, _)| i == lattice.index_of(&result.chosen))
            .expect("a scored scheme");
        *counts.entry(position as i64).or_default() += 1;
    }
    let bins = categorical_bins(&expected);
    assert_chi_square_fits(&counts, draws, &bins, "final draw");
}
