use super::*;
use crate::lattice::Lattice;
use crate::mechanism::rng::rng_from_seed;
use crate::method::Standalone;
use crate::release::SUPPRESSED;
use crate::testing::{
    histogram, paper_example_hierarchies, paper_example_records, PAPER_EXAMPLE_DISEASES as DISEASES,
};

/// The paper's Tables 5–8 example: age, gender, zip; disease informative.
struct Example {
    hierarchies: Vec<Hierarchy>,
    base: GroupedHistogram,
}

fn example() -> Example {
    let (age, sex, zip) = paper_example_hierarchies();
    let records = paper_example_records(&age, &sex, &zip);
    let base = histogram(&[&age, &sex, &zip], &records, DISEASES.len());
    Example {
        hierarchies: vec![age, sex, zip],
        base,
    }
}

fn refs(e: &Example) -> Vec<&Hierarchy> {
    e.hierarchies.iter().collect()
}

/// With a huge ε the noise vanishes (each noisy decision errs with probability < e^-100):
/// the example generalizes to Table 7 exactly — the singleton stroke class suppressed, no
/// counterfeits.
#[test]
fn paper_example_without_noise_matches_table_7() {
    let e = example();
    let hs = refs(&e);
    let params = IpaParams::with_defaults(IpaVariant::Paper, 1000.0, 2);
    let scales = Scales::new(&params).unwrap();
    let node = e.base.roll_up(&hs, &[1, 0, 1], DISEASES.len()).unwrap();
    let mut rng = rng_from_seed(7);
    let (outcome, release) = perturb_node(
        &node,
        &hs,
        DISEASES.len(),
        &params,
        &scales,
        None,
        &mut rng,
        true,
    )
    .unwrap();
    let release = release.unwrap();
    assert_eq!(outcome.suppressed_classes, 1);
    assert_eq!(outcome.suppressed_records, 1);
    assert_eq!(outcome.counterfeits, 0);
    assert_eq!(outcome.classes, 3);
    assert_eq!(release.class_count(), 3);
    let label = |a: usize, c: usize| -> String {
        match release.class_codes[a][c] {
            SUPPRESSED => "*".to_string(),
            code => hs[a].level(release.levels[a]).labels()[code as usize].clone(),
        }
    };
    let class = |c: usize| -> (Vec<String>, Vec<(&str, u64)>) {
        let labels = (0..3).map(|a| label(a, c)).collect();
        let values = release
            .class_range(c)
            .map(|i| (DISEASES[release.values[i] as usize], release.counts[i]))
            .collect();
        (labels, values)
    };
    assert_eq!(
        class(0),
        (
            vec!["[10-19]".into(), "M".into(), "[20000-29999]".into()],
            vec![("Gastritis", 1), ("Pneumonia", 2)]
        )
    );
    assert_eq!(
        class(1),
        (
            vec!["[20-29]".into(), "F".into(), "[30000-39999]".into()],
            vec![("Anemia", 2), ("Diabetes", 1)]
        )
    );
    assert_eq!(
        class(2),
        (
            vec!["*".into(), "*".into(), "*".into()],
            vec![("Stroke", 1)]
        )
    );
    // NCP: age [10-19] and [20-29] cover 3 of 7 leaves, zip blocks 3 of 7; sex raw; the
    // suppressed record scores 1 on each attribute.
    let expected_ncp = (6.0 * (3.0 / 7.0 + 0.0 + 3.0 / 7.0) + 3.0) / (3.0 * 7.0);
    assert!(
        (outcome.ncp - expected_ncp).abs() < 1e-12,
        "{}",
        outcome.ncp
    );
    assert_eq!(outcome.emd, 0.0);
    assert_eq!(outcome.rate, 0.0);
    assert!((outcome.il - expected_ncp).abs() < 1e-12);
}

/// Release invariants for many seeds: rows = Σ counts; every real record is present in its
/// class or in `*`; no class appears without a real record; `*` holds exactly the
/// suppressed records plus its counterfeits; the replayed release equals the scored one.
#[test]
fn release_invariants_hold_for_many_seeds() {
    let e = example();
    let hs = refs(&e);
    let lattice = Lattice::new(vec![2, 1, 2], 100).unwrap();
    for seed in 0..40 {
        for variant in [IpaVariant::Paper, IpaVariant::Reference] {
            let params = IpaParams::with_defaults(variant, 1.0, 2);
            let mut rng = rng_from_seed(seed);
            let result = super::run(
                &Standalone::default().input(&e.base, &hs, &lattice, DISEASES.len()),
                &params,
                &mut rng,
            )
            .unwrap();
            let outcome = &result.outcomes[result.chosen];
            let release = &result.release;
            assert_eq!(release.row_count(), outcome.released_rows);
            assert_eq!(outcome.released_rows, 7 + outcome.counterfeits);
            let node = e.base.roll_up(&hs, &outcome.node, DISEASES.len()).unwrap();
            let mut suppressed_real: u64 = 0;
            for c in 0..node.class_count() {
                let codes: Vec<u32> = (0..3).map(|a| node.class_codes[a][c]).collect();
                let found = (0..release.class_count())
                    .find(|&r| (0..3).all(|a| release.class_codes[a][r] == codes[a]));
                match found {
                    Some(r) => {
                        for p in node.class_range(c) {
                            let released = release
                                .class_range(r)
                                .find(|&i| release.values[i] == node.pair_values[p])
                                .map(|i| release.counts[i])
                                .unwrap_or(0);
                            assert!(
                                released >= node.pair_counts[p],
                                "seed {seed}: real records missing"
                            );
                        }
                    }
                    None => suppressed_real += node.class_size(c),
                }
            }
            assert_eq!(suppressed_real, outcome.suppressed_records, "seed {seed}");
            for r in 0..release.class_count() {
                let is_star = release.class_codes[0][r] == SUPPRESSED;
                let size: u64 = release.counts[release.class_range(r)].iter().sum();
                if is_star {
                    assert!(
                        size >= suppressed_real && suppressed_real > 0,
                        "seed {seed}"
                    );
                } else {
                    let exists = (0..node.class_count()).any(|c| {
                        (0..3).all(|a| node.class_codes[a][c] == release.class_codes[a][r])
                    });
                    assert!(exists, "seed {seed}: a released class has no real record");
                }
            }
            assert_eq!(
                release.class_codes[0]
                    .iter()
                    .filter(|&&c| c == SUPPRESSED)
                    .count(),
                usize::from(suppressed_real > 0)
            );
        }
    }
}

/// Seeded runs are reproducible; different seeds differ somewhere.
#[test]
fn seeded_runs_are_reproducible() {
    let e = example();
    let hs = refs(&e);
    let lattice = Lattice::new(vec![2, 1, 2], 100).unwrap();
    let params = IpaParams::with_defaults(IpaVariant::Paper, 1.0, 2);
    let run = |seed| {
        let mut rng = rng_from_seed(seed);
        super::run(
            &Standalone::default().input(&e.base, &hs, &lattice, DISEASES.len()),
            &params,
            &mut rng,
        )
        .unwrap()
    };
    let (a, b) = (run(3), run(3));
    assert_eq!(a.outcomes, b.outcomes);
    assert_eq!(a.release, b.release);
    let differs = (4..20).any(|s| run(s).outcomes != a.outcomes);
    assert!(differs);
}

/// With a near-deterministic node choice, the chosen node minimizes IL.
#[test]
fn large_epsilon_chooses_the_minimum_il_node() {
    let e = example();
    let hs = refs(&e);
    let lattice = Lattice::new(vec![2, 1, 2], 100).unwrap();
    let params = IpaParams::with_defaults(IpaVariant::Paper, 10_000.0, 2);
    let mut rng = rng_from_seed(11);
    let result = super::run(
        &Standalone::default().input(&e.base, &hs, &lattice, DISEASES.len()),
        &params,
        &mut rng,
    )
    .unwrap();
    let best = result
        .outcomes
        .iter()
        .map(|o| o.il)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(result.outcomes[result.chosen].il, best);
    assert_eq!(result.outcomes.len(), 18);
}

#[test]
fn total_variation_and_absent_values() {
    let mut work = ClassWork {
        real: vec![(0, 2), (3, 2)],
        ..ClassWork::default()
    };
    work.fake.add(3);
    work.fake.add(1);
    // real: 1/2, 1/2 on {0, 3}; released: 2/6 on 0, 1/6 on 1, 3/6 on 3.
    let tv = class_total_variation(&work, 4);
    assert!(
        (tv - 0.5 * ((0.5 - 2.0 / 6.0) + 1.0 / 6.0 + 0.0)).abs() < 1e-12,
        "{tv}"
    );
    assert_eq!(nth_absent(&[(0, 1), (3, 1)], 0), 1);
    assert_eq!(nth_absent(&[(0, 1), (3, 1)], 1), 2);
    assert_eq!(nth_absent(&[(0, 1), (3, 1)], 2), 4);
}

#[test]
fn parameter_errors() {
    let params = IpaParams::with_defaults(IpaVariant::Paper, 1.0, 1);
    let err = params.validate().unwrap_err();
    assert!(
        err.to_string()
            .contains("suppression_threshold must be at least 2"),
        "{err}"
    );
    let mut params = IpaParams::with_defaults(IpaVariant::Paper, 1.0, 2);
    params.eps_val = f64::NAN;
    let err = params.validate().unwrap_err();
    assert!(err.to_string().contains("epsilon_val"), "{err}");
}
