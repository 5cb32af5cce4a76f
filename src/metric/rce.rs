//! Reconstruction error RCE (Lee et al. 2017, "Quality metric", after Xiao & Tao's
//! Anatomy), discretised over the hierarchies' leaves (docs/METHODS.md §5.6).
//!
//! ```text
//! RCE = Σ_{t ∈ T} Σ_{x ∈ DS} (G̃_t(x) − G_t(x))²
//! ```
//!
//! `DS` is the product of the quasi-identifiers' leaf sets and the sensitive values. An
//! original record `t` is mass 1 on its own cell. Its released row spreads weight `w`
//! uniformly over the `V` cells of its generalized box (`V` = product of the leaves under
//! each label; a suppressed value covers all leaves; the sensitive value is exact), `w` the
//! probability the catalog leaves that the row is real (1 without a catalog). Then
//!
//! ```text
//! real record, released:     (1 − w/V)² + (V − 1)(w/V)² = 1 − 2w/V + w²/V
//! counterfeit row:           V (w/V)²                  = w²/V
//! real record not released:  1
//! ```
//!
//! A cell of `released` rows of which `real` are real records contributes
//! `real·(1 − 2w/V) + released·w²/V` ([`cell_rce`]).
//!
//! Which rows are real is known to the data holder only. A recipient, who sees the release
//! and the catalog, can compute the *expected* RCE, each row being real with probability
//! `w`: `released·(w − w²/V)` per cell ([`expected_cell_rce`]). Both agree whenever the
//! classes of each catalog group have equal volumes; the exact value is owner-only because
//! it can tell in which class of a group the counterfeits are.

use crate::hierarchy::Hierarchy;
use crate::release::catalog::{CatalogWeights, CounterfeitCatalog};
use crate::release::{ReleasedHistogram, SUPPRESSED};

/// Number of leaf combinations `V` a class's generalized box covers.
pub fn class_volume(
    hierarchies: &[&Hierarchy],
    levels: &[usize],
    codes: impl Fn(usize) -> u32,
) -> f64 {
    hierarchies
        .iter()
        .enumerate()
        .map(|(a, h)| match codes(a) {
            SUPPRESSED => h.leaf_count() as f64,
            code => h
                .level(levels[a])
                .leaf_counts()
                .get(code as usize)
                .map_or(h.leaf_count() as f64, |&c| f64::from(c)),
        })
        .product()
}

/// [`class_volume`] of every class of a node at `levels` whose classes have the codes
/// `class_codes[a][c]` (codes of their levels, as a node's histogram holds): the same
/// products in the same order, attribute by attribute.
pub fn class_volumes(
    hierarchies: &[&Hierarchy],
    levels: &[usize],
    class_codes: &[Vec<u32>],
) -> Vec<f64> {
    let classes = class_codes.first().map_or(0, Vec::len);
    let mut volumes = vec![1.0f64; classes];
    for (a, h) in hierarchies.iter().enumerate() {
        let all = h.leaf_count() as f64;
        let counts = h.level(levels[a]).leaf_counts();
        // A level whose values all cover the same number of leaves multiplies every class
        // by it (by 1: nothing to do). A node's classes hold codes of their levels, never
        // SUPPRESSED.
        if let [first, rest @ ..] = counts {
            if rest.iter().all(|c| c == first) {
                if *first != 1 {
                    let factor = f64::from(*first);
                    for volume in volumes.iter_mut() {
                        *volume *= factor;
                    }
                }
                continue;
            }
        }
        for (volume, &code) in volumes.iter_mut().zip(&class_codes[a]) {
            *volume *= match code {
                SUPPRESSED => all,
                code => counts.get(code as usize).map_or(all, |&c| f64::from(c)),
            };
        }
    }
    volumes
}

/// RCE of one (class, value) cell: `released` rows of which `real` are real records, each
/// row of weight `weight`, in a box of `volume` cells.
pub fn cell_rce(real: u64, released: u64, weight: f64, volume: f64) -> f64 {
    let volume = volume.max(1.0);
    real as f64 * (1.0 - 2.0 * weight / volume) + released as f64 * weight * weight / volume
}

/// Expected RCE of a cell of `released` rows, each real with probability `weight`.
pub fn expected_cell_rce(released: u64, weight: f64, volume: f64) -> f64 {
    let volume = volume.max(1.0);
    released as f64 * (weight - weight * weight / volume)
}

/// The RCE a recipient computes from a release and its catalog alone ([`expected_cell_rce`]
/// over every released cell).
pub fn public_rce(
    hierarchies: &[&Hierarchy],
    release: &ReleasedHistogram,
    catalog: Option<&CounterfeitCatalog>,
) -> f64 {
    let weights = CatalogWeights::new(release, catalog);
    let mut total = 0.0;
    for c in 0..release.class_count() {
        let volume = class_volume(hierarchies, &release.levels, |a| release.class_codes[a][c]);
        for e in release.class_range(c) {
            total += expected_cell_rce(
                release.counts[e],
                weights.weight(c, release.values[e]),
                volume,
            );
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_formulas() {
        // A leaf-level real record without a catalog loses nothing.
        assert_eq!(cell_rce(1, 1, 1.0, 1.0), 0.0);
        // Generalized over 4 cells: 1 − 1/4.
        assert!((cell_rce(1, 1, 1.0, 4.0) - 0.75).abs() < 1e-15);
        // The paper's Fig. 4: 4 rows, 1 counterfeit, w = 3/4, at V = 1: 3 real (1/4)² + 1 · 9/16.
        let w = 0.75;
        let exact = cell_rce(3, 4, w, 1.0);
        assert!((exact - (3.0 * 0.0625 + 0.5625)).abs() < 1e-15, "{exact}");
        // With equal volumes the expectation equals the exact value.
        assert!((expected_cell_rce(4, w, 1.0) - exact).abs() < 1e-15);
        assert!((expected_cell_rce(4, w, 7.0) - cell_rce(3, 4, w, 7.0)).abs() < 1e-12);
    }
}
