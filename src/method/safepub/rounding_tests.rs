//! The rounding claims of the score module, checked in exact rational arithmetic: every
//! computed score lies within `N·e` of its exact value, and every sensitivity is at least
//! its exact value (so the excess the guarantee text states is an upper bound).

use std::collections::BTreeMap;

use num_bigint::BigInt;
use num_traits::{Signed, Zero};
use rand::Rng;

use super::evaluator::Evaluator;
use super::partition::{Partition, SampleData};
use super::score::{ScoreFunction, ScoreSuppression};
use super::tests::kept_classes;
use crate::hierarchy::Hierarchy;
use crate::lattice::Lattice;
use crate::mechanism::rng::rng_from_seed;
use crate::testing::{histogram, ladder as interval, Record};

/// An exact rational `numerator / denominator` (denominator > 0).
#[derive(Clone, Debug)]
struct Ratio(BigInt, BigInt);

impl Ratio {
    fn int(n: i128) -> Self {
        Ratio(BigInt::from(n), BigInt::from(1))
    }

    fn new(n: i128, d: i128) -> Self {
        Ratio(BigInt::from(n), BigInt::from(d))
    }

    /// A finite `f64` as the exact dyadic rational it is.
    fn of_f64(x: f64) -> Self {
        let bits = x.to_bits();
        let exponent = ((bits >> 52) & 0x7ff) as i64;
        let fraction = bits & ((1u64 << 52) - 1);
        let (mantissa, power) = match exponent {
            0 => (fraction, -1074),
            _ => (fraction | (1u64 << 52), exponent - 1075),
        };
        let mut numerator = BigInt::from(mantissa);
        if x.is_sign_negative() {
            numerator = -numerator;
        }
        match power >= 0 {
            true => Ratio(numerator << power as usize, BigInt::from(1)),
            false => Ratio(numerator, BigInt::from(1) << (-power) as usize),
        }
    }

    fn add(&self, other: &Ratio) -> Ratio {
        Ratio(&self.0 * &other.1 + &other.0 * &self.1, &self.1 * &other.1)
    }

    fn sub(&self, other: &Ratio) -> Ratio {
        self.add(&Ratio(-other.0.clone(), other.1.clone()))
    }

    /// `|self| <= other`.
    fn abs_at_most(&self, other: &Ratio) -> bool {
        self.0.abs() * &other.1 <= &other.0 * &self.1
    }

    fn at_least(&self, other: &Ratio) -> bool {
        !self.sub(other).0.is_negative()
    }
}

/// The exact score of the rounded functions, record by record (the definitions of the
/// score module), on the records kept by the release's rule.
fn exact_score(
    function: ScoreFunction,
    hs: &[&Hierarchy],
    sampled: &[Record],
    input_rows: u64,
    node: &[usize],
    k: u64,
) -> Ratio {
    let m = hs.len();
    let n = input_rows as i128;
    let classes: BTreeMap<Vec<u32>, i128> = kept_classes(hs, sampled, node, k)
        .into_iter()
        .map(|(codes, values)| (codes, values.len() as i128))
        .collect();
    let kept: i128 = classes.values().sum();
    let suppressed = n - kept;
    let root = |a: usize| hs[a].level(node[a]).cardinality() == 1;
    let cost = match function {
        ScoreFunction::Granularity => {
            let mut cells = Ratio::int(suppressed * m as i128);
            for (codes, &size) in &classes {
                for a in 0..m {
                    let under = hs[a].level(node[a]).leaf_counts()[codes[a] as usize] as i128;
                    cells = cells.add(&Ratio::new(size * under, hs[a].leaf_count() as i128));
                }
            }
            cells
        }
        ScoreFunction::Intensity => {
            let mut cells = Ratio::int(suppressed * m as i128);
            for a in 0..m {
                let h = hs[a].height() as i128;
                if h > 0 {
                    cells = cells.add(&Ratio::new(kept * node[a] as i128, h));
                }
            }
            cells
        }
        ScoreFunction::Discernibility => {
            let squares: i128 = classes.values().map(|s| s * s).sum();
            Ratio::new(squares, n).add(&Ratio::int(suppressed))
        }
        ScoreFunction::Entropy => {
            let mut phi = Ratio::int(0);
            for a in 0..m {
                let mut counts: BTreeMap<u32, i128> = BTreeMap::new();
                if !root(a) {
                    for (codes, &size) in &classes {
                        *counts.entry(codes[a]).or_default() += size;
                    }
                }
                let visible: i128 = counts.values().sum();
                let squares: i128 = counts.values().map(|c| c * c).sum();
                phi = phi
                    .add(&Ratio::new(squares, n))
                    .add(&Ratio::int(n - visible));
            }
            phi
        }
        ScoreFunction::GroupSize => return Ratio::int(classes.len() as i128),
        ScoreFunction::Classification => unreachable!("not a rounded score"),
    };
    Ratio(-cost.0, cost.1)
}

/// Hierarchies whose leaf counts and heights are not powers of two (6 leaves, height 3),
/// so the divisions round.
fn hierarchies() -> Vec<Hierarchy> {
    vec![
        interval("a", "0..20", &["3", "6", "0,12,21"]),
        interval("b", "0..5", &["3"]),
        interval("c", "0..6", &["7"]),
    ]
}

/// Random records over `hs` with 3 informative values, skewed towards small codes.
fn records(n: usize, hs: &[&Hierarchy], seed: u64) -> Vec<Record> {
    let mut rng = rng_from_seed(seed);
    (0..n)
        .map(|_| {
            let codes = hs
                .iter()
                .map(|h| {
                    let leaves = h.leaf_count() as u32;
                    rng.random_range(0..leaves).min(rng.random_range(0..leaves))
                })
                .collect();
            (codes, rng.random_range(0..3))
        })
        .collect()
}

/// Every computed score of every scheme is within `N · rounding_per_record` of its exact
/// value, with `N` from a few hundred to 2^40 input records (most of them outside the
/// sample, so the scores are large and the roundings real).
#[test]
fn computed_scores_are_within_the_stated_rounding_of_the_exact_scores() {
    let owned = hierarchies();
    let hs: Vec<&Hierarchy> = owned.iter().collect();
    let lattice = Lattice::new(hs.iter().map(|h| h.height()).collect(), 1_000_000).unwrap();
    let functions = [
        ScoreFunction::Granularity,
        ScoreFunction::Intensity,
        ScoreFunction::Discernibility,
        ScoreFunction::Entropy,
        ScoreFunction::GroupSize,
    ];
    let mut inexact = 0;
    for (trial, extra) in [0u64, 977, 1 << 20, (1 << 40) + 12_345]
        .into_iter()
        .enumerate()
    {
        let sampled = records(300 + 100 * trial, &hs, 40 + trial as u64);
        let input_rows = sampled.len() as u64 + extra;
        let sample = SampleData::new(histogram(&hs, &sampled, 3), input_rows);
        for k in [1u64, 2, 5] {
            for node in lattice.nodes() {
                for function in functions {
                    let mut evaluator = Evaluator::new(&sample, &hs, &lattice, k, function, 3);
                    let partition = Partition::from_scratch(&sample, &hs, &node, k);
                    let computed = evaluator.score_partition(&partition).score;
                    let exact = exact_score(function, &hs, &sampled, input_rows, &node, k);
                    let error = Ratio::of_f64(computed).sub(&exact);
                    let bound = input_rows as f64 * function.rounding_per_record(hs.len());
                    assert!(
                        error.abs_at_most(&Ratio::of_f64(bound)),
                        "{function:?} N {input_rows} k {k} node {node:?}: computed {computed}, error above {bound:e}"
                    );
                    if !error.0.is_zero() {
                        inexact += 1;
                    }
                }
            }
        }
    }
    // The check has teeth: many scores are not exact.
    assert!(inexact > 100, "only {inexact} inexact scores");
}

/// The sensitivities passed to the exponential mechanism are never below the proven ones:
/// discernibility's `(k² + k − 1)/(k − 1)` and entropy's `m` times it, rounded up.
#[test]
fn sensitivities_are_rounded_up() {
    for k in 1u64..3000 {
        let exact_disc = match k {
            1 => Ratio::int(5),
            _ => Ratio::new((k * k + k - 1) as i128, (k - 1) as i128),
        };
        for m in 1..=20usize {
            let disc = Ratio::of_f64(ScoreFunction::Discernibility.sensitivity(k, m));
            assert!(disc.at_least(&exact_disc), "discernibility, k = {k}");
            let entropy = Ratio::of_f64(ScoreFunction::Entropy.sensitivity(k, m));
            let exact_entropy = Ratio(&exact_disc.0 * BigInt::from(m), exact_disc.1.clone());
            assert!(
                entropy.at_least(&exact_entropy),
                "entropy, k = {k}, m = {m}"
            );
            // Rounded up by at most a few units in the last place.
            let slack = Ratio::of_f64(ScoreFunction::Entropy.sensitivity(k, m) * 1e-15);
            assert!(
                entropy.sub(&exact_entropy).abs_at_most(&slack),
                "k = {k}, m = {m}"
            );
        }
    }
}

/// The excess the guarantee text states: zero for the integer scores, and for a rounded
/// score `ε · 2e/Δ` per record.
#[test]
fn the_stated_excess_follows_the_rounding() {
    assert_eq!(
        ScoreFunction::GroupSize.epsilon_excess_per_record(0.1, 50, 9, ScoreSuppression::AtK),
        0.0
    );
    assert_eq!(
        ScoreFunction::Classification.epsilon_excess_per_record(0.1, 50, 9, ScoreSuppression::AtK),
        0.0
    );
    let e = ScoreFunction::Granularity.rounding_per_record(9);
    let excess =
        ScoreFunction::Granularity.epsilon_excess_per_record(0.1, 50, 9, ScoreSuppression::AtK);
    let plain = 0.1 * 2.0 * e / (49.0 * 9.0);
    assert!(excess >= plain && excess <= plain * (1.0 + 1e-5));
    // Adult-sized (30,162 records): far below 1e-9.
    assert!(excess * 30_162.0 < 1e-9, "{excess:e}");
    // Graded suppression: the sensitivity is m, so the excess is larger by k - 1.
    let graded =
        ScoreFunction::Granularity.epsilon_excess_per_record(0.1, 50, 9, ScoreSuppression::Graded);
    let plain = 0.1 * 2.0 * e / 9.0;
    assert!(graded >= plain && graded <= plain * (1.0 + 1e-5));
    assert!(graded * 30_162.0 < 1e-9, "{graded:e}");
}
