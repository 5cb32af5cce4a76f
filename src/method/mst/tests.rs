//! MST as a method: the node rule, the release's classes and size, its metadata, and the
//! exact sensitivity of the tree's scores.

use rand::SeedableRng;

use super::params::{MstParams, DEFAULT_DELTA, DEFAULT_ITERATIONS, DEFAULT_MAX_CELLS};
use super::records::Records;
use super::release::{largest_pair, resolve_node, Mst};
use super::select::pair_score;
use crate::lattice::{Lattice, LevelBounds, NO_LEVEL_BOUNDS};
use crate::mechanism::rng::rng_from_seed;
use crate::method::{Method, Standalone};
use crate::testing::{ladder, test_numbers, weighted_histogram};

fn params(levels: Option<&str>, max_cells: u64) -> MstParams {
    MstParams {
        epsilon: 1.0,
        delta: DEFAULT_DELTA,
        levels: levels.map(|l| crate::lattice::parse_level_list("levels", l).expect("levels")),
        max_cells,
        iterations: DEFAULT_ITERATIONS,
    }
}

fn mst(params: MstParams) -> Mst {
    Mst {
        params,
        max_nodes: 1000,
        level_bounds: LevelBounds::default(),
    }
}

#[test]
fn the_largest_pair_is_the_two_largest_domains() {
    assert_eq!(largest_pair(&[3, 100, 7, 50]), 5000);
    assert_eq!(largest_pair(&[4, 4]), 16);
    assert_eq!(largest_pair(&[usize::MAX, 3]), u64::MAX);
}

/// The default node is the first by level sum whose two largest domains fit `max_cells`:
/// ages 0..999 (1000 leaves, 100 decades, 10 centuries), 2 sexes, 5 informative values.
#[test]
fn the_default_node_is_the_first_whose_largest_pair_fits() {
    let age = ladder("age", "0..999", &["10", "100"]);
    let sex = ladder("sex", "0..1", &["2"]);
    let hs = [&age, &sex];
    let lattice = Lattice::new(vec![age.height(), sex.height()], 100).expect("lattice");
    let node = |max_cells| resolve_node(&hs, &lattice, Some(5), &params(None, max_cells));
    assert_eq!(node(5000).expect("fits"), vec![0, 0]);
    assert_eq!(node(4999).expect("fits"), vec![1, 0]);
    assert_eq!(node(499).expect("fits"), vec![2, 0]);
    // Ages in centuries and both sexes: 2 x 5 = 10 cells.
    assert_eq!(node(10).expect("fits"), vec![3, 0]);
    // At the top the largest pair is the informative column with one other: 1 x 5.
    assert_eq!(node(5).expect("fits"), vec![3, 1]);
    let err = node(4).expect_err("nothing fits");
    assert!(err.strip_backtrace().contains("raise max_cells"), "{err}");
    // Explicit levels are checked, with the domains named.
    let err =
        resolve_node(&hs, &lattice, Some(5), &params(Some("age=0"), 1000)).expect_err("too large");
    let text = err.strip_backtrace();
    assert!(
        text.contains("5000 cells") && text.contains("1000 x 2 x 5"),
        "{text}"
    );
    assert_eq!(
        resolve_node(&hs, &lattice, Some(5), &params(Some("age=1"), 1000)).expect("fits"),
        vec![1, 0]
    );
}

/// Three quasi-identifiers, the second equal to the first nine times in ten, the third
/// independent: the release keeps the dependence (the model over the quasi-identifiers
/// only, no informative column), has about as many rows as the source, and the same seed
/// gives the same release.
#[test]
fn a_release_keeps_the_dependence_and_the_size() {
    let a = ladder("a", "0..7", &["4"]);
    let b = ladder("b", "0..7", &["4"]);
    let c = ladder("c", "0..2", &["3"]);
    let hs = [&a, &b, &c];
    let lattice = Lattice::new(vec![a.height(), b.height(), c.height()], 100).expect("lattice");
    let mut next = test_numbers(17);
    let mut rows = Vec::new();
    for _ in 0..20_000 {
        let x = next(8) as u32;
        let y = if next(10) < 9 { x } else { next(8) as u32 };
        rows.push((vec![x, y, next(3) as u32], 0, 1));
    }
    let base = weighted_histogram(&hs, &rows, 1);
    let standalone = Standalone::default();
    let input = standalone.input(&base, &hs, &lattice, 1);
    let method = mst(params(None, DEFAULT_MAX_CELLS));
    let out = method.run(&input, &mut rng_from_seed(3)).expect("released");
    let again = method.run(&input, &mut rng_from_seed(3)).expect("released");
    assert_eq!(out.release, again.release);
    assert_eq!(out.node, vec![0, 0, 0]);
    let rows_out = out.release.row_count() as f64;
    assert!((rows_out - 20_000.0).abs() < 200.0, "{rows_out}");
    // The release's (a, b) marginal: about 90 % of its rows have a = b.
    let mut equal = 0u64;
    for class in 0..out.release.class_count() {
        if out.release.class_codes[0][class] == out.release.class_codes[1][class] {
            equal += out
                .release
                .class_range(class)
                .map(|e| out.release.counts[e])
                .sum::<u64>();
        }
    }
    let share = equal as f64 / rows_out;
    assert!((share - 0.9125).abs() < 0.03, "{share}");
    let metadata: std::collections::BTreeMap<_, _> = out.metadata.iter().cloned().collect();
    assert!(
        metadata["tree"].contains("a-b") || metadata["tree"].contains("b-a"),
        "{}",
        metadata["tree"]
    );
    assert_eq!(metadata["delta"], "0.000000001");
    assert!(metadata["guarantee"].contains("(epsilon, delta)-differential privacy"));
    assert_eq!(out.diagnostics.num_rows(), 1);
    // Its size bound: N plus a few standard deviations of the noisy total.
    let size = method.release_size(&input).expect("size");
    assert!(
        size.upper > 20_000.0 && size.upper < 20_400.0,
        "{}",
        size.upper
    );
    assert!(rows_out <= size.upper);
}

/// An empty source still releases (noise over the public domains), without failing.
#[test]
fn an_empty_source_releases_noise_only() {
    let a = ladder("a", "0..3", &["4"]);
    let b = ladder("b", "0..1", &["2"]);
    let hs = [&a, &b];
    let lattice = Lattice::new(vec![a.height(), b.height()], 100).expect("lattice");
    let base = weighted_histogram(&hs, &[], 1);
    let standalone = Standalone::default();
    let out = mst(params(None, DEFAULT_MAX_CELLS))
        .run(
            &standalone.input(&base, &hs, &lattice, 1),
            &mut rng_from_seed(9),
        )
        .expect("released");
    assert!(out.release.row_count() < 200, "{}", out.release.row_count());
}

/// A release with a row limit it passes fails with the limit; the level bounds are the
/// method's.
#[test]
fn a_row_limit_refuses_a_larger_release() {
    let a = ladder("a", "0..3", &["4"]);
    let b = ladder("b", "0..1", &["2"]);
    let hs = [&a, &b];
    let lattice = Lattice::new(vec![a.height(), b.height()], 100).expect("lattice");
    let rows: Vec<(Vec<u32>, u32, u64)> = vec![(vec![1, 0], 0, 500), (vec![2, 1], 0, 500)];
    let base = weighted_histogram(&hs, &rows, 1);
    let standalone = Standalone::default();
    let input = crate::method::MethodInput {
        stop_at: Some(100),
        ..standalone.input(&base, &hs, &lattice, 1)
    };
    let method = mst(params(None, DEFAULT_MAX_CELLS));
    assert_eq!(method.level_bounds(), &NO_LEVEL_BOUNDS);
    let err = method
        .run(&input, &mut rng_from_seed(1))
        .err()
        .expect("refused");
    assert!(
        err.strip_backtrace().contains("100"),
        "{}",
        err.strip_backtrace()
    );
}

/// The tree's score moves by at most 1 when one record is added to any cell, exactly (the
/// proof's sensitivity, docs/METHODS.md §12.3), over random tables and predictions,
/// including predictions far from the counts and shares that do not add up.
#[test]
fn a_score_moves_by_at_most_one_per_record() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
    let mut next = test_numbers(99);
    for trial in 0..300 {
        let cards = vec![1 + next(6) as usize, 1 + next(7) as usize];
        let mut records = Records::new(cards.clone());
        for _ in 0..next(40) {
            let t = [next(cards[0] as u64) as u32, next(cards[1] as u64) as u32];
            records.push(&t, 1 + next(1_000_000));
        }
        let share = |n: usize, next: &mut dyn FnMut(u64) -> u64| -> Vec<f64> {
            (0..n).map(|_| next(1000) as f64 / 997.0).collect()
        };
        let shares = vec![share(cards[0], &mut next), share(cards[1], &mut next)];
        let total = (rand::RngCore::next_u64(&mut rng) % 10_000_000) as f64 / 3.0;
        let before = pair_score(&records, 0, 1, total, &shares);
        let t = [next(cards[0] as u64) as u32, next(cards[1] as u64) as u32];
        let mut added = records.clone();
        added.push(&t, 1);
        let after = pair_score(&added, 0, 1, total, &shares);
        assert!(
            (after - before).abs() <= 1.0,
            "trial {trial}: {before} → {after}"
        );
        assert_eq!(after.fract() * 1024.0, (after.fract() * 1024.0).round());
    }
}
