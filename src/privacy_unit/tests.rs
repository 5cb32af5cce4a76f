use super::*;
use crate::mechanism::rng::rng_from_seed;
use crate::testing::stats::assert_wilson;

/// Every person keeps at most `m` rows, exactly `min(n, m)`; no count grows; the kept rows
/// add up to what the function returns.
#[test]
fn bounding_keeps_at_most_m_rows_per_person() {
    // Persons: [5, 1, 2] (8 rows), [1] (1 row), [3, 3] (6 rows), [2] (2 rows).
    let original = vec![5, 1, 2, 1, 3, 3, 2];
    let ends = [3, 4, 6, 7];
    for m in 1..=9 {
        for seed in 0..20 {
            let mut counts = original.clone();
            let kept = bound_contributions(&ends, &mut counts, m, &mut rng_from_seed(seed));
            let mut start = 0;
            let mut total = 0;
            for &end in &ends {
                let n: u64 = original[start..end].iter().sum();
                let k: u64 = counts[start..end].iter().sum();
                assert_eq!(
                    k,
                    n.min(m),
                    "m = {m}, seed = {seed}, person ending at {end}"
                );
                total += k;
                start = end;
            }
            assert_eq!(kept, total);
            assert!(counts.iter().zip(&original).all(|(k, n)| k <= n));
        }
    }
}

/// The kept rows are a uniformly random subset: with rows `[3 of a, 1 of b]` and `m = 1`,
/// `a` is kept with probability 3/4; with four single rows and `m = 2`, each of the six pairs
/// with probability 1/6. Wilson intervals at z = 5 (false failure about 5.7e-7 each).
#[test]
fn bounding_chooses_uniformly_among_a_persons_rows() {
    let mut rng = rng_from_seed(7);
    let trials = 40_000;
    let mut a = 0;
    for _ in 0..trials {
        let mut counts = vec![3, 1];
        bound_contributions(&[2], &mut counts, 1, &mut rng);
        a += counts[0];
    }
    assert_wilson(a, trials, 0.75, "rows of a kept");

    let mut pairs = [[0u64; 4]; 4];
    for _ in 0..trials {
        let mut counts = vec![1, 1, 1, 1];
        bound_contributions(&[4], &mut counts, 2, &mut rng);
        let kept: Vec<usize> = (0..4).filter(|&i| counts[i] == 1).collect();
        assert_eq!(kept.len(), 2);
        pairs[kept[0]][kept[1]] += 1;
    }
    for (i, row) in pairs.iter().enumerate() {
        for (j, &n) in row.iter().enumerate().skip(i + 1) {
            assert_wilson(n, trials, 1.0 / 6.0, &format!("pair {i},{j}"));
        }
    }
}

/// A seeded bounding is reproducible; another seed chooses differently.
#[test]
fn bounding_follows_the_generator() {
    let run = |seed| {
        let mut counts = vec![1; 50];
        bound_contributions(&[50], &mut counts, 10, &mut rng_from_seed(seed));
        counts
    };
    assert_eq!(run(3), run(3));
    assert_ne!(run(3), run(4));
}

/// Group privacy: the per-row budget never gives more than the per-person request
/// (computed again in a plain sum), and `m = 1` changes nothing.
#[test]
fn per_row_budget_composes_to_at_most_the_request() {
    assert_eq!(per_row_budget(1.0, 1e-6, 1), (1.0, 1e-6));
    for &(epsilon, delta) in &[(1.0, 1e-6), (0.1, 1e-9), (3.0, 1e-5), (0.7, 0.0)] {
        for m in [2u64, 3, 5, 10, 100, 10_000] {
            let (e, d) = per_row_budget(epsilon, delta, m);
            assert!(m as f64 * e <= epsilon, "epsilon {epsilon}, m {m}");
            assert!(m as f64 * e >= epsilon * (1.0 - 1e-12));
            let group_delta: f64 = (0..m).map(|i| d * (i as f64 * e).exp()).sum();
            assert!(group_delta <= delta, "delta {delta}, m {m}: {group_delta}");
            assert!(group_delta >= delta * (1.0 - 1e-6));
            let cost = per_person_cost(
                Cost {
                    epsilon: e,
                    delta: d,
                },
                m,
            );
            assert!(cost.epsilon <= epsilon * (1.0 + 1e-12), "{cost:?}");
            assert!(cost.epsilon >= epsilon * (1.0 - 1e-12), "{cost:?}");
            assert!(
                cost.delta >= group_delta * (1.0 - 1e-12) && cost.delta <= delta,
                "{cost:?}"
            );
        }
    }
}

/// Combinations are numbered person by person; a class's distinct persons and its tuples
/// are read back from them.
#[test]
fn person_codes_number_combinations_by_person() {
    // Person 0: tuples 2, 0, 2; person 1: tuple 1; person 2: tuples 0, 1.
    let (codes, rows) = PersonCodes::number(&[3, 4, 6], &[2, 0, 2, 1, 0, 1]);
    assert_eq!(codes.person, vec![0, 0, 1, 2, 2]);
    assert_eq!(codes.tuple, vec![0, 2, 1, 0, 1]);
    assert_eq!(rows, vec![1, 0, 1, 2, 3, 4]);
    assert_eq!(codes.len(), 5);
    // A class holding combinations 0, 1 (person 0) and 3 (person 2).
    let class = [(0, 2), (1, 5), (3, 1)];
    assert_eq!(codes.distinct_persons(&class), 2);
    let mut tuples = Vec::new();
    codes.tuples_of(&class, &mut tuples);
    assert_eq!(tuples, vec![(0, 3), (2, 5)]);
    assert_eq!(codes.distinct_persons(&[]), 0);
}

#[test]
fn the_unit_names_its_account_and_refuses_a_bad_bound() {
    let unit = PrivacyUnit::person("pid", 3).unwrap();
    assert_eq!(
        unit.account("datafusion.public.nps"),
        "datafusion.public.nps per person pid"
    );
    assert_eq!(PrivacyUnit::Row.account("t"), "t");
    assert_eq!(
        unit.describe(true),
        "person (column 'pid'), at most 3 rows each"
    );
    let e = PrivacyUnit::person("pid", 0).unwrap_err().to_string();
    assert!(
        e.contains("max_rows_per_person must be between 1 and 10000, got 0"),
        "{e}"
    );
    assert!(PrivacyUnit::person("pid", MAX_ROWS_PER_PERSON + 1).is_err());
}
