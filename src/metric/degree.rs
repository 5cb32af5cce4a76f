//! Generalization degree (Lee et al. 2017, "Generalization, suppression, and relocation";
//! docs/METHODS.md §5.1) and the loss metric LM built on it.
//!
//! The degree of one generalized value is a number in `[0, 1]`:
//!
//! ```text
//! numeric attribute:      D_A = (U_q − L_q) / (U − L)
//! categorical attribute:  D_A = (|M_p| − 1) / (|M| − 1)
//! record:                 D(r) = (1/n) Σ_A D_A(r[A])          (n quasi-identifiers)
//! ```
//!
//! An attribute is *numeric* when every leaf of its hierarchy reads as a finite number;
//! then `L_q`, `U_q` are the smallest and largest leaf under the generalized value and `L`,
//! `U` the smallest and largest leaf of the hierarchy (for a hierarchy whose interval ends
//! are leaves, as in the paper's example, these are the interval's bounds). Otherwise it is
//! *categorical*: `|M_p|` leaves under the value out of `|M|`. A suppressed value (`*`) has
//! degree 1. For an attribute whose leaves are consecutive integers both readings agree.
//!
//! LM is the mean of `D(r)` over the released rows (counterfeits included: LM measures
//! the released table).

use crate::hierarchy::Hierarchy;
use crate::release::{ReleasedHistogram, SUPPRESSED};

/// Slack when comparing a degree with a ceiling `h`: degrees are means of rationals
/// computed in `f64`, so an exact tie may come out a few ulps above `h`.
pub const DEGREE_TOLERANCE: f64 = 1e-9;

/// How a hierarchy's degree is measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DegreeScale {
    /// Every leaf is a number: interval extent over the domain `[min, max]`.
    Numeric {
        /// Smallest leaf.
        min: f64,
        /// Largest leaf.
        max: f64,
    },
    /// Leaf counts: `(|M_p| − 1) / (|M| − 1)`.
    Categorical,
}

/// Degrees of every value of one hierarchy, per level and code.
#[derive(Debug, Clone, PartialEq)]
pub struct AttributeDegrees {
    /// How the degrees were measured.
    pub scale: DegreeScale,
    /// `per_level[level][code]`: the degree of that generalized value.
    pub per_level: Vec<Vec<f64>>,
}

impl AttributeDegrees {
    /// The degrees of `hierarchy`'s values.
    pub fn new(hierarchy: &Hierarchy) -> Self {
        let leaves = hierarchy.leaf_count();
        let numbers: Option<Vec<f64>> = hierarchy
            .level(0)
            .labels()
            .iter()
            .map(|l| l.trim().parse::<f64>().ok().filter(|x| x.is_finite()))
            .collect();
        let scale = match &numbers {
            Some(values) if !values.is_empty() => {
                let min = values.iter().copied().fold(f64::INFINITY, f64::min);
                let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                DegreeScale::Numeric { min, max }
            }
            _ => DegreeScale::Categorical,
        };
        let per_level = (0..=hierarchy.height())
            .map(|level| {
                let lvl = hierarchy.level(level);
                match (&scale, &numbers) {
                    (DegreeScale::Numeric { min, max }, Some(values)) => {
                        let mut lo = vec![f64::INFINITY; lvl.cardinality()];
                        let mut hi = vec![f64::NEG_INFINITY; lvl.cardinality()];
                        for (leaf, &code) in lvl.leaf_to_code().iter().enumerate() {
                            let x = values[leaf];
                            lo[code as usize] = lo[code as usize].min(x);
                            hi[code as usize] = hi[code as usize].max(x);
                        }
                        let span = max - min;
                        lo.iter()
                            .zip(&hi)
                            .map(|(l, h)| if span > 0.0 { (h - l) / span } else { 0.0 })
                            .collect()
                    }
                    _ => lvl
                        .leaf_counts()
                        .iter()
                        .map(|&c| {
                            if leaves > 1 {
                                (c as f64 - 1.0) / (leaves as f64 - 1.0)
                            } else {
                                0.0
                            }
                        })
                        .collect(),
                }
            })
            .collect();
        Self { scale, per_level }
    }

    /// Degree of `code` at `level` ([`SUPPRESSED`] or an unknown code: 1).
    pub fn degree(&self, level: usize, code: u32) -> f64 {
        if code == SUPPRESSED {
            return 1.0;
        }
        self.per_level
            .get(level)
            .and_then(|l| l.get(code as usize))
            .copied()
            .unwrap_or(1.0)
    }
}

/// Degrees of every quasi-identifier of a release.
#[derive(Debug, Clone, PartialEq)]
pub struct Degrees {
    /// One table per quasi-identifier, in order.
    pub attributes: Vec<AttributeDegrees>,
}

impl Degrees {
    /// The degree tables of `hierarchies`.
    pub fn new(hierarchies: &[&Hierarchy]) -> Self {
        Self {
            attributes: hierarchies
                .iter()
                .map(|h| AttributeDegrees::new(h))
                .collect(),
        }
    }

    /// `D(r)` of the records of every class of a node at `levels` whose classes have the
    /// codes `class_codes[a][c]` (codes of their levels, as a node's histogram holds): the
    /// same values as [`Degrees::record_degree`] class by
    /// class (the same sums in the same order), computed attribute by attribute.
    pub fn class_degrees(&self, levels: &[usize], class_codes: &[Vec<u32>]) -> Vec<f64> {
        let n = self.attributes.len();
        let classes = class_codes.first().map_or(0, Vec::len);
        let mut sums = vec![0.0f64; classes];
        if n == 0 {
            return sums;
        }
        for (a, d) in self.attributes.iter().enumerate() {
            // A level whose values all have one degree (the leaves of a categorical
            // hierarchy, a level of one value) adds it to every class without a lookup: a
            // node's classes hold codes of their levels, never SUPPRESSED.
            match d.per_level.get(levels[a]).map(Vec::as_slice) {
                Some([first, rest @ ..]) if rest.iter().all(|x| x == first) => {
                    // Adding 0 to a sum that started at +0 changes nothing.
                    if *first != 0.0 {
                        let first = *first;
                        for sum in sums.iter_mut() {
                            *sum += first;
                        }
                    }
                }
                _ => {
                    for (sum, &code) in sums.iter_mut().zip(&class_codes[a]) {
                        *sum += d.degree(levels[a], code);
                    }
                }
            }
        }
        for sum in &mut sums {
            *sum /= n as f64;
        }
        sums
    }

    /// `D(r)` of a record whose class has `codes` at `levels`: the mean over attributes.
    pub fn record_degree(&self, levels: &[usize], codes: impl Fn(usize) -> u32) -> f64 {
        let n = self.attributes.len();
        if n == 0 {
            return 0.0;
        }
        let sum: f64 = self
            .attributes
            .iter()
            .enumerate()
            .map(|(a, d)| d.degree(levels[a], codes(a)))
            .sum();
        sum / n as f64
    }
}

/// LM of a release: the mean generalization degree of its rows (0 for an empty release).
pub fn loss_metric(degrees: &Degrees, release: &ReleasedHistogram) -> f64 {
    let mut weighted = 0.0;
    let mut rows = 0u64;
    for c in 0..release.class_count() {
        let size: u64 = release.counts[release.class_range(c)].iter().sum();
        if size == 0 {
            continue;
        }
        let d = degrees.record_degree(&release.levels, |a| release.class_codes[a][c]);
        weighted += d * size as f64;
        rows += size;
    }
    if rows == 0 {
        0.0
    } else {
        weighted / rows as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ladder, rows};

    /// The paper's worked degree: Age [35-66] over [0-99], sex `*` of two values, zip
    /// [22071-55324] over [0-99999]: (31/99 + 1 + 33253/99999)/3 = 0.55.
    #[test]
    fn paper_degree_example() {
        let age = Hierarchy::from_rows(
            "age",
            &rows(&[
                &["0", "0", "*"],
                &["35", "[35-66]", "*"],
                &["66", "[35-66]", "*"],
                &["99", "99", "*"],
            ]),
        )
        .unwrap();
        let sex = Hierarchy::from_rows("sex", &rows(&[&["M", "*"], &["F", "*"]])).unwrap();
        let zip = Hierarchy::from_rows(
            "zip",
            &rows(&[
                &["0", "0", "*"],
                &["22071", "[22071-55324]", "*"],
                &["55324", "[22071-55324]", "*"],
                &["99999", "99999", "*"],
            ]),
        )
        .unwrap();
        let d = Degrees::new(&[&age, &sex, &zip]);
        assert_eq!(
            d.attributes[0].scale,
            DegreeScale::Numeric {
                min: 0.0,
                max: 99.0
            }
        );
        assert_eq!(d.attributes[1].scale, DegreeScale::Categorical);
        // age code 1 = [35-66], sex level 1 = *, zip code 1 = [22071-55324].
        let record = d.record_degree(&[1, 1, 1], |a| [1, 0, 1][a]);
        let expected = (31.0 / 99.0 + 1.0 + 33253.0 / 99999.0) / 3.0;
        assert!((record - expected).abs() < 1e-15, "{record}");
        assert_eq!((record * 100.0).round() / 100.0, 0.55);
        assert_eq!(d.attributes[0].degree(0, 1), 0.0);
        assert_eq!(d.attributes[0].degree(2, 0), 1.0);
        assert_eq!(d.attributes[0].degree(1, SUPPRESSED), 1.0);

        // Column by column, every class gets exactly its record degree; and the volumes.
        let codes = vec![
            vec![1, 0, 2, SUPPRESSED],
            vec![0, 0, 0, 0],
            vec![1, 2, 0, 1],
        ];
        let levels = [1, 1, 1];
        let by_class: Vec<f64> = (0..4)
            .map(|c| d.record_degree(&levels, |a| codes[a][c]))
            .collect();
        assert_eq!(d.class_degrees(&levels, &codes), by_class);
        let hs = [&age, &sex, &zip];
        let volumes: Vec<f64> = (0..4)
            .map(|c| crate::metric::rce::class_volume(&hs, &levels, |a| codes[a][c]))
            .collect();
        assert_eq!(
            crate::metric::rce::class_volumes(&hs, &levels, &codes),
            volumes
        );
        assert_eq!(volumes[0], 2.0 * 2.0 * 2.0);
    }

    /// Consecutive integers: the numeric and the categorical readings agree.
    #[test]
    fn consecutive_integers_agree_with_leaf_counts() {
        let h = ladder("age", "0..19", &["5", "10"]);
        let numeric = AttributeDegrees::new(&h);
        for level in 0..=h.height() {
            for (code, &count) in h.level(level).leaf_counts().iter().enumerate() {
                let categorical = (count as f64 - 1.0) / 19.0;
                assert!((numeric.per_level[level][code] - categorical).abs() < 1e-15);
            }
        }
        // A categorical hierarchy with one leaf has degree 0 everywhere but suppression.
        let one = Hierarchy::from_rows("x", &rows(&[&["a", "*"]])).unwrap();
        let d = AttributeDegrees::new(&one);
        assert_eq!(d.per_level, vec![vec![0.0], vec![0.0]]);
    }

    #[test]
    fn loss_metric_weights_rows() {
        let h = ladder("age", "0..9", &["5"]);
        let mut release = ReleasedHistogram::new(vec![1], 1);
        release.push_class(&[0], &[(0, 3)], &[]);
        release.push_class(&[SUPPRESSED], &[(0, 1)], &[]);
        let d = Degrees::new(&[&h]);
        // [0-5) covers 0..4: 4/9; three rows of it and one suppressed row.
        let lm = loss_metric(&d, &release);
        assert!((lm - (3.0 * 4.0 / 9.0 + 1.0) / 4.0).abs() < 1e-15, "{lm}");
        assert_eq!(loss_metric(&d, &ReleasedHistogram::new(vec![1], 1)), 0.0);
    }
}
