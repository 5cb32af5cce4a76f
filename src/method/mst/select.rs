//! MST's first two steps (McKenna, Miklau & Sheldon 2021, §3; private-pgm's `mst.py`):
//! every 1-way marginal measured with discrete Gaussian noise; each attribute's values
//! whose noisy count is below 3σ merged into one (`compress_domain`); then the tree: `d − 1`
//! exponential mechanisms, each picking, among the pairs of attributes not yet connected,
//! one whose 2-way marginal is far (in L1) from what the 1-way measurements predict.

use rand::RngCore;

use super::records::Records;
use crate::mechanism::exponential::exponential_mechanism;
use crate::mechanism::noise::{sample_discrete_gaussian, ExactVariance, NoiseError};

/// `counts` with discrete Gaussian noise of `variance` on every cell.
pub fn measure<R: RngCore + ?Sized>(
    rng: &mut R,
    counts: &[u64],
    variance: ExactVariance,
) -> Vec<f64> {
    counts
        .iter()
        .map(|&c| (c as i64).saturating_add(sample_discrete_gaussian(rng, variance)) as f64)
        .collect()
}

/// A noisy marginal over an attribute's (compressed) values: each cell's noisy count and
/// the variance of its noise.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Noisy counts.
    pub values: Vec<f64>,
    /// The variance of each cell's noise.
    pub variances: Vec<f64>,
}

/// The attributes' domains after merging the values the 1-way measurements cannot tell
/// from zero.
#[derive(Debug, Clone, PartialEq)]
pub struct Compression {
    /// Per attribute: the compressed code of each original value.
    pub maps: Vec<Vec<u32>>,
    /// Per attribute: the number of compressed values.
    pub cards: Vec<usize>,
    /// Per attribute: its 1-way measurement over the compressed values.
    pub one_way: Vec<Measurement>,
}

/// Merges, per attribute, the values whose noisy count is below `3·sqrt(variance)` into
/// one last value whose measurement is their sum (variance times their number); the
/// supported values keep their order. An attribute whose every value is supported is
/// unchanged. The rule reads the noisy counts only (post-processing).
pub fn compress(noisy: &[Vec<f64>], variance: f64) -> Compression {
    let threshold = 3.0 * variance.sqrt();
    let mut out = Compression {
        maps: Vec::new(),
        cards: Vec::new(),
        one_way: Vec::new(),
    };
    for y in noisy {
        let supported: Vec<bool> = y.iter().map(|&v| v >= threshold).collect();
        let kept = supported.iter().filter(|&&s| s).count();
        let merged = y.len() - kept;
        let mut map = Vec::with_capacity(y.len());
        let mut values = Vec::with_capacity(kept + 1);
        let mut next = 0u32;
        for (&v, &s) in y.iter().zip(&supported) {
            if s {
                map.push(next);
                values.push(v);
                next += 1;
            } else {
                map.push(kept as u32);
            }
        }
        let mut variances = vec![variance; kept];
        if merged > 0 {
            values.push(
                y.iter()
                    .zip(&supported)
                    .filter(|(_, &s)| !s)
                    .map(|(&v, _)| v)
                    .sum(),
            );
            variances.push(variance * merged as f64);
        }
        out.cards.push(values.len());
        out.maps.push(map);
        out.one_way.push(Measurement { values, variances });
    }
    out
}

/// What the 1-way measurements say under independence: the total (the inverse-variance
/// weighted mean of their sums) and each attribute's distribution (its noisy counts
/// clipped at 0 and normalized; uniform if none is positive).
pub fn independent(one_way: &[Measurement]) -> (f64, Vec<Vec<f64>>) {
    let (mut weighted, mut weights) = (0.0, 0.0);
    for m in one_way {
        let variance: f64 = m.variances.iter().sum();
        weighted += m.values.iter().sum::<f64>() / variance;
        weights += 1.0 / variance;
    }
    let total = (weighted / weights).max(0.0);
    let shares = one_way
        .iter()
        .map(|m| {
            let clipped: Vec<f64> = m.values.iter().map(|&v| v.max(0.0)).collect();
            let sum: f64 = clipped.iter().sum();
            match sum > 0.0 {
                true => clipped.iter().map(|v| v / sum).collect(),
                false => vec![1.0 / m.values.len() as f64; m.values.len()],
            }
        })
        .collect();
    (total, shares)
}

/// The score of the pair `(a, b)`: the L1 distance between its true 2-way marginal in
/// `records` and the independent prediction `total · p_a ⊗ p_b`, in units of 2^-10 added
/// exactly in integers and capped at 2^52 units (2^42 records) before it becomes a float: one record added
/// or removed moves one cell's count by 1, so the score moves by at most 1 exactly, not
/// only up to rounding (the prediction is fixed: it comes from the 1-way measurements).
pub fn pair_score(records: &Records, a: usize, b: usize, total: f64, shares: &[Vec<f64>]) -> f64 {
    const UNIT: f64 = 1024.0;
    const CAP: u128 = 1 << 52;
    let x = records.marginal(&[a, b]);
    let cb = records.cards[b];
    let units: u128 = x
        .iter()
        .enumerate()
        .map(|(cell, &count)| {
            // The prediction on the grid of 2^-10, as an integer (saturating: a prediction
            // that large is capped below anyway).
            let predicted = (total * shares[a][cell / cb] * shares[b][cell % cb] * UNIT).round();
            let predicted = if predicted.is_finite() && predicted > 0.0 {
                predicted.min(CAP as f64) as u128
            } else {
                0
            };
            (u128::from(count) * 1024).abs_diff(predicted)
        })
        .fold(0u128, |sum, d| sum.saturating_add(d).min(CAP));
    // At most 2^52 units: an integer a float holds exactly, and a division by 2^10 is exact.
    units as f64 / UNIT
}

/// A union-find over attributes.
struct Components(Vec<usize>);

impl Components {
    fn root(&mut self, mut a: usize) -> usize {
        while self.0[a] != a {
            self.0[a] = self.0[self.0[a]];
            a = self.0[a];
        }
        a
    }
}

/// The tree: `d − 1` edges, each chosen by the exponential mechanism (ε = `edge_epsilon`,
/// sensitivity 1) among the pairs whose attributes are not yet connected, scored by
/// [`pair_score`] on the compressed `records`.
pub fn select_tree<R: RngCore + ?Sized>(
    rng: &mut R,
    records: &Records,
    total: f64,
    shares: &[Vec<f64>],
    edge_epsilon: f64,
) -> Result<Vec<(usize, usize)>, NoiseError> {
    let d = records.width();
    let mut pairs = Vec::new();
    for a in 0..d {
        for b in a + 1..d {
            pairs.push(((a, b), pair_score(records, a, b, total, shares)));
        }
    }
    let mut components = Components((0..d).collect());
    let mut edges = Vec::with_capacity(d.saturating_sub(1));
    while edges.len() + 1 < d {
        pairs.retain(|&((a, b), _)| components.root(a) != components.root(b));
        let scores: Vec<f64> = pairs.iter().map(|p| p.1).collect();
        let chosen = exponential_mechanism(rng, &scores, edge_epsilon, 1.0)?;
        let ((a, b), _) = pairs[chosen];
        let (ra, rb) = (components.root(a), components.root(b));
        components.0[ra] = rb;
        edges.push((a, b));
    }
    Ok(edges)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    type TestRng = rand_chacha::ChaCha20Rng;

    #[test]
    fn values_below_three_sigma_are_merged() {
        let c = compress(&[vec![100.0, 1.0, 2.0, 50.0], vec![9.0, 8.0]], 1.0);
        assert_eq!(c.maps, vec![vec![0, 2, 2, 1], vec![0, 1]]);
        assert_eq!(c.cards, vec![3, 2]);
        assert_eq!(
            c.one_way[0],
            Measurement {
                values: vec![100.0, 50.0, 3.0],
                variances: vec![1.0, 1.0, 2.0]
            }
        );
        assert_eq!(c.one_way[1].values, vec![9.0, 8.0]);
    }

    #[test]
    fn the_independent_prediction_weighs_the_totals() {
        let one_way = vec![
            Measurement {
                values: vec![60.0, 40.0],
                variances: vec![1.0, 1.0],
            },
            Measurement {
                values: vec![-5.0, 115.0],
                variances: vec![1.0, 1.0],
            },
        ];
        let (total, shares) = independent(&one_way);
        assert!((total - 105.0).abs() < 1e-12);
        assert_eq!(shares, vec![vec![0.6, 0.4], vec![0.0, 1.0]]);
    }

    /// Attributes 0 and 1 are equal; 2 is independent of both. With a large ε the first
    /// edge joins 0 and 1; the tree always spans.
    #[test]
    fn the_tree_joins_the_dependent_pair() {
        let mut records = Records::new(vec![2, 2, 2]);
        for (t, n) in [
            ([0, 0, 0], 250),
            ([0, 0, 1], 250),
            ([1, 1, 0], 250),
            ([1, 1, 1], 250),
        ] {
            records.push(&t, n);
        }
        let shares = vec![vec![0.5, 0.5]; 3];
        assert_eq!(pair_score(&records, 0, 1, 1000.0, &shares), 1000.0);
        assert_eq!(pair_score(&records, 0, 2, 1000.0, &shares), 0.0);
        let mut rng = TestRng::seed_from_u64(7);
        for _ in 0..20 {
            let tree = select_tree(&mut rng, &records, 1000.0, &shares, 1.0).expect("a tree");
            assert_eq!(tree.len(), 2);
            assert_eq!(tree[0], (0, 1));
            assert!(tree[1] == (0, 2) || tree[1] == (1, 2));
        }
    }

    /// Each noisy cell is its count plus discrete Gaussian noise of the variance: the mean
    /// and variance of the noise over 20,000 draws within 5 standard errors.
    #[test]
    fn a_measurement_adds_noise_of_its_variance() {
        let variance = ExactVariance::new(9, 1).expect("valid");
        let mut rng = TestRng::seed_from_u64(3);
        let (mut sum, mut squares, n) = (0.0, 0.0, 20_000);
        for _ in 0..n {
            let noisy = measure(&mut rng, &[40, 7], variance);
            for (y, c) in noisy.iter().zip([40.0, 7.0]) {
                sum += y - c;
                squares += (y - c) * (y - c);
            }
        }
        let draws = 2.0 * n as f64;
        let mean = sum / draws;
        assert!(mean.abs() < 5.0 * (9.0 / draws).sqrt(), "{mean}");
        let var = squares / draws;
        // The fourth moment of a Gaussian of variance 9 is 243: se = sqrt((243 − 81)/n).
        assert!((var - 9.0).abs() < 5.0 * (162.0 / draws).sqrt(), "{var}");
    }
}
