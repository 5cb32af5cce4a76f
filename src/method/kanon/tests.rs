use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::privacy::models::ClassModels;

use crate::testing::{histogram, ladder, paper_example_hierarchies, paper_example_records, Record};

/// Brute force over the lattice, straight from the records: the node minimizing
/// (loss, level sum, lattice index) among nodes within the suppression limit. The loss uses
/// the product of leaf counts as common denominator (the method uses their lcm), which
/// orders nodes identically.
fn brute_force(hs: &[&Hierarchy], records: &[Record], k: u64, limit: f64) -> Option<(Node, u64)> {
    let lattice = Lattice::new(hs.iter().map(|h| h.height()).collect(), 10_000).unwrap();
    let d: u128 = hs.iter().map(|h| h.leaf_count() as u128).product();
    let max_suppressed = (limit * records.len() as f64).floor() as u64;
    let mut best: Option<(u128, usize, usize, Node, u64)> = None;
    for (index, node) in lattice.nodes().into_iter().enumerate() {
        let key = |r: &Record| -> Vec<u32> {
            (0..hs.len())
                .map(|a| hs[a].level(node[a]).leaf_to_code()[r.0[a] as usize])
                .collect()
        };
        let mut sizes: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
        for r in records {
            *sizes.entry(key(r)).or_default() += 1;
        }
        let mut loss: u128 = 0;
        let mut suppressed = 0u64;
        for r in records {
            let codes = key(r);
            if sizes[&codes] < k {
                suppressed += 1;
                loss += hs.len() as u128 * d;
                continue;
            }
            for a in 0..hs.len() {
                let leaves = hs[a].level(node[a]).leaf_counts()[codes[a] as usize] as u128;
                if leaves > 1 {
                    loss += leaves * d / hs[a].leaf_count() as u128;
                }
            }
        }
        if suppressed > max_suppressed {
            continue;
        }
        let candidate = (
            loss,
            node.iter().sum::<usize>(),
            index,
            node.clone(),
            suppressed,
        );
        if best
            .as_ref()
            .is_none_or(|b| (candidate.0, candidate.1, candidate.2) < (b.0, b.1, b.2))
        {
            best = Some(candidate);
        }
    }
    best.map(|b| (b.3, b.4))
}

fn check_release(hs: &[&Hierarchy], records: &[Record], result: &KanonResult, k: u64) {
    let release = &result.release;
    assert_eq!(
        release.row_count(),
        records.len() as u64,
        "every record is released"
    );
    let chosen = &result.outcomes[result.chosen];
    let mut starred = 0u64;
    for c in 0..release.class_count() {
        let size: u64 = release.counts[release.class_offsets[c]..release.class_offsets[c + 1]]
            .iter()
            .sum();
        if release.class_codes[0][c] == SUPPRESSED {
            assert!((0..hs.len()).all(|a| release.class_codes[a][c] == SUPPRESSED));
            starred += size;
        } else {
            assert!(size >= k, "class {c} has {size} < k = {k} records");
        }
    }
    assert_eq!(starred, chosen.suppressed_records);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn optimal_against_brute_force(
        raw in proptest::collection::vec((0u32..20, 0u32..8, 0u32..2, 0u32..4), 1..120),
        k in 1u64..7,
        limit_index in 0usize..4,
    ) {
        let limit = [0.0, 0.05, 0.2, 0.5][limit_index];
        let age = ladder("age", "0..19", &["5", "10"]);
        let zip = ladder("zip", "0..7", &["2", "4"]);
        let sex = ladder("sex", "0..1", &["2"]);
        let hs = [&age, &zip, &sex];
        let records: Vec<Record> = raw.iter().map(|r| (vec![r.0, r.1, r.2], r.3)).collect();
        let base = histogram(&hs, &records, 4);
        let lattice = Lattice::new(hs.iter().map(|h| h.height()).collect(), 10_000).unwrap();
        let params = KanonParams {
            k,
            suppression_limit: limit,
            ..Default::default()
        };
        let expected = brute_force(&hs, &records, k, limit);
        match run_kanon(&base, &hs, &lattice, 4, &params, &ClassModels::default(), &|_, _| {}) {
            Ok(result) => {
                let (node, suppressed) = expected.expect("brute force finds a feasible node too");
                prop_assert_eq!(&result.outcomes[result.chosen].node, &node);
                prop_assert_eq!(result.outcomes[result.chosen].suppressed_records, suppressed);
                check_release(&hs, &records, &result, k);
            }
            Err(e) => {
                prop_assert!(expected.is_none(), "method failed but brute force found {:?}: {}", expected, e);
                prop_assert!(e.to_string().contains("no generalization satisfies k"), "{}", e);
            }
        }
    }
}

/// The IPA paper's Tables 5–8 records with k = 3 and at most one suppressed record:
/// ten-year ages and 10000-blocks of zip codes, the 67-year-old suppressed.
#[test]
fn paper_example() {
    let (age, sex, zip) = paper_example_hierarchies();
    let records = paper_example_records(&age, &sex, &zip);
    let hs = [&age, &sex, &zip];
    let base = histogram(&hs, &records, 5);
    let lattice = Lattice::new(vec![2, 1, 2], 100).unwrap();
    let params = KanonParams {
        k: 3,
        suppression_limit: 0.2,
        ..Default::default()
    };
    let result = run_kanon(
        &base,
        &hs,
        &lattice,
        5,
        &params,
        &ClassModels::default(),
        &|_, _| {},
    )
    .unwrap();
    let chosen = &result.outcomes[result.chosen];
    assert_eq!(chosen.node, vec![1, 0, 1]);
    assert_eq!(chosen.suppressed_records, 1);
    // NCP: six records at 3/7 + 0 + 3/7, one suppressed at 1 + 1 + 1, over 3 · 7.
    assert!((chosen.ncp - (6.0 * 6.0 / 7.0 + 3.0) / 21.0).abs() < 1e-12);
    // The release: two classes of three, the stroke patient (value 4) in '*'.
    assert_eq!(result.release.class_count(), 3);
    let last = result.release.class_count() - 1;
    assert_eq!(result.release.class_codes[0][last], SUPPRESSED);
    assert_eq!(
        &result.release.values[result.release.class_offsets[last]..],
        &[4]
    );
    // Without suppression the 67-year-old must share a class: age '*' and zip '*' leave
    // the classes M (4) and F (3).
    let strict = KanonParams {
        k: 3,
        suppression_limit: 0.0,
        ..Default::default()
    };
    let result = run_kanon(
        &base,
        &hs,
        &lattice,
        5,
        &strict,
        &ClassModels::default(),
        &|_, _| {},
    )
    .unwrap();
    assert_eq!(result.outcomes[result.chosen].suppressed_records, 0);
    assert_eq!(result.outcomes[result.chosen].node, vec![2, 0, 2]);
    // k larger than the table: nothing is feasible.
    let err = run_kanon(
        &base,
        &hs,
        &lattice,
        5,
        &KanonParams {
            k: 8,
            suppression_limit: 0.5,
            ..Default::default()
        },
        &ClassModels::default(),
        &|_, _| {},
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("no generalization satisfies k = 8 with suppression_limit = 0.5 (3 of 7 records may be suppressed)"), "{err}");
}

#[test]
fn validates_parameters() {
    assert!(KanonParams {
        k: 0,
        suppression_limit: 0.1,
        ..Default::default()
    }
    .validate()
    .unwrap_err()
    .to_string()
    .contains("k must be at least 1"));
    for bad in [-0.1, 1.5, f64::NAN] {
        let err = KanonParams {
            k: 2,
            suppression_limit: bad,
            ..Default::default()
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("suppression_limit must be a fraction between 0 and 1"),
            "{err}"
        );
    }
    assert_eq!(
        KanonParams::default(),
        KanonParams {
            k: 10,
            suppression_limit: 0.05,
            ..Default::default()
        }
    );
    assert_eq!(KanonParams::default().max_suppressed(1_361_000), 68_050);
}
