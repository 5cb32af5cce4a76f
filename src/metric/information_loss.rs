//! Information loss of any release against its original (IPA paper, Eq. 5–10), one
//! definition for every method.
//!
//! The release is a [`ReleasedHistogram`] at some lattice node; the original is the
//! leaf-level histogram rolled up to that node. A released class is matched with the
//! original class of the same generalized values; the suppressed class `*` is matched with
//! every original record whose class is not released; a partially suppressed class (cell
//! suppression: some values `*`) with the original records not yet matched that agree with it
//! outside its `*` values, classes with fewer `*` first. Then, over the released classes
//! (those with at least one row):
//!
//! * **NCP** (Eq. 5–6): mean over released rows of `(1/q) Σ_A NCP(r[A])`, where
//!   `NCP(v) = |v| / |L|` (leaves under `v` over leaves of the hierarchy, 0 for a leaf) and a
//!   suppressed value scores 1.
//! * **EMD** (Eq. 7, per class): the total-variation distance `½ Σ_v |p_v − q_v|` between the
//!   informative-value distribution of the class's original records and of its released
//!   rows, averaged over released classes. A released class with no original record at all
//!   (possible for noisy histograms) scores 1.
//! * **Rate** (Eq. 8–9): per class, the share of released rows not backed by an original
//!   record, `Σ_v max(0, released_v − original_v) / |released class|`, averaged over
//!   released classes.
//!
//! `IL = NCP + EMD + Rate` (Eq. 10, in `[0, 3]`); the paper's reported numbers are on the
//! averaged scale `(NCP + EMD + Rate) / 3` of its reference implementation.
//!
//! Two metrics of the UPA paper are reported next to them for every method: **LM**, the
//! mean generalization degree of the released rows ([`super::degree`]), and **RCE**, the
//! reconstruction error over every original record ([`super::rce`]), weighted by the
//! release's counterfeit catalog when it has one. On an IPA release
//! these are exactly the scores IPA itself computes for the chosen node (Algorithm 1 keeps
//! every real record and only adds counterfeits); a k-anonymous release has EMD = Rate = 0.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use datafusion::common::{plan_err, Result};

use super::degree::{loss_metric, Degrees};
use super::rce::{cell_rce, class_volume};
use crate::hierarchy::Hierarchy;
use crate::histogram::GroupedHistogram;
use crate::release::catalog::{CatalogWeights, CounterfeitCatalog};
use crate::release::{ReleasedHistogram, SUPPRESSED};

/// The three components of information loss.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct InformationLoss {
    /// Normalized certainty penalty of the released rows.
    pub ncp: f64,
    /// Mean per-class total-variation distance between original and released values.
    pub emd: f64,
    /// Mean per-class share of rows not backed by an original record.
    pub rate: f64,
    /// LM: mean generalization degree of the released rows (UPA paper).
    pub lm: f64,
    /// RCE: reconstruction error summed over the original records (UPA paper), exact.
    pub rce: f64,
}

impl InformationLoss {
    /// `NCP + EMD + Rate` (the paper's Eq. 10), in `[0, 3]`.
    pub fn sum(&self) -> f64 {
        self.ncp + self.emd + self.rate
    }

    /// `(NCP + EMD + Rate) / 3`, in `[0, 1]`: the scale of the paper's reported numbers.
    pub fn mean(&self) -> f64 {
        self.sum() / 3.0
    }
}

/// Total-variation distance and fabricated-row count of one class: `original` and
/// `released` are `(value, count)` pairs ascending by value.
pub fn class_scores(original: &[(u32, u64)], released: &[(u32, u64)]) -> (f64, u64) {
    let n: u64 = original.iter().map(|p| p.1).sum();
    let r: u64 = released.iter().map(|p| p.1).sum();
    let mut fabricated = 0u64;
    let mut tv = 0.0;
    let (mut i, mut j) = (0, 0);
    while i < original.len() || j < released.len() {
        let (o, rel) = match (original.get(i), released.get(j)) {
            (Some(a), Some(b)) if a.0 == b.0 => {
                i += 1;
                j += 1;
                (a.1, b.1)
            }
            (Some(a), Some(b)) if a.0 < b.0 => {
                i += 1;
                (a.1, 0)
            }
            (Some(a), None) => {
                i += 1;
                (a.1, 0)
            }
            (_, Some(b)) => {
                j += 1;
                (0, b.1)
            }
            (None, None) => break,
        };
        fabricated += rel.saturating_sub(o);
        if n > 0 && r > 0 {
            tv += (o as f64 / n as f64 - rel as f64 / r as f64).abs();
        }
    }
    let tv = if n == 0 { 1.0 } else { tv / 2.0 };
    (tv, fabricated)
}

/// Information loss of `release` against the leaf-level histogram `base` of its original;
/// `catalog` is the release's counterfeit catalog, if it publishes one (it weights RCE).
pub fn information_loss(
    base: &GroupedHistogram,
    hierarchies: &[&Hierarchy],
    value_domain: usize,
    release: &ReleasedHistogram,
    catalog: Option<&CounterfeitCatalog>,
) -> Result<InformationLoss> {
    let attrs = hierarchies.len();
    if release.levels.len() != attrs || release.class_codes.len() != attrs {
        return plan_err!(
            "information loss: the release has {} attributes, the original {attrs}",
            release.levels.len()
        );
    }
    if let Some(a) = (0..attrs).find(|&a| release.levels[a] > hierarchies[a].height()) {
        return plan_err!(
            "information loss: level {} of attribute '{}' exceeds its hierarchy's height {}",
            release.levels[a],
            hierarchies[a].attribute(),
            hierarchies[a].height()
        );
    }
    let original = base.roll_up(hierarchies, &release.levels, value_domain)?;
    let mut index: HashMap<Vec<u32>, usize> = HashMap::with_capacity(original.class_count());
    for c in 0..original.class_count() {
        index.insert((0..attrs).map(|a| original.class_codes[a][c]).collect(), c);
    }
    let pairs = |c: usize| -> Vec<(u32, u64)> { original.pairs(c).collect() };
    let ncp_tables: Vec<Vec<f64>> = (0..attrs)
        .map(|a| hierarchies[a].ncp_per_code(release.levels[a]))
        .collect();

    let mut matched = vec![false; original.class_count()];
    let mut suppressed_classes = Vec::new();
    // Partially suppressed classes: codes, released pairs, NCP per row.
    type Partial = (Vec<u32>, Vec<(u32, u64)>, f64);
    let mut partial: Vec<Partial> = Vec::new();
    let (mut ncp_sum, mut emd_sum, mut rate_sum) = (0.0, 0.0, 0.0);
    let (mut rows, mut classes) = (0u64, 0usize);
    let weights = CatalogWeights::new(release, catalog);
    let mut rce = 0.0;
    // RCE of one released class (index `class`, or None for the merged suppressed class)
    // against its original records.
    let mut class_rce =
        |class: Option<usize>, original: &[(u32, u64)], released: &[(u32, u64)], volume: f64| {
            let mut j = 0;
            for &(v, n) in released {
                while j < original.len() && original[j].0 < v {
                    rce += original[j].1 as f64;
                    j += 1;
                }
                let o = match original.get(j) {
                    Some(&(ov, on)) if ov == v => {
                        j += 1;
                        on
                    }
                    _ => 0,
                };
                let real = o.min(n);
                rce += (o - real) as f64;
                let w = class.map_or(1.0, |c| weights.weight(c, v));
                rce += cell_rce(real, n, w, volume);
            }
            for &(_, on) in &original[j..] {
                rce += on as f64;
            }
        };
    let mut add = |original: &[(u32, u64)], released: &[(u32, u64)], ncp_per_row: f64| {
        let size: u64 = released.iter().map(|p| p.1).sum();
        if size == 0 {
            return;
        }
        let (tv, fabricated) = class_scores(original, released);
        rows += size;
        classes += 1;
        ncp_sum += size as f64 * ncp_per_row;
        emd_sum += tv;
        rate_sum += fabricated as f64 / size as f64;
    };
    for c in 0..release.class_count() {
        let codes: Vec<u32> = (0..attrs).map(|a| release.class_codes[a][c]).collect();
        let released: Vec<(u32, u64)> = release
            .class_range(c)
            .map(|e| (release.values[e], release.counts[e]))
            .collect();
        if codes.iter().all(|&code| code == SUPPRESSED) && attrs > 0 {
            suppressed_classes.push(released);
            continue;
        }
        let mut ncp_per_row = 0.0;
        for (a, &code) in codes.iter().enumerate() {
            ncp_per_row += match code {
                SUPPRESSED => 1.0,
                code => match ncp_tables[a].get(code as usize) {
                    Some(x) => *x,
                    None => {
                        return plan_err!(
                            "information loss: class code {code} of attribute '{}' is not in its hierarchy",
                            hierarchies[a].attribute()
                        )
                    }
                },
            };
        }
        if codes.contains(&SUPPRESSED) {
            partial.push((codes, released, ncp_per_row));
            continue;
        }
        let source = index.get(&codes).copied();
        let original_pairs = match source {
            Some(o) => {
                matched[o] = true;
                pairs(o)
            }
            None => Vec::new(),
        };
        let volume = class_volume(hierarchies, &release.levels, |a| codes[a]);
        class_rce(Some(c), &original_pairs, &released, volume);
        add(&original_pairs, &released, ncp_per_row);
    }
    // Partially suppressed classes (cell suppression), fewest '*' first: each stands for
    // the original records, not yet matched, that agree with it outside its '*' values.
    partial.sort_by_key(|(codes, _, _)| codes.iter().filter(|&&c| c == SUPPRESSED).count());
    let mut start = 0;
    while start < partial.len() {
        let stars =
            |codes: &[u32]| -> Vec<bool> { codes.iter().map(|&c| c == SUPPRESSED).collect() };
        let mask = stars(&partial[start].0);
        let end = start
            + partial[start..]
                .iter()
                .take_while(|(codes, _, _)| stars(codes) == mask)
                .count();
        let mut by_key: HashMap<Vec<u32>, usize> = HashMap::new();
        for (i, (codes, _, _)) in partial[start..end].iter().enumerate() {
            by_key.insert(codes.clone(), start + i);
        }
        let mut originals: Vec<Vec<usize>> = vec![Vec::new(); end - start];
        for (o, done) in matched.iter_mut().enumerate() {
            if *done {
                continue;
            }
            let key: Vec<u32> = (0..attrs)
                .map(|a| {
                    if mask[a] {
                        SUPPRESSED
                    } else {
                        original.class_codes[a][o]
                    }
                })
                .collect();
            if let Some(&i) = by_key.get(&key) {
                *done = true;
                originals[i - start].push(o);
            }
        }
        for (i, members) in originals.iter().enumerate() {
            let mut counts: HashMap<u32, u64> = HashMap::new();
            for &o in members {
                for (v, n) in pairs(o) {
                    *counts.entry(v).or_default() += n;
                }
            }
            let mut original_pairs: Vec<(u32, u64)> = counts.into_iter().collect();
            original_pairs.sort_unstable();
            let (_, released, ncp_per_row) = &partial[start + i];
            add(&original_pairs, released, *ncp_per_row);
        }
        start = end;
    }
    if !suppressed_classes.is_empty() {
        // The suppressed class stands for every original record whose class is not released.
        let mut counts = vec![0u64; value_domain];
        for (o, _) in matched.iter().enumerate().filter(|(_, m)| !**m) {
            for (v, n) in pairs(o) {
                counts[v as usize] += n;
            }
        }
        let original_pairs: Vec<(u32, u64)> = counts
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(v, n)| (v as u32, *n))
            .collect();
        let mut released = vec![0u64; value_domain];
        for class in &suppressed_classes {
            for &(v, n) in class {
                released[v as usize] += n;
            }
        }
        let released: Vec<(u32, u64)> = released
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(v, n)| (v as u32, *n))
            .collect();
        let volume = class_volume(hierarchies, &release.levels, |_| SUPPRESSED);
        class_rce(None, &original_pairs, &released, volume);
        add(&original_pairs, &released, attrs as f64);
    } else {
        // Original records of classes that are not released at all.
        for (o, _) in matched.iter().enumerate().filter(|(_, m)| !**m) {
            rce += pairs(o).iter().map(|p| p.1 as f64).sum::<f64>();
        }
    }
    let q = attrs.max(1) as f64;
    Ok(InformationLoss {
        ncp: if rows == 0 {
            0.0
        } else {
            ncp_sum / (q * rows as f64)
        },
        emd: if classes == 0 {
            0.0
        } else {
            emd_sum / classes as f64
        },
        rate: if classes == 0 {
            0.0
        } else {
            rate_sum / classes as f64
        },
        lm: loss_metric(&Degrees::new(hierarchies), release),
        rce,
    })
}

/// Schema of `anonymize_information_loss`.
pub fn information_loss_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("method", DataType::Utf8, false),
        Field::new("ncp", DataType::Float64, false),
        Field::new("emd", DataType::Float64, false),
        Field::new("rate", DataType::Float64, false),
        Field::new("il_sum", DataType::Float64, false),
        Field::new("il_mean", DataType::Float64, false),
        Field::new("lm", DataType::Float64, false),
        Field::new("rce", DataType::Float64, false),
    ]))
}

/// The one row of `anonymize_information_loss`.
pub fn information_loss_batch(method: &str, il: &InformationLoss) -> Result<RecordBatch> {
    let f = |x: f64| Arc::new(Float64Array::from(vec![x])) as ArrayRef;
    Ok(RecordBatch::try_new(
        information_loss_schema(),
        vec![
            Arc::new(StringArray::from(vec![method])),
            f(il.ncp),
            f(il.emd),
            f(il.rate),
            f(il.sum()),
            f(il.mean()),
            f(il.lm),
            f(il.rce),
        ],
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::Lattice;
    use crate::mechanism::rng::rng_from_seed;
    use crate::method::ipa::{self, IpaParams, IpaVariant};
    use crate::method::Standalone;
    use crate::testing::{histogram, ladder, Record};

    #[test]
    fn class_scores_by_hand() {
        // Identical distributions: nothing lost.
        assert_eq!(class_scores(&[(1, 2), (3, 1)], &[(1, 2), (3, 1)]), (0.0, 0));
        // One counterfeit of a new value: TV = ½(|2/3−2/4| + |1/3−1/4| + 1/4) = 1/4.
        let (tv, fab) = class_scores(&[(1, 2), (3, 1)], &[(1, 2), (2, 1), (3, 1)]);
        assert!((tv - 0.25).abs() < 1e-12);
        assert_eq!(fab, 1);
        // Rows removed by noise are not fabricated, but change the distribution.
        let (tv, fab) = class_scores(&[(1, 3), (2, 1)], &[(1, 1), (2, 1)]);
        assert!((tv - 0.25).abs() < 1e-12);
        assert_eq!(fab, 0);
        // A class with no original record is entirely fabricated.
        assert_eq!(class_scores(&[], &[(4, 2)]), (1.0, 2));
    }

    /// Small data: ages 0..19 and zips 0..7, 4 informative values.
    fn small() -> (Vec<Hierarchy>, GroupedHistogram) {
        let age = ladder("age", "0..19", &["5", "10"]);
        let zip = ladder("zip", "0..7", &["4"]);
        let records: Vec<Record> = (0..120u32)
            .map(|i| (vec![(i * 7) % 20, (i * 3 + i / 9) % 8], (i * i + 1) % 4))
            .collect();
        let base = histogram(&[&age, &zip], &records, 4);
        (vec![age, zip], base)
    }

    #[test]
    fn hand_computed_release() {
        let (hs, base) = small();
        let refs: Vec<&Hierarchy> = hs.iter().collect();
        // Release at node (2, 1): age in {[0-10), [10-20)}, zip in {[0-4), [4-8)}; keep
        // every original class as is, then add one fabricated row to the first class and
        // suppress the last class.
        let node = vec![2, 1];
        let orig = base.roll_up(&refs, &node, 4).unwrap();
        let mut release = ReleasedHistogram::new(node.clone(), 2);
        let last = orig.class_count() - 1;
        for c in 0..last {
            let pairs: Vec<(u32, u64)> = orig.pairs(c).collect();
            let extra: Vec<u32> = if c == 0 { vec![3] } else { vec![] };
            release.push_class(
                &[orig.class_codes[0][c], orig.class_codes[1][c]],
                &pairs,
                &extra,
            );
        }
        let pairs: Vec<(u32, u64)> = orig.pairs(last).collect();
        release.push_class(&[SUPPRESSED, SUPPRESSED], &pairs, &[]);
        let il = information_loss(&base, &refs, 4, &release, None).unwrap();

        let classes = orig.class_count() as f64;
        let first: Vec<(u32, u64)> = orig.pairs(0).collect();
        let mut with_fake = first.clone();
        match with_fake.binary_search_by_key(&3, |p| p.0) {
            Ok(i) => with_fake[i].1 += 1,
            Err(i) => with_fake.insert(i, (3, 1)),
        }
        let n0 = orig.class_size(0);
        let (tv0, _) = class_scores(&first, &with_fake);
        assert!((il.emd - tv0 / classes).abs() < 1e-12);
        assert!((il.rate - (1.0 / (n0 + 1) as f64) / classes).abs() < 1e-12);
        // Every generalized value covers half its hierarchy's leaves: NCP 0.5 per attribute,
        // suppressed rows 1.
        let suppressed = orig.class_size(last) as f64;
        let total = 121.0;
        let expected_ncp = ((total - suppressed) * 0.5 + suppressed * 1.0) / total;
        assert!(
            (il.ncp - expected_ncp).abs() < 1e-12,
            "{} vs {expected_ncp}",
            il.ncp
        );
        assert!((il.sum() - (il.ncp + il.emd + il.rate)).abs() < 1e-15);
        assert!((il.mean() - il.sum() / 3.0).abs() < 1e-15);
    }

    /// On an IPA release the general definition gives exactly IPA's own scores of the chosen
    /// node, for both variants and many seeds.
    #[test]
    fn equals_ipa_scores_on_ipa_releases() {
        let (hs, base) = small();
        let refs: Vec<&Hierarchy> = hs.iter().collect();
        let lattice = Lattice::new(refs.iter().map(|h| h.height()).collect(), 1000).unwrap();
        let (mut with_suppression, mut with_counterfeits) = (0, 0);
        for seed in 0..20 {
            let variant = if seed % 2 == 0 {
                IpaVariant::Paper
            } else {
                IpaVariant::Reference
            };
            let params = IpaParams::with_defaults(variant, 1.0, 2);
            let mut rng = rng_from_seed(seed);
            let result = ipa::run(
                &Standalone::default().input(&base, &refs, &lattice, 4),
                &params,
                &mut rng,
            )
            .unwrap();
            let chosen = &result.outcomes[result.chosen];
            let il = information_loss(&base, &refs, 4, &result.release, None).unwrap();
            with_suppression += usize::from(chosen.suppressed_records > 0);
            with_counterfeits += usize::from(chosen.counterfeits > 0);
            assert!(
                (il.ncp - chosen.ncp).abs() < 1e-12,
                "seed {seed}: ncp {} vs {}",
                il.ncp,
                chosen.ncp
            );
            assert!(
                (il.emd - chosen.emd).abs() < 1e-12,
                "seed {seed}: emd {} vs {}",
                il.emd,
                chosen.emd
            );
            assert!(
                (il.rate - chosen.rate).abs() < 1e-12,
                "seed {seed}: rate {} vs {}",
                il.rate,
                chosen.rate
            );
        }
        // The seeds exercise both the suppressed class and counterfeits.
        assert!(
            with_suppression > 0 && with_counterfeits > 0,
            "{with_suppression} {with_counterfeits}"
        );
    }

    #[test]
    fn rejects_mismatched_release() {
        let (hs, base) = small();
        let refs: Vec<&Hierarchy> = hs.iter().collect();
        let release = ReleasedHistogram::new(vec![5, 0], 2);
        let err = information_loss(&base, &refs, 4, &release, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("exceeds its hierarchy's height"), "{err}");
        let release = ReleasedHistogram::new(vec![0], 1);
        assert!(information_loss(&base, &refs, 4, &release, None).is_err());
    }
}
