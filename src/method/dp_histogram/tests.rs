use std::collections::BTreeMap;

use super::*;
use crate::histogram::GroupedHistogram;
use crate::mechanism::rng::rng_from_seed;
use crate::method::Standalone;
use crate::release::SUPPRESSED;
use crate::testing::stats::{assert_chi_square_fits, assert_wilson, build_bins};
use crate::testing::{ladder, weighted_histogram};

/// `(age, sex, value, count)` rows as a leaf histogram.
fn histogram(hs: &[&Hierarchy], rows: &[(u32, u32, u32, u64)], domain: usize) -> GroupedHistogram {
    let rows: Vec<(Vec<u32>, u32, u64)> = rows
        .iter()
        .map(|&(age, sex, value, count)| (vec![age, sex], value, count))
        .collect();
    weighted_histogram(hs, &rows, domain)
}

fn params(epsilon: f64, levels: &str) -> DpHistogramParams {
    DpHistogramParams {
        epsilon,
        levels: Some(DpHistogramParams::parse_levels(levels).unwrap()),
        max_cells: DEFAULT_MAX_CELLS,
    }
}

/// The released count of every cell, keyed by (age code, sex code, value).
fn released_cells(release: &ReleasedHistogram) -> BTreeMap<(u32, u32, u32), u64> {
    let mut out = BTreeMap::new();
    for c in 0..release.class_count() {
        for e in release.class_range(c) {
            assert!(release.counts[e] > 0, "a released cell has count 0");
            out.insert(
                (
                    release.class_codes[0][c],
                    release.class_codes[1][c],
                    release.values[e],
                ),
                release.counts[e],
            );
        }
    }
    out
}

/// `q = exp(-epsilon)`: the discrete Laplace parameter at scale `1/epsilon`.
fn q(epsilon: f64) -> f64 {
    (-epsilon).exp()
}

/// Every cell of the generalized domain — 1000 ages x 2 sexes x 5 values, almost all empty
/// — gets noise: the empty cells are released with count `max(0, Z)`, `Z` discrete Laplace.
/// Chi-square and Wilson tests at false-failure rate at most 1e-6 each.
#[test]
fn every_cell_gets_noise_including_empty_ones() {
    let age = ladder("age", "0..999", &["10"]);
    let sex = ladder("sex", "0..1", &["2"]);
    let hs = [&age, &sex];
    // 30 records in three cells.
    let base = histogram(&hs, &[(3, 0, 1, 10), (3, 0, 2, 10), (500, 1, 4, 10)], 5);
    let lattice = Lattice::new(vec![age.height(), sex.height()], 100).unwrap();
    let epsilon = 1.0;
    let result = super::run(
        &Standalone::default().input(&base, &hs, &lattice, 5),
        &params(epsilon, "age=0"),
        &mut rng_from_seed(11),
    )
    .unwrap();
    let stats = &result.stats;
    assert_eq!(stats.node, vec![0, 0]);
    assert_eq!(stats.cells, 1000 * 2 * 5);
    assert_eq!(stats.empty_cells, 10_000 - 3);
    assert_eq!(stats.true_records, 30);
    let cells = released_cells(&result.release);
    assert_eq!(stats.released_cells, cells.len() as u64);
    assert_eq!(stats.released_rows, result.release.row_count());
    assert_eq!(
        stats.released_rows,
        30 + stats.added_rows - stats.removed_rows
    );
    assert!(result
        .release
        .class_codes
        .iter()
        .all(|codes| codes.iter().all(|&c| c != SUPPRESSED)));

    // Released counts of the empty cells: P(0) = 1/(1+q), P(k) = (1-q)/(1+q) q^k.
    let q = q(epsilon);
    let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
    let mut positive = 0u64;
    for a in 0..1000u32 {
        for s in 0..2u32 {
            for v in 0..5u32 {
                let leaf_age = age.level(0).leaf_to_code()[a as usize];
                let occupied = [(3, 0, 1), (3, 0, 2), (500, 1, 4)].contains(&(a, s, v));
                if occupied {
                    continue;
                }
                let n = cells.get(&(leaf_age, s, v)).copied().unwrap_or(0);
                positive += u64::from(n > 0);
                *counts.entry(n as i64).or_default() += 1;
            }
        }
    }
    let n = stats.empty_cells;
    assert_wilson(positive, n, q / (1.0 + q), "empty cells released");
    let pmf = |k: i64| match k {
        k if k < 0 => 0.0,
        0 => 1.0 / (1.0 + q),
        k => (1.0 - q) / (1.0 + q) * q.powi(k as i32),
    };
    let upper = |k: i64| {
        if k <= 0 {
            1.0
        } else {
            q.powi(k as i32) / (1.0 + q)
        }
    };
    let lower = |k: i64| if k < 0 { 0.0 } else { 1.0 - upper(k + 1) };
    let bins = build_bins(n, &pmf, &upper, &lower);
    assert_chi_square_fits(&counts, n, &bins, "released counts of empty cells");
}

/// With every cell holding 60 records, clamping never binds (P(Z <= -60) < e^-29 per cell at
/// scale 2), so released − true is the raw noise: it must follow the discrete Laplace law
/// `P(k) = (1-q)/(1+q) q^|k|`, `q = exp(-epsilon)`. Chi-square at false-failure rate < 1e-6.
#[test]
fn noise_is_discrete_laplace() {
    let age = ladder("age", "0..1999", &["10"]);
    let sex = ladder("sex", "0..1", &["2"]);
    let hs = [&age, &sex];
    let mut rows = Vec::new();
    for a in 0..2000u32 {
        for s in 0..2u32 {
            for v in 0..5u32 {
                rows.push((a, s, v, 60u64));
            }
        }
    }
    let base = histogram(&hs, &rows, 5);
    let lattice = Lattice::new(vec![age.height(), sex.height()], 100).unwrap();
    let epsilon = 0.5;
    let result = super::run(
        &Standalone::default().input(&base, &hs, &lattice, 5),
        &params(epsilon, "age=0, sex=0"),
        &mut rng_from_seed(3),
    )
    .unwrap();
    let cells = released_cells(&result.release);
    assert_eq!(cells.len(), 20_000, "every cell is released");
    let mut noise: BTreeMap<i64, u64> = BTreeMap::new();
    for n in cells.values() {
        *noise.entry(*n as i64 - 60).or_default() += 1;
    }
    let q = q(epsilon);
    let pmf = |k: i64| (1.0 - q) / (1.0 + q) * q.powi(k.unsigned_abs() as i32);
    let upper = |k: i64| {
        if k <= 0 {
            1.0 - q.powi((1 - k) as i32) / (1.0 + q)
        } else {
            q.powi(k as i32) / (1.0 + q)
        }
    };
    let lower = |k: i64| upper(-k);
    let bins = build_bins(20_000, &pmf, &upper, &lower);
    assert_chi_square_fits(&noise, 20_000, &bins, "dp_histogram noise");
    let stats = &result.stats;
    assert_eq!(
        stats.released_rows + stats.removed_rows,
        60 * 20_000 + stats.added_rows
    );
    assert_eq!(stats.empty_cells, 0);
}

#[test]
fn generalizes_and_is_reproducible() {
    let age = ladder("age", "0..19", &["5", "10"]);
    let sex = ladder("sex", "0..1", &["2"]);
    let hs = [&age, &sex];
    let base = histogram(&hs, &[(1, 0, 0, 40), (7, 0, 0, 40), (12, 1, 1, 40)], 2);
    let lattice = Lattice::new(vec![age.height(), sex.height()], 100).unwrap();
    let p = params(4.0, "AGE=2");
    let run = |seed| {
        super::run(
            &Standalone::default().input(&base, &hs, &lattice, 2),
            &p,
            &mut rng_from_seed(seed),
        )
        .unwrap()
    };
    let a = run(5);
    assert_eq!(a.release, run(5).release, "same seed, same release");
    assert_ne!(a.release, run(6).release);
    assert_eq!(a.stats.node, vec![2, 0]);
    // Ages 1 and 7 merge into [0-10): one cell of 80 records (noise at scale 1/4 is small).
    let cells = released_cells(&a.release);
    let n = cells[&(0, 0, 0)];
    assert!((70..=90).contains(&n), "{n}");
    assert_eq!(a.stats.cells, 2 * 2 * 2);
}

#[test]
fn default_node_and_errors() {
    let age = ladder("age", "0..99", &["10", "50"]); // 100, 10, 2, 1 labels
    let sex = ladder("sex", "0..1", &["2"]); // 2, 1
    let hs = [&age, &sex];
    let lattice = Lattice::new(vec![3, 1], 100).unwrap();
    let with_max = |max_cells| DpHistogramParams {
        epsilon: 1.0,
        levels: None,
        max_cells,
    };
    // 3 values: (0,0) has 600 cells, (0,1) 300, (1,0) 60, (1,1) 30, (2,0) 12 ...
    assert_eq!(
        resolve_node(&hs, &lattice, 3, &with_max(600)).unwrap(),
        vec![0, 0]
    );
    assert_eq!(
        resolve_node(&hs, &lattice, 3, &with_max(599)).unwrap(),
        vec![0, 1]
    );
    assert_eq!(
        resolve_node(&hs, &lattice, 3, &with_max(299)).unwrap(),
        vec![1, 0]
    );
    assert_eq!(
        resolve_node(&hs, &lattice, 3, &with_max(20)).unwrap(),
        vec![2, 0]
    );
    let err = resolve_node(&hs, &lattice, 3, &with_max(2))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("even the coarsest generalization has more than max_cells = 2"),
        "{err}"
    );

    let explicit = |levels: &str, max_cells| DpHistogramParams {
        epsilon: 1.0,
        levels: Some(DpHistogramParams::parse_levels(levels).unwrap()),
        max_cells,
    };
    assert_eq!(
        resolve_node(&hs, &lattice, 3, &explicit("sex=1", 1000)).unwrap(),
        vec![0, 1]
    );
    let err = resolve_node(&hs, &lattice, 3, &explicit("age=0", 100))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("levels 'age=0, sex=0' has 600 cells (100 x 2 quasi-identifier values x 3 informative values), more than max_cells = 100"),
        "{err}"
    );
    let err = resolve_node(&hs, &lattice, 3, &explicit("zip=1", 100))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'zip' is not a quasi-identifier; the quasi-identifiers are: age, sex"),
        "{err}"
    );
    let err = resolve_node(&hs, &lattice, 3, &explicit("sex=2", 100))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("level 2 of 'sex' exceeds its hierarchy's height 1"),
        "{err}"
    );

    for (bad, msg) in [
        ("age", "is not 'column=level'"),
        (
            "age=x",
            "level of 'age' must be a non-negative integer, got 'x'",
        ),
        ("age=1, AGE=2", "column 'AGE' is listed twice"),
        (" , ", "no 'column=level' pairs"),
    ] {
        let err = DpHistogramParams::parse_levels(bad)
            .unwrap_err()
            .to_string();
        assert!(err.contains(msg), "{bad}: {err}");
    }
    let err = DpHistogramParams {
        epsilon: 0.0,
        levels: None,
        max_cells: 10,
    }
    .validate()
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("epsilon must be a positive finite number"),
        "{err}"
    );
}

/// The released count of cell (age 1, sex 0, value 0) of a release at the leaf levels.
fn leaf_cell_count(
    hs: &[&Hierarchy],
    lattice: &Lattice,
    base: &GroupedHistogram,
    domain: usize,
    epsilon: f64,
    rng: &mut crate::mechanism::rng::AnonRng,
) -> u64 {
    let result = super::run(
        &Standalone::default().input(base, hs, lattice, domain),
        &params(epsilon, "age=0, sex=0"),
        rng,
    )
    .expect("valid release");
    released_cells(&result.release)
        .get(&(1, 0, 0))
        .copied()
        .unwrap_or(0)
}

/// DP audit of the whole operator on neighbouring datasets: D holds three records in one
/// cell, D' a fourth. The released count of that cell (noisy, clamped at 0) is histogrammed
/// over 40,000 runs each and must satisfy P[D] ≤ e^ε·P[D'] in every bin, with Clopper–Pearson
/// bounds at a total false-failure rate of 1e-6 (`crate::testing::audit`). The power check
/// shows the same samples refute a claim of 0.8·ε.
#[test]
fn audit_dp_histogram_operator() {
    use crate::testing::audit::{
        assert_private, assert_violated, audit, histogram as audit_histogram, integer_bin, ALPHA,
    };
    let age = ladder("age", "0..3", &["2"]);
    let sex = ladder("sex", "0..1", &["2"]);
    let hs = [&age, &sex];
    let lattice = Lattice::new(vec![age.height(), sex.height()], 100).unwrap();
    let epsilon = 1.0;
    let released = |records: u64, seed: u64| {
        let base = histogram(&hs, &[(1, 0, 0, records)], 2);
        audit_histogram(16, 40_000, seed, |rng| {
            let count = leaf_cell_count(&hs, &lattice, &base, 2, epsilon, rng);
            integer_bin(count as i64, 0, 14)
        })
    };
    let d = released(3, 41);
    let d2 = released(4, 42);
    let report = audit(&d, &d2, epsilon, 0.0, ALPHA);
    assert_private(&report, "dp_histogram cell count");
    assert_violated(
        &audit(&d, &d2, 0.8 * epsilon, 0.0, ALPHA),
        "dp_histogram power check",
    );
}

/// DP audit per person (METHODS.md §9): D holds person A with three records in one cell
/// and person B with two in it; D' is D without A. With `max_rows_per_person = 2` and
/// per-person ε = 1, each release first keeps at most two rows per person, chosen at random
/// (`privacy_unit::bound_contributions`), then runs at the per-row ε = 1/2: the count moves
/// by 2 rows, ε = 1 per person. The audit of ε = 1 passes with one person changed; a claim
/// of 0.7 is refuted (power), and so is ε = 1 without the bounding, where A's three rows
/// move the count by 3 · 1/2. Total false-failure rate of each audit at most 1e-6.
#[test]
fn audit_dp_histogram_per_person() {
    use crate::privacy_unit::{bound_contributions, per_row_budget};
    use crate::testing::audit::{
        assert_private, assert_violated, audit, histogram as audit_histogram, integer_bin, ALPHA,
    };
    let age = ladder("age", "0..3", &["2"]);
    let sex = ladder("sex", "0..1", &["2"]);
    let hs = [&age, &sex];
    let lattice = Lattice::new(vec![age.height(), sex.height()], 100).unwrap();
    let (epsilon, m) = (1.0, 2);
    let (eps_row, _) = per_row_budget(epsilon, 0.0, m);
    // Rows of each person in cell (1, 0): A = 3, B = 2.
    let released = |persons: &[u64], bound: bool, seed: u64| {
        audit_histogram(23, 40_000, seed, |rng| {
            let mut counts = persons.to_vec();
            let ends: Vec<usize> = (1..=counts.len()).collect();
            if bound {
                bound_contributions(&ends, &mut counts, m, rng);
            }
            let rows: Vec<(u32, u32, u32, u64)> = counts.iter().map(|&n| (1, 0, 0, n)).collect();
            let base = histogram(&hs, &rows, 1);
            let count = leaf_cell_count(&hs, &lattice, &base, 1, eps_row, rng);
            integer_bin(count as i64, 0, 20)
        })
    };
    let d = released(&[3, 2], true, 51);
    let d2 = released(&[2], true, 52);
    assert_private(&audit(&d, &d2, epsilon, 0.0, ALPHA), "per person, bounded");
    assert_violated(&audit(&d, &d2, 0.7, 0.0, ALPHA), "per person power check");
    let unbounded = released(&[3, 2], false, 53);
    let unbounded2 = released(&[2], false, 54);
    assert_violated(
        &audit(&unbounded, &unbounded2, epsilon, 0.0, ALPHA),
        "per person without the bounding",
    );
}

/// With a row limit, the draw stops as soon as the drawn release passes it (a public
/// session's `max_release_rows`), with [`TooManyRows`], instead of drawing every cell first;
/// the same seeded draw without a limit releases more rows than the limit, and one with a
/// limit above its size releases it unchanged.
#[test]
fn a_row_limit_stops_the_draw_as_soon_as_it_is_passed() {
    let age = ladder("age", "0..999", &["10"]);
    let sex = ladder("sex", "0..1", &["2"]);
    let hs = [&age, &sex];
    let base = histogram(&hs, &[(3, 0, 1, 10)], 5);
    let lattice = Lattice::new(vec![age.height(), sex.height()], 100).unwrap();
    let draw = |stop_at: Option<u64>| {
        let standalone = Standalone::default();
        let input = MethodInput {
            stop_at,
            ..standalone.input(&base, &hs, &lattice, 5)
        };
        super::run(&input, &params(1.0, "age=0"), &mut rng_from_seed(5))
    };
    let unlimited = draw(None).unwrap();
    // 10,000 cells at epsilon = 1: about 0.58 noise rows each.
    let rows = unlimited.stats.released_rows;
    assert!(rows > 1_000, "{rows}");
    let Err(err) = draw(Some(1_000)) else {
        panic!("the limit did not stop the draw");
    };
    assert_eq!(TooManyRows::find(&err), Some(TooManyRows { limit: 1_000 }));
    assert!(
        err.to_string()
            .contains("more rows than public users may receive"),
        "{err}"
    );
    let within = draw(Some(rows)).unwrap();
    assert_eq!(within.stats.released_rows, rows);
    assert_eq!(within.release.row_count(), unlimited.release.row_count());
}
