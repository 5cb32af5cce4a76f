//! The k-marginal score's sampling baseline, as SDNist 2.5 gives it: the score of random
//! samples of the source (1 %, 5 %, 10 %, 20 %, …, 90 % of its records, drawn without
//! replacement) against the whole source. A release scores like the largest sample whose
//! score it reaches: "as close to the source as a random sample of that share of it".

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::report::bins::{k_marginal_score, Binner, Marginals, Side};

/// The sampled shares of the source, SDNist's.
pub const FRACTIONS: [f64; 11] = [0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

/// The source's distinct rows of the released columns (text, `None` for NULL) and how many
/// records hold each.
pub type Groups = Vec<(Vec<Option<String>>, u64)>;

/// The k-marginal score of a random sample of each share in [`FRACTIONS`] against the
/// source (`input`, its counts on `binners`): `(share, score)`; empty without two columns.
pub fn sample_scores(
    binners: &[Binner],
    input: &Marginals,
    groups: &Groups,
    seed: u64,
) -> Vec<(f64, f64)> {
    let records: u64 = groups.iter().map(|(_, n)| n).sum();
    // Record r belongs to group owner[r].
    let mut owner: Vec<u32> = Vec::with_capacity(records as usize);
    for (g, (_, n)) in groups.iter().enumerate() {
        owner.extend(std::iter::repeat_n(g as u32, *n as usize));
    }
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(FRACTIONS.len());
    for &share in &FRACTIONS {
        let take = ((share * records as f64).round() as usize).clamp(1, owner.len().max(1));
        // A partial Fisher–Yates shuffle: the first `take` records are the sample.
        for i in 0..take.min(owner.len()) {
            let j = rng.random_range(i..owner.len());
            owner.swap(i, j);
        }
        let mut counts = vec![0u64; groups.len()];
        for &g in &owner[..take.min(owner.len())] {
            counts[g as usize] += 1;
        }
        let mut sample = Marginals::new(binners);
        for ((values, _), &n) in groups.iter().zip(&counts) {
            if n > 0 {
                let values: Vec<Option<&str>> = values.iter().map(|v| v.as_deref()).collect();
                sample.add(binners, Side::Input, &values, n as f64);
            }
        }
        if let Some((score, _)) = k_marginal_score(input, &sample) {
            out.push((share, score));
        }
    }
    out
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
    fn larger_samples_score_closer_and_the_whole_source_scores_1000() {
        let groups = groups();
        let binners = binners(&groups);
        let mut input = Marginals::new(&binners);
        for (values, n) in &groups {
            let values: Vec<Option<&str>> = values.iter().map(|v| v.as_deref()).collect();
            input.add(&binners, Side::Input, &values, *n as f64);
        }
        let scores = sample_scores(&binners, &input, &groups, 7);
        assert_eq!(scores.len(), FRACTIONS.len());
        // 1 % of the 126 records is 1 record: far from the source; 90 % is close.
        assert!(scores[0].1 < 400.0, "{scores:?}");
        assert!(scores[10].1 > 900.0, "{scores:?}");
        assert!(scores[10].1 > scores[1].1, "{scores:?}");
        // The same seed, the same samples.
        assert_eq!(scores, sample_scores(&binners, &input, &groups, 7));
        assert_eq!(equivalent_share(&scores, 1000.0), Some(0.9));
        assert_eq!(equivalent_share(&scores, scores[0].1 - 1.0), None);
    }
}
