//! The k-marginal score's sampling baseline, as SDNist 2.5 gives it: the score of random
//! samples of the source (1 %, 5 %, 10 %, 20 %, …, 90 % of its records, drawn without
//! replacement) against the whole source. A release scores like the largest sample whose
//! score it reaches: "as close to the source as a random sample of that share of it".

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::report::bins::{k_marginal_score, Binner, Marginals};

/// The sampled shares of the source, SDNist's.
pub const FRACTIONS: [f64; 11] = [0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

/// The k-marginal score of a random sample of each share in [`FRACTIONS`] against the
/// source (`input`, its counts on `binners`): `(share, score)`; empty without two columns.
/// The source's records come in groups: `counts[g]` records whose bins are `bins[g]`.
pub fn sample_scores(
    binners: &[Binner],
    input: &Marginals,
    bins: &[Vec<Option<usize>>],
    counts: &[u64],
    seed: u64,
) -> Vec<(f64, f64)> {
    let records: u64 = counts.iter().sum();
    // Record r belongs to group owner[r].
    let mut owner: Vec<u32> = Vec::with_capacity(records as usize);
    for (g, n) in counts.iter().enumerate() {
        owner.extend(std::iter::repeat_n(g as u32, *n as usize));
    }
    let mut dense = DenseCounts::new(binners);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(FRACTIONS.len());
    for &share in &FRACTIONS {
        let take = ((share * records as f64).round() as usize).clamp(1, owner.len().max(1));
        // A partial Fisher–Yates shuffle: the first `take` records are the sample.
        for i in 0..take.min(owner.len()) {
            let j = rng.random_range(i..owner.len());
            owner.swap(i, j);
        }
        let mut taken = vec![0u64; counts.len()];
        for &g in &owner[..take.min(owner.len())] {
            taken[g as usize] += 1;
        }
        let sample = dense.marginals(binners, bins, &taken);
        if let Some((score, _)) = k_marginal_score(input, &sample) {
            out.push((share, score));
        }
    }
    out
}

/// A sample's one- and two-way counts in flat arrays (a column has at most a few dozen
/// bins), turned into [`Marginals`] once the sample is counted: the same counts as
/// [`Marginals::add_input_bins`] record by record, without a map lookup per record.
struct DenseCounts {
    /// Bins per column.
    sizes: Vec<usize>,
    /// Per pair `(a, b)`, `a < b`, in order: `sizes[a] × sizes[b]` counts.
    two_way: Vec<Vec<f64>>,
}

impl DenseCounts {
    fn new(binners: &[Binner]) -> Self {
        let sizes: Vec<usize> = binners.iter().map(|b| b.labels.len()).collect();
        let mut two_way = Vec::new();
        for a in 0..sizes.len() {
            for b in a + 1..sizes.len() {
                two_way.push(vec![0.0; sizes[a] * sizes[b]]);
            }
        }
        Self { sizes, two_way }
    }

    /// The marginals of `counts[g]` records of each group `g`, whose bins are `bins[g]`.
    fn marginals(
        &mut self,
        binners: &[Binner],
        bins: &[Vec<Option<usize>>],
        counts: &[u64],
    ) -> Marginals {
        let mut out = Marginals::new(binners);
        for cells in &mut self.two_way {
            cells.fill(0.0);
        }
        for (group, &n) in bins.iter().zip(counts) {
            if n == 0 {
                continue;
            }
            let n = n as f64;
            out.add_one_way_bins(group, n);
            let mut pair = 0;
            for a in 0..group.len() {
                for b in a + 1..group.len() {
                    if let (Some(x), Some(y)) = (group[a], group[b]) {
                        self.two_way[pair][x * self.sizes[b] + y] += n;
                    }
                    pair += 1;
                }
            }
        }
        let mut pair = 0;
        for a in 0..self.sizes.len() {
            for b in a + 1..self.sizes.len() {
                for (i, &n) in self.two_way[pair].iter().enumerate() {
                    if n > 0.0 {
                        out.two_way[pair].insert((i / self.sizes[b], i % self.sizes[b]), n);
                    }
                }
                pair += 1;
            }
        }
        out
    }
}

/// The largest sampled share whose score `score` reaches (`None` below the smallest).
pub fn equivalent_share(samples: &[(f64, f64)], score: f64) -> Option<f64> {
    samples
        .iter()
        .filter(|(_, s)| *s <= score)
        .map(|(share, _)| *share)
        .fold(None, |best: Option<f64>, share| {
            Some(best.map_or(share, |b| b.max(share)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::bins::Side;

    /// Distinct rows and how many records hold each.
    type Groups = Vec<(Vec<Option<String>>, u64)>;

    fn groups() -> Groups {
        let mut out = Groups::new();
        for a in 0..4 {
            for b in 0..3 {
                out.push((
                    vec![Some(a.to_string()), Some(b.to_string())],
                    5 + (a * 3 + b) as u64,
                ));
            }
        }
        out
    }

    /// Each group's bin per column.
    fn bins_of(binners: &[Binner], groups: &Groups) -> Vec<Vec<Option<usize>>> {
        groups
            .iter()
            .map(|(values, _)| {
                binners
                    .iter()
                    .zip(values)
                    .map(|(b, v)| v.as_deref().and_then(|v| b.input_bin(v)))
                    .collect()
            })
            .collect()
    }

    fn binners(groups: &Groups) -> Vec<Binner> {
        (0..2)
            .map(|c| {
                let counts: Vec<(String, f64)> = (0..4)
                    .map(|v| {
                        let n = groups
                            .iter()
                            .filter(|(vals, _)| vals[c].as_deref() == Some(&v.to_string()))
                            .map(|(_, n)| *n as f64)
                            .sum();
                        (v.to_string(), n)
                    })
                    .collect();
                Binner::categories(&format!("c{c}"), &counts)
            })
            .collect()
    }

    #[test]
    fn the_flat_counts_are_the_record_by_record_counts() {
        let binners = binners(&groups());
        // NULLs and a value the bins do not know count as unknown in their column.
        let mut groups = groups();
        groups[1].0[1] = None;
        groups[4].0[0] = Some("9".into());
        let bins = bins_of(&binners, &groups);
        // Some groups left out of the sample, the others at other counts.
        let counts: Vec<u64> = (0..groups.len() as u64).map(|g| g % 3).collect();
        let mut expected = Marginals::new(&binners);
        for (group, &n) in bins.iter().zip(&counts) {
            if n > 0 {
                expected.add_input_bins(group, n as f64);
            }
        }
        let got = DenseCounts::new(&binners).marginals(&binners, &bins, &counts);
        assert_eq!(got.records, expected.records);
        assert_eq!(got.one_way, expected.one_way);
        assert_eq!(got.unknown, expected.unknown);
        assert_eq!(got.two_way, expected.two_way);
        assert!(got.two_way.iter().any(|cells| !cells.is_empty()));
        assert!(got.unknown.iter().all(|&n| n > 0.0), "{:?}", got.unknown);
    }

    #[test]
    fn larger_samples_score_closer_and_the_whole_source_scores_1000() {
        let groups = groups();
        let binners = binners(&groups);
        let mut input = Marginals::new(&binners);
        for (values, n) in &groups {
            let values: Vec<Option<&str>> = values.iter().map(|v| v.as_deref()).collect();
            input.add(&binners, Side::Input, &values, *n as f64);
        }
        let bins = bins_of(&binners, &groups);
        let counts: Vec<u64> = groups.iter().map(|(_, n)| *n).collect();
        let scores = sample_scores(&binners, &input, &bins, &counts, 7);
        assert_eq!(scores.len(), FRACTIONS.len());
        // 1 % of the 126 records is 1 record: far from the source; 90 % is close.
        assert!(scores[0].1 < 400.0, "{scores:?}");
        assert!(scores[10].1 > 900.0, "{scores:?}");
        assert!(scores[10].1 > scores[1].1, "{scores:?}");
        // The same seed, the same samples.
        assert_eq!(scores, sample_scores(&binners, &input, &bins, &counts, 7));
        assert_eq!(equivalent_share(&scores, 1000.0), Some(0.9));
        assert_eq!(equivalent_share(&scores, scores[0].1 - 1.0), None);
    }
}
