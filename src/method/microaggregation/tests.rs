//! Microaggregation against hand-worked examples, and properties on random tables: every
//! group has k records (the last k to 2k − 1), released values are the exact group means,
//! every record is released with its own informative value, and weighted MDAV groups as
//! MDAV on the expanded records does.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::mdav::{mdav, WeightedPoints};
use super::*;
use crate::progress::Progress;

/// Released rows as `(values, code)` with their counts.
fn released(result: &Microaggregated) -> BTreeMap<(Vec<u64>, u32), u64> {
    let mut out = BTreeMap::new();
    let release = &result.release;
    for c in 0..release.class_count() {
        let values: Vec<u64> = result.class_values.iter().map(|v| v[c].to_bits()).collect();
        for e in release.class_range(c) {
            *out.entry((values.clone(), release.values[e])).or_default() += release.counts[e];
        }
    }
    out
}

/// The records {0, 1, 2, 10, 11, 12, 30} (informative codes 0..6) with k = 2 form the
/// groups {12, 30}, {0, 1} and {2, 10, 11} (worked in `mdav`'s tests); released sorted by
/// value: means 0.5, 23/3 and 21, medians 0.5, 10 and 21.
#[test]
fn a_line_is_released_as_worked_by_hand() {
    let xs = [0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 30.0];
    let points = NumericPoints::from_rows(
        1,
        xs.iter().enumerate().map(|(i, &x)| (vec![x], i as u32, 1)),
    );
    let mean = microaggregate(&points, 2, Aggregate::Mean, &Progress::silent()).unwrap();
    assert_eq!(mean.class_values, vec![vec![0.5, 23.0 / 3.0, 21.0]]);
    assert_eq!(mean.release.class_offsets, vec![0, 2, 5, 7]);
    assert_eq!(mean.release.values, vec![0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(mean.release.counts, vec![1; 7]);
    assert_eq!(mean.group_sizes(), vec![2, 2, 3]);
    let median = microaggregate(&points, 2, Aggregate::Median, &Progress::silent()).unwrap();
    assert_eq!(median.class_values, vec![vec![0.5, 10.0, 21.0]]);
    // SSE and SST of the standardized values: the sd of the seven records is s, and
    // SSE = (1/4 + 1/4 + (2 − 23/3)² + (10 − 23/3)² + (11 − 23/3)² + 81 + 81) / s².
    let n = 7.0;
    let m: f64 = xs.iter().sum::<f64>() / n;
    let s2 = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    let third: f64 = 23.0 / 3.0;
    let sse = (0.25
        + 0.25
        + (2.0 - third).powi(2)
        + (10.0 - third).powi(2)
        + (11.0 - third).powi(2)
        + 81.0
        + 81.0)
        / s2;
    assert!((mean.sse - sse).abs() < 1e-9, "{} vs {sse}", mean.sse);
    assert!((mean.sst - n).abs() < 1e-9);
    // NCP: mean |x − x'| / 30.
    let abs =
        0.5 + 0.5 + (2.0 - third).abs() + (10.0 - third).abs() + (11.0 - third).abs() + 9.0 + 9.0;
    assert!((mean.information_loss.ncp - abs / 30.0 / n).abs() < 1e-12);
}

/// Records at one point split between two groups are dealt in ascending informative
/// value, first to the group formed first; equal released vectors merge into one class.
#[test]
fn split_points_deal_their_values_in_order() {
    // 5 records at 0 (codes 0,1,2,3,4 once each) and one at 10 (code 9), k = 3: the group
    // around 10 takes two records at 0, which get codes 0 and 1.
    let mut rows: Vec<(Vec<f64>, u32, u64)> = (0..5).map(|c| (vec![0.0], c, 1)).collect();
    rows.push((vec![10.0], 9, 1));
    let points = NumericPoints::from_rows(1, rows);
    let result = microaggregate(&points, 3, Aggregate::Mean, &Progress::silent()).unwrap();
    assert_eq!(result.class_values, vec![vec![0.0, 10.0 / 3.0]]);
    assert_eq!(result.release.values, vec![2, 3, 4, 0, 1, 9]);
    // Two groups of the same point: one class of six records.
    let points = NumericPoints::from_rows(1, [(vec![7.0], 0, 4), (vec![7.0], 1, 2)]);
    let result = microaggregate(&points, 3, Aggregate::Mean, &Progress::silent()).unwrap();
    assert_eq!(result.group_sizes(), vec![3, 3]);
    assert_eq!(result.class_values, vec![vec![7.0]]);
    assert_eq!(result.release.counts, vec![4, 2]);
}

#[test]
fn fewer_records_than_k_are_refused() {
    let points = NumericPoints::from_rows(1, [(vec![1.0], 0, 2)]);
    let e = microaggregate(&points, 3, Aggregate::Mean, &Progress::silent()).unwrap_err();
    assert!(
        e.to_string()
            .contains("at least k = 3 records, and the source has 2"),
        "{e}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn groups_hold_k_records_and_release_exact_means(
        raw in proptest::collection::vec((0i32..15, -5i32..5, 0u32..4, 1u64..4), 1..80),
        k in 2u64..6,
        median in any::<bool>(),
    ) {
        let rows: Vec<(Vec<f64>, u32, u64)> = raw
            .iter()
            .map(|&(x, y, code, n)| (vec![x as f64, y as f64], code, n))
            .collect();
        let points = NumericPoints::from_rows(2, rows.clone());
        let n: u64 = raw.iter().map(|r| r.3).sum();
        let aggregate = if median { Aggregate::Median } else { Aggregate::Mean };
        let result = microaggregate(&points, k, aggregate, &Progress::silent());
        if n < k {
            prop_assert!(result.is_err());
            return Ok(());
        }
        let result = result.unwrap();
        // Every group k records, but the last: k to 2k − 1 (or all, when n < 2k).
        let sizes = result.group_sizes();
        let (last, rest) = sizes.split_last().unwrap();
        prop_assert!(rest.iter().all(|&s| s == k));
        prop_assert!(*last >= k && (*last < 2 * k || n < 2 * k));
        prop_assert_eq!(sizes.iter().sum::<u64>(), n);
        // Every released class holds at least k records.
        for c in 0..result.release.class_count() {
            let size: u64 = result.release.class_range(c).map(|e| result.release.counts[e]).sum();
            prop_assert!(size >= k);
        }
        // Every record's informative value released once.
        let mut by_code: BTreeMap<u32, u64> = BTreeMap::new();
        for &(_, _, code, count) in &raw {
            *by_code.entry(code).or_default() += count;
        }
        let mut released_codes: BTreeMap<u32, u64> = BTreeMap::new();
        for ((_, code), count) in released(&result) {
            *released_codes.entry(code).or_default() += count;
        }
        prop_assert_eq!(by_code, released_codes);
        // Each group's vector is the mean (or median) of its records, recomputed from the
        // expanded records, and is the released value of a class.
        for group in &result.groups {
            let vector: Vec<f64> = (0..2)
                .map(|a| {
                    let mut values: Vec<f64> = group
                        .iter()
                        .flat_map(|&(p, r)| std::iter::repeat_n(points.point(p as usize)[a], r as usize))
                        .collect();
                    values.sort_by(f64::total_cmp);
                    let m = values.len();
                    if median {
                        (values[(m - 1) / 2] + values[m / 2]) / 2.0
                    } else {
                        values.iter().sum::<f64>() / m as f64
                    }
                })
                .collect();
            let found = (0..result.release.class_count()).any(|c| {
                (0..2).all(|a| (result.class_values[a][c] - vector[a]).abs() <= 1e-9 * (1.0 + vector[a].abs()))
            });
            prop_assert!(found, "group {:?}: no class has {:?}", group, vector);
        }
        // Released values: for the mean, the sum of released values equals the sum of the
        // original values, per column (each group's mean times its size is its sum).
        if !median {
            for a in 0..2 {
                let original: f64 = raw.iter().map(|r| [r.0, r.1][a] as f64 * r.3 as f64).sum();
                let mut sum = 0.0;
                for c in 0..result.release.class_count() {
                    let size: u64 = result.release.class_range(c).map(|e| result.release.counts[e]).sum();
                    sum += result.class_values[a][c] * size as f64;
                }
                prop_assert!((sum - original).abs() < 1e-6, "column {}: {} vs {}", a, sum, original);
            }
        }
    }

    /// Weighted MDAV groups as MDAV on the expanded records (one point per record).
    #[test]
    fn weighted_points_group_as_their_records(
        raw in proptest::collection::btree_map((0i32..12, 0i32..6), 1u64..5, 1..30),
        k in 2u64..5,
    ) {
        let coords: Vec<f64> = raw.keys().flat_map(|&(x, y)| [x as f64, y as f64]).collect();
        let counts: Vec<u64> = raw.values().copied().collect();
        let n: u64 = counts.iter().sum();
        prop_assume!(n >= k);
        let weighted = mdav(&WeightedPoints { coords: &coords, dims: 2, counts: &counts }, k, &Progress::silent()).unwrap();
        let mut owner = Vec::new();
        let mut expanded = Vec::new();
        for (p, &c) in counts.iter().enumerate() {
            for _ in 0..c {
                owner.push(p as u32);
                expanded.extend_from_slice(&coords[2 * p..2 * p + 2]);
            }
        }
        let ones = vec![1u64; owner.len()];
        let records = mdav(&WeightedPoints { coords: &expanded, dims: 2, counts: &ones }, k, &Progress::silent()).unwrap();
        let regrouped: Vec<Vec<(u32, u64)>> = records
            .iter()
            .map(|g| {
                let mut per: BTreeMap<u32, u64> = BTreeMap::new();
                for &(r, _) in g {
                    *per.entry(owner[r as usize]).or_default() += 1;
                }
                per.into_iter().collect()
            })
            .collect();
        prop_assert_eq!(weighted, regrouped);
    }
}
