//! Algorithm 1 of the paper on one node: classes suppressed under a noisy threshold,
//! counterfeit records inserted with a noisy count, their informative values drawn (from
//! the marginal histogram or the paper's per-class choice), and the candidate's
//! information loss.

use datafusion::common::Result;

use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::mechanism::exponential::sample_weighted_index;
use crate::mechanism::noise::{
    sample_discrete_laplace, sample_floor_laplace, sample_uniform_below,
};
use crate::mechanism::rng::AnonRng;
use crate::metric::information_loss::class_scores;
use crate::release::{merge_counts, ReleasedHistogram, SUPPRESSED};

use super::params::Scales;
use super::{CounterfeitDraw, IpaParams, IpaVariant, MarginalValues, NodeOutcome};

/// Per-class scratch state while perturbing one node.
#[derive(Default)]
pub(super) struct ClassWork {
    /// (value, real count) of the class, ascending by value.
    pub(super) real: Vec<(u32, u64)>,
    /// Counterfeit values drawn for the class.
    pub(super) fake: Counterfeits,
}

/// The counterfeit values drawn for one class, as a count per value: their memory grows with
/// the informative domain, never with the number of counterfeits (a tiny `epsilon` draws
/// millions per class).
#[derive(Default)]
pub(super) struct Counterfeits {
    /// Count of each value code drawn (indexed by code; grown on demand, zero elsewhere).
    counts: Vec<u64>,
    /// The codes with a non-zero count, in the order first drawn.
    drawn: Vec<u32>,
    total: u64,
}

impl Counterfeits {
    /// Forgets every value, keeping the allocations for the next class.
    pub(super) fn clear(&mut self) {
        for &v in &self.drawn {
            self.counts[v as usize] = 0;
        }
        self.drawn.clear();
        self.total = 0;
    }

    /// Adds one counterfeit of value code `v`.
    pub(super) fn add(&mut self, v: u32) {
        let i = v as usize;
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        if self.counts[i] == 0 {
            self.drawn.push(v);
        }
        self.counts[i] += 1;
        self.total += 1;
    }

    /// Number of counterfeits.
    pub(super) fn len(&self) -> u64 {
        self.total
    }

    /// Whether no counterfeit was drawn.
    pub(super) fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// `(value, count)` of the drawn values, ascending by value.
    pub(super) fn pairs(&self) -> Vec<(u32, u64)> {
        let mut values = self.drawn.clone();
        values.sort_unstable();
        values
            .into_iter()
            .map(|v| (v, self.counts[v as usize]))
            .collect()
    }
}

/// Algorithm 1 on one node plus its information loss. Counterfeit values come from
/// `marginal` when given, else from the paper's per-class draw. With `collect`, also
/// returns the released histogram.
#[allow(clippy::too_many_arguments)]
pub(super) fn perturb_node(
    hist: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    value_domain: usize,
    params: &IpaParams,
    scales: &Scales,
    values: Option<&CounterfeitDraw>,
    rng: &mut AnonRng,
    collect: bool,
) -> Result<(NodeOutcome, Option<ReleasedHistogram>)> {
    let attrs = hierarchies.len();
    let ncp_tables: Vec<Vec<f64>> = (0..attrs)
        .map(|a| hierarchies[a].ncp_per_code(hist.levels[a]))
        .collect();
    let mut acc = Accumulator::default();
    let mut release = collect.then(|| ReleasedHistogram::new(hist.levels.clone(), attrs));
    let mut suppressed = vec![0u64; value_domain];
    let mut suppressed_touched: Vec<u32> = Vec::new();
    let mut work = ClassWork::default();

    for c in 0..hist.class_count() {
        let range = hist.class_range(c);
        let n: u64 = hist.pair_counts[range.clone()].iter().sum();
        if suppress(n, params, scales, rng) {
            acc.suppressed_classes += 1;
            acc.suppressed_records += n;
            for p in range {
                let v = hist.pair_values[p];
                if suppressed[v as usize] == 0 {
                    suppressed_touched.push(v);
                }
                suppressed[v as usize] += hist.pair_counts[p];
            }
            continue;
        }
        work.real.clear();
        work.real
            .extend(range.map(|p| (hist.pair_values[p], hist.pair_counts[p])));
        let marginal = values.map(|v| v.for_class(Some(&hist.class_codes), c));
        insert_counterfeits(&mut work, n, value_domain, params, scales, marginal, rng)?;
        let ncp_per_record: f64 = (0..attrs)
            .map(|a| ncp_tables[a][hist.class_codes[a][c] as usize])
            .sum();
        acc.add_class(&work, n, ncp_per_record);
        if let Some(rel) = release.as_mut() {
            let codes: Vec<u32> = (0..attrs).map(|a| hist.class_codes[a][c]).collect();
            rel.push_class_pairs(&codes, &work.real, &work.fake.pairs());
        }
    }

    if acc.suppressed_records > 0 {
        suppressed_touched.sort_unstable();
        work.real.clear();
        work.real.extend(
            suppressed_touched
                .iter()
                .map(|&v| (v, suppressed[v as usize])),
        );
        let n = acc.suppressed_records;
        work.fake.clear();
        if params.insert_into_suppressed {
            let marginal = values.map(|v| v.for_class(None, 0));
            insert_counterfeits(&mut work, n, value_domain, params, scales, marginal, rng)?;
        }
        acc.add_class(&work, n, attrs as f64);
        if let Some(rel) = release.as_mut() {
            rel.push_class_pairs(&vec![SUPPRESSED; attrs], &work.real, &work.fake.pairs());
        }
    }

    let rows = acc.real + acc.counterfeits;
    let classes = acc.classes;
    let ncp = if rows == 0 || attrs == 0 {
        0.0
    } else {
        acc.ncp_sum / (attrs as f64 * rows as f64)
    };
    let emd = if classes == 0 {
        0.0
    } else {
        acc.emd_sum / classes as f64
    };
    let rate = if classes == 0 {
        0.0
    } else {
        acc.rate_sum / classes as f64
    };
    let sum = ncp + emd + rate;
    let il = match params.variant {
        IpaVariant::Paper => sum,
        IpaVariant::Reference => sum / 3.0,
    };
    Ok((
        NodeOutcome {
            node: hist.levels.clone(),
            ncp,
            emd,
            rate,
            il,
            classes,
            suppressed_classes: acc.suppressed_classes,
            suppressed_records: acc.suppressed_records,
            counterfeits: acc.counterfeits,
            released_rows: rows,
        },
        release,
    ))
}

/// Noisy-threshold suppression of a class of `n` records.
///
/// Paper: suppress iff `n ≤ t + L`, `L ~ Lap((t−1)/ε_sup)`. Reference: `τ = max(t, t + L)`,
/// `L ~ Lap(1/ε_sup)`, suppress iff `n < τ`. Both compare an integer with `t + L`, which is
/// decided exactly by `floor(L) ≥ n − t` (up to the probability-zero event `L = n − t`).
pub(super) fn suppress(n: u64, params: &IpaParams, scales: &Scales, rng: &mut AnonRng) -> bool {
    let t = params.threshold;
    if params.variant == IpaVariant::Reference && n < t {
        return true;
    }
    let floor_noise = sample_floor_laplace(rng, scales.suppression);
    let margin = n as i128 - t as i128;
    floor_noise as i128 >= margin
}

/// Draws the number of counterfeits (`max(0, Z)`, `Z` two-sided geometric with scale
/// `1/ε_ins`) and their values: from `marginal` when given, else by the exponential
/// mechanism of Eq. (3)–(4).
pub(super) fn insert_counterfeits(
    work: &mut ClassWork,
    n: u64,
    value_domain: usize,
    params: &IpaParams,
    scales: &Scales,
    marginal: Option<&MarginalValues>,
    rng: &mut AnonRng,
) -> Result<()> {
    work.fake.clear();
    let noise = sample_discrete_laplace(rng, scales.insertion);
    if noise <= 0 {
        return Ok(());
    }
    let count = noise as u64;
    if let Some(marginal) = marginal {
        for _ in 0..count {
            work.fake.add(marginal.draw(rng)?);
        }
        return Ok(());
    }
    let (weights, absent) = value_choice_weights(&work.real, n, value_domain, params.eps_val);
    for _ in 0..count {
        let value = draw_value(rng, &work.real, &weights, absent)?;
        work.fake.add(value);
    }
    Ok(())
}

/// Weights of the exponential mechanism choosing a counterfeit's informative value in a
/// class of `n` records with `(value, count)` pairs `real` (Eq. 3-4): score `c_v/(n+1)` for
/// a present value, `1/((n+1)·absent)` for each of the `absent` other values of the
/// domain, ΔS = 1, weight `exp(ε_val·(S − S_max)/2)`. Returns one weight per present value
/// and, when `absent > 0`, one last weight for all absent values together.
pub(super) fn value_choice_weights(
    real: &[(u32, u64)],
    n: u64,
    value_domain: usize,
    eps_val: f64,
) -> (Vec<f64>, usize) {
    let absent = value_domain.saturating_sub(real.len());
    let denominator = (n + 1) as f64;
    let absent_score = if absent > 0 {
        1.0 / (denominator * absent as f64)
    } else {
        0.0
    };
    let mut max_score = if absent > 0 { absent_score } else { f64::MIN };
    for &(_, c) in real {
        max_score = max_score.max(c as f64 / denominator);
    }
    let half_eps = eps_val / 2.0;
    let mut weights: Vec<f64> = real
        .iter()
        .map(|&(_, c)| (half_eps * (c as f64 / denominator - max_score)).exp())
        .collect();
    if absent > 0 {
        weights.push(absent as f64 * (half_eps * (absent_score - max_score)).exp());
    }
    (weights, absent)
}

/// Draws one value with [`value_choice_weights`]: a present value by its weight, or — with
/// the absent values' total weight — one absent value uniformly.
pub(super) fn draw_value(
    rng: &mut AnonRng,
    real: &[(u32, u64)],
    weights: &[f64],
    absent: usize,
) -> Result<u32> {
    let pick = sample_weighted_index(rng, weights)?;
    if pick < real.len() {
        Ok(real[pick].0)
    } else {
        let j = sample_uniform_below(rng, absent as u64);
        Ok(nth_absent(real, j as u32))
    }
}

/// The `j`-th value code (ascending) that is not among the class's present values.
pub(super) fn nth_absent(present: &[(u32, u64)], j: u32) -> u32 {
    let mut candidate = j;
    for &(v, _) in present {
        if v <= candidate {
            candidate += 1;
        } else {
            break;
        }
    }
    candidate
}

#[derive(Default)]
pub(super) struct Accumulator {
    classes: usize,
    suppressed_classes: usize,
    suppressed_records: u64,
    real: u64,
    counterfeits: u64,
    ncp_sum: f64,
    emd_sum: f64,
    rate_sum: f64,
}

impl Accumulator {
    /// Adds one released class: `n` real records, `work.fake` counterfeits.
    fn add_class(&mut self, work: &ClassWork, n: u64, ncp_per_record: f64) {
        let f = work.fake.len();
        let size = (n + f) as f64;
        self.classes += 1;
        self.real += n;
        self.counterfeits += f;
        self.ncp_sum += size * ncp_per_record;
        self.rate_sum += f as f64 / size;
        self.emd_sum += class_total_variation(work, n);
    }
}

/// Total-variation distance between a class's real values and its released values
/// (real + counterfeit): `½ Σ_v |c_v/n − (c_v + f_v)/(n + f)|` (Eq. 7 per class), by the
/// same computation the information-loss metric uses.
pub(super) fn class_total_variation(work: &ClassWork, n: u64) -> f64 {
    if work.fake.is_empty() || n == 0 {
        return 0.0;
    }
    let released = merge_counts(&work.real, &work.fake.pairs());
    class_scores(&work.real, &released).0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counterfeits are kept as a count per value: ten million of them hold one entry.
    #[test]
    fn counterfeits_are_counted_not_stored() {
        let mut fake = Counterfeits::default();
        for _ in 0..10_000_000 {
            fake.add(7);
        }
        fake.add(2);
        assert_eq!(fake.len(), 10_000_001);
        assert_eq!(fake.pairs(), vec![(2, 1), (7, 10_000_000)]);
        assert_eq!((fake.counts.len(), fake.drawn.len()), (8, 2));
        fake.clear();
        assert!(fake.is_empty());
        assert_eq!(fake.pairs(), Vec::new());
    }
}
