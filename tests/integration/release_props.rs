//! Property tests of release invariants on random small datasets (IPA, both variants):
//!
//! * every real record is released with its true informative value (per value, the
//!   released count is at least the true count; suppressed records land in `*`);
//! * the released row count is the true count plus the counterfeits the diagnostics report,
//!   and the expansion produces exactly that many rows;
//! * classes are distinct, in ascending code order, with `*` last; each released class is
//!   the generalization of at least one real record; values ascend within a class;
//! * the expanded rows come in canonical order (identical rows are adjacent);
//! * the release depends only on the data and the seed: the same seed gives the same
//!   release, and shuffling the input rows changes nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion_anonymize::internals::rng_from_seed;
use datafusion_anonymize::internals::GroupedHistogram;
use datafusion_anonymize::internals::Hierarchy;
use datafusion_anonymize::internals::Lattice;
use datafusion_anonymize::internals::Standalone;
use datafusion_anonymize::internals::SUPPRESSED;
use datafusion_anonymize::internals::{run_ipa, IpaParams, IpaResult, IpaVariant};
use proptest::prelude::*;

fn rows(data: &[&[&str]]) -> Vec<Vec<String>> {
    data.iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect()
}

/// Two quasi-identifiers: `a` with 6 leaves (3 levels), `b` with 3 leaves (2 levels).
fn hierarchies() -> (Hierarchy, Hierarchy) {
    let a = Hierarchy::from_rows(
        "a",
        &rows(&[
            &["0", "[0-2)", "[0-4)", "*"],
            &["1", "[0-2)", "[0-4)", "*"],
            &["2", "[2-4)", "[0-4)", "*"],
            &["3", "[2-4)", "[0-4)", "*"],
            &["4", "[4-6)", "[4-6)", "*"],
            &["5", "[4-6)", "[4-6)", "*"],
        ]),
    )
    .expect("valid");
    let b =
        Hierarchy::from_rows("b", &rows(&[&["x", "*"], &["y", "*"], &["z", "*"]])).expect("valid");
    (a, b)
}

const VALUES: usize = 4;

/// A record: leaf code of `a`, leaf code of `b`, informative value code.
type Record = (u32, u32, u32);

fn histogram(hs: &[&Hierarchy], records: &[Record]) -> GroupedHistogram {
    GroupedHistogram::from_rows(
        hs,
        vec![
            records.iter().map(|r| r.0).collect(),
            records.iter().map(|r| r.1).collect(),
        ],
        records.iter().map(|r| r.2).collect(),
        vec![1; records.len()],
        VALUES,
    )
    .expect("histogram")
}

fn run(
    hs: &[&Hierarchy],
    records: &[Record],
    variant: IpaVariant,
    epsilon: f64,
    seed: u64,
) -> IpaResult {
    let lattice = Lattice::new(hs.iter().map(|h| h.height()).collect(), 1000).expect("lattice");
    let params = IpaParams::with_defaults(variant, epsilon, 2);
    run_ipa(
        &Standalone::default().input(&histogram(hs, records), hs, &lattice, VALUES),
        &params,
        &mut rng_from_seed(seed),
    )
    .expect("IPA runs")
}

fn records() -> impl Strategy<Value = Vec<Record>> {
    prop::collection::vec((0u32..6, 0u32..3, 0u32..VALUES as u32), 1..60)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn release_invariants(
        records in records(),
        seed in any::<u64>(),
        reference in any::<bool>(),
        epsilon in prop::sample::select(vec![0.1, 1.0, 10.0]),
    ) {
        let (a, b) = hierarchies();
        let hs = [&a, &b];
        let variant = if reference { IpaVariant::Reference } else { IpaVariant::Paper };
        let result = run(&hs, &records, variant, epsilon, seed);
        let release = &result.release;
        let chosen = &result.outcomes[result.chosen];
        prop_assert_eq!(&release.levels, &chosen.node);

        // Row counts.
        let n = records.len() as u64;
        prop_assert_eq!(release.row_count(), n + chosen.counterfeits);
        prop_assert_eq!(release.row_count(), chosen.released_rows);

        // Truthfulness: per value, at least the true count.
        let mut truth = [0u64; VALUES];
        for r in &records {
            truth[r.2 as usize] += 1;
        }
        let mut released = [0u64; VALUES];
        for (v, c) in release.values.iter().zip(&release.counts) {
            released[*v as usize] += c;
        }
        for v in 0..VALUES {
            prop_assert!(released[v] >= truth[v], "value {}: {} < {}", v, released[v], truth[v]);
        }

        // Class structure.
        let classes = release.class_count();
        let key = |c: usize| (release.class_codes[0][c], release.class_codes[1][c]);
        for c in 0..classes {
            let (ka, kb) = key(c);
            prop_assert_eq!(ka == SUPPRESSED, kb == SUPPRESSED, "partially suppressed class");
            if c + 1 < classes {
                prop_assert!(key(c) < key(c + 1), "classes out of order or repeated");
            }
            if ka != SUPPRESSED {
                let map_a = a.level_map(0, release.levels[0]);
                let map_b = b.level_map(0, release.levels[1]);
                prop_assert!(
                    records.iter().any(|r| map_a[r.0 as usize] == ka && map_b[r.1 as usize] == kb),
                    "class without a real record"
                );
            }
            let entries = &release.values[release.class_offsets[c]..release.class_offsets[c + 1]];
            prop_assert!(entries.windows(2).all(|w| w[0] < w[1]), "values not ascending");
            prop_assert!(!entries.is_empty());
        }

        // Expansion: exact row count and canonical order.
        let value_labels: ArrayRef = Arc::new(StringArray::from(vec!["v0", "v1", "v2", "v3"]));
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Utf8, false),
            Field::new("b", DataType::Utf8, false),
            Field::new("v", DataType::Utf8, false),
        ]));
        let batches = release.expand(&hs, std::slice::from_ref(&value_labels), &schema).expect("expand");
        let mut expanded: Vec<(String, String, String)> = Vec::new();
        for batch in &batches {
            let col = |i: usize| batch.column(i).as_string::<i32>().clone();
            let (ca, cb, cv) = (col(0), col(1), col(2));
            prop_assert_eq!(ca.null_count() + cb.null_count() + cv.null_count(), 0);
            for i in 0..batch.num_rows() {
                expanded.push((ca.value(i).to_string(), cb.value(i).to_string(), cv.value(i).to_string()));
            }
        }
        prop_assert_eq!(expanded.len() as u64, release.row_count());
        let mut runs: BTreeMap<&(String, String, String), usize> = BTreeMap::new();
        for (i, row) in expanded.iter().enumerate() {
            if i == 0 || expanded[i - 1] != *row {
                *runs.entry(row).or_default() += 1;
            }
        }
        prop_assert!(runs.values().all(|&r| r == 1), "identical rows are not adjacent");
        if let Some(first_star) = expanded.iter().position(|r| r.0 == "*" && r.1 == "*") {
            prop_assert!(expanded[first_star..].iter().all(|r| r.0 == "*" && r.1 == "*"), "suppressed rows not last");
        }
    }

    #[test]
    fn release_depends_only_on_data_and_seed(
        records in records(),
        seed in any::<u64>(),
        shuffle_seed in any::<u64>(),
    ) {
        let (a, b) = hierarchies();
        let hs = [&a, &b];
        let first = run(&hs, &records, IpaVariant::Paper, 1.0, seed);
        let again = run(&hs, &records, IpaVariant::Paper, 1.0, seed);
        prop_assert_eq!(&first.release, &again.release);
        prop_assert_eq!(&first.outcomes, &again.outcomes);

        // Fisher–Yates shuffle driven by a second seed.
        let mut shuffled = records.clone();
        let mut state = shuffle_seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let permuted = run(&hs, &shuffled, IpaVariant::Paper, 1.0, seed);
        prop_assert_eq!(&first.release, &permuted.release);
        prop_assert_eq!(first.chosen, permuted.chosen);
    }
}
