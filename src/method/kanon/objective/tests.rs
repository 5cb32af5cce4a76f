//! Tests of the k-anonymity metrics against ARX's formulas and their bounds.

use super::*;

#[test]
fn names_round_trip() {
    for name in METRIC_NAMES {
        assert_eq!(MetricKind::parse(name).unwrap().name(), *name);
    }
    let err = MetricKind::parse("utility").unwrap_err().to_string();
    assert!(err.contains("unknown metric 'utility'"), "{err}");
}

/// Weights must come one per quasi-identifier (or not at all): a wrong count is an
/// error naming both numbers, not a panic or a silently shortened mean.
#[test]
fn weights_must_match_the_quasi_identifiers() {
    use crate::testing::{ladder, weighted_histogram};
    let age = ladder("age", "0..3", &["2"]);
    let sex = ladder("sex", "0..1", &[]);
    let hs = [&age, &sex];
    let base = weighted_histogram(&hs, &[(vec![0, 1], 0, 2), (vec![3, 0], 0, 1)], 1);
    let err = Metric::new(MetricKind::Loss, &base, &hs, &[1.0, 2.0, 3.0])
        .expect_err("three weights for two quasi-identifiers")
        .to_string();
    assert!(
        err.contains("qi_weights: 3 weight(s) for 2 quasi-identifier(s)"),
        "{err}"
    );
    assert!(Metric::new(MetricKind::Loss, &base, &hs, &[]).is_ok());
    assert!(Metric::new(MetricKind::Loss, &base, &hs, &[1.0, 0.5]).is_ok());
}

/// The static bounds from the per-level table equal the written formulas bit for bit:
/// ARX's per-attribute values combined by the metric's mean or sum.
#[test]
fn static_bounds_equal_the_formulas() {
    use crate::testing::{ladder, weighted_histogram};
    let age = ladder("age", "0..39", &["5", "0,10,20,40"]);
    let loc = ladder("loc", "0..15", &["4"]);
    let sex = ladder("sex", "0..1", &[]);
    let hs = [&age, &loc, &sex];
    let mut next = crate::testing::test_numbers(0x51ed_2701_a4b3_c9d5u64);
    let rows: Vec<(Vec<u32>, u32, u64)> = (0..200)
        .map(|_| {
            (
                vec![next(40) as u32, next(16) as u32, next(2) as u32],
                0,
                1 + next(3),
            )
        })
        .collect();
    let base = weighted_histogram(&hs, &rows, 1);
    for kind in [
        MetricKind::Loss,
        MetricKind::Precision,
        MetricKind::Entropy,
        MetricKind::Height,
    ] {
        let metric = Metric::new(kind, &base, &hs, &[1.0, 0.3, 2.0]).unwrap();
        for node in [[0, 0, 0], [1, 0, 1], [2, 1, 0], [3, 1, 1]] {
            let per_attribute: Vec<f64> = (0..3)
                .map(|a| {
                    let l = node[a];
                    match kind {
                        MetricKind::Loss => metric.loss_of(a, metric.gen_exact[a][l]),
                        MetricKind::Precision => metric.precision_of(a, l, metric.total, 0),
                        MetricKind::Entropy => entropy_value(metric.gen_entropy[a][l]),
                        _ => l as f64,
                    }
                })
                .collect();
            let expected = match kind {
                MetricKind::Loss => metric.geometric_mean(&per_attribute),
                MetricKind::Precision => metric.arithmetic_mean(&per_attribute),
                _ => metric.weighted_sum(&per_attribute),
            };
            let Score::Real(bound) = metric.static_bound(&node) else {
                panic!("{kind:?}: a real bound expected");
            };
            assert_eq!(bound.to_bits(), expected.to_bits(), "{kind:?} at {node:?}");
            if kind == MetricKind::Loss && node == [0, 0, 0] {
                assert_eq!(bound, 0.0);
            }
        }
    }
}

/// Loss and NCP, computed from the marginal totals plus the suppressed cells, equal
/// the straightforward per-class sums (each record costs its cell's penalty, or the
/// full penalty where the cell is suppressed), for random data and random masks.
#[test]
fn loss_and_ncp_equal_the_per_class_sums() {
    use crate::testing::{ladder, weighted_histogram};
    let age = ladder("age", "0..39", &["5", "0,10,20,40"]);
    let loc = ladder("loc", "0..15", &["4"]);
    let hs = [&age, &loc];
    let mut next = crate::testing::test_numbers(0x9e37_79b9_7f4a_7c15u64);
    let rows: Vec<(Vec<u32>, u32, u64)> = (0..300)
        .map(|_| (vec![next(40) as u32, next(16) as u32], 0, 1 + next(3)))
        .collect();
    let base = weighted_histogram(&hs, &rows, 1);
    for kind in [MetricKind::Loss, MetricKind::Ncp] {
        let metric = Metric::new(kind, &base, &hs, &[1.0, 2.0]).unwrap();
        // Masks mostly empty, uniform, and mostly full: both ways of summing run.
        for (node, skew) in [[0, 0], [1, 0], [2, 1], [3, 1]]
            .into_iter()
            .flat_map(|node| [0u64, 1, 2].map(|skew| (node, skew)))
        {
            let classes = base.roll_up_sizes(&hs, &node);
            let masks: Vec<u64> = (0..classes.class_count())
                .map(|_| match (skew, next(5)) {
                    (0, r) if r > 0 => 0,
                    (2, r) if r > 0 => 3,
                    _ => next(4),
                })
                .collect();
            let s = Suppression {
                classes: &classes,
                masks: &masks,
                released_groups: 0,
                released_square_sum: 0,
                suppressed_records: 0,
            };
            let mut sums = [0u128; 2];
            for (c, mask) in masks.iter().enumerate() {
                let n = classes.class_size(c) as u128;
                for (a, sum) in sums.iter_mut().enumerate() {
                    let code = classes.class_codes[a][c] as usize;
                    let suppressed = mask >> a & 1 == 1;
                    *sum += n * match (kind, suppressed) {
                        (MetricKind::Loss, true) => metric.domain[a] as u128,
                        (MetricKind::Loss, false) => metric.leaves[a][node[a]][code] as u128,
                        (_, true) => metric.ncp_unit,
                        (_, false) => metric.ncp[a][node[a]][code],
                    };
                }
            }
            let expected = match kind {
                MetricKind::Loss => Score::Real(
                    metric
                        .geometric_mean(&[metric.loss_of(0, sums[0]), metric.loss_of(1, sums[1])]),
                ),
                _ => Score::Exact(sums[0] + sums[1]),
            };
            assert_eq!(metric.score(&s), expected, "{kind:?} at {node:?}");
        }
    }
}

#[test]
fn arx_rounding_and_scores() {
    assert_eq!(arx_round(0.123456789012345), 0.1234567890);
    assert_eq!(Score::Exact(3).max(Score::Exact(5)), Score::Exact(5));
    assert_eq!(
        Score::Real(0.5).compare(&Score::Real(0.25)),
        Ordering::Greater
    );
}
