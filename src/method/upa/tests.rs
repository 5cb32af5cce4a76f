use std::collections::BTreeMap;

use proptest::prelude::*;

use super::counterfeits::{draw_counterfeits, real_count, Counterfeits};
use super::grouping::{check_lemma1, group_classes};
use super::node::*;
use super::*;
use crate::lattice::Lattice;
use crate::mechanism::rng::rng_from_seed;
use crate::metric::degree::DEGREE_TOLERANCE;
use crate::metric::information_loss::information_loss;
use crate::metric::rce::class_volumes;
use crate::release::SUPPRESSED;
use crate::testing::{histogram, ladder, rows, Record};

/// The diseases of the paper's example (Lee et al. 2017, Tables 1, 5-9), in code order.
pub const EXAMPLE_DISEASES: [&str; 5] = [
    "Anemia",
    "Diabetes",
    "Gastritis",
    "Hypertension",
    "Pneumonia",
];

/// Hierarchies of the paper's example: ages over the domain [0-99], sex, zip codes over
/// [0-99999]; level 1 is Table 6's generalization ([35-37], [60-66]; [22071-23061],
/// [55102-55324]), level 2 Table 2's ([35-66]; [22071-55324]). The paper's tables are
/// images; these values are reconstructed from every number its text states.
pub fn example_hierarchies() -> (Hierarchy, Hierarchy, Hierarchy) {
    let age = Hierarchy::from_rows(
        "age",
        &rows(&[
            &["0", "[0-34]", "[0-34]", "*"],
            &["35", "[35-37]", "[35-66]", "*"],
            &["36", "[35-37]", "[35-66]", "*"],
            &["37", "[35-37]", "[35-66]", "*"],
            &["60", "[60-66]", "[35-66]", "*"],
            &["62", "[60-66]", "[35-66]", "*"],
            &["64", "[60-66]", "[35-66]", "*"],
            &["66", "[60-66]", "[35-66]", "*"],
            &["99", "[67-99]", "[67-99]", "*"],
        ]),
    )
    .unwrap();
    let sex = Hierarchy::from_rows("sex", &rows(&[&["F", "*"], &["M", "*"]])).unwrap();
    let zip = Hierarchy::from_rows(
        "zip",
        &rows(&[
            &["0", "[0-22070]", "[0-22070]", "*"],
            &["22071", "[22071-23061]", "[22071-55324]", "*"],
            &["22500", "[22071-23061]", "[22071-55324]", "*"],
            &["23061", "[22071-23061]", "[22071-55324]", "*"],
            &["55102", "[55102-55324]", "[22071-55324]", "*"],
            &["55200", "[55102-55324]", "[22071-55324]", "*"],
            &["55300", "[55102-55324]", "[22071-55324]", "*"],
            &["55324", "[55102-55324]", "[22071-55324]", "*"],
            &["99999", "[55325-99999]", "[55325-99999]", "*"],
        ]),
    )
    .unwrap();
    (age, sex, zip)
}

/// The seven records of the example (Table 1 without names).
pub fn example_records(age: &Hierarchy, sex: &Hierarchy, zip: &Hierarchy) -> Vec<Record> {
    [
        ("35", "F", "22071", "Anemia"),
        ("36", "F", "22500", "Gastritis"),
        ("37", "F", "23061", "Pneumonia"),
        ("60", "M", "55102", "Diabetes"),
        ("62", "M", "55200", "Diabetes"),
        ("64", "M", "55300", "Diabetes"),
        ("66", "M", "55324", "Hypertension"),
    ]
    .iter()
    .map(|r| {
        let leaf = |h: &Hierarchy, v: &str| h.leaf_code(v).unwrap();
        let disease = EXAMPLE_DISEASES.iter().position(|d| *d == r.3).unwrap();
        (
            vec![leaf(age, r.0), leaf(sex, r.1), leaf(zip, r.2)],
            disease as u32,
        )
    })
    .collect()
}

fn params(k: u64, h: Option<f64>, mode: CounterfeitSa, levels: Option<&str>) -> UpaParams {
    UpaParams {
        k,
        h,
        counterfeit_sa: mode,
        levels: levels.map(|l| crate::lattice::parse_level_list("levels", l).unwrap()),
        models: crate::privacy::models::ModelSpec::default(),
    }
}

fn run(
    hs: &[&Hierarchy],
    base: &GroupedHistogram,
    domain: usize,
    p: &UpaParams,
    seed: u64,
) -> Result<UpaResult> {
    let lattice = Lattice::new(hs.iter().map(|h| h.height()).collect(), 100_000).unwrap();
    let standalone = crate::method::Standalone::default();
    super::run(
        &standalone.input(base, hs, &lattice, domain),
        p,
        &mut rng_from_seed(seed),
    )
}

/// The paper's worked example: the 0.02-ceiled Table 6 has class 1 of three records; one
/// counterfeit Diabetes record makes it 4-anonymous (Table 5) and the catalog is
/// `({1, 2}, Diabetes, 1)` (Table 8). The degrees are the paper's 0.01 and 0.02 before
/// rounding (so the ceiling is written 0.021: class 2's degree is 0.02094).
#[test]
fn paper_worked_example() {
    let (age, sex, zip) = example_hierarchies();
    let hs = [&age, &sex, &zip];
    let base = histogram(&hs, &example_records(&age, &sex, &zip), 5);
    let degrees = Degrees::new(&hs);
    // Level-1 codes follow the hierarchy rows: [0-34] = 0, [35-37] = 1, [60-66] = 2.
    let d1 = degrees.record_degree(&[1, 0, 1], |a| [1, 0, 1][a]);
    let d2 = degrees.record_degree(&[1, 0, 1], |a| [2, 1, 2][a]);
    assert!((d1 - (2.0 / 99.0 + 990.0 / 99999.0) / 3.0).abs() < 1e-15);
    assert!((d2 - (6.0 / 99.0 + 222.0 / 99999.0) / 3.0).abs() < 1e-15);
    assert_eq!(((d1 * 100.0).round(), (d2 * 100.0).round()), (1.0, 2.0));
    let p = params(
        4,
        Some(0.021),
        CounterfeitSa::Constrained,
        Some("age=1, zip=1"),
    );
    let mut diabetes_seeds = 0;
    for seed in 0..20 {
        let result = run(&hs, &base, 5, &p, seed).unwrap();
        assert_eq!(result.outcomes[result.chosen].node, vec![1, 0, 1]);
        let release = &result.release;
        assert_eq!(release.class_count(), 2);
        assert_eq!(release.row_count(), 8);
        // Constrained: the counterfeit of class 1 is a value class 2 holds.
        assert_eq!(result.catalog.groups, vec![vec![0, 1]]);
        assert_eq!(result.catalog.counterfeits(), 1);
        let value = result.catalog.entries[0].value;
        assert!(value == 1 || value == 3, "{value}");
        if value == 1 {
            diabetes_seeds += 1;
            assert_eq!(
                release.values[..release.class_offsets[1]].to_vec(),
                vec![0, 1, 2, 4]
            );
        }
    }
    assert!(diabetes_seeds > 0);
}

/// Lemma 1 rejects the paper's Table 7: the counterfeit pinned to class 1 alone.
#[test]
fn lemma1_rejects_a_catalog_that_pins_the_counterfeit() {
    let (age, sex, zip) = example_hierarchies();
    let hs = [&age, &sex, &zip];
    let base = histogram(&hs, &example_records(&age, &sex, &zip), 5);
    let hist = base.roll_up(&hs, &[1, 0, 1], 5).unwrap();
    let fakes = Counterfeits {
        offsets: vec![0, 1, 1],
        values: vec![1],
        counts: vec![1],
    };
    let pinned = CounterfeitCatalog {
        groups: vec![vec![0]],
        entries: vec![crate::release::catalog::CatalogEntry {
            group: 0,
            value: 1,
            count: 1,
        }],
    };
    let err = check_lemma1(&hist, &fakes, &pinned)
        .unwrap_err()
        .to_string();
    assert!(err.contains("violates Lemma 1"), "{err}");
    let grouped = group_classes(&hist, &fakes, &[1, 3, 1, 1, 1]).unwrap();
    assert_eq!(grouped.groups, vec![vec![0, 1]]);
    check_lemma1(&hist, &fakes, &grouped).unwrap();
    // A Gastritis counterfeit in class 1 cannot be concealed: no other class has one.
    let gastritis = Counterfeits {
        offsets: vec![0, 1, 1],
        values: vec![2],
        counts: vec![1],
    };
    assert!(group_classes(&hist, &gastritis, &[1, 3, 1, 1, 1]).is_none());
}

/// Counterfeit values are uniform over the domain ('uniform') and over the concealable
/// values ('constrained'): chi-square goodness of fit at a false-failure rate of 1e-6.
#[test]
fn counterfeit_values_are_uniform() {
    let age = ladder("age", "0..3", &["4"]);
    let hs = [&age];
    // Class 0 holds the only record of value 0; class 3 many of values 1, 2 and 3.
    let base = crate::testing::weighted_histogram(
        &hs,
        &[
            (vec![0], 0, 1),
            (vec![3], 1, 30_000),
            (vec![3], 2, 30_000),
            (vec![3], 3, 30_000),
        ],
        4,
    );
    let totals = [1, 30_000, 30_000, 30_000];
    let k = 20_001;
    let check = |mode: CounterfeitSa, allowed: &[u32]| {
        let fakes = draw_counterfeits(
            &base,
            k,
            &base.sizes(),
            mode,
            &totals,
            &mut rng_from_seed(11),
        )
        .unwrap();
        assert_eq!(fakes.offsets[2], fakes.offsets[1], "class 3 needs none");
        let counts: BTreeMap<u32, u64> = fakes.class(0).collect();
        let n: u64 = counts.values().sum();
        assert_eq!(n, k - 1);
        assert!(counts.keys().all(|v| allowed.contains(v)), "{counts:?}");
        let expected = n as f64 / allowed.len() as f64;
        let chi: f64 = allowed
            .iter()
            .map(|v| {
                let o = counts.get(v).copied().unwrap_or(0) as f64;
                (o - expected).powi(2) / expected
            })
            .sum();
        let critical = crate::testing::stats::chi_square_critical_1e6(allowed.len() - 1);
        assert!(
            chi < critical,
            "{mode:?}: chi² {chi} ≥ {critical}: {counts:?}"
        );
    };
    check(CounterfeitSa::Uniform, &[0, 1, 2, 3]);
    // Value 0 has no real record outside class 0: never a constrained counterfeit there.
    check(CounterfeitSa::Constrained, &[1, 2, 3]);
    // Constrained draws stop at what the rest of the table can conceal.
    let few = crate::testing::weighted_histogram(
        &hs,
        &[
            (vec![0], 0, 1),
            (vec![0], 1, 1),
            (vec![3], 2, 1),
            (vec![3], 3, 1),
        ],
        4,
    );
    let fakes = draw_counterfeits(
        &few,
        4,
        &few.sizes(),
        CounterfeitSa::Constrained,
        &[1, 1, 1, 1],
        &mut rng_from_seed(3),
    )
    .unwrap();
    assert_eq!(fakes.class(0).collect::<Vec<_>>(), vec![(2, 1), (3, 1)]);
}

/// The search's RCE of the chosen node is the shared metric's RCE of the release.
#[test]
fn node_rce_is_the_metric_rce() {
    let (age, sex, zip) = example_hierarchies();
    let hs = [&age, &sex, &zip];
    let base = histogram(&hs, &example_records(&age, &sex, &zip), 5);
    for (seed, mode) in [(1, CounterfeitSa::Constrained), (2, CounterfeitSa::Uniform)] {
        let p = params(3, None, mode, None);
        let Ok(result) = run(&hs, &base, 5, &p, seed) else {
            continue;
        };
        let il = information_loss(&base, &hs, 5, &result.release, Some(&result.catalog)).unwrap();
        let chosen = &result.outcomes[result.chosen];
        assert!(
            (il.rce - chosen.rce.unwrap()).abs() < 1e-9,
            "{} vs {:?}",
            il.rce,
            chosen.rce
        );
        assert!((il.lm - chosen.lm.unwrap()).abs() < 1e-12);
        // Without h, h is the chosen node's largest degree.
        assert_eq!(Some(result.h), chosen.max_degree);
    }
}

#[test]
fn bad_parameters() {
    let err = |p: UpaParams| p.validate().unwrap_err().to_string();
    assert!(err(params(1, None, CounterfeitSa::Uniform, None)).contains("k must be at least 2"));
    for h in [0.0, -0.1, 1.5, f64::NAN] {
        assert!(err(params(5, Some(h), CounterfeitSa::Uniform, None)).contains("h must be"));
    }
    params(2, Some(1.0), CounterfeitSa::Uniform, None)
        .validate()
        .unwrap();
}

/// No node within the ceiling: the error names k and h and what to relax.
#[test]
fn no_catalog_error_names_k_and_h() {
    let (age, sex, zip) = example_hierarchies();
    let hs = [&age, &sex, &zip];
    let base = histogram(&hs, &example_records(&age, &sex, &zip), 5);
    // k = 7 at the leaf node only (h tiny): six counterfeits per singleton class; uniform
    // values over five diseases cannot all be concealed (Anemia has one record).
    let p = params(7, Some(1e-6), CounterfeitSa::Uniform, None);
    let e = run(&hs, &base, 5, &p, 5).unwrap_err().to_string();
    assert!(e.contains("k = 7") && e.contains("h = 0.000001"), "{e}");
    assert!(e.contains("raise h, lower k"), "{e}");
    // k above the number of records.
    let e = run(
        &hs,
        &base,
        5,
        &params(8, None, CounterfeitSa::Constrained, None),
        1,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("exceeds the number of records"), "{e}");
}

/// Brute force from the records: the release is every record plus counterfeits, every
/// class holds at least k rows and lies within the ceiling, and Lemma 1 holds in every
/// catalog group.
fn check_release(hs: &[&Hierarchy], records: &[Record], k: u64, h: Option<f64>, r: &UpaResult) {
    let release = &r.release;
    let node = &release.levels;
    let key = |codes: &[u32]| -> Vec<u32> {
        (0..hs.len())
            .map(|a| hs[a].level(node[a]).leaf_to_code()[codes[a] as usize])
            .collect()
    };
    let mut original: BTreeMap<(Vec<u32>, u32), u64> = BTreeMap::new();
    for (codes, v) in records {
        *original.entry((key(codes), *v)).or_default() += 1;
    }
    let degrees = Degrees::new(hs);
    let mut fakes: BTreeMap<(usize, u32), u64> = BTreeMap::new();
    let mut real: BTreeMap<(usize, u32), u64> = BTreeMap::new();
    let mut total_fakes = 0;
    for c in 0..release.class_count() {
        let codes: Vec<u32> = (0..hs.len()).map(|a| release.class_codes[a][c]).collect();
        assert!(codes.iter().all(|&x| x != SUPPRESSED));
        let size: u64 = release.counts[release.class_range(c)].iter().sum();
        assert!(size >= k, "class {c} has {size} < {k} rows");
        if let Some(h) = h {
            assert!(degrees.record_degree(node, |a| codes[a]) <= h + DEGREE_TOLERANCE);
        }
        for e in release.class_range(c) {
            let v = release.values[e];
            let o = original.remove(&(codes.clone(), v)).unwrap_or(0);
            assert!(release.counts[e] >= o, "a real record is missing");
            real.insert((c, v), o);
            if release.counts[e] > o {
                fakes.insert((c, v), release.counts[e] - o);
                total_fakes += release.counts[e] - o;
            }
        }
    }
    assert!(original.is_empty(), "records not released: {original:?}");
    assert_eq!(total_fakes, r.catalog.counterfeits());
    for (g, members) in r.catalog.groups.iter().enumerate() {
        for &e in members {
            for (&(c, v), &p) in fakes.range((e, 0)..(e, u32::MAX)) {
                assert_eq!(c, e);
                let others: u64 = members
                    .iter()
                    .filter(|&&m| m != e)
                    .map(|&m| real.get(&(m, v)).copied().unwrap_or(0))
                    .sum();
                assert!(
                    others >= p,
                    "Lemma 1: group {g}, class {e}, value {v}: {p} > {others}"
                );
            }
            let counted: u64 = r
                .catalog
                .entries
                .iter()
                .filter(|x| x.group == g)
                .map(|x| x.count)
                .sum();
            assert!(counted > 0);
        }
    }
    // Every class with counterfeits is in a group.
    for &(c, _) in fakes.keys() {
        assert!(r.catalog.groups.iter().any(|m| m.contains(&c)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Lemma 1 and k hold on every release; 'constrained' never fails.
    #[test]
    fn every_release_satisfies_lemma1(
        raw in proptest::collection::vec((0u32..20, 0u32..8, 0u32..5), 8..120),
        k in 2u64..6,
        h in prop_oneof![Just(None), (1u32..10).prop_map(|x| Some(x as f64 / 10.0))],
        constrained in any::<bool>(),
        seed in 0u64..1000,
    ) {
        let age = ladder("age", "0..19", &["5", "10"]);
        let loc = ladder("loc", "0..7", &["4"]);
        let hs = [&age, &loc];
        let records: Vec<Record> = raw.iter().map(|&(a, l, v)| (vec![a, l], v)).collect();
        let base = histogram(&hs, &records, 5);
        let domain = 5;
        let mode = if constrained { CounterfeitSa::Constrained } else { CounterfeitSa::Uniform };
        let p = params(k, h, mode, None);
        match run(&hs, &base, domain, &p, seed) {
            Ok(result) => {
                check_release(&hs, &records, k, h, &result);
            }
            Err(e) => {
                prop_assert!(!constrained, "constrained failed: {e}");
                prop_assert!(e.to_string().contains("no generalization"), "{e}");
            }
        }
    }
}

/// Pruning: a node is over the ceiling iff its largest degree exceeds h, and no node above
/// one over the ceiling is evaluated.
#[test]
fn pruning_follows_the_ceiling() {
    let age = ladder("age", "0..19", &["5", "10"]);
    let loc = ladder("loc", "0..7", &["4"]);
    let hs = [&age, &loc];
    let records: Vec<Record> = (0..60u32)
        .map(|i| (vec![(i * 7) % 20, (i * 3) % 8], i % 3))
        .collect();
    let base = histogram(&hs, &records, 3);
    let result = run(
        &hs,
        &base,
        3,
        &params(3, Some(0.3), CounterfeitSa::Constrained, None),
        4,
    )
    .unwrap();
    let lattice = Lattice::new(vec![3, 2], 100).unwrap();
    let degrees = Degrees::new(&hs);
    for o in &result.outcomes {
        let hist = base.roll_up(&hs, &o.node, 3).unwrap();
        let (max, within) = feasibility(&class_degrees(&hist, &degrees), Some(0.3));
        let parent_over = lattice.predecessors(&o.node).iter().any(|p| {
            matches!(
                result.outcomes[lattice.index_of(p)].status,
                NodeStatus::OverCeiling | NodeStatus::Pruned
            )
        });
        match o.status {
            NodeStatus::Pruned => assert!(parent_over && !within),
            NodeStatus::OverCeiling => assert!(!within && o.max_degree == Some(max)),
            _ => assert!(within),
        }
    }
    assert!(result
        .outcomes
        .iter()
        .any(|o| o.status == NodeStatus::Pruned));
    // Real counts are looked up exactly.
    let hist = base.roll_up(&hs, &[0, 0], 3).unwrap();
    assert_eq!(real_count(&hist, 0, 0), hist.pair_counts[0]);
}

/// The RCE lower bound holds at every node whatever its counterfeits (checked on many
/// draws), and every node the search bounded out has a bound above the chosen node's RCE:
/// it could not have been released.
#[test]
fn nodes_bounded_out_could_not_have_won() {
    let age = ladder("age", "0..19", &["5", "10"]);
    let loc = ladder("loc", "0..7", &["4"]);
    let hs = [&age, &loc];
    let records: Vec<Record> = (0..60u32)
        .map(|i| (vec![(i * 7) % 20, (i * 3) % 8], i % 3))
        .collect();
    let base = histogram(&hs, &records, 3);
    let p = params(3, None, CounterfeitSa::Constrained, None);
    let result = run(&hs, &base, 3, &p, 4).unwrap();
    let chosen_rce = result.outcomes[result.chosen].rce.unwrap();
    let degrees = Degrees::new(&hs);
    let models = ClassModels::default();
    let mut totals = vec![0u64; 3];
    for (p, &v) in base.pair_values.iter().enumerate() {
        totals[v as usize] += base.pair_counts[p];
    }
    let mut bounded = 0;
    for o in &result.outcomes {
        let hist = base.roll_up(&hs, &o.node, 3).unwrap();
        let volumes = class_volumes(&hs, &hist.levels, &hist.class_codes);
        let bound = rce_lower_bound(&hist.sizes(), &volumes);
        if o.status == NodeStatus::AboveBest {
            bounded += 1;
            assert!(bound > chosen_rce, "{:?}: {bound} <= {chosen_rce}", o.node);
        }
        for seed in 0..20 {
            let evaluated = evaluate_node(
                &hist,
                &hs,
                &degrees,
                &p,
                &models,
                &totals,
                &|h: &GroupedHistogram| Ok(h.sizes().into_owned()),
                &mut rng_from_seed(seed),
                false,
                f64::INFINITY,
            )
            .unwrap();
            if let Some(rce) = evaluated.outcome.rce {
                assert!(rce >= bound - 1e-9, "{:?}: RCE {rce} below {bound}", o.node);
            }
        }
    }
    assert!(
        bounded > 0,
        "no node was bounded out: the test checks nothing"
    );
}
