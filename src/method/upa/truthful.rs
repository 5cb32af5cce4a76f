//! The recipient's side of UPA (docs/METHODS.md §5.5): from the two published tables alone
//! — the released rows and their counterfeit catalog — which rows form a table of real
//! records only. `upa_truthful(...)` reads the tables and binds the arguments; this module
//! decides, on their text values.
//!
//! For each catalog entry `(group G, value s, count c)`:
//!
//! 1. in every class `E` of `G`, `min(c, n_E(s))` of the `n_E(s)` rows with value `s` have
//!    their quasi-identifiers suppressed (`*`): the counterfeits of `E` with `s` are among
//!    them, since `E` holds at most `min(c, n_E(s))` of them;
//! 2. `c` of the suppressed rows are deleted.
//!
//! Every remaining row is real: a generalized row is one of `E`'s real records, and the
//! `Σ_E min(c, n_E(s)) − c` suppressed rows left are exactly as many as the real records
//! among the suppressed ones. The result has exactly the number of real records. Rows are
//! compared on the quasi-identifiers and the sensitive column only: rows equal on them are
//! interchangeable, so which ones are suppressed or deleted does not matter, and the result
//! is a function of the two tables alone. Kept rows come in the order they are read, the
//! suppressed rows after them.

use std::collections::{HashMap, HashSet};

use datafusion::common::{exec_err, Result};

use crate::quote::quote;

/// One row of a counterfeit catalog, as text: the group, the class's labels (one per
/// quasi-identifier), the sensitive value and the number of counterfeits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogRow {
    /// The catalog group.
    pub group: u64,
    /// The class's label of every quasi-identifier.
    pub class: Vec<String>,
    /// The sensitive value.
    pub value: String,
    /// Counterfeit rows of this value in the group.
    pub count: u64,
}

/// The released rows as text: per quasi-identifier the label of every row, and every
/// row's sensitive value.
#[derive(Debug, Clone)]
pub struct ReleasedRows {
    /// `labels[a][row]`: the label of quasi-identifier `a` in `row`.
    pub labels: Vec<Vec<String>>,
    /// The sensitive value of every row.
    pub values: Vec<String>,
}

/// Names the errors speak of: the calling function, the two tables and the
/// quasi-identifier columns.
#[derive(Debug, Clone, Copy)]
pub struct Names<'a> {
    /// The SQL function, for the errors' prefix.
    pub function: &'a str,
    /// The release table.
    pub release: &'a str,
    /// The catalog table.
    pub catalog: &'a str,
    /// The quasi-identifier columns, in class-label order.
    pub qi: &'a [String],
}

/// Which released rows form the truthful table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruthfulRows {
    /// Rows kept as they are, in release order.
    pub generalized: Vec<usize>,
    /// Rows kept with every quasi-identifier suppressed (`*`), after them.
    pub suppressed: Vec<usize>,
}

/// One catalogued class: its labels.
type ClassKey = Vec<String>;

/// The rows of the truthful table of `release` given its `catalog`. Errors (naming the
/// tables) when the catalog contradicts itself or does not describe the release.
pub fn truthful_rows(
    catalog: &[CatalogRow],
    release: &ReleasedRows,
    names: Names<'_>,
) -> Result<TruthfulRows> {
    let (function, catalog_name, release_name) = (names.function, names.catalog, names.release);
    // The catalog: group of each class, count of each (group, value).
    let mut class_group: HashMap<&ClassKey, u64> = HashMap::new();
    let mut counts: HashMap<(u64, &str), u64> = HashMap::new();
    let mut group_classes: HashMap<(u64, &str), Vec<&ClassKey>> = HashMap::new();
    for row in catalog {
        let group = row.group;
        if let Some(&other) = class_group.get(&row.class) {
            if other != group {
                return exec_err!(
                    "{function}(): catalog '{catalog_name}' lists class ({}) in groups {other} and {group}; a class belongs to one group",
                    describe(names.qi, &row.class)
                );
            }
        }
        class_group.insert(&row.class, group);
        let key = (group, row.value.as_str());
        match counts.get(&key) {
            Some(&c) if c != row.count => {
                return exec_err!(
                    "{function}(): catalog '{catalog_name}' gives group {group}, value '{}' two counts ({c} and {})",
                    row.value,
                    row.count
                )
            }
            _ => {
                counts.insert(key, row.count);
            }
        }
        let members = group_classes.entry(key).or_default();
        if !members.contains(&&row.class) {
            members.push(&row.class);
        }
    }

    // The rows of every catalogued (class, value).
    let rows = release.values.len();
    let mut seen_classes: HashSet<ClassKey> = HashSet::new();
    let mut rows_of: HashMap<(ClassKey, &str), Vec<usize>> = HashMap::new();
    let mut class: ClassKey = vec![String::new(); release.labels.len()];
    for row in 0..rows {
        for (slot, label) in class.iter_mut().zip(&release.labels) {
            slot.clone_from(&label[row]);
        }
        if !class_group.contains_key(&class) {
            continue;
        }
        if !seen_classes.contains(&class) {
            seen_classes.insert(class.clone());
        }
        rows_of
            .entry((class.clone(), release.values[row].as_str()))
            .or_default()
            .push(row);
    }
    if let Some(missing) = class_group.keys().find(|c| !seen_classes.contains(**c)) {
        return exec_err!(
            "{function}(): catalog '{catalog_name}' lists class ({}), which does not occur in release '{release_name}'; give the release and the catalog of the same anonymize() call",
            describe(names.qi, missing)
        );
    }

    // Suppress, then delete.
    let mut suppressed_flag = vec![false; rows];
    let mut kept_suppressed: Vec<usize> = Vec::new();
    let mut entries: Vec<(&(u64, &str), &u64)> = counts.iter().collect();
    entries.sort();
    for (key, &count) in entries {
        let mut suppressed: Vec<usize> = Vec::new();
        let mut members = group_classes.get(key).cloned().unwrap_or_default();
        members.sort();
        for member in members {
            let list = rows_of
                .get(&(member.clone(), key.1))
                .map_or(&[][..], Vec::as_slice);
            let m = (count as usize).min(list.len());
            suppressed.extend_from_slice(&list[list.len() - m..]);
        }
        if (suppressed.len() as u64) < count {
            return exec_err!(
                "{function}(): catalog '{catalog_name}' counts {count} counterfeit rows of '{}' in group {}, but release '{release_name}' holds only {} such rows in the group's classes; give the release and the catalog of the same anonymize() call",
                key.1,
                key.0,
                suppressed.len()
            );
        }
        for &r in &suppressed {
            suppressed_flag[r] = true;
        }
        suppressed.sort_unstable();
        kept_suppressed.extend_from_slice(&suppressed[count as usize..]);
    }
    Ok(TruthfulRows {
        generalized: (0..rows).filter(|&r| !suppressed_flag[r]).collect(),
        suppressed: kept_suppressed,
    })
}

/// `qi='label', ...` of a class, for errors.
fn describe(qi: &[String], class: &[String]) -> String {
    qi.iter()
        .zip(class)
        .map(|(q, l)| format!("{q}='{l}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The released rows of one catalog entry's value in its group's classes.
struct GroupRows<'a> {
    /// The entry's count.
    count: u64,
    /// Rows with the value in all the group's classes.
    total: u64,
    /// Rows with the value in the class holding most of them.
    largest: u64,
    /// That class.
    largest_class: &'a [String],
}

/// The recipient's check that a catalog read back (`upa_truthful(...)`) is one that
/// `anonymize_catalog()` could have published for `release` (docs/METHODS.md §5.5): for
/// every entry (group `G`, value `s`, count `c`) and every class `E` of `G`, the rows with
/// `s` in the other classes of `G` are at least `c`. This is Lemma 1 as the two published
/// tables show it: a class with counterfeits of `s` needs `real_{G∖E}(s) ≥ fake_E(s)`, i.e.
/// `Σ_{E'≠E} n_{E'}(s) ≥ c`, and a class without them has all `c` counterfeits among the
/// other classes' rows. A group of one class, or a release edited so that a group no
/// longer conceals its counterfeits, fails it. Run after `truthful_rows` has checked that
/// every catalogued class occurs and every count fits its rows.
pub fn check_concealed(
    catalog: &[CatalogRow],
    release: &ReleasedRows,
    names: Names<'_>,
) -> Result<()> {
    // Rows per (class, value), for the catalogued pairs only.
    let mut class_ids: HashMap<&[String], usize> = HashMap::new();
    let mut value_ids: HashMap<&str, usize> = HashMap::new();
    let mut wanted: HashMap<(usize, usize), u64> = HashMap::new();
    for row in catalog {
        let next = class_ids.len();
        let c = *class_ids.entry(row.class.as_slice()).or_insert(next);
        let next = value_ids.len();
        let v = *value_ids.entry(row.value.as_str()).or_insert(next);
        wanted.insert((c, v), 0);
    }
    let mut class: Vec<String> = vec![String::new(); release.labels.len()];
    for (r, value) in release.values.iter().enumerate() {
        let Some(&v) = value_ids.get(value.as_str()) else {
            continue;
        };
        for (slot, labels) in class.iter_mut().zip(&release.labels) {
            slot.clone_from(&labels[r]);
        }
        if let Some(&c) = class_ids.get(class.as_slice()) {
            if let Some(n) = wanted.get_mut(&(c, v)) {
                *n += 1;
            }
        }
    }
    // Per (group, value): the count, the rows in all its classes, the largest class's rows.
    let mut entries: HashMap<(u64, &str), GroupRows<'_>> = HashMap::new();
    let mut seen: std::collections::HashSet<(u64, &[String], &str)> = Default::default();
    for row in catalog {
        if !seen.insert((row.group, row.class.as_slice(), row.value.as_str())) {
            continue;
        }
        let key = (
            class_ids[row.class.as_slice()],
            value_ids[row.value.as_str()],
        );
        let n = wanted.get(&key).copied().unwrap_or(0);
        let entry = entries
            .entry((row.group, row.value.as_str()))
            .or_insert(GroupRows {
                count: row.count,
                total: 0,
                largest: 0,
                largest_class: row.class.as_slice(),
            });
        entry.total += n;
        if n > entry.largest {
            entry.largest = n;
            entry.largest_class = row.class.as_slice();
        }
    }
    let mut keys: Vec<&(u64, &str)> = entries.keys().collect();
    keys.sort();
    for key in keys {
        let entry = &entries[key];
        let (count, class) = (entry.count, entry.largest_class);
        let others = entry.total - entry.largest;
        if others < count {
            let described: Vec<String> = names
                .qi
                .iter()
                .zip(class)
                .map(|(q, l)| format!("{q}={}", quote(l)))
                .collect();
            return exec_err!(
                "{}(): catalog '{}' does not conceal its counterfeits in release '{}': group {} counts {count} counterfeit row(s) of {}, but outside its class ({}) the group's classes hold only {others} such row(s), so the counterfeits could be pinned down (Lemma 1); anonymize_catalog() publishes no such catalog (a group of one class, or an edited release or catalog): give the release and the catalog of the same anonymize() call, unchanged",
                names.function,
                names.catalog,
                names.release,
                key.0,
                quote(key.1),
                described.join(", ")
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    /// The paper's Table 5 with its catalog `({1, 2}, Diabetes, 1)`: class 1 holds one
    /// counterfeit Diabetes row. In class 1 (`[20-29]`) and class 2 (`[30-39]`) one Diabetes
    /// row each is suppressed, one of the two is deleted: three of four Diabetes rows stay,
    /// one of them suppressed.
    #[test]
    fn removes_exactly_the_catalogued_counterfeits() {
        let qi = strings(&["age"]);
        let release = ReleasedRows {
            labels: vec![strings(&[
                "[20-29]", "[20-29]", "[20-29]", "[30-39]", "[30-39]", "[60-69]",
            ])],
            values: strings(&[
                "Diabetes", "Anemia", "Diabetes", "Diabetes", "Flu", "Stroke",
            ]),
        };
        let catalog = vec![
            CatalogRow {
                group: 1,
                class: strings(&["[20-29]"]),
                value: "Diabetes".into(),
                count: 1,
            },
            CatalogRow {
                group: 1,
                class: strings(&["[30-39]"]),
                value: "Diabetes".into(),
                count: 1,
            },
        ];
        let names = Names {
            function: "upa_truthful",
            release: "r",
            catalog: "c",
            qi: &qi,
        };
        let rows = truthful_rows(&catalog, &release, names).unwrap();
        // Class [20-29]: min(1, 2) = 1 Diabetes row suppressed (the last, row 2); class
        // [30-39]: row 3. One of the two is deleted (the first by row order), one stays
        // suppressed.
        assert_eq!(rows.generalized, vec![0, 1, 4, 5]);
        assert_eq!(rows.suppressed, vec![3]);
        assert_eq!(
            rows.generalized.len() + rows.suppressed.len(),
            5,
            "six rows, one counterfeit"
        );
    }

    /// A catalog that does not describe the release is refused, naming both tables.
    #[test]
    fn a_foreign_catalog_is_refused() {
        let qi = strings(&["age"]);
        let release = ReleasedRows {
            labels: vec![strings(&["[20-29]"])],
            values: strings(&["Flu"]),
        };
        let names = Names {
            function: "upa_truthful",
            release: "r",
            catalog: "c",
            qi: &qi,
        };
        let missing = vec![CatalogRow {
            group: 1,
            class: strings(&["[30-39]"]),
            value: "Flu".into(),
            count: 1,
        }];
        let err = truthful_rows(&missing, &release, names)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "catalog 'c' lists class (age='[30-39]'), which does not occur in release 'r'"
            ),
            "{err}"
        );
        let too_many = vec![CatalogRow {
            group: 1,
            class: strings(&["[20-29]"]),
            value: "Flu".into(),
            count: 2,
        }];
        let err = truthful_rows(&too_many, &release, names)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "counts 2 counterfeit rows of 'Flu' in group 1, but release 'r' holds only 1"
            ),
            "{err}"
        );
        let two_groups = vec![
            CatalogRow {
                group: 1,
                class: strings(&["[20-29]"]),
                value: "Flu".into(),
                count: 1,
            },
            CatalogRow {
                group: 2,
                class: strings(&["[20-29]"]),
                value: "Flu".into(),
                count: 1,
            },
        ];
        let err = truthful_rows(&two_groups, &release, names)
            .unwrap_err()
            .to_string();
        assert!(err.contains("in groups 1 and 2"), "{err}");
    }
}
