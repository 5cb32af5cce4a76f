//! Counterfeit records (Lee et al. 2017, "Insertion of counterfeit records"; docs/METHODS.md
//! §5.3): every class with fewer than `k` records gets `k − |E|` rows carrying the class's
//! labels and a sensitive value drawn with the release's ChaCha20 stream.

use rand::RngCore;

use super::CounterfeitSa;
use crate::histogram::GroupedHistogram;
use crate::mechanism::noise::sample_uniform_below;

/// Largest number of counterfeit rows one node may need; a node needing more is skipped
/// (it could never be the best one, and drawing them would be unbounded work).
pub const MAX_COUNTERFEITS_PER_NODE: u64 = 50_000_000;

/// Rejected draws after which a constrained draw lists the eligible values instead.
const REJECTIONS_BEFORE_LISTING: usize = 64;

/// Counterfeit rows of one node: per class, `(value, count)` pairs ascending by value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Counterfeits {
    /// Class `c` owns pairs `offsets[c]..offsets[c + 1]`.
    pub offsets: Vec<usize>,
    /// Sensitive-value code of each pair.
    pub values: Vec<u32>,
    /// Number of counterfeit rows of each pair.
    pub counts: Vec<u64>,
}

impl Counterfeits {
    /// `(value, count)` pairs of class `c`.
    pub fn class(&self, c: usize) -> impl Iterator<Item = (u32, u64)> + '_ {
        (self.offsets[c]..self.offsets[c + 1]).map(move |p| (self.values[p], self.counts[p]))
    }

    /// Total counterfeit rows.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// Why a node gets no counterfeits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrawFailure {
    /// More than [`MAX_COUNTERFEITS_PER_NODE`] would be needed.
    TooMany,
}

/// Real records of value `v` in class `c` of `hist`.
pub fn real_count(hist: &GroupedHistogram, c: usize, v: u32) -> u64 {
    let range = hist.class_range(c);
    match hist.pair_values[range.clone()].binary_search(&v) {
        Ok(i) => hist.pair_counts[range.start + i],
        Err(_) => 0,
    }
}

/// Draws the counterfeits of every class under `k` at the node `hist`, class `c` counting
/// `counted[c]` (its records, or per person its distinct persons). `totals[v]` is the
/// number of real records of value `v` in the whole table; `value_domain` the number of
/// sensitive values.
///
/// * `Uniform`: each value uniform over the sensitive domain (the paper).
/// * `Constrained`: each value uniform over the values that real records outside the class
///   can still conceal: `totals[v] − real(c, v) − drawn(c, v) ≥ 1`. Then the whole table as
///   one group satisfies Lemma 1, so a catalog always exists.
pub fn draw_counterfeits<R: RngCore + ?Sized>(
    hist: &GroupedHistogram,
    k: u64,
    counted: &[u64],
    mode: CounterfeitSa,
    totals: &[u64],
    rng: &mut R,
) -> Result<Counterfeits, DrawFailure> {
    let classes = hist.class_count();
    let needed: u64 = (0..classes).map(|c| k.saturating_sub(counted[c])).sum();
    if needed > MAX_COUNTERFEITS_PER_NODE {
        return Err(DrawFailure::TooMany);
    }
    let domain = totals.len() as u64;
    let mut out = Counterfeits {
        offsets: Vec::with_capacity(classes + 1),
        ..Counterfeits::default()
    };
    out.offsets.push(0);
    let mut drawn: Vec<(u32, u64)> = Vec::new();
    for (c, &units) in counted.iter().enumerate().take(classes) {
        let need = k.saturating_sub(units);
        drawn.clear();
        for _ in 0..need {
            let v = match mode {
                CounterfeitSa::Uniform => sample_uniform_below(rng, domain) as u32,
                CounterfeitSa::Constrained => {
                    let available = |v: u32| {
                        let already = drawn.iter().find(|p| p.0 == v).map_or(0, |p| p.1);
                        totals[v as usize].saturating_sub(real_count(hist, c, v) + already)
                    };
                    let mut chosen = None;
                    for _ in 0..REJECTIONS_BEFORE_LISTING {
                        let v = sample_uniform_below(rng, domain) as u32;
                        if available(v) > 0 {
                            chosen = Some(v);
                            break;
                        }
                    }
                    match chosen {
                        Some(v) => v,
                        None => {
                            // Uniform over the same set, drawn from an explicit list.
                            let eligible: Vec<u32> =
                                (0..domain as u32).filter(|&v| available(v) > 0).collect();
                            if eligible.is_empty() {
                                // Fewer than k records in the table: any value; the node
                                // then fails the catalog check.
                                sample_uniform_below(rng, domain) as u32
                            } else {
                                eligible[sample_uniform_below(rng, eligible.len() as u64) as usize]
                            }
                        }
                    }
                }
            };
            match drawn.iter_mut().find(|p| p.0 == v) {
                Some(p) => p.1 += 1,
                None => drawn.push((v, 1)),
            }
        }
        drawn.sort_unstable();
        for &(v, n) in &drawn {
            out.values.push(v);
            out.counts.push(n);
        }
        out.offsets.push(out.values.len());
    }
    Ok(out)
}
