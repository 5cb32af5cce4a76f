//! Fixtures shared by unit tests: hierarchies, the IPA paper's example and leaf
//! histograms built from records.

use crate::hierarchy::builders::{interval_hierarchy_rows, parse_integer_domain, IntervalLevel};
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::privacy_unit::person_classes;
use crate::privacy_unit::PersonClasses;

/// ARX-layout rows from string slices.
pub fn rows(data: &[&[&str]]) -> Vec<Vec<String>> {
    data.iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect()
}

/// An interval hierarchy from a domain and level specifications.
pub fn ladder(name: &str, domain: &str, levels: &[&str]) -> Hierarchy {
    let levels: Vec<_> = levels
        .iter()
        .map(|l| IntervalLevel::parse(l).expect("valid level"))
        .collect();
    let rows = interval_hierarchy_rows(
        &parse_integer_domain(domain).expect("valid domain"),
        &levels,
    )
    .expect("valid ladder");
    Hierarchy::from_rows(name, &rows).expect("valid hierarchy")
}

/// The hierarchies of the IPA paper's Tables 5–8 example: ten-year ages, gender and
/// 10000-blocks of zip codes, over the example's seven records.
pub fn paper_example_hierarchies() -> (Hierarchy, Hierarchy, Hierarchy) {
    let age = Hierarchy::from_rows(
        "age",
        &rows(&[
            &["13", "[10-19]", "*"],
            &["16", "[10-19]", "*"],
            &["17", "[10-19]", "*"],
            &["24", "[20-29]", "*"],
            &["25", "[20-29]", "*"],
            &["29", "[20-29]", "*"],
            &["67", "[60-69]", "*"],
        ]),
    )
    .expect("valid hierarchy");
    let sex = Hierarchy::from_rows("gender", &rows(&[&["M", "*"], &["F", "*"]]))
        .expect("valid hierarchy");
    let zip = Hierarchy::from_rows(
        "zip",
        &rows(&[
            &["28912", "[20000-29999]", "*"],
            &["23512", "[20000-29999]", "*"],
            &["24231", "[20000-29999]", "*"],
            &["31891", "[30000-39999]", "*"],
            &["34225", "[30000-39999]", "*"],
            &["37756", "[30000-39999]", "*"],
            &["80061", "[80000-89999]", "*"],
        ]),
    )
    .expect("valid hierarchy");
    (age, sex, zip)
}

/// The informative values of the IPA paper's Tables 5–8 example, in code order.
pub const PAPER_EXAMPLE_DISEASES: [&str; 5] =
    ["Anemia", "Diabetes", "Gastritis", "Pneumonia", "Stroke"];

/// The seven records of the IPA paper's Tables 5–8 example over
/// [`paper_example_hierarchies`]: leaf codes of age, gender and zip, and the index of the
/// disease in [`PAPER_EXAMPLE_DISEASES`].
pub fn paper_example_records(age: &Hierarchy, sex: &Hierarchy, zip: &Hierarchy) -> Vec<Record> {
    [
        ("17", "M", "28912", "Gastritis"),
        ("16", "M", "23512", "Pneumonia"),
        ("13", "M", "24231", "Pneumonia"),
        ("24", "F", "31891", "Anemia"),
        ("29", "F", "34225", "Anemia"),
        ("25", "F", "37756", "Diabetes"),
        ("67", "M", "80061", "Stroke"),
    ]
    .iter()
    .map(|r| {
        let leaf = |h: &Hierarchy, v: &str| h.leaf_code(v).expect("value in hierarchy");
        let disease = PAPER_EXAMPLE_DISEASES
            .iter()
            .position(|d| *d == r.3)
            .expect("known disease");
        (
            vec![leaf(age, r.0), leaf(sex, r.1), leaf(zip, r.2)],
            disease as u32,
        )
    })
    .collect()
}

/// A record: leaf codes per attribute and an informative value code.
pub type Record = (Vec<u32>, u32);

/// One record of a person: `(person, leaf codes, informative value)`.
pub type PersonRecord = (u32, Vec<u32>, u32);

/// What phase 1 builds per person from `rows` sorted by person (one record each): the base
/// histogram over `domain` informative values and the classes' persons.
pub fn person_fixture(
    hs: &[&Hierarchy],
    rows: &[PersonRecord],
    domain: usize,
) -> (GroupedHistogram, PersonClasses) {
    assert!(
        rows.windows(2).all(|w| w[0].0 <= w[1].0),
        "rows sorted by person"
    );
    let ends: Vec<usize> = (1..=rows.len())
        .filter(|&i| i == rows.len() || rows[i].0 != rows[i - 1].0)
        .collect();
    let leaf_codes: Vec<Vec<u32>> = (0..hs.len())
        .map(|a| rows.iter().map(|r| r.1[a]).collect())
        .collect();
    let tuples: Vec<u32> = rows.iter().map(|r| r.2).collect();
    let persons = person_classes(hs, &ends, leaf_codes, &tuples, vec![1; rows.len()])
        .expect("person classes of valid codes");
    let records: Vec<Record> = rows.iter().map(|r| (r.1.clone(), r.2)).collect();
    (histogram(hs, &records, domain), persons)
}

/// The leaf histogram of `records`, one count each, over `domain` informative values.
pub fn histogram(hs: &[&Hierarchy], records: &[Record], domain: usize) -> GroupedHistogram {
    let rows: Vec<(Vec<u32>, u32, u64)> = records
        .iter()
        .map(|(codes, value)| (codes.clone(), *value, 1))
        .collect();
    weighted_histogram(hs, &rows, domain)
}

/// The leaf histogram of `(leaf codes, value, count)` rows over `domain` informative
/// values.
pub fn weighted_histogram(
    hs: &[&Hierarchy],
    rows: &[(Vec<u32>, u32, u64)],
    domain: usize,
) -> GroupedHistogram {
    GroupedHistogram::from_rows(
        hs,
        (0..hs.len())
            .map(|a| rows.iter().map(|r| r.0[a]).collect())
            .collect(),
        rows.iter().map(|r| r.1).collect(),
        rows.iter().map(|r| r.2).collect(),
        domain,
    )
    .expect("valid histogram")
}

/// A small deterministic generator for test data (xorshift64): each call gives the next
/// number below `bound`. Not for anything private: releases draw from `mechanism::rng`.
pub fn test_numbers(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut state = seed;
    move |bound: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    }
}

/// Row counts of streamed batches that must carry no column (a `COUNT(*)` projection);
/// panics on an error or a batch with columns.
pub fn columnless_row_counts(
    batches: impl Iterator<Item = datafusion::common::Result<datafusion::arrow::array::RecordBatch>>,
) -> Vec<usize> {
    batches
        .map(|b| {
            let b = b.expect("a streamed batch");
            assert_eq!(
                b.num_columns(),
                0,
                "a projection without columns built some"
            );
            b.num_rows()
        })
        .collect()
}
