//! MST (McKenna, Miklau & Sheldon 2021), `method => 'mst'`: a differentially private
//! synthetic table from noisy 1-way marginals, a maximum spanning tree of 2-way marginals
//! chosen with the exponential mechanism, its 2-way marginals measured, the tree's
//! graphical model estimated and records sampled from it ([`synthesize`]): the budget
//! ([`budget`]), the records and their marginals ([`records`]), the 1-way measurements,
//! the domain compression and the tree ([`select`]), the fit ([`estimate`]) and the draw
//! ([`sample`]); the method over the engine's histogram, its arguments and what it
//! publishes ([`release`], `params`, `metadata`). docs/METHODS.md §12 proves the guarantee.

pub mod budget;
pub mod estimate;
mod metadata;
mod params;
pub mod records;
pub mod release;
pub mod sample;
pub mod select;

use datafusion::common::{plan_err, Result};
use rand::RngCore;

use crate::mechanism::noise::ExactVariance;
use crate::progress::Progress;
use estimate::{fit, Tree};
use records::Records;
use select::{compress, independent, measure, select_tree, Measurement};

pub use release::METHOD;

/// What one MST synthesis drew, for the release and its diagnostics.
#[derive(Debug, Clone)]
pub struct Synthesis {
    /// The synthetic records, over the original values.
    pub records: Records,
    /// The tree's edges (attribute pairs).
    pub edges: Vec<(usize, usize)>,
    /// Each attribute's number of values after compression.
    pub compressed_cards: Vec<usize>,
    /// The estimated number of records (the synthetic table has it, rounded).
    pub total: f64,
    /// ρ of the zCDP guarantee.
    pub rho: f64,
}

/// MST on `records` (at least two attributes) at `(epsilon, delta)`-DP: ρ from
/// [`budget::rho_for`], a third each to the 1-way measurements, the tree and the 2-way
/// measurements; the fit takes at most `iterations` steps, reported to `progress`.
pub fn synthesize<R: RngCore + ?Sized>(
    rng: &mut R,
    records: &Records,
    epsilon: f64,
    delta: f64,
    iterations: usize,
    progress: &Progress,
) -> Result<Synthesis> {
    let d = records.width();
    if d < 2 {
        return plan_err!(
            "mst needs at least two columns (quasi-identifiers and the informative column)"
        );
    }
    let Some(rho) = budget::rho_for(epsilon, delta) else {
        return plan_err!("mst: need epsilon > 0 and 0 < delta < 1, got {epsilon} and {delta}");
    };
    let split = budget::Split::new(rho, d);
    let one_way = ExactVariance::at_least(split.one_way_variance)?;
    let noisy: Vec<Vec<f64>> = (0..d)
        .map(|a| measure(rng, &records.marginal(&[a]), one_way))
        .collect();
    let compression = compress(&noisy, one_way.as_f64());
    let compressed = records.mapped(&compression.maps, compression.cards.clone());
    let (total, shares) = independent(&compression.one_way);
    let edges = select_tree(rng, &compressed, total, &shares, split.edge_epsilon)?;
    let two_way = ExactVariance::at_least(split.two_way_variance)?;
    let two: Vec<Measurement> = edges
        .iter()
        .map(|&(a, b)| {
            let values = measure(rng, &compressed.marginal(&[a, b]), two_way);
            let variances = vec![two_way.as_f64(); values.len()];
            Measurement { values, variances }
        })
        .collect();
    let tree = Tree {
        cards: compression.cards.clone(),
        edges: edges.clone(),
    };
    progress.check()?;
    let fitted = fit(
        tree,
        &compression.one_way,
        &two,
        total,
        iterations,
        progress,
    )?;
    let drawn = sample::sample(rng, &fitted, total.round().max(0.0) as u64);
    let records = sample::decompress(rng, &drawn, &compression.maps, &records.cards);
    Ok(Synthesis {
        records,
        edges,
        compressed_cards: compression.cards,
        total,
        rho,
    })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod synthesis_tests {
    use rand::SeedableRng;

    use super::*;

    type TestRng = rand_chacha::ChaCha20Rng;

    /// Three attributes: 1 copies 0 nine times in ten, 2 is independent of both. MST at
    /// ε = 1 keeps the dependence (the independent model cannot): the L1 distance of the
    /// synthetic (0, 1) marginal from the true one is a few percent, where independence
    /// would be 80 %; the total is within a few noise scales.
    #[test]
    fn a_synthesis_keeps_the_dependence_the_tree_finds() {
        let mut records = Records::new(vec![4, 4, 3]);
        for x0 in 0..4u32 {
            for x1 in 0..4u32 {
                for x2 in 0..3u32 {
                    let same = if x0 == x1 { 900 } else { 33 };
                    records.push(&[x0, x1, x2], same * (x2 as u64 + 1));
                }
            }
        }
        let n = records.total() as f64;
        let mut rng = TestRng::seed_from_u64(11);
        let synthesis = synthesize(&mut rng, &records, 1.0, 1e-9, 2000, &Progress::silent())
            .expect("synthesized");
        assert_eq!(synthesis.edges.len(), 2);
        assert!(synthesis.edges.contains(&(0, 1)), "{:?}", synthesis.edges);
        let got = synthesis.records.total() as f64;
        assert!((got - n).abs() < 0.01 * n, "{got} records of {n}");
        let l1 = |a: usize, b: usize| {
            let x = records.marginal(&[a, b]);
            let y = synthesis.records.marginal(&[a, b]);
            x.iter()
                .zip(&y)
                .map(|(&x, &y)| (x as f64 / n - y as f64 / got).abs())
                .sum::<f64>()
        };
        assert!(l1(0, 1) < 0.05, "{}", l1(0, 1));
        assert!(l1(1, 2) < 0.05, "{}", l1(1, 2));
        assert!(synthesis.rho > 0.0149 && synthesis.rho < 0.0150);
    }
}
