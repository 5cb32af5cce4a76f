//! `counterfeit_values => 'marginal'`: counterfeit informative values drawn from one noisy
//! histogram of the whole table's informative values (docs/METHODS.md §1.14).
//!
//! The histogram counts every record's informative value, adds discrete Laplace noise of
//! scale `1/ε_val` to each of the `|Inf|` counts of the value domain (zeros included) and
//! clamps them at 0. Adding or removing one record changes one count by 1, so **for a fixed,
//! public value domain** the noisy histogram is `ε_val`-DP; every counterfeit value is then
//! drawn from it, which is post-processing and spends nothing more.
//!
//! The domain is public when it is the leaves of a hierarchy the owner names for the
//! informative column ([`crate::sensitive::SensitiveDomain::add_hierarchy_leaves`]). Read
//! from the data (the distinct values present), it is not: a value that only the added
//! record has gets no count without that record, so it never appears among the
//! counterfeits, and with it it does (with probability `1/(1 + e^-ε_val)` ≈ 0.574 at
//! `ε_val = 0.3` its noisy count is positive). The guarantee then holds only between
//! neighbouring tables with the same set of distinct values, and the `guarantee` metadata
//! says so. The paper's per-class draw (Eq. 3–4) instead spends `ε_val` on
//! each draw and is nearly uniform over the domain: it gives a rare value (stroke, 1 % of
//! the records, 29 of 627 codes on the NPS demo) about 4.6 % of the counterfeits.

use datafusion::common::{internal_err, Result};

use crate::histogram::GroupedHistogram;
use crate::mechanism::noise::{sample_discrete_laplace, sample_uniform_below, ExactScale};
use crate::mechanism::rng::AnonRng;

/// Each count with discrete Laplace noise of `scale`, clamped at 0.
fn noisy_counts(counts: Vec<u64>, scale: ExactScale, rng: &mut AnonRng) -> Vec<u64> {
    counts
        .into_iter()
        .map(|c| {
            let noisy = c as i128 + sample_discrete_laplace(rng, scale) as i128;
            noisy.clamp(0, u64::MAX as i128) as u64
        })
        .collect()
}

/// The noisy histogram of informative values, as cumulative integer weights.
#[derive(Debug, Clone)]
pub struct MarginalValues {
    /// `cumulative[v]` = sum of the noisy counts of values `0..=v`; empty when every
    /// noisy count is 0 (values are then drawn uniformly).
    cumulative: Vec<u64>,
    value_domain: usize,
}

impl MarginalValues {
    /// Counts the informative values of `base` (any node: the counts do not depend on
    /// the generalization) and adds noise of scale `1/ε_val` to each of the
    /// `value_domain` counts.
    pub fn new(
        base: &GroupedHistogram,
        value_domain: usize,
        eps_val: f64,
        rng: &mut AnonRng,
    ) -> Result<Self> {
        let mut counts = vec![0u64; value_domain];
        for (&v, &c) in base.pair_values.iter().zip(&base.pair_counts) {
            match counts.get_mut(v as usize) {
                Some(slot) => *slot += c,
                None => {
                    return internal_err!(
                        "informative value code {v} outside the domain of {value_domain} values"
                    )
                }
            }
        }
        let scale = ExactScale::from_sensitivity_epsilon(1, eps_val)?;
        Ok(Self::from_noisy(
            noisy_counts(counts, scale, rng).into_iter(),
        ))
    }

    /// From already noisy counts, one per value code.
    fn from_noisy(counts: impl Iterator<Item = u64>) -> Self {
        let mut cumulative = Vec::new();
        let mut total = 0u64;
        for c in counts {
            total = total.saturating_add(c);
            cumulative.push(total);
        }
        let value_domain = cumulative.len();
        if total == 0 {
            cumulative.clear();
        }
        Self {
            cumulative,
            value_domain,
        }
    }

    /// One value code, with probability proportional to its noisy count (uniform over the
    /// domain when every noisy count is 0). Exact: one uniform integer below the total.
    pub fn draw(&self, rng: &mut AnonRng) -> Result<u32> {
        let Some(&total) = self.cumulative.last() else {
            if self.value_domain == 0 {
                return internal_err!("no informative values to draw a counterfeit value from");
            }
            return Ok(sample_uniform_below(rng, self.value_domain as u64) as u32);
        };
        let r = sample_uniform_below(rng, total);
        // The first value whose cumulative count exceeds r.
        Ok(self.cumulative.partition_point(|&c| c <= r) as u32)
    }
}

/// The chance that some cell of a row of [`LabelledValues`] holding no record keeps a count
/// above the noise floor.
const FLOOR_MISS: f64 = 0.05;

/// `counterfeit_by => '<column>'`: one noisy histogram of (the column's label at the chosen
/// node, informative value), each cell with discrete Laplace noise of scale `1/ε_val`
/// clamped at 0. One record is in exactly one cell, so it is `ε_val`-DP like the marginal
/// (docs/METHODS.md §1.14.1); the labels are the hierarchy's at the node already chosen,
/// so the cells are public given the node. Each count then loses the noise floor
/// `⌈ln(|Inf| / 0.05) / ε_val⌉` (a row's empty cells all stay at 0 with probability at least
/// 95 %), so that a small row is not mostly noise; a row left empty draws from the sum of
/// the rows, as the suppressed class `*` does (all post-processing). A counterfeit draws
/// from its class's label's row.
#[derive(Debug, Clone)]
pub struct LabelledValues {
    /// The quasi-identifier whose label is read.
    attr: usize,
    /// Per label, its row of noisy counts.
    rows: Vec<MarginalValues>,
    /// The sum of the rows.
    all: MarginalValues,
}

impl LabelledValues {
    /// Counts `hist` (the chosen node's histogram) by `(label of attr, value)` over
    /// `labels × value_domain` cells and adds the noise.
    pub fn new(
        hist: &GroupedHistogram,
        attr: usize,
        labels: usize,
        value_domain: usize,
        eps_val: f64,
        rng: &mut AnonRng,
    ) -> Result<Self> {
        let Some(codes) = hist.class_codes.get(attr) else {
            return internal_err!("no quasi-identifier {attr} to draw counterfeit values by");
        };
        let mut counts = vec![vec![0u64; value_domain]; labels];
        for (c, &label) in codes.iter().enumerate() {
            let Some(row) = counts.get_mut(label as usize) else {
                return internal_err!("label code {label} outside the {labels} labels");
            };
            for p in hist.class_range(c) {
                match row.get_mut(hist.pair_values[p] as usize) {
                    Some(slot) => *slot += hist.pair_counts[p],
                    None => return internal_err!("informative value code outside the domain"),
                }
            }
        }
        let scale = ExactScale::from_sensitivity_epsilon(1, eps_val)?;
        let floor = noise_floor(value_domain, eps_val);
        let mut total = vec![0u64; value_domain];
        let mut rows = Vec::with_capacity(labels);
        for row in counts {
            let noisy: Vec<u64> = noisy_counts(row, scale, rng)
                .into_iter()
                .map(|n| n.saturating_sub(floor))
                .collect();
            for (t, &n) in total.iter_mut().zip(&noisy) {
                *t = t.saturating_add(n);
            }
            rows.push(MarginalValues::from_noisy(noisy.into_iter()));
        }
        Ok(Self {
            attr,
            rows,
            all: MarginalValues::from_noisy(total.into_iter()),
        })
    }

    /// The histogram a counterfeit of a class with `codes` draws from (`None`: the
    /// suppressed class; a row left empty by the noise floor: the sum).
    pub fn for_class(&self, codes: Option<&[Vec<u32>]>, class: usize) -> &MarginalValues {
        codes
            .and_then(|codes| codes.get(self.attr))
            .and_then(|codes| codes.get(class))
            .and_then(|&label| self.rows.get(label as usize))
            .filter(|row| !row.cumulative.is_empty())
            .unwrap_or(&self.all)
    }
}

/// The count every cell of a labelled row loses: `⌈ln(cells / FLOOR_MISS) / ε_val⌉`, so that
/// the `cells` empty cells of a row all end at 0 with probability at least 95 % (each noisy
/// count reaches `t` with probability at most `e^(-ε_val·t)`).
fn noise_floor(cells: usize, eps_val: f64) -> u64 {
    let floor = ((cells.max(1) as f64 / FLOOR_MISS).ln() / eps_val).ceil();
    if floor.is_finite() && floor > 0.0 {
        floor.min(u64::MAX as f64) as u64
    } else {
        0
    }
}

/// Where counterfeit values come from with `counterfeit_values => 'marginal'`.
#[derive(Debug, Clone)]
pub enum CounterfeitDraw {
    /// One histogram of the whole table.
    Marginal(MarginalValues),
    /// One row per label of a quasi-identifier (`counterfeit_by`).
    Labelled(LabelledValues),
}

impl CounterfeitDraw {
    /// The histogram class `class` of `codes` (per quasi-identifier, each class's label
    /// code) draws from; `None` for the suppressed class.
    pub fn for_class(&self, codes: Option<&[Vec<u32>]>, class: usize) -> &MarginalValues {
        match self {
            Self::Marginal(marginal) => marginal,
            Self::Labelled(labelled) => labelled.for_class(codes, class),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanism::rng::rng_from_seed;
    use crate::testing::stats::assert_wilson;

    /// With `counterfeit_by`, a class draws from its label's row: at a large ε_val a class
    /// labelled `x` (only value 0 among its records) draws value 0, one labelled `y` (only
    /// value 1) draws 1, and the suppressed class draws both in proportion to the sum.
    #[test]
    fn a_class_draws_from_its_labels_row() {
        use crate::hierarchy::Hierarchy;
        use crate::testing::{rows, weighted_histogram};
        let h = Hierarchy::from_rows("q", &rows(&[&["x", "*"], &["y", "*"]])).expect("valid");
        let base = weighted_histogram(&[&h], &[(vec![0], 0, 300), (vec![1], 1, 100)], 2);
        let mut rng = rng_from_seed(9);
        let labelled = LabelledValues::new(&base, 0, 2, 2, 50.0, &mut rng).expect("histogram");
        let codes = base.class_codes.clone();
        let trials = 20_000u64;
        let (mut x_zero, mut y_one, mut star_zero) = (0, 0, 0);
        for _ in 0..trials {
            x_zero += u64::from(
                labelled
                    .for_class(Some(&codes), 0)
                    .draw(&mut rng)
                    .expect("x")
                    == 0,
            );
            y_one += u64::from(
                labelled
                    .for_class(Some(&codes), 1)
                    .draw(&mut rng)
                    .expect("y")
                    == 1,
            );
            star_zero += u64::from(labelled.for_class(None, 0).draw(&mut rng).expect("*") == 0);
        }
        assert_eq!((x_zero, y_one), (trials, trials));
        assert_wilson(
            star_zero,
            trials,
            0.75,
            "the suppressed class draws from the sum",
        );
        // A label outside the hierarchy's level is an internal error, not a panic.
        assert!(LabelledValues::new(&base, 0, 1, 2, 1.0, &mut rng).is_err());
    }

    /// The noise floor: at ε_val = 50 over two values it is 1, so a label holding one record
    /// keeps nothing and its classes draw from the sum of the rows (here only `x`'s value 0);
    /// at ε_val = 0.3 over the NPS demo's 627 values it is 32.
    #[test]
    fn a_row_below_the_noise_floor_draws_from_the_sum() {
        use crate::hierarchy::Hierarchy;
        use crate::testing::{rows, weighted_histogram};
        assert_eq!(noise_floor(2, 50.0), 1);
        assert_eq!(noise_floor(627, 0.3), 32);
        assert_eq!(noise_floor(0, 1.0), 3);
        let h = Hierarchy::from_rows("q", &rows(&[&["x", "*"], &["y", "*"]])).expect("valid");
        let base = weighted_histogram(&[&h], &[(vec![0], 0, 300), (vec![1], 1, 1)], 2);
        let mut rng = rng_from_seed(4);
        let labelled = LabelledValues::new(&base, 0, 2, 2, 50.0, &mut rng).expect("histogram");
        let codes = base.class_codes.clone();
        for _ in 0..1000 {
            let y = labelled
                .for_class(Some(&codes), 1)
                .draw(&mut rng)
                .expect("y");
            assert_eq!(y, 0, "y's row is empty: it draws from the sum");
        }
    }

    #[test]
    fn draws_follow_the_noisy_counts_exactly() {
        // Noisy counts 3, 0, 1: value 1 never, value 0 three times as often as value 2.
        let m = MarginalValues::from_noisy([3u64, 0, 1].into_iter());
        let mut rng = rng_from_seed(5);
        let trials = 200_000u64;
        let mut seen = [0u64; 3];
        for _ in 0..trials {
            seen[m.draw(&mut rng).expect("draw") as usize] += 1;
        }
        assert_eq!(seen[1], 0);
        assert_wilson(seen[0], trials, 0.75, "value 0");
        assert_wilson(seen[2], trials, 0.25, "value 2");
    }

    /// The counter-example of a domain read from the data: `D = 100 × (x, 'a')`,
    /// `D' = D ∪ {(x, 'b')}`. With the leaves `{a, b}` of a hierarchy as the domain, `'b'`
    /// gets a noisy count under `D` too: positive with probability exactly
    /// `P(Z ≥ 1) = q/(1 + q)`, `q = e^-ε_val` (0.4256 at ε_val = 0.3; 0.574 under `D'`), and
    /// then drawn among the counterfeits. Without the hierarchy the domain of `D` is `{a}`
    /// and `'b'` can never be drawn.
    #[test]
    fn a_hierarchy_domain_gives_a_value_absent_from_the_data_a_noisy_count() {
        use crate::hierarchy::Hierarchy;
        use crate::sensitive::{SensitiveColumn, SensitiveDomain, SensitiveHierarchy};
        use datafusion::arrow::array::{Array, AsArray, StringArray};

        use std::sync::Arc;

        let row = |v: &str| vec![v.to_string(), "*".to_string()];
        let qi = Hierarchy::from_rows("q", &[row("x")]).expect("hierarchy");
        let disease_h = Hierarchy::from_rows("disease", &[row("a"), row("b")]).expect("hierarchy");
        let column = SensitiveColumn {
            name: "disease".into(),
            values: Arc::new(StringArray::from(vec!["a"])),
            of_tuple: vec![0],
            rank: Some(vec![0]),
            hierarchy: Some(SensitiveHierarchy {
                name: "disease_h".into(),
                hierarchy: disease_h,
                leaf_of_value: vec![0],
            }),
            pseudonym: false,
        };
        let mut domain = SensitiveDomain::new(vec![column], 1);
        assert_eq!(domain.leaf_domain(), None, "read from the data");
        assert!(domain.add_hierarchy_leaves().expect("leaves"));
        assert_eq!(domain.leaf_domain(), Some("disease_h"));
        assert_eq!(domain.tuples(), 2);
        let decoded = domain.tuple_arrays().expect("arrays");
        let decoded = decoded[0].as_string::<i32>();
        assert_eq!((decoded.value(0), decoded.value(1)), ("a", "b"));
        assert_eq!(Array::len(decoded), 2);

        let d = GroupedHistogram::from_rows(&[&qi], vec![vec![0]], vec![0], vec![100], 2)
            .expect("histogram");
        let mut rng = rng_from_seed(8);
        let (trials, draws) = (20_000u64, 20u64);
        let (mut positive, mut drawn_b) = (0u64, 0u64);
        for _ in 0..trials {
            let m = MarginalValues::new(&d, domain.tuples(), 0.3, &mut rng).expect("marginal");
            let b_count = match m.cumulative.as_slice() {
                [a, ab] => ab - a,
                _ => 0, // every count 0
            };
            positive += u64::from(b_count > 0);
            for _ in 0..draws {
                drawn_b += u64::from(m.draw(&mut rng).expect("draw") == 1);
            }
        }
        let q = (-0.3f64).exp();
        assert_wilson(
            positive,
            trials,
            q / (1.0 + q),
            "P(noisy count of 'b' > 0 | D)",
        );
        assert!(drawn_b > 0, "'b' never drawn under D");

        // The domain read from D holds 'a' only: 'b' has no code.
        let m = MarginalValues::new(&d, 1, 0.3, &mut rng).expect("marginal");
        for _ in 0..1000 {
            assert_eq!(m.draw(&mut rng).expect("draw"), 0);
        }
    }

    #[test]
    fn all_zero_counts_draw_uniformly() {
        let m = MarginalValues::from_noisy([0u64; 4].into_iter());
        let mut rng = rng_from_seed(6);
        let trials = 100_000u64;
        let mut seen = [0u64; 4];
        for _ in 0..trials {
            seen[m.draw(&mut rng).expect("draw") as usize] += 1;
        }
        for (v, &s) in seen.iter().enumerate() {
            assert_wilson(s, trials, 0.25, &format!("value {v}"));
        }
    }
}
