//! `workload => 'age:5, sex, surgery'`: the analyses the release is for, in the utility
//! score (docs/METHODS.md §1.13.1). A quasi-identifier the analyses group by costs, at a
//! label, the share of its groups the label merges: a numeric column grouped in bands of a
//! width (`age:5`: 0–4, 5–9, … aligned at 0), any other by its values. A quasi-identifier
//! they do not group by costs nothing, so the score spends generalization on it first.
//!
//! Every cost is in `[0, 1]` (0 when the label lies within one group, 1 for `*`) and
//! depends on the hierarchy and the workload only, never on the data: the score's
//! sensitivity theorem, which holds for any class cost in `[0, 1]`, holds unchanged, and
//! the node choice stays `ε_cand`-DP. The workload is a statement about queries: public.

use std::collections::BTreeSet;

use datafusion::common::{plan_err, Result};

use crate::hierarchy::Hierarchy;
use crate::names::parse_list;
use crate::release::interval_means::numeric_leaves;

/// How the analyses group one quasi-identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    /// By its values.
    Values,
    /// In bands of this width, aligned at 0 (numeric leaves).
    Width(u64),
}

/// The workload as written: `(column, width)` per grouped column.
pub type WorkloadSpec = Vec<(String, Option<u64>)>;

/// Parses `'age:5, sex, surgery'`; errors name the item.
pub fn parse_workload(text: &str) -> Result<WorkloadSpec> {
    let mut out = WorkloadSpec::new();
    for item in parse_list("workload", text, true)? {
        let width = match &item.table {
            None => None,
            Some(w) => match w.text.trim().parse::<u64>() {
                Ok(width) if width > 0 => Some(width),
                _ => {
                    return plan_err!(
                        "workload: '{}' gives the band width '{}'; write a positive whole number, e.g. 'age:5'",
                        item.written.trim(),
                        w.text
                    )
                }
            },
        };
        out.push((item.column.text, width));
    }
    if out.is_empty() {
        return plan_err!("workload names no column; e.g. workload => 'age:5, sex'");
    }
    Ok(out)
}

/// The workload resolved against the quasi-identifiers: one grouping per attribute
/// (`None`: the analyses do not group by it).
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    groupings: Vec<Option<Grouping>>,
}

impl Workload {
    /// Resolves `spec` against `hierarchies` (the quasi-identifiers, in order).
    pub fn resolve(spec: &WorkloadSpec, hierarchies: &[&Hierarchy]) -> Result<Self> {
        let names: Vec<&str> = hierarchies.iter().map(|h| h.attribute()).collect();
        let mut groupings = vec![None; hierarchies.len()];
        for (name, width) in spec {
            let a = crate::lattice::qi_position("workload", &names, name)?;
            groupings[a] = Some(match width {
                None => Grouping::Values,
                Some(w) => {
                    if numeric_leaves(hierarchies[a]).is_none() {
                        return plan_err!(
                            "workload: '{name}:{w}' groups in bands, but the values of quasi-identifier '{name}' are not all whole numbers; write '{name}' to group by its values"
                        );
                    }
                    Grouping::Width(*w)
                }
            });
        }
        Ok(Self { groupings })
    }

    /// Whether the analyses group by attribute `a`.
    pub fn groups(&self, a: usize) -> bool {
        self.groupings[a].is_some()
    }

    /// The cost of every label of `level` of attribute `a`: `(s − 1)/(G − 1)` for a label
    /// whose leaves fall in `s` of the attribute's `G` groups (0 when `G ≤ 1`), 0 for an
    /// attribute the analyses do not group by.
    pub fn cost_per_code(&self, a: usize, h: &Hierarchy, level: usize) -> Vec<f64> {
        let level = h.level(level);
        let Some(grouping) = self.groupings[a] else {
            return vec![0.0; level.cardinality()];
        };
        let group: Vec<i64> = match (grouping, numeric_leaves(h)) {
            (Grouping::Width(w), Some(leaves)) => leaves
                .iter()
                .map(|&x| x.div_euclid(i64::try_from(w).unwrap_or(i64::MAX)))
                .collect(),
            _ => (0..h.leaf_count() as i64).collect(),
        };
        let all: BTreeSet<i64> = group.iter().copied().collect();
        let mut spanned: Vec<BTreeSet<i64>> = vec![BTreeSet::new(); level.cardinality()];
        for (leaf, &code) in level.leaf_to_code().iter().enumerate() {
            spanned[code as usize].insert(group[leaf]);
        }
        if all.len() <= 1 {
            return vec![0.0; level.cardinality()];
        }
        let denominator = (all.len() - 1) as f64;
        spanned
            .iter()
            .map(|s| (s.len().saturating_sub(1)) as f64 / denominator)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ladder, rows};

    #[test]
    fn parsing_names_columns_and_widths() {
        assert_eq!(
            parse_workload("age:5, sex").unwrap(),
            vec![("age".to_string(), Some(5)), ("sex".to_string(), None)]
        );
        let err = parse_workload("age:0").unwrap_err().to_string();
        assert!(err.contains("'age:0' gives the band width '0'"), "{err}");
        let err = parse_workload("age:five").unwrap_err().to_string();
        assert!(err.contains("band width 'five'"), "{err}");
    }

    #[test]
    fn a_label_costs_the_share_of_groups_it_merges() {
        // Ages 0..19 in bands of 10 (level 1) and * (level 2).
        let age = ladder("age", "0..19", &["10"]);
        let sex = Hierarchy::from_rows("sex", &rows(&[&["M", "*"], &["F", "*"]])).unwrap();
        let hs = [&age, &sex];
        let spec = parse_workload("age:5").unwrap();
        let w = Workload::resolve(&spec, &hs).unwrap();
        // Leaves lie within one 5-year group; a 10-year band spans 2 of the 4; * all 4.
        assert!(w.cost_per_code(0, &age, 0).iter().all(|&c| c == 0.0));
        assert_eq!(w.cost_per_code(0, &age, 1), vec![1.0 / 3.0, 1.0 / 3.0]);
        assert_eq!(w.cost_per_code(0, &age, 2), vec![1.0]);
        // Sex is not in the workload: free at every level.
        assert!(!w.groups(1));
        assert_eq!(w.cost_per_code(1, &sex, 1), vec![0.0]);
        // By values: a band of 10 leaves of 20 merges 10 of 20 groups.
        let w = Workload::resolve(&parse_workload("age, sex").unwrap(), &hs).unwrap();
        assert_eq!(w.cost_per_code(0, &age, 1), vec![9.0 / 19.0, 9.0 / 19.0]);
        assert_eq!(w.cost_per_code(1, &sex, 1), vec![1.0]);
        let err = Workload::resolve(&parse_workload("sex:2").unwrap(), &hs)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("values of quasi-identifier 'sex' are not all whole numbers"),
            "{err}"
        );
        let err = Workload::resolve(&parse_workload("zip").unwrap(), &hs)
            .unwrap_err()
            .to_string();
        assert!(err.contains("zip"), "{err}");
    }
}
