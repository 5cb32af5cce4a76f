//! k-anonymity per person (METHODS.md §9): on random tables where persons own several rows,
//! every released class other than the fully suppressed one holds at least k distinct
//! persons, counted again from the raw rows, and the release keeps every row.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;
use crate::lattice::Lattice;
use crate::method::Standalone;
use crate::testing::{ladder, person_fixture, PersonRecord};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn every_released_class_holds_k_persons(
        raw in proptest::collection::vec((0u32..12, 0u32..20, 0u32..8, 0u32..2, 0u32..3), 1..120),
        k in 1u64..5,
        limit_index in 0usize..3,
    ) {
        let limit = [0.0, 0.1, 0.5][limit_index];
        let age = ladder("age", "0..19", &["5", "10"]);
        let zip = ladder("zip", "0..7", &["2", "4"]);
        let sex = ladder("sex", "0..1", &["2"]);
        let hs = [&age, &zip, &sex];
        let mut raw = raw;
        raw.sort();
        let rows: Vec<PersonRecord> = raw.iter().map(|r| (r.0, vec![r.1, r.2, r.3], r.4)).collect();
        let (base, persons) = person_fixture(&hs, &rows, 3);
        let lattice = Lattice::new(hs.iter().map(|h| h.height()).collect(), 10_000).unwrap();
        let params = KanonParams::new(k, limit);
        let standalone = Standalone::default();
        let mut input = standalone.input(&base, &hs, &lattice, 3);
        input.persons = Some(&persons);
        let result = match super::run(&input, &params) {
            Ok(result) => result,
            Err(e) => {
                prop_assert!(e.to_string().contains("no generalization satisfies k"), "{}", e);
                return Ok(());
            }
        };
        let node = &result.outcomes[result.chosen].node;
        // Raw rows by their class at the chosen node: persons and records.
        let mut classes: BTreeMap<Vec<u32>, (BTreeSet<u32>, u64)> = BTreeMap::new();
        for r in &raw {
            let key: Vec<u32> = [r.1, r.2, r.3]
                .iter()
                .enumerate()
                .map(|(a, &leaf)| hs[a].level(node[a]).leaf_to_code()[leaf as usize])
                .collect();
            let entry = classes.entry(key).or_default();
            entry.0.insert(r.0);
            entry.1 += 1;
        }
        let release = &result.release;
        prop_assert_eq!(release.row_count(), raw.len() as u64);
        let mut released_persons = Vec::new();
        for c in 0..release.class_count() {
            let codes: Vec<u32> = (0..3).map(|a| release.class_codes[a][c]).collect();
            if codes.iter().all(|&x| x == SUPPRESSED) {
                continue;
            }
            let size: u64 = release.counts[release.class_range(c)].iter().sum();
            let (persons, records) = classes.get(&codes).cloned().unwrap_or_default();
            prop_assert_eq!(size, records, "class {:?}", codes);
            prop_assert!(persons.len() as u64 >= k, "class {:?} has {} persons, k = {}", codes, persons.len(), k);
            released_persons.push(persons.len() as u64);
        }
        prop_assert_eq!(result.class_persons.as_ref(), Some(&released_persons));
    }
}

/// Three records of one person form a class of three: k = 3 per row releases it, per
/// person it is suppressed.
#[test]
fn a_class_of_k_rows_but_fewer_persons_is_not_released() {
    let age = ladder("age", "0..3", &["2"]);
    let hs = [&age];
    // Person 0: three rows at age 0; persons 1, 2, 3: one row each at age 2.
    let raw = [(0u32, 0u32), (0, 0), (0, 0), (1, 2), (2, 2), (3, 2)];
    let rows: Vec<PersonRecord> = raw.iter().map(|r| (r.0, vec![r.1], 0)).collect();
    let (base, persons) = person_fixture(&hs, &rows, 1);
    let lattice = Lattice::new(vec![age.height()], 100).unwrap();
    let params = KanonParams::new(3, 0.5);
    let standalone = Standalone::default();
    let per_row = super::run(&standalone.input(&base, &hs, &lattice, 1), &params).unwrap();
    assert_eq!(per_row.outcomes[per_row.chosen].node, vec![0]);
    assert_eq!(per_row.plan.suppressed_records, 0);
    let mut input = standalone.input(&base, &hs, &lattice, 1);
    input.persons = Some(&persons);
    let per_person = super::run(&input, &params).unwrap();
    assert_eq!(per_person.outcomes[per_person.chosen].node, vec![0]);
    assert_eq!(per_person.plan.suppressed_records, 3);
    assert_eq!(per_person.class_persons, Some(vec![3]));
}
