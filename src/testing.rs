//! Fixtures shared by unit tests.

use crate::hierarchy::builders::{interval_hierarchy_rows, parse_integer_domain, IntervalLevel};
use crate::hierarchy::Hierarchy;

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
