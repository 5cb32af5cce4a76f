//! UPA per person (METHODS.md §9.3): on random tables where persons own several rows, every
//! released class holds at least k persons (its distinct real persons, counted again from
//! the raw rows, plus its counterfeits, one person each), and every real row is released.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;
use crate::lattice::Lattice;
use crate::mechanism::rng::rng_from_seed;
use crate::method::Standalone;
use crate::testing::{ladder, person_fixture, PersonRecord};

fn params(k: u64) -> UpaParams {
    UpaParams {
        k,
        h: None,
        counterfeit_sa: CounterfeitSa::Constrained,
        levels: None,
        models: crate::privacy::models::ModelSpec::default(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn every_released_class_holds_k_persons(
        raw in proptest::collection::vec((0u32..10, 0u32..8, 0u32..2, 0u32..3), 2..60),
        k in 2u64..5,
        seed in 0u64..1000,
    ) {
        let age = ladder("age", "0..7", &["2", "4"]);
        let sex = ladder("sex", "0..1", &["2"]);
        let hs = [&age, &sex];
        let mut raw = raw;
        raw.sort();
        let rows: Vec<PersonRecord> = raw.iter().map(|r| (r.0, vec![r.1, r.2], r.3)).collect();
        let (base, persons) = person_fixture(&hs, &rows, 3);
        let lattice = Lattice::new(hs.iter().map(|h| h.height()).collect(), 10_000).unwrap();
        let standalone = Standalone::default();
        let mut input = standalone.input(&base, &hs, &lattice, 3);
        input.persons = Some(&persons);
        let result = match super::run(&input, &params(k), &mut rng_from_seed(seed)) {
            Ok(result) => result,
            Err(e) => {
                prop_assert!(e.to_string().contains("upa:"), "{}", e);
                return Ok(());
            }
        };
        let node = &result.outcomes[result.chosen].node;
        let mut classes: BTreeMap<Vec<u32>, (BTreeSet<u32>, u64)> = BTreeMap::new();
        for r in &raw {
            let key: Vec<u32> = [r.1, r.2]
                .iter()
                .enumerate()
                .map(|(a, &leaf)| hs[a].level(node[a]).leaf_to_code()[leaf as usize])
                .collect();
            let entry = classes.entry(key).or_default();
            entry.0.insert(r.0);
            entry.1 += 1;
        }
        let release = &result.release;
        prop_assert_eq!(release.row_count(), raw.len() as u64 + result.catalog.counterfeits());
        let mut counted = Vec::new();
        for c in 0..release.class_count() {
            let codes: Vec<u32> = (0..2).map(|a| release.class_codes[a][c]).collect();
            let size: u64 = release.counts[release.class_range(c)].iter().sum();
            let (persons, records) = classes.get(&codes).cloned().unwrap_or_default();
            prop_assert!(size >= records, "class {:?}", codes);
            let fakes = size - records;
            let all = persons.len() as u64 + fakes;
            prop_assert!(all >= k, "class {:?}: {} persons and {} counterfeits, k = {}", codes, persons.len(), fakes, k);
            // Counterfeits fill the shortfall exactly.
            prop_assert_eq!(fakes, k.saturating_sub(persons.len() as u64));
            counted.push(all);
        }
        prop_assert_eq!(result.class_persons.as_ref(), Some(&counted));
    }
}

/// A class of k rows of one person: per row it needs no counterfeit, per person k − 1.
#[test]
fn a_class_of_one_persons_rows_gets_counterfeits_per_person() {
    let age = ladder("age", "0..3", &["2"]);
    let hs = [&age];
    // Person 0: three rows at age 0; persons 1, 2, 3: one row each at age 2.
    let raw = [
        (0u32, 0u32, 0u32),
        (0, 0, 1),
        (0, 0, 2),
        (1, 2, 0),
        (2, 2, 1),
        (3, 2, 2),
    ];
    let rows: Vec<PersonRecord> = raw.iter().map(|r| (r.0, vec![r.1], r.2)).collect();
    let (base, persons) = person_fixture(&hs, &rows, 3);
    let lattice = Lattice::new(vec![age.height()], 100).unwrap();
    let standalone = Standalone::default();
    let mut p = params(3);
    p.levels = Some(vec![("age".to_string(), 0)]);
    let per_row = super::run(
        &standalone.input(&base, &hs, &lattice, 3),
        &p,
        &mut rng_from_seed(1),
    )
    .unwrap();
    assert_eq!(per_row.catalog.counterfeits(), 0);
    let mut input = standalone.input(&base, &hs, &lattice, 3);
    input.persons = Some(&persons);
    let per_person = super::run(&input, &p, &mut rng_from_seed(1)).unwrap();
    assert_eq!(per_person.catalog.counterfeits(), 2);
    assert_eq!(per_person.class_persons, Some(vec![3, 3]));
    assert_eq!(per_person.release.counts.iter().sum::<u64>(), 8);
}
