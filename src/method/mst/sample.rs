//! MST's last step: records drawn from the fitted tree, as private-pgm's
//! `synthetic_data` draws them: the root's column by its marginal, then each child's
//! column, group by group of its parent's value, by the conditional distribution; each
//! allocation rounds the expected counts down and hands the remaining records to values
//! drawn by their fractional parts. Merged values are then spread uniformly over the
//! values they merged. Post-processing of the fit: nothing here reads the data.

use rand::seq::SliceRandom;
use rand::RngCore;

use super::estimate::{rooted, Fitted};
use super::records::Records;
use crate::mechanism::exponential::sample_weighted_index;
use crate::mechanism::noise::sample_uniform_below;

/// `n` records shared among values in proportion to `weights` (non-negative): each value
/// gets the floor of its share; the records left go to distinct values drawn with
/// probability proportional to their fractional parts.
pub fn allocate<R: RngCore + ?Sized>(rng: &mut R, n: u64, weights: &[f64]) -> Vec<u64> {
    let sum: f64 = weights.iter().map(|w| w.max(0.0)).sum();
    if n == 0 || weights.is_empty() {
        return vec![0; weights.len()];
    }
    let shares: Vec<f64> = match sum > 0.0 {
        true => weights
            .iter()
            .map(|w| w.max(0.0) / sum * n as f64)
            .collect(),
        false => vec![n as f64 / weights.len() as f64; weights.len()],
    };
    let mut counts: Vec<u64> = shares.iter().map(|s| s.floor() as u64).collect();
    let mut fractions: Vec<f64> = shares.iter().map(|s| s - s.floor()).collect();
    let given: u64 = counts.iter().sum();
    for _ in given..n {
        let i = match sample_weighted_index(rng, &fractions) {
            Ok(i) => i,
            // No fraction left (rounding): the largest share takes the rest.
            Err(_) => (0..shares.len())
                .max_by(|&a, &b| shares[a].total_cmp(&shares[b]))
                .unwrap_or(0),
        };
        counts[i] += 1;
        fractions[i] = 0.0;
    }
    counts
}

/// `rows` records drawn from `fitted` (codes over its tree's attributes).
pub fn sample<R: RngCore + ?Sized>(rng: &mut R, fitted: &Fitted, rows: u64) -> Records {
    let tree = &fitted.tree;
    let d = tree.cards.len();
    let order = rooted(tree);
    let rows_usize = rows as usize;
    let mut codes = vec![0u32; rows_usize * d];
    // The root: by its marginal, from the first edge that holds it.
    let root = order.order[0];
    let root_marginal = match tree.edges.iter().position(|&(a, b)| a == root || b == root) {
        Some(e) => fitted.node_marginal(e, root),
        None => vec![1.0; tree.cards[root]],
    };
    let mut row = 0;
    for (value, count) in allocate(rng, rows, &root_marginal).into_iter().enumerate() {
        for _ in 0..count {
            codes[row * d + root] = value as u32;
            row += 1;
        }
    }
    for &node in &order.order[1..] {
        let Some((parent, e)) = order.parent[node] else {
            continue;
        };
        let mut groups: Vec<Vec<usize>> = vec![Vec::new(); tree.cards[parent]];
        for r in 0..rows_usize {
            groups[codes[r * d + parent] as usize].push(r);
        }
        for (pv, group) in groups.iter_mut().enumerate() {
            group.shuffle(rng);
            let conditional = fitted.conditional(e, parent, pv);
            let mut next = 0;
            for (cv, count) in allocate(rng, group.len() as u64, &conditional)
                .into_iter()
                .enumerate()
            {
                for &r in &group[next..next + count as usize] {
                    codes[r * d + node] = cv as u32;
                }
                next += count as usize;
            }
        }
    }
    Records::merged(tree.cards.clone(), &codes, &vec![1; rows_usize])
}

/// `records` over compressed codes back over the original values: a code that stands for
/// one value is that value; a merged code becomes, record by record, one of the values it
/// merged, uniformly.
pub fn decompress<R: RngCore + ?Sized>(
    rng: &mut R,
    records: &Records,
    maps: &[Vec<u32>],
    cards: &[usize],
) -> Records {
    // Per attribute and compressed code: the original values.
    let members: Vec<Vec<Vec<u32>>> = maps
        .iter()
        .zip(&records.cards)
        .map(|(map, &compressed)| {
            let mut m = vec![Vec::new(); compressed];
            for (original, &code) in map.iter().enumerate() {
                m[code as usize].push(original as u32);
            }
            m
        })
        .collect();
    let d = records.width();
    let rows = usize::try_from(records.total()).unwrap_or(usize::MAX);
    let mut codes: Vec<u32> = Vec::with_capacity(rows.saturating_mul(d));
    for i in 0..records.counts.len() {
        let tuple = records.tuple(i);
        for _ in 0..records.counts[i] {
            for (a, &code) in tuple.iter().enumerate() {
                let choices = &members[a][code as usize];
                codes.push(match choices.len() {
                    0 | 1 => choices.first().copied().unwrap_or(0),
                    n => choices[sample_uniform_below(rng, n as u64) as usize],
                });
            }
        }
    }
    let rows = codes.len() / d.max(1);
    Records::merged(cards.to_vec(), &codes, &vec![1; rows])
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::super::estimate::Tree;
    use super::*;

    type TestRng = rand_chacha::ChaCha20Rng;

    #[test]
    fn allocations_round_and_hand_out_the_rest() {
        let mut rng = TestRng::seed_from_u64(1);
        assert_eq!(allocate(&mut rng, 10, &[1.0, 1.0]), vec![5, 5]);
        assert_eq!(allocate(&mut rng, 0, &[1.0, 2.0]), vec![0, 0]);
        assert_eq!(allocate(&mut rng, 3, &[0.0, 0.0, 0.0]), vec![1, 1, 1]);
        // 7 by 1:1:1: each gets 2, the last one goes to one of them.
        let split = allocate(&mut rng, 7, &[1.0, 1.0, 1.0]);
        assert_eq!(split.iter().sum::<u64>(), 7);
        assert!(split.iter().all(|&c| c == 2 || c == 3));
        // Negative weights count as zero.
        assert_eq!(allocate(&mut rng, 4, &[-1.0, 1.0]), vec![0, 4]);
    }

    /// Drawn records reproduce the fitted edge marginals up to rounding and the draw of the
    /// remainders.
    #[test]
    fn samples_follow_the_fitted_marginals() {
        let p01 = vec![0.3, 0.1, 0.2, 0.4];
        let p12 = vec![0.45, 0.05, 0.125, 0.375];
        let fitted = Fitted {
            tree: Tree {
                cards: vec![2, 2, 2],
                edges: vec![(0, 1), (1, 2)],
            },
            edge_marginals: vec![p01.clone(), p12.clone()],
        };
        let mut rng = TestRng::seed_from_u64(5);
        let records = sample(&mut rng, &fitted, 10_000);
        assert_eq!(records.total(), 10_000);
        for ((a, b), want) in [((0, 1), &p01), ((1, 2), &p12)] {
            let got = records.marginal(&[a, b]);
            for (g, w) in got.iter().zip(want.iter()) {
                assert!(
                    (*g as f64 - w * 10_000.0).abs() <= 2.0,
                    "{got:?} against {want:?}"
                );
            }
        }
    }

    #[test]
    fn merged_codes_spread_over_their_values() {
        let mut records = Records::new(vec![2]);
        records.push(&[0], 5);
        records.push(&[1], 3000);
        // Values 0 and 2 of 4 kept; 1 and 3 merged into code 1... and value 2 is code 0.
        let maps = vec![vec![1, 1, 0, 1]];
        let mut rng = TestRng::seed_from_u64(2);
        let out = decompress(&mut rng, &records, &maps, &[4]);
        let counts = out.marginal(&[0]);
        assert_eq!(counts[2], 5);
        assert_eq!(counts[0] + counts[1] + counts[3], 3000);
        for &c in &[counts[0], counts[1], counts[3]] {
            // Binomial(3000, 1/3): within 5 standard deviations (25.8) of 1000.
            assert!((c as f64 - 1000.0).abs() < 130.0, "{counts:?}");
        }
    }
}
