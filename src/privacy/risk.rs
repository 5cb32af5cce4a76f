//! Re-identification risk from equivalence-class sizes (El Emam's prosecutor, journalist and
//! marketer attacker models, as ARX and sdcMicro report them). One definition serves the
//! `anonymize_assess` table function and every release's metadata ([`release_risk`]).
//! docs/METHODS.md §7.5.

use crate::release::{ReleasedHistogram, SUPPRESSED};

/// Risk figures of a table whose non-suppressed records fall into classes of the given
/// sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassRisk {
    /// Records in non-suppressed classes, `n`.
    pub records: u64,
    /// Number of classes, `J`.
    pub classes: u64,
    /// Smallest class size (0 when there is no class).
    pub min_class_size: u64,
    /// `n / J`.
    pub avg_class_size: f64,
    /// Records in classes of size 1.
    pub sample_uniques: u64,
    /// `1 / min f_j`: the highest probability that a prosecutor, who knows the target is
    /// in the table, picks the right record.
    pub prosecutor_risk_max: f64,
    /// `(1/n) Σ_records 1/f(record) = J / n`: the prosecutor's average success.
    pub prosecutor_risk_avg: f64,
    /// Fraction of records whose prosecutor risk `1/f` exceeds the threshold.
    pub records_at_risk: f64,
}

impl ClassRisk {
    /// The figures from the class sizes (each > 0) and the `records_at_risk` threshold.
    pub fn from_sizes(sizes: impl IntoIterator<Item = u64>, threshold: f64) -> Self {
        let mut records = 0u64;
        let mut classes = 0u64;
        let mut min = u64::MAX;
        let mut uniques = 0u64;
        let mut at_risk = 0u64;
        for f in sizes.into_iter().filter(|&f| f > 0) {
            records += f;
            classes += 1;
            min = min.min(f);
            if f == 1 {
                uniques += 1;
            }
            if 1.0 / f as f64 > threshold {
                at_risk += f;
            }
        }
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        Self {
            records,
            classes,
            min_class_size: if classes == 0 { 0 } else { min },
            avg_class_size: ratio(records, classes),
            sample_uniques: uniques,
            prosecutor_risk_max: if classes == 0 { 0.0 } else { 1.0 / min as f64 },
            prosecutor_risk_avg: ratio(classes, records),
            records_at_risk: ratio(at_risk, records),
        }
    }
}

/// Journalist and marketer risk: the attacker links against a population that contains
/// the table. `population` holds, for each class of the table (same order as its sizes),
/// the number of population records with the same quasi-identifier values, `F_j ≥ f_j`.
#[derive(Debug, Clone, PartialEq)]
pub struct PopulationRisk {
    /// `1 / min F_j`.
    pub journalist_risk_max: f64,
    /// `(1/n) Σ_j f_j / F_j`: the expected fraction of records a marketer re-identifies.
    pub marketer_risk: f64,
}

impl PopulationRisk {
    /// From the table's class sizes `f_j` and the population's `F_j` (paired, `F_j ≥ f_j > 0`).
    pub fn from_pairs(pairs: impl IntoIterator<Item = (u64, f64)>) -> Self {
        let mut records = 0u64;
        let mut min_population = f64::INFINITY;
        let mut marketer = 0.0;
        for (f, population) in pairs {
            if f == 0 {
                continue;
            }
            records += f;
            min_population = min_population.min(population);
            marketer += f as f64 / population;
        }
        Self {
            journalist_risk_max: if records == 0 {
                0.0
            } else {
                1.0 / min_population
            },
            marketer_risk: if records == 0 {
                0.0
            } else {
                marketer / records as f64
            },
        }
    }
}

/// The prosecutor risks and smallest class size of a release, computed on the release
/// itself: its non-suppressed classes (a class of `*` only is the suppressed class and not
/// counted), as metadata entries.
pub fn release_risk(release: &ReleasedHistogram) -> Vec<(String, String)> {
    let attrs = release.class_codes.len();
    let sizes = (0..release.class_count())
        .filter(|&c| !(attrs > 0 && (0..attrs).all(|a| release.class_codes[a][c] == SUPPRESSED)))
        .map(|c| release.counts[release.class_range(c)].iter().sum::<u64>());
    let risk = ClassRisk::from_sizes(sizes, 1.0);
    vec![
        ("min_class_size".into(), risk.min_class_size.to_string()),
        (
            "prosecutor_risk_max".into(),
            risk.prosecutor_risk_max.to_string(),
        ),
        (
            "prosecutor_risk_avg".into(),
            risk.prosecutor_risk_avg.to_string(),
        ),
    ]
}

/// [`release_risk`] per person: the smallest class size in records, and the prosecutor
/// risks from `class_persons`, the distinct persons of every non-suppressed class (a
/// person is re-identified with probability at most one over the persons of their class).
pub fn release_risk_per_person(
    release: &ReleasedHistogram,
    class_persons: &[u64],
) -> Vec<(String, String)> {
    let mut out = release_risk(release);
    let risk = ClassRisk::from_sizes(class_persons.iter().copied(), 1.0);
    for (key, value) in out.iter_mut() {
        match key.as_str() {
            "prosecutor_risk_max" => *value = risk.prosecutor_risk_max.to_string(),
            "prosecutor_risk_avg" => *value = risk.prosecutor_risk_avg.to_string(),
            _ => {}
        }
    }
    out.push((
        "min_persons_per_class".into(),
        risk.min_class_size.to_string(),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_sizes() {
        // Classes of sizes 1, 2, 3, 4: n = 10, J = 4.
        let r = ClassRisk::from_sizes([1, 2, 3, 4], 0.3);
        assert_eq!(r.records, 10);
        assert_eq!(r.classes, 4);
        assert_eq!(r.min_class_size, 1);
        assert_eq!(r.avg_class_size, 2.5);
        assert_eq!(r.sample_uniques, 1);
        assert_eq!(r.prosecutor_risk_max, 1.0);
        assert_eq!(r.prosecutor_risk_avg, 0.4);
        // Risks 1, 1/2, 1/3, 1/4 > 0.3: the classes of 1, 2 and 3 (6 records).
        assert_eq!(r.records_at_risk, 0.6);
        let empty = ClassRisk::from_sizes([], 0.2);
        assert_eq!((empty.records, empty.prosecutor_risk_max), (0, 0.0));
    }

    #[test]
    fn population_risk_by_hand() {
        // f = (1, 3), F = (4, 6): journalist 1/4; marketer (1/4 + 3/6) / 4 = 0.1875.
        let r = PopulationRisk::from_pairs([(1, 4.0), (3, 6.0)]);
        assert_eq!(r.journalist_risk_max, 0.25);
        assert_eq!(r.marketer_risk, 0.1875);
    }

    #[test]
    fn release_risk_skips_the_suppressed_class() {
        let mut release = ReleasedHistogram::new(vec![0, 0], 2);
        release.push_class(&[0, 1], &[(0, 2), (1, 1)], &[]);
        release.push_class(&[1, 1], &[(0, 5)], &[]);
        release.push_class(&[SUPPRESSED, SUPPRESSED], &[(0, 1)], &[]);
        let meta = release_risk(&release);
        let get = |k: &str| meta.iter().find(|(key, _)| key == k).unwrap().1.clone();
        assert_eq!(get("min_class_size"), "3");
        assert_eq!(get("prosecutor_risk_max"), (1.0f64 / 3.0).to_string());
        assert_eq!(get("prosecutor_risk_avg"), "0.25");
    }
}
